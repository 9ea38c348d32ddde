//! Kept walks: a history walk ([`Walk`]: git's order and path simplification) is kept after the call that made
//! it, with every commit it showed, so that a later call over the same tips and path continues it instead of
//! walking again from the tip. `repo.history`'s page N then costs O(limit) (the walk is already at page N-1's end),
//! and `repo.scope`'s recent commits and churn of an unchanged HEAD are read from memory.
//!
//! Exactness: a walk depends only on its tips, its path and the shallow boundary (commits never change), which
//! make its key; what it shows is what a fresh walk shows, because it *is* that walk, continued. A churn window
//! `--since=<t>` is answered from the walk without `since`: git's streaming walk stops showing at the first commit
//! it takes that is older than `t` (every commit still queued is older still), so the window is the commits the
//! full walk shows before that point (see [`Walk::since`]). A walk that failed (a read error, a cancelled call)
//! is dropped, never continued.
//!
//! Bounds: at most [`MAX_KEPT`] walks and [`MAX_WEIGHT`] commits held in memory over all of them; the least
//! recently used go first.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use gix::ObjectId;
use gix::bstr::BString;

use crate::error::{Error, Result};
use crate::history::{Step, Walk};
use crate::interrupt::Interrupt;

/// Walks kept at most.
pub(crate) const MAX_KEPT: usize = 16;

/// Commits (walked, path entries, shown) held at most over every kept walk: about 100 bytes each.
pub(crate) const MAX_WEIGHT: usize = 2_000_000;

/// What a walk is of: the repository, its tips (a range's other tip and hidden commits), the path and the shallow
/// boundary.
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

    /// [`Key::new`] of a walk from `tip` alone, with the shallow `boundary` already read (sorted, as
    /// [`crate::ancestry::Shallow::boundary`] gives it).
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

    /// The commits `git log --since=<since>` over the same tips and path shows: walks on until the walk took a
    /// commit older than `since` (or history ends), then the shown commits taken before it.
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
    /// Runs `read` on the kept walk of `key`, or on a new one made by `start` (also when the kept one broke); the
    /// walk is locked meanwhile (another call over the same key waits).
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

    /// Commits taken from the queues of kept walks since the engine started (for tests and benchmarks).
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

    /// Keeps `walk` under `key` (replacing any other), then drops the least recently used walks over a bound (a
    /// walk in use by another call weighs nothing here; it is counted at the next insertion).
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
