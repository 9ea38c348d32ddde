//! Text renderings of `diff.semantic` and `diff.semanticFallbacks`.
//!
//! One line per changed symbol: a letter (`A` added, `D` removed, `M` modified, `R` renamed, `V`
//! moved), the file, the kind, the name and the lines added and removed inside it, e.g.
//! `M crates/core/flags/parse.rs fn parse_low (+3 -1)`; a rename or a move ends with `<- old name`
//! or `<- old/path.rs`, a changed signature with `sig`. A file's changed lines outside every symbol
//! make a `T path top-level (+2 -0)` line, and a file left to the text diff an
//! `F path reason (+a -d)` line (without the counts when the file was not diffed).

use super::{Lines, Options};
use crate::budget::Budgeted;
use crate::diff::semantic::{FallbackReport, FileChange, Report, SymbolStatus};

/// `diff.semantic`: a `base..head` line, then the symbol lines of each file (see the module docs).
/// Paths are quoted as git's name lists quote them (`options`).
pub fn diff_semantic(result: &Budgeted<Report>, options: &Options) -> String {
    let report = &result.data;
    let mut out = Lines::default();
    out.line(selection_line(report.base.as_deref(), &report.head, report.path.as_deref(), report.changed_files));
    for file in &report.files {
        file_lines(&mut out, file, options);
    }
    out.more(&result.omitted, "files", "files");
    out.finish()
}

/// `diff.semanticFallbacks`: the selection line, then `F path reason (+a -d)` per file that fell
/// back, paths quoted as in [`diff_semantic`].
pub fn diff_semantic_fallbacks(result: &Budgeted<FallbackReport>, options: &Options) -> String {
    let report = &result.data;
    let mut out = Lines::default();
    out.line(selection_line(report.base.as_deref(), &report.head, report.path.as_deref(), report.changed_files));
    for file in &report.fallbacks {
        let ratio = file.fallback.error_ratio.map(|ratio| format!(" {ratio:.3}")).unwrap_or_default();
        out.line(format!(
            "F {} {}{ratio}{}",
            options.path(&file.path),
            file.fallback.reason.as_str(),
            counts(file.additions, file.deletions)
        ));
    }
    out.more(&result.omitted, "fallbacks", "fallbacks");
    out.finish()
}

/// ` (+a -d)` for a fallback's counts, or nothing when both are 0: a file left unread (binary, too
/// large, past the time budget) has no counts, and `+0 -0` would claim it unchanged.
fn counts(additions: u64, deletions: u64) -> String {
    if additions == 0 && deletions == 0 { String::new() } else { format!(" (+{additions} -{deletions})") }
}

/// `base..head [path] N files changed`.
fn selection_line(base: Option<&str>, head: &str, path: Option<&str>, changed: usize) -> String {
    let base = base.map_or("(empty)", |base| &base[..base.len().min(super::TEXT_SHA_LEN)]);
    let head = &head[..head.len().min(super::TEXT_SHA_LEN)];
    let path = path.map(|path| format!(" {path}")).unwrap_or_default();
    format!("{base}..{head}{path} {changed} files changed")
}

fn file_lines(out: &mut Lines, file: &FileChange, options: &Options) {
    let quoted = options.path(&file.path);
    let path = match &file.from {
        Some(from) => format!("{} -> {quoted}", options.path(from)),
        None => quoted.clone(),
    };
    if let Some(fallback) = &file.fallback {
        let ratio = fallback.error_ratio.map(|ratio| format!(" {ratio:.3}")).unwrap_or_default();
        out.line(format!("F {path} {}{ratio}{}", fallback.reason.as_str(), counts(file.additions, file.deletions)));
        return;
    }
    for symbol in &file.symbols {
        let mut line = format!(
            "{} {} {} {} (+{} -{})",
            symbol.change.letter(),
            quoted,
            symbol.kind.label(),
            symbol.name,
            symbol.added,
            symbol.removed
        );
        match (symbol.change, &symbol.from, &symbol.from_path) {
            (SymbolStatus::Moved, Some(from), Some(from_path)) => {
                line.push_str(&format!(" <- {} {from}", options.path(from_path)));
            }
            (SymbolStatus::Moved, None, Some(from_path)) => line.push_str(&format!(" <- {}", options.path(from_path))),
            (_, Some(from), _) => line.push_str(&format!(" <- {from}")),
            _ => {}
        }
        if symbol.signature_changed {
            line.push_str(" sig");
        }
        out.line(line);
    }
    if let Some(top) = file.top_level {
        out.line(format!("T {path} top-level (+{} -{})", top.added, top.removed));
    }
    if file.symbols.is_empty() && file.top_level.is_none() {
        // A pure rename, a mode change or an empty file: nothing inside changed.
        out.line(format!("= {path} (+{} -{})", file.additions, file.deletions));
    }
}
