//! `docs/tools.md`, generated from the registry's schemas (`fluxgit-mcp-sidecar docs tools`): every tool's
//! arguments with bounds and defaults, its output fields, and the errors it can answer with.

use std::fmt::Write as _;

use serde_json::Value;

use crate::tools::{Registry, ToolDefinition};

/// The command that regenerates `docs/tools.md` from a checkout.
pub const REGENERATE: &str = "cargo run -q -p fluxgit-mcp-sidecar -- docs tools > docs/tools.md";

/// Output fields are listed down to this nesting depth.
const MAX_DEPTH: usize = 4;

/// Renders the Markdown reference of every tool in `registry`, in `tools/list` order.
pub fn tools_markdown(registry: &Registry) -> String {
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
    for tool in registry.tools() {
        let _ = writeln!(
            out,
            "- [`{0}`](#{1}): {2}",
            tool.definition().name,
            anchor(tool.definition().name),
            tool.definition().title
        );
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

fn render_tool(out: &mut String, definition: &ToolDefinition) {
    let _ = writeln!(out, "## `{}`\n", definition.name);
    let _ = writeln!(
        out,
        "**{}** ({})\n",
        definition.title,
        if definition.read_only { "read-only" } else { "write proposal" }
    );
    let _ = writeln!(out, "{}\n", one_line(definition.description));

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
                    cell(schema["description"].as_str().unwrap_or_default()),
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
