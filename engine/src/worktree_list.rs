//! `worktree.list`: the main work tree and every linked worktree, like
//! `git worktree list --porcelain`.

use serde::Serialize;

use crate::compact::is_false;
use crate::engine::{Engine, Repo};
use crate::error::{Error, ItemError, Result};
use crate::facets::{head, utf8};

/// The worktrees of one repository: the main one first, then linked ones by path (git's order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Every worktree.
    pub worktrees: Vec<Worktree>,
}

/// One worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Worktree {
    /// Absolute path of the checkout (the git dir for a bare main repository).
    pub path: String,
    /// `true` for the main work tree (or bare repository), `false` for a linked worktree; default
    /// false.
    #[serde(skip_serializing_if = "is_false")]
    pub main: bool,
    /// `true` for the worktree `repoPath` resolved to; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub current: bool,
    /// `true` when the main repository is bare (it has no checkout).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bare: bool,
    /// The checked-out branch's short name; `None` when detached (or bare); default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// `true` when HEAD names a commit directly; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub detached: bool,
    /// The commit HEAD resolves to, abbreviated as `git worktree list` does (the shortest unique
    /// prefix, at least `core.abbrev`: worktrees share one object store); `None` on an unborn
    /// branch and for a bare repository (as git lists it); default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_sha: Option<String>,
    /// `true` when `git worktree lock` protects it from pruning; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub locked: bool,
    /// The lock reason, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock_reason: Option<String>,
    /// `true` when its checkout is gone, so `git worktree prune` would remove its administrative
    /// files; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub prunable: bool,
    /// Why this worktree's entry could not be read (e.g. its `HEAD` file is not a ref); its
    /// `branch` and `headSha` are then `null`. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ItemError>,
}

impl Engine {
    /// `worktree.list`: the main work tree and the linked worktrees of `repo`'s repository.
    ///
    /// # Errors
    /// [`Error::GitRead`] when the worktree registry or a worktree's HEAD cannot be read.
    pub fn worktree_list(&self, repo: &Repo) -> Result<Report> {
        let git = &repo.git;
        let to_err = |err| Error::git("worktrees", err);
        let current = repo.location.git_dir.as_path();
        // From the main work tree the handle in hand is the main repository: opening it again (configuration files,
        // the pack directory) is only needed from a linked worktree.
        let main = if git.git_dir() == git.common_dir() { git.clone() } else { git.main_repo().map_err(to_err)? };
        let main_git_dir = canonical(main.git_dir());
        let main_path = main.workdir().map_or_else(|| main_git_dir.clone(), canonical);
        let mut worktrees = vec![describe(&main, main_path, main_git_dir == current, true)?];
        let mut linked = Vec::new();
        for proxy in git.worktrees().map_err(to_err)? {
            let locked = proxy.is_locked();
            let lock_reason = proxy.lock_reason().map(|reason| utf8(&reason)).filter(|reason| !reason.is_empty());
            let prunable = proxy.is_prunable();
            let path = proxy.base().map_or_else(|_| proxy.git_dir().to_path_buf(), |base| canonical(&base));
            let is_current = canonical(proxy.git_dir()) == current;
            let described = proxy
                .into_repo_with_possibly_inaccessible_worktree()
                .map_err(|err| Error::git("worktree", err))
                .and_then(|opened| describe(&opened, path.clone(), is_current, false));
            let mut worktree = match described {
                Ok(worktree) => worktree,
                Err(err) => Worktree {
                    path: path.display().to_string(),
                    main: false,
                    current: is_current,
                    bare: false,
                    branch: None,
                    detached: false,
                    head_sha: None,
                    locked: false,
                    lock_reason: None,
                    prunable: false,
                    error: Some(ItemError::from_error(err)),
                },
            };
            worktree.locked = locked;
            worktree.lock_reason = lock_reason;
            worktree.prunable = prunable;
            linked.push(worktree);
        }
        linked.sort_by(|a, b| a.path.cmp(&b.path));
        worktrees.extend(linked);
        Ok(Report { worktrees })
    }
}

fn canonical(path: &std::path::Path) -> std::path::PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

fn describe(repo: &gix::Repository, path: std::path::PathBuf, current: bool, main: bool) -> Result<Worktree> {
    let bare = main && repo.workdir().is_none();
    let head = head::read(repo)?;
    Ok(Worktree {
        path: path.display().to_string(),
        main,
        current,
        bare,
        branch: if bare { None } else { head.branch },
        detached: head.detached && !bare,
        head_sha: if bare { None } else { head.sha.map(|sha| crate::facets::commits::abbreviate_hex(repo, &sha)) },
        locked: false,
        lock_reason: None,
        prunable: false,
        error: None,
    })
}
