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

/// Sends `input` to the server one frame at a time, as a client that waits for each answer does: a frame that gets
/// a response (by the server's own classification) is answered before the next is written, so the responses come
/// in request order and calls run one after the other. Then closes stdin and returns every stdout line as JSON.
/// The server must exit 0 at end of input. (The concurrency tests write everything at once instead.)
pub(crate) fn exchange(mut command: Command, input: Vec<u8>) -> Vec<Value> {
    let mut child =
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn the sidecar");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut lines = Vec::new();
    let mut read_line = |lines: &mut Vec<String>| {
        let mut line = String::new();
        let read = std::io::BufRead::read_line(&mut stdout, &mut line).expect("read stdout");
        if read > 0 {
            lines.push(line);
        }
        read > 0
    };
    let mut written = 0;
    for (end, answered) in frames_answered(&input) {
        // The server may legitimately stop reading early only by exiting; ignore a broken pipe then.
        let _ = stdin.write_all(&input[written..end]).and_then(|()| stdin.flush());
        written = end;
        if end == input.len() {
            break;
        }
        for _ in 0..answered {
            if !read_line(&mut lines) {
                break;
            }
        }
    }
    let _ = stdin.write_all(&input[written..]);
    drop(stdin);
    while read_line(&mut lines) {}
    let status = child.wait().expect("wait");
    let mut stderr = String::new();
    child.stderr.take().expect("piped stderr").read_to_string(&mut stderr).expect("read stderr");
    assert!(status.success(), "the server exits 0 at end of input; stderr:\n{stderr}");
    lines
        .iter()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|error| panic!("stdout line is not JSON ({error}): {line}"))
        })
        .collect()
}

/// Splits `input` as the server's framing reader does: for each frame, the end of its bytes in `input` and how
/// many responses it gets (0 or 1), by the server's own classification of the frame.
fn frames_answered(input: &[u8]) -> Vec<(usize, usize)> {
    use fluxgit_mcp_sidecar::protocol::{Server, Step};

    let engine = fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots: vec![] });
    let classifier = Server::new(fluxgit_mcp_sidecar::tools::Registry::new(), engine);
    let position = std::rc::Rc::new(std::cell::Cell::new(0));
    let mut reader = fluxgit_mcp_sidecar::transport::FrameReader::new(Tracked { input, position: position.clone() });
    let mut out = Vec::new();
    while let Some(frame) = reader.next_frame().expect("in-memory reads cannot fail") {
        let answered = match classifier.step(frame) {
            Step::Reply(reply) => usize::from(reply.is_some()),
            Step::Call(_) => 1,
            Step::Cancel(_) => 0,
        };
        out.push((position.get(), answered));
    }
    out
}

/// A byte slice read through `BufRead` that shares how far it was consumed.
struct Tracked<'a> {
    input: &'a [u8],
    position: std::rc::Rc<std::cell::Cell<usize>>,
}

impl std::io::Read for Tracked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = (&self.input[self.position.get()..]).read(buf)?;
        self.position.set(self.position.get() + read);
        Ok(read)
    }
}

impl std::io::BufRead for Tracked<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        Ok(&self.input[self.position.get()..])
    }

    fn consume(&mut self, amount: usize) {
        self.position.set(self.position.get() + amount);
    }
}

/// Asserts that a tool result's `structuredContent` fits the `outputSchema` the tool advertises (design.md#transport: error
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
        assert!(problems.is_empty(), "{tool}: not compact (design.md#envelope): {problems:?}\n{structured}");
    }
}

/// Tools whose answers follow design.md#envelope's compact shape.
pub(crate) const COMPACT_TOOLS: &[&str] = &[
    "repo_brief",
    "repo_scope",
    "repo_status",
    "repo_refs",
    "repo_branchStack",
    "repo_history",
    "repo_reflog",
    "conflict_read",
    "commit_details",
    "worktree_changes",
    "worktree_list",
    "submodule_status",
    "diff_text",
    "repo_conflictPreflight",
    "file_read",
    "file_blame",
];

/// design.md#envelope: a field the schema does not require is left out when it has its default (null, 0, false, an empty
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
            // Envelope keys stay (design.md#envelope): `data` is there even when it is `{}`.
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

    /// Writes one message without waiting for anything.
    pub(crate) fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write request");
        stdin.flush().expect("flush");
    }

    /// Writes raw bytes to the server's stdin, a frame or part of one, without waiting for anything.
    pub(crate) fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write bytes");
        stdin.flush().expect("flush");
    }

    /// Reads the next response line; `None` at end of output.
    pub(crate) fn receive(&mut self) -> Option<Value> {
        use std::io::BufRead as _;
        let mut line = String::new();
        if self.stdout.read_line(&mut line).expect("read response") == 0 {
            return None;
        }
        Some(serde_json::from_str(&line).unwrap_or_else(|error| panic!("response is not JSON ({error}): {line:?}")))
    }

    /// Closes stdin, reads every remaining response until the server exits, and returns them with the exit status
    /// and stderr.
    pub(crate) fn drain(mut self) -> (Vec<Value>, std::process::ExitStatus, String) {
        drop(self.stdin.take());
        let mut responses = Vec::new();
        while let Some(response) = self.receive() {
            responses.push(response);
        }
        let (status, stderr) = self.finish();
        (responses, status, stderr)
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

/// Issue 35: whether a text brief shows itself what a hint to `tool` would answer, so the text leaves the hint to
/// the JSON: a conflict's regions with how to end it, lost commits with their recovery, the rebased parent's
/// `git rebase --onto`, the owners of the changes, or the few changes listed (no counts line).
pub(crate) fn answered_in_text(tool: &str, text: &str) -> bool {
    let line_starts = |prefix: &str| text.lines().any(|line| line.starts_with(prefix));
    match tool {
        "conflict_read" | "conflict.read" => line_starts("conclude: ") && line_starts("@@ "),
        "repo_reflog" | "repo.reflog" => text.contains(" no ref holds: git "),
        "repo_branchStack" | "repo.branchStack" => line_starts("git rebase --onto "),
        "repo_scope" | "repo.scope" => line_starts("owners ") || line_starts("unowned: "),
        "worktree_changes" | "worktree.changes" => {
            !["staged ", "unstaged ", "untracked ", "clean"].iter().any(|prefix| line_starts(prefix))
        }
        _ => false,
    }
}
