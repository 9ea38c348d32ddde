//! The fields of each operation (design.md#tools "Write handshake"), twice in one place: as a table the sidecar turns
//! into input schemas, checks and defaults ([`Field`], [`Operation::table`]), and as serde structs the gateway
//! reads a checked body with ([`Fields`]). Both use today's wire names; a test holds them to each other.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::operation::{Operation, Risk};

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
/// The revision `currentRef`, `startPoint` (and the gateway's `targetRef`) default to.
pub const HEAD: &str = "HEAD";
/// The remote a push defaults to.
pub const DEFAULT_REMOTE: &str = "origin";

/// Writes a string enum of the contract: its serde names, [`Default`], `name()` and `NAMES`.
macro_rules! choice {
    ($(#[doc = $doc:literal])* $name:ident default $default:ident {
        $($(#[doc = $variant_doc:literal])* $variant:ident = $wire:literal,)*
    }) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[doc = $variant_doc])* #[serde(rename = $wire)] $variant,)*
        }

        impl $name {
            /// Every wire name, in order (a schema's `enum`).
            pub const NAMES: &'static [&'static str] = &[$($wire,)*];

            /// The wire name.
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire,)*
                }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::$default
            }
        }
    };
}

choice! {
    /// A merge's `strategy`.
    MergeStrategy default Merge {
        /// `merge`: a merge commit.
        Merge = "merge",
        /// `squash`: one squashed commit.
        Squash = "squash",
    }
}

choice! {
    /// A reset's `mode`.
    ResetMode default Mixed {
        /// `soft`: the index and work tree stay.
        Soft = "soft",
        /// `mixed` (the default): the index is reset, the work tree stays.
        Mixed = "mixed",
        /// `hard`: the index and work tree are reset (work-tree changes are lost).
        Hard = "hard",
    }
}

choice! {
    /// A submodulePointer's `direction`.
    Direction default Record {
        /// `record`: commit the checked-out commit as the parent's pointer.
        Record = "record",
        /// `return`: check out the recorded commit (detached).
        Return = "return",
    }
}

/// One field of an operation, as the sidecar offers and checks it.
#[derive(Debug)]
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
#[derive(Debug, Clone, Copy)]
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
    /// A registered linked worktree of the repository, absolute or relative to it, inside the allowed roots
    /// (worktreeRemove `path`).
    LinkedWorktree,
    /// branchDelete `targets`.
    Targets,
    /// plan `steps`.
    Steps,
}

/// The default of a field.
#[derive(Debug, Clone, Copy)]
pub enum Fill {
    /// None: an absent optional field is not sent.
    Nothing,
    /// This boolean.
    Bool(bool),
    /// This string.
    Text(&'static str),
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
        Kind::Choice(MergeStrategy::NAMES),
        Fill::Text(MergeStrategy::Merge.name()),
        "A merge commit, or one squashed commit.",
    ),
];
const REBASE: &[Field] = &[
    required("ontoRef", Kind::Revision, "The revision to rebase onto."),
    defaults_to("currentRef", Kind::Revision, Fill::Text(HEAD), "The branch to rebase."),
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
        Kind::Choice(ResetMode::NAMES),
        Fill::Text(ResetMode::Mixed.name()),
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
    defaults_to("remote", Kind::Name, Fill::Text(DEFAULT_REMOTE), "The remote to push to."),
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
    defaults_to("startPoint", Kind::Revision, Fill::Text(HEAD), "Where the branch starts."),
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
        Kind::Choice(Direction::NAMES),
        "record: commit the checked-out commit as the parent's pointer; return: check out the recorded one (detached).",
    ),
    field("message", Kind::Text(MAX_MESSAGE_CHARS), "The parent's commit message (record only)."),
    field("expectedRecordedOid", Kind::Oid, "Refuse unless the parent records this commit."),
    field("expectedCheckedOutOid", Kind::Oid, "Refuse unless the submodule has this commit checked out."),
];
const WORKTREE_REMOVE: &[Field] =
    &[required("path", Kind::LinkedWorktree, "The linked worktree: absolute, or relative to repoPath.")];

impl Operation {
    /// Its fields besides the envelope (`repoPath`, `reason`, `idempotencyKey`, ...), in the order they are sent.
    #[must_use]
    pub const fn table(self) -> &'static [Field] {
        match self {
            Self::Merge => MERGE,
            Self::Rebase => REBASE,
            Self::Discard => DISCARD,
            Self::Reset => RESET,
            Self::Patch => PATCH,
            Self::Plan => PLAN,
            Self::Worktree => WORKTREE,
            Self::Commit => COMMIT,
            Self::Push => PUSH,
            Self::Branch => BRANCH,
            Self::BranchDelete => BRANCH_DELETE,
            Self::SubmodulePointer => SUBMODULE_POINTER,
            Self::WorktreeRemove => WORKTREE_REMOVE,
        }
    }
}

