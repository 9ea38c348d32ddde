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

/// The text of a successful answer.
fn text_of(response: &Value) -> &str {
    assert_eq!(response["result"]["isError"], false, "{response}");
    response["result"]["content"][0]["text"].as_str().expect("text")
}

/// Issue 55: `worktree_list` takes `format: "text"`: one `git worktree list` line per worktree `git worktree list
/// --porcelain` names, in its order, with the commit, `[branch]` and `prunable` marks git gives, and the broken entry's
/// error; `structuredContent` stays the JSON answer.
#[test]
fn issue_55_worktree_list_text_has_a_line_per_git_worktree() {
    let fixture = fluxgit_fixtures::build(Scenario::Damaged);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let responses = session(
        &root,
        &[
            call(1, "worktree_list", json!({"repoPath": repo, "format": "text"})),
            call(2, "worktree_list", json!({"repoPath": repo})),
        ],
    );
    assert_eq!(responses[0]["result"]["structuredContent"], responses[1]["result"]["structuredContent"]);
    let text = text_of(&responses[0]);
    let lines: Vec<&str> = text.lines().collect();
    let porcelain = fixture.git(&["worktree", "list", "--porcelain"]);
    let blocks: Vec<&str> = porcelain.split("\n\n").filter(|block| !block.trim().is_empty()).collect();
    assert_eq!(lines.len(), blocks.len(), "one line per worktree:\n{text}\n---- git:\n{porcelain}");
    let canonical =
        |path: &str| std::fs::canonicalize(path).map_or_else(|_| path.to_owned(), |p| p.display().to_string());
    for (line, block) in lines.iter().zip(&blocks) {
        let mut fields = block.lines().map(|field| field.split_once(' ').unwrap_or((field, "")));
        let (_, path) = fields.next().expect("worktree <path>");
        let (path_shown, rest) = line.split_once(' ').expect("path and marks");
        assert_eq!(canonical(path_shown), canonical(path), "{line}");
        for (key, value) in fields {
            match key {
                // git lists a HEAD it cannot read as zeros; the text says why instead.
                "HEAD" if value.bytes().all(|digit| digit == b'0') => assert!(rest.contains("error: "), "{line}"),
                "HEAD" => assert!(rest.starts_with(&value[..7]), "{line}: HEAD {value}"),
                "branch" => {
                    assert!(rest.contains(&format!("[{}]", value.trim_start_matches("refs/heads/"))), "{line}")
                }
                "detached" => assert!(rest.contains("(detached HEAD)") || rest.contains("error: "), "{line}"),
                "prunable" | "locked" | "bare" => assert!(rest.contains(key), "{line}: {key}"),
                _ => {}
            }
        }
    }
    let worktrees = responses[1]["result"]["structuredContent"]["data"]["worktrees"].as_array().expect("list").clone();
    assert!(worktrees.iter().any(|worktree| worktree["prunable"] == true), "the fixture has a prunable worktree");
    for (line, worktree) in lines.iter().zip(&worktrees) {
        assert_eq!(line.contains(" error: "), worktree.get("error").is_some(), "{line}");
        assert_eq!(line.ends_with(" current") || line.contains(" current "), worktree["current"] == true, "{line}");
    }
}

/// Issue 55: `submodule_status` takes `format: "text"`: the same lines as `git submodule status --recursive` (state
/// mark, commit, path; the commit shortened to 12 digits), with the recorded commit beside a drifted one;
/// `structuredContent` stays the JSON answer.
#[test]
fn issue_55_submodule_status_text_matches_git_submodule_status() {
    let fixture = fluxgit_fixtures::build(Scenario::Submodules);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let responses = session(
        &root,
        &[
            call(1, "submodule_status", json!({"repoPath": repo, "format": "text"})),
            call(2, "submodule_status", json!({"repoPath": repo})),
            call(3, "submodule_status", json!({"repoPath": repo, "path": "docs", "format": "text"})),
        ],
    );
    assert_eq!(responses[0]["result"]["structuredContent"], responses[1]["result"]["structuredContent"]);
    let text = text_of(&responses[0]);
    let git = fixture.git(&["submodule", "status", "--recursive"]);
    let expected: Vec<String> = git
        .lines()
        .map(|line| {
            let (mark, rest) = line.split_at(1);
            let (sha, rest) = rest.split_once(' ').expect("sha path");
            let path = rest.split(" (").next().expect("path");
            format!("{mark}{} {path}", &sha[..12])
        })
        .collect();
    assert_eq!(expected.len(), 4, "the fixture's submodules, nested one included:\n{git}");
    let first_words: Vec<String> = text
        .lines()
        .map(|line| {
            let (head, rest) = line.split_at(1);
            let mut words = rest.split(' ');
            format!("{head}{} {}", words.next().expect("sha"), words.next().expect("path"))
        })
        .collect();
    assert_eq!(first_words, expected, "{text}\n---- git:\n{git}");
    let drifted = text.lines().find(|line| line.starts_with('+')).expect("a drifted submodule");
    let recorded = fixture.git(&["rev-parse", "HEAD:libs/drifted"]);
    assert!(drifted.ends_with(&format!(" (recorded {})", &recorded.trim()[..12])), "{drifted}");
    assert_eq!(text_of(&responses[2]), "no submodules under docs\n");
}
