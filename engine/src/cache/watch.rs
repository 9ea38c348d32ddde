//! The watcher: one inotify instance for the whole engine, a thread that turns its events into generation bumps,
//! and the barrier that makes cache hits fresh (see `ARCHITECTURE.md`, "Freshness").
//!
//! inotify is used directly rather than through `notify` 8: notify's inotify backend subscribes every watch to
//! `IN_OPEN` and `IN_CLOSE_NOWRITE`, so the engine's own reads (a status opens every directory) would flood the
//! kernel queue, overflow it and invalidate everything they had just computed. Our mask holds only changes.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};

use crate::cache::paths::{self, FacetSet};
use crate::cache::{Counters, RepoState, TipsHook};
use crate::facets::Facet;

/// What a watched directory belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Root {
    /// The common dir and everything under it except object stores (`objects/`, `lfs/`) and `hooks/`.
    GitTree,
    /// The work tree, except `.git` directories.
    WorkTree,
}

/// One owner of a watched directory: a repository, which of its trees, and where in it.
#[derive(Debug, Clone)]
struct Owner {
    repo: Arc<RepoState>,
    root: Root,
    /// The tree's top directory.
    top: Arc<Path>,
    /// The directory relative to the tree's top (empty for the top itself).
    relative: PathBuf,
}

#[derive(Debug, Default)]
struct Table {
    owners: HashMap<WatchDescriptor, Vec<Owner>>,
    marker: Option<WatchDescriptor>,
    /// Watches this engine added in total (the test-only limit counts these).
    added: usize,
}

#[derive(Debug)]
struct Shared {
    table: Mutex<Table>,
    /// Barrier ordinals handed out so far (each names one marker file, `b<ordinal>`).
    issued: AtomicU64,
    /// The highest barrier ordinal whose event the thread has applied (or that an overflow released).
    seen: Mutex<u64>,
    barrier_seen: Condvar,
    stop: AtomicBool,
    /// Set when the thread ended on a read error: no repository is watched from then on.
    failed: AtomicBool,
    counters: Arc<Counters>,
    limit: Option<usize>,
    /// Told the common dir of a repository when an event moves one of its branches or HEAD.
    on_tips: Option<TipsHook>,
}

/// The facets whose change means a branch or HEAD may have moved (what the commit index follows).
const TIPS: FacetSet = FacetSet::of(&[Facet::Head, Facet::Branches]);

/// The running watcher. Dropping it stops its thread (which closes the inotify instance).
#[derive(Debug)]
pub(crate) struct Watcher {
    shared: Arc<Shared>,
    watches: Watches,
    marker_dir: PathBuf,
    _dir: tempfile::TempDir,
}

/// The directory events this engine subscribes to: changes only, never opens or reads.
fn mask() -> WatchMask {
    WatchMask::CREATE
        | WatchMask::DELETE
        | WatchMask::MODIFY
        | WatchMask::CLOSE_WRITE
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::ATTRIB
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
        | WatchMask::ONLYDIR
        | WatchMask::DONT_FOLLOW
        | WatchMask::EXCL_UNLINK
}

/// Why a tree could not be watched completely.
#[derive(Debug)]
pub(crate) enum WatchError {
    /// The per-user inotify watch limit (or this engine's test limit) was reached.
    Limit,
    /// Another failure adding a watch (unsupported filesystem, permissions).
    Other(String),
}

impl std::fmt::Display for WatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Limit => f.write_str("inotify watch limit reached (fs.inotify.max_user_watches)"),
            Self::Other(message) => write!(f, "cannot watch: {message}"),
        }
    }
}

