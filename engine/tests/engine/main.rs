//! The engine's integration tests, one test binary: one module per area, each checked against the git CLI (the
//! test map in CONTRIBUTING.md says what each covers). One binary links gix and tantivy once instead of once per
//! file. Two stay binaries of their own. `generation_tables.rs` reads process-wide counters of history reads and
//! resets the process-wide generation tables, which the walks of every other module here would disturb.
//! `freshness.rs` asserts how each answer was validated (the watcher, its limit, stat validation): in this binary
//! the other modules' engines hold up to the user's 128 inotify instances at once, so its watchers could not start.
//!
//! Run one module with a filter: `cargo test --workspace --test engine oracle::`.

#[path = "../common/mod.rs"]
mod common;

mod agents;
mod ahead_behind;
mod blame;
mod brief_answers;
mod collisions;
mod degraded;
mod diffs;
mod file;
mod fleet;
mod history;
mod hostile;
mod index_feed;
mod kept_walks;
mod lost;
mod oracle;
mod pickaxe;
mod properties;
mod roots;
mod scope;
mod search;
mod semantic;
mod shallow;
mod skewed_walks;
mod symbols;
mod topology;
mod untracked;
