//! What `repo.brief` answers itself when the checkout's state is the question (issue 35): the
//! regions of a conflict that stopped an operation, the commits a recent branch movement lost, a
//! parent rebased under the current branch with the `git rebase --onto` that moves it, and who owns
//! the changed files.
//!
//! Each answer reuses the tool module that owns it (`conflict::read`, the lineage facet's dropped
//! commits and rewritten parent with `branch_stack`'s replay, `codeowners`), so the brief and the
//! tool never disagree. The hint to that tool stays in the JSON; the text leaves it out while the
//! brief shows the answer uncut ([`crate::brief::Hint::stated_by`]).

use gix::ObjectId;
use serde::Serialize;

use crate::compact::is_zero;
use crate::conflict::read::{self, ConflictRead};
use crate::error::{Error, Result};
use crate::facets::lineage::{Lineage, RECENT_SECONDS};

/// Conflicted files whose regions the brief reads at most; `conflict.read` reads more.
pub const CONFLICT_FILES: usize = 10;
/// Bytes of each region's text the brief keeps at most (context and sides); a longer region is
/// marked truncated.
pub const REGION_BYTES: usize = 2048;
/// Lost-commit movements the brief lists at most.
pub const LOST_MOVEMENTS: usize = 3;
/// Commits listed per lost movement at most; the rest are counted.
pub const LOST_COMMITS: usize = 5;
/// Changed paths listed per owner group at most; the rest are counted.
pub const OWNED_FILES: usize = 10;

/// A recent movement of a local branch that left commits no ref holds (`git rev-list --all` lists
/// none of them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Lost {
    /// The branch's short name.
    pub branch: String,
    /// The movement as its reflog names it (`reset`, `commit (amend)`, `rebase (finish)`, ...).
    pub action: String,
    /// `"<sha> <subject>"` of the lost commits, newest first, at most [`LOST_COMMITS`].
    pub commits: Vec<String>,
    /// Lost commits not listed; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub more: usize,
    /// The git command that brings them back: the one that puts them back on the branch
    /// ([`crate::reachable::put_back`]: `git merge --ff-only <sha>` when the branch has not moved
    /// on, else `git cherry-pick <base>..<sha>`, after `git switch <branch> && ` when it is not
    /// checked out), or where none fits the side branch `git branch recover/<sha> <sha>`.
    pub command: String,
}

/// Changed paths that share their CODEOWNERS owners.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Owned {
    /// The owners, as the deciding rule lists them; default empty (unowned).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<String>,
    /// The paths, in path order, at most [`OWNED_FILES`].
    pub files: Vec<String>,
    /// Paths of the group not listed; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub more: usize,
}

/// The active conflict as `conflict.read` reads it, with at most [`CONFLICT_FILES`] files and
/// region texts of at most [`REGION_BYTES`]; `None` without unmerged paths.
///
/// # Errors
/// [`Error::GitRead`] when the index or a blob cannot be read.
pub fn conflict(repo: &gix::Repository, conflicted: &[String]) -> Result<Option<ConflictRead>> {
    if conflicted.is_empty() {
        return Ok(None);
    }
    let options = read::Options { max_files: CONFLICT_FILES, max_bytes_per_side: REGION_BYTES, sides: false };
    Ok(Some(read::read(repo, &options)?).filter(|read| read.conflict))
}

/// Whether `read` holds every conflicted file with marker regions, every region whole: then the
/// brief states all that `conflict.read`'s default call would add but the blobs' sizes. A file
/// without regions (binary, deleted on one side) leaves the hint to `conflict.read`.
pub fn conflict_complete(read: &ConflictRead) -> bool {
    read.files.len() == read.conflicted_files
        && read.files.iter().all(|file| {
            file.work_tree.region_count > 0
                && file.work_tree.regions.len() == file.work_tree.region_count
                && file.work_tree.regions.iter().all(|region| !region.truncated)
        })
}

