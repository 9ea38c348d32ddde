//! `repo.brief`'s hints (design.md#tools, issue 22): a small ranked rule set, each rule a situation
//! and the one call that answers the next question an agent has about it, with the arguments to
//! pass.
//!
//! Ranking, highest first: conflicts > operation in progress > commits dropped from a branch >
//! detached HEAD > behind upstream > a parent branch rewritten under the current one > a stack
//! whose base moved > parallel lines of work that collide ([`collisions`], added by
//! `Engine::brief`) > a large change ahead of the base > submodules needing attention > CODEOWNERS
//! with uncommitted changes > uncommitted changes on the default branch > stashes. At most
//! [`MAX_HINTS`] are kept.
//!
//! A hint only names a tool that can answer in the running configuration: write proposals
//! (`operation.preview.*`) only when a gateway is configured ([`Facts::proposals`]); otherwise the
//! hint names a read and its `run` gives the git command a person would run. A hint repeats nothing
//! the brief already says (issue 16): `why` only names what no other field does, and arguments are
//! given only where the tool's default would not do. Every hint has a `why` unless its tool and the
//! brief already say it (the submodules hint beside the brief's list of submodules needing
//! attention), so a reader never has to guess why a call is suggested.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::brief::Brief;
use crate::facets::lineage::{LARGE_CHANGE_LINES, Lineage};
use crate::facets::operation::Operation;
use crate::tool_names::ToolName;

/// Hints kept at most (design.md#tools).
pub(super) const MAX_HINTS: usize = 3;
/// Conflicted paths the conflicts hint names at most; the rest are counted (`+N more`).
pub(super) const MAX_NAMED_CONFLICTS: usize = 3;

/// A ranked next step: call `tool` with `arguments` (plus `repoPath`). `why` carries only what the
/// rest of the brief does not already say (the conflicted paths, the dropped commits, the stack's
/// chain), `run` the git commands a person would run where no tool acts on it; both are left out
/// when empty, so a hint costs a few tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hint {
    /// The rule that fired: `conflicts`, `operation`, `dropped`, `detached`, `behind`,
    /// `parentMoved`, `stack`, `collisions`, `largeChange`, `submodules`, `owners`,
    /// `uncommittedOnDefault`, `stashes`. Not serialised: `tool` and the brief's fields already say
    /// it (design.md#envelope).
    #[serde(skip)]
    pub kind: &'static str,
    /// The tool to call next; always one that answers in the running configuration.
    pub tool: &'static str,
    /// Arguments for `tool` besides `repoPath` (a proposal also needs the caller's `reason`), only
    /// those whose default would not do; default empty.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub arguments: Map<String, Value>,
    /// What the rest of the brief does not say about the situation, e.g.
    /// `docs/guide.md, src/main.c`; default empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub why: String,
    /// The git commands a person would run to act on it where no tool does, alternatives separated
    /// by ` | `, e.g. `git rebase --continue | git rebase --abort`; default empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub run: String,
    /// The brief's section (its `omitted` name) that already states everything the hint says, e.g.
    /// `submoduleAttention` when the brief names every submodule needing attention and the hint
    /// only points to `submodule.status`. The text rendering leaves such a hint out while that
    /// section is shown uncut (the JSON keeps it); `None` for a hint that says something of its
    /// own. Not serialised.
    #[serde(skip)]
    pub stated_by: Option<&'static str>,
}

/// What the rules look at.
#[derive(Debug, Clone, Copy)]
pub(super) struct Facts<'a> {
    /// The brief the hints are for (HEAD, operation, counts, submodules, conventions, stashes).
    pub brief: &'a Brief,
    /// Unmerged paths, in path order.
    pub conflicted: &'a [String],
    /// Every changed path (staged, unstaged, untracked, conflicted; an untracked directory as
    /// `dir/`).
    pub changed: &'a [String],
    /// Dropped commits, the stack and the CODEOWNERS file.
    pub lineage: &'a Lineage,
    /// Write proposals can answer: a gateway is configured.
    pub proposals: bool,
    /// How `tool` (and a `why` that names a tool) spells tool names.
    pub tool_names: crate::Spelling,
    /// The clock, Unix seconds (for commits dropped recently).
    pub now: i64,
}

/// The hint to `repo.collisions` when parallel lines of work change a same file; the brief's
/// `parallel` line already names the first pair, so the hint adds no `why`.
pub(super) fn collisions(parallel: &crate::brief::Parallel, options: &crate::brief::Options) -> Option<Hint> {
    if parallel.overlapping == 0 {
        return None;
    }
    let tool = ToolName::REPO_COLLISIONS.spelled(options.tool_names);
    Some(Hint { stated_by: None, ..hint("collisions", tool, json!({}), String::new(), "") })
}

