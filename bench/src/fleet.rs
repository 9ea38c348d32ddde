//! `fluxgit-bench fleet`: `fleet.radar` and `fleet.digest` over a generated fleet of N repositories (every radar
//! state, from `fluxgit_fixtures::fleet::build_fleet_in`), in one running server: the first call after start-up
//! (cold) and the median of the calls after it (warm), with the answer's size in tokens; the same calls on `--peer`
//! in the same run. Raw numbers go to `bench/results/fleet/`, a `## Fleet` section of `BENCHMARK.md`
//! gives ratios (`## Fleet of <N> repositories` for another fleet size than 200).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use serde::Serialize;
use serde_json::{Value, json};

use crate::latency::{env_for, median, millis, peak_rss};
use crate::mcp::Session;

/// Settings of a fleet run.
pub(crate) struct Setup {
    pub(crate) sidecar: PathBuf,
    pub(crate) peer: Option<PathBuf>,
    /// Warm calls per tool (their median is reported).
    pub(crate) samples: usize,
    /// Warm calls per tool on the peer (it can take seconds per call).
    pub(crate) peer_samples: usize,
}

/// One tool on one server.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolRun {
    pub(crate) tool: String,
    /// `ok`, `isError` or `rpcError` of the first call.
    pub(crate) status: String,
    /// Start of the server process to this tool's first answer (spawn, initialize, the call), milliseconds.
    pub(crate) cold_ms: f64,
    pub(crate) warm_median_ms: f64,
    pub(crate) warm_ms: Vec<f64>,
    /// A new server started on the same run dir after the warm calls (what the first server kept under it, e.g. the
    /// reflog movements, is there): start to the first answer, milliseconds. Not measured on a peer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) restart_ms: Option<f64>,
    /// `o200k_base` tokens of the answer's text.
    pub(crate) tokens: usize,
}

/// One server measured.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServerRun {
    pub(crate) server: String,
    pub(crate) tools: Vec<ToolRun>,
    /// Peak resident set after every call (kB), when /proc tells it.
    pub(crate) peak_rss_kib: Option<u64>,
}

/// The whole run.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FleetRun {
    pub(crate) repositories: usize,
    pub(crate) servers: Vec<ServerRun>,
}

fn cases(paths: &[String]) -> Vec<(&'static str, Value)> {
    vec![
        ("fleet.radar", json!({ "repoPaths": paths, "maxRepos": paths.len().min(500) })),
        ("fleet.digest", json!({ "repoPaths": paths, "sinceMs": 0 })),
    ]
}

fn measure(
    label: &str,
    binary: &Path,
    root: &Path,
    paths: &[String],
    samples: usize,
    restart: bool,
) -> anyhow::Result<ServerRun> {
    let mut tools = Vec::new();
    let mut peak = None;
    for (tool, arguments) in cases(paths) {
        // One server per tool, so that each tool's first call is the first read of the fleet in that server.
        let run_dir = tempfile::tempdir()?;
        let env = env_for(root.as_os_str(), run_dir.path());
        let started = Instant::now();
        let mut session = Session::start(binary, &env)?;
        let answer = session.call(tool, &arguments).with_context(|| format!("{label}: {tool}"))?;
        let cold_ms = millis(started);
        let tokens = fluxgit_engine::budget::count_tokens(answer.text());
        let mut warm = Vec::new();
        for _ in 0..samples {
            let started = Instant::now();
            session.call(tool, &arguments)?;
            warm.push(millis(started));
        }
        peak = peak.max(peak_rss(session.pid()));
        drop(session);
        let restart_ms = if restart {
            let started = Instant::now();
            let mut session = Session::start(binary, &env)?;
            session.call(tool, &arguments).with_context(|| format!("{label}: {tool} after a restart"))?;
            Some(millis(started))
        } else {
            None
        };
        tools.push(ToolRun {
            tool: tool.to_owned(),
            status: answer.status().to_owned(),
            cold_ms,
            warm_median_ms: median(&warm),
            warm_ms: warm,
            restart_ms,
            tokens,
        });
    }
    Ok(ServerRun { server: label.to_owned(), tools, peak_rss_kib: peak })
}

