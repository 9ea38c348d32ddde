//! Result builders for each MCP method, with the fields gated by protocol version (design.md#transport).

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::protocol::context::{META_SERVER_INFO, RequestContext};
use crate::protocol::version::Version;
use crate::tools::{ArgumentsError, CallContext, ProtocolError, Registry, ToolDefinition, ToolOutput, listing};

/// How long clients may cache `tools/list` and `server/discover` results, in milliseconds (5 minutes): the tool
/// set only changes with the binary.
pub const LIST_TTL_MS: u64 = 300_000;

/// `cacheScope` of cacheable results: `"public"`, because the tool list and discovery answer hold nothing
/// user-specific (the 2026-07-28 schema allows `"public"` and `"private"`).
pub const CACHE_SCOPE: &str = "public";

/// The server's name and version, as sent in `serverInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// `fluxgit-mcp-sidecar`.
    pub name: &'static str,
    /// The crate version (`CARGO_PKG_VERSION`).
    pub version: &'static str,
}

impl ServerInfo {
    /// This binary's identity.
    pub const CURRENT: ServerInfo = ServerInfo { name: "fluxgit-mcp-sidecar", version: env!("CARGO_PKG_VERSION") };

    /// `{"name": ..., "version": ...}`.
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "version": self.version})
    }
}

/// Short guidance for the model, sent by `initialize` and `server/discover` (written with underscore tool names;
/// [`instructions`] spells them as listed). It says once what every budgeted tool's `maxTokens` and `format` mean.
pub const INSTRUCTIONS: &str = "FluxGit gives structured, token-budgeted, read-only Git context. Start with \
repo_brief; every repository tool takes an absolute repoPath inside the allowed roots. `maxTokens` is a hard \
budget (o200k tokens) of the whole result text: lists are cut by priority and what was cut is counted in \
`omitted`. `format: \"text\"` answers in terse git-style lines instead of JSON. No tool writes to a repository: \
with an approval gateway configured, a change is proposed with an operation_preview_* tool, a person approves or \
rejects it, and operation_status tells what happened.";

/// [`INSTRUCTIONS`] with tool names in the process's listed spelling.
pub(crate) fn instructions() -> String {
    listing::respell(INSTRUCTIONS, listing::spelling()).into_owned()
}

fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}})
}

/// The legacy `initialize` result for the negotiated `version`.
pub(crate) fn initialize_result(version: Version, info: &ServerInfo) -> Value {
    json!({
        "protocolVersion": version.as_str(),
        "capabilities": capabilities(),
        "serverInfo": info.to_json(),
        "instructions": instructions(),
    })
}

/// The `server/discover` result: every supported version, capabilities and cache hints (shape of rmcp's
/// `DiscoverResult`). `resultType` and `_meta` are added by [`decorate_modern`].
pub(crate) fn discover_result() -> Value {
    let supported: Vec<&str> = Version::ALL.iter().map(|version| version.as_str()).collect();
    json!({
        "supportedVersions": supported,
        "capabilities": capabilities(),
        "instructions": instructions(),
        "ttlMs": LIST_TTL_MS,
        "cacheScope": CACHE_SCOPE,
    })
}

/// The `tools/list` result: every listed tool ([`Registry::listed`]) in registry order, fields gated by `version`;
/// cache hints only in the modern era.
pub(crate) fn list_tools_result(registry: &Registry, version: Version) -> Value {
    let tools: Vec<Value> = registry.listed().map(|tool| render_tool(tool.definition(), version)).collect();
    let mut result = Map::new();
    result.insert("tools".to_owned(), Value::Array(tools));
    if version.is_modern() {
        result.insert("ttlMs".to_owned(), Value::from(LIST_TTL_MS));
        result.insert("cacheScope".to_owned(), Value::from(CACHE_SCOPE));
    }
    Value::Object(result)
}

/// One tool as `version` knows it: `title` and `outputSchema` from 2025-06-18, `annotations` from 2025-03-26 (with
/// their own `title` only before the tool's `title` exists). The name, and the tool names in the description, in the
/// process's listed spelling; schemas without what a model never reads ([`without_prose`], [`without_bounds`]).
pub(crate) fn render_tool(definition: &ToolDefinition, version: Version) -> Value {
    let spelling = listing::spelling();
    let mut tool = Map::new();
    tool.insert("name".to_owned(), Value::from(listing::spelled(definition.name, spelling)));
    if version.has_tool_title() {
        tool.insert("title".to_owned(), Value::from(definition.title));
    }
    tool.insert("description".to_owned(), Value::from(listing::respell(definition.description, spelling)));
    tool.insert("inputSchema".to_owned(), without_bounds(&definition.input_schema, INPUT_BOUNDS));
    if version.has_structured_output() {
        let output = listed_output(&without_bounds(&without_prose(&definition.output_schema), OUTPUT_BOUNDS), 0);
        tool.insert("outputSchema".to_owned(), output);
    }
    if version.has_tool_annotations() {
        let mut annotations = json!({
            "readOnlyHint": definition.read_only,
            "destructiveHint": false,
            "idempotentHint": definition.read_only,
            "openWorldHint": false,
        });
        if !version.has_tool_title() {
            annotations["title"] = Value::from(definition.title);
        }
        tool.insert("annotations".to_owned(), annotations);
    }
    Value::Object(tool)
}

