//! `repo.conflictPreflight` (design.md#tools, issue 5): the outcome of merging `targetRef` into
//! `currentRef`, and of rebasing `currentRef` onto `targetRef` commit by commit, predicted with
//! gix's merge on an in-memory object store.
//!
//! Nothing is written: the merge runs on a clone of the repository handle whose object writes go to
//! memory (`with_object_memory`), no ref, index or work-tree file is touched, and the repository's
//! own merge drivers (`merge.<name>.driver`, programs) are removed from that clone's in-memory
//! configuration, so Git's built-in text merge stands in for them (the result says so in
//! `caveats`).

use std::collections::{BTreeMap, HashMap, HashSet};

use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use gix::merge::blob::builtin_driver::text::Labels;
use gix::merge::tree::TreatAsUnresolved;
use serde::Serialize;

pub use super::paths::{MAX_REGIONS_PER_PATH, PathConflict};
use super::state::{Activity, Stages};
use super::{CommitInfo, TouchingCommit, commit_info, paths, touching};
use crate::ancestry::Shallow;
use crate::budget::{Budgeted, Omitted};
use crate::error::{Error, Result};
use crate::facets::utf8;
use crate::revision::resolve_commit;

/// Knobs of [`read`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Most conflicting paths listed per prediction (merge, rebase stop); counts stay exact.
    pub max_paths: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self { max_paths: 100 }
    }
}

/// Most commits a rebase prediction replays; a longer rebase is reported as `too-many-commits`,
/// unpredicted.
pub const MAX_REPLAY: usize = 1000;

/// What the result says about itself.
pub const NOTE: &str = "Prediction computed in memory with gix's merge: no object, ref, index or work-tree file was \
written. Git itself may differ where merge drivers, rerere or uncommitted local changes come into play.";

/// The prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preflight {
    /// An operation Git stopped in the middle of, said first because it changes what the prediction
    /// means: it starts from the commits as they are, not from the unfinished result; default
    /// `null` (none in progress).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_progress: Option<InProgress>,
    /// Always `true`: this is a prediction, nothing was merged.
    pub prediction: bool,
    /// How it was computed and what it cannot see.
    pub note: &'static str,
    /// The branch that would receive the merge, or be rebased (`currentRef`, default `HEAD`).
    pub current: Side,
    /// The branch merged in, or rebased onto (`targetRef`).
    pub target: Side,
    /// The merge bases of the two (full shas); two or more for a criss-cross history.
    pub merge_bases: Vec<String>,
    /// `git merge <target>` on `<current>`.
    pub merge: MergePrediction,
    /// `git rebase <target>` of `<current>`.
    pub rebase: RebasePrediction,
    /// Reasons the prediction may differ from Git (e.g. a custom merge driver that was not run).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
    /// The repository is a shallow clone: merge bases are looked for only down to the commits
    /// listed in `.git/shallow` (as git does), so histories forked beyond it are
    /// `unrelated-histories`; absent when `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shallow: bool,
}

/// An operation in progress in the repository, as `conflict.read` names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InProgress {
    /// The operation (`merge`, `rebase`, `cherry-pick`, `revert`, `am`, `bisect`, or `stash-apply`,
    /// inferred from unmerged paths no state file explains).
    pub operation: Activity,
    /// The state file it was recognised by (`MERGE_HEAD`, `rebase-merge/`, ...), or why it was
    /// inferred.
    pub evidence: String,
    /// Paths the index holds unmerged now; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub unmerged: usize,
    /// One sentence: what is in progress, what the prediction starts from, what finishes or undoes
    /// it.
    pub message: String,
}

/// One side of the prediction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Side {
    /// The revision as given.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The commit it names.
    #[serde(flatten)]
    pub commit: CommitInfo,
}

