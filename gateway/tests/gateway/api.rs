//! The HTTP API on the real binary: lifecycle with a person's approval on a pseudo-terminal, rejection,
//! idempotency, the pending cap, expiry, cancel, policy, validation, and that nothing over HTTP can approve.

use serde_json::{Value, json};

use crate::support::{Sandbox, body, code_of, git};

#[test]
fn branch_proposal_approved_on_a_terminal_completes_with_the_sha_git_shows() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let gateway = sandbox.serve(&[]);
    let proposal = body(
        "p-life",
        "claude-code",
        "branch",
        &repo,
        json!({"name": "feature/x", "startPoint": "topic", "checkout": true}),
    );
    let (code, answer) = gateway.propose(&proposal);
    assert_eq!(code, 202, "{answer}");
    assert_eq!(answer["previewId"], "p-life");
    assert_eq!(answer["status"], "pending");
    assert_eq!(gateway.status("p-life")["status"], "pending");

    // Nothing reachable over HTTP approves.
    for (method, path) in [
        ("POST", "/v1/mcp/operation/approve/p-life"),
        ("POST", "/v1/mcp/operation/p-life/approve"),
        ("PUT", "/v1/mcp/operation/status/p-life"),
        ("POST", "/v1/mcp/operation/status/p-life"),
    ] {
        let (code, _) =
            gateway.request(method, path, Some(&json!({"previewId": "p-life", "status": "approved", "code": "X"})));
        assert!(code == 404 || code == 405, "{method} {path} answered {code}");
    }
    assert_eq!(gateway.status("p-life")["status"], "pending");

    // approve without a terminal is refused, whatever it is fed.
    let (ok, _, stderr) = sandbox.cli(&["approve", "p-life"]);
    assert!(!ok && stderr.contains("interactive terminal"), "{stderr}");
    // approve before show: no code was issued.
    let (ok, text) = sandbox.approve_on_pty("p-life", &["AAAA-AAAA"]);
    assert!(!ok && text.contains("show"), "{text}");

    let (ok, card, _) = sandbox.cli(&["show", "p-life"]);
    assert!(ok, "{card}");
    for expected in ["Operation:  branch (risk: low)", "claude-code", "test branch", "feature/x", "topic work"] {
        assert!(card.contains(expected), "card lacks {expected:?}:\n{card}");
    }
    // A wrong code voids the code; the right one then no longer works until a new card is shown.
    let right = code_of(&card);
    let (ok, text) = sandbox.approve_on_pty("p-life", &["WRONG-CODE"]);
    assert!(!ok && text.contains("wrong code"), "{text}");
    let (ok, text) = sandbox.approve_on_pty("p-life", &[right.as_str()]);
    assert!(!ok, "a voided code must not approve: {text}");
    assert_eq!(gateway.status("p-life")["status"], "pending");

    let (_, card, _) = sandbox.cli(&["show", "p-life"]);
    let (ok, text) = sandbox.approve_on_pty("p-life", &[code_of(&card).as_str()]);
    assert!(ok, "{text}");
    let done = gateway.wait_terminal("p-life");
    assert_eq!(done["status"], "completed", "{done}");
    let sha = git(&repo, &["rev-parse", "refs/heads/feature/x"]);
    assert_eq!(done["result"]["newSha"], sha.trim());
    assert_eq!(git(&repo, &["symbolic-ref", "HEAD"]).trim(), "refs/heads/feature/x");
    let point = done["result"]["restorePointId"].as_str().expect("restorePointId").to_owned();

    // Read routes.
    let query = format!("?repoPath={}", repo.display());
    let (code, points) = gateway.request("GET", &format!("/v1/mcp/restore-points{query}"), None);
    assert_eq!(code, 200);
    assert_eq!(points["restorePoints"][0]["id"], point.as_str());
    let (code, latest) = gateway.request("GET", &format!("/v1/mcp/restore-points/latest{query}"), None);
    assert_eq!((code, latest["previewId"].clone()), (200, json!("p-life")));
    let (code, timeline) = gateway.request("GET", &format!("/v1/mcp/safety/timeline{query}"), None);
    assert_eq!(code, 200);
    let kinds: Vec<&str> =
        timeline["events"].as_array().expect("events").iter().filter_map(|event| event["kind"].as_str()).collect();
    assert!(kinds.contains(&"operation") && kinds.contains(&"restore_point"), "{timeline}");
    let completed = timeline["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|event| event["summary"].as_str().is_some_and(|summary| summary.contains("-> completed")))
        .expect("the completion is on the timeline");
    assert_eq!(completed["refs"][0]["name"], "refs/heads/feature/x", "{completed}");
    assert_eq!(completed["refs"][0]["after"], sha.trim(), "{completed}");
    let (code, event) = gateway.request("GET", &format!("/v1/mcp/safety/events/latest{query}"), None);
    assert!(code == 200 && event["id"].is_string(), "{event}");
    let (code, semantic) =
        gateway.request("POST", "/v1/mcp/diff/semantic", Some(&json!({"repoPath": repo.display().to_string()})));
    assert_eq!((code, semantic["supported"].clone()), (200, json!(false)));

    // The audit ledger got the person's decision and the execution.
    let ledger = std::fs::read_to_string(sandbox.run_dir.join("audit/mcp.jsonl")).expect("audit ledger");
    assert!(ledger.contains("\"human_decision\"") && ledger.contains("\"execution\""), "{ledger}");
    assert!(!ledger.contains(repo.to_str().expect("utf-8")), "raw paths never appear in the ledger");
    let report = fluxgit_audit::verify_audit_ledger(
        &sandbox.run_dir.join("audit/mcp.jsonl"),
        &fluxgit_audit::VerifyOptions { public_keys: &[], require_signed: false },
    )
    .expect("the ledger the gateway wrote verifies");
    assert_eq!(report.chained, 2, "one decision and one execution");
}

