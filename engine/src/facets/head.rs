//! The HEAD facet: branch, detached or unborn.

use serde::Serialize;

use crate::compact::is_false;
use crate::error::{Error, Result};

/// Where HEAD points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Head {
    /// The checked-out branch's short name (`main`), also for an unborn branch; default `null`
    /// (detached).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// `true` when HEAD names a commit directly (`git checkout v1.0`); default false.
    #[serde(skip_serializing_if = "is_false")]
    pub detached: bool,
    /// `true` when HEAD names a branch that has no commit yet; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub unborn: bool,
    /// The commit sha HEAD resolves to (full from [`read`]; tools may abbreviate it); default
    /// `null` (unborn).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha: Option<String>,
    /// The repository is a shallow clone: history, ahead/behind and merge bases stop at the commits
    /// listed in `.git/shallow`, whose parents git treats as absent; absent when `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shallow: bool,
}

/// Reads HEAD. Equivalent of `git symbolic-ref -q --short HEAD` plus `git rev-parse HEAD`.
///
/// # Errors
/// [`Error::GitRead`] when HEAD or its target cannot be read.
pub fn read(repo: &gix::Repository) -> Result<Head> {
    let head = repo.head().map_err(|err| Error::git("HEAD", err))?;
    let branch = head.referent_name().map(|name| name.shorten().to_string());
    let unborn = head.is_unborn();
    let detached = head.is_detached();
    let sha = head.id().map(|id| id.to_string());
    let shallow = crate::ancestry::Shallow::read(repo)?.is_shallow();
    Ok(Head { branch, detached, unborn, sha, shallow })
}
