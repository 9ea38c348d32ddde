//! The write-proposal bridge (design.md#tools "Write handshake", §4.5): the sidecar's client of the approval gateway.
//!
//! The sidecar never writes to a repository. A proposal is one `POST /v1/mcp/operation/preview/{op}` to a gateway on
//! loopback, followed by one bounded `GET /v1/mcp/operation/status/{previewId}`; a person approves or rejects it
//! at the gateway. The HTTP contract is written down in `docs/gateway-http.md`.
//!
//! - [`address`]: the gateway address of design.md#environment (loopback only);
//! - [`http`]: one bounded exchange (no proxy, no redirect, timeouts);
//! - [`Bridge`]: propose, status and cancel, with every gateway answer mapped to a [`Snapshot`] or a [`Failure`]
//!   carrying its design.md#errors code (10003-10007).

pub mod address;
pub mod http;
pub mod reads;

use serde_json::{Map, Value, json};

use crate::bridge::address::Address;
use crate::bridge::http::{Failed, Reply, Timeouts};
use crate::envelope::{BRIDGE_UNAVAILABLE, GATEWAY_REFUSED, PROPOSAL_ENDED, UNKNOWN_PREVIEW, UNSAFE_PREVIEW_ID};

/// Longest `previewId`, in characters.
pub const MAX_PREVIEW_ID_CHARS: usize = 128;

/// The client of one gateway, or the reason there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bridge {
    address: Setting,
    timeouts: Timeouts,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Setting {
    Unset,
    Invalid { variable: String, problem: String },
    Valid { variable: String, address: Address },
}

/// A proposal's state at the gateway (design.md#gateway lifecycle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    /// Waiting for a person.
    Pending,
    /// Approved, not started yet.
    Approved,
    /// Being executed.
    Executing,
    /// Executed; the gateway's `result` says what changed.
    Completed,
    /// Rejected by a person.
    Rejected,
    /// Executed and failed.
    Failed,
    /// Nobody decided before it expired.
    Expired,
    /// Cancelled by its agent.
    Cancelled,
}

/// A proposal as the gateway reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The gateway's safe `previewId`.
    pub preview_id: String,
    /// Its state.
    pub status: Lifecycle,
    /// The gateway's whole answer (an object), for the fields the tools pass on (`operationType`, `expiresAt`,
    /// `result`).
    pub fields: Map<String, Value>,
}

/// A bridge failure: a design.md#errors product code, a message, and structured data with a machine `reason`.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// 10003 (bridge missing, invalid or unreachable), 10004 (proposal ended without completion), 10005 (unknown
    /// previewId), 10006 (refused by the gateway) or 10007 (unsafe previewId).
    pub code: i64,
    /// What happened, for the agent.
    pub message: String,
    /// `{reason, ...}`, e.g. `{"reason": "unreachable"}`; for 10004 the gateway's status object as it came (its
    /// `status` says how the proposal ended).
    pub data: Map<String, Value>,
}

impl Lifecycle {
    /// Every state with its wire name.
    pub const ALL: [(Lifecycle, &'static str); 8] = [
        (Self::Pending, "pending"),
        (Self::Approved, "approved"),
        (Self::Executing, "executing"),
        (Self::Completed, "completed"),
        (Self::Rejected, "rejected"),
        (Self::Failed, "failed"),
        (Self::Expired, "expired"),
        (Self::Cancelled, "cancelled"),
    ];

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(_, wire)| *wire == name).map(|(state, _)| *state)
    }

    /// The wire name, e.g. `pending`.
    pub fn as_str(self) -> &'static str {
        Self::ALL.iter().find(|(state, _)| *state == self).map_or("pending", |(_, wire)| wire)
    }

    /// Whether the proposal ended without completing: rejected, failed, expired or cancelled (10004).
    pub fn ended_without_completion(self) -> bool {
        matches!(self, Self::Rejected | Self::Failed | Self::Expired | Self::Cancelled)
    }
}

