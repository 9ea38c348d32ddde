//! The engine's caches (design.md#engine): facets and rendered answers held in memory, bounded by
//! weight, and kept fresh by one watcher for every repository the engine has seen.
//!
//! Every cached value is stored under its key *and a tag*: for a watched repository the tag is made
//! of generation counters that the watcher bumps for each event (one counter per facet, see
//! [`paths`]); for a repository served stat-validated it is a fingerprint of its git-dir files
//! ([`fingerprint`]). A lookup computes the tag the current state gives, so an invalidated value is
//! simply never found again and ages out of the bounded cache. Before the first lookup of a call, a
//! barrier makes sure every event queued before the call began has been applied
//! ([`watch::Watcher::barrier`]); the argument is in docs/internals.md ("The cache and its
//! freshness").

pub(crate) mod fingerprint;
pub use fingerprint::RACY_WINDOW;
pub(crate) mod paths;
#[cfg(target_os = "linux")]
pub(crate) mod watch;

use std::any::Any;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::facets::{Facet, FacetKey};
use crate::repository::Location;
use paths::{BITS, FacetSet};

/// The variable that turns the watcher off (any value, empty included: design.md#transport), read
/// by the sidecar's configuration and passed in as [`Options::watch`].
pub const WATCH_DISABLED_VAR: &str = "FLUXGIT_ENGINE_WATCH_DISABLED";
/// Default weight bound: 64 MiB, room for the facets and answers of 200 repositories of a few
/// thousand files each.
pub const DEFAULT_CAPACITY_BYTES: u64 = 64 * 1024 * 1024;
/// How long a call waits for the watcher to catch up before it reads fresh instead.
pub const BARRIER_TIMEOUT: Duration = Duration::from_secs(1);
/// How long the watches of a newly seen repository wait for the call that first saw it to end:
/// adding them (one watch and one directory listing per directory) would otherwise compete with
/// that call's own read, which is fresh anyway. After this they are added all the same.
pub const REGISTRATION_HOLD: Duration = Duration::from_secs(2);
/// How long after the call that first saw a repository has ended its watches still wait: that
/// call's answer is then still being serialised and written to the client by other threads, which a
/// registration started at once (one watch and one listing per directory: 100,000 files take a few
/// milliseconds of CPU) would compete with for the processor. A registration waited on (see
/// [`RepoState::wait_settled`]) does not wait for this.
pub const ANSWER_GRACE: Duration = Duration::from_millis(25);

/// Cache configuration (see [`crate::Engine::with_cache`]).
#[derive(Debug, Clone)]
pub struct Options {
    /// `false`: nothing is cached, every call reads the repository (the oracle of the freshness
    /// tests).
    pub enabled: bool,
    /// Upper bound of the cached facets and answers together, in bytes (approximate: each value
    /// weighs the size of its JSON). Default [`DEFAULT_CAPACITY_BYTES`].
    pub capacity_bytes: u64,
    /// Watch repositories with inotify (Linux). `false` ([`WATCH_DISABLED_VAR`] set) serves every
    /// repository stat-validated.
    pub watch: bool,
    /// Test knob: the watcher adds at most this many inotify watches, then behaves as if the
    /// kernel's `max_user_watches` were reached.
    pub watch_limit: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Self { enabled: true, capacity_bytes: DEFAULT_CAPACITY_BYTES, watch: true, watch_limit: None }
    }
}

