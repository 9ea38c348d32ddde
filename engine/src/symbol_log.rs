//! Symbol history for `repo.history` with `symbol`: the commits that changed one function, type or
//! method of a file, as `git log -L :<name>:<file>` lists them.
//!
//! # The range at the start
//!
//! The file at the walk's start is parsed by the semantic diff's tree-sitter grammars
//! ([`crate::semantic::parse`]); the symbol is the one whose qualified name (`Flags::new`,
//! `Client.get`) or own name equals `symbol`. Two or more matches (a top-level `new` and `A::new`
//! for `new`) are an error that lists them, never a guess. The tracked range starts at the
//! symbol's first line that holds its name (so a Python decorator or a C return type on the line
//! above stays out, as git's funcname line does) and runs, as git's funcname range does, up to the
//! line before the next line git's funcname rule takes for a function start (the file's `diff`
//! driver: `diff=rust`, `diff=python`, `diff=cpp`, a configured `xfuncname`, else git's default
//! rule), or to the end of the file. Unlike git it never ends inside the symbol: a nested `fn`
//! line in a body does not cut it, and a container (an `impl`, a class) keeps its members.
//!
//! # The walk
//!
//! As git's `line-log.c`: commits newest committer date first; each commit's ranges are mapped to
//! its parents through the zero-context line diff (Myers, sliders moved down, as `xdiff` without
//! heuristics): a diff hunk that overlaps a range is the commit's, and is replaced by its parent
//! side; the other lines of the range shift. A commit is listed when a hunk touches its ranges.
//! A merge whose file matches one parent's within the ranges passes them to that parent only and
//! is not listed. When the parent lacks the path, rename detection (`diff.renames`) over the whole
//! commit finds its old path; a file without one was added there, and the walk ends on it. A pure
//! rename changes no line and is not listed, as in git. Blobs over [`MAX_BLOB_BYTES`] end the
//! walk as unreadable.

use std::collections::{BinaryHeap, HashMap};

use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use gix::index::entry::Mode;
use serde::Serialize;

use crate::ancestry::Shallow;
use crate::compare::changes::{AttributeFiles, Attributes};
use crate::compare::side::Entry;
use crate::error::{Error, InvalidReason, Result};
use crate::interrupt::Interrupt;
use crate::semantic::{Kind, Parsed, Symbol};

/// The largest blob the walk reads, in bytes (16 MiB).
const MAX_BLOB_BYTES: u64 = 16 << 20;

/// How long the parse of the start's file may take before it gives up (5 s).
const PARSE_SECONDS: u64 = 5;

/// Line ranges, 0-based and half-open, sorted and disjoint (git's `range_set`).
type Ranges = Vec<(u32, u32)>;

/// A diff hunk's line ranges (0-based, half-open): the parent's side, then the commit's.
type Paired = ((u32, u32), (u32, u32));

/// The symbol the walk follows, as the parser found it at the start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Found {
    /// Its name qualified by its containers, as the parser names it (`Flags::new`).
    pub name: String,
    /// What it declares (`fn`, `struct`, `impl`, ...).
    pub kind: Kind,
    /// The tracked lines at the start, 1-based and inclusive (`"12-40"`): from the line holding its
    /// name to the line before the next function start by git's funcname rule, or the file's end.
    pub lines: String,
}

/// A commit that changed the symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shown {
    /// The commit.
    pub(crate) id: ObjectId,
    /// The file's path in this commit.
    pub(crate) path: BString,
    /// The diff hunks that touched the range, as git's hunk header numbers them: `-a,n +c,m`
    /// (1-based starts; for an empty side, the line before it), against the first parent that
    /// changed it.
    pub(crate) hunks: Vec<String>,
}

/// The result of a walk: the symbol, the commits (at most `want`) and whether more exist.
pub(crate) struct Walked {
    pub(crate) found: Found,
    pub(crate) shown: Vec<Shown>,
    pub(crate) more: bool,
}

