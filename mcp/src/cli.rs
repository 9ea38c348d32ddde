//! Command-line definition and the glue behind each mode: serve stdio (no subcommand), `serve-http`, `token add`,
//! `call`, `doctor`, `verify-audit`, `audit export`, `audit-keygen`, `install`.
//!
//! Exit codes: 0 success; 1 a JSON-RPC error or `isError: true` result from `call`, or a configuration error
//! (including an unusable audit signing key: start-up fails closed); 2 usage (clap's own, `call` arguments that
//! are not JSON, `verify-audit` without a ledger or with a bad public key); 3 `verify-audit` found an integrity
//! failure (or an unsigned entry under `--require-signed`); 4 `verify-audit` found the ledger sound up to a torn
//! last line (an append that failed part-way, which the next append cuts and records).

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Context as _;
use fluxgit_audit::SigningKey;
use fluxgit_mcp_sidecar::audit::{self, AuditRecorder};
use fluxgit_mcp_sidecar::bridge::Bridge;
use fluxgit_mcp_sidecar::config::{self, Audience, Config, RawConfig, RootsSource};
use fluxgit_mcp_sidecar::presence::{self, Presence};
use fluxgit_mcp_sidecar::protocol::{self, Server, ServerInfo, Version};
use fluxgit_mcp_sidecar::shutdown::{self, ExitGuard};
use serde_json::{Value, json};

mod exit;
mod ledger;

use exit::EXIT_USAGE;
use ledger::{AuditCommand, audit_command, audit_keygen, verify_audit};

/// FluxGit MCP stdio server: structured, token-budgeted Git context for AI coding agents.
///
/// Without a subcommand, serves MCP over stdin/stdout until stdin closes.
#[derive(Debug, clap::Parser)]
#[command(name = "fluxgit-mcp-sidecar", version, about, args_conflicts_with_subcommands = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Serve with these allowed roots, in place of FLUXGIT_MCP_ALLOWED_ROOTS (which they override, and which
    /// messages then name). This is how an MCPB bundle passes the directories a person picked; it takes no
    /// subcommand.
    #[arg(long, value_name = "DIR", num_args = 1..)]
    roots: Vec<PathBuf>,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Run one tool through the MCP path and print its result envelope as JSON on stdout.
    ///
    /// Exits 1 for an `isError` result (its envelope still on stdout) or a JSON-RPC error (on stderr).
    Call {
        /// Tool name, e.g. `repo.brief`.
        tool: String,
        /// Tool arguments as a JSON object, e.g. '{"repoPath": "/path/to/repo"}'.
        #[arg(default_value = "{}")]
        arguments: String,
    },
    /// Show the configuration in force: allowed roots, run dir, FLUXGIT_* variables, audit and presence
    /// settings, the engine cache and its watcher, and the registered tools.
    ///
    /// With repository paths, reads each through the engine as a server would and shows how its cache serves it
    /// (watched or stat-validated, and why) and the watcher's counts.
    Doctor {
        /// Repositories to check (absolute paths under the allowed roots).
        repos: Vec<String>,
    },
    /// Print a tool's description and inputSchema (its argument names, types and bounds) as JSON.
    Schema {
        /// Tool name, e.g. `commit.details`.
        tool: String,
    },
    /// Print generated documentation: `docs tools` writes the Markdown reference of every tool (arguments with
    /// bounds and defaults, output fields, errors) from the registry's schemas; `docs/tools.md` is its output.
    Docs {
        /// What to document: `tools`.
        topic: String,
    },
    /// Verify an audit ledger: its active file, retained segments and checkpoint, streamed with bounded memory.
    ///
    /// Prints counters (entries, chained, legacy, signed, unsigned, segments, sequence range, torn tails cut and
    /// recorded). Exits 0 when the ledger verifies, 3 on an integrity failure (or an unsigned entry with
    /// --require-signed), 4 when it verifies up to a torn last line (an append that failed part-way, e.g. on a full
    /// disk; the next append cuts it and records the cut), 2 on usage errors.
    /// A clean cut of the newest lines cannot be detected without an external anchor (see the fluxgit-audit docs).
    VerifyAudit {
        /// The ledger's active file, e.g. ~/.local/share/FluxGit/run/audit/mcp.jsonl.
        file: PathBuf,
        /// Public key (PEM) to check signatures with; repeat it for rotated keys. Without it signatures are
        /// counted but not checked.
        #[arg(long = "pubkey", value_name = "PEM")]
        pubkeys: Vec<PathBuf>,
        /// Fail on any unsigned entry or checkpoint (needs --pubkey).
        #[arg(long)]
        require_signed: bool,
    },
    /// Work with the audit ledger: `audit export`.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Manage the fleet registry: the repositories fleet.radar and fleet.digest read when a call names none.
    ///
    /// Stored in `<run dir>/fleet/registry.json`; only repositories inside the allowed roots are added. Tool calls
    /// add the repositories they read as `seen`.
    Fleet {
        #[command(subcommand)]
        command: FleetCommand,
    },
    /// Add this server to an MCP host's user configuration: claude-code, claude-desktop, cursor, vscode, codex or
    /// gemini.
    ///
    /// The entry runs this binary by its absolute path (or, with --runner, `uvx` or `npx` with this version's
    /// package) with FLUXGIT_MCP_ALLOWED_ROOTS set to --roots (and FLUXGIT_MCP_HANDSHAKE_ADDR to --gateway). Everything else in the file is kept as it was; the previous file is
    /// saved as FILE.fluxgit-backup and the new one replaces it atomically. Running it again changes nothing. For
    /// claude-code, the `claude` CLI does the write when it is on the PATH.
    ///
    /// With --remove, takes the entry out again the same way (the previous file saved as
    /// FILE.fluxgit-remove-backup): every other byte is kept, a server list left empty goes, a file left holding
    /// nothing is deleted, and a file without the entry is left alone.
    Install {
        /// The host: claude-code, claude-desktop, cursor, vscode, codex, gemini.
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(
            fluxgit_mcp_sidecar::install::Host::ALL.map(fluxgit_mcp_sidecar::install::Host::name)))]
        host: String,
        /// Directories the server may read repositories under (existing, made absolute and canonical). Without
        /// it the server's default applies: the home directory.
        #[arg(long, value_name = "DIR", num_args = 1..)]
        roots: Vec<PathBuf>,
        /// The approval gateway's loopback address (HOST:PORT), for write proposals. An existing entry's gateway
        /// address is dropped without it (install says so).
        #[arg(long, value_name = "ADDR")]
        gateway: Option<String>,
        /// The name the host shows the server under.
        #[arg(long, value_name = "SERVER_NAME", default_value = "fluxgit")]
        name: String,
        /// Run the server through a package runner instead of this binary's path: `uvx` (PyPI package
        /// fluxgit-mcp) or `npx` (npm package fluxgit-mcp), pinned to this version. The runner must be on the
        /// host's PATH; GUI hosts often do not inherit the shell's.
        #[arg(long, value_name = "RUNNER", value_parser = ["uvx", "npx"], conflicts_with = "remove")]
        runner: Option<String>,
        /// Print what would change and the resulting file; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Remove the entry named --name instead of adding it.
        #[arg(long, conflicts_with_all = ["roots", "gateway"])]
        remove: bool,
    },
    /// Serve MCP over Streamable HTTP (remote and shared use; see docs/http.md) instead of stdio.
    ///
    /// Binds 127.0.0.1:8931 unless --listen says otherwise, and refuses an address that is not loopback without
    /// --tokens. Every request's Host and Origin are checked (DNS rebinding); bodies over 8 MiB get 413.
    ServeHttp {
        /// The address to listen on (HOST:PORT; port 0 picks a free one, printed on stderr).
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8931")]
        listen: std::net::SocketAddr,
        /// The endpoint path.
        #[arg(long, value_name = "PATH", default_value = fluxgit_mcp_sidecar::http::DEFAULT_PATH)]
        path: String,
        /// Bearer tokens file (`token add` writes it): every request then needs one of its tokens.
        #[arg(long, value_name = "FILE")]
        tokens: Option<PathBuf>,
        /// A host name (without port) accepted in the Host header besides loopback names and the bound address,
        /// e.g. the name a reverse proxy forwards; repeatable.
        #[arg(long = "allowed-host", value_name = "NAME")]
        allowed_hosts: Vec<String>,
        /// An origin (scheme://host[:port]) accepted in the Origin header besides loopback ones; repeatable.
        #[arg(long = "allowed-origin", value_name = "ORIGIN")]
        allowed_origins: Vec<String>,
        /// Seconds a request body may take to arrive (a slower one gets 408 and its connection is closed).
        #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
        body_timeout: f64,
        /// Serve with these allowed roots, in place of FLUXGIT_MCP_ALLOWED_ROOTS.
        #[arg(long, value_name = "DIR", num_args = 1..)]
        roots: Vec<PathBuf>,
    },
    /// Manage the bearer tokens of `serve-http`: `token add`.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Generate an Ed25519 audit signing key: PATH (PKCS#8 PEM, mode 0600) and PATH.pub.pem.
    ///
    /// Point FLUXGIT_MCP_AUDIT_SIGN_KEY at PATH; give PATH.pub.pem to verify-audit --pubkey. Never overwrites.
    AuditKeygen {
        /// Where to write the private key.
        path: PathBuf,
    },
}

