//! Gemini CLI's session store: `~/.gemini/tmp/<project>/chats/session-<time>-<id>.json` (one JSON
//! document per session, before 0.58) or `.jsonl` (an append-only log, since).
//!
//! Layout (Gemini CLI's session-management docs: "Sessions are stored in
//! `~/.gemini/tmp/<project_hash>/chats/`, where `<project_hash>` is a unique identifier based on
//! your project's root directory", quoted in nicosuave/memex#32; the hash is the SHA-256 hex of the
//! project root, and google-gemini/gemini-cli#17901 moved to readable `<project>` slugs whose
//! `.project_root` file holds the absolute project path, as farion1231/cc-switch#2240 reads it). A
//! document is `{sessionId, projectHash, startTime, lastUpdated, messages[]}`; the log's first line
//! is that header and the following lines are messages or `{"$set": {...}}` updates. A `gemini`
//! message's `toolCalls[]` are `{id, name, args, result, status, timestamp}`; file tools name their
//! file in `args.file_path` or `args.absolute_path`. We keep tool names and those paths only.

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::agents::tail::Summary;
use crate::agents::{Caches, Sighting, entries, inside, log_sighting, mtime_ms, session_sighting, too_old};

/// The agent kind.
pub const AGENT: &str = "gemini-cli";
/// Largest single-document session parsed whole (bigger ones count by their mtime alone).
pub const MAX_DOCUMENT_BYTES: u64 = 8 << 20;

/// Gemini CLI's project hash of a directory.
pub fn project_hash(path: &Path) -> String {
    let digest = Sha256::digest(path.display().to_string().as_bytes());
    faster_hex::hex_string(&digest)
}

/// Sessions of projects inside `root`, active within the last day.
pub fn sightings(
    home: &Path,
    root: &Path,
    now_ms: u64,
    caches: &mut Caches,
    diagnostics: &mut Vec<String>,
) -> Vec<Sighting> {
    let hash = project_hash(root);
    let mut found = Vec::new();
    for project in entries(&home.join(".gemini").join("tmp")) {
        let name = project.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        let project_root: Option<PathBuf> = if name == hash {
            Some(root.to_path_buf())
        } else {
            std::fs::read_to_string(project.join(".project_root"))
                .ok()
                .map(|text| PathBuf::from(text.trim()))
                .filter(|path| inside(root, path))
        };
        let Some(project_root) = project_root else { continue };
        for session in entries(&project.join("chats")) {
            let name = session.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
            if !name.starts_with("session-") {
                continue;
            }
            let sighting = if name.ends_with(".jsonl") {
                log_sighting((AGENT, visit), &session, root, now_ms, caches, diagnostics, Some(&project_root))
            } else if name.ends_with(".json") {
                document_sighting(&session, root, &project_root, now_ms, caches, diagnostics)
            } else {
                None
            };
            found.extend(sighting);
        }
    }
    found
}

/// A single-document session, parsed whole once per (size, mtime) when small enough.
fn document_sighting(
    path: &Path,
    root: &Path,
    project_root: &Path,
    now_ms: u64,
    caches: &mut Caches,
    diagnostics: &mut Vec<String>,
) -> Option<Sighting> {
    let metadata = std::fs::metadata(path).ok()?;
    let modified = metadata.modified().ok()?;
    let modified_ms = mtime_ms(modified);
    if too_old(modified_ms, now_ms) {
        return None;
    }
    let size = metadata.len();
    let cached =
        caches.documents.get(path).filter(|(s, m, _)| *s == size && *m == modified).map(|(_, _, sum)| sum.clone());
    let mut summary = match cached {
        Some(summary) => summary,
        None => {
            let mut summary = Summary { cwd: Some(project_root.display().to_string()), ..Summary::default() };
            if size <= MAX_DOCUMENT_BYTES {
                let parsed = std::fs::read(path)
                    .map_err(|error| error.kind().to_string())
                    .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).map_err(|_| "not JSON".to_owned()));
                match parsed {
                    Ok(document) => visit(&mut summary, &document),
                    Err(why) => {
                        let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
                        diagnostics.push(format!("{AGENT}: skipped session {name}: {why}"));
                        return None;
                    }
                }
            }
            caches.documents.insert(path.to_path_buf(), (size, modified, summary.clone()));
            summary
        }
    };
    summary.cwd = Some(project_root.display().to_string());
    session_sighting(AGENT, root, &summary, modified_ms)
}

/// Reads tool calls from a document, a `$set` update or one message.
fn visit(summary: &mut Summary, record: &Value) {
    let messages = record
        .get("messages")
        .or_else(|| record.pointer("/$set/messages"))
        .and_then(Value::as_array)
        .map_or_else(|| vec![record], |messages| messages.iter().collect());
    for message in messages {
        let Some(calls) = message.get("toolCalls").and_then(Value::as_array) else { continue };
        for call in calls {
            if let Some(name) = call.get("name").and_then(Value::as_str) {
                summary.last_tool = Some(name.to_owned());
            }
            for key in ["file_path", "absolute_path", "path"] {
                if let Some(path) = call.get("args").and_then(|args| args.get(key)).and_then(Value::as_str) {
                    summary.touch(path);
                }
            }
        }
    }
}
