//! `file.read` (design.md#tools, ours): a file's content at a revision, byte for byte as
//! `git show <rev>:<path>` prints it, cut at whole lines to a byte cap and a token budget.
//!
//! The content is never mangled: UTF-8 text is carried as `content`; text that is not valid UTF-8
//! is carried as `contentBase64` (the exact bytes of the lines shown) with `nonUtf8: true`; binary
//! content (a NUL byte in the first 8000 bytes, git's own test) is not inlined at all
//! (`binary: true`, size and blob sha only). Symlinks are read as git stores them: the target path
//! is the content. `.gitattributes` (e.g. `binary`, `eol`) and filters are not applied: this is the
//! blob as committed.
//!
//! Lines are git's: split after each `\n`; a last line without a newline counts. The range
//! `startLine..=endLine` (default: the whole file) is cut, whole lines only, by the tightest of
//! `maxBytes` (bytes of shown content) and `maxTokens` (the whole result); then `truncated` is
//! true, `endLine` is the last line shown, and the envelope's `omitted.lines` counts the requested
//! lines left out. To read on, ask again from `endLine + 1`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use gix::bstr::ByteSlice;
use serde::Serialize;

use crate::budget::{self, Budgeted, Measure, Omitted};
use crate::error::{Error, InvalidReason, Result};
use crate::revision::resolve_commit;

/// `maxBytes` default: 64 KiB of content.
pub const DEFAULT_MAX_BYTES: usize = 64 * 1024;
/// `maxBytes` upper bound: 1 MiB of content.
pub const MAX_MAX_BYTES: usize = 1024 * 1024;

/// What to read.
#[derive(Debug, Clone)]
pub struct Options {
    /// The file, revision (`HEAD` when absent) and lines.
    pub file: super::FileRange,
    /// Most bytes of content shown (1..=[`MAX_MAX_BYTES`]).
    pub max_bytes: usize,
}

/// The file at the revision, possibly cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The full sha of the commit `rev` resolved to.
    pub rev: String,
    /// The path, as given.
    pub path: String,
    /// Git's file mode: `100644`, `100755` (executable) or `120000` (symlink).
    pub mode: String,
    /// The blob's full sha.
    pub blob_sha: String,
    /// Size of the whole blob in bytes.
    pub size: u64,
    /// Git would call it binary (a NUL in the first 8000 bytes): no content is inlined. Absent
    /// means false.
    #[serde(skip_serializing_if = "crate::compact::is_false")]
    pub binary: bool,
    /// Text that is not valid UTF-8: the shown lines are in `contentBase64`, never in `content`.
    /// Absent means false.
    #[serde(skip_serializing_if = "crate::compact::is_false")]
    pub non_utf8: bool,
    /// Lines in the whole file (absent, i.e. 0, for an empty or binary file).
    #[serde(skip_serializing_if = "crate::compact::is_zero")]
    pub total_lines: usize,
    /// First line of the range (1-based); absent for binary files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<usize>,
    /// Last line shown; absent when no line is shown (a binary or empty file, or none fitted the
    /// caps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<usize>,
    /// The shown lines, exactly (UTF-8 text only); absent when no line is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The shown lines' exact bytes in standard base64 (non-UTF-8 text only); absent when no line
    /// is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_base64: Option<String>,
    /// A cap (`maxBytes` or `maxTokens`) left out lines of the range; `omitted.lines` counts them.
    /// Absent means false.
    #[serde(skip_serializing_if = "crate::compact::is_false")]
    pub truncated: bool,
}

/// The uncut file: its metadata and bytes, and where its lines start.
#[derive(Debug, Clone)]
pub struct Full {
    rev: String,
    path: String,
    mode: String,
    blob_sha: String,
    data: Vec<u8>,
    binary: bool,
    non_utf8: bool,
    /// Byte offset where each line starts, plus the end of the data.
    line_starts: Vec<usize>,
    /// The requested range, 1-based inclusive, clamped to the file (`end == start - 1` for an empty
    /// file).
    start: usize,
    end: usize,
}

impl Full {
    fn total_lines(&self) -> usize {
        self.line_starts.len() - 1
    }

    /// Bytes of lines `start..start + count`.
    fn lines(&self, count: usize) -> &[u8] {
        let first = self.start - 1;
        let from = self.line_starts[first.min(self.total_lines())];
        let to = self.line_starts[(first + count).min(self.total_lines())];
        &self.data[from..to]
    }

