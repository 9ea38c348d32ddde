//! Calls served concurrently through the real binary (issue 13): a fast request is not answered behind a slow
//! `diff_text`, calls sent at once come back with their own ids and the answers they get one by one,
//! `notifications/cancelled` stops a running call without a reply, and the audit ledger of 1,000 concurrent calls
//! is one chain that `verify-audit` accepts. Only the order of replies is asserted, never a duration.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use fluxgit_fixtures::Scenario;
use serde_json::{Value, json};

use crate::support::{Running, exchange, initialize, run, sidecar, tool_call};

/// `diff_text` of the 40,000 lines `Scenario::LargeDiff`'s last commit adds, with the largest patch allowed: the
/// slowest read we have on a fixture that builds in seconds (it renders and weighs 1 MiB of patch).
fn slow_diff(id: i64, repo: &str) -> Value {
    tool_call(id, "diff_text", json!({"repoPath": repo, "base": "HEAD~1", "head": "HEAD", "maxBytes": 1_048_576}))
}

fn ping(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

fn cancel(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "Escape"}})
}

fn started(root: &Path, home: &Path) -> Running {
    let mut server = Running::start(sidecar(root, home, &[]));
    let answer = server.request(&initialize("concurrency-test", "1"));
    assert_eq!(answer["id"], 0, "{answer}");
    server
}

/// Whether `response` is a successful tool result.
fn succeeded(response: &Value) -> bool {
    response["result"]["isError"] == false
}

#[test]
fn a_ping_sent_after_a_slow_diff_is_answered_first() {
    let fixture = fluxgit_fixtures::build(Scenario::LargeDiff);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("tempdir");
    let repo = fixture.path().to_str().expect("utf-8");
    let mut server = started(&root, home.path());
    server.send(&slow_diff(1, repo));
    server.send(&ping(2));
    let first = server.receive().expect("a reply");
    assert_eq!(first, json!({"jsonrpc": "2.0", "id": 2, "result": {}}), "the ping is answered first");
    let second = server.receive().expect("a reply");
    assert_eq!(second["id"], 1);
    assert!(succeeded(&second), "{second}");
    let files = second["result"]["structuredContent"]["data"]["files"].as_array().cloned().unwrap_or_default();
    assert_eq!(files.iter().filter_map(|file| file["additions"].as_u64()).sum::<u64>(), 40_000);
    let (rest, status, stderr) = server.drain();
    assert!(rest.is_empty() && status.success(), "{rest:?} {stderr}");
}

#[test]
fn ten_mixed_calls_sent_at_once_answer_as_one_by_one() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8");
    let calls = [
        tool_call(1, "repo_status", json!({"repoPath": repo})),
        tool_call(2, "diff_text", json!({"repoPath": repo})),
        tool_call(3, "repo_refs", json!({"repoPath": repo})),
        tool_call(4, "repo_history", json!({"repoPath": repo, "limit": 5})),
        tool_call(5, "commit_details", json!({"repoPath": repo, "commit": "HEAD~2"})),
        tool_call(6, "worktree_changes", json!({"repoPath": repo})),
        tool_call(7, "file_read", json!({"repoPath": repo, "path": "src/main.c"})),
        tool_call(8, "repo_status", json!({"repoPath": "/definitely/not/here"})),
        tool_call(9, "no.such.tool", json!({})),
        json!({"jsonrpc": "2.0", "id": "ten", "method": "tools/list"}),
    ];
    let mut input = format!("{}\n", initialize("concurrency-test", "1")).into_bytes();
    for call in &calls {
        input.extend(format!("{call}\n").bytes());
    }
    let home = tempfile::tempdir().expect("tempdir");
    let one_by_one = exchange(sidecar(&root, home.path(), &[]), input);
    let by_id = |responses: &[Value]| -> BTreeMap<String, Value> {
        responses.iter().map(|response| (response["id"].to_string(), response.clone())).collect()
    };
    let expected = by_id(&one_by_one[1..]);
    assert_eq!(expected.len(), calls.len(), "one answer per call: {one_by_one:?}");
    assert!(succeeded(&expected["7"]) && succeeded(&expected["2"]), "{expected:?}");

    let home = tempfile::tempdir().expect("tempdir");
    let mut server = started(&root, home.path());
    for call in &calls {
        server.send(call);
    }
    let (at_once, status, stderr) = server.drain();
    assert!(status.success(), "{stderr}");
    assert_eq!(at_once.len(), calls.len(), "one answer per call: {at_once:?}");
    assert_eq!(by_id(&at_once), expected, "the same answer for every id");
}

