//! `fluxgit-gateway`: the reference approval gateway (glue over the `fluxgit_gateway` library).
//!
//! `serve` (the default) listens on loopback and prints the `FLUXGIT_MCP_HANDSHAKE_ADDR` line and the approval page's
//! address; `list`, `show`,
//! `approve`, `reject`, `reconcile` and `restore` are a person's commands on the same run dir; `open` opens the
//! serving gateway's page.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Parser, Subcommand};
use fluxgit_gateway::audit::Audit;
use fluxgit_gateway::config::{self, Config, RawConfig};
use fluxgit_gateway::journal::{Journal, Status};
use fluxgit_gateway::serve;
use fluxgit_gateway::time::{format_ms, now_ms};
use fluxgit_gateway::{approval, card, desktop, service};

#[derive(Debug, Parser)]
#[command(
    name = "fluxgit-gateway",
    version,
    about = "FluxGit reference approval gateway: a person approves each write an agent proposes"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the loopback HTTP API and execute approved proposals (the default).
    Serve {
        /// Loopback address to bind (port 0: any free port).
        #[arg(long, default_value = serve::DEFAULT_ADDR)]
        addr: SocketAddr,
        /// Serve no approval page (and print no page address): decide with `show` and `approve` only.
        #[arg(long)]
        no_page: bool,
        /// Raise no desktop notification (nor bell) for new proposals (also FLUXGIT_GATEWAY_NOTIFY_DISABLED).
        #[arg(long)]
        no_notify: bool,
    },
    /// Open the serving gateway's approval page in your browser (or print its address without a desktop).
    Open {
        /// Print the address instead of opening it.
        #[arg(long)]
        print: bool,
    },
    /// Install the gateway as a user service (systemd on Linux, launchd on macOS), enabled and started.
    InstallService {
        /// Loopback address the service binds.
        #[arg(long, default_value = serve::DEFAULT_ADDR)]
        addr: SocketAddr,
        /// Allowed roots (default: FLUXGIT_MCP_ALLOWED_ROOTS as set now, else the home directory).
        #[arg(long, num_args = 1..)]
        roots: Vec<PathBuf>,
        /// Write the service file only, and print what enables it.
        #[arg(long)]
        no_enable: bool,
    },
    /// Stop, disable and remove the user service that install-service wrote.
    UninstallService,
    /// List proposals, newest first.
    List {
        /// Show every proposal, not only those waiting or needing attention.
        #[arg(long)]
        all: bool,
    },
    /// Print a proposal's card and, while pending, a new one-time approval code.
    Show {
        /// The previewId (or its first characters, at least 4, when only one proposal starts with them).
        id: String,
    },
    /// Approve a pending proposal (interactive terminal only; asks for the card's code).
    Approve {
        /// The previewId (or an unambiguous start of it).
        id: String,
        /// Seconds to wait for the serving gateway to finish executing it.
        #[arg(long, default_value_t = 60)]
        wait: u64,
    },
    /// Reject a pending or approved proposal.
    Reject {
        /// The previewId (or an unambiguous start of it).
        id: String,
        /// Why (passed to the agent).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Close a proposal that was executing when the gateway stopped, after looking at the repository.
    Reconcile {
        /// The previewId (or an unambiguous start of it).
        id: String,
        /// What you found: `completed` (git did it) or `failed` (it did not, or you restored it).
        #[arg(long, value_parser = ["completed", "failed"])]
        outcome: String,
        /// A note for the agent.
        #[arg(long)]
        note: Option<String>,
    },
    /// Put back the restore point of a proposal (or a restore point id): refs, index and work tree.
    Restore {
        /// The previewId or restore point id.
        id: String,
    },
}

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FLUXGIT_GATEWAY_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    match run(Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fluxgit-gateway: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let mut config = Config::from_env().context("refusing to start")?;
    let command = cli.command.unwrap_or(Command::Serve {
        addr: serve::DEFAULT_ADDR.parse().context("default address")?,
        no_page: false,
        no_notify: false,
    });
    match command {
        Command::Serve { addr, no_page, no_notify } => {
            config.notify &= !no_notify;
            return serve::run(config, addr, !no_page);
        }
        Command::InstallService { addr, roots, no_enable } => return install_service(addr, &roots, no_enable),
        Command::UninstallService => return uninstall_service(),
        _ => {}
    }
    let mut journal = Journal::open(&config.run_dir)?;
    let audit =
        Audit::open_with_limits(config.audit_log.as_deref(), config.audit_sign_key.as_deref(), config.audit_limits)?;
    // A shortened previewId names the one proposal it starts; a restore point id is taken as given.
    let full = |journal: &Journal, id: String| approval::resolve_id(journal, &id);
    match command {
        Command::Serve { .. } | Command::InstallService { .. } | Command::UninstallService => {
            unreachable!("handled above")
        }
        Command::Open { print } => open_page(&journal, print),
        Command::List { all } => list(&mut journal, all),
        Command::Show { id } => {
            let id = full(&journal, id)?;
            print!("{}", approval::show(&mut journal, &id)?);
            Ok(())
        }
        Command::Approve { id, wait } => {
            let id = full(&journal, id)?;
            let stdin = std::io::stdin();
            let is_terminal = stdin.is_terminal();
            let mut input = stdin.lock();
            let mut output = std::io::stdout();
            approval::approve(&mut journal, &id, is_terminal, &mut input, &mut output, &config.allowed_roots, &audit)?;
            println!("approved {id}");
            wait_for_outcome(&journal, &id, Duration::from_secs(wait))
        }
        Command::Reject { id, reason } => {
            let id = full(&journal, id)?;
            approval::reject(&mut journal, &id, reason.as_deref(), &audit)?;
            println!("rejected {id}");
            Ok(())
        }
        Command::Reconcile { id, outcome, note } => {
            let id = full(&journal, id)?;
            approval::reconcile(&mut journal, &id, outcome == "completed", note.as_deref(), &audit)?;
            println!("reconciled {id}: {outcome}");
            Ok(())
        }
        Command::Restore { id } => {
            let id = match approval::resolve_id(&journal, &id) {
                Ok(full) => full,
                Err(error @ approval::Error::Ambiguous { .. }) => return Err(error.into()),
                Err(_) => id,
            };
            let point = approval::restore(&mut journal, &id, &audit)?;
            println!("restored {point}: refs, index and work tree are back as they were before the operation");
            Ok(())
        }
    }
}

