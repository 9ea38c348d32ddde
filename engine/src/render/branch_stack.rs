//! Text rendering of `repo.branchStack`.

use super::{BranchLine, Lines, Options, Tracking, esc, short, tracking_marks, upstream_marks};
use crate::branch_stack::{ParentMoved, Relation, Report};
use crate::budget::Budgeted;
use crate::conflict::preflight::RebaseStatus;

/// `repo.branchStack`, as terse as `git status -sb` and `git branch -vv`: the examined branch's
/// `##` line (its upstream with ahead/behind) and `tip <sha>`, then
/// `base main 1a2b3c4 (merge-base 9f8e7d6): ahead 3, behind 2`, then one line per related branch in
/// stack order, `parent`, `child` or `sibling` (the JSON's `currentStackedOn`, `stackedOnCurrent`
/// and `sharesBase`), its tip, its last commit's date, the examined branch's ahead/behind against
/// it and its own upstream in brackets, and `... N more related branches` when `maxRelated` listed
/// fewer than `relatedTotal`. Every ahead/behind is the examined branch's, as in the JSON. A
/// rewritten parent (`parentMoved`) follows the base line:
/// `parent feature rebased: old tip 1a2b3c4 (2 commits on it), now 5d6e7f8`, then the command with
/// its predicted replay, `git rebase --onto ... : clean`,
/// `: stops at <sha> <subject>: conflicts a.txt, b.txt` or `: too many commits to predict`.
pub fn branch_stack(result: &Budgeted<Report>, _options: &Options) -> String {
    let report = &result.data;
    let mut out = Lines::default();
    out.line(
        BranchLine {
            branch: report.branch.as_deref(),
            detached: report.branch.is_none(),
            unborn: report.branch.is_some() && report.sha.is_none(),
            sha: report.sha.as_deref(),
            upstream: report.upstream.as_ref().map(Tracking::from),
        }
        .render(),
    );
    if let (Some(sha), Some(_)) = (&report.sha, &report.branch) {
        out.line(format!("tip {}", short(sha)));
    }
    if report.shallow {
        out.line("shallow clone: counts stop at the shallow boundary");
    }
    match &report.base {
        Some(base) => {
            let mut line = format!("base {} {}", esc(&base.name), short(&base.sha));
            match &base.merge_base {
                Some(merge_base) => line.push_str(&format!(" (merge-base {})", short(merge_base))),
                None => line.push_str(" (unrelated histories)"),
            }
            line.push_str(&counts(base.ahead, base.behind));
            out.line(line);
        }
        None => out.line("no base"),
    }
    if let Some(moved) = &report.parent_moved {
        parent_moved(&mut out, moved);
    }
    for related in &report.related {
        let relation = match related.relation {
            Relation::CurrentStackedOn => "parent",
            Relation::StackedOnCurrent => "child",
            Relation::SharesBase => "sibling",
        };
        let mut line = format!("{relation} {} {} {}", esc(&related.name), short(&related.sha), related.last_commit);
        line.push_str(&counts(related.ahead, related.behind));
        if let Some(upstream) = &related.upstream {
            line.push_str(&format!(" {}", upstream_marks(upstream)));
        }
        out.line(line);
    }
    let unlisted = report.related_total.saturating_sub(report.related.len());
    if unlisted > 0 {
        out.line(format!("... {unlisted} more related branches"));
    }
    out.finish()
}

/// `: ahead 3, behind 2`, the zero counts left out; empty when both are zero.
fn counts(ahead: usize, behind: usize) -> String {
    let marks = tracking_marks(false, ahead, behind);
    if marks.is_empty() { String::new() } else { format!(": {marks}") }
}

/// A rewritten parent in two lines:
/// `parent feature rebased: old tip 1a2b3c4 (2 commits on it), now 5d6e7f8`, then
/// `git rebase --onto ...: clean` (or `: stops at <sha> <subject>: conflicts <paths>`, or
/// `: too many commits to predict`). `repo.brief` shows the same lines.
pub(super) fn parent_moved(out: &mut Lines, moved: &ParentMoved) {
    out.line(format!(
        "parent {} rebased: old tip {} ({} commit{} on it), now {}",
        esc(&moved.parent),
        short(&moved.old_tip),
        moved.commits,
        if moved.commits == 1 { "" } else { "s" },
        short(&moved.new_tip)
    ));
    let outcome = match (&moved.stops_at, moved.replay) {
        (Some(stop), _) => {
            let mut paths = moved.conflicts.iter().map(|path| esc(path)).collect::<Vec<_>>().join(", ");
            if moved.more_conflicts > 0 {
                paths.push_str(&format!(" +{} more", moved.more_conflicts));
            }
            format!("stops at {}: conflicts {paths}", esc(stop))
        }
        (None, RebaseStatus::TooManyCommits) => "too many commits to predict".to_owned(),
        (None, _) => "clean".to_owned(),
    };
    out.line(format!("{}: {outcome}", esc(&moved.command)));
}
