//! `fluxgit-bench latency`: per tool, the first call on a repository in a running server (cold: after a warm-up
//! call on another repository, once the server's token tables are built; `--cold-samples` times, each in a new server
//! on a new run dir, interleaved with runs of git's commands) and the median of the calls after it (warm), against
//! the git CLI commands the tool replaces, asking the same counts; process start to first answer; peak RSS (`VmHWM` from `/proc/<pid>/status`). Warm calls start once the server watches the repository (the kernel lists
//! an inotify watch of the process on every directory the engine's watcher covers, [`crate::watches`]): until then
//! the engine reads every call fresh, so earlier calls would measure fresh reads, not the cache. A server that never
//! watches it (a peer without a watcher) is measured after its cold call, as before; each warm sample records
//! whether the watches were in place. Raw numbers go to `bench/results/latency/` as they are measured (a run
//! cut short leaves what it measured), the generated block of `BENCHMARK.md`'s latency section (between
//! [`GENERATED_START`] and [`GENERATED_END`]; the hand-written text around it is kept) gives the targets and ratios
//! first (absolute times are this machine's) and the load average seen during the run.
//!
//! Bounded so that one run fits fixtures, real repositories, a peer and the sweeps: warm calls and git runs stop
//! after `warm_budget` per tool (at least one call, three git runs), and a call that takes longer than
//! `call_timeout` kills its server and is recorded as `timeout`.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde::Serialize;
use serde_json::{Value, json};

use crate::mcp::{Answer, Session};
use crate::sweep::SweepRun;
use crate::watches::Covered;

