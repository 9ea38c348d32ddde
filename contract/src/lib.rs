//! `fluxgit-contract`: the write contract shared by the sidecar, the gateway and the audit ledger (which never link
//! each other), and the wall clock every crate reads.
//!
//! - [`Operation`]: the twelve operation types of the write handshake (design.md#tools), their wire names (written
//!   once, in serde attributes), [`Operation::STEPS`], [`Operation::risk`], their field table
//!   ([`Operation::table`], from which the sidecar builds its schemas, checks and defaults) and their typed fields
//!   ([`Fields`], serde structs with today's wire names and defaults, e.g. [`ResetMode::Mixed`]).
//! - [`now_ms`], [`now_secs`], [`unix_ms`]: the wall clock in Unix milliseconds or seconds, saturating.
//!
//! Adding an operation is a variant in `operation.rs` and a table and struct in `fields.rs`; the compiler then
//! names every `match` in the gateway and the sidecar that must decide what to do with it (CONTRIBUTING.md).

#![deny(missing_docs)]

mod clock;
mod fields;
mod operation;
mod path;

pub use clock::{now_ms, now_ms_i64, now_secs, unix_ms};
pub use fields::{
    BranchDeleteFields, BranchFields, CommitFields, DEFAULT_REMOTE, Direction, Field, Fields, Fill, HEAD, Kind,
    MAX_DELETE_BRANCHES, MAX_DELETE_BRANCHES_PER_REPO, MAX_DELETE_REPOS, MAX_MESSAGE_CHARS, MAX_PATCH_BYTES, MAX_PATHS,
    MAX_STEPS, MergeFields, MergeStrategy, PatchFields, PlanFields, PushFields, RebaseFields, ResetFields, ResetMode,
    Step, SubmodulePointerFields, Target, WorktreeFields,
};
pub use operation::{OPERATIONS, Operation, Risk, STEP_TYPES, UnknownOperation};
pub use path::{lexical_path, resolved_path};
