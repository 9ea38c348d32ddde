//! The card a person reads before deciding (`fluxgit-gateway show ID`): reason, agent (self-declared), operation,
//! risk, exact fields, exact paths and the diff (git CLI, bounded), a conflict preflight for merge and rebase
//! (`git merge-tree --write-tree` in a scratch repository, see [`Git::merge_preview`]), and for a hard reset, a forced
//! push or a branch deletion the strong confirmation `approve` (and the approval page) will ask for (typing the
//! branch name). branchDelete cards give each branch's verdict as the executor would reach it now, push cards the
//! remote, the commits that go (and for a forced push those the remote loses) and the lease, submodulePointer cards
//! the recorded and checked-out commits.
//!
//! Rendering a card runs no program the repository configures and writes nothing into it: every git command is a
//! [`Git::read`] (no hooks, filters, fsmonitor, pager or signature display), diffs pass `--no-ext-diff
//! --no-textconv` and `--ignore-submodules=dirty` (no git is started inside a submodule), and merge previews run
//! outside the repository without its merge drivers. Execution after approval runs them as git would.

use std::fmt::Write as _;

use fluxgit_contract::{HEAD, Operation, ResetFields, ResetMode, Risk};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::executor;
use crate::git::Git;
use crate::journal::Proposal;
use crate::proposal::{OBSERVED, field, flag, path_list};
use crate::time::{format_ms, now_ms};
use crate::worktree_remove;

/// Longest diff shown on a card, in lines; the rest is counted.
pub const MAX_DIFF_LINES: usize = 400;

/// A rendered card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    /// The header: id, state, expiry (not part of the digest: it changes with the clock).
    pub header: String,
    /// The content a person approves: what [`Card::digest`] covers.
    pub body: String,
    /// `low`, `medium` or `high`.
    pub risk: &'static str,
    /// For a hard reset, a force push or a branch deletion: the text the person must type (the branch name or
    /// names, or `HEAD` when detached).
    pub confirmation: Option<String>,
}

impl Card {
    /// sha256 of the body: `approve` refuses when the card changed since `show`.
    pub fn digest(&self) -> String {
        faster_hex::hex_string(&Sha256::digest(self.body.as_bytes()))
    }
}

/// `text` safe to print on a terminal: every control character but newline and tab (escape sequences that could
/// hide or rewrite parts of a card, from a reason, a path or a file's content) is shown as `\u{..}`.
pub fn sanitize(text: &str) -> String {
    text.chars()
        .map(|character| {
            if character.is_control() && character != '\n' && character != '\t' {
                character.escape_unicode().to_string()
            } else {
                character.to_string()
            }
        })
        .collect()
}

/// The risk of an operation ([`Operation::risk`]): `low`, `medium` or `high`; `medium` for a name that is no
/// operation.
pub fn risk(op: &str, body: &Value) -> &'static str {
    Operation::from_name(op).map_or(Risk::Medium, |operation| operation.risk(body)).name()
}

