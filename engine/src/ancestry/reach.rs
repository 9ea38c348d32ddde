//! Which tips reach which commits, from one walk of all their histories together, exact whatever
//! the commit dates: the ground of every ahead/behind count and every `A..B` set of the engine.
//!
//! Each tip has a bit (tips may share one); a commit's bits are those of the tips it is reachable
//! from. Before the walk, every commit below the tips gets a generation number
//! ([`super::generations`]: the commit-graph's, else the engine's table, which numbers only commits
//! it has not seen). The walk pops the highest generation number first (then the newest committer
//! date) and hands a commit's bits to its parents.
//!
//! Why a popped commit's bits are final. Generation numbers fall strictly from child to parent, so
//! along any path from a tip down to a commit `y` they fall, and every commit on it has a number
//! above `y`'s. When `x` is popped, suppose a commit `y` reachable from a tip, numbered above `x`,
//! were not popped yet. Follow a path from a tip to `y`: the tip was queued at the start; if it was
//! never popped it is queued with a number above `x`'s, and the queue would have popped it before
//! `x`. Else take the last popped commit `p` of the path and the next one `q` (`q` is on the path
//! to `y`, so numbered at least as high as `y`, above `x`): when `p` was popped it handed its bits
//! to `q`, which was then queued, or already held them and so had been queued before; `q` is not
//! popped, so it is queued with a number above `x`'s, the same contradiction. So every child of `x`
//! reachable from a tip (numbered above `x`) was popped before `x`, had handed its bits on, and `x`
//! gains nothing after it is popped.
//!
//! Where the walk stops: when every queued commit carries every bit. Every commit not yet popped
//! that a tip reaches is reached through a queued commit (the argument above, with any unpopped
//! commit for `y`), so it is an ancestor of a commit that every tip reaches: every tip reaches it,
//! and it counts in no difference. Every popped commit has its final bits. So the counts read off
//! the popped commits are exact. Committer dates play no part in this (they only break ties), which
//! is why a commit dated years before its parent cannot mislead it, where git's date-ordered walks
//! (and gix's hidden-tip walk) stop too early. Bits still only grow and a commit whose bits grow
//! after it was popped is queued again: with a number missing (never expected: every commit below
//! the tips is numbered) the walk stays exact by walking to the roots, since such a commit never
//! counts as settled.
//!
//! The bits, the queue and its order are [`super::paint::Paint`]'s (shared with
//! `branch_stack::placement`); the walk hands every popped commit's bits (through the relay, see
//! [`Reach::walk_relaying`]) to all its parents and stops on [`Paint::unsettled`].

use gix::ObjectId;

use super::Shallow;
use super::generations::Generations;
use super::paint::{Node, Paint, Painted, has, set};
use crate::error::Result;

/// The walk's result: every commit read, with the bits of the tips that reach it.
pub(crate) struct Reach {
    painted: Painted,
}

impl Reach {
    /// Walks from `tips` (commit, bit), `bits` bits in all (each below `bits`). Parents are read as
    /// git walks them (none for a shallow boundary commit, and a missing commit is skipped, as
    /// git's walks skip it beyond a boundary); the commit-graph is used when gix would use it and
    /// the repository is not shallow (a read never writes one).
    ///
    /// # Errors
    /// [`Error::GitRead`] when a commit or the commit-graph cannot be read.
    pub(crate) fn walk(repo: &gix::Repository, tips: &[(ObjectId, usize)], bits: usize) -> Result<Self> {
        Self::walk_relaying(repo, tips, bits, |_| ())
    }

    /// [`Reach::walk`], with `relay` changing the bits a popped commit hands to its parents (its
    /// own bits stay as they are). The argument of the module documentation holds for any `relay`
    /// that only adds bits: what a commit hands on is a function of its bits when it is popped,
    /// which are final, so its parents' bits are final in turn (by induction along the order of
    /// popping). The walk stops when every queued commit carries every bit, whichever way it got
    /// them.
    ///
    /// # Errors
    /// As [`Reach::walk`].
    pub(crate) fn walk_relaying(
        repo: &gix::Repository,
        tips: &[(ObjectId, usize)],
        bits: usize,
        relay: impl Fn(&mut [u64]),
    ) -> Result<Self> {
        let shallow = Shallow::read(repo)?;
        let generations = Generations::open(repo, &shallow)?;
        let ids: Vec<ObjectId> = tips.iter().map(|(id, _)| *id).collect();
        let known = generations.number(repo, &shallow, &ids)?;
        let mut paint = Paint::new(repo, generations.commit_graph(), &known, bits);
        for (id, bit) in tips {
            let mut add = paint.empty();
            set(&mut add, *bit);
            paint.hand_on(*id, &add)?;
        }
        let mut flags = paint.empty();
        let mut parents = Vec::new();
        while paint.unsettled() > 0 {
            let Some(id) = paint.pop(&mut flags, &mut parents) else { break };
            if shallow.is_boundary(&id) {
                continue;
            }
            relay(&mut flags);
            for parent in &parents {
                paint.hand_on(*parent, &flags)?;
            }
        }
        Ok(Self { painted: paint.finish() })
    }

    /// The commits the walk read whose bits satisfy `predicate`.
    fn matching(
        &self,
        predicate: impl Fn(&[u64]) -> bool,
    ) -> impl Iterator<Item = (&ObjectId, &gix::revwalk::graph::Commit<Node>)> {
        self.painted.commits().filter(move |(_, _, bits)| predicate(bits)).map(|(id, commit, _)| (id, commit))
    }

    /// Commits that bit `one` reaches and bit `other` does not
    /// (`git rev-list --count <other>..<one>`).
    pub(crate) fn count_exclusive(&self, one: usize, other: usize) -> usize {
        self.matching(|bits| has(bits, one) && !has(bits, other)).count()
    }

    /// Commits that carry both bits `one` and `other` and not bit `below` (the best common
    /// ancestors when the walk relayed `below` from every commit carrying both: see
    /// [`super::merge_bases`]), newest committer date first (then by id).
    pub(crate) fn common_not_below(&self, one: usize, other: usize, below: usize) -> Vec<ObjectId> {
        let mut found: Vec<_> = self
            .matching(|bits| has(bits, one) && has(bits, other) && !has(bits, below))
            .map(|(id, commit)| (std::cmp::Reverse(commit.commit_time), *id))
            .collect();
        found.sort_unstable();
        found.into_iter().map(|(_, id)| id).collect()
    }

    /// Commits that bit `one` reaches and none of `others` does, highest generation number first,
    /// then newest committer date (then by id).
    pub(crate) fn exclusive(&self, one: usize, others: &[usize]) -> Vec<ObjectId> {
        let mut found: Vec<_> = self
            .matching(|bits| has(bits, one) && !others.iter().any(|other| has(bits, *other)))
            .map(|(id, commit)| {
                (std::cmp::Reverse((commit.data.generation.unwrap_or(u32::MAX), commit.commit_time)), *id)
            })
            .collect();
        found.sort_unstable();
        found.into_iter().map(|(_, id)| id).collect()
    }
}