/// Walks from `tip` the history of `symbol` in the file `path`, listing up to `want` commits.
///
/// # Errors
/// `invalid_query` when the file is not at `tip`, cannot be parsed (no grammar for its language,
/// too large, too many errors), or holds no symbol or several of that name; [`Error::GitRead`]
/// when an object cannot be read; [`Error::Cancelled`] once `interrupt` is triggered.
pub(crate) fn walk(
    repo: &gix::Repository,
    tip: ObjectId,
    path: &str,
    symbol: &str,
    want: usize,
    interrupt: &Interrupt,
) -> Result<Walked> {
    let invalid = |message: String| Error::invalid(InvalidReason::InvalidQuery, message);
    let tip_tree = tree_of(repo, tip)?;
    let Some(entry) = lookup(repo, tip_tree, path.as_bytes().as_bstr())? else {
        return Err(invalid(format!("symbol: {path:?} is not a file at the walk's start")));
    };
    let text = read(repo, entry.id)?;
    let attribute_files = AttributeFiles::new(repo, Attributes::Worktree, [path.as_bytes().as_bstr()])?;
    let language = crate::diff::semantic::languages::Languages::new(repo, &attribute_files)
        .of(path.as_bytes().as_bstr())?
        .ok_or_else(|| invalid(format!("symbol: no parser for the language of {path:?}")))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(PARSE_SECONDS);
    let symbols = match crate::semantic::parse(language, &text, deadline) {
        Parsed::Symbols(symbols) => symbols,
        other => return Err(invalid(format!("symbol: {path:?} could not be parsed ({other:?})"))),
    };
    let symbol = pick(&symbols, symbol, path)?;
    let rule = crate::diff::funcname::Drivers::new(repo, &attribute_files).rule(Some(&entry), None)?;
    let lines: Vec<&[u8]> = text.lines_with_terminator().collect();
    let range = extent(&lines, symbol, &rule);
    let found = Found { name: symbol.name.clone(), kind: symbol.kind, lines: format!("{}-{}", range.0 + 1, range.1) };
    let (shown, more) = follow(repo, tip, BString::from(path), vec![range], want, interrupt)?;
    Ok(Walked { found, shown, more })
}

/// The one symbol whose qualified or own name is `wanted`; none or several are an error (the
/// several listed).
fn pick<'a>(symbols: &'a [Symbol], wanted: &str, path: &str) -> Result<&'a Symbol> {
    let matches: Vec<&Symbol> =
        symbols.iter().filter(|symbol| symbol.name == wanted || symbol.leaf == wanted).collect();
    match matches[..] {
        [one] => Ok(one),
        [] => Err(Error::invalid(
            InvalidReason::InvalidQuery,
            format!("symbol: no function, type or method {wanted:?} in {path:?} at the walk's start"),
        )),
        _ => {
            let listed: Vec<String> = matches
                .iter()
                .map(|symbol| {
                    format!("{} {} (lines {}-{})", symbol.kind.label(), symbol.name, symbol.start_line, symbol.end_line)
                })
                .collect();
            Err(Error::Invalid {
                reason: InvalidReason::InvalidQuery,
                message: format!(
                    "symbol: {wanted:?} names {} symbols in {path:?}: {}; give the qualified name",
                    matches.len(),
                    listed.join(", ")
                ),
                floor: None,
                suggestions: matches.iter().map(|symbol| symbol.name.clone()).collect(),
            })
        }
    }
}

/// The tracked range of `symbol` (0-based, half-open): from its first line holding its name to
/// the line before the next funcname line after it ends, or the end of the file.
fn extent(lines: &[&[u8]], symbol: &Symbol, rule: &crate::diff::funcname::Rule) -> (u32, u32) {
    let first = symbol.start_line.saturating_sub(1);
    let last = symbol.end_line.max(symbol.start_line);
    let start = (first..last)
        .find(|&line| lines.get(line as usize).is_some_and(|text| holds_word(text, symbol.leaf.as_bytes())))
        .unwrap_or(first);
    let count = u32::try_from(lines.len()).unwrap_or(u32::MAX);
    let end = (last..count)
        .find(|&line| rule.function_text(&String::from_utf8_lossy(lines[line as usize])).is_some())
        .unwrap_or(count);
    (start, end.max(start + 1).min(count.max(start + 1)))
}

/// Whether `text` holds `word` with no identifier byte on either side.
fn holds_word(text: &[u8], word: &[u8]) -> bool {
    if word.is_empty() {
        return false;
    }
    let ident = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_';
    text.find_iter(word).any(|at| {
        let before = at.checked_sub(1).and_then(|i| text.get(i)).is_none_or(|&byte| !ident(byte));
        let after = text.get(at + word.len()).is_none_or(|&byte| !ident(byte));
        before && after
    })
}

