//! `file.blame` (SPEC §5, ours): who last changed each line of a file at a revision, as `git blame` answers it.
//!
//! The history walk and the line attribution are gix's (`gix::Repository::blame_file`, the `blame` feature), with
//! git's defaults: the diff algorithm of `diff.algorithm` (Myers unless configured), whole-file renames followed at
//! 50% similarity (git's `find_rename`), no `-M`/`-C` line moves, no `--since`. Lines are git's: split after each
//! `\n`, a last line without newline counts.
//!
//! Revisions to ignore are honoured as git honours them, which gix does not do: after gix has blamed the lines, each
//! line that landed on a listed commit is handed to that commit's parents the way git's `pass_blame_to_parent` with
//! `ignore_diffs` does (see [`super::ignore`]): the line is matched to a line of the parent's version (git's
//! fingerprint heuristic), and blame goes on from there; a line no parent line matches stays on the ignored commit,
//! as git leaves it (`unblamable`). The lists come from the files of `blame.ignoreRevsFile` (git's rule: each value
//! adds a file, empty values are skipped as git 2.47 skips them, relative paths start at the work tree's root; a
//! configured file that is missing is skipped, where git refuses to blame); when that key is not set, from
//! `.git-blame-ignore-revs` at the work tree's root, the convention GitHub applies on its own (git needs the key).
//! Names that are not full hex object names, or name no commit here, are skipped. Which revisions were skipped for
//! the lines shown is said in `ignoredRevs`.
//!
//! Blame runs at a commit (`rev`, default `HEAD`); uncommitted work-tree changes are not blamed (ask `diff.text`).
//! Consecutive lines from one commit, one original path and consecutive original lines form one range, as git's
//! porcelain groups them. The answer is cut to a token budget at whole ranges; `endLine` then names the last line
//! shown and `omitted.ranges` counts the ranges left out.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ops::RangeInclusive;
use std::path::Path;

use gix::ObjectId;
use gix::bstr::{BStr, BString, ByteSlice};
use serde::Serialize;

use crate::budget::{self, Budgeted, Measure, Omitted};
use crate::error::{Error, InvalidReason, Result};
use crate::facets::commits::abbreviate;
use crate::facets::{iso_time, subject, utf8};
use crate::history::Person;
use crate::repository::check_relative_path;
use crate::revision::resolve_commit;

use super::ignore;

/// The ignore-revs file GitHub reads on its own; git reads it only when `blame.ignoreRevsFile` names it.
pub const CONVENTIONAL_IGNORE_FILE: &str = ".git-blame-ignore-revs";

/// What to blame.
#[derive(Debug, Clone)]
pub struct Options {
    /// Repository-relative path of the file (no `..`, not absolute, no control characters).
    pub path: String,
    /// The revision (a commit, or a tag peeled to one); `HEAD` when absent.
    pub rev: Option<String>,
    /// First line wanted, 1-based (default 1).
    pub start_line: Option<usize>,
    /// Last line wanted, 1-based inclusive (default: the last line; a larger value is clamped to it).
    pub end_line: Option<usize>,
    /// Honour the ignore-revs files (default `true`); `false` blames as `git blame` without any.
    pub ignore_revs: bool,
}

/// The blame of a file's lines, possibly cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The full sha of the commit `rev` resolved to.
    pub rev: String,
    /// The path, as given.
    pub path: String,
    /// Lines in the whole file at `rev` (absent, i.e. 0, for an empty file).
    #[serde(skip_serializing_if = "crate::compact::is_zero")]
    pub total_lines: usize,
    /// First line of the range (1-based); absent for an empty file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<usize>,
    /// Last line shown; absent when no line is shown (an empty file, or no range fitted the budget).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<usize>,
    /// The shown lines' blame, in line order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranges: Vec<Range>,
    /// The commits the shown ranges name, by abbreviated sha.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub commits: BTreeMap<String, CommitInfo>,
    /// Revisions of the ignore lists that blame skipped for the shown lines, `"<sha> <subject>"`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_revs: Vec<String>,
    /// The ignore-revs files read (as configured, or the conventional one); absent when none was read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignore_revs_files: Vec<String>,
    /// The budget left out ranges (`omitted.ranges` counts them); read on from `endLine + 1`.
    #[serde(skip_serializing_if = "crate::compact::is_false")]
    pub truncated: bool,
}

