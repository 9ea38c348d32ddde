//! The bit painting that the engine's exact history walks share ([`super::reach`],
//! `branch_stack::placement`): each tip has a bit, a commit's bits are those handed to it, and
//! commits wait in a queue ordered by generation number, then committer date.
//!
//! What the walks' exactness arguments rely on, and this type guarantees: a commit's bits only grow
//! (handed bits are OR-ed in); a commit is queued whenever its bits grow while it is not queued,
//! also after it was popped, so bits handed late still travel on; the queue pops the highest
//! generation number first (a commit without one first of all), then the newest committer date; a
//! commit is read once, on the first bits handed to it (from the generation table when it keeps the
//! commit's parents and date, which the numbering took from the same commit, else from the
//! commit-graph or the object database), and a commit that does not exist (beyond a shallow
//! boundary) is skipped, as git's walks skip it. What a walk hands on, and when it stops, is the
//! walk's own (see each walk's documentation); the type only counts, for the stop rules, the queued
//! commits that are not settled (settled: carrying every bit, and numbered) and whether a commit
//! without a number was queued.

use gix::ObjectId;
use gix::revwalk::graph::{Commit, IdMap};

use super::generations::Known;
use crate::error::{Error, Result};

/// Per commit of a walk: where its bits sit in the bit table, its generation number, whether it
/// waits in the queue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Node {
    slot: u32,
    /// The generation number ([`Known::of`]), `None` for a commit below no numbered tip (never
    /// expected).
    pub(crate) generation: Option<u32>,
    queued: bool,
}

impl Default for Node {
    fn default() -> Self {
        Self { slot: u32::MAX, generation: None, queued: false }
    }
}

/// Whether `bits` holds bit `bit`.
pub(crate) fn has(bits: &[u64], bit: usize) -> bool {
    bits[bit / 64] & (1 << (bit % 64)) != 0
}

/// Adds bit `bit` to `bits`.
pub(crate) fn set(bits: &mut [u64], bit: usize) {
    bits[bit / 64] |= 1 << (bit % 64);
}

/// A walk in progress: the commits read, their bits and the queue.
pub(crate) struct Paint<'walk> {
    graph: gix::revwalk::Graph<'walk, 'walk, Commit<Node>>,
    known: &'walk Known<'walk>,
    words: usize,
    /// Every bit: a commit carrying all of them (and numbered) is settled.
    full: Vec<u64>,
    table: Vec<u64>,
    queue: gix::revwalk::PriorityQueue<(u32, i64), ObjectId>,
    unsettled: usize,
    /// Whether `unsettled` is kept (a walk whose stop rule does not use it spares the comparisons).
    counting: bool,
    unnumbered: bool,
}

impl<'walk> Paint<'walk> {
    /// A walk over `bits` bits reading commits through `commit_graph` (the one `known`'s numbers
    /// agree with).
    pub(crate) fn new(
        repo: &'walk gix::Repository,
        commit_graph: Option<&'walk gix::commitgraph::Graph>,
        known: &'walk Known<'walk>,
        bits: usize,
    ) -> Self {
        let words = bits.div_ceil(64).max(1);
        let mut full = vec![0_u64; words];
        for bit in 0..bits {
            set(&mut full, bit);
        }
        Self {
            graph: repo.revision_graph(commit_graph),
            known,
            words,
            full,
            table: Vec::new(),
            queue: gix::revwalk::PriorityQueue::new(),
            unsettled: 0,
            counting: true,
            unnumbered: false,
        }
    }

    /// The same walk without the count of unsettled commits ([`Paint::unsettled`] stays 0): for a
    /// walk whose stop rule is its own.
    pub(crate) fn without_settled_count(mut self) -> Self {
        self.counting = false;
        self
    }

    /// An empty set of bits of this walk.
    pub(crate) fn empty(&self) -> Vec<u64> {
        vec![0; self.words]
    }

