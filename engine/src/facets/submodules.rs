//! The submodule facet: every submodule at any depth, and the aggregated drift summary of
//! `repo.brief`.

use serde::Serialize;

use crate::compact::is_zero;
use crate::error::{Error, ItemError, Result};
use crate::facets::utf8;

/// Submodules deeper than this are not descended into (a guard against cyclic setups).
pub const MAX_DEPTH: usize = 8;
/// Non-clean paths listed in [`Summary::attention`] at most (design.md#tools).
pub const MAX_ATTENTION: usize = 10;

/// A submodule's state, as `git submodule status --recursive` prints it (` `, `+`, `-`, `U`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SubmoduleState {
    /// Checked out at the commit the superproject records.
    Clean,
    /// Checked out at another commit than recorded (`+`).
    Drifted,
    /// Not initialised: no repository checked out (`-`).
    Uninitialized,
    /// The superproject's index holds a merge conflict at the submodule path (`U`).
    Conflict,
    /// Its state could not be read (see the entry's `error`): a `.gitmodules` name git ignores as
    /// suspicious, a gitdir that is gone. Git itself skips the first and stops at the second.
    Unreadable,
}

/// One submodule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Submodule {
    /// Path relative to the top-level repository, e.g. `libs/a/nested`.
    pub path: String,
    /// The commit the superproject's index records.
    pub recorded_sha: Option<String>,
    /// The commit checked out in the submodule, if initialised.
    pub checked_out_sha: Option<String>,
    /// The derived state.
    pub state: SubmoduleState,
    /// Why the submodule could not be read, for [`SubmoduleState::Unreadable`]; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ItemError>,
}

/// Aggregated submodule drift (design.md#tools `repo.brief`).
///
/// To keep the brief's floor small, zero counts, an empty `attention` and a false
/// `attentionTruncated` are left out of the JSON: an absent count is exactly 0. `total` is always
/// present.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Submodules at any depth; default 0 (then the whole summary is left out of the brief).
    #[serde(skip_serializing_if = "is_zero")]
    pub total: usize,
    /// Checked out where recorded.
    #[serde(skip_serializing_if = "is_zero")]
    pub clean: usize,
    /// Checked out elsewhere.
    #[serde(skip_serializing_if = "is_zero")]
    pub drifted: usize,
    /// Not initialised.
    #[serde(skip_serializing_if = "is_zero")]
    pub uninitialized: usize,
    /// In a merge conflict.
    #[serde(skip_serializing_if = "is_zero")]
    pub conflicts: usize,
    /// Could not be read (see `submodule.status`).
    #[serde(skip_serializing_if = "is_zero")]
    pub unreadable: usize,
    /// Up to [`MAX_ATTENTION`] non-clean submodules, `path (state)` in path order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attention: Vec<String>,
    /// `true` when more non-clean submodules exist than `attention` lists (or the budget cut the
    /// list).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub attention_truncated: bool,
}

impl Summary {
    /// `true` without submodules: the summary carries nothing and is left out of the brief.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

/// Lists every submodule of `repo`, descending into initialised ones, in path order per level.
///
/// # Errors
/// [`Error::GitRead`] when `.gitmodules`, the index or a submodule's HEAD cannot be read.
pub fn list(repo: &gix::Repository) -> Result<Vec<Submodule>> {
    Ok(list_opened(repo)?.into_iter().map(|(submodule, _)| submodule).collect())
}

/// [`list`], each initialised submodule with its repository opened for reads (filter drivers
/// removed, as for the top-level repository).
///
/// # Errors
/// As [`list`].
pub fn list_opened(repo: &gix::Repository) -> Result<Vec<(Submodule, Option<gix::Repository>)>> {
    let mut out = Vec::new();
    collect(repo, "", 0, &mut out)?;
    Ok(out)
}

/// Aggregates [`list`] into counts and an attention list.
pub fn summarize(submodules: &[Submodule]) -> Summary {
    let mut summary = Summary { total: submodules.len(), ..Summary::default() };
    let mut non_clean = Vec::new();
    for submodule in submodules {
        match submodule.state {
            SubmoduleState::Clean => summary.clean += 1,
            SubmoduleState::Drifted => summary.drifted += 1,
            SubmoduleState::Uninitialized => summary.uninitialized += 1,
            SubmoduleState::Conflict => summary.conflicts += 1,
            SubmoduleState::Unreadable => summary.unreadable += 1,
        }
        if submodule.state != SubmoduleState::Clean {
            let state = match submodule.state {
                SubmoduleState::Drifted => "drifted",
                SubmoduleState::Uninitialized => "uninitialized",
                SubmoduleState::Conflict => "conflict",
                SubmoduleState::Unreadable => "unreadable",
                SubmoduleState::Clean => "clean",
            };
            non_clean.push(format!("{} ({state})", submodule.path));
        }
    }
    summary.attention_truncated = non_clean.len() > MAX_ATTENTION;
    non_clean.truncate(MAX_ATTENTION);
    summary.attention = non_clean;
    summary
}

/// What stands in the work tree's place of `.gitmodules` when it is neither a regular file, a
/// symbolic link nor nothing (a FIFO, device, socket or directory), as git would name it. gix would
/// open a FIFO there and wait for ever: callers read such a repository as one without submodules
/// and report `.gitmodules` as unreadable.
pub(crate) fn hostile_modules_file(repo: &gix::Repository) -> Option<&'static str> {
    let metadata = std::fs::symlink_metadata(repo.workdir()?.join(".gitmodules")).ok()?;
    (!metadata.is_file() && !metadata.is_symlink()).then(|| crate::regular_file::kind_name(&metadata))
}

