//! Passing blame over an ignored revision, as git's `blame.c` does with `--ignore-rev` (gix cannot
//! ignore revisions).
//!
//! Git first passes a commit's lines to its parents as usual (gix has done that: the lines left on
//! the commit are those it changed against every parent). For an ignored commit it then diffs each
//! parent's version against the commit's, in parent order, and for every changed chunk guesses,
//! line by line, which parent line a changed line came from: first by fingerprint matching inside
//! the chunk (`fuzzy_find_matching_lines`: a line's fingerprint is the multiset of its lower-cased
//! byte pairs, whitespace as 0; the most certain match splits the chunk, recursively, so the order
//! is kept), then, for lines left unmatched, by the most similar line anywhere in the parent
//! (`scan_parent_range`, at least 10 pairs in common, the nearest on ties). A line matched in a
//! parent goes on being blamed from that parent line; a line matched in no parent stays on the
//! ignored commit (git's "unblamable"). Matching consumes the matched parent line's pairs, and
//! those consumed pairs carry over to the later chunks of the same parent, as in git. This module
//! reimplements that heuristic from git's description and behaviour; the tests compare it with
//! `git blame --ignore-rev` line by line.

use std::collections::HashMap;

use gix::ObjectId;
use gix::bstr::{BStr, BString, ByteSlice};

use crate::error::{Error, Result};

use super::origins::History;

/// Where an ignored commit's line was handed: a line of a parent's version of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Guess {
    /// The parent commit.
    pub commit: ObjectId,
    /// The file's path in the parent (differs after a rename).
    pub path: BString,
    /// The parent's line, 0-based.
    pub line: u32,
}

/// For each of `targets` (0-based lines of `path` at the ignored `commit`), the parent line git
/// hands it to, or `None` when no parent line matches (the line stays on `commit`).
///
/// # Errors
/// [`Error::GitRead`] when a commit, tree or blob cannot be read.
pub(crate) fn hand_to_parents(
    history: &History<'_>,
    commit: ObjectId,
    path: &BStr,
    targets: &[u32],
) -> Result<Vec<Option<Guess>>> {
    let repo = history.repo;
    let to_err = |err| Error::git("an ignored commit", err);
    let commit_object = repo.find_commit(commit).map_err(to_err)?;
    let tree = commit_object.tree().map_err(to_err)?;
    let target_entry = tree
        .lookup_entry_by_path(path.to_str_lossy().as_ref())
        .map_err(to_err)?
        .ok_or_else(|| Error::git_text("an ignored commit", format!("{path} is not in {commit}")))?;
    let target_blob = target_entry.object_id();
    let target_data = read_blob(repo, target_blob)?;
    // A shallow clone's boundary commit has no parents, as git sees it.
    let parents: Vec<ObjectId> = if history.shallow.is_boundary(&commit) {
        Vec::new()
    } else {
        commit_object.parent_ids().map(|id| id.detach()).collect()
    };

    // Git's two passes: the same path in every parent first, then renames for the parents without it; a parent
    // whose blob equals an earlier parent's is skipped.
    let mut origins: Vec<Option<(BString, ObjectId)>> = vec![None; parents.len()];
    for pass in 0..2 {
        for (parent_idx, parent) in parents.iter().enumerate() {
            if origins[parent_idx].is_some() {
                continue;
            }
            let found = if pass == 0 {
                same_path(repo, *parent, path, target_entry.mode().is_link())?
            } else {
                renamed_from(repo, *parent, &tree, path)?
            };
            let Some((parent_path, blob)) = found else { continue };
            if blob == target_blob {
                // Git passes the whole blame to such a parent; every line goes there unchanged.
                return Ok(targets
                    .iter()
                    .map(|line| Some(Guess { commit: *parent, path: parent_path.clone(), line: *line }))
                    .collect());
            }
            let duplicate = origins[..parent_idx].iter().flatten().any(|(_, earlier)| *earlier == blob);
            if !duplicate {
                origins[parent_idx] = Some((parent_path, blob));
            }
        }
    }

    let algorithm = repo.diff_algorithm().map_err(|err| Error::git("diff.algorithm", err))?;
    let mut handed: Vec<Option<Guess>> = vec![None; targets.len()];
    for (parent, origin) in parents.iter().zip(&origins) {
        let Some((parent_path, parent_blob)) = origin else { continue };
        if handed.iter().all(Option::is_some) {
            break;
        }
        let parent_data = read_blob(repo, *parent_blob)?;
        let guesses = guess_lines(&parent_data, &target_data, algorithm);
        for (slot, target) in handed.iter_mut().zip(targets) {
            if slot.is_none()
                && let Some(Some(line)) = guesses.get(*target as usize)
            {
                *slot = Some(Guess { commit: *parent, path: parent_path.clone(), line: *line });
            }
        }
    }
    Ok(handed)
}

