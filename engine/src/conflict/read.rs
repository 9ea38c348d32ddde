//! `conflict.read` (design.md#tools, issue 5): the active conflict as data.
//!
//! It answers the conflict, not the files. Unmerged paths come from the index (stages 1-3, as
//! `git ls-files -u`); marker regions are found by streaming the work-tree file line by line with
//! the path's `conflict-marker-size` (default 7), and each region carries its ours, theirs and
//! (diff3 / zdiff3 markers) base lines with [`CONTEXT`] lines of context on each side, the lines
//! `git diff` shows of an unmerged path around a conflict. Whole sides (each stage's blob, capped
//! to `maxBytesPerSide`) only with `sides`. The operation, its progress as `git status` counts it,
//! the commits still to replay that touch a conflicted path, and the commands that conclude or
//! abort it come from [`super::state`]. Nothing is written and no lock is taken.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use serde::Serialize;

use super::markers::{LineSpan, MarkerRegion, Scanner};
use super::state::{self, Activity, Producer, Progress, Stages};
use super::{TouchingCommit, is_binary, marker_sizes};
use crate::budget::{Budgeted, Measure, Omitted, fit_sections};
use crate::error::{Error, Result};
use crate::facets::utf8;

/// Knobs of [`read`]; bounds are checked by the caller's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Most files described (1-200); the count stays exact.
    pub max_files: usize,
    /// Most bytes of each side's content, and of each region's text (1..=1 MiB); `size` stays
    /// exact.
    pub max_bytes_per_side: usize,
    /// `true` to add each stage's whole blob (capped to `max_bytes_per_side`) after the regions;
    /// default false.
    pub sides: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self { max_files: 20, max_bytes_per_side: 16 * 1024, sides: false }
    }
}

/// Lines of context shown above and below each region, as `git diff`'s default `-U3`.
pub const CONTEXT: usize = 3;

/// The largest `maxBytesPerSide`: 1 MiB.
pub const MAX_BYTES_PER_SIDE: usize = 1024 * 1024;

/// The message of a result without a conflict.
pub const NO_CONFLICT: &str = "No conflict in progress: the index has no unmerged paths.";

/// The result. Without a conflict, `conflict` is `false` and `message` says so (an operation may
/// still be shown).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConflictRead {
    /// `true` when the index has unmerged paths; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub conflict: bool,
    /// Set when there is no conflict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'static str>,
    /// The operation in progress, or `null`; default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<Activity>,
    /// The state files or facts the operation was recognised by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// Progress of a rebase (commands done and remaining, as `git status` counts them) or of a
    /// cherry-pick / revert sequence (remaining).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
    /// The git commands that conclude the operation once every path is resolved, e.g.
    /// `git add <path>; git rebase --continue`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conclude: Option<&'static str>,
    /// The git command that aborts it, e.g. `git rebase --abort` (a stash apply has none: it says
    /// so).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abort: Option<&'static str>,
    /// Commits still to replay (`rebase-merge/git-rebase-todo`) that change a conflicted path, in
    /// todo order: resolving now may conflict again there; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub upcoming: Vec<TouchingCommit>,
    /// The commit behind stage 2; default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ours: Option<Producer>,
    /// The commit behind stage 3; default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theirs: Option<Producer>,
    /// Exact number of unmerged paths; default 0.
    #[serde(skip_serializing_if = "crate::compact::is_zero")]
    pub conflicted_files: usize,
    /// Unmerged paths in path order, at most `maxFiles`; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ConflictFile>,
}

/// How `git status` names an unmerged path, from which stages exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileStatus {
    /// `UU`: stages 1, 2, 3.
    BothModified,
    /// `AA`: stages 2, 3.
    BothAdded,
    /// `AU`: stage 2 only.
    AddedByUs,
    /// `UA`: stage 3 only.
    AddedByThem,
    /// `DU`: stages 1, 3.
    DeletedByUs,
    /// `UD`: stages 1, 2.
    DeletedByThem,
    /// `DD`: stage 1 only.
    BothDeleted,
}

