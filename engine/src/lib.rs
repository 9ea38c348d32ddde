//! The FluxGit context engine: repository resolution, facets and token budgets.
//!
//! The engine answers "what state is this repository in" as typed, serialisable Rust values, within a token budget.
//! It knows nothing of MCP or JSON-RPC (see `ARCHITECTURE.md`): the MCP sidecar maps arguments in and wraps results
//! in its envelope; the budget is measured on that envelope through a `measure` callback ([`budget::fit`]).
//!
//! Main entry points: [`Engine::resolve`] (design.md §4.4), then [`Engine::brief`], [`Engine::status`],
//! [`Engine::refs`], [`Engine::history`], [`Engine::reflog`], [`Engine::scope`], [`Engine::file_read`]. Every read goes through gix; no git
//! process is started and nothing is written.
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

mod abbrev;
pub mod agents;
pub mod ancestry;
pub mod branch_stack;
pub mod brief;
pub mod budget;
pub mod cache;
pub mod codeowners;
pub mod commit_index;
mod compact;
mod compare;
pub mod conflict;
pub mod diff;
mod engine;
pub mod error;
pub mod facets;
pub mod file;
pub mod fleet;
mod guard;
mod hex_digest;
pub mod history;
pub mod interrupt;
pub mod lists;
mod o200k;
mod objects;
mod pack_index;
mod quote;
pub mod reflog;
pub mod refs;
mod regular_file;
pub mod render;
pub mod repository;
pub mod revision;
pub mod scope;
pub mod search;
pub mod semantic;
pub mod status;
pub mod submodule_status;
mod tool_names;
mod walks;
pub mod worktree_list;

pub use budget::{Budgeted, Measure};
pub use compact::Implied;
pub use engine::{Engine, Options, Repo};
pub use error::{Error, InvalidReason, ItemError, Result, Unreadable};
pub use interrupt::Interrupt;
pub use tool_names::{Spelling, ToolName};
