//! Revisions from arguments (design.md#roots): parsed as revisions, never as options.

use crate::error::{Error, InvalidReason, Result};

/// Longest revision accepted, in bytes.
pub const MAX_LEN: usize = 1024;

/// Resolves `spec` (`main`, `v1.0`, `HEAD~2`, `origin/main`, a sha prefix, ...) to the commit it
/// names, peeling tags.
///
/// Refused before any lookup (`invalid_revision`): empty, longer than [`MAX_LEN`], starting with
/// `-` (so `--output=/tmp/x` can never become an option of anything), or holding control
/// characters. A well-formed spec that names nothing, or names something that is not a commit, is
/// `unknown_revision`.
///
/// # Errors
/// [`Error::Invalid`] with [`InvalidReason::InvalidRevision`] or
/// [`InvalidReason::UnknownRevision`].
pub(crate) fn resolve_commit(repo: &gix::Repository, spec: &str) -> Result<gix::ObjectId> {
    check(spec)?;
    crate::guard::vet_reflogs_for(repo, spec).map_err(crate::guard::Refusal::into_error)?;
    let unknown = || unknown_revision(repo, spec, format!("revision {spec:?} does not name a commit"));
    let id = repo.rev_parse_single(spec).map_err(|_| unknown())?;
    let commit = id.object().map_err(|_| unknown())?.peel_to_commit().map_err(|_| unknown())?;
    Ok(commit.id)
}

/// `spec` as a commit, or `None` when it names none: for a caller trying candidates in turn, so no
/// nearest names are looked for (with hundreds of refs that costs more than the lookup).
///
/// # Errors
/// [`Error::Invalid`] (`invalid_revision`) for a `spec` starting with `-` or holding control
/// characters.
pub(crate) fn try_resolve_commit(repo: &gix::Repository, spec: &str) -> Result<Option<gix::ObjectId>> {
    check(spec)?;
    crate::guard::vet_reflogs_for(repo, spec).map_err(crate::guard::Refusal::into_error)?;
    let Ok(id) = repo.rev_parse_single(spec) else { return Ok(None) };
    Ok(id.object().ok().and_then(|object| object.peel_to_commit().ok()).map(|commit| commit.id))
}

/// Suggestions given at most for an unknown name.
pub(crate) const MAX_SUGGESTIONS: usize = 3;

/// An `unknown_revision` error for `spec` with `message`, plus up to [`MAX_SUGGESTIONS`] existing
/// ref names nearest to the name `spec` starts with (before any `~`, `^`, `@{`, `:` or `..`), named
/// in the message and in `suggestions`.
///
/// When that name itself resolves (`HEAD~99999` on a shorter history, `main^3` on a commit with one
/// parent), no other names are suggested: the message says the name exists and what follows it
/// names nothing.
pub(crate) fn unknown_revision(repo: &gix::Repository, spec: &str, message: String) -> Error {
    let name = &spec[..name_end(spec)];
    if name.len() < spec.len() && !name.is_empty() && repo.rev_parse_single(name).is_ok() {
        let message = format!("{message}: {name:?} exists, but {:?} after it names nothing there", &spec[name.len()..]);
        return Error::Invalid {
            reason: InvalidReason::UnknownRevision,
            message,
            floor: None,
            suggestions: Vec::new(),
        };
    }
    let suggestions = nearest_refs(repo, spec);
    let message = if suggestions.is_empty() {
        message
    } else {
        format!("{message}; nearest existing: {}", suggestions.join(", "))
    };
    Error::Invalid { reason: InvalidReason::UnknownRevision, message, floor: None, suggestions }
}

/// An `unknown_revision` error for a name that should be a local branch, with the nearest branch
/// names.
pub(crate) fn unknown_branch(repo: &gix::Repository, name: &str) -> Error {
    let candidates = ref_names(repo, &["refs/heads/"]);
    let suggestions = nearest(name.strip_prefix("refs/heads/").unwrap_or(name), &candidates);
    let mut message = format!("{name:?} names no local branch");
    if !suggestions.is_empty() {
        message.push_str(&format!("; nearest existing: {}", suggestions.join(", ")));
    }
    Error::Invalid { reason: InvalidReason::UnknownRevision, message, floor: None, suggestions }
}

/// Up to [`MAX_SUGGESTIONS`] short names of branches, remote-tracking branches and tags (and
/// `HEAD`) nearest to the name `spec` starts with.
pub(crate) fn nearest_refs(repo: &gix::Repository, spec: &str) -> Vec<String> {
    let name = &spec[..name_end(spec)];
    if name.is_empty() {
        return Vec::new();
    }
    let mut candidates = ref_names(repo, &["refs/heads/", "refs/remotes/", "refs/tags/"]);
    candidates.push("HEAD".to_owned());
    nearest(name, &candidates)
}

