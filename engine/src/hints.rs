//! `repo.brief`'s hints (SPEC §5, issue 22): a small ranked rule set, each rule a situation and the one call that
//! answers the next question an agent has about it, with the arguments to pass.
//!
//! Ranking, highest first: conflicts > operation in progress > commits dropped from a branch > detached HEAD >
//! behind upstream > a stack whose base moved > submodules needing attention > CODEOWNERS with uncommitted changes >
//! uncommitted changes on the default branch > stashes. At most [`MAX_HINTS`] are kept.
//!
//! A hint only names a tool that can answer in the running configuration: write proposals
//! (`operation.preview.*`) only when a gateway is configured ([`Facts::proposals`]); otherwise the hint names a read
//! and its `why` says what a person would run.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::brief::Brief;
use crate::facets::lineage::Lineage;
use crate::facets::operation::Operation;

/// Hints kept at most (SPEC §5).
pub const MAX_HINTS: usize = 3;
/// Conflicted paths the conflicts hint names at most; the rest are counted (`+N more`).
pub const MAX_NAMED_CONFLICTS: usize = 3;

/// A ranked next step: call `tool` with `arguments` (plus `repoPath`); `why` says what it is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hint {
    /// The rule that fired: `conflicts`, `operation`, `dropped`, `detached`, `behind`, `stack`, `submodules`,
    /// `owners`, `uncommittedOnDefault`, `stashes`. Not serialised: `tool` and `why` already say it (SPEC §4.2).
    #[serde(skip)]
    pub kind: &'static str,
    /// The tool to call next; always one that answers in the running configuration.
    pub tool: &'static str,
    /// Arguments for `tool` besides `repoPath` (a proposal also needs the caller's `reason`); default empty.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub arguments: Map<String, Value>,
    /// One sentence: the situation, and what a person would run to act on it when no tool does.
    pub why: String,
}

/// What the rules look at.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The brief the hints are for (HEAD, operation, counts, submodules, conventions, stashes).
    pub brief: &'a Brief,
    /// Unmerged paths, in path order.
    pub conflicted: &'a [String],
    /// Every changed path (staged, unstaged, untracked, conflicted; an untracked directory as `dir/`).
    pub changed: &'a [String],
    /// Dropped commits, the stack and the CODEOWNERS file.
    pub lineage: &'a Lineage,
    /// Write proposals can answer: a gateway is configured.
    pub proposals: bool,
    /// The clock, Unix seconds (for commits dropped recently).
    pub now: i64,
}

/// Applies every rule in rank order and keeps the first [`MAX_HINTS`].
pub fn rank(facts: &Facts<'_>) -> Vec<Hint> {
    let rules: [fn(&Facts<'_>) -> Option<Hint>; 10] =
        [conflicts, operation, dropped, detached, behind, stack, submodules, owners, uncommitted_on_default, stashes];
    rules.iter().filter_map(|rule| rule(facts)).take(MAX_HINTS).collect()
}

fn hint(kind: &'static str, tool: &'static str, arguments: Value, why: String) -> Hint {
    let arguments = match arguments {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    Hint { kind, tool, arguments, why }
}

/// The operation's name as the brief serialises it (`cherry-pick`).
fn operation_name(operation: Operation) -> String {
    serde_json::to_value(operation).ok().and_then(|value| value.as_str().map(str::to_owned)).unwrap_or_default()
}

/// What continues and what aborts `operation`, as git commands a person runs.
fn continue_or_abort(operation: Operation) -> &'static str {
    match operation {
        Operation::Merge => {
            "`git commit` concludes it once every path is resolved and added, `git merge --abort` undoes it"
        }
        Operation::Rebase => "`git rebase --continue` goes on once resolved and added, `git rebase --abort` undoes it",
        Operation::CherryPick => {
            "`git cherry-pick --continue` goes on once resolved and added, `git cherry-pick --abort` undoes it"
        }
        Operation::Revert => "`git revert --continue` goes on once resolved and added, `git revert --abort` undoes it",
        Operation::Bisect => "`git bisect good` or `git bisect bad` marks the commit, `git bisect reset` ends it",
        Operation::Am => "`git am --continue` goes on once resolved and added, `git am --abort` undoes it",
    }
}

fn conflicts(facts: &Facts<'_>) -> Option<Hint> {
    let count = facts.brief.working_tree.conflicted;
    if count == 0 {
        return None;
    }
    let mut named = facts.conflicted.iter().take(MAX_NAMED_CONFLICTS).cloned().collect::<Vec<_>>().join(", ");
    if count > MAX_NAMED_CONFLICTS {
        named.push_str(&format!(" +{} more", count - MAX_NAMED_CONFLICTS));
    }
    let why = match facts.brief.operation_in_progress {
        Some(operation) => format!(
            "{} stopped on {count} conflicted path{}: {named}; resolve, `git add` each, then {}",
            operation_name(operation),
            plural(count),
            continue_or_abort(operation)
        ),
        None => format!("{count} conflicted path{}: {named}; resolve and `git add` each", plural(count)),
    };
    Some(hint("conflicts", "conflict.read", json!({}), why))
}

fn operation(facts: &Facts<'_>) -> Option<Hint> {
    let operation = facts.brief.operation_in_progress?;
    // The conflicts hint already names the operation and how to go on.
    if facts.brief.working_tree.conflicted > 0 {
        return None;
    }
    let rebasing = facts.brief.head.rebasing.as_deref().map(|branch| format!(" of {branch}")).unwrap_or_default();
    let why = format!(
        "{}{rebasing} in progress with nothing conflicted: {}",
        operation_name(operation),
        continue_or_abort(operation)
    );
    Some(hint("operation", "conflict.read", json!({}), why))
}

fn dropped(facts: &Facts<'_>) -> Option<Hint> {
    let dropped = facts.lineage.dropped_since(facts.now);
    let newest = dropped.first()?;
    let others = dropped.len() - 1;
    let also = if others > 0 {
        format!(" ({others} other branch{} too)", if others == 1 { "" } else { "es" })
    } else {
        String::new()
    };
    let why = format!(
        "{} dropped {} commit{} recently ({}) that no branch holds any more{also}; its reflog still names them and \
         says how to get them back",
        newest.branch,
        newest.commits,
        plural(newest.commits),
        newest.action
    );
    Some(hint("dropped", "repo.reflog", json!({ "refName": newest.branch }), why))
}

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
            "operation.preview.branch",
            json!({ "name": format!("keep/{sha}"), "startPoint": "HEAD", "checkout": true }),
            "HEAD detached: commits made here belong to no branch; propose a branch to keep them".to_owned(),
        ));
    }
    Some(hint(
        "detached",
        "repo.reflog",
        json!({ "refName": "HEAD", "limit": 5 }),
        "HEAD detached: commits made here belong to no branch; the reflog shows where HEAD came from; a person \
         would run `git switch -c <name>` to keep them or `git switch <branch>` to go back"
            .to_owned(),
    ))
}

