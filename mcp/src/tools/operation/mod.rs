//! The write-handshake family (design.md#tools): the thirteen `operation.preview.*` tools, `operation.cancel` and
//! `operation.status`. A preview checks its arguments locally (repository inside the allowed roots, revisions,
//! paths, sizes), then submits one proposal through the [`crate::bridge`]; a person decides at the gateway. No tool
//! here changes a repository, and none claims that Git changed unless the gateway reports `completed`.

pub mod fields;
pub mod others;

use serde_json::{Map, Value, json};

use crate::bridge::{Failure, Lifecycle, Snapshot};
use crate::envelope::{BRIDGE_UNAVAILABLE, Frame, GATEWAY_REFUSED, PROPOSAL_ENDED, UNKNOWN_PREVIEW, UNSAFE_PREVIEW_ID};
use crate::tools::operation::fields::{Operation, Refusal};
use crate::tools::{CallContext, ProtocolError, Tool, ToolDefinition, ToolOutput, schema};

/// One tool of this family.
pub struct OperationTool {
    definition: ToolDefinition,
    action: Action,
}

enum Action {
    Preview(Operation),
    Cancel,
    Status,
}

impl Tool for OperationTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
        let text = |name: &str| arguments.get(name).and_then(Value::as_str).unwrap_or_default();
        match self.action {
            Action::Preview(operation) => preview(ctx, operation, arguments),
            Action::Cancel => cancel(ctx, text("previewId"), arguments.get("reason")),
            Action::Status => {
                let wait = arguments.get("waitMs").and_then(Value::as_u64).unwrap_or(0).min(MAX_WAIT_MS);
                status(ctx, text("previewId"), std::time::Duration::from_millis(wait))
            }
        }
    }
}

/// The thirteen preview tools, in design.md#tools order.
pub fn previews() -> Vec<OperationTool> {
    Operation::ALL.into_iter().map(preview_tool).collect()
}

fn preview_tool(operation: Operation) -> OperationTool {
    let (title, description) = fields::texts(operation);
    OperationTool {
        definition: ToolDefinition {
            name: operation.tool(),
            title,
            description,
            input_schema: fields::input_schema(operation),
            output_schema: schema::envelope(proposal_schema()),
            read_only: false,
        },
        action: Action::Preview(operation),
    }
}

/// `operation.cancel`.
pub fn cancel_tool() -> OperationTool {
    OperationTool {
        definition: ToolDefinition {
            name: "operation.cancel",
            title: "Cancel a proposal",
            description: "Withdraw one of your own proposals while it is still pending.",
            input_schema: schema::input(
                json!({ "previewId": preview_id_schema(), "reason": { "type": "string", "minLength": 1,
                    "maxLength": 2000, "description": "Why the proposal is withdrawn (shown at the gateway)." } }),
                &["previewId"],
            ),
            output_schema: schema::envelope(json!({ "type": "object", "required": ["previewId", "status"],
                "properties": { "previewId": { "type": "string" }, "status": status_schema() } })),
            read_only: false,
        },
        action: Action::Cancel,
    }
}

/// The longest `waitMs` `operation.status` honours, in ms: within the tool-call timeouts of the hosts (60 s and
/// more), so a wait ends with an answer, never with the host giving up on the call.
pub const MAX_WAIT_MS: u64 = 30_000;

/// How often a waiting `operation.status` asks the gateway again, in ms (a loopback request of a few hundred
/// microseconds).
const WAIT_POLL_MS: u64 = 200;

