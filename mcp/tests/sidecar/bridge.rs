//! The write-proposal bridge through the real binary against a fake gateway: the exact body of every operation,
//! idempotency keys, and bad input or bad addresses that must send nothing (issue 8).

use fluxgit_fixtures::Scenario;
use serde_json::{Map, Value, json};

use crate::fake_gateway::{AGENT_ID, EXPIRES_AT, FakeGateway, accepting, call, envelope, product_error, session};

const HANDSHAKE: &str = "FLUXGIT_MCP_HANDSHAKE_ADDR";
const PATCH: &str = "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-a\n+b\n";

/// Each operation's arguments (besides `repoPath` and `reason`) and the fields the gateway must receive.
fn cases(repo: &str, subfolder: &str, second: &str) -> Vec<(&'static str, Value, Value)> {
    let oid = "a".repeat(40);
    vec![
        (
            "merge",
            json!({"sourceRef": "feature/x", "targetRef": "main"}),
            json!({"sourceRef": "feature/x", "targetRef": "main", "strategy": "merge"}),
        ),
        (
            "rebase",
            json!({"ontoRef": "origin/main"}),
            json!({"ontoRef": "origin/main", "currentRef": "HEAD", "interactive": false}),
        ),
        (
            "discard",
            json!({"paths": ["local/0.txt", "docs/café menu.md"]}),
            json!({"paths": ["local/0.txt", "docs/café menu.md"]}),
        ),
        ("reset", json!({"targetRef": "v1.0", "mode": "hard"}), json!({"targetRef": "v1.0", "mode": "hard"})),
        (
            "patch",
            json!({"patchContent": PATCH, "applyToIndex": true}),
            json!({"patchContent": PATCH, "applyToIndex": true}),
        ),
        (
            "plan",
            json!({"steps": [
                {"type": "merge", "sourceRef": "fix/y", "targetRef": "main"},
                {"type": "reset", "targetRef": "HEAD~1"},
                {"type": "patch", "patchContent": PATCH}]}),
            json!({"steps": [
                {"type": "merge", "sourceRef": "fix/y", "targetRef": "main", "strategy": "merge"},
                {"type": "reset", "targetRef": "HEAD~1", "mode": "mixed"},
                {"type": "patch", "patchContent": PATCH, "applyToIndex": false}]}),
        ),
        ("worktree", json!({"branch": "fix/y"}), json!({"branch": "fix/y", "path": format!("{repo}.worktrees/fix/y")})),
        (
            "commit",
            json!({"message": "feat: x", "paths": ["local/1.txt"]}),
            json!({"message": "feat: x", "paths": ["local/1.txt"], "stageAll": false}),
        ),
        (
            "push",
            json!({"branch": "feature/x", "forceWithLease": true}),
            json!({"remote": "origin", "branch": "feature/x", "setUpstream": false, "forceWithLease": true}),
        ),
        (
            "branch",
            json!({"name": "topic/new", "startPoint": "v1.0", "checkout": false}),
            json!({"name": "topic/new", "startPoint": "v1.0", "checkout": false}),
        ),
        (
            "branchDelete",
            json!({"targets": [
                {"repoPath": subfolder, "branches": ["fix/y", "chore/gone"]},
                {"repoPath": second, "branches": ["main"]}]}),
            json!({"targets": [
                {"repoPath": repo, "branches": ["fix/y", "chore/gone"]},
                {"repoPath": second, "branches": ["main"]}]}),
        ),
        (
            "submodulePointer",
            json!({"relativePath": "libs/drifted", "direction": "record", "message": "chore: bump",
                "expectedRecordedOid": oid}),
            json!({"relativePath": "libs/drifted", "direction": "record", "message": "chore: bump",
                "expectedRecordedOid": oid}),
        ),
    ]
}

fn with(base: &Value, extra: Value) -> Value {
    let mut merged = base.clone();
    merged.as_object_mut().expect("object").extend(extra.as_object().cloned().unwrap_or_default());
    merged
}

