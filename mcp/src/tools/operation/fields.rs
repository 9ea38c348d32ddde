//! The fields of each proposal (design.md#tools "Write handshake"). The contract's table ([`Operation::table`]) drives
//! the input schema, the checks made before anything is sent (design.md#roots: repositories inside the allowed roots,
//! refs that are revisions, paths that stay in the work tree, sizes) and the defaults written into the body, so the
//! gateway always gets every field.

use std::path::{Component, Path, PathBuf};

pub use fluxgit_contract::{
    Field, Fill, Kind, MAX_DELETE_BRANCHES, MAX_DELETE_BRANCHES_PER_REPO, MAX_DELETE_REPOS, MAX_MESSAGE_CHARS,
    MAX_PATCH_BYTES, MAX_PATHS, MAX_STEPS, Operation, STEP_TYPES,
};
use fluxgit_engine::{MAX_REVISION_LEN, Repo, check_branch_name, check_relative_path, check_revision};
use serde_json::{Map, Value, json};

use crate::tools::{CallContext, ProtocolError, schema};

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

/// A preview tool's description: its summary, then what happens to a proposal.
macro_rules! described {
    ($summary:literal) => {
        concat!(
            $summary,
            " A person approves or rejects it at the approval gateway; this returns a previewId to poll with \
             operation_status, not a Git result."
        )
    };
}

/// The title and description of `operation`'s preview tool.
pub const fn texts(operation: Operation) -> (&'static str, &'static str) {
    match operation {
        Operation::Merge => ("Propose a merge", described!("Propose merging sourceRef into targetRef.")),
        Operation::Rebase => {
            ("Propose a rebase", described!("Propose rebasing currentRef onto ontoRef (never interactive)."))
        }
        Operation::Discard => (
            "Propose discarding changes",
            described!("Propose discarding the uncommitted changes of some paths (the gateway snapshots them first)."),
        ),
        Operation::Reset => ("Propose a reset", described!("Propose resetting the current branch to targetRef.")),
        Operation::Patch => {
            ("Propose applying a patch", described!("Propose applying a unified patch to the work tree (and index)."))
        }
        Operation::Plan => (
            "Propose a plan",
            described!(
                "Propose up to 10 merge/rebase/discard/reset/patch steps run in order, stopping at the first failure."
            ),
        ),
        Operation::Worktree => ("Propose a worktree", described!("Propose adding a linked worktree for a branch.")),
        Operation::Commit => (
            "Propose a commit",
            described!("Propose a commit of staged changes, some paths, or everything (never an amend)."),
        ),
        Operation::Push => ("Propose a push", described!("Propose pushing a branch to a remote.")),
        Operation::Branch => ("Propose a branch", described!("Propose creating a branch.")),
        Operation::BranchDelete => (
            "Propose deleting branches",
            described!(
                "Propose deleting local branches across repositories (unmerged, checked-out or moved branches are \
                 kept)."
            ),
        ),
        Operation::WorktreeRemove => (
            "Propose removing a worktree",
            described!("Propose removing a linked worktree that holds nothing to lose (its branch is kept)."),
        ),
        Operation::SubmodulePointer => (
            "Propose a submodule pointer change",
            described!(
                "Propose recording a submodule's checked-out commit in its parent, or returning it to the recorded \
                 one."
            ),
        ),
    }
}