    /// Lines in the requested range.
    fn range_len(&self) -> usize {
        self.end + 1 - self.start
    }

    /// The report showing the first `count` lines of the range.
    fn report(&self, count: usize) -> Report {
        let shown = self.lines(count);
        let (start_line, end_line, content, content_base64) = match (self.binary, count, self.non_utf8) {
            (true, ..) => (None, None, None, None),
            (false, 0, _) => (Some(self.start), None, None, None),
            (false, _, true) => (Some(self.start), Some(self.start + count - 1), None, Some(STANDARD.encode(shown))),
            (false, _, false) => (
                Some(self.start),
                Some(self.start + count - 1),
                Some(String::from_utf8_lossy(shown).into_owned()),
                None,
            ),
        };
        Report {
            rev: self.rev.clone(),
            path: self.path.clone(),
            mode: self.mode.clone(),
            blob_sha: self.blob_sha.clone(),
            size: self.data.len() as u64,
            binary: self.binary,
            non_utf8: self.non_utf8,
            total_lines: if self.binary { 0 } else { self.total_lines() },
            start_line,
            end_line,
            content,
            content_base64,
            truncated: !self.binary && count < self.range_len(),
        }
    }
}

/// Looks the file up at the revision and reads its blob.
///
/// # Errors
/// As [`crate::Engine::file_read`].
pub fn read(repo: &gix::Repository, options: &Options) -> Result<Full> {
    let file = &options.file;
    file.check()?;
    let rev = file.rev.as_deref().unwrap_or("HEAD");
    let commit_id = resolve_commit(repo, rev)?;
    let to_err = |err| Error::git("the revision's tree", err);
    let tree = repo.find_commit(commit_id).map_err(to_err)?.tree().map_err(to_err)?;
    let entry = tree
        .lookup_entry_by_path(&file.path)
        .map_err(|err| Error::git("the revision's tree", err))?
        .ok_or_else(|| {
            Error::invalid(InvalidReason::NotFound, format!("{:?} does not exist at {rev} ({commit_id})", file.path))
        })?;
    let mode = entry.mode();
    if mode.is_tree() || mode.is_commit() {
        let what = if mode.is_tree() { "a directory" } else { "a submodule" };
        return Err(Error::invalid(
            InvalidReason::NotAFile,
            format!("{:?} is {what} at {rev}, not a file: list it with repo.scope or submodule.status", file.path),
        ));
    }
    let blob_id = entry.object_id();
    let data = repo.find_blob(blob_id).map_err(|err| Error::git("the file's blob", err))?.detach().data;
    let binary = super::is_binary(&data);
    let non_utf8 = !binary && data.to_str().is_err();
    let mut line_starts = vec![0];
    line_starts.extend(data.iter().enumerate().filter(|(_, byte)| **byte == b'\n').map(|(idx, _)| idx + 1));
    if line_starts.last() != Some(&data.len()) {
        line_starts.push(data.len());
    }
    let total_lines = line_starts.len() - 1;
    let (start, end) = file.lines(total_lines)?;
    Ok(Full {
        rev: commit_id.to_string(),
        path: file.path.clone(),
        mode: format!("{:06o}", mode.value()),
        blob_sha: blob_id.to_string(),
        data,
        binary,
        non_utf8,
        line_starts,
        start,
        end,
    })
}

/// Shows as many whole lines of the range as `options.max_bytes` and `max_tokens` allow.
///
/// # Errors
/// [`InvalidReason::BudgetBelowFloor`] when the metadata alone exceeds `max_tokens`.
pub fn fit(
    full: &Full,
    options: &Options,
    max_tokens: usize,
    measure: &mut Measure<'_, Report>,
) -> Result<Budgeted<Report>> {
    let range_len = if full.binary { 0 } else { full.range_len() };
    let first = full.start - 1;
    let byte_fit = (0..=range_len)
        .take_while(|&count| full.line_starts[first + count] - full.line_starts[first] <= options.max_bytes)
        .last()
        .unwrap_or(0);
    let omitted = |count: usize| Omitted::from_counts(&["lines"], &[range_len], &[count]);
    let mut candidate = |shown: &[usize]| {
        let count = shown[0];
        measure(&Budgeted { data: full.report(count), omitted: omitted(count) })
    };
    let shown = budget::fit(&[byte_fit], max_tokens, &mut candidate)?[0];
    Ok(Budgeted { data: full.report(shown), omitted: omitted(shown) })
}
