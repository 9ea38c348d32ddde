//! `repo.search` (ours): commits by message words, author, path and time, from the engine's commit index, or by
//! content (`added`/`addedRegex`, git's pickaxe) from a walk. The
//! handler maps arguments to one engine call and wraps the result in the envelope.

use fluxgit_engine::search;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::tools::call::{Format, parse, run_formatted};
use crate::tools::schema::{self, count, defaulted, opt_list};
use crate::tools::{Cache, CallContext, FnTool, ProtocolError, ToolDefinition, ToolOutput};

/// `repo.search`'s default budget in tokens: a default page of 20 matches fits.
pub const SEARCH_DEFAULT_TOKENS: u64 = 3000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SearchArgs {
    repo_path: String,
    query: Option<String>,
    author: Option<String>,
    path: Option<String>,
    since: Option<String>,
    until: Option<String>,
    #[serde(rename = "ref")]
    start: Option<String>,
    limit: Option<usize>,
    sort: Option<SortArg>,
    added: Option<String>,
    added_regex: Option<String>,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum SortArg {
    Relevance,
    Newest,
}

fn time(description: &str) -> Value {
    json!({ "type": "string", "minLength": 10, "maxLength": 64, "description": description })
}

/// `repo.search`.
pub fn search() -> FnTool {
    let commit = json!({ "type": "object", "required": ["sha", "author", "time", "subject"], "properties": {
        "sha": { "type": "string", "description": "Abbreviated as `git log --oneline` does." },
        "author": { "type": "string", "description": "\"Name <email>\" through `.mailmap`, as `git log --format='%aN <%aE>'`." },
        "time": { "type": "string", "description": "Author date, ISO 8601 with the author's offset." },
        "subject": { "type": "string" },
        "files": opt_list(json!({ "type": "string" })) } });
    let data = json!({
        "type": "object",
        "required": ["total"],
        "properties": {
            "total": count(),
            "commits": opt_list(commit),
            "walked": defaulted(json!({ "type": "string" }),
                "null (the commit index answered; otherwise why the history was walked: an explicit `ref`, or the index is being built)"),
            "stopped": defaulted(json!({ "type": "string" }), "null (every commit examined)"),
            "skipped": defaulted(json!({ "type": "string" }), "null (no file too large)"),
        }
    });
    FnTool {
        handler: call_search,
        cache: Cache::Never,
        definition: ToolDefinition {
            name: "repo.search",
            title: "Search commits",
            description: "Commits whose message contains every word and \"quoted phrase\" of `query`, optionally by author, \
                path, date range or ref; `query` may be left out when another filter narrows. Best matches first \
                with a query, newest first without (`sort` chooses). `added`/`addedRegex` search diffs instead \
                (git log -S/-G, walked within a time budget).",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "query": { "type": "string", "minLength": 1, "maxLength": 1024,
                        "description": "Words and \"quoted phrases\", all required, e.g. `retry \"back off\"`. Optional with `author`, `path`, `since` or `until`." },
                    "author": { "type": "string", "minLength": 1, "maxLength": 256,
                        "description": "Only commits whose author \"Name <email>\", as recorded or through `.mailmap`, contains this (case-insensitive)." },
                    "path": { "type": "string", "minLength": 1, "maxLength": 4096,
                        "description": "Only commits changing this repo-relative file or directory (no `..`)." },
                    "since": time("Oldest committer date, inclusive: `YYYY-MM-DD` (midnight UTC) or RFC 3339."),
                    "until": time("Newest committer date, inclusive: `YYYY-MM-DD` (midnight UTC) or RFC 3339."),
                    "ref": { "type": "string", "minLength": 1, "maxLength": 1024,
                        "description": "Search only the history of this revision (walked, slower); default every local branch and HEAD (indexed). Never an option: a leading `-` is refused." },
                    "limit": schema::integer(1, search::MAX_LIMIT as u64, 20, "Most commits listed."),
                    "added": { "type": "string", "minLength": 1, "maxLength": 1024,
                        "description": "Commits changing how often this string occurs in a file (`git log -S`)." },
                    "addedRegex": { "type": "string", "minLength": 1, "maxLength": 1024,
                        "description": "Commits adding or removing a line matching this regex (`git log -G`)." },
                    "sort": { "enum": ["relevance", "newest"],
                        "description": "Order: `relevance` (default with a query) or `newest` committer date first (default without)." },
                    "maxTokens": schema::max_tokens(200, 32000, SEARCH_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &["repoPath"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_search(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: SearchArgs = parse(arguments)?;
    let options = search::Options {
        query: args.query.unwrap_or_default(),
        author: args.author,
        path: args.path,
        since: args.since,
        until: args.until,
        start: args.start,
        limit: args.limit.unwrap_or(20),
        sort: args.sort.map(|sort| match sort {
            SortArg::Relevance => search::Sort::Relevance,
            SortArg::Newest => search::Sort::Newest,
        }),
        added: args.added,
        added_regex: args.added_regex,
        time_budget: None,
    };
    let max_tokens = args.max_tokens.unwrap_or(SEARCH_DEFAULT_TOKENS as usize);
    run_formatted(ctx, "repo.search", &args.repo_path, args.format, fluxgit_engine::render::search, |repo, measure| {
        ctx.engine.search(repo, &options, max_tokens, measure)
    })
}
