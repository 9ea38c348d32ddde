//! Group commit (design.md#audit): appends that are written but not yet synced, and the one thread that syncs them in
//! batches.
//!
//! An append in [`Durability::Grouped`] writes its line (chained, hashed, signed) under the cross-process lock as
//! any append does, then hands a descriptor of the active file to the syncer instead of calling `fdatasync`
//! itself. The syncer calls `fdatasync` once for every pending append: when [`GroupCommit::batch`] appends are
//! pending, or [`GroupCommit::interval`] after the oldest pending one was written, whichever comes first. One
//! `fdatasync` of the file makes every line written to it durable, whoever wrote them, so the newest descriptor is
//! all the syncer keeps. A killed process loses nothing (the kernel has every written line); a power loss loses at
//! most the grouped appends of the last interval plus the one sync then in progress.

use std::fs::File;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How an append reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// The line is synced (`fdatasync`) before the append returns.
    Synced,
    /// The line is written before the append returns and synced by the ledger's group commit within its bound
    /// ([`GroupCommit`]); a ledger without a group commit syncs it at once, as [`Durability::Synced`].
    Grouped,
}

/// When the syncer syncs: after `batch` pending appends or `interval` after the oldest one, whichever comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupCommit {
    /// The longest a grouped append waits before its sync starts.
    pub interval: Duration,
    /// Pending appends that start a sync at once.
    pub batch: u64,
}

impl GroupCommit {
    /// 5 ms or 64 appends: a power loss costs at most the reads answered in the last 5 ms plus one `fdatasync`.
    pub const STANDARD: GroupCommit = GroupCommit { interval: Duration::from_millis(5), batch: 64 };
}

/// A handle that makes every grouped append written so far durable, e.g. from a signal handler before an exit.
#[derive(Debug, Clone)]
pub struct SyncHandle {
    shared: Arc<Shared>,
}

impl SyncHandle {
    /// Syncs every grouped append written before this call, waiting for a sync in progress.
    ///
    /// # Errors
    /// The `fdatasync` error when a sync this call waited for failed (the appends are then not known to be
    /// durable; nothing retries them, as a failed `fdatasync` may have dropped the data it could not write).
    pub fn sync(&self) -> std::io::Result<()> {
        self.shared.sync_all()
    }

    /// Syncs that failed so far.
    pub fn failures(&self) -> u64 {
        self.shared.lock().failures
    }
}

/// The syncer thread of a ledger: stopped and joined (after a last sync) when dropped.
#[derive(Debug)]
pub(crate) struct Syncer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Syncer {
    /// Starts the syncer thread.
    pub(crate) fn start(policy: GroupCommit) -> std::io::Result<Syncer> {
        let shared = Arc::new(Shared { state: Mutex::new(State::default()), wake: Condvar::new(), policy });
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new().name("audit-sync".to_owned()).spawn(move || thread_shared.run())?;
        Ok(Syncer { shared, thread: Some(thread) })
    }

    /// Records a grouped append written to `file` (the active file, or a descriptor of it).
    pub(crate) fn pending(&self, file: File) {
        let mut state = self.shared.lock();
        state.file = Some(file);
        state.written += 1;
        state.oldest.get_or_insert_with(Instant::now);
        drop(state);
        self.shared.wake.notify_all();
    }

    pub(crate) fn handle(&self) -> SyncHandle {
        SyncHandle { shared: Arc::clone(&self.shared) }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("audit ledger: the syncer thread panicked");
        }
        if let Err(error) = self.shared.sync_all() {
            tracing::error!(%error, "audit ledger: the last sync failed");
        }
    }
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    policy: GroupCommit,
}

