//! `repo.branchStack`: where a branch (the current one, or the `branch` argument) stands against
//! its upstream and its base, and which local branches are stacked with it.
//!
//! Every ahead/behind is seen from the examined branch: `ahead` counts commits the examined branch
//! has that the other (upstream, base, related branch) lacks, `behind` the other way round
//! (`git rev-list --left-right --count <examined>...<other>`).
//!
//! Relations (ancestry as `git merge-base --is-ancestor`): a branch is *stacked on the examined
//! branch* when the examined tip is its ancestor; the examined branch is *stacked on it* when its
//! tip is an ancestor of the examined tip and it has commits the base lacks; it *shares the base*
//! when its merge-base with the base equals the examined branch's. Other branches are not related
//! and not listed.
//!
//! A parent that was rewritten under the examined branch (`git rebase main` on it while the
//! examined branch still sits on its old commits) is no longer in the examined history, so no
//! relation lists it: `parentMoved` names it from its reflog (`facets::lineage::moved_parent`),
//! with the `git rebase --onto` that moves the examined branch and whether that replay conflicts
//! (`conflict::preflight::predict_onto`, the rebase prediction of `repo.conflictPreflight`).

use std::collections::HashSet;

use gix::ObjectId;
use serde::Serialize;

use crate::ancestry::Shallow;
use crate::compact::is_zero;
use crate::facets::commits::{abbreviate, abbreviate_hex};

/// `id` abbreviated like `git log --oneline` (every sha of this report is).
fn short(repo: &gix::Repository, id: ObjectId) -> String {
    abbreviate(gix::prelude::ObjectIdExt::attach(id, repo))
}

use crate::engine::{Engine, Repo};

mod placement;
use crate::error::{Error, Result};
use crate::facets::refs::{self, Upstream};
use crate::facets::{head, iso_time, lineage};

/// Commits of the examined branch replayed at most to predict `parentMoved`'s rebase; more are not
/// predicted (`replay: too-many-commits`).
pub const MAX_PARENT_REPLAY: usize = 100;

/// Conflicting paths `parentMoved` names at most; `moreConflicts` counts the rest.
pub const MAX_PARENT_CONFLICTS: usize = 20;

/// Base branches tried after the caller's candidates, in order.
pub const DEFAULT_BASES: [&str; 5] = ["main", "master", "develop", "dev", "trunk"];

/// What to compare.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Base branches to try first, in order (revisions such as `main` or `origin/main`).
    pub base_candidates: Vec<String>,
    /// Related branches listed at most.
    pub max_related: usize,
    /// The local branch to examine (`feature/x` or `refs/heads/feature/x`); `None`: the current
    /// branch.
    pub branch: Option<String>,
}

/// The branch stack around the examined branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The examined branch's short name (the current one unless `branch` was given); default `null`
    /// (HEAD detached).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The examined tip; default `null` (unborn branch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha: Option<String>,
    /// The examined branch's upstream with ahead/behind from the examined branch; default `null`
    /// (none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
    /// The base the branch is compared with; default `null` (no candidate exists, or only the
    /// current branch does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<Base>,
    /// Related local branches in stack order: those the examined branch is built on (nearest the
    /// base first), then those built on it (nearest first), then those sharing its base (newest tip
    /// first). Default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<Related>,
    /// Related branches in all (exact, also when `maxRelated` lists fewer); default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub related_total: usize,
    /// The local branch the examined branch was built on and that was rewritten since (rebased,
    /// amended), with how to move the examined branch onto it; default `null` (none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_moved: Option<ParentMoved>,
    /// The repository is a shallow clone: history, ahead/behind and merge bases stop at the commits
    /// listed in `.git/shallow`, whose parents git treats as absent; absent when `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shallow: bool,
}

/// The base comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Base {
    /// The candidate that matched, as given (`main`, `origin/main`, ...).
    pub name: String,
    /// Its commit.
    pub sha: String,
    /// The best common ancestor of the examined tip and the base; default `null` (unrelated
    /// histories).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge_base: Option<String>,
    /// Commits on the examined branch not on the base; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub ahead: usize,
    /// Commits on the base not on the examined branch; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub behind: usize,
}

