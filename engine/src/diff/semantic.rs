//! `diff.semantic`: which functions, types and constants a selection changes, from tree-sitter
//! syntax trees.
//!
//! The selection is `diff.text`'s (`base`, `head`, `staged`, `path`, with the same revision parsing
//! and refusals), and so are the changed files and their line diff (git's rename detection, the
//! configured diff algorithm). Each changed file in a supported language has both sides parsed into
//! symbols ([`crate::semantic`]); the changed lines of the line diff are then given to the
//! innermost symbol that holds them on their side, or counted as the file's `topLevel` lines when
//! none does.
//!
//! # Matching
//!
//! Symbols are matched across the two sides of a file by kind and qualified name (the n-th
//! `impl Foo` with the n-th). What is left is matched by body similarity
//! ([`crate::semantic::similarity`], at least [`RENAME_SIMILARITY`]): within one file a pair of the
//! same kind is a rename, across two files of the diff a pair of the same kind and own name is a
//! move. The rest was added or removed; a member added (or removed) with its container is counted
//! in the container's lines and not listed apart. A symbol is listed only when a changed line lies
//! in it, so every listed `modified` symbol has one, and every changed line is either inside a
//! listed symbol's range on its side or counted as top level.
//!
//! # Fallbacks
//!
//! A file is left to the text diff, with its line counts and a reason, when it is binary, a
//! submodule, in a language without a grammar in this build, over
//! [`crate::semantic::MAX_FILE_BYTES`] on a side, parsed with too many error nodes (the ratio is
//! given), parsed after the call's time budget ran out, or unmerged.
//!
//! # Cost
//!
//! Parses are kept in the engine by blob id and language (a blob never changes), so a second call
//! parses nothing, and the whole report is kept in the engine's answer cache until the repository's
//! next file-system event. The parses of one call run on up to two threads, and a file's new side
//! is parsed as an edit of its old side's tree (tree-sitter's incremental parsing). A large file
//! with a small change has only the parts its diff touches parsed, kept by the ids of both sides
//! (`semantic/parts.rs`). The budget keeps the files with the largest changes and counts the others
//! in `omitted.files`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gix::ObjectId;
use gix::diff::blob::Hunk;
use gix::index::entry::Mode;
use serde::Serialize;

use super::Status;
use super::parses::{Cache, FileSides, Key, Parses, parse_all};
use super::patch::{Output, Renderer};
use super::text::{Sides, WORKTREE, select_and_diff};
use crate::budget::{Budgeted, Measure};
use crate::compare::changes::Change;
use crate::engine::{Engine, Repo};
use crate::error::{Error, Result};
use crate::interrupt::Interrupt;
use crate::semantic::{self, Kind, Language, Parsed, Symbol};
pub use crate::semantic::{MAX_ERROR_RATIO, MAX_FILE_BYTES};
use languages::Languages;

/// Least body similarity for a rename or a move (0.5: half the tokens shared).
pub const RENAME_SIMILARITY: f64 = 0.5;

/// Default time a call may spend parsing: 3 s; files parsed after that fall back with
/// `time_budget`.
pub const DEFAULT_TIME_BUDGET: Duration = Duration::from_secs(3);

/// What to compare, as `diff.text` takes it.
#[derive(Debug, Clone)]
pub struct Options {
    /// Old side: a revision or `INDEX` (default as `diff.text`).
    pub base: Option<String>,
    /// New side: a revision, `INDEX` or `WORKTREE`.
    pub head: Option<String>,
    /// Compare with the index like `git diff --cached`.
    pub staged: bool,
    /// Only this repository-relative file or directory (literal, no `..`).
    pub path: Option<String>,
    /// Time the call may spend parsing.
    pub time_budget: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self { base: None, head: None, staged: false, path: None, time_budget: DEFAULT_TIME_BUDGET }
    }
}

/// The semantic diff of a selection.
///
/// Its JSON is compact (design.md#envelope) and leaves out what the rest already says: see
/// [`FileChange`] and [`SymbolChange`] for their defaults. Changed files in a language without a
/// grammar that were only modified (no rename, no mode change) are listed apart as `noGrammar`
/// strings, `path +added -removed`, since their path and counts are all there is to say; every
/// other file is an object of `files`.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The old side: an abbreviated sha (as `git rev-parse --short`) or `INDEX`; `None` for an
    /// unborn `HEAD`.
    pub base: Option<String>,
    /// The new side: an abbreviated sha, `INDEX` or `WORKTREE` (left out of the JSON for
    /// `WORKTREE`).
    pub head: String,
    /// The caller named the old side by its sha (or a prefix of it): the JSON leaves `base` out,
    /// as it would only repeat the caller's own argument.
    pub base_given: bool,
    /// The caller named the new side by its sha: the JSON leaves `head` out.
    pub head_given: bool,
    /// The path filter, when given.
    pub path: Option<String>,
    /// Changed files, counted whether shown or not; in the JSON only when the budget cut `files`.
    pub changed_files: usize,
    /// Files that fell back to the text diff, counted whether shown or not; in the JSON only when
    /// the budget cut `files` (and not 0).
    pub fallback_files: usize,
    /// The budget cut `files` (`omitted.files`), so the counts above are stated.
    pub cut: bool,
    /// The changed files in path order (the budget keeps those with the largest changes:
    /// `omitted.files`).
    pub files: Vec<FileChange>,
}

