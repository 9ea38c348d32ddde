//! Hostile repository content through the real binary (issue 47): declarations nested 2,000 deep in every
//! grammar, a commit message, an author name and an identifier of hundreds of kilobytes without a space, and files
//! over the parse cap. Each call answers within 5 s (a watchdog kills the server otherwise, and the test fails on
//! the missing answer), the server answers the next call and exits cleanly at the end of its input, and its peak
//! resident memory stays under 500 MB under a 2 GB address-space limit.

use std::path::Path;

use fluxgit_fixtures::{Fixture, Scenario};
use serde_json::{Value, json};

use crate::hostile::{answer_within, data, start_limited, started_limited};
use crate::support::{BIN, Running, sidecar, tool_call};

/// Peak resident memory a server may reach in these tests, in bytes.
const MAX_RSS_BYTES: u64 = 500 << 20;

/// Nesting depth of the generated files: far past [`fluxgit_engine`]'s container bound, and deep enough that a walk
/// with one call per level overflowed the stack of a call thread.
const DEPTH: usize = 2_000;

/// One file per grammar, each nesting what the grammar nests (modules, namespaces, classes, `#if` blocks, blocks),
/// `depth` levels deep around one small function.
fn nested_files(depth: usize) -> Vec<(&'static str, String)> {
    let wrap = |open: &str, inner: &str, close: &str, levels: usize| {
        format!("{}{inner}{}", open.repeat(levels), close.repeat(levels))
    };
    // Python nests by indentation: one space a level keeps the file under the parse cap.
    let python: String = (0..depth / 2)
        .map(|level| format!("{}class C{level}:\n", " ".repeat(level)))
        .chain([format!("{}def f(): return 1\n", " ".repeat(depth / 2))])
        .collect();
    vec![
        ("nested.rs", wrap("mod a {\n", "fn f() -> u32 { 1 }\n", "}\n", depth)),
        ("nested.ts", wrap("namespace a {\n", "function f() { return 1; }\n", "}\n", depth)),
        ("nested.js", wrap("function a() {\n", "return 1;\n", "}\n", depth)),
        ("nested.cc", wrap("namespace a {\n", "int f() { return 1; }\n", "}\n", depth)),
        ("Nested.java", wrap("class A {\n", "int f() { return 1; }\n", "}\n", depth)),
        ("nested.c", wrap("#if X\n", "int f(void) { return 1; }\n", "#endif\n", depth)),
        ("nested.go", format!("package a\nfunc f() {{\n{}}}\n", wrap("{\n", "_ = 1\n", "}\n", depth))),
        ("nested.py", python),
    ]
}

fn write(fixture: &Fixture, files: &[(&str, String)]) {
    for (path, content) in files {
        std::fs::write(fixture.path().join(path), content).expect("the work tree is writable");
    }
}

/// Commits everything in the work tree with `message` (read from a file: it may be longer than an argument can be)
/// and `author`, and returns the new commit's sha.
fn commit(fixture: &Fixture, message: &str, author: &str) -> String {
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(file.path(), message).expect("the message is written");
    fixture.git(&["add", "-A"]);
    let path = file.path().to_str().expect("a UTF-8 temporary path");
    fixture.git(&["commit", "-q", "--allow-empty", "--author", author, "-F", path]);
    fixture.git(&["rev-parse", "HEAD"]).trim().to_owned()
}

/// The server's peak resident memory so far (`VmHWM`), in bytes. The server runs under `sh -c 'ulimit ...; exec'`,
/// so its pid is the server's own.
fn peak_rss(server: &Running) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).expect("the server is alive");
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).expect("a VmHWM line");
    let kib: u64 = line.split_whitespace().nth(1).and_then(|value| value.parse().ok()).expect("a number of kB");
    kib * 1024
}

/// Checks the server still answers a plain call, is within [`MAX_RSS_BYTES`], and exits 0 at the end of its input.
fn still_serving(mut server: Running, repo: &str) {
    let status = answer_within(&mut server, &tool_call(999, "repo.status", json!({"repoPath": repo})));
    data(&status);
    let peak = peak_rss(&server);
    assert!(peak < MAX_RSS_BYTES, "peak RSS {} MB", peak >> 20);
    let (_, exit, stderr) = server.drain();
    assert!(exit.success(), "the server exited with {exit}: {stderr}");
}

/// Random lower-case letters: a text with no space, whose byte-pair merge has real work at every position.
fn letters(length: usize, mut seed: u64) -> String {
    let alphabet = b"etaoinshrdlucmfwypvbgkqjxz";
    (0..length)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            char::from(alphabet[(seed % alphabet.len() as u64) as usize])
        })
        .collect()
}

