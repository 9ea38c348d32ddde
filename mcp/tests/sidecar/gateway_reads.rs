//! The gateway-only tools and the semantic diff against a fake gateway: 10001 without one, its answers passed on as
//! they came, 10002 when it has nothing usable; `diff.semantic` answers from the local tree-sitter engine and asks
//! the gateway only when no changed file has a grammar, keeping its local answer when the gateway's is malformed.

use fluxgit_fixtures::Scenario;
use serde_json::{Value, json};

use crate::fake_gateway::{FakeGateway, Reply, Request, call, envelope, product_error, session};
use crate::support::assert_fits_output_schema;

const GATEWAY_ONLY: [&str; 5] = [
    "safety_timeline",
    "safety_eventDetails",
    "flux_restorePoints",
    "flux_latestRestorePoint",
    "flux_restorePointDetails",
];

fn restore_point(id: &str) -> Value {
    json!({"id": id, "createdAt": "2026-01-01T00:00:00.000Z", "operationType": "reset", "previewId": "p1",
        "refs": [{"name": "refs/heads/main", "before": "a", "after": "b"}], "headBefore": "a", "snapshot": "c",
        "canUndo": true})
}

fn semantic_answer() -> Value {
    json!({"supported": true, "engine": {"name": "fake-engine", "version": "1"},
        "files": [
            {"path": "src/main.c", "fallbackToText": false, "hunks": [{"header": "fn main", "lines": [
                {"type": "changed", "oldLine": 3, "newLine": 3, "content": "b", "oldContent": "a",
                 "changedTokens": ["b"], "oldChangedTokens": ["a"]}]}]},
            {"path": "data/legacy.txt", "fallbackToText": true, "reason": "not a supported language"}],
        "changedFiles": 2, "filesTruncated": false})
}

fn gateway(request: &Request) -> Reply {
    let path = request.path.split('?').next().unwrap_or_default();
    match path {
        "/v1/mcp/safety/timeline" => Reply::json(
            200,
            json!({"events": [{"id": "e1", "kind": "restore_point",
            "at": "2026-01-01T00:00:00.000Z", "operationType": "reset", "summary": "before reset", "refs": []}]}),
        ),
        "/v1/mcp/safety/events/latest" | "/v1/mcp/safety/events/e1" => {
            Reply::json(200, json!({"id": "e1", "kind": "operation", "at": "2026-01-01T00:00:00.000Z"}))
        }
        "/v1/mcp/restore-points" => {
            Reply::json(200, json!({"restorePoints": [restore_point("r2"), restore_point("r1")]}))
        }
        "/v1/mcp/restore-points/latest" => Reply::json(200, json!({})),
        "/v1/mcp/restore-points/r1" => Reply::json(200, restore_point("r1")),
        "/v1/mcp/diff/semantic" => match request.json()["path"].as_str() {
            Some("malformed") => {
                Reply::json(200, json!({"supported": true, "files": [{"path": "x", "fallbackToText": false}]}))
            }
            Some("empty") => Reply { status: 200, body: String::new(), headers: vec![], delay: Default::default() },
            _ => Reply::json(200, semantic_answer()),
        },
        _ => Reply::json(404, json!({"reason": "not_found"})),
    }
}