fn behind(facts: &Facts<'_>) -> Option<Hint> {
    let head = &facts.brief.head;
    let upstream = head.upstream.as_ref().filter(|_| head.behind > 0)?;
    Some(hint(
        "behind",
        "repo.conflictPreflight",
        json!({ "targetRef": upstream }),
        format!(
            "{} commit{} behind {upstream}: predict whether merging it conflicts",
            head.behind,
            plural(head.behind)
        ),
    ))
}

fn stack(facts: &Facts<'_>) -> Option<Hint> {
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
        "repo.branchStack",
        json!({ "branch": branch }),
        format!(
            "stack {chain}: {} moved {} commit{} since the stack left it; then repo.conflictPreflight with \
             targetRef {} predicts the rebase",
            stack.base,
            stack.behind,
            plural(stack.behind),
            stack.base
        ),
    ))
}

fn submodules(facts: &Facts<'_>) -> Option<Hint> {
    let submodules = &facts.brief.submodules;
    let parts: Vec<String> = [
        (submodules.drifted, "drifted"),
        (submodules.uninitialized, "uninitialized"),
        (submodules.conflicts, "conflicted"),
    ]
    .iter()
    .filter(|(count, _)| *count > 0)
    .map(|(count, what)| format!("{count} {what}"))
    .collect();
    if parts.is_empty() {
        return None;
    }
    Some(hint("submodules", "submodule.status", json!({}), format!("submodules need attention: {}", parts.join(", "))))
}

fn owners(facts: &Facts<'_>) -> Option<Hint> {
    let file = facts.lineage.codeowners?;
    // During an operation the changes are the operation's; the hints above cover it.
    if facts.changed.is_empty()
        || facts.brief.operation_in_progress.is_some()
        || facts.brief.working_tree.conflicted > 0
    {
        return None;
    }
    let directory = busiest_directory(facts.changed);
    let shown = if directory.is_empty() { "." } else { directory.as_str() };
    let count = facts.changed.len();
    Some(hint(
        "owners",
        "repo.scope",
        json!({ "path": shown }),
        format!(
            "{count} uncommitted change{} and a {file}: who owns {shown}, what changed there and who worked on it",
            plural(count)
        ),
    ))
}

fn uncommitted_on_default(facts: &Facts<'_>) -> Option<Hint> {
    let brief = facts.brief;
    let tree = &brief.working_tree;
    let branch = brief.head.branch.as_ref()?;
    if Some(branch) != brief.conventions.default_branch.as_ref() || tree.clean || tree.conflicted > 0 {
        return None;
    }
    if facts.proposals {
        let prefix = brief.conventions.branch_prefixes.first().cloned().unwrap_or_default();
        return Some(hint(
            "uncommittedOnDefault",
            "operation.preview.branch",
            json!({ "name": format!("{prefix}wip"), "checkout": true }),
            format!("uncommitted changes on {branch}, the default branch: propose a topic branch to carry them"),
        ));
    }
    Some(hint(
        "uncommittedOnDefault",
        "worktree.changes",
        json!({}),
        format!(
            "uncommitted changes on {branch}, the default branch: a person would run `git switch -c <topic>` to \
             carry them to a topic branch before committing"
        ),
    ))
}

fn stashes(facts: &Facts<'_>) -> Option<Hint> {
    let count = facts.brief.stashes.count;
    if count == 0 {
        return None;
    }
    Some(hint(
        "stashes",
        "commit.details",
        json!({ "commit": "stash@{0}" }),
        format!("{count} stash{}: the newest holds set-aside work", if count == 1 { "" } else { "es" }),
    ))
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// The directory holding most of `paths`: from the top, go down into the child directory that holds more than
/// half of the paths below the current one, while there is one. `""` for the top.
pub fn busiest_directory(paths: &[String]) -> String {
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