impl Serialize for Report {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let (no_grammar, files): (Vec<&FileChange>, Vec<&FileChange>) =
            self.files.iter().partition(|file| file.is_no_grammar());
        let wire = WireReport {
            base: self.base.as_deref().filter(|_| !self.base_given),
            head: (!is_worktree(&self.head) && !self.head_given).then_some(self.head.as_str()),
            path: self.path.as_deref(),
            changed_files: self.cut.then_some(self.changed_files),
            fallback_files: (self.cut && self.fallback_files > 0).then_some(self.fallback_files),
            files: files.into_iter().map(WireFile::from).collect(),
            no_grammar: no_grammar
                .into_iter()
                .map(|file| format!("{} +{} -{}", file.path, file.additions, file.deletions))
                .collect(),
        };
        wire.serialize(serializer)
    }
}

/// [`Report`] as its JSON has it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireReport<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    base: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    head: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    changed_files: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fallback_files: Option<usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    files: Vec<WireFile<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    no_grammar: Vec<String>,
}

fn is_worktree(head: &str) -> bool {
    head == WORKTREE
}

/// One changed file.
///
/// In the JSON, `status` is left out when `modified`, `language` when the extension gives it, and
/// `additions` and `deletions` when they are the sums over `symbols` and `topLevel`; `fallback` is
/// the reason alone, with `errorRatio` beside it for `parse_errors`.
#[derive(Debug, Clone, PartialEq)]
pub struct FileChange {
    /// Repository-relative path (the new one for a renamed file).
    pub path: String,
    /// For a renamed or copied file: the old path.
    pub from: Option<String>,
    /// How the file changed, in git's terms.
    pub status: Status,
    /// The language it was parsed as, when known.
    pub language: Option<Language>,
    /// Lines added in the file (as `git diff --numstat`).
    pub additions: u64,
    /// Lines removed in the file.
    pub deletions: u64,
    /// Why the file was left to the text diff (then it has no symbols).
    pub fallback: Option<Fallback>,
    /// Changed lines outside every symbol (imports, attributes, file-level statements); absent when
    /// none.
    pub top_level: Option<Lines>,
    /// The changed symbols in the order of the new side (removed ones where they stood).
    pub symbols: Vec<SymbolChange>,
}

impl FileChange {
    /// A modified file in a language without a grammar: the JSON lists it as a `noGrammar` string.
    fn is_no_grammar(&self) -> bool {
        self.status == Status::Modified
            && self.from.is_none()
            && self.fallback.as_ref().is_some_and(|fallback| fallback.reason == FallbackReason::UnsupportedLanguage)
    }

    /// The file's counts are the sums over its symbols and its top level, so the JSON leaves them
    /// out.
    fn counts_implied(&self) -> bool {
        let top = self.top_level.unwrap_or_default();
        let added: u64 = self.symbols.iter().map(|symbol| symbol.added).sum::<u64>() + top.added;
        let removed: u64 = self.symbols.iter().map(|symbol| symbol.removed).sum::<u64>() + top.removed;
        self.fallback.is_none() && (added, removed) == (self.additions, self.deletions)
    }
}

impl Serialize for FileChange {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        WireFile::from(self).serialize(serializer)
    }
}

/// [`FileChange`] as its JSON has it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireFile<'a> {
    path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    language: Option<Language>,
    #[serde(skip_serializing_if = "crate::compact::is_zero_u64")]
    additions: u64,
    #[serde(skip_serializing_if = "crate::compact::is_zero_u64")]
    deletions: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    fallback: Option<FallbackReason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_level: Option<Lines>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    symbols: &'a [SymbolChange],
}

impl<'a> From<&'a FileChange> for WireFile<'a> {
    fn from(file: &'a FileChange) -> Self {
        let implied = file.counts_implied();
        let by_extension = Language::detect(&file.path, None);
        WireFile {
            path: &file.path,
            from: file.from.as_deref(),
            status: (file.status != Status::Modified).then_some(file.status),
            language: file.language.filter(|language| by_extension != Some(*language)),
            additions: if implied { 0 } else { file.additions },
            deletions: if implied { 0 } else { file.deletions },
            fallback: file.fallback.as_ref().map(|fallback| fallback.reason),
            error_ratio: file.fallback.as_ref().and_then(|fallback| fallback.error_ratio),
            top_level: file.top_level,
            symbols: &file.symbols,
        }
    }
}

/// Added and removed line counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Lines {
    /// Added lines; default 0.
    #[serde(skip_serializing_if = "crate::compact::is_zero_u64")]
    pub added: u64,
    /// Removed lines; default 0.
    #[serde(skip_serializing_if = "crate::compact::is_zero_u64")]
    pub removed: u64,
}

impl Lines {
    fn is_empty(self) -> bool {
        self.added == 0 && self.removed == 0
    }
}

/// Why a file was left to the text diff.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fallback {
    /// The reason.
    pub reason: FallbackReason,
    /// For `parse_errors`: the share of error and missing nodes in the worse side's tree, from 0
    /// to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_ratio: Option<f64>,
}

/// The reasons a file falls back to the text diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FallbackReason {
    /// No grammar for its language in this build, or no language known for its name.
    UnsupportedLanguage,
    /// Too many error nodes in a side's syntax tree.
    ParseErrors,
    /// A side is larger than the parse cap.
    TooLarge,
    /// Git considers it binary.
    Binary,
    /// The call's parse time ran out before it.
    TimeBudget,
    /// A side nests containers (modules, namespaces, classes, `#if` blocks) over 128 levels deep.
    TooDeep,
    /// A submodule (its commit moved).
    Submodule,
    /// Unmerged in the index (a stopped merge): `diff.text` shows its combined diff.
    Unmerged,
    /// Its content could not be read (an object missing from the store); `diff.text` names the
    /// error.
    Unreadable,
}

