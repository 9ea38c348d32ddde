//! The stdio loop (design.md#transport): calls run concurrently, each reply is written whole, as its call finishes.
//!
//! Three parts, joined by channels:
//! - the reader: a thread running the [`FrameReader`] over the input (the framing is synchronous, as tokio's own
//!   stdin is a blocking thread), handing frames to the dispatcher through a small bounded queue;
//! - the dispatcher: a task on a current-thread tokio runtime. It passes each frame to [`Server::step`] in the
//!   order read: everything but `tools/call` (`initialize`, `ping`, `tools/list`, `server/discover`, errors,
//!   notifications) is answered there and then, so `initialize` is in force for every request read after it and
//!   a `ping` never waits behind a call. Each `tools/call` becomes a task that waits for one of
//!   [`Options::parallelism`] permits and runs [`Server::run_call`] on tokio's blocking pool; at most
//!   [`Options::max_pending`] calls are queued or running, then the dispatcher stops reading;
//! - the writer: a thread that owns the output and writes each reply as one flushed line. Nothing else writes
//!   to it, so replies never interleave.
//!
//! `notifications/cancelled` triggers the [`Interrupt`] of the running or queued call with that id (every one,
//! should a client reuse an id): a queued call never starts, a running one stops at the engine's next check, and
//! no reply is written for either, also when the call finished anyway. An unknown or finished id is ignored.
//! The permit is held by the call's task, not by its thread: a cancelled call that does not stop (a read the
//! engine cannot interrupt, such as one blocked in the kernel) is abandoned to its thread and its slot goes to the
//! next call at once, so calls that hang can never stop the server from answering. The blocking pool has
//! [`ABANDONED_THREADS`] threads beyond the permits for such calls. At the end of input they are waited for
//! within [`Options::drain`] too, so the audit of a cancelled call is written before [`serve`] returns.
//!
//! A call still running after [`Options::deadline`] is interrupted the same way and answered with a `-32603`
//! error that says so (`data.deadlineSeconds`, a number of seconds).
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

/// Threads of the blocking pool beyond [`Options::parallelism`], for abandoned calls (cancelled or past their
/// deadline but still blocked); once that many are stuck, new calls wait for a thread.
pub const ABANDONED_THREADS: usize = 64;

/// Stack of each call thread, in bytes (8 MiB, as a main thread has): known rather than the runtime's default. No
/// walk the engine makes recurses as deep as a file nests (issue 47), so this is headroom, not a bound a file sets.
pub(crate) const CALL_STACK_BYTES: usize = 8 << 20;

/// How often a running call's task looks at its interrupt and deadline.
const WATCH_INTERVAL: Duration = Duration::from_millis(20);

/// How the stdio loop runs calls.
#[derive(Debug, Clone)]
pub struct Options {
    /// Calls running at once; the blocking pool has as many threads.
    pub parallelism: NonZeroUsize,
    /// Calls queued or running at once; when reached, no frame is read until one finishes.
    pub max_pending: usize,
    /// How long calls still running at the end of input may take to finish and be answered.
    pub drain: Duration,
    /// How long one call may run before it is interrupted and answered with an error.
    pub deadline: Duration,
}

impl Options {
    /// For this machine: [`std::thread::available_parallelism`] calls at once (at least 2, so one slow call
    /// leaves room for another), 256 pending, 10 s to drain, 300 s per call.
    pub fn for_this_machine() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, NonZeroUsize::get);
        Self {
            parallelism: NonZeroUsize::new(cores.max(2)).expect("at least 2"),
            max_pending: 256,
            drain: Duration::from_secs(10),
            deadline: Duration::from_secs(300),
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
        .max_blocking_threads(options.parallelism.get() + ABANDONED_THREADS)
        .thread_name("mcp-call")
        .thread_stack_size(CALL_STACK_BYTES)
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
    /// The threads of cancelled calls that had not stopped yet: waited for at the end of input (within the drain
    /// time), so that what they record (the audit of a cancelled call) is written before [`serve`] returns.
    abandoned: Mutex<Vec<tokio::task::JoinHandle<Box<RawValue>>>>,
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
        abandoned: Mutex::new(Vec::new()),
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
                calls.spawn(run_call(Arc::clone(&shared), call, interrupt, options.deadline));
            }
        }
    };
    let drain = async {
        while calls.join_next().await.is_some() {}
        let abandoned = std::mem::take(&mut *shared.abandoned.lock().unwrap_or_else(PoisonError::into_inner));
        for thread in abandoned {
            let _ = thread.await;
        }
    };
    if tokio::time::timeout(options.drain, drain).await.is_err() {
        tracing::warn!(calls = calls.len(), "calls still running after the drain time: interrupted, not answered");
        shared.running.cancel_all();
    }
    outcome
}

