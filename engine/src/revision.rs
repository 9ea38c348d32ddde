//! Revisions from arguments (SPEC §4.4): parsed as revisions, never as options.

use crate::error::{Error, InvalidReason, Result};

/// Longest revision accepted, in bytes.
pub const MAX_LEN: usize = 1024;

/// Resolves `spec` (`main`, `v1.0`, `HEAD~2`, `origin/main`, a sha prefix, ...) to the commit it names, peeling tags.
///
/// Refused before any lookup (`invalid_revision`): empty, longer than [`MAX_LEN`], starting with `-` (so
/// `--output=/tmp/x` can never become an option of anything), or holding control characters. A well-formed spec that
/// names nothing, or names something that is not a commit, is `unknown_revision`.
///
/// # Errors
/// [`Error::Invalid`] with [`InvalidReason::InvalidRevision`] or [`InvalidReason::UnknownRevision`].
pub fn resolve_commit(repo: &gix::Repository, spec: &str) -> Result<gix::ObjectId> {
    if spec.is_empty() || spec.len() > MAX_LEN || spec.starts_with('-') || spec.chars().any(char::is_control) {
        return Err(Error::invalid(
            InvalidReason::InvalidRevision,
            format!("{spec:?} is not a revision: it may not be empty, start with '-' or hold control characters"),
        ));
    }
    let unknown =
        || Error::invalid(InvalidReason::UnknownRevision, format!("revision {spec:?} does not name a commit"));
    let id = repo.rev_parse_single(spec).map_err(|_| unknown())?;
    let commit = id.object().map_err(|_| unknown())?.peel_to_commit().map_err(|_| unknown())?;
    Ok(commit.id)
}
