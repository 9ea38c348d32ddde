//! `repo_search` through the sidecar: the first call builds the commit index in the run dir and answers from it
//! with the commits `git log --all-match -i -F --grep` lists; text and budgets; bad input over stdio gets -32602
//! with `data.reason` while the server serves on; listed after the earlier read tools.

use std::collections::BTreeSet;

use fluxgit_engine::budget::count_tokens;
use fluxgit_fixtures::Scenario;
use serde_json::{Value, json};

use crate::support::assert_fits_output_schema;
use crate::tools_stdio::{call, reason, session};

fn shas(response: &Value) -> BTreeSet<String> {
    response["result"]["structuredContent"]["data"]["commits"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|commit| commit["sha"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn repo_search_answers_from_the_index_and_refuses_bad_input() {
    let fixture = fluxgit_fixtures::build(Scenario::Monorepo);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let responses = session(
        &root,
        &[
            call(1, "repo_search", json!({"repoPath": repo, "query": "feat", "limit": 200})),
            call(2, "repo_search", json!({"repoPath": repo, "query": "fix", "author": "bob", "path": "packages/api"})),
            call(3, "repo_search", json!({"repoPath": repo, "query": "e", "format": "text", "maxTokens": 200})),
            call(4, "repo_search", json!({"repoPath": repo, "query": "   "})),
            call(5, "repo_search", json!({"repoPath": repo, "query": "fix", "ref": "--all"})),
            call(6, "repo_search", json!({"repoPath": repo, "query": "fix", "path": "../up"})),
            call(7, "repo_search", json!({"repoPath": repo, "query": "fix", "since": "last tuesday"})),
            call(8, "repo_search", json!({"repoPath": repo, "query": "\"route parameters\"", "ref": "main"})),
            call(9, "repo_search", json!({"repoPath": repo})),
        ],
    );
    for response in [&responses[0], &responses[1], &responses[2], &responses[7]] {
        assert_eq!(response["result"]["isError"], false, "{response}");
        assert_fits_output_schema("repo_search", response);
    }
    let git = |args: &[&str]| -> BTreeSet<String> { fixture.git(args).lines().map(str::to_owned).collect() };
    let feat = git(&["log", "--format=%h", "--all-match", "-i", "-F", "--grep=feat", "--branches", "HEAD"]);
    assert_eq!(shas(&responses[0]), feat);
    let data = &responses[0]["result"]["structuredContent"]["data"];
    assert_eq!(data["total"].as_u64(), Some(feat.len() as u64));
    assert!(data.get("walked").is_none(), "the first call built the index and it answered: {data}");
    let bob = git(&[
        "log",
        "--format=%h",
        "--all-match",
        "-i",
        "-F",
        "--grep=fix",
        "--author=bob",
        "--branches",
        "HEAD",
        "--",
        "packages/api",
    ]);
    assert_eq!(shas(&responses[1]), bob);
    let text = responses[2]["result"]["content"][0]["text"].as_str().expect("text");
    assert!(count_tokens(text) <= 200, "{text}");
    let total = responses[2]["result"]["structuredContent"]["data"]["total"].as_u64().expect("total");
    assert!(text.starts_with(&format!("# {total} matching commits\n")), "{text}");
    assert_eq!(reason(&responses[3]), "invalid_query");
    assert_eq!(reason(&responses[4]), "invalid_revision");
    assert_eq!(reason(&responses[5]), "invalid_path");
    assert_eq!(reason(&responses[6]), "invalid_query");
    let walked = &responses[7]["result"]["structuredContent"]["data"];
    assert!(walked["walked"].is_string(), "an explicit ref is walked: {walked}");
    assert_eq!(shas(&responses[7]).len(), 1);
    assert_eq!(responses[8]["error"]["code"], -32602, "query is required; the server still answers");
}

#[test]
fn repo_search_is_listed_after_the_earlier_read_tools() {
    let registry = fluxgit_mcp_sidecar::tools::registry().expect("registry");
    let names: Vec<String> = registry.tools().map(|tool| tool.definition().name.replace('.', "_")).collect();
    let position = |name: &str| names.iter().position(|listed| listed == name).expect("listed");
    for earlier in ["repo_brief", "diff_text", "flux_restorePointDetails", "file_read"] {
        assert!(position(earlier) < position("repo_search"), "{earlier} before repo_search: {names:?}");
    }
    assert!(position("repo_search") < position("operation_preview_merge"), "before the write proposals");
    assert!(registry.lookup("repo_search").is_some_and(|tool| tool.definition().read_only));
}
