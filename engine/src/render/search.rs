//! Text rendering of `repo.search`.

use super::{Lines, Options, cut, esc};
use crate::budget::Budgeted;
use crate::search::Report;

/// `repo.search`: a count line (`# 12 matching commits`, with `(walked: <why>)` when the history
/// was walked, e.g. `(walked: commit index being built)`), a `stopped: ...` and a `skipped: ...`
/// line when a content search ran out of time or skipped large files, one line per match,
/// `sha date author: subject`, followed for a content search by `  files: a.rs, b.rs` (where the
/// content changed), most relevant first, then `... N more commits (budget)` for those
/// the budget cut and `... N more matching commits beyond the limit`.
pub fn search(result: &Budgeted<Report>, _options: &Options) -> String {
    let report = &result.data;
    let mut out = Lines::default();
    let mut head = format!("# {} matching commits", report.total);
    if let Some(walked) = &report.walked {
        head.push_str(&format!(" (walked: {})", esc(walked)));
    }
    out.line(head);
    if let Some(stopped) = &report.stopped {
        out.line(format!("stopped: {}", esc(stopped)));
    }
    if let Some(skipped) = &report.skipped {
        out.line(format!("skipped: {}", esc(skipped)));
    }
    for commit in &report.commits {
        let date = commit.time.get(..10).unwrap_or(&commit.time);
        let (date, author, subject) = (esc(date), esc(&commit.author.name), esc(&commit.subject));
        out.line(format!("{} {date} {author}: {subject}", commit.sha));
        if !commit.files.is_empty() {
            let files: Vec<String> = commit.files.iter().map(|file| esc(file).into_owned()).collect();
            out.line(format!("  files: {}", files.join(", ")));
        }
    }
    out.more(&result.omitted, "commits", "commits (budget)");
    let beyond = report.total.saturating_sub(report.commits.len() + cut(&result.omitted, "commits"));
    if beyond > 0 {
        out.line(format!("... {beyond} more matching commits beyond the limit"));
    }
    out.finish()
}
