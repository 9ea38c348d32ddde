//! Commit ancestry as git reads it (design.md#roots): in a shallow clone, the commits listed in
//! `.git/shallow` (the boundary) have no parents, whether or not their parents' objects happen to
//! be present, exactly as git's own walks (`git log`, `git rev-list`, `git merge-base`) treat them.
//!
//! Every history walk of the engine takes its parents from [`Shallow::parents`]; counts and
//! exclusive commits go through [`ahead_behind`] and [`exclusive`], one walk of all the tips
//! together that is exact whatever the commit dates ([`reach`]); merge bases through
//! [`merge_bases`], the same walk with a bit for "below a common commit".

use std::collections::HashSet;

use gix::ObjectId;

use crate::error::{Error, Result};

pub(crate) mod generations;
pub(crate) mod paint;
pub(crate) mod reach;

/// Saves the generation tables of every repository counted in (see [`generations`]) under `dir`
/// (`<run dir>/generations` for the sidecar), one file per repository, so that a later process
/// loads them instead of reading each history again; `None` keeps them in memory only (the
/// default). Process-wide, as the tables are. Nothing is written to a repository.
pub fn keep_generation_tables_in(dir: Option<std::path::PathBuf>) {
    generations::saved::keep_in(dir);
}

/// Waits until every generation table queued for saving is written (the writer thread runs off the
/// calls' path). Dropping an [`crate::Engine`] that saves them does it too; for tests and
/// benchmarks.
pub fn flush_generation_tables() {
    generations::saved::flush();
}

/// Drops every generation table held in memory, as a new process starts without them (saved files
/// stay): for tests and benchmarks.
pub fn forget_generation_tables() {
    generations::forget();
}

/// How many commits the engine numbered by reading them (not loaded from a saved table, not taken
/// from a commit-graph) since the process started: a measure of history reads, for tests and
/// benchmarks.
pub fn numbered_commits() -> u64 {
    generations::numbered()
}

/// How many commits the exact walks (counts, merge bases, branch placement, and the check for a
/// linear history that spares counts the walk) read from the object database or a commit-graph
/// since the process started, rather than taking them from a generation table (which keeps each
/// numbered commit's parents and date): for tests and benchmarks.
pub fn walk_reads() -> u64 {
    generations::walk_reads()
}

/// The file the generation table of the repository whose common dir is `common_dir` is saved in;
/// `None` when tables are kept in memory only. For tests.
pub fn generation_table_file(common_dir: &std::path::Path) -> Option<std::path::PathBuf> {
    generations::saved_file(common_dir)
}

/// The shallow boundary of a repository: empty for a complete one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shallow {
    /// The boundary commits, sorted for binary search.
    boundary: Vec<ObjectId>,
}

impl Shallow {
    /// Reads `.git/shallow` (through gix, which keeps it cached until the file changes).
    ///
    /// # Errors
    /// [`Error::GitRead`] when the file exists but cannot be read or parsed.
    pub fn read(repo: &gix::Repository) -> Result<Self> {
        let commits = repo.shallow_commits().map_err(|err| Error::git("the shallow boundary (.git/shallow)", err))?;
        let mut boundary: Vec<ObjectId> = commits.map(|commits| commits.iter().copied().collect()).unwrap_or_default();
        boundary.sort_unstable();
        Ok(Self { boundary })
    }

    /// Whether the repository is a shallow clone (its history is cut at [`Shallow::boundary`]).
    pub fn is_shallow(&self) -> bool {
        !self.boundary.is_empty()
    }

    /// Whether `id` is a boundary commit: git shows it without parents (`git log --format=%P`
    /// prints nothing).
    pub fn is_boundary(&self, id: &gix::oid) -> bool {
        self.boundary.binary_search_by(|probe| probe.as_ref().cmp(id)).is_ok()
    }

    /// The boundary commits, sorted by id.
    pub fn boundary(&self) -> &[ObjectId] {
        &self.boundary
    }

    /// The parents of `commit` as git walks them: none for a boundary commit, else the recorded
    /// ones in order.
    pub fn parents(&self, commit: &gix::Commit<'_>) -> Vec<ObjectId> {
        if self.is_boundary(&commit.id) {
            return Vec::new();
        }
        commit.parent_ids().map(gix::Id::detach).collect()
    }

