//! `repo.search` (ours, design.md#tools): commits whose message (subject and body) holds every
//! query word or "quoted phrase", optionally by author, under a path, in a time range, reachable
//! from a ref. The query may be left out when another filter narrows the search (by author or date
//! alone).
//!
//! Matching is git's:
//!
//! ```text
//! git log --all-match -i --fixed-strings --grep=<word>... [--author=<a>] [--since] [--until] \
//!     [<ref>] -- <path>
//! ```
//!
//! Each word or phrase is a case-insensitive substring of the message (a phrase does not span
//! lines: it holds no newline), `author` a substring of `"Name <email>"` as recorded or as
//! `.mailmap` maps it (`git log --author` matches the first, `git log --use-mailmap --author` the
//! second), `since`/`until` bound the committer date (inclusive), and `path` keeps the commits that
//! change the file or directory compared with every parent (the empty tree for a root commit). Two
//! deliberate differences with git: where a merge discards a side branch's change to the path
//! entirely, git's default simplification also hides that side branch's commits, which we show; and
//! `since` does not stop at an older commit in front of newer ones (git's walk does, on skewed
//! clocks).
//!
//! Without `ref`, the commit index answers (every commit reachable from the local branches and
//! HEAD, see [`crate::commit_index`]); with `ref`, or while the index is built or unavailable, the
//! history is walked and the answer says why (`walked`). `total` is always exact.
//!
//! Content search (`added`, `addedRegex`): the commits whose diff against their first parent
//! changes the number of occurrences of a string in a file (`git log -S<string>`) or adds or
//! removes a line matching a regex (`git log -G<regex>`), see [`crate::pickaxe`] for the exact
//! rules; merges are never listed, as `git log` shows no diff for them. The other filters still
//! apply (`path` bounds the diff as `git log -S<s> -- <path>` does). The history is always walked,
//! newest committer date first, within a time budget ([`CONTENT_TIME_BUDGET`]): when it runs out,
//! `stopped` says how many commits were examined and `total` counts the matches among them only.
//! Each match lists the files where the content changed.
//!
//! Order ([`Sort`]): `relevance` (the default with a query) ranks by relevance (BM25 in the index,
//! occurrences in a walk), `newest` (the default without one) by committer date alone, newest
//! first; ties go by committer date, then by the sha's first 8 bytes, then the sha, so the index
//! and a walk list the same commits in the same order for `newest` (and for `relevance` whenever
//! the scores tie).

use std::collections::HashSet;
use std::ops::Bound;

use gix::ObjectId;
use serde::Serialize;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::query::{
    BooleanQuery, ConstScoreQuery, EmptyQuery, Occur, PhraseQuery, Query, RangeQuery, RegexQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption, Value};
use tantivy::{DocAddress, DocId, Score, SegmentOrdinal, SegmentReader, TantivyDocument, Term};

use crate::ancestry::Shallow;
use crate::budget::{Budgeted, Measure, fit_sections};
use crate::commit_index::schema::{self, Fields, fold};
use crate::commit_index::{self as index, Status};
use crate::engine::{Engine, Repo};
use crate::error::{Error, InvalidReason, Result};
use crate::facets::commits::Abbrev;
use crate::facets::{iso_time, subject, utf8};
use crate::history::Person;
use crate::interrupt::Interrupt;

/// The most commits one answer lists (`limit`'s upper bound).
pub const MAX_LIMIT: usize = 200;

/// How long a content search (`added`, `addedRegex`) may read the history by default (20 s); the
/// commits not examined by then are said in [`Report::stopped`].
pub const CONTENT_TIME_BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

/// What to search for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Words and "quoted phrases", all required (case-insensitive substrings of the message); may
    /// be empty when `author`, `path`, `since` or `until` is given.
    pub query: String,
    /// A case-insensitive substring of the author's `"Name <email>"`, as recorded or as `.mailmap`
    /// maps it.
    pub author: Option<String>,
    /// A repo-relative file or directory the commits change.
    pub path: Option<String>,
    /// Oldest committer date: `YYYY-MM-DD` (midnight UTC) or an RFC 3339 time, inclusive.
    pub since: Option<String>,
    /// Newest committer date, same forms, inclusive.
    pub until: Option<String>,
    /// A revision whose history is searched; `None`: every local branch and HEAD.
    pub start: Option<String>,
    /// Most commits listed (1-200).
    pub limit: usize,
    /// The order; `None`: [`Sort::Newest`] without query words, [`Sort::Relevance`] with them.
    pub sort: Option<Sort>,
    /// Only commits changing the number of occurrences of this string in a file
    /// (`git log -S<string>`, case-sensitive); not with `added_regex`.
    pub added: Option<String>,
    /// Only commits adding or removing a line matching this regex (`git log -G<regex>`,
    /// case-sensitive, `regex` crate syntax); not with `added`.
    pub added_regex: Option<String>,
    /// How long a content search may read the history; `None`: [`CONTENT_TIME_BUDGET`].
    pub time_budget: Option<std::time::Duration>,
}

