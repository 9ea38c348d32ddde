//! Where a repository may be (design.md#roots): resolving a `repoPath` under the allowed roots, and
//! opening it with gix so that no repository-configured program can run.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, InvalidReason, Result};

/// A repository resolved from a caller's path, with every location canonical and inside an allowed
/// root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The work tree's top directory, or the git dir for a bare repository: what results report as
    /// `repoPath`.
    pub root: PathBuf,
    /// The canonical form of the path the caller gave (a subfolder resolves to its repository's
    /// `root`).
    pub requested: PathBuf,
    /// The repository's git dir (for a linked worktree, its private `.git/worktrees/<name>` dir).
    pub git_dir: PathBuf,
    /// The common dir shared by all worktrees (equal to `git_dir` outside linked worktrees).
    pub common_dir: PathBuf,
    /// The allowed root that contains the repository.
    pub allowed_root: PathBuf,
}

/// Resolves `repo_path` to its repository, enforcing design.md#roots.
///
/// The path must be absolute and free of control characters; it is canonicalised (symlinks
/// resolved) and must lie under one of `allowed_roots`, and so must the repository's work tree, git
/// dir and common dir, every alternate object store and every symbolic link in the git dir. What
/// gix opens is vetted before it opens it ([`crate::guard`]): no FIFO, device or socket in the git
/// dir's files.
///
/// # Errors
/// [`Error::Invalid`] with `invalid_path`, `not_found`, `outside_allowed_roots` or
/// `not_a_repository`; [`Error::GitRead`] when a file of the git dir is a FIFO, a device or a
/// socket.
pub(crate) fn resolve(repo_path: &str, allowed_roots: &[PathBuf]) -> Result<(Location, gix::Repository)> {
    if repo_path.chars().any(char::is_control) {
        return Err(Error::invalid(InvalidReason::InvalidPath, "repoPath holds control characters"));
    }
    let path = Path::new(repo_path);
    if !path.is_absolute() {
        return Err(Error::invalid(
            InvalidReason::InvalidPath,
            format!("repoPath must be absolute, got {repo_path:?}"),
        ));
    }
    let requested = path.canonicalize().map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => Error::invalid(InvalidReason::NotFound, format!("{repo_path} does not exist")),
        _ => Error::invalid(InvalidReason::NotFound, format!("{repo_path} cannot be read: {err}")),
    })?;
    let allowed_root = containing_root(&requested, allowed_roots)?;
    let not_a_repository = || {
        Error::invalid(
            InvalidReason::NotARepository,
            format!("{} is not inside a Git work tree or git dir", requested.display()),
        )
    };
    // What gix reads to find and open the repository is vetted first (kinds of files, places under the roots):
    // the `.git` entries and HEADs of discovery, then the git dir, common dir and alternates it found.
    crate::guard::vet_discovery(&requested, allowed_roots).map_err(crate::guard::Refusal::into_error)?;
    let (discovered, _) = gix::discover::upwards(&requested).map_err(|_| not_a_repository())?;
    let (found_git_dir, _) = discovered.into_repository_and_work_tree_directories();
    crate::guard::vet_git_dir(&found_git_dir, Some(allowed_roots)).map_err(crate::guard::Refusal::into_error)?;
    let repo = gix::discover_opts(&requested, Default::default(), open_options()).map_err(|_| not_a_repository())?;
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let git_dir = canonical(repo.git_dir());
    let common_dir = canonical(repo.common_dir());
    let root = repo.workdir().map_or_else(|| git_dir.clone(), canonical);
    for location in [&root, &git_dir, &common_dir] {
        containing_root(location, allowed_roots)?;
    }
    let mut repo = without_filter_drivers(repo)?;
    crate::guard::confine(&mut repo, allowed_roots)?;
    vet_configured_files(&repo)?;
    crate::objects::read_packs_first(&mut repo, 0);
    Ok((Location { root, requested, git_dir, common_dir, allowed_root }, repo))
}

/// Checks that a repository-relative `path` argument stays inside the repository: relative, no
/// `..`, no control characters.
///
/// # Errors
/// [`InvalidReason::InvalidPath`] naming the problem.
pub fn check_relative_path(path: &str) -> Result<()> {
    let invalid = |why: &str| Err(Error::invalid(InvalidReason::InvalidPath, format!("path {path:?} {why}")));
    if path.chars().any(char::is_control) {
        return invalid("holds control characters");
    }
    let as_path = Path::new(path);
    if as_path.is_absolute() || path.starts_with('/') || path.starts_with('\\') {
        return invalid("must be relative to the repository");
    }
    if as_path.components().any(|c| matches!(c, Component::ParentDir)) {
        return invalid("must not contain '..'");
    }
    Ok(())
}