/// `2026-01-01T00:00:00.000Z`: RFC 3339, UTC, exactly milliseconds.
fn is_rfc3339_millis(text: &str) -> bool {
    text.len() == 24 && text.ends_with('Z') && text.as_bytes()[19] == b'.' && text.parse::<jiff::Timestamp>().is_ok()
}

#[test]
fn every_operation_sends_its_exact_body_and_returns_a_submitted_proposal() {
    let fixture = fluxgit_fixtures::build(Scenario::AheadBehind);
    let root = fixture.root().to_path_buf();
    let second = fluxgit_fixtures::build_in(Scenario::Clean, &root.join("second"));
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let subfolder = format!("{repo}/local");
    let second_path = second.path().to_str().expect("utf-8").to_owned();
    let gateway = FakeGateway::start(accepting());
    let cases = cases(&repo, &subfolder, &second_path);
    let mut requests: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(index, (operation, arguments, _))| {
            // The merge names a subfolder: the proposal goes out for the repository's root.
            let repo_path = if index == 0 { &subfolder } else { &repo };
            let common = json!({"repoPath": repo_path, "reason": format!("because {operation}")});
            call(index + 1, &format!("operation_preview_{operation}"), with(&common, arguments.clone()))
        })
        .collect();
    requests.push(json!({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}));
    let responses = session(&root, &[(HANDSHAKE, &gateway.address())], &requests);
    let tools = responses.last().expect("tools/list")["result"]["tools"].as_array().expect("tools").clone();
    let received = gateway.requests();
    assert_eq!(received.len(), 2 * cases.len(), "one POST and one status GET per proposal: {received:#?}");

    for (index, (operation, _, fields)) in cases.iter().enumerate() {
        let (post, get) = (&received[2 * index], &received[2 * index + 1]);
        assert_eq!(
            (post.method.as_str(), post.path.as_str()),
            ("POST", &*format!("/v1/mcp/operation/preview/{operation}"))
        );
        assert_eq!(post.header("content-type"), Some("application/json"));
        let mut body: Map<String, Value> = serde_json::from_value(post.json()).expect("object body");
        let preview_id = body.remove("previewId").and_then(|id| id.as_str().map(str::to_owned)).expect("previewId");
        assert!(uuid::Uuid::parse_str(&preview_id).is_ok(), "{preview_id}");
        let key = body.remove("idempotencyKey").expect("idempotencyKey");
        let call_key = key.as_str().and_then(|key| key.strip_prefix(&format!("{operation}:call:"))).expect("scoped");
        assert!(uuid::Uuid::parse_str(call_key).is_ok(), "{key}");
        let requested_at = body.remove("requestedAt").expect("requestedAt");
        assert!(is_rfc3339_millis(requested_at.as_str().unwrap_or_default()), "{requested_at}");
        let expected = with(
            &json!({"agentId": AGENT_ID, "operationType": operation, "repoPath": repo,
                "reason": format!("because {operation}")}),
            fields.clone(),
        );
        assert_eq!(Value::Object(body), expected, "{operation}");
        assert_eq!(
            (get.method.as_str(), get.path.as_str()),
            ("GET", &*format!("/v1/mcp/operation/status/{preview_id}"))
        );

        let (result, is_error) = envelope(&responses[index]);
        assert!(!is_error, "{result}");
        assert_eq!(result["tool"], format!("operation_preview_{operation}"));
        assert_eq!((result["readOnly"].clone(), result["source"].clone()), (json!(false), json!("fluxgit-gateway")));
        assert_eq!(result["repoPath"], repo.as_str());
        // Informational `otherAgents` (issue 18) rides along; the proposal's own fields are unchanged.
        let mut data = result["data"].clone();
        let others = data.as_object_mut().and_then(|data| data.remove("otherAgents")).expect("otherAgents");
        assert_eq!(others["informational"], true, "{others}");
        assert_eq!(
            data,
            json!({"accepted": true, "previewId": preview_id, "operationType": operation,
            "status": "pending", "expiresAt": EXPIRES_AT,
            "nextAction": {"tool": "operation_status", "data": {"previewId": preview_id}}})
        );
        let tool = tools.iter().find(|tool| tool["name"] == result["tool"]).expect("listed");
        let validator = jsonschema::validator_for(&tool["outputSchema"]).expect("output schema compiles");
        assert!(validator.is_valid(&result), "{operation} result fits its outputSchema");
    }
    assert_eq!(envelope(&responses[0]).0["resolvedFrom"], subfolder.as_str());
}

