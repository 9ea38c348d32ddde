//! Diffs (design.md#tools): `diff.text` ([`text`]), `commit.details` ([`commit`]) and
//! `worktree.changes` ([`worktree`]), on one shared machinery.
//!
//! A diff compares two sides (a tree, the index, or the tracked files of the work tree). Each side
//! is read into an in-memory index state (nothing is written: no index refresh, no lock, no
//! object), the two states are compared entry by entry with gix's rename tracker (git's `-M50%`
//! default, or what `diff.renames` configures), and each changed file is counted and rendered as
//! git does (`--numstat` counts, `diff --git` headers, `@@` hunks with three lines of context and
//! git's function context after the `@@`, see the `funcname` module). No textconv, external diff or
//! filter program is run.
//!
//! Known differences from `git diff`: abbreviated ids are always 7 hex digits, a submodule counts
//! as changed only when its checked-out commit moved (not when files inside it changed: no
//! `-dirty`), git prints the combined diffs of unmerged paths before the other files where
//! `diff.text` keeps path order (each file's text is git's), and a binary file that was renamed
//! *and* changed is a deletion plus an addition (gix measures similarity on text lines only; git
//! pairs it by content chunks). Line counts come from gix's Myers diff, which matches git's on
//! ordinary edits but may differ on pathological inputs where git's heuristics cut the search
//! short.

mod binary;
mod combined;
pub mod commit;
pub(crate) mod funcname;
pub(crate) mod parses;
mod patch;
mod section;
pub mod semantic;
pub mod text;
pub mod worktree;

use std::collections::BTreeMap;

use gix::bstr::BString;
use serde::Serialize;

use crate::budget::{Budgeted, Measure};
use crate::compare::changes::{self, Change};
use crate::compare::prune;
use crate::compare::side::{self, PathFilter, Side, Stages};
use crate::engine::{Engine, Repo};
use crate::error::Result;
use crate::interrupt::Interrupt;

/// How a file changed, in git's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Added (`A`).
    Added,
    /// Content or mode changed (`M`).
    Modified,
    /// Deleted (`D`).
    Deleted,
    /// Moved from `from`, possibly edited (`R`).
    Renamed,
    /// Copied from `from`, possibly edited (`C`; only when `diff.renames` is `copies`).
    Copied,
    /// Changed type, e.g. a file became a symlink (`T`); the patch shows a deletion and an
    /// addition, as git does.
    TypeChange,
    /// Unmerged (conflicted) in the index. Against the work tree (`git diff`) it has
    /// `git diff --numstat`'s counts (ours, stage 2, against the work-tree file; 0 without a
    /// stage 2) and, in `diff.text`, git's combined diff (`diff --cc`) when both sides have the
    /// file, else git's `* Unmerged path` line and the diff of ours against the work tree;
    /// elsewhere (`--cached`) counts 0 and only the `* Unmerged path` line.
    Unmerged,
}

/// One changed file as `git diff --numstat` sees it, plus what an agent needs to read the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStat {
    /// Repository-relative path (the new path for renames and copies), as UTF-8; bytes that are not
    /// UTF-8 are replaced with U+FFFD here (the patch quotes such paths exactly).
    pub path: String,
    /// For renames and copies: the old path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// How the file changed.
    pub status: Status,
    /// Added lines, or `null` for a binary file (`-` in `--numstat`); left out of the JSON when 0
    /// or `null` (default 0; `binary` tells a binary file apart).
    #[serde(skip_serializing_if = "zero_or_none")]
    pub additions: Option<u64>,
    /// Deleted lines, or `null` for a binary file; left out like `additions`.
    #[serde(skip_serializing_if = "zero_or_none")]
    pub deletions: Option<u64>,
    /// Git considers the content binary: the patch says `Binary files ... differ` and carries no
    /// content. Default false.
    #[serde(skip_serializing_if = "crate::compact::is_false")]
    pub binary: bool,
    /// Text that is not valid UTF-8 on at least one side: counted as text, carried in the patch as
    /// an exact `GIT binary patch` (present only when true).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub non_utf8: bool,
    /// For renames and copies: similarity in percent (git's `similarity index`), when the content
    /// could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<u8>,
    /// The old mode (e.g. `100644`) when the mode changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_mode: Option<String>,
    /// The new mode (e.g. `100755`) when the mode changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_mode: Option<String>,
    /// Why the content could not be read (an object missing from the store, an unreadable file):
    /// the file is listed with `null` counts and no patch, and the rest of the answer is given.
    /// Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::ItemError>,
}