/// One tool measured: its arguments besides `repoPath`, and the git commands it replaces (run in the repository).
/// A tool that answers N items by default is asked for N explicitly, and git's command asks `-n N` (checked by a
/// test): the two sides list the same number of commits.
struct ToolCase {
    tool: &'static str,
    arguments: fn() -> Value,
    git: &'static [&'static [&'static str]],
}

/// The tools measured, in `tools/list` order of importance.
const CASES: &[ToolCase] = &[
    ToolCase {
        tool: "repo.brief",
        arguments: || json!({"recentCommits": 10}),
        git: &[
            &["status", "--porcelain=v2", "--branch"],
            &["log", "-n", "10", "--format=%h %s"],
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
    // The default page (docs/design.md#local-tools: `limit` 50) and what each commit carries: abbreviated sha and parents, the mailmapped
    // author, the author date, the subject.
    ToolCase {
        tool: "repo.history",
        arguments: || json!({"limit": 50}),
        git: &[&["log", "-n", "50", "--format=%h %p %aN <%aE> %aI %s"]],
    },
    ToolCase {
        tool: "repo.reflog",
        arguments: || json!({"limit": 20}),
        git: &[&["log", "-g", "-n", "20", "--format=%H %gs"]],
    },
    ToolCase {
        tool: "repo.branchStack",
        arguments: || json!({}),
        // What the answer holds for every local branch: tip, date, upstream with its counts, and the counts against
        // the examined tip (one walk of all the tips in git, as in the engine).
        git: &[&[
            "for-each-ref",
            "--format=%(refname:short) %(objectname:short) %(committerdate:iso-strict) %(upstream:short) \
              %(upstream:track) %(ahead-behind:HEAD)",
            "refs/heads",
        ]],
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
    /// The 1-minute load average (`/proc/loadavg`) before each tool: lowest and highest.
    pub(crate) load_average: (f64, f64),
    /// Whether every tool was measured (a file written midway says `false`).
    pub(crate) complete: bool,
}

/// One tool on one repository.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolRun {
    pub(crate) tool: String,
    /// `ok`, `isError`, `rpcError`, `absent` (the server does not list the tool) or `timeout` (no answer within
    /// the call timeout: the server was killed, `coldMs` is the timeout).
    pub(crate) status: String,
    /// The arguments of every call besides `repoPath`.
    pub(crate) arguments: Value,
    /// The 1-minute load average right before the tool's first git run.
    pub(crate) load_average: Option<f64>,
    /// The median of `cold_samples`' times, milliseconds.
    pub(crate) cold_ms: f64,
    /// Every cold measure, in order (`--cold-samples`; sampling stops at the first that is not `ok`).
    pub(crate) cold_samples: Vec<ColdSample>,
    pub(crate) warm_median_ms: f64,
    pub(crate) warm_ms: Vec<f64>,
    /// Per warm sample: whether the server had an inotify watch on every directory of the repository that the
    /// engine's watcher covers, checked right before the call (the engine serves a watched repository from memory,
    /// and reads it fresh while its watches are being added).
    pub(crate) warm_watched: Vec<bool>,
    /// From the cold call's answer until the server watched every such directory, milliseconds; `None` when it did
    /// not within the wait limit (a server without a watcher: its warm calls then start at once).
    pub(crate) watches_ready_ms: Option<f64>,
    /// The first call once the watches were in place (untimed in the median: it reads and stores what the later
    /// calls find in memory), milliseconds.
    pub(crate) first_watched_ms: Option<f64>,
    /// The git commands, one line each.
    pub(crate) git_commands: Vec<String>,
    /// Median of `git_ms`, milliseconds.
    pub(crate) git_median_ms: f64,
    /// Every run of all the git commands one after the other, milliseconds: up to `--samples` (at most 10) before
    /// the cold samples, then one right before each round of cold samples.
    pub(crate) git_ms: Vec<f64>,
    /// Whether every cold sample's server was seen done building its token tables before the cold call (see
    /// [`ColdSample::tables_loaded`]).
    pub(crate) tables_loaded_before_cold: bool,
    /// With `--second-start`: the first call on the repository in a second server on the same run dir, after the
    /// first server (which made the cold and warm calls) exited: what the engine saved there (generation tables,
    /// indexes) is loaded, nothing is in memory. Milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) second_start_cold_ms: Option<f64>,
}

/// One cold measure: a new server on a new run dir answers the warm-up call on another repository, builds its token
/// tables, then makes its first call on the repository.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ColdSample {
    /// That first call, milliseconds (the call timeout when it did not answer).
    pub(crate) ms: f64,
    /// The run of git's commands made right before this round of cold samples (ours, then the peer's), milliseconds.
    pub(crate) git_ms: f64,
    /// The 1-minute load average right before the call.
    pub(crate) load_average: Option<f64>,
    /// Whether the server was seen done building its token tables before the call (no thread named
    /// [`PRELOAD_THREAD_NAME`] left in `/proc/<pid>/task`); `false` where /proc cannot tell or the wait timed
    /// out (the call may then overlap the build).
    pub(crate) tables_loaded: bool,
}

/// Settings of a latency run.
pub(crate) struct Setup {
    pub(crate) sidecar: PathBuf,
    pub(crate) peer: Option<PathBuf>,
    pub(crate) samples: usize,
    /// Cold measures per tool and server (at least 1), each in a new server on a new run dir.
    pub(crate) cold_samples: usize,
    /// Warm calls per tool on the peer (it can take minutes per call on a large repository).
    pub(crate) peer_samples: usize,
    /// A small repository the server reads first, so that the token tables and the watcher are up before the
    /// measured first call (the cold call measures the repository, not the process).
    pub(crate) warmup_repo: PathBuf,
    /// `FLUXGIT_MCP_ALLOWED_ROOTS` for the servers: every repository measured lies under one.
    pub(crate) allowed_roots: OsString,
    /// Warm calls, and git runs, of one tool stop once they took this long in all (at least one call and three git
    /// runs are made): the peer can take minutes per call on a large repository.
    pub(crate) warm_budget: Duration,
    /// A call without an answer after this long kills its server; the tool is recorded as `timeout`.
    pub(crate) call_timeout: Duration,
    /// Where `<label>.json` is (re)written after every tool.
    pub(crate) results_dir: PathBuf,
    /// Also measure each tool's first call in a second server on the first one's run dir (see
    /// [`ToolRun::second_start_cold_ms`]).
    pub(crate) second_start: bool,
    /// Measure only these tools (empty: all).
    pub(crate) tools: Vec<String>,
    /// How long a server may take, after its cold call, to watch the repository before its warm calls start anyway.
    pub(crate) watch_wait: Duration,
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

/// The 1-minute load average, when /proc tells it.
pub(crate) fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// Runs `commands` in `repo` up to `samples` times (at least 3, fewer than `samples` once `budget` passed); each
/// run's milliseconds.
fn git_runs(repo: &Path, commands: &[&[&str]], samples: usize, budget: Duration) -> anyhow::Result<Vec<f64>> {
    let mut times = Vec::new();
    let sampling = Instant::now();
    for sample in 0..samples.max(1) {
        if sample >= 3 && sampling.elapsed() > budget {
            break;
        }
        times.push(git_once(repo, commands)?);
    }
    Ok(times)
}

/// Runs `commands` in `repo` one after the other; milliseconds.
fn git_once(repo: &Path, commands: &[&[&str]]) -> anyhow::Result<f64> {
    let started = Instant::now();
    for args in commands {
        // Exit status is not judged: `rev-parse origin/HEAD` fails where there is no origin, as it would for an
        // agent.
        Command::new("git")
            .args(*args)
            .current_dir(repo)
            .env("GIT_OPTIONAL_LOCKS", "0")
            .output()
            .with_context(|| format!("git {}", args.join(" ")))?;
    }
    Ok(millis(started))
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

/// The thread on which servers before the static o200k ranks built their token tables; later servers have none,
/// and a peer may still have it.
const PRELOAD_THREAD_NAME: &str = "o200k-preload";

/// Waits until server `pid` has no thread building the o200k token tables (they load on a thread of their own at
/// start-up, about a second of CPU: a first call measured meanwhile would share the machine with it). The warm-up
/// call's answer was already counted with the tables, so this normally finds the thread gone; it is checked rather
/// than assumed. Polls `/proc/<pid>/task/*/comm` every millisecond for at most `limit`; `true` once no such thread is
/// left, `false` when /proc cannot tell or `limit` passed.
fn wait_for_token_tables(pid: u32, limit: Duration) -> bool {
    let started = Instant::now();
    loop {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
        let loading = tasks.flatten().any(|task| {
            std::fs::read_to_string(task.path().join("comm")).is_ok_and(|name| name.trim_end() == PRELOAD_THREAD_NAME)
        });
        if !loading {
            return true;
        }
        if started.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Calls `tool` on `session`; when no answer came within `limit`, kills the server (by its process id: it is our
/// child) and returns `None`.
fn call_within(
    session: &mut Session,
    tool: &str,
    arguments: &Value,
    limit: Duration,
) -> anyhow::Result<Option<Answer>> {
    let pid = session.pid();
    let (answered, waiting) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if waiting.recv_timeout(limit) == Err(mpsc::RecvTimeoutError::Timeout) {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            return true;
        }
        false
    });
    let answer = session.call(tool, arguments);
    let _ = answered.send(());
    if watchdog.join().unwrap_or(false) {
        return Ok(None);
    }
    answer.map(Some)
}

/// A server of its own on a run dir of its own, for one cold measure (and, in the last round, the warm calls).
struct Server {
    session: Session,
    env: Vec<(&'static str, OsString)>,
    /// Removed when the server is dropped (after it, as fields drop in order).
    _run_dir: tempfile::TempDir,
}

/// The tool's result before any call: `absent` until a call answers.
fn tool_run(case: &ToolCase, commands: &[String], load: Option<f64>) -> ToolRun {
    ToolRun {
        tool: case.tool.to_owned(),
        status: "absent".to_owned(),
        arguments: (case.arguments)(),
        load_average: load,
        cold_ms: 0.0,
        cold_samples: Vec::new(),
        warm_median_ms: 0.0,
        warm_ms: Vec::new(),
        warm_watched: Vec::new(),
        watches_ready_ms: None,
        first_watched_ms: None,
        git_commands: commands.to_vec(),
        git_median_ms: 0.0,
        git_ms: Vec::new(),
        tables_loaded_before_cold: false,
        second_start_cold_ms: None,
    }
}

/// The arguments of `case`'s calls on `repo`.
fn arguments_on(case: &ToolCase, repo: &Path) -> anyhow::Result<Value> {
    let mut arguments = (case.arguments)();
    arguments["repoPath"] = json!(repo.to_str().context("repository path is UTF-8")?);
    Ok(arguments)
}

impl Setup {
    /// The arguments of the warm-up `repo.brief` (on [`Setup::warmup_repo`]).
    fn warmup_arguments(&self) -> anyhow::Result<Value> {
        Ok(json!({"repoPath": self.warmup_repo.to_str().context("the warm-up repository path is UTF-8")?}))
    }
}

/// Starts `binary` on a new run dir and makes its warm-up call on another repository, then waits for its token
/// tables. `None` when the warm-up call timed out (`run.status` says so) or the server does not list the tool.
fn warmed_up(binary: &Path, case: &ToolCase, setup: &Setup, run: &mut ToolRun) -> anyhow::Result<Option<Server>> {
    let run_dir = tempfile::tempdir()?;
    let env = env_for(&setup.allowed_roots, run_dir.path());
    let mut session = Session::start(binary, &env)?;
    if session.tool(case.tool).is_none() {
        run.status = "absent".to_owned();
        return Ok(None);
    }
    if call_within(&mut session, "repo.brief", &setup.warmup_arguments()?, setup.call_timeout)?.is_none() {
        run.status = "timeout".to_owned();
        return Ok(None);
    }
    Ok(Some(Server { session, env, _run_dir: run_dir }))
}

/// One cold measure of `case` on `repo` with `binary` (see [`ColdSample`]), appended to `run`, with `git_ms`, the
/// git run of this round. Returns the server when the call answered `ok` (for the warm calls of the last round).
fn cold_sample(
    binary: &Path,
    repo: &Path,
    case: &ToolCase,
    setup: &Setup,
    run: &mut ToolRun,
    git_ms: f64,
) -> anyhow::Result<Option<Server>> {
    let Some(mut server) = warmed_up(binary, case, setup, run)? else { return Ok(None) };
    let tables_loaded = wait_for_token_tables(server.session.pid(), setup.call_timeout);
    let arguments = arguments_on(case, repo)?;
    let load_average = load_average();
    let started = Instant::now();
    let answer = call_within(&mut server.session, case.tool, &arguments, setup.call_timeout)?;
    let ms = if answer.is_some() { millis(started) } else { setup.call_timeout.as_secs_f64() * 1000.0 };
    run.cold_samples.push(ColdSample { ms, git_ms, load_average, tables_loaded });
    run.cold_ms = median(&run.cold_samples.iter().map(|sample| sample.ms).collect::<Vec<_>>());
    run.status = answer.as_ref().map_or("timeout", Answer::status).to_owned();
    Ok((run.status == "ok").then_some(server))
}

/// The warm calls of `case` in `server`, whose cold call has just answered: once the server watches every directory
/// in `covered` (or the watch wait passed), one untimed call and up to `samples` timed ones (within the warm budget);
/// then, with `--second-start`, the first call in a new server on the same run dir. Returns the server's peak RSS.
fn warm_calls(
    mut server: Server,
    side: &Side<'_>,
    repo: &Path,
    covered: &Covered,
    case: &ToolCase,
    setup: &Setup,
    run: &mut ToolRun,
) -> anyhow::Result<Option<u64>> {
    let arguments = arguments_on(case, repo)?;
    let session = &mut server.session;
    // The call has answered, so the server let go of the repository: its watches are added in the background now.
    // A server with no watcher at all is not waited for.
    let pid = session.pid();
    if covered.has_watcher(pid) {
        run.watches_ready_ms = covered.wait_watched(pid, setup.watch_wait).map(|waited| waited.as_secs_f64() * 1000.0);
    }
    if run.watches_ready_ms.is_some() {
        let started = Instant::now();
        if call_within(session, case.tool, &arguments, setup.call_timeout)?.is_none() {
            run.status = "timeout".to_owned();
            return Ok(None);
        }
        run.first_watched_ms = Some(millis(started));
    }
    let sampling = Instant::now();
    for sample in 0..side.samples {
        if sample > 0 && sampling.elapsed() > setup.warm_budget {
            break;
        }
        let watched = covered.watched_by(pid);
        let started = Instant::now();
        if call_within(session, case.tool, &arguments, setup.call_timeout)?.is_none() {
            run.status = "timeout".to_owned();
            break;
        }
        run.warm_ms.push(millis(started));
        run.warm_watched.push(watched);
    }
    run.warm_median_ms = median(&run.warm_ms);
    let rss = (run.status != "timeout").then(|| peak_rss(pid)).flatten();
    if setup.second_start && run.status == "ok" {
        // Ending the session ends the server at end of input (it finishes its writes to the run dir first); the
        // run dir stays for the second server.
        let Server { session, env, _run_dir: run_dir } = server;
        drop(session);
        let mut session = Session::start(side.binary, &env)?;
        call_within(&mut session, "repo.brief", &setup.warmup_arguments()?, setup.call_timeout)?;
        wait_for_token_tables(session.pid(), setup.call_timeout);
        let started = Instant::now();
        if call_within(&mut session, case.tool, &arguments, setup.call_timeout)?.is_some() {
            run.second_start_cold_ms = Some(millis(started));
        }
        drop(session);
        drop(run_dir);
    }
    Ok(rss)
}

/// Our server or the peer.
struct Side<'a> {
    binary: &'a Path,
    /// Warm calls.
    samples: usize,
}

/// Measures one tool on `repo` with our server and, when set, the peer: `--cold-samples` rounds, each one run of
/// git's commands, then a cold measure in a new server of ours, then one of the peer's; in the last round each
/// server makes its warm calls right after its cold one (the earlier rounds' servers end at once, so that no idle
/// server adds watches beside a measure). Returns our run, the peer's, and our peak RSS.
fn measure_tool(
    repo: &Path,
    covered: &Covered,
    case: &ToolCase,
    setup: &Setup,
) -> anyhow::Result<(ToolRun, Option<ToolRun>, Option<u64>)> {
    let load = load_average();
    let commands: Vec<String> = case.git.iter().map(|args| format!("git {}", args.join(" "))).collect();
    let mut git_ms = git_runs(repo, case.git, setup.samples.min(10), setup.warm_budget)?;
    let mut ours = tool_run(case, &commands, load);
    let mut theirs = setup.peer.as_ref().map(|_| tool_run(case, &commands, load));
    let mut rss = None;
    let rounds = setup.cold_samples.max(1);
    let our_side = Side { binary: &setup.sidecar, samples: setup.samples };
    let peer_side = setup.peer.as_deref().map(|binary| Side { binary, samples: setup.peer_samples });
    for round in 0..rounds {
        let last = round + 1 == rounds;
        let git = git_once(repo, case.git)?;
        git_ms.push(git);
        let sides = [Some((&our_side, &mut ours)), peer_side.as_ref().zip(theirs.as_mut())];
        for (idx, entry) in sides.into_iter().enumerate() {
            let Some((side, run)) = entry else { continue };
            // A side that failed (absent, timeout, error) is not sampled again.
            if round > 0 && run.status != "ok" {
                continue;
            }
            let server = cold_sample(side.binary, repo, case, setup, run, git)?;
            if let (true, Some(server)) = (last, server) {
                let peak = warm_calls(server, side, repo, covered, case, setup, run)?;
                if idx == 0 {
                    rss = peak;
                }
            }
        }
    }
    for run in std::iter::once(&mut ours).chain(theirs.as_mut()) {
        run.git_median_ms = median(&git_ms);
        run.git_ms.clone_from(&git_ms);
        run.tables_loaded_before_cold =
            !run.cold_samples.is_empty() && run.cold_samples.iter().all(|sample| sample.tables_loaded);
    }
    Ok((ours, theirs, rss))
}

/// Measures `repo` (labelled `label`): per tool, the git commands, our server and, when set, the peer one after the
/// other (interleaved, so that the three see the same machine load; see [`measure_tool`]). `<label>.json` in the
/// results directory is rewritten after every tool.
pub(crate) fn run_repo(label: &str, repo: &Path, setup: &Setup) -> anyhow::Result<RepoRun> {
    let mut run = RepoRun {
        label: label.to_owned(),
        path: repo.display().to_string(),
        start_to_first_answer_ms: start_to_first_answer(&setup.sidecar, repo, setup)?,
        peak_rss_kib: None,
        tools: Vec::new(),
        peer: setup.peer.as_ref().map(|_| Vec::new()),
        load_average: (f64::INFINITY, 0.0),
        complete: false,
    };
    let covered = Covered::of(repo)?;
    eprintln!("fluxgit-bench:   {} directories a watching server covers", covered.len());
    for case in CASES.iter().filter(|case| setup.tools.is_empty() || setup.tools.iter().any(|tool| tool == case.tool)) {
        eprintln!("fluxgit-bench:   {} ...", case.tool);
        let (tool, peer, rss) = measure_tool(repo, &covered, case, setup)?;
        let loads = tool.cold_samples.iter().map(|sample| sample.load_average);
        for load in std::iter::once(tool.load_average).chain(loads).flatten() {
            run.load_average = (run.load_average.0.min(load), run.load_average.1.max(load));
        }
        run.peak_rss_kib = run.peak_rss_kib.max(rss);
        run.tools.push(tool);
        if let (Some(peer), Some(peer_tools)) = (peer, run.peer.as_mut()) {
            peer_tools.push(peer);
        }
        write_json(&setup.results_dir, &format!("{label}.json"), &run)?;
    }
    run.complete = true;
    write_json(&setup.results_dir, &format!("{label}.json"), &run)?;
    Ok(run)
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

/// Writes `value` as pretty JSON to `dir/name` (through a temporary file, so that a cut run never leaves half a file).
pub(crate) fn write_json(dir: &Path, name: &str, value: &impl Serialize) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let text = serde_json::to_string_pretty(value)? + "\n";
    let partial = dir.join(format!(".{name}.partial"));
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, dir.join(name))?;
    Ok(())
}

fn ratio(numerator: f64, denominator: f64) -> String {
    if denominator <= 0.0 { "-".to_owned() } else { format!("{:.2}", numerator / denominator) }
}

/// What a run measured besides the repositories: the many-repositories RSS (count, peak kB) and the sweeps.
pub(crate) struct Extras<'a> {
    pub(crate) many: Option<(usize, u64)>,
    pub(crate) sweeps: &'a [SweepRun],
    /// Everything asked for was measured (the section is also written midway, after each repository).
    pub(crate) finished: bool,
}

/// The tool named `tool` of `tools`, when it answered.
fn answered<'a>(tools: &'a [ToolRun], tool: &str) -> Option<&'a ToolRun> {
    tools.iter().find(|run| run.tool == tool && run.status == "ok")
}

/// `20/20 watched`: how many warm samples ran with the repository's watches in place.
fn watched_samples(run: &ToolRun) -> String {
    format!("{}/{} watched", run.warm_watched.iter().filter(|watched| **watched).count(), run.warm_watched.len())
}

/// Every warm sample ran with the repository's watches in place.
fn all_watched(run: &ToolRun) -> bool {
    !run.warm_watched.is_empty() && run.warm_watched.iter().all(|watched| *watched)
}

/// The cold median in milliseconds, with the range of the samples in brackets when there are several:
/// `12.30 (10.1-15.2)`.
fn cold_cell(run: &ToolRun) -> String {
    let samples: Vec<f64> = run.cold_samples.iter().map(|sample| sample.ms).collect();
    let (low, high) = samples.iter().fold((f64::INFINITY, 0.0_f64), |(low, high), ms| (low.min(*ms), high.max(*ms)));
    if samples.len() > 1 { format!("{:.2} ({low:.1}-{high:.1})", run.cold_ms) } else { format!("{:.2}", run.cold_ms) }
}

fn met(ok: bool) -> &'static str {
    if ok { "yes" } else { "no" }
}

