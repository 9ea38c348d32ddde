//! The repo tools through the real binary over stdio: design.md#errors/§4.4 answers to bad input with the server serving
//! the next request, and repositories byte-identical after every tool.

use std::path::Path;

use fluxgit_fixtures::Scenario;
use serde_json::{Value, json};

use crate::support::{exchange, sidecar};

/// Runs one server process with `allowed_root` on newline-delimited `requests` after a legacy `initialize`; returns
/// the responses in order. HOME and the run dir live outside the root, so digests of the root see only the fixture.
pub(crate) fn session(allowed_root: &Path, requests: &[Value]) -> Vec<Value> {
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let mut input = Vec::new();
    input.extend(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "stdio-test", "version": "1"}}})
        .to_string()
        .bytes(),
    );
    input.push(b'\n');
    for request in requests {
        input.extend(request.to_string().bytes());
        input.push(b'\n');
    }
    let responses = exchange(sidecar(allowed_root, elsewhere.path(), &[]), input);
    assert_eq!(responses.len(), requests.len() + 1, "one response per request: {responses:?}");
    responses[1..].to_vec()
}

pub(crate) fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

pub(crate) fn reason(response: &Value) -> &str {
    assert_eq!(response["error"]["code"], -32602, "{response}");
    response["error"]["data"]["reason"].as_str().unwrap_or("")
}

#[test]
fn bad_repo_paths_get_their_reasons_and_the_server_serves_on() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let outside = tempfile::tempdir().expect("tempdir");
    let outside_repo = fluxgit_fixtures::build_in(Scenario::Unborn, &outside.path().join("fx"));
    let escape = root.join("escape");
    std::os::unix::fs::symlink(outside_repo.path(), &escape).expect("symlink");
    let plain = root.join("plain");
    std::fs::create_dir(&plain).expect("plain folder");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();

    let responses = session(
        &root,
        &[
            call(1, "repo_brief", json!({"repoPath": "relative/repo"})),
            call(2, "repo_brief", json!({"repoPath": root.join("missing").to_str()})),
            call(3, "repo_status", json!({"repoPath": plain.to_str()})),
            call(4, "repo_refs", json!({"repoPath": outside_repo.path().to_str()})),
            call(5, "repo_brief", json!({"repoPath": escape.to_str()})),
            call(6, "repo_brief", json!({"repoPath": repo, "maxTokens": "many"})),
            call(7, "repo_brief", json!({"repoPath": repo, "maxTokens": 199})),
            call(8, "repo_brief", json!({"repoPath": repo, "extra": true})),
            call(9, "repo.nope", json!({"repoPath": repo})),
            call(10, "repo_brief", json!({"repoPath": format!("{repo}\n")})),
            call(11, "repo_brief", json!({"repoPath": repo})),
        ],
    );
    assert_eq!(responses[0]["error"]["code"], -32602, "relative path fails the schema");
    let message = responses[0]["error"].to_string();
    assert!(message.contains("must be an absolute path") && !message.contains("[A-Za-z]"), "{message}");
    assert_eq!(reason(&responses[1]), "not_found");
    assert_eq!(reason(&responses[2]), "not_a_repository");
    assert_eq!(reason(&responses[3]), "outside_allowed_roots");
    assert_eq!(reason(&responses[4]), "outside_allowed_roots", "a symlink inside a root may not escape it");
    for (idx, what) in
        [(5, "wrong type"), (6, "under the schema minimum"), (7, "unknown argument"), (8, "unknown tool")]
    {
        assert_eq!(responses[idx]["error"]["code"], -32602, "{what}: {}", responses[idx]);
    }
    assert_eq!(reason(&responses[9]), "invalid_path");
    let ok = &responses[10]["result"];
    assert_eq!(ok["isError"], false, "{ok}");
    assert_eq!(ok["structuredContent"]["data"]["head"]["branch"], "main");
}

#[test]
fn a_linked_worktree_whose_repository_lies_outside_the_roots_is_refused() {
    let fixture = fluxgit_fixtures::build(Scenario::LinkedWorktree);
    let linked = fixture.linked_worktree().expect("linked worktree").canonicalize().expect("exists");
    // Only the linked worktree's own folder is allowed; its git dir and common dir live in the main repository.
    let responses = session(&linked, &[call(1, "repo_brief", json!({"repoPath": linked.to_str()}))]);
    assert_eq!(reason(&responses[0]), "outside_allowed_roots");
}

#[test]
fn every_tool_leaves_the_repository_byte_identical() {
    for scenario in [
        Scenario::Dirty,
        Scenario::MergeConflict,
        Scenario::Submodules,
        Scenario::FsMonitor,
        Scenario::ShallowOne,
        Scenario::BrokenSubmodules,
        Scenario::Damaged,
    ] {
        let fixture = fluxgit_fixtures::build(scenario);
        let root = fixture.root().canonicalize().expect("root");
        let before = fluxgit_fixtures::tree_digest(&root);
        let repo = fixture.path().to_str().expect("utf-8").to_owned();
        let tools = [
            ("repo_brief", json!({})),
            ("repo_scope", json!({"path": "."})),
            ("repo_status", json!({})),
            ("repo_refs", json!({})),
            ("repo_branchStack", json!({})),
            ("repo_history", json!({})),
            ("repo_reflog", json!({})),
            ("conflict_read", json!({})),
            ("commit_details", json!({"commit": "HEAD"})),
            ("worktree_changes", json!({})),
            ("worktree_list", json!({})),
            ("submodule_status", json!({})),
            ("diff_text", json!({})),
            ("repo_conflictPreflight", json!({"targetRef": "HEAD"})),
        ];
        let requests: Vec<Value> = tools
            .iter()
            .enumerate()
            .map(|(idx, (tool, arguments))| {
                let mut arguments = arguments.clone();
                arguments["repoPath"] = json!(repo);
                call(idx as i64 + 1, tool, arguments)
            })
            .collect();
        let responses = session(&root, &requests);
        for ((tool, _), response) in tools.iter().zip(&responses) {
            assert_eq!(response["result"]["isError"], false, "{}: {response}", scenario.name());
            crate::support::assert_fits_output_schema(tool, response);
        }
        assert_eq!(
            fluxgit_fixtures::tree_digest(&root),
            before,
            "{}: a read tool changed the repository",
            scenario.name()
        );
        if let Some(traps) = fixture.traps() {
            assert!(traps.sprung().is_empty(), "a repository-configured program ran: {:?}", traps.sprung());
        }
    }
}
