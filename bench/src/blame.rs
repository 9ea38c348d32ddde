//! `fluxgit-bench blame`: `file.blame` of the whole 1,000-line file of the blame-history fixture (80,000 commits)
//! through the real server, cold (the first call on the repository in a running server) and warm (the calls after
//! it, served from the answer cache), against `git blame --line-porcelain` of the same file (its first run and the
//! median of the runs after it). The answer is checked line by line against git's: same commit for every line.
//! Raw numbers go to `bench/results/blame/`, a `## Blame` section of `BENCHMARK.md` gives the ratios.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context as _, bail};
use serde::Serialize;
use serde_json::{Value, json};

use crate::latency::{self, median, millis};
use crate::mcp::Session;

/// Settings of a blame run.
pub(crate) struct Setup {
    pub(crate) sidecar: PathBuf,
    pub(crate) repo: PathBuf,
    pub(crate) path: &'static str,
    /// A small repository the server reads first, so that token tables and watcher are up before the cold call.
    pub(crate) warmup_repo: PathBuf,
    pub(crate) allowed_roots: OsString,
    pub(crate) samples: usize,
}

/// What was measured.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BlameRun {
    pub(crate) repository: String,
    pub(crate) path: String,
    pub(crate) commits: usize,
    pub(crate) lines: usize,
    /// `git blame --line-porcelain HEAD -- path`: the first run, then the median of the runs after it (ms).
    pub(crate) git_first_ms: f64,
    pub(crate) git_median_ms: f64,
    pub(crate) git_ms: Vec<f64>,
    /// `file.blame` over stdio: the first call on the repository, then the median of the calls after it (ms).
    pub(crate) cold_ms: f64,
    /// The call right after the cold one (ms): computed again, as the first call on a repository holds its watch
    /// registration back and so its answer is not kept.
    pub(crate) second_ms: f64,
    /// The calls after the second, answered from the answer cache: their median, then each (ms).
    pub(crate) warm_median_ms: f64,
    pub(crate) warm_ms: Vec<f64>,
    /// Ranges in the answer, and the answer's size in o200k tokens.
    pub(crate) ranges: usize,
    pub(crate) answer_tokens: usize,
    /// Lines whose commit differs from git's (0: the same answer).
    pub(crate) lines_differing_from_git: usize,
    /// CPU seconds, page faults and peak RSS of git and of one in-process call, per pack layout.
    pub(crate) cpu: Vec<CpuRun>,
    /// The 1-minute load average (`/proc/loadavg`) at the start, after the calls over stdio and after each pack
    /// layout's CPU runs.
    pub(crate) load_average: Vec<f64>,
}

/// The 1-minute load average of the machine ([`latency::load_average`]), 0 where `/proc/loadavg` cannot be read.
pub(crate) fn load_average() -> f64 {
    latency::load_average().unwrap_or(0.0)
}

