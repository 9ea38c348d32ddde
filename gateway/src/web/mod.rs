//! The approval page: a person reviews the queue and decides in a browser, on loopback, under a per-launch secret.
//!
//! `serve` draws two random values at start-up ([`Launch`]): the secret, the first path segment of every page route
//! (`http://127.0.0.1:PORT/<secret>/`, printed once on the gateway's stdout and, for `fluxgit-gateway open`,
//! written to the 0600 `page-address` file while it serves; never in the journal), and the CSRF token, written into
//! the page and required on every state-changing request. The page is plain HTML, CSS and JavaScript compiled into
//! the binary (`assets/`), with no request leaving the gateway.
//!
//! Every page route passes [`page_guard`]: the secret (compared in constant time; anything else is 404, as is
//! every path no route knows), a loopback `Host` (DNS rebinding: 403), an `Origin` equal to the page's own and a
//! `Sec-Fetch-Site` of `same-origin` (or `none`, a typed address, for reads). Approve, reject and restore are POST
//! only, with a JSON body, the CSRF token in `x-fluxgit-csrf`, and the same-origin headers present. Responses forbid
//! caching, framing, referrers and any source but the page's own.
//!
//! Routes under `/<secret>`: `/` (the page), `/app.js`, `/app.css`, `GET api/queue` (pending first, then the
//! recent outcomes), `GET api/proposals/{id}` (the card as data, [`view`]), `POST api/proposals/{id}/approve`
//! (`{digest, confirmation?}`), `POST .../reject` (`{reason?}`), `POST .../restore` (`{}`). The sidecar-facing API
//! of [`crate::http`] is unchanged and keeps refusing anything a browser sends.

pub mod view;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Request as HttpRequest, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::approval;
use crate::audit::Audit;
use crate::config::Config;
use crate::journal::{self, Journal};
use crate::proposal::is_safe_id;

/// The header that carries the CSRF token on state-changing requests.
pub const CSRF_HEADER: &str = "x-fluxgit-csrf";
/// Longest reason a person may give when rejecting, in characters.
pub const MAX_REJECT_REASON_CHARS: usize = 1000;

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The per-launch values of the page: never stored, printed once (the secret, inside the page's address).
#[derive(Clone)]
pub struct Launch {
    secret: String,
    csrf: String,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Launch { .. }")
    }
}

impl Launch {
    /// Draws a new secret and CSRF token (32 random bytes each, hex) from the operating system.
    pub fn new() -> Result<Self, getrandom::Error> {
        Ok(Self { secret: random_hex()?, csrf: random_hex()? })
    }

    /// The page's address on `addr` (what `serve` prints once).
    pub fn url(&self, addr: std::net::SocketAddr) -> String {
        format!("http://{addr}/{}/", self.secret)
    }
}

fn random_hex() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(faster_hex::hex_string(&bytes))
}

/// Equality of two byte strings in time independent of where they differ (their lengths are not secret).
fn same(left: &[u8], right: &[u8]) -> bool {
    left.len() == right.len() && left.iter().zip(right).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

#[derive(Clone)]
struct PageState {
    /// The page's own journal connection: rendering a card runs git, and must never hold the connection the
    /// sidecar-facing routes wait on (SQLite serialises the writes of both, as it does with the CLI's).
    journal: Arc<Mutex<Journal>>,
    config: Arc<Config>,
    audit: Arc<Audit>,
    launch: Arc<Launch>,
}

/// The page's routes, to merge with [`crate::http::router`] (which keeps the fallback: unknown paths are 404).
/// Opens a journal connection of its own on `config`'s run dir.
pub fn router(config: Arc<Config>, audit: Arc<Audit>, launch: Launch) -> Result<Router, journal::Error> {
    let journal = Arc::new(Mutex::new(Journal::open(&config.run_dir)?));
    let state = PageState { journal, config, audit, launch: Arc::new(launch) };
    Ok(Router::new()
        .route("/{secret}", get(redirect))
        .route("/{secret}/", get(index))
        .route("/{secret}/app.js", get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }))
        .route("/{secret}/app.css", get(|| async { asset("text/css; charset=utf-8", APP_CSS) }))
        .route("/{secret}/api/queue", get(queue))
        .route("/{secret}/api/proposals/{id}", get(card))
        .route("/{secret}/api/proposals/{id}/approve", post(approve))
        .route("/{secret}/api/proposals/{id}/reject", post(reject))
        .route("/{secret}/api/proposals/{id}/restore", post(restore))
        .route_layer(middleware::from_fn_with_state(state.clone(), page_guard))
        .with_state(state))
}

