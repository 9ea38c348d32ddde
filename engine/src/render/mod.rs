//! Terse text renderings of tool results (design.md#envelope, `format: "text"`), in git's own
//! idioms where they exist: `## main...origin/main [ahead 1]` branch lines, porcelain-like status
//! letters (`M  path`, `?? path`, `UU path`), `sha subject` commit lines, and `... 7 more commits`
//! wherever a budget cut a list.
//!
//! Each renderer is a plain function from a budgeted result to the exact text a model reads. They
//! belong to the engine because the token budget is fitted on what is returned: with
//! `format: "text"` the caller's `measure` counts these strings instead of the JSON. Counts stay
//! exact: every cut list ends with its cut notice, so the lines shown plus the notice give the
//! total.
//!
//! # Names from the repository
//!
//! No name can add a line. Paths are quoted as git quotes them under `core.quotePath`
//! ([`Options`]): in double quotes with C escapes (`"a\nb"`, `"caf\303\251"`) when they hold a
//! control character, `"`, `\` or, with `core.quotePath` true (git's default), a byte from 0x80;
//! porcelain-like lines (`?? path`) also quote a path with a space, as `git status --short` does.
//! Other repository strings (subjects, author names, ref names, stash and reflog messages) keep
//! their text with control characters written as C escapes. File contents shown as content
//! (`file.read`, the sides of `conflict.read`, a patch's lines) are the exception: they are the
//! file's own lines.

mod agents;
mod branch_stack;
mod collision;
mod conflict;
mod diff;
mod file;
mod fleet;
mod history;
mod preflight;
mod repo;
mod scope;
mod search;
mod semantic;
mod topology;

use std::borrow::Cow;
use std::fmt::Write as _;

pub use agents::agents_presence;
pub use branch_stack::branch_stack;
pub use collision::collisions;
pub use conflict::conflict_read;
pub use diff::{commit_details, diff_text, worktree_changes};
pub use file::{file_blame, file_read};
pub use fleet::{fleet_digest, fleet_radar};
pub use history::{history, reflog};
pub use preflight::conflict_preflight;
pub use repo::{brief, folder_brief, refs, status};
pub use scope::scope;
pub use search::search;
pub use semantic::{diff_semantic, diff_semantic_fallbacks};
pub use topology::{submodule_status, worktree_list};

use crate::budget::Omitted;
use crate::facets::worktree::{Change, ChangeKind};
use crate::lists::PathLists;
use crate::quote;

/// Hex digits a text rendering keeps of a full sha (the JSON carries it whole).
const TEXT_SHA_LEN: usize = 12;

/// How a text rendering writes the names a repository chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Whether a path's bytes from 0x80 are written in octal inside quotes, as git's
    /// `core.quotePath` asks; true by default, as in git. Control characters, `"` and `\` are
    /// quoted either way.
    pub quote_path: bool,
}

impl Default for Options {
    /// git's default: `core.quotePath` true.
    fn default() -> Self {
        Self { quote_path: true }
    }
}

impl Options {
    /// `path` as git's name lists write it (`git diff --name-status`, a patch's headers).
    fn path(&self, path: &str) -> String {
        quote::path("", path.as_bytes(), quote::Style { non_ascii: self.quote_path, space: false })
    }

    /// `path` as `git status --short` writes it: quoted also when it holds a space.
    fn status_path(&self, path: &str) -> String {
        quote::path("", path.as_bytes(), quote::Style { non_ascii: self.quote_path, space: true })
    }
}

impl crate::Repo {
    /// The text options of this repository: its `core.quotePath` from every configuration level git
    /// reads, true when it is not set.
    pub fn text_options(&self) -> Options {
        Options { quote_path: quote::quote_path_config(&self.git) }
    }
}

/// `text` with its control characters escaped, for repository strings that are not paths (see the
/// module docs).
fn esc(text: &str) -> Cow<'_, str> {
    quote::controls(text)
}

/// A text being built line by line.
#[derive(Default)]
struct Lines(String);

impl Lines {
    /// Appends one line. A line break inside `text` is escaped: every renderer escapes the
    /// repository's strings it writes, and this keeps one line one line should one be missed.
    fn line(&mut self, text: impl AsRef<str>) {
        let text = text.as_ref();
        if text.chars().any(|character| {
            matches!(character, '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{1c}'..='\u{1e}') || quote::breaks_lines(character)
        }) {
            self.0.push_str(&esc(text));
        } else {
            self.0.push_str(text);
        }
        self.0.push('\n');
    }

    /// Appends `... N more <noun>` when the budget cut `section`.
    fn more(&mut self, omitted: &Omitted, section: &str, noun: &str) {
        let count = cut(omitted, section);
        if count > 0 {
            self.line(format!("... {count} more {noun}"));
        }
    }

    /// The finished text; every line ends with a line break, as git's output does.
    fn finish(self) -> String {
        self.0
    }
}

