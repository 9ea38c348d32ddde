//! Clean exit: the presence file is removed at end of input and on SIGTERM, SIGINT or SIGHUP (design.md#presence), and an
//! exit never cuts an audit append or a presence rewrite in half.
//!
//! [`ExitGuard`] is held around every such write; [`on_terminate`] starts a thread that, on a signal, takes the
//! guard (waiting for a write in progress), runs the cleanup and exits with status 0.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Serialises writes that must complete with the exit that a signal triggers.
#[derive(Debug, Clone, Default)]
pub struct ExitGuard(Arc<Mutex<()>>);

impl ExitGuard {
    /// Holds the guard until the returned value is dropped. A poisoned guard (a panic while held) still works.
    pub fn hold(&self) -> MutexGuard<'_, ()> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// On SIGTERM, SIGINT or SIGHUP: waits for `guard`, runs `cleanup`, and exits the process with status 0.
///
/// # Errors
/// If the signal handlers cannot be installed.
#[cfg(unix)]
pub fn on_terminate(guard: ExitGuard, cleanup: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    std::thread::Builder::new().name("signals".to_owned()).spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let _hold = guard.hold();
            tracing::info!(signal, "terminating on signal");
            cleanup();
            std::process::exit(0);
        }
    })?;
    Ok(())
}

/// Without Unix signals only the end of input is a clean exit.
///
/// # Errors
/// Never.
#[cfg(not(unix))]
pub fn on_terminate(guard: ExitGuard, cleanup: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    let _ = (guard, cleanup);
    Ok(())
}
