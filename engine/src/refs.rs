//! `repo.refs` (design.md#local-tools): local branches with upstreams, remotes, stashes,
//! remote-tracking branches and tags newest first. A budget cuts the lists in that order from the
//! end, so old tags go before any branch.

use serde::Serialize;

use crate::budget::{Budgeted, Measure, first, fit_sections};
use crate::cache::Reader;
use crate::compact::{Implied, is_zero};
use crate::engine::{Engine, Repo};
use crate::error::Result;
use crate::facets::commits::Abbrev;
use crate::facets::refs::{Branch, Remote, RemoteBranch, Tag};
use crate::facets::stashes::Stash;
use crate::facets::{Facet, commits, head, refs, stashes};

/// The refs report. Lists may be cut by the budget (see the envelope's `omitted`); `counts` then
/// give their exact totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Where HEAD is.
    pub head: head::Head,
    /// Exact totals of each list; left out while they say nothing the lists do not (no list cut by
    /// the budget): each count is then its list's length.
    #[serde(skip_serializing_if = "Implied::is_implied")]
    pub counts: Implied<RefCounts>,
    /// Local branches in name order, with upstream and ahead/behind; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub branches: Vec<Branch>,
    /// Remotes with passwords removed from URLs; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remotes: Vec<Remote>,
    /// Stashes, newest first; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stashes: Vec<Stash>,
    /// Remote-tracking branches in name order; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remote_branches: Vec<RemoteBranch>,
    /// Tags newest first by the date of the commit each peels to, ties in name order (see
    /// [`refs::tags`]); default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<Tag>,
    /// Refs that could not be read (a file that does not parse, a ref naming an object that does
    /// not exist), each with `error: {reason}`: git skips them with a warning, and so do the lists
    /// above. Absent when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<crate::Unreadable>,
}

/// Exact totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RefCounts {
    /// Local branches; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub branches: usize,
    /// Remotes; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub remotes: usize,
    /// Stashes; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub stashes: usize,
    /// Remote-tracking branches; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub remote_branches: usize,
    /// Tags; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub tags: usize,
}

/// Reads the full report.
///
/// # Errors
/// [`crate::Error::GitRead`] when refs cannot be read.
pub fn read(repo: &gix::Repository) -> Result<Report> {
    read_from(&Reader::direct(repo))
}

/// The facets a refs report reads.
pub const READS: &[Facet] =
    &[Facet::Head, Facet::Branches, Facet::Remotes, Facet::Stashes, Facet::Tags, Facet::RemoteBranches];

/// [`read`] with facets from `facets`.
pub(crate) fn read_from(facets: &Reader<'_>) -> Result<Report> {
    // Each ref list is cached with the refs it could not read; they are reported in the same order as before.
    let (mut branches, mut unreadable) = (*facets.get(Facet::Branches, with_unreadable(refs::branches))?).clone();
    let remotes = (*facets.get(Facet::Remotes, refs::remotes)?).clone();
    let mut stashes = (*facets.get(Facet::Stashes, stashes::read)?).clone();
    let (mut tags, tags_unreadable) = (*facets.get(Facet::Tags, with_unreadable(refs::tags))?).clone();
    let (mut remote_branches, remote_unreadable) =
        (*facets.get(Facet::RemoteBranches, with_unreadable(refs::remote_branches))?).clone();
    unreadable.extend(tags_unreadable);
    unreadable.extend(remote_unreadable);
    let head = facets.get(Facet::Head, |git| Ok((head::read(git)?, commits::abbreviated_head(git))))?;
    // Shas abbreviated as `git branch -v` shows them (shortest unique, at least 7 digits).
    let abbrev = Abbrev::new(facets.git());
    let short = |sha: &mut String| *sha = abbrev.hex(sha);
    branches.iter_mut().for_each(|branch| short(&mut branch.sha));
    stashes.iter_mut().for_each(|stash| short(&mut stash.sha));
    tags.iter_mut().for_each(|tag| short(&mut tag.sha));
    remote_branches.iter_mut().for_each(|branch| short(&mut branch.sha));
    Ok(Report {
        head: head.0.clone(),
        counts: Implied::stated(RefCounts {
            branches: branches.len(),
            remotes: remotes.len(),
            stashes: stashes.len(),
            remote_branches: remote_branches.len(),
            tags: tags.len(),
        }),
        branches,
        remotes,
        stashes,
        remote_branches,
        tags,
        unreadable,
    })
}

/// Cuts the lists to `max_tokens`, in priority branches > remotes > stashes > remote-tracking
/// branches > tags: the few lists an agent works with come before the long ones, and tags, newest
/// first, lose their oldest first.
///
/// # Errors
/// [`crate::Error::Invalid`] (`budget_below_floor`) when the required fields alone exceed
/// `max_tokens`.
pub fn fit(full: Report, max_tokens: usize, measure: &mut Measure<'_, Report>) -> Result<Budgeted<Report>> {
    let totals = [
        full.branches.len(),
        full.remotes.len(),
        full.stashes.len(),
        full.remote_branches.len(),
        full.tags.len(),
        full.unreadable.len(),
    ];
    let cut = |full: &Report, shown: &[usize]| Report {
        head: full.head.clone(),
        // The counts are the five lists' lengths unless one of them is cut (`unreadable` is not counted).
        counts: Implied::new(*full.counts, shown[..5] == totals[..5]),
        branches: first(&full.branches, shown[0]),
        remotes: first(&full.remotes, shown[1]),
        stashes: first(&full.stashes, shown[2]),
        remote_branches: first(&full.remote_branches, shown[3]),
        tags: first(&full.tags, shown[4]),
        unreadable: first(&full.unreadable, shown[5]),
    };
    let names = ["branches", "remotes", "stashes", "remoteBranches", "tags", "unreadable"];
    fit_sections(&full, &names, &totals, max_tokens, &cut, measure)
}

/// A ref list reader that also returns the refs it could not read (one cacheable value).
fn with_unreadable<T>(
    list: fn(&gix::Repository, &mut Vec<crate::Unreadable>) -> Result<Vec<T>>,
) -> impl FnOnce(&gix::Repository) -> Result<(Vec<T>, Vec<crate::Unreadable>)> {
    move |git| {
        let mut unreadable = Vec::new();
        list(git, &mut unreadable).map(|items| (items, unreadable))
    }
}

impl Engine {
    /// `repo.refs`: branches with upstreams, tags, remotes and stashes, cut to `max_tokens`.
    ///
    /// # Errors
    /// As [`Engine::brief`].
    pub fn refs(&self, repo: &Repo, max_tokens: usize, measure: &mut Measure<'_, Report>) -> Result<Budgeted<Report>> {
        fit(read_from(&self.facets(repo))?, max_tokens, measure)
    }
}
