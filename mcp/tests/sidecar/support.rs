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
}