#[derive(Debug, Default)]
struct State {
    /// The newest descriptor written to and not synced since; `None` while nothing is pending or while its sync
    /// runs.
    file: Option<File>,
    /// Grouped appends recorded so far.
    written: u64,
    /// Of them, those made durable (or whose sync failed).
    synced: u64,
    /// When the oldest pending append was recorded.
    oldest: Option<Instant>,
    failures: u64,
    stop: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The syncer thread: waits for a pending append, then for the batch or the interval, then syncs.
    fn run(&self) {
        let mut state = self.lock();
        loop {
            let Some(oldest) = state.oldest else {
                if state.stop {
                    return;
                }
                state = self.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            let due = oldest + self.policy.interval;
            let now = Instant::now();
            let batch_full = state.written - state.synced >= self.policy.batch;
            if now < due && !batch_full && !state.stop {
                state = self.wake.wait_timeout(state, due - now).unwrap_or_else(PoisonError::into_inner).0;
                continue;
            }
            state = self.sync_once(state).0;
        }
    }

    /// Syncs the pending descriptor without holding the state lock; returns the lock again and whether it failed.
    fn sync_once<'a>(&'a self, mut state: MutexGuard<'a, State>) -> (MutexGuard<'a, State>, Option<std::io::Error>) {
        let Some(file) = state.file.take() else { return (state, None) };
        let through = state.written;
        state.oldest = None;
        drop(state);
        let result = file.sync_data();
        drop(file);
        let mut state = self.lock();
        state.synced = state.synced.max(through);
        let error = result.err();
        if let Some(error) = &error {
            state.failures += 1;
            tracing::error!(%error, "audit ledger: a group commit's fdatasync failed; its entries may not be durable");
        }
        self.wake.notify_all();
        (state, error)
    }

    fn sync_all(&self) -> std::io::Result<()> {
        let mut state = self.lock();
        let target = state.written;
        let failures = state.failures;
        while state.synced < target {
            if state.file.is_some() {
                let (next, error) = self.sync_once(state);
                if let Some(error) = error {
                    return Err(error);
                }
                state = next;
            } else {
                // Another thread took the descriptor and is syncing it: wait for it to say so.
                state = self.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
        }
        if state.failures > failures {
            return Err(std::io::Error::other("a group commit's fdatasync failed while this sync waited for it"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// A real file to hand the syncer.
    fn file(dir: &tempfile::TempDir) -> File {
        let path = dir.path().join("active");
        let mut options = std::fs::OpenOptions::new();
        options.append(true).create(true);
        let mut file = options.open(path).expect("open");
        std::io::Write::write_all(&mut file, b"{}\n").expect("write");
        file
    }

    fn counts(syncer: &Syncer) -> (u64, u64) {
        let state = syncer.shared.lock();
        (state.written, state.synced)
    }

    /// Waits (at most 5 s) until every pending append is synced.
    fn wait_synced(syncer: &Syncer) -> (u64, u64) {
        let started = Instant::now();
        loop {
            let (written, synced) = counts(syncer);
            if written == synced || started.elapsed() > Duration::from_secs(5) {
                return (written, synced);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_full_batch_is_synced_without_waiting_for_the_interval() {
        let dir = tempfile::tempdir().expect("tempdir");
        let syncer =
            Syncer::start(GroupCommit { interval: Duration::from_secs(3600), batch: 3 }).expect("syncer starts");
        for _ in 0..3 {
            syncer.pending(file(&dir));
        }
        assert_eq!(wait_synced(&syncer), (3, 3));
        assert_eq!(syncer.handle().failures(), 0);
    }

    #[test]
    fn a_lone_append_is_synced_after_the_interval() {
        let dir = tempfile::tempdir().expect("tempdir");
        let syncer =
            Syncer::start(GroupCommit { interval: Duration::from_millis(10), batch: 1000 }).expect("syncer starts");
        syncer.pending(file(&dir));
        assert_eq!(wait_synced(&syncer), (1, 1));
    }

    #[test]
    fn sync_and_drop_make_every_pending_append_durable_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let policy = GroupCommit { interval: Duration::from_secs(3600), batch: 1000 };
        let syncer = Syncer::start(policy).expect("syncer starts");
        syncer.pending(file(&dir));
        syncer.pending(file(&dir));
        assert_eq!(counts(&syncer), (2, 0), "an hour's interval: nothing synced by the thread yet");
        syncer.handle().sync().expect("syncs");
        assert_eq!(counts(&syncer), (2, 2));
        syncer.pending(file(&dir));
        let shared = Arc::clone(&syncer.shared);
        drop(syncer);
        let state = shared.lock();
        assert_eq!((state.written, state.synced), (3, 3), "dropping the syncer synced the last append");
    }

    #[test]
    fn syncs_from_many_threads_while_appends_arrive_all_return() {
        let dir = tempfile::tempdir().expect("tempdir");
        let syncer =
            Arc::new(Syncer::start(GroupCommit { interval: Duration::from_micros(100), batch: 4 }).expect("starts"));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let syncer = Arc::clone(&syncer);
                let file = file(&dir);
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        syncer.pending(file.try_clone().expect("dup"));
                        syncer.handle().sync().expect("syncs");
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("thread");
        }
        assert_eq!(counts(&syncer), (800, 800));
    }
}
