//! `repo_search` through the sidecar: the first call builds the commit index in the run dir and answers from it
//! with the commits `git log --all-match -i -F --grep` lists; by author alone as `git log --author` lists them;
//! text and budgets; bad input over stdio gets -32602 with `data.reason` while the server serves on; a one-shot
//! `call` on a history too long to index in the call finishes and saves the build it started; listed after the
//! earlier read tools.

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
            call(10, "repo_search", json!({"repoPath": repo, "author": "bob", "limit": 200})),
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
    assert_eq!(reason(&responses[8]), "invalid_query", "nothing narrows the search; the server still answers");
    // Without a query, by author alone: newest first, as `git log --author` lists them.
    assert_fits_output_schema("repo_search", &responses[9]);
    let listed: Vec<String> = responses[9]["result"]["structuredContent"]["data"]["commits"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|commit| commit["sha"].as_str().map(str::to_owned))
        .collect();
    let expected: Vec<String> =
        fixture.git(&["log", "--format=%h", "--author=bob", "--branches", "HEAD"]).lines().map(str::to_owned).collect();
    assert_eq!(listed, expected);
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

/// A repository of `count` commits on `main`, each changing one file, written by `git fast-import`.
fn long_history(dir: &std::path::Path, count: usize) {
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git").arg("-C").arg(dir).args(args).status().expect("git runs");
        assert!(status.success(), "git {args:?}");
    };
    std::fs::create_dir_all(dir).expect("mkdir");
    git(&["init", "-q", "-b", "main"]);
    let mut stream = String::new();
    for n in 1..=count {
        let message = format!("step {n} of the long history\n");
        let content = format!("{n}\n");
        stream.push_str(&format!(
            "commit refs/heads/main\nmark :{n}\ncommitter A <a@example.com> {} +0000\ndata {}\n{message}",
            1_700_000_000 + n * 60,
            message.len()
        ));
        if n > 1 {
            stream.push_str(&format!("from :{}\n", n - 1));
        }
        stream.push_str(&format!("M 100644 inline f{}.txt\ndata {}\n{content}\n", n % 7, content.len()));
    }
    let mut child = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["fast-import", "--quiet"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("git fast-import");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), stream.as_bytes()).expect("stream");
    assert!(child.wait().expect("fast-import ends").success());
    git(&["reset", "-q", "--hard", "main"]);
}

#[test]
fn a_one_shot_call_finishes_the_index_build_it_started() {
    let home = tempfile::tempdir().expect("temp dir");
    let root = home.path().canonicalize().expect("root");
    let repo = root.join("repo");
    // More commits than a call indexes itself: the first search starts a background build and walks.
    long_history(&repo, fluxgit_engine::commit_index::SYNC_LIMIT + 100);
    let arguments = json!({"repoPath": repo.to_str().expect("utf-8"), "query": "step 17"}).to_string();
    let call = || {
        let output = crate::support::sidecar(&root, &root, &["call", "repo_search", &arguments])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run call");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let envelope: Value = serde_json::from_slice(&output.stdout).expect("the envelope on stdout");
        (envelope["data"].clone(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let (first, stderr) = call();
    assert!(first["walked"].is_string(), "no index yet: the first call walked: {first}");
    assert!(stderr.contains("finished building the commit index"), "{stderr}");
    let (second, _) = call();
    assert!(second.get("walked").is_none(), "the first process saved the index it built: {second}");
    let git = std::process::Command::new("git")
        .arg("-C")
        .arg(&repo)
        .args(["log", "--format=%h", "--all-match", "-i", "-F", "--grep=step", "--grep=17", "--branches", "HEAD"])
        .output()
        .expect("git log");
    let expected = String::from_utf8_lossy(&git.stdout).lines().count() as u64;
    assert_eq!(first["total"].as_u64(), Some(expected));
    assert_eq!(second["total"].as_u64(), Some(expected));
}