/// `schema` without its `description`s: an output schema keeps its types, bounds and required fields for clients
/// that check `structuredContent`, while the prose (read by people, in `docs/tools.md`) stays out of `tools/list`.
/// A property that is itself called `description` is kept.
pub(crate) fn without_prose(schema: &Value) -> Value {
    match schema {
        Value::Object(object) => Value::Object(
            object
                .iter()
                .filter(|(key, value)| !(key.as_str() == "description" && value.is_string()))
                .map(|(key, value)| {
                    let value = match value {
                        Value::Object(properties) if key == "properties" => Value::Object(
                            properties.iter().map(|(name, property)| (name.clone(), without_prose(property))).collect(),
                        ),
                        other => without_prose(other),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_prose).collect()),
        other => other.clone(),
    }
}

/// The bounds `tools/list` leaves out of input schemas: string lengths and patterns. A model fills arguments from
/// the descriptions, and these (an absolute path's pattern, 4096-character limits) cost a thousand tokens across
/// the tools without helping it. The server still checks arguments against the whole schema, a violation names
/// what is wrong ("must be an absolute path"), and `docs/tools.md` lists every bound.
const INPUT_BOUNDS: &[&str] = &["minLength", "maxLength", "pattern"];

/// The bounds `tools/list` leaves out of output schemas besides their prose: every length, range and item count.
/// An output schema keeps its types, required fields and enumerations; the bounds are the server's promise, said
/// in `docs/tools.md`.
const OUTPUT_BOUNDS: &[&str] = &["minLength", "maxLength", "pattern", "minimum", "maximum", "minItems", "maxItems"];

/// How many levels of `properties` an output schema keeps in `tools/list` (the envelope's, `data`'s, a field's and
/// an item's); an object nested deeper is listed as `{"type": "object"}` (its fields are in `docs/tools.md`).
const OUTPUT_DEPTH: usize = 4;

/// An output schema as `tools/list` carries it: `properties` (and their `required`) kept to [`OUTPUT_DEPTH`]
/// levels, and `"type": "string"` left out beside an `enum`, which already says it. `depth`: the levels above.
pub(crate) fn listed_output(schema: &Value, depth: usize) -> Value {
    match schema {
        Value::Object(object) => {
            let deep = depth >= OUTPUT_DEPTH;
            let redundant_type = object.contains_key("enum") && object.get("type") == Some(&Value::from("string"));
            Value::Object(
                object
                    .iter()
                    .filter(|(key, _)| match key.as_str() {
                        "properties" | "required" => !deep,
                        "type" => !redundant_type,
                        _ => true,
                    })
                    .map(|(key, value)| {
                        let value = match value {
                            Value::Object(properties) if key == "properties" => Value::Object(
                                properties
                                    .iter()
                                    .map(|(name, property)| (name.clone(), listed_output(property, depth + 1)))
                                    .collect(),
                            ),
                            other => listed_output(other, depth),
                        };
                        (key.clone(), value)
                    })
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(|item| listed_output(item, depth)).collect()),
        other => other.clone(),
    }
}

/// `schema` without the keywords `bounds` (numbers or strings), at every level; property names are kept.
pub(crate) fn without_bounds(schema: &Value, bounds: &[&str]) -> Value {
    match schema {
        Value::Object(object) => Value::Object(
            object
                .iter()
                .filter(|(key, value)| !(bounds.contains(&key.as_str()) && (value.is_number() || value.is_string())))
                .map(|(key, value)| {
                    let value = match value {
                        Value::Object(properties) if key == "properties" => Value::Object(
                            properties
                                .iter()
                                .map(|(name, property)| (name.clone(), without_bounds(property, bounds)))
                                .collect(),
                        ),
                        other => without_bounds(other, bounds),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|item| without_bounds(item, bounds)).collect()),
        other => other.clone(),
    }
}

/// What `tools/call` runs against.
pub(crate) struct Tools<'a> {
    pub(crate) registry: &'a Registry,
    pub(crate) engine: &'a fluxgit_engine::Engine,
    pub(crate) bridge: &'a crate::bridge::Bridge,
    pub(crate) interrupt: &'a fluxgit_engine::Interrupt,
}

/// Runs `tools/call`: checks params, validates the arguments against the advertised schema and calls the tool
/// with panics caught. The output is framed by [`call_result`].
///
/// # Errors
/// `-32602` for malformed params, an unknown tool (`Unknown tool: X`) or arguments failing the schema
/// (`data.errors: [{instancePath, message}]`); the tool's own [`ProtocolError`]; `-32603` if the tool panicked.
pub(crate) fn call_tool(
    tools: &Tools<'_>,
    context: &RequestContext,
    params: Option<&Value>,
) -> Result<ToolOutput, ProtocolError> {
    let registry = tools.registry;
    let Some(params) = params.and_then(Value::as_object) else {
        return Err(ProtocolError::invalid_params("tools/call needs params {name, arguments}", None));
    };
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err(ProtocolError::invalid_params("params.name must be a string", None));
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(arguments @ Value::Object(_)) => arguments.clone(),
        Some(_) => return Err(ProtocolError::invalid_params("params.arguments must be an object", None)),
    };
    let Some(tool) = registry.lookup(name) else {
        return Err(unknown_tool(registry, name));
    };
    match registry.validate(name, &arguments) {
        Ok(()) => {}
        Err(ArgumentsError::UnknownTool) => return Err(unknown_tool(registry, name)),
        Err(ArgumentsError::Invalid { violations, omitted }) => {
            let errors: Vec<Value> = violations
                .iter()
                .map(|violation| json!({"instancePath": violation.instance_path, "message": violation.message}))
                .collect();
            let mut data = json!({"errors": errors});
            if omitted > 0 {
                data["omittedErrors"] = Value::from(omitted);
            }
            // The first violation goes into the message too: many clients show an error's message alone.
            let first = violations.first().map_or_else(String::new, |violation| {
                let at = if violation.instance_path.is_empty() { "arguments" } else { &violation.instance_path };
                format!(": {at}: {}", violation.message)
            });
            let message = format!("Invalid arguments for tool {name}{first}");
            return Err(ProtocolError::invalid_params(message, Some(data)));
        }
    }
    let Value::Object(arguments) = arguments else {
        return Err(ProtocolError::internal("arguments are not an object"));
    };
    let call_context = CallContext {
        engine: tools.engine,
        client_name: &context.client_name,
        bridge: tools.bridge,
        interrupt: tools.interrupt,
        resolved: None,
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| tool.call(&call_context, &arguments)));
    match outcome {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(error)) => Err(error),
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|text| (*text).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(tool = name, panic = %detail, "tool panicked");
            Err(ProtocolError::internal(format!("Internal error: tool {name} failed unexpectedly")))
        }
    }
}