/// `operation.status`.
pub fn status_tool() -> OperationTool {
    let data = json!({
        "type": "object",
        "required": ["previewId", "status"],
        "properties": {
            "previewId": { "type": "string" },
            "operationType": { "type": "string" },
            "status": status_schema(),
            "result": { "description": "Only when completed: what Git did (new sha, restorePointId, conflicts, \
                per-branch or per-step outcomes)." },
            "expiresAt": { "type": "string" },
            "nextAction": next_action_schema()
        }
    });
    OperationTool {
        definition: ToolDefinition {
            name: "operation.status",
            title: "Proposal status",
            description: "The state of a proposal at the approval gateway; when completed, what Git did. Pass waitMs to \
                wait for the person's decision in one call.",
            input_schema: schema::input(
                json!({ "previewId": preview_id_schema(), "waitMs": { "type": "integer", "minimum": 0,
                    "maximum": MAX_WAIT_MS, "description": "Wait up to this long (ms) while the proposal is \
                    pending, approved or executing; default 0." } }),
                &["previewId"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
        action: Action::Status,
    }
}

fn preview_id_schema() -> Value {
    json!({ "type": "string", "pattern": "^[A-Za-z0-9_-]{1,128}$", "maxLength": 128,
        "description": "The previewId a preview returned." })
}

fn status_schema() -> Value {
    let names: Vec<&str> = Lifecycle::ALL.iter().map(|(_, name)| *name).collect();
    json!({ "type": "string", "enum": names })
}

fn next_action_schema() -> Value {
    let data =
        json!({ "type": "object", "required": ["previewId"], "properties": { "previewId": { "type": "string" } } });
    json!({ "type": "object", "required": ["tool", "data"],
        "properties": { "tool": { "type": "string", "description": "operation_status, as listed." }, "data": data } })
}

fn proposal_schema() -> Value {
    json!({
        "type": "object",
        "required": ["accepted", "previewId", "operationType", "status", "nextAction"],
        "properties": {
            "accepted": { "const": true },
            "previewId": { "type": "string" },
            "operationType": { "type": "string" },
            "status": status_schema(),
            "expiresAt": { "type": "string" },
            "nextAction": next_action_schema(),
            "otherAgents": others::schema()
        }
    })
}

fn next_action(preview_id: &str) -> Value {
    json!({ "tool": crate::tools::listing::listed("operation.status"), "data": { "previewId": preview_id } })
}

/// The current time as RFC 3339 UTC with milliseconds, e.g. `2026-01-01T00:00:00.000Z`.
fn now() -> String {
    format!("{:.3}", jiff::Timestamp::now())
}

fn preview(
    ctx: &CallContext<'_>,
    operation: Operation,
    arguments: &Map<String, Value>,
) -> Result<ToolOutput, ProtocolError> {
    let tool = operation.tool();
    let text = |name: &str| arguments.get(name).and_then(Value::as_str).unwrap_or_default();
    let repo = match ctx.resolve(text("repoPath")) {
        Ok(repo) => repo,
        Err(error) => return Frame::gateway(tool, false, None).engine_error(error),
    };
    let frame = Frame::gateway(tool, false, Some(&repo.location));
    let mut checked = match fields::check(ctx, &repo, operation, arguments) {
        Ok(checked) => checked,
        Err(Refusal::Engine(error)) => return frame.engine_error(error),
        Err(Refusal::Params(error)) => return Err(error),
    };
    if operation == Operation::Worktree && !checked.contains_key("path") {
        let root = &repo.location.root;
        let default = match (root.parent(), root.file_name()) {
            (Some(parent), Some(name)) => {
                let mut folder = name.to_os_string();
                folder.push(".worktrees");
                parent.join(folder).join(text("branch")).display().to_string()
            }
            _ => String::new(),
        };
        match fields::check_new_path(ctx, &default) {
            Ok(path) => checked.insert("path".to_owned(), Value::from(path)),
            Err(Refusal::Engine(error)) => return frame.engine_error(error),
            Err(Refusal::Params(error)) => return Err(error),
        };
    }
    let idempotency_key = match arguments.get("idempotencyKey").and_then(Value::as_str) {
        Some(key) => format!("{}:client:{key}", operation.name()),
        None => format!("{}:call:{}", operation.name(), uuid::Uuid::new_v4()),
    };
    let mut body = Map::new();
    body.insert("previewId".to_owned(), Value::from(uuid::Uuid::new_v4().to_string()));
    body.insert("agentId".to_owned(), Value::from(ctx.client_name));
    body.insert("idempotencyKey".to_owned(), Value::from(idempotency_key));
    body.insert("operationType".to_owned(), Value::from(operation.name()));
    body.insert("repoPath".to_owned(), Value::from(repo.location.root.display().to_string()));
    body.insert("reason".to_owned(), Value::from(text("reason")));
    body.insert("requestedAt".to_owned(), Value::from(now()));
    let paths = others::proposal_paths(operation.name(), &checked);
    body.extend(checked);
    match ctx.bridge.propose(operation.name(), &Value::Object(body)) {
        Ok(snapshot) => {
            let mut data = json!({
                "accepted": true,
                "previewId": snapshot.preview_id,
                "operationType": operation.name(),
                "status": snapshot.status.as_str(),
            });
            copy_text(&snapshot, "expiresAt", &mut data);
            data["nextAction"] = next_action(&snapshot.preview_id);
            // Informational, after the gateway's decision: it cannot change what was proposed.
            if let Some(options) = crate::config::agent_detection(ctx.client_name) {
                let report = ctx.engine.agents_detect(&repo, &options);
                data["otherAgents"] = others::other_agents(&report, ctx.client_name, paths.as_deref());
            }
            Ok(frame.data_output(&data))
        }
        Err(failure) => Ok(failed(&frame, failure)),
    }
}

/// The proposal's state; with `wait`, asked again every [`WAIT_POLL_MS`] while it is still pending, approved
/// or executing, until it ends, `wait` passes or the call is cancelled.
fn status(ctx: &CallContext<'_>, preview_id: &str, wait: std::time::Duration) -> Result<ToolOutput, ProtocolError> {
    let frame = Frame::gateway("operation.status", true, None);
    let until = std::time::Instant::now() + wait;
    let mut answer = ctx.bridge.status(preview_id);
    while let Ok(snapshot) = &answer
        && matches!(snapshot.status, Lifecycle::Pending | Lifecycle::Approved | Lifecycle::Executing)
        && !ctx.interrupt.is_triggered()
    {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(WAIT_POLL_MS)));
        answer = ctx.bridge.status(preview_id);
    }
    match answer {
        Ok(snapshot) => {
            let mut data = json!({ "previewId": snapshot.preview_id });
            copy_text(&snapshot, "operationType", &mut data);
            data["status"] = Value::from(snapshot.status.as_str());
            if snapshot.status == Lifecycle::Completed {
                data["result"] = snapshot.fields.get("result").cloned().unwrap_or(Value::Null);
            } else {
                copy_text(&snapshot, "expiresAt", &mut data);
                data["nextAction"] = next_action(&snapshot.preview_id);
            }
            Ok(frame.data_output(&data))
        }
        Err(failure) => Ok(failed(&frame, failure)),
    }
}

fn cancel(ctx: &CallContext<'_>, preview_id: &str, reason: Option<&Value>) -> Result<ToolOutput, ProtocolError> {
    let frame = Frame::gateway("operation.cancel", false, None);
    let mut body = json!({ "previewId": preview_id, "agentId": ctx.client_name, "requestedAt": now() });
    if let Some(reason) = reason {
        body["reason"] = reason.clone();
    }
    match ctx.bridge.cancel(preview_id, &body) {
        Ok(snapshot) => {
            Ok(frame.data_output(&json!({ "previewId": snapshot.preview_id, "status": snapshot.status.as_str() })))
        }
        Err(failure) => Ok(failed(&frame, failure)),
    }
}

fn copy_text(snapshot: &Snapshot, name: &str, data: &mut Value) {
    if let Some(value) = snapshot.fields.get(name).filter(|value| value.is_string()) {
        data[name] = value.clone();
    }
}

/// The product error of a bridge failure, with `data.nextStep` telling the agent what to do.
fn failed(frame: &Frame, failure: Failure) -> ToolOutput {
    let next_step = match failure.code {
        BRIDGE_UNAVAILABLE => {
            "Nothing may be inferred about a proposal. Make sure the approval gateway runs and \
             FLUXGIT_MCP_HANDSHAKE_ADDR holds the loopback address it prints (see data.reason), then retry."
        }
        PROPOSAL_ENDED => {
            "The proposal did not complete; read `status` (and `result` for a failed execution). Propose again only \
             if the person should decide again."
        }
        UNKNOWN_PREVIEW => "Check repo.status before proposing again: an approved proposal may have changed Git.",
        GATEWAY_REFUSED => "Read data.reason and data.message, and change the proposal before proposing again.",
        UNSAFE_PREVIEW_ID => "Do not follow this previewId; tell the person the gateway answered with an unsafe id.",
        _ => "Retry later.",
    };
    let mut data = failure.data;
    data.insert("nextStep".to_owned(), Value::from(next_step));
    frame.product_error(failure.code, &failure.message, Value::Object(data))
}
