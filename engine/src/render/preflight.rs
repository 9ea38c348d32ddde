//! Text rendering of `repo.conflictPreflight`.

use super::{Lines, Options, esc, short};
use crate::budget::Budgeted;
use crate::conflict::ConflictKind;
use crate::conflict::preflight::{MergeStatus, PathConflict, Preflight, RebaseStatus, Side};

/// `repo.conflictPreflight`, one verdict line per operation with its conflicting paths below it:
///
/// ```text
/// merge topic into HEAD: conflicts in 2 files
/// content: src/main.c markers 5-9 14-20
/// modify/delete: docs/guide.md
/// rebase HEAD onto topic: stops at 2/3 1a2b3c4d5e6f fix: greet
/// content: src/main.c markers 5-9
/// later 6f5e4d3c2b1a feat: more greeting touches src/main.c
/// HEAD 8730d98bc3f1 rebase: third, clean
/// topic 0f1e2d3c4b5a topic work
/// merge base 9a8b7c6d5e4f
/// ```
///
/// An operation in progress is said first, as in the JSON; caveats and a shallow clone follow the
/// merge bases, and the prediction's note comes last in a few words. A conflicting path is
/// `<kind>: <path>`, with `from <path>` for a rename and the marker regions' line ranges in the
/// predicted file (`+N more` past those listed); paths are quoted as `git status --short` quotes
/// them, so a path is one word. A cut list ends with `... N more conflicting paths`; the count in
/// the verdict line stays exact.
pub fn conflict_preflight(result: &Budgeted<Preflight>, options: &Options) -> String {
    let preflight = &result.data;
    let omitted = &result.omitted;
    let mut out = Lines::default();
    if let Some(in_progress) = &preflight.in_progress {
        out.line(esc(&in_progress.message));
    }
    let current = esc(&preflight.current.reference);
    let target = esc(&preflight.target.reference);

    let merge = &preflight.merge;
    let verdict = match merge.status {
        MergeStatus::Clean => "clean".to_owned(),
        MergeStatus::Conflicted => format!("conflicts in {}", files(merge.conflict_count)),
        MergeStatus::UpToDate => "already up to date".to_owned(),
        MergeStatus::FastForward => "fast-forward".to_owned(),
        MergeStatus::UnrelatedHistories => {
            "unrelated histories (git refuses without --allow-unrelated-histories)".to_owned()
        }
    };
    out.line(format!("merge {target} into {current}: {verdict}"));
    conflict_lines(&mut out, &merge.conflicts, options);
    out.more(omitted, "mergeConflicts", "conflicting paths");

    let rebase = &preflight.rebase;
    let mut verdict = match rebase.status {
        RebaseStatus::Clean => format!("clean, {}", commits(rebase.commits)),
        RebaseStatus::Stops => match &rebase.stops_at {
            Some(stop) => format!(
                "stops at {}/{} {} {}, conflicts in {}",
                stop.step,
                stop.total,
                short(&stop.commit.sha),
                esc(&stop.commit.subject),
                files(stop.conflict_count)
            ),
            None => "stops".to_owned(),
        },
        RebaseStatus::UpToDate => "up to date".to_owned(),
        RebaseStatus::FastForward => "fast-forward".to_owned(),
        RebaseStatus::TooManyCommits => format!("{}, too many to predict", commits(rebase.commits)),
    };
    if rebase.skipped_merges > 0 {
        verdict.push_str(&format!(", {} left out", plural(rebase.skipped_merges, "merge commit")));
    }
    if rebase.become_empty > 0 {
        verdict.push_str(&format!(", {} already in {target} (dropped)", commits(rebase.become_empty)));
    }
    out.line(format!("rebase {current} onto {target}: {verdict}"));
    if let Some(stop) = &rebase.stops_at {
        conflict_lines(&mut out, &stop.conflicts, options);
        out.more(omitted, "rebaseConflicts", "conflicting paths");
        for later in &stop.later_commits {
            let paths: Vec<String> = later.paths.iter().map(|path| options.status_path(path)).collect();
            out.line(format!("later {} {} touches {}", short(&later.sha), esc(&later.subject), paths.join(" ")));
        }
    }

    side_line(&mut out, &preflight.current);
    side_line(&mut out, &preflight.target);
    match preflight.merge_bases.as_slice() {
        [] => out.line("no merge base"),
        [base] => out.line(format!("merge base {}", short(base))),
        bases => {
            let bases: Vec<&str> = bases.iter().map(|base| short(base)).collect();
            out.line(format!("merge bases {}", bases.join(" ")));
        }
    }
    if preflight.shallow {
        out.line("shallow clone: merge bases are looked for down to the shallow boundary only");
    }
    for caveat in &preflight.caveats {
        out.line(format!("caveat: {}", esc(caveat)));
    }
    out.line("predicted in memory, nothing written; merge drivers, rerere and local changes not considered");
    out.finish()
}

/// `HEAD 8730d98bc3f1 subject`: a side's revision as given, its commit and subject.
fn side_line(out: &mut Lines, side: &Side) {
    out.line(format!("{} {} {}", esc(&side.reference), short(&side.commit.sha), esc(&side.commit.subject)));
}

/// One `<kind>: <path>` line per conflicting path, with `from <path>` for a rename and
/// `markers 5-9 14-20 +1 more` for its marker regions.
fn conflict_lines(out: &mut Lines, conflicts: &[PathConflict], options: &Options) {
    for conflict in conflicts {
        let mut line = format!("{}: {}", kind_name(conflict.kind), options.status_path(&conflict.path));
        if let Some(from) = &conflict.renamed_from {
            line.push_str(&format!(" from {}", options.status_path(from)));
        }
        if conflict.region_count > 0 {
            let ranges: Vec<String> =
                conflict.regions.iter().map(|region| format!("{}-{}", region.start, region.end)).collect();
            line.push_str(&format!(" markers {}", ranges.join(" ")));
            if ranges.len() < conflict.region_count {
                line.push_str(&format!(" +{} more", conflict.region_count - ranges.len()));
            }
        }
        out.line(line);
    }
}

/// The JSON's name of a conflict kind.
fn kind_name(kind: ConflictKind) -> &'static str {
    match kind {
        ConflictKind::Content => "content",
        ConflictKind::AddAdd => "add/add",
        ConflictKind::ModifyDelete => "modify/delete",
        ConflictKind::RenameDelete => "rename/delete",
        ConflictKind::RenameRename => "rename/rename",
        ConflictKind::Binary => "binary",
        ConflictKind::Submodule => "submodule",
        ConflictKind::FileDirectory => "file/directory",
        ConflictKind::DistinctTypes => "distinct types",
        ConflictKind::Unknown => "unknown",
    }
}

/// `1 file`, `2 files`.
fn files(count: usize) -> String {
    plural(count, "file")
}

/// `1 commit`, `2 commits`.
fn commits(count: usize) -> String {
    plural(count, "commit")
}

/// `1 <noun>`, `2 <noun>s`.
fn plural(count: usize, noun: &str) -> String {
    if count == 1 { format!("{count} {noun}") } else { format!("{count} {noun}s") }
}
