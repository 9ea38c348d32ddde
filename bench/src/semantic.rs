//! The `diff.semantic` benchmark: on the last commits of real repositories, the answer's tokens against
//! `diff.text`'s for the same selection, and its time (a cold engine, then the repeated call) against `git diff`.
//!
//! In process: each commit is read through `Engine::diff_semantic` and `Engine::diff_text` with budgets large
//! enough that nothing is cut, and both answers are counted as the JSON the sidecar would wrap. Cold is a new
//! engine per commit (no parse or answer kept) once its file-system watches are in place, as in a running
//! sidecar; repeated is the same call again on that engine, which its answer cache serves. `git diff -M
//! <parent> <commit>` runs as a process with its output read and thrown away.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};
use fluxgit_engine::diff::{semantic, text};
use fluxgit_engine::{Budgeted, Engine, Options, budget};

/// Large enough that nothing is cut.
const UNLIMITED: usize = 100_000_000;

/// One commit's measures.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CommitSample {
    /// The commit (full sha); its first parent is the base.
    pub(crate) commit: String,
    /// o200k tokens of the `diff.semantic` answer's JSON.
    pub(crate) semantic_tokens: usize,
    /// o200k tokens of the `diff.text` answer's JSON for the same selection.
    pub(crate) text_tokens: usize,
    /// `diff.semantic` on a new engine, milliseconds.
    pub(crate) cold_ms: f64,
    /// The same call again on that engine, milliseconds.
    pub(crate) repeated_ms: f64,
    /// `git diff -M <parent> <commit>` as a process, milliseconds.
    pub(crate) git_ms: f64,
    /// Files changed, and those that fell back to the text diff.
    pub(crate) files: usize,
    pub(crate) fallbacks: usize,
}

/// One repository's medians, and every commit's measures.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RepoRun {
    pub(crate) name: String,
    pub(crate) commits: usize,
    pub(crate) token_ratio_median: f64,
    pub(crate) token_ratio_max: f64,
    pub(crate) semantic_tokens_median: usize,
    pub(crate) text_tokens_median: usize,
    pub(crate) cold_ms_median: f64,
    pub(crate) git_ms_median: f64,
    pub(crate) time_ratio_median: f64,
    pub(crate) repeated_ms_median: f64,
    pub(crate) fallback_share: f64,
    /// Commits whose semantic answer had more tokens than the patch.
    pub(crate) larger: usize,
    /// The 1-minute load average before and after the repository's run.
    pub(crate) load_average: (f64, f64),
    pub(crate) samples: Vec<CommitSample>,
}

fn tokens<T: serde::Serialize>(result: &Budgeted<T>) -> usize {
    budget::count_tokens(&serde_json::to_string(result).expect("serialises"))
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) { (values[mid - 1] + values[mid]) / 2.0 } else { values[mid] }
}

