//! Ledger entries (design.md#audit): what a caller records ([`Event`]) and how the writer seals it into a chained line.
//!
//! A sealed entry holds the event's fields plus `id` (UUID v4), `timestamp` (ms since the Unix epoch),
//! `auditSchemaVersion` 1, `auditChainVersion` 1, `sequence`, `segmentId`, `previousHash` (`genesis` for the first
//! entry), `entryHash` (`sha256:` of the canonical JSON without `entryHash` and `signature`) and, when signing,
//! `signatureKeyId`, `signatureVersion` 3 and `signature`. The line is the canonical JSON of the whole entry.
//!
//! The writer seals one record of its own: a tail repair ([`seal_tail_repair`]), written when it cut a torn last
//! line. It is chained, hashed and signed like any entry, with `event_type` `tail_repair`, a `summary`, and
//! `tornBytes` and `tornSha256` (the length and `sha256:` of the bytes cut) in place of a call's fields.

use serde_json::{Map, Value};

use crate::canonical::{canonical_json, sha256_digest};
use crate::key::SigningKey;
use crate::signature;

/// `auditSchemaVersion` written and understood.
pub const AUDIT_SCHEMA_VERSION: u64 = 1;
/// `auditChainVersion` written and understood.
pub const AUDIT_CHAIN_VERSION: u64 = 1;
/// `previousHash` of the first entry of a ledger.
pub const GENESIS: &str = "genesis";
/// Longest `summary`, in characters; longer summaries are cut.
pub const MAX_SUMMARY_CHARS: usize = 512;

/// Field names the chain relies on.
pub(crate) const SEQUENCE: &str = "sequence";
pub(crate) const SEGMENT_ID: &str = "segmentId";
pub(crate) const PREVIOUS_HASH: &str = "previousHash";
pub(crate) const ENTRY_HASH: &str = "entryHash";
pub(crate) const CHAIN_VERSION: &str = "auditChainVersion";
pub(crate) const SCHEMA_VERSION: &str = "auditSchemaVersion";
pub(crate) const EVENT_TYPE: &str = "event_type";
/// `event_type` of the writer's record of a torn tail it cut.
pub(crate) const TAIL_REPAIR: &str = "tail_repair";
pub(crate) const TORN_BYTES: &str = "tornBytes";
pub(crate) const TORN_SHA256: &str = "tornSha256";

/// One thing to record. Callers never put raw paths or identifiers here: use [`crate::fingerprint`] and
/// [`crate::repo_scope`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The tool name (`repo.status`), or a placeholder the caller chose for an unregistered one.
    pub tool: String,
    /// What happened.
    pub event_type: EventType,
    /// `repoPath:sha256:...` ([`crate::repo_scope`]) or `none`.
    pub repo_scope: String,
    /// `sha256:` of the canonical arguments ([`crate::fingerprint`]).
    pub args_fingerprint: String,
    /// The kind of effect the tool may have.
    pub risk: Risk,
    /// Where human approval stands.
    pub approval: Approval,
    /// How the call ended.
    pub result: Outcome,
    /// The session's attribution (the sanitised, self-declared client name): never an authenticated identity.
    pub session_id: String,
    /// How long the call took, in milliseconds.
    pub duration_ms: u64,
    /// A short description without paths or identifiers; cut to [`MAX_SUMMARY_CHARS`] characters.
    pub summary: String,
    /// Whether the tool is read-only.
    pub read_only: bool,
    /// Whether the writing process itself is read-only towards repositories (always `true` for the sidecar).
    pub sidecar_read_only: bool,
}

/// `event_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// `tool_call`: one MCP `tools/call`.
    ToolCall,
    /// `human_decision`: a person approved or rejected a proposal at the gateway (or restored a restore point).
    HumanDecision,
    /// `execution`: the gateway executed an approved proposal (or refused to, after revalidation).
    Execution,
}

/// `risk`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Risk {
    /// `read`: a read-only tool.
    Read,
    /// `write-proposal`: a tool that submits a write proposal to the gateway.
    WriteProposal,
    /// `unknown`: no such tool (nothing ran).
    Unknown,
    /// `write`: the gateway changed (or tried to change) a repository.
    Write,
}

/// `approval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// `none`: no approval involved (reads).
    None,
    /// `pending`: a proposal awaits a person.
    Pending,
    /// `approved`.
    Approved,
    /// `rejected`.
    Rejected,
}

/// `result`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `success`.
    Success,
    /// `error`: a JSON-RPC error or an `isError` result.
    Error,
}

impl EventType {
    /// The value written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToolCall => "tool_call",
            Self::HumanDecision => "human_decision",
            Self::Execution => "execution",
        }
    }
}

impl Risk {
    /// The value written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::WriteProposal => "write-proposal",
            Self::Unknown => "unknown",
            Self::Write => "write",
        }
    }
}

impl Approval {
    /// The value written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
        }
    }
}

impl Outcome {
    /// The value written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
        }
    }
}