fn head() -> String {
    HEAD.to_owned()
}

fn origin() -> String {
    DEFAULT_REMOTE.to_owned()
}

const fn yes() -> bool {
    true
}

/// merge's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MergeFields {
    /// The revision to merge.
    pub source_ref: String,
    /// The branch to merge into (it must be checked out).
    pub target_ref: String,
    /// A merge commit or a squash.
    #[serde(default)]
    pub strategy: MergeStrategy,
}

/// rebase's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RebaseFields {
    /// The revision to rebase onto.
    pub onto_ref: String,
    /// The branch to rebase (default `HEAD`).
    #[serde(default = "head")]
    pub current_ref: String,
    /// Always `false`.
    #[serde(default)]
    pub interactive: bool,
}

/// discard's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscardFields {
    /// Repository-relative paths whose uncommitted changes are discarded.
    pub paths: Vec<String>,
}

/// reset's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResetFields {
    /// The revision the current branch is reset to.
    pub target_ref: String,
    /// soft, mixed (the default) or hard.
    #[serde(default)]
    pub mode: ResetMode,
}

impl ResetFields {
    /// The `mode` of `body`, or the default ([`ResetMode::Mixed`]) when it is absent or not a mode.
    #[must_use]
    pub fn mode_of(body: &Value) -> ResetMode {
        body.get("mode").and_then(|mode| ResetMode::deserialize(mode).ok()).unwrap_or_default()
    }
}

/// patch's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchFields {
    /// A unified patch as `git apply` takes it.
    pub patch_content: String,
    /// Also apply it to the index.
    #[serde(default)]
    pub apply_to_index: bool,
}

/// One step of a plan: its `type` and that operation's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Step {
    /// A merge step.
    Merge(MergeFields),
    /// A rebase step.
    Rebase(RebaseFields),
    /// A discard step.
    Discard(DiscardFields),
    /// A reset step.
    Reset(ResetFields),
    /// A patch step.
    Patch(PatchFields),
}

impl Step {
    /// The step's operation.
    #[must_use]
    pub const fn operation(&self) -> Operation {
        match self {
            Self::Merge(_) => Operation::Merge,
            Self::Rebase(_) => Operation::Rebase,
            Self::Discard(_) => Operation::Discard,
            Self::Reset(_) => Operation::Reset,
            Self::Patch(_) => Operation::Patch,
        }
    }
}

/// plan's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanFields {
    /// 1-10 steps run in order.
    pub steps: Vec<Step>,
}

/// worktree's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeFields {
    /// The branch checked out in the new worktree.
    pub branch: String,
    /// The new worktree's absolute path (the sidecar always sends one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// commit's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitFields {
    /// The commit message.
    pub message: String,
    /// Exactly these paths, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// Stage every change first.
    #[serde(default)]
    pub stage_all: bool,
}

/// push's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushFields {
    /// The remote (default `origin`).
    #[serde(default = "origin")]
    pub remote: String,
    /// The local branch; the current one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Set the pushed branch as upstream.
    #[serde(default)]
    pub set_upstream: bool,
    /// Force with lease.
    #[serde(default)]
    pub force_with_lease: bool,
}

impl PushFields {
    /// Whether `body` asks for a forced push (`forceWithLease` is `true`; absent or not a boolean: no).
    #[must_use]
    pub fn forced(body: &Value) -> bool {
        body.get("forceWithLease").and_then(Value::as_bool).unwrap_or(false)
    }
}

/// branch's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchFields {
    /// The new branch's name.
    pub name: String,
    /// Where it starts (default `HEAD`).
    #[serde(default = "head")]
    pub start_point: String,
    /// Check it out (default yes).
    #[serde(default = "yes")]
    pub checkout: bool,
}

/// One repository of a branchDelete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// The repository.
    pub repo_path: String,
    /// Its local branches to delete.
    pub branches: Vec<String>,
}

/// branchDelete's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchDeleteFields {
    /// 1-20 repositories with 1-20 branches each.
    pub targets: Vec<Target>,
}

/// submodulePointer's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubmodulePointerFields {
    /// The submodule's path, relative to its parent.
    pub relative_path: String,
    /// A nested submodule's parent, relative to the repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_path: Option<String>,
    /// record or return.
    pub direction: Direction,
    /// The parent's commit message (record only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Refuse unless the parent records this commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_recorded_oid: Option<String>,
    /// Refuse unless the submodule has this commit checked out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_checked_out_oid: Option<String>,
}

