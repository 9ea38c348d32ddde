//! The engine's integration tests, one test binary: one module per area, each checked against the git CLI (the
//! test map in CONTRIBUTING.md says what each covers). One binary links gix and tantivy once instead of once per
//! file. `generation_tables.rs` stays a binary of its own: it reads process-wide counters of history reads and
//! resets the process-wide generation tables, which the walks of every other module here would disturb.
//!
//! Run one module with a filter: `cargo test --workspace --test engine oracle::`.

#[path = "../common/mod.rs"]
mod common;

mod agents;
mod ahead_behind;
mod blame;
mod degraded;
mod diffs;
mod file;
mod fleet;
mod freshness;
mod history;
mod index_feed;
mod kept_walks;
mod oracle;
mod properties;
mod roots;
mod scope;
mod search;
mod semantic;
mod shallow;
mod skewed_walks;
mod topology;
mod untracked;
