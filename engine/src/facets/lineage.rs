//! The lineage facet: what `repo.brief`'s hints read from refs, reflogs and HEAD's tree beyond the
//! other facets (issue 22): commits a local branch dropped recently that no ref reaches, the stack
//! of local branches the current branch is built on and how far its base moved, the parent branch
//! that was rewritten under it (issue 35), the size of the current branch's own change against its
//! base, and the CODEOWNERS file at HEAD.
//!
//! Reflogs are read through the repository handle the engine opened, whose git dir was vetted first
//! (`guard.rs`: no FIFO, device or link outside the roots among `logs/`), as every reflog read of
//! the engine is.

use std::collections::HashSet;

use gix::ObjectId;
use serde::Serialize;

use crate::ancestry;
use crate::error::{Error, Result};
use crate::facets::head::Head;

/// How long (seconds before the clock) a branch movement counts as recent: 7 days. The facet keeps
/// the movements of this span before each reflog's newest entry; [`Lineage::dropped_since`] filters
/// them with the caller's clock, so the facet itself does not depend on the clock.
pub const RECENT_SECONDS: i64 = 7 * 86_400;
/// Commits examined per movement or per stack at most.
pub const MAX_WALK: usize = 1000;
/// Reflog entries examined per branch at most.
pub const MAX_MOVEMENTS: usize = 50;
/// Local branches whose reflogs are read at most when looking for a rewritten parent (in ref name
/// order).
pub const MAX_PARENT_CANDIDATES: usize = 64;
/// Changed lines (added plus removed, as `git diff --numstat` counts them) from which a branch's
/// own change is large: its `diff.text` costs thousands of tokens (about ten a line, before the
/// context lines), its semantic diff a fraction of that. Counting stops there.
pub const LARGE_CHANGE_LINES: u64 = 300;
/// Changed files whose lines are counted at most; a change touching more is large whatever its
/// lines.
pub const MAX_COUNTED_FILES: usize = 200;

/// The lineage facts of a repository at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Lineage {
    /// Movements of local branches that dropped commits no ref reaches, within [`RECENT_SECONDS`]
    /// of their reflog's newest entry, newest first.
    pub movements: Vec<Movement>,
    /// The stack under the current branch, when the current branch is built on other local branches
    /// and its base has commits it lacks.
    pub stack: Option<Stack>,
    /// The local branch the current branch was built on, rewritten since (see [`moved_parent`]).
    pub parent_moved: Option<ParentMoved>,
    /// The current branch's own change against its base (the default branch), when it has commits
    /// the base lacks.
    pub ahead: Option<Ahead>,
    /// The CODEOWNERS file GitHub would read at HEAD (`.github/CODEOWNERS`, `CODEOWNERS`,
    /// `docs/CODEOWNERS`).
    pub codeowners: Option<&'static str>,
}

/// A branch movement that dropped commits: reachable from its old tip, from no ref nor any
/// worktree's HEAD (not listed by `git rev-list --all`, see [`crate::reachable`]), and not
/// rewritten onto the branch (no commit on it now has the same author and author date, as a
/// rebase, an amend or a cherry-pick keep them). Only the reflog still names them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Movement {
    /// The branch's short name.
    pub branch: String,
    /// The tip the movement left, full hex: `git branch <name> <tip>` brings the dropped commits
    /// back.
    pub tip: String,
    /// The dropped commits, full hex shas (at most [`MAX_WALK`]), newest first.
    pub commits: Vec<String>,
    /// The action as the reflog records it (`reset`, `commit (amend)`, ...).
    pub action: String,
    /// When it happened, Unix seconds.
    pub time: i64,
}

/// Commits one branch dropped within the recency window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The branch's short name.
    pub branch: String,
    /// Distinct commits its movements in the window dropped.
    pub commits: usize,
    /// The newest of those movements' action.
    pub action: String,
    /// When that movement happened, Unix seconds.
    pub time: i64,
}

impl Lineage {
    /// Per branch, the commits dropped by movements within [`RECENT_SECONDS`] before `now` (Unix
    /// seconds), the branch with the newest such movement first.
    pub fn dropped_since(&self, now: i64) -> Vec<Dropped> {
        let mut found: Vec<(Dropped, HashSet<&str>)> = Vec::new();
        for movement in self.movements.iter().filter(|movement| movement.time >= now - RECENT_SECONDS) {
            let at = match found.iter().position(|(dropped, _)| dropped.branch == movement.branch) {
                Some(at) => at,
                None => {
                    let dropped = Dropped {
                        branch: movement.branch.clone(),
                        commits: 0,
                        action: movement.action.clone(),
                        time: movement.time,
                    };
                    found.push((dropped, HashSet::new()));
                    found.len() - 1
                }
            };
            let (dropped, commits) = &mut found[at];
            commits.extend(movement.commits.iter().map(String::as_str));
            dropped.commits = commits.len();
        }
        found.into_iter().map(|(dropped, _)| dropped).collect()
    }
}

