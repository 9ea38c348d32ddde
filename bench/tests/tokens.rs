//! Issue 6: `fluxgit-bench tokens` on two small scenarios, run twice: identical outputs and checksums, every
//! fact the brief claims equal to the oracle's value, and the brief within its default budget.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use common::{BIN, read_json, workspace_sidecar};

/// `repo.brief`'s default `maxTokens`.
const BRIEF_DEFAULT_BUDGET: usize = 600;

const SCENARIOS: [&str; 2] = ["clean-small", "merge-conflict"];

/// Runs the harness on [`SCENARIOS`] with fixtures in `fixtures` and results in `results`.
fn run_harness(fixtures: &Path, results: &Path) {
    let mut command = Command::new(BIN);
    command.arg("tokens");
    for scenario in SCENARIOS {
        command.args(["--scenario", scenario]);
    }
    command.arg("--fixtures-dir").arg(fixtures).arg("--results-dir").arg(results);
    command.arg("--markdown").arg(results.join("BENCHMARK.md"));
    command.arg("--sidecar").arg(workspace_sidecar());
    let output = command.output().expect("run fluxgit-bench");
    assert!(output.status.success(), "fluxgit-bench failed:\n{}", String::from_utf8_lossy(&output.stderr));
}

/// Checks every line of `SHA256SUMS` against the file it names; returns the listed paths.
fn verified_sums(dir: &Path) -> Vec<String> {
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).expect("SHA256SUMS");
    sums.lines()
        .map(|line| {
            let (hex, relative) = line.split_once("  ").expect("sha256sum format");
            let digest = Sha256::digest(std::fs::read(dir.join(relative)).expect("listed file exists"));
            let actual: String = faster_hex::hex_string(&digest);
            assert_eq!(actual, hex, "{relative}");
            relative.to_owned()
        })
        .collect()
}

#[test]
fn issue_6_token_harness_is_reproducible_and_agrees_with_the_oracle() {
    let temp = tempfile::tempdir().expect("temp dir");
    let fixtures = temp.path().join("fixtures");
    let runs: Vec<PathBuf> = ["first", "second"].iter().map(|name| temp.path().join(name)).collect();
    for results in &runs {
        run_harness(&fixtures, results);
    }

    for scenario in SCENARIOS {
        let (first, second) = (runs[0].join(scenario), runs[1].join(scenario));
        let listed = verified_sums(&first);
        verified_sums(&second);
        for expected in ["env.txt", "facts.json", "tokens.json", "tools/01-repo.brief.json", "sweep/commands.sh"] {
            assert!(listed.iter().any(|file| file == expected), "{scenario}: {expected} is checksummed: {listed:?}");
        }
        assert_eq!(
            std::fs::read_to_string(first.join("SHA256SUMS")).expect("first"),
            std::fs::read_to_string(second.join("SHA256SUMS")).expect("second"),
            "{scenario}: two runs give the same outputs"
        );
        check_brief_against_oracle(scenario, &first);
        check_fact_matching(scenario, &first);
    }

    // The report names both scenarios; only its build times may differ between runs.
    let reports: Vec<String> =
        runs.iter().map(|dir| std::fs::read_to_string(dir.join("BENCHMARK.md")).expect("BENCHMARK.md")).collect();
    let without_times = |report: &str| report.split("## Timings").next().unwrap_or_default().to_owned();
    assert_eq!(without_times(&reports[0]), without_times(&reports[1]));
    for scenario in SCENARIOS {
        assert!(reports[0].contains(&format!("| {scenario} |")), "{scenario} row in BENCHMARK.md");
    }
}