#[test]
fn idempotency_keys_are_scoped_by_operation_type() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let repo = fixture.path().to_str().expect("utf-8");
    let gateway = FakeGateway::start(accepting());
    let branch = |id, key: Option<&str>| {
        let mut arguments = json!({"repoPath": repo, "reason": "r", "name": format!("b{id}")});
        if let Some(key) = key {
            arguments["idempotencyKey"] = json!(key);
        }
        call(id, "operation_preview_branch", arguments)
    };
    let merge = call(
        4,
        "operation_preview_merge",
        json!({"repoPath": repo, "reason": "r", "sourceRef": "v1.0", "targetRef": "main", "idempotencyKey": "k-1"}),
    );
    let responses = session(
        fixture.root(),
        &[(HANDSHAKE, &gateway.address())],
        &[branch(1, Some("k-1")), branch(2, None), branch(3, None), merge],
    );
    assert!(responses.iter().all(|response| !envelope(response).1));
    let keys: Vec<String> = gateway
        .requests()
        .iter()
        .filter(|request| request.method == "POST")
        .map(|request| request.json()["idempotencyKey"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(keys[0], "branch:client:k-1");
    assert!(keys[1].starts_with("branch:call:") && keys[2].starts_with("branch:call:"));
    assert_ne!(keys[1], keys[2], "a fresh key per call without one");
    assert_eq!(keys[3], "merge:client:k-1", "the same client key, scoped by another operation type");
}

#[test]
fn bad_input_is_refused_before_anything_is_sent() {
    let fixture = fluxgit_fixtures::build(Scenario::AheadBehind);
    let root = fixture.root().to_path_buf();
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let outside = tempfile::tempdir().expect("tempdir");
    let outside_repo = fluxgit_fixtures::build_in(Scenario::Clean, &outside.path().join("fx"));
    let gateway = FakeGateway::start(accepting());
    let base = json!({"repoPath": repo, "reason": "r"});
    let target = |n: usize| json!({"repoPath": repo, "branches": (0..n).map(|i| format!("b{i}")).collect::<Vec<_>>()});
    // (tool, arguments, expected data.reason; None for an input-schema violation)
    let cases: Vec<(&str, Value, Option<&str>)> = vec![
        ("operation_preview_branch", json!({"repoPath": repo, "name": "x"}), None),
        ("operation_preview_rebase", with(&base, json!({"ontoRef": "main", "interactive": true})), None),
        (
            "operation_preview_merge",
            with(&base, json!({"sourceRef": "--force", "targetRef": "main"})),
            Some("invalid_revision"),
        ),
        ("operation_preview_reset", with(&base, json!({"targetRef": "--hard"})), Some("invalid_revision")),
        ("operation_preview_branch", with(&base, json!({"name": "--force"})), Some("invalid_revision")),
        ("operation_preview_push", with(&base, json!({"remote": "--force"})), Some("invalid_revision")),
        (
            "operation_preview_merge",
            with(&base, json!({"sourceRef": "no-such-branch", "targetRef": "main"})),
            Some("unknown_revision"),
        ),
        ("operation_preview_discard", with(&base, json!({"paths": ["ok.txt", "../x"]})), Some("invalid_path")),
        ("operation_preview_discard", with(&base, json!({"paths": ["/etc/passwd"]})), Some("invalid_path")),
        (
            "operation_preview_commit",
            with(&base, json!({"message": "m", "paths": ["a/../../x"]})),
            Some("invalid_path"),
        ),
        (
            "operation_preview_submodulePointer",
            with(&base, json!({"relativePath": "../x", "direction": "return"})),
            Some("invalid_path"),
        ),
        ("operation_preview_patch", with(&base, json!({"patchContent": "x".repeat(5 << 20)})), None),
        ("operation_preview_patch", with(&base, json!({"patchContent": "é".repeat(2_200_000)})), Some("too_large")),
        ("operation_preview_branchDelete", with(&base, json!({"targets": vec![target(1); 21]})), None),
        (
            "operation_preview_branchDelete",
            with(&base, json!({"targets": vec![target(20); 6]})),
            Some("too_many_branches"),
        ),
        (
            "operation_preview_branchDelete",
            with(&base, json!({"targets": [{"repoPath": repo, "branches": ["refs/remotes/origin/main"]}]})),
            Some("remote_branch"),
        ),
        (
            "operation_preview_branchDelete",
            with(&base, json!({"targets": [{"repoPath": outside_repo.path(), "branches": ["main"]}]})),
            Some("outside_allowed_roots"),
        ),
        ("operation_preview_plan", with(&base, json!({"steps": [{"type": "push"}]})), None),
        (
            "operation_preview_plan",
            with(&base, json!({"steps": [{"type": "reset", "targetRef": "-x"}]})),
            Some("invalid_revision"),
        ),
        (
            "operation_preview_worktree",
            with(&base, json!({"branch": "w", "path": outside.path().join("wt")})),
            Some("outside_allowed_roots"),
        ),
        (
            "operation_preview_worktree",
            with(&base, json!({"branch": "w", "path": format!("{repo}/../x")})),
            Some("invalid_path"),
        ),
        ("operation_preview_commit", with(&base, json!({"message": "m", "amend": true})), None),
        (
            "operation_preview_submodulePointer",
            with(&base, json!({"relativePath": "s", "direction": "record", "expectedRecordedOid": "abc"})),
            None,
        ),
        ("operation_preview_branch", with(&base, json!({"name": "x", "idempotencyKey": "a:b"})), None),
        // Names git would refuse (`git check-ref-format --branch`) are refused here, before the gateway sees them.
        ("operation_preview_branch", with(&base, json!({"name": "../evil"})), Some("invalid_ref_name")),
        ("operation_preview_branch", with(&base, json!({"name": "topic.lock"})), Some("invalid_ref_name")),
        ("operation_preview_push", with(&base, json!({"branch": "a b"})), Some("invalid_ref_name")),
        (
            "operation_preview_branch",
            json!({"repoPath": outside_repo.path(), "reason": "r", "name": "x"}),
            Some("outside_allowed_roots"),
        ),
        ("operation_status", json!({"previewId": "../x"}), None),
        ("operation_cancel", json!({"previewId": "x".repeat(129)}), None),
    ];
    let requests: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(index, (tool, arguments, _))| call(index + 1, tool, arguments.clone()))
        .collect();
    let responses = session(&root, &[(HANDSHAKE, &gateway.address())], &requests);
    for ((tool, arguments, reason), response) in cases.iter().zip(&responses) {
        let shown: String = arguments.to_string().chars().take(160).collect();
        assert_eq!(response["error"]["code"], -32602, "{tool} {shown}: {response}");
        let data = &response["error"]["data"];
        match reason {
            Some(reason) => assert_eq!(data["reason"], *reason, "{tool} {shown}: {response}"),
            None => assert!(
                data["errors"].as_array().is_some_and(|errors| !errors.is_empty()),
                "{tool} {shown}: {response}"
            ),
        }
        assert!(response.to_string().len() < 4096, "a refusal never echoes a large argument");
    }
    assert!(gateway.requests().is_empty(), "nothing was sent: {:#?}", gateway.requests());
}

