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
        // A reader that went away (`call ... | head`) is a clean exit, as ripgrep treats it.
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fluxgit-mcp-sidecar: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
