//! The four path lists of a work tree's state, shared by `repo.status`, `repo.scope` and
//! `worktree.changes`.

use serde::Serialize;

use crate::budget::first;

/// Unmerged, staged, unstaged and untracked paths, in that order (the JSON field order and the
/// budget's priority).
///
/// `T` is what a staged or unstaged entry carries: a status letter
/// ([`crate::facets::worktree::Change`]) or `--numstat` counts ([`crate::diff::FileStat`]). The
/// lists are flattened into the answer that holds them, each left out of the JSON when empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathLists<T> {
    /// Unmerged paths; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicted: Vec<String>,
    /// Index vs HEAD; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub staged: Vec<T>,
    /// Work tree vs index; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unstaged: Vec<T>,
    /// Untracked files as `status.showUntrackedFiles` lists them: by default (`normal`) a wholly
    /// untracked directory is one `dir/` entry, as in `git status`; `all` lists every file, `no`
    /// none. Default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub untracked: Vec<String>,
}

impl<T> Default for PathLists<T> {
    fn default() -> Self {
        Self { conflicted: Vec::new(), staged: Vec::new(), unstaged: Vec::new(), untracked: Vec::new() }
    }
}

impl<T: Clone> PathLists<T> {
    /// The lengths of the four lists, in order.
    #[must_use]
    pub fn lengths(&self) -> [usize; 4] {
        [self.conflicted.len(), self.staged.len(), self.unstaged.len(), self.untracked.len()]
    }

    /// `true` when every list is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lengths() == [0; 4]
    }

    /// The first `shown[i]` entries of each list, in order.
    #[must_use]
    pub fn first(&self, shown: [usize; 4]) -> Self {
        Self {
            conflicted: first(&self.conflicted, shown[0]),
            staged: first(&self.staged, shown[1]),
            unstaged: first(&self.unstaged, shown[2]),
            untracked: first(&self.untracked, shown[3]),
        }
    }
}