/// The merge verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MergeStatus {
    /// The merge completes without conflicts.
    Clean,
    /// The merge stops with conflicts.
    Conflicted,
    /// `target` is already contained in `current`: nothing to merge.
    UpToDate,
    /// `current` is contained in `target`: Git would fast-forward.
    FastForward,
    /// No common history: Git refuses without `--allow-unrelated-histories`.
    UnrelatedHistories,
}

/// The predicted merge.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MergePrediction {
    /// The verdict.
    pub status: MergeStatus,
    /// Exact number of conflicting paths; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub conflict_count: usize,
    /// Conflicting paths in path order, at most `maxPaths`; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<PathConflict>,
}

/// The rebase verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RebaseStatus {
    /// Every commit replays without conflicts.
    Clean,
    /// A commit would stop the rebase (see `stopsAt`).
    Stops,
    /// `target` is already the base of `current`: Git reports it up to date.
    UpToDate,
    /// `current` is contained in `target`: Git fast-forwards it.
    FastForward,
    /// More than [`MAX_REPLAY`] commits to replay (or the caller's bound): not predicted (`commits`
    /// says how many).
    TooManyCommits,
}

/// The predicted rebase: `current`'s commits that are not in `target`, oldest first, replayed one
/// by one.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RebasePrediction {
    /// The verdict.
    pub status: RebaseStatus,
    /// Commits that would be replayed (merge commits excluded, as `git rebase` drops them);
    /// default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub commits: usize,
    /// Merge commits left out of the replay; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped_merges: usize,
    /// Replayed commits before the stop (or all) whose change is already in the target; Git drops
    /// them; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub become_empty: usize,
    /// The first commit that would stop, or `null`; default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stops_at: Option<RebaseStop>,
}

/// Where and why a rebase would stop.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RebaseStop {
    /// 1-based step, as `git rebase` counts (`Rebasing (step/total)`).
    pub step: usize,
    /// Commits in the replay.
    pub total: usize,
    /// The commit that would stop.
    pub commit: CommitInfo,
    /// Why: always `conflicts` today.
    pub reason: &'static str,
    /// Exact number of conflicting paths.
    pub conflict_count: usize,
    /// Conflicting paths in path order, at most `maxPaths`.
    pub conflicts: Vec<PathConflict>,
    /// The commits after the stop, in replay order, that change a conflicting path (against their
    /// first parent): the replay may stop again there; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub later_commits: Vec<TouchingCommit>,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

/// Predicts merge and rebase of `current` (default callers pass `HEAD`) with `target`.
///
/// # Errors
/// [`Error::Invalid`] for revisions that are not commits; [`Error::GitRead`] when the merge
/// machinery fails.
pub fn read(repo: &gix::Repository, target: &str, current: &str, options: &Options) -> Result<Budgeted<Preflight>> {
    let target_id = resolve_commit(repo, target)?;
    let current_id = resolve_commit(repo, current)?;
    let (scratch, drivers) = scratch(repo)?;
    let shallow = Shallow::read(repo)?;
    let bases = crate::ancestry::merge_bases(repo, current_id, &[target_id])?;

    let mut merge = MergePrediction { status: MergeStatus::Clean, conflict_count: 0, conflicts: Vec::new() };
    if bases.is_empty() {
        merge.status = MergeStatus::UnrelatedHistories;
    } else if bases.contains(&target_id) {
        merge.status = MergeStatus::UpToDate;
    } else if bases.contains(&current_id) {
        merge.status = MergeStatus::FastForward;
    } else {
        let labels = Labels {
            ancestor: None,
            current: Some(current.as_bytes().as_bstr()),
            other: Some(target.as_bytes().as_bstr()),
        };
        let merge_options = scratch.tree_merge_options().map_err(|err| Error::git("merge options", err))?;
        let mut outcome = scratch
            .merge_commits(current_id, target_id, labels, merge_options.into())
            .map_err(|err| Error::git("merge", err))?;
        merge.conflicts = paths::path_conflicts(&scratch, &mut outcome.tree_merge)?;
        merge.conflict_count = merge.conflicts.len();
        if merge.conflict_count > 0 {
            merge.status = MergeStatus::Conflicted;
        }
    }
    let mut rebase = rebase(&scratch, &shallow, current_id, target_id, &bases)?;

    let mut omitted = Vec::new();
    if merge.conflicts.len() > options.max_paths {
        omitted.push(("mergeConflicts", merge.conflicts.len() - options.max_paths));
        merge.conflicts.truncate(options.max_paths);
    }
    if let Some(stop) = &mut rebase.stops_at
        && stop.conflicts.len() > options.max_paths
    {
        omitted.push(("rebaseConflicts", stop.conflicts.len() - options.max_paths));
        stop.conflicts.truncate(options.max_paths);
    }
    let caveats = drivers
        .iter()
        .map(|name| {
            format!(
                "merge driver {name:?} is configured but was not run; Git's built-in text merge was predicted instead"
            )
        })
        .collect();
    let data = Preflight {
        in_progress: in_progress(repo)?,
        prediction: true,
        note: NOTE,
        current: Side { reference: current.to_owned(), commit: commit_info(repo, current_id)? },
        target: Side { reference: target.to_owned(), commit: commit_info(repo, target_id)? },
        merge_bases: bases.iter().map(ToString::to_string).collect(),
        merge,
        rebase,
        caveats,
        shallow: shallow.is_shallow(),
    };
    Ok(Budgeted { data, omitted: Omitted(omitted) })
}

