//! `worktree.list`: the main work tree and every linked worktree, like
//! `git worktree list --porcelain`, each with its upstream, its work-tree counts, the operation in
//! progress and the agents at work in it (issue 54): the state of every line of work in one call.
//!
//! Each worktree inside the allowed roots is read through the radar's cached facts (the same facets
//! `repo.brief` and `fleet.radar` share, valid until the watcher sees a change); one outside them
//! is named with `outsideRoots`, never read.

use serde::Serialize;

use crate::agents;
use crate::compact::is_false;
use crate::engine::{Engine, Repo};
use crate::error::{Error, ItemError, Result};
use crate::facets::operation::Operation;
use crate::facets::refs::Upstream;
use crate::facets::{head, utf8};
use crate::fleet::Target;
use crate::fleet::radar::{FACTS_VARIANT, Facts};

/// How `worktree.list` reads each worktree.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// How to find the agents at work in each worktree; `None` lists none (detection is off).
    pub agents: Option<agents::Options>,
}

/// The worktrees of one repository: the main one first, then linked ones by path (git's order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Every worktree.
    pub worktrees: Vec<Worktree>,
}

/// One worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Worktree {
    /// Absolute path of the checkout (the git dir for a bare main repository).
    pub path: String,
    /// `true` for the main work tree (or bare repository), `false` for a linked worktree; default
    /// false.
    #[serde(skip_serializing_if = "is_false")]
    pub main: bool,
    /// `true` for the worktree `repoPath` resolved to; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub current: bool,
    /// `true` when the main repository is bare (it has no checkout).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bare: bool,
    /// The checked-out branch's short name; `None` when detached (or bare); default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// `true` when HEAD names a commit directly; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub detached: bool,
    /// The commit HEAD resolves to, abbreviated as `git worktree list` does (the shortest unique
    /// prefix, at least `core.abbrev`: worktrees share one object store); `None` on an unborn
    /// branch and for a bare repository (as git lists it); default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_sha: Option<String>,
    /// `true` when `git worktree lock` protects it from pruning; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub locked: bool,
    /// The lock reason, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock_reason: Option<String>,
    /// `true` when its checkout is gone, so `git worktree prune` would remove its administrative
    /// files; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub prunable: bool,
    /// Why this worktree's entry could not be read (e.g. its `HEAD` file is not a ref); its
    /// `branch` and `headSha` are then `null`. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ItemError>,
    /// `true` when its path lies outside the allowed roots: named, not read, so no counts, upstream
    /// or agents; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub outside_roots: bool,
    /// The checked-out branch's upstream with ahead/behind (as `git status -sb`); absent without
    /// one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
    /// Its commits against the repository's default branch (`name` the branch, e.g. `main`;
    /// `ahead` = commits only this worktree's HEAD has, `behind` = commits only the default branch
    /// has, as `git rev-list --left-right --count HEAD...main`); absent on the default branch
    /// itself, without one, and for a worktree not read. What an agent's branch, which seldom has
    /// an upstream, has done so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_default: Option<Upstream>,
    /// The operation stopped in this worktree (`merge`, `rebase`, ...); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<Operation>,
    /// Paths with unmerged entries; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub conflicted: usize,
    /// Paths staged in its index; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub staged: usize,
    /// Tracked paths changed in its work tree and not staged; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub unstaged: usize,
    /// Untracked paths (not ignored), as `git status` counts them; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub untracked: usize,
    /// The agents detected at work in it (`claude-code`, `codex`, ...), by kind; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    /// When the most recent of those agents last acted, in Unix milliseconds; absent without agents
    /// or without a time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_activity_ms: Option<u64>,
    /// Why its state (counts, upstream) could not be read though its entry could; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_error: Option<String>,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