/// Renders the card of `proposal`.
pub fn render(proposal: &Proposal) -> Card {
    let work_tree = proposal.canonical.get("workTree").and_then(Value::as_str).unwrap_or(&proposal.repo_path);
    let git = Git::new(std::path::Path::new(work_tree));
    let risk = risk(&proposal.op, &proposal.body);
    let mut header = format!("Proposal {}  [{}]", proposal.id, proposal.status.as_str());
    if proposal.status == crate::journal::Status::Pending {
        let left = (proposal.expires_at_ms - now_ms()).max(0) / 1000;
        let _ = write!(header, "  expires {} (in {}m{:02}s)", format_ms(proposal.expires_at_ms), left / 60, left % 60);
    }
    if proposal.needs_reconciliation {
        header
            .push_str("\n!! Found executing after a restart: git may have run. Never re-run; check the restore point.");
    }
    let mut body = String::new();
    let _ = writeln!(body, "Operation:  {} (risk: {risk})", proposal.op);
    let _ = writeln!(body, "Agent:      {} (self-declared by the MCP client, not authenticated)", proposal.agent);
    let _ = writeln!(body, "Repository: {work_tree}");
    let _ = writeln!(body, "Reason:     {}", proposal.reason.replace('\n', "\n            "));
    let _ = writeln!(body, "Requested:  {}", proposal.requested_at);
    body.push_str("Fields:\n");
    if let Value::Object(fields) = &proposal.body {
        for (name, value) in fields {
            if [
                "previewId",
                "agentId",
                "idempotencyKey",
                "operationType",
                "repoPath",
                "reason",
                "requestedAt",
                "patchContent",
                "steps",
                crate::proposal::OBSERVED,
            ]
            .contains(&name.as_str())
            {
                continue;
            }
            let _ = writeln!(body, "  {name} = {value}");
        }
    }
    let head = git.head_symbolic().ok().flatten();
    let head_sha = git.head_sha().ok().flatten();
    let _ = writeln!(
        body,
        "HEAD:       {} at {}",
        head.as_deref().unwrap_or("(detached)"),
        head_sha.as_deref().unwrap_or("(unborn)")
    );
    let mut confirmation = None;
    let details = details(&git, proposal, &mut confirmation);
    body.push_str(&details);
    if confirmation.is_none()
        && let Some(expected) = strong_confirmation(&proposal.op, &proposal.body)
    {
        let _ = writeln!(body, "Strong confirmation: approving asks you to type: {expected}");
        confirmation = Some(expected);
    }
    Card { header, body, risk, confirmation }
}

/// What a person must type to approve a branch deletion: the branch's name, or `delete N branches` for N > 1;
/// `None` for other operations (a hard reset's and a forced push's are set with their details).
pub fn strong_confirmation(op: &str, body: &Value) -> Option<String> {
    match Operation::from_name(op)? {
        Operation::BranchDelete => {}
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
        | Operation::SubmodulePointer
        | Operation::WorktreeRemove => return None,
    }
    let names: Vec<&str> = body
        .get("targets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|target| target.get("branches").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match names.as_slice() {
        [] => None,
        [name] => Some((*name).to_owned()),
        names => Some(format!("delete {} branches", names.len())),
    }
}

fn details(git: &Git, proposal: &Proposal, confirmation: &mut Option<String>) -> String {
    op_details(git, &proposal.op, &proposal.body, confirmation)
}