/// How the cache serves one repository, as `repo.brief` reports it in `diagnostics`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostics {
    /// `watched`: answers come from memory, invalidated by filesystem events; `stat-validated`:
    /// git-dir facets are checked against file metadata and the work-tree status is read on every
    /// call; `off`: nothing is cached.
    pub cache: &'static str,
    /// Why the repository is not watched (absent when it is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Counters of the cache and its watcher since the engine started (shown by `doctor`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// `running`, `not started` (no repository seen yet), `disabled` or `unavailable: <why>`.
    pub watcher: String,
    /// Repositories the engine has seen.
    pub repositories: usize,
    /// Of those, served from watched caches.
    pub watched: usize,
    /// Of those, served stat-validated (watching disabled, or a watch could not be added).
    pub fallbacks: usize,
    /// inotify watches in place.
    pub watches: usize,
    /// Filesystem events applied.
    pub events: u64,
    /// Generation counters moved by events (one per facet an event could change).
    pub invalidations: u64,
    /// Kernel queue overflows (each invalidates everything).
    pub overflows: u64,
    /// Watches removed by the kernel (their directory deleted or unmounted).
    pub lost_watches: u64,
    /// Barriers run (each read the event queue to its end), those of them that first waited for
    /// another thread reading it, and barriers that timed out waiting.
    pub barriers: u64,
    /// See [`Stats::barriers`].
    pub barriers_shared: u64,
    /// See [`Stats::barriers`].
    pub barrier_timeouts: u64,
    /// Facet and answer lookups served from memory.
    pub hits: u64,
    /// Facet and answer lookups computed.
    pub misses: u64,
    /// Approximate bytes held by the caches.
    pub weight_bytes: u64,
}

/// Counters shared with the watcher thread.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) events: AtomicU64,
    pub(crate) invalidations: AtomicU64,
    pub(crate) overflows: AtomicU64,
    pub(crate) lost_watches: AtomicU64,
    pub(crate) errors: AtomicU64,
    pub(crate) barriers: AtomicU64,
    pub(crate) barriers_shared: AtomicU64,
    pub(crate) barrier_timeouts: AtomicU64,
    pub(crate) hits: AtomicU64,
    pub(crate) misses: AtomicU64,
}

/// What the engine knows of one repository (one common dir, all its worktrees).
#[derive(Debug)]
pub(crate) struct RepoState {
    /// Distinguishes this state's tags from those of an earlier state of the same repository.
    epoch: u64,
    generations: [AtomicU64; BITS],
    /// `None` while watched; the reason when served stat-validated.
    fallback: Mutex<Option<String>>,
    /// Set when a watched top directory went away: the repository is watched anew at its next call.
    lost: AtomicBool,
    work_trees: Mutex<Vec<PathBuf>>,
    /// Where the background registration of its watches stands.
    phase: Mutex<Phase>,
    /// Notified whenever [`RepoState::phase`] changes.
    phase_changed: Condvar,
}

/// The background registration of a repository's watches.
#[derive(Debug, Default, Clone, Copy)]
struct Phase {
    /// `true` while its watches are being added in the background: calls read fresh meanwhile.
    pending: bool,
    /// `true` while the call that first saw the repository runs: the registration waits for it (at
    /// most [`REGISTRATION_HOLD`]).
    held: bool,
    /// When that call ended (its hold was released), if it did: the registration waits until
    /// [`ANSWER_GRACE`] after it.
    released: Option<std::time::Instant>,
}

impl RepoState {
    fn new(epoch: u64) -> Self {
        Self {
            epoch,
            generations: std::array::from_fn(|_| AtomicU64::new(0)),
            fallback: Mutex::new(None),
            lost: AtomicBool::new(false),
            work_trees: Mutex::new(Vec::new()),
            phase: Mutex::new(Phase::default()),
            phase_changed: Condvar::new(),
        }
    }

    fn is_pending(&self) -> bool {
        lock(&self.phase).pending
    }

    /// Changes the phase with `change` and wakes whoever waits on it.
    fn update(&self, change: impl FnOnce(&mut Phase)) {
        change(&mut lock(&self.phase));
        self.phase_changed.notify_all();
    }

    /// Waits (at most `timeout`) while `blocked` holds for the phase.
    fn wait_while(&self, timeout: Duration, blocked: impl FnMut(&mut Phase) -> bool) {
        let phase = lock(&self.phase);
        drop(match self.phase_changed.wait_timeout_while(phase, timeout, blocked) {
            Ok((guard, _)) => guard,
            Err(poisoned) => poisoned.into_inner().0,
        });
    }

