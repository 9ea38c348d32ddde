//! `repo.history`: a page of commits like `git log [<ref>] [-- <path>]`, with a cursor that pins the walk. The ref
//! may be a range as git reads it: `A..B` (commits reachable from B and not from A) or `A...B` (reachable from
//! either and not from both: `A B --not $(git merge-base --all A B)`), an empty side meaning `HEAD`.
//!
//! The walk is git's default one (see `git help log`, "Commit Ordering" and "History Simplification"): newest
//! committer date first, ties in the order commits were queued; with a `path`, a commit is shown only when the path
//! differs from every parent, and a merge whose path equals one parent's follows only the first such parent.
//! The `path` is a literal repo-relative file or directory, not a pathspec with wildcards.

use std::collections::{BinaryHeap, HashMap, HashSet};

use gix::ObjectId;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::ancestry::Shallow;
use crate::budget::{Budgeted, Measure, fit_sections};
use crate::engine::{Engine, Repo};
use crate::error::{Error, InvalidReason, Result};
use crate::facets::commits::Abbrev;
use crate::facets::{iso_time, subject, utf8};
use crate::interrupt::Interrupt;

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Where the walk starts (`HEAD` when `None`); ignored for the start when `cursor` is given, but must match it.
    pub start: Option<String>,
    /// Only commits that change this repo-relative file or directory.
    pub path: Option<String>,
    /// Commits per page (1-200).
    pub limit: usize,
    /// The `nextCursor` of an earlier page.
    pub cursor: Option<String>,
}

/// One page of history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    /// The `ref` argument as given (`HEAD` by default).
    #[serde(rename = "ref")]
    pub start: String,
    /// The commit the walk started from, pinned by the cursor across pages; `null` on an unborn `HEAD`.
    pub tip: Option<String>,
    /// The `path` filter, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The commits of this page, newest first; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<Commit>,
    /// The repository is a shallow clone: history ends at the commits marked `shallow`, whose parents git treats
    /// as absent; absent when `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shallow: bool,
    /// Pass back as `cursor` for the next page; default `null` (the history ends on this page).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One commit of a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Commit {
    /// The sha abbreviated like `git log --oneline` (shortest unique, at least 7 digits; the page's `tip` is full).
    pub sha: String,
    /// Parent shas abbreviated the same way, first parent first; default empty (a root commit, or a shallow
    /// boundary commit, as `git log --format=%p` shows them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<String>,
    /// A shallow clone's boundary commit: its history was cut here, its parents are absent; absent when `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shallow: bool,
    /// The author as `.mailmap` maps it (as `git log` shows it, `%aN <%aE>`), serialised `"Name <email>"`.
    pub author: Person,
    /// The author date, ISO 8601 with the author's offset (as `git log --format=%aI`).
    pub time: String,
    /// The first line of the message.
    pub subject: String,
}

/// A name and email exactly as git recorded them (configured identity, not proof of a person); serialises as one
/// string, `"Name <email>"`, as git prints an identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// The name.
    pub name: String,
    /// The email.
    pub email: String,
}

impl Person {
    /// `signature` as the repository's mailmap maps it (the work tree's `.mailmap`, `mailmap.file`, `mailmap.blob`;
    /// as `git log`'s `%aN <%aE>` and `git shortlog` do); as recorded when no entry matches.
    pub(crate) fn mapped(mailmap: &gix::mailmap::Snapshot, signature: gix::actor::SignatureRef<'_>) -> Person {
        match mailmap.try_resolve_ref(signature) {
            Some(resolved) => Person {
                name: utf8(resolved.name.unwrap_or(signature.name)),
                email: utf8(resolved.email.unwrap_or(signature.email)),
            },
            None => Person { name: utf8(signature.name), email: utf8(signature.email) },
        }
    }
}

impl Serialize for Person {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{} <{}>", self.name, self.email))
    }
}

/// Where a page resumes: the pinned tips (and the commits a range hides) and how many commits earlier pages showed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cursor {
    tip: ObjectId,
    /// A range's other tip (`A...B`: both sides are walked), after `tip`.
    also: Vec<ObjectId>,
    /// A range's hidden commits: neither they nor their ancestors are shown.
    hidden: Vec<ObjectId>,
    skip: usize,
    repository: String,
    query: String,
}

