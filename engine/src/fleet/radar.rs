//! `fleet.radar` (design.md §5): an attention queue across repositories, ranked conflicts > operation in progress >
//! detached HEAD > behind upstream > dirty > unpushed > stale > clean, one short reason per repository, exact counts
//! per state.
//!
//! Each repository's facts (HEAD, operation, upstream, work-tree counts, newest activity) come from the engine's
//! facet cache and are kept as one cached answer until any event of that repository; only the state, which depends
//! on the clock (staleness), is computed per call. Nothing is written and no repository is changed.

use serde::Serialize;

use crate::budget::{Budgeted, Measure, first, fit_sections};
use crate::engine::{Engine, Repo};
use crate::error::{Error, Result};
use crate::facets::operation::Operation;
use crate::facets::refs::Upstream;
use crate::facets::{Facet, commits, head, operation, refs, worktree};
use crate::fleet::{Failure, Targets};

/// Days without a commit or reflog movement after which a repository is stale (design.md §5).
pub const STALE_DAYS: i64 = 30;
/// The answer-cache variant of a repository's radar [`Facts`].
const FACTS_VARIANT: &str = "fleet.radar\0facts";
/// Conflicted paths a reason names at most.
const NAMED_CONFLICTS: usize = 2;

/// Knobs of `fleet.radar`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Entries listed in the queue at most (design.md §5: 1-500, default 200); counts cover every repository.
    pub max_repos: usize,
    /// "Now" in seconds since the Unix epoch, for staleness (an input, so tests can pin the clock).
    pub now: i64,
}

/// A repository's state on the radar, in rank order (the first that applies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum State {
    /// It could not be read (see the entry's `error`).
    Error,
    /// Unmerged paths in the index.
    Conflicts,
    /// A merge, rebase, cherry-pick, revert, bisect or am is unfinished.
    Operation,
    /// HEAD names a commit, not a branch.
    Detached,
    /// The upstream has commits the branch lacks.
    Behind,
    /// Staged, unstaged or untracked changes.
    Dirty,
    /// The branch has commits its upstream lacks.
    Unpushed,
    /// No commit and no reflog movement for [`STALE_DAYS`] days.
    Stale,
    /// None of the above.
    Clean,
}

/// The radar.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Radar {
    /// Repositories examined (exact; each counted once in `counts`).
    pub repositories: usize,
    /// Repositories per state, each in its highest-ranked state (exact, also when the queue is cut); states with
    /// no repository are left out.
    pub counts: Counts,
    /// `true` when the repositories came from the registry (no `repoPaths` or `repositories` given); absent when
    /// false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub from_registry: bool,
    /// The attention queue: highest rank first, then by path.
    pub queue: Vec<Entry>,
}

/// Repositories per state; zero counts are left out of the JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    #[serde(skip_serializing_if = "is_zero")]
    #[allow(missing_docs)]
    pub error: usize,
    #[serde(skip_serializing_if = "is_zero")]
    #[allow(missing_docs)]
    pub conflicts: usize,
    #[serde(skip_serializing_if = "is_zero")]
    #[allow(missing_docs)]
    pub operation: usize,
    #[serde(skip_serializing_if = "is_zero")]
    #[allow(missing_docs)]
    pub detached: usize,
    #[serde(skip_serializing_if = "is_zero")]
    #[allow(missing_docs)]
    pub behind: usize,
    #[serde(skip_serializing_if = "is_zero")]
    #[allow(missing_docs)]
    pub dirty: usize,
    #[serde(skip_serializing_if = "is_zero")]
    #[allow(missing_docs)]
    pub unpushed: usize,
    #[serde(skip_serializing_if = "is_zero")]
    #[allow(missing_docs)]
    pub stale: usize,
    #[serde(skip_serializing_if = "is_zero")]
    #[allow(missing_docs)]
    pub clean: usize,
}

impl Counts {
    fn add(&mut self, state: State) {
        let slot = match state {
            State::Error => &mut self.error,
            State::Conflicts => &mut self.conflicts,
            State::Operation => &mut self.operation,
            State::Detached => &mut self.detached,
            State::Behind => &mut self.behind,
            State::Dirty => &mut self.dirty,
            State::Unpushed => &mut self.unpushed,
            State::Stale => &mut self.stale,
            State::Clean => &mut self.clean,
        };
        *slot += 1;
    }
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

/// One repository on the radar.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// The repository's root (as tools report `repoPath`); the path as given when it could not be resolved.
    pub repo_path: String,
    /// The caller's or the registry's label; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Its highest-ranked state.
    pub state: State,
    /// One short line saying why, e.g. `3 behind origin/main`.
    pub reason: String,
    /// Why it could not be read; only with state `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::error::ItemError>,
}

