//! The executor: runs approved proposals with the git CLI behind a restore point (SPEC §6).
//!
//! [`run_approved`] is the only way an operation starts: revalidate the canonical repository and the refs
//! recorded at approval (any difference: `failed` with a `blocked_*` reason, git never runs), claim
//! (`approved -> executing`, committed before anything else), take the restore point (journaled), run the
//! operation, record the refs after it, and complete or fail with the result (`newSha`, `conflicts`,
//! `restorePointId`). A merge or rebase that stops on conflicts is aborted (`git merge --abort`,
//! `git rebase --abort`) and reported with its conflicting paths. Hooks, signing and credential helpers apply; a
//! git command still running after [`git_timeout`] is stopped with everything it started, and the proposal fails.
//!
//! Fault points for crash tests: when `FLUXGIT_GATEWAY_FAULT` names one (`after_claim`, `after_restore_point`,
//! `after_git`, `after_complete`), the process sends itself SIGKILL there.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::audit::Audit;
use crate::git::{self, Git};
use crate::journal::{Change, Journal, Proposal, Status};
use crate::proposal::{self, EXECUTED, field, flag, path_list};
use crate::repo::{self, Canonical};
use crate::restore;

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
    let point = match restore::create(journal, &canonical, &proposal.id, &proposal.op) {
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
    let mut outcome = execute(&git, &proposal.op, &proposal.body).unwrap_or_else(|error| Outcome {
        completed: false,
        reason: Some("git_failed".into()),
        message: Some(error.to_string()),
        result: json!({}),
    });
    fault("after_git");
    if let Ok(refs_after) = git.refs() {
        journal.set_refs_after(&point.id, &json!(refs_after))?;
    }
    if let Value::Object(result) = &mut outcome.result {
        result.insert("restorePointId".into(), json!(point.id));
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

/// Runs the git side of one operation on `git`'s work tree; the five operations of a later issue answer
/// `unsupported_operation`.
pub fn execute(git: &Git, op: &str, body: &Value) -> Result<Outcome, git::Error> {
    if !EXECUTED.contains(&op) {
        return Ok(failed("unsupported_operation", unsupported_message(op), json!({})));
    }
    let previous = head(git)?;
    match op {
        "merge" => merge(git, body, previous),
        "rebase" => rebase(git, body, previous),
        "discard" => discard(git, body),
        "reset" => {
            let mode = format!("--{}", field(body, "mode", "mixed"));
            let target = field(body, "targetRef", "HEAD");
            let output = git.write(&["reset", "-q", mode.as_str(), target, "--"], None)?;
            if !output.success {
                return Ok(failed("git_failed", output.stderr.trim(), json!({ "previousSha": previous })));
            }
            completed(git, json!({ "previousSha": previous, "mode": field(body, "mode", "mixed") }))
        }
        "patch" => {
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
        "branch" => {
            let name = field(body, "name", "");
            let start = field(body, "startPoint", "HEAD");
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
        "commit" => commit(git, body, previous),
        _ => Ok(failed("unsupported_operation", unsupported_message(op), json!({}))),
    }
}

/// The message of an operation this gateway does not execute yet.
pub fn unsupported_message(op: &str) -> String {
    format!(
        "the reference gateway does not execute '{op}' proposals yet (it executes {}); nothing was run",
        EXECUTED.join(", ")
    )
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
    let squash = field(body, "strategy", "merge") == "squash";
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

/// Whether `op` is one this gateway executes.
pub fn is_executed(op: &str) -> bool {
    proposal::EXECUTED.contains(&op)
}
