//! `repo.history`: a page of commits like `git log [<ref>] [-- <path>]`, with a cursor that pins
//! the walk. The ref may be a range as git reads it: `A..B` (commits reachable from B and not from
//! A) or `A...B` (reachable from either and not from both:
//! `A B --not $(git merge-base --all A B)`), an empty side meaning `HEAD`.
//!
//! The walk is git's default one (see `git help log`, "Commit Ordering" and "History
//! Simplification"): newest committer date first, ties in the order commits were queued; with a
//! `path`, a commit is shown only when the path differs from every parent, and a merge whose path
//! equals one parent's follows only the first such parent. The `path` is a literal repo-relative
//! file or directory, not a pathspec with wildcards.

use gix::ObjectId;
use gix::bstr::ByteSlice;
use serde::Serialize;

use crate::ancestry::Shallow;
use crate::budget::{Budgeted, Measure, fit_sections};
use crate::engine::{Engine, Repo};
use crate::error::{Error, InvalidReason, Result};
use crate::facets::commits::Abbrev;
use crate::facets::{iso_time, subject};
use crate::hex_digest::hex_digest;
use crate::walks::Walk;

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Where the walk starts (`HEAD` when `None`); ignored for the start when `cursor` is given,
    /// but must match it.
    pub start: Option<String>,
    /// Only commits that change this repo-relative file or directory.
    pub path: Option<String>,
    /// Commits per page (1-200).
    pub limit: usize,
    /// The `nextCursor` of an earlier page.
    pub cursor: Option<String>,
    /// Only commits that changed this function, type or method of the file `path` (its qualified
    /// name, `Flags::new`, or its own name when no other symbol has it as either), as
    /// `git log -L :<name>:<path>` lists them (see [`crate::symbol_log`]); requires `path`, refuses
    /// a range `ref`.
    pub symbol: Option<String>,
}

/// One page of history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    /// The `ref` argument as given (`HEAD` by default).
    #[serde(rename = "ref")]
    pub start: String,
    /// The commit the walk started from, pinned by the cursor across pages; `null` on an unborn
    /// `HEAD`.
    pub tip: Option<String>,
    /// The `path` filter, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// With `symbol`: the symbol as the parser found it at the tip, and the lines followed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<crate::symbol_log::Found>,
    /// The commits of this page, newest first; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<Commit>,
    /// The repository is a shallow clone: history ends at the commits marked `shallow`, whose
    /// parents git treats as absent; absent when `false`.
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
    /// The sha abbreviated like `git log --oneline` (shortest unique, at least 7 digits; the page's
    /// `tip` is full).
    pub sha: String,
    /// Parent shas abbreviated the same way, first parent first; default empty (a root commit, or a
    /// shallow boundary commit, as `git log --format=%p` shows them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<String>,
    /// A shallow clone's boundary commit: its history was cut here, its parents are absent; absent
    /// when `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shallow: bool,
    /// The author as `.mailmap` maps it (as `git log` shows it, `%aN <%aE>`), serialised
    /// `"Name <email>"`.
    pub author: Person,
    /// The author date, ISO 8601 with the author's offset (as `git log --format=%aI`).
    pub time: String,
    /// The first line of the message.
    pub subject: String,
    /// With `symbol`: the file's path in this commit when it differs from the page's `path` (the
    /// file was renamed since); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// With `symbol`: the diff hunks of this commit that touched the symbol's lines, numbered as
    /// git's hunk headers (`-12,2 +12,3`: the parent's lines 12-13 became lines 12-14; a count of 0
    /// names the line before), against the first parent that changed them; absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hunks: Vec<String>,
}

/// A name and email exactly as git recorded them (configured identity, not proof of a person);
/// serialises as one string, `"Name <email>"`, as git prints an identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// The name.
    pub name: String,
    /// The email.
    pub email: String,
}

impl Person {
    /// `signature` as the repository's mailmap maps it (the work tree's `.mailmap`, `mailmap.file`,
    /// `mailmap.blob`; as `git log`'s `%aN <%aE>` and `git shortlog` do); as recorded when no entry
    /// matches.
    pub(crate) fn mapped(mailmap: &gix::mailmap::Snapshot, signature: gix::actor::SignatureRef<'_>) -> Person {
        match mailmap.try_resolve_ref(signature) {
            Some(resolved) => Person {
                name: crate::facets::name(resolved.name.unwrap_or(signature.name)),
                email: crate::facets::name(resolved.email.unwrap_or(signature.email)),
            },
            None => Person { name: crate::facets::name(signature.name), email: crate::facets::name(signature.email) },
        }
    }
}

impl Serialize for Person {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{} <{}>", self.name, self.email))
    }
}

/// Where a page resumes: the pinned tips (and the commits a range hides) and how many commits
/// earlier pages showed.
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

/// Objects a `repo.history` call keeps in memory once read (a commit is about 250 bytes; a path
/// walk also reads trees).
const OBJECT_CACHE_BYTES: usize = 4 * 1024 * 1024;