impl FallbackReason {
    /// The reason as the JSON spells it (`unsupported_language`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FallbackReason::UnsupportedLanguage => "unsupported_language",
            FallbackReason::ParseErrors => "parse_errors",
            FallbackReason::TooLarge => "too_large",
            FallbackReason::Binary => "binary",
            FallbackReason::TimeBudget => "time_budget",
            FallbackReason::TooDeep => "too_deep",
            FallbackReason::Submodule => "submodule",
            FallbackReason::Unmerged => "unmerged",
            FallbackReason::Unreadable => "unreadable",
        }
    }
}

/// One changed symbol.
///
/// In the JSON, `change` is left out when `modified`, `kind` when `fn`, and `oldLines` when it
/// equals `newLines`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolChange {
    /// What happened to it.
    pub change: SymbolStatus,
    /// What it declares.
    pub kind: Kind,
    /// Its qualified name on the new side (the old side for a removed one).
    pub name: String,
    /// For a renamed symbol, and a moved one whose name changed: its old qualified name.
    pub from: Option<String>,
    /// For a moved symbol: the file it came from.
    pub from_path: Option<String>,
    /// Lines added inside it (its members' included when they are not listed).
    pub added: u64,
    /// Lines removed inside it.
    pub removed: u64,
    /// Its first and last line on the old side (in `fromPath` for a move), 1-based; `None` when
    /// added.
    pub old_lines: Option<[u32; 2]>,
    /// Its first and last line on the new side, 1-based; `None` when removed.
    pub new_lines: Option<[u32; 2]>,
    /// Its declaration up to the body changed (name aside for a rename).
    pub signature_changed: bool,
}

impl Serialize for SymbolChange {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        WireSymbol {
            change: (self.change != SymbolStatus::Modified).then_some(self.change),
            kind: (self.kind != Kind::Fn).then_some(self.kind),
            name: &self.name,
            from: self.from.as_deref(),
            from_path: self.from_path.as_deref(),
            added: self.added,
            removed: self.removed,
            old_lines: self.old_lines.filter(|_| self.old_lines != self.new_lines),
            new_lines: self.new_lines,
            signature_changed: self.signature_changed,
        }
        .serialize(serializer)
    }
}

/// [`SymbolChange`] as its JSON has it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireSymbol<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    change: Option<SymbolStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<Kind>,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    from_path: Option<&'a str>,
    #[serde(skip_serializing_if = "crate::compact::is_zero_u64")]
    added: u64,
    #[serde(skip_serializing_if = "crate::compact::is_zero_u64")]
    removed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    old_lines: Option<[u32; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    new_lines: Option<[u32; 2]>,
    #[serde(skip_serializing_if = "crate::compact::is_false")]
    signature_changed: bool,
}

/// What happened to a symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SymbolStatus {
    /// Only on the new side.
    Added,
    /// Only on the old side.
    Removed,
    /// On both sides, with changed lines.
    Modified,
    /// On both sides of one file under another name (`from`).
    Renamed,
    /// From another file of the diff (`fromPath`).
    Moved,
}

impl SymbolStatus {
    /// The letter of the text rendering: `A`, `D`, `M`, `R`, `V`.
    pub fn letter(self) -> char {
        match self {
            SymbolStatus::Added => 'A',
            SymbolStatus::Removed => 'D',
            SymbolStatus::Modified => 'M',
            SymbolStatus::Renamed => 'R',
            SymbolStatus::Moved => 'V',
        }
    }
}

/// The files of `diff.semantic` that fell back to the text diff (`diff.semanticFallbacks`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FallbackReport {
    /// As [`Report::base`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// As [`Report::head`].
    #[serde(skip_serializing_if = "is_worktree")]
    pub head: String,
    /// The path filter, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Changed files.
    pub changed_files: usize,
    /// The files that fell back, in path order (cut by the budget: `omitted.fallbacks`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<FallbackFile>,
}

/// A file that fell back.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FallbackFile {
    /// Repository-relative path.
    pub path: String,
    /// Why, and the error ratio for `parse_errors`.
    #[serde(flatten)]
    pub fallback: Fallback,
    /// Lines added in it; default 0.
    #[serde(skip_serializing_if = "crate::compact::is_zero_u64")]
    pub additions: u64,
    /// Lines removed in it; default 0.
    #[serde(skip_serializing_if = "crate::compact::is_zero_u64")]
    pub deletions: u64,
}

/// Semantic diff tools.
impl Engine {
    /// `diff.semantic`: the changed symbols of a selection, files cut to `max_tokens` (largest
    /// changes kept).
    ///
    /// # Errors
    /// As [`Engine::diff_text`]: [`crate::Error::Invalid`] for a bad selection or a budget under
    /// the floor, [`crate::Error::GitRead`] on a failed read, [`crate::Error::Cancelled`] when
    /// interrupted.
    pub fn diff_semantic(
        &self,
        repo: &Repo,
        options: &Options,
        max_tokens: usize,
        measure: &mut Measure<'_, Report>,
    ) -> Result<Budgeted<Report>> {
        let full = self.semantic_report(repo, options)?;
        fit(&full, max_tokens, measure)
    }

    /// The whole report of a selection, kept in the engine's answer cache until the next
    /// file-system event in the repository (any event, as the selection may name refs, the index or
    /// the work tree). A report with a file cut short by the time budget is not kept: the next call
    /// may have the time.
    fn semantic_report(&self, repo: &Repo, options: &Options) -> Result<Arc<Report>> {
        /// A report computed but not to be kept, carried past the cache as its error.
        enum NotKept {
            Report(Report),
            Error(Error),
        }
        let variant = format!(
            "diff.semantic\0{:?}\0{:?}\0{}\0{:?}\0{}",
            options.base,
            options.head,
            options.staged,
            options.path,
            options.time_budget.as_millis()
        );
        let weight = |report: &Arc<Report>| weight(report);
        let kept = self.answer(repo, &variant, None, weight, || {
            let report = read(&repo.git, options, &self.semantic, &repo.interrupt, true).map_err(NotKept::Error)?;
            let timed_out = report.files.iter().any(|file| {
                file.fallback.as_ref().is_some_and(|fallback| fallback.reason == FallbackReason::TimeBudget)
            });
            if timed_out { Err(NotKept::Report(report)) } else { Ok(Arc::new(report)) }
        });
        match kept {
            Ok(report) => Ok(report),
            Err(NotKept::Report(report)) => Ok(Arc::new(report)),
            Err(NotKept::Error(error)) => Err(error),
        }
    }

