//! worktreeRemove (issue 54): which linked worktree a proposal names, and what removing it would lose.
//!
//! [`locate`] finds the registered linked worktree a path names (absolute, or relative to the repository's work
//! tree; compared canonically, so a symlink or `..` names the worktree it leads to) and refuses the main worktree,
//! the repository's own work tree, a path that is no registered linked worktree and one outside the allowed
//! roots, which is named and never read. [`assess`] then lists what `git worktree remove` (never `--force`) would
//! lose, more strictly than git: a lock, a missing checkout, uncommitted changes (staged, unstaged, untracked not
//! ignored, conflicts), an operation in progress, and commits of its HEAD that no other ref reaches, as
//! `git rev-list <head> --not <every ref but its own branch and refs/fluxgit/> <every other worktree's HEAD>`
//! counts them. The branch itself is kept, so a branch's commits are not deleted by the removal: they are refused
//! because nothing but that branch would hold them any more, while a detached HEAD's commits would be lost.
//! Ignored files are deleted with the worktree, as git deletes them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::git::Git;

/// Most uncommitted paths and commits named in a refusal (the counts stay exact).
pub const MAX_LISTED: usize = 20;

/// A linked worktree as the registry lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Located {
    /// Its path as `git worktree list` gives it (what `git worktree remove` is given).
    pub worktree_path: String,
    /// Where it leads now, canonical (inside the allowed roots when located).
    pub resolved_path: PathBuf,
    /// The checked-out branch (`refs/heads/...`); `None` when detached.
    pub branch: Option<String>,
    /// HEAD's commit; `None` on an unborn branch.
    pub head_sha: Option<String>,
    /// The lock reason (empty when locked without one); `None` when not locked.
    pub locked: Option<String>,
    /// Whether its checkout is gone (git lists it `prunable`, or it does not exist).
    pub missing: bool,
}

impl Located {
    /// The branch's short name, if on one.
    pub fn branch_name(&self) -> Option<&str> {
        self.branch.as_deref().map(|name| name.strip_prefix("refs/heads/").unwrap_or(name))
    }
}

/// One entry of `git worktree list --porcelain -z`.
#[derive(Debug, Default)]
struct Entry {
    path: String,
    head: Option<String>,
    branch: Option<String>,
    locked: Option<String>,
    prunable: bool,
}

/// The registry, the main worktree first.
fn entries(git: &Git) -> Result<Vec<Entry>, Refused> {
    let listing = git
        .read_ok(&["worktree", "list", "--porcelain", "-z"])
        .map_err(|error| refused("unreadable_repository", format!("the worktrees cannot be listed: {error}")))?;
    let mut entries = Vec::new();
    let mut current: Option<Entry> = None;
    for field in listing.split('\0') {
        if field.is_empty() {
            entries.extend(current.take());
            continue;
        }
        if let Some(path) = field.strip_prefix("worktree ") {
            entries.extend(current.take());
            current = Some(Entry { path: path.to_owned(), ..Entry::default() });
            continue;
        }
        let Some(entry) = current.as_mut() else { continue };
        if let Some(head) = field.strip_prefix("HEAD ") {
            entry.head = Some(head.to_owned()).filter(|sha| !sha.bytes().all(|byte| byte == b'0'));
        } else if let Some(branch) = field.strip_prefix("branch ") {
            entry.branch = Some(branch.to_owned());
        } else if field == "locked" {
            entry.locked = Some(String::new());
        } else if let Some(reason) = field.strip_prefix("locked ") {
            entry.locked = Some(reason.to_owned());
        } else if field == "prunable" || field.starts_with("prunable ") {
            entry.prunable = true;
        }
    }
    entries.extend(current);
    Ok(entries)
}

/// Why a path names no worktree that may be removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// Machine reason: `invalid_path`, `outside_allowed_roots`, `not_a_worktree`, `main_worktree`,
    /// `current_worktree` or `unreadable_repository`.
    pub reason: &'static str,
    /// One sentence.
    pub message: String,
}

fn refused(reason: &'static str, message: String) -> Refused {
    Refused { reason, message }
}

