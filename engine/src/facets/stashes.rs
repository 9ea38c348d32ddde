//! The stash facet: the reflog of `refs/stash`, newest first (gix has no stash API).

use serde::Serialize;

use crate::error::{Error, Result};
use crate::facets::utf8;

/// One stash entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stash {
    /// Position as in `stash@{N}`, 0 is the newest.
    pub index: usize,
    /// The stash commit's full sha.
    pub sha: String,
    /// The reflog message, e.g. `On main: wip`.
    pub message: String,
}

/// Reads all stashes, newest first; equivalent to `git stash list`.
///
/// # Errors
/// [`Error::GitRead`] when the stash reflog exists but cannot be parsed.
pub fn read(repo: &gix::Repository) -> Result<Vec<Stash>> {
    let Some(reference) = repo.try_find_reference("refs/stash").map_err(|err| Error::git("stash ref", err))? else {
        return Ok(Vec::new());
    };
    let mut platform = reference.log_iter();
    let Some(lines) = platform.rev().map_err(|err| Error::git("stash reflog", err))? else {
        return Ok(Vec::new());
    };
    let mut stashes = Vec::new();
    for line in lines {
        let line = line.map_err(|err| Error::git("stash reflog", err))?;
        stashes.push(Stash { index: stashes.len(), sha: line.new_oid.to_string(), message: utf8(&line.message) });
    }
    Ok(stashes)
}
