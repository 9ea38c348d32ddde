//! Hostile peers on the real binary, with HTTP written by hand: `Host` must be exactly one loopback name with the
//! listening port, request targets origin-form; the pending proposals of all agents are capped and each connection's
//! proposals are rated; a stalled connection is closed; `.git` is refused in every path field.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use fluxgit_gateway::connection::{PREVIEW_RATE, READ_TIMEOUT};
use fluxgit_gateway::journal::PENDING_GLOBAL_CAP;
use fluxgit_gateway::proposal;
use serde_json::{Value, json};

use crate::support::{Sandbox, body};

/// One exchange on `stream` (kept open): the status and the JSON body.
fn exchange(stream: &mut TcpStream, head: &str, payload: &str) -> (u16, Value) {
    let request = format!("{head}Content-Length: {}\r\n\r\n{payload}", payload.len());
    stream.write_all(request.as_bytes()).expect("send the request");
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("read the status line");
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("read a header");
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().expect("a length");
        }
    }
    let mut text = vec![0; length];
    reader.read_exact(&mut text).expect("read the body");
    let status = status_line.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    (status, serde_json::from_slice(&text).unwrap_or(Value::Null))
}

/// A request on a new connection that the server is asked to close: the status.
fn once(addr: &str, head: &str) -> u16 {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("read timeout");
    exchange(&mut stream, &format!("{head}Connection: close\r\n"), "").0
}

#[test]
fn host_must_be_one_exact_loopback_name_and_targets_origin_form() {
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&[]);
    let addr = gateway.addr.as_str();
    let port = addr.rsplit_once(':').expect("a port").1;
    let status = "/v1/mcp/operation/status/nope";
    // The route answers 404 for an unknown proposal once the request is let in.
    for host in [addr.to_owned(), format!("localhost:{port}"), format!("[::1]:{port}")] {
        assert_eq!(once(addr, &format!("GET {status} HTTP/1.1\r\nHost: {host}\r\n")), 404, "{host}");
    }
    for host in [
        format!("[::1].evil.example:{port}"),
        "[::1].evil.example".to_owned(),
        format!("localhost.evil.example:{port}"),
        format!("localhost:{}", port.parse::<u16>().expect("a port") ^ 1),
        "localhost".to_owned(),
        format!("127.0.0.2:{port}"),
    ] {
        assert_eq!(once(addr, &format!("GET {status} HTTP/1.1\r\nHost: {host}\r\n")), 403, "{host}");
    }
    let two = format!("GET {status} HTTP/1.1\r\nHost: {addr}\r\nHost: evil.example\r\n");
    assert_eq!(once(addr, &two), 403, "a second Host after a loopback one");
    let absolute = format!("GET http://evil.example{status} HTTP/1.1\r\nHost: {addr}\r\n");
    assert_eq!(once(addr, &absolute), 400, "absolute-form with another host");
    let absolute = format!("GET http://{addr}{status} HTTP/1.1\r\nHost: {addr}\r\n");
    assert_eq!(once(addr, &absolute), 400, "absolute-form even with the gateway's own host");
    // The approval page's routes pass the same guard.
    let page = gateway.page.trim_start_matches(&format!("http://{addr}")).to_owned();
    assert_eq!(once(addr, &format!("GET {page}api/queue HTTP/1.1\r\nHost: {addr}\r\n")), 200);
    let evil = format!("GET {page}api/queue HTTP/1.1\r\nHost: [::1].evil.example:{port}\r\n");
    assert_eq!(once(addr, &evil), 403);
}

#[test]
fn the_pending_proposals_of_all_agents_are_capped() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let gateway = sandbox.serve(&[]);
    let branch = |index: i64| {
        let fields = json!({"name": format!("b{index}"), "startPoint": "HEAD", "checkout": false});
        body(&format!("flood-{index}"), &format!("agent-{index}"), "branch", &repo, fields)
    };
    // One proposal per self-declared agent: the per-agent cap never applies.
    for index in 0..PENDING_GLOBAL_CAP {
        let (status, answer) = gateway.propose(&branch(index));
        assert_eq!(status, 202, "{index}: {answer}");
    }
    let (status, answer) = gateway.propose(&branch(PENDING_GLOBAL_CAP));
    assert_eq!((status, answer["reason"].as_str()), (429, Some("pending_global_cap")), "{answer}");
    assert_eq!(answer["details"]["cap"], json!(PENDING_GLOBAL_CAP));
    assert_eq!(gateway.request("GET", &format!("/v1/mcp/operation/status/flood-{PENDING_GLOBAL_CAP}"), None).0, 404);
    // A proposal sent again with its idempotency key still finds itself.
    let (status, answer) = gateway.propose(&branch(7));
    assert_eq!((status, answer["previewId"].as_str()), (200, Some("flood-7")), "{answer}");
    // A decision frees a place.
    let (status, answer) =
        gateway.request("POST", "/v1/mcp/operation/cancel/flood-0", Some(&json!({"agentId": "agent-0"})));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(gateway.propose(&branch(PENDING_GLOBAL_CAP)).0, 202);
}

