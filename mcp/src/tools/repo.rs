//! The `repo.*` tool family: `repo.brief`, `repo.status`, `repo.refs`. Each handler maps arguments to one engine
//! call and wraps the result in the envelope.

use fluxgit_engine::{brief, render};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::tools::call::{Format, parse, run_formatted};
use crate::tools::schema::{self, change_list, count, defaulted, opt_count, opt_flag, opt_list, opt_string};
use crate::tools::{Cache, CallContext, FnTool, ProtocolError, ToolDefinition, ToolOutput, the_hour};

/// `repo.brief`'s default budget in tokens (design.md#tools).
pub const BRIEF_DEFAULT_TOKENS: u64 = 600;
/// `repo.status`'s default budget in tokens (our addition: design.md#tools gives it no inputs, but a status of 100,000
/// untracked files must still fit a context window).
pub const STATUS_DEFAULT_TOKENS: u64 = 4000;
/// `repo.refs`'s default budget in tokens.
pub const REFS_DEFAULT_TOKENS: u64 = 2000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BriefArgs {
    repo_path: String,
    recent_commits: Option<usize>,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

/// `repo.brief`.
pub fn brief() -> FnTool {
    let hint = json!({ "type": "object", "required": ["tool"], "properties": {
        "tool": { "type": "string", "description": "The tool to call next; only a tool that answers in this \
            configuration (a write proposal only when a gateway is configured)." },
        "arguments": defaulted(json!({ "type": "object",
            "description": "Arguments for `tool` besides repoPath, to pass as given, only those whose default \
            would not do (a proposal also needs your `reason`)." }), "{}"),
        "why": defaulted(json!({ "type": "string", "description": "What the rest of the brief does not say about \
            the situation: the conflicted paths (up to 3, then `+N more`), the commits a branch dropped, a \
            stack's chain." }), "empty (the brief's other fields say it)"),
        "run": defaulted(json!({ "type": "string", "description": "The git commands a person would run to act on \
            it where no tool does, alternatives separated by ` | `, e.g. `git add <path>; git commit | git merge \
            --abort`." }), "empty") } });
    let data = json!({
        "type": "object",
        "properties": {
            "head": defaulted(json!({ "type": "object",
                "properties": { "branch": defaulted(json!({ "type": "string" }), "null (detached)"),
                    "detached": opt_flag(), "unborn": opt_flag(),
                    "sha": defaulted(json!({ "type": "string" }), "null (unborn)"),
                    "upstream": defaulted(json!({ "type": "string" }), "null (no upstream)"),
                    "ahead": opt_count(), "behind": opt_count(), "upstreamGone": opt_flag(),
                    "rebasing": defaulted(json!({ "type": "string", "description": "The branch being rebased." }), "null"),
                    "onto": defaulted(json!({ "type": "string", "description": "Rebase onto: sha [branch]." }), "null"),
                    "shallow": schema::shallow("recent commits and ahead/behind") } }), "none on a folder of checkouts"),
            "operationInProgress": schema::operation(),
            "workingTree": defaulted(schema::counts(), "none on a folder of checkouts"),
            "stashes": opt_count(),
            "submodules": defaulted(json!({ "type": "object",
                "properties": { "total": opt_count(), "clean": opt_count(), "drifted": opt_count(),
                    "uninitialized": opt_count(), "unreadable": opt_count(), "conflicts": opt_count(),
                    "attention": defaulted(json!({ "type": "array", "maxItems": 10, "items": { "type": "string" } }), "empty"),
                    "attentionTruncated": opt_flag() } }), "no submodule"),
            "recentCommits": defaulted(json!({ "type": "array", "maxItems": 20, "items": { "type": "string" },
                "description": "\"<abbreviated sha> <subject>\", newest first, as `git log --oneline`; a subject over 100 \
                characters is cut to 100 and `…` (`repo.history` has it whole)." }), "empty"),
            "conventions": defaulted(json!({ "type": "object",
                "properties": { "conventionalCommitRatio": defaulted(json!({ "type": "number", "minimum": 0, "maximum": 1 }), "null (no commits)"),
                    "defaultBranch": opt_string(),
                    "branchPrefixes": opt_list(json!({ "type": "string" })) } }), "nothing detected"),
            "conflict": defaulted(json!({ "type": "object", "description": "With unmerged paths: conflict_read's answer." }), "null"),
            "lost": defaulted(json!({ "type": "array", "items": { "type": "object" }, "description": "Recent branch movements that \
                left commits no ref holds: branch, action, commits (`sha subject`), more, command (puts them \
                back)." }), "empty"),
            "parentMoved": defaulted(json!({ "type": "object", "description": "repo_branchStack's parentMoved for HEAD's branch." }), "null"),
            "owners": defaulted(json!({ "type": "array", "items": { "type": "object" }, "description": "Changed paths by \
                CODEOWNERS owners: owners, files, more." }), "empty"),
            "fleet": defaulted(json!({ "type": "object", "description": "Only for a folder holding checkouts, not a work tree: \
                fleet_radar's answer for it, and no other field." }), "null (a repository)"),
            "hints": defaulted(json!({ "type": "array", "maxItems": 3, "items": hint }), "empty"),
            "diagnostics": { "type": "object", "required": ["cache"],
                "description": "Only when the repository is not watched (absent: watched, answers never older than \
                the last change before the call): `stat-validated` (FLUXGIT_ENGINE_WATCH_DISABLED, or no watch \
                could be added: git-dir facets checked against file metadata, the work tree read every call) or \
                `off`; `reason` says why. The budget's last priority.",
                "properties": { "cache": { "enum": ["watched", "stat-validated", "off"] },
                    "reason": { "type": "string" } } }
        }
    });
    FnTool {
        handler: call_brief,
        cache: Cache::Kept { reads: Some(fluxgit_engine::brief::READS), also: the_hour },
        definition: ToolDefinition {
            name: "repo.brief",
            title: "Repository brief",
            description: "Start here: the repository's situation in one call (HEAD, upstream ahead/behind, operation in \
                progress with its conflict, work-tree counts, stashes, submodules, recent commits, lost commits, \
                owners of changes) and up to 3 hints, each the tool to call next with its arguments. On a folder of \
                checkouts: which need attention.",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "recentCommits": schema::integer(1, 20, brief::DEFAULT_RECENT_COMMITS as u64, "Recent commits to include, newest first."),
                    "maxTokens": schema::max_tokens(200, 4000, BRIEF_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &["repoPath"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_brief(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: BriefArgs = parse(arguments)?;
    let options = brief::Options {
        recent_commits: args.recent_commits.unwrap_or(brief::DEFAULT_RECENT_COMMITS),
        proposals: ctx.bridge.is_configured(),
        tool_names: crate::tools::listing::spelling(),
        now: crate::config::now_epoch_secs(),
    };
    let max_tokens = args.max_tokens.unwrap_or(BRIEF_DEFAULT_TOKENS as usize);
    // A folder that is no work tree: the radar of the checkouts below it.
    if let Err(fluxgit_engine::Error::Invalid { reason: fluxgit_engine::InvalidReason::NotARepository, .. }) =
        ctx.resolve(&args.repo_path)
    {
        return crate::tools::fleet::run("repo.brief", args.format, render::folder_brief, |measure| {
            ctx.engine.folder_brief(&args.repo_path, options.now, max_tokens, measure)
        });
    }
    run_formatted(ctx, "repo.brief", &args.repo_path, args.format, render::brief, |repo, measure| {
        ctx.engine.brief(repo, &options, max_tokens, measure)
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BudgetArgs {
    repo_path: String,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

/// `repo.status`.
pub fn status() -> FnTool {
    let paths = opt_list(json!({ "type": "string" }));
    let data = json!({
        "type": "object",
        "required": ["head"],
        "properties": {
            "head": schema::head(), "upstream": schema::upstream(), "operationInProgress": schema::operation(),
            "counts": schema::list_counts(), "conflicted": paths, "staged": change_list(), "unstaged": change_list(),
            "untracked": paths,
            "unreadable": schema::unreadable("Submodules (a name git ignores as suspicious, a gitdir that is gone)")
        }
    });
    FnTool {
        handler: call_status,
        cache: Cache::until_change_of(fluxgit_engine::status::READS),
        definition: ToolDefinition {
            name: "repo.status",
            title: "Work-tree status",
            description: "Every dirty path as `git status` lists it (conflicted, staged, unstaged, untracked), with the \
                branch, upstream ahead/behind and the operation in progress.",
            input_schema: schema::input(
                json!({ "repoPath": schema::repo_path(), "maxTokens": schema::max_tokens(200, 32000, STATUS_DEFAULT_TOKENS),
                    "format": schema::format() }),
                &["repoPath"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_status(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: BudgetArgs = parse(arguments)?;
    let max_tokens = args.max_tokens.unwrap_or(STATUS_DEFAULT_TOKENS as usize);
    run_formatted(ctx, "repo.status", &args.repo_path, args.format, render::status, |repo, measure| {
        ctx.engine.status(repo, max_tokens, measure)
    })
}

/// `repo.refs`.
pub fn refs() -> FnTool {
    let named = |extra: Value| {
        let mut properties = json!({ "name": { "type": "string" }, "sha": { "type": "string" } });
        if let (Some(target), Some(extra)) = (properties.as_object_mut(), extra.as_object()) {
            target.extend(extra.clone());
        }
        opt_list(json!({ "type": "object", "required": ["name", "sha"], "properties": properties }))
    };
    let data = json!({
        "type": "object",
        "required": ["head"],
        "properties": {
            "head": schema::head(),
            "counts": defaulted(json!({ "type": "object",
                "properties": { "branches": opt_count(), "remotes": opt_count(), "stashes": opt_count(),
                    "remoteBranches": opt_count(), "tags": opt_count() } }),
                "each list's length (no list cut by the budget)"),
            "branches": named(json!({ "current": opt_flag(), "upstream": schema::upstream(),
                "error": schema::item_error("the branch (e.g. it names an object that does not exist; `sha` is what \
                    the ref file says)") })),
            "remotes": opt_list(json!({ "type": "object", "required": ["name"], "properties": {
                "name": { "type": "string" }, "fetchUrl": opt_string(),
                "pushUrl": defaulted(json!({ "type": "string" }), "null (same as fetchUrl)") } })),
            "stashes": opt_list(json!({ "type": "object", "required": ["index", "sha", "message"],
                "properties": { "index": count(), "sha": { "type": "string" }, "message": { "type": "string" } } })),
            "remoteBranches": named(json!({})),
            "tags": named(json!({ "annotated": opt_flag() })),
            "unreadable": schema::unreadable("Refs (a file that does not parse, a tag or remote branch naming an \
                object that does not exist; git skips them with a warning)")
        }
    });
    FnTool {
        handler: call_refs,
        cache: Cache::until_change_of(fluxgit_engine::refs::READS),
        definition: ToolDefinition {
            name: "repo.refs",
            title: "Branches, tags, remotes and stashes",
            description: "Local branches with upstream ahead/behind, remotes, stashes, remote-tracking branches and tags, \
                newest first; a cut drops old tags before any branch.",
            input_schema: schema::input(
                json!({ "repoPath": schema::repo_path(), "maxTokens": schema::max_tokens(200, 32000, REFS_DEFAULT_TOKENS),
                    "format": schema::format() }),
                &["repoPath"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_refs(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: BudgetArgs = parse(arguments)?;
    let max_tokens = args.max_tokens.unwrap_or(REFS_DEFAULT_TOKENS as usize);
    run_formatted(ctx, "repo.refs", &args.repo_path, args.format, render::refs, |repo, measure| {
        ctx.engine.refs(repo, max_tokens, measure)
    })
}
