//! One worktree's line of work: its HEAD and, when its work tree differs, a commit on top of HEAD
//! holding what `git add -A && git commit` would record, written into an in-memory object store.
//!
//! The objects (blobs, trees, the commit) stay in memory and are kept with the read, so that a pair
//! prediction can put them into its own in-memory store; the repository's object database is never
//! written. Work-tree files are read as the diff tools read them: without blocking, a FIFO, device
//! or socket read as absent, raw bytes (no filter).

use std::path::Path;

use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use gix::objs::tree::EntryKind;

use super::pair::Tip;
use crate::error::{Error, Result};
use crate::interrupt::Interrupt;

/// Largest work-tree file read into the uncommitted side, bytes (64 MiB); a larger one is left as
/// HEAD has it.
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Most files of an untracked directory read (the rest are left out).
const MAX_UNTRACKED_FILES: usize = 10_000;

/// Deepest untracked directory walked.
const MAX_UNTRACKED_DEPTH: usize = 64;

/// One worktree, read.
#[derive(Debug)]
pub(crate) struct Read {
    /// The commit HEAD names; `None` on an unborn branch.
    pub(crate) head: Option<ObjectId>,
    /// The checked-out branch's short name; `None` when detached.
    pub(crate) branch: Option<String>,
    /// Files the work tree changes against HEAD (staged, unstaged, untracked, unmerged).
    pub(crate) uncommitted: usize,
    /// The commit holding the uncommitted changes on top of HEAD; `None` when there are none.
    pub(crate) commit: Option<ObjectId>,
    /// The objects written for it, in memory only.
    pub(crate) objects: std::sync::Arc<Vec<super::pair::Object>>,
}

impl Read {
    /// The line's tip: the uncommitted commit, else HEAD; `None` on an unborn branch.
    pub(crate) fn tip(&self) -> Option<Tip> {
        let head = self.head?;
        Some(Tip {
            head,
            commit: self.commit.unwrap_or(head),
            objects: self.commit.is_some().then(|| self.objects.clone()),
        })
    }

    /// Bytes it holds, roughly, for the cache's bound.
    pub(crate) fn weight(&self) -> usize {
        256 + self.objects.iter().map(|(_, _, data)| 64 + data.len()).sum::<usize>()
    }
}

/// Reads the worktree of `repo`: HEAD, and its uncommitted changes written in memory.
///
/// # Errors
/// [`Error::GitRead`] when HEAD, the index, the status or a tree cannot be read;
/// [`Error::Cancelled`] once `interrupt` is triggered.
pub(crate) fn read(repo: &gix::Repository, interrupt: &Interrupt) -> Result<Read> {
    let head = crate::facets::head::read(repo)?;
    let head_id = head.sha.as_deref().and_then(|sha| ObjectId::from_hex(sha.as_bytes()).ok());
    let empty =
        Read { head: head_id, branch: head.branch.clone(), uncommitted: 0, commit: None, objects: Default::default() };
    let (Some(head_id), Some(workdir)) = (head_id, repo.workdir()) else { return Ok(empty) };
    let status = crate::facets::worktree::status(repo)?;
    interrupt.check()?;
    let mut upserts: Vec<BString> = Vec::new();
    let mut removals: Vec<BString> = Vec::new();
    for change in status.staged.iter().chain(&status.unstaged) {
        if let Some(from) = &change.from {
            removals.push(from.as_str().into());
        }
        upserts.push(change.path.as_str().into());
    }
    upserts.extend(status.conflicted.iter().map(|path| BString::from(path.as_str())));
    let excludes_index = repo.index_or_empty().map_err(|err| Error::git("the index", err))?;
    for entry in &status.untracked {
        match entry.strip_suffix('/') {
            Some(dir) => untracked_files(repo, &excludes_index, workdir, dir, &mut upserts)?,
            None => upserts.push(entry.as_str().into()),
        }
    }
    upserts.sort();
    upserts.dedup();
    removals.retain(|path| !upserts.contains(path));
    let uncommitted = upserts.len() + removals.len();
    if uncommitted == 0 {
        return Ok(Read { uncommitted: 0, ..empty });
    }
    let mut scratch = repo.clone().with_object_memory();
    let to_err = |err: &dyn std::fmt::Display| Error::git_text("the uncommitted changes", err.to_string());
    let head_tree = scratch
        .find_commit(head_id)
        .map_err(|err| Error::git("HEAD", err))?
        .tree_id()
        .map_err(|err| Error::git("HEAD", err))?
        .detach();
    let mut editor = scratch.edit_tree(head_tree).map_err(|err| to_err(&err))?;
    for path in &removals {
        editor.remove(path.as_bstr()).map_err(|err| to_err(&err))?;
    }
    for path in &upserts {
        interrupt.check()?;
        match on_disk(workdir, path)? {
            Some((kind, bytes)) => {
                let id = scratch.write_blob(&bytes).map_err(|err| to_err(&err))?.detach();
                editor.upsert(path.as_bstr(), kind, id).map_err(|err| to_err(&err))?;
            }
            None => {
                editor.remove(path.as_bstr()).map_err(|err| to_err(&err))?;
            }
        }
    }
    let tree = editor.write().map_err(|err| to_err(&err))?.detach();
    drop(editor);
    let signature = gix::actor::Signature {
        name: "fluxgit".into(),
        email: "fluxgit@localhost".into(),
        time: gix::date::Time::new(0, 0),
    };
    let commit = gix::objs::Commit {
        tree,
        parents: [head_id].into_iter().collect(),
        author: signature.clone(),
        committer: signature,
        encoding: None,
        message: "uncommitted changes\n".into(),
        extra_headers: Vec::new(),
    };
    let commit = scratch.write_object(&commit).map_err(|err| to_err(&err))?.detach();
    let memory = scratch.objects.take_object_memory().unwrap_or_default();
    let objects = memory.iter().map(|(id, (kind, data))| (*id, *kind, data.clone())).collect();
    Ok(Read {
        head: Some(head_id),
        branch: head.branch,
        uncommitted,
        commit: Some(commit),
        objects: std::sync::Arc::new(objects),
    })
}