    /// Waits until [`ANSWER_GRACE`] has passed since the call that first saw the repository ended,
    /// so that its answer is written before the watches are added; returns at once when nobody held
    /// the registration back, or when someone waits for the watches ([`RepoState::wait_settled`]).
    fn wait_for_answer(&self) {
        let mut phase = lock(&self.phase);
        while let Some(left) = phase.released.and_then(|released| ANSWER_GRACE.checked_sub(released.elapsed())) {
            phase = match self.phase_changed.wait_timeout(phase, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// Waits (at most `timeout`) until the background registration of its watches has finished.
    fn wait_settled(&self, timeout: Duration) {
        // Whoever waits for the watches does not hold them back, nor lets them wait for an answer to be written.
        self.update(|phase| {
            phase.held = false;
            phase.released = None;
        });
        self.wait_while(timeout, |phase| phase.pending);
    }

    /// Moves the generation counter of every facet in `facets`.
    pub(crate) fn bump(&self, facets: FacetSet, counters: &Counters) {
        let mut moved = 0;
        for bit in facets.bits() {
            self.generations[bit].fetch_add(1, Ordering::SeqCst);
            moved += 1;
        }
        counters.invalidations.fetch_add(moved, Ordering::Relaxed);
    }

    /// Serves the repository stat-validated from now on.
    pub(crate) fn fall_back(&self, reason: &str, _counters: &Counters) {
        let mut fallback = lock(&self.fallback);
        if fallback.is_none() {
            *fallback = Some(reason.to_owned());
        }
    }

    /// Marks the repository for watching anew.
    pub(crate) fn lose(&self, reason: &str) {
        self.lost.store(true, Ordering::SeqCst);
        let mut fallback = lock(&self.fallback);
        if fallback.is_none() {
            *fallback = Some(reason.to_owned());
        }
    }

    fn fallback_reason(&self) -> Option<String> {
        lock(&self.fallback).clone()
    }

    /// The tag of a value depending on `facets`: the epoch and their generations.
    fn tag(&self, facets: FacetSet) -> u64 {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.epoch.hash(&mut hasher);
        for bit in facets.bits() {
            (bit, self.generations[bit].load(Ordering::SeqCst)).hash(&mut hasher);
        }
        hasher.finish()
    }
}

/// A cached value with its weight.
#[derive(Clone)]
struct Entry {
    value: Arc<dyn Any + Send + Sync>,
    weight: u32,
}

/// Per-call cache state of a resolved repository (inside [`crate::Repo`]).
#[derive(Debug, Default)]
pub(crate) struct CallState {
    repo: Option<Arc<RepoState>>,
    /// Whether the barrier of this call succeeded (run once, at the first lookup).
    barrier: OnceLock<bool>,
    /// The stat fingerprint of this call (stat-validated repositories).
    fingerprint: OnceLock<Option<u64>>,
    /// Set on the call that first saw its repository: releases the held-back registration when the
    /// call ends.
    _hold: Option<Hold>,
}

/// Releases [`RepoState::hold`] when dropped.
#[derive(Debug)]
struct Hold(Arc<RepoState>);

impl Drop for Hold {
    fn drop(&mut self) {
        self.0.update(|phase| {
            phase.held = false;
            phase.released = Some(std::time::Instant::now());
        });
    }
}

/// The engine's caches and watcher.
pub(crate) struct Cache {
    options: Options,
    facets: moka::sync::Cache<(FacetKey, u64), Entry>,
    answers: moka::sync::Cache<(PathBuf, String, u64), Entry>,
    repos: Mutex<HashMap<PathBuf, Arc<RepoState>>>,
    epochs: AtomicU64,
    #[cfg(target_os = "linux")]
    watcher: OnceLock<std::result::Result<Arc<watch::Watcher>, String>>,
    /// Registrations for the background thread that adds watches (started with the watcher).
    #[cfg(target_os = "linux")]
    registrations: OnceLock<std::sync::mpsc::Sender<Registration>>,
    counters: Arc<Counters>,
    /// Told the common dir of a watched repository whose branch or HEAD moved (the commit index's
    /// feed).
    tips_hook: OnceLock<TipsHook>,
}

/// A callback told the common dir of a watched repository whose branch or HEAD moved; called on the
/// watcher thread, so it must return at once.
#[derive(Clone)]
pub(crate) struct TipsHook(pub(crate) Arc<dyn Fn(&Path) + Send + Sync>);

impl std::fmt::Debug for TipsHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TipsHook")
    }
}

/// A repository (or one more work tree of it) to watch, for the registration thread.
#[cfg(target_os = "linux")]
struct Registration {
    state: Arc<RepoState>,
    common_dir: Option<PathBuf>,
    work_tree: Option<PathBuf>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache").field("options", &self.options).finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The facets every answer depends on when its tool names none: all of them and the catch-all
/// counter.
const EVERYTHING: FacetSet = FacetSet::ALL;
/// Facets never cached for a stat-validated repository: they depend on the work tree, which has no
/// cheap stamp.
const WORK_TREE: FacetSet = FacetSet::of(&[Facet::WorkTreeStatus, Facet::Submodules]);

impl Cache {
    pub(crate) fn new(options: Options) -> Self {
        let capacity = options.capacity_bytes;
        // Half of the weight for each cache: answers are small, facets (a big status) can be large.
        Self {
            facets: moka::sync::Cache::builder()
                .max_capacity(capacity / 2)
                .weigher(|_: &(FacetKey, u64), entry: &Entry| entry.weight)
                .build(),
            answers: moka::sync::Cache::builder()
                .max_capacity(capacity / 2)
                .weigher(|_: &(PathBuf, String, u64), entry: &Entry| entry.weight)
                .build(),
            repos: Mutex::new(HashMap::new()),
            epochs: AtomicU64::new(0),
            #[cfg(target_os = "linux")]
            watcher: OnceLock::new(),
            #[cfg(target_os = "linux")]
            registrations: OnceLock::new(),
            counters: Arc::new(Counters::default()),
            tips_hook: OnceLock::new(),
            options,
        }
    }

