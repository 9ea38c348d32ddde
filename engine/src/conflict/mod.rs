//! Conflicts before and during: `repo.conflictPreflight` ([`preflight`]) predicts a merge and a
//! rebase in memory; `conflict.read` ([`read`]) turns an active conflict into data. [`markers`]
//! finds marker regions in text.

pub mod markers;
pub(crate) mod paths;
pub mod preflight;
pub mod read;
mod simplify;
pub mod state;

use gix::bstr::ByteSlice;
use serde::Serialize;

use crate::budget::{Budgeted, Measure};
use crate::engine::{Engine, Repo};
use crate::error::{Error, Result};
use crate::facets::subject;

/// Git's conflict kinds, in the words of its `CONFLICT (<kind>)` messages where it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ConflictKind {
    /// Both sides changed the same lines of a text file.
    #[serde(rename = "content")]
    Content,
    /// Both sides added the path with different content.
    #[serde(rename = "add/add")]
    AddAdd,
    /// One side modified the path, the other deleted it.
    #[serde(rename = "modify/delete")]
    ModifyDelete,
    /// One side renamed the path, the other deleted it.
    #[serde(rename = "rename/delete")]
    RenameDelete,
    /// Both sides renamed: one source to two names, or two sources to one name.
    #[serde(rename = "rename/rename")]
    RenameRename,
    /// Both sides changed a file that is binary on at least one side: no line merge is possible.
    #[serde(rename = "binary")]
    Binary,
    /// Both sides moved a submodule (gitlink) to different commits.
    #[serde(rename = "submodule")]
    Submodule,
    /// A file on one side where the other has a directory.
    #[serde(rename = "file/directory")]
    FileDirectory,
    /// Both sides put entries of different types at the path (e.g. a file and a symlink).
    #[serde(rename = "distinct types")]
    DistinctTypes,
    /// A situation the merge engine does not classify.
    #[serde(rename = "unknown")]
    Unknown,
}

/// A commit named in a result: full sha and subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitInfo {
    /// Full hex sha.
    pub sha: String,
    /// First line of the message.
    pub subject: String,
}

impl Engine {
    /// `repo.conflictPreflight`: the predicted outcome of merging `target` into `current` and of
    /// rebasing `current` onto `target`, computed in memory (see [`preflight::read`]).
    ///
    /// # Errors
    /// [`Error::Invalid`] (`invalid_revision`, `unknown_revision`) for the revisions;
    /// [`Error::GitRead`] on a failed read or merge.
    pub fn conflict_preflight(
        &self,
        repo: &Repo,
        target: &str,
        current: &str,
        options: &preflight::Options,
    ) -> Result<Budgeted<preflight::Preflight>> {
        preflight::read(&repo.git, target, current, options)
    }

    /// `conflict.read`: the active conflict as data, cut to `max_tokens` as measured by `measure`
    /// (see [`read::read`] and [`read::fit`]).
    ///
    /// # Errors
    /// [`Error::GitRead`] on a failed read; [`Error::Invalid`] (`budget_below_floor`) when the
    /// required fields alone exceed `max_tokens`.
    pub fn conflict_read(
        &self,
        repo: &Repo,
        options: &read::Options,
        max_tokens: usize,
        measure: &mut Measure<'_, read::ConflictRead>,
    ) -> Result<Budgeted<read::ConflictRead>> {
        read::fit(read::read(&repo.git, options)?, max_tokens, measure)
    }
}

/// The sha and subject of commit `id`.
pub(crate) fn commit_info(repo: &gix::Repository, id: gix::ObjectId) -> Result<CommitInfo> {
    let commit = repo.find_commit(id).map_err(|err| Error::git("a commit", err))?;
    Ok(CommitInfo { sha: id.to_string(), subject: subject(commit.message_raw_sloppy()) })
}

/// A commit still to come (to replay, or after a predicted stop) that changes some of the
/// conflicted paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TouchingCommit {
    /// Full hex sha.
    pub sha: String,
    /// First line of the message.
    pub subject: String,
    /// The conflicted paths it changes against its first parent, in path order.
    pub paths: Vec<String>,
}

/// The `paths` that commit `id` changes against its first parent (all of them for a root commit),
/// as a [`TouchingCommit`], or `None` when it changes none of them.
pub(crate) fn touching(repo: &gix::Repository, id: gix::ObjectId, paths: &[&[u8]]) -> Result<Option<TouchingCommit>> {
    let to_err = |err| Error::git("a commit to replay", err);
    let commit = repo.find_commit(id).map_err(to_err)?;
    let tree = commit.tree().map_err(to_err)?;
    let parent_tree = match commit.parent_ids().next() {
        Some(parent) => Some(parent.object().map_err(to_err)?.into_commit().tree().map_err(to_err)?),
        None => None,
    };
    let entry_at = |tree: &gix::Tree<'_>, path: &[u8]| {
        tree.lookup_entry(path.split(|byte| *byte == b'/'))
            .ok()
            .flatten()
            .map(|entry| (entry.mode(), entry.object_id()))
    };
    let changed: Vec<String> = paths
        .iter()
        .filter(|path| {
            let now = entry_at(&tree, path);
            let before = parent_tree.as_ref().and_then(|parent| entry_at(parent, path));
            now != before
        })
        .map(|path| crate::facets::utf8(path))
        .collect();
    if changed.is_empty() {
        return Ok(None);
    }
    Ok(Some(TouchingCommit { sha: id.to_string(), subject: subject(commit.message_raw_sloppy()), paths: changed }))
}

pub(crate) use crate::file::is_binary;

/// The `conflict-marker-size` attribute for each of `paths` (default 7), with `.gitattributes` read
/// from `source`.
pub(crate) fn marker_sizes(
    repo: &gix::Repository,
    index: &gix::index::State,
    source: gix::worktree::stack::state::attributes::Source,
    paths: &[&[u8]],
) -> Result<Vec<usize>> {
    let to_err = |err| Error::git("attributes", err);
    let mut stack = repo.attributes_only(index, source).map_err(to_err)?;
    let mut outcome = stack.selected_attribute_matches(["conflict-marker-size"]);
    let mut sizes = Vec::with_capacity(paths.len());
    for path in paths {
        outcome.reset();
        let platform = stack.at_entry(path.as_bstr(), None).map_err(to_err)?;
        platform.matching_attributes(&mut outcome);
        let size = outcome.iter_selected().next().and_then(|matched| match matched.assignment.state {
            gix::attrs::StateRef::Value(value) => value.as_bstr().to_str().ok()?.parse::<usize>().ok(),
            _ => None,
        });
        sizes.push(size.filter(|size| *size > 0).unwrap_or(markers::DEFAULT_MARKER_SIZE));
    }
    Ok(sizes)
}