/// The guard of every page route (module docs): 404 without the secret, 403 for a foreign `Host` or origin, and
/// for a state-changing request without the CSRF token or the same-origin headers.
async fn page_guard(State(state): State<PageState>, request: HttpRequest, next: Next) -> Response {
    let segment = request.uri().path().trim_start_matches('/').split('/').next().unwrap_or_default();
    if !same(segment.as_bytes(), state.launch.secret.as_bytes()) {
        return not_found();
    }
    let headers = request.headers();
    let host = header_str(headers, header::HOST.as_str());
    if !crate::http::is_loopback_host(host) {
        return refusal(StatusCode::FORBIDDEN, "forbidden_host", "the approval page answers loopback hosts only");
    }
    let origin = headers.get(header::ORIGIN).map(|value| value.to_str().unwrap_or("\u{0}"));
    if origin.is_some_and(|origin| origin != format!("http://{host}")) {
        return refusal(StatusCode::FORBIDDEN, "forbidden_origin", "only the approval page itself may call it");
    }
    let fetch_site = headers.get("sec-fetch-site").map(|value| value.to_str().unwrap_or_default());
    let changes_state = request.method() != Method::GET && request.method() != Method::HEAD;
    let site_ok = match fetch_site {
        Some("same-origin") => true,
        Some("none") => !changes_state,
        Some(_) => false,
        None => true,
    };
    if !site_ok {
        return refusal(StatusCode::FORBIDDEN, "forbidden_origin", "only the approval page itself may call it");
    }
    if changes_state {
        if origin.is_none() && fetch_site.is_none() {
            return refusal(StatusCode::FORBIDDEN, "forbidden_origin", "a decision must come from the approval page");
        }
        if !same(header_str(headers, CSRF_HEADER).as_bytes(), state.launch.csrf.as_bytes()) {
            return refusal(StatusCode::FORBIDDEN, "bad_csrf_token", "the page's CSRF token is missing or wrong");
        }
        let json = header_str(headers, header::CONTENT_TYPE.as_str())
            .split(';')
            .next()
            .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return refusal(StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", "bodies must be JSON");
        }
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        ("cache-control", "no-store"),
        ("referrer-policy", "no-referrer"),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-resource-policy", "same-origin"),
        ("content-security-policy", CONTENT_SECURITY_POLICY),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers.get(name).and_then(|value| value.to_str().ok()).unwrap_or_default()
}

fn reply(status: StatusCode, body: Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

fn refusal(status: StatusCode, reason: &str, message: &str) -> Response {
    reply(status, json!({ "reason": reason, "message": message }))
}

fn not_found() -> Response {
    refusal(StatusCode::NOT_FOUND, "not_found", "no such route")
}

fn asset(kind: &'static str, text: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], text).into_response()
}

async fn redirect(State(state): State<PageState>) -> Response {
    (StatusCode::PERMANENT_REDIRECT, [(header::LOCATION, format!("/{}/", state.launch.secret))]).into_response()
}

async fn index(State(state): State<PageState>) -> Response {
    asset_owned("text/html; charset=utf-8", INDEX_HTML.replace("{{CSRF_TOKEN}}", &state.launch.csrf))
}

fn asset_owned(kind: &'static str, text: String) -> Response {
    ([(header::CONTENT_TYPE, kind)], text).into_response()
}

/// Runs `work` with the journal on the blocking pool (cards and decisions run git).
async fn with_journal<T: Send + 'static>(
    state: &PageState,
    work: impl FnOnce(&mut Journal, &Config, &Audit) -> T + Send + 'static,
) -> Result<T, Response> {
    let state = state.clone();
    tokio::task::spawn_blocking(move || {
        // A panic while holding the lock leaves SQLite consistent (transactions roll back): keep serving.
        let mut journal = state.journal.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        work(&mut journal, &state.config, &state.audit)
    })
    .await
    .map_err(|error| {
        tracing::error!(%error, "approval page task failed");
        refusal(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the gateway failed")
    })
}

async fn queue(State(state): State<PageState>) -> Response {
    let listed = with_journal(&state, |journal, _, _| view::queue(journal)).await;
    match listed {
        Ok(Ok(queue)) => reply(StatusCode::OK, queue),
        Ok(Err(error)) => internal(&error),
        Err(response) => response,
    }
}

async fn card(State(state): State<PageState>, Path((_, id)): Path<(String, String)>) -> Response {
    if !is_safe_id(&id) {
        return refusal(StatusCode::NOT_FOUND, "unknown_preview", "no such proposal");
    }
    let rendered = with_journal(&state, move |journal, _, _| view::card(journal, &id)).await;
    match rendered {
        Ok(Ok(Some(card))) => reply(StatusCode::OK, card),
        Ok(Ok(None)) => refusal(StatusCode::NOT_FOUND, "unknown_preview", "no such proposal"),
        Ok(Err(error)) => internal(&error),
        Err(response) => response,
    }
}

fn internal(error: &dyn std::fmt::Display) -> Response {
    tracing::error!(%error, "approval page: journal failure");
    refusal(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the gateway's journal failed")
}

/// The answer to a decision: 200 with the proposal's new state, or the refusal with its reason.
fn decided(id: &str, outcome: Result<(), approval::Error>, journal_state: Option<&str>) -> Response {
    match outcome {
        Ok(()) => reply(StatusCode::OK, json!({ "previewId": id, "status": journal_state })),
        Err(error) => {
            let (status, reason) = match &error {
                approval::Error::Unknown(_) | approval::Error::NoMatch(_) | approval::Error::Ambiguous { .. } => {
                    (StatusCode::NOT_FOUND, "unknown_preview")
                }
                approval::Error::State { .. } => (StatusCode::CONFLICT, "wrong_state"),
                approval::Error::CardChanged(_) => (StatusCode::CONFLICT, "card_changed"),
                approval::Error::Refused(_) => (StatusCode::UNPROCESSABLE_ENTITY, "refused"),
                approval::Error::Restore(_) => (StatusCode::CONFLICT, "restore_failed"),
                approval::Error::Journal(_) | approval::Error::Io(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            };
            refusal(status, reason, &crate::card::sanitize(&error.to_string()))
        }
    }
}

fn json_body(body: &Bytes) -> Option<Value> {
    serde_json::from_slice::<Value>(body).ok().filter(Value::is_object)
}

fn bad_body() -> Response {
    refusal(StatusCode::BAD_REQUEST, "invalid_body", "the body must be one JSON object")
}

async fn decide(
    state: PageState,
    id: String,
    work: impl FnOnce(&mut Journal, &Config, &Audit, &str) -> Result<(), approval::Error> + Send + 'static,
) -> Response {
    if !is_safe_id(&id) {
        return refusal(StatusCode::NOT_FOUND, "unknown_preview", "no such proposal");
    }
    let answered = with_journal(&state, move |journal, config, audit| {
        let outcome = work(journal, config, audit, &id);
        let status = journal.get(&id).ok().flatten().map(|proposal| proposal.status.as_str());
        decided(&id, outcome, status)
    })
    .await;
    answered.unwrap_or_else(|response| response)
}

async fn approve(State(state): State<PageState>, Path((_, id)): Path<(String, String)>, body: Bytes) -> Response {
    let Some(body) = json_body(&body) else {
        return bad_body();
    };
    let digest = body.get("digest").and_then(Value::as_str).unwrap_or_default().to_owned();
    let typed = body.get("confirmation").and_then(Value::as_str).map(str::to_owned);
    decide(state, id, move |journal, config, audit, id| {
        approval::approve_in_page(journal, id, &digest, typed.as_deref(), &config.allowed_roots, audit)
    })
    .await
}

async fn reject(State(state): State<PageState>, Path((_, id)): Path<(String, String)>, body: Bytes) -> Response {
    let Some(body) = json_body(&body) else {
        return bad_body();
    };
    let reason = body
        .get("reason")
        .and_then(Value::as_str)
        .map(|reason| reason.trim().chars().take(MAX_REJECT_REASON_CHARS).collect::<String>())
        .filter(|reason| !reason.is_empty());
    decide(state, id, move |journal, _, audit, id| approval::reject(journal, id, reason.as_deref(), audit)).await
}

async fn restore(State(state): State<PageState>, Path((_, id)): Path<(String, String)>, body: Bytes) -> Response {
    if json_body(&body).is_none() {
        return bad_body();
    }
    decide(state, id, move |journal, _, audit, id| {
        let proposal = journal.get(id)?.ok_or_else(|| approval::Error::Unknown(id.to_owned()))?;
        if journal.restore_point_of(&proposal.id)?.is_none() {
            return Err(approval::Error::Refused(format!("{id} has no restore point")));
        }
        approval::restore(journal, id, audit).map(|_| ())
    })
    .await
}
