//! One changed file rendered as git renders it: its `--numstat` counts and its unified patch.
//!
//! Content is read through gix's diff resource cache in "to Git" form (work-tree files converted as
//! `git add` would, objects as stored), so no textconv or external diff program ever runs. A file
//! is binary when git would say so (a NUL byte in its first 8000 bytes, the `-diff`/`binary`
//! attributes, or above `core.bigFileThreshold`). Text that is not valid UTF-8 is emitted as a
//! `GIT binary patch` (exact bytes, see [`super::binary`]).

use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};
use gix::diff::blob::unified_diff::{ConsumeHunk, ContextSize, DiffLineKind, HunkHeader};
use gix::diff::blob::{Algorithm, Diff, Hunk, InternedInput, ResourceKind, UnifiedDiff, platform::resource::Data};
use gix::index::entry::Mode;

use super::funcname::{self, Finder};
use super::section::{Section, quote};
use super::{FileStat, Status, binary, combined};
use crate::compare::changes::{AttributeFiles, Change, Kind};
use crate::compare::side::Entry;
use crate::error::{Error, Result};
use crate::quote;

/// Lines of context around each change, as git's default `-U3`.
const CONTEXT_LINES: u32 = 3;

/// Binary content larger than this (on either side) is never carried: no patch may hold more
/// (`maxBytes`).
const MAX_BINARY_BYTES: u64 = 1024 * 1024;

/// Largest side of a file whose text [`Output::ListingWithTexts`] reads, in bytes (32 MiB): a
/// larger side is listed as git lists a file over `core.bigFileThreshold` (binary, without
/// counts) and never read, so that a 500 MB file costs no memory
/// ([`Renderer::over_text_cap`] tells it apart from a binary file). Reading and diffing a side
/// costs about 3.4 times its size.
pub(crate) const MAX_TEXT_BYTES: u64 = 32 << 20;

/// One changed file: its listing and (when asked for) its patch, in one section or, for a type
/// change, two (a deletion and an addition, as git prints it).
#[derive(Debug, Clone)]
pub(crate) struct Rendered {
    pub(crate) stat: FileStat,
    pub(crate) sections: Vec<Section>,
    /// Both sides' text and their line diff, kept for [`Output::ListingWithTexts`] when the file is
    /// text on both sides and of one type.
    pub(crate) texts: Option<Texts>,
}

/// The two sides of a changed text file as git diffs them (empty for an absent side) and the hunks
/// of their line diff, in order: what `diff.semantic` parses and gives to symbols, read and diffed
/// once.
#[derive(Debug, Clone)]
pub(crate) struct Texts {
    pub(crate) old: Vec<u8>,
    pub(crate) new: Vec<u8>,
    /// Each hunk's removed lines of `old` and added lines of `new` (0-based line ranges).
    pub(crate) hunks: Vec<Hunk>,
}

/// Renders changes; owns the resource cache that reads their content.
pub(crate) struct Renderer<'repo> {
    repo: &'repo gix::Repository,
    /// The repository's objects, headers read from the packs directly while lookups last.
    objects: crate::objects::DirectHeaders<'repo>,
    cache: gix::diff::blob::Platform,
    algorithm: Algorithm,
    with_patch: bool,
    with_texts: bool,
    /// The texts of the last pair rendered, when `with_texts`.
    kept: Option<Texts>,
    binary_content: bool,
    /// The work tree when it is the new side.
    new_root: Option<std::path::PathBuf>,
    /// How names are quoted in the headers: the repository's `core.quotePath`.
    pub(crate) quoting: quote::Style,
    /// The function-context rules of the hunk headers.
    funcname: funcname::Drivers<'repo>,
}

/// What to render besides the listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// Only the listing (status and counts).
    Listing,
    /// The listing, and each text file's sides with their line diff ([`Rendered::texts`]).
    ListingWithTexts,
    /// The listing and the patch; binary files as `Binary files ... differ` (like `git diff`).
    Patch,
    /// The listing and the patch with binary content (like `git diff --binary`).
    PatchWithBinary,
}

/// File content as git would diff it.
enum Content {
    Missing,
    Text(Vec<u8>),
    Binary,
}

