//! Set-up shared by the engine's integration tests. Each file under `tests/` is a crate of its own and uses a part
//! of this module, hence the `dead_code` allowance.
#![allow(dead_code)]

use fluxgit_engine::{Budgeted, Engine, Options, budget};
use fluxgit_fixtures::Fixture;

/// An engine whose only allowed root is the fixture's temporary directory.
pub(crate) fn engine_for(fixture: &Fixture) -> Engine {
    let root = fixture.root().canonicalize().expect("fixture root exists");
    Engine::new(Options { allowed_roots: vec![root] })
}

/// The tokens (o200k) of `result` serialised as the MCP layer sends it: the number a `maxTokens` budget bounds.
pub(crate) fn measure<T: serde::Serialize>(result: &Budgeted<T>) -> usize {
    budget::count_tokens(&serde_json::to_string(result).expect("serialises"))
}

/// The fixture's repository path as a tool argument (`repoPath`).
pub(crate) fn repo_path(fixture: &Fixture) -> &str {
    fixture.path().to_str().expect("utf-8 temp path")
}
