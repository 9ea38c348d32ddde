//! The executor: runs approved proposals with the git CLI behind a restore point (design.md#gateway).
//!
//! [`run_approved`] is the only way an operation starts: revalidate the canonical repository and the refs
//! recorded at approval (any difference: `failed` with a `blocked_*` reason, git never runs), claim
//! (`approved -> executing`, committed before anything else), take the restore point (journaled), run the
//! operation, record the refs after it, and complete or fail with the result (`newSha`, `conflicts`,
//! `restorePointId` and, when completed, `undo`: the git commands that put the refs back). A merge or rebase that stops on conflicts is aborted (`git merge --abort`,
//! `git rebase --abort`) and reported with its conflicting paths. branchDelete, worktree, worktreeRemove, push and
//! submodulePointer follow design.md#gateway (see their functions); what they must find unchanged was observed on receipt
//! ([`proposal::OBSERVED`]). Hooks, signing and credential helpers apply; a
//! git command still running after [`git_timeout`] is stopped with everything it started, and the proposal fails.
//!
//! Fault points for crash tests: when `FLUXGIT_GATEWAY_FAULT` names one (`after_claim`, `after_restore_point`,
//! `after_git`, `after_complete`, and in a plan `after_step_<n>`, counted from 1), the process sends itself SIGKILL
//! there.

use std::collections::BTreeMap;
use std::path::PathBuf;

use fluxgit_contract::{HEAD, MergeStrategy, Operation, ResetMode};
use serde_json::{Value, json};

use crate::audit::Audit;
use crate::git::{self, Git};
use crate::journal::{Change, Journal, Proposal, Status};
use crate::proposal::{self, field, flag, path_list};
use crate::repo::{self, Canonical};
use crate::restore;
use crate::worktree_remove;

/// The fault point variable (tests only).
pub const FAULT_VAR: &str = "FLUXGIT_GATEWAY_FAULT";
/// Seconds an executed git command (with its hooks) may run before it is stopped; default 600.
pub const GIT_TIMEOUT_VAR: &str = "FLUXGIT_GATEWAY_GIT_TIMEOUT_SECS";

/// The executor's git timeout: [`GIT_TIMEOUT_VAR`], else 10 minutes.
pub fn git_timeout() -> std::time::Duration {
    let seconds =
        std::env::var(GIT_TIMEOUT_VAR).ok().and_then(|value| value.parse::<u64>().ok()).filter(|seconds| *seconds > 0);
    std::time::Duration::from_secs(seconds.unwrap_or(600))
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Whether it completed.
    pub completed: bool,
    /// Machine reason when it did not.
    pub reason: Option<String>,
    /// Message when it did not.
    pub message: Option<String>,
    /// What git did.
    pub result: Value,
}

