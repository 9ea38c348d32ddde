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
    check(spec)?;
    let unknown =
        || Error::invalid(InvalidReason::UnknownRevision, format!("revision {spec:?} does not name a commit"));
    let id = repo.rev_parse_single(spec).map_err(|_| unknown())?;
    let commit = id.object().map_err(|_| unknown())?.peel_to_commit().map_err(|_| unknown())?;
    Ok(commit.id)
}

/// Checks that `spec` is shaped like a revision or ref name without looking it up: not empty, at most [`MAX_LEN`]
/// bytes, not starting with `-` (never an option of anything), no control characters. For names that need not
/// exist yet, e.g. a branch to create.
///
/// # Errors
/// [`Error::Invalid`] with [`InvalidReason::InvalidRevision`].
pub fn check(spec: &str) -> Result<()> {
    if spec.is_empty() || spec.len() > MAX_LEN || spec.starts_with('-') || spec.chars().any(char::is_control) {
        return Err(Error::invalid(
            InvalidReason::InvalidRevision,
            format!("{spec:?} is not a revision: it may not be empty, start with '-' or hold control characters"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked_without_lookup() {
        for spec in ["main", "feature/x", "HEAD~2", "v1.0^{commit}", "a-b"] {
            assert!(check(spec).is_ok(), "{spec}");
        }
        for spec in ["", "-x", "--force", "a\nb", &"x".repeat(MAX_LEN + 1)] {
            assert!(check(spec).is_err(), "{spec:?}");
        }
    }
}
