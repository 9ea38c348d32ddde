//! Codex CLI's session store: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<timestamp>-<uuid>.jsonl`
//! (`CODEX_HOME` defaults to `~/.codex`).
//!
//! Layout (openai/codex's rollout recorder, as documented by readers such as kvsankar/agent-history
//! `docs/codex-format.md` and Sinity/polylogue `docs/providers/openai-codex.md`): one JSONL log per
//! session, every record `{timestamp, type, payload}`. The first is `session_meta` with
//! `payload.cwd` and `payload.git.branch`; `turn_context` records repeat `payload.cwd`;
//! `response_item` records with `payload.type` `function_call` or `custom_tool_call` name a tool
//! (`payload.name`) and carry its arguments, where `apply_patch` patches name files in their
//! `*** Update File: <path>` headers. We keep the cwd, the branch, tool names and those header
//! paths only.

use std::path::Path;

use serde_json::Value;

use crate::agents::tail::{Summary, patch_paths, strings};
use crate::agents::{Caches, Sighting, entries, log_sighting};

/// The agent kind.
pub(super) const AGENT: &str = "codex";

/// Sessions whose cwd lies inside `root`, active within the last day.
pub(super) fn sightings(
    codex_home: &Path,
    root: &Path,
    now_ms: u64,
    caches: &mut Caches,
    diagnostics: &mut Vec<String>,
) -> Vec<Sighting> {
    let mut found = Vec::new();
    let sessions = codex_home.join("sessions");
    // Date directories newer than a day before the oldest live session are all that can hold one; a directory's
    // files are only stat'ed, and logs older than a day are skipped by mtime.
    for year in entries(&sessions).into_iter().rev() {
        for month in entries(&year).into_iter().rev() {
            for day in entries(&month).into_iter().rev() {
                for log in entries(&day) {
                    let name = log.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
                    if name.starts_with("rollout-")
                        && name.ends_with(".jsonl")
                        && let Some(sighting) =
                            log_sighting((AGENT, visit), &log, root, now_ms, caches, diagnostics, None)
                    {
                        found.push(sighting);
                    }
                }
            }
        }
    }
    found
}

fn visit(summary: &mut Summary, record: &Value) {
    let payload = record.get("payload").unwrap_or(&Value::Null);
    match record.get("type").and_then(Value::as_str) {
        Some("session_meta" | "turn_context") => {
            if let Some(cwd) = payload.get("cwd").and_then(Value::as_str).filter(|cwd| !cwd.is_empty()) {
                summary.cwd = Some(cwd.to_owned());
            }
            if let Some(branch) = payload.pointer("/git/branch").and_then(Value::as_str).filter(|b| !b.is_empty()) {
                summary.branch = Some(branch.to_owned());
            }
        }
        Some("response_item") => {
            let kind = payload.get("type").and_then(Value::as_str);
            let name = match kind {
                Some("function_call" | "custom_tool_call") => payload.get("name").and_then(Value::as_str),
                Some("local_shell_call") => Some("shell"),
                _ => return,
            };
            if let Some(name) = name {
                summary.last_tool = Some(name.to_owned());
            }
            // Arguments are a JSON string for function calls, plain text (`input`) for custom tools.
            let mut texts = Vec::new();
            for key in ["arguments", "input", "action"] {
                if let Some(value) = payload.get(key) {
                    strings(value, &mut texts);
                }
            }
            let mut paths = Vec::new();
            for text in texts {
                if !text.contains("*** ") {
                    continue;
                }
                match serde_json::from_str::<Value>(text) {
                    Ok(inner) => {
                        let mut nested = Vec::new();
                        strings(&inner, &mut nested);
                        for nested_text in nested {
                            paths.extend(patch_paths(nested_text).map(str::to_owned));
                        }
                    }
                    Err(_) => paths.extend(patch_paths(text).map(str::to_owned)),
                }
            }
            // Headers are in patch order; the last one is the most recent.
            for path in paths {
                summary.touch(&path);
            }
        }
        _ => {}
    }
}
