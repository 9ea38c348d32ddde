//! The [`Engine`]: the single owner of per-process state, and the entry point of every tool's read
//! logic.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::cache::{self, Cache, CallState, Reader};
use crate::error::Result;
use crate::facets::Facet;
use crate::fleet;
use crate::interrupt::Interrupt;
use crate::repository::{self, Location};

/// Validated engine configuration.
#[derive(Debug, Clone)]
pub struct Options {
    /// Canonical directories under which repositories may be opened (design.md#roots).
    pub allowed_roots: Vec<PathBuf>,
}

/// The context engine: resolution, the facet and answer caches with their watcher, and every tool's
/// read. Shared by reference; `Send + Sync`, and safe for concurrent callers (two calls needing the
/// same facet compute it once).
#[derive(Debug)]
pub struct Engine {
    options: Options,
    pub(crate) cache: Cache,
    pub(crate) agents: crate::agents::Detector,
    /// The fleet registry's writer of repositories seen in calls, when the engine keeps a registry
    /// ([`Engine::with_registry`]).
    registry: Option<fleet::registry::SeenWriter>,
    /// The commit indexes, when the engine keeps them ([`Engine::with_index`]).
    index: Option<Arc<crate::commit_index::Store>>,
    /// The ref and reflog movements of the repositories read (kept under the index dir too with
    /// [`Engine::with_index`]).
    movements: crate::commit_index::movements::Store,
    /// Repository roots already recorded in the registry by this engine (each is written once per
    /// process).
    recorded: Mutex<HashSet<PathBuf>>,
    /// Where the paths fleet calls named resolved to, by canonical path (at most
    /// [`KNOWN_LOCATIONS`]): a warm fleet call finds each repository's cached answer without
    /// opening it with gix.
    locations: Mutex<HashMap<PathBuf, Location>>,
    /// History walks kept between calls (`repo.history` pages, `repo.scope`'s recent commits and
    /// churn).
    pub(crate) walks: crate::walks::Walks,
    /// `diff.semantic`'s parses, by blob id and language.
    pub(crate) semantic: crate::diff::parses::Cache,
    /// Repositories opened by [`Engine::resolve`] and its siblings since start
    /// ([`Engine::opened`]).
    opened: std::sync::atomic::AtomicU64,
    /// Set when the engine saves generation tables ([`Engine::with_generation_tables`]): dropped
    /// last, it waits for their writes.
    generation_tables: Option<GenerationTables>,
}

/// Waits, when dropped, for the generation tables queued for writing (so that a process ending at
/// end of input leaves them saved for the next one).
#[derive(Debug)]
struct GenerationTables;

impl Drop for GenerationTables {
    fn drop(&mut self) {
        crate::ancestry::flush_generation_tables();
    }
}

/// Resolved fleet paths the engine remembers at most (the memo is emptied when full): twice the
/// fleet's 500.
const KNOWN_LOCATIONS: usize = 1000;

/// A repository resolved by [`Engine::resolve`]: where it is, and an open gix handle (no filter
/// drivers).
pub struct Repo {
    /// Canonical locations, all inside an allowed root.
    pub location: Location,
    pub(crate) git: gix::Repository,
    pub(crate) call: CallState,
    /// The caller's cancellation flag, checked by the long reads ([`crate::interrupt`]); never
    /// triggered unless the caller set one with [`Repo::with_interrupt`].
    pub(crate) interrupt: Interrupt,
}

impl Repo {
    /// The same repository, read under `interrupt`: a long read through it stops with
    /// [`crate::Error::Cancelled`] once `interrupt` is triggered.
    #[must_use]
    pub fn with_interrupt(self, interrupt: Interrupt) -> Self {
        Self { interrupt, ..self }
    }
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo").field("location", &self.location).finish_non_exhaustive()
    }
}

impl Engine {
    /// Creates an engine with `options` and the default cache (on, watched,
    /// [`cache::DEFAULT_CAPACITY_BYTES`]).
    pub fn new(options: Options) -> Self {
        Self::with_cache(options, cache::Options::default())
    }

    /// Creates an engine with `options` and the cache configured by `cache`. The watcher starts
    /// with the first repository resolved.
    pub fn with_cache(options: Options, cache: cache::Options) -> Self {
        Self {
            options,
            cache: Cache::new(cache),
            agents: crate::agents::Detector::default(),
            registry: None,
            index: None,
            movements: crate::commit_index::movements::Store::default(),
            recorded: Mutex::new(HashSet::new()),
            locations: Mutex::new(HashMap::new()),
            walks: crate::walks::Walks::default(),
            semantic: crate::diff::parses::Cache::default(),
            opened: std::sync::atomic::AtomicU64::new(0),
            generation_tables: None,
        }
    }