/// The registered linked worktree `path` names in the repository whose work tree `git` runs in (see the module
/// docs). Reads nothing inside the worktree.
pub fn locate(git: &Git, path: &str, allowed_roots: &[PathBuf]) -> Result<Located, Refused> {
    if path.is_empty() || path.chars().any(char::is_control) {
        return Err(refused("invalid_path", "path must be a non-empty path without control characters".into()));
    }
    let given = Path::new(path);
    let absolute = if given.is_absolute() { given.to_owned() } else { git.work_tree().join(given) };
    let target = fluxgit_contract::resolved_path(&absolute);
    let inside = |candidate: &Path| allowed_roots.iter().any(|root| candidate.starts_with(root));
    if !inside(&target) {
        return Err(refused(
            "outside_allowed_roots",
            format!("{} is outside the allowed roots: named, not read; nothing was proposed", target.display()),
        ));
    }
    let entries = entries(git)?;
    let found =
        entries.iter().enumerate().find(|(_, entry)| fluxgit_contract::resolved_path(Path::new(&entry.path)) == target);
    let Some((index, entry)) = found else {
        return Err(refused(
            "not_a_worktree",
            format!("{} is not a linked worktree of this repository (see worktree_list)", target.display()),
        ));
    };
    if index == 0 {
        return Err(refused("main_worktree", format!("{} is the main worktree: it is never removed", entry.path)));
    }
    if fluxgit_contract::resolved_path(git.work_tree()) == target {
        return Err(refused(
            "current_worktree",
            format!("{} is repoPath itself: propose from another worktree of the repository", entry.path),
        ));
    }
    let missing = entry.prunable || std::fs::symlink_metadata(&entry.path).is_err();
    Ok(Located {
        worktree_path: entry.path.clone(),
        resolved_path: target,
        branch: entry.branch.clone(),
        head_sha: entry.head.clone(),
        locked: entry.locked.clone(),
        missing,
    })
}

/// Why a removal is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Blocker {
    /// Machine reason: `worktree_locked`, `worktree_missing`, `uncommitted_changes`, `operation_in_progress`,
    /// `commits_would_be_lost`, `commits_only_on_branch` or `unassessable`.
    pub reason: &'static str,
    /// One sentence.
    pub message: String,
}

/// What removing a worktree would lose, as assessed now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Assessment {
    /// Every reason to refuse, in the order above; empty: nothing is lost.
    pub blockers: Vec<Blocker>,
    /// Uncommitted paths as `git status --porcelain` shows them (`XY path`), at most [`MAX_LISTED`].
    pub uncommitted: Vec<String>,
    /// All uncommitted paths.
    pub uncommitted_count: usize,
    /// The operation in progress (`merge`, `rebase`, `cherry-pick`, `revert`, `bisect`).
    pub operation: Option<&'static str>,
    /// Commits no other ref reaches, newest first, as `sha subject`, at most [`MAX_LISTED`].
    pub commits: Vec<String>,
    /// All of them.
    pub commit_count: usize,
}

