//! The fields of each proposal (design.md §5 "Write handshake"). One table drives the input schema, the checks made
//! before anything is sent (design.md §4.4: repositories inside the allowed roots, refs that are revisions, paths that
//! stay in the work tree, sizes) and the defaults written into the body, so the gateway always gets every field.

use std::path::{Component, Path, PathBuf};

use fluxgit_audit::STEP_TYPES;
use fluxgit_engine::{MAX_REVISION_LEN, Repo, check_branch_name, check_relative_path, check_revision};
use serde_json::{Map, Value, json};

use crate::tools::{CallContext, ProtocolError, schema};

/// Most paths in `paths` (discard, commit).
pub const MAX_PATHS: u64 = 10_000;
/// Largest `patchContent`, in bytes (4 MiB).
pub const MAX_PATCH_BYTES: usize = 4 * 1024 * 1024;
/// Most plan steps.
pub const MAX_STEPS: u64 = 10;
/// Most repositories in one branchDelete.
pub const MAX_DELETE_REPOS: u64 = 20;
/// Most branches per repository in one branchDelete.
pub const MAX_DELETE_BRANCHES_PER_REPO: u64 = 20;
/// Most branches in one branchDelete, all repositories together.
pub const MAX_DELETE_BRANCHES: usize = 100;
/// Longest commit or submodule-pointer message, in characters.
pub const MAX_MESSAGE_CHARS: u64 = 65_536;

/// One proposal type.
pub struct Operation {
    /// The operation type, e.g. `merge`: the route is `/v1/mcp/operation/preview/{name}`.
    pub name: &'static str,
    /// The tool name, `operation.preview.{name}`.
    pub tool: &'static str,
    /// The tool's title.
    pub title: &'static str,
    /// The tool's description.
    pub description: &'static str,
    /// Its fields besides `repoPath`, `reason` and `idempotencyKey`.
    pub fields: &'static [Field],
}

/// One field of a proposal.
pub struct Field {
    /// The argument and body name.
    pub name: &'static str,
    /// What it holds, and so how it is checked.
    pub kind: Kind,
    /// Whether the caller must give it.
    pub required: bool,
    /// The value sent when the caller gives none.
    pub default: Fill,
    /// Its schema description.
    pub description: &'static str,
}

/// What a field holds.
#[derive(Clone, Copy)]
pub enum Kind {
    /// A revision that must name a commit now (resolved in the repository).
    Revision,
    /// A ref or remote name that need not exist yet: checked for shape only (no leading `-`, no control characters).
    Name,
    /// A branch name that need not exist yet: checked as `git check-ref-format --branch` checks it.
    BranchName,
    /// A repository-relative path: no `..`, not absolute.
    RelativePath,
    /// 1-10000 repository-relative paths.
    Paths,
    /// A patch of at most 4 MiB.
    Patch,
    /// A boolean.
    Flag,
    /// A boolean that may only be `false` (rebase `interactive`).
    FalseOnly,
    /// One of these strings.
    Choice(&'static [&'static str]),
    /// Free text of at most this many characters.
    Text(u64),
    /// A full object id (40 or 64 hex digits).
    Oid,
    /// An absolute path inside the allowed roots that may not exist yet (worktree `path`).
    AbsolutePath,
    /// branchDelete `targets`.
    Targets,
    /// plan `steps`.
    Steps,
}

