//! Reading a repository for the index: its tips, what changed since the indexed tips, and one
//! document per commit.

use std::collections::BTreeSet;

use gix::ObjectId;
use gix::bstr::ByteSlice;
use tantivy::{IndexWriter, TantivyDocument, Term};

use super::Tips;
use super::schema::Fields;
use crate::ancestry::Shallow;
use crate::error::{Error, Result};
use crate::facets::utf8;

/// What to change in an index to move it from one set of tips to another.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Commits reachable from the new tips and not from the old ones.
    pub(crate) added: Vec<ObjectId>,
    /// Commits reachable from the old tips and from none of the new ones.
    pub(crate) dropped: Vec<ObjectId>,
    /// Delete every document first (the plan was made from no tips because the old ones cannot be
    /// walked).
    pub(crate) reset: bool,
}

/// The tips the index covers: `HEAD` (when born) and every local branch, peeled to their objects.
///
/// # Errors
/// [`Error::GitRead`] when the refs cannot be listed.
pub(crate) fn read_tips(repo: &gix::Repository) -> Result<Tips> {
    let mut tips = Tips::new();
    if let Ok(head) = repo.head_id() {
        tips.insert("HEAD".to_owned(), head.detach());
    }
    let references = repo.references().map_err(|err| Error::git("refs", err))?;
    for reference in references.local_branches().map_err(|err| Error::git("refs", err))? {
        let Ok(mut reference) = reference else { continue };
        let name = reference.name().as_bstr().to_string();
        if let Ok(id) = crate::facets::refs::peel_to_id(&mut reference) {
            tips.insert(name, id);
        }
    }
    Ok(tips)
}

/// The commits to add and drop to move from `old` to `new` tips: `git rev-list new --not old` and
/// the other way round, from one walk of both sides that is exact whatever the commit dates
/// ([`crate::ancestry::reach`]; gix's hidden-tip walk stops on dates and, under a skewed clock,
/// lists commits the hidden side has). Without old tips, every commit below the new ones, read
/// without numbering them.
///
/// # Errors
/// [`Error::GitRead`] when a tip is not a commit of the repository (e.g. an old tip was garbage
/// collected) or a commit cannot be read.
pub(crate) fn plan(repo: &gix::Repository, old: &Tips, new: &Tips) -> Result<Plan> {
    let old: BTreeSet<ObjectId> = old.values().copied().collect();
    let new: BTreeSet<ObjectId> = new.values().copied().collect();
    for id in old.iter().chain(&new) {
        let header = repo.find_header(*id).map_err(|err| Error::git("index tip", err))?;
        if header.kind() != gix::object::Kind::Commit {
            return Err(Error::git_text("index tip", format!("{id} is a {}, not a commit", header.kind())));
        }
    }
    if old.is_empty() || new.is_empty() {
        let (added, dropped) =
            if old.is_empty() { (reachable(repo, &new)?, Vec::new()) } else { (Vec::new(), reachable(repo, &old)?) };
        return Ok(Plan { added, dropped, reset: false });
    }
    const NEW: usize = 0;
    const OLD: usize = 1;
    let tips: Vec<(ObjectId, usize)> = new.iter().map(|id| (*id, NEW)).chain(old.iter().map(|id| (*id, OLD))).collect();
    let reach = crate::ancestry::reach::Reach::walk(repo, &tips, 2)?;
    Ok(Plan { added: reach.exclusive(NEW, &[OLD]), dropped: reach.exclusive(OLD, &[NEW]), reset: false })
}

/// Every commit reachable from `tips` (`git rev-list tips`), the shallow boundary cutting the walk
/// as git's does.
fn reachable(repo: &gix::Repository, tips: &BTreeSet<ObjectId>) -> Result<Vec<ObjectId>> {
    let shallow = Shallow::read(repo)?;
    let tips: Vec<ObjectId> = tips.iter().copied().collect();
    if shallow.is_shallow() {
        return Ok(shallow.ancestors(repo, &tips)?.into_iter().collect());
    }
    let walk = repo.rev_walk(tips).all().map_err(|err| Error::git("commit graph", err))?;
    let mut ids = Vec::new();
    for info in walk {
        ids.push(info.map_err(|err| Error::git("commit graph", err))?.id);
    }
    Ok(ids)
}

