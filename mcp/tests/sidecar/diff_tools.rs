//! `commit_details`, `worktree_changes` and `diff_text` through the sidecar: bad input over stdio gets -32602
//! with `data.reason` while the server serves on, repositories stay byte-identical, results fit their budgets on
//! the exact text and match their output schemas.

use fluxgit_engine::budget::count_tokens;
use fluxgit_engine::{Engine, Options};
use fluxgit_fixtures::Scenario;
use fluxgit_mcp_sidecar::tools::{CallContext, Registry, Tool, ToolOutput, registry};
use serde_json::{Map, Value, json};

use crate::tools_stdio::{call, reason, session};

#[test]
fn bad_input_gets_its_reason_and_the_server_serves_on() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let responses = session(
        &root,
        &[
            call(1, "diff_text", json!({"repoPath": repo, "base": "no-such-branch"})),
            call(2, "diff_text", json!({"repoPath": repo, "head": "--output=/tmp/owned"})),
            call(3, "diff_text", json!({"repoPath": repo, "path": "../outside"})),
            call(4, "diff_text", json!({"repoPath": repo, "path": "src/../../etc"})),
            call(5, "commit_details", json!({"repoPath": repo, "commit": "nope"})),
            call(6, "commit_details", json!({"repoPath": repo, "commit": "-p"})),
            call(7, "diff_text", json!({"repoPath": repo, "staged": true, "head": "HEAD"})),
            call(8, "diff_text", json!({"repoPath": repo, "maxBytes": 0})),
            call(9, "commit_details", json!({"repoPath": repo})),
            call(10, "worktree_changes", json!({"repoPath": repo, "maxTokens": 199})),
            call(11, "diff_text", json!({"repoPath": repo, "staged": true})),
            call(12, "commit_details", json!({"repoPath": repo, "commit": "HEAD"})),
            call(13, "worktree_changes", json!({"repoPath": repo})),
        ],
    );
    assert_eq!(reason(&responses[0]), "unknown_revision");
    assert_eq!(reason(&responses[1]), "invalid_revision");
    assert_eq!(reason(&responses[2]), "invalid_path");
    assert_eq!(reason(&responses[3]), "invalid_path");
    assert_eq!(reason(&responses[4]), "unknown_revision");
    assert_eq!(reason(&responses[5]), "invalid_revision");
    assert_eq!(reason(&responses[6]), "invalid_revision");
    for (idx, what) in [(7, "maxBytes under 1"), (8, "commit missing"), (9, "maxTokens under 200")] {
        assert_eq!(responses[idx]["error"]["code"], -32602, "{what}: {}", responses[idx]);
        assert!(responses[idx]["error"]["data"]["errors"].is_array(), "{what}: schema errors listed");
    }
    let staged = &responses[10]["result"];
    assert_eq!(staged["isError"], false, "{staged}");
    assert_eq!(staged["structuredContent"]["data"]["head"], "INDEX");
    assert!(
        staged["structuredContent"]["data"]["patch"].as_str().expect("patch").contains("rename to docs/handbook.md")
    );
    let merge = &responses[11]["result"]["structuredContent"]["data"];
    assert_eq!(merge["parents"].as_array().map(Vec::len), Some(2), "a merge: {merge}");
    assert!(merge["note"].is_string(), "a merge says how it is diffed: {merge}");
    assert_eq!(listed(&responses[12]["result"]["structuredContent"], "unstaged"), 8);
}

/// The exact size of the list `name` in an envelope: the items shown plus those the budget left out, and, when the
/// answer states counts or totals (only beside a cut list), the same number there.
fn listed(envelope: &Value, name: &str) -> usize {
    let data = &envelope["data"];
    let shown = data[name].as_array().map_or(0, Vec::len);
    let total = shown + envelope["omitted"][name].as_u64().unwrap_or(0) as usize;
    let stated = match name {
        "files" => &data["totals"],
        _ => &data["counts"][name],
    };
    if name == "files" {
        assert_eq!(stated.is_object(), total > shown, "totals only beside a cut file list: {envelope}");
        if let Some(files) = stated.get("files") {
            assert_eq!(files.as_u64(), Some(total as u64), "{envelope}");
        }
    } else if let Some(count) = stated.as_u64() {
        assert_eq!(count, total as u64, "{envelope}");
    }
    total
}