impl Engine {
    /// `worktree.list`: the main work tree and the linked worktrees of `repo`'s repository, each
    /// inside the allowed roots with its upstream, counts, operation and (with `options.agents`)
    /// agents.
    ///
    /// # Errors
    /// [`Error::GitRead`] when the worktree registry or a worktree's HEAD cannot be read; a
    /// worktree whose state cannot be read is listed with `stateError` instead.
    /// [`Error::Interrupted`] when the call is cancelled.
    pub fn worktree_list(&self, repo: &Repo, options: &Options) -> Result<Report> {
        let mut report = self.worktree_entries(repo)?;
        let mut targets = Vec::new();
        for worktree in &mut report.worktrees {
            let path = std::path::Path::new(&worktree.path);
            if !self.allowed_roots().iter().any(|root| path.starts_with(root)) {
                worktree.outside_roots = true;
            } else if !worktree.bare && !worktree.prunable && worktree.error.is_none() && !worktree.current {
                targets.push(Target { path: worktree.path.clone(), label: None });
            }
        }
        // The worktree `repo` names is read through `repo` itself (opened once per call); the others each open
        // theirs.
        let mut read: Vec<(String, std::result::Result<Facts, String>)> = self
            .fleet_each(
                targets,
                |location, call| self.cached_answer::<Facts>(location, call, FACTS_VARIANT),
                |worktree| self.radar_facts(worktree),
            )
            .into_iter()
            .map(|(target, _root, outcome)| (target.path, outcome.map_err(|failure| failure.message)))
            .collect();
        if let Some(current) = report
            .worktrees
            .iter()
            .find(|worktree| worktree.current && !worktree.outside_roots && !worktree.bare && worktree.error.is_none())
        {
            read.push((current.path.clone(), self.radar_facts(repo).map_err(|error| error.to_string())));
        }
        repo.interrupt.check()?;
        let default = crate::facets::refs::default_branch(&repo.git)?;
        let default_tip = default.as_deref().and_then(|branch| tip(&repo.git, &format!("refs/heads/{branch}")));
        for (path, outcome) in read {
            let Some(worktree) = report.worktrees.iter_mut().find(|worktree| worktree.path == path) else {
                continue;
            };
            match outcome {
                Ok(facts) => {
                    worktree.upstream = facts.upstream;
                    worktree.operation = facts.operation;
                    worktree.conflicted = facts.conflicted.len();
                    worktree.staged = facts.staged;
                    worktree.unstaged = facts.unstaged;
                    worktree.untracked = facts.untracked;
                }
                Err(message) => worktree.state_error = Some(message),
            }
            if let (Some(name), Some(default_tip)) = (&default, default_tip) {
                let head = worktree.head_sha.as_deref().and_then(|sha| tip(&repo.git, sha));
                if let Some(head) = head.filter(|_| worktree.branch.as_ref() != Some(name)) {
                    let (ahead, behind) = crate::ancestry::ahead_behind(&repo.git, head, default_tip)?;
                    worktree.vs_default = Some(Upstream { name: name.clone(), ahead, behind, gone: false });
                }
            }
        }
        if let Some(agent_options) = &options.agents {
            // One read of the process table for every worktree read.
            let read: Vec<usize> = (0..report.worktrees.len())
                .filter(|&index| {
                    let worktree = &report.worktrees[index];
                    !worktree.outside_roots && !worktree.bare && !worktree.prunable && worktree.error.is_none()
                })
                .collect();
            let checkouts: Vec<(&std::path::Path, Option<&str>)> = read
                .iter()
                .map(|&index| {
                    let worktree = &report.worktrees[index];
                    (std::path::Path::new(worktree.path.as_str()), worktree.branch.as_deref())
                })
                .collect();
            let found = self.agents.detect_many(&checkouts, agent_options);
            for (index, found) in read.into_iter().zip(found) {
                let worktree = &mut report.worktrees[index];
                for agent in found.agents {
                    if !worktree.agents.contains(&agent.agent) {
                        worktree.agents.push(agent.agent.clone());
                    }
                    worktree.last_activity_ms = worktree.last_activity_ms.max(agent.last_activity_ms);
                }
            }
        }
        Ok(report)
    }

