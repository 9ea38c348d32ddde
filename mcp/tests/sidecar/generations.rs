//! The generation tables through the real binary: the first server on a repository without a commit-graph saves
//! the table its counts numbered under `<run dir>/generations/`, a second server answers the same counts from it
//! without rewriting it, and a damaged file is ignored and written again (the counts still equal git's). The branch
//! holds a merge: two single-parent chains are counted without numbering anything.

use fluxgit_fixtures::Scenario;
use serde_json::json;

use crate::support::{exchange, sidecar};

/// `repo_refs` in a server of its own on `home`'s run dir: the upstream track of branch `local`.
fn track(root: &std::path::Path, home: &std::path::Path, repo: &str, local: &str) -> (u64, u64) {
    let mut input = Vec::new();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "stdio-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "repo_refs", "arguments": {"repoPath": repo}}}),
    ];
    for request in requests {
        input.extend(request.to_string().bytes());
        input.push(b'\n');
    }
    let responses = exchange(sidecar(root, home, &[]), input);
    let data = &responses[1]["result"]["structuredContent"]["data"];
    let branch = data["branches"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|branch| branch["name"] == local)
        .unwrap_or_else(|| panic!("{local} listed: {data}"));
    let count = |field: &str| branch["upstream"][field].as_u64().unwrap_or_else(|| panic!("{field}: {branch}"));
    (count("ahead"), count("behind"))
}

#[test]
fn a_second_server_counts_from_the_saved_generation_table() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let base = fixture.git(&["rev-parse", "HEAD"]).trim().to_owned();
    fixture.git(&["checkout", "-q", "-b", "side"]);
    fixture.git(&["commit", "-q", "--allow-empty", "-m", "side"]);
    fixture.git(&["checkout", "-q", "-b", "topic", &base]);
    for step in 0..3 {
        fixture.git(&["commit", "-q", "--allow-empty", "-m", &format!("topic {step}")]);
    }
    // A merge, so that the count is not two single-parent chains (those are counted without numbering).
    fixture.git(&["merge", "-q", "--no-ff", "-m", "merge side", "side"]);
    fixture.git(&["checkout", "-q", "--detach", &base]);
    for step in 0..2 {
        fixture.git(&["commit", "-q", "--allow-empty", "-m", &format!("upstream {step}")]);
    }
    let upstream = fixture.git(&["rev-parse", "HEAD"]).trim().to_owned();
    fixture.git(&["update-ref", "refs/remotes/origin/topic", &upstream]);
    fixture.git(&["checkout", "-q", "topic"]);
    fixture.git(&["config", "branch.topic.remote", "origin"]);
    fixture.git(&["config", "branch.topic.merge", "refs/heads/topic"]);
    let git = fixture.git(&["rev-list", "--left-right", "--count", "topic...origin/topic"]);
    let fields: Vec<u64> = git.split_whitespace().map(|field| field.parse().expect("a count")).collect();
    let expected = (fields[0], fields[1]);
    assert_eq!(expected, (5, 2));

    let home = tempfile::tempdir().expect("tempdir");
    let tables = home.path().join("run").join("generations");
    assert_eq!(track(&root, home.path(), &repo, "topic"), expected, "first server");
    let files: Vec<_> = std::fs::read_dir(&tables).expect("the tables directory").flatten().map(|e| e.path()).collect();
    assert_eq!(files.len(), 1, "one table saved: {files:?}");
    let file = &files[0];
    let saved = std::fs::read(file).expect("the table");
    let modified = std::fs::metadata(file).and_then(|meta| meta.modified()).expect("mtime");

    assert_eq!(track(&root, home.path(), &repo, "topic"), expected, "second server, from the saved table");
    assert_eq!(std::fs::metadata(file).and_then(|meta| meta.modified()).expect("mtime"), modified, "not rewritten");

    let mut damaged = saved.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x40;
    std::fs::write(file, &damaged).expect("damages the table");
    assert_eq!(track(&root, home.path(), &repo, "topic"), expected, "a damaged table is not trusted");
    assert_eq!(std::fs::read(file).expect("the table"), saved, "and is written again");
    assert_eq!(fixture.git(&["status", "--porcelain"]), "", "the repository is unchanged");
}