fn collect(
    repo: &gix::Repository,
    prefix: &str,
    depth: usize,
    out: &mut Vec<(Submodule, Option<gix::Repository>)>,
) -> Result<()> {
    let to_err = |err| Error::git("submodules", err);
    if hostile_modules_file(repo).is_some() {
        return Ok(());
    }
    let Some(submodules) = repo.submodules().map_err(to_err)? else {
        return Ok(());
    };
    let index = repo.index_or_empty().map_err(to_err)?;
    let mut level = Vec::new();
    for submodule in submodules {
        // A path git would not accept leaves the section out, as git does.
        let Ok(path) = submodule.path() else { continue };
        let path = utf8(&path);
        let full_path = if prefix.is_empty() { path.clone() } else { format!("{prefix}/{path}") };
        let conflicted = index
            .entry_range(gix::bstr::BStr::new(path.as_bytes()))
            .is_some_and(|range| index.entries()[range].iter().any(|entry| entry.stage_raw() != 0));
        let recorded = index
            .entry_by_path(gix::bstr::BStr::new(path.as_bytes()))
            .filter(|entry| entry.mode.is_submodule())
            .map(|entry| entry.id);
        // The name is checked before anything is opened: `..` in it would lead outside `.git/modules`.
        let opened = if submodule.validated_name().is_err() {
            let reason = format!("ignoring suspicious submodule name {:?}, as git does", utf8(submodule.name()));
            Err(ItemError::new(reason))
        } else {
            // Vetted before gix reads its `.git` file: a gitdir outside the allowed roots is never opened.
            crate::guard::vet_submodule_of(repo, &submodule)
                .and_then(|()| submodule.git_dir_try_old_form().map_err(|err| gitdir_error(repo, &path, err)))
                .and_then(|_| crate::guard::open_submodule(repo, &submodule))
                .map(|opened| opened.filter(|sub| sub.workdir().is_some_and(|w| w.join(".git").exists())))
        };
        let (opened, error) = match opened {
            Ok(opened) => (opened.map(crate::repository::without_filter_drivers).transpose()?, None),
            Err(error) => (None, Some(error)),
        };
        let checked_out = match &opened {
            Some(sub) => sub.head_id().ok().map(gix::Id::detach),
            None => None,
        };
        let state = if conflicted {
            SubmoduleState::Conflict
        } else if error.is_some() {
            SubmoduleState::Unreadable
        } else if checked_out.is_none() {
            SubmoduleState::Uninitialized
        } else if checked_out != recorded {
            SubmoduleState::Drifted
        } else {
            SubmoduleState::Clean
        };
        level.push((
            Submodule {
                path: full_path,
                recorded_sha: recorded.map(|id| id.to_string()),
                checked_out_sha: checked_out.map(|id| id.to_string()),
                state,
                error,
            },
            opened,
        ));
    }
    level.sort_by(|a, b| a.0.path.cmp(&b.0.path));
    for (submodule, opened) in level {
        let path = submodule.path.clone();
        let nested = opened.clone().filter(|_| depth + 1 < MAX_DEPTH);
        out.push((submodule, opened));
        if let Some(sub) = nested {
            collect(&sub, &path, depth + 1, out)?;
        }
    }
    Ok(())
}

/// Why a submodule's repository cannot be found: for a checkout whose `.git` file names a gitdir
/// that is gone, says so with the gitdir it names; else `err` as is.
pub(crate) fn gitdir_error(repo: &gix::Repository, path: &str, err: impl std::error::Error) -> ItemError {
    let dot_git = repo.workdir().map(|workdir| workdir.join(path).join(".git"));
    let read = |dot_git: std::path::PathBuf| {
        crate::guard::read_capped(&dot_git, crate::guard::Symlinks::Follow, 4096, "a .git file").ok().flatten()
    };
    let named = dot_git
        .and_then(read)
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.trim().strip_prefix("gitdir:").map(|gitdir| gitdir.trim().to_owned()));
    match named {
        Some(gitdir) => {
            ItemError::new(format!("its .git file names the gitdir {gitdir}, which is gone or not a repository"))
        }
        None => ItemError::from_error(err),
    }
}
