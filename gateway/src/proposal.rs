//! Checking a proposal body on receipt (docs/gateway-http.md): the gateway never trusts the sidecar's checks.
//!
//! Shape of the envelope fields (`previewId`, `agentId`, `idempotencyKey`, `operationType`, `repoPath`, `reason`,
//! `requestedAt`), the canonical repository inside the allowed roots, and each operation's fields: revisions that
//! must name a commit (`sourceRef`, `targetRef`, `ontoRef`, `currentRef`, `startPoint`), names that need only be
//! valid branch names, repository-relative paths without `..`, sizes and enums. Nothing here writes anything.

use std::path::{Path, PathBuf};

use fluxgit_contract::{DEFAULT_REMOTE, Direction, MergeStrategy, Operation, ResetMode, STEP_TYPES};
use serde_json::{Map, Value, json};

use crate::git::Git;
use crate::journal::EXPIRY_MS;
use crate::repo::{self, Canonical};
use crate::time::{now_ms, parse_ms};

/// Longest `patchContent`, in bytes (the contract's limit).
pub const MAX_PATCH_BYTES: usize = fluxgit_contract::MAX_PATCH_BYTES;
/// Most `paths` in discard and commit (the contract's limit).
pub const MAX_PATHS: usize = fluxgit_contract::MAX_PATHS as usize;
/// Longest `reason`, in characters.
pub const MAX_REASON_CHARS: usize = 4096;

/// A proposal that passed every check.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The `previewId`.
    pub id: String,
    /// The agent id.
    pub agent: String,
    /// The idempotency key.
    pub idempotency_key: String,
    /// The operation type.
    pub op: String,
    /// `repoPath` as sent.
    pub repo_path: String,
    /// The canonical repository.
    pub canonical: Canonical,
    /// The reason.
    pub reason: String,
    /// `requestedAt` as sent.
    pub requested_at: String,
    /// Expiry: five minutes after `requestedAt` (a `requestedAt` in the future counts as now).
    pub expires_at_ms: i64,
    /// Every ref the proposal names (for the policy).
    pub refs: Vec<String>,
    /// A worktree proposal's path.
    pub worktree_path: Option<String>,
    /// A plan's step operation types, in order (for the policy).
    pub step_operations: Vec<String>,
    /// The canonical work trees of a branchDelete's target repositories (for the policy).
    pub other_repo_paths: Vec<String>,
    /// The whole body.
    pub body: Value,
}

/// A refusal (HTTP 422): a machine reason, a message, and details.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// Machine reason, e.g. `invalid_revision`.
    pub reason: &'static str,
    /// One sentence.
    pub message: String,
    /// `{field}` and more.
    pub details: Value,
}

fn invalid(reason: &'static str, field: &str, message: impl Into<String>) -> Invalid {
    Invalid { reason, message: message.into(), details: json!({ "field": field }) }
}