const CURSOR_VERSION: &str = "h1";

/// Objects a `repo.history` call keeps in memory once read (a commit is about 250 bytes; a path walk also reads
/// trees).
const OBJECT_CACHE_BYTES: usize = 4 * 1024 * 1024;

impl Cursor {
    /// `h1.<tips>.<skip>.<repository>.<query>.<check>`: all fields hex or decimal, so it is cheap in tokens; `<tips>`
    /// is the tip, then `+<other tip>` and `-<hidden>` for ranges.
    fn encode(&self) -> String {
        let mut tips = self.tip.to_string();
        for id in &self.also {
            tips.push_str(&format!("+{id}"));
        }
        for id in &self.hidden {
            tips.push_str(&format!("-{id}"));
        }
        let body = format!("{CURSOR_VERSION}.{tips}.{}.{}.{}", self.skip, self.repository, self.query);
        format!("{body}.{}", digest(&["cursor", &body], 12))
    }

    fn decode(text: &str, repository: &str, query: &str) -> Result<Cursor> {
        let invalid = |why: &str| Error::invalid(InvalidReason::InvalidCursor, format!("cursor {text:?} {why}"));
        let (body, check) = text.rsplit_once('.').ok_or_else(|| invalid("is not a repo.history cursor"))?;
        let fields: Vec<&str> = body.split('.').collect();
        let [version, tip, skip, cursor_repository, cursor_query] = fields[..] else {
            return Err(invalid("is not a repo.history cursor"));
        };
        if version != CURSOR_VERSION || check != digest(&["cursor", body], 12) {
            return Err(invalid("was altered or comes from another version; start again without a cursor"));
        }
        if cursor_repository != repository {
            return Err(invalid("belongs to another repository"));
        }
        if cursor_query != query {
            return Err(invalid("was made for another `ref` or `path`; repeat the first page's ref and path"));
        }
        let sha = |hex: &str| ObjectId::from_hex(hex.as_bytes()).map_err(|_| invalid("holds no valid sha"));
        let mut parts = tip.split('-');
        let mut shown = parts.next().unwrap_or_default().split('+');
        let tip = sha(shown.next().unwrap_or_default())?;
        let also = shown.map(sha).collect::<Result<Vec<_>>>()?;
        let hidden = parts.map(sha).collect::<Result<Vec<_>>>()?;
        let skip = skip.parse().map_err(|_| invalid("holds no valid position"))?;
        Ok(Cursor { tip, also, hidden, skip, repository: repository.to_owned(), query: query.to_owned() })
    }
}

/// The first `hex_len` hex digits of sha256 over `parts` joined by NUL bytes.
pub(crate) fn digest(parts: &[&str], hex_len: usize) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let mut hex: String = faster_hex::hex_string(&hasher.finalize());
    hex.truncate(hex_len);
    hex
}

