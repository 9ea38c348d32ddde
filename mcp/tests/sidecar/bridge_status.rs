//! How the bridge maps every gateway answer (design.md#tools "Write handshake", §4.3): proposal states, refusals,
//! redirects, unsafe previewIds, cancel, proxies and a slow gateway.

use std::time::{Duration, Instant};

use fluxgit_fixtures::Scenario;
use fluxgit_mcp_sidecar::bridge::Bridge;
use fluxgit_mcp_sidecar::bridge::http::Timeouts;
use fluxgit_mcp_sidecar::protocol::Server;
use serde_json::{Value, json};

use crate::fake_gateway::{AGENT_ID, FakeGateway, Reply, Request, accepting, call, envelope, product_error, session};

const HANDSHAKE: &str = "FLUXGIT_MCP_HANDSHAKE_ADDR";

/// A case's outcome: `Ok(status)` for a result with isError false, `Err((code, marker))` for a product error.
type Expected = Result<&'static str, (i64, &'static str)>;

/// Answers `GET /v1/mcp/operation/status/s-{case}` as the case says.
fn status_gateway(request: &Request) -> Reply {
    let id = request.path.rsplit('/').next().unwrap_or_default().to_owned();
    let case = id.strip_prefix("s-").unwrap_or_default();
    let state = |status: &str, extra: Value| {
        let mut body = json!({"previewId": id, "operationType": "merge", "status": status});
        body.as_object_mut().expect("object").extend(extra.as_object().cloned().unwrap_or_default());
        Reply::json(200, body)
    };
    match case {
        "completed" => state("completed", json!({"result": {"newSha": "1".repeat(40), "restorePointId": "rp-1"}})),
        "pending" | "approved" | "executing" => state(case, json!({"expiresAt": "2026-01-01T00:05:00.000Z"})),
        "rejected" | "failed" | "expired" | "cancelled" => state(case, json!({"reason": "the person said no"})),
        "weird" => state("weird", json!({})),
        "other" => Reply::json(200, json!({"previewId": "other", "status": "pending"})),
        "html" => Reply { status: 200, body: "<html>".to_owned(), headers: Vec::new(), delay: Duration::ZERO },
        "redirect" => Reply {
            headers: vec![("location".to_owned(), "http://127.0.0.1:1/".to_owned())],
            ..Reply::json(302, json!({}))
        },
        code => match code.parse::<u16>() {
            Ok(status) => Reply::json(status, json!({"reason": format!("r{status}"), "message": format!("m{status}")})),
            Err(_) => Reply::json(404, json!({})),
        },
    }
}

#[test]
fn operation_status_maps_every_state_and_answer() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let gateway = FakeGateway::start(status_gateway);
    // The marker of an error is data.reason, or data.status for 10004.
    let cases: [(&str, Expected); 18] = [
        ("completed", Ok("completed")),
        ("pending", Ok("pending")),
        ("approved", Ok("approved")),
        ("executing", Ok("executing")),
        ("rejected", Err((10004, "rejected"))),
        ("failed", Err((10004, "failed"))),
        ("expired", Err((10004, "expired"))),
        ("cancelled", Err((10004, "cancelled"))),
        ("404", Err((10005, "r404"))),
        ("403", Err((10006, "r403"))),
        ("422", Err((10006, "r422"))),
        ("429", Err((10006, "r429"))),
        ("500", Err((10003, "http_status"))),
        ("weird", Err((10003, "malformed_reply"))),
        ("html", Err((10003, "malformed_reply"))),
        ("redirect", Err((10003, "redirect"))),
        ("other", Err((10007, "mismatched_preview_id"))),
        ("503", Err((10003, "http_status"))),
    ];
    let mut requests: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(index, (case, _))| call(index + 1, "operation_status", json!({"previewId": format!("s-{case}")})))
        .collect();
    requests.push(json!({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}));
    let responses = session(fixture.root(), &[(HANDSHAKE, &gateway.address())], &requests);
    let tools = responses.last().expect("tools/list")["result"]["tools"].as_array().expect("tools").clone();
    let output_schema = &tools.iter().find(|tool| tool["name"] == "operation_status").expect("listed")["outputSchema"];
    let validator = jsonschema::validator_for(output_schema).expect("compiles");
    for ((case, expected), response) in cases.iter().zip(&responses) {
        let (result, is_error) = envelope(response);
        assert!(validator.is_valid(&result), "{case}: {result}");
        assert_eq!((result["tool"].as_str(), result["readOnly"].as_bool()), (Some("operation_status"), Some(true)));
        match expected {
            Ok(status) => {
                assert!(!is_error, "{case}: {result}");
                let data = &result["data"];
                assert_eq!(
                    (data["previewId"].as_str(), data["status"].as_str()),
                    (Some(&*format!("s-{case}")), Some(*status))
                );
                assert_eq!(data["operationType"], "merge");
                if *status == "completed" {
                    assert_eq!(data["result"]["restorePointId"], "rp-1");
                    assert!(data.get("nextAction").is_none());
                } else {
                    assert!(data.get("result").is_none(), "no claim that Git changed: {data}");
                    assert_eq!(data["nextAction"]["data"]["previewId"], format!("s-{case}"));
                }
            }
            Err((code, marker)) => {
                let (actual, data) = product_error(response);
                assert_eq!(actual, *code, "{case}: {result}");
                let shown = if *code == 10004 { &data["status"] } else { &data["reason"] };
                assert_eq!(shown, marker, "{case}: {data}");
                assert!(data["nextStep"].is_string());
                if *code == 10004 {
                    assert_eq!(data["reason"], "the person said no", "the gateway's payload is passed on");
                }
                if *code == 10006 {
                    assert_eq!(data["message"], format!("m{case}"), "the gateway's reason is passed on");
                }
            }
        }
    }
}

