//! The gateway's TCP connections: a listener that gives each connection an identity ([`Peer`]), closes a
//! connection that stalls, and counts the proposals each connection sends.
//!
//! # Stalls
//!
//! A connection on which no byte arrives for [`READ_TIMEOUT`] while no request of it is being answered is closed:
//! a client that opens connections and sends nothing, or half a request, cannot keep them open. The clock is reset
//! by every byte read or written, and it does not run while a handler works on one of the connection's requests
//! ([`Peer::begin`]), so a slow card is never cut off. A client that sends a byte now and then is closed too: each
//! request must arrive within three read timeouts of the connection's start or of its last answer.
//!
//! # Rate
//!
//! Each connection may send at most [`PREVIEW_RATE`] proposals per [`RATE_WINDOW`] ([`Peer::take_preview`]).
//! Together with the pending caps of the journal this bounds what one client can queue for a person.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// How long a connection may stay silent, in seconds, while none of its requests is being answered.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Proposals one connection may send per [`RATE_WINDOW`].
pub const PREVIEW_RATE: usize = 10;
/// The window of [`PREVIEW_RATE`]: one minute.
pub const RATE_WINDOW: Duration = Duration::from_secs(60);

/// A listener of loopback connections, each wrapped in a [`Stream`] and named by a [`Peer`].
#[derive(Debug)]
pub struct Listener {
    inner: TcpListener,
    read_timeout: Duration,
}

impl Listener {
    /// Wraps `inner`; connections stall out after `read_timeout` ([`READ_TIMEOUT`] when serving).
    pub fn new(inner: TcpListener, read_timeout: Duration) -> Self {
        Self { inner, read_timeout }
    }
}

/// One connection as the handlers see it (`ConnectInfo<Peer>`): its addresses and its shared state.
#[derive(Debug, Clone)]
pub struct Peer {
    /// The client's address.
    pub remote: SocketAddr,
    /// The gateway's address the client connected to (its port is the one a `Host` header must name).
    pub local: SocketAddr,
    state: Arc<State>,
}

#[derive(Debug)]
struct State {
    in_flight: AtomicUsize,
    previews: Mutex<Vec<Instant>>,
}

/// Marks a request of a [`Peer`] as being answered until dropped.
#[derive(Debug)]
pub struct InFlight(Arc<State>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Peer {
    /// Marks one request as being answered: the stall clock stops until the guard is dropped.
    pub fn begin(&self) -> InFlight {
        self.state.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(Arc::clone(&self.state))
    }

    /// Counts one proposal of this connection; `false` when it already sent [`PREVIEW_RATE`] in the last
    /// [`RATE_WINDOW`] (the refused one is not counted).
    pub fn take_preview(&self) -> bool {
        let now = Instant::now();
        let mut previews = self.state.previews.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        previews.retain(|at| now.duration_since(*at) < RATE_WINDOW);
        if previews.len() >= PREVIEW_RATE {
            return false;
        }
        previews.push(now);
        true
    }
}

impl axum::serve::Listener for Listener {
    type Io = Stream;
    type Addr = Peer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.inner.accept().await {
                Ok((stream, remote)) => {
                    let Ok(local) = stream.local_addr() else { continue };
                    let state = Arc::new(State { in_flight: AtomicUsize::new(0), previews: Mutex::new(Vec::new()) });
                    let peer = Peer { remote, local, state: Arc::clone(&state) };
                    return (Stream::new(stream, state, self.read_timeout), peer);
                }
                Err(error) => {
                    // Out of descriptors and the like: wait a little instead of spinning.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        let local = self.inner.local_addr()?;
        let state = Arc::new(State { in_flight: AtomicUsize::new(0), previews: Mutex::new(Vec::new()) });
        Ok(Peer { remote: local, local, state })
    }
}

impl Connected<IncomingStream<'_, Listener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, Listener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// A TCP connection that fails its reads with `TimedOut` once it stalled (module docs).
#[derive(Debug)]
pub struct Stream {
    inner: TcpStream,
    state: Arc<State>,
    timeout: Duration,
    /// When the connection started or was last answered (or a request of it was being answered).
    answered: tokio::time::Instant,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl Stream {
    fn new(inner: TcpStream, state: Arc<State>, timeout: Duration) -> Self {
        let answered = tokio::time::Instant::now();
        Self { inner, state, timeout, answered, deadline: Box::pin(tokio::time::sleep(timeout)) }
    }

    /// Moves the deadline to one read timeout from now, but no later than three from the last answer.
    fn push_back(&mut self) {
        let now = tokio::time::Instant::now();
        let deadline = (now + self.timeout).min(self.answered + self.timeout * 3);
        self.deadline.as_mut().reset(deadline);
    }

    fn answered_now(&mut self) {
        self.answered = tokio::time::Instant::now();
        self.push_back();
    }
}

impl AsyncRead for Stream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    self.push_back();
                }
                Poll::Ready(result)
            }
            Poll::Pending => {
                if self.state.in_flight.load(Ordering::SeqCst) > 0 {
                    self.answered_now();
                    return Poll::Pending;
                }
                match self.deadline.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the connection sent nothing for too long",
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(count)) if count > 0) {
            self.answered_now();
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
