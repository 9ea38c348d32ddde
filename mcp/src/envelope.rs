//! The result envelope of design.md#envelope and the mapping of engine errors to design.md#errors's two kinds of failure.

use fluxgit_engine::{Budgeted, Error as EngineError, budget};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// A successful or product-error tool result, before protocol framing.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    /// The compact JSON of the envelope: exactly what goes into `content[0].text` and what budgets are measured on.
    pub text: String,
    /// The envelope as JSON text for `structuredContent` (the same text as `text` but for `format: "text"`), written
    /// into the response as it is: never parsed back into a value. `None` leaves `structuredContent` out.
    pub structured: Option<Box<RawValue>>,
    /// `true` for product errors (100xx), which are tool results, not JSON-RPC errors (design.md#errors).
    pub is_error: bool,
    /// The product error's code (`error.code` of the envelope) when `is_error`, for the audit ledger.
    pub error_code: Option<i64>,
    /// The envelope's `repoPath`, for the presence file.
    pub repo_path: Option<String>,
}

impl ToolOutput {
    /// `structured` parsed into a value (`Null` without one), for callers that inspect the envelope (tests); the
    /// server itself never parses it.
    pub fn structured_value(&self) -> Value {
        self.structured.as_deref().map_or(Value::Null, |raw| serde_json::from_str(raw.get()).expect("raw JSON parses"))
    }
}

/// A failure that must become a JSON-RPC error (design.md#errors), e.g. invalid params with `data.reason`.
#[derive(Debug, Clone)]
pub struct ProtocolError {
    /// JSON-RPC error code (-32602 for invalid params).
    pub code: i32,
    /// Human-readable message.
    pub message: String,
    /// Structured detail, e.g. `{"reason": "outside_allowed_roots"}`.
    pub data: Option<Value>,
}

/// Product code: the write-handshake bridge is missing, invalid or unreachable; no proposal may be inferred. Never
/// a human-approval timeout (design.md#errors).
pub const BRIDGE_UNAVAILABLE: i64 = 10003;
/// Product code: a proposal ended without completion (rejected, failed, expired, cancelled).
pub const PROPOSAL_ENDED: i64 = 10004;
/// Product code: the gateway does not know this previewId.
pub const UNKNOWN_PREVIEW: i64 = 10005;
/// Product code: the gateway refused before opening a card (policy, validation, quota).
pub const GATEWAY_REFUSED: i64 = 10006;
/// Product code: the gateway returned a malformed or unsafe previewId; it was not followed.
pub const UNSAFE_PREVIEW_ID: i64 = 10007;
/// Product code: a local read-only git operation failed (design.md#errors).
pub const GIT_READ_FAILED: i64 = 10010;

/// Product code: agent detection is disabled (`FLUXGIT_MCP_AGENT_DETECTION_DISABLED`), `agents.presence` only.
pub const AGENT_DETECTION_DISABLED: i64 = 10011;

/// Where a result came from (design.md#envelope `source`): the local repository.
pub const SOURCE_LOCAL: &str = "local-git";
/// Where a result came from: the approval gateway (write proposals and their status).
pub const SOURCE_GATEWAY: &str = "fluxgit-gateway";

/// The fields every envelope of one call shares: `{tool, readOnly, repoPath, source}`, plus `resolvedFrom` when
/// the caller named a subfolder of the repository.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Frame {
    /// The tool's dotted name; serialised in the process's listed spelling ([`crate::tools::listing`]).
    #[serde(serialize_with = "listed_name")]
    pub tool: &'static str,
    /// `true` for read tools.
    pub read_only: bool,
    /// The repository's canonical root (work-tree top).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo_path: Option<String>,
    /// The canonical path the caller gave, when it differs from `repoPath` (a subfolder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_from: Option<String>,
    /// `local-git` or `fluxgit-gateway`.
    pub source: &'static str,
}

/// Writes a tool's dotted name as the process lists it.
fn listed_name<S: serde::Serializer>(tool: &&'static str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&crate::tools::listing::listed(tool))
}

#[derive(Serialize)]
struct Envelope<'a, T: Serialize> {
    #[serde(flatten)]
    frame: &'a Frame,
    data: &'a T,
    #[serde(skip_serializing_if = "fluxgit_engine::budget::Omitted::is_empty")]
    omitted: &'a budget::Omitted,
}

