//! `repo.reflog`: how a ref moved, newest first like `git reflog show <ref>`, and how to get
//! dropped work back.
//!
//! A movement "dropped" commits when its old tip is not an ancestor of its new tip and is reachable
//! from no ref any more (`git rev-list <old> --not --all` is not empty, see [`crate::reachable`]):
//! the reflog is then the only thing that still names them, until `git gc` expires unreachable
//! entries (`gc.reflogExpireUnreachable`, 30 days by default). Such a movement carries a
//! [`Recovery`]: the command that puts the commits back on the branch that dropped them when the
//! movement was that branch's ([`crate::reachable::put_back`]), else a side branch at the lost tip.

use std::collections::HashSet;

use gix::ObjectId;
use serde::Serialize;
use serde_json::json;

use crate::budget::{Budgeted, Measure, fit_sections};
use crate::engine::{Engine, Repo};
use crate::error::{Error, InvalidReason, Result};
use crate::facets::commits::{Abbrev, SHORT_SHA_LEN, abbreviate};
use crate::facets::{iso_time, utf8};
use crate::history::Person;

/// Lost commits counted per movement at most; a larger count is reported as this number with
/// `lostCommitsCapped`.
pub const MAX_LOST_COUNT: usize = 1000;
/// Lost commits a recovery names at most (`commits`); `lostCommits` counts them all.
pub const LISTED_LOST: usize = 5;

/// The reflog of one ref.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The full ref name whose log this is (`HEAD`, `refs/heads/main`, ...).
    pub ref_name: String,
    /// Entries in the whole reflog (exact, also when `limit` or the budget shows fewer).
    pub total: usize,
    /// Movements, newest first; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<Movement>,
}

/// One reflog entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Movement {
    /// Position as in `<ref>@{N}`; 0 is the newest.
    pub index: usize,
    /// The tip before the movement, abbreviated like `git reflog` (shortest unique, at least 7
    /// digits); default `null` (the ref was created).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_sha: Option<String>,
    /// The tip after the movement, abbreviated the same way; default `null` (the ref was deleted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_sha: Option<String>,
    /// What moved it: the message up to its first `": "`, e.g. `commit (amend)`, `reset`,
    /// `rebase (start)`.
    pub action: String,
    /// The rest of the message, e.g. `moving to HEAD~2`.
    pub message: String,
    /// When, ISO 8601 with the recorded offset.
    pub time: String,
    /// The committer identity git recorded for the movement (configured, not proof of a person or
    /// agent), serialised `"Name <email>"`.
    pub identity: Person,
    /// Present when the old tip is reachable from no ref: how to bring it back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
}

/// How to recover a tip a movement dropped.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recovery {
    /// The dropped tip (abbreviated; `arguments.startPoint` has it in full); still in the object
    /// store while the reflog names it.
    pub lost_tip: String,
    /// Commits reachable from `lostTip` and from no ref (at most [`MAX_LOST_COUNT`]).
    pub lost_commits: usize,
    /// The first [`LISTED_LOST`] of those commits, newest first, abbreviated like `lostTip` (the
    /// first is `lostTip`).
    pub commits: Vec<String>,
    /// `true` when `lostCommits` stopped at [`MAX_LOST_COUNT`].
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub lost_commits_capped: bool,
    /// The proposal tool that brings it back as a new branch (a person approves it); only when
    /// write proposals can answer (a gateway is configured); default `null`, and `command` says
    /// what a person runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<&'static str>,
    /// Arguments for `tool` (`repoPath` and `reason` are the caller's to add); default `null` (no
    /// `tool`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
    /// The git command a person runs. For a movement of a branch (its own log, or HEAD's while on
    /// it), the one that puts the commits back on that branch: `git merge --ff-only <sha>` when the
    /// branch has not moved on since, else `git cherry-pick <base>..<sha>`, after a
    /// `git switch <branch> && ` when it is not checked out. Else, without a gateway, the side
    /// branch `git branch recover/<sha> <full sha>`. Default `null` (a `tool` is named instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

