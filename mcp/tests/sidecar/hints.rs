//! Issue 22: `repo_brief`'s hints lead somewhere. On five everyday tasks (finish a stopped merge, recover commits
//! lost to `reset --hard`, rebase a stack onto a main that moved, move a branch onto its rebased parent (issue 35),
//! find who owns a directory and what changed there)
//! the brief's first hint, called through the real binary with its arguments as given, answers the task's next
//! question (checked against git); hints name a write proposal only when a gateway is configured.

use std::path::Path;

use fluxgit_fixtures::{Fixture, Scenario};
use serde_json::{Value, json};

use crate::support::{Running, initialize, sidecar, tool_call};

/// One server for `repo` with the clock pinned at `now` (Unix seconds) and `env` added.
fn start(root: &Path, home: &Path, now: i64, env: &[(&str, &str)]) -> Running {
    let mut command = sidecar(root, home, &[]);
    command.env("FLUXGIT_NOW_EPOCH_SECS", now.to_string());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut server = Running::start(command);
    let initialized = server.request(&initialize("hints-test", "1"));
    assert!(initialized["result"].is_object(), "{initialized}");
    server
}

/// `data` of a successful tool call.
fn data(response: &Value) -> &Value {
    assert_eq!(response["result"]["isError"], false, "{response}");
    &response["result"]["structuredContent"]["data"]
}

/// Calls `repo_brief`, then its first hint as given; returns the brief's data and the hint's answer.
fn follow_first_hint(server: &mut Running, repo: &str) -> (Value, Value, Value) {
    let brief = server.request(&tool_call(1, "repo_brief", json!({ "repoPath": repo })));
    let brief = data(&brief).clone();
    let hint = brief["hints"][0].clone();
    let tool = hint["tool"].as_str().unwrap_or_else(|| panic!("a first hint: {brief}"));
    let mut arguments = hint["arguments"].as_object().cloned().unwrap_or_default();
    arguments.insert("repoPath".into(), json!(repo));
    let answer = server.request(&tool_call(2, tool, Value::Object(arguments)));
    (brief, hint, answer)
}

/// The reflog time of `<reference>@{0}`, Unix seconds.
fn reflog_time(fixture: &Fixture, reference: &str) -> i64 {
    let line = fixture.git(&["log", "-g", "-1", "--date=unix", "--format=%gd", reference]);
    let inside = line.trim().rsplit_once("@{").and_then(|(_, rest)| rest.strip_suffix('}')).expect("a reflog selector");
    inside.parse().expect("unix seconds")
}

fn lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).filter(|line| !line.is_empty()).collect();
    lines.sort();
    lines
}

