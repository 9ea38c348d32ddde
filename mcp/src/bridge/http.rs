//! The HTTP exchange with the gateway: one request, one bounded reply, over plain HTTP on loopback.
//!
//! The client (`ureq`) is configured so that nothing leaves the machine by accident: no proxy (the environment's
//! `HTTP_PROXY` and friends are ignored), no redirect followed (a 3xx comes back as a reply), a bounded connect and
//! a bounded whole-exchange timeout, no connection kept between calls, and replies over [`MAX_REPLY_BYTES`]
//! refused.

use std::io::Read as _;
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

/// Sends `GET path` (no body) or `POST path` (JSON `body`) to `socket` and reads the reply.
///
/// # Errors
/// [`Failed`] when no complete reply arrived in time.
pub fn exchange(socket: SocketAddr, timeouts: Timeouts, path: &str, body: Option<&[u8]>) -> Result<Reply, Failed> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .proxy(None)
        .max_redirects(0)
        .http_status_as_error(false)
        .max_idle_connections(0)
        .timeout_connect(Some(timeouts.connect))
        .timeout_global(Some(timeouts.exchange))
        .user_agent(concat!("fluxgit-mcp-sidecar/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let url = format!("http://{socket}{path}");
    let sent = match body {
        Some(body) => agent.post(&url).header("content-type", "application/json").send(body),
        None => agent.get(&url).call(),
    };
    let mut response = sent.map_err(failed)?;
    let status = response.status().as_u16();
    let mut bytes = Vec::new();
    response
        .body_mut()
        .as_reader()
        .take(MAX_REPLY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| failed(ureq::Error::Io(error)))?;
    if bytes.len() as u64 > MAX_REPLY_BYTES {
        return Err(Failed::Malformed(format!("the reply is larger than {MAX_REPLY_BYTES} bytes")));
    }
    Ok(Reply { status, body: String::from_utf8_lossy(&bytes).into_owned() })
}

fn failed(error: ureq::Error) -> Failed {
    match error {
        ureq::Error::Timeout(which) => Failed::Timeout(format!("no complete reply in time ({which})")),
        ureq::Error::Io(io) if matches!(io.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) => {
            Failed::Timeout(format!("no complete reply in time ({io})"))
        }
        ureq::Error::Io(io) => Failed::Unreachable(io.to_string()),
        ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => Failed::Unreachable(error.to_string()),
        other => Failed::Malformed(other.to_string()),
    }
}
