//! Where every other branch stands against the examined tip and the base, from one walk of all
//! their histories together, instead of a walk of the whole examined history plus one walk per
//! branch.
//!
//! Each tip gets a bit: the examined tip (`EXAMINED`), the base (`BASE`), the fork point of the two
//! (`FORK`, their merge base) and one per branch. A commit's flags are the bits of the tips it was
//! found to be reachable from. The walk pops commits highest generation number first (the
//! commit-graph's, else the engine's table: see `ancestry::generations`), then newest committer
//! date, and hands each parent only the bits that can still tell something (below); the answers are
//! read from the flags at the tips once nothing is left to hand on. A commit's parents are read
//! only when it hands a bit on, so history below the place where every question was settled is
//! never read.
//!
//! Exact whatever the order (skewed clocks, no commit-graph): flags only grow; a commit whose flags
//! grew after it was popped is queued again; and a bit is held back only where it can tell nothing
//! new, because a commit that already carries tip j's bit is an ancestor of tip j, so none of its
//! ancestors is tip j (histories have no cycles), or because the question it served is settled. The
//! order only decides how many commits are popped twice.
//!
//! Where the order settles more: every commit below the tips has a generation number, and in that
//! order a popped commit's flags are final (the argument of `ancestry::reach`: each child a tip
//! reaches is numbered higher, so it was popped, and handed its bits on, before). A bit withheld on
//! a path to a tip is never one its question needs: the commits on a path from tip i down to tip j
//! are strict descendants of j, so they lack j's bit and keep seeking while j's question is open.
//! So when a tip is popped, what its flags lack they never get: the examined tip's missing branch
//! bits settle "not above", a branch tip's missing examined (base) bit settles "not below the
//! examined tip" ("not below the base"). Without this the walk had to go on to the roots to learn a
//! "no" (the examined bit kept seeking branches that are not below it), reading the whole history
//! on every call. Should a commit have no number (never expected), the walk is made again without
//! settling anything by order.
//!
//! The flags, the queue and its order are `ancestry::paint::Paint`'s (shared with
//! `ancestry::reach`): it keeps the properties this argument uses (flags only grow, a commit is
//! queued again when they grow, generation number first, then date).

use gix::ObjectId;

use crate::ancestry::Shallow;
use crate::ancestry::generations::Generations;
use crate::ancestry::paint::{Paint, has, set};
use crate::error::Result;

/// How one branch tip relates to the examined tip and the base.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Place {
    /// The branch tip is an ancestor of the examined tip (or the same commit).
    pub(super) below_examined: bool,
    /// The branch tip is an ancestor of the base tip (or the same commit); computed when a base is
    /// given.
    pub(super) below_base: bool,
    /// The examined tip is an ancestor of the branch tip (or the same commit).
    pub(super) above_examined: bool,
    /// The fork point is a parent of a commit that the branch has and the base lacks: the branch
    /// left the base's history at the fork point. Computed when a base and a fork point are given,
    /// and exact only for a branch neither below nor above the examined tip (the only ones it is
    /// asked of).
    pub(super) leaves_at_fork: bool,
}

/// The base of the comparison: its tip and the fork point (the examined tip's merge base with it,
/// if any).
#[derive(Debug, Clone, Copy)]
pub(super) struct BaseTips {
    pub(super) tip: ObjectId,
    pub(super) fork: Option<ObjectId>,
}

/// Bit of the examined tip.
const EXAMINED: usize = 0;
/// Bit of the base tip.
const BASE: usize = 1;
/// Bit of the fork point.
const FORK: usize = 2;
/// Bit of the first branch; branch `idx` has bit `FIRST_BRANCH + idx`.
const FIRST_BRANCH: usize = 3;

/// A set of bits over every tip, `words` 64-bit words long.
type Bits = Vec<u64>;

fn clear(bits: &mut [u64], bit: usize) {
    bits[bit / 64] &= !(1 << (bit % 64));
}

fn is_empty(bits: &[u64]) -> bool {
    bits.iter().all(|word| *word == 0)
}