/// The operation called `name`.
pub fn operation(name: &str) -> Option<Operation> {
    Operation::from_name(name)
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
        Kind::LinkedWorktree => text(4096),
        Kind::Targets => json!({
            "type": "array", "minItems": 1, "maxItems": MAX_DELETE_REPOS,
            "items": { "type": "object", "required": ["repoPath", "branches"], "additionalProperties": false,
                "properties": { "repoPath": schema::repo_path(), "branches": { "type": "array", "minItems": 1,
                    "maxItems": MAX_DELETE_BRANCHES_PER_REPO, "items": text(MAX_REVISION_LEN as u64) } } }
        }),
        Kind::Steps => {
            let steps: Vec<Value> = Operation::STEPS.into_iter().map(step_schema).collect();
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

fn step_schema(operation: Operation) -> Value {
    let mut properties = Map::new();
    properties.insert("type".to_owned(), json!({ "const": operation.name() }));
    let mut required = vec!["type"];
    for field in operation.table() {
        properties.insert(field.name.to_owned(), field_schema(field));
        if field.required {
            required.push(field.name);
        }
    }
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

/// The input schema of `operation.preview.{operation}`: `repoPath`, `reason`, `idempotencyKey` and its fields.
pub fn input_schema(operation: Operation) -> Value {
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
    for field in operation.table() {
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
    operation: Operation,
    arguments: &Map<String, Value>,
) -> Result<Map<String, Value>, Refusal> {
    let mut body = Map::new();
    for field in operation.table() {
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
        Kind::LinkedWorktree => return Ok(Value::from(check_removable_worktree(ctx, repo, text)?)),
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
        let Some(operation) = operation(kind).filter(|operation| operation.is_step()) else {
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

/// worktreeRemove `path`: a registered linked worktree of `repo` (absolute, or relative to its work tree), not the
/// main one nor `repoPath` itself, inside the allowed roots (one outside is named, not read), not locked or gone,
/// without uncommitted changes, conflicts or an operation in progress, as `worktree.list` reads it. Returns the
/// path as git registers it. Commits no other ref reaches are the gateway's check (it refuses them on the card and
/// at execution).
fn check_removable_worktree(ctx: &CallContext<'_>, repo: &Repo, path: &str) -> Result<String, Refusal> {
    use fluxgit_engine::{Error, InvalidReason};
    let refuse = |reason: &str, message: String| {
        Refusal::Params(ProtocolError::invalid_params(message, Some(json!({ "reason": reason, "field": "path" }))))
    };
    if path.is_empty() || path.chars().any(char::is_control) {
        let message = format!("path {path:?} must be non-empty, without control characters");
        return Err(Refusal::Engine(Error::invalid(InvalidReason::InvalidPath, message)));
    }
    let given = Path::new(path);
    let absolute = if given.is_absolute() { given.to_owned() } else { repo.location.root.join(given) };
    let resolve = |path: &Path| fluxgit_contract::resolved_path(path);
    let target = resolve(&absolute);
    if !ctx.engine.allowed_roots().iter().any(|root| target.starts_with(root)) {
        return Err(Refusal::Engine(Error::invalid(
            InvalidReason::OutsideAllowedRoots,
            format!("{} is outside the allowed roots (FLUXGIT_MCP_ALLOWED_ROOTS): named, not read", target.display()),
        )));
    }
    let report = ctx.engine.worktree_list(repo, &fluxgit_engine::worktree_list::Options::default())?;
    let Some(worktree) = report.worktrees.iter().find(|worktree| resolve(Path::new(&worktree.path)) == target) else {
        let message = format!("{} is not a linked worktree of this repository (see worktree_list)", target.display());
        return Err(refuse("not_a_worktree", message));
    };
    let name = &worktree.path;
    let refusal = if worktree.main {
        Some(("main_worktree", format!("{name} is the main worktree: it is never removed")))
    } else if worktree.current {
        Some(("current_worktree", format!("{name} is repoPath itself: propose from another worktree")))
    } else if worktree.outside_roots {
        Some(("outside_allowed_roots", format!("{name} is outside the allowed roots: named, not read")))
    } else if worktree.locked {
        Some(("worktree_locked", format!("{name} is locked: `git worktree unlock` it first if it may go")))
    } else if worktree.prunable {
        Some(("worktree_missing", format!("{name} is gone: `git worktree prune` removes its registration")))
    } else if let Some(error) = worktree.state_error.as_ref().map(|error| error.to_string()) {
        Some(("unassessable", format!("{name} cannot be read ({error}), so what it holds is unknown")))
    } else if let Some(operation) = &worktree.operation {
        let operation = serde_json::to_value(operation).unwrap_or_default();
        Some(("operation_in_progress", format!("a {operation} is in progress in {name}: finish or abort it first")))
    } else {
        let changed = worktree.conflicted + worktree.staged + worktree.unstaged + worktree.untracked;
        (changed > 0).then(|| {
            let message = format!(
                "{name} holds uncommitted changes that would be lost ({} conflicted, {} staged, {} unstaged, {} \
                 untracked): commit or stash them first",
                worktree.conflicted, worktree.staged, worktree.unstaged, worktree.untracked
            );
            ("uncommitted_changes", message)
        })
    };
    match refusal {
        Some((reason, message)) => Err(refuse(reason, message)),
        None => Ok(worktree.path.clone()),
    }
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
