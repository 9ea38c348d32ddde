//! Sides read only where they can differ, so that a diff of a large tree costs what changed, not
//! the tree's size.
//!
//! - Two trees: a tree diff without rename tracking walks only the subtrees whose ids differ; its
//!   file-level changes give the entries of each side.
//! - A tree and the index: the index's cache tree (its `TREE` extension) records, for each
//!   directory it still vouches for, the id of the tree its entries make; a directory whose
//!   recorded id equals the tree's and whose entry count matches is skipped on both sides, as
//!   `git status` and `git diff --cached` skip it.
//!
//! Comparing the pruned sides gives the same changes as comparing the whole ones: a skipped
//! directory holds the same files with the same ids and modes on both sides, so none of its files
//! is added, deleted or modified, and none can be the source or the destination of a rename. Only
//! copy detection that takes *unmodified* files as sources (`FromSetOfModifiedFilesAndAllSources`)
//! needs them: then nothing is pruned ([`allowed`]).

use gix::ObjectId;
use gix::bstr::{BStr, BString, ByteSlice, ByteVec};
use gix::index::entry::{Flags, Mode, Stat};
use gix::objs::tree::EntryKind;

use crate::compare::side::PathFilter;
use crate::error::{Error, Result};

/// Whether pruning keeps the answer of a diff tracking `rewrites` (see the module documentation).
pub(crate) fn allowed(rewrites: Option<&gix::diff::Rewrites>) -> bool {
    !rewrites
        .and_then(|rewrites| rewrites.copies.as_ref())
        .is_some_and(|copies| copies.source == gix::diff::rewrites::CopySource::FromSetOfModifiedFilesAndAllSources)
}

/// The index mode of a tree entry that is not a tree.
fn index_mode(mode: gix::objs::tree::EntryMode) -> Option<Mode> {
    match mode.kind() {
        EntryKind::Tree => None,
        EntryKind::Blob => Some(Mode::FILE),
        EntryKind::BlobExecutable => Some(Mode::FILE_EXECUTABLE),
        EntryKind::Link => Some(Mode::SYMLINK),
        EntryKind::Commit => Some(Mode::COMMIT),
    }
}

fn push(state: &mut gix::index::State, path: &BStr, mode: gix::objs::tree::EntryMode, id: ObjectId) {
    if let Some(mode) = index_mode(mode) {
        state.dangerously_push_entry(Stat::default(), id, Flags::empty(), mode, path);
    }
}

/// The files that differ between the trees `old` and `new` (`None`: the empty tree), within
/// `filter`, as one index state per side (sorted like an index).
///
/// # Errors
/// [`Error::GitRead`] when a tree cannot be read.
pub(crate) fn trees(
    repo: &gix::Repository,
    old: Option<ObjectId>,
    new: Option<ObjectId>,
    filter: &PathFilter,
) -> Result<(gix::index::State, gix::index::State)> {
    use gix::object::tree::diff::ChangeDetached as Change;
    let to_err = |err| Error::git("a tree", err);
    let tree = |id: Option<ObjectId>| match id {
        Some(id) => repo.find_tree(id).map_err(to_err),
        None => Ok(repo.empty_tree()),
    };
    let (old_tree, new_tree) = (tree(old)?, tree(new)?);
    // What `Repository::diff_tree_to_tree` does, with a blob-diff platform that does not load the index for its
    // attributes (unused without rename tracking, and a third of a `commit.details` on a 100,000-entry index).
    let mut resource_cache = super::changes::AttributeFiles::none(repo)?
        .resource_cache(repo, gix::diff::blob::pipeline::WorktreeRoots::default())?;
    let kind = repo.object_hash();
    let mut changes = Vec::new();
    gix::diff::tree_with_rewrites(
        gix::objs::TreeRefIter::from_bytes(&old_tree.data, kind),
        gix::objs::TreeRefIter::from_bytes(&new_tree.data, kind),
        &mut resource_cache,
        &mut gix::diff::tree::State::default(),
        &repo.objects,
        |change| {
            changes.push(change.into_owned());
            Ok(std::ops::ControlFlow::Continue(()))
        },
        gix::diff::Options::default().with_rewrites(None).into(),
    )
    .map_err(|err| Error::git("a tree diff", err))?;
    let mut old_state = gix::index::State::new(repo.object_hash());
    let mut new_state = gix::index::State::new(repo.object_hash());
    for change in changes {
        match change {
            Change::Addition { location, entry_mode, id, .. } => {
                if filter.matches(location.as_ref()) {
                    push(&mut new_state, location.as_ref(), entry_mode, id);
                }
            }
            Change::Deletion { location, entry_mode, id, .. } => {
                if filter.matches(location.as_ref()) {
                    push(&mut old_state, location.as_ref(), entry_mode, id);
                }
            }
            Change::Modification { location, previous_entry_mode, previous_id, entry_mode, id } => {
                if filter.matches(location.as_ref()) {
                    push(&mut old_state, location.as_ref(), previous_entry_mode, previous_id);
                    push(&mut new_state, location.as_ref(), entry_mode, id);
                }
            }
            Change::Rewrite { source_location, source_entry_mode, source_id, location, entry_mode, id, .. } => {
                // Not produced without rename tracking; kept complete all the same.
                if filter.matches(source_location.as_ref()) {
                    push(&mut old_state, source_location.as_ref(), source_entry_mode, source_id);
                }
                if filter.matches(location.as_ref()) {
                    push(&mut new_state, location.as_ref(), entry_mode, id);
                }
            }
        }
    }
    old_state.sort_entries();
    new_state.sort_entries();
    Ok((old_state, new_state))
}