#[test]
fn bad_addresses_answer_10003_and_send_nothing() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let repo = fixture.path().to_str().expect("utf-8");
    let gateway = FakeGateway::start(accepting());
    let port = gateway.port();
    let proposal = call(1, "operation_preview_branch", json!({"repoPath": repo, "reason": "r", "name": "x"}));
    let addresses = [
        "example.com:80".to_owned(),
        format!("https://127.0.0.1:{port}"),
        format!("http://user:pw@127.0.0.1:{port}"),
        "127.0.0.1".to_owned(),
        format!("http://127.0.0.1:{port}/path"),
        format!("http://127.0.0.1:{port}/?x=1"),
        format!("0.0.0.0:{port}"),
        String::new(),
    ];
    for address in &addresses {
        let responses = session(fixture.root(), &[(HANDSHAKE, address)], std::slice::from_ref(&proposal));
        let (code, data) = product_error(&responses[0]);
        assert_eq!((code, data["reason"].as_str()), (10003, Some("invalid_address")), "{address}: {data}");
        assert_eq!(data["variable"], HANDSHAKE);
        assert!(!responses[0].to_string().contains("pw"), "credentials are never echoed: {}", responses[0]);
    }
    // The first variable that is set wins, even when invalid: no fall-through to a valid later one.
    let valid = gateway.address();
    let responses = session(
        fixture.root(),
        &[(HANDSHAKE, "example.com:80"), ("FLUXGIT_GATEWAY_ADDR", &valid), ("FLUXGIT_GATEWAY_URL", &valid)],
        std::slice::from_ref(&proposal),
    );
    assert_eq!(product_error(&responses[0]).0, 10003);
    // Unset -> 10003 not_configured.
    let responses = session(fixture.root(), &[], std::slice::from_ref(&proposal));
    assert_eq!(product_error(&responses[0]).1["reason"], "not_configured");
    assert!(gateway.requests().is_empty(), "nothing was sent: {:#?}", gateway.requests());

    // The later variables are used, in order, when the earlier ones are unset; http://HOST:PORT/ and localhost too.
    let url = format!("http://localhost:{port}/");
    let responses = session(fixture.root(), &[("FLUXGIT_GATEWAY_URL", &url)], std::slice::from_ref(&proposal));
    assert!(!envelope(&responses[0]).1, "{}", responses[0]);
    let responses =
        session(fixture.root(), &[("FLUXGIT_GATEWAY_ADDR", &valid), ("FLUXGIT_GATEWAY_URL", "x")], &[proposal]);
    assert!(!envelope(&responses[0]).1, "{}", responses[0]);
    assert_eq!(gateway.requests().len(), 4, "two proposals, each a POST and a GET");
}

