//! The work-tree status facet: staged, unstaged, untracked and conflicted paths with exact counts.
//!
//! Computed with gix's status (HEAD vs index, index vs work tree, untracked files one by one like
//! `git status --porcelain --untracked-files=all`). Nothing is written: gix never refreshes the index on disk, never
//! takes `index.lock`, runs no fsmonitor, and the repository was opened without filter drivers
//! (see [`crate::repository`]). gix looks only at a submodule's checked-out commit; whether its work tree has
//! changes is read here from the submodule opened the same way (gix's own look inside would use the submodule's
//! configuration as is, filter drivers included).

use std::collections::BTreeSet;

use gix::status::index_worktree::Item as WorktreeItem;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::facets::utf8;

/// How a path changed, in git's porcelain terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// Added (`A`).
    Added,
    /// Content or mode changed (`M`).
    Modified,
    /// Deleted (`D`).
    Deleted,
    /// Renamed from another path (`R`).
    Renamed,
    /// Type changed, e.g. file to symlink (`T`).
    TypeChange,
}

/// One changed path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// Repository-relative path as UTF-8 (never git's octal quoting).
    pub path: String,
    /// How it changed.
    pub status: ChangeKind,
    /// For renames: the path it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// The work tree's state; every list is sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// `true` for a bare repository, which has no work tree: every list is then empty.
    pub bare: bool,
    /// Index differs from HEAD (`git diff --cached --name-status`), conflicted paths excluded.
    pub staged: Vec<Change>,
    /// Work tree differs from index (`git diff --name-status`), conflicted paths excluded.
    pub unstaged: Vec<Change>,
    /// Files not in the index and not ignored.
    pub untracked: Vec<String>,
    /// Paths with unmerged index entries (stages 1-3).
    pub conflicted: Vec<String>,
}

impl Status {
    /// `true` when nothing is staged, unstaged, untracked or conflicted.
    pub fn is_clean(&self) -> bool {
        self.staged.is_empty() && self.unstaged.is_empty() && self.untracked.is_empty() && self.conflicted.is_empty()
    }
}

/// Reads the work-tree status. A bare repository has an empty status.
///
/// # Errors
/// [`Error::GitRead`] when the index or a tree cannot be read.
pub fn status(repo: &gix::Repository) -> Result<Status> {
    status_at(repo, 0)
}

fn status_at(repo: &gix::Repository, depth: usize) -> Result<Status> {
    if repo.workdir().is_none() {
        return Ok(Status { bare: true, ..Status::default() });
    }
    let to_err = |err| Error::git("work-tree status", err);
    let iter = repo
        .status(gix::progress::Discard)
        .map_err(to_err)?
        .untracked_files(gix::status::UntrackedFiles::Files)
        .index_worktree_submodules(gix::status::Submodule::Given {
            ignore: gix::submodule::config::Ignore::Dirty,
            check_dirty: false,
        })
        .index_worktree_rewrites(None)
        .into_iter(None)
        .map_err(to_err)?;
    let mut out = Status::default();
    let mut conflicted = BTreeSet::new();
    for item in iter {
        let item = item.map_err(to_err)?;
        match item {
            gix::status::Item::TreeIndex(change) => out.staged.push(staged_change(&change)),
            gix::status::Item::IndexWorktree(item) => match item {
                WorktreeItem::Modification { rela_path, status, .. } => {
                    use gix::status::plumbing::index_as_worktree::{Change as C, EntryStatus};
                    let kind = match status {
                        EntryStatus::Conflict { .. } => {
                            conflicted.insert(utf8(&rela_path));
                            continue;
                        }
                        EntryStatus::Change(C::Removed) => ChangeKind::Deleted,
                        EntryStatus::Change(C::Type { .. }) => ChangeKind::TypeChange,
                        EntryStatus::Change(C::Modification { .. } | C::SubmoduleModification(_)) => {
                            ChangeKind::Modified
                        }
                        EntryStatus::IntentToAdd => ChangeKind::Added,
                        EntryStatus::NeedsUpdate(_) => continue,
                    };
                    out.unstaged.push(Change { path: utf8(&rela_path), status: kind, from: None });
                }
                WorktreeItem::DirectoryContents { entry, .. } => {
                    if matches!(entry.status, gix::dir::entry::Status::Untracked) {
                        out.untracked.push(utf8(&entry.rela_path));
                    }
                }
                WorktreeItem::Rewrite { dirwalk_entry, .. } => {
                    out.untracked.push(utf8(&dirwalk_entry.rela_path));
                }
            },
        }
    }
    for path in dirty_submodules(repo, depth)? {
        if !conflicted.contains(&path) && !out.unstaged.iter().any(|change| change.path == path) {
            out.unstaged.push(Change { path, status: ChangeKind::Modified, from: None });
        }
    }
    // git reports an unmerged path once, as unmerged, never also as staged, unstaged or untracked.
    out.staged.retain(|change| !conflicted.contains(&change.path));
    out.unstaged.retain(|change| !conflicted.contains(&change.path));
    // A path deleted by us (stages 1 and 3 only) has no stage-2 entry, so the directory walk also sees it as untracked.
    out.untracked.retain(|path| !conflicted.contains(path));
    out.conflicted = conflicted.into_iter().collect();
    out.staged.sort_by(|a, b| a.path.cmp(&b.path));
    out.unstaged.sort_by(|a, b| a.path.cmp(&b.path));
    out.untracked.sort();
    out.staged.dedup();
    Ok(out)
}

