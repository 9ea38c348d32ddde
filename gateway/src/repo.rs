//! The canonical repository of a proposal (design.md#roots, §6): resolved on receipt, at approval and at execution; any
//! difference blocks execution (fail-closed).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::git::Git;

/// A repository as resolved on disk: work-tree root, git dir and common dir, all canonical.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Canonical {
    /// The work-tree root.
    pub work_tree: PathBuf,
    /// The git dir (differs from `common_dir` in a linked worktree).
    pub git_dir: PathBuf,
    /// The common dir (objects, refs).
    pub common_dir: PathBuf,
    /// The common dir's identity on disk (`device:inode` on Unix): a repository replaced by another at the same
    /// path is a different repository.
    #[serde(default)]
    pub identity: String,
}

/// Why a repository path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Not absolute.
    #[error("repoPath must be absolute")]
    NotAbsolute,
    /// Does not exist.
    #[error("repoPath does not exist")]
    NotFound,
    /// Not a work tree (bare repositories are not executed by this gateway).
    #[error("repoPath is not the root of a Git work tree")]
    NotARepository,
    /// Not the canonical root the sidecar must send.
    #[error("repoPath is not the canonical work-tree root")]
    NotCanonicalRoot,
    /// Outside the allowed roots (itself, its git dir or its common dir).
    #[error("repoPath is outside the allowed roots")]
    OutsideAllowedRoots,
}

impl Error {
    /// The machine reason (`data.reason` in the sidecar's 10006).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NotAbsolute => "not_absolute",
            Self::NotFound => "not_found",
            Self::NotARepository => "not_a_repository",
            Self::NotCanonicalRoot => "not_canonical_root",
            Self::OutsideAllowedRoots => "outside_allowed_roots",
        }
    }
}

/// Resolves `repo_path` to its canonical repository inside `allowed_roots`; it must be the work-tree root itself.
pub fn resolve(repo_path: &Path, allowed_roots: &[PathBuf]) -> Result<Canonical, Error> {
    if !repo_path.is_absolute() {
        return Err(Error::NotAbsolute);
    }
    let path = std::fs::canonicalize(repo_path).map_err(|_| Error::NotFound)?;
    let inside = |candidate: &Path| allowed_roots.iter().any(|root| candidate.starts_with(root));
    if !inside(&path) {
        return Err(Error::OutsideAllowedRoots);
    }
    let git = Git::new(&path);
    let output = git
        .read(&["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"])
        .map_err(|_| Error::NotARepository)?;
    if !output.success {
        return Err(Error::NotARepository);
    }
    let lines: Vec<&str> = output.stdout.lines().collect();
    let [top, git_dir, common_dir] = lines.as_slice() else {
        return Err(Error::NotARepository);
    };
    let canonical = |text: &str| -> Result<PathBuf, Error> {
        let candidate = Path::new(text);
        let absolute = if candidate.is_absolute() { candidate.to_owned() } else { path.join(candidate) };
        std::fs::canonicalize(absolute).map_err(|_| Error::NotARepository)
    };
    let work_tree = canonical(top)?;
    if work_tree != path {
        return Err(Error::NotCanonicalRoot);
    }
    let common_dir = canonical(common_dir)?;
    let identity = identity(&common_dir).ok_or(Error::NotARepository)?;
    let resolved = Canonical { work_tree, git_dir: canonical(git_dir)?, common_dir, identity };
    if !inside(&resolved.git_dir) || !inside(&resolved.common_dir) {
        return Err(Error::OutsideAllowedRoots);
    }
    Ok(resolved)
}

/// `device:inode` of `path` on Unix; the empty string elsewhere (paths alone are compared there).
fn identity(path: &Path) -> Option<String> {
    let metadata = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(format!("{}:{}", metadata.dev(), metadata.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        Some(String::new())
    }
}