/// The operation in progress, from the state files git writes (see [`super::state::detect`]).
///
/// # Errors
/// [`Error::GitRead`] when the index or a commit a state file names cannot be read.
fn in_progress(repo: &gix::Repository) -> Result<Option<InProgress>> {
    let index = repo.index_or_empty().map_err(|err| Error::git("index", err))?;
    let mut unmerged: BTreeMap<BString, Stages> = BTreeMap::new();
    for entry in index.entries() {
        let stage = entry.stage_raw() as usize;
        if (1..=3).contains(&stage) {
            unmerged.entry(entry.path(&index).to_owned()).or_default()[stage - 1] = Some((entry.mode.bits(), entry.id));
        }
    }
    let state = super::state::detect(repo, &unmerged)?;
    let Some(operation) = state.activity else { return Ok(None) };
    let evidence = state.evidence.unwrap_or_default();
    let head = repo.head_id().ok().map(|id| id.shorten_or_id().to_string()).unwrap_or_else(|| "unborn".to_owned());
    let paths = match unmerged.len() {
        0 => "no unmerged path".to_owned(),
        1 => "1 unmerged path".to_owned(),
        count => format!("{count} unmerged paths"),
    };
    let name = serde_json::to_value(operation).ok().and_then(|value| value.as_str().map(str::to_owned));
    let message = format!(
        "{} in progress ({evidence}; {paths}): this prediction starts from the commits as they are (HEAD {head}), \
         not from its unfinished result; {}",
        name.unwrap_or_default(),
        finish_or_undo(operation)
    );
    Ok(Some(InProgress { operation, evidence, unmerged: unmerged.len(), message }))
}

/// What finishes and what undoes `operation`, as git commands a person runs.
fn finish_or_undo(operation: Activity) -> &'static str {
    match operation {
        Activity::Merge => {
            "`git commit` concludes it once every path is resolved and added, `git merge --abort` undoes it"
        }
        Activity::Rebase => "`git rebase --continue` goes on once resolved and added, `git rebase --abort` undoes it",
        Activity::CherryPick => {
            "`git cherry-pick --continue` goes on once resolved and added, `git cherry-pick --abort` undoes it"
        }
        Activity::Revert => "`git revert --continue` goes on once resolved and added, `git revert --abort` undoes it",
        Activity::Am => "`git am --continue` goes on once resolved and added, `git am --abort` undoes it",
        Activity::Bisect => "`git bisect good` or `git bisect bad` marks the commit, `git bisect reset` ends it",
        Activity::StashApply => {
            "resolving and `git add` finishes it (the stash is kept: `git stash drop` once done), `git reset --merge` \
             undoes it"
        }
    }
}