impl Engine {
    /// `repo.reflog`: the newest `limit` movements of `ref_name` (`HEAD` when `None`), cut to
    /// `max_tokens`.
    ///
    /// A ref that exists without a reflog gives an empty list; a name that is no ref is
    /// `unknown_revision`. A recovery names the proposal `operation.preview.branch`, spelled as
    /// `proposals` says, only when `proposals` is `Some` (a gateway can answer it); otherwise it
    /// gives the git command a person runs.
    ///
    /// # Errors
    /// [`Error::Invalid`] with `invalid_revision` (starts with `-`, control characters, not a ref
    /// name), `unknown_revision` or `budget_below_floor`; [`Error::GitRead`] when the log or a
    /// commit cannot be read.
    pub fn reflog(
        &self,
        repo: &Repo,
        ref_name: Option<&str>,
        limit: usize,
        proposals: Option<crate::Spelling>,
        max_tokens: usize,
        measure: &mut Measure<'_, Report>,
    ) -> Result<Budgeted<Report>> {
        let full = read(&repo.git, ref_name.unwrap_or("HEAD"), limit, proposals)?;
        let cut = |full: &Report, shown: &[usize]| Report {
            entries: crate::budget::first(&full.entries, shown[0]),
            ..full.clone()
        };
        fit_sections(&full, &["entries"], &[full.entries.len()], max_tokens, &cut, measure)
    }
}

fn read(repo: &gix::Repository, name: &str, limit: usize, proposals: Option<crate::Spelling>) -> Result<Report> {
    if name.is_empty() || name.starts_with('-') || name.chars().any(char::is_control) {
        return Err(Error::invalid(
            InvalidReason::InvalidRevision,
            format!("{name:?} is not a ref name: it may not be empty, start with '-' or hold control characters"),
        ));
    }
    let unknown = || crate::revision::unknown_revision(repo, name, format!("{name:?} names no ref"));
    let reference = repo
        .try_find_reference(name)
        .map_err(|err| Error::invalid(InvalidReason::InvalidRevision, format!("{name:?} is not a ref name: {err}")))?
        .ok_or_else(unknown)?;
    let ref_name = reference.name().as_bstr().to_string();
    crate::guard::vet_reflog(repo, reference.name()).map_err(crate::guard::Refusal::into_error)?;
    // Read forward, in one read of the file, keeping the newest `limit` lines: gix's reverse reader
    // slides a 4 KiB window and fails on a longer line ("buffer too small"), where git reads a
    // 300 KB line as any other.
    let mut platform = reference.log_iter();
    let Some(lines) = platform.all().map_err(|err| Error::git("reflog", err))? else {
        return Ok(Report { ref_name, total: 0, entries: vec![] });
    };
    let mut newest: std::collections::VecDeque<gix::refs::log::Line> = std::collections::VecDeque::new();
    let mut total = 0;
    for line in lines {
        let line = line.map_err(|err| Error::git("reflog", err))?;
        total += 1;
        if limit == 0 {
            continue;
        }
        if newest.len() == limit {
            newest.pop_front();
        }
        newest.push_back(line.to_owned());
    }
    let mut entries = Vec::with_capacity(newest.len());
    let abbrev = Abbrev::new(repo);
    let mut reachable = Reachable::new(repo, &ref_name, &abbrev);
    for line in newest.into_iter().rev() {
        let text = crate::facets::clipped(&utf8(&line.message), crate::facets::MAX_SUBJECT_CHARS);
        let (action, message) = match text.split_once(": ") {
            Some((action, message)) => (action.to_owned(), message.to_owned()),
            None => (text.clone(), String::new()),
        };
        let sha = |id: ObjectId| (!id.is_null()).then(|| abbrev.id(id));
        let recovery = reachable.recovery(line.previous_oid, line.new_oid, proposals)?;
        entries.push(Movement {
            index: entries.len(),
            old_sha: sha(line.previous_oid),
            new_sha: sha(line.new_oid),
            action,
            message,
            time: iso_time(line.signature.time),
            identity: Person {
                name: crate::facets::name(&line.signature.name),
                email: crate::facets::name(&line.signature.email),
            },
            recovery,
        });
    }
    Ok(Report { ref_name, total, entries })
}

/// `recover/<12 hex digits of tip>`: the branch a recovery creates at a lost tip (`repo.reflog`'s
/// recovery, and `repo.brief`'s lost commits).
pub(crate) fn recovery_branch(tip: ObjectId) -> String {
    let mut short = tip.to_string();
    short.truncate(SHORT_SHA_LEN);
    format!("recover/{short}")
}

/// What `repo.reflog` needs to tell a movement that dropped commits: the tips `--all` starts from
/// and the branch the log's movements belong to, read on first need.
struct Reachable<'r> {
    repo: &'r gix::Repository,
    abbrev: &'r Abbrev,
    ref_name: &'r str,
    tips: Option<Vec<ObjectId>>,
    branch: Option<Option<Branch>>,
}

