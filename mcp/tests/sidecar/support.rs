//! Running the real `fluxgit-mcp-sidecar` binary for tests.

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// The binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_fluxgit-mcp-sidecar");

/// The sidecar with `args` and a clean environment: only PATH kept, `allowed_roots` as the allowed root, `home` as
/// HOME with the run dir below it, audit and presence disabled.
pub(crate) fn sidecar(allowed_roots: &Path, home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("FLUXGIT_MCP_ALLOWED_ROOTS", allowed_roots)
        .env("FLUXGIT_RUN_DIR", home.join("run"))
        .env("FLUXGIT_MCP_AUDIT_DISABLED", "")
        .env("FLUXGIT_MCP_PRESENCE_DISABLED", "");
    command
}

/// Writes `input` to the server's stdin (from a thread: it answers while we write), closes it, and returns every
/// stdout line as JSON. The server must exit 0 at end of input.
pub(crate) fn exchange(mut command: Command, input: Vec<u8>) -> Vec<Value> {
    let mut child =
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn the sidecar");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer = std::thread::spawn(move || {
        // The server may legitimately stop reading early only by exiting; ignore a broken pipe then.
        let _ = stdin.write_all(&input);
    });
    let mut stdout = String::new();
    child.stdout.take().expect("piped stdout").read_to_string(&mut stdout).expect("read stdout");
    writer.join().expect("writer thread");
    let status = child.wait().expect("wait");
    let mut stderr = String::new();
    child.stderr.take().expect("piped stderr").read_to_string(&mut stderr).expect("read stderr");
    assert!(status.success(), "the server exits 0 at end of input; stderr:\n{stderr}");
    stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|error| panic!("stdout line is not JSON ({error}): {line}"))
        })
        .collect()
}

/// Asserts that a tool result's `structuredContent` fits the `outputSchema` the tool advertises (SPEC §4.1: error
/// results must satisfy it too, or omit `structuredContent`).
pub(crate) fn assert_fits_output_schema(tool: &str, response: &Value) {
    let registry = fluxgit_mcp_sidecar::tools::registry().expect("registry builds");
    let definition = registry.lookup(tool).unwrap_or_else(|| panic!("{tool} is registered")).definition().clone();
    let validator = jsonschema::validator_for(&definition.output_schema).expect("output schema compiles");
    let structured = &response["result"]["structuredContent"];
    let errors: Vec<String> =
        validator.iter_errors(structured).map(|error| format!("{error} at {}", error.instance_path())).collect();
    assert!(errors.is_empty(), "{tool}: result does not fit its outputSchema: {errors:?}\n{structured}");
    if COMPACT_TOOLS.contains(&tool) {
        let mut problems = Vec::new();
        compact_problems(&definition.output_schema, structured, "", &mut problems);
        assert!(problems.is_empty(), "{tool}: not compact (SPEC §4.2): {problems:?}\n{structured}");
    }
}

/// Tools whose answers follow SPEC §4.2's compact shape.
pub(crate) const COMPACT_TOOLS: &[&str] = &[
    "repo.brief",
    "repo.scope",
    "repo.status",
    "repo.refs",
    "repo.branchStack",
    "repo.history",
    "repo.reflog",
    "conflict.read",
    "commit.details",
    "worktree.changes",
    "worktree.list",
    "submodule.status",
    "diff.text",
    "repo.conflictPreflight",
    "file.read",
];

/// SPEC §4.2: a field the schema does not require is left out when it has its default (null, 0, false, an empty
/// list or object), and its schema description states that default. Collects every violation in `value`.
pub(crate) fn compact_problems(schema: &Value, value: &Value, at: &str, problems: &mut Vec<String>) {
    if let (Some(properties), Some(object)) = (schema.get("properties").and_then(Value::as_object), value.as_object()) {
        let required: Vec<&str> =
            schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        for (key, field) in object {
            let Some(field_schema) = properties.get(key) else { continue };
            let is_default = match field {
                Value::Null => true,
                Value::Bool(flag) => !flag,
                Value::Number(number) => number.as_f64() == Some(0.0),
                Value::Array(items) => items.is_empty(),
                Value::Object(entries) => entries.is_empty(),
                Value::String(_) => false,
            };
            // Envelope keys stay (SPEC §4.2): `data` is there even when it is `{}`.
            if is_default && !required.contains(&key.as_str()) && !at.is_empty() {
                problems.push(format!("{at}/{key} = {field} is a default and should be left out"));
            }
            let described = field_schema
                .get("description")
                .and_then(Value::as_str)
                .is_some_and(|d| d.contains("Default") || d.contains("Absent means"));
            if !required.contains(&key.as_str()) && !described && at.starts_with("/data") {
                problems.push(format!("{at}/{key}: optional, but its schema states no default"));
            }
            compact_problems(field_schema, field, &format!("{at}/{key}"), problems);
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for (idx, item) in array.iter().enumerate() {
            compact_problems(items, item, &format!("{at}/{idx}"), problems);
        }
    }
}

/// A server process driven one request at a time: each response is read before the next request is sent, so
/// whatever a call wrote (audit entry, presence file) is on disk when its response arrives.
pub(crate) struct Running {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Running {
    /// Starts `command` with piped stdin and stdout (stderr piped too, read by [`Running::finish`]).
    pub(crate) fn start(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the sidecar");
        let stdin = child.stdin.take();
        let stdout = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
        Self { child, stdin, stdout }
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends one request and returns its response.
    pub(crate) fn request(&mut self, message: &Value) -> Value {
        use std::io::BufRead as _;
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write request");
        stdin.flush().expect("flush");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read response");
        serde_json::from_str(&line).unwrap_or_else(|error| panic!("response is not JSON ({error}): {line:?}"))
    }

    /// Closes stdin, waits for the exit, and returns the status and stderr.
    pub(crate) fn finish(mut self) -> (std::process::ExitStatus, String) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait");
        let mut stderr = String::new();
        self.child.stderr.take().expect("piped stderr").read_to_string(&mut stderr).expect("read stderr");
        (status, stderr)
    }

    /// Sends `signal` (e.g. `TERM`) with `kill`, keeping stdin open, and waits for the exit.
    pub(crate) fn signal(self, signal: &str) -> (std::process::ExitStatus, String) {
        let pid = self.pid().to_string();
        let killed = Command::new("kill").args([&format!("-{signal}"), &pid]).status().expect("run kill");
        assert!(killed.success(), "kill -{signal} {pid}");
        let Self { mut child, stdin, .. } = self;
        let status = child.wait().expect("wait");
        drop(stdin);
        let mut stderr = String::new();
        child.stderr.take().expect("piped stderr").read_to_string(&mut stderr).expect("read stderr");
        (status, stderr)
    }
}

/// `initialize` (legacy 2025-11-25) as client `name` version `version`.
pub(crate) fn initialize(name: &str, version: &str) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": name, "version": version}}})
}

/// A `tools/call` request.
pub(crate) fn tool_call(id: i64, tool: &str, arguments: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}})
}

/// Runs the sidecar with `args` and a clean environment plus `env`; returns exit code, stdout and stderr.
pub(crate) fn run(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> (i32, String, String) {
    let mut command = Command::new(BIN);
    command.args(args).env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.stdin(Stdio::null()).output().expect("run the sidecar");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
