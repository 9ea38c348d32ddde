//! The MCP protocol layer: a synchronous JSON-RPC dispatcher over [`serde_json::Value`] for both protocol eras
//! (design.md#transport, §4.3).
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
//! let server = Server::new(Registry::new(), engine);
//! let response = server.handle(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
//! assert_eq!(response["result"], serde_json::json!({}));
//! assert!(server.handle(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).is_none());
//! ```

mod context;
mod jsonrpc;
mod methods;
mod observe;
mod suggest;
#[cfg(test)]
mod tests;
mod version;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use fluxgit_engine::Interrupt;

use serde_json::value::RawValue;
use serde_json::{Value, json};

pub use context::{
    DEFAULT_CLIENT_NAME, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, META_SERVER_INFO,
    sanitize_client_name, sanitize_client_version,
};
pub use jsonrpc::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, REQUEST_CANCELLED,
    UNSUPPORTED_PROTOCOL_VERSION,
};
pub use methods::{CACHE_SCOPE, INSTRUCTIONS, LIST_TTL_MS, ServerInfo};
pub use observe::{CallObserver, CallRecord};
pub use version::Version;

use crate::bridge::Bridge;
use crate::protocol::context::RequestContext;
use crate::protocol::jsonrpc::{Incoming, Rejected};
use crate::tools::{ProtocolError, Registry};
use crate::transport::{Frame, MAX_FRAME_BYTES};

/// The observers of tool calls, `None` once detached.
type Observers = Mutex<Option<Vec<Box<dyn CallObserver>>>>;

/// Methods that are requests: sent without an id they are logged and not executed (design.md#transport).
const REQUEST_METHODS: [&str; 5] = ["initialize", "ping", "server/discover", "tools/list", "tools/call"];

/// The notification by which a client withdraws one of its requests (`params.requestId`).
pub const CANCELLED_NOTIFICATION: &str = "notifications/cancelled";

/// One MCP server: the tool registry, the engine, the legacy session state, and the observers of tool calls.
///
/// `Send + Sync`: the stdio loop ([`crate::serve`]) shares one server (and so one engine, one cache, one watcher)
/// across the calls it runs at once. The session and the observers sit behind locks: `initialize` is answered in
/// the order read, and observers see one finished call at a time.
pub struct Server {
    registry: Registry,
    engine: fluxgit_engine::Engine,
    bridge: Bridge,
    info: ServerInfo,
    session: SessionState,
    /// `None` once detached ([`Server::detach_observers`]): calls that finish later are not observed. Shared
    /// with the servers made [`Server::sharing_observers_of`] this one (one audit ledger, one presence file).
    observers: Arc<Observers>,
    /// The allowed roots and their origin, named in refusals of paths outside them ([`Server::with_roots`]).
    roots: Option<crate::config::RootsInForce>,
    /// The bearer token whose calls this server runs ([`Server::for_token`]), named in their audit entries.
    token: Option<String>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("registry", &self.registry)
            .field("info", &self.info)
            .field("session", &*lock(&self.session.0))
            .field("observers", &lock(&self.observers).as_ref().map_or(0, Vec::len))
            .finish_non_exhaustive()
    }
}

/// The state of one legacy session: what its `initialize` established. The stdio loop has one (inside the
/// [`Server`]); the HTTP transport one per `Mcp-Session-Id` ([`Server::step_in`]).
#[derive(Debug, Default)]
pub struct SessionState(Mutex<Session>);

impl SessionState {
    /// The version its `initialize` negotiated; `None` before `initialize`.
    pub fn negotiated_version(&self) -> Option<Version> {
        lock(&self.0).negotiated
    }

    /// The sanitised client name its `initialize` declared ([`DEFAULT_CLIENT_NAME`] before `initialize`).
    pub fn client_name(&self) -> String {
        lock(&self.0).client_name.clone().unwrap_or_else(|| DEFAULT_CLIENT_NAME.to_owned())
    }
}

/// What a legacy `initialize` established.
#[derive(Debug, Default, Clone)]
struct Session {
    /// The negotiated version; `None` before `initialize`.
    negotiated: Option<Version>,
    /// The sanitised `clientInfo.name`; `None` before `initialize`.
    client_name: Option<String>,
    /// The sanitised `clientInfo.version`, if declared.
    client_version: Option<String>,
}

