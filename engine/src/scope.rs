//! `repo.scope` (design.md#tools): one subtree of the repository at a glance: its work-tree
//! changes, the recent commits that touched it, its churn over a window of days, and its code
//! owners.
//!
//! - Work-tree changes are the repository's status ([`worktree::status`]) kept to paths inside the
//!   subtree, like `git status -- <path>`; a staged rename counts when either side is inside.
//! - Recent commits and churn walk history from HEAD with git's path simplification, like
//!   `git log -n <N> -- <path>` and `git log --since=<now - days> --until=<now> -- <path>`
//!   (committer dates; the window includes both ends). The engine keeps the walk of HEAD over the
//!   path ([`crate::walks`]): while HEAD does not move, a later call reads both from memory (a
//!   wider window walks on from where the last one stopped), and `repo.history` of HEAD over the
//!   same path shares the walk.
//! - Who knows the path (`allTime`) counts the authors of every commit the same walk shows over
//!   HEAD's whole history, through `.mailmap`, as `git shortlog -sn HEAD -- <path>` does: one
//!   entry per mapped name, so one person under two addresses is one author, shown with the
//!   address most of their commits carry. The kept walk keeps it: the first call walks the path's
//!   whole history once, later calls read it from memory.
//! - Owners come from the CODEOWNERS file GitHub would use, read from HEAD's commit (see
//!   [`crate::codeowners`]). For a file (or a path that does not exist) the rule matching it
//!   decides; for a directory, the last rule matching everything it can hold (`/packages/web/`,
//!   `*`), plus `ownersByRule`: every file under the directory in HEAD's tree, grouped by the rule
//!   that decides its owners, since a later rule (`*.test.tsx`) may take some of them. For a
//!   directory with work-tree changes, `changed` groups the changed paths by their owners, so an
//!   agent about to commit them knows whom each file needs.

use std::collections::BTreeMap;

use gix::ObjectId;
use serde::Serialize;

use crate::budget::{Budgeted, Measure, first, fit_sections};
use crate::codeowners::{self, LineError};
use crate::compact::{Implied, is_zero};
use crate::engine::{Engine, Repo};
use crate::error::{Error, InvalidReason, Result};
use crate::facets::Facet;
use crate::facets::commits::{Abbrev, CommitLine};
use crate::facets::worktree::{self, Change, Counts};
use crate::facets::{iso_time, subject, utf8};
use crate::interrupt::Interrupt;
use crate::lists::PathLists;
use crate::walks::Walk;

/// What to look at.
#[derive(Debug, Clone)]
pub struct Options {
    /// The repository-relative file or directory; `.` (or empty) is the whole repository. No `..`,
    /// not absolute.
    pub path: String,
    /// The churn window in days before `now` (design.md#tools: 1-36,500, default 90; the caller
    /// bounds it).
    pub churn_days: u32,
    /// How many recent commits to list (design.md#tools: 1-20, default 10).
    pub recent_commits: usize,
    /// "Now" in seconds since the Unix epoch: the end of the churn window. An input, so tests can
    /// pin the clock.
    pub now: i64,
}

/// The scope report. Counts are exact; lists may be cut by the budget (see the envelope's
/// `omitted`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Scope {
    /// The path as normalised (`.` for the whole repository).
    pub path: String,
    /// What the path is in HEAD's tree, else in the work tree.
    pub kind: PathKind,
    /// The subtree's work-tree changes; default: nothing changed in the subtree (left out when its
    /// counts are implied and every list is empty).
    #[serde(skip_serializing_if = "Changes::is_empty")]
    pub working_tree: Changes,
    /// Commits touching the path, newest first (`git log --oneline -n <recentCommits> -- <path>`):
    /// `"<sha> <subject>"` strings; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recent_commits: Vec<CommitLine>,
    /// Commits and authors touching the path in the window.
    pub churn: Churn,
    /// Commits and authors touching the path over HEAD's whole history
    /// (`git shortlog -sn HEAD -- <path>`).
    pub all_time: Tally,
    /// Code owners.
    pub code_owners: Owners,
    /// The repository is a shallow clone: recent commits, churn and `allTime` stop at the commits
    /// listed in `.git/shallow`, whose parents git treats as absent; absent when `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shallow: bool,
}

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PathKind {
    /// A file (or symlink, or submodule).
    File,
    /// A directory.
    Directory,
    /// Neither in HEAD's tree nor in the work tree, but in the index (added, then removed from the
    /// work tree). A path in none of the three is refused (`not_found`).
    Absent,
}