/// Whether `id` has the `previewId` shape `[A-Za-z0-9_-]{1,128}`.
pub fn is_safe_id(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// Checks `body` POSTed for `op` against the repository and the allowed roots.
pub fn check(op: &str, body: &Value, allowed_roots: &[PathBuf]) -> Result<Checked, Invalid> {
    let object = body.as_object().ok_or_else(|| invalid("invalid_body", "", "the body must be a JSON object"))?;
    let id = string(object, "previewId")?;
    if !is_safe_id(id) {
        return Err(invalid("invalid_preview_id", "previewId", "previewId must match [A-Za-z0-9_-]{1,128}"));
    }
    let agent = string(object, "agentId")?;
    if !(1..=64).contains(&agent.len())
        || !agent.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
    {
        return Err(invalid("invalid_agent_id", "agentId", "agentId must match [A-Za-z0-9._-]{1,64}"));
    }
    let key = string(object, "idempotencyKey")?;
    let key_ok = key
        .strip_prefix(op)
        .and_then(|rest| rest.strip_prefix(':'))
        .and_then(|rest| rest.strip_prefix("client:").or_else(|| rest.strip_prefix("call:")));
    if !key_ok.is_some_and(|tail| {
        (1..=128).contains(&tail.len())
            && tail.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
    }) {
        return Err(invalid(
            "invalid_idempotency_key",
            "idempotencyKey",
            format!("idempotencyKey must be {op}:client:<key> or {op}:call:<uuid>"),
        ));
    }
    if string(object, "operationType")? != op {
        return Err(invalid("operation_mismatch", "operationType", "operationType differs from the route's operation"));
    }
    let reason = string(object, "reason")?;
    if reason.trim().is_empty() || reason.chars().count() > MAX_REASON_CHARS {
        return Err(invalid("invalid_reason", "reason", format!("reason must be 1-{MAX_REASON_CHARS} characters")));
    }
    let requested_at = string(object, "requestedAt")?;
    let requested_ms = parse_ms(requested_at)
        .ok_or_else(|| invalid("invalid_requested_at", "requestedAt", "requestedAt must be RFC 3339"))?;
    let repo_path = string(object, "repoPath")?;
    let canonical = repo::resolve(Path::new(repo_path), allowed_roots).map_err(|error| Invalid {
        reason: error.reason(),
        message: error.to_string(),
        details: json!({ "field": "repoPath" }),
    })?;
    let git = Git::new(&canonical.work_tree);
    let mut fields = Fields { object, git: &git, refs: Vec::new(), allowed_roots, worktree_path: None };
    fields.operation(op, "")?;
    let mut body = body.clone();
    if let Value::Object(map) = &mut body {
        // Only the gateway writes what it observed; a sender's value is dropped.
        map.remove(OBSERVED);
        if let Some(observed) = observe(op, object, &git, allowed_roots)? {
            map.insert(OBSERVED.to_owned(), observed);
        }
    }
    Ok(Checked {
        id: id.to_owned(),
        agent: agent.to_owned(),
        idempotency_key: key.to_owned(),
        op: op.to_owned(),
        repo_path: repo_path.to_owned(),
        canonical,
        reason: reason.to_owned(),
        requested_at: requested_at.to_owned(),
        expires_at_ms: requested_ms.min(now_ms()) + EXPIRY_MS,
        refs: fields.refs,
        worktree_path: fields.worktree_path,
        step_operations: object
            .get("steps")
            .and_then(Value::as_array)
            .map(|steps| steps.iter().filter_map(|step| step["type"].as_str()).map(str::to_owned).collect())
            .unwrap_or_default(),
        other_repo_paths: body[OBSERVED]["targets"]
            .as_array()
            .map(|targets| {
                targets
                    .iter()
                    .filter_map(|target| target["canonical"]["workTree"].as_str())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        body,
    })
}

/// The body field where the gateway records what it observed on receipt (never taken from the sender): for
/// branchDelete `{targets: [{repoPath, canonical, tips: {branch: sha | null}}]}` (a branch whose tip moved since is
/// kept), for push `{remote, branch, remoteRef, trackingRef, expectedRemoteSha, localSha}` (the lease's expected
/// value), for submodulePointer `{parentWorkTree, submoduleWorkTree, recordedOid, checkedOutOid}`, for
/// worktreeRemove the worktree as registered (`{worktreePath, resolvedPath, branch, headSha, locked, missing}`,
/// [`crate::worktree_remove::Located`]).
pub const OBSERVED: &str = "gatewayObserved";

/// What the gateway observes on receipt for `op` (see [`OBSERVED`]); a refusal when a target does not resolve.
fn observe(
    op: &str,
    object: &Map<String, Value>,
    git: &Git,
    allowed_roots: &[PathBuf],
) -> Result<Option<Value>, Invalid> {
    let Some(operation) = Operation::from_name(op) else { return Ok(None) };
    match operation {
        Operation::BranchDelete => {
            let mut targets = Vec::new();
            for target in object.get("targets").and_then(Value::as_array).into_iter().flatten() {
                let repo_path = target.get("repoPath").and_then(Value::as_str).unwrap_or_default();
                let canonical = repo::resolve(Path::new(repo_path), allowed_roots).map_err(|error| Invalid {
                    reason: error.reason(),
                    message: format!("target {repo_path}: {error}"),
                    details: json!({ "field": "targets", "repoPath": repo_path }),
                })?;
                let target_git = Git::new(&canonical.work_tree);
                let mut tips = Map::new();
                for branch in target.get("branches").and_then(Value::as_array).into_iter().flatten() {
                    let name = branch.as_str().unwrap_or_default();
                    tips.insert(name.to_owned(), json!(local_branch_tip(&target_git, name)));
                }
                targets.push(json!({ "repoPath": repo_path, "canonical": canonical, "tips": tips }));
            }
            Ok(Some(json!({ "targets": targets })))
        }
        Operation::Push => {
            let remote = object.get("remote").and_then(Value::as_str).unwrap_or(DEFAULT_REMOTE);
            let url = git.read(&["remote", "get-url", "--push", "--", remote]);
            if !url.as_ref().is_ok_and(|output| output.success) {
                return Err(invalid("unknown_remote", "remote", format!("no remote named '{remote}' is configured")));
            }
            let branch = match object.get("branch").and_then(Value::as_str) {
                Some(branch) => branch.strip_prefix("refs/heads/").unwrap_or(branch).to_owned(),
                None => match git.head_symbolic() {
                    Ok(Some(head)) => head.strip_prefix("refs/heads/").unwrap_or(&head).to_owned(),
                    _ => return Err(invalid("detached_head", "branch", "HEAD is detached: name the branch to push")),
                },
            };
            let Some(local) = local_branch_tip(git, &branch) else {
                return Err(invalid("unknown_branch", "branch", format!("no local branch '{branch}'")));
            };
            let tracking = format!("refs/remotes/{remote}/{branch}");
            let expected = git.resolve_commit(&tracking).ok().flatten();
            Ok(Some(json!({
                "remote": remote,
                "branch": branch,
                "remoteRef": format!("refs/heads/{branch}"),
                "trackingRef": tracking,
                "expectedRemoteSha": expected,
                "localSha": local,
            })))
        }
        Operation::SubmodulePointer => {
            let observed = observe_submodule(git, object)?;
            for (field, key) in [("expectedRecordedOid", "recordedOid"), ("expectedCheckedOutOid", "checkedOutOid")] {
                if let Some(expected) = object.get(field).and_then(Value::as_str)
                    && !observed[key].as_str().is_some_and(|oid| oid.eq_ignore_ascii_case(expected))
                {
                    return Err(invalid(
                        "expected_oid_mismatch",
                        field,
                        format!("{field} is {expected}, but the submodule's {key} is {}", observed[key]),
                    ));
                }
            }
            Ok(Some(observed))
        }
        Operation::WorktreeRemove => {
            let path = object.get("path").and_then(Value::as_str).unwrap_or_default();
            let located = crate::worktree_remove::locate(git, path, allowed_roots)
                .map_err(|refused| invalid(refused.reason, "path", refused.message))?;
            Ok(Some(json!(located)))
        }
        Operation::Merge
        | Operation::Rebase
        | Operation::Discard
        | Operation::Reset
        | Operation::Patch
        | Operation::Plan
        | Operation::Worktree
        | Operation::Commit
        | Operation::Branch => Ok(None),
    }
}

/// A submodulePointer's repositories and commits as they are now: `{parentWorkTree, submoduleWorkTree, relativePath,
/// recordedOid (the gitlink in the parent's HEAD), checkedOutOid (the submodule's HEAD), checkedOutRef (its branch,
/// or null when detached)}`. Refused when the parent is not a work-tree root inside the repository, the path is not
/// a submodule recorded in the parent's HEAD, or the submodule is not initialised (no repository of its own there).
pub fn observe_submodule(git: &Git, object: &Map<String, Value>) -> Result<Value, Invalid> {
    let top = git.work_tree();
    let parent_rel = object.get("parentPath").and_then(Value::as_str);
    if parent_rel.is_some_and(|path| !is_relative_path(path)) {
        return Err(invalid(
            "invalid_path",
            "parentPath",
            "parentPath must be repository-relative without '..' or '.git'",
        ));
    }
    let root_of = |path: &Path| -> Option<PathBuf> {
        let canonical = std::fs::canonicalize(path).ok()?;
        let output = Git::new(&canonical).read(&["rev-parse", "--show-toplevel"]).ok()?;
        let toplevel = std::fs::canonicalize(output.stdout.trim()).ok()?;
        (output.success && toplevel == canonical && canonical.starts_with(top)).then_some(canonical)
    };
    let parent = match parent_rel {
        Some(path) => root_of(&top.join(path)).ok_or_else(|| {
            invalid("not_a_submodule", "parentPath", "parentPath is not an initialised submodule of the repository")
        })?,
        None => top.to_owned(),
    };
    let relative = string(object, "relativePath")?;
    let parent_git = Git::new(&parent);
    let listing = parent_git
        .read(&["--literal-pathspecs", "ls-tree", "-z", "HEAD", "--", relative])
        .map(|output| output.stdout)
        .unwrap_or_default();
    let recorded = listing
        .split('\0')
        .filter_map(|entry| entry.split_once('\t'))
        .find(|(_, path)| *path == relative.trim_end_matches('/'))
        .and_then(|(meta, _)| meta.strip_prefix("160000 commit ").map(str::to_owned))
        .ok_or_else(|| {
            invalid("not_a_submodule", "relativePath", format!("'{relative}' is not a submodule in the parent's HEAD"))
        })?;
    let submodule = root_of(&parent.join(relative)).ok_or_else(|| {
        invalid("submodule_not_initialised", "relativePath", format!("submodule '{relative}' is not initialised"))
    })?;
    let sub_git = Git::new(&submodule);
    let checked_out = sub_git.head_sha().ok().flatten().ok_or_else(|| {
        invalid(
            "submodule_not_initialised",
            "relativePath",
            format!("submodule '{relative}' has no commit checked out"),
        )
    })?;
    Ok(json!({
        "parentWorkTree": parent,
        "submoduleWorkTree": submodule,
        "relativePath": relative,
        "recordedOid": recorded,
        "checkedOutOid": checked_out,
        "checkedOutRef": sub_git.head_symbolic().ok().flatten(),
    }))
}

/// The tip of the local branch `name` (`refs/heads/` optional), or `None` when it is not a valid branch name or
/// does not exist. Never resolves revision syntax (`main~1` is not a branch name).
pub fn local_branch_tip(git: &Git, name: &str) -> Option<String> {
    let full = if name.starts_with("refs/heads/") { name.to_owned() } else { format!("refs/heads/{name}") };
    let valid = git.read(&["check-ref-format", full.as_str()]).is_ok_and(|output| output.success);
    if !valid {
        return None;
    }
    let output = git.read(&["rev-parse", "--verify", "--quiet", "--end-of-options", full.as_str()]).ok()?;
    output.success.then(|| output.stdout.trim().to_owned()).filter(|sha| !sha.is_empty())
}

struct Fields<'a> {
    object: &'a Map<String, Value>,
    git: &'a Git,
    refs: Vec<String>,
    allowed_roots: &'a [PathBuf],
    worktree_path: Option<String>,
}

impl Fields<'_> {
    fn operation(&mut self, op: &str, prefix: &str) -> Result<(), Invalid> {
        let object = self.object;
        let Some(operation) = Operation::from_name(op) else {
            return Err(invalid("unknown_operation", "operationType", "unknown operation"));
        };
        match operation {
            Operation::Merge => {
                self.revision(object, "sourceRef", prefix)?;
                self.revision(object, "targetRef", prefix)?;
                one_of(object, "strategy", MergeStrategy::NAMES)?;
            }
            Operation::Rebase => {
                self.revision(object, "ontoRef", prefix)?;
                self.revision(object, "currentRef", prefix)?;
                if object.get("interactive").and_then(Value::as_bool) != Some(false) {
                    return Err(invalid("invalid_field", "interactive", "interactive must be false"));
                }
            }
            Operation::Discard => {
                paths(object, "paths", true)?;
            }
            Operation::Reset => {
                self.revision(object, "targetRef", prefix)?;
                one_of(object, "mode", ResetMode::NAMES)?;
            }
            Operation::Patch => {
                let patch = string(object, "patchContent")?;
                if patch.is_empty() || patch.len() > MAX_PATCH_BYTES {
                    return Err(invalid("invalid_field", "patchContent", "patchContent must be 1 byte to 4 MiB"));
                }
                patch_paths(patch)?;
                boolean(object, "applyToIndex")?;
            }
            Operation::Commit => {
                let message = string(object, "message")?;
                if message.trim().is_empty() {
                    return Err(invalid("invalid_field", "message", "message must not be empty"));
                }
                if object.contains_key("amend") {
                    return Err(invalid("invalid_field", "amend", "amend is not supported"));
                }
                if object.contains_key("paths") {
                    paths(object, "paths", false)?;
                }
                boolean(object, "stageAll")?;
            }
            Operation::Branch => {
                self.branch_name(object, "name")?;
                self.revision(object, "startPoint", prefix)?;
                boolean(object, "checkout")?;
            }
            Operation::Worktree => {
                self.branch_name(object, "branch")?;
                let path = string(object, "path")?;
                if has_git_component(path) {
                    return Err(invalid("invalid_path", "path", "the worktree path must not name '.git'"));
                }
                let inside = Path::new(path).is_absolute()
                    && !has_parent_component(path)
                    && self.allowed_roots.iter().any(|root| Path::new(path).starts_with(root));
                if !inside {
                    return Err(invalid(
                        "outside_allowed_roots",
                        "path",
                        "the worktree path must be absolute, inside the allowed roots",
                    ));
                }
                self.worktree_path = Some(path.to_owned());
            }
            Operation::Push => {
                name_shape(object, "remote")?;
                if object.contains_key("branch") {
                    self.refs.push(name_shape(object, "branch")?.to_owned());
                }
                boolean(object, "setUpstream")?;
                boolean(object, "forceWithLease")?;
            }
            Operation::Plan => {
                let steps = object
                    .get("steps")
                    .and_then(Value::as_array)
                    .filter(|steps| (1..=10).contains(&steps.len()))
                    .ok_or_else(|| invalid("invalid_field", "steps", "steps must hold 1-10 steps"))?;
                for (step_idx, step) in steps.iter().enumerate() {
                    let step_object = step
                        .as_object()
                        .ok_or_else(|| invalid("invalid_field", "steps", "each step must be an object"))?;
                    let step_type = string(step_object, "type")?;
                    let Some(step_operation) = Operation::from_name(step_type).filter(|step| step.is_step()) else {
                        let (last, others) = STEP_TYPES.split_last().expect("a plan has step types");
                        return Err(invalid(
                            "invalid_field",
                            "steps",
                            format!("a step must be {} or {last}", others.join(", ")),
                        ));
                    };
                    let mut nested = Fields {
                        object: step_object,
                        git: self.git,
                        refs: Vec::new(),
                        allowed_roots: self.allowed_roots,
                        worktree_path: None,
                    };
                    // Later steps may name refs earlier steps create: only the shape is checked there.
                    nested.operation_shape(step_operation, &format!("steps[{step_idx}]."))?;
                    self.refs.append(&mut nested.refs);
                }
            }
            Operation::BranchDelete => {
                let targets = object
                    .get("targets")
                    .and_then(Value::as_array)
                    .filter(|targets| (1..=20).contains(&targets.len()))
                    .ok_or_else(|| invalid("invalid_field", "targets", "targets must hold 1-20 repositories"))?;
                let mut total = 0;
                for target in targets {
                    let branches = target
                        .get("branches")
                        .and_then(Value::as_array)
                        .filter(|branches| (1..=20).contains(&branches.len()))
                        .ok_or_else(|| invalid("invalid_field", "targets", "each target needs 1-20 branches"))?;
                    total += branches.len();
                    for branch in branches {
                        let name =
                            branch.as_str().filter(|name| is_name_shape(name) && !name.starts_with("refs/remotes/"));
                        let name = name.ok_or_else(|| invalid("invalid_name", "targets", "invalid branch name"))?;
                        self.refs.push(name.to_owned());
                    }
                }
                if total > 100 {
                    return Err(invalid("invalid_field", "targets", "at most 100 branches in all"));
                }
            }
            Operation::WorktreeRemove => {
                let located = crate::worktree_remove::locate(self.git, string(object, "path")?, self.allowed_roots)
                    .map_err(|refused| invalid(refused.reason, "path", refused.message))?;
                if let Some(branch) = located.branch_name() {
                    self.refs.push(branch.to_owned());
                }
                self.worktree_path = Some(located.worktree_path);
            }
            Operation::SubmodulePointer => {
                let relative = string(object, "relativePath")?;
                if !is_relative_path(relative) {
                    return Err(invalid(
                        "invalid_path",
                        "relativePath",
                        "relativePath must be repository-relative without '..' or '.git'",
                    ));
                }
                one_of(object, "direction", Direction::NAMES)?;
            }
        }
        Ok(())
    }

    /// A plan step: the same fields, revisions checked for shape only.
    fn operation_shape(&mut self, op: Operation, prefix: &str) -> Result<(), Invalid> {
        let object = self.object;
        for field in ["sourceRef", "targetRef", "ontoRef", "currentRef"] {
            if object.contains_key(field) {
                let name = name_shape(object, field)?;
                self.refs.push(name.to_owned());
            }
        }
        match op {
            Operation::Merge => one_of(object, "strategy", MergeStrategy::NAMES).map(drop),
            Operation::Rebase if object.get("interactive").and_then(Value::as_bool) == Some(true) => {
                Err(invalid("invalid_field", &format!("{prefix}interactive"), "interactive must be false"))
            }
            Operation::Discard => paths(object, "paths", true),
            Operation::Reset => one_of(object, "mode", ResetMode::NAMES).map(drop),
            Operation::Patch => patch_paths(string(object, "patchContent")?),
            Operation::Rebase
            | Operation::Plan
            | Operation::Worktree
            | Operation::Commit
            | Operation::Push
            | Operation::Branch
            | Operation::BranchDelete
            | Operation::SubmodulePointer
            | Operation::WorktreeRemove => Ok(()),
        }
    }

    fn revision(&mut self, object: &Map<String, Value>, field: &str, prefix: &str) -> Result<(), Invalid> {
        let revision = name_shape(object, field)?;
        match self.git.resolve_commit(revision) {
            Ok(Some(_)) => {
                self.refs.push(revision.to_owned());
                Ok(())
            }
            _ => {
                Err(invalid("unknown_revision", &format!("{prefix}{field}"), format!("{field} does not name a commit")))
            }
        }
    }

    fn branch_name(&mut self, object: &Map<String, Value>, field: &str) -> Result<(), Invalid> {
        let name = name_shape(object, field)?;
        let valid = self.git.read(&["check-ref-format", "--branch", name]).is_ok_and(|output| output.success);
        if !valid {
            return Err(invalid("invalid_name", field, format!("{field} is not a valid branch name")));
        }
        self.refs.push(name.to_owned());
        Ok(())
    }
}

fn string<'a>(object: &'a Map<String, Value>, field: &str) -> Result<&'a str, Invalid> {
    object
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("missing_field", field, format!("{field} must be a string")))
}