/// worktreeRemove's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeRemoveFields {
    /// The linked worktree: absolute, or relative to the repository (the sidecar sends it absolute, resolved).
    pub path: String,
}

/// The fields of one operation, typed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Fields {
    /// [`Operation::Merge`].
    Merge(MergeFields),
    /// [`Operation::Rebase`].
    Rebase(RebaseFields),
    /// [`Operation::Discard`].
    Discard(DiscardFields),
    /// [`Operation::Reset`].
    Reset(ResetFields),
    /// [`Operation::Patch`].
    Patch(PatchFields),
    /// [`Operation::Plan`].
    Plan(PlanFields),
    /// [`Operation::Worktree`].
    Worktree(WorktreeFields),
    /// [`Operation::Commit`].
    Commit(CommitFields),
    /// [`Operation::Push`].
    Push(PushFields),
    /// [`Operation::Branch`].
    Branch(BranchFields),
    /// [`Operation::BranchDelete`].
    BranchDelete(BranchDeleteFields),
    /// [`Operation::SubmodulePointer`].
    SubmodulePointer(SubmodulePointerFields),
    /// [`Operation::WorktreeRemove`].
    WorktreeRemove(WorktreeRemoveFields),
}

fn typed<T: DeserializeOwned>(body: &Value) -> Result<T, serde_json::Error> {
    T::deserialize(body)
}

impl Fields {
    /// Parses `body` (other fields ignored) as the fields of `operation`.
    ///
    /// # Errors
    /// When a field is missing without a default, or has the wrong type or value.
    pub fn parse(operation: Operation, body: &Value) -> Result<Self, serde_json::Error> {
        Ok(match operation {
            Operation::Merge => Self::Merge(typed(body)?),
            Operation::Rebase => Self::Rebase(typed(body)?),
            Operation::Discard => Self::Discard(typed(body)?),
            Operation::Reset => Self::Reset(typed(body)?),
            Operation::Patch => Self::Patch(typed(body)?),
            Operation::Plan => Self::Plan(typed(body)?),
            Operation::Worktree => Self::Worktree(typed(body)?),
            Operation::Commit => Self::Commit(typed(body)?),
            Operation::Push => Self::Push(typed(body)?),
            Operation::Branch => Self::Branch(typed(body)?),
            Operation::BranchDelete => Self::BranchDelete(typed(body)?),
            Operation::SubmodulePointer => Self::SubmodulePointer(typed(body)?),
            Operation::WorktreeRemove => Self::WorktreeRemove(typed(body)?),
        })
    }

    /// The operation these are the fields of.
    #[must_use]
    pub const fn operation(&self) -> Operation {
        match self {
            Self::Merge(_) => Operation::Merge,
            Self::Rebase(_) => Operation::Rebase,
            Self::Discard(_) => Operation::Discard,
            Self::Reset(_) => Operation::Reset,
            Self::Patch(_) => Operation::Patch,
            Self::Plan(_) => Operation::Plan,
            Self::Worktree(_) => Operation::Worktree,
            Self::Commit(_) => Operation::Commit,
            Self::Push(_) => Operation::Push,
            Self::Branch(_) => Operation::Branch,
            Self::BranchDelete(_) => Operation::BranchDelete,
            Self::SubmodulePointer(_) => Operation::SubmodulePointer,
            Self::WorktreeRemove(_) => Operation::WorktreeRemove,
        }
    }
}

impl Operation {
    /// The risk of this operation with the fields of `body` (a proposal body or a plan step): `high` for a
    /// discard, a branch deletion, a hard reset, a forced push and a plan with a high step; `low` for a branch, a
    /// commit and a worktree; `medium` otherwise (a worktree removal too: it deletes a directory, ignored files
    /// with it). A field that does not parse counts as its default.
    #[must_use]
    pub fn risk(self, body: &Value) -> Risk {
        match self {
            Self::Branch | Self::Commit | Self::Worktree => Risk::Low,
            Self::Discard | Self::BranchDelete => Risk::High,
            Self::Reset => match ResetFields::mode_of(body) {
                ResetMode::Hard => Risk::High,
                ResetMode::Soft | ResetMode::Mixed => Risk::Medium,
            },
            Self::Push if PushFields::forced(body) => Risk::High,
            Self::Plan => {
                let steps = body.get("steps").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
                let high = steps.iter().any(|step| {
                    let operation = step.get("type").and_then(Value::as_str).and_then(Self::from_name);
                    operation.is_some_and(|operation| operation.risk(step) == Risk::High)
                });
                if high { Risk::High } else { Risk::Medium }
            }
            Self::Merge | Self::Rebase | Self::Patch | Self::Push | Self::SubmodulePointer | Self::WorktreeRemove => {
                Risk::Medium
            }
        }
    }

