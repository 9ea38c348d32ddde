//! `file.blame` (design.md#tools, ours): who last changed each line of a file at a revision, as
//! `git blame` answers it.
//!
//! The history walk and the line attribution are gix's (`gix::Repository::blame_file`, the `blame`
//! feature), with git's defaults: the diff algorithm of `diff.algorithm` (Myers unless configured),
//! whole-file renames followed at 50% similarity (git's `find_rename`), no `-M`/`-C` line moves, no
//! `--since`. Lines are git's: split after each `\n`, a last line without newline counts.
//!
//! Revisions to ignore are honoured as git honours them, which gix does not do: after gix has
//! blamed the lines, each line that landed on a listed commit is handed to that commit's parents
//! the way git's `pass_blame_to_parent` with `ignore_diffs` does (see [`super::ignore`]): the line
//! is matched to a line of the parent's version (git's fingerprint heuristic), and blame goes on
//! from there; a line no parent line matches stays on the ignored commit, as git leaves it
//! (`unblamable`). The lists come from the files of `blame.ignoreRevsFile` (git's rule: each value
//! adds a file, empty values are skipped as git 2.47 skips them, relative paths start at the work
//! tree's root; a configured file that cannot be read is an error, as git refuses to blame then);
//! when that key is not set, from `.git-blame-ignore-revs` at the work tree's root, the convention
//! GitHub applies on its own (git needs the key). Names that are not full hex object names, or name
//! no commit here, are skipped. Which revisions were skipped for the lines shown is said in
//! `ignoredRevs`.
//!
//! Without `rev`, the work-tree file is blamed, as `git blame FILE` does: a commit made in memory
//! only (never written) stands for the work tree, with HEAD (and, during a merge, the `MERGE_HEAD`
//! commits) as parents, the work-tree file converted as git converts it for a commit (end of line
//! and `ident` as attributes say; filter drivers never run) and, like git's index-based fake
//! commit, staged deletions dropped so that an uncommitted `git mv` is followed. Lines that came
//! from it are git's "Not Committed Yet": commit `0000000`, author
//! `Not Committed Yet <not.committed.yet>`, subject `Version of PATH from PATH`; their time is the
//! file's modification time (git writes the time of the blame). A bare repository, or a given
//! `rev`, blames that commit.
//!
//! Shallow clones are blamed as git blames them: a boundary commit has no parents, so the lines
//! older than the clone are blamed on it, and its commit says `boundary` (as a root commit does,
//! git's `^` and porcelain `boundary`, unless `blame.showRoot` is set). Consecutive lines from one
//! commit, one original path and consecutive original lines form one range, as git's porcelain
//! groups them. The answer is cut to a token budget at whole ranges; `endLine` then names the last
//! line shown and `omitted.ranges` counts the ranges left out.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ops::RangeInclusive;
use std::path::Path;

use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use serde::Serialize;

use crate::ancestry::Shallow;
use crate::budget::{self, Budgeted, Measure, Omitted};
use crate::error::{Error, InvalidReason, Result};
use crate::facets::commits::Abbrev;
use crate::facets::{iso_time, subject, utf8};
use crate::history::Person;
use crate::revision::resolve_commit;

use super::ignore;
use super::origins::{History, LineOrigin};
use super::{big_file_threshold, too_large};

/// The ignore-revs file GitHub reads on its own; git reads it only when `blame.ignoreRevsFile`
/// names it.
pub const CONVENTIONAL_IGNORE_FILE: &str = ".git-blame-ignore-revs";

/// Asked ranges of at most this many lines carry each commit's message body (`commits.*.body`).
pub const BODY_RANGE_LINES: usize = 5;

/// Lines of a message body kept, blank lines not counted.
pub const BODY_LINES: usize = 5;

/// Bytes of a message body kept (UTF-8, line breaks counted).
pub const BODY_BYTES: usize = 400;

/// The abbreviated commit of lines not committed yet (git shows the null object id).
pub const NOT_COMMITTED: &str = "0000000";

/// Bytes of decoded objects kept while blaming: the walk reads each commit up to three times in a
/// row (as a suspect, as a parent, for its tree), which gix's object cache then serves without
/// inflating it again.
const OBJECT_CACHE_BYTES: usize = 2 * 1024 * 1024;