/// The details of one operation (`op` with its fields in `body`), a plan's steps each in turn.
fn op_details(git: &Git, op: &str, body: &Value, confirmation: &mut Option<String>) -> String {
    let mut out = String::new();
    let show = |out: &mut String, title: &str, args: &[&str]| {
        let text =
            git.read(args).map(|output| if output.success { output.stdout } else { output.stderr }).unwrap_or_default();
        let _ = writeln!(out, "{title}:");
        out.push_str(&bounded(&text));
    };
    let Some(operation) = Operation::from_name(op) else {
        let _ = writeln!(out, "This gateway does not execute '{op}' proposals.");
        return out;
    };
    match operation {
        Operation::Merge => {
            let source = field(body, "sourceRef", "");
            let range = format!("HEAD..{source}");
            show(&mut out, "Commits to merge", &["log", "--oneline", "--no-decorate", "-n", "50", range.as_str()]);
            let range = format!("HEAD...{source}");
            show(
                &mut out,
                "Diff (what the merge brings)",
                &["diff", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", "--stat", range.as_str()],
            );
            out.push_str(&preflight(git, HEAD, source));
        }
        Operation::Rebase => {
            let onto = field(body, "ontoRef", "");
            let current = field(body, "currentRef", HEAD);
            let range = format!("{onto}..{current}");
            show(&mut out, "Commits to replay", &["log", "--oneline", "--no-decorate", "-n", "50", range.as_str()]);
            let range = format!("{onto}...{current}");
            show(
                &mut out,
                "Files they change",
                &["diff", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", "--stat", range.as_str()],
            );
            out.push_str(&preflight(git, current, onto));
        }
        Operation::Discard => {
            out.push_str("Paths to discard (changes lost; the restore point keeps them):\n");
            for path in path_list(body) {
                let _ = writeln!(out, "  {path}");
            }
            let mut args = vec![
                "--literal-pathspecs",
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--ignore-submodules=dirty",
                "HEAD",
                "--",
            ];
            let paths = path_list(body);
            args.extend(paths.iter().map(String::as_str));
            show(&mut out, "Diff (HEAD vs work tree)", &args);
        }
        Operation::Reset => {
            let target = field(body, "targetRef", HEAD);
            let range = format!("{target}..HEAD");
            show(
                &mut out,
                "Commits leaving the branch",
                &["log", "--oneline", "--no-decorate", "-n", "50", range.as_str()],
            );
            if ResetFields::mode_of(body) == ResetMode::Hard {
                show(
                    &mut out,
                    "Uncommitted changes a hard reset throws away",
                    &["diff", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", "--stat", "HEAD"],
                );
                let name = git
                    .head_symbolic()
                    .ok()
                    .flatten()
                    .map(|name| name.strip_prefix("refs/heads/").unwrap_or(&name).to_owned())
                    .unwrap_or_else(|| "HEAD".to_owned());
                let _ = writeln!(out, "Strong confirmation: `approve` asks you to type the branch name: {name}");
                *confirmation = Some(name);
            }
        }
        Operation::Patch => {
            // `git apply --check` reads the work tree (and the index with --index) and writes nothing.
            let patch = field(body, "patchContent", "");
            let mut args = vec!["apply", "--check", "--numstat"];
            if flag(body, "applyToIndex") {
                args.push("--index");
            }
            args.push("-");
            match git.read_with_input(&args, patch.as_bytes()) {
                Ok(output) if output.success => {
                    out.push_str("Files (added, deleted lines), the patch applies cleanly:\n");
                    out.push_str(&bounded(&output.stdout));
                }
                Ok(output) => {
                    let _ = writeln!(out, "The patch does NOT apply: {}", output.stderr.trim());
                }
                Err(error) => {
                    let _ = writeln!(out, "The patch could not be checked: {error}");
                }
            }
            out.push_str("Patch:\n");
            out.push_str(&bounded(patch));
        }
        Operation::Commit => {
            let paths = path_list(body);
            if flag(body, "stageAll") {
                show(
                    &mut out,
                    "Files (everything, staged and not)",
                    &["status", "--porcelain=v1", "--untracked-files=all", "--ignore-submodules=dirty"],
                );
            } else if paths.is_empty() {
                show(&mut out, "Files (what is staged)", &["diff", "--cached", "--no-ext-diff", "--name-status"]);
                show(&mut out, "Diff (staged)", &["diff", "--cached", "--no-ext-diff", "--no-textconv"]);
            } else {
                let mut args = vec![
                    "--literal-pathspecs",
                    "status",
                    "--porcelain=v1",
                    "--untracked-files=all",
                    "--ignore-submodules=dirty",
                    "--",
                ];
                args.extend(paths.iter().map(String::as_str));
                show(&mut out, "Files (exactly these paths)", &args);
                let mut args = vec![
                    "--literal-pathspecs",
                    "diff",
                    "--no-ext-diff",
                    "--no-textconv",
                    "--ignore-submodules=dirty",
                    "HEAD",
                    "--",
                ];
                args.extend(paths.iter().map(String::as_str));
                show(&mut out, "Diff (HEAD vs work tree)", &args);
            }
        }
        Operation::Branch => {
            let start = field(body, "startPoint", HEAD);
            show(&mut out, "Start point", &["log", "--oneline", "--no-decorate", "-n", "1", start]);
        }
        Operation::BranchDelete => branch_delete(&mut out, body),
        Operation::Worktree => worktree(&mut out, git, body),
        Operation::WorktreeRemove => worktree_remove(&mut out, git, body),
        Operation::Push => push(&mut out, git, body, confirmation),
        Operation::SubmodulePointer => submodule_pointer(&mut out, body),
        Operation::Plan => plan(&mut out, git, body, confirmation),
    }
    out
}

/// Each target repository and branch: its tip observed on receipt and what would happen to it now.
fn branch_delete(out: &mut String, body: &Value) {
    out.push_str("Branches (local only; remote branches are never touched; the restore point keeps every tip):\n");
    for target in body[OBSERVED]["targets"].as_array().into_iter().flatten() {
        let work_tree = target["canonical"]["workTree"].as_str().unwrap_or_default();
        let _ = writeln!(out, "  Repository {work_tree}");
        let git = Git::new(std::path::Path::new(work_tree));
        for (branch, tip) in target["tips"].as_object().into_iter().flatten() {
            let tip = tip.as_str();
            let verdict = match executor::assess_branch(&git, branch, tip) {
                Ok(assessment) => match assessment.keep {
                    None => "DELETE".to_owned(),
                    Some((outcome, reason, message)) => format!("{outcome} ({reason}): {message}"),
                },
                Err(error) => format!("cannot be assessed: {error}"),
            };
            let subject = tip
                .and_then(|sha| git.read_ok(&["log", "-1", "--format=%s", sha]).ok())
                .map(|subject| subject.trim().to_owned())
                .unwrap_or_default();
            let _ = writeln!(out, "    {branch} at {} {subject}\n      -> {verdict}", tip.unwrap_or("(absent)"));
        }
    }
}

/// The worktree's path (and whether it is refused) and its branch (existing, or created from HEAD).
fn worktree(out: &mut String, git: &Git, body: &Value) {
    let branch = field(body, "branch", "");
    let path = std::path::Path::new(field(body, "path", ""));
    let _ = writeln!(out, "New worktree at: {}", path.display());
    if path.symlink_metadata().is_ok() {
        out.push_str("  REFUSED at execution: the path already exists\n");
    }
    match crate::proposal::local_branch_tip(git, branch) {
        Some(tip) => {
            let _ = writeln!(out, "Branch {branch} (exists) at {tip}");
            let listing = git.read_ok(&["worktree", "list", "--porcelain", "-z"]).unwrap_or_default();
            let full = format!("refs/heads/{branch}");
            if listing.split('\0').any(|field| field.strip_prefix("branch ") == Some(full.as_str())) {
                let _ = writeln!(out, "  {branch} is already checked out in a worktree: git will refuse");
            }
        }
        None => {
            let _ = writeln!(out, "Branch {branch} does not exist: it is created at HEAD");
        }
    }
}

/// The worktree to remove, what goes with it, and the executor's verdict now: nothing lost, or refused with
/// exactly what would be lost (uncommitted paths, commits no other ref reaches).
fn worktree_remove(out: &mut String, git: &Git, body: &Value) {
    // The card has no allowed roots: the worktree must still lead where it led on receipt, inside them.
    let at_receipt = body[OBSERVED]["resolvedPath"].as_str().map(std::path::PathBuf::from);
    let located = match worktree_remove::locate(git, field(body, "path", ""), at_receipt.as_slice()) {
        Ok(located) => located,
        Err(refused) => {
            let _ = writeln!(out, "Worktree to remove: {}", field(body, "path", ""));
            let _ = writeln!(out, "  -> REFUSED at execution ({}): {}", refused.reason, refused.message);
            return;
        }
    };
    let head = located.head_sha.as_deref().unwrap_or("(unborn)");
    let _ = writeln!(out, "Worktree to remove: {}", located.worktree_path);
    match located.branch_name() {
        Some(branch) => {
            let _ = writeln!(
                out,
                "  on branch {branch} at {head}: the branch is KEPT, only the directory and its registration go"
            );
        }
        None => {
            let _ = writeln!(out, "  detached HEAD at {head}");
        }
    }
    out.push_str(
        "  Runs `git worktree remove` (never --force). Ignored files in it are deleted with it, as git deletes them; \
         a restore adds the worktree back without them.\n",
    );
    let assessment = worktree_remove::assess(git, &located);
    if assessment.blockers.is_empty() {
        out.push_str(
            "  -> REMOVE: nothing is lost (no uncommitted change, no operation in progress, every commit reached by \
             another ref)\n",
        );
        return;
    }
    for blocker in &assessment.blockers {
        let _ = writeln!(out, "  -> REFUSED at execution ({}): {}", blocker.reason, blocker.message);
    }
    if assessment.uncommitted_count > 0 {
        let _ = writeln!(out, "  Uncommitted paths that would be lost ({}):", assessment.uncommitted_count);
        for path in &assessment.uncommitted {
            let _ = writeln!(out, "    {path}");
        }
        if assessment.uncommitted_count > assessment.uncommitted.len() {
            let _ = writeln!(out, "    ... {} more", assessment.uncommitted_count - assessment.uncommitted.len());
        }
    }
    if assessment.commit_count > 0 {
        let _ = writeln!(out, "  Commits no other ref reaches ({}):", assessment.commit_count);
        for commit in &assessment.commits {
            let _ = writeln!(out, "    {commit}");
        }
        if assessment.commit_count > assessment.commits.len() {
            let _ = writeln!(out, "    ... {} more", assessment.commit_count - assessment.commits.len());
        }
    }
}

fn preflight(git: &Git, ours: &str, theirs: &str) -> String {
    let mut out = match git.merge_preview(ours, theirs) {
        Ok(output) if output.code == 0 => "Conflict preflight: clean (no conflicts predicted)\n".to_owned(),
        Ok(output) if output.code == 1 => {
            let paths: Vec<&str> = output.stdout.lines().skip(1).filter(|line| !line.is_empty()).collect();
            format!("Conflict preflight: CONFLICTS predicted in {} path(s):\n  {}\n", paths.len(), paths.join("\n  "))
        }
        Ok(output) => format!("Conflict preflight: unavailable ({})\n", output.stderr.trim()),
        Err(error) => format!("Conflict preflight: unavailable ({error})\n"),
    };
    let drivers = git.merge_drivers();
    if !drivers.is_empty() {
        let _ = writeln!(
            out,
            "  (computed with git's built-in merge: the repository's merge driver(s) {} run only at execution, for \
             the paths their attributes name)",
            drivers.join(", ")
        );
    }
    out
}

fn bounded(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for line in lines.iter().take(MAX_DIFF_LINES) {
        let _ = writeln!(out, "  {line}");
    }
    if lines.len() > MAX_DIFF_LINES {
        let _ = writeln!(out, "  ... {} more lines", lines.len() - MAX_DIFF_LINES);
    }
    if lines.is_empty() {
        out.push_str("  (nothing)\n");
    }
    out
}

/// The remote and its URL, the branch and the commits that go, the lease (with its expected sha) and, for a forced
/// push, the commits it drops and the strong confirmation.
fn push(out: &mut String, git: &Git, body: &Value, confirmation: &mut Option<String>) {
    let observed = &body[OBSERVED];
    let remote = observed["remote"].as_str().unwrap_or("origin");
    let branch = observed["branch"].as_str().unwrap_or_default();
    let tracking = observed["trackingRef"].as_str().unwrap_or_default();
    let expected = observed["expectedRemoteSha"].as_str();
    let url = git.read_ok(&["remote", "get-url", "--push", "--", remote]).unwrap_or_default();
    let local = crate::proposal::local_branch_tip(git, branch);
    let _ = writeln!(
        out,
        "Push: refs/heads/{branch} at {} -> {remote} ({})",
        local.as_deref().unwrap_or("(absent)"),
        url.trim()
    );
    let _ = writeln!(
        out,
        "Remote branch as last fetched ({tracking}): {} (nothing is fetched now)",
        expected.unwrap_or("(absent: a new remote branch)")
    );
    if flag(body, "setUpstream") {
        let _ = writeln!(out, "Sets the upstream of {branch} to {remote}/{branch}");
    }
    let local_rev = format!("refs/heads/{branch}");
    let mut args = vec![
        "log".to_owned(),
        "--oneline".to_owned(),
        "--no-decorate".to_owned(),
        "-n".to_owned(),
        "50".to_owned(),
        local_rev.clone(),
    ];
    match expected {
        Some(sha) => args.extend(["--not".to_owned(), sha.to_owned()]),
        None => args.extend(["--not".to_owned(), format!("--remotes={remote}")]),
    }
    let text = git.read(&args).map(|output| output.stdout).unwrap_or_default();
    out.push_str("Commits to push:\n");
    out.push_str(&bounded(&text));
    if flag(body, "forceWithLease") {
        let _ = writeln!(
            out,
            "FORCE PUSH with lease: --force-with-lease=refs/heads/{branch}:{} (refused if the remote branch is not there any more)",
            expected.unwrap_or("")
        );
        if let Some(sha) = expected {
            let range = format!("{local_rev}..{sha}");
            let dropped = git.read(&["log", "--oneline", "--no-decorate", "-n", "50", range.as_str()]);
            out.push_str("Commits the remote LOSES:\n");
            out.push_str(&bounded(&dropped.map(|output| output.stdout).unwrap_or_default()));
        }
        let _ = writeln!(out, "Strong confirmation: `approve` asks you to type the branch name: {branch}");
        *confirmation = Some(branch.to_owned());
    }
}

/// The parent, the submodule, the recorded and checked-out commits and what the operation does with them.
fn submodule_pointer(out: &mut String, body: &Value) {
    let observed = &body[OBSERVED];
    let relative = observed["relativePath"].as_str().unwrap_or_default();
    let parent = observed["parentWorkTree"].as_str().unwrap_or_default();
    let recorded = observed["recordedOid"].as_str().unwrap_or_default();
    let checked_out = observed["checkedOutOid"].as_str().unwrap_or_default();
    let sub_git = Git::new(std::path::Path::new(observed["submoduleWorkTree"].as_str().unwrap_or_default()));
    let _ = writeln!(out, "Submodule {relative} of {parent}");
    let _ = writeln!(out, "  recorded in the parent's HEAD: {recorded}");
    let _ = writeln!(
        out,
        "  checked out:                   {checked_out} ({})",
        observed["checkedOutRef"].as_str().unwrap_or("detached")
    );
    if field(body, "direction", "record") == "record" {
        let _ = writeln!(
            out,
            "Record: commits only the gitlink {relative} = {checked_out} in the parent (hooks and signing apply; nothing is pushed)"
        );
        let range = format!("{recorded}..{checked_out}");
        let log = sub_git.read(&["log", "--oneline", "--no-decorate", "-n", "50", range.as_str()]);
        out.push_str("Commits the new pointer adds:\n");
        out.push_str(&bounded(&log.map(|output| output.stdout).unwrap_or_default()));
    } else {
        let _ = writeln!(
            out,
            "Return: checks out {recorded} detached in the submodule (the restore point keeps the current checkout)"
        );
        let range = format!("{recorded}..{checked_out}");
        let log = sub_git.read(&["log", "--oneline", "--no-decorate", "-n", "50", range.as_str()]);
        out.push_str("Commits the submodule leaves:\n");
        out.push_str(&bounded(&log.map(|output| output.stdout).unwrap_or_default()));
    }
}

/// Every step of a plan: its fields and its own details, computed against the repository as it is now.
fn plan(out: &mut String, git: &Git, body: &Value, confirmation: &mut Option<String>) {
    let steps = body["steps"].as_array().cloned().unwrap_or_default();
    let _ = writeln!(
        out,
        "Plan of {} step(s), run in order, stopping at the first failure. A checkpoint taken before step 1 restores \
         them all; each step's details below are computed against the repository as it is now (a later step will \
         see what the earlier ones did).",
        steps.len()
    );
    for (index, step) in steps.iter().enumerate() {
        let op = step["type"].as_str().unwrap_or_default();
        let _ = writeln!(out, "\n=== Step {} of {}: {op} (risk: {}) ===", index + 1, steps.len(), risk(op, step));
        for (name, value) in step.as_object().into_iter().flatten() {
            if name != "type" && name != "patchContent" {
                let _ = writeln!(out, "  {name} = {value}");
            }
        }
        if !Operation::from_name(op).is_some_and(Operation::is_step) {
            let _ = writeln!(out, "  a plan step cannot be '{op}': it would fail");
            continue;
        }
        out.push_str(&op_details(git, op, step, confirmation));
    }
}
