//! Command-line definition and the glue behind each mode: serve stdio (no subcommand), `call`, `doctor`.
//!
//! Exit codes: 0 success; 1 a JSON-RPC error or `isError: true` result from `call`, or a configuration error;
//! 2 usage (clap's own, and `call` arguments that are not JSON).

use std::io::{self, Write as _};
use std::process::ExitCode;

use anyhow::Context as _;
use fluxgit_mcp_sidecar::bridge::Bridge;
use fluxgit_mcp_sidecar::config::{self, Config, RawConfig, RootsSource};
use fluxgit_mcp_sidecar::protocol::{self, Server, ServerInfo, Version};
use serde_json::{Value, json};

/// FluxGit MCP stdio server: structured, token-budgeted Git context for AI coding agents.
///
/// Without a subcommand, serves MCP over stdin/stdout until stdin closes.
#[derive(Debug, clap::Parser)]
#[command(name = "fluxgit-mcp-sidecar", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Run one tool through the MCP path and print its result envelope as JSON.
    ///
    /// Exits 1 (envelope or error on stderr) for a JSON-RPC error or an `isError` result.
    Call {
        /// Tool name, e.g. `repo.brief`.
        tool: String,
        /// Tool arguments as a JSON object, e.g. '{"repoPath": "/path/to/repo"}'.
        #[arg(default_value = "{}")]
        arguments: String,
    },
    /// Show the configuration in force: allowed roots, run dir, FLUXGIT_* variables, audit and presence
    /// settings, and the registered tools.
    Doctor,
}

/// Runs the selected mode.
pub(crate) fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        None => serve_stdio(),
        Some(Command::Call { tool, arguments }) => call(&tool, &arguments),
        Some(Command::Doctor) => Ok(doctor()),
    }
}

fn build_server(config: &Config) -> anyhow::Result<Server> {
    let engine = fluxgit_engine::Engine::new(config.engine_options());
    let registry = fluxgit_mcp_sidecar::tools::registry().context("building the tool registry")?;
    Ok(Server::new(registry, engine).with_bridge(Bridge::from_config(config)))
}

fn serve_stdio() -> anyhow::Result<ExitCode> {
    let config = Config::validate(RawConfig::from_env()).context("invalid configuration")?;
    let mut server = build_server(&config)?;
    tracing::info!(
        version = ServerInfo::CURRENT.version,
        roots = ?config.allowed_roots,
        tools = server.registry().len(),
        "serving MCP on stdio"
    );
    let stdin = io::stdin();
    let stdout = io::stdout();
    let result = fluxgit_mcp_sidecar::serve(&mut server, &mut stdin.lock(), &mut stdout.lock());
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // The client closed our stdout: nobody is left to serve.
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(error) => Err(error).context("stdio transport failed"),
    }
}