/// The stack of local branches under the current one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stack {
    /// The base (the default branch) the stack left.
    pub base: String,
    /// The local branches between the base and the current branch, base side first.
    pub below: Vec<String>,
    /// Commits on the base that the current branch lacks (`git rev-list --count HEAD..base`).
    pub behind: usize,
}

/// A local branch that the examined branch was built on and that was rewritten since
/// (`git rebase main` on it, an amend): the examined branch still sits on one of its old tips,
/// which only its reflog names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentMoved {
    /// The parent branch's short name.
    pub parent: String,
    /// The parent's old tip the examined branch is built on, full hex
    /// (`git merge-base --fork-point <parent> <branch>` in the cases git answers).
    pub old_tip: String,
    /// The parent's tip now, full hex.
    pub new_tip: String,
    /// The examined branch's own commits on the old tip
    /// (`git rev-list --count <oldTip>..<branch>`).
    pub commits: usize,
}

/// The current branch's own change: what `git diff <merge-base>..HEAD` shows against its base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ahead {
    /// The base (the default branch).
    pub base: String,
    /// The merge base of HEAD and the base (the first, when there are several), abbreviated as git
    /// does.
    pub merge_base: String,
    /// Commits HEAD has that the base lacks (at most [`MAX_WALK`]).
    pub commits: usize,
    /// Files that differ between the merge base and HEAD.
    pub files: usize,
    /// Lines added plus removed in them, counted up to [`LARGE_CHANGE_LINES`] (then the count stops
    /// there); binary files count no lines.
    pub lines: u64,
}

impl Ahead {
    /// Whether the change is large: [`LARGE_CHANGE_LINES`] changed lines or more than
    /// [`MAX_COUNTED_FILES`] files.
    pub fn is_large(&self) -> bool {
        self.lines >= LARGE_CHANGE_LINES || self.files > MAX_COUNTED_FILES
    }
}

/// Reads the lineage facts.
///
/// Cost: per local branch, a read of its reflog's newest entries ([`MAX_MOVEMENTS`], within
/// [`RECENT_SECONDS`] of the newest); per such movement, a walk of the commits it left behind and
/// of those added since; for the stack and the change ahead, a walk of the current branch's own
/// commits, a merge base, a tree diff and line diffs of the changed files until
/// [`LARGE_CHANGE_LINES`] are counted (at most [`MAX_COUNTED_FILES`] files); for a rewritten
/// parent, see [`moved_parent`].
///
/// # Errors
/// [`Error::GitRead`] when refs, commits or HEAD's tree cannot be read.
pub fn read(repo: &gix::Repository, head: &Head, default_branch: Option<&str>) -> Result<Lineage> {
    let tips = local_branch_tips(repo)?;
    let head_id = head.sha.as_deref().and_then(|sha| ObjectId::from_hex(sha.as_bytes()).ok());
    let codeowners = match head_id {
        Some(id) => {
            let commit = repo.find_commit(id).map_err(|err| Error::git("HEAD commit", err))?;
            crate::codeowners::read_at(&commit)?.map(|loaded| loaded.file)
        }
        None => None,
    };
    let parent_moved = match (head.branch.as_deref(), head_id) {
        (Some(branch), Some(tip)) => {
            let base = default_branch.and_then(|base| tips.iter().find(|(name, _)| name == base));
            let base = base.map(|(name, id)| (name.as_str(), *id));
            moved_parent(repo, &tips, branch, tip, base)?
        }
        _ => None,
    };
    Ok(Lineage {
        movements: movements(repo, &tips)?,
        stack: stack(repo, &tips, head, head_id, default_branch)?,
        parent_moved,
        ahead: ahead(repo, &tips, head, head_id, default_branch)?,
        codeowners,
    })
}