    /// How many times this engine opened a repository with gix since it started (every
    /// [`Engine::resolve`] that found one opens it): for tests and benchmarks, e.g. that a call
    /// opens its repository once.
    pub fn opened(&self) -> u64 {
        self.opened.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Keeps the fleet registry in `file` (`<run dir>/fleet/registry.json` for the sidecar): every
    /// repository a call resolves is recorded there as `seen` (once per process, written by a
    /// thread of its own, off the call's path: see [`Engine::flush_registry`]), and fleet calls
    /// without a list read it.
    #[must_use]
    pub fn with_registry(mut self, file: PathBuf) -> Self {
        self.registry = Some(fleet::registry::SeenWriter::new(file));
        self
    }

    /// Waits until every repository this engine recorded as seen is written to the registry file.
    /// Fleet calls that read the registry do it first; dropping the engine does it too. For tests
    /// and tools that read the file while the engine runs.
    pub fn flush_registry(&self) {
        if let Some(writer) = &self.registry {
            writer.flush();
        }
    }

    /// Keeps the commit indexes under `dir` (`<run dir>/index` for the sidecar; see
    /// [`crate::commit_index`]), and the ref and reflog movements under `dir/movements`
    /// ([`crate::commit_index::movements`]). Without it `repo.search` walks the history on every
    /// call and movements are kept in memory only.
    #[must_use]
    pub fn with_index(mut self, dir: PathBuf) -> Self {
        self.movements = crate::commit_index::movements::Store::new(Some(dir.join("movements")));
        let store = Arc::new(crate::commit_index::Store::new(dir));
        store.start_feed();
        let fed = Arc::downgrade(&store);
        // The watcher reports branch and HEAD moves: the feed thread updates the index before the next call needs it.
        self.cache.on_tips_moved(crate::cache::TipsHook(Arc::new(move |common_dir: &Path| {
            if let Some(store) = fed.upgrade() {
                store.refresh_soon(common_dir);
            }
        })));
        self.index = Some(store);
        self
    }

    /// Saves the generation tables ahead/behind counts number commits with under `dir`
    /// (`<run dir>/generations` for the sidecar; see
    /// [`crate::ancestry::keep_generation_tables_in`], process-wide), so that a new process on a
    /// repository without a commit-graph loads them instead of reading the whole history again.
    /// Dropping the engine waits for the tables queued for writing.
    #[must_use]
    pub fn with_generation_tables(mut self, dir: PathBuf) -> Self {
        crate::ancestry::keep_generation_tables_in(Some(dir));
        self.generation_tables = Some(GenerationTables);
        self
    }

    /// The ref and reflog movements store.
    pub(crate) fn movement_store(&self) -> &crate::commit_index::movements::Store {
        &self.movements
    }

    /// Whether `repo`'s commit index is open in this process and holds exactly its current branch
    /// tips and HEAD, without updating it: did the watcher-fed update run before any call needed
    /// it? For tests and benchmarks.
    pub fn index_is_current(&self, repo: &Repo) -> bool {
        self.index().is_some_and(|store| store.is_current(&repo.git, &repo.location.common_dir))
    }

    /// Updates of the commit indexes the watcher asked for and the feed thread ran (for tests and
    /// benchmarks).
    pub fn index_refreshes(&self) -> u64 {
        self.index().map_or(0, crate::commit_index::Store::refreshes)
    }

    /// The commit indexes, if any.
    pub(crate) fn index(&self) -> Option<&crate::commit_index::Store> {
        self.index.as_deref()
    }

    /// Commits the kept history walks ([`crate::history`], [`crate::scope`]) took from their queues
    /// since the engine started: a measure of walking work, for tests and benchmarks.
    pub fn walked_commits(&self) -> u64 {
        self.walks.walked()
    }

    /// The fleet registry file, if any.
    pub fn registry_file(&self) -> Option<&Path> {
        self.registry.as_ref().map(fleet::registry::SeenWriter::file)
    }

    /// The cache's and watcher's counters since start (for `doctor`).
    pub fn cache_stats(&self) -> cache::Stats {
        self.cache.stats()
    }

    /// How the cache serves `repo` (what `repo.brief` reports as `diagnostics`), once its watches
    /// are in place: the first time a repository is seen they are added in the background (calls
    /// read fresh meanwhile); this waits for that, at most 30 s.
    pub fn cache_diagnostics(&self, repo: &Repo) -> cache::Diagnostics {
        self.cache.settle(&repo.call, std::time::Duration::from_secs(30));
        self.cache.diagnostics(&repo.call)
    }

    /// A tool's rendered answer for `repo`, from memory when none of the facets it `reads` changed
    /// since it was rendered (`None`: it depends on everything, any event invalidates it), else
    /// rendered by `render`. Only `Ok` answers are kept. `variant` must name the tool and hold
    /// every input besides the repository (arguments, the caller's path); `weight` estimates an
    /// answer's size in bytes for the cache's bound. A warm answer of an unchanged repository is
    /// one lookup and one clone.
    ///
    /// # Errors
    /// Whatever `render` returns.
    pub fn answer<V: Clone + Send + Sync + 'static, E>(
        &self,
        repo: &Repo,
        variant: &str,
        reads: Option<&[Facet]>,
        weight: impl Fn(&V) -> usize,
        render: impl FnOnce() -> std::result::Result<V, E>,
    ) -> std::result::Result<V, E> {
        self.cache.answer(&repo.call, &repo.location, variant, reads, weight, render)
    }