/// One run of `git blame --line-porcelain HEAD -- path`: its time and, per line, the full sha.
fn git_blame(repo: &Path, path: &str) -> anyhow::Result<(f64, Vec<String>)> {
    let started = Instant::now();
    let output = Command::new("git")
        .args(["blame", "--line-porcelain", "HEAD", "--", path])
        .current_dir(repo)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .context("git blame")?;
    let elapsed = millis(started);
    if !output.status.success() {
        bail!("git blame failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut shas = Vec::new();
    let mut expect_header = true;
    for line in text.lines() {
        if line.starts_with('\t') {
            expect_header = true;
        } else if expect_header {
            shas.push(line.split(' ').next().unwrap_or_default().to_owned());
            expect_header = false;
        }
    }
    Ok((elapsed, shas))
}

/// Per line, the abbreviated commit of a `file.blame` answer's ranges.
fn answer_commits(answer: &Value) -> Vec<String> {
    let mut commits = Vec::new();
    for range in answer["data"]["ranges"].as_array().into_iter().flatten() {
        let commit = range["commit"].as_str().unwrap_or_default();
        for _ in 0..range["lines"].as_u64().unwrap_or(1) {
            commits.push(commit.to_owned());
        }
    }
    commits
}

/// Measures git and the server on the fixture.
pub(crate) fn run(setup: &Setup) -> anyhow::Result<BlameRun> {
    let commits = Command::new("git")
        .args(["rev-list", "--count", "HEAD"])
        .current_dir(&setup.repo)
        .output()
        .context("git rev-list")?;
    let commits: usize = String::from_utf8_lossy(&commits.stdout).trim().parse().context("commit count")?;

    let (git_first_ms, git_shas) = git_blame(&setup.repo, setup.path)?;
    let mut git_ms = Vec::new();
    for _ in 0..setup.samples {
        git_ms.push(git_blame(&setup.repo, setup.path)?.0);
    }

    let run_dir = tempfile::tempdir()?;
    let env: Vec<(&str, OsString)> = vec![
        ("PATH", std::env::var_os("PATH").unwrap_or_default()),
        ("HOME", run_dir.path().as_os_str().to_owned()),
        ("FLUXGIT_MCP_ALLOWED_ROOTS", setup.allowed_roots.clone()),
        ("FLUXGIT_RUN_DIR", run_dir.path().as_os_str().to_owned()),
        ("FLUXGIT_MCP_AUDIT_DISABLED", OsString::from("1")),
        ("FLUXGIT_MCP_PRESENCE_DISABLED", OsString::from("1")),
    ];
    let mut session = Session::start(&setup.sidecar, &env)?;
    if session.tool("file.blame").is_none() {
        bail!("{} does not list file.blame", setup.sidecar.display());
    }
    session.call("repo.brief", &json!({"repoPath": setup.warmup_repo.to_str().context("UTF-8")?}))?;
    let arguments = json!({
        "repoPath": setup.repo.to_str().context("UTF-8")?,
        "path": setup.path,
        "maxTokens": 400_000,
    });
    let started = Instant::now();
    let answer = session.call("file.blame", &arguments)?;
    let cold_ms = millis(started);
    if answer.status() != "ok" {
        bail!("file.blame answered {}: {}", answer.status(), answer.text());
    }
    let started = Instant::now();
    let second = session.call("file.blame", &arguments)?;
    let second_ms = millis(started);
    if second.text() != answer.text() {
        bail!("the second call answered differently from the cold one");
    }
    let mut warm_ms = Vec::new();
    for _ in 0..setup.samples.max(1) {
        let started = Instant::now();
        let again = session.call("file.blame", &arguments)?;
        warm_ms.push(millis(started));
        if again.text() != answer.text() {
            bail!("a warm call answered differently from the cold one");
        }
    }
    let envelope: Value = serde_json::from_str(answer.text()).context("the answer is JSON")?;
    let ours = answer_commits(&envelope);
    let differing = ours.len().abs_diff(git_shas.len())
        + ours.iter().zip(&git_shas).filter(|(commit, sha)| !sha.starts_with(commit.as_str())).count();
    Ok(BlameRun {
        repository: setup.repo.display().to_string(),
        path: setup.path.to_owned(),
        commits,
        lines: git_shas.len(),
        git_first_ms,
        git_median_ms: median(&git_ms),
        git_ms,
        cold_ms,
        second_ms,
        warm_median_ms: median(&warm_ms),
        warm_ms,
        ranges: envelope["data"]["ranges"].as_array().map_or(0, Vec::len),
        answer_tokens: fluxgit_engine::budget::count_tokens(answer.text()),
        lines_differing_from_git: differing,
        cpu: Vec::new(),
        load_average: vec![load_average()],
    })
}

/// CPU seconds (user + sys), minor page faults and peak RSS of one process, as GNU time reports them.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Usage {
    pub(crate) cpu_seconds: f64,
    pub(crate) page_faults: u64,
    pub(crate) peak_rss_mb: f64,
}

/// The interleaved runs of git and ours on one pack layout of the fixture.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CpuRun {
    /// `fast-import` (the fixture as written) or `repacked` (after `git repack -adf`).
    pub(crate) layout: String,
    /// `git blame --line-porcelain HEAD -- path`, one entry per run.
    pub(crate) git: Vec<Usage>,
    /// `fluxgit-bench blame-probe`: one in-process `Engine::file_blame` call per process, one entry per run.
    pub(crate) ours: Vec<Usage>,
}

impl CpuRun {
    fn median_of(runs: &[Usage], field: fn(&Usage) -> f64) -> f64 {
        median(&runs.iter().map(field).collect::<Vec<_>>())
    }
}

