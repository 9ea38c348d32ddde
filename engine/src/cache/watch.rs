//! The watcher: one inotify instance for the whole engine, whose events become generation bumps,
//! and the barrier that makes cache hits fresh (see docs/internals.md, "The cache and its
//! freshness"). Events are read and applied by whoever holds the reader: the watcher thread when
//! the kernel says some are queued, or a call's barrier, which applies what is queued itself
//! instead of waiting for that thread to be scheduled.
//!
//! inotify is used directly rather than through `notify` 8: notify's inotify backend subscribes
//! every watch to `IN_OPEN` and `IN_CLOSE_NOWRITE`, so the engine's own reads (a status opens every
//! directory) would flood the kernel queue, overflow it and invalidate everything they had just
//! computed. Our mask holds only changes.

use std::collections::HashMap;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};

use crate::cache::paths::{self, FacetSet};
use crate::cache::{Counters, RepoState, TipsHook};
use crate::facets::Facet;

/// What a watched directory belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Root {
    /// The common dir and everything under it except object stores (`objects/`, `lfs/`) and
    /// `hooks/`.
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
    /// Watches this engine added in total (the test-only limit counts these).
    added: usize,
}

/// The inotify instance (non-blocking) and what applying its events needs: held while events are
/// read and applied, so that they are applied in queue order whoever reads them.
#[derive(Debug)]
struct Reader {
    inotify: Inotify,
    buffer: Vec<u8>,
    watches: Watches,
}

#[derive(Debug)]
struct Shared {
    table: Mutex<Table>,
    reader: Mutex<Reader>,
    /// How many times a holder of the reader emptied the queue (read until nothing was left): a
    /// barrier that finds the reader taken waits for this to move.
    drains: Mutex<u64>,
    drained: Condvar,
    stop: AtomicBool,
    /// Set on a read error (of the thread or a barrier): no repository is watched from then on.
    failed: AtomicBool,
    counters: Arc<Counters>,
    limit: Option<usize>,
    /// Told the common dir of a repository when an event moves one of its branches or HEAD.
    on_tips: Option<TipsHook>,
}

/// The facets whose change means a branch or HEAD may have moved (what the commit index follows).
const TIPS: FacetSet = FacetSet::of(&[Facet::Head, Facet::Branches]);

/// The running watcher. Dropping it stops its thread (the inotify instance is closed with the last
/// reference).
#[derive(Debug)]
pub(crate) struct Watcher {
    shared: Arc<Shared>,
    watches: Watches,
    /// Wakes the thread's poll (to stop it). The thread holds it too: closing its eventfd as the
    /// watcher drops would take the wake-up back out of the poll before the thread saw it, and the
    /// thread (with its inotify instance) would wait forever.
    waker: Arc<mio::Waker>,
}

