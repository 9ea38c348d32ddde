//! `fluxgit-gateway`: the reference approval gateway (glue over the `fluxgit_gateway` library).
//!
//! `serve` (the default) listens on loopback and prints the `FLUXGIT_MCP_HANDSHAKE_ADDR` line and the approval page's
//! address; `list`, `show`,
//! `approve`, `reject`, `reconcile` and `restore` are a person's commands on the same run dir.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Parser, Subcommand};
use fluxgit_gateway::audit::Audit;
use fluxgit_gateway::config::Config;
use fluxgit_gateway::journal::{Journal, Status};
use fluxgit_gateway::serve;
use fluxgit_gateway::time::{format_ms, now_ms};
use fluxgit_gateway::{approval, card};

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
    },
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
    let config = Config::from_env().context("refusing to start")?;
    let command = cli
        .command
        .unwrap_or(Command::Serve { addr: serve::DEFAULT_ADDR.parse().context("default address")?, no_page: false });
    if let Command::Serve { addr, no_page } = command {
        return serve::run(config, addr, !no_page);
    }
    let mut journal = Journal::open(&config.run_dir)?;
    let audit =
        Audit::open_with_limits(config.audit_log.as_deref(), config.audit_sign_key.as_deref(), config.audit_limits)?;
    // A shortened previewId names the one proposal it starts; a restore point id is taken as given.
    let full = |journal: &Journal, id: String| approval::resolve_id(journal, &id);
    match command {
        Command::Serve { .. } => unreachable!("handled above"),
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