impl Watcher {
    /// Starts the watcher: an inotify instance, the barrier marker in a private directory under `run_dir` (or the
    /// system temp dir), and the thread reading events.
    ///
    /// # Errors
    /// When inotify cannot be initialised (instance limit) or the marker cannot be created.
    pub(crate) fn start(
        run_dir: Option<&Path>,
        limit: Option<usize>,
        counters: Arc<Counters>,
        on_tips: Option<TipsHook>,
    ) -> io::Result<Self> {
        let inotify = Inotify::init()?;
        let dir = match run_dir {
            Some(run_dir) => {
                std::fs::create_dir_all(run_dir)?;
                tempfile::Builder::new().prefix("watch-").tempdir_in(run_dir)?
            }
            None => tempfile::Builder::new().prefix("fluxgit-engine-watch-").tempdir()?,
        };
        let mut watches = inotify.watches();
        let marker_wd = watches.add(dir.path(), WatchMask::CREATE | WatchMask::ONLYDIR)?;
        let shared = Arc::new(Shared {
            table: Mutex::new(Table { marker: Some(marker_wd), ..Table::default() }),
            issued: AtomicU64::new(0),
            seen: Mutex::new(0),
            barrier_seen: Condvar::new(),
            stop: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            counters,
            limit,
            on_tips,
        });
        let thread_shared = Arc::clone(&shared);
        let thread_watches = watches.clone();
        let marker_dir = dir.path().to_path_buf();
        let thread_marker_dir = marker_dir.clone();
        std::thread::Builder::new()
            .name("fluxgit-watch".to_owned())
            .spawn(move || run(inotify, &thread_shared, thread_watches, &thread_marker_dir))?;
        Ok(Self { shared, watches, marker_dir, _dir: dir })
    }

    /// Watches a repository: its common dir tree and, when given, its work tree. Stops at the first failure (the
    /// watches already added stay; the repository is then served stat-validated).
    ///
    /// # Errors
    /// [`WatchError`] when a directory cannot be watched.
    pub(crate) fn watch(
        &self,
        repo: &Arc<RepoState>,
        common_dir: &Path,
        work_tree: Option<&Path>,
    ) -> Result<(), WatchError> {
        if self.shared.failed.load(Ordering::SeqCst) {
            return Err(WatchError::Other("the watcher stopped after a read error".to_owned()));
        }
        let mut watches = self.watches.clone();
        add_tree(&self.shared, &mut watches, repo, Root::GitTree, &Arc::from(common_dir), Path::new(""))?;
        if let Some(work_tree) = work_tree {
            self.watch_work_tree(repo, work_tree)?;
        }
        Ok(())
    }

    /// Watches one more work tree of a repository already watched (a linked worktree).
    ///
    /// # Errors
    /// As [`Watcher::watch`].
    pub(crate) fn watch_work_tree(&self, repo: &Arc<RepoState>, work_tree: &Path) -> Result<(), WatchError> {
        let mut watches = self.watches.clone();
        add_tree(&self.shared, &mut watches, repo, Root::WorkTree, &Arc::from(work_tree), Path::new(""))
    }