#[test]
fn without_a_gateway_gateway_only_tools_answer_10001_and_semantic_falls_back() {
    let fixture = fluxgit_fixtures::build(Scenario::Dirty);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().canonicalize().expect("repo").to_str().expect("utf-8").to_owned();
    let mut requests: Vec<Value> =
        GATEWAY_ONLY.iter().enumerate().map(|(idx, tool)| call(idx + 1, tool, json!({"repoPath": repo}))).collect();
    let selection = json!({"repoPath": repo, "base": "HEAD~1", "head": "WORKTREE", "path": "src"});
    requests.push(call(10, "diff_semantic", selection.clone()));
    requests.push(call(11, "diff_semanticFallbacks", json!({"repoPath": repo})));
    requests.push(call(12, "diff_semantic", json!({"repoPath": repo, "base": "no-such-branch"})));
    requests.push(call(13, "diff_semantic", json!({"repoPath": repo, "path": "../outside"})));
    let responses = session(&root, &[], &requests);
    assert_eq!(responses[7]["error"]["data"]["reason"], "unknown_revision", "{}", responses[7]);
    assert_eq!(responses[8]["error"]["data"]["reason"], "invalid_path", "{}", responses[8]);
    for (tool, response) in GATEWAY_ONLY.iter().zip(&responses) {
        let (code, data) = product_error(response);
        assert_eq!(code, 10001, "{tool}");
        assert!(data["upgradeHint"].as_str().is_some_and(|hint| hint.contains("FLUXGIT_MCP_HANDSHAKE_ADDR")), "{tool}");
    }
    let (semantic, is_error) = envelope(&responses[5]);
    assert!(!is_error);
    assert_eq!(semantic["source"], "local-tree-sitter");
    assert_eq!(semantic["data"]["supported"], true);
    let files = semantic["data"]["files"].as_array().expect("files");
    let main = files.iter().find(|file| file["path"] == "src/main.c").expect("src/main.c changed since HEAD~1");
    // Parsed as C, the extension's language, so neither `language` nor `fallback` is said.
    assert!(main.get("fallback").is_none() && main.get("language").is_none(), "{main}");
    let (fallbacks, _) = envelope(&responses[6]);
    assert_eq!(fallbacks["source"], "local-tree-sitter");
    let fallbacks = fallbacks["data"]["fallbacks"].as_array().expect("fallbacks");
    let legacy = fallbacks.iter().find(|file| file["path"] == "data/legacy.txt").expect("a .txt file falls back");
    assert_eq!(legacy["reason"], "unsupported_language");
}

