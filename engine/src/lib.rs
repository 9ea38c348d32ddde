//! The FluxGit context engine: repository resolution, facets and token budgets.
//!
//! The engine answers "what state is this repository in" as typed, serialisable Rust values, within
//! a token budget. It knows nothing of MCP or JSON-RPC (see `ARCHITECTURE.md`). The MCP sidecar
//! maps arguments in and wraps results in its envelope. The budget is measured on that envelope
//! through a `measure` callback ([`budget::fit`]).
//!
//! Every read goes through gix. No git process is started and nothing is written.
//!
//! # API
//!
//! The entry points are [`Engine::new`] and [`Engine::resolve`] (design.md#roots), then one
//! `Engine` method per tool: [`Engine::brief`], [`Engine::status`], [`Engine::refs`],
//! [`Engine::history`], [`Engine::reflog`], [`Engine::scope`], [`Engine::file_read`] and the
//! others. The crate root re-exports the shared types ([`Repo`], [`Error`], [`Budgeted`],
//! [`Interrupt`]) and the few items other crates take from internal modules (the proposal checks,
//! CODEOWNERS parsing).
//!
//! A module is public when its types are in an answer or in an `Engine` method: each tool's module
//! ([`brief`], [`status`], [`refs`], [`history`], [`reflog`], [`scope`], [`search`],
//! [`branch_stack`], [`worktree_list`], [`submodule_status`], [`conflict`], [`diff`], [`file`],
//! [`fleet`], [`agents`]), the [`facets`] an answer holds, [`budget`], [`cache`], [`commit_index`],
//! [`render`] and [`ancestry`] (the exact walks the tests hold to git's). Every other module is
//! private, and `unreachable_pub` keeps each item that no other crate can reach at `pub(crate)`.
//!
//! ```no_run
//! let engine = fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots: vec!["/home/me".into()] });
//! let repo = engine.resolve("/home/me/project")?;
//! let brief = engine.brief(&repo, &fluxgit_engine::brief::Options::default(), 600, &mut |brief| {
//!     fluxgit_engine::budget::count_tokens(&serde_json::to_string(brief).expect("serialises"))
//! })?;
//! println!("{}", serde_json::to_string(&brief)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod abbrev;
pub mod agents;
pub mod ancestry;
pub mod branch_stack;
pub mod brief;
pub mod budget;
pub mod cache;
mod codeowners;
pub mod collision;
pub mod commit_index;
mod compact;
mod compare;
pub mod conflict;
pub mod diff;
mod engine;
mod error;
pub mod facets;
pub mod file;
pub mod fleet;
mod guard;
mod hex_digest;
pub mod history;
mod interrupt;
mod lists;
mod o200k;
mod objects;
mod pack_index;
mod pickaxe;
mod quote;
mod reachable;
pub mod reflog;
pub mod refs;
mod regular_file;
pub mod render;
mod repository;
mod revision;
pub mod scope;
pub mod search;
mod semantic;
pub mod status;
pub mod submodule_status;
pub mod symbol_log;
mod tool_names;
mod walks;
pub mod worktree_list;

pub use budget::{Budgeted, Measure};
pub use codeowners::{CodeOwners, parse as parse_codeowners};
pub use compact::Implied;
pub use engine::{Engine, Options, Repo};
pub use error::{Error, InvalidReason, ItemError, Result, Unreadable};
pub use interrupt::Interrupt;
pub use repository::{Location, check_relative_path};
pub use revision::{MAX_LEN as MAX_REVISION_LEN, check as check_revision, check_branch_name};
pub use tool_names::{Spelling, ToolName};
