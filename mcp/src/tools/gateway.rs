//! The gateway-only tools (design.md#tools): `safety.timeline`, `safety.eventDetails`, `flux.restorePoints`,
//! `flux.latestRestorePoint`, `flux.restorePointDetails`. They are served from the approval gateway's read routes
//! (design.md#gateway, `docs/gateway-http.md`) and never synthesised from local refs: without a gateway they answer 10001
//! with an `upgradeHint`; a configured gateway that gives nothing usable answers 10002 with the reason.

use serde_json::{Map, Value, json};

use crate::bridge::reads::{Fetched, query_value};
use crate::envelope::Frame;
use crate::tools::schema::{self, nullable_string};
use crate::tools::{CallContext, ProtocolError, Tool, ToolDefinition, ToolOutput};

/// Product code: a gateway-only tool was called without a gateway (design.md#errors).
pub const GATEWAY_NOT_CONFIGURED: i64 = 10001;
/// Product code: the configured gateway had no payload to serve (design.md#errors).
pub const GATEWAY_NO_PAYLOAD: i64 = 10002;

/// What to tell an agent that called a gateway-only tool without a gateway.
pub const UPGRADE_HINT: &str = "Restore points and the safety timeline exist only at a FluxGit approval gateway: \
run one (any gateway speaking the sidecar's gateway HTTP contract) and set FLUXGIT_MCP_HANDSHAKE_ADDR to the \
address it prints. Local history is available now through repo_reflog and repo_history.";

/// A gateway-only read tool: its definition, the route an argument set maps to, and the field its answer must have.
pub struct GatewayTool {
    definition: ToolDefinition,
    route: fn(&str, &Map<String, Value>) -> String,
    required: &'static str,
}

impl Tool for GatewayTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
        let name = self.definition.name;
        let repo_path = arguments.get("repoPath").and_then(Value::as_str).unwrap_or_default();
        let repo = match ctx.resolve(repo_path) {
            Ok(repo) => repo,
            Err(error) => return Frame::gateway(name, true, None).engine_error(error),
        };
        let frame = Frame::gateway(name, true, Some(&repo.location));
        let root = repo.location.root.display().to_string();
        let answer = match ctx.bridge.fetch(&(self.route)(&query_value(&root), arguments), None) {
            Fetched::Answer(answer) => answer,
            Fetched::NotConfigured => {
                let message = format!(
                    "{} needs the FluxGit approval gateway, and none is configured.",
                    crate::tools::listing::listed(name)
                );
                return Ok(frame.product_error(
                    GATEWAY_NOT_CONFIGURED,
                    &message,
                    json!({ "upgradeHint": crate::tools::listing::respell(UPGRADE_HINT, crate::tools::listing::spelling()) }),
                ));
            }
            Fetched::Failed { reason, message } => {
                return Ok(frame.product_error(GATEWAY_NO_PAYLOAD, &message, json!({ "reason": reason })));
            }
        };
        if !answer.contains_key(self.required) {
            let message = format!("The gateway's answer has no `{}`; nothing is invented in its place.", self.required);
            return Ok(frame.product_error(GATEWAY_NO_PAYLOAD, &message, json!({ "reason": "malformed_reply" })));
        }
        Ok(frame.data_output(&answer))
    }
}

fn refs() -> Value {
    json!({ "type": "array", "items": { "type": "object", "required": ["name"], "properties": {
        "name": { "type": "string" }, "before": nullable_string(), "after": nullable_string() } } })
}

fn event() -> Value {
    json!({ "type": "object", "required": ["id", "kind", "at"], "properties": {
        "id": { "type": "string" }, "kind": { "enum": ["restore_point", "operation", "reflog"] },
        "at": { "type": "string" }, "operationType": nullable_string(), "summary": { "type": "string" },
        "refs": refs() } })
}

/// A restore point. Its `previewId` (the proposal it was taken for) passes through but is not advertised: only the
/// proposal tools and `operation.status` advertise `previewId` (design.md#transport); the schema is open.
fn restore_point() -> Value {
    json!({ "type": "object", "required": ["id", "createdAt"], "properties": {
        "id": { "type": "string" }, "createdAt": { "type": "string" }, "operationType": nullable_string(),
        "refs": refs(), "headBefore": nullable_string(),
        "snapshot": nullable_string(), "canUndo": { "type": "boolean" } } })
}

