//! Text rendering of `repo.collisions`.

use super::{Lines, Options, esc};
use crate::budget::Budgeted;
use crate::collision::{Line, MergeVerdict, Pair, PairFile, Report};

/// `repo.collisions`: a count line (`4 lines of work, 6 pairs: 1 conflicting, 2 overlapping`), one
/// `line <name> <sha>` line per line of work with `default`, `uncommitted N`,
/// `agents <kinds> at <ms>` and its worktree path where they apply, then one line per overlapping
/// pair (`conflicted feature-a x feature-b: 2 conflicts, 3 files both changed`) with its files
/// indented under it (`  content src/lib.rs lines 10-12 symbols parse`, `  both README.md` for a
/// file that merges cleanly, `  ... N more files`), `... N more pairs` when the budget cut the
/// list, and the worktrees named, not read (`outside roots:`) or unreadable (`unreadable:`).
pub fn collisions(result: &Budgeted<Report>, options: &Options) -> String {
    let report = &result.data;
    let mut out = Lines::default();
    let mut head = format!("{} lines of work, {} pairs", report.lines.len(), report.pair_count);
    if report.overlapping == 0 {
        head.push_str(": none overlap");
    } else {
        head.push_str(&format!(": {} conflicting, {} overlapping", report.conflicting, report.overlapping));
    }
    out.line(head);
    for line in &report.lines {
        out.line(line_of_work(line, options));
    }
    for pair in &report.pairs {
        out.line(pair_line(pair));
        for file in &pair.files {
            out.line(file_line(file, options));
        }
        if pair.file_count > pair.files.len() {
            out.line(format!("  ... {} more files", pair.file_count - pair.files.len()));
        }
    }
    out.more(&result.omitted, "pairs", "pairs");
    if !report.outside_roots.is_empty() {
        let paths: Vec<String> = report.outside_roots.iter().map(|path| options.status_path(path)).collect();
        out.line(format!("outside roots, not read: {}", paths.join(" ")));
    }
    for item in &report.unreadable {
        out.line(format!("unreadable: {}", esc(item)));
    }
    out.finish()
}

fn line_of_work(line: &Line, options: &Options) -> String {
    let mut text = format!("line {} {}", esc(&line.name), line.sha);
    if line.default {
        text.push_str(" default");
    }
    if line.uncommitted > 0 {
        text.push_str(&format!(" uncommitted {}", line.uncommitted));
    }
    if !line.agents.is_empty() {
        let kinds: Vec<String> = line.agents.iter().map(|kind| esc(kind).into_owned()).collect();
        text.push_str(&format!(" agents {}", kinds.join(",")));
        if let Some(at) = line.last_activity_ms {
            text.push_str(&format!(" at {at}"));
        }
    }
    if let Some(path) = &line.worktree {
        text.push_str(&format!(" in {}", options.status_path(path)));
    }
    text
}

fn pair_line(pair: &Pair) -> String {
    let verdict = match pair.merge {
        MergeVerdict::Conflicted => "conflicted",
        MergeVerdict::Clean => "clean",
        MergeVerdict::FastForward => "fast-forward",
        MergeVerdict::UpToDate => "up-to-date",
        MergeVerdict::UnrelatedHistories => "unrelated-histories",
    };
    let mut text = format!("{verdict} {} x {}:", esc(&pair.a), esc(&pair.b));
    let plural = |count: usize, one: &str, many: &str| format!("{count} {}", if count == 1 { one } else { many });
    if pair.conflict_count > 0 {
        text.push_str(&format!(" {},", plural(pair.conflict_count, "conflict", "conflicts")));
    }
    text.push_str(&format!(" {} both changed", plural(pair.file_count, "file", "files")));
    text
}

fn file_line(file: &PairFile, options: &Options) -> String {
    let kind = match file.conflict {
        Some(kind) => serde_json::to_value(kind).ok().and_then(|value| value.as_str().map(str::to_owned)),
        None => Some("both".to_owned()),
    };
    let mut text = format!("  {} {}", kind.unwrap_or_default(), options.path(&file.path));
    if !file.lines.is_empty() {
        let ranges: Vec<String> = file
            .lines
            .iter()
            .map(|[first, last]| if first == last { first.to_string() } else { format!("{first}-{last}") })
            .collect();
        text.push_str(&format!(" lines {}", ranges.join(",")));
    }
    if !file.symbols.is_empty() {
        let names: Vec<String> = file.symbols.iter().map(|name| esc(name).into_owned()).collect();
        text.push_str(&format!(" symbols {}", names.join(", ")));
    }
    text
}