/// The local branch `branch` (at `tip`) was built on and that was rewritten since, if any.
///
/// A candidate parent is another local branch than `branch` and the base (`base`: its name and tip;
/// the examined branch's own commits are those the base lacks, all of `tip`'s history without a
/// base). Its old tip is the newest of its reflog's [`MAX_MOVEMENTS`] newest entries that is one of
/// the examined branch's own commits (so an ancestor of `tip` that the base lacks). The candidate
/// was rewritten when that old tip is not an ancestor of its tip now and its tip is not an ancestor
/// of `tip` (a parent that merely advanced keeps its old tip in its history, one that went back is
/// still under the examined branch). Among several, the one whose old tip is nearest `tip` (fewest
/// own commits) is the parent; ties go to the first name. The base itself is never a candidate.
///
/// Cost: one walk of the examined branch's own commits (at most [`MAX_WALK`]; an old tip below them
/// is not seen), the reflogs of at most [`MAX_PARENT_CANDIDATES`] local branches whose tips are not
/// among those commits, and for a branch with an old tip among them two merge-base walks and a
/// count.
///
/// # Errors
/// [`Error::GitRead`] when a commit cannot be read. A reflog that cannot be read names no parent
/// (`repo.reflog` reports its error).
pub(crate) fn moved_parent(
    repo: &gix::Repository,
    tips: &[(String, ObjectId)],
    branch: &str,
    tip: ObjectId,
    base: Option<(&str, ObjectId)>,
) -> Result<Option<ParentMoved>> {
    let candidates: Vec<&(String, ObjectId)> = tips
        .iter()
        .filter(|(name, id)| name != branch && base.is_none_or(|(base, _)| base != name) && *id != tip)
        .take(MAX_PARENT_CANDIDATES)
        .collect();
    if candidates.is_empty() {
        return Ok(None);
    }
    let hidden: Vec<ObjectId> = base.map(|(_, id)| id).into_iter().collect();
    let own: HashSet<ObjectId> = ancestry::exclusive(repo, tip, &hidden, MAX_WALK)?.into_iter().collect();
    // No commit of its own (the branch is the base's, or under it): no reflog is read.
    if own.is_empty() {
        return Ok(None);
    }
    let mut found: Option<ParentMoved> = None;
    for (name, parent_tip) in candidates {
        // A tip among the examined branch's own commits: the branch is stacked on it as it is now.
        if own.contains(parent_tip) {
            continue;
        }
        let Some(old_tip) = newest_old_tip(repo, name, &own) else { continue };
        if old_tip == tip || is_ancestor(repo, old_tip, *parent_tip)? || is_ancestor(repo, *parent_tip, tip)? {
            continue;
        }
        let commits = ancestry::count_exclusive(repo, tip, old_tip)?;
        if found.as_ref().is_none_or(|found| commits < found.commits) {
            found = Some(ParentMoved {
                parent: name.clone(),
                old_tip: old_tip.to_string(),
                new_tip: parent_tip.to_string(),
                commits,
            });
        }
    }
    Ok(found)
}

/// The newest of the [`MAX_MOVEMENTS`] newest entries of `branch`'s reflog whose new value is in
/// `own`; `None` when there is none or the reflog cannot be read.
fn newest_old_tip(repo: &gix::Repository, branch: &str, own: &HashSet<ObjectId>) -> Option<ObjectId> {
    let full = format!("refs/heads/{branch}");
    let reference = repo.try_find_reference(full.as_str()).ok().flatten()?;
    let mut platform = reference.log_iter();
    let lines = platform.rev().ok().flatten()?;
    for line in lines.take(MAX_MOVEMENTS) {
        let Ok(line) = line else { break };
        if own.contains(&line.new_oid) {
            return Some(line.new_oid);
        }
    }
    None
}

/// Whether `ancestor` is an ancestor of `of` or the same commit (`git merge-base --is-ancestor`).
fn is_ancestor(repo: &gix::Repository, ancestor: ObjectId, of: ObjectId) -> Result<bool> {
    Ok(ancestor == of || ancestry::merge_base(repo, ancestor, of)? == Some(ancestor))
}

/// Local branches (short name, tip commit); refs that do not parse or name no commit are skipped,
/// as git skips them.
fn local_branch_tips(repo: &gix::Repository) -> Result<Vec<(String, ObjectId)>> {
    let platform = repo.references().map_err(|err| Error::git("refs", err))?;
    let mut tips = Vec::new();
    for mut reference in (platform.local_branches().map_err(|err| Error::git("refs", err))?).flatten() {
        let name = reference.name().shorten().to_string();
        if let Some(id) = crate::facets::refs::peel_to_commit_id(&mut reference) {
            tips.push((name, id));
        }
    }
    Ok(tips)
}