/// Adds a document for every added commit and deletes every dropped one.
///
/// # Errors
/// [`Error::GitRead`] when a commit or tree cannot be read, or tantivy refuses a document.
pub(crate) fn write(repo: &gix::Repository, writer: &IndexWriter, fields: Fields, plan: &Plan) -> Result<()> {
    for id in &plan.dropped {
        writer.delete_term(Term::from_field_text(fields.sha, &id.to_string()));
    }
    // The walk lists a commit before its parents, and a commit's tree (and the subtrees a diff opens) is the old
    // side of its child's diff and the new side of its own: remembered, each is inflated once, not twice.
    let mut cached = repo.clone();
    cached.object_cache_size(OBJECT_CACHE_BYTES);
    let repo = &cached;
    let shallow = Shallow::read(repo)?;
    let mut touched = Touched::default();
    for id in &plan.added {
        let commit = repo.find_commit(*id).map_err(|err| Error::git("commit", err))?;
        let author = commit.author().map_err(|err| Error::git("commit author", err))?;
        let time = commit.time().map_err(|err| Error::git("commit date", err))?;
        let mut document = TantivyDocument::default();
        document.add_text(fields.sha, id.to_string());
        document.add_i64(fields.time, time.seconds);
        let message = utf8(commit.message_raw_sloppy());
        document.add_text(fields.words, &message);
        document.add_text(fields.message, message);
        document.add_text(fields.identity, super::schema::identity(&utf8(author.name), &utf8(author.email)));
        document.add_u64(fields.key, super::schema::key(id));
        let tree = commit.tree_id().map_err(|err| Error::git("commit tree", err))?.detach();
        for prefix in touched.prefixes(repo, tree, &shallow.parents(&commit))? {
            document.add_text(fields.paths, prefix);
        }
        writer.add_document(document).map_err(|err| Error::git("the commit index", err))?;
    }
    Ok(())
}

/// The memory of objects read while writing documents, in bytes.
const OBJECT_CACHE_BYTES: usize = 64 * 1024 * 1024;

/// The deepest path prefix recorded for a commit, in path components: a change deeper down (a tree
/// 10,000 directories deep) is recorded by its prefix of this depth, so the work per commit stays
/// bounded. A `path` search deeper than this is refused (`invalid_path`).
pub const MAX_PATH_DEPTH: usize = 256;

/// Computes the path prefixes a commit touched, reusing the tree-diff buffers across commits.
#[derive(Default)]
pub(crate) struct Touched {
    state: gix::diff::tree::State,
    interrupt: Option<crate::interrupt::Interrupt>,
}

impl Touched {
    /// A computation that stops with [`Error::Cancelled`] once `interrupt` is triggered, also
    /// within one commit's tree diff.
    pub(crate) fn interruptible(interrupt: &crate::interrupt::Interrupt) -> Self {
        Self { interrupt: Some(interrupt.clone()), ..Self::default() }
    }

    /// Every prefix (`a`, `a/b`, `a/b/c.rs`) of a path that differs from every parent (the empty
    /// tree for a root commit or a shallow boundary): the paths for which `git log -- <path>` shows
    /// the commit under git's default history simplification, as far as the commit itself decides
    /// it. Prefixes stop at [`MAX_PATH_DEPTH`] components.
    ///
    /// # Errors
    /// [`Error::GitRead`] when a tree cannot be read; [`Error::Cancelled`] once the interrupt is
    /// triggered.
    pub(crate) fn prefixes(
        &mut self,
        repo: &gix::Repository,
        tree: ObjectId,
        parents: &[ObjectId],
    ) -> Result<BTreeSet<String>> {
        let new = repo.find_tree(tree).map_err(|err| Error::git("commit tree", err))?;
        if parents.is_empty() {
            return self.changed(repo, &[], &new.data);
        }
        let mut parent_trees = Vec::with_capacity(parents.len());
        for parent in parents {
            let parent_tree = repo
                .find_commit(*parent)
                .map_err(|err| Error::git("commit", err))?
                .tree_id()
                .map_err(|err| Error::git("commit tree", err))?
                .detach();
            if parent_tree == tree {
                return Ok(BTreeSet::new());
            }
            parent_trees.push(parent_tree);
        }
        let old = repo.find_tree(parent_trees[0]).map_err(|err| Error::git("commit tree", err))?;
        let mut common = self.changed(repo, &old.data, &new.data)?;
        // A merge: a prefix counts when it differs from every parent. The first parent's diff found the
        // candidates (a merge differs little from its first parent); each other parent is asked only about them,
        // by comparing the entries at each candidate path, instead of a diff that would open every tree where
        // the branches differ.
        for parent_tree in &parent_trees[1..] {
            if common.is_empty() {
                break;
            }
            let other = repo.find_tree(*parent_tree).map_err(|err| Error::git("commit tree", err))?;
            let mut kept = BTreeSet::new();
            for prefix in common {
                if self.interrupt.as_ref().is_some_and(crate::interrupt::Interrupt::is_triggered) {
                    return Err(Error::Cancelled);
                }
                // A prefix cut at [`MAX_PATH_DEPTH`] is still a path of the tree; one made lossy (not UTF-8)
                // cannot be looked up and is kept.
                if prefix.contains(char::REPLACEMENT_CHARACTER)
                    || entry_at(&new, &prefix)? != entry_at(&other, &prefix)?
                {
                    kept.insert(prefix);
                }
            }
            common = kept;
        }
        Ok(common)
    }