    /// `diff.semanticFallbacks`: the files of the same selection that `diff.semantic` leaves to the
    /// text diff.
    ///
    /// # Errors
    /// As [`Engine::diff_semantic`].
    pub fn diff_semantic_fallbacks(
        &self,
        repo: &Repo,
        options: &Options,
        max_tokens: usize,
        measure: &mut Measure<'_, FallbackReport>,
    ) -> Result<Budgeted<FallbackReport>> {
        let full = self.semantic_report(repo, options)?;
        let fallbacks: Vec<FallbackFile> = full
            .files
            .iter()
            .filter_map(|file| {
                let fallback = file.fallback.clone()?;
                Some(FallbackFile {
                    path: file.path.clone(),
                    fallback,
                    additions: file.additions,
                    deletions: file.deletions,
                })
            })
            .collect();
        let whole = FallbackReport {
            base: full.base.clone(),
            head: full.head.clone(),
            path: full.path.clone(),
            changed_files: full.changed_files,
            fallbacks,
        };
        let cut = |whole: &FallbackReport, shown: &[usize]| FallbackReport {
            fallbacks: crate::budget::first(&whole.fallbacks, shown[0]),
            ..whole.clone()
        };
        crate::budget::fit_sections(&whole, &["fallbacks"], &[whole.fallbacks.len()], max_tokens, &cut, measure)
    }
}

/// The bytes a kept report holds, roughly.
fn weight(report: &Report) -> usize {
    let symbol = |symbol: &SymbolChange| 96 + symbol.name.len() + symbol.from.as_ref().map_or(0, String::len);
    report.files.iter().map(|file| 160 + file.path.len() + file.symbols.iter().map(symbol).sum::<usize>()).sum()
}

/// Keeps the files with the largest changes that fit `max_tokens`, shown in path order. A file that
/// does not fit even alone is never kept, so it does not hide the smaller ones behind it (a branch
/// with one huge file still shows its other files' symbols).
///
/// # Errors
/// [`crate::InvalidReason::BudgetBelowFloor`] when even no file exceeds `max_tokens`.
pub fn fit(full: &Report, max_tokens: usize, measure: &mut Measure<'_, Report>) -> Result<Budgeted<Report>> {
    let total = full.files.len();
    let whole = Budgeted { data: full.clone(), omitted: crate::budget::Omitted::default() };
    if measure(&whole) <= max_tokens {
        return Ok(whole);
    }
    let too_large: Vec<bool> = {
        let alone = |file: &FileChange| Report {
            base: full.base.clone(),
            head: full.head.clone(),
            base_given: full.base_given,
            head_given: full.head_given,
            path: full.path.clone(),
            changed_files: full.changed_files,
            fallback_files: full.fallback_files,
            cut: true,
            files: vec![file.clone()],
        };
        let omitted = crate::budget::Omitted::from_counts(&["files"], &[total], &[1]);
        full.files
            .iter()
            .map(|file| measure(&Budgeted { data: alone(file), omitted: omitted.clone() }) > max_tokens)
            .collect()
    };
    let mut by_size: Vec<usize> = (0..total).collect();
    by_size.sort_by_key(|&file_idx| {
        let file = &full.files[file_idx];
        (too_large[file_idx], std::cmp::Reverse(file.additions + file.deletions), file_idx)
    });
    let cut = |full: &Report, shown: &[usize]| {
        let mut kept: Vec<usize> = by_size[..shown[0]].to_vec();
        kept.sort_unstable();
        Report {
            cut: kept.len() < total,
            files: kept.into_iter().map(|file_idx| full.files[file_idx].clone()).collect(),
            ..full.clone()
        }
    };
    crate::budget::fit_sections(full, &["files"], &[full.files.len()], max_tokens, &cut, measure)
}

/// One side of a changed file, read.
struct SideText {
    id: ObjectId,
    path: String,
    text: Vec<u8>,
}

impl SideText {
    fn blob(&self) -> super::parses::Blob<'_> {
        (self.id, &self.text)
    }
}

/// A changed file on its way through the diff.
struct Work {
    entry: FileChange,
    language: Option<Language>,
    old: Option<SideText>,
    new: Option<SideText>,
    /// The line diff of the two sides' texts (an absent side is empty).
    hunks: Vec<Hunk>,
}

