//! The shape around the work tree: `repo.branchStack`, `worktree.list` and `submodule.status`. Each handler maps
//! arguments to one engine call and wraps the result in the envelope.

use fluxgit_engine::{Budgeted, branch_stack};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::tools::call::{Format, parse, run_formatted};
use crate::tools::schema::{self, defaulted, opt_count, opt_flag, opt_list, opt_string};
use crate::tools::{Cache, FnTool};
use crate::tools::{CallContext, ProtocolError, ToolDefinition, ToolOutput};

fn whole<T>(data: T) -> Budgeted<T> {
    Budgeted { data, omitted: Default::default() }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BranchStackArgs {
    repo_path: String,
    base_candidates: Option<Vec<String>>,
    max_related: Option<usize>,
    branch: Option<String>,
    #[serde(default)]
    format: Format,
}

/// `repo.branchStack`.
pub fn branch_stack() -> FnTool {
    let ahead = |other: &str| {
        defaulted(
            json!({ "type": "integer", "minimum": 0, "description": format!("Commits the examined branch has \
            that {other} lacks (`git rev-list --count {other}..<branch>`).") }),
            "0",
        )
    };
    let behind = |other: &str| {
        defaulted(
            json!({ "type": "integer", "minimum": 0, "description": format!("Commits {other} has that the \
            examined branch lacks (`git rev-list --count <branch>..{other}`).") }),
            "0",
        )
    };
    let related = json!({ "type": "object", "required": ["name", "sha", "relation", "lastCommit"],
        "properties": { "name": { "type": "string" }, "sha": { "type": "string" },
            "relation": { "enum": ["currentStackedOn", "stackedOnCurrent", "sharesBase"], "description": "\
                `currentStackedOn`: the examined branch is built on it; `stackedOnCurrent`: it is built on the \
                examined branch; `sharesBase`: it left the base where the examined branch did." },
            "ahead": ahead("this branch"), "behind": behind("this branch"),
            "upstream": defaulted(json!({ "type": "object", "required": ["name"],
                "description": "Its own upstream; ahead/behind seen from this branch, as `git branch -vv`.",
                "properties": { "name": { "type": "string" }, "ahead": opt_count(), "behind": opt_count(),
                    "gone": opt_flag() } }), "null (no upstream)"),
            "lastCommit": { "type": "string" } } });
    let base = defaulted(
        json!({ "type": "object", "required": ["name", "sha"],
        "properties": { "name": { "type": "string" }, "sha": { "type": "string" },
            "mergeBase": defaulted(json!({ "type": "string" }), "null (unrelated histories)"),
            "ahead": ahead("the base"), "behind": behind("the base") } }),
        "null (no base found)",
    );
    let parent_moved = defaulted(
        json!({ "type": "object", "required": ["parent", "oldTip", "newTip", "commits", "command", "replay"],
        "description": "A local branch the examined one was built on, rewritten since (e.g. `git rebase main` on \
            it): the examined branch still sits on its old commits, found in its reflog.",
        "properties": { "parent": { "type": "string" },
            "oldTip": { "type": "string", "description": "The parent's old tip under the examined branch \
                (`git merge-base --fork-point <parent> <branch>`)." },
            "newTip": { "type": "string" },
            "commits": { "type": "integer", "minimum": 1, "description": "The examined branch's own commits \
                (`git rev-list --count <oldTip>..<branch>`)." },
            "command": { "type": "string", "description": "`git rebase --onto <parent> <oldTip> <branch>`." },
            "replay": { "enum": ["clean", "stops", "too-many-commits"], "description": "That rebase predicted in \
                memory as the conflict preflight predicts a rebase; `too-many-commits`: over 100, not \
                predicted." },
            "stopsAt": defaulted(json!({ "type": "string", "description": "`<sha> <subject>` of the commit that \
                stops it." }), "null (no stop)"),
            "conflicts": defaulted(json!({ "type": "array", "maxItems": 20, "items": { "type": "string" } }), "empty"),
            "moreConflicts": opt_count() } }),
        "null (none)",
    );
    let data = json!({
        "type": "object",
        "properties": { "branch": defaulted(json!({ "type": "string",
                "description": "The examined branch: `branch` when given, else the current one." }), "null (detached)"),
            "sha": defaulted(json!({ "type": "string" }), "null (unborn)"), "upstream": schema::upstream(),
            "base": base, "related": defaulted(json!({ "type": "array", "maxItems": 50, "items": related }), "empty"),
            "relatedTotal": opt_count(), "parentMoved": parent_moved, "shallow": schema::shallow("merge bases and ahead/behind") }
    });
    FnTool {
        handler: call_branch_stack,
        cache: Cache::until_any_change(),
        definition: ToolDefinition {
            name: "repo.branchStack",
            title: "Branch stack",
            description: "Where a branch stands against its upstream and its base branch, which local branches are stacked \
                on it or it on them, and a parent rebased under it with the `git rebase --onto` that moves it.",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "baseCandidates": { "type": "array", "maxItems": 256,
                        "items": { "type": "string", "minLength": 1, "maxLength": 1024 },
                        "description": "Base branches to try first, in order (e.g. `origin/main`)." },
                    "maxRelated": schema::integer(1, 50, 8, "Related branches to list."),
                    "branch": { "type": "string", "minLength": 1, "maxLength": 1024,
                        "description": "The local branch to examine (`feature/x`); default: the current branch. \
                        An unknown name is invalid params `unknown_revision` with the nearest branch names." },
                    "format": schema::format(),
                }),
                &["repoPath"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_branch_stack(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: BranchStackArgs = parse(arguments)?;
    let options = branch_stack::Options {
        base_candidates: args.base_candidates.unwrap_or_default(),
        max_related: args.max_related.unwrap_or(8),
        branch: args.branch,
    };
    let render = fluxgit_engine::render::branch_stack;
    run_formatted(ctx, "repo.branchStack", &args.repo_path, args.format, render, |repo, _| {
        ctx.engine.branch_stack(repo, &options).map(whole)
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WorktreeArgs {
    repo_path: String,
    #[serde(default)]
    format: Format,
}

/// `worktree.list`.
pub fn worktree_list() -> FnTool {
    let worktree = json!({ "type": "object",
        "required": ["path"],
        "properties": { "path": { "type": "string" }, "main": opt_flag(), "current": opt_flag(),
            "bare": opt_flag(), "branch": defaulted(json!({ "type": "string" }), "null (detached or bare)"),
            "detached": opt_flag(), "headSha": defaulted(json!({ "type": "string" }), "null (unborn or bare)"),
            "locked": opt_flag(), "lockReason": opt_string(), "prunable": opt_flag(),
            "error": schema::item_error("the worktree's entry (e.g. its HEAD file is not a ref; branch and headSha \
                are then left out)"),
            "outsideRoots": opt_flag(), "upstream": schema::upstream(), "vsDefault": schema::upstream(),
            "operation": opt_string(),
            "conflicted": opt_count(), "staged": opt_count(), "unstaged": opt_count(), "untracked": opt_count(),
            "agents": opt_list(json!({ "type": "string" })), "lastActivityMs": opt_count(),
            "stateError": opt_string() } });
    let data = json!({ "type": "object", "required": ["worktrees"],
        "properties": { "worktrees": { "type": "array", "items": worktree } } });
    FnTool {
        handler: call_worktree_list,
        cache: Cache::Never,
        definition: ToolDefinition {
            name: "worktree.list",
            title: "Worktrees",
            description: "Every worktree, main and linked: branch, ahead/behind, change counts, operation, agents, locked, prunable.",
            input_schema: schema::input(
                json!({ "repoPath": schema::repo_path(), "format": schema::format() }),
                &["repoPath"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_worktree_list(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: WorktreeArgs = parse(arguments)?;
    let render = fluxgit_engine::render::worktree_list;
    let options = fluxgit_engine::worktree_list::Options { agents: crate::config::agent_detection(ctx.client_name) };
    run_formatted(ctx, "worktree.list", &args.repo_path, args.format, render, |repo, _| {
        ctx.engine.worktree_list(repo, &options).map(whole)
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubmoduleArgs {
    repo_path: String,
    path: Option<String>,
    #[serde(default)]
    format: Format,
}

/// `submodule.status`.
pub fn submodule_status() -> FnTool {
    let submodule = json!({ "type": "object",
        "required": ["path", "state"],
        "properties": { "path": { "type": "string" }, "recordedSha": defaulted(json!({ "type": "string" }), "null (nothing recorded)"),
            "checkedOutSha": defaulted(json!({ "type": "string", "description": "The commit checked out, when it \
                is not recordedSha (state `drifted`)." }), "recordedSha (null when `uninitialized`)"),
            "state": { "enum": ["clean", "drifted", "uninitialized", "conflict", "unreadable"] }, "dirty": opt_flag(),
            "untracked": opt_count(),
            "error": schema::item_error("the submodule or its work tree (state `unreadable`: a `.gitmodules` name git \
                ignores as suspicious, or a gitdir that is gone)") } });
    let data = json!({ "type": "object",
        "properties": { "path": defaulted(json!({ "type": "string" }), "null (no filter)"), "submodules": opt_list(submodule) } });
    FnTool {
        handler: call_submodule_status,
        cache: Cache::until_any_change(),
        definition: ToolDefinition {
            name: "submodule.status",
            title: "Submodule status",
            description: "Every submodule at any depth: the commit recorded vs the one checked out, and its state (clean, \
                drifted, uninitialized, conflict, dirty).",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "path": { "type": "string", "minLength": 1, "maxLength": 4096,
                        "description": "Repo-relative submodule path (no `..`): it and its nested submodules." },
                    "format": schema::format(),
                }),
                &["repoPath"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_submodule_status(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: SubmoduleArgs = parse(arguments)?;
    let render = fluxgit_engine::render::submodule_status;
    run_formatted(ctx, "submodule.status", &args.repo_path, args.format, render, |repo, _| {
        ctx.engine.submodule_status(repo, args.path.as_deref()).map(whole)
    })
}

/// `repo.collisions`' default budget in tokens.
pub const COLLISIONS_DEFAULT_TOKENS: u64 = 600;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CollisionsArgs {
    repo_path: String,
    max_tokens: Option<usize>,
    max_files: Option<usize>,
    #[serde(default)]
    format: Format,
}

/// `repo.collisions`.
pub fn collisions() -> FnTool {
    let data = json!({ "type": "object", "required": ["prediction", "lines", "pairCount"],
        "properties": { "prediction": { "type": "boolean" }, "defaultBranch": opt_string(),
            "lines": { "type": "array", "items": { "type": "object" } }, "pairCount": opt_count(),
            "conflicting": opt_count(), "overlapping": opt_count(),
            "pairs": opt_list(json!({ "type": "object" })), "outsideRoots": opt_list(json!({ "type": "string" })),
            "unreadable": opt_list(json!({ "type": "string" })) } });
    FnTool {
        handler: call_collisions,
        cache: Cache::Never,
        definition: ToolDefinition {
            name: "repo.collisions",
            title: "Collisions between parallel work",
            description: "Where parallel worktrees, agent branches and the default branch collide: files, lines \
                and symbols both changed, and whether merging them conflicts.",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "maxFiles": schema::integer(1, 50, 5, "Files listed per pair."),
                    "maxTokens": schema::max_tokens(200, 8000, COLLISIONS_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &["repoPath"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_collisions(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: CollisionsArgs = parse(arguments)?;
    let max_tokens = args.max_tokens.unwrap_or(COLLISIONS_DEFAULT_TOKENS as usize);
    let options = fluxgit_engine::collision::Options {
        max_files: args.max_files.unwrap_or(fluxgit_engine::collision::DEFAULT_MAX_FILES),
        agents: crate::config::agent_detection(ctx.client_name),
    };
    let render = fluxgit_engine::render::collisions;
    run_formatted(ctx, "repo.collisions", &args.repo_path, args.format, render, |repo, measure| {
        ctx.engine.collisions(repo, &options, max_tokens, measure)
    })
}
