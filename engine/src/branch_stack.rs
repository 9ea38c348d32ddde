//! `repo.branchStack`: where the current branch stands against its upstream and its base, and which local branches
//! are stacked with it.
//!
//! Relations (ancestry as `git merge-base --is-ancestor`): a branch is *stacked on the current branch* when the
//! current tip is its ancestor; the current branch is *stacked on it* when its tip is an ancestor of the current tip
//! and it has commits the base lacks; it *shares the base* when its merge-base with the base equals the current
//! branch's. Other branches are not related and not listed.

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
use crate::error::{Error, Result};
use crate::facets::refs::{self, Upstream};
use crate::facets::{head, iso_time};

/// Base branches tried after the caller's candidates, in order.
pub const DEFAULT_BASES: [&str; 5] = ["main", "master", "develop", "dev", "trunk"];

/// What to compare.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Base branches to try first, in order (revisions such as `main` or `origin/main`).
    pub base_candidates: Vec<String>,
    /// Related branches listed at most.
    pub max_related: usize,
}

/// The branch stack around HEAD.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The current branch's short name; default `null` (HEAD detached).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// HEAD's commit; default `null` (unborn branch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha: Option<String>,
    /// The current branch's upstream with ahead/behind; default `null` (none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
    /// The base the branch is compared with; default `null` (no candidate exists, or only the current branch does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<Base>,
    /// Related local branches, stacked-on-current first, then current-stacked-on, then sharing the base; each group
    /// newest tip first. Default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<Related>,
    /// Related branches in all (exact, also when `maxRelated` lists fewer); default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub related_total: usize,
    /// The repository is a shallow clone: history, ahead/behind and merge bases stop at the commits listed in
    /// `.git/shallow`, whose parents git treats as absent; absent when `false`.
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
    /// The best common ancestor of HEAD and the base; default `null` (unrelated histories).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge_base: Option<String>,
    /// Commits on HEAD not on the base; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub ahead: usize,
    /// Commits on the base not on HEAD; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub behind: usize,
}

/// How a branch relates to the current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Relation {
    /// Built on top of the current branch (contains its tip).
    StackedOnCurrent,
    /// The current branch is built on top of it.
    CurrentStackedOn,
    /// Forked from the base at the same commit as the current branch.
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
    /// Commits on it not on HEAD; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub ahead: usize,
    /// Commits on HEAD not on it; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub behind: usize,
    /// Its tip's committer date, ISO 8601.
    pub last_commit: String,
}