impl<'repo> Renderer<'repo> {
    /// A renderer whose new side is read from `new_root` (the work tree) when given, with the
    /// `.gitattributes` of `attribute_files`.
    ///
    /// # Errors
    /// [`Error::GitRead`] when the diff configuration or attributes cannot be read.
    pub(crate) fn new(
        repo: &'repo gix::Repository,
        new_root: Option<std::path::PathBuf>,
        attribute_files: &AttributeFiles,
        output: Output,
    ) -> Result<Self> {
        let roots = gix::diff::blob::pipeline::WorktreeRoots { old_root: None, new_root: new_root.clone() };
        let mut cache = attribute_files.resource_cache(repo, roots)?;
        if output == Output::ListingWithTexts {
            // Texts are read to be parsed, and no larger one is parsed: a larger side is not read at all.
            let threshold = &mut cache.filter.options.large_file_threshold_bytes;
            *threshold = if *threshold == 0 { MAX_TEXT_BYTES } else { (*threshold).min(MAX_TEXT_BYTES) };
        }
        let algorithm = cache.options.algorithm.unwrap_or(Algorithm::Myers);
        let with_patch = matches!(output, Output::Patch | Output::PatchWithBinary);
        let with_texts = output == Output::ListingWithTexts;
        let objects = crate::objects::DirectHeaders::new(repo);
        let binary_content = output == Output::PatchWithBinary;
        let quoting = quote::Style { non_ascii: quote::quote_path_config(repo), space: false };
        let funcname = funcname::Drivers::new(repo, attribute_files);
        Ok(Self {
            repo,
            objects,
            cache,
            algorithm,
            with_patch,
            with_texts,
            kept: None,
            binary_content,
            new_root,
            quoting,
            funcname,
        })
    }

    /// Renders one change.
    ///
    /// # Errors
    /// [`Error::GitRead`] when its content cannot be read.
    pub(crate) fn render(&mut self, change: &Change) -> Result<Rendered> {
        let (old, new) = (change.old.as_ref(), change.new.as_ref());
        let type_change =
            change.kind == Kind::Modified && old.zip(new).is_some_and(|(old, new)| !same_type(old.mode, new.mode));
        let status = match change.kind {
            _ if type_change => Status::TypeChange,
            Kind::Added => Status::Added,
            Kind::Deleted => Status::Deleted,
            Kind::Modified => Status::Modified,
            Kind::Renamed => Status::Renamed,
            Kind::Copied => Status::Copied,
        };
        let from =
            matches!(change.kind, Kind::Renamed | Kind::Copied).then(|| old.map(|e| utf8(e.path.as_ref()))).flatten();
        let mut stat = FileStat::new(utf8(change.path().as_ref()), from, status);
        if let Some((old, new)) = old.zip(new).filter(|(old, new)| old.mode != new.mode) {
            stat.old_mode = Some(mode_text(old.mode));
            stat.new_mode = Some(mode_text(new.mode));
        }
        let pairs = if type_change { vec![(old, None), (None, new)] } else { vec![(old, new)] };
        let mut sections = Vec::new();
        self.kept = None;
        for (old, new) in pairs {
            let section = self.pair(change.kind, old, new, &mut stat);
            self.cache.clear_resource_cache_keep_allocation();
            match section {
                Ok(section) => sections.push(section),
                // One unreadable file never sinks the answer (design.md#roots): it is listed with why, without a patch.
                Err(err) => {
                    stat.additions = None;
                    stat.deletions = None;
                    stat.error = Some(crate::ItemError::from_error(err));
                    sections.clear();
                    self.kept = None;
                    break;
                }
            }
        }
        let texts = self.kept.take().filter(|_| !type_change);
        Ok(Rendered { stat, sections, texts })
    }

    /// Whether a side of `change` is larger than [`MAX_TEXT_BYTES`], by its object's header or its
    /// work-tree file's size (nothing is read). A side whose size cannot be had counts as within.
    pub(crate) fn over_text_cap(&self, change: &Change) -> bool {
        let size = |entry: &Entry, from_worktree: bool| -> Option<u64> {
            match (from_worktree, &self.new_root) {
                (true, Some(root)) => {
                    let relative = gix::path::from_bstr(entry.path.as_bstr()).ok()?;
                    std::fs::symlink_metadata(root.join(relative)).ok().map(|metadata| metadata.len())
                }
                _ => {
                    gix::objs::FindHeader::try_header(&self.objects, &entry.id).ok().flatten().map(|header| header.size)
                }
            }
        };
        let old = change.old.as_ref().and_then(|entry| size(entry, false));
        let new = change.new.as_ref().and_then(|entry| size(entry, true));
        old.into_iter().chain(new).any(|size| size > MAX_TEXT_BYTES)
    }

