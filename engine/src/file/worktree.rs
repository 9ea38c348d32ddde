//! The work-tree side of `file.blame`: the commit `git blame FILE` imagines for the work tree
//! (git's `fake_working_tree_commit`), built in a repository whose object writes stay in memory.
//!
//! Like git's, the commit's parents are HEAD and, during a merge, the `MERGE_HEAD` commits; its
//! tree is HEAD's with the blamed path holding the work-tree content converted as `git add` would
//! convert it (end of line, `ident` and encoding as attributes say; filter drivers are removed from
//! the configuration before, so none runs), and, when the path is new in HEAD, without the files
//! the index no longer has (git diffs HEAD against the index, so a staged `git mv` is followed as a
//! rename). Its author and committer are git's `Not Committed Yet <not.committed.yet>`, its message
//! git's `Version of PATH from PATH`, its time the file's modification time.

use std::io::Read as _;
use std::path::Path;

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;

use crate::error::{Error, InvalidReason, Result};

/// The name git gives lines not committed yet.
const NOT_COMMITTED_NAME: &str = "Not Committed Yet";
/// The email git gives lines not committed yet.
const NOT_COMMITTED_EMAIL: &str = "not.committed.yet";

/// Writes (into `repo`'s object memory) the commit standing for the work-tree version of `path` on
/// top of `head`; returns its id and the converted content.
///
/// # Errors
/// [`InvalidReason::NotFound`] when the path is tracked neither by HEAD nor by the index (git: "no
/// such path in HEAD") or was deleted from the work tree, [`InvalidReason::NotAFile`] for a
/// directory; [`Error::GitRead`] when the index, a tree or the file cannot be read.
pub(crate) fn commit(repo: &gix::Repository, head: ObjectId, path: &str) -> Result<(ObjectId, Vec<u8>)> {
    fn to_err(err: impl std::error::Error) -> Error {
        Error::git("the work tree's version of the file", err)
    }
    let work_dir = repo.workdir().ok_or_else(|| Error::git_text("the work tree", "the repository has no work tree"))?;
    let head_tree = repo.find_commit(head).map_err(to_err)?.tree().map_err(to_err)?;
    let head_entry = head_tree.lookup_entry_by_path(path).map_err(to_err)?;
    let (mut pipeline, index) = repo.filter_pipeline(None).map_err(to_err)?;
    let in_index = index.entry_by_path(path.as_bytes().as_bstr()).is_some();
    if head_entry.is_none() && !in_index {
        return Err(Error::invalid(
            InvalidReason::NotFound,
            format!("{path:?} is tracked neither by HEAD nor by the index: only tracked files can be blamed"),
        ));
    }
    crate::repository::check_not_beyond_symlink(repo, path)?;
    let file = work_dir.join(path);
    let metadata = std::fs::symlink_metadata(&file).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => Error::invalid(
            InvalidReason::NotFound,
            format!("{path:?} is deleted in the work tree: pass rev \"HEAD\" to blame the committed version"),
        ),
        _ => Error::git("the work tree's version of the file", err),
    })?;
    if metadata.is_dir() {
        return Err(Error::invalid(
            InvalidReason::NotAFile,
            format!("{path:?} is a directory in the work tree, not a file: only files can be blamed"),
        ));
    }
    if !metadata.is_symlink() && !metadata.is_file() {
        let kind = crate::regular_file::kind_name(&metadata);
        return Err(Error::invalid(
            InvalidReason::NotAFile,
            format!("{path:?} is a {kind} in the work tree, not a file: only files can be blamed"),
        ));
    }
    let threshold = super::big_file_threshold(repo);
    if metadata.is_file() && metadata.len() > threshold {
        return Err(super::too_large(path, metadata.len(), threshold, "the work tree"));
    }
    let (content, kind) = if metadata.is_symlink() {
        let target = std::fs::read_link(&file).map_err(to_err)?;
        (gix::path::os_str_into_bstr(target.as_os_str()).map_err(to_err)?.to_vec(), EntryKind::Link)
    } else {
        // Without blocking: a FIFO swapped in since the look above is refused, never waited on.
        let source = match crate::regular_file::open(&file, false).map_err(to_err)? {
            crate::regular_file::Opened::File(source, _) => source,
            opened => {
                let kind = match opened {
                    crate::regular_file::Opened::NotRegular(kind) => kind,
                    _ => "file that is gone",
                };
                return Err(Error::invalid(
                    InvalidReason::NotAFile,
                    format!("{path:?} is a {kind} in the work tree, not a file: only files can be blamed"),
                ));
            }
        };
        let mut content = Vec::new();
        match pipeline.convert_to_git(source, Path::new(path), &index).map_err(to_err)? {
            gix::filter::plumbing::pipeline::convert::ToGitOutcome::Unchanged(mut reader) => {
                reader.read_to_end(&mut content).map_err(to_err)?;
            }
            gix::filter::plumbing::pipeline::convert::ToGitOutcome::Process(mut reader) => {
                reader.read_to_end(&mut content).map_err(to_err)?;
            }
            gix::filter::plumbing::pipeline::convert::ToGitOutcome::Buffer(buffer) => content.extend_from_slice(buffer),
        }
        let kind = match head_entry.as_ref().map(|entry| entry.mode().kind()) {
            Some(EntryKind::BlobExecutable) => EntryKind::BlobExecutable,
            _ => EntryKind::Blob,
        };
        (content, kind)
    };

    let blob = repo.write_blob(&content).map_err(to_err)?.detach();
    let mut editor = repo.edit_tree(head_tree.id).map_err(to_err)?;
    editor.upsert(path, kind, blob).map_err(to_err)?;
    if head_entry.is_none() {
        // A path new in HEAD may be a staged rename: drop what the index no longer has, as git's diff against the
        // index would.
        let mut recorder = gix::traverse::tree::Recorder::default();
        head_tree.traverse().breadthfirst(&mut recorder).map_err(to_err)?;
        for entry in recorder.records {
            if !entry.mode.is_tree() && index.entry_by_path(entry.filepath.as_ref()).is_none() {
                editor.remove(entry.filepath.to_str_lossy().as_ref()).map_err(to_err)?;
            }
        }
    }
    let tree = editor.write().map_err(to_err)?.detach();

    let mut parents = vec![head];
    parents.extend(merge_heads(repo));
    let seconds = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |since| i64::try_from(since.as_secs()).unwrap_or(i64::MAX));
    let signature = gix::actor::Signature {
        name: NOT_COMMITTED_NAME.into(),
        email: NOT_COMMITTED_EMAIL.into(),
        time: gix::date::Time::new(seconds, 0),
    };
    let commit = gix::objs::Commit {
        tree,
        parents: parents.into_iter().collect(),
        author: signature.clone(),
        committer: signature,
        encoding: None,
        message: format!("Version of {path} from {path}\n").into(),
        extra_headers: Vec::new(),
    };
    let id = repo.write_object(&commit).map_err(to_err)?.detach();
    Ok((id, content))
}

/// The commits of `MERGE_HEAD` (a merge in progress), which git adds as parents of the work tree's
/// commit.
fn merge_heads(repo: &gix::Repository) -> Vec<ObjectId> {
    let path = repo.git_dir().join("MERGE_HEAD");
    let cap = crate::guard::CONTROL_FILE_CAP;
    let Ok(Some(text)) = crate::guard::read_capped(&path, crate::guard::Symlinks::Follow, cap, "MERGE_HEAD") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| ObjectId::from_hex(line.trim()).ok())
        .filter(|id| repo.find_commit(*id).is_ok())
        .collect()
}
