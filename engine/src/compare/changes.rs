//! File-level changes between two sides, with git's rename detection.

use gix::ObjectId;
use gix::bstr::BString;
use gix::diff::index::ChangeRef;
use gix::index::entry::Mode;

use super::side::Entry;
use crate::error::{Error, Result};

/// What happened to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Only in the new side.
    Added,
    /// Only in the old side.
    Deleted,
    /// In both, with another id or mode.
    Modified,
    /// Moved from `old.path` to `new.path`.
    Renamed,
    /// Copied from `old.path` (which still exists) to `new.path`.
    Copied,
}

/// One changed file; `old` is `None` for additions, `new` for deletions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) kind: Kind,
    pub(crate) old: Option<Entry>,
    pub(crate) new: Option<Entry>,
}

impl Change {
    /// The path the change is listed under: the new path, or the old one for deletions.
    pub(crate) fn path(&self) -> &BString {
        match (&self.new, &self.old) {
            (Some(entry), _) | (None, Some(entry)) => &entry.path,
            (None, None) => unreachable!("a change has at least one side"),
        }
    }
}

/// Where a diff takes `.gitattributes` files from (the `diff`, `binary` and driver attributes), as
/// git does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attributes {
    /// Two trees (`git show`, `git diff A B`): the work tree's files only; git does not load the
    /// index for them, so neither does this (reading a 100,000-entry index was a third of a
    /// `commit.details`).
    Worktree,
    /// The index or the work tree is a side (`git diff`, `git diff --cached`): the work tree's
    /// files, and the index's copy where the work tree has none.
    WorktreeThenIndex,
}

impl Attributes {
    /// The source for a diff of `old` against `new`.
    pub(crate) fn for_sides(old: super::side::Side, new: super::side::Side) -> Self {
        use super::side::Side;
        if [old, new].iter().any(|side| matches!(side, Side::Index | Side::Worktree)) {
            Self::WorktreeThenIndex
        } else {
            Self::Worktree
        }
    }
}

/// The `.gitattributes` files one diff reads, found once and shared by all of its attribute
/// lookups: rename detection, the binary and driver attributes of each file, its language.
///
/// A repository with a work tree reads the work tree's files, and for
/// [`Attributes::WorktreeThenIndex`] the index's copy where the work tree has none. A bare
/// repository reads its index when it has one, else HEAD's tree (as git does since 2.42); from the
/// tree, only the `.gitattributes` of the directories that hold a compared path are read, since a
/// lookup reads no other directory's, so a small diff of a large tree reads a few trees, not all.
#[derive(Clone)]
pub(crate) struct AttributeFiles {
    stack: gix::worktree::Stack,
}

