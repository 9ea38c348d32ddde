//! Text rendering of `file.read` and `file.blame`.

use super::{Lines, Options, cut, esc, short};
use crate::budget::Budgeted;
use crate::file::blame::Report as BlameReport;
use crate::file::read::Report;

/// `file.read`: a header line (`# path @ rev`, mode, blob, size, lines), the shown range, then the
/// content itself; a last line without newline is followed by git's `\ No newline at end of file`;
/// a cut ends with `... N more lines (read on from line M)`. Non-UTF-8 text comes as base64 after a
/// `base64:` line; a binary file has no content.
pub fn file_read(result: &Budgeted<Report>, options: &Options) -> String {
    let report = &result.data;
    let mut out = Lines::default();
    out.line(format!(
        "# {} @ {} mode {} blob {} {} bytes, {} lines",
        options.path(&report.path),
        esc(short(&report.rev)),
        report.mode,
        short(&report.blob_sha),
        report.size,
        report.total_lines
    ));
    if report.binary {
        out.line("binary: content not shown");
        return out.finish();
    }
    match (report.start_line, report.end_line) {
        (Some(start), Some(end)) => out.line(format!("lines {start}-{end}")),
        (Some(start), None) if report.total_lines > 0 => out.line(format!("no line from {start} fits")),
        _ => {}
    }
    if let Some(content) = &report.content {
        out.0.push_str(content);
        if !content.is_empty() && !content.ends_with('\n') {
            out.0.push_str("\n\\ No newline at end of file\n");
        }
    }
    if let Some(encoded) = &report.content_base64 {
        out.line("non-utf8, base64:");
        out.line(encoded);
    }
    let more = cut(&result.omitted, "lines");
    if more > 0 {
        let next = report.end_line.map(|end| end + 1).or(report.start_line).unwrap_or(1);
        out.line(format!("... {more} more lines (read on from line {next})"));
    }
    out.finish()
}

/// `file.blame`: a header line (`# blame path @ rev, lines a-b of n`), the ignore-revs files and
/// skipped revisions, then one line per range as `git blame` prints a line, grouped:
/// `<sha> (<author> <date> <line>[-<last>]) <subject>`, with `[from <path>:<line>]` when the lines
/// had another path in that commit, `[line <n> in that commit]` when only their number differed,
/// and a leading `*` for lines left on an ignored revision (git's `blame.markUnblamableLines`),
/// else `^` for a boundary commit (as git marks it); under the first range of a commit that carries
/// its message body (a small asked range), the body's lines indented by four spaces as `git log`
/// indents them, then `    ...` when it was cut; the header says `work tree (on <HEAD>)` when the
/// work-tree file was blamed; a cut ends with `... N more ranges (read on from line M)`.
pub fn file_blame(result: &Budgeted<BlameReport>, options: &Options) -> String {
    let report = &result.data;
    let mut out = Lines::default();
    let shown = match (report.start_line, report.end_line) {
        (Some(start), Some(end)) if start == end => format!(", line {start} of {}", report.total_lines),
        (Some(start), Some(end)) => format!(", lines {start}-{end} of {}", report.total_lines),
        _ => format!(", {} lines", report.total_lines),
    };
    let rev = esc(short(&report.rev));
    let at = if report.worktree { format!("work tree (on {rev})") } else { rev.into_owned() };
    let shallow = if report.shallow { ", shallow clone" } else { "" };
    out.line(format!("# blame {} @ {at}{shown}{shallow}", options.path(&report.path)));
    if !report.ignore_revs_files.is_empty() {
        let files: Vec<String> = report.ignore_revs_files.iter().map(|file| options.path(file)).collect();
        out.line(format!("ignore-revs files: {}", files.join(", ")));
    }
    for skipped in &report.ignored_revs {
        out.line(format!("ignored: {}", esc(skipped)));
    }
    let mut told = std::collections::HashSet::new();
    for range in &report.ranges {
        let info = report.commits.get(&range.commit);
        let author = info.map_or("", |info| info.author.name.as_str());
        let date = info.map_or("", |info| info.time.get(..10).unwrap_or(&info.time));
        let subject = info.map_or("", |info| info.subject.as_str());
        let lines = match range.lines {
            1 => range.line.to_string(),
            count => format!("{}-{}", range.line, range.line + count - 1),
        };
        let boundary = info.is_some_and(|info| info.boundary);
        let mark = match (range.unblamable, boundary) {
            (true, _) => "*",
            (false, true) => "^",
            (false, false) => "",
        };
        let (author, date, subject) = (esc(author), esc(date), esc(subject));
        let mut text = format!("{mark}{} ({author} {date} {lines}) {subject}", range.commit);
        match (&range.orig_path, range.orig_line) {
            (Some(path), line) => {
                text.push_str(&format!(" [from {}:{}]", options.path(path), line.unwrap_or(range.line)));
            }
            (None, Some(line)) => text.push_str(&format!(" [line {line} in that commit]")),
            (None, None) => {}
        }
        out.line(text);
        if let Some(info) = info.filter(|_| told.insert(range.commit.as_str())) {
            for line in info.body.iter().flat_map(|body| body.lines()) {
                out.line(format!("    {}", esc(line)));
            }
            if info.body_cut {
                out.line("    ...");
            }
        }
    }
    let more = cut(&result.omitted, "ranges");
    if more > 0 {
        let next = report.end_line.map(|end| end + 1).or(report.start_line).unwrap_or(1);
        out.line(format!("... {more} more ranges (read on from line {next})"));
    }
    out.finish()
}