/// Consecutive lines with one origin: one commit, one original path, consecutive original lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Range {
    /// First line of the range in the blamed file (1-based).
    pub line: usize,
    /// Lines in the range; absent means 1.
    #[serde(skip_serializing_if = "is_one")]
    pub lines: usize,
    /// The commit that last changed these lines, abbreviated (a key of `commits`).
    pub commit: String,
    /// The path the lines had in that commit; absent means `path` (no rename on the way).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orig_path: Option<String>,
    /// The first line's number in that commit's version; absent means the same as `line`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orig_line: Option<usize>,
    /// Changed by an ignored revision and matched to no line of its parents, so blamed on it as git does; absent
    /// means false.
    #[serde(skip_serializing_if = "crate::compact::is_false")]
    pub unblamable: bool,
}

/// What a range's commit says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitInfo {
    /// The author as recorded, `"Name <email>"`.
    pub author: Person,
    /// The author date, ISO 8601 with the author's offset (as `git log --format=%aI`).
    pub time: String,
    /// The first line of the message.
    pub subject: String,
}

fn is_one(value: &usize) -> bool {
    *value == 1
}

/// Where one line of the blamed file came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineOrigin {
    /// The commit blamed.
    pub commit: ObjectId,
    /// The path in that commit.
    pub path: BString,
    /// The line in that commit's version, 0-based.
    pub line: u32,
    /// Left on an ignored revision because no parent line matched.
    pub unblamable: bool,
}

/// The uncut blame.
#[derive(Debug, Clone)]
pub struct Full {
    rev: String,
    path: String,
    total_lines: usize,
    /// The requested range, 1-based inclusive, clamped to the file (`end == start - 1` for an empty file).
    start: usize,
    ranges: Vec<Range>,
    commits: BTreeMap<String, CommitInfo>,
    /// Per range, the ignore-list commits skipped on the way to its lines.
    skipped: Vec<BTreeSet<String>>,
    ignore_revs_files: Vec<String>,
}

impl Full {
    /// The ranges, for tests and callers that want them uncut.
    pub fn ranges(&self) -> &[Range] {
        &self.ranges
    }

    /// The report showing the first `count` ranges.
    fn report(&self, count: usize) -> Report {
        let ranges = budget::first(&self.ranges, count);
        let commits = ranges
            .iter()
            .filter_map(|range| self.commits.get(&range.commit).map(|info| (range.commit.clone(), info.clone())))
            .collect();
        let ignored_revs =
            self.skipped[..count].iter().flatten().collect::<BTreeSet<_>>().into_iter().cloned().collect();
        let end_line = ranges.last().map(|range| range.line + range.lines - 1);
        Report {
            rev: self.rev.clone(),
            path: self.path.clone(),
            total_lines: self.total_lines,
            start_line: (self.total_lines > 0).then_some(self.start),
            end_line,
            ranges,
            commits,
            ignored_revs,
            ignore_revs_files: self.ignore_revs_files.clone(),
            truncated: count < self.ranges.len(),
        }
    }
}