#[test]
fn a_stopped_merge_leads_to_the_conflicts() {
    let fixture = fluxgit_fixtures::build(Scenario::MergeConflict);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("home");
    let repo = fixture.path().to_str().expect("utf-8");
    let mut server = start(&root, home.path(), reflog_time(&fixture, "HEAD"), &[]);
    let (brief, hint, answer) = follow_first_hint(&mut server, repo);
    assert_eq!(hint["tool"], "conflict_read", "{brief}");
    let run = hint["run"].as_str().expect("run");
    assert!(run.contains("git merge --abort") && run.contains("git commit"), "what ends the merge: {run}");
    let why = hint["why"].as_str().expect("why");
    assert!(why.contains("src/main.c"), "the conflicted paths the brief only counts: {why}");
    assert!(brief["hints"].as_array().expect("hints").iter().all(|hint| hint["tool"] != "repo_status"), "{brief}");
    // The next question: which files conflict, and in which operation.
    let read = data(&answer);
    assert_eq!(read["operation"], "merge", "{read}");
    let unmerged = lines(&fixture.git(&["diff", "--name-only", "--diff-filter=U"]));
    let mut listed: Vec<String> = read["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|file| file["path"].as_str().expect("path").to_owned())
        .collect();
    listed.sort();
    assert_eq!(listed, unmerged);
    assert_eq!(read["conflictedFiles"], unmerged.len());
    server.finish();
}

#[test]
fn commits_lost_to_a_hard_reset_lead_to_the_branch_reflog() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    for idx in 0..3 {
        std::fs::write(fixture.path().join(format!("lost-{idx}.txt")), format!("{idx}\n")).expect("write");
        fixture.git(&["add", "."]);
        fixture.git(&["commit", "-q", "-m", &format!("feat: lost work {idx}")]);
    }
    let lost_tip = fixture.git(&["rev-parse", "HEAD"]).trim().to_owned();
    fixture.git(&["reset", "-q", "--hard", "HEAD~3"]);
    let lost = fixture.git(&["rev-list", "--count", &lost_tip, "--not", "--all"]).trim().parse::<usize>().expect("n");
    assert_eq!(lost, 3);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("home");
    let repo = fixture.path().to_str().expect("utf-8");
    let reset_at = reflog_time(&fixture, "main");

    let mut server = start(&root, home.path(), reset_at + 3600, &[]);
    let (brief, hint, answer) = follow_first_hint(&mut server, repo);
    assert_eq!((hint["tool"].as_str(), hint["arguments"]["refName"].as_str()), (Some("repo_reflog"), Some("main")));
    assert!(hint["why"].as_str().expect("why").contains("3 commits"), "{brief}");
    // The next question: where is the lost work, and how many commits.
    let reflog = data(&answer);
    assert_eq!(reflog["refName"], "refs/heads/main");
    let recovery = &reflog["entries"][0]["recovery"];
    assert_eq!(recovery["lostCommits"], lost, "{reflog}");
    let short = fixture.git(&["rev-parse", "--short", &lost_tip]);
    assert_eq!(recovery["lostTip"], short.trim(), "{reflog}");
    // No gateway: no proposal is named; the git command a person runs is given instead.
    assert!(recovery.get("tool").is_none() && recovery.get("arguments").is_none(), "{reflog}");
    let command = recovery["command"].as_str().expect("a command").to_owned();
    server.finish();
    // With a gateway address, the recovery names the proposal.
    let mut proposing = start(&root, home.path(), reset_at + 3600, &[("FLUXGIT_MCP_HANDSHAKE_ADDR", "127.0.0.1:9")]);
    let answer = proposing.request(&tool_call(1, "repo_reflog", json!({ "repoPath": repo, "refName": "main" })));
    let recovery = &data(&answer)["entries"][0]["recovery"];
    assert_eq!(recovery["tool"], "operation_preview_branch", "{answer}");
    assert_eq!(recovery["arguments"]["startPoint"], lost_tip.as_str(), "{answer}");
    // The put-back command stays beside the side-branch proposal: no tool moves a branch forward.
    assert_eq!(recovery["command"].as_str(), Some(command.as_str()), "{answer}");
    proposing.finish();

    // Outside the recency window the hint is gone.
    let mut later = start(&root, home.path(), reset_at + 8 * 86_400, &[]);
    let brief = later.request(&tool_call(1, "repo_brief", json!({ "repoPath": repo })));
    let tools: Vec<&Value> = data(&brief)["hints"].as_array().map(|hints| hints.iter().collect()).unwrap_or_default();
    assert!(tools.iter().all(|hint| hint["tool"] != "repo_reflog"), "{brief}");
    later.finish();
    // The command, run as given, puts the three commits back on main, which has not moved since the reset.
    let words: Vec<&str> = command.split(' ').collect();
    assert_eq!(words[..3], ["git", "merge", "--ff-only"], "{command}");
    fixture.git(&words[1..]);
    assert_eq!(fixture.git(&["rev-parse", "main"]).trim(), lost_tip, "{command}");
}