    /// Sets the callback the watcher calls when a branch or HEAD of a watched repository moves
    /// (once; before the first repository is resolved, since the watcher starts with it).
    pub(crate) fn on_tips_moved(&self, hook: TipsHook) {
        let _ = self.tips_hook.set(hook);
    }

    /// Registers the repository at `location` (watching it the first time it is seen) and returns
    /// the per-call state for [`crate::Repo`].
    pub(crate) fn call(&self, location: &Location) -> CallState {
        if !self.options.enabled {
            return CallState::default();
        }
        let work_tree = (location.root != location.git_dir).then_some(location.root.as_path());
        let mut repos = lock(&self.repos);
        let known = repos.get(&location.common_dir).filter(|state| !state.lost.load(Ordering::SeqCst)).cloned();
        let mut hold = None;
        let state = match known {
            Some(state) => {
                if let Some(work_tree) = work_tree
                    && !lock(&state.work_trees).iter().any(|known| known == work_tree)
                {
                    lock(&state.work_trees).push(work_tree.to_path_buf());
                    if state.fallback_reason().is_none() {
                        self.watch_work_tree(&state, work_tree);
                    }
                }
                state
            }
            None => {
                let epoch = self.epochs.fetch_add(1, Ordering::SeqCst);
                let state = Arc::new(RepoState::new(epoch));
                if let Some(work_tree) = work_tree {
                    lock(&state.work_trees).push(work_tree.to_path_buf());
                }
                state.update(|phase| phase.held = true);
                hold = Some(Hold(Arc::clone(&state)));
                self.watch(&state, &location.common_dir, work_tree);
                repos.insert(location.common_dir.clone(), Arc::clone(&state));
                state
            }
        };
        CallState { repo: Some(state), _hold: hold, ..CallState::default() }
    }

