//! `fleet.digest` (SPEC §5): how HEAD and the local branches of many repositories moved since a time, newest
//! first, read from the reflog files (`logs/HEAD`, `logs/refs/heads/*`). Nothing is fetched and nothing written.
//!
//! A commit, reset or rebase moves a branch and HEAD together and git writes the same line to both logs; such a
//! pair is one event of the branch with `head: true`. A movement of HEAD alone (a checkout, a commit on a detached
//! HEAD, the steps of a rebase) is an event of `HEAD`.

use gix::ObjectId;
use serde::Serialize;

use crate::budget::{Budgeted, Measure, first, fit_sections};
use crate::engine::{Engine, Repo};
use crate::error::{Error, ItemError, Result};
use crate::facets::{iso_time, utf8};
use crate::fleet::{Targets, millis};

/// Hex digits of the shas an event carries.
pub const SHA_DIGITS: usize = 12;

/// Knobs of `fleet.digest`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Movements at or after this time (Unix milliseconds; reflog times have whole seconds) are listed.
    pub since_ms: i64,
    /// Events listed at most (SPEC §5: 1-1000, default 200); `truncated` says when there were more.
    pub max_events: usize,
}

/// The digest.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Digest {
    /// Repositories read (those that could not be read are in `unreadable`).
    pub repositories: usize,
    /// Events since `sinceMs` across those repositories (exact, also when the list is cut).
    pub total: usize,
    /// `true` when `maxEvents` cut the list (`total` says how many there were); absent when false. A cut by the
    /// token budget is counted in `omitted.events` instead.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// `true` when the repositories came from the registry; absent when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub from_registry: bool,
    /// Newest first.
    pub events: Vec<Event>,
    /// Repositories that could not be read, with why; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<Unreadable>,
}

/// A repository a digest could not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unreadable {
    /// The path as given.
    pub repo_path: String,
    /// Why (`not_found`, `not_a_repository`, `outside_allowed_roots`, `invalid_path`, `git_read_failed`).
    pub error: ItemError,
}

/// One movement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// The repository's root.
    pub repo_path: String,
    /// The local branch that moved (short name, `main`), or `HEAD` for a movement of HEAD alone.
    #[serde(rename = "ref")]
    pub ref_name: String,
    /// HEAD moved with the branch (the same line is in both logs); absent when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub head: bool,
    /// When, ISO 8601 with the offset git recorded.
    pub at: String,
    /// The tip before, first [`SHA_DIGITS`] hex digits; absent when the ref was created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// The tip after; absent when the ref was deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// The identity git recorded for the movement, `Name <email>` exactly (configured, not proof of a person or
    /// an agent).
    pub identity: String,
    /// The reflog message exactly, e.g. `commit (amend): fix typo`, `reset: moving to HEAD~2`.
    pub message: String,
    /// The old tip is not an ancestor of the new one: the movement dropped commits from the ref (reset back,
    /// amend, rebase, forced move). Never set for a movement of HEAD alone that switches what it points to
    /// (`checkout:` and `rebase` steps). Absent when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rewrote: bool,
    #[serde(skip)]
    seconds: i64,
    #[serde(skip)]
    sequence: usize,
}

impl Engine {
    /// `fleet.digest`: the movements of HEAD and the local branches of `targets` since `options.since_ms`, newest
    /// first, cut to `options.max_events` and `max_tokens`.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`budget_below_floor`). One repository's failure is never an error: it is listed in
    /// `unreadable`.
    pub fn digest(
        &self,
        targets: &Targets,
        options: &Options,
        max_tokens: usize,
        measure: &mut Measure<'_, Digest>,
    ) -> Result<Budgeted<Digest>> {
        let listed = self.fleet_targets(targets);
        let since_ms = options.since_ms;
        let read = self.fleet_each(listed, |_, _| None, |repo| self.digest_events(repo, since_ms));
        let (mut events, mut unreadable, mut repositories) = (Vec::new(), Vec::new(), 0);
        for (_, root, outcome) in read {
            match outcome {
                Ok(found) => {
                    repositories += 1;
                    events.extend(found);
                }
                Err(failure) => unreadable.push(Unreadable { repo_path: root, error: failure.item() }),
            }
        }
        events.sort_by(|one, two| {
            (two.seconds, &one.repo_path, two.sequence).cmp(&(one.seconds, &two.repo_path, one.sequence))
        });
        let total = events.len();
        let full = Digest {
            repositories,
            total,
            truncated: total > options.max_events,
            from_registry: matches!(targets, Targets::Registry),
            events: first(&events, options.max_events),
            unreadable,
        };
        let totals = [full.events.len(), full.unreadable.len()];
        let cut = |full: &Digest, shown: &[usize]| Digest {
            events: first(&full.events, shown[0]),
            unreadable: first(&full.unreadable, shown[1]),
            ..full.clone()
        };
        fit_sections(&full, &["events", "unreadable"], &totals, max_tokens, &cut, measure)
    }

