//! `serve-http` (issue 49): the real binary on a loopback port, spoken to with a plain TCP client. Each refusal
//! (Host, Origin, token, roots, body size, session, slow body) and both eras answering on a fixture repository.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{BIN, sidecar};

/// A running `serve-http`, killed when dropped.
struct Served {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `serve-http --listen 127.0.0.1:0 extra...` and waits for the address it prints.
fn serve(roots: &Path, home: &Path, extra: &[&str]) -> Served {
    let mut args = vec!["serve-http", "--listen", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    spawn_served(sidecar(roots, home, &args))
}

/// Spawns `command` (a `serve-http`) and waits for the address it prints.
fn spawn_served(mut command: Command) -> Served {
    let mut child =
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn serve-http");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(stderr.read_line(&mut line).expect("stderr") > 0, "serve-http exited before listening");
        if let Some(rest) = line.split("serving MCP on http://").nth(1) {
            break rest.split('/').next().expect("an address").parse().expect("a socket address");
        }
    };
    // Keep draining its log so that it never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    Served { child, addr }
}

/// One HTTP exchange's answer.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|error| panic!("{error}: {}", self.body))
    }
}

/// Sends a raw request (`head` without the blank line) with `body` and reads the answer to the end.
fn exchange(addr: SocketAddr, head: &str, body: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    stream.write_all(format!("{head}\r\nConnection: close\r\n\r\n").as_bytes()).expect("write head");
    stream.write_all(body).expect("write body");
    read_answer(&mut stream)
}

fn read_answer(stream: &mut TcpStream) -> Answer {
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the answer");
    let text = String::from_utf8(raw).expect("UTF-8 answer");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no header end: {text:?}"));
    let mut lines = head.lines();
    let status =
        lines.next().and_then(|line| line.split(' ').nth(1)).and_then(|code| code.parse().ok()).expect("status");
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    Answer { status, headers, body: body.to_owned() }
}

/// POSTs `message` to `/mcp` with the usual headers plus `extra` (each `Name: value`).
fn post(addr: SocketAddr, message: &Value, extra: &[String]) -> Answer {
    let body = message.to_string();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}",
        body.len()
    );
    for line in extra {
        head.push_str("\r\n");
        head.push_str(line);
    }
    exchange(addr, &head, body.as_bytes())
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "http-test", "version": "1"}}})
}

fn brief(id: i64, repo: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "repo_brief", "arguments": {"repoPath": repo}}})
}

fn modern(mut message: Value) -> Value {
    message["params"]["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "http-modern", "version": "1"}});
    message
}

/// Opens a legacy session and returns its id.
fn open_session(addr: SocketAddr, extra: &[String]) -> String {
    let answer = post(addr, &initialize(), extra);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.json()["result"]["protocolVersion"], "2025-11-25");
    answer.header("mcp-session-id").expect("a session id").to_owned()
}

fn assert_brief(answer: &Answer, repo: &str) {
    assert_eq!(answer.status, 200, "{answer:?}");
    let reply = answer.json();
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(reply["result"]["structuredContent"]["repoPath"], repo, "{reply}");
}

#[test]
fn both_eras_list_tools_and_brief_a_fixture_over_http() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let home = tempfile::tempdir().expect("tempdir");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let served = serve(fixture.root(), home.path(), &[]);
    let addr = served.addr;

    // Legacy: initialize, the session id on every request, DELETE ends it.
    let session = open_session(addr, &[]);
    let with_session = [format!("Mcp-Session-Id: {session}"), "MCP-Protocol-Version: 2025-11-25".to_owned()];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(addr, &initialized, &with_session).status, 202);
    let list = post(addr, &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), &with_session);
    assert_eq!(list.status, 200, "{list:?}");
    let tools = list.json()["result"]["tools"].as_array().expect("tools").len();
    assert!(tools >= 20, "{tools} tools");
    assert!(list.json()["result"].get("ttlMs").is_none(), "legacy shape");
    assert_brief(&post(addr, &brief(2, &repo), &with_session), &repo);
    let delete = exchange(addr, &format!("DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {session}"), b"");
    assert_eq!(delete.status, 204, "{delete:?}");
    assert_eq!(post(addr, &brief(3, &repo), &with_session).status, 404, "an ended session is unknown");

    // Stateless 2026-07-28: no session at all.
    let discover = post(addr, &json!({"jsonrpc": "2.0", "id": 4, "method": "server/discover"}), &[]);
    assert_eq!(discover.status, 200, "{discover:?}");
    assert!(discover.header("mcp-session-id").is_none());
    assert!(
        discover.json()["result"]["supportedVersions"].as_array().expect("versions").contains(&json!("2026-07-28"))
    );
    let list = post(addr, &modern(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}})), &[]);
    assert_eq!(list.json()["result"]["tools"].as_array().expect("tools").len(), tools);
    assert_eq!(list.json()["result"]["resultType"], "complete");
    let answer = post(addr, &modern(brief(6, &repo)), &["MCP-Protocol-Version: 2026-07-28".to_owned()]);
    assert_brief(&answer, &repo);
    assert_eq!(answer.json()["result"]["resultType"], "complete");

    // GET opens no stream here.
    let get = exchange(addr, &format!("GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream"), b"");
    assert_eq!(get.status, 405, "{get:?}");
}

