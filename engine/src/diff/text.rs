//! `diff.text` (design.md#tools): the unified patch of a selection, like `git diff`, cut by whole
//! hunks to byte, line and token budgets.
//!
//! Selections: neither `base` nor `head`: index vs work tree (`git diff`); `staged`: `base`
//! (default `HEAD`) vs index (`git diff --cached`); `base` only: that revision vs work tree
//! (`git diff <base>`); `head` given without `base`: `HEAD` vs `head`. `head` is a revision,
//! `INDEX` or `WORKTREE`; `base` a revision or `INDEX`.
//!
//! Unmerged paths (a stopped merge, rebase, cherry-pick, revert or stash apply) are shown as
//! `git diff` shows them: against the work tree, git's combined diff (`diff --cc`, `@@@` hunks,
//! conflict markers as added lines; see the `combined` module) when both sides have the file, else
//! `* Unmerged path <path>` and ours (stage 2) against the work-tree file; with their `--numstat`
//! counts (ours against the work-tree file). Against anything else, `* Unmerged path <path>` only.
//! A combined diff is for reading: `git apply` refuses it.
//!
//! Otherwise the patch is one `git apply`-able text: every file's `diff --git` header,
//! `new file mode` / `deleted file mode` / `old mode`+`new mode`, `similarity index` +
//! `rename from/to`, `index` line, `---`/`+++`, and `@@` hunks (an added file's header is
//! `@@ -0,0 +1,N @@`, as git writes it). Binary files get git's `Binary files a/x and b/x differ`
//! line and carry no content (`git apply` refuses such a patch), unless `binary` asks for their
//! content as `GIT binary patch` blocks (like `git diff --binary`); text that is not UTF-8 is
//! always carried exactly as a `GIT binary patch`, so the JSON text never mangles it.
//!
//! Cuts: hunks are units (a file's header travels with its first kept hunk; a file without hunks is
//! one unit). In patch order, each unit is kept if it still fits the remaining bytes (`maxBytes`),
//! lines (`maxLines`) and tokens (`maxTokens`, the whole envelope), else dropped; so what is kept
//! always applies. Every file stays listed with `inPatch` (`full`, `partial`, `omitted`), and the
//! listing itself is cut only when the budget cannot hold it (`omitted.files`).

use serde::Serialize;

use super::patch::{Output, Rendered, Renderer, unmerged_line};
use super::{FileStat, Totals, diff_sides, head_side};
use crate::budget::{self, Budgeted, Measure, Omitted};
use crate::compact::Implied;
use crate::compare::changes;
use crate::compare::side::{self, PathFilter, Side};
use crate::error::{Error, InvalidReason, Result};
use crate::interrupt::Interrupt;
use crate::repository::check_relative_path;
use crate::revision::resolve_commit;

/// `maxBytes` default: 64 KiB of patch.
pub const DEFAULT_MAX_BYTES: usize = 64 * 1024;
/// `maxBytes` upper bound: 1 MiB of patch.
pub const MAX_MAX_BYTES: usize = 1024 * 1024;
/// The `head` naming the index.
pub const INDEX: &str = "INDEX";
/// The `head` naming the work tree.
pub const WORKTREE: &str = "WORKTREE";

/// What to compare, and the byte and line caps of the patch.
#[derive(Debug, Clone)]
pub struct Options {
    /// Old side: a revision or `INDEX`; see the module docs for the default.
    pub base: Option<String>,
    /// New side: a revision, `INDEX` or `WORKTREE`.
    pub head: Option<String>,
    /// Compare with the index like `git diff --cached` (then `head` must be absent or `INDEX`).
    pub staged: bool,
    /// Only this repository-relative file or directory (literal, no `..`).
    pub path: Option<String>,
    /// Most bytes of patch text (1..=[`MAX_MAX_BYTES`]).
    pub max_bytes: usize,
    /// Most lines of patch text, if capped.
    pub max_lines: Option<usize>,
    /// Carry binary content as `GIT binary patch` blocks (like `git diff --binary`; each side up to
    /// 1 MiB), so that `git apply` recreates binary files too. Without it, binary files get git's
    /// `Binary files ... differ` line, which `git apply` refuses.
    pub binary: bool,
}

