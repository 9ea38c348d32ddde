//! The counts a reader gets from git's human listings by counting their entries (the sweep and the
//! counterexample carry counts this way, not as numbers).

/// One document of a side: where it came from (tool name or git command line) and its exact text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Doc<'a> {
    /// `repo.brief`, `git status -sb`, ...
    pub(crate) source: &'a str,
    /// The exact text the model reads.
    pub(crate) text: &'a str,
}

/// A count a listing can yield.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Count {
    Ahead,
    Behind,
    Staged,
    Unstaged,
    Untracked,
    Conflicted,
    Stashes,
    Drifted,
    Uninitialized,
}

/// What a `git status` listing says (long or short format).
#[derive(Debug, Default, PartialEq, Eq)]
struct Status {
    ahead_behind: Option<(usize, usize)>,
    staged: usize,
    unstaged: usize,
    untracked: usize,
    conflicted: usize,
}

/// The value of `count` in `doc`, if `doc` is a git listing that yields it.
pub(crate) fn count(doc: &Doc<'_>, count: Count) -> Option<usize> {
    let source = doc.source;
    if let Some(status) = status(doc) {
        return match count {
            Count::Ahead => status.ahead_behind.map(|(ahead, _)| ahead),
            Count::Behind => status.ahead_behind.map(|(_, behind)| behind),
            Count::Staged => Some(status.staged),
            Count::Unstaged => Some(status.unstaged),
            Count::Untracked => Some(status.untracked),
            Count::Conflicted => Some(status.conflicted),
            _ => None,
        };
    }
    let lines = || doc.text.lines();
    match count {
        Count::Staged | Count::Unstaged | Count::Untracked | Count::Conflicted if tool_short_status(doc).is_some() => {
            let status = tool_short_status(doc)?;
            Some(match count {
                Count::Staged => status.staged,
                Count::Unstaged => status.unstaged,
                Count::Untracked => status.untracked,
                _ => status.conflicted,
            })
        }
        Count::Stashes if source.starts_with("git stash list") => {
            Some(lines().filter(|line| line.starts_with("stash@{")).count())
        }
        Count::Drifted if source.starts_with("git submodule status") => {
            Some(lines().filter(|line| line.starts_with('+')).count())
        }
        Count::Uninitialized if source.starts_with("git submodule status") => {
            Some(lines().filter(|line| line.starts_with('-')).count())
        }
        Count::Drifted | Count::Uninitialized if submodule_marks(doc).is_some() => {
            let mark = if count == Count::Drifted { '+' } else { '-' };
            submodule_marks(doc).map(|marks| marks.iter().filter(|(m, _)| *m == mark).count())
        }
        Count::Ahead | Count::Behind => {
            let (ahead, behind) = if source.starts_with("git rev-list --left-right --count") {
                let mut numbers = doc.text.split_whitespace().map(str::parse::<usize>);
                let behind = numbers.next()?.ok()?;
                (numbers.next()?.ok()?, behind)
            } else if source.starts_with("git branch") {
                current_branch_tracking(doc.text)?
            } else {
                return None;
            };
            Some(if count == Count::Ahead { ahead } else { behind })
        }
        _ => None,
    }
}

/// What the brief's text format adds to a short-status line of a submodule checked out at another commit than
/// recorded (`git status`'s words).
const NEW_COMMITS: &str = " (new commits)";

/// The submodules the tools' text format lists with `git submodule status` marks (`+` checked out elsewhere, `-` not
/// initialised, `U` in conflict), as (mark, path): a `submodules 4: +libs/a -libs/b Ulibs/c` line, or a line of
/// marks alone (`+libs/a -libs/b`), plus `+` for each short-status line ending in ` (new commits)` (` M libs/a (new
/// commits)`). `None` without any, or when a `submodules` line gives its counts as numbers (a cut list:
/// `submodules 40 (drifted 12): ...`), or when `doc` is no tool's text (a diff's `+line` is no mark).
pub(crate) fn submodule_marks<'a>(doc: &Doc<'a>) -> Option<Vec<(char, &'a str)>> {
    let text = doc.text;
    if !doc.source.contains('.') || doc.source.starts_with("git ") || text.starts_with('{') {
        return None;
    }
    let marked = |word: &str| word.len() > 1 && "+-U".contains(&word[..1]) && !word.starts_with("UU");
    let mut marks = Vec::new();
    let mut found = false;
    for line in text.lines() {
        let list = if let Some(rest) = line.strip_prefix("submodules ") {
            let (head, list) = rest.split_once(": ")?;
            if head.contains('(') {
                return None;
            }
            list
        } else if !line.starts_with("-> ") && !line.is_empty() && line.split(' ').all(marked) {
            line
        } else {
            if let Some(path) = line.strip_suffix(NEW_COMMITS).and_then(|rest| rest.get(3..)) {
                found = true;
                marks.push(('+', path));
            }
            continue;
        };
        found = true;
        marks.extend(list.split(' ').filter(|word| marked(word)).map(|word| (word.as_bytes()[0] as char, &word[1..])));
    }
    found.then_some(marks)
}