/// A parent branch rewritten under the examined branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentMoved {
    /// The parent, its old and new tips (abbreviated here) and the examined branch's commits on the
    /// old tip, as the lineage facet finds them. The old tip is the newest entry of the parent's
    /// reflog that is one of the examined branch's own commits
    /// (`git merge-base --fork-point <parent> <branch>` where git answers).
    #[serde(flatten)]
    pub moved: lineage::ParentMoved,
    /// The git command that moves the examined branch's own commits onto the parent's tip now (a
    /// branch name with characters a shell would read apart in single quotes).
    pub command: String,
    /// The predicted outcome of `command`: `clean`, `stops` (conflicts) or `too-many-commits` (more
    /// than [`MAX_PARENT_REPLAY`] to replay: not predicted).
    pub replay: crate::conflict::preflight::RebaseStatus,
    /// The commit the replay stops at, `<sha> <subject>`; default `null` (it does not stop).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stops_at: Option<String>,
    /// The paths that conflict there, in path order, at most [`MAX_PARENT_CONFLICTS`]; default
    /// empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// Conflicting paths not named; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub more_conflicts: usize,
}

/// Reads the facet's fields as if they were the report's own (`moved.parent`), as they are in its
/// JSON.
impl std::ops::Deref for ParentMoved {
    type Target = lineage::ParentMoved;

    fn deref(&self) -> &Self::Target {
        &self.moved
    }
}

/// How a branch relates to the examined one (the names keep "current" for the examined branch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Relation {
    /// The examined branch is built on top of it.
    CurrentStackedOn,
    /// Built on top of the examined branch (contains its tip).
    StackedOnCurrent,
    /// Forked from the base at the same commit as the examined branch.
    SharesBase,
}

/// A related local branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Related {
    /// Short name.
    pub name: String,
    /// Tip commit.
    pub sha: String,
    /// How it relates.
    pub relation: Relation,
    /// Commits on the examined branch not on it (`git rev-list --count <it>..<examined>`);
    /// default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub ahead: usize,
    /// Commits on it not on the examined branch (`git rev-list --count <examined>..<it>`);
    /// default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub behind: usize,
    /// Its own upstream, with ahead/behind seen from it (like `git branch -vv`); default `null`
    /// (none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
    /// Its tip's committer date, ISO 8601.
    pub last_commit: String,
}