fn staged_change(change: &gix::diff::index::Change) -> Change {
    use gix::diff::index::ChangeRef;
    match change {
        ChangeRef::Addition { location, .. } => Change { path: utf8(location), status: ChangeKind::Added, from: None },
        ChangeRef::Deletion { location, .. } => {
            Change { path: utf8(location), status: ChangeKind::Deleted, from: None }
        }
        ChangeRef::Modification { location, previous_entry_mode, entry_mode, .. } => {
            let kind = if previous_entry_mode.to_tree_entry_mode().map(|m| m.kind())
                == entry_mode.to_tree_entry_mode().map(|m| m.kind())
            {
                ChangeKind::Modified
            } else {
                ChangeKind::TypeChange
            };
            Change { path: utf8(location), status: kind, from: None }
        }
        ChangeRef::Rewrite { source_location, location, copy, .. } => Change {
            path: utf8(location),
            status: if *copy { ChangeKind::Added } else { ChangeKind::Renamed },
            from: Some(utf8(source_location)),
        },
    }
}

/// The initialised submodules (of this repository, not nested ones) whose work tree has changes, as `git status`
/// reports them (` M` in porcelain: modified or untracked content), honouring `submodule.<name>.ignore`. Each is
/// opened with filter drivers removed, like the top-level repository; nesting stops at
/// [`crate::facets::submodules::MAX_DEPTH`].
fn dirty_submodules(repo: &gix::Repository, depth: usize) -> Result<Vec<String>> {
    use gix::submodule::config::Ignore;
    let to_err = |err| Error::git("submodule status", err);
    let Some(submodules) = repo.submodules().map_err(to_err)? else {
        return Ok(Vec::new());
    };
    let mut dirty = Vec::new();
    for submodule in submodules {
        let ignore = submodule.ignore().ok().flatten();
        if depth + 1 >= crate::facets::submodules::MAX_DEPTH || matches!(ignore, Some(Ignore::Dirty | Ignore::All)) {
            continue;
        }
        let Some(opened) = submodule.open().ok().flatten() else { continue };
        if !opened.workdir().is_some_and(|workdir| workdir.join(".git").exists()) {
            continue;
        }
        let status = status_at(&crate::repository::without_filter_drivers(opened)?, depth + 1)?;
        let changed = !(status.staged.is_empty() && status.unstaged.is_empty() && status.conflicted.is_empty());
        let untracked = !status.untracked.is_empty() && ignore != Some(Ignore::Untracked);
        if changed || untracked {
            dirty.push(utf8(&submodule.path().map_err(to_err)?));
        }
    }
    Ok(dirty)
}
