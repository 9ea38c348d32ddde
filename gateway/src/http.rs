//! The loopback HTTP API of `docs/gateway-http.md`: proposals (preview, status, cancel) and the read routes
//! (restore points, safety timeline and events, semantic diff). There is deliberately no route that approves,
//! rejects or executes: those are a person's acts at the CLI ([`crate::approval`]) or in the approval page
//! ([`crate::web`], under its per-launch secret, with its own guard). Anything else is 404.
//!
//! Every request, the page's too, first passes [`connection_guard`]: an origin-form target (`/path`, never
//! `http://host/path`), exactly one `Host` header naming a loopback name with the port the client connected to,
//! and, for a proposal, the rate of its connection ([`crate::connection`]).
//! Browsers are kept out ([`guard`]): a request whose `Host` is not a loopback name (DNS rebinding) or that carries
//! an `Origin` (a web page) is 403, and a POST whose body is not `application/json` is 415, so a page cannot send
//! a "simple" cross-origin request that skips the CORS preflight (which this server never grants).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, Query, Request as HttpRequest, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::config::Config;
use crate::connection::{PREVIEW_RATE, Peer, RATE_WINDOW};
use crate::git::Git;
use crate::journal::{self, Change, Journal, NewProposal, Proposal, Recorded, Status};
use crate::policy::Request;
use crate::proposal::{self, is_safe_id};
use crate::restore;
use crate::time::format_ms;

/// Largest request body: a 4 MiB patch, JSON-escaped, with room to spare.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// What the handlers share.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The journal (one connection; SQLite serialises with the CLI and the executor).
    pub journal: Arc<Mutex<Journal>>,
    /// The configuration.
    pub config: Arc<Config>,
    /// Tells the person's desktop about each new proposal, without waiting.
    pub notifier: crate::notify::Notifier,
}

/// The router of every route.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/mcp/operation/preview/{op}", post(preview))
        .route("/v1/mcp/operation/status/{id}", get(status))
        .route("/v1/mcp/operation/cancel/{id}", post(cancel))
        .route("/v1/mcp/restore-points", get(restore_points))
        .route("/v1/mcp/restore-points/{id}", get(restore_point))
        .route("/v1/mcp/safety/timeline", get(timeline))
        .route("/v1/mcp/safety/events/{id}", get(event))
        .route("/v1/mcp/diff/semantic", post(semantic))
        .fallback(|| async {
            reply(StatusCode::NOT_FOUND, json!({ "reason": "not_found", "message": "no such route" }))
        })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn(guard))
        .with_state(state)
}