/// Porcelain-like lines of one work-tree change listing, as `repo.status` and `repo.scope` share
/// it: `UU path`, staged `X  path`, unstaged ` X path`, `?? path`, each section followed by its cut
/// notice.
fn change_lists(out: &mut Lines, options: &Options, omitted: &Omitted, lists: &PathLists<Change>) {
    for path in &lists.conflicted {
        out.line(format!("UU {}", options.status_path(path)));
    }
    out.more(omitted, "conflicted", "conflicted");
    for change in &lists.staged {
        out.line(format!("{}  {}", change_letter(change.status), change_path(change, options)));
    }
    out.more(omitted, "staged", "staged");
    for change in &lists.unstaged {
        out.line(format!(" {} {}", change_letter(change.status), change_path(change, options)));
    }
    out.more(omitted, "unstaged", "unstaged");
    for path in &lists.untracked {
        out.line(format!("?? {}", options.status_path(path)));
    }
    out.more(omitted, "untracked", "untracked");
}

/// One `unreadable <path>: <reason>` line per item a status could not read (a submodule outside the
/// roots, a directory too deep to open), the path quoted as `git status --short` quotes it.
fn unreadable_lines(out: &mut Lines, options: &Options, items: &[crate::Unreadable]) {
    for item in items {
        out.line(format!("unreadable {}: {}", options.status_path(&item.path), esc(&item.error.reason)));
    }
}

/// An upstream as `git branch -vv` brackets it: `[origin/x: ahead 1, behind 2]`,
/// `[origin/x: gone]`, `[origin/x]`.
pub(super) fn upstream_marks(upstream: &crate::facets::refs::Upstream) -> String {
    let marks = tracking_marks(upstream.gone, upstream.ahead, upstream.behind);
    match marks.is_empty() {
        true => format!("[{}]", esc(&upstream.name)),
        false => format!("[{}: {marks}]", esc(&upstream.name)),
    }
}

/// git's tracking marks, those that apply, in git's order and joined with `, `: `gone`, `ahead N`,
/// `behind N` (`ahead 1, behind 2`); empty when none applies.
pub(super) fn tracking_marks(gone: bool, ahead: usize, behind: usize) -> String {
    let mut marks = Vec::new();
    if gone {
        marks.push("gone".to_owned());
    }
    if ahead > 0 {
        marks.push(format!("ahead {ahead}"));
    }
    if behind > 0 {
        marks.push(format!("behind {behind}"));
    }
    marks.join(", ")
}

/// Items the budget dropped from `section`.
fn cut(omitted: &Omitted, section: &str) -> usize {
    omitted.0.iter().find(|(name, _)| *name == section).map_or(0, |(_, count)| *count)
}

/// A full sha shortened for reading; abbreviated shas pass unchanged.
fn short(sha: &str) -> &str {
    &sha[..sha.len().min(TEXT_SHA_LEN)]
}

/// The letter `git status --short` uses for a change.
fn change_letter(kind: ChangeKind) -> char {
    match kind {
        ChangeKind::Added => 'A',
        ChangeKind::Modified => 'M',
        ChangeKind::Deleted => 'D',
        ChangeKind::Renamed => 'R',
        ChangeKind::TypeChange => 'T',
    }
}

/// `from -> path` for renames, else `path`, each quoted as `git status --short` quotes it.
fn change_path(change: &Change, options: &Options) -> String {
    match &change.from {
        Some(from) => format!("{} -> {}", options.status_path(from), options.status_path(&change.path)),
        None => options.status_path(&change.path),
    }
}

/// Where HEAD is, as `git status -sb` prints it: `## main...origin/main [ahead 1, behind 2]`,
/// `## main` without an upstream, `## HEAD (detached at abc1234)`, `## No commits yet on main`.
struct BranchLine<'a> {
    branch: Option<&'a str>,
    detached: bool,
    unborn: bool,
    sha: Option<&'a str>,
    upstream: Option<Tracking<'a>>,
}

/// The upstream part of a `##` line: `...origin/main [ahead 1, behind 2]` or
/// `...origin/main [gone]`.
struct Tracking<'a> {
    name: &'a str,
    ahead: usize,
    behind: usize,
    gone: bool,
}

impl<'a> From<&'a crate::facets::refs::Upstream> for Tracking<'a> {
    fn from(upstream: &'a crate::facets::refs::Upstream) -> Self {
        Tracking { name: &upstream.name, ahead: upstream.ahead, behind: upstream.behind, gone: upstream.gone }
    }
}

impl BranchLine<'_> {
    fn render(&self) -> String {
        let mut line = String::from("## ");
        match (self.branch, self.detached, self.unborn) {
            (Some(branch), _, true) => {
                let _ = write!(line, "No commits yet on {}", esc(branch));
            }
            (Some(branch), false, false) => line.push_str(&esc(branch)),
            _ => {
                let _ = write!(line, "HEAD (detached at {})", self.sha.map_or("?", short));
            }
        }
        if let Some(upstream) = &self.upstream {
            let _ = write!(line, "...{}", esc(upstream.name));
            let marks = tracking_marks(upstream.gone, upstream.ahead, upstream.behind);
            if !marks.is_empty() {
                let _ = write!(line, " [{marks}]");
            }
        }
        line
    }
}