impl Engine {
    /// `repo.branchStack`: the examined branch (`options.branch`, else the current one) against its
    /// upstream and base, and its related branches in stack order.
    ///
    /// Cost: none of the history is walked to place the other local branches when there are none;
    /// else one walk of all their histories together with the examined tip's and the base's, which
    /// visits each commit once (more often only under skewed commit dates) and stops where every
    /// branch is placed (generation numbers from the commit-graph when there is one, else from the
    /// generation table, whose entries also give the walk each commit's parents and date without
    /// reading it; nothing is ever written to the repository). Then short walks between stacked
    /// tips for the stack order; ahead/behind of a branch sharing the base are counted only for the
    /// `maxRelated` listed.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] (`invalid_revision`) for a candidate or branch starting with `-`
    /// or holding control characters, `unknown_revision` for a `branch` that names no local branch
    /// (with the nearest names); [`Error::GitRead`] when refs or commits cannot be read.
    pub fn branch_stack(&self, repo: &Repo, options: &Options) -> Result<Report> {
        // The first count on a repository without a commit-graph numbers its history (`ancestry::generations`);
        // the walks then take the commits from the generation table, so no object is read twice.
        let git = &repo.git;
        let (head, upstream) = match options.branch.as_deref() {
            None => {
                let head = head::read(git)?;
                let upstream = refs::current_upstream(git, &head)?;
                (head, upstream)
            }
            Some(name) => examined_branch(git, name)?,
        };
        let tip = head.sha.as_deref().and_then(|sha| ObjectId::from_hex(sha.as_bytes()).ok());
        let mut report = Report {
            branch: head.branch.clone(),
            sha: head.sha.as_deref().map(|sha| abbreviate_hex(git, sha)),
            upstream,
            base: None,
            related: vec![],
            related_total: 0,
            parent_moved: None,
            shallow: head.shallow,
        };
        let Some(tip) = tip else {
            return Ok(report);
        };
        let base = find_base(git, &options.base_candidates, head.branch.as_deref())?;
        let shallow = Shallow::read(git)?;
        let fork = match &base {
            Some((_, id)) => crate::ancestry::merge_base(git, tip, *id)?,
            None => None,
        };
        let all_tips = branch_tips(git)?;
        let tips: Vec<(String, ObjectId)> = all_tips.iter().map(|(_, name, id)| (name.clone(), *id)).collect();
        let others: Vec<_> = all_tips
            .into_iter()
            .filter(|(_, name, _)| {
                Some(name) != head.branch.as_ref() && base.as_ref().is_none_or(|(base, _)| base != name)
            })
            .collect();
        // Nothing to place (the common case of a clone with one local branch): no history is walked.
        let places = if others.is_empty() {
            Vec::new()
        } else {
            let ids: Vec<ObjectId> = others.iter().map(|(_, _, id)| *id).collect();
            let base_tips = base.as_ref().map(|(_, id)| placement::BaseTips { tip: *id, fork });
            placement::place(git, &shallow, tip, base_tips, &ids)?
        };
        let mut related = Vec::new();
        for ((full_name, name, id), place) in others.into_iter().zip(places) {
            let relation = if place.below_examined {
                // Its tip is in the examined history: the examined branch is stacked on it, unless the base has it.
                (base.is_none() || !place.below_base).then_some(Relation::CurrentStackedOn)
            } else if place.above_examined {
                Some(Relation::StackedOnCurrent)
            } else if base.is_some() && fork.is_some() {
                // Its own commits (those the base lacks) leave the base at the examined branch's fork point.
                place.leaves_at_fork.then_some(Relation::SharesBase)
            } else {
                None
            };
            let Some(relation) = relation else { continue };
            let commit = git.find_commit(id).map_err(|err| Error::git("commit", err))?;
            let time = commit.time().map_err(|err| Error::git("commit date", err))?;
            // Stack order: the distance from the examined tip along the stack (both walks are short: only the
            // commits between the two tips).
            let distance = match relation {
                Relation::CurrentStackedOn => Some(refs::count_exclusive(git, tip, id)?),
                Relation::StackedOnCurrent => Some(refs::count_exclusive(git, id, tip)?),
                Relation::SharesBase => None,
            };
            related.push(Candidate {
                relation,
                distance,
                time: time.seconds,
                full_name,
                name,
                id,
                time_iso: iso_time(time),
            });
        }
        related.sort_by(|a, b| {
            a.relation
                .cmp(&b.relation)
                .then_with(|| match a.relation {
                    // The farthest below the examined branch is nearest the base.
                    Relation::CurrentStackedOn => b.distance.cmp(&a.distance),
                    Relation::StackedOnCurrent => a.distance.cmp(&b.distance),
                    Relation::SharesBase => b.time.cmp(&a.time),
                })
                .then(a.name.cmp(&b.name))
        });
        report.related_total = related.len();
        for candidate in related.into_iter().take(options.max_related) {
            let (ahead, behind) = match (candidate.relation, candidate.distance) {
                (Relation::CurrentStackedOn, Some(distance)) => (distance, 0),
                (Relation::StackedOnCurrent, Some(distance)) => (0, distance),
                _ => crate::ancestry::ahead_behind(git, tip, candidate.id)?,
            };
            let full_name: &gix::refs::FullNameRef = candidate.full_name.as_ref();
            report.related.push(Related {
                sha: short(git, candidate.id),
                relation: candidate.relation,
                ahead,
                behind,
                upstream: refs::upstream_of(git, full_name, Some(candidate.id))?,
                last_commit: candidate.time_iso,
                name: candidate.name,
            });
        }
        if let Some(branch) = head.branch.as_deref() {
            report.parent_moved = parent_moved(git, &tips, branch, tip, base.as_ref())?;
        }
        if let Some((name, id)) = base {
            let (ahead, behind) = crate::ancestry::ahead_behind(git, tip, id)?;
            report.base =
                Some(Base { name, sha: short(git, id), merge_base: fork.map(|fork| short(git, fork)), ahead, behind });
        }
        Ok(report)
    }
}

/// The rewritten parent of `branch` (at `tip`) and the predicted `git rebase --onto` that moves it.
/// `tips` are the local branches (short name, tip).
fn parent_moved(
    git: &gix::Repository,
    tips: &[(String, ObjectId)],
    branch: &str,
    tip: ObjectId,
    base: Option<&(String, ObjectId)>,
) -> Result<Option<ParentMoved>> {
    let base = base.map(|(name, id)| (name.as_str(), *id));
    let Some(found) = lineage::moved_parent(git, tips, branch, tip, base)? else {
        return Ok(None);
    };
    replayed(git, found, branch, tip).map(Some)
}