#[test]
fn each_connection_may_send_only_so_many_proposals_a_minute() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let gateway = sandbox.serve(&[]);
    let addr = gateway.addr.as_str();
    let head =
        format!("POST /v1/mcp/operation/preview/branch HTTP/1.1\r\nHost: {addr}\r\ncontent-type: application/json\r\n");
    let proposal = |index: usize| {
        let fields = json!({"name": format!("r{index}"), "startPoint": "HEAD", "checkout": false});
        body(&format!("rate-{index}"), &format!("agent-{index}"), "branch", &repo, fields).to_string()
    };
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("read timeout");
    for index in 0..PREVIEW_RATE {
        let (status, answer) = exchange(&mut stream, &head, &proposal(index));
        assert_eq!(status, 202, "{index}: {answer}");
    }
    let (status, answer) = exchange(&mut stream, &head, &proposal(PREVIEW_RATE));
    assert_eq!((status, answer["reason"].as_str()), (429, Some("rate_limited")), "{answer}");
    // Reads on the same connection still pass, and another connection has its own rate.
    let status_head = format!("GET /v1/mcp/operation/status/rate-0 HTTP/1.1\r\nHost: {addr}\r\n");
    assert_eq!(exchange(&mut stream, &status_head, "").0, 200);
    let mut other = TcpStream::connect(addr).expect("connect");
    other.set_read_timeout(Some(Duration::from_secs(20))).expect("read timeout");
    assert_eq!(exchange(&mut other, &head, &proposal(PREVIEW_RATE)).0, 202);
}

#[test]
fn a_stalled_connection_is_closed_and_the_gateway_keeps_answering() {
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&[]);
    let addr = gateway.addr.as_str();
    let started = Instant::now();
    let mut silent = TcpStream::connect(addr).expect("connect");
    let mut half = TcpStream::connect(addr).expect("connect");
    half.write_all(format!("GET /v1/mcp/operation/status/x HTTP/1.1\r\nHost: {addr}\r\nX-Wait:").as_bytes())
        .expect("send half a request");
    for stream in [&silent, &half] {
        stream.set_read_timeout(Some(READ_TIMEOUT * 3)).expect("read timeout");
    }
    // Meanwhile the gateway answers others.
    assert_eq!(gateway.request("GET", "/v1/mcp/operation/status/x", None).0, 404);
    for (name, stream) in [("silent", &mut silent), ("half", &mut half)] {
        let mut rest = Vec::new();
        let read = stream.read_to_end(&mut rest);
        let elapsed = started.elapsed();
        assert!(read.is_ok(), "{name}: the gateway closed the connection: {read:?}");
        assert!(elapsed >= READ_TIMEOUT.saturating_sub(Duration::from_secs(1)), "{name}: closed early, {elapsed:?}");
        assert!(elapsed < READ_TIMEOUT + Duration::from_secs(5), "{name}: closed late, {elapsed:?}");
    }
    assert_eq!(gateway.request("GET", "/v1/mcp/operation/status/x", None).0, 404);
}