#[test]
fn only_the_write_handshake_tools_advertise_proposal_fields() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    // The proposals are listed only with a gateway configured (nothing needs to listen for a listing).
    let gateway = [(HANDSHAKE, "127.0.0.1:9")];
    let responses = session(fixture.root(), &gateway, &[json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})]);
    let tools = responses[0]["result"]["tools"].as_array().expect("tools").clone();
    let names: Vec<&str> = tools.iter().filter_map(|tool| tool["name"].as_str()).collect();
    let previews: Vec<String> =
        fluxgit_audit::OPERATIONS.iter().map(|operation| format!("operation_preview_{operation}")).collect();
    for name in previews.iter().map(String::as_str).chain(["operation_cancel", "operation_status"]) {
        assert!(names.contains(&name), "{name} is listed: {names:?}");
    }
    for tool in &tools {
        let name = tool["name"].as_str().unwrap_or_default();
        let output = tool["outputSchema"]["properties"]["data"]["properties"].clone();
        let advertised: Vec<&str> = ["previewId", "status", "accepted", "nextAction"]
            .into_iter()
            .filter(|field| output.get(*field).is_some())
            .collect();
        let annotations = &tool["annotations"];
        if name.starts_with("operation_preview_") {
            assert_eq!(advertised, ["previewId", "status", "accepted", "nextAction"], "{name}");
            assert_eq!(tool["inputSchema"]["required"][1], "reason", "{name}");
        } else if name.starts_with("operation_") {
            assert!(advertised.contains(&"previewId") && advertised.contains(&"status"), "{name}");
        } else {
            assert!(advertised.is_empty(), "{name} advertises {advertised:?}");
        }
        let write = name.starts_with("operation_preview_") || name == "operation_cancel";
        assert_eq!(annotations["readOnlyHint"], !write, "{name}");
        if write {
            assert_eq!(annotations["idempotentHint"], false, "{name}");
        }
    }
}