/// The first guard of every route (module docs): 400 for a target that is not origin-form, 403 unless there is
/// exactly one `Host` and it is [`is_exact_host`], 429 when the connection sent too many proposals. It marks the
/// request in flight for the connection's stall clock.
pub async fn connection_guard(request: HttpRequest, next: Next) -> Response {
    let Some(ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<Peer>>().cloned() else {
        return refusal(StatusCode::FORBIDDEN, "forbidden_host", "the gateway answers its own loopback listener only");
    };
    let _in_flight = peer.begin();
    let uri = request.uri();
    if uri.scheme().is_some() || uri.authority().is_some() || !uri.path().starts_with('/') {
        return refusal(StatusCode::BAD_REQUEST, "invalid_target", "the request target must be a path (origin-form)");
    }
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let host = match (hosts.next(), hosts.next()) {
        (Some(host), None) => host.to_str().unwrap_or_default(),
        _ => return refusal(StatusCode::FORBIDDEN, "forbidden_host", "a request carries exactly one Host header"),
    };
    if !is_exact_host(host, peer.local) {
        return refusal(StatusCode::FORBIDDEN, "forbidden_host", "the gateway answers loopback hosts only");
    }
    if request.method() == Method::POST
        && request.uri().path().starts_with("/v1/mcp/operation/preview/")
        && !peer.take_preview()
    {
        return reply(
            StatusCode::TOO_MANY_REQUESTS,
            json!({ "reason": "rate_limited", "message": format!("this connection sent {PREVIEW_RATE} proposals in the last {} s", RATE_WINDOW.as_secs()), "details": { "limit": PREVIEW_RATE, "windowSeconds": RATE_WINDOW.as_secs() } }),
        );
    }
    next.run(request).await
}

/// Whether `host` (a `Host` header) is exactly `localhost`, `127.0.0.1`, `[::1]` or the address the gateway
/// listens on, followed by `:` and the port of `local` (the port may be left out only when it is 80).
pub fn is_exact_host(host: &str, local: std::net::SocketAddr) -> bool {
    let (name, given) = match host.rsplit_once(':') {
        Some((name, given)) if !host.ends_with(']') => (name, Some(given)),
        _ => (host, None),
    };
    let port_ok = match given {
        Some(given) => given == local.port().to_string(),
        None => local.port() == 80,
    };
    if !port_ok {
        return false;
    }
    let listening = match local.ip() {
        std::net::IpAddr::V4(address) => address.to_string(),
        std::net::IpAddr::V6(address) => format!("[{address}]"),
    };
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1" || name == "[::1]" || name == listening
}

/// Refuses what only a browser would send: a non-loopback `Host`, any `Origin`, a POST that is not JSON.
pub async fn guard(request: HttpRequest, next: Next) -> Response {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|value| value.to_str().ok()).unwrap_or_default();
    if !is_loopback_host(host) {
        return refusal(StatusCode::FORBIDDEN, "forbidden_host", "the gateway answers loopback hosts only");
    }
    if headers.contains_key(header::ORIGIN) {
        return refusal(StatusCode::FORBIDDEN, "forbidden_origin", "the gateway does not answer web pages");
    }
    if request.method() == Method::POST {
        let json = headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).is_some_and(|value| {
            value.split(';').next().is_some_and(|kind| kind.trim().eq_ignore_ascii_case("application/json"))
        });
        if !json {
            return refusal(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "POST bodies must be application/json",
            );
        }
    }
    next.run(request).await
}

/// Whether a `Host` header names loopback: `127.x.y.z`, `localhost` or `[::1]`, with an optional port.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|address| address.is_loopback())
}