/// Answers preview POSTs as the proposed branch `name` says.
fn preview_gateway(other: String) -> impl FnMut(&Request) -> Reply + Send + 'static {
    move |request| {
        if request.method == "GET" {
            let id = request.path.rsplit('/').next().unwrap_or_default();
            let status = if id.starts_with("done") { "completed" } else { "rejected" };
            return Reply::json(200, json!({"previewId": id, "operationType": "branch", "status": status}));
        }
        let name = request.json()["name"].as_str().unwrap_or_default().to_owned();
        let accepted = |id: &str, status: u16| Reply::json(status, json!({"previewId": id, "status": "pending"}));
        match name.as_str() {
            "refused-403" | "refused-422" | "refused-429" => {
                let status = name[8..].parse().expect("status");
                Reply::json(
                    status,
                    json!({"reason": "policy_denied", "message": "agent may not", "details": {"rule": 1}}),
                )
            }
            "redirect" => Reply {
                headers: vec![("location".to_owned(), format!("http://{other}/v1/mcp/operation/preview/branch"))],
                ..Reply::json(307, json!({}))
            },
            "dotdot" => accepted("../x", 202),
            "long" => accepted(&"a".repeat(129), 202),
            "missing-id" => Reply::json(202, json!({"status": "pending"})),
            "not-json" => Reply { status: 202, body: "ok".to_owned(), headers: Vec::new(), delay: Duration::ZERO },
            "server-error" => Reply::json(500, json!({})),
            "done-before" => accepted("done-1", 200),
            _ => accepted("rejected-1", 202),
        }
    }
}

#[test]
fn preview_answers_map_to_refusals_redirects_and_unsafe_ids() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let repo = fixture.path().to_str().expect("utf-8");
    let other = FakeGateway::start(accepting());
    let gateway = FakeGateway::start(preview_gateway(other.address()));
    let cases: [(&str, Expected); 11] = [
        ("refused-403", Err((10006, "policy_denied"))),
        ("refused-422", Err((10006, "policy_denied"))),
        ("refused-429", Err((10006, "policy_denied"))),
        ("redirect", Err((10003, "redirect"))),
        ("dotdot", Err((10007, "unsafe_preview_id"))),
        ("long", Err((10007, "unsafe_preview_id"))),
        ("missing-id", Err((10007, "unsafe_preview_id"))),
        ("not-json", Err((10003, "malformed_reply"))),
        ("server-error", Err((10003, "http_status"))),
        ("done-before", Ok("completed")),
        ("rejected-before", Ok("rejected")),
    ];
    let requests: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(index, (name, _))| {
            call(index + 1, "operation_preview_branch", json!({"repoPath": repo, "reason": "r", "name": name}))
        })
        .collect();
    let responses = session(fixture.root(), &[(HANDSHAKE, &gateway.address())], &requests);
    for ((name, expected), response) in cases.iter().zip(&responses) {
        match expected {
            Ok(status) => {
                let (result, is_error) = envelope(response);
                assert!(!is_error, "{name}: {result}");
                assert_eq!(
                    (result["data"]["accepted"].as_bool(), result["data"]["status"].as_str()),
                    (Some(true), Some(*status))
                );
            }
            Err((code, reason)) => {
                let (actual, data) = product_error(response);
                assert_eq!((actual, data["reason"].as_str()), (*code, Some(*reason)), "{name}: {data}");
                if *code == 10006 {
                    assert_eq!(
                        (data["message"].as_str(), data["details"]["rule"].as_i64()),
                        (Some("agent may not"), Some(1))
                    );
                    assert_eq!(data["httpStatus"].as_u64(), name[8..].parse().ok());
                }
            }
        }
    }
    let received = gateway.requests();
    let gets: Vec<&str> =
        received.iter().filter(|request| request.method == "GET").map(|request| request.path.as_str()).collect();
    assert_eq!(
        gets,
        ["/v1/mcp/operation/status/done-1", "/v1/mcp/operation/status/rejected-1"],
        "unsafe ids never followed"
    );
    assert!(other.requests().is_empty(), "the redirect was not followed");
}