impl FileStatus {
    /// The classification of a path with stages base / ours / theirs present as given.
    pub fn of(base: bool, ours: bool, theirs: bool) -> Self {
        match (base, ours, theirs) {
            (true, true, true) => Self::BothModified,
            (false, true, true) => Self::BothAdded,
            (false, true, false) => Self::AddedByUs,
            (false, false, true) => Self::AddedByThem,
            (true, false, true) => Self::DeletedByUs,
            (true, true, false) => Self::DeletedByThem,
            // Stage 1 alone; no stage at all never reaches here.
            (_, false, false) => Self::BothDeleted,
        }
    }
}

/// One unmerged path.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConflictFile {
    /// Repository-relative path.
    pub path: String,
    /// The `git status` classification.
    pub status: FileStatus,
    /// Stage 1 (common ancestor), if present; default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<SideBlob>,
    /// Stage 2, if present; default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ours: Option<SideBlob>,
    /// Stage 3, if present; default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theirs: Option<SideBlob>,
    /// The file in the work tree and its marker regions.
    pub work_tree: WorkTreeFile,
}

/// One stage's blob: identity, full size, flags, and the content capped to `maxBytesPerSide`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SideBlob {
    /// Object id, abbreviated like `git ls-files -u --abbrev` (shortest unique, at least 7 digits).
    pub oid: String,
    /// Mode in octal, e.g. `120000` (symlink), `160000` (submodule), `100755`; default `100644` (a
    /// regular file).
    #[serde(skip_serializing_if = "is_regular_file")]
    pub mode: String,
    /// Full size in bytes.
    pub size: usize,
    /// `true` for binary content (a NUL byte in the first 8000 bytes): no content is given.
    #[serde(skip_serializing_if = "is_false")]
    pub binary: bool,
    /// `true` for a submodule commit: no content.
    #[serde(skip_serializing_if = "is_false")]
    pub submodule: bool,
    /// `true` for text that is not valid UTF-8: `content` has U+FFFD in place of invalid bytes.
    #[serde(skip_serializing_if = "is_false")]
    pub non_utf8: bool,
    /// `true` when `content` holds fewer bytes than `size` (cut at `maxBytesPerSide`, on a
    /// character boundary).
    #[serde(skip_serializing_if = "is_false")]
    pub truncated: bool,
    /// `true` when the token budget left `content` out (counted in `omitted.contents`); the content
    /// is given only with `sides`.
    #[serde(skip_serializing_if = "is_false")]
    pub content_omitted: bool,
    /// The text, absent for binary and submodule entries or when the budget cut it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// The work-tree file of an unmerged path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkTreeFile {
    /// `false` when the path is absent (e.g. deleted by one side and not written back) or not a
    /// regular file; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub exists: bool,
    /// Size in bytes; default 0.
    #[serde(skip_serializing_if = "crate::compact::is_zero_u64")]
    pub size: u64,
    /// `true` when it is binary: Git writes no markers into binary files.
    #[serde(skip_serializing_if = "is_false")]
    pub binary: bool,
    /// The `conflict-marker-size` the markers were searched with.
    pub marker_size: usize,
    /// Exact number of complete marker regions; default 0.
    #[serde(skip_serializing_if = "crate::compact::is_zero")]
    pub region_count: usize,
    /// The regions, in file order (the budget may cut them; see `omitted.markerRegions`); default
    /// empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<Region>,
}

/// One conflict region: its marker lines and spans, and the text of its sides with context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Region {
    /// Where the markers and sides are (1-based lines of the work-tree file).
    #[serde(flatten)]
    pub markers: MarkerRegion,
    /// Up to [`CONTEXT`] lines above the `<<<<<<<` line (not shared with the previous region);
    /// default empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub before: String,
    /// Our side's lines, each ending in a newline; default empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ours_text: String,
    /// The base's lines (diff3 and zdiff3 markers only); default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_text: Option<String>,
    /// Their side's lines; default empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub theirs_text: String,
    /// Up to [`CONTEXT`] lines below the `>>>>>>>` line; default empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub after: String,
    /// `true` when the region's text was cut at `maxBytesPerSide` bytes; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub truncated: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// `true` for git's default mode, `100644`: left out of the JSON.
