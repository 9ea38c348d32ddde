//! `commit.details` (SPEC §5): one commit's metadata and its changed files with status and line counts, like
//! `git show --numstat -M`.
//!
//! A merge is diffed against its first parent (`git show --diff-merges=first-parent`), and says so in `note`; a
//! root commit against the empty tree. Renames are detected as `-M` does (50% similarity); copies are not looked
//! for, as `git show -M` does not.

use serde::Serialize;

use super::side::{PathFilter, Side};
use super::{FileStat, Totals, diff_sides, stats};
use crate::budget::{Budgeted, Measure, first, fit_sections};
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
    /// Parent shas abbreviated like `git log --oneline` (shortest unique, at least 7 digits), first parent first;
    /// default empty (a root commit, or a shallow clone's boundary commit).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<String>,
    /// A shallow clone's boundary commit: its parents are absent, so, like `git show`, its files are compared with
    /// the empty tree; absent when `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shallow: bool,
    /// Who wrote it, as recorded (configured identity, not proof of a person).
    pub author: Signature,
    /// Who committed it, as recorded; default `null`: the same name, email and time as the author.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub committer: Option<Signature>,
    /// The first line of the message.
    pub subject: String,
    /// The rest of the message, trimmed; cut from the end when the budget needs it (`omitted.bodyChars`); default
    /// empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub body: String,
    /// `true` for a merge (two or more parents). Not serialised: `parents` and `note` say it.
    #[serde(skip)]
    pub merge: bool,
    /// The commit the files are compared with: the first parent, or `null` for a root commit (empty tree). Not
    /// serialised: it is always `parents[0]`.
    #[serde(skip)]
    pub diffed_against: Option<String>,
    /// Present for merges: how they are diffed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Exact totals over all changed files.
    pub totals: Totals,
    /// Changed files in path order, with status and `--numstat` counts (cut by the budget: `omitted.files`); default
    /// empty.
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
/// [`crate::Error::Invalid`] for a refused or unknown revision; [`Error::GitRead`] on a failed read;
/// [`crate::Error::Cancelled`] once `interrupt` is triggered.
pub fn read(repo: &gix::Repository, spec: &str, interrupt: &Interrupt) -> Result<Details> {
    let id = resolve_commit(repo, spec)?;
    let to_err = |err| Error::git("a commit", err);
    let commit = repo.find_commit(id).map_err(to_err)?;
    let decoded = commit.decode().map_err(to_err)?;
    let shallow = crate::ancestry::Shallow::read(repo)?;
    let parents = shallow.parents(&commit);
    let signature = |sig: gix::actor::SignatureRef<'_>| -> Result<Signature> {
        let time = sig.time().map_err(|err| Error::git("a commit signature", err))?;
        Ok(Signature { name: utf8(sig.name), email: utf8(sig.email), time: iso_time(time) })
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
    let rewrites = Some(gix::diff::Rewrites::default());
    let diffed = diff_sides(repo, old, Side::Tree(tree), &PathFilter::default(), rewrites, interrupt)?;
    let files = stats(repo, &diffed, interrupt)?;
    let merge = parents.len() > 1;
    Ok(Details {
        sha: id.to_string(),
        parents: parents.iter().map(|parent| abbreviate(gix::prelude::ObjectIdExt::attach(*parent, repo))).collect(),
        shallow: shallow.is_boundary(&id),
        committer: (committer != author).then_some(committer),
        author,
        subject,
        body,
        merge,
        note: merge.then(|| "a merge: files are diffed against its first parent only".to_owned()),
        diffed_against,
        totals: Totals::of(&files),
        files,
    })
}

/// Cuts the file list, then the body, to `max_tokens`.
///
/// # Errors
/// [`crate::InvalidReason::BudgetBelowFloor`] when the required fields alone exceed `max_tokens`.
pub fn fit(full: Details, max_tokens: usize, measure: &mut Measure<'_, Details>) -> Result<Budgeted<Details>> {
    let totals = [full.files.len(), full.body.chars().count()];
    let cut = |full: &Details, shown: &[usize]| Details {
        files: first(&full.files, shown[0]),
        body: full.body.chars().take(shown[1]).collect(),
        ..full.clone()
    };
    fit_sections(&full, &["files", "bodyChars"], &totals, max_tokens, &cut, measure)
}
