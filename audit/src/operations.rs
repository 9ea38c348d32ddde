//! The operation types of the write handshake (design.md §5), in the contract's order.
//!
//! The sidecar proposes them and the gateway checks and runs them. The two never link each other, and both link
//! this crate, so the list is written here once.

/// Every operation type of the contract, in design.md §5 order.
pub const OPERATIONS: [&str; 12] = [
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
];

/// The operation types a `plan` step may have, in design.md §5 order.
pub const STEP_TYPES: [&str; 5] = ["merge", "rebase", "discard", "reset", "patch"];

/// Whether `names` lists exactly [`OPERATIONS`], in the same order.
///
/// A `const fn`, so that a table written elsewhere (the sidecar's per-operation fields) can be held to the list at
/// compile time.
#[must_use]
pub const fn is_operation_list(names: &[&str]) -> bool {
    if names.len() != OPERATIONS.len() {
        return false;
    }
    let mut index = 0;
    while index < names.len() {
        let (left, right) = (names[index].as_bytes(), OPERATIONS[index].as_bytes());
        if left.len() != right.len() {
            return false;
        }
        let mut byte = 0;
        while byte < left.len() {
            if left[byte] != right[byte] {
                return false;
            }
            byte += 1;
        }
        index += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_matches_itself_and_nothing_shorter_or_reordered() {
        assert!(is_operation_list(&OPERATIONS));
        assert!(!is_operation_list(&OPERATIONS[..11]));
        let mut swapped = OPERATIONS;
        swapped.swap(0, 1);
        assert!(!is_operation_list(&swapped));
        let mut renamed = OPERATIONS;
        renamed[11] = "submodulePointeR";
        assert!(!is_operation_list(&renamed));
    }

    #[test]
    fn every_step_type_is_an_operation() {
        assert!(STEP_TYPES.iter().all(|step| OPERATIONS.contains(step)));
    }
}
