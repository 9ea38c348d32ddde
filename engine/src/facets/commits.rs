//! The recent-commits facet.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::facets::subject;

/// One commit in a short listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitLine {
    /// The commit sha abbreviated to 12 hex digits (unambiguous in practice, and a third of the tokens).
    pub sha: String,
    /// The first line of the message.
    pub subject: String,
}

/// Hex digits kept of a sha in short listings.
pub const SHORT_SHA_LEN: usize = 12;

/// The first `limit` commits reachable from HEAD, newest first by commit time like `git log`; empty when unborn.
///
/// # Errors
/// [`Error::GitRead`] when a commit cannot be read.
pub fn recent(repo: &gix::Repository, limit: usize) -> Result<Vec<CommitLine>> {
    let Some(head) = repo.head_id().ok() else {
        return Ok(Vec::new());
    };
    let walk = repo
        .rev_walk([head.detach()])
        .sorting(gix::revision::walk::Sorting::ByCommitTime(Default::default()))
        .all()
        .map_err(|err| Error::git("commit history", err))?;
    let mut lines = Vec::new();
    for info in walk.take(limit) {
        let info = info.map_err(|err| Error::git("commit history", err))?;
        let commit = info.object().map_err(|err| Error::git("commit", err))?;
        let message = commit.message_raw_sloppy();
        let mut sha = info.id.to_string();
        sha.truncate(SHORT_SHA_LEN);
        lines.push(CommitLine { sha, subject: subject(message) });
    }
    Ok(lines)
}
