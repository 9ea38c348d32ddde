//! The sides a diff compares (a tree, the index, the work tree), each read into an in-memory index
//! state.
//!
//! Nothing is written: trees become index states in memory, the index file is read and copied (only
//! the entries of a [`PathFilter::only`] set, when the diff is restricted to one), and the work
//! tree is the index with every changed entry's mode and blob id replaced by what the file on disk
//! would be if added (hashed, never written to the object database). Unmerged entries (conflict
//! stages 1-3) are set apart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use gix::ObjectId;
use gix::bstr::{BStr, BString};
use gix::index::entry::{Flags, Mode, Stage};
use gix::status::plumbing::index_as_worktree::{Change, EntryStatus, traits};
use gix::status::plumbing::index_as_worktree_with_renames::{Entry as StatusEntry, Recorder};

use crate::error::{Error, InvalidReason, Result};
use crate::interrupt::Interrupt;

/// A file on one side of a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Repository-relative path.
    pub(crate) path: BString,
    /// Index mode (regular, executable, symlink, gitlink).
    pub(crate) mode: Mode,
    /// Blob id (commit id for a gitlink); for the work tree, the id the file would get if added.
    pub(crate) id: ObjectId,
}

/// One side of a diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Nothing: the side of an unborn `HEAD` or a root commit's parent.
    Empty,
    /// A tree, by id.
    Tree(ObjectId),
    /// The index (stage 0; intent-to-add entries count as absent, like `git diff --cached`).
    Index,
    /// The tracked files of the work tree, as `git diff` sees them.
    Worktree,
}

/// The `(mode, id)` of stages 1 (base), 2 (ours) and 3 (theirs) of an unmerged path, where present.
pub(crate) type Stages = [Option<(Mode, ObjectId)>; 3];

/// A side read into memory.
pub(crate) struct Snapshot {
    /// Unconflicted entries, sorted like an index.
    pub(crate) state: gix::index::State,
    /// Paths with conflict stages in the index, with their stages (never part of `state`, whatever
    /// the side).
    pub(crate) unmerged: BTreeMap<BString, Stages>,
}

impl Snapshot {
    /// A side without unmerged paths (a tree's).
    pub(crate) fn of(state: gix::index::State) -> Self {
        Self { state, unmerged: BTreeMap::new() }
    }
}

impl Side {
    /// The tree of a tree side; `None` for every other side (the empty one included).
    pub(crate) fn tree(self) -> Option<ObjectId> {
        match self {
            Self::Tree(tree) => Some(tree),
            _ => None,
        }
    }
}

/// Restricts a diff to one repository-relative file or directory (a literal path, not a pattern),
/// or to a set of paths.
#[derive(Debug, Clone, Default)]
pub(crate) struct PathFilter {
    prefix: Option<BString>,
    /// Only these paths, when set.
    paths: Option<BTreeSet<BString>>,
}

impl PathFilter {
    /// A filter for `path`; `None`, an empty path and `.` match everything. A trailing `/` is
    /// ignored.
    pub(crate) fn new(path: Option<&str>) -> Self {
        let path = path.map(|path| path.trim_end_matches('/')).filter(|path| !path.is_empty() && *path != ".");
        Self { prefix: path.map(BString::from), paths: None }
    }

    /// A filter for exactly `paths` (files, not directories): for a diff of the index and the work
    /// tree whose other paths a status already found unchanged, so that only these are read from
    /// disk.
    pub(crate) fn only(paths: impl IntoIterator<Item = BString>) -> Self {
        Self { prefix: None, paths: Some(paths.into_iter().collect()) }
    }

    /// Whether `path` is the filter's path or lies below it (and is one of its paths, when it has a
    /// set).
    pub(crate) fn matches(&self, path: &BStr) -> bool {
        let under_prefix = match &self.prefix {
            None => true,
            Some(prefix) => {
                path.starts_with(prefix.as_slice())
                    && (path.len() == prefix.len() || path.get(prefix.len()) == Some(&b'/'))
            }
        };
        under_prefix && self.paths.as_ref().is_none_or(|paths| paths.contains(path))
    }

    /// Whether every path matches (no path, no set).
    fn is_everything(&self) -> bool {
        self.prefix.is_none() && self.paths.is_none()
    }
}

