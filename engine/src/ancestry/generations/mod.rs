//! Generation numbers of every commit a count walks, so that [`super::reach`] can stop early and
//! stay exact without a commit-graph file.
//!
//! A commit's generation number is its topological level: 1 for a commit without parents, else one
//! more than the highest of its parents' (parents as git walks them: none at a shallow boundary).
//! It falls strictly from child to parent, which is all the walk's stop rule needs. It is the
//! number git writes into a commit-graph file (the level in the `CDAT` chunk, which gix reads as
//! `generation`), so the two sources agree and can be mixed in one walk.
//!
//! Where they come from: the repository's commit-graph for the commits it holds, when gix would use
//! it (enabled, no object replacements, not shallow); for every other commit, a table the engine
//! keeps in memory per repository (keyed by common dir), filled lazily. A commit's number depends
//! only on its ancestry, and a commit id names its parents (they are hashed into it), so an entry
//! never goes stale; the table is started again only when what makes gix's parents differ from the
//! commits' own changes: the shallow boundary (`.git/shallow`) or the object replacements
//! (`refs/replace/`, honoured by gix unless disabled; gix reads no `info/grafts`). Filling it for
//! new tips reads only the commits the table and the commit-graph do not know: after one commit,
//! one commit; a commit-graph that misses the newest commits (written before them) costs only
//! those. Without a commit-graph, the first count on a repository reads its whole history once
//! (every commit below the tips must be numbered); that is the price of exact counts there (see
//! docs/internals.md, "Exact ahead/behind"), paid once per run dir when tables are saved (below).
//!
//! A table is filled only from complete ancestries: when a commit turns out to be missing (a
//! damaged repository), the numbers computed in that call are used for it and not kept, so an
//! object that appears later cannot leave a number too low behind. Tables are held in a cache
//! bounded by weight ([`CAPACITY_BYTES`]), least recently used out first; a table that does not fit
//! is computed again by the next call.
//!
//! When the engine has a run dir ([`saved`]), tables are also saved there, written by a thread of
//! their own after the call that grew them, and a process that meets a repository for the first
//! time loads its table from there (validated: a damaged, cut or foreign file is ignored and
//! rewritten), so only the first process on a repository reads its whole history. A table is saved
//! when it was first filled in this process, and again once [`SAVE_AFTER`] entries were added
//! since: a process that loads a file a little behind reads only the commits added since (cheap),
//! and rewriting the file for every new commit would not pay.
//!
//! A table is a small commit table: besides its number, each entry keeps the commit's parents (as
//! git walks them, as positions in the table) and its committer date, taken from the same read that
//! numbers it. The walks ([`super::paint`]) take a commit from the table when it is there, so after
//! the numbering, or in a process that loaded the table, they read no commit object at all
//! ([`walk_reads`] counts the ones they do read). An entry whose parents are not all entries
//! (numbered with the commit-graph's help) keeps no parents: the walks read it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock, RwLockReadGuard};

use gix::ObjectId;
use sha2::Digest as _;

use super::Shallow;
use crate::error::{Error, Result};

/// Weight bound of the tables of every repository together, in bytes (about 80 bytes per commit:
/// 1.25 million commits).
pub(crate) const CAPACITY_BYTES: u64 = 96 * 1024 * 1024;

/// Approximate bytes one entry of a table takes (the [`Entry`], a parent position, the id's slot in
/// the index with the hash table's slack).
const ENTRY_BYTES: u64 = 80;

/// Entries added to a table since it was last saved that make it worth saving again.
const SAVE_AFTER: usize = 1024;

pub(crate) mod saved;

/// What gix's parents depend on besides the commits (shallow boundary, object replacements):
/// SHA-256 of them, the same in every process. All zeros: a table not yet started.
type Fingerprint = [u8; 32];

/// Commits numbered by reading them (not loaded, not from a commit-graph) since the process
/// started.
static NUMBERED: AtomicU64 = AtomicU64::new(0);

/// Commits the walks read from the object database or the commit-graph (not from a table) since the
/// process started.
static WALK_READS: AtomicU64 = AtomicU64::new(0);

/// Tables started since the process started: a table's `serial`, so that a filler appends only to
/// the table it numbered against (positions are only valid there).
static STARTED: AtomicU64 = AtomicU64::new(0);

/// [`Entry::parent_count`] of an entry whose parents are not kept (one of them is not an entry).
const PARENTS_NOT_KEPT: u32 = u32::MAX;

