//! Git's last step of a text merge that gix's merge does not take: conflict regions separated by at
//! most three lines that neither side changed are shown as one region (`xdl_simplify_non_conflicts`
//! in git's xdiff, run for the `merge` and `zdiff3` styles, not for `diff3`).
//!
//! The predicted file is gix's; this recomputes the line ranges Git's file would have. A gap
//! qualifies when our side of both regions with the gap between them occurs as consecutive lines in
//! our blob, and likewise for theirs: a gap holding a change of one side fails that test, as Git
//! would not join across such a change either.

use super::markers::{LineSpan, MarkerRegion};

/// The most lines between two regions that Git still joins.
const MAX_GAP: usize = 3;

/// Joins the regions of `merged` (gix's output) as Git would, given the `ours` and `theirs` blobs
/// it came from.
pub(crate) fn join_close_regions(
    regions: Vec<MarkerRegion>,
    merged: &[u8],
    ours: &[u8],
    theirs: &[u8],
) -> Vec<MarkerRegion> {
    if regions.len() < 2 {
        return regions;
    }
    let merged_lines = lines(merged);
    let (ours_lines, theirs_lines) = (lines(ours), lines(theirs));
    // One side of a group of regions as Git would show it: each region's side, with the gaps between them.
    let side_text = |group: &[MarkerRegion], side: fn(&MarkerRegion) -> LineSpan| -> Vec<&[u8]> {
        let mut text = Vec::new();
        for (idx, region) in group.iter().enumerate() {
            if idx > 0 {
                text.extend_from_slice(&merged_lines[group[idx - 1].end..region.start - 1]);
            }
            let span = side(region);
            text.extend_from_slice(&merged_lines[span.start - 1..span.start - 1 + span.count]);
        }
        text
    };
    let mut groups: Vec<Vec<MarkerRegion>> = Vec::new();
    for region in regions {
        if let Some(group) = groups.last_mut()
            && let Some(last) = group.last()
            && region.start - last.end - 1 <= MAX_GAP
        {
            let mut candidate = group.clone();
            candidate.push(region.clone());
            if contains(&ours_lines, &side_text(&candidate, |r| r.ours))
                && contains(&theirs_lines, &side_text(&candidate, |r| r.theirs))
            {
                *group = candidate;
                continue;
            }
        }
        groups.push(vec![region]);
    }
    // Lay the groups out again: each joined group is one region, and everything after it moves.
    let mut shift: isize = 0;
    let mut out = Vec::with_capacity(groups.len());
    for group in groups {
        let (first, last) = (&group[0], &group[group.len() - 1]);
        let gaps: usize = group.windows(2).map(|pair| pair[1].start - pair[0].end - 1).sum();
        let total = |side: fn(&MarkerRegion) -> Option<usize>| -> Option<usize> {
            group.iter().map(side).sum::<Option<usize>>().map(|count| count + gaps)
        };
        let ours_count = total(|r| Some(r.ours.count)).unwrap_or_default();
        let base_count = total(|r| r.base.map(|base| base.count));
        let theirs_count = total(|r| Some(r.theirs.count)).unwrap_or_default();
        let start = (first.start as isize + shift) as usize;
        let ours = LineSpan { start: start + 1, count: ours_count };
        let base = base_count.map(|count| LineSpan { start: ours.start + ours.count + 1, count });
        let after_middle = base.map_or(ours.start + ours.count, |base| base.start + base.count);
        let theirs = LineSpan { start: after_middle + 1, count: theirs_count };
        let end = theirs.start + theirs.count;
        shift += (end - start) as isize - (last.end - first.start) as isize;
        out.push(MarkerRegion {
            start,
            end,
            ours,
            base,
            theirs,
            theirs_label: last.theirs_label.clone(),
            ..first.clone()
        });
    }
    out
}

fn lines(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|byte| *byte == b'\n').collect()
}

/// Whether `needle` occurs as consecutive lines of `haystack`.
fn contains(haystack: &[&[u8]], needle: &[&[u8]]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conflict::markers::regions;

    #[test]
    fn joins_regions_around_unchanged_lines_like_git() {
        let ours = b"ours 1\nmiddle\nours 3\n";
        let theirs = b"theirs 1\nmiddle\ntheirs 3\n";
        let merged = b"<<<<<<< a\nours 1\n=======\ntheirs 1\n>>>>>>> b\nmiddle\n<<<<<<< a\nours 3\n=======\ntheirs 3\n>>>>>>> b\n";
        let joined = join_close_regions(regions(merged, 7), merged, ours, theirs);
        let git = b"<<<<<<< a\nours 1\nmiddle\nours 3\n=======\ntheirs 1\nmiddle\ntheirs 3\n>>>>>>> b\n";
        assert_eq!(joined, regions(git, 7));
    }

    #[test]
    fn keeps_regions_apart_across_a_one_sided_change_or_a_wide_gap() {
        // Theirs changed the middle line alone: the output shows their version, which ours does not have.
        let ours = b"ours 1\nmiddle\nours 3\n";
        let theirs = b"theirs 1\nMIDDLE\ntheirs 3\n";
        let merged = b"<<<<<<< a\nours 1\n=======\ntheirs 1\n>>>>>>> b\nMIDDLE\n<<<<<<< a\nours 3\n=======\ntheirs 3\n>>>>>>> b\n";
        assert_eq!(join_close_regions(regions(merged, 7), merged, ours, theirs), regions(merged, 7));
        let ours = b"o\n1\n2\n3\n4\no\n";
        let theirs = b"t\n1\n2\n3\n4\nt\n";
        let merged = b"<<<<<<<\no\n=======\nt\n>>>>>>>\n1\n2\n3\n4\n<<<<<<<\no\n=======\nt\n>>>>>>>\n";
        assert_eq!(join_close_regions(regions(merged, 7), merged, ours, theirs).len(), 2);
    }

    #[test]
    fn later_regions_move_with_the_join() {
        let ours = b"o1\nm\no2\nx\nx\nx\nx\no3\n";
        let theirs = b"t1\nm\nt2\nx\nx\nx\nx\nt3\n";
        let merged = b"<<<<<<<\no1\n=======\nt1\n>>>>>>>\nm\n<<<<<<<\no2\n=======\nt2\n>>>>>>>\nx\nx\nx\nx\n<<<<<<<\no3\n=======\nt3\n>>>>>>>\n";
        let git = b"<<<<<<<\no1\nm\no2\n=======\nt1\nm\nt2\n>>>>>>>\nx\nx\nx\nx\n<<<<<<<\no3\n=======\nt3\n>>>>>>>\n";
        assert_eq!(join_close_regions(regions(merged, 7), merged, ours, theirs), regions(git, 7));
    }
}
