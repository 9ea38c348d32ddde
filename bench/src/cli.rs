//! The raw git CLI side: the sweep `repo.brief` replaces and the hand-tuned minimal counterexample.
//!
//! Commands run in the fixture's work tree with the fixture's environment (no user config, `LC_ALL=C`, `TZ=UTC`,
//! colour off, no pager since stdout is a pipe), exactly as written in the results' `commands.sh`.

use std::path::Path;
use std::process::Command;

use fluxgit_fixtures::Fixture;

/// Where git commands run: a fixture's work tree with its pinned environment, or an existing repository (`--repo`)
/// with `LC_ALL=C`, `TZ=UTC`, no pager and no optional locks.
#[derive(Debug, Clone, Copy)]
pub(crate) enum GitAt<'a> {
    Fixture(&'a Fixture),
    Repo(&'a Path),
}

impl GitAt<'_> {
    /// A `git` command in the work tree.
    pub(crate) fn command(self) -> Command {
        match self {
            GitAt::Fixture(fixture) => fixture.git_command(fixture.path()),
            GitAt::Repo(path) => {
                let mut command = Command::new("git");
                command
                    .current_dir(path)
                    .env("LC_ALL", "C")
                    .env("TZ", "UTC")
                    .env("GIT_PAGER", "cat")
                    .env("GIT_OPTIONAL_LOCKS", "0");
                command
            }
        }
    }
}

/// One git command and what an agent running it would read.
#[derive(Debug, Clone)]
pub(crate) struct CliRun {
    /// The arguments after `git`.
    pub(crate) args: Vec<String>,
    /// The command line as typed, e.g. `git status -sb`.
    pub(crate) line: String,
    /// stdout, then stderr (lossy UTF-8): what a terminal tool hands the model.
    pub(crate) output: String,
    /// Exit code (-1 if killed by a signal).
    pub(crate) exit_code: i32,
}

/// The raw git calls `repo.brief` replaces (issue 6), plus `git diff -- <path>` for each conflicted path.
pub(crate) fn sweep_commands(conflicted_paths: &[String]) -> Vec<Vec<String>> {
    let mut commands: Vec<Vec<String>> = [
        "status",
        "log -n 10",
        "branch -vv",
        "stash list",
        "submodule status --recursive",
        "diff --stat",
        "rev-list --left-right --count @{upstream}...HEAD",
        "worktree list",
    ]
    .iter()
    .map(|line| line.split(' ').map(str::to_owned).collect())
    .collect();
    for path in conflicted_paths {
        commands.push(vec!["diff".to_owned(), "--".to_owned(), path.clone()]);
    }
    commands
}

/// What an expert types instead: short status with branch and upstream, the ten commits the checklist asks
/// for on one line each, and the stash list (empty, so free, when there are none).
pub(crate) fn counterexample_commands() -> Vec<Vec<String>> {
    ["status -sb", "log --oneline -10", "stash list"]
        .iter()
        .map(|line| line.split(' ').map(str::to_owned).collect())
        .collect()
}

/// Runs `git <args>` in the work tree.
pub(crate) fn run(at: GitAt<'_>, args: &[String]) -> anyhow::Result<CliRun> {
    let output = at.command().args(args).output()?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok(CliRun {
        args: args.to_vec(),
        line: command_line(args),
        output: text,
        exit_code: output.status.code().unwrap_or(-1),
    })
}

/// `git` and `args`, each quoted for `sh` when it holds anything but plain characters.
pub(crate) fn command_line(args: &[String]) -> String {
    let mut line = String::from("git");
    for arg in args {
        line.push(' ');
        let plain = arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./@{}=:".contains(c));
        if plain {
            line.push_str(arg);
        } else {
            line.push('\'');
            line.push_str(&arg.replace('\'', r"'\''"));
            line.push('\'');
        }
    }
    line
}

/// A file name for command `index`: `01-git-status-sb.txt`.
pub(crate) fn file_name(index: usize, args: &[String]) -> String {
    let mut slug = String::from("git");
    for word in args.iter().take(4).flat_map(|arg| arg.split(|c: char| !c.is_ascii_alphanumeric())) {
        if !word.is_empty() {
            slug.push('-');
            slug.push_str(&word.to_ascii_lowercase());
        }
    }
    slug.truncate(48);
    format!("{:02}-{}.txt", index + 1, slug.trim_end_matches('-'))
}
