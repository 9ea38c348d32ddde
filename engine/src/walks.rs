//! Kept walks: a history walk ([`Walk`]: git's order and path simplification) is kept after the
//! call that made it, with every commit it showed, so that a later call over the same tips and path
//! continues it instead of walking again from the tip. `repo.history`'s page N then costs O(limit)
//! (the walk is already at page N-1's end), and `repo.scope`'s recent commits and churn of an
//! unchanged HEAD are read from memory.
//!
//! Exactness: a walk depends only on its tips, its path and the shallow boundary (commits never
//! change), which make its key; what it shows is what a fresh walk shows, because it *is* that
//! walk, continued. A churn window `--since=<t>` is answered from the walk without `since`: git's
//! streaming walk stops showing at the first commit it takes that is older than `t` (every commit
//! still queued is older still), so the window is the commits the full walk shows before that point
//! (see [`Walk::since`]). A walk that failed (a read error, a cancelled call) is dropped, never
//! continued.
//!
//! Bounds: at most [`MAX_KEPT`] walks and [`MAX_WEIGHT`] commits held in memory over all of them;
//! the least recently used go first.

use std::collections::{BinaryHeap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use gix::ObjectId;
use gix::bstr::BString;

use crate::ancestry::Shallow;
use crate::error::{Error, Result};
use crate::interrupt::Interrupt;

/// Walks kept at most.
pub(crate) const MAX_KEPT: usize = 16;

/// Commits (walked, path entries, shown) held at most over every kept walk: about 100 bytes each.
pub(crate) const MAX_WEIGHT: usize = 2_000_000;

/// What a walk is of: the repository, its tips (a range's other tip and hidden commits), the path
/// and the shallow boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key {
    pub(crate) common_dir: PathBuf,
    pub(crate) tip: ObjectId,
    pub(crate) also: Vec<ObjectId>,
    pub(crate) hidden: Vec<ObjectId>,
    /// Without a trailing slash; empty for no path.
    pub(crate) path: String,
    pub(crate) boundary: Vec<ObjectId>,
}

impl Key {
    /// The key of a walk of `repo` from `tip` (and `also`, hiding `hidden`) over `path`.
    ///
    /// # Errors
    /// [`Error::GitRead`] when the shallow boundary cannot be read.
    pub(crate) fn new(
        repo: &gix::Repository,
        common_dir: &Path,
        (tip, also, hidden): (ObjectId, &[ObjectId], &[ObjectId]),
        path: Option<&str>,
    ) -> Result<Self> {
        let boundary = crate::ancestry::Shallow::read(repo)?.boundary().to_vec();
        Ok(Self { also: also.to_vec(), hidden: hidden.to_vec(), ..Self::from_tip(common_dir, tip, path, boundary) })
    }

    /// [`Key::new`] of a walk from `tip` alone, with the shallow `boundary` already read (sorted,
    /// as [`crate::ancestry::Shallow::boundary`] gives it).
    pub(crate) fn from_tip(common_dir: &Path, tip: ObjectId, path: Option<&str>, boundary: Vec<ObjectId>) -> Self {
        Self {
            common_dir: common_dir.to_path_buf(),
            tip,
            also: Vec::new(),
            hidden: Vec::new(),
            path: path.unwrap_or_default().trim_end_matches('/').to_owned(),
            boundary,
        }
    }
}

/// One commit a kept walk showed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shown {
    pub(crate) id: ObjectId,
    /// Its committer date, seconds since the epoch.
    pub(crate) time: i64,
    /// Its ordinal among the commits the walk took from its queue.
    pop: u64,
    /// Its author in [`Kept::identities`], once read.
    author: Option<u32>,
}

/// A walk and what it showed so far.
pub(crate) struct Kept {
    walk: Walk,
    /// Every commit shown so far, in order.
    pub(crate) shown: Vec<Shown>,
    /// The walk reached the end of history.
    done: bool,
    /// The walk failed part-way: it is not continued (the next call starts a new one).
    broken: bool,
    /// Distinct raw author identities (name, email) of the shown commits whose author was read.
    identities: Vec<(BString, BString)>,
    identity_ids: HashMap<(BString, BString), u32>,
}