/// Waits for a permit, runs the call on the blocking pool and sends its reply, unless it was cancelled. The
/// permit is given back as soon as the call ends, is cancelled or passes `deadline`, whether or not its thread
/// has stopped.
async fn run_call(shared: Arc<Shared>, call: PendingCall, interrupt: Interrupt, deadline: Duration) {
    let id = call.id().clone();
    let reply = match Arc::clone(&shared.permits).acquire_owned().await {
        Ok(permit) if !interrupt.is_triggered() => {
            let server = Arc::clone(&shared.server);
            let call_interrupt = interrupt.clone();
            let mut running = tokio::task::spawn_blocking(move || server.run_call(call, &call_interrupt));
            let reply = watch(&mut running, &interrupt, deadline, &id).await;
            drop(permit);
            if reply.is_none() || matches!(reply, Some(Watched::PastDeadline(_))) {
                shared.abandoned.lock().unwrap_or_else(PoisonError::into_inner).push(running);
            }
            reply
        }
        _ => None,
    };
    shared.running.remove(&id, &interrupt);
    match reply {
        _ if interrupt.is_triggered() && !matches!(reply, Some(Watched::PastDeadline(_))) => {
            tracing::debug!(%id, "cancelled: no reply");
        }
        Some(Watched::Answered(reply) | Watched::PastDeadline(reply)) => {
            let _ = shared.replies.send(reply);
        }
        None => tracing::debug!(%id, "not run: the server is stopping"),
    }
}

/// How a running call ended for its task.
pub(crate) enum Watched {
    /// The call returned this reply.
    Answered(Box<RawValue>),
    /// The call ran past its deadline and was interrupted: this error is its reply.
    PastDeadline(Box<RawValue>),
}