    /// Queued commits that are not settled (not carrying every bit, or without a generation
    /// number); 0 when not counted ([`Paint::without_settled_count`]).
    pub(crate) fn unsettled(&self) -> usize {
        self.unsettled
    }

    /// Whether a commit without a generation number was queued.
    pub(crate) fn unnumbered(&self) -> bool {
        self.unnumbered
    }

    /// Adds `bits` to the bits of commit `id` (read on first sight; skipped when it does not exist)
    /// and queues it when they grew and it is not queued.
    ///
    /// # Errors
    /// [`Error::GitRead`] when the commit cannot be read.
    pub(crate) fn hand_on(&mut self, id: ObjectId, bits: &[u64]) -> Result<()> {
        let Self { graph, known, words, full, table, queue, unsettled, counting, unnumbered } = self;
        let (words, counting) = (*words, *counting);
        if !graph.contains(&id) {
            match known.commit(&id) {
                Some(commit) => drop(graph.insert(id, commit)),
                None => super::generations::count_walk_read(),
            }
        }
        let inserted = graph.get_or_insert_full_commit(id, |commit| {
            if commit.data.slot == u32::MAX {
                commit.data.slot = u32::try_from(table.len() / words).unwrap_or(u32::MAX - 1);
                commit.data.generation = known.of(&id, commit.generation);
                table.resize(table.len() + words, 0);
            }
            let slot = commit.data.slot as usize * words;
            let generation = commit.data.generation;
            let have = &mut table[slot..slot + words];
            let was_settled = counting && settled(have, full, generation);
            let mut grew = false;
            for (have, add) in have.iter_mut().zip(bits) {
                grew |= add & !*have != 0;
                *have |= add;
            }
            if !grew {
                return;
            }
            let now_settled = counting && settled(&table[slot..slot + words], full, generation);
            if !commit.data.queued {
                commit.data.queued = true;
                *unnumbered |= generation.is_none();
                queue.insert((generation.unwrap_or(u32::MAX), commit.commit_time), id);
                if counting && !now_settled {
                    *unsettled += 1;
                }
            } else if !was_settled && now_settled {
                *unsettled -= 1;
            }
        });
        inserted.map(|_| ()).map_err(|err| Error::git("commit", err))
    }

    /// Pops the next commit: returns its id, copies its bits into `bits` and its parents into
    /// `parents` (as recorded: the walk decides whether a shallow boundary hands them anything).
    pub(crate) fn pop(&mut self, bits: &mut [u64], parents: &mut Vec<ObjectId>) -> Option<ObjectId> {
        loop {
            let (_, id) = self.queue.pop()?;
            let Some(commit) = self.graph.get_mut(&id) else { continue };
            commit.data.queued = false;
            let slot = commit.data.slot as usize * self.words;
            bits.copy_from_slice(&self.table[slot..slot + self.words]);
            if self.counting && !settled(bits, &self.full, commit.data.generation) {
                self.unsettled -= 1;
            }
            parents.clear();
            parents.extend(commit.parents.iter().copied());
            return Some(id);
        }
    }

    /// Ends the walk: every commit read, with its bits.
    pub(crate) fn finish(self) -> Painted {
        Painted { words: self.words, commits: self.graph.detach(), table: self.table }
    }
}

/// Whether a commit is settled for the stop rules: it carries every bit and has a generation
/// number.
fn settled(bits: &[u64], full: &[u64], generation: Option<u32>) -> bool {
    generation.is_some() && bits == full
}

/// A finished walk: every commit read, with its bits.
pub(crate) struct Painted {
    words: usize,
    commits: IdMap<Commit<Node>>,
    table: Vec<u64>,
}

impl Painted {
    /// Every commit read, with its bits.
    pub(crate) fn commits(&self) -> impl Iterator<Item = (&ObjectId, &Commit<Node>, &[u64])> {
        self.commits.iter().map(|(id, commit)| {
            let slot = commit.data.slot as usize * self.words;
            (id, commit, &self.table[slot..slot + self.words])
        })
    }
}
