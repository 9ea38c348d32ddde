//! `agents_presence` and previews' `otherAgents` through the real binary (issue 18): a fixture home with a Claude
//! Code session in the repository (a secret planted in its prompt, reply and tool output), the tool's answer and
//! budget, 10011 when detection is disabled, and the overlap on proposals against the fake gateway.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use crate::fake_gateway::{FakeGateway, accepting, envelope, product_error};
use crate::support::{assert_fits_output_schema, exchange, sidecar};

const SECRET: &str = "SECRET-51c0-do-not-leak";
const DISABLED: &str = "FLUXGIT_MCP_AGENT_DETECTION_DISABLED";

struct Setup {
    _temp: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    home: PathBuf,
}

fn setup() -> Setup {
    let temp = tempfile::tempdir().expect("tempdir");
    let base = temp.path().canonicalize().expect("canonical");
    let root = base.join("repo");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    std::fs::write(root.join("src/lib.rs"), "x\n").expect("write");
    for args in [&["init", "-q", "-b", "main"][..], &["add", "."], &["commit", "-q", "-m", "init"]] {
        let status = Command::new("git")
            .args(args)
            .current_dir(&root)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &base)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .status()
            .expect("git");
        assert!(status.success());
    }
    let home = base.join("home");
    let encoded: String =
        root.display().to_string().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let log = home.join(".claude/projects").join(encoded).join("session.jsonl");
    std::fs::create_dir_all(log.parent().expect("parent")).expect("mkdir");
    let mut file = std::fs::File::create(&log).expect("create");
    for record in [
        json!({"type": "user", "cwd": root, "gitBranch": "feature/a", "message": {"role": "user", "content": SECRET}}),
        json!({"type": "assistant", "cwd": root, "gitBranch": "feature/a", "message": {"content": [
            {"type": "text", "text": SECRET},
            {"type": "tool_use", "name": "Edit", "input": {"file_path": root.join("src/lib.rs"), "new_string": SECRET}}]}}),
        json!({"type": "user", "cwd": root, "gitBranch": "feature/a", "message": {"content": [
            {"type": "tool_result", "content": SECRET}]}}),
    ] {
        writeln!(file, "{record}").expect("write");
    }
    Setup { _temp: temp, base, root, home }
}

fn run(setup: &Setup, env: &[(&str, &str)], requests: &[Value]) -> Vec<Value> {
    let mut command = sidecar(&setup.base, &setup.home, &[]);
    for (name, value) in env {
        command.env(name, value);
    }
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "codex-mcp-client", "version": "1"}}});
    let mut input = Vec::new();
    for message in std::iter::once(&initialize).chain(requests) {
        input.extend(message.to_string().bytes());
        input.push(b'\n');
    }
    let responses = exchange(command, input);
    assert_eq!(responses.len(), requests.len() + 1, "{responses:?}");
    responses[1..].to_vec()
}

