//! Text renderings of `commit.details`, `worktree.changes` and `diff.text`.

use std::borrow::Cow;

use super::{Lines, Options, esc};
use crate::budget::Budgeted;
use crate::diff::text::{FileEntry, Inclusion, Report as DiffReport};
use crate::diff::worktree::Report as ChangesReport;
use crate::diff::{FileStat, Status, Totals, commit::Details};

/// The letter `git diff --name-status` uses.
fn letter(status: Status) -> char {
    match status {
        Status::Added => 'A',
        Status::Modified => 'M',
        Status::Deleted => 'D',
        Status::Renamed => 'R',
        Status::Copied => 'C',
        Status::TypeChange => 'T',
        Status::Unmerged => 'U',
    }
}

/// `path` or `from -> path` (each written by `quote`), then `+3 -1` or `binary`, and the marks.
fn stat_line(stat: &FileStat, quote: &dyn Fn(&str) -> String) -> String {
    let mut line = match &stat.from {
        Some(from) => format!("{} -> {}", quote(from), quote(&stat.path)),
        None => quote(&stat.path),
    };
    if stat.binary {
        line.push_str(" binary");
    } else {
        line.push_str(&format!(" +{} -{}", stat.additions.unwrap_or(0), stat.deletions.unwrap_or(0)));
    }
    if stat.non_utf8 {
        line.push_str(" non-utf8");
    }
    if let Some(similarity) = stat.similarity {
        line.push_str(&format!(" {similarity}%"));
    }
    if let (Some(old), Some(new)) = (&stat.old_mode, &stat.new_mode) {
        line.push_str(&format!(" mode {old}->{new}"));
    }
    line
}

/// `3 files changed, +10 -2`, and `1 file changed, +1 -2` for one file, in the words of
/// `git diff --stat`'s last line (English plural: `0 files changed`).
fn totals_line(totals: &Totals) -> String {
    let files = if totals.files == 1 { "file" } else { "files" };
    format!("{} {files} changed, +{} -{}", totals.files, totals.additions, totals.deletions)
}

/// `commit.details`: `git show --numstat`-like: header lines, the message, one `X path +a -d` line
/// per file, totals.
pub fn commit_details(result: &Budgeted<Details>, options: &Options) -> String {
    let details = &result.data;
    let quote = |path: &str| options.path(path);
    let mut out = Lines::default();
    out.line(format!("commit {}", details.sha));
    match details.parents.len() {
        0 => out.line("root commit"),
        _ => out.line(format!("parents {}", details.parents.join(" "))),
    }
    let author = &details.author;
    out.line(format!("Author: {} <{}> {}", esc(&author.name), esc(&author.email), esc(&author.time)));
    if let Some(committer) = &details.committer {
        out.line(format!("Commit: {} <{}> {}", esc(&committer.name), esc(&committer.email), esc(&committer.time)));
    }
    if let Some(note) = &details.note {
        out.line(format!("note: {}", esc(note)));
    }
    out.line("");
    out.line(format!("    {}", esc(&details.subject)));
    if !details.body.is_empty() {
        out.line("");
        for line in details.body.lines() {
            out.line(format!("    {}", esc(line)));
        }
    }
    out.more(&result.omitted, "bodyChars", "characters of the message");
    out.line("");
    for file in &details.files {
        out.line(format!("{} {}", letter(file.status), stat_line(file, &quote)));
    }
    out.more(&result.omitted, "files", "files");
    out.line(totals_line(&details.totals));
    if let Some(stash) = &details.stash {
        out.line("");
        let name = esc(&stash.name);
        out.line(format!("{name} index (git diff {name}^1 {name}^2):"));
        for file in &stash.index.files {
            out.line(format!("{} {}", letter(file.status), stat_line(file, &quote)));
        }
        out.more(&result.omitted, "stashIndexFiles", "files");
        out.line(totals_line(&stash.index.totals));
        if let Some(untracked) = &stash.untracked {
            out.line("");
            out.line(format!("{name} untracked (git show {name}^3):"));
            for file in &untracked.files {
                out.line(format!("{} {}", letter(file.status), stat_line(file, &quote)));
            }
            out.more(&result.omitted, "stashUntrackedFiles", "files");
            out.line(totals_line(&untracked.totals));
        }
    }
    out.finish()
}

