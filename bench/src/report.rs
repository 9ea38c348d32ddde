//! Writing one scenario's results: raw outputs, the exact commands, facts, tokens, environment and `SHA256SUMS`.
//!
//! Layout of `<results>/<scenario>/`:
//! `env.txt`, `facts.json`, `tokens.json`, `tools/NN-<tool>.json` (our `content[0].text`, byte for byte),
//! `peer/NN-<tool>.json`, `sweep/commands.sh` + `sweep/NN-<command>.txt`, the same under `counterexample/`,
//! `per-tool/{ours,text,baseline,peer}/NN-<tool>.*` with `per-tool/tokens.json` (every tool's default call),
//! and `SHA256SUMS` over all of them (`sha256sum -c SHA256SUMS` checks it). Nothing in it depends on the time of
//! the run: timings go to `BENCHMARK.md` only.

use std::fs;
use std::path::Path;

use anyhow::Context as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::cli::{self, CliRun};
use crate::run::{Call, PINNED_NOW_EPOCH_SECS, RepoRun, SIDES, ScenarioRun, ServerSide, Tokens};

/// The reason recorded for a call the server does not offer.
pub(crate) const NOT_AVAILABLE: &str = "not available in this build";

/// Writes `run` into `<results_dir>/<scenario>/`, replacing what was there.
pub(crate) fn write_scenario(results_dir: &Path, run: &ScenarioRun, git_version: &str) -> anyhow::Result<()> {
    let dir = results_dir.join(run.scenario.name);
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    fs::create_dir_all(&dir)?;

    let server = |side: &ServerSide| format!("{} {} (protocol {})", side.name, side.version, side.protocol_version);
    let env = format!(
        "scenario: {}\nrepository: {}\ngit: {git_version}\nserver: {}\npeer: {}\ntokenizers: o200k_base (headline), \
         cl100k_base\nclock: FLUXGIT_NOW_EPOCH_SECS={PINNED_NOW_EPOCH_SECS} (2026-03-01T00:00:00Z)\n",
        run.scenario.name,
        run.repo_path.display(),
        server(&run.ours),
        run.peer.as_ref().map_or_else(|| "none".to_owned(), server),
    );
    write(&dir.join("env.txt"), env.as_bytes())?;

    let tools = write_calls(&dir.join("tools"), &run.ours, "json")?;
    let tools_text = write_calls(&dir.join("tools-text"), &run.ours_text, "txt")?;
    let peer = run.peer.as_ref().map(|peer| write_calls(&dir.join("peer"), peer, "json")).transpose()?;
    let sweep = write_cli(&dir.join("sweep"), &run.sweep)?;
    let counterexample = write_cli(&dir.join("counterexample"), &run.counterexample)?;
    let brief_tokens = |side: &ServerSide| side.brief().map(|call| call.tokens);
    let tokens = json!({
        "scenario": run.scenario.name,
        "tools": tools,
        "toolsText": tools_text,
        "peer": peer,
        "sweep": sweep,
        "counterexample": counterexample,
        "totals": {
            "brief": brief_tokens(&run.ours),
            "tools": run.ours.total(),
            "briefText": brief_tokens(&run.ours_text),
            "toolsText": run.ours_text.total(),
            "sweep": run.sweep_total(),
            "counterexample": run.counterexample_total(),
            "peerBrief": run.peer.as_ref().and_then(brief_tokens),
            "peerTools": run.peer.as_ref().map(ServerSide::total),
        },
    });
    write(&dir.join("tokens.json"), pretty(&tokens)?.as_bytes())?;

    let per_tool_dir = dir.join("per-tool");
    let per_tool = &run.per_tool;
    let per_tool = json!({
        "ours": write_calls(&per_tool_dir.join("ours"), &per_tool.ours, "json")?,
        "text": write_calls(&per_tool_dir.join("text"), &per_tool.text, "txt")?,
        "baseline": per_tool.baseline.as_ref().map(|side| write_calls(&per_tool_dir.join("baseline"), side, "json")).transpose()?,
        "peer": per_tool.peer.as_ref().map(|side| write_calls(&per_tool_dir.join("peer"), side, "json")).transpose()?,
    });
    write(&per_tool_dir.join("tokens.json"), pretty(&per_tool)?.as_bytes())?;

    let facts: Vec<Value> = run
        .facts
        .iter()
        .zip(&run.carried)
        .map(|(fact, per_side)| {
            let carried: serde_json::Map<String, Value> = SIDES
                .iter()
                .zip(per_side)
                .filter_map(|(side, carried)| Some(((*side).to_owned(), serde_json::to_value(carried.as_ref()?).ok()?)))
                .collect();
            json!({"id": fact.id, "label": fact.label, "value": fact.value, "carried": carried})
        })
        .collect();
    let facts = json!({
        "scenario": run.scenario.name,
        "situation": run.scenario.situation,
        "oracle": run.truth,
        "facts": facts,
    });
    write(&dir.join("facts.json"), pretty(&facts)?.as_bytes())?;

    let sums = sha256sums(&dir)?;
    write(&dir.join("SHA256SUMS"), sums.as_bytes())
}

