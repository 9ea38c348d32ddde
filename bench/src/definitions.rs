//! The tool-definition benchmark (`fluxgit-bench tools`): what a server's `tools/list` costs a model before its
//! first call, in o200k_base tokens.
//!
//! Three numbers per server: the model-visible definitions (each tool's `name`, `description` and `inputSchema`,
//! what hosts hand a model API), the same with `outputSchema`, and the whole `tools/list` result as sent. Each is
//! the compact JSON of the list of those objects, counted once. The sidecar is measured as it starts by default
//! (no gateway: the tools that could only refuse are not listed) and with a gateway address configured (every
//! tool); peers are measured as they start.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};

use crate::mcp::Session;

/// The model-visible budget without a gateway, tokens.
pub(crate) const TARGET_DEFAULT: usize = 5_000;
/// The model-visible budget with every tool listed, tokens.
pub(crate) const TARGET_ALL: usize = 9_000;
/// The budget of the whole `tools/list` result, tokens.
pub(crate) const TARGET_WHOLE: usize = 25_000;

/// One server's listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listing {
    /// What was measured, e.g. `fluxgit (this build, no gateway)`.
    pub(crate) label: String,
    /// `serverInfo` name and version.
    pub(crate) server: String,
    /// Tools listed.
    pub(crate) tools: usize,
    /// Tokens of the names, descriptions and input schemas.
    pub(crate) visible: usize,
    /// Tokens of the same with the output schemas.
    pub(crate) with_output: usize,
    /// Tokens of the whole `tools/list` result.
    pub(crate) whole: usize,
    /// The longest listed name, characters.
    pub(crate) longest_name: usize,
    /// Whether every name matches `^[a-zA-Z0-9_-]{1,64}$` with the `mcp__<server>__` prefix hosts add.
    pub(crate) names_fit: bool,
}

/// Starts `binary` with `env`, lists its tools and counts them.
pub(crate) fn measure(label: &str, binary: &Path, env: &[(&str, OsString)]) -> anyhow::Result<Listing> {
    let mut session = Session::start(binary, env)?;
    let (tools, pages) = session.tool_definitions()?;
    let server = format!("{} {}", session.server_name, session.server_version);
    Ok(count(label, &server, &tools, &pages))
}

/// Counts a listing's tools and pages.
pub(crate) fn count(label: &str, server: &str, tools: &[Value], pages: &[Value]) -> Listing {
    let pick = |keys: &[&str]| -> Value {
        Value::Array(
            tools
                .iter()
                .map(|tool| {
                    let mut picked = serde_json::Map::new();
                    for key in keys {
                        if let Some(value) = tool.get(*key) {
                            picked.insert((*key).to_owned(), value.clone());
                        }
                    }
                    Value::Object(picked)
                })
                .collect(),
        )
    };
    let tokens = |value: &Value| fluxgit_engine::budget::count_tokens(&value.to_string());
    let names: Vec<&str> = tools.iter().filter_map(|tool| tool["name"].as_str()).collect();
    let fits = |name: &str| {
        let prefixed = format!("mcp__fluxgit__{name}");
        prefixed.len() <= 64 && prefixed.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    Listing {
        label: label.to_owned(),
        server: server.to_owned(),
        tools: tools.len(),
        visible: tokens(&pick(&["name", "description", "inputSchema"])),
        with_output: tokens(&pick(&["name", "description", "inputSchema", "outputSchema"])),
        whole: pages.iter().map(tokens).sum(),
        longest_name: names.iter().map(|name| name.chars().count()).max().unwrap_or(0),
        names_fit: !names.is_empty() && names.iter().all(|name| fits(name)),
    }
}

/// The `## Tool definitions` section of BENCHMARK.md: the measured listings, then the peers the team measured
/// earlier (`cited`, each `label, tools, visible tokens, note`), then the targets; `provenance` (the command, the
/// build's commit, the time) opens it.
pub(crate) fn section(listings: &[Listing], cited: &[(&str, usize, usize, &str)], provenance: &str) -> String {
    let mut out = format!("## Tool definitions\n\n{provenance}\n\n");
    out.push_str(
        "What `tools/list` costs a model before the first call, in o200k_base tokens (`fluxgit-bench tools`). \
         *Visible*: each tool's `name`, `description` and `inputSchema`, what hosts hand the model API; *+ output*: \
         the same with `outputSchema`; *whole*: the `tools/list` result as sent. Each is the compact JSON of the \
         list, counted once. *Names fit*: every name matches `^[a-zA-Z0-9_-]{1,64}$` with the `mcp__fluxgit__` \
         prefix a host adds. The long explanations live in `docs/tools.md`, which is not sent.\n\n",
    );
    out.push_str("| server | tools | visible | + output | whole | longest name | names fit |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---|\n");
    for listing in listings {
        let _ = writeln!(
            out,
            "| {} ({}) | {} | {} | {} | {} | {} | {} |",
            listing.label,
            listing.server,
            listing.tools,
            thousands(listing.visible),
            thousands(listing.with_output),
            thousands(listing.whole),
            listing.longest_name,
            if listing.names_fit { "yes" } else { "no" }
        );
    }
    for (label, tools, visible, note) in cited {
        let _ = writeln!(out, "| {label} | {tools} | {} | {note} | | | |", thousands(*visible));
    }
    let _ = writeln!(
        out,
        "\nTargets: visible <= {} tokens without a gateway, <= {} with every tool listed; whole <= {}.",
        thousands(TARGET_DEFAULT),
        thousands(TARGET_ALL),
        thousands(TARGET_WHOLE)
    );
    out
}

/// `12345` as `12,345`.
fn thousands(value: usize) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A listing in JSON, for `bench/results/tools/listings.json`.
pub(crate) fn to_json(listing: &Listing) -> Value {
    json!({ "label": listing.label, "server": listing.server, "tools": listing.tools, "visible": listing.visible,
        "withOutput": listing.with_output, "whole": listing.whole, "longestName": listing.longest_name,
        "namesFit": listing.names_fit })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_pick_the_model_visible_fields_and_names_are_checked_with_the_prefix() {
        let tools = vec![
            json!({ "name": "repo_brief", "title": "T", "description": "Start here.", "inputSchema": { "type": "object" },
                "outputSchema": { "type": "object", "properties": { "a": { "type": "string" } } } }),
        ];
        let pages = vec![json!({ "tools": tools })];
        let listing = count("x", "s 1", &tools, &pages);
        let visible =
            json!([{ "name": "repo_brief", "description": "Start here.", "inputSchema": { "type": "object" } }]);
        assert_eq!(listing.visible, fluxgit_engine::budget::count_tokens(&visible.to_string()));
        assert!(listing.with_output > listing.visible && listing.whole > listing.with_output);
        assert!(listing.names_fit);
        let dotted = vec![json!({ "name": "repo.brief" })];
        assert!(!count("x", "s", &dotted, &[]).names_fit, "a dot does not fit a model API");
        assert_eq!(thousands(19_450), "19,450");
        assert_eq!(thousands(950), "950");
    }
}
