//! The HTTP exchange with the gateway: one request, one bounded reply, over plain HTTP/1.1 on loopback.
//!
//! The client is a few dozen lines over [`std::net::TcpStream`], because the bridge needs exactly one request per
//! connection to an address it already resolved. That shape keeps accidents out by construction: no proxy is ever
//! consulted (the environment's `HTTP_PROXY` and friends mean nothing here), no redirect is followed (a 3xx comes
//! back as a reply), no connection is kept between calls (`Connection: close`), the connect and the whole exchange
//! are bounded in time, and a reply over [`MAX_REPLY_BYTES`] is refused while it streams in.
//!
//! Replies may carry a `Content-Length`, be `chunked`, or end when the gateway closes the connection.

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Largest gateway reply body read, in bytes; a longer one is an invalid bridge.
pub const MAX_REPLY_BYTES: u64 = 1024 * 1024;

/// Largest reply head (status line and headers), in bytes.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Largest line of chunked framing (a chunk size with its extensions, or a trailer), in bytes.
const MAX_FRAMING_LINE_BYTES: usize = 4 * 1024;

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

/// Sends `GET path` (no body) or `POST path` (JSON `body`) to `socket` on a fresh connection and reads the whole
/// reply. It blocks the calling thread for at most `timeouts.exchange`, so callers run it where blocking is allowed
/// (a tool handler on the stdio loop's blocking pool, the `call` subcommand).
///
/// # Errors
/// [`Failed`] when no complete reply arrived in time, the connection failed, or the reply was not HTTP or too
/// large. A `path` holding anything but visible ASCII is refused before connecting ([`Failed::Malformed`]).
pub fn exchange(socket: SocketAddr, timeouts: Timeouts, path: &str, body: Option<&[u8]>) -> Result<Reply, Failed> {
    if !path.starts_with('/') || !path.bytes().all(|byte| byte.is_ascii_graphic()) {
        return Err(Failed::Malformed(format!("the request path {path:?} is not plain visible ASCII")));
    }
    let started = Instant::now();
    let deadline = started + timeouts.exchange;
    let connect_within = timeouts.connect.min(timeouts.exchange);
    if connect_within.is_zero() {
        return Err(timed_out("connecting"));
    }
    let stream = TcpStream::connect_timeout(&socket, connect_within).map_err(|error| match error.kind() {
        ErrorKind::TimedOut | ErrorKind::WouldBlock => timed_out("connecting"),
        _ => Failed::Unreachable(format!("connecting to {socket}: {error}")),
    })?;
    let _ = stream.set_nodelay(true);
    let mut connection = Connection { stream, deadline, buffer: Vec::new(), position: 0 };
    connection.send(&request_bytes(socket, path, body))?;
    connection.reply()
}