/// The order of the matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sort {
    /// Most relevant first, then newest.
    Relevance,
    /// Newest committer date first.
    Newest,
}

/// The matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// How many commits match, exactly (also beyond `limit` and the budget).
    pub total: usize,
    /// The first `limit` matches in the order asked for; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<Match>,
    /// Why the history was walked instead of asking the commit index; absent when the index
    /// answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub walked: Option<String>,
    /// A content search that ran out of time: how many commits it examined (newest first) of how
    /// many; `total` then counts the matches among those only. Absent when every commit was
    /// examined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// A content search that skipped files too large to read (over 16 MiB): how many; a commit
    /// changing only those may be missing. Absent when none was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// One matching commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Match {
    /// The sha abbreviated like `git log --oneline`.
    pub sha: String,
    /// The author as `.mailmap` maps it (as recorded without an entry), `"Name <email>"`, as
    /// `git log --format='%aN <%aE>'` shows it.
    pub author: Person,
    /// The author date, ISO 8601 with the author's offset (`git log --format=%aI`).
    pub time: String,
    /// The first line of the message.
    pub subject: String,
    /// For a content search, the files whose content matched (new path of a rename), in path
    /// order; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

/// The parsed and checked filters.
#[derive(Debug, Clone)]
struct Filters {
    /// Folded words and phrases.
    terms: Vec<String>,
    author: Option<String>,
    path: Option<String>,
    since: Option<i64>,
    until: Option<i64>,
    sort: Sort,
    /// The content search, when asked.
    content: Option<crate::pickaxe::Pickaxe>,
}

impl Engine {
    /// `repo.search`: the commits matching `options`, most relevant first, cut to `limit` and
    /// `max_tokens`; cut commits are counted in `omitted.commits`, and `total` counts every match.
    ///
    /// # Errors
    /// [`Error::Invalid`] with `invalid_query` (no query word and no other filter, an empty author,
    /// an unclosed quote, a date that does not parse, both `added` and `added_regex`, a regex that
    /// does not compile), `invalid_path`, `invalid_revision` /
    /// `unknown_revision` (the ref) or `budget_below_floor`; [`Error::GitRead`] when the history
    /// cannot be read.
    pub fn search(
        &self,
        repo: &Repo,
        options: &Options,
        max_tokens: usize,
        measure: &mut Measure<'_, Report>,
    ) -> Result<Budgeted<Report>> {
        let filters = filters(options)?;
        let limit = options.limit.clamp(1, MAX_LIMIT);
        if filters.content.is_some() {
            return fit(self.search_content(repo, options, &filters, limit)?, max_tokens, measure);
        }
        let ((total, ids), walked) = match &options.start {
            Some(start) => {
                let tip = crate::revision::resolve_commit(&repo.git, start)?;
                let reason = "an explicit ref".to_owned();
                let mailmap = crate::guard::open_mailmap(&repo.git);
                (walk(&repo.git, &[tip], &filters, &mailmap, limit, &repo.interrupt, None)?.found(), Some(reason))
            }
            None => {
                // What the index answers is kept until any event of the repository (a ref moving is one); an
                // answer that walked is never kept, so the index answers once it is built.
                let variant = format!("repo.search\0{filters:?}\0{limit}");
                let weight = |report: &Report| 256 + report.commits.len() * 256;
                let answer =
                    self.answer(repo, &variant, None, weight, || match self.search_all(repo, &filters, limit) {
                        Ok(report) if report.walked.is_none() => Ok(report),
                        other => Err(other),
                    });
                return fit(answer.or_else(|uncached| uncached)?, max_tokens, measure);
            }
        };
        let abbrev = Abbrev::new(&repo.git);
        let mailmap = crate::guard::open_mailmap(&repo.git);
        let commits =
            ids.into_iter().map(|id| describe(&repo.git, &abbrev, &mailmap, id)).collect::<Result<Vec<_>>>()?;
        fit(Report { total, commits, walked, stopped: None, skipped: None }, max_tokens, measure)
    }

