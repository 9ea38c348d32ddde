//! Cursor's and VS Code's per-workspace state: `<config>/User/workspaceStorage/<id>/workspace.json`
//! and `state.vscdb` beside it (`<config>` = `~/.config/Cursor`, `~/.config/Code` on Linux;
//! `~/Library/Application Support/Cursor`, `.../Code` on macOS).
//!
//! Layout (VS Code's storage service, and readers of Cursor's data such as
//! mishanefedov/agentwatch#2 and specstoryai/getspecstory#209): `workspace.json` is
//! `{"folder": "file:///abs/path"}` (or `{"workspace": ...}` for a `.code-workspace` file, not
//! matched here); `state.vscdb` is SQLite with a table `ItemTable(key, value)`, whose key
//! `history.entries` lists the editors opened, `[{"editor": {"resource": "file:///..."}}]`.
//! Cursor's chats live elsewhere (`globalStorage/state.vscdb`, `cursorDiskKV`) and are never read.
//! The database is opened read-only and immutable (`file:...?mode=ro&immutable=1`): SQLite takes no
//! lock and never writes a journal, so a running editor is never disturbed. We keep the workspace
//! folder, the mtimes and the opened files' paths.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::agents::tail::Summary;
use crate::agents::{Caches, Sighting, Source, entries, inside, mtime_ms, relative_to, too_old};

/// Editors read: (agent kind, configuration directories relative to the home).
const EDITORS: [(&str, [&str; 2]); 2] = [
    ("cursor", [".config/Cursor", "Library/Application Support/Cursor"]),
    ("vscode", [".config/Code", "Library/Application Support/Code"]),
];

/// Editor workspaces opened on a folder inside `root`, their state written within the last day.
pub(super) fn sightings(
    home: &Path,
    root: &Path,
    now_ms: u64,
    caches: &mut Caches,
    diagnostics: &mut Vec<String>,
) -> Vec<Sighting> {
    let mut found = Vec::new();
    for (agent, configs) in EDITORS {
        for config in configs {
            for storage in entries(&home.join(config).join("User").join("workspaceStorage")) {
                let Some(folder) = workspace_folder(&storage.join("workspace.json"), caches) else { continue };
                if !inside(root, &folder) {
                    continue;
                }
                let database = storage.join("state.vscdb");
                let mut last_ms = None;
                for file in [database.clone(), storage.join("state.vscdb-wal")] {
                    if let Ok(modified) = std::fs::metadata(&file).and_then(|metadata| metadata.modified()) {
                        last_ms = last_ms.max(Some(mtime_ms(modified)));
                    }
                }
                let Some(last_ms) = last_ms.filter(|at| !too_old(*at, now_ms)) else { continue };
                let files = match opened_files(&database, caches) {
                    Ok(files) => files,
                    Err(why) => {
                        diagnostics.push(format!("{agent}: skipped workspace state.vscdb: {why}"));
                        Vec::new()
                    }
                };
                found.push(Sighting {
                    agent: agent.to_owned(),
                    source: Some(Source::Editor),
                    files: files.iter().filter_map(|file| relative_to(root, None, file)).collect(),
                    last_activity_ms: Some(last_ms),
                    ..Sighting::default()
                });
            }
        }
    }
    found
}

/// The folder a workspace was opened on, cached by the file's size and mtime.
fn workspace_folder(path: &Path, caches: &mut Caches) -> Option<PathBuf> {
    let metadata = std::fs::metadata(path).ok()?;
    let modified = metadata.modified().ok()?;
    let size = metadata.len();
    if let Some((_, _, summary)) = caches.documents.get(path).filter(|(s, m, _)| *s == size && *m == modified) {
        return summary.cwd.as_ref().map(PathBuf::from);
    }
    let folder = std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .and_then(|document| document.get("folder").and_then(Value::as_str).and_then(file_uri_path));
    let summary = Summary { cwd: folder.clone(), ..Summary::default() };
    caches.documents.insert(path.to_path_buf(), (size, modified, summary));
    folder.map(PathBuf::from)
}

/// The absolute paths of the editors `history.entries` lists, read once per (size, mtime) of the
/// database.
fn opened_files(database: &Path, caches: &mut Caches) -> Result<Vec<String>, String> {
    let metadata = std::fs::metadata(database).map_err(|error| error.kind().to_string())?;
    let modified = metadata.modified().map_err(|error| error.kind().to_string())?;
    let size = metadata.len();
    if let Some((_, _, summary)) = caches.documents.get(database).filter(|(s, m, _)| *s == size && *m == modified) {
        return Ok(summary.files.clone());
    }
    let value = read_item(database, "history.entries")?;
    let mut files = Vec::new();
    if let Some(entries) = value.as_ref().and_then(|text| serde_json::from_str::<Value>(text).ok()) {
        for entry in entries.as_array().into_iter().flatten() {
            if let Some(path) = entry.pointer("/editor/resource").and_then(Value::as_str).and_then(file_uri_path)
                && !files.contains(&path)
            {
                files.push(path);
            }
        }
    }
    let summary = Summary { files: files.clone(), ..Summary::default() };
    caches.documents.insert(database.to_path_buf(), (size, modified, summary));
    Ok(files)
}

/// One `ItemTable` value, from the database opened read-only and immutable (no lock, no journal).
fn read_item(database: &Path, key: &str) -> Result<Option<String>, String> {
    use rusqlite::OpenFlags;
    let uri = format!("file:{}?mode=ro&immutable=1", percent_encode(&database.display().to_string()));
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = rusqlite::Connection::open_with_flags(uri, flags).map_err(|error| error.to_string())?;
    let mut statement =
        connection.prepare("SELECT value FROM ItemTable WHERE key = ?1").map_err(|error| error.to_string())?;
    let mut rows = statement.query([key]).map_err(|error| error.to_string())?;
    let Some(row) = rows.next().map_err(|error| error.to_string())? else { return Ok(None) };
    let value = match row.get_ref(0).map_err(|error| error.to_string())? {
        rusqlite::types::ValueRef::Text(bytes) | rusqlite::types::ValueRef::Blob(bytes) => {
            Some(String::from_utf8_lossy(bytes).into_owned())
        }
        _ => None,
    };
    Ok(value)
}

/// The local path of a `file://` URI (percent-decoded); `None` for other schemes or remote hosts.
pub(super) fn file_uri_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut idx = 0;
    while idx < bytes.len() {
        if bytes[idx] == b'%'
            && idx + 2 < bytes.len()
            && let Ok(byte) = u8::from_str_radix(std::str::from_utf8(&bytes[idx + 1..idx + 3]).ok()?, 16)
        {
            out.push(byte);
            idx += 3;
        } else {
            out.push(bytes[idx]);
            idx += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Percent-encodes the characters a SQLite URI path may not hold literally.
fn percent_encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        match byte {
            b'?' | b'#' | b'%' | b' ' | 0x80..=0xff => out.push_str(&format!("%{byte:02X}")),
            _ => out.push(byte as char),
        }
    }
    out
}