/// The lineage's movements within [`RECENT_SECONDS`] before `now` that dropped commits, newest
/// first, at most [`LOST_MOVEMENTS`], each commit listed once (under its newest movement);
/// `current` is HEAD's branch, which needs no `git switch` to take its commits back.
///
/// # Errors
/// [`Error::GitRead`] when a lost commit cannot be read.
pub fn lost(repo: &gix::Repository, lineage: &Lineage, now: i64, current: Option<&str>) -> Result<Vec<Lost>> {
    let abbrev = crate::abbrev::Abbrev::new(repo);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for movement in lineage.movements.iter().filter(|movement| movement.time >= now - RECENT_SECONDS) {
        let fresh: Vec<&String> = movement.commits.iter().filter(|sha| seen.insert(sha.as_str())).collect();
        if fresh.is_empty() {
            continue;
        }
        if out.len() == LOST_MOVEMENTS {
            break;
        }
        let mut commits = Vec::new();
        for sha in fresh.iter().take(LOST_COMMITS) {
            let id = hex_id(sha)?;
            let commit = repo.find_commit(id).map_err(|err| Error::git("a lost commit", err))?;
            let subject = crate::brief::shortened_subject(&crate::facets::subject(commit.message_raw_sloppy()));
            commits.push(format!("{} {subject}", abbrev.id(id)));
        }
        let tip = hex_id(&movement.tip)?;
        let checked_out = current == Some(movement.branch.as_str());
        let command = match crate::reachable::put_back(repo, &movement.branch, checked_out, tip, &abbrev)? {
            Some(command) => command,
            None => format!("git branch {} {}", crate::reflog::recovery_branch(tip), abbrev.id(tip)),
        };
        out.push(Lost {
            branch: movement.branch.clone(),
            action: movement.action.clone(),
            more: fresh.len() - commits.len(),
            commits,
            command,
        });
    }
    Ok(out)
}

/// The rewritten parent of `branch` (at `tip`, full hex) that the lineage found, with the
/// `git rebase --onto` that moves the branch and whether its replay stops (`repo.branchStack`'s
/// `parentMoved`); `None` without one.
///
/// # Errors
/// [`Error::GitRead`] when a commit cannot be read or the replay fails.
pub fn parent_moved(
    repo: &gix::Repository,
    lineage: &Lineage,
    branch: Option<&str>,
    tip: Option<&str>,
) -> Result<Option<crate::branch_stack::ParentMoved>> {
    let (Some(found), Some(branch), Some(tip)) = (&lineage.parent_moved, branch, tip) else {
        return Ok(None);
    };
    let tip = hex_id(tip)?;
    crate::branch_stack::replayed(repo, found.clone(), branch, tip).map(Some)
}

/// The `changed` paths grouped by the owners the CODEOWNERS file at HEAD gives them, most paths
/// first; empty without that file or without changes.
///
/// # Errors
/// [`Error::GitRead`] when HEAD's commit or the file cannot be read.
pub fn owners(repo: &gix::Repository, lineage: &Lineage, changed: &[String]) -> Result<Vec<Owned>> {
    if lineage.codeowners.is_none() || changed.is_empty() {
        return Ok(Vec::new());
    }
    let head = repo.head_commit().map_err(|err| Error::git("HEAD commit", err))?;
    let Some(loaded) = crate::codeowners::read_at(&head)? else { return Ok(Vec::new()) };
    let groups = loaded.codeowners.group(changed.iter().map(String::as_str));
    Ok(groups
        .into_iter()
        .map(|(owners, files)| Owned {
            owners,
            more: files.len().saturating_sub(OWNED_FILES),
            files: files.into_iter().take(OWNED_FILES).collect(),
        })
        .collect())
}

fn hex_id(sha: &str) -> Result<ObjectId> {
    ObjectId::from_hex(sha.as_bytes()).map_err(|err| Error::git("a commit id", err))
}
