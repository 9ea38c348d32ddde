//! Presence files of other MCP sidecars: `<run dir>/presence/mcp/<pid>.json`, as this project's
//! sidecar writes them
//! (`{schemaVersion: 1, pid, client: {name, version}, repos: [{repoPath, lastCallMs, lastTool}]}`,
//! see the sidecar's `presence` module). The published product keeps the same shape in its own run
//! dir, which callers add to `run_dirs`. Our own file (our pid) is skipped; a file whose process is
//! gone counts by its `lastCallMs` alone.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::agents::process::Table;
use crate::agents::{Options, Sighting, Source, agent_of_client, entries, inside};

/// Largest presence file read.
const MAX_FILE_BYTES: u64 = 64 << 10;

/// Sidecars that answered calls on a repository inside `root`: one sighting each, keyed on the
/// sidecar's parent process (the agent that started it) when it is alive.
pub(super) fn sightings(
    run_dirs: &[PathBuf],
    root: &Path,
    options: &Options,
    table: &Table,
    diagnostics: &mut Vec<String>,
) -> Vec<Sighting> {
    let mut found = Vec::new();
    let mut seen = Vec::new();
    for run_dir in run_dirs {
        for file in entries(&run_dir.join("presence").join("mcp")) {
            if file.extension().is_none_or(|ext| ext != "json") || seen.contains(&file) {
                continue;
            }
            seen.push(file.clone());
            let name = file.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
            let document = match std::fs::metadata(&file) {
                Ok(metadata) if metadata.len() <= MAX_FILE_BYTES => {
                    std::fs::read(&file).ok().and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
                }
                _ => None,
            };
            let Some(document) = document else {
                diagnostics.push(format!("mcp-presence: skipped {name}: unreadable or not JSON"));
                continue;
            };
            let Some(pid) = document.get("pid").and_then(Value::as_u64).and_then(|pid| u32::try_from(pid).ok()) else {
                diagnostics.push(format!("mcp-presence: skipped {name}: no pid"));
                continue;
            };
            if pid == options.own_pid {
                continue;
            }
            let client = document.pointer("/client/name").and_then(Value::as_str).unwrap_or("external-mcp-sidecar");
            let repos = document.get("repos").and_then(Value::as_array).into_iter().flatten();
            let latest = repos
                .filter(|repo| {
                    repo.get("repoPath").and_then(Value::as_str).is_some_and(|path| inside(root, Path::new(path)))
                })
                .max_by_key(|repo| repo.get("lastCallMs").and_then(Value::as_u64));
            let Some(repo) = latest else { continue };
            let alive = table.alive(pid);
            // The agent is the sidecar's parent when the sidecar runs; our own ancestors are handled by the caller.
            let agent_pid = if alive { table.ancestors(pid).first().copied() } else { None };
            found.push(Sighting {
                agent: agent_of_client(client),
                source: Some(Source::McpPresence),
                last_tool: repo.get("lastTool").and_then(Value::as_str).map(str::to_owned),
                pid: agent_pid.or(Some(pid)),
                alive,
                last_activity_ms: repo.get("lastCallMs").and_then(Value::as_u64),
                mcp_client: Some(client.to_owned()),
                ..Sighting::default()
            });
        }
    }
    found
}
