//! `fluxgit-bench latency --audit`: what the audit ledger costs a warm `repo.brief`.
//!
//! Three servers run side by side on one repository, each a persistent session: the audit off, on and unsigned
//! (the default), on and signed. Each is warmed up (its cold call, the watcher in place, a few calls), then the
//! calls are interleaved one per server per round, the order turning each round, so that all three see the same
//! machine. The rounds run twice: on a quiet machine, and beside a process that writes 1 MiB and `fdatasync`s it in
//! a loop on the ledger's filesystem (a busy disk, where a synchronous `fdatasync` per call hurts most). The
//! report gives median and p90 per setting and their ratios to the audit off, against the target of design.md#benchmarks
//! (audit on at most 1.3x off, median and p90).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde::Serialize;
use serde_json::json;

use crate::latency::{env_for, median, millis};
use crate::mcp::Session;
use crate::watches::Covered;

/// The heading of the section this run writes in `BENCHMARK.md`.
pub(crate) const SECTION: &str = "Audit latency";

/// The target: audit on at most this many times audit off, median and p90.
const TARGET_RATIO: f64 = 1.3;

/// Bytes the noisy neighbour writes before each `fdatasync`.
const NEIGHBOUR_BYTES: usize = 1 << 20;

/// Warm calls each server makes before it is measured.
const WARMUP_CALLS: usize = 10;

/// The settings measured, in report order.
const SETTINGS: [&str; 3] = ["audit off", "audit on, unsigned (the default)", "audit on, signed"];

/// What one run measured.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Run {
    pub(crate) repo: String,
    pub(crate) calls: usize,
    /// Per phase (`quiet`, `beside a writer`), per setting, every call's milliseconds in the order made.
    pub(crate) phases: Vec<Phase>,
}

/// One phase of a run.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Phase {
    pub(crate) name: String,
    pub(crate) samples: Vec<Vec<f64>>,
    /// `fdatasync`s the neighbour completed during the phase (0 when quiet).
    pub(crate) neighbour_syncs: u64,
}