fn git(repo: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("git").arg("-C").arg(repo).args(args).output().context("git runs")?;
    if !output.status.success() {
        bail!("git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The engine's allowed roots for `repo`: the repository and, for a linked work tree, the main
/// checkout whose git dir holds its own.
fn allowed_roots(repo: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let common = git(repo, &["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
    let mut allowed_roots = vec![repo.to_path_buf()];
    allowed_roots.extend(Path::new(common.trim()).parent().and_then(|parent| parent.canonicalize().ok()));
    Ok(allowed_roots)
}

/// `runs` cold `diff.semantic` calls of `commit` against its first parent in `repo`, each on a new
/// engine with its watches in place; returns their median in milliseconds.
pub(crate) fn probe(repo: &Path, commit: &str, runs: usize) -> anyhow::Result<f64> {
    let repo = repo.canonicalize().context("the repository exists")?;
    let repo_path = repo.to_str().context("a UTF-8 path")?;
    let options = semantic::Options {
        base: Some(format!("{commit}^")),
        head: Some(commit.to_owned()),
        ..semantic::Options::default()
    };
    let allowed_roots = allowed_roots(&repo)?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let engine = Engine::new(Options { allowed_roots: allowed_roots.clone() });
        let resolved = engine.resolve(repo_path)?;
        engine.cache_diagnostics(&resolved);
        let started = Instant::now();
        engine.diff_semantic(&resolved, &options, UNLIMITED, &mut tokens)?;
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(&mut times))
}

/// Measures the last `commits` non-merge commits of `repo` (first-parent from HEAD).
pub(crate) fn measure(name: &str, repo: &Path, commits: usize) -> anyhow::Result<RepoRun> {
    let repo = repo.canonicalize().context("the repository exists")?;
    let list = git(&repo, &["rev-list", "--first-parent", "--no-merges", "-n", &commits.to_string(), "HEAD"])?;
    let (mut ratios, mut semantic_tokens, mut text_tokens) = (Vec::new(), Vec::new(), Vec::new());
    let (mut cold, mut git_times, mut time_ratios, mut repeated) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut files, mut fallbacks) = (0usize, 0usize);
    let mut samples = Vec::new();
    let load_before = crate::latency::load_average().unwrap_or(f64::NAN);
    let repo_path = repo.to_str().context("a UTF-8 path")?;
    let allowed_roots = allowed_roots(&repo)?;
    for commit in list.lines() {
        let Ok(parent) = git(&repo, &["rev-parse", "--verify", "-q", &format!("{commit}^")]) else { continue };
        let parent = parent.trim().to_owned();
        let options = semantic::Options {
            base: Some(parent.clone()),
            head: Some(commit.to_owned()),
            ..semantic::Options::default()
        };
        let engine = Engine::new(Options { allowed_roots: allowed_roots.clone() });
        let resolved = engine.resolve(repo_path)?;
        // Until the watches are in place nothing is kept (any answer could be stale): wait for them, as a
        // sidecar that has served this repository before has.
        engine.cache_diagnostics(&resolved);
        let started = Instant::now();
        let answer = engine.diff_semantic(&resolved, &options, UNLIMITED, &mut tokens)?;
        let cold_ms = started.elapsed().as_secs_f64() * 1e3;
        let started = Instant::now();
        engine.diff_semantic(&resolved, &options, UNLIMITED, &mut tokens)?;
        let repeated_ms = started.elapsed().as_secs_f64() * 1e3;
        repeated.push(repeated_ms);
        let started = Instant::now();
        let output = Command::new("git").arg("-C").arg(&repo).args(["diff", "-M", &parent, commit]).output()?;
        let git_ms = started.elapsed().as_secs_f64() * 1e3;
        if !output.status.success() {
            bail!("git diff {parent} {commit} failed");
        }
        let text_options = text::Options {
            base: Some(parent),
            head: Some(commit.to_owned()),
            staged: false,
            path: None,
            max_bytes: text::MAX_MAX_BYTES,
            max_lines: None,
            binary: false,
        };
        let patch = engine.diff_text(&resolved, &text_options, UNLIMITED, &mut tokens)?;
        let (semantic_count, text_count) = (tokens(&answer), tokens(&patch));
        samples.push(CommitSample {
            commit: commit.to_owned(),
            semantic_tokens: semantic_count,
            text_tokens: text_count,
            cold_ms,
            repeated_ms,
            git_ms,
            files: answer.data.changed_files,
            fallbacks: answer.data.fallback_files,
        });
        ratios.push(semantic_count as f64 / text_count.max(1) as f64);
        semantic_tokens.push(semantic_count as f64);
        text_tokens.push(text_count as f64);
        cold.push(cold_ms);
        git_times.push(git_ms);
        time_ratios.push(cold_ms / git_ms.max(0.001));
        files += answer.data.changed_files;
        fallbacks += answer.data.fallback_files;
    }
    let ratio_max = ratios.iter().copied().fold(0.0, f64::max);
    let larger = samples.iter().filter(|sample| sample.semantic_tokens > sample.text_tokens).count();
    Ok(RepoRun {
        name: name.to_owned(),
        commits: ratios.len(),
        token_ratio_median: median(&mut ratios),
        token_ratio_max: ratio_max,
        semantic_tokens_median: median(&mut semantic_tokens) as usize,
        text_tokens_median: median(&mut text_tokens) as usize,
        cold_ms_median: median(&mut cold),
        git_ms_median: median(&mut git_times),
        time_ratio_median: median(&mut time_ratios),
        repeated_ms_median: median(&mut repeated),
        fallback_share: fallbacks as f64 / files.max(1) as f64,
        larger,
        load_average: (load_before, crate::latency::load_average().unwrap_or(f64::NAN)),
        samples,
    })
}

/// The repositories measured: this workspace's own history, and the mirrors present on this machine.
pub(crate) fn repositories(workspace: &Path, mirrors: &Path) -> Vec<(String, PathBuf)> {
    let mut out = vec![("this repository".to_owned(), workspace.to_path_buf())];
    for (name, dir) in [
        ("ripgrep (Rust)", "BurntSushi+ripgrep"),
        ("tokio (Rust)", "tokio-rs+tokio"),
        ("requests (Python)", "psf+requests"),
        ("got (TypeScript)", "sindresorhus+got"),
        ("git (C)", "git+git"),
    ] {
        let repo = mirrors.join(dir).join("repo");
        if repo.exists() {
            out.push((name.to_owned(), repo));
        }
    }
    out
}

/// The `## Semantic diff` section of BENCHMARK.md; `provenance` says the build's commit, the start time and where
/// the raw numbers are.
pub(crate) fn section(runs: &[RepoRun], commits: usize, provenance: &str) -> String {
    let mut out = String::from("## Semantic diff\n\n");
    let (low, high) = runs.iter().fold((f64::INFINITY, 0.0_f64), |(low, high), run| {
        (low.min(run.load_average.0).min(run.load_average.1), high.max(run.load_average.0).max(run.load_average.1))
    });
    out.push_str(&format!(
        "{provenance}; the 1-minute load average was {low:.1}-{high:.1} on this 2-core machine (other builds).\n\n"
    ));
    out.push_str(&format!(
        "Generated by `cargo run --release -q -p fluxgit-bench -- semantic --commits {commits}` (release build, in \
         process): for each of the last {commits} non-merge commits (first parent from HEAD) of each repository, \
         `diff.semantic` and `diff.text` of `<commit>^..<commit>` with budgets that cut nothing, counted as JSON in \
         o200k tokens; cold is a new engine per commit with its file-system watches in place (nothing parsed or \
         answered yet), repeated the same call again on it (served by the answer cache); `git diff -M` is a \
         process whose output is read and dropped. Targets: token ratio median <= 0.15 and never above 1, cold \
         median <= 2x git, repeated <= 5 ms. Medians per repository; times are this 2-core machine's under the \
         load of other builds.\n\n"
    ));
    out.push_str(
        "| repository | commits | tokens semantic / text (median) | max ratio | semantic tokens | text tokens | \
         cold ms | git diff ms | cold / git | repeated ms | files fallen back | larger than text |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for run in runs {
        out.push_str(&format!(
            "| {} | {} | {:.3} | {:.3} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1}% | {} |\n",
            run.name,
            run.commits,
            run.token_ratio_median,
            run.token_ratio_max,
            run.semantic_tokens_median,
            run.text_tokens_median,
            run.cold_ms_median,
            run.git_ms_median,
            run.time_ratio_median,
            run.repeated_ms_median,
            run.fallback_share * 100.0,
            run.larger,
        ));
    }
    out.push('\n');
    out
}