/// An executor error (journal or git plumbing, not an operation's own failure).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The journal failed.
    #[error(transparent)]
    Journal(#[from] crate::journal::Error),
    /// The restore point could not be taken.
    #[error(transparent)]
    Restore(#[from] restore::Error),
}

/// The repository state recorded at approval and checked again before execution.
pub fn approval_snapshot(repo: &Canonical) -> Result<Value, git::Error> {
    let git = Git::new(&repo.work_tree);
    let heads: BTreeMap<String, String> =
        git.refs()?.into_iter().filter(|(name, _)| name.starts_with("refs/heads/")).collect();
    Ok(json!({
        "canonical": repo,
        "headRef": git.head_symbolic()?,
        "headSha": git.head_sha()?,
        "heads": heads,
    }))
}

/// Why the repository no longer is what was approved, if it is not.
pub fn revalidate(proposal: &Proposal, allowed_roots: &[PathBuf]) -> Option<(&'static str, String)> {
    let received: Option<Canonical> = serde_json::from_value(proposal.canonical.clone()).ok();
    let resolved = match repo::resolve(std::path::Path::new(&proposal.repo_path), allowed_roots) {
        Ok(resolved) => resolved,
        Err(error) => return Some(("blocked_unresolved_repository", error.to_string())),
    };
    if received.as_ref() != Some(&resolved) {
        return Some(("blocked_repository_mismatch", "the repository path now resolves to another repository".into()));
    }
    let Some(approved) = &proposal.approval else {
        return Some(("blocked_not_approved", "no approval snapshot was recorded".into()));
    };
    if approved.get("canonical") != serde_json::to_value(&resolved).ok().as_ref() {
        return Some(("blocked_repository_mismatch", "the repository differs from the one approved".into()));
    }
    match approval_snapshot(&resolved) {
        Ok(now) if now == *approved => None,
        Ok(_) => Some(("blocked_refs_moved", "HEAD or a branch moved since the approval; propose again".into())),
        Err(error) => Some(("blocked_unreadable_repository", error.to_string())),
    }
}

/// Runs one approved proposal end to end (see the module docs). Returns `false` when another process claimed it
/// first or it was no longer approved.
pub fn run_approved(
    journal: &mut Journal,
    proposal: &Proposal,
    allowed_roots: &[PathBuf],
    audit: &Audit,
) -> Result<bool, Error> {
    let _lock = journal.execution_lock()?;
    if let Some((reason, message)) = revalidate(proposal, allowed_roots) {
        let change = Change {
            actor: "gateway",
            detail: "revalidation failed before execution",
            reason: Some(reason),
            message: Some(&message),
            ..Change::default()
        };
        let moved = journal.transition(&proposal.id, &[Status::Approved], Status::Failed, &change)?;
        if moved {
            audit.execution(proposal, false, reason);
        }
        return Ok(moved);
    }
    let claim = Change { actor: "gateway", detail: "claimed for execution", ..Change::default() };
    if !journal.transition(&proposal.id, &[Status::Approved], Status::Executing, &claim)? {
        return Ok(false);
    }
    fault("after_claim");
    let canonical: Canonical =
        serde_json::from_value(proposal.canonical.clone()).expect("revalidate parsed this canonical repository");
    let others = restore_scope(Operation::from_name(&proposal.op), &proposal.body, &canonical);
    let point = match restore::create(journal, &canonical, &proposal.id, &proposal.op, &others) {
        Ok(point) => point,
        Err(error) => {
            let message = format!("no restore point could be taken, so nothing ran: {error}");
            let change = Change {
                actor: "gateway",
                detail: "restore point failed",
                reason: Some("restore_point_failed"),
                message: Some(&message),
                ..Change::default()
            };
            journal.transition(&proposal.id, &[Status::Executing], Status::Failed, &change)?;
            audit.execution(proposal, false, "restore_point_failed");
            return Ok(true);
        }
    };
    fault("after_restore_point");
    let git = Git::new(&canonical.work_tree).with_timeout(git_timeout());
    let context = Context { allowed_roots, restore: Some((journal.dir().to_owned(), point.id.clone())) };
    let mut outcome = execute(&git, &proposal.op, &proposal.body, &context).unwrap_or_else(|error| Outcome {
        completed: false,
        reason: Some("git_failed".into()),
        message: Some(error.to_string()),
        result: json!({}),
    });
    fault("after_git");
    let refs_after = git.refs();
    if let Ok(refs_after) = &refs_after {
        journal.set_refs_after(&point.id, &json!(refs_after))?;
    }
    if let Value::Object(result) = &mut outcome.result {
        result.insert("restorePointId".into(), json!(point.id));
        if outcome.completed
            && let (Ok(refs_after), Ok(head_ref_after)) = (&refs_after, git.head_symbolic())
        {
            let mut undo = restore::undo_commands(&point, refs_after, head_ref_after.as_deref());
            undo.extend(
                result.get("readd").and_then(Value::as_str).filter(|readd| !readd.is_empty()).map(str::to_owned),
            );
            result.insert("undo".into(), json!(undo));
        }
    }
    let (to, detail) = if outcome.completed { (Status::Completed, "executed") } else { (Status::Failed, "git failed") };
    let change = Change {
        actor: "gateway",
        detail,
        reason: outcome.reason.as_deref(),
        message: outcome.message.as_deref(),
        result: Some(&outcome.result),
        ..Change::default()
    };
    journal.transition(&proposal.id, &[Status::Executing], to, &change)?;
    audit.execution(proposal, outcome.completed, outcome.reason.as_deref().unwrap_or("completed"));
    fault("after_complete");
    Ok(true)
}

/// Sends this process SIGKILL when [`FAULT_VAR`] names `point` (crash tests).
fn fault(point: &str) {
    if std::env::var(FAULT_VAR).is_ok_and(|value| value == point) {
        let pid = std::process::id().to_string();
        let _ = std::process::Command::new("kill").args(["-KILL", pid.as_str()]).status();
        // Without a `kill` program, die as abruptly as the platform allows.
        std::thread::sleep(std::time::Duration::from_secs(2));
        std::process::abort();
    }
}

fn failed(reason: &str, message: impl Into<String>, result: Value) -> Outcome {
    Outcome { completed: false, reason: Some(reason.into()), message: Some(message.into()), result }
}

fn head(git: &Git) -> Result<Option<String>, git::Error> {
    git.head_sha()
}

fn completed(git: &Git, mut extra: Value) -> Result<Outcome, git::Error> {
    if let Value::Object(map) = &mut extra {
        map.insert("newSha".into(), json!(head(git)?));
    }
    Ok(Outcome { completed: true, reason: None, message: None, result: extra })
}

fn conflicts(git: &Git) -> Vec<String> {
    git.read_ok(&["diff", "--name-only", "--diff-filter=U"])
        .map(|listing| listing.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// What an operation needs besides its repository and body.
#[derive(Debug, Clone, Default)]
pub struct Context<'a> {
    /// The allowed roots (branchDelete's other repositories and a worktree's path are checked again).
    pub allowed_roots: &'a [PathBuf],
    /// The journal's dir and the restore point's id, under which a plan's per-step snapshots are saved.
    pub restore: Option<(PathBuf, String)>,
}

/// The other repositories whose state the restore point of `op` saves besides `repo` (see [`restore::Other`]):
/// branchDelete's other target repositories (refs and config), a submodulePointer's parent (when nested) and
/// submodule (in full).
pub fn restore_scope(op: Option<Operation>, body: &Value, repo: &Canonical) -> Vec<restore::Other> {
    let observed = &body[proposal::OBSERVED];
    let mut others: Vec<restore::Other> = Vec::new();
    let mut add = |path: PathBuf, full: bool| {
        if path != repo.work_tree && !others.iter().any(|other| other.work_tree == path) && path.is_dir() {
            others.push(restore::Other { work_tree: path, full });
        }
    };
    let Some(operation) = op else { return others };
    match operation {
        Operation::BranchDelete => {
            for target in observed["targets"].as_array().into_iter().flatten() {
                if let Some(work_tree) = target["canonical"]["workTree"].as_str() {
                    add(PathBuf::from(work_tree), false);
                }
            }
        }
        Operation::SubmodulePointer => {
            for key in ["parentWorkTree", "submoduleWorkTree"] {
                if let Some(work_tree) = observed[key].as_str() {
                    add(PathBuf::from(work_tree), true);
                }
            }
        }
        Operation::Merge
        | Operation::Rebase
        | Operation::Discard
        | Operation::Reset
        | Operation::Patch
        | Operation::Plan
        | Operation::Worktree
        | Operation::Commit
        | Operation::Push
        | Operation::Branch
        | Operation::WorktreeRemove => {}
    }
    others
}

/// Runs the git side of one operation on `git`'s work tree.
pub fn execute(git: &Git, op: &str, body: &Value, context: &Context<'_>) -> Result<Outcome, git::Error> {
    let previous = head(git)?;
    // Unreachable: `http::propose` refuses operations outside the contract at receipt.
    let Some(operation) = Operation::from_name(op) else {
        return Ok(failed(
            "unknown_operation",
            format!("'{op}' is not an operation of the contract; nothing was run"),
            json!({}),
        ));
    };
    match operation {
        Operation::Merge => merge(git, body, previous),
        Operation::Rebase => rebase(git, body, previous),
        Operation::Discard => discard(git, body),
        Operation::Reset => {
            let mode = field(body, "mode", ResetMode::default().name());
            let flag = format!("--{mode}");
            let target = field(body, "targetRef", HEAD);
            let output = git.write(&["reset", "-q", flag.as_str(), target, "--"], None)?;
            if !output.success {
                return Ok(failed("git_failed", output.stderr.trim(), json!({ "previousSha": previous })));
            }
            completed(git, json!({ "previousSha": previous, "mode": mode }))
        }
        Operation::Patch => {
            let mut args = vec!["apply"];
            if flag(body, "applyToIndex") {
                args.push("--index");
            }
            args.push("-");
            let output = git.write(&args, Some(field(body, "patchContent", "").as_bytes()))?;
            if !output.success {
                return Ok(failed("patch_does_not_apply", output.stderr.trim(), json!({})));
            }
            completed(git, json!({ "applied": true, "toIndex": flag(body, "applyToIndex") }))
        }
        Operation::Branch => {
            let name = field(body, "name", "");
            let start = field(body, "startPoint", HEAD);
            let output = if flag(body, "checkout") {
                git.write(&["switch", "-q", "-c", name, start], None)?
            } else {
                git.write(&["branch", name, start], None)?
            };
            if !output.success {
                return Ok(failed("git_failed", output.stderr.trim(), json!({})));
            }
            let sha = git.resolve_commit(&format!("refs/heads/{name}"))?;
            Ok(Outcome {
                completed: true,
                reason: None,
                message: None,
                result: json!({ "newSha": sha, "branch": name, "checkedOut": flag(body, "checkout") }),
            })
        }
        Operation::Commit => commit(git, body, previous),
        Operation::BranchDelete => branch_delete(body, context),
        Operation::Worktree => worktree(git, body, context),
        Operation::WorktreeRemove => worktree_remove(git, body, context),
        Operation::Push => push(git, body),
        Operation::SubmodulePointer => submodule_pointer(git, body),
        Operation::Plan => plan(git, body, context),
    }
}

fn merge(git: &Git, body: &Value, previous: Option<String>) -> Result<Outcome, git::Error> {
    let source = field(body, "sourceRef", "");
    let target = field(body, "targetRef", "HEAD");
    let branch = git.head_symbolic()?;
    let target_is_head = target == "HEAD"
        || branch.as_deref().is_some_and(|name| name == target || name.strip_prefix("refs/heads/") == Some(target));
    if !target_is_head {
        return Ok(failed(
            "target_not_checked_out",
            format!("targetRef '{target}' is not the checked-out branch: switch to it first (nothing was run)"),
            json!({}),
        ));
    }
    let squash = field(body, "strategy", MergeStrategy::default().name()) == MergeStrategy::Squash.name();
    let args: Vec<&str> = if squash { vec!["merge", "--squash", source] } else { vec!["merge", "--no-edit", source] };
    let output = git.write(&args, None)?;
    if !output.success {
        let conflicting = conflicts(git);
        if squash {
            let _ = git.write(&["reset", "-q", "--merge"], None)?;
        } else {
            let _ = git.write(&["merge", "--abort"], None)?;
        }
        let reason = if conflicting.is_empty() { "git_failed" } else { "conflicts" };
        let message = if conflicting.is_empty() {
            output.stderr.trim().to_owned()
        } else {
            "the merge stopped on conflicts and was aborted; nothing changed".to_owned()
        };
        return Ok(failed(reason, message, json!({ "conflicts": conflicting, "previousSha": previous })));
    }
    if squash {
        let staged = git.read(&["diff", "--cached", "--quiet"])?;
        if staged.success {
            return completed(git, json!({ "previousSha": previous, "alreadyUpToDate": true, "conflicts": [] }));
        }
        let output = git.write(&["commit", "--no-edit", "-q"], None)?;
        if !output.success {
            return Ok(failed("git_failed", output.stderr.trim(), json!({ "previousSha": previous })));
        }
    }
    completed(git, json!({ "previousSha": previous, "conflicts": [] }))
}

fn rebase(git: &Git, body: &Value, previous: Option<String>) -> Result<Outcome, git::Error> {
    let onto = field(body, "ontoRef", "");
    let current = field(body, "currentRef", "HEAD");
    let mut args = vec!["rebase", "-q", onto];
    if current != "HEAD" {
        args.push(current);
    }
    let output = git.write(&args, None)?;
    if !output.success {
        let conflicting = conflicts(git);
        let _ = git.write(&["rebase", "--abort"], None)?;
        let reason = if conflicting.is_empty() { "git_failed" } else { "conflicts" };
        return Ok(failed(reason, output.stderr.trim(), json!({ "conflicts": conflicting, "previousSha": previous })));
    }
    completed(git, json!({ "previousSha": previous, "conflicts": [] }))
}

fn discard(git: &Git, body: &Value) -> Result<Outcome, git::Error> {
    let paths = path_list(body);
    let has_head = head(git)?.is_some();
    let mut tracked = Vec::new();
    let mut untracked = Vec::new();
    for path in &paths {
        let in_head = has_head
            && git
                .read(&["--literal-pathspecs", "ls-tree", "-r", "--name-only", "HEAD", "--", path.as_str()])?
                .stdout
                .lines()
                .next()
                .is_some();
        if in_head { tracked.push(path.clone()) } else { untracked.push(path.clone()) }
    }
    if !tracked.is_empty() {
        let list: Vec<u8> = tracked.iter().flat_map(|path| path.bytes().chain([0])).collect();
        let output = git.write(
            &[
                "--literal-pathspecs",
                "restore",
                "--source=HEAD",
                "--staged",
                "--worktree",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ],
            Some(&list),
        )?;
        if !output.success {
            return Ok(failed("git_failed", output.stderr.trim(), json!({})));
        }
    }
    for path in &untracked {
        git.write_ok(
            &["--literal-pathspecs", "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", path.as_str()],
            None,
        )?;
        git.write_ok(&["--literal-pathspecs", "clean", "-f", "-d", "-q", "--", path.as_str()], None)?;
    }
    completed(git, json!({ "discarded": paths }))
}

fn commit(git: &Git, body: &Value, previous: Option<String>) -> Result<Outcome, git::Error> {
    let paths = path_list(body);
    if flag(body, "stageAll") {
        git.write_ok(&["add", "-A"], None)?;
    }
    let message = field(body, "message", "");
    let mut args = vec!["commit".to_owned(), "-q".to_owned(), "-F".to_owned(), "-".to_owned()];
    if !paths.is_empty() {
        let list: Vec<u8> = paths.iter().flat_map(|path| path.bytes().chain([0])).collect();
        let output = git.write(
            &["--literal-pathspecs", "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"],
            Some(&list),
        )?;
        if !output.success {
            return Ok(failed("git_failed", output.stderr.trim(), json!({})));
        }
        args.push("--only".to_owned());
        args.push("--".to_owned());
        args.extend(paths.iter().cloned());
    } else if git.read(&["diff", "--cached", "--quiet"])?.success {
        return Ok(failed("nothing_staged", "nothing is staged to commit; nothing was run", json!({})));
    }
    let mut command = git.write_command();
    command.env("GIT_LITERAL_PATHSPECS", "1");
    let output = git.write_prepared(command, &args, Some(message.as_bytes()));
    match output {
        Ok(_) => completed(git, json!({ "previousSha": previous, "files": paths })),
        Err(error) => Ok(failed("git_failed", error.to_string(), json!({}))),
    }
}

/// How one branch of a branchDelete fares: `deleted`-able (`None`) or kept with a reason, and its tip now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    /// `None`: it may be deleted; else why it is kept (`skipped`) or cannot be (`failed`).
    pub keep: Option<(&'static str, &'static str, String)>,
    /// Its tip now.
    pub tip: Option<String>,
}

/// Whether the local branch `name` of the repository `git` runs in may be deleted (design.md#gateway): it must be a valid
/// local branch name (`failed` `invalid_name`), exist (`skipped` `not_found`), still be at `observed` (`skipped`
/// `tip_moved`), be checked out in no worktree (`skipped` `checked_out`), and have no commit outside HEAD and its
/// upstream (`skipped` `unmerged`).
pub fn assess_branch(git: &Git, name: &str, observed: Option<&str>) -> Result<Assessment, git::Error> {
    let keep = |outcome: &'static str, reason: &'static str, message: String, tip: Option<String>| {
        Ok(Assessment { keep: Some((outcome, reason, message)), tip })
    };
    let short = name.strip_prefix("refs/heads/").unwrap_or(name);
    let full = format!("refs/heads/{short}");
    if name.starts_with("refs/") && !name.starts_with("refs/heads/") {
        return keep("failed", "not_a_local_branch", format!("{name} is not a local branch"), None);
    }
    if !git.read(&["check-ref-format", full.as_str()])?.success {
        return keep("failed", "invalid_name", format!("'{name}' is not a valid branch name"), None);
    }
    let Some(tip) = proposal::local_branch_tip(git, short) else {
        return keep("skipped", "not_found", format!("no local branch '{short}'"), None);
    };
    if observed != Some(tip.as_str()) {
        let message = format!("its tip moved since the proposal (was {}, now {tip})", observed.unwrap_or("absent"));
        return keep("skipped", "tip_moved", message, Some(tip));
    }
    let listing = git.read_ok(&["worktree", "list", "--porcelain", "-z"])?;
    if listing.split('\0').any(|field| field.strip_prefix("branch ") == Some(full.as_str())) {
        return keep("skipped", "checked_out", format!("'{short}' is checked out in a worktree"), Some(tip));
    }
    let upstream = git.read_ok(&["for-each-ref", "--format=%(upstream)", full.as_str()])?.trim().to_owned();
    let mut args = vec!["rev-list".to_owned(), "--count".to_owned(), tip.clone(), "--not".to_owned()];
    if let Some(head) = git.head_sha()? {
        args.push(head);
    }
    if let Some(sha) = (!upstream.is_empty()).then(|| git.resolve_commit(&upstream)).transpose()?.flatten() {
        args.push(sha);
    }
    let outside: u64 = git.read_ok(&args)?.trim().parse().unwrap_or(u64::MAX);
    if outside > 0 {
        let message = format!("{outside} commit(s) of '{short}' are in neither HEAD nor its upstream");
        return keep("skipped", "unmerged", message, Some(tip));
    }
    Ok(Assessment { keep: None, tip: Some(tip) })
}

/// branchDelete: every target repository resolved again (it must be the one observed on receipt), every branch
/// assessed ([`assess_branch`]) and deleted with `git update-ref -d` against its observed tip, its `branch.<name>`
/// config section removed as `git branch -d` does. Remote branches are never touched.
fn branch_delete(body: &Value, context: &Context<'_>) -> Result<Outcome, git::Error> {
    let observed = body[proposal::OBSERVED]["targets"].as_array().cloned().unwrap_or_default();
    let mut outcomes = Vec::new();
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    let mut record = |outcomes: &mut Vec<Value>, entry: Value, outcome: &'static str| {
        *counts.entry(outcome).or_default() += 1;
        outcomes.push(entry);
    };
    for target in observed {
        let repo_path = target["repoPath"].as_str().unwrap_or_default().to_owned();
        let branches: Vec<String> =
            target["tips"].as_object().map(|tips| tips.keys().cloned().collect()).unwrap_or_default();
        let expected: Option<Canonical> = serde_json::from_value(target["canonical"].clone()).ok();
        let resolved = repo::resolve(std::path::Path::new(&repo_path), context.allowed_roots);
        let target_repo = match resolved {
            Ok(resolved) if Some(&resolved) == expected.as_ref() => resolved,
            other => {
                let message = match other {
                    Err(error) => error.to_string(),
                    Ok(_) => "the repository path now resolves to another repository".to_owned(),
                };
                for branch in branches {
                    let entry = json!({ "repoPath": repo_path, "branch": branch, "outcome": "failed",
                        "reason": "blocked_repository_mismatch", "message": message });
                    record(&mut outcomes, entry, "failed");
                }
                continue;
            }
        };
        let target_git = Git::new(&target_repo.work_tree).with_timeout(git_timeout());
        for branch in branches {
            let tip = target["tips"][&branch].as_str();
            let assessment = assess_branch(&target_git, &branch, tip)?;
            let short = branch.strip_prefix("refs/heads/").unwrap_or(&branch).to_owned();
            if let Some((outcome, reason, message)) = assessment.keep {
                let entry = json!({ "repoPath": repo_path, "branch": branch, "outcome": outcome, "reason": reason,
                    "message": message, "tip": assessment.tip });
                record(&mut outcomes, entry, outcome);
                continue;
            }
            let tip = assessment.tip.unwrap_or_default();
            let full = format!("refs/heads/{short}");
            let output = target_git.write(&["update-ref", "-d", full.as_str(), tip.as_str()], None)?;
            if !output.success {
                let entry = json!({ "repoPath": repo_path, "branch": branch, "outcome": "failed",
                    "reason": "git_failed", "message": output.stderr.trim(), "tip": tip });
                record(&mut outcomes, entry, "failed");
                continue;
            }
            let section = format!("branch.{short}");
            let _ = target_git.write(&["config", "--local", "--remove-section", section.as_str()], None)?;
            let entry = json!({ "repoPath": repo_path, "branch": branch, "outcome": "deleted", "tip": tip });
            record(&mut outcomes, entry, "deleted");
        }
    }
    let count = |name: &str| counts.get(name).copied().unwrap_or(0);
    let result = json!({
        "branches": outcomes,
        "deleted": count("deleted"),
        "skipped": count("skipped"),
        "failed": count("failed"),
    });
    Ok(Outcome { completed: true, reason: None, message: None, result })
}