fn movements(repo: &gix::Repository, tips: &[(String, ObjectId)]) -> Result<Vec<Movement>> {
    use crate::reachable::authorship;
    // What `--all` reaches, read when a movement first needs it: most briefs find no old tip off its branch.
    let mut hidden: Option<Vec<ObjectId>> = None;
    let mut found = Vec::new();
    for (name, tip) in tips {
        let full = format!("refs/heads/{name}");
        let Ok(Some(reference)) = repo.try_find_reference(full.as_str()) else { continue };
        // A reflog that cannot be read (or is a FIFO: never opened) gives no hint; `repo.reflog` reports its error.
        if crate::guard::vet_reflog(repo, reference.name()).is_err() {
            continue;
        }
        let mut platform = reference.log_iter();
        let Ok(Some(lines)) = platform.rev() else { continue };
        let mut newest_time = None;
        // The branch's newest commits: an old tip among them (a commit, a fast-forward) dropped nothing, and needs
        // no walk against every branch.
        let mut on_branch: Option<HashSet<ObjectId>> = None;
        for line in lines.take(MAX_MOVEMENTS) {
            let Ok(line) = line else { break };
            let time = line.signature.time.seconds;
            if time < *newest_time.get_or_insert(time) - RECENT_SECONDS {
                break;
            }
            let old = line.previous_oid;
            if old.is_null() {
                continue;
            }
            if on_branch.is_none() {
                on_branch = Some(newest_commits(repo, *tip, MAX_MOVEMENTS)?);
            }
            if on_branch.as_ref().is_some_and(|commits| commits.contains(&old)) || repo.find_commit(old).is_err() {
                continue;
            }
            if hidden.is_none() {
                hidden = Some(crate::reachable::tips(repo)?);
            }
            let left = ancestry::exclusive(repo, old, hidden.as_deref().expect("just filled"), MAX_WALK)?;
            if left.is_empty() {
                continue;
            }
            // The commits the branch has now that the old tip lacked: where a rewrite put its copies.
            let mut copies = HashSet::new();
            for id in ancestry::exclusive(repo, *tip, &[old], MAX_WALK)? {
                copies.insert(authorship(repo, id)?);
            }
            let mut commits = Vec::new();
            for id in left {
                if !copies.contains(&authorship(repo, id)?) {
                    commits.push(id.to_string());
                }
            }
            if !commits.is_empty() {
                let message = crate::facets::utf8(&line.message);
                let action = message.split_once(": ").map_or(message.as_str(), |(action, _)| action).to_owned();
                found.push(Movement { branch: name.clone(), tip: old.to_string(), commits, action, time });
            }
        }
    }
    found.sort_by(|a, b| b.time.cmp(&a.time).then(a.branch.cmp(&b.branch)));
    Ok(found)
}

/// The first `count` commits of `tip`'s history (first parents and merged ones alike, newest first
/// by walk order).
fn newest_commits(repo: &gix::Repository, tip: ObjectId, count: usize) -> Result<HashSet<ObjectId>> {
    let shallow = ancestry::Shallow::read(repo)?;
    let mut seen = HashSet::from([tip]);
    let mut queue = std::collections::VecDeque::from([tip]);
    while let Some(id) = queue.pop_front() {
        if seen.len() >= count {
            break;
        }
        for parent in shallow.parents_of(repo, id)? {
            if seen.insert(parent) {
                queue.push_back(parent);
            }
        }
    }
    Ok(seen)
}

fn stack(
    repo: &gix::Repository,
    tips: &[(String, ObjectId)],
    head: &Head,
    head_id: Option<ObjectId>,
    default_branch: Option<&str>,
) -> Result<Option<Stack>> {
    let (Some(branch), Some(tip), Some(base)) = (head.branch.as_deref(), head_id, default_branch) else {
        return Ok(None);
    };
    if branch == base {
        return Ok(None);
    }
    let Some(base_tip) = tips.iter().find(|(name, _)| name == base).map(|(_, id)| *id) else {
        return Ok(None);
    };
    let own = ancestry::exclusive(repo, tip, &[base_tip], MAX_WALK)?;
    let own_set: HashSet<ObjectId> = own.iter().copied().collect();
    // Branches whose tips are among the current branch's own commits, nearest to HEAD first in the walk.
    let mut below: Vec<(usize, String)> = tips
        .iter()
        .filter(|(name, id)| name != branch && name != base && *id != tip && own_set.contains(id))
        .filter_map(|(name, id)| own.iter().position(|own_id| own_id == id).map(|at| (at, name.clone())))
        .collect();
    if below.is_empty() {
        return Ok(None);
    }
    let behind = ancestry::count_exclusive(repo, base_tip, tip)?;
    if behind == 0 {
        return Ok(None);
    }
    below.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    Ok(Some(Stack { base: base.to_owned(), below: below.into_iter().map(|(_, name)| name).collect(), behind }))
}