#[test]
fn a_foreign_host_or_origin_is_refused_with_403_before_anything_runs() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let home = tempfile::tempdir().expect("tempdir");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let served = serve(fixture.root(), home.path(), &["--allowed-origin", "https://agents.example"]);
    let addr = served.addr;
    let body = modern(brief(1, &repo)).to_string();
    let request = |host: &str, origin: Option<&str>| {
        let origin = origin.map(|origin| format!("\r\nOrigin: {origin}")).unwrap_or_default();
        exchange(
            addr,
            &format!(
                "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}{origin}",
                body.len()
            ),
            body.as_bytes(),
        )
    };
    // DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1.
    assert_eq!(request(&format!("evil.example:{}", addr.port()), None).status, 403);
    assert_eq!(request("127.0.0.1.evil.example", None).status, 403);
    assert_eq!(request("127.0.0.1:1", None).status, 403, "another port of this machine");
    assert_eq!(request(&addr.to_string(), Some("https://evil.example")).status, 403);
    assert_eq!(request(&addr.to_string(), Some("null")).status, 403);
    assert_eq!(request(&addr.to_string(), Some("http://localhost.evil.example")).status, 403);
    // No Host at all (HTTP/1.0 style) is refused too.
    let no_host = exchange(
        addr,
        &format!("POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}", body.len()),
        body.as_bytes(),
    );
    assert_eq!(no_host.status, 403, "{no_host:?}");
    // What is allowed: loopback names, a loopback origin, the configured origin.
    assert_brief(&request(&format!("localhost:{}", addr.port()), None), &repo);
    assert_brief(&request(&addr.to_string(), Some("http://localhost:6274")), &repo);
    assert_brief(&request(&addr.to_string(), Some("https://agents.example")), &repo);
}

/// Adds a token with `args` to `file` through the CLI and returns it.
fn add_token(home: &Path, file: &Path, name: &str, roots: &str, extra: &[&str]) -> String {
    let mut args = vec!["token", "add", "--file", file.to_str().expect("utf-8"), "--name", name, "--roots", roots];
    args.extend_from_slice(extra);
    let output = Command::new(BIN).args(&args).env("HOME", home).output().expect("token add");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("UTF-8").trim().to_owned()
}