impl Assessment {
    /// The assessment as JSON (a refusal's result).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// What removing `located` (a linked worktree of `git`'s repository, inside the allowed roots) would lose now.
pub fn assess(git: &Git, located: &Located) -> Assessment {
    let mut assessment = Assessment::default();
    let block = |reason: &'static str, message: String| Blocker { reason, message };
    let mut blockers = Vec::new();
    if let Some(reason) = &located.locked {
        let why = if reason.is_empty() { String::new() } else { format!(" ({reason})") };
        blockers.push(block(
            "worktree_locked",
            format!("the worktree is locked{why}: `git worktree unlock` it first if it may go"),
        ));
    }
    if located.missing {
        blockers.push(block(
            "worktree_missing",
            "its checkout is gone: `git worktree prune` removes the registration; nothing to remove here".into(),
        ));
    } else {
        let worktree = Git::new(Path::new(&located.worktree_path));
        match worktree.read(&[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--ignore-submodules=none",
            "--no-renames",
        ]) {
            Ok(output) if output.success => {
                let records: Vec<&str> = output.stdout.split('\0').filter(|record| !record.is_empty()).collect();
                assessment.uncommitted_count = records.len();
                assessment.uncommitted = records.iter().take(MAX_LISTED).map(|record| (*record).to_owned()).collect();
                if !records.is_empty() {
                    let conflicts = records.iter().filter(|record| is_unmerged(record)).count();
                    let conflicted =
                        if conflicts > 0 { format!(", {conflicts} with conflicts") } else { String::new() };
                    blockers.push(block(
                        "uncommitted_changes",
                        format!(
                            "{} uncommitted path(s){conflicted} would be lost with the worktree (staged, unstaged or \
                             untracked): commit or stash them first",
                            records.len()
                        ),
                    ));
                }
            }
            Ok(output) => {
                blockers.push(block("unassessable", format!("its changes cannot be read: {}", output.stderr.trim())))
            }
            Err(error) => blockers.push(block("unassessable", format!("its changes cannot be read: {error}"))),
        }
        match operation_in_progress(&worktree) {
            Ok(Some(operation)) => {
                assessment.operation = Some(operation);
                blockers.push(block(
                    "operation_in_progress",
                    format!("a {operation} is in progress in it: finish or abort it first"),
                ));
            }
            Ok(None) => {}
            Err(message) => blockers.push(block("unassessable", message)),
        }
    }
    if let Some(head) = &located.head_sha {
        match only_here(git, located, head) {
            Ok((count, commits)) => {
                assessment.commit_count = count;
                assessment.commits = commits;
                if count > 0 {
                    blockers.push(match located.branch_name() {
                        Some(branch) => block(
                            "commits_only_on_branch",
                            format!(
                                "{count} commit(s) of branch {branch} are reached by no other branch, \
                                 remote-tracking branch, tag, stash or worktree; the branch is kept, so the removal \
                                 deletes none of them, but nothing else would hold them: merge or push them first"
                            ),
                        ),
                        None => block(
                            "commits_would_be_lost",
                            format!(
                                "{count} commit(s) at its detached HEAD are reached by no ref: removing the worktree \
                                 would lose them (its HEAD's reflog goes with it); create a branch at {head} first"
                            ),
                        ),
                    });
                }
            }
            Err(message) => blockers.push(block("unassessable", message)),
        }
    }
    assessment.blockers = blockers;
    assessment
}

/// Whether a `git status --porcelain` record is an unmerged path.
fn is_unmerged(record: &str) -> bool {
    matches!(record.get(..2), Some("DD" | "AU" | "UD" | "UA" | "DU" | "AA" | "UU"))
}

/// The operation stopped in `worktree`, from the markers in its git dir (never followed through a symlink).
fn operation_in_progress(worktree: &Git) -> Result<Option<&'static str>, String> {
    let output = worktree.read_ok(&["rev-parse", "--absolute-git-dir"]).map_err(|error| error.to_string())?;
    let git_dir = PathBuf::from(output.trim());
    let markers = [
        ("rebase-merge", "rebase"),
        ("rebase-apply", "rebase"),
        ("MERGE_HEAD", "merge"),
        ("CHERRY_PICK_HEAD", "cherry-pick"),
        ("REVERT_HEAD", "revert"),
        ("sequencer", "cherry-pick"),
        ("BISECT_LOG", "bisect"),
    ];
    Ok(markers.iter().find(|(marker, _)| git_dir.join(marker).symlink_metadata().is_ok()).map(|(_, name)| *name))
}

/// The commits of `head` no other ref reaches (see the module docs): their count and the newest
/// [`MAX_LISTED`] as `sha subject`.
fn only_here(git: &Git, located: &Located, head: &str) -> Result<(usize, Vec<String>), String> {
    let refs = git
        .read_ok(&["for-each-ref", "--format=%(objectname) %(refname)"])
        .map_err(|error| format!("the refs cannot be listed: {error}"))?;
    let own = located.branch.as_deref();
    let mut input = format!("{head}\n");
    for line in refs.lines() {
        let Some((sha, name)) = line.split_once(' ') else { continue };
        if Some(name) == own || name.starts_with("refs/fluxgit/") {
            continue;
        }
        let _ = writeln!(input, "^{sha}");
    }
    let target = fluxgit_contract::resolved_path(Path::new(&located.worktree_path));
    for entry in entries(git).map_err(|refusal| refusal.message)? {
        if fluxgit_contract::resolved_path(Path::new(&entry.path)) != target
            && let Some(sha) = entry.head
        {
            let _ = writeln!(input, "^{sha}");
        }
    }
    let count = git
        .read_with_input(&["rev-list", "--count", "--stdin"], input.as_bytes())
        .map_err(|error| error.to_string())?;
    if !count.success {
        return Err(format!("the commits only this worktree holds cannot be counted: {}", count.stderr.trim()));
    }
    let count: usize = count.stdout.trim().parse().map_err(|_| "rev-list --count gave no number".to_owned())?;
    if count == 0 {
        return Ok((0, Vec::new()));
    }
    let limit = MAX_LISTED.to_string();
    let log = git
        .read_with_input(&["log", "--no-decorate", "--format=%H %s", "-n", limit.as_str(), "--stdin"], input.as_bytes())
        .map_err(|error| error.to_string())?;
    Ok((count, log.stdout.lines().map(str::to_owned).collect()))
}
