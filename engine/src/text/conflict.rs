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

fn activity_name(activity: Activity) -> &'static str {
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

/// `conflict.read`: the operation and its progress, the producing commits, one porcelain line per unmerged file with
/// its marker regions, then each side's content under a `--- side path` line; cut notices at the end.
pub fn conflict_read(result: &Budgeted<ConflictRead>, options: &Options) -> String {
    let read = &result.data;
    let omitted = &result.omitted;
    let mut out = Lines::default();
    if let Some(activity) = read.operation {
        let mut line = format!("{} in progress", activity_name(activity));
        if let Some(evidence) = &read.evidence {
            line.push_str(&format!(" ({})", esc(evidence)));
        }
        if let Some(progress) = &read.progress {
            if let (Some(step), Some(total)) = (progress.step, progress.total) {
                line.push_str(&format!(", step {step}/{total}"));
            }
            if let Some(remaining) = progress.remaining {
                line.push_str(&format!(", {remaining} remaining"));
            }
        }
        out.line(line);
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
            tree.regions.iter().map(|region| format!("{}-{}", region.start, region.end)).collect();
        if tree.region_count > 0 {
            line.push_str(&format!(" markers {}", regions.join(" ")));
            if regions.len() < tree.region_count {
                line.push_str(&format!(" +{} more", tree.region_count - regions.len()));
            }
        }
        out.line(line);
    }
    for file in &read.files {
        for (name, side) in [("ours", &file.ours), ("theirs", &file.theirs), ("base", &file.base)] {
            if let Some(side) = side {
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