/// [`started_limited`] with the audit ledger on, at `ledger`.
fn started_audited(fixture: &Fixture, home: &Path, ledger: &Path) -> Running {
    let root = fixture.root().canonicalize().expect("root");
    let mut inner = sidecar(&root, home, &[]);
    inner.env_remove("FLUXGIT_MCP_AUDIT_DISABLED").env("FLUXGIT_MCP_AUDIT_LOG", ledger);
    start_limited(&inner)
}

/// `verify-audit` on `ledger`: exit 0 and the number of entries it names.
fn verified(ledger: &Path) -> String {
    let output = std::process::Command::new(BIN).arg("verify-audit").arg(ledger).output().expect("verify-audit runs");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "verify-audit: {text}");
    text
}

#[test]
fn declarations_nested_two_thousand_deep_in_every_grammar_never_abort_the_server() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let shallow = nested_files(3);
    write(&fixture, &shallow);
    let base = commit(&fixture, "shallow", "A U Thor <author@example.com>");
    let deep = nested_files(DEPTH);
    write(&fixture, &deep);
    let head = commit(&fixture, "deep", "A U Thor <author@example.com>");
    let home = tempfile::tempdir().expect("tempdir");
    let ledger = home.path().join("audit.jsonl");
    let mut server = started_audited(&fixture, home.path(), &ledger);
    let repo = fixture.path().to_str().expect("utf-8");
    let range = json!({"repoPath": repo, "base": base, "head": head, "maxTokens": 100_000});
    let answer = answer_within(&mut server, &tool_call(1, "diff.semantic", range.clone()));
    let files = data(&answer)["files"].as_array().unwrap_or_else(|| panic!("{answer}")).clone();
    for (path, _) in &deep {
        let file = files.iter().find(|file| file["path"] == *path).unwrap_or_else(|| panic!("{path} listed: {answer}"));
        // Either parsed (the grammar nests no containers, as Go and JavaScript functions) or left to the text diff
        // with the reason; never an abort.
        let fallback = &file["fallback"];
        assert!(
            fallback.is_null()
                || ["too_deep", "parse_errors", "time_budget"].contains(&fallback.as_str().unwrap_or("")),
            "{path}: {file}"
        );
    }
    let deep_rust = files.iter().find(|file| file["path"] == "nested.rs").expect("nested.rs");
    assert_eq!(deep_rust["fallback"], "too_deep", "{deep_rust}");
    let fallbacks = answer_within(&mut server, &tool_call(2, "diff.semanticFallbacks", range));
    let listed = data(&fallbacks)["fallbacks"].as_array().unwrap_or_else(|| panic!("{fallbacks}")).clone();
    assert!(listed.iter().any(|file| file["path"] == "nested.rs" && file["reason"] == "too_deep"), "{fallbacks}");
    // Text renderings too: every tool that renders these files.
    let text = json!({"repoPath": repo, "base": base, "head": head, "format": "text"});
    let answer = answer_within(&mut server, &tool_call(3, "diff.semantic", text));
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    still_serving(server, repo);
    // Every call has its entry (the three above and the status of still_serving), and the chain verifies.
    let entries = std::fs::read_to_string(&ledger).expect("a ledger").lines().count();
    assert!(entries >= 4, "{entries} entries");
    verified(&ledger);
}

#[test]
fn control_bytes_in_file_names_are_quoted_in_the_semantic_text() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let name = "line\nbreak\u{1b}[31m.rs";
    write(&fixture, &[(name, "fn a() -> u32 { 1 }\n".to_owned())]);
    let base = commit(&fixture, "base", "A U Thor <author@example.com>");
    write(&fixture, &[(name, "fn a() -> u32 { 2 }\n".to_owned())]);
    let head = commit(&fixture, "head", "A U Thor <author@example.com>");
    let home = tempfile::tempdir().expect("tempdir");
    let mut server = started_limited(&fixture, home.path());
    let repo = fixture.path().to_str().expect("utf-8");
    for (id, tool) in [(1, "diff.semantic"), (2, "diff.text")] {
        let arguments = json!({"repoPath": repo, "base": base, "head": head, "format": "text"});
        let answer = answer_within(&mut server, &tool_call(id, tool, arguments));
        let text = answer["result"]["content"][0]["text"].as_str().expect("a text answer").to_owned();
        assert!(!text.contains('\u{1b}'), "{tool}: a raw escape byte in {text:?}");
        assert!(text.contains("line\\nbreak\\033[31m.rs\""), "{tool}: git's quoting in {text:?}");
        // Every line starts as the rendering starts its lines: the name added none of its own.
        assert!(text.lines().all(|line| !line.starts_with("break")), "{tool}: {text:?}");
    }
    still_serving(server, repo);
}