impl Engine {
    /// `repo.history`: one page of commits, cut to `max_tokens`; commits cut by the budget are not lost: they are
    /// counted in `omitted.commits` and `nextCursor` resumes right after the last commit shown.
    ///
    /// Pages never skip or repeat a commit, also when the ref moves between pages: the cursor pins the tip sha.
    ///
    /// # Errors
    /// [`Error::Invalid`] with `invalid_revision` / `unknown_revision` (the ref), `invalid_path`, `invalid_cursor`
    /// (altered, or from another repository, ref or path) or `budget_below_floor`; [`Error::GitRead`] when a
    /// commit or tree cannot be read.
    pub fn history(
        &self,
        repo: &Repo,
        options: &Options,
        max_tokens: usize,
        measure: &mut Measure<'_, Page>,
    ) -> Result<Budgeted<Page>> {
        let start = options.start.clone().unwrap_or_else(|| "HEAD".to_owned());
        if let Some(path) = &options.path {
            crate::repository::check_relative_path(path)?;
        }
        // A commit is read when it is queued (its date and parents) and when it is shown (author, subject): kept in
        // memory for the call, it is inflated from the pack once.
        let mut git = repo.git.clone();
        crate::objects::read_packs_first(&mut git, OBJECT_CACHE_BYTES);
        let git = &git;
        let repository = digest(&[&repo.location.common_dir.display().to_string()], 12);
        let query = digest(&[&start, options.path.as_deref().unwrap_or("")], 8);
        let cursor = match &options.cursor {
            Some(text) => Cursor::decode(text, &repository, &query)?,
            None => match start_commits(git, &start)? {
                Some((tip, also, hidden)) => Cursor { tip, also, hidden, skip: 0, repository, query },
                None => {
                    let empty = Page {
                        start,
                        tip: None,
                        path: options.path.clone(),
                        commits: vec![],
                        shallow: false,
                        next_cursor: None,
                    };
                    return fit_page(empty, None, max_tokens, measure);
                }
            },
        };
        let pinned = [cursor.tip].into_iter().chain(cursor.also.iter().copied()).chain(cursor.hidden.iter().copied());
        if pinned.into_iter().any(|id| git.find_commit(id).is_err()) {
            return Err(Error::invalid(
                InvalidReason::InvalidCursor,
                "the cursor's tip is not a commit of this repository",
            ));
        }
        // The page from the kept walk of this tip and path (continued from where an earlier page left it).
        let key = crate::walks::Key::new(
            git,
            &repo.location.common_dir,
            (cursor.tip, &cursor.also, &cursor.hidden),
            options.path.as_deref(),
        )?;
        let begin = || {
            let walk = Walk::new(git, cursor.tip, options.path.as_deref())?;
            if cursor.hidden.is_empty() && cursor.also.is_empty() {
                Ok(walk)
            } else {
                walk.range(git, &cursor.also, &cursor.hidden)
            }
        };
        let mailmap = crate::guard::open_mailmap(git);
        let abbrev = Abbrev::new(git);
        let (commits, more, shallow) = self.walks.with(&key, begin, |kept| {
            let end = cursor.skip.saturating_add(options.limit);
            kept.fill(git, &repo.interrupt, end.saturating_add(1))?;
            let shown = kept.shown.get(cursor.skip.min(kept.shown.len())..end.min(kept.shown.len())).unwrap_or(&[]);
            let commits = shown
                .iter()
                .map(|shown| describe(git, &abbrev, kept.shallow(), &mailmap, shown.id))
                .collect::<Result<Vec<_>>>()?;
            Ok((commits, kept.shown.len() > end, kept.shallow().is_shallow()))
        })?;
        let page = Page {
            start,
            tip: Some(cursor.tip.to_string()),
            path: options.path.clone(),
            commits,
            shallow,
            next_cursor: None,
        };
        fit_page(page, Some((cursor, more)), max_tokens, measure)
    }
}

/// A walk's tip, a range's other tip (`A...B`) and the commits a range hides.
type Tips = (ObjectId, Vec<ObjectId>, Vec<ObjectId>);

/// The tip `start` names, a range's other tip and its hidden commits; `None` for an unborn `HEAD` (an empty
/// history, not an error).
fn start_commits(repo: &gix::Repository, start: &str) -> Result<Option<Tips>> {
    if start == "HEAD" && repo.head().map_err(|err| Error::git("HEAD", err))?.is_unborn() {
        return Ok(None);
    }
    let side = |spec: &str| crate::revision::resolve_commit(repo, if spec.is_empty() { "HEAD" } else { spec });
    if let Some((left, right)) = start.split_once("...") {
        crate::revision::check(start)?;
        let (left, right) = (side(left)?, side(right)?);
        // `A...B` is `A B --not $(git merge-base --all A B)`.
        let bases = crate::ancestry::merge_bases(repo, left, &[right])?;
        return Ok(Some((left, vec![right], bases)));
    }
    if let Some((left, right)) = start.split_once("..") {
        crate::revision::check(start)?;
        return Ok(Some((side(right)?, vec![], vec![side(left)?])));
    }
    crate::revision::resolve_commit(repo, start).map(|tip| Some((tip, vec![], vec![])))
}