/// The service's environment: the allowed roots (`roots`, else the variable as set now) and every other gateway
/// variable set now, so the service sees what this shell's gateway would.
fn service_env(roots: &[PathBuf]) -> anyhow::Result<Vec<(String, String)>> {
    let raw = RawConfig::from_env();
    let mut env = Vec::new();
    if !roots.is_empty() {
        let mut canonical = Vec::new();
        for root in roots {
            let root = std::fs::canonicalize(root).with_context(|| format!("allowed root {}", root.display()))?;
            anyhow::ensure!(root.is_dir(), "allowed root {} is not a directory", root.display());
            canonical.push(root);
        }
        let joined = std::env::join_paths(&canonical).context("an allowed root holds the path-list separator")?;
        let joined = joined.into_string().map_err(|_| anyhow::anyhow!("an allowed root is not UTF-8"))?;
        env.push((config::ALLOWED_ROOTS_VAR.to_owned(), joined));
    }
    for (name, value) in &raw.vars {
        if name == config::ALLOWED_ROOTS_VAR && !roots.is_empty() {
            continue;
        }
        let value = value.to_str().with_context(|| format!("{name} is not UTF-8"))?;
        env.push((name.clone(), value.to_owned()));
    }
    env.sort();
    Ok(env)
}

fn install_service(addr: SocketAddr, roots: &[PathBuf], no_enable: bool) -> anyhow::Result<()> {
    let binary = std::env::current_exe().and_then(std::fs::canonicalize).context("this binary's path")?;
    let spec = service::Spec { binary, addr, env: service_env(roots)? };
    if cfg!(target_os = "macos") {
        let path = service::plist_path()?;
        let log = dirs::home_dir().context("no home directory")?.join("Library/Logs/fluxgit-gateway.log");
        service::write_file(&path, &service::launchd_plist(&spec, &log)?)?;
        println!("wrote {}", path.display());
        let path_text = path.display().to_string();
        if !no_enable && service::run_quietly("launchctl", &["load", "-w", &path_text]) {
            println!("loaded and started it (launchctl load -w); `fluxgit-gateway open` opens its page");
        } else {
            println!("to start it: launchctl load -w {path_text}");
        }
        return Ok(());
    }
    let path = service::unit_path()?;
    service::write_file(&path, &service::systemd_unit(&spec)?)?;
    println!("wrote {}", path.display());
    if !no_enable
        && service::has_user_manager()
        && service::run_quietly("systemctl", &["--user", "daemon-reload"])
        && service::run_quietly("systemctl", &["--user", "enable", "--now", service::UNIT_NAME])
    {
        println!("enabled and started it; `fluxgit-gateway open` opens its page");
    } else {
        println!("to start it: systemctl --user daemon-reload && systemctl --user enable --now {}", service::UNIT_NAME);
    }
    Ok(())
}