/// The default of a field.
#[derive(Clone, Copy)]
pub enum Fill {
    /// None: an absent optional field is not sent.
    Nothing,
    /// This boolean.
    Bool(bool),
    /// This string.
    Text(&'static str),
}

/// Why a proposal was refused before anything was sent.
pub enum Refusal {
    /// The engine refused a repository, path or revision (JSON-RPC -32602 with `data.reason`).
    Engine(fluxgit_engine::Error),
    /// A limit the schema cannot express (JSON-RPC -32602).
    Params(ProtocolError),
}

impl From<fluxgit_engine::Error> for Refusal {
    fn from(error: fluxgit_engine::Error) -> Self {
        Self::Engine(error)
    }
}

const fn field(name: &'static str, kind: Kind, description: &'static str) -> Field {
    Field { name, kind, required: false, default: Fill::Nothing, description }
}

const fn required(name: &'static str, kind: Kind, description: &'static str) -> Field {
    Field { name, kind, required: true, default: Fill::Nothing, description }
}

const fn defaults_to(name: &'static str, kind: Kind, default: Fill, description: &'static str) -> Field {
    Field { name, kind, required: false, default, description }
}

const MERGE: &[Field] = &[
    required("sourceRef", Kind::Revision, "The revision to merge, e.g. a branch."),
    required("targetRef", Kind::Revision, "The branch to merge into."),
    defaults_to(
        "strategy",
        Kind::Choice(&["merge", "squash"]),
        Fill::Text("merge"),
        "A merge commit, or one squashed commit.",
    ),
];
const REBASE: &[Field] = &[
    required("ontoRef", Kind::Revision, "The revision to rebase onto."),
    defaults_to("currentRef", Kind::Revision, Fill::Text("HEAD"), "The branch to rebase."),
    defaults_to(
        "interactive",
        Kind::FalseOnly,
        Fill::Bool(false),
        "Only false: interactive rebases are never proposed.",
    ),
];
const DISCARD: &[Field] =
    &[required("paths", Kind::Paths, "Repository-relative paths whose uncommitted changes to discard.")];
const RESET: &[Field] = &[
    required("targetRef", Kind::Revision, "The revision to reset the current branch to."),
    defaults_to(
        "mode",
        Kind::Choice(&["soft", "mixed", "hard"]),
        Fill::Text("mixed"),
        "soft, mixed or hard (hard discards work-tree changes).",
    ),
];
const PATCH: &[Field] = &[
    required("patchContent", Kind::Patch, "A unified patch as `git apply` takes it, at most 4 MiB."),
    defaults_to("applyToIndex", Kind::Flag, Fill::Bool(false), "Also apply it to the index (`git apply --index`)."),
];
const PLAN: &[Field] = &[required("steps", Kind::Steps, "1-10 steps run in order, stopping at the first failure.")];
const WORKTREE: &[Field] = &[
    required("branch", Kind::BranchName, "The branch to check out in the new worktree."),
    field(
        "path",
        Kind::AbsolutePath,
        "Absolute path of the new worktree in the allowed roots (default <repo parent>/<repo>.worktrees/<branch>).",
    ),
];
const COMMIT: &[Field] = &[
    required("message", Kind::Text(MAX_MESSAGE_CHARS), "The commit message."),
    field(
        "paths",
        Kind::Paths,
        "Repository-relative paths to commit; with neither paths nor stageAll, what is staged is committed.",
    ),
    defaults_to(
        "stageAll",
        Kind::Flag,
        Fill::Bool(false),
        "Stage every change first (`git add -A`). Amending is never proposed.",
    ),
];
const PUSH: &[Field] = &[
    defaults_to("remote", Kind::Name, Fill::Text("origin"), "The remote to push to."),
    field("branch", Kind::BranchName, "The local branch to push; default the current branch."),
    defaults_to("setUpstream", Kind::Flag, Fill::Bool(false), "Set the pushed branch as upstream."),
    defaults_to(
        "forceWithLease",
        Kind::Flag,
        Fill::Bool(false),
        "Force with lease (HIGH risk: may drop remote commits).",
    ),
];
const BRANCH: &[Field] = &[
    required("name", Kind::BranchName, "The new branch's name."),
    defaults_to("startPoint", Kind::Revision, Fill::Text("HEAD"), "Where the branch starts."),
    defaults_to("checkout", Kind::Flag, Fill::Bool(true), "Check the new branch out."),
];
const BRANCH_DELETE: &[Field] = &[required(
    "targets",
    Kind::Targets,
    "Local branches to delete: at most 20 repositories x 20 branches, 100 in all. Remote branches are never touched.",
)];
const SUBMODULE_POINTER: &[Field] = &[
    required("relativePath", Kind::RelativePath, "The submodule's path, relative to its parent repository."),
    field(
        "parentPath",
        Kind::RelativePath,
        "For a nested submodule: its parent submodule's path, relative to repoPath; default repoPath itself.",
    ),
    required(
        "direction",
        Kind::Choice(&["record", "return"]),
        "record: commit the checked-out commit as the parent's pointer; return: check out the recorded one (detached).",
    ),
    field("message", Kind::Text(MAX_MESSAGE_CHARS), "The parent's commit message (record only)."),
    field("expectedRecordedOid", Kind::Oid, "Refuse unless the parent records this commit."),
    field("expectedCheckedOutOid", Kind::Oid, "Refuse unless the submodule has this commit checked out."),
];

/// An [`Operation`] whose tool name and description are built from its name and summary at compile time.
macro_rules! operation {
    ($name:literal, $title:literal, $summary:literal, $fields:expr) => {
        Operation {
            name: $name,
            tool: concat!("operation.preview.", $name),
            title: $title,
            description: concat!(
                $summary,
                " A person approves or rejects it at the approval gateway; this returns a previewId to poll with \
                 operation_status, not a Git result."
            ),
            fields: $fields,
        }
    };
}

/// The twelve proposal types in design.md §5 order.
pub const OPERATIONS: [Operation; 12] = [
    operation!("merge", "Propose a merge", "Propose merging sourceRef into targetRef.", MERGE),
    operation!("rebase", "Propose a rebase", "Propose rebasing currentRef onto ontoRef (never interactive).", REBASE),
    operation!(
        "discard",
        "Propose discarding changes",
        "Propose discarding the uncommitted changes of some paths (the gateway snapshots them first).",
        DISCARD
    ),
    operation!("reset", "Propose a reset", "Propose resetting the current branch to targetRef.", RESET),
    operation!(
        "patch",
        "Propose applying a patch",
        "Propose applying a unified patch to the work tree (and index).",
        PATCH
    ),
    operation!(
        "plan",
        "Propose a plan",
        "Propose up to 10 merge/rebase/discard/reset/patch steps run in order, stopping at the first failure.",
        PLAN
    ),
    operation!("worktree", "Propose a worktree", "Propose adding a linked worktree for a branch.", WORKTREE),
    operation!(
        "commit",
        "Propose a commit",
        "Propose a commit of staged changes, some paths, or everything (never an amend).",
        COMMIT
    ),
    operation!("push", "Propose a push", "Propose pushing a branch to a remote.", PUSH),
    operation!("branch", "Propose a branch", "Propose creating a branch.", BRANCH),
    operation!(
        "branchDelete",
        "Propose deleting branches",
        "Propose deleting local branches across repositories (unmerged, checked-out or moved branches are kept).",
        BRANCH_DELETE
    ),
    operation!(
        "submodulePointer",
        "Propose a submodule pointer change",
        "Propose recording a submodule's checked-out commit in its parent, or returning it to the recorded one.",
        SUBMODULE_POINTER
    ),
];

/// The names of [`OPERATIONS`], in order (for the check against `fluxgit_audit::OPERATIONS`).
const OPERATION_NAMES: [&str; 12] = {
    let mut names = [""; 12];
    let mut index = 0;
    while index < OPERATIONS.len() {
        names[index] = OPERATIONS[index].name;
        index += 1;
    }
    names
};
// The table above names each operation once more, for its fields: it must list fluxgit_audit's operations, in order.
const _: () = assert!(fluxgit_audit::is_operation_list(&OPERATION_NAMES), "OPERATIONS differs from fluxgit_audit");

/// The operation called `name`.
pub fn operation(name: &str) -> Option<&'static Operation> {
    OPERATIONS.iter().find(|operation| operation.name == name)
}