/// Reads the selection and lists its changed symbols, every file shown. With `parts`, a large file
/// with a small change has only the parts its diff touches parsed ([`parse_all`]); without, every
/// file is parsed whole, to the same answer (tested).
///
/// # Errors
/// As [`Engine::diff_semantic`].
pub(crate) fn read(
    repo: &gix::Repository,
    options: &Options,
    cache: &Cache,
    interrupt: &Interrupt,
    parts: bool,
) -> Result<Report> {
    let deadline = Instant::now() + options.time_budget;
    let sides = Sides { base: options.base.as_deref(), head: options.head.as_deref(), staged: options.staged };
    let (selection, diffed) = select_and_diff(repo, sides, options.path.as_deref(), interrupt)?;
    let mut renderer = Renderer::new(repo, diffed.new_root.clone(), &diffed.attribute_files, Output::ListingWithTexts)?;
    let mut attributes = Languages::new(repo, &diffed.attribute_files);
    let mut works = Vec::with_capacity(diffed.changes.len() + diffed.unmerged.len());
    for change in &diffed.changes {
        interrupt.check()?;
        // Reading and diffing count against the call's time too: past its deadline the rest are not read, so
        // that 100 changed files of 800 KB are answered in seconds, each unread one a time_budget fallback.
        if Instant::now() > deadline {
            works.push(unread(change, FallbackReason::TimeBudget));
            continue;
        }
        works.push(prepare(&mut renderer, &mut attributes, change)?);
    }
    for path in diffed.unmerged.keys() {
        let entry = FileChange {
            path: crate::facets::utf8(path),
            from: None,
            status: Status::Unmerged,
            language: None,
            additions: 0,
            deletions: 0,
            fallback: Some(Fallback { reason: FallbackReason::Unmerged, error_ratio: None }),
            top_level: None,
            symbols: Vec::new(),
        };
        works.push(Work { entry, language: None, old: None, new: None, hunks: Vec::new() });
    }
    let sides: Vec<FileSides<'_>> = works
        .iter()
        .filter_map(|work| {
            let language = work.language?;
            Some(FileSides {
                language,
                old: work.old.as_ref().map(SideText::blob),
                new: work.new.as_ref().map(SideText::blob),
                hunks: &work.hunks,
            })
        })
        .collect();
    let parses = parse_all(&sides, cache, deadline, parts);
    interrupt.check()?;
    let mut files: Vec<FileChange> = match_symbols(&mut works, &parses);
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let fallback_files = files.iter().filter(|file| file.fallback.is_some()).count();
    // Abbreviated as the other tools name commits (`commit.details`, `repo.history`).
    let abbrev = crate::abbrev::Abbrev::new(repo);
    Ok(Report {
        base_given: names_sha(options.base.as_deref(), selection.base.as_deref()),
        head_given: names_sha(options.head.as_deref(), Some(&selection.head)),
        base: selection.base.map(|base| abbrev.hex(&base)),
        head: abbrev.hex(&selection.head),
        path: options.path.clone(),
        changed_files: files.len(),
        fallback_files,
        cut: false,
        files,
    })
}

/// Whether the revision the caller gave, `given`, is the resolved sha `resolved` or a prefix of it
/// (at least 4 hex digits, as git takes them).
fn names_sha(given: Option<&str>, resolved: Option<&str>) -> bool {
    let (Some(given), Some(resolved)) = (given, resolved) else { return false };
    given.len() >= 4
        && given.bytes().all(|byte| byte.is_ascii_hexdigit())
        && resolved.len() >= given.len()
        && resolved[..given.len()].eq_ignore_ascii_case(given)
}

/// A change listed without reading it, as a fallback for `reason`: its path and status, no counts
/// (they would need its diff).
fn unread(change: &Change, reason: FallbackReason) -> Work {
    use crate::compare::changes::Kind as Changed;
    let status = match change.kind {
        Changed::Added => Status::Added,
        Changed::Deleted => Status::Deleted,
        Changed::Modified => Status::Modified,
        Changed::Renamed => Status::Renamed,
        Changed::Copied => Status::Copied,
    };
    let from = matches!(change.kind, Changed::Renamed | Changed::Copied)
        .then(|| change.old.as_ref().map(|old| crate::facets::utf8(old.path.as_ref())))
        .flatten();
    let entry = FileChange {
        path: crate::facets::utf8(change.path().as_ref()),
        from,
        status,
        language: None,
        additions: 0,
        deletions: 0,
        fallback: Some(Fallback { reason, error_ratio: None }),
        top_level: None,
        symbols: Vec::new(),
    };
    Work { entry, language: None, old: None, new: None, hunks: Vec::new() }
}

/// Reads one change's sides and their line diff, and decides whether it can be parsed.
fn prepare(renderer: &mut Renderer<'_>, languages: &mut Languages<'_>, change: &Change) -> Result<Work> {
    let rendered = renderer.render(change)?;
    let listed = rendered.stat;
    let mut entry = FileChange {
        path: listed.path.clone(),
        from: listed.from.clone(),
        status: listed.status,
        language: None,
        additions: listed.additions.unwrap_or(0),
        deletions: listed.deletions.unwrap_or(0),
        fallback: None,
        top_level: None,
        symbols: Vec::new(),
    };
    let fall_back = |mut entry: FileChange, reason| {
        entry.fallback = Some(Fallback { reason, error_ratio: None });
        Ok(Work { entry, language: None, old: None, new: None, hunks: Vec::new() })
    };
    let sides = [change.old.as_ref(), change.new.as_ref()];
    if sides.iter().flatten().any(|side| side.mode == Mode::COMMIT) {
        return fall_back(entry, FallbackReason::Submodule);
    }
    if listed.binary {
        // A side over the renderer's read cap is listed as binary without being read: it is too large.
        let reason = if renderer.over_text_cap(change) { FallbackReason::TooLarge } else { FallbackReason::Binary };
        return fall_back(entry, reason);
    }
    if listed.error.is_some() {
        // One unreadable file never sinks the answer: it is named, and diff.text says why.
        return fall_back(entry, FallbackReason::Unreadable);
    }
    if sides.iter().flatten().any(|side| side.mode == Mode::SYMLINK) {
        return fall_back(entry, FallbackReason::UnsupportedLanguage);
    }
    let language = languages.of(change.path().as_ref())?;
    let Some(language) = language else { return fall_back(entry, FallbackReason::UnsupportedLanguage) };
    entry.language = Some(language);
    // A text file of one type on both sides always comes with its texts; anything else is not parsed.
    let Some(texts) = rendered.texts else { return fall_back(entry, FallbackReason::Binary) };
    let side = |side: Option<&crate::compare::side::Entry>, text: Vec<u8>| {
        side.map(|side| SideText { id: side.id, path: crate::facets::utf8(&side.path), text })
    };
    let (old, new) = (side(change.old.as_ref(), texts.old), side(change.new.as_ref(), texts.new));
    Ok(Work { entry, language: Some(language), old, new, hunks: texts.hunks })
}

