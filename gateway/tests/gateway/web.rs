//! The approval page's server side on the real binary, with HTTP written by hand (so that `Host`, `Origin` and
//! `Sec-Fetch-Site` are exactly what each test says): the launch secret, the loopback host, same origin and CSRF
//! checks, approve with the card's digest, the strong confirmation of a hard reset, reject, restore, and the card
//! as data (sections, numbered diff, conflict preflight). The browser itself is driven in `gateway/tests/browser/`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::{Gateway, Sandbox, body, git, state, write};

/// One HTTP/1.1 exchange: (status, response head, body).
fn raw(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], payload: Option<&str>) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to the gateway");
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    let payload = payload.unwrap_or_default();
    request.push_str(&format!("Content-Length: {}\r\n\r\n{payload}", payload.len()));
    stream.write_all(request.as_bytes()).expect("send the request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read the answer");
    let (head, text) = answer.split_once("\r\n\r\n").unwrap_or((answer.as_str(), ""));
    let status = head.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    (status, head.to_owned(), text.to_owned())
}

/// The page's secret path prefix (`/<secret>/`) and its CSRF token, read from the page as a browser would.
struct Page {
    addr: String,
    prefix: String,
    csrf: String,
}

impl Page {
    fn open(gateway: &Gateway) -> Self {
        let prefix = gateway.page.strip_prefix(&format!("http://{}", gateway.addr)).expect("page on the address");
        let (status, head, html) = raw(&gateway.addr, "GET", prefix, &[("Sec-Fetch-Site", "none")], None);
        assert_eq!(status, 200, "{head}");
        for header in
            ["content-security-policy: default-src 'none'", "cache-control: no-store", "x-frame-options: DENY"]
        {
            assert!(head.to_ascii_lowercase().contains(&header.to_ascii_lowercase()), "{header} missing: {head}");
        }
        let csrf = html
            .split("name=\"fluxgit-csrf\" content=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("the CSRF token in the page")
            .to_owned();
        assert_eq!(csrf.len(), 64, "{csrf}");
        Self { addr: gateway.addr.clone(), prefix: prefix.to_owned(), csrf }
    }

    fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A GET from the page's own script.
    fn get(&self, path: &str) -> (u16, Value) {
        let origin = self.origin();
        let headers = [("Origin", origin.as_str()), ("Sec-Fetch-Site", "same-origin")];
        let (status, _, text) = raw(&self.addr, "GET", &format!("{}{path}", self.prefix), &headers, None);
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    /// A POST from the page's own script (same origin, the CSRF token, JSON).
    fn post(&self, path: &str, payload: &Value) -> (u16, Value) {
        let origin = self.origin();
        let headers = [
            ("Origin", origin.as_str()),
            ("Sec-Fetch-Site", "same-origin"),
            ("Content-Type", "application/json"),
            ("X-FluxGit-CSRF", self.csrf.as_str()),
        ];
        let (status, _, text) =
            raw(&self.addr, "POST", &format!("{}{path}", self.prefix), &headers, Some(&payload.to_string()));
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    fn card(&self, id: &str) -> Value {
        let (status, card) = self.get(&format!("api/proposals/{id}"));
        assert_eq!(status, 200, "{card}");
        card
    }
}

fn propose(gateway: &Gateway, proposal: &Value) {
    let (status, answer) = gateway.propose(proposal);
    assert_eq!(status, 202, "{answer}");
}

#[test]
fn page_routes_need_the_secret_a_loopback_host_the_same_origin_and_the_csrf_token() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let gateway = sandbox.serve(&[]);
    let page = Page::open(&gateway);
    let secret = page.prefix.trim_matches('/').to_owned();
    assert_eq!(secret.len(), 64);
    let addr = gateway.addr.as_str();

    // Without the secret, nothing but 404.
    let mut wrong = secret.clone();
    wrong.replace_range(0..1, if wrong.starts_with('0') { "1" } else { "0" });
    for path in [
        "/".to_owned(),
        "/index.html".to_owned(),
        "/app.js".to_owned(),
        "/api/queue".to_owned(),
        format!("/{wrong}/"),
        format!("/{wrong}/api/queue"),
        format!("/{}/", &secret[..63]),
        format!("/{secret}x/api/queue"),
        format!("/x/{secret}/"),
        format!("/{secret}/api/nothing"),
    ] {
        let (status, head, _) = raw(addr, "GET", &path, &[], None);
        assert_eq!(status, 404, "{path}: {head}");
    }
    let (status, head, _) = raw(addr, "GET", &format!("/{secret}"), &[], None);
    assert_eq!(status, 308, "{head}");
    assert!(head.contains(&format!("location: /{secret}/")), "{head}");
    for asset in ["app.js", "app.css"] {
        let (status, head, _) = raw(addr, "GET", &format!("/{secret}/{asset}"), &[], None);
        assert_eq!(status, 200, "{asset}: {head}");
    }

    // Another Host (DNS rebinding) or another origin: refused, with the secret too.
    let port = addr.rsplit_once(':').expect("a port").1;
    for host in [format!("evil.example:{port}"), format!("127.0.0.1.nip.example:{port}"), "evil.example".to_owned()] {
        let (status, head, _) = raw(addr, "GET", &format!("/{secret}/api/queue"), &[("Host", host.as_str())], None);
        assert_eq!(status, 403, "{host}: {head}");
    }
    for headers in [
        vec![("Origin", "http://evil.example")],
        vec![("Origin", "null")],
        vec![("Origin", "http://localhost:1")],
        vec![("Sec-Fetch-Site", "cross-site")],
        vec![("Sec-Fetch-Site", "same-site")],
    ] {
        let (status, head, _) = raw(addr, "GET", &format!("/{secret}/api/queue"), &headers, None);
        assert_eq!(status, 403, "{headers:?}: {head}");
    }
    let (status, queue) = page.get("api/queue");
    assert_eq!(status, 200, "{queue}");
    assert_eq!(queue["proposals"], json!([]));

    // A proposal, then every way of approving it that is not the page's own is refused.
    let proposal = body(
        "p-web",
        "claude-code",
        "branch",
        &repo,
        json!({"name": "web/x", "startPoint": "topic", "checkout": false}),
    );
    propose(&gateway, &proposal);
    let card = page.card("p-web");
    let digest = card["digest"].as_str().expect("digest").to_owned();
    let payload = json!({ "digest": digest }).to_string();
    let approve = format!("/{secret}/api/proposals/p-web/approve");
    let origin = page.origin();
    let csrf = page.csrf.as_str();
    let json_type = ("Content-Type", "application/json");
    type Headers<'a> = Vec<(&'a str, &'a str)>;
    let attempts: Vec<(&str, Headers, u16)> = vec![
        ("no CSRF token", vec![("Origin", origin.as_str()), json_type], 403),
        ("wrong CSRF token", vec![("Origin", origin.as_str()), ("X-FluxGit-CSRF", "00"), json_type], 403),
        ("another origin", vec![("Origin", "http://evil.example"), ("X-FluxGit-CSRF", csrf), json_type], 403),
        ("cross-site", vec![("Sec-Fetch-Site", "cross-site"), ("X-FluxGit-CSRF", csrf), json_type], 403),
        ("typed address", vec![("Sec-Fetch-Site", "none"), ("X-FluxGit-CSRF", csrf), json_type], 403),
        ("no origin headers at all", vec![("X-FluxGit-CSRF", csrf), json_type], 403),
        (
            "a form post",
            vec![("Origin", origin.as_str()), ("X-FluxGit-CSRF", csrf), ("Content-Type", "text/plain")],
            415,
        ),
    ];
    for (what, headers, expected) in attempts {
        let (status, head, _) = raw(addr, "POST", &approve, &headers, Some(&payload));
        assert_eq!(status, expected, "{what}: {head}");
    }
    let (status, _, _) = raw(addr, "GET", &approve, &[], None);
    assert_eq!(status, 405, "approve is POST only");
    let (status, answer) = page.post("api/proposals/p-web/approve", &json!({ "digest": "0".repeat(64) }));
    assert_eq!((status, answer["reason"].clone()), (409, json!("card_changed")), "{answer}");
    // The sidecar-facing API still refuses anything a page sends.
    let (status, _, _) = raw(addr, "GET", "/v1/mcp/operation/status/p-web", &[("Origin", origin.as_str())], None);
    assert_eq!(status, 403);
    assert_eq!(gateway.status("p-web")["status"], "pending");

    // The page's own request approves; the executor runs it.
    let (status, answer) = page.post("api/proposals/p-web/approve", &json!({ "digest": digest }));
    assert_eq!(status, 200, "{answer}");
    let done = gateway.wait_terminal("p-web");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["newSha"], git(&repo, &["rev-parse", "refs/heads/web/x"]).trim());
    let (status, answer) = page.post("api/proposals/p-web/approve", &json!({ "digest": digest }));
    assert_eq!((status, answer["reason"].clone()), (409, json!("wrong_state")), "{answer}");
    let card = page.card("p-web");
    let approved = card["transitions"].as_array().expect("transitions").iter().find(|step| step["to"] == "approved");
    assert!(approved.is_some_and(|step| step["detail"].as_str().is_some_and(|detail| detail.contains("page"))));
    let ledger = std::fs::read_to_string(sandbox.run_dir.join("audit/mcp.jsonl")).expect("audit ledger");
    assert!(ledger.contains("\"human_decision\""), "{ledger}");
    // The secret is kept nowhere on disk: not in the journal, not in the ledger.
    for file in ["gateway/journal.sqlite3", "gateway/journal.sqlite3-wal", "audit/mcp.jsonl"] {
        let bytes = std::fs::read(sandbox.run_dir.join(file)).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(&secret) && !text.contains(csrf), "{file} holds the secret");
    }
}

