//! Facets: separately computable units of repository state (design.md §3).
//!
//! Each facet is a pure function of a [`gix::Repository`] and is keyed by `(repository, facet)`
//! through [`FacetKey`], so a cache can hold and invalidate each on its own: HEAD changes do not
//! evict the work-tree status, and a work-tree edit does not evict the refs.

pub mod commits;
pub mod conventions;
pub mod head;
pub mod lineage;
pub mod operation;
pub mod refs;
pub mod stashes;
pub mod submodules;
pub mod worktree;

use std::path::PathBuf;

/// The facets the engine computes; each is an independent cache unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Facet {
    /// HEAD: branch, detached or unborn, and its commit ([`head::read`]).
    Head,
    /// The current branch's upstream with ahead/behind ([`refs::upstream_of`]).
    Upstream,
    /// Local and remote branches with upstreams ([`refs::branches`]).
    Branches,
    /// Tags ([`refs::tags`]).
    Tags,
    /// Remotes with redacted URLs ([`refs::remotes`]).
    Remotes,
    /// Stashes, newest first ([`stashes::read`]).
    Stashes,
    /// The operation in progress ([`operation::read`]).
    Operation,
    /// Work-tree status ([`worktree::status`]).
    WorkTreeStatus,
    /// Submodule summary ([`submodules::summary`]).
    Submodules,
    /// Recent commits from HEAD ([`commits::recent`]).
    RecentCommits,
    /// Detected conventions ([`conventions::read`]).
    Conventions,
    /// Remote-tracking branches ([`refs::remote_branches`]).
    RemoteBranches,
    /// Dropped commits, the current branch's stack and the CODEOWNERS file at HEAD
    /// ([`lineage::read`]), for `repo.brief`'s hints.
    Lineage,
}

impl Facet {
    /// The facet's bit in a set of facets (its position in this enum).
    pub(crate) const fn bit(self) -> usize {
        self as usize
    }

    /// `true` for facets shared by every worktree of a repository (keyed by the common dir); the
    /// others are keyed by the worktree's git dir.
    pub fn is_shared(self) -> bool {
        matches!(self, Self::Tags | Self::Remotes | Self::Stashes | Self::RemoteBranches)
    }
}

/// The cache key of one facet of one repository: the repository's canonical common dir plus the
/// facet.
///
/// Linked worktrees share refs (common dir) but not HEAD, index or work tree: facets that depend on
/// HEAD or the work tree are keyed by the git dir ([`Facet::is_shared`] tells which).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FacetKey {
    /// The canonical git dir (per-worktree facets) or common dir (shared facets).
    pub repository: PathBuf,
    /// Which facet.
    pub facet: Facet,
}

/// Renders bytes from Git (paths, names, messages) as UTF-8, replacing invalid sequences with
/// U+FFFD.
pub(crate) fn utf8(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The first line of a commit message, trimmed.
pub(crate) fn subject(message: &[u8]) -> String {
    let text = utf8(message);
    text.lines().next().unwrap_or_default().trim().to_owned()
}

/// `time` as git's `iso-strict` date (`git log --format=%aI`): RFC 3339 with the recorded offset,
/// `Z` for UTC.
pub(crate) fn iso_time(time: gix::date::Time) -> String {
    let text = time.format_or_unix(gix::date::time::format::ISO8601_STRICT);
    match text.strip_suffix("+00:00") {
        Some(utc) => format!("{utc}Z"),
        None => text,
    }
}