#[test]
fn a_cancelled_call_gets_no_reply_and_the_server_serves_on() {
    let fixture = fluxgit_fixtures::build(Scenario::LargeDiff);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("tempdir");
    let repo = fixture.path().to_str().expect("utf-8");
    let ledger = home.path().join("audit.jsonl");
    let mut command = sidecar(&root, home.path(), &[]);
    command.env_remove("FLUXGIT_MCP_AUDIT_DISABLED").env("FLUXGIT_MCP_AUDIT_LOG", &ledger);
    let mut server = Running::start(command);
    server.request(&initialize("concurrency-test", "1"));
    server.send(&slow_diff(1, repo));
    server.send(&tool_call(2, "repo_status", json!({"repoPath": repo})));
    // The status call started after the diff (calls take their slots in order) and is answered first, so the
    // diff is running when the cancel arrives.
    let status = server.receive().expect("a reply");
    assert_eq!(status["id"], 2, "{status}");
    server.send(&cancel(1));
    // Cancels of an unknown and of a finished request are ignored.
    server.send(&cancel(77));
    server.send(&cancel(2));
    server.send(&ping(3));
    let next = server.receive().expect("a reply");
    assert_eq!(next, json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
    server.send(&tool_call(4, "repo_refs", json!({"repoPath": repo})));
    let refs = server.receive().expect("a reply");
    assert_eq!(refs["id"], 4);
    assert!(succeeded(&refs), "{refs}");
    let (rest, exit, stderr) = server.drain();
    assert!(exit.success(), "{stderr}");
    assert!(rest.is_empty(), "no reply for the cancelled call: {rest:?}");

    // The engine stopped the diff: the audit records it as cancelled, not as a success.
    let entries: Vec<Value> = std::fs::read_to_string(&ledger)
        .expect("ledger")
        .lines()
        .map(|line| serde_json::from_str(line).expect("entry"))
        .collect();
    let mut summaries: Vec<&str> = entries.iter().filter_map(|entry| entry["summary"].as_str()).collect();
    // In order of completion: the diff may notice its cancel after the refs call finished.
    summaries.sort_unstable();
    // The ledger records the dotted names, whichever spelling is listed (one name per tool across its history).
    assert_eq!(summaries, ["diff.text: JSON-RPC error -32800", "repo.refs: success", "repo.status: success"]);
}

#[test]
fn the_audit_chain_of_a_thousand_concurrent_calls_verifies() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("tempdir");
    let repo = fixture.path().to_str().expect("utf-8");
    let key = home.path().join("audit.pem");
    let (code, _, stderr) = run(&["audit-keygen", key.to_str().expect("utf-8")], &[]);
    assert_eq!(code, 0, "{stderr}");
    let ledger = home.path().join("audit").join("mcp.jsonl");
    let mut command: Command = sidecar(&root, home.path(), &[]);
    command
        .env_remove("FLUXGIT_MCP_AUDIT_DISABLED")
        .env("FLUXGIT_MCP_AUDIT_LOG", &ledger)
        .env("FLUXGIT_MCP_AUDIT_SIGN_KEY", &key);
    let mut server = Running::start(command);
    server.request(&initialize("concurrency-test", "1"));
    let tools = ["repo_status", "repo_refs", "repo_history", "worktree_changes"];
    for id in 1..=1000_i64 {
        let tool = tools[usize::try_from(id).expect("small") % tools.len()];
        let path = if id % 7 == 0 { "/definitely/not/here" } else { repo };
        server.send(&tool_call(id, tool, json!({"repoPath": path})));
    }
    let (responses, status, stderr) = server.drain();
    assert!(status.success(), "{stderr}");
    let mut ids: Vec<i64> = responses.iter().filter_map(|response| response["id"].as_i64()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=1000).collect::<Vec<_>>(), "every call answered once, with its own id");

    let public_key = format!("{}.pub.pem", key.display());
    let home_env = [("HOME", home.path().as_os_str())];
    let (code, stdout, stderr) =
        run(&["verify-audit", ledger.to_str().expect("utf-8"), "--pubkey", &public_key, "--require-signed"], &home_env);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.lines().any(|line| line.split_whitespace().eq(["entries:", "1000"])), "{stdout}");
}
