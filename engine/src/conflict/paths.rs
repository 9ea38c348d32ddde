//! The conflicting paths of an in-memory merge outcome, as the index of a stopped merge would hold
//! them: kinds in Git's terms, rename sources, and marker line ranges in the predicted file.

use std::collections::BTreeMap;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::merge::tree::{Conflict, Resolution, ResolutionFailure, TreatAsUnresolved};
use serde::Serialize;

use super::markers::{self, MarkerRegion};
use super::simplify::join_close_regions;
use super::{ConflictKind, is_binary};
use crate::compact::is_zero;
use crate::error::{Error, Result};
use crate::facets::utf8;

/// Most marker regions listed per path; `regionCount` stays exact.
pub const MAX_REGIONS_PER_PATH: usize = 20;

/// One conflicting path: what the index would hold after the operation stops.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PathConflict {
    /// Repository-relative path.
    pub path: String,
    /// The kind of conflict.
    pub kind: ConflictKind,
    /// For a path that one side renamed: where it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    /// Exact number of marker regions in the predicted work-tree file (text conflicts only).
    #[serde(skip_serializing_if = "is_zero")]
    pub region_count: usize,
    /// Line ranges of the marker regions in the predicted file, at most [`MAX_REGIONS_PER_PATH`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<MarkerRegion>,
}

/// The unmerged paths a stopped merge would leave, as the index would hold them, with kinds and
/// marker regions.
pub(crate) fn path_conflicts(
    repo: &gix::Repository,
    outcome: &mut gix::merge::tree::Outcome<'_>,
) -> Result<Vec<PathConflict>> {
    let how = TreatAsUnresolved::git();
    let unresolved: Vec<&Conflict> = outcome.conflicts.iter().filter(|conflict| conflict.is_unresolved(how)).collect();
    if unresolved.is_empty() {
        return Ok(Vec::new());
    }
    let to_err = |err| Error::git("merge result", err);
    let tree = outcome.tree.write().map_err(to_err)?.detach();
    let mut index = repo.index_from_tree(&tree).map_err(to_err)?;
    let mode = gix::merge::tree::apply_index_entries::RemovalMode::Prune;
    gix::merge::tree::apply_index_entries(&outcome.conflicts, how, &mut index, mode);
    let mut stages: BTreeMap<BString, Vec<u8>> = BTreeMap::new();
    for entry in index.entries() {
        let stage = entry.stage_raw();
        if stage != 0 {
            stages.entry(entry.path(&index).to_owned()).or_default().push(stage as u8);
        }
    }
    let paths: Vec<&[u8]> = stages.keys().map(|path| path.as_slice()).collect();
    let source = gix::worktree::stack::state::attributes::Source::IdMapping;
    let sizes = super::marker_sizes(repo, &index, source, &paths)?;
    // Git joins close regions in the `merge` and `zdiff3` styles only.
    let style = repo.config_snapshot().string("merge.conflictStyle");
    let diff3 = style.is_some_and(|style| style.eq_ignore_ascii_case(b"diff3"));
    let mut out = Vec::with_capacity(stages.len());
    for ((path, path_stages), marker_size) in stages.iter().zip(sizes) {
        let conflict = unresolved.iter().find(|conflict| candidate_paths(conflict).contains(&path.as_bstr()));
        let kind = conflict.map_or(Ok(ConflictKind::Unknown), |conflict| kind_of(repo, conflict))?;
        let mut regions = Vec::new();
        if let Some(merged) = conflict.and_then(|conflict| conflict.content_merge())
            && merged.resolution == gix::merge::blob::Resolution::Conflict
            && matches!(kind, ConflictKind::Content | ConflictKind::AddAdd)
            && path_stages.contains(&2)
            && path_stages.contains(&3)
        {
            let blob = repo.find_object(merged.merged_blob_id).map_err(to_err)?;
            regions = markers::regions(&blob.data, marker_size);
            let entries = conflict.map(|conflict| conflict.entries()).unwrap_or_default();
            if !diff3 && let (Some(ours), Some(theirs)) = (entries[1], entries[2]) {
                let ours = repo.find_object(ours.id).map_err(to_err)?;
                let theirs = repo.find_object(theirs.id).map_err(to_err)?;
                regions = join_close_regions(regions, &blob.data, &ours.data, &theirs.data);
            }
        }
        out.push(PathConflict {
            path: utf8(path),
            kind,
            renamed_from: conflict.and_then(|conflict| renamed_from(conflict, path.as_bstr())),
            region_count: regions.len(),
            regions: regions.into_iter().take(MAX_REGIONS_PER_PATH).collect(),
        });
    }
    Ok(out)
}