/// A side's symbols with the changed lines given to them.
struct SideSymbols {
    symbols: Arc<Parsed>,
    /// The text they were parsed from (empty for an absent side).
    text: Vec<u8>,
    /// Changed lines per symbol.
    lines: Vec<u64>,
}

impl SideSymbols {
    fn list(&self) -> &[Symbol] {
        match &*self.symbols {
            Parsed::Symbols(symbols) => symbols,
            _ => &[],
        }
    }
}

/// A file whose two sides were parsed, with its line diff given to symbols.
struct Attributed {
    work_idx: usize,
    old: SideSymbols,
    new: SideSymbols,
    top_level: Lines,
}

/// Where a symbol of one side went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Unmatched,
    Matched { file: usize, symbol: usize, how: SymbolStatus },
}

/// Gives the changed lines to symbols, matches the symbols and builds each file's entry.
fn match_symbols(works: &mut [Work], parses: &Parses) -> Vec<FileChange> {
    let mut attributed: Vec<Attributed> = Vec::new();
    for (work_idx, work) in works.iter_mut().enumerate() {
        let Some(language) = work.language.filter(|_| work.entry.fallback.is_none()) else { continue };
        // The parse of the parts that the diff touches when there is one, else the whole side's.
        let parts = match (&work.old, &work.new) {
            (Some(old), Some(new)) => Key::parts(old.id, new.id, language, &work.hunks).map(|key| parses.get(&key)),
            _ => [None, None],
        };
        let whole = |side: &Option<SideText>| match side {
            Some(side) => {
                parses.get(&Key::whole(side.id, language)).cloned().unwrap_or_else(|| Arc::new(Parsed::TimeBudget))
            }
            None => Arc::new(Parsed::Symbols(Vec::new())),
        };
        let (old, new) = match parts {
            [Some(old), Some(new)] => (Arc::clone(old), Arc::clone(new)),
            _ => (whole(&work.old), whole(&work.new)),
        };
        let failure = [&*old, &*new].into_iter().find_map(|parsed| match parsed {
            Parsed::Symbols(_) => None,
            Parsed::ParseErrors(ratio) => {
                Some(Fallback { reason: FallbackReason::ParseErrors, error_ratio: Some(*ratio) })
            }
            Parsed::TooLarge => Some(Fallback { reason: FallbackReason::TooLarge, error_ratio: None }),
            Parsed::TimeBudget => Some(Fallback { reason: FallbackReason::TimeBudget, error_ratio: None }),
            Parsed::TooDeep => Some(Fallback { reason: FallbackReason::TooDeep, error_ratio: None }),
        });
        if let Some(failure) = failure {
            work.entry.fallback = Some(failure);
            continue;
        }
        let text =
            |side: &mut Option<SideText>| side.as_mut().map(|side| std::mem::take(&mut side.text)).unwrap_or_default();
        let mut old = SideSymbols { symbols: old, text: text(&mut work.old), lines: Vec::new() };
        let mut new = SideSymbols { symbols: new, text: text(&mut work.new), lines: Vec::new() };
        let removed = attribute(&mut old, work.hunks.iter().map(|hunk| hunk.before.clone()));
        let added = attribute(&mut new, work.hunks.iter().map(|hunk| hunk.after.clone()));
        attributed.push(Attributed { work_idx, old, new, top_level: Lines { added, removed } });
    }
    let (old_fates, new_fates) = pair(&attributed);
    let folds = fold(&attributed, &old_fates, &new_fates);
    for (file_idx, file) in attributed.iter().enumerate() {
        let symbols = list(file_idx, &attributed, works, &folds, &old_fates, &new_fates);
        let entry = &mut works[file.work_idx].entry;
        entry.symbols = symbols;
        entry.top_level = (!file.top_level.is_empty()).then_some(file.top_level);
    }
    works.iter().map(|work| work.entry.clone()).collect()
}

/// Counts the changed lines of a side (`changed`, 0-based line ranges in order) per innermost
/// symbol; returns the changed lines outside every symbol.
fn attribute(side: &mut SideSymbols, changed: impl Iterator<Item = std::ops::Range<u32>> + Clone) -> u64 {
    let symbols = side.list();
    let lines = changed.clone().last().map_or(0, |range| range.end as usize);
    let mut owner: Vec<Option<usize>> = vec![None; lines];
    // Members come after their container: the later symbol holding a line is the innermost.
    for (symbol_idx, symbol) in symbols.iter().enumerate() {
        let start = (symbol.start_line as usize).saturating_sub(1).min(lines);
        let end = (symbol.end_line as usize).min(lines);
        for slot in &mut owner[start..end] {
            *slot = Some(symbol_idx);
        }
    }
    let mut counts = vec![0u64; symbols.len()];
    let mut outside = 0;
    for line in changed.flatten() {
        match owner[line as usize] {
            Some(symbol_idx) => counts[symbol_idx] += 1,
            None => outside += 1,
        }
    }
    side.lines = counts;
    outside
}

/// The token bags of the symbols compared so far ([`semantic::tokens`]), per file and symbol of
/// each side, each made when first needed.
struct Bags {
    old: Vec<Vec<Option<Vec<u64>>>>,
    new: Vec<Vec<Option<Vec<u64>>>>,
}