/// What the radar knows of one repository, independent of the clock (cached until the repository changes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// The checked-out branch; `None` when detached.
    pub branch: Option<String>,
    /// HEAD names a commit directly.
    pub detached: bool,
    /// HEAD's commit, abbreviated as `git log --oneline` does; `None` when unborn.
    pub sha: Option<String>,
    /// The unfinished operation.
    pub operation: Option<Operation>,
    /// During a rebase: the branch being rebased.
    pub rebasing: Option<String>,
    /// The current branch's upstream with ahead/behind.
    pub upstream: Option<Upstream>,
    /// Conflicted paths (all of them: the count is exact).
    pub conflicted: Vec<String>,
    /// Staged, unstaged and untracked counts.
    pub staged: usize,
    #[allow(missing_docs)]
    pub unstaged: usize,
    #[allow(missing_docs)]
    pub untracked: usize,
    /// The newest of: the committer time of HEAD's commit and of every local branch tip, and the time of the
    /// newest entry of HEAD's and every local branch's reflog; seconds since the epoch, `None` when there is none.
    pub last_activity: Option<i64>,
}

impl Facts {
    /// The state these facts put the repository in at `now` (seconds since the epoch).
    pub fn state(&self, now: i64) -> State {
        let behind = self.upstream.as_ref().map_or(0, |upstream| upstream.behind);
        let ahead = self.upstream.as_ref().map_or(0, |upstream| upstream.ahead);
        if !self.conflicted.is_empty() {
            State::Conflicts
        } else if self.operation.is_some() {
            State::Operation
        } else if self.detached {
            State::Detached
        } else if behind > 0 {
            State::Behind
        } else if self.staged + self.unstaged + self.untracked > 0 {
            State::Dirty
        } else if ahead > 0 {
            State::Unpushed
        } else if self.last_activity.is_some_and(|last| now - last > STALE_DAYS * 86_400) {
            State::Stale
        } else {
            State::Clean
        }
    }

    /// The one-line reason for `state`.
    fn reason(&self, state: State, now: i64) -> String {
        let on_branch = match (&self.branch, &self.sha) {
            (Some(branch), _) => format!(" on {branch}"),
            (None, Some(sha)) => format!(" at {sha}"),
            (None, None) => String::new(),
        };
        let upstream_name = self.upstream.as_ref().map_or("its upstream", |upstream| upstream.name.as_str());
        match state {
            State::Error => String::new(),
            State::Conflicts => {
                let mut named = self.conflicted.iter().take(NAMED_CONFLICTS).cloned().collect::<Vec<_>>().join(", ");
                if self.conflicted.len() > NAMED_CONFLICTS {
                    named.push_str(&format!(" +{} more", self.conflicted.len() - NAMED_CONFLICTS));
                }
                let during =
                    self.operation.map(|operation| format!(" ({} stopped)", name(operation))).unwrap_or_default();
                format!("{} conflicted: {named}{during}", self.conflicted.len())
            }
            State::Operation => {
                let operation = self.operation.map_or("operation", name);
                match &self.rebasing {
                    Some(branch) => format!("{operation} of {branch} in progress"),
                    None => format!("{operation} in progress{on_branch}"),
                }
            }
            State::Detached => format!("HEAD detached{on_branch}"),
            State::Behind => {
                let upstream = self.upstream.as_ref().expect("behind implies an upstream");
                let ahead = if upstream.ahead > 0 { format!(", {} ahead", upstream.ahead) } else { String::new() };
                format!("{} behind {upstream_name}{ahead}{on_branch}", upstream.behind)
            }
            State::Dirty => {
                let parts: Vec<String> =
                    [(self.staged, "staged"), (self.unstaged, "unstaged"), (self.untracked, "untracked")]
                        .iter()
                        .filter(|(count, _)| *count > 0)
                        .map(|(count, what)| format!("{count} {what}"))
                        .collect();
                format!("{}{on_branch}", parts.join(", "))
            }
            State::Unpushed => {
                format!("{} ahead of {upstream_name}{on_branch}", self.upstream.as_ref().map_or(0, |u| u.ahead))
            }
            State::Stale => {
                let days = self.last_activity.map_or(0, |last| (now - last) / 86_400);
                format!("no commit or reflog movement for {days} days{on_branch}")
            }
            State::Clean => {
                let tracking = match &self.upstream {
                    Some(upstream) if upstream.gone => format!(", upstream {} gone", upstream.name),
                    Some(upstream) => format!(", up to date with {}", upstream.name),
                    None if self.branch.is_some() => ", no upstream".to_owned(),
                    None => String::new(),
                };
                if self.sha.is_none() {
                    format!("no commits yet{on_branch}")
                } else {
                    format!("clean{on_branch}{tracking}")
                }
            }
        }
    }
}

fn name(operation: Operation) -> &'static str {
    match operation {
        Operation::Merge => "merge",
        Operation::Rebase => "rebase",
        Operation::CherryPick => "cherry-pick",
        Operation::Revert => "revert",
        Operation::Bisect => "bisect",
        Operation::Am => "am",
    }
}

