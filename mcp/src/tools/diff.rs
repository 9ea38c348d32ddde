//! The diff tool family: `commit.details`, `worktree.changes` and `diff.text`. Each handler maps arguments to one
//! engine call and wraps the result in the envelope.

use fluxgit_engine::diff::text;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::tools::call::{Format, parse, run_formatted};
use crate::tools::schema::{self, count, defaulted, opt_count, opt_flag, opt_list};
use crate::tools::{Cache, CallContext, FnTool, ProtocolError, ToolDefinition, ToolOutput};

/// `commit.details`' default budget in tokens.
pub const COMMIT_DEFAULT_TOKENS: u64 = 4000;
/// `worktree.changes`' default budget in tokens.
pub const CHANGES_DEFAULT_TOKENS: u64 = 4000;
/// `diff.text`'s default budget in tokens: room for a listing of hundreds of files plus about 35 KiB of patch.
pub const DIFF_DEFAULT_TOKENS: u64 = 12_000;
/// `diff.text`'s largest budget in tokens (about 1 MiB of patch, the `maxBytes` bound, does not fit less).
pub const DIFF_MAX_TOKENS: u64 = 400_000;

/// A revision argument: parsed as a revision, never an option (a leading `-` is refused with `invalid_revision`).
fn revision(description: &str) -> Value {
    json!({ "type": "string", "minLength": 1, "maxLength": 1024, "description": description })
}

/// One changed file, as every tool of this family lists it.
fn file_stat(extra: Value) -> Value {
    let mut properties = json!({
        "path": { "type": "string" },
        "from": defaulted(json!({ "type": "string", "description": "Old path of a rename or copy." }), "null"),
        "status": { "enum": ["added", "modified", "deleted", "renamed", "copied", "type-change", "unmerged"] },
        "additions": defaulted(json!({ "type": "integer", "minimum": 0,
            "description": "Added lines (`--numstat`); binary and unreadable files have none. An unmerged path \
            has `git diff --numstat`'s count: ours (stage 2) against the work-tree file in diff.text's default \
            selection, else 0." }), "0"),
        "deletions": defaulted(json!({ "type": "integer", "minimum": 0, "description": "Deleted lines." }), "0"),
        "binary": opt_flag(),
        "nonUtf8": defaulted(json!({ "type": "boolean", "description": "The text is not valid UTF-8." }), "false"),
        "similarity": defaulted(json!({ "type": "integer", "minimum": 0, "maximum": 100 }), "null (not a rename)"),
        "oldMode": defaulted(json!({ "type": "string" }), "null (mode unchanged)"),
        "newMode": defaulted(json!({ "type": "string" }), "null (mode unchanged)"),
        "error": schema::item_error("the file's content (e.g. a blob missing from the object store; counts are then \
            left out and it has no patch)")
    });
    if let (Some(target), Some(extra)) = (properties.as_object_mut(), extra.as_object()) {
        target.extend(extra.clone());
    }
    json!({ "type": "object", "required": ["path", "status"], "properties": properties })
}

/// `schema` with `description` set.
fn schema_with_description(mut schema: Value, description: &str) -> Value {
    schema["description"] = Value::String(description.to_owned());
    schema
}

/// One part of a stash in `commit.details`: totals and files.
fn stash_part(description: &str) -> Value {
    json!({ "type": "object", "description": description,
        "properties": { "totals": totals(), "files": opt_list(file_stat(json!({}))) } })
}