/// Whether the gateway's `previewId` may be followed: `[A-Za-z0-9_-]{1,128}` (it becomes part of a URL path).
pub fn is_safe_preview_id(id: &str) -> bool {
    (1..=MAX_PREVIEW_ID_CHARS).contains(&id.len())
        && id.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

impl Bridge {
    /// No gateway configured: every call is 10003.
    pub const NONE: Bridge = Bridge { address: Setting::Unset, timeouts: Timeouts::DEFAULT };

    /// The bridge for the first set gateway variable (`(name, value)`, see
    /// [`crate::config::Config::gateway_addr`]), with `timeouts`. An invalid value is kept as the reason every call
    /// fails with (10003); it never falls through to the next variable.
    pub fn new(setting: Option<(&str, &str)>, timeouts: Timeouts) -> Self {
        let address = match setting {
            None => Setting::Unset,
            Some((variable, value)) => match address::parse(value) {
                Ok(address) => Setting::Valid { variable: variable.to_owned(), address },
                Err(problem) => Setting::Invalid { variable: variable.to_owned(), problem },
            },
        };
        Self { address, timeouts }
    }

    /// The bridge of a validated configuration, with [`Timeouts::DEFAULT`].
    pub fn from_config(config: &crate::config::Config) -> Self {
        let setting = config.gateway_addr.as_ref().map(|(name, value)| (name.as_str(), value.as_str()));
        Self::new(setting, Timeouts::DEFAULT)
    }

    /// Whether a valid gateway address is configured, so that write proposals can be sent (reachability is only
    /// known by trying). `repo.brief` names proposal tools in its hints only then.
    pub fn is_configured(&self) -> bool {
        matches!(self.address, Setting::Valid { .. })
    }

    /// One line for `doctor`: where the address came from and whether it is usable.
    pub fn describe(&self) -> String {
        match &self.address {
            Setting::Unset => "not configured: write proposals answer 10003 (local tools work)".to_owned(),
            Setting::Invalid { variable, problem } => {
                format!("{variable} is invalid ({problem}): write proposals answer 10003")
            }
            Setting::Valid { variable, address } => format!("http://{address} (from {variable})"),
        }
    }

    /// Submits a proposal: `POST /v1/mcp/operation/preview/{operation}` with `body`, then one bounded status GET.
    ///
    /// Accepted answers are 200 and 202 with a safe `previewId`. The state is the status GET's when it answers
    /// for the same proposal, else the POST's, else `pending` (the gateway accepted it, and a new proposal waits
    /// for a person).
    ///
    /// # Errors
    /// [`Failure`] 10003 (no, invalid or unreachable gateway, a redirect, an unexpected status or body), 10006 (403,
    /// 422 or 429 with the gateway's reason) or 10007 (unsafe `previewId`, not followed).
    pub fn propose(&self, operation: &str, body: &Value) -> Result<Snapshot, Failure> {
        let address = self.address()?;
        let reply = self.exchange(address, &format!("/v1/mcp/operation/preview/{operation}"), Some(body))?;
        if !matches!(reply.status, 200 | 202) {
            return Err(unexpected(&reply, "the proposal"));
        }
        let fields = json_object(&reply)?;
        let preview_id = safe_preview_id(&fields)?;
        let posted = fields.get("status").and_then(Value::as_str).and_then(Lifecycle::parse);
        let checked = match self.status(&preview_id) {
            Ok(snapshot) => Some(snapshot.status),
            Err(failure) if failure.code == PROPOSAL_ENDED => {
                failure.data.get("status").and_then(Value::as_str).and_then(Lifecycle::parse)
            }
            Err(failure) => {
                tracing::warn!(code = failure.code, message = %failure.message, "status check after a proposal failed");
                None
            }
        };
        let status = checked.or(posted).unwrap_or(Lifecycle::Pending);
        Ok(Snapshot { preview_id, status, fields })
    }

    /// `GET /v1/mcp/operation/status/{preview_id}`: the authoritative state of a proposal.
    ///
    /// # Errors
    /// [`Failure`] 10004 for rejected, failed, expired or cancelled (with the gateway's status object as data),
    /// 10005 for 404, 10006 for 403/422/429, 10007 when the answer names another or an unsafe `previewId`, 10003
    /// otherwise (including an unknown state).
    pub fn status(&self, preview_id: &str) -> Result<Snapshot, Failure> {
        let address = self.address()?;
        let reply = self.exchange(address, &format!("/v1/mcp/operation/status/{preview_id}"), None)?;
        let snapshot = self.snapshot(&reply, preview_id, "status")?;
        if snapshot.status.ended_without_completion() {
            return Err(Failure {
                code: PROPOSAL_ENDED,
                message: format!(
                    "Proposal {preview_id} ended without completion: {}. Git was not changed by it, unless \
                     `result` says a failed execution changed something.",
                    snapshot.status.as_str()
                ),
                data: snapshot.fields,
            });
        }
        Ok(snapshot)
    }

    /// `POST /v1/mcp/operation/cancel/{preview_id}` with `body` (`{previewId, agentId, requestedAt, reason?}`): the
    /// gateway cancels only a pending proposal of the same agent.
    ///
    /// # Errors
    /// [`Failure`] 10005 for 404, 10006 for 403/409/422/429 (another agent's, or no longer pending), 10007 for a
    /// mismatched `previewId`, 10003 otherwise.
    pub fn cancel(&self, preview_id: &str, body: &Value) -> Result<Snapshot, Failure> {
        let address = self.address()?;
        let reply = self.exchange(address, &format!("/v1/mcp/operation/cancel/{preview_id}"), Some(body))?;
        self.snapshot(&reply, preview_id, "the cancellation")
    }

    fn address(&self) -> Result<Address, Failure> {
        match &self.address {
            Setting::Valid { address, .. } => Ok(*address),
            Setting::Unset => Err(bridge_failure(
                "not_configured",
                "No approval gateway is configured, so no write can be proposed: set FLUXGIT_MCP_HANDSHAKE_ADDR to \
                 the address the gateway prints. No proposal was made.",
                json!({}),
            )),
            Setting::Invalid { variable, problem } => Err(bridge_failure(
                "invalid_address",
                &format!("{variable} is not a valid gateway address: {problem}. No proposal was made."),
                json!({ "variable": variable, "problem": problem }),
            )),
        }
    }

    fn exchange(&self, address: Address, path: &str, body: Option<&Value>) -> Result<Reply, Failure> {
        let socket = address.socket_addr(self.timeouts.connect).map_err(|problem| {
            bridge_failure("unreachable", &format!("The gateway is unreachable: {problem}."), json!({}))
        })?;
        let bytes = body.map(|body| body.to_string().into_bytes());
        http::exchange(socket, self.timeouts, path, bytes.as_deref()).map_err(|failed| {
            let (reason, detail) = match failed {
                Failed::Timeout(detail) => ("timeout", detail),
                Failed::Unreachable(detail) => ("unreachable", detail),
                Failed::Malformed(detail) => ("malformed_reply", detail),
            };
            bridge_failure(
                reason,
                &format!(
                    "The gateway at {address} did not answer the bridge ({detail}). This is not an approval \
                     timeout: the request did not complete, so nothing may be inferred about a proposal."
                ),
                json!({}),
            )
        })
    }

    /// Maps a status or cancel reply for `preview_id` to a snapshot or a failure.
    fn snapshot(&self, reply: &Reply, preview_id: &str, what: &str) -> Result<Snapshot, Failure> {
        match reply.status {
            200 => {}
            404 => {
                return Err(Failure {
                    code: UNKNOWN_PREVIEW,
                    message: format!(
                        "The gateway does not know previewId {preview_id} (wrong, never accepted, or pruned after \
                         its retention). Do not re-propose on that alone: check repo.status first, since an approved \
                         proposal may already have changed the repository."
                    ),
                    data: gateway_reason(reply, "unknown_preview"),
                });
            }
            _ => return Err(unexpected(reply, what)),
        }
        let fields = json_object(reply)?;
        let answered = safe_preview_id(&fields)?;
        if answered != preview_id {
            return Err(Failure {
                code: UNSAFE_PREVIEW_ID,
                message: format!(
                    "The gateway answered for previewId {answered} when asked about {preview_id}; not followed."
                ),
                data: object(json!({ "reason": "mismatched_preview_id" })),
            });
        }
        let status = match fields.get("status").and_then(Value::as_str) {
            Some(name) => Lifecycle::parse(name).ok_or_else(|| {
                bridge_failure(
                    "malformed_reply",
                    &format!("The gateway reported an unknown proposal state {name:?}."),
                    json!({ "status": name }),
                )
            })?,
            None => return Err(bridge_failure("malformed_reply", "The gateway's answer has no status.", json!({}))),
        };
        Ok(Snapshot { preview_id: answered, status, fields })
    }
}

/// A failure for a reply whose status is not the expected success.
fn unexpected(reply: &Reply, what: &str) -> Failure {
    match reply.status {
        403 | 409 | 422 | 429 => {
            let data = gateway_reason(reply, "refused");
            let said = data.get("message").and_then(Value::as_str).unwrap_or("no reason given");
            Failure {
                code: GATEWAY_REFUSED,
                message: format!("The gateway refused {what} (HTTP {}): {said}", reply.status),
                data,
            }
        }
        300..=399 => bridge_failure(
            "redirect",
            &format!("The gateway answered HTTP {} (a redirect); redirects are never followed.", reply.status),
            json!({ "httpStatus": reply.status }),
        ),
        status => bridge_failure(
            "http_status",
            &format!("The gateway answered HTTP {status} to {what}; nothing may be inferred about a proposal."),
            json!({ "httpStatus": status }),
        ),
    }
}

/// `{reason, message, httpStatus, details?}` from a refusal body `{reason, message, details?}`; a body that is not
/// such an object is passed on as `message` (up to 500 characters).
fn gateway_reason(reply: &Reply, default_reason: &str) -> Map<String, Value> {
    let parsed: Option<Map<String, Value>> = serde_json::from_str(&reply.body).ok();
    let field = |name: &str| parsed.as_ref().and_then(|body| body.get(name)).filter(|value| !value.is_null());
    let mut data = Map::new();
    let reason = field("reason").and_then(Value::as_str).unwrap_or(default_reason);
    data.insert("reason".to_owned(), Value::from(reason));
    let message = match field("message").and_then(Value::as_str) {
        Some(message) => message.to_owned(),
        None if parsed.is_none() => reply.body.chars().take(500).collect(),
        None => String::new(),
    };
    if !message.is_empty() {
        data.insert("message".to_owned(), Value::from(message));
    }
    if let Some(details) = field("details") {
        data.insert("details".to_owned(), details.clone());
    }
    data.insert("httpStatus".to_owned(), Value::from(reply.status));
    data
}

fn json_object(reply: &Reply) -> Result<Map<String, Value>, Failure> {
    serde_json::from_str(&reply.body).map_err(|_| {
        bridge_failure(
            "malformed_reply",
            &format!("The gateway's HTTP {} answer is not a JSON object.", reply.status),
            json!({ "httpStatus": reply.status }),
        )
    })
}

fn safe_preview_id(fields: &Map<String, Value>) -> Result<String, Failure> {
    match fields.get("previewId").and_then(Value::as_str) {
        Some(id) if is_safe_preview_id(id) => Ok(id.to_owned()),
        _ => Err(Failure {
            code: UNSAFE_PREVIEW_ID,
            message: "The gateway returned a missing or unsafe previewId (allowed: 1-128 of A-Z a-z 0-9 _ -); it \
                      was not followed. The gateway may have recorded a proposal: check it there."
                .to_owned(),
            data: object(json!({ "reason": "unsafe_preview_id" })),
        }),
    }
}

fn bridge_failure(reason: &str, message: &str, extra: Value) -> Failure {
    let mut data = object(json!({ "reason": reason }));
    data.extend(object(extra));
    Failure { code: BRIDGE_UNAVAILABLE, message: message.to_owned(), data }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_ids_are_followed_only_when_safe() {
        for id in ["a", "5f0c6f5e-2a43-4a8e-9d1e-0b6f1f0f9b7a", "A_b-9", &"x".repeat(128)] {
            assert!(is_safe_preview_id(id), "{id}");
        }
        for id in ["", "../x", "a/b", "a b", "a%2F", "é", &"x".repeat(129)] {
            assert!(!is_safe_preview_id(id), "{id}");
        }
    }

    #[test]
    fn states_round_trip_and_endings_are_classified() {
        for (state, name) in Lifecycle::ALL {
            assert_eq!(Lifecycle::parse(name), Some(state));
            assert_eq!(state.as_str(), name);
        }
        let ended: Vec<&str> = Lifecycle::ALL
            .iter()
            .filter(|(state, _)| state.ended_without_completion())
            .map(|(_, name)| *name)
            .collect();
        assert_eq!(ended, ["rejected", "failed", "expired", "cancelled"]);
        assert_eq!(Lifecycle::parse("weird"), None);
    }

    #[test]
    fn an_unset_or_invalid_address_fails_before_any_request() {
        let unset = Bridge::NONE.status("p").expect_err("no gateway");
        assert_eq!((unset.code, unset.data["reason"].as_str()), (BRIDGE_UNAVAILABLE, Some("not_configured")));
        let invalid = Bridge::new(Some(("FLUXGIT_GATEWAY_URL", "http://u:secret@127.0.0.1:9")), Timeouts::DEFAULT);
        let failure = invalid.propose("merge", &json!({})).expect_err("invalid");
        assert_eq!(failure.data["reason"], "invalid_address");
        assert!(!failure.message.contains("secret") && failure.message.contains("FLUXGIT_GATEWAY_URL"));
    }
}
