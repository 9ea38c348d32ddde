//! Building blocks of input and output schemas (JSON Schema 2020-12 subset that MCP clients understand).

use serde_json::{Value, json};

/// The pattern of an absolute path (POSIX `/`, a Windows drive, a UNC path); a violation of it is reported as
/// "must be an absolute path", never as the pattern.
pub const REPO_PATH_PATTERN: &str = "^(/|[A-Za-z]:[\\\\/]|\\\\\\\\)";

/// `repoPath`: absolute (POSIX `/…`, Windows `C:\…` or `\\server\…`), 1-4096 characters.
pub fn repo_path() -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": 4096,
        "pattern": REPO_PATH_PATTERN,
        "description": "Absolute path of the repository or a folder in it."
    })
}

/// An integer in `[min, max]` with a default.
pub fn integer(min: u64, max: u64, default: u64, description: &str) -> Value {
    json!({ "type": "integer", "minimum": min, "maximum": max, "default": default, "description": description })
}

/// `maxTokens`: the hard budget of `content[0].text` in o200k_base tokens. The long explanation (what is cut,
/// `omitted`) is said once, in the server's instructions and in `docs/tools.md`, not in every tool.
pub fn max_tokens(min: u64, max: u64, default: u64) -> Value {
    json!({ "type": "integer", "minimum": min, "maximum": max, "default": default })
}

/// `format`: `json` (default) or `text`, a terse line-oriented rendering in git's idioms; the long explanation is
/// in the server's instructions and `docs/tools.md`.
pub fn format() -> Value {
    json!({ "enum": ["json", "text"], "default": "json" })
}