impl FileStat {
    /// A file at `path` (renamed or copied `from`) changed as `status`, before its content is read:
    /// `0 0` counts, text, no similarity, no mode change, no error.
    pub(crate) fn new(path: String, from: Option<String>, status: Status) -> Self {
        Self {
            path,
            from,
            status,
            additions: Some(0),
            deletions: Some(0),
            binary: false,
            non_utf8: false,
            similarity: None,
            old_mode: None,
            new_mode: None,
            error: None,
        }
    }

    /// The listing of an unmerged path with git's `0 0` counts (`git diff --cached --numstat`).
    fn unmerged(path: &BString) -> Self {
        Self::new(crate::facets::utf8(path), None, Status::Unmerged)
    }
}

/// Exact totals over every changed file, also when the listing is cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    /// Changed files; default 0.
    #[serde(skip_serializing_if = "crate::compact::is_zero")]
    pub files: usize,
    /// Added lines over text files; default 0.
    #[serde(skip_serializing_if = "crate::compact::is_zero_u64")]
    pub additions: u64,
    /// Deleted lines over text files; default 0.
    #[serde(skip_serializing_if = "crate::compact::is_zero_u64")]
    pub deletions: u64,
}

/// A line count left out of the JSON: 0, or `null` for a binary file.
fn zero_or_none(count: &Option<u64>) -> bool {
    count.is_none_or(|count| count == 0)
}

impl Totals {
    /// Sums over `stats`.
    pub fn of<'a>(stats: impl IntoIterator<Item = &'a FileStat>) -> Self {
        stats.into_iter().fold(Self::default(), |mut totals, stat| {
            totals.files += 1;
            totals.additions += stat.additions.unwrap_or(0);
            totals.deletions += stat.deletions.unwrap_or(0);
            totals
        })
    }
}

/// The file changes between two sides, and the unmerged paths set apart from them.
struct Diffed {
    changes: Vec<Change>,
    unmerged: BTreeMap<BString, Stages>,
    /// The work tree, when it is the new side (its content is read from disk).
    new_root: Option<std::path::PathBuf>,
    /// The `.gitattributes` files for these two sides.
    attribute_files: changes::AttributeFiles,
}

/// Compares `old` with `new` within `filter`.
///
/// Unmerged paths: against the index they are set apart (listed, never diffed); a tree against the
/// work tree compares the work-tree file, like `git diff <tree>`.
fn diff_sides(
    repo: &gix::Repository,
    old: Side,
    new: Side,
    filter: &PathFilter,
    rewrites: Option<gix::diff::Rewrites>,
    interrupt: &Interrupt,
) -> Result<Diffed> {
    let involves_index = old == Side::Index || new == Side::Index;
    let (mut old_snapshot, mut new_snapshot) = match (old, new) {
        // Only what differs is read (see `prune`).
        (Side::Empty | Side::Tree(_), Side::Empty | Side::Tree(_)) if prune::allowed(rewrites.as_ref()) => {
            let (old_state, new_state) = prune::trees(repo, old.tree(), new.tree(), filter)?;
            (side::Snapshot::of(old_state), side::Snapshot::of(new_state))
        }
        (Side::Tree(tree), Side::Index) if prune::allowed(rewrites.as_ref()) => {
            let index = side::read(repo, Side::Index, filter, false, interrupt)?;
            match prune::tree_and_index(repo, tree, &index.state)? {
                Some((mut tree_state, index_state)) => {
                    tree_state.remove_entries(|_, path, _| !filter.matches(path));
                    (side::Snapshot::of(tree_state), side::Snapshot { state: index_state, unmerged: index.unmerged })
                }
                None => (side::read(repo, old, filter, false, interrupt)?, index),
            }
        }
        _ => (
            side::read(repo, old, filter, false, interrupt)?,
            side::read(repo, new, filter, !involves_index, interrupt)?,
        ),
    };
    let mut unmerged = BTreeMap::new();
    if involves_index {
        unmerged.append(&mut old_snapshot.unmerged);
        unmerged.append(&mut new_snapshot.unmerged);
        for snapshot in [&mut old_snapshot, &mut new_snapshot] {
            snapshot.state.remove_entries(|_, path, _| unmerged.contains_key(path));
        }
    }
    let new_root = (new == Side::Worktree).then(|| repo.workdir().map(ToOwned::to_owned)).flatten();
    interrupt.check()?;
    let attributes = changes::Attributes::for_sides(old, new);
    let paths = [&old_snapshot.state, &new_snapshot.state]
        .into_iter()
        .flat_map(|state| state.entries().iter().map(move |entry| entry.path(state)));
    let attribute_files = changes::AttributeFiles::new(repo, attributes, paths)?;
    let changes =
        changes::compare(repo, &old_snapshot.state, &new_snapshot.state, new_root.clone(), &attribute_files, rewrites)?;
    Ok(Diffed { changes, unmerged, new_root, attribute_files })
}