/// The targets of issue 12 this run measured, one row each: (target, measured, met).
fn targets(runs: &[RepoRun], extras: &Extras<'_>) -> Vec<(String, String, &'static str)> {
    let mut rows = Vec::new();
    let mut brief_ratios = Vec::new();
    for run in runs {
        let Some(peer) = &run.peer else { continue };
        match (answered(&run.tools, "repo.brief"), answered(peer, "repo.brief")) {
            (Some(ours), Some(theirs)) => {
                let ratio = theirs.warm_median_ms / ours.warm_median_ms.max(f64::MIN_POSITIVE);
                brief_ratios.push((
                    format!("{} {ratio:.1}x ({})", run.label, watched_samples(ours)),
                    ratio >= 100.0 && all_watched(ours),
                ));
            }
            _ => brief_ratios.push((format!("{}: not measured", run.label), false)),
        }
    }
    if !brief_ratios.is_empty() {
        let all = brief_ratios.iter().all(|(_, ok)| *ok);
        let text: Vec<String> = brief_ratios.into_iter().map(|(text, _)| text).collect();
        rows.push(("warm `repo.brief` >= 100x faster than the peer".to_owned(), text.join(", "), met(all)));
    }
    if let Some(big) = runs.iter().find(|run| run.label == "big-history") {
        if let Some(status) = answered(&big.tools, "repo.status") {
            rows.push((
                "warm `repo.status` on 100,000 files (big-history) <= 5 ms".to_owned(),
                format!(
                    "{:.2} ms (median of {}, {})",
                    status.warm_median_ms,
                    status.warm_ms.len(),
                    watched_samples(status)
                ),
                met(status.warm_median_ms <= 5.0 && all_watched(status)),
            ));
        }
        for tool in &big.tools {
            let target = format!("cold `{}` on big-history <= 1.0x git", tool.tool);
            if tool.status != "ok" {
                rows.push((target, tool.status.clone(), "no"));
                continue;
            }
            let ratio = tool.cold_ms / tool.git_median_ms.max(f64::MIN_POSITIVE);
            rows.push((
                target,
                format!("{ratio:.2}x ({} ms vs {:.1} ms)", cold_cell(tool), tool.git_median_ms),
                met(ratio <= 1.0),
            ));
        }
    }
    if let Some((count, peak)) = extras.many {
        let megabytes = peak as f64 / 1024.0;
        rows.push((
            "RSS <= 300 MB with 200 repositories seen".to_owned(),
            format!("{megabytes:.1} MB after {count} repositories (one server, `repo.brief` each)"),
            met(count >= 200 && megabytes <= 300.0),
        ));
    }
    for sweep in extras.sweeps {
        rows.push((
            format!("cache weight bound holds under a {}-repository sweep", sweep.repositories),
            format!(
                "bound {:.2} MiB: highest weight {:.2} MiB ({} bytes); {} of the first 50 still in memory",
                sweep.bound_bytes as f64 / 1_048_576.0,
                sweep.max_weight_bytes as f64 / 1_048_576.0,
                sweep.max_weight_bytes,
                sweep.still_cached_of_first_50
            ),
            met(sweep.max_weight_bytes <= sweep.bound_bytes),
        ));
    }
    rows
}

