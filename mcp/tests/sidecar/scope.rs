//! `repo_scope` through the real binary (bad input answered, the server serving on, repositories byte-identical) and
//! its token budget and output schema on the monorepo fixture.

use fluxgit_fixtures::Scenario;
use serde_json::{Value, json};

use crate::budget::{BUDGETS, call as call_tool, check_budget, git_count, list_len, setup};
use crate::tools_stdio::{call, reason, session};

const SCOPE_SECTIONS: &[(&str, &str)] = &[
    ("conflicted", "/data/workingTree/conflicted"),
    ("staged", "/data/workingTree/staged"),
    ("unstaged", "/data/workingTree/unstaged"),
    ("recentCommits", "/data/recentCommits"),
    ("authors", "/data/churn/authors"),
    ("allTimeAuthors", "/data/allTime/authors"),
    ("codeOwnersErrors", "/data/codeOwners/errors"),
    ("changedOwners", "/data/codeOwners/changed"),
    ("ownersByRule", "/data/codeOwners/ownersByRule"),
    ("untracked", "/data/workingTree/untracked"),
];

#[test]
fn bad_scope_input_is_refused_and_the_server_serves_on() {
    let fixture = fluxgit_fixtures::build(Scenario::Monorepo);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let before = fluxgit_fixtures::tree_digest(&root);
    let scope = |id, arguments: Value| {
        let mut full = json!({"repoPath": repo, "path": "packages/web"});
        full.as_object_mut().expect("object").extend(arguments.as_object().expect("object").clone());
        call(id, "repo_scope", full)
    };
    let responses = session(
        &root,
        &[
            scope(1, json!({"path": "/etc"})),
            scope(2, json!({"path": "../outside"})),
            scope(3, json!({"path": "packages/../../outside"})),
            scope(4, json!({"path": ".git/config"})),
            scope(5, json!({"churnDays": 0})),
            scope(6, json!({"churnDays": 36_501})),
            scope(7, json!({"recentCommits": 21})),
            scope(8, json!({"maxTokens": 199})),
            call(9, "repo_scope", json!({"repoPath": repo})),
            scope(10, json!({"churnDays": 365, "recentCommits": 20})),
            scope(11, json!({"path": "packages/wbe"})),
        ],
    );
    assert_eq!(reason(&responses[10]), "not_found", "a mistyped path is not answered as if it existed");
    // Checked before the git oracle below, which may refresh the index.
    assert_eq!(before, fluxgit_fixtures::tree_digest(&root), "repo_scope changed the repository");
    for response in &responses[..4] {
        assert_eq!(reason(response), "invalid_path", "{response}");
    }
    for response in &responses[4..9] {
        assert_eq!(response["error"]["code"], -32602, "out of the schema: {response}");
    }
    let result = &responses[9]["result"];
    assert_eq!(result["isError"], false, "the server serves on: {result}");
    let data = &result["structuredContent"]["data"];
    assert_eq!(data["path"], "packages/web");
    assert_eq!(data["kind"], "directory");
    assert_eq!(data["codeOwners"]["file"], ".github/CODEOWNERS");
    assert_eq!(data["codeOwners"]["owners"], json!(["@acme/frontend"]));
    let git_log = fixture.git(&["log", "-n", "20", "--format=%h", "--", "packages/web"]);
    let shas: Vec<&str> =
        data["recentCommits"].as_array().expect("list").iter().filter_map(|c| c.as_str()?.split(' ').next()).collect();
    assert_eq!(shas, git_log.lines().collect::<Vec<_>>());
    let porcelain = fixture.git(&["status", "--porcelain", "--", "packages/web"]);
    // Nothing is cut at the default budget: the lists' lengths are the counts, which are then left out.
    assert!(result["structuredContent"].get("omitted").is_none(), "{result}");
    assert!(data["workingTree"].get("counts").is_none(), "counts repeat the lists' lengths: {data}");
    let count = |field: &str| data["workingTree"][field].as_array().map_or(0, Vec::len);
    assert_eq!(count("staged") + count("untracked"), porcelain.lines().filter(|l| !l.starts_with(' ')).count());
    assert_eq!(count("untracked"), porcelain.lines().filter(|l| l.starts_with("??")).count());
    let text = result["content"][0]["text"].as_str().expect("text");
    assert_eq!(serde_json::from_str::<Value>(text).expect("json"), result["structuredContent"]);
}

