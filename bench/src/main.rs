//! `fluxgit-bench`: FluxGit's reproducible benchmarks (internal tool, not a library).
//!
//! `fluxgit-bench tokens` builds the deterministic fixtures, drives the real `fluxgit-mcp-sidecar` binary (and
//! optionally a peer MCP server) over stdio, runs the raw git CLI sweep the tools replace and a hand-tuned minimal
//! counterexample, judges every side against a fact checklist from the git oracle, counts tokens with
//! `o200k_base` and `cl100k_base`, and writes `bench/results/<scenario>/` (raw outputs, commands, `SHA256SUMS`)
//! and `BENCHMARK.md`.

mod audit_latency;
mod blame;
mod cli;
mod collisions;
mod definitions;
mod facts;
mod fleet;
mod index;
mod latency;
mod listing;
mod markdown;
mod mcp;
mod oracle;
mod provenance;
mod report;
mod run;
mod scenarios;
mod semantic;
mod startup;
mod sweep;
mod tasks;
mod watches;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context as _, bail};
use clap::Parser as _;
use provenance::{built_from, git_version, profile_args, utc_now, workspace_root};

/// FluxGit benchmarks.
#[derive(Debug, clap::Parser)]
#[command(name = "fluxgit-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Mode,
}

#[derive(Debug, clap::Subcommand)]
enum Mode {
    /// Token benchmark: tool answers vs the raw git sweep vs a hand-typed counterexample (vs a peer server).
    Tokens(TokensArgs),
    /// Prints the o200k_base token count of each file (`-` for stdin), one `COUNT FILE` line each.
    Count {
        /// Files to count.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Latency benchmark: per tool cold and warm medians vs the git commands it replaces, start-up, peak RSS.
    Latency(LatencyArgs),
    /// Start-up benchmark: process start to the first `repo.brief` (vs a peer, vs `worktree.list`) and peak RSS.
    Startup(StartupArgs),
    /// Fleet benchmark: fleet.radar and fleet.digest over N generated repositories, cold and warm, vs a peer.
    Fleet(FleetArgs),
    /// Blame benchmark: `file.blame` of a 1,000-line file in an 80,000-commit history, cold and warm, vs git blame.
    Blame(BlameArgs),
    /// Commit index benchmark: build time, size, one-commit updates, `repo.search` vs `git log`, deep
    /// `repo.history` pages and `repo.scope` cold/warm.
    Index(IndexArgs),
    /// Tool-definition benchmark: the tokens of `tools/list` (model-visible definitions, with output schemas, the
    /// whole result) of this build without and with a gateway, and of peer servers.
    Tools(ToolsArgs),
    /// Semantic diff benchmark: `diff.semantic` vs `diff.text` tokens and vs `git diff` time on real history.
    Semantic(SemanticArgs),
    /// Agent-task benchmark (issues 35, 52): nine everyday tasks on clones of ripgrep, tokio and git at pinned commits,
    /// the scripted path (brief, its first hint, one task call) vs the expert's git commands: facts, calls, tokens.
    Tasks(TasksArgs),
    /// Collision benchmark: repo.collisions over ten worktrees of a real clone vs git stash create + merge-tree.
    Collisions(collisions::Args),
    /// One in-process `file.blame` of a whole file at HEAD, for the blame benchmark's CPU measurement.
    #[command(hide = true)]
    BlameProbe {
        /// The repository.
        #[arg(long, value_name = "DIR")]
        repo: PathBuf,
        /// The file, relative to the repository's root.
        #[arg(long)]
        path: String,
    },
    /// Cold `diff.semantic` calls of one commit against its first parent, each on a new engine: for profiling
    /// (`valgrind --tool=callgrind`) one commit of the semantic benchmark.
    #[command(hide = true)]
    SemanticProbe {
        /// The repository.
        #[arg(long, value_name = "DIR")]
        repo: PathBuf,
        /// The commit.
        #[arg(long)]
        commit: String,
        /// How many cold calls.
        #[arg(long, default_value_t = 1)]
        runs: usize,
    },
    /// Writes 1 MiB to FILE and `fdatasync`s it, forever: the busy neighbour of `latency --audit`.
    #[command(hide = true)]
    SyncWriter {
        /// The file to write (created or truncated).
        file: PathBuf,
    },
}

#[derive(Debug, clap::Args)]
struct TasksArgs {
    /// A source repository as `NAME=DIR` (`ripgrep`, `tokio`, `git`): a clone or a bare mirror that holds the pinned
    /// commit; repeatable. Default: `<mirrors>/<owner>+<name>/repo`.
    #[arg(long = "repo-dir", value_name = "NAME=DIR")]
    repo_dirs: Vec<String>,
    /// Where the mirrors are (`BurntSushi+ripgrep/repo`, `tokio-rs+tokio/repo`, `git+git/repo`), for the sources
    /// no `--repo-dir` names.
    #[arg(long, value_name = "DIR", default_value = "/work/.mirror")]
    mirrors: PathBuf,
    /// Run only this task (repeatable). Default: all nine.
    #[arg(long = "task", value_name = "NAME")]
    tasks: Vec<String>,
    /// Where the pinned copies, the task checkouts and the servers' private home and run dirs go.
    #[arg(long, value_name = "DIR", default_value = "/tmp/fluxgit-bench-tasks")]
    work_dir: PathBuf,
    /// Where raw results go. Default: bench/results/tasks in this workspace (with --check: under the work dir).
    #[arg(long, value_name = "DIR")]
    results_dir: Option<PathBuf>,
    /// The Markdown report whose `## Agent tasks` section is replaced. Default: BENCHMARK.md in this workspace
    /// (with --check: none is written).
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// The sidecar binary. Default: build it with cargo and use the one beside this binary.
    #[arg(long, value_name = "BINARY")]
    sidecar: Option<PathBuf>,
    /// Self-check in seconds, without clones: two tasks on a small repository built by git commands; fails when
    /// the expert's commands miss a fact (the oracle and the matcher disagree) or a call fails.
    #[arg(long)]
    check: bool,
}

#[derive(Debug, clap::Args)]
struct StartupArgs {
    /// Fixtures to measure (bench scenario names). Default: clean-small.
    #[arg(long = "scenario", value_name = "NAME")]
    scenarios: Vec<String>,
    /// A repository of your own to measure too (repeatable), e.g. a clone of tokio; it is only read.
    #[arg(long = "repo", value_name = "PATH")]
    repos: Vec<PathBuf>,
    /// Where fixtures are built, one directory per scenario (rebuilt every run).
    #[arg(long, value_name = "DIR", default_value = "/tmp/fluxgit-bench-startup")]
    fixtures_dir: PathBuf,
    /// Rounds per repository, each a new server for every measure (medians and ranges are reported).
    #[arg(long, default_value_t = 10)]
    samples: usize,
    /// Also report the peak RSS of one server after reading this many copies of clean-small (0: skip).
    #[arg(long, default_value_t = 0)]
    many: usize,
    /// Where raw numbers go. Default: bench/results/startup in this workspace.
    #[arg(long, value_name = "DIR")]
    results_dir: Option<PathBuf>,
    /// The Markdown report whose `## Start-up` section is replaced. Default: BENCHMARK.md in this workspace.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// The sidecar binary (use a release build). Default: build it with cargo and use the one beside this binary.
    #[arg(long, value_name = "BINARY")]
    sidecar: Option<PathBuf>,
    /// Another MCP server measured on the same repositories, e.g. the published fluxgit-mcp-sidecar 0.2.1.
    #[arg(long, value_name = "BINARY")]
    peer: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct FleetArgs {
    /// Repositories in the generated fleet (1-500).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u16).range(1..=500))]
    repos: u16,
    /// Where the fleet is built (emptied first).
    #[arg(long, value_name = "DIR", default_value = "/tmp/fluxgit-bench-fleet")]
    fixtures_dir: PathBuf,
    /// Warm calls per tool (their median is reported).
    #[arg(long, default_value_t = 20)]
    samples: usize,
    /// Warm calls per tool on the peer.
    #[arg(long, default_value_t = 2)]
    peer_samples: usize,
    /// Where raw numbers go. Default: bench/results/fleet in this workspace.
    #[arg(long, value_name = "DIR")]
    results_dir: Option<PathBuf>,
    /// The Markdown report whose `## Fleet` (`## Fleet of <N> repositories`) section is replaced. Default:
    /// BENCHMARK.md in this workspace.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// The sidecar binary (use a release build). Default: build it with cargo and use the one beside this binary.
    #[arg(long, value_name = "BINARY")]
    sidecar: Option<PathBuf>,
    /// Another MCP server measured on the same fleet, e.g. the published fluxgit-mcp-sidecar.
    #[arg(long, value_name = "BINARY")]
    peer: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct ToolsArgs {
    /// The sidecar binary. Default: build it with cargo and use the one beside this binary.
    #[arg(long, value_name = "BINARY")]
    sidecar: Option<PathBuf>,
    /// A peer measured as it starts, as `LABEL=EXECUTABLE` (a wrapper script for a server that needs arguments);
    /// repeatable.
    #[arg(long, value_name = "LABEL=EXECUTABLE")]
    peer: Vec<String>,
    /// Where raw numbers go. Default: bench/results/tools in this workspace.
    #[arg(long, value_name = "DIR")]
    results_dir: Option<PathBuf>,
    /// The Markdown report whose `## Tool definitions` section is replaced. Default: BENCHMARK.md in this
    /// workspace.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct SemanticArgs {
    /// Non-merge commits per repository, newest first.
    #[arg(long, default_value_t = 200)]
    commits: usize,
    /// Where the mirrored repositories are (`<owner>+<name>/repo`); those absent are skipped.
    #[arg(long, value_name = "DIR", default_value = "/work/.mirror")]
    mirrors: PathBuf,
    /// Only the repositories whose name contains this (case-insensitive), e.g. `got`; repeatable. Default: all.
    #[arg(long, value_name = "NAME")]
    only: Vec<String>,
    /// The Markdown report whose `## Semantic diff` section is replaced. Default: BENCHMARK.md in this workspace.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Where raw numbers go (one JSON file per repository). Default: bench/results/semantic in this workspace.
    #[arg(long, value_name = "DIR")]
    results_dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct BlameArgs {
    /// Where the blame-history fixture is built (rebuilt every run; about a minute).
    #[arg(long, value_name = "DIR", default_value = "/tmp/fluxgit-bench-blame")]
    fixtures_dir: PathBuf,
    /// Warm calls and git runs after the first (their medians are reported).
    #[arg(long, default_value_t = 5)]
    samples: usize,
    /// Where raw numbers go. Default: bench/results/blame in this workspace.
    #[arg(long, value_name = "DIR")]
    results_dir: Option<PathBuf>,
    /// The Markdown report whose `## Blame` section is replaced. Default: BENCHMARK.md in this workspace.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// The sidecar binary (use a release build). Default: build it with cargo and use the one beside this binary.
    #[arg(long, value_name = "BINARY")]
    sidecar: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct IndexArgs {
    /// The fixture: `big-history` (50,000 commits, 501 branches) or `blame-history` (80,000 commits).
    #[arg(long, value_name = "NAME", default_value = "big-history")]
    scenario: String,
    /// Where the fixture is built (rebuilt every run).
    #[arg(long, value_name = "DIR", default_value = "/tmp/fluxgit-bench-index")]
    fixtures_dir: PathBuf,
    /// Warm calls per query (their median is reported).
    #[arg(long, default_value_t = 20)]
    samples: usize,
    /// Where raw numbers go. Default: bench/results/index in this workspace.
    #[arg(long, value_name = "DIR")]
    results_dir: Option<PathBuf>,
    /// The Markdown report whose `## Index` (`## Index on 80,000 commits`) section is replaced. Default: BENCHMARK.md in this workspace.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct LatencyArgs {
    /// Fixtures to measure (bench scenario names). Default: clean-small and big-history.
    #[arg(long = "scenario", value_name = "NAME")]
    scenarios: Vec<String>,
    /// A repository of your own to measure too (repeatable); it is only read.
    #[arg(long = "repo", value_name = "PATH")]
    repos: Vec<PathBuf>,
    /// Where fixtures are built, one directory per scenario (rebuilt every run).
    #[arg(long, value_name = "DIR", default_value = "/tmp/fluxgit-bench-latency")]
    fixtures_dir: PathBuf,
    /// Warm calls per tool (their median is reported).
    #[arg(long, default_value_t = 20)]
    samples: usize,
    /// Cold measures per tool and server, each in a new server on a new run dir (after the same warm-up on another
    /// repository and token-table wait), interleaved with runs of git's commands: the median and range are
    /// reported, every sample is kept in the raw numbers.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1000))]
    cold_samples: u16,
    /// Also report the peak RSS of one server after reading this many copies of clean-small (0: skip).
    #[arg(long, default_value_t = 0)]
    many: usize,
    /// Also sweep this many copies of clean-small with one in-process engine, checking the cache's weight bound
    /// after each (once with the default bound, once with a 1 MiB bound that must evict; 0: skip).
    #[arg(long, default_value_t = 0)]
    sweep: usize,
    /// Where raw numbers go. Default: bench/results/latency in this workspace.
    #[arg(long, value_name = "DIR")]
    results_dir: Option<PathBuf>,
    /// The Markdown report whose generated latency block (between `<!-- latency:generated -->` and
    /// `<!-- /latency:generated -->`) is rewritten; the rest is kept. Default: BENCHMARK.md in this workspace.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// The sidecar binary (use a release build). Default: build it with cargo and use the one beside this binary.
    #[arg(long, value_name = "BINARY")]
    sidecar: Option<PathBuf>,
    /// Another MCP server measured on the same repositories, e.g. the published fluxgit-mcp-sidecar.
    #[arg(long, value_name = "BINARY")]
    peer: Option<PathBuf>,
    /// Warm calls per tool on the peer. Default: as many as `--samples`.
    #[arg(long)]
    peer_samples: Option<usize>,
    /// Warm calls (and git runs) of one tool stop once they took this many seconds in all.
    #[arg(long, default_value_t = 10)]
    warm_budget_secs: u64,
    /// A call without an answer after this many seconds kills its server; the tool is recorded as `timeout`.
    #[arg(long, default_value_t = 120)]
    call_timeout_secs: u64,
    /// Also measure each tool's first call in a second server started on the first one's run dir (what it saved,
    /// e.g. generation tables, is loaded; nothing is in memory).
    #[arg(long)]
    second_start: bool,
    /// Measure only this tool (repeatable). Default: every tool.
    #[arg(long = "tool", value_name = "NAME")]
    tools: Vec<String>,
    /// After its cold call, a server gets this many seconds to watch every directory of the repository before its
    /// warm calls start anyway (each warm sample records whether the watches were in place).
    #[arg(long, default_value_t = 60)]
    watch_wait_secs: u64,
    /// Measure instead what the audit ledger costs a warm `repo.brief`: the audit off, on (unsigned) and on (signed),
    /// quiet and beside a process that writes and syncs 1 MiB at a time; writes BENCHMARK.md's `## Audit latency`.
    /// Uses the first scenario (default clean-small) or `--repo`.
    #[arg(long)]
    audit: bool,
    /// Warm calls per server and phase with `--audit`.
    #[arg(long, default_value_t = 200)]
    audit_calls: usize,
}

#[derive(Debug, clap::Args)]
struct TokensArgs {
    /// Run only this scenario (repeatable). Default: every scenario but big-history.
    #[arg(long = "scenario", value_name = "NAME")]
    scenarios: Vec<String>,
    /// Run every scenario, big-history (100,000 files, 50,000 commits; about a minute to build) included.
    #[arg(long, conflicts_with = "scenarios")]
    all: bool,
    /// Where fixtures are built, one directory per scenario (rebuilt every run).
    #[arg(long, value_name = "DIR", default_value = "/tmp/fluxgit-bench")]
    fixtures_dir: PathBuf,
    /// Where results go. Default: bench/results in this workspace.
    #[arg(long, value_name = "DIR")]
    results_dir: Option<PathBuf>,
    /// The Markdown report to write. Default: BENCHMARK.md in this workspace.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// The sidecar binary. Default: build it with cargo and use the one beside this binary.
    #[arg(long, value_name = "BINARY")]
    sidecar: Option<PathBuf>,
    /// Another MCP server to run the same tool calls against, e.g. the published fluxgit-mcp-sidecar.
    #[arg(long, value_name = "BINARY", conflicts_with = "peer_recorded")]
    peer: Option<PathBuf>,
    /// Instead of running a peer: its answers recorded by an earlier run (a copy of its results directory, with
    /// `<scenario>/peer/` and `tokens.json`), replayed when the scenario's fixtures are at the same path.
    #[arg(long, value_name = "DIR")]
    peer_recorded: Option<PathBuf>,
    /// The sidecar as it was before the compact shapes (commit 96f0a1f), for the per-tool table's "before" column.
    #[arg(long, value_name = "BINARY", conflicts_with = "baseline_recorded")]
    baseline: Option<PathBuf>,
    /// Instead of running the baseline: its per-tool answers recorded by an earlier run (a copy of its results
    /// directory, with `<scenario>/per-tool/baseline/`), replayed when the fixtures are at the same path.
    #[arg(long, value_name = "DIR")]
    baseline_recorded: Option<PathBuf>,
    /// Also run `repo.brief` on this existing repository (repeatable), e.g. `.` for the project's own checkout:
    /// ours, the peer and the counterexample on the same checklist, in a section of its own.
    #[arg(long = "repo", value_name = "DIR")]
    repos: Vec<PathBuf>,
}

fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Mode::Tokens(args) => tokens(&args),
        Mode::Latency(args) => latency(&args),
        Mode::Startup(args) => startup_bench(&args),
        Mode::Fleet(args) => fleet_bench(&args),
        Mode::Blame(args) => blame(&args),
        Mode::Index(args) => index_bench(&args),
        Mode::Semantic(args) => semantic_bench(&args),
        Mode::Count { files } => count(&files),
        Mode::Tools(args) => tools(&args),
        Mode::Tasks(args) => tasks_bench(&args),
        Mode::Collisions(args) => collisions::bench(&args),
        Mode::BlameProbe { repo, path } => {
            blame::probe(&repo, &path).map(|lines| println!("{lines} lines blamed in {}", repo.display()))
        }
        Mode::SemanticProbe { repo, commit, runs } => semantic::probe(&repo, &commit, runs)
            .map(|ms| println!("median cold diff.semantic of {commit}: {ms:.2} ms over {runs} runs")),
        Mode::SyncWriter { file } => audit_latency::sync_writer(&file),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fluxgit-bench: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The fixtures and repositories a startup or latency run measures, and the sidecar it runs.
struct Targets {
    /// The canonical fixtures directory.
    fixtures_dir: PathBuf,
    /// The sidecar binary: `--sidecar`, or the one built from this workspace.
    sidecar: PathBuf,
    /// (label, repository) pairs: the scenarios built afresh under the fixtures directory, then each `--repo`.
    targets: Vec<(String, PathBuf)>,
    /// The allowed roots: the fixtures directory and each `--repo`.
    roots: Vec<PathBuf>,
}

/// Builds the scenarios `names` afresh under `fixtures_dir` and adds `repos`, for [`startup_bench`] and [`latency`].
fn targets(
    fixtures_dir: &Path,
    names: &[String],
    repos: &[PathBuf],
    sidecar: Option<&PathBuf>,
) -> anyhow::Result<Targets> {
    std::fs::create_dir_all(fixtures_dir)?;
    let fixtures_dir = std::fs::canonicalize(fixtures_dir)?;
    let sidecar = match sidecar {
        Some(sidecar) => sidecar.clone(),
        None => built_sidecar()?,
    };
    let mut targets = Vec::new();
    for name in names {
        let scenario = scenarios::by_name(name)
            .with_context(|| format!("unknown scenario {name:?}; known: {}", scenarios::names()))?;
        eprintln!("fluxgit-bench: building {name} ...");
        let dir = fixtures_dir.join(name);
        let _ = std::fs::remove_dir_all(&dir);
        let fixture = fluxgit_fixtures::build_in(scenario.fixture, &dir);
        targets.push((name.clone(), fixture.path().to_path_buf()));
    }
    let mut roots = vec![fixtures_dir.clone()];
    for repo in repos {
        let repo = std::fs::canonicalize(repo).with_context(|| format!("--repo {}", repo.display()))?;
        let label = repo.file_name().map_or_else(|| "repo".to_owned(), |name| name.to_string_lossy().into_owned());
        roots.push(repo.clone());
        targets.push((label, repo));
    }
    Ok(Targets { fixtures_dir, sidecar, targets, roots })
}

fn startup_bench(args: &StartupArgs) -> anyhow::Result<()> {
    let names = if args.scenarios.is_empty() { vec!["clean-small".to_owned()] } else { args.scenarios.clone() };
    let Targets { fixtures_dir, sidecar, targets, roots } =
        targets(&args.fixtures_dir, &names, &args.repos, args.sidecar.as_ref())?;
    let setup = startup::Setup {
        sidecar: sidecar.clone(),
        peer: args.peer.clone(),
        samples: args.samples.max(1),
        allowed_roots: std::env::join_paths(&roots).context("allowed roots")?,
    };
    let results_dir = args.results_dir.clone().unwrap_or_else(|| workspace_root().join("bench/results/startup"));
    let started = utc_now();
    let mut runs = Vec::new();
    for (label, path) in &targets {
        eprintln!("fluxgit-bench: start-up on {label} ...");
        let run = startup::run_repo(label, path, &setup)?;
        latency::write_json(&results_dir, &format!("{label}.json"), &run)?;
        runs.push(run);
    }
    let many = if args.many > 0 {
        let source = fixtures_dir.join("many-source");
        let _ = std::fs::remove_dir_all(&source);
        let clean = fluxgit_fixtures::build_in(fluxgit_fixtures::Scenario::Clean, &source);
        let many_dir = fixtures_dir.join("many");
        let repos = copies(clean.path(), &many_dir, args.many)?;
        eprintln!("fluxgit-bench: one server reading {} repositories ...", repos.len());
        let (count, peak) = latency::many_repos_rss(&sidecar, &repos, &setup.allowed_roots)?;
        latency::write_json(
            &results_dir,
            "many-repositories.json",
            &serde_json::json!({"repositories": count, "peakRssKib": peak}),
        )?;
        let _ = std::fs::remove_dir_all(&many_dir);
        Some((count, peak))
    } else {
        None
    };
    let mut invocation = String::from("cargo run --release -q -p fluxgit-bench -- startup");
    for name in &args.scenarios {
        invocation.push_str(&format!(" --scenario {name}"));
    }
    for (label, _) in targets.iter().skip(names.len()) {
        invocation.push_str(&format!(" --repo <{label}>"));
    }
    invocation.push_str(&format!(" --samples {}", setup.samples));
    if args.many > 0 {
        invocation.push_str(&format!(" --many {}", args.many));
    }
    if args.peer.is_some() {
        invocation.push_str(" --peer <published fluxgit-mcp-sidecar 0.2.1>");
    }
    let section = startup::render(&runs, many, &invocation, &format!("{started} on {}", built_from()));
    let markdown_path = args.markdown.clone().unwrap_or_else(|| workspace_root().join("BENCHMARK.md"));
    let existing = std::fs::read_to_string(&markdown_path).unwrap_or_default();
    std::fs::write(&markdown_path, latency::splice_named(&existing, startup::SECTION, &section))
        .with_context(|| format!("cannot write {}", markdown_path.display()))?;
    eprintln!("fluxgit-bench: wrote {} and {}", markdown_path.display(), results_dir.display());
    Ok(())
}

fn fleet_bench(args: &FleetArgs) -> anyhow::Result<()> {
    let sidecar = match &args.sidecar {
        Some(sidecar) => sidecar.clone(),
        None => built_sidecar()?,
    };
    let setup = fleet::Setup {
        sidecar,
        peer: args.peer.clone(),
        samples: args.samples.max(1),
        peer_samples: args.peer_samples.max(1),
    };
    let run = fleet::run(&args.fixtures_dir, usize::from(args.repos), &setup)?;
    let results_dir = args.results_dir.clone().unwrap_or_else(|| workspace_root().join("bench/results/fleet"));
    fleet::write_results(&results_dir, &run)?;
    let markdown_path = args.markdown.clone().unwrap_or_else(|| workspace_root().join("BENCHMARK.md"));
    let existing = std::fs::read_to_string(&markdown_path).unwrap_or_default();
    let mut invocation = format!("cargo run --release -q -p fluxgit-bench -- fleet --repos {}", args.repos);
    if args.peer.is_some() {
        invocation.push_str(" --peer <published fluxgit-mcp-sidecar 0.2.1>");
    }
    let section = fleet::render(&run, &invocation);
    std::fs::write(&markdown_path, latency::splice_named(&existing, &fleet::section(&run), &section))
        .with_context(|| format!("cannot write {}", markdown_path.display()))?;
    eprintln!("fluxgit-bench: wrote {} and {}", markdown_path.display(), results_dir.display());
    Ok(())
}

fn index_bench(args: &IndexArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.fixtures_dir)?;
    let fixtures_dir = std::fs::canonicalize(&args.fixtures_dir)?;
    let scenario = match args.scenario.as_str() {
        "big-history" => fluxgit_fixtures::Scenario::BigHistory,
        "blame-history" => fluxgit_fixtures::Scenario::BlameHistory,
        other => bail!("unknown scenario {other:?}: big-history or blame-history"),
    };
    let run = index::run(&fixtures_dir, args.samples, scenario)?;
    let results_dir = args.results_dir.clone().unwrap_or_else(|| workspace_root().join("bench/results/index"));
    let numbers = index::write_results(&results_dir, &run)?;
    let markdown_path = args.markdown.clone().unwrap_or_else(|| workspace_root().join("BENCHMARK.md"));
    let existing = std::fs::read_to_string(&markdown_path).unwrap_or_default();
    let invocation = format!("cargo run --release -q -p fluxgit-bench -- index --scenario {}", args.scenario);
    let section = index::render(&run, &invocation);
    std::fs::write(&markdown_path, latency::splice_named(&existing, index::section(&run), &section))
        .with_context(|| format!("cannot write {}", markdown_path.display()))?;
    eprintln!("fluxgit-bench: wrote {} and {}", markdown_path.display(), numbers.display());
    Ok(())
}

fn latency(args: &LatencyArgs) -> anyhow::Result<()> {
    if args.audit {
        return audit_latency(args);
    }
    let names: Vec<String> = if args.scenarios.is_empty() {
        vec!["clean-small".to_owned(), "big-history".to_owned()]
    } else {
        args.scenarios.clone()
    };
    let Targets { fixtures_dir, sidecar, targets, roots } =
        targets(&args.fixtures_dir, &names, &args.repos, args.sidecar.as_ref())?;
    let warmup_dir = fixtures_dir.join("latency-warmup");
    let _ = std::fs::remove_dir_all(&warmup_dir);
    let warmup = fluxgit_fixtures::build_in(fluxgit_fixtures::Scenario::Clean, &warmup_dir);
    let results_dir = args.results_dir.clone().unwrap_or_else(|| workspace_root().join("bench/results/latency"));
    let setup = latency::Setup {
        sidecar: sidecar.clone(),
        peer: args.peer.clone(),
        samples: args.samples.max(1),
        cold_samples: usize::from(args.cold_samples),
        peer_samples: args.peer_samples.unwrap_or(args.samples).max(1),
        warmup_repo: warmup.path().to_path_buf(),
        allowed_roots: std::env::join_paths(&roots).context("allowed roots")?,
        warm_budget: std::time::Duration::from_secs(args.warm_budget_secs),
        call_timeout: std::time::Duration::from_secs(args.call_timeout_secs.max(1)),
        results_dir: results_dir.clone(),
        second_start: args.second_start,
        tools: args.tools.clone(),
        watch_wait: std::time::Duration::from_secs(args.watch_wait_secs),
    };
    let markdown_path = args.markdown.clone().unwrap_or_else(|| workspace_root().join("BENCHMARK.md"));
    let invocation = latency_invocation(args, &names, &targets);
    let started = utc_now();
    // The block is rewritten after each repository and at the end, so that a run cut short leaves its numbers.
    let write_section = |runs: &[latency::RepoRun], extras: &latency::Extras<'_>| -> anyhow::Result<()> {
        let existing = std::fs::read_to_string(&markdown_path).unwrap_or_default();
        let block = latency::render(runs, extras, &invocation, &started);
        let spliced = latency::splice(&existing, &block).with_context(|| format!("{}", markdown_path.display()))?;
        std::fs::write(&markdown_path, spliced).with_context(|| format!("cannot write {}", markdown_path.display()))
    };
    let mut runs = Vec::new();
    for (label, path) in &targets {
        eprintln!("fluxgit-bench: latency on {label} ...");
        runs.push(latency::run_repo(label, path, &setup)?);
        write_section(&runs, &latency::Extras { many: None, sweeps: &[], finished: false })?;
    }
    let many = if args.many > 0 {
        let many_dir = fixtures_dir.join("many");
        let repos = copies(warmup.path(), &many_dir, args.many)?;
        eprintln!("fluxgit-bench: one server reading {} repositories ...", repos.len());
        let (count, peak) = latency::many_repos_rss(&sidecar, &repos, &setup.allowed_roots)?;
        latency::write_json(
            &results_dir,
            "many-repositories.json",
            &serde_json::json!({"repositories": count, "peakRssKib": peak}),
        )?;
        let _ = std::fs::remove_dir_all(&many_dir);
        Some((count, peak))
    } else {
        None
    };
    let mut sweeps = Vec::new();
    if args.sweep > 0 {
        let sweep_dir = fixtures_dir.join("sweep");
        let repos = copies(warmup.path(), &sweep_dir, args.sweep)?;
        for bound in [fluxgit_engine::cache::DEFAULT_CAPACITY_BYTES, 1024 * 1024] {
            eprintln!("fluxgit-bench: sweeping {} repositories, bound {bound} bytes ...", repos.len());
            sweeps.push(sweep::sweep(&repos, vec![sweep_dir.clone()], bound)?);
            latency::write_json(&results_dir, "sweep.json", &sweeps)?;
        }
        let _ = std::fs::remove_dir_all(&sweep_dir);
    }
    write_section(&runs, &latency::Extras { many, sweeps: &sweeps, finished: true })?;
    eprintln!("fluxgit-bench: wrote {} and {}", markdown_path.display(), results_dir.display());
    Ok(())
}

/// `latency --audit`: see [`audit_latency`].
fn audit_latency(args: &LatencyArgs) -> anyhow::Result<()> {
    let names: Vec<String> = match (args.scenarios.first(), args.repos.is_empty()) {
        (Some(name), _) => vec![name.clone()],
        (None, true) => vec!["clean-small".to_owned()],
        (None, false) => Vec::new(),
    };
    let Targets { fixtures_dir, sidecar, targets, roots } =
        targets(&args.fixtures_dir, &names, &args.repos, args.sidecar.as_ref())?;
    let (label, repo) = targets.first().context("no repository to measure")?;
    let allowed_roots = std::env::join_paths(&roots).context("allowed roots")?;
    let run = audit_latency::run(&sidecar, repo, &allowed_roots, &fixtures_dir.join("audit"), args.audit_calls.max(1))?;
    let results_dir = args.results_dir.clone().unwrap_or_else(|| workspace_root().join("bench/results/latency"));
    latency::write_json(&results_dir, "audit.json", &run)?;
    let profile = if sidecar.components().any(|part| part.as_os_str() == "release") { "release" } else { "debug" };
    let mut invocation = format!("cargo run -q -p fluxgit-bench -- latency --audit --audit-calls {}", run.calls);
    if args.sidecar.is_some() {
        invocation.push_str(&format!(" --sidecar target/{profile}/fluxgit-mcp-sidecar"));
    }
    for name in &args.scenarios {
        invocation.push_str(&format!(" --scenario {name}"));
    }
    let built = format!("a {profile} build of {}", built_from());
    let section = audit_latency::render(&run, label, &invocation, &utc_now(), &built);
    let markdown_path = args.markdown.clone().unwrap_or_else(|| workspace_root().join("BENCHMARK.md"));
    let existing = std::fs::read_to_string(&markdown_path).unwrap_or_default();
    std::fs::write(&markdown_path, latency::splice_named(&existing, audit_latency::SECTION, &section))
        .with_context(|| format!("cannot write {}", markdown_path.display()))?;
    print!("{section}");
    Ok(())
}

/// `count` copies of the repository at `source` under `dir` (emptied first): `dir/r0`, `dir/r1`, ...
fn copies(source: &Path, dir: &Path, count: usize) -> anyhow::Result<Vec<PathBuf>> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let mut repos = Vec::new();
    for idx in 0..count {
        let copy = dir.join(format!("r{idx}"));
        let status = Command::new("cp").arg("-a").arg(source).arg(&copy).status()?;
        if !status.success() {
            bail!("cannot copy the warm-up repository");
        }
        repos.push(copy);
    }
    Ok(repos)
}

/// How the latency run is reproduced, as the section says (own repositories by label).
fn latency_invocation(args: &LatencyArgs, names: &[String], targets: &[(String, PathBuf)]) -> String {
    let mut invocation = String::from("cargo run --release -q -p fluxgit-bench -- latency");
    for name in &args.scenarios {
        invocation.push_str(&format!(" --scenario {name}"));
    }
    for (label, _) in targets.iter().skip(names.len()) {
        invocation.push_str(&format!(" --repo <{label}>"));
    }
    if args.samples != 20 {
        invocation.push_str(&format!(" --samples {}", args.samples));
    }
    if args.cold_samples != 1 {
        invocation.push_str(&format!(" --cold-samples {}", args.cold_samples));
    }
    if args.many > 0 {
        invocation.push_str(&format!(" --many {}", args.many));
    }
    if args.sweep > 0 {
        invocation.push_str(&format!(" --sweep {}", args.sweep));
    }
    if args.peer.is_some() {
        invocation.push_str(" --peer <published fluxgit-mcp-sidecar 0.2.1>");
        if let Some(samples) = args.peer_samples {
            invocation.push_str(&format!(" --peer-samples {samples}"));
        }
    }
    if args.warm_budget_secs != 10 {
        invocation.push_str(&format!(" --warm-budget-secs {}", args.warm_budget_secs));
    }
    if args.call_timeout_secs != 120 {
        invocation.push_str(&format!(" --call-timeout-secs {}", args.call_timeout_secs));
    }
    if args.watch_wait_secs != 60 {
        invocation.push_str(&format!(" --watch-wait-secs {}", args.watch_wait_secs));
    }
    for tool in &args.tools {
        invocation.push_str(&format!(" --tool {tool}"));
    }
    if args.second_start {
        invocation.push_str(" --second-start");
    }
    invocation
}

fn semantic_bench(args: &SemanticArgs) -> anyhow::Result<()> {
    let started = utc_now();
    let built_from = built_from();
    let results_dir = args.results_dir.clone().unwrap_or_else(|| workspace_root().join("bench/results/semantic"));
    let mut runs = Vec::new();
    for (name, repo) in semantic::repositories(&workspace_root(), &args.mirrors) {
        let lower = name.to_lowercase();
        if !args.only.is_empty() && !args.only.iter().any(|only| lower.contains(&only.to_lowercase())) {
            continue;
        }
        eprintln!("fluxgit-bench: semantic diff of {name} ...");
        let run = semantic::measure(&name, &repo, args.commits)?;
        let words: Vec<String> = name
            .to_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|word| !word.is_empty())
            .map(str::to_owned)
            .collect();
        let file = words.join("-");
        latency::write_json(&results_dir, &format!("{file}.json"), &run)?;
        runs.push(run);
    }
    let provenance = format!("Run {started} on {built_from}; raw numbers (every commit) in `bench/results/semantic/`");
    let section = semantic::section(&runs, args.commits, &provenance);
    print!("{section}");
    let markdown = args.markdown.clone().unwrap_or_else(|| workspace_root().join("BENCHMARK.md"));
    let current = std::fs::read_to_string(&markdown).with_context(|| format!("reading {}", markdown.display()))?;
    std::fs::write(&markdown, latency::splice_named(&current, "Semantic diff", &section))?;
    Ok(())
}

fn blame(args: &BlameArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.fixtures_dir)?;
    let fixtures_dir = std::fs::canonicalize(&args.fixtures_dir)?;
    let sidecar = match &args.sidecar {
        Some(sidecar) => sidecar.clone(),
        None => built_sidecar()?,
    };
    eprintln!("fluxgit-bench: building blame-history ...");
    let dir = fixtures_dir.join("blame-history");
    let _ = std::fs::remove_dir_all(&dir);
    let fixture = fluxgit_fixtures::build_in(fluxgit_fixtures::Scenario::BlameHistory, &dir);
    let warmup_dir = fixtures_dir.join("blame-warmup");
    let _ = std::fs::remove_dir_all(&warmup_dir);
    let warmup = fluxgit_fixtures::build_in(fluxgit_fixtures::Scenario::Clean, &warmup_dir);
    let setup = blame::Setup {
        sidecar,
        repo: fixture.path().to_path_buf(),
        path: fluxgit_fixtures::facts::BLAME_HISTORY_PATH,
        warmup_repo: warmup.path().to_path_buf(),
        allowed_roots: fixtures_dir.into_os_string(),
        samples: args.samples.max(1),
    };
    eprintln!("fluxgit-bench: blaming {} ...", setup.path);
    let load_at_start = blame::load_average();
    let mut run = blame::run(&setup)?;
    run.load_average.insert(0, load_at_start);
    let probe = std::env::current_exe()?;
    eprintln!("fluxgit-bench: CPU seconds, fast-import layout ...");
    run.cpu.push(blame::cpu(&probe, &setup.repo, setup.path, "fast-import", setup.samples)?);
    run.load_average.push(blame::load_average());
    eprintln!("fluxgit-bench: CPU seconds, after git repack -adf ...");
    let repack = Command::new("git").args(["repack", "-adf", "-q"]).current_dir(&setup.repo).status()?;
    if !repack.success() {
        bail!("git repack -adf failed ({repack})");
    }
    run.cpu.push(blame::cpu(&probe, &setup.repo, setup.path, "repacked", setup.samples)?);
    run.load_average.push(blame::load_average());
    let results_dir = args.results_dir.clone().unwrap_or_else(|| workspace_root().join("bench/results/blame"));
    blame::write_results(&results_dir, &run)?;
    let markdown_path = args.markdown.clone().unwrap_or_else(|| workspace_root().join("BENCHMARK.md"));
    let existing = std::fs::read_to_string(&markdown_path).unwrap_or_default();
    let section = blame::render(&run, "cargo run --release -q -p fluxgit-bench -- blame");
    std::fs::write(&markdown_path, blame::splice(&existing, &section))
        .with_context(|| format!("cannot write {}", markdown_path.display()))?;
    eprintln!("fluxgit-bench: wrote {} and {}", markdown_path.display(), results_dir.display());
    Ok(())
}