/// Whether `wanted` has a bit that `flags` lacks.
fn lacks_one_of(flags: &[u64], wanted: &[u64]) -> bool {
    flags.iter().zip(wanted).any(|(flags, wanted)| wanted & !flags != 0)
}

/// The questions still open, one bit per branch (branch bits only).
struct Open {
    /// Is the branch below the examined tip?
    below_examined: Bits,
    /// Is the branch below the base tip?
    below_base: Bits,
    /// Is the examined tip below the branch?
    above_examined: Bits,
    /// Might the branch's fork point still matter (it is neither below nor above the examined tip
    /// so far)?
    leaves_at_fork: Bits,
}

/// Places every tip of `branches` against `examined` and `base`: one [`Place`] per branch, in
/// order. Parents are read as git walks them (none for a shallow boundary commit); the commit-graph
/// is used when the repository has one and is not shallow (a read never writes one).
///
/// # Errors
/// [`Error::GitRead`] when a commit cannot be read.
pub(super) fn place(
    repo: &gix::Repository,
    shallow: &Shallow,
    examined: ObjectId,
    base: Option<BaseTips>,
    branches: &[ObjectId],
) -> Result<Vec<Place>> {
    match place_walk(repo, shallow, examined, base, branches, true)? {
        Some(places) => Ok(places),
        // A commit without a generation number (never expected): no answer is settled by the order.
        None => Ok(place_walk(repo, shallow, examined, base, branches, false)?.unwrap_or_default()),
    }
}

