//! What git counts as reachable, and the command that puts unreachable commits back on their
//! branch.
//!
//! # Lost
//!
//! A commit is lost when `git rev-list --all` does not list it: no ref reaches it. `--all` starts
//! from every ref under `refs/` (local and remote-tracking branches, tags, the stash, notes and any
//! other ref), this worktree's HEAD and the HEAD of every other worktree. Reflogs do not count:
//! they expire. `repo.reflog`'s recoveries and `repo.brief`'s lost commits both start from
//! [`tips`], so a commit that `git branch -a --contains` finds on `origin/main` is never called
//! lost.
//!
//! # Putting them back
//!
//! [`put_back`] names the git command that returns a branch's lost commits to that branch rather
//! than to a side branch. When the branch has not moved on since it dropped them (its tip is an
//! ancestor of the lost tip), `git merge --ff-only <lost tip>` moves it forward to them: no commit
//! is rewritten, and git refuses rather than merge if the branch moved meanwhile. When the branch
//! moved on, `git cherry-pick <base>..<lost tip>` replays them on top of it, `<base>` being the
//! merge base of the branch and the lost tip (the commit a reset went back to). A cherry-pick is
//! preferred to `git rebase --onto <tip> <base> <lost tip>`: given a commit rather than a branch,
//! the rebase leaves HEAD detached and the branch where it was, while the pick appends to the
//! branch checked out and stops on a conflict with the usual `--continue` and `--abort`.

use std::collections::HashSet;

use gix::ObjectId;

use crate::abbrev::Abbrev;
use crate::ancestry;
use crate::error::{Error, Result};

/// Lost commits [`put_back`] replays at most; more are left to a side branch.
pub(crate) const MAX_PUT_BACK: usize = 100;

/// Commits of the branch looked at for copies of the lost ones (a rebase or a cherry-pick made
/// them), at most: 1,000, the bound the lineage facet walks with too.
const MAX_COPIES_WALK: usize = 1000;

/// The commits `git rev-list --all` starts from: every ref under `refs/` peeled to a commit, this
/// worktree's HEAD, the main worktree's HEAD from a linked one, and each linked worktree's HEAD
/// (read from `worktrees/<name>/HEAD` in the common dir, a folder the engine vetted before opening
/// the repository). Refs naming no commit and unreadable HEAD files are skipped, as git skips
/// them. Without duplicates, in no particular order.
///
/// # Errors
/// [`Error::GitRead`] when the refs cannot be listed.
pub(crate) fn tips(repo: &gix::Repository) -> Result<Vec<ObjectId>> {
    let mut tips = HashSet::new();
    if let Ok(head) = repo.head_id() {
        tips.insert(head.detach());
    }
    let platform = repo.references().map_err(|err| Error::git("refs", err))?;
    for reference in platform.all().map_err(|err| Error::git("refs", err))? {
        let Ok(mut reference) = reference else { continue };
        if let Some(id) = crate::facets::refs::peel_to_commit_id(&mut reference) {
            tips.insert(id);
        }
    }
    let common = repo.common_dir();
    let mut heads = vec![common.join("HEAD")];
    if let Ok(entries) = std::fs::read_dir(common.join("worktrees")) {
        heads.extend(entries.flatten().map(|entry| entry.path().join("HEAD")));
    }
    for path in heads {
        if let Some(id) = head_file_commit(repo, &path) {
            tips.insert(id);
        }
    }
    Ok(tips.into_iter().collect())
}

/// The commit a HEAD file at `path` names: its sha when detached, else the commit of the ref it
/// points to; `None` when it is missing, unreadable, special (a FIFO is never opened) or names no
/// commit.
fn head_file_commit(repo: &gix::Repository, path: &std::path::Path) -> Option<ObjectId> {
    let cap = crate::guard::CONTROL_FILE_CAP;
    let bytes = crate::guard::read_capped(path, crate::guard::Symlinks::Refuse, cap, "a HEAD file").ok()??;
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim();
    let id = match text.strip_prefix("ref:") {
        Some(name) => {
            let mut reference = repo.try_find_reference(name.trim()).ok()??;
            return crate::facets::refs::peel_to_commit_id(&mut reference);
        }
        None => ObjectId::from_hex(text.as_bytes()).ok()?,
    };
    repo.find_commit(id).is_ok().then_some(id)
}

/// The git command that puts back on local branch `branch` the commits `lost_tip` has and the
/// branch lacks (see the [module docs](self)): `git merge --ff-only <lost tip>` when the branch's
/// tip is an ancestor of `lost_tip`, else `git cherry-pick <base>..<lost tip>`, preceded by
/// `git switch <branch> && ` unless `checked_out` (the branch is HEAD's). Shas are abbreviated by
/// `abbrev`, the branch name quoted for a POSIX shell.
///
/// `None` where no such command fits, and the caller offers a side branch instead: the branch is
/// gone, the tips share no history or have several merge bases, more than [`MAX_PUT_BACK`]
/// commits would be replayed, one of them is a merge (a pick needs `-m`), or the branch already
/// holds a rewritten copy of one (same author and author date: an amend or a rebase, whose old
/// commits a pick would duplicate).
///
/// # Errors
/// [`Error::GitRead`] when a commit cannot be read.
pub(crate) fn put_back(
    repo: &gix::Repository,
    branch: &str,
    checked_out: bool,
    lost_tip: ObjectId,
    abbrev: &Abbrev,
) -> Result<Option<String>> {
    let full = format!("refs/heads/{branch}");
    let Some(mut reference) = repo.try_find_reference(full.as_str()).ok().flatten() else { return Ok(None) };
    let Some(tip) = crate::facets::refs::peel_to_commit_id(&mut reference) else { return Ok(None) };
    let switch =
        if checked_out { String::new() } else { format!("git switch {} && ", crate::quote::shell_word(branch)) };
    let bases = ancestry::merge_bases(repo, tip, &[lost_tip])?;
    if bases.as_slice() == [tip] {
        return Ok(Some(format!("{switch}git merge --ff-only {}", abbrev.id(lost_tip))));
    }
    let [base] = bases[..] else { return Ok(None) };
    let missing = ancestry::exclusive(repo, lost_tip, &[tip], MAX_PUT_BACK + 1)?;
    if missing.is_empty() || missing.len() > MAX_PUT_BACK {
        return Ok(None);
    }
    let mut copies = HashSet::new();
    for id in ancestry::exclusive(repo, tip, &[lost_tip], MAX_COPIES_WALK)? {
        copies.insert(authorship(repo, id)?);
    }
    for id in &missing {
        let commit = repo.find_commit(*id).map_err(|err| Error::git("a lost commit", err))?;
        if commit.parent_ids().count() > 1 || copies.contains(&authorship(repo, *id)?) {
            return Ok(None);
        }
    }
    Ok(Some(format!("{switch}git cherry-pick {}..{}", abbrev.id(base), abbrev.id(lost_tip))))
}

/// The author's email and author date of `id`, which a rebase, an amend or a cherry-pick keep: a
/// commit with the same pair is taken for a copy.
///
/// # Errors
/// [`Error::GitRead`] when the commit or its author cannot be read.
pub(crate) fn authorship(repo: &gix::Repository, id: ObjectId) -> Result<(Vec<u8>, i64)> {
    let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
    let author = commit.author().map_err(|err| Error::git("commit author", err))?;
    let seconds = author.time().map_err(|err| Error::git("author date", err))?.seconds;
    Ok((author.email.to_vec(), seconds))
}
