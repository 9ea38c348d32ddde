//! `docs/tools.md`, generated from the registry's schemas (`fluxgit-mcp-sidecar docs tools`): every tool's
//! arguments with bounds and defaults, its output fields, and the errors it can answer with.

use std::fmt::Write as _;

use serde_json::Value;

use crate::tools::listing::{self, Spelling};
use crate::tools::{Registry, ToolDefinition, reference};

/// The command that regenerates `docs/tools.md` from a checkout.
pub const REGENERATE: &str = "cargo run -q -p fluxgit-mcp-sidecar -- docs tools > docs/tools.md";

/// Output fields are listed down to this nesting depth.
const MAX_DEPTH: usize = 4;

/// Renders the Markdown reference of every tool in `registry`, in `tools/list` order, with the listed (underscore)
/// names.
pub fn tools_markdown(registry: &Registry) -> String {
    listing::respell(&markdown(registry), Spelling::Underscore).replace(KEPT_DOT, ".")
}

/// Written where the page names a dotted name on purpose (the naming rule, each tool's dotted name), so that the
/// page-wide respelling to underscore names passes it by; it becomes `.` at the end.
const KEPT_DOT: &str = "\u{2024}";

/// `name` with its dots kept through the respelling.
fn dotted(name: &str) -> String {
    name.replace('.', KEPT_DOT)
}

fn markdown(registry: &Registry) -> String {
    let mut out = String::new();
    out.push_str("# Tools\n\n");
    let _ = writeln!(
        out,
        "Generated from the tool registry's schemas by `fluxgit-mcp-sidecar docs tools`; do not edit by hand \
         (regenerate with `{REGENERATE}`). {} tools, in `tools/list` order.\n",
        registry.len()
    );
    out.push_str(INTRO);
    out.push('\n');
    out.push_str(
        &NAMES
            .replace("repo.brief", &dotted("repo.brief"))
            .replace("operation.preview.branchDelete", &dotted("operation.preview.branchDelete")),
    );
    out.push('\n');
    out.push_str(LISTING);
    out.push('\n');
    out.push_str("| toolset | for | tools |\n|---|---|---|\n");
    for toolset in listing::TOOLSETS {
        let tools: Vec<String> = toolset.tools.iter().map(|tool| format!("`{tool}`")).collect();
        let _ = writeln!(out, "| `{}` | {} | {} |", toolset.name, toolset.about, tools.join(", "));
    }
    out.push('\n');
    out.push_str(BUDGETS);
    out.push('\n');
    for tool in registry.tools() {
        let name = listing::spelled(tool.definition().name, Spelling::Underscore);
        let _ = writeln!(out, "- [`{name}`](#{}): {}", anchor(&name), tool.definition().title);
    }
    for tool in registry.tools() {
        out.push('\n');
        render_tool(&mut out, tool.definition());
    }
    out
}

const INTRO: &str = "Every result is an envelope `{tool, readOnly, repoPath, source, data}` (plus `omitted` when a \
budget cut a list, `resolvedFrom` when `repoPath` was a subfolder); `content[0].text` is its compact JSON and \
`structuredContent` the same object. Inside `data`, a field at its default (`null`, `0`, `false`, an empty list) \
may be left out where its description says so. Errors come in two kinds: JSON-RPC errors (`-32602` for arguments \
that fail the input schema, with `data.errors`, or that are refused before any read, with `data.reason`: \
`invalid_path`, `not_found`, `not_a_repository`, `outside_allowed_roots`, `invalid_revision`, \
`unknown_revision`, `invalid_cursor`, `not_a_file`, `invalid_range`, `binary_file`, `invalid_query`, `invalid_ref_name`, `budget_below_floor` with `data.floor`), and tool results with \
`isError: true` whose text is `{\"error\": {code, message, data}}` plus the envelope fields (the 100xx codes).\n";

const NAMES: &str = "Names. Each tool is listed under its dotted name with every `.` written `_` (`repo.brief` is \
`repo_brief`, `operation.preview.branchDelete` is `operation_preview_branchDelete`): hosts that hand tool \
definitions to a model API accept only `^[a-zA-Z0-9_-]{1,64}$`. No dotted name holds an `_`, so the rule maps \
back. `tools/call` accepts either spelling. `FLUXGIT_MCP_TOOL_NAMES=dotted` lists the dotted names instead \
(`underscore` or unset: the underscore names; any other value stops start-up). The envelope's `tool`, hints, \
`nextAction` and messages use the listed spelling. This page uses the underscore names.\n";

const LISTING: &str = "What is listed. A tool is listed when it can answer and the user chose it. Without a \
configured gateway the write proposals, `operation.status`, `operation.cancel` and the gateway-only reads \
(toolsets `write` and `safety`) are not listed; a call to one still answers 10003 or 10001 with the hint, and \
`fluxgit-mcp-sidecar doctor` says how to turn them on. `FLUXGIT_MCP_TOOLSETS` (comma-separated toolset names) \
and `FLUXGIT_MCP_TOOLS` (comma-separated tool names, either spelling) narrow the listing: a tool is listed when \
its toolset or its own name is chosen; with neither set, every toolset is. Both are read once at start-up, and \
an unknown name stops it with an error naming it. Narrowing changes only the listing: a call to a tool left out \
still answers.\n";