#[test]
fn scope_leaves_every_repository_byte_identical() {
    for scenario in [Scenario::Dirty, Scenario::MergeConflict, Scenario::Submodules, Scenario::FsMonitor] {
        let fixture = fluxgit_fixtures::build(scenario);
        let root = fixture.root().canonicalize().expect("root");
        // Where each path is (the scenarios have no path only in the index); `ls-tree` reads no index.
        let exists: Vec<(&str, bool)> = [".", "src", "docs/guide.md", "libs"]
            .iter()
            .map(|path| {
                let at_head = !fixture.git(&["ls-tree", "HEAD", "--", path]).trim().is_empty();
                (*path, at_head || fixture.path().join(path).exists())
            })
            .collect();
        let before = fluxgit_fixtures::tree_digest(&root);
        let repo = fixture.path().to_str().expect("utf-8").to_owned();
        let requests: Vec<Value> = [".", "src", "docs/guide.md", "libs"]
            .iter()
            .enumerate()
            .map(|(idx, path)| call(idx as i64 + 1, "repo_scope", json!({"repoPath": repo, "path": path})))
            .collect();
        for ((path, exists), response) in exists.iter().zip(session(&root, &requests)) {
            // A path the scenario does not have anywhere is refused; every other one is answered.
            if *exists {
                assert_eq!(response["result"]["isError"], false, "{} {path}: {response}", scenario.name());
            } else {
                assert_eq!(reason(&response), "not_found", "{} {path}: {response}", scenario.name());
            }
        }
        assert_eq!(
            fluxgit_fixtures::tree_digest(&root),
            before,
            "{}: repo_scope changed the repository",
            scenario.name()
        );
        if let Some(traps) = fixture.traps() {
            assert!(traps.sprung().is_empty(), "a repository-configured program ran: {:?}", traps.sprung());
        }
    }
}

#[test]
fn scope_fits_every_budget() {
    let mut cuts = 0;
    let (fixture, engine, registry, repo) = setup(Scenario::Monorepo);
    let definition = registry.lookup("repo_scope").expect("registered").definition().clone();
    let output_schema = jsonschema::validator_for(&definition.output_schema).expect("a valid schema");
    for path in [".", "packages/web", "packages/shared"] {
        let arguments = |max_tokens: u64| json!({"repoPath": repo, "path": path, "churnDays": 365, "recentCommits": 20, "maxTokens": max_tokens});
        let full = call_tool(&registry, &engine, "repo_scope", arguments(1_000_000)).expect("full").structured_value();
        assert!(full.get("omitted").is_none(), "nothing cut at an unlimited budget");
        assert!(output_schema.is_valid(&full), "{path}: the result fits the advertised outputSchema: {full}");
        let status = |prefix: &dyn Fn(&str) -> bool| {
            let output = fixture.git_raw(&["status", "--porcelain", "--", path]);
            String::from_utf8_lossy(&output.stdout).lines().filter(|line| prefix(line)).count()
        };
        let totals = [
            0,
            status(&|l| !l.starts_with('?') && !l.starts_with(' ')),
            status(&|l| !l.starts_with('?') && l.as_bytes().get(1) != Some(&b' ')),
            git_count(&fixture, &["log", "-n", "20", "--format=%H", "--", path]),
            full["data"]["churn"]["authorCount"].as_u64().unwrap_or(0) as usize,
            list_len(&full, "/data/allTime/authors"),
            0,
            list_len(&full, "/data/codeOwners/changed"),
            list_len(&full, "/data/codeOwners/ownersByRule"),
            status(&|l| l.starts_with("??")),
        ];
        for budget in BUDGETS {
            let label = format!("repo_scope {path} @{budget}");
            match call_tool(&registry, &engine, "repo_scope", arguments(budget)) {
                Ok(cut) => {
                    assert!(output_schema.is_valid(&cut.structured_value()), "{label}: outputSchema");
                    cuts += usize::from(check_budget(&full, &cut, budget, SCOPE_SECTIONS, &totals, &label))
                }
                Err(err) => assert!(err.starts_with("-32602") && budget < 400, "{label}: {err}"),
            }
        }
    }
    assert!(cuts >= 4, "the small budgets must cut something ({cuts} cut results)");
}
