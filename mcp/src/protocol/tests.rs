//! Dispatcher tests with test-only tools (the real tools are tested by their own modules and end to end).

use serde_json::{Map, Value, json};

use crate::protocol::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, Server,
    UNSUPPORTED_PROTOCOL_VERSION, Version,
};
use crate::tools::{
    ArgumentsError, CallContext, ProtocolError, Registry, RegistryError, Tool, ToolDefinition, ToolOutput,
};
use crate::transport::Frame;

/// Echoes its arguments; `mode` selects a product error, a protocol error or a panic.
struct Echo {
    definition: ToolDefinition,
}

impl Echo {
    fn new() -> Self {
        Self {
            definition: ToolDefinition {
                name: "test.echo",
                title: "Echo",
                description: "Echoes its arguments.",
                input_schema: json!({
                    "type": "object",
                    "properties": {
                        "count": {"type": "integer", "minimum": 1, "maximum": 20},
                        "label": {"type": "string", "maxLength": 8},
                        "mode": {"enum": ["ok", "product-error", "protocol-error", "panic", "no-structured"]},
                    },
                    "additionalProperties": false,
                }),
                output_schema: json!({"type": "object"}),
                read_only: true,
            },
        }
    }
}

impl Tool for Echo {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
        let envelope = json!({"tool": "test.echo", "client": ctx.client_name, "arguments": arguments});
        let output = |structured: Value, is_error| ToolOutput {
            text: envelope.to_string(),
            structured: (!structured.is_null()).then(|| serde_json::value::to_raw_value(&structured).expect("JSON")),
            is_error,
            error_code: None,
            repo_path: None,
        };
        match arguments.get("mode").and_then(Value::as_str).unwrap_or("ok") {
            "product-error" => Ok(output(envelope.clone(), true)),
            "protocol-error" => Err(ProtocolError::invalid_params(
                "repoPath is outside the allowed roots",
                Some(json!({"reason": "outside_allowed_roots"})),
            )),
            "panic" => panic!("test tool panics on purpose"),
            "no-structured" => Ok(output(Value::Null, false)),
            _ => Ok(output(envelope.clone(), false)),
        }
    }
}

/// A write-proposal-like tool, listed second.
struct Propose {
    definition: ToolDefinition,
}

impl Tool for Propose {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, _: &CallContext<'_>, _: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
        let structured = serde_json::value::RawValue::from_string("{}".to_owned()).expect("JSON");
        Ok(ToolOutput {
            text: "{}".to_owned(),
            structured: Some(structured),
            is_error: false,
            error_code: None,
            repo_path: None,
        })
    }
}

fn propose() -> Propose {
    Propose {
        definition: ToolDefinition {
            name: "test.propose",
            title: "Propose",
            description: "Proposes nothing.",
            input_schema: json!({"type": "object"}),
            output_schema: json!({"type": "object"}),
            read_only: false,
        },
    }
}

fn server() -> Server {
    let mut registry = Registry::new();
    registry.register(Box::new(Echo::new())).expect("valid tool");
    registry.register(Box::new(propose())).expect("valid tool");
    Server::new(registry, fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots: vec![] }))
}

fn send(server: &mut Server, message: Value) -> Value {
    server.handle(message.to_string().as_bytes()).expect("requests are answered")
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn modern_meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "modern client!", "version": "1"},
    })
}

fn initialize(server: &mut Server, version: &str) -> Value {
    let params =
        json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "tester", "version": "1"}});
    send(server, request(0, "initialize", params))
}

fn error_code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or_else(|| panic!("expected an error, got {response}"))
}

fn call(server: &mut Server, arguments: Value) -> Value {
    send(server, request(1, "tools/call", json!({"name": "test.echo", "arguments": arguments})))
}

#[test]
fn envelope_errors() {
    let mut server = server();
    let parse = server.handle(b"{not json").expect("answered");
    assert_eq!((error_code(&parse), &parse["id"]), (i64::from(PARSE_ERROR), &Value::Null));
    for (message, id) in [
        (json!([request(1, "ping", json!({}))]), Value::Null),
        (json!("ping"), Value::Null),
        (json!({"jsonrpc": "1.0", "id": 7, "method": "ping"}), json!(7)),
        (json!({"id": 7, "method": "ping"}), json!(7)),
        (json!({"jsonrpc": "2.0", "id": true, "method": "ping"}), Value::Null),
        (json!({"jsonrpc": "2.0", "id": null, "method": "ping"}), Value::Null),
        (json!({"jsonrpc": "2.0", "id": "a", "method": 5}), json!("a")),
        (json!({"jsonrpc": "2.0", "id": "a", "method": "ping", "params": "x"}), json!("a")),
        (json!({"jsonrpc": "2.0", "method": 5}), Value::Null),
    ] {
        let response = send(&mut server, message.clone());
        assert_eq!(error_code(&response), i64::from(INVALID_REQUEST), "{message}");
        assert_eq!(response["id"], id, "{message}");
    }
    let batch = send(&mut server, json!([]));
    assert!(batch["error"]["message"].as_str().is_some_and(|text| text.contains("Batch")));
    // The server still serves after all of that.
    assert_eq!(send(&mut server, request(9, "ping", json!({})))["result"], json!({}));
}