fn read_blob(repo: &gix::Repository, id: ObjectId) -> Result<Vec<u8>> {
    Ok(repo.find_blob(id).map_err(|err| Error::git("a blob of an ignored commit", err))?.detach().data)
}

/// The parent's blob at the same path, when it is a file of the same kind (git's `find_origin`: a
/// type change is no origin).
fn same_path(
    repo: &gix::Repository,
    parent: ObjectId,
    path: &BStr,
    is_link: bool,
) -> Result<Option<(BString, ObjectId)>> {
    let to_err = |err| Error::git("a parent of an ignored commit", err);
    let tree = repo.find_commit(parent).map_err(to_err)?.tree().map_err(to_err)?;
    let Some(entry) = tree.lookup_entry_by_path(path.to_str_lossy().as_ref()).map_err(to_err)? else {
        return Ok(None);
    };
    let mode = entry.mode();
    if mode.is_tree() || mode.is_commit() || mode.is_link() != is_link {
        return Ok(None);
    }
    Ok(Some((path.to_owned(), entry.object_id())))
}

/// The parent's path and blob that `path` was renamed from (git's `find_rename`: rename detection
/// at the default 50% similarity between the parent's tree and the commit's).
fn renamed_from(
    repo: &gix::Repository,
    parent: ObjectId,
    tree: &gix::Tree<'_>,
    path: &BStr,
) -> Result<Option<(BString, ObjectId)>> {
    let to_err = |err| Error::git("a parent of an ignored commit", err);
    let parent_tree = repo.find_commit(parent).map_err(to_err)?.tree().map_err(to_err)?;
    let options = gix::diff::Options::default().with_rewrites(Some(gix::diff::Rewrites::default()));
    let changes = repo.diff_tree_to_tree(Some(&parent_tree), Some(tree), options).map_err(to_err)?;
    Ok(changes.into_iter().find_map(|change| match change {
        gix::object::tree::diff::ChangeDetached::Rewrite { source_location, source_id, location, .. }
            if location.as_bstr() == path =>
        {
            Some((source_location, source_id))
        }
        _ => None,
    }))
}

/// For every line of `target`, the line of `parent` git's ignore pass hands it to: lines outside
/// the diff's chunks go to their unchanged counterpart, changed lines to their guess (`None`: no
/// parent line matches).
pub(crate) fn guess_lines(parent: &[u8], target: &[u8], algorithm: gix::diff::blob::Algorithm) -> Vec<Option<u32>> {
    let input = gix::diff::blob::InternedInput::new(parent, target);
    let mut diff = gix::diff::blob::Diff::compute(algorithm, &input);
    diff.postprocess_lines(&input);
    let parent_lines = line_slices(parent);
    let target_lines = line_slices(target);
    let mut parent_prints: Vec<Fingerprint> = parent_lines.iter().map(|line| Fingerprint::of(line)).collect();
    let target_prints: Vec<Fingerprint> = target_lines.iter().map(|line| Fingerprint::of(line)).collect();

    let mut guesses: Vec<Option<u32>> = Vec::with_capacity(target_lines.len());
    let mut offset: i64 = 0;
    for hunk in diff.hunks() {
        let (tlno, same) = (hunk.after.start as usize, hunk.after.end as usize);
        while guesses.len() < tlno {
            guesses.push(u32::try_from(guesses.len() as i64 + offset).ok());
        }
        if same > tlno {
            let chunk = guess_chunk(
                &mut parent_prints,
                &target_prints,
                tlno,
                hunk.before.start as usize,
                same,
                hunk.before.len(),
            );
            guesses.extend(chunk.into_iter().map(|guess| guess.and_then(|line| u32::try_from(line).ok())));
        }
        offset = i64::from(hunk.before.end) - i64::from(hunk.after.end);
    }
    while guesses.len() < target_lines.len() {
        guesses.push(u32::try_from(guesses.len() as i64 + offset).ok());
    }
    guesses
}