fn boolean(object: &Map<String, Value>, field: &str) -> Result<bool, Invalid> {
    object
        .get(field)
        .and_then(Value::as_bool)
        .ok_or_else(|| invalid("missing_field", field, format!("{field} must be a boolean")))
}

fn one_of<'a>(object: &'a Map<String, Value>, field: &str, allowed: &[&str]) -> Result<&'a str, Invalid> {
    let value = string(object, field)?;
    if allowed.contains(&value) {
        Ok(value)
    } else {
        Err(invalid("invalid_field", field, format!("{field} must be one of {}", allowed.join(", "))))
    }
}

/// A revision or name: 1-256 bytes, not starting with `-`, no control characters, no whitespace.
fn is_name_shape(name: &str) -> bool {
    (1..=256).contains(&name.len())
        && !name.starts_with('-')
        && !name.chars().any(|character| character.is_control() || character.is_whitespace())
}

fn name_shape<'a>(object: &'a Map<String, Value>, field: &str) -> Result<&'a str, Invalid> {
    let name = string(object, field)?;
    if is_name_shape(name) {
        Ok(name)
    } else {
        Err(invalid("invalid_revision", field, format!("{field} must not start with '-' nor hold control characters")))
    }
}

fn has_parent_component(path: &str) -> bool {
    Path::new(path).components().any(|component| matches!(component, std::path::Component::ParentDir))
}

