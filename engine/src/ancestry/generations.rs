//! Generation numbers of every commit a count walks, so that [`super::reach`] can stop early and stay exact without a
//! commit-graph file.
//!
//! A commit's generation number is its topological level: 1 for a commit without parents, else one more than the
//! highest of its parents' (parents as git walks them: none at a shallow boundary). It falls strictly from child to
//! parent, which is all the walk's stop rule needs. It is the number git writes into a commit-graph file (the level
//! in the `CDAT` chunk, which gix reads as `generation`), so the two sources agree and can be mixed in one walk.
//!
//! Where they come from: the repository's commit-graph for the commits it holds, when gix would use it (enabled, no
//! object replacements, not shallow); for every other commit, a table the engine keeps in memory per repository
//! (keyed by common dir), filled lazily. A commit's number depends only on its ancestry, and a commit id names its
//! parents (they are hashed into it), so an entry never goes stale; the table is started again only when what makes
//! gix's parents differ from the commits' own changes: the shallow boundary (`.git/shallow`) or the object
//! replacements (`refs/replace/`, honoured by gix unless disabled; gix reads no `info/grafts`). Filling it for new
//! tips reads only the commits the table and the commit-graph do not know: after one commit, one commit; a
//! commit-graph that misses the newest commits (written before them) costs only those. Without a commit-graph, the
//! first count on a repository reads its whole history once (every commit below the tips must be numbered); that
//! is the price of exact counts there (see `ARCHITECTURE.md`, "Exact ahead/behind"), paid once per run dir when
//! tables are saved (below).
//!
//! A table is filled only from complete ancestries: when a commit turns out to be missing (a damaged repository),
//! the numbers computed in that call are used for it and not kept, so an object that appears later cannot leave a
//! number too low behind. Tables are held in a cache bounded by weight ([`CAPACITY_BYTES`]), least recently used out
//! first; a table that does not fit is computed again by the next call.
//!
//! When the engine has a run dir ([`saved`]), tables are also saved there, written by a thread of their own after
//! the call that grew them, and a process that meets a repository for the first time loads its table from there
//! (validated: a damaged, cut or foreign file is ignored and rewritten), so only the first process on a repository
//! reads its whole history. A table is saved when it was first filled in this process, and again once
//! [`SAVE_AFTER`] entries were added since: a process that loads a file a little behind reads only the commits
//! added since (cheap), and rewriting 2 MB for every new commit would not pay.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock, RwLockReadGuard};

use gix::ObjectId;
use sha2::Digest as _;

use super::Shallow;
use crate::error::{Error, Result};

/// Weight bound of the tables of every repository together, in bytes (about 48 bytes per commit: 1.3 million
/// commits).
pub(crate) const CAPACITY_BYTES: u64 = 64 * 1024 * 1024;

/// Approximate bytes one entry of a table takes (the id, the number, the hash table's slack).
const ENTRY_BYTES: u64 = 48;

/// Entries added to a table since it was last saved that make it worth saving again.
const SAVE_AFTER: usize = 1024;

pub(crate) mod saved;

/// What gix's parents depend on besides the commits (shallow boundary, object replacements): SHA-256 of them, the
/// same in every process. All zeros: a table not yet started.
type Fingerprint = [u8; 32];

/// Commits numbered by reading them (not loaded, not from a commit-graph) since the process started.
static NUMBERED: AtomicU64 = AtomicU64::new(0);

/// One repository's table: generation numbers of commits the commit-graph lacked when they were numbered.
#[derive(Debug)]
struct Table {
    epoch: Fingerprint,
    numbers: gix::hashtable::HashMap<ObjectId, u32>,
    /// Entries in the saved file (loaded from it, or queued to be written).
    saved: usize,
    /// Whether every parent of an entry is an entry (or none: a root, a shallow boundary): filled without a
    /// commit-graph. Only such a table is saved (see [`saved`]).
    self_contained: bool,
}

impl Table {
    /// An empty table for `epoch`.
    fn new(epoch: Fingerprint) -> Self {
        Self { epoch, numbers: gix::hashtable::HashMap::default(), saved: 0, self_contained: true }
    }
}

impl Default for Table {
    fn default() -> Self {
        Self::new([0; 32])
    }
}