/// `-32602 Unknown tool: NAME`, with up to three nearest listed names in the message and in `data.suggestions`.
fn unknown_tool(registry: &Registry, name: &str) -> ProtocolError {
    let listed: Vec<&str> = registry.tools().map(|tool| tool.definition().name).collect();
    let nearest = super::suggest::nearest_tool_names(&listed, name);
    if nearest.is_empty() {
        return ProtocolError::invalid_params(format!("Unknown tool: {name}"), None);
    }
    let message = format!("Unknown tool: {name}; nearest listed: {}", nearest.join(", "));
    ProtocolError::invalid_params(message, Some(json!({ "suggestions": nearest })))
}

/// The JSON-RPC response to a `tools/call` that gave `output`, serialised: `result` is `{content: [{type: "text",
/// text}], structuredContent?, isError}`, with `structuredContent` only from 2025-06-18 and only when the tool
/// produced one, and in the modern era `resultType: "complete"` first and `_meta` serverInfo last (as
/// [`decorate_modern`] adds them to other results). The structured envelope is copied in as the JSON text it was
/// rendered as, never parsed into a value.
pub(crate) fn call_response(id: &Value, output: &ToolOutput, version: Version, info: &ServerInfo) -> Box<RawValue> {
    #[derive(Serialize)]
    struct Response<'a> {
        jsonrpc: &'static str,
        id: &'a Value,
        result: CallResult<'a>,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct CallResult<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        result_type: Option<&'static str>,
        content: [TextContent<'a>; 1],
        #[serde(skip_serializing_if = "Option::is_none")]
        structured_content: Option<&'a RawValue>,
        is_error: bool,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    }
    #[derive(Serialize)]
    struct TextContent<'a> {
        r#type: &'static str,
        text: &'a str,
    }
    let modern = version.is_modern();
    let result = CallResult {
        result_type: modern.then_some("complete"),
        content: [TextContent { r#type: "text", text: &output.text }],
        structured_content: output.structured.as_deref().filter(|_| version.has_structured_output()),
        is_error: output.is_error,
        meta: modern.then(|| Map::from_iter([(META_SERVER_INFO.to_owned(), info.to_json())])),
    };
    serde_json::value::to_raw_value(&Response { jsonrpc: "2.0", id, result }).expect("responses serialise")
}

/// Adds the modern-era fields to a result: `resultType: "complete"` first and `_meta` serverInfo last (merged into
/// an existing `_meta`). Non-object results are left alone.
pub(crate) fn decorate_modern(result: Value, info: &ServerInfo) -> Value {
    let Value::Object(fields) = result else {
        return result;
    };
    let mut decorated = Map::new();
    decorated.insert("resultType".to_owned(), Value::from("complete"));
    let mut meta = Map::new();
    for (key, value) in fields {
        match (key.as_str(), value) {
            ("_meta", Value::Object(existing)) => meta.extend(existing),
            (_, value) => {
                decorated.insert(key, value);
            }
        }
    }
    meta.insert(META_SERVER_INFO.to_owned(), info.to_json());
    decorated.insert("_meta".to_owned(), Value::Object(meta));
    Value::Object(decorated)
}