/// The peers' numbers as the team measured them on 2026-12-01 (name, description and input schema, o200k), for
/// peers not measured in this run.
const CITED_PEERS: [(&str, usize, usize, &str); 4] = [
    ("fluxgit before the short listing (dotted names; cited, measured 2026-12-01)", 41, 19_450, "61,300"),
    ("fluxgit-mcp-sidecar 0.2.1 (published; cited, measured 2026-12-01)", 38, 11_800, ""),
    ("mcp-server-git (cited, measured 2026-12-01)", 12, 1_300, ""),
    ("@cyanheads/git-mcp-server (cited, measured 2026-12-01)", 28, 9_100, "20,200"),
];

fn tools(args: &ToolsArgs) -> anyhow::Result<()> {
    let sidecar = match &args.sidecar {
        Some(sidecar) => sidecar.clone(),
        None => built_sidecar()?,
    };
    let home = tempfile::tempdir()?;
    let base: Vec<(&str, OsString)> = vec![
        ("PATH", std::env::var_os("PATH").unwrap_or_default()),
        ("HOME", home.path().as_os_str().to_owned()),
        ("FLUXGIT_MCP_ALLOWED_ROOTS", home.path().as_os_str().to_owned()),
        ("FLUXGIT_RUN_DIR", home.path().join("run").into_os_string()),
        ("FLUXGIT_MCP_AUDIT_DISABLED", OsString::new()),
        ("FLUXGIT_MCP_PRESENCE_DISABLED", OsString::new()),
    ];
    let with_gateway: Vec<(&str, OsString)> =
        base.iter().cloned().chain([("FLUXGIT_MCP_HANDSHAKE_ADDR", OsString::from("127.0.0.1:9"))]).collect();
    let mut listings = vec![
        definitions::measure("fluxgit (this build, no gateway)", &sidecar, &base)?,
        definitions::measure("fluxgit (this build, gateway configured)", &sidecar, &with_gateway)?,
    ];
    let mut measured_peers = Vec::new();
    for peer in &args.peer {
        let (label, executable) = peer.split_once('=').context("--peer takes LABEL=EXECUTABLE")?;
        let env: Vec<(&str, OsString)> = base[..2].to_vec();
        listings.push(definitions::measure(label, Path::new(executable), &env)?);
        measured_peers.push(label.to_owned());
    }
    let cited: Vec<_> = CITED_PEERS
        .iter()
        .filter(|(label, ..)| {
            let name = label.split(' ').next().unwrap_or_default();
            !measured_peers.iter().any(|peer| peer.starts_with(name))
        })
        .copied()
        .collect();
    let results_dir = args.results_dir.clone().unwrap_or_else(|| workspace_root().join("bench/results/tools"));
    std::fs::create_dir_all(&results_dir)?;
    let raw: Vec<serde_json::Value> = listings.iter().map(definitions::to_json).collect();
    std::fs::write(results_dir.join("listings.json"), serde_json::to_string_pretty(&raw)? + "\n")?;
    let mut invocation = String::from("fluxgit-bench tools");
    for peer in &args.peer {
        let label = peer.split_once('=').map_or(peer.as_str(), |(label, _)| label);
        invocation.push_str(&format!(" --peer '{label}=<its stdio command>'"));
    }
    let provenance = format!(
        "Generated by `{invocation}` {} on {} (token counts do not depend on the machine's load); raw numbers in \
         `bench/results/tools/listings.json`.",
        utc_now(),
        built_from()
    );
    let section = definitions::section(&listings, &cited, &provenance);
    print!("{section}");
    let markdown_path = args.markdown.clone().unwrap_or_else(|| workspace_root().join("BENCHMARK.md"));
    let existing = std::fs::read_to_string(&markdown_path).unwrap_or_default();
    std::fs::write(&markdown_path, latency::splice_named(&existing, "Tool definitions", &section))?;
    Ok(())
}