/// One commit of a table.
#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    pub(super) id: ObjectId,
    /// Its generation number (>= 1).
    pub(super) generation: u32,
    /// Its committer date, seconds since the epoch (as gix reads it).
    pub(super) time: i64,
    /// Where its parents' positions start in [`Table::parents`].
    pub(super) parents_at: u32,
    /// How many parents it has as git walks them (none at a shallow boundary), or
    /// [`PARENTS_NOT_KEPT`].
    pub(super) parent_count: u32,
}

/// One repository's table: the commits the commit-graph lacked when they were numbered, with their
/// numbers, parents and dates.
#[derive(Debug)]
pub(super) struct Table {
    pub(super) epoch: Fingerprint,
    /// Each entry's position in `entries`, by id.
    index: gix::hashtable::HashMap<ObjectId, u32>,
    pub(super) entries: Vec<Entry>,
    /// Parents' positions in `entries`, each entry's in a run of its own.
    pub(super) parents: Vec<u32>,
    /// Entries in the saved file (loaded from it, or queued to be written).
    saved: usize,
    /// Whether every parent of an entry is an entry (or none: a root, a shallow boundary): filled
    /// without a commit-graph. Only such a table is saved (see [`saved`]).
    pub(super) self_contained: bool,
    /// Which table this is (see [`STARTED`]).
    serial: u64,
}

impl Table {
    /// An empty table for `epoch`.
    fn new(epoch: Fingerprint) -> Self {
        Self::with(epoch, Vec::new(), Vec::new())
    }

    /// A table of `entries` (as saved) and their `parents`, indexed by id here.
    pub(super) fn with(epoch: Fingerprint, entries: Vec<Entry>, parents: Vec<u32>) -> Self {
        let mut index = gix::hashtable::HashMap::default();
        index.reserve(entries.len());
        for (at, entry) in entries.iter().enumerate() {
            index.insert(entry.id, u32::try_from(at).unwrap_or(u32::MAX));
        }
        let serial = STARTED.fetch_add(1, Ordering::Relaxed);
        Self { epoch, index, saved: entries.len(), entries, parents, self_contained: true, serial }
    }

    /// The entry of `id`.
    fn get(&self, id: &ObjectId) -> Option<&Entry> {
        self.index.get(id).map(|at| &self.entries[*at as usize])
    }

    /// The parent positions of `entry`, `None` when they are not kept.
    pub(super) fn parents_of(&self, entry: &Entry) -> Option<&[u32]> {
        let at = entry.parents_at as usize;
        (entry.parent_count != PARENTS_NOT_KEPT).then(|| &self.parents[at..at + entry.parent_count as usize])
    }

    /// Appends the commits a filler numbered, their parents turned into positions (not kept when
    /// one is not an entry: it is in the commit-graph).
    fn extend(&mut self, fresh: &Fresh) {
        let base = self.entries.len();
        self.index.reserve(fresh.commits.len());
        for (offset, commit) in fresh.commits.iter().enumerate() {
            self.index.insert(commit.id, u32::try_from(base + offset).unwrap_or(u32::MAX));
        }
        for commit in &fresh.commits {
            let recorded = &fresh.parent_ids[commit.parents.clone()];
            let positions: Option<Vec<u32>> = recorded.iter().map(|parent| self.index.get(parent).copied()).collect();
            let parents_at = u32::try_from(self.parents.len()).unwrap_or(u32::MAX);
            let parent_count = match positions {
                Some(positions) => {
                    self.parents.extend_from_slice(&positions);
                    u32::try_from(positions.len()).unwrap_or(PARENTS_NOT_KEPT)
                }
                None => {
                    self.self_contained = false;
                    PARENTS_NOT_KEPT
                }
            };
            let (id, generation, time) = (commit.id, commit.generation, commit.time);
            self.entries.push(Entry { id, generation, time, parents_at, parent_count });
        }
    }
}

/// Commits a filler numbered, in the order it numbered them (parents first).
#[derive(Default)]
struct Fresh {
    /// Position in `commits` by id.
    index: gix::hashtable::HashMap<ObjectId, usize>,
    commits: Vec<FreshCommit>,
    /// Every fresh commit's parents, each in a run of its own.
    parent_ids: Vec<ObjectId>,
}

/// A commit the filler read and has not numbered yet: its date and its parents' run in
/// [`Fresh::parent_ids`].
type Read = (i64, std::ops::Range<usize>);

/// One commit a filler numbered.
struct FreshCommit {
    id: ObjectId,
    generation: u32,
    time: i64,
    /// Its parents' run in [`Fresh::parent_ids`].
    parents: std::ops::Range<usize>,
}

