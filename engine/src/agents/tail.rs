//! Incremental reading of append-only JSONL session logs.
//!
//! A log is read once by its head (the first line, where Codex keeps its session metadata) and its
//! tail (the last [`TAIL_BYTES`]); later calls read only what was appended since, and a log whose
//! size and mtime are unchanged is not opened at all. A 50 MB log therefore costs at most
//! `HEAD_BYTES + TAIL_BYTES` of reading the first time and a `stat` afterwards. A partial last line
//! (still being written) is left for the next call.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

/// Most bytes read from the end of a log (or of what was appended since the last read).
pub(super) const TAIL_BYTES: u64 = 1 << 20;
/// Most bytes read for a log's first line.
pub(super) const HEAD_BYTES: u64 = 1 << 20;
/// Most files remembered per log (absolute paths, most recent first).
const MAX_FILES: usize = 64;

/// What a log says, reduced to names, times, paths and branches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// The working directory the session recorded (latest).
    pub cwd: Option<String>,
    /// The branch the session recorded (latest).
    pub branch: Option<String>,
    /// The name of the last tool called.
    pub last_tool: Option<String>,
    /// Files the session touched, absolute, most recent first.
    pub files: Vec<String>,
    /// Lines that parsed as JSON.
    pub parsed_lines: usize,
    /// Lines that did not.
    pub bad_lines: usize,
}

impl Summary {
    /// Records a file path (absolute, or relative to the current `cwd`) as the most recent.
    pub fn touch(&mut self, path: &str) {
        if path.is_empty() || path.chars().any(char::is_control) {
            return;
        }
        let absolute = if Path::new(path).is_absolute() {
            path.to_owned()
        } else {
            match &self.cwd {
                Some(cwd) => Path::new(cwd).join(path).display().to_string(),
                None => return,
            }
        };
        self.files.retain(|existing| *existing != absolute);
        self.files.insert(0, absolute);
        self.files.truncate(MAX_FILES);
    }

    /// Whether the log is readable as a store at all (some JSON, or nothing yet).
    pub fn is_parseable(&self) -> bool {
        self.parsed_lines > 0 || self.bad_lines == 0
    }
}

/// A line visitor: reads the fields it knows from one JSON record into the summary.
pub(super) type Visit = fn(&mut Summary, &Value);

/// Parsed logs by path, validated by size and mtime.
#[derive(Debug, Default)]
pub struct LogCache {
    entries: HashMap<PathBuf, Entry>,
}

#[derive(Debug)]
struct Entry {
    size: u64,
    mtime: SystemTime,
    /// Bytes consumed so far (just after a newline).
    offset: u64,
    summary: Summary,
}

impl LogCache {
    /// The summary of the log at `path` with `metadata`, reading only what changed since the last
    /// call.
    ///
    /// # Errors
    /// The log cannot be opened or read.
    pub fn read(&mut self, path: &Path, metadata: &std::fs::Metadata, visit: Visit) -> io::Result<Summary> {
        let size = metadata.len();
        let mtime = metadata.modified()?;
        if let Some(entry) = self.entries.get(path)
            && entry.size == size
            && entry.mtime == mtime
        {
            return Ok(entry.summary.clone());
        }
        let mut file = File::open(path)?;
        let (mut summary, start) = match self.entries.remove(path) {
            Some(entry) if size >= entry.offset => (entry.summary, entry.offset),
            _ => {
                let mut summary = Summary::default();
                let head_end = read_head(&mut file, &mut summary, visit)?;
                (summary, head_end)
            }
        };
        let (start, resync) =
            if size.saturating_sub(start) > TAIL_BYTES { (size - TAIL_BYTES, true) } else { (start, false) };
        file.seek(SeekFrom::Start(start))?;
        let mut buffer = Vec::new();
        (&mut file).take(size - start).read_to_end(&mut buffer)?;
        let mut skip = 0;
        if resync {
            // Start at the first whole line.
            skip = buffer.iter().position(|&byte| byte == b'\n').map_or(buffer.len(), |at| at + 1);
        }
        let body = &buffer[skip..];
        let consumed = body.iter().rposition(|&byte| byte == b'\n').map_or(0, |at| at + 1);
        for line in body[..consumed].split(|&byte| byte == b'\n') {
            visit_line(&mut summary, line, visit);
        }
        let offset = start + (skip + consumed) as u64;
        self.entries.insert(path.to_path_buf(), Entry { size, mtime, offset, summary: summary.clone() });
        Ok(summary)
    }

    /// Forgets logs not in `keep` (deleted or no longer relevant), bounding memory.
    pub fn retain(&mut self, keep: &dyn Fn(&Path) -> bool) {
        self.entries.retain(|path, _| keep(path));
    }
}

/// Visits the first line (up to [`HEAD_BYTES`]); returns the offset after it, or 0 when it is
/// longer or incomplete.
fn read_head(file: &mut File, summary: &mut Summary, visit: Visit) -> io::Result<u64> {
    let mut head = Vec::new();
    file.by_ref().take(HEAD_BYTES).read_to_end(&mut head)?;
    match head.iter().position(|&byte| byte == b'\n') {
        Some(end) => {
            visit_line(summary, &head[..end], visit);
            Ok(end as u64 + 1)
        }
        None => Ok(0),
    }
}

fn visit_line(summary: &mut Summary, line: &[u8], visit: Visit) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    match serde_json::from_slice::<Value>(line) {
        Ok(value) => {
            summary.parsed_lines += 1;
            visit(summary, &value);
        }
        Err(_) => summary.bad_lines += 1,
    }
}

/// Every string inside `value` (object values and array items, recursively), for patch headers in
/// tool arguments.
pub(super) fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| strings(item, out)),
        _ => {}
    }
}

/// The file paths named by `apply_patch` headers (`*** Add File: `, `*** Update File: `,
/// `*** Delete File: `, `*** Move to: `) in `text`; nothing else of the patch is looked at.
pub(super) fn patch_paths(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|line| {
        ["*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "]
            .iter()
            .find_map(|prefix| line.strip_prefix(prefix))
            .map(str::trim)
    })
}
