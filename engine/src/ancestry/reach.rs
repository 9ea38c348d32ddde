//! Which tips reach which commits, from one walk of all their histories together, exact whatever the commit dates:
//! the ground of every ahead/behind count and every `A..B` set of the engine.
//!
//! Each tip has a bit (tips may share one); a commit's bits are those of the tips it is reachable from. Before the
//! walk, every commit below the tips gets a generation number ([`super::generations`]: the commit-graph's, else the
//! engine's table, which numbers only commits it has not seen). The walk pops the highest generation number first
//! (then the newest committer date) and hands a commit's bits to its parents.
//!
//! Why a popped commit's bits are final. Generation numbers fall strictly from child to parent, so along any path
//! from a tip down to a commit `y` they fall, and every commit on it has a number above `y`'s. When `x` is popped,
//! suppose a commit `y` reachable from a tip, numbered above `x`, were not popped yet. Follow a path from a tip to
//! `y`: the tip was queued at the start; if it was never popped it is queued with a number above `x`'s, and the
//! queue would have popped it before `x`. Else take the last popped commit `p` of the path and the next one `q`
//! (`q` is on the path to `y`, so numbered at least as high as `y`, above `x`): when `p` was popped it handed its
//! bits to `q`, which was then queued, or already held them and so had been queued before; `q` is not popped, so it
//! is queued with a number above `x`'s, the same contradiction. So every child of `x` reachable from a tip (numbered
//! above `x`) was popped before `x`, had handed its bits on, and `x` gains nothing after it is popped.
//!
//! Where the walk stops: when every queued commit carries every bit. Every commit not yet popped that a tip reaches
//! is reached through a queued commit (the argument above, with any unpopped commit for `y`), so it is an ancestor
//! of a commit that every tip reaches: every tip reaches it, and it counts in no difference. Every popped commit has
//! its final bits. So the counts read off the popped commits are exact. Committer dates play no part in this (they
//! only break ties), which is why a commit dated years before its parent cannot mislead it, where git's date-ordered
//! walks (and gix's hidden-tip walk) stop too early. Bits still only grow and a commit whose bits grow after it was
//! popped is queued again: with a number missing (never expected: every commit below the tips is numbered) the walk
//! stays exact by walking to the roots, since such a commit never counts as settled.

use gix::ObjectId;

use super::Shallow;
use super::generations::{Generations, Known};
use crate::error::{Error, Result};

/// Per commit of the walk: where its bits sit in the bit table, its generation number, whether it waits in the
/// queue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Node {
    slot: u32,
    generation: Option<u32>,
    queued: bool,
}

impl Default for Node {
    fn default() -> Self {
        Self { slot: u32::MAX, generation: None, queued: false }
    }
}

/// The walk's result: every commit read, with the bits of the tips that reach it.
pub(crate) struct Reach {
    words: usize,
    commits: gix::revwalk::graph::IdMap<gix::revwalk::graph::Commit<Node>>,
    table: Vec<u64>,
}

/// Whether `bits` holds bit `bit`.
pub(crate) fn has(bits: &[u64], bit: usize) -> bool {
    bits[bit / 64] & (1 << (bit % 64)) != 0
}

/// Where a popped commit stands for the stop rule: settled once it carries every bit and has a generation number.
fn settled(bits: &[u64], full: &[u64], generation: Option<u32>) -> bool {
    generation.is_some() && bits == full
}

impl Reach {
    /// Walks from `tips` (commit, bit), `bits` bits in all (each below `bits`). Parents are read as git walks them
    /// (none for a shallow boundary commit, and a missing commit is skipped, as git's walks skip it beyond a
    /// boundary); the commit-graph is used when gix would use it and the repository is not shallow (a read never
    /// writes one).
    ///
    /// # Errors
    /// [`Error::GitRead`] when a commit or the commit-graph cannot be read.
    pub(crate) fn walk(repo: &gix::Repository, tips: &[(ObjectId, usize)], bits: usize) -> Result<Self> {
        Self::walk_relaying(repo, tips, bits, |_| ())
    }