#[test]
fn notifications_and_client_responses_get_no_reply() {
    let server = server();
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(server.handle(notification.to_string().as_bytes()), None);
    let response = json!({"jsonrpc": "2.0", "id": 3, "result": {}});
    assert_eq!(server.handle(response.to_string().as_bytes()), None);
    // A request method without an id is not executed: initialize would have set the session.
    let unexecuted = json!({"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": "2024-11-05"}});
    assert_eq!(server.handle(unexecuted.to_string().as_bytes()), None);
    assert_eq!(server.negotiated_version(), None);
}

#[test]
fn unknown_method_and_array_params() {
    let mut server = server();
    let response = send(&mut server, request(1, "resources/list", json!({})));
    assert_eq!(error_code(&response), i64::from(METHOD_NOT_FOUND));
    let response = send(&mut server, json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": []}));
    assert_eq!(error_code(&response), i64::from(INVALID_PARAMS));
}

#[test]
fn initialize_negotiates_and_records_the_client() {
    for (requested, negotiated) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let mut server = server();
        let result = &initialize(&mut server, requested)["result"];
        assert_eq!(result["protocolVersion"], negotiated);
        assert_eq!(result["capabilities"], json!({"tools": {"listChanged": false}}));
        assert_eq!(result["serverInfo"]["name"], "fluxgit-mcp-sidecar");
        assert!(result.get("resultType").is_none());
        assert_eq!(server.client_name(), "tester");
    }
    let mut server = server();
    let response = send(&mut server, request(1, "initialize", json!({})));
    assert_eq!(error_code(&response), i64::from(INVALID_PARAMS));
}

#[test]
fn tools_list_fields_by_version() {
    for version in Version::ALL.into_iter().filter(|version| version.is_legacy()) {
        let mut server = server();
        initialize(&mut server, version.as_str());
        let result = send(&mut server, request(1, "tools/list", json!({"cursor": "ignored"})))["result"].clone();
        assert_eq!(result.as_object().map(Map::len), Some(1), "legacy lists carry only tools: {result}");
        let tools = result["tools"].as_array().expect("tools array");
        let names: Vec<&str> = tools.iter().filter_map(|tool| tool["name"].as_str()).collect();
        assert_eq!(names, ["test_echo", "test_propose"], "listed with `.` written `_`");
        let echo = &tools[0];
        let mut advertised = Echo::new().definition.input_schema;
        advertised["properties"]["label"] = json!({"type": "string"});
        assert_eq!(echo["inputSchema"], advertised, "the schema without its string bounds");
        assert_eq!(echo.get("title").is_some(), version >= Version::V2025_06_18, "{version}");
        assert_eq!(echo.get("outputSchema").is_some(), version >= Version::V2025_06_18, "{version}");
        assert_eq!(echo.get("annotations").is_some(), version >= Version::V2025_03_26, "{version}");
        if version >= Version::V2025_03_26 {
            let mut annotations = json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true,
                "openWorldHint": false});
            if version < Version::V2025_06_18 {
                annotations["title"] = json!("Echo");
            }
            assert_eq!(echo["annotations"], annotations, "a title of their own only before the tool's");
            assert_eq!(tools[1]["annotations"]["readOnlyHint"], false);
            assert_eq!(tools[1]["annotations"]["idempotentHint"], false);
        }
    }
}

#[test]
fn legacy_requests_before_initialize_use_the_newest_legacy_version() {
    let mut server = server();
    let result = send(&mut server, request(1, "tools/list", json!({})))["result"].clone();
    assert!(result["tools"][0].get("outputSchema").is_some());
    assert!(result.get("ttlMs").is_none());
    let result = call(&mut server, json!({}))["result"].clone();
    assert_eq!(result["structuredContent"]["client"], "external-mcp-sidecar");
}

