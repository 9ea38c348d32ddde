//! `fleet.digest` (design.md#tools): how HEAD and the local branches of many repositories moved
//! since a time, newest first, from the reflog files (`logs/HEAD`, `logs/refs/heads/*`) as the
//! movement store keeps them ([`crate::commit_index::movements`]: fed with what was appended since
//! the last call). Nothing is fetched and no repository is written.
//!
//! A commit, reset or rebase moves a branch and HEAD together and git writes the same line to both
//! logs; such a pair is one event of the branch with `head: true`. A movement of HEAD alone (a
//! checkout, a commit on a detached HEAD, the steps of a rebase) is an event of `HEAD`.

use gix::ObjectId;
use serde::Serialize;

use std::sync::Arc;

use crate::budget::{Budgeted, Measure, first, fit_sections};
use crate::commit_index::movements::{Line, Log, Movements, switches_head};
use crate::engine::{Engine, Repo};
use crate::error::{ItemError, Result};
use crate::fleet::{Targets, millis};

/// Hex digits of the shas an event carries.
pub const SHA_DIGITS: usize = 12;

/// Knobs of `fleet.digest`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Movements at or after this time (Unix milliseconds; reflog times have whole seconds) are
    /// listed.
    pub since_ms: i64,
    /// Events listed at most (design.md#tools: 1-1000, default 200); `truncated` says when there
    /// were more.
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
    /// `true` when `maxEvents` cut the list (`total` says how many there were); absent when false.
    /// A cut by the token budget is counted in `omitted.events` instead.
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
    /// Why (`not_found`, `not_a_repository`, `outside_allowed_roots`, `invalid_path`,
    /// `git_read_failed`).
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
    /// The identity git recorded for the movement, `Name <email>` exactly (configured, not proof of
    /// a person or an agent).
    pub identity: String,
    /// The reflog message exactly, e.g. `commit (amend): fix typo`, `reset: moving to HEAD~2`.
    pub message: String,
    /// The old tip is not an ancestor of the new one: the movement dropped commits from the ref
    /// (reset back, amend, rebase, forced move). Never set for a movement of HEAD alone that
    /// switches what it points to (`checkout:` and `rebase` steps). Absent when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rewrote: bool,
    #[serde(skip)]
    seconds: i64,
    #[serde(skip)]
    sequence: usize,
}

impl Engine {
    /// `fleet.digest`: the movements of HEAD and the local branches of `targets` since
    /// `options.since_ms`, newest first, cut to `options.max_events` and `max_tokens`.
    ///
    /// A repository unchanged since an earlier call is answered from memory without being opened; a
    /// changed one has only what was appended to its reflogs read
    /// ([`crate::commit_index::movements`]).
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] (`budget_below_floor`). One repository's failure is never an
    /// error: it is listed in `unreadable`.
    pub fn digest(
        &self,
        targets: &Targets,
        options: &Options,
        max_tokens: usize,
        measure: &mut Measure<'_, Digest>,
    ) -> Result<Budgeted<Digest>> {
        // An unreadable registry leaves the digest with no repository; the radar's hint says why.
        let (listed, _) = self.fleet_targets(targets);
        let since_ms = options.since_ms;
        let read = self.fleet_each(
            listed,
            |location, call| self.cached_answer::<Arc<Movements>>(location, call, MOVEMENTS_VARIANT),
            |repo| self.movements(repo),
        );
        let (mut events, mut unreadable, mut repositories) = (Vec::new(), Vec::new(), 0);
        for (_, root, outcome) in read {
            match outcome {
                Ok(movements) => {
                    repositories += 1;
                    events.extend(events_since(&movements, &root, since_ms));
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

    /// The movements of one repository since `since_ms`, in no particular order.
    ///
    /// # Errors
    /// [`crate::Error::GitRead`] when the refs cannot be listed or a reflog cannot be read or
    /// parsed.
    pub fn digest_events(&self, repo: &Repo, since_ms: i64) -> Result<Vec<Event>> {
        Ok(events_since(self.movements(repo)?.as_ref(), &repo.location.root.display().to_string(), since_ms))
    }

    /// The reflog movements of `repo`, from the answer cache until any event of the repository,
    /// else brought up to date by the movement store (which reads only what was appended).
    fn movements(&self, repo: &Repo) -> Result<Arc<Movements>> {
        self.answer(
            repo,
            MOVEMENTS_VARIANT,
            None,
            |movements: &Arc<Movements>| {
                let lines = movements.branches.iter().chain(&movements.head).map(|log| log.lines.len()).sum::<usize>();
                64 + lines * 256
            },
            || self.movement_store().read(&repo.git),
        )
    }
}

/// The answer-cache variant of a repository's [`Movements`].
const MOVEMENTS_VARIANT: &str = "fleet.digest\0movements";

/// The events of `movements` at or after `since_ms`: each branch line (with `head` when HEAD's log
/// holds the same line), then each line of HEAD's log that is a movement of HEAD alone. `sequence`
/// counts the listed lines of the same log, oldest first.
fn events_since(movements: &Movements, root: &str, since_ms: i64) -> Vec<Event> {
    let mut events = Vec::new();
    let mut add = |log: &Log, head_alone: bool| {
        let listed = log.lines.iter().filter(|line| millis(line.seconds) >= since_ms);
        for (sequence, line) in listed.enumerate() {
            if head_alone && line.paired {
                continue;
            }
            events.push(event(root, &log.name, line, sequence, head_alone));
        }
    };
    for log in &movements.branches {
        add(log, false);
    }
    if let Some(head) = &movements.head {
        add(head, true);
    }
    events
}

fn event(root: &str, ref_name: &str, line: &Line, sequence: usize, head_alone: bool) -> Event {
    let short = |id: ObjectId| {
        (!id.is_null()).then(|| {
            let mut text = id.to_string();
            text.truncate(SHA_DIGITS);
            text
        })
    };
    let switch = head_alone && switches_head(&line.message);
    Event {
        repo_path: root.to_owned(),
        ref_name: ref_name.to_owned(),
        head: !head_alone && line.paired,
        at: line.at.clone(),
        old: short(line.old),
        new: short(line.new),
        identity: line.identity.clone(),
        message: line.message.clone(),
        rewrote: !switch && line.ancestor == Some(false),
        seconds: line.seconds,
        sequence,
    }
}