    /// The parents of the commit `id` (see [`Shallow::parents`]).
    ///
    /// # Errors
    /// [`Error::GitRead`] when the commit cannot be read.
    pub fn parents_of(&self, repo: &gix::Repository, id: ObjectId) -> Result<Vec<ObjectId>> {
        if self.is_boundary(&id) {
            return Ok(Vec::new());
        }
        let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
        Ok(self.parents(&commit))
    }

    /// Every commit reachable from `tips` (the tips included), stopping at the boundary.
    ///
    /// # Errors
    /// [`Error::GitRead`] when a commit cannot be read.
    pub fn ancestors(&self, repo: &gix::Repository, tips: &[ObjectId]) -> Result<HashSet<ObjectId>> {
        let mut seen: HashSet<ObjectId> = tips.iter().copied().collect();
        let mut stack: Vec<ObjectId> = seen.iter().copied().collect();
        while let Some(id) = stack.pop() {
            for parent in self.parents_of(repo, id)? {
                if seen.insert(parent) {
                    stack.push(parent);
                }
            }
        }
        Ok(seen)
    }
}

/// Commits `one` has that `other` lacks, and the other way round
/// (`git rev-list --left-right --count one...other`), from one walk of both histories, exact
/// whatever the commit dates (see [`reach`]); the shallow boundary cuts both walks as git's does.
/// Equal tips, and tips a few single-parent commits above a common one, are answered without that
/// walk ([`linear_ahead_behind`]), so without a commit-graph the commonest upstream counts (in
/// sync, ahead, behind or both, on a linear history) never number the whole history.
///
/// # Errors
/// [`Error::GitRead`] when a commit cannot be read.
pub fn ahead_behind(repo: &gix::Repository, one: ObjectId, other: ObjectId) -> Result<(usize, usize)> {
    if let Some(counts) = linear_ahead_behind(repo, one, other) {
        return Ok(counts);
    }
    let reach = reach::Reach::walk(repo, &[(one, 0), (other, 1)], 2)?;
    Ok((reach.count_exclusive(0, 1), reach.count_exclusive(1, 0)))
}

/// Commits [`linear_ahead_behind`] reads at most on each side before it leaves the counts to the
/// full walk.
const LINEAR_STEPS: usize = 256;

/// The counts of [`ahead_behind`] without generation numbers, for the commonest shapes: equal tips,
/// or each tip reaching a common commit (the fork) through at most [`LINEAR_STEPS`] commits that
/// each have exactly one parent (as git walks them: a shallow boundary commit has none); one of the
/// two chains may be empty (one tip above the other). `None` for any other shape, and when a commit
/// cannot be read (the full walk then decides and reports).
pub(crate) fn linear_ahead_behind(repo: &gix::Repository, one: ObjectId, other: ObjectId) -> Option<(usize, usize)> {
    single_parent_fork(repo, one, other).map(|(ahead, behind, _)| (ahead, behind))
}

/// The fork of `one` and `other` when each reaches it through at most [`LINEAR_STEPS`] commits of
/// exactly one parent: how many commits lead from `one` down to it, how many from `other`, and the
/// fork itself (which may have any number of parents). `None` for any other shape or when a commit
/// cannot be read.
///
/// Why it is exact whatever the dates: write `one = a0`, `a(i+1)` the only parent of `ai`,
/// `an = f`, and `other = b0 .. bm = f` alike, with no `bj` (j < m) among the `ai`: the history of
/// `one` is `a0..a(n-1)` plus the history of `f`, that of `other` is `b0..b(m-1)` plus the history
/// of `f`. No `ai` (i < n) is in the history of `f` (it descends from `f`, and history has no
/// cycles), nor is it a `bj`: `one` has exactly `n` commits `other` lacks, `other` exactly `m` that
/// `one` lacks, and their common history is `f`'s, so `f` is their one merge base. The two chains
/// are read in turns and the first commit found in both is `f`: below it they are the same chain
/// (each commit has one parent), so every other commit they share is found later.
fn single_parent_fork(repo: &gix::Repository, one: ObjectId, other: ObjectId) -> Option<(usize, usize, ObjectId)> {
    if one == other {
        return Some((0, 0, one));
    }
    let shallow = Shallow::read(repo).ok()?;
    let generations = generations::Generations::open(repo, &shallow).ok()?;
    let known = generations.known();
    // Per side: each commit read so far with its distance from the tip, and the next commit to read (`None` once
    // the chain reached a commit without exactly one parent, or LINEAR_STEPS commits below the tip).
    let mut chains: [std::collections::HashMap<ObjectId, usize>; 2] = Default::default();
    let mut next = [Some(one), Some(other)];
    while next.iter().any(Option::is_some) {
        for side in 0..2 {
            let Some(id) = next[side] else { continue };
            let distance = chains[side].len();
            if let Some(&there) = chains[1 - side].get(&id) {
                return Some(if side == 0 { (distance, there, id) } else { (there, distance, id) });
            }
            chains[side].insert(id, distance);
            // Parents from the generation table when it keeps them.
            let parents = match known.commit::<()>(&id) {
                Some(commit) => commit.parents.to_vec(),
                None => {
                    generations::count_walk_read();
                    shallow.parents_of(repo, id).ok()?
                }
            };
            next[side] = match parents[..] {
                [parent] if distance < LINEAR_STEPS => Some(parent),
                _ => None,
            };
        }
    }
    None
}