fn call(id: usize, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

fn repo_path(setup: &Setup) -> String {
    setup.root.display().to_string()
}

#[test]
fn presence_reports_the_session_without_its_content() {
    let setup = setup();
    let repo = repo_path(&setup);
    let responses = run(
        &setup,
        &[],
        &[
            call(1, "agents_presence", json!({"repoPath": repo})),
            call(2, "agents_presence", json!({"repoPath": format!("{repo}/src"), "maxTokens": 200})),
            call(3, "agents_presence", json!({"repoPath": repo, "maxTokens": 199})),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
        ],
    );
    for response in &responses[..3] {
        assert!(!response.to_string().contains(SECRET), "{response}");
    }
    let (result, is_error) = envelope(&responses[0]);
    assert!(!is_error, "{result}");
    assert_fits_output_schema("agents_presence", &responses[0]);
    assert_eq!((result["tool"].as_str(), result["readOnly"].as_bool()), (Some("agents_presence"), Some(true)));
    let agents = result["data"]["agents"].as_array().expect("agents");
    let claude: Vec<&Value> = agents.iter().filter(|agent| agent["agent"] == "claude-code").collect();
    assert_eq!(claude.len(), 1, "{result}");
    assert_eq!(claude[0]["state"], "working");
    assert_eq!(claude[0]["sources"], json!(["session-store"]));
    assert_eq!(claude[0]["branch"], "feature/a");
    assert_eq!(claude[0]["lastTool"], "Edit");
    assert_eq!(claude[0]["files"], json!(["src/lib.rs"]));
    assert_eq!(result["data"]["agentCount"].as_u64(), Some(agents.len() as u64));

    let text = responses[1]["result"]["content"][0]["text"].as_str().expect("text");
    assert!(fluxgit_engine::budget::count_tokens(text) <= 200, "{text}");
    assert_eq!(responses[2]["error"]["code"], -32602, "{}", responses[2]);
    // The reason is in the message itself (clients often show nothing else), and in `data.errors`.
    let message = responses[2]["error"]["message"].as_str().expect("message");
    assert!(message.starts_with("Invalid arguments for tool agents_presence: /maxTokens: "), "{message}");
    assert!(message.contains("199"), "{message}");
    assert_eq!(responses[2]["error"]["data"]["errors"][0]["instancePath"], "/maxTokens");

    let tools = responses[3]["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|tool| tool["name"].as_str()).collect();
    let at = names.iter().position(|name| *name == "agents_presence").expect("listed");
    // Registry order puts it after operation_status, which is listed only with a gateway.
    assert_eq!(names[at - 1], "fleet_radar", "listed in registry order: {names:?}");
    assert_eq!(tools[at]["annotations"]["readOnlyHint"], true);
}

#[test]
fn text_format_carries_the_same_agents_within_its_budget() {
    let setup = setup();
    let repo = repo_path(&setup);
    let responses = run(
        &setup,
        &[],
        &[
            call(1, "agents_presence", json!({"repoPath": repo})),
            call(2, "agents_presence", json!({"repoPath": repo, "format": "text"})),
            call(3, "agents_presence", json!({"repoPath": repo, "format": "text", "maxTokens": 200})),
        ],
    );
    let (json_result, _) = envelope(&responses[0]);
    let text = responses[1]["result"]["content"][0]["text"].as_str().expect("text");
    assert!(!text.contains(SECRET), "{text}");
    assert_eq!(
        responses[1]["result"]["structuredContent"]["data"], json_result["data"],
        "structuredContent stays JSON"
    );
    let count = json_result["data"]["agentCount"].as_u64().expect("count");
    let first = text.lines().next().expect("count line");
    assert_eq!(first, if count == 1 { "1 other agent".to_string() } else { format!("{count} other agents") });
    for agent in json_result["data"]["agents"].as_array().expect("agents") {
        let line = text
            .lines()
            .find(|line| {
                line.starts_with(&format!(
                    "{} {}",
                    agent["state"].as_str().expect("state"),
                    agent["agent"].as_str().expect("agent")
                ))
            })
            .unwrap_or_else(|| panic!("{agent} in {text}"));
        if let Some(branch) = agent["branch"].as_str() {
            assert!(line.contains(&format!(" on {branch}")), "{line}");
        }
        if let Some(tool) = agent["lastTool"].as_str() {
            assert!(line.contains(&format!(" last {tool}")), "{line}");
        }
        let sources: Vec<&str> =
            agent["sources"].as_array().expect("sources").iter().filter_map(Value::as_str).collect();
        assert!(line.ends_with(&format!(" via {}", sources.join(","))), "{line}");
    }
    assert!(text.contains("  files: src/lib.rs"), "{text}");
    let cut = responses[2]["result"]["content"][0]["text"].as_str().expect("text");
    assert!(fluxgit_engine::budget::count_tokens(cut) <= 200, "{cut}");
}

#[test]
fn disabled_detection_is_10011_and_leaves_previews_alone() {
    let setup = setup();
    let repo = repo_path(&setup);
    let gateway = FakeGateway::start(accepting());
    let address = gateway.address();
    let discard = json!({"repoPath": repo, "reason": "clean up", "paths": ["src/lib.rs"]});
    for value in ["", "0", "1"] {
        let responses = run(
            &setup,
            &[(DISABLED, value), ("FLUXGIT_MCP_HANDSHAKE_ADDR", &address)],
            &[
                call(1, "agents_presence", json!({"repoPath": repo})),
                call(2, "operation_preview_discard", discard.clone()),
            ],
        );
        let (code, data) = product_error(&responses[0]);
        assert_eq!((code, data["reason"].as_str()), (10011, Some("agent_detection_disabled")), "{value:?}");
        assert_fits_output_schema("agents_presence", &responses[0]);
        let (result, is_error) = envelope(&responses[1]);
        assert!(!is_error, "{result}");
        assert!(result["data"].get("otherAgents").is_none(), "no otherAgents when disabled: {result}");
    }
}

#[test]
fn previews_carry_other_agents_with_overlapping_paths() {
    let setup = setup();
    let repo = repo_path(&setup);
    let gateway = FakeGateway::start(accepting());
    let address = gateway.address();
    let patch = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-x\n+y\n";
    let cases = [
        ("discard", json!({"paths": ["src/lib.rs", "README.md"]}), Some(json!(["src/lib.rs"]))),
        ("discard", json!({"paths": ["src"]}), Some(json!(["src"]))),
        ("commit", json!({"message": "m", "paths": ["README.md"]}), None),
        ("patch", json!({"patchContent": patch}), Some(json!(["src/lib.rs"]))),
        (
            "plan",
            json!({"steps": [{"type": "reset", "targetRef": "HEAD"}, {"type": "patch", "patchContent": patch}]}),
            Some(json!(["src/lib.rs"])),
        ),
        ("merge", json!({"sourceRef": "main", "targetRef": "main"}), None),
    ];
    let requests: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(idx, (operation, fields, _))| {
            let mut arguments = fields.clone();
            arguments["repoPath"] = json!(repo);
            arguments["reason"] = json!("test");
            call(idx + 1, &format!("operation_preview_{operation}"), arguments)
        })
        .collect();
    let responses = run(&setup, &[("FLUXGIT_MCP_HANDSHAKE_ADDR", &address)], &requests);
    for ((operation, _, overlap), response) in cases.iter().zip(&responses) {
        assert!(!response.to_string().contains(SECRET), "{response}");
        let (result, is_error) = envelope(response);
        assert!(!is_error, "{operation}: {result}");
        assert_fits_output_schema(&format!("operation_preview_{operation}"), response);
        assert_eq!(result["data"]["accepted"], true, "the proposal itself is unchanged");
        let others = &result["data"]["otherAgents"];
        assert_eq!(others["informational"], true, "{operation}: {result}");
        let claude = others["agents"].as_array().expect("agents").iter().find(|agent| agent["agent"] == "claude-code");
        let claude = claude.unwrap_or_else(|| panic!("{operation}: {others}"));
        assert_eq!(claude["files"], json!(["src/lib.rs"]));
        assert_eq!(claude.get("overlappingPaths"), overlap.as_ref(), "{operation}: {others}");
        assert_eq!(others.get("overlappingAgentCount").is_some(), overlap.is_some(), "{operation}: {others}");
        assert_eq!(others.get("proposalPathsKnown").is_some(), *operation != "merge", "{operation}: {others}");
    }
    // The gateway received exactly what it would have without detection: no otherAgents in any body.
    for request in gateway.requests() {
        assert!(!request.body.contains("otherAgents") && !request.body.contains(SECRET));
    }
}
