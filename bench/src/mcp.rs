//! A minimal MCP client over stdio: newline-delimited JSON-RPC, one request at a time, legacy `initialize`.
//!
//! It speaks to any MCP server binary (ours or a peer), so it knows nothing of our envelope: a tool answer is
//! the exact `content[0].text` the model would read.

use std::ffi::OsString;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

/// The protocol version the client asks for; servers may answer with an older one.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// A running MCP server and what it said about itself.
pub(crate) struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// `serverInfo.name` from the `initialize` answer.
    pub(crate) server_name: String,
    /// `serverInfo.version` from the `initialize` answer.
    pub(crate) server_version: String,
    /// The protocol version the server chose.
    pub(crate) protocol_version: String,
    /// The names in `tools/list`, in order, each with the default of its `maxTokens` argument, if it has one.
    pub(crate) tools: Vec<(String, Option<u64>)>,
    /// The names in `tools/list` whose input schema takes `format` (`"text"` for terse lines).
    pub(crate) text_tools: Vec<String>,
}

/// `tools/list` read: each tool with its default `maxTokens`, and the tools that take `format`.
type Listing = (Vec<(String, Option<u64>)>, Vec<String>);

/// What one `tools/call` gave back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// A tool result: `content[0].text` and `isError`.
    Result { text: String, is_error: bool },
    /// A JSON-RPC error; `text` is the compact `error` object, which is what the agent reads instead.
    RpcError { text: String },
}

impl Answer {
    /// The text an agent reads.
    pub(crate) fn text(&self) -> &str {
        match self {
            Answer::Result { text, .. } | Answer::RpcError { text } => text,
        }
    }

    /// `ok`, `isError` or `rpcError`.
    pub(crate) fn status(&self) -> &'static str {
        match self {
            Answer::Result { is_error: false, .. } => "ok",
            Answer::Result { is_error: true, .. } => "isError",
            Answer::RpcError { .. } => "rpcError",
        }
    }
}

