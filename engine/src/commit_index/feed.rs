//! The feed thread of a [`Store`]: it brings an index up to date when the watcher reports that a
//! branch or HEAD of its repository moved, so the next call finds it current, and it closes writers
//! idle for [`IDLE_WRITER`] (after their segment merges end) so that another process sharing the
//! run dir can take the writer lock.
//!
//! Only repositories whose index this process has opened are fed: a watched repository nobody
//! searched is left alone. A refresh is exactly what a call does ([`Store::status`]: compare tips,
//! apply the difference), so a call racing with it waits for the slot and then finds the index
//! current, or applies the rest itself.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use super::{IDLE_WRITER, Store};

/// How often the thread looks for idle writers when no update is asked for.
const POLL: Duration = Duration::from_secs(1);

/// How long the thread lets a burst of events settle (one `git commit` writes a ref, two reflogs,
/// the index) before it updates, so that the burst costs one update.
const SETTLE: Duration = Duration::from_millis(15);

/// Work for the feed thread.
#[derive(Debug, Default)]
pub(super) struct Feed {
    state: Mutex<FeedState>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct FeedState {
    /// Common dirs whose tips moved since the thread last looked.
    pending: BTreeSet<PathBuf>,
    /// Updates the thread ran (each compared tips and applied any difference).
    refreshes: u64,
}

impl Feed {
    fn lock(&self) -> MutexGuard<'_, FeedState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Store {
    /// Starts the feed thread. It holds the store weakly and ends within [`POLL`] once the store is
    /// dropped.
    pub fn start_feed(self: &Arc<Self>) {
        let store = Arc::downgrade(self);
        let feed = Arc::clone(&self.feed);
        // Without the thread, updates happen in calls and writers stay open until the store is dropped.
        let _ = std::thread::Builder::new().name("fluxgit-index-feed".to_owned()).spawn(move || run(&store, &feed));
    }

    /// Asks the feed thread to bring `common_dir`'s index up to date soon (the watcher saw a branch
    /// or HEAD move); nothing happens for a repository whose index this process has not opened.
    /// Never blocks on the index.
    pub fn refresh_soon(&self, common_dir: &Path) {
        let known = self.slots.lock().unwrap_or_else(PoisonError::into_inner).contains_key(common_dir);
        if known {
            self.feed.lock().pending.insert(common_dir.to_path_buf());
            self.feed.wake.notify_all();
        }
    }

    /// Updates the feed thread started since the store was made (for tests and benchmarks).
    pub fn refreshes(&self) -> u64 {
        self.feed.lock().refreshes
    }

    /// Whether `common_dir`'s index is open in this process and holds exactly `repo`'s current
    /// tips, without updating it (for tests and benchmarks: did the feed thread do the work before
    /// the call?).
    pub fn is_current(&self, repo: &gix::Repository, common_dir: &Path) -> bool {
        let Ok(tips) = super::read_tips(repo) else { return false };
        let slot = self.slot(common_dir);
        let state = slot.lock();
        !state.building && state.opened.as_ref().is_some_and(|opened| opened.tips == tips)
    }

    /// One update of `common_dir`'s index, as a call would make it, through the git dir the last
    /// call used.
    fn refresh(&self, common_dir: &Path) {
        let slot = self.slot(common_dir);
        let git_dir = {
            let state = slot.lock();
            if state.building || state.opened.is_none() {
                return;
            }
            state.git_dir.clone()
        };
        let Some(git_dir) = git_dir else { return };
        // The roots were checked by the call that used this git dir; its files are vetted again (a FIFO put there
        // since would block this thread), and a git dir that now fails is left to the next call to report.
        if crate::guard::vet_git_dir(&git_dir, None).is_err() {
            return;
        }
        let Ok(repo) = gix::open_opts(&git_dir, crate::repository::open_options()) else { return };
        // Counted first: whoever sees the update's effect sees it counted.
        self.feed.lock().refreshes += 1;
        let _ = self.status(&repo, common_dir);
    }

    /// Closes every writer that has not committed for `idle`: waits for its merges, then lets the
    /// reader see the merged segments.
    fn close_idle_writers(&self, idle: Duration) {
        let slots: Vec<_> = self.slots.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        for slot in slots {
            let writer = {
                let mut state = slot.lock();
                match state.opened.as_mut() {
                    Some(opened) if opened.writer.is_some() && opened.written.elapsed() >= idle => opened.writer.take(),
                    _ => None,
                }
            };
            let Some(writer) = writer else { continue };
            let merged = writer.wait_merging_threads().is_ok();
            let state = slot.lock();
            if merged && let Some(opened) = state.opened.as_ref() {
                let _ = opened.reader.reload();
            }
        }
    }
}

impl Drop for Store {
    /// Waits for the merges of every open writer, so that no tantivy thread reads or writes the
    /// index files after the store is gone.
    fn drop(&mut self) {
        let slots: Vec<_> = self.slots.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        for slot in slots {
            let writer = slot.lock().opened.as_mut().and_then(|opened| opened.writer.take());
            if let Some(writer) = writer {
                let _ = writer.wait_merging_threads();
            }
        }
    }
}

/// The thread's loop: updates asked for (after letting a burst settle), then idle writers, until
/// the store is gone.
fn run(store: &Weak<Store>, feed: &Feed) {
    loop {
        let asked = {
            let mut state = feed.lock();
            if state.pending.is_empty() {
                state = feed.wake.wait_timeout(state, POLL).unwrap_or_else(PoisonError::into_inner).0;
            }
            !state.pending.is_empty()
        };
        if asked {
            std::thread::sleep(SETTLE);
        }
        let pending = std::mem::take(&mut feed.lock().pending);
        let Some(store) = store.upgrade() else { return };
        for common_dir in &pending {
            store.refresh(common_dir);
        }
        store.close_idle_writers(IDLE_WRITER);
    }
}