impl Fresh {
    /// The number of `id`, when numbered.
    fn number(&self, id: &ObjectId) -> Option<u32> {
        self.index.get(id).map(|at| self.commits[*at].generation)
    }
}

impl Default for Table {
    fn default() -> Self {
        Self::new([0; 32])
    }
}

/// A repository's table, shared by concurrent calls; `fill` is held while one of them numbers new
/// commits, so two first calls read the history once.
#[derive(Debug, Default)]
struct Shared {
    table: RwLock<Table>,
    fill: Mutex<()>,
}

/// The tables of every repository the process has counted in, by common dir.
fn tables() -> &'static moka::sync::Cache<PathBuf, Arc<Shared>> {
    static TABLES: OnceLock<moka::sync::Cache<PathBuf, Arc<Shared>>> = OnceLock::new();
    TABLES.get_or_init(|| {
        moka::sync::Cache::builder()
            .max_capacity(CAPACITY_BYTES)
            .weigher(|_: &PathBuf, shared: &Arc<Shared>| {
                let entries = shared.table.try_read().map_or(0, |table| table.entries.len() as u64);
                u32::try_from((entries * ENTRY_BYTES).max(1024)).unwrap_or(u32::MAX)
            })
            .build()
    })
}

/// What a walk needs to order commits by generation number (see the module documentation).
pub(crate) struct Generations {
    commit_graph: Option<gix::commitgraph::Graph>,
    key: PathBuf,
    kind: gix::hash::Kind,
    epoch: Fingerprint,
    shared: Arc<Shared>,
}

impl Generations {
    /// The repository's commit-graph (when gix would use it and the repository is not shallow) and
    /// its table.
    ///
    /// # Errors
    /// [`Error::GitRead`] when the commit-graph exists but cannot be read.
    pub(crate) fn open(repo: &gix::Repository, shallow: &Shallow) -> Result<Self> {
        let commit_graph = if shallow.is_shallow() {
            None
        } else {
            repo.commit_graph_if_enabled().map_err(|err| Error::git("commit-graph", err))?
        };
        let epoch = epoch(repo, shallow);
        let key = repo.common_dir().to_path_buf();
        let cache = tables();
        let shared = cache.get_with(key.clone(), || Arc::new(Shared::default()));
        let kind = repo.object_hash();
        let started = shared.table.read().unwrap_or_else(PoisonError::into_inner).epoch == epoch;
        if !started {
            let mut table = shared.table.write().unwrap_or_else(PoisonError::into_inner);
            if table.epoch != epoch {
                // A new process, or a new shallow boundary or replacements: the saved table, if it is for this.
                *table = saved::load(&key, kind, &epoch).unwrap_or_else(|| Table::new(epoch));
                let loaded = !table.entries.is_empty();
                drop(table);
                if loaded {
                    // Inserted again so that the cache weighs the loaded table.
                    cache.insert(key.clone(), Arc::clone(&shared));
                }
            }
        }
        Ok(Self { commit_graph, key, kind, epoch, shared })
    }

    /// The commit-graph the walk should read commits through (the one the numbers agree with).
    pub(crate) fn commit_graph(&self) -> Option<&gix::commitgraph::Graph> {
        self.commit_graph.as_ref()
    }