fn reply(status: StatusCode, body: Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

fn refusal(status: StatusCode, reason: &str, message: &str) -> Response {
    reply(status, json!({ "reason": reason, "message": message }))
}

fn internal(error: &dyn std::fmt::Display) -> Response {
    tracing::error!(%error, "journal failure");
    refusal(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the gateway's journal failed")
}

fn lock(state: &AppState) -> std::sync::MutexGuard<'_, Journal> {
    // A panic while holding the lock leaves SQLite consistent (transactions roll back): keep serving.
    state.journal.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The status object of a proposal (`GET /v1/mcp/operation/status/{id}`).
pub fn status_body(proposal: &Proposal) -> Value {
    let mut body = json!({
        "previewId": proposal.id,
        "operationType": proposal.op,
        "status": proposal.status.as_str(),
        "requestedAt": proposal.requested_at,
        "expiresAt": format_ms(proposal.expires_at_ms),
    });
    let object = body.as_object_mut().expect("a literal object");
    if let Some(reason) = &proposal.status_reason {
        object.insert("reason".into(), json!(reason));
    }
    if let Some(message) = &proposal.status_message {
        object.insert("message".into(), json!(message));
    }
    if let Some(result) = &proposal.result {
        object.insert("result".into(), result.clone());
    }
    if proposal.needs_reconciliation {
        object.insert("needsReconciliation".into(), json!(true));
    }
    body
}

async fn preview(State(state): State<AppState>, Path(op): Path<String>, body: Bytes) -> Response {
    if fluxgit_contract::Operation::from_name(&op).is_none() {
        return refusal(StatusCode::NOT_FOUND, "unknown_operation", "no such operation");
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return refusal(StatusCode::BAD_REQUEST, "invalid_body", "the body must be one JSON object");
    };
    // A full queue refuses a new proposal before its git checks, so a flood costs no git process.
    let agent = body.get("agentId").and_then(Value::as_str).unwrap_or_default();
    let key = body.get("idempotencyKey").and_then(Value::as_str).unwrap_or_default();
    match lock(&state).at_global_cap(agent, key) {
        Ok(true) => return global_cap_reply(journal::PENDING_GLOBAL_CAP),
        Ok(false) => {}
        Err(error) => return internal(&error),
    }
    let checked = match proposal::check(&op, &body, &state.config.allowed_roots) {
        Ok(checked) => checked,
        Err(invalid) => {
            return reply(
                StatusCode::UNPROCESSABLE_ENTITY,
                json!({ "reason": invalid.reason, "message": invalid.message, "details": invalid.details }),
            );
        }
    };
    let request = Request {
        agent: &checked.agent,
        operation: &checked.op,
        refs: checked.refs.clone(),
        repo_path: &checked.repo_path,
        worktree_path: checked.worktree_path.clone(),
        step_operations: checked.step_operations.clone(),
        other_repo_paths: checked.other_repo_paths.clone(),
    };
    if let Err(denial) = state.config.policy.decide(&request) {
        return refusal(StatusCode::FORBIDDEN, "policy_denied", &denial.message);
    }
    let new = NewProposal {
        id: checked.id.clone(),
        agent: checked.agent.clone(),
        idempotency_key: checked.idempotency_key.clone(),
        op: checked.op.clone(),
        repo_path: checked.repo_path.clone(),
        canonical: serde_json::to_value(&checked.canonical).unwrap_or(Value::Null),
        reason: checked.reason.clone(),
        body: checked.body.clone(),
        requested_at: checked.requested_at.clone(),
        expires_at_ms: checked.expires_at_ms,
    };
    let mut journal = lock(&state);
    let (code, proposal) = match journal.record(&new) {
        Ok(Recorded::Created(proposal)) => {
            state.notifier.proposed(&proposal);
            (StatusCode::ACCEPTED, proposal)
        }
        Ok(Recorded::Existing(proposal)) => (StatusCode::OK, proposal),
        Err(journal::Error::Quota(count)) => {
            return reply(
                StatusCode::TOO_MANY_REQUESTS,
                json!({ "reason": "pending_cap", "message": format!("this agent already has {count} proposals waiting for a person (cap {})", journal::PENDING_CAP), "details": { "pending": count, "cap": journal::PENDING_CAP } }),
            );
        }
        Err(journal::Error::GlobalQuota(count)) => return global_cap_reply(count),
        Err(journal::Error::IdTaken) => {
            return refusal(StatusCode::CONFLICT, "preview_id_taken", "previewId is already used by another proposal");
        }
        Err(error) => return internal(&error),
    };
    tracing::info!(id = %proposal.id, op = %proposal.op, agent = %proposal.agent, status = proposal.status.as_str(), "proposal");
    reply(
        code,
        json!({ "previewId": proposal.id, "status": proposal.status.as_str(), "expiresAt": format_ms(proposal.expires_at_ms) }),
    )
}

fn global_cap_reply(count: i64) -> Response {
    reply(
        StatusCode::TOO_MANY_REQUESTS,
        json!({ "reason": "pending_global_cap", "message": format!("{count} proposals of all agents are already waiting for a person (cap {})", journal::PENDING_GLOBAL_CAP), "details": { "pending": count, "cap": journal::PENDING_GLOBAL_CAP } }),
    )
}

async fn status(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    if !is_safe_id(&id) {
        return refusal(StatusCode::NOT_FOUND, "unknown_preview", "no such proposal");
    }
    let mut journal = lock(&state);
    if let Err(error) = journal.expire_due() {
        return internal(&error);
    }
    match journal.get(&id) {
        Ok(Some(proposal)) => reply(StatusCode::OK, status_body(&proposal)),
        Ok(None) => refusal(StatusCode::NOT_FOUND, "unknown_preview", "no such proposal"),
        Err(error) => internal(&error),
    }
}

async fn cancel(State(state): State<AppState>, Path(id): Path<String>, body: Bytes) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return refusal(StatusCode::BAD_REQUEST, "invalid_body", "the body must be one JSON object");
    };
    let agent = body.get("agentId").and_then(Value::as_str).unwrap_or_default();
    let mut journal = lock(&state);
    if let Err(error) = journal.expire_due() {
        return internal(&error);
    }
    let proposal = match journal.get(&id) {
        Ok(Some(proposal)) => proposal,
        Ok(None) => return refusal(StatusCode::NOT_FOUND, "unknown_preview", "no such proposal"),
        Err(error) => return internal(&error),
    };
    if proposal.agent != agent {
        return refusal(StatusCode::FORBIDDEN, "other_agent", "only the agent that proposed it may cancel it");
    }
    let reason = body.get("reason").and_then(Value::as_str).unwrap_or("cancelled by its agent");
    let actor = format!("agent:{agent}");
    let change =
        Change { actor: &actor, detail: reason, reason: Some("cancelled"), message: Some(reason), ..Change::default() };
    match journal.transition(&id, &[Status::Pending], Status::Cancelled, &change) {
        Ok(true) => reply(StatusCode::OK, json!({ "previewId": id, "status": "cancelled" })),
        Ok(false) => refusal(
            StatusCode::CONFLICT,
            "not_pending",
            &format!("the proposal is {}, not pending", proposal.status.as_str()),
        ),
        Err(error) => internal(&error),
    }
}