#[test]
fn requests_without_a_valid_token_get_401_and_a_token_reads_only_its_roots() {
    let team_a = tempfile::tempdir().expect("tempdir");
    let team_b = tempfile::tempdir().expect("tempdir");
    let a = fluxgit_fixtures::build_in(fluxgit_fixtures::Scenario::Clean, &team_a.path().join("repo"));
    let b = fluxgit_fixtures::build_in(fluxgit_fixtures::Scenario::Clean, &team_b.path().join("repo"));
    let home = tempfile::tempdir().expect("tempdir");
    // Both teams' trees are inside the server's roots: only the token keeps them apart.
    let server_roots = std::env::join_paths([team_a.path(), team_b.path()]).expect("joins");
    let tokens = home.path().join("tokens.json");
    let root_a = team_a.path().canonicalize().expect("canonical");
    let token_a = add_token(home.path(), &tokens, "team-a", root_a.to_str().expect("utf-8"), &[]);
    let token_core =
        add_token(home.path(), &tokens, "core-only", root_a.to_str().expect("utf-8"), &["--toolsets", "files"]);
    let stored = std::fs::read_to_string(&tokens).expect("tokens file");
    assert!(!stored.contains(&token_a) && !stored.contains(&token_core), "only hashes are stored");
    let link = root_a.join("link-to-b");
    std::os::unix::fs::symlink(b.path(), &link).expect("symlink");
    // A linked worktree of B's repository checked out under A: its objects and refs are B's.
    let worktree = root_a.join("worktree-of-b");
    let added = Command::new("git")
        .args(["-C", b.path().to_str().expect("utf-8"), "worktree", "add", "-q", "--detach"])
        .arg(&worktree)
        .output()
        .expect("git worktree add");
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));

    let served = serve_with_roots(&server_roots, home.path(), &["--tokens", tokens.to_str().expect("utf-8")]);
    let addr = served.addr;
    let repo_a = a.path().to_str().expect("utf-8").to_owned();
    let repo_b = b.path().to_str().expect("utf-8").to_owned();
    let bearer = |token: &str| format!("Authorization: Bearer {token}");

    let none = post(addr, &modern(brief(1, &repo_a)), &[]);
    assert_eq!(none.status, 401, "{none:?}");
    assert!(none.header("www-authenticate").is_some_and(|value| value.starts_with("Bearer")), "{none:?}");
    let wrong = post(addr, &modern(brief(1, &repo_a)), &[bearer(&format!("{token_a}0"))]);
    assert_eq!(wrong.status, 401, "{wrong:?}");
    assert!(wrong.header("www-authenticate").is_some_and(|value| value.contains("invalid_token")), "{wrong:?}");
    assert_eq!(post(addr, &modern(brief(1, &repo_a)), &["Authorization: Basic dGVhbTpwdw==".to_owned()]).status, 401);

    assert_brief(&post(addr, &modern(brief(2, &repo_a)), &[bearer(&token_a)]), &repo_a);
    // The fixture is <team dir>/repo/repo: three levels up is the folder holding both teams' directories.
    let b_name = team_b.path().file_name().expect("a name").to_str().expect("utf-8");
    let dotted_path_to_b = format!("{repo_a}/../../../{b_name}/repo/repo");
    assert!(Path::new(&dotted_path_to_b).join(".git").exists(), "{dotted_path_to_b} names B's repository");
    let worktree_path = worktree.to_str().expect("utf-8").to_owned();
    for outside in [repo_b.clone(), link.to_str().expect("utf-8").to_owned(), dotted_path_to_b, worktree_path] {
        let refused = post(addr, &modern(brief(3, &outside)), &[bearer(&token_a)]);
        assert_eq!(refused.status, 200, "{refused:?}");
        let error = &refused.json()["error"];
        assert_eq!(error["code"], -32602, "{outside}: {refused:?}");
        assert_eq!(error["data"]["reason"], "outside_allowed_roots", "{error}");
        let message = error["message"].as_str().expect("message");
        assert!(message.contains("team-a") && message.contains("this server's admin"), "{error}");
        assert!(!message.contains("MCP host"), "no stdio advice over HTTP: {error}");
    }
    // Fleet calls must name their repositories, and those are checked too.
    let radar = |arguments: Value| json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "fleet_radar", "arguments": arguments}});
    let registry = post(addr, &modern(radar(json!({}))), &[bearer(&token_a)]).json();
    assert_eq!(registry["error"]["data"]["reason"], "outside_allowed_roots", "{registry}");
    let named = post(addr, &modern(radar(json!({"repoPaths": [repo_a, repo_b]}))), &[bearer(&token_a)]).json();
    assert_eq!(named["error"]["data"]["reason"], "outside_allowed_roots", "{named}");
    // A token limited to the `files` toolset lists only those tools, and cannot brief.
    let listed = post(
        addr,
        &modern(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}})),
        &[bearer(&token_core)],
    )
    .json();
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().expect("tools").iter().filter_map(|tool| tool["name"].as_str()).collect();
    assert_eq!(names, ["file_read", "file_blame"], "{listed}");
    assert_eq!(listed["result"]["cacheScope"], "private", "the list varies by token: {listed}");
    let limited = post(addr, &modern(brief(4, &repo_a)), &[bearer(&token_core)]).json();
    assert_eq!(limited["error"]["data"]["reason"], "tool_not_allowed", "{limited}");
    // A session belongs to the token that opened it.
    let session = open_session(addr, &[bearer(&token_a)]);
    let other = post(addr, &brief(5, &repo_a), &[bearer(&token_core), format!("Mcp-Session-Id: {session}")]);
    assert_eq!(other.status, 404, "{other:?}");
    assert_brief(&post(addr, &brief(6, &repo_a), &[bearer(&token_a), format!("Mcp-Session-Id: {session}")]), &repo_a);
}