/// `call TOOL ARGS`: one `tools/call` at the newest protocol version through [`Server::handle`].
fn call(tool: &str, arguments: &str) -> anyhow::Result<ExitCode> {
    let arguments: Value = match serde_json::from_str(arguments) {
        Ok(arguments) => arguments,
        Err(error) => {
            eprintln!("fluxgit-mcp-sidecar call: arguments are not valid JSON: {error}");
            return Ok(ExitCode::from(2));
        }
    };
    let config = Config::validate(RawConfig::from_env()).context("invalid configuration")?;
    let mut server = build_server(&config)?;
    let request = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                (protocol::META_PROTOCOL_VERSION): Version::NEWEST.as_str(),
                (protocol::META_CLIENT_CAPABILITIES): {},
                (protocol::META_CLIENT_INFO): {"name": "fluxgit-cli", "version": ServerInfo::CURRENT.version},
            },
        },
    });
    let response = server.handle(request.to_string().as_bytes()).context("the server sent no response to a request")?;
    if let Some(error) = response.get("error") {
        let code = error.get("code").cloned().unwrap_or(Value::Null);
        let message = error.get("message").and_then(Value::as_str).unwrap_or("(no message)");
        eprintln!("error {code}: {message}");
        if let Some(data) = error.get("data") {
            eprintln!("{}", pretty(data));
        }
        return Ok(ExitCode::FAILURE);
    }
    let result = &response["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let shown = serde_json::from_str::<Value>(text).map_or_else(|_| text.to_owned(), |envelope| pretty(&envelope));
    if result["isError"].as_bool().unwrap_or(false) {
        eprintln!("{shown}");
        return Ok(ExitCode::FAILURE);
    }
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{shown}").context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// Variables whose values are paths (or path lists) and are shown in full; others are only reported as set.
const PATH_VARS: [&str; 5] = [
    config::ALLOWED_ROOTS_VAR,
    config::RUN_DIR_VAR,
    config::AUDIT_LOG_VAR,
    config::AUDIT_SIGN_KEY_VAR,
    "FLUXGIT_MCP_AGENT_POLICY",
];

fn doctor() -> ExitCode {
    let raw = RawConfig::from_env();
    let mut out = String::new();
    let info = ServerInfo::CURRENT;
    out.push_str(&format!("{} {}\n", info.name, info.version));
    let versions: Vec<&str> = Version::ALL.iter().map(|version| version.as_str()).collect();
    out.push_str(&format!("protocol versions: {}\n", versions.join(", ")));

    out.push_str("environment:\n");
    if raw.vars.is_empty() {
        out.push_str("  (no FLUXGIT_* variable set)\n");
    }
    for (name, value) in &raw.vars {
        if PATH_VARS.contains(&name.as_str()) {
            out.push_str(&format!("  {name}={}\n", value.to_string_lossy()));
        } else if value.is_empty() {
            out.push_str(&format!("  {name} (set, empty)\n"));
        } else {
            out.push_str(&format!("  {name} (set)\n"));
        }
    }

    let config = match Config::validate(raw) {
        Ok(config) => config,
        Err(error) => {
            out.push_str(&format!("configuration error: {error}\n"));
            print!("{out}");
            return ExitCode::FAILURE;
        }
    };
    let source = match config.roots_source {
        RootsSource::Env => config::ALLOWED_ROOTS_VAR,
        RootsSource::Home => "home directory (default)",
    };
    out.push_str(&format!("allowed roots (from {source}):\n"));
    if config.allowed_roots.is_empty() {
        out.push_str("  (none in force: every repository will be refused)\n");
    }
    for root in &config.allowed_roots {
        out.push_str(&format!("  {}\n", root.display()));
    }
    if !config.dropped_roots.is_empty() {
        out.push_str("dropped roots:\n");
        for dropped in &config.dropped_roots {
            out.push_str(&format!("  {}: {}\n", dropped.path.display(), dropped.reason));
        }
    }
    let run_dir_source = if config.run_dir_from_env { config::RUN_DIR_VAR } else { "default" };
    out.push_str(&format!("run dir: {} (from {run_dir_source})\n", config.run_dir.display()));
    // The audit ledger, presence file and agent detection are configured here but not built yet:
    // say what is in force and that nothing is written, rather than claim them.
    let not_built = "not written by this build yet";
    let audit_state = if config.audit_disabled { "disabled" } else { not_built };
    out.push_str(&format!("audit log: {} ({audit_state})\n", config.audit_log.display()));
    match &config.audit_sign_key {
        Some(key) if key.as_os_str().is_empty() => {
            out.push_str("audit signing: key variable set but empty (will fail closed once the ledger is built)\n");
        }
        Some(key) => out.push_str(&format!("audit signing: key {} ({not_built})\n", key.display())),
        None => out.push_str("audit signing: off\n"),
    }
    let presence_state = if config.presence_disabled { "disabled" } else { not_built };
    out.push_str(&format!("presence files: {} ({presence_state})\n", config.presence_dir.display()));
    let detection = if config.agent_detection_disabled { "disabled" } else { "no agents.presence tool yet" };
    out.push_str(&format!("agent detection: {detection}\n"));
    out.push_str(&format!("gateway: {}\n", Bridge::from_config(&config).describe()));

    match fluxgit_mcp_sidecar::tools::registry() {
        Ok(registry) => {
            out.push_str(&format!("tools ({}):\n", registry.len()));
            for tool in registry.tools() {
                let definition = tool.definition();
                let kind = if definition.read_only { "read" } else { "proposal" };
                out.push_str(&format!("  {} ({kind}): {}\n", definition.name, definition.title));
            }
        }
        Err(error) => {
            out.push_str(&format!("tools: registry error: {error}\n"));
            print!("{out}");
            return ExitCode::FAILURE;
        }
    }
    print!("{out}");
    ExitCode::SUCCESS
}
