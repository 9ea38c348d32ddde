//! `repo.status` (design.md#tools): current branch, work-tree state and every dirty path.

use serde::Serialize;

use crate::budget::{Budgeted, Measure, fit_sections};
use crate::cache::Reader;
use crate::compact::Implied;
use crate::engine::{Engine, Repo};
use crate::error::Result;
use crate::facets::operation::Operation;
use crate::facets::refs::Upstream;
use crate::facets::worktree::{Change, Counts};
use crate::facets::{Facet, commits, head, operation};
use crate::lists::PathLists;

/// The status report. Counts are exact; the path lists may be cut by the budget (see the envelope's
/// `omitted`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Where HEAD is; its sha abbreviated like `git log --oneline` (shortest unique, at least 7
    /// digits).
    pub head: head::Head,
    /// The current branch's upstream with ahead/behind; default `null` (none configured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
    /// The unfinished operation; default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_in_progress: Option<Operation>,
    /// Exact counts; left out while they say nothing the lists do not (no list cut by the budget,
    /// not bare, untracked files counted the default way): each count is then its list's length,
    /// and no list means clean.
    #[serde(skip_serializing_if = "Implied::is_implied")]
    pub counts: Implied<Counts>,
    /// The path lists, flattened: `conflicted`, `staged`, `unstaged`, `untracked`.
    #[serde(flatten)]
    pub lists: PathLists<Change>,
    /// Submodules whose state could not be read, each with `error: {reason}` (a name git ignores as
    /// suspicious, a gitdir that is gone); the rest of the report is given without them. Absent
    /// when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<crate::Unreadable>,
}

/// Reads the path lists as if they were the report's own fields (`report.staged`), as they are in
/// its JSON.
impl std::ops::Deref for Report {
    type Target = PathLists<Change>;

    fn deref(&self) -> &Self::Target {
        &self.lists
    }
}

/// Reads the full report.
///
/// # Errors
/// [`crate::Error::GitRead`] when a facet cannot be read.
pub fn read(repo: &gix::Repository) -> Result<Report> {
    read_from(&Reader::direct(repo))
}

/// The facets a status report reads.
pub const READS: &[Facet] = &[Facet::Head, Facet::Upstream, Facet::WorkTreeStatus, Facet::Operation];

/// [`read`] with facets from `facets`.
pub(crate) fn read_from(facets: &Reader<'_>) -> Result<Report> {
    let head = facets.get(Facet::Head, |git| Ok((head::read(git)?, commits::abbreviated_head(git))))?;
    let (status, upstream) = crate::brief::work_tree_and_upstream(facets)?;
    let operation = facets.get(Facet::Operation, |git| Ok((operation::read(git), operation::rebasing_branch(git))))?.0;
    Ok(Report {
        head: head::Head { sha: head.1.clone(), ..head.0.clone() },
        upstream: (*upstream).clone(),
        operation_in_progress: operation,
        counts: Implied::stated(Counts::of(&status)),
        lists: PathLists {
            conflicted: status.conflicted.clone(),
            staged: status.staged.clone(),
            unstaged: status.unstaged.clone(),
            untracked: status.untracked.clone(),
        },
        unreadable: status.unreadable.clone(),
    })
}

/// Cuts the path lists to `max_tokens`, in priority conflicted > staged > unstaged > untracked.
///
/// # Errors
/// [`crate::Error::Invalid`] (`budget_below_floor`) when the required fields alone exceed
/// `max_tokens`.
pub fn fit(full: Report, max_tokens: usize, measure: &mut Measure<'_, Report>) -> Result<Budgeted<Report>> {
    let totals = full.lists.lengths();
    let cut = |full: &Report, shown: &[usize]| Report {
        counts: Implied::new(*full.counts, shown == totals && full.counts.are_list_lengths()),
        lists: full.lists.first([shown[0], shown[1], shown[2], shown[3]]),
        ..full.clone()
    };
    fit_sections(&full, &["conflicted", "staged", "unstaged", "untracked"], &totals, max_tokens, &cut, measure)
}

impl Engine {
    /// `repo.status`: branch, operation and every dirty path, cut to `max_tokens`.
    ///
    /// # Errors
    /// As [`Engine::brief`].
    pub fn status(
        &self,
        repo: &Repo,
        max_tokens: usize,
        measure: &mut Measure<'_, Report>,
    ) -> Result<Budgeted<Report>> {
        fit(read_from(&self.facets(repo))?, max_tokens, measure)
    }
}
