//! `fluxgit-bench-agents`: the latency of agent detection (`agents.presence`, issue 18) with big session stores.
//!
//! Builds a throw-away repository and home directory holding `--stores` session logs of `--store-mib` MiB each in
//! the agents' real layouts (Claude Code, Codex CLI and Gemini CLI logs in turn, every one in the repository), then
//! measures one cold detection (first sight of every store: head and tail read) and `--warm` warm ones (unchanged
//! stores: one `stat` each), and warm ones after an append to every store (only the appended bytes are read).
//! Prints one JSON object with the medians and 95th percentiles in milliseconds. The target is a warm call within
//! 20 ms with 10 stores of 50 MiB.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser as _;
use fluxgit_engine::agents::{Detector, Options, claude, gemini};
use serde_json::json;

/// Agent-detection latency with big stores.
#[derive(Debug, clap::Parser)]
#[command(name = "fluxgit-bench-agents", version, about)]
struct Args {
    /// Session logs to create.
    #[arg(long, default_value_t = 10)]
    stores: usize,
    /// Size of each log, MiB.
    #[arg(long, default_value_t = 50)]
    store_mib: u64,
    /// Warm calls measured.
    #[arg(long, default_value_t = 100)]
    warm: usize,
    /// Where the repository and home are built (removed afterwards).
    #[arg(long, default_value = "/tmp/fluxgit-bench-agents")]
    dir: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.dir.exists() {
        std::fs::remove_dir_all(&args.dir).with_context(|| format!("removing {}", args.dir.display()))?;
    }
    let root = args.dir.join("repo");
    std::fs::create_dir_all(&root)?;
    if !Command::new("git").args(["init", "-q"]).current_dir(&root).status()?.success() {
        bail!("git init failed");
    }
    let root = root.canonicalize()?;
    let home = args.dir.join("home");
    let mut logs = Vec::new();
    for index in 0..args.stores {
        let log = store_path(&home, &root, index);
        write_store(&log, &root, index, args.store_mib << 20)?;
        logs.push(log);
    }
    let options = Options {
        home: Some(home.clone()),
        codex_home: None,
        run_dirs: Vec::new(),
        proc_root: PathBuf::from("/proc"),
        own_pid: std::process::id(),
        client_name: None,
        now_ms: fluxgit_audit::now_ms(),
    };
    let detector = Detector::default();
    let started = Instant::now();
    let report = detector.detect(&root, Some("main"), &options);
    let cold = started.elapsed();
    if report.agent_count != args.stores {
        bail!("detected {} agents, expected {}: {:?}", report.agent_count, args.stores, report.diagnostics);
    }
    let warm = measure(args.warm, || {
        detector.detect(&root, Some("main"), &options);
    });
    let mut appended = Vec::new();
    for _ in 0..args.warm.min(20) {
        for (index, log) in logs.iter().enumerate() {
            let mut file = std::fs::File::options().append(true).open(log)?;
            writeln!(file, "{}", record(&root, index, 1))?;
        }
        let started = Instant::now();
        detector.detect(&root, Some("main"), &options);
        appended.push(started.elapsed());
    }
    std::fs::remove_dir_all(&args.dir)?;
    let (warm_median, warm_p95) = stats(warm);
    let (append_median, append_p95) = stats(appended);
    println!(
        "{}",
        json!({
            "stores": args.stores, "storeMiB": args.store_mib,
            "coldMs": ms(cold), "warmMedianMs": warm_median, "warmP95Ms": warm_p95,
            "afterAppendMedianMs": append_median, "afterAppendP95Ms": append_p95,
        })
    );
    Ok(())
}

/// Claude Code, Codex CLI and Gemini CLI logs in turn.
fn store_path(home: &Path, root: &Path, index: usize) -> PathBuf {
    match index % 3 {
        0 => home.join(".claude/projects").join(claude::encode(root)).join(format!("s{index}.jsonl")),
        1 => home.join(format!(".codex/sessions/2026/11/30/rollout-2026-11-30T10-00-00-{index}.jsonl")),
        _ => home.join(".gemini/tmp").join(gemini::project_hash(root)).join(format!("chats/session-{index}.jsonl")),
    }
}

/// One record of store `index`'s kind, padded with `padding` KiB of message text.
fn record(root: &Path, index: usize, padding: usize) -> serde_json::Value {
    let text = "lorem ipsum ".repeat(85 * padding);
    let file = root.join(format!("src/file{index}.rs"));
    match index % 3 {
        0 => json!({"type": "assistant", "cwd": root, "gitBranch": "main", "message": {"content": [
            {"type": "text", "text": text}, {"type": "tool_use", "name": "Edit", "input": {"file_path": file}}]}}),
        1 => json!({"type": "response_item", "payload": {"type": "function_call", "name": "apply_patch",
            "arguments": json!({"input": format!("*** Begin Patch\n*** Update File: {}\n{text}\n*** End Patch",
                file.display())}).to_string()}}),
        _ => json!({"type": "gemini", "content": text, "toolCalls": [{"name": "write_file",
            "args": {"file_path": file}}]}),
    }
}

fn write_store(log: &Path, root: &Path, index: usize, bytes: u64) -> anyhow::Result<()> {
    std::fs::create_dir_all(log.parent().context("a log has a parent")?)?;
    let mut file = std::io::BufWriter::new(std::fs::File::create(log)?);
    if index % 3 == 1 {
        let meta = json!({"type": "session_meta", "payload": {"cwd": root, "git": {"branch": "main"}}});
        writeln!(file, "{meta}")?;
    }
    let line = record(root, index, 4).to_string();
    let mut written = 0;
    while written < bytes {
        writeln!(file, "{line}")?;
        written += line.len() as u64 + 1;
    }
    file.flush()?;
    Ok(())
}

fn measure(times: usize, mut call: impl FnMut()) -> Vec<Duration> {
    (0..times)
        .map(|_| {
            let started = Instant::now();
            call();
            started.elapsed()
        })
        .collect()
}

fn stats(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at = |fraction: f64| samples.get(((samples.len() as f64 - 1.0) * fraction).round() as usize).copied();
    (at(0.5).map_or(0.0, ms), at(0.95).map_or(0.0, ms))
}

fn ms(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1_000_000.0).round() / 1000.0
}