#[test]
fn diff_tools_leave_repositories_byte_identical() {
    for scenario in [Scenario::Diffs, Scenario::MergeConflict, Scenario::Submodules, Scenario::FsMonitor] {
        let fixture = fluxgit_fixtures::build(scenario);
        let root = fixture.root().canonicalize().expect("root");
        let before = fluxgit_fixtures::tree_digest(&root);
        let repo = fixture.path().to_str().expect("utf-8").to_owned();
        let requests = [
            call(1, "worktree_changes", json!({"repoPath": repo})),
            call(2, "diff_text", json!({"repoPath": repo})),
            call(3, "diff_text", json!({"repoPath": repo, "staged": true, "binary": true})),
            call(4, "diff_text", json!({"repoPath": repo, "base": "HEAD", "binary": true})),
            call(5, "commit_details", json!({"repoPath": repo, "commit": "HEAD"})),
        ];
        for response in session(&root, &requests) {
            assert_eq!(response["result"]["isError"], false, "{}: {response}", scenario.name());
        }
        assert_eq!(
            fluxgit_fixtures::tree_digest(&root),
            before,
            "{}: a diff tool changed the repository",
            scenario.name()
        );
        if let Some(traps) = fixture.traps() {
            assert!(traps.sprung().is_empty(), "a repository-configured program ran: {:?}", traps.sprung());
        }
    }
}

fn run(registry: &Registry, engine: &Engine, tool: &str, arguments: Value) -> Result<ToolOutput, String> {
    let tool: &dyn Tool = registry.lookup(tool).expect("registered");
    let ctx = CallContext {
        engine,
        client_name: "diff-test",
        bridge: &fluxgit_mcp_sidecar::bridge::Bridge::NONE,
        interrupt: &fluxgit_engine::Interrupt::new(),
        resolved: None,
    };
    let arguments: Map<String, Value> = arguments.as_object().expect("object").clone();
    tool.call(&ctx, &arguments).map_err(|err| format!("{} {} {:?}", err.code, err.message, err.data))
}

/// Checks the budget on the exact text and the output schema; returns the structured result.
fn checked(registry: &Registry, engine: &Engine, tool: &str, arguments: Value, budget: usize) -> Value {
    let output = run(registry, engine, tool, arguments).unwrap_or_else(|err| panic!("{tool} @{budget}: {err}"));
    assert!(!output.is_error, "{tool}: {}", output.text);
    let tokens = count_tokens(&output.text);
    assert!(tokens <= budget, "{tool}: {tokens} tokens over a budget of {budget}");
    let schema = &registry.lookup(tool).expect("registered").definition().output_schema;
    let validator = jsonschema::validator_for(schema).expect("the output schema compiles");
    let errors: Vec<String> =
        validator.iter_errors(&output.structured_value()).map(|error| error.to_string()).collect();
    assert!(errors.is_empty(), "{tool}: output does not match its schema: {errors:?}");
    output.structured_value()
}