    #[cfg(target_os = "linux")]
    fn watcher(&self) -> std::result::Result<&Arc<watch::Watcher>, &str> {
        self.watcher
            .get_or_init(|| {
                watch::Watcher::start(
                    self.options.watch_limit,
                    Arc::clone(&self.counters),
                    self.tips_hook.get().cloned(),
                )
                .map(Arc::new)
                .map_err(|error| format!("the watcher cannot start: {error}"))
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// Queues a registration for the background thread, which adds the watches (a large work tree
    /// takes a while: one watch per directory) while calls read fresh; the repository is marked
    /// pending until it is done.
    #[cfg(target_os = "linux")]
    fn register(&self, registration: Registration) {
        let watcher = match self.watcher() {
            Ok(watcher) => Arc::clone(watcher),
            Err(reason) => {
                registration.state.fall_back(reason, &self.counters);
                return;
            }
        };
        let sender = self.registrations.get_or_init(|| {
            let (sender, receiver) = std::sync::mpsc::channel::<Registration>();
            // The thread ends when the cache (and so the sender) is dropped.
            let spawned = std::thread::Builder::new().name("fluxgit-watch-add".to_owned()).spawn(move || {
                for job in receiver {
                    job.state.wait_while(REGISTRATION_HOLD, |phase| phase.held);
                    job.state.wait_for_answer();
                    let outcome = match &job.common_dir {
                        Some(common_dir) => watcher.watch(&job.state, common_dir, job.work_tree.as_deref()),
                        None => {
                            job.work_tree.as_deref().map_or(Ok(()), |tree| watcher.watch_work_tree(&job.state, tree))
                        }
                    };
                    if let Err(error) = outcome {
                        job.state.fall_back(&error.to_string(), &Counters::default());
                    }
                    job.state.update(|phase| phase.pending = false);
                }
            });
            // Without the thread, the receiver is gone and every send below falls back to stat validation.
            drop(spawned);
            sender
        });
        registration.state.update(|phase| phase.pending = true);
        let state = Arc::clone(&registration.state);
        if sender.send(registration).is_err() {
            state.fall_back("the watch registration thread is gone", &self.counters);
            state.update(|phase| phase.pending = false);
        }
    }

    fn watch(&self, state: &Arc<RepoState>, common_dir: &Path, work_tree: Option<&Path>) {
        if !self.options.watch {
            state.fall_back(&format!("watching disabled ({WATCH_DISABLED_VAR})"), &self.counters);
            return;
        }
        #[cfg(target_os = "linux")]
        self.register(Registration {
            state: Arc::clone(state),
            common_dir: Some(common_dir.to_path_buf()),
            work_tree: work_tree.map(Path::to_path_buf),
        });
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (common_dir, work_tree);
            state.fall_back("no watcher on this platform", &self.counters);
        }
    }

    fn watch_work_tree(&self, state: &Arc<RepoState>, work_tree: &Path) {
        #[cfg(target_os = "linux")]
        self.register(Registration {
            state: Arc::clone(state),
            common_dir: None,
            work_tree: Some(work_tree.to_path_buf()),
        });
        #[cfg(not(target_os = "linux"))]
        let _ = (state, work_tree);
    }

    /// The tag a value depending on `facets` must carry to be served in this call, or `None` when
    /// it must be read fresh (caching off, the barrier timed out, a stat-validated repository and a
    /// work-tree facet, or git-dir files changed too recently to be trusted).
    fn tag(&self, call: &CallState, location: &Location, facets: FacetSet) -> Option<u64> {
        let state = call.repo.as_ref()?;
        if state.is_pending() {
            // Its watches are still being added: nothing is cached or served from memory yet.
            return None;
        }
        if state.fallback_reason().is_none() {
            #[cfg(target_os = "linux")]
            {
                let barrier = *call.barrier.get_or_init(|| match self.watcher() {
                    Ok(watcher) => watcher.barrier(BARRIER_TIMEOUT),
                    Err(_) => false,
                });
                // Checked after the barrier: a fallback found by the watcher meanwhile wins.
                if barrier && state.fallback_reason().is_none() {
                    return Some(state.tag(facets));
                }
            }
        }
        if facets.0 & WORK_TREE.0 != 0 {
            return None;
        }
        let fingerprint = *call.fingerprint.get_or_init(|| fingerprint::of(&location.git_dir, &location.common_dir));
        // Salted so that a fingerprint never equals a generation tag.
        fingerprint.map(|print| print ^ 0x5354_4154_5354_4154 ^ state.epoch)
    }

    /// Runs one freshness barrier for a call that reads many repositories (a fleet call): once it
    /// returns `true`, every event of every watched repository that happened before it has been
    /// applied, so the per-repository barriers can be skipped ([`Cache::call_after_barrier`]).
    /// `None` when there is no watcher (caching off, watching disabled, or it cannot start).
    pub(crate) fn shared_barrier(&self) -> Option<bool> {
        if !self.options.enabled || !self.options.watch {
            return None;
        }
        #[cfg(target_os = "linux")]
        {
            self.watcher().ok().map(|watcher| watcher.barrier(BARRIER_TIMEOUT))
        }
        #[cfg(not(target_os = "linux"))]
        None
    }

    /// [`Cache::call`] for a call whose barrier already ran ([`Cache::shared_barrier`] gave
    /// `barrier`).
    pub(crate) fn call_after_barrier(&self, location: &Location, barrier: Option<bool>) -> CallState {
        let call = self.call(location);
        if let Some(outcome) = barrier {
            // A fresh CallState has no barrier outcome yet, so this always takes.
            let _ = call.barrier.set(outcome);
        }
        call
    }

    /// The answer [`Cache::answer`] would serve from memory for `variant`, without computing
    /// anything: `None` on a miss or when the repository must be read fresh.
    pub(crate) fn cached_answer<V: Clone + Send + Sync + 'static>(
        &self,
        call: &CallState,
        location: &Location,
        variant: &str,
        reads: Option<&[Facet]>,
    ) -> Option<V> {
        let tag = self.tag(call, location, reads.map_or(EVERYTHING, FacetSet::of))?;
        let key = (location.git_dir.clone(), variant.to_owned(), tag);
        let value = self.answers.get(&key)?.value.downcast::<V>().ok()?;
        self.counters.hits.fetch_add(1, Ordering::Relaxed);
        Some((*value).clone())
    }

    /// Waits (at most `timeout`) until the repository of `call` has all its watches or has fallen
    /// back.
    pub(crate) fn settle(&self, call: &CallState, timeout: Duration) {
        if let Some(state) = &call.repo {
            state.wait_settled(timeout);
        }
    }

    /// How the repository of `call` is served (a repository whose watches are still being added
    /// counts as watched: it is read fresh meanwhile).
    pub(crate) fn diagnostics(&self, call: &CallState) -> Diagnostics {
        match &call.repo {
            None => Diagnostics { cache: "off", reason: Some("caching disabled".to_owned()) },
            Some(state) => match state.fallback_reason() {
                None => Diagnostics { cache: "watched", reason: None },
                Some(reason) => Diagnostics { cache: "stat-validated", reason: Some(reason) },
            },
        }
    }

    /// The facet `facet` of the repository, from memory when its tag allows, else read by `read`
    /// (once for concurrent callers of the same facet and tag).
    pub(crate) fn facet<T: Serialize + Send + Sync + 'static>(
        &self,
        call: &CallState,
        location: &Location,
        facet: Facet,
        read: impl FnOnce() -> Result<T>,
    ) -> Result<Arc<T>> {
        let Some(tag) = self.tag(call, location, FacetSet::of(&[facet])) else {
            self.counters.misses.fetch_add(1, Ordering::Relaxed);
            return read().map(Arc::new);
        };
        let repository = if facet.is_shared() { &location.common_dir } else { &location.git_dir };
        let key = (FacetKey { repository: repository.clone(), facet }, tag);
        let mut computed = false;
        let entry = self
            .facets
            .try_get_with(key, || {
                computed = true;
                read().map(|value| Entry { weight: weigh(&value), value: Arc::new(value) })
            })
            .map_err(|error: Arc<Error>| (*error).clone())?;
        let counter = if computed { &self.counters.misses } else { &self.counters.hits };
        counter.fetch_add(1, Ordering::Relaxed);
        entry.value.downcast::<T>().map_err(|_| Error::git_text("the cache", "a facet was stored with another type"))
    }