/// The lineage's rewritten parent `found` of `branch` (at `tip`) with the `git rebase --onto` that
/// moves the branch and its replay predicted in memory (`repo.branchStack`'s `parentMoved`, and
/// `repo.brief`'s).
///
/// # Errors
/// [`Error::GitRead`] when a commit cannot be read or the replay fails.
pub(crate) fn replayed(
    git: &gix::Repository,
    found: crate::facets::lineage::ParentMoved,
    branch: &str,
    tip: ObjectId,
) -> Result<ParentMoved> {
    let id = |hex: &str| ObjectId::from_hex(hex.as_bytes()).map_err(|err| Error::git("reflog entry", err));
    let (old_tip, new_tip) = (id(&found.old_tip)?, id(&found.new_tip)?);
    let prediction = crate::conflict::preflight::predict_onto(git, tip, old_tip, new_tip, MAX_PARENT_REPLAY)?;
    let old_short = short(git, old_tip);
    let mut moved = ParentMoved {
        command: format!(
            "git rebase --onto {} {old_short} {}",
            crate::quote::shell_word(&found.parent),
            crate::quote::shell_word(branch)
        ),
        moved: lineage::ParentMoved { old_tip: old_short, new_tip: short(git, new_tip), ..found },
        replay: prediction.status,
        stops_at: None,
        conflicts: Vec::new(),
        more_conflicts: 0,
    };
    if let Some(stop) = prediction.stops_at {
        moved.stops_at = Some(format!("{} {}", abbreviate_hex(git, &stop.commit.sha), stop.commit.subject));
        moved.more_conflicts = stop.conflicts.len().saturating_sub(MAX_PARENT_CONFLICTS);
        moved.conflicts = stop.conflicts.into_iter().take(MAX_PARENT_CONFLICTS).map(|conflict| conflict.path).collect();
    }
    Ok(moved)
}

/// A related branch before it is listed.
struct Candidate {
    relation: Relation,
    /// Commits between its tip and the examined tip, for stacked relations.
    distance: Option<usize>,
    time: i64,
    full_name: gix::refs::FullName,
    name: String,
    id: ObjectId,
    time_iso: String,
}

/// HEAD-like facts and the upstream of the local branch `name` (short or `refs/heads/...`).
fn examined_branch(git: &gix::Repository, name: &str) -> Result<(head::Head, Option<Upstream>)> {
    crate::revision::check(name)?;
    let full = if name.starts_with("refs/heads/") { name.to_owned() } else { format!("refs/heads/{name}") };
    let reference = git.try_find_reference(full.as_str()).ok().flatten();
    let Some(mut reference) = reference else {
        return Err(crate::revision::unknown_branch(git, name));
    };
    let full_name = reference.name().to_owned();
    let id = reference.peel_to_commit().map_err(|err| Error::git("branch tip", err))?.id;
    let head = head::Head {
        branch: Some(full_name.shorten().to_string()),
        detached: false,
        unborn: false,
        sha: Some(id.to_string()),
        shallow: Shallow::read(git)?.is_shallow(),
    };
    let upstream = refs::upstream_of(git, full_name.as_ref(), Some(id))?;
    Ok((head, upstream))
}

/// Local branches (full name, short name, tip commit) without reading upstreams.
fn branch_tips(repo: &gix::Repository) -> Result<Vec<(gix::refs::FullName, String, ObjectId)>> {
    let platform = repo.references().map_err(|err| Error::git("refs", err))?;
    let mut tips = Vec::new();
    // Refs that do not parse are skipped, as git skips them.
    for mut reference in (platform.local_branches().map_err(|err| Error::git("refs", err))?).flatten() {
        let name = reference.name().shorten().to_string();
        let full_name = reference.name().to_owned();
        if let Some(id) = refs::peel_to_commit_id(&mut reference) {
            tips.push((full_name, name, id));
        }
    }
    Ok(tips)
}

/// The first candidate, then default base, that names a commit and is not the current branch
/// itself.
fn find_base(
    repo: &gix::Repository,
    candidates: &[String],
    current: Option<&str>,
) -> Result<Option<(String, ObjectId)>> {
    let mut tried = HashSet::new();
    for name in candidates.iter().map(String::as_str).chain(DEFAULT_BASES) {
        if !tried.insert(name) || Some(name) == current {
            continue;
        }
        if let Some(id) = crate::revision::try_resolve_commit(repo, name)? {
            return Ok(Some((name.to_owned(), id)));
        }
    }
    Ok(None)
}
