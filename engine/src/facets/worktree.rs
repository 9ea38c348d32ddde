//! The work-tree status facet: staged, unstaged, untracked and conflicted paths with exact counts.
//!
//! Computed with gix's status (HEAD vs index, index vs work tree, untracked files as
//! `status.showUntrackedFiles` says: `normal` (the default) lists a wholly untracked directory as
//! one `dir/` entry like `git status`, `all` lists every file, `no` none). Nothing is written: gix
//! never refreshes the index on disk, never takes `index.lock`, runs no fsmonitor, and the
//! repository was opened without filter drivers (see [`crate::repository`]). gix looks only at a
//! submodule's checked-out commit; whether its work tree has changes is read here from the
//! submodule opened the same way (gix's own look inside would use the submodule's configuration as
//! is, filter drivers included).

use std::collections::BTreeSet;

use gix::status::index_worktree::Item as WorktreeItem;
use serde::Serialize;

use crate::compact::{is_false, is_zero};
use crate::compare::{changes, prune};
use crate::error::{Error, ItemError, Result, Unreadable};
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

/// How untracked files are listed: git's `status.showUntrackedFiles` (`--untracked-files`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UntrackedMode {
    /// None are looked for (`no`, or `false`).
    No,
    /// Files one by one, but a wholly untracked directory as one `dir/` entry (`normal`, `true`, or
    /// unset).
    #[default]
    Normal,
    /// Every untracked file one by one (`all`).
    All,
}

impl UntrackedMode {
    /// The mode `status.showUntrackedFiles` sets in `repo`'s configuration; a value git would
    /// refuse counts as `normal`, so the answer is still given.
    pub fn configured(repo: &gix::Repository) -> Self {
        let config = repo.config_snapshot();
        match config.string("status.showUntrackedFiles").map(|value| value.to_string().to_ascii_lowercase()) {
            Some(value) if matches!(value.as_str(), "no" | "false" | "off" | "0") => Self::No,
            Some(value) if value == "all" => Self::All,
            _ => Self::Normal,
        }
    }