impl Kept {
    fn new(walk: Walk) -> Self {
        Self {
            walk,
            shown: Vec::new(),
            done: false,
            broken: false,
            identities: Vec::new(),
            identity_ids: HashMap::new(),
        }
    }

    /// The walk's shallow boundary.
    pub(crate) fn shallow(&self) -> &crate::ancestry::Shallow {
        &self.walk.shallow
    }

    fn weight(&self) -> usize {
        self.walk.weight() + self.shown.len()
    }

    /// Runs `step` on the walk under `interrupt`; any error breaks the walk.
    fn advance(&mut self, repo: &gix::Repository, interrupt: &Interrupt, below: Option<i64>) -> Result<bool> {
        self.walk.set_interrupt(interrupt);
        match self.walk.step(repo, below) {
            Ok(Step::Shown(id, time)) => {
                self.shown.push(Shown { id, time, pop: self.walk.pops - 1, author: None });
                Ok(true)
            }
            Ok(Step::Low) => Ok(true),
            Ok(Step::End) => {
                self.done = true;
                Ok(false)
            }
            Err(err) => {
                self.broken = true;
                Err(err)
            }
        }
    }

    /// Walks on until `count` commits are shown or history ends.
    ///
    /// # Errors
    /// [`Error::GitRead`] when a commit or tree cannot be read; [`Error::Cancelled`].
    pub(crate) fn fill(&mut self, repo: &gix::Repository, interrupt: &Interrupt, count: usize) -> Result<()> {
        while self.shown.len() < count && !self.done {
            self.advance(repo, interrupt, None)?;
        }
        Ok(())
    }

    /// The commits `git log --since=<since>` over the same tips and path shows: walks on until the
    /// walk took a commit older than `since` (or history ends), then the shown commits taken before
    /// it.
    ///
    /// # Errors
    /// As [`Kept::fill`].
    pub(crate) fn since(&mut self, repo: &gix::Repository, interrupt: &Interrupt, since: i64) -> Result<&[Shown]> {
        while !self.done && self.first_older(since).is_none() {
            self.advance(repo, interrupt, Some(since))?;
        }
        let end = match self.first_older(since) {
            Some(pop) => self.shown.partition_point(|shown| shown.pop < pop),
            None => self.shown.len(),
        };
        Ok(&self.shown[..end])
    }

    /// The ordinal of the first commit taken that is older than `since`, if the walk took one yet.
    fn first_older(&self, since: i64) -> Option<u64> {
        let lows = &self.walk.lows;
        lows.get(lows.partition_point(|(_, time)| *time >= since)).map(|(pop, _)| *pop)
    }

    /// The raw author identity of the `index`th shown commit (see [`Kept::identity`]), read once.
    ///
    /// # Errors
    /// [`Error::GitRead`] when the commit cannot be read.
    pub(crate) fn author(&mut self, repo: &gix::Repository, index: usize) -> Result<u32> {
        if let Some(identity) = self.shown[index].author {
            return Ok(identity);
        }
        let commit = repo.find_commit(self.shown[index].id).map_err(|err| Error::git("commit", err))?;
        let author = commit.author().map_err(|err| Error::git("commit author", err))?;
        let key = (BString::from(author.name), BString::from(author.email));
        let identity = match self.identity_ids.get(&key) {
            Some(identity) => *identity,
            None => {
                let identity = u32::try_from(self.identities.len()).unwrap_or(u32::MAX);
                self.identity_ids.insert(key.clone(), identity);
                self.identities.push(key);
                identity
            }
        };
        self.shown[index].author = Some(identity);
        Ok(identity)
    }

    /// The raw (name, email) of an identity [`Kept::author`] gave.
    pub(crate) fn identity(&self, identity: u32) -> (&BString, &BString) {
        let (name, email) = &self.identities[identity as usize];
        (name, email)
    }
}

