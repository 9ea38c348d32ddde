//! Serving: the loopback HTTP API, the executor worker and the expiry sweep, in one process that holds
//! `<run_dir>/gateway/serve.lock` (one serving gateway per run dir).
//!
//! On start, proposals found `executing` are flagged for a person to reconcile (never re-run); `approved` ones are
//! picked up by the worker, which revalidates and claims each before running it; `pending` ones keep their expiry.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
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

/// The file, in `<run_dir>/gateway/`, that holds the page's address while a gateway serves it (mode 0600), for
/// `fluxgit-gateway open`. Written once the page is served, removed when serving ends.
pub const PAGE_ADDRESS_FILE: &str = "page-address";
/// The longest page-address file `open` reads, in bytes.
pub const MAX_PAGE_ADDRESS_BYTES: u64 = 4096;

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
/// whose secret is drawn now. Each new proposal is notified on the desktop unless `config.notify` is off
/// ([`crate::notify`]).
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
    let page_dir = journal.dir().to_owned();
    if !page {
        // A gateway that serves no page must not leave an earlier run's address for `open` to give out.
        PageFile::remove(&page_dir);
    }
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
        // Before the lines: whoever reads them can `open` at once.
        let _page_file = match &launch {
            Some(launch) => Some(PageFile::write(&page_dir, &launch.url(local))?),
            None => None,
        };
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
        let notifier = if config.notify {
            crate::notify::Notifier::start(launch.as_ref().map(|launch| launch.url(local)))
        } else {
            crate::notify::Notifier::off()
        };
        let state = AppState { journal: Arc::new(Mutex::new(journal)), config: Arc::clone(&config), notifier };
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

/// The page-address file of a serving gateway; removed on drop.
#[derive(Debug)]
struct PageFile(std::path::PathBuf);

impl PageFile {
    /// Replaces any earlier file (a gateway killed before it could remove it) with a new one of mode 0600 that
    /// holds `url` and a newline. A symlink or anything else in its place is removed, never followed.
    fn write(dir: &Path, url: &str) -> anyhow::Result<Self> {
        let path = dir.join(PAGE_ADDRESS_FILE);
        Self::remove(dir);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&path).with_context(|| format!("create {}", path.display()))?;
        file.write_all(format!("{url}\n").as_bytes()).with_context(|| format!("write {}", path.display()))?;
        Ok(Self(path))
    }

    fn remove(dir: &Path) {
        let path = dir.join(PAGE_ADDRESS_FILE);
        if let Err(error) = std::fs::remove_file(&path)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(%error, path = %path.display(), "cannot remove the page-address file");
        }
    }
}

impl Drop for PageFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Why `fluxgit-gateway open` has no address to open.
#[derive(Debug, thiserror::Error)]
pub enum PageAddressError {
    /// No gateway holds the serve lock of this run dir.
    #[error("no gateway is serving {0}: start one with `fluxgit-gateway serve` (or `fluxgit-gateway install-service`)")]
    NotServing(std::path::PathBuf),
    /// The serving gateway serves no page.
    #[error("the gateway serving {0} serves no approval page (it was started with --no-page)")]
    NoPage(std::path::PathBuf),
    /// The file is not what a gateway writes (a symlink, a FIFO, too long, not a page address).
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        message: String,
    },
}

/// The approval page's address of the gateway serving `journal`'s run dir, read from [`PAGE_ADDRESS_FILE`]. The
/// file is opened without following a symlink and without blocking on a FIFO, must be a regular file of at most
/// [`MAX_PAGE_ADDRESS_BYTES`], and must hold `http://<loopback address>/<64 hex digits>/`.
pub fn page_address(journal: &Journal) -> Result<String, PageAddressError> {
    let dir = journal.dir();
    if !is_serving(journal) {
        return Err(PageAddressError::NotServing(dir.to_owned()));
    }
    let path = dir.join(PAGE_ADDRESS_FILE);
    let invalid = |message: String| PageAddressError::Invalid { path: path.clone(), message };
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = match options.open(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(PageAddressError::NoPage(dir.to_owned()));
        }
        Err(error) => return Err(invalid(format!("cannot open it without following a link: {error}"))),
    };
    let metadata = file.metadata().map_err(|error| invalid(error.to_string()))?;
    if !metadata.is_file() {
        return Err(invalid("not a regular file".to_owned()));
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_PAGE_ADDRESS_BYTES + 1), &mut text)
        .map_err(|error| invalid(error.to_string()))?;
    if text.len() as u64 > MAX_PAGE_ADDRESS_BYTES {
        return Err(invalid(format!("longer than {MAX_PAGE_ADDRESS_BYTES} bytes")));
    }
    let url = text.trim_end_matches('\n');
    if !is_page_address(url) {
        return Err(invalid("it does not hold an approval page address".to_owned()));
    }
    Ok(url.to_owned())
}

/// Whether `url` is `http://<loopback ip:port>/<64 lowercase hex digits>/`, as [`web::Launch::url`] makes it.
pub fn is_page_address(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else { return false };
    let Some((authority, path)) = rest.split_once('/') else { return false };
    let Some(secret) = path.strip_suffix('/') else { return false };
    authority.parse::<SocketAddr>().is_ok_and(|addr| addr.ip().is_loopback())
        && secret.len() == 64
        && secret.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_address_shape_is_exact() {
        let secret = "0123456789abcdef".repeat(4);
        assert!(is_page_address(&format!("http://127.0.0.1:7420/{secret}/")));
        assert!(is_page_address(&format!("http://[::1]:7420/{secret}/")));
        assert!(!is_page_address(&format!("http://10.0.0.1:7420/{secret}/")));
        assert!(!is_page_address(&format!("http://127.0.0.1:7420/{secret}")));
        assert!(!is_page_address(&format!("http://127.0.0.1:7420/{}/", secret.to_uppercase())));
        assert!(!is_page_address(&format!("file:///{secret}/")));
        assert!(!is_page_address(&format!("http://127.0.0.1:7420/{secret}/\nhttp://evil/")));
    }
}