    /// Renders an unmerged path of a diff of the index against the work tree as `git diff` does:
    /// counts of ours (stage 2) against the work-tree file `worktree` (`git diff --numstat`), and,
    /// when asked for a patch, git's combined diff if both sides have the file, else the
    /// `* Unmerged path` line and ours against the work tree.
    ///
    /// # Errors
    /// As [`Self::render`]; an unreadable side is listed with its error, without a patch.
    pub(crate) fn unmerged(
        &mut self,
        path: &BStr,
        stages: &crate::compare::side::Stages,
        worktree: Option<&Entry>,
    ) -> Result<Rendered> {
        let ours = stages[1].map(|(mode, id)| Entry { path: path.to_owned(), mode, id });
        let against_ours = match (&ours, worktree) {
            (Some(ours), Some(file)) if ours.mode == file.mode && ours.id == file.id => None,
            (Some(ours), file) => {
                let kind = if file.is_some() { Kind::Modified } else { Kind::Deleted };
                Some(self.render(&Change { kind, old: Some(ours.clone()), new: file.cloned() })?)
            }
            (None, _) => None,
        };
        let (mut stat, sections) = match against_ours {
            Some(rendered) => (rendered.stat, rendered.sections),
            None => (FileStat::unmerged(&path.to_owned()), Vec::new()),
        };
        stat.status = Status::Unmerged;
        if !self.with_patch || stat.error.is_some() {
            return Ok(Rendered { stat, sections: Vec::new(), texts: None });
        }
        let sections = match (stages[1], stages[2]) {
            (Some(ours), Some(theirs)) => match self.combined(path, [ours, theirs], worktree) {
                Ok(section) => vec![section],
                Err(err) => {
                    stat.error = Some(crate::ItemError::from_error(err));
                    Vec::new()
                }
            },
            _ => std::iter::once(unmerged_line(path, self.quoting)).chain(sections).collect(),
        };
        Ok(Rendered { stat, sections, texts: None })
    }

    /// The `diff --cc` section of `path`: the work-tree file `worktree` against ours and theirs.
    fn combined(&mut self, path: &BStr, sides: [(Mode, ObjectId); 2], worktree: Option<&Entry>) -> Result<Section> {
        let mut parents = Vec::with_capacity(sides.len());
        for (mode, id) in sides {
            let entry = Entry { path: path.to_owned(), mode, id };
            let content = self.load(Some(&entry), ResourceKind::OldOrSource);
            self.cache.clear_resource_cache_keep_allocation();
            parents.push(combined::Parent { mode, id, content: diffable(content?) });
        }
        let merged = match worktree {
            None => combined::Merged::Deleted,
            Some(file) => {
                let content = self.load(Some(file), ResourceKind::NewOrDestination);
                self.cache.clear_resource_cache_keep_allocation();
                combined::Merged::File { mode: file.mode, content: diffable(content?) }
            }
        };
        Ok(combined::render(path, &parents, &merged, self.algorithm, self.quoting))
    }

