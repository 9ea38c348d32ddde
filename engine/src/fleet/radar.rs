//! `fleet.radar` (design.md#tools): an attention queue across repositories, ranked conflicts >
//! operation in progress > detached HEAD > behind upstream > dirty > unpushed > stale > clean, one
//! short reason per repository, exact counts per state.
//!
//! A path in `repoPaths` that is a folder outside any repository (no `.git` in it or above it, not
//! a git dir) is read as the checkouts below it, found as `fleet add --scan` finds them: at most
//! [`SCAN_DEPTH`] levels down, [`MAX_SCANNED_DIRECTORIES`] directories looked at, and the call's
//! [`MAX_REPOSITORIES`] in all; the answer's `scanned` says what each folder gave and whether a
//! bound stopped it.
//!
//! A detached HEAD is named as `git status` names it (`HEAD detached at 14.1.0`,
//! `HEAD detached from origin/main`, `HEAD detached at 1a2b3c4`, or
//! `Not currently on any branch.`), and a repository that cannot be read is blamed in git's words
//! where git has them (`bad object HEAD` for a HEAD whose commit is missing).
//!
//! Each repository's facts (HEAD, operation, upstream, work-tree counts, newest activity) come from
//! the engine's facet cache and are kept as one cached answer until any event of that repository;
//! only the state, which depends on the clock (staleness), is computed per call. Nothing is written
//! and no repository is changed.

use std::collections::HashSet;

use serde::Serialize;

use crate::budget::{Budgeted, Measure, first, fit_sections};
use crate::engine::{Engine, Repo};
use crate::error::{Error, Result};
use crate::facets::operation::Operation;
use crate::facets::refs::Upstream;
use crate::facets::{Facet, commits, head, operation, refs, stashes, worktree};
use crate::fleet::registry::{self, MAX_REPOSITORIES};
use crate::fleet::{Failure, Target, Targets};

/// Days without a commit or reflog movement after which a repository is stale (design.md#tools).
pub const STALE_DAYS: i64 = 30;
/// The answer-cache variant of a repository's radar [`Facts`].
pub(crate) const FACTS_VARIANT: &str = "fleet.radar\0facts";
/// Levels below a folder of `repoPaths` searched for checkouts, as `fleet add --scan` searches by
/// default.
pub const SCAN_DEPTH: usize = registry::DEFAULT_SCAN_DEPTH;
/// Directories a folder's scan looks at, at most.
pub const MAX_SCANNED_DIRECTORIES: usize = 10_000;
/// What the radar says when it has no repository to read: how to give it some.
pub const EMPTY_REGISTRY_HINT: &str = "no repositories registered: add some with `fluxgit-mcp-sidecar fleet add \
    --scan DIR` (or `fleet add PATH...`), or pass repoPaths";
/// Conflicted paths a reason names at most.
const NAMED_CONFLICTS: usize = 2;

/// Knobs of `fleet.radar`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Entries listed in the queue at most (design.md#tools: 1-500, default 200); counts cover
    /// every repository.
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
    /// Repositories per state, each in its highest-ranked state (exact, also when the queue is
    /// cut); states with no repository are left out.
    pub counts: Counts,
    /// `true` when the repositories came from the registry (no `repoPaths` or `repositories`
    /// given); absent when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub from_registry: bool,
    /// The attention queue: highest rank first, then by path.
    pub queue: Vec<Entry>,
    /// The folders of `repoPaths` read as the checkouts below them; absent when none was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scanned: Vec<Scanned>,
    /// How to get repositories on the radar, when there were none to read; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// A folder of `repoPaths` that holds checkouts rather than being one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Scanned {
    /// The folder as given.
    pub path: String,
    /// Checkouts found below it (each one an entry of the queue or of the counts).
    pub found: usize,
    /// Levels searched below it ([`SCAN_DEPTH`]).
    pub depth: usize,
    /// `true` when a bound ([`MAX_SCANNED_DIRECTORIES`] directories, [`MAX_REPOSITORIES`]
    /// repositories) stopped the scan early: more checkouts may lie below; absent when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
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
    /// The repository's root (as tools report `repoPath`); the path as given when it could not be
    /// resolved.
    pub repo_path: String,
    /// The caller's or the registry's label; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Its highest-ranked state.
    pub state: State,
    /// Lower-ranked states that hold too and need acting on apart from it (behind, dirty,
    /// unpushed), each also in `reason`; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<State>,
    /// One short line saying why, e.g. `3 behind origin/main`.
    pub reason: String,
    /// Why it could not be read; only with state `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::error::ItemError>,
}