/// The ignore and attribute files the configuration names, which gix reads for status and
/// attributes: checked as [`crate::guard::vet_git_dir`] checks the git dir's files (no FIFO, device
/// or socket), and one the repository's own configuration names must lie under the allowed roots.
fn vet_configured_files(repo: &gix::Repository) -> Result<()> {
    for key in ["core.excludesFile", "core.attributesFile"] {
        let Ok(Some(path)) = repo.config_snapshot().trusted_path(key) else { continue };
        crate::guard::configured_file_allowed(repo, key, &path).map_err(crate::guard::Refusal::into_error)?;
        crate::guard::examine(&path, crate::guard::Symlinks::Follow)
            .map_err(|reason| Error::git_text("the configuration", format!("{key}: {reason}")))?;
    }
    Ok(())
}

/// Refuses a repository-relative `path` that goes through a symbolic link, as git refuses a
/// pathspec "beyond a symbolic link": a folder on the way to it that is a symbolic link in HEAD's
/// tree or in the work tree. Only the folders leading to the path are looked at, never the path
/// itself, so the answer is the same whether or not anything exists behind the link.
///
/// # Errors
/// [`InvalidReason::InvalidPath`] naming the link.
pub(crate) fn check_not_beyond_symlink(repo: &gix::Repository, path: &str) -> Result<()> {
    let parts: Vec<&str> = path.split('/').filter(|part| !part.is_empty() && *part != ".").collect();
    if parts.len() < 2 {
        return Ok(());
    }
    let tree = repo.head_tree().ok();
    let workdir = repo.workdir();
    let mut prefix = String::new();
    for part in &parts[..parts.len() - 1] {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(part);
        let in_tree = tree
            .as_ref()
            .and_then(|tree| tree.lookup_entry_by_path(prefix.as_str()).ok().flatten())
            .is_some_and(|entry| entry.mode().is_link());
        let on_disk = workdir.is_some_and(|workdir| {
            std::fs::symlink_metadata(workdir.join(&prefix)).is_ok_and(|metadata| metadata.file_type().is_symlink())
        });
        if in_tree || on_disk {
            return Err(Error::invalid(
                InvalidReason::InvalidPath,
                format!("pathspec {path:?} is beyond a symbolic link ({prefix}), as git refuses it: not followed"),
            ));
        }
    }
    Ok(())
}

fn containing_root(path: &Path, allowed_roots: &[PathBuf]) -> Result<PathBuf> {
    allowed_roots.iter().find(|root| path.starts_with(root)).cloned().ok_or_else(|| {
        Error::invalid(
            InvalidReason::OutsideAllowedRoots,
            format!("{} is outside the allowed roots (FLUXGIT_MCP_ALLOWED_ROOTS)", path.display()),
        )
    })
}

/// Open options for reads: lenient config, no git binary consulted, and the index read as git reads
/// it: without hashing the whole file to check its trailing checksum. git checks it only in
/// `git fsck` (`read-cache.c`, `verify_index_checksum`); gix checks it unless `index.skipHash` is
/// set, and on a 100,000-entry index (9 MB) that SHA-1 was 230M instructions of every cold
/// `repo.status`. gix reads `index.skipHash` only to decide that check and when writing an index,
/// which the engine never does.
pub(crate) fn open_options() -> gix::open::Options {
    gix::open::Options::default().strict_config(false).config_overrides(["index.skipHash=true"])
}

/// Drops every `[filter "<driver>"]` section from the in-memory configuration, so no clean, smudge
/// or process driver can run while status compares work-tree content (design.md#roots). gix runs no
/// fsmonitor, hook, pager or credential helper on the read paths the engine uses; filter drivers
/// are the one program a status could start.
pub(crate) fn without_filter_drivers(mut repo: gix::Repository) -> Result<gix::Repository> {
    let driver_names: Vec<gix::bstr::BString> = repo
        .config_snapshot()
        .plumbing()
        .sections_by_name("filter")
        .into_iter()
        .flatten()
        .filter_map(|section| section.header().subsection_name().map(ToOwned::to_owned))
        .collect();
    if driver_names.is_empty() {
        return Ok(repo);
    }
    {
        let mut config = repo.config_snapshot_mut();
        for name in &driver_names {
            while config.remove_section("filter", Some(name.as_ref())).is_some() {}
        }
        // Committing only re-reads cached values from the edited in-memory file; nothing is written to disk.
        config.commit().map_err(|err| Error::git("configuration", err))?;
    }
    Ok(repo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_checked() {
        assert!(check_relative_path("src/lib.rs").is_ok());
        assert!(check_relative_path("../etc").is_err());
        assert!(check_relative_path("a/../../b").is_err());
        assert!(check_relative_path("/etc").is_err());
        assert!(check_relative_path("a\nb").is_err());
    }
}
