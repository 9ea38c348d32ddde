//! A fake approval gateway for the bridge tests: an HTTP/1.1 server on `127.0.0.1:0` in a thread that records every
//! request and answers with whatever the test's handler says; plus the helpers the bridge tests share.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{exchange, sidecar};

/// One request as the gateway received it.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) path: String,
    /// Header names lower-cased, in order.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Request {
    /// The body as JSON (panics if it is not).
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|error| panic!("body is not JSON ({error}): {}", self.body))
    }

    /// The value of header `name` (lower-case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }
}

/// What the gateway answers.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: String,
    pub(crate) headers: Vec<(String, String)>,
    /// Waited before answering (a slow gateway).
    pub(crate) delay: Duration,
}

impl Reply {
    /// `status` with a JSON body.
    pub(crate) fn json(status: u16, body: Value) -> Self {
        Self { status, body: body.to_string(), headers: Vec::new(), delay: Duration::ZERO }
    }
}

type Handler = dyn FnMut(&Request) -> Reply + Send;

/// A running fake gateway; it stops accepting when dropped.
pub(crate) struct FakeGateway {
    address: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

impl FakeGateway {
    /// Starts a gateway answering every request with `handler`.
    pub(crate) fn start(handler: impl FnMut(&Request) -> Reply + Send + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake gateway");
        let address = listener.local_addr().expect("local address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, stopping) = (Arc::clone(&requests), Arc::clone(&stop));
        let mut handler: Box<Handler> = Box::new(handler);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                serve(stream, &mut *handler, &seen);
            }
        });
        Self { address, requests, stop }
    }

    /// `127.0.0.1:PORT`.
    pub(crate) fn address(&self) -> String {
        self.address.to_string()
    }

    /// The port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.address.port()
    }

    /// Every request received so far, in order.
    pub(crate) fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("requests lock").clone()
    }
}

impl Drop for FakeGateway {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so the thread ends (unless a slow handler is still sleeping; it ends after).
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_millis(200));
    }
}

fn serve(stream: TcpStream, handler: &mut Handler, seen: &Mutex<Vec<Request>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(&stream);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return; // A wake-up connection or a client that went away.
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or_default().to_owned(), parts.next().unwrap_or_default().to_owned());
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = header.trim_end().split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let request = Request { method, path, headers, body: String::from_utf8_lossy(&body).into_owned() };
    seen.lock().expect("requests lock").push(request.clone());
    let reply = handler(&request);
    std::thread::sleep(reply.delay);
    let mut head = format!(
        "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut writer = &stream;
    let _ = writer.write_all(head.as_bytes()).and_then(|()| writer.write_all(reply.body.as_bytes()));
}

/// A gateway that accepts every proposal (202, `pending`, echoing the proposed previewId) and answers status GETs
/// with `pending` and the proposal's operation type; cancel and anything else get 404.
pub(crate) fn accepting() -> impl FnMut(&Request) -> Reply + Send + 'static {
    let mut operations = std::collections::HashMap::new();
    move |request| {
        if let Some(operation) = request.path.strip_prefix("/v1/mcp/operation/preview/") {
            let id = request.json()["previewId"].as_str().unwrap_or_default().to_owned();
            operations.insert(id.clone(), operation.to_owned());
            return Reply::json(202, json!({"previewId": id, "status": "pending", "expiresAt": EXPIRES_AT}));
        }
        if let Some(id) = request.path.strip_prefix("/v1/mcp/operation/status/")
            && let Some(operation) = operations.get(id)
        {
            return Reply::json(
                200,
                json!({"previewId": id, "operationType": operation, "status": "pending", "expiresAt": EXPIRES_AT}),
            );
        }
        Reply::json(404, json!({"reason": "unknown_preview", "message": "no such proposal"}))
    }
}

/// The `expiresAt` the fake gateways answer with.
pub(crate) const EXPIRES_AT: &str = "2026-01-01T00:05:00.000Z";

/// The client name the bridge sessions declare, and the `agentId` it becomes once sanitised.
pub(crate) const CLIENT_NAME: &str = "Bridge Test/1.0";
/// [`CLIENT_NAME`] sanitised (design.md#transport).
pub(crate) const AGENT_ID: &str = "BridgeTest1.0";

/// Runs one sidecar over stdio with `allowed_root`, extra environment `env` (e.g. the gateway address), a legacy
/// `initialize` declaring [`CLIENT_NAME`], then `requests`; returns their responses in order.
pub(crate) fn session(allowed_root: &Path, env: &[(&str, &str)], requests: &[Value]) -> Vec<Value> {
    let home = tempfile::tempdir().expect("tempdir");
    let mut command = sidecar(allowed_root, home.path(), &[]);
    for (name, value) in env {
        command.env(name, value);
    }
    let mut input = Vec::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": CLIENT_NAME, "version": "1"}}});
    for message in std::iter::once(&initialize).chain(requests) {
        input.extend(message.to_string().bytes());
        input.push(b'\n');
    }
    let responses = exchange(command, input);
    assert_eq!(responses.len(), requests.len() + 1, "one response per request: {responses:?}");
    responses[1..].to_vec()
}

/// A `tools/call` request.
pub(crate) fn call(id: usize, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

/// The envelope of a tool result (`structuredContent`, checked equal to the parsed `content[0].text`) and its
/// `isError`. Panics on a JSON-RPC error.
pub(crate) fn envelope(response: &Value) -> (Value, bool) {
    let result = &response["result"];
    assert!(result.is_object(), "a tool result, not an error: {response}");
    let text = result["content"][0]["text"].as_str().expect("text content");
    let parsed: Value = serde_json::from_str(text).expect("the text is JSON");
    assert_eq!(result["structuredContent"], parsed, "structuredContent equals the text");
    (parsed, result["isError"].as_bool().expect("isError"))
}

/// The product error of a tool result: `(code, data)`; panics unless `isError` is true.
pub(crate) fn product_error(response: &Value) -> (i64, Value) {
    let (envelope, is_error) = envelope(response);
    assert!(is_error, "isError: {response}");
    (envelope["error"]["code"].as_i64().expect("error.code"), envelope["error"]["data"].clone())
}