#[test]
fn hard_reset_needs_the_typed_branch_name_reject_and_restore_work_from_the_page() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    write(&repo, "b.txt", "bee\nuncommitted\n");
    let gateway = sandbox.serve(&[]);
    let page = Page::open(&gateway);
    let before = state(&repo);
    let first = git(&repo, &["rev-parse", "HEAD~1"]);

    let reset = body("p-hard", "agent-a", "reset", &repo, json!({"targetRef": "HEAD~1", "mode": "hard"}));
    propose(&gateway, &reset);
    let card = page.card("p-hard");
    assert_eq!((card["risk"].clone(), card["confirmation"].clone()), (json!("high"), json!("main")), "{card}");
    let digest = card["digest"].clone();
    for typed in [Value::Null, json!(""), json!("mian"), json!("HEAD")] {
        let (status, answer) =
            page.post("api/proposals/p-hard/approve", &json!({ "digest": digest, "confirmation": typed }));
        assert_eq!(status, 422, "{typed}: {answer}");
    }
    assert_eq!(gateway.status("p-hard")["status"], "pending");
    assert_eq!(state(&repo), before, "nothing ran");
    let (status, answer) =
        page.post("api/proposals/p-hard/approve", &json!({ "digest": digest, "confirmation": "main" }));
    assert_eq!(status, 200, "{answer}");
    let done = gateway.wait_terminal("p-hard");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(git(&repo, &["rev-parse", "HEAD"]), first);

    // Restore from the page: refs, index and work tree as before the reset.
    let card = page.card("p-hard");
    assert_eq!(card["restorePoint"]["id"], done["result"]["restorePointId"], "{card}");
    let (status, answer) = page.post("api/proposals/p-hard/restore", &json!({}));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(state(&repo), before);
    let card = page.card("p-hard");
    assert!(card["restorePoint"]["restoredAt"].is_string(), "{card}");
    assert_eq!(card["restored"], true);

    // Reject with a reason, passed to the agent; no restore point to put back.
    let branch =
        body("p-no", "agent-a", "branch", &repo, json!({"name": "never", "startPoint": "HEAD", "checkout": false}));
    propose(&gateway, &branch);
    let (status, answer) = page.post("api/proposals/p-no/reject", &json!({ "reason": "not this one" }));
    assert_eq!(status, 200, "{answer}");
    let rejected = gateway.status("p-no");
    assert_eq!((rejected["status"].clone(), rejected["message"].clone()), (json!("rejected"), json!("not this one")));
    let (status, answer) = page.post("api/proposals/p-no/restore", &json!({}));
    assert_eq!(status, 422, "{answer}");
    let (status, _) = page.post("api/proposals/p-unknown/reject", &json!({}));
    assert_eq!(status, 404);

    // The queue: pending first, then the outcomes, newest change first.
    let waiting =
        body("p-wait", "agent-b", "branch", &repo, json!({"name": "later", "startPoint": "HEAD", "checkout": false}));
    propose(&gateway, &waiting);
    let (_, queue) = page.get("api/queue");
    let order: Vec<(&str, &str)> = queue["proposals"]
        .as_array()
        .expect("proposals")
        .iter()
        .map(|item| (item["id"].as_str().unwrap_or_default(), item["status"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(order, [("p-wait", "pending"), ("p-no", "rejected"), ("p-hard", "completed")], "{queue}");
    assert_eq!(queue["pending"], 1);
}

#[test]
fn cards_carry_sections_a_numbered_diff_the_conflict_preflight_and_other_agents() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    write(&repo, "a.txt", "one\nTWO\nthree\n");
    let gateway = sandbox.serve(&[]);
    let page = Page::open(&gateway);

    let mut discard = body("p-discard", "agent-a", "discard", &repo, json!({"paths": ["a.txt"]}));
    discard["otherAgents"] = json!({
        "informational": true,
        "agents": [{"agent": "codex", "state": "working", "overlappingPaths": ["a.txt"]}],
        "agentCount": 1,
    });
    propose(&gateway, &discard);
    let card = page.card("p-discard");
    assert_eq!(card["paths"], json!(["a.txt"]));
    assert_eq!(card["agent"], "agent-a");
    assert_eq!(card["otherAgents"]["agents"][0]["overlappingPaths"], json!(["a.txt"]));
    let sections = card["sections"].as_array().expect("sections");
    let diff = sections.iter().find(|section| section["kind"] == "diff").expect("a diff section");
    let lines = diff["lines"].as_array().expect("diff lines");
    // git's own diff: line 2 `two` became `TWO`, line 3 `three` was added.
    let changed: Vec<Value> = lines
        .iter()
        .filter(|line| line["kind"] == "add" || line["kind"] == "del")
        .map(|line| json!([line["kind"], line["old"], line["new"], line["text"]]))
        .collect();
    assert_eq!(
        changed,
        [json!(["del", 2, null, "-two"]), json!(["add", null, 2, "+TWO"]), json!(["add", null, 3, "+three"])],
        "{diff}"
    );

    let merge = body(
        "p-merge",
        "agent-a",
        "merge",
        &repo,
        json!({"sourceRef": "clash", "targetRef": "main", "strategy": "merge"}),
    );
    git(&repo, &["checkout", "--", "a.txt"]);
    propose(&gateway, &merge);
    let card = page.card("p-merge");
    let preflight =
        card["sections"].as_array().expect("sections").iter().find(|section| section["kind"] == "preflight").cloned();
    let preflight = preflight.unwrap_or_else(|| panic!("no preflight: {card}"));
    assert_eq!((preflight["conflicts"].clone(), preflight["lines"].clone()), (json!(true), json!(["a.txt"])));
    assert_eq!(card["confirmation"], Value::Null);

    // An operation the page knows nothing special about: its card's sections and its strong confirmation come
    // through as they are (a branch deletion: the branch's name, checked by the gateway).
    let targets = json!([{"repoPath": repo.display().to_string(), "branches": ["topic"]}]);
    propose(&gateway, &body("p-delete", "agent-a", "branchDelete", &repo, json!({"targets": targets})));
    let card = page.card("p-delete");
    assert_eq!((card["risk"].clone(), card["confirmation"].clone()), (json!("high"), json!("topic")), "{card}");
    assert!(card["sections"].as_array().expect("sections").len() > 2, "{card}");
    let (status, answer) = page.post("api/proposals/p-delete/approve", &json!({ "digest": card["digest"] }));
    assert_eq!(status, 422, "{answer}");
    assert_eq!(gateway.status("p-delete")["status"], "pending");
}

#[test]
fn serve_no_page_prints_no_page_address() {
    let sandbox = Sandbox::new();
    let mut child = sandbox
        .command(&["serve", "--addr", "127.0.0.1:0", "--no-page"], &[])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the gateway");
    let mut reader = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    reader.read_line(&mut line).expect("read the handshake line");
    let addr = line.trim().strip_prefix("FLUXGIT_MCP_HANDSHAKE_ADDR=").expect("the handshake line").to_owned();
    let (status, _, _) = raw(&addr, "GET", "/", &[], None);
    assert_eq!(status, 404);
    let _ = child.kill();
    let _ = child.wait();
    let mut rest = String::new();
    reader.read_to_string(&mut rest).expect("read the rest of stdout");
    assert_eq!(rest, "", "no page address is printed");
}