/// Writes `<results_dir>/repo-<label>/`: the answers of a [`RepoRun`] (`brief.json`, `brief.txt`, `peer-brief.json`)
/// and the counterexample, replacing what was there.
pub(crate) fn write_repo(results_dir: &Path, run: &RepoRun) -> anyhow::Result<()> {
    let dir = results_dir.join(format!("repo-{}", run.label));
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    fs::create_dir_all(&dir)?;
    let answer =
        |side: &ServerSide| side.brief().and_then(|call| call.answer.as_ref()).map(|answer| answer.text().to_owned());
    write(&dir.join("at.txt"), format!("{}\n", run.described).as_bytes())?;
    if let Some(text) = answer(&run.ours) {
        write(&dir.join("brief.json"), text.as_bytes())?;
    }
    if let Some(text) = answer(&run.text) {
        write(&dir.join("brief.txt"), text.as_bytes())?;
    }
    if let Some(text) = run.peer.as_ref().and_then(answer) {
        write(&dir.join("peer-brief.json"), text.as_bytes())?;
    }
    write_cli(&dir.join("counterexample"), &run.counterexample)?;
    Ok(())
}

/// Writes each answered call's exact text (files named `NN-<tool>.<extension>`); returns the calls' token records.
fn write_calls(dir: &Path, side: &ServerSide, extension: &str) -> anyhow::Result<Vec<Value>> {
    fs::create_dir_all(dir)?;
    side.calls
        .iter()
        .enumerate()
        .map(|(call_idx, call): (usize, &Call)| {
            let Some(answer) = &call.answer else {
                return Ok(json!({"tool": call.tool, "arguments": call.arguments, "status": NOT_AVAILABLE}));
            };
            let file = format!("{:02}-{}.{extension}", call_idx + 1, call.tool);
            write(&dir.join(&file), answer.text().as_bytes())?;
            Ok(json!({
                "tool": call.tool,
                "arguments": call.arguments,
                "status": answer.status(),
                "file": file,
                "tokens": call.tokens,
                "defaultMaxTokens": call.default_max_tokens,
            }))
        })
        .collect()
}

/// Writes `commands.sh` and each command's output; returns the commands' token records.
fn write_cli(dir: &Path, runs: &[(CliRun, Tokens)]) -> anyhow::Result<Vec<Value>> {
    fs::create_dir_all(dir)?;
    let mut script = String::from(
        "#!/bin/sh\n# Run in the fixture's work tree (see ../env.txt); each command's stdout and stderr are in the \
         numbered files.\n",
    );
    let mut records = Vec::new();
    for (run_idx, (run, tokens)) in runs.iter().enumerate() {
        let file = cli::file_name(run_idx, &run.args);
        script.push_str(&run.line);
        script.push('\n');
        write(&dir.join(&file), run.output.as_bytes())?;
        records.push(json!({"command": run.line, "exitCode": run.exit_code, "file": file, "tokens": tokens}));
    }
    write(&dir.join("commands.sh"), script.as_bytes())?;
    Ok(records)
}

/// `sha256sum`-format lines for every file under `dir` (sorted, relative paths), `SHA256SUMS` itself excluded.
pub(crate) fn sha256sums(dir: &Path) -> anyhow::Result<String> {
    let mut files = Vec::new();
    collect_files(dir, dir, &mut files)?;
    files.sort();
    let mut sums = String::new();
    for relative in files.iter().filter(|relative| relative.as_str() != "SHA256SUMS") {
        let bytes = fs::read(dir.join(relative))?;
        let digest = Sha256::digest(&bytes);
        let hex: String = faster_hex::hex_string(&digest);
        sums.push_str(&format!("{hex}  {relative}\n"));
    }
    Ok(sums)
}

fn collect_files(root: &Path, dir: &Path, files: &mut Vec<String>) -> anyhow::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_files(root, &path, files)?;
        } else {
            let relative = path.strip_prefix(root)?.to_str().context("result file names are UTF-8")?;
            files.push(relative.to_owned());
        }
    }
    Ok(())
}

fn pretty(value: &Value) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}