/// `worktree.changes`: porcelain-like lines with counts: `UU path`, `X  path +a -d` (staged),
/// ` Y path +a -d` (unstaged), `?? path`, each list with its cut notice; `clean` when there is
/// nothing; then one `unreadable path: reason` line per item it could not read.
pub fn worktree_changes(result: &Budgeted<ChangesReport>, options: &Options) -> String {
    let report = &result.data;
    let quote = |path: &str| options.status_path(path);
    let omitted = &result.omitted;
    let mut out = Lines::default();
    if report.bare {
        out.line("bare");
    }
    let counts = &report.counts;
    if counts.conflicted + counts.staged + counts.unstaged + counts.untracked == 0 && !report.bare {
        out.line("clean");
    }
    for path in &report.lists.conflicted {
        out.line(format!("UU {}", quote(path)));
    }
    out.more(omitted, "conflicted", "conflicted");
    for file in &report.lists.staged {
        out.line(format!("{}  {}", letter(file.status), stat_line(file, &quote)));
    }
    out.more(omitted, "staged", "staged");
    for file in &report.lists.unstaged {
        out.line(format!(" {} {}", letter(file.status), stat_line(file, &quote)));
    }
    out.more(omitted, "unstaged", "unstaged");
    for path in &report.lists.untracked {
        out.line(format!("?? {}", quote(path)));
    }
    out.more(omitted, "untracked", "untracked");
    super::unreadable_lines(&mut out, options, &report.unreadable);
    out.finish()
}

/// `diff.text`: what was compared, one `X path +a -d` line per file (with `partial 2/5 hunks` or
/// `omitted` when its patch was cut), totals, one `unreadable path: reason` line per submodule the
/// work tree side could not read, then the patch itself, which `git apply` accepts.
pub fn diff_text(result: &Budgeted<DiffReport>, options: &Options) -> String {
    let report = &result.data;
    let mut out = Lines::default();
    let base = report.base.as_deref().map_or(Cow::Borrowed("(nothing)"), esc);
    let mut head = format!("# {base}..{}", esc(&report.head));
    if let Some(path) = &report.path {
        head.push_str(&format!(" -- {}", options.path(path)));
    }
    out.line(head);
    for file in &report.files {
        out.line(file_line(file, options));
    }
    out.more(&result.omitted, "files", "files");
    let totals = report.totals.unwrap_or_else(|| Totals::of(report.files.iter().map(|file| &file.stat)));
    out.line(totals_line(&totals));
    for item in &report.unreadable {
        out.line(format!("unreadable {}: {}", options.path(&item.path), esc(&item.error.reason)));
    }
    if report.truncated {
        out.line(format!(
            "patch cut: {} hunks left out of {} lines, {} bytes",
            super::cut(&result.omitted, "hunks"),
            *report.total_lines,
            *report.total_bytes
        ));
    }
    if !report.patch.is_empty() {
        out.0.push_str(&report.patch);
        if !report.patch.ends_with('\n') {
            out.0.push('\n');
        }
    }
    out.finish()
}

fn file_line(file: &FileEntry, options: &Options) -> String {
    let mut line = format!("{} {}", letter(file.stat.status), stat_line(&file.stat, &|path| options.path(path)));
    match file.in_patch {
        Some(Inclusion::Partial) => {
            line.push_str(&format!(" partial {}/{} hunks", file.hunks_shown.unwrap_or(0), *file.hunks));
        }
        Some(Inclusion::Omitted) => line.push_str(" omitted"),
        Some(Inclusion::Full) | None => {}
    }
    line
}

#[cfg(test)]
mod tests {
    use super::totals_line;
    use crate::diff::Totals;

    #[test]
    fn one_file_changed_is_singular_as_git_says_it() {
        let totals = |files| Totals { files, additions: 1, deletions: 2 };
        assert_eq!(totals_line(&totals(1)), "1 file changed, +1 -2");
        assert_eq!(totals_line(&totals(0)), "0 files changed, +1 -2");
        assert_eq!(totals_line(&totals(3)), "3 files changed, +1 -2");
    }
}