/// A tool's text format (`repo.brief`, `repo.status`) listing a few entries as `git status --short` lines (`UU
/// path`, `M  path`, ` M path`, `?? path`), counted; `None` for JSON or when no such line is there.
fn tool_short_status(doc: &Doc<'_>) -> Option<Status> {
    if !doc.source.starts_with("repo.") || doc.text.starts_with('{') {
        return None;
    }
    let mut status = Status::default();
    let mut any = false;
    let letters = b"AMDRTCU";
    for line in doc.text.lines() {
        let bytes = line.as_bytes();
        if bytes.len() < 4 || bytes[2] != b' ' {
            continue;
        }
        let counted = match (bytes[0], bytes[1]) {
            (b'?', b'?') => &mut status.untracked,
            (b'U', b'U') | (b'A', b'A') | (b'D', b'D') | (b'A' | b'D', b'U') | (b'U', b'A' | b'D') => {
                &mut status.conflicted
            }
            (x, b' ') if letters.contains(&x) => &mut status.staged,
            (b' ', y) if letters.contains(&y) => &mut status.unstaged,
            _ => continue,
        };
        *counted += 1;
        any = true;
    }
    any.then_some(status)
}

/// `Some(true)` when `doc` is a `git status` listing with no entry at all.
pub(crate) fn clean(doc: &Doc<'_>) -> Option<bool> {
    status(doc).map(|status| status.staged + status.unstaged + status.untracked + status.conflicted == 0)
}

/// Parses `doc` if it is the output of `git status` (long) or `git status -s...` (short).
fn status(doc: &Doc<'_>) -> Option<Status> {
    let source = doc.source;
    if source == "git status" {
        Some(long_status(doc.text))
    } else if source.starts_with("git status -s") || source.starts_with("git status --short") {
        Some(short_status(doc.text))
    } else {
        None
    }
}

/// `git status` long format: entries are tab-indented lines under their section header.
fn long_status(text: &str) -> Status {
    let mut status = Status { ahead_behind: long_ahead_behind(text), ..Status::default() };
    let mut section: Option<&mut usize> = None;
    for line in text.lines() {
        if line.starts_with('\t') {
            if let Some(count) = section.as_deref_mut() {
                *count += 1;
            }
        } else if line.ends_with(':') && !line.starts_with(' ') {
            section = match line {
                "Changes to be committed:" => Some(&mut status.staged),
                "Changes not staged for commit:" => Some(&mut status.unstaged),
                "Untracked files:" => Some(&mut status.untracked),
                "Unmerged paths:" => Some(&mut status.conflicted),
                _ => None,
            };
        }
    }
    status
}

/// Ahead and behind from git's sentences about the upstream.
fn long_ahead_behind(text: &str) -> Option<(usize, usize)> {
    let number_after = |marker: &str| -> Option<usize> {
        let rest = &text[text.find(marker)? + marker.len()..];
        let rest = rest.trim_start_matches(|c: char| !c.is_ascii_digit());
        rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    };
    if text.contains("Your branch is up to date with") {
        Some((0, 0))
    } else if text.contains("Your branch is ahead of") {
        Some((number_after("Your branch is ahead of")?, 0))
    } else if text.contains("Your branch is behind") {
        Some((0, number_after("Your branch is behind")?))
    } else if text.contains("have diverged") {
        let ahead = number_after("and have ")?;
        Some((ahead, number_after(&format!("and have {ahead} and "))?))
    } else {
        None
    }
}

/// `git status -sb`: the `##` line, then one `XY path` line per entry.
fn short_status(text: &str) -> Status {
    let mut status = Status::default();
    for line in text.lines() {
        if let Some(branch) = line.strip_prefix("## ") {
            status.ahead_behind = branch.contains("...").then(|| bracket_ahead_behind(branch));
            continue;
        }
        let bytes = line.as_bytes();
        let (Some(&x), Some(&y)) = (bytes.first(), bytes.get(1)) else { continue };
        match (x, y) {
            (b'?', b'?') => status.untracked += 1,
            (b'!', b'!') => {}
            (b'U', _) | (_, b'U') | (b'A', b'A') | (b'D', b'D') => status.conflicted += 1,
            _ => {
                status.staged += usize::from(x != b' ');
                status.unstaged += usize::from(y != b' ');
            }
        }
    }
    status
}