/// The current branch's own change against `default_branch` (see [`Ahead`]); `None` on the default
/// branch itself, detached, without that branch, or with no commit of its own.
fn ahead(
    repo: &gix::Repository,
    tips: &[(String, ObjectId)],
    head: &Head,
    head_id: Option<ObjectId>,
    default_branch: Option<&str>,
) -> Result<Option<Ahead>> {
    let (Some(branch), Some(tip), Some(base)) = (head.branch.as_deref(), head_id, default_branch) else {
        return Ok(None);
    };
    let Some(base_tip) = tips.iter().find(|(name, _)| name == base).map(|(_, id)| *id) else {
        return Ok(None);
    };
    if branch == base || tip == base_tip {
        return Ok(None);
    }
    let commits = ancestry::exclusive(repo, tip, &[base_tip], MAX_WALK)?.len();
    if commits == 0 {
        return Ok(None);
    }
    let Some(merge_base) = ancestry::merge_bases(repo, tip, &[base_tip])?.into_iter().next() else {
        return Ok(None);
    };
    let (old, new) = (commit_tree(repo, merge_base)?, commit_tree(repo, tip)?);
    let mut recorder = gix::diff::tree::Recorder::default().track_location(None);
    gix::diff::tree(
        gix::objs::TreeRefIter::from_bytes(&old.data, repo.object_hash()),
        gix::objs::TreeRefIter::from_bytes(&new.data, repo.object_hash()),
        &mut gix::diff::tree::State::default(),
        &repo.objects,
        &mut recorder,
    )
    .map_err(|err| Error::git("tree diff", err))?;
    use gix::diff::tree::recorder::Change;
    // Files as git counts them (blobs, links and submodules, never a tree); lines only in blobs and links.
    let (mut files, mut blobs) = (0, Vec::new());
    for change in &recorder.records {
        let text = |mode: &gix::objs::tree::EntryMode, id: &ObjectId| mode.is_blob_or_symlink().then_some(*id);
        let (modes, sides) = match change {
            Change::Addition { entry_mode, oid, .. } => ([*entry_mode, *entry_mode], (None, text(entry_mode, oid))),
            Change::Deletion { entry_mode, oid, .. } => ([*entry_mode, *entry_mode], (text(entry_mode, oid), None)),
            Change::Modification { previous_entry_mode, previous_oid, entry_mode, oid, .. } => {
                ([*previous_entry_mode, *entry_mode], (text(previous_entry_mode, previous_oid), text(entry_mode, oid)))
            }
        };
        if modes.iter().any(gix::objs::tree::EntryMode::is_no_tree) {
            files += 1;
            if sides != (None, None) {
                blobs.push(sides);
            }
        }
    }
    let mut lines = 0;
    for (old, new) in blobs.iter().take(MAX_COUNTED_FILES) {
        if lines >= LARGE_CHANGE_LINES {
            break;
        }
        lines += changed_lines(repo, *old, *new)?;
    }
    Ok(Some(Ahead {
        base: base.to_owned(),
        merge_base: crate::abbrev::Abbrev::new(repo).id(merge_base),
        commits,
        files,
        lines: lines.min(LARGE_CHANGE_LINES),
    }))
}

/// The tree of commit `id`.
fn commit_tree(repo: &gix::Repository, id: ObjectId) -> Result<gix::Tree<'_>> {
    let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
    commit.tree().map_err(|err| Error::git("commit tree", err))
}

/// Lines added plus removed between two blobs (an absent side is empty), with Myers as git's
/// default; 0 when either side holds a NUL byte in its first 8000 bytes (git's binary test).
fn changed_lines(repo: &gix::Repository, old: Option<ObjectId>, new: Option<ObjectId>) -> Result<u64> {
    use gix::diff::blob::{Algorithm, Diff, InternedInput, sources::byte_lines};
    let read = |id: Option<ObjectId>| -> Result<Vec<u8>> {
        match id {
            Some(id) => Ok(repo.find_blob(id).map_err(|err| Error::git("blob", err))?.detach().data),
            None => Ok(Vec::new()),
        }
    };
    let (old, new) = (read(old)?, read(new)?);
    let binary = |data: &[u8]| data[..data.len().min(8000)].contains(&0);
    if binary(&old) || binary(&new) {
        return Ok(0);
    }
    let input = InternedInput::new(byte_lines(&old), byte_lines(&new));
    let diff = Diff::compute(Algorithm::Myers, &input);
    Ok(u64::from(diff.count_additions()) + u64::from(diff.count_removals()))
}
