//! `diff.semantic` and `diff.semanticFallbacks` (SPEC §5, hybrid): a semantic diff only where the gateway's engine
//! really produced one. Without a gateway, or when it fails or answers malformed data, the result is the local
//! fallback object pointing at `diff.text`; files the engine could not parse keep `fallbackToText: true`, a reason and
//! `textDiffArguments`. Hunks are never synthesised here.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::bridge::reads::Fetched;
use crate::envelope::Frame;
use crate::tools::repo::parse;
use crate::tools::schema::{self, count};
use crate::tools::{CallContext, ProtocolError, Tool, ToolDefinition, ToolOutput};

/// The reason of the local fallback, word for word from SPEC §5.
pub const LOCAL_FALLBACK_REASON: &str = "Semantic diff is not available in local sidecar fallback mode.";

/// Which of the two tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Diff,
    Fallbacks,
}

/// `diff.semantic` or `diff.semanticFallbacks`.
pub struct SemanticTool {
    definition: ToolDefinition,
    kind: Kind,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Args {
    repo_path: String,
    base: Option<String>,
    head: Option<String>,
    path: Option<String>,
}

impl Tool for SemanticTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
        let name = self.definition.name;
        let args: Args = parse(arguments)?;
        let unresolved = Frame::gateway(name, true, None);
        let repo = match ctx.resolve(&args.repo_path) {
            Ok(repo) => repo,
            Err(error) => return unresolved.engine_error(error),
        };
        let local = Frame::local(name, &repo.location);
        if let Err(error) = check(ctx, &repo, &args) {
            return local.engine_error(error);
        }
        let mut request = json!({ "repoPath": repo.location.root.display().to_string() });
        for (key, value) in [("base", &args.base), ("head", &args.head), ("path", &args.path)] {
            if let Some(value) = value {
                request[key] = Value::from(value.as_str());
            }
        }
        let fallback = |reason: &str, gateway_reason: Option<&str>| {
            let mut data = json!({ "supported": false, "fallback": "diff.text", "reason": reason,
                "textDiffArguments": request });
            if let Some(gateway_reason) = gateway_reason {
                data["gatewayReason"] = Value::from(gateway_reason);
            }
            data
        };
        let answer = match ctx.bridge.fetch("/v1/mcp/diff/semantic", Some(&request)) {
            Fetched::NotConfigured => return Ok(local.data_output(&fallback(LOCAL_FALLBACK_REASON, None))),
            Fetched::Failed { reason, message } => {
                let text = format!("{LOCAL_FALLBACK_REASON} The gateway gave no semantic diff: {message}");
                return Ok(local.data_output(&fallback(&text, Some(&reason))));
            }
            Fetched::Answer(answer) => answer,
        };
        let gateway = Frame::gateway(name, true, Some(&repo.location));
        match checked_answer(answer, &request) {
            Ok(Value::Object(answer)) if answer.get("supported") == Some(&Value::Bool(true)) => {
                Ok(gateway.data_output(&self.shape(answer)))
            }
            Ok(Value::Object(answer)) => {
                let reason = answer.get("reason").and_then(Value::as_str).unwrap_or(LOCAL_FALLBACK_REASON);
                Ok(gateway.data_output(&fallback(reason, None)))
            }
            Ok(_) => Ok(local.data_output(&fallback(LOCAL_FALLBACK_REASON, Some("malformed_reply")))),
            Err(problem) => {
                let text = format!("{LOCAL_FALLBACK_REASON} The gateway's semantic answer was malformed: {problem}");
                Ok(local.data_output(&fallback(&text, Some("malformed_reply"))))
            }
        }
    }
}

