//! Which operation left the conflict, how far it got, and which commits produced "ours" and
//! "theirs", read from the git dir's state files (`MERGE_HEAD`, `rebase-merge/`, `rebase-apply/`,
//! `REBASE_HEAD`, `CHERRY_PICK_HEAD`, `REVERT_HEAD`, `sequencer/todo`).
//!
//! A failed `git stash apply` / `pop` leaves no state file: unmerged index entries that no state
//! file explains are taken for a stash apply, and the stash is identified by content (see
//! [`detect`]).

use std::collections::BTreeMap;

use gix::ObjectId;
use gix::bstr::BString;
use serde::Serialize;

use super::{TouchingCommit, commit_info, touching};
use crate::error::Result;
use crate::facets::{operation, stashes};

/// The operation that is in progress, as `conflict.read` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Activity {
    /// `git merge` (`MERGE_HEAD`).
    Merge,
    /// `git rebase`, merge or apply backend.
    Rebase,
    /// `git cherry-pick`, single or sequence.
    CherryPick,
    /// `git revert`, single or sequence.
    Revert,
    /// `git am`.
    Am,
    /// `git bisect` (never the source of a conflict).
    Bisect,
    /// `git stash apply` or `pop`: inferred, since it leaves no state file (see `evidence`).
    StashApply,
}

impl From<operation::Operation> for Activity {
    /// The activity of an operation git recorded in a state file.
    fn from(found: operation::Operation) -> Self {
        use operation::Operation as Op;
        match found {
            Op::Merge => Activity::Merge,
            Op::Rebase => Activity::Rebase,
            Op::CherryPick => Activity::CherryPick,
            Op::Revert => Activity::Revert,
            Op::Am => Activity::Am,
            Op::Bisect => Activity::Bisect,
        }
    }
}

/// How far a multi-step operation got, counted as `git status` counts a rebase's commands ("N
/// commands done", "N remaining commands").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// The step that stopped, 1-based (`Rebasing (2/5)`): the commands done, the stopped one
    /// included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
    /// All steps: done plus remaining.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
    /// Commands done, the stopped one included (`rebase-merge/done`, or `rebase-apply/next`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done: Option<usize>,
    /// Commands still to do after the stopped one (`rebase-merge/git-rebase-todo`, or
    /// `rebase-apply/last` minus `next`); for a cherry-pick or revert sequence, the picks after the
    /// stopped one (`sequencer/todo` without its first command, which is the stopped pick; git
    /// records no count of the done ones).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remaining: Option<usize>,
}

/// A commit that produced one side of the conflict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Producer {
    /// Where it comes from and what it is, e.g. `REBASE_HEAD: the commit being replayed`.
    pub role: String,
    /// Full sha.
    pub sha: String,
    /// Subject line.
    pub subject: String,
}

/// Everything [`detect`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// The operation, or `None`.
    pub activity: Option<Activity>,
    /// The files or facts it was recognised by.
    pub evidence: Option<String>,
    /// Progress of multi-step operations.
    pub progress: Option<Progress>,
    /// Stage 2's producer.
    pub ours: Option<Producer>,
    /// Stage 3's producer.
    pub theirs: Option<Producer>,
}

/// What the index holds for one unmerged path: `(mode, id)` of stages 1, 2 and 3.
pub type Stages = [Option<(u32, ObjectId)>; 3];

/// The evidence text of the stash heuristic.
pub const STASH_EVIDENCE: &str = "unmerged index entries and no operation state file: taken for a `git stash \
apply`/`pop` (which leaves none); `git apply --3way` and `git checkout --merge` leave the same state";

