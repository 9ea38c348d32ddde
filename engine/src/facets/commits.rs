//! The recent-commits facet.

use serde::Serialize;

pub use crate::abbrev::{Abbrev, abbreviate, abbreviate_hex};
use crate::error::{Error, Result};
use crate::facets::subject;

/// One commit in a short listing; serialises as one string, `"<sha> <subject>"`, like
/// `git log --oneline` (design.md#envelope).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitLine {
    /// The commit sha abbreviated as `git log --oneline` does: the shortest prefix that is unique
    /// in the repository, at least `core.abbrev` (7 by default) hex digits.
    pub sha: String,
    /// The first line of the message.
    pub subject: String,
}

impl CommitLine {
    /// `"<sha> <subject>"`, as `git log --oneline` prints the commit.
    pub fn oneline(&self) -> String {
        format!("{} {}", self.sha, self.subject)
    }
}

impl Serialize for CommitLine {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{} {}", self.sha, self.subject))
    }
}

/// Hex digits kept of a sha where a fixed length is needed (e.g. a recovery branch name).
pub const SHORT_SHA_LEN: usize = 12;

/// HEAD's commit abbreviated with [`abbreviate`]; `None` when unborn.
pub fn abbreviated_head(repo: &gix::Repository) -> Option<String> {
    repo.head_id().ok().map(abbreviate)
}

/// The first `limit` commits reachable from HEAD, newest first by commit time like `git log`; empty
/// when unborn.
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
    let abbrev = Abbrev::new(repo);
    for info in walk.take(limit) {
        let info = info.map_err(|err| Error::git("commit history", err))?;
        let commit = info.object().map_err(|err| Error::git("commit", err))?;
        let message = commit.message_raw_sloppy();
        lines.push(CommitLine { sha: abbrev.id(info.id), subject: subject(message) });
    }
    Ok(lines)
}