#[derive(Debug, clap::Subcommand)]
enum TokenCommand {
    /// Add a token to a tokens file (created mode 0600 if absent) and print it once on stdout: only its SHA-256
    /// is stored, so a lost token is replaced by a new one.
    Add {
        /// The tokens file.
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        /// Who holds the token (A-Z a-z 0-9 . _ -), named in logs and refusals.
        #[arg(long)]
        name: String,
        /// Directories its calls may read repositories under, comma-separated.
        #[arg(long, value_name = "DIR,DIR", value_delimiter = ',', required = true)]
        roots: Vec<PathBuf>,
        /// Toolsets its calls may use, comma-separated (default: all).
        #[arg(long, value_name = "SET,SET", value_delimiter = ',')]
        toolsets: Option<Vec<String>>,
    },
}

#[derive(Debug, clap::Subcommand)]
enum FleetCommand {
    /// Register repositories (a path inside a work tree registers its repository), or with --scan every work tree
    /// found below a directory. Exits 1 when a named path is refused (the others are still added).
    Add {
        /// Repositories to add.
        paths: Vec<PathBuf>,
        /// Find work trees below this directory instead (symlinks are not followed; a work tree is not searched
        /// further).
        #[arg(long, value_name = "DIR", conflicts_with = "paths")]
        scan: Option<PathBuf>,
        /// How many levels below --scan's directory to look.
        #[arg(long, default_value_t = fluxgit_engine::fleet::registry::DEFAULT_SCAN_DEPTH)]
        depth: usize,
        /// A label the radar shows with the repository (one path only).
        #[arg(long)]
        label: Option<String>,
    },
    /// List the registry: path, label, how it got there, and whether it can be read now.
    List,
    /// Remove repositories from the registry (the repositories themselves are not touched). Exits 1 when a path was
    /// not registered.
    Remove {
        /// Repositories to remove, as `fleet list` shows them or any path that resolves to them.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

/// Runs the selected mode.
pub(crate) fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        None => serve_stdio(&cli.roots),
        Some(Command::Call { tool, arguments }) => call(&tool, &arguments),
        Some(Command::Doctor { repos }) => Ok(doctor(&repos)),
        Some(Command::Schema { tool }) => schema(&tool),
        Some(Command::Docs { topic }) => docs(&topic),
        Some(Command::VerifyAudit { file, pubkeys, require_signed }) => {
            Ok(verify_audit(&file, &pubkeys, require_signed))
        }
        Some(Command::AuditKeygen { path }) => audit_keygen(&path),
        Some(Command::ServeHttp { listen, path, tokens, allowed_hosts, allowed_origins, body_timeout, roots }) => {
            let Ok(body_timeout) = std::time::Duration::try_from_secs_f64(body_timeout) else {
                eprintln!("fluxgit-mcp-sidecar serve-http: --body-timeout must be a number of seconds");
                return Ok(ExitCode::from(EXIT_USAGE));
            };
            let options = fluxgit_mcp_sidecar::http::Options {
                path,
                allowed_hosts,
                allowed_origins,
                body_timeout,
                ..fluxgit_mcp_sidecar::http::Options::new()
            };
            serve_http(listen, options, tokens.as_deref(), &roots)
        }
        Some(Command::Token { command: TokenCommand::Add { file, name, roots, toolsets } }) => {
            token_add(&file, &name, &roots, toolsets)
        }
        Some(Command::Audit { command }) => Ok(audit_command(command)),
        Some(Command::Fleet { command }) => fleet(command),
        Some(Command::Install { host, name, dry_run, remove: true, .. }) => install_remove(&host, &name, dry_run),
        Some(Command::Install { host, roots, gateway, name, dry_run, remove: false, runner }) => {
            install(&host, &roots, gateway.as_deref(), &name, dry_run, runner.as_deref())
        }
    }
}