/// What to blame.
#[derive(Debug, Clone)]
pub struct Options {
    /// The file, revision and lines. Without a revision, the work-tree file on top of `HEAD`, as
    /// `git blame FILE` (a bare repository: `HEAD`).
    pub file: super::FileRange,
    /// Honour the ignore-revs files (default `true`); `false` blames as `git blame` without any.
    pub ignore_revs: bool,
}

/// The blame of a file's lines, possibly cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The full sha of the commit `rev` resolved to (HEAD's when the work tree was blamed).
    pub rev: String,
    /// The work-tree file was blamed (no `rev` given): lines not committed yet carry
    /// [`NOT_COMMITTED`]; absent means false.
    #[serde(skip_serializing_if = "crate::compact::is_false")]
    pub worktree: bool,
    /// The repository is a shallow clone: lines older than its history are blamed on a `boundary`
    /// commit; absent means false.
    #[serde(skip_serializing_if = "crate::compact::is_false")]
    pub shallow: bool,
    /// The path, as given.
    pub path: String,
    /// Lines in the whole file at `rev` (absent, i.e. 0, for an empty file).
    #[serde(skip_serializing_if = "crate::compact::is_zero")]
    pub total_lines: usize,
    /// First line of the range (1-based); absent for an empty file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<usize>,
    /// Last line shown; absent when no line is shown (an empty file, or no range fitted the
    /// budget).
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
    /// The ignore-revs files read (as configured, or the conventional one); absent when none was
    /// read.
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
    /// Changed by an ignored revision and matched to no line of its parents, so blamed on it as git
    /// does; absent means false.
    #[serde(skip_serializing_if = "crate::compact::is_false")]
    pub unblamable: bool,
}

/// What a range's commit says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitInfo {
    /// The author, `"Name <email>"`, as the repository's mailmap maps it (as `git blame` shows it).
    pub author: Person,
    /// The author date, ISO 8601 with the author's offset (as `git log --format=%aI`).
    pub time: String,
    /// The first line of the message.
    pub subject: String,
    /// When at most [`BODY_RANGE_LINES`] lines were asked for: the message after its subject, blank
    /// lines left out, at most [`BODY_LINES`] lines and [`BODY_BYTES`] bytes (whole lines; a longer
    /// first line is cut), so that "why did this line change" needs no second call; absent
    /// otherwise, or when the message is its subject only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// `true` when `body` stops before the message's end (`commit.details` has it whole); absent
    /// means false.
    #[serde(skip_serializing_if = "crate::compact::is_false")]
    pub body_cut: bool,
    /// The commit has no parents as git sees them (a root commit, or a shallow clone's boundary),
    /// so blame stops there: git's `^` mark and porcelain `boundary` (none when `blame.showRoot` is
    /// set); absent means false.
    #[serde(skip_serializing_if = "crate::compact::is_false")]
    pub boundary: bool,
}

fn is_one(value: &usize) -> bool {
    *value == 1
}

/// The uncut blame.
#[derive(Debug, Clone)]
pub struct Full {
    rev: String,
    worktree: bool,
    shallow: bool,
    path: String,
    total_lines: usize,
    /// The requested range, 1-based inclusive, clamped to the file (`end == start - 1` for an empty
    /// file).
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
            worktree: self.worktree,
            shallow: self.shallow,
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
    let file = &options.file;
    file.check()?;
    let shallow = Shallow::read(repo)?;
    let mut repo = repo.clone();
    crate::objects::read_packs_first(&mut repo, OBJECT_CACHE_BYTES);
    let (blamed_id, commit_id, data, uncommitted, rev) = match file.rev.as_deref() {
        None if repo.workdir().is_some() => {
            // The commit standing for the work tree lives in memory only.
            repo = repo.with_object_memory();
            let head = resolve_commit(&repo, "HEAD")?;
            let (fake, data) = super::worktree::commit(&repo, head, &file.path)?;
            (fake, head, data, Some(fake), "the work tree")
        }
        rev => {
            let rev = rev.unwrap_or("HEAD");
            let commit_id = resolve_commit(&repo, rev)?;
            let data = blob_at(&repo, commit_id, &file.path, rev)?;
            (commit_id, commit_id, data, None, rev)
        }
    };
    if super::is_binary(&data) {
        return Err(Error::invalid(
            InvalidReason::BinaryFile,
            format!(
                "{:?} is binary in {rev} (a NUL byte in its first 8000 bytes): it has no lines to blame",
                file.path
            ),
        ));
    }
    let total_lines = count_lines(&data);
    let (start, end) = file.lines(total_lines)?;

