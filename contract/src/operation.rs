//! The operation types of the write handshake (design.md#tools), in the contract's order, with their risks.
//!
//! Each operation's wire name is written once, in the [`operations!`] table below; everything else reaches an
//! operation through [`Operation`] and an exhaustive `match`, so adding one is a compile error everywhere it
//! needs a decision. What depends on an operation's fields (its table, its typed fields, its risk) is in
//! `fields.rs`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Writes [`Operation`] with its wire names, its list [`Operation::ALL`] and its tool names.
macro_rules! operations {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal;)*) => {
        /// One operation type of the write handshake: the sidecar proposes it, the gateway checks, shows and runs
        /// it. Serialized as its wire name (`operationType`, the proposal route, ledger and journal entries).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum Operation {
            $($(#[doc = $doc])* #[serde(rename = $name)] $variant,)*
        }

        impl Operation {
            /// Every operation, in design.md#tools order.
            pub const ALL: [Self; 13] = [$(Self::$variant,)*];

            /// The wire name, e.g. `branchDelete`.
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }

            /// The sidecar's tool that proposes it: `operation.preview.{name}`.
            #[must_use]
            pub const fn tool(self) -> &'static str {
                match self {
                    $(Self::$variant => concat!("operation.preview.", $name),)*
                }
            }
        }
    };
}

operations! {
    /// Merge `sourceRef` into the checked-out `targetRef`.
    Merge = "merge";
    /// Rebase `currentRef` onto `ontoRef` (never interactive).
    Rebase = "rebase";
    /// Discard the uncommitted changes of some paths.
    Discard = "discard";
    /// Reset the current branch to `targetRef`.
    Reset = "reset";
    /// Apply a unified patch to the work tree (and index).
    Patch = "patch";
    /// Up to 10 merge, rebase, discard, reset or patch steps, in order.
    Plan = "plan";
    /// Add a linked worktree for a branch.
    Worktree = "worktree";
    /// Commit staged changes, some paths or everything (never an amend).
    Commit = "commit";
    /// Push a branch to a remote.
    Push = "push";
    /// Create a branch.
    Branch = "branch";
    /// Delete local branches across repositories.
    BranchDelete = "branchDelete";
    /// Record a submodule's checked-out commit in its parent, or return it to the recorded one.
    SubmodulePointer = "submodulePointer";
    /// Remove a linked worktree that holds nothing to lose (its branch is kept).
    WorktreeRemove = "worktreeRemove";
}

/// The wire names of [`Operation::ALL`], in order.
pub const OPERATIONS: [&str; 13] = {
    let mut names = [""; 13];
    let mut index = 0;
    while index < names.len() {
        names[index] = Operation::ALL[index].name();
        index += 1;
    }
    names
};

/// The wire names of [`Operation::STEPS`], in order.
pub const STEP_TYPES: [&str; 5] = {
    let mut names = [""; 5];
    let mut index = 0;
    while index < names.len() {
        names[index] = Operation::STEPS[index].name();
        index += 1;
    }
    names
};

impl Operation {
    /// The operations a `plan` step may be, in design.md#tools order.
    pub const STEPS: [Self; 5] = [Self::Merge, Self::Rebase, Self::Discard, Self::Reset, Self::Patch];

    /// The operation whose wire name is `name`; `None` for any other text (case matters).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|operation| operation.name() == name)
    }

    /// Whether a `plan` step may be this operation.
    #[must_use]
    pub const fn is_step(self) -> bool {
        match self {
            Self::Merge | Self::Rebase | Self::Discard | Self::Reset | Self::Patch => true,
            Self::Plan
            | Self::Worktree
            | Self::Commit
            | Self::Push
            | Self::Branch
            | Self::BranchDelete
            | Self::SubmodulePointer
            | Self::WorktreeRemove => false,
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A text that names no operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownOperation(pub String);

impl fmt::Display for UnknownOperation {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "'{}' is not an operation of the contract", self.0)
    }
}

impl std::error::Error for UnknownOperation {}

impl FromStr for Operation {
    type Err = UnknownOperation;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::from_name(name).ok_or_else(|| UnknownOperation(name.to_owned()))
    }
}

/// How much a person must look at before approving an operation (shown on its card).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// `low`.
    Low,
    /// `medium`.
    Medium,
    /// `high`: the card asks for care (and some operations for a strong confirmation).
    High,
}

impl Risk {
    /// `low`, `medium` or `high`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_round_trip_through_serde_and_from_name() {
        assert_eq!(
            OPERATIONS,
            [
                "merge",
                "rebase",
                "discard",
                "reset",
                "patch",
                "plan",
                "worktree",
                "commit",
                "push",
                "branch",
                "branchDelete",
                "submodulePointer",
                "worktreeRemove"
            ]
        );
        for operation in Operation::ALL {
            let wire = serde_json::to_value(operation).expect("serializes");
            assert_eq!(wire, json!(operation.name()));
            assert_eq!(serde_json::from_value::<Operation>(wire).expect("parses"), operation);
            assert_eq!(operation.name().parse::<Operation>(), Ok(operation));
            assert_eq!(operation.tool(), format!("operation.preview.{operation}"));
        }
        assert_eq!(Operation::from_name("BranchDelete"), None);
        assert_eq!(Operation::from_name(""), None);
        assert!("branch_delete".parse::<Operation>().is_err());
    }

    #[test]
    fn steps_are_exactly_the_operations_a_plan_may_hold() {
        assert_eq!(STEP_TYPES, ["merge", "rebase", "discard", "reset", "patch"]);
        let steps: Vec<Operation> = Operation::ALL.into_iter().filter(|operation| operation.is_step()).collect();
        assert_eq!(steps, Operation::STEPS);
    }

    #[test]
    fn risk_follows_the_fields_that_raise_it() {
        use Operation::*;
        assert_eq!(Reset.risk(&json!({})), Risk::Medium);
        assert_eq!(Reset.risk(&json!({ "mode": "hard" })), Risk::High);
        assert_eq!(Reset.risk(&json!({ "mode": "HARD" })), Risk::Medium);
        assert_eq!(Push.risk(&json!({ "forceWithLease": true })), Risk::High);
        assert_eq!(Push.risk(&json!({ "forceWithLease": "yes" })), Risk::Medium);
        assert_eq!(Branch.risk(&json!({})), Risk::Low);
        assert_eq!(BranchDelete.risk(&json!({})), Risk::High);
        assert_eq!(WorktreeRemove.risk(&json!({})), Risk::Medium);
        let plan = json!({ "steps": [{ "type": "merge" }, { "type": "reset", "mode": "hard" }] });
        assert_eq!(Plan.risk(&plan), Risk::High);
        assert_eq!(Plan.risk(&json!({ "steps": [{ "type": "merge" }, { "type": "nope" }] })), Risk::Medium);
        assert_eq!(serde_json::to_value(Risk::High).expect("serializes"), json!(Risk::High.name()));
    }
}
