//! `file_read` and `file_blame` through the sidecar: bad input over stdio gets -32602 with `data.reason` while the
//! server serves on; good calls equal `git show rev:path` and `git blame --line-porcelain` (with and without the
//! ignore list), fit their budget on the exact text and match the output schema; the tools are listed after the
//! read tools that were there before them.

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
            call(1, "file_read", json!({"repoPath": repo, "path": "../outside"})),
            call(2, "file_read", json!({"repoPath": repo, "path": "src/missing.c"})),
            call(3, "file_read", json!({"repoPath": repo, "path": "src/long.c", "startLine": 9, "endLine": 3})),
            call(4, "file_read", json!({"repoPath": repo, "path": "src/long.c", "rev": "--output=/tmp/owned"})),
            call(5, "file_read", json!({"repoPath": repo, "path": "src"})),
            call(6, "file_read", json!({"repoPath": repo, "path": "src/topic.c", "rev": "HEAD~2"})),
            call(7, "file_read", json!({"repoPath": repo, "path": "src/long.c", "maxBytes": 0})),
            call(8, "file_read", json!({"repoPath": repo, "path": "src/long.c", "startLine": 2, "endLine": 4})),
            call(9, "file_read", json!({"repoPath": repo, "path": "data/legacy.txt", "rev": "HEAD~1"})),
            call(10, "file_read", json!({"repoPath": repo, "path": "assets/logo.bin"})),
            call(11, "file_read", json!({"repoPath": repo, "path": "src/long.c", "maxTokens": 300})),
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
        assert_fits_output_schema("file_read", response);
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
        assert!(position(earlier) < position("file.read"), "{earlier} before file_read: {names:?}");
    }
    assert!(registry.lookup("file_read").is_some_and(|tool| tool.definition().read_only));
}

/// `git blame --line-porcelain` of `path` at HEAD: per line, (sha, original line, original path).
fn git_blame_lines(fixture: &fluxgit_fixtures::Fixture, path: &str, extra: &[&str]) -> Vec<(String, u64, String)> {
    let mut args = vec!["blame", "--line-porcelain"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["HEAD", "--", path]);
    let mut lines = Vec::new();
    let mut header: Option<(String, u64)> = None;
    for text in fixture.git(&args).lines() {
        if let Some(path) = text.strip_prefix("filename ") {
            let (sha, orig) = header.take().expect("a header line first");
            lines.push((sha, orig, path.to_owned()));
        } else if header.is_none() && !text.starts_with('\t') {
            let fields: Vec<&str> = text.split(' ').collect();
            if fields.len() >= 3 && fields[0].len() == 40 {
                header = Some((fields[0].to_owned(), fields[1].parse().expect("orig line")));
            }
        }
    }
    lines
}

#[test]
fn file_blame_over_stdio_equals_git_blame_and_refuses_bad_input() {
    let fixture = fluxgit_fixtures::build(Scenario::Blame);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let responses = session(
        &root,
        &[
            call(1, "file_blame", json!({"repoPath": repo, "path": "../outside"})),
            call(2, "file_blame", json!({"repoPath": repo, "path": "src/parser.c"})),
            call(3, "file_blame", json!({"repoPath": repo, "path": "lib/parser.c", "startLine": 9, "endLine": 3})),
            call(4, "file_blame", json!({"repoPath": repo, "path": "lib/parser.c", "rev": "--output=/tmp/owned"})),
            call(5, "file_blame", json!({"repoPath": repo, "path": "assets/blob.bin"})),
            call(6, "file_blame", json!({"repoPath": repo, "path": "lib"})),
            call(7, "file_blame", json!({"repoPath": repo, "path": "lib/parser.c"})),
            call(
                8,
                "file_blame",
                json!({"repoPath": repo, "path": "lib/parser.c", "ignoreRevs": false, "startLine": 20, "endLine": 30}),
            ),
            call(
                9,
                "file_blame",
                json!({"repoPath": repo, "path": "lib/parser.c", "maxTokens": 300, "format": "text"}),
            ),
        ],
    );
    assert_eq!(reason(&responses[0]), "invalid_path");
    assert_eq!(reason(&responses[1]), "not_found");
    assert_eq!(reason(&responses[2]), "invalid_range");
    assert_eq!(reason(&responses[3]), "invalid_revision");
    assert_eq!(reason(&responses[4]), "binary_file");
    assert_eq!(reason(&responses[5]), "not_a_file");
    for (response, extra) in
        [(&responses[6], vec!["--ignore-revs-file", ".git-blame-ignore-revs"]), (&responses[7], vec!["-L", "20,30"])]
    {
        assert_eq!(response["result"]["isError"], false, "{response}");
        assert_fits_output_schema("file_blame", response);
        let data = &response["result"]["structuredContent"]["data"];
        let mut ours = Vec::new();
        for range in data["ranges"].as_array().expect("ranges") {
            let line = range["line"].as_u64().expect("line");
            let orig = range["origLine"].as_u64().unwrap_or(line);
            let path = range["origPath"].as_str().unwrap_or("lib/parser.c");
            for offset in 0..range["lines"].as_u64().unwrap_or(1) {
                ours.push((range["commit"].as_str().expect("commit").to_owned(), orig + offset, path.to_owned()));
            }
        }
        let git = git_blame_lines(&fixture, "lib/parser.c", &extra);
        assert_eq!(ours.len(), git.len(), "{response}");
        for ((commit, orig, path), (sha, git_orig, git_path)) in ours.iter().zip(&git) {
            assert!(
                sha.starts_with(commit.as_str()) && orig == git_orig && path == git_path,
                "{commit} {orig} {path} vs {sha} {git_orig} {git_path}"
            );
        }
    }
    assert!(
        responses[6]["result"]["structuredContent"]["data"]["ignoredRevs"]
            .as_array()
            .is_some_and(|revs| revs.len() == 2)
    );
    let cut = &responses[8]["result"];
    let text = cut["content"][0]["text"].as_str().expect("text");
    assert!(count_tokens(text) <= 300, "{text}");
    let omitted = cut["structuredContent"]["omitted"]["ranges"].as_u64().expect("cut");
    assert!(text.contains(&format!("... {omitted} more ranges (read on from line ")), "{text}");
    assert!(text.starts_with("# blame lib/parser.c @ "), "{text}");
}

