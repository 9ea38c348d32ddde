//! `commit.details` (design.md#tools): one commit's metadata and its changed files with status and
//! line counts, like `git show --numstat -M`.
//!
//! A merge is diffed against its first parent (`git show --diff-merges=first-parent`), and says so
//! in `note`; a root commit against the empty tree. Renames are detected as `-M` does (50%
//! similarity); copies are not looked for, as `git show -M` does not.
//!
//! A stash (a commit of `refs/stash`'s reflog, named `stash@{n}` or by sha) is a merge only in
//! form: its first parent is the commit it was made on, its second the index as it was
//! (`index on ...`), its third, when `--include-untracked` or `--all` saved untracked files, a root
//! commit holding only them. Its `files` are its work tree against its base, staged and unstaged
//! changes together, as `git stash show` lists them (`git diff stash^1 stash`); `stash.index` is
//! what was staged (`git diff stash^1 stash^2`, what `git stash apply --index` puts back in the
//! index) and `stash.untracked` the untracked files (`git show stash^3`).

use serde::Serialize;

use super::{FileStat, Totals, diff_sides, stats};
use crate::budget::{Budgeted, Measure, first, fit_sections};
use crate::compact::Implied;
use crate::compare::side::{PathFilter, Side};
use crate::error::{Error, Result};
use crate::facets::commits::abbreviate;
use crate::facets::{iso_time, subject, utf8};
use crate::interrupt::Interrupt;
use crate::revision::resolve_commit;

/// One commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Details {
    /// Full sha.
    pub sha: String,
    /// Parent shas abbreviated like `git log --oneline` (shortest unique, at least 7 digits), first
    /// parent first; default empty (a root commit, or a shallow clone's boundary commit).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<String>,
    /// A shallow clone's boundary commit: its parents are absent, so, like `git show`, its files
    /// are compared with the empty tree; absent when `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shallow: bool,
    /// Who wrote it, as recorded (configured identity, not proof of a person).
    pub author: Signature,
    /// Who committed it, as recorded; default `null`: the same name, email and time as the author.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub committer: Option<Signature>,
    /// The first line of the message.
    pub subject: String,
    /// The rest of the message, trimmed; cut from the end when the budget needs it
    /// (`omitted.bodyChars`); default empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub body: String,
    /// `true` for a merge (two or more parents). Not serialised: `parents` and `note` say it.
    #[serde(skip)]
    pub merge: bool,
    /// The commit the files are compared with: the first parent, or `null` for a root commit (empty
    /// tree). Not serialised: it is always `parents[0]`.
    #[serde(skip)]
    pub diffed_against: Option<String>,
    /// Present for merges and stashes: how they are diffed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Present for a stash: its name and its index and untracked parts (see the module docs);
    /// default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stash: Option<Stash>,
    /// Exact totals over all changed files; left out while the file list is uncut (they are then
    /// its sums).
    #[serde(skip_serializing_if = "Implied::is_implied")]
    pub totals: Implied<Totals>,
    /// Changed files in path order, with status and `--numstat` counts (cut by the budget:
    /// `omitted.files`); default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileStat>,
}

/// The parts of a stash that its `files` (work tree against base) mix or leave out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stash {
    /// Its current name, `stash@{n}` (0 is the newest).
    #[serde(rename = "ref")]
    pub name: String,
    /// What was staged when it was made: its index commit (second parent) against its base
    /// (`git diff stash^1 stash^2`).
    pub index: Part,
    /// The untracked files it saved (its third parent, `git show stash^3`); default `null`: none
    /// were saved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untracked: Option<Part>,
}

/// One part of a stash: changed files with `--numstat` counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Part {
    /// Exact totals over the part's files; left out while its file list is uncut (they are then its
    /// sums).
    #[serde(skip_serializing_if = "Implied::is_implied")]
    pub totals: Implied<Totals>,
    /// The files in path order (cut by the budget: `omitted.stashIndexFiles`,
    /// `omitted.stashUntrackedFiles`); default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileStat>,
}

/// A name, email and time exactly as git recorded them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Signature {
    /// The name.
    pub name: String,
    /// The email.
    pub email: String,
    /// ISO 8601 with the recorded offset (`git log --format=%aI`; `Z` for UTC).
    pub time: String,
}