impl Bags {
    fn new(files: &[Attributed]) -> Self {
        Self {
            old: files.iter().map(|file| vec![None; file.old.list().len()]).collect(),
            new: files.iter().map(|file| vec![None; file.new.list().len()]).collect(),
        }
    }

    /// How alike the old symbol `old` and the new symbol `new` are (file and symbol indexes).
    fn similarity(&mut self, files: &[Attributed], old: (usize, usize), new: (usize, usize)) -> f64 {
        let bag = |side: &SideSymbols, symbol_idx: usize| semantic::tokens(&side.list()[symbol_idx], &side.text);
        let old_bag = self.old[old.0][old.1].get_or_insert_with(|| bag(&files[old.0].old, old.1));
        let new_bag = self.new[new.0][new.1].get_or_insert_with(|| bag(&files[new.0].new, new.1));
        semantic::similarity(old_bag, new_bag)
    }
}

/// Pairs old and new symbols: by kind and qualified name within a file, then renames within a file
/// and moves across files by similarity. Returns, per attributed file, the fate of each old and
/// each new symbol.
fn pair(files: &[Attributed]) -> (Vec<Vec<Fate>>, Vec<Vec<Fate>>) {
    let mut old_fates: Vec<Vec<Fate>> = files.iter().map(|file| vec![Fate::Unmatched; file.old.list().len()]).collect();
    let mut new_fates: Vec<Vec<Fate>> = files.iter().map(|file| vec![Fate::Unmatched; file.new.list().len()]).collect();
    let link = |old_fates: &mut Vec<Vec<Fate>>,
                new_fates: &mut Vec<Vec<Fate>>,
                old: (usize, usize),
                new: (usize, usize),
                how| {
        old_fates[old.0][old.1] = Fate::Matched { file: new.0, symbol: new.1, how };
        new_fates[new.0][new.1] = Fate::Matched { file: old.0, symbol: old.1, how };
    };
    // By kind and qualified name, the n-th of a name with the n-th.
    for (file_idx, file) in files.iter().enumerate() {
        let mut by_key: HashMap<(Kind, &str), Vec<usize>> = HashMap::new();
        for (symbol_idx, symbol) in file.old.list().iter().enumerate().rev() {
            by_key.entry((symbol.kind, symbol.name.as_str())).or_default().push(symbol_idx);
        }
        for (symbol_idx, symbol) in file.new.list().iter().enumerate() {
            if let Some(old_idx) = by_key.get_mut(&(symbol.kind, symbol.name.as_str())).and_then(Vec::pop) {
                link(
                    &mut old_fates,
                    &mut new_fates,
                    (file_idx, old_idx),
                    (file_idx, symbol_idx),
                    SymbolStatus::Modified,
                );
            }
        }
    }
    let mut bags = Bags::new(files);
    // Renames within a file: the most similar pairs of the same kind first.
    for (file_idx, file) in files.iter().enumerate() {
        let mut candidates = Vec::new();
        for (old_idx, old) in file.old.list().iter().enumerate() {
            if old_fates[file_idx][old_idx] != Fate::Unmatched {
                continue;
            }
            for (new_idx, new) in file.new.list().iter().enumerate() {
                if new_fates[file_idx][new_idx] != Fate::Unmatched || new.kind != old.kind {
                    continue;
                }
                let score = bags.similarity(files, (file_idx, old_idx), (file_idx, new_idx));
                if score >= RENAME_SIMILARITY {
                    candidates.push((score, old_idx, new_idx));
                }
            }
        }
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        for (_, old_idx, new_idx) in candidates {
            if old_fates[file_idx][old_idx] == Fate::Unmatched && new_fates[file_idx][new_idx] == Fate::Unmatched {
                link(&mut old_fates, &mut new_fates, (file_idx, old_idx), (file_idx, new_idx), SymbolStatus::Renamed);
            }
        }
    }
    // Moves across files: the same kind and own name, similar enough.
    let mut unmatched_new: HashMap<(Kind, &str), Vec<(usize, usize)>> = HashMap::new();
    for (new_file, to) in files.iter().enumerate() {
        for (new_idx, new) in to.new.list().iter().enumerate() {
            if new_fates[new_file][new_idx] == Fate::Unmatched {
                unmatched_new.entry((new.kind, new.leaf.as_str())).or_default().push((new_file, new_idx));
            }
        }
    }
    let mut candidates = Vec::new();
    for (old_file, from) in files.iter().enumerate() {
        for (old_idx, old) in from.old.list().iter().enumerate() {
            if old_fates[old_file][old_idx] != Fate::Unmatched {
                continue;
            }
            for &(new_file, new_idx) in unmatched_new.get(&(old.kind, old.leaf.as_str())).into_iter().flatten() {
                if new_file == old_file {
                    continue;
                }
                let score = bags.similarity(files, (old_file, old_idx), (new_file, new_idx));
                if score >= RENAME_SIMILARITY {
                    candidates.push((score, old_file, old_idx, new_file, new_idx));
                }
            }
        }
    }
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2, a.3, a.4).cmp(&(b.1, b.2, b.3, b.4))));
    for (_, old_file, old_idx, new_file, new_idx) in candidates {
        if old_fates[old_file][old_idx] == Fate::Unmatched && new_fates[new_file][new_idx] == Fate::Unmatched {
            link(&mut old_fates, &mut new_fates, (old_file, old_idx), (new_file, new_idx), SymbolStatus::Moved);
        }
    }
    (old_fates, new_fates)
}

/// A file's per-symbol line counts after folding, and which symbols were folded into their
/// container.
struct Folded {
    old_lines: Vec<u64>,
    old_folded: Vec<bool>,
    new_lines: Vec<u64>,
    new_folded: Vec<bool>,
}

