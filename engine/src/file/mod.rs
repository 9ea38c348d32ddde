//! Files at a revision (SPEC §5, ours): `file.read` ([`read`]) and `file.blame` ([`blame`]).
//!
//! A file is looked up in the tree of the commit a revision names, through gix; no git process runs, no filter,
//! textconv or attribute program is applied, and nothing is written.

pub mod blame;
mod ignore;
pub mod read;
mod worktree;

use crate::budget::{Budgeted, Measure};

/// Git's binary test looks at this many leading bytes for a NUL (`buffer_is_binary` in git's xdiff-interface.c).
const BINARY_PROBE_BYTES: usize = 8000;

/// Whether git would call `data` binary: a NUL byte among its first [`BINARY_PROBE_BYTES`] bytes.
pub(crate) fn is_binary(data: &[u8]) -> bool {
    data[..data.len().min(BINARY_PROBE_BYTES)].contains(&0)
}
use crate::engine::{Engine, Repo};
use crate::error::Result;

/// File tools.
impl Engine {
    /// `file.read`: a file's content at a revision, cut at whole lines to `options.max_bytes` and `max_tokens`.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] for a refused path (`invalid_path`), a revision that is refused or names no commit
    /// (`invalid_revision`, `unknown_revision`), a path absent at the revision (`not_found`), a directory or
    /// submodule (`not_a_file`), a bad line range (`invalid_range`) or a budget under the floor;
    /// [`crate::Error::GitRead`] when the tree or blob cannot be read.
    pub fn file_read(
        &self,
        repo: &Repo,
        options: &read::Options,
        max_tokens: usize,
        measure: &mut Measure<'_, read::Report>,
    ) -> Result<Budgeted<read::Report>> {
        read::fit(&read::read(&repo.git, options)?, options, max_tokens, measure)
    }

    /// `file.blame`: who last changed each line of a file at a revision, grouped into ranges, cut at whole ranges
    /// to `max_tokens`.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] for a refused path (`invalid_path`), a revision that is refused or names no commit
    /// (`invalid_revision`, `unknown_revision`), a path absent at the revision (`not_found`), a directory or
    /// submodule (`not_a_file`), a binary file (`binary_file`), a bad line range (`invalid_range`) or a budget under
    /// the floor; [`crate::Error::GitRead`] when the history cannot be read.
    pub fn file_blame(
        &self,
        repo: &Repo,
        options: &blame::Options,
        max_tokens: usize,
        measure: &mut Measure<'_, blame::Report>,
    ) -> Result<Budgeted<blame::Report>> {
        blame::fit(&blame::read(&repo.git, options)?, max_tokens, measure)
    }

    /// What `file.blame` answers depend on outside what the engine's watcher sees: the content of the ignore-revs
    /// files (one may live outside the repository, e.g. under the home directory). Part of a cached answer's key,
    /// so that editing such a file is never answered from a stale cache.
    pub fn file_blame_key(&self, repo: &Repo) -> String {
        blame::ignore_files_key(&repo.git)
    }
}