/// `install HOST`: merges this server's entry into the host's user configuration (see the `install` module).
fn install(
    host: &str,
    roots: &[PathBuf],
    gateway: Option<&str>,
    name: &str,
    dry_run: bool,
    runner: Option<&str>,
) -> anyhow::Result<ExitCode> {
    use fluxgit_mcp_sidecar::install::{self, Dirs, Entry, Host, Runner};
    let host = Host::from_name(host).context("unknown host")?;
    let fail = |message: String| {
        eprintln!("fluxgit-mcp-sidecar install: {message}");
        Ok(ExitCode::FAILURE)
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return fail(format!("--name {name:?}: use letters, digits, '-' and '_' only"));
    }
    // The roots go into a UTF-8 file: a name that is not UTF-8 would be written as U+FFFD and name nothing.
    let mut canonical_roots = Vec::new();
    let mut warnings = String::new();
    for root in roots {
        let absolute = std::path::absolute(root).unwrap_or_else(|_| root.clone());
        let resolved = match absolute.canonicalize() {
            Ok(canonical) if canonical.is_dir() => canonical,
            Ok(canonical) => return fail(format!("--roots {}: not a directory", canonical.display())),
            Err(error) if dry_run && error.kind() == io::ErrorKind::NotFound => {
                warnings.push_str(&format!(
                    "  warning: --roots {}: does not exist (yet); install without --dry-run refuses it\n",
                    absolute.display()
                ));
                absolute
            }
            Err(error) => return fail(format!("--roots {}: {error}", absolute.display())),
        };
        if resolved.to_str().is_none() {
            return fail(format!(
                "--roots {}: the path is not valid UTF-8 (shown with U+FFFD in its place); host configuration files \
                 hold UTF-8 text only, so it cannot be written: rename the directory or allow a parent",
                resolved.display()
            ));
        }
        canonical_roots.push(resolved);
    }
    let mut env = Vec::new();
    if !canonical_roots.is_empty() {
        let Ok(joined) = std::env::join_paths(&canonical_roots) else {
            return fail("a --roots directory holds the path-list separator ':'".to_owned());
        };
        let joined = joined.into_string().expect("every root was checked to be UTF-8");
        env.push((config::ALLOWED_ROOTS_VAR.to_owned(), joined));
    }
    if let Some(address) = gateway {
        if let Err(why) = fluxgit_mcp_sidecar::bridge::address::parse(address) {
            return fail(format!("--gateway: {why}"));
        }
        env.push((config::GATEWAY_ADDR_VARS[0].to_owned(), address.to_owned()));
    }
    let (command, args) = match runner {
        Some(runner) => Runner::from_name(runner).context("unknown runner")?.command(env!("CARGO_PKG_VERSION")),
        None => {
            (std::env::current_exe().and_then(|path| path.canonicalize()).context("locating this binary")?, Vec::new())
        }
    };
    let entry = Entry { name: name.to_owned(), command, args, env };
    let Some(dirs) = Dirs::from_env() else {
        return fail("HOME is not set to an absolute path: cannot find the host's configuration".to_owned());
    };
    let cli = (host == Host::ClaudeCode).then(install::claude_cli).flatten();
    // Only a dry run and the `claude` CLI plan without the lock; otherwise the merge is made under it.
    let outcome = if dry_run || cli.is_some() {
        install::plan(host, &dirs, &entry).map(|plan| (plan, None))
    } else {
        install::apply(host, &dirs, &entry).map(|applied| (applied.plan, applied.backup))
    };
    let mut out = String::new();
    out.push_str(&format!("{} ({}): {}\n", host.title(), host.name(), host.config_file(&dirs).display()));
    out.push_str(&format!("  server {:?}: {}\n", entry.name, entry.command.display()));
    for (variable, value) in &entry.env {
        out.push_str(&format!("  {variable}={value}\n"));
    }
    out.push_str(&warnings);
    if canonical_roots.is_empty() {
        out.push_str("  no --roots: the server allows repositories under the home directory (its default)\n");
    }
    let (plan, backup) = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            io::stdout().write_all(out.as_bytes())?;
            return fail(error.to_string());
        }
    };
    // A dry run shows the notes in its summary; a real install says them on stderr.
    for note in dropped_variables(&plan.previous_env, &entry.env) {
        if dry_run {
            out.push_str(&format!("  {note}\n"));
        } else {
            eprintln!("fluxgit-mcp-sidecar install: {note}");
        }
    }
    if plan.changes.is_empty() {
        out.push_str("already configured: nothing changed\n");
        io::stdout().write_all(out.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(claude) = cli {
        let exists = plan.changes.iter().any(|change| !change.starts_with("added "));
        let commands = install::claude_commands(&entry, exists);
        for arguments in &commands {
            out.push_str(&format!(
                "{} {}\n",
                if dry_run { "would run:" } else { "running:" },
                shell_words(&claude, arguments)
            ));
        }
        io::stdout().write_all(out.as_bytes())?;
        if dry_run {
            return Ok(ExitCode::SUCCESS);
        }
        for arguments in &commands {
            let status = std::process::Command::new(&claude).args(arguments).status().context("running claude")?;
            if !status.success() {
                return fail(format!("`claude {}` failed ({status})", arguments[..2].join(" ")));
            }
        }
        println!("done: restart {} to load it", host.title());
        return Ok(ExitCode::SUCCESS);
    }
    written(out, &plan, backup.as_deref(), dry_run, &format!("restart {} to load it", host.title()))
}

/// `install HOST --remove`: takes the entry `name` out of the host's user configuration (see the `install` module).
fn install_remove(host: &str, name: &str, dry_run: bool) -> anyhow::Result<ExitCode> {
    use fluxgit_mcp_sidecar::install::{self, Dirs, Host};
    let host = Host::from_name(host).context("unknown host")?;
    let fail = |message: String| {
        eprintln!("fluxgit-mcp-sidecar install --remove: {message}");
        Ok(ExitCode::FAILURE)
    };
    let Some(dirs) = Dirs::from_env() else {
        return fail("HOME is not set to an absolute path: cannot find the host's configuration".to_owned());
    };
    let cli = (host == Host::ClaudeCode).then(install::claude_cli).flatten();
    // As for install: only a dry run and the `claude` CLI plan without the lock.
    let outcome = if dry_run || cli.is_some() {
        install::plan_removal(host, &dirs, name).map(|plan| (plan, None))
    } else {
        install::apply_removal(host, &dirs, name).map(|applied| (applied.plan, applied.backup))
    };
    let mut out = format!("{} ({}): {}\n", host.title(), host.name(), host.config_file(&dirs).display());
    let (plan, backup) = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            io::stdout().write_all(out.as_bytes())?;
            return fail(error.to_string());
        }
    };
    if plan.changes.is_empty() {
        let why = if plan.before.is_none() { "the file does not exist" } else { "the file has no such entry" };
        out.push_str(&format!("no server {name:?} to remove ({why}): nothing changed\n"));
        io::stdout().write_all(out.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(claude) = cli {
        let arguments = install::claude_remove_command(name);
        let verb = if dry_run { "would run:" } else { "running:" };
        out.push_str(&format!("{verb} {}\n", shell_words(&claude, &arguments)));
        io::stdout().write_all(out.as_bytes())?;
        if dry_run {
            return Ok(ExitCode::SUCCESS);
        }
        let status = std::process::Command::new(&claude).args(&arguments).status().context("running claude")?;
        if !status.success() {
            return fail(format!("`claude mcp remove` failed ({status})"));
        }
        println!("done: restart {} to unload it", host.title());
        return Ok(ExitCode::SUCCESS);
    }
    written(out, &plan, backup.as_deref(), dry_run, &format!("restart {} to unload it", host.title()))
}

/// Prints `out`, then the changes of `plan` and, for a dry run, the file as it would read, else where the previous
/// file was saved and `next` (what the person does now): the end of `install` and of `install --remove`.
fn written(
    mut out: String,
    plan: &fluxgit_mcp_sidecar::install::Plan,
    backup: Option<&std::path::Path>,
    dry_run: bool,
    next: &str,
) -> anyhow::Result<ExitCode> {
    for change in &plan.changes {
        out.push_str(&format!("  {change}\n"));
    }
    if dry_run && plan.delete {
        out.push_str("dry run: nothing written; the file would be deleted\n");
    } else if dry_run {
        out.push_str("dry run: nothing written; the file would read:\n");
        out.push_str(&plan.after);
        if !plan.after.ends_with('\n') {
            out.push('\n');
        }
    } else {
        if let Some(backup) = backup {
            out.push_str(&format!("  previous file saved as {}\n", backup.display()));
        }
        out.push_str(&format!("written: {next}\n"));
    }
    io::stdout().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// One note per variable of the existing entry's env that the new entry lacks (install writes `env` whole), e.g.
/// `note: drops FLUXGIT_MCP_HANDSHAKE_ADDR=127.0.0.1:7420 from the existing entry (pass --gateway to keep it)`.
fn dropped_variables(previous: &[(String, String)], new: &[(String, String)]) -> Vec<String> {
    let gateway_given = new.iter().any(|(variable, _)| variable == config::GATEWAY_ADDR_VARS[0]);
    previous
        .iter()
        .filter(|(variable, _)| !new.iter().any(|(kept, _)| kept == variable))
        .map(|(variable, value)| {
            let hint = if config::GATEWAY_ADDR_VARS.contains(&variable.as_str()) {
                if gateway_given {
                    format!("--gateway sets {} instead", config::GATEWAY_ADDR_VARS[0])
                } else {
                    "pass --gateway to keep it".to_owned()
                }
            } else if variable == config::ALLOWED_ROOTS_VAR {
                "pass --roots to keep it".to_owned()
            } else {
                "install writes the entry's env whole: add it again by hand".to_owned()
            };
            format!("note: drops {variable}={value} from the existing entry ({hint})")
        })
        .collect()
}

/// A command line as a person would type it: arguments with spaces or quotes in single quotes.
fn shell_words(program: &Path, arguments: &[String]) -> String {
    let quote = |word: &str| {
        if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@".contains(c)) {
            word.to_owned()
        } else {
            format!("'{}'", word.replace('\'', "'\\''"))
        }
    };
    std::iter::once(program.display().to_string())
        .chain(arguments.iter().map(|word| quote(word)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `fleet add|list|remove`: edits `<run dir>/fleet/registry.json` (atomically replaced).
fn fleet(command: FleetCommand) -> anyhow::Result<ExitCode> {
    use fluxgit_engine::fleet::registry::{self, Origin, Registry};
    let config = Config::validate(RawConfig::from_env()).context("invalid configuration")?;
    let file = config.registry_file();
    // No cache and no watcher: this process only resolves paths.
    let cache = fluxgit_engine::cache::Options { enabled: false, watch: false, ..config.cache_options() };
    let engine = fluxgit_engine::Engine::with_cache(config.engine_options(), cache);
    let mut registry = Registry::load(&file)?;
    let mut out = String::new();
    let mut refused = false;
    match command {
        FleetCommand::Add { paths, scan, depth, label } => {
            if label.is_some() && (scan.is_some() || paths.len() != 1) {
                eprintln!("fluxgit-mcp-sidecar fleet add: --label names one repository: give exactly one path");
                return Ok(ExitCode::from(EXIT_USAGE));
            }
            let candidates = match &scan {
                Some(dir) => {
                    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
                    let canonical = dir.canonicalize().with_context(|| format!("{}", dir.display()))?;
                    if !config.allowed_roots.iter().any(|root| canonical.starts_with(root)) {
                        eprintln!(
                            "fluxgit-mcp-sidecar fleet add: {} is outside the allowed roots. {}",
                            canonical.display(),
                            config.roots_in_force().for_audience(Audience::Shell).explain()
                        );
                        return Ok(ExitCode::FAILURE);
                    }
                    registry::scan(&canonical, depth)
                }
                None => paths,
            };
            if scan.is_none() && candidates.is_empty() {
                eprintln!("fluxgit-mcp-sidecar fleet add: name repositories or --scan DIR");
                return Ok(ExitCode::from(EXIT_USAGE));
            }
            let now_ms = fluxgit_contract::now_ms_i64();
            for (path, outcome) in fluxgit_engine::fleet::resolve_for_registry(&engine, &candidates) {
                match outcome {
                    Ok(root) => {
                        let changed = registry.insert(&root, label.as_deref(), Origin::Added, now_ms);
                        let verb = if changed { "added" } else { "already registered" };
                        out.push_str(&format!("{verb}: {}\n", root.display()));
                    }
                    Err(failure) => {
                        // A scan reports what it skips; a named path that is refused fails the command.
                        refused |= scan.is_none();
                        out.push_str(&format!(
                            "refused: {} ({}: {})\n",
                            path.display(),
                            failure.reason,
                            failure.message
                        ));
                    }
                }
            }
            registry.save(&file)?;
        }
        FleetCommand::List => {
            for entry in &registry.repositories {
                let inside = config.allowed_roots.iter().any(|root| entry.path.starts_with(root));
                let status = if !inside {
                    "outside the allowed roots: not read".to_owned()
                } else {
                    match engine.resolve_unrecorded(&entry.path.display().to_string()) {
                        Ok(_) => "ok".to_owned(),
                        Err(error) => format!("unreadable: {error}"),
                    }
                };
                let origin = match entry.origin {
                    Origin::Added => "added",
                    Origin::Seen => "seen",
                };
                let label = entry.label.as_deref().map(|label| format!(" [{label}]")).unwrap_or_default();
                out.push_str(&format!("{}{label}\t{origin}\t{status}\n", entry.path.display()));
            }
            if registry.repositories.is_empty() {
                out.push_str(&format!("the registry is empty ({})\n", file.display()));
            }
        }
        FleetCommand::Remove { paths } => {
            for path in paths {
                let absolute = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
                let resolved = engine.resolve_unrecorded(&absolute.display().to_string()).ok();
                let removed = registry.remove(&absolute)
                    | resolved.is_some_and(|repo| registry.remove(&repo.location.root))
                    | absolute.canonicalize().is_ok_and(|canonical| registry.remove(&canonical));
                if removed {
                    out.push_str(&format!("removed: {}\n", absolute.display()));
                } else {
                    refused = true;
                    out.push_str(&format!("not registered: {}\n", absolute.display()));
                }
            }
            registry.save(&file)?;
        }
    }
    io::stdout().write_all(out.as_bytes())?;
    Ok(if refused { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// The server for `config`; its refusals outside the roots say where to set them for `audience`.
fn build_server(config: &Config, audience: Audience) -> anyhow::Result<Server> {
    let engine = fluxgit_engine::Engine::with_cache(config.engine_options(), config.cache_options())
        .with_registry(config.registry_file())
        .with_index(config.index_dir())
        .with_generation_tables(config.generation_tables_dir());
    fluxgit_mcp_sidecar::tools::listing::set_spelling(config.listing.spelling);
    let mut registry = fluxgit_mcp_sidecar::tools::registry().context("building the tool registry")?;
    let bridge = Bridge::from_config(config);
    registry.restrict(config.listing.clone(), bridge.is_configured());
    Ok(Server::new(registry, engine).with_bridge(bridge).with_roots(config.roots_in_force().for_audience(audience)))
}

/// Adds the audit recorder when the audit is on; returns the handle that syncs its pending entries. Fails closed
/// on a bad key or an unusable ledger directory.
fn attach_audit(
    config: &Config,
    server: &mut Server,
    guard: &ExitGuard,
) -> anyhow::Result<Option<fluxgit_audit::SyncHandle>> {
    let Some(ledger) = audit::open(config)? else { return Ok(None) };
    tracing::info!(ledger = %ledger.path().display(), signed = ledger.key_id().is_some(), "audit ledger on");
    let handle = ledger.sync_handle();
    server.observe_calls(Box::new(AuditRecorder::new(ledger, guard.clone())));
    Ok(handle)
}

/// The one line a person who starts the server on a terminal reads before it waits for JSON-RPC on stdin.
const TERMINAL_NOTICE: &str = "fluxgit-mcp-sidecar: serving MCP (JSON-RPC) on stdin/stdout for an MCP host; \
    Ctrl-D ends. To try a tool by hand: fluxgit-mcp-sidecar call repo_brief '{\"repoPath\": \"/path/to/repo\"}'; \
    see also `fluxgit-mcp-sidecar doctor` and `--help`.";

/// `token add`: a new token printed once, its hash stored.
fn token_add(file: &Path, name: &str, roots: &[PathBuf], toolsets: Option<Vec<String>>) -> anyhow::Result<ExitCode> {
    if let Some(unknown) = toolsets
        .iter()
        .flatten()
        .find(|set| !fluxgit_mcp_sidecar::tools::listing::TOOLSETS.iter().any(|toolset| toolset.name == set.as_str()))
    {
        eprintln!("fluxgit-mcp-sidecar token add: {}", fluxgit_mcp_sidecar::http::tokens::unknown_toolset(unknown));
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let token = fluxgit_mcp_sidecar::http::tokens::add(file, name, roots, toolsets)?;
    println!("{token}");
    eprintln!("token {name} added to {}: it is shown once, only its SHA-256 is stored", file.display());
    Ok(ExitCode::SUCCESS)
}

/// `serve-http`: the server of [`serve_stdio`] (audit, presence) behind the Streamable HTTP transport.
fn serve_http(
    listen: std::net::SocketAddr,
    options: fluxgit_mcp_sidecar::http::Options,
    tokens: Option<&Path>,
    roots: &[PathBuf],
) -> anyhow::Result<ExitCode> {
    use fluxgit_mcp_sidecar::http;
    let tokens = tokens.map(http::tokens::Tokens::load).transpose().context("--tokens")?;
    let options = http::Options { tokens, ..options };
    let bound = http::bind(listen, &options)?;
    let config = config_with_roots(roots)?;
    let mut server = build_server(&config, Audience::Host)?;
    let guard = ExitGuard::default();
    let presence_path = attach_observers(&config, &mut server, &guard)?;
    let mut token_servers = Vec::new();
    for entry in options.tokens.iter().flat_map(http::tokens::Tokens::entries) {
        // Each token's calls run on an engine allowed only the token's roots: the engine's own walks (folder
        // scans, worktree lists) then stop there, and its cache holds only what the token may read.
        let server_roots = config.roots_in_force();
        let token_roots = http::token_roots_within(&entry.roots, &server_roots.roots);
        if token_roots.is_empty() {
            let shown = |roots: &[PathBuf]| roots.iter().map(|root| root.display().to_string()).collect::<Vec<_>>();
            anyhow::bail!(
                "--tokens: token {} has no root inside this server's allowed roots (its roots: {}; the server's, \
                 from {}: {}): widen FLUXGIT_MCP_ALLOWED_ROOTS or --roots, or give the token roots inside them",
                entry.name,
                shown(&entry.roots).join(", "),
                server_roots.source_words(),
                shown(&server_roots.roots).join(", ")
            );
        }
        let token_config = Config { allowed_roots: token_roots.clone(), ..config.clone() };
        let token_server = build_server(&token_config, Audience::Host)?
            .with_roots(server_roots.for_token(&entry.name, token_roots.clone()))
            .for_token(&entry.name)
            .sharing_observers_of(&server);
        token_servers.push((entry.name.clone(), token_server, token_roots));
    }
    let mut servers = http::Servers::new(server);
    for (name, token_server, token_roots) in token_servers {
        servers.insert_token(&name, token_server, token_roots);
    }
    eprintln!(
        "fluxgit-mcp-sidecar: serving MCP on http://{}{} ({})",
        bound.local,
        options.path,
        match &options.tokens {
            Some(tokens) => format!("{} bearer tokens", tokens.len()),
            None => "no authorization: loopback only".to_owned(),
        }
    );
    let result = http::serve(servers, bound, options);
    {
        let _hold = guard.hold();
        presence_path.iter().for_each(|path| presence::remove_file(path));
    }
    result.context("HTTP transport failed")?;
    Ok(ExitCode::SUCCESS)
}

/// The configuration from the environment, with `--roots` in place of FLUXGIT_MCP_ALLOWED_ROOTS when given.
fn config_with_roots(roots: &[PathBuf]) -> anyhow::Result<Config> {
    let mut raw = RawConfig::from_env();
    if !roots.is_empty() {
        let joined = std::env::join_paths(roots).context("a --roots directory holds the path-list separator")?;
        raw.vars.insert(config::ALLOWED_ROOTS_VAR.to_owned(), joined);
    }
    Config::validate(raw).context("invalid configuration")
}

/// Attaches the audit ledger and the presence file to `server` and removes the presence file on a signal (after
/// syncing the audit); returns the presence file's path.
fn attach_observers(config: &Config, server: &mut Server, guard: &ExitGuard) -> anyhow::Result<Option<PathBuf>> {
    let audit_sync = attach_audit(config, server, guard)?;
    let presence_path = if config.presence_disabled {
        None
    } else {
        let pid = std::process::id();
        let swept = presence::sweep(&config.presence_dir, pid, SystemTime::now());
        if swept > 0 {
            tracing::info!(swept, "stale presence files removed");
        }
        let presence = Presence::new(&config.presence_dir, pid, guard.clone());
        let path = presence.path();
        server.observe_calls(Box::new(presence));
        Some(path)
    };
    let on_signal = presence_path.clone();
    let on_terminate = move || {
        // The grouped audit entries of the reads answered so far become durable before the exit.
        if let Some(Err(error)) = audit_sync.as_ref().map(fluxgit_audit::SyncHandle::sync) {
            tracing::error!(%error, "audit ledger: the sync at exit failed");
        }
        on_signal.iter().for_each(|path| presence::remove_file(path));
    };
    if let Err(error) = shutdown::on_terminate(guard.clone(), on_terminate) {
        tracing::warn!(%error, "signal handlers not installed: only end of input removes the presence file");
    }
    Ok(presence_path)
}

fn serve_stdio(roots: &[PathBuf]) -> anyhow::Result<ExitCode> {
    if io::IsTerminal::is_terminal(&io::stdin()) {
        eprintln!("{TERMINAL_NOTICE}");
    }
    let config = config_with_roots(roots)?;
    let mut server = build_server(&config, Audience::Host)?;
    let guard = ExitGuard::default();
    let presence_path = attach_observers(&config, &mut server, &guard)?;
    tracing::info!(
        version = ServerInfo::CURRENT.version,
        roots = ?config.allowed_roots,
        tools = server.registry().len(),
        "serving MCP on stdio"
    );
    let options = fluxgit_mcp_sidecar::serve::Options::for_this_machine();
    let result = fluxgit_mcp_sidecar::serve(server, io::BufReader::new(io::stdin()), io::stdout(), &options);
    {
        let _hold = guard.hold();
        presence_path.iter().for_each(|path| presence::remove_file(path));
    }
    match result {
        Ok(_) => Ok(ExitCode::SUCCESS),
        // The client closed our stdout: nobody is left to serve.
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(error) => Err(error).context("stdio transport failed"),
    }
}

/// The longest a one-shot `call` waits, after printing its answer, for a commit index build its call started.
const INDEX_BUILD_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// `call TOOL ARGS`: one `tools/call` at the newest protocol version through [`Server::handle`]; an index build
/// the call started in the background is finished before the process exits (at most [`INDEX_BUILD_WAIT`]).
fn call(tool: &str, arguments: &str) -> anyhow::Result<ExitCode> {
    let mut arguments: Value = match serde_json::from_str(arguments) {
        Ok(arguments) => arguments,
        Err(error) => {
            eprintln!("fluxgit-mcp-sidecar call: arguments are not valid JSON: {error}");
            return Ok(ExitCode::from(2));
        }
    };
    if let Ok(cwd) = std::env::current_dir() {
        absolute_repo_paths(&mut arguments, &cwd);
    }
    let config = Config::validate(RawConfig::from_env()).context("invalid configuration")?;
    // A person at a shell reads the refusals of `call`: the roots are set in the command's environment.
    let mut server = build_server(&config, Audience::Shell)?;
    attach_audit(&config, &mut server, &ExitGuard::default())?;
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
    {
        let mut stdout = io::stdout().lock();
        writeln!(stdout, "{shown}").context("writing to stdout")?;
        stdout.flush().context("writing to stdout")?;
    }
    // A search that walked the history started the first build of the commit index: finish and save it, or every
    // later one-shot call would walk again and abandon it again.
    let finished = server.engine().finish_index_builds(INDEX_BUILD_WAIT);
    if finished > 0 {
        eprintln!("fluxgit-mcp-sidecar call: finished building the commit index for later searches");
    }
    Ok(if result["isError"].as_bool().unwrap_or(false) { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// Makes a relative `repoPath` (or entry of `repoPaths`) absolute against `cwd`, as a person at a shell means
/// `"repoPath": "."`. Only `call` does this: over MCP a host shares no current directory with the server, so paths
/// stay absolute there.
fn absolute_repo_paths(arguments: &mut Value, cwd: &std::path::Path) {
    let absolute = |path: &mut Value| {
        if let Some(text) = path.as_str().filter(|text| !text.is_empty() && !std::path::Path::new(text).is_absolute()) {
            let joined = cwd.join(text);
            // `.` and `..` are resolved by the path itself when it exists; a path that does not is refused later.
            let resolved = joined.canonicalize().unwrap_or(joined);
            *path = Value::String(resolved.to_string_lossy().into_owned());
        }
    };
    if let Some(path) = arguments.get_mut("repoPath") {
        absolute(path);
    }
    if let Some(Value::Array(paths)) = arguments.get_mut("repoPaths") {
        paths.iter_mut().for_each(absolute);
    }
}

/// `: 118 MB (index 115 MB, audit 2.1 MB, ...)`: the run dir's size and that of each part in it, largest first;
/// empty when it does not exist yet. Links are not followed; at most [`SIZE_ENTRIES`] entries are looked at (a size
/// past that ends with `+`).
fn run_dir_sizes(run_dir: &std::path::Path) -> String {
    let Ok(entries) = std::fs::read_dir(run_dir) else { return String::new() };
    let mut budget = SIZE_ENTRIES;
    let mut parts: Vec<(u64, String)> = entries
        .flatten()
        .map(|entry| (tree_size(&entry.path(), &mut budget), entry.file_name().to_string_lossy().into_owned()))
        .collect();
    parts.sort_by(|one, two| two.0.cmp(&one.0).then_with(|| one.1.cmp(&two.1)));
    let total: u64 = parts.iter().map(|(size, _)| size).sum();
    let more = if budget == 0 { "+" } else { "" };
    let listed: Vec<String> = parts.iter().map(|(size, name)| format!("{name} {}", human_bytes(*size))).collect();
    format!(": {}{more} ({})", human_bytes(total), listed.join(", "))
}

/// Entries [`run_dir_sizes`] looks at, at most.
const SIZE_ENTRIES: usize = 100_000;

/// The bytes of the files under `path` (itself included), not following links, within `budget` entries.
fn tree_size(path: &std::path::Path, budget: &mut usize) -> u64 {
    let mut total = 0;
    let mut todo = vec![path.to_path_buf()];
    while let Some(path) = todo.pop() {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        let Ok(metadata) = std::fs::symlink_metadata(&path) else { continue };
        if metadata.is_dir() {
            todo.extend(std::fs::read_dir(&path).into_iter().flatten().flatten().map(|entry| entry.path()));
        } else {
            total += metadata.len();
        }
    }
    total
}

/// `bytes` in B, KB, MB or GB (powers of 1,000), one decimal under 10.
fn human_bytes(bytes: u64) -> String {
    let units = [("GB", 1e9), ("MB", 1e6), ("KB", 1e3)];
    for (unit, size) in units {
        let value = bytes as f64 / size;
        if value >= 1.0 {
            return if value < 10.0 { format!("{value:.1} {unit}") } else { format!("{value:.0} {unit}") };
        }
    }
    format!("{bytes} B")
}

/// `schema TOOL`: the tool's title, description and inputSchema; exit 1 for an unknown tool.
fn schema(tool: &str) -> anyhow::Result<ExitCode> {
    use fluxgit_mcp_sidecar::tools::listing;
    let registry = fluxgit_mcp_sidecar::tools::registry().context("building the tool registry")?;
    let Some(found) = registry.lookup(tool) else {
        let names: Vec<_> = registry.tools().map(|tool| listing::listed(tool.definition().name)).collect();
        eprintln!("unknown tool {tool:?}; tools: {}", names.join(", "));
        return Ok(ExitCode::FAILURE);
    };
    let definition = found.definition();
    let shown = json!({ "name": listing::listed(definition.name), "title": definition.title, "description": definition.description,
        "readOnly": definition.read_only, "inputSchema": definition.input_schema });
    writeln!(io::stdout().lock(), "{}", pretty(&shown)).context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// `docs tools`: the tools reference as Markdown on stdout; exit 2 for another topic.
fn docs(topic: &str) -> anyhow::Result<ExitCode> {
    if topic != "tools" {
        eprintln!("unknown docs topic {topic:?}; topics: tools");
        return Ok(ExitCode::from(2));
    }
    let registry = fluxgit_mcp_sidecar::tools::registry().context("building the tool registry")?;
    let markdown = fluxgit_mcp_sidecar::tools::docs::tools_markdown(&registry);
    io::stdout().lock().write_all(markdown.as_bytes()).context("writing to stdout")?;
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

fn doctor(repos: &[String]) -> ExitCode {
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
    out.push_str(&format!(
        "run dir: {} (from {run_dir_source}){}\n",
        config.run_dir.display(),
        run_dir_sizes(&config.run_dir)
    ));
    let mut healthy = true;
    out.push_str(&format!("audit log: {} ({})\n", config.audit_log.display(), audit_state(&config)));
    if !config.audit_disabled {
        out.push_str(&format!("audit durability: {}\n", audit::durability_text()));
    }
    match &config.audit_sign_key {
        _ if config.audit_disabled => out.push_str("audit signing: not used (audit disabled)\n"),
        None => out.push_str("audit signing: off (entries are chained, not signed)\n"),
        Some(path) => match SigningKey::load(path) {
            Ok(key) => out.push_str(&format!("audit signing: key id {} ({})\n", key.key_id(), path.display())),
            Err(error) => {
                healthy = false;
                out.push_str(&format!("audit signing: UNUSABLE KEY, the server will refuse to start: {error}\n"));
            }
        },
    }
    let presence_state =
        if config.presence_disabled { "disabled" } else { "on: written from the first accepted call, removed at exit" };
    out.push_str(&format!("presence files: {} ({presence_state})\n", config.presence_dir.display()));
    let detection = if config.agent_detection_disabled {
        "disabled (agents.presence answers 10011, previews carry no otherAgents)"
    } else {
        "on (agents.presence; informational otherAgents on previews)"
    };
    out.push_str(&format!("agent detection: {detection}\n"));
    out.push_str(&format!("gateway: {}\n", Bridge::from_config(&config).describe()));
    healthy &= engine_cache(&config, repos, &mut out);

    match fluxgit_mcp_sidecar::tools::registry() {
        Ok(registry) => {
            let gateway = Bridge::from_config(&config).is_configured();
            out.push_str(&fluxgit_mcp_sidecar::tools::doctor_report(&registry, &config.listing, gateway));
        }
        Err(error) => {
            out.push_str(&format!("tools: registry error: {error}\n"));
            print!("{out}");
            return ExitCode::FAILURE;
        }
    }
    print!("{out}");
    if healthy { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// The engine cache section of `doctor`: bound, watcher mode, kernel limits, and for each repository given, how it
/// is served; then the watcher's counts. Returns `false` when a repository cannot be read.
fn engine_cache(config: &Config, repos: &[String], out: &mut String) -> bool {
    let mib = config.cache_bytes / (1024 * 1024);
    out.push_str(&format!("engine cache: {mib} MiB bound ({})\n", config::CACHE_MB_VAR));
    let watching = if config.watch_disabled {
        format!("disabled ({}): every repository is served stat-validated", config::WATCH_DISABLED_VAR)
    } else {
        "on: one inotify instance watches every repository seen".to_owned()
    };
    out.push_str(&format!("watcher: {watching}\n"));
    for limit in ["max_user_watches", "max_user_instances", "max_queued_events"] {
        if let Ok(value) = std::fs::read_to_string(format!("/proc/sys/fs/inotify/{limit}")) {
            out.push_str(&format!("  fs.inotify.{limit} = {}\n", value.trim()));
        }
    }
    let engine = fluxgit_engine::Engine::with_cache(config.engine_options(), config.cache_options());
    let mut healthy = true;
    for path in repos {
        let outcome = engine.resolve(path).and_then(|repo| {
            let options = fluxgit_engine::brief::Options::default();
            let measure = &mut |_: &fluxgit_engine::Budgeted<fluxgit_engine::brief::Brief>| 0;
            engine.brief(&repo, &options, usize::MAX, measure)?;
            Ok(engine.cache_diagnostics(&repo))
        });
        match outcome {
            Ok(diagnostics) => {
                let reason = diagnostics.reason.map(|reason| format!(": {reason}")).unwrap_or_default();
                out.push_str(&format!("  {path}: {}{reason}\n", diagnostics.cache));
            }
            Err(error) => {
                healthy = false;
                out.push_str(&format!("  {path}: {error}\n"));
            }
        }
    }
    let stats = engine.cache_stats();
    out.push_str(&format!(
        "  watcher {}: {} repositories ({} watched, {} stat-validated), {} watches, {} events, {} invalidations, \
         {} overflows\n",
        stats.watcher,
        stats.repositories,
        stats.watched,
        stats.fallbacks,
        stats.watches,
        stats.events,
        stats.invalidations,
        stats.overflows
    ));
    healthy
}

/// The audit ledger's state for `doctor`.
fn audit_state(config: &Config) -> String {
    if config.audit_disabled {
        return "disabled".to_owned();
    }
    match std::fs::metadata(&config.audit_log) {
        Ok(metadata) => format!("on: every tools/call is appended; active file {} bytes", metadata.len()),
        Err(_) => "on: every tools/call is appended; not created yet".to_owned(),
    }
}