    /// Counts and renders `old` -> `new`, adding to `stat`.
    fn pair(&mut self, kind: Kind, old: Option<&Entry>, new: Option<&Entry>, stat: &mut FileStat) -> Result<Section> {
        let changed = old.map(|e| e.id) != new.map(|e| e.id);
        let old_content = self.load(old, ResourceKind::OldOrSource)?;
        let new_content = self.load(new, ResourceKind::NewOrDestination)?;
        let rewrite = (kind == Kind::Renamed || kind == Kind::Copied) && old.is_some() && new.is_some();
        let mut section = Section::default();
        match (&old_content, &new_content) {
            (Content::Binary, _) | (_, Content::Binary) => {
                stat.binary = true;
                stat.additions = None;
                stat.deletions = None;
                if rewrite && !changed {
                    stat.similarity = Some(100);
                }
                if self.with_patch {
                    let content = match (changed && self.binary_content, old, new) {
                        (true, old, new) => self.raw(old, false)?.zip(self.raw(new, self.new_root.is_some())?),
                        _ => None,
                    };
                    section.header = header(kind, old, new, stat.similarity, changed, content.is_some(), self.quoting);
                    if let Some((old_bytes, new_bytes)) = content {
                        section.hunks.push(binary::patch(&old_bytes, &new_bytes));
                    } else if changed {
                        let (a, b) = (side_name("a/", old, self.quoting), side_name("b/", new, self.quoting));
                        section.header.push_str(&format!("Binary files {a} and {b} differ\n"));
                    }
                }
            }
            _ => {
                let old_bytes = bytes(&old_content);
                let new_bytes = bytes(&new_content);
                let input = InternedInput::new(
                    gix::diff::blob::sources::byte_lines(old_bytes),
                    gix::diff::blob::sources::byte_lines(new_bytes),
                );
                let mut diff = Diff::compute(self.algorithm, &input);
                diff.postprocess_lines(&input);
                add(&mut stat.additions, u64::from(diff.count_additions()));
                add(&mut stat.deletions, u64::from(diff.count_removals()));
                if self.with_texts {
                    let hunks = diff.hunks().collect();
                    self.kept = Some(Texts { old: old_bytes.to_vec(), new: new_bytes.to_vec(), hunks });
                }
                if rewrite {
                    stat.similarity = Some(similarity(old_bytes, new_bytes, &diff, &input));
                }
                let utf8 = std::str::from_utf8(old_bytes).is_ok() && std::str::from_utf8(new_bytes).is_ok();
                stat.non_utf8 |= !utf8;
                if self.with_patch {
                    section.header = header(kind, old, new, stat.similarity, changed, !utf8, self.quoting);
                    if !utf8 && changed {
                        section.hunks.push(binary::patch(old_bytes, new_bytes));
                    } else if diff.count_additions() + diff.count_removals() > 0 {
                        section.header.push_str(&format!(
                            "--- {}\n+++ {}\n",
                            label("a/", old, self.quoting),
                            label("b/", new, self.quoting)
                        ));
                        let rule = self.funcname.rule(old, new)?;
                        // Both sides are UTF-8 here (checked above).
                        let old_text = std::str::from_utf8(old_bytes).unwrap_or_default();
                        let hunks = Hunks { finder: Finder::new(rule, old_text), texts: Vec::new() };
                        let hunks = UnifiedDiff::new(&diff, &input, hunks, ContextSize::symmetrical(CONTEXT_LINES))
                            .consume()
                            .map_err(|err| Error::git("a diff", err))?;
                        section.hunks = hunks.texts;
                    }
                }
            }
        }
        Ok(section)
    }

    /// The raw bytes of one side of a binary file (empty when absent), or `None` when larger than
    /// [`MAX_BINARY_BYTES`].
    fn raw(&self, entry: Option<&Entry>, from_worktree: bool) -> Result<Option<Vec<u8>>> {
        let Some(entry) = entry else { return Ok(Some(Vec::new())) };
        const WHAT: &str = "binary content";
        if let (true, Some(root)) = (from_worktree, &self.new_root) {
            let relative = gix::path::from_bstr(entry.path.as_bstr()).map_err(|err| Error::git(WHAT, err))?;
            let path = root.join(relative);
            // Opened without blocking and not through a link, then read up to the cap from the open file.
            use crate::regular_file::Opened;
            return match crate::regular_file::read(&path, false, MAX_BINARY_BYTES)
                .map_err(|err| Error::git(WHAT, err))?
            {
                Ok(bytes) => Ok(Some(bytes)),
                Err(Opened::File(..)) => Ok(None),
                Err(Opened::Missing) => {
                    Err(Error::git_text(WHAT, format!("{} is gone from the work tree", path.display())))
                }
                Err(Opened::Symlink) => std::fs::read_link(&path)
                    .map(|target| Some(target.into_os_string().into_encoded_bytes()))
                    .map_err(|err| Error::git(WHAT, err)),
                Err(Opened::NotRegular(kind)) => {
                    Err(Error::git_text(WHAT, format!("{} is a {kind}, not a regular file: not read", path.display())))
                }
            };
        }
        let header = gix::objs::FindHeader::try_header(&self.objects, &entry.id)
            .map_err(|err| Error::git(WHAT, err))?
            .ok_or_else(|| Error::git_text(WHAT, format!("object {} not found", entry.id)))?;
        if header.size > MAX_BINARY_BYTES {
            return Ok(None);
        }
        let object = self.repo.find_object(entry.id).map_err(|err| Error::git(WHAT, err))?;
        Ok(Some(object.data.clone()))
    }