#[test]
fn a_stack_on_a_moved_main_leads_to_the_branch_stack() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let commit = |file: &str| {
        std::fs::write(fixture.path().join(file), format!("{file}\n")).expect("write");
        fixture.git(&["add", file]);
        fixture.git(&["commit", "-q", "-m", &format!("feat: add {file}")]);
    };
    fixture.git(&["checkout", "-q", "-b", "stack/a"]);
    commit("a-1.txt");
    commit("a-2.txt");
    fixture.git(&["checkout", "-q", "-b", "stack/b"]);
    commit("b-1.txt");
    commit("b-2.txt");
    fixture.git(&["checkout", "-q", "main"]);
    commit("main-moved.txt");
    fixture.git(&["checkout", "-q", "stack/b"]);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("home");
    let repo = fixture.path().to_str().expect("utf-8");

    let mut server = start(&root, home.path(), reflog_time(&fixture, "HEAD") + 60, &[]);
    let (brief, hint, answer) = follow_first_hint(&mut server, repo);
    assert_eq!(hint["tool"], "repo_branchStack", "{brief}");
    assert_eq!(hint["arguments"]["branch"], "stack/b");
    let why = hint["why"].as_str().expect("why");
    assert!(why.contains("main -> stack/a -> stack/b") && why.contains("repo_conflictPreflight"), "{why}");
    // The next question: how far did main move, and which branches form the stack (from stack/b's point of view).
    let stack = data(&answer);
    let left_right = |other: &str| -> Vec<usize> {
        let counts = fixture.git(&["rev-list", "--left-right", "--count", &format!("stack/b...{other}")]);
        counts.split_whitespace().map(|count| count.parse().expect("count")).collect()
    };
    let count = |value: &Value| value.as_u64().map_or(0, |count| count as usize);
    assert_eq!(stack["base"]["name"], "main");
    assert_eq!(vec![count(&stack["base"]["ahead"]), count(&stack["base"]["behind"])], left_right("main"));
    assert_eq!(left_right("main"), [4, 1]);
    let below = &stack["related"][0];
    assert_eq!((below["name"].as_str(), below["relation"].as_str()), (Some("stack/a"), Some("currentStackedOn")));
    assert_eq!(vec![count(&below["ahead"]), count(&below["behind"])], left_right("stack/a"));
    // Then the rebase onto the base, predicted as the hint says.
    let preflight =
        server.request(&tool_call(3, "repo_conflictPreflight", json!({ "repoPath": repo, "targetRef": "main" })));
    assert_eq!(data(&preflight)["rebase"]["status"], "clean", "{preflight}");
    server.finish();
}

#[test]
fn a_parent_rebased_under_a_branch_leads_to_the_rebase_onto() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let commit = |file: &str| {
        std::fs::write(fixture.path().join(file), format!("{file}\n")).expect("write");
        fixture.git(&["add", file]);
        fixture.git(&["commit", "-q", "-m", &format!("feat: add {file}")]);
    };
    fixture.git(&["checkout", "-q", "-b", "stack/a"]);
    commit("a-1.txt");
    commit("a-2.txt");
    fixture.git(&["checkout", "-q", "-b", "stack/b"]);
    commit("b-1.txt");
    commit("b-2.txt");
    fixture.git(&["checkout", "-q", "main"]);
    commit("main-moved.txt");
    fixture.git(&["checkout", "-q", "stack/a"]);
    fixture.git(&["rebase", "-q", "main"]);
    fixture.git(&["checkout", "-q", "stack/b"]);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("home");
    let repo = fixture.path().to_str().expect("utf-8");

    let mut server = start(&root, home.path(), reflog_time(&fixture, "HEAD") + 60, &[]);
    let (brief, hint, answer) = follow_first_hint(&mut server, repo);
    assert_eq!(hint["tool"], "repo_branchStack", "{brief}");
    assert_eq!(hint["arguments"]["branch"], "stack/b");
    assert_eq!(hint["why"], "parent stack/a was rebased; this branch still sits on its old commits");
    // The next question: where stack/b sits, and the command that moves it (git's fork point, git's result).
    let moved = &data(&answer)["parentMoved"];
    let fork_point = fixture.git(&["merge-base", "--fork-point", "stack/a", "stack/b"]);
    let short = |rev: &str| fixture.git(&["rev-parse", "--short", rev]).trim().to_owned();
    assert_eq!(moved["parent"], "stack/a", "{answer}");
    assert_eq!(moved["oldTip"].as_str(), Some(short(fork_point.trim()).as_str()));
    assert_eq!(moved["newTip"].as_str(), Some(short("stack/a").as_str()));
    assert_eq!(moved["commits"], 2);
    assert_eq!(moved["replay"], "clean");
    let command = moved["command"].as_str().expect("a command");
    assert_eq!(command, format!("git rebase --onto stack/a {} stack/b", short(fork_point.trim())));
    // Text answers the same facts in two lines.
    let text = server.request(&tool_call(
        3,
        "repo_branchStack",
        json!({ "repoPath": repo, "branch": "stack/b", "format": "text" }),
    ));
    let text = text["result"]["content"][0]["text"].as_str().expect("text").to_owned();
    assert!(text.contains(&format!("{command}: clean")), "{text}");
    assert!(text.contains("parent stack/a rebased: old tip"), "{text}");
    server.finish();
    let words: Vec<&str> = command.split_whitespace().skip(1).collect();
    fixture.git(&words);
    assert_eq!(fixture.git(&["rev-parse", "stack/b~2"]), fixture.git(&["rev-parse", "stack/a"]));
}