/// What a commit passes to one parent: the file's path there and the ranges, or nothing.
struct Candidate {
    parent: ObjectId,
    path: BString,
    ranges: Ranges,
    /// The touched hunks `(parent, target)`, empty when the parent matches within the ranges.
    touched: Vec<Paired>,
    /// The parent has the file (under `path`): the ranges are followed there.
    present: bool,
}

/// git's line-log walk from `tip`; returns up to `want` commits and whether more exist.
fn follow(
    repo: &gix::Repository,
    tip: ObjectId,
    path: BString,
    ranges: Ranges,
    want: usize,
    interrupt: &Interrupt,
) -> Result<(Vec<Shown>, bool)> {
    let shallow = Shallow::read(repo)?;
    let mut queue: BinaryHeap<(i64, std::cmp::Reverse<u64>, ObjectId)> = BinaryHeap::new();
    let mut pending: HashMap<ObjectId, (BString, Ranges)> = HashMap::new();
    let mut seq = 0u64;
    let mut push = |queue: &mut BinaryHeap<_>, id: ObjectId| -> Result<()> {
        let time = repo.find_commit(id).map_err(|err| Error::git("commit", err))?.time().map_or(0, |time| time.seconds);
        seq += 1;
        queue.push((time, std::cmp::Reverse(seq), id));
        Ok(())
    };
    pending.insert(tip, (path, ranges));
    push(&mut queue, tip)?;
    let mut shown = Vec::new();
    while let Some((_, _, id)) = queue.pop() {
        interrupt.check()?;
        let Some((path, ranges)) = pending.remove(&id) else { continue };
        if ranges.is_empty() {
            continue;
        }
        let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
        let tree = commit.tree_id().map_err(|err| Error::git("commit tree", err))?.detach();
        let parents = shallow.parents(&commit);
        let Some(entry) = lookup(repo, tree, path.as_bstr())? else { continue };
        let mut candidates = Vec::with_capacity(parents.len().max(1));
        if parents.is_empty() {
            candidates.push(candidate(repo, None, tree, &entry, &ranges, interrupt)?);
        }
        for &parent in &parents {
            candidates.push(candidate(repo, Some(parent), tree, &entry, &ranges, interrupt)?);
        }
        let changed = if parents.len() > 1 {
            match candidates.iter().position(|candidate| candidate.touched.is_empty()) {
                // This parent takes all the blame: follow it alone.
                Some(same) => {
                    let candidate = candidates.swap_remove(same);
                    candidates = vec![candidate];
                    false
                }
                None => true,
            }
        } else {
            candidates.iter().any(|candidate| !candidate.touched.is_empty())
        };
        if changed {
            let hunks = candidates
                .iter()
                .find(|candidate| !candidate.touched.is_empty())
                .map_or_else(Vec::new, |c| c.touched.iter().map(|&(parent, target)| header(parent, target)).collect());
            if shown.len() == want {
                return Ok((shown, true));
            }
            shown.push(Shown { id, path: entry.path.clone(), hunks });
        }
        for candidate in candidates {
            if !candidate.present || candidate.ranges.is_empty() || candidate.parent.is_null() {
                continue;
            }
            match pending.get_mut(&candidate.parent) {
                Some((_, ranges)) => *ranges = union(ranges, &candidate.ranges),
                None => {
                    pending.insert(candidate.parent, (candidate.path, candidate.ranges));
                    push(&mut queue, candidate.parent)?;
                }
            }
        }
    }
    Ok((shown, false))
}

/// The ranges `ranges` of `entry` (in the commit whose tree is `tree`) map to in `parent` (`None`:
/// a root commit), with the hunks that touched them.
fn candidate(
    repo: &gix::Repository,
    parent: Option<ObjectId>,
    tree: ObjectId,
    entry: &Entry,
    ranges: &Ranges,
    interrupt: &Interrupt,
) -> Result<Candidate> {
    let null = ObjectId::null(repo.object_hash());
    let Some(parent) = parent else {
        let target = read(repo, entry.id)?;
        let (ranges, touched) = map_across(ranges, &hunks(b"", &target));
        return Ok(Candidate { parent: null, path: entry.path.clone(), ranges, touched, present: false });
    };
    let parent_tree = tree_of(repo, parent)?;
    let old = match lookup(repo, parent_tree, entry.path.as_bstr())? {
        Some(old) => Some(old),
        None => renamed_from(repo, parent_tree, tree, entry.path.as_bstr(), interrupt)?,
    };
    let Some(old) = old else {
        let target = read(repo, entry.id)?;
        let (ranges, touched) = map_across(ranges, &hunks(b"", &target));
        return Ok(Candidate { parent, path: entry.path.clone(), ranges, touched, present: false });
    };
    if old.id == entry.id {
        return Ok(Candidate { parent, path: old.path, ranges: ranges.clone(), touched: vec![], present: true });
    }
    let (before, after) = (read(repo, old.id)?, read(repo, entry.id)?);
    let (mapped, touched) = map_across(ranges, &hunks(&before, &after));
    Ok(Candidate { parent, path: old.path, ranges: mapped, touched, present: true })
}