#[test]
fn cancel_sends_the_agent_and_maps_refusals() {
    let gateway = FakeGateway::start(|request: &Request| {
        let id = request.path.rsplit('/').next().unwrap_or_default();
        let same_agent = request.json()["agentId"] == AGENT_ID;
        match id {
            "mine" if same_agent => Reply::json(200, json!({"previewId": "mine", "status": "cancelled"})),
            "theirs" | "mine" => {
                Reply::json(403, json!({"reason": "not_owner", "message": "another agent's proposal"}))
            }
            "approved-one" => Reply::json(409, json!({"reason": "not_pending", "message": "already approved"})),
            _ => Reply::json(404, json!({"reason": "unknown_preview"})),
        }
    });
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let requests = [
        call(1, "operation_cancel", json!({"previewId": "mine", "reason": "changed my mind"})),
        call(2, "operation_cancel", json!({"previewId": "theirs"})),
        call(3, "operation_cancel", json!({"previewId": "approved-one"})),
        call(4, "operation_cancel", json!({"previewId": "gone"})),
    ];
    let responses = session(fixture.root(), &[(HANDSHAKE, &gateway.address())], &requests);
    let (result, is_error) = envelope(&responses[0]);
    assert!(!is_error);
    assert_eq!(result["data"], json!({"previewId": "mine", "status": "cancelled"}));
    assert_eq!(result["readOnly"], false);
    assert_eq!(product_error(&responses[1]), (10006, product_error(&responses[1]).1));
    assert_eq!(product_error(&responses[1]).1["reason"], "not_owner");
    assert_eq!(product_error(&responses[2]).1["reason"], "not_pending");
    assert_eq!(product_error(&responses[3]).0, 10005);
    let received = gateway.requests();
    assert_eq!((received[0].method.as_str(), received[0].path.as_str()), ("POST", "/v1/mcp/operation/cancel/mine"));
    let mut body = received[0].json();
    assert!(body.as_object_mut().expect("object").remove("requestedAt").is_some());
    assert_eq!(body, json!({"previewId": "mine", "agentId": AGENT_ID, "reason": "changed my mind"}));
}

#[test]
fn proxy_variables_are_ignored() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let proxy = FakeGateway::start(accepting());
    let gateway = FakeGateway::start(accepting());
    let proxy_url = format!("http://{}", proxy.address());
    let mut env: Vec<(&str, &str)> =
        ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]
            .iter()
            .map(|name| (*name, proxy_url.as_str()))
            .collect();
    let address = gateway.address();
    env.push((HANDSHAKE, &address));
    let proposal = json!({"repoPath": fixture.path(), "reason": "r", "name": "x"});
    let responses = session(fixture.root(), &env, &[call(1, "operation_preview_branch", proposal)]);
    assert!(!envelope(&responses[0]).1, "{}", responses[0]);
    assert_eq!(gateway.requests().len(), 2);
    assert!(proxy.requests().is_empty(), "the proxy saw nothing: {:#?}", proxy.requests());
}

#[test]
fn a_slow_gateway_costs_bounded_time_and_is_never_an_approval_timeout() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let gateway =
        FakeGateway::start(|_: &Request| Reply { delay: Duration::from_secs(5), ..Reply::json(202, json!({})) });
    let engine =
        fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots: vec![fixture.root().to_path_buf()] });
    let timeouts = Timeouts { connect: Duration::from_millis(500), exchange: Duration::from_millis(400) };
    let bridge = Bridge::new(Some((HANDSHAKE, &gateway.address())), timeouts);
    let registry = fluxgit_mcp_sidecar::tools::registry().expect("registry");
    let server = Server::new(registry, engine).with_bridge(bridge);
    for (tool, arguments) in [
        ("operation_preview_branch", json!({"repoPath": fixture.path(), "reason": "r", "name": "x"})),
        ("operation_status", json!({"previewId": "p-1"})),
    ] {
        let started = Instant::now();
        let response = server.handle(call(1, tool, arguments).to_string().as_bytes()).expect("a response");
        let elapsed = started.elapsed();
        assert!(elapsed < Duration::from_secs(2), "{tool} took {elapsed:?}");
        let (code, data) = product_error(&response);
        assert_eq!((code, data["reason"].as_str()), (10003, Some("timeout")), "{data}");
        let message = envelope(&response).0["error"]["message"].as_str().unwrap_or_default().to_owned();
        assert!(message.contains("not an approval timeout"), "{message}");
    }
}