/// The request: `Host` names the loopback socket (the gateway checks it), and the connection closes after the reply.
fn request_bytes(socket: SocketAddr, path: &str, body: Option<&[u8]>) -> Vec<u8> {
    let method = if body.is_some() { "POST" } else { "GET" };
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {socket}\r\nuser-agent: fluxgit-mcp-sidecar/{}\r\naccept: */*\r\n\
         connection: close\r\n",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(body) = body {
        head.push_str(&format!("content-type: application/json\r\ncontent-length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.unwrap_or_default());
    bytes
}

fn timed_out(during: &str) -> Failed {
    Failed::Timeout(format!("no complete reply in time (timed out while {during})"))
}

/// One connection with the exchange's deadline, and the bytes read but not consumed yet.
struct Connection {
    stream: TcpStream,
    deadline: Instant,
    buffer: Vec<u8>,
    position: usize,
}

/// How the reply body ends.
enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

impl Connection {
    /// The time left before the deadline, or a timeout failure naming what was under way.
    fn remaining(&self, during: &str) -> Result<Duration, Failed> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() { Err(timed_out(during)) } else { Ok(left) }
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), Failed> {
        let left = self.remaining("sending the request")?;
        self.stream
            .set_write_timeout(Some(left))
            .map_err(|error| Failed::Unreachable(format!("sending the request: {error}")))?;
        self.stream.write_all(bytes).map_err(|error| match error.kind() {
            ErrorKind::TimedOut | ErrorKind::WouldBlock => timed_out("sending the request"),
            _ => Failed::Unreachable(format!("sending the request: {error}")),
        })
    }

    /// Reads more bytes into the buffer; `false` once the gateway closed the connection.
    fn fill(&mut self) -> Result<bool, Failed> {
        let left = self.remaining("reading the reply")?;
        self.stream
            .set_read_timeout(Some(left))
            .map_err(|error| Failed::Unreachable(format!("reading the reply: {error}")))?;
        let mut chunk = [0_u8; 16 * 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(read) => {
                    self.buffer.extend_from_slice(&chunk[..read]);
                    return Ok(true);
                }
                Err(error) if error.kind() == ErrorKind::Interrupted => {}
                Err(error) if matches!(error.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) => {
                    return Err(timed_out("reading the reply"));
                }
                Err(error) => return Err(Failed::Unreachable(format!("reading the reply: {error}"))),
            }
        }
    }

    fn unread(&self) -> &[u8] {
        &self.buffer[self.position..]
    }

    /// The next line ending in CRLF (or LF), without its ending; at most `limit` bytes.
    fn line(&mut self, limit: usize, what: &str) -> Result<Vec<u8>, Failed> {
        loop {
            if let Some(end) = self.unread().iter().position(|&byte| byte == b'\n') {
                let mut line = self.unread()[..end].to_vec();
                self.position += end + 1;
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
            if self.unread().len() > limit {
                return Err(Failed::Malformed(format!("the reply's {what} is longer than {limit} bytes")));
            }
            if !self.fill()? {
                return Err(Failed::Unreachable(format!(
                    "the gateway closed the connection inside the reply's {what}"
                )));
            }
        }
    }

    /// Exactly `count` more bytes.
    fn take(&mut self, count: usize) -> Result<Vec<u8>, Failed> {
        while self.unread().len() < count {
            if !self.fill()? {
                return Err(Failed::Unreachable("the gateway closed the connection before the whole body".into()));
            }
        }
        let bytes = self.unread()[..count].to_vec();
        self.position += count;
        Ok(bytes)
    }

    /// Reads the status line, the headers and the body; interim 1xx replies are skipped.
    fn reply(&mut self) -> Result<Reply, Failed> {
        loop {
            let head_start = self.position;
            let status_line = self.line(MAX_HEAD_BYTES, "head")?;
            let status = parse_status(&status_line)?;
            let mut framing = Framing::UntilClose;
            loop {
                let header = self.line(MAX_HEAD_BYTES, "head")?;
                if self.position - head_start > MAX_HEAD_BYTES {
                    return Err(Failed::Malformed(format!("the reply's head is longer than {MAX_HEAD_BYTES} bytes")));
                }
                if header.is_empty() {
                    break;
                }
                framing = header_framing(&header, framing)?;
            }
            if (100..200).contains(&status) {
                continue;
            }
            let body = if status == 204 || status == 304 { Vec::new() } else { self.body(framing)? };
            return Ok(Reply { status, body: String::from_utf8_lossy(&body).into_owned() });
        }
    }

    fn body(&mut self, framing: Framing) -> Result<Vec<u8>, Failed> {
        let too_large = || Failed::Malformed(format!("the reply is larger than {MAX_REPLY_BYTES} bytes"));
        match framing {
            Framing::Length(length) if length > MAX_REPLY_BYTES => Err(too_large()),
            Framing::Length(length) => self.take(usize::try_from(length).map_err(|_| too_large())?),
            Framing::UntilClose => {
                while self.fill()? {
                    if self.unread().len() as u64 > MAX_REPLY_BYTES {
                        return Err(too_large());
                    }
                }
                Ok(self.unread().to_vec())
            }
            Framing::Chunked => {
                let mut body = Vec::new();
                loop {
                    let line = self.line(MAX_FRAMING_LINE_BYTES, "chunk size")?;
                    let size = parse_chunk_size(&line)?;
                    if size == 0 {
                        // Trailers, if any, end with an empty line.
                        while !self.line(MAX_FRAMING_LINE_BYTES, "trailer")?.is_empty() {}
                        return Ok(body);
                    }
                    if body.len() as u64 + size > MAX_REPLY_BYTES {
                        return Err(too_large());
                    }
                    body.extend(self.take(usize::try_from(size).map_err(|_| too_large())?)?);
                    if !self.line(MAX_FRAMING_LINE_BYTES, "chunk end")?.is_empty() {
                        return Err(Failed::Malformed("a chunk of the reply does not end where its size says".into()));
                    }
                }
            }
        }
    }
}

/// The status code of `HTTP/1.x NNN reason`.
fn parse_status(line: &[u8]) -> Result<u16, Failed> {
    let not_http = || Failed::Malformed(format!("the reply is not HTTP: {:?}", String::from_utf8_lossy(line)));
    let text = std::str::from_utf8(line).map_err(|_| not_http())?;
    let rest = text.strip_prefix("HTTP/1.1 ").or_else(|| text.strip_prefix("HTTP/1.0 ")).ok_or_else(not_http)?;
    let code = rest.get(..3).ok_or_else(not_http)?;
    if !code.bytes().all(|byte| byte.is_ascii_digit()) || (rest.len() > 3 && !rest[3..].starts_with(' ')) {
        return Err(not_http());
    }
    code.parse().map_err(|_| not_http())
}

/// The body framing after one more header line: `transfer-encoding: chunked` wins over `content-length`.
fn header_framing(line: &[u8], framing: Framing) -> Result<Framing, Failed> {
    let text = String::from_utf8_lossy(line);
    let Some((name, value)) = text.split_once(':') else {
        return Err(Failed::Malformed(format!("the reply has a header line without a colon: {text:?}")));
    };
    let value = value.trim();
    if name.eq_ignore_ascii_case("transfer-encoding") {
        if value.rsplit(',').next().is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked")) {
            return Ok(Framing::Chunked);
        }
        return Err(Failed::Malformed(format!("the reply's transfer-encoding {value:?} is not supported")));
    }
    if name.eq_ignore_ascii_case("content-length") && !matches!(framing, Framing::Chunked) {
        let length = value
            .parse::<u64>()
            .map_err(|_| Failed::Malformed(format!("the reply's content-length {value:?} is not a number")))?;
        if let Framing::Length(earlier) = framing
            && earlier != length
        {
            return Err(Failed::Malformed("the reply has two different content-length headers".into()));
        }
        return Ok(Framing::Length(length));
    }
    Ok(framing)
}

/// The size of `HEX[;extensions]`.
fn parse_chunk_size(line: &[u8]) -> Result<u64, Failed> {
    let text = String::from_utf8_lossy(line);
    let digits = text.split(';').next().unwrap_or_default().trim();
    if digits.is_empty() || digits.len() > 15 {
        return Err(Failed::Malformed(format!("the reply has an invalid chunk size {text:?}")));
    }
    u64::from_str_radix(digits, 16)
        .map_err(|_| Failed::Malformed(format!("the reply has an invalid chunk size {text:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A one-shot server on loopback: reads the request head, then writes `reply` raw and closes.
    fn serve_raw(reply: Vec<u8>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address");
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().expect("accept");
            let mut seen = Vec::new();
            let mut byte = [0_u8; 1];
            while !seen.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                seen.push(byte[0]);
            }
            let _ = stream.write_all(&reply);
        });
        address
    }

    fn get(address: SocketAddr) -> Result<Reply, Failed> {
        exchange(address, Timeouts::DEFAULT, "/v1/x", None)
    }

    #[test]
    fn chunked_reply_with_extensions_and_trailers_is_joined() {
        let raw =
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nx-t: 1\r\n\r\n";
        assert_eq!(get(serve_raw(raw.to_vec())), Ok(Reply { status: 200, body: "abcde".into() }));
    }

    #[test]
    fn reply_without_length_ends_at_close() {
        let raw = b"HTTP/1.0 202 Accepted\r\n\r\n{\"a\":1}";
        assert_eq!(get(serve_raw(raw.to_vec())), Ok(Reply { status: 202, body: "{\"a\":1}".into() }));
    }

    #[test]
    fn interim_continue_is_skipped() {
        let raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(get(serve_raw(raw.to_vec())), Ok(Reply { status: 404, body: "{}".into() }));
    }

    #[test]
    fn garbage_instead_of_http_is_malformed() {
        let reply = get(serve_raw(b"SSH-2.0-OpenSSH_9.6\r\n\r\n".to_vec()));
        assert!(matches!(reply, Err(Failed::Malformed(_))), "{reply:?}");
    }

    #[test]
    fn announced_length_over_the_limit_is_refused_before_reading() {
        let raw = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", MAX_REPLY_BYTES + 1);
        let reply = get(serve_raw(raw.into_bytes()));
        assert!(matches!(reply, Err(Failed::Malformed(ref text)) if text.contains("larger")), "{reply:?}");
    }

    #[test]
    fn chunks_summing_over_the_limit_are_refused() {
        let mut raw = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
        let chunk = vec![b' '; 512 * 1024];
        for _ in 0..3 {
            raw.extend(format!("{:x}\r\n", chunk.len()).bytes());
            raw.extend(&chunk);
            raw.extend(b"\r\n");
        }
        raw.extend(b"0\r\n\r\n");
        let reply = get(serve_raw(raw));
        assert!(matches!(reply, Err(Failed::Malformed(ref text)) if text.contains("larger")), "{reply:?}");
    }

    #[test]
    fn body_cut_short_of_its_length_is_unreachable_not_a_reply() {
        let reply = get(serve_raw(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc".to_vec()));
        assert!(matches!(reply, Err(Failed::Unreachable(_))), "{reply:?}");
    }

    #[test]
    fn endless_header_line_is_refused() {
        let mut raw = b"HTTP/1.1 200 OK\r\nx: ".to_vec();
        raw.extend(vec![b'a'; MAX_HEAD_BYTES + 10]);
        let reply = get(serve_raw(raw));
        assert!(matches!(reply, Err(Failed::Malformed(_))), "{reply:?}");
    }

    #[test]
    fn path_with_a_newline_is_refused_before_connecting() {
        // Nothing listens on port 9 of loopback in the test environment; a refusal would be `Unreachable`.
        let address: SocketAddr = "127.0.0.1:9".parse().expect("address");
        let reply = exchange(address, Timeouts::DEFAULT, "/v1/x\r\nx-evil: 1", None);
        assert!(matches!(reply, Err(Failed::Malformed(_))), "{reply:?}");
    }

    #[test]
    fn closed_port_is_unreachable() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address");
        drop(listener);
        let reply = get(address);
        assert!(matches!(reply, Err(Failed::Unreachable(_))), "{reply:?}");
    }

    #[test]
    fn request_names_host_and_closes_and_carries_the_body() {
        let address: SocketAddr = "127.0.0.1:4000".parse().expect("address");
        let bytes = request_bytes(address, "/v1/p", Some(b"{}"));
        let text = String::from_utf8(bytes).expect("utf-8");
        assert!(text.starts_with("POST /v1/p HTTP/1.1\r\nhost: 127.0.0.1:4000\r\n"), "{text}");
        assert!(text.contains("connection: close\r\n") && text.contains("content-length: 2\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\n{}"), "{text}");
    }
}
