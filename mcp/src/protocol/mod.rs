//! The MCP protocol layer: a synchronous JSON-RPC dispatcher over [`serde_json::Value`] for both protocol eras
//! (SPEC §4.1, §4.3).
//!
//! [`Server::handle`] takes the bytes of one frame and returns the response to write, if any. It never fails:
//! every malformed message gets its JSON-RPC error and the next message is served normally.
//!
//! Eras:
//! - legacy (2024-11-05 .. 2025-11-25): `initialize` negotiates a version for the session (echoed if supported,
//!   else 2025-11-25) and records the client name; `ping`, `tools/list` and `tools/call` follow. A legacy request
//!   that arrives before `initialize` is served anyway, at 2025-11-25 with the default client name: refusing it
//!   would help nobody, and the MCP host may have restarted us between its handshake and its call.
//! - modern (2026-07-28, stateless): any request whose `params._meta` carries
//!   `io.modelcontextprotocol/protocolVersion` is served at that version without touching session state; it must
//!   also carry `io.modelcontextprotocol/clientCapabilities`. The version may also be a legacy one (as rmcp
//!   allows): the request is then served statelessly with that version's fields. `server/discover` answers the
//!   supported versions, and is answered even without `_meta` (it is the bootstrap probe). Modern results carry
//!   `resultType: "complete"` and `_meta` serverInfo; `tools/list` and `server/discover` carry `ttlMs` and
//!   `cacheScope`. `ping` no longer exists in 2026-07-28 (as in rmcp and the Python SDK): -32601.
//!
//! Fields a version does not know are omitted: tool `annotations` from 2025-03-26, tool `title`, `outputSchema`
//! and `structuredContent` from 2025-06-18, `resultType`/`ttlMs`/`cacheScope` only in 2026-07-28.
//!
//! ```
//! use fluxgit_mcp_sidecar::protocol::Server;
//! use fluxgit_mcp_sidecar::tools::Registry;
//!
//! let engine = fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots: vec![] });
//! let mut server = Server::new(Registry::new(), engine);
//! let response = server.handle(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
//! assert_eq!(response["result"], serde_json::json!({}));
//! assert!(server.handle(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).is_none());
//! ```

mod context;
mod jsonrpc;
mod methods;
mod observe;
#[cfg(test)]
mod tests;
mod version;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use serde_json::{Value, json};

pub use context::{
    DEFAULT_CLIENT_NAME, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, META_SERVER_INFO,
    sanitize_client_name, sanitize_client_version,
};
pub use jsonrpc::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, UNSUPPORTED_PROTOCOL_VERSION,
};
pub use methods::{CACHE_SCOPE, INSTRUCTIONS, LIST_TTL_MS, ServerInfo};
pub use observe::{CallObserver, CallRecord};
pub use version::Version;

use crate::bridge::Bridge;
use crate::protocol::context::RequestContext;
use crate::protocol::jsonrpc::{Incoming, Rejected};
use crate::tools::{ProtocolError, Registry};
use crate::transport::{Frame, MAX_FRAME_BYTES};

/// Methods that are requests: sent without an id they are logged and not executed (SPEC §4.1).
const REQUEST_METHODS: [&str; 5] = ["initialize", "ping", "server/discover", "tools/list", "tools/call"];

/// One MCP server: the tool registry, the engine, the legacy session state, and the observers of tool calls.
pub struct Server {
    registry: Registry,
    engine: fluxgit_engine::Engine,
    bridge: Bridge,
    info: ServerInfo,
    session: Session,
    observers: Vec<Box<dyn CallObserver>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("registry", &self.registry)
            .field("info", &self.info)
            .field("session", &self.session)
            .field("observers", &self.observers.len())
            .finish_non_exhaustive()
    }
}

/// What a legacy `initialize` established.
#[derive(Debug, Default)]
struct Session {
    /// The negotiated version; `None` before `initialize`.
    negotiated: Option<Version>,
    /// The sanitised `clientInfo.name`; `None` before `initialize`.
    client_name: Option<String>,
    /// The sanitised `clientInfo.version`, if declared.
    client_version: Option<String>,
}

