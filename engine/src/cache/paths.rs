//! Which facets a filesystem event can change: a pure mapping from a path (relative to a watched
//! root) to a [`FacetSet`].
//!
//! The mapping errs on the side of invalidating: a name it does not know under the git dir
//! invalidates every facet.

use std::path::{Component, Path};

use crate::facets::Facet;

/// A set of facets plus the catch-all bit [`FacetSet::ANY`], which every event of a repository sets
/// and which the answers of tools without finer dependencies (history, reflog, diffs...) depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct FacetSet(pub(crate) u32);

/// The bit of the catch-all counter.
pub(crate) const ANY_BIT: usize = 31;
/// Number of generation counters a repository keeps (one per bit).
pub(crate) const BITS: usize = 32;

impl FacetSet {
    /// Only the catch-all bit: the event changes nothing the cached facets hold (reflogs of other
    /// refs, lock files).
    pub(crate) const ANY: Self = Self(1 << ANY_BIT);
    /// Every facet and the catch-all bit.
    pub(crate) const ALL: Self = Self(u32::MAX);

    /// The set holding `facets`.
    pub(crate) const fn of(facets: &[Facet]) -> Self {
        let mut bits = 0;
        let mut idx = 0;
        while idx < facets.len() {
            bits |= 1 << facets[idx].bit();
            idx += 1;
        }
        Self(bits)
    }

    /// The union of two sets.
    pub(crate) const fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// `true` when `facet` is in the set.
    #[cfg(test)]
    pub(crate) fn contains(self, facet: Facet) -> bool {
        self.0 & (1 << facet.bit()) != 0
    }

    /// The bits set, lowest first.
    pub(crate) fn bits(self) -> impl Iterator<Item = usize> {
        (0..BITS).filter(move |bit| self.0 & (1 << bit) != 0)
    }
}

/// What moving a branch (or HEAD) can change: HEAD's commit, the upstream's ahead/behind, branch
/// tips, the staged changes (HEAD's tree vs the index), submodules' recorded commits, recent
/// commits and conventions.
const BRANCH_TIPS: FacetSet = FacetSet::of(&[
    Facet::Head,
    Facet::Upstream,
    Facet::Branches,
    Facet::WorkTreeStatus,
    Facet::Submodules,
    Facet::RecentCommits,
    Facet::Conventions,
    Facet::Lineage,
]);
/// What moving a remote-tracking branch can change (also `origin/HEAD`, the default branch).
const REMOTE_TIPS: FacetSet =
    FacetSet::of(&[Facet::Upstream, Facet::Branches, Facet::RemoteBranches, Facet::Conventions, Facet::Lineage]);
/// Every facet read from refs.
const ALL_REFS: FacetSet = BRANCH_TIPS.with(REMOTE_TIPS).with(FacetSet::of(&[Facet::Tags, Facet::Stashes]));
/// What the index and submodule git dirs can change.
const INDEX: FacetSet = FacetSet::of(&[Facet::WorkTreeStatus, Facet::Submodules]);

