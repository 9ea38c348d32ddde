//! `diff.semantic` and `diff.semanticFallbacks`: the changed symbols of a selection, from the engine's tree-sitter
//! parses (`source: "local-tree-sitter"`, `supported: true`).
//!
//! The local engine answers whenever it can. A configured gateway's semantic engine is asked only when the local
//! one could parse none of the changed files because their languages have no grammar in this build: its answer
//! is then passed on (checked, `source: "fluxgit-gateway"`), and the local answer stands when it has none.

use fluxgit_engine::diff::semantic::{FallbackReason, Options, Report};
use fluxgit_engine::{Budgeted, Measure};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::bridge::reads::Fetched;
use crate::envelope::Frame;
use crate::tools::call::{Format, parse};
use crate::tools::schema::{self, count, defaulted, opt_list};
use crate::tools::{Cache, CallContext, FnTool, ProtocolError, ToolDefinition, ToolOutput};

/// The `source` of an answer from the engine's tree-sitter parses.
pub const SOURCE_TREE_SITTER: &str = "local-tree-sitter";

/// Default budget in tokens: a few hundred symbol lines.
pub const SEMANTIC_DEFAULT_TOKENS: u64 = 4000;
/// Largest budget in tokens.
pub const SEMANTIC_MAX_TOKENS: u64 = 100_000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Args {
    repo_path: String,
    base: Option<String>,
    head: Option<String>,
    #[serde(default)]
    staged: bool,
    path: Option<String>,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

impl Args {
    fn options(&self) -> Options {
        Options {
            base: self.base.clone(),
            head: self.head.clone(),
            staged: self.staged,
            path: self.path.clone(),
            ..Options::default()
        }
    }
}

/// Runs one of the two tools on the local engine: resolves, measures over the envelope (or the text rendering)
/// and wraps, with this tool's source and `supported: true` in the data.
fn run_local<T: Clone + serde::Serialize>(
    ctx: &CallContext<'_>,
    tool: &'static str,
    args: &Args,
    render: fn(&Budgeted<T>, &fluxgit_engine::render::Options) -> String,
    read: impl FnOnce(
        &fluxgit_engine::Repo,
        &mut Measure<'_, Supported<T>>,
    ) -> fluxgit_engine::Result<Budgeted<Supported<T>>>,
) -> Result<ToolOutput, ProtocolError> {
    let mut unresolved = Frame::gateway(tool, true, None);
    unresolved.source = SOURCE_TREE_SITTER;
    let repo = match ctx.resolve(&args.repo_path) {
        Ok(repo) => repo,
        Err(error) => return unresolved.engine_error(error),
    };
    let mut frame = Frame::local(tool, &repo.location);
    frame.source = SOURCE_TREE_SITTER;
    let options = repo.text_options();
    let text = |result: &Budgeted<Supported<T>>| {
        render(&Budgeted { data: result.data.report.clone(), omitted: result.omitted.clone() }, &options)
    };
    let result = match args.format {
        Format::Json => read(&repo, &mut |candidate| frame.measure(candidate)),
        Format::Text => read(&repo, &mut |candidate| fluxgit_engine::budget::measure_tokens(&text(candidate))),
    };
    match result {
        Ok(result) if args.format == Format::Text => Ok(frame.text_rendering_output(text(&result), &result)),
        Ok(result) => Ok(frame.output(&result)),
        Err(error) => frame.engine_error(error),
    }
}

/// A report with `supported: true` in front.
#[derive(Clone, serde::Serialize)]
struct Supported<T> {
    supported: bool,
    #[serde(flatten)]
    report: T,
}

/// Wraps the engine's budgeted report and its measure in [`Supported`].
fn supported<T: Clone + serde::Serialize>(
    measure: &mut Measure<'_, Supported<T>>,
    read: impl FnOnce(&mut Measure<'_, T>) -> fluxgit_engine::Result<Budgeted<T>>,
) -> fluxgit_engine::Result<Budgeted<Supported<T>>> {
    let mut inner = |candidate: &Budgeted<T>| {
        measure(&Budgeted {
            data: Supported { supported: true, report: candidate.data.clone() },
            omitted: candidate.omitted.clone(),
        })
    };
    let result = read(&mut inner)?;
    Ok(Budgeted { data: Supported { supported: true, report: result.data }, omitted: result.omitted })
}

fn call_semantic(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: Args = parse(arguments)?;
    let max_tokens = args.max_tokens.unwrap_or(SEMANTIC_DEFAULT_TOKENS as usize);
    let options = args.options();
    let mut local_report: Option<Report> = None;
    let output = run_local(ctx, "diff.semantic", &args, fluxgit_engine::render::diff_semantic, |repo, measure| {
        let result = supported(measure, |measure| ctx.engine.diff_semantic(repo, &options, max_tokens, measure))?;
        local_report = Some(result.data.report.clone());
        Ok(result)
    })?;
    match local_report {
        Some(report) if all_unsupported(&report) => Ok(from_gateway(ctx, &args, &report).unwrap_or(output)),
        _ => Ok(output),
    }
}

fn call_fallbacks(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: Args = parse(arguments)?;
    let max_tokens = args.max_tokens.unwrap_or(SEMANTIC_DEFAULT_TOKENS as usize);
    let options = args.options();
    run_local(ctx, "diff.semanticFallbacks", &args, fluxgit_engine::render::diff_semantic_fallbacks, |repo, measure| {
        supported(measure, |measure| ctx.engine.diff_semantic_fallbacks(repo, &options, max_tokens, measure))
    })
}

/// The local engine could parse none of the changed files for want of a grammar.
fn all_unsupported(report: &Report) -> bool {
    report.changed_files > 0
        && report.fallback_files == report.changed_files
        && report.files.iter().all(|file| {
            file.fallback.as_ref().is_some_and(|fallback| fallback.reason == FallbackReason::UnsupportedLanguage)
        })
}

/// The gateway's semantic answer for the selection, when a gateway is configured and answers `supported: true`
/// in the expected shape.
fn from_gateway(ctx: &CallContext<'_>, args: &Args, report: &Report) -> Option<ToolOutput> {
    let repo = ctx.resolve(&args.repo_path).ok()?;
    let mut request = json!({ "repoPath": repo.location.root.display().to_string() });
    if let Some(base) = &report.base {
        request["base"] = Value::from(base.as_str());
    }
    request["head"] = Value::from(report.head.as_str());
    if let Some(path) = &args.path {
        request["path"] = Value::from(path.as_str());
    }
    let Fetched::Answer(answer) = ctx.bridge.fetch("/v1/mcp/diff/semantic", Some(&request)) else { return None };
    let answer = checked_answer(answer)?;
    Some(Frame::gateway("diff.semantic", true, Some(&repo.location)).data_output(&answer))
}

/// A gateway answer in the expected shape: `supported: true` and a list of files, each with a path.
fn checked_answer(answer: Map<String, Value>) -> Option<Value> {
    if answer.get("supported") != Some(&Value::Bool(true)) {
        return None;
    }
    let files = answer.get("files")?.as_array()?;
    files.iter().all(|file| file.get("path").is_some_and(Value::is_string)).then_some(Value::Object(answer))
}

fn inputs() -> Value {
    let revision =
        |description: &str| json!({ "type": "string", "minLength": 1, "maxLength": 1024, "description": description });
    schema::input(
        json!({
            "repoPath": schema::repo_path(),
            "base": revision("Old side, as diff.text: a revision or INDEX."),
            "head": revision("New side, as diff.text: a revision, INDEX or WORKTREE."),
            "staged": { "type": "boolean", "default": false, "description": "Compare with the index (`git diff --cached`)." },
            "path": { "type": "string", "minLength": 1, "maxLength": 4096, "description": "Repository-relative file or directory (literal, no `..`)." },
            "maxTokens": schema::max_tokens(200, SEMANTIC_MAX_TOKENS, SEMANTIC_DEFAULT_TOKENS),
            "format": schema::format(),
        }),
        &["repoPath"],
    )
}

fn fallback_schema() -> Value {
    json!({ "type": "object", "required": ["reason"], "properties": {
        "reason": { "enum": ["unsupported_language", "parse_errors", "too_large", "binary", "time_budget", "too_deep",
            "submodule", "unmerged", "unreadable"] },
        "errorRatio": defaulted(json!({ "type": "number", "minimum": 0, "maximum": 1,
            "description": "Share of error nodes in the syntax tree (parse_errors)." }), "null") } })
}

fn selection_properties() -> Map<String, Value> {
    let Value::Object(properties) = json!({
        "supported": { "const": true, "description": "The engine's own tree-sitter parses answered (`source: \
            local-tree-sitter`). The local engine wins over a configured gateway's semantic engine: it reads the \
            objects the other local tools read, so its line counts agree with diff.text's, and it needs no \
            gateway and no network round trip. The gateway is asked only when no changed file has a grammar in \
            this build, and its checked answer then comes with `source: fluxgit-gateway`." },
        "base": defaulted(json!({ "type": "string", "description": "Abbreviated sha or INDEX; absent if given as a sha." }), "null (an unborn HEAD)"),
        "head": defaulted(json!({ "type": "string", "description": "Abbreviated sha, INDEX or WORKTREE; absent if given as a sha." }), "WORKTREE"),
        "path": defaulted(json!({ "type": "string" }), "null (no path filter)"),
    }) else {
        unreachable!("an object literal")
    };
    properties
}

/// `diff.semantic`.
pub fn semantic() -> FnTool {
    let lines = json!({ "type": "object", "properties": { "added": count(), "removed": count() } });
    let range = json!({ "type": "array", "items": { "type": "integer", "minimum": 1 }, "minItems": 2, "maxItems": 2,
        "description": "First and last line, 1-based." });
    let symbol = json!({ "type": "object", "required": ["name"], "properties": {
        "change": defaulted(json!({ "enum": ["added", "removed", "modified", "renamed", "moved"] }), "modified"),
        "kind": defaulted(json!({ "enum": ["fn", "struct", "enum", "union", "class", "interface", "trait", "impl",
            "mod", "namespace", "const", "type", "macro"] }), "fn"),
        "name": { "type": "string", "description": "Qualified name (`Flags::new`, `Client.get`)." },
        "from": defaulted(json!({ "type": "string", "description": "Old name (renamed, moved)." }), "null"),
        "fromPath": defaulted(json!({ "type": "string", "description": "File it moved from." }), "null"),
        "added": defaulted(count(), "0"),
        "removed": defaulted(count(), "0"),
        "newLines": defaulted(range.clone(), "null (removed)"),
        "oldLines": defaulted(range, "newLines; null when added"),
        "signatureChanged": defaulted(json!({ "type": "boolean" }), "false") } });
    // Only `path` is required: a configured gateway's answer (`source: "fluxgit-gateway"`) carries its own
    // per-file fields (`fallbackToText`, `hunks`).
    let file = json!({ "type": "object", "required": ["path"], "properties": {
        "path": { "type": "string" },
        "from": defaulted(json!({ "type": "string" }), "null"),
        "status": defaulted(json!({ "enum": ["added", "modified", "deleted", "renamed", "copied", "type-change",
            "unmerged"] }), "modified"),
        "language": defaulted(json!({ "enum": ["rust", "python", "javascript", "typescript", "tsx", "go", "java",
            "c", "cpp"] }), "the extension's (set by .gitattributes)"),
        "additions": defaulted(count(), "the sum over symbols and topLevel; 0 for a fallback"),
        "deletions": defaulted(count(), "as additions"),
        "fallback": defaulted(json!({ "enum": ["unsupported_language", "parse_errors", "too_large", "binary",
            "time_budget", "too_deep", "submodule", "unmerged", "unreadable"], "description": "Why it was left to diff.text." }),
            "null (parsed)"),
        "errorRatio": defaulted(json!({ "type": "number", "minimum": 0, "maximum": 1,
            "description": "Share of error nodes (parse_errors)." }), "null"),
        "topLevel": defaulted(lines, "null (none)"),
        "symbols": opt_list(symbol) } });
    let mut properties = selection_properties();
    properties.insert("changedFiles".to_owned(), defaulted(count(), "the length of files and noGrammar (uncut)"));
    properties.insert("fallbackFiles".to_owned(), defaulted(count(), "as changedFiles, the files with fallback"));
    properties.insert("files".to_owned(), opt_list(file));
    properties.insert(
        "noGrammar".to_owned(),
        defaulted(
            json!({ "type": "array", "items": { "type": "string" }, "description": "Modified files in a language \
            without a grammar, as `path +added -removed`: unsupported_language fallbacks." }),
            "empty",
        ),
    );
    let data = json!({ "type": "object", "required": ["supported"], "properties": properties });
    FnTool {
        handler: call_semantic,
        cache: Cache::until_any_change(),
        definition: ToolDefinition {
            name: "diff.semantic",
            title: "Changed symbols",
            description: "The functions, types and constants a selection (as diff.text) adds, removes, modifies, \
            renames or moves, with lines changed inside each. Files it cannot parse are named with a reason; \
            their patch is in diff.text.",
            input_schema: inputs(),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

/// `diff.semanticFallbacks`.
pub fn semantic_fallbacks() -> FnTool {
    let mut record = fallback_schema();
    record["required"] = json!(["path", "reason"]);
    record["properties"]["path"] = json!({ "type": "string" });
    record["properties"]["additions"] = defaulted(count(), "0");
    record["properties"]["deletions"] = defaulted(count(), "0");
    let mut properties = selection_properties();
    properties.insert("changedFiles".to_owned(), count());
    properties.insert("fallbacks".to_owned(), opt_list(record));
    let data = json!({ "type": "object", "required": ["supported", "changedFiles"], "properties": properties });
    FnTool {
        handler: call_fallbacks,
        cache: Cache::until_any_change(),
        definition: ToolDefinition {
            name: "diff.semanticFallbacks",
            title: "Files diff.semantic leaves to diff.text",
            description: "The changed files of a selection that diff.semantic cannot parse, each with its reason \
            and line counts. Read their patch with diff.text and the same selection.",
            input_schema: inputs(),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_answers_are_taken_only_in_the_expected_shape() {
        let object = |value: Value| value.as_object().cloned().expect("an object");
        assert!(checked_answer(object(json!({ "supported": false }))).is_none());
        assert!(checked_answer(object(json!({ "supported": true }))).is_none());
        assert!(checked_answer(object(json!({ "supported": true, "files": [{ "hunks": [] }] }))).is_none());
        let good = json!({ "supported": true, "files": [{ "path": "a.kt" }] });
        assert_eq!(checked_answer(object(good.clone())), Some(good));
    }
}