#[test]
fn reject_cancel_idempotency_cap_expiry_and_an_unknown_remote() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let gateway = sandbox.serve(&[]);
    let branch = |id: &str, agent: &str| {
        body(id, agent, "branch", &repo, json!({"name": format!("b-{id}"), "startPoint": "HEAD", "checkout": false}))
    };

    // Reject: terminal with the person's reason.
    assert_eq!(gateway.propose(&branch("p-rej", "agent-a")).0, 202);
    let (ok, _, stderr) = sandbox.cli(&["reject", "p-rej", "--reason", "not now"]);
    assert!(ok, "{stderr}");
    let rejected = gateway.status("p-rej");
    assert_eq!((rejected["status"].clone(), rejected["message"].clone()), (json!("rejected"), json!("not now")));
    assert!(git(&repo, &["branch", "--list", "b-p-rej"]).is_empty());

    // Idempotency: the same key from the same agent resolves to the first proposal (200), another agent's is new.
    let mut first = branch("p-idem", "agent-b");
    first["idempotencyKey"] = json!("branch:client:k1");
    assert_eq!(gateway.propose(&first).0, 202);
    let mut again = branch("p-idem2", "agent-b");
    again["idempotencyKey"] = json!("branch:client:k1");
    let (code, answer) = gateway.propose(&again);
    assert_eq!((code, answer["previewId"].clone()), (200, json!("p-idem")));
    let mut other = branch("p-idem3", "agent-c");
    other["idempotencyKey"] = json!("branch:client:k1");
    assert_eq!(gateway.propose(&other).0, 202);

    // Cap: agent-d may have 5 pending; the 6th is 429 until one leaves the queue.
    for n in 0..5 {
        assert_eq!(gateway.propose(&branch(&format!("p-cap{n}"), "agent-d")).0, 202);
    }
    let (code, answer) = gateway.propose(&branch("p-cap5", "agent-d"));
    assert_eq!((code, answer["reason"].clone()), (429, json!("pending_cap")), "{answer}");
    assert_eq!(
        gateway.request("GET", "/v1/mcp/operation/status/p-cap5", None).0,
        404,
        "a refused proposal is not journaled"
    );

    // Cancel: only its agent, only while pending.
    let cancel = |id: &str, agent: &str| {
        gateway.request(
            "POST",
            &format!("/v1/mcp/operation/cancel/{id}"),
            Some(&json!({"previewId": id, "agentId": agent, "requestedAt": "2026-01-01T00:00:00.000Z"})),
        )
    };
    assert_eq!(cancel("p-cap0", "agent-x").0, 403);
    let (code, answer) = cancel("p-cap0", "agent-d");
    assert_eq!((code, answer["status"].clone()), (200, json!("cancelled")));
    assert_eq!(cancel("p-cap0", "agent-d").0, 409);
    assert_eq!(cancel("p-nope", "agent-d").0, 404);
    assert_eq!(gateway.propose(&branch("p-cap6", "agent-d")).0, 202, "a cancelled card leaves the queue");

    // Expiry: five minutes after requestedAt.
    let mut old = branch("p-old", "agent-e");
    old["requestedAt"] = json!(fluxgit_gateway::time::format_ms(fluxgit_gateway::time::now_ms() - 6 * 60 * 1000));
    assert_eq!(gateway.propose(&old).0, 202);
    assert_eq!(gateway.status("p-old")["status"], "expired");

    // A push to a remote that is not configured is refused on receipt, before any card.
    let push = body(
        "p-push",
        "agent-f",
        "push",
        &repo,
        json!({"remote": "origin", "setUpstream": false, "forceWithLease": false}),
    );
    let (code, answer) = gateway.propose(&push);
    assert_eq!((code, answer["reason"].clone()), (422, json!("unknown_remote")), "{answer}");

    // The journal survives a restart: every proposal is still known, pending ones keep their expiry.
    let expires = gateway.status("p-cap1")["expiresAt"].clone();
    drop(gateway);
    let gateway = sandbox.serve(&[]);
    assert_eq!(gateway.status("p-cap1")["expiresAt"], expires);
    assert_eq!(gateway.status("p-rej")["status"], "rejected");
    let (ok, listing, _) = sandbox.cli(&["list"]);
    assert!(ok && listing.contains("p-cap1") && !listing.contains("p-rej"), "{listing}");
}

