//! Where a benchmark run comes from, for the reports: the workspace, its commit, the time, the git
//! version, and the cargo profile a sidecar is built in.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;

/// The workspace this binary was built from.
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The commit this workspace is at, as `commit 1c81b8d` (with ` plus uncommitted changes` when `git status` lists
/// any outside BENCHMARK.md and bench/results/, which the runs write), or `an unknown commit`.
pub(crate) fn built_from() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(workspace_root())
            .args(args)
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
    };
    let Some(sha) = git(&["rev-parse", "--short", "HEAD"]) else { return "an unknown commit".to_owned() };
    let dirty = git(&["status", "--porcelain", "--", ".", ":!BENCHMARK.md", ":!bench/results"])
        .is_some_and(|status| !status.trim().is_empty());
    format!("commit {}{}", sha.trim(), if dirty { " plus uncommitted changes" } else { "" })
}

/// The time now, `YYYY-MM-DD HH:MM UTC` (from `date -u`; `at an unknown time` without it).
pub(crate) fn utc_now() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map_or_else(
            || "at an unknown time".to_owned(),
            |output| String::from_utf8_lossy(&output.stdout).trim().to_owned(),
        )
}

/// The cargo arguments that build into `profile_dir` (a target dir's `debug`, `release` or custom profile folder):
/// none for `debug` (cargo's `dev` profile), `--profile NAME` otherwise.
pub(crate) fn profile_args(profile_dir: &Path) -> Vec<String> {
    match profile_dir.file_name().and_then(|name| name.to_str()) {
        None | Some("debug") => Vec::new(),
        Some(name) => vec!["--profile".to_owned(), name.to_owned()],
    }
}

/// `git --version`, trimmed.
pub(crate) fn git_version() -> anyhow::Result<String> {
    let output = Command::new("git").arg("--version").output().context("git is on PATH")?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::profile_args;

    /// A release bench builds a release sidecar (it used to build the debug one and measure it).
    #[test]
    fn the_sidecar_is_built_in_the_bench_profile() {
        assert!(profile_args(Path::new("/w/target/debug")).is_empty());
        assert_eq!(profile_args(Path::new("/w/target/release")), ["--profile", "release"]);
        assert_eq!(profile_args(Path::new("/w/target/bench-lto")), ["--profile", "bench-lto"]);
    }
}
