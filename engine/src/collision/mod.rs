//! `repo.collisions` (issue 54): where the parallel lines of work of one repository meet, before
//! they are merged.
//!
//! # Lines of work
//!
//! A line of work is each worktree's HEAD with its uncommitted changes (the main one and every
//! linked one), each local branch an agent is detected on, and the default branch. A worktree's
//! uncommitted changes (staged, unstaged and untracked files that are not ignored, what
//! `git add -A && git commit` would record) are written as a tree and a commit on top of HEAD into
//! an in-memory object store ([`line`]); nothing is written into the repository. A worktree whose
//! path lies outside the allowed roots is named in `outsideRoots`, never read.
//!
//! # Pairs
//!
//! Every pair of lines is compared ([`pair`]): the files both changed since their merge base, the
//! base lines both changed, the symbols both changed (the semantic diff of each side against the
//! base), and whether git's merge of the two would conflict, predicted in memory as
//! `repo.conflictPreflight` predicts a merge. Pairs that share nothing are counted, not listed; the
//! rest are ranked, conflicts first, and cut to the token budget.
//!
//! # Cost
//!
//! Each worktree's line is kept in the engine's answer cache under that worktree's own watch, and
//! each pair's prediction by the ids of its two tips (a commit id names its content), so a warm
//! call reads no worktree the watcher says is unchanged and merges nothing again.

mod line;
mod pair;

use std::sync::Arc;

use serde::Serialize;

use crate::budget::{Budgeted, Measure};
use crate::compact::{is_false, is_zero};
use crate::conflict::ConflictKind;
use crate::engine::{Engine, Repo};
use crate::error::Result;
use crate::fleet::Target;

pub use pair::MergeVerdict;

/// `repo.collisions`' default budget, tokens.
pub const DEFAULT_MAX_TOKENS: usize = 600;

/// Files listed per pair at most by default; `fileCount` stays exact.
pub const DEFAULT_MAX_FILES: usize = 5;

/// Symbols and line ranges listed per file at most.
pub const MAX_PER_FILE: usize = 5;

/// Knobs of [`Engine::collisions`].
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Files listed per pair at most (0: [`DEFAULT_MAX_FILES`]).
    pub max_files: usize,
    /// Where agent detection looks; `None` when it is disabled (no agent is named and no branch is
    /// added for one).
    pub agents: Option<crate::agents::Options>,
}

/// The forecast.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Always `true`: nothing was merged.
    pub prediction: bool,
    /// The default branch (`origin/HEAD`'s target, else `main` or `master`); default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_branch: Option<String>,
    /// The lines of work compared: worktrees in `git worktree list` order, then branches.
    pub lines: Vec<Line>,
    /// Pairs compared (every two lines whose tips differ).
    pub pair_count: usize,
    /// Pairs whose merge would stop with conflicts; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub conflicting: usize,
    /// Pairs that changed at least one same file (the conflicting ones included); default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub overlapping: usize,
    /// The overlapping pairs, conflicts first, then by files shared (cut by the budget:
    /// `omitted.pairs`); default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<Pair>,
    /// Worktrees whose path lies outside the allowed roots: named, not read; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outside_roots: Vec<String>,
    /// Worktrees that could not be read (their checkout is gone, their HEAD does not parse), with
    /// why; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
}

/// One line of work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Line {
    /// How pairs name it: the branch, or `detached <sha>` for a detached worktree.
    pub name: String,
    /// The worktree's path; default `null` (a branch no worktree has checked out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// The commit its HEAD or branch names, abbreviated.
    pub sha: String,
    /// Files its work tree changes against HEAD (staged, unstaged, untracked); default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub uncommitted: usize,
    /// `true` for the default branch; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub default: bool,
    /// The agents detected working there (their kinds); default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    /// The newest activity of those agents, Unix ms; default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_activity_ms: Option<u64>,
}

/// Two lines that changed a same file.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pair {
    /// One line's name.
    pub a: String,
    /// The other line's name.
    pub b: String,
    /// git's merge of the two: `conflicted`, `clean`, `fast-forward`, `up-to-date` or
    /// `unrelated-histories`.
    pub merge: MergeVerdict,
    /// Paths the merge would leave unmerged; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub conflict_count: usize,
    /// Files both changed since the merge base (conflicted ones counted too).
    pub file_count: usize,
    /// Those files, conflicted first, at most `maxFiles`.
    pub files: Vec<PairFile>,
}

