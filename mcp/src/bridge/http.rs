//! The HTTP exchange with the gateway: one request, one bounded reply, over plain HTTP on loopback.
//!
//! The client (`reqwest` without default features: HTTP/1 only, no TLS, no system proxy) is configured so that
//! nothing leaves the machine by accident: no proxy (the environment's `HTTP_PROXY` and friends are ignored), no
//! redirect followed (a 3xx comes back as a reply), a bounded connect and a bounded whole-exchange timeout, no
//! connection kept between calls, and replies over [`MAX_REPLY_BYTES`] refused while they stream in.

use std::net::SocketAddr;
use std::time::Duration;

/// Largest gateway reply read, in bytes; a longer one is an invalid bridge.
pub const MAX_REPLY_BYTES: u64 = 1024 * 1024;

/// How long the bridge waits for the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the TCP connection.
    pub connect: Duration,
    /// One whole exchange: connect, send, and receive the full reply.
    pub exchange: Duration,
}

impl Timeouts {
    /// 2 s to connect (a loopback connect is immediate or refused), 10 s for a whole exchange (the gateway only
    /// records a proposal; a person's approval is never awaited).
    pub const DEFAULT: Timeouts = Timeouts { connect: Duration::from_secs(2), exchange: Duration::from_secs(10) };
}

/// A gateway reply: status code and body text (possibly empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status code.
    pub status: u16,
    /// The body as UTF-8 text (lossy).
    pub body: String,
}

/// Why no reply came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failed {
    /// The exchange took longer than [`Timeouts`] allow.
    Timeout(String),
    /// Connection refused, reset, or another transport failure.
    Unreachable(String),
    /// The reply was larger than [`MAX_REPLY_BYTES`] or not HTTP.
    Malformed(String),
}

/// Sends `GET path` (no body) or `POST path` (JSON `body`) to `socket` and reads the reply, from a thread that may
/// block (a tool handler on the stdio loop's blocking pool, the `call` subcommand): the asynchronous exchange
/// ([`exchange_async`]) is driven by a current-thread runtime of its own, which ends with the call.
///
/// # Errors
/// [`Failed`] when no complete reply arrived in time.
pub fn exchange(socket: SocketAddr, timeouts: Timeouts, path: &str, body: Option<&[u8]>) -> Result<Reply, Failed> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|error| Failed::Unreachable(format!("no runtime for the exchange: {error}")))?;
    runtime.block_on(exchange_async(socket, timeouts, path, body))
}

/// The exchange itself: one request on a fresh connection, the reply read while it streams in and refused past
/// [`MAX_REPLY_BYTES`].
///
/// # Errors
/// [`Failed`] when no complete reply arrived in time.
pub async fn exchange_async(
    socket: SocketAddr,
    timeouts: Timeouts,
    path: &str,
    body: Option<&[u8]>,
) -> Result<Reply, Failed> {
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .connect_timeout(timeouts.connect)
        .timeout(timeouts.exchange)
        .user_agent(concat!("fluxgit-mcp-sidecar/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|error| Failed::Unreachable(describe(&error)))?;
    let url = format!("http://{socket}{path}");
    let request = match body {
        Some(body) => client.post(&url).header("content-type", "application/json").body(body.to_vec()),
        None => client.get(&url),
    };
    let mut response = request.send().await.map_err(failed)?;
    let status = response.status().as_u16();
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        if (bytes.len() + chunk.len()) as u64 > MAX_REPLY_BYTES {
            return Err(Failed::Malformed(format!("the reply is larger than {MAX_REPLY_BYTES} bytes")));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Reply { status, body: String::from_utf8_lossy(&bytes).into_owned() })
}

fn failed(error: reqwest::Error) -> Failed {
    let detail = describe(&error);
    if error.is_timeout() {
        Failed::Timeout(format!("no complete reply in time ({detail})"))
    } else if error.is_connect() || io_failure(&error) {
        Failed::Unreachable(detail)
    } else {
        Failed::Malformed(detail)
    }
}

/// Whether the error comes from the connection itself (reset, closed), not from what was said on it.
fn io_failure(error: &reqwest::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if cause.downcast_ref::<std::io::Error>().is_some() {
            return true;
        }
        source = cause.source();
    }
    false
}

/// The error with its causes on one line (reqwest's own message only says which request failed).
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
