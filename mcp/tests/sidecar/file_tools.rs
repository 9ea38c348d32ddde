//! `file.read` through the sidecar: bad input over stdio gets -32602 with `data.reason` while the server serves on;
//! good calls equal `git show rev:path`, fit their budget on the exact text and match the output schema; the tool
//! is listed after the read tools that were there before it.

use fluxgit_engine::budget::count_tokens;
use fluxgit_fixtures::Scenario;
use serde_json::json;

use crate::support::assert_fits_output_schema;
use crate::tools_stdio::{call, reason, session};

#[test]
fn file_read_refuses_bad_input_and_serves_on() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let responses = session(
        &root,
        &[
            call(1, "file.read", json!({"repoPath": repo, "path": "../outside"})),
            call(2, "file.read", json!({"repoPath": repo, "path": "src/missing.c"})),
            call(3, "file.read", json!({"repoPath": repo, "path": "src/long.c", "startLine": 9, "endLine": 3})),
            call(4, "file.read", json!({"repoPath": repo, "path": "src/long.c", "rev": "--output=/tmp/owned"})),
            call(5, "file.read", json!({"repoPath": repo, "path": "src"})),
            call(6, "file.read", json!({"repoPath": repo, "path": "src/topic.c", "rev": "HEAD~2"})),
            call(7, "file.read", json!({"repoPath": repo, "path": "src/long.c", "maxBytes": 0})),
            call(8, "file.read", json!({"repoPath": repo, "path": "src/long.c", "startLine": 2, "endLine": 4})),
            call(9, "file.read", json!({"repoPath": repo, "path": "data/legacy.txt", "rev": "HEAD~1"})),
            call(10, "file.read", json!({"repoPath": repo, "path": "assets/logo.bin"})),
            call(11, "file.read", json!({"repoPath": repo, "path": "src/long.c", "maxTokens": 300})),
            call(12, "tools/list-is-not-a-tool", json!({"repoPath": repo})),
        ],
    );
    assert_eq!(reason(&responses[0]), "invalid_path");
    assert_eq!(reason(&responses[1]), "not_found");
    assert_eq!(reason(&responses[2]), "invalid_range");
    assert_eq!(reason(&responses[3]), "invalid_revision");
    assert_eq!(reason(&responses[4]), "not_a_file");
    assert_eq!(reason(&responses[5]), "not_found");
    assert_eq!(responses[6]["error"]["code"], -32602, "maxBytes 0: {}", responses[6]);
    for response in &responses[7..11] {
        assert_eq!(response["result"]["isError"], false, "{response}");
        assert_fits_output_schema("file.read", response);
    }
    let range = &responses[7]["result"]["structuredContent"]["data"];
    let long = fixture.git(&["show", "HEAD:src/long.c"]);
    let expected: String = long.split_inclusive('\n').skip(1).take(3).collect();
    assert_eq!(range["content"], expected);
    assert_eq!((range["startLine"].as_u64(), range["endLine"].as_u64()), (Some(2), Some(4)));
    let legacy = &responses[8]["result"]["structuredContent"]["data"];
    assert_eq!(legacy["nonUtf8"], true);
    assert!(legacy["content"].is_null() && legacy["contentBase64"].is_string());
    let logo = &responses[9]["result"]["structuredContent"]["data"];
    assert_eq!(logo["binary"], true);
    assert!(logo["content"].is_null() && logo["contentBase64"].is_null());
    let cut = &responses[10]["result"];
    let text = cut["content"][0]["text"].as_str().expect("text");
    assert!(count_tokens(text) <= 300, "{text}");
    let shown = cut["structuredContent"]["data"]["endLine"].as_u64().expect("endLine");
    assert_eq!(cut["structuredContent"]["data"]["truncated"], true);
    assert_eq!(cut["structuredContent"]["omitted"]["lines"].as_u64(), Some(60 - shown));
    assert_eq!(responses[11]["error"]["code"], -32602, "unknown tool, the server still answers");
}

#[test]
fn file_read_is_listed_after_the_earlier_read_tools() {
    let registry = fluxgit_mcp_sidecar::tools::registry().expect("registry");
    let names: Vec<&str> = registry.tools().map(|tool| tool.definition().name).collect();
    let position = |name: &str| names.iter().position(|listed| *listed == name).expect("listed");
    for earlier in ["repo.brief", "diff.text", "repo.conflictPreflight", "safety.timeline", "flux.restorePointDetails"]
    {
        assert!(position(earlier) < position("file.read"), "{earlier} before file.read: {names:?}");
    }
    assert!(registry.lookup("file.read").is_some_and(|tool| tool.definition().read_only));
}