/// The patch and its listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The old side: a full commit sha, `INDEX`, or `null` for nothing (an unborn `HEAD`); default
    /// `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// The new side: a full commit sha, `INDEX` or `WORKTREE`; default `WORKTREE` (left out of the
    /// JSON).
    #[serde(skip_serializing_if = "is_worktree")]
    pub head: String,
    /// The path filter, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Exact totals over all changed files, given only when the budget cut the file list
    /// (`omitted.files`): else they are the sums over `files` (default `null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub totals: Option<Totals>,
    /// Every changed file in path order (cut only if the budget cannot hold the listing:
    /// `omitted.files`); default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileEntry>,
    /// The unified patch of the kept hunks; `git apply` accepts it. Default empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub patch: String,
    /// `true` when any hunk or file was left out; default false.
    #[serde(skip_serializing_if = "crate::compact::is_false")]
    pub truncated: bool,
    /// Bytes of the whole, uncut patch; left out of the JSON unless something was cut
    /// (`truncated`): it is then the length of `patch`.
    #[serde(skip_serializing_if = "Implied::is_implied")]
    pub total_bytes: Implied<usize>,
    /// Lines of the whole, uncut patch; left out of the JSON unless something was cut
    /// (`truncated`): it is then the number of lines of `patch`.
    #[serde(skip_serializing_if = "Implied::is_implied")]
    pub total_lines: Implied<usize>,
    /// Submodules of the work tree side that could not be read, each with `error: {reason}` (a git
    /// dir outside the allowed roots, a name git ignores as suspicious, a gitdir that is gone, a
    /// `.gitmodules` that is no regular file): they show no change in `files` whatever their
    /// checkout holds. Absent when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<crate::Unreadable>,
}

/// `true` for the work tree, `head`'s default: it is then left out of the JSON.
fn is_worktree(head: &str) -> bool {
    head == WORKTREE
}

/// One file of the listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    /// Path, status, counts and markings.
    #[serde(flatten)]
    pub stat: FileStat,
    /// Hunks in its patch (a `GIT binary patch` block counts as one). Left out of the JSON when 0,
    /// and when its whole patch is in `patch` (`inPatch` full), whose hunk headers (`@@`, `@@@`)
    /// then say it.
    #[serde(skip_serializing_if = "Implied::is_implied")]
    pub hunks: Implied<usize>,
    /// How much of its patch `patch` holds; default `full` (also left out for a file without a
    /// patch).
    #[serde(skip_serializing_if = "in_patch_default")]
    pub in_patch: Option<Inclusion>,
    /// For `partial`: how many of its hunks are in `patch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hunks_shown: Option<usize>,
}

/// `true` for a whole patch or none at all: `inPatch` is then left out of the JSON.
fn in_patch_default(inclusion: &Option<Inclusion>) -> bool {
    matches!(inclusion, None | Some(Inclusion::Full))
}

/// How much of a file's patch was kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Inclusion {
    /// All of it.
    Full,
    /// Some hunks (with the header).
    Partial,
    /// None of it: the budget had no room.
    Omitted,
}

/// The uncut result: the rendered files and what was compared.
#[derive(Debug, Clone)]
pub struct Full {
    base: Option<String>,
    head: String,
    path: Option<String>,
    files: Vec<Rendered>,
    unreadable: Vec<crate::Unreadable>,
}

