//! `fluxgit-bench latency`: per tool, the first call on a repository in a running server (cold) and the median of
//! the calls after it (warm), against the git CLI commands the tool replaces; process start to first answer; peak
//! RSS (`VmHWM` from `/proc/<pid>/status`). Raw numbers go to `bench/results/latency/`, a section of `BENCHMARK.md`
//! gives ratios first (absolute times are this machine's).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};
use serde::Serialize;
use serde_json::{Value, json};

use crate::mcp::Session;

/// One tool measured: its arguments besides `repoPath`, and the git commands it replaces (run in the repository).
struct ToolCase {
    tool: &'static str,
    arguments: fn() -> Value,
    git: &'static [&'static [&'static str]],
}

/// Warm calls of one tool stop once they took this long in all (at least one is made): the peer can take minutes
/// per call on a large repository.
const WARM_BUDGET: std::time::Duration = std::time::Duration::from_secs(30);

/// The tools measured, in `tools/list` order of importance.
const CASES: &[ToolCase] = &[
    ToolCase {
        tool: "repo.brief",
        arguments: || json!({}),
        git: &[
            &["status", "--porcelain=v2", "--branch"],
            &["log", "-n", "50", "--format=%h %s"],
            &["stash", "list"],
            &["submodule", "status"],
            &["for-each-ref", "--format=%(refname:short)", "refs/heads"],
            &["rev-parse", "--abbrev-ref", "origin/HEAD"],
        ],
    },
    ToolCase { tool: "repo.status", arguments: || json!({}), git: &[&["status", "--porcelain=v2", "--branch"]] },
    ToolCase {
        tool: "repo.refs",
        arguments: || json!({}),
        git: &[
            &["for-each-ref", "--format=%(refname) %(objectname) %(upstream:short) %(upstream:track)"],
            &["remote", "-v"],
            &["stash", "list"],
        ],
    },
    ToolCase { tool: "repo.history", arguments: || json!({}), git: &[&["log", "-n", "20", "--format=%H %an %aI %s"]] },
    ToolCase { tool: "repo.reflog", arguments: || json!({}), git: &[&["log", "-g", "-n", "20", "--format=%H %gs"]] },
    ToolCase {
        tool: "repo.branchStack",
        arguments: || json!({}),
        git: &[&["for-each-ref", "--format=%(refname:short) %(upstream:track)", "refs/heads", "refs/remotes"]],
    },
    ToolCase {
        tool: "worktree.changes",
        arguments: || json!({}),
        git: &[
            &["diff", "--numstat"],
            &["diff", "--cached", "--numstat"],
            &["ls-files", "--others", "--exclude-standard"],
        ],
    },
    ToolCase { tool: "worktree.list", arguments: || json!({}), git: &[&["worktree", "list", "--porcelain"]] },
    ToolCase { tool: "submodule.status", arguments: || json!({}), git: &[&["submodule", "status", "--recursive"]] },
    ToolCase {
        tool: "commit.details",
        arguments: || json!({"commit": "HEAD"}),
        git: &[&["show", "--numstat", "-M", "--format=%H%n%an%n%aI%n%B", "HEAD"]],
    },
];

/// What was measured on one repository.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RepoRun {
    pub(crate) label: String,
    pub(crate) path: String,
    /// Process start to the first `repo.brief` answer (spawn, initialize, tools/list, the call), milliseconds.
    pub(crate) start_to_first_answer_ms: f64,
    /// Peak resident set of the server after every tool ran (kB), when /proc tells it.
    pub(crate) peak_rss_kib: Option<u64>,
    pub(crate) tools: Vec<ToolRun>,
    /// The same tools on `--peer`, when given.
    pub(crate) peer: Option<Vec<ToolRun>>,
}