#[test]
fn budgets_hold_and_results_match_their_schemas() {
    let registry = registry().expect("registry");
    let large = fluxgit_fixtures::build(Scenario::LargeDiff);
    let engine = Engine::new(Options { allowed_roots: vec![large.root().canonicalize().expect("root")] });
    let path = large.path().to_str().expect("utf-8");
    // The default budget lists all 30 files of a 40,000-line diff.
    let range =
        checked(&registry, &engine, "diff_text", json!({"repoPath": path, "base": "HEAD~1", "head": "HEAD"}), 12_000);
    assert_eq!(range["data"]["files"].as_array().map(Vec::len), Some(30));
    // Every file listed: no totals, the files' sums say them.
    assert!(range["data"].get("totals").is_none(), "{}", range["data"]["totals"]);
    let additions: u64 =
        range["data"]["files"].as_array().into_iter().flatten().filter_map(|f| f["additions"].as_u64()).sum();
    assert_eq!(additions, 40_000);
    assert_eq!(range["data"]["truncated"], true);
    for budget in [300, 1000, 4000, 20_000] {
        let cut = checked(&registry, &engine, "diff_text", json!({"repoPath": path, "maxTokens": budget}), budget);
        let listed = cut["data"]["files"].as_array().map_or(0, Vec::len);
        let omitted = cut["omitted"]["files"].as_u64().unwrap_or(0) as usize;
        if omitted > 0 {
            assert_eq!(cut["data"]["totals"]["files"], 30, "totals stay exact @{budget}");
        } else {
            assert!(cut["data"].get("totals").is_none(), "no cut file list, no totals @{budget}");
        }
        assert_eq!(listed + omitted, 30, "@{budget}: every file listed or counted");
    }
    let bytes =
        checked(&registry, &engine, "diff_text", json!({"repoPath": path, "maxBytes": 5000, "maxLines": 80}), 12_000);
    let patch = bytes["data"]["patch"].as_str().expect("patch");
    assert!(patch.len() <= 5000 && patch.lines().count() <= 80 && !patch.is_empty());

    let diffs = fluxgit_fixtures::build(Scenario::Diffs);
    let engine = Engine::new(Options { allowed_roots: vec![diffs.root().canonicalize().expect("root")] });
    let path = diffs.path().to_str().expect("utf-8");
    for budget in [250, 600, 4000] {
        let details = checked(
            &registry,
            &engine,
            "commit_details",
            json!({"repoPath": path, "commit": "HEAD~2", "maxTokens": budget}),
            budget,
        );
        assert_eq!(listed(&details, "files"), 9);
        let changes =
            checked(&registry, &engine, "worktree_changes", json!({"repoPath": path, "maxTokens": budget}), budget);
        assert_eq!(listed(&changes, "staged"), 4);
    }
    checked(&registry, &engine, "diff_text", json!({"repoPath": path, "binary": true}), 12_000);
    let unmerged = fluxgit_fixtures::build(Scenario::MergeConflict);
    let engine = Engine::new(Options { allowed_roots: vec![unmerged.root().canonicalize().expect("root")] });
    let path = unmerged.path().to_str().expect("utf-8");
    let conflict = checked(&registry, &engine, "diff_text", json!({"repoPath": path}), 12_000);
    assert!(conflict["data"]["files"].as_array().expect("files").iter().any(|file| file["status"] == "unmerged"));
    checked(&registry, &engine, "worktree_changes", json!({"repoPath": path}), 4000);
}