/// What the radar knows of one repository, independent of the clock (cached until the repository
/// changes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// The checked-out branch; `None` when detached.
    pub branch: Option<String>,
    /// HEAD names a commit directly.
    pub detached: bool,
    /// When detached: `git status`'s first line, e.g. `HEAD detached at 14.1.0` (see
    /// [`detached_line`]).
    pub detached_line: Option<String>,
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
    /// The newest of: the committer time of HEAD's commit and of every local branch tip, and the
    /// time of the newest entry of HEAD's and every local branch's reflog; seconds since the epoch,
    /// `None` when there is none.
    pub last_activity: Option<i64>,
    /// Entries of `git stash list`: work put aside that no state ranks, named in every reason.
    pub stashes: usize,
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

    /// The lower-ranked states that hold beside `state` and that a person acts on apart from it:
    /// uncommitted changes and commits not pushed, behind its upstream (not during an operation,
    /// whose line says where it stopped). A checkout stopped on a conflict with unpushed commits
    /// says both.
    fn also(&self, state: State) -> Vec<State> {
        let ahead = self.upstream.as_ref().map_or(0, |upstream| upstream.ahead);
        let behind = self.upstream.as_ref().map_or(0, |upstream| upstream.behind);
        let dirty = self.staged + self.unstaged + self.untracked > 0 && self.conflicted.is_empty();
        let mut also = Vec::new();
        if behind > 0 && state < State::Behind && self.operation.is_none() {
            also.push(State::Behind);
        }
        if dirty && state < State::Dirty {
            also.push(State::Dirty);
        }
        // Behind's own line counts the commits ahead too.
        if ahead > 0 && state < State::Unpushed && state != State::Behind && !also.contains(&State::Behind) {
            also.push(State::Unpushed);
        }
        also
    }

    /// The one-line reason for `state`, then `; also` the short reasons of the states that hold
    /// beside it ([`Facts::also`], e.g. `; also 3 ahead of origin/main`), then the stash entries
    /// when there are any (`, 2 stashes`), as `git status --show-stash` adds them.
    fn reason(&self, state: State, now: i64) -> String {
        let mut reason = self.state_reason(state, now);
        let also: Vec<String> = self.also(state).into_iter().map(|other| self.short_reason(other)).collect();
        if state != State::Error && !also.is_empty() {
            reason.push_str(&format!("; also {}", also.join(", ")));
        }
        match self.stashes {
            0 => reason,
            _ if state == State::Error => reason,
            1 => format!("{reason}, 1 stash"),
            count => format!("{reason}, {count} stashes"),
        }
    }

    /// `state`'s reason without the branch it is on (the first reason names it), for
    /// [`Facts::also`].
    fn short_reason(&self, state: State) -> String {
        let upstream = self.upstream.as_ref();
        let name = upstream.map_or("its upstream", |upstream| upstream.name.as_str());
        match state {
            State::Behind => {
                let (ahead, behind) = upstream.map_or((0, 0), |upstream| (upstream.ahead, upstream.behind));
                let ahead = if ahead > 0 { format!(", {ahead} ahead") } else { String::new() };
                format!("{behind} behind {name}{ahead}")
            }
            State::Unpushed => format!("{} ahead of {name}", upstream.map_or(0, |upstream| upstream.ahead)),
            _ => self.state_reason(state, 0).split(" on ").next().unwrap_or_default().to_owned(),
        }
    }

    /// The one-line reason for `state` alone.
    fn state_reason(&self, state: State, now: i64) -> String {
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
                    self.operation.map(|operation| format!(" ({} stopped)", operation.name())).unwrap_or_default();
                format!("{} conflicted: {named}{during}", self.conflicted.len())
            }
            State::Operation => {
                let operation = self.operation.map_or("operation", Operation::name);
                match &self.rebasing {
                    Some(branch) => format!("{operation} of {branch} in progress"),
                    None => format!("{operation} in progress{on_branch}"),
                }
            }
            State::Detached => match &self.detached_line {
                Some(line) => line.clone(),
                None => format!("HEAD detached{on_branch}"),
            },
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

