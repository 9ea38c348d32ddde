//! The HEAD facet: branch, detached or unborn.

use serde::Serialize;

use crate::error::{Error, Result};

/// Where HEAD points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Head {
    /// The checked-out branch's short name (`main`), also for an unborn branch; `None` when detached.
    pub branch: Option<String>,
    /// `true` when HEAD names a commit directly (`git checkout v1.0`).
    pub detached: bool,
    /// `true` when HEAD names a branch that has no commit yet.
    pub unborn: bool,
    /// The full commit sha HEAD resolves to; `None` when unborn.
    pub sha: Option<String>,
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
    Ok(Head { branch, detached, unborn, sha })
}
