//! Per-request protocol context: which era and version a request is served in, and who the client says it is.
//!
//! Legacy requests use the session negotiated by `initialize`; a request whose `params._meta` carries
//! `io.modelcontextprotocol/protocolVersion` is served statelessly at that version (design.md#transport).

use serde_json::{Map, Value, json};

use crate::protocol::jsonrpc::UNSUPPORTED_PROTOCOL_VERSION;
use crate::protocol::version::Version;
use crate::tools::ProtocolError;

/// `_meta` key naming the request's protocol version (modern era).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key with the client's capabilities (required in the modern era).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key with the client's `{name, version}` (optional).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// Result `_meta` key with the server's `{name, version}`.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The client name used when none (or nothing usable) was declared (design.md#transport).
pub const DEFAULT_CLIENT_NAME: &str = "external-mcp-sidecar";

/// Longest sanitised client name, in characters (all ASCII).
const MAX_CLIENT_NAME_CHARS: usize = 64;

/// How one request is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestContext {
    /// The version whose fields the response may carry.
    pub(crate) version: Version,
    /// The sanitised client name (attribution, never identity).
    pub(crate) client_name: String,
    /// The sanitised client version, if declared.
    pub(crate) client_version: Option<String>,
}

/// Sanitises a self-declared client name to `[A-Za-z0-9._-]{1,64}` (design.md#transport): other characters are dropped, the
/// rest truncated to 64 characters; absent or empty afterwards -> [`DEFAULT_CLIENT_NAME`].
///
/// ```
/// use fluxgit_mcp_sidecar::protocol::sanitize_client_name;
/// assert_eq!(sanitize_client_name(Some("Claude Code/1.0")), "ClaudeCode1.0");
/// assert_eq!(sanitize_client_name(Some("  ")), "external-mcp-sidecar");
/// assert_eq!(sanitize_client_name(None), "external-mcp-sidecar");
/// ```
pub fn sanitize_client_name(raw: Option<&str>) -> String {
    let name: String = raw
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(MAX_CLIENT_NAME_CHARS)
        .collect();
    if name.is_empty() { DEFAULT_CLIENT_NAME.to_owned() } else { name }
}

/// Sanitises a self-declared client version to at most 64 characters of `[A-Za-z0-9._+-]`; `None` when absent or
/// empty afterwards.
///
/// ```
/// use fluxgit_mcp_sidecar::protocol::sanitize_client_version;
/// assert_eq!(sanitize_client_version(Some("1.2.3-beta+7 (linux)")).as_deref(), Some("1.2.3-beta+7linux"));
/// assert_eq!(sanitize_client_version(Some("\n")), None);
/// ```
pub fn sanitize_client_version(raw: Option<&str>) -> Option<String> {
    let version: String = raw?
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
        .take(MAX_CLIENT_NAME_CHARS)
        .collect();
    (!version.is_empty()).then_some(version)
}

/// The `_meta` object of `params`, if any.
pub(crate) fn request_meta(params: Option<&Value>) -> Option<&Map<String, Value>> {
    params?.get("_meta")?.as_object()
}

/// Whether the request opts into stateless (modern) handling by carrying a protocol version in `_meta`.
pub(crate) fn is_modern_request(meta: Option<&Map<String, Value>>) -> bool {
    meta.is_some_and(|meta| meta.contains_key(META_PROTOCOL_VERSION))
}

/// Validates the modern `_meta` of a request and returns its context.
///
/// # Errors
/// `-32022` with `data: {supported, requested}` for a version string this server does not speak (checked first, so
/// a probing client learns what to retry with); `-32602` with `data.missing` naming the absent or malformed
/// required keys (`protocolVersion` not a string, `clientCapabilities` not an object).
pub(crate) fn modern_context(meta: &Map<String, Value>) -> Result<RequestContext, ProtocolError> {
    let requested = meta.get(META_PROTOCOL_VERSION).and_then(Value::as_str);
    let version = match requested {
        Some(text) => Some(Version::parse(text).ok_or_else(|| unsupported_version(text))?),
        None => None,
    };
    let mut missing = Vec::new();
    if version.is_none() {
        missing.push(META_PROTOCOL_VERSION);
    }
    if !meta.get(META_CLIENT_CAPABILITIES).is_some_and(Value::is_object) {
        missing.push(META_CLIENT_CAPABILITIES);
    }
    let Some(version) = version.filter(|_| missing.is_empty()) else {
        return Err(ProtocolError::invalid_params(
            format!("request _meta is missing or has malformed required fields: {}", missing.join(", ")),
            Some(json!({"missing": missing})),
        ));
    };
    let client_info = meta.get(META_CLIENT_INFO);
    let field = |name: &str| client_info.and_then(|info| info.get(name)).and_then(Value::as_str);
    Ok(RequestContext {
        version,
        client_name: sanitize_client_name(field("name")),
        client_version: sanitize_client_version(field("version")),
    })
}

/// `-32022` for `requested`, listing every supported version.
pub(crate) fn unsupported_version(requested: &str) -> ProtocolError {
    let supported: Vec<&str> = Version::ALL.iter().map(|version| version.as_str()).collect();
    ProtocolError::new(
        UNSUPPORTED_PROTOCOL_VERSION,
        format!("Unsupported protocol version: {requested}"),
        Some(json!({"supported": supported, "requested": requested})),
    )
}