/// The old side of the rename (git's rename detection, as `diff.renames` sets it) that made `path`
/// in `tree` from `parent_tree`, if any.
fn renamed_from(
    repo: &gix::Repository,
    parent_tree: ObjectId,
    tree: ObjectId,
    path: &gix::bstr::BStr,
    interrupt: &Interrupt,
) -> Result<Option<Entry>> {
    let changes = crate::diff::tree_changes(repo, Some(parent_tree), tree, None, interrupt)?;
    Ok(changes.into_iter().find_map(|change| match (change.old, change.new) {
        (Some(old), Some(new))
            if new.path == path
                && old.path != path
                && matches!(old.mode, Mode::FILE | Mode::FILE_EXECUTABLE | Mode::SYMLINK) =>
        {
            Some(old)
        }
        _ => None,
    }))
}

/// The blob entry at `path` in `tree`, or `None` (absent, a directory or a submodule).
fn lookup(repo: &gix::Repository, tree: ObjectId, path: &gix::bstr::BStr) -> Result<Option<Entry>> {
    let tree = repo.find_tree(tree).map_err(|err| Error::git("tree", err))?;
    let Some(found) = tree.lookup_entry_by_path(path.to_str_lossy().as_ref()).map_err(|err| Error::git("tree", err))?
    else {
        return Ok(None);
    };
    let mode = found.mode();
    if !mode.is_blob() {
        return Ok(None);
    }
    let mode = if mode.is_executable() {
        Mode::FILE_EXECUTABLE
    } else if mode.is_link() {
        Mode::SYMLINK
    } else {
        Mode::FILE
    };
    Ok(Some(Entry { path: path.to_owned(), mode, id: found.object_id() }))
}

/// The tree of the commit `id`.
fn tree_of(repo: &gix::Repository, id: ObjectId) -> Result<ObjectId> {
    let commit = repo.find_commit(id).map_err(|err| Error::git("commit", err))?;
    Ok(commit.tree_id().map_err(|err| Error::git("commit tree", err))?.detach())
}

/// The content of the blob `id`, refused over [`MAX_BLOB_BYTES`].
fn read(repo: &gix::Repository, id: ObjectId) -> Result<Vec<u8>> {
    let header = repo.find_header(id).map_err(|err| Error::git("blob", err))?;
    if header.size() > MAX_BLOB_BYTES {
        return Err(Error::git_text("blob", format!("blob {id} is over {MAX_BLOB_BYTES} bytes")));
    }
    Ok(repo.find_blob(id).map_err(|err| Error::git("blob", err))?.detach().data)
}

/// The zero-context line diff from `before` to `after` as `(parent, target)` line ranges (0-based,
/// half-open), Myers with sliders moved down, as git's `xdiff` without heuristics gives them.
fn hunks(before: &[u8], after: &[u8]) -> Vec<Paired> {
    use gix::diff::blob::{Algorithm, Diff, InternedInput, sources::byte_lines};
    let input = InternedInput::new(byte_lines(before), byte_lines(after));
    let mut diff = Diff::compute(Algorithm::Myers, &input);
    diff.postprocess_no_heuristic(&input);
    diff.hunks().map(|hunk| ((hunk.before.start, hunk.before.end), (hunk.after.start, hunk.after.end))).collect()
}

/// git's hunk header numbers of a hunk: `-a,n +c,m`.
fn header(parent: (u32, u32), target: (u32, u32)) -> String {
    let side = |(start, end): (u32, u32)| {
        let count = end - start;
        format!("{},{count}", if count == 0 { start } else { start + 1 })
    };
    format!("-{} +{}", side(parent), side(target))
}