    /// A content search: the history of `options.start` (else every local branch and HEAD) walked
    /// newest first within the time budget.
    fn search_content(&self, repo: &Repo, options: &Options, filters: &Filters, limit: usize) -> Result<Report> {
        let tips: Vec<ObjectId> = match &options.start {
            Some(start) => vec![crate::revision::resolve_commit(&repo.git, start)?],
            None => index::read_tips(&repo.git)?.into_values().collect::<HashSet<_>>().into_iter().collect(),
        };
        let mailmap = crate::guard::open_mailmap(&repo.git);
        let budget = options.time_budget.unwrap_or(CONTENT_TIME_BUDGET);
        let deadline = std::time::Instant::now() + budget;
        let walked = walk(&repo.git, &tips, filters, &mailmap, limit, &repo.interrupt, Some(deadline))?;
        let abbrev = Abbrev::new(&repo.git);
        let mut commits = Vec::with_capacity(walked.hits.len());
        for (id, files) in walked.hits {
            commits.push(Match { files, ..describe(&repo.git, &abbrev, &mailmap, id)? });
        }
        let stopped = (walked.examined < walked.commits).then(|| {
            format!(
                "the {} s time budget ran out after {} of {} commits, newest first; older commits were not examined",
                budget.as_secs_f64(),
                walked.examined,
                walked.commits
            )
        });
        let skipped = (walked.oversized > 0).then(|| {
            format!(
                "{} file versions over {} MiB were not read; a commit changing only those is not listed",
                walked.oversized,
                crate::pickaxe::MAX_BLOB_BYTES >> 20
            )
        });
        let why = "content search reads each commit's diff".to_owned();
        Ok(Report { total: walked.total, commits, walked: Some(why), stopped, skipped })
    }

    /// The matches among every commit of the local branches and HEAD: from the commit index when it
    /// is current, else by walking the history (the report says why).
    fn search_all(&self, repo: &Repo, filters: &Filters, limit: usize) -> Result<Report> {
        let status = match self.index() {
            Some(store) => store.status(&repo.git, &repo.location.common_dir),
            None => Status::Unavailable("no run dir is configured".to_owned()),
        };
        let mailmap = crate::guard::open_mailmap(&repo.git);
        let ((total, ids), walked) = match &status {
            Status::Ready(snapshot) => match from_index(snapshot, filters, &mailmap, limit) {
                Ok(found) => (found, None),
                Err(why) => {
                    snapshot.broken();
                    let status = Status::Unavailable(format!("a search failed: {why}; it is rebuilt"));
                    (walk_all(&repo.git, filters, &mailmap, limit, &repo.interrupt)?.found(), status.reason())
                }
            },
            _ => (walk_all(&repo.git, filters, &mailmap, limit, &repo.interrupt)?.found(), status.reason()),
        };
        let abbrev = Abbrev::new(&repo.git);
        let commits =
            ids.into_iter().map(|id| describe(&repo.git, &abbrev, &mailmap, id)).collect::<Result<Vec<_>>>()?;
        Ok(Report { total, commits, walked, stopped: None, skipped: None })
    }

    /// The state of `repo`'s commit index after waiting at most `timeout` for a background build
    /// (for tests and benchmarks); `None` without a run dir.
    pub fn index_settle(&self, repo: &Repo, timeout: std::time::Duration) -> Option<Status> {
        Some(self.index()?.settle(&repo.git, &repo.location.common_dir, timeout))
    }

    /// Waits (at most `timeout`) until every commit index build running in the background has
    /// finished and saved its index; returns how many were running (0 without a run dir). For a
    /// one-shot process, which would otherwise abandon a first build its call started.
    pub fn finish_index_builds(&self, timeout: std::time::Duration) -> usize {
        self.index().map_or(0, |store| store.finish_builds(timeout))
    }

    /// The number of commits and bytes on disk of `repo`'s commit index, once current; `None`
    /// without a run dir.
    pub fn index_stats(&self, repo: &Repo) -> Option<index::Stats> {
        self.index()?.stats(&repo.git, &repo.location.common_dir)
    }

    /// The directory of `repo`'s commit index; `None` without a run dir.
    pub fn index_dir(&self, repo: &Repo) -> Option<std::path::PathBuf> {
        Some(self.index()?.index_dir(&repo.location.common_dir))
    }
}

/// `full` cut to `max_tokens`: the commits beyond it are counted in `omitted.commits`.
fn fit(full: Report, max_tokens: usize, measure: &mut Measure<'_, Report>) -> Result<Budgeted<Report>> {
    let cut = |full: &Report, shown: &[usize]| Report {
        commits: crate::budget::first(&full.commits, shown[0]),
        ..full.clone()
    };
    fit_sections(&full, &["commits"], &[full.commits.len()], max_tokens, &cut, measure)
}

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid(InvalidReason::InvalidQuery, message)
}