/// Work-tree changes inside the subtree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Changes {
    /// Exact counts inside the subtree; left out while they say nothing the lists do not (no list
    /// cut by the budget, not bare, untracked files counted the default way): each count is then
    /// its list's length, and no list means clean.
    #[serde(skip_serializing_if = "Implied::is_implied")]
    pub counts: Implied<Counts>,
    /// The path lists inside the subtree, flattened: `conflicted`, `staged`, `unstaged`,
    /// `untracked`.
    #[serde(flatten)]
    pub lists: PathLists<Change>,
}

/// Reads the path lists as if they were the report's own fields (`report.staged`), as they are in
/// its JSON.
impl std::ops::Deref for Changes {
    type Target = PathLists<Change>;

    fn deref(&self) -> &Self::Target {
        &self.lists
    }
}

impl Changes {
    /// `true` when the JSON says nothing: counts implied, every list empty (a clean subtree).
    pub fn is_empty(&self) -> bool {
        self.counts.is_implied() && self.lists.is_empty()
    }
}

/// Churn in the window `[since, until]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Churn {
    /// The window's length in days; not serialised (`since` and `until` say it).
    #[serde(skip)]
    pub days: u32,
    /// Start of the window (`now - days`), ISO 8601 UTC.
    pub since: String,
    /// End of the window (`now`), ISO 8601 UTC.
    pub until: String,
    /// Commits touching the path with a committer date in the window, and their authors by email.
    #[serde(flatten)]
    pub tally: Tally,
}

/// Reads the tally as if it were the churn's own fields (`churn.commits`), as it is in its JSON.
impl std::ops::Deref for Churn {
    type Target = Tally;

    fn deref(&self) -> &Self::Target {
        &self.tally
    }
}

/// Commits touching a path and who wrote them: `churn`'s window, or `allTime`, HEAD's whole
/// history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    /// Commits touching the path (for `allTime`, `git rev-list --count HEAD -- <path>`); default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub commits: usize,
    /// Distinct authors among them, as `.mailmap` maps them: by email in `churn`, by name in
    /// `allTime` (the lines of `git shortlog -sn`); default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub author_count: usize,
    /// Those authors, most commits first. `churn` lists them all, then by email. `allTime` lists
    /// the [`TOP_AUTHORS`] with the most commits, then by name in byte order (as
    /// `git shortlog -sn` orders them). Default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub authors: Vec<ChurnAuthor>,
}

impl Tally {
    /// The same tally with only its first `count` authors listed.
    fn first(&self, count: usize) -> Tally {
        Tally { authors: first(&self.authors, count), ..self.clone() }
    }
}

/// One author of `churn`'s window or of `allTime`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChurnAuthor {
    /// The email as `.mailmap` maps it. In `churn` it identifies the author (as `git shortlog -se`
    /// groups); in `allTime` it is the one on most of the author's commits (the first in byte
    /// order among equals).
    pub email: String,
    /// The name mapped the same way. In `churn` the name on the author's newest commit in the
    /// window; in `allTime` it identifies the author (as `git shortlog -sn` groups).
    pub name: String,
    /// Commits counted.
    pub commits: usize,
}

/// The most authors `allTime` lists (its `authorCount` counts them all).
pub const TOP_AUTHORS: usize = 10;

/// Code owners of the path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Owners {
    /// The CODEOWNERS file used (`.github/CODEOWNERS`, `CODEOWNERS` or `docs/CODEOWNERS` at HEAD);
    /// default `null` (none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<&'static str>,
    /// The deciding rule; default `null` (no rule matches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleRef>,
    /// Its owners; default empty (unowned: no rule, or a rule without owners).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<String>,
    /// For a directory: the files under it in HEAD's tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracked_files: Option<usize>,
    /// For a directory: its files grouped by deciding rule, most files first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owners_by_rule: Vec<OwnerGroup>,
    /// For a directory with work-tree changes: its changed paths (conflicted, staged, unstaged,
    /// untracked) grouped by their owners, most paths first; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<ChangedGroup>,
    /// Lines GitHub would skip as invalid (exact count); default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub error_count: usize,
    /// Those lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<LineError>,
}

