//! The engine cache seen over stdio: a watched server's answers right after each change equal those of a server
//! with watching disabled (stat-validated, which reads everything changed within the racy window afresh), and
//! `repo_brief` says which mode serves the repository.

use serde_json::{Value, json};

use crate::support::{Running, initialize, sidecar, tool_call};
use fluxgit_fixtures::Scenario;

/// The tools compared, each called with only `repoPath`.
const TOOLS: [&str; 6] = ["repo_brief", "repo_status", "repo_refs", "repo_history", "repo_reflog", "worktree_changes"];

fn data(response: &Value) -> Value {
    assert_eq!(response["result"]["isError"], false, "{response}");
    let mut data = response["result"]["structuredContent"]["data"].clone();
    if let Some(object) = data.as_object_mut() {
        object.remove("diagnostics");
    }
    data
}

#[test]
fn watched_answers_equal_fresh_reads_after_each_change() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let home = tempfile::tempdir().expect("tempdir");
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let mut watched = Running::start(sidecar(&root, home.path(), &[]));
    let mut unwatched_command = sidecar(&root, home.path(), &[]);
    unwatched_command.env("FLUXGIT_ENGINE_WATCH_DISABLED", "");
    let mut unwatched = Running::start(unwatched_command);
    watched.request(&initialize("cache-test", "1"));
    unwatched.request(&initialize("cache-test", "1"));

    let brief = watched.request(&tool_call(1, "repo_brief", json!({"repoPath": repo})));
    assert!(brief["result"]["structuredContent"]["data"].get("diagnostics").is_none(), "watched: no diagnostics");
    let brief = unwatched.request(&tool_call(1, "repo_brief", json!({"repoPath": repo})));
    let diagnostics = &brief["result"]["structuredContent"]["data"]["diagnostics"];
    assert_eq!(diagnostics["cache"], "stat-validated", "{diagnostics}");
    assert!(diagnostics["reason"].as_str().is_some_and(|reason| reason.contains("FLUXGIT_ENGINE_WATCH_DISABLED")));

    let path = fixture.path();
    for round in 0..24_usize {
        // Warm every tool, then change the repository and ask at once.
        for tool in TOOLS {
            watched.request(&tool_call(2, tool, json!({"repoPath": repo})));
        }
        match round % 6 {
            0 => std::fs::write(path.join(format!("new-{round}.txt")), "x\n").expect("write"),
            1 => {
                fixture.git(&["add", "-A"]);
            }
            2 => {
                fixture.git(&["commit", "-q", "-m", &format!("feat: round {round}")]);
            }
            3 => {
                fixture.git(&["branch", &format!("topic/{round}")]);
            }
            4 => {
                std::fs::write(path.join("README.md"), format!("edited {round}\n")).expect("write");
            }
            _ => {
                fixture.git(&["stash", "push", "-q", "-m", &format!("wip {round}")]);
            }
        }
        for tool in TOOLS {
            let ours = watched.request(&tool_call(3, tool, json!({"repoPath": repo})));
            let truth = unwatched.request(&tool_call(3, tool, json!({"repoPath": repo})));
            assert_eq!(data(&ours), data(&truth), "round {round}: {tool} stale");
        }
    }
    for server in [watched, unwatched] {
        let (status, stderr) = server.finish();
        assert!(status.success(), "{stderr}");
    }
}

#[test]
fn doctor_shows_the_watcher_and_how_a_repository_is_served() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let home = tempfile::tempdir().expect("tempdir");
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8");
    let output = sidecar(&root, home.path(), &["doctor", repo]).output().expect("doctor runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("watcher: on"), "{stdout}");
    assert!(stdout.contains(&format!("{repo}: watched")), "{stdout}");
    assert!(stdout.contains("watcher running: 1 repositories (1 watched, 0 stat-validated)"), "{stdout}");

    let mut disabled = sidecar(&root, home.path(), &["doctor", repo]);
    disabled.env("FLUXGIT_ENGINE_WATCH_DISABLED", "1");
    let output = disabled.output().expect("doctor runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(&format!("{repo}: stat-validated: watching disabled")), "{stdout}");
}

/// A call opens its repository once: a tool whose answers are kept resolves the repository to look its answer up
/// and lends that handle to its handler (it opened it a second time, which was a third of a cold first call of the
/// small tools). Answers are unchanged: each equals the answer of a fresh engine that opens the repository anew.
#[test]
fn a_call_opens_its_repository_once() {
    use fluxgit_engine::{Engine, Options};
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let registry = fluxgit_mcp_sidecar::tools::registry().expect("registry");
    let repo = fixture.path().to_str().expect("utf-8");
    for (tool, arguments) in [
        ("repo_history", json!({"repoPath": repo})),
        ("repo_reflog", json!({"repoPath": repo})),
        ("commit_details", json!({"repoPath": repo, "commit": "HEAD"})),
        ("worktree_list", json!({"repoPath": repo})),
        ("repo_status", json!({"repoPath": repo})),
    ] {
        let engine = Engine::new(Options { allowed_roots: vec![root.clone()] });
        let first = crate::budget::call(&registry, &engine, tool, arguments.clone()).expect("answers");
        assert!(!first.is_error, "{tool}: {}", first.text);
        assert_eq!(engine.opened(), 1, "{tool}: the first call opens the repository once");
        let again = Engine::new(Options { allowed_roots: vec![root.clone()] });
        let fresh = crate::budget::call(&registry, &again, tool, arguments.clone()).expect("answers");
        assert_eq!(first.text, fresh.text, "{tool}");
    }
}