fn filters(options: &Options) -> Result<Filters> {
    let terms = parse_query(&options.query)?;
    let author = match &options.author {
        Some(author) if author.trim().is_empty() => return Err(invalid("author is empty")),
        Some(author) => Some(fold(author)),
        None => None,
    };
    let path = match &options.path {
        Some(path) => {
            crate::repository::check_relative_path(path)?;
            let path = path.trim_end_matches('/');
            if path.split('/').count() > index::MAX_PATH_DEPTH {
                return Err(Error::invalid(
                    InvalidReason::InvalidPath,
                    format!(
                        "path is deeper than {} components: history is indexed to that depth",
                        index::MAX_PATH_DEPTH
                    ),
                ));
            }
            if path.is_empty() { None } else { Some(path.to_owned()) }
        }
        None => None,
    };
    let since = options.since.as_deref().map(|text| parse_time("since", text)).transpose()?;
    let until = options.until.as_deref().map(|text| parse_time("until", text)).transpose()?;
    let content = crate::pickaxe::Pickaxe::new(options.added.as_deref(), options.added_regex.as_deref())?;
    if terms.is_empty() && author.is_none() && path.is_none() && since.is_none() && until.is_none() && content.is_none()
    {
        return Err(invalid(
            "nothing to search for: give a query, added or addedRegex, or narrow by author, path, since or until",
        ));
    }
    let sort = options.sort.unwrap_or(if terms.is_empty() { Sort::Newest } else { Sort::Relevance });
    Ok(Filters { terms, author, path, since, until, sort, content })
}

/// Splits a query into folded words and "quoted phrases".
///
/// # Errors
/// `invalid_query` when it holds an empty phrase or an unclosed quote. A query of whitespace alone
/// holds no term (the caller decides whether other filters narrow the search).
fn parse_query(query: &str) -> Result<Vec<String>> {
    let mut terms = Vec::new();
    let mut rest = query;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        if let Some(quoted) = rest.strip_prefix('"') {
            let Some(end) = quoted.find('"') else {
                return Err(invalid(format!("query {query:?} has an unclosed quote")));
            };
            if quoted[..end].trim().is_empty() {
                return Err(invalid(format!("query {query:?} has an empty phrase")));
            }
            terms.push(fold(&quoted[..end]));
            rest = &quoted[end + 1..];
        } else {
            let end = rest.find(|c: char| c.is_whitespace() || c == '"').unwrap_or(rest.len());
            terms.push(fold(&rest[..end]));
            rest = &rest[end..];
        }
    }
    Ok(terms)
}

/// Seconds since the epoch of `YYYY-MM-DD` (midnight UTC) or an RFC 3339 time.
fn parse_time(name: &str, text: &str) -> Result<i64> {
    if let Ok(timestamp) = text.parse::<jiff::Timestamp>() {
        return Ok(timestamp.as_second());
    }
    if let Ok(date) = text.parse::<jiff::civil::Date>()
        && let Ok(zoned) = date.to_zoned(jiff::tz::TimeZone::UTC)
    {
        return Ok(zoned.timestamp().as_second());
    }
    Err(invalid(format!("{name} {text:?} is neither a date (YYYY-MM-DD) nor an RFC 3339 time")))
}

/// A query matching documents whose `field` holds `text` (folded) as a substring.
fn substring(field: Field, text: &str) -> Box<dyn Query> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() < 3 {
        // Every character starts a (padded) trigram: a short text is the prefix of one.
        let mut pattern = String::from("(?s)");
        for c in &chars {
            pattern.push_str(&format!("\\x{{{:X}}}", u32::from(*c)));
        }
        pattern.push_str(&".".repeat(3 - chars.len()));
        return match RegexQuery::from_pattern(&pattern, field) {
            Ok(query) => Box::new(query),
            // Cannot happen for an escaped pattern; match nothing rather than everything.
            Err(_) => Box::new(TermQuery::new(Term::from_field_text(field, "\u{0}"), IndexRecordOption::Basic)),
        };
    }
    let grams: Vec<(usize, Term)> = chars
        .windows(3)
        .enumerate()
        .map(|(offset, window)| (offset, Term::from_field_text(field, &window.iter().collect::<String>())))
        .collect();
    if grams.len() == 1 {
        let (_, term) = grams.into_iter().next().expect("one trigram");
        return Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs));
    }
    Box::new(PhraseQuery::new_with_offset(grams))
}

/// The most words of the index one query word may stand for before it is matched by its trigrams
/// instead.
const MAX_WORD_EXPANSION: usize = 256;