impl Session {
    /// Starts `binary` with exactly `env` (nothing inherited), initialises it and lists its tools.
    pub(crate) fn start(binary: &Path, env: &[(&str, OsString)]) -> anyhow::Result<Session> {
        let mut command = Command::new(binary);
        command.env_clear().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().with_context(|| format!("cannot start {}", binary.display()))?;
        let stdin = child.stdin.take().context("piped stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("piped stdout")?);
        let mut session = Session {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 1,
            server_name: String::new(),
            server_version: String::new(),
            protocol_version: String::new(),
            tools: Vec::new(),
            text_tools: Vec::new(),
        };
        let init = session.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "fluxgit-bench", "version": env!("CARGO_PKG_VERSION")},
            }),
        )?;
        let init = init.get("result").with_context(|| format!("initialize failed: {init}"))?;
        session.server_name = init["serverInfo"]["name"].as_str().unwrap_or_default().to_owned();
        session.server_version = init["serverInfo"]["version"].as_str().unwrap_or_default().to_owned();
        session.protocol_version = init["protocolVersion"].as_str().unwrap_or_default().to_owned();
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        let (tools, text_tools) = session.list_tools()?;
        session.tools = tools;
        session.text_tools = text_tools;
        Ok(session)
    }

    /// Calls `tool` with `arguments`.
    pub(crate) fn call(&mut self, tool: &str, arguments: &Value) -> anyhow::Result<Answer> {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        if let Some(error) = response.get("error") {
            return Ok(Answer::RpcError { text: serde_json::to_string(error)? });
        }
        let result = &response["result"];
        let Some(text) = result["content"][0]["text"].as_str() else {
            bail!("{tool}: the result has no content[0].text: {response}");
        };
        Ok(Answer::Result { text: text.to_owned(), is_error: result["isError"].as_bool().unwrap_or(false) })
    }

    /// Calls `tool` with `arguments`; also returns the result's `structuredContent` (the same object as the JSON
    /// text, which a `format: "text"` answer renders), when the server sends one.
    pub(crate) fn call_structured(&mut self, tool: &str, arguments: &Value) -> anyhow::Result<(Answer, Option<Value>)> {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        if let Some(error) = response.get("error") {
            return Ok((Answer::RpcError { text: serde_json::to_string(error)? }, None));
        }
        let result = &response["result"];
        let Some(text) = result["content"][0]["text"].as_str() else {
            bail!("{tool}: the result has no content[0].text: {response}");
        };
        let answer = Answer::Result { text: text.to_owned(), is_error: result["isError"].as_bool().unwrap_or(false) };
        Ok((answer, result.get("structuredContent").cloned()))
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The default `maxTokens` of `tool` (a dotted name; a server that lists it with `.` written `_` counts), or
    /// `None` when the server does not list the tool.
    pub(crate) fn tool(&self, tool: &str) -> Option<Option<u64>> {
        let underscore = tool.replace('.', "_");
        self.tools.iter().find(|(name, _)| *name == tool || *name == underscore).map(|(_, budget)| *budget)
    }

    /// Every tool definition of every page of `tools/list`, as the server sent it, and the `result` objects of the
    /// pages.
    pub(crate) fn tool_definitions(&mut self) -> anyhow::Result<(Vec<Value>, Vec<Value>)> {
        let (mut tools, mut pages) = (Vec::new(), Vec::new());
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.as_ref().map_or_else(|| json!({}), |cursor| json!({"cursor": cursor}));
            let response = self.request("tools/list", params)?;
            let result = response.get("result").with_context(|| format!("tools/list failed: {response}"))?.clone();
            tools.extend(result["tools"].as_array().context("tools/list has no tools array")?.iter().cloned());
            let next = result.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
            pages.push(result);
            match next {
                Some(next) => cursor = Some(next),
                None => return Ok((tools, pages)),
            }
        }
    }

    /// Every page of `tools/list`: each tool with its default `maxTokens`, and the tools that take `format`.
    fn list_tools(&mut self) -> anyhow::Result<Listing> {
        let mut tools = Vec::new();
        let mut text_tools = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.as_ref().map_or_else(|| json!({}), |cursor| json!({"cursor": cursor}));
            let response = self.request("tools/list", params)?;
            let result = response.get("result").with_context(|| format!("tools/list failed: {response}"))?;
            let page = result["tools"].as_array().context("tools/list has no tools array")?;
            text_tools.extend(
                page.iter()
                    .filter(|tool| !tool["inputSchema"]["properties"]["format"].is_null())
                    .filter_map(|tool| Some(tool["name"].as_str()?.to_owned())),
            );
            tools.extend(page.iter().filter_map(|tool| {
                let budget = tool["inputSchema"]["properties"]["maxTokens"]["default"].as_u64();
                Some((tool["name"].as_str()?.to_owned(), budget))
            }));
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok((tools, text_tools)),
            }
        }
    }

    /// Sends a request and reads lines until the response with its id (skipping notifications).
    fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line)? == 0 {
                bail!("the server closed stdout before answering {method}");
            }
            let Ok(message) = serde_json::from_str::<Value>(line.trim_end()) else {
                bail!("the server wrote a line that is not JSON: {line}");
            };
            if message.get("id").and_then(Value::as_u64) == Some(id) {
                return Ok(message);
            }
        }
    }

    fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("stdin already closed")?;
        writeln!(stdin, "{message}")?;
        stdin.flush()?;
        Ok(())
    }
}

impl Drop for Session {
    /// Closes stdin (the server exits at end of input) and reaps the process.
    fn drop(&mut self) {
        self.stdin.take();
        if matches!(self.child.try_wait(), Ok(None)) {
            // Give a well-behaved server the chance to exit on EOF; a stuck one is killed.
            for _ in 0..50 {
                if !matches!(self.child.try_wait(), Ok(None)) {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