    pub(crate) fn facets<'a>(&'a self, repo: &'a Repo) -> Reader<'a> {
        Reader::cached(&repo.git, &self.cache, &repo.call, &repo.location)
    }

    /// The allowed roots in force.
    pub fn allowed_roots(&self) -> &[PathBuf] {
        &self.options.allowed_roots
    }

    /// Resolves and opens the repository containing `repo_path` (design.md#roots).
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] with `invalid_path`, `not_found`, `outside_allowed_roots` or
    /// `not_a_repository`.
    pub fn resolve(&self, repo_path: &str) -> Result<Repo> {
        let repo = self.resolve_unrecorded(repo_path)?;
        self.record_seen(&repo.location.root);
        Ok(repo)
    }

    /// [`Engine::resolve`] without recording the repository in the registry (fleet calls and
    /// `fleet add`).
    ///
    /// # Errors
    /// As [`Engine::resolve`].
    pub fn resolve_unrecorded(&self, repo_path: &str) -> Result<Repo> {
        let (location, git) = repository::resolve(repo_path, &self.options.allowed_roots)?;
        self.opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let call = self.cache.call(&location);
        Ok(Repo { location, git, call, interrupt: Interrupt::new() })
    }

    /// Resolves `repo_path` for a fleet call whose freshness barrier already ran
    /// ([`Cache::shared_barrier`] gave `barrier`), not recording it in the registry, and remembers
    /// where it led for [`Engine::known_location`].
    ///
    /// # Errors
    /// As [`Engine::resolve`].
    pub(crate) fn resolve_for_fleet(&self, repo_path: &str, barrier: Option<bool>) -> Result<Repo> {
        let (location, git) = repository::resolve(repo_path, &self.options.allowed_roots)?;
        self.opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let call = self.cache.call_after_barrier(&location, barrier);
        let mut known = self.locations.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if known.len() >= KNOWN_LOCATIONS {
            known.clear();
        }
        known.insert(location.requested.clone(), location.clone());
        drop(known);
        Ok(Repo { location, git, call, interrupt: Interrupt::new() })
    }

    /// Where an earlier fleet call resolved `repo_path`, when the path is still absolute and
    /// canonicalises to the same place (symlinks are followed anew each time), with this call's
    /// cache state. Whether the repository is still there and unchanged is the cache's business:
    /// any change or removal gives it a new tag, so a lookup under the old one misses.
    pub(crate) fn known_location(&self, repo_path: &str, barrier: Option<bool>) -> Option<(Location, CallState)> {
        if !Path::new(repo_path).is_absolute() || repo_path.chars().any(char::is_control) {
            return None;
        }
        let canonical = Path::new(repo_path).canonicalize().ok()?;
        let location =
            self.locations.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&canonical).cloned()?;
        let call = self.cache.call_after_barrier(&location, barrier);
        Some((location, call))
    }

    /// [`Cache::cached_answer`]: the answer `variant` of a known location, from memory only.
    pub(crate) fn cached_answer<V: Clone + Send + Sync + 'static>(
        &self,
        location: &Location,
        call: &CallState,
        variant: &str,
    ) -> Option<V> {
        self.cache.cached_answer(call, location, variant, None)
    }

    /// [`Cache::shared_barrier`].
    pub(crate) fn shared_barrier(&self) -> Option<bool> {
        self.cache.shared_barrier()
    }

    /// Queues `root` to be recorded in the registry as seen, the first time this engine resolves
    /// it; the writer thread rewrites the file, so the call does not wait for it. A registry that
    /// cannot be read or written is left alone (logged by nobody: the call must not fail for it).
    fn record_seen(&self, root: &Path) {
        let Some(writer) = &self.registry else { return };
        if !self.recorded.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(root.to_path_buf()) {
            return;
        }
        writer.record(root, fluxgit_contract::now_ms_i64());
    }

    /// Resolves a revision argument to a full commit sha (see [`crate::revision::resolve_commit`]).
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] with `invalid_revision` or `unknown_revision`.
    pub fn resolve_commit(&self, repo: &Repo, spec: &str) -> Result<String> {
        crate::revision::resolve_commit(&repo.git, spec).map(|id| id.to_string())
    }
}