impl Server {
    /// A server offering the tools of `registry`, backed by `engine`, identifying itself as
    /// [`ServerInfo::CURRENT`], without a gateway ([`Bridge::NONE`]).
    pub fn new(registry: Registry, engine: fluxgit_engine::Engine) -> Self {
        Self {
            registry,
            engine,
            bridge: Bridge::NONE,
            info: ServerInfo::CURRENT,
            session: Session::default(),
            observers: Vec::new(),
        }
    }

    /// The same server, proposing writes through `bridge`.
    pub fn with_bridge(self, bridge: Bridge) -> Self {
        Self { bridge, ..self }
    }

    /// Adds an observer told about every `tools/call` after it ran, before its response is written (the audit
    /// ledger, the presence file). Observers run in the order added.
    pub fn observe_calls(&mut self, observer: Box<dyn CallObserver>) {
        self.observers.push(observer);
    }

    /// The tools served.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The engine tools run against.
    pub fn engine(&self) -> &fluxgit_engine::Engine {
        &self.engine
    }

    /// The version negotiated by the last legacy `initialize`, if any.
    pub fn negotiated_version(&self) -> Option<Version> {
        self.session.negotiated
    }

    /// The sanitised client name of the legacy session ([`DEFAULT_CLIENT_NAME`] before `initialize`).
    pub fn client_name(&self) -> &str {
        self.session.client_name.as_deref().unwrap_or(DEFAULT_CLIENT_NAME)
    }

    /// Handles one frame from the transport: messages go to [`Self::handle`]; oversized frames get `-32600` and
    /// malformed `Content-Length` headers `-32700`, both with id `null`.
    pub fn handle_frame(&mut self, frame: Frame) -> Option<Value> {
        match frame {
            Frame::Message(message) => self.handle(&message),
            Frame::TooLarge { size } => {
                tracing::warn!(size, "frame over the size limit refused");
                Some(jsonrpc::failure(Value::Null, &too_large_error()))
            }
            Frame::Malformed { reason } => {
                tracing::warn!(%reason, "malformed Content-Length frame");
                let error = ProtocolError::new(PARSE_ERROR, format!("Parse error: {reason}"), None);
                Some(jsonrpc::failure(Value::Null, &error))
            }
        }
    }

    /// Handles the bytes of one message and returns the response to send, or `None` for notifications and for
    /// responses sent by the client.
    pub fn handle(&mut self, message: &[u8]) -> Option<Value> {
        let value: Value = match serde_json::from_slice(message) {
            Ok(value) => value,
            Err(error) => {
                tracing::debug!(%error, "parse error");
                let error = ProtocolError::new(PARSE_ERROR, format!("Parse error: {error}"), None);
                return Some(jsonrpc::failure(Value::Null, &error));
            }
        };
        match jsonrpc::classify(value) {
            Err(rejected) => {
                let Rejected { id, error } = *rejected;
                Some(jsonrpc::failure(id, &error))
            }
            Ok(Incoming::Response) => {
                tracing::debug!("ignoring a response from the client: this server sends no requests");
                None
            }
            Ok(Incoming::Notification { method }) => {
                if REQUEST_METHODS.contains(&method.as_str()) {
                    tracing::warn!(%method, "request sent without an id (as a notification): not executed");
                } else {
                    tracing::debug!(%method, "notification");
                }
                None
            }
            Ok(Incoming::Request { id, method, params }) => {
                tracing::debug!(%method, %id, "request");
                Some(match self.dispatch(&method, params.as_ref()) {
                    Ok(result) => jsonrpc::success(id, result),
                    Err(error) => jsonrpc::failure(id, &error),
                })
            }
        }
    }