/// Waits for `running` until it returns, `interrupt` is triggered (`None`: abandoned, no reply) or `deadline`
/// passes (the interrupt is triggered and the call abandoned with an error reply).
pub(crate) async fn watch(
    running: &mut tokio::task::JoinHandle<Box<RawValue>>,
    interrupt: &Interrupt,
    deadline: Duration,
    id: &Value,
) -> Option<Watched> {
    let started = tokio::time::Instant::now();
    loop {
        tokio::select! {
            joined = &mut *running => {
                return Some(Watched::Answered(joined.unwrap_or_else(|error| {
                    tracing::error!(%error, "a tools/call failed outside its handler");
                    let error = crate::tools::ProtocolError::new(INTERNAL_ERROR, "Internal error", None);
                    crate::protocol::raw(&serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}))
                })));
            }
            () = tokio::time::sleep(WATCH_INTERVAL) => {}
        }
        if interrupt.is_triggered() {
            tracing::debug!(%id, "cancelled while running: its slot is free, its thread ends when it may");
            return None;
        }
        if started.elapsed() >= deadline {
            interrupt.trigger();
            let seconds = deadline.as_secs_f64();
            tracing::warn!(%id, seconds, "a call ran past its deadline: interrupted");
            let data = serde_json::json!({"deadlineSeconds": seconds});
            let message = format!("The call did not finish within {seconds} s and was stopped");
            let error = crate::tools::ProtocolError::new(INTERNAL_ERROR, &message, Some(data));
            let reply = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()});
            return Some(Watched::PastDeadline(crate::protocol::raw(&reply)));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use serde_json::{Map, Value, json};

    use super::{Options, serve};
    use crate::protocol::Server;
    use crate::tools::{CallContext, ProtocolError, Registry, Tool, ToolDefinition, ToolOutput};

    /// `hang` never returns and never looks at its interrupt (as a read blocked in the kernel); `answer` answers.
    struct Stuck {
        definition: ToolDefinition,
        started: Arc<AtomicUsize>,
    }

    impl Tool for Stuck {
        fn definition(&self) -> &ToolDefinition {
            &self.definition
        }

        fn call(&self, _: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
            if arguments.get("hang") == Some(&Value::Bool(true)) {
                self.started.fetch_add(1, Ordering::SeqCst);
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            Ok(ToolOutput {
                text: "{}".to_owned(),
                structured: Some(serde_json::value::RawValue::from_string("{}".to_owned()).expect("JSON")),
                is_error: false,
                error_code: None,
                repo_path: None,
            })
        }
    }

    fn server(started: &Arc<AtomicUsize>) -> Server {
        let mut registry = Registry::new();
        let definition = ToolDefinition {
            name: "test.stuck",
            title: "Stuck",
            description: "Hangs when asked to.",
            input_schema: json!({"type": "object", "properties": {"hang": {"type": "boolean"}}}),
            output_schema: json!({"type": "object"}),
            read_only: true,
        };
        registry.register(Box::new(Stuck { definition, started: Arc::clone(started) })).expect("valid tool");
        Server::new(registry, fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots: vec![] }))
    }

    fn call(id: i64, hang: bool) -> String {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "test.stuck", "arguments": {"hang": hang}}});
        format!("{call}\n")
    }

    fn cancel(id: i64) -> String {
        format!("{}\n", json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}))
    }

    fn options(parallelism: usize, deadline: Duration) -> Options {
        Options {
            parallelism: std::num::NonZeroUsize::new(parallelism).expect("not zero"),
            max_pending: 256,
            drain: Duration::from_millis(500),
            deadline,
        }
    }

    fn replies(output: &[u8]) -> Vec<Value> {
        output
            .split(|byte| *byte == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).expect("a JSON reply"))
            .collect()
    }

    #[test]
    fn two_calls_that_never_stop_are_cancelled_and_the_next_call_is_answered() {
        let started = Arc::new(AtomicUsize::new(0));
        let (input, mut to_server) = std::io::pipe().expect("a pipe");
        let server = server(&started);
        let at = Instant::now();
        let serving = std::thread::spawn(move || {
            serve(server, std::io::BufReader::new(input), Vec::new(), &options(2, Duration::from_secs(600)))
        });
        to_server.write_all(format!("{}{}", call(1, true), call(2, true)).as_bytes()).expect("writes");
        // Both slots are taken by calls that hang.
        while started.load(Ordering::SeqCst) < 2 {
            assert!(at.elapsed() < Duration::from_secs(5), "both hanging calls started");
            std::thread::sleep(Duration::from_millis(5));
        }
        to_server.write_all(format!("{}{}{}", cancel(1), cancel(2), call(3, false)).as_bytes()).expect("writes");
        drop(to_server);
        let output = serving.join().expect("serve returns").expect("serves");
        let replies = replies(&output);
        assert_eq!(replies.len(), 1, "no reply for the cancelled calls: {replies:?}");
        assert_eq!(replies[0]["id"], 3);
        assert_eq!(replies[0]["result"]["isError"], false, "{}", replies[0]);
        assert!(at.elapsed() < Duration::from_secs(5), "answered at once, not after the drain: {:?}", at.elapsed());
    }

    #[test]
    fn a_call_past_its_deadline_is_answered_with_an_error_and_frees_its_slot() {
        let started = Arc::new(AtomicUsize::new(0));
        let server = server(&started);
        let input = format!("{}{}", call(1, true), call(2, false));
        let at = Instant::now();
        let output = serve(
            server,
            std::io::Cursor::new(input.into_bytes()),
            Vec::new(),
            &options(1, Duration::from_millis(300)),
        )
        .expect("serves");
        let mut replies = replies(&output);
        replies.sort_by_key(|reply| reply["id"].as_i64());
        assert_eq!(replies.len(), 2, "{replies:?}");
        assert_eq!(replies[0]["id"], 1);
        assert_eq!(replies[0]["error"]["code"], -32603, "{}", replies[0]);
        assert_eq!(replies[0]["error"]["data"]["deadlineSeconds"], 0.3);
        assert_eq!(replies[1]["id"], 2);
        assert_eq!(replies[1]["result"]["isError"], false, "{}", replies[1]);
        assert!(at.elapsed() < Duration::from_secs(5), "{:?}", at.elapsed());
    }
}