/// One file both lines changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PairFile {
    /// Repository-relative path (the merge's, for a renamed file).
    pub path: String,
    /// The conflict git's merge would leave there; default `null` (it merges cleanly).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflict: Option<ConflictKind>,
    /// Lines of the merge base both sides changed, 1-based first and last, at most
    /// [`MAX_PER_FILE`]; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<[u32; 2]>,
    /// Symbols (functions, types, ...) both sides changed, by qualified name, at most
    /// [`MAX_PER_FILE`]; compared between committed lines only (a line with uncommitted changes
    /// has none yet); default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub symbols: Vec<String>,
}

/// The answer-cache variant of one worktree's line.
const LINE_VARIANT: &str = "collisions.line";

impl Engine {
    /// `repo.collisions`: the forecast of where the repository's lines of work collide, cut to
    /// `max_tokens` as `measure` counts (see the module docs).
    ///
    /// # Errors
    /// [`crate::Error::GitRead`] when the worktree registry, a ref or the merge machinery fails;
    /// [`crate::Error::Invalid`] (`budget_below_floor`) when the lines alone exceed `max_tokens`;
    /// [`crate::Error::Cancelled`] when interrupted. One unreadable worktree is named in
    /// `unreadable`, not an error.
    pub fn collisions(
        &self,
        repo: &Repo,
        options: &Options,
        max_tokens: usize,
        measure: &mut Measure<'_, Report>,
    ) -> Result<Budgeted<Report>> {
        let full = self.collisions_full(repo, options)?;
        let total = full.pairs.len();
        let cut = |full: &Report, shown: &[usize]| Report {
            pairs: crate::budget::first(&full.pairs, shown[0]),
            ..full.clone()
        };
        crate::budget::fit_sections(&full, &["pairs"], &[total], max_tokens, &cut, measure)
    }

