//! The names of the tools the engine points to (a brief's hints, a reflog entry's recovery),
//! spelled the way the caller lists its tools.
//!
//! The engine knows nothing of the protocol that serves it, but its answers name the next tool to
//! call. Each tool has one name in two spellings: the dotted one (`repo.reflog`,
//! `operation.preview.branch`) and the same with every `.` written `_` (`repo_reflog`,
//! `operation_preview_branch`). The caller picks the spelling ([`Spelling`]) and the engine writes
//! every name it gives (JSON fields and text renderings alike) in it.

/// How tool names are written in the engine's answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Spelling {
    /// Every `.` written `_` (`repo_brief`): the default, and the only spelling model APIs accept.
    #[default]
    Underscore,
    /// The dotted names (`repo.brief`).
    Dotted,
}

/// One tool the engine names, in both spellings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ToolName {
    dotted: &'static str,
    underscore: &'static str,
}

impl ToolName {
    /// `conflict.read`.
    pub const CONFLICT_READ: Self = Self::of("conflict.read", "conflict_read");
    /// `repo.reflog`.
    pub const REPO_REFLOG: Self = Self::of("repo.reflog", "repo_reflog");
    /// `repo.conflictPreflight`.
    pub const REPO_CONFLICT_PREFLIGHT: Self = Self::of("repo.conflictPreflight", "repo_conflictPreflight");
    /// `repo.branchStack`.
    pub const REPO_BRANCH_STACK: Self = Self::of("repo.branchStack", "repo_branchStack");
    /// `repo.scope`.
    pub const REPO_SCOPE: Self = Self::of("repo.scope", "repo_scope");
    /// `submodule.status`.
    pub const SUBMODULE_STATUS: Self = Self::of("submodule.status", "submodule_status");
    /// `worktree.changes`.
    pub const WORKTREE_CHANGES: Self = Self::of("worktree.changes", "worktree_changes");
    /// `commit.details`.
    pub const COMMIT_DETAILS: Self = Self::of("commit.details", "commit_details");
    /// `diff.semantic`.
    pub const DIFF_SEMANTIC: Self = Self::of("diff.semantic", "diff_semantic");
    /// `diff.text`.
    pub const DIFF_TEXT: Self = Self::of("diff.text", "diff_text");
    /// `repo.collisions`.
    pub const REPO_COLLISIONS: Self = Self::of("repo.collisions", "repo_collisions");
    /// `operation.preview.branch`, the write proposal of a new branch.
    pub const PREVIEW_BRANCH: Self = Self::of("operation.preview.branch", "operation_preview_branch");

    /// Every name the engine gives, for the tests that hold them to the registry.
    pub const ALL: [Self; 12] = [
        Self::CONFLICT_READ,
        Self::REPO_REFLOG,
        Self::REPO_CONFLICT_PREFLIGHT,
        Self::REPO_BRANCH_STACK,
        Self::REPO_SCOPE,
        Self::SUBMODULE_STATUS,
        Self::WORKTREE_CHANGES,
        Self::COMMIT_DETAILS,
        Self::DIFF_SEMANTIC,
        Self::DIFF_TEXT,
        Self::REPO_COLLISIONS,
        Self::PREVIEW_BRANCH,
    ];

    const fn of(dotted: &'static str, underscore: &'static str) -> Self {
        Self { dotted, underscore }
    }

    /// The name in `spelling`.
    pub const fn spelled(self, spelling: Spelling) -> &'static str {
        match spelling {
            Spelling::Underscore => self.underscore,
            Spelling::Dotted => self.dotted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_underscore_spelling_is_the_dotted_one_with_dots_written_underscores() {
        for name in ToolName::ALL {
            let dotted = name.spelled(Spelling::Dotted);
            assert!(dotted.contains('.') && !dotted.contains('_'), "{dotted}");
            assert_eq!(name.spelled(Spelling::Underscore), dotted.replace('.', "_"));
        }
    }
}