/// The engine's kept walks.
#[derive(Default)]
pub(crate) struct Walks {
    /// Least recently used first.
    kept: Mutex<Vec<(Key, Arc<Mutex<Kept>>)>>,
    /// Commits taken from the queues of kept walks since the engine started.
    walked: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Walks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Walks").field("kept", &lock(&self.kept).len()).finish()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Walks {
    /// Runs `read` on the kept walk of `key`, or on a new one made by `start` (also when the kept
    /// one broke); the walk is locked meanwhile (another call over the same key waits).
    ///
    /// # Errors
    /// Whatever `start` or `read` returns; a walk `read` leaves broken is dropped.
    pub(crate) fn with<R>(
        &self,
        key: &Key,
        start: impl FnOnce() -> Result<Walk>,
        read: impl FnOnce(&mut Kept) -> Result<R>,
    ) -> Result<R> {
        let walk = match self.find(key) {
            Some(walk) if !lock(&walk).broken => walk,
            _ => self.insert(key, Kept::new(start()?)),
        };
        let mut kept = lock(&walk);
        let before = kept.walk.pops;
        let result = read(&mut kept);
        self.walked.fetch_add(kept.walk.pops - before, std::sync::atomic::Ordering::Relaxed);
        result
    }

    /// Commits taken from the queues of kept walks since the engine started (for tests and
    /// benchmarks).
    pub(crate) fn walked(&self) -> u64 {
        self.walked.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The kept walk of `key`, now the most recently used.
    fn find(&self, key: &Key) -> Option<Arc<Mutex<Kept>>> {
        let mut kept = lock(&self.kept);
        let at = kept.iter().position(|(known, _)| known == key)?;
        let entry = kept.remove(at);
        let walk = Arc::clone(&entry.1);
        kept.push(entry);
        Some(walk)
    }

    /// Keeps `walk` under `key` (replacing any other), then drops the least recently used walks
    /// over a bound (a walk in use by another call weighs nothing here; it is counted at the next
    /// insertion).
    fn insert(&self, key: &Key, walk: Kept) -> Arc<Mutex<Kept>> {
        let walk = Arc::new(Mutex::new(walk));
        let mut kept = lock(&self.kept);
        kept.retain(|(known, _)| known != key);
        kept.push((key.clone(), Arc::clone(&walk)));
        let weight = |walk: &Arc<Mutex<Kept>>| walk.try_lock().map_or(0, |walk| walk.weight());
        let mut total: usize = kept.iter().map(|(_, walk)| weight(walk)).sum();
        while kept.len() > 1 && (kept.len() > MAX_KEPT || total > MAX_WEIGHT) {
            let (_, dropped) = kept.remove(0);
            total = total.saturating_sub(weight(&dropped));
        }
        walk
    }
}

/// A queued commit: newest committer date first, then first queued first (git's `prio_queue` order;
/// `order` is unique, so `parents` never decides).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Queued {
    time: i64,
    order: std::cmp::Reverse<u64>,
    id: ObjectId,
    /// Its parents as the walk follows them, read with its date when it was queued; `None` for the
    /// tip, queued unread.
    parents: Option<Vec<ObjectId>>,
}

/// What one [`Walk::step`] reached.
pub(crate) enum Step {
    /// A commit `git log` shows, and its committer date.
    Shown(ObjectId, i64),
    /// A commit older than the step's bound, not shown.
    Low,
    /// The end of history.
    End,
}

/// The path's entry (mode and object) in a commit's tree, `None` when absent.
type PathEntry = Option<(gix::object::tree::EntryMode, ObjectId)>;

/// git's default revision walk with history simplification by `path`
/// (`git log [--since=<t>] <tip> -- <path>`); a shallow clone's boundary commits are walked as root
/// commits, as git walks them. It borrows nothing, so it can be kept between calls and continued
/// ([`crate::walks`]); every step is given the repository it reads.
pub(crate) struct Walk {
    pub(crate) shallow: Shallow,
    queue: BinaryHeap<Queued>,
    seen: HashSet<ObjectId>,
    queued: u64,
    /// The literal path, normalised (no empty or `.` components); `""` is the whole tree
    /// (`git log -- .`).
    path: Option<std::sync::Arc<str>>,
    entries: HashMap<ObjectId, PathEntry>,
    since: Option<i64>,
    /// For a range: the only commits that may be shown or walked (those the hidden commits do not
    /// reach).
    limit: Option<HashSet<ObjectId>>,
    /// Checked before each commit is taken from the queue.
    interrupt: Interrupt,
    /// Commits taken from the queue so far.
    pub(crate) pops: u64,
    /// Where the committer dates of the commits taken so far reached a new low: (pop ordinal,
    /// date), dates strictly decreasing. A walk with `--since=<t>` ends at the first pop older than
    /// `t` (see [`Walk::since`]).
    pub(crate) lows: Vec<(u64, i64)>,
}

