//! The `fluxgit-mcp-sidecar` binary: parses the command line and dispatches to [`cli`]; stdout carries only the
//! protocol (or a subcommand's output), logs go to stderr (filter with `RUST_LOG`, default `warn`).

mod cli;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter).init();
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("fluxgit-mcp-sidecar: {error:#}");
            ExitCode::FAILURE
        }
    }
}