#[test]
fn modern_requests_are_stateless_and_decorated() {
    let mut server = server();
    let list =
        send(&mut server, request(1, "tools/list", json!({"_meta": modern_meta("2026-07-28")})))["result"].clone();
    assert_eq!(list["resultType"], "complete");
    assert_eq!(list["ttlMs"], 300_000);
    assert_eq!(list["cacheScope"], "public");
    assert_eq!(list["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "fluxgit-mcp-sidecar");
    assert!(list["tools"][0].get("outputSchema").is_some());
    let params = json!({"name": "test.echo", "arguments": {}, "_meta": modern_meta("2026-07-28")});
    let result = send(&mut server, request(2, "tools/call", params))["result"].clone();
    assert_eq!(result["resultType"], "complete");
    assert!(result.get("ttlMs").is_none());
    assert_eq!(result["structuredContent"]["client"], "modernclient");
    assert_eq!(server.negotiated_version(), None, "modern requests leave the session alone");
    // A modern request at a legacy version is served at that version, without the modern fields.
    let list =
        send(&mut server, request(3, "tools/list", json!({"_meta": modern_meta("2024-11-05")})))["result"].clone();
    assert!(list.get("resultType").is_none() && list.get("ttlMs").is_none());
    assert!(list["tools"][0].get("annotations").is_none());
    // ping does not exist in 2026-07-28.
    let ping = send(&mut server, request(4, "ping", json!({"_meta": modern_meta("2026-07-28")})));
    assert_eq!(error_code(&ping), i64::from(METHOD_NOT_FOUND));
}

#[test]
fn modern_meta_errors() {
    let mut server = server();
    let only_version = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    let response = send(&mut server, request(1, "tools/list", only_version));
    assert_eq!(error_code(&response), i64::from(INVALID_PARAMS));
    assert_eq!(response["error"]["data"]["missing"], json!(["io.modelcontextprotocol/clientCapabilities"]));
    let bad_version = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": 5}});
    let response = send(&mut server, request(2, "tools/list", bad_version));
    assert_eq!(
        response["error"]["data"]["missing"],
        json!(["io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities"])
    );
    let response = send(&mut server, request(3, "tools/list", json!({"_meta": modern_meta("2030-01-01")})));
    assert_eq!(error_code(&response), i64::from(UNSUPPORTED_PROTOCOL_VERSION));
    assert_eq!(response["error"]["data"]["requested"], "2030-01-01");
    let supported: Vec<&str> = Version::ALL.iter().map(|version| version.as_str()).collect();
    assert_eq!(response["error"]["data"]["supported"], json!(supported));
}

#[test]
fn discover_answers_with_and_without_meta() {
    let mut server = server();
    for params in [json!({"_meta": modern_meta("2026-07-28")}), json!({})] {
        let result = send(&mut server, request(1, "server/discover", params))["result"].clone();
        let keys: Vec<&str> = result.as_object().expect("object").keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["resultType", "supportedVersions", "capabilities", "instructions", "ttlMs", "cacheScope", "_meta"]
        );
        assert_eq!(
            result["supportedVersions"],
            json!(["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"])
        );
    }
    let response = send(&mut server, request(2, "server/discover", json!({"_meta": modern_meta("2099-01-01")})));
    assert_eq!(error_code(&response), i64::from(UNSUPPORTED_PROTOCOL_VERSION));
}

#[test]
fn call_validates_against_the_schema() {
    let mut server = server();
    let response = call(&mut server, json!({"count": 21, "label": "far too long a label", "extra": 1}));
    assert_eq!(error_code(&response), i64::from(INVALID_PARAMS));
    let errors = response["error"]["data"]["errors"].as_array().expect("errors");
    let paths: Vec<&str> = errors.iter().filter_map(|error| error["instancePath"].as_str()).collect();
    assert!(paths.contains(&"/count") && paths.contains(&"/label") && paths.contains(&""), "{errors:?}");
    assert!(errors.iter().any(|error| error["message"].as_str().is_some_and(|text| text.contains("21"))));
    let response = call(&mut server, json!({"count": 0}));
    assert_eq!(error_code(&response), i64::from(INVALID_PARAMS));
    let response = call(&mut server, json!({"count": 20, "label": "ok"}));
    assert_eq!(response["result"]["isError"], false);
    // Absent and null arguments are {}.
    for params in [json!({"name": "test.echo"}), json!({"name": "test.echo", "arguments": null})] {
        assert_eq!(send(&mut server, request(2, "tools/call", params))["result"]["isError"], false);
    }
    for params in [json!({"name": "test.echo", "arguments": [1]}), json!({"name": 5}), json!({})] {
        assert_eq!(error_code(&send(&mut server, request(3, "tools/call", params))), i64::from(INVALID_PARAMS));
    }
    let response = send(&mut server, request(4, "tools/call", json!({"name": "nope", "arguments": {}})));
    assert_eq!(response["error"]["message"], "Unknown tool: nope");
    assert_eq!(error_code(&response), i64::from(INVALID_PARAMS));
}

#[test]
fn long_values_are_masked_in_violations() {
    let mut server = server();
    let long = "x".repeat(10_000);
    let response = call(&mut server, json!({"label": long}));
    let message = response["error"]["data"]["errors"][0]["message"].as_str().expect("message");
    assert!(message.len() < 200 && !message.contains("xxxx"), "{message}");
}

#[test]
fn tool_results_and_errors_map_to_the_protocol() {
    let mut server = server();
    let ok = call(&mut server, json!({"mode": "ok"}))["result"].clone();
    let keys: Vec<&str> = ok.as_object().expect("object").keys().map(String::as_str).collect();
    assert_eq!(keys, ["content", "structuredContent", "isError"]);
    assert_eq!(ok["content"][0]["type"], "text");
    let text: Value = serde_json::from_str(ok["content"][0]["text"].as_str().expect("text")).expect("JSON text");
    assert_eq!(text, ok["structuredContent"]);
    let product = call(&mut server, json!({"mode": "product-error"}))["result"].clone();
    assert_eq!(product["isError"], true);
    let protocol = call(&mut server, json!({"mode": "protocol-error"}));
    assert_eq!(error_code(&protocol), i64::from(INVALID_PARAMS));
    assert_eq!(protocol["error"]["data"], json!({"reason": "outside_allowed_roots"}));
    let no_structured = call(&mut server, json!({"mode": "no-structured"}))["result"].clone();
    assert!(no_structured.get("structuredContent").is_none());
    let panicked = call(&mut server, json!({"mode": "panic"}));
    assert_eq!(error_code(&panicked), i64::from(INTERNAL_ERROR));
    assert_eq!(send(&mut server, request(5, "ping", json!({})))["result"], json!({}), "still serving");
}

#[test]
fn structured_content_is_stripped_before_2025_06_18() {
    for version in Version::ALL {
        let mut server = server();
        let result = if version.is_legacy() {
            initialize(&mut server, version.as_str());
            call(&mut server, json!({}))["result"].clone()
        } else {
            let params = json!({"name": "test.echo", "arguments": {}, "_meta": modern_meta(version.as_str())});
            send(&mut server, request(1, "tools/call", params))["result"].clone()
        };
        assert_eq!(result.get("structuredContent").is_some(), version >= Version::V2025_06_18, "{version}");
        assert_eq!(result.get("resultType").is_some(), version.is_modern(), "{version}");
    }
}

#[test]
fn frames_too_large_or_malformed_get_errors_with_null_id() {
    let server = server();
    let too_large = server.handle_frame(Frame::TooLarge { size: 9 << 20 }).expect("answered");
    assert_eq!((error_code(&too_large), &too_large["id"]), (i64::from(INVALID_REQUEST), &Value::Null));
    assert!(too_large["error"]["message"].as_str().is_some_and(|text| text.contains("8388608")));
    let malformed = server.handle_frame(Frame::Malformed { reason: "bad".to_owned() }).expect("answered");
    assert_eq!(error_code(&malformed), i64::from(PARSE_ERROR));
}

#[test]
fn registry_rejects_bad_definitions() {
    let mut registry = Registry::new();
    registry.register(Box::new(Echo::new())).expect("valid");
    assert!(matches!(registry.register(Box::new(Echo::new())), Err(RegistryError::Duplicate { .. })));
    let mut bad = propose();
    bad.definition.name = "test.bad";
    bad.definition.input_schema = json!({"type": "string"});
    assert!(matches!(registry.register(Box::new(bad)), Err(RegistryError::InvalidSchema { .. })));
    let mut bad = propose();
    bad.definition.name = "test.bad2";
    assert_eq!(registry.len(), 1);
    registry.compile_all().expect("the echo schema compiles");
    // A schema that does not compile registers (schemas compile on a tool's first call), is found by compile_all and
    // refuses every call with one violation.
    let mut bad = propose();
    bad.definition.name = "test.bad2";
    bad.definition.input_schema = json!({"type": "object", "properties": {"a": {"type": 12}}});
    registry.register(Box::new(bad)).expect("a schema of type object registers");
    assert!(matches!(registry.compile_all(), Err(RegistryError::InvalidSchema { which: "inputSchema", .. })));
    match registry.validate("test.bad2", &json!({})) {
        Err(ArgumentsError::Invalid { violations, omitted: 0 }) => {
            assert_eq!(violations.len(), 1);
            assert!(violations[0].message.contains("does not compile"), "{violations:?}");
        }
        other => panic!("a call to a tool whose schema does not compile: {other:?}"),
    }
}

#[test]
fn the_shipped_registry_builds() {
    let registry = crate::tools::registry().expect("every shipped tool definition is valid");
    registry.compile_all().expect("every shipped input schema compiles");
}

/// What an observer saw of one call.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    name: Option<String>,
    registered: bool,
    client: (String, Option<String>),
    succeeded: bool,
    error_code: Option<i32>,
}