/// Where the name `spec` starts with ends: at its first `~`, `^`, `@{`, `:` or `..`, else its
/// length.
fn name_end(spec: &str) -> usize {
    ["~", "^", "@{", ":", ".."].iter().filter_map(|cut| spec.find(cut)).min().unwrap_or(spec.len())
}

/// Short names of the refs under `prefixes`, sorted and deduplicated; refs that cannot be read are
/// skipped.
fn ref_names(repo: &gix::Repository, prefixes: &[&str]) -> Vec<String> {
    let mut names = Vec::new();
    if let Ok(platform) = repo.references() {
        for prefix in prefixes {
            if let Ok(iter) = platform.prefixed(*prefix) {
                names.extend(iter.flatten().map(|reference| reference.name().shorten().to_string()));
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// The candidates nearest to `name` by edit distance (case-insensitive, on the whole name or its
/// last `/` component), within a third of its length (at least 2), nearest first, then by name; at
/// most [`MAX_SUGGESTIONS`].
fn nearest(name: &str, candidates: &[String]) -> Vec<String> {
    let wanted = name.to_lowercase();
    let limit = (wanted.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &String)> = candidates
        .iter()
        .filter(|candidate| candidate.as_str() != name)
        .filter_map(|candidate| {
            let lower = candidate.to_lowercase();
            let last = lower.rsplit('/').next().unwrap_or(&lower);
            let distance = edit_distance(&wanted, &lower).min(edit_distance(&wanted, last).saturating_add(1));
            (distance <= limit).then_some((distance, candidate))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(MAX_SUGGESTIONS).map(|(_, candidate)| candidate.clone()).collect()
}

/// Levenshtein distance in characters, with a swap of two neighbours counting 1 (`mian` -> `main`):
/// strsim's optimal string alignment distance.
fn edit_distance(one: &str, two: &str) -> usize {
    strsim::osa_distance(one, two)
}

/// Checks that `spec` is shaped like a revision or ref name without looking it up: not empty, at
/// most [`MAX_LEN`] bytes, not starting with `-` (never an option of anything), no control
/// characters. For names that need not exist yet, e.g. a branch to create.
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

/// Checks that `name` can name a local branch, as `git check-ref-format --branch` does: [`check`]'s
/// rules, then `refs/heads/<name>` must be a valid ref name (no `..`, `@{`, `~^:?*[\\`, space,
/// `.lock` component, leading or trailing `.` or `/`, ...; gix's validator follows
/// git-check-ref-format(1)) other than `refs/heads/HEAD`.
///
/// # Errors
/// [`Error::Invalid`] with [`InvalidReason::InvalidRevision`] for [`check`]'s refusals, with
/// [`InvalidReason::InvalidRefName`] naming git's rule for the rest.
pub fn check_branch_name(name: &str) -> Result<()> {
    check(name)?;
    let full = format!("refs/heads/{name}");
    gix::validate::reference::branch_name(full.as_str().into()).map_err(|error| {
        Error::invalid(InvalidReason::InvalidRefName, format!("{name:?} is not a valid branch name: {error}"))
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_follow_check_ref_format() {
        // `git branch @` and `git branch a@b` are accepted by git; `@{` is not.
        for good in ["main", "feature/login", "fix-1.2", "a/b/c", "refs/heads/x", "un\u{e9}", "@", "a@b"] {
            assert!(check_branch_name(good).is_ok(), "{good}");
        }
        for bad in [
            "../evil", "a..b", "HEAD", "x.lock", "a b", "a:b", "a~1", "a^", "a?", "a*", "a[", "a\\b", "a/", "/a", ".a",
            "a.", "a@{1}", "-a", "",
        ] {
            assert!(check_branch_name(bad).is_err(), "{bad:?} passed");
        }
    }

    #[test]
    fn nearest_names_come_first() {
        let names: Vec<String> =
            ["main", "master", "feature/login", "fix/typo", "develop"].iter().map(|name| (*name).to_owned()).collect();
        assert_eq!(nearest("mian", &names), ["main"]);
        assert_eq!(nearest("mastr", &names), ["master"]);
        assert_eq!(nearest("feature/logn", &names), ["feature/login"]);
        assert_eq!(nearest("login", &names), ["feature/login"]);
        assert!(nearest("zzzzzz", &names).is_empty());
        assert_eq!(edit_distance("mian", "main"), 1);
    }

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