fn record_id(description: &str) -> Value {
    json!({ "type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[A-Za-z0-9_-]+$", "description": description })
}

fn tool(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    inputs: Value,
    data: Value,
    route: fn(&str, &Map<String, Value>) -> String,
    required: &'static str,
) -> GatewayTool {
    let mut properties = json!({ "repoPath": schema::repo_path() });
    if let (Some(target), Some(extra)) = (properties.as_object_mut(), inputs.as_object()) {
        target.extend(extra.clone());
    }
    GatewayTool {
        definition: ToolDefinition {
            name,
            title,
            description,
            input_schema: schema::input(properties, &["repoPath"]),
            output_schema: schema::envelope(data),
            read_only: true,
        },
        route,
        required,
    }
}

fn number(arguments: &Map<String, Value>, name: &str, default: u64) -> u64 {
    arguments.get(name).and_then(Value::as_u64).unwrap_or(default)
}

fn flag(arguments: &Map<String, Value>, name: &str) -> bool {
    arguments.get(name).and_then(Value::as_bool).unwrap_or(true)
}

fn id_or_latest(arguments: &Map<String, Value>, name: &str) -> String {
    arguments.get(name).and_then(Value::as_str).unwrap_or("latest").to_owned()
}

/// The five gateway-only tools, in design.md#tools order.
pub fn tools() -> Vec<GatewayTool> {
    vec![
        tool(
            "safety.timeline",
            "Safety timeline",
            "What the approval gateway did in this repository, newest first: restore points, executed operations \
                and reflog movements.",
            json!({
                "limit": schema::integer(1, 200, 50, "Events to return, newest first."),
                "includeReflog": { "type": "boolean", "default": true, "description": "Include reflog movements." },
                "includeRestorePoints": { "type": "boolean", "default": true, "description": "Include restore points." },
                "reflogLimit": schema::integer(1, 100, 20, "Reflog movements to include at most."),
            }),
            json!({ "type": "object", "required": ["events"], "properties": { "events": { "type": "array", "items": event() } } }),
            |root, args| {
                format!(
                    "/v1/mcp/safety/timeline?repoPath={root}&limit={}&includeReflog={}&includeRestorePoints={}&reflogLimit={}",
                    number(args, "limit", 50),
                    flag(args, "includeReflog"),
                    flag(args, "includeRestorePoints"),
                    number(args, "reflogLimit", 20)
                )
            },
            "events",
        ),
        tool(
            "safety.eventDetails",
            "Safety event details",
            "One event of safety_timeline in full (`eventId`, else the latest).",
            json!({ "eventId": record_id("An event id from safety.timeline; default the latest event.") }),
            event(),
            |root, args| format!("/v1/mcp/safety/events/{}?repoPath={root}", id_or_latest(args, "eventId")),
            "id",
        ),
        tool(
            "flux.restorePoints",
            "Restore points",
            "The restore points the gateway took before executing approved operations, newest first.",
            json!({ "limit": schema::integer(1, 200, 50, "Restore points to return, newest first.") }),
            json!({ "type": "object", "required": ["restorePoints"],
                "properties": { "restorePoints": { "type": "array", "items": restore_point() } } }),
            |root, args| format!("/v1/mcp/restore-points?repoPath={root}&limit={}", number(args, "limit", 50)),
            "restorePoints",
        ),
        tool(
            "flux.latestRestorePoint",
            "Latest restore point",
            "The newest restore point of this repository.",
            json!({}),
            restore_point(),
            |root, _| format!("/v1/mcp/restore-points/latest?repoPath={root}"),
            "id",
        ),
        tool(
            "flux.restorePointDetails",
            "Restore point details",
            "One restore point in full (`restorePointId`, else the latest).",
            json!({ "restorePointId": record_id("A restore point id; default the latest.") }),
            restore_point(),
            |root, args| format!("/v1/mcp/restore-points/{}?repoPath={root}", id_or_latest(args, "restorePointId")),
            "id",
        ),
    ]
}