/// [`serve`] with a root list (several roots joined by the path separator).
fn serve_with_roots(roots: &std::ffi::OsStr, home: &Path, extra: &[&str]) -> Served {
    serve(Path::new(roots), home, extra)
}

#[test]
fn a_non_loopback_listen_address_without_tokens_is_refused_at_start() {
    let home = tempfile::tempdir().expect("tempdir");
    let output = sidecar(home.path(), home.path(), &["serve-http", "--listen", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("without --tokens"), "{stderr}");
}

#[test]
fn an_oversized_body_gets_413_and_a_malformed_one_400() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let home = tempfile::tempdir().expect("tempdir");
    let served = serve(fixture.root(), home.path(), &[]);
    let addr = served.addr;
    let declared = exchange(
        addr,
        &format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}", 9 << 20),
        b"{",
    );
    assert_eq!(declared.status, 413, "{declared:?}");
    // A chunked body that grows past 8 MiB is cut off at the limit.
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\
         Connection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).expect("head");
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..9 {
        if stream.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).is_err()
            || stream.write_all(&chunk).is_err()
            || stream.write_all(b"\r\n").is_err()
        {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    assert_eq!(read_answer(&mut stream).status, 413);
    let malformed = exchange(
        addr,
        &format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 5"),
        b"{nope",
    );
    assert_eq!(malformed.status, 400, "{malformed:?}");
    assert_eq!(malformed.json()["error"]["code"], -32700);
}

#[test]
fn an_unknown_session_gets_404_and_a_missing_one_400() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let home = tempfile::tempdir().expect("tempdir");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let served = serve(fixture.root(), home.path(), &[]);
    let addr = served.addr;
    let _session = open_session(addr, &[]);
    let unknown = post(addr, &brief(1, &repo), &["Mcp-Session-Id: 0123456789abcdef".to_owned()]);
    assert_eq!(unknown.status, 404, "{unknown:?}");
    let missing = post(addr, &brief(1, &repo), &[]);
    assert_eq!(missing.status, 400, "{missing:?}");
    let version = post(addr, &brief(1, &repo), &["MCP-Protocol-Version: 1999-01-01".to_owned()]);
    assert_eq!(version.status, 400, "{version:?}");
}

#[test]
fn slow_bodies_are_dropped_after_the_timeout_and_hold_no_call_slot() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let home = tempfile::tempdir().expect("tempdir");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let served = serve(fixture.root(), home.path(), &["--body-timeout", "1.5"]);
    let addr = served.addr;
    // More slow clients than this machine has call slots, each with half a body sent.
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get).max(2);
    let mut slow: Vec<TcpStream> = (0..cores * 2)
        .map(|_| {
            let mut stream = TcpStream::connect(addr).expect("connect");
            let head = format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\""
            );
            stream.write_all(head.as_bytes()).expect("half a request");
            stream
        })
        .collect();
    let at = Instant::now();
    assert_brief(&post(addr, &modern(brief(1, &repo)), &[]), &repo);
    assert!(at.elapsed() < Duration::from_secs(5), "answered beside the slow bodies: {:?}", at.elapsed());
    for stream in &mut slow {
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let answer = read_answer(stream);
        assert_eq!(answer.status, 408, "{answer:?}");
    }
    assert!(at.elapsed() < Duration::from_secs(10), "dropped after the body timeout: {:?}", at.elapsed());
}