/// Where an entry goes in the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Position {
    pub(crate) sequence: u64,
    pub(crate) segment_id: String,
    pub(crate) previous_hash: String,
}

/// A sealed entry: its line (canonical JSON and `\n`) and its hash.
#[derive(Debug, Clone)]
pub(crate) struct Sealed {
    pub(crate) line: String,
    pub(crate) entry_hash: String,
}

/// Seals `event` at `position`.
pub(crate) fn seal(
    event: &Event,
    position: &Position,
    id: &str,
    timestamp_ms: u64,
    key: Option<&SigningKey>,
) -> Sealed {
    let summary: String = event.summary.chars().take(MAX_SUMMARY_CHARS).collect();
    let mut entry = Map::new();
    let mut put = |name: &str, value: Value| {
        entry.insert(name.to_owned(), value);
    };
    put("id", id.into());
    put("timestamp", timestamp_ms.into());
    put(SCHEMA_VERSION, AUDIT_SCHEMA_VERSION.into());
    put(CHAIN_VERSION, AUDIT_CHAIN_VERSION.into());
    put(SEQUENCE, position.sequence.into());
    put(SEGMENT_ID, position.segment_id.as_str().into());
    put(PREVIOUS_HASH, position.previous_hash.as_str().into());
    put("tool", event.tool.as_str().into());
    put(EVENT_TYPE, event.event_type.as_str().into());
    put("repo_scope", event.repo_scope.as_str().into());
    put("args_fingerprint", event.args_fingerprint.as_str().into());
    put("risk", event.risk.as_str().into());
    put("approval", event.approval.as_str().into());
    put("result", event.result.as_str().into());
    put("session_id", event.session_id.as_str().into());
    put("duration_ms", event.duration_ms.into());
    put("summary", summary.into());
    put("readOnly", event.read_only.into());
    put("sidecarReadOnly", event.sidecar_read_only.into());
    let entry_hash = seal_object(&mut entry, key);
    let mut line = canonical_json(&Value::Object(entry));
    line.push('\n');
    Sealed { line, entry_hash }
}

/// A torn last line the writer cut: how many bytes, and their `sha256:` digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Torn {
    pub(crate) bytes: u64,
    pub(crate) sha256: String,
}

/// Seals the record of a cut torn tail at `position`.
pub(crate) fn seal_tail_repair(
    torn: &Torn,
    position: &Position,
    id: &str,
    timestamp_ms: u64,
    key: Option<&SigningKey>,
) -> Sealed {
    let mut entry = Map::new();
    let mut put = |name: &str, value: Value| {
        entry.insert(name.to_owned(), value);
    };
    put("id", id.into());
    put("timestamp", timestamp_ms.into());
    put(SCHEMA_VERSION, AUDIT_SCHEMA_VERSION.into());
    put(CHAIN_VERSION, AUDIT_CHAIN_VERSION.into());
    put(SEQUENCE, position.sequence.into());
    put(SEGMENT_ID, position.segment_id.as_str().into());
    put(PREVIOUS_HASH, position.previous_hash.as_str().into());
    put(EVENT_TYPE, TAIL_REPAIR.into());
    let summary = format!(
        "a torn last line of {} bytes was cut: an append had failed part-way (a full disk or a crash)",
        torn.bytes
    );
    put("summary", summary.into());
    put(TORN_BYTES, torn.bytes.into());
    put(TORN_SHA256, torn.sha256.as_str().into());
    let entry_hash = seal_object(&mut entry, key);
    let mut line = canonical_json(&Value::Object(entry));
    line.push('\n');
    Sealed { line, entry_hash }
}

/// Adds the signature header (if signing), `entryHash`, and the signature (if signing) to `object`; returns the
/// entry hash.
pub(crate) fn seal_object(object: &mut Map<String, Value>, key: Option<&SigningKey>) -> String {
    if let Some(key) = key {
        signature::add_signature_header(object, key);
    }
    let entry_hash = entry_hash(object);
    object.insert(ENTRY_HASH.to_owned(), Value::from(entry_hash.as_str()));
    if let Some(key) = key {
        signature::sign(object, key);
    }
    entry_hash
}

/// `sha256:` of the canonical JSON of `entry` without `entryHash` and `signature`.
pub(crate) fn entry_hash(entry: &Map<String, Value>) -> String {
    let mut hashed = entry.clone();
    hashed.remove(ENTRY_HASH);
    hashed.remove(signature::SIGNATURE);
    sha256_digest(canonical_json(&Value::Object(hashed)).as_bytes())
}

/// `repoPath:sha256:` + the hex sha256 of the path text: how a repository is named in the ledger (never verbatim).
///
/// The digest is unsalted: it groups calls by repository and hides the path from a casual reader, but a path that
/// can be guessed can be confirmed.
///
/// ```
/// assert!(fluxgit_audit::repo_scope("/home/me/repo").starts_with("repoPath:sha256:"));
/// ```
pub fn repo_scope(repo_path: &str) -> String {
    format!("repoPath:{}", sha256_digest(repo_path.as_bytes()))
}
