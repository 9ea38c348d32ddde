//! The conflict family: `conflict.read` (the active conflict as data) and `repo.conflictPreflight` (merge and rebase
//! predicted in memory). Each handler maps arguments to one engine call and wraps the result in the envelope.

use fluxgit_engine::conflict::{preflight, read};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::tools::call::{Format, parse, run_formatted};
use crate::tools::schema::{self, count, defaulted, opt_count, opt_flag, opt_list, opt_string};
use crate::tools::{Cache, CallContext, FnTool, ProtocolError, ToolDefinition, ToolOutput};

/// `conflict.read`'s default budget in tokens.
pub const READ_DEFAULT_TOKENS: u64 = 8000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadArgs {
    repo_path: String,
    max_files: Option<usize>,
    max_bytes_per_side: Option<usize>,
    #[serde(default)]
    sides: bool,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

fn line_span() -> Value {
    json!({ "type": "object", "required": ["start", "count"],
        "properties": { "start": count(), "count": count() } })
}

fn marker_regions() -> Value {
    opt_list(json!({ "type": "object", "required": ["start", "end", "ours", "theirs"],
        "properties": { "start": count(), "end": count(), "ours": line_span(),
            "base": defaulted(line_span(), "null (merge style: no base section)"),
            "theirs": line_span(), "oursLabel": opt_string(), "baseLabel": opt_string(),
            "theirsLabel": opt_string() } }))
}

/// Regions as `conflict.read` gives them: the marker spans plus the text of the sides and the context.
fn read_regions() -> Value {
    let text = |what: &str| defaulted(json!({ "type": "string", "description": what }), "empty");
    opt_list(json!({ "type": "object", "required": ["start", "end", "ours", "theirs"],
        "properties": { "start": count(), "end": count(), "ours": line_span(),
            "base": defaulted(line_span(), "null (merge style: no base section)"),
            "theirs": line_span(), "oursLabel": opt_string(), "baseLabel": opt_string(),
            "theirsLabel": opt_string(),
            "before": text("Up to 3 lines above the `<<<<<<<` line."),
            "oursText": text("Our side's lines."),
            "baseText": defaulted(json!({ "type": "string", "description": "The base's lines." }),
                "null (merge style)"),
            "theirsText": text("Their side's lines."),
            "after": text("Up to 3 lines below the `>>>>>>>` line."),
            "truncated": opt_flag() } }))
}

/// A commit that changes some of the conflicted paths.
fn touching_commits() -> Value {
    opt_list(json!({ "type": "object", "required": ["sha", "subject", "paths"], "properties": {
        "sha": { "type": "string" }, "subject": { "type": "string" },
        "paths": { "type": "array", "items": { "type": "string" } } } }))
}

fn commit() -> Value {
    json!({ "type": "object", "required": ["sha", "subject"],
        "properties": { "sha": { "type": "string" }, "subject": { "type": "string" } } })
}

/// `conflict.read`.
pub fn read() -> FnTool {
    let producer = defaulted(
        json!({ "type": "object", "required": ["role", "sha", "subject"], "properties": {
        "role": { "type": "string" }, "sha": { "type": "string" }, "subject": { "type": "string" } } }),
        "null (unknown)",
    );
    let side = defaulted(
        json!({ "type": "object", "required": ["oid", "size"], "properties": {
        "oid": { "type": "string", "description": "Abbreviated as `git ls-files -u --abbrev` does." },
        "mode": defaulted(json!({ "type": "string" }), "100644 (a regular file)"), "size": count(),
        "binary": opt_flag(), "submodule": opt_flag(), "nonUtf8": opt_flag(),
        "truncated": opt_flag(), "contentOmitted": opt_flag(),
        "content": defaulted(json!({ "type": "string" }), "null (binary, submodule or cut)") } }),
        "null (stage absent)",
    );
    let file = json!({ "type": "object", "required": ["path", "status", "workTree"],
        "properties": {
            "path": { "type": "string" },
            "status": { "enum": ["both-modified", "both-added", "added-by-us", "added-by-them", "deleted-by-us",
                "deleted-by-them", "both-deleted"] },
            "base": side, "ours": side, "theirs": side,
            "workTree": { "type": "object", "required": ["markerSize"],
                "properties": { "exists": opt_flag(), "size": opt_count(), "binary": opt_flag(),
                    "markerSize": count(), "regionCount": opt_count(), "regions": read_regions() } } } });
    let data = json!({
        "type": "object",
        "properties": {
            "conflict": opt_flag(),
            "message": defaulted(json!({ "type": "string", "description": "Why there is no conflict." }), "null (a conflict)"),
            "operation": defaulted(json!({ "enum": ["merge", "rebase", "cherry-pick", "revert", "am", "bisect", "stash-apply"] }),
                "null (no operation)"),
            "evidence": opt_string(),
            "progress": defaulted(json!({ "type": "object", "description": "A rebase's commands as `git status` \
                counts them: `done` (the stopped one included) and `remaining` (after it); `step` = done, `total` = \
                done + remaining. A cherry-pick or revert sequence: `remaining` after the stopped pick.",
                "properties": { "step": opt_count(), "total": opt_count(), "done": opt_count(),
                "remaining": opt_count() } }), "null (no progress known)"),
            "conclude": defaulted(json!({ "type": "string",
                "description": "The git commands that conclude the operation once resolved." }), "null (no operation)"),
            "abort": defaulted(json!({ "type": "string",
                "description": "The git command that aborts it (a stash apply has none: it says so)." }),
                "null (no operation)"),
            "upcoming": touching_commits(),
            "ours": producer, "theirs": producer,
            "conflictedFiles": opt_count(),
            "files": defaulted(json!({ "type": "array", "maxItems": 200, "items": file }), "empty")
        }
    });
    FnTool {
        handler: call_read,
        cache: Cache::until_any_change(),
        definition: ToolDefinition {
            name: "conflict.read",
            title: "Read the active conflict",
            description: "The conflict in progress as data: the operation and its progress, the git commands that \
                conclude or abort it, and per unmerged file each conflict region's ours, theirs (and base) lines with \
                context. Whole sides only with `sides: true`.",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "maxFiles": schema::integer(1, 200, 20, "Most unmerged files described; the count stays exact."),
                    "maxBytesPerSide": schema::integer(1, read::MAX_BYTES_PER_SIDE as u64, 16 * 1024,
                        "Most bytes of each region's text and of each whole side (up to 1 MiB); the full size is \
                        always reported."),
                    "sides": { "type": "boolean", "default": false,
                        "description": "Add each stage's whole blob after the regions (capped, and cut first by the budget)." },
                    "maxTokens": schema::max_tokens(500, 200_000, READ_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &["repoPath"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_read(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: ReadArgs = parse(arguments)?;
    let defaults = read::Options::default();
    let options = read::Options {
        max_files: args.max_files.unwrap_or(defaults.max_files),
        max_bytes_per_side: args.max_bytes_per_side.unwrap_or(defaults.max_bytes_per_side),
        sides: args.sides,
    };
    let max_tokens = args.max_tokens.unwrap_or(READ_DEFAULT_TOKENS as usize);
    run_formatted(
        ctx,
        "conflict.read",
        &args.repo_path,
        args.format,
        fluxgit_engine::render::conflict_read,
        |repo, measure| ctx.engine.conflict_read(repo, &options, max_tokens, measure),
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PreflightArgs {
    repo_path: String,
    target_ref: String,
    current_ref: Option<String>,
    max_paths: Option<usize>,
    #[serde(default)]
    format: Format,
}

/// `repo.conflictPreflight`.
pub fn preflight() -> FnTool {
    let conflicts = opt_list(json!({ "type": "object", "required": ["path", "kind"], "properties": {
        "path": { "type": "string" },
        "kind": { "enum": ["content", "add/add", "modify/delete", "rename/delete", "rename/rename", "binary",
            "submodule", "file/directory", "distinct types", "unknown"] },
        "renamedFrom": opt_string(), "regionCount": opt_count(), "regions": marker_regions() } }));
    let side = json!({ "type": "object", "required": ["ref", "sha", "subject"], "properties": {
        "ref": { "type": "string" }, "sha": { "type": "string" }, "subject": { "type": "string" } } });
    let data = json!({
        "type": "object",
        "required": ["prediction", "note", "current", "target", "mergeBases", "merge", "rebase"],
        "properties": {
            "inProgress": defaulted(json!({ "type": "object", "required": ["operation", "evidence", "message"],
                "description": "Said first: an operation Git stopped in the middle of, read from the state files \
                git writes (`MERGE_HEAD`, `rebase-merge/`, `rebase-apply/`, `CHERRY_PICK_HEAD`, `REVERT_HEAD`, \
                `BISECT_LOG`). The prediction starts from the commits as they are, not from its unfinished result.",
                "properties": {
                    "operation": { "enum": ["merge", "rebase", "cherry-pick", "revert", "am", "bisect", "stash-apply"] },
                    "evidence": { "type": "string", "description": "The state file, or why it was inferred." },
                    "unmerged": opt_count(),
                    "message": { "type": "string", "description": "What is in progress and what finishes or undoes it." }
                } }), "null (no operation in progress)"),
            "prediction": { "const": true }, "note": { "type": "string" },
            "current": side, "target": side,
            "mergeBases": { "type": "array", "items": { "type": "string" } },
            "shallow": schema::shallow("merge bases (histories forked beyond it are unrelated, as for git)"),
            "merge": { "type": "object", "required": ["status"], "properties": {
                "status": { "enum": ["clean", "conflicted", "up-to-date", "fast-forward", "unrelated-histories"] },
                "conflictCount": opt_count(), "conflicts": conflicts.clone() } },
            "rebase": { "type": "object", "required": ["status"],
                "properties": {
                    "status": { "enum": ["clean", "stops", "up-to-date", "fast-forward", "too-many-commits"] },
                    "commits": opt_count(), "skippedMerges": opt_count(), "becomeEmpty": opt_count(),
                    "stopsAt": defaulted(json!({ "type": "object",
                        "required": ["step", "total", "commit", "reason", "conflictCount", "conflicts"],
                        "properties": { "step": count(), "total": count(), "commit": commit(),
                            "reason": { "type": "string" }, "conflictCount": count(), "conflicts": conflicts,
                            "laterCommits": touching_commits() } }),
                        "null (the rebase does not stop)") } },
            "caveats": opt_list(json!({ "type": "string" }))
        }
    });
    FnTool {
        handler: call_preflight,
        cache: Cache::Never,
        definition: ToolDefinition {
            name: "repo.conflictPreflight",
            title: "Predict merge and rebase conflicts",
            description: "Predicts, without writing anything, whether merging `targetRef` into `currentRef` or rebasing onto \
                it would conflict, and in which paths and lines. Call it before proposing a merge or rebase.",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "targetRef": { "type": "string", "minLength": 1, "maxLength": 1024,
                        "description": "The revision merged in, or rebased onto (e.g. `main`, `origin/main`)." },
                    "currentRef": { "type": "string", "minLength": 1, "maxLength": 1024, "default": "HEAD",
                        "description": "The revision that receives the merge or is rebased." },
                    "maxPaths": schema::integer(1, 1000, 100,
                        "Most conflicting paths listed per prediction; counts stay exact."),
                    "format": schema::format(),
                }),
                &["repoPath", "targetRef"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_preflight(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: PreflightArgs = parse(arguments)?;
    let options = preflight::Options { max_paths: args.max_paths.unwrap_or(preflight::Options::default().max_paths) };
    let current = args.current_ref.unwrap_or_else(|| "HEAD".to_owned());
    let render = fluxgit_engine::render::conflict_preflight;
    run_formatted(ctx, "repo.conflictPreflight", &args.repo_path, args.format, render, |repo, _measure| {
        ctx.engine.conflict_preflight(repo, &args.target_ref, &current, &options)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn schemas_bound_the_issue_inputs() {
        let read = super::read();
        let properties = &read.definition.input_schema["properties"];
        assert_eq!(properties["maxFiles"]["minimum"], 1);
        assert_eq!(properties["maxFiles"]["maximum"], 200);
        assert_eq!(properties["maxBytesPerSide"]["maximum"], 1024 * 1024);
        let preflight = super::preflight();
        assert_eq!(preflight.definition.input_schema["required"], serde_json::json!(["repoPath", "targetRef"]));
    }
}
