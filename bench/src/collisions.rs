//! `fluxgit-bench collisions`: `repo.collisions` over ten linked worktrees of a real clone, each an agent's line of
//! work (two commits of its own and uncommitted edits, some touching the same files as another's), against what an
//! agent runs without it: `git stash create` in each worktree (its uncommitted side as a commit) and
//! `git merge-tree --write-tree` for every pair of lines and for each line against the default branch. Cold is
//! the first call of a new server (after `initialize`), warm the median of the calls after it; the answer's size in
//! tokens. Raw numbers go to `bench/results/collisions/`, a `## Collision forecast` section of `BENCHMARK.md` gives
//! the ratios (issue 54's targets: cold within 2x of the git runs, warm <= 5 ms, the answer <= 600 tokens).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};
use serde::Serialize;
use serde_json::json;

use crate::latency::{env_for, median, millis};
use crate::mcp::Session;

/// The section of `BENCHMARK.md` this run rewrites.
pub(crate) const SECTION: &str = "Collision forecast";

/// Files every worktree edits in a region of its own or of a neighbour's (so some pairs overlap, some do not).
const SHARED: [&str; 3] = ["README.md", "CHANGELOG.md", "Cargo.toml"];

/// `fluxgit-bench collisions`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The repository cloned (a local path or a mirror), e.g. a ripgrep clone.
    #[arg(long, value_name = "REPO")]
    pub(crate) repo: PathBuf,
    /// Linked worktrees made, one per agent (2-20).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u8).range(2..=20))]
    pub(crate) worktrees: u8,
    /// Where the clone and its worktrees are made (emptied first).
    #[arg(long, value_name = "DIR", default_value = "/tmp/fluxgit-bench-collisions")]
    pub(crate) dir: PathBuf,
    /// Warm calls (their median is reported).
    #[arg(long, default_value_t = 20)]
    pub(crate) samples: usize,
    /// The sidecar binary (use a release build). Default: build it with cargo and use the one beside this binary.
    #[arg(long, value_name = "BINARY")]
    pub(crate) sidecar: Option<PathBuf>,
}

/// Runs the benchmark and rewrites its section of `BENCHMARK.md`.
pub(crate) fn bench(args: &Args) -> anyhow::Result<()> {
    let sidecar = match &args.sidecar {
        Some(sidecar) => sidecar.clone(),
        None => crate::built_sidecar()?,
    };
    let worktrees = usize::from(args.worktrees);
    let run = run(&sidecar, &args.repo, &args.dir, worktrees, args.samples.max(1))?;
    write_results(&crate::provenance::workspace_root().join("bench/results/collisions"), &run)?;
    let markdown_path = crate::provenance::workspace_root().join("BENCHMARK.md");
    let existing = std::fs::read_to_string(&markdown_path).unwrap_or_default();
    let invocation = format!(
        "cargo run --release -q -p fluxgit-bench -- collisions --repo <a ripgrep clone> --worktrees {worktrees}"
    );
    let section = render(&run, &invocation);
    std::fs::write(&markdown_path, crate::latency::splice_named(&existing, SECTION, &section))
        .with_context(|| format!("cannot write {}", markdown_path.display()))?;
    eprintln!("fluxgit-bench: wrote {}", markdown_path.display());
    Ok(())
}