#[test]
fn codeowners_with_changes_lead_to_the_scope_of_the_changed_directory() {
    let fixture = fluxgit_fixtures::build(Scenario::Monorepo);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("home");
    let repo = fixture.path().to_str().expect("utf-8");
    let mut server = start(&root, home.path(), reflog_time(&fixture, "HEAD") + 60, &[]);
    let (brief, hint, answer) = follow_first_hint(&mut server, repo);
    assert_eq!(hint["tool"], "repo_scope", "{brief}");
    let path = hint["arguments"]["path"].as_str().expect("a path").to_owned();
    assert_eq!(path, "packages/web/src", "the directory holding most of the changes");
    // The next question: who owns it and what changed there.
    let scope = data(&answer);
    assert_eq!(scope["path"], path.as_str());
    let owners: Vec<&str> =
        scope["codeOwners"]["owners"].as_array().expect("owners").iter().filter_map(Value::as_str).collect();
    assert_eq!(owners, ["@acme/frontend"], "{scope}");
    let porcelain = fixture.git(&["-c", "core.fsmonitor=false", "status", "--porcelain", "--", &path]);
    let tree = &scope["workingTree"];
    let mut listed: Vec<String> = ["staged", "unstaged", "untracked", "conflicted"]
        .iter()
        .flat_map(|list| tree[*list].as_array().cloned().unwrap_or_default())
        .map(|entry| entry["path"].as_str().or(entry.as_str()).expect("a path").to_owned())
        .collect();
    listed.sort();
    listed.dedup();
    let expected = lines(&porcelain.lines().map(|line| line[3..].to_owned()).collect::<Vec<_>>().join("\n"));
    assert_eq!(listed, expected, "{scope}");
    server.finish();
}

#[test]
fn proposals_are_hinted_only_with_a_gateway() {
    let fixture = fluxgit_fixtures::build(Scenario::Dirty);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("home");
    let repo = fixture.path().to_str().expect("utf-8");
    let hints = |env: &[(&str, &str)]| {
        let mut server = start(&root, home.path(), reflog_time(&fixture, "HEAD") + 60, env);
        let brief = server.request(&tool_call(1, "repo_brief", json!({ "repoPath": repo, "maxTokens": 4000 })));
        server.finish();
        data(&brief)["hints"].as_array().cloned().unwrap_or_default()
    };
    let without = hints(&[]);
    let on_default = without.iter().find(|hint| hint["tool"] == "worktree_changes");
    let on_default = on_default.unwrap_or_else(|| panic!("a hint about the dirty default branch: {without:?}"));
    assert!(on_default["run"].as_str().expect("run").contains("git switch -c"), "what a person would do");
    assert!(without.iter().all(|hint| !hint["tool"].as_str().expect("tool").starts_with("operation_")), "{without:?}");

    let with = hints(&[("FLUXGIT_MCP_HANDSHAKE_ADDR", "127.0.0.1:9")]);
    let proposal = with.iter().find(|hint| hint["tool"] == "operation_preview_branch");
    assert!(proposal.is_some_and(|hint| hint["arguments"]["name"].is_string()), "{with:?}");
}

/// Issue 35: every hint says why, unless its tool and the brief already say it (`submodule.status` beside the
/// brief's list of submodules needing attention). On the fixtures that raise each rule, with and without a gateway
/// (which turns some hints into proposals), each hint's `why` is present, in the JSON and on its text line.
#[test]
fn issue_35_every_hint_says_why() {
    use crate::budget::{call, setup};
    let scenarios = [
        Scenario::MergeConflict,
        Scenario::RebaseStopped,
        Scenario::RewrittenHistory,
        Scenario::DetachedTag,
        Scenario::AheadBehind,
        Scenario::Submodules,
        Scenario::Monorepo,
        Scenario::Dirty,
        Scenario::Stashes,
    ];
    let mut seen = std::collections::BTreeSet::new();
    for scenario in scenarios {
        let (_fixture, engine, registry, path) = setup(scenario);
        let arguments = json!({ "repoPath": path, "maxTokens": 4000 });
        let brief = call(&registry, &engine, "repo.brief", arguments.clone()).expect("brief").structured_value();
        let mut text_arguments = arguments;
        text_arguments["format"] = json!("text");
        let text = call(&registry, &engine, "repo.brief", text_arguments).expect("text").text;
        for hint in data_hints(&brief) {
            let tool = hint["tool"].as_str().expect("tool");
            seen.insert(tool.to_owned());
            if tool == "submodule_status" {
                continue;
            }
            let why = hint["why"].as_str().unwrap_or_default();
            assert!(!why.is_empty(), "{}: the hint to {tool} says no why: {hint}", scenario.name());
            let line = text.lines().find(|line| line.starts_with(&format!("-> {tool}")));
            // Issue 35: a hint whose answer the text brief shows itself is left to the JSON.
            let answered = crate::support::answered_in_text(tool, &text);
            if line.is_none() && answered {
                continue;
            }
            assert!(line.is_some_and(|line| line.ends_with(&format!(": {why}"))), "{}: {text}", scenario.name());
        }
    }
    let expected = ["conflict_read", "repo_reflog", "repo_conflictPreflight", "worktree_changes", "commit_details"];
    for tool in expected {
        assert!(seen.contains(tool), "no fixture raised a hint to {tool}: {seen:?}");
    }
}