impl Engine {
    /// `fleet.radar`: the attention queue over `targets`, cut to `options.max_repos` entries and `max_tokens`.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`budget_below_floor`) when the counts alone exceed `max_tokens`. One repository's failure
    /// is never an error: its entry has state `error`.
    pub fn radar(
        &self,
        targets: &Targets,
        options: &Options,
        max_tokens: usize,
        measure: &mut Measure<'_, Radar>,
    ) -> Result<Budgeted<Radar>> {
        let listed = self.fleet_targets(targets);
        let read = self.fleet_each(
            listed,
            |location, call| self.cached_answer(location, call, FACTS_VARIANT),
            |repo| self.radar_facts(repo),
        );
        let mut counts = Counts::default();
        let mut queue: Vec<Entry> = read
            .into_iter()
            .map(|(target, root, outcome)| {
                let entry = match outcome {
                    Ok(facts) => {
                        let state = facts.state(options.now);
                        Entry {
                            repo_path: root,
                            label: target.label,
                            reason: facts.reason(state, options.now),
                            state,
                            error: None,
                        }
                    }
                    Err(failure) => entry_error(root, target.label, &failure),
                };
                counts.add(entry.state);
                entry
            })
            .collect();
        queue.sort_by(|one, two| (one.state, &one.repo_path).cmp(&(two.state, &two.repo_path)));
        let full = Radar {
            repositories: queue.len(),
            counts,
            from_registry: matches!(targets, Targets::Registry),
            queue: first(&queue, options.max_repos),
        };
        let beyond = queue.len() - full.queue.len();
        let cut = |full: &Radar, shown: &[usize]| Radar { queue: first(&full.queue, shown[0]), ..full.clone() };
        let mut fitted = fit_sections(&full, &["queue"], &[full.queue.len()], max_tokens, &cut, measure)?;
        if beyond > 0 {
            let shown_cut = fitted.omitted.0.iter().find(|(name, _)| *name == "queue").map_or(0, |(_, n)| *n);
            fitted.omitted.0.retain(|(name, _)| *name != "queue");
            fitted.omitted.0.push(("queue", shown_cut + beyond));
        }
        Ok(fitted)
    }

    /// The radar's facts of one repository, from the answer cache until any event of the repository.
    ///
    /// # Errors
    /// [`Error::GitRead`] when HEAD, the status or a ref cannot be read.
    pub fn radar_facts(&self, repo: &Repo) -> Result<Facts> {
        self.answer(
            repo,
            FACTS_VARIANT,
            None,
            |_: &Facts| 512,
            || {
                let facets = self.facets(repo);
                // The same facet shapes as `repo.brief`, so that both share the cached values.
                let head = facets.get(Facet::Head, |git| Ok((head::read(git)?, commits::abbreviated_head(git))))?;
                let upstream = facets.get(Facet::Upstream, |git| refs::current_upstream(git, &head::read(git)?))?;
                let status = facets.get(Facet::WorkTreeStatus, worktree::status)?;
                let (operation, rebasing) = (*facets
                    .get(Facet::Operation, |git| Ok((operation::read(git), operation::rebasing_branch(git))))?)
                .clone();
                Ok(Facts {
                    branch: head.0.branch.clone(),
                    detached: head.0.detached,
                    sha: head.1.clone(),
                    operation,
                    rebasing,
                    upstream: (*upstream).clone(),
                    conflicted: status.conflicted.clone(),
                    staged: status.staged.len(),
                    unstaged: status.unstaged.len(),
                    untracked: status.untracked.len(),
                    last_activity: last_activity(&repo.git)?,
                })
            },
        )
    }
}

fn entry_error(repo_path: String, label: Option<String>, failure: &Failure) -> Entry {
    Entry { repo_path, label, state: State::Error, reason: failure.message.clone(), error: Some(failure.item()) }
}

/// The newest commit or reflog time of HEAD and the local branches (see [`Facts::last_activity`]).
fn last_activity(git: &gix::Repository) -> Result<Option<i64>> {
    let mut newest: Option<i64> = None;
    let mut note = |seconds: i64| newest = Some(newest.map_or(seconds, |known| known.max(seconds)));
    let mut references = Vec::new();
    if let Ok(head) = git.find_reference("HEAD") {
        references.push(head);
    }
    let platform = git.references().map_err(|err| Error::git("refs", err))?;
    for reference in platform.local_branches().map_err(|err| Error::git("refs", err))?.flatten() {
        references.push(reference);
    }
    for mut reference in references {
        // A reflog that is a FIFO or leads outside the roots is never opened: it dates nothing.
        if crate::guard::vet_reflog(git, reference.name()).is_err() {
            continue;
        }
        if let Ok(Some(mut lines)) = reference.log_iter().rev()
            && let Some(Ok(line)) = lines.next()
        {
            note(line.signature.time.seconds);
        }
        if let Ok(commit) = reference.peel_to_commit()
            && let Ok(time) = commit.time()
        {
            note(time.seconds);
        }
    }
    Ok(newest)
}