impl Engine {
    /// `repo.branchStack`: the current branch against its upstream and base, and its related branches.
    ///
    /// Cost: one walk of HEAD's history and one of the base's, then per branch a walk of only the commits HEAD (or
    /// the base) lacks; ahead/behind of a related branch are counted only for the `maxRelated` listed.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] (`invalid_revision`) for a candidate starting with `-` or holding control
    /// characters; [`Error::GitRead`] when refs or commits cannot be read.
    pub fn branch_stack(&self, repo: &Repo, options: &Options) -> Result<Report> {
        let git = &repo.git;
        let head = head::read(git)?;
        let upstream = refs::current_upstream(git, &head)?;
        let tip = head.sha.as_deref().and_then(|sha| ObjectId::from_hex(sha.as_bytes()).ok());
        let mut report = Report {
            branch: head.branch.clone(),
            sha: head.sha.as_deref().map(|sha| abbreviate_hex(git, sha)),
            upstream,
            base: None,
            related: vec![],
            related_total: 0,
            shallow: head.shallow,
        };
        let Some(tip) = tip else {
            return Ok(report);
        };
        let base = find_base(git, &options.base_candidates, head.branch.as_deref())?;
        let shallow = Shallow::read(git)?;
        let in_head = shallow.ancestors(git, &[tip])?;
        let in_base = match &base {
            Some((_, id)) => shallow.ancestors(git, &[*id])?,
            None => HashSet::new(),
        };
        let fork = match &base {
            Some((_, id)) => crate::ancestry::merge_base(git, tip, *id)?,
            None => None,
        };
        let mut related = Vec::new();
        for (name, id) in branch_tips(git)? {
            if Some(&name) == head.branch.as_ref() || base.as_ref().is_some_and(|(base, _)| *base == name) {
                continue;
            }
            let relation = if in_head.contains(&id) {
                // Its tip is in HEAD's history: the current branch is stacked on it, unless the base has it too.
                (base.is_none() || !in_base.contains(&id)).then_some(Relation::CurrentStackedOn)
            } else if let Some(fork) = fork.filter(|_| base.is_some()) {
                // Walk only the branch's own commits (those the base lacks): HEAD's tip among them means the branch
                // is built on it; the fork point on their edge means it left the base where HEAD did.
                let (edge, reached_tip) = boundary(git, &shallow, id, &in_base, tip)?;
                if reached_tip || (in_base.contains(&tip) && boundary(git, &shallow, id, &in_head, tip)?.1) {
                    Some(Relation::StackedOnCurrent)
                } else {
                    edge.contains(&fork).then_some(Relation::SharesBase)
                }
            } else {
                boundary(git, &shallow, id, &in_head, tip)?.1.then_some(Relation::StackedOnCurrent)
            };
            let Some(relation) = relation else { continue };
            let commit = git.find_commit(id).map_err(|err| Error::git("commit", err))?;
            let time = commit.time().map_err(|err| Error::git("commit date", err))?;
            related.push((time.seconds, name, id, relation, iso_time(time)));
        }
        related.sort_by(|a, b| a.3.cmp(&b.3).then(b.0.cmp(&a.0)).then(a.1.cmp(&b.1)));
        report.related_total = related.len();
        for (_, name, id, relation, last_commit) in related.into_iter().take(options.max_related) {
            report.related.push(Related {
                name,
                sha: short(git, id),
                relation,
                ahead: refs::count_exclusive(git, id, tip)?,
                behind: refs::count_exclusive(git, tip, id)?,
                last_commit,
            });
        }
        if let Some((name, id)) = base {
            report.base = Some(Base {
                name,
                sha: short(git, id),
                merge_base: fork.map(|fork| short(git, fork)),
                ahead: refs::count_exclusive(git, tip, id)?,
                behind: refs::count_exclusive(git, id, tip)?,
            });
        }
        Ok(report)
    }
}

/// Walks from `from` through the commits outside `known` (only those are read) and returns the commits of `known`
/// where it stopped, and whether it met `target`. For `known` = the ancestors of X, the stopping points hold the
/// merge-bases of `from` and X; a `target` outside `known` is met exactly when it is an ancestor of `from`.
fn boundary(
    repo: &gix::Repository,
    shallow: &Shallow,
    from: ObjectId,
    known: &HashSet<ObjectId>,
    target: ObjectId,
) -> Result<(HashSet<ObjectId>, bool)> {
    let (mut edge, mut reached) = (HashSet::new(), false);
    let mut seen = HashSet::from([from]);
    let mut stack = vec![from];
    while let Some(id) = stack.pop() {
        reached |= id == target;
        if known.contains(&id) {
            edge.insert(id);
            continue;
        }
        for parent in shallow.parents_of(repo, id)? {
            if seen.insert(parent) {
                stack.push(parent);
            }
        }
    }
    Ok((edge, reached))
}

/// Local branches (short name, tip commit) without reading upstreams.
fn branch_tips(repo: &gix::Repository) -> Result<Vec<(String, ObjectId)>> {
    let platform = repo.references().map_err(|err| Error::git("refs", err))?;
    let mut tips = Vec::new();
    // Refs that do not parse are skipped, as git skips them.
    for mut reference in (platform.local_branches().map_err(|err| Error::git("refs", err))?).flatten() {
        let name = reference.name().shorten().to_string();
        if let Ok(commit) = reference.peel_to_commit() {
            tips.push((name, commit.id));
        }
    }
    Ok(tips)
}

/// The first candidate, then default base, that names a commit and is not the current branch itself.
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
        match crate::revision::resolve_commit(repo, name) {
            Ok(id) => return Ok(Some((name.to_owned(), id))),
            Err(Error::Invalid { reason: crate::InvalidReason::UnknownRevision, .. }) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(None)
}