impl Walk {
    /// A walk from `tip`, showing only commits that change `path` when given. The path is read as
    /// git reads a literal pathspec: empty and `.` components are dropped (`./src/` is `src`), and
    /// what is left empty (`.`, `""`) is the whole tree, so commits that change no file (an empty
    /// commit, a merge taking one parent's tree) are simplified away as `git log -- .` does.
    ///
    /// # Errors
    /// [`Error::GitRead`] when the shallow boundary cannot be read.
    pub(crate) fn new(repo: &gix::Repository, tip: ObjectId, path: Option<&str>) -> Result<Self> {
        let path = path.map(|path| {
            std::sync::Arc::from(
                path.split('/').filter(|part| !part.is_empty() && *part != ".").collect::<Vec<_>>().join("/"),
            )
        });
        let mut walk = Walk {
            shallow: Shallow::read(repo)?,
            queue: BinaryHeap::new(),
            seen: HashSet::new(),
            queued: 0,
            path,
            entries: HashMap::new(),
            since: None,
            limit: None,
            interrupt: Interrupt::new(),
            pops: 0,
            lows: Vec::new(),
        };
        walk.seen.insert(tip);
        walk.push(tip, 0, None);
        Ok(walk)
    }

    /// How many commits the walk holds in memory (seen and path entries), to bound kept walks.
    pub(crate) fn weight(&self) -> usize {
        self.seen.len() + self.entries.len()
    }

    /// `git log --since=<since>` (seconds since the epoch): like git's streaming walk, a commit
    /// whose committer date is older is neither shown nor are its parents walked, so the walk ends
    /// where history gets older. Every commit still queued then is older too (the queue gives the
    /// newest first), so such a walk shows exactly the commits the walk without `since` shows
    /// before its first pop older than `since`.
    pub(crate) fn since(mut self, since: i64) -> Self {
        self.since = Some(since);
        self
    }

    /// The walk of a range: also from `also` (the other side of `A...B`), showing only commits that
    /// none of `hidden` reaches (`git log <tip> <also> --not <hidden>`). The tip is queued with
    /// date 0 by [`Walk::new`]; it is re-queued here with its date so that both sides are taken
    /// newest first.
    ///
    /// # Errors
    /// [`Error::GitRead`] when a commit cannot be read.
    pub(crate) fn range(mut self, repo: &gix::Repository, also: &[ObjectId], hidden: &[ObjectId]) -> Result<Self> {
        let tips: Vec<ObjectId> = self.queue.drain().map(|queued| queued.id).chain(also.iter().copied()).collect();
        let mut limit = HashSet::new();
        for tip in &tips {
            limit.extend(crate::ancestry::exclusive(repo, *tip, hidden, usize::MAX)?);
        }
        self.seen.clear();
        self.queued = 0;
        for tip in tips {
            if limit.contains(&tip) && self.seen.insert(tip) {
                let (time, parents) = self.date_and_parents(repo, tip)?;
                self.push(tip, time, Some(parents));
            }
        }
        self.limit = Some(limit);
        Ok(self)
    }

    /// The same walk, stopping with [`Error::Cancelled`] at the next commit once `interrupt` is
    /// triggered.
    pub(crate) fn interruptible(mut self, interrupt: &Interrupt) -> Self {
        self.interrupt = interrupt.clone();
        self
    }

    /// Checks `interrupt` from now on (a kept walk continued by another call).
    pub(crate) fn set_interrupt(&mut self, interrupt: &Interrupt) {
        self.interrupt = interrupt.clone();
    }

    fn push(&mut self, id: ObjectId, time: i64, parents: Option<Vec<ObjectId>>) {
        self.queue.push(Queued { time, order: std::cmp::Reverse(self.queued), id, parents });
        self.queued += 1;
    }

    fn enqueue(&mut self, repo: &gix::Repository, id: ObjectId) -> Result<()> {
        if self.limit.as_ref().is_some_and(|limit| !limit.contains(&id)) {
            return Ok(());
        }
        if self.seen.insert(id) {
            let (time, parents) = self.date_and_parents(repo, id)?;
            self.push(id, time, Some(parents));
        }
        Ok(())
    }

