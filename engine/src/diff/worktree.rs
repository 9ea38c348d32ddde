//! `worktree.changes` (design.md#tools): per-path status and line counts of the work tree's
//! changes, index and work tree kept apart: `staged` is `git diff --cached --numstat` (HEAD vs
//! index), `unstaged` is `git diff --numstat` (index vs work tree), `untracked` is
//! `git ls-files --others --exclude-standard`, and unmerged paths are listed once, in `conflicted`.

use gix::bstr::BString;
use serde::Serialize;

use super::{FileStat, diff_sides, head_side, stats};
use crate::budget::{Budgeted, Measure, fit_sections};
use crate::compact::Implied;
use crate::compare::side::{PathFilter, Side};
use crate::compare::{changes, prune};
use crate::error::Result;
use crate::facets::worktree::{self, UntrackedMode};
use crate::interrupt::Interrupt;
use crate::lists::PathLists;

/// The work tree's changes. Counts are exact; the lists may be cut by the budget (`omitted`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// `true` for a bare repository, which has no work tree (every list is then empty; absent when
    /// false).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bare: bool,
    /// Exact number of paths in each list; left out while it says nothing the lists do not (no list
    /// cut by the budget, untracked files counted the default way): each count is then its list's
    /// length.
    #[serde(skip_serializing_if = "Implied::is_implied")]
    pub counts: Implied<Counts>,
    /// The path lists, flattened: `conflicted` (unmerged paths, for `conflict.read`), `staged`
    /// (index vs `HEAD`) and `unstaged` (work tree vs index) with `--numstat` counts, and
    /// `untracked` (files neither tracked nor ignored).
    #[serde(flatten)]
    pub lists: PathLists<FileStat>,
    /// Submodules whose state could not be read, each with `error: {reason}`; absent when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<crate::Unreadable>,
}

/// Reads the path lists as if they were the report's own fields (`report.staged`), as they are in
/// its JSON.
impl std::ops::Deref for Report {
    type Target = PathLists<FileStat>;

    fn deref(&self) -> &Self::Target {
        &self.lists
    }
}

/// Exact sizes of the lists (each left out of the JSON when 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Unmerged paths; default 0.
    #[serde(skip_serializing_if = "crate::compact::is_zero")]
    pub conflicted: usize,
    /// Paths changed in the index; default 0.
    #[serde(skip_serializing_if = "crate::compact::is_zero")]
    pub staged: usize,
    /// Paths changed in the work tree; default 0.
    #[serde(skip_serializing_if = "crate::compact::is_zero")]
    pub unstaged: usize,
    /// Untracked files (a wholly untracked directory counts once in `normal` mode); default 0.
    #[serde(skip_serializing_if = "crate::compact::is_zero")]
    pub untracked: usize,
    /// How untracked files were counted (`status.showUntrackedFiles`): `all` (every file), `no`
    /// (none looked for); absent for `normal`, the default, where a wholly untracked directory
    /// counts once, as `dir/`.
    #[serde(rename = "untrackedFiles", skip_serializing_if = "UntrackedMode::is_normal")]
    pub untracked_mode: UntrackedMode,
}

/// Reads the full report.
///
/// # Errors
/// [`crate::Error::GitRead`] on a failed read; [`crate::Error::Cancelled`] once `interrupt` is
/// triggered.
pub fn read(repo: &gix::Repository, interrupt: &Interrupt) -> Result<Report> {
    // Untracked and conflicted paths come from the work-tree status facet (which never writes the index).
    let status = worktree::status(repo)?;
    if status.bare {
        let counts =
            Counts { conflicted: 0, staged: 0, unstaged: 0, untracked: 0, untracked_mode: status.untracked_mode };
        return Ok(Report {
            bare: true,
            counts: Implied::stated(counts),
            lists: PathLists::default(),
            unreadable: vec![],
        });
    }
    let rewrites = changes::configured_rewrites(repo)?;
    let all = PathFilter::default();
    let without_unmerged = |stats: Vec<FileStat>| -> Vec<FileStat> {
        stats.into_iter().filter(|stat| stat.status != super::Status::Unmerged).collect()
    };
    let staged = diff_sides(repo, head_side(repo)?, Side::Index, &all, rewrites, interrupt)?;
    let staged = without_unmerged(stats(repo, &staged, interrupt)?);
    let unstaged =
        diff_sides(repo, Side::Index, Side::Worktree, &changed_paths(&status, rewrites), rewrites, interrupt)?;
    let unstaged = without_unmerged(stats(repo, &unstaged, interrupt)?);
    Ok(Report {
        bare: false,
        counts: Implied::stated(Counts {
            conflicted: status.conflicted.len(),
            staged: staged.len(),
            unstaged: unstaged.len(),
            untracked: status.untracked.len(),
            untracked_mode: status.untracked_mode,
        }),
        lists: PathLists { conflicted: status.conflicted, staged, unstaged, untracked: status.untracked },
        unreadable: status.unreadable,
    })
}

