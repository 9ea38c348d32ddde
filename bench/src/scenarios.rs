//! The benchmark's scenarios: which fixture, the situation an agent faces there, and the tool calls it makes.

use fluxgit_fixtures::Scenario;

/// One benchmark scenario.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BenchScenario {
    /// The name used on the command line and as the results directory.
    pub(crate) name: &'static str,
    /// The fixture it is built from.
    pub(crate) fixture: Scenario,
    /// The situation an agent faces, one sentence.
    pub(crate) situation: &'static str,
    /// The tool calls an agent makes, `repo.brief` first; `repoPath` is added to each.
    pub(crate) calls: &'static [ToolCall],
    /// Takes minutes to build: run only when named or with `--all`.
    pub(crate) heavy: bool,
}

/// One tool call: the tool name and its arguments besides `repoPath`, as a JSON object.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolCall {
    /// Tool name, e.g. `repo.brief`.
    pub(crate) tool: &'static str,
    /// Arguments besides `repoPath`, e.g. `{"path":"packages/api"}`.
    pub(crate) arguments: &'static str,
}

/// The brief, asked for the [`crate::oracle::RECENT_COMMITS`] commits the checklist and the sweep's `git log -n 10`
/// count (the brief's own default is fewer).
pub(crate) const BRIEF: ToolCall = ToolCall { tool: "repo.brief", arguments: r#"{"recentCommits":10}"# };
const CONFLICT_READ: ToolCall = ToolCall { tool: "conflict.read", arguments: "{}" };

/// Every scenario, in the order of the tables.
pub(crate) const ALL: [BenchScenario; 9] = [
    BenchScenario {
        name: "clean-small",
        fixture: Scenario::Clean,
        situation: "A small C project on `main`, in sync with `origin/main`, nothing to commit: the agent only needs \
                    to confirm that nothing is going on.",
        calls: &[BRIEF],
        heavy: false,
    },
    BenchScenario {
        name: "dirty-monorepo",
        fixture: Scenario::DirtyMonorepo,
        situation: "A three-package monorepo with CODEOWNERS and staged, unstaged and untracked changes across the \
                    packages: the agent must know what is in flight before touching `packages/api`.",
        calls: &[
            BRIEF,
            ToolCall { tool: "repo.scope", arguments: r#"{"path":"packages/api"}"# },
            ToolCall { tool: "diff.text", arguments: "{}" },
        ],
        heavy: false,
    },
    BenchScenario {
        name: "ahead-behind",
        fixture: Scenario::AheadBehind,
        situation: "`main` has diverged from `origin/main` (2 local commits, 3 upstream), with other branches \
                    tracking, untracked and gone upstreams: the agent must not push blindly.",
        calls: &[BRIEF],
        heavy: false,
    },
    BenchScenario {
        name: "merge-conflict",
        fixture: Scenario::MergeConflict,
        situation: "A `git merge topic` stopped with two content conflicts and a modify/delete conflict: the agent \
                    must see the merge in progress and the conflicted files.",
        calls: &[BRIEF, CONFLICT_READ],
        heavy: false,
    },
    BenchScenario {
        name: "rebase-stopped",
        fixture: Scenario::RebaseStopped,
        situation: "`git rebase main` on `feature/parser` stopped on a conflict in `src/util.c`, HEAD detached \
                    mid-rebase: the agent must know which branch is being rebased and what conflicts.",
        calls: &[BRIEF, CONFLICT_READ],
        heavy: false,
    },
    BenchScenario {
        name: "detached-tag",
        fixture: Scenario::DetachedTag,
        situation: "HEAD detached at tag `v1.0`, two commits behind `main`: commits made here would be lost.",
        calls: &[BRIEF],
        heavy: false,
    },
    BenchScenario {
        name: "submodule-drift",
        fixture: Scenario::Submodules,
        situation: "A superproject with three submodules (one nested): one checked out ahead of its recorded \
                    commit, one not initialised.",
        calls: &[BRIEF],
        heavy: false,
    },
    BenchScenario {
        name: "many-branches-stashes",
        fixture: Scenario::ManyBranchesStashes,
        situation: "60 local branches (12 tracking origin) and 8 stashes on a clean `main`: the agent must not \
                    lose the stashed work nor drown in branch listings.",
        calls: &[BRIEF],
        heavy: false,
    },
    BenchScenario {
        name: "big-history",
        fixture: Scenario::BigHistory,
        situation: "100,000 files, 50,000 commits, 500 branches (built with `git fast-import`), `main` 5 ahead and \
                    3 behind `origin/main`, a few local edits: the agent needs the state without paying for the size.",
        calls: &[BRIEF, ToolCall { tool: "repo.scope", arguments: r#"{"path":"src/m000"}"# }],
        heavy: true,
    },
];

/// Every tool's default call for the per-tool table: the tools that existed before the compact shapes, each with
/// only its required arguments (`repo.scope` on the whole tree, `commit.details` of HEAD).
pub(crate) const PER_TOOL: [ToolCall; 13] = [
    BRIEF,
    ToolCall { tool: "repo.status", arguments: "{}" },
    ToolCall { tool: "repo.refs", arguments: "{}" },
    ToolCall { tool: "repo.history", arguments: "{}" },
    ToolCall { tool: "repo.reflog", arguments: "{}" },
    ToolCall { tool: "repo.scope", arguments: r#"{"path":"."}"# },
    ToolCall { tool: "repo.branchStack", arguments: "{}" },
    ToolCall { tool: "commit.details", arguments: r#"{"commit":"HEAD"}"# },
    CONFLICT_READ,
    ToolCall { tool: "worktree.changes", arguments: "{}" },
    ToolCall { tool: "worktree.list", arguments: "{}" },
    ToolCall { tool: "submodule.status", arguments: "{}" },
    ToolCall { tool: "diff.text", arguments: "{}" },
];

/// The scenario named `name`.
pub(crate) fn by_name(name: &str) -> Option<BenchScenario> {
    ALL.iter().copied().find(|scenario| scenario.name == name)
}

/// The names of every scenario, for error messages.
pub(crate) fn names() -> String {
    ALL.iter().map(|scenario| scenario.name).collect::<Vec<_>>().join(", ")
}
