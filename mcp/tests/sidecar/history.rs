//! `repo_history` and `repo_reflog` through the real binary: paging with the cursor, recovery hints, budgets, and
//! clear errors on bad input with the server serving on.

use fluxgit_fixtures::{Scenario, facts};
use serde_json::{Value, json};

use crate::tools_stdio::{call, reason, session};

fn data(response: &Value) -> &Value {
    assert_eq!(response["result"]["isError"], false, "{response}");
    &response["result"]["structuredContent"]["data"]
}

#[test]
fn history_pages_follow_the_cursor_and_bad_input_is_refused() {
    let fixture = fluxgit_fixtures::build(Scenario::RewrittenHistory);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let expected: Vec<String> = fixture.git(&["log", "--format=%h"]).lines().map(str::to_owned).collect();

    // Page by page, each page in its own process: the cursor is all the state there is.
    let mut shas = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let mut arguments = json!({"repoPath": repo, "limit": 4});
        if !cursor.is_null() {
            arguments["cursor"] = cursor.clone();
        }
        let responses = session(&root, &[call(1, "repo_history", arguments)]);
        let page = data(&responses[0]);
        shas.extend(
            page["commits"].as_array().expect("commits").iter().map(|c| c["sha"].as_str().expect("sha").to_owned()),
        );
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(shas, expected);

    let first = session(&root, &[call(1, "repo_history", json!({"repoPath": repo, "limit": 2}))]);
    let cursor = data(&first[0])["nextCursor"].as_str().expect("a next page").to_owned();
    let other = fluxgit_fixtures::build_in(Scenario::Clean, &root.join("other"));
    let other_repo = other.path().to_str().expect("utf-8").to_owned();
    let responses = session(
        &root,
        &[
            call(1, "repo_history", json!({"repoPath": repo, "ref": "no-such-branch"})),
            call(2, "repo_history", json!({"repoPath": repo, "ref": "--output=/tmp/x"})),
            call(3, "repo_history", json!({"repoPath": repo, "cursor": cursor.replace(".2.", ".3.")})),
            call(4, "repo_history", json!({"repoPath": other_repo, "cursor": cursor})),
            call(5, "repo_history", json!({"repoPath": repo, "limit": 0})),
            call(6, "repo_history", json!({"repoPath": repo, "limit": 201})),
            call(7, "repo_history", json!({"repoPath": repo, "path": "../x"})),
            call(8, "repo_reflog", json!({"repoPath": repo, "refName": "nope"})),
            call(9, "repo_reflog", json!({"repoPath": repo, "limit": 101})),
            call(10, "repo_history", json!({"repoPath": repo, "path": "side.txt"})),
        ],
    );
    assert_eq!(reason(&responses[0]), "unknown_revision");
    assert_eq!(reason(&responses[1]), "invalid_revision");
    assert_eq!(reason(&responses[2]), "invalid_cursor", "a tampered cursor");
    assert_eq!(reason(&responses[3]), "invalid_cursor", "a cursor of another repository");
    for idx in [4, 5, 8] {
        assert_eq!(responses[idx]["error"]["code"], -32602, "out of the schema's bounds: {}", responses[idx]);
    }
    assert_eq!(reason(&responses[6]), "invalid_path");
    assert_eq!(reason(&responses[7]), "unknown_revision");
    let side = data(&responses[9]);
    assert_eq!(side["commits"].as_array().map(Vec::len), Some(1), "the server serves on: {side}");
    assert_eq!(side["commits"][0]["subject"], "feat(side): side work");
}

#[test]
fn reflog_names_the_lost_tips_within_budget() {
    let fixture = fluxgit_fixtures::build(Scenario::RewrittenHistory);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let responses = session(
        &root,
        &[
            call(1, "repo_reflog", json!({"repoPath": repo, "limit": 100})),
            call(2, "repo_reflog", json!({"repoPath": repo, "limit": 100, "maxTokens": 400})),
        ],
    );
    let full = data(&responses[0]);
    let lost: Vec<&str> = full["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|entry| entry["recovery"]["lostTip"].as_str())
        .collect();
    let mut expected = facts::REWRITTEN_LOST_TIPS.to_vec();
    expected.reverse();
    assert_eq!(lost.len(), expected.len(), "{lost:?}");
    for (lost, expected) in lost.iter().zip(&expected) {
        assert!(lost.len() >= 7 && expected.starts_with(lost), "newest first: the rebase, the amend, the reset");
    }

    let text = responses[1]["result"]["content"][0]["text"].as_str().expect("text");
    assert!(fluxgit_engine::budget::count_tokens(text) <= 400);
    let cut = &responses[1]["result"]["structuredContent"];
    let shown = cut["data"]["entries"].as_array().map_or(0, Vec::len);
    assert_eq!(cut["data"]["total"], full["total"]);
    assert_eq!(
        cut["omitted"]["entries"].as_u64().map(|n| n as usize),
        Some(full["entries"].as_array().map_or(0, Vec::len) - shown)
    );
}

#[test]
fn symbol_history_names_the_symbol_its_hunks_and_an_ambiguous_names_candidates() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let write = |content: &str| std::fs::write(fixture.path().join("lib.rs"), content).expect("writes lib.rs");
    let source = |value: u32| {
        format!(
            "struct A;\n\nimpl A {{\n    fn new() -> u32 {{\n        {value}\n    }}\n}}\n\nfn new() -> u32 {{\n    0\n}}\n"
        )
    };
    write(&source(1));
    fixture.git(&["add", "lib.rs"]);
    fixture.git(&["commit", "-q", "-m", "add A::new"]);
    write(&source(2));
    fixture.git(&["commit", "-q", "-am", "change A::new"]);
    let responses = session(
        &root,
        &[
            call(1, "repo_history", json!({"repoPath": repo, "path": "lib.rs", "symbol": "A::new"})),
            call(2, "repo_history", json!({"repoPath": repo, "path": "lib.rs", "symbol": "new"})),
            call(3, "repo_history", json!({"repoPath": repo, "symbol": "new"})),
            call(4, "repo_history", json!({"repoPath": repo, "path": "lib.rs", "symbol": "A::new", "format": "text"})),
        ],
    );
    let page = data(&responses[0]);
    assert_eq!(page["symbol"]["name"], "A::new", "{page}");
    assert_eq!(page["symbol"]["kind"], "fn");
    let subjects: Vec<&str> =
        page["commits"].as_array().expect("commits").iter().filter_map(|c| c["subject"].as_str()).collect();
    assert_eq!(subjects, ["change A::new", "add A::new"]);
    assert_eq!(page["commits"][0]["hunks"], json!(["-5,1 +5,1"]), "the changed line, as git numbers it");
    assert_eq!(reason(&responses[1]), "invalid_query");
    assert_eq!(responses[1]["error"]["data"]["suggestions"], json!(["A::new", "new"]), "{}", responses[1]);
    assert_eq!(reason(&responses[2]), "invalid_query", "a symbol needs its file");
    let text = responses[3]["result"]["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("fn A::new") && text.contains("hunks -5,1 +5,1"), "{text}");
}
