//! Facets: separately computable units of repository state (design.md#engine).
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

/// Most characters of a subject that an answer lists (1,000, about 250 tokens on prose): far more
/// than any subject a person writes, and what keeps a commit whose "subject" is a 300 KB paste from
/// pushing every other commit out of a budget.
pub const MAX_SUBJECT_CHARS: usize = 1_000;

/// Most characters of a name or an e-mail address that an answer lists (256).
pub const MAX_NAME_CHARS: usize = 256;

/// The first line of a commit message, trimmed, clipped to [`MAX_SUBJECT_CHARS`] ([`clipped`]).
pub(crate) fn subject(message: &[u8]) -> String {
    let line = message.split(|&byte| byte == b'\n').next().unwrap_or_default();
    clipped(utf8(line).trim(), MAX_SUBJECT_CHARS)
}

/// A name or an e-mail address from a signature, clipped to [`MAX_NAME_CHARS`] ([`clipped`]).
pub(crate) fn name(bytes: &[u8]) -> String {
    clipped(&utf8(bytes), MAX_NAME_CHARS)
}

/// `text` whole when it has at most `max_chars` characters, else its first `max_chars` characters
/// and `… (+N bytes)`, N the bytes left out. Characters, not bytes, so a cut never splits one.
pub(crate) fn clipped(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}… (+{} bytes)", &text[..end], text.len() - end),
        None => text.to_owned(),
    }
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