    let (ignore_list, ignore_revs_files) =
        if options.ignore_revs { ignore_list(&repo)? } else { (HashSet::new(), Vec::new()) };
    let history = History { repo: &repo, shallow: &shallow };
    let path = BString::from(file.path.as_str());
    let mut lines = if end >= start {
        let requested = u32::try_from(start).unwrap_or(u32::MAX)..=u32::try_from(end).unwrap_or(u32::MAX);
        history.blame_lines(blamed_id, path.as_ref(), &[requested])?
    } else {
        BTreeMap::new()
    };
    let skipped =
        if ignore_list.is_empty() { HashMap::new() } else { pass_over_ignored(&history, &ignore_list, &mut lines)? };

    let show_root = repo.config_snapshot().boolean("blame.showRoot").unwrap_or(false);
    let mut names = Names::new(&repo, &shallow, uncommitted, show_root);
    names.with_body = end >= start && end - start < BODY_RANGE_LINES;
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
        worktree: uncommitted.is_some(),
        shallow: shallow.is_shallow(),
        path: file.path.clone(),
        total_lines,
        start,
        ranges,
        commits: names.infos,
        skipped: range_skipped,
        ignore_revs_files,
    })
}

/// The message after its first line, blank lines left out, bounded by [`BODY_LINES`] and
/// [`BODY_BYTES`]; `None` when nothing follows the subject. The flag says whether lines were left
/// out.
fn body(message: &[u8]) -> (Option<String>, bool) {
    let text = utf8(message);
    let mut lines = text.lines().skip(1).map(str::trim_end).filter(|line| !line.trim().is_empty());
    let mut kept = String::new();
    let mut count = 0;
    let cut = loop {
        let Some(line) = lines.next() else { break false };
        let room = BODY_BYTES.saturating_sub(kept.len() + usize::from(count > 0));
        if count == BODY_LINES || (count > 0 && line.len() > room) {
            break true;
        }
        if count > 0 {
            kept.push('\n');
        }
        if line.len() > room {
            let mut end = room;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            kept.push_str(&line[..end]);
            break true;
        }
        kept.push_str(line);
        count += 1;
    };
    ((!kept.is_empty()).then_some(kept), cut)
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
    // The size comes from the object's header, so a huge file is refused before its content is read.
    let header = repo.find_header(entry.object_id()).map_err(|err| Error::git("the file's blob", err))?;
    let threshold = big_file_threshold(repo);
    if header.size() > threshold {
        return Err(too_large(path, header.size(), threshold, rev));
    }
    Ok(repo.find_blob(entry.object_id()).map_err(|err| Error::git("the file's blob", err))?.detach().data)
}

/// Lines as git counts them: split after each `\n`, a last line without newline counts.
pub(crate) fn count_lines(data: &[u8]) -> usize {
    let newlines = data.iter().filter(|byte| **byte == b'\n').count();
    newlines + usize::from(!data.is_empty() && !data.ends_with(b"\n"))
}