/// The generated block of the latency section (what goes between [`GENERATED_START`] and [`GENERATED_END`]): the
/// command and time of the run, the load it saw, the targets, then per repository ratios first and absolute
/// medians. How each figure is measured is the hand-written text around it. `started` is when the run began
/// (`YYYY-MM-DD HH:MM UTC`).
pub(crate) fn render(runs: &[RepoRun], extras: &Extras<'_>, invocation: &str, started: &str) -> String {
    let mut out = String::new();
    let (low, high) = runs
        .iter()
        .filter(|run| run.load_average.0.is_finite())
        .fold((f64::INFINITY, 0.0_f64), |(low, high), run| (low.min(run.load_average.0), high.max(run.load_average.1)));
    let load = if low.is_finite() {
        format!("the 1-minute load average ranged {low:.1}-{high:.1} on this 2-core machine during the run")
    } else {
        "the load average was not available".to_owned()
    };
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    let cold_samples = runs.iter().flat_map(|run| &run.tools).map(|tool| tool.cold_samples.len()).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "Generated by `{invocation}` ({profile} build of the bench), a run started {started}; {load}. Cold: the median of up to \
         {cold_samples} cold measures per tool (with more than one, their range in brackets). Ratios below 1 mean \
         faster than git. Raw numbers: `bench/results/latency/`.\n"
    );
    if !extras.finished || runs.iter().any(|run| !run.complete) {
        let _ = writeln!(out, "**This run was cut short: the tables hold what was measured.**\n");
    }
    let rows = targets(runs, extras);
    if !rows.is_empty() {
        let _ = writeln!(out, "| target | measured | met |\n|---|---|---|");
        for (target, measured, met) in rows {
            let _ = writeln!(out, "| {target} | {measured} | {met} |");
        }
        out.push('\n');
    }
    for run in runs {
        let _ = writeln!(out, "### {}\n", run.label);
        let rss = run.peak_rss_kib.map_or_else(|| "-".to_owned(), |kib| format!("{:.1} MB", kib as f64 / 1024.0));
        let _ =
            writeln!(out, "Process start to first answer: {:.1} ms; peak RSS: {rss}.\n", run.start_to_first_answer_ms);
        let _ = writeln!(
            out,
            "| tool | warm / git | cold / git | warm / cold | warm ms | cold ms | git ms | watched | watches ready ms | git \
             commands |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
        for tool in &run.tools {
            if tool.status != "ok" {
                let _ = writeln!(out, "| `{}` | {} | | | | | | | | |", tool.tool, tool.status);
                continue;
            }
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {:.2} | {} | {:.2} | {} | {} | `{}` |",
                tool.tool,
                ratio(tool.warm_median_ms, tool.git_median_ms),
                ratio(tool.cold_ms, tool.git_median_ms),
                ratio(tool.warm_median_ms, tool.cold_ms),
                tool.warm_median_ms,
                cold_cell(tool),
                tool.git_median_ms,
                watched_samples(tool).trim_end_matches(" watched"),
                tool.watches_ready_ms.map_or_else(|| "-".to_owned(), |ms| format!("{ms:.0}")),
                tool.git_commands.join("`; `"),
            );
        }
        let second: Vec<&ToolRun> = run.tools.iter().filter(|tool| tool.second_start_cold_ms.is_some()).collect();
        if !second.is_empty() {
            let _ = writeln!(
                out,
                "\nSecond start (`--second-start`): the first call in a new server on the first one's run dir.\n\n\
                 | tool | second-start cold / git | second-start cold / first cold | second-start cold ms |\n\
                 |---|---:|---:|---:|"
            );
            for tool in second {
                let ms = tool.second_start_cold_ms.unwrap_or_default();
                let (to_git, to_cold) = (ratio(ms, tool.git_median_ms), ratio(ms, tool.cold_ms));
                let _ = writeln!(out, "| `{}` | {to_git} | {to_cold} | {ms:.2} |", tool.tool);
            }
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
                    "| `{}` | {warm} | {cold} | {:.2} | {} | {} |",
                    ours.tool,
                    theirs.warm_median_ms,
                    cold_cell(theirs),
                    theirs.status
                );
            }
        }
        out.push('\n');
    }
    if let Some((count, peak)) = extras.many {
        let _ = writeln!(
            out,
            "Peak RSS of one server after a `repo.brief` of each of {count} repositories: {:.1} MB.\n",
            peak as f64 / 1024.0
        );
    }
    for run in extras.sweeps {
        let _ = writeln!(
            out,
            "Cache weight bound under a sweep of {} repositories (one in-process engine, `repo.brief`, `repo.status` and \
             `repo.refs` of each through the answer cache): bound {:.1} MiB, highest weight after a repository {:.2} \
             MiB, {} of the first 50 still answered from memory at the end.\n",
            run.repositories,
            run.bound_bytes as f64 / 1_048_576.0,
            run.max_weight_bytes as f64 / 1_048_576.0,
            run.still_cached_of_first_50,
        );
    }
    out
}

