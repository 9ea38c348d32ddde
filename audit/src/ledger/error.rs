//! Why an append failed: its own file, so that the checkpoint, which the ledger writes, can name it without
//! importing the ledger.

use std::io;
use std::path::PathBuf;

use crate::files::MAX_LINE_BYTES;

/// Why an append failed. The chain is as before: a rotation may have happened, and a write that failed part-way
/// leaves a torn tail that the next append cuts and records.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    /// Reading, writing, renaming or syncing failed (e.g. disk full), or a ledger file is not a regular file (a
    /// FIFO, a device, a symbolic link).
    #[error("audit ledger {path:?}: {source}")]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The chain's last whole line is not a chained entry: the file was edited, or its last line is over the line
    /// limit. Appending would extend a broken chain, so the ledger refuses until a person checks it
    /// (`verify-audit`) and moves it aside. A torn last line is not this: it is cut and recorded.
    #[error("audit ledger {path:?}: cannot continue the chain: {reason}; check it with verify-audit")]
    BrokenTail {
        /// The file whose tail is broken.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The sealed entry is longer than the 256 KiB line limit.
    #[error("audit entry of {0} bytes is over the {MAX_LINE_BYTES}-byte line limit")]
    LineTooLong(usize),
}