impl Cursor {
    /// `h1.<tips>.<skip>.<repository>.<query>.<check>`: all fields hex or decimal, so it is cheap
    /// in tokens; `<tips>` is the tip, then `+<other tip>` and `-<hidden>` for ranges.
    fn encode(&self) -> String {
        let mut tips = self.tip.to_string();
        for id in &self.also {
            tips.push_str(&format!("+{id}"));
        }
        for id in &self.hidden {
            tips.push_str(&format!("-{id}"));
        }
        let body = format!("{CURSOR_VERSION}.{tips}.{}.{}.{}", self.skip, self.repository, self.query);
        format!("{body}.{}", hex_digest(&["cursor", &body], 12))
    }

    fn decode(text: &str, repository: &str, query: &str) -> Result<Cursor> {
        let invalid = |why: &str| Error::invalid(InvalidReason::InvalidCursor, format!("cursor {text:?} {why}"));
        let (body, check) = text.rsplit_once('.').ok_or_else(|| invalid("is not a repo.history cursor"))?;
        let fields: Vec<&str> = body.split('.').collect();
        let [version, tip, skip, cursor_repository, cursor_query] = fields[..] else {
            return Err(invalid("is not a repo.history cursor"));
        };
        if version != CURSOR_VERSION || check != hex_digest(&["cursor", body], 12) {
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

impl Engine {
    /// `repo.history`: one page of commits, cut to `max_tokens`; commits cut by the budget are not
    /// lost: they are counted in `omitted.commits` and `nextCursor` resumes right after the last
    /// commit shown.
    ///
    /// Pages never skip or repeat a commit, also when the ref moves between pages: the cursor pins
    /// the tip sha.
    ///
    /// # Errors
    /// [`Error::Invalid`] with `invalid_revision` / `unknown_revision` (the ref), `invalid_path`,
    /// `invalid_cursor` (altered, or from another repository, ref or path) or `budget_below_floor`;
    /// [`Error::GitRead`] when a commit or tree cannot be read.
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
        let repository = hex_digest(&[&repo.location.common_dir.display().to_string()], 12);
        let query = match &options.symbol {
            None => hex_digest(&[&start, options.path.as_deref().unwrap_or("")], 8),
            Some(symbol) => hex_digest(&[&start, options.path.as_deref().unwrap_or(""), "symbol", symbol], 8),
        };
        if options.symbol.is_some() && options.path.is_none() {
            return Err(Error::invalid(InvalidReason::InvalidQuery, "symbol requires path: the file that declares it"));
        }
        let cursor = match &options.cursor {
            Some(text) => Cursor::decode(text, &repository, &query)?,
            None => match start_commits(git, &start)? {
                Some((tip, also, hidden)) => Cursor { tip, also, hidden, skip: 0, repository, query },
                None => {
                    let empty = Page {
                        start,
                        tip: None,
                        path: options.path.clone(),
                        symbol: None,
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
        if let (Some(symbol), Some(path)) = (&options.symbol, &options.path) {
            if !cursor.also.is_empty() || !cursor.hidden.is_empty() {
                return Err(Error::invalid(
                    InvalidReason::InvalidQuery,
                    "symbol follows one commit's history: give a ref, not a range",
                ));
            }
            let want = cursor.skip.saturating_add(options.limit);
            let walked = crate::symbol_log::walk(git, cursor.tip, path, symbol, want, &repo.interrupt)?;
            let shallow = Shallow::read(git)?;
            let (mailmap, abbrev) = (crate::guard::open_mailmap(git), Abbrev::new(git));
            let commits = walked
                .shown
                .iter()
                .skip(cursor.skip)
                .map(|shown| {
                    let mut commit = describe(git, &abbrev, &shallow, &mailmap, shown.id)?;
                    let at = shown.path.to_str_lossy();
                    commit.path = (at != path.as_str()).then(|| at.into_owned());
                    commit.hunks.clone_from(&shown.hunks);
                    Ok(commit)
                })
                .collect::<Result<Vec<_>>>()?;
            let page = Page {
                start,
                tip: Some(cursor.tip.to_string()),
                path: options.path.clone(),
                symbol: Some(walked.found),
                commits,
                shallow: shallow.is_shallow(),
                next_cursor: None,
            };
            return fit_page(page, Some((cursor, walked.more)), max_tokens, measure);
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
            symbol: None,
            commits,
            shallow,
            next_cursor: None,
        };
        fit_page(page, Some((cursor, more)), max_tokens, measure)
    }
}

/// A walk's tip, a range's other tip (`A...B`) and the commits a range hides.
type Tips = (ObjectId, Vec<ObjectId>, Vec<ObjectId>);

/// The tip `start` names, a range's other tip and its hidden commits; `None` for an unborn `HEAD`
/// (an empty history, not an error).
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

/// Cuts the page's commits to the budget; the next cursor always resumes after the last commit
/// shown.
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
            symbol: full.symbol.clone(),
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
        path: None,
        hunks: Vec::new(),
    })
}