fn is_regular_file(mode: &str) -> bool {
    mode == "100644"
}

/// Reads the active conflict.
///
/// # Errors
/// [`Error::GitRead`] when the index or a blob cannot be read.
pub fn read(repo: &gix::Repository, options: &Options) -> Result<ConflictRead> {
    let index = repo.index_or_empty().map_err(|err| Error::git("index", err))?;
    let mut unmerged: BTreeMap<BString, Stages> = BTreeMap::new();
    for entry in index.entries() {
        let stage = entry.stage_raw() as usize;
        if (1..=3).contains(&stage) {
            let stages = unmerged.entry(entry.path(&index).to_owned()).or_default();
            stages[stage - 1] = Some((entry.mode.bits(), entry.id));
        }
    }
    let found = state::detect(repo, &unmerged)?;
    let shown: Vec<(&BString, &Stages)> = unmerged.iter().take(options.max_files).collect();
    let paths: Vec<&[u8]> = shown.iter().map(|(path, _)| path.as_slice()).collect();
    let source = gix::worktree::stack::state::attributes::Source::WorktreeThenIdMapping;
    let sizes = if paths.is_empty() { Vec::new() } else { marker_sizes(repo, &index, source, &paths)? };
    let mut files = Vec::with_capacity(shown.len());
    for ((path, stages), marker_size) in shown.into_iter().zip(sizes) {
        let side =
            |stage: Option<(u32, ObjectId)>| stage.map(|(mode, id)| side_blob(repo, mode, id, options)).transpose();
        files.push(ConflictFile {
            path: utf8(path),
            status: FileStatus::of(stages[0].is_some(), stages[1].is_some(), stages[2].is_some()),
            base: side(stages[0])?,
            ours: side(stages[1])?,
            theirs: side(stages[2])?,
            work_tree: work_tree_file(repo.workdir(), path, marker_size, options.max_bytes_per_side),
        });
    }
    let all_paths: Vec<&[u8]> = unmerged.keys().map(|path| path.as_slice()).collect();
    let upcoming = match found.activity {
        Some(Activity::Rebase) if !all_paths.is_empty() => state::upcoming(repo, &all_paths)?,
        _ => Vec::new(),
    };
    let (conclude, abort) = found.activity.map(state::conclude_or_abort).unzip();
    Ok(ConflictRead {
        conflict: !unmerged.is_empty(),
        message: unmerged.is_empty().then_some(NO_CONFLICT),
        operation: found.activity,
        evidence: found.evidence,
        progress: found.progress,
        conclude,
        abort,
        upcoming,
        ours: found.ours,
        theirs: found.theirs,
        conflicted_files: unmerged.len(),
        files,
    })
}

/// Cuts `full` to `max_tokens`: files (with sizes and flags) first, then marker regions, then
/// contents; files beyond `maxFiles` are counted in `omitted.files` too.
///
/// # Errors
/// [`Error::Invalid`] (`budget_below_floor`) when the required fields alone exceed `max_tokens`.
pub fn fit(
    full: ConflictRead,
    max_tokens: usize,
    measure: &mut Measure<'_, ConflictRead>,
) -> Result<Budgeted<ConflictRead>> {
    let regions_in = |read: &ConflictRead| read.files.iter().map(|file| file.work_tree.regions.len()).sum::<usize>();
    let contents_in =
        |read: &ConflictRead| read.files.iter().flat_map(sides).filter(|side| side.content.is_some()).count();
    let totals = [full.files.len(), regions_in(&full), contents_in(&full)];
    let names = ["files", "markerRegions", "contents"];
    // Count what is really missing: regions and contents of files that were cut are missing too, and files beyond
    // `maxFiles` were never read. Candidates are measured with these counts, so the answer is what was measured.
    let real_totals = [full.conflicted_files, totals[1], totals[2]];
    let real_omitted = |data: &ConflictRead| {
        let shown = [data.files.len(), regions_in(data), contents_in(data)];
        Omitted::from_counts(&names, &real_totals, &shown)
    };
    let mut measure_real = |candidate: &Budgeted<ConflictRead>| {
        measure(&Budgeted { omitted: real_omitted(&candidate.data), data: candidate.data.clone() })
    };
    let fitted = fit_sections(&full, &names, &totals, max_tokens, &cut, &mut measure_real)?;
    Ok(Budgeted { omitted: real_omitted(&fitted.data), data: fitted.data })
}