#[test]
fn a_commit_message_author_and_identifier_of_300_kb_without_a_space_are_answered_within_5_s() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let base = fixture.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let identifier = letters(300_000, 0x9e37_79b9_7f4a_7c15);
    write(&fixture, &[("long.rs", format!("fn {identifier}() -> u32 {{ 1 }}\n"))]);
    let message = letters(300_000, 0xd1b5_4a32_d192_ed03);
    let author = format!("{} <long@example.com>", letters(10_000, 0x8cb9_2ba7_2f3d_8dd7));
    let head = commit(&fixture, &message, &author);
    let home = tempfile::tempdir().expect("tempdir");
    let mut server = started_limited(&fixture, home.path());
    let repo = fixture.path().to_str().expect("utf-8");
    let calls: Vec<(&str, Value)> = vec![
        ("repo.history", json!({"repoPath": repo})),
        ("repo.history", json!({"repoPath": repo, "format": "text"})),
        ("commit.details", json!({"repoPath": repo, "commit": head})),
        ("commit.details", json!({"repoPath": repo, "commit": head, "format": "text"})),
        ("repo.search", json!({"repoPath": repo, "query": &message[..40]})),
        ("repo.search", json!({"repoPath": repo, "author": "long@example.com"})),
        ("fleet.digest", json!({"repoPaths": [repo], "sinceMs": 0})),
        ("repo.scope", json!({"repoPath": repo, "path": "."})),
        ("repo.scope", json!({"repoPath": repo, "path": ".", "format": "text"})),
        ("diff.semantic", json!({"repoPath": repo, "base": base, "head": head})),
        ("diff.semantic", json!({"repoPath": repo, "base": base, "head": head, "format": "text"})),
        ("diff.text", json!({"repoPath": repo, "base": base, "head": head})),
        ("repo.brief", json!({"repoPath": repo})),
    ];
    for (id, (tool, arguments)) in calls.into_iter().enumerate() {
        let answer = answer_within(&mut server, &tool_call(id as i64 + 1, tool, arguments));
        assert!(answer.get("result").is_some(), "{tool}: {answer}");
    }
    still_serving(server, repo);
}

/// Writes `bytes` bytes of C into `path` without holding them in memory.
fn write_large(path: &Path, bytes: usize) {
    use std::io::Write as _;
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("creatable"));
    let line = b"int f(int x) { return x + 1; }\n";
    for _ in 0..bytes / line.len() {
        file.write_all(line).expect("writable");
    }
    file.flush().expect("flushed");
}

#[test]
fn files_over_the_parse_cap_and_nested_templates_are_diffed_in_bounded_memory() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    // C++ templates nested as deep as fits in 600 KB, on both sides, with a change inside.
    let templates = |value: &str| {
        let depth = 600_000 / 24;
        format!("{}int{} x = {value};\n", "std::vector<".repeat(depth), ">".repeat(depth))
    };
    std::fs::write(fixture.path().join("templates.cc"), templates("1")).expect("writable");
    let base = commit(&fixture, "templates", "A U Thor <author@example.com>");
    std::fs::write(fixture.path().join("templates.cc"), templates("2")).expect("writable");
    // 150 MB of C on the new side: over the parse cap, refused by its size.
    write_large(&fixture.path().join("large.c"), 150 << 20);
    let head = commit(&fixture, "large", "A U Thor <author@example.com>");
    let home = tempfile::tempdir().expect("tempdir");
    let mut server = started_limited(&fixture, home.path());
    let repo = fixture.path().to_str().expect("utf-8");
    let range = json!({"repoPath": repo, "base": base, "head": head});
    let answer = answer_within(&mut server, &tool_call(1, "diff.semanticFallbacks", range.clone()));
    let listed = data(&answer)["fallbacks"].as_array().unwrap_or_else(|| panic!("{answer}")).clone();
    assert!(listed.iter().any(|file| file["path"] == "large.c" && file["reason"] == "too_large"), "{answer}");
    let answer = answer_within(&mut server, &tool_call(2, "diff.semantic", range));
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    still_serving(server, repo);
}