fn tasks_bench(args: &TasksArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.work_dir)?;
    let work_dir = std::fs::canonicalize(&args.work_dir)?;
    let sidecar = match &args.sidecar {
        Some(sidecar) => sidecar.clone(),
        None => built_sidecar()?,
    };
    let selected: Vec<&tasks::TaskDef> = if args.tasks.is_empty() {
        tasks::TASKS
            .iter()
            .filter(|task| !args.check || ["rebase-conflict", "lost-commits"].contains(&task.name))
            .collect()
    } else {
        args.tasks
            .iter()
            .map(|name| {
                tasks::TASKS.iter().find(|task| task.name == name).with_context(|| {
                    let known: Vec<&str> = tasks::TASKS.iter().map(|task| task.name).collect();
                    format!("unknown task {name:?}; known: {}", known.join(", "))
                })
            })
            .collect::<anyhow::Result<_>>()?
    };
    let mut sources = Vec::new();
    if args.check {
        let repo = tasks::check_repository(&work_dir)?;
        let head = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(&repo).output()?;
        let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
        for source in tasks::Source::ALL {
            sources.push(tasks::pin_source(source, &repo, &head, &work_dir)?);
        }
    } else {
        for source in tasks::Source::ALL.into_iter().filter(|source| selected.iter().any(|task| task.source == *source))
        {
            let given = args.repo_dirs.iter().find_map(|pair| {
                let (name, dir) = pair.split_once('=')?;
                (name == source.name()).then(|| PathBuf::from(dir))
            });
            let from = given.unwrap_or_else(|| args.mirrors.join(source.mirror()).join("repo"));
            sources.push(tasks::pin_source(source, &from, source.pin(), &work_dir)?);
        }
    }
    let setup = tasks::Setup {
        sidecar,
        work_dir: work_dir.clone(),
        sources,
        only: selected.iter().map(|task| task.name.to_owned()).collect(),
    };
    let runs = tasks::run(&setup)?;
    let table = tasks::table(&runs);
    print!("{table}");
    let fluxgit = Command::new("git").args(["rev-parse", "--short", "HEAD"]).current_dir(workspace_root()).output()?;
    let fluxgit = String::from_utf8_lossy(&fluxgit.stdout).trim().to_owned();
    let git_version = git_version()?;
    let mut invocation = String::from("cargo run -q -p fluxgit-bench -- tasks");
    if args.check {
        invocation.push_str(" --check");
    }
    for name in &args.tasks {
        invocation.push_str(&format!(" --task {name}"));
    }
    let meta = serde_json::json!({
        "command": invocation,
        "fluxgit": fluxgit,
        "git": git_version,
        "date": utc_now(),
        "pins": setup.sources.iter().map(|pinned| serde_json::json!({
            "repository": pinned.source.name(), "commit": pinned.pin,
        })).collect::<Vec<_>>(),
    });
    let results_dir = args.results_dir.clone().unwrap_or_else(|| {
        if args.check { work_dir.join("check-results") } else { workspace_root().join("bench/results/tasks") }
    });
    tasks::write_results(&results_dir, &runs, &meta)?;
    if args.check {
        let broken: Vec<String> = runs
            .iter()
            .flat_map(|run| {
                run.facts.iter().filter(|fact| !fact.git).map(move |fact| format!("{}: {}", run.task, fact.fact.name))
            })
            .collect();
        if !broken.is_empty() {
            bail!("the expert's commands miss facts the oracle computed: {}", broken.join("; "));
        }
        if let Some(failed) = runs.iter().flat_map(|run| &run.ours).find(|call| call.status != "ok") {
            bail!("{} answered {}: {}", failed.tool, failed.status, failed.text);
        }
        eprintln!("fluxgit-bench tasks: check passed; results in {}", results_dir.display());
        return Ok(());
    }
    let markdown_path = args.markdown.clone().unwrap_or_else(|| workspace_root().join("BENCHMARK.md"));
    let existing = std::fs::read_to_string(&markdown_path).unwrap_or_default();
    let section = tasks::section(&runs, &meta, &table);
    std::fs::write(&markdown_path, latency::splice_named(&existing, "Agent tasks", &section))
        .with_context(|| format!("cannot write {}", markdown_path.display()))?;
    eprintln!("fluxgit-bench tasks: wrote {} and {}", markdown_path.display(), results_dir.display());
    Ok(())
}

