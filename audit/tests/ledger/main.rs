//! `fluxgit-audit` integration tests, one test binary (STYLE §5): rotation, pruning and checkpoints
//! (`retention`), appends from several handles at once (`concurrency`), and a ledger written by the published
//! sidecar 0.2.1 (`interop`).

mod concurrency;
mod interop;
mod retention;
mod support;