    /// The movements of one repository since `since_ms`, from the answer cache until any event of the repository.
    ///
    /// # Errors
    /// [`Error::GitRead`] when the refs cannot be listed or a reflog cannot be parsed.
    pub fn digest_events(&self, repo: &Repo, since_ms: i64) -> Result<Vec<Event>> {
        let variant = format!("fleet.digest\0{since_ms}");
        self.answer(
            repo,
            &variant,
            None,
            |events: &Vec<Event>| 64 + events.len() * 256,
            || read_events(&repo.git, &repo.location.root.display().to_string(), since_ms),
        )
    }
}

/// One reflog line, parsed.
struct Line {
    old: ObjectId,
    new: ObjectId,
    seconds: i64,
    at: String,
    identity: String,
    message: String,
}

fn read_log(reference: &mut gix::Reference<'_>, since_ms: i64) -> Result<Vec<Line>> {
    let mut platform = reference.log_iter();
    let Some(lines) = platform.rev().map_err(|err| Error::git("reflog", err))? else { return Ok(Vec::new()) };
    let mut parsed = Vec::new();
    for line in lines {
        let line = line.map_err(|err| Error::git("reflog", err))?;
        let seconds = line.signature.time.seconds;
        if millis(seconds) < since_ms {
            continue;
        }
        parsed.push(Line {
            old: line.previous_oid,
            new: line.new_oid,
            seconds,
            at: iso_time(line.signature.time),
            identity: format!("{} <{}>", utf8(&line.signature.name), utf8(&line.signature.email)),
            message: utf8(&line.message),
        });
    }
    // `rev` reads newest first; events keep the file's order (oldest first) so that `sequence` grows with time.
    parsed.reverse();
    Ok(parsed)
}

fn read_events(git: &gix::Repository, root: &str, since_ms: i64) -> Result<Vec<Event>> {
    let mut events = Vec::new();
    let platform = git.references().map_err(|err| Error::git("refs", err))?;
    let mut branch_lines = Vec::new();
    for reference in platform.local_branches().map_err(|err| Error::git("refs", err))? {
        let Ok(mut reference) = reference else { continue };
        let name = reference.name().shorten().to_string();
        branch_lines.push((name, read_log(&mut reference, since_ms)?));
    }
    let head_lines = match git.find_reference("HEAD") {
        Ok(mut head) => read_log(&mut head, since_ms)?,
        Err(_) => Vec::new(),
    };
    let same = |one: &Line, two: &Line| {
        one.old == two.old
            && one.new == two.new
            && one.seconds == two.seconds
            && one.identity == two.identity
            && one.message == two.message
    };
    let mut head_used = vec![false; head_lines.len()];
    for (name, lines) in &branch_lines {
        for (sequence, line) in lines.iter().enumerate() {
            let paired = head_lines.iter().enumerate().find(|(idx, head)| !head_used[*idx] && same(head, line));
            if let Some((idx, _)) = paired {
                head_used[idx] = true;
            }
            events.push(event(git, root, name, paired.is_some(), line, sequence, false)?);
        }
    }
    for (sequence, line) in head_lines.iter().enumerate() {
        if !head_used[sequence] {
            events.push(event(git, root, "HEAD", false, line, sequence, true)?);
        }
    }
    Ok(events)
}

fn event(
    git: &gix::Repository,
    root: &str,
    ref_name: &str,
    head: bool,
    line: &Line,
    sequence: usize,
    head_alone: bool,
) -> Result<Event> {
    let short = |id: ObjectId| {
        (!id.is_null()).then(|| {
            let mut text = id.to_string();
            text.truncate(SHA_DIGITS);
            text
        })
    };
    let switch = head_alone && (line.message.starts_with("checkout:") || line.message.starts_with("rebase"));
    let rewrote = !switch && !line.old.is_null() && !line.new.is_null() && !is_ancestor(git, line.old, line.new)?;
    Ok(Event {
        repo_path: root.to_owned(),
        ref_name: ref_name.to_owned(),
        head,
        at: line.at.clone(),
        old: short(line.old),
        new: short(line.new),
        identity: line.identity.clone(),
        message: line.message.clone(),
        rewrote,
        seconds: line.seconds,
        sequence,
    })
}

/// `git merge-base --is-ancestor old new`; a commit that is gone (pruned) cannot be judged and counts as an
/// ancestor (no rewrite is claimed).
fn is_ancestor(git: &gix::Repository, old: ObjectId, new: ObjectId) -> Result<bool> {
    if old == new {
        return Ok(true);
    }
    let Ok(commit) = git.find_commit(new) else { return Ok(true) };
    if git.find_commit(old).is_err() {
        return Ok(true);
    }
    if commit.parent_ids().any(|parent| parent.detach() == old) {
        return Ok(true);
    }
    Ok(crate::ancestry::merge_base(git, old, new)? == Some(old))
}