/// Exact totals beside a file list, given only when the budget cut the list.
fn totals() -> Value {
    defaulted(
        json!({ "type": "object",
            "properties": { "files": opt_count(), "additions": opt_count(), "deletions": opt_count() } }),
        "the sums over `files` (given only when the budget cut the file list)",
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CommitArgs {
    repo_path: String,
    commit: String,
    #[serde(default = "yes")]
    body: bool,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

/// `true`: a boolean argument's default where it is on unless turned off.
fn yes() -> bool {
    true
}

/// `commit.details`.
pub fn commit_details() -> FnTool {
    let signature = json!({ "type": "object", "required": ["name", "email", "time"], "properties": {
        "name": { "type": "string" }, "email": { "type": "string" },
        "time": { "type": "string", "description": "ISO 8601 with the recorded offset." } } });
    let data = json!({
        "type": "object",
        "required": ["sha", "author", "subject"],
        "properties": {
            "sha": { "type": "string" },
            "parents": defaulted(json!({ "type": "array", "items": { "type": "string" },
                "description": "Abbreviated as `git log --oneline` does; files are diffed against the first." }),
                "empty (a root commit or a shallow boundary, diffed against the empty tree)"),
            "author": signature.clone(),
            "committer": defaulted(signature, "null (same name, email and time as the author)"),
            "subject": { "type": "string" }, "body": defaulted(json!({ "type": "string" }), "empty"),
            "note": defaulted(json!({ "type": "string", "description": "How a merge or a stash is diffed." }),
                "null (neither a merge nor a stash)"),
            "stash": defaulted(json!({ "type": "object", "required": ["ref", "index"],
                "description": "A stash (a commit of `refs/stash`'s reflog): `files` are then its work tree \
                against its base, staged and unstaged together (`git stash show`); this says what was staged and \
                which untracked files it saved.",
                "properties": {
                    "ref": { "type": "string", "description": "Its current name, `stash@{n}`." },
                    "index": stash_part("What was staged: `git diff stash^1 stash^2` (what `git stash apply \
                        --index` puts back in the index). Files cut first by `omitted.stashIndexFiles`."),
                    "untracked": defaulted(stash_part("The untracked files it saved (`--include-untracked`, \
                        `--all`): `git show stash^3`. Files cut by `omitted.stashUntrackedFiles`."),
                        "null (no untracked files saved)")
                } }), "null (not a stash)"),
            "shallow": { "type": "boolean", "description": "Present and true for a shallow clone's boundary commit: \
                its parents are absent, so (like `git show`) its files are compared with the empty tree. Absent \
                means false." },
            "totals": totals(), "files": opt_list(file_stat(json!({})))
        }
    });
    FnTool {
        handler: call_commit_details,
        cache: Cache::until_any_change(),
        definition: ToolDefinition {
            name: "commit.details",
            title: "Commit details",
            description: "One commit (a sha, branch, `HEAD~2` or `stash@{0}`): author, committer, message and the changed \
                files with line counts. For the patch, call diff_text.",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "commit": revision("The commit: a sha (prefix), branch, tag, `HEAD~2`, ..."),
                    "body": { "type": "boolean", "default": true,
                        "description": "false: leave the message body out (the subject stays)." },
                    "maxTokens": schema::max_tokens(200, 32000, COMMIT_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &["repoPath", "commit"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_commit_details(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: CommitArgs = parse(arguments)?;
    let max_tokens = args.max_tokens.unwrap_or(COMMIT_DEFAULT_TOKENS as usize);
    run_formatted(
        ctx,
        "commit.details",
        &args.repo_path,
        args.format,
        fluxgit_engine::render::commit_details,
        |repo, measure| match args.body {
            true => ctx.engine.commit_details(repo, &args.commit, max_tokens, measure),
            false => ctx.engine.commit_details_without_body(repo, &args.commit, max_tokens, measure),
        },
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BudgetArgs {
    repo_path: String,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

/// `worktree.changes`.
pub fn worktree_changes() -> FnTool {
    let paths = opt_list(json!({ "type": "string" }));
    let files = opt_list(file_stat(json!({})));
    let data = json!({
        "type": "object",
        "properties": {
            "bare": defaulted(json!({ "type": "boolean", "description": "A bare repository (no work tree)." }), "false"),
            "counts": defaulted(json!({ "type": "object", "properties": {
                "conflicted": opt_count(), "staged": opt_count(), "unstaged": opt_count(), "untracked": opt_count(),
                "untrackedFiles": schema::untracked_mode() } }),
                "each list's length (no list cut by the budget, untracked files counted the default way)"),
            "conflicted": paths, "staged": files, "unstaged": files, "untracked": paths,
            "unreadable": schema::unreadable("Submodules (a name git ignores as suspicious, a gitdir that is gone)")
        }
    });
    FnTool {
        handler: call_worktree_changes,
        cache: Cache::until_any_change(),
        definition: ToolDefinition {
            name: "worktree.changes",
            title: "Work-tree changes with line counts",
            description: "Uncommitted changes per path with added and deleted line counts, staged and unstaged apart, plus \
                untracked and conflicted paths. For the patch, call diff_text.",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "maxTokens": schema::max_tokens(200, 32000, CHANGES_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &["repoPath"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_worktree_changes(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: BudgetArgs = parse(arguments)?;
    let max_tokens = args.max_tokens.unwrap_or(CHANGES_DEFAULT_TOKENS as usize);
    run_formatted(
        ctx,
        "worktree.changes",
        &args.repo_path,
        args.format,
        fluxgit_engine::render::worktree_changes,
        |repo, measure| ctx.engine.worktree_changes(repo, max_tokens, measure),
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DiffArgs {
    repo_path: String,
    base: Option<String>,
    head: Option<String>,
    #[serde(default)]
    staged: bool,
    path: Option<String>,
    #[serde(default)]
    binary: bool,
    max_bytes: Option<usize>,
    max_lines: Option<usize>,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

/// `diff.text`.
pub fn diff_text() -> FnTool {
    let file = file_stat(json!({
        "hunks": defaulted(json!({ "type": "integer", "minimum": 0, "description": "Hunks in this file's patch \
            (a `GIT binary patch` block counts as one)." }), "0; also left out when `inPatch` is full, as this \
            file's hunk headers (`@@`, `@@@`) in `patch` then count them"),
        "inPatch": defaulted(json!({ "enum": ["partial", "omitted"],
            "description": "How much of this file's patch `patch` holds." }), "full"),
        "hunksShown": defaulted(count(), "null (not partial)")
    }));
    let data = json!({
        "type": "object",
        "properties": {
            "base": defaulted(json!({ "type": "string", "description": "Full sha or INDEX." }), "null (nothing: an unborn HEAD)"),
            "head": defaulted(json!({ "type": "string", "description": "Full sha, INDEX or WORKTREE." }),
                "WORKTREE (the work tree)"),
            "path": defaulted(json!({ "type": "string" }), "null (no path filter)"),
            "totals": defaulted(schema_with_description(totals(), "Exact totals over every changed file, given when \
                the budget cut the file list (`omitted.files`)."), "null: the sums over `files`"),
            "files": opt_list(file),
            "patch": defaulted(json!({ "type": "string" }), "empty"),
            "truncated": opt_flag(),
            "totalBytes": defaulted(json!({ "type": "integer", "minimum": 0, "description": "Bytes of the whole, \
                uncut patch." }), "the length of `patch` in bytes (given only when `truncated`)"),
            "totalLines": defaulted(json!({ "type": "integer", "minimum": 0, "description": "Lines of the whole, \
                uncut patch." }), "the number of lines of `patch` (given only when `truncated`)"),
            "unreadable": schema::unreadable("Submodules of the work-tree side (a gitdir outside the allowed roots, \
                a name git ignores as suspicious, a gitdir that is gone, a `.gitmodules` that is no regular file)")
        }
    });
    FnTool {
        handler: call_diff_text,
        cache: Cache::until_any_change(),
        definition: ToolDefinition {
            name: "diff.text",
            title: "Unified diff",
            description: "A unified patch equal to `git diff`: the work tree against the index by default, the index with \
                `staged`, or `base` against `head`; `path` narrows it. Cut at whole hunks.",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "base": revision("Old side: a revision (default HEAD, or the index when neither base nor head is given) or INDEX."),
                    "head": revision("New side: a revision, INDEX or WORKTREE (default WORKTREE; INDEX with staged)."),
                    "staged": { "type": "boolean", "default": false, "description": "Compare with the index like `git diff --cached`." },
                    "path": { "type": "string", "minLength": 1, "maxLength": 4096, "description": "Repository-relative file or directory (literal, no `..`)." },
                    "binary": { "type": "boolean", "default": false, "description": "Carry binary content (up to 1 MiB a side) as `GIT binary patch`." },
                    "maxBytes": schema::integer(1, text::MAX_MAX_BYTES as u64, text::DEFAULT_MAX_BYTES as u64, "Most bytes of patch text."),
                    "maxLines": { "type": "integer", "minimum": 1, "maximum": 10_000_000, "description": "Most lines of patch text (default: no line cap)." },
                    "maxTokens": schema::max_tokens(200, DIFF_MAX_TOKENS, DIFF_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &["repoPath"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_diff_text(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: DiffArgs = parse(arguments)?;
    let options = text::Options {
        base: args.base,
        head: args.head,
        staged: args.staged,
        path: args.path,
        max_bytes: args.max_bytes.unwrap_or(text::DEFAULT_MAX_BYTES),
        max_lines: args.max_lines,
        binary: args.binary,
    };
    let max_tokens = args.max_tokens.unwrap_or(DIFF_DEFAULT_TOKENS as usize);
    run_formatted(ctx, "diff.text", &args.repo_path, args.format, fluxgit_engine::render::diff_text, |repo, measure| {
        ctx.engine.diff_text(repo, &options, max_tokens, measure)
    })
}