#[test]
fn git_paths_are_refused_in_every_path_field() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let roots = sandbox.roots();
    let worktree_in_git = repo.join(".git/wt").display().to_string();
    let git_patch = "diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n@@ -1 +1,2 @@\n \
                     [core]\n+\tfsmonitor = /bin/true\n";
    let cases = [
        ("discard", json!({"paths": [".git/config"]}), "paths"),
        ("discard", json!({"paths": ["a.txt", "sub/.GIT/config"]}), "paths"),
        ("discard", json!({"paths": [".git"]}), "paths"),
        ("discard", json!({"paths": [".git./config"]}), "paths"),
        ("discard", json!({"paths": ["GIT~1/config"]}), "paths"),
        ("commit", json!({"message": "m", "paths": [".git/hooks/pre-commit"], "stageAll": false}), "paths"),
        ("submodulePointer", json!({"relativePath": ".git/modules/x", "direction": "record"}), "relativePath"),
        ("submodulePointer", json!({"relativePath": "lib", "parentPath": ".Git", "direction": "record"}), "parentPath"),
        ("worktree", json!({"branch": "topic", "path": worktree_in_git}), "path"),
        ("plan", json!({"steps": [{"type": "discard", "paths": [".git/index"]}]}), "paths"),
        ("patch", json!({"patchContent": git_patch, "applyToIndex": false}), "patchContent"),
        ("plan", json!({"steps": [{"type": "patch", "patchContent": git_patch}]}), "patchContent"),
    ];
    for (index, (op, fields, field)) in cases.into_iter().enumerate() {
        let proposal = body(&format!("dotgit-{index}"), "agent", op, &repo, fields);
        let refused = proposal::check(op, &proposal, &roots).expect_err(&format!("{op} {index} accepted"));
        assert_eq!((refused.reason, &refused.details["field"]), ("invalid_path", &json!(field)), "{index}");
    }
    // Over HTTP: the discard of the issue is a 422, and nothing is journaled.
    let gateway = sandbox.serve(&[]);
    let proposal = body("dotgit-http", "agent", "discard", &repo, json!({"paths": [".git/config"]}));
    let (status, answer) = gateway.propose(&proposal);
    assert_eq!((status, answer["reason"].as_str()), (422, Some("invalid_path")), "{answer}");
    assert_eq!(gateway.request("GET", "/v1/mcp/operation/status/dotgit-http", None).0, 404);
    // A name that only starts like it is a plain path.
    let proposal = body("dotgit-ok", "agent", "discard", &repo, json!({"paths": [".gitignore", "a.txt"]}));
    assert_eq!(gateway.propose(&proposal).0, 202);
}

/// A gateway listener with a `read_timeout` in this process, over a router whose `/slow` answers after `slow`.
fn small_server(read_timeout: Duration, slow: Duration) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("bind");
    let addr = listener.local_addr().expect("an address").to_string();
    let router = axum::Router::new()
        .route("/fast", axum::routing::get(|| async { "fast" }))
        .route(
            "/slow",
            axum::routing::get(move || async move {
                tokio::time::sleep(slow).await;
                "slow"
            }),
        )
        .layer(axum::middleware::from_fn(fluxgit_gateway::http::connection_guard));
    let listener = fluxgit_gateway::connection::Listener::new(listener, read_timeout);
    std::thread::spawn(move || {
        let service = router.into_make_service_with_connect_info::<fluxgit_gateway::connection::Peer>();
        let _ = runtime.block_on(async move { axum::serve(listener, service).await });
    });
    addr
}

#[test]
fn a_trickling_connection_is_closed_but_a_slow_answer_is_waited_for() {
    let timeout = Duration::from_millis(800);
    let addr = small_server(timeout, timeout * 3);

    // A byte every 300 ms never stalls for a read timeout, yet the request must arrive within three of them.
    let started = Instant::now();
    let mut trickle = TcpStream::connect(&addr).expect("connect");
    trickle.set_read_timeout(Some(Duration::from_millis(50))).expect("read timeout");
    let head = format!("GET /fast HTTP/1.1\r\nHost: {addr}\r\nX-Slow: {}", "a".repeat(200));
    let mut closed = None;
    for byte in head.bytes() {
        if trickle.write_all(&[byte]).is_err() {
            closed = Some(started.elapsed());
            break;
        }
        let mut buffer = [0; 16];
        match trickle.read(&mut buffer) {
            Ok(0) => {
                closed = Some(started.elapsed());
                break;
            }
            Ok(_) => panic!("an answer to half a request"),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(error) if error.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => {
                closed = Some(started.elapsed());
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let closed = closed.expect("the trickling connection was never closed");
    assert!(
        closed >= timeout * 3 - Duration::from_millis(100) && closed < timeout * 3 + Duration::from_secs(2),
        "{closed:?}"
    );

    // An answer that takes three read timeouts comes, and the connection serves the next request.
    let mut patient = TcpStream::connect(&addr).expect("connect");
    patient.set_read_timeout(Some(Duration::from_secs(20))).expect("read timeout");
    let slow = format!("GET /slow HTTP/1.1\r\nHost: {addr}\r\n");
    assert_eq!(exchange(&mut patient, &slow, "").0, 200);
    let fast = format!("GET /fast HTTP/1.1\r\nHost: {addr}\r\n");
    assert_eq!(exchange(&mut patient, &fast, "").0, 200);
}