/// The absolute path `path` as it would be once created: its deepest existing ancestor canonicalised, the rest
/// appended; `None` when it holds `..` or nothing of it exists.
pub fn resolve_new_path(path: &std::path::Path) -> Option<PathBuf> {
    if !path.is_absolute() || path.components().any(|part| matches!(part, std::path::Component::ParentDir)) {
        return None;
    }
    let mut existing = path;
    let mut rest = Vec::new();
    while existing.symlink_metadata().is_err() {
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    }
    let mut resolved = std::fs::canonicalize(existing).ok()?;
    resolved.extend(rest.iter().rev());
    Some(resolved)
}

/// worktree: `git worktree add <path> <branch>` (a branch that does not exist is created from HEAD with `-b`),
/// refused when the path exists or, resolved, lies outside the allowed roots.
fn worktree(git: &Git, body: &Value, context: &Context<'_>) -> Result<Outcome, git::Error> {
    let branch = field(body, "branch", "");
    let path = std::path::Path::new(field(body, "path", ""));
    if path.symlink_metadata().is_ok() {
        return Ok(failed("path_exists", format!("{} already exists; nothing was run", path.display()), json!({})));
    }
    let inside = resolve_new_path(path)
        .is_some_and(|resolved| context.allowed_roots.iter().any(|root| resolved.starts_with(root)));
    if !inside {
        let message = format!("{} is outside the allowed roots; nothing was run", path.display());
        return Ok(failed("outside_allowed_roots", message, json!({})));
    }
    let path_text = path.to_string_lossy();
    let existing = proposal::local_branch_tip(git, branch);
    let output = if existing.is_some() {
        git.write(&["worktree", "add", "--", path_text.as_ref(), branch], None)?
    } else {
        git.write(&["worktree", "add", "-b", branch, "--", path_text.as_ref(), "HEAD"], None)?
    };
    if !output.success {
        return Ok(failed("git_failed", output.stderr.trim(), json!({})));
    }
    let sha = Git::new(path).head_sha()?;
    let result = json!({
        "worktreePath": path_text,
        "branch": branch,
        "createdBranch": existing.is_none(),
        "newSha": sha,
    });
    Ok(Outcome { completed: true, reason: None, message: None, result })
}