/// Blames the file at the revision.
///
/// # Errors
/// As [`crate::Engine::file_blame`].
pub fn read(repo: &gix::Repository, options: &Options) -> Result<Full> {
    check_relative_path(&options.path)?;
    if options.path.is_empty() {
        return Err(Error::invalid(InvalidReason::InvalidPath, "path may not be empty"));
    }
    if let (Some(start), Some(end)) = (options.start_line, options.end_line)
        && end < start
    {
        return Err(Error::invalid(
            InvalidReason::InvalidRange,
            format!("endLine {end} is before startLine {start}: the range is empty"),
        ));
    }
    if options.start_line == Some(0) || options.end_line == Some(0) {
        return Err(Error::invalid(InvalidReason::InvalidRange, "lines are numbered from 1"));
    }
    let rev = options.rev.as_deref().unwrap_or("HEAD");
    let commit_id = resolve_commit(repo, rev)?;
    let data = blob_at(repo, commit_id, &options.path, rev)?;
    if super::is_binary(&data) {
        return Err(Error::invalid(
            InvalidReason::BinaryFile,
            format!(
                "{:?} is binary at {rev} (a NUL byte in its first 8000 bytes): it has no lines to blame",
                options.path
            ),
        ));
    }
    let total_lines = count_lines(&data);
    let start = options.start_line.unwrap_or(1);
    if start > total_lines.max(1) {
        return Err(Error::invalid(
            InvalidReason::InvalidRange,
            format!("startLine {start} is past the end of {:?}, which has {total_lines} lines", options.path),
        ));
    }
    let end = options.end_line.unwrap_or(total_lines).min(total_lines).max(start - 1);

    let (ignore_list, ignore_revs_files) =
        if options.ignore_revs { ignore_list(repo)? } else { (HashSet::new(), Vec::new()) };
    let path = BString::from(options.path.as_str());
    let mut lines = if end >= start {
        let requested = u32::try_from(start).unwrap_or(u32::MAX)..=u32::try_from(end).unwrap_or(u32::MAX);
        blame_lines(repo, commit_id, path.as_ref(), &[requested])?
    } else {
        BTreeMap::new()
    };
    let skipped =
        if ignore_list.is_empty() { HashMap::new() } else { pass_over_ignored(repo, &ignore_list, &mut lines)? };

    let mut names = Names::new(repo);
    let mut ranges: Vec<Range> = Vec::new();
    let mut range_skipped: Vec<BTreeSet<String>> = Vec::new();
    let mut previous: Option<(u32, &LineOrigin)> = None;
    for (&line, origin) in &lines {
        let continues = previous.is_some_and(|(previous_line, previous_origin)| {
            previous_line + 1 == line
                && previous_origin.commit == origin.commit
                && previous_origin.path == origin.path
                && previous_origin.line + 1 == origin.line
                && previous_origin.unblamable == origin.unblamable
        });
        let line_skipped = skipped.get(&line).map(|commits| names.lines(commits)).transpose()?.unwrap_or_default();
        match ranges.last_mut() {
            Some(range) if continues => {
                range.lines += 1;
                if let Some(set) = range_skipped.last_mut() {
                    set.extend(line_skipped);
                }
            }
            _ => {
                let line_number = line as usize + 1;
                let orig_line = origin.line as usize + 1;
                ranges.push(Range {
                    line: line_number,
                    lines: 1,
                    commit: names.commit(origin.commit)?,
                    orig_path: (origin.path != path).then(|| utf8(&origin.path)),
                    orig_line: (orig_line != line_number).then_some(orig_line),
                    unblamable: origin.unblamable,
                });
                range_skipped.push(line_skipped.into_iter().collect());
            }
        }
        previous = Some((line, origin));
    }
    Ok(Full {
        rev: commit_id.to_string(),
        path: options.path.clone(),
        total_lines,
        start,
        ranges,
        commits: names.infos,
        skipped: range_skipped,
        ignore_revs_files,
    })
}

/// Shows as many whole ranges as `max_tokens` allows.
///
/// # Errors
/// [`InvalidReason::BudgetBelowFloor`] when the result without any range exceeds `max_tokens`.
pub fn fit(full: &Full, max_tokens: usize, measure: &mut Measure<'_, Report>) -> Result<Budgeted<Report>> {
    let total = full.ranges.len();
    let omitted = |count: usize| Omitted::from_counts(&["ranges"], &[total], &[count]);
    let mut candidate = |shown: &[usize]| {
        let count = shown[0];
        measure(&Budgeted { data: full.report(count), omitted: omitted(count) })
    };
    let shown = budget::fit(&[total], max_tokens, &mut candidate)?[0];
    Ok(Budgeted { data: full.report(shown), omitted: omitted(shown) })
}