#[test]
fn a_reply_over_one_mebibyte_is_refused_and_one_at_the_limit_is_read() {
    let limit = usize::try_from(fluxgit_mcp_sidecar::bridge::http::MAX_REPLY_BYTES).expect("fits");
    let gateway = FakeGateway::start(move |request: &Request| {
        let id = request.path.rsplit('/').next().unwrap_or_default().to_owned();
        let reply = Reply::json(200, json!({"previewId": id, "operationType": "merge", "status": "pending"}));
        // Pad the JSON with spaces to the size the previewId asks for.
        let size = if id == "p-over" { limit + 1 } else { limit };
        let padding = " ".repeat(size.saturating_sub(reply.body.len()));
        Reply { body: format!("{}{padding}", reply.body), ..reply }
    });
    let engine = fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots: vec![] });
    let bridge = Bridge::new(Some((HANDSHAKE, &gateway.address())), Timeouts::DEFAULT);
    let server = Server::new(fluxgit_mcp_sidecar::tools::registry().expect("registry"), engine).with_bridge(bridge);
    let status = |preview_id: &str| {
        let request = call(1, "operation_status", json!({"previewId": preview_id}));
        server.handle(request.to_string().as_bytes()).expect("a response")
    };
    let at_limit = status("p-limit");
    assert_eq!(envelope(&at_limit).0["data"]["status"], "pending", "{at_limit}");
    let (code, data) = product_error(&status("p-over"));
    assert_eq!((code, data["reason"].as_str()), (10003, Some("malformed_reply")), "{data}");
}

/// A gateway whose proposals move on as a person would decide them: `w-rejected` is pending for three status
/// requests then rejected with the person's words, `w-completed` pending twice, executing once, then completed;
/// `w-pending` stays pending.
fn deciding_gateway() -> impl FnMut(&Request) -> Reply + Send + 'static {
    let mut asked: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    move |request| {
        let id = request.path.rsplit('/').next().unwrap_or_default().to_owned();
        let seen = asked.entry(id.clone()).or_default();
        *seen += 1;
        let (status, extra) = match (id.as_str(), *seen) {
            ("w-rejected", 1..=3) | ("w-completed", 1..=2) | ("w-pending", _) => ("pending", json!({})),
            ("w-rejected", _) => {
                ("rejected", json!({"reason": "rejected_by_person", "message": "not before the release, please"}))
            }
            ("w-completed", 3) => ("executing", json!({})),
            _ => ("completed", json!({"result": {"newSha": "2".repeat(40), "restorePointId": "rp-2"}})),
        };
        let mut body = json!({"previewId": id, "operationType": "merge", "status": status,
            "expiresAt": "2026-01-01T00:05:00.000Z"});
        body.as_object_mut().expect("object").extend(extra.as_object().cloned().unwrap_or_default());
        Reply::json(200, body)
    }
}

#[test]
fn operation_status_with_wait_ms_answers_the_decision_in_one_call() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let gateway = FakeGateway::start(deciding_gateway());
    let status = |id: usize, preview: &str, wait: u64| {
        call(id, "operation_status", json!({"previewId": preview, "waitMs": wait}))
    };
    let requests = [
        status(1, "w-rejected", 10_000),
        status(2, "w-completed", 10_000),
        status(3, "w-pending", 700),
        status(4, "w-pending", 0),
    ];
    let started = Instant::now();
    let responses = session(fixture.root(), &[(HANDSHAKE, &gateway.address())], &requests);
    let took = started.elapsed();

    // The rejection reaches the agent with the person's words, after four requests to the gateway.
    let (code, data) = product_error(&responses[0]);
    assert_eq!((code, &data["status"]), (10004, &json!("rejected")), "{data}");
    assert_eq!(data["message"], "not before the release, please");
    // The completed proposal's result, after waiting through executing.
    let (result, is_error) = envelope(&responses[1]);
    assert!(!is_error, "{result}");
    assert_eq!(result["data"]["status"], "completed");
    assert_eq!(result["data"]["result"]["restorePointId"], "rp-2");
    // Still pending when the wait ends, and at once without one.
    for response in &responses[2..] {
        let (result, is_error) = envelope(response);
        assert!(!is_error && result["data"]["status"] == "pending", "{result}");
    }
    let asked = |id: &str| gateway.requests().iter().filter(|request| request.path.ends_with(id)).count();
    assert_eq!((asked("w-rejected"), asked("w-completed")), (4, 4));
    // 700 ms of waiting at one request per 200 ms, plus the one request of the call without a wait.
    assert!((4..=7).contains(&asked("w-pending")), "{} requests for the pending proposal", asked("w-pending"));
    assert!(took >= Duration::from_millis(700), "the wait ended early: {took:?}");
    assert!(took < Duration::from_secs(20), "{took:?}");
}
