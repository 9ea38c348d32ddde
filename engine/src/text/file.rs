//! Text rendering of `file.read`.

use super::{Lines, cut, short};
use crate::budget::Budgeted;
use crate::file::read::Report;

/// `file.read`: a header line (`# path @ rev`, mode, blob, size, lines), the shown range, then the content itself;
/// a last line without newline is followed by git's `\ No newline at end of file`; a cut ends with
/// `... N more lines (read on from line M)`. Non-UTF-8 text comes as base64 after a `base64:` line; a binary file
/// has no content.
pub fn file_read(result: &Budgeted<Report>) -> String {
    let report = &result.data;
    let mut out = Lines::default();
    out.line(format!(
        "# {} @ {} mode {} blob {} {} bytes, {} lines",
        report.path,
        short(&report.rev),
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
