//! `fluxgit-mcp-sidecar`: the FluxGit MCP stdio server (design.md#mcp-layer).
//!
//! This library is internal to the `fluxgit-mcp-sidecar` binary; its API is not stable. It holds everything that
//! knows the protocol, so that the engine (`fluxgit-engine`) never does:
//! - [`transport`]: stdio framing (newline-delimited JSON and `Content-Length` frames, 8 MiB limit);
//! - [`protocol`]: the JSON-RPC dispatcher for both MCP eras ([`protocol::Server`]);
//! - [`tools`]: the tool contract ([`tools::Tool`]) and the [`tools::Registry`];
//! - [`bridge`]: the write-proposal bridge to the approval gateway (loopback HTTP);
//! - [`config`]: environment -> validated [`config::Config`];
//! - [`audit`]: the audit of every `tools/call` into the signed ledger (`fluxgit-audit`), [`presence`]: the
//!   presence file, [`shutdown`]: clean exit on signals.
//!
//! - [`install`]: `install HOST`, this server's entry merged into an MCP host's configuration file;
//! - [`serve`]: the stdio loop, running calls concurrently on tokio (cancellation, bounded parallelism);
//! - [`http`]: Streamable HTTP (`serve-http`) with Host/Origin checks, limits and static bearer tokens.
//!
//! ```
//! use std::io::Cursor;
//!
//! let engine = fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots: vec![] });
//! let server = fluxgit_mcp_sidecar::protocol::Server::new(fluxgit_mcp_sidecar::tools::Registry::new(), engine);
//! let input = Cursor::new(&b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n"[..]);
//! let options = fluxgit_mcp_sidecar::serve::Options::for_this_machine();
//! let output = fluxgit_mcp_sidecar::serve(server, input, Vec::new(), &options).unwrap();
//! assert_eq!(output, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\n");
//! ```

#![deny(missing_docs)]
#![warn(unreachable_pub)]

pub mod audit;
pub mod bridge;
pub mod config;
pub mod envelope;
pub mod http;
pub mod install;
pub mod presence;
pub mod protocol;
pub mod serve;
pub mod shutdown;
pub mod tools;
pub mod transport;

pub use serve::serve;