/// A repository-relative path: not empty, not absolute, no `..`, no `.git` component ([`is_git_component`]), no
/// control characters.
pub fn is_relative_path(path: &str) -> bool {
    !path.is_empty()
        && !Path::new(path).is_absolute()
        && !has_parent_component(path)
        && !has_git_component(path)
        && !path.chars().any(char::is_control)
}

/// Refuses a patch that names a `.git` path ([`has_git_component`]) on a `---` or `+++` line, in git's
/// `rename`/`copy` lines or on its `diff --git` line, as `git apply` would refuse it at execution.
fn patch_paths(patch: &str) -> Result<(), Invalid> {
    let names_git_dir = patch.lines().any(|line| {
        let named = ["--- ", "+++ ", "rename from ", "rename to ", "copy from ", "copy to ", "diff --git "]
            .iter()
            .find_map(|prefix| line.strip_prefix(prefix));
        named.is_some_and(|rest| {
            let name = rest.split('\t').next().unwrap_or_default().trim_matches('"');
            has_git_component(name)
        })
    });
    if names_git_dir {
        return Err(invalid("invalid_path", "patchContent", "the patch must not touch a '.git' path"));
    }
    Ok(())
}

/// Whether any component of `path` (split at `/` and at `\\`) is [`is_git_component`].
pub fn has_git_component(path: &str) -> bool {
    path.split(['/', '\\']).any(is_git_component)
}