/// The local branch whose movements a log records, for [`crate::reachable::put_back`].
struct Branch {
    /// Its short name.
    name: String,
    /// It is HEAD's branch.
    checked_out: bool,
    /// For HEAD's log: the `(old, new)` pairs of the branch's own log, which tell a movement of the
    /// branch (a commit, a reset) from one of HEAD alone (a checkout, a rebase's steps). `None` for
    /// the branch's own log, where every movement is the branch's.
    moves: Option<HashSet<(ObjectId, ObjectId)>>,
}

impl<'r> Reachable<'r> {
    fn new(repo: &'r gix::Repository, ref_name: &'r str, abbrev: &'r Abbrev) -> Self {
        Self { repo, abbrev, ref_name, tips: None, branch: None }
    }

    /// A [`Recovery`] when the movement from `old` to `new` dropped `old`: `old` is not an ancestor
    /// of `new` and no ref reaches it ([`crate::reachable::tips`]). `None` otherwise, or when `old`
    /// is null or its commit is gone.
    fn recovery(
        &mut self,
        old: ObjectId,
        new: ObjectId,
        proposals: Option<crate::Spelling>,
    ) -> Result<Option<Recovery>> {
        // Cheapest first: most movements (commits, fast-forwards, pulls) keep the old tip in the new one's history,
        // which a merge-base walk between the two settles without reading every ref; only the rest read the refs
        // and walk from the old tip to where the refs' history begins.
        if old.is_null()
            || self.repo.find_commit(old).is_err()
            || (!new.is_null() && crate::ancestry::merge_base(self.repo, old, new).ok().flatten() == Some(old))
        {
            return Ok(None);
        }
        let repo = self.repo;
        if self.tips.is_none() {
            self.tips = Some(crate::reachable::tips(repo)?);
        }
        let tips = self.tips.as_deref().expect("just filled");
        let lost = crate::ancestry::exclusive(repo, old, tips, MAX_LOST_COUNT)?;
        if lost.is_empty() {
            return Ok(None);
        }
        let put_back = match self.branch_of(old, new) {
            Some((name, checked_out)) => crate::reachable::put_back(repo, &name, checked_out, old, self.abbrev)?,
            None => None,
        };
        let branch = recovery_branch(old);
        Ok(Some(Recovery {
            lost_tip: abbreviate(gix::prelude::ObjectIdExt::attach(old, repo)),
            lost_commits: lost.len(),
            lost_commits_capped: lost.len() == MAX_LOST_COUNT,
            commits: lost.iter().take(LISTED_LOST).map(|id| self.abbrev.id(*id)).collect(),
            tool: proposals.map(|spelling| crate::ToolName::PREVIEW_BRANCH.spelled(spelling)),
            arguments: proposals.map(|_| json!({ "name": branch, "startPoint": old.to_string(), "checkout": false })),
            command: put_back.or_else(|| proposals.is_none().then(|| format!("git branch {branch} {old}"))),
        }))
    }

    /// The local branch the movement from `old` to `new` moved, and whether it is checked out: the
    /// log's own branch, or for HEAD's log the branch HEAD is on when its log records the same
    /// movement. `None` for other logs and for movements of HEAD alone.
    fn branch_of(&mut self, old: ObjectId, new: ObjectId) -> Option<(String, bool)> {
        if self.branch.is_none() {
            self.branch = Some(self.read_branch());
        }
        let branch = self.branch.as_ref().expect("just filled").as_ref()?;
        let moved = branch.moves.as_ref().is_none_or(|moves| moves.contains(&(old, new)));
        moved.then(|| (branch.name.clone(), branch.checked_out))
    }

    fn read_branch(&self) -> Option<Branch> {
        let current = self.repo.head_name().ok().flatten().map(|name| name.as_bstr().to_string());
        let current = current.as_deref().and_then(|name| name.strip_prefix("refs/heads/"));
        if let Some(name) = self.ref_name.strip_prefix("refs/heads/") {
            return Some(Branch { name: name.to_owned(), checked_out: current == Some(name), moves: None });
        }
        if self.ref_name != "HEAD" {
            return None;
        }
        let name = current?;
        let full = format!("refs/heads/{name}");
        let reference = self.repo.try_find_reference(full.as_str()).ok()??;
        crate::guard::vet_reflog(self.repo, reference.name()).ok()?;
        let mut platform = reference.log_iter();
        let lines = platform.all().ok()??;
        let moves = lines.flatten().map(|line| (line.previous_oid(), line.new_oid())).collect();
        Some(Branch { name: name.to_owned(), checked_out: true, moves: Some(moves) })
    }
}