/// One tool on one repository.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolRun {
    pub(crate) tool: String,
    /// `ok`, `isError`, `rpcError` or `absent` (the server does not list the tool).
    pub(crate) status: String,
    pub(crate) cold_ms: f64,
    pub(crate) warm_median_ms: f64,
    pub(crate) warm_ms: Vec<f64>,
    /// The git commands, one line each.
    pub(crate) git_commands: Vec<String>,
    /// Median of running all of them one after the other, milliseconds.
    pub(crate) git_median_ms: f64,
}

/// Settings of a latency run.
pub(crate) struct Setup {
    pub(crate) sidecar: PathBuf,
    pub(crate) peer: Option<PathBuf>,
    pub(crate) samples: usize,
    /// Warm calls per tool on the peer (it can take minutes per call on a large repository).
    pub(crate) peer_samples: usize,
    /// A small repository the server reads first, so that the token tables and the watcher are up before the
    /// measured first call (the cold call measures the repository, not the process).
    pub(crate) warmup_repo: PathBuf,
    /// `FLUXGIT_MCP_ALLOWED_ROOTS` for the servers: every repository measured lies under one.
    pub(crate) allowed_roots: OsString,
}

pub(crate) fn env_for(allowed_roots: &std::ffi::OsStr, run_dir: &Path) -> Vec<(&'static str, OsString)> {
    vec![
        ("PATH", std::env::var_os("PATH").unwrap_or_default()),
        ("HOME", run_dir.as_os_str().to_owned()),
        ("FLUXGIT_MCP_ALLOWED_ROOTS", allowed_roots.to_owned()),
        ("FLUXGIT_RUN_DIR", run_dir.as_os_str().to_owned()),
        ("FLUXGIT_MCP_AUDIT_DISABLED", OsString::from("1")),
        ("FLUXGIT_MCP_PRESENCE_DISABLED", OsString::from("1")),
    ]
}