/// A CODEOWNERS rule by line and pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleRef {
    /// 1-based line.
    pub line: usize,
    /// The pattern as written.
    pub pattern: String,
}

/// Files of a directory that one rule (or none) decides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerGroup {
    /// The deciding rule; default `null` (files no rule matches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleRef>,
    /// Its owners; default empty (unowned).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<String>,
    /// How many files.
    pub files: usize,
}

/// Changed paths that share owners.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangedGroup {
    /// The owners; default empty (unowned).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<String>,
    /// The paths, in status order (an untracked directory as `dir/`).
    pub files: Vec<String>,
}

/// Sections in budget priority order, as named in `omitted`.
const SECTIONS: [&str; 10] = [
    "conflicted",
    "staged",
    "unstaged",
    "recentCommits",
    "authors",
    "allTimeAuthors",
    "codeOwnersErrors",
    "changedOwners",
    "ownersByRule",
    "untracked",
];

const SECONDS_PER_DAY: i64 = 86_400;

impl Engine {
    /// `repo.scope`: the subtree `options.path` at a glance, cut to `max_tokens` in the priority
    /// conflicted, staged, unstaged, recent commits, churn authors, CODEOWNERS errors, owners by
    /// rule, untracked.
    ///
    /// # Errors
    /// [`Error::Invalid`] with `invalid_path` (absolute, `..`, control characters, inside `.git`)
    /// or `budget_below_floor`; [`Error::GitRead`] when the status, a commit, a tree or the
    /// CODEOWNERS blob cannot be read.
    pub fn scope(
        &self,
        repo: &Repo,
        options: &Options,
        max_tokens: usize,
        measure: &mut Measure<'_, Scope>,
    ) -> Result<Budgeted<Scope>> {
        let kept = Kept { walks: &self.walks, common_dir: &repo.location.common_dir };
        fit(read_from(&self.facets(repo), options, &repo.interrupt, Some(kept))?, max_tokens, measure)
    }
}

/// Where [`read_from`] finds kept walks: the engine's, for the repository at `common_dir`.
#[derive(Clone, Copy)]
struct Kept<'a> {
    walks: &'a crate::walks::Walks,
    common_dir: &'a std::path::Path,
}

/// Reads the full, uncut report.
///
/// # Errors
/// As [`Engine::scope`]; [`Error::Cancelled`] once `interrupt` is triggered (checked per commit
/// walked).
pub fn read(repo: &gix::Repository, options: &Options, interrupt: &Interrupt) -> Result<Scope> {
    read_from(&crate::cache::Reader::direct(repo), options, interrupt, None)
}

/// [`read`], taking recent commits and churn from a kept walk of HEAD over the path when `kept` is
/// given and the work-tree status from `facets` (the engine's cache: the same status `repo.status`
/// and `repo.brief` share).
fn read_from(
    facets: &crate::cache::Reader<'_>,
    options: &Options,
    interrupt: &Interrupt,
    kept: Option<Kept<'_>>,
) -> Result<Scope> {
    let repo = facets.git();
    let path = normalise(&options.path)?;
    crate::repository::check_not_beyond_symlink(repo, &path)?;
    // Kept until HEAD, a branch, `packed-refs` or `.git/shallow` changes (what moves the HEAD facet).
    let variant = format!("engine\0repo.scope at HEAD\0{path}");
    let at_head = facets.kept(&variant, &[Facet::Head], AtHead::weight, |repo| AtHead::read(repo, &path))?;
    let kind = match at_head.kind {
        Some(kind) => kind,
        None => work_tree_kind(repo, &path),
    };
    if kind == PathKind::Absent && !in_index(repo, &path)? {
        return Err(Error::invalid(
            InvalidReason::NotFound,
            format!("{path:?} exists neither at HEAD nor in the work tree or the index"),
        ));
    }
    let since = options.now - i64::from(options.churn_days) * SECONDS_PER_DAY;
    let window = (options.churn_days, since, options.now);
    let (recent_commits, churn, all_time) = match (at_head.tip, kept) {
        (Some(tip), Some(kept)) => {
            let key = crate::walks::Key::from_tip(kept.common_dir, tip, Some(&path), at_head.boundary.clone());
            let begin = || Walk::new(repo, tip, Some(&path));
            kept.walks.with(&key, begin, |walk| {
                Ok((
                    recent_kept(repo, walk, options.recent_commits, interrupt)?,
                    churn_kept(repo, walk, window, interrupt)?,
                    all_time_kept(repo, walk, interrupt)?,
                ))
            })?
        }
        (Some(tip), None) => (
            recent(repo, tip, &path, options.recent_commits, interrupt)?,
            churn(repo, Some(tip), &path, window, interrupt)?,
            all_time(repo, tip, &path, interrupt)?,
        ),
        (None, _) => (Vec::new(), churn(repo, None, &path, window, interrupt)?, tally(repo, Vec::new())),
    };
    let status: std::sync::Arc<worktree::Status> = facets.get(Facet::WorkTreeStatus, worktree::status)?;
    let mut code_owners = match &at_head.owners {
        Some(owners) => owners.clone(),
        // Not in HEAD's tree: nothing under it there, the rules decide alone.
        None => owners(at_head.codeowners.as_ref(), None, &path, kind)?,
    };
    let working_tree = changes(repo, &status, &path)?;
    if kind == PathKind::Directory
        && let Some(loaded) = &at_head.codeowners
    {
        code_owners.changed = changed_owners(&loaded.codeowners, &working_tree);
    }
    Ok(Scope {
        path: if path.is_empty() { ".".to_owned() } else { path.clone() },
        kind,
        working_tree,
        recent_commits,
        churn,
        all_time,
        code_owners,
        shallow: !at_head.boundary.is_empty(),
    })
}