#[test]
fn file_blame_is_listed_right_after_file_read() {
    let registry = fluxgit_mcp_sidecar::tools::registry().expect("registry");
    let names: Vec<&str> = registry.tools().map(|tool| tool.definition().name).collect();
    let position = |name: &str| names.iter().position(|listed| *listed == name).expect("listed");
    assert_eq!(position("file.blame"), position("file.read") + 1, "{names:?}");
    assert!(registry.lookup("file_blame").is_some_and(|tool| tool.definition().read_only));
}

/// Per line of a `file_blame` answer: the commit.
fn answer_commits(response: &serde_json::Value) -> Vec<String> {
    assert_eq!(response["result"]["isError"], false, "{response}");
    assert_fits_output_schema("file_blame", response);
    let mut commits = Vec::new();
    for range in response["result"]["structuredContent"]["data"]["ranges"].as_array().expect("ranges") {
        for _ in 0..range["lines"].as_u64().unwrap_or(1) {
            commits.push(range["commit"].as_str().expect("commit").to_owned());
        }
    }
    commits
}

/// Per line of `git blame --line-porcelain [args] -- path`: the full sha.
fn git_blame_shas(fixture: &fluxgit_fixtures::Fixture, args: &[&str], path: &str) -> Vec<String> {
    let mut command = vec!["blame", "--line-porcelain"];
    command.extend_from_slice(args);
    command.extend_from_slice(&["--", path]);
    git_shas(&fixture.git(&command))
}

fn git_shas(porcelain: &str) -> Vec<String> {
    let mut shas = Vec::new();
    let mut header = true;
    for text in porcelain.lines() {
        if text.starts_with('\t') {
            header = true;
        } else if header {
            shas.push(text.split(' ').next().unwrap_or_default().to_owned());
            header = false;
        }
    }
    shas
}

#[test]
fn file_blame_over_stdio_blames_the_work_tree_and_rereads_an_ignore_file_outside_the_repository() {
    use crate::support::{Running, initialize, sidecar, tool_call};
    let fixture = fluxgit_fixtures::build(Scenario::Blame);
    let home = tempfile::tempdir().expect("tempdir");
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let mut server = Running::start(sidecar(&root, home.path(), &[]));
    server.request(&initialize("blame-test", "1"));
    let same = |ours: &[String], git: &[String]| {
        assert_eq!(ours.len(), git.len(), "{ours:?} vs {git:?}");
        for (commit, sha) in ours.iter().zip(git) {
            assert!(sha.starts_with(commit.as_str()), "{commit} vs {sha}");
        }
    };

    // Uncommitted lines, as `git blame FILE` marks them; `rev` blames the commit.
    let path = fixture.path().join("lib/parser.c");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replacen("parse_03", "parse_three", 1) + "/* appended */\n").expect("write");
    let work_tree = server.request(&tool_call(1, "file_blame", json!({"repoPath": repo, "path": "lib/parser.c"})));
    let data = &work_tree["result"]["structuredContent"]["data"];
    assert_eq!(data["worktree"], true, "{work_tree}");
    assert_eq!(data["commits"]["0000000"]["author"], "Not Committed Yet <not.committed.yet>", "{work_tree}");
    let git = git_blame_shas(&fixture, &["--ignore-revs-file", ".git-blame-ignore-revs"], "lib/parser.c");
    assert!(git.iter().filter(|sha| sha.starts_with("0000000")).count() == 2, "{git:?}");
    same(&answer_commits(&work_tree), &git);
    let head = server.request(&tool_call(
        2,
        "file_blame",
        json!({"repoPath": repo, "path": "lib/parser.c", "rev": "HEAD", "ignoreRevs": false}),
    ));
    same(&answer_commits(&head), &git_blame_shas(&fixture, &["HEAD"], "lib/parser.c"));

    // blame.ignoreRevsFile naming a file outside the repository (so outside what the watcher sees).
    let outside = root.join("outside-ignore-revs");
    std::fs::write(&outside, "# nothing yet\n").expect("write");
    fixture.git(&["config", "blame.ignoreRevsFile", outside.to_str().expect("utf-8")]);
    let arguments = json!({"repoPath": repo, "path": "lib/parser.c", "rev": "HEAD"});
    let before = server.request(&tool_call(3, "file_blame", arguments.clone()));
    assert!(before["result"]["structuredContent"]["data"].get("ignoredRevs").is_none(), "{before}");
    same(&answer_commits(&before), &git_blame_shas(&fixture, &["HEAD"], "lib/parser.c"));
    let listed = fixture.git(&["show", "HEAD:.git-blame-ignore-revs"]);
    std::fs::write(&outside, listed).expect("write");
    let after = server.request(&tool_call(4, "file_blame", arguments.clone()));
    let ignored = after["result"]["structuredContent"]["data"]["ignoredRevs"].as_array().map_or(0, Vec::len);
    assert_eq!(ignored, 2, "the edited list is read again: {after}");
    same(&answer_commits(&after), &git_blame_shas(&fixture, &["HEAD"], "lib/parser.c"));

    // A configured file that is gone: git refuses, so do we (a tool error naming the setting), then serve on.
    std::fs::remove_file(&outside).expect("remove");
    assert!(!fixture.git_raw(&["blame", "HEAD", "--", "lib/parser.c"]).status.success());
    let gone = server.request(&tool_call(5, "file_blame", arguments));
    assert_eq!(gone["result"]["isError"], true, "{gone}");
    let text = gone["result"]["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("10010") && text.contains("blame.ignoreRevsFile"), "{text}");
    let served = server.request(&tool_call(6, "file_read", json!({"repoPath": repo, "path": "README.md"})));
    assert_eq!(served["result"]["isError"], false, "{served}");
    server.finish();
}