#[test]
fn validation_on_receipt_never_trusts_the_sidecar() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let outside = tempfile::tempdir().expect("temp dir");
    let gateway = sandbox.serve(&[]);
    let cases: Vec<(Value, &str)> = vec![
        (
            body(
                "v1",
                "a",
                "merge",
                &repo,
                json!({"sourceRef": "--upload-pack=x", "targetRef": "main", "strategy": "merge"}),
            ),
            "invalid_revision",
        ),
        (
            body("v2", "a", "merge", &repo, json!({"sourceRef": "nope", "targetRef": "main", "strategy": "merge"})),
            "unknown_revision",
        ),
        (body("v3", "a", "discard", &repo, json!({"paths": ["../etc/passwd"]})), "invalid_path"),
        (body("v4", "a", "discard", &repo, json!({"paths": ["/etc/passwd"]})), "invalid_path"),
        (
            body("v5", "a", "branch", outside.path(), json!({"name": "x", "startPoint": "HEAD", "checkout": true})),
            "outside_allowed_roots",
        ),
        (
            body("v6", "a", "branch", &repo.join("sub"), json!({"name": "x", "startPoint": "HEAD", "checkout": true})),
            "not_found",
        ),
        (
            body("v7", "a", "branch", &repo, json!({"name": "bad..name", "startPoint": "HEAD", "checkout": true})),
            "invalid_name",
        ),
        (
            body("v8", "a", "rebase", &repo, json!({"ontoRef": "main", "currentRef": "HEAD", "interactive": true})),
            "invalid_field",
        ),
        (
            body("v9", "a b", "branch", &repo, json!({"name": "x", "startPoint": "HEAD", "checkout": true})),
            "invalid_agent_id",
        ),
    ];
    for (proposal, reason) in cases {
        let (code, answer) = gateway.propose(&proposal);
        assert_eq!((code, answer["reason"].as_str()), (422, Some(reason)), "{proposal} -> {answer}");
    }
    let (code, _) = gateway.request("POST", "/v1/mcp/operation/preview/amend", Some(&json!({})));
    assert_eq!(code, 404);
    let (code, _) = gateway.request("GET", "/v1/mcp/operation/status/unknown-id", None);
    assert_eq!(code, 404);
}