/// The `q`-quantile (nearest rank) of `samples`.
pub(crate) fn quantile(samples: &[f64], q: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Measures `calls` warm `repo.brief` per setting and phase on `repo`, with `sidecar`; `work_dir` holds the run
/// dirs, the signing key and the neighbour's file (it should be on the disk a ledger lives on, not a tmpfs).
pub(crate) fn run(
    sidecar: &Path,
    repo: &Path,
    allowed_roots: &OsString,
    work_dir: &Path,
    calls: usize,
) -> anyhow::Result<Run> {
    let _ = std::fs::remove_dir_all(work_dir);
    std::fs::create_dir_all(work_dir)?;
    let key = work_dir.join("audit.pem");
    fluxgit_audit::generate_key_pair(&key).context("generating the signing key")?;
    let covered = Covered::of(repo)?;
    let arguments = json!({"repoPath": repo.to_str().context("a UTF-8 repository path")?, "recentCommits": 10});
    let mut sessions = Vec::new();
    for (index, _) in SETTINGS.iter().enumerate() {
        let run_dir = work_dir.join(format!("run-{index}"));
        std::fs::create_dir_all(&run_dir)?;
        let mut env = env_for(allowed_roots, &run_dir);
        if index > 0 {
            env.retain(|(name, _)| *name != "FLUXGIT_MCP_AUDIT_DISABLED");
        }
        if index == 2 {
            env.push(("FLUXGIT_MCP_AUDIT_SIGN_KEY", key.clone().into_os_string()));
        }
        let mut session = Session::start(sidecar, &env)?;
        session.call("repo.brief", &arguments)?;
        if covered.wait_watched(session.pid(), Duration::from_secs(60)).is_none() {
            eprintln!("fluxgit-bench: server {index} does not watch the repository; measured anyway");
        }
        for _ in 0..WARMUP_CALLS {
            session.call("repo.brief", &arguments)?;
        }
        sessions.push(session);
    }
    let mut phases = Vec::new();
    for (name, noisy) in [("quiet", false), ("beside a 1 MiB write+fdatasync loop", true)] {
        eprintln!("fluxgit-bench: audit latency, {name} ...");
        let neighbour = if noisy { Some(Neighbour::start(&work_dir.join("neighbour.bin"))?) } else { None };
        let mut samples = vec![Vec::with_capacity(calls); SETTINGS.len()];
        for round in 0..calls {
            for turn in 0..SETTINGS.len() {
                let index = (round + turn) % SETTINGS.len();
                let started = Instant::now();
                let answer = sessions[index].call("repo.brief", &arguments)?;
                samples[index].push(millis(started));
                if answer.status() != "ok" {
                    bail!("repo.brief answered {}: {}", answer.status(), answer.text());
                }
            }
        }
        let neighbour_syncs = neighbour.map(Neighbour::stop).transpose()?.unwrap_or(0);
        phases.push(Phase { name: name.to_owned(), samples, neighbour_syncs });
    }
    // The ledgers of the audited servers verify.
    drop(sessions);
    for (index, setting) in SETTINGS.iter().enumerate().skip(1) {
        let ledger = work_dir.join(format!("run-{index}")).join("audit").join("mcp.jsonl");
        let report = fluxgit_audit::verify_audit_ledger(
            &ledger,
            &fluxgit_audit::VerifyOptions { public_keys: &[], require_signed: false },
        )
        .with_context(|| format!("the ledger of {setting} does not verify"))?;
        eprintln!("fluxgit-bench: {setting}: {} entries verified", report.entries);
    }
    Ok(Run { repo: repo.display().to_string(), calls, phases })
}

/// The `## Audit latency` section for `run`.
pub(crate) fn render(run: &Run, label: &str, invocation: &str, started: &str, built: &str) -> String {
    let mut out = format!("## {SECTION}\n\n");
    let _ = writeln!(
        out,
        "Warm `repo_brief` on {label}: three persistent servers (one per setting), {} calls each per phase, \
         interleaved one per server per round; {built}, {started}. Produced by:\n\n```\n{invocation}\n```\n",
        run.calls
    );
    let mut header = String::from("| |");
    let mut rule = String::from("|---|");
    for phase in &run.phases {
        let _ = write!(header, " {}: median / p90 | ratio to off |", phase.name);
        rule.push_str("---|---|");
    }
    let _ = writeln!(out, "{header}\n{rule}");
    let mut worst: f64 = 0.0;
    for (index, setting) in SETTINGS.iter().enumerate() {
        let _ = write!(out, "| {setting} |");
        for phase in &run.phases {
            let (base_median, base_p90) = (median(&phase.samples[0]), quantile(&phase.samples[0], 0.9));
            let (this_median, this_p90) = (median(&phase.samples[index]), quantile(&phase.samples[index], 0.9));
            let _ = write!(out, " {this_median:.2} / {this_p90:.2} ms |");
            if index == 0 {
                out.push_str(" |");
            } else {
                let (median_ratio, p90_ratio) = (this_median / base_median, this_p90 / base_p90);
                worst = worst.max(median_ratio).max(p90_ratio);
                let _ = write!(out, " {median_ratio:.2}x / {p90_ratio:.2}x |");
            }
        }
        out.push('\n');
    }
    let syncs: Vec<String> = run
        .phases
        .iter()
        .filter(|phase| phase.neighbour_syncs > 0)
        .map(|phase| format!("{} fdatasyncs of 1 MiB", phase.neighbour_syncs))
        .collect();
    if !syncs.is_empty() {
        let _ = writeln!(out, "\nThe neighbour completed {} during its phase.", syncs.join(", "));
    }
    let verdict = if worst <= TARGET_RATIO { "met" } else { "missed" };
    let _ = writeln!(
        out,
        "\nTarget: audit on at most {TARGET_RATIO}x audit off, median and p90, in every phase: **{verdict}** (worst \
         ratio {worst:.2}x)."
    );
    out
}

/// A process that writes [`NEIGHBOUR_BYTES`] and `fdatasync`s them in a loop: this binary's hidden
/// `sync-writer` mode.
struct Neighbour {
    child: Child,
    count: PathBuf,
}

impl Neighbour {
    fn start(file: &Path) -> anyhow::Result<Neighbour> {
        let child = Command::new(std::env::current_exe()?)
            .arg("sync-writer")
            .arg(file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .context("starting the writer")?;
        let mut count = file.as_os_str().to_owned();
        count.push(".count");
        // Let it start writing before the first call.
        std::thread::sleep(Duration::from_millis(200));
        Ok(Neighbour { child, count: PathBuf::from(count) })
    }

    /// Stops it; returns how many syncs it completed.
    fn stop(mut self) -> anyhow::Result<u64> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(std::fs::read_to_string(&self.count).ok().and_then(|text| text.trim().parse().ok()).unwrap_or(0))
    }
}

/// The hidden `sync-writer FILE` mode: writes 1 MiB to `file` and `fdatasync`s it, forever; after each sync the
/// count of syncs so far is written to `FILE.count`.
pub(crate) fn sync_writer(file: &Path) -> anyhow::Result<()> {
    let mut output = std::fs::File::create(file).with_context(|| format!("{}", file.display()))?;
    let mut count_path = file.as_os_str().to_owned();
    count_path.push(".count");
    let block = vec![0x5a_u8; NEIGHBOUR_BYTES];
    let mut syncs: u64 = 0;
    loop {
        use std::io::Seek as _;
        output.seek(std::io::SeekFrom::Start(0))?;
        output.write_all(&block)?;
        output.sync_data()?;
        syncs += 1;
        std::fs::write(&count_path, syncs.to_string())?;
    }
}

#[cfg(test)]
mod tests {
    use super::quantile;

    #[test]
    fn quantiles_are_nearest_rank() {
        let samples: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(quantile(&samples, 0.9), 9.0);
        assert_eq!(quantile(&samples, 0.5), 5.0);
        assert_eq!(quantile(&[3.0], 0.9), 3.0);
        assert_eq!(quantile(&[], 0.9), 0.0);
    }
}