/// The lines of `data`, each with its `\n` (git's `find_line_starts`).
fn line_slices(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|byte| *byte == b'\n').collect()
}

/// Git's `guess_line_blames` for one chunk: target lines `tlno..same`, parent lines
/// `parent_start..` (`parent_len`).
fn guess_chunk(
    parent_prints: &mut [Fingerprint],
    target_prints: &[Fingerprint],
    tlno: usize,
    parent_start: usize,
    same: usize,
    parent_len: usize,
) -> Vec<Option<usize>> {
    let fuzzy = fuzzy_matches(parent_prints, target_prints, tlno, parent_start, same, parent_len);
    (0..same - tlno)
        .map(|idx| {
            let target_idx = tlno + idx;
            match fuzzy.as_ref().and_then(|matches| matches[idx]) {
                Some(line) => Some(line),
                None => scan_parent(parent_prints, target_prints, target_idx),
            }
        })
        .collect()
}

/// Git's `scan_parent_range` over the whole parent: the most similar line with at least 10 pairs in
/// common, the one nearest the target line on ties.
fn scan_parent(parent_prints: &[Fingerprint], target_prints: &[Fingerprint], target_idx: usize) -> Option<usize> {
    const THRESHOLD: usize = 10;
    let mut best_value = THRESHOLD;
    let mut best: Option<usize> = None;
    for (parent_idx, print) in parent_prints.iter().enumerate() {
        let similarity = target_prints[target_idx].similarity(print);
        if similarity < best_value {
            continue;
        }
        if similarity == best_value
            && let Some(best_idx) = best
            && best_idx.abs_diff(target_idx) < parent_idx.abs_diff(target_idx)
        {
            continue;
        }
        best_value = similarity;
        best = Some(parent_idx);
    }
    best
}

/// A line's fingerprint: the multiset of its byte pairs, lower-cased, whitespace (git's: space,
/// tab, `\n`, `\r`) and the line's end as 0, pairs of two whitespace left out. Kept as (pair,
/// count), in first-seen order.
#[derive(Debug, Clone, Default)]
struct Fingerprint(Vec<(u16, usize)>);

impl Fingerprint {
    fn of(line: &[u8]) -> Self {
        let mut counts: Vec<(u16, usize)> = Vec::new();
        let mut index: HashMap<u16, usize> = HashMap::new();
        let mut previous: u16 = 0;
        for position in 0..=line.len() {
            let current: u16 = match line.get(position) {
                None => 0,
                Some(b' ' | b'\t' | b'\n' | b'\r') => 0,
                Some(byte) => u16::from(byte.to_ascii_lowercase()),
            };
            let pair = previous | (current << 8);
            previous = current;
            if pair == 0 {
                continue;
            }
            match index.get(&pair) {
                Some(&slot) => counts[slot].1 += 1,
                None => {
                    index.insert(pair, counts.len());
                    counts.push((pair, 1));
                }
            }
        }
        Self(counts)
    }

    /// The size of the multisets' intersection.
    fn similarity(&self, other: &Fingerprint) -> usize {
        other.0.iter().map(|(pair, count)| self.count(*pair).min(*count)).sum()
    }

    fn count(&self, pair: u16) -> usize {
        self.0.iter().find(|(candidate, _)| *candidate == pair).map_or(0, |(_, count)| *count)
    }

    /// Removes `other`'s pairs from this multiset.
    fn subtract(&mut self, other: &Fingerprint) {
        for (pair, count) in &other.0 {
            if let Some(slot) = self.0.iter().position(|(candidate, _)| candidate == pair) {
                if self.0[slot].1 <= *count {
                    self.0.remove(slot);
                } else {
                    self.0[slot].1 -= count;
                }
            }
        }
    }
}

/// A certainty not yet computed (or invalidated).
const NOT_CALCULATED: i64 = -1;
/// A line that matches nothing, for sure.
const NOTHING_MATCHES: i64 = -2;