/// What `repo.scope` reads from HEAD for one path: a function of HEAD's commit and the shallow
/// boundary alone, so the engine keeps it under the HEAD facet (the lookups of HEAD, its commit and
/// tree, the path in the tree, the CODEOWNERS file and, for a directory, every file under it are
/// then not made again while nothing moves).
#[derive(Debug, Clone)]
struct AtHead {
    /// HEAD's commit; `None` while unborn.
    tip: Option<ObjectId>,
    /// What the path is in HEAD's tree (`Directory` for the whole repository); `None` when the tree
    /// lacks it (the work tree then decides, on every call).
    kind: Option<PathKind>,
    /// The CODEOWNERS file at HEAD.
    codeowners: Option<codeowners::Loaded>,
    /// The code owners of the path when `kind` is known.
    owners: Option<Owners>,
    /// The shallow boundary (sorted; empty for a complete repository).
    boundary: Vec<ObjectId>,
}

impl AtHead {
    /// Reads it.
    ///
    /// # Errors
    /// [`Error::GitRead`] when HEAD, its commit, its tree, the CODEOWNERS blob or `.git/shallow`
    /// cannot be read.
    fn read(repo: &gix::Repository, path: &str) -> Result<Self> {
        let head = repo.head().map_err(|err| Error::git("HEAD", err))?;
        let tip =
            if head.is_unborn() { None } else { Some(repo.head_id().map_err(|err| Error::git("HEAD", err))?.detach()) };
        let commit = tip.map(|tip| repo.find_commit(tip)).transpose().map_err(|err| Error::git("HEAD commit", err))?;
        let tree = commit.as_ref().map(gix::Commit::tree).transpose().map_err(|err| Error::git("HEAD tree", err))?;
        let kind = tree_kind(tree.as_ref(), path)?;
        let codeowners = commit.as_ref().map(codeowners::read_at).transpose()?.flatten();
        let owners = kind.map(|kind| owners(codeowners.as_ref(), tree.as_ref(), path, kind)).transpose()?;
        let boundary = crate::ancestry::Shallow::read(repo)?.boundary().to_vec();
        Ok(Self { tip, kind, codeowners, owners, boundary })
    }

    /// Its approximate size in bytes, for the cache's bound.
    fn weight(&self) -> usize {
        let owners = self.owners.as_ref().map_or(0, |owners| {
            owners.owners_by_rule.len() * 128 + owners.errors.len() * 128 + owners.owners.len() * 32
        });
        256 + owners + self.boundary.len() * 20
    }
}