/// A closed input object schema.
pub fn input(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

/// The output schema of a local read tool: the envelope of design.md#envelope around `data`. An error result (10010) carries
/// `error` instead of `data`, so neither is required.
pub fn envelope(data: Value) -> Value {
    json!({
        "type": "object",
        "required": ["tool", "readOnly", "source"],
        "properties": {
            "tool": { "type": "string" },
            "readOnly": { "type": "boolean" },
            "repoPath": { "type": "string" },
            "resolvedFrom": { "type": "string" },
            // The three values as prose, not an `enum`: the listing drops descriptions, and an enum repeated in
            // 41 output schemas cost about 490 tokens of every `tools/list` (design.md#envelope names the values).
            "source": { "type": "string",
                "description": "Who answered: `local-git`, `local-tree-sitter` (diff_semantic) or `fluxgit-gateway`." },
            "data": data,
            "omitted": { "type": "object", "additionalProperties": { "type": "integer", "minimum": 1 } },
            "error": { "type": "object", "description": "Only in a product error (`isError`): `{code, message, data}`." }
        }
    })
}

/// A string or `null`.
pub fn nullable_string() -> Value {
    json!({ "type": ["string", "null"] })
}

/// `shallow`: present (and `true`) only in a shallow clone (design.md#roots); `scope` says what stops at the boundary.
pub fn shallow(scope: &str) -> Value {
    json!({ "type": "boolean", "description": format!(
        "Present and true when the repository is a shallow clone: {scope} stop at the commits listed in \
         `.git/shallow`, whose parents git treats as absent (history was cut there). Absent means false." ) })
}

/// `error: {reason}`: why one item of an answer could not be read (design.md#roots); the rest of the answer is given.
pub fn item_error(what: &str) -> Value {
    json!({ "type": "object", "required": ["reason"], "properties": { "reason": { "type": "string" } },
        "description": format!("Present only when {what} could not be read: why. Absent means it was read.") })
}

/// `unreadable`: the items of an answer that could not be read, each `{path, error: {reason}}`; absent when empty.
pub fn unreadable(what: &str) -> Value {
    json!({ "type": "array", "description": format!(
            "{what} that could not be read, each with why; the rest of the answer is given without them. Absent \
             means none (an empty list)."),
        "items": { "type": "object", "required": ["path", "error"], "properties": {
            "path": { "type": "string" }, "error": item_error("the item") } } })
}

/// `untrackedFiles`: the `status.showUntrackedFiles` mode untracked files were counted in, when not `normal`.
pub fn untracked_mode() -> Value {
    json!({ "enum": ["no", "all"], "description": "How untracked files were listed and counted, from the \
        repository's `status.showUntrackedFiles`: `all` every file, `no` none looked for. Absent means `normal` \
        (the default): files one by one, but a wholly untracked directory as one `dir/` entry, as `git status`." })
}

/// A non-negative integer.
pub fn count() -> Value {
    json!({ "type": "integer", "minimum": 0 })
}

/// A field of compact JSON (design.md#envelope): left out when it has its `default`, which the description states (an
/// absent field means exactly that value). Every property a schema does not require carries such a description.
pub fn defaulted(mut schema: Value, default: &str) -> Value {
    let note = format!("Default {default}: left out when it has this value.");
    let description = match schema.get("description").and_then(Value::as_str) {
        Some(description) => format!("{description} {note}"),
        None => note,
    };
    schema["description"] = Value::String(description);
    schema
}

/// A count left out when 0.
pub fn opt_count() -> Value {
    defaulted(count(), "0")
}

/// A flag left out when false.
pub fn opt_flag() -> Value {
    defaulted(json!({ "type": "boolean" }), "false")
}

/// A string left out when `null`.
pub fn opt_string() -> Value {
    defaulted(json!({ "type": "string" }), "null")
}

/// A list of `items` left out when empty.
pub fn opt_list(items: Value) -> Value {
    defaulted(json!({ "type": "array", "items": items }), "empty")
}

/// The HEAD object of `repo.status` and `repo.refs`.
pub fn head() -> Value {
    json!({
        "type": "object",
        "properties": {
            "branch": defaulted(json!({ "type": "string" }), "null (detached)"), "detached": opt_flag(),
            "unborn": opt_flag(), "sha": defaulted(json!({ "type": "string" }), "null (unborn)"),
            "shallow": shallow("ahead/behind counts")
        }
    })
}

/// An upstream object; `default` says when it is left out.
pub fn upstream() -> Value {
    defaulted(
        json!({
            "type": "object",
            "required": ["name"],
            "properties": { "name": { "type": "string" }, "ahead": opt_count(), "behind": opt_count(),
                "gone": defaulted(json!({ "type": "boolean", "description": "The upstream ref no longer exists." }), "false") }
        }),
        "null (no upstream)",
    )
}

/// Exact work-tree counts (an absent count is 0).
pub fn counts() -> Value {
    json!({
        "type": "object",
        "properties": {
            "bare": defaulted(json!({ "type": "boolean", "description": "A bare repository (no work tree)." }), "false"),
            "clean": opt_flag(), "staged": opt_count(), "unstaged": opt_count(), "untracked": opt_count(),
            "conflicted": opt_count(), "untrackedFiles": untracked_mode(),
            "unreadable": { "type": "integer", "minimum": 1,
                "description": "Submodules whose state could not be read (listed in repo.status). Absent means 0." }
        }
    })
}

/// Work-tree counts beside the path lists they count, left out while they say nothing the lists do not.
pub fn list_counts() -> Value {
    defaulted(
        counts(),
        "each list's length (no list cut by the budget, not bare, untracked files counted the default way, no \
        unreadable submodule; no list at all means clean)",
    )
}

/// The operation in progress, left out when there is none.
pub fn operation() -> Value {
    defaulted(json!({ "enum": ["merge", "rebase", "cherry-pick", "revert", "bisect", "am"] }), "null (no operation)")
}

/// The schema of a list of changed paths (`repo.status`, `repo.scope`).
pub(crate) fn change_list() -> Value {
    opt_list(json!({ "type": "object", "required": ["path", "status"], "properties": {
        "path": { "type": "string" },
        "status": { "enum": ["added", "modified", "deleted", "renamed", "type-change"] },
        "from": defaulted(json!({ "type": "string", "description": "A rename's old path." }), "null") } }))
}