/// Builds `count` repositories under `dir` (emptied first) and measures both tools on our server and the peer.
pub(crate) fn run(dir: &Path, count: usize, setup: &Setup) -> anyhow::Result<FleetRun> {
    let _ = std::fs::remove_dir_all(dir);
    eprintln!("fluxgit-bench: building a fleet of {count} repositories in {} ...", dir.display());
    let fleet = fluxgit_fixtures::fleet::build_fleet_in(dir, count);
    let paths: Vec<String> = fleet.members().iter().map(|member| member.path.display().to_string()).collect();
    let mut servers =
        vec![measure("fluxgit-mcp-sidecar (this build)", &setup.sidecar, fleet.root(), &paths, setup.samples, true)?];
    if let Some(peer) = &setup.peer {
        eprintln!("fluxgit-bench: the same calls on {} ...", peer.display());
        let label = format!("peer ({})", peer.display());
        servers.push(measure(&label, peer, fleet.root(), &paths, setup.peer_samples, false)?);
    }
    Ok(FleetRun { repositories: paths.len(), servers })
}

/// The fleet size whose numbers are the `## Fleet` section and `fleet.json`; other sizes get their own.
const DEFAULT_REPOSITORIES: usize = 200;

/// The numbers file: `fleet.json` for the default 200 repositories, `fleet-<N>.json` for other sizes.
pub(crate) fn numbers_file(run: &FleetRun) -> String {
    if run.repositories == DEFAULT_REPOSITORIES {
        "fleet.json".to_owned()
    } else {
        format!("fleet-{}.json", run.repositories)
    }
}

/// The BENCHMARK.md section: `Fleet` for the default 200 repositories, `Fleet of <N> repositories` for others.
pub(crate) fn section(run: &FleetRun) -> String {
    if run.repositories == DEFAULT_REPOSITORIES {
        "Fleet".to_owned()
    } else {
        format!("Fleet of {} repositories", run.repositories)
    }
}

/// Writes the numbers file ([`numbers_file`]) into `dir`.
pub(crate) fn write_results(dir: &Path, run: &FleetRun) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let text = serde_json::to_string_pretty(run)?;
    std::fs::write(dir.join(numbers_file(run)), text + "\n")?;
    Ok(())
}

/// The fleet section of BENCHMARK.md ([`section`]): ratios first, then this machine's milliseconds.
pub(crate) fn render(run: &FleetRun, invocation: &str) -> String {
    let mut out = format!("## {}\n\n", section(run));
    let _ = writeln!(
        out,
        "`fleet.radar` and `fleet.digest` over {} generated repositories (every radar state), each tool in a server \
         of its own: cold is process start to the first answer, warm the median of the calls after it, restart a new \
         server on the same run dir (what the first one kept there) to its first answer. Reproduce: \
         `{invocation}`. Raw numbers: `bench/results/fleet/{}`.\n",
        run.repositories,
        numbers_file(run)
    );
    let ours = &run.servers[0];
    if let Some(peer) = run.servers.get(1) {
        let _ = writeln!(out, "| tool | warm: peer / ours | cold: peer / ours | tokens: ours / peer |");
        let _ = writeln!(out, "|---|---|---|---|");
        for (mine, theirs) in ours.tools.iter().zip(&peer.tools) {
            let _ = writeln!(
                out,
                "| {} | {:.0}x | {:.1}x | {:.2} |",
                mine.tool,
                theirs.warm_median_ms / mine.warm_median_ms.max(0.001),
                theirs.cold_ms / mine.cold_ms.max(0.001),
                mine.tokens as f64 / theirs.tokens.max(1) as f64
            );
        }
        out.push('\n');
    }
    let _ = writeln!(out, "| server | tool | status | cold ms | warm median ms | restart ms | tokens | peak RSS MB |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for server in &run.servers {
        for tool in &server.tools {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.1} | {:.2} | {} | {} | {} |",
                server.server,
                tool.tool,
                tool.status,
                tool.cold_ms,
                tool.warm_median_ms,
                tool.restart_ms.map_or_else(|| "-".to_owned(), |ms| format!("{ms:.1}")),
                tool.tokens,
                server.peak_rss_kib.map_or_else(|| "-".to_owned(), |kib| format!("{:.1}", kib as f64 / 1024.0))
            );
        }
    }
    out.push('\n');
    out
}