/// Issue 22 through the binary: `diff_text` shows a stopped merge's unmerged paths as `git diff` does (combined
/// diff, numstat counts), in JSON and text; `commit_details` on a stash gives its parts apart.
#[test]
fn unmerged_paths_and_stashes_read_as_git_shows_them() {
    let fixture = fluxgit_fixtures::build(Scenario::MergeConflict);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let responses = session(
        &root,
        &[
            call(1, "diff_text", json!({"repoPath": repo, "path": "src/main.c"})),
            call(2, "diff_text", json!({"repoPath": repo, "path": "src/main.c", "format": "text"})),
            call(3, "diff_text", json!({"repoPath": repo, "maxTokens": 300})),
        ],
    );
    let git = fixture.git(&["diff", "--", "src/main.c"]);
    assert!(git.starts_with("diff --cc src/main.c\n") && git.contains("\n++<<<<<<< "), "{git}");
    let json = &responses[0]["result"]["structuredContent"]["data"];
    assert_eq!(json["patch"], git.as_str(), "{json}");
    let numstat = fixture.git(&["diff", "--numstat", "--", "src/main.c"]);
    let (mut additions, mut deletions) = (0, 0);
    for line in numstat.lines() {
        let fields: Vec<u64> = line.split('\t').take(2).map(|count| count.parse().expect("a count")).collect();
        (additions, deletions) = (additions + fields[0], deletions + fields[1]);
    }
    let file = &json["files"][0];
    assert_eq!((file["status"].as_str(), file["additions"].as_u64().unwrap_or(0)), (Some("unmerged"), additions));
    assert_eq!(file["deletions"].as_u64().unwrap_or(0), deletions, "{json}");
    let text = responses[1]["result"]["content"][0]["text"].as_str().expect("text");
    assert!(text.contains(&format!("U src/main.c +{additions} -{deletions}\n")) && text.ends_with(&git), "{text}");
    let cut = &responses[2]["result"];
    assert!(count_tokens(cut["content"][0]["text"].as_str().expect("text")) <= 300, "{cut}");
    let mut names: Vec<String> = fixture.git(&["diff", "--name-only"]).lines().map(str::to_owned).collect();
    names.dedup();
    let listed = cut["structuredContent"]["data"]["files"].as_array().map_or(0, Vec::len);
    let omitted = cut["structuredContent"]["omitted"]["files"].as_u64().unwrap_or(0) as usize;
    assert_eq!(listed + omitted, names.len(), "every file counted: {cut}");

    let stashes = fluxgit_fixtures::build(Scenario::Stashes);
    let root = stashes.root().canonicalize().expect("root");
    let repo = stashes.path().to_str().expect("utf-8").to_owned();
    let sha = stashes.git(&["rev-parse", "stash@{1}"]).trim().to_owned();
    let responses = session(
        &root,
        &[
            call(1, "commit_details", json!({"repoPath": repo, "commit": "stash@{0}"})),
            call(2, "commit_details", json!({"repoPath": repo, "commit": sha, "format": "text"})),
        ],
    );
    let newest = &responses[0]["result"]["structuredContent"]["data"];
    assert_eq!(newest["stash"]["ref"], "stash@{0}", "{newest}");
    let untracked = stashes.git(&["show", "--name-only", "--format=", "stash@{0}^3"]);
    let listed: Vec<&str> = newest["stash"]["untracked"]["files"]
        .as_array()
        .expect("untracked files")
        .iter()
        .filter_map(|file| file["path"].as_str())
        .collect();
    assert_eq!(listed, untracked.lines().collect::<Vec<_>>(), "git show stash^3");
    let shown = stashes.git(&["stash", "show", "--name-only", "stash@{0}"]);
    let files: Vec<&str> =
        newest["files"].as_array().expect("files").iter().filter_map(|f| f["path"].as_str()).collect();
    assert_eq!(files, shown.lines().collect::<Vec<_>>(), "git stash show");
    let text = responses[1]["result"]["content"][0]["text"].as_str().expect("text");
    let index = stashes.git(&["diff", "--name-only", "stash@{1}^1", "stash@{1}^2"]);
    let part = text.split("stash@{1} index (git diff stash@{1}^1 stash@{1}^2):\n").nth(1).expect("the index part");
    for path in index.lines() {
        assert!(part.contains(&format!("M {path} +")), "{text}");
    }
}

/// `commit_details` with `body: false`: the subject and every file, no body, and fewer tokens than with it.
#[test]
fn commit_details_without_the_body_gives_the_budget_to_the_files() {
    let registry = registry().expect("registry");
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let body: String = (0..200).map(|line| format!("Line {line} of a long explanation nobody asked for.\n")).collect();
    std::fs::write(fixture.path().join("notes.txt"), "changed\n").expect("writable");
    fixture.git(&["add", "-A"]);
    fixture.git(&["commit", "-qm", &format!("Change the notes\n\n{body}")]);
    let engine = Engine::new(Options { allowed_roots: vec![fixture.root().canonicalize().expect("root")] });
    let path = fixture.path().to_str().expect("utf-8");
    let whole = checked(&registry, &engine, "commit_details", json!({"repoPath": path, "commit": "HEAD"}), 32_000);
    let lean = checked(
        &registry,
        &engine,
        "commit_details",
        json!({"repoPath": path, "commit": "HEAD", "body": false}),
        32_000,
    );
    assert!(whole["data"]["body"].as_str().is_some_and(|text| text.contains("Line 199")), "{whole}");
    assert!(lean["data"].get("body").is_none(), "{lean}");
    assert_eq!(lean["data"]["subject"], "Change the notes");
    assert_eq!(lean["data"]["files"], whole["data"]["files"]);
    let tokens = |value: &Value| count_tokens(&value.to_string());
    assert!(tokens(&lean) * 5 < tokens(&whole), "{} vs {} tokens", tokens(&lean), tokens(&whole));
}