/// Reads `side`. For the work tree, `with_unmerged_files` adds the work-tree file of every unmerged
/// path (what `git diff <tree>` compares against the tree); otherwise unmerged paths are only
/// listed.
///
/// # Errors
/// [`Error::GitRead`] when a tree, the index or a work-tree file cannot be read; [`Error::Invalid`]
/// for the work tree of a bare repository; [`Error::Cancelled`] once `interrupt` is triggered (the
/// work tree's status stops through gix's interrupt flag).
pub(crate) fn read(
    repo: &gix::Repository,
    side: Side,
    filter: &PathFilter,
    with_unmerged_files: bool,
    interrupt: &Interrupt,
) -> Result<Snapshot> {
    let snapshot = match side {
        Side::Empty => Snapshot { state: gix::index::State::new(repo.object_hash()), unmerged: BTreeMap::new() },
        Side::Tree(tree) => {
            let file = repo.index_from_tree(&tree).map_err(|err| Error::git("a tree", err))?;
            let mut state: gix::index::State = file.into();
            if !filter.is_everything() {
                state.remove_entries(|_, path, _| !filter.matches(path));
            }
            Snapshot { state, unmerged: BTreeMap::new() }
        }
        Side::Index => {
            let mut snapshot = index(repo, filter)?;
            snapshot.state.remove_entries(|_, _, entry| entry.flags.contains(Flags::INTENT_TO_ADD));
            snapshot
        }
        Side::Worktree => worktree(repo, filter, with_unmerged_files, interrupt)?,
    };
    Ok(snapshot)
}

/// The entries of the index that `filter` matches, its unmerged ones set apart: a path set's
/// ([`PathFilter::only`]) found by search (the index's other entries are neither copied nor looked
/// at), else the index copied and cut.
fn index(repo: &gix::Repository, filter: &PathFilter) -> Result<Snapshot> {
    let index = repo.index_or_empty().map_err(|err| Error::git("the index", err))?;
    if index.is_sparse() {
        return Err(Error::git_text("the index", "sparse indexes are not supported"));
    }
    let mut state = match &filter.paths {
        Some(paths) => {
            let mut state = gix::index::State::new(index.object_hash());
            // The status of these entries compares their stat data with the index file's time (racy git).
            state.set_timestamp(index.timestamp());
            for path in paths {
                for entry in index.entry_range(path.as_ref()).map_or(&[][..], |range| &index.entries()[range]) {
                    state.dangerously_push_entry(entry.stat, entry.id, entry.flags, entry.mode, entry.path(&index));
                }
            }
            state
        }
        None => {
            let mut state = gix::index::State::clone(&index);
            if !filter.is_everything() {
                state.remove_entries(|_, path, _| !filter.matches(path));
            }
            state
        }
    };
    let mut unmerged: BTreeMap<BString, Stages> = BTreeMap::new();
    state.remove_entries(|_, path, entry| {
        let conflicted = entry.stage() != Stage::Unconflicted;
        if conflicted {
            let stages = unmerged.entry(path.to_owned()).or_default();
            if let Some(slot) = (entry.stage_raw() as usize).checked_sub(1).and_then(|idx| stages.get_mut(idx)) {
                *slot = Some((entry.mode, entry.id));
            }
        }
        conflicted
    });
    Ok(Snapshot { state, unmerged })
}