    /// Whether `facet` is in memory for the repository's current state (a lookup that computes
    /// nothing).
    pub(crate) fn holds(&self, call: &CallState, location: &Location, facet: Facet) -> bool {
        let Some(tag) = self.tag(call, location, FacetSet::of(&[facet])) else { return false };
        let repository = if facet.is_shared() { &location.common_dir } else { &location.git_dir };
        self.facets.contains_key(&(FacetKey { repository: repository.clone(), facet }, tag))
    }

    /// A rendered answer, from memory when the facets it `reads` (every facet when `None`) are
    /// unchanged, else computed by `compute`; only `Ok` answers are kept. `variant` must hold every
    /// input besides the repository.
    pub(crate) fn answer<V: Clone + Send + Sync + 'static, E>(
        &self,
        call: &CallState,
        location: &Location,
        variant: &str,
        reads: Option<&[Facet]>,
        weight: impl Fn(&V) -> usize,
        compute: impl FnOnce() -> std::result::Result<V, E>,
    ) -> std::result::Result<V, E> {
        let facets = reads.map_or(EVERYTHING, FacetSet::of);
        let Some(tag) = self.tag(call, location, facets) else {
            self.counters.misses.fetch_add(1, Ordering::Relaxed);
            return compute();
        };
        let key = (location.git_dir.clone(), variant.to_owned(), tag);
        if let Some(value) = self.answers.get(&key).and_then(|entry| entry.value.downcast::<V>().ok()) {
            self.counters.hits.fetch_add(1, Ordering::Relaxed);
            return Ok((*value).clone());
        }
        self.counters.misses.fetch_add(1, Ordering::Relaxed);
        let value = compute()?;
        let weight = u32::try_from(weight(&value).saturating_add(key.1.len() + 64)).unwrap_or(u32::MAX);
        self.answers.insert(key, Entry { value: Arc::new(value.clone()), weight });
        Ok(value)
    }