/// Ahead and behind from a `## branch...upstream [ahead 2, behind 3]` line (`git status -sb` and the tools' text
/// format), when `text` has one naming an upstream.
pub(crate) fn branch_line(text: &str) -> Option<(usize, usize)> {
    let line = text.lines().find_map(|line| line.strip_prefix("## "))?;
    line.contains("...").then(|| bracket_ahead_behind(line))
}

/// `[ahead 2, behind 3]` (either part may be missing: then it is 0).
fn bracket_ahead_behind(text: &str) -> (usize, usize) {
    let number_after = |marker: &str| -> usize {
        text.find(marker)
            .and_then(|at| text[at + marker.len()..].split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
            .unwrap_or(0)
    };
    (number_after("ahead "), number_after("behind "))
}

/// `git branch -vv`: the current branch's `[upstream: ahead 2, behind 3]` right after its sha.
fn current_branch_tracking(text: &str) -> Option<(usize, usize)> {
    let line = text.lines().find(|line| line.starts_with("* "))?;
    let mut words = line.split_whitespace().skip(3);
    let first = words.next()?;
    if !first.starts_with('[') {
        return None;
    }
    let bracket = &line[line.find('[')?..=line.find(']')?];
    if bracket.contains(": gone]") {
        return None;
    }
    Some(bracket_ahead_behind(bracket))
}

#[cfg(test)]
mod tests {
    use super::{Count, count};
    use crate::listing::Doc;

    fn doc<'a>(source: &'a str, text: &'a str) -> Doc<'a> {
        Doc { source, text }
    }

    #[test]
    fn counts_come_from_git_listings() {
        let long = "On branch main\nYour branch and 'origin/main' have diverged,\nand have 2 and 3 different commits each, respectively.\n\nChanges to be committed:\n  (use \"git restore --staged <file>...\" to unstage)\n\tmodified:   a\n\tnew file:   b\n\nUntracked files:\n\tc/\n";
        assert_eq!(count(&doc("git status", long), Count::Ahead), Some(2));
        assert_eq!(count(&doc("git status", long), Count::Behind), Some(3));
        assert_eq!(count(&doc("git status", long), Count::Staged), Some(2));
        assert_eq!(count(&doc("git status", long), Count::Untracked), Some(1));
        let short = "## main...origin/main [behind 3]\nUU src/main.c\nM  a\n M b\nMM c\n?? d\n";
        assert_eq!(count(&doc("git status -sb", short), Count::Ahead), Some(0));
        assert_eq!(count(&doc("git status -sb", short), Count::Behind), Some(3));
        assert_eq!(count(&doc("git status -sb", short), Count::Conflicted), Some(1));
        assert_eq!(count(&doc("git status -sb", short), Count::Staged), Some(2));
        assert_eq!(count(&doc("git status -sb", short), Count::Unstaged), Some(2));
        let branches = "  fix/y 6604f4c fix(y): patch y\n* main  272b1a8 [origin/main: ahead 2, behind 3] Second\n";
        assert_eq!(count(&doc("git branch -vv", branches), Count::Behind), Some(3));
        let rev_list = "3\t2\n";
        assert_eq!(
            count(&doc("git rev-list --left-right --count @{upstream}...HEAD", rev_list), Count::Ahead),
            Some(2)
        );
        let stashes = "stash@{0}: On main: a\nstash@{1}: On main: b\n";
        assert_eq!(count(&doc("git stash list", stashes), Count::Stashes), Some(2));
        assert_eq!(count(&doc("git log -n 10", stashes), Count::Stashes), None);
        let text = "## main\nsubmodules 4: +libs/drifted -libs/uninit\n";
        assert_eq!(count(&doc("repo.brief", text), Count::Drifted), Some(1));
        assert_eq!(count(&doc("repo.brief", text), Count::Uninitialized), Some(1));
        let cut = "submodules 40 (drifted 12, uninitialized 3): +a -b\n";
        assert_eq!(count(&doc("repo.brief", cut), Count::Drifted), None, "the numbers say it");
        let short = "## main\n M libs/drifted (new commits)\n-libs/uninit\nd837b5b chore: add submodules\n-> repo.x\n";
        assert_eq!(count(&doc("repo.brief", short), Count::Drifted), Some(1));
        assert_eq!(count(&doc("repo.brief", short), Count::Uninitialized), Some(1));
        assert_eq!(count(&doc("repo.brief", short), Count::Unstaged), Some(1));
        assert_eq!(count(&doc("repo.brief", short), Count::Staged), Some(0), "commit and hint lines are no entries");
        assert_eq!(count(&doc("repo.brief", "## main\nunstaged 1\n"), Count::Unstaged), None);
    }
}