/// A handle on `repo` whose object writes stay in memory and whose configuration has no merge
/// drivers; returns it with the names of the drivers removed.
pub(crate) fn scratch(repo: &gix::Repository) -> Result<(gix::Repository, Vec<String>)> {
    let mut scratch = repo.clone().with_object_memory();
    crate::objects::read_packs_first(&mut scratch, 4 * 1024 * 1024);
    let drivers: Vec<BString> = scratch
        .config_snapshot()
        .plumbing()
        .sections_by_name("merge")
        .into_iter()
        .flatten()
        .filter_map(|section| section.header().subsection_name().map(ToOwned::to_owned))
        .collect();
    if !drivers.is_empty() {
        let mut config = scratch.config_snapshot_mut();
        for name in &drivers {
            while config.remove_section("merge", Some(name.as_ref())).is_some() {}
        }
        // Re-reads cached values from the edited in-memory configuration; nothing is written to disk.
        config.commit().map_err(|err| Error::git("configuration", err))?;
    }
    let mut names: Vec<String> = drivers.iter().map(|name| utf8(name)).collect();
    names.dedup();
    Ok((scratch, names))
}

/// Replays `current`'s commits that `target` lacks onto `target`, stopping at the first unresolved
/// conflict.
fn rebase(
    repo: &gix::Repository,
    shallow: &Shallow,
    current: ObjectId,
    target: ObjectId,
    bases: &[ObjectId],
) -> Result<RebasePrediction> {
    let mut prediction = RebasePrediction {
        status: RebaseStatus::Clean,
        commits: 0,
        skipped_merges: 0,
        become_empty: 0,
        stops_at: None,
    };
    if bases.contains(&target) {
        prediction.status = RebaseStatus::UpToDate;
        return Ok(prediction);
    }
    if bases.contains(&current) {
        prediction.status = RebaseStatus::FastForward;
        return Ok(prediction);
    }
    replay(repo, shallow, current, target, target, MAX_REPLAY)
}

/// Predicts `git rebase --onto <onto> <upstream> <current>` in memory, as `repo.conflictPreflight`
/// predicts a rebase: `current`'s commits that `upstream` lacks (merges left out), oldest first,
/// replayed onto `onto` until the first unresolved conflict. More than `max_commits` to replay are
/// not predicted (`too-many-commits`). Nothing is written; the repository's merge drivers are not
/// run (Git's built-in text merge stands in for them). Conflicting paths are all listed.
///
/// # Errors
/// [`Error::GitRead`] when a commit cannot be read or the merge machinery fails.
pub fn predict_onto(
    repo: &gix::Repository,
    current: ObjectId,
    upstream: ObjectId,
    onto: ObjectId,
    max_commits: usize,
) -> Result<RebasePrediction> {
    let (scratch, _drivers) = scratch(repo)?;
    let shallow = Shallow::read(repo)?;
    replay(&scratch, &shallow, current, upstream, onto, max_commits)
}