    /// Numbers every commit reachable from `tips` that neither the table nor the commit-graph knows
    /// (a depth-first walk that stops at known commits), and returns the numbers of all of them.
    ///
    /// # Errors
    /// [`Error::GitRead`] when a commit cannot be read or parsed.
    pub(crate) fn number(&self, repo: &gix::Repository, shallow: &Shallow, tips: &[ObjectId]) -> Result<Known<'_>> {
        if self.knows(tips) {
            return Ok(Known { table: self.read(), fresh: HashMap::new() });
        }
        let _filling = self.shared.fill.lock().unwrap_or_else(PoisonError::into_inner);
        let (fresh, complete, serial) = {
            let table = self.read();
            let (fresh, complete) = self.fill(repo, shallow, table.as_deref(), tips)?;
            (fresh, complete, table.map(|table| table.serial))
        };
        NUMBERED.fetch_add(fresh.commits.len() as u64, Ordering::Relaxed);
        if complete && !fresh.commits.is_empty() {
            let mut table = self.shared.table.write().unwrap_or_else(PoisonError::into_inner);
            // Only the table numbered against (positions are its own), or a new empty one of this epoch when there
            // was none.
            let same = match serial {
                Some(serial) => table.serial == serial,
                None => table.entries.is_empty(),
            };
            if table.epoch == self.epoch && same {
                table.extend(&fresh);
                table.self_contained &= self.commit_graph.is_none();
                let save =
                    table.self_contained && (table.saved == 0 || table.entries.len() >= table.saved + SAVE_AFTER);
                if save {
                    table.saved = table.entries.len();
                }
                drop(table);
                // Inserted again so that the cache weighs the grown table.
                tables().insert(self.key.clone(), Arc::clone(&self.shared));
                if save {
                    saved::schedule(&self.key, self.kind, &self.shared);
                }
                return Ok(Known { table: self.read(), fresh: HashMap::new() });
            }
        }
        let fresh = fresh.commits.iter().map(|commit| (commit.id, commit.generation)).collect();
        Ok(Known { table: self.read(), fresh })
    }

    /// The table as it is, without numbering anything: for reading commits it keeps
    /// ([`Known::commit`]).
    pub(crate) fn known(&self) -> Known<'_> {
        Known { table: self.read(), fresh: HashMap::new() }
    }

    /// Whether every commit of `tips` is numbered already (then so is every commit below them).
    fn knows(&self, tips: &[ObjectId]) -> bool {
        let in_graph = |id: &ObjectId| self.commit_graph.as_ref().is_some_and(|graph| graph.lookup(id).is_some());
        self.read().is_some_and(|table| tips.iter().all(|id| table.index.contains_key(id) || in_graph(id)))
    }

    /// The table, read-locked, when it is this call's epoch (a concurrent call may have started it
    /// again for another shallow boundary or other replacements: then this call uses none of it).
    fn read(&self) -> Option<RwLockReadGuard<'_, Table>> {
        let table = self.shared.table.read().unwrap_or_else(PoisonError::into_inner);
        (table.epoch == self.epoch).then_some(table)
    }

    /// The depth-first numbering: a commit is numbered once all its parents are. Returns the new
    /// commits (with their parents as git walks them and their dates) and whether every commit
    /// below the tips was found.
    fn fill(
        &self,
        repo: &gix::Repository,
        shallow: &Shallow,
        known: Option<&Table>,
        tips: &[ObjectId],
    ) -> Result<(Fresh, bool)> {
        let graph_number = |id: &ObjectId| {
            let graph = self.commit_graph.as_ref()?;
            graph.lookup(id).map(|pos| graph.commit_at(pos).generation())
        };
        let table_number = |id: &ObjectId| known.and_then(|table| table.get(id)).map(|entry| entry.generation);
        let mut fresh = Fresh::default();
        let mut missing = gix::hashtable::HashSet::default();
        let mut reader = repo.revision_graph::<()>(self.commit_graph.as_ref());
        // Each frame: a commit, and once read its date and its parents' run in `fresh.parent_ids`.
        let mut stack: Vec<(ObjectId, Option<Read>)> = tips.iter().map(|id| (*id, None)).collect();
        while let Some((id, read)) = stack.last_mut() {
            let id = *id;
            if fresh.index.contains_key(&id) || table_number(&id).is_some() || missing.contains(&id) {
                stack.pop();
                continue;
            }
            if let Some((time, parents)) = read.take() {
                let highest = fresh.parent_ids[parents.clone()]
                    .iter()
                    .filter_map(|parent| {
                        fresh.number(parent).or_else(|| table_number(parent)).or_else(|| graph_number(parent))
                    })
                    .max()
                    .unwrap_or(0);
                fresh.index.insert(id, fresh.commits.len());
                fresh.commits.push(FreshCommit { id, generation: highest.saturating_add(1), time, parents });
                stack.pop();
                continue;
            }
            let Some(commit) = reader.try_lookup(&id).map_err(|err| Error::git("commit", err))? else {
                missing.insert(id);
                stack.pop();
                continue;
            };
            if commit.generation().is_some() {
                // In the commit-graph, which numbers it.
                stack.pop();
                continue;
            }
            // Parents and date in one pass over the commit's header, as gix's walks read them.
            let owned = commit.to_owned(|| ()).map_err(|err| Error::git("commit", err))?;
            let start = fresh.parent_ids.len();
            if !shallow.is_boundary(&id) {
                fresh.parent_ids.extend_from_slice(&owned.parents);
            }
            let parents = start..fresh.parent_ids.len();
            let pending: Vec<ObjectId> = fresh.parent_ids[parents.clone()]
                .iter()
                .filter(|parent| {
                    !fresh.index.contains_key(*parent)
                        && table_number(parent).is_none()
                        && !missing.contains(*parent)
                        && graph_number(parent).is_none()
                })
                .copied()
                .collect();
            *read = Some((owned.commit_time, parents));
            stack.extend(pending.into_iter().map(|parent| (parent, None)));
        }
        Ok((fresh, missing.is_empty()))
    }
}