/// Folds added (removed) members of an added (removed) container, and moved members of a container
/// moved with them, into the container: their counts go to it, innermost first, and they are not
/// listed.
fn fold(files: &[Attributed], old_fates: &[Vec<Fate>], new_fates: &[Vec<Fate>]) -> Vec<Folded> {
    let one_side = |file_idx: usize, new_side: bool| {
        let file = &files[file_idx];
        let (symbols, lines, fates) = if new_side {
            (file.new.list(), &file.new.lines, &new_fates[file_idx])
        } else {
            (file.old.list(), &file.old.lines, &old_fates[file_idx])
        };
        let mut counts = lines.clone();
        let mut folded = vec![false; symbols.len()];
        for (symbol_idx, symbol) in symbols.iter().enumerate().rev() {
            let Some(parent) = symbol.parent else { continue };
            let fold = match (fates[symbol_idx], fates[parent]) {
                (Fate::Unmatched, Fate::Unmatched) => true,
                (
                    Fate::Matched { file: other_file, symbol: other_symbol, how: SymbolStatus::Moved },
                    Fate::Matched { file: parent_file, symbol: parent_symbol, how: SymbolStatus::Moved },
                ) => {
                    let other = &files[other_file];
                    let other_symbols = if new_side { other.old.list() } else { other.new.list() };
                    other_file == parent_file && other_symbols[other_symbol].parent == Some(parent_symbol)
                }
                _ => false,
            };
            if fold {
                folded[symbol_idx] = true;
                counts[parent] += counts[symbol_idx];
            }
        }
        (counts, folded)
    };
    (0..files.len())
        .map(|file_idx| {
            let (old_lines, old_folded) = one_side(file_idx, false);
            let (new_lines, new_folded) = one_side(file_idx, true);
            Folded { old_lines, old_folded, new_lines, new_folded }
        })
        .collect()
}

/// The listed symbols of one attributed file: its new side's matched, renamed, moved-in and added
/// symbols, and its old side's removed ones, in line order.
fn list(
    file_idx: usize,
    files: &[Attributed],
    works: &[Work],
    folds: &[Folded],
    old_fates: &[Vec<Fate>],
    new_fates: &[Vec<Fate>],
) -> Vec<SymbolChange> {
    let file = &files[file_idx];
    let fold = &folds[file_idx];
    let (old_symbols, new_symbols) = (file.old.list(), file.new.list());
    let range = |symbol: &Symbol| Some([symbol.start_line, symbol.end_line]);
    let mut out: Vec<(u32, SymbolChange)> = Vec::new();
    for (symbol_idx, symbol) in new_symbols.iter().enumerate() {
        if fold.new_folded[symbol_idx] {
            continue;
        }
        let added = fold.new_lines[symbol_idx];
        let change = match new_fates[file_idx][symbol_idx] {
            Fate::Unmatched => SymbolChange {
                change: SymbolStatus::Added,
                kind: symbol.kind,
                name: listed_name(&symbol.name),
                from: None,
                from_path: None,
                added,
                removed: 0,
                old_lines: None,
                new_lines: range(symbol),
                signature_changed: false,
            },
            Fate::Matched { file: from_file, symbol: from_symbol, how } => {
                let old = &files[from_file].old.list()[from_symbol];
                let removed = folds[from_file].old_lines[from_symbol];
                let signature_changed = match (&old.signature, &symbol.signature) {
                    (Some(old_signature), Some(new_signature)) if how == SymbolStatus::Modified => {
                        old_signature != new_signature
                    }
                    (Some(old_signature), Some(new_signature)) => {
                        without(old_signature, &old.leaf) != without(new_signature, &symbol.leaf)
                    }
                    _ => false,
                };
                let from_path = (how == SymbolStatus::Moved).then(|| {
                    let work = &works[files[from_file].work_idx];
                    work.old.as_ref().map_or_else(|| work.entry.path.clone(), |side| side.path.clone())
                });
                SymbolChange {
                    change: how,
                    kind: symbol.kind,
                    name: listed_name(&symbol.name),
                    from: (old.name != symbol.name).then(|| listed_name(&old.name)),
                    from_path,
                    added,
                    removed,
                    old_lines: range(old),
                    new_lines: range(symbol),
                    signature_changed,
                }
            }
        };
        if change.added + change.removed > 0 {
            out.push((symbol.start_line, change));
        }
    }
    for (symbol_idx, symbol) in old_symbols.iter().enumerate() {
        let removed = fold.old_lines[symbol_idx];
        if fold.old_folded[symbol_idx] || old_fates[file_idx][symbol_idx] != Fate::Unmatched || removed == 0 {
            continue;
        }
        let change = SymbolChange {
            change: SymbolStatus::Removed,
            kind: symbol.kind,
            name: listed_name(&symbol.name),
            from: None,
            from_path: None,
            added: 0,
            removed,
            old_lines: range(symbol),
            new_lines: None,
            signature_changed: false,
        };
        // Listed where it stood: by its old first line among the new side's symbols.
        out.push((symbol.start_line, change));
    }
    out.sort_by_key(|(line, change)| (*line, change.change == SymbolStatus::Removed));
    out.into_iter().map(|(_, change)| change).collect()
}

/// A symbol's qualified name as the answer lists it: clipped to
/// [`crate::facets::MAX_SUBJECT_CHARS`] characters, so that one 300 KB identifier cannot fill a
/// budget.
fn listed_name(name: &str) -> String {
    crate::facets::clipped(name, crate::facets::MAX_SUBJECT_CHARS)
}

/// `signature` with the word `name` taken out (how a rename's signature is compared).
fn without(signature: &str, name: &str) -> String {
    signature.replacen(name, "", 1)
}

pub(crate) mod languages;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod parts_regressions;