#[test]
fn worktree_remove_is_checked_by_the_sidecar_before_anything_is_sent() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let root = fixture.root().to_path_buf();
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let add = |name: &str| {
        let path = root.join(name);
        fixture.git(&["worktree", "add", "-q", "-b", name, path.to_str().expect("utf-8"), "HEAD"]);
        path
    };
    let clean = add("wt-clean");
    std::fs::write(add("wt-untracked").join("new.txt"), "x\n").expect("write");
    let staged = add("wt-staged");
    std::fs::write(staged.join("staged.txt"), "x\n").expect("write");
    fixture.git_in(&staged, &["add", "staged.txt"]);
    let locked = add("wt-locked");
    fixture.git(&["worktree", "lock", locked.to_str().expect("utf-8")]);
    let gone = add("wt-gone");
    std::fs::remove_dir_all(&gone).expect("remove the checkout");
    let outside = tempfile::tempdir().expect("tempdir");
    let away = std::fs::canonicalize(outside.path()).expect("canonical").join("wt-away");
    fixture.git(&["worktree", "add", "-q", "-b", "away", away.to_str().expect("utf-8"), "HEAD"]);
    std::fs::write(away.join("new.txt"), "x\n").expect("write");

    let gateway = FakeGateway::start(accepting());
    let base = json!({"repoPath": repo, "reason": "done with it"});
    let cases: Vec<(Value, Option<&str>)> = vec![
        (json!("../wt-clean"), None),
        (json!("."), Some("main_worktree")),
        (json!(repo), Some("main_worktree")),
        (json!("../nowhere"), Some("not_a_worktree")),
        (json!("../wt-untracked"), Some("uncommitted_changes")),
        (json!("../wt-staged"), Some("uncommitted_changes")),
        (json!("../wt-locked"), Some("worktree_locked")),
        (json!("../wt-gone"), Some("worktree_missing")),
        (json!(away), Some("outside_allowed_roots")),
        (json!("../wt-clean\n"), Some("invalid_path")),
    ];
    let requests: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(index, (path, _))| {
            call(index + 1, "operation_preview_worktreeRemove", with(&base, json!({"path": path})))
        })
        .collect();
    let responses = session(&root, &[(HANDSHAKE, &gateway.address())], &requests);
    for ((path, reason), response) in cases.iter().zip(&responses) {
        match reason {
            None => assert!(!envelope(response).1, "{path}: {response}"),
            Some(reason) => {
                assert_eq!(response["error"]["code"], -32602, "{path}: {response}");
                assert_eq!(response["error"]["data"]["reason"], *reason, "{path}: {response}");
            }
        }
    }
    let received = gateway.requests();
    assert_eq!(received.len(), 2, "only the clean worktree is proposed: {received:#?}");
    assert_eq!(received[0].path, "/v1/mcp/operation/preview/worktreeRemove");
    let clean = std::fs::canonicalize(&clean).expect("canonical");
    assert_eq!(received[0].json()["path"], clean.to_str().expect("utf-8"), "sent resolved, as git registers it");
}