impl Engine {
    /// `fleet.radar`: the attention queue over `targets`, cut to `options.max_repos` entries and
    /// `max_tokens`.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`budget_below_floor`) when the counts alone exceed `max_tokens`. One
    /// repository's failure is never an error: its entry has state `error`.
    pub fn radar(
        &self,
        targets: &Targets,
        options: &Options,
        max_tokens: usize,
        measure: &mut Measure<'_, Radar>,
    ) -> Result<Budgeted<Radar>> {
        let (listed, registry_problem) = self.fleet_targets(targets);
        let (listed, scanned, empty_folders) = self.expand_folders(listed);
        let read = self.fleet_each(
            listed,
            |location, call| self.cached_answer::<Facts>(location, call, FACTS_VARIANT).map(Ok),
            |repo| Ok(self.radar_facts(repo).map_err(|error| in_gits_words(&repo.git, &error))),
        );
        let mut counts = Counts::default();
        let mut queue: Vec<Entry> = read
            .into_iter()
            .map(|(target, root, outcome)| {
                let entry = match outcome.and_then(|read| read) {
                    Ok(facts) => {
                        let state = facts.state(options.now);
                        Entry {
                            repo_path: root,
                            label: target.label,
                            reason: facts.reason(state, options.now),
                            also: facts.also(state),
                            state,
                            error: None,
                        }
                    }
                    Err(mut failure) => {
                        if failure.reason == "not_a_repository" && !failure.message.starts_with(NOT_A_REPOSITORY) {
                            failure.message = not_a_repository(&target.path);
                        }
                        if empty_folders.contains(&target.path) {
                            failure.message.push_str(&format!(", and holds no checkout {SCAN_DEPTH} levels down"));
                        }
                        entry_error(root, target.label, &failure)
                    }
                };
                counts.add(entry.state);
                entry
            })
            .collect();
        queue.sort_by(|one, two| (one.state, &one.repo_path).cmp(&(two.state, &two.repo_path)));
        let hint = queue.is_empty().then(|| match (targets, registry_problem) {
            (Targets::Registry, Some(problem)) => {
                format!(
                    "{problem}; move it aside (`fluxgit-mcp-sidecar fleet add` then starts a new one), or pass \
                     repoPaths"
                )
            }
            (Targets::Registry, None) => EMPTY_REGISTRY_HINT.to_owned(),
            (Targets::Given(_), _) => "no repositories given: pass repoPaths or repositories, or leave both out to \
                read the registry"
                .to_owned(),
        });
        let full = Radar {
            repositories: queue.len(),
            counts,
            from_registry: matches!(targets, Targets::Registry),
            queue: first(&queue, options.max_repos),
            scanned,
            hint,
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

    /// `targets` with each folder that lies outside any repository replaced by the checkouts below
    /// it (module docs), what each folder gave, and the folders that held none (kept as targets:
    /// their entries say so). Folders outside the allowed roots are left as they are (their entries
    /// then say why they cannot be read).
    fn expand_folders(&self, targets: Vec<Target>) -> (Vec<Target>, Vec<Scanned>, HashSet<String>) {
        let mut out = Vec::with_capacity(targets.len());
        let mut scanned = Vec::new();
        let mut empty = HashSet::new();
        let is_folder: Vec<bool> = targets.iter().map(|target| self.is_folder_of_checkouts(&target.path)).collect();
        let folders = is_folder.iter().filter(|folder| **folder).count();
        let mut room = MAX_REPOSITORIES.saturating_sub(targets.len() - folders);
        for (target, is_folder) in targets.into_iter().zip(is_folder) {
            if !is_folder {
                out.push(target);
                continue;
            }
            let dir = std::path::Path::new(&target.path).canonicalize().unwrap_or_else(|_| target.path.clone().into());
            let scan = registry::scan_bounded(&dir, SCAN_DEPTH, room, MAX_SCANNED_DIRECTORIES);
            room -= scan.found.len();
            if scan.found.is_empty() && !scan.stopped {
                // Nothing below: the folder's own entry says it is no repository and holds none.
                empty.insert(target.path.clone());
                out.push(target);
                continue;
            }
            scanned.push(Scanned {
                path: target.path.clone(),
                found: scan.found.len(),
                depth: SCAN_DEPTH,
                stopped: scan.stopped,
            });
            if scan.found.is_empty() {
                out.push(target);
                continue;
            }
            out.extend(scan.found.into_iter().map(|path| Target { path: path.display().to_string(), label: None }));
        }
        (out, scanned, empty)
    }

    /// Whether `path` is an existing directory under the allowed roots with no `.git` in it or
    /// above it, and not itself a git dir: git would call it "not a git repository", and it may
    /// hold checkouts.
    fn is_folder_of_checkouts(&self, path: &str) -> bool {
        let path = std::path::Path::new(path);
        if !path.is_absolute() || path.to_str().is_some_and(|text| text.chars().any(char::is_control)) {
            return false;
        }
        let Ok(canonical) = path.canonicalize() else { return false };
        if !canonical.is_dir() || !self.allowed_roots().iter().any(|root| canonical.starts_with(root)) {
            return false;
        }
        let git_dir = canonical.join("HEAD").is_file() && canonical.join("objects").is_dir();
        !git_dir && canonical.ancestors().all(|dir| std::fs::symlink_metadata(dir.join(".git")).is_err())
    }

    /// The radar's facts of one repository, from the answer cache until any event of the
    /// repository.
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
                    detached_line: head.0.detached.then(|| detached_line(&repo.git)),
                    sha: head.1.clone(),
                    operation,
                    rebasing,
                    upstream: (*upstream).clone(),
                    conflicted: status.conflicted.clone(),
                    staged: status.staged.len(),
                    unstaged: status.unstaged.len(),
                    untracked: status.untracked.len(),
                    last_activity: last_activity(&repo.git)?,
                    stashes: facets.get(Facet::Stashes, stashes::read)?.len(),
                })
            },
        )
    }
}