    /// The whole forecast, every overlapping pair listed.
    ///
    /// # Errors
    /// As [`Engine::collisions`].
    pub fn collisions_full(&self, repo: &Repo, options: &Options) -> Result<Report> {
        let max_files = if options.max_files == 0 { DEFAULT_MAX_FILES } else { options.max_files };
        let worktrees = self.worktree_entries(repo)?.worktrees;
        let default_branch = crate::facets::refs::default_branch(&repo.git)?;
        let mut outside_roots = Vec::new();
        let mut unreadable = Vec::new();
        let mut targets = Vec::new();
        for worktree in &worktrees {
            if worktree.bare {
                continue;
            }
            let path = std::path::Path::new(&worktree.path);
            if !self.allowed_roots().iter().any(|root| path.starts_with(root)) {
                outside_roots.push(worktree.path.clone());
                continue;
            }
            if worktree.prunable || worktree.error.is_some() {
                let why =
                    worktree.error.as_ref().map_or("its checkout is gone".to_owned(), |error| error.reason.clone());
                unreadable.push(format!("{}: {why}", worktree.path));
                continue;
            }
            targets.push(Target { path: worktree.path.clone(), label: None });
        }
        let read = self.fleet_each(
            targets,
            |location, call| self.cached_answer::<Arc<line::Read>>(location, call, LINE_VARIANT),
            |worktree| {
                self.answer(
                    worktree,
                    LINE_VARIANT,
                    None,
                    |read: &Arc<line::Read>| read.weight(),
                    || line::read(&worktree.git, &worktree.interrupt).map(Arc::new),
                )
            },
        );
        repo.interrupt.check()?;
        // One read of the process table for every worktree read and the repository itself (its last report).
        let mut found = match &options.agents {
            Some(agent_options) => {
                let checkouts: Vec<(&std::path::Path, Option<&str>)> = read
                    .iter()
                    .filter_map(|(target, _, outcome)| {
                        outcome.as_ref().ok().map(|read| (std::path::Path::new(&target.path), read.branch.as_deref()))
                    })
                    .chain([(repo.location.root.as_path(), None)])
                    .collect();
                self.agents.detect_many(&checkouts, agent_options)
            }
            None => Vec::new(),
        }
        .into_iter();
        let mut lines: Vec<(Line, pair::Tip)> = Vec::new();
        for (target, _root, outcome) in read {
            let read = match outcome {
                Ok(read) => read,
                Err(failure) => {
                    unreadable.push(format!("{}: {}", target.path, failure.message));
                    continue;
                }
            };
            let here = found.next();
            let Some(tip) = read.tip() else { continue };
            let name = match &read.branch {
                Some(branch) => branch.clone(),
                None => {
                    format!("detached {}", crate::facets::commits::abbreviate_hex(&repo.git, &tip.head.to_string()))
                }
            };
            let mut agents = Vec::new();
            let mut last_activity_ms = None;
            for agent in here.map(|report| report.agents).unwrap_or_default() {
                if !agents.contains(&agent.agent) {
                    agents.push(agent.agent.clone());
                }
                last_activity_ms = last_activity_ms.max(agent.last_activity_ms);
            }
            let line = Line {
                default: default_branch.as_deref() == read.branch.as_deref() && read.branch.is_some(),
                name,
                worktree: Some(target.path.clone()),
                sha: crate::facets::commits::abbreviate_hex(&repo.git, &tip.head.to_string()),
                uncommitted: read.uncommitted,
                agents,
                last_activity_ms,
            };
            lines.push((line, tip));
        }
        // Branches without a worktree: the default branch, then those agents work on.
        let mut branches: Vec<(String, Vec<String>, Option<u64>)> = Vec::new();
        if let Some(default) = &default_branch {
            branches.push((default.clone(), Vec::new(), None));
        }
        if let Some(at_root) = found.next() {
            for agent in at_root.agents {
                let Some(branch) = agent.branch else { continue };
                match branches.iter_mut().find(|(name, _, _)| *name == branch) {
                    Some((_, kinds, at)) => {
                        if !kinds.contains(&agent.agent) {
                            kinds.push(agent.agent.clone());
                        }
                        *at = (*at).max(agent.last_activity_ms);
                    }
                    None => branches.push((branch, vec![agent.agent.clone()], agent.last_activity_ms)),
                }
            }
        }
        for (branch, agents, last_activity_ms) in branches {
            if lines.iter().any(|(line, _)| line.worktree.is_some() && line.name == branch) {
                continue;
            }
            let full = format!("refs/heads/{branch}");
            let Ok(Some(mut reference)) = repo.git.try_find_reference(full.as_str()) else { continue };
            let Ok(id) = reference.peel_to_commit() else { continue };
            let head = id.id;
            let line = Line {
                default: default_branch.as_deref() == Some(branch.as_str()),
                name: branch,
                worktree: None,
                sha: crate::facets::commits::abbreviate_hex(&repo.git, &head.to_string()),
                uncommitted: 0,
                agents,
                last_activity_ms,
            };
            lines.push((line, pair::Tip { head, commit: head, objects: None }));
        }
        let mut predictor = pair::Predictor::new(self, repo);
        let mut pairs = Vec::new();
        let mut pair_count = 0;
        for first in 0..lines.len() {
            for second in first + 1..lines.len() {
                repo.interrupt.check()?;
                let (a, b) = (&lines[first], &lines[second]);
                if a.1.commit == b.1.commit {
                    continue;
                }
                pair_count += 1;
                let predicted = predictor.predict(&a.1, &b.1)?;
                if predicted.files.is_empty() && predicted.conflict_count == 0 {
                    continue;
                }
                pairs.push(Pair {
                    a: a.0.name.clone(),
                    b: b.0.name.clone(),
                    merge: predicted.merge,
                    conflict_count: predicted.conflict_count,
                    file_count: predicted.files.len(),
                    files: predicted.files.iter().take(max_files).cloned().collect(),
                });
            }
        }
        pairs.sort_by(|x, y| {
            let rank = |pair: &Pair| (pair.merge != MergeVerdict::Conflicted, std::cmp::Reverse(pair.conflict_count));
            rank(x).cmp(&rank(y)).then(y.file_count.cmp(&x.file_count))
        });
        Ok(Report {
            prediction: true,
            default_branch,
            conflicting: pairs.iter().filter(|pair| pair.merge == MergeVerdict::Conflicted).count(),
            overlapping: pairs.len(),
            lines: lines.into_iter().map(|(line, _)| line).collect(),
            pair_count,
            pairs,
            outside_roots,
            unreadable,
        })
    }
}