#[test]
fn each_http_session_is_audited_under_its_client_name_and_refusals_too() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let home = tempfile::tempdir().expect("tempdir");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let ledger = home.path().join("audit").join("mcp.jsonl");
    let presence = home.path().join("run").join("presence").join("mcp");
    let tokens = home.path().join("tokens.json");
    let root = fixture.root().canonicalize().expect("canonical");
    let other = tempfile::tempdir().expect("tempdir");
    let token = add_token(home.path(), &tokens, "auditor", root.to_str().expect("utf-8"), &[]);
    let mut command = sidecar(fixture.root(), home.path(), &["serve-http", "--listen", "127.0.0.1:0"]);
    command
        .args(["--tokens", tokens.to_str().expect("utf-8")])
        .env_remove("FLUXGIT_MCP_AUDIT_DISABLED")
        .env_remove("FLUXGIT_MCP_PRESENCE_DISABLED")
        .env("FLUXGIT_MCP_AUDIT_LOG", &ledger);
    let served = spawn_served(command);
    let addr = served.addr;
    let bearer = format!("Authorization: Bearer {token}");
    for name in ["alpha", "beta"] {
        let mut hello = initialize();
        hello["params"]["clientInfo"]["name"] = json!(name);
        let answer = post(addr, &hello, std::slice::from_ref(&bearer));
        let session = answer.header("mcp-session-id").expect("a session").to_owned();
        let headers = [bearer.clone(), format!("Mcp-Session-Id: {session}")];
        assert_brief(&post(addr, &brief(1, &repo), &headers), &repo);
    }
    assert_brief(&post(addr, &modern(brief(2, &repo)), std::slice::from_ref(&bearer)), &repo);
    let outside = other.path().to_str().expect("utf-8");
    let refused = post(addr, &modern(brief(3, outside)), std::slice::from_ref(&bearer)).json();
    assert_eq!(refused["error"]["data"]["reason"], "outside_allowed_roots", "{refused}");
    let files = std::fs::read_dir(&presence).expect("a presence dir").count();
    assert_eq!(files, 1, "one presence file for the one server");

    // SIGTERM: the audit is synced and the presence file removed, as on stdio.
    let status = Command::new("kill").args(["-TERM", &served.child.id().to_string()]).status().expect("kill");
    assert!(status.success());
    let mut served = served;
    let exit = served.child.wait().expect("exits");
    assert!(exit.success(), "{exit:?}");
    let entries: Vec<Value> = std::fs::read_to_string(&ledger)
        .expect("a ledger")
        .lines()
        .map(|line| serde_json::from_str(line).expect("an entry"))
        .collect();
    let sessions: Vec<&str> = entries.iter().filter_map(|entry| entry["session_id"].as_str()).collect();
    // The token's name is in the session id: `token:<name>/<client name>` (a client name never holds ':' or '/').
    assert_eq!(
        sessions,
        ["token:auditor/alpha", "token:auditor/beta", "token:auditor/http-modern", "token:auditor/http-modern"],
        "{entries:?}"
    );
    let verified = sidecar(home.path(), home.path(), &["verify-audit", ledger.to_str().expect("utf-8")])
        .output()
        .expect("verify-audit runs");
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stdout));
    let results: Vec<&str> = entries.iter().filter_map(|entry| entry["result"].as_str()).collect();
    assert_eq!(results, ["success", "success", "success", "error"]);
    assert_eq!(std::fs::read_dir(&presence).expect("the presence dir").count(), 0, "presence file removed");
}

/// Runs git with `args` (a fixed identity, no user configuration) and asserts that it succeeds.
fn git(args: &[&str]) {
    let output = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

/// A repository at `path` on `branch` with one commit of `f.txt`.
fn repository(path: &Path, branch: &str) -> String {
    let text = path.to_str().expect("utf-8").to_owned();
    git(&["init", "-q", "-b", branch, &text]);
    std::fs::write(path.join("f.txt"), "one\ntwo\nthree\n").expect("writes");
    git(&["-C", &text, "add", "f.txt"]);
    git(&["-C", &text, "commit", "-q", "-m", "init"]);
    text
}

/// Two teams' directories `a` and `b`, both inside the server's roots, and team A's token (roots: `a`): B's
/// repository is on `secret-branch-b` with 3 unstaged changes; A's holds one unstaged change.
struct Teams {
    _dir: tempfile::TempDir,
    a: std::path::PathBuf,
    b: std::path::PathBuf,
    repo_a: String,
    repo_b: String,
    home: tempfile::TempDir,
}

fn teams() -> Teams {
    let dir = tempfile::tempdir().expect("tempdir");
    let top = dir.path().canonicalize().expect("canonical");
    let (a, b) = (top.join("a"), top.join("b"));
    std::fs::create_dir_all(&a).expect("a");
    std::fs::create_dir_all(&b).expect("b");
    let repo_b = repository(&b.join("repo"), "secret-branch-b");
    for name in ["f.txt", "g.txt", "h.txt"] {
        std::fs::write(b.join("repo").join(name), "secret-b\n").expect("writes");
    }
    git(&["-C", &repo_b, "add", "-N", "g.txt", "h.txt"]);
    let repo_a = repository(&a.join("repo"), "main-a");
    std::fs::write(a.join("repo").join("f.txt"), "one\ntwo\nchanged in a\n").expect("writes");
    Teams { _dir: dir, a, b, repo_a, repo_b, home: tempfile::tempdir().expect("tempdir") }
}

impl Teams {
    /// `serve-http` with both teams inside its roots and a token for A (returned).
    fn serve(&self) -> (Served, String) {
        let tokens = self.home.path().join("tokens.json");
        let token = add_token(self.home.path(), &tokens, "team-a", self.a.to_str().expect("utf-8"), &[]);
        let roots = self.a.parent().expect("the folder of both teams");
        (serve(roots, self.home.path(), &["--tokens", tokens.to_str().expect("utf-8")]), token)
    }
}

/// A `tools/call` of `tool` with `arguments` (modern era) as token `token`: its structured content.
fn call_as(addr: SocketAddr, token: &str, tool: &str, arguments: Value) -> Value {
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}});
    let answer = post(addr, &modern(message), &[format!("Authorization: Bearer {token}")]);
    assert_eq!(answer.status, 200, "{answer:?}");
    let reply = answer.json();
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    reply["result"]["structuredContent"].clone()
}

