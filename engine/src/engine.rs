//! The [`Engine`]: the single owner of per-process state, and the entry point of every tool's read logic.

use std::path::PathBuf;

use crate::budget::{Budgeted, Measure};
use crate::error::Result;
use crate::repository::{self, Location};
use crate::{brief, refs, status};

/// Validated engine configuration.
#[derive(Debug, Clone)]
pub struct Options {
    /// Canonical directories under which repositories may be opened (SPEC §4.4).
    pub allowed_roots: Vec<PathBuf>,
}

/// The context engine. Cheap to share by reference; every call opens what it reads.
#[derive(Debug)]
pub struct Engine {
    options: Options,
}

/// A repository resolved by [`Engine::resolve`]: where it is, and an open gix handle (no filter drivers).
pub struct Repo {
    /// Canonical locations, all inside an allowed root.
    pub location: Location,
    pub(crate) git: gix::Repository,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo").field("location", &self.location).finish_non_exhaustive()
    }
}

impl Engine {
    /// Creates an engine with `options`.
    pub fn new(options: Options) -> Self {
        Self { options }
    }

    /// The allowed roots in force.
    pub fn allowed_roots(&self) -> &[PathBuf] {
        &self.options.allowed_roots
    }

    /// Resolves and opens the repository containing `repo_path` (SPEC §4.4).
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] with `invalid_path`, `not_found`, `outside_allowed_roots` or `not_a_repository`.
    pub fn resolve(&self, repo_path: &str) -> Result<Repo> {
        let (location, git) = repository::resolve(repo_path, &self.options.allowed_roots)?;
        Ok(Repo { location, git })
    }

    /// Resolves a revision argument to a full commit sha (see [`crate::revision::resolve_commit`]).
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] with `invalid_revision` or `unknown_revision`.
    pub fn resolve_commit(&self, repo: &Repo, spec: &str) -> Result<String> {
        crate::revision::resolve_commit(&repo.git, spec).map(|id| id.to_string())
    }

    /// `repo.brief`: situational awareness in one call, cut to `max_tokens` as measured by `measure`.
    ///
    /// # Errors
    /// [`crate::Error::GitRead`] on a failed read; [`crate::Error::Invalid`] (`budget_below_floor`) when the required
    /// fields alone exceed `max_tokens`.
    pub fn brief(
        &self,
        repo: &Repo,
        options: &brief::Options,
        max_tokens: usize,
        measure: &mut Measure<'_, brief::Brief>,
    ) -> Result<Budgeted<brief::Brief>> {
        brief::fit(brief::read(&repo.git, options)?, max_tokens, measure)
    }

    /// `repo.status`: branch, operation and every dirty path, cut to `max_tokens`.
    ///
    /// # Errors
    /// As [`Engine::brief`].
    pub fn status(
        &self,
        repo: &Repo,
        max_tokens: usize,
        measure: &mut Measure<'_, status::Report>,
    ) -> Result<Budgeted<status::Report>> {
        status::fit(status::read(&repo.git)?, max_tokens, measure)
    }

    /// `repo.refs`: branches with upstreams, tags, remotes and stashes, cut to `max_tokens`.
    ///
    /// # Errors
    /// As [`Engine::brief`].
    pub fn refs(
        &self,
        repo: &Repo,
        max_tokens: usize,
        measure: &mut Measure<'_, refs::Report>,
    ) -> Result<Budgeted<refs::Report>> {
        refs::fit(refs::read(&repo.git)?, max_tokens, measure)
    }
}