/// Hands every line blamed on an ignored commit over to that commit's parents, as git does, until
/// none is left on one (or only unblamable ones). Returns, per blamed line, the ignored commits
/// passed over.
fn pass_over_ignored(
    history: &History<'_>,
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
            let handed = ignore::hand_to_parents(history, commit, path.as_ref(), &targets)?;
            // Per parent origin, the parent lines to blame next, then the blame of each.
            let mut wanted: BTreeMap<(ObjectId, BString), BTreeSet<u32>> = BTreeMap::new();
            for guess in handed.iter().flatten() {
                wanted.entry((guess.commit, guess.path.clone())).or_default().insert(guess.line);
            }
            let mut blamed_in_parent: HashMap<(ObjectId, BString), BTreeMap<u32, LineOrigin>> = HashMap::new();
            for ((parent, parent_path), parent_lines) in wanted {
                let ranges: Vec<RangeInclusive<u32>> = parent_lines.iter().map(|line| line + 1..=line + 1).collect();
                let result = history.blame_lines(parent, parent_path.as_ref(), &ranges)?;
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
                                Error::git_text(
                                    "the file's history (blame)",
                                    "a line handed to a parent was not blamed",
                                )
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

/// The ignore-revs files as named (git's `blame.ignoreRevsFile` values, else the conventional
/// `.git-blame-ignore-revs`), each with where it is and whether git requires it (a configured one).
fn ignore_files(repo: &gix::Repository) -> Vec<(String, Option<std::path::PathBuf>, bool)> {
    let Some(work_dir) = repo.workdir() else {
        return Vec::new();
    };
    let configured = repo.config_snapshot().plumbing().strings("blame.ignoreRevsFile");
    let (names, required): (Vec<String>, bool) = match configured {
        // Git 2.47 skips empty values (its documentation says they reset the list; its code does not).
        Some(values) => (values.iter().filter(|value| !value.is_empty()).map(|value| utf8(value)).collect(), true),
        None => (vec![CONVENTIONAL_IGNORE_FILE.to_owned()], false),
    };
    names
        .into_iter()
        .map(|name| {
            let file = match name.strip_prefix("~/") {
                Some(rest) => std::env::var_os("HOME").map(|home| Path::new(&home).join(rest)),
                None => Some(work_dir.join(&name)),
            };
            (name, file, required)
        })
        .collect()
}

/// What the files a blame reads besides the repository's own hold right now, for keying cached
/// answers: each ignore-revs file's name and `mailmap.file`, with a digest of the content (or that
/// it cannot be read). A file outside the repository (`~/...`, an absolute path) is not watched, so
/// answers that depend on it are told apart by this key instead. A file is hashed again only when
/// its metadata (size, times, inode) changed since it was last hashed (see [`content_digest`]).
pub fn files_key(repo: &gix::Repository) -> String {
    let mut key = String::new();
    for (name, file, _) in ignore_files(repo) {
        let state = file.as_deref().map_or_else(|| "no HOME".to_owned(), content_digest);
        key.push_str(&format!("{name}={state};"));
    }
    if let Ok(Some(file)) = repo.config_snapshot().trusted_path("mailmap.file") {
        key.push_str(&format!("mailmap.file={};", content_digest(&file)));
    }
    key
}

/// Files hashed at most, remembered by path; beyond it the memory starts over.
const DIGESTS_KEPT: usize = 1024;

/// The SHA-256 of the file's content in hex, or `unreadable: <kind>`. The digest is remembered with
/// the file's stat fields and served from memory while they stay the same; one taken while the
/// file's times were within [`crate::cache::RACY_WINDOW`] of the clock is not remembered (a change
/// within the same clock tick would keep equal times).
fn content_digest(file: &Path) -> String {
    use sha2::{Digest, Sha256};
    use std::sync::{Mutex, PoisonError};
    static DIGESTS: Mutex<Option<HashMap<std::path::PathBuf, (u64, String)>>> = Mutex::new(None);
    let stamp = match std::fs::metadata(file) {
        Ok(metadata) => crate::cache::fingerprint::file_stamp(&metadata),
        Err(err) => return format!("unreadable: {:?}", err.kind()),
    };
    if let Some(stamp) = stamp {
        let digests = DIGESTS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((known, digest)) = digests.as_ref().and_then(|digests| digests.get(file))
            && *known == stamp
        {
            return digest.clone();
        }
    }
    let digest: String = match crate::guard::read_capped(
        file,
        crate::guard::Symlinks::Follow,
        crate::guard::LIST_FILE_CAP,
        "a mailmap or ignore-revs file",
    ) {
        Ok(Some(bytes)) => faster_hex::hex_string(&Sha256::digest(&bytes)),
        Ok(None) => return "unreadable: NotFound".to_owned(),
        Err(reason) => return format!("unreadable: {reason}"),
    };
    // Remembered only when the file had not changed while it was read.
    let unchanged = std::fs::metadata(file).ok().and_then(|metadata| crate::cache::fingerprint::file_stamp(&metadata));
    if let Some(stamp) = stamp.filter(|stamp| unchanged == Some(*stamp)) {
        let mut digests = DIGESTS.lock().unwrap_or_else(PoisonError::into_inner);
        let digests = digests.get_or_insert_with(HashMap::new);
        if digests.len() >= DIGESTS_KEPT {
            digests.clear();
        }
        digests.insert(file.to_path_buf(), (stamp, digest.clone()));
    }
    digest
}

/// The ignore list: the commits named in the ignore-revs files, and the files read, as named.
///
/// # Errors
/// [`Error::GitRead`] when a file named by `blame.ignoreRevsFile` cannot be read: git 2.47 refuses
/// to blame then (`fatal: could not open object name list`).
fn ignore_list(repo: &gix::Repository) -> Result<(HashSet<ObjectId>, Vec<String>)> {
    let mut commits = HashSet::new();
    let mut read = Vec::new();
    for (name, file, required) in ignore_files(repo) {
        let text = file.as_deref().map(|file| read_ignore_file(repo, file, required));
        let text = match text {
            Some(Ok(text)) => text,
            // The conventional file is optional.
            _ if !required => continue,
            Some(Err(err)) => {
                return Err(Error::git_text(
                    "blame.ignoreRevsFile",
                    format!(
                        "blame.ignoreRevsFile names {name:?}, which cannot be read ({err}); git refuses to blame \
                         too (could not open object name list): fix or unset the setting, or pass ignoreRevs: false"
                    ),
                ));
            }
            None => {
                return Err(Error::git_text(
                    "blame.ignoreRevsFile",
                    format!("blame.ignoreRevsFile names {name:?} under a home directory, but HOME is not set"),
                ));
            }
        };
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

/// The content of an ignore-revs file, checked before it is read: a regular file (a directory is
/// not a list either: git fails to read it) of at most [`crate::guard::LIST_FILE_CAP`] bytes, never
/// a FIFO or a device. A configured file is read as git reads it, through a symbolic link (but not
/// outside the allowed roots when the repository's own configuration names it); the conventional
/// one, which git does not read, is a work-tree file like `.mailmap` and not read through a link.
fn read_ignore_file(repo: &gix::Repository, file: &Path, configured: bool) -> std::result::Result<Vec<u8>, String> {
    use crate::guard::{Symlinks, read_capped};
    let symlinks = if configured {
        crate::guard::configured_file_allowed(repo, "blame.ignoreRevsFile", file)
            .map_err(|refusal| refusal.into_item().reason)?;
        Symlinks::Follow
    } else {
        Symlinks::Refuse
    };
    read_capped(file, symlinks, crate::guard::LIST_FILE_CAP, "an ignore-revs file")?
        .ok_or_else(|| format!("{} does not exist", file.display()))
}

/// Abbreviated shas and commit details, looked up once per commit.
struct Names<'repo> {
    repo: &'repo gix::Repository,
    shallow: &'repo Shallow,
    /// The in-memory commit standing for the work tree, shown as [`NOT_COMMITTED`].
    uncommitted: Option<ObjectId>,
    /// `blame.showRoot`: root commits are not boundaries.
    show_root: bool,
    /// The repository's mailmap (`.mailmap`, `mailmap.file`, `mailmap.blob`), applied to authors as
    /// `git blame` applies it.
    mailmap: gix::mailmap::Snapshot,
    abbrev: Abbrev,
    abbreviated: HashMap<ObjectId, String>,
    infos: BTreeMap<String, CommitInfo>,
    /// Whether commits carry their message body (a small asked range).
    with_body: bool,
}

impl<'repo> Names<'repo> {
    fn new(
        repo: &'repo gix::Repository,
        shallow: &'repo Shallow,
        uncommitted: Option<ObjectId>,
        show_root: bool,
    ) -> Self {
        let mailmap = crate::guard::open_mailmap(repo);
        let abbrev = Abbrev::new(repo);
        Self {
            repo,
            shallow,
            uncommitted,
            show_root,
            mailmap,
            abbrev,
            abbreviated: HashMap::new(),
            infos: BTreeMap::new(),
            with_body: false,
        }
    }

    /// The commit's abbreviated sha, recording its details.
    fn commit(&mut self, id: ObjectId) -> Result<String> {
        if let Some(short) = self.abbreviated.get(&id) {
            return Ok(short.clone());
        }
        let commit = self.repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
        let author = commit.author().map_err(|err| Error::git("commit author", err))?;
        let time = author.time().map_err(|err| Error::git("commit author date", err))?;
        let short = if self.uncommitted == Some(id) { NOT_COMMITTED.to_owned() } else { self.abbrev.id(id) };
        let parentless = self.shallow.is_boundary(&id) || commit.parent_ids().next().is_none();
        let (body, body_cut) = if self.with_body { body(commit.message_raw_sloppy()) } else { (None, false) };
        self.infos.insert(
            short.clone(),
            CommitInfo {
                // `git blame` maps authors through the mailmap (`git log`'s `%aN <%aE>`).
                author: Person::mapped(&self.mailmap, author),
                time: iso_time(time),
                subject: subject(commit.message_raw_sloppy()),
                body,
                body_cut,
                boundary: parentless && !self.show_root,
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
