//! `submodule.status`: every submodule at any depth, like `git submodule status --recursive`, plus
//! whether each checkout has uncommitted changes.

use serde::Serialize;

use crate::compact::{is_false, is_zero};
use crate::engine::{Engine, Repo};
use crate::error::Result;
use crate::facets::submodules::{self, SubmoduleState};
use crate::facets::worktree;

/// The submodules of one repository, depth first in path order (git's order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The `path` filter, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The submodules at or under `path`; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub submodules: Vec<Submodule>,
}

/// One submodule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Submodule {
    /// Path relative to the top-level repository, e.g. `libs/a/vendor/nested`.
    pub path: String,
    /// The commit the (super)project's index records; `None` when nothing is recorded; default
    /// `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_sha: Option<String>,
    /// The commit checked out in the submodule when it is not `recorded_sha` (state `drifted`);
    /// `None` when it is the recorded one or nothing is checked out (default: `recordedSha`, or
    /// `null` when `state` is `uninitialized`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_out_sha: Option<String>,
    /// `true` when a repository is checked out at the path. Not serialised: `state` says it
    /// (`uninitialized`).
    #[serde(skip)]
    pub initialized: bool,
    /// `clean`, `drifted` (checked out elsewhere than recorded: `+`), `uninitialized` (`-`) or
    /// `conflict` (`U`).
    pub state: SubmoduleState,
    /// `true` when the submodule's own work tree has staged, unstaged or conflicted changes;
    /// default false.
    #[serde(skip_serializing_if = "is_false")]
    pub dirty: bool,
    /// Untracked files in the submodule's work tree; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub untracked: usize,
    /// Why the submodule (state `unreadable`) or its work tree could not be read; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::ItemError>,
}

impl Engine {
    /// `submodule.status`: submodules at any depth, those at or under the repo-relative `path` when
    /// given.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] (`invalid_path`) for a `path` with `..` or an absolute one;
    /// [`crate::Error::GitRead`] when `.gitmodules`, an index or a submodule's HEAD cannot be read.
    pub fn submodule_status(&self, repo: &Repo, path: Option<&str>) -> Result<Report> {
        if let Some(path) = path {
            crate::repository::check_relative_path(path)?;
        }
        let prefix = path.map(|path| path.trim_end_matches('/'));
        let mut out = Vec::new();
        for (submodule, opened) in submodules::list_opened(&repo.git)? {
            let selected = prefix.is_none_or(|prefix| {
                prefix.is_empty()
                    || submodule.path == prefix
                    || submodule.path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'))
            });
            if !selected {
                continue;
            }
            let mut error = submodule.error;
            let (dirty, untracked) = match opened.as_ref().map(worktree::status) {
                Some(Ok(status)) => (
                    !(status.staged.is_empty() && status.unstaged.is_empty() && status.conflicted.is_empty()),
                    status.untracked.len(),
                ),
                Some(Err(err)) => {
                    error = Some(crate::ItemError::from_error(err));
                    (false, 0)
                }
                None => (false, 0),
            };
            let initialized = submodule.checked_out_sha.is_some();
            let checked_out_sha = submodule.checked_out_sha.filter(|sha| submodule.recorded_sha.as_ref() != Some(sha));
            out.push(Submodule {
                initialized,
                path: submodule.path,
                recorded_sha: submodule.recorded_sha,
                checked_out_sha,
                state: submodule.state,
                dirty,
                untracked,
                error,
            });
        }
        Ok(Report { path: path.map(str::to_owned), submodules: out })
    }
}
