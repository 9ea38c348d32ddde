//! Issue 35: `fluxgit-bench tasks --check` runs two agent tasks on a repository built by git commands (no clone)
//! through the real sidecar, so the task harness cannot rot: the expert's commands find every fact the oracle
//! computed, every call answers, the brief answers both itself (issue 35), and the results name each fact with
//! where it was found.

mod common;

use std::process::Command;

use common::{BIN, read_json, workspace_sidecar};

#[test]
fn issue_35_task_harness_checks_every_fact_on_both_sides() {
    let temp = tempfile::tempdir().expect("temp dir");
    let output = Command::new(BIN)
        .args(["tasks", "--check", "--work-dir"])
        .arg(temp.path())
        .arg("--sidecar")
        .arg(workspace_sidecar())
        .output()
        .expect("run fluxgit-bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "fluxgit-bench tasks --check failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for task in ["rebase-conflict", "lost-commits"] {
        assert!(stdout.contains(&format!("| {task} |")), "{task} row:\n{stdout}");
    }
    assert!(stdout.contains("| **total** |"), "a totals row:\n{stdout}");

    let results = read_json(&temp.path().join("check-results/tasks.json"));
    let tasks = results["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 2);
    for task in tasks {
        let name = task["task"].as_str().expect("name");
        let facts = task["facts"].as_array().expect("facts");
        assert!(facts.len() >= 6, "{name}: a real checklist: {facts:?}");
        assert!(facts.iter().all(|fact| fact["git"] == true), "{name}: the expert finds every fact");
        let calls = task["ours"].as_array().expect("calls");
        assert_eq!(calls[0]["tool"], "repo_brief", "{name}: the path starts with the brief");
        assert_eq!(calls[0]["arguments"]["format"], "text", "{name}: read as text");
        // Both scenarios are the checkout's state, which the brief answers itself: its text shows no hint, and
        // with every fact read the agent makes no task call.
        assert_eq!(calls.len(), 1, "{name}: the brief alone: {calls:?}");
        assert!(facts.iter().all(|fact| fact["ours"] == true), "{name}: the brief finds every fact: {facts:?}");
        for call in calls {
            assert!(call["tokens"]["o200k"].as_u64().expect("tokens") > 0, "{name}: {call}");
        }
    }
}
