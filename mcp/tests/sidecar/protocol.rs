//! End-to-end protocol tests: the real `fluxgit-mcp-sidecar` binary over stdio (design.md#transport, §4.3).
//!
//! Each test writes a whole input stream, closes stdin, and checks every line the server wrote on stdout. Tool
//! assertions are generic over the registry the binary ships, so they hold whichever tools are built.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::{exchange, sidecar};

const LEGACY_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const ALL_VERSIONS: [&str; 5] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// A sandbox for one server process: allowed root and run dir inside a temporary directory.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        Self { dir: tempfile::tempdir().expect("tempdir") }
    }

    fn command(&self, args: &[&str]) -> Command {
        sidecar(self.dir.path(), self.dir.path(), args)
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }
}

/// Runs the server on `input` until it exits at end of input; returns every stdout line as JSON.
fn serve(input: Vec<u8>) -> Vec<Value> {
    let sandbox = Sandbox::new();
    exchange(sandbox.command(&[]), input)
}

fn line(message: &Value) -> Vec<u8> {
    let mut bytes = message.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

fn lines(messages: &[Value]) -> Vec<u8> {
    messages.iter().flat_map(line).collect()
}

fn request(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

fn ping(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

fn initialize(version: &str) -> Value {
    request(
        0,
        "initialize",
        json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}),
    )
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

fn modern_meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "e2e-modern", "version": "1"},
    })
}

fn error_code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or_else(|| panic!("expected an error response, got {response}"))
}

fn is_ping_reply(response: &Value, id: i64) -> bool {
    response["id"] == json!(id) && response["result"] == json!({})
}

/// Checks one advertised tool against what `version` may carry.
fn check_tool_fields(tool: &Value, version: &str) {
    let at_least = |floor: &str| version >= floor;
    let name = tool["name"].as_str().expect("tool name");
    assert!(tool["description"].is_string(), "{name}: description");
    assert_eq!(tool["inputSchema"]["type"], "object", "{name}: inputSchema");
    assert_eq!(tool.get("title").is_some(), at_least("2025-06-18"), "{name} at {version}: title");
    assert_eq!(tool.get("outputSchema").is_some(), at_least("2025-06-18"), "{name} at {version}: outputSchema");
    assert_eq!(tool.get("annotations").is_some(), at_least("2025-03-26"), "{name} at {version}: annotations");
    if let Some(annotations) = tool.get("annotations") {
        assert!(annotations["readOnlyHint"].is_boolean(), "{name}: readOnlyHint");
        assert_eq!(annotations["destructiveHint"], false, "{name}: destructiveHint");
        assert_eq!(annotations["openWorldHint"], false, "{name}: openWorldHint");
    }
}