/// Cuts the page's commits to the budget; the next cursor always resumes after the last commit shown.
fn fit_page(
    full: Page,
    cursor: Option<(Cursor, bool)>,
    max_tokens: usize,
    measure: &mut Measure<'_, Page>,
) -> Result<Budgeted<Page>> {
    let cut = |full: &Page, shown: &[usize]| {
        let next_cursor = cursor.as_ref().and_then(|(cursor, more)| {
            (*more || shown[0] < full.commits.len())
                .then(|| Cursor { skip: cursor.skip + shown[0], ..cursor.clone() }.encode())
        });
        // Field by field: `..full.clone()` would copy every commit only to drop the copies.
        Page {
            start: full.start.clone(),
            tip: full.tip.clone(),
            path: full.path.clone(),
            commits: crate::budget::first(&full.commits, shown[0]),
            shallow: full.shallow,
            next_cursor,
        }
    };
    fit_sections(&full, &["commits"], &[full.commits.len()], max_tokens, &cut, measure)
}

fn describe(
    repo: &gix::Repository,
    abbrev: &Abbrev,
    shallow: &Shallow,
    mailmap: &gix::mailmap::Snapshot,
    id: ObjectId,
) -> Result<Commit> {
    use gix::objs::commit::ref_iter::Token;
    let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
    // Parents and author in one pass over the header (they come first, in this order).
    let mut parents = Vec::new();
    let mut tokens = commit.iter();
    let author = loop {
        match tokens.next().transpose().map_err(|err| Error::git("commit author", err))? {
            Some(Token::Parent { id }) if !shallow.is_boundary(&commit.id) => parents.push(abbrev.id(id)),
            Some(Token::Author { signature }) => break signature,
            Some(_) => {}
            None => return Err(Error::git_text("commit author", format!("commit {id} has no author"))),
        }
    };
    let time = author.time().map_err(|err| Error::git("commit author date", err))?;
    Ok(Commit {
        sha: abbrev.id(id),
        parents,
        shallow: shallow.is_boundary(&id),
        author: Person::mapped(mailmap, author),
        time: iso_time(time),
        subject: subject(commit.message_raw_sloppy()),
    })
}

/// A queued commit: newest committer date first, then first queued first (git's `prio_queue` order; `order` is
/// unique, so `parents` never decides).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Queued {
    time: i64,
    order: std::cmp::Reverse<u64>,
    id: ObjectId,
    /// Its parents as the walk follows them, read with its date when it was queued; `None` for the tip, queued
    /// unread.
    parents: Option<Vec<ObjectId>>,
}

/// What one [`Walk::step`] reached.
pub(crate) enum Step {
    /// A commit `git log` shows, and its committer date.
    Shown(ObjectId, i64),
    /// A commit older than the step's bound, not shown.
    Low,
    /// The end of history.
    End,
}

/// The path's entry (mode and object) in a commit's tree, `None` when absent.
type PathEntry = Option<(gix::object::tree::EntryMode, ObjectId)>;

/// git's default revision walk with history simplification by `path` (`git log [--since=<t>] <tip> -- <path>`);
/// a shallow clone's boundary commits are walked as root commits, as git walks them. It borrows nothing, so it can
/// be kept between calls and continued ([`crate::walks`]); every step is given the repository it reads.
pub(crate) struct Walk {
    pub(crate) shallow: Shallow,
    queue: BinaryHeap<Queued>,
    seen: HashSet<ObjectId>,
    queued: u64,
    /// The literal path, normalised (no empty or `.` components); `""` is the whole tree (`git log -- .`).
    path: Option<std::sync::Arc<str>>,
    entries: HashMap<ObjectId, PathEntry>,
    since: Option<i64>,
    /// For a range: the only commits that may be shown or walked (those the hidden commits do not reach).
    limit: Option<HashSet<ObjectId>>,
    /// Checked before each commit is taken from the queue.
    interrupt: Interrupt,
    /// Commits taken from the queue so far.
    pub(crate) pops: u64,
    /// Where the committer dates of the commits taken so far reached a new low: (pop ordinal, date), dates
    /// strictly decreasing. A walk with `--since=<t>` ends at the first pop older than `t` (see [`Walk::since`]).
    pub(crate) lows: Vec<(u64, i64)>,
}