/// worktreeRemove: the worktree located again must be the one observed on receipt (`worktree_moved`: another
/// path, branch or HEAD), and assessed now it must lose nothing ([`worktree_remove::assess`]: the first blocker's
/// reason, every blocker and what would be lost in the result); then `git worktree remove -- <path>`, never
/// `--force`. The branch is kept. The result's `readd` is the command that adds the worktree back.
fn worktree_remove(git: &Git, body: &Value, context: &Context<'_>) -> Result<Outcome, git::Error> {
    let observed: Option<worktree_remove::Located> = serde_json::from_value(body[proposal::OBSERVED].clone()).ok();
    let located = match worktree_remove::locate(git, field(body, "path", ""), context.allowed_roots) {
        Ok(located) => located,
        Err(refused) => return Ok(failed(refused.reason, format!("{}; nothing was run", refused.message), json!({}))),
    };
    let same = observed.as_ref().is_some_and(|observed| {
        (&observed.worktree_path, &observed.resolved_path, &observed.branch, &observed.head_sha)
            == (&located.worktree_path, &located.resolved_path, &located.branch, &located.head_sha)
    });
    if !same {
        return Ok(failed(
            "worktree_moved",
            "the worktree's path, branch or HEAD changed since the proposal; propose again",
            json!({ "observed": body[proposal::OBSERVED], "now": located }),
        ));
    }
    let assessment = worktree_remove::assess(git, &located);
    if let Some(first) = assessment.blockers.first() {
        let message = format!("{}; nothing was run", first.message);
        return Ok(failed(first.reason, message, assessment.to_json()));
    }
    let path = located.worktree_path.as_str();
    let output = git.write(&["worktree", "remove", "--", path], None)?;
    if !output.success {
        return Ok(failed("git_failed", output.stderr.trim(), json!({})));
    }
    let readd = match (located.branch_name(), &located.head_sha) {
        (Some(branch), _) => {
            format!("git worktree add {} {}", restore::shell_quote(path), restore::shell_quote(branch))
        }
        (None, Some(sha)) => format!("git worktree add --detach {} {sha}", restore::shell_quote(path)),
        (None, None) => String::new(),
    };
    let result = json!({
        "worktreePath": path,
        "branch": located.branch_name(),
        "branchKept": located.branch.is_some(),
        "headSha": located.head_sha,
        "readd": readd,
        "newSha": head(git)?,
    });
    Ok(Outcome { completed: true, reason: None, message: None, result })
}

