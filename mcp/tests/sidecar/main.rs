//! The sidecar's integration tests, one test binary (STYLE §5): the real binary over stdio (`protocol`,
//! `tools_stdio`, `history`, `scope`, `topology`, `diff_tools`, `file_tools`), the token budgets of the tools on real fixtures (`budget`), and the
//! write-proposal bridge against a fake gateway (`bridge`, `bridge_status`, `fake_gateway`), and the gateway read tools
//! (`gateway_reads`), the audit of every call (`audit`), `verify-audit` (`verify_audit`) and the presence file
//! (`presence`), the engine cache's freshness and diagnostics over stdio (`cache`), `agents_presence` with
//! previews' `otherAgents` (`agents`), the fleet tools and `fleet` subcommands (`fleet`), and calls served
//! concurrently and cancelled (`concurrency`), `install HOST` on a temporary HOME (`install`) and a hostile one
//! (`install_hostile`), `install HOST --remove` (`install_remove`), and the messages a newcomer meets first:
//! refusals outside the roots, unknown tools, the terminal notice (`first_use`).

mod agents;
mod audit;
mod audit_export;
mod bridge;
mod bridge_status;

mod budget;
mod cache;
mod concurrency;
mod conflict;
mod diff_tools;
mod fake_gateway;
mod file_tools;
mod first_use;
mod fleet;
mod forged_text;
mod formats;
mod gateway_reads;
mod generations;
mod hints;
mod history;
mod hostile;
mod hostile_content;
mod http;
mod install;
mod install_hostile;
mod install_remove;
mod listing;
mod presence;
mod protocol;
mod scope;
mod search;
mod support;
mod tools_stdio;
mod topology;
mod verify_audit;