impl Walk {
    /// A walk from `tip`, showing only commits that change `path` when given. The path is read as git reads a
    /// literal pathspec: empty and `.` components are dropped (`./src/` is `src`), and what is left empty (`.`,
    /// `""`) is the whole tree, so commits that change no file (an empty commit, a merge taking one parent's tree)
    /// are simplified away as `git log -- .` does.
    ///
    /// # Errors
    /// [`Error::GitRead`] when the shallow boundary cannot be read.
    pub(crate) fn new(repo: &gix::Repository, tip: ObjectId, path: Option<&str>) -> Result<Self> {
        let path = path.map(|path| {
            std::sync::Arc::from(
                path.split('/').filter(|part| !part.is_empty() && *part != ".").collect::<Vec<_>>().join("/"),
            )
        });
        let mut walk = Walk {
            shallow: Shallow::read(repo)?,
            queue: BinaryHeap::new(),
            seen: HashSet::new(),
            queued: 0,
            path,
            entries: HashMap::new(),
            since: None,
            limit: None,
            interrupt: Interrupt::new(),
            pops: 0,
            lows: Vec::new(),
        };
        walk.seen.insert(tip);
        walk.push(tip, 0, None);
        Ok(walk)
    }

    /// How many commits the walk holds in memory (seen and path entries), to bound kept walks.
    pub(crate) fn weight(&self) -> usize {
        self.seen.len() + self.entries.len()
    }

    /// `git log --since=<since>` (seconds since the epoch): like git's streaming walk, a commit whose committer
    /// date is older is neither shown nor are its parents walked, so the walk ends where history gets older. Every
    /// commit still queued then is older too (the queue gives the newest first), so such a walk shows exactly the
    /// commits the walk without `since` shows before its first pop older than `since`.
    pub(crate) fn since(mut self, since: i64) -> Self {
        self.since = Some(since);
        self
    }

    /// The walk of a range: also from `also` (the other side of `A...B`), showing only commits that none of `hidden`
    /// reaches (`git log <tip> <also> --not <hidden>`). The tip is queued with date 0 by [`Walk::new`]; it is
    /// re-queued here with its date so that both sides are taken newest first.
    ///
    /// # Errors
    /// [`Error::GitRead`] when a commit cannot be read.
    pub(crate) fn range(mut self, repo: &gix::Repository, also: &[ObjectId], hidden: &[ObjectId]) -> Result<Self> {
        let tips: Vec<ObjectId> = self.queue.drain().map(|queued| queued.id).chain(also.iter().copied()).collect();
        let mut limit = HashSet::new();
        for tip in &tips {
            limit.extend(crate::ancestry::exclusive(repo, *tip, hidden, usize::MAX)?);
        }
        self.seen.clear();
        self.queued = 0;
        for tip in tips {
            if limit.contains(&tip) && self.seen.insert(tip) {
                let (time, parents) = self.date_and_parents(repo, tip)?;
                self.push(tip, time, Some(parents));
            }
        }
        self.limit = Some(limit);
        Ok(self)
    }

    /// The same walk, stopping with [`Error::Cancelled`] at the next commit once `interrupt` is triggered.
    pub(crate) fn interruptible(mut self, interrupt: &Interrupt) -> Self {
        self.interrupt = interrupt.clone();
        self
    }

    /// Checks `interrupt` from now on (a kept walk continued by another call).
    pub(crate) fn set_interrupt(&mut self, interrupt: &Interrupt) {
        self.interrupt = interrupt.clone();
    }

    fn push(&mut self, id: ObjectId, time: i64, parents: Option<Vec<ObjectId>>) {
        self.queue.push(Queued { time, order: std::cmp::Reverse(self.queued), id, parents });
        self.queued += 1;
    }

    fn enqueue(&mut self, repo: &gix::Repository, id: ObjectId) -> Result<()> {
        if self.limit.as_ref().is_some_and(|limit| !limit.contains(&id)) {
            return Ok(());
        }
        if self.seen.insert(id) {
            let (time, parents) = self.date_and_parents(repo, id)?;
            self.push(id, time, Some(parents));
        }
        Ok(())
    }