/// Replays `current`'s commits that `upstream` lacks onto `onto`, stopping at the first unresolved
/// conflict; at most `max_commits` of them.
fn replay(
    repo: &gix::Repository,
    shallow: &Shallow,
    current: ObjectId,
    upstream: ObjectId,
    onto: ObjectId,
    max_commits: usize,
) -> Result<RebasePrediction> {
    let (commits, skipped_merges) = replay_list(repo, shallow, current, upstream)?;
    let mut prediction = RebasePrediction {
        status: RebaseStatus::Clean,
        commits: commits.len(),
        skipped_merges,
        become_empty: 0,
        stops_at: None,
    };
    if commits.len() > max_commits {
        prediction.status = RebaseStatus::TooManyCommits;
        return Ok(prediction);
    }
    let to_err = |err| Error::git("rebase prediction", err);
    let tree_of = |id: ObjectId| -> Result<ObjectId> {
        Ok(repo.find_commit(id).map_err(to_err)?.tree_id().map_err(to_err)?.detach())
    };
    let mut tip = tree_of(onto)?;
    for (step_idx, id) in commits.iter().enumerate() {
        let commit = repo.find_commit(*id).map_err(to_err)?;
        let parent = match shallow.parents(&commit).first() {
            Some(parent) => tree_of(*parent)?,
            None => ObjectId::empty_tree(repo.object_hash()),
        };
        let tree = tree_of(*id)?;
        let info = commit_info(repo, *id)?;
        let other = format!("{} ({})", &info.sha[..7], info.subject);
        let ancestor = format!("parent of {other}");
        let labels = Labels {
            ancestor: Some(ancestor.as_bytes().as_bstr()),
            current: Some(b"HEAD".as_bstr()),
            other: Some(other.as_bytes().as_bstr()),
        };
        let options = repo.tree_merge_options().map_err(to_err)?;
        let mut outcome = repo.merge_trees(parent, tip, tree, labels, options).map_err(to_err)?;
        if outcome.has_unresolved_conflicts(TreatAsUnresolved::git()) {
            let conflicts = paths::path_conflicts(repo, &mut outcome)?;
            let conflicting: Vec<&[u8]> = conflicts.iter().map(|conflict| conflict.path.as_bytes()).collect();
            let mut later_commits = Vec::new();
            for later in &commits[step_idx + 1..] {
                if let Some(found) = touching(repo, *later, &conflicting)? {
                    later_commits.push(found);
                }
            }
            prediction.status = RebaseStatus::Stops;
            prediction.stops_at = Some(RebaseStop {
                step: step_idx + 1,
                total: commits.len(),
                commit: info,
                reason: "conflicts",
                conflict_count: conflicts.len(),
                conflicts,
                later_commits,
            });
            return Ok(prediction);
        }
        let merged = outcome.tree.write().map_err(to_err)?.detach();
        if merged == tip && parent != tree {
            prediction.become_empty += 1;
        }
        tip = merged;
    }
    Ok(prediction)
}

/// `current`'s commits not reachable from `target`, parents before children (as
/// `git rev-list --reverse --topo-order`), without merge commits; and how many merges were left
/// out.
fn replay_list(
    repo: &gix::Repository,
    shallow: &Shallow,
    current: ObjectId,
    target: ObjectId,
) -> Result<(Vec<ObjectId>, usize)> {
    // Exact whatever the commit dates (gix's hidden-tip walk stops on dates), the shallow boundary cutting it.
    let mut parents: HashMap<ObjectId, Vec<ObjectId>> = HashMap::new();
    for id in crate::ancestry::exclusive(repo, current, &[target], usize::MAX)? {
        parents.insert(id, shallow.parents_of(repo, id)?);
    }
    // Depth-first from the tip, first parents first, emitting a commit after all its parents in the set.
    let mut order = Vec::with_capacity(parents.len());
    let mut visited = HashSet::from([current]);
    let mut stack = vec![(current, 0usize)];
    while let Some((id, next)) = stack.last_mut() {
        let own_parents = parents.get(id).map(Vec::as_slice).unwrap_or_default();
        if let Some(parent) = own_parents.get(*next).copied() {
            *next += 1;
            if parents.contains_key(&parent) && visited.insert(parent) {
                stack.push((parent, 0));
            }
        } else {
            order.push(*id);
            stack.pop();
        }
    }
    let is_merge = |id: &ObjectId| parents.get(id).is_some_and(|own| own.len() > 1);
    let merges = order.iter().filter(|id| is_merge(id)).count();
    order.retain(|id| !is_merge(id));
    Ok((order, merges))
}