/// Every path a conflict may have put into the index.
fn candidate_paths(conflict: &Conflict) -> Vec<&BStr> {
    let mut paths = vec![
        conflict.ours.location(),
        conflict.ours.source_location(),
        conflict.theirs.location(),
        conflict.theirs.source_location(),
    ];
    match &conflict.resolution {
        Ok(Resolution::SourceLocationAffectedByRename { final_location })
        | Ok(Resolution::OursModifiedTheirsRenamedAndChangedThenRename {
            final_location: Some(final_location), ..
        }) => paths.push(final_location.as_bstr()),
        Err(ResolutionFailure::OursModifiedTheirsDirectoryThenOursRenamed {
            renamed_unique_path_to_modified_blob: p,
        })
        | Err(ResolutionFailure::OursDirectoryTheirsNonDirectoryTheirsRenamed { renamed_unique_path_of_theirs: p })
        | Err(ResolutionFailure::OursAddedTheirsAddedTypeMismatch { their_unique_location: p }) => {
            paths.push(p.as_bstr())
        }
        _ => {}
    }
    paths
}

/// The rename source of `path`, if one side renamed something to it.
fn renamed_from(conflict: &Conflict, path: &BStr) -> Option<String> {
    use gix::diff::tree_with_rewrites::Change;
    [&conflict.ours, &conflict.theirs].into_iter().find_map(|change| match change {
        Change::Rewrite { source_location, location, copy: false, .. } if location.as_bstr() == path => {
            Some(utf8(source_location))
        }
        _ => None,
    })
}

/// Classifies a conflict in Git's terms.
fn kind_of(repo: &gix::Repository, conflict: &Conflict) -> Result<ConflictKind> {
    let failure = match &conflict.resolution {
        Err(failure) | Ok(Resolution::Forced(failure)) => failure,
        Ok(_) => {
            let entries = conflict.entries();
            if entries.iter().flatten().any(|entry| entry.mode.is_commit()) {
                return Ok(ConflictKind::Submodule);
            }
            for entry in entries.iter().flatten().filter(|entry| entry.mode.is_blob()) {
                let blob = repo.find_object(entry.id).map_err(|err| Error::git("a conflicting blob", err))?;
                if is_binary(&blob.data) {
                    return Ok(ConflictKind::Binary);
                }
            }
            return Ok(if entries[0].is_none() { ConflictKind::AddAdd } else { ConflictKind::Content });
        }
    };
    Ok(match failure {
        ResolutionFailure::SubmoduleMerge | ResolutionFailure::SubmoduleAddAdd => ConflictKind::Submodule,
        ResolutionFailure::OursRenamedTheirsRenamedToSameLocation
        | ResolutionFailure::OursRenamedTheirsRenamedDifferently { .. } => ConflictKind::RenameRename,
        ResolutionFailure::OursModifiedTheirsDirectoryThenOursRenamed { .. }
        | ResolutionFailure::OursDirectoryTheirsNonDirectoryTheirsRenamed { .. } => ConflictKind::FileDirectory,
        ResolutionFailure::OursAddedTheirsAddedTypeMismatch { .. }
        | ResolutionFailure::OursModifiedTheirsRenamedTypeMismatch => ConflictKind::DistinctTypes,
        ResolutionFailure::OursDeletedTheirsRenamed => ConflictKind::RenameDelete,
        ResolutionFailure::OursModifiedTheirsDeleted => ConflictKind::ModifyDelete,
        _ => ConflictKind::Unknown,
    })
}