    /// The worktree registry alone, as `git worktree list --porcelain` lists it: nothing read
    /// inside the worktrees but their `HEAD`.
    ///
    /// # Errors
    /// As [`Engine::worktree_list`].
    pub(crate) fn worktree_entries(&self, repo: &Repo) -> Result<Report> {
        let git = &repo.git;
        let to_err = |err| Error::git("worktrees", err);
        let current = repo.location.git_dir.as_path();
        // From the main work tree the handle in hand is the main repository: opening it again (configuration files,
        // the pack directory) is only needed from a linked worktree.
        let main = if git.git_dir() == git.common_dir() { git.clone() } else { git.main_repo().map_err(to_err)? };
        let main_git_dir = canonical(main.git_dir());
        let main_path = main.workdir().map_or_else(|| main_git_dir.clone(), canonical);
        let mut worktrees = vec![describe(&main, main_path, main_git_dir == current, true)?];
        let mut linked = Vec::new();
        for proxy in git.worktrees().map_err(to_err)? {
            let locked = proxy.is_locked();
            let lock_reason = proxy.lock_reason().map(|reason| utf8(&reason)).filter(|reason| !reason.is_empty());
            let prunable = proxy.is_prunable();
            let path = proxy.base().map_or_else(|_| proxy.git_dir().to_path_buf(), |base| canonical(&base));
            let is_current = canonical(proxy.git_dir()) == current;
            let described = proxy
                .into_repo_with_possibly_inaccessible_worktree()
                .map_err(|err| Error::git("worktree", err))
                .and_then(|opened| describe(&opened, path.clone(), is_current, false));
            let mut worktree = match described {
                Ok(worktree) => worktree,
                Err(err) => Worktree {
                    path: path.display().to_string(),
                    main: false,
                    current: is_current,
                    bare: false,
                    branch: None,
                    detached: false,
                    head_sha: None,
                    locked: false,
                    lock_reason: None,
                    prunable: false,
                    error: Some(ItemError::from_error(err)),
                    ..Worktree::unread()
                },
            };
            worktree.locked = locked;
            worktree.lock_reason = lock_reason;
            worktree.prunable = prunable;
            linked.push(worktree);
        }
        linked.sort_by(|a, b| a.path.cmp(&b.path));
        worktrees.extend(linked);
        Ok(Report { worktrees })
    }
}

/// The commit a revision (a full ref name or an abbreviated sha) peels to, if any.
fn tip(git: &gix::Repository, revision: &str) -> Option<gix::ObjectId> {
    git.rev_parse_single(revision).ok()?.object().ok()?.peel_to_commit().ok().map(|commit| commit.id)
}

fn canonical(path: &std::path::Path) -> std::path::PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

fn describe(repo: &gix::Repository, path: std::path::PathBuf, current: bool, main: bool) -> Result<Worktree> {
    let bare = main && repo.workdir().is_none();
    let head = head::read(repo)?;
    Ok(Worktree {
        path: path.display().to_string(),
        main,
        current,
        bare,
        branch: if bare { None } else { head.branch },
        detached: head.detached && !bare,
        head_sha: if bare { None } else { head.sha.map(|sha| crate::facets::commits::abbreviate_hex(repo, &sha)) },
        locked: false,
        lock_reason: None,
        prunable: false,
        error: None,
        ..Worktree::unread()
    })
}

impl Worktree {
    /// An entry with nothing read: the base the registry's entries fill in.
    fn unread() -> Self {
        Self {
            path: String::new(),
            main: false,
            current: false,
            bare: false,
            branch: None,
            detached: false,
            head_sha: None,
            locked: false,
            lock_reason: None,
            prunable: false,
            error: None,
            outside_roots: false,
            upstream: None,
            vs_default: None,
            operation: None,
            conflicted: 0,
            staged: 0,
            unstaged: 0,
            untracked: 0,
            agents: Vec::new(),
            last_activity_ms: None,
            state_error: None,
        }
    }
}
