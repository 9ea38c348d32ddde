//! Content search for `repo.search` (`added`, `addedRegex`): git's pickaxe, `git log -S` and
//! `git log -G`, on one commit at a time.
//!
//! A commit is diffed against its first parent (a root commit, or a shallow boundary, against the
//! empty tree) with renames as `diff.renames` configures them, within the search's path (before
//! rename detection, as a pathspec is). A merge is never diffed: `git log` shows no diff for it by
//! default, so neither `-S` nor `-G` lists it. For each changed file:
//!
//! - `-S<string>` ([`Pickaxe::Count`]): the number of non-overlapping occurrences of the string
//!   (case-sensitive bytes) differs between the old and the new blob (an absent side holds none). A
//!   file whose content did not change (a pure rename) is never counted. Binary files are counted
//!   too, as git counts them.
//! - `-G<regex>` ([`Pickaxe::Lines`]): a line the line diff (Myers, git's default) adds or removes
//!   matches the regex (case-sensitive; `.` and `[^…]` classes aside, `^` and `$` anchor at line
//!   ends, as git's `REG_NEWLINE`; each line is matched with its newline, as git matches it). A
//!   binary side (a NUL byte in the first 8000 bytes, git's test) makes the file not match, as git
//!   skips it without `--text`.
//!
//! The regex is the `regex` crate's syntax (Perl-like), not POSIX ERE: the common forms (`a|b`,
//! `x+`, `[a-z]`, `\bword\b`) mean the same; POSIX classes are written `[[:alpha:]]` in both.
//! `.gitattributes` (`binary`, `-diff`, textconv) is not read: the NUL test alone says binary.
//!
//! Blobs larger than [`MAX_BLOB_BYTES`] are not read; the caller is told how many were skipped.

use gix::ObjectId;
use gix::bstr::ByteSlice;

use crate::compare::side::Entry;
use crate::error::{Error, InvalidReason, Result};
use crate::interrupt::Interrupt;

/// The largest blob read for a content search, in bytes (16 MiB); larger ones are skipped and
/// counted.
pub(crate) const MAX_BLOB_BYTES: u64 = 16 << 20;

/// The most bytes the compiled `addedRegex` may take (1 MiB), so a hostile pattern cannot take the
/// memory of the process.
const MAX_REGEX_BYTES: usize = 1 << 20;

/// The longest `added` string or `addedRegex` pattern, in bytes.
pub(crate) const MAX_PATTERN_BYTES: usize = 1024;

/// How git's binary test reads a blob: a NUL byte within its first this many bytes.
const BINARY_PROBE_BYTES: usize = 8000;

/// What a commit's diff must change.
#[derive(Debug, Clone)]
pub(crate) enum Pickaxe {
    /// `git log -S<string>`: the number of occurrences of these bytes in a file.
    Count(Vec<u8>),
    /// `git log -G<regex>`: an added or removed line matching it.
    Lines(regex::bytes::Regex),
}

/// The files of one commit where the pickaxe matched.
#[derive(Debug, Default)]
pub(crate) struct Hit {
    /// The paths (the new path of a rename), in path order.
    pub(crate) files: Vec<String>,
    /// How many blobs were over [`MAX_BLOB_BYTES`] and not read.
    pub(crate) oversized: usize,
}

impl Pickaxe {
    /// The pickaxe for `added` (`-S`) or `added_regex` (`-G`); `None` when neither is given.
    ///
    /// # Errors
    /// `invalid_query` when both are given, one is empty or longer than [`MAX_PATTERN_BYTES`], or
    /// the regex does not compile (bad syntax, or larger than 1 MiB compiled).
    pub(crate) fn new(added: Option<&str>, added_regex: Option<&str>) -> Result<Option<Self>> {
        let invalid = |message: String| Error::invalid(InvalidReason::InvalidQuery, message);
        for (name, text) in [("added", added), ("addedRegex", added_regex)] {
            match text {
                Some("") => return Err(invalid(format!("{name} is empty"))),
                Some(text) if text.len() > MAX_PATTERN_BYTES => {
                    return Err(invalid(format!("{name} is longer than {MAX_PATTERN_BYTES} bytes")));
                }
                _ => {}
            }
        }
        match (added, added_regex) {
            (Some(_), Some(_)) => {
                Err(invalid("give either added (git log -S) or addedRegex (git log -G), not both".into()))
            }
            (Some(text), None) => Ok(Some(Self::Count(text.as_bytes().to_vec()))),
            (None, Some(pattern)) => regex::bytes::RegexBuilder::new(pattern)
                .multi_line(true)
                .size_limit(MAX_REGEX_BYTES)
                .dfa_size_limit(MAX_REGEX_BYTES)
                .build()
                .map(|regex| Some(Self::Lines(regex)))
                .map_err(|err| invalid(format!("addedRegex {pattern:?} does not compile: {err}"))),
            (None, None) => Ok(None),
        }
    }