fn count(files: &[PathBuf]) -> anyhow::Result<()> {
    for file in files {
        let text = if file.as_os_str() == "-" {
            std::io::read_to_string(std::io::stdin())?
        } else {
            std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?
        };
        println!("{} {}", fluxgit_engine::budget::count_tokens(&text), file.display());
    }
    Ok(())
}

fn tokens(args: &TokensArgs) -> anyhow::Result<()> {
    let selected: Vec<scenarios::BenchScenario> = if args.scenarios.is_empty() {
        scenarios::ALL.iter().copied().filter(|scenario| args.all || !scenario.heavy).collect()
    } else {
        args.scenarios
            .iter()
            .map(|name| {
                scenarios::by_name(name)
                    .with_context(|| format!("unknown scenario {name:?}; known: {}", scenarios::names()))
            })
            .collect::<anyhow::Result<_>>()?
    };
    std::fs::create_dir_all(&args.fixtures_dir)?;
    let fixtures_dir = std::fs::canonicalize(&args.fixtures_dir)?;
    let results_dir = args.results_dir.clone().unwrap_or_else(|| workspace_root().join("bench/results"));
    let markdown_path = args.markdown.clone().unwrap_or_else(|| workspace_root().join("BENCHMARK.md"));
    let sidecar = match &args.sidecar {
        Some(sidecar) => sidecar.clone(),
        None => built_sidecar()?,
    };
    let setup = run::Setup {
        fixtures_dir: fixtures_dir.clone(),
        sidecar,
        peer: args.peer.clone(),
        peer_recorded: args.peer_recorded.clone(),
        baseline: args.baseline.clone(),
        baseline_recorded: args.baseline_recorded.clone(),
    };
    let git_version = git_version()?;

    let mut runs = Vec::new();
    for scenario in selected {
        eprintln!("fluxgit-bench: {} ...", scenario.name);
        let result = run::run(scenario, &setup).with_context(|| format!("scenario {}", scenario.name))?;
        report::write_scenario(&results_dir, &result, &git_version)?;
        eprintln!(
            "fluxgit-bench: {}: built in {:.1} s, tools {:.1} s, peer {:.1} s, git {:.1} s; brief {} tokens, sweep {}, \
             counterexample {}; facts {}/{}",
            scenario.name,
            result.timings.build,
            result.timings.ours,
            result.timings.peer.unwrap_or_default(),
            result.timings.git,
            result.ours.brief().map(|call| call.tokens.o200k).unwrap_or_default(),
            result.sweep_total().o200k,
            result.counterexample_total().o200k,
            result.facts_carried(0).unwrap_or_default(),
            result.facts.len(),
        );
        runs.push(result);
    }

    let mut repo_runs = Vec::new();
    for repo in &args.repos {
        eprintln!("fluxgit-bench: {} ...", repo.display());
        let own = std::fs::canonicalize(repo).ok() == std::fs::canonicalize(workspace_root()).ok();
        let label = match repo.file_name() {
            _ if own => "own-checkout".to_owned(),
            Some(name) => name.to_string_lossy().into_owned(),
            None => "root".to_owned(),
        };
        let result = run::run_repo(repo, label, &setup).with_context(|| format!("repository {}", repo.display()))?;
        report::write_repo(&results_dir, &result)?;
        repo_runs.push(result);
    }
    let peer_version = runs.iter().find_map(|run| run.peer.as_ref()).map(|peer| peer.version.clone());
    let invocation = invocation(args, peer_version.as_deref());
    let fixtures_display = fixtures_dir.display().to_string();
    let info = markdown::RunInfo {
        invocation: &invocation,
        git_version: &git_version,
        fixtures_dir: &fixtures_display,
        repos: &repo_runs,
    };
    // The latency section and everything after it (written by the other benchmarks and by hand) are kept.
    let existing = std::fs::read_to_string(&markdown_path).unwrap_or_default();
    let rendered = match existing.find("\n## Latency\n") {
        Some(start) => format!("{}\n\n{}", markdown::render(&runs, &info).trim_end(), &existing[start + 1..]),
        None => markdown::render(&runs, &info),
    };
    std::fs::write(&markdown_path, rendered).with_context(|| format!("cannot write {}", markdown_path.display()))?;
    eprintln!("fluxgit-bench: wrote {} and {}", markdown_path.display(), results_dir.display());
    Ok(())
}