/// The entry kind and content of the work-tree file at `path`, or `None` when it is missing, is a
/// directory, or is neither a regular file nor a symbolic link.
fn on_disk(workdir: &Path, path: &BString) -> Result<Option<(EntryKind, Vec<u8>)>> {
    let to_err = |err: String| Error::git_text("a work-tree file", err);
    let relative = gix::path::from_bstr(path.as_bstr()).map_err(|err| to_err(err.to_string()))?;
    let full = workdir.join(relative);
    let metadata = match std::fs::symlink_metadata(&full) {
        Ok(metadata) => metadata,
        Err(_) => return Ok(None),
    };
    if metadata.is_symlink() {
        let target = std::fs::read_link(&full).map_err(|err| to_err(err.to_string()))?;
        let target = gix::path::into_bstr(target).map_err(|err| to_err(err.to_string()))?.into_owned();
        return Ok(Some((EntryKind::Link, Vec::from(target))));
    }
    if !metadata.is_file() || metadata.len() > MAX_FILE_BYTES {
        return Ok(None);
    }
    let bytes = match crate::regular_file::read(&full, false, MAX_FILE_BYTES).map_err(|err| to_err(err.to_string()))? {
        Ok(bytes) => bytes,
        Err(_) => return Ok(None),
    };
    Ok(Some((
        if crate::compare::side::is_executable(&metadata) { EntryKind::BlobExecutable } else { EntryKind::Blob },
        bytes,
    )))
}

/// The files of the wholly untracked directory `dir` (a `dir/` entry of `git status`) that are not
/// ignored, as `git add -A` would add them: a nested repository is left out, and the walk stops at
/// [`MAX_UNTRACKED_DEPTH`] levels and [`MAX_UNTRACKED_FILES`] files.
fn untracked_files(
    repo: &gix::Repository,
    index: &gix::index::State,
    workdir: &Path,
    dir: &str,
    out: &mut Vec<BString>,
) -> Result<()> {
    let source = gix::worktree::stack::state::ignore::Source::WorktreeThenIdMappingIfNotSkipped;
    let mut excludes = repo.excludes(index, None, source).map_err(|err| Error::git("ignore rules", err))?;
    let mut stack = vec![(dir.to_owned(), 0usize)];
    let mut found = 0usize;
    while let Some((relative, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(workdir.join(&relative)) else { continue };
        let mut names: Vec<std::fs::DirEntry> = entries.filter_map(std::result::Result::ok).collect();
        names.sort_by_key(std::fs::DirEntry::file_name);
        for entry in names {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
            if name == ".git" {
                continue;
            }
            let child = format!("{relative}/{name}");
            let Ok(kind) = entry.file_type() else { continue };
            let mode = if kind.is_dir() { gix::index::entry::Mode::DIR } else { gix::index::entry::Mode::FILE };
            let excluded =
                excludes.at_entry(child.as_str(), Some(mode)).map(|platform| platform.is_excluded()).unwrap_or(false);
            if excluded {
                continue;
            }
            if kind.is_dir() {
                if depth < MAX_UNTRACKED_DEPTH && !entry.path().join(".git").exists() {
                    stack.push((child, depth + 1));
                }
            } else if kind.is_file() || kind.is_symlink() {
                found += 1;
                if found > MAX_UNTRACKED_FILES {
                    return Ok(());
                }
                out.push(child.into());
            }
        }
    }
    Ok(())
}
