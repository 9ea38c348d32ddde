//! What `tools/list` shows and how names are spelled, through the real binary: the default listing without a
//! gateway, with one, each toolset, `FLUXGIT_MCP_TOOLS`, the dotted spelling; a call answers the same by either
//! spelling; an unknown toolset or tool stops start-up with its name.

use std::process::Stdio;

use fluxgit_fixtures::Scenario;
use serde_json::{Value, json};

use crate::fake_gateway::{call, session};
use crate::support::sidecar;

/// A loopback address nothing needs to listen on: listing only asks whether a gateway is configured.
const GATEWAY: (&str, &str) = ("FLUXGIT_MCP_HANDSHAKE_ADDR", "127.0.0.1:9");

/// The names `tools/list` shows with `env`.
fn listed(env: &[(&str, &str)]) -> Vec<String> {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let responses = session(fixture.root(), env, &[json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})]);
    let tools = responses[0]["result"]["tools"].as_array().unwrap_or_else(|| panic!("a list: {}", responses[0]));
    tools.iter().map(|tool| tool["name"].as_str().expect("a name").to_owned()).collect()
}

/// The `doctor` output's names, in registry order, with the spelling of `env`.
fn every_tool() -> Vec<String> {
    let mut names = listed(&[GATEWAY]);
    names.sort();
    names
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

const GATEWAY_ONLY: [&str; 5] = [
    "safety_timeline",
    "safety_eventDetails",
    "flux_restorePoints",
    "flux_latestRestorePoint",
    "flux_restorePointDetails",
];

#[test]
fn without_a_gateway_only_what_can_answer_is_listed_with_model_safe_names() {
    let names = listed(&[]);
    assert_eq!(names.len(), 23, "{names:?}");
    assert_eq!(names[0], "repo_brief", "the brief comes first");
    for name in &names {
        let prefixed = format!("mcp__fluxgit__{name}");
        assert!(
            prefixed.len() <= 64 && prefixed.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "{prefixed}"
        );
    }
    for hidden in GATEWAY_ONLY.iter().chain(&["operation_status", "operation_cancel", "operation_preview_merge"]) {
        assert!(!names.iter().any(|name| name == hidden), "{hidden} is listed without a gateway");
    }
    for shown in ["repo_status", "diff_text", "file_blame", "repo_search", "fleet_radar", "agents_presence"] {
        assert!(names.iter().any(|name| name == shown), "{shown} is missing");
    }
}

#[test]
fn with_a_gateway_every_tool_is_listed() {
    let names = listed(&[GATEWAY]);
    assert_eq!(names.len(), 43, "{names:?}");
    for shown in GATEWAY_ONLY.iter().chain(&["operation_status", "operation_cancel", "operation_preview_branchDelete"])
    {
        assert!(names.iter().any(|name| name == shown), "{shown} is not listed with a gateway");
    }
}

#[test]
fn each_toolset_lists_its_tools_and_together_they_list_every_tool_once() {
    let sets = [
        ("core", 12),
        ("conflicts", 3),
        ("semantic", 2),
        ("files", 2),
        ("search", 1),
        ("fleet", 2),
        ("agents", 1),
        ("safety", 5),
        ("write", 15),
    ];
    let mut union = Vec::new();
    for (set, count) in sets {
        let names = listed(&[GATEWAY, ("FLUXGIT_MCP_TOOLSETS", set)]);
        assert_eq!(names.len(), count, "{set}: {names:?}");
        union.extend(names);
    }
    assert_eq!(sorted(union), every_tool(), "the toolsets cover every tool exactly once");
    assert_eq!(listed(&[("FLUXGIT_MCP_TOOLSETS", "files")]), ["file_read", "file_blame"]);
    assert!(listed(&[("FLUXGIT_MCP_TOOLSETS", "write")]).is_empty(), "write lists nothing without a gateway");
    let core_and_files = listed(&[("FLUXGIT_MCP_TOOLSETS", " core , files ")]);
    assert_eq!(core_and_files.len(), 14, "{core_and_files:?}");
}

#[test]
fn exact_tools_are_listed_in_either_spelling_beside_the_chosen_toolsets() {
    assert_eq!(listed(&[("FLUXGIT_MCP_TOOLS", "repo.status,repo_brief")]), ["repo_brief", "repo_status"]);
    let names = listed(&[("FLUXGIT_MCP_TOOLSETS", "files"), ("FLUXGIT_MCP_TOOLS", "repo_search")]);
    assert_eq!(names, ["file_read", "file_blame", "repo_search"]);
}

#[test]
fn the_dotted_spelling_lists_and_answers_with_the_dotted_names() {
    let names = listed(&[("FLUXGIT_MCP_TOOL_NAMES", "dotted")]);
    assert_eq!(names.len(), 23);
    assert!(names.iter().all(|name| name.contains('.') && !name.contains('_')), "{names:?}");
    assert_eq!(names[0], "repo.brief");

    let fixture = fluxgit_fixtures::build(Scenario::AheadBehind);
    let repo = fixture.path().to_str().expect("utf-8");
    let responses = session(
        fixture.root(),
        &[("FLUXGIT_MCP_TOOL_NAMES", "dotted")],
        &[
            call(1, "repo_brief", json!({"repoPath": repo})),
            call(2, "repo.brief", json!({"repoPath": repo, "format": "text"})),
        ],
    );
    let envelope = &responses[0]["result"]["structuredContent"];
    assert_eq!(envelope["tool"], "repo.brief", "{envelope}");
    let hints = envelope["data"]["hints"].as_array().expect("hints");
    assert!(!hints.is_empty(), "{envelope}");
    for hint in hints {
        assert!(hint["tool"].as_str().is_some_and(|tool| tool.contains('.')), "{hint}");
    }
    let text = responses[1]["result"]["content"][0]["text"].as_str().expect("text");
    let shown = hints.iter().filter_map(|hint| hint["tool"].as_str()).find(|tool| text.contains(&format!("-> {tool}")));
    assert!(shown.is_some_and(|tool| tool.contains('.')), "the text rendering names a dotted tool: {text}");
}

#[test]
fn a_call_answers_the_same_by_either_spelling() {
    let fixture = fluxgit_fixtures::build(Scenario::AheadBehind);
    let repo = fixture.path().to_str().expect("utf-8");
    let responses = session(
        fixture.root(),
        &[],
        &[
            call(1, "repo_brief", json!({"repoPath": repo})),
            call(2, "repo.brief", json!({"repoPath": repo})),
            call(3, "repo.brief", json!({"repoPath": repo, "format": "text"})),
            call(4, "operation.status", json!({"previewId": "p1"})),
            call(5, "operation_status", json!({"previewId": "p1"})),
            call(6, "repo_brief", json!({"repoPath": repo, "maxTokens": 1})),
            call(7, "repo.brief", json!({"repoPath": repo, "maxTokens": 1})),
        ],
    );
    assert_eq!(responses[0]["result"], responses[1]["result"], "the same answer by both names");
    let envelope = &responses[0]["result"]["structuredContent"];
    assert_eq!(envelope["tool"], "repo_brief", "the envelope says the listed name");
    let hints = envelope["data"]["hints"].as_array().expect("hints");
    assert!(!hints.is_empty(), "{envelope}");
    for hint in hints {
        let tool = hint["tool"].as_str().expect("a tool");
        assert!(!tool.contains('.'), "hints name listed tools: {hint}");
    }
    let text = responses[2]["result"]["content"][0]["text"].as_str().expect("text");
    let shown = hints.iter().filter_map(|hint| hint["tool"].as_str()).find(|tool| text.contains(&format!("-> {tool}")));
    assert!(shown.is_some(), "the text names a listed tool: {text}");
    assert!(!text.contains("-> repo."), "{text}");
    for response in &responses[3..5] {
        assert_eq!(response["result"]["isError"], true, "{response}");
        assert_eq!(response["result"]["structuredContent"]["error"]["code"], 10003, "{response}");
        assert_eq!(response["result"]["structuredContent"]["tool"], "operation_status", "{response}");
    }
    assert_eq!(responses[3]["result"], responses[4]["result"]);
    assert_eq!(responses[5]["error"]["code"], -32602);
    let (dotted, listed) = (&responses[6]["error"]["message"], &responses[5]["error"]["message"]);
    assert!(listed.as_str().is_some_and(|message| message.contains("repo_brief")), "{listed}");
    assert!(dotted.as_str().is_some_and(|message| message.contains("repo.brief")), "{dotted}");
}

/// Starts the server with `env` and returns its exit status and stderr: a refused configuration exits at once.
fn refused(env: &[(&str, &str)]) -> (bool, String) {
    let home = tempfile::tempdir().expect("tempdir");
    let mut command = sidecar(home.path(), home.path(), &[]);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.stdin(Stdio::null()).output().expect("run the sidecar");
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn an_unknown_toolset_tool_or_spelling_stops_start_up_with_its_name() {
    let (ok, stderr) = refused(&[("FLUXGIT_MCP_TOOLSETS", "core,gitops")]);
    assert!(!ok && stderr.contains("FLUXGIT_MCP_TOOLSETS") && stderr.contains("\"gitops\""), "{stderr}");
    assert!(stderr.contains("core, conflicts"), "the known toolsets are named: {stderr}");
    let (ok, stderr) = refused(&[("FLUXGIT_MCP_TOOLS", "repo_brief,repo_breif")]);
    assert!(!ok && stderr.contains("FLUXGIT_MCP_TOOLS") && stderr.contains("\"repo_breif\""), "{stderr}");
    let (ok, stderr) = refused(&[("FLUXGIT_MCP_TOOL_NAMES", "camelCase")]);
    assert!(!ok && stderr.contains("FLUXGIT_MCP_TOOL_NAMES") && stderr.contains("\"camelCase\""), "{stderr}");
    let (ok, _) = refused(&[("FLUXGIT_MCP_TOOL_NAMES", "underscore")]);
    assert!(ok, "`underscore` is the default spelling, named");
}

#[test]
fn doctor_says_what_is_not_listed_and_how_to_list_it() {
    let home = tempfile::tempdir().expect("tempdir");
    let output = sidecar(home.path(), home.path(), &["doctor"]).output().expect("doctor");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("tools: 23 of 43 listed"), "{text}");
    assert!(
        text.contains("operation_preview_merge (proposal, write): Propose a merge [not listed: needs a gateway]"),
        "{text}"
    );
    assert!(text.contains("set FLUXGIT_MCP_HANDSHAKE_ADDR"), "{text}");
    assert!(text.contains("FLUXGIT_MCP_TOOLSETS"), "{text}");
    let _: Value = json!(null);
}