/// The facets an event at `relative` (relative to the repository's common dir) can change, without
/// the catch-all bit.
pub(crate) fn git_dir_event(relative: &Path) -> FacetSet {
    let parts: Vec<&str> = relative
        .components()
        .filter_map(|component| match component {
            Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect();
    if parts.len() != relative.components().count() {
        // A non-UTF-8 name, or the root itself (deleted or moved): anything may have changed.
        return FacetSet::ALL;
    }
    match parts.as_slice() {
        // A linked worktree's private dir holds its own HEAD, index and state files.
        ["worktrees", _name, rest @ ..] if !rest.is_empty() => match rest {
            ["gitdir" | "commondir" | "locked"] => FacetSet::ANY,
            _ => git_dir_event(&rest.iter().collect::<std::path::PathBuf>()),
        },
        ["worktrees", ..] => FacetSet::ANY,
        [] => FacetSet::ALL,
        ["HEAD"] => BRANCH_TIPS.with(FacetSet::of(&[Facet::Operation])),
        ["index"] => INDEX,
        ["packed-refs"] => ALL_REFS,
        ["shallow"] => FacetSet::of(&[
            Facet::Head,
            Facet::Upstream,
            Facet::Branches,
            Facet::RecentCommits,
            Facet::Conventions,
            Facet::Lineage,
        ]),
        ["refs", "heads", ..] => BRANCH_TIPS,
        ["refs", "remotes", ..] => REMOTE_TIPS,
        // A tag or the stash can hold commits a branch dropped: they are then not lost (`git rev-list --all`).
        ["refs", "tags", ..] => FacetSet::of(&[Facet::Tags, Facet::Lineage]),
        ["refs", "stash"] => FacetSet::of(&[Facet::Stashes, Facet::Lineage]),
        ["logs", "refs", "stash"] => FacetSet::of(&[Facet::Stashes]),
        ["refs", ..] => ALL_REFS,
        // A branch's reflog feeds the dropped commits of `repo.brief`'s hints (`git reflog expire` or `delete`
        // change it without moving the branch).
        ["logs", "refs", "heads", ..] => FacetSet::of(&[Facet::Lineage]),
        ["logs", ..] => FacetSet::ANY,
        ["rebase-merge" | "rebase-apply" | "sequencer", ..] => FacetSet::of(&[Facet::Operation]),
        [name] if is_operation_file(name) => FacetSet::of(&[Facet::Operation]),
        ["modules", ..] => INDEX,
        [name, ..] if is_inert(name) => FacetSet::ANY,
        // config, config.worktree, info/ (exclude, grafts) and anything unknown.
        _ => FacetSet::ALL,
    }
}

/// The facets an event at `relative` (relative to the work tree's top) can change, without the
/// catch-all bit.
pub(crate) fn work_tree_event(relative: &Path) -> FacetSet {
    match relative.components().next() {
        // The root itself, or its `.git` entry replaced: anything may have changed.
        None => FacetSet::ALL,
        Some(Component::Normal(name)) if name == ".git" => FacetSet::ALL,
        // Tracked, untracked and ignored files alike: ignored ones change no facet but cost only a status refresh.
        Some(_) => INDEX,
    }
}

/// State files of a stopped operation (`gix::Repository::state` reads these).
fn is_operation_file(name: &str) -> bool {
    ["MERGE_", "CHERRY_PICK_", "REVERT_", "BISECT_"].iter().any(|prefix| name.starts_with(prefix))
}

/// Names under the git dir that no facet reads: lock files (the rename that ends a lock is an event
/// on the final name), reflogs other than the stash's, objects, hooks and git's own scratch files.
fn is_inert(name: &str) -> bool {
    name.ends_with(".lock")
        || matches!(
            name,
            "objects"
                | "hooks"
                | "ORIG_HEAD"
                | "FETCH_HEAD"
                | "AUTO_MERGE"
                | "COMMIT_EDITMSG"
                | "description"
                | "gc.pid"
                | "gc.log"
                | "lfs"
                | "fsmonitor--daemon"
                | "gitk.cache"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(path: &str) -> FacetSet {
        git_dir_event(Path::new(path))
    }

    #[test]
    fn each_git_file_invalidates_what_it_feeds() {
        assert!(git("HEAD").contains(Facet::Head) && !git("HEAD").contains(Facet::Tags));
        assert_eq!(git("index"), INDEX);
        assert_eq!(git("refs/tags/v1"), FacetSet::of(&[Facet::Tags, Facet::Lineage]));
        assert_eq!(git("logs/refs/stash"), FacetSet::of(&[Facet::Stashes]));
        assert_eq!(git("logs/HEAD"), FacetSet::ANY);
        assert_eq!(git("logs/refs/heads/main"), FacetSet::of(&[Facet::Lineage]));
        assert_eq!(git("refs/heads/main.lock"), BRANCH_TIPS);
        assert_eq!(git("index.lock"), FacetSet::ANY);
        assert_eq!(git("MERGE_HEAD"), FacetSet::of(&[Facet::Operation]));
        assert_eq!(git("rebase-merge/head-name"), FacetSet::of(&[Facet::Operation]));
        assert_eq!(git("worktrees/wt/HEAD"), git("HEAD"));
        assert_eq!(git("worktrees/wt/gitdir"), FacetSet::ANY);
        assert!(git("packed-refs").contains(Facet::Branches) && git("packed-refs").contains(Facet::Tags));
        assert_eq!(git("config"), FacetSet::ALL);
        assert_eq!(git("something-new"), FacetSet::ALL);
        assert_eq!(git(""), FacetSet::ALL);
        assert_eq!(git("modules/sub/HEAD"), INDEX);
    }

    #[test]
    fn work_tree_events_touch_only_status_and_submodules() {
        assert_eq!(work_tree_event(Path::new("src/lib.rs")), INDEX);
        assert_eq!(work_tree_event(Path::new("target/debug/x")), INDEX);
        assert_eq!(work_tree_event(Path::new(".git")), FacetSet::ALL);
        assert_eq!(work_tree_event(Path::new("")), FacetSet::ALL);
    }
}
