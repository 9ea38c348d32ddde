//! The stdio loop (SPEC §4.1): calls run concurrently, each reply is written whole, as its call finishes.
//!
//! Three parts, joined by channels:
//! - the reader: a thread running the [`FrameReader`] over the input (the framing is synchronous, as tokio's own
//!   stdin is a blocking thread), handing frames to the dispatcher through a small bounded queue;
//! - the dispatcher: a task on a current-thread tokio runtime. It passes each frame to [`Server::step`] in the
//!   order read: everything but `tools/call` (`initialize`, `ping`, `tools/list`, `server/discover`, errors,
//!   notifications) is answered there and then, so `initialize` is in force for every request read after it and
//!   a `ping` never waits behind a call. Each `tools/call` becomes a task that waits for one of
//!   [`Options::parallelism`] permits and runs [`Server::run_call`] on tokio's blocking pool (capped at the same
//!   number); at most [`Options::max_pending`] calls are queued or running, then the dispatcher stops reading;
//! - the writer: a thread that owns the output and writes each reply as one flushed line. Nothing else writes
//!   to it, so replies never interleave.
//!
//! `notifications/cancelled` triggers the [`Interrupt`] of the running or queued call with that id (every one,
//! should a client reuse an id): a queued call never starts, a running one stops at the engine's next check, and
//! no reply is written for either, also when the call finished anyway. An unknown or finished id is ignored.
//!
//! At the end of input, running and queued calls get [`Options::drain`] to finish and be answered; then the rest
//! are interrupted and abandoned, and the server's observers are detached so that nothing is audited or written
//! to the presence file after [`serve`] returns.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use fluxgit_engine::Interrupt;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::protocol::{INTERNAL_ERROR, PendingCall, Server, Step};
use crate::transport::{self, Frame, FrameReader};

/// Frames read ahead of the dispatcher.
const FRAME_QUEUE: usize = 64;

/// How the stdio loop runs calls.
#[derive(Debug, Clone)]
pub struct Options {
    /// Calls running at once; the blocking pool has as many threads.
    pub parallelism: NonZeroUsize,
    /// Calls queued or running at once; when reached, no frame is read until one finishes.
    pub max_pending: usize,
    /// How long calls still running at the end of input may take to finish and be answered.
    pub drain: Duration,
}

impl Options {
    /// For this machine: [`std::thread::available_parallelism`] calls at once (at least 2, so one slow call
    /// leaves room for another), 256 pending, 10 s to drain.
    pub fn for_this_machine() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, NonZeroUsize::get);
        Self {
            parallelism: NonZeroUsize::new(cores.max(2)).expect("at least 2"),
            max_pending: 256,
            drain: Duration::from_secs(10),
        }
    }
}

/// Serves `input` until its end and returns `output`: each frame goes through [`Server::step`]; each response is
/// written to `output` as one flushed JSON line, in the order the answers are ready (see the module docs).
///
/// ```
/// use std::io::Cursor;
///
/// let engine = fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots: vec![] });
/// let server = fluxgit_mcp_sidecar::protocol::Server::new(fluxgit_mcp_sidecar::tools::Registry::new(), engine);
/// let input = Cursor::new(&b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n"[..]);
/// let options = fluxgit_mcp_sidecar::serve::Options::for_this_machine();
/// let output = fluxgit_mcp_sidecar::serve(server, input, Vec::new(), &options).unwrap();
/// assert_eq!(output, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\n");
/// ```
///
/// # Errors
/// I/O errors reading `input` or writing `output` (a `BrokenPipe` means the client went away), or starting the
/// reader, the writer or the runtime.
pub fn serve<R, W>(server: Server, input: R, output: W, options: &Options) -> io::Result<W>
where
    R: BufRead + Send + 'static,
    W: Write + Send + 'static,
{
    let server = Arc::new(server);
    let (frames_tx, frames_rx) = mpsc::channel(FRAME_QUEUE);
    // Not joined: at a write failure it may still be blocked reading; it ends with the process.
    std::thread::Builder::new().name("mcp-reader".to_owned()).spawn(move || read_frames(input, &frames_tx))?;
    let (replies_tx, replies_rx) = mpsc::unbounded_channel();
    let writer =
        std::thread::Builder::new().name("mcp-writer".to_owned()).spawn(move || write_replies(output, replies_rx))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .max_blocking_threads(options.parallelism.get())
        .thread_name("mcp-call")
        .build()?;
    let read = runtime.block_on(dispatch(Arc::clone(&server), frames_rx, replies_tx, options.clone()));
    // Abandoned calls (interrupted after the drain time) may still run on the blocking pool: they are not waited
    // for, their tasks (and so their reply senders) are dropped here, and they are no longer observed.
    runtime.shutdown_background();
    server.detach_observers();
    let output = writer.join().map_err(|_| io::Error::other("the stdout writer panicked"))??;
    read.map(|()| output)
}

/// Reads frames until end of input, a read error (sent on) or a dispatcher that stopped listening.
fn read_frames<R: BufRead>(input: R, frames: &mpsc::Sender<io::Result<Frame>>) {
    let mut reader = FrameReader::new(input);
    loop {
        let (item, last) = match reader.next_frame() {
            Ok(Some(frame)) => (Ok(frame), false),
            Ok(None) => return,
            Err(error) => (Err(error), true),
        };
        if frames.blocking_send(item).is_err() || last {
            return;
        }
    }
}