/// The paths whose work-tree file can differ from the index: those the status just found changed or
/// conflicted, so that the unstaged diff reads only them from disk instead of every file again.
/// Exact: a path the status found unchanged has the index's content, and the rename and copy
/// sources of an index-to-work-tree diff are changed paths themselves (unless copies are looked for
/// in every file: [`prune::allowed`]). Everything when that is not so, when a path was not valid
/// UTF-8 (the status's paths are strings), or when a submodule could not be read (its paths are
/// left out of the status).
fn changed_paths(status: &worktree::Status, rewrites: Option<gix::diff::Rewrites>) -> PathFilter {
    let paths = || {
        status.unstaged.iter().map(|change| change.path.as_str()).chain(status.conflicted.iter().map(String::as_str))
    };
    if !prune::allowed(rewrites.as_ref())
        || !status.unreadable.is_empty()
        || paths().any(|path| path.contains('\u{fffd}'))
    {
        return PathFilter::default();
    }
    PathFilter::only(paths().map(BString::from))
}

/// Cuts the lists to `max_tokens`, in priority conflicted > staged > unstaged > untracked.
///
/// # Errors
/// [`crate::InvalidReason::BudgetBelowFloor`] when the required fields alone exceed `max_tokens`.
pub fn fit(full: Report, max_tokens: usize, measure: &mut Measure<'_, Report>) -> Result<Budgeted<Report>> {
    let totals = full.lists.lengths();
    let cut = |full: &Report, shown: &[usize]| Report {
        counts: Implied::new(*full.counts, shown == totals && full.counts.untracked_mode.is_normal()),
        lists: full.lists.first([shown[0], shown[1], shown[2], shown[3]]),
        ..full.clone()
    };
    fit_sections(&full, &["conflicted", "staged", "unstaged", "untracked"], &totals, max_tokens, &cut, measure)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facets::worktree::{Change, ChangeKind};

    /// The unstaged diff reads only the paths the status found changed or conflicted, and
    /// everything when a path may have lost bytes to UTF-8 or copies are looked for in every file.
    #[test]
    fn the_unstaged_diff_reads_only_what_the_status_found_changed() {
        let change = |path: &str| Change { path: path.to_owned(), status: ChangeKind::Modified, from: None };
        let status = worktree::Status {
            unstaged: vec![change("src/a.rs"), change("b")],
            conflicted: vec!["c".to_owned()],
            ..worktree::Status::default()
        };
        let rewrites = Some(gix::diff::Rewrites::default());
        let filter = changed_paths(&status, rewrites);
        for path in ["src/a.rs", "b", "c"] {
            assert!(filter.matches(path.into()), "{path}");
        }
        for path in ["src", "src/b.rs", "a.rs", "d"] {
            assert!(!filter.matches(path.into()), "{path}");
        }
        let lossy = worktree::Status { unstaged: vec![change("caf\u{fffd}")], ..worktree::Status::default() };
        assert!(changed_paths(&lossy, rewrites).matches("d".into()), "a lossy path: everything");
        let harder = gix::diff::Rewrites {
            copies: Some(gix::diff::rewrites::Copies {
                source: gix::diff::rewrites::CopySource::FromSetOfModifiedFilesAndAllSources,
                percentage: None,
            }),
            ..gix::diff::Rewrites::default()
        };
        assert!(changed_paths(&status, Some(harder)).matches("d".into()), "copies from every file: everything");
    }
}
