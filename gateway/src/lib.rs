//! `fluxgit-gateway`: the reference approval gateway of FluxGit MCP (design.md#gateway).
//!
//! The sidecar (`fluxgit-mcp-sidecar`) never writes to a repository: each write is a proposal it POSTs to this
//! gateway over loopback HTTP (the contract is `docs/gateway-http.md`). The gateway checks the proposal again,
//! applies the agent policy and quota, journals it durably, and waits for a person: `fluxgit-gateway show ID`
//! prints the card with a one-time code, `fluxgit-gateway approve ID` (on an interactive terminal, with that code)
//! approves it, and the serving gateway executes it with the git CLI behind a restore point.
//! The two binaries never link each other.
//!
//! - [`config`]: environment in two stages (run dir, allowed roots, policy file, audit ledger);
//! - [`policy`]: the TOML agent policy (`FLUXGIT_MCP_AGENT_POLICY`);
//! - [`journal`]: the SQLite journal (WAL, `synchronous=FULL`): proposals, transitions, restore points;
//! - [`proposal`]: validation of a proposal body on receipt (never trusting the sidecar);
//! - [`repo`] and [`git`]: the canonical repository and the git CLI;
//! - [`http`]: the loopback HTTP API (no route can approve); [`connection`]: its connections (stall timeout, rate);
//! - [`card`]: the card a person reads (`show`);
//! - [`approval`]: `approve`, `reject`, the one-time code;
//! - [`executor`] and [`restore`]: running approved proposals behind restore points, and putting them back;
//!   [`worktree_remove`]: the worktree a worktreeRemove names and what removing it would lose;
//! - [`web`]: the approval page (a browser on loopback, under a per-launch secret, same origin and CSRF checks);
//! - [`notify`]: a desktop notification per new proposal (D-Bus), else a bell on stderr; [`desktop`]: opening
//!   the page in a browser;
//! - [`service`]: the gateway as a systemd user unit or launchd agent;
//! - [`serve`]: the serving loop (HTTP + executor worker + expiry), [`audit`]: ledger entries for decisions.
//!
//! ```no_run
//! let config = fluxgit_gateway::config::Config::from_env()?;
//! let journal = fluxgit_gateway::journal::Journal::open(&config.run_dir)?;
//! for proposal in journal.list()? {
//!     println!("{} {} {}", proposal.id, proposal.op, proposal.status.as_str());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

pub mod approval;
pub mod audit;
pub mod card;
pub mod config;
pub mod connection;
pub mod desktop;
pub mod executor;
pub mod git;
pub mod http;
pub mod journal;
pub mod notify;
pub mod policy;
pub mod proposal;
pub mod repo;
pub mod restore;
pub mod serve;
pub mod service;
pub mod time;
pub mod web;
pub mod worktree_remove;