/// Whether git refuses `component` as a path component of a tree or the index because it names the git dir:
/// `.git` in any case, and with the NTFS protection git turns on by default on every platform, also `.git`
/// followed by dots or spaces, an NTFS stream (`.git::$INDEX_ALLOCATION`) and the 8.3 short name `git~1`.
pub fn is_git_component(component: &str) -> bool {
    let bare = component.split(':').next().unwrap_or_default().trim_end_matches(['.', ' ']);
    bare.eq_ignore_ascii_case(".git") || component.eq_ignore_ascii_case("git~1")
}

fn paths(object: &Map<String, Value>, field: &str, required: bool) -> Result<(), Invalid> {
    let list = object
        .get(field)
        .and_then(Value::as_array)
        .filter(|list| list.len() <= MAX_PATHS && (!required || !list.is_empty()))
        .ok_or_else(|| invalid("invalid_field", field, format!("{field} must hold 1-{MAX_PATHS} paths")))?;
    for path in list {
        if !path.as_str().is_some_and(is_relative_path) {
            return Err(invalid("invalid_path", field, "paths must be repository-relative without '..' or '.git'"));
        }
    }
    Ok(())
}

/// The `paths` array of a body, as strings (empty when absent).
pub fn path_list(body: &Value) -> Vec<String> {
    body.get("paths")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// A string field of a body, or `default`.
pub fn field<'a>(body: &'a Value, name: &str, default: &'a str) -> &'a str {
    body.get(name).and_then(Value::as_str).unwrap_or(default)
}

/// A boolean field of a body, or `false`.
pub fn flag(body: &Value, name: &str) -> bool {
    body.get(name).and_then(Value::as_bool).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::{is_git_component, is_relative_path};

    #[test]
    fn a_patch_touching_the_git_dir_is_refused() {
        let patch =
            |name: &str| format!("diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n@@ -1 +1 @@\n-a\n+b\n");
        for name in [".git/config", "sub/.GIT/hooks/pre-commit", ".git", "x/.git./y"] {
            assert!(super::patch_paths(&patch(name)).is_err(), "{name}");
        }
        let rename = "diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to .git/y\n";
        assert!(super::patch_paths(rename).is_err());
        let mode = "diff --git a/.git/x b/.git/x\nold mode 100644\nnew mode 100755\n";
        assert!(super::patch_paths(mode).is_err());
        for name in ["a.txt", ".gitignore", "my .git notes", "dir/.github/x"] {
            assert!(super::patch_paths(&patch(name)).is_ok(), "{name}");
        }
        assert!(super::patch_paths("--- /dev/null\n+++ b/new.txt\t2026-01-01\n@@ -0,0 +1 @@\n+x\n").is_ok());
    }

    #[test]
    fn a_git_component_anywhere_is_refused_as_git_refuses_it() {
        for path in [".git", ".git/config", "sub/.git/config", ".GIT/config", "a/.Git", ".git./x", ".git /x", "git~1/x"]
        {
            assert!(!is_relative_path(path), "{path}");
        }
        for path in ["a.txt", ".gitignore", ".github/x", "x/.gitmodules", "git", "a/.git-blame-ignore-revs", "gits"] {
            assert!(is_relative_path(path), "{path}");
        }
        assert!(is_git_component(".git::$INDEX_ALLOCATION"));
    }
}