/// The blob at `path` in `commit`'s tree.
fn blob_at(repo: &gix::Repository, commit_id: ObjectId, path: &str, rev: &str) -> Result<Vec<u8>> {
    let to_err = |err| Error::git("the revision's tree", err);
    let tree = repo.find_commit(commit_id).map_err(to_err)?.tree().map_err(to_err)?;
    let entry =
        tree.lookup_entry_by_path(path).map_err(|err| Error::git("the revision's tree", err))?.ok_or_else(|| {
            Error::invalid(InvalidReason::NotFound, format!("{path:?} does not exist at {rev} ({commit_id})"))
        })?;
    let mode = entry.mode();
    if mode.is_tree() || mode.is_commit() {
        let what = if mode.is_tree() { "a directory" } else { "a submodule" };
        return Err(Error::invalid(
            InvalidReason::NotAFile,
            format!("{path:?} is {what} at {rev}, not a file: only files can be blamed"),
        ));
    }
    Ok(repo.find_blob(entry.object_id()).map_err(|err| Error::git("the file's blob", err))?.detach().data)
}

/// Lines as git counts them: split after each `\n`, a last line without newline counts.
pub(crate) fn count_lines(data: &[u8]) -> usize {
    let newlines = data.iter().filter(|byte| **byte == b'\n').count();
    newlines + usize::from(!data.is_empty() && !data.ends_with(b"\n"))
}

/// gix's blame of the 1-based inclusive `ranges` of `path` at `commit`: the origin of each blamed line (0-based).
pub(crate) fn blame_lines(
    repo: &gix::Repository,
    commit: ObjectId,
    path: &BStr,
    ranges: &[RangeInclusive<u32>],
) -> Result<BTreeMap<u32, LineOrigin>> {
    let to_err = |err| Error::git("the file's history (blame)", err);
    let ranges = gix::blame::BlameRanges::from_one_based_inclusive_ranges(ranges.to_vec()).map_err(to_err)?;
    let options = gix::repository::blame_file::Options {
        diff_algorithm: None,
        ranges,
        since: None,
        rewrites: Some(gix::diff::Rewrites::default()),
    };
    let outcome = repo.blame_file(path, commit, options).map_err(to_err)?;
    let mut lines = BTreeMap::new();
    for entry in &outcome.entries {
        let origin_path = entry.source_file_name.clone().unwrap_or_else(|| path.to_owned());
        for offset in 0..entry.len.get() {
            lines.insert(
                entry.start_in_blamed_file + offset,
                LineOrigin {
                    commit: entry.commit_id,
                    path: origin_path.clone(),
                    line: entry.start_in_source_file + offset,
                    unblamable: false,
                },
            );
        }
    }
    Ok(lines)
}

/// Hands every line blamed on an ignored commit over to that commit's parents, as git does, until none is left on
/// one (or only unblamable ones). Returns, per blamed line, the ignored commits passed over.
fn pass_over_ignored(
    repo: &gix::Repository,
    ignore_list: &HashSet<ObjectId>,
    lines: &mut BTreeMap<u32, LineOrigin>,
) -> Result<HashMap<u32, Vec<ObjectId>>> {
    let mut skipped: HashMap<u32, Vec<ObjectId>> = HashMap::new();
    loop {
        // Group the lines still on an ignored commit by (commit, path).
        let mut groups: BTreeMap<(ObjectId, BString), Vec<u32>> = BTreeMap::new();
        for (&line, origin) in lines.iter() {
            if !origin.unblamable && ignore_list.contains(&origin.commit) {
                groups.entry((origin.commit, origin.path.clone())).or_default().push(line);
            }
        }
        if groups.is_empty() {
            return Ok(skipped);
        }
        for ((commit, path), blamed) in groups {
            let targets: Vec<u32> =
                blamed.iter().filter_map(|line| lines.get(line).map(|origin| origin.line)).collect();
            let handed = ignore::hand_to_parents(repo, commit, path.as_ref(), &targets)?;
            // Per parent origin, the parent lines to blame next, then the blame of each.
            let mut wanted: BTreeMap<(ObjectId, BString), BTreeSet<u32>> = BTreeMap::new();
            for guess in handed.iter().flatten() {
                wanted.entry((guess.commit, guess.path.clone())).or_default().insert(guess.line);
            }
            let mut blamed_in_parent: HashMap<(ObjectId, BString), BTreeMap<u32, LineOrigin>> = HashMap::new();
            for ((parent, parent_path), parent_lines) in wanted {
                let ranges: Vec<RangeInclusive<u32>> = parent_lines.iter().map(|line| line + 1..=line + 1).collect();
                let result = blame_lines(repo, parent, parent_path.as_ref(), &ranges)?;
                blamed_in_parent.insert((parent, parent_path), result);
            }
            for (line, guess) in blamed.iter().zip(handed) {
                let Some(origin) = lines.get_mut(line) else { continue };
                match guess {
                    Some(guess) => {
                        let found = blamed_in_parent
                            .get(&(guess.commit, guess.path.clone()))
                            .and_then(|result| result.get(&guess.line))
                            .cloned()
                            .ok_or_else(|| {
                                Error::git("the file's history (blame)", "a line handed to a parent was not blamed")
                            })?;
                        skipped.entry(*line).or_default().push(commit);
                        *origin = found;
                    }
                    None => origin.unblamable = true,
                }
            }
        }
    }
}

