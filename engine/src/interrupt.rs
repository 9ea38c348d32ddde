//! [`Interrupt`]: a caller's request to stop a running read, checked by the engine's long loops.
//!
//! The engine knows nothing of who cancels (an MCP host pressing Escape, a server shutting down):
//! the caller makes an [`Interrupt`], hands a clone to the [`crate::Repo`] it reads through
//! ([`crate::Repo::with_interrupt`]), and triggers it from anywhere. Reads that can take long check
//! it between units of work (each commit of a history walk, each file rendered and each hunk
//! weighed by `diff.text` and `commit.details`, each path of a work-tree hash) and stop with
//! [`crate::Error::Cancelled`]; gix calls that take an interrupt flag get this one. A read that has
//! no such loop finishes normally: triggering is a request, never a guarantee.
//!
//! ```
//! use fluxgit_engine::Interrupt;
//!
//! let interrupt = Interrupt::new();
//! let seen_by_the_read = interrupt.clone();
//! assert!(seen_by_the_read.check().is_ok());
//! interrupt.trigger();
//! assert!(matches!(seen_by_the_read.check(), Err(fluxgit_engine::Error::Cancelled)));
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};

/// A shared cancellation flag: clones share it; once triggered it stays triggered. Cheap to clone
/// and to check (one relaxed atomic load).
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// A flag that is not triggered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every read holding a clone of this flag to stop at its next check.
    pub fn trigger(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`Interrupt::trigger`] was called on this flag or a clone of it.
    pub fn is_triggered(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Ok(())` while not triggered.
    ///
    /// # Errors
    /// [`Error::Cancelled`] once triggered.
    pub fn check(&self) -> Result<()> {
        if self.is_triggered() { Err(Error::Cancelled) } else { Ok(()) }
    }

    /// Whether `other` is this flag or a clone of it.
    pub fn same_flag(&self, other: &Interrupt) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The flag itself, for gix calls that take `should_interrupt: &AtomicBool`.
    pub(crate) fn flag(&self) -> &AtomicBool {
        &self.0
    }
}