/// A query matching documents whose message holds `text` (folded) as a substring, scored by
/// relevance.
///
/// A word of word characters only (at most [`schema::WORD_MAX_BYTES`] bytes) is a substring of a
/// message exactly when it is a substring of one of the message's words (an occurrence cannot cross
/// a non-word character), so it matches the documents of every indexed word containing it (BM25 on
/// the `words` field, no positions read), plus the documents with an over-long word whose trigrams
/// hold it. Other texts (phrases, punctuation) and words found in too many different words go by
/// their trigrams ([`substring`]). The flag tells whether the query is a union of indexed words (no
/// positions read).
fn in_message(searcher: &tantivy::Searcher, fields: Fields, text: &str) -> tantivy::Result<(Box<dyn Query>, bool)> {
    let by_trigrams = |text| Ok((substring(fields.message, text), false));
    if text.is_empty() || text.len() > schema::WORD_MAX_BYTES || !text.chars().all(schema::is_word_char) {
        return by_trigrams(text);
    }
    let mut words: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for segment in searcher.segment_readers() {
        match words_containing(segment, fields.words, text)? {
            Some(found) => words.extend(found.iter().cloned()),
            None => return by_trigrams(text),
        }
        if words.len() > MAX_WORD_EXPANSION {
            return by_trigrams(text);
        }
    }
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = words
        .iter()
        .map(|word| {
            let term = Term::from_field_text(fields.words, word);
            (Occur::Should, Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)) as Box<dyn Query>)
        })
        .collect();
    let long = Term::from_field_text(fields.words, schema::LONG_WORD);
    let with_long = searcher.doc_freq(&long)? > 0;
    if with_long {
        let in_long: Vec<(Occur, Box<dyn Query>)> = vec![
            (Occur::Must, Box::new(TermQuery::new(long, IndexRecordOption::Basic))),
            (Occur::Must, substring(fields.message, text)),
        ];
        clauses.push((Occur::Should, Box::new(BooleanQuery::new(in_long))));
    }
    Ok(match clauses.len() {
        0 => (Box::new(EmptyQuery), true),
        // One word: its term query (scored as the union of one would be).
        1 if !with_long => {
            (clauses.pop().map_or_else(|| Box::new(EmptyQuery) as Box<dyn Query>, |(_, query)| query), true)
        }
        _ => (Box::new(BooleanQuery::new(clauses)), !with_long),
    })
}

/// Expansions remembered at most (the memory starts over when full).
const WORD_EXPANSIONS_KEPT: usize = 4096;

/// The words of `segment`'s `field` that contain `text`, or `None` when more than
/// [`MAX_WORD_EXPANSION`] do. Segments never change, so the answer is remembered by segment id and
/// text (reading a term dictionary of 100,000 words takes milliseconds).
fn words_containing(
    segment: &SegmentReader,
    field: Field,
    text: &str,
) -> tantivy::Result<Option<std::sync::Arc<Vec<String>>>> {
    type Expansions =
        std::collections::HashMap<(tantivy::index::SegmentId, String), Option<std::sync::Arc<Vec<String>>>>;
    static EXPANSIONS: std::sync::Mutex<Option<Expansions>> = std::sync::Mutex::new(None);
    let key = (segment.segment_id(), text.to_owned());
    let lock = || EXPANSIONS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(known) = lock().as_ref().and_then(|expansions| expansions.get(&key)) {
        return Ok(known.clone());
    }
    let finder = gix::bstr::Finder::new(text.as_bytes());
    let index = segment.inverted_index(field)?;
    let mut stream = index.terms().stream()?;
    let mut found = Vec::new();
    let mut too_many = false;
    while stream.advance() {
        if finder.find(stream.key()).is_some()
            && let Ok(word) = std::str::from_utf8(stream.key())
        {
            found.push(word.to_owned());
            if found.len() > MAX_WORD_EXPANSION {
                too_many = true;
                break;
            }
        }
    }
    let answer = (!too_many).then(|| std::sync::Arc::new(found));
    let mut expansions = lock();
    let expansions = expansions.get_or_insert_with(std::collections::HashMap::new);
    if expansions.len() >= WORD_EXPANSIONS_KEPT {
        expansions.clear();
    }
    expansions.insert(key, answer.clone());
    Ok(answer)
}

fn filter(query: Box<dyn Query>) -> (Occur, Box<dyn Query>) {
    (Occur::Must, Box::new(ConstScoreQuery::new(query, 0.0)))
}

/// The number of matches and the `limit` best (relevance, then newest) from the index; `Err` with
/// why when the index failed (it is then rebuilt).
fn from_index(
    snapshot: &index::Snapshot,
    filters: &Filters,
    mailmap: &gix::mailmap::Snapshot,
    limit: usize,
) -> std::result::Result<(usize, Vec<ObjectId>), String> {
    let run = || -> tantivy::Result<(usize, Vec<ObjectId>)> {
        let fields: Fields = snapshot.fields;
        let searcher = &snapshot.searcher;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        // Pruning pays when every part is a union of words; a phrase's position checks would run twice.
        let mut prune = true;
        for term in &filters.terms {
            let (query, words) = in_message(searcher, fields, term)?;
            prune &= words;
            clauses.push((Occur::Must, query));
        }
        if let Some(author) = &filters.author {
            clauses.push(filter(authors(searcher, fields, mailmap, author)?));
        }
        if let Some(path) = &filters.path {
            clauses.push(filter(Box::new(TermQuery::new(
                Term::from_field_text(fields.paths, path),
                IndexRecordOption::Basic,
            ))));
        }
        if filters.since.is_some() || filters.until.is_some() {
            let bound = |value: Option<i64>| match value {
                Some(seconds) => Bound::Included(Term::from_field_i64(fields.time, seconds)),
                None => Bound::Unbounded,
            };
            clauses.push(filter(Box::new(RangeQuery::new(bound(filters.since), bound(filters.until)))));
        }
        let query: Box<dyn Query> = match clauses.len() {
            // One clause: the query itself (a boolean of one `Must` scores as its clause, but hides its shape
            // from the pruning of word unions).
            1 => clauses.pop().map_or_else(|| Box::new(EmptyQuery) as Box<dyn Query>, |(_, query)| query),
            _ => Box::new(BooleanQuery::new(clauses)),
        };
        // Newest first: every match scores the same, so every one is offered (no pruning by score).
        let (query, prune): (Box<dyn Query>, bool) = match filters.sort {
            Sort::Relevance => (query, prune),
            Sort::Newest => (Box::new(ConstScoreQuery::new(query, 0.0)), false),
        };
        let (total, found) = searcher.search(query.as_ref(), &Best { limit, prune })?;
        let mut ids = Vec::with_capacity(found.len());
        for (_, _, _, address) in found {
            let document: TantivyDocument = searcher.doc(address)?;
            let sha = document.get_first(fields.sha).and_then(|value| value.as_str()).unwrap_or_default();
            let id = ObjectId::from_hex(sha.as_bytes())
                .map_err(|err| tantivy::TantivyError::InternalError(format!("stored sha {sha:?}: {err}")))?;
            ids.push(id);
        }
        Ok((total, ids))
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(Ok(found)) => Ok(found),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err("the index panicked".to_owned()),
    }
}

