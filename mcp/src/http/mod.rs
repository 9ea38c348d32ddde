//! Streamable HTTP (`serve-http`): the MCP transport for remote and shared use, at one endpoint path, both eras
//! as on stdio. Without tokens one [`Server`] (one engine, one cache) serves every connection; with tokens each
//! token's requests run on its own [`Server`] ([`Servers`]), whose engine allows only the token's roots, so that
//! no walk of the engine (folder scans, worktree lists) and no cached answer crosses tokens.
//!
//! - Legacy era (2025-03-26 .. 2025-11-25): a POSTed `initialize` opens a session and its answer carries
//!   `Mcp-Session-Id`; every later POST must carry it (missing: 400, unknown or ended: 404). A DELETE with it
//!   ends the session. Requests are answered with one JSON body (`application/json`), notifications and client
//!   responses with 202. GET (a server-sent event stream this server would never use) gets 405.
//! - Stateless era (2026-07-28): `server/discover` and any request with `_meta` protocolVersion need no session.
//! - `MCP-Protocol-Version`, when sent, must be a version this server speaks (400 otherwise).
//!
//! Safe by default (see docs/http.md): every request's `Host` must name a loopback name, the bound address or an
//! `--allowed-host`, and its `Origin`, when sent, must be a loopback origin or an `--allowed-origin` (403
//! otherwise: DNS rebinding). Bodies over [`MAX_FRAME_BYTES`] get 413 before they are read; a body that does not
//! arrive within [`Options::body_timeout`] gets 408 and its connection is closed (it never holds a call slot:
//! slots are taken once the body is read). At most [`Options::max_requests`] requests are handled at once (503
//! beyond, with `Retry-After`). With `--tokens`, every request needs `Authorization: Bearer <token>` (401 with
//! `WWW-Authenticate: Bearer` otherwise), a session belongs to the token that opened it, and a call may only name
//! repositories under the token's roots and tools of its toolsets: other calls are refused before anything is
//! read, as a path outside the allowed roots is on stdio (`-32602`, `data.reason: outside_allowed_roots`).
//!
//! Calls run as on stdio ([`crate::serve`]): on tokio's blocking pool, [`crate::serve::Options::parallelism`] at
//! once, interrupted after the deadline, cancelled by `notifications/cancelled` in their session or when their
//! client goes away.

pub mod tokens;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use fluxgit_engine::Interrupt;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::protocol::{
    INVALID_PARAMS, META_PROTOCOL_VERSION, PendingCall, REQUEST_CANCELLED, Server, SessionState, Step, Version,
};
use crate::serve::Watched;
use crate::tools::ProtocolError;
use crate::transport::MAX_FRAME_BYTES;
use tokens::{TokenEntry, Tokens};

/// The session header (legacy era).
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The protocol version header.
pub const VERSION_HEADER: &str = "mcp-protocol-version";
/// The default endpoint path.
pub const DEFAULT_PATH: &str = "/mcp";
/// The `cacheScope` of a `tools/list` answered to a token: it varies by token, so no shared cache may keep it.
pub const PRIVATE_CACHE_SCOPE: &str = "private";