#[test]
fn a_folder_scan_with_a_token_reads_no_checkout_whose_git_dir_is_outside_its_roots() {
    let teams = teams();
    // Under A: a `.git` file pointing into B, a `.git` link to B's git dir, and a linked worktree of B.
    let gitfile = teams.a.join("gitfile");
    std::fs::create_dir(&gitfile).expect("gitfile");
    std::fs::write(gitfile.join(".git"), format!("gitdir: {}/.git\n", teams.repo_b)).expect("writes");
    let gitlink = teams.a.join("gitlink");
    std::fs::create_dir(&gitlink).expect("gitlink");
    std::os::unix::fs::symlink(Path::new(&teams.repo_b).join(".git"), gitlink.join(".git")).expect("symlink");
    let worktree = teams.a.join("wtb");
    git(&["-C", &teams.repo_b, "worktree", "add", "-q", "-b", "wt-secret-b", worktree.to_str().expect("utf-8")]);
    let (served, token) = teams.serve();

    let brief = call_as(served.addr, &token, "repo_brief", json!({"repoPath": teams.a.to_str().expect("utf-8")}));
    let text = brief.to_string();
    assert!(!text.contains("secret-branch-b") && !text.contains("wt-secret-b"), "B's branches: {text}");
    let queue = brief["data"]["fleet"]["queue"].as_array().expect("a queue");
    for checkout in [&gitfile, &gitlink, &worktree] {
        let listed = queue
            .iter()
            .find(|entry| entry["repoPath"] == checkout.to_str().expect("utf-8"))
            .unwrap_or_else(|| panic!("{} listed: {text}", checkout.display()));
        assert_eq!(listed["state"], "error", "{listed}");
        assert_eq!(listed["error"]["reason"], "outside_allowed_roots", "{listed}");
    }
    // A's own repository is read as before.
    let own = queue.iter().find(|entry| entry["repoPath"] == teams.repo_a.as_str()).expect("A's repository");
    assert_eq!(own["reason"], "1 unstaged on main-a", "{own}");
}

#[test]
fn a_worktree_of_the_tokens_repository_outside_its_roots_is_named_and_not_read() {
    let teams = teams();
    let outside = teams.b.join("wta");
    let outside_text = outside.to_str().expect("utf-8");
    git(&["-C", &teams.repo_a, "worktree", "add", "-q", "-b", "wt-of-a-in-b", outside_text]);
    std::fs::write(outside.join("f.txt"), "one\ntwo\nsecret line in b\n").expect("writes");
    std::fs::write(outside.join("secret-in-b.txt"), "secret\n").expect("writes");
    let (served, token) = teams.serve();

    let collisions = call_as(served.addr, &token, "repo_collisions", json!({"repoPath": teams.repo_a}));
    let text = collisions.to_string();
    assert_eq!(collisions["data"]["outsideRoots"], json!([outside_text]), "{text}");
    let lines = collisions["data"]["lines"].as_array().expect("lines");
    assert!(lines.iter().all(|line| line["worktree"] != outside_text), "B's worktree not read: {text}");
    assert_eq!(collisions["data"]["pairCount"], 0, "{text}");
    assert!(!text.contains("secret"), "{text}");

    let listed = call_as(served.addr, &token, "worktree_list", json!({"repoPath": teams.repo_a}));
    let worktrees = listed["data"]["worktrees"].as_array().expect("worktrees");
    let in_b = worktrees.iter().find(|worktree| worktree["path"] == outside_text).expect("named");
    assert_eq!(in_b["outsideRoots"], true, "{listed}");
    for count in ["unstaged", "staged", "untracked", "conflicted"] {
        assert!(in_b.get(count).is_none(), "{count} not counted outside the roots: {listed}");
    }
    let own = worktrees.iter().find(|worktree| worktree["path"] == teams.repo_a.as_str()).expect("A's");
    assert_eq!(own["unstaged"], 1, "{listed}");
}