pub(crate) fn median(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

pub(crate) fn millis(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}

/// `VmHWM` of `pid` in kB.
pub(crate) fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn git_median(repo: &Path, commands: &[&[&str]], samples: usize) -> anyhow::Result<f64> {
    let mut times = Vec::new();
    for _ in 0..samples.max(1) {
        let started = Instant::now();
        for args in commands {
            // Exit status is not judged: `rev-parse origin/HEAD` fails where there is no origin, as it would for
            // an agent.
            Command::new("git")
                .args(*args)
                .current_dir(repo)
                .env("GIT_OPTIONAL_LOCKS", "0")
                .output()
                .with_context(|| format!("git {}", args.join(" ")))?;
        }
        times.push(millis(started));
    }
    Ok(median(&times))
}

/// Process start to the first `repo.brief` answer of `binary` on `repo` (spawn, initialize, tools/list, the call).
fn start_to_first_answer(binary: &Path, repo: &Path, setup: &Setup) -> anyhow::Result<f64> {
    let run_dir = tempfile::tempdir()?;
    let env = env_for(&setup.allowed_roots, run_dir.path());
    let started = Instant::now();
    let mut session = Session::start(binary, &env)?;
    session.call("repo.brief", &json!({"repoPath": repo.to_str().context("repository path is UTF-8")?}))?;
    Ok(millis(started))
}

/// Measures one tool on `repo` with `binary` in a server of its own, so that its first call is the first call on
/// this repository in that server: the cold call, then `samples` warm ones. Returns the run and the server's peak
/// RSS.
fn measure_tool(
    binary: &Path,
    repo: &Path,
    case: &ToolCase,
    setup: &Setup,
    samples: usize,
    git: &(Vec<String>, f64),
) -> anyhow::Result<(ToolRun, Option<u64>)> {
    let run_dir = tempfile::tempdir()?;
    let env = env_for(&setup.allowed_roots, run_dir.path());
    let repo_path = repo.to_str().context("repository path is UTF-8")?;
    let warmup = setup.warmup_repo.to_str().context("UTF-8")?;
    let mut session = Session::start(binary, &env)?;
    let mut run = ToolRun {
        tool: case.tool.to_owned(),
        status: "absent".to_owned(),
        cold_ms: 0.0,
        warm_median_ms: 0.0,
        warm_ms: Vec::new(),
        git_commands: git.0.clone(),
        git_median_ms: git.1,
    };
    if session.tool(case.tool).is_some() {
        session.call("repo.brief", &json!({"repoPath": warmup}))?;
        let mut arguments = (case.arguments)();
        arguments["repoPath"] = json!(repo_path);
        let started = Instant::now();
        let answer = session.call(case.tool, &arguments)?;
        run.cold_ms = millis(started);
        run.status = answer.status().to_owned();
        let sampling = Instant::now();
        for sample in 0..samples {
            if sample > 0 && sampling.elapsed() > WARM_BUDGET {
                break;
            }
            let started = Instant::now();
            session.call(case.tool, &arguments)?;
            run.warm_ms.push(millis(started));
        }
        run.warm_median_ms = median(&run.warm_ms);
    }
    Ok((run, peak_rss(session.pid())))
}

/// Measures `repo` (labelled `label`): per tool, the git commands, our server and, when set, the peer one after the
/// other (interleaved, so that the three see the same machine load).
pub(crate) fn run_repo(label: &str, repo: &Path, setup: &Setup) -> anyhow::Result<RepoRun> {
    let start_to_first = start_to_first_answer(&setup.sidecar, repo, setup)?;
    let mut tools = Vec::new();
    let mut peer_tools = setup.peer.as_ref().map(|_| Vec::new());
    let mut peak = None;
    for case in CASES {
        let commands: Vec<String> = case.git.iter().map(|args| format!("git {}", args.join(" "))).collect();
        let git = (commands, git_median(repo, case.git, setup.samples.min(10))?);
        eprintln!("fluxgit-bench:   {} ...", case.tool);
        let (run, rss) = measure_tool(&setup.sidecar, repo, case, setup, setup.samples, &git)?;
        peak = peak.max(rss);
        tools.push(run);
        if let (Some(peer), Some(peer_tools)) = (&setup.peer, peer_tools.as_mut()) {
            peer_tools.push(measure_tool(peer, repo, case, setup, setup.peer_samples, &git)?.0);
        }
    }
    Ok(RepoRun {
        label: label.to_owned(),
        path: repo.display().to_string(),
        start_to_first_answer_ms: start_to_first,
        peak_rss_kib: peak,
        tools,
        peer: peer_tools,
    })
}

/// Peak RSS of one server that has read every repository in `repos` once with `repo.brief` (the "many
/// repositories" figure), with the number read.
pub(crate) fn many_repos_rss(
    binary: &Path,
    repos: &[PathBuf],
    allowed_roots: &std::ffi::OsStr,
) -> anyhow::Result<(usize, u64)> {
    let run_dir = tempfile::tempdir()?;
    let env = env_for(allowed_roots, run_dir.path());
    let mut session = Session::start(binary, &env)?;
    for repo in repos {
        session.call("repo.brief", &json!({"repoPath": repo.to_str().context("UTF-8")?}))?;
    }
    let Some(peak) = peak_rss(session.pid()) else { bail!("no /proc/<pid>/status here") };
    Ok((repos.len(), peak))
}

/// Writes the raw numbers (`<label>.json` per repository) into `dir`.
pub(crate) fn write_results(dir: &Path, runs: &[RepoRun], many: Option<(usize, u64)>) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    for run in runs {
        let text = serde_json::to_string_pretty(run)?;
        std::fs::write(dir.join(format!("{}.json", run.label)), text + "\n")?;
    }
    if let Some((count, peak)) = many {
        let text = serde_json::to_string_pretty(&json!({"repositories": count, "peakRssKib": peak}))?;
        std::fs::write(dir.join("many-repositories.json"), text + "\n")?;
    }
    Ok(())
}

fn ratio(numerator: f64, denominator: f64) -> String {
    if denominator <= 0.0 { "-".to_owned() } else { format!("{:.2}", numerator / denominator) }
}