/// Where the generated block of the latency section begins (alone on its line).
pub(crate) const GENERATED_START: &str = "<!-- latency:generated -->";
/// Where it ends.
pub(crate) const GENERATED_END: &str = "<!-- /latency:generated -->";

/// `markdown` with `block` between its [`GENERATED_START`] and [`GENERATED_END`] lines, everything else unchanged.
/// Without the markers, they and the block are added at the end of the `## Latency` section, or, without one, in a
/// new `## Latency` section at the end. Errors (and nothing is to be written) when the markers are not one start
/// line followed by one end line.
pub(crate) fn splice(markdown: &str, block: &str) -> anyhow::Result<String> {
    let line_at = |marker: &str| {
        let found: Vec<usize> = markdown.match_indices(marker).map(|(idx, _)| idx).collect();
        match found[..] {
            [] => Ok(None),
            [idx]
                if (idx == 0 || markdown[..idx].ends_with('\n'))
                    && markdown[idx + marker.len()..].starts_with('\n') =>
            {
                Ok(Some(idx))
            }
            _ => bail!("the marker {marker} must be alone on one line, once"),
        }
    };
    let wrapped = format!("{GENERATED_START}\n{}\n{GENERATED_END}\n", block.trim_end());
    match (line_at(GENERATED_START)?, line_at(GENERATED_END)?) {
        (Some(start), Some(end)) if start < end => {
            Ok(format!("{}{wrapped}{}", &markdown[..start], &markdown[end + GENERATED_END.len() + 1..]))
        }
        (None, None) => {
            let Some(heading) = markdown.find("\n## Latency\n") else {
                return Ok(format!("{}\n\n## Latency\n\n{wrapped}", markdown.trim_end()));
            };
            let body = heading + "\n## Latency\n".len();
            let end = markdown[body..].find("\n## ").map_or(markdown.len(), |idx| body + idx + 1);
            let before = markdown[..end].trim_end();
            Ok(format!("{before}\n\n{wrapped}{}{}", if end < markdown.len() { "\n" } else { "" }, &markdown[end..]))
        }
        _ => bail!("{GENERATED_START} and {GENERATED_END} must both be there, in that order"),
    }
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

#[cfg(test)]
mod tests {
    use super::{CASES, GENERATED_END, GENERATED_START, splice};

    const HAND: &str = "# Report\n\n## Latency\n\nMethod, by hand.\n\n";
    const AFTER: &str = "\n### What limits us\n\n- by hand\n\n### A lane's subsection\n\ntext\n\n## Blame\n\nkept\n";

    /// A run rewrites only its block: the hand-written text before and after it (other lanes' subsections, the
    /// next sections) stays byte for byte, and a second run gives the same file. A splice that replaces the whole
    /// `## Latency` section, or appends a second one, fails here.
    #[test]
    fn the_generated_block_is_all_a_run_rewrites() {
        let markdown = format!("{HAND}{GENERATED_START}\nold numbers\n{GENERATED_END}\n{AFTER}");
        let once = splice(&markdown, "new numbers\n").expect("markers");
        assert_eq!(once, format!("{HAND}{GENERATED_START}\nnew numbers\n{GENERATED_END}\n{AFTER}"));
        assert_eq!(splice(&once, "new numbers").expect("markers"), once);
        assert_eq!(once.matches("## Latency").count(), 1);
    }

    /// Without markers the block goes to the end of the latency section (hand-written text kept), or into a new
    /// section at the end; a lone or misplaced marker is refused rather than guessed at.
    #[test]
    fn markers_are_added_where_missing_and_never_guessed() {
        let without = format!("{HAND}{AFTER}");
        let added = splice(&without, "numbers").expect("no markers");
        let block = format!("{GENERATED_START}\nnumbers\n{GENERATED_END}\n");
        let (before_blame, blame) = AFTER.split_at(AFTER.find("## Blame").expect("blame"));
        assert_eq!(added, format!("{HAND}{}\n\n{block}\n{blame}", before_blame.trim_end()));
        assert_eq!(splice(&added, "numbers").expect("markers now"), added);
        assert_eq!(splice("# Report\n", "numbers").expect("none"), format!("# Report\n\n## Latency\n\n{block}"));
        for broken in [
            format!("{HAND}{GENERATED_START}\nold\n{AFTER}"),
            format!("{HAND}{GENERATED_END}\nold\n{GENERATED_START}\n{AFTER}"),
            format!("{HAND}{GENERATED_START}\n{GENERATED_END}\n{GENERATED_START}\n{GENERATED_END}\n"),
            format!("{HAND}text {GENERATED_START}\nold\n{GENERATED_END}\n"),
        ] {
            assert!(splice(&broken, "numbers").is_err(), "{broken}");
        }
    }

    /// Each tool that lists N commits or entries is asked for N, and its git command asks `-n N`: a case comparing
    /// `repo.history`'s default page of 50 with `git log -n 20` fails here.
    #[test]
    fn tools_and_git_list_the_same_counts() {
        let mut checked = 0;
        for case in CASES {
            for command in case.git {
                let Some(idx) = command.iter().position(|arg| *arg == "-n") else { continue };
                let count: u64 = command[idx + 1].parse().expect("a count after -n");
                let arguments = (case.arguments)();
                let asked = ["limit", "recentCommits"].iter().find_map(|key| arguments[key].as_u64());
                assert_eq!(asked, Some(count), "{}: {command:?} vs {arguments}", case.tool);
                checked += 1;
            }
        }
        assert_eq!(checked, 3, "repo.brief, repo.history and repo.reflog");
    }
}