impl AttributeFiles {
    /// The files for a diff whose sides hold `paths` (all of their paths, changed or not: rename
    /// detection may look at any of them), with `.gitattributes` from `attributes`.
    ///
    /// # Errors
    /// [`Error::GitRead`] when the index, HEAD's trees or the attribute files cannot be read.
    pub(crate) fn new<'a>(
        repo: &gix::Repository,
        attributes: Attributes,
        paths: impl IntoIterator<Item = &'a gix::bstr::BStr>,
    ) -> Result<Self> {
        use gix::worktree::stack::state::attributes::Source;
        let to_err = |err| Error::git("attributes", err);
        let (files, source) = match (repo.workdir(), attributes) {
            (Some(_), Attributes::Worktree) => {
                (gix::index::State::new(repo.object_hash()), Source::WorktreeThenIdMapping)
            }
            (Some(_), Attributes::WorktreeThenIndex) => {
                let index = repo.index_or_load_from_head_or_empty().map_err(to_err)?;
                (attribute_files(&index), Source::WorktreeThenIdMapping)
            }
            (None, _) => match repo.try_index().map_err(to_err)? {
                Some(index) => (attribute_files(&index), Source::IdMapping),
                None => (head_attribute_files(repo, paths)?, Source::IdMapping),
            },
        };
        Self::of(repo, &files, source)
    }

    /// Files for lookups that never happen (a tree diff without rename detection): only the
    /// global ones (`core.attributesFile`, `info/attributes`), none of a tree or the index.
    ///
    /// # Errors
    /// [`Error::GitRead`] when a global attribute file cannot be read.
    pub(crate) fn none(repo: &gix::Repository) -> Result<Self> {
        use gix::worktree::stack::state::attributes::Source;
        let source = if repo.workdir().is_some() { Source::WorktreeThenIdMapping } else { Source::IdMapping };
        Self::of(repo, &gix::index::State::new(repo.object_hash()), source)
    }

    fn of(
        repo: &gix::Repository,
        files: &gix::index::State,
        source: gix::worktree::stack::state::attributes::Source,
    ) -> Result<Self> {
        let stack = repo.attributes_only(files, source).map_err(|err| Error::git("attributes", err))?.detach();
        Ok(Self { stack })
    }

    /// gix's blob-diff platform for `repo` (filters as `Mode::ToGit`) with these attributes.
    ///
    /// # Errors
    /// [`Error::GitRead`] when the diff configuration cannot be read.
    pub(crate) fn resource_cache(
        &self,
        repo: &gix::Repository,
        roots: gix::diff::blob::pipeline::WorktreeRoots,
    ) -> Result<gix::diff::blob::Platform> {
        let mode = gix::diff::blob::pipeline::Mode::ToGit;
        gix::diff::resource_cache(repo, mode, self.stack.clone(), roots)
            .map_err(|err| Error::git("diff configuration", err))
    }

    /// An attribute stack for `names`, and an outcome to match them into.
    pub(crate) fn stack<'repo>(
        &self,
        repo: &'repo gix::Repository,
        names: &[&str],
    ) -> (gix::AttributeStack<'repo>, gix::attrs::search::Outcome) {
        let stack = gix::AttributeStack::new(self.stack.clone(), repo);
        let outcome = stack.selected_attribute_matches(names.iter().copied());
        (stack, outcome)
    }
}

/// The `.gitattributes` files (in any letter case, as [`attribute_files`]) of HEAD's tree in the
/// directories that hold `paths` and their parents, as an index state; empty for an unborn HEAD.
fn head_attribute_files<'a>(
    repo: &gix::Repository,
    paths: impl IntoIterator<Item = &'a gix::bstr::BStr>,
) -> Result<gix::index::State> {
    use gix::bstr::ByteSlice as _;
    let to_err = |err| Error::git("HEAD's tree", err);
    let mut files = gix::index::State::new(repo.object_hash());
    let root = repo.head_tree_id_or_empty().map_err(|err| Error::git("HEAD", err))?.detach();
    if root.is_empty_tree() {
        return Ok(files);
    }
    // Every directory of every path, with its parents ("" is the root): a directory is added with
    // all of its parents, so the walk up stops at the first one already there.
    let mut dirs = std::collections::BTreeSet::from([BString::default()]);
    for path in paths {
        let mut dir = path.as_bytes();
        while let Some(slash) = dir.rfind_byte(b'/') {
            dir = &dir[..slash];
            if !dirs.insert(dir.into()) {
                break;
            }
        }
    }
    // In path order a directory comes after its parent, whose tree named its id.
    let mut trees = std::collections::HashMap::from([(BString::default(), root)]);
    for dir in &dirs {
        let Some(id) = trees.get(dir).copied() else { continue };
        let tree = repo.find_tree(id).map_err(to_err)?;
        for entry in tree.iter() {
            let entry = entry.map_err(to_err)?;
            let mut path = dir.clone();
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(entry.filename());
            if entry.mode().is_tree() {
                if dirs.contains(&path) {
                    trees.insert(path, entry.oid().to_owned());
                }
            } else if entry.mode().is_blob() && entry.filename().eq_ignore_ascii_case(b".gitattributes") {
                files.dangerously_push_entry(
                    gix::index::entry::Stat::default(),
                    entry.oid().to_owned(),
                    gix::index::entry::Flags::empty(),
                    Mode::FILE,
                    path.as_ref(),
                );
            }
        }
    }
    files.sort_entries();
    Ok(files)
}