/// What to do with one incoming frame ([`Server::step`]).
#[derive(Debug)]
pub enum Step {
    /// Handled at once: the response to write, or `None` (notifications, client responses).
    Reply(Option<Value>),
    /// A `tools/call`, checked and placed in its era and session, to run with [`Server::run_call`] (on any thread).
    Call(PendingCall),
    /// `notifications/cancelled` naming the request id to stop (`params.requestId`, a string or number).
    Cancel(Value),
}

/// A `tools/call` read but not yet run: its id, params and the protocol context it was received in.
#[derive(Debug)]
pub struct PendingCall {
    id: Value,
    params: Option<Value>,
    context: RequestContext,
    received: Instant,
}

impl PendingCall {
    /// The request id, as sent (a string or a number).
    pub fn id(&self) -> &Value {
        &self.id
    }

    /// The tool named by `params.name`, as sent (either spelling), if it is a string.
    pub fn tool_name(&self) -> Option<&str> {
        self.params.as_ref()?.get("name")?.as_str()
    }

    /// `params.arguments`, as sent, if present.
    pub fn arguments(&self) -> Option<&Value> {
        self.params.as_ref()?.get("arguments")
    }
}

/// Where [`Server::route`] sends a request.
enum Routed {
    /// Answered: the result member.
    Done(Value),
    /// A `tools/call` to run in this context.
    Call(RequestContext),
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
            session: SessionState::default(),
            observers: Arc::new(Mutex::new(Some(Vec::new()))),
            roots: None,
            token: None,
        }
    }

    /// The same server, running only the calls of the bearer token `name` (the HTTP transport): the observers
    /// see its calls under the session id `token:<name>/<client name>` (a client name never holds `:` or `/`).
    pub fn for_token(self, name: &str) -> Self {
        Self { token: Some(name.to_owned()), ..self }
    }

    /// The same server, telling `other`'s observers (and only those: its own are dropped) about its calls, so
    /// that several servers in one process keep one audit ledger and one presence file.
    pub fn sharing_observers_of(self, other: &Server) -> Self {
        Self { observers: Arc::clone(&other.observers), ..self }
    }

    /// The same server, naming `roots` (the roots in force and where they came from) in every refusal of a path
    /// outside them.
    pub fn with_roots(self, roots: crate::config::RootsInForce) -> Self {
        Self { roots: Some(roots), ..self }
    }

    /// The same server, proposing writes through `bridge`.
    pub fn with_bridge(self, bridge: Bridge) -> Self {
        Self { bridge, ..self }
    }

    /// Adds an observer told about every `tools/call` after it ran, before its response is written (the audit
    /// ledger, the presence file). Observers run in the order added, for one call at a time, in the order the
    /// calls finish.
    pub fn observe_calls(&mut self, observer: Box<dyn CallObserver>) {
        if let Some(observers) = lock(&self.observers).as_mut() {
            observers.push(observer);
        }
    }

    /// Drops every observer, waiting for one that is running: calls that finish afterwards (abandoned at the end
    /// of input) write no audit entry and no presence file.
    pub fn detach_observers(&self) {
        lock(&self.observers).take();
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
        self.session.negotiated_version()
    }

    /// The sanitised client name of the legacy session ([`DEFAULT_CLIENT_NAME`] before `initialize`).
    pub fn client_name(&self) -> String {
        self.session.client_name()
    }

    /// Handles one frame from the transport and runs a `tools/call` at once, on this thread, without a way to
    /// cancel it (the `call` subcommand and tests); the stdio loop uses [`Self::step`] and [`Self::run_call`].
    /// Oversized frames get `-32600` and malformed `Content-Length` headers `-32700`, both with id `null`.
    pub fn handle_frame(&self, frame: Frame) -> Option<Value> {
        match self.step(frame) {
            Step::Reply(reply) => reply,
            Step::Call(call) => Some(value(&self.run_call(call, &Interrupt::new()))),
            Step::Cancel(_) => None,
        }
    }

    /// Handles the bytes of one message as [`Self::handle_frame`] does, and returns the response to send, or
    /// `None` for notifications and for responses sent by the client.
    pub fn handle(&self, message: &[u8]) -> Option<Value> {
        match self.step_message(message) {
            Step::Reply(reply) => reply,
            Step::Call(call) => Some(value(&self.run_call(call, &Interrupt::new()))),
            Step::Cancel(_) => None,
        }
    }

    /// Reads one frame: everything but `tools/call` is answered here, at once and in order (`initialize` sets the
    /// session before the next frame is read); a `tools/call` is checked for its era and returned to be run.
    pub fn step(&self, frame: Frame) -> Step {
        match frame {
            Frame::Message(message) => self.step_message(&message),
            Frame::TooLarge { size } => {
                tracing::warn!(size, "frame over the size limit refused");
                Step::Reply(Some(jsonrpc::failure(Value::Null, &too_large_error())))
            }
            Frame::Malformed { reason } => {
                tracing::warn!(%reason, "malformed Content-Length frame");
                let error = ProtocolError::new(PARSE_ERROR, format!("Parse error: {reason}"), None);
                Step::Reply(Some(jsonrpc::failure(Value::Null, &error)))
            }
        }
    }

    /// [`Self::step`] for the bytes of one message.
    fn step_message(&self, message: &[u8]) -> Step {
        self.step_in(message, &self.session)
    }

    /// [`Self::step`] for the bytes of one message in `session` (the HTTP transport's sessions): `initialize`
    /// sets `session`, and legacy requests are served in it.
    pub fn step_in(&self, message: &[u8], session: &SessionState) -> Step {
        let value: Value = match serde_json::from_slice(message) {
            Ok(value) => value,
            Err(error) => {
                tracing::debug!(%error, "parse error");
                let error = ProtocolError::new(PARSE_ERROR, format!("Parse error: {error}"), None);
                return Step::Reply(Some(jsonrpc::failure(Value::Null, &error)));
            }
        };
        match jsonrpc::classify(value) {
            Err(rejected) => {
                let Rejected { id, error } = *rejected;
                Step::Reply(Some(jsonrpc::failure(id, &error)))
            }
            Ok(Incoming::Response) => {
                tracing::debug!("ignoring a response from the client: this server sends no requests");
                Step::Reply(None)
            }
            Ok(Incoming::Notification { method, params }) => {
                if method == CANCELLED_NOTIFICATION {
                    match params.as_ref().and_then(|params| params.get("requestId")) {
                        Some(id @ (Value::String(_) | Value::Number(_))) => return Step::Cancel(id.clone()),
                        _ => tracing::debug!("notifications/cancelled without a string or number requestId: ignored"),
                    }
                } else if REQUEST_METHODS.contains(&method.as_str()) {
                    tracing::warn!(%method, "request sent without an id (as a notification): not executed");
                } else {
                    tracing::debug!(%method, "notification");
                }
                Step::Reply(None)
            }
            Ok(Incoming::Request { id, method, params }) => {
                tracing::debug!(%method, %id, "request");
                match self.route(&method, params.as_ref(), session) {
                    Ok(Routed::Done(result)) => Step::Reply(Some(jsonrpc::success(id, result))),
                    Ok(Routed::Call(context)) => {
                        Step::Call(PendingCall { id, params, context, received: Instant::now() })
                    }
                    Err(error) => Step::Reply(Some(jsonrpc::failure(id, &error))),
                }
            }
        }
    }

    /// Runs a `tools/call` returned by [`Self::step`], tells the observers, and returns its response. A triggered
    /// `interrupt` stops the engine's long reads (the call then ends in a `-32800` error, which the stdio loop
    /// does not send).
    pub fn run_call(&self, call: PendingCall, interrupt: &Interrupt) -> Box<RawValue> {
        let PendingCall { id, params, context, received } = call;
        let tools = methods::Tools { registry: &self.registry, engine: &self.engine, bridge: &self.bridge, interrupt };
        let mut outcome = methods::call_tool(&tools, &context, params.as_ref());
        if let (Err(error), Some(roots)) = (&mut outcome, &self.roots) {
            roots.explain_refusal(error);
        }
        self.notify_observers(params.as_ref(), &context, outcome.as_ref(), received);
        match outcome {
            Ok(output) => methods::call_response(&id, &output, context.version, &self.info),
            Err(error) => raw(&jsonrpc::failure(id, &error)),
        }
    }

    /// Refuses a `tools/call` returned by [`Self::step`] without running it (a transport's authorization: a bearer
    /// token whose roots or toolsets do not cover the call): the observers see it fail with `error` (the audit
    /// records the refusal), and the reply is that error.
    pub fn refuse_call(&self, call: PendingCall, error: &ProtocolError) -> Box<RawValue> {
        let PendingCall { id, params, context, received } = call;
        self.notify_observers(params.as_ref(), &context, Err(error), received);
        raw(&jsonrpc::failure(id, error))
    }

    /// Routes one request to its method and adds the modern-era fields where the version asks for them; a
    /// `tools/call` is only placed in its context.
    fn route(&self, method: &str, params: Option<&Value>, session: &SessionState) -> Result<Routed, ProtocolError> {
        if params.is_some_and(Value::is_array) {
            return Err(ProtocolError::invalid_params("params must be an object, not an array", None));
        }
        if method == "initialize" {
            return self.initialize(params, session).map(Routed::Done);
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
            let session = lock(&session.0).clone();
            RequestContext {
                version: session.negotiated.unwrap_or(Version::NEWEST_LEGACY),
                client_name: session.client_name.unwrap_or_else(|| DEFAULT_CLIENT_NAME.to_owned()),
                client_version: session.client_version,
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
            "server/discover" => {
                return Ok(Routed::Done(methods::decorate_modern(methods::discover_result(), &self.info)));
            }
            "tools/list" => methods::list_tools_result(&self.registry, context.version),
            "tools/call" => return Ok(Routed::Call(context)),
            _ => return Err(ProtocolError::method_not_found(method)),
        };
        Ok(Routed::Done(if context.version.is_modern() {
            methods::decorate_modern(result, &self.info)
        } else {
            result
        }))
    }

    /// Legacy `initialize`: negotiates the session version and records the client name.
    fn initialize(&self, params: Option<&Value>, session: &SessionState) -> Result<Value, ProtocolError> {
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
        *lock(&session.0) = Session {
            negotiated: Some(version),
            client_name: Some(client_name),
            client_version: sanitize_client_version(declared_version),
        };
        Ok(methods::initialize_result(version, &self.info))
    }

    /// Tells every observer about a finished `tools/call`, one call at a time; an observer that panics is logged
    /// and skipped.
    fn notify_observers(
        &self,
        params: Option<&Value>,
        context: &RequestContext,
        outcome: Result<&crate::tools::ToolOutput, &ProtocolError>,
        received: Instant,
    ) {
        let mut observers = lock(&self.observers);
        let Some(observers) = observers.as_mut().filter(|observers| !observers.is_empty()) else {
            return;
        };
        let name = params.and_then(|params| params.get("name")).and_then(Value::as_str);
        let client_name = match &self.token {
            Some(token) => format!("token:{token}/{}", context.client_name),
            None => context.client_name.clone(),
        };
        let record = CallRecord {
            name,
            definition: name.and_then(|name| self.registry.lookup(name)).map(|tool| tool.definition()),
            arguments: params.and_then(|params| params.get("arguments")),
            client_name: &client_name,
            client_version: context.client_version.as_deref(),
            outcome,
            duration: received.elapsed(),
        };
        for observer in observers.iter_mut() {
            if catch_unwind(AssertUnwindSafe(|| observer.observe(&record))).is_err() {
                tracing::error!("a tools/call observer panicked; the call's response is unaffected");
            }
        }
    }
}

/// Locks `mutex`, also when a panic poisoned it (the state behind it stays usable: it is replaced whole).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The error for a frame over [`MAX_FRAME_BYTES`]: `-32600`, naming the limit.
fn too_large_error() -> ProtocolError {
    ProtocolError::invalid_request(format!(
        "Message too large: frames over {MAX_FRAME_BYTES} bytes (8 MiB) are refused"
    ))
}

/// A reply as the JSON text the transport writes.
pub fn raw(reply: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(reply).expect("JSON values serialise")
}

/// A serialised reply as a value (for callers that inspect replies: the `call` subcommand and tests).
fn value(reply: &RawValue) -> Value {
    serde_json::from_str(reply.get()).expect("replies are JSON")
}