/// The Markdown section: ratios first, then absolute medians.
pub(crate) fn render(runs: &[RepoRun], many: Option<(usize, u64)>, invocation: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## Latency\n");
    let _ = writeln!(
        out,
        "Generated by `{invocation}` (release build). Cold: the first call of the tool on the repository in a running \
         server (token tables and watcher already up); warm: the median of the calls after it (up to `--samples`, fewer once they took 30 s in all; the count is in the raw numbers). git: the median of \
         running the commands the tool replaces. Ratios below 1 mean faster than git; absolute times are this \
         machine's (2 cores). Raw numbers: `bench/results/latency/`.\n"
    );
    for run in runs {
        let _ = writeln!(out, "### {}\n", run.label);
        let rss = run.peak_rss_kib.map_or_else(|| "-".to_owned(), |kib| format!("{:.1} MB", kib as f64 / 1024.0));
        let _ =
            writeln!(out, "Process start to first answer: {:.1} ms; peak RSS: {rss}.\n", run.start_to_first_answer_ms);
        let _ = writeln!(
            out,
            "| tool | warm / git | cold / git | warm / cold | warm ms | cold ms | git ms | git commands |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---|");
        for tool in &run.tools {
            if tool.status != "ok" {
                let _ = writeln!(out, "| `{}` | {} | | | | | | |", tool.tool, tool.status);
                continue;
            }
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {:.2} | {:.2} | {:.2} | `{}` |",
                tool.tool,
                ratio(tool.warm_median_ms, tool.git_median_ms),
                ratio(tool.cold_ms, tool.git_median_ms),
                ratio(tool.warm_median_ms, tool.cold_ms),
                tool.warm_median_ms,
                tool.cold_ms,
                tool.git_median_ms,
                tool.git_commands.join("`; `"),
            );
        }
        if let Some(peer) = &run.peer {
            let _ = writeln!(
                out,
                "\n| tool (vs peer) | warm: peer / ours | cold: peer / ours | peer warm ms | peer cold ms | peer status |"
            );
            let _ = writeln!(out, "|---|---:|---:|---:|---:|---|");
            for (ours, theirs) in run.tools.iter().zip(peer) {
                let measured = ours.status == "ok" && theirs.status == "ok";
                let (warm, cold) = if measured {
                    (ratio(theirs.warm_median_ms, ours.warm_median_ms), ratio(theirs.cold_ms, ours.cold_ms))
                } else {
                    ("-".to_owned(), "-".to_owned())
                };
                let _ = writeln!(
                    out,
                    "| `{}` | {warm} | {cold} | {:.2} | {:.2} | {} |",
                    ours.tool, theirs.warm_median_ms, theirs.cold_ms, theirs.status
                );
            }
        }
        out.push('\n');
    }
    if let Some((count, peak)) = many {
        let _ = writeln!(
            out,
            "Peak RSS of one server after a `repo.brief` of each of {count} repositories: {:.1} MB.\n",
            peak as f64 / 1024.0
        );
    }
    out
}

/// Replaces the latency section of `markdown` (from `## Latency` to the next `## ` heading or the end) with
/// `section`, or appends it.
pub(crate) fn splice(markdown: &str, section: &str) -> String {
    splice_named(markdown, "Latency", section)
}

/// Replaces the `## {heading}` section of `markdown` (up to the next `## ` heading) with `section`, or appends it.
pub(crate) fn splice_named(markdown: &str, heading: &str, section: &str) -> String {
    let Some(start) = markdown.find(&format!("\n## {heading}\n")).map(|idx| idx + 1) else {
        return format!("{}\n\n{section}", markdown.trim_end());
    };
    let rest = &markdown[start + 1..];
    let end = rest.find("\n## ").map_or(markdown.len(), |idx| start + 1 + idx + 1);
    format!("{}{section}{}", &markdown[..start], &markdown[end..])
}