/// The JSON Schema of one field.
fn field_schema(field: &Field) -> Value {
    let text = |max: u64| json!({ "type": "string", "minLength": 1, "maxLength": max });
    let mut schema = match field.kind {
        Kind::Revision | Kind::Name | Kind::BranchName => text(MAX_REVISION_LEN as u64),
        Kind::RelativePath => text(4096),
        Kind::Paths => json!({ "type": "array", "minItems": 1, "maxItems": MAX_PATHS, "items": text(4096) }),
        Kind::Patch => text(MAX_PATCH_BYTES as u64),
        Kind::Flag => json!({ "type": "boolean" }),
        Kind::FalseOnly => json!({ "type": "boolean", "const": false }),
        Kind::Choice(values) => json!({ "type": "string", "enum": values }),
        Kind::Text(max) => text(max),
        Kind::Oid => json!({ "type": "string", "pattern": "^([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$" }),
        Kind::AbsolutePath => schema::repo_path(),
        Kind::Targets => json!({
            "type": "array", "minItems": 1, "maxItems": MAX_DELETE_REPOS,
            "items": { "type": "object", "required": ["repoPath", "branches"], "additionalProperties": false,
                "properties": { "repoPath": schema::repo_path(), "branches": { "type": "array", "minItems": 1,
                    "maxItems": MAX_DELETE_BRANCHES_PER_REPO, "items": text(MAX_REVISION_LEN as u64) } } }
        }),
        Kind::Steps => {
            let steps: Vec<Value> = STEP_TYPES.iter().filter_map(|name| operation(name)).map(step_schema).collect();
            json!({ "type": "array", "minItems": 1, "maxItems": MAX_STEPS, "items": { "oneOf": steps } })
        }
    };
    schema["description"] = Value::from(field.description);
    match field.default {
        Fill::Nothing => {}
        Fill::Bool(value) => schema["default"] = Value::from(value),
        Fill::Text(value) => schema["default"] = Value::from(value),
    }
    schema
}

