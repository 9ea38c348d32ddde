//! `agents.presence` (design.md#tools): the other coding agents working in a repository, from local sources only. The
//! handler maps arguments to one engine call ([`fluxgit_engine::Engine::agents_presence`]) and wraps the result.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::config;
use crate::envelope::{AGENT_DETECTION_DISABLED, Frame};
use crate::tools::call::{Format, parse, run_formatted};
use crate::tools::schema;
use crate::tools::{Cache, CallContext, FnTool, ProtocolError, ToolDefinition, ToolOutput};

/// `agents.presence`'s default budget in tokens.
pub const PRESENCE_DEFAULT_TOKENS: u64 = 1000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PresenceArgs {
    repo_path: String,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

/// The schema of one agent record (shared with previews' `otherAgents`).
pub(crate) fn agent_schema(extra: Value) -> Value {
    let mut properties = json!({
        "agent": { "type": "string", "description": "Agent kind: claude-code, codex, gemini-cli, aider, cursor, \
            vscode, windsurf, opencode, ... or the MCP client name of another sidecar." },
        "state": { "enum": ["working", "open", "recent"], "description": "working: activity within 2 minutes; open: \
            its process is alive; recent: activity within 24 hours." },
        "sources": { "type": "array", "items": { "enum": ["process", "session-store", "repo-files", "editor",
            "mcp-presence"] } },
        "branch": { "type": "string", "description": "The branch its session recorded. Absent (the default): unknown." },
        "lastTool": { "type": "string", "description": "Name of the last tool it used (never its arguments or \
            output). Absent: unknown." },
        "files": { "type": "array", "maxItems": 20, "items": { "type": "string" }, "description": "Repo-relative \
            files its store says it touched, most recent first. Absent (the default): none known." },
        "pid": { "type": "integer", "minimum": 1, "description": "Its live process. Absent: none known." },
        "lastActivityMs": { "type": "integer", "minimum": 0, "description": "Last recorded activity, Unix ms. \
            Absent: only its process is known." },
        "mcpClient": { "type": "string", "description": "MCP client name of a sidecar it runs. Absent: none." },
    });
    if let (Some(target), Some(extra)) = (properties.as_object_mut(), extra.as_object()) {
        target.extend(extra.clone());
    }
    json!({ "type": "object", "required": ["agent", "state", "sources"], "properties": properties })
}

/// `agents.presence`.
pub fn presence() -> FnTool {
    let agent = agent_schema(json!({ "likelyCaller": { "type": "boolean", "description": "Probably the agent calling \
        this server (an ancestor of its process, else the only record of the caller's MCP client kind). Absent: \
        false." } }));
    let data = json!({
        "type": "object",
        "properties": {
            "agents": { "type": "array", "items": agent, "description": "working first, then open, then recent; \
                newest activity first. Absent (the default): none found." },
            "agentCount": { "type": "integer", "minimum": 0, "description": "Exact number of agents found, even when `agents` is \
                cut. Absent: 0." },
            "diagnostics": { "type": "array", "items": { "type": "string" }, "description": "Stores skipped because \
                they could not be read or parsed. Absent: none." }
        }
    });
    FnTool {
        handler: call_presence,
        cache: Cache::Never,
        definition: ToolDefinition {
            name: "agents.presence",
            title: "Other agents in this repository",
            description: "Which other coding agents (Claude Code, Codex, Gemini CLI, Aider, Cursor, ...) work in this \
                repository now: state, branch, files touched. Check before editing files or switching branches.",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "maxTokens": schema::max_tokens(200, 8000, PRESENCE_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &["repoPath"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_presence(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: PresenceArgs = parse(arguments)?;
    let max_tokens = args.max_tokens.unwrap_or(PRESENCE_DEFAULT_TOKENS as usize);
    let Some(options) = config::agent_detection(ctx.client_name) else {
        return disabled(ctx, &args.repo_path);
    };
    let render = fluxgit_engine::render::agents_presence;
    run_formatted(ctx, "agents.presence", &args.repo_path, args.format, render, |repo, measure| {
        ctx.engine.agents_presence(repo, &options, max_tokens, measure)
    })
}

/// 10011 for a repository that resolves (an invalid `repoPath` is still a JSON-RPC error).
fn disabled(ctx: &CallContext<'_>, repo_path: &str) -> Result<ToolOutput, ProtocolError> {
    let unresolved =
        Frame { tool: "agents.presence", read_only: true, repo_path: None, resolved_from: None, source: "local-git" };
    let repo = match ctx.resolve(repo_path) {
        Ok(repo) => repo,
        Err(error) => return unresolved.engine_error(error),
    };
    let frame = Frame::local("agents.presence", &repo.location);
    Ok(frame.product_error(
        AGENT_DETECTION_DISABLED,
        "agent detection is disabled (FLUXGIT_MCP_AGENT_DETECTION_DISABLED is set)",
        json!({ "reason": "agent_detection_disabled",
            "nextStep": "Nothing is known about other agents; ask the person before touching files others may edit." }),
    ))
}
