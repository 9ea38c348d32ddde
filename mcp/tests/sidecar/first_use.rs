//! What a newcomer meets first, over stdio and through `call`: a refusal outside the allowed roots names the roots
//! in force, where they came from and each dropped root; an unknown tool names the nearest listed ones; the server
//! started on a terminal says what it is on stderr.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::{BIN, exchange, sidecar};

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

fn frames(messages: &[Value]) -> Vec<u8> {
    messages.iter().flat_map(|message| format!("{message}\n").into_bytes()).collect()
}

fn canonical(path: &Path) -> String {
    path.canonicalize().expect("canonical").display().to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn outside_the_roots_over_stdio_names_the_roots_in_force_and_the_dropped_ones() {
    let home = tempfile::tempdir().expect("home");
    let root = home.path().join("src");
    std::fs::create_dir(&root).expect("mkdir");
    let elsewhere = tempfile::tempdir().expect("outside");
    let missing = home.path().join("gone");
    let roots = std::env::join_paths([root.as_path(), Path::new("."), missing.as_path()]).expect("joined");
    let mut command = sidecar(&root, home.path(), &[]);
    command.env("FLUXGIT_MCP_ALLOWED_ROOTS", &roots);
    let path = elsewhere.path().display().to_string();
    let responses = exchange(command, frames(&[initialize(), call(1, "repo.brief", json!({"repoPath": path}))]));
    let error = &responses[1]["error"];
    assert_eq!(error["code"], -32602, "{error}");
    let message = error["message"].as_str().expect("message");
    let expected = format!(
        "{} is outside the allowed roots. Allowed roots (from FLUXGIT_MCP_ALLOWED_ROOTS): {}. Dropped from \
         FLUXGIT_MCP_ALLOWED_ROOTS: . (not an absolute path), {} (does not exist). To allow a repository, set \
         FLUXGIT_MCP_ALLOWED_ROOTS in this server's entry of the MCP host's configuration to absolute directories \
         separated by ':'; `fluxgit-mcp-sidecar doctor` shows the roots in force.",
        canonical(elsewhere.path()),
        canonical(&root),
        missing.display()
    );
    assert_eq!(message, expected);
    let data = &error["data"];
    assert_eq!(data["reason"], "outside_allowed_roots");
    assert_eq!(data["allowedRoots"], json!([canonical(&root)]));
    assert_eq!(data["rootsFrom"], "FLUXGIT_MCP_ALLOWED_ROOTS");
    assert_eq!(data["droppedRoots"][0], json!({"path": ".", "reason": "not an absolute path"}));
    assert_eq!(data["droppedRoots"][1]["reason"], "does not exist");
    assert!(message.ends_with(data["detail"].as_str().expect("detail")), "the same words in data: {data}");
}

#[test]
fn outside_the_default_root_through_call_says_the_variable_is_unset_and_speaks_to_a_shell() {
    let home = tempfile::tempdir().expect("home");
    let elsewhere = tempfile::tempdir().expect("outside");
    let mut command = sidecar(home.path(), home.path(), &[]);
    command.env_remove("FLUXGIT_MCP_ALLOWED_ROOTS");
    let arguments = json!({"repoPath": elsewhere.path().display().to_string()}).to_string();
    let output = command.args(["call", "repo.status", &arguments]).output().expect("run call");
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    assert!(
        text.contains(&format!(
            "is outside the allowed roots. FLUXGIT_MCP_ALLOWED_ROOTS is not set, so the home directory is the \
             allowed root: {}.",
            canonical(home.path())
        )),
        "{text}"
    );
    assert!(text.contains("`fluxgit-mcp-sidecar doctor` shows the roots in force"), "{text}");
    assert!(text.contains("\"rootsFrom\": \"home directory (default)\""), "data is shown too: {text}");
    // A person at a shell ran it: the roots are set in the command's environment, not in a host's file.
    assert!(
        text.contains(
            "To allow a repository, set FLUXGIT_MCP_ALLOWED_ROOTS in the environment of the command to absolute \
             directories separated by ':', e.g. `FLUXGIT_MCP_ALLOWED_ROOTS=/path/to/repos fluxgit-mcp-sidecar call \
             ...`;"
        ),
        "{text}"
    );
    assert!(!text.contains("host's configuration"), "{text}");
}

/// `.` and `_` read as the same character, so a check holds whichever spelling is listed.
fn normalised(name: &str) -> String {
    name.replace('.', "_")
}

#[test]
fn an_unknown_tool_names_the_nearest_listed_ones_in_either_spelling() {
    let home = tempfile::tempdir().expect("home");
    let responses = exchange(
        sidecar(home.path(), home.path(), &[]),
        frames(&[initialize(), call(1, "repo.breif", json!({})), call(2, "repo_breif", json!({}))]),
    );
    for response in &responses[1..] {
        let error = &response["error"];
        assert_eq!(error["code"], -32602, "{error}");
        let suggestions: Vec<&str> =
            error["data"]["suggestions"].as_array().expect("suggestions").iter().filter_map(Value::as_str).collect();
        assert_eq!(suggestions.first().map(|name| normalised(name)), Some("repo_brief".to_owned()), "{error}");
        assert!(suggestions.len() <= 3);
        let asked = response["id"].as_i64().map(|id| if id == 1 { "repo.breif" } else { "repo_breif" });
        let message = format!("Unknown tool: {}; nearest listed: {}", asked.expect("id"), suggestions.join(", "));
        assert_eq!(error["message"], message);
    }

    let output = sidecar(home.path(), home.path(), &["call", "status"]).output().expect("run call");
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    assert!(text.contains("Unknown tool: status; nearest listed: "), "{text}");
    let listed = text.split("nearest listed: ").nth(1).and_then(|rest| rest.lines().next()).expect("names");
    assert!(listed.split(", ").any(|name| normalised(name) == "repo_status"), "{text}");
}

#[test]
fn on_a_terminal_the_server_says_what_it_is_then_serves() {
    let master = rustix::pty::openpt(rustix::pty::OpenptFlags::RDWR | rustix::pty::OpenptFlags::NOCTTY)
        .expect("open a pty master");
    rustix::pty::grantpt(&master).expect("grantpt");
    rustix::pty::unlockpt(&master).expect("unlockpt");
    let name = rustix::pty::ptsname(&master, Vec::new()).expect("ptsname");
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(name.to_str().expect("utf-8 pty name"))
        .expect("open the pty slave");
    let mut master = std::fs::File::from(master);
    // A ping typed on the terminal is answered, then Ctrl-D (end of input at the start of a line) ends the server.
    master.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n\x04").expect("type on the pty");
    let home = tempfile::tempdir().expect("home");
    let output = sidecar(home.path(), home.path(), &[])
        .stdin(Stdio::from(terminal))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run the server on a terminal");
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stderr(&output);
    let first = text.lines().next().unwrap_or_default();
    assert!(first.starts_with("fluxgit-mcp-sidecar: serving MCP (JSON-RPC) on stdin/stdout"), "{text}");
    assert!(first.contains("call repo_brief") && first.contains("doctor") && first.contains("--help"), "{first}");
    assert_eq!(text.lines().filter(|line| line.contains("serving MCP")).count(), 1, "one line: {text}");
    let reply: Value = serde_json::from_slice(&output.stdout).expect("the ping's reply");
    assert_eq!(reply["id"], 5);

    // Not on a terminal (a host's pipe): nothing is said.
    let piped = Command::new(BIN)
        .env_clear()
        .env("HOME", home.path())
        .env("FLUXGIT_RUN_DIR", home.path().join("run"))
        .env("FLUXGIT_MCP_AUDIT_DISABLED", "")
        .env("FLUXGIT_MCP_PRESENCE_DISABLED", "")
        .stdin(Stdio::null())
        .output()
        .expect("run the server on a pipe");
    assert!(piped.status.success());
    assert!(!stderr(&piped).contains("serving MCP"), "{}", stderr(&piped));
}

/// `call` at a shell takes `"repoPath": "."` (and a relative path below it) as the current directory, answering
/// exactly what the absolute path answers; over MCP the same relative path stays refused (a host shares no current
/// directory with the server).
#[test]
fn call_reads_a_relative_repo_path_against_the_current_directory() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let home = tempfile::tempdir().expect("tempdir");
    let root = fixture.root().canonicalize().expect("root");
    let answer = |dir: &Path, repo_path: &str| {
        let output = sidecar(&root, home.path(), &["call", "repo_status", &json!({"repoPath": repo_path}).to_string()])
            .current_dir(dir)
            .output()
            .expect("call runs");
        assert!(output.status.success(), "{repo_path}: {}", stderr(&output));
        let answer: Value = serde_json::from_slice(&output.stdout).expect("JSON");
        answer["data"].clone()
    };
    let absolute = answer(&root, &canonical(fixture.path()));
    assert_eq!(answer(fixture.path(), "."), absolute);
    assert_eq!(answer(&root, "repo"), absolute);
    // An empty directory: git lists no untracked entry for it, so the status stays the same.
    let empty = fixture.path().join("empty");
    std::fs::create_dir(&empty).expect("creatable");
    assert_eq!(answer(&empty, ".."), absolute);
    let refused = exchange(
        sidecar(&root, home.path(), &[]),
        frames(&[initialize(), call(1, "repo.status", json!({"repoPath": "."}))]),
    );
    assert!(refused[1].get("error").is_some(), "{}", refused[1]);
}

/// README.md's "An answer" is what the server prints: `readme_example.sh` builds the checkout it describes, and the
/// block after "## An answer" must equal `repo_brief`'s text there, line for line.
#[test]
fn readme_example_is_what_the_server_prints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sidecar/readme_example.sh");
    let built = Command::new("bash").arg(script).arg(dir.path()).output().expect("bash runs");
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let home = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    let repo = root.join("repo");
    let arguments = json!({"repoPath": repo.to_str().expect("utf-8"), "format": "text"}).to_string();
    let output = sidecar(&root, home.path(), &["call", "repo_brief", &arguments]).output().expect("call runs");
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = String::from_utf8(output.stdout).expect("UTF-8");
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).expect("README.md");
    let section = readme.split("\n## An answer\n").nth(1).expect("README has '## An answer'");
    let block = section.split("```text\n").nth(1).and_then(|rest| rest.split("```").next()).expect("a text block");
    // `call` ends what it prints with a line break of its own.
    assert_eq!(block, format!("{}\n", printed.trim_end()), "README.md's block differs from the server's answer");
}