#[test]
fn initialize_at_each_legacy_version_strips_unknown_fields() {
    for version in LEGACY_VERSIONS {
        let responses = serve(lines(&[initialize(version), initialized(), request(1, "tools/list", json!({}))]));
        assert_eq!(responses.len(), 2, "initialize and tools/list answered, the notification not: {responses:?}");
        let init = &responses[0]["result"];
        assert_eq!(init["protocolVersion"], version);
        assert_eq!(init["capabilities"], json!({"tools": {"listChanged": false}}));
        assert_eq!(init["serverInfo"]["name"], "fluxgit-mcp-sidecar");
        assert_eq!(init["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
        assert!(init["instructions"].is_string());
        let list = &responses[1]["result"];
        let keys: Vec<&str> = list.as_object().expect("object").keys().map(String::as_str).collect();
        assert_eq!(keys, ["tools"], "no resultType/ttlMs/cacheScope/_meta in legacy lists");
        for tool in list["tools"].as_array().expect("tools array") {
            check_tool_fields(tool, version);
        }
    }
}

#[test]
fn initialize_with_an_unknown_or_modern_version_answers_the_newest_legacy_one() {
    let responses = serve(lines(&[initialize("2026-07-28")]));
    assert_eq!(responses[0]["result"]["protocolVersion"], "2025-11-25");
    let responses = serve(lines(&[initialize("2023-01-01")]));
    assert_eq!(responses[0]["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn server_discover_and_modern_tools_list() {
    let meta = modern_meta("2026-07-28");
    let responses = serve(lines(&[
        request("probe", "server/discover", json!({"_meta": meta})),
        request(2, "tools/list", json!({"_meta": meta})),
    ]));
    let discover = &responses[0];
    assert_eq!(discover["id"], "probe");
    let result = &discover["result"];
    assert_eq!(result["supportedVersions"], json!(ALL_VERSIONS));
    assert_eq!(result["capabilities"], json!({"tools": {"listChanged": false}}));
    assert_eq!(result["resultType"], "complete");
    assert!(result["ttlMs"].is_u64());
    assert!(matches!(result["cacheScope"].as_str(), Some("public" | "private")));
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "fluxgit-mcp-sidecar");
    let list = &responses[1]["result"];
    assert_eq!(list["resultType"], "complete");
    assert!(list["ttlMs"].is_u64());
    assert!(matches!(list["cacheScope"].as_str(), Some("public" | "private")));
    assert_eq!(list["_meta"]["io.modelcontextprotocol/serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    for tool in list["tools"].as_array().expect("tools array") {
        check_tool_fields(tool, "2026-07-28");
    }
}

#[test]
fn modern_request_missing_meta_keys_is_invalid_params() {
    let responses = serve(lines(&[request(
        1,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    )]));
    assert_eq!(error_code(&responses[0]), -32602);
    let message = responses[0]["error"]["message"].as_str().expect("message");
    assert!(message.contains("io.modelcontextprotocol/clientCapabilities"), "{message}");
}

#[test]
fn unsupported_modern_version_is_32022_with_data() {
    let responses = serve(lines(&[request(1, "tools/list", json!({"_meta": modern_meta("2099-12-31")}))]));
    assert_eq!(error_code(&responses[0]), -32022);
    assert_eq!(responses[0]["error"]["data"], json!({"supported": ALL_VERSIONS, "requested": "2099-12-31"}));
}

#[test]
fn malformed_json_line_then_ping_is_still_answered() {
    let mut input = b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \n".to_vec();
    input.extend(line(&ping(2)));
    let responses = serve(input);
    assert_eq!(responses.len(), 2);
    assert_eq!((error_code(&responses[0]), &responses[0]["id"]), (-32700, &Value::Null));
    assert!(is_ping_reply(&responses[1], 2));
}

#[test]
fn nine_mib_frames_are_refused_then_ping_is_answered() {
    let mut payload = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"pad\":\"".to_vec();
    payload.extend(std::iter::repeat_n(b'a', 9 * 1024 * 1024));
    payload.extend_from_slice(b"\"}}");
    let mut input = payload.clone();
    input.push(b'\n');
    input.extend(line(&ping(2)));
    input.extend(format!("Content-Length: {}\r\n\r\n", payload.len()).into_bytes());
    input.extend_from_slice(&payload);
    // The next frame's header glued to the refused body, as LSP-style clients write frames back to back.
    let next = ping(3).to_string();
    input.extend(format!("Content-Length: {}\r\n\r\n{next}", next.len()).into_bytes());
    let responses = serve(input);
    assert_eq!(responses.len(), 4, "{:?}", responses.iter().map(|r| r["id"].clone()).collect::<Vec<_>>());
    for refused in [&responses[0], &responses[2]] {
        assert_eq!((error_code(refused), &refused["id"]), (-32600, &Value::Null));
        let message = refused["error"]["message"].as_str().expect("message");
        assert!(message.contains("8388608") || message.contains("8 MiB"), "{message}");
    }
    assert!(is_ping_reply(&responses[1], 2));
    assert!(is_ping_reply(&responses[3], 3));
}

/// A `Content-Length` over the cap with no body is refused from the header while stdin stays open, and the
/// newline-delimited request after it is answered: the server neither waits for the declared bytes nor swallows
/// what follows (issue 33).
#[test]
fn lying_content_length_is_refused_at_once_and_the_next_request_answered() {
    let sandbox = Sandbox::new();
    let mut server = crate::support::Running::start(sandbox.command(&[]));
    // Without an answer the reads below would block for ever: a watchdog kills the server after 30 s instead.
    let pid = server.pid();
    let (done, watch) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if watch.recv_timeout(std::time::Duration::from_secs(30)).is_err() {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    });
    server.send_bytes(b"Content-Length: 99999999999\r\n\r\n");
    let refused = server.receive().expect("an answer to the header alone");
    server.send(&ping(2));
    let answered = server.receive().expect("an answer to the next request");
    server.send_bytes(b"Content-Length: 99999999999999999999999\r\n");
    let overflow = server.receive().expect("an answer to a length beyond u64");
    server.send(&ping(3));
    let after_overflow = server.receive().expect("an answer after the overflow");
    done.send(()).expect("the watchdog waits");
    watchdog.join().expect("watchdog");
    let (status, stderr) = server.finish();
    assert_eq!((error_code(&refused), &refused["id"]), (-32600, &Value::Null), "{refused}");
    let message = refused["error"]["message"].as_str().expect("message");
    assert!(message.contains("8388608") || message.contains("8 MiB"), "{message}");
    assert!(is_ping_reply(&answered, 2), "{answered}");
    assert_eq!((error_code(&overflow), &overflow["id"]), (-32600, &Value::Null), "{overflow}");
    assert!(is_ping_reply(&after_overflow, 3), "{after_overflow}");
    assert!(status.success(), "{status:?}: {stderr}");
}

#[test]
fn content_length_framed_ping_and_mixed_framing() {
    let body = ping(1).to_string();
    let mut input = format!(
        "Content-Length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{body}",
        body.len()
    )
    .into_bytes();
    input.extend(line(&ping(2)));
    input.extend(format!("content-length: {}\r\n\r\n{}", ping(3).to_string().len(), ping(3)).into_bytes());
    let responses = serve(input);
    assert_eq!(responses.len(), 3);
    for (response, id) in responses.iter().zip(1..) {
        assert!(is_ping_reply(response, id), "{response}");
    }
}

#[test]
fn notification_gets_no_reply() {
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let responses = serve(lines(&[notification, initialized(), ping(7)]));
    assert_eq!(responses.len(), 1, "{responses:?}");
    assert!(is_ping_reply(&responses[0], 7));
}

#[test]
fn request_method_without_id_is_not_executed() {
    let calls = [
        json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "no.such.tool", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": "2024-11-05"}}),
    ];
    let mut messages = calls.to_vec();
    messages.push(ping(8));
    let responses = serve(lines(&messages));
    assert_eq!(responses.len(), 1, "{responses:?}");
    assert!(is_ping_reply(&responses[0], 8));
}

#[test]
fn unknown_method_and_unknown_tool() {
    let responses = serve(lines(&[
        initialize("2025-11-25"),
        request(1, "resources/list", json!({})),
        request(2, "tools/call", json!({"name": "no.such.tool", "arguments": {}})),
        ping(3),
    ]));
    assert_eq!((error_code(&responses[1]), &responses[1]["id"]), (-32601, &json!(1)));
    assert_eq!((error_code(&responses[2]), &responses[2]["id"]), (-32602, &json!(2)));
    assert_eq!(responses[2]["error"]["message"], "Unknown tool: no.such.tool");
    assert!(is_ping_reply(&responses[3], 3));
}

#[test]
fn batches_and_invalid_envelopes_are_invalid_requests() {
    let mut input = lines(&[json!([ping(1), ping(2)]), json!({"jsonrpc": "2.0", "id": [1], "method": "ping"})]);
    input.extend(line(&ping(3)));
    let responses = serve(input);
    assert_eq!(responses.len(), 3);
    assert_eq!(error_code(&responses[0]), -32600);
    assert_eq!(error_code(&responses[1]), -32600);
    assert!(is_ping_reply(&responses[2], 3));
}

fn run_cli(args: &[&str]) -> (Output, Sandbox) {
    let sandbox = Sandbox::new();
    let output = sandbox.command(args).stdin(Stdio::null()).output().expect("run the sidecar");
    (output, sandbox)
}

#[test]
fn doctor_reports_roots_variables_and_tools() {
    let (output, sandbox) = run_cli(&["doctor"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let root = std::fs::canonicalize(sandbox.root()).expect("exists");
    assert!(stdout.contains(&format!("  {}\n", root.display())), "{stdout}");
    assert!(stdout.contains("FLUXGIT_MCP_AUDIT_DISABLED (set, empty)"), "{stdout}");
    assert!(stdout.contains("(disabled)"), "{stdout}");
    assert!(stdout.contains("tools: 23 of 43 listed"), "{stdout}");
}

#[test]
fn call_of_an_unknown_tool_exits_1_with_the_error_on_stderr() {
    let (output, _sandbox) = run_cli(&["call", "no.such.tool", "{}"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    assert!(String::from_utf8_lossy(&output.stderr).contains("Unknown tool: no.such.tool"));
    let (output, _sandbox) = run_cli(&["call", "repo_brief", "{not json"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn schema_prints_a_tools_arguments_and_call_prints_tool_errors_on_stdout() {
    let (output, _sandbox) = run_cli(&["schema", "commit_details"]);
    assert_eq!(output.status.code(), Some(0));
    let shown: Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(shown["name"], "commit_details");
    assert!(shown["inputSchema"]["required"].as_array().is_some_and(|r| r.contains(&Value::from("commit"))));
    let (output, _sandbox) = run_cli(&["schema", "no.such.tool"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("repo_brief"), "names the tools");

    // A product error (10001) is a tool result: exit 1, its envelope on stdout.
    let sandbox = Sandbox::new();
    let repo = sandbox.root().canonicalize().expect("root").join("repo");
    let init = Command::new("git").args(["init", "-q"]).arg(&repo).status().expect("git init");
    assert!(init.success());
    let arguments = json!({ "repoPath": repo.to_str().expect("utf-8") }).to_string();
    let output =
        sandbox.command(&["call", "flux_restorePoints", &arguments]).stdin(Stdio::null()).output().expect("run");
    assert_eq!(output.status.code(), Some(1));
    let envelope: Value = serde_json::from_slice(&output.stdout).expect("the envelope on stdout");
    assert_eq!(envelope["error"]["code"], 10001, "{envelope}");
}