/// Per line of `git blame --line-porcelain HEAD -- path`: the author as `Name <email>`.
fn git_blame_authors(fixture: &fluxgit_fixtures::Fixture, path: &str) -> Vec<String> {
    let porcelain = fixture.git(&["blame", "--line-porcelain", "HEAD", "--", path]);
    let mut authors = Vec::new();
    let mut name = "";
    for text in porcelain.lines() {
        if let Some(value) = text.strip_prefix("author ") {
            name = value;
        } else if let Some(mail) = text.strip_prefix("author-mail ") {
            authors.push(format!("{name} {mail}"));
        }
    }
    authors
}

/// Per line of a `file_blame` answer: the author of its commit.
fn answer_authors(response: &serde_json::Value) -> Vec<String> {
    assert_eq!(response["result"]["isError"], false, "{response}");
    let data = &response["result"]["structuredContent"]["data"];
    let mut authors = Vec::new();
    for range in data["ranges"].as_array().expect("ranges") {
        let commit = range["commit"].as_str().expect("commit");
        let author = data["commits"][commit]["author"].as_str().expect("author");
        for _ in 0..range["lines"].as_u64().unwrap_or(1) {
            authors.push(author.to_owned());
        }
    }
    authors
}

#[test]
fn file_blame_over_stdio_maps_authors_as_git_blame_and_rereads_a_mailmap_file_outside_the_repository() {
    use crate::support::{Running, initialize, sidecar, tool_call};
    let fixture = fluxgit_fixtures::build(Scenario::Blame);
    let home = tempfile::tempdir().expect("tempdir");
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let mut server = Running::start(sidecar(&root, home.path(), &[]));
    server.request(&initialize("blame-mailmap-test", "1"));
    let arguments = json!({"repoPath": repo, "path": "lib/parser.c", "rev": "HEAD", "ignoreRevs": false});
    let recorded = git_blame_authors(&fixture, "lib/parser.c");
    let plain = server.request(&tool_call(1, "file_blame", arguments.clone()));
    assert_eq!(answer_authors(&plain), recorded);

    // mailmap.file outside the repository (outside what the watcher sees), edited between calls.
    let email = recorded[0].rsplit_once(" <").map(|(_, mail)| mail.trim_end_matches('>')).expect("email");
    let outside = root.join("outside-mailmap");
    std::fs::write(&outside, format!("First Mapped <first@example.org> <{email}>\n")).expect("write");
    fixture.git(&["config", "mailmap.file", outside.to_str().expect("utf-8")]);
    let first = server.request(&tool_call(2, "file_blame", arguments.clone()));
    let git = git_blame_authors(&fixture, "lib/parser.c");
    assert!(git.iter().any(|author| author == "First Mapped <first@example.org>"), "{git:?}");
    assert_eq!(answer_authors(&first), git);
    std::fs::write(&outside, format!("Second Mapped <second@example.org> <{email}>\n")).expect("write");
    let second = server.request(&tool_call(3, "file_blame", arguments));
    let git = git_blame_authors(&fixture, "lib/parser.c");
    assert!(git.iter().any(|author| author == "Second Mapped <second@example.org>"), "{git:?}");
    assert_eq!(answer_authors(&second), git, "the edited mailmap is read again");
    server.finish();
}