    /// Parses `body` (a proposal body or plan step, other fields ignored) as this operation's fields.
    ///
    /// # Errors
    /// When a field is missing without a default, or has the wrong type or value.
    pub fn fields(self, body: &Value) -> Result<Fields, serde_json::Error> {
        Fields::parse(self, body)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;

    /// A body as the sidecar fills it from the table: every field, a sample value of its kind, in table order.
    fn sample(operation: Operation) -> Value {
        let mut body = Map::new();
        for field in operation.table() {
            let value = match field.kind {
                Kind::Revision | Kind::Name | Kind::BranchName => json!("main"),
                Kind::RelativePath => json!("lib/sub"),
                Kind::Paths => json!(["a.txt", "dir/b.txt"]),
                Kind::Patch => json!("--- a/x\n+++ b/x\n"),
                Kind::Flag | Kind::FalseOnly => json!(false),
                Kind::Choice(names) => json!(names[names.len() - 1]),
                Kind::Text(_) => json!("a message"),
                Kind::Oid => json!("0123456789012345678901234567890123456789"),
                Kind::AbsolutePath => json!("/work/repo.worktrees/main"),
                Kind::LinkedWorktree => json!("../repo.worktrees/topic"),
                Kind::Targets => json!([{ "repoPath": "/work/repo", "branches": ["old", "older"] }]),
                Kind::Steps => json!(
                    Operation::STEPS
                        .iter()
                        .map(|step| {
                            let mut fields = Map::new();
                            fields.insert("type".to_owned(), json!(step.name()));
                            if let Value::Object(rest) = sample(*step) {
                                fields.extend(rest);
                            }
                            Value::Object(fields)
                        })
                        .collect::<Vec<_>>()
                ),
            };
            body.insert(field.name.to_owned(), value);
        }
        Value::Object(body)
    }

    #[test]
    fn the_structs_read_and_write_every_field_of_the_table_byte_for_byte() {
        for operation in Operation::ALL {
            let body = sample(operation);
            let fields = operation.fields(&body).unwrap_or_else(|error| panic!("{operation}: {error}"));
            assert_eq!(fields.operation(), operation);
            let written = serde_json::to_string(&fields).expect("serializes");
            assert_eq!(written, serde_json::to_string(&body).expect("serializes"), "{operation}");
        }
    }

    #[test]
    fn the_structs_fill_the_defaults_the_table_names() {
        for operation in Operation::ALL {
            let mut body = sample(operation);
            let object = body.as_object_mut().expect("object");
            let defaults: Vec<&Field> =
                operation.table().iter().filter(|field| !matches!(field.default, Fill::Nothing)).collect();
            for field in &defaults {
                object.remove(field.name);
            }
            let written = serde_json::to_value(operation.fields(&body).expect("parses")).expect("serializes");
            for field in defaults {
                let expected = match field.default {
                    Fill::Bool(value) => json!(value),
                    Fill::Text(value) => json!(value),
                    Fill::Nothing => unreachable!(),
                };
                assert_eq!(written[field.name], expected, "{operation}.{}", field.name);
            }
        }
        assert_eq!(ResetFields::mode_of(&json!({})), ResetMode::Mixed);
        assert_eq!(ResetFields::mode_of(&json!({ "mode": "soft" })), ResetMode::Soft);
        assert_eq!(ResetFields::mode_of(&json!({ "mode": 3 })), ResetMode::Mixed);
    }

    #[test]
    fn a_required_field_missing_or_a_bad_choice_is_an_error() {
        assert!(Operation::Reset.fields(&json!({ "mode": "hard" })).is_err());
        assert!(Operation::Reset.fields(&json!({ "targetRef": "x", "mode": "HARD" })).is_err());
        assert!(Operation::Plan.fields(&json!({ "steps": [{ "type": "push" }] })).is_err());
        assert!(Operation::SubmodulePointer.fields(&json!({ "relativePath": "a" })).is_err());
    }

    #[test]
    fn plan_steps_are_named_as_their_operations() {
        for step in Operation::STEPS {
            let mut body = sample(step);
            body["type"] = json!(step.name());
            let parsed: Step = serde_json::from_value(body).expect("parses");
            assert_eq!(parsed.operation(), step);
        }
    }
}