#[test]
fn a_gateway_serves_restore_points_timeline_and_semantic_diffs() {
    let fake = FakeGateway::start(gateway);
    let fixture = fluxgit_fixtures::build(Scenario::Dirty);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().canonicalize().expect("repo").to_str().expect("utf-8").to_owned();
    let env = [("FLUXGIT_MCP_HANDSHAKE_ADDR", fake.address())];
    let env: Vec<(&str, &str)> = env.iter().map(|(name, value)| (*name, value.as_str())).collect();
    let responses = session(
        &root,
        &env,
        &[
            call(1, "safety_timeline", json!({"repoPath": repo, "limit": 5, "includeReflog": false})),
            call(2, "safety_eventDetails", json!({"repoPath": repo})),
            call(3, "safety_eventDetails", json!({"repoPath": repo, "eventId": "e1"})),
            call(4, "flux_restorePoints", json!({"repoPath": repo})),
            call(5, "flux_latestRestorePoint", json!({"repoPath": repo})),
            call(6, "flux_restorePointDetails", json!({"repoPath": repo, "restorePointId": "r1"})),
            call(7, "flux_restorePointDetails", json!({"repoPath": repo, "restorePointId": "gone"})),
            call(8, "diff_semantic", json!({"repoPath": repo, "base": "HEAD", "path": "data"})),
            call(9, "diff_semantic", json!({"repoPath": repo, "base": "HEAD"})),
            call(10, "diff_semantic", json!({"repoPath": repo, "path": "malformed"})),
            call(11, "diff_semantic", json!({"repoPath": repo, "path": "empty"})),
            call(12, "safety_eventDetails", json!({"repoPath": repo, "eventId": "../x"})),
            call(13, "diff_semantic", json!({"repoPath": repo, "base": "--output=/tmp/x"})),
        ],
    );
    for (request, response) in requests_of(&responses).iter().zip(&responses) {
        if response.get("result").is_some() {
            assert_fits_output_schema(request, response);
        }
    }
    let ok = |idx: usize| {
        let (envelope, is_error) = envelope(&responses[idx]);
        assert!(!is_error, "{}", responses[idx]);
        envelope
    };
    let timeline = ok(0);
    assert_eq!((timeline["source"].as_str(), timeline["readOnly"].as_bool()), (Some("fluxgit-gateway"), Some(true)));
    assert_eq!(timeline["data"]["events"][0]["id"], "e1");
    assert_eq!(ok(1)["data"]["id"], "e1");
    assert_eq!(ok(2)["data"]["kind"], "operation");
    assert_eq!(ok(3)["data"]["restorePoints"][1], restore_point("r1"));
    let (code, data) = product_error(&responses[4]);
    assert_eq!((code, data["reason"].as_str()), (10002, Some("malformed_reply")), "an answer without an id");
    assert_eq!(ok(5)["data"], restore_point("r1"));
    let (code, data) = product_error(&responses[6]);
    assert_eq!((code, data["reason"].as_str()), (10002, Some("not_found")));

    // Only `data/legacy.txt` changed under `data`, and no grammar reads it: the gateway's answer is passed on.
    let semantic = ok(7);
    assert_eq!(semantic["source"], "fluxgit-gateway");
    assert_eq!(semantic["data"]["supported"], true);
    assert_eq!(semantic["data"]["files"][0]["hunks"][0]["header"], "fn main");
    // The C files changed since HEAD are the local engine's to answer.
    let local = ok(8);
    assert_eq!(
        (local["source"].as_str(), local["data"]["supported"].as_bool()),
        (Some("local-tree-sitter"), Some(true))
    );
    for idx in [9, 10] {
        let nothing = ok(idx);
        assert_eq!(nothing["source"], "local-tree-sitter");
        // `changedFiles` is said only when the budget cut the files: no file, no field.
        let data = nothing["data"].as_object().expect("data");
        assert!(!["files", "noGrammar", "changedFiles"].iter().any(|key| data.contains_key(*key)), "{nothing}");
    }
    assert_eq!(responses[11]["error"]["code"], -32602, "an unsafe eventId fails the schema");
    assert_eq!(responses[12]["error"]["data"]["reason"], "invalid_revision");

    let paths: Vec<String> = fake.requests().iter().map(|request| request.path.clone()).collect();
    let encoded: String = repo
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (byte as char).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect();
    assert_eq!(
        paths[0],
        format!(
            "/v1/mcp/safety/timeline?repoPath={encoded}&limit=5&includeReflog=false&includeRestorePoints=true&reflogLimit=20"
        )
    );
    let semantic_requests = paths.iter().filter(|path| path.starts_with("/v1/mcp/diff/semantic")).count();
    assert_eq!(semantic_requests, 1, "the gateway is asked only for what the local engine cannot parse: {paths:?}");
    assert_eq!(paths.len(), 8, "nothing sent for the two refused calls: {paths:?}");
}

#[test]
fn an_unreachable_gateway_is_10002_for_gateway_only_tools() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = closed.local_addr().expect("address").to_string();
    drop(closed);
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let responses = session(
        &root,
        &[("FLUXGIT_MCP_HANDSHAKE_ADDR", &address)],
        &[
            call(1, "flux_restorePoints", json!({"repoPath": repo})),
            call(2, "diff_semantic", json!({"repoPath": repo})),
        ],
    );
    let (code, data) = product_error(&responses[0]);
    assert_eq!((code, data["reason"].as_str()), (10002, Some("unreachable")));
    // The semantic diff needs no gateway: the local engine answers (nothing changed in a clean work tree).
    let (local, is_error) = envelope(&responses[1]);
    assert!(!is_error);
    assert_eq!(
        (local["source"].as_str(), local["data"]["supported"].as_bool()),
        (Some("local-tree-sitter"), Some(true))
    );
}

/// The tool names of the calls in `a_gateway_serves_restore_points_timeline_and_semantic_diffs`, in order.
fn requests_of(responses: &[Value]) -> Vec<&'static str> {
    let tools = [
        "safety_timeline",
        "safety_eventDetails",
        "safety_eventDetails",
        "flux_restorePoints",
        "flux_latestRestorePoint",
        "flux_restorePointDetails",
        "flux_restorePointDetails",
        "diff_semantic",
        "diff_semantic",
        "diff_semantic",
        "diff_semantic",
        "safety_eventDetails",
        "diff_semantic",
    ];
    assert_eq!(tools.len(), responses.len());
    tools.to_vec()
}
