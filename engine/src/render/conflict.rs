//! Text rendering of `conflict.read`.

use super::{Lines, Options, esc, short};
use crate::budget::Budgeted;
use crate::conflict::read::{ConflictRead, FileStatus, SideBlob};
use crate::conflict::state::Activity;

/// `git status --short`'s two letters for an unmerged path.
fn porcelain(status: FileStatus) -> &'static str {
    match status {
        FileStatus::BothDeleted => "DD",
        FileStatus::AddedByUs => "AU",
        FileStatus::DeletedByThem => "UD",
        FileStatus::AddedByThem => "UA",
        FileStatus::DeletedByUs => "DU",
        FileStatus::BothAdded => "AA",
        FileStatus::BothModified => "UU",
    }
}

pub(super) fn activity_name(activity: Activity) -> &'static str {
    match activity {
        Activity::Merge => "merge",
        Activity::Rebase => "rebase",
        Activity::CherryPick => "cherry-pick",
        Activity::Revert => "revert",
        Activity::Am => "am",
        Activity::Bisect => "bisect",
        Activity::StashApply => "stash-apply",
    }
}

/// `conflict.read`: the operation and its progress, how to conclude and abort it, the producing
/// commits, one porcelain line per unmerged file with its marker ranges, the commits still to
/// replay that touch them, each region as the work-tree file shows it (context, markers, sides)
/// under an `@@ path start-end @@` line, then whole sides (when asked) under a `--- side path`
/// line; cut notices at the end. Paths come quoted as git quotes them.
pub fn conflict_read(result: &Budgeted<ConflictRead>, options: &Options) -> String {
    let read = &result.data;
    let omitted = &result.omitted;
    let mut out = Lines::default();
    if let Some(activity) = read.operation {
        let mut line = format!("{} in progress", activity_name(activity));
        if let Some(evidence) = &read.evidence {
            line.push_str(&format!(" ({})", esc(evidence)));
        }
        line.push_str(&progress(read));
        out.line(line);
        if let Some(conclude) = read.conclude {
            out.line(format!("conclude: {conclude}"));
        }
        if let Some(abort) = read.abort {
            out.line(format!("abort: {abort}"));
        }
    }
    if let Some(message) = read.message {
        out.line(message);
    }
    for (side, producer) in [("ours", &read.ours), ("theirs", &read.theirs)] {
        if let Some(producer) = producer {
            out.line(format!("{side} {} {} ({})", short(&producer.sha), esc(&producer.subject), esc(&producer.role)));
        }
    }
    if read.conflicted_files > 0 {
        out.line(format!("conflicted {}", read.conflicted_files));
    }
    for file in &read.files {
        let tree = &file.work_tree;
        let mut line = format!("{} {}", porcelain(file.status), options.status_path(&file.path));
        if !tree.exists {
            line.push_str(" (not in the work tree)");
        } else if tree.binary {
            line.push_str(" (binary)");
        }
        let regions: Vec<String> =
            tree.regions.iter().map(|region| format!("{}-{}", region.markers.start, region.markers.end)).collect();
        if tree.region_count > 0 {
            line.push_str(&format!(" markers {}", regions.join(" ")));
            if regions.len() < tree.region_count {
                line.push_str(&format!(" +{} more", tree.region_count - regions.len()));
            }
        }
        out.line(line);
    }
    upcoming(&mut out, read, options);
    regions(&mut out, read, options);
    for file in &read.files {
        for (name, side) in [("ours", &file.ours), ("theirs", &file.theirs), ("base", &file.base)] {
            if let Some(side) = side
                && (side.content.is_some() || side.content_omitted)
            {
                out.line(side_header(name, &options.path(&file.path), side));
                if let Some(content) = &side.content {
                    out.0.push_str(content);
                    if !content.ends_with('\n') {
                        out.0.push('\n');
                    }
                }
            }
        }
    }
    out.more(omitted, "files", "files");
    out.more(omitted, "markerRegions", "marker regions");
    out.more(omitted, "contents", "side contents");
    out.finish()
}

/// `, 2 commands done, 1 remaining command` as `git status` counts a rebase's commands,
/// `, 2 remaining` for a sequence that records no done count, or nothing.
pub(super) fn progress(read: &ConflictRead) -> String {
    match read.progress.map(|progress| (progress.done, progress.remaining)) {
        Some((Some(done), Some(remaining))) => {
            format!(", {} done, {}", plural(done, "command"), plural(remaining, "remaining command"))
        }
        Some((None, Some(remaining))) => format!(", {remaining} remaining"),
        _ => String::new(),
    }
}

/// `to replay <sha> <subject> touches <paths>` per commit still to replay that changes a conflicted
/// path.
pub(super) fn upcoming(out: &mut Lines, read: &ConflictRead, options: &Options) {
    for commit in &read.upcoming {
        let paths: Vec<String> = commit.paths.iter().map(|path| options.path(path)).collect();
        out.line(format!("to replay {} {} touches {}", short(&commit.sha), esc(&commit.subject), paths.join(" ")));
    }
}

/// Each marker region under an `@@ path start-end @@` line, as the work-tree file shows it:
/// context, markers with their labels, the sides.
pub(super) fn regions(out: &mut Lines, read: &ConflictRead, options: &Options) {
    for file in &read.files {
        let size = file.work_tree.marker_size;
        for region in &file.work_tree.regions {
            let markers = &region.markers;
            out.line(format!("@@ {} {}-{} @@", options.path(&file.path), markers.start, markers.end));
            out.0.push_str(&region.before);
            out.line(marker('<', size, markers.ours_label.as_deref().map(esc).as_deref()));
            out.0.push_str(&region.ours_text);
            if let Some(base) = &region.base_text {
                out.line(marker('|', size, markers.base_label.as_deref().map(esc).as_deref()));
                out.0.push_str(base);
            }
            out.line(marker('=', size, None));
            out.0.push_str(&region.theirs_text);
            out.line(marker('>', size, markers.theirs_label.as_deref().map(esc).as_deref()));
            out.0.push_str(&region.after);
            if region.truncated {
                out.line("(region text truncated)");
            }
        }
    }
}

/// A marker line as git writes it: `size` times `kind`, then a space and the label if any.
fn marker(kind: char, size: usize, label: Option<&str>) -> String {
    let run = kind.to_string().repeat(size);
    match label {
        Some(label) => format!("{run} {label}"),
        None => run,
    }
}

/// `1 command`, `2 commands`.
fn plural(count: usize, noun: &str) -> String {
    if count == 1 { format!("{count} {noun}") } else { format!("{count} {noun}s") }
}

/// `--- ours src/main.c (90 bytes, blob 3aa6adb)` with the side's flags; `path` comes quoted.
fn side_header(name: &str, path: &str, side: &SideBlob) -> String {
    let mut flags = vec![format!("{} bytes", side.size), format!("blob {}", side.oid)];
    if side.mode != "100644" {
        flags.push(format!("mode {}", side.mode));
    }
    for (set, flag) in [
        (side.binary, "binary"),
        (side.submodule, "submodule"),
        (side.non_utf8, "non-utf8"),
        (side.truncated, "truncated"),
        (side.content_omitted, "content omitted"),
    ] {
        if set {
            flags.push(flag.to_owned());
        }
    }
    format!("--- {name} {path} ({})", flags.join(", "))
}