    /// Reads one side's content.
    fn load(&mut self, entry: Option<&Entry>, kind: ResourceKind) -> Result<Content> {
        let Some(entry) = entry else { return Ok(Content::Missing) };
        if entry.mode == Mode::COMMIT {
            return Ok(Content::Text(format!("Subproject commit {}\n", entry.id).into_bytes()));
        }
        let Some(mode) = entry.mode.to_tree_entry_mode() else {
            return Err(Error::git_text(
                "a diff",
                format!("{} has an unknown mode {:o}", entry.path, entry.mode.bits()),
            ));
        };
        self.cache
            .set_resource(entry.id, mode.kind(), entry.path.as_ref(), kind, &self.objects)
            .map_err(|err| Error::git("file content", err.into_error()))?;
        let resource = self.cache.resource(kind).ok_or_else(|| Error::git_text("file content", "resource not set"))?;
        Ok(match resource.data {
            Data::Missing => Content::Text(Vec::new()),
            Data::Binary { .. } => Content::Binary,
            // A configured diff driver may hand back raw bytes without a binary check: check like git does.
            Data::Buffer { buf, .. } if buf[..buf.len().min(8000)].contains(&0) => Content::Binary,
            Data::Buffer { buf, .. } => Content::Text(buf.to_vec()),
        })
    }
}

/// Content for the combined diff: the bytes, or `None` when binary.
fn diffable(content: Content) -> Option<Vec<u8>> {
    match content {
        Content::Missing => Some(Vec::new()),
        Content::Text(bytes) => Some(bytes),
        Content::Binary => None,
    }
}

/// git's line for an unmerged path it does not diff: `* Unmerged path <path>`. git writes the path
/// as it is there; it is quoted here as in the other headers, so that a name with a line break
/// cannot add a line to the patch.
pub(crate) fn unmerged_line(path: &BStr, quoting: quote::Style) -> Section {
    Section { header: format!("* Unmerged path {}\n", quote("", path, quoting)), hunks: Vec::new() }
}

fn bytes(content: &Content) -> &[u8] {
    match content {
        Content::Text(bytes) => bytes,
        Content::Missing | Content::Binary => &[],
    }
}

fn add(total: &mut Option<u64>, count: u64) {
    if let Some(total) = total {
        *total += count;
    }
}

/// Regular files (executable or not) are one type; symlinks and gitlinks are others.
fn same_type(a: Mode, b: Mode) -> bool {
    let class = |mode: Mode| if mode == Mode::FILE_EXECUTABLE { Mode::FILE } else { mode };
    class(a) == class(b)
}

/// Git's similarity score, in percent: the share of the larger side's bytes that is unchanged.
fn similarity(old: &[u8], new: &[u8], diff: &Diff, input: &InternedInput<&[u8]>) -> u8 {
    let larger = old.len().max(new.len());
    if larger == 0 {
        return 100;
    }
    let removed: usize = diff
        .hunks()
        .flat_map(|hunk| hunk.before)
        .map(|token_idx| input.interner[input.before[token_idx as usize]].len())
        .sum();
    ((old.len() - removed) * 100 / larger) as u8
}