/// The last commit before the compact shapes (compact JSON, `format: "text"`): the per-tool table's baseline.
pub(crate) const BASELINE_COMMIT: &str = "96f0a1f";

/// The command that reproduces this run, on any machine: the flags of the run, with the peer (and the baseline)
/// named by how to get them, never by this machine's paths.
fn invocation(args: &TokensArgs, peer_version: Option<&str>) -> String {
    let mut setup = Vec::new();
    let mut line = String::from("cargo run -q -p fluxgit-bench -- tokens");
    if args.all {
        line.push_str(" --all");
    }
    for scenario in &args.scenarios {
        line.push_str(&format!(" --scenario {scenario}"));
    }
    for repo in &args.repos {
        let own = std::fs::canonicalize(repo).ok() == std::fs::canonicalize(workspace_root()).ok();
        line.push_str(&format!(" --repo {}", if own { ".".to_owned() } else { repo.display().to_string() }));
    }
    if args.peer.is_some() {
        let version = peer_version.map_or_else(String::new, |version| format!(" --version {version}"));
        setup.push(format!(
            "cargo install --locked fluxgit-mcp-sidecar{version} --root PEER_DIR   # the published peer, in a folder \
             of its own"
        ));
        line.push_str(" --peer PEER_DIR/bin/fluxgit-mcp-sidecar");
        setup.push(
            "# without it: cp -r bench/results /tmp/peer-recorded, then --peer-recorded /tmp/peer-recorded replays \
             its recorded answers"
                .to_owned(),
        );
    }
    if args.peer_recorded.is_some() {
        // The directory given on this run was a local copy; name the reproducible way to make one instead.
        setup.push(
            "cp -r bench/results /tmp/peer-recorded   # the peer's answers recorded by an earlier run (the run \
             rewrites bench/results)"
                .to_owned(),
        );
        line.push_str(" --peer-recorded /tmp/peer-recorded");
    }
    if args.baseline.is_some() {
        setup.push(format!(
            "git worktree add --detach /tmp/fluxgit-{BASELINE_COMMIT} {BASELINE_COMMIT} && cargo build \
             --manifest-path /tmp/fluxgit-{BASELINE_COMMIT}/Cargo.toml -p fluxgit-mcp-sidecar   # the sidecar \
             before the compact shapes"
        ));
        line.push_str(&format!(" --baseline /tmp/fluxgit-{BASELINE_COMMIT}/target/debug/fluxgit-mcp-sidecar"));
    }
    if args.baseline_recorded.is_some() {
        setup.push(format!(
            "cp -r bench/results /tmp/baseline-recorded   # the answers of the sidecar at {BASELINE_COMMIT} recorded by \
             an earlier run (or build it: git worktree add --detach /tmp/fluxgit-{BASELINE_COMMIT} {BASELINE_COMMIT}, \
             then --baseline its debug binary)"
        ));
        line.push_str(" --baseline-recorded /tmp/baseline-recorded");
    }
    setup.push(line);
    setup.join("\n")
}

/// Builds the sidecar with the cargo running us (when there is one), in the profile this binary was built with
/// (a release bench measures a release sidecar), and returns the binary beside ours.
fn built_sidecar() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let mut dir = exe.parent().context("the binary has a directory")?;
    if dir.ends_with("deps") {
        dir = dir.parent().context("deps has a parent")?;
    }
    if let Some(cargo) = std::env::var_os("CARGO") {
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", "fluxgit-mcp-sidecar", "--bin", "fluxgit-mcp-sidecar"])
            .args(profile_args(dir))
            .current_dir(workspace_root())
            .status()
            .context("cannot run cargo to build the sidecar")?;
        if !status.success() {
            bail!("building fluxgit-mcp-sidecar failed ({status})");
        }
    }
    let sidecar = dir.join(format!("fluxgit-mcp-sidecar{}", std::env::consts::EXE_SUFFIX));
    if !sidecar.is_file() {
        bail!("no sidecar at {}; build it (cargo build -p fluxgit-mcp-sidecar) or pass --sidecar", sidecar.display());
    }
    Ok(sidecar)
}