/// The work tree: the index's tracked entries as the files on disk are now.
fn worktree(
    repo: &gix::Repository,
    filter: &PathFilter,
    with_unmerged_files: bool,
    interrupt: &Interrupt,
) -> Result<Snapshot> {
    let Some(workdir) = repo.workdir().map(Path::to_owned) else {
        return Err(Error::invalid(
            InvalidReason::InvalidRevision,
            "WORKTREE names nothing here: the repository is bare and has no work tree",
        ));
    };
    // Only the files the caller asked for: status is the expensive part.
    let Snapshot { mut state, unmerged } = index(repo, filter)?;
    let to_err = |err| Error::git("work-tree files", err);
    let mut updates = Vec::new();
    {
        let mut recorder = Recorder::<ObjectId, ObjectId> { records: Vec::new() };
        repo.index_worktree_status(
            &state,
            None::<&BStr>,
            &mut recorder,
            traits::HashEq,
            SubmoduleHead { workdir: workdir.clone(), roots: crate::guard::roots_of(repo) },
            &mut gix::progress::Discard,
            interrupt.flag(),
            gix::status::index_worktree::Options::default(),
        )
        .map_err(|err| if interrupt.is_triggered() { Error::Cancelled } else { to_err(err) })?;
        interrupt.check()?;
        for record in recorder.records {
            if let StatusEntry::Modification { entry_index, entry, rela_path, status, .. } = record
                && let Some(update) = update_for(&workdir, repo, entry, rela_path, status)?
            {
                updates.push((entry_index, update));
            }
        }
    }
    let mut removed = BTreeSet::new();
    for (entry_index, update) in updates {
        match update {
            Update::Removed => {
                removed.insert(entry_index);
            }
            Update::Changed { mode, id } => {
                let entry = &mut state.entries_mut()[entry_index];
                entry.mode = mode;
                entry.id = id;
                // The file exists now: an intent-to-add entry becomes an ordinary one (gix skips those flagged).
                entry.flags.remove(Flags::INTENT_TO_ADD);
            }
        }
    }
    state.remove_entries(|entry_index, _, _| removed.contains(&entry_index));
    if with_unmerged_files {
        for path in unmerged.keys() {
            if let Some((mode, id)) = hash_file(repo, &on_disk(&workdir, path.as_ref())?)? {
                state.dangerously_push_entry(Default::default(), id, Flags::empty(), mode, path.as_ref());
            }
        }
        state.sort_entries();
    }
    Ok(Snapshot { state, unmerged })
}

/// How a tracked entry differs in the work tree.
enum Update {
    Removed,
    Changed { mode: Mode, id: ObjectId },
}

fn update_for(
    workdir: &Path,
    repo: &gix::Repository,
    entry: &gix::index::Entry,
    rela_path: &BStr,
    status: EntryStatus<ObjectId, ObjectId>,
) -> Result<Option<Update>> {
    let on_disk = || hash_file(repo, &on_disk(workdir, rela_path)?);
    Ok(match status {
        EntryStatus::Change(Change::Removed) => Some(Update::Removed),
        EntryStatus::Change(Change::Modification { executable_bit_changed, content_change, .. }) => {
            let mode = match (executable_bit_changed, entry.mode) {
                (true, Mode::FILE) => Mode::FILE_EXECUTABLE,
                (true, Mode::FILE_EXECUTABLE) => Mode::FILE,
                (_, mode) => mode,
            };
            Some(Update::Changed { mode, id: content_change.unwrap_or(entry.id) })
        }
        EntryStatus::Change(Change::SubmoduleModification(head)) => {
            Some(Update::Changed { mode: entry.mode, id: head })
        }
        // A type change or an intent-to-add entry: hash what is on disk now.
        EntryStatus::Change(Change::Type { .. }) | EntryStatus::IntentToAdd => {
            Some(on_disk()?.map_or(Update::Removed, |(mode, id)| Update::Changed { mode, id }))
        }
        EntryStatus::NeedsUpdate(_) | EntryStatus::Conflict { .. } => None,
    })
}

/// The work-tree file of an unmerged `path` as an entry (its mode and the id it would get if
/// added), or `None` when nothing is there. A directory where a side has a submodule is that
/// submodule's checked-out commit (the null id when it is not checked out), as git reads it.
///
/// # Errors
/// [`Error::GitRead`] when the file cannot be read.
pub(crate) fn worktree_file(
    repo: &gix::Repository,
    workdir: &Path,
    path: &BStr,
    stages: &Stages,
) -> Result<Option<Entry>> {
    let on_disk = on_disk(workdir, path)?;
    let entry = |mode, id| Some(Entry { path: path.to_owned(), mode, id });
    if let Some((mode, id)) = hash_file(repo, &on_disk)? {
        return Ok(entry(mode, id));
    }
    let submodule = stages.iter().flatten().any(|(mode, _)| *mode == Mode::COMMIT);
    if submodule && on_disk.is_dir() {
        // A submodule whose git dir lies outside the allowed roots is not opened: read as not checked out.
        let vetted = crate::guard::vet_submodule(&on_disk, None, crate::guard::roots_of(repo).as_deref()).is_ok();
        let head = vetted
            .then(|| gix::open_opts(&on_disk, gix::open::Options::isolated()).ok())
            .flatten()
            .and_then(|submodule| submodule.head_id().ok().map(gix::Id::detach));
        return Ok(entry(Mode::COMMIT, head.unwrap_or_else(|| ObjectId::null(repo.object_hash()))));
    }
    Ok(None)
}