/// The poll tokens of the watcher thread: the inotify instance has events, or the thread is asked
/// to stop.
const EVENTS: mio::Token = mio::Token(0);
const WAKE: mio::Token = mio::Token(1);

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
    /// Starts the watcher: an inotify instance and the thread that applies its events as the kernel
    /// queues them.
    ///
    /// # Errors
    /// When inotify cannot be initialised (instance limit) or the thread's poll cannot be set up.
    pub(crate) fn start(limit: Option<usize>, counters: Arc<Counters>, on_tips: Option<TipsHook>) -> io::Result<Self> {
        let (watcher, poll) = Self::open(limit, counters, on_tips)?;
        let shared = Arc::clone(&watcher.shared);
        let waker = Arc::clone(&watcher.waker);
        std::thread::Builder::new().name("fluxgit-watch".to_owned()).spawn(move || {
            run(poll, &shared);
            drop(waker);
        })?;
        Ok(watcher)
    }

    /// The watcher without its thread, and the poll the thread waits on.
    fn open(limit: Option<usize>, counters: Arc<Counters>, on_tips: Option<TipsHook>) -> io::Result<(Self, mio::Poll)> {
        let inotify = Inotify::init()?;
        let poll = mio::Poll::new()?;
        poll.registry().register(&mut mio::unix::SourceFd(&inotify.as_raw_fd()), EVENTS, mio::Interest::READABLE)?;
        let waker = Arc::new(mio::Waker::new(poll.registry(), WAKE)?);
        let watches = inotify.watches();
        let shared = Arc::new(Shared {
            table: Mutex::new(Table::default()),
            reader: Mutex::new(Reader { inotify, buffer: vec![0_u8; 64 * 1024], watches: watches.clone() }),
            drains: Mutex::new(0),
            drained: Condvar::new(),
            stop: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            counters,
            limit,
            on_tips,
        });
        Ok((Self { shared, watches, waker }, poll))
    }

    /// Watches a repository: its common dir tree and, when given, its work tree. Stops at the first
    /// failure (the watches already added stay; the repository is then served stat-validated).
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

    /// Returns once every event queued before this call has been applied: takes the reader and
    /// reads and applies events until the queue is empty (nothing to wait for when nothing
    /// changed). When another thread holds the reader, waits (at most `timeout`) until it has
    /// emptied the queue, then tries again: the holder may have found it empty before this call
    /// began. Returns `false` on timeout or a read error (the caller then reads fresh).
    pub(crate) fn barrier(&self, timeout: Duration) -> bool {
        let started = Instant::now();
        let mut waited = false;
        loop {
            if self.shared.failed.load(Ordering::SeqCst) {
                return false;
            }
            let drains = *lock(&self.shared.drains);
            let reader = match self.shared.reader.try_lock() {
                Ok(reader) => reader,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    waited = true;
                    let left = timeout.saturating_sub(started.elapsed());
                    let outcome = self.shared.drained.wait_timeout_while(lock(&self.shared.drains), left, |now| {
                        *now == drains && !self.shared.failed.load(Ordering::SeqCst)
                    });
                    if outcome.map_or_else(|poisoned| poisoned.into_inner().1, |(_, result)| result).timed_out() {
                        self.shared.counters.barrier_timeouts.fetch_add(1, Ordering::Relaxed);
                        return false;
                    }
                    continue;
                }
            };
            let counter = if waited { &self.shared.counters.barriers_shared } else { &self.shared.counters.barriers };
            counter.fetch_add(1, Ordering::Relaxed);
            return drain(&self.shared, reader);
        }
    }

    /// The number of watches in place.
    pub(crate) fn watch_count(&self) -> usize {
        lock(&self.shared.table).owners.len()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wakes the thread, which sees `stop` and ends.
        let _ = self.waker.wake();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Adds watches for `relative` under the tree `root_kind` at `top`, and every directory below it
/// (depth first, each directory watched before it is listed, so that nothing created meanwhile goes
/// unseen).
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
                // A path the system cannot name (longer than PATH_MAX: a work tree thousands of directories deep)
                // holds nothing git can track or a status walk lists (the walk stops above it and names it as
                // unreadable); its parent's watch sees it created or removed.
                Err(error) if error.raw_os_error() == Some(libc::ENAMETOOLONG) => continue,
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

/// Directories never watched: object stores and hooks under the git dir (no facet reads them),
/// `.git` under a work tree (the git dir is watched as its own tree).
fn skipped(root: Root, name: &std::ffi::OsStr) -> bool {
    match root {
        Root::GitTree => name == "objects" || name == "lfs" || name == "hooks",
        Root::WorkTree => name == ".git",
    }
}

/// The watcher thread: whenever the kernel queues events, takes the reader and applies them, until
/// told to stop.
fn run(mut poll: mio::Poll, shared: &Shared) {
    let mut ready = mio::Events::with_capacity(4);
    while !shared.stop.load(Ordering::SeqCst) && !shared.failed.load(Ordering::SeqCst) {
        if let Err(error) = poll.poll(&mut ready, None) {
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            fail(shared, "the watcher failed waiting for events");
            return;
        }
        // The poll is edge-triggered: whatever arrived is read to the end (a barrier may have read it already).
        drain(shared, lock(&shared.reader));
    }
}

/// Reads and applies events with `reader` until the queue is empty, in queue order, then releases
/// it. Returns `false` on a read error, after which no repository is served from watched caches
/// again.
fn drain(shared: &Shared, mut reader: MutexGuard<'_, Reader>) -> bool {
    let read = apply_queued(shared, &mut reader);
    drop(reader);
    if read.is_err() {
        fail(shared, "the watcher failed reading events");
        return false;
    }
    *lock(&shared.drains) += 1;
    shared.drained.notify_all();
    true
}

fn apply_queued(shared: &Shared, reader: &mut Reader) -> io::Result<()> {
    let Reader { inotify, buffer, watches } = reader;
    while !shared.stop.load(Ordering::SeqCst) {
        let events = match inotify.read_events(buffer) {
            Ok(events) => events,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        for event in events {
            let name = event.name.map(PathBuf::from);
            apply(shared, watches, &event.wd, event.mask, name.as_deref());
        }
    }
    Ok(())
}

/// Events may be lost: everything is invalidated and served stat-validated from now on; barriers
/// waiting for a drain are released (they read fresh).
fn fail(shared: &Shared, why: &str) {
    shared.counters.errors.fetch_add(1, Ordering::Relaxed);
    shared.failed.store(true, Ordering::SeqCst);
    lose_everything(shared, why);
    *lock(&shared.drains) += 1;
    shared.drained.notify_all();
}

fn apply(shared: &Shared, watches: &mut Watches, wd: &WatchDescriptor, mask: EventMask, name: Option<&Path>) {
    shared.counters.events.fetch_add(1, Ordering::Relaxed);
    if mask.contains(EventMask::Q_OVERFLOW) {
        // Lost events: everything any watch covered is invalidated; the overflow is read after every dropped event
        // happened, so reads that start after this bump see their effects.
        shared.counters.overflows.fetch_add(1, Ordering::Relaxed);
        let repos = all_repos(shared);
        for repo in &repos {
            repo.bump(FacetSet::ALL, &shared.counters);
        }
        return;
    }
    let owners = {
        let mut table = lock(&shared.table);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A barrier applies what is queued itself, to the end of the queue, without the watcher thread
    /// (a barrier that waits for the thread times out here; one that reads a single buffer, 64 KiB,
    /// misses most of the ~6,000 events of 3,000 new files).
    #[test]
    fn a_barrier_applies_every_queued_event_without_the_thread() {
        let counters = Arc::new(Counters::default());
        let (watcher, _poll) = Watcher::open(None, Arc::clone(&counters), None).expect("inotify");
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Arc::new(RepoState::new(0));
        watcher.watch_work_tree(&repo, dir.path()).expect("watched");
        let status = FacetSet::of(&[Facet::WorkTreeStatus]);
        let before = repo.tag(status);
        assert!(watcher.barrier(Duration::from_secs(1)), "nothing queued");
        assert_eq!((counters.events.load(Ordering::Relaxed), repo.tag(status)), (0, before));
        let files: u64 = 3_000;
        for file in 0..files {
            std::fs::write(dir.path().join(format!("a-file-with-a-long-name-to-fill-buffers-{file:05}")), "x")
                .expect("writes");
        }
        assert!(watcher.barrier(Duration::from_secs(1)), "applied by the barrier itself");
        assert!(counters.events.load(Ordering::Relaxed) >= files, "every creation applied");
        assert_ne!(repo.tag(status), before, "the work-tree status moved");
    }

    /// A dropped watcher's thread ends, and with it the inotify instance (a process has 128): the
    /// wake-up that stops it was once lost when the watcher closed its eventfd at once, so each
    /// engine dropped left both behind.
    #[test]
    fn a_dropped_watcher_stops_its_thread() {
        for _ in 0..5 {
            let watcher = Watcher::start(None, Arc::new(Counters::default()), None).expect("inotify");
            let shared = Arc::clone(&watcher.shared);
            // The thread waits in its poll by now.
            std::thread::sleep(Duration::from_millis(20));
            drop(watcher);
            // The thread holds the other reference to `shared` until it ends.
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while Arc::strong_count(&shared) > 1 && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(Arc::strong_count(&shared), 1, "the watcher thread ended");
        }
    }
}
