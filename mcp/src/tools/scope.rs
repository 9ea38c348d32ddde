//! `repo.scope`: one subtree's changes, recent commits, churn and code owners. The handler maps arguments to one
//! engine call, with the system clock as the end of the churn window.

use fluxgit_engine::scope;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::tools::call::{Format, parse, run_formatted};
use crate::tools::schema::change_list;
use crate::tools::schema::{self, count, defaulted, opt_count, opt_list};
use crate::tools::{Cache, FnTool};
use crate::tools::{CallContext, ProtocolError, ToolDefinition, ToolOutput};

/// `repo.scope`'s default budget in tokens.
pub const SCOPE_DEFAULT_TOKENS: u64 = 2000;

/// Recent commits listed when `recentCommits` is not given: as many as `repo_brief` lists (an agent asks for more).
const DEFAULT_RECENT_COMMITS: usize = 5;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ScopeArgs {
    repo_path: String,
    path: String,
    churn_days: Option<u32>,
    recent_commits: Option<usize>,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

fn output_schema() -> Value {
    let paths = opt_list(json!({ "type": "string" }));
    let rule = json!({ "type": "object", "required": ["line", "pattern"],
        "properties": { "line": count(), "pattern": { "type": "string" } } });
    let owners = opt_list(json!({ "type": "string" }));
    let author = json!({ "type": "object", "required": ["email", "name", "commits"], "properties": {
        "email": { "type": "string", "description": "As `.mailmap` maps it (git shortlog -se): one person, one entry." },
        "name": { "type": "string" }, "commits": count() } });
    let group = json!({ "type": "object", "required": ["files"],
        "properties": { "rule": defaulted(rule.clone(), "null (no rule matches)"), "owners": owners, "files": count() } });
    let changed = json!({ "type": "object", "required": ["files"],
        "properties": { "owners": owners, "files": { "type": "array", "items": { "type": "string" } } } });
    let error = json!({ "type": "object", "required": ["line", "message"],
        "properties": { "line": count(), "message": { "type": "string" } } });
    schema::envelope(json!({
        "type": "object",
        "required": ["path", "kind", "churn", "allTime", "codeOwners"],
        "properties": {
            "path": { "type": "string" },
            "kind": { "enum": ["file", "directory", "absent"] },
            "workingTree": defaulted(json!({ "type": "object",
                "properties": { "counts": schema::list_counts(), "conflicted": paths, "staged": change_list(),
                    "unstaged": change_list(), "untracked": paths } }), "{} (nothing changed in the subtree)"),
            "recentCommits": defaulted(json!({ "type": "array", "maxItems": 20, "items": { "type": "string" },
                "description": "\"<abbreviated sha> <subject>\", newest first, as `git log --oneline -- path`." }), "empty"),
            "churn": { "type": "object", "required": ["since", "until"],
                "properties": { "since": { "type": "string" }, "until": { "type": "string" }, "commits": opt_count(),
                    "authorCount": opt_count(), "authors": opt_list(author.clone()) } },
            "allTime": { "type": "object", "description": "HEAD's whole history of the path, as `git shortlog -sn HEAD -- path`.",
                "properties": { "commits": opt_count(), "authorCount": opt_count(),
                    "authors": defaulted(json!({ "type": "array", "maxItems": scope::TOP_AUTHORS, "items": author,
                        "description": "The authors with the most commits, one per mapped name (its most used email)." }), "empty") } },
            "codeOwners": { "type": "object",
                "properties": { "file": defaulted(json!({ "type": "string" }), "null (no CODEOWNERS file)"),
                    "rule": defaulted(rule, "null (no rule matches)"), "owners": owners,
                    "trackedFiles": defaulted(count(), "null (a file, not a directory)"), "ownersByRule": opt_list(group),
                    "changed": defaulted(json!({ "type": "array", "items": changed,
                        "description": "A directory's changed paths grouped by their owners." }), "empty"),
                    "errorCount": opt_count(), "errors": opt_list(error) } },
            "shallow": schema::shallow("recent commits and churn")
        }
    }))
}

/// `repo.scope`.
pub fn scope() -> FnTool {
    FnTool {
        handler: call_scope,
        cache: Cache::Never,
        definition: ToolDefinition {
            name: "repo.scope",
            title: "Subtree scope: changes, history, churn, owners",
            description: "Call before editing a file or directory: its uncommitted changes, the recent commits touching it, \
                churn per author over `churnDays`, who wrote it over all history, and its CODEOWNERS owners (per changed file).",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "path": { "type": "string", "minLength": 1, "maxLength": 4096,
                        "description": "Repository-relative file or directory (`.` for the whole repository); \
                        not absolute, no `..`. A path at none of HEAD, the work tree and the index is invalid \
                        params `not_found`." },
                    "churnDays": schema::integer(1, 36_500, 90, "Churn window: days before now (36500: the whole history)."),
                    "recentCommits": schema::integer(1, 20, DEFAULT_RECENT_COMMITS as u64, "Recent commits touching the path to list."),
                    "maxTokens": schema::max_tokens(200, 32000, SCOPE_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &["repoPath", "path"],
            ),
            output_schema: output_schema(),
            read_only: true,
        },
    }
}

fn call_scope(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: ScopeArgs = parse(arguments)?;
    let now = crate::config::now_epoch_secs();
    let options = scope::Options {
        path: args.path,
        churn_days: args.churn_days.unwrap_or(90),
        recent_commits: args.recent_commits.unwrap_or(DEFAULT_RECENT_COMMITS),
        now,
    };
    let max_tokens = args.max_tokens.unwrap_or(SCOPE_DEFAULT_TOKENS as usize);
    run_formatted(ctx, "repo.scope", &args.repo_path, args.format, fluxgit_engine::render::scope, |repo, measure| {
        ctx.engine.scope(repo, &options, max_tokens, measure)
    })
}