/// The whole run.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CollisionRun {
    /// The clone measured (its origin).
    pub(crate) repository: String,
    pub(crate) worktrees: usize,
    /// `git merge-tree --write-tree` runs (pairs of lines, and each line against the default branch).
    pub(crate) merge_tree_runs: usize,
    /// `git stash create` in each worktree plus every merge-tree run, milliseconds.
    pub(crate) git_ms: f64,
    /// Pairs git's merge-tree reports as conflicting.
    pub(crate) git_conflicting_pairs: usize,
    pub(crate) cold_ms: f64,
    pub(crate) warm_median_ms: f64,
    pub(crate) warm_ms: Vec<f64>,
    /// `o200k_base` tokens of the default answer's text.
    pub(crate) tokens: usize,
    /// Pairs the forecast lists as conflicting.
    pub(crate) forecast_conflicting_pairs: usize,
}

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("git").arg("-C").arg(dir).args(args).output().context("git runs")?;
    if !output.status.success() {
        bail!("git {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Appends a line to the `at`-th line of `path` (its end when shorter): an edit in one region of the file.
fn edit(path: &Path, at: usize, text: &str) -> anyhow::Result<()> {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    let mut lines: Vec<&str> = old.lines().collect();
    let at = at.min(lines.len());
    lines.insert(at, text);
    std::fs::write(path, lines.join("\n") + "\n").with_context(|| format!("cannot write {}", path.display()))
}

/// Clones `source` into `dir/main` and adds `count` worktrees `dir/agent-<i>` on branches `agent-<i>`, each with
/// two commits and uncommitted edits. Worktree `i` edits the shared files at region `i / 2` (so worktrees 0 and 1,
/// 2 and 3, ... change the same lines) and a file of its own.
fn build(source: &Path, dir: &Path, count: usize) -> anyhow::Result<(PathBuf, Vec<PathBuf>)> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let main = dir.join("main");
    let status = Command::new("git")
        .args(["clone", "-q", "--no-hardlinks"])
        .arg(source)
        .arg(&main)
        .status()
        .context("git clone runs")?;
    if !status.success() {
        bail!("git clone {} failed", source.display());
    }
    git(&main, &["config", "user.name", "Bench"])?;
    git(&main, &["config", "user.email", "bench@example.invalid"])?;
    let mut worktrees = Vec::new();
    for index in 0..count {
        let path = dir.join(format!("agent-{index}"));
        let branch = format!("agent-{index}");
        git(&main, &["worktree", "add", "-q", "-b", &branch, path.to_str().context("utf-8 path")?])?;
        let region = 10 + 40 * (index / 2);
        for (round, file) in SHARED.iter().enumerate().take(2) {
            edit(&path.join(file), region + round, &format!("agent {index} was here ({round})"))?;
            edit(&path.join(format!("agent-{index}.txt")), 0, &format!("work {round}"))?;
            git(&path, &["add", "-A"])?;
            git(&path, &["commit", "-q", "-m", &format!("agent {index}: step {round}")])?;
        }
        edit(&path.join(SHARED[2]), region, &format!("# agent {index}, uncommitted"))?;
        edit(&path.join(format!("agent-{index}.txt")), 0, "uncommitted")?;
        worktrees.push(path);
    }
    Ok((main, worktrees))
}

/// What an agent without the forecast runs: each worktree's uncommitted side as a commit, then merge-tree for
/// every pair and each against the default branch. Returns (milliseconds, runs, conflicting pairs).
fn git_side(main: &Path, worktrees: &[PathBuf]) -> anyhow::Result<(f64, usize, usize)> {
    let started = Instant::now();
    let default = git(main, &["rev-parse", "HEAD"])?;
    let mut tips = vec![default];
    for worktree in worktrees {
        let stash = git(worktree, &["stash", "create"])?;
        tips.push(if stash.is_empty() { git(worktree, &["rev-parse", "HEAD"])? } else { stash });
    }
    let (mut runs, mut conflicting) = (0, 0);
    for first in 0..tips.len() {
        for second in first + 1..tips.len() {
            let output = Command::new("git")
                .arg("-C")
                .arg(main)
                .args(["merge-tree", "--write-tree", "--name-only", &tips[first], &tips[second]])
                .output()?;
            runs += 1;
            match output.status.code() {
                Some(0) => {}
                Some(1) => conflicting += 1,
                _ => bail!("git merge-tree failed: {}", String::from_utf8_lossy(&output.stderr)),
            }
        }
    }
    Ok((millis(started), runs, conflicting))
}

/// Builds the worktrees, times the git side, then the forecast in a new server.
pub(crate) fn run(
    sidecar: &Path,
    source: &Path,
    dir: &Path,
    count: usize,
    samples: usize,
) -> anyhow::Result<CollisionRun> {
    eprintln!("fluxgit-bench: {count} worktrees of {} in {} ...", source.display(), dir.display());
    let (main, worktrees) = build(source, dir, count)?;
    let (git_ms, merge_tree_runs, git_conflicting_pairs) = git_side(&main, &worktrees)?;
    let run_dir = tempfile::tempdir()?;
    let root = std::fs::canonicalize(dir)?;
    let env = env_for(root.as_os_str(), run_dir.path());
    let mut session = Session::start(sidecar, &env)?;
    let arguments = json!({ "repoPath": main.display().to_string(), "format": "text" });
    let started = Instant::now();
    let (answer, data) = session.call_structured("repo_collisions", &arguments)?;
    let cold_ms = millis(started);
    if answer.status() != "ok" {
        bail!("repo_collisions answered {}: {}", answer.status(), answer.text());
    }
    let tokens = fluxgit_engine::budget::count_tokens(answer.text());
    let conflicting = data.as_ref().and_then(|data| data["data"]["conflicting"].as_u64()).unwrap_or(0);
    let forecast_conflicting_pairs = usize::try_from(conflicting)?;
    let mut warm = Vec::new();
    for _ in 0..samples {
        let started = Instant::now();
        session.call("repo_collisions", &arguments)?;
        warm.push(millis(started));
    }
    Ok(CollisionRun {
        repository: source.display().to_string(),
        worktrees: count,
        merge_tree_runs,
        git_ms,
        git_conflicting_pairs,
        cold_ms,
        warm_median_ms: median(&warm),
        warm_ms: warm,
        tokens,
        forecast_conflicting_pairs,
    })
}

/// Writes the raw numbers to `dir/collisions.json`.
pub(crate) fn write_results(dir: &Path, run: &CollisionRun) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("collisions.json"), serde_json::to_string_pretty(run)? + "\n")?;
    Ok(())
}