/// Reads the selection and renders every changed file.
///
/// # Errors
/// As [`crate::Engine::diff_text`].
pub fn read(repo: &gix::Repository, options: &Options, interrupt: &Interrupt) -> Result<Full> {
    let sides = Sides { base: options.base.as_deref(), head: options.head.as_deref(), staged: options.staged };
    let (Selection { old, new, base, head }, diffed) =
        select_and_diff(repo, sides, options.path.as_deref(), interrupt)?;
    let against_worktree = old == Side::Index && new == Side::Worktree;
    let output = if options.binary { Output::PatchWithBinary } else { Output::Patch };
    let mut renderer = Renderer::new(repo, diffed.new_root.clone(), &diffed.attribute_files, output)?;
    let mut files = Vec::with_capacity(diffed.changes.len() + diffed.unmerged.len());
    for change in &diffed.changes {
        interrupt.check()?;
        files.push(renderer.render(change)?);
    }
    for (path, stages) in &diffed.unmerged {
        interrupt.check()?;
        let rendered = match (against_worktree, &diffed.new_root) {
            (true, Some(workdir)) => {
                let file = side::worktree_file(repo, workdir, path.as_ref(), stages)?;
                renderer.unmerged(path.as_ref(), stages, file.as_ref())?
            }
            _ => Rendered {
                stat: FileStat::unmerged(path),
                sections: vec![unmerged_line(path.as_ref(), renderer.quoting)],
                texts: None,
            },
        };
        files.push(rendered);
    }
    files.sort_by(|a, b| a.stat.path.cmp(&b.stat.path));
    let mut unreadable = Vec::new();
    if new == Side::Worktree {
        unreadable = crate::facets::worktree::unreadable_submodules(repo)?;
        let filter = PathFilter::new(options.path.as_deref());
        unreadable.retain(|item| filter.matches(item.path.as_str().into()));
    }
    Ok(Full { base, head, path: options.path.clone(), files, unreadable })
}

/// The selection arguments `diff.text` and `diff.semantic` share, as the caller gave them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sides<'a> {
    /// Old side: a revision or `INDEX`.
    pub(super) base: Option<&'a str>,
    /// New side: a revision, `INDEX` or `WORKTREE`.
    pub(super) head: Option<&'a str>,
    /// Compare with the index like `git diff --cached`.
    pub(super) staged: bool,
}

/// Checks `path`, resolves the selection (see [`selection`]) and diffs its two sides below `path`,
/// with the configured rename detection: the set-up `diff.text` and `diff.semantic` share.
///
/// # Errors
/// As [`check_relative_path`] for `path`; as [`selection`] for refused sides; [`Error::GitRead`]
/// when the sides cannot be read; [`Error::Cancelled`] once `interrupt` is triggered.
pub(super) fn select_and_diff(
    repo: &gix::Repository,
    sides: Sides<'_>,
    path: Option<&str>,
    interrupt: &Interrupt,
) -> Result<(Selection, super::Diffed)> {
    if let Some(path) = path {
        check_relative_path(path)?;
    }
    let selection = selection(repo, sides.base, sides.head, sides.staged)?;
    let filter = PathFilter::new(path);
    let diffed =
        diff_sides(repo, selection.old, selection.new, &filter, changes::configured_rewrites(repo)?, interrupt)?;
    Ok((selection, diffed))
}

/// The two sides a selection compares, and how the answer names them.
pub(crate) struct Selection {
    /// The old side.
    pub(crate) old: Side,
    /// The new side.
    pub(crate) new: Side,
    /// The old side's name: a full sha or `INDEX`, or `None` for an unborn `HEAD`.
    pub(crate) base: Option<String>,
    /// The new side's name: a full sha, `INDEX` or `WORKTREE`.
    pub(crate) head: String,
}

