//! Aider's files in the repository: `.aider.chat.history.md`, `.aider.input.history`,
//! `.aider.llm.history` (Aider's docs, "Options reference": `--chat-history-file` default
//! `.aider.chat.history.md`, `--input-history-file` default `.aider.input.history`,
//! `--llm-history-file`; all in the git root).
//!
//! Their mtimes give the last activity. The chat history is Markdown in which Aider's own notices
//! are quoted lines; from its tail we take only the paths of `> Applied edit to <path>` and
//! `> Added <path> to the chat` notices. The input history (what the person typed) is never read.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use crate::agents::tail::Summary;
use crate::agents::{Caches, Sighting, Source, mtime_ms, relative_to, too_old};

/// The agent kind.
pub(super) const AGENT: &str = "aider";
/// Bytes read from the end of the chat history.
const TAIL_BYTES: u64 = 256 << 10;

/// Aider's sighting in the repository at `root`, if its files were written within the last day.
pub(super) fn sightings(root: &Path, now_ms: u64, caches: &mut Caches, diagnostics: &mut Vec<String>) -> Vec<Sighting> {
    let mut last_ms = None;
    for name in [".aider.chat.history.md", ".aider.input.history", ".aider.llm.history"] {
        if let Ok(modified) = std::fs::metadata(root.join(name)).and_then(|metadata| metadata.modified()) {
            last_ms = last_ms.max(Some(mtime_ms(modified)));
        }
    }
    let Some(last_ms) = last_ms.filter(|at| !too_old(*at, now_ms)) else { return Vec::new() };
    let history = root.join(".aider.chat.history.md");
    let summary = match chat_files(&history, caches) {
        Ok(summary) => summary,
        Err(error) => {
            if error.kind() != std::io::ErrorKind::NotFound {
                diagnostics.push(format!("{AGENT}: skipped .aider.chat.history.md: {}", error.kind()));
            }
            Summary::default()
        }
    };
    let files = summary.files.iter().filter_map(|file| relative_to(root, Some(root), file)).collect();
    vec![Sighting {
        agent: AGENT.to_owned(),
        source: Some(Source::RepoFiles),
        last_tool: summary.last_tool,
        files,
        last_activity_ms: Some(last_ms),
        ..Sighting::default()
    }]
}

fn chat_files(path: &Path, caches: &mut Caches) -> std::io::Result<Summary> {
    let metadata = std::fs::metadata(path)?;
    let modified = metadata.modified()?;
    let size = metadata.len();
    if let Some((_, _, summary)) = caches.documents.get(path).filter(|(s, m, _)| *s == size && *m == modified) {
        return Ok(summary.clone());
    }
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(size.saturating_sub(TAIL_BYTES)))?;
    let mut bytes = Vec::new();
    file.take(TAIL_BYTES).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut summary = Summary { cwd: Some(String::new()), ..Summary::default() };
    for line in text.lines() {
        let path = line.strip_prefix("> Applied edit to ").map(|path| ("edit", path)).or_else(|| {
            line.strip_prefix("> Added ").and_then(|rest| rest.strip_suffix(" to the chat")).map(|p| ("add", p))
        });
        if let Some((tool, path)) = path {
            summary.last_tool = Some(tool.to_owned());
            let path = path.trim();
            summary.files.retain(|existing| existing != path);
            summary.files.insert(0, path.to_owned());
            summary.files.truncate(64);
        }
    }
    caches.documents.insert(path.to_path_buf(), (size, modified, summary.clone()));
    Ok(summary)
}
