//! Set-up shared by the engine's integration tests: the `engine` test binary (`tests/engine/main.rs`) and
//! `tests/generation_tables.rs`. Each uses a part of this module, hence the `dead_code` allowance.
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

/// One commit made with `git commit-tree` (the tree of `main`), with `parents`, author and committer dates at
/// `time` (seconds, which may be older than a parent's: a skewed clock); returns its id. Moves no ref.
pub(crate) fn commit_tree(fixture: &Fixture, parents: &[&str], message: &str, time: i64) -> String {
    let mut args = vec!["commit-tree".to_owned(), "main^{tree}".to_owned(), "-m".to_owned(), message.to_owned()];
    for parent in parents {
        args.extend(["-p".to_owned(), (*parent).to_owned()]);
    }
    let date = format!("@{time} +0000");
    let output = fixture
        .git_command(fixture.path())
        .args(&args)
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .output()
        .expect("git runs");
    assert!(output.status.success(), "commit-tree {message}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("utf-8").trim().to_owned()
}