/// Records every call into a shared list; panics on the call whose arguments say `"mode": "panic-observer"`.
struct Recorder(std::sync::Arc<std::sync::Mutex<Vec<Seen>>>);

impl crate::protocol::CallObserver for Recorder {
    fn observe(&mut self, call: &crate::protocol::CallRecord<'_>) {
        self.0.lock().expect("lock").push(Seen {
            name: call.name.map(str::to_owned),
            registered: call.definition.is_some(),
            client: (call.client_name.to_owned(), call.client_version.map(str::to_owned)),
            succeeded: call.succeeded(),
            error_code: call.outcome.err().map(|error| error.code),
        });
    }
}

struct Panicker;

impl crate::protocol::CallObserver for Panicker {
    fn observe(&mut self, _: &crate::protocol::CallRecord<'_>) {
        panic!("observer panics on purpose");
    }
}

#[test]
fn observers_see_every_call_and_cannot_change_its_response() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut plain = server();
    let mut observed = server();
    observed.observe_calls(Box::new(Panicker));
    observed.observe_calls(Box::new(Recorder(seen.clone())));
    let messages = [
        request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "obs", "version": "9.9 beta"}}),
        ),
        request(1, "tools/call", json!({"name": "test.echo", "arguments": {"mode": "ok"}})),
        request(2, "tools/call", json!({"name": "test.echo", "arguments": {"mode": "product-error"}})),
        request(3, "tools/call", json!({"name": "test.echo", "arguments": {"count": 99}})),
        request(4, "tools/call", json!({"name": "missing.tool"})),
        request(5, "tools/list", json!({})),
        request(6, "tools/call", json!({"name": "test.echo", "_meta": modern_meta("2026-07-28")})),
    ];
    for message in messages {
        assert_eq!(send(&mut observed, message.clone()), send(&mut plain, message));
    }
    let client = ("obs".to_owned(), Some("9.9beta".to_owned()));
    let modern = ("modernclient".to_owned(), Some("1".to_owned()));
    let expected = [
        (Some("test.echo"), true, &client, true, None),
        (Some("test.echo"), true, &client, false, None),
        (Some("test.echo"), true, &client, false, Some(INVALID_PARAMS)),
        (Some("missing.tool"), false, &client, false, Some(INVALID_PARAMS)),
        (Some("test.echo"), true, &modern, true, None),
    ]
    .map(|(name, registered, client, succeeded, error_code)| Seen {
        name: name.map(str::to_owned),
        registered,
        client: client.clone(),
        succeeded,
        error_code,
    });
    assert_eq!(*seen.lock().expect("lock"), expected, "tools/list is not a call");
}