    /// Waits until every event queued before this call has been applied: creates the marker `b<k>` (a fresh
    /// ordinal `k`) and waits, at most `timeout`, for the watcher thread to apply its creation event, which the one
    /// inotify queue delivers after every earlier event. A barrier whose ordinal was handed out after this call
    /// began covers it too, so concurrent callers share barriers. Returns `false` on timeout (the caller then
    /// reads fresh).
    pub(crate) fn barrier(&self, timeout: Duration) -> bool {
        if self.shared.failed.load(Ordering::SeqCst) {
            return false;
        }
        let started = Instant::now();
        let issued_at_start = self.shared.issued.load(Ordering::SeqCst);
        if *lock(&self.shared.seen) > issued_at_start {
            self.shared.counters.barriers_shared.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        let ordinal = self.shared.issued.fetch_add(1, Ordering::SeqCst) + 1;
        if std::fs::File::create(self.marker_dir.join(format!("b{ordinal}"))).is_err() {
            return false;
        }
        let mut seen = lock(&self.shared.seen);
        while *seen < ordinal {
            let left = timeout.saturating_sub(started.elapsed());
            if left.is_zero() {
                self.shared.counters.barrier_timeouts.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            seen = match self.shared.barrier_seen.wait_timeout(seen, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        self.shared.counters.barriers.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// The number of watches in place.
    pub(crate) fn watch_count(&self) -> usize {
        lock(&self.shared.table).owners.len()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wakes the thread, which sees `stop` and ends, closing the inotify instance.
        let _ = std::fs::File::create(self.marker_dir.join("stop"));
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Adds watches for `relative` under the tree `root_kind` at `top`, and every directory below it (depth first, each
/// directory watched before it is listed, so that nothing created meanwhile goes unseen).
fn add_tree(
    shared: &Shared,
    watches: &mut Watches,
    repo: &Arc<RepoState>,
    root_kind: Root,
    top: &Arc<Path>,
    relative: &Path,
) -> Result<(), WatchError> {
    let mut pending = vec![relative.to_path_buf()];
    while let Some(relative) = pending.pop() {
        let dir = top.join(&relative);
        {
            let mut table = lock(&shared.table);
            if shared.limit.is_some_and(|limit| table.added >= limit) {
                return Err(WatchError::Limit);
            }
            let wd = match watches.add(&dir, mask()) {
                Ok(wd) => wd,
                // Removed before we got to it: its removal is an event of its parent.
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                Err(error) if error.raw_os_error() == Some(28) => return Err(WatchError::Limit),
                Err(error) if error.raw_os_error() == Some(20) => continue, // ENOTDIR: replaced by a file.
                Err(error) => return Err(WatchError::Other(format!("{}: {error}", dir.display()))),
            };
            table.added += 1;
            let owners = table.owners.entry(wd).or_default();
            let same =
                |owner: &&mut Owner| Arc::ptr_eq(&owner.repo, repo) && owner.root == root_kind && owner.top == *top;
            match owners.iter_mut().find(same) {
                Some(owner) => owner.relative.clone_from(&relative),
                None => owners.push(Owner {
                    repo: Arc::clone(repo),
                    root: root_kind,
                    top: Arc::clone(top),
                    relative: relative.clone(),
                }),
            }
        }
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
            if is_dir && !skipped(root_kind, &entry.file_name()) {
                pending.push(relative.join(entry.file_name()));
            }
        }
    }
    Ok(())
}

/// Directories never watched: object stores and hooks under the git dir (no facet reads them), `.git` under a work
/// tree (the git dir is watched as its own tree).
fn skipped(root: Root, name: &std::ffi::OsStr) -> bool {
    match root {
        Root::GitTree => name == "objects" || name == "lfs" || name == "hooks",
        Root::WorkTree => name == ".git",
    }
}

/// The watcher thread: reads events until told to stop, applying each in queue order.
fn run(mut inotify: Inotify, shared: &Shared, mut watches: Watches, marker_dir: &Path) {
    let mut buffer = vec![0_u8; 64 * 1024];
    while !shared.stop.load(Ordering::SeqCst) {
        let events = match inotify.read_events_blocking(&mut buffer) {
            Ok(events) => events,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                // Events may be lost: everything is invalidated, waiting barriers are released (the next reads
                // are fresh), and the thread ends; repositories are served stat-validated from now on.
                shared.counters.errors.fetch_add(1, Ordering::Relaxed);
                shared.failed.store(true, Ordering::SeqCst);
                lose_everything(shared, "the watcher failed reading events");
                release_issued(shared);
                return;
            }
        };
        for event in events {
            if shared.stop.load(Ordering::SeqCst) {
                return;
            }
            let name = event.name.map(PathBuf::from);
            apply(shared, &mut watches, marker_dir, &event.wd, event.mask, name.as_deref());
        }
    }
}

fn apply(
    shared: &Shared,
    watches: &mut Watches,
    marker_dir: &Path,
    wd: &WatchDescriptor,
    mask: EventMask,
    name: Option<&Path>,
) {
    shared.counters.events.fetch_add(1, Ordering::Relaxed);
    if mask.contains(EventMask::Q_OVERFLOW) {
        // Lost events: everything any watch covered is invalidated; the overflow is read after every dropped event
        // happened, so reads that start after this bump see their effects.
        shared.counters.overflows.fetch_add(1, Ordering::Relaxed);
        let repos = all_repos(shared);
        for repo in &repos {
            repo.bump(FacetSet::ALL, &shared.counters);
        }
        release_issued(shared);
        return;
    }
    let owners = {
        let mut table = lock(&shared.table);
        if table.marker.as_ref() == Some(wd) {
            drop(table);
            if let Some(name) = name {
                let ordinal = name.to_str().and_then(|name| name.strip_prefix('b')).and_then(|k| k.parse().ok());
                if let Some(ordinal) = ordinal {
                    release(shared, ordinal);
                }
                let _ = std::fs::remove_file(marker_dir.join(name));
            }
            return;
        }
        if mask.contains(EventMask::IGNORED) {
            // The watch is gone (its directory was deleted or unmounted).
            shared.counters.lost_watches.fetch_add(1, Ordering::Relaxed);
            table.owners.remove(wd).unwrap_or_default()
        } else {
            table.owners.get(wd).cloned().unwrap_or_default()
        }
    };
    for owner in owners {
        let relative = match name {
            Some(name) => owner.relative.join(name),
            None => owner.relative.clone(),
        };
        let mut facets = match owner.root {
            Root::GitTree => paths::git_dir_event(&relative),
            Root::WorkTree => paths::work_tree_event(&relative),
        };
        let is_dir = mask.contains(EventMask::ISDIR);
        let top_gone = mask.intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF | EventMask::IGNORED);
        if name.is_none() && owner.relative.as_os_str().is_empty() && top_gone {
            // The tree's top itself was deleted, moved or unwatched: the repository must be watched anew.
            owner.repo.lose("a watched repository directory was removed or moved");
            facets = FacetSet::ALL;
        } else if owner.root == Root::GitTree && is_dir && mask.contains(EventMask::MOVED_FROM) {
            // Watches below a moved directory now report stale paths under the git dir.
            facets = FacetSet::ALL;
        }
        if is_dir
            && mask.intersects(EventMask::CREATE | EventMask::MOVED_TO)
            && let Some(name) = name
            && !skipped(owner.root, name.as_os_str())
        {
            // Watched before the bump below: any read tagged after the bump sees later changes in it as events.
            if let Err(error) = add_tree(shared, watches, &owner.repo, owner.root, &owner.top, &relative) {
                owner.repo.fall_back(&error.to_string(), &shared.counters);
                facets = FacetSet::ALL;
            }
        }
        owner.repo.bump(facets.with(FacetSet::ANY), &shared.counters);
        if owner.root == Root::GitTree
            && facets.0 & TIPS.0 != 0
            && let Some(hook) = &shared.on_tips
        {
            (hook.0)(&owner.top);
        }
    }
}

fn all_repos(shared: &Shared) -> Vec<Arc<RepoState>> {
    let table = lock(&shared.table);
    let mut repos: Vec<Arc<RepoState>> = Vec::new();
    for owner in table.owners.values().flatten() {
        if !repos.iter().any(|repo| Arc::ptr_eq(repo, &owner.repo)) {
            repos.push(Arc::clone(&owner.repo));
        }
    }
    repos
}

fn lose_everything(shared: &Shared, why: &str) {
    for repo in all_repos(shared) {
        repo.fall_back(why, &shared.counters);
        repo.bump(FacetSet::ALL, &shared.counters);
    }
}

/// Marks barrier `ordinal` (and every earlier one) as applied.
fn release(shared: &Shared, ordinal: u64) {
    let mut seen = lock(&shared.seen);
    *seen = (*seen).max(ordinal);
    shared.barrier_seen.notify_all();
}

/// Releases every barrier handed out so far: used after everything was invalidated, which makes any later read
/// fresh with respect to whatever happened before those barriers' calls began.
fn release_issued(shared: &Shared) {
    release(shared, shared.issued.load(Ordering::SeqCst));
}