const BUDGETS: &str = "Budgets and formats. Every tool that takes `maxTokens` guarantees that the whole text of \
its result (`content[0].text`: the JSON, or the text rendering with `format: \"text\"`) is at most that many \
o200k_base tokens; lists are cut by priority and what was cut is counted in `omitted` (and stated as `... N \
more` lines in text). `format: \"json\"` (default): `content[0].text` is the compact JSON envelope. `text`: a \
terse line-oriented rendering in git's idioms (`## main...origin/main [ahead 1]`, `M  path`, `?? path`, `sha \
subject`, `... 7 more commits` for cuts) that `maxTokens` counts; `structuredContent` stays the JSON.\n";

const PROPOSAL_DOC: &str = "A person approves or rejects the proposal at the approval gateway: this call only \
submits it and returns {accepted, previewId, status, nextAction}; it is not a Git result. Poll operation.status \
with the previewId until it is completed (or ended). `reason` is shown to the person. Refs must name commits, \
paths are repository-relative, and nothing is sent when a check fails.";

fn render_tool(out: &mut String, definition: &ToolDefinition) {
    let name = listing::spelled(definition.name, Spelling::Underscore);
    let _ = writeln!(out, "## `{name}`\n");
    let toolset = listing::toolset_of(definition.name).map_or("-", |toolset| toolset.name);
    let gateway = if listing::needs_gateway(definition.name) { "; listed only with a gateway" } else { "" };
    let _ = writeln!(
        out,
        "**{}** ({}; toolset `{toolset}`{gateway}; dotted name `{}`)\n",
        definition.title,
        if definition.read_only { "read-only" } else { "write proposal" },
        dotted(definition.name),
    );
    let _ = writeln!(out, "{}\n", one_line(definition.description));
    if let Some(doc) = reference::long_doc(definition.name) {
        let _ = writeln!(out, "{}\n", one_line(doc));
    } else if definition.name.starts_with("operation.preview.") {
        let _ = writeln!(out, "{}\n", one_line(PROPOSAL_DOC));
    }

    out.push_str("Arguments:\n\n");
    let required: Vec<&str> = string_list(&definition.input_schema["required"]);
    match definition.input_schema["properties"].as_object().filter(|properties| !properties.is_empty()) {
        None => out.push_str("none\n"),
        Some(properties) => {
            out.push_str("| name | type | required | default | bounds | description |\n|---|---|---|---|---|---|\n");
            for (name, schema) in properties {
                let _ = writeln!(
                    out,
                    "| `{name}` | {} | {} | {} | {} | {} |",
                    cell(&type_of(schema)),
                    if required.contains(&name.as_str()) { "yes" } else { "no" },
                    schema.get("default").map_or_else(String::new, |default| format!("`{default}`")),
                    cell(&bounds(schema)),
                    cell(argument_description(name, schema)),
                );
            }
        }
    }

    out.push_str("\nOutput (`data`):\n\n");
    let output = &definition.output_schema;
    let data = output.get("properties").and_then(|properties| properties.get("data")).unwrap_or(output);
    let mut lines = Vec::new();
    fields(data, 0, &mut lines);
    if lines.is_empty() {
        lines.push(format!("- {}", type_of(data)));
    }
    for line in lines {
        let _ = writeln!(out, "{line}");
    }

    out.push_str("\nErrors:\n\n");
    for line in errors(definition) {
        let _ = writeln!(out, "- {line}");
    }
}

/// An argument's description; `maxTokens` and `format` carry none in the schema (the model reads their meaning once,
/// in the server's instructions), so the reference says it here.
fn argument_description<'a>(name: &str, schema: &'a Value) -> &'a str {
    match (schema["description"].as_str(), name) {
        (Some(description), _) => description,
        (None, "maxTokens") => "Hard budget of the whole result, in o200k_base tokens (see Budgets and formats).",
        (None, "format") => "`text`: terse git-style lines instead of JSON (see Budgets and formats).",
        (None, _) => "",
    }
}

/// The errors a tool can answer with, from what kind of tool it is.
fn errors(definition: &ToolDefinition) -> Vec<&'static str> {
    let name = definition.name;
    let mut out = vec![
        "`-32602`: arguments that fail the input schema (`data.errors`), or refused before any read (`data.reason`)",
    ];
    if name.starts_with("safety.") || name.starts_with("flux.") {
        out.push("`10001`: no gateway configured (`data.upgradeHint`); these tools are never answered from local refs");
        out.push("`10002`: the configured gateway is unreachable or gave nothing usable (`data.reason`)");
    } else if name.starts_with("operation.preview.") || name == "operation.cancel" {
        out.push("`10003`: the write-handshake bridge is missing, invalid or unreachable; nothing was proposed");
        out.push("`10006`: the gateway refused before opening a card (policy, validation, quota)");
        out.push("`10007`: the gateway returned a malformed or unsafe `previewId`; not followed");
    } else if name == "operation.status" {
        out.push("`10003`: the write-handshake bridge is missing, invalid or unreachable");
        out.push("`10004`: the proposal ended without completion (rejected, failed, expired, cancelled)");
        out.push("`10005`: the gateway does not know this `previewId`");
    } else if name == "agents.presence" {
        out.push("`10011`: agent detection is disabled (`FLUXGIT_MCP_AGENT_DETECTION_DISABLED`); a store that cannot be read is a diagnostic, never an error");
    } else {
        out.push("`10010`: a local read failed on a repository that cannot be read at all (one bad item is marked in its entry instead)");
    }
    out
}

