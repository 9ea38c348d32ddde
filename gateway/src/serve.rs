//! Serving: the loopback HTTP API, the executor worker and the expiry sweep, in one process that holds
//! `<run_dir>/gateway/serve.lock` (one serving gateway per run dir).
//!
//! On start, proposals found `executing` are flagged for a person to reconcile (never re-run); `approved` ones are
//! picked up by the worker, which revalidates and claims each before running it; `pending` ones keep their expiry.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;

use crate::audit::Audit;
use crate::config::Config;
use crate::executor;
use crate::http::{AppState, router};
use crate::journal::{Journal, Status};
use crate::web;

/// The default address: loopback, a fixed port so the host config can name it.
pub const DEFAULT_ADDR: &str = "127.0.0.1:7420";
/// How often the worker looks for approved and expired proposals.
pub const WORKER_TICK: Duration = Duration::from_millis(150);

/// Takes the serve lock of `journal`'s directory; `Err` when another gateway serves this run dir.
pub fn take_serve_lock(journal: &Journal) -> anyhow::Result<std::fs::File> {
    let path = journal.dir().join("serve.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(_) => {
            anyhow::bail!("another fluxgit-gateway is already serving this run dir ({})", journal.dir().display())
        }
    }
}

/// Whether a gateway is serving `journal`'s run dir now.
pub fn is_serving(journal: &Journal) -> bool {
    let path = journal.dir().join("serve.lock");
    match std::fs::OpenOptions::new().write(true).open(path) {
        Ok(file) => file.try_lock().is_err(),
        Err(_) => false,
    }
}

/// Serves until SIGINT/SIGTERM. Prints `FLUXGIT_MCP_HANDSHAKE_ADDR=127.0.0.1:PORT` on stdout once listening and,
/// with `page`, a second line `FLUXGIT_GATEWAY_PAGE=http://127.0.0.1:PORT/<secret>/`: the approval page's address,
/// whose secret is drawn now, printed only there and kept nowhere else.
pub fn run(config: Config, addr: SocketAddr, page: bool) -> anyhow::Result<()> {
    if !addr.ip().is_loopback() {
        anyhow::bail!("the gateway binds loopback only: {addr} is not a loopback address");
    }
    let audit = Arc::new(Audit::open_with_limits(
        config.audit_log.as_deref(),
        config.audit_sign_key.as_deref(),
        config.audit_limits,
    )?);
    let mut journal = Journal::open(&config.run_dir)?;
    let _lock = take_serve_lock(&journal)?;
    let flagged = journal.flag_interrupted()?;
    for id in &flagged {
        tracing::warn!(%id, "proposal was executing when the gateway stopped: flagged for reconciliation, never re-run");
    }
    let config = Arc::new(config);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("bind {addr}"))?;
        let local = listener.local_addr()?;
        let launch = if page { Some(web::Launch::new().context("no randomness for the page's secret")?) } else { None };
        {
            // One write: a reader that takes the first line and closes the pipe must not fail the second.
            let mut lines = format!("FLUXGIT_MCP_HANDSHAKE_ADDR={local}\n");
            if let Some(launch) = &launch {
                lines.push_str(&format!("FLUXGIT_GATEWAY_PAGE={}\n", launch.url(local)));
            }
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(lines.as_bytes())?;
            stdout.flush()?;
        }
        tracing::info!(%local, run_dir = %config.run_dir.display(), "serving");
        let stop = Arc::new(AtomicBool::new(false));
        let worker = {
            let (config, audit, stop) = (Arc::clone(&config), Arc::clone(&audit), Arc::clone(&stop));
            std::thread::spawn(move || worker(&config, &audit, &stop))
        };
        let state = AppState { journal: Arc::new(Mutex::new(journal)), config: Arc::clone(&config) };
        let mut app = router(state);
        if let Some(launch) = launch {
            app = app.merge(web::router(Arc::clone(&config), audit, launch)?);
        }
        let app = app.layer(axum::middleware::from_fn(crate::http::connection_guard));
        let listener = crate::connection::Listener::new(listener, crate::connection::READ_TIMEOUT);
        let served = axum::serve(listener, app.into_make_service_with_connect_info::<crate::connection::Peer>())
            .with_graceful_shutdown(shutdown())
            .await;
        stop.store(true, Ordering::SeqCst);
        let _ = worker.join();
        served.context("serving")
    })
}

async fn shutdown() {
    #[cfg(unix)]
    {
        let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => signal,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The executor worker: expires due proposals and runs approved ones, one at a time, until `stop`.
fn worker(config: &Config, audit: &Audit, stop: &AtomicBool) {
    let mut journal = match Journal::open(&config.run_dir) {
        Ok(journal) => journal,
        Err(error) => {
            tracing::error!(%error, "executor cannot open the journal: nothing will be executed");
            return;
        }
    };
    while !stop.load(Ordering::SeqCst) {
        if let Err(error) = tick(&mut journal, config, audit) {
            tracing::error!(%error, "executor tick failed");
        }
        std::thread::sleep(WORKER_TICK);
    }
}

fn tick(journal: &mut Journal, config: &Config, audit: &Audit) -> anyhow::Result<()> {
    journal.expire_due()?;
    for proposal in journal.with_status(Status::Approved)? {
        let ran = executor::run_approved(journal, &proposal, &config.allowed_roots, audit)?;
        tracing::info!(id = %proposal.id, op = %proposal.op, ran, "approved proposal handled");
    }
    Ok(())
}