/// Puts `hint` among `hints` by rank: after conflicts, an operation, dropped commits, a detached
/// HEAD, an upstream ahead and a moved parent or base, before the rest; at most [`MAX_HINTS`] kept.
pub(super) fn insert(hints: &mut Vec<Hint>, hint: Hint) {
    const BELOW: [&str; 5] = ["largeChange", "submodules", "owners", "uncommittedOnDefault", "stashes"];
    let at = hints.iter().position(|other| BELOW.contains(&other.kind)).unwrap_or(hints.len());
    hints.insert(at, hint);
    hints.truncate(MAX_HINTS);
}

/// Applies every rule in rank order and keeps the first [`MAX_HINTS`].
pub(super) fn rank(facts: &Facts<'_>) -> Vec<Hint> {
    let rules: [fn(&Facts<'_>) -> Option<Hint>; 12] = [
        conflicts,
        operation,
        dropped,
        detached,
        behind,
        parent_moved,
        stack,
        large_change,
        submodules,
        owners,
        uncommitted_on_default,
        stashes,
    ];
    rules.iter().filter_map(|rule| rule(facts)).take(MAX_HINTS).collect()
}

impl Facts<'_> {
    /// `tool` in the caller's spelling.
    fn name(&self, tool: ToolName) -> &'static str {
        tool.spelled(self.tool_names)
    }
}