/// How `serve-http` serves.
#[derive(Debug, Clone)]
pub struct Options {
    /// The endpoint path, e.g. `/mcp`; every other path gets 404.
    pub path: String,
    /// Bearer tokens required on every request; `None`: no authorization (loopback only).
    pub tokens: Option<Tokens>,
    /// Host names (without port) accepted in `Host` besides loopback names and the bound address.
    pub allowed_hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`) accepted in `Origin` besides loopback origins.
    pub allowed_origins: Vec<String>,
    /// How calls run: parallelism and deadline as on stdio.
    pub calls: crate::serve::Options,
    /// Requests handled at once (body read, call queued or running); 503 beyond.
    pub max_requests: usize,
    /// How long a request body may take to arrive, from the end of its headers.
    pub body_timeout: Duration,
    /// Legacy sessions open at once; the oldest is ended when a new one would pass it.
    pub max_sessions: usize,
}

impl Options {
    /// Defaults: path `/mcp`, no tokens, no extra hosts or origins, this machine's call options, 256 requests,
    /// 10 s per body, 1,024 sessions.
    pub fn new() -> Self {
        Self {
            path: DEFAULT_PATH.to_owned(),
            tokens: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            calls: crate::serve::Options::for_this_machine(),
            max_requests: 256,
            body_timeout: Duration::from_secs(10),
            max_sessions: 1024,
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Self::new()
    }
}

/// Errors starting the HTTP transport.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A bind address that is not loopback, without tokens.
    #[error(
        "refusing to listen on {0} without --tokens: a non-loopback address needs bearer tokens \
         (fluxgit-mcp-sidecar token add), see docs/http.md"
    )]
    Unprotected(SocketAddr),
    /// The endpoint path does not start with `/`.
    #[error("--path {0:?}: must start with '/'")]
    BadPath(String),
    /// A token without its own server ([`Servers::insert_token`]): its calls would run with the server's roots.
    #[error("token {0}: no server with its roots (an internal error): refusing to start")]
    NoServerForToken(String),
    /// Binding, or running the runtime, failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Checks `listen` and `options` before binding: a non-loopback address needs tokens.
///
/// # Errors
/// [`StartError::Unprotected`], [`StartError::BadPath`].
pub fn check(listen: SocketAddr, options: &Options) -> Result<(), StartError> {
    if !options.path.starts_with('/') {
        return Err(StartError::BadPath(options.path.clone()));
    }
    if !listen.ip().is_loopback() && options.tokens.as_ref().is_none_or(Tokens::is_empty) {
        return Err(StartError::Unprotected(listen));
    }
    Ok(())
}

/// A bound listener, ready for [`serve`].
#[derive(Debug)]
pub struct Bound {
    listener: std::net::TcpListener,
    /// The address bound (the port chosen when `:0` was asked).
    pub local: SocketAddr,
}

/// The servers requests run on: with tokens, one per token (its engine allows only the token's roots; see
/// [`Servers::insert_token`]); without, the shared one.
#[derive(Debug)]
pub struct Servers {
    shared: Arc<Server>,
    /// Each token's server and its roots in force (the token's within the server's).
    by_token: HashMap<String, (Arc<Server>, Vec<PathBuf>)>,
}

impl Servers {
    /// `shared` serves every request when no token is configured.
    pub fn new(shared: Server) -> Self {
        Self { shared: Arc::new(shared), by_token: HashMap::new() }
    }

    /// Runs the requests of the token named `name` on `server`, whose engine allows only `roots` (the token's
    /// within the server's, [`token_roots_within`]; see also [`crate::config::RootsInForce::for_token`],
    /// [`Server::for_token`]) and which shares the observers of the shared server
    /// ([`Server::sharing_observers_of`]). The transport's own check of a call's paths uses `roots` too.
    pub fn insert_token(&mut self, name: &str, server: Server, roots: Vec<PathBuf>) {
        self.by_token.insert(name.to_owned(), (Arc::new(server), roots));
    }

    /// The server of `token`'s requests: the token's own, `None` if it has none; the shared one without a token.
    fn of(&self, token: Option<&TokenEntry>) -> Option<&Arc<Server>> {
        match token {
            Some(token) => self.by_token.get(&token.name).map(|(server, _)| server),
            None => Some(&self.shared),
        }
    }
}

/// The roots of a token within the server's `server_roots` (both canonical): a token root under a server root
/// stays, a server root under a token root replaces it. Empty when they do not meet.
pub fn token_roots_within(token_roots: &[PathBuf], server_roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for token_root in token_roots {
        let token_root = std::fs::canonicalize(token_root).unwrap_or_else(|_| lexically_normal(token_root));
        for server_root in server_roots {
            let kept = if token_root.starts_with(server_root) {
                token_root.clone()
            } else if server_root.starts_with(&token_root) {
                server_root.clone()
            } else {
                continue;
            };
            if !roots.contains(&kept) {
                roots.push(kept);
            }
        }
    }
    roots
}

/// Binds `listen` after [`check`].
///
/// # Errors
/// [`check`]'s errors, or the bind's.
pub fn bind(listen: SocketAddr, options: &Options) -> Result<Bound, StartError> {
    check(listen, options)?;
    let listener = std::net::TcpListener::bind(listen)?;
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    Ok(Bound { listener, local })
}

/// Serves MCP over HTTP on `bound` until the process ends.
///
/// # Errors
/// [`StartError::NoServerForToken`] for a configured token without its server in `servers`; starting the runtime
/// or accepting on the listener.
pub fn serve(servers: Servers, bound: Bound, options: Options) -> Result<(), StartError> {
    if let Some(tokens) = &options.tokens
        && let Some(missing) = tokens.names().find(|name| !servers.by_token.contains_key(*name))
    {
        return Err(StartError::NoServerForToken(missing.to_owned()));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(options.calls.parallelism.get() + crate::serve::ABANDONED_THREADS)
        .thread_name("mcp-call")
        .thread_stack_size(crate::serve::CALL_STACK_BYTES)
        .build()?;
    let local = bound.local;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(bound.listener)?;
        let app = router(servers, local, options);
        axum::serve(listener, app).await
    })?;
    Ok(())
}

/// The router: every method at `options.path`, 404 elsewhere.
pub fn router(servers: Servers, local: SocketAddr, options: Options) -> axum::Router {
    let path = options.path.clone();
    let state = Arc::new(App {
        servers,
        local,
        permits: Arc::new(Semaphore::new(options.calls.parallelism.get())),
        requests: Arc::new(Semaphore::new(options.max_requests.max(1))),
        sessions: Mutex::new(Sessions::default()),
        options,
    });
    axum::Router::new().route(&path, axum::routing::any(endpoint)).with_state(state)
}

struct App {
    servers: Servers,
    local: SocketAddr,
    options: Options,
    /// Call slots: as on stdio, one per call running.
    permits: Arc<Semaphore>,
    /// Request slots: [`Options::max_requests`].
    requests: Arc<Semaphore>,
    sessions: Mutex<Sessions>,
}

#[derive(Default)]
struct Sessions {
    by_id: HashMap<String, Arc<HttpSession>>,
    /// Ids oldest first, to end the oldest past [`Options::max_sessions`].
    order: std::collections::VecDeque<String>,
}

/// One legacy session: its protocol state, the token that opened it, and its running calls.
struct HttpSession {
    state: SessionState,
    token: Option<String>,
    running: Mutex<HashMap<String, Vec<Interrupt>>>,
}

impl HttpSession {
    fn cancel(&self, id: &Value) {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.get(&id.to_string()).into_iter().flatten().for_each(Interrupt::trigger);
    }

    fn insert(&self, id: &Value, interrupt: &Interrupt) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.entry(id.to_string()).or_default().push(interrupt.clone());
    }

    fn remove(&self, id: &Value, interrupt: &Interrupt) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let key = id.to_string();
        if let Some(interrupts) = running.get_mut(&key) {
            interrupts.retain(|other| !other.same_flag(interrupt));
            if interrupts.is_empty() {
                running.remove(&key);
            }
        }
    }

    fn cancel_all(&self) {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.values().flatten().for_each(Interrupt::trigger);
    }
}

/// A plain-text refusal with `status`.
fn refuse(status: StatusCode, message: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("{message}\n")).into_response()
}

/// A JSON-RPC message body with `status`.
fn json_reply(status: StatusCode, body: String, session: Option<&str>) -> Response {
    let mut response = (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    if let Some(id) = session.and_then(|id| HeaderValue::from_str(id).ok()) {
        response.headers_mut().insert(SESSION_HEADER, id);
    }
    response
}

async fn endpoint(State(app): State<Arc<App>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if let Err(response) = app.check_host_and_origin(&parts.headers) {
        return *response;
    }
    let token = match app.authorize(&parts.headers) {
        Ok(token) => token,
        Err(response) => return *response,
    };
    match parts.method {
        Method::POST => {}
        Method::DELETE => return app.delete(&parts.headers, token),
        Method::GET => {
            let mut response = refuse(StatusCode::METHOD_NOT_ALLOWED, "this server sends no server-initiated stream");
            response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
            return response;
        }
        _ => {
            let mut response = refuse(StatusCode::METHOD_NOT_ALLOWED, "POST a JSON-RPC message, or DELETE a session");
            response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
            return response;
        }
    }
    let Ok(_request_slot) = Arc::clone(&app.requests).try_acquire_owned() else {
        let mut response = refuse(StatusCode::SERVICE_UNAVAILABLE, "too many requests at once; retry");
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return response;
    };
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > MAX_FRAME_BYTES as u64) {
        return too_large();
    }
    let content_type = parts.headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or("");
    if !content_type.to_ascii_lowercase().starts_with("application/json") {
        return refuse(StatusCode::UNSUPPORTED_MEDIA_TYPE, "the body must be application/json");
    }
    if let Some(version) = parts.headers.get(VERSION_HEADER)
        && version.to_str().ok().and_then(Version::parse).is_none()
    {
        return refuse(StatusCode::BAD_REQUEST, "unsupported MCP-Protocol-Version");
    }
    let bytes = match tokio::time::timeout(app.options.body_timeout, axum::body::to_bytes(body, MAX_FRAME_BYTES)).await
    {
        Err(_) => {
            tracing::warn!(seconds = app.options.body_timeout.as_secs_f64(), "a request body did not arrive in time");
            let mut response = refuse(StatusCode::REQUEST_TIMEOUT, "the request body did not arrive in time");
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
        Ok(Err(_)) => return too_large(),
        Ok(Ok(bytes)) => bytes,
    };
    app.post(&parts.headers, token, &bytes).await
}

fn too_large() -> Response {
    let mut response =
        refuse(StatusCode::PAYLOAD_TOO_LARGE, &format!("bodies over {MAX_FRAME_BYTES} bytes (8 MiB) are refused"));
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// What a POSTed message is, for session handling.
enum Kind {
    Initialize,
    /// Served without a session: `server/discover`, or `_meta` carries a protocol version.
    Stateless,
    Legacy,
}

fn kind(message: &Value) -> Kind {
    let method = message.get("method").and_then(Value::as_str);
    let params = message.get("params");
    let modern = params
        .and_then(|params| params.get("_meta"))
        .and_then(Value::as_object)
        .is_some_and(|meta| meta.contains_key(META_PROTOCOL_VERSION));
    match method {
        Some("initialize") if message.get("id").is_some() => Kind::Initialize,
        Some("server/discover") => Kind::Stateless,
        _ if modern => Kind::Stateless,
        _ => Kind::Legacy,
    }
}

impl App {
    /// 403 unless `Host` names this server and `Origin` (when sent) is a loopback or configured origin.
    fn check_host_and_origin(&self, headers: &HeaderMap) -> Result<(), Box<Response>> {
        let host = headers.get(header::HOST).and_then(|value| value.to_str().ok());
        if !host.is_some_and(|host| self.host_allowed(host)) {
            tracing::warn!(host = ?host, "request refused: Host names another server (DNS rebinding?)");
            return Err(Box::new(refuse(StatusCode::FORBIDDEN, "Host header not allowed (see --allowed-host)")));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            if !self.origin_allowed(origin) {
                tracing::warn!(%origin, "request refused: Origin not allowed");
                return Err(Box::new(refuse(StatusCode::FORBIDDEN, "Origin not allowed (see --allowed-origin)")));
            }
        }
        Ok(())
    }

    fn host_allowed(&self, host: &str) -> bool {
        let Some(name) = host_name(host) else { return false };
        let port_ok = host_port(host).is_none_or(|port| port == self.local.port());
        let bound = (!self.local.ip().is_unspecified()).then(|| match self.local.ip() {
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            ip @ std::net::IpAddr::V4(_) => ip.to_string(),
        });
        if is_loopback_name(&name) || bound.as_deref() == Some(name.as_str()) {
            return port_ok;
        }
        self.options.allowed_hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(&name))
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        if self.options.allowed_origins.iter().any(|allowed| allowed.eq_ignore_ascii_case(origin)) {
            return true;
        }
        let Some(rest) = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) else {
            return false;
        };
        !rest.contains('/') && host_name(rest).is_some_and(|name| is_loopback_name(&name))
    }

    /// The token's entry when tokens are configured (`Ok(None)` without); 401 for a missing or wrong token.
    fn authorize(&self, headers: &HeaderMap) -> Result<Option<TokenEntry>, Box<Response>> {
        let Some(tokens) = &self.options.tokens else { return Ok(None) };
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")))
            .map(str::trim);
        match presented.and_then(|token| tokens.check(token)) {
            Some(entry) => {
                let mut entry = entry.clone();
                // The roots in force for the token: its own within the server's.
                if let Some((_, roots)) = self.servers.by_token.get(&entry.name) {
                    entry.roots.clone_from(roots);
                }
                Ok(Some(entry))
            }
            None => {
                let error = if presented.is_some() { ", error=\"invalid_token\"" } else { "" };
                tracing::warn!(presented = presented.is_some(), "request refused: no valid bearer token");
                let mut response = refuse(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
                let challenge = format!("Bearer realm=\"fluxgit-mcp\"{error}");
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_str(&challenge).expect("ASCII"));
                Err(Box::new(response))
            }
        }
    }

    /// The session named by the request's `Mcp-Session-Id`: 400 without one, 404 for one unknown, ended or
    /// opened with another token.
    fn session(
        &self,
        headers: &HeaderMap,
        token: Option<&TokenEntry>,
    ) -> Result<(String, Arc<HttpSession>), Box<Response>> {
        let Some(id) = headers.get(SESSION_HEADER).and_then(|value| value.to_str().ok()) else {
            return Err(Box::new(refuse(StatusCode::BAD_REQUEST, "Mcp-Session-Id is required after initialize")));
        };
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        match sessions.by_id.get(id) {
            Some(session) if session.token.as_deref() == token.map(|entry| entry.name.as_str()) => {
                Ok((id.to_owned(), Arc::clone(session)))
            }
            _ => Err(Box::new(refuse(StatusCode::NOT_FOUND, "unknown or ended session: initialize again"))),
        }
    }

    fn delete(&self, headers: &HeaderMap, token: Option<TokenEntry>) -> Response {
        let (id, session) = match self.session(headers, token.as_ref()) {
            Ok(found) => found,
            Err(response) => return *response,
        };
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.by_id.remove(&id);
        sessions.order.retain(|other| *other != id);
        drop(sessions);
        session.cancel_all();
        tracing::info!(session = %id, "session ended by the client");
        StatusCode::NO_CONTENT.into_response()
    }

    fn open_session(&self, session: Arc<HttpSession>) -> String {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        while sessions.by_id.len() >= self.options.max_sessions.max(1) {
            let Some(oldest) = sessions.order.pop_front() else { break };
            if let Some(ended) = sessions.by_id.remove(&oldest) {
                ended.cancel_all();
            }
            tracing::info!(session = %oldest, "oldest session ended: too many sessions open");
        }
        sessions.by_id.insert(id.clone(), session);
        sessions.order.push_back(id.clone());
        id
    }

    async fn post(&self, headers: &HeaderMap, token: Option<TokenEntry>, bytes: &[u8]) -> Response {
        let message: Value = match serde_json::from_slice(bytes) {
            Ok(Value::Array(_)) => {
                let error = json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32600, "message": "Invalid Request: batches are not accepted over HTTP"}});
                return json_reply(StatusCode::BAD_REQUEST, error.to_string(), None);
            }
            Ok(message) => message,
            Err(error) => {
                let error = json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32700, "message": format!("Parse error: {error}")}});
                return json_reply(StatusCode::BAD_REQUEST, error.to_string(), None);
            }
        };
        let (session, new_id) = match kind(&message) {
            Kind::Initialize => {
                let session = Arc::new(HttpSession {
                    state: SessionState::default(),
                    token: token.as_ref().map(|entry| entry.name.clone()),
                    running: Mutex::new(HashMap::new()),
                });
                (Some(session), true)
            }
            Kind::Stateless => match headers.get(SESSION_HEADER) {
                // A stateless request inside a session is served in it (cancellation by notification).
                Some(_) => match self.session(headers, token.as_ref()) {
                    Ok((_, session)) => (Some(session), false),
                    Err(response) => return *response,
                },
                None => (None, false),
            },
            Kind::Legacy => match self.session(headers, token.as_ref()) {
                Ok((_, session)) => (Some(session), false),
                Err(response) => return *response,
            },
        };
        let Some(server) = self.servers.of(token.as_ref()).map(Arc::clone) else {
            tracing::error!("a token without its server: refused");
            return refuse(StatusCode::INTERNAL_SERVER_ERROR, "this token has no server");
        };
        let fresh = SessionState::default();
        let state = session.as_ref().map_or(&fresh, |session| &session.state);
        match server.step_in(bytes, state) {
            Step::Reply(Some(mut reply)) => {
                if message.get("method").and_then(Value::as_str) == Some("tools/list") {
                    list_only_allowed(&mut reply, token.as_ref());
                }
                let status = if reply.get("id") == Some(&Value::Null) && message.get("id").is_none_or(Value::is_null) {
                    StatusCode::BAD_REQUEST
                } else {
                    StatusCode::OK
                };
                let opened = match (&session, new_id, reply.get("result").is_some()) {
                    (Some(session), true, true) => Some(self.open_session(Arc::clone(session))),
                    _ => None,
                };
                if let Some(id) = &opened {
                    tracing::info!(session = %id, client = %state.client_name(), "session opened");
                }
                json_reply(status, reply.to_string(), opened.as_deref())
            }
            Step::Reply(None) => StatusCode::ACCEPTED.into_response(),
            Step::Cancel(id) => {
                if let Some(session) = &session {
                    session.cancel(&id);
                }
                StatusCode::ACCEPTED.into_response()
            }
            Step::Call(call) => {
                let reply = match scope_refusal(&call, token.as_ref()) {
                    Some(error) => server.refuse_call(call, &error),
                    None => self.run(&server, call, session.as_deref()).await,
                };
                json_reply(StatusCode::OK, reply.get().to_owned(), None)
            }
        }
    }

    /// Runs `call` as the stdio loop does: a call slot, the blocking pool, the deadline; cancelled by its session
    /// or by its client going away (this future dropped).
    async fn run(
        &self,
        server: &Arc<Server>,
        call: PendingCall,
        session: Option<&HttpSession>,
    ) -> Box<serde_json::value::RawValue> {
        let id = call.id().clone();
        let interrupt = Interrupt::new();
        // Triggered when the client goes away before the answer (hyper drops this future).
        let _on_drop = TriggerOnDrop(interrupt.clone());
        if let Some(session) = session {
            session.insert(&id, &interrupt);
        }
        let reply = match Arc::clone(&self.permits).acquire_owned().await {
            Ok(permit) if !interrupt.is_triggered() => {
                let server = Arc::clone(server);
                let call_interrupt = interrupt.clone();
                let mut running = tokio::task::spawn_blocking(move || server.run_call(call, &call_interrupt));
                let watched = crate::serve::watch(&mut running, &interrupt, self.options.calls.deadline, &id).await;
                drop(permit);
                watched
            }
            _ => None,
        };
        if let Some(session) = session {
            session.remove(&id, &interrupt);
        }
        match reply {
            Some(Watched::Answered(reply) | Watched::PastDeadline(reply)) if !interrupt.is_triggered() => reply,
            Some(Watched::PastDeadline(reply)) => reply,
            _ => {
                let error = ProtocolError::new(REQUEST_CANCELLED, "Request cancelled", None);
                crate::protocol::raw(&json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}))
            }
        }
    }
}

struct TriggerOnDrop(Interrupt);

impl Drop for TriggerOnDrop {
    fn drop(&mut self) {
        self.0.trigger();
    }
}

/// Leaves out of a `tools/list` reply the tools outside `token`'s toolsets (nothing without a token or toolsets);
/// with a token, a modern reply's `cacheScope` becomes `private`: the list varies by token.
fn list_only_allowed(reply: &mut Value, token: Option<&TokenEntry>) {
    if token.is_some()
        && let Some(scope) = reply.pointer_mut("/result/cacheScope")
    {
        *scope = Value::from(PRIVATE_CACHE_SCOPE);
    }
    let Some(toolsets) = token.and_then(|token| token.toolsets.as_ref()) else { return };
    if let Some(Value::Array(tools)) = reply.pointer_mut("/result/tools") {
        tools.retain(|tool| {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
            toolset_of_listed(name).is_some_and(|set| toolsets.iter().any(|allowed| allowed == set))
        });
    }
}

/// The dotted name of the tool `name` (either spelling), if it is in a toolset.
fn dotted_name(name: &str) -> Option<&'static str> {
    let mut tools = crate::tools::listing::TOOLSETS.iter().flat_map(|toolset| toolset.tools.iter().copied());
    tools.find(|tool| crate::tools::listing::names(tool, name))
}

/// The toolset of the tool `name` (either spelling).
fn toolset_of_listed(name: &str) -> Option<&'static str> {
    dotted_name(name).and_then(crate::tools::listing::toolset_of).map(|toolset| toolset.name)
}

/// Why `token` may not make `call`: a tool outside its toolsets, a repository path outside its roots, or a fleet
/// call that names no repositories (it would read the registry's, which may be anyone's). `None` when allowed
/// (and always without a token).
pub fn scope_refusal(call: &PendingCall, token: Option<&TokenEntry>) -> Option<ProtocolError> {
    let token = token?;
    let name = call.tool_name().unwrap_or("");
    let dotted = dotted_name(name);
    if let Some(toolsets) = &token.toolsets {
        let set = toolset_of_listed(name);
        if !set.is_some_and(|set| toolsets.iter().any(|allowed| allowed == set)) {
            return Some(ProtocolError::new(
                INVALID_PARAMS,
                format!("tool {name} is not in the toolsets of token {}: not run", token.name),
                Some(json!({"reason": "tool_not_allowed", "token": token.name, "toolsets": toolsets})),
            ));
        }
    }
    let mut paths = Vec::new();
    if let Some(arguments) = call.arguments() {
        repository_paths(arguments, &mut paths);
    }
    if paths.is_empty() && dotted.is_some_and(|tool| tool.starts_with("fleet.")) {
        return Some(ProtocolError::new(
            INVALID_PARAMS,
            format!("{name} with a token must name its repositories (repoPaths): the registry is not read"),
            Some(json!({"reason": "outside_allowed_roots", "token": token.name})),
        ));
    }
    for path in paths {
        if !inside(Path::new(path), &token.roots) || !git_dirs_inside(Path::new(path), &token.roots) {
            let roots: Vec<String> = token.roots.iter().map(|root| root.display().to_string()).collect();
            return Some(ProtocolError::new(
                INVALID_PARAMS,
                format!(
                    "{path} is outside the roots of token {}: not read. A token's roots are set by this server's \
                     admin (its tokens file): ask them to allow the repository",
                    token.name
                ),
                Some(json!({"reason": "outside_allowed_roots", "allowedRoots": roots,
                    "rootsFrom": format!("token {}", token.name)})),
            ));
        }
    }
    None
}

/// Every `repoPath` string and `repoPaths` item at any depth of `arguments`.
fn repository_paths<'a>(arguments: &'a Value, paths: &mut Vec<&'a str>) {
    match arguments {
        Value::Object(object) => {
            for (key, value) in object {
                match (key.as_str(), value) {
                    ("repoPath", Value::String(path)) => paths.push(path),
                    ("repoPaths", Value::Array(items)) => {
                        paths.extend(items.iter().filter_map(Value::as_str));
                    }
                    _ => repository_paths(value, paths),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| repository_paths(item, paths)),
        _ => {}
    }
}

/// Whether `path`, with its symbolic links resolved (as the engine resolves it), lies under one of `roots`. A
/// path that does not exist is judged as written (the engine then answers `not_found`); a relative one is not.
fn inside(path: &Path, roots: &[PathBuf]) -> bool {
    if !path.is_absolute() {
        return false;
    }
    let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| lexically_normal(path));
    roots.iter().any(|root| resolved.starts_with(std::fs::canonicalize(root).unwrap_or_else(|_| root.clone())))
}

/// Longest `.git` file or `commondir` file read, in bytes.
const MAX_POINTER_BYTES: u64 = 4096;

/// Whether the git dir and common dir of the repository holding `path` lie under `roots` too: a linked worktree
/// (`.git` a file, `gitdir: X`) or a git dir whose `commondir` names another place is judged by where they lead.
/// Looks at the nearest `.git` at or above `path` while inside `roots`; reads only those small pointer files
/// (regular files, opened without following links and without blocking). A repository it cannot judge (no `.git`
/// found, unreadable pointers) is left to the engine, which checks the same against the server's roots.
fn git_dirs_inside(path: &Path, roots: &[PathBuf]) -> bool {
    let Ok(resolved) = std::fs::canonicalize(path) else { return true };
    let roots: Vec<PathBuf> =
        roots.iter().map(|root| std::fs::canonicalize(root).unwrap_or_else(|_| root.clone())).collect();
    let under = |place: &Path| roots.iter().any(|root| place.starts_with(root));
    let common_dir_inside = |git_dir: &Path| match read_pointer(&git_dir.join("commondir")) {
        Some(common) => std::fs::canonicalize(git_dir.join(common.trim())).is_ok_and(|common| under(&common)),
        None => true,
    };
    // A bare repository or a git dir named directly.
    if resolved.join("HEAD").is_file() && !common_dir_inside(&resolved) {
        return false;
    }
    let mut current = Some(resolved.as_path());
    while let Some(folder) = current.filter(|folder| under(folder)) {
        let dot_git = folder.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(metadata) if metadata.is_file() => {
                let Some(text) = read_pointer(&dot_git) else { return true };
                let Some(target) = text.lines().next().and_then(|line| line.strip_prefix("gitdir:")) else {
                    return true;
                };
                let Ok(git_dir) = std::fs::canonicalize(folder.join(target.trim())) else { return true };
                return under(&git_dir) && common_dir_inside(&git_dir);
            }
            Ok(metadata) if metadata.is_symlink() => {
                return std::fs::canonicalize(&dot_git)
                    .is_ok_and(|git_dir| under(&git_dir) && common_dir_inside(&git_dir));
            }
            Ok(metadata) if metadata.is_dir() => return common_dir_inside(&dot_git),
            _ => current = folder.parent(),
        }
    }
    true
}

/// The text of a small regular file, opened without following a link or blocking on a FIFO; `None` otherwise.
fn read_pointer(path: &Path) -> Option<String> {
    use std::io::Read as _;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_POINTER_BYTES).read_to_string(&mut text).ok()?;
    Some(text)
}

/// `path` with `.` and `..` taken out without touching the file system.
fn lexically_normal(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => {
                normal.pop();
            }
            std::path::Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
}

/// The lowercase host name of a `Host` value or origin authority (`[::1]` keeps its brackets), without port.
fn host_name(authority: &str) -> Option<String> {
    let authority = authority.trim();
    let name =
        if authority.starts_with('[') { &authority[..=authority.find(']')?] } else { authority.split(':').next()? };
    (!name.is_empty()).then(|| name.to_ascii_lowercase())
}

/// The port of a `Host` value, if it names one.
fn host_port(authority: &str) -> Option<u16> {
    let after = match authority.rfind(']') {
        Some(end) => &authority[end + 1..],
        None => authority,
    };
    after.rsplit_once(':').and_then(|(_, port)| port.parse().ok())
}

fn is_loopback_name(name: &str) -> bool {
    matches!(name, "localhost" | "[::1]") || name.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_and_ports_are_read_as_browsers_send_them() {
        assert_eq!(host_name("LocalHost:8080").as_deref(), Some("localhost"));
        assert_eq!(host_name("[::1]:80").as_deref(), Some("[::1]"));
        assert_eq!(host_port("[::1]:80"), Some(80));
        assert_eq!(host_port("example.com"), None);
        assert!(is_loopback_name("127.0.0.2"));
        assert!(!is_loopback_name("127.0.0.1.evil.example"));
        assert_eq!(lexically_normal(Path::new("/srv/a/../b")), PathBuf::from("/srv/b"));
    }
}

#[cfg(test)]
mod cancellation {
    use std::io::{Read as _, Write as _};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    use serde_json::Map;

    use super::*;
    use crate::tools::{CallContext, Registry, Tool, ToolDefinition, ToolOutput};

    /// `hang` waits for its interrupt (counting the calls that saw it), any other call answers at once.
    struct Waits {
        definition: ToolDefinition,
        interrupted: Arc<AtomicUsize>,
    }

    impl Tool for Waits {
        fn definition(&self) -> &ToolDefinition {
            &self.definition
        }

        fn call(&self, ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
            if arguments.get("hang") == Some(&Value::Bool(true)) {
                let started = Instant::now();
                while !ctx.interrupt.is_triggered() {
                    assert!(started.elapsed() < Duration::from_secs(30), "never interrupted");
                    std::thread::sleep(Duration::from_millis(5));
                }
                self.interrupted.fetch_add(1, Ordering::SeqCst);
            }
            Ok(ToolOutput {
                text: "{}".to_owned(),
                structured: None,
                is_error: false,
                error_code: None,
                repo_path: None,
            })
        }
    }

    fn call(id: i64, hang: bool) -> String {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "test.waits",
            "arguments": {"hang": hang}, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string()
    }

    fn request(addr: SocketAddr, body: &str) -> std::net::TcpStream {
        let mut stream = std::net::TcpStream::connect(addr).expect("connect");
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(head.as_bytes()).expect("request");
        stream
    }

    #[test]
    fn a_client_that_goes_away_interrupts_its_call_and_frees_the_only_slot() {
        let interrupted = Arc::new(AtomicUsize::new(0));
        let mut registry = Registry::new();
        let definition = ToolDefinition {
            name: "test.waits",
            title: "Waits",
            description: "Waits for its interrupt when asked to.",
            input_schema: json!({"type": "object", "properties": {"hang": {"type": "boolean"}}}),
            output_schema: json!({"type": "object"}),
            read_only: true,
        };
        registry.register(Box::new(Waits { definition, interrupted: Arc::clone(&interrupted) })).expect("a tool");
        let server = Servers::new(Server::new(
            registry,
            fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots: vec![] }),
        ));
        let mut options = Options::new();
        options.calls.parallelism = std::num::NonZeroUsize::new(1).expect("one");
        let bound = bind("127.0.0.1:0".parse().expect("an address"), &options).expect("binds");
        let addr = bound.local;
        std::thread::spawn(move || serve(server, bound, options));

        // The only call slot is taken by a call that waits for its interrupt; its client then goes away.
        let hanging = request(addr, &call(1, true));
        std::thread::sleep(Duration::from_millis(300));
        drop(hanging);
        let at = Instant::now();
        while interrupted.load(Ordering::SeqCst) == 0 {
            assert!(at.elapsed() < Duration::from_secs(5), "the call was interrupted when its client left");
            std::thread::sleep(Duration::from_millis(10));
        }
        // The slot is free: the next call is answered.
        let mut answer = String::new();
        request(addr, &call(2, false)).read_to_string(&mut answer).expect("an answer");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("\"id\":2") && answer.contains("\"isError\":false"), "{answer}");
    }
}