/// The extended header of `git diff`: `diff --git`, modes, similarity, `rename from/to`, `index`.
fn header(
    kind: Kind,
    old: Option<&Entry>,
    new: Option<&Entry>,
    similarity: Option<u8>,
    changed: bool,
    full_index: bool,
    quoting: quote::Style,
) -> String {
    let (a, b) = match (old, new) {
        (Some(old), Some(new)) => (&old.path, &new.path),
        (Some(only), None) | (None, Some(only)) => (&only.path, &only.path),
        (None, None) => unreachable!("a change has at least one side"),
    };
    let mut out = format!("diff --git {} {}\n", quote("a/", a.as_ref(), quoting), quote("b/", b.as_ref(), quoting));
    match (old, new) {
        (None, Some(new)) => out.push_str(&format!("new file mode {}\n", mode_text(new.mode))),
        (Some(old), None) => out.push_str(&format!("deleted file mode {}\n", mode_text(old.mode))),
        (Some(old), Some(new)) if old.mode != new.mode => {
            out.push_str(&format!("old mode {}\nnew mode {}\n", mode_text(old.mode), mode_text(new.mode)));
        }
        _ => {}
    }
    if old.is_some() && new.is_some() && matches!(kind, Kind::Renamed | Kind::Copied) {
        if let Some(similarity) = similarity {
            out.push_str(&format!("similarity index {similarity}%\n"));
        }
        let verb = if kind == Kind::Renamed { "rename" } else { "copy" };
        out.push_str(&format!(
            "{verb} from {}\n{verb} to {}\n",
            quote("", a.as_ref(), quoting),
            quote("", b.as_ref(), quoting)
        ));
    }
    if changed {
        let hash_kind = old.or(new).map_or(gix::hash::Kind::Sha1, |entry| entry.id.kind());
        let hex = |entry: Option<&Entry>| {
            let text = entry.map_or_else(|| ObjectId::null(hash_kind), |entry| entry.id).to_string();
            if full_index { text } else { text[..7].to_owned() }
        };
        out.push_str(&format!("index {}..{}", hex(old), hex(new)));
        if let Some((old, _)) = old.zip(new).filter(|(old, new)| old.mode == new.mode) {
            out.push_str(&format!(" {}", mode_text(old.mode)));
        }
        out.push('\n');
    }
    out
}

/// The `---`/`+++` label: `a/<path>` (quoted if needed, a tab after names with spaces, as git
/// writes them) or `/dev/null`.
fn label(prefix: &str, entry: Option<&Entry>, quoting: quote::Style) -> String {
    match entry {
        Some(entry) => {
            let tab = if entry.path.contains(&b' ') { "\t" } else { "" };
            format!("{}{tab}", quote(prefix, entry.path.as_ref(), quoting))
        }
        None => "/dev/null".into(),
    }
}

/// A name in `Binary files <a> and <b> differ`.
fn side_name(prefix: &str, entry: Option<&Entry>, quoting: quote::Style) -> String {
    entry.map_or_else(|| "/dev/null".into(), |entry| quote(prefix, entry.path.as_ref(), quoting))
}

fn mode_text(mode: Mode) -> String {
    format!("{:06o}", mode.bits())
}

fn utf8(bytes: &BStr) -> String {
    bytes.to_str_lossy().into_owned()
}

/// Collects hunks as git prints them, with the function context of each (see [`funcname`]).
struct Hunks<'a> {
    finder: Finder<'a>,
    texts: Vec<String>,
}

impl ConsumeHunk for Hunks<'_> {
    type Out = Self;

    fn consume_hunk(&mut self, header: HunkHeader, lines: &[(DiffLineKind, &[u8])]) -> std::io::Result<()> {
        // git prints the line before an empty range (`-0,0` for an empty old file) and leaves out a count of 1.
        let range = |start: u32, len: u32| match len {
            0 => format!("{},0", start.saturating_sub(1)),
            1 => start.to_string(),
            len => format!("{start},{len}"),
        };
        let ranges = format!(
            "-{} +{}",
            range(header.before_hunk_start, header.before_hunk_len),
            range(header.after_hunk_start, header.after_hunk_len)
        );
        let function = self.finder.before(header.before_hunk_start as usize);
        let mut text = funcname::hunk_header(&ranges, function);
        for (kind, line) in lines {
            text.push(kind.to_prefix());
            text.push_str(std::str::from_utf8(line).map_err(std::io::Error::other)?);
            if !line.ends_with(b"\n") {
                text.push_str("\n\\ No newline at end of file\n");
            }
        }
        self.texts.push(text);
        Ok(())
    }

    fn finish(self) -> Self {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_quoted_only_when_git_needs_it() {
        let raw = quote::Style { non_ascii: false, space: false };
        let git = quote::Style { non_ascii: true, space: false };
        assert_eq!(quote("a/", "docs/café menu.md".into(), raw), "a/docs/café menu.md");
        assert_eq!(quote("a/", "docs/café menu.md".into(), git), "\"a/docs/caf\\303\\251 menu.md\"");
        assert_eq!(quote("a/", "tab\there".into(), git), "\"a/tab\\there\"");
        assert_eq!(quote("", b"caf\xe9".as_bstr(), raw), "\"caf\\351\"");
    }
}