/// Numbers, on a thread of its own, the commits below `tips` that neither the table nor the
/// commit-graph knows, so that a count asked for later finds them numbered (a call that needs them
/// meanwhile waits for this thread instead of reading the history a second time). Nothing is
/// started when every tip is known already, and the thread numbers nothing when `needless` (run on
/// it first) says the count will not need the numbers; a failure is left for the count itself to
/// report.
pub(crate) fn number_in_background(
    repo: &gix::Repository,
    tips: Vec<ObjectId>,
    needless: impl FnOnce(&gix::Repository) -> bool + Send + 'static,
) {
    let Ok(shallow) = Shallow::read(repo) else { return };
    let Ok(generations) = Generations::open(repo, &shallow) else { return };
    if generations.knows(&tips) {
        return;
    }
    let repo = repo.clone();
    let spawned = std::thread::Builder::new().name("fluxgit-generations".to_owned()).spawn(move || {
        if needless(&repo) {
            return;
        }
        let _ = generations.number(&repo, &shallow, &tips);
    });
    drop(spawned);
}

/// The generation numbers of one walk: the table (read-locked while the walk runs) and the numbers
/// the call made without keeping them.
pub(crate) struct Known<'a> {
    table: Option<RwLockReadGuard<'a, Table>>,
    fresh: HashMap<ObjectId, u32>,
}

impl Known<'_> {
    /// The generation number of `id`: `from_graph` (what the commit-graph says, when it holds the
    /// commit), else the engine's; `None` only for a commit below no tip given to
    /// [`Generations::number`].
    pub(crate) fn of(&self, id: &ObjectId, from_graph: Option<u32>) -> Option<u32> {
        from_graph.or_else(|| {
            self.fresh
                .get(id)
                .copied()
                .or_else(|| self.table.as_ref().and_then(|table| table.get(id)).map(|entry| entry.generation))
        })
    }

    /// The commit `id` as the table keeps it (parents as git walks them, committer date; no
    /// commit-graph generation), `None` when the table does not hold it with its parents: then it
    /// must be read.
    pub(crate) fn commit<T: Default>(&self, id: &ObjectId) -> Option<gix::revwalk::graph::Commit<T>> {
        let table = self.table.as_ref()?;
        let entry = table.get(id)?;
        let parents = table.parents_of(entry)?;
        Some(gix::revwalk::graph::Commit {
            parents: parents.iter().map(|at| table.entries[*at as usize].id).collect(),
            commit_time: entry.time,
            generation: None,
            data: T::default(),
        })
    }
}

/// What gix's parents depend on besides the commits themselves: the shallow boundary and the object
/// replacements (when gix honours them), as a [`Fingerprint`].
fn epoch(repo: &gix::Repository, shallow: &Shallow) -> Fingerprint {
    let mut hasher = sha2::Sha256::new();
    hasher.update(b"shallow");
    for id in shallow.boundary() {
        hasher.update(id.as_bytes());
    }
    hasher.update(b"replace");
    if !repo.objects.ignore_replacements {
        let mut replacements: Vec<(ObjectId, ObjectId)> = repo.objects.store_ref().replacements().collect();
        replacements.sort_unstable();
        for (original, replacement) in replacements {
            hasher.update(original.as_bytes());
            hasher.update(replacement.as_bytes());
        }
    }
    hasher.finalize().into()
}

/// Commits numbered by reading them since the process started (see
/// [`crate::ancestry::numbered_commits`]).
pub(crate) fn numbered() -> u64 {
    NUMBERED.load(Ordering::Relaxed)
}

/// Commits the walks read from the object database or the commit-graph since the process started
/// (see [`crate::ancestry::walk_reads`]).
pub(crate) fn walk_reads() -> u64 {
    WALK_READS.load(Ordering::Relaxed)
}

/// Counts one commit a walk read from the object database or the commit-graph.
pub(crate) fn count_walk_read() {
    WALK_READS.fetch_add(1, Ordering::Relaxed);
}

/// Drops every table held in memory (see [`crate::ancestry::forget_generation_tables`]).
pub(crate) fn forget() {
    tables().invalidate_all();
}

/// The file `common_dir`'s table is saved in, when tables are saved.
pub(crate) fn saved_file(common_dir: &Path) -> Option<PathBuf> {
    saved::path_of(common_dir)
}
