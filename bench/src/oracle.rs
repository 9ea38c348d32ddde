//! The truth about a fixture, from the git CLI's machine-readable formats (porcelain v2, `--format`), never from
//! the outputs being judged.

use std::path::PathBuf;

use anyhow::Context as _;
use serde::Serialize;

use crate::cli::GitAt;

/// How many recent commits the checklist asks for (the bench's `repo.brief` call asks for them, `recentCommits` 10,
/// and the sweep runs `git log -n 10`).
pub(crate) const RECENT_COMMITS: usize = 10;

/// What git says about the repository.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Truth {
    /// `git symbolic-ref --short HEAD`, when HEAD is on a branch.
    pub(crate) branch: Option<String>,
    /// HEAD names a commit directly.
    pub(crate) detached: bool,
    /// `git rev-parse HEAD`, full.
    pub(crate) head: Option<String>,
    /// The branch a stopped rebase is rewriting (`rebase-merge/head-name`).
    pub(crate) rebasing_branch: Option<String>,
    /// `git rev-parse --abbrev-ref @{upstream}`.
    pub(crate) upstream: Option<String>,
    /// Commits on HEAD not on the upstream.
    pub(crate) ahead: Option<usize>,
    /// Commits on the upstream not on HEAD.
    pub(crate) behind: Option<usize>,
    /// `merge`, `rebase`, `cherry-pick`, `revert`, `bisect` or `am`, from the git dir's state files.
    pub(crate) operation: Option<String>,
    /// Paths whose index differs from HEAD (porcelain v2 `X` not `.`).
    pub(crate) staged: Vec<String>,
    /// Paths whose work tree differs from the index (porcelain v2 `Y` not `.`).
    pub(crate) unstaged: Vec<String>,
    /// Untracked files as `git status` lists them (a wholly untracked directory as `dir/`).
    pub(crate) untracked: Vec<String>,
    /// Unmerged paths.
    pub(crate) conflicted: Vec<String>,
    /// `git stash list` entries.
    pub(crate) stashes: usize,
    /// `git submodule status --recursive`: path and state.
    pub(crate) submodules: Vec<SubmoduleTruth>,
    /// `git log -n 10`: full sha and subject, newest first.
    pub(crate) recent_commits: Vec<(String, String)>,
}

/// One submodule's state.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SubmoduleTruth {
    /// Path in the superproject (nested ones included).
    pub(crate) path: String,
    /// `clean`, `drifted`, `uninitialized` or `conflict`.
    pub(crate) state: &'static str,
}

impl Truth {
    /// Submodules in `state`.
    pub(crate) fn submodules_in(&self, state: &str) -> Vec<&SubmoduleTruth> {
        self.submodules.iter().filter(|submodule| submodule.state == state).collect()
    }
}

/// Asks git about the work tree (a fixture's main one, or an existing repository).
pub(crate) fn read(at: GitAt<'_>) -> anyhow::Result<Truth> {
    let git = |args: &[&str]| -> anyhow::Result<Option<String>> {
        let output = at.command().args(args).output()?;
        Ok(output.status.success().then(|| String::from_utf8_lossy(&output.stdout).into_owned()))
    };
    let mut truth = Truth { head: git(&["rev-parse", "-q", "--verify", "HEAD"])?.map(trimmed), ..Truth::default() };
    truth.branch = git(&["symbolic-ref", "-q", "--short", "HEAD"])?.map(trimmed);
    truth.detached = truth.branch.is_none() && truth.head.is_some();
    truth.upstream = git(&["rev-parse", "--abbrev-ref", "@{upstream}"])?.map(trimmed);
    if truth.upstream.is_some() {
        let counts = git(&["rev-list", "--left-right", "--count", "@{upstream}...HEAD"])?.context("rev-list")?;
        let mut numbers = counts.split_whitespace().map(str::parse::<usize>);
        truth.behind = Some(numbers.next().context("behind")??);
        truth.ahead = Some(numbers.next().context("ahead")??);
    }

    let git_dir = PathBuf::from(trimmed(git(&["rev-parse", "--absolute-git-dir"])?.context("git dir")?));
    let rebase_merge = git_dir.join("rebase-merge");
    truth.operation = [
        ("MERGE_HEAD", "merge"),
        ("rebase-merge", "rebase"),
        ("rebase-apply/applying", "am"),
        ("rebase-apply", "rebase"),
        ("CHERRY_PICK_HEAD", "cherry-pick"),
        ("REVERT_HEAD", "revert"),
        ("BISECT_LOG", "bisect"),
    ]
    .iter()
    .find(|(file, _)| git_dir.join(file).exists())
    .map(|(_, operation)| (*operation).to_owned());
    if let Ok(head_name) = std::fs::read_to_string(rebase_merge.join("head-name")) {
        truth.rebasing_branch = Some(head_name.trim().trim_start_matches("refs/heads/").to_owned());
    }

    let status = git(&["status", "--porcelain=v2", "-z"])?.context("git status")?;
    read_status(&status, &mut truth);
    truth.stashes = git(&["stash", "list"])?.context("git stash list")?.lines().count();
    let submodules = git(&["submodule", "status", "--recursive"])?.context("git submodule status")?;
    truth.submodules = submodules
        .lines()
        .filter_map(|line| {
            let state = match line.chars().next()? {
                '+' => "drifted",
                '-' => "uninitialized",
                'U' => "conflict",
                _ => "clean",
            };
            let path = line.get(1..)?.split(' ').nth(1)?.to_owned();
            Some(SubmoduleTruth { path, state })
        })
        .collect();
    if truth.head.is_some() {
        let log = git(&["log", "-n", &RECENT_COMMITS.to_string(), "--format=%H%x09%s"])?.context("git log")?;
        truth.recent_commits = log
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .map(|(sha, subject)| (sha.to_owned(), subject.to_owned()))
            .collect();
    }
    Ok(truth)
}

/// Fills the path lists from `git status --porcelain=v2 -z`.
fn read_status(status: &str, truth: &mut Truth) {
    let mut records = status.split('\0').filter(|record| !record.is_empty());
    while let Some(record) = records.next() {
        let kind = record.split(' ').next().unwrap_or_default();
        match kind {
            "1" | "2" => {
                let path_field = if kind == "1" { 8 } else { 9 };
                let path = record.splitn(path_field + 1, ' ').nth(path_field).unwrap_or_default().to_owned();
                let xy = record.as_bytes().get(2..4).unwrap_or_default();
                if xy.first() != Some(&b'.') {
                    truth.staged.push(path.clone());
                }
                if xy.get(1) != Some(&b'.') {
                    truth.unstaged.push(path);
                }
                if kind == "2" {
                    records.next(); // the rename's source path
                }
            }
            "u" => truth.conflicted.push(record.splitn(11, ' ').nth(10).unwrap_or_default().to_owned()),
            "?" => truth.untracked.push(record.get(2..).unwrap_or_default().to_owned()),
            _ => {}
        }
    }
}

fn trimmed(text: String) -> String {
    text.trim().to_owned()
}
