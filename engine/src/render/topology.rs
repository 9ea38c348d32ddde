//! Text renderings of `worktree.list` and `submodule.status`.

use super::{Lines, Options, esc, short};
use crate::budget::Budgeted;
use crate::facets::submodules::SubmoduleState;
use crate::{submodule_status, worktree_list};

/// `worktree.list` as `git worktree list` prints it, one line per worktree, the main one first:
/// `<path> <sha> [<branch>]`, `(detached HEAD)` for a detached one, `(bare)` for a bare main
/// repository and `(unborn)` for a branch without commits, then the marks that apply: `current`
/// (the worktree `repoPath` names), `locked` or `locked: <reason>`, `prunable`, and
/// `error: <reason>` for an entry that could not be read. Then its state, where there is any:
/// `[origin/x: ahead 2, behind 1]` as `git branch -vv` shows an upstream (`[origin/x: gone]`), the
/// same against the default branch as `[vs main: ahead 3]` (`[vs main]` when even),
/// `rebase in progress`, `conflicted N staged N unstaged N untracked N` (zeros left out),
/// `agents <kinds> at <ms>`, `state unreadable: <reason>`, and `outside roots, not read`. Paths are
/// quoted as `git status --short` quotes them, so a path is one word.
pub fn worktree_list(result: &Budgeted<worktree_list::Report>, options: &Options) -> String {
    let mut out = Lines::default();
    for worktree in &result.data.worktrees {
        let mut line = options.status_path(&worktree.path);
        if worktree.bare {
            line.push_str(" (bare)");
        } else {
            match &worktree.head_sha {
                Some(sha) => line.push_str(&format!(" {}", short(sha))),
                None if worktree.error.is_none() => line.push_str(" (unborn)"),
                None => {}
            }
            match &worktree.branch {
                Some(branch) => line.push_str(&format!(" [{}]", esc(branch))),
                None if worktree.detached => line.push_str(" (detached HEAD)"),
                None => {}
            }
        }
        if worktree.current {
            line.push_str(" current");
        }
        match (&worktree.lock_reason, worktree.locked) {
            (Some(reason), _) => line.push_str(&format!(" locked: {}", esc(reason))),
            (None, true) => line.push_str(" locked"),
            (None, false) => {}
        }
        if worktree.prunable {
            line.push_str(" prunable");
        }
        if let Some(error) = &worktree.error {
            line.push_str(&format!(" error: {}", esc(&error.reason)));
        }
        worktree_state(&mut line, worktree);
        out.line(line);
    }
    out.finish()
}

fn worktree_state(line: &mut String, worktree: &worktree_list::Worktree) {
    if let Some(upstream) = &worktree.upstream {
        line.push_str(&counted(&esc(&upstream.name), upstream));
    }
    if let Some(default) = &worktree.vs_default {
        line.push_str(&counted(&format!("vs {}", esc(&default.name)), default));
    }
    if let Some(operation) = worktree.operation {
        line.push_str(&format!(" {} in progress", operation.name()));
    }
    for (label, count) in [
        ("conflicted", worktree.conflicted),
        ("staged", worktree.staged),
        ("unstaged", worktree.unstaged),
        ("untracked", worktree.untracked),
    ] {
        if count > 0 {
            line.push_str(&format!(" {label} {count}"));
        }
    }
    if !worktree.agents.is_empty() {
        let kinds: Vec<String> = worktree.agents.iter().map(|kind| esc(kind).into_owned()).collect();
        line.push_str(&format!(" agents {}", kinds.join(",")));
        if let Some(at) = worktree.last_activity_ms {
            line.push_str(&format!(" at {at}"));
        }
    }
    if let Some(reason) = &worktree.state_error {
        line.push_str(&format!(" state unreadable: {}", esc(reason)));
    }
    if worktree.outside_roots {
        line.push_str(" outside roots, not read");
    }
}

/// ` [<label>: ahead N, behind N]`, `gone` first for an upstream that is gone, ` [<label>]` when
/// even.
fn counted(label: &str, counts: &crate::facets::refs::Upstream) -> String {
    let mut parts = Vec::new();
    if counts.gone {
        parts.push("gone".to_owned());
    }
    if counts.ahead > 0 {
        parts.push(format!("ahead {}", counts.ahead));
    }
    if counts.behind > 0 {
        parts.push(format!("behind {}", counts.behind));
    }
    match parts.is_empty() {
        true => format!(" [{label}]"),
        false => format!(" [{label}: {}]", parts.join(", ")),
    }
}

/// `submodule.status` as `git submodule status --recursive` prints it, one line per submodule in
/// git's order: a state letter (` ` clean, `+` drifted, `-` uninitialized, `U` conflict, `!`
/// unreadable), the commit checked out (the recorded one unless drifted; `0000000` when nothing is
/// recorded), the path, then `(recorded <sha>)` for a drifted one, `dirty`, `untracked N` and
/// `error: <reason>` where they apply. `no submodules` (under `path`, when given) when there are
/// none. Paths are quoted as `git status --short` quotes them.
pub fn submodule_status(result: &Budgeted<submodule_status::Report>, options: &Options) -> String {
    let report = &result.data;
    let mut out = Lines::default();
    if report.submodules.is_empty() {
        match &report.path {
            Some(path) => out.line(format!("no submodules under {}", options.status_path(path))),
            None => out.line("no submodules"),
        }
    }
    for submodule in &report.submodules {
        let mark = match submodule.state {
            SubmoduleState::Clean => ' ',
            SubmoduleState::Drifted => '+',
            SubmoduleState::Uninitialized => '-',
            SubmoduleState::Conflict => 'U',
            SubmoduleState::Unreadable => '!',
        };
        let shown = submodule.checked_out_sha.as_ref().or(submodule.recorded_sha.as_ref());
        let mut line =
            format!("{mark}{} {}", shown.map_or("0000000", |sha| short(sha)), options.status_path(&submodule.path));
        if let (Some(recorded), Some(_)) = (&submodule.recorded_sha, &submodule.checked_out_sha) {
            line.push_str(&format!(" (recorded {})", short(recorded)));
        }
        if submodule.dirty {
            line.push_str(" dirty");
        }
        if submodule.untracked > 0 {
            line.push_str(&format!(" untracked {}", submodule.untracked));
        }
        if let Some(error) = &submodule.error {
            line.push_str(&format!(" error: {}", esc(&error.reason)));
        }
        out.line(line);
    }
    out.finish()
}