/// Every value the brief states equals the oracle's, and the brief fits its default budget.
fn check_brief_against_oracle(scenario: &str, dir: &Path) {
    let text = std::fs::read_to_string(dir.join("tools/01-repo.brief.json")).expect("brief");
    let tokens = fluxgit_engine::budget::count_tokens(&text);
    assert!(tokens <= BRIEF_DEFAULT_BUDGET, "{scenario}: brief of {tokens} tokens over {BRIEF_DEFAULT_BUDGET}");
    let recorded = &read_json(&dir.join("tokens.json"))["tools"][0];
    assert_eq!(recorded["tool"], "repo.brief");
    assert_eq!(recorded["tokens"]["o200k"], tokens, "{scenario}: tokens.json counts the exact text");
    assert_eq!(recorded["defaultMaxTokens"], BRIEF_DEFAULT_BUDGET, "{scenario}: the advertised default");
    // Every other tool answered (as they land: conflict.read, ...) fits the default budget it advertises too.
    for call in read_json(&dir.join("tokens.json"))["tools"].as_array().expect("tools") {
        if let (Some(budget), Some(file)) = (call["defaultMaxTokens"].as_u64(), call["file"].as_str()) {
            let text = std::fs::read_to_string(dir.join("tools").join(file)).expect("answer file");
            let tokens = fluxgit_engine::budget::count_tokens(&text) as u64;
            assert!(tokens <= budget, "{scenario}: {} answered {tokens} tokens over {budget}", call["tool"]);
        }
    }

    let oracle = &read_json(&dir.join("facts.json"))["oracle"];
    let brief: Value = serde_json::from_str(&text).expect("the brief is JSON");
    let data = &brief["data"];
    let head = &data["head"];
    // Compact JSON (design.md#envelope): an absent field has its default (null, 0, false, empty).
    let or = |value: &Value, default: Value| if value.is_null() { default } else { value.clone() };
    assert_eq!(head["branch"], oracle["branch"], "{scenario}: branch");
    assert_eq!(or(&head["detached"], json!(false)), oracle["detached"], "{scenario}: detached");
    let sha = head["sha"].as_str().expect("sha");
    assert!(sha.len() >= 7 && oracle["head"].as_str().expect("oracle head").starts_with(sha), "{scenario}: sha");
    assert_eq!(head["upstream"], oracle["upstream"], "{scenario}: upstream");
    // Without an upstream the brief says 0 and 0 where the oracle has nothing.
    assert_eq!(or(&head["ahead"], json!(0)), oracle["ahead"].as_u64().unwrap_or(0), "{scenario}: ahead");
    assert_eq!(or(&head["behind"], json!(0)), oracle["behind"].as_u64().unwrap_or(0), "{scenario}: behind");
    assert_eq!(data["operationInProgress"], oracle["operation"], "{scenario}: operation");
    for key in ["staged", "unstaged", "untracked", "conflicted"] {
        let expected = oracle[key].as_array().expect("oracle path list").len();
        assert_eq!(or(&data["workingTree"][key], json!(0)), expected, "{scenario}: {key} count");
    }
    assert_eq!(or(&data["stashes"], json!(0)), oracle["stashes"], "{scenario}: stashes");
    let oracle_submodules = oracle["submodules"].as_array().expect("oracle submodules");
    assert_eq!(or(&data["submodules"]["total"], json!(0)), oracle_submodules.len(), "{scenario}: submodules");
    let commits = data["recentCommits"].as_array().expect("recentCommits");
    let oracle_commits = oracle["recentCommits"].as_array().expect("oracle commits");
    assert_eq!(commits.len(), oracle_commits.len(), "{scenario}: recent commits (none cut at the default budget)");
    for (commit, truth) in commits.iter().zip(oracle_commits) {
        let (sha, subject) = commit.as_str().and_then(|line| line.split_once(' ')).expect("\"<sha> <subject>\"");
        assert!(truth[0].as_str().expect("oracle sha").starts_with(sha), "{scenario}: {commit} vs {truth}");
        assert_eq!(subject, truth[1], "{scenario}: subject");
    }
}

/// The value matcher finds every checklist fact in the brief (conflicted paths excepted: the brief carries their
/// count; their names come from `conflict.read` once this build has it) and in the raw sweep, and the
/// counterexample's known blind spots show.
fn check_fact_matching(scenario: &str, dir: &Path) {
    let facts = read_json(&dir.join("facts.json"));
    let tools = read_json(&dir.join("tokens.json"))["tools"].clone();
    let conflict_read_available =
        tools.as_array().expect("tools").iter().any(|call| call["tool"] == "conflict.read" && call["status"] == "ok");
    let carried: BTreeMap<String, &Value> = facts["facts"]
        .as_array()
        .expect("facts")
        .iter()
        .map(|fact| (fact["id"].as_str().expect("id").to_owned(), &fact["carried"]))
        .collect();
    assert!(carried.len() >= 7, "{scenario}: a real checklist: {carried:?}");
    for (id, sides) in &carried {
        assert_eq!(sides["sweep"]["carried"], true, "{scenario}: the sweep carries {id}");
        if id.starts_with("conflictedPath:") {
            assert_eq!(sides["tools"]["carried"], conflict_read_available, "{scenario}: {id} via conflict.read");
        } else {
            assert_eq!(sides["brief"]["carried"], true, "{scenario}: the brief carries {id}");
            assert_eq!(sides["briefText"]["carried"], true, "{scenario}: the text brief carries {id}");
        }
    }
    if scenario == "merge-conflict" {
        assert_eq!(carried["operation"]["counterexample"]["carried"], false, "`git status -sb` never says merge");
        assert_eq!(carried["conflicted"]["counterexample"]["carried"], true, "UU lines count the conflicts");
    }
}