    /// Commit `id`'s committer date (seconds since the epoch) and its parents as git walks them
    /// (none for a shallow boundary), from one pass over its header.
    fn date_and_parents(&self, repo: &gix::Repository, id: ObjectId) -> Result<(i64, Vec<ObjectId>)> {
        use gix::objs::commit::ref_iter::Token;
        let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
        let mut parents = Vec::new();
        for token in commit.iter() {
            match token.map_err(|err| Error::git("commit", err))? {
                Token::Parent { id } => parents.push(id),
                Token::Committer { signature } => {
                    let time = signature.time().map_err(|err| Error::git("commit date", err))?;
                    if self.shallow.is_boundary(&id) {
                        parents.clear();
                    }
                    return Ok((time.seconds, parents));
                }
                _ => {}
            }
        }
        Err(Error::git_text("commit date", format!("commit {id} has no committer")))
    }

    /// The next commit `git log` would show, or `None` at the end of history.
    pub(crate) fn next_shown(&mut self, repo: &gix::Repository) -> Result<Option<ObjectId>> {
        loop {
            match self.step(repo, None)? {
                Step::Shown(id, _) => return Ok(Some(id)),
                Step::Low => {}
                Step::End => return Ok(None),
            }
        }
    }

    /// Takes commits from the queue until one is shown ([`Step::Shown`] with its committer date),
    /// the end of history, or, when `below` is given, a commit older than `below` that is not shown
    /// ([`Step::Low`]). Each commit taken is handled completely, so the walk can be continued after
    /// any step.
    pub(crate) fn step(&mut self, repo: &gix::Repository, below: Option<i64>) -> Result<Step> {
        loop {
            self.interrupt.check()?;
            let Some(Queued { id, time, parents, .. }) = self.queue.pop() else { return Ok(Step::End) };
            let (time, parents) = match parents {
                Some(parents) => (time, parents),
                None => self.date_and_parents(repo, id)?,
            };
            self.pops += 1;
            if self.lows.last().is_none_or(|(_, low)| time < *low) {
                self.lows.push((self.pops - 1, time));
            }
            let low = below.is_some_and(|below| time < below);
            if self.since.is_some_and(|since| time < since) {
                if low {
                    return Ok(Step::Low);
                }
                continue;
            }
            let Some(path) = self.path.clone() else {
                for parent in parents {
                    self.enqueue(repo, parent)?;
                }
                return Ok(Step::Shown(id, time));
            };
            let own = path_entry(repo, &mut self.entries, id, &path)?;
            let mut same = None;
            for parent in &parents {
                if path_entry(repo, &mut self.entries, *parent, &path)? == own {
                    same = Some(*parent);
                    break;
                }
            }
            match same {
                Some(parent) => self.enqueue(repo, parent)?,
                // Differs from every parent; a root commit differs from the empty tree when it has the path.
                None if parents.is_empty() && own.is_none() => {}
                None => {
                    for parent in parents {
                        self.enqueue(repo, parent)?;
                    }
                    return Ok(Step::Shown(id, time));
                }
            }
            if low {
                return Ok(Step::Low);
            }
        }
    }
}

/// `path`'s entry in commit `id`'s tree (cached in `entries`); for `""`, the root tree itself
/// (`None` when empty, so that a root commit with no file is not shown).
fn path_entry(
    repo: &gix::Repository,
    entries: &mut HashMap<ObjectId, PathEntry>,
    id: ObjectId,
    path: &str,
) -> Result<PathEntry> {
    if let Some(entry) = entries.get(&id) {
        return Ok(*entry);
    }
    let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
    let entry = if path.is_empty() {
        let tree = commit.tree_id().map_err(|err| Error::git("commit tree", err))?.detach();
        let mode: gix::object::tree::EntryMode = gix::object::tree::EntryKind::Tree.into();
        (tree != ObjectId::empty_tree(repo.object_hash())).then_some((mode, tree))
    } else {
        let tree = commit.tree().map_err(|err| Error::git("commit tree", err))?;
        tree.lookup_entry_by_path(path)
            .map_err(|err| Error::git("tree entry", err))?
            .map(|entry| (entry.mode(), entry.object_id()))
    };
    entries.insert(id, entry);
    Ok(entry)
}