/// The entries of `index` named `.gitattributes` (in any letter case), the only ones gix's
/// attribute stack takes from an index (`id_mappings_from_index`, which also checks their mode,
/// stage and the configured case): it copies every path of the index it is given, a 100,000-entry
/// index once per diff of a `worktree.changes`.
pub(crate) fn attribute_files(index: &gix::index::State) -> gix::index::State {
    use gix::bstr::ByteSlice as _;
    let mut files = gix::index::State::new(index.object_hash());
    for entry in index.entries() {
        let path = entry.path(index);
        let name = path.rfind_byte(b'/').map_or(path.as_bytes(), |slash| &path[slash + 1..]);
        if name.eq_ignore_ascii_case(b".gitattributes") {
            files.dangerously_push_entry(entry.stat, entry.id, entry.flags, entry.mode, path);
        }
    }
    files
}

/// Compares `old` with `new` (index states), detecting renames (and copies) as `rewrites` says, and
/// returns the changes sorted by path. `new_root` is the work tree when `new` is the work tree:
/// rename similarity then reads the new side's files from disk; `attribute_files` are the
/// `.gitattributes` it reads.
///
/// # Errors
/// [`Error::GitRead`] when an object cannot be read.
pub(crate) fn compare(
    repo: &gix::Repository,
    old: &gix::index::State,
    new: &gix::index::State,
    new_root: Option<std::path::PathBuf>,
    attribute_files: &AttributeFiles,
    rewrites: Option<gix::diff::Rewrites>,
) -> Result<Vec<Change>> {
    let to_err = |err| Error::git("a diff", err);
    let pre_images =
        PreImages::of(repo, old, new, new_root.is_some() && rewrites.as_ref().is_some_and(|r| r.copies.is_some()));
    let roots = gix::diff::blob::pipeline::WorktreeRoots { old_root: None, new_root };
    let mut cache = attribute_files.resource_cache(repo, roots)?;
    let empty = gix::index::State::new(repo.object_hash());
    // No pattern matches every path: with `true`, gix would keep only the paths under the process's
    // current directory when that lies inside the work tree (a server started in a subfolder).
    let (mut search, _) = repo
        .pathspec(false, None::<&str>, false, &empty, gix::worktree::stack::state::attributes::Source::IdMapping)
        .map_err(to_err)?
        .into_parts();
    let mut out = Vec::new();
    gix::diff::index(
        old,
        new,
        |change| {
            let mut change = convert(change);
            // A copy's source as git shows it: its old content (see `PreImages`).
            if let (Kind::Copied, Some(old)) = (change.kind, change.old.as_mut())
                && let Some(before) = pre_images.old_of.get(&old.id)
            {
                old.id = *before;
            }
            out.push(change);
            Ok(std::ops::ControlFlow::Continue(()))
        },
        rewrites.map(|rewrites| gix::diff::index::RewriteOptions {
            resource_cache: &mut cache,
            find: &pre_images,
            rewrites,
        }),
        &mut search,
        &mut |_, _, _, _| false,
    )
    .map_err(to_err)?;
    modified_copy_sources(old, new, &mut out);
    out.sort_by(|a, b| {
        a.path().cmp(b.path()).then_with(|| a.old.as_ref().map(|e| &e.path).cmp(&b.old.as_ref().map(|e| &e.path)))
    });
    Ok(out)
}

/// Adds the modification of each copy source that changed between `old` and `new` and is not listed
/// yet: gix's copy detection takes a modified file as a copy's source and leaves its own
/// modification out, where git lists both (`C100 a b` and `M a` for a file copied and then edited).
fn modified_copy_sources(old: &gix::index::State, new: &gix::index::State, out: &mut Vec<Change>) {
    use gix::bstr::ByteSlice as _;
    let listed: std::collections::HashSet<BString> = out
        .iter()
        .filter(|change| change.kind != Kind::Copied)
        .filter_map(|change| change.new.as_ref().map(|entry| entry.path.clone()))
        .collect();
    let sources: std::collections::BTreeSet<BString> = out
        .iter()
        .filter(|change| change.kind == Kind::Copied)
        .filter_map(|change| change.old.as_ref().map(|entry| entry.path.clone()))
        .filter(|path| !listed.contains(path))
        .collect();
    for path in sources {
        let (Some(before), Some(after)) = (old.entry_by_path(path.as_bstr()), new.entry_by_path(path.as_bstr())) else {
            continue;
        };
        if before.id != after.id || before.mode != after.mode {
            out.push(Change {
                kind: Kind::Modified,
                old: Some(Entry { path: path.clone(), mode: before.mode, id: before.id }),
                new: Some(Entry { path, mode: after.mode, id: after.id }),
            });
        }
    }
}