/// Reads the commit `spec` names and its changes.
///
/// # Errors
/// [`crate::Error::Invalid`] for a refused or unknown revision; [`Error::GitRead`] on a failed
/// read; [`crate::Error::Cancelled`] once `interrupt` is triggered.
pub fn read(repo: &gix::Repository, spec: &str, interrupt: &Interrupt) -> Result<Details> {
    let id = resolve_commit(repo, spec)?;
    let to_err = |err| Error::git("a commit", err);
    let commit = repo.find_commit(id).map_err(to_err)?;
    let decoded = commit.decode().map_err(to_err)?;
    let shallow = crate::ancestry::Shallow::read(repo)?;
    let parents = shallow.parents(&commit);
    let signature = |sig: gix::actor::SignatureRef<'_>| -> Result<Signature> {
        let time = sig.time().map_err(|err| Error::git("a commit signature", err))?;
        Ok(Signature {
            name: crate::facets::name(sig.name),
            email: crate::facets::name(sig.email),
            time: iso_time(time),
        })
    };
    let author = signature(decoded.author().map_err(to_err)?)?;
    let committer = signature(decoded.committer().map_err(to_err)?)?;
    let message = utf8(decoded.message);
    let subject = subject(decoded.message);
    let body = message.trim_start().split_once('\n').map_or("", |(_, rest)| rest).trim().to_owned();
    let tree = commit.tree_id().map_err(to_err)?.detach();
    let (old, diffed_against) = match parents.first() {
        Some(parent) => {
            let parent_tree = repo.find_commit(*parent).map_err(to_err)?.tree_id().map_err(to_err)?.detach();
            (Side::Tree(parent_tree), Some(abbreviate(gix::prelude::ObjectIdExt::attach(*parent, repo))))
        }
        None => (Side::Empty, None),
    };
    let files = tree_stats(repo, old, Side::Tree(tree), interrupt)?;
    let merge = parents.len() > 1;
    let stash = match stash_position(repo, id, &parents)? {
        Some(position) => Some(stash_parts(repo, position, &parents, interrupt)?),
        None => None,
    };
    let note = match (&stash, merge) {
        (Some(_), _) => Some(STASH_NOTE.to_owned()),
        (None, true) => Some("a merge: files are diffed against its first parent only".to_owned()),
        (None, false) => None,
    };
    Ok(Details {
        sha: id.to_string(),
        parents: parents.iter().map(|parent| abbreviate(gix::prelude::ObjectIdExt::attach(*parent, repo))).collect(),
        shallow: shallow.is_boundary(&id),
        committer: (committer != author).then_some(committer),
        author,
        subject,
        body,
        merge,
        note,
        stash,
        diffed_against,
        totals: Implied::stated(Totals::of(&files)),
        files,
    })
}

/// The `note` of a stash.
pub const STASH_NOTE: &str = "a stash: files are its work tree against its base (`git stash show`, staged and \
unstaged together); stash.index is what was staged (`git diff stash^1 stash^2`), stash.untracked the untracked \
files it saved (`git show stash^3`)";

/// The changed files from `old` to `new` (two trees), renames as `-M`.
fn tree_stats(repo: &gix::Repository, old: Side, new: Side, interrupt: &Interrupt) -> Result<Vec<FileStat>> {
    let rewrites = Some(gix::diff::Rewrites::default());
    let diffed = diff_sides(repo, old, new, &PathFilter::default(), rewrites, interrupt)?;
    stats(repo, &diffed, interrupt)
}

/// The position `n` of `id` in `refs/stash`'s reflog (`stash@{n}`), if it is a stash: listed there,
/// with the two or three parents `git stash` gives its commits.
fn stash_position(repo: &gix::Repository, id: gix::ObjectId, parents: &[gix::ObjectId]) -> Result<Option<usize>> {
    if !(2..=3).contains(&parents.len()) {
        return Ok(None);
    }
    let sha = id.to_string();
    Ok(crate::facets::stashes::read(repo)?.into_iter().find(|stash| stash.sha == sha).map(|stash| stash.index))
}

/// The index part (second parent against the first) and the untracked part (the third parent's
/// tree) of a stash.
fn stash_parts(
    repo: &gix::Repository,
    position: usize,
    parents: &[gix::ObjectId],
    interrupt: &Interrupt,
) -> Result<Stash> {
    let to_err = |err| Error::git("a stash commit", err);
    let tree_of = |id: gix::ObjectId| -> Result<Side> {
        Ok(Side::Tree(repo.find_commit(id).map_err(to_err)?.tree_id().map_err(to_err)?.detach()))
    };
    let part = |files: Vec<FileStat>| Part { totals: Implied::stated(Totals::of(&files)), files };
    let index = part(tree_stats(repo, tree_of(parents[0])?, tree_of(parents[1])?, interrupt)?);
    let untracked = match parents.get(2) {
        Some(untracked) => Some(part(tree_stats(repo, Side::Empty, tree_of(*untracked)?, interrupt)?)),
        None => None,
    };
    Ok(Stash { name: format!("stash@{{{position}}}"), index, untracked })
}

/// Cuts the file list, then the stash's index and untracked lists, then the body, to `max_tokens`.
///
/// # Errors
/// [`crate::InvalidReason::BudgetBelowFloor`] when the required fields alone exceed `max_tokens`.
pub fn fit(full: Details, max_tokens: usize, measure: &mut Measure<'_, Details>) -> Result<Budgeted<Details>> {
    let index_files = full.stash.as_ref().map_or(0, |stash| stash.index.files.len());
    let untracked_files =
        full.stash.as_ref().and_then(|stash| stash.untracked.as_ref()).map_or(0, |part| part.files.len());
    let totals = [full.files.len(), index_files, untracked_files, full.body.chars().count()];
    // Totals are stated only beside a cut list (else they are its sums).
    let part = |part: &Part, shown: usize| Part {
        totals: Implied::new(*part.totals, shown >= part.files.len()),
        files: first(&part.files, shown),
    };
    let cut = |full: &Details, shown: &[usize]| Details {
        totals: Implied::new(*full.totals, shown[0] >= full.files.len()),
        files: first(&full.files, shown[0]),
        stash: full.stash.as_ref().map(|stash| Stash {
            name: stash.name.clone(),
            index: part(&stash.index, shown[1]),
            untracked: stash.untracked.as_ref().map(|untracked| part(untracked, shown[2])),
        }),
        body: full.body.chars().take(shown[3]).collect(),
        ..full.clone()
    };
    let names = ["files", "stashIndexFiles", "stashUntrackedFiles", "bodyChars"];
    fit_sections(&full, &names, &totals, max_tokens, &cut, measure)
}