/// The failure of a repository that opened but could not be read, in git's words where git has
/// them: a HEAD that does not parse makes git say `not a git repository`, and a HEAD whose object
/// is missing (an object store emptied, a branch file naming a lost commit) `bad object HEAD`.
/// Other failures keep their own message.
fn in_gits_words(git: &gix::Repository, error: &Error) -> Failure {
    if matches!(error, Error::GitRead { .. }) {
        match git.head() {
            Err(_) => {
                return Failure {
                    reason: "not_a_repository",
                    message: format!("{NOT_A_REPOSITORY}: HEAD is neither a ref nor an object id"),
                };
            }
            Ok(head) => {
                let named = head.referent_name().map(|name| format!("{} names ", name.shorten()));
                if let Some(id) = head.id().map(gix::Id::detach)
                    && !git.has_object(id)
                {
                    let named = named.unwrap_or_else(|| "HEAD names ".to_owned());
                    return Failure {
                        reason: "git_read_failed",
                        message: format!(
                            "bad object HEAD: {named}{}, missing from the object store",
                            &id.to_hex_with_len(12)
                        ),
                    };
                }
            }
        }
    }
    Failure::of(error)
}

/// git's words for a path it does not take for a repository.
const NOT_A_REPOSITORY: &str = "not a git repository";

/// Why `path` (absolute, under the allowed roots) is no repository, in git's words and then what is
/// amiss: no `.git` in it or above it, or a `.git` that lacks its `objects` directory or its
/// `HEAD`. Only file metadata is read.
fn not_a_repository(path: &str) -> String {
    let path = std::path::Path::new(path);
    let dot_git =
        path.ancestors().map(|dir| dir.join(".git")).find(|dot_git| std::fs::symlink_metadata(dot_git).is_ok());
    match dot_git {
        None => format!("{NOT_A_REPOSITORY}: no .git in {} or above it", path.display()),
        Some(dot_git) if dot_git.is_dir() && !dot_git.join("objects").is_dir() => {
            format!("{NOT_A_REPOSITORY}: {} has no objects directory", dot_git.display())
        }
        Some(dot_git) if dot_git.is_dir() && !dot_git.join("HEAD").is_file() => {
            format!("{NOT_A_REPOSITORY}: {} has no HEAD", dot_git.display())
        }
        Some(dot_git) => format!("{NOT_A_REPOSITORY}: {} is not a git dir git can open", dot_git.display()),
    }
}

fn entry_error(repo_path: String, label: Option<String>, failure: &Failure) -> Entry {
    Entry {
        repo_path,
        label,
        state: State::Error,
        also: Vec::new(),
        reason: failure.message.clone(),
        error: Some(failure.item()),
    }
}