/// Rename detection as the repository configures `diff.renames` (git's default: renames at 50%
/// similarity).
pub(crate) fn configured_rewrites(repo: &gix::Repository) -> Result<Option<gix::diff::Rewrites>> {
    let config = repo.config_snapshot();
    let (rewrites, configured) =
        gix::diff::new_rewrites(config.plumbing(), true).map_err(|err| Error::git("diff configuration", err))?;
    Ok(if configured { rewrites } else { Some(gix::diff::Rewrites::default()) })
}

fn convert(change: ChangeRef<'_, '_>) -> Change {
    let entry =
        |path: &gix::bstr::BStr, mode: Mode, id: &gix::oid| Entry { path: path.to_owned(), mode, id: id.to_owned() };
    match change {
        ChangeRef::Addition { location, entry_mode, id, .. } => {
            Change { kind: Kind::Added, old: None, new: Some(entry(&location, entry_mode, &id)) }
        }
        ChangeRef::Deletion { location, entry_mode, id, .. } => {
            Change { kind: Kind::Deleted, old: Some(entry(&location, entry_mode, &id)), new: None }
        }
        ChangeRef::Modification { location, previous_entry_mode, previous_id, entry_mode, id, .. } => Change {
            kind: Kind::Modified,
            old: Some(entry(&location, previous_entry_mode, &previous_id)),
            new: Some(entry(&location, entry_mode, &id)),
        },
        ChangeRef::Rewrite {
            source_location, source_entry_mode, source_id, location, entry_mode, id, copy, ..
        } => Change {
            kind: if copy { Kind::Copied } else { Kind::Renamed },
            old: Some(entry(&source_location, source_entry_mode, &source_id)),
            new: Some(entry(&location, entry_mode, &id)),
        },
    }
}

/// The objects a diff's rename and copy detection reads, with one difference from the repository's:
/// a copy source that is modified in the work tree is read as its old side's blob. gix takes a
/// modified file's new id as the source of a copy; on the work tree that id was hashed from the
/// file and is in no object store (the diff failed), and git takes the source's old content anyway
/// (`git diff -C HEAD` finds `C100` for a file copied and then edited). Only built for the work
/// tree with copies detected; otherwise it is the repository as it is.
struct PreImages<'repo> {
    repo: &'repo gix::Repository,
    old_of: std::collections::HashMap<ObjectId, ObjectId>,
}

impl<'repo> PreImages<'repo> {
    fn of(repo: &'repo gix::Repository, old: &gix::index::State, new: &gix::index::State, wanted: bool) -> Self {
        let mut old_of = std::collections::HashMap::new();
        if wanted {
            for entry in new.entries() {
                if let Some(before) = old.entry_by_path(entry.path(new))
                    && before.id != entry.id
                {
                    old_of.insert(entry.id, before.id);
                }
            }
        }
        Self { repo, old_of }
    }
}

impl gix::objs::Find for PreImages<'_> {
    fn try_find<'a>(&self, id: &gix::oid, buffer: &'a mut Vec<u8>) -> gix::Result<Option<gix::objs::Data<'a>>> {
        let id = self.old_of.get(id).map_or(id, |before| before.as_ref());
        gix::objs::Find::try_find(self.repo, id, buffer)
    }
}

impl gix::objs::FindHeader for PreImages<'_> {
    fn try_header(&self, id: &gix::oid) -> gix::Result<Option<gix::objs::Header>> {
        let id = self.old_of.get(id).map_or(id, |before| before.as_ref());
        gix::objs::FindHeader::try_header(self.repo, id)
    }
}
