//! The card a person reads before deciding (`fluxgit-gateway show ID`): reason, agent (self-declared), operation,
//! risk, exact fields, exact paths and the diff (git CLI, bounded), a conflict preflight for merge and rebase
//! (`git merge-tree --write-tree`, which writes no ref, index or work-tree file), and for a hard reset the strong
//! confirmation `approve` will ask for (typing the branch name).

use std::fmt::Write as _;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::git::Git;
use crate::journal::Proposal;
use crate::proposal::{field, flag, path_list};
use crate::time::{format_ms, now_ms};

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
    /// For a hard reset: the text the person must type (the branch name, or `HEAD` when detached).
    pub confirmation: Option<String>,
}

impl Card {
    /// sha256 of the body: `approve` refuses when the card changed since `show`.
    pub fn digest(&self) -> String {
        Sha256::digest(self.body.as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect()
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

/// The risk of an operation.
pub fn risk(op: &str, body: &Value) -> &'static str {
    match op {
        "branch" | "commit" | "worktree" => "low",
        "discard" | "branchDelete" => "high",
        "reset" if field(body, "mode", "mixed") == "hard" => "high",
        "push" if flag(body, "forceWithLease") => "high",
        _ => "medium",
    }
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
    Card { header, body, risk, confirmation }
}

fn details(git: &Git, proposal: &Proposal, confirmation: &mut Option<String>) -> String {
    let body = &proposal.body;
    let mut out = String::new();
    let show = |out: &mut String, title: &str, args: &[&str]| {
        let text =
            git.read(args).map(|output| if output.success { output.stdout } else { output.stderr }).unwrap_or_default();
        let _ = writeln!(out, "{title}:");
        out.push_str(&bounded(&text));
    };
    match proposal.op.as_str() {
        "merge" => {
            let source = field(body, "sourceRef", "");
            let range = format!("HEAD..{source}");
            show(&mut out, "Commits to merge", &["log", "--oneline", "--no-decorate", "-n", "50", range.as_str()]);
            let range = format!("HEAD...{source}");
            show(
                &mut out,
                "Diff (what the merge brings)",
                &["diff", "--no-ext-diff", "--no-textconv", "--stat", range.as_str()],
            );
            out.push_str(&preflight(git, "HEAD", source));
        }
        "rebase" => {
            let onto = field(body, "ontoRef", "");
            let current = field(body, "currentRef", "HEAD");
            let range = format!("{onto}..{current}");
            show(&mut out, "Commits to replay", &["log", "--oneline", "--no-decorate", "-n", "50", range.as_str()]);
            let range = format!("{onto}...{current}");
            show(&mut out, "Files they change", &["diff", "--no-ext-diff", "--no-textconv", "--stat", range.as_str()]);
            out.push_str(&preflight(git, current, onto));
        }
        "discard" => {
            out.push_str("Paths to discard (changes lost; the restore point keeps them):\n");
            for path in path_list(body) {
                let _ = writeln!(out, "  {path}");
            }
            let mut args = vec!["--literal-pathspecs", "diff", "--no-ext-diff", "--no-textconv", "HEAD", "--"];
            let paths = path_list(body);
            args.extend(paths.iter().map(String::as_str));
            show(&mut out, "Diff (HEAD vs work tree)", &args);
        }
        "reset" => {
            let target = field(body, "targetRef", "HEAD");
            let range = format!("{target}..HEAD");
            show(
                &mut out,
                "Commits leaving the branch",
                &["log", "--oneline", "--no-decorate", "-n", "50", range.as_str()],
            );
            if field(body, "mode", "mixed") == "hard" {
                show(
                    &mut out,
                    "Uncommitted changes a hard reset throws away",
                    &["diff", "--no-ext-diff", "--no-textconv", "--stat", "HEAD"],
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
        "patch" => {
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
        "commit" => {
            let paths = path_list(body);
            if flag(body, "stageAll") {
                show(
                    &mut out,
                    "Files (everything, staged and not)",
                    &["status", "--porcelain=v1", "--untracked-files=all"],
                );
            } else if paths.is_empty() {
                show(&mut out, "Files (what is staged)", &["diff", "--cached", "--name-status"]);
                show(&mut out, "Diff (staged)", &["diff", "--cached", "--no-ext-diff", "--no-textconv"]);
            } else {
                let mut args = vec!["--literal-pathspecs", "status", "--porcelain=v1", "--untracked-files=all", "--"];
                args.extend(paths.iter().map(String::as_str));
                show(&mut out, "Files (exactly these paths)", &args);
                let mut args = vec!["--literal-pathspecs", "diff", "--no-ext-diff", "--no-textconv", "HEAD", "--"];
                args.extend(paths.iter().map(String::as_str));
                show(&mut out, "Diff (HEAD vs work tree)", &args);
            }
        }
        "branch" => {
            let start = field(body, "startPoint", "HEAD");
            show(&mut out, "Start point", &["log", "--oneline", "--no-decorate", "-n", "1", start]);
        }
        _ => {
            let _ = writeln!(out, "This gateway does not execute '{}' proposals yet.", proposal.op);
        }
    }
    out
}

fn preflight(git: &Git, ours: &str, theirs: &str) -> String {
    let output = git.read(&["merge-tree", "--write-tree", "--name-only", "--no-messages", ours, theirs]);
    match output {
        Ok(output) if output.code == 0 => "Conflict preflight: clean (no conflicts predicted)\n".to_owned(),
        Ok(output) if output.code == 1 => {
            let paths: Vec<&str> = output.stdout.lines().skip(1).filter(|line| !line.is_empty()).collect();
            format!("Conflict preflight: CONFLICTS predicted in {} path(s):\n  {}\n", paths.len(), paths.join("\n  "))
        }
        Ok(output) => format!("Conflict preflight: unavailable ({})\n", output.stderr.trim()),
        Err(error) => format!("Conflict preflight: unavailable ({error})\n"),
    }
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