/// Runs `program args` in `dir` under `/usr/bin/time` and returns what it used.
fn usage(program: &Path, args: &[&str], dir: &Path) -> anyhow::Result<Usage> {
    let report = tempfile::NamedTempFile::new()?;
    let output = Command::new("/usr/bin/time")
        .arg("-o")
        .arg(report.path())
        .args(["-f", "%U %S %R %M"])
        .arg(program)
        .args(args)
        .current_dir(dir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdout(Stdio::null())
        .output()
        .context("GNU time at /usr/bin/time runs")?;
    if !output.status.success() {
        bail!("{} {args:?} failed: {}", program.display(), String::from_utf8_lossy(&output.stderr));
    }
    let text = std::fs::read_to_string(report.path())?;
    let fields: Vec<f64> = text
        .lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(|| format!("GNU time's report {text:?}"))?;
    let [user, sys, faults, rss_kb] = fields[..] else { bail!("GNU time's report {text:?}") };
    Ok(Usage { cpu_seconds: user + sys, page_faults: faults as u64, peak_rss_mb: rss_kb / 1024.0 })
}

/// `samples` rounds, each a run of `git blame --line-porcelain` then one of the probe (`probe blame-probe --repo
/// REPO --path PATH`), on the fixture as it is laid out now.
pub(crate) fn cpu(probe: &Path, repo: &Path, path: &str, layout: &str, samples: usize) -> anyhow::Result<CpuRun> {
    let git = PathBuf::from("git");
    let repo_arg = repo.to_str().context("UTF-8 fixture path")?;
    let mut run = CpuRun { layout: layout.to_owned(), git: Vec::new(), ours: Vec::new() };
    for _ in 0..samples {
        run.git.push(usage(&git, &["blame", "--line-porcelain", "HEAD", "--", path], repo)?);
        run.ours.push(usage(probe, &["blame-probe", "--repo", repo_arg, "--path", path], repo)?);
    }
    Ok(run)
}

/// What `blame-probe` does: one `Engine::file_blame` of the whole of `path` at `HEAD` in this process (repository
/// opened, blame walk, commit names; no answer cache, no watcher, answers measured as fitting any budget, so no
/// token counting). Returns the number of lines blamed.
pub(crate) fn probe(repo: &Path, path: &str) -> anyhow::Result<usize> {
    let repo = repo.canonicalize()?;
    let root = repo.parent().context("the repository has a parent directory")?.to_path_buf();
    let engine = fluxgit_engine::Engine::with_cache(
        fluxgit_engine::Options { allowed_roots: vec![root] },
        fluxgit_engine::cache::Options { enabled: false, watch: false, ..Default::default() },
    );
    let handle = engine.resolve(repo.to_str().context("UTF-8 fixture path")?)?;
    let options = fluxgit_engine::file::blame::Options {
        file: fluxgit_engine::file::FileRange {
            path: path.to_owned(),
            rev: Some("HEAD".to_owned()),
            start_line: None,
            end_line: None,
        },
        ignore_revs: true,
    };
    let answer = engine.file_blame(&handle, &options, usize::MAX, &mut |_| 0)?;
    Ok(answer.data.ranges.iter().map(|range| range.lines).sum())
}

fn ratio(numerator: f64, denominator: f64) -> String {
    if denominator <= 0.0 { "-".to_owned() } else { format!("{:.2}", numerator / denominator) }
}

/// The Markdown section.
pub(crate) fn render(run: &BlameRun, invocation: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## Blame\n");
    let cpu_ratios: Vec<String> = run
        .cpu
        .iter()
        .map(|cpu| {
            let git = CpuRun::median_of(&cpu.git, |usage| usage.cpu_seconds);
            let ours = CpuRun::median_of(&cpu.ours, |usage| usage.cpu_seconds);
            format!("{}x ({} layout)", ratio(ours, git), cpu.layout)
        })
        .collect();
    let loads: Vec<String> = run.load_average.iter().map(|load| format!("{load:.1}")).collect();
    let _ = writeln!(
        out,
        "Ratios first: cold `file.blame` used {} the CPU seconds of `git blame --line-porcelain` (the target: <= \
         1.0x), and took {}x git's median wall time; warm calls took {:.2} ms, 1/{:.0} of git's median. The \
         1-minute load average on this 2-core machine during the run: {} (start, after the calls over stdio, after \
         each layout's CPU runs).\n",
        if cpu_ratios.is_empty() { "-".to_owned() } else { cpu_ratios.join(" and ") },
        ratio(run.cold_ms, run.git_median_ms),
        run.warm_median_ms,
        run.git_median_ms / run.warm_median_ms.max(f64::MIN_POSITIVE),
        loads.join(", ")
    );
    let _ = writeln!(
        out,
        "Generated by `{invocation}` (release build): `file.blame` of the whole of `{}` ({} lines) in the \
         blame-history fixture ({} commits; every 40th changes three lines of the file), over stdio, against `git \
         blame --line-porcelain HEAD -- {}`. Cold: the first call on the repository in a running server (token \
         tables and watcher up); second: the call right after it, computed again (the first call on a repository \
         holds its watch registration back, so its answer is not kept); warm: the median of {} calls after those, \
         answered from the answer cache. git: its \
         first run and the median of {} runs after it (the OS file cache is warm for both). Absolute times are this \
         machine's (2 cores). Raw numbers: `bench/results/blame/`.\n",
        run.path,
        run.lines,
        run.commits,
        run.path,
        run.warm_ms.len(),
        run.git_ms.len()
    );
    let _ = writeln!(out, "| measure | ms | / git median |");
    let _ = writeln!(out, "|---|---:|---:|");
    let _ = writeln!(out, "| `git blame --line-porcelain`, median | {:.1} | 1.00 |", run.git_median_ms);
    let _ = writeln!(
        out,
        "| `git blame --line-porcelain`, first run | {:.1} | {} |",
        run.git_first_ms,
        ratio(run.git_first_ms, run.git_median_ms)
    );
    let _ = writeln!(out, "| `file.blame` cold | {:.1} | {} |", run.cold_ms, ratio(run.cold_ms, run.git_median_ms));
    let _ = writeln!(
        out,
        "| `file.blame` second call (computed again) | {:.1} | {} |",
        run.second_ms,
        ratio(run.second_ms, run.git_median_ms)
    );
    let _ = writeln!(
        out,
        "| `file.blame` warm (answer cache), median | {:.2} | {} |",
        run.warm_median_ms,
        ratio(run.warm_median_ms, run.git_median_ms)
    );
    let _ = writeln!(
        out,
        "\nThe answer: {} ranges, {} o200k tokens; lines whose commit differs from git's: {}.\n",
        run.ranges, run.answer_tokens, run.lines_differing_from_git
    );
    if let Some(first) = run.cpu.first() {
        let _ = writeln!(
            out,
            "Wall times on this 2-core machine follow its load (other builds run beside the benchmark), so the target \
             (cold <= 1.0x git) is judged in CPU seconds: user + sys as GNU time reports them, medians of {} \
             interleaved runs (git, then ours, in turn) per pack layout of the same history. git: `git blame \
             --line-porcelain HEAD -- {}`; ours: `fluxgit-bench blame-probe`, a process making one in-process \
             `Engine::file_blame` call of the whole file at `HEAD` (repository opened, blame walk, commit names; no \
             answer cache, no watcher, no token counting). Page faults are minor faults.\n",
            first.git.len(),
            run.path
        );
        let _ = writeln!(
            out,
            "| pack layout | git CPU s | ours CPU s | ours / git | page faults git / ours | peak RSS MB git / ours |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
        for cpu in &run.cpu {
            let layout = match cpu.layout.as_str() {
                "fast-import" => "as `git fast-import` wrote it (the fixture)",
                "repacked" => "after `git repack -adf` (as a clone or gc lays it out)",
                other => other,
            };
            let git = CpuRun::median_of(&cpu.git, |usage| usage.cpu_seconds);
            let ours = CpuRun::median_of(&cpu.ours, |usage| usage.cpu_seconds);
            let _ = writeln!(
                out,
                "| {layout} | {git:.2} | {ours:.2} | {} | {:.0} / {:.0} | {:.0} / {:.0} |",
                ratio(ours, git),
                CpuRun::median_of(&cpu.git, |usage| usage.page_faults as f64),
                CpuRun::median_of(&cpu.ours, |usage| usage.page_faults as f64),
                CpuRun::median_of(&cpu.git, |usage| usage.peak_rss_mb),
                CpuRun::median_of(&cpu.ours, |usage| usage.peak_rss_mb),
            );
        }
        let _ = writeln!(out);
    }
    out
}

/// Writes the raw numbers into `dir/blame-history.json`.
pub(crate) fn write_results(dir: &Path, run: &BlameRun) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("blame-history.json"), serde_json::to_string_pretty(run)? + "\n")?;
    Ok(())
}

/// Replaces the `## Blame` section of `markdown` (up to the next `## ` heading or the end) with `section`, or
/// appends it.
pub(crate) fn splice(markdown: &str, section: &str) -> String {
    let Some(start) = markdown.find("\n## Blame\n").map(|idx| idx + 1) else {
        return format!("{}\n\n{section}", markdown.trim_end());
    };
    let rest = &markdown[start + 1..];
    let end = rest.find("\n## ").map_or(markdown.len(), |idx| start + 1 + idx + 1);
    format!("{}{section}{}", &markdown[..start], &markdown[end..])
}