/// Extra `-c` settings so that no SSH prompt waits on a terminal the gateway does not own: `ssh -o BatchMode=yes`
/// unless the person configured their own SSH command (`GIT_SSH_COMMAND`, `GIT_SSH`, `core.sshCommand`).
fn no_prompt_settings(git: &Git) -> Vec<String> {
    let configured = std::env::var_os("GIT_SSH_COMMAND").is_some()
        || std::env::var_os("GIT_SSH").is_some()
        || git.read(&["config", "core.sshCommand"]).is_ok_and(|output| output.success);
    if configured { Vec::new() } else { vec!["-c".to_owned(), "core.sshCommand=ssh -o BatchMode=yes".to_owned()] }
}

/// push: `git push --porcelain [--set-upstream] [--force-with-lease=<remote ref>:<expected sha>] <remote>
/// refs/heads/<branch>:<remote ref>`, where the expected sha is the remote-tracking ref observed on receipt (empty:
/// the remote branch must not exist). Credential helpers apply; `GIT_TERMINAL_PROMPT=0` and SSH batch mode keep
/// any prompt from waiting. A lease that no longer holds is `lease_refused`.
fn push(git: &Git, body: &Value) -> Result<Outcome, git::Error> {
    let observed = &body[proposal::OBSERVED];
    let remote = observed["remote"].as_str().unwrap_or("origin");
    let branch = observed["branch"].as_str().unwrap_or_default();
    let remote_ref = observed["remoteRef"].as_str().unwrap_or_default();
    let expected = observed["expectedRemoteSha"].as_str();
    let force = flag(body, "forceWithLease");
    let Some(local) = proposal::local_branch_tip(git, branch) else {
        return Ok(failed("unknown_branch", format!("no local branch '{branch}'; nothing was pushed"), json!({})));
    };
    let mut args = no_prompt_settings(git);
    args.extend(["push".to_owned(), "--porcelain".to_owned()]);
    if flag(body, "setUpstream") {
        args.push("--set-upstream".to_owned());
    }
    if force {
        args.push(format!("--force-with-lease={remote_ref}:{}", expected.unwrap_or_default()));
    }
    args.extend([remote.to_owned(), format!("refs/heads/{branch}:{remote_ref}")]);
    let output = git.write(&args, None)?;
    let line = output.stdout.lines().find(|line| line.contains(&format!(":{remote_ref}\t"))).unwrap_or_default();
    let summary = line.split('\t').nth(2).unwrap_or_default().to_owned();
    let result = json!({
        "remote": remote,
        "branch": branch,
        "remoteRef": remote_ref,
        "pushedSha": local,
        "expectedRemoteSha": expected,
        "forced": force,
        "upstreamSet": flag(body, "setUpstream") && output.success,
        "summary": summary,
    });
    if !output.success {
        let (reason, message) = if summary.contains("stale info") {
            (
                "lease_refused",
                format!(
                    "the lease refused: {remote} {remote_ref} is no longer at {} (pushed to since the proposal); nothing was pushed",
                    expected.unwrap_or("(absent)")
                ),
            )
        } else if summary.contains("non-fast-forward") || summary.contains("fetch first") {
            ("rejected_non_fast_forward", format!("the remote refused a non-fast-forward push: {summary}"))
        } else {
            ("git_failed", format!("{} {}", summary, output.stderr.trim()).trim().to_owned())
        };
        return Ok(failed(reason, message, result));
    }
    let mut result = result;
    result["newSha"] = json!(local);
    Ok(Outcome { completed: true, reason: None, message: None, result })
}