/// Where the repository-relative `path` lies in the work tree.
fn on_disk(workdir: &Path, path: &BStr) -> Result<PathBuf> {
    let relative = gix::path::from_bstr(path).map_err(|err| Error::git("a work-tree path", err))?;
    Ok(workdir.join(relative))
}

/// The mode and blob id a work-tree file would get if added (raw bytes; no filter), or `None` if it
/// is missing or is neither a regular file nor a symbolic link (a FIFO, device or socket: git
/// cannot hash those either and shows the tracked path as gone). The file is opened without
/// blocking and checked on the open descriptor.
fn hash_file(repo: &gix::Repository, path: &Path) -> Result<Option<(Mode, ObjectId)>> {
    let to_err = |err| Error::git_text("a work-tree file", err);
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(to_err(err.to_string())),
    };
    let (mode, bytes) = if metadata.is_symlink() {
        let target = std::fs::read_link(path).map_err(|err| to_err(err.to_string()))?;
        let target = gix::path::into_bstr(target).map_err(|err| to_err(err.to_string()))?.into_owned();
        (Mode::SYMLINK, Vec::from(target))
    } else if metadata.is_file() {
        let bytes = match crate::regular_file::read(path, false, u64::MAX).map_err(|err| to_err(err.to_string()))? {
            Ok(bytes) => bytes,
            // Swapped for something else since the look above.
            Err(_) => return Ok(None),
        };
        (if is_executable(&metadata) { Mode::FILE_EXECUTABLE } else { Mode::FILE }, bytes)
    } else {
        return Ok(None);
    };
    let id = gix::objs::compute_hash(repo.object_hash(), gix::objs::Kind::Blob, &bytes)
        .map_err(|err| to_err(err.to_string()))?;
    Ok(Some((mode, id)))
}

/// Whether a work-tree file is executable as git records it (any execute bit; never off Unix).
#[cfg(unix)]
pub(crate) fn is_executable(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    metadata.permissions().mode() & 0o111 != 0
}

/// Whether a work-tree file is executable as git records it: never off Unix.
#[cfg(not(unix))]
pub(crate) fn is_executable(_metadata: &std::fs::Metadata) -> bool {
    false
}

/// Reports a submodule as changed when its checked-out commit differs from the recorded one, like
/// `git diff` (which shows `Subproject commit <sha>` lines). A submodule that is not checked out is
/// unchanged; modified files inside a submodule are not looked at (git would add `-dirty`). A
/// submodule whose git dir lies outside the allowed roots (or holds a FIFO where gix reads a file)
/// is not opened and reads as unchanged; the work-tree status names it unreadable.
#[derive(Clone)]
struct SubmoduleHead {
    workdir: PathBuf,
    /// The allowed roots the repository was opened under ([`crate::guard::roots_of`]).
    roots: Option<Vec<PathBuf>>,
}

impl traits::SubmoduleStatus for SubmoduleHead {
    type Output = ObjectId;

    fn status(&mut self, entry: &gix::index::Entry, rela_path: &BStr) -> gix::Result<Option<ObjectId>> {
        Ok(checked_out_head(&self.workdir, rela_path, self.roots.as_deref()).filter(|head| *head != entry.id))
    }
}

/// The commit checked out in the submodule at `rela_path` of the work tree `workdir`, read as git
/// reads a gitlink (from its `.git`, without `.gitmodules`); `None` when it is not checked out,
/// cannot be read, or its git dir lies outside `roots` or holds a FIFO where gix reads a file
/// ([`crate::guard::vet_submodule`]; never opened).
pub(crate) fn checked_out_head(workdir: &Path, rela_path: &BStr, roots: Option<&[PathBuf]>) -> Option<ObjectId> {
    let path = on_disk(workdir, rela_path).ok()?;
    if !path.join(".git").exists() || crate::guard::vet_submodule(&path, None, roots).is_err() {
        return None;
    }
    gix::open_opts(&path, gix::open::Options::isolated())
        .ok()
        .and_then(|submodule| submodule.head_id().ok().map(gix::Id::detach))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_filter_matches_whole_components() {
        let filter = PathFilter::new(Some("src/"));
        assert!(filter.matches("src".into()));
        assert!(filter.matches("src/main.c".into()));
        assert!(!filter.matches("srcs/main.c".into()));
        assert!(PathFilter::new(Some(".")).matches("anything".into()));
        assert!(PathFilter::new(None).matches("anything".into()));
    }
}
