//! The `agents.presence` read on the [`Engine`]: the engine keeps the [`crate::agents::Detector`],
//! whose stores are cached across calls.

use crate::budget::{Budgeted, Measure};
use crate::engine::{Engine, Repo};
use crate::error::Result;

impl Engine {
    /// `agents.presence`: the other coding agents working in `repo` (design.md#tools), cut to
    /// `max_tokens`. Detection reads only local sources (see [`crate::agents`]); stores are cached
    /// by size and mtime across calls.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] (`budget_below_floor`) when an empty answer exceeds `max_tokens`.
    pub fn agents_presence(
        &self,
        repo: &Repo,
        options: &crate::agents::Options,
        max_tokens: usize,
        measure: &mut Measure<'_, crate::agents::Report>,
    ) -> Result<Budgeted<crate::agents::Report>> {
        self.agents.presence(&repo.location.root, current_branch(repo).as_deref(), options, max_tokens, measure)
    }

    /// The agents working in `repo`, uncut (for previews' `otherAgents`).
    pub fn agents_detect(&self, repo: &Repo, options: &crate::agents::Options) -> crate::agents::Report {
        self.agents.detect(&repo.location.root, current_branch(repo).as_deref(), options)
    }
}

/// The short name of the branch HEAD points to, if any.
fn current_branch(repo: &Repo) -> Option<String> {
    repo.git.head_name().ok().flatten().map(|name| name.shorten().to_string())
}