/// Counts commits reachable from `from` but not from `hidden`
/// (`git rev-list --count hidden..from`): the first of [`ahead_behind`].
///
/// # Errors
/// [`Error::GitRead`] when a commit cannot be read.
pub fn count_exclusive(repo: &gix::Repository, from: ObjectId, hidden: ObjectId) -> Result<usize> {
    Ok(ahead_behind(repo, from, hidden)?.0)
}

/// The best common ancestors of `one` and `others` taken together, as
/// `git merge-base --all one others...`: newest committer date first (then by id); empty when the
/// histories share no commit (also when the shallow boundary cuts them apart, as git answers).
/// `one` itself when `others` is empty or holds it.
///
/// Exact whatever the commit dates: one walk of [`reach`] with a bit for `one`, a bit for `others`
/// and a third bit that a commit carrying both hands on to its parents (they are below a common
/// commit, so none is a best one). The walk pops commits in generation order, so a popped commit's
/// bits are final (the argument of [`reach`]): the best common ancestors are the popped commits
/// with both bits and without the third, and the walk may stop once every queued commit carries all
/// three (every commit left unread is below a common one). gix's date-ordered merge-base meets a
/// common commit before a common descendant dated earlier, and its check for redundant bases
/// follows only first parents below them, so it can answer a commit that is an ancestor of another
/// base. When both tips are a few single-parent commits above a common one (`single_parent_fork`,
/// one side possibly none), that commit is the answer and no numbering is needed.
///
/// # Errors
/// [`Error::GitRead`] when a commit cannot be read.
pub fn merge_bases(repo: &gix::Repository, one: ObjectId, others: &[ObjectId]) -> Result<Vec<ObjectId>> {
    if others.is_empty() || others.contains(&one) {
        return Ok(vec![one]);
    }
    if let [other] = others
        && let Some((_, _, fork)) = single_parent_fork(repo, one, *other)
    {
        return Ok(vec![fork]);
    }
    const ONE: usize = 0;
    const OTHERS: usize = 1;
    const BELOW_COMMON: usize = 2;
    let mut tips = vec![(one, ONE)];
    tips.extend(others.iter().map(|id| (*id, OTHERS)));
    let reach = reach::Reach::walk_relaying(repo, &tips, 3, |bits| {
        if paint::has(bits, ONE) && paint::has(bits, OTHERS) {
            paint::set(bits, BELOW_COMMON);
        }
    })?;
    Ok(reach.common_not_below(ONE, OTHERS, BELOW_COMMON))
}

/// The first of [`merge_bases`] of `one` and `two`, `None` when they share no history.
///
/// # Errors
/// As [`merge_bases`].
pub fn merge_base(repo: &gix::Repository, one: ObjectId, two: ObjectId) -> Result<Option<ObjectId>> {
    Ok(merge_bases(repo, one, &[two])?.into_iter().next())
}

/// The commits reachable from `from` and from none of `hidden`
/// (`git rev-list from --not hidden...`), at most `cap` of them, newest first (highest generation
/// number, then newest committer date), exact whatever the commit dates (see [`reach`]), with the
/// shallow boundary cutting the walks as git's does.
///
/// # Errors
/// [`Error::GitRead`] when a commit cannot be read.
pub fn exclusive(repo: &gix::Repository, from: ObjectId, hidden: &[ObjectId], cap: usize) -> Result<Vec<ObjectId>> {
    if hidden.contains(&from) || cap == 0 {
        return Ok(Vec::new());
    }
    let mut tips = vec![(from, 0)];
    tips.extend(hidden.iter().map(|id| (*id, 1)));
    let mut commits = reach::Reach::walk(repo, &tips, 2)?.exclusive(0, &[1]);
    commits.truncate(cap);
    Ok(commits)
}