/// The linear map of a line of one side of a chunk onto the other side (git's `map_line_number`).
#[derive(Debug, Clone, Copy)]
struct LineMap {
    destination_start: i64,
    destination_length: i64,
    source_start: i64,
    source_length: i64,
}

impl LineMap {
    fn map(&self, line: i64) -> i64 {
        ((line - self.source_start) * 2 + 1) * self.destination_length / (self.source_length * 2)
            + self.destination_start
    }
}

/// The matching state of one chunk: B is the target side (`length_b` lines from `start_b`), A the
/// parent side.
struct Matcher<'a> {
    prints_a: &'a mut [Fingerprint],
    prints_b: &'a [Fingerprint],
    /// Per B line of the chunk, a row of `2 * max_a + 1` similarities around its closest A line;
    /// -1 = not computed.
    similarities: Vec<i64>,
    certainties: Vec<i64>,
    second_best: Vec<i64>,
    result: Vec<i64>,
    max_a: i64,
    max_b: i64,
    b_to_a: LineMap,
}

/// Git's `fuzzy_find_matching_lines`: for each target line `tlno..same`, the parent line of the
/// chunk it matches best while keeping the order, or `None`; `None` overall when the parent side is
/// empty.
fn fuzzy_matches(
    prints_a: &mut [Fingerprint],
    prints_b: &[Fingerprint],
    tlno: usize,
    parent_start: usize,
    same: usize,
    parent_len: usize,
) -> Option<Vec<Option<usize>>> {
    let (start_a, length_a) = (parent_start as i64, parent_len as i64);
    let (start_b, length_b) = (tlno as i64, (same - tlno) as i64);
    if length_a <= 0 {
        return None;
    }
    let max_a = if 10 >= length_a { length_a - 1 } else { 10 };
    let max_b = ((2 * max_a + 1) * length_b - 1) / length_a;
    let width = (2 * max_a + 1) as usize;
    let mut matcher = Matcher {
        prints_a,
        prints_b,
        similarities: vec![-1; length_b as usize * width],
        certainties: vec![NOT_CALCULATED; length_b as usize],
        second_best: vec![-1; length_b as usize],
        result: vec![-1; length_b as usize],
        max_a,
        max_b,
        b_to_a: LineMap {
            destination_start: start_a,
            destination_length: length_a,
            source_start: start_b,
            source_length: length_b,
        },
    };
    matcher.recurse(start_a, start_b, length_a, length_b, 0);
    Some(matcher.result.iter().map(|line| usize::try_from(*line).ok()).collect())
}