fn uninstall_service() -> anyhow::Result<()> {
    if cfg!(target_os = "macos") {
        let path = service::plist_path()?;
        let path_text = path.display().to_string();
        if path.exists() {
            service::run_quietly("launchctl", &["unload", "-w", &path_text]);
        }
        if service::remove_file(&path)? {
            println!("removed {path_text}");
        } else {
            println!("no {path_text}: nothing to remove");
        }
        return Ok(());
    }
    let path = service::unit_path()?;
    let managed = service::has_user_manager();
    if managed {
        service::run_quietly("systemctl", &["--user", "disable", "--now", service::UNIT_NAME]);
    }
    let removed = service::remove_file(&path)?;
    if managed {
        service::run_quietly("systemctl", &["--user", "daemon-reload"]);
    }
    if removed {
        println!("removed {}", path.display());
    } else {
        println!("no {}: nothing to remove", path.display());
    }
    if !managed {
        println!("if it still runs: systemctl --user disable --now {}", service::UNIT_NAME);
    }
    Ok(())
}

fn open_page(journal: &Journal, print: bool) -> anyhow::Result<()> {
    let url = serve::page_address(journal)?;
    if print || desktop::desktop_opener().is_none() {
        println!("{url}");
        return Ok(());
    }
    match desktop::open_url(&url) {
        Ok(()) => println!("opened the approval page in your browser"),
        Err(error) => {
            eprintln!("fluxgit-gateway: could not open it ({error}); its address:");
            println!("{url}");
        }
    }
    Ok(())
}

fn list(journal: &mut Journal, all: bool) -> anyhow::Result<()> {
    journal.expire_due()?;
    let proposals = journal.list()?;
    let shown: Vec<_> = proposals
        .iter()
        .filter(|proposal| all || !proposal.status.is_terminal() || proposal.needs_reconciliation)
        .collect();
    if shown.is_empty() {
        println!("no proposals{}", if all { "" } else { " waiting (use --all for every proposal)" });
    }
    for proposal in shown {
        let mut state = proposal.status.as_str().to_owned();
        if proposal.needs_reconciliation {
            state.push_str(" NEEDS RECONCILIATION (was executing at a restart; never re-run)");
        }
        if proposal.status == Status::Pending {
            state.push_str(&format!(" (expires in {}s)", (proposal.expires_at_ms - now_ms()).max(0) / 1000));
        }
        let reason = card::sanitize(&proposal.reason.chars().take(60).collect::<String>().replace('\n', " "));
        println!(
            "{}  {}  {}  agent={}  received={}  {}",
            proposal.id,
            state,
            proposal.op,
            proposal.agent,
            format_ms(proposal.created_ms),
            reason
        );
    }
    Ok(())
}

fn wait_for_outcome(journal: &Journal, id: &str, wait: Duration) -> anyhow::Result<()> {
    if !serve::is_serving(journal) {
        println!("no gateway is serving this run dir: `fluxgit-gateway serve` will execute it (after revalidating)");
        return Ok(());
    }
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        if let Some(proposal) = journal.get(id)?
            && proposal.status.is_terminal()
        {
            println!(
                "{}: {}",
                proposal.status.as_str(),
                proposal.result.map(|result| result.to_string()).unwrap_or_default()
            );
            if let Some(message) = proposal.status_message {
                println!("{message}");
            }
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("still executing; `fluxgit-gateway show {id}` tells the outcome");
    Ok(())
}