    /// Counters and state for `doctor`.
    pub(crate) fn stats(&self) -> Stats {
        let repos = lock(&self.repos);
        let fallbacks = repos.values().filter(|state| state.fallback_reason().is_some()).count();
        let pending = repos.values().filter(|state| state.is_pending()).count();
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        self.facets.run_pending_tasks();
        self.answers.run_pending_tasks();
        #[cfg(target_os = "linux")]
        let (watcher, watches) = match self.watcher.get() {
            _ if !self.options.enabled => ("disabled (caching off)".to_owned(), 0),
            _ if !self.options.watch => (format!("disabled ({WATCH_DISABLED_VAR})"), 0),
            None => ("not started (no repository seen yet)".to_owned(), 0),
            Some(Ok(watcher)) => ("running".to_owned(), watcher.watch_count()),
            Some(Err(reason)) => (format!("unavailable: {reason}"), 0),
        };
        #[cfg(not(target_os = "linux"))]
        let (watcher, watches) = ("unavailable on this platform".to_owned(), 0);
        Stats {
            watcher,
            repositories: repos.len(),
            watched: repos.len().saturating_sub(fallbacks + pending),
            fallbacks,
            watches,
            events: load(&self.counters.events),
            invalidations: load(&self.counters.invalidations),
            overflows: load(&self.counters.overflows),
            lost_watches: load(&self.counters.lost_watches),
            barriers: load(&self.counters.barriers),
            barriers_shared: load(&self.counters.barriers_shared),
            barrier_timeouts: load(&self.counters.barrier_timeouts),
            hits: load(&self.counters.hits),
            misses: load(&self.counters.misses),
            weight_bytes: self.facets.weighted_size() + self.answers.weighted_size(),
        }
    }
}

/// The weight of a value: the length of its JSON (a fair proxy of its heap size), at least 64
/// bytes.
fn weigh<T: Serialize>(value: &T) -> u32 {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, value);
    u32::try_from(counter.0.saturating_add(64)).unwrap_or(u32::MAX)
}