#[test]
fn a_reflog_line_of_300_kb_is_read_as_git_reads_it() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let head = fixture.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let message = letters(300_000, 0x2545_f491_4f6c_dd1d);
    // git writes a reflog message of any length; one argument cannot carry 300 KB, so the line is appended as git
    // writes it.
    let log = fixture.path().join(".git/logs/HEAD");
    let mut text = std::fs::read_to_string(&log).expect("a HEAD reflog");
    text.push_str(&format!("{head} {head} A U Thor <author@example.com> 1700000000 +0000\tcheckout: {message}\n"));
    std::fs::write(&log, text).expect("the reflog is writable");
    let git = fixture.git(&["reflog", "show", "--format=%gs", "-n", "1"]);
    assert_eq!(git.trim_end(), format!("checkout: {message}"), "git reads the line");
    let home = tempfile::tempdir().expect("tempdir");
    let mut server = started_limited(&fixture, home.path());
    let repo = fixture.path().to_str().expect("utf-8");
    let answer = answer_within(&mut server, &tool_call(1, "repo.reflog", json!({"repoPath": repo, "limit": 3})));
    let entries = data(&answer)["entries"].as_array().unwrap_or_else(|| panic!("{answer}")).clone();
    assert_eq!(entries[0]["action"], "checkout", "{answer}");
    let total = fixture.git(&["reflog", "show", "--format=%H"]).lines().count();
    assert_eq!(data(&answer)["total"], total, "{answer}");
    let text = answer_within(&mut server, &tool_call(2, "repo.reflog", json!({"repoPath": repo, "format": "text"})));
    assert_eq!(text["result"]["isError"], false, "{text}");
    still_serving(server, repo);
}

#[test]
fn a_folder_scan_stopped_by_its_bound_says_so() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let folder = fixture.root().join("many");
    for index in 0..10_050 {
        std::fs::create_dir_all(folder.join(format!("d{index:05}"))).expect("creatable");
    }
    let home = tempfile::tempdir().expect("tempdir");
    let mut server = started_limited(&fixture, home.path());
    let path = folder.canonicalize().expect("canonical");
    let answer =
        answer_within(&mut server, &tool_call(1, "repo.brief", json!({"repoPath": path.to_str().expect("utf-8")})));
    let message = answer["error"]["message"].as_str().unwrap_or_else(|| panic!("an error: {answer}"));
    assert!(message.contains("the scan stops there"), "{message}");
    assert!(!message.ends_with("holds no checkout 4 levels down"), "{message}");
    let repo = fixture.path().to_str().expect("utf-8");
    still_serving(server, repo);
}

/// Writes `count` C files of `bytes` bytes each under `fixture`, each different from the others (a first line of its
/// own) and from its previous version (`version` in that line).
fn write_many_large(fixture: &Fixture, count: usize, bytes: usize, version: u32) {
    use std::io::Write as _;
    for index in 0..count {
        let path = fixture.path().join(format!("big{index:03}.c"));
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path).expect("creatable"));
        writeln!(file, "int version_{index}_{version} = {version};").expect("writable");
        let line = b"int f(int x) { return x + 1; }\n";
        for _ in 0..bytes / line.len() {
            file.write_all(line).expect("writable");
        }
        file.flush().expect("flushed");
    }
}

#[test]
fn a_hundred_changed_files_of_800_kb_are_diffed_within_5_s_and_status_answers_beside_them() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    write_many_large(&fixture, 100, 800 << 10, 1);
    let base = commit(&fixture, "a hundred large files", "A U Thor <author@example.com>");
    write_many_large(&fixture, 100, 800 << 10, 2);
    let head = commit(&fixture, "each of them changed", "A U Thor <author@example.com>");
    let home = tempfile::tempdir().expect("tempdir");
    let repo = fixture.path().to_str().expect("utf-8");

    // Alone, cold: the semantic diff of 100 changed files answers in time, with every file accounted for.
    let mut server = started_limited(&fixture, home.path());
    let range = json!({"repoPath": repo, "base": base, "head": head});
    let answer = answer_within(&mut server, &tool_call(1, "diff.semantic", range));
    let text = answer["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(text.contains("big000.c") || text.contains("100 files"), "{text}");
    still_serving(server, repo);

    // Two cold semantic diffs at once (each way round), and a status sent right behind them: every call is
    // answered, the status without waiting for the two.
    let mut server = started_limited(&fixture, home.path());
    let started = std::time::Instant::now();
    server.send(&tool_call(1, "diff.semantic", json!({"repoPath": repo, "base": base, "head": head})));
    server.send(&tool_call(2, "diff.semanticFallbacks", json!({"repoPath": repo, "base": head, "head": base})));
    std::thread::sleep(std::time::Duration::from_millis(200));
    let status_sent = std::time::Instant::now();
    server.send(&tool_call(3, "repo.status", json!({"repoPath": repo})));
    let mut status_after = None;
    for _ in 0..3 {
        let answer = server.receive().expect("an answer to each call");
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        if answer["id"] == 3 {
            status_after = Some(status_sent.elapsed());
        }
    }
    let status_after = status_after.expect("the status was answered");
    let all = started.elapsed();
    assert!(all < std::time::Duration::from_secs(10), "the three calls took {all:?}");
    assert!(status_after < std::time::Duration::from_secs(5), "the status waited {status_after:?}");
    still_serving(server, repo);
}