/// Writes every reply until all senders are gone; stops at the first write error.
fn write_replies<W: Write>(mut output: W, mut replies: mpsc::UnboundedReceiver<Box<RawValue>>) -> io::Result<W> {
    while let Some(reply) = replies.blocking_recv() {
        transport::write_message(&mut output, &reply)?;
    }
    Ok(output)
}

/// The interrupts of the calls queued or running, by request id (its JSON text: `1` and `"1"` differ).
#[derive(Debug, Default)]
struct Running(Mutex<HashMap<String, Vec<Interrupt>>>);

impl Running {
    fn key(id: &Value) -> String {
        id.to_string()
    }

    fn insert(&self, id: &Value, interrupt: &Interrupt) {
        let mut running = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        running.entry(Self::key(id)).or_default().push(interrupt.clone());
    }

    fn remove(&self, id: &Value, interrupt: &Interrupt) {
        let mut running = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let key = Self::key(id);
        if let Some(interrupts) = running.get_mut(&key) {
            interrupts.retain(|other| !other.same_flag(interrupt));
            if interrupts.is_empty() {
                running.remove(&key);
            }
        }
    }

    /// Triggers the calls with `id`; `false` when none is queued or running.
    fn cancel(&self, id: &Value) -> bool {
        let running = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let interrupts = running.get(&Self::key(id));
        interrupts.iter().flat_map(|interrupts| interrupts.iter()).for_each(Interrupt::trigger);
        interrupts.is_some()
    }

    fn cancel_all(&self) {
        let running = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        running.values().flatten().for_each(Interrupt::trigger);
    }
}

/// What every call task shares.
struct Shared {
    server: Arc<Server>,
    permits: Arc<Semaphore>,
    running: Running,
    replies: mpsc::UnboundedSender<Box<RawValue>>,
}

/// Dispatches frames until end of input (`Ok`), a read error, or a writer that stopped (`Ok`: the writer's own
/// error is reported by [`serve`]); then drains the calls.
async fn dispatch(
    server: Arc<Server>,
    mut frames: mpsc::Receiver<io::Result<Frame>>,
    replies: mpsc::UnboundedSender<Box<RawValue>>,
    options: Options,
) -> io::Result<()> {
    let shared = Arc::new(Shared {
        server,
        permits: Arc::new(Semaphore::new(options.parallelism.get())),
        running: Running::default(),
        replies,
    });
    let mut calls = JoinSet::new();
    let outcome = loop {
        while calls.try_join_next().is_some() {}
        while calls.len() >= options.max_pending.max(1) {
            calls.join_next().await;
        }
        let frame = tokio::select! {
            frame = frames.recv() => frame,
            () = shared.replies.closed() => break Ok(()),
        };
        let frame = match frame {
            None => break Ok(()),
            Some(Err(error)) => break Err(error),
            Some(Ok(frame)) => frame,
        };
        match shared.server.step(frame) {
            Step::Reply(Some(reply)) => {
                // A send fails only when the writer stopped; the select above ends the loop then.
                let _ = shared.replies.send(crate::protocol::raw(&reply));
            }
            Step::Reply(None) => {}
            Step::Cancel(id) => {
                if !shared.running.cancel(&id) {
                    tracing::debug!(%id, "notifications/cancelled for no running request: ignored");
                }
            }
            Step::Call(call) => {
                let interrupt = Interrupt::new();
                shared.running.insert(call.id(), &interrupt);
                calls.spawn(run_call(Arc::clone(&shared), call, interrupt));
            }
        }
    };
    let drain = async { while calls.join_next().await.is_some() {} };
    if tokio::time::timeout(options.drain, drain).await.is_err() {
        tracing::warn!(calls = calls.len(), "calls still running after the drain time: interrupted, not answered");
        shared.running.cancel_all();
    }
    outcome
}

/// Waits for a permit, runs the call on the blocking pool and sends its reply, unless it was cancelled.
async fn run_call(shared: Arc<Shared>, call: PendingCall, interrupt: Interrupt) {
    let id = call.id().clone();
    let reply = match Arc::clone(&shared.permits).acquire_owned().await {
        Ok(permit) if !interrupt.is_triggered() => {
            let server = Arc::clone(&shared.server);
            let call_interrupt = interrupt.clone();
            let running = tokio::task::spawn_blocking(move || {
                let _permit = permit;
                server.run_call(call, &call_interrupt)
            });
            Some(running.await.unwrap_or_else(|error| {
                tracing::error!(%error, "a tools/call failed outside its handler");
                let error = crate::tools::ProtocolError::new(INTERNAL_ERROR, "Internal error", None);
                crate::protocol::raw(&serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}))
            }))
        }
        _ => None,
    };
    shared.running.remove(&id, &interrupt);
    match reply {
        _ if interrupt.is_triggered() => tracing::debug!(%id, "cancelled: no reply"),
        Some(reply) => {
            let _ = shared.replies.send(reply);
        }
        None => tracing::debug!(%id, "not run: the server is stopping"),
    }
}