    /// Commit `id`'s committer date (seconds since the epoch) and its parents as git walks them (none for a
    /// shallow boundary), from one pass over its header.
    fn date_and_parents(&self, repo: &gix::Repository, id: ObjectId) -> Result<(i64, Vec<ObjectId>)> {
        use gix::objs::commit::ref_iter::Token;
        let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
        let mut parents = Vec::new();
        for token in commit.iter() {
            match token.map_err(|err| Error::git("commit", err))? {
                Token::Parent { id } => parents.push(id),
                Token::Committer { signature } => {
                    let time = signature.time().map_err(|err| Error::git("commit date", err))?;
                    if self.shallow.is_boundary(&id) {
                        parents.clear();
                    }
                    return Ok((time.seconds, parents));
                }
                _ => {}
            }
        }
        Err(Error::git_text("commit date", format!("commit {id} has no committer")))
    }

    /// The next commit `git log` would show, or `None` at the end of history.
    pub(crate) fn next_shown(&mut self, repo: &gix::Repository) -> Result<Option<ObjectId>> {
        loop {
            match self.step(repo, None)? {
                Step::Shown(id, _) => return Ok(Some(id)),
                Step::Low => {}
                Step::End => return Ok(None),
            }
        }
    }

    /// Takes commits from the queue until one is shown ([`Step::Shown`] with its committer date), the end of
    /// history, or, when `below` is given, a commit older than `below` that is not shown ([`Step::Low`]). Each
    /// commit taken is handled completely, so the walk can be continued after any step.
    pub(crate) fn step(&mut self, repo: &gix::Repository, below: Option<i64>) -> Result<Step> {
        loop {
            self.interrupt.check()?;
            let Some(Queued { id, time, parents, .. }) = self.queue.pop() else { return Ok(Step::End) };
            let (time, parents) = match parents {
                Some(parents) => (time, parents),
                None => self.date_and_parents(repo, id)?,
            };
            self.pops += 1;
            if self.lows.last().is_none_or(|(_, low)| time < *low) {
                self.lows.push((self.pops - 1, time));
            }
            let low = below.is_some_and(|below| time < below);
            if self.since.is_some_and(|since| time < since) {
                if low {
                    return Ok(Step::Low);
                }
                continue;
            }
            let Some(path) = self.path.clone() else {
                for parent in parents {
                    self.enqueue(repo, parent)?;
                }
                return Ok(Step::Shown(id, time));
            };
            let own = path_entry(repo, &mut self.entries, id, &path)?;
            let mut same = None;
            for parent in &parents {
                if path_entry(repo, &mut self.entries, *parent, &path)? == own {
                    same = Some(*parent);
                    break;
                }
            }
            match same {
                Some(parent) => self.enqueue(repo, parent)?,
                // Differs from every parent; a root commit differs from the empty tree when it has the path.
                None if parents.is_empty() && own.is_none() => {}
                None => {
                    for parent in parents {
                        self.enqueue(repo, parent)?;
                    }
                    return Ok(Step::Shown(id, time));
                }
            }
            if low {
                return Ok(Step::Low);
            }
        }
    }
}

/// `path`'s entry in commit `id`'s tree (cached in `entries`); for `""`, the root tree itself (`None` when empty,
/// so that a root commit with no file is not shown).
fn path_entry(
    repo: &gix::Repository,
    entries: &mut HashMap<ObjectId, PathEntry>,
    id: ObjectId,
    path: &str,
) -> Result<PathEntry> {
    if let Some(entry) = entries.get(&id) {
        return Ok(*entry);
    }
    let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
    let entry = if path.is_empty() {
        let tree = commit.tree_id().map_err(|err| Error::git("commit tree", err))?.detach();
        let mode: gix::object::tree::EntryMode = gix::object::tree::EntryKind::Tree.into();
        (tree != ObjectId::empty_tree(repo.object_hash())).then_some((mode, tree))
    } else {
        let tree = commit.tree().map_err(|err| Error::git("commit tree", err))?;
        tree.lookup_entry_by_path(path)
            .map_err(|err| Error::git("tree entry", err))?
            .map(|entry| (entry.mode(), entry.object_id()))
    };
    entries.insert(id, entry);
    Ok(entry)
}