#[test]
fn policy_denies_before_a_card_and_a_bad_policy_stops_start_up() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let policy = sandbox.home.join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\ndefault = \"deny\"\n[[rule]]\nagent = \"claude-code\"\noperations = [\"branch\", \"plan\", \"discard\"]\nrefs = [\"feature/*\", \"HEAD\"]\n",
    )
    .expect("write policy");
    let policy_path = policy.display().to_string();
    let gateway = sandbox.serve(&[("FLUXGIT_MCP_AGENT_POLICY", policy_path.as_str())]);
    let allowed = body(
        "pol-1",
        "claude-code",
        "branch",
        &repo,
        json!({"name": "feature/a", "startPoint": "HEAD", "checkout": false}),
    );
    assert_eq!(gateway.propose(&allowed).0, 202);
    let plan = |id: &str, step: Value| body(id, "claude-code", "plan", &repo, json!({"steps": [step]}));
    assert_eq!(gateway.propose(&plan("pol-5", json!({"type": "discard", "paths": ["a.txt"]}))).0, 202);
    for denied in [
        // A plan's steps must be allowed operations too.
        plan("pol-6", json!({"type": "reset", "targetRef": "HEAD", "mode": "hard"})),
        body(
            "pol-2",
            "claude-code",
            "branch",
            &repo,
            json!({"name": "release", "startPoint": "HEAD", "checkout": false}),
        ),
        body("pol-3", "claude-code", "reset", &repo, json!({"targetRef": "HEAD", "mode": "hard"})),
        body(
            "pol-4",
            "other-agent",
            "branch",
            &repo,
            json!({"name": "feature/a", "startPoint": "HEAD", "checkout": false}),
        ),
    ] {
        let (code, answer) = gateway.propose(&denied);
        assert_eq!((code, answer["reason"].as_str()), (403, Some("policy_denied")), "{answer}");
        let id = denied["previewId"].as_str().expect("id");
        assert_eq!(gateway.request("GET", &format!("/v1/mcp/operation/status/{id}"), None).0, 404, "no card for {id}");
    }
    drop(gateway);

    for (content, expected) in [
        (None, "cannot read"),
        (Some("version = 2\ndefault = \"allow\"\n"), "unsupported policy version 2"),
        (Some("version = 1\ndefault = \"allow\"\n[[rule]]\nagnet = \"x\"\n"), "malformed"),
        (Some("version = [\n"), "malformed"),
    ] {
        let path = sandbox.home.join("bad-policy.toml");
        let _ = std::fs::remove_file(&path);
        if let Some(content) = content {
            std::fs::write(&path, content).expect("write policy");
        }
        let path = path.display().to_string();
        let output = sandbox
            .command(&["serve", "--addr", "127.0.0.1:0"], &[("FLUXGIT_MCP_AGENT_POLICY", path.as_str())])
            .output()
            .expect("run serve");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(expected), "{expected}: {stderr}");
        assert!(!String::from_utf8_lossy(&output.stdout).contains("FLUXGIT_MCP_HANDSHAKE_ADDR"));
    }
    // One serving gateway per run dir.
    let first = sandbox.serve(&[]);
    let output = sandbox.command(&["serve", "--addr", "127.0.0.1:0"], &[]).output().expect("run serve");
    assert!(!output.status.success() && String::from_utf8_lossy(&output.stderr).contains("already serving"));
    drop(first);
    let output = sandbox.command(&["serve", "--addr", "0.0.0.0:0"], &[]).output().expect("run serve");
    assert!(!output.status.success() && String::from_utf8_lossy(&output.stderr).contains("loopback"));
}

/// Sends one raw HTTP/1.1 request and returns the status code.
fn raw_status(addr: &str, request: &str) -> u16 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0)
}