/// submodulePointer: the submodule observed again must be as on receipt (`submodule_moved`), match the expected
/// oids (`expected_oid_mismatch`), be clean (`submodule_dirty`: tracked changes) and differ from its recorded
/// pointer (`pointer_unchanged`). `record` commits only the gitlink in the parent (`git commit --only`; hooks and
/// signing apply; nothing is pushed); `return` checks the recorded commit out detached in the submodule.
fn submodule_pointer(git: &Git, body: &Value) -> Result<Outcome, git::Error> {
    let observed = &body[proposal::OBSERVED];
    let Some(object) = body.as_object() else {
        return Ok(failed("invalid_body", "the proposal body is not an object", json!({})));
    };
    let now = match proposal::observe_submodule(git, object) {
        Ok(now) => now,
        Err(invalid) => return Ok(failed(invalid.reason, invalid.message, json!({}))),
    };
    if now != *observed {
        return Ok(failed(
            "submodule_moved",
            "the submodule or its recorded pointer changed since the proposal; propose again",
            json!({ "observed": observed, "now": now }),
        ));
    }
    let recorded = now["recordedOid"].as_str().unwrap_or_default().to_owned();
    let checked_out = now["checkedOutOid"].as_str().unwrap_or_default().to_owned();
    for (name, actual) in [("expectedRecordedOid", &recorded), ("expectedCheckedOutOid", &checked_out)] {
        if let Some(expected) = body.get(name).and_then(Value::as_str)
            && !expected.eq_ignore_ascii_case(actual)
        {
            return Ok(failed(
                "expected_oid_mismatch",
                format!("{name} is {expected}, the submodule has {actual}"),
                json!({}),
            ));
        }
    }
    let parent = PathBuf::from(now["parentWorkTree"].as_str().unwrap_or_default());
    let submodule = PathBuf::from(now["submoduleWorkTree"].as_str().unwrap_or_default());
    let relative = now["relativePath"].as_str().unwrap_or_default().trim_end_matches('/').to_owned();
    let sub_git = Git::new(&submodule).with_timeout(git_timeout());
    let status = sub_git.read_ok(&["status", "--porcelain=v1", "--untracked-files=no", "--ignore-submodules=none"])?;
    if !status.trim().is_empty() {
        let message = format!("submodule '{relative}' has uncommitted changes; nothing was run");
        return Ok(failed("submodule_dirty", message, json!({ "status": status })));
    }
    if recorded == checked_out {
        let message = format!("submodule '{relative}' is already at its recorded pointer {recorded}; nothing was run");
        return Ok(failed("pointer_unchanged", message, json!({})));
    }
    let base = json!({ "relativePath": relative, "parentWorkTree": parent, "submoduleWorkTree": submodule,
        "previousRecordedOid": recorded, "previousCheckedOutOid": checked_out,
        "previousCheckedOutRef": now["checkedOutRef"] });
    if field(body, "direction", "record") == "record" {
        let parent_git = Git::new(&parent).with_timeout(git_timeout());
        let short: String = checked_out.chars().take(12).collect();
        let message = body
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| format!("Update submodule {relative} to {short}"), str::to_owned);
        let mut command = parent_git.write_command();
        command.env("GIT_LITERAL_PATHSPECS", "1");
        let args = ["commit", "-q", "-F", "-", "--only", "--", relative.as_str()];
        if let Err(error) = parent_git.write_prepared(command, &args, Some(message.as_bytes())) {
            return Ok(failed("git_failed", error.to_string(), base));
        }
        let mut result = base;
        result["direction"] = json!("record");
        result["recordedOid"] = json!(checked_out);
        result["newSha"] = json!(parent_git.head_sha()?);
        return Ok(Outcome { completed: true, reason: None, message: None, result });
    }
    let output = sub_git.write(&["checkout", "-q", "--detach", recorded.as_str(), "--"], None)?;
    if !output.success {
        return Ok(failed("git_failed", output.stderr.trim(), base));
    }
    let mut result = base;
    result["direction"] = json!("return");
    result["checkedOutOid"] = json!(sub_git.head_sha()?);
    result["newSha"] = json!(sub_git.head_sha()?);
    Ok(Outcome { completed: true, reason: None, message: None, result })
}

