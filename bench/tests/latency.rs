//! `fluxgit-bench latency` on clean-small with the options the latency section's run uses: `--cold-samples` (every
//! cold measure kept, with its git run and load), the `repo.history` case asking git for the tool's page, and
//! `--markdown` rewriting only its generated block.

mod common;

use std::process::Command;

use serde_json::Value;

use common::{BIN, read_json, workspace_sidecar};

const START: &str = "<!-- latency:generated -->";
const END: &str = "<!-- /latency:generated -->";

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 }
}

fn numbers(value: &Value) -> Vec<f64> {
    value.as_array().expect("an array").iter().map(|ms| ms.as_f64().expect("a number")).collect()
}

/// Fails with a bench that measures one cold sample whatever `--cold-samples` says, that drops the load or the git
/// runs from the raw numbers, that compares `repo.history`'s 50-commit page with `git log -n 20`, or whose
/// `--markdown` rewrites more than the block between the markers.
#[test]
fn cold_samples_are_kept_and_the_hand_written_report_survives() {
    let temp = tempfile::tempdir().expect("temp dir");
    let results = temp.path().join("results");
    let markdown = temp.path().join("BENCHMARK.md");
    let before = "# Benchmarks\n\n## Latency\n\nHow it is measured, by hand.\n\n";
    let after = "\n### What limits us\n\n- by hand\n\n### A lane's subsection\n\nkept\n\n## Blame\n\nkept too\n";
    std::fs::write(&markdown, format!("{before}{START}\nold numbers\n{END}\n{after}")).expect("write");

    let output = Command::new(BIN)
        .args(["latency", "--scenario", "clean-small", "--tool", "repo.history", "--tool", "repo.brief"])
        .args(["--samples", "2", "--cold-samples", "3", "--warm-budget-secs", "1", "--watch-wait-secs", "20"])
        .arg("--fixtures-dir")
        .arg(temp.path().join("fixtures"))
        .arg("--results-dir")
        .arg(&results)
        .arg("--markdown")
        .arg(&markdown)
        .arg("--sidecar")
        .arg(workspace_sidecar())
        .output()
        .expect("run fluxgit-bench");
    assert!(output.status.success(), "fluxgit-bench failed:\n{}", String::from_utf8_lossy(&output.stderr));

    let run = read_json(&results.join("clean-small.json"));
    assert_eq!(run["complete"], true);
    let tools = run["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 2);
    for tool in tools {
        let name = tool["tool"].as_str().expect("name");
        assert_eq!(tool["status"], "ok", "{name}");
        assert!(tool["loadAverage"].is_number(), "{name}: the load before the tool");
        let samples = tool["coldSamples"].as_array().expect("coldSamples");
        assert_eq!(samples.len(), 3, "{name}: one per --cold-samples");
        for sample in samples {
            assert!(sample["ms"].as_f64().expect("ms") > 0.0, "{name}: {sample}");
            assert!(sample["gitMs"].as_f64().expect("gitMs") > 0.0, "{name}: {sample}");
            assert!(sample["loadAverage"].is_number(), "{name}: {sample}");
            assert_eq!(sample["tablesLoaded"], true, "{name}: {sample}");
        }
        let cold: Vec<f64> = samples.iter().map(|sample| sample["ms"].as_f64().expect("ms")).collect();
        assert_eq!(tool["coldMs"].as_f64(), Some(median(cold)), "{name}: coldMs is the median");
        let git = numbers(&tool["gitMs"]);
        assert_eq!(git.len(), 2 + 3, "{name}: --samples git runs, then one per round of cold samples");
        for sample in samples {
            assert!(git[2..].contains(&sample["gitMs"].as_f64().expect("gitMs")), "{name}: interleaved git run");
        }
        assert_eq!(tool["gitMedianMs"].as_f64(), Some(median(git)), "{name}: gitMedianMs");
        assert!(!numbers(&tool["warmMs"]).is_empty(), "{name}: warm calls after the last cold one");
    }
    let history = tools.iter().find(|tool| tool["tool"] == "repo.history").expect("repo.history");
    assert_eq!(history["arguments"]["limit"], 50, "the tool's default page, asked explicitly");
    let command = history["gitCommands"][0].as_str().expect("git command");
    assert!(command.starts_with("git log -n 50 "), "{command}");

    let report = std::fs::read_to_string(&markdown).expect("report");
    assert!(report.starts_with(&format!("{before}{START}\n")), "{report}");
    assert!(report.ends_with(&format!("{END}\n{after}")), "{report}");
    let block = &report[before.len()..report.len() - after.len()];
    assert!(!block.contains("old numbers"), "{block}");
    assert!(block.contains("--cold-samples 3"), "{block}");
    assert!(block.contains("| `repo.history` |") && block.contains("| `repo.brief` |"), "{block}");
    assert_eq!(report.matches("## Latency").count(), 1);
}