/// The ignore list: the commits named in the ignore-revs files (git's `blame.ignoreRevsFile` values, else the
/// conventional `.git-blame-ignore-revs`), and the files read, as named.
fn ignore_list(repo: &gix::Repository) -> Result<(HashSet<ObjectId>, Vec<String>)> {
    let Some(work_dir) = repo.workdir() else {
        return Ok((HashSet::new(), Vec::new()));
    };
    let configured = repo.config_snapshot().plumbing().strings("blame.ignoreRevsFile");
    let names: Vec<String> = match configured {
        // Git 2.47 skips empty values (its documentation says they reset the list; its code does not).
        Some(values) => values.iter().filter(|value| !value.is_empty()).map(|value| utf8(value)).collect(),
        None => vec![CONVENTIONAL_IGNORE_FILE.to_owned()],
    };
    let mut commits = HashSet::new();
    let mut read = Vec::new();
    for name in names {
        let expanded = match name.strip_prefix("~/") {
            Some(rest) => std::env::var_os("HOME").map(|home| Path::new(&home).join(rest)),
            None => Some(work_dir.join(&name)),
        };
        let Some(file) = expanded else { continue };
        // A named file that is missing or not a regular file is skipped (git refuses to blame then); only the
        // files read are reported.
        let Ok(metadata) = std::fs::metadata(&file) else { continue };
        if !metadata.is_file() {
            continue;
        }
        let Ok(text) = std::fs::read(&file) else { continue };
        read.push(name);
        for line in text.lines() {
            let line = line.split(|byte| *byte == b'#').next().unwrap_or_default().trim();
            let Ok(id) = ObjectId::from_hex(line) else { continue };
            // Git peels each name to a commit; names of no commit here are skipped.
            if let Ok(object) = repo.find_object(id)
                && let Ok(commit) = object.peel_to_commit()
            {
                commits.insert(commit.id);
            }
        }
    }
    Ok((commits, read))
}

/// Abbreviated shas and commit details, looked up once per commit.
struct Names<'repo> {
    repo: &'repo gix::Repository,
    abbreviated: HashMap<ObjectId, String>,
    infos: BTreeMap<String, CommitInfo>,
}

impl<'repo> Names<'repo> {
    fn new(repo: &'repo gix::Repository) -> Self {
        Self { repo, abbreviated: HashMap::new(), infos: BTreeMap::new() }
    }

    /// The commit's abbreviated sha, recording its details.
    fn commit(&mut self, id: ObjectId) -> Result<String> {
        if let Some(short) = self.abbreviated.get(&id) {
            return Ok(short.clone());
        }
        let commit = self.repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
        let author = commit.author().map_err(|err| Error::git("commit author", err))?;
        let time = author.time().map_err(|err| Error::git("commit author date", err))?;
        let short = abbreviate(commit.id());
        self.infos.insert(
            short.clone(),
            CommitInfo {
                author: Person { name: utf8(author.name), email: utf8(author.email) },
                time: iso_time(time),
                subject: subject(commit.message_raw_sloppy()),
            },
        );
        self.abbreviated.insert(id, short.clone());
        Ok(short)
    }

    /// `"<sha> <subject>"` of each commit.
    fn lines(&mut self, ids: &[ObjectId]) -> Result<Vec<String>> {
        ids.iter()
            .map(|id| {
                let short = self.commit(*id)?;
                let subject = self.infos.get(&short).map(|info| info.subject.clone()).unwrap_or_default();
                Ok(format!("{short} {subject}"))
            })
            .collect()
    }
}