/// git's `range_set_map_across_diff`: the ranges in the parent, and the hunks touching `ranges`.
fn map_across(ranges: &Ranges, diff: &[Paired]) -> (Ranges, Vec<Paired>) {
    // diff_ranges_filter_touched
    let mut touched = Vec::new();
    let mut j = 0;
    'hunks: for &(parent, target) in diff {
        while target.0 > ranges[j].1 {
            j += 1;
            if j == ranges.len() {
                break 'hunks;
            }
        }
        let overlap = !(target.1 <= ranges[j].0 || ranges[j].1 <= target.0);
        if overlap {
            touched.push((parent, target));
        }
    }
    let targets: Ranges = touched.iter().map(|&(_, target)| target).collect();
    let parents: Ranges = touched.iter().map(|&(parent, _)| parent).collect();
    let rest = difference(ranges, &targets);
    let shifted = shift(&rest, diff);
    (union(&shifted, &parents), touched)
}

/// git's `range_set_difference`: `a` less `b`.
fn difference(a: &Ranges, b: &Ranges) -> Ranges {
    let mut out = Vec::new();
    let mut j = 0;
    for &(mut start, end) in a {
        while start < end {
            while j < b.len() && start >= b[j].1 {
                j += 1;
            }
            if j >= b.len() || end < b[j].0 {
                out.push((start, end));
                break;
            }
            if start >= b[j].0 {
                start = b[j].1;
            } else if end > b[j].0 {
                if start < b[j].0 {
                    out.push((start, b[j].0));
                }
                start = b[j].1;
            }
        }
    }
    out
}

/// git's `range_set_shift_diff`: the ranges moved by the lines the hunks before them add or remove.
fn shift(ranges: &Ranges, diff: &[Paired]) -> Ranges {
    let mut out = Vec::with_capacity(ranges.len());
    let (mut j, mut offset) = (0, 0i64);
    for &(start, end) in ranges {
        while j < diff.len() && start >= diff[j].1.0 {
            let (parent, target) = diff[j];
            offset += i64::from(parent.1 - parent.0) - i64::from(target.1 - target.0);
            j += 1;
        }
        let moved = |line: u32| u32::try_from(i64::from(line) + offset).unwrap_or(0);
        out.push((moved(start), moved(end)));
    }
    out
}

/// git's `range_set_union`: sorted, merged, empty ranges dropped.
fn union(a: &Ranges, b: &Ranges) -> Ranges {
    let mut all: Ranges = a.iter().chain(b).copied().filter(|(start, end)| start < end).collect();
    all.sort_unstable();
    let mut out: Ranges = Vec::with_capacity(all.len());
    for (start, end) in all {
        match out.last_mut() {
            Some(last) if last.1 >= start => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deletion_inside_the_range_touches_it_and_one_at_its_edge_does_not() {
        // Lines 2-5 (0-based [2, 6)); a deletion of parent lines [3, 4) lands at target line 3.
        let ranges = vec![(2, 6)];
        let (parent, touched) = map_across(&ranges, &[((3, 4), (3, 3))]);
        assert_eq!(touched.len(), 1);
        assert_eq!(parent, vec![(2, 7)]);
        let (parent, touched) = map_across(&ranges, &[((6, 8), (6, 6))]);
        assert!(touched.is_empty(), "a deletion right after the range is not its");
        assert_eq!(parent, vec![(2, 6)]);
    }

    #[test]
    fn lines_above_the_range_shift_it_and_a_replaced_range_maps_to_the_old_lines() {
        let (parent, touched) = map_across(&vec![(10, 20)], &[((0, 0), (0, 3))]);
        assert!(touched.is_empty());
        assert_eq!(parent, vec![(7, 17)]);
        let (parent, touched) = map_across(&vec![(10, 20)], &[((12, 13), (12, 15))]);
        assert_eq!(touched, vec![((12, 13), (12, 15))]);
        assert_eq!(parent, vec![(10, 18)]);
    }

    #[test]
    fn hunk_headers_number_lines_as_git_does() {
        assert_eq!(header((3, 3), (3, 5)), "-3,0 +4,2");
        assert_eq!(header((0, 2), (0, 1)), "-1,2 +1,1");
    }

    #[test]
    fn names_are_words_not_substrings() {
        assert!(holds_word(b"fn parse(x)", b"parse"));
        assert!(!holds_word(b"fn parse_low(x)", b"parse"));
        assert!(!holds_word(b"fn reparse(x)", b"parse"));
    }
}