    fn changed(&mut self, repo: &gix::Repository, old: &[u8], new: &[u8]) -> Result<BTreeSet<String>> {
        let kind = repo.object_hash();
        let mut visitor = Prefixes { interrupt: self.interrupt.clone(), ..Prefixes::default() };
        let diffed = gix::diff::tree(
            gix::objs::TreeRefIter::from_bytes(old, kind),
            gix::objs::TreeRefIter::from_bytes(new, kind),
            &mut self.state,
            &repo.objects,
            &mut visitor,
        );
        if visitor.interrupt.as_ref().is_some_and(crate::interrupt::Interrupt::is_triggered) {
            return Err(Error::Cancelled);
        }
        diffed.map_err(|err| Error::git("tree diff", err))?;
        Ok(visitor.prefixes)
    }
}

/// The mode and id of the entry at the repository-relative `path` of `tree`; `None` when the tree
/// has no such entry.
///
/// # Errors
/// [`Error::GitRead`] when a tree on the way cannot be read.
fn entry_at(tree: &gix::Tree<'_>, path: &str) -> Result<Option<(gix::objs::tree::EntryMode, ObjectId)>> {
    Ok(tree
        .lookup_entry_by_path(path)
        .map_err(|err| Error::git("tree entry", err))?
        .map(|entry| (entry.mode(), entry.object_id())))
}

/// A tree-diff visitor that records the prefixes of every changed path down to [`MAX_PATH_DEPTH`]
/// components. The path it tracks never grows deeper than that: below, only the depth is counted.
#[derive(Default)]
struct Prefixes {
    /// The current path, cut at [`MAX_PATH_DEPTH`] components, and its depth in components (which
    /// may be more).
    path: (gix::bstr::BString, usize),
    /// The paths of the trees queued for later, as `path`.
    queued: std::collections::VecDeque<(gix::bstr::BString, usize)>,
    prefixes: BTreeSet<String>,
    interrupt: Option<crate::interrupt::Interrupt>,
}

impl Prefixes {
    fn push(&mut self, component: &gix::bstr::BStr) {
        let (path, depth) = &mut self.path;
        if *depth < MAX_PATH_DEPTH {
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(component);
        }
        *depth += 1;
    }
}

impl gix::diff::tree::Visit for Prefixes {
    fn pop_front_tracked_path_and_set_current(&mut self) {
        self.path = self.queued.pop_front().expect("every queued tree was tracked");
    }

    fn push_back_tracked_path_component(&mut self, component: &gix::bstr::BStr) {
        self.push(component);
        self.queued.push_back(self.path.clone());
    }

    fn push_path_component(&mut self, component: &gix::bstr::BStr) {
        self.push(component);
    }

    fn pop_path_component(&mut self) {
        let (path, depth) = &mut self.path;
        if *depth <= MAX_PATH_DEPTH {
            let cut = path.rfind_byte(b'/').unwrap_or(0);
            path.truncate(cut);
        }
        *depth = depth.saturating_sub(1);
    }

    fn visit(&mut self, _change: gix::diff::tree::visit::Change) -> gix::diff::tree::visit::Action {
        if self.interrupt.as_ref().is_some_and(crate::interrupt::Interrupt::is_triggered) {
            return std::ops::ControlFlow::Break(());
        }
        let path = self.path.0.to_str_lossy();
        // Longest first: once a prefix is known, so are all shorter ones (each path adds all of its own).
        if self.prefixes.insert(path.to_string()) {
            for (index, byte) in path.bytes().enumerate().rev() {
                if byte == b'/' && !self.prefixes.insert(path[..index].to_owned()) {
                    break;
                }
            }
        }
        std::ops::ControlFlow::Continue(())
    }
}
