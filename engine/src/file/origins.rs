//! Where the lines of a file came from: gix's blame over the history, shallow boundaries walked as
//! git walks them. Shared by `file.blame` ([`super::blame`]) and the ignore-revs matching that
//! hands lines to parents ([`super::ignore`]).

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use gix::ObjectId;
use gix::bstr::{BStr, BString, ByteSlice};

use super::packs::{ChainCachingObjects, DELTA_BASE_CACHE_BYTES};
use crate::ancestry::Shallow;
use crate::error::{Error, Result};

/// Where one line of the blamed file came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineOrigin {
    /// The commit blamed.
    pub(crate) commit: ObjectId,
    /// The path in that commit.
    pub(crate) path: BString,
    /// The line in that commit's version, 0-based.
    pub(crate) line: u32,
    /// Left on an ignored revision because no parent line matched.
    pub(crate) unblamable: bool,
}

/// The history blame walks: the repository (with an object cache, and the work tree's commit in
/// memory when there is one) and its shallow boundary, where commits have no parents.
pub(crate) struct History<'a> {
    pub(crate) repo: &'a gix::Repository,
    pub(crate) shallow: &'a Shallow,
}

impl History<'_> {
    /// gix's blame of the 1-based inclusive `ranges` of `path` at `commit`: the origin of each
    /// blamed line (0-based). The commit-graph file is used when git would use it (not in a shallow
    /// clone, whose boundary commits are read without their parents).
    pub(crate) fn blame_lines(
        &self,
        commit: ObjectId,
        path: &BStr,
        ranges: &[RangeInclusive<u32>],
    ) -> Result<BTreeMap<u32, LineOrigin>> {
        let to_err = |err| Error::git("the file's history (blame)", err);
        let repo = self.repo;
        let options = gix::blame::Options {
            diff_algorithm: repo.diff_algorithm().map_err(to_err)?,
            ranges: gix::blame::BlameRanges::from_one_based_inclusive_ranges(ranges.to_vec()).map_err(to_err)?,
            since: None,
            rewrites: Some(gix::diff::Rewrites::default()),
            debug_track_path: false,
        };
        let mut resource_cache = repo.diff_resource_cache_for_tree_diff().map_err(to_err)?;
        let start = gix::blame::Start::Commit(commit);
        let objects = ChainCachingObjects::new(repo, DELTA_BASE_CACHE_BYTES);
        let outcome = if self.shallow.is_shallow() {
            let odb = WithoutShallowParents { objects: &objects, shallow: self.shallow };
            gix::blame::file(&odb, start, None, &mut resource_cache, path, options)
        } else {
            let graph = repo.commit_graph_if_enabled().map_err(to_err)?;
            gix::blame::file(&objects, start, graph, &mut resource_cache, path, options)
        }
        .map_err(to_err)?;
        let mut lines = BTreeMap::new();
        for entry in &outcome.entries {
            let origin_path = entry.source_file_name.clone().unwrap_or_else(|| path.to_owned());
            for offset in 0..entry.len.get() {
                lines.insert(
                    entry.start_in_blamed_file + offset,
                    LineOrigin {
                        commit: entry.commit_id,
                        path: origin_path.clone(),
                        line: entry.start_in_source_file + offset,
                        unblamable: false,
                    },
                );
            }
        }
        Ok(lines)
    }
}

/// The object database as git reads a shallow clone: the boundary commits come without their
/// `parent` lines, so the blame walk ends there as git's does.
struct WithoutShallowParents<'a> {
    objects: &'a ChainCachingObjects<'a>,
    shallow: &'a Shallow,
}

impl gix::objs::Find for WithoutShallowParents<'_> {
    fn try_find<'a>(&self, id: &gix::oid, buffer: &'a mut Vec<u8>) -> gix::error::Result<Option<gix::objs::Data<'a>>> {
        let Some(data) = self.objects.try_find(id, buffer)? else {
            return Ok(None);
        };
        let (kind, object_hash) = (data.kind, data.object_hash);
        if kind == gix::objs::Kind::Commit && self.shallow.is_boundary(id) {
            let body_start = buffer.find(b"\n\n").map_or(buffer.len(), |idx| idx + 1);
            let mut stripped = Vec::with_capacity(buffer.len());
            for line in buffer[..body_start].lines_with_terminator() {
                if !line.starts_with(b"parent ") {
                    stripped.extend_from_slice(line);
                }
            }
            stripped.extend_from_slice(&buffer[body_start..]);
            *buffer = stripped;
        }
        Ok(Some(gix::objs::Data::new(buffer, kind, object_hash)))
    }
}

impl gix::objs::FindHeader for WithoutShallowParents<'_> {
    fn try_header(&self, id: &gix::oid) -> gix::error::Result<Option<gix::objs::Header>> {
        self.objects.try_header(id)
    }
}