/// Cuts the lists to `max_tokens`, in the priority of [`Engine::scope`].
///
/// # Errors
/// [`Error::Invalid`] (`budget_below_floor`) when the required fields alone exceed `max_tokens`.
pub fn fit(full: Scope, max_tokens: usize, measure: &mut Measure<'_, Scope>) -> Result<Budgeted<Scope>> {
    let tree = &full.working_tree;
    let owners = &full.code_owners;
    let totals = [
        tree.lists.conflicted.len(),
        tree.lists.staged.len(),
        tree.lists.unstaged.len(),
        full.recent_commits.len(),
        full.churn.authors.len(),
        full.all_time.authors.len(),
        owners.errors.len(),
        owners.changed.len(),
        owners.owners_by_rule.len(),
        tree.lists.untracked.len(),
    ];
    // The work-tree lists are sections 0, 1, 2 and 9.
    let tree_uncut = |shown: &[usize]| [0, 1, 2, 9].iter().all(|&section| shown[section] >= totals[section]);
    let cut = |full: &Scope, shown: &[usize]| {
        let tree = &full.working_tree;
        Scope {
            working_tree: Changes {
                counts: Implied::new(*tree.counts, tree_uncut(shown) && tree.counts.are_list_lengths()),
                lists: tree.lists.first([shown[0], shown[1], shown[2], shown[9]]),
            },
            recent_commits: first(&full.recent_commits, shown[3]),
            churn: Churn { tally: full.churn.tally.first(shown[4]), ..full.churn.clone() },
            all_time: full.all_time.first(shown[5]),
            code_owners: Owners {
                errors: first(&full.code_owners.errors, shown[6]),
                changed: first(&full.code_owners.changed, shown[7]),
                owners_by_rule: first(&full.code_owners.owners_by_rule, shown[8]),
                ..full.code_owners.clone()
            },
            ..full.clone()
        }
    };
    fit_sections(&full, &SECTIONS, &totals, max_tokens, &cut, measure)
}

/// `path` without `.` components, empty or repeated slashes; `""` for the whole repository.
fn normalise(path: &str) -> Result<String> {
    crate::repository::check_relative_path(path)?;
    let parts: Vec<&str> = path.split('/').filter(|part| !part.is_empty() && *part != ".").collect();
    if parts.first() == Some(&".git") {
        return Err(Error::invalid(InvalidReason::InvalidPath, format!("path {path:?} is inside the git dir")));
    }
    Ok(parts.join("/"))
}