    /// `true` for [`UntrackedMode::Normal`], the default, which answers leave out.
    pub fn is_normal(&self) -> bool {
        *self == Self::Normal
    }
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
    /// Files not in the index and not ignored, as [`Status::untracked_mode`] lists them (a wholly
    /// untracked directory is one `dir/` entry in `normal` mode).
    pub untracked: Vec<String>,
    /// How `untracked` was listed.
    pub untracked_mode: UntrackedMode,
    /// Paths with unmerged index entries (stages 1-3).
    pub conflicted: Vec<String>,
    /// Submodules whose state could not be read (a `.gitmodules` name git ignores as suspicious, a
    /// gitdir that is gone), in path order: they are in no other list unless their recorded commit
    /// was staged. Also a `.gitmodules` that is no regular file (a FIFO: read as none), and
    /// untracked directories too deep to open.
    pub unreadable: Vec<Unreadable>,
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
    let untracked_mode = UntrackedMode::configured(repo);
    if untracked_mode == UntrackedMode::No {
        return status_listing(repo, depth, untracked_mode);
    }
    // gix's directory walk fails whole on a directory it cannot open (one too deep for the system's path length,
    // most often), where git warns and answers. So the untracked files come from the bounded walk, which names
    // what it skips, on a thread of its own while the tracked files are compared: one walk, never redone.
    let walker = repo.clone();
    let (listing, walked) = std::thread::scope(|scope| {
        let walked = scope.spawn(move || bounded_untracked(&walker, untracked_mode));
        (status_listing(repo, depth, UntrackedMode::No), walked.join())
    });
    let mut out = listing?;
    let (untracked, unreadable) = walked
        .map_err(|_| Error::git_text("work-tree status", "the directory walk failed unexpectedly".to_owned()))??;
    // A path deleted by us (stages 1 and 3 only) has no stage-2 entry, so the walk also sees it as untracked; and
    // what lies in a submodule the status could not look at is not listed, as before.
    let hidden: BTreeSet<&str> = out.conflicted.iter().map(String::as_str).collect();
    let in_problem = |path: &str| {
        out.unreadable.iter().any(|problem| {
            path == problem.path || path.strip_prefix(problem.path.as_str()).is_some_and(|rest| rest.starts_with('/'))
        })
    };
    let untracked: Vec<String> =
        untracked.into_iter().filter(|path| !hidden.contains(path.as_str()) && !in_problem(path)).collect();
    out.untracked = untracked;
    out.untracked_mode = untracked_mode;
    out.unreadable.extend(unreadable);
    out.unreadable.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Whether the work tree holds something git cannot track at `rela_path`: neither a file, a
/// directory nor a symbolic link (a FIFO, device or socket).
fn is_special(repo: &gix::Repository, rela_path: &gix::bstr::BStr) -> bool {
    let Some(path) = repo.workdir().zip(gix::path::from_bstr(rela_path).ok()).map(|(root, path)| root.join(path))
    else {
        return false;
    };
    std::fs::symlink_metadata(path).is_ok_and(|meta| !meta.is_file() && !meta.is_dir() && !meta.is_symlink())
}

/// The longest work-tree path, in bytes, the bounded walk goes into: below Linux's `PATH_MAX`
/// (4,096) by room for one more name (255) and `/.gitignore`, so every file it opens has a path the
/// system accepts.
const DEEPEST_WALKED_PATH: usize = 4096 - 255 - 16;

/// The untracked files as `mode` lists them, from a directory walk that does not go into a
/// directory whose path is longer than [`DEEPEST_WALKED_PATH`] bytes (git cannot open those either:
/// `could not open directory`) and names each such directory as unreadable. The directories beyond
/// are left out, as git leaves them out.
fn bounded_untracked(repo: &gix::Repository, mode: UntrackedMode) -> Result<(Vec<String>, Vec<Unreadable>)> {
    use gix::dir::walk::{Action, Delegate, EmissionMode};
    use gix::dir::{EntryRef, entry};

    struct Bounded {
        root_len: usize,
        untracked: Vec<String>,
        unreadable: Vec<Unreadable>,
        refused: BTreeSet<gix::bstr::BString>,
    }
    impl Delegate for Bounded {
        fn emit(&mut self, entry: EntryRef<'_>, _collapsed: Option<entry::Status>) -> Action {
            // A directory not walked is reported as unreadable, not as untracked: git lists neither it nor
            // anything in it.
            let refused = self.refused.contains(entry.rela_path.as_ref());
            let untrackable = entry.disk_kind == Some(entry::Kind::Untrackable);
            if matches!(entry.status, entry::Status::Untracked) && !refused && !untrackable {
                let mut path = utf8(&entry.rela_path);
                if entry.disk_kind.is_some_and(|kind| kind.is_dir()) {
                    path.push('/');
                }
                self.untracked.push(path);
            }
            std::ops::ControlFlow::Continue(())
        }

        fn can_recurse(
            &mut self,
            entry: EntryRef<'_>,
            for_deletion: Option<gix::dir::walk::ForDeletionMode>,
            worktree_root_is_repository: bool,
        ) -> bool {
            let recurse = entry.status.can_recurse(
                entry.disk_kind,
                entry.pathspec_match,
                for_deletion,
                worktree_root_is_repository,
            );
            if recurse && self.root_len + 1 + entry.rela_path.len() > DEEPEST_WALKED_PATH {
                let reason = format!(
                    "could not open directory: its path is longer than {DEEPEST_WALKED_PATH} bytes; what it holds is \
                     left out, as git leaves it out"
                );
                self.unreadable.push(Unreadable { path: utf8(&entry.rela_path), error: ItemError::new(reason) });
                self.refused.insert(entry.rela_path.clone().into_owned());
                return false;
            }
            recurse
        }
    }

    let to_err = |err| Error::git("work-tree status", err);
    let workdir = repo.workdir().ok_or_else(|| Error::git_text("work-tree status", "no work tree".to_owned()))?;
    let index = repo.index_or_empty().map_err(to_err)?;
    let options = repo.dirwalk_options().map_err(to_err)?.emit_untracked(match mode {
        UntrackedMode::All => EmissionMode::Matching,
        UntrackedMode::Normal | UntrackedMode::No => EmissionMode::CollapseDirectory,
    });
    let mut delegate = Bounded {
        root_len: workdir.as_os_str().len(),
        untracked: Vec::new(),
        unreadable: Vec::new(),
        refused: BTreeSet::new(),
    };
    let never = std::sync::atomic::AtomicBool::new(false);
    repo.dirwalk(&index, None::<&str>, &never, options, &mut delegate).map_err(to_err)?;
    delegate.untracked.sort();
    Ok((delegate.untracked, delegate.unreadable))
}

/// The status with untracked files listed as `untracked_mode` says.
fn status_listing(repo: &gix::Repository, depth: usize, untracked_mode: UntrackedMode) -> Result<Status> {
    let to_err = |err| Error::git("work-tree status", err);
    let problems = submodule_problems(repo)?;
    let shared = repo.index_or_empty().map_err(to_err)?;
    let index = if problems.is_empty() {
        gix::worktree::IndexPersistedOrInMemory::Persisted(shared)
    } else {
        // gix's status would stop at these submodules: compare without their index entries, then put back what
        // git shows for them (a staged pointer change) below.
        let mut index: gix::index::File = (**shared).clone();
        index.remove_entries(|_, path, _| problems.iter().any(|problem| *problem.path.as_bytes() == **path));
        gix::worktree::IndexPersistedOrInMemory::InMemory(index)
    };
    // The platform takes the index; a persisted one is shared, not copied.
    let held = index.clone();
    let state: &gix::index::State = match &held {
        gix::worktree::IndexPersistedOrInMemory::Persisted(file) => file,
        gix::worktree::IndexPersistedOrInMemory::InMemory(file) => file,
    };
    let modules_file = crate::facets::submodules::hostile_modules_file(repo);
    // The work tree against the index runs on gix's threads; the index against HEAD is compared here meanwhile,
    // through the index's cache tree when it can be (only changed directories are read, as git does).
    let iter: Box<dyn Iterator<Item = std::result::Result<WorktreeItem, gix::Error>>> = if modules_file.is_none() {
        let platform = repo
            .status(gix::progress::Discard)
            .map_err(to_err)?
            .index(index)
            .untracked_files(match untracked_mode {
                UntrackedMode::No => gix::status::UntrackedFiles::None,
                UntrackedMode::Normal => gix::status::UntrackedFiles::Collapsed,
                UntrackedMode::All => gix::status::UntrackedFiles::Files,
            })
            .index_worktree_submodules(gix::status::Submodule::Given {
                ignore: gix::submodule::config::Ignore::Dirty,
                check_dirty: false,
            })
            .index_worktree_rewrites(None);
        Box::new(platform.into_index_worktree_iter(None).map_err(to_err)?)
    } else {
        Box::new(items_without_modules_file(repo, state, untracked_mode)?.into_iter().map(Ok))
    };
    let staged = match staged_by_cache_tree(repo, state)? {
        Some(staged) => staged,
        None => {
            let tree = repo.head_tree_id_or_empty().map_err(to_err)?.detach();
            let mut staged = Vec::new();
            repo.tree_index_status(
                &tree,
                state,
                None,
                gix::status::tree_index::TrackRenames::AsConfigured,
                |change, _, _| {
                    staged.push(staged_change(&change));
                    Ok(std::ops::ControlFlow::Continue(()))
                },
            )
            .map_err(to_err)?;
            staged
        }
    };
    let mut out = Status { staged, ..Status::default() };
    let mut conflicted = BTreeSet::new();
    for item in iter {
        let item = item.map_err(to_err)?;
        match item {
            WorktreeItem::Modification { rela_path, status, .. } => {
                use gix::status::plumbing::index_as_worktree::{Change as C, EntryStatus};
                let kind = match status {
                    EntryStatus::Conflict { .. } => {
                        conflicted.insert(utf8(&rela_path));
                        continue;
                    }
                    EntryStatus::Change(C::Removed) => ChangeKind::Deleted,
                    // git shows a tracked file turned FIFO, device or socket as modified, not as a type change.
                    EntryStatus::Change(C::Type { .. }) if is_special(repo, rela_path.as_ref()) => ChangeKind::Modified,
                    EntryStatus::Change(C::Type { .. }) => ChangeKind::TypeChange,
                    EntryStatus::Change(C::Modification { .. } | C::SubmoduleModification(_)) => ChangeKind::Modified,
                    EntryStatus::IntentToAdd => ChangeKind::Added,
                    EntryStatus::NeedsUpdate(_) => continue,
                };
                out.unstaged.push(Change { path: utf8(&rela_path), status: kind, from: None });
            }
            WorktreeItem::DirectoryContents { entry, .. } => {
                // git lists no FIFO, device or socket as untracked: it could not add one.
                let untrackable = entry.disk_kind == Some(gix::dir::entry::Kind::Untrackable);
                if matches!(entry.status, gix::dir::entry::Status::Untracked) && !untrackable {
                    let mut path = utf8(&entry.rela_path);
                    // A collapsed directory is shown as git shows it, with a trailing slash.
                    if entry.disk_kind.is_some_and(|kind| kind.is_dir()) {
                        path.push('/');
                    }
                    out.untracked.push(path);
                }
            }
            WorktreeItem::Rewrite { dirwalk_entry, .. } => {
                out.untracked.push(utf8(&dirwalk_entry.rela_path));
            }
        }
    }
    if !problems.is_empty() {
        let inside = |path: &str| {
            problems.iter().any(|problem| {
                path == problem.path
                    || path.strip_prefix(problem.path.as_str()).is_some_and(|rest| rest.starts_with('/'))
            })
        };
        out.staged.retain(|change| !inside(&change.path));
        out.untracked.retain(|path| !inside(path));
        out.unstaged.retain(|change| !inside(&change.path));
        out.staged.extend(staged_pointers(repo, &problems)?);
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
    out.unreadable = problems;
    out.unreadable.extend(modules_file_unreadable(repo));
    out.untracked_mode = untracked_mode;
    out.staged.sort_by(|a, b| a.path.cmp(&b.path));
    out.unstaged.sort_by(|a, b| a.path.cmp(&b.path));
    out.untracked.sort();
    out.staged.dedup();
    Ok(out)
}

/// `.gitmodules` as an unreadable item when it is no regular file (a FIFO, device, socket or
/// directory): the repository is then read as one without submodules, as git reads it after its
/// warning.
fn modules_file_unreadable(repo: &gix::Repository) -> Option<Unreadable> {
    let kind = crate::facets::submodules::hostile_modules_file(repo)?;
    let error = ItemError::new(format!("a {kind}, not a regular file: read as no .gitmodules"));
    Some(Unreadable { path: ".gitmodules".to_owned(), error })
}

/// The submodules the work tree's side of a comparison cannot look at ([`submodule_problems`]) and
/// an unreadable `.gitmodules`, in path order: what `diff.text` of the work tree names so that a
/// submodule it could not open does not pass for unchanged.
///
/// # Errors
/// As [`submodule_problems`].
pub(crate) fn unreadable_submodules(repo: &gix::Repository) -> Result<Vec<Unreadable>> {
    let mut unreadable = submodule_problems(repo)?;
    unreadable.extend(modules_file_unreadable(repo));
    unreadable.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(unreadable)
}

/// The work tree against `state` as gix's status compares it, for a repository whose `.gitmodules`
/// is no regular file: gix's own submodule check opens `.gitmodules` (a FIFO there would block it
/// for ever), so a gitlink is compared here as git compares one, from the submodule's `.git` alone:
/// modified when the commit checked out differs from the recorded one
/// ([`crate::compare::side::checked_out_head`]).
fn items_without_modules_file(
    repo: &gix::Repository,
    state: &gix::index::State,
    untracked_mode: UntrackedMode,
) -> Result<Vec<WorktreeItem>> {
    use gix::status::plumbing::index_as_worktree_with_renames::{Entry, VisitEntry};
    let to_err = |err| Error::git("work-tree status", err);
    struct Collect(Vec<WorktreeItem>);
    impl<'index> VisitEntry<'index> for Collect {
        type ContentChange = ();
        type SubmoduleStatus = gix::submodule::Status;
        fn visit_entry(&mut self, entry: Entry<'index, (), gix::submodule::Status>) {
            self.0.push(entry.into());
        }
    }
    #[derive(Clone)]
    struct GitlinkHead {
        workdir: std::path::PathBuf,
        roots: Option<Vec<std::path::PathBuf>>,
    }
    impl gix::status::plumbing::index_as_worktree::traits::SubmoduleStatus for GitlinkHead {
        type Output = gix::submodule::Status;
        fn status(
            &mut self,
            entry: &gix::index::Entry,
            rela_path: &gix::bstr::BStr,
        ) -> gix::Result<Option<gix::submodule::Status>> {
            let head = crate::compare::side::checked_out_head(&self.workdir, rela_path, self.roots.as_deref());
            Ok(head.filter(|head| *head != entry.id).map(|head| gix::submodule::Status {
                state: gix::submodule::State { repository_exists: true, worktree_checkout: true, ..Default::default() },
                index_id: Some(entry.id),
                checked_out_head_id: Some(head),
                changes: None,
            }))
        }
    }
    let Some(workdir) = repo.workdir() else { return Ok(Vec::new()) };
    let emission = match untracked_mode {
        UntrackedMode::No => None,
        UntrackedMode::Normal => Some(gix::dir::walk::EmissionMode::CollapseDirectory),
        UntrackedMode::All => Some(gix::dir::walk::EmissionMode::Matching),
    };
    let dirwalk_options = match emission {
        Some(mode) => Some(repo.dirwalk_options().map_err(to_err)?.emit_untracked(mode)),
        None => None,
    };
    let options =
        gix::status::index_worktree::Options { sorting: None, dirwalk_options, rewrites: None, thread_limit: None };
    let mut collect = Collect(Vec::new());
    let gitlinks = GitlinkHead { workdir: workdir.to_path_buf(), roots: crate::guard::roots_of(repo) };
    repo.index_worktree_status(
        state,
        None::<&gix::bstr::BStr>,
        &mut collect,
        gix::status::plumbing::index_as_worktree::traits::FastEq,
        gitlinks,
        &mut gix::progress::Discard,
        &std::sync::atomic::AtomicBool::new(false),
        options,
    )
    .map_err(to_err)?;
    Ok(collect.0)
}

/// The submodules gix's status cannot look at, with why, in path order: a `.gitmodules` section
/// whose name git ignores as suspicious (a `..` component would lead outside `.git/modules`;
/// nothing there is ever opened), a submodule whose git dir lies outside the allowed roots or holds
/// a FIFO where gix reads a file ([`crate::guard::vet_submodule`]; never opened), or a checkout
/// whose `.git` file points at a gitdir that is gone. An unreadable `.gitmodules` is one entry.
///
/// # Errors
/// None today; reads that fail become entries.
pub(crate) fn submodule_problems(repo: &gix::Repository) -> Result<Vec<Unreadable>> {
    if crate::facets::submodules::hostile_modules_file(repo).is_some() {
        return Ok(Vec::new());
    }
    let submodules = match repo.submodules() {
        Ok(Some(submodules)) => submodules,
        Ok(None) => return Ok(Vec::new()),
        Err(err) => {
            return Ok(vec![Unreadable { path: ".gitmodules".to_owned(), error: ItemError::from_error(err) }]);
        }
    };
    let mut problems = Vec::new();
    for submodule in submodules {
        let Ok(path) = submodule.path() else { continue };
        let path = utf8(&path);
        let error = if submodule.validated_name().is_err() {
            ItemError::new(format!("ignoring suspicious submodule name {:?}, as git does", utf8(submodule.name())))
        } else if let Err(error) = crate::guard::vet_submodule_of(repo, &submodule) {
            error
        } else if let Err(err) = submodule.git_dir_try_old_form() {
            crate::facets::submodules::gitdir_error(repo, &path, err)
        } else {
            continue;
        };
        problems.push(Unreadable { path, error });
    }
    problems.sort_by(|a, b| a.path.cmp(&b.path));
    problems.dedup_by(|a, b| a.path == b.path);
    Ok(problems)
}

/// The staged changes of the `problems`' gitlinks: their index entry against HEAD's tree, like
/// `git diff --cached`.
fn staged_pointers(repo: &gix::Repository, problems: &[Unreadable]) -> Result<Vec<Change>> {
    let to_err = |err| Error::git("work-tree status", err);
    let index = repo.index_or_empty().map_err(to_err)?;
    let tree = repo.head_tree().ok();
    let mut changes = Vec::new();
    for problem in problems {
        let staged = index.entry_by_path(problem.path.as_str().into()).map(|entry| entry.id);
        let committed = match &tree {
            Some(tree) => tree
                .lookup_entry_by_path(problem.path.as_str())
                .map_err(|err| Error::git("HEAD tree", err))?
                .map(|entry| entry.object_id()),
            None => None,
        };
        let status = match (committed, staged) {
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Deleted,
            (Some(old), Some(new)) if old != new => ChangeKind::Modified,
            _ => continue,
        };
        changes.push(Change { path: problem.path.clone(), status, from: None });
    }
    Ok(changes)
}

fn staged_change(change: &gix::diff::index::ChangeRef<'_, '_>) -> Change {
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

/// The initialised submodules (of this repository, not nested ones) whose work tree has changes, as
/// `git status` reports them (` M` in porcelain: modified or untracked content), honouring
/// `submodule.<name>.ignore`. Each is opened with filter drivers removed, like the top-level
/// repository; nesting stops at [`crate::facets::submodules::MAX_DEPTH`].
fn dirty_submodules(repo: &gix::Repository, depth: usize) -> Result<Vec<String>> {
    use gix::submodule::config::Ignore;
    let to_err = |err| Error::git("submodule status", err);
    if crate::facets::submodules::hostile_modules_file(repo).is_some() {
        return Ok(Vec::new());
    }
    let Some(submodules) = repo.submodules().map_err(to_err)? else {
        return Ok(Vec::new());
    };
    let mut dirty = Vec::new();
    for submodule in submodules {
        // Submodules git ignores or cannot read are listed in `unreadable` by the caller.
        if crate::guard::vet_submodule_of(repo, &submodule).is_err() || submodule.git_dir_try_old_form().is_err() {
            continue;
        }
        let ignore = submodule.ignore().ok().flatten();
        if depth + 1 >= crate::facets::submodules::MAX_DEPTH || matches!(ignore, Some(Ignore::Dirty | Ignore::All)) {
            continue;
        }
        let Some(opened) = crate::guard::open_submodule(repo, &submodule).ok().flatten() else { continue };
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

/// Exact work-tree counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// A bare repository: there is no work tree, so all counts are 0. Left out of the JSON when
    /// false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bare: bool,
    /// Nothing staged, unstaged, untracked or conflicted (also `true` for a bare repository);
    /// default false.
    #[serde(skip_serializing_if = "is_false")]
    pub clean: bool,
    /// Paths whose index entry differs from HEAD; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub staged: usize,
    /// Paths whose work-tree file differs from the index; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub unstaged: usize,
    /// Untracked, not ignored files (a wholly untracked directory counts once in `normal` mode);
    /// default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub untracked: usize,
    /// How untracked files were counted (`status.showUntrackedFiles`): `all` (every file), `no`
    /// (none looked for); absent for `normal`, the default, where a wholly untracked directory
    /// counts once, as `dir/`.
    #[serde(rename = "untrackedFiles", skip_serializing_if = "UntrackedMode::is_normal")]
    pub untracked_mode: UntrackedMode,
    /// Unmerged paths; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub conflicted: usize,
    /// Submodules whose state could not be read (listed with why in `repo.status`); absent when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub unreadable: usize,
}

impl Counts {
    /// `true` when the counts say nothing the path lists do not, once no list is cut: not bare,
    /// untracked files counted the default way, no unreadable submodule. (`clean` is then "no
    /// list", each count a list's length.)
    pub fn are_list_lengths(&self) -> bool {
        !self.bare && self.untracked_mode.is_normal() && self.unreadable == 0
    }

    /// Counts of a status.
    pub fn of(status: &Status) -> Self {
        Self {
            bare: status.bare,
            clean: status.is_clean(),
            staged: status.staged.len(),
            unstaged: status.unstaged.len(),
            untracked: status.untracked.len(),
            untracked_mode: status.untracked_mode,
            conflicted: status.conflicted.len(),
            unreadable: status.unreadable.len(),
        }
    }
}

/// HEAD's tree against `index` as `git status` compares them (the staged changes, renames as
/// `diff.renames` says), reading only the directories the index's cache tree does not vouch for
/// (see [`prune`]), in path order. `None` when that cannot be done exactly (no cache tree, a sparse
/// index, `status.renames` or `status.renameLimit` set, copies from unmodified files): the caller
/// then compares the whole sides.
///
/// # Errors
/// [`crate::Error::GitRead`] when HEAD, a tree or an object cannot be read.
pub(crate) fn staged_by_cache_tree(
    repo: &gix::Repository,
    index: &gix::index::State,
) -> Result<Option<Vec<crate::facets::worktree::Change>>> {
    use crate::facets::worktree::{Change as Staged, ChangeKind};
    let config = repo.config_snapshot();
    if config.string("status.renames").is_some() || config.string("status.renameLimit").is_some() {
        return Ok(None);
    }
    let rewrites = changes::configured_rewrites(repo)?;
    if !prune::allowed(rewrites.as_ref()) {
        return Ok(None);
    }
    let tree = repo.head_tree_id_or_empty().map_err(|err| crate::error::Error::git("HEAD", err))?.detach();
    let Some((tree_side, index_side)) = prune::tree_and_index(repo, tree, index)? else { return Ok(None) };
    let path =
        |entry: &Option<crate::compare::side::Entry>| entry.as_ref().map(|entry| crate::facets::utf8(&entry.path));
    let kind_of = |mode: gix::index::entry::Mode| mode.to_tree_entry_mode().map(|mode| mode.kind());
    let attribute_files = changes::AttributeFiles::new(repo, changes::Attributes::WorktreeThenIndex, [])?;
    let staged = changes::compare(repo, &tree_side, &index_side, None, &attribute_files, rewrites)?
        .into_iter()
        .map(|change| {
            let status = match change.kind {
                changes::Kind::Added | changes::Kind::Copied => ChangeKind::Added,
                changes::Kind::Deleted => ChangeKind::Deleted,
                changes::Kind::Renamed => ChangeKind::Renamed,
                changes::Kind::Modified => {
                    let old = change.old.as_ref().map(|entry| kind_of(entry.mode));
                    let new = change.new.as_ref().map(|entry| kind_of(entry.mode));
                    if old == new { ChangeKind::Modified } else { ChangeKind::TypeChange }
                }
            };
            let from = matches!(change.kind, changes::Kind::Renamed | changes::Kind::Copied)
                .then(|| path(&change.old))
                .flatten();
            Staged { path: crate::facets::utf8(change.path()), status, from }
        })
        .collect();
    Ok(Some(staged))
}