#[test]
fn browsers_are_kept_out_and_cards_are_safe_to_print() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let gateway = sandbox.serve(&[]);
    let mut proposal =
        body("p-web", "agent", "branch", &repo, json!({"name": "web", "startPoint": "HEAD", "checkout": false}));
    proposal["reason"] = json!("looks fine\u{1b}[2J\u{1b}[HOne-time approval code: FAKE-CODE\r");
    let text = proposal.to_string();
    let post = |host: &str, extra: &str, content_type: &str| {
        format!(
            "POST /v1/mcp/operation/preview/branch HTTP/1.1\r\nHost: {host}\r\n{extra}content-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
            text.len()
        )
    };
    let addr = gateway.addr.as_str();
    assert_eq!(raw_status(addr, &post("evil.example:80", "", "application/json")), 403, "DNS rebinding");
    assert_eq!(raw_status(addr, &post(addr, "Origin: http://evil.example\r\n", "application/json")), 403, "a web page");
    assert_eq!(raw_status(addr, &post(addr, "", "text/plain")), 415, "a simple cross-origin POST");
    assert_eq!(gateway.request("GET", "/v1/mcp/operation/status/p-web", None).0, 404, "none of them was journaled");
    assert_eq!(
        raw_status(
            addr,
            &post(&format!("localhost:{}", addr.rsplit(':').next().expect("port")), "", "application/json")
        ),
        202
    );

    let (ok, card, _) = sandbox.cli(&["show", "p-web"]);
    assert!(ok);
    assert!(!card.contains('\u{1b}') && !card.contains('\r'), "control characters reach the terminal: {card:?}");
    assert!(card.contains("\\u{1b}[2J"), "{card}");
    let codes: Vec<&str> = card.lines().filter(|line| line.starts_with("One-time approval code: ")).collect();
    assert_eq!(codes.len(), 1, "the agent's text cannot forge a code line: {card}");
    assert_ne!(codes[0], "One-time approval code: FAKE-CODE");
}

#[test]
fn the_cli_takes_an_unambiguous_start_of_a_preview_id_or_names_the_candidates() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    {
        let mut journal = fluxgit_gateway::journal::Journal::open(&sandbox.run_dir).expect("journal");
        for (id, name) in [("18091a0b-1111", "one"), ("18091a0b-2222", "two"), ("77aa-0001", "three")] {
            let fields = json!({"name": name, "startPoint": "topic", "checkout": false});
            crate::support::propose_lib(&mut journal, &sandbox.roots(), &body(id, "agent", "branch", &repo, fields));
        }
    }
    let (ok, card, stderr) = sandbox.cli(&["show", "77aa"]);
    assert!(ok, "{stderr}");
    assert!(card.contains("fluxgit-gateway approve 77aa-0001"), "the card names the full id:\n{card}");

    let (ok, _, stderr) = sandbox.cli(&["show", "18091a0b"]);
    assert!(!ok);
    assert!(
        stderr.contains("18091a0b is the start of 2 previewIds: 18091a0b-1111, 18091a0b-2222; give more of it"),
        "{stderr}"
    );
    let (ok, _, stderr) = sandbox.cli(&["show", "180"]);
    assert!(!ok && stderr.contains("no proposal 180; a shortened previewId needs at least 4"), "{stderr}");
    let (ok, _, stderr) = sandbox.cli(&["show", "ffff0000"]);
    assert!(!ok && stderr.contains("no proposal ffff0000, and no previewId starts with it"), "{stderr}");

    let (ok, out, stderr) = sandbox.cli(&["reject", "18091a0b-2", "--reason", "not now"]);
    assert!(ok, "{stderr}");
    assert!(out.contains("rejected 18091a0b-2222"), "{out}");
    let (_, list, _) = sandbox.cli(&["list", "--all"]);
    assert!(list.lines().any(|line| line.starts_with("18091a0b-2222  rejected")), "{list}");
    assert!(list.lines().any(|line| line.starts_with("18091a0b-1111  pending")), "{list}");
}