/// Detects the operation and its producers; `unmerged` are the index's unmerged paths (for the
/// stash heuristic).
///
/// # Errors
/// [`crate::Error::GitRead`] when a named commit cannot be read.
pub fn detect(repo: &gix::Repository, unmerged: &BTreeMap<BString, Stages>) -> Result<State> {
    let head = repo.head_id().ok().map(|id| id.detach());
    let ours = |role: &str| -> Result<Option<Producer>> { producer(repo, head, role) };
    let mut state = State { activity: None, evidence: None, progress: None, ours: None, theirs: None };
    let Some(found) = operation::read(repo) else {
        if unmerged.is_empty() {
            return Ok(state);
        }
        state.activity = Some(Activity::StashApply);
        state.evidence = Some(STASH_EVIDENCE.to_owned());
        state.ours = ours("HEAD: the commit the stash is applied onto")?;
        if let Some((index, id)) = matching_stash(repo, unmerged)? {
            state.theirs = producer(repo, Some(id), &format!("stash@{{{index}}}: the stash being applied"))?;
        }
        return Ok(state);
    };
    use operation::Operation as Op;
    let (activity, evidence, ours_role, theirs_file, theirs_role) = match found {
        Op::Merge => (
            Activity::Merge,
            "MERGE_HEAD",
            "HEAD: the branch being merged into",
            "MERGE_HEAD",
            "MERGE_HEAD: the commit being merged",
        ),
        Op::Rebase => {
            let dir = if repo.git_dir().join("rebase-merge").is_dir() { "rebase-merge/" } else { "rebase-apply/" };
            (
                Activity::Rebase,
                dir,
                "HEAD: the new base with the commits replayed so far",
                "REBASE_HEAD",
                "REBASE_HEAD: the commit being replayed",
            )
        }
        Op::CherryPick => (
            Activity::CherryPick,
            "CHERRY_PICK_HEAD",
            "HEAD: the branch receiving the pick",
            "CHERRY_PICK_HEAD",
            "CHERRY_PICK_HEAD: the commit being picked",
        ),
        Op::Revert => (
            Activity::Revert,
            "REVERT_HEAD",
            "HEAD: the branch receiving the revert",
            "REVERT_HEAD",
            "REVERT_HEAD: the commit being reverted (stage 3 holds its parent's content)",
        ),
        Op::Am => (Activity::Am, "rebase-apply/applying", "HEAD: the branch receiving the patches", "", ""),
        Op::Bisect => (Activity::Bisect, "BISECT_LOG", "HEAD: the commit being tested", "", ""),
    };
    state.activity = Some(activity);
    state.evidence = Some(evidence.to_owned());
    state.ours = ours(ours_role)?;
    let mut theirs = read_sha(repo, theirs_file);
    if activity == Activity::Rebase && theirs.is_none() {
        theirs = read_sha(repo, "rebase-merge/stopped-sha").or_else(|| read_sha(repo, "rebase-apply/original-commit"));
    }
    state.theirs = producer(repo, theirs, theirs_role)?;
    state.progress = progress(repo, activity);
    Ok(state)
}

/// Progress from `rebase-merge/done`+`git-rebase-todo` (as `git status` counts them),
/// `rebase-apply/next`+`last`, or `sequencer/todo`.
fn progress(repo: &gix::Repository, activity: Activity) -> Option<Progress> {
    let number = |file: &str| read_file(repo, file).and_then(|text| text.trim().parse::<usize>().ok());
    let commands = |file: &str| read_file(repo, file).map(|text| command_lines(&text).count());
    match activity {
        Activity::Rebase | Activity::Am => {
            let (done, remaining) = match (commands("rebase-merge/done"), commands("rebase-merge/git-rebase-todo")) {
                (Some(done), Some(remaining)) => (done, remaining),
                _ => {
                    let (next, last) = (number("rebase-apply/next")?, number("rebase-apply/last")?);
                    (next, last.saturating_sub(next))
                }
            };
            Some(Progress {
                step: Some(done),
                total: Some(done + remaining),
                done: Some(done),
                remaining: Some(remaining),
            })
        }
        Activity::CherryPick | Activity::Revert => match read_file(repo, "sequencer/todo") {
            // git keeps the stopped pick as the todo's first command until `--continue`; the rest remain.
            Some(todo) => {
                let remaining = command_lines(&todo).count().saturating_sub(1);
                Some(Progress { step: None, total: None, done: None, remaining: Some(remaining) })
            }
            None => Some(Progress { step: Some(1), total: Some(1), done: None, remaining: Some(0) }),
        },
        _ => None,
    }
}

/// The command lines of a todo list: neither empty nor comments, as `git status` counts them.
fn command_lines(todo: &str) -> impl Iterator<Item = &str> {
    todo.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#'))
}