    /// The files of the commit from the tree `parent` (`None`: the empty tree) to the tree `tree`,
    /// within `path`, where this pickaxe matches.
    ///
    /// # Errors
    /// [`Error::GitRead`] when a tree or blob cannot be read; [`Error::Cancelled`] once `interrupt`
    /// is triggered.
    pub(crate) fn matches(
        &self,
        repo: &gix::Repository,
        parent: Option<ObjectId>,
        tree: ObjectId,
        path: Option<&str>,
        interrupt: &Interrupt,
    ) -> Result<Hit> {
        let mut hit = Hit::default();
        for change in crate::diff::tree_changes(repo, parent, tree, path, interrupt)? {
            interrupt.check()?;
            let (old, new) = (change.old.as_ref().filter(readable), change.new.as_ref().filter(readable));
            if old.is_none() && new.is_none() {
                continue;
            }
            // An unmodified pair (a pure rename) changes nothing, as git decides before reading.
            if let (Some(old), Some(new)) = (old, new)
                && old.id == new.id
            {
                continue;
            }
            let (Some(before), Some(after)) = (read(repo, old, &mut hit)?, read(repo, new, &mut hit)?) else {
                continue;
            };
            if self.changed(&before, &after) {
                hit.files.push(change.path().to_str_lossy().into_owned());
            }
        }
        hit.files.sort();
        Ok(hit)
    }

    /// Whether going from `before` to `after` (an absent side is empty) matches.
    fn changed(&self, before: &[u8], after: &[u8]) -> bool {
        match self {
            Self::Count(needle) => count(before, needle) != count(after, needle),
            Self::Lines(regex) => {
                let binary = |data: &[u8]| data[..data.len().min(BINARY_PROBE_BYTES)].contains(&0);
                if binary(before) || binary(after) {
                    return false;
                }
                changed_lines_match(before, after, regex)
            }
        }
    }
}

/// Whether an entry is content git's pickaxe reads: a blob (file, executable or symlink), not a
/// submodule's commit.
fn readable(entry: &&Entry) -> bool {
    entry.mode != gix::index::entry::Mode::COMMIT
}

/// The content of `entry` (empty when absent); `None` (and counted) when it is over the cap.
fn read(repo: &gix::Repository, entry: Option<&Entry>, hit: &mut Hit) -> Result<Option<Vec<u8>>> {
    let Some(entry) = entry else { return Ok(Some(Vec::new())) };
    let header = repo.find_header(entry.id).map_err(|err| Error::git("blob", err))?;
    if header.size() > MAX_BLOB_BYTES {
        hit.oversized += 1;
        return Ok(None);
    }
    Ok(Some(repo.find_blob(entry.id).map_err(|err| Error::git("blob", err))?.detach().data))
}

/// The non-overlapping occurrences of `needle` (not empty) in `haystack`, as git counts them.
fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack.find_iter(needle).count()
}

/// Whether a line the Myers line diff of `before` and `after` adds or removes matches `regex`.
fn changed_lines_match(before: &[u8], after: &[u8], regex: &regex::bytes::Regex) -> bool {
    use gix::diff::blob::{Algorithm, Diff, InternedInput, sources::byte_lines};
    let input = InternedInput::new(byte_lines(before), byte_lines(after));
    let diff = Diff::compute(Algorithm::Myers, &input);
    diff.hunks().any(|hunk| {
        let removed = hunk.before.clone().map(|at| input.before[at as usize]);
        let added = hunk.after.clone().map(|at| input.after[at as usize]);
        removed.chain(added).any(|token| regex.is_match(input.interner[token]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occurrences_are_counted_without_overlap_as_git_counts_them() {
        assert_eq!(count(b"aaaa", b"aa"), 2);
        assert_eq!(count(b"foo bar foo", b"foo"), 2);
        assert_eq!(count(b"", b"foo"), 0);
    }

    #[test]
    fn a_moved_line_matches_the_regex_but_keeps_its_count() {
        // The diff keeps `a b c` and moves `foo` (git: `-foo` at the top, `+foo` at the bottom).
        let (before, after) = (b"foo\na\nb\nc\n".as_slice(), b"a\nb\nc\nfoo\n".as_slice());
        let count = Pickaxe::new(Some("foo"), None).expect("valid").expect("given");
        let lines = Pickaxe::new(None, Some("fo+")).expect("valid").expect("given");
        assert!(!count.changed(before, after));
        assert!(lines.changed(before, after));
        assert!(!lines.changed(b"foo\nx\n", b"foo\ny\n"), "the unchanged line is not in the diff");
    }

    #[test]
    fn anchors_hold_at_line_ends_and_binary_sides_never_match_a_regex() {
        let anchored = Pickaxe::new(None, Some("^bar$")).expect("valid").expect("given");
        assert!(anchored.changed(b"x\n", b"x\nbar\n"));
        assert!(!anchored.changed(b"x\n", b"x\nfoobar\n"));
        let any = Pickaxe::new(None, Some("bin")).expect("valid").expect("given");
        assert!(!any.changed(b"", b"bin\0ary\n"));
        let count = Pickaxe::new(Some("bin"), None).expect("valid").expect("given");
        assert!(count.changed(b"", b"bin\0ary\n"), "-S counts in binary files");
    }

    #[test]
    fn bad_patterns_are_refused() {
        assert!(Pickaxe::new(Some("a"), Some("b")).is_err());
        assert!(Pickaxe::new(Some(""), None).is_err());
        assert!(Pickaxe::new(None, Some("(unclosed")).is_err());
        assert!(Pickaxe::new(None, Some(&"a".repeat(MAX_PATTERN_BYTES + 1))).is_err());
        assert!(Pickaxe::new(None, Some("(?:a{1000}){1000}")).is_err(), "a regex over the size limit");
        assert!(Pickaxe::new(None, None).expect("nothing").is_none());
    }
}