impl SemanticTool {
    /// The data of a `supported: true` answer: the whole answer for `diff.semantic`; for `diff.semanticFallbacks`
    /// the engine's per-file fallback records only.
    fn shape(&self, answer: Map<String, Value>) -> Value {
        if self.kind == Kind::Diff {
            return Value::Object(answer);
        }
        let files = answer.get("files").and_then(Value::as_array).cloned().unwrap_or_default();
        let fallbacks: Vec<Value> = files
            .into_iter()
            .filter(|file| file["fallbackToText"] == Value::Bool(true))
            .map(|file| json!({ "path": file["path"], "reason": file["reason"], "textDiffArguments": file["textDiffArguments"] }))
            .collect();
        json!({ "supported": true, "engine": answer.get("engine"), "fallbacks": fallbacks,
            "changedFiles": answer.get("changedFiles"), "filesTruncated": answer.get("filesTruncated") })
    }
}

/// The revisions and path are checked locally before anything is sent (SPEC §4.4).
fn check(ctx: &CallContext<'_>, repo: &fluxgit_engine::Repo, args: &Args) -> fluxgit_engine::Result<()> {
    if let Some(base) = &args.base {
        ctx.engine.resolve_commit(repo, base)?;
    }
    if let Some(head) = args.head.as_deref().filter(|head| !matches!(*head, "INDEX" | "WORKTREE")) {
        ctx.engine.resolve_commit(repo, head)?;
    }
    if let Some(path) = &args.path {
        fluxgit_engine::repository::check_relative_path(path)?;
    }
    Ok(())
}

/// Checks a gateway answer's shape; a `supported: true` answer must list files, each either with hunks or falling
/// back to text (which then gets a reason and `textDiffArguments` if the gateway left them out).
fn checked_answer(mut answer: Map<String, Value>, request: &Value) -> Result<Value, String> {
    match answer.get("supported") {
        Some(Value::Bool(false)) => return Ok(Value::Object(answer)),
        Some(Value::Bool(true)) => {}
        _ => return Err("`supported` is not a boolean".to_owned()),
    }
    let Some(files) = answer.get_mut("files").and_then(Value::as_array_mut) else {
        return Err("`files` is not a list".to_owned());
    };
    for file in files.iter_mut() {
        let Some(file) = file.as_object_mut() else { return Err("a file entry is not an object".to_owned()) };
        let Some(path) = file.get("path").and_then(Value::as_str).map(str::to_owned) else {
            return Err("a file entry has no path".to_owned());
        };
        match file.get("fallbackToText") {
            Some(Value::Bool(true)) => {
                file.remove("hunks");
                file.entry("reason").or_insert_with(|| Value::from("The semantic engine gave no reason."));
                file.entry("textDiffArguments").or_insert_with(|| {
                    let mut arguments = request.clone();
                    arguments["path"] = Value::from(path);
                    arguments
                });
            }
            Some(Value::Bool(false)) if file.get("hunks").is_some_and(Value::is_array) => {}
            _ => return Err(format!("file {path:?} has neither hunks nor fallbackToText: true")),
        }
    }
    let changed = answer.get("files").and_then(Value::as_array).map_or(0, Vec::len);
    answer.entry("changedFiles").or_insert_with(|| Value::from(changed));
    answer.entry("filesTruncated").or_insert(Value::Bool(false));
    Ok(Value::Object(answer))
}

fn inputs() -> Value {
    let revision =
        |description: &str| json!({ "type": "string", "minLength": 1, "maxLength": 1024, "description": description });
    schema::input(
        json!({
            "repoPath": schema::repo_path(),
            "base": revision("Base revision (as diff.text)."),
            "head": revision("Head revision, or `INDEX` / `WORKTREE` (as diff.text)."),
            "path": { "type": "string", "minLength": 1, "maxLength": 4096, "description": "Repo-relative path (no `..`)." },
        }),
        &["repoPath"],
    )
}

fn text_arguments() -> Value {
    json!({ "type": "object", "required": ["repoPath"], "properties": { "repoPath": { "type": "string" },
        "base": { "type": "string" }, "head": { "type": "string" }, "path": { "type": "string" } } })
}