/// `full` with its first `shown[0]` files, `shown[1]` marker regions and `shown[2]` side contents.
pub(crate) fn cut(full: &ConflictRead, shown: &[usize]) -> ConflictRead {
    let mut out = ConflictRead { files: full.files[..shown[0]].to_vec(), ..full.clone() };
    let (mut regions_left, mut contents_left) = (shown[1], shown[2]);
    for file in &mut out.files {
        let keep = regions_left.min(file.work_tree.regions.len());
        file.work_tree.regions.truncate(keep);
        regions_left -= keep;
        for side in [&mut file.ours, &mut file.theirs, &mut file.base].into_iter().flatten() {
            if side.content.is_some() {
                if contents_left > 0 {
                    contents_left -= 1;
                } else {
                    side.content = None;
                    side.content_omitted = true;
                }
            }
        }
    }
    out
}

/// A file's sides in budget order: ours, theirs, base.
fn sides(file: &ConflictFile) -> impl Iterator<Item = &SideBlob> {
    [&file.ours, &file.theirs, &file.base].into_iter().flatten()
}

fn side_blob(repo: &gix::Repository, mode: u32, id: ObjectId, options: &Options) -> Result<SideBlob> {
    let mut side = SideBlob {
        oid: crate::facets::commits::abbreviate(gix::prelude::ObjectIdExt::attach(id, repo)),
        mode: format!("{mode:06o}"),
        size: 0,
        binary: false,
        submodule: mode == 0o160000,
        non_utf8: false,
        truncated: false,
        content_omitted: false,
        content: None,
    };
    if side.submodule {
        return Ok(side);
    }
    let blob = repo.find_object(id).map_err(|err| Error::git("a conflicting blob", err))?;
    let data = &blob.data;
    side.size = data.len();
    if is_binary(data) {
        side.binary = true;
        return Ok(side);
    }
    let mut shown = &data[..data.len().min(options.max_bytes_per_side)];
    let text = match std::str::from_utf8(shown) {
        Ok(text) => text.to_owned(),
        // The cap split a character: show the valid prefix.
        Err(err) if err.error_len().is_none() => {
            shown = &shown[..err.valid_up_to()];
            String::from_utf8_lossy(shown).into_owned()
        }
        Err(_) => {
            side.non_utf8 = true;
            String::from_utf8_lossy(shown).into_owned()
        }
    };
    side.truncated = shown.len() < data.len();
    side.content = options.sides.then_some(text);
    Ok(side)
}

/// Describes the work-tree file at `path`, streaming it for markers; a path that leaves the work
/// tree (through `..` or a symlinked directory) is treated as absent and never read.
fn work_tree_file(workdir: Option<&Path>, path: &BString, marker_size: usize, cap: usize) -> WorkTreeFile {
    let mut out =
        WorkTreeFile { exists: false, size: 0, binary: false, marker_size, region_count: 0, regions: Vec::new() };
    let Some(workdir) = workdir else { return out };
    if crate::repository::check_relative_path(&utf8(path)).is_err() {
        return out;
    }
    let Ok(relative) = gix::path::from_bstr(path.as_bstr()) else { return out };
    let file = workdir.join(relative);
    let inside = match (file.canonicalize(), workdir.canonicalize()) {
        (Ok(file), Ok(root)) => file.starts_with(root),
        _ => false,
    };
    if !inside {
        return out;
    }
    // Not followed, opened without blocking: a FIFO or device in the file's place is no file to scan.
    let Ok(crate::regular_file::Opened::File(handle, size)) = crate::regular_file::open(&file, false) else {
        return out;
    };
    out.exists = true;
    out.size = size;
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, handle);
    // Git's binary test looks at the first 8000 bytes; a binary file is never scanned line by line.
    if let Ok(head) = reader.fill_buf()
        && is_binary(head)
    {
        out.binary = true;
        return out;
    }
    let mut scanner = Scanner::new(marker_size);
    let mut line = Vec::new();
    while matches!(reader.read_until(b'\n', &mut line), Ok(read) if read > 0) {
        scanner.feed(&line);
        line.clear();
    }
    let spans = scanner.finish();
    out.region_count = spans.len();
    // The second pass reads the same open file again, never the path: what is there now may be another file.
    let mut handle = reader.into_inner();
    out.regions = match std::io::Seek::rewind(&mut handle) {
        Ok(()) => region_texts(std::io::BufReader::with_capacity(64 * 1024, handle), spans, cap),
        Err(_) => spans.into_iter().map(Region::empty).collect(),
    };
    out
}