    /// Routes one request to its method and adds the modern-era fields where the version asks for them.
    fn dispatch(&mut self, method: &str, params: Option<&Value>) -> Result<Value, ProtocolError> {
        if params.is_some_and(Value::is_array) {
            return Err(ProtocolError::invalid_params("params must be an object, not an array", None));
        }
        if method == "initialize" {
            return self.initialize(params);
        }
        let meta = context::request_meta(params);
        let context = if context::is_modern_request(meta) {
            context::modern_context(meta.unwrap_or(&serde_json::Map::new()))?
        } else if method == "server/discover" {
            RequestContext {
                version: Version::NEWEST,
                client_name: DEFAULT_CLIENT_NAME.to_owned(),
                client_version: None,
            }
        } else {
            RequestContext {
                version: self.session.negotiated.unwrap_or(Version::NEWEST_LEGACY),
                client_name: self.client_name().to_owned(),
                client_version: self.session.client_version.clone(),
            }
        };
        let result = match method {
            "ping" if context.version.has_ping() => json!({}),
            "ping" => {
                return Err(ProtocolError::new(
                    METHOD_NOT_FOUND,
                    "Method not found: ping (removed in protocol version 2026-07-28)",
                    None,
                ));
            }
            // Discovery is a modern-era method: its result always has the modern shape.
            "server/discover" => return Ok(methods::decorate_modern(methods::discover_result(), &self.info)),
            "tools/list" => methods::list_tools_result(&self.registry, context.version),
            "tools/call" => {
                let started = Instant::now();
                let tools = methods::Tools { registry: &self.registry, engine: &self.engine, bridge: &self.bridge };
                let outcome = methods::call_tool(&tools, &context, params);
                self.notify_observers(params, &context, outcome.as_ref(), started);
                methods::call_result(&outcome?, context.version)
            }
            _ => return Err(ProtocolError::method_not_found(method)),
        };
        Ok(if context.version.is_modern() { methods::decorate_modern(result, &self.info) } else { result })
    }

    /// Legacy `initialize`: negotiates the session version and records the client name.
    fn initialize(&mut self, params: Option<&Value>) -> Result<Value, ProtocolError> {
        let Some(requested) = params.and_then(|params| params.get("protocolVersion")).and_then(Value::as_str) else {
            return Err(ProtocolError::invalid_params("initialize: params.protocolVersion must be a string", None));
        };
        let version = Version::parse(requested).filter(|version| version.is_legacy()).unwrap_or(Version::NEWEST_LEGACY);
        let declared_name = params
            .and_then(|params| params.get("clientInfo"))
            .and_then(|info| info.get("name"))
            .and_then(Value::as_str);
        let client_name = sanitize_client_name(declared_name);
        let declared_version = params
            .and_then(|params| params.get("clientInfo"))
            .and_then(|info| info.get("version"))
            .and_then(Value::as_str);
        tracing::info!(requested, negotiated = %version, client = %client_name, "initialize");
        self.session = Session {
            negotiated: Some(version),
            client_name: Some(client_name),
            client_version: sanitize_client_version(declared_version),
        };
        Ok(methods::initialize_result(version, &self.info))
    }

    /// Tells every observer about a finished `tools/call`; an observer that panics is logged and skipped.
    fn notify_observers(
        &mut self,
        params: Option<&Value>,
        context: &RequestContext,
        outcome: Result<&crate::tools::ToolOutput, &ProtocolError>,
        started: Instant,
    ) {
        if self.observers.is_empty() {
            return;
        }
        let name = params.and_then(|params| params.get("name")).and_then(Value::as_str);
        let record = CallRecord {
            name,
            definition: name.and_then(|name| self.registry.lookup(name)).map(|tool| tool.definition()),
            arguments: params.and_then(|params| params.get("arguments")),
            client_name: &context.client_name,
            client_version: context.client_version.as_deref(),
            outcome,
            duration: started.elapsed(),
        };
        for observer in &mut self.observers {
            if catch_unwind(AssertUnwindSafe(|| observer.observe(&record))).is_err() {
                tracing::error!("a tools/call observer panicked; the call's response is unaffected");
            }
        }
    }
}

/// The error for a frame over [`MAX_FRAME_BYTES`]: `-32600`, naming the limit.
fn too_large_error() -> ProtocolError {
    ProtocolError::invalid_request(format!(
        "Message too large: frames over {MAX_FRAME_BYTES} bytes (8 MiB) are refused"
    ))
}