/// `diff.semantic`.
pub fn semantic() -> SemanticTool {
    let line = json!({ "type": "object", "properties": { "type": { "type": "string" }, "oldLine": {}, "newLine": {},
        "content": {}, "oldContent": {}, "changedTokens": {}, "oldChangedTokens": {} } });
    let file = json!({ "type": "object", "required": ["path", "fallbackToText"], "properties": {
        "path": { "type": "string" }, "fallbackToText": { "type": "boolean" }, "reason": { "type": "string" },
        "textDiffArguments": text_arguments(),
        "hunks": { "type": "array", "items": { "type": "object", "properties": { "header": { "type": "string" },
            "lines": { "type": "array", "items": line } } } } } });
    let data = json!({ "type": "object", "required": ["supported"], "properties": {
        "supported": { "type": "boolean" }, "fallback": { "const": "diff.text" }, "reason": { "type": "string" },
        "gatewayReason": { "type": "string" }, "textDiffArguments": text_arguments(), "engine": {},
        "files": { "type": "array", "items": file }, "changedFiles": count(), "filesTruncated": { "type": "boolean" } } });
    SemanticTool {
        kind: Kind::Diff,
        definition: ToolDefinition {
            name: "diff.semantic",
            title: "Semantic diff (gateway engine, else text fallback)",
            description: "Structure-aware diff from the gateway's semantic engine: per file, hunks whose lines carry \
            old/new line numbers and the changed tokens. Files the engine could not parse carry `fallbackToText: \
            true`, a reason and `textDiffArguments`. Without a gateway (or when it fails) the result is \
            `supported: false` with `textDiffArguments` ready for diff.text. A result is semantic only when \
            `data.supported` is exactly `true`; a text patch never shows function or class moves.",
            input_schema: inputs(),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

/// `diff.semanticFallbacks`.
pub fn semantic_fallbacks() -> SemanticTool {
    let record = json!({ "type": "object", "required": ["path", "reason", "textDiffArguments"], "properties": {
        "path": { "type": "string" }, "reason": { "type": "string" }, "textDiffArguments": text_arguments() } });
    let data = json!({ "type": "object", "required": ["supported"], "properties": {
        "supported": { "type": "boolean" }, "fallback": { "const": "diff.text" }, "reason": { "type": "string" },
        "gatewayReason": { "type": "string" }, "textDiffArguments": text_arguments(), "engine": {},
        "fallbacks": { "type": "array", "items": record }, "changedFiles": {}, "filesTruncated": {} } });
    SemanticTool {
        kind: Kind::Fallbacks,
        definition: ToolDefinition {
            name: "diff.semanticFallbacks",
            title: "Files the semantic engine could not parse",
            description: "The semantic engine's real per-file fallback records for a selection (path, reason, \
            `textDiffArguments` for diff.text), from the gateway. Without a gateway (or when it fails): \
            `supported: false` and `textDiffArguments` for the whole selection. A result is semantic only when \
            `data.supported` is exactly `true`.",
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
    fn malformed_answers_are_refused_and_fallback_files_completed() {
        let request = json!({ "repoPath": "/r", "base": "main" });
        let object = |value: Value| value.as_object().cloned().expect("an object");
        assert!(checked_answer(object(json!({ "supported": "yes" })), &request).is_err());
        assert!(checked_answer(object(json!({ "supported": true })), &request).is_err());
        let no_hunks = json!({ "supported": true, "files": [{ "path": "a.rs", "fallbackToText": false }] });
        assert!(checked_answer(object(no_hunks), &request).is_err());
        let fallback =
            json!({ "supported": true, "files": [{ "path": "a.bin", "fallbackToText": true, "hunks": [] }] });
        let checked = checked_answer(object(fallback), &request).expect("well formed");
        let file = &checked["files"][0];
        assert!(file.get("hunks").is_none(), "no hunks for a file that fell back");
        assert_eq!(file["textDiffArguments"], json!({ "repoPath": "/r", "base": "main", "path": "a.bin" }));
        assert_eq!((checked["changedFiles"].as_u64(), checked["filesTruncated"].as_bool()), (Some(1), Some(false)));
    }
}
