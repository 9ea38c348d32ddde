//! Where a proposal's path leads, as both sides read it: the sidecar's checks and the gateway's must name the same
//! worktree for `worktreeRemove`, also once its directory is gone.

use std::path::{Component, Path, PathBuf};

/// `path` with `.` and `..` resolved lexically, for a path that may not exist (any more): `..` drops the
/// component before it, `.` is dropped. Symbolic links are not followed.
pub fn lexical_path(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Where `path` leads: its canonical form when it exists, else [`lexical_path`].
pub fn resolved_path(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| lexical_path(path))
}

#[cfg(test)]
mod tests {
    use super::lexical_path;
    use std::path::Path;

    #[test]
    fn dot_and_dot_dot_are_resolved_without_the_file_system() {
        assert_eq!(lexical_path(Path::new("/a/b/../c/./d")), Path::new("/a/c/d"));
        assert_eq!(lexical_path(Path::new("/gone/wt/..")), Path::new("/gone"));
    }
}
