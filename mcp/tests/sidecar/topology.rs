//! `repo_branchStack`, `worktree_list` and `submodule_status` through the real binary: answers on fixtures and
//! clear errors on bad input with the server serving on.

use fluxgit_fixtures::Scenario;
use serde_json::{Value, json};

use crate::tools_stdio::{call, reason, session};

#[test]
fn topology_tools_answer_and_refuse_bad_input() {
    let fixture = fluxgit_fixtures::build(Scenario::Submodules);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let too_many: Vec<String> = (0..257).map(|n| format!("base-{n}")).collect();
    let responses = session(
        &root,
        &[
            call(1, "submodule_status", json!({"repoPath": repo, "path": "../x"})),
            call(2, "submodule_status", json!({"repoPath": repo, "path": "/etc"})),
            call(3, "repo_branchStack", json!({"repoPath": repo, "baseCandidates": too_many})),
            call(4, "repo_branchStack", json!({"repoPath": repo, "maxRelated": 0})),
            call(5, "repo_branchStack", json!({"repoPath": repo, "baseCandidates": ["--all"]})),
            call(6, "submodule_status", json!({"repoPath": repo, "path": "libs/drifted"})),
            call(7, "worktree_list", json!({"repoPath": repo})),
            call(8, "repo_branchStack", json!({"repoPath": repo})),
        ],
    );
    assert_eq!(reason(&responses[0]), "invalid_path");
    assert_eq!(reason(&responses[1]), "invalid_path");
    for idx in [2, 3] {
        assert_eq!(responses[idx]["error"]["code"], -32602, "out of the schema's bounds: {}", responses[idx]);
    }
    assert_eq!(reason(&responses[4]), "invalid_revision");
    let data = |idx: usize| -> &Value {
        assert_eq!(responses[idx]["result"]["isError"], false, "{}", responses[idx]);
        &responses[idx]["result"]["structuredContent"]["data"]
    };
    let drifted = &data(5)["submodules"];
    assert_eq!(drifted.as_array().map(Vec::len), Some(1), "{drifted}");
    assert_eq!(drifted[0]["state"], "drifted");
    assert_ne!(drifted[0]["recordedSha"], drifted[0]["checkedOutSha"]);
    assert_eq!(data(6)["worktrees"][0]["current"], true);
    assert_eq!(data(7)["branch"], "main");
}
