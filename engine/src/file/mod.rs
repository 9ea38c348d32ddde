//! Files at a revision (design.md#tools, ours): `file.read` ([`read`]) and `file.blame`
//! ([`blame`]).
//!
//! A file is looked up in the tree of the commit a revision names, through gix; no git process
//! runs, no filter, textconv or attribute program is applied, and nothing is written.

pub mod blame;
mod ignore;
mod origins;
mod packs;
pub mod read;
mod worktree;

use crate::budget::{Budgeted, Measure};

/// Git's binary test looks at this many leading bytes for a NUL (`buffer_is_binary` in git's
/// xdiff-interface.c).
const BINARY_PROBE_BYTES: usize = 8000;

/// Whether git would call `data` binary: a NUL byte among its first [`BINARY_PROBE_BYTES`] bytes.
pub(crate) fn is_binary(data: &[u8]) -> bool {
    data[..data.len().min(BINARY_PROBE_BYTES)].contains(&0)
}
use crate::engine::{Engine, Repo};
use crate::error::{Error, InvalidReason, Result};
use crate::repository::check_relative_path;

/// Which file, at which revision, and which of its lines: what `file.read` and `file.blame` are
/// asked.
#[derive(Debug, Clone, Default)]
pub struct FileRange {
    /// Repository-relative path of the file (no `..`, not absolute, no control characters, not
    /// empty).
    pub path: String,
    /// The revision (a commit, or a tag peeled to one). When absent, `file.read` reads `HEAD`'s
    /// version and `file.blame` the work-tree file, as `git blame FILE` does.
    pub rev: Option<String>,
    /// First line wanted, 1-based (default 1).
    pub start_line: Option<usize>,
    /// Last line wanted, 1-based inclusive (default: the last line; a larger value is clamped to
    /// it).
    pub end_line: Option<usize>,
}

impl FileRange {
    /// Refuses a path or line range no file can satisfy, before anything is read.
    ///
    /// # Errors
    /// [`InvalidReason::InvalidPath`] for a refused or empty path; [`InvalidReason::InvalidRange`]
    /// for line 0 or `endLine` before `startLine`.
    pub(crate) fn check(&self) -> Result<()> {
        check_relative_path(&self.path)?;
        if self.path.is_empty() {
            return Err(Error::invalid(InvalidReason::InvalidPath, "path may not be empty"));
        }
        if let (Some(start), Some(end)) = (self.start_line, self.end_line)
            && end < start
        {
            return Err(Error::invalid(
                InvalidReason::InvalidRange,
                format!("endLine {end} is before startLine {start}: the range is empty"),
            ));
        }
        if self.start_line == Some(0) || self.end_line == Some(0) {
            return Err(Error::invalid(InvalidReason::InvalidRange, "lines are numbered from 1"));
        }
        Ok(())
    }

    /// The range within a file of `total_lines` lines: `(start, end)`, 1-based inclusive, `end`
    /// clamped to the file (`end == start - 1` when nothing is left, e.g. an empty file).
    ///
    /// # Errors
    /// [`InvalidReason::InvalidRange`] when `startLine` is past the end of the file.
    pub(crate) fn lines(&self, total_lines: usize) -> Result<(usize, usize)> {
        let start = self.start_line.unwrap_or(1);
        if start > total_lines.max(1) {
            return Err(Error::invalid(
                InvalidReason::InvalidRange,
                format!("startLine {start} is past the end of {:?}, which has {total_lines} lines", self.path),
            ));
        }
        Ok((start, self.end_line.unwrap_or(total_lines).min(total_lines).max(start - 1)))
    }
}

/// File tools.
impl Engine {
    /// `file.read`: a file's content at a revision, cut at whole lines to `options.max_bytes` and
    /// `max_tokens`.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] for a refused path (`invalid_path`), a revision that is refused or
    /// names no commit (`invalid_revision`, `unknown_revision`), a path absent at the revision
    /// (`not_found`), a directory or submodule (`not_a_file`), a bad line range (`invalid_range`)
    /// or a budget under the floor; [`crate::Error::GitRead`] when the tree or blob cannot be read.
    pub fn file_read(
        &self,
        repo: &Repo,
        options: &read::Options,
        max_tokens: usize,
        measure: &mut Measure<'_, read::Report>,
    ) -> Result<Budgeted<read::Report>> {
        read::fit(&read::read(&repo.git, options)?, options, max_tokens, measure)
    }

    /// `file.blame`: who last changed each line of a file at a revision, grouped into ranges, cut
    /// at whole ranges to `max_tokens`.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] for a refused path (`invalid_path`), a revision that is refused or
    /// names no commit (`invalid_revision`, `unknown_revision`), a path absent at the revision
    /// (`not_found`), a directory or submodule (`not_a_file`), a binary file (`binary_file`), a bad
    /// line range (`invalid_range`) or a budget under the floor; [`crate::Error::GitRead`] when the
    /// history cannot be read.
    pub fn file_blame(
        &self,
        repo: &Repo,
        options: &blame::Options,
        max_tokens: usize,
        measure: &mut Measure<'_, blame::Report>,
    ) -> Result<Budgeted<blame::Report>> {
        blame::fit(&blame::read(&repo.git, options)?, max_tokens, measure)
    }

    /// What `file.blame` answers depend on outside what the engine's watcher sees: the content of
    /// the ignore-revs files and of `mailmap.file` (one may live outside the repository, e.g. under
    /// the home directory). Part of a cached answer's key, so that editing such a file is never
    /// answered from a stale cache.
    pub fn blame_files_key(&self, repo: &Repo) -> String {
        blame::files_key(&repo.git)
    }
}

/// The size above which git treats a file as binary (`core.bigFileThreshold`, 512 MiB unless
/// configured), in bytes.
pub(crate) fn big_file_threshold(repo: &gix::Repository) -> u64 {
    let configured = repo.config_snapshot().integer("core.bigFileThreshold");
    configured.and_then(|value| u64::try_from(value).ok()).unwrap_or(512 * 1024 * 1024)
}

/// The `binary_file` refusal of a file of `size` bytes over `threshold` ([`big_file_threshold`]),
/// decided before its content is read.
pub(crate) fn too_large(path: &str, size: u64, threshold: u64, rev: &str) -> Error {
    Error::invalid(
        InvalidReason::BinaryFile,
        format!(
            "{path:?} holds {size} bytes in {rev}, more than core.bigFileThreshold ({threshold} bytes), above which \
             git treats a file as binary: it has no lines to blame"
        ),
    )
}