impl Frame {
    /// A local read tool's frame for a resolved repository.
    pub fn local(tool: &'static str, location: &fluxgit_engine::Location) -> Self {
        let root = location.root.display().to_string();
        let requested = location.requested.display().to_string();
        Self {
            tool,
            read_only: true,
            resolved_from: (requested != root).then_some(requested),
            repo_path: Some(root),
            source: SOURCE_LOCAL,
        }
    }

    /// The frame of a gateway tool (`source: fluxgit-gateway`), for a resolved repository or none.
    pub fn gateway(tool: &'static str, read_only: bool, location: Option<&fluxgit_engine::Location>) -> Self {
        let mut frame = match location {
            Some(location) => Self::local(tool, location),
            None => Self { tool, read_only, repo_path: None, resolved_from: None, source: SOURCE_GATEWAY },
        };
        frame.read_only = read_only;
        frame.source = SOURCE_GATEWAY;
        frame
    }

    /// A successful output whose `data` is `data` as is (no budget: gateway answers are small and bounded).
    pub fn data_output<T: Serialize>(&self, data: &T) -> ToolOutput {
        let omitted = budget::Omitted::default();
        self.tool_output(&Envelope { frame: self, data, omitted: &omitted }, None)
    }

    /// A product error (design.md#errors): `isError: true`, text `{...frame, "error": {code, message, data}}`.
    pub fn product_error(&self, code: i64, message: &str, data: Value) -> ToolOutput {
        let mut envelope = serde_json::to_value(self).expect("frame serialises");
        envelope["error"] = json!({ "code": code, "message": message, "data": data });
        self.tool_output(&envelope, Some(code))
    }

    /// The exact compact JSON of the envelope around `result`: what `content[0].text` carries and budgets measure.
    pub fn render<T: Serialize>(&self, result: &Budgeted<T>) -> String {
        serde_json::to_string(&Envelope { frame: self, data: &result.data, omitted: &result.omitted })
            .expect("engine results serialise: plain structs of strings and numbers")
    }

    /// The size in tokens (o200k_base) of [`Frame::render`] for a budget's measure: exact, except that inside a fit
    /// a text no longer in bytes than the budget counts as its byte length ([`budget::measure_tokens`]).
    pub fn measure<T: Serialize>(&self, result: &Budgeted<T>) -> usize {
        budget::measure_tokens(&self.render(result))
    }

    /// A successful tool output.
    pub fn output<T: Serialize>(&self, result: &Budgeted<T>) -> ToolOutput {
        self.tool_output(&Envelope { frame: self, data: &result.data, omitted: &result.omitted }, None)
    }

    /// A successful tool output whose `content[0].text` is `text` (design.md#envelope `format: "text"`), with the JSON
    /// envelope of `result` as `structuredContent`.
    pub fn text_rendering_output<T: Serialize>(&self, text: String, result: &Budgeted<T>) -> ToolOutput {
        let output = self.output(result);
        ToolOutput { text, ..output }
    }

    /// Maps an engine error: refused input becomes a JSON-RPC error with `data.reason` (design.md#roots); a failed read
    /// on a valid repository becomes tool error 10010 (design.md#errors).
    pub fn engine_error(&self, error: EngineError) -> Result<ToolOutput, ProtocolError> {
        match error {
            EngineError::Invalid { reason, message, floor, suggestions } => {
                let mut data = json!({ "reason": reason.as_str() });
                if let Some(floor) = floor {
                    data["floor"] = json!(floor);
                }
                if !suggestions.is_empty() {
                    data["suggestions"] = json!(suggestions);
                }
                Err(ProtocolError::invalid_params(message, Some(data)))
            }
            EngineError::GitRead { what, message } => Ok(self.product_error(
                GIT_READ_FAILED,
                &format!("git read failed while reading {what}: {message}"),
                json!({ "what": what, "nextStep": "Check the repository with `git fsck`; no change was made." }),
            )),
            EngineError::Cancelled => Err(ProtocolError::cancelled()),
        }
    }
}

impl Frame {
    /// The output whose text and `structuredContent` are `envelope`'s compact JSON, rendered once (the same bytes
    /// as [`Frame::render`]); a product error when `error_code` is set.
    fn tool_output(&self, envelope: &impl Serialize, error_code: Option<i64>) -> ToolOutput {
        let structured = serde_json::value::to_raw_value(envelope).expect("envelopes serialise: plain JSON values");
        ToolOutput {
            text: structured.get().to_owned(),
            structured: Some(structured),
            is_error: error_code.is_some(),
            error_code,
            repo_path: self.repo_path.clone(),
        }
    }
}
