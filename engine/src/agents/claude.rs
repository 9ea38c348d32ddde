//! Claude Code's session store: `~/.claude/projects/<encoded cwd>/<session id>.jsonl`.
//!
//! Layout (from Claude Code's public issue tracker, e.g. anthropics/claude-code#36290 "the
//! directory names under `~/.claude/projects/` encode filesystem paths by replacing `/` with `-`
//! ... the session JSONL files already store the actual `cwd`", and #58591's reproducer
//! `echo "${p//\//-}"` on the resolved path): one directory per working directory, named after its
//! absolute path with every character other than ASCII letters and digits replaced by `-`, holding
//! one append-only JSONL log per session. Each record carries `cwd`, `gitBranch`, `sessionId`,
//! `timestamp` and `type` (`user`, `assistant`, `summary`, ...); assistant records hold
//! `message.content[]` items, of which
//! `{type: "tool_use", name, input: {file_path | notebook_path | path}}` name a tool and a file. We
//! keep `cwd`, `gitBranch`, tool names and those file paths; never message text, tool input
//! otherwise, or results.

use std::path::Path;

use serde_json::Value;

use crate::agents::{Caches, Sighting, entries, log_sighting, tail::Summary};

/// The agent kind.
pub const AGENT: &str = "claude-code";

/// Claude Code's directory name for a working directory.
pub fn encode(path: &Path) -> String {
    path.display().to_string().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// Sessions of working directories inside `root` that were active within the last day.
pub fn sightings(
    home: &Path,
    root: &Path,
    now_ms: u64,
    caches: &mut Caches,
    diagnostics: &mut Vec<String>,
) -> Vec<Sighting> {
    let encoded = encode(root);
    let prefix = format!("{encoded}-");
    let mut found = Vec::new();
    for dir in entries(&home.join(".claude").join("projects")) {
        let name = dir.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        if name != encoded && !name.starts_with(&prefix) {
            continue;
        }
        for log in entries(&dir) {
            if log.extension().is_some_and(|ext| ext == "jsonl")
                && let Some(sighting) = log_sighting((AGENT, visit), &log, root, now_ms, caches, diagnostics, None)
            {
                found.push(sighting);
            }
        }
    }
    found
}

fn visit(summary: &mut Summary, record: &Value) {
    if let Some(cwd) = record.get("cwd").and_then(Value::as_str).filter(|cwd| !cwd.is_empty()) {
        summary.cwd = Some(cwd.to_owned());
    }
    if let Some(branch) = record.get("gitBranch").and_then(Value::as_str).filter(|branch| !branch.is_empty()) {
        summary.branch = Some(branch.to_owned());
    }
    if record.get("type").and_then(Value::as_str) != Some("assistant") {
        return;
    }
    let Some(items) = record.pointer("/message/content").and_then(Value::as_array) else { return };
    for item in items {
        if item.get("type").and_then(Value::as_str) != Some("tool_use") {
            continue;
        }
        if let Some(name) = item.get("name").and_then(Value::as_str) {
            summary.last_tool = Some(name.to_owned());
        }
        for key in ["file_path", "notebook_path", "path"] {
            if let Some(path) = item.get("input").and_then(|input| input.get(key)).and_then(Value::as_str) {
                summary.touch(path);
            }
        }
    }
}