impl Region {
    fn empty(markers: MarkerRegion) -> Self {
        Self {
            markers,
            before: String::new(),
            ours_text: String::new(),
            base_text: None,
            theirs_text: String::new(),
            after: String::new(),
            truncated: false,
        }
    }
}

/// Streams the file a second time and gives each region its lines: [`CONTEXT`] lines above (after
/// the previous region's context), the sides, and [`CONTEXT`] lines below (before the next region);
/// each region's text is cut at `cap` bytes.
fn region_texts(mut reader: impl BufRead, spans: Vec<MarkerRegion>, cap: usize) -> Vec<Region> {
    let mut windows = Vec::with_capacity(spans.len());
    let mut previous_high = 0;
    for (idx, span) in spans.iter().enumerate() {
        let low = span.start.saturating_sub(CONTEXT).max(previous_high + 1).max(1);
        let next_start = spans.get(idx + 1).map_or(usize::MAX, |next| next.start);
        let high = (span.end + CONTEXT).min(next_start.saturating_sub(1));
        windows.push((low, high));
        previous_high = high;
    }
    let mut regions: Vec<Region> = spans.into_iter().map(Region::empty).collect();
    let mut used = vec![0usize; regions.len()];
    let (mut current, mut number, mut line) = (0usize, 0usize, Vec::new());
    while current < regions.len() && matches!(reader.read_until(b'\n', &mut line), Ok(read) if read > 0) {
        number += 1;
        while current < regions.len() && number > windows[current].1 {
            current += 1;
        }
        if current < regions.len() && number >= windows[current].0 {
            let region = &mut regions[current];
            let markers = &region.markers;
            let inside = |span: LineSpan| number >= span.start && number < span.start + span.count;
            let mut text = String::from_utf8_lossy(&line).into_owned();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            let target = if number < markers.start {
                Some(&mut region.before)
            } else if number > markers.end {
                Some(&mut region.after)
            } else if inside(markers.ours) {
                Some(&mut region.ours_text)
            } else if markers.base.is_some_and(inside) {
                Some(region.base_text.get_or_insert_with(String::new))
            } else if inside(markers.theirs) {
                Some(&mut region.theirs_text)
            } else {
                None
            };
            if let Some(target) = target {
                if used[current] + text.len() > cap {
                    region.truncated = true;
                } else {
                    used[current] += text.len();
                    target.push_str(&text);
                }
            }
        }
        line.clear();
    }
    for region in &mut regions {
        if region.markers.base.is_some() && region.base_text.is_none() {
            region.base_text = Some(String::new());
        }
    }
    regions
}

#[cfg(test)]
mod tests {
    use super::FileStatus;

    #[test]
    fn stage_classification_matches_git_status() {
        assert_eq!(FileStatus::of(true, true, true), FileStatus::BothModified);
        assert_eq!(FileStatus::of(false, true, true), FileStatus::BothAdded);
        assert_eq!(FileStatus::of(false, true, false), FileStatus::AddedByUs);
        assert_eq!(FileStatus::of(false, false, true), FileStatus::AddedByThem);
        assert_eq!(FileStatus::of(true, false, true), FileStatus::DeletedByUs);
        assert_eq!(FileStatus::of(true, true, false), FileStatus::DeletedByThem);
        assert_eq!(FileStatus::of(true, false, false), FileStatus::BothDeleted);
    }
}