/// Resolves `base`, `head` and `staged` as the module docs say (shared with `diff.semantic`).
///
/// # Errors
/// [`InvalidReason::InvalidRevision`] or [`InvalidReason::UnknownRevision`] for a refused revision,
/// or `staged` with a `head` other than `INDEX`; [`Error::GitRead`] when `HEAD` cannot be read.
pub(crate) fn selection(
    repo: &gix::Repository,
    base: Option<&str>,
    head: Option<&str>,
    staged: bool,
) -> Result<Selection> {
    let (old, base_name) = match (base, head, staged) {
        (Some(INDEX), ..) => (Side::Index, Some(INDEX.to_owned())),
        (Some(spec), ..) => {
            let (side, sha) = revision(repo, spec)?;
            (side, Some(sha))
        }
        (None, None, false) => (Side::Index, Some(INDEX.to_owned())),
        (None, ..) => match head_side(repo)? {
            Side::Empty => (Side::Empty, None),
            side => (side, Some(resolve_commit(repo, "HEAD")?.to_string())),
        },
    };
    let (new, head_name) = match (head, staged) {
        (None | Some(INDEX), true) | (Some(INDEX), false) => (Side::Index, INDEX.to_owned()),
        (Some(spec), true) => {
            return Err(Error::invalid(
                InvalidReason::InvalidRevision,
                format!("staged compares with the index: leave head out or set it to INDEX, not {spec:?}"),
            ));
        }
        (None | Some(WORKTREE), false) => (Side::Worktree, WORKTREE.to_owned()),
        (Some(spec), false) => revision(repo, spec)?,
    };
    Ok(Selection { old, new, base: base_name, head: head_name })
}

/// A revision's tree and its full sha.
fn revision(repo: &gix::Repository, spec: &str) -> Result<(Side, String)> {
    let id = resolve_commit(repo, spec)?;
    let to_err = |err| Error::git("a commit", err);
    let tree = repo.find_commit(id).map_err(to_err)?.tree_id().map_err(to_err)?;
    Ok((Side::Tree(tree.detach()), id.to_string()))
}

/// A piece of the patch a budget keeps or drops: one hunk, or a file section that has no hunks (its
/// header).
#[derive(Debug, Clone, Copy)]
struct Unit {
    file: usize,
    section: usize,
    hunk: Option<usize>,
}

fn units_of(full: &Full) -> Vec<Unit> {
    let mut units = Vec::new();
    for (file, rendered) in full.files.iter().enumerate() {
        for (section, part) in rendered.sections.iter().enumerate() {
            if part.hunks.is_empty() {
                units.push(Unit { file, section, hunk: None });
            } else {
                units.extend((0..part.hunks.len()).map(|hunk| Unit { file, section, hunk: Some(hunk) }));
            }
        }
    }
    units
}

/// The report showing the first `files_shown` files and the `kept` units, with omissions counted.
fn assemble(
    full: &Full,
    units: &[Unit],
    files_shown: usize,
    kept: &[bool],
    totals: (usize, usize),
) -> Budgeted<Report> {
    let mut patch = String::new();
    let mut open_section = None;
    let mut kept_units = vec![0usize; full.files.len()];
    let mut kept_hunks = vec![0usize; full.files.len()];
    let mut all_units = vec![0usize; full.files.len()];
    for (unit, &keep) in units.iter().zip(kept) {
        all_units[unit.file] += 1;
        if !keep {
            continue;
        }
        kept_units[unit.file] += 1;
        let section = &full.files[unit.file].sections[unit.section];
        if open_section != Some((unit.file, unit.section)) {
            patch.push_str(&section.header);
            open_section = Some((unit.file, unit.section));
        }
        if let Some(hunk) = unit.hunk {
            patch.push_str(&section.hunks[hunk]);
            kept_hunks[unit.file] += 1;
        }
    }
    let files = full.files[..files_shown]
        .iter()
        .enumerate()
        .map(|(file, rendered)| {
            let hunks = rendered.sections.iter().map(|section| section.hunks.len()).sum();
            let in_patch = match (kept_units[file], all_units[file]) {
                (_, 0) => None,
                (kept, all) if kept == all => Some(Inclusion::Full),
                (0, _) => Some(Inclusion::Omitted),
                _ => Some(Inclusion::Partial),
            };
            let hunks_shown = (in_patch == Some(Inclusion::Partial)).then_some(kept_hunks[file]);
            let hunks = Implied::new(hunks, hunks == 0 || in_patch_default(&in_patch));
            FileEntry { stat: rendered.stat.clone(), hunks, in_patch, hunks_shown }
        })
        .collect();
    let omitted_units = kept.iter().filter(|keep| !**keep).count();
    let omitted_files = full.files.len() - files_shown;
    let mut omitted = Vec::new();
    if omitted_files > 0 {
        omitted.push(("files", omitted_files));
    }
    if omitted_units > 0 {
        omitted.push(("hunks", omitted_units));
    }
    let (total_bytes, total_lines) = totals;
    let truncated = omitted_units > 0 || omitted_files > 0;
    let data = Report {
        base: full.base.clone(),
        head: full.head.clone(),
        path: full.path.clone(),
        totals: (omitted_files > 0).then(|| Totals::of(full.files.iter().map(|rendered| &rendered.stat))),
        files,
        patch,
        truncated,
        total_bytes: Implied::new(total_bytes, !truncated),
        total_lines: Implied::new(total_lines, !truncated),
        unreadable: full.unreadable.clone(),
    };
    Budgeted { data, omitted: Omitted(omitted) }
}