fn data_hints(envelope: &Value) -> Vec<Value> {
    envelope["data"]["hints"].as_array().cloned().unwrap_or_default()
}

/// Issue 37: a branch whose own change against main is large leads to `diff_semantic` of `git diff
/// <merge-base>..HEAD`, with the size (git's counts) as the reason; a small change raises no such hint.
#[test]
fn a_large_change_ahead_of_main_leads_to_the_semantic_diff() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let commit = |file: &str, text: &str| {
        std::fs::write(fixture.path().join(file), text).expect("write");
        fixture.git(&["add", file]);
        fixture.git(&["commit", "-q", "-m", &format!("feat: add {file}")]);
    };
    fixture.git(&["checkout", "-q", "-b", "feat/big"]);
    commit("small.rs", "fn small() {}\n");
    fixture.git(&["checkout", "-q", "main"]);
    commit("main-moved.txt", "moved\n");
    fixture.git(&["checkout", "-q", "feat/big"]);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("home");
    let repo = fixture.path().to_str().expect("utf-8");
    let mut server = start(&root, home.path(), reflog_time(&fixture, "HEAD") + 60, &[]);
    let brief = server.request(&tool_call(1, "repo_brief", json!({ "repoPath": repo })));
    let tools: Vec<Value> = data(&brief)["hints"].as_array().into_iter().flatten().map(|h| h["tool"].clone()).collect();
    assert!(!tools.contains(&json!("diff_semantic")), "one changed line is no large change: {brief}");
    server.finish();

    let functions: String = (0..200).map(|n| format!("fn f{n}() -> u32 {{\n    {n}\n}}\n")).collect();
    commit("big.rs", &functions);
    let mut server = start(&root, home.path(), reflog_time(&fixture, "HEAD") + 60, &[]);
    let (brief, hint, answer) = follow_first_hint(&mut server, repo);
    assert_eq!(hint["tool"], "diff_semantic", "{brief}");
    let merge_base = fixture.git(&["merge-base", "main", "HEAD"]);
    let short = fixture.git(&["rev-parse", "--short", merge_base.trim()]);
    assert_eq!(hint["arguments"], json!({ "base": short.trim(), "head": "HEAD" }), "{hint}");
    let numstat = fixture.git(&["diff", "--numstat", merge_base.trim(), "HEAD"]);
    let files = numstat.lines().count();
    assert_eq!(files, 2);
    let lines: u64 = numstat
        .lines()
        .flat_map(|line| line.split('\t').take(2).map(|count| count.parse::<u64>().expect("a count")))
        .sum();
    assert!(lines >= 300, "{numstat}");
    assert_eq!(
        hint["why"],
        format!("2 commits ahead of main: {files} files, 300+ lines changed; cheaper than diff_text")
    );
    // The hint's call answers the branch's own change: git's files (those the budget shows among them).
    let answer = data(&answer);
    assert_eq!(answer["changedFiles"], files, "{answer}");
    let names = fixture.git(&["diff", "--name-only", merge_base.trim(), "HEAD"]);
    let shown = answer["files"].as_array().expect("files");
    assert!(!shown.is_empty(), "{answer}");
    assert!(shown.iter().all(|file| names.lines().any(|name| file["path"] == name)), "{answer}");
    server.finish();
}