fn step_schema(operation: &Operation) -> Value {
    let mut properties = Map::new();
    properties.insert("type".to_owned(), json!({ "const": operation.name }));
    let mut required = vec!["type"];
    for field in operation.fields {
        properties.insert(field.name.to_owned(), field_schema(field));
        if field.required {
            required.push(field.name);
        }
    }
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

/// The input schema of `operation.preview.{operation}`: `repoPath`, `reason`, `idempotencyKey` and its fields.
pub fn input_schema(operation: &Operation) -> Value {
    let mut properties = Map::new();
    properties.insert("repoPath".to_owned(), schema::repo_path());
    properties.insert(
        "reason".to_owned(),
        json!({ "type": "string", "minLength": 1, "maxLength": 2000,
            "description": "Why the change is needed, shown to the person who approves or rejects it." }),
    );
    properties.insert(
        "idempotencyKey".to_owned(),
        json!({ "type": "string", "pattern": "^[A-Za-z0-9_-]{1,128}$", "maxLength": 128,
            "description": "Reusing a key (same operation type, same agent) resolves to the existing proposal." }),
    );
    let mut required = vec!["repoPath", "reason"];
    for field in operation.fields {
        properties.insert(field.name.to_owned(), field_schema(field));
        if field.required {
            required.push(field.name);
        }
    }
    schema::input(Value::Object(properties), &required)
}

/// Checks the fields of `operation` in `arguments` against `repo` and returns them with defaults filled, as sent.
///
/// # Errors
/// [`Refusal`] for a revision that is not one or names no commit, a path leaving the work tree, a repository
/// outside the allowed roots, or a limit the schema cannot express.
pub fn check(
    ctx: &CallContext<'_>,
    repo: &Repo,
    operation: &Operation,
    arguments: &Map<String, Value>,
) -> Result<Map<String, Value>, Refusal> {
    let mut body = Map::new();
    for field in operation.fields {
        let value = match (arguments.get(field.name), field.default) {
            (Some(value), _) => check_value(ctx, repo, field, value)?,
            (None, Fill::Nothing) => continue,
            (None, Fill::Bool(value)) => Value::from(value),
            (None, Fill::Text(value)) => Value::from(value),
        };
        body.insert(field.name.to_owned(), value);
    }
    Ok(body)
}

fn check_value(ctx: &CallContext<'_>, repo: &Repo, field: &Field, value: &Value) -> Result<Value, Refusal> {
    let text = value.as_str().unwrap_or_default();
    match field.kind {
        Kind::Revision => {
            ctx.engine.resolve_commit(repo, text)?;
        }
        Kind::Name => check_revision(text)?,
        Kind::BranchName => check_branch_name(text)?,
        Kind::RelativePath => check_relative_path(text)?,
        Kind::Paths => {
            for path in value.as_array().into_iter().flatten() {
                check_relative_path(path.as_str().unwrap_or_default())?;
            }
        }
        Kind::Patch if text.len() > MAX_PATCH_BYTES => {
            return Err(too_large(field.name, text.len()));
        }
        Kind::AbsolutePath => return Ok(Value::from(check_new_path(ctx, text)?)),
        Kind::Targets => return check_targets(ctx, value),
        Kind::Steps => return check_steps(ctx, repo, value),
        Kind::Patch | Kind::Flag | Kind::FalseOnly | Kind::Choice(_) | Kind::Text(_) | Kind::Oid => {}
    }
    Ok(value.clone())
}

fn too_large(name: &str, bytes: usize) -> Refusal {
    Refusal::Params(ProtocolError::invalid_params(
        format!("{name} is {bytes} bytes; at most {MAX_PATCH_BYTES} (4 MiB) may be proposed"),
        Some(json!({ "reason": "too_large", "field": name, "limit": MAX_PATCH_BYTES })),
    ))
}

/// branchDelete targets: each repository resolved inside the allowed roots (sent as its canonical root), each
/// branch a local branch name, at most [`MAX_DELETE_BRANCHES`] in all.
fn check_targets(ctx: &CallContext<'_>, value: &Value) -> Result<Value, Refusal> {
    let targets = value.as_array().map(Vec::as_slice).unwrap_or_default();
    let total: usize = targets.iter().map(|target| target["branches"].as_array().map_or(0, Vec::len)).sum();
    if total > MAX_DELETE_BRANCHES {
        return Err(Refusal::Params(ProtocolError::invalid_params(
            format!("targets name {total} branches; at most {MAX_DELETE_BRANCHES} may be deleted in one proposal"),
            Some(json!({ "reason": "too_many_branches", "limit": MAX_DELETE_BRANCHES, "total": total })),
        )));
    }
    let mut checked = Vec::with_capacity(targets.len());
    for target in targets {
        let repo = ctx.resolve(target["repoPath"].as_str().unwrap_or_default())?;
        let branches = target["branches"].as_array().map(Vec::as_slice).unwrap_or_default();
        for branch in branches {
            let name = branch.as_str().unwrap_or_default();
            check_revision(name)?;
            if name.starts_with("refs/remotes/") {
                return Err(Refusal::Params(ProtocolError::invalid_params(
                    format!("{name:?} is a remote-tracking branch; branchDelete never touches remote branches"),
                    Some(json!({ "reason": "remote_branch" })),
                )));
            }
        }
        checked.push(json!({ "repoPath": repo.location.root.display().to_string(), "branches": branches }));
    }
    Ok(Value::Array(checked))
}

/// Plan steps: each checked as its own operation, defaults filled, `type` first.
fn check_steps(ctx: &CallContext<'_>, repo: &Repo, value: &Value) -> Result<Value, Refusal> {
    let mut steps = Vec::new();
    for step in value.as_array().into_iter().flatten() {
        let Some(arguments) = step.as_object() else { continue };
        let kind = arguments.get("type").and_then(Value::as_str).unwrap_or_default();
        let Some(operation) = operation(kind).filter(|_| STEP_TYPES.contains(&kind)) else {
            return Err(Refusal::Params(ProtocolError::invalid_params(
                format!("plan step type {kind:?} is not one of {STEP_TYPES:?}"),
                None,
            )));
        };
        let mut checked = Map::new();
        checked.insert("type".to_owned(), Value::from(kind));
        checked.extend(check(ctx, repo, operation, arguments)?);
        steps.push(Value::Object(checked));
    }
    Ok(Value::Array(steps))
}

/// An absolute path that may not exist yet: no control characters, no `..`, and inside an allowed root once its
/// deepest existing ancestor is canonicalised (so a symlink cannot lead it out).
pub fn check_new_path(ctx: &CallContext<'_>, path: &str) -> Result<String, Refusal> {
    use fluxgit_engine::{Error, InvalidReason};
    let invalid =
        |why: &str| Refusal::Engine(Error::invalid(InvalidReason::InvalidPath, format!("path {path:?} {why}")));
    let as_path = Path::new(path);
    if path.chars().any(char::is_control) {
        return Err(invalid("holds control characters"));
    }
    if !as_path.is_absolute() {
        return Err(invalid("must be absolute"));
    }
    if as_path.components().any(|component| matches!(component, Component::ParentDir)) {
        return Err(invalid("must not contain '..'"));
    }
    let mut existing = as_path;
    let mut rest = Vec::new();
    while !existing.exists() {
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else { break };
        rest.push(name);
        existing = parent;
    }
    let mut resolved: PathBuf =
        existing.canonicalize().map_err(|error| invalid(&format!("cannot be resolved: {error}")))?;
    resolved.extend(rest.iter().rev());
    if !ctx.engine.allowed_roots().iter().any(|root| resolved.starts_with(root)) {
        return Err(Refusal::Engine(Error::invalid(
            InvalidReason::OutsideAllowedRoots,
            format!("{} is outside the allowed roots (FLUXGIT_MCP_ALLOWED_ROOTS)", resolved.display()),
        )));
    }
    Ok(resolved.display().to_string())
}