/// The tree `tree` and the index `index`, without the directories the index's cache tree proves
/// equal: the tree's remaining files as an index state, and a copy of `index` without the skipped
/// directories' entries. `None` when the index has no cache tree or is sparse (nothing can be
/// skipped: read the whole sides).
///
/// # Errors
/// [`Error::GitRead`] when a tree cannot be read.
pub(crate) fn tree_and_index(
    repo: &gix::Repository,
    tree: ObjectId,
    index: &gix::index::State,
) -> Result<Option<(gix::index::State, gix::index::State)>> {
    let Some(cache) = index.tree() else { return Ok(None) };
    if index.is_sparse() {
        return Ok(None);
    }
    let mut walk = Walk { repo, index, tree_side: gix::index::State::new(repo.object_hash()), skipped: Vec::new() };
    let mut path = BString::default();
    if vouches(index, cache, tree, path.as_ref()) {
        walk.skipped.push(0..index.entries().len());
    } else {
        walk.tree(tree, Some(cache), &mut path)?;
    }
    let Walk { mut tree_side, mut skipped, .. } = walk;
    tree_side.sort_entries();
    skipped.sort_by_key(|range| range.start);
    let mut index_side = gix::index::State::new(repo.object_hash());
    let mut ranges = skipped.iter().peekable();
    for (at, entry) in index.entries().iter().enumerate() {
        while ranges.peek().is_some_and(|range| range.end <= at) {
            ranges.next();
        }
        if ranges.peek().is_some_and(|range| range.contains(&at)) {
            continue;
        }
        index_side.dangerously_push_entry(entry.stat, entry.id, entry.flags, entry.mode, entry.path(index));
    }
    Ok(Some((tree_side, index_side)))
}

/// Whether the cache-tree node `node` vouches that the index entries under `path` (a directory,
/// empty for the root) make exactly the tree `id`: the node is valid, records `id`, and counts as
/// many entries as the index holds there, all of them plain (no conflict stage, no intent-to-add,
/// no sparse or skip-worktree entry).
fn vouches(index: &gix::index::State, node: &gix::index::extension::Tree, id: ObjectId, path: &BStr) -> bool {
    let Some(count) = node.num_entries else { return false };
    if node.id != id {
        return false;
    }
    let range = if path.is_empty() {
        Some(0..index.entries().len())
    } else {
        let mut prefix = path.to_owned();
        prefix.push(b'/');
        index.prefixed_entries_range(prefix.as_ref())
    };
    let Some(range) = range else { return false };
    let entries = &index.entries()[range];
    usize::try_from(count).is_ok_and(|count| count == entries.len())
        && entries.iter().all(|entry| {
            entry.stage_raw() == 0
                && !entry.flags.intersects(Flags::INTENT_TO_ADD | Flags::SKIP_WORKTREE)
                && !entry.mode.is_sparse()
        })
}

struct Walk<'a> {
    repo: &'a gix::Repository,
    index: &'a gix::index::State,
    tree_side: gix::index::State,
    /// Ranges of index entries in skipped directories.
    skipped: Vec<std::ops::Range<usize>>,
}

impl Walk<'_> {
    /// Adds the files of the tree `id` at `path` to the tree side, skipping each subdirectory the
    /// cache tree `node` vouches for.
    fn tree(&mut self, id: ObjectId, node: Option<&gix::index::extension::Tree>, path: &mut BString) -> Result<()> {
        let to_err = |err| Error::git("a tree", err);
        let tree = self.repo.find_tree(id).map_err(to_err)?;
        let entries: Vec<gix::objs::tree::Entry> =
            tree.decode().map_err(to_err)?.entries.iter().map(|entry| (*entry).into()).collect();
        for entry in entries {
            let len = path.len();
            if !path.is_empty() {
                path.push(b'/');
            }
            path.push_str(&entry.filename);
            if entry.mode.is_tree() {
                let child = node.and_then(|node| node.children.iter().find(|child| *child.name == *entry.filename));
                match child {
                    Some(child) if vouches(self.index, child, entry.oid, path.as_ref()) => {
                        let mut prefix = path.clone();
                        prefix.push(b'/');
                        if let Some(range) = self.index.prefixed_entries_range(prefix.as_ref()) {
                            self.skipped.push(range);
                        }
                    }
                    _ => self.tree(entry.oid, child, path)?,
                }
            } else {
                push(&mut self.tree_side, path.as_bstr(), entry.mode, entry.oid);
            }
            path.truncate(len);
        }
        Ok(())
    }
}