/// Issue 35: the text brief answers what its hint's call would, and leaves the hint out: a stopped rebase's regions
/// with how to end it (vs `git diff --name-only --diff-filter=U`), commits lost to a reset with their recovery (vs
/// `git log <old> --not --all`), and a folder of checkouts with their radar (vs `git status` in the checkout).
#[test]
fn issue_35_the_text_brief_answers_what_its_hint_would() {
    // A rebase stopped on a text conflict, one more commit to replay (a binary one would keep the hint: only
    // conflict_read says it is binary).
    let merge = fluxgit_fixtures::build(Scenario::Clean);
    let commit = |file: &str, text: &str| {
        std::fs::write(merge.path().join(file), text).expect("write");
        merge.git(&["add", file]);
        merge.git(&["commit", "-q", "-m", &format!("edit {file}")]);
    };
    commit("shared.txt", "one\ntwo\n");
    merge.git(&["checkout", "-q", "-b", "topic"]);
    commit("shared.txt", "one\ntopic\n");
    commit("later.txt", "later\n");
    merge.git(&["checkout", "-q", "main"]);
    commit("shared.txt", "one\nmain\n");
    merge.git(&["checkout", "-q", "topic"]);
    assert!(!merge.git_raw(&["rebase", "main"]).status.success(), "the rebase stops");
    let root = merge.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("home");
    let mut server = start(&root, home.path(), reflog_time(&merge, "HEAD") + 3600, &[]);
    let repo = merge.path().to_str().expect("utf-8");
    let brief = server.request(&tool_call(1, "repo_brief", json!({ "repoPath": repo, "format": "text" })));
    let text = brief["result"]["content"][0]["text"].as_str().expect("text");
    assert!(!text.contains("-> conflict_read"), "{text}");
    assert!(text.contains("conclude: git add <path>; git rebase --continue\nabort: git rebase --abort\n"), "{text}");
    for path in merge.git(&["diff", "--name-only", "--diff-filter=U"]).lines() {
        let content = String::from_utf8_lossy(&std::fs::read(merge.path().join(path)).expect("read")).into_owned();
        if content.contains("<<<<<<<") {
            assert!(text.contains(&format!("\n@@ {path} ")), "{path}: {text}");
        }
    }
    let hints = data(&server.request(&tool_call(2, "repo_brief", json!({ "repoPath": repo }))))["hints"].clone();
    assert_eq!(hints[0]["tool"], "conflict_read", "the JSON keeps the hint: {hints}");
    // The merge's folder is no work tree: a brief there is the radar of the checkouts below it.
    let folder = merge.path().parent().expect("a folder").to_str().expect("utf-8").to_owned();
    let radar = server.request(&tool_call(3, "repo_brief", json!({ "repoPath": folder, "format": "text" })));
    let text = radar["result"]["content"][0]["text"].as_str().expect("text");
    let counts = &radar["result"]["structuredContent"]["data"]["fleet"]["counts"];
    assert_eq!(counts["conflicts"], 1, "{radar}");
    let name = merge.path().file_name().expect("name").to_str().expect("utf-8");
    assert!(text.lines().any(|line| line.starts_with("conflicts ") && line.contains(name)), "{text}");
    server.finish();

    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    for idx in 0..2 {
        std::fs::write(fixture.path().join(format!("lost-{idx}.txt")), format!("{idx}\n")).expect("write");
        fixture.git(&["add", "."]);
        fixture.git(&["commit", "-q", "-m", &format!("feat: lost work {idx}")]);
    }
    fixture.git(&["reset", "-q", "--hard", "HEAD~2"]);
    let root = fixture.root().canonicalize().expect("root");
    let mut server = start(&root, home.path(), reflog_time(&fixture, "main") + 3600, &[]);
    let repo = fixture.path().to_str().expect("utf-8");
    let brief = server.request(&tool_call(1, "repo_brief", json!({ "repoPath": repo, "format": "text" })));
    let text = brief["result"]["content"][0]["text"].as_str().expect("text");
    assert!(!text.contains("-> repo_reflog"), "{text}");
    assert!(text.contains("main lost 2 commits (reset) no ref holds: git merge --ff-only "), "{text}");
    let old = fixture.git(&["rev-parse", "main@{1}"]);
    for line in fixture.git(&["log", "--format=%h %s", old.trim(), "--not", "--all"]).lines() {
        assert!(text.contains(&format!("\n  {line}\n")), "{line}: {text}");
    }
    server.finish();
}