/// Starts `serve-http` with `args` and returns its failure's stderr (it must exit non-zero at once).
fn refused_at_start(roots: &Path, home: &Path, args: &[&str]) -> String {
    let mut all = vec!["serve-http", "--listen", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let output = sidecar(roots, home, &all).stdin(Stdio::null()).output().expect("runs");
    assert!(!output.status.success(), "refused at start");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_tokens_file_with_no_token_or_a_token_outside_the_server_roots_is_refused_at_start() {
    let teams = teams();
    let home = teams.home.path();
    let empty = home.join("empty.json");
    std::fs::write(&empty, r#"{"tokens": []}"#).expect("writes");
    let stderr = refused_at_start(&teams.a, home, &["--tokens", empty.to_str().expect("utf-8")]);
    assert!(stderr.contains("holds no token") && stderr.contains("token add"), "{stderr}");

    // A token for A on a server whose roots are only B's: nothing of the token's is served.
    let tokens = home.join("tokens.json");
    add_token(home, &tokens, "team-a", teams.a.to_str().expect("utf-8"), &[]);
    let stderr = refused_at_start(&teams.b, home, &["--tokens", tokens.to_str().expect("utf-8")]);
    assert!(stderr.contains("token team-a") && stderr.contains(teams.b.to_str().expect("utf-8")), "{stderr}");
    assert!(stderr.contains("FLUXGIT_MCP_ALLOWED_ROOTS"), "{stderr}");

    // A server root under the token's root replaces it: the token reads only inside the server's root.
    let wide = home.join("wide.json");
    let top = teams.a.parent().expect("top").to_str().expect("utf-8");
    let token = add_token(home, &wide, "wide", top, &[]);
    let served = serve(&teams.a, home, &["--tokens", wide.to_str().expect("utf-8")]);
    assert_brief(
        &post(served.addr, &modern(brief(1, &teams.repo_a)), &[format!("Authorization: Bearer {token}")]),
        &teams.repo_a,
    );
    let refused = post(served.addr, &modern(brief(2, &teams.repo_b)), &[format!("Authorization: Bearer {token}")]);
    let error = &refused.json()["error"];
    assert_eq!(error["data"]["reason"], "outside_allowed_roots", "{error}");
    assert_eq!(error["data"]["allowedRoots"], json!([teams.a.to_str().expect("utf-8")]), "{error}");
    assert!(error["message"].as_str().expect("message").contains("this server's admin"), "{error}");
}

#[test]
fn an_unknown_toolset_is_refused_naming_the_valid_ones() {
    let home = tempfile::tempdir().expect("tempdir");
    let file = home.path().join("tokens.json");
    let root = home.path().to_str().expect("utf-8");
    let output = Command::new(BIN)
        .args(["token", "add", "--file", file.to_str().expect("utf-8"), "--name", "x", "--roots", root])
        .args(["--toolsets", "core,x"])
        .env("HOME", home.path())
        .output()
        .expect("token add");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("unknown toolset \"x\"") && stderr.contains("core, ") && stderr.contains("files"),
        "{stderr}"
    );
    assert!(!file.exists(), "nothing written");
    // A hand-written file with an unknown toolset is refused at start, naming the token.
    let hash = "0".repeat(64);
    let text = format!(r#"{{"tokens":[{{"name":"t","sha256":"{hash}","roots":["{root}"],"toolsets":["nope"]}}]}}"#);
    std::fs::write(&file, text).expect("writes");
    let stderr = refused_at_start(home.path(), home.path(), &["--tokens", file.to_str().expect("utf-8")]);
    assert!(stderr.contains("token t: unknown toolset \"nope\" (toolsets: core"), "{stderr}");
}