/// A repository's table, shared by concurrent calls; `fill` is held while one of them numbers new commits, so two
/// first calls read the history once.
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
                let entries = shared.table.try_read().map_or(0, |table| table.numbers.len() as u64);
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
    /// The repository's commit-graph (when gix would use it and the repository is not shallow) and its table.
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
                let loaded = !table.numbers.is_empty();
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

    /// Numbers every commit reachable from `tips` that neither the table nor the commit-graph knows (a depth-first
    /// walk that stops at known commits), and returns the numbers of all of them.
    ///
    /// # Errors
    /// [`Error::GitRead`] when a commit cannot be read or parsed.
    pub(crate) fn number(&self, repo: &gix::Repository, shallow: &Shallow, tips: &[ObjectId]) -> Result<Known<'_>> {
        if self.knows(tips) {
            return Ok(Known { table: self.read(), fresh: HashMap::new() });
        }
        let _filling = self.shared.fill.lock().unwrap_or_else(PoisonError::into_inner);
        let empty = gix::hashtable::HashMap::default();
        let (fresh, complete) = {
            let table = self.read();
            self.fill(repo, shallow, table.as_ref().map_or(&empty, |table| &table.numbers), tips)?
        };
        NUMBERED.fetch_add(fresh.len() as u64, Ordering::Relaxed);
        if complete && !fresh.is_empty() {
            let mut table = self.shared.table.write().unwrap_or_else(PoisonError::into_inner);
            if table.epoch == self.epoch {
                table.numbers.extend(fresh);
                table.self_contained &= self.commit_graph.is_none();
                let save =
                    table.self_contained && (table.saved == 0 || table.numbers.len() >= table.saved + SAVE_AFTER);
                if save {
                    table.saved = table.numbers.len();
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
        Ok(Known { table: self.read(), fresh })
    }

    /// Whether every commit of `tips` is numbered already (then so is every commit below them).
    fn knows(&self, tips: &[ObjectId]) -> bool {
        let in_graph = |id: &ObjectId| self.commit_graph.as_ref().is_some_and(|graph| graph.lookup(id).is_some());
        self.read().is_some_and(|table| tips.iter().all(|id| table.numbers.contains_key(id) || in_graph(id)))
    }

    /// The table, read-locked, when it is this call's epoch (a concurrent call may have started it again for
    /// another shallow boundary or other replacements: then this call uses none of it).
    fn read(&self) -> Option<RwLockReadGuard<'_, Table>> {
        let table = self.shared.table.read().unwrap_or_else(PoisonError::into_inner);
        (table.epoch == self.epoch).then_some(table)
    }

    /// The depth-first numbering: a commit is numbered once all its parents are. Returns the new numbers and whether
    /// every commit below the tips was found.
    fn fill(
        &self,
        repo: &gix::Repository,
        shallow: &Shallow,
        known: &gix::hashtable::HashMap<ObjectId, u32>,
        tips: &[ObjectId],
    ) -> Result<(HashMap<ObjectId, u32>, bool)> {
        let graph_number = |id: &ObjectId| {
            let graph = self.commit_graph.as_ref()?;
            graph.lookup(id).map(|pos| graph.commit_at(pos).generation())
        };
        let mut fresh: HashMap<ObjectId, u32> = HashMap::new();
        let mut missing: std::collections::HashSet<ObjectId> = std::collections::HashSet::new();
        let mut reader = repo.revision_graph::<()>(self.commit_graph.as_ref());
        // Each frame: a commit, and its parents once read.
        let mut stack: Vec<(ObjectId, Option<Vec<ObjectId>>)> = tips.iter().map(|id| (*id, None)).collect();
        while let Some((id, parents)) = stack.last_mut() {
            let id = *id;
            if fresh.contains_key(&id) || known.contains_key(&id) || missing.contains(&id) {
                stack.pop();
                continue;
            }
            if let Some(parents) = parents.take() {
                let highest = parents
                    .iter()
                    .filter_map(|parent| {
                        fresh.get(parent).or_else(|| known.get(parent)).copied().or_else(|| graph_number(parent))
                    })
                    .max()
                    .unwrap_or(0);
                fresh.insert(id, highest.saturating_add(1));
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
            let read: Vec<ObjectId> = if shallow.is_boundary(&id) {
                Vec::new()
            } else {
                commit.iter_parents().collect::<std::result::Result<_, _>>().map_err(|err| Error::git("commit", err))?
            };
            let pending: Vec<ObjectId> = read
                .iter()
                .filter(|parent| {
                    !fresh.contains_key(*parent)
                        && !known.contains_key(*parent)
                        && !missing.contains(*parent)
                        && graph_number(parent).is_none()
                })
                .copied()
                .collect();
            *parents = Some(read);
            stack.extend(pending.into_iter().map(|parent| (parent, None)));
        }
        Ok((fresh, missing.is_empty()))
    }
}

/// Numbers, on a thread of its own, the commits below `tips` that neither the table nor the commit-graph knows, so
/// that a count asked for later finds them numbered (a call that needs them meanwhile waits for this thread instead
/// of reading the history a second time). Nothing is started when every tip is known already, and the thread numbers
/// nothing when `needless` (run on it first) says the count will not need the numbers; a failure is left for the
/// count itself to report.
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

/// The generation numbers of one walk: the table (read-locked while the walk runs) and the numbers the call made
/// without keeping them.
pub(crate) struct Known<'a> {
    table: Option<RwLockReadGuard<'a, Table>>,
    fresh: HashMap<ObjectId, u32>,
}

impl Known<'_> {
    /// The generation number of `id`: `from_graph` (what the commit-graph says, when it holds the commit), else the
    /// engine's; `None` only for a commit below no tip given to [`Generations::number`].
    pub(crate) fn of(&self, id: &ObjectId, from_graph: Option<u32>) -> Option<u32> {
        from_graph.or_else(|| {
            self.fresh.get(id).or_else(|| self.table.as_ref().and_then(|table| table.numbers.get(id))).copied()
        })
    }
}

/// What gix's parents depend on besides the commits themselves: the shallow boundary and the object replacements
/// (when gix honours them), as a [`Fingerprint`].
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

/// Commits numbered by reading them since the process started (see [`crate::ancestry::numbered_commits`]).
pub(crate) fn numbered() -> u64 {
    NUMBERED.load(Ordering::Relaxed)
}

/// Drops every table held in memory (see [`crate::ancestry::forget_generation_tables`]).
pub(crate) fn forget() {
    tables().invalidate_all();
}

/// The file `common_dir`'s table is saved in, when tables are saved.
pub(crate) fn saved_file(common_dir: &Path) -> Option<PathBuf> {
    saved::path_of(common_dir)
}