/// Tokens that `text` costs inside a JSON string (escaped).
fn json_tokens(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let escaped = serde_json::to_string(text).expect("a string serialises");
    budget::count_tokens(&escaped[1..escaped.len() - 1])
}

/// Keeps what fits `options.max_bytes`, `options.max_lines` and `max_tokens` (see the module docs).
///
/// # Errors
/// [`InvalidReason::BudgetBelowFloor`] when even an empty listing and patch exceed `max_tokens`;
/// [`Error::Cancelled`] once `interrupt` is triggered (checked per hunk weighed).
pub fn fit(
    full: Full,
    options: &Options,
    max_tokens: usize,
    measure: &mut Measure<'_, Report>,
    interrupt: &Interrupt,
) -> Result<Budgeted<Report>> {
    let units = units_of(&full);
    let everything = vec![true; units.len()];
    let whole = assemble(&full, &units, full.files.len(), &everything, (0, 0));
    let totals = (whole.data.patch.len(), whole.data.patch.matches('\n').count());
    let max_lines = options.max_lines.unwrap_or(usize::MAX);
    let whole = assemble(&full, &units, full.files.len(), &everything, totals);
    if totals.0 <= options.max_bytes && totals.1 <= max_lines && measure(&whole) <= max_tokens {
        return Ok(whole);
    }
    let nothing = vec![false; units.len()];
    let listing = budget::fit(&[full.files.len()], max_tokens, &mut |shown| {
        measure(&assemble(&full, &units, shown[0], &nothing, totals))
    })?;
    let files_shown = listing[0];
    let mut tokens_left = max_tokens.saturating_sub(measure(&assemble(&full, &units, files_shown, &nothing, totals)));
    let (mut bytes_left, mut lines_left) = (options.max_bytes, max_lines);
    let mut kept = nothing;
    let mut open_section = None;
    for (unit_idx, unit) in units.iter().enumerate() {
        interrupt.check()?;
        if tokens_left == 0 || bytes_left == 0 || lines_left == 0 {
            break;
        }
        if unit.file >= files_shown {
            continue;
        }
        let section = &full.files[unit.file].sections[unit.section];
        let header = if open_section == Some((unit.file, unit.section)) { "" } else { section.header.as_str() };
        let hunk = unit.hunk.map_or("", |hunk| section.hunks[hunk].as_str());
        let bytes = header.len() + hunk.len();
        let lines = header.matches('\n').count() + hunk.matches('\n').count();
        if bytes > bytes_left || lines > lines_left {
            continue;
        }
        let tokens = json_tokens(header) + json_tokens(hunk);
        if tokens > tokens_left {
            continue;
        }
        kept[unit_idx] = true;
        open_section = Some((unit.file, unit.section));
        bytes_left -= bytes;
        lines_left -= lines;
        tokens_left -= tokens;
    }
    // Token counts of pieces only approximate the count of the whole text: drop the last kept units until it fits.
    let mut result = assemble(&full, &units, files_shown, &kept, totals);
    while measure(&result) > max_tokens {
        interrupt.check()?;
        let Some(last) = kept.iter().rposition(|keep| *keep) else { break };
        kept[last] = false;
        result = assemble(&full, &units, files_shown, &kept, totals);
    }
    Ok(result)
}