impl Matcher<'_> {
    /// Index into `similarities` of A line `local_a` (relative to the current `start_a`) for chunk
    /// B line `row`, whose closest A line is `closest_a` (same frame as `local_a`).
    fn similarity_index(&self, local_a: i64, row: i64, closest_a: i64) -> usize {
        (local_a - closest_a + self.max_a + row * (2 * self.max_a + 1)) as usize
    }

    /// Git's `find_best_line_matches` for chunk B line `row` (absolute target line
    /// `start_b + local_b`).
    fn find_best(&mut self, start_a: i64, length_a: i64, start_b: i64, local_b: i64, row: i64) {
        if self.certainties[row as usize] != NOT_CALCULATED {
            return;
        }
        let closest = self.b_to_a.map(local_b + start_b) - start_a;
        let search_start = (closest - self.max_a).max(0);
        let search_end = (closest + self.max_a + 1).min(length_a);
        let (mut best, mut second, mut best_idx, mut second_idx) = (0i64, 0i64, 0i64, 0i64);
        for local_a in search_start..search_end {
            let slot = self.similarity_index(local_a, row, closest);
            if self.similarities[slot] == -1 {
                let shared = self.prints_b[(start_b + local_b) as usize]
                    .similarity(&self.prints_a[(start_a + local_a) as usize]) as i64;
                self.similarities[slot] = shared * (1000 - (local_a - closest).abs());
            }
            let similarity = self.similarities[slot];
            if similarity > best {
                second = best;
                second_idx = best_idx;
                best = similarity;
                best_idx = local_a;
            } else if similarity > second {
                second = similarity;
                second_idx = local_a;
            }
        }
        if best == 0 {
            self.certainties[row as usize] = NOTHING_MATCHES;
            self.result[row as usize] = -1;
        } else {
            self.certainties[row as usize] = best * 2 - second;
            self.result[row as usize] = start_a + best_idx;
            self.second_best[row as usize] = start_a + second_idx;
        }
    }

    /// Git's `fuzzy_find_matching_lines_recurse`: B lines `start_b..start_b + length_b` (chunk rows
    /// from `row_off`) against A lines `start_a..start_a + length_a`.
    fn recurse(&mut self, start_a: i64, start_b: i64, length_a: i64, length_b: i64, row_off: i64) {
        let mut most_certain_b: i64 = -1;
        let mut most_certainty: i64 = -1;
        for local_b in 0..length_b {
            self.find_best(start_a, length_a, start_b, local_b, row_off + local_b);
            let certainty = self.certainties[(row_off + local_b) as usize];
            if certainty > most_certainty {
                most_certainty = certainty;
                most_certain_b = local_b;
            }
        }
        if most_certain_b == -1 {
            return;
        }
        let most_certain_a = self.result[(row_off + most_certain_b) as usize];
        let matched_b = self.prints_b[(start_b + most_certain_b) as usize].clone();
        self.prints_a[most_certain_a as usize].subtract(&matched_b);

        let invalidate_min = (most_certain_b - self.max_b).max(0);
        let invalidate_max = (most_certain_b + self.max_b + 1).min(length_b);
        for local_b in invalidate_min..invalidate_max {
            let closest = self.b_to_a.map(local_b + start_b) - start_a;
            if (most_certain_a - start_a - closest).abs() > self.max_a {
                continue;
            }
            let slot = self.similarity_index(most_certain_a - start_a, row_off + local_b, closest);
            self.similarities[slot] = -1;
        }
        for local_b in (invalidate_min..most_certain_b).rev() {
            let row = (row_off + local_b) as usize;
            if self.certainties[row] >= 0
                && (self.result[row] >= most_certain_a || self.second_best[row] >= most_certain_a)
            {
                self.certainties[row] = NOT_CALCULATED;
            }
        }
        for local_b in most_certain_b + 1..invalidate_max {
            let row = (row_off + local_b) as usize;
            if self.certainties[row] >= 0
                && (self.result[row] <= most_certain_a || self.second_best[row] <= most_certain_a)
            {
                self.certainties[row] = NOT_CALCULATED;
            }
        }
        if most_certain_b > 0 {
            self.recurse(start_a, start_b, most_certain_a + 1 - start_a, most_certain_b, row_off);
        }
        if most_certain_b + 1 < length_b {
            let second_start_a = most_certain_a;
            let offset_b = most_certain_b + 1;
            let second_start_b = start_b + offset_b;
            self.recurse(
                second_start_a,
                second_start_b,
                length_a + start_a - second_start_a,
                length_b + start_b - second_start_b,
                row_off + offset_b,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cases of git's `t8014-blame-ignore-fuzzy.sh` that exercise the matching on its own: each
    /// target line and the parent line (1-based) git's heuristic hands it to.
    #[test]
    fn fuzzy_matching_follows_gits_examples() {
        let parent = "1\n2\n3\nabcdef\n5\n6\n7\nijkl\n9\n10\n11\npqrs\n13\n14\n15\nwxyz\n17\n18\n19\n";
        let target = "abcde\nijk\npqr\nwxy\n";
        let guesses = guess_lines(parent.as_bytes(), target.as_bytes(), gix::diff::blob::Algorithm::Myers);
        assert_eq!(guesses, vec![Some(3), Some(7), Some(11), Some(15)]);
    }

    #[test]
    fn fingerprints_count_lower_cased_pairs() {
        let darth = Fingerprint::of(b"Darth   Radar");
        assert_eq!(darth.0.iter().map(|(_, count)| count).sum::<usize>(), 12);
        assert_eq!(Fingerprint::of(b"cat mat").similarity(&Fingerprint::of(b"father rather")), 2);
        assert_eq!(Fingerprint::of(b"tim").similarity(&Fingerprint::of(b"mit")), 0);
    }
}