/// One bullet per output field, nested by indentation.
fn fields(schema: &Value, depth: usize, lines: &mut Vec<String>) {
    let object = if schema.get("properties").is_some() {
        schema
    } else if let Some(items) = schema.get("items").filter(|items| items.get("properties").is_some()) {
        items
    } else {
        return;
    };
    let Some(properties) = object["properties"].as_object() else { return };
    let required = string_list(&object["required"]);
    let indent = "  ".repeat(depth);
    for (name, field) in properties {
        let presence = if required.contains(&name.as_str()) { "" } else { ", optional" };
        let description = field["description"].as_str().map(|text| format!(": {}", one_line(text))).unwrap_or_default();
        lines.push(format!("{indent}- `{name}` ({}{presence}){description}", type_of(field)));
        if depth + 1 < MAX_DEPTH {
            fields(field, depth + 1, lines);
        }
    }
}

/// A short type: `string`, `integer`, `string or null`, `array of object`, `one of "a", "b"`.
fn type_of(schema: &Value) -> String {
    if let Some(values) = schema["enum"].as_array() {
        let values: Vec<String> = values.iter().map(Value::to_string).collect();
        return format!("one of {}", values.join(", "));
    }
    if let Some(value) = schema.get("const") {
        return format!("always {value}");
    }
    let kinds: Vec<&str> = match &schema["type"] {
        Value::String(kind) => vec![kind.as_str()],
        Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
        _ if schema.get("properties").is_some() => vec!["object"],
        _ => vec![],
    };
    let rendered: Vec<String> = kinds
        .iter()
        .map(|kind| match *kind {
            "array" => match schema.get("items") {
                Some(items) => format!("array of {}", type_of(items)),
                None => "array".to_owned(),
            },
            other => other.to_owned(),
        })
        .collect();
    if rendered.is_empty() { "any".to_owned() } else { rendered.join(" or ") }
}

/// Bounds of an argument: ranges, lengths, item counts and patterns.
fn bounds(schema: &Value) -> String {
    let mut parts = Vec::new();
    let number = |key: &str| schema.get(key).filter(|value| value.is_number()).map(Value::to_string);
    match (number("minimum"), number("maximum")) {
        (Some(min), Some(max)) => parts.push(format!("{min}..={max}")),
        (Some(min), None) => parts.push(format!(">= {min}")),
        (None, Some(max)) => parts.push(format!("<= {max}")),
        (None, None) => {}
    }
    match (number("minLength"), number("maxLength")) {
        (Some(min), Some(max)) => parts.push(format!("length {min}..={max}")),
        (Some(min), None) => parts.push(format!("length >= {min}")),
        (None, Some(max)) => parts.push(format!("length <= {max}")),
        (None, None) => {}
    }
    match (number("minItems"), number("maxItems")) {
        (Some(min), Some(max)) => parts.push(format!("{min}..={max} items")),
        (Some(min), None) => parts.push(format!(">= {min} items")),
        (None, Some(max)) => parts.push(format!("<= {max} items")),
        (None, None) => {}
    }
    if let Some(pattern) = schema["pattern"].as_str() {
        parts.push(format!("pattern `{pattern}`"));
    }
    parts.join(", ")
}

fn string_list(value: &Value) -> Vec<&str> {
    value.as_array().map(|items| items.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

/// Text on one line, runs of whitespace joined.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text for a table cell: one line, pipes escaped.
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

/// GitHub's heading anchor for a tool name (`repo.brief` -> `repobrief`).
fn anchor(name: &str) -> String {
    name.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect::<String>().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_tools_md_is_the_generated_one() {
        let registry = crate::tools::registry().expect("the registry builds");
        let generated = tools_markdown(&registry);
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/tools.md");
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/tools.md is not what the registry's schemas generate; regenerate it from the checkout's root \
             with:\n    {REGENERATE}\nand commit it"
        );
    }

    #[test]
    fn bounds_and_types_read_like_the_schema() {
        let schema = serde_json::json!({ "type": "integer", "minimum": 1, "maximum": 20, "default": 10 });
        assert_eq!((type_of(&schema), bounds(&schema)), ("integer".to_owned(), "1..=20".to_owned()));
        let list = serde_json::json!({ "type": ["array", "null"], "items": { "type": "string" }, "maxItems": 5 });
        assert_eq!((type_of(&list), bounds(&list)), ("array of string or null".to_owned(), "<= 5 items".to_owned()));
        assert_eq!(cell("a | b\n c"), "a \\| b c");
    }
}