    /// [`Reach::walk`], with `relay` changing the bits a popped commit hands to its parents (its own bits stay as
    /// they are). The argument of the module documentation holds for any `relay` that only adds bits: what a commit
    /// hands on is a function of its bits when it is popped, which are final, so its parents' bits are final in turn
    /// (by induction along the order of popping). The walk stops when every queued commit carries every bit,
    /// whichever way it got them.
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
        let words = bits.div_ceil(64).max(1);
        let mut full = vec![0_u64; words];
        for bit in 0..bits {
            full[bit / 64] |= 1 << (bit % 64);
        }
        let mut graph = repo.revision_graph::<gix::revwalk::graph::Commit<Node>>(generations.commit_graph());
        let mut walk = Walk {
            words,
            full,
            table: Vec::new(),
            queue: gix::revwalk::PriorityQueue::new(),
            unsettled: 0,
            known: &known,
        };
        for (id, bit) in tips {
            let mut add = vec![0_u64; words];
            add[bit / 64] |= 1 << (bit % 64);
            walk.hand_on(&mut graph, *id, &add)?;
        }
        let mut flags = vec![0_u64; words];
        while walk.unsettled > 0 {
            let Some((_, id)) = walk.queue.pop() else { break };
            let Some(commit) = graph.get_mut(&id) else { continue };
            commit.data.queued = false;
            let slot = commit.data.slot as usize * words;
            flags.copy_from_slice(&walk.table[slot..slot + words]);
            if !settled(&flags, &walk.full, commit.data.generation) {
                walk.unsettled -= 1;
            }
            if shallow.is_boundary(&id) {
                continue;
            }
            let parents = commit.parents.clone();
            relay(&mut flags);
            for parent in parents {
                walk.hand_on(&mut graph, parent, &flags)?;
            }
        }
        Ok(Self { words, commits: graph.detach(), table: walk.table })
    }

    /// The bits of a commit the walk read.
    fn bits_of(&self, commit: &gix::revwalk::graph::Commit<Node>) -> &[u64] {
        let slot = commit.data.slot as usize * self.words;
        &self.table[slot..slot + self.words]
    }

    /// The commits the walk read whose bits satisfy `predicate`.
    fn matching(
        &self,
        predicate: impl Fn(&[u64]) -> bool,
    ) -> impl Iterator<Item = (&ObjectId, &gix::revwalk::graph::Commit<Node>)> {
        self.commits.iter().filter(move |(_, commit)| predicate(self.bits_of(commit)))
    }

    /// Commits that bit `one` reaches and bit `other` does not (`git rev-list --count <other>..<one>`).
    pub(crate) fn count_exclusive(&self, one: usize, other: usize) -> usize {
        self.matching(|bits| has(bits, one) && !has(bits, other)).count()
    }

    /// Commits that carry both bits `one` and `other` and not bit `below` (the best common ancestors when the walk
    /// relayed `below` from every commit carrying both: see [`super::merge_bases`]), newest committer date first
    /// (then by id).
    pub(crate) fn common_not_below(&self, one: usize, other: usize, below: usize) -> Vec<ObjectId> {
        let mut found: Vec<_> = self
            .matching(|bits| has(bits, one) && has(bits, other) && !has(bits, below))
            .map(|(id, commit)| (std::cmp::Reverse(commit.commit_time), *id))
            .collect();
        found.sort_unstable();
        found.into_iter().map(|(_, id)| id).collect()
    }

    /// Commits that bit `one` reaches and none of `others` does, highest generation number first, then newest
    /// committer date (then by id).
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

/// The walk's moving parts.
struct Walk<'a> {
    words: usize,
    full: Vec<u64>,
    table: Vec<u64>,
    queue: gix::revwalk::PriorityQueue<(u32, i64), ObjectId>,
    /// Queued commits that are not settled (see [`settled`]): the walk goes on while there is one.
    unsettled: usize,
    known: &'a Known<'a>,
}

impl Walk<'_> {
    /// Adds `bits` to the bits of commit `id` (read on first sight) and queues it when they grew.
    fn hand_on(
        &mut self,
        graph: &mut gix::revwalk::Graph<'_, '_, gix::revwalk::graph::Commit<Node>>,
        id: ObjectId,
        bits: &[u64],
    ) -> Result<()> {
        let words = self.words;
        let inserted = graph.get_or_insert_full_commit(id, |commit| {
            if commit.data.slot == u32::MAX {
                commit.data.slot = u32::try_from(self.table.len() / words).unwrap_or(u32::MAX - 1);
                commit.data.generation = self.known.of(&id, commit.generation);
                self.table.resize(self.table.len() + words, 0);
            }
            let slot = commit.data.slot as usize * words;
            let generation = commit.data.generation;
            let have = &mut self.table[slot..slot + words];
            let was_settled = settled(have, &self.full, generation);
            let mut grew = false;
            for (have, add) in have.iter_mut().zip(bits) {
                grew |= add & !*have != 0;
                *have |= add;
            }
            if !grew {
                return;
            }
            let now_settled = settled(&self.table[slot..slot + words], &self.full, generation);
            if !commit.data.queued {
                commit.data.queued = true;
                self.queue.insert((generation.unwrap_or(u32::MAX), commit.commit_time), id);
                if !now_settled {
                    self.unsettled += 1;
                }
            } else if !was_settled && now_settled {
                self.unsettled -= 1;
            }
        });
        inserted.map(|_| ()).map_err(|err| Error::git("commit", err))
    }
}