/// Where tool reads get their facets: straight from the repository, or through the engine's cache.
pub(crate) struct Reader<'a> {
    git: &'a gix::Repository,
    cached: Option<(&'a Cache, &'a CallState, &'a Location)>,
}

impl<'a> Reader<'a> {
    /// Reads every facet from `git`.
    pub(crate) fn direct(git: &'a gix::Repository) -> Self {
        Self { git, cached: None }
    }

    /// Reads facets through `cache`.
    pub(crate) fn cached(
        git: &'a gix::Repository,
        cache: &'a Cache,
        call: &'a CallState,
        location: &'a Location,
    ) -> Self {
        Self { git, cached: Some((cache, call, location)) }
    }

    /// The repository.
    pub(crate) fn git(&self) -> &'a gix::Repository {
        self.git
    }

    /// A value derived from the repository's state that only the facets in `reads` can change (a
    /// part of a tool's answer), from the answer cache under `variant` (which must hold every other
    /// input and start with `engine\0` and the reader's name, apart from the tools' own answers),
    /// else computed by `compute` and kept; computed on every call when reading directly.
    pub(crate) fn kept<V: Clone + Send + Sync + 'static>(
        &self,
        variant: &str,
        reads: &[Facet],
        weight: impl Fn(&V) -> usize,
        compute: impl FnOnce(&gix::Repository) -> Result<V>,
    ) -> Result<V> {
        match self.cached {
            Some((cache, call, location)) => {
                cache.answer(call, location, variant, Some(reads), weight, || compute(self.git))
            }
            None => compute(self.git),
        }
    }

    /// Whether `facet` would be served from memory now (never when reading directly).
    pub(crate) fn holds(&self, facet: Facet) -> bool {
        self.cached.is_some_and(|(cache, call, location)| cache.holds(call, location, facet))
    }

    /// The facet `facet`, computed by `read` when it is not in memory.
    pub(crate) fn get<T: Serialize + Send + Sync + 'static>(
        &self,
        facet: Facet,
        read: impl FnOnce(&gix::Repository) -> Result<T>,
    ) -> Result<Arc<T>> {
        match self.cached {
            Some((cache, call, location)) => cache.facet(call, location, facet, || read(self.git)),
            None => read(self.git).map(Arc::new),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registration of a newly seen repository waits [`ANSWER_GRACE`] after the first call
    /// ended (a lower bound of the clock, so load cannot fail it); whoever waits for the watches
    /// drops that wait.
    #[test]
    fn registration_waits_for_the_first_answer_unless_awaited() {
        let state = Arc::new(RepoState::new(0));
        let ended = std::time::Instant::now();
        drop(Hold(Arc::clone(&state)));
        state.wait_for_answer();
        assert!(ended.elapsed() >= ANSWER_GRACE, "waited {:?}", ended.elapsed());
        drop(Hold(Arc::clone(&state)));
        assert!(lock(&state.phase).released.is_some());
        state.wait_settled(Duration::from_secs(1));
        assert!(lock(&state.phase).released.is_none(), "a waiter for the watches does not let them wait");
    }
}
