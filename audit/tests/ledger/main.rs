//! `fluxgit-audit` integration tests, one test binary (STYLE §5): rotation, pruning and checkpoints
//! (`retention`), appends from several handles at once (`concurrency`), a ledger written by the published
//! sidecar 0.2.1 (`interop`), torn tails cut and recorded (`torn`), and FIFOs, devices and links in place of
//! ledger files (`hostile`). The full disk itself is in the crate's unit tests (`src/ledger/tests.rs`), which
//! can put a disk that fills up under the writer.

mod concurrency;
#[cfg(unix)]
mod hostile;
mod interop;
mod retention;
mod support;
mod torn;