/// One match found in the index: relevance, committer time, the sha's key ([`schema::key`]), where.
type Found = (Score, i64, u64, DocAddress);

/// The answer's order: most relevant first, then newest committer date, then the sha's key, then
/// index order (a total order, so the best `limit` are the same whichever way they are chosen; a
/// walk orders the same way).
fn ranked(a: &Found, b: &Found) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)).then(a.3.cmp(&b.3))
}

/// A [`Found`] ordered by [`ranked`]: the greatest is the worst, so a max-heap of them pops the
/// worst kept.
struct Ranked(Found);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        ranked(&self.0, &other.0).is_eq()
    }
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        ranked(&self.0, &other.0)
    }
}

/// Counts every matching document and keeps the `limit` best ([`ranked`]) with their scores and
/// committer times: a heap of `limit` entries instead of every match (a common word matches most of
/// the history).
///
/// With `prune`, each segment is counted by the query's own count (for words, the union of their
/// postings, read without scoring) and the best are found with tantivy's pruning: once `limit`
/// documents are kept, only those scoring at least the worst kept one are scored further (block-max
/// WAND skips the blocks that cannot reach it; an equal score still enters, since a newer commit
/// wins a tie). Without `prune` (phrases: position checks are the cost, so one pass is cheaper than
/// two), every match is scored once, counted and offered to the heap.
struct Best {
    limit: usize,
    prune: bool,
}

/// The `limit` best of one segment and its number of matches.
struct BestInSegment {
    segment: SegmentOrdinal,
    time: tantivy::columnar::Column<i64>,
    key: tantivy::columnar::Column<u64>,
    limit: usize,
    kept: std::collections::BinaryHeap<Ranked>,
    count: usize,
}

impl BestInSegment {
    /// Offers one match; returns the lowest score a later match needs to be kept (any score while
    /// the heap is not full).
    fn offer(&mut self, doc: DocId, score: Score) -> Score {
        let found = (
            score,
            self.time.first(doc).unwrap_or_default(),
            self.key.first(doc).unwrap_or_default(),
            DocAddress::new(self.segment, doc),
        );
        if self.kept.len() < self.limit {
            self.kept.push(Ranked(found));
        } else if self.kept.peek().is_some_and(|worst| ranked(&found, &worst.0).is_lt()) {
            self.kept.pop();
            self.kept.push(Ranked(found));
        }
        match self.kept.peek() {
            Some(worst) if self.kept.len() >= self.limit => worst.0.0,
            _ => Score::MIN,
        }
    }
}

impl Collector for Best {
    type Fruit = (usize, Vec<Found>);
    type Child = BestInSegment;