/// The changed files from the tree `old` (`None`: the empty tree, for a root commit) to the tree
/// `new`, within `path` (applied before rename detection, as a git pathspec is), renames as
/// `diff.renames` configures them (git's `-M50%` by default): what `git log` diffs for a commit.
///
/// # Errors
/// [`crate::Error::GitRead`] when a tree or blob cannot be read; [`crate::Error::Cancelled`] once
/// `interrupt` is triggered.
pub(crate) fn tree_changes(
    repo: &gix::Repository,
    old: Option<gix::ObjectId>,
    new: gix::ObjectId,
    path: Option<&str>,
    interrupt: &Interrupt,
) -> Result<Vec<Change>> {
    let rewrites = changes::configured_rewrites(repo)?;
    let old = old.map_or(Side::Empty, Side::Tree);
    Ok(diff_sides(repo, old, Side::Tree(new), &PathFilter::new(path), rewrites, interrupt)?.changes)
}

/// The listing of every change (no patch), with unmerged paths in path order.
fn stats(repo: &gix::Repository, diffed: &Diffed, interrupt: &Interrupt) -> Result<Vec<FileStat>> {
    let mut renderer =
        patch::Renderer::new(repo, diffed.new_root.clone(), &diffed.attribute_files, patch::Output::Listing)?;
    let mut out = Vec::with_capacity(diffed.changes.len() + diffed.unmerged.len());
    for change in &diffed.changes {
        interrupt.check()?;
        out.push(renderer.render(change)?.stat);
    }
    out.extend(diffed.unmerged.keys().map(FileStat::unmerged));
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// The tree `HEAD` points at, or nothing for an unborn `HEAD`.
fn head_side(repo: &gix::Repository) -> Result<Side> {
    let to_err = |err| crate::error::Error::git("HEAD", err);
    match repo.head_id() {
        Ok(id) => {
            let tree = id.object().map_err(to_err)?.peel_to_commit().map_err(to_err)?.tree_id().map_err(to_err)?;
            Ok(Side::Tree(tree.detach()))
        }
        Err(_) => Ok(Side::Empty),
    }
}

/// Diff tools.
impl Engine {
    /// `diff.text`: the unified patch of a selection, cut to `options`' byte and line caps and
    /// `max_tokens`.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] for a bad selection (`invalid_revision`, `unknown_revision`,
    /// `invalid_path`) or a budget under the floor; [`crate::Error::GitRead`] on a failed read.
    pub fn diff_text(
        &self,
        repo: &Repo,
        options: &text::Options,
        max_tokens: usize,
        measure: &mut Measure<'_, text::Report>,
    ) -> Result<Budgeted<text::Report>> {
        text::fit(text::read(&repo.git, options, &repo.interrupt)?, options, max_tokens, measure, &repo.interrupt)
    }

    /// `commit.details`: one commit's metadata and changed files (merges against their first
    /// parent; a stash also with its index and untracked parts apart).
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] for a revision that is refused or names no commit, or a budget
    /// under the floor; [`crate::Error::GitRead`] on a failed read.
    pub fn commit_details(
        &self,
        repo: &Repo,
        commit: &str,
        max_tokens: usize,
        measure: &mut Measure<'_, commit::Details>,
    ) -> Result<Budgeted<commit::Details>> {
        commit::fit(commit::read(&repo.git, commit, &repo.interrupt)?, max_tokens, measure)
    }

    /// [`Engine::commit_details`] without the message body (the subject stays), for a caller that
    /// wants the changed files: the budget then goes to them.
    ///
    /// # Errors
    /// As [`Engine::commit_details`].
    pub fn commit_details_without_body(
        &self,
        repo: &Repo,
        commit: &str,
        max_tokens: usize,
        measure: &mut Measure<'_, commit::Details>,
    ) -> Result<Budgeted<commit::Details>> {
        let details = commit::read(&repo.git, commit, &repo.interrupt)?;
        commit::fit(commit::Details { body: String::new(), ..details }, max_tokens, measure)
    }

    /// `worktree.changes`: per-path line counts of staged and unstaged changes, kept apart, plus
    /// untracked and conflicted paths.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] for a budget under the floor; [`crate::Error::GitRead`] on a
    /// failed read.
    pub fn worktree_changes(
        &self,
        repo: &Repo,
        max_tokens: usize,
        measure: &mut Measure<'_, worktree::Report>,
    ) -> Result<Budgeted<worktree::Report>> {
        worktree::fit(worktree::read(&repo.git, &repo.interrupt)?, max_tokens, measure)
    }
}