/// The walk of [`place`]. With `by_order`, a tip's negative answers are settled when it is popped
/// (exact when every commit walked has a generation number; `None` is returned as soon as one has
/// none).
fn place_walk(
    repo: &gix::Repository,
    shallow: &Shallow,
    examined: ObjectId,
    base: Option<BaseTips>,
    branches: &[ObjectId],
    by_order: bool,
) -> Result<Option<Vec<Place>>> {
    let bits = FIRST_BRANCH + branches.len();
    let words = bits.div_ceil(64);
    let empty = || vec![0_u64; words];
    let mut places = vec![Place::default(); branches.len()];
    let fork = base.and_then(|base| base.fork);
    let mut open =
        Open { below_examined: empty(), below_base: empty(), above_examined: empty(), leaves_at_fork: empty() };
    for idx in 0..branches.len() {
        let bit = FIRST_BRANCH + idx;
        set(&mut open.below_examined, bit);
        set(&mut open.above_examined, bit);
        if base.is_some() {
            set(&mut open.below_base, bit);
        }
        if fork.is_some() {
            set(&mut open.leaves_at_fork, bit);
        }
    }

    // The tips, each with its own bit.
    let mut starts: Vec<(ObjectId, usize)> = vec![(examined, EXAMINED)];
    if let Some(base) = base {
        starts.push((base.tip, BASE));
        if let Some(fork) = base.fork {
            starts.push((fork, FORK));
        }
    }
    starts.extend(branches.iter().enumerate().map(|(idx, id)| (*id, FIRST_BRANCH + idx)));
    let generations = Generations::open(repo, shallow)?;
    let start_ids: Vec<ObjectId> = starts.iter().map(|(id, _)| *id).collect();
    let known = generations.number(repo, shallow, &start_ids)?;
    let mut walk = Paint::new(repo, generations.commit_graph(), &known, bits).without_settled_count();
    // Which branches sit at which commit, to settle their questions when that commit's flags grow.
    let mut branches_at: std::collections::HashMap<ObjectId, Vec<usize>> = std::collections::HashMap::new();
    for (idx, id) in branches.iter().enumerate() {
        branches_at.entry(*id).or_default().push(idx);
    }
    for (id, bit) in starts {
        let mut bits = empty();
        set(&mut bits, bit);
        walk.hand_on(id, &bits)?;
    }

    let mut flags = empty();
    let mut send = empty();
    let mut parents = Vec::new();
    while let Some(id) = walk.pop(&mut flags, &mut parents) {
        if by_order && walk.unnumbered() {
            return Ok(None);
        }

        // Settle what the flags of a tip tell.
        if id == examined {
            for (idx, place) in places.iter_mut().enumerate() {
                let bit = FIRST_BRANCH + idx;
                if has(&flags, bit) && has(&open.above_examined, bit) {
                    place.above_examined = true;
                    clear(&mut open.above_examined, bit);
                    clear(&mut open.leaves_at_fork, bit);
                }
            }
        }
        if let Some(at) = branches_at.get(&id) {
            for &idx in at {
                let bit = FIRST_BRANCH + idx;
                if has(&flags, EXAMINED) && has(&open.below_examined, bit) {
                    places[idx].below_examined = true;
                    clear(&mut open.below_examined, bit);
                    // Below the examined tip, it is above it only when it is the same commit (settled above).
                    clear(&mut open.above_examined, bit);
                    clear(&mut open.leaves_at_fork, bit);
                }
                if has(&flags, BASE) && has(&open.below_base, bit) {
                    places[idx].below_base = true;
                    clear(&mut open.below_base, bit);
                }
            }
        }
        // In generation order a popped commit's flags are final (see the module documentation), so what a tip's
        // flags lack when it is popped it never gets: its open questions are settled as "no".
        if by_order {
            if id == examined {
                for (open, flags) in open.above_examined.iter_mut().zip(&flags) {
                    *open &= flags;
                }
            }
            for &idx in branches_at.get(&id).into_iter().flatten() {
                let bit = FIRST_BRANCH + idx;
                if !has(&flags, EXAMINED) {
                    clear(&mut open.below_examined, bit);
                }
                if !has(&flags, BASE) {
                    clear(&mut open.below_base, bit);
                }
            }
        }
        if shallow.is_boundary(&id) {
            continue;
        }

        // The bits worth handing on.
        send.fill(0);
        let seeks = |open: &Bits| lacks_one_of(&flags, open);
        // The examined tip's bit looks for branches below it, and marks where a branch's own walk can stop looking
        // for the examined tip.
        if has(&flags, EXAMINED) && (seeks(&open.below_examined) || seeks(&open.above_examined)) {
            set(&mut send, EXAMINED);
        }
        let fork_matters = !is_empty(&open.leaves_at_fork);
        // The base's bit looks for branches below the base, and marks the commits the base has above the fork
        // point (those a branch's own commits stop at).
        if has(&flags, BASE) && (seeks(&open.below_base) || (fork_matters && !has(&flags, FORK))) {
            set(&mut send, BASE);
        }
        // A branch's bit looks for the examined tip, marks where the examined tip's and the base's walks can stop,
        // and walks the commits the branch has and the base lacks, down to the fork point.
        for word in 0..words {
            let mut wanted = 0;
            if !has(&flags, EXAMINED) {
                wanted |= open.below_examined[word] | open.above_examined[word];
            }
            if !has(&flags, BASE) {
                wanted |= open.below_base[word];
                if !has(&flags, FORK) {
                    wanted |= open.leaves_at_fork[word];
                }
            }
            send[word] |= flags[word] & wanted;
        }
        // The fork point's bit rides along with the others, marking the fork point's ancestors, where the base's
        // and the branches' walks above stop.
        if has(&flags, FORK) && fork_matters && !is_empty(&send) {
            set(&mut send, FORK);
        }
        if is_empty(&send) {
            continue;
        }
        for parent in &parents {
            walk.hand_on(*parent, &send)?;
        }
    }

    // A branch leaves the base at the fork point when a commit it has and the base lacks has the fork point as a
    // parent.
    if let Some(fork) = fork {
        for (id, commit, flags) in walk.finish().commits() {
            if shallow.is_boundary(id) || !commit.parents.contains(&fork) {
                continue;
            }
            if has(flags, BASE) {
                continue;
            }
            for (idx, place) in places.iter_mut().enumerate() {
                place.leaves_at_fork |= has(flags, FIRST_BRANCH + idx);
            }
        }
    }
    Ok(Some(places))
}