/// `git status`'s first line for a detached HEAD, as its `wt_status_get_detached_from` finds it:
/// the newest `checkout: moving from A to B` entry of HEAD's reflog names B; when B is one ref (a
/// tag, a remote-tracking branch, a branch, tried in git's order) whose commit is the one that
/// checkout left HEAD at, the line names it (tags and remote-tracking branches by their short
/// names), else that commit's abbreviated sha. `at` when HEAD is still there, `from` when commits
/// were made or HEAD moved since. Without such an entry git says `Not currently on any branch.`
pub fn detached_line(git: &gix::Repository) -> String {
    let Some((target, left_at)) = last_checkout(git) else { return "Not currently on any branch.".to_owned() };
    let name = match dwim_ref(git, &target) {
        Some((full, id, peeled)) if id == left_at || peeled == Some(left_at) => {
            let short = full.strip_prefix("refs/tags/").or_else(|| full.strip_prefix("refs/remotes/"));
            short.unwrap_or(&full).to_owned()
        }
        _ => crate::abbrev::abbreviate_hex(git, &left_at.to_string()),
    };
    let at = git.head_id().is_ok_and(|id| id.detach() == left_at);
    format!("HEAD detached {} {name}", if at { "at" } else { "from" })
}

/// The target and the new commit of the newest `checkout: moving from A to B` entry of HEAD's
/// reflog.
fn last_checkout(git: &gix::Repository) -> Option<(String, gix::ObjectId)> {
    use gix::bstr::ByteSlice as _;
    let head = git.find_reference("HEAD").ok()?;
    let mut platform = head.log_iter();
    let lines = platform.rev().ok()??;
    for line in lines.flatten() {
        let Some(rest) = line.message.strip_prefix(b"checkout: moving from ") else { continue };
        let Some(at) = rest.find(" to ") else { continue };
        let target = rest[at + 4..].split_str("\n").next().unwrap_or_default().to_str_lossy().into_owned();
        let target = if target == "HEAD" {
            // git resolves a relative HEAD to the entry's commit.
            line.new_oid.to_string()
        } else {
            target
        };
        return Some((target, line.new_oid));
    }
    None
}

/// git's `repo_dwim_ref` for `name`: the one ref its rules (`NAME`, `refs/NAME`, `refs/tags/NAME`,
/// `refs/heads/NAME`, `refs/remotes/NAME`, `refs/remotes/NAME/HEAD`) find, symbolic refs followed,
/// with its id and the commit a tag peels to; `None` when none or more than one rule finds a ref.
fn dwim_ref(git: &gix::Repository, name: &str) -> Option<(String, gix::ObjectId, Option<gix::ObjectId>)> {
    if name.is_empty() || name.starts_with('-') {
        return None;
    }
    let root_ref = name.bytes().all(|byte| byte.is_ascii_uppercase() || byte == b'_');
    let candidates = [
        root_ref.then(|| name.to_owned()),
        Some(format!("refs/{name}")),
        Some(format!("refs/tags/{name}")),
        Some(format!("refs/heads/{name}")),
        Some(format!("refs/remotes/{name}")),
        Some(format!("refs/remotes/{name}/HEAD")),
    ];
    let mut found = Vec::new();
    for candidate in candidates.into_iter().flatten() {
        let Ok(full) = gix::refs::FullName::try_from(candidate.as_str()) else { continue };
        let Ok(Some(mut reference)) = git.refs.try_find(full.as_ref()) else { continue };
        // Follow symbolic refs (a remote's HEAD) to the ref they name, as git's resolution does.
        let mut hops = 0;
        while let gix::refs::Target::Symbolic(next) = &reference.target {
            hops += 1;
            match git.refs.try_find(next.as_ref()) {
                Ok(Some(target)) if hops < 5 => reference = target,
                _ => break,
            }
        }
        let gix::refs::Target::Object(id) = reference.target else { continue };
        found.push((reference.name.as_bstr().to_string(), id));
    }
    let [(full, id)] = found.as_slice() else { return None };
    let peeled = git.find_object(*id).ok().and_then(|object| object.peel_to_commit().ok()).map(|commit| commit.id);
    Some((full.clone(), *id, peeled))
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