/// The `## Collision forecast` section.
pub(crate) fn render(run: &CollisionRun, invocation: &str) -> String {
    let mut out = format!("## {SECTION}\n\n");
    let _ = writeln!(
        out,
        "`repo_collisions` over {} linked worktrees of a clone of `{}` (two commits and uncommitted edits each; \
         worktrees 0 and 1, 2 and 3, ... change the same lines), against what an agent runs without it: `git stash \
         create` in each worktree, then `git merge-tree --write-tree` for each of the {} pairs of lines (the \
         default branch included). Cold is a new server's first call, warm the median after it. Reproduce: \
         `{invocation}`. Raw numbers: `bench/results/collisions/collisions.json`.\n",
        run.worktrees,
        Path::new(&run.repository).file_name().map_or(run.repository.clone(), |name| name.display().to_string()),
        run.merge_tree_runs
    );
    let _ = writeln!(out, "| | git runs | forecast cold | forecast warm (median) | answer tokens |");
    let _ = writeln!(out, "|---|---|---|---|---|");
    let _ = writeln!(
        out,
        "| time | {:.0} ms | {:.0} ms ({:.2}x git) | {:.2} ms | {} |",
        run.git_ms,
        run.cold_ms,
        run.cold_ms / run.git_ms.max(0.001),
        run.warm_median_ms,
        run.tokens
    );
    let _ = writeln!(
        out,
        "| conflicting pairs | {} | {} | | |\n",
        run.git_conflicting_pairs, run.forecast_conflicting_pairs
    );
    let _ = writeln!(
        out,
        "Targets (issue 54): cold within 2x of the git runs, warm <= 5 ms, the answer within 600 tokens: {}.",
        if run.cold_ms <= 2.0 * run.git_ms && run.warm_median_ms <= 5.0 && run.tokens <= 600 {
            "met"
        } else {
            "**missed**"
        }
    );
    out
}