/// The listing's token targets (o200k): the model-visible definitions (name, description, input schema) at most
/// 5,000 tokens without a gateway and 9,000 with every tool listed, the whole `tools/list` result at most 25,000.
/// A description or schema that grows past them fails here, before the benchmark reports it.
#[test]
fn the_real_listing_fits_its_token_targets() {
    let tokens = |value: &Value| fluxgit_engine::budget::count_tokens(&value.to_string());
    for (gateway, visible_target) in [(false, 5_000), (true, 9_000)] {
        let mut registry = crate::tools::registry().expect("the registry builds");
        registry.restrict(crate::tools::listing::Selection::default(), gateway);
        let whole = crate::protocol::methods::list_tools_result(&registry, Version::NEWEST);
        let tools = whole["tools"].as_array().expect("tools");
        assert_eq!(tools.len(), if gateway { 43 } else { 23 });
        let visible: Vec<Value> = tools
            .iter()
            .map(|tool| json!({"name": tool["name"], "description": tool["description"], "inputSchema": tool["inputSchema"]}))
            .collect();
        let visible = tokens(&Value::Array(visible));
        assert!(visible <= visible_target, "gateway {gateway}: {visible} model-visible tokens > {visible_target}");
        let whole = tokens(&whole);
        assert!(whole <= 25_000, "gateway {gateway}: the whole tools/list is {whole} tokens > 25,000");
    }
}