    fn for_segment(&self, segment: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<BestInSegment> {
        Ok(BestInSegment {
            segment,
            time: reader.fast_fields().i64("time")?,
            key: reader.fast_fields().u64("key")?,
            limit: self.limit,
            kept: std::collections::BinaryHeap::with_capacity(self.limit + 1),
            count: 0,
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<(usize, Vec<Found>)>) -> tantivy::Result<(usize, Vec<Found>)> {
        let total = fruits.iter().map(|(count, _)| count).sum();
        let mut best: Vec<Found> = fruits.into_iter().flat_map(|(_, found)| found).collect();
        best.sort_by(ranked);
        best.truncate(self.limit);
        Ok((total, best))
    }

    fn collect_segment(
        &self,
        weight: &dyn tantivy::query::Weight,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<(usize, Vec<Found>)> {
        let mut collector = self.for_segment(segment, reader)?;
        let alive = reader.alive_bitset();
        if self.prune {
            collector.count = usize::try_from(weight.count(reader)?).unwrap_or(usize::MAX);
            let mut threshold = Score::MIN;
            weight.for_each_pruning(Score::MIN, reader, &mut |doc, score| {
                if alive.is_none_or(|alive| alive.is_alive(doc)) {
                    // Only a score above the threshold is offered: just below the worst kept score, so a tie
                    // still comes.
                    threshold = collector.offer(doc, score).next_down();
                }
                threshold
            })?;
        } else {
            weight.for_each(reader, &mut |doc, score| {
                if alive.is_none_or(|alive| alive.is_alive(doc)) {
                    collector.collect(doc, score);
                }
            })?;
        }
        Ok(collector.harvest())
    }
}

impl SegmentCollector for BestInSegment {
    type Fruit = (usize, Vec<Found>);

    fn collect(&mut self, doc: DocId, score: Score) {
        self.count += 1;
        self.offer(doc, score);
    }

    fn harvest(self) -> (usize, Vec<Found>) {
        (self.count, self.kept.into_iter().map(|Ranked(found)| found).collect())
    }
}

/// [`walk`] from every local branch and HEAD (what the index covers).
fn walk_all(
    repo: &gix::Repository,
    filters: &Filters,
    mailmap: &gix::mailmap::Snapshot,
    limit: usize,
    interrupt: &Interrupt,
) -> Result<Walked> {
    let tips: Vec<ObjectId> = index::read_tips(repo)?.into_values().collect::<HashSet<_>>().into_iter().collect();
    walk(repo, &tips, filters, mailmap, limit, interrupt, None)
}

/// What a [`walk`] found.
struct Walked {
    /// How many commits match, among those examined.
    total: usize,
    /// The `limit` best, each with the files a content search matched in (else none).
    hits: Vec<(ObjectId, Vec<String>)>,
    /// How many commits were examined, newest first.
    examined: usize,
    /// How many commits the history holds.
    commits: usize,
    /// How many blobs a content search did not read (too large).
    oversized: usize,
}

impl Walked {
    /// The total and the ids, for a search without content.
    fn found(self) -> (usize, Vec<ObjectId>) {
        (self.total, self.hits.into_iter().map(|(id, _)| id).collect())
    }
}

/// Whether the author `name <email>` matches the folded `author` filter: as recorded, or as
/// `mailmap` maps it.
fn author_matches(
    mailmap: &gix::mailmap::Snapshot,
    name: &gix::bstr::BStr,
    email: &gix::bstr::BStr,
    author: &str,
) -> bool {
    if fold(&format!("{} <{}>", utf8(name), utf8(email))).contains(author) {
        return true;
    }
    let mapped = Person::mapped(mailmap, gix::actor::SignatureRef { name, email, time: "" });
    fold(&format!("{} <{}>", mapped.name, mapped.email)).contains(author)
}

/// A query matching the commits whose author matches the folded `author` ([`author_matches`]): the
/// distinct recorded identities of the index (its `identity` terms) that match, mapped through
/// `mailmap`.
fn authors(
    searcher: &tantivy::Searcher,
    fields: Fields,
    mailmap: &gix::mailmap::Snapshot,
    author: &str,
) -> tantivy::Result<Box<dyn Query>> {
    let mut matching: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    for segment in searcher.segment_readers() {
        let index = segment.inverted_index(fields.identity)?;
        let mut stream = index.terms().stream()?;
        while stream.advance() {
            let key = stream.key();
            if !seen.insert(key.to_vec()) {
                continue;
            }
            let Ok(text) = std::str::from_utf8(key) else { continue };
            let (name, email) = text.split_once('\0').unwrap_or((text, ""));
            if author_matches(mailmap, name.into(), email.into(), author) {
                matching.insert(text.to_owned());
            }
        }
    }
    let clauses: Vec<(Occur, Box<dyn Query>)> = matching
        .iter()
        .map(|identity| {
            let term = Term::from_field_text(fields.identity, identity);
            (Occur::Should, Box::new(TermQuery::new(term, IndexRecordOption::Basic)) as Box<dyn Query>)
        })
        .collect();
    Ok(if clauses.is_empty() { Box::new(EmptyQuery) } else { Box::new(BooleanQuery::new(clauses)) })
}

/// The number of matches and the `limit` best among the commits reachable from `tips`, read from
/// git newest committer date first: relevance is the number of occurrences of the words and
/// phrases. Past `deadline` the walk stops and says how far it came. Stops with
/// [`Error::Cancelled`] once `interrupt` is triggered.
fn walk(
    repo: &gix::Repository,
    tips: &[ObjectId],
    filters: &Filters,
    mailmap: &gix::mailmap::Snapshot,
    limit: usize,
    interrupt: &Interrupt,
    deadline: Option<std::time::Instant>,
) -> Result<Walked> {
    let shallow = Shallow::read(repo)?;
    let ids: Vec<ObjectId> = if tips.is_empty() {
        Vec::new()
    } else if shallow.is_shallow() {
        let mut dated = Vec::new();
        for id in shallow.ancestors(repo, tips)? {
            let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
            dated.push((commit.time().map_err(|err| Error::git("commit date", err))?.seconds, id));
        }
        dated.sort_by(|a, b| b.cmp(a));
        dated.into_iter().map(|(_, id)| id).collect()
    } else {
        let mut ids = Vec::new();
        let walk = repo
            .rev_walk(tips.iter().copied())
            .sorting(gix::revision::walk::Sorting::ByCommitTime(Default::default()))
            .all()
            .map_err(|err| Error::git("commit graph", err))?;
        for info in walk {
            ids.push(info.map_err(|err| Error::git("commit graph", err))?.id);
        }
        ids
    };
    let commits = ids.len();
    let mut touched = index::Touched::interruptible(interrupt);
    let mut hits: Vec<(Score, i64, u64, ObjectId, Vec<String>)> = Vec::new();
    let (mut examined, mut oversized) = (0, 0);
    for id in ids {
        interrupt.check()?;
        if deadline.is_some_and(|deadline| std::time::Instant::now() >= deadline) {
            break;
        }
        examined += 1;
        let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
        let time = commit.time().map_err(|err| Error::git("commit date", err))?.seconds;
        if filters.since.is_some_and(|since| time < since) || filters.until.is_some_and(|until| time > until) {
            continue;
        }
        let message = fold(&utf8(commit.message_raw_sloppy()));
        if !filters.terms.iter().all(|term| message.contains(term.as_str())) {
            continue;
        }
        if let Some(author) = &filters.author {
            let signature = commit.author().map_err(|err| Error::git("commit author", err))?;
            if !author_matches(mailmap, signature.name, signature.email, author) {
                continue;
            }
        }
        let mut files = Vec::new();
        if let Some(content) = &filters.content {
            // `git log -S`/`-G` diff a commit against its first parent and never a merge.
            let parents = shallow.parents(&commit);
            if parents.len() > 1 {
                continue;
            }
            let tree = commit.tree_id().map_err(|err| Error::git("commit tree", err))?.detach();
            let parent = match parents.first() {
                Some(parent) => Some(
                    repo.find_commit(*parent)
                        .map_err(|err| Error::git("commit", err))?
                        .tree_id()
                        .map_err(|err| Error::git("commit tree", err))?
                        .detach(),
                ),
                None => None,
            };
            let hit = content.matches(repo, parent, tree, filters.path.as_deref(), interrupt)?;
            oversized += hit.oversized;
            if hit.files.is_empty() {
                continue;
            }
            files = hit.files;
        } else if let Some(path) = &filters.path {
            let tree = commit.tree_id().map_err(|err| Error::git("commit tree", err))?.detach();
            if !touched.prefixes(repo, tree, &shallow.parents(&commit))?.contains(path) {
                continue;
            }
        }
        let score = match filters.sort {
            Sort::Relevance => filters.terms.iter().map(|term| message.matches(term.as_str()).count()).sum::<usize>(),
            Sort::Newest => 0,
        };
        hits.push((score as Score, time, schema::key(&id), id, files));
    }
    // The order of [`ranked`], the sha in place of the index order.
    hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)).then(a.3.cmp(&b.3)));
    let total = hits.len();
    let hits = hits.into_iter().take(limit).map(|(_, _, _, id, files)| (id, files)).collect();
    Ok(Walked { total, hits, examined, commits, oversized })
}

fn describe(repo: &gix::Repository, abbrev: &Abbrev, mailmap: &gix::mailmap::Snapshot, id: ObjectId) -> Result<Match> {
    let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
    let author = commit.author().map_err(|err| Error::git("commit author", err))?;
    let time = author.time().map_err(|err| Error::git("commit author date", err))?;
    Ok(Match {
        sha: abbrev.id(id),
        author: Person::mapped(mailmap, author),
        time: iso_time(time),
        subject: subject(commit.message_raw_sloppy()),
        files: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_split_into_words_and_phrases() {
        assert_eq!(parse_query(" Retry  \"Back Off\" x").expect("parses"), vec!["retry", "back off", "x"]);
        assert!(parse_query("   ").expect("no terms").is_empty());
        assert!(parse_query("a \"open").is_err());
        assert!(parse_query("\" \"").is_err());
    }

    #[test]
    fn times_are_dates_or_rfc3339() {
        assert_eq!(parse_time("since", "1970-01-02").expect("date"), 86_400);
        assert_eq!(parse_time("since", "1970-01-01T01:00:00+01:00").expect("time"), 0);
        assert!(parse_time("since", "yesterday").is_err());
    }
}