fn limit(query: &HashMap<String, String>, name: &str, default: i64, max: i64) -> i64 {
    query.get(name).and_then(|value| value.parse::<i64>().ok()).unwrap_or(default).clamp(1, max)
}

async fn restore_points(State(state): State<AppState>, Query(query): Query<HashMap<String, String>>) -> Response {
    let journal = lock(&state);
    match journal.restore_points(query.get("repoPath").map(String::as_str), limit(&query, "limit", 50, 200)) {
        Ok(points) => {
            reply(StatusCode::OK, json!({ "restorePoints": points.iter().map(restore::to_json).collect::<Vec<_>>() }))
        }
        Err(error) => internal(&error),
    }
}

async fn restore_point(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let journal = lock(&state);
    let found = if id == "latest" {
        journal.restore_points(query.get("repoPath").map(String::as_str), 1).map(|points| points.into_iter().next())
    } else {
        journal.restore_point(&id)
    };
    match found {
        Ok(Some(point)) => reply(StatusCode::OK, restore::to_json(&point)),
        Ok(None) => refusal(StatusCode::NOT_FOUND, "not_found", "no such restore point"),
        Err(error) => internal(&error),
    }
}

/// The safety timeline: journaled transitions (`operation`), restore points and, on request, HEAD's reflog.
fn events(journal: &Journal, query: &HashMap<String, String>) -> Result<Vec<Value>, journal::Error> {
    let repo = query.get("repoPath").map(String::as_str);
    let max_events = limit(query, "limit", 50, 200);
    let mut events: Vec<(i64, Value)> = Vec::new();
    for transition in journal.timeline(repo, max_events)? {
        let op = journal.get(&transition.proposal_id)?.map(|proposal| proposal.op).unwrap_or_default();
        let refs = match transition.to.as_str() {
            "completed" | "failed" | "restored" => journal
                .restore_point_of(&transition.proposal_id)?
                .and_then(|point| restore::to_json(&point).get("refs").cloned())
                .unwrap_or(json!([])),
            _ => json!([]),
        };
        events.push((
            transition.at_ms,
            json!({
                "id": format!("t-{}", transition.seq),
                "kind": "operation",
                "at": format_ms(transition.at_ms),
                "operationType": op,
                "previewId": transition.proposal_id,
                "summary": format!("{op}: {} -> {} by {} ({})", transition.from.as_deref().unwrap_or("new"), transition.to, transition.actor, transition.detail),
                "refs": refs,
            }),
        ));
    }
    if query.get("includeRestorePoints").is_none_or(|value| value != "false") {
        for point in journal.restore_points(repo, max_events)? {
            let mut event = restore::to_json(&point);
            let refs = event.get("refs").cloned().unwrap_or(json!([]));
            event = json!({
                "id": point.id,
                "kind": "restore_point",
                "at": format_ms(point.created_ms),
                "operationType": point.op,
                "previewId": point.proposal_id,
                "summary": format!("restore point before {} (snapshot {})", point.op, point.snapshot),
                "refs": refs,
                "restorePoint": event,
            });
            events.push((point.created_ms, event));
        }
    }
    if let (Some(repo), Some("true")) = (repo, query.get("includeReflog").map(String::as_str)) {
        let count = limit(query, "reflogLimit", 20, 100).to_string();
        let git = Git::new(std::path::Path::new(repo));
        if let Ok(listing) =
            git.read_ok(&["log", "-g", "-n", count.as_str(), "--format=%H%x00%gD%x00%gs%x00%ct", "HEAD", "--"])
        {
            for (line_idx, line) in listing.lines().enumerate() {
                let fields: Vec<&str> = line.split('\0').collect();
                if let [sha, selector, subject, time] = fields.as_slice() {
                    let at_ms = time.parse::<i64>().unwrap_or(0) * 1000;
                    events.push((
                        at_ms,
                        json!({
                            "id": format!("reflog-{line_idx}"),
                            "kind": "reflog",
                            "at": format_ms(at_ms),
                            "operationType": Value::Null,
                            "summary": format!("{selector}: {subject}"),
                            "refs": [{ "name": "HEAD", "before": Value::Null, "after": sha }],
                        }),
                    ));
                }
            }
        }
    }
    events.sort_by_key(|event| std::cmp::Reverse(event.0));
    Ok(events.into_iter().take(usize::try_from(max_events).unwrap_or(50)).map(|(_, event)| event).collect())
}