/// plan: the steps in order, each behind its own snapshot of the index and work tree
/// ([`restore::step_snapshot`]; the proposal's restore point is the pre-plan checkpoint that anchors the branch
/// and puts everything back), stopping at the first step that fails. The result lists every step: `completed`
/// (with its result), `failed` (reason, message, result) or `not_run`; a failed step fails the proposal
/// (`step_failed`) and leaves the earlier steps done, for the person to keep or restore.
fn plan(git: &Git, body: &Value, context: &Context<'_>) -> Result<Outcome, git::Error> {
    let steps = body["steps"].as_array().cloned().unwrap_or_default();
    let mut outcomes = Vec::with_capacity(steps.len());
    let mut failure: Option<(usize, String, String)> = None;
    for (index, step) in steps.iter().enumerate() {
        let number = index + 1;
        let op = step["type"].as_str().unwrap_or_default();
        if failure.is_some() {
            outcomes.push(json!({ "step": number, "type": op, "status": "not_run" }));
            continue;
        }
        let snapshot = match &context.restore {
            Some((dir, point)) => match restore::step_snapshot(dir, git.work_tree(), point, number) {
                Ok(sha) => Some(sha),
                Err(error) => {
                    let message =
                        format!("no snapshot could be taken before step {number}, so it did not run: {error}");
                    outcomes.push(json!({ "step": number, "type": op, "status": "failed",
                        "reason": "snapshot_failed", "message": message }));
                    failure = Some((number, "snapshot_failed".to_owned(), message));
                    continue;
                }
            },
            None => None,
        };
        let outcome = if Operation::from_name(op).is_some_and(Operation::is_step) {
            execute(git, op, step, context).unwrap_or_else(|error| Outcome {
                completed: false,
                reason: Some("git_failed".into()),
                message: Some(error.to_string()),
                result: json!({}),
            })
        } else {
            failed("invalid_step", format!("a plan step cannot be '{op}'"), json!({}))
        };
        let mut entry = json!({
            "step": number,
            "type": op,
            "status": if outcome.completed { "completed" } else { "failed" },
            "result": outcome.result,
        });
        if let Some((_, point)) = &context.restore {
            entry["snapshot"] = json!(snapshot);
            entry["snapshotRef"] = json!(format!("{}{point}/{number}", restore::STEP_REF_PREFIX));
        }
        if !outcome.completed {
            entry["reason"] = json!(outcome.reason);
            entry["message"] = json!(outcome.message);
            failure = Some((number, outcome.reason.unwrap_or_default(), outcome.message.unwrap_or_default()));
        }
        outcomes.push(entry);
        fault(&format!("after_step_{number}"));
    }
    let done = outcomes.iter().filter(|entry| entry["status"] == "completed").count();
    let mut result = json!({ "steps": outcomes, "completedSteps": done, "newSha": head(git)? });
    match failure {
        None => Ok(Outcome { completed: true, reason: None, message: None, result }),
        Some((number, reason, message)) => {
            result["failedStep"] = json!(number);
            let message = format!(
                "step {number} failed ({reason}: {message}); {done} earlier step(s) stay done and the rest did not \
                 run; restore the proposal's restore point to undo them all"
            );
            Ok(failed("step_failed", message, result))
        }
    }
}
