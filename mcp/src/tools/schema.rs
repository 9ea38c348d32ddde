//! Building blocks of input and output schemas (JSON Schema 2020-12 subset that MCP clients understand).

use serde_json::{Value, json};

/// `repoPath`: absolute (POSIX `/…`, Windows `C:\…` or `\\server\…`), 1-4096 characters.
pub fn repo_path() -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": 4096,
        "pattern": "^(/|[A-Za-z]:[\\\\/]|\\\\\\\\)",
        "description": "Absolute path of the repository or any folder inside its work tree; must lie under an allowed root."
    })
}

/// An integer in `[min, max]` with a default.
pub fn integer(min: u64, max: u64, default: u64, description: &str) -> Value {
    json!({ "type": "integer", "minimum": min, "maximum": max, "default": default, "description": description })
}

/// `maxTokens`: the hard budget of `content[0].text` in o200k_base tokens (SPEC §3).
pub fn max_tokens(min: u64, max: u64, default: u64) -> Value {
    integer(
        min,
        max,
        default,
        "Hard budget, in o200k_base tokens, of the whole JSON text of the result; lists are cut by priority and what \
         was cut is counted in `omitted`.",
    )
}

/// A closed input object schema.
pub fn input(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

/// The output schema of a local read tool: the envelope of SPEC §4.2 around `data`. An error result (10010) carries
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
            "source": { "type": "string", "enum": ["local-git", "fluxgit-gateway"] },
            "data": data,
            "omitted": { "type": "object", "additionalProperties": { "type": "integer", "minimum": 1 } },
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": { "code": { "type": "integer" }, "message": { "type": "string" }, "data": {} }
            }
        }
    })
}

/// A string or `null`.
pub fn nullable_string() -> Value {
    json!({ "type": ["string", "null"] })
}

/// `shallow`: present (and `true`) only in a shallow clone (SPEC §4.4); `scope` says what stops at the boundary.
pub fn shallow(scope: &str) -> Value {
    json!({ "type": "boolean", "description": format!(
        "Present and true when the repository is a shallow clone: {scope} stop at the commits listed in \
         `.git/shallow`, whose parents git treats as absent (history was cut there). Absent means false." ) })
}

/// `error: {reason}`: why one item of an answer could not be read (SPEC §4.4); the rest of the answer is given.
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

/// The HEAD object of `repo.status` and `repo.refs`.
pub fn head() -> Value {
    json!({
        "type": "object",
        "required": ["branch", "detached", "unborn", "sha"],
        "properties": {
            "branch": nullable_string(), "detached": { "type": "boolean" }, "unborn": { "type": "boolean" },
            "sha": nullable_string(), "shallow": shallow("ahead/behind counts")
        }
    })
}

/// An upstream object or `null`.
pub fn upstream() -> Value {
    json!({
        "type": ["object", "null"],
        "required": ["name", "ahead", "behind", "gone"],
        "properties": { "name": { "type": "string" }, "ahead": count(), "behind": count(), "gone": { "type": "boolean" } }
    })
}

/// Exact work-tree counts.
pub fn counts() -> Value {
    json!({
        "type": "object",
        "required": ["clean", "staged", "unstaged", "untracked", "conflicted"],
        "properties": {
            "bare": { "type": "boolean", "description": "Present and true for a bare repository (no work tree)." },
            "clean": { "type": "boolean" }, "staged": count(), "unstaged": count(), "untracked": count(),
            "conflicted": count(), "untrackedFiles": untracked_mode(),
            "unreadable": { "type": "integer", "minimum": 1,
                "description": "Submodules whose state could not be read (listed in repo.status). Absent means 0." }
        }
    })
}

/// The operation in progress or `null`.
pub fn operation() -> Value {
    json!({ "enum": ["merge", "rebase", "cherry-pick", "revert", "bisect", "am", null] })
}