async fn timeline(State(state): State<AppState>, Query(query): Query<HashMap<String, String>>) -> Response {
    let journal = lock(&state);
    match events(&journal, &query) {
        Ok(events) => reply(StatusCode::OK, json!({ "events": events })),
        Err(error) => internal(&error),
    }
}

async fn event(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(mut query): Query<HashMap<String, String>>,
) -> Response {
    let journal = lock(&state);
    query.insert("limit".into(), "200".into());
    query.insert("includeReflog".into(), "true".into());
    match events(&journal, &query) {
        Ok(events) => {
            let found = if id == "latest" {
                events.into_iter().next()
            } else {
                events.into_iter().find(|event| event.get("id").and_then(Value::as_str) == Some(id.as_str()))
            };
            match found {
                Some(event) => reply(StatusCode::OK, event),
                None => refusal(StatusCode::NOT_FOUND, "not_found", "no such event"),
            }
        }
        Err(error) => internal(&error),
    }
}

async fn semantic() -> Response {
    reply(
        StatusCode::OK,
        json!({ "supported": false, "reason": "The reference gateway has no semantic diff engine yet; use diff.text." }),
    )
}

#[cfg(test)]
mod tests {
    use super::is_exact_host;

    #[test]
    fn only_exact_loopback_names_with_the_listening_port_pass() {
        let local: std::net::SocketAddr = "127.0.0.1:7420".parse().expect("an address");
        for host in ["localhost:7420", "LocalHost:7420", "127.0.0.1:7420", "[::1]:7420"] {
            assert!(is_exact_host(host, local), "{host}");
        }
        for host in [
            "[::1].evil.example:7420",
            "[::1].evil.example",
            "localhost.evil.example:7420",
            "localhost:7421",
            "localhost",
            "127.0.0.2:7420",
            "127.1:7420",
            "::1:7420",
            "[::1]",
            "localhost:7420:7420",
            "",
            ":7420",
        ] {
            assert!(!is_exact_host(host, local), "{host}");
        }
        let other: std::net::SocketAddr = "127.0.0.2:80".parse().expect("an address");
        assert!(is_exact_host("127.0.0.2", other) && is_exact_host("127.0.0.2:80", other));
        assert!(!is_exact_host("127.0.0.3:80", other));
    }
}
