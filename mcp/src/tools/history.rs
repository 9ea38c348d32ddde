//! The history tools: `repo.history` (a page of `git log`) and `repo.reflog` (how a ref moved, with recovery
//! hints). Each handler maps arguments to one engine call and wraps the result in the envelope.

use fluxgit_engine::history;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::tools::call::{Format, parse, run_formatted};
use crate::tools::schema::{self, count, defaulted, nullable_string, opt_flag, opt_list};
use crate::tools::{Cache, FnTool};
use crate::tools::{CallContext, ProtocolError, ToolDefinition, ToolOutput};

/// `repo.history`'s default budget in tokens: a full default page of 50 commits fits.
pub const HISTORY_DEFAULT_TOKENS: u64 = 6000;
/// `repo.reflog`'s default budget in tokens.
pub const REFLOG_DEFAULT_TOKENS: u64 = 4000;

fn revision(description: &str) -> Value {
    json!({ "type": "string", "minLength": 1, "maxLength": 1024, "description": description })
}

fn relative_path(description: &str) -> Value {
    json!({ "type": "string", "minLength": 1, "maxLength": 4096, "description": description })
}

fn person() -> Value {
    json!({ "type": "string", "description": "\"Name <email>\" as git recorded it." })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HistoryArgs {
    repo_path: String,
    #[serde(rename = "ref")]
    start: Option<String>,
    path: Option<String>,
    limit: Option<usize>,
    cursor: Option<String>,
    symbol: Option<String>,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

/// `repo.history`.
pub fn history() -> FnTool {
    let commit = json!({ "type": "object", "required": ["sha", "author", "time", "subject"], "properties": {
        "sha": { "type": "string", "description": "Abbreviated as `git log --oneline` does." },
        "parents": defaulted(json!({ "type": "array", "items": { "type": "string" } }),
            "empty (a root commit, or a shallow clone's boundary commit, as `git log --format=%p`)"),
        "shallow": { "type": "boolean", "description": "Present and true on a shallow clone's boundary commit: its \
            parents are absent, history was cut here. Absent means false." },
        "author": { "type": "string",
            "description": "\"Name <email>\" as `.mailmap` maps it, as `git log` shows it (`%aN <%aE>`)." }, "time": { "type": "string" }, "subject": { "type": "string" },
        "path": defaulted(json!({ "type": "string", "description": "With `symbol`: the file's path in this commit \
            (it was renamed since)." }), "null (the page's `path`)"),
        "hunks": defaulted(json!({ "type": "array", "items": { "type": "string" }, "description": "With `symbol`: \
            the hunks that touched the symbol, as git's hunk headers number them (`-12,2 +12,3`: the parent's \
            lines 12-13 became lines 12-14)." }), "empty (no `symbol`)") } });
    let symbol = json!({ "type": "object", "required": ["name", "kind", "lines"], "properties": {
        "name": { "type": "string", "description": "The parser's qualified name (`Flags::new`)." },
        "kind": { "type": "string" },
        "lines": { "type": "string", "description": "The lines followed at `tip`, 1-based: from the line naming \
            it to the one before the next function start by git's funcname rule." } } });
    let data = json!({
        "type": "object",
        "required": ["ref", "tip"],
        "properties": { "ref": { "type": "string" }, "tip": nullable_string(),
            "path": defaulted(json!({ "type": "string" }), "null (no path filter)"),
            "symbol": defaulted(symbol, "null (no `symbol`)"),
            "commits": opt_list(commit), "nextCursor": defaulted(json!({ "type": "string" }), "null (no more pages)"),
            "shallow": schema::shallow("the walk and its pages") }
    });
    FnTool {
        handler: call_history,
        cache: Cache::until_any_change(),
        definition: ToolDefinition {
            name: "repo.history",
            title: "Commit history, paged",
            description: "A page of commits like `git log [ref] [-- path]` (or `-L :symbol:path`), newest first; \
                pass `nextCursor` back as `cursor` for the next page.",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "ref": revision("Where the walk starts (`main`, a sha, `HEAD~3`) or a range as git reads it \
                        (`A..B`, `A...B`). Default HEAD."),
                    "path": relative_path("Only commits changing this repo-relative file or directory (no `..`)."),
                    "symbol": { "type": "string", "maxLength": 256,
                        "description": "A function, type or method in `path` (`Flags::new`): commits \
                        changing it." },
                    "limit": schema::integer(1, 200, 50, "Commits per page."),
                    "cursor": { "type": "string", "minLength": 1, "maxLength": 256,
                        "description": "`nextCursor` of the previous page." },
                    "maxTokens": schema::max_tokens(200, 32000, HISTORY_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &["repoPath"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_history(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: HistoryArgs = parse(arguments)?;
    let options = history::Options {
        start: args.start,
        path: args.path,
        limit: args.limit.unwrap_or(50),
        cursor: args.cursor,
        symbol: args.symbol,
    };
    let max_tokens = args.max_tokens.unwrap_or(HISTORY_DEFAULT_TOKENS as usize);
    run_formatted(
        ctx,
        "repo.history",
        &args.repo_path,
        args.format,
        fluxgit_engine::render::history,
        |repo, measure| ctx.engine.history(repo, &options, max_tokens, measure),
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReflogArgs {
    repo_path: String,
    ref_name: Option<String>,
    limit: Option<usize>,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

/// `repo.reflog`.
pub fn reflog() -> FnTool {
    let recovery = json!({ "type": "object", "required": ["lostTip", "lostCommits", "commits"],
        "properties": { "lostTip": { "type": "string" }, "lostCommits": count(),
            "lostCommitsCapped": opt_flag(),
            "commits": { "type": "array", "items": { "type": "string" }, "description": "The first 5 lost, newest first." },
            "tool": defaulted(json!({ "type": "string", "description": "The proposal that brings it back as a \
                branch (`operation.preview.branch`), named only when a gateway is configured." }),
                "null (no gateway: `command` says what a person runs)"),
            "arguments": defaulted(json!({ "type": "object", "description": "Arguments for `tool`." }),
                "null (no `tool`)"),
            "command": defaulted(json!({ "type": "string", "description": "The git command a person runs: for a \
                branch's movement, one that puts them back on it (`git merge --ff-only <sha>` or `git cherry-pick \
                <base>..<sha>`); else, without a gateway, `git branch recover/<sha> <sha>`." }),
                "null (a `tool` is named instead)") } });
    let movement = json!({ "type": "object",
        "required": ["index", "action", "message", "time", "identity"],
        "properties": { "index": count(), "oldSha": defaulted(json!({ "type": "string" }), "null (the ref was created)"),
            "newSha": defaulted(json!({ "type": "string" }), "null (the ref was deleted)"),
            "action": { "type": "string" }, "message": { "type": "string" }, "time": { "type": "string" },
            "identity": person(), "recovery": defaulted(recovery, "null (nothing was dropped)") } });
    let data = json!({
        "type": "object",
        "required": ["refName", "total"],
        "properties": { "refName": { "type": "string" }, "total": count(), "entries": opt_list(movement) }
    });
    FnTool {
        handler: call_reflog,
        cache: Cache::until_any_change(),
        definition: ToolDefinition {
            name: "repo.reflog",
            title: "Reflog with recovery hints",
            description: "How a ref (default HEAD) moved, newest first like `git reflog`; a movement that dropped commits says \
                how to bring them back.",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "refName": revision("The ref whose log to read: `HEAD` (default), `main`, `refs/heads/x`, ..."),
                    "limit": schema::integer(1, 100, 20, "Newest entries to return."),
                    "maxTokens": schema::max_tokens(200, 32000, REFLOG_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &["repoPath"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_reflog(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: ReflogArgs = parse(arguments)?;
    let limit = args.limit.unwrap_or(20);
    let max_tokens = args.max_tokens.unwrap_or(REFLOG_DEFAULT_TOKENS as usize);
    run_formatted(ctx, "repo.reflog", &args.repo_path, args.format, fluxgit_engine::render::reflog, |repo, measure| {
        let proposals = ctx.bridge.is_configured().then(crate::tools::listing::spelling);
        ctx.engine.reflog(repo, args.ref_name.as_deref(), limit, proposals, max_tokens, measure)
    })
}