fn hint(kind: &'static str, tool: &'static str, arguments: Value, why: String, run: &str) -> Hint {
    let arguments = match arguments {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    Hint { kind, tool, arguments, why, run: run.to_owned(), stated_by: None }
}

/// What continues and what aborts `operation`, as git commands a person runs: `conflict.read`'s
/// conclude and abort, alternatives separated by ` | `.
fn continue_or_abort(operation: Operation) -> String {
    let (conclude, abort) = crate::conflict::state::conclude_or_abort(operation.into());
    format!("{conclude} | {abort}")
}

/// Up to [`MAX_NAMED_CONFLICTS`] conflicted paths, then `+N more`: the brief counts them but names
/// none.
fn conflicts(facts: &Facts<'_>) -> Option<Hint> {
    let count = facts.brief.working_tree.conflicted;
    if count == 0 {
        return None;
    }
    let mut named = facts.conflicted.iter().take(MAX_NAMED_CONFLICTS).cloned().collect::<Vec<_>>().join(", ");
    if count > MAX_NAMED_CONFLICTS {
        named.push_str(&format!(" +{} more", count - MAX_NAMED_CONFLICTS));
    }
    let run = match facts.brief.operation_in_progress {
        Some(operation) => continue_or_abort(operation),
        None => "git add <path>".to_owned(),
    };
    Some(hint("conflicts", facts.name(ToolName::CONFLICT_READ), json!({}), named, &run))
}

/// The operation and the branch being rebased are the brief's own fields; the hint adds how far it
/// got and how to go on.
fn operation(facts: &Facts<'_>) -> Option<Hint> {
    let operation = facts.brief.operation_in_progress?;
    // The conflicts hint already says how to go on.
    if facts.brief.working_tree.conflicted > 0 {
        return None;
    }
    let run = continue_or_abort(operation);
    let why = "stopped without conflicts: its progress".to_owned();
    Some(hint(
        "operation",
        facts.name(ToolName::CONFLICT_READ),
        json!({}),
        why,
        run.trim_start_matches("git add <path>; "),
    ))
}

fn dropped(facts: &Facts<'_>) -> Option<Hint> {
    let dropped = facts.lineage.dropped_since(facts.now);
    let newest = dropped.first()?;
    let others = dropped.len() - 1;
    let also = if others > 0 {
        format!(", {others} other branch{} too", if others == 1 { "" } else { "es" })
    } else {
        String::new()
    };
    let why = format!(
        "{} dropped {} commit{} ({}) no ref holds{also}",
        newest.branch,
        newest.commits,
        plural(newest.commits),
        newest.action
    );
    Some(hint("dropped", facts.name(ToolName::REPO_REFLOG), json!({ "refName": newest.branch }), why, ""))
}

/// The brief says HEAD is detached; the reflog shows where it came from, and the reason says why it
/// matters.
fn detached(facts: &Facts<'_>) -> Option<Hint> {
    let brief = facts.brief;
    // A rebase or bisect detaches HEAD itself; the operation hint already covers it.
    if !brief.head.detached || matches!(brief.operation_in_progress, Some(Operation::Rebase | Operation::Bisect)) {
        return None;
    }
    if facts.proposals {
        let sha = brief.head.sha.clone().unwrap_or_default();
        return Some(hint(
            "detached",
            facts.name(ToolName::PREVIEW_BRANCH),
            json!({ "name": format!("keep/{sha}"), "startPoint": "HEAD", "checkout": true }),
            "commits made here are lost on switching away".to_owned(),
            "",
        ));
    }
    let why = "where HEAD came from; commits made here are lost on switching away".to_owned();
    Some(hint("detached", facts.name(ToolName::REPO_REFLOG), json!({}), why, "git switch -c <name>"))
}

/// The brief's HEAD says how far behind; the argument names the upstream to preflight, the reason
/// what it tells.
fn behind(facts: &Facts<'_>) -> Option<Hint> {
    let head = &facts.brief.head;
    let upstream = head.upstream.as_ref().filter(|_| head.behind > 0)?;
    let why = "whether catching up conflicts".to_owned();
    Some(hint("behind", facts.name(ToolName::REPO_CONFLICT_PREFLIGHT), json!({ "targetRef": upstream }), why, ""))
}

/// The parent branch is in no field of the brief: the reason names it; `repo.branchStack` gives its
/// old tip, the `git rebase --onto` and whether that replay conflicts.
fn parent_moved(facts: &Facts<'_>) -> Option<Hint> {
    let moved = facts.lineage.parent_moved.as_ref()?;
    let branch = facts.brief.head.branch.as_deref()?;
    let why = format!("parent {} was rebased; this branch still sits on its old commits", moved.parent);
    Some(hint("parentMoved", facts.name(ToolName::REPO_BRANCH_STACK), json!({ "branch": branch }), why, ""))
}

/// The chain under the current branch and how far its base moved; left to [`parent_moved`] when a
/// parent was rewritten (the same call answers both).
fn stack(facts: &Facts<'_>) -> Option<Hint> {
    if facts.lineage.parent_moved.is_some() {
        return None;
    }
    let stack = facts.lineage.stack.as_ref()?;
    let branch = facts.brief.head.branch.as_deref()?;
    let chain = [stack.base.as_str()]
        .into_iter()
        .chain(stack.below.iter().map(String::as_str))
        .chain([branch])
        .collect::<Vec<_>>()
        .join(" -> ");
    Some(hint(
        "stack",
        facts.name(ToolName::REPO_BRANCH_STACK),
        json!({ "branch": branch }),
        format!(
            "{chain}: {} moved {} commit{}; then {} targetRef={}",
            stack.base,
            stack.behind,
            plural(stack.behind),
            facts.name(ToolName::REPO_CONFLICT_PREFLIGHT),
            stack.base
        ),
        "",
    ))
}

/// The branch's own change against its base (the default branch) is large
/// ([`Ahead::is_large`](crate::facets::lineage::Ahead::is_large)): its patch costs thousands of
/// tokens, the changed symbols a fraction of that. The arguments select
/// `git diff <merge-base>..HEAD`; the reason gives the size, which the brief does not.
fn large_change(facts: &Facts<'_>) -> Option<Hint> {
    let ahead = facts.lineage.ahead.as_ref().filter(|ahead| ahead.is_large())?;
    let lines = if ahead.lines >= LARGE_CHANGE_LINES { format!("{}+", ahead.lines) } else { ahead.lines.to_string() };
    let why = format!(
        "{} commit{} ahead of {}: {} file{}, {lines} lines changed; cheaper than {}",
        ahead.commits,
        plural(ahead.commits),
        ahead.base,
        ahead.files,
        plural(ahead.files),
        facts.name(ToolName::DIFF_TEXT)
    );
    let arguments = json!({ "base": ahead.merge_base, "head": "HEAD" });
    Some(hint("largeChange", facts.name(ToolName::DIFF_SEMANTIC), arguments, why, ""))
}

/// The brief's submodules say which need attention; when they name every one, the hint only points
/// to the tool and the text leaves it out. It needs no reason: the brief's list and the tool's name
/// say it.
fn submodules(facts: &Facts<'_>) -> Option<Hint> {
    let submodules = &facts.brief.submodules;
    if submodules.drifted + submodules.uninitialized + submodules.conflicts == 0 {
        return None;
    }
    let hint = hint("submodules", facts.name(ToolName::SUBMODULE_STATUS), json!({}), String::new(), "");
    Some(Hint { stated_by: (!submodules.attention_truncated).then_some("submoduleAttention"), ..hint })
}

/// Every changed path is a submodule the brief already lists as needing attention (its gitlink
/// changed).
fn only_submodules_changed(facts: &Facts<'_>) -> bool {
    let attention = &facts.brief.submodules.attention;
    !facts.changed.is_empty()
        && !facts.brief.submodules.attention_truncated
        && facts
            .changed
            .iter()
            .all(|path| attention.iter().any(|entry| entry.split(" (").next() == Some(path.trim_end_matches('/'))))
}

fn owners(facts: &Facts<'_>) -> Option<Hint> {
    let file = facts.lineage.codeowners?;
    // During an operation the changes are the operation's; the hints above cover it.
    if facts.changed.is_empty()
        || facts.brief.operation_in_progress.is_some()
        || facts.brief.working_tree.conflicted > 0
        || only_submodules_changed(facts)
    {
        return None;
    }
    let directory = busiest_directory(facts.changed);
    let shown = if directory.is_empty() { "." } else { directory.as_str() };
    Some(hint("owners", facts.name(ToolName::REPO_SCOPE), json!({ "path": shown }), format!("owners: {file}"), ""))
}

/// The brief's branch is its default branch (`conventions.defaultBranch`) and the tree is not
/// clean: the reason says so, since the brief states both facts apart and never that work sits on
/// the default branch.
fn uncommitted_on_default(facts: &Facts<'_>) -> Option<Hint> {
    let brief = facts.brief;
    let tree = &brief.working_tree;
    let branch = brief.head.branch.as_ref()?;
    if Some(branch) != brief.conventions.default_branch.as_ref()
        || tree.clean
        || tree.conflicted > 0
        || only_submodules_changed(facts)
    {
        return None;
    }
    if facts.proposals {
        let prefix = brief.conventions.branch_prefixes.first().cloned().unwrap_or_default();
        return Some(hint(
            "uncommittedOnDefault",
            facts.name(ToolName::PREVIEW_BRANCH),
            json!({ "name": format!("{prefix}wip"), "checkout": true }),
            format!("moves the uncommitted work off {branch}"),
            "",
        ));
    }
    let why = format!("review the uncommitted work on {branch} before moving it to a branch");
    Some(hint("uncommittedOnDefault", facts.name(ToolName::WORKTREE_CHANGES), json!({}), why, "git switch -c <topic>"))
}

/// The brief counts the stashes; the argument names the newest, the reason what the call shows.
fn stashes(facts: &Facts<'_>) -> Option<Hint> {
    if facts.brief.stashes.count == 0 {
        return None;
    }
    let why = "what the newest stash holds".to_owned();
    Some(hint("stashes", facts.name(ToolName::COMMIT_DETAILS), json!({ "commit": "stash@{0}" }), why, ""))
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// The directory holding most of `paths`: from the top, go down into the child directory that holds
/// more than half of the paths below the current one, while there is one. `""` for the top.
pub(super) fn busiest_directory(paths: &[String]) -> String {
    let mut current: Vec<&str> = Vec::new();
    loop {
        let below: Vec<Vec<&str>> = paths
            .iter()
            .map(|path| path.trim_end_matches('/').split('/').collect::<Vec<_>>())
            .filter(|parts| parts.len() > current.len() && parts[..current.len()] == current[..])
            .collect();
        let mut children: BTreeMap<&str, usize> = BTreeMap::new();
        for parts in &below {
            // Only directories: a path's last component is a file (or an untracked directory taken as one unit).
            if parts.len() > current.len() + 1 {
                *children.entry(parts[current.len()]).or_default() += 1;
            }
        }
        let Some((child, count)) = children.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) else {
            break;
        };
        if count * 2 <= below.len() {
            break;
        }
        current.push(child);
    }
    current.join("/")
}

#[cfg(test)]
mod tests {
    use super::busiest_directory;

    #[test]
    fn busiest_directory_follows_the_majority() {
        let paths = |list: &[&str]| list.iter().map(|path| (*path).to_owned()).collect::<Vec<_>>();
        assert_eq!(busiest_directory(&paths(&["a/b/c.txt", "a/b/d.txt", "e.txt"])), "a/b");
        assert_eq!(busiest_directory(&paths(&["a/x.txt", "b/y.txt"])), "");
        assert_eq!(busiest_directory(&paths(&["a/x.txt", "a/y/", "a/y/z.txt"])), "a");
        assert_eq!(busiest_directory(&paths(&["top.txt"])), "");
    }
}