/// The commits still to replay in `rebase-merge/git-rebase-todo` (picks, rewords, edits, squashes,
/// fixups) that change one of `paths`, in todo order.
///
/// # Errors
/// [`crate::Error::GitRead`] when a named commit cannot be read.
pub fn upcoming(repo: &gix::Repository, paths: &[&[u8]]) -> Result<Vec<TouchingCommit>> {
    let Some(todo) = read_file(repo, "rebase-merge/git-rebase-todo") else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for line in command_lines(&todo) {
        let mut words = line.split_whitespace();
        let command = words.next().unwrap_or_default();
        if !matches!(command, "pick" | "p" | "reword" | "r" | "edit" | "e" | "squash" | "s" | "fixup" | "f") {
            continue;
        }
        let Some(name) = words.find(|word| !word.starts_with('-')) else { continue };
        let Ok(id) = repo.rev_parse_single(name) else { continue };
        if let Some(found) = touching(repo, id.detach(), paths)? {
            out.push(found);
        }
    }
    Ok(out)
}

/// How to conclude the operation and how to abort it, as git commands a person runs
/// (`conflict.read`'s `conclude` and `abort`, and the hints of `repo.brief`).
pub fn conclude_or_abort(activity: Activity) -> (&'static str, &'static str) {
    match activity {
        Activity::Merge => ("git add <path>; git commit", "git merge --abort"),
        Activity::Rebase => ("git add <path>; git rebase --continue", "git rebase --abort"),
        Activity::CherryPick => ("git add <path>; git cherry-pick --continue", "git cherry-pick --abort"),
        Activity::Revert => ("git add <path>; git revert --continue", "git revert --abort"),
        Activity::Am => ("git add <path>; git am --continue", "git am --abort"),
        Activity::Bisect => ("git bisect good | git bisect bad", "git bisect reset"),
        Activity::StashApply => (
            "git add <path> (the stash is kept: git stash drop once done)",
            "none: git stash has no --abort; git reset --merge drops the applied changes",
        ),
    }
}

/// The first stash whose tree holds every stage-3 blob and whose base (first parent) holds every
/// stage-1 blob of the unmerged paths: the stash being applied.
fn matching_stash(repo: &gix::Repository, unmerged: &BTreeMap<BString, Stages>) -> Result<Option<(usize, ObjectId)>> {
    for stash in stashes::read(repo)? {
        let Ok(id) = ObjectId::from_hex(stash.sha.as_bytes()) else { continue };
        let Ok(commit) = repo.find_commit(id) else { continue };
        let Some(parent) = commit.parent_ids().next() else { continue };
        let (Ok(tree), Ok(base)) =
            (commit.tree(), parent.object().map(|object| object.into_commit()).and_then(|c| c.tree()))
        else {
            continue;
        };
        let holds = |tree: &gix::Tree<'_>, path: &BString, expected: Option<(u32, ObjectId)>| {
            let found =
                tree.lookup_entry(path.split(|byte| *byte == b'/')).ok().flatten().map(|entry| entry.object_id());
            expected.is_none_or(|(_, id)| found == Some(id))
        };
        if unmerged.iter().all(|(path, stages)| holds(&base, path, stages[0]) && holds(&tree, path, stages[2])) {
            return Ok(Some((stash.index, id)));
        }
    }
    Ok(None)
}

fn producer(repo: &gix::Repository, id: Option<ObjectId>, role: &str) -> Result<Option<Producer>> {
    let Some(id) = id else { return Ok(None) };
    let info = commit_info(repo, id)?;
    Ok(Some(Producer { role: role.to_owned(), sha: info.sha, subject: info.subject }))
}

/// The first line of `<git dir>/<file>` as a sha.
fn read_sha(repo: &gix::Repository, file: &str) -> Option<ObjectId> {
    if file.is_empty() {
        return None;
    }
    let text = read_file(repo, file)?;
    ObjectId::from_hex(text.lines().next()?.trim().as_bytes()).ok()
}

/// A state file of the git dir as text, read without blocking and up to
/// [`crate::guard::LIST_FILE_CAP`] bytes; `None` when it is missing, no regular file, larger or not
/// UTF-8.
fn read_file(repo: &gix::Repository, file: &str) -> Option<String> {
    let path = repo.git_dir().join(file);
    let bytes = crate::guard::read_capped(&path, crate::guard::Symlinks::Follow, crate::guard::LIST_FILE_CAP, file);
    String::from_utf8(bytes.ok()??).ok()
}