/// Whether the repository-relative `path` lies in the subtree `prefix` (`""`: everything).
fn within(path: &str, prefix: &str) -> bool {
    prefix.is_empty() || path.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// What `path` is in HEAD's `tree`: `Directory` for the whole repository, `None` when the tree
/// lacks it (or there is no tree: HEAD is unborn).
fn tree_kind(tree: Option<&gix::Tree<'_>>, path: &str) -> Result<Option<PathKind>> {
    if path.is_empty() {
        return Ok(Some(PathKind::Directory));
    }
    let Some(tree) = tree else { return Ok(None) };
    Ok(tree
        .lookup_entry_by_path(path)
        .map_err(|err| Error::git("tree entry", err))?
        .map(|entry| if entry.mode().is_tree() { PathKind::Directory } else { PathKind::File }))
}

/// What `path`, absent from HEAD's tree, is in the work tree.
fn work_tree_kind(repo: &gix::Repository, path: &str) -> PathKind {
    match repo.workdir().map(|workdir| std::fs::symlink_metadata(workdir.join(path))) {
        Some(Ok(metadata)) if metadata.is_dir() => PathKind::Directory,
        Some(Ok(_)) => PathKind::File,
        _ => PathKind::Absent,
    }
}

/// Whether the index has `path` or an entry below it (any stage).
fn in_index(repo: &gix::Repository, path: &str) -> Result<bool> {
    let index = repo.index_or_empty().map_err(|err| Error::git("the index", err))?;
    let directory = format!("{path}/");
    Ok(index.entries().iter().any(|entry| {
        let name = entry.path(&index);
        name == path.as_bytes() || name.starts_with(directory.as_bytes())
    }))
}

fn changes(repo: &gix::Repository, status: &worktree::Status, path: &str) -> Result<Changes> {
    let mut status = status.clone();
    let inside =
        |change: &Change| within(&change.path, path) || change.from.as_deref().is_some_and(|from| within(from, path));
    status.staged.retain(inside);
    status.unstaged.retain(inside);
    // A collapsed untracked directory holding the path stands for the path itself, as `git status -- <path>` shows.
    let workdir = repo.workdir().map(std::path::Path::to_path_buf);
    status.untracked = std::mem::take(&mut status.untracked)
        .into_iter()
        .filter_map(|file| {
            if within(file.trim_end_matches('/'), path) {
                return Some(file);
            }
            let dir = file.strip_suffix('/')?;
            within(path, dir).then(|| {
                let is_dir = workdir.as_ref().is_some_and(|workdir| workdir.join(path).is_dir());
                if is_dir { format!("{path}/") } else { path.to_owned() }
            })
        })
        .collect();
    status.conflicted.retain(|file| within(file, path));
    Ok(Changes {
        counts: Implied::stated(Counts::of(&status)),
        lists: PathLists {
            conflicted: status.conflicted,
            staged: status.staged,
            unstaged: status.unstaged,
            untracked: status.untracked,
        },
    })
}

fn recent(
    repo: &gix::Repository,
    tip: ObjectId,
    path: &str,
    limit: usize,
    interrupt: &Interrupt,
) -> Result<Vec<CommitLine>> {
    let mut walk = Walk::new(repo, tip, Some(path))?.interruptible(interrupt);
    let mut out = Vec::new();
    let abbrev = Abbrev::new(repo);
    while out.len() < limit {
        let Some(id) = walk.next_shown(repo)? else { break };
        let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
        out.push(CommitLine { sha: abbrev.id(id), subject: subject(commit.message_raw_sloppy()) });
    }
    Ok(out)
}

fn churn(
    repo: &gix::Repository,
    tip: Option<ObjectId>,
    path: &str,
    (days, since, until): (u32, i64, i64),
    interrupt: &Interrupt,
) -> Result<Churn> {
    // Per email: (commits, the name on its newest commit: the walk goes newest first).
    let mut authors: BTreeMap<String, (usize, String)> = BTreeMap::new();
    let mut commits = 0;
    let mailmap = crate::guard::open_mailmap(repo);
    if let Some(tip) = tip {
        let mut walk = Walk::new(repo, tip, Some(path))?.since(since).interruptible(interrupt);
        while let Some(id) = walk.next_shown(repo)? {
            let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
            if commit.time().map_err(|err| Error::git("commit date", err))?.seconds > until {
                continue;
            }
            commits += 1;
            let author = commit.author().map_err(|err| Error::git("commit author", err))?;
            // Through `.mailmap`, as `git shortlog` counts: one person with two addresses is one author.
            let author = crate::history::Person::mapped(&mailmap, author);
            let entry = authors.entry(author.email).or_insert_with(|| (0, author.name));
            entry.0 += 1;
        }
    }
    Ok(window_churn((days, since, until), commits, authors))
}

/// [`recent`] from a kept walk of HEAD over the path.
fn recent_kept(
    repo: &gix::Repository,
    walk: &mut crate::walks::Kept,
    limit: usize,
    interrupt: &Interrupt,
) -> Result<Vec<CommitLine>> {
    walk.fill(repo, interrupt, limit)?;
    let abbrev = Abbrev::new(repo);
    walk.shown
        .iter()
        .take(limit)
        .map(|shown| {
            let commit = repo.find_commit(shown.id).map_err(|err| Error::git("commit", err))?;
            Ok(CommitLine { sha: abbrev.id(shown.id), subject: subject(commit.message_raw_sloppy()) })
        })
        .collect()
}

/// [`churn`] from a kept walk of HEAD over the path: the commits `--since` shows are a prefix of
/// the kept walk's (see [`crate::walks`]); each distinct raw author is mapped through `.mailmap`
/// once.
fn churn_kept(
    repo: &gix::Repository,
    walk: &mut crate::walks::Kept,
    (days, since, until): (u32, i64, i64),
    interrupt: &Interrupt,
) -> Result<Churn> {
    let shown = walk.since(repo, interrupt, since)?.len();
    // Commits per raw identity, identities in the order the walk first showed them.
    let mut counts: Vec<(u32, usize)> = Vec::new();
    let mut at: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    let mut commits = 0;
    for index in 0..shown {
        if walk.shown[index].time > until {
            continue;
        }
        commits += 1;
        let identity = walk.author(repo, index)?;
        let slot = *at.entry(identity).or_insert_with(|| {
            counts.push((identity, 0));
            counts.len() - 1
        });
        counts[slot].1 += 1;
    }
    // Per email through `.mailmap`: (commits, the name on its first commit in walk order), as [`churn`] counts.
    let mailmap = crate::guard::open_mailmap(repo);
    let mut authors: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for (identity, count) in counts {
        let (name, email) = walk.identity(identity);
        let signature = gix::actor::SignatureRef { name: name.as_ref(), email: email.as_ref(), time: "" };
        let person = crate::history::Person::mapped(&mailmap, signature);
        authors.entry(person.email).or_insert_with(|| (0, person.name)).0 += count;
    }
    Ok(window_churn((days, since, until), commits, authors))
}

/// The churn of the window `(days, since, until)`: `commits` in it, and per mapped email its
/// commits and the name on its newest one. Authors go most commits first, then by email.
fn window_churn(
    (days, since, until): (u32, i64, i64),
    commits: usize,
    authors: BTreeMap<String, (usize, String)>,
) -> Churn {
    let utc = |seconds| iso_time(gix::date::Time { seconds, offset: 0 });
    let mut authors: Vec<ChurnAuthor> =
        authors.into_iter().map(|(email, (commits, name))| ChurnAuthor { email, name, commits }).collect();
    authors.sort_by(|a, b| b.commits.cmp(&a.commits).then_with(|| a.email.cmp(&b.email)));
    let tally = Tally { commits, author_count: authors.len(), authors };
    Churn { days, since: utc(since), until: utc(until), tally }
}

/// The [`Tally`] of HEAD's whole history over `path`, walked afresh.
fn all_time(repo: &gix::Repository, tip: ObjectId, path: &str, interrupt: &Interrupt) -> Result<Tally> {
    let mut walk = Walk::new(repo, tip, Some(path))?.interruptible(interrupt);
    let mut counts: std::collections::HashMap<RawAuthor, usize> = std::collections::HashMap::new();
    while let Some(id) = walk.next_shown(repo)? {
        let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
        let author = commit.author().map_err(|err| Error::git("commit author", err))?;
        *counts.entry((author.name.to_vec(), author.email.to_vec())).or_default() += 1;
    }
    Ok(tally(repo, counts.into_iter().collect()))
}

/// [`all_time`] from a kept walk of HEAD over the path: the walk runs to the end of history once;
/// each distinct raw author is mapped through `.mailmap` once.
fn all_time_kept(repo: &gix::Repository, walk: &mut crate::walks::Kept, interrupt: &Interrupt) -> Result<Tally> {
    walk.fill(repo, interrupt, usize::MAX)?;
    let mut counts: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    for index in 0..walk.shown.len() {
        *counts.entry(walk.author(repo, index)?).or_default() += 1;
    }
    let raw = counts
        .into_iter()
        .map(|(identity, count)| {
            let (name, email) = walk.identity(identity);
            ((name.to_vec(), email.to_vec()), count)
        })
        .collect();
    Ok(tally(repo, raw))
}

/// An author's name and email as recorded.
type RawAuthor = (Vec<u8>, Vec<u8>);

/// Commits per raw (name, email) mapped through `.mailmap` and grouped as `git shortlog -sn`
/// groups: by mapped name, each with the mapped email most of its commits carry (the first in
/// byte order among equals), most commits first, then by name in byte order; the first
/// [`TOP_AUTHORS`] kept.
fn tally(repo: &gix::Repository, raw: Vec<(RawAuthor, usize)>) -> Tally {
    let mailmap = crate::guard::open_mailmap(repo);
    // Per mapped name: its commits, and its commits per mapped email.
    let mut names: BTreeMap<String, (usize, BTreeMap<String, usize>)> = BTreeMap::new();
    let mut commits = 0;
    for ((name, email), count) in raw {
        commits += count;
        let signature =
            gix::actor::SignatureRef { name: name.as_slice().into(), email: email.as_slice().into(), time: "" };
        let person = crate::history::Person::mapped(&mailmap, signature);
        let (total, emails) = names.entry(person.name).or_default();
        *total += count;
        *emails.entry(person.email).or_default() += count;
    }
    let author_count = names.len();
    let mut authors: Vec<ChurnAuthor> = names
        .into_iter()
        .map(|(name, (commits, emails))| {
            // `max_by_key` keeps the last of equals: over the reversed map, the first email in byte order.
            let email = emails.into_iter().rev().max_by_key(|(_, count)| *count).map(|(email, _)| email);
            ChurnAuthor { email: email.unwrap_or_default(), name, commits }
        })
        .collect();
    // The map is in byte order of names; a stable sort by count keeps it among equals.
    authors.sort_by_key(|author| std::cmp::Reverse(author.commits));
    authors.truncate(TOP_AUTHORS);
    Tally { commits, author_count, authors }
}

/// The changed paths of `changes` grouped by their owners under `rules`, most paths first (then by
/// owners).
fn changed_owners(rules: &codeowners::CodeOwners, changes: &Changes) -> Vec<ChangedGroup> {
    let paths = (changes.conflicted.iter().map(String::as_str))
        .chain(changes.staged.iter().map(|change| change.path.as_str()))
        .chain(changes.unstaged.iter().map(|change| change.path.as_str()))
        .chain(changes.untracked.iter().map(String::as_str));
    rules.group(paths).into_iter().map(|(owners, files)| ChangedGroup { owners, files }).collect()
}

/// The owners of `path` (a `kind`) under the CODEOWNERS file `loaded`; a directory's files are
/// those under it in `tree` (none without a tree).
fn owners(
    loaded: Option<&codeowners::Loaded>,
    tree: Option<&gix::Tree<'_>>,
    path: &str,
    kind: PathKind,
) -> Result<Owners> {
    let Some(loaded) = loaded else {
        return Ok(Owners {
            file: None,
            rule: None,
            owners: Vec::new(),
            tracked_files: None,
            owners_by_rule: Vec::new(),
            changed: Vec::new(),
            error_count: 0,
            errors: Vec::new(),
        });
    };
    let rules = &loaded.codeowners;
    let rule_ref = |rule: &codeowners::Rule| RuleRef { line: rule.line, pattern: rule.pattern.clone() };
    let (rule, tracked_files, owners_by_rule) = if kind == PathKind::Directory {
        let files = match tree {
            Some(tree) => files_under(tree, path)?,
            None => Vec::new(),
        };
        let mut groups: BTreeMap<Option<usize>, OwnerGroup> = BTreeMap::new();
        for file in &files {
            let rule = rules.for_file(file);
            groups
                .entry(rule.map(|rule| rule.line))
                .or_insert_with(|| OwnerGroup {
                    rule: rule.map(rule_ref),
                    owners: rule.map(|rule| rule.owners.clone()).unwrap_or_default(),
                    files: 0,
                })
                .files += 1;
        }
        let mut groups: Vec<OwnerGroup> = groups.into_values().collect();
        groups.sort_by_key(|group| std::cmp::Reverse(group.files));
        (rules.for_directory(path), Some(files.len()), groups)
    } else {
        (rules.for_file(path), None, Vec::new())
    };
    Ok(Owners {
        file: Some(loaded.file),
        rule: rule.map(rule_ref),
        owners: rule.map(|rule| rule.owners.clone()).unwrap_or_default(),
        tracked_files,
        owners_by_rule,
        changed: Vec::new(),
        error_count: rules.errors.len(),
        errors: rules.errors.clone(),
    })
}

/// Repository-relative paths of every non-directory entry under the directory `path` in `tree`.
fn files_under(tree: &gix::Tree<'_>, path: &str) -> Result<Vec<String>> {
    let subtree = if path.is_empty() {
        tree.clone()
    } else {
        match tree.lookup_entry_by_path(path).map_err(|err| Error::git("tree entry", err))? {
            Some(entry) if entry.mode().is_tree() => entry.object().map_err(|err| Error::git("tree", err))?.into_tree(),
            _ => return Ok(Vec::new()),
        }
    };
    let entries = subtree.traverse().breadthfirst.files().map_err(|err| Error::git("tree traversal", err))?;
    let prefix = if path.is_empty() { String::new() } else { format!("{path}/") };
    Ok(entries
        .into_iter()
        .filter(|entry| !entry.mode.is_tree())
        .map(|entry| format!("{prefix}{}", utf8(&entry.filepath)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised_and_checked() {
        assert_eq!(normalise(".").expect("valid"), "");
        assert_eq!(normalise("./packages//web/").expect("valid"), "packages/web");
        for bad in ["/etc", "../x", "a/../../b", ".git/config", "a\nb"] {
            assert!(normalise(bad).is_err(), "{bad}");
        }
        assert!(within("packages/web/a.ts", "packages/web"));
        assert!(!within("packages/webapp/a.ts", "packages/web"));
        assert!(within("anything", ""));
    }
}
