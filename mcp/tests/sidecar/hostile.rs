//! Hostile work trees through the real binary (issue 33): FIFOs in place of `.gitignore`, `.gitattributes`,
//! `.mailmap`, `.gitmodules` and tracked files, an untracked directory 10,000 levels deep and a commit whose tree
//! is 10,000 directories deep, a tracked file grown to 2 GiB (under a 2 GB address-space limit), and includes of
//! the user's configuration that are FIFOs or devices. Every call answers within 5 s (a watchdog kills the server
//! otherwise, and the test fails on the missing answer), and the status is git's where git answers.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fluxgit_fixtures::{Fixture, Scenario};
use serde_json::{Value, json};

use crate::support::{Running, initialize, sidecar, tool_call};

/// How long one answer may take.
const WITHIN: Duration = Duration::from_secs(5);

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Sends `call` and returns its answer, killing the server if none comes within [`WITHIN`].
pub(crate) fn answer_within(server: &mut Running, call: &Value) -> Value {
    let answered = Arc::new(AtomicBool::new(false));
    let pid = server.pid().to_string();
    let watchdog = {
        let answered = Arc::clone(&answered);
        std::thread::spawn(move || {
            let start = Instant::now();
            while start.elapsed() < WITHIN {
                if answered.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = Command::new("kill").args(["-9", &pid]).status();
        })
    };
    server.send(call);
    let answer = server.receive();
    answered.store(true, Ordering::SeqCst);
    watchdog.join().expect("watchdog");
    answer.unwrap_or_else(|| panic!("no answer within {WITHIN:?} to {call}"))
}

/// The answer's envelope data, asserting the call succeeded.
pub(crate) fn data(answer: &Value) -> &Value {
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    &answer["result"]["structuredContent"]["data"]
}

pub(crate) fn started(fixture: &Fixture, home: &Path) -> Running {
    let root = fixture.root().canonicalize().expect("root");
    let mut server = Running::start(sidecar(&root, home, &[]));
    server.request(&initialize("hostile-test", "1"));
    server
}

/// `git status --porcelain=v1` lines, paths unquoted.
fn git_porcelain(fixture: &Fixture) -> BTreeSet<String> {
    fixture.git(&["-c", "core.quotePath=false", "status", "--porcelain=v1"]).lines().map(str::to_owned).collect()
}

/// `repo.status`'s answer as porcelain v1 lines.
fn our_porcelain(status: &Value) -> BTreeSet<String> {
    let letter = |change: &Value| change["status"].as_str().expect("a status")[..1].to_uppercase();
    let mut lines = BTreeSet::new();
    for change in status["staged"].as_array().into_iter().flatten() {
        lines.insert(format!("{}  {}", letter(change), change["path"].as_str().expect("path")));
    }
    for change in status["unstaged"].as_array().into_iter().flatten() {
        lines.insert(format!(" {} {}", letter(change), change["path"].as_str().expect("path")));
    }
    for path in status["untracked"].as_array().into_iter().flatten() {
        lines.insert(format!("?? {}", path.as_str().expect("path")));
    }
    for path in status["conflicted"].as_array().into_iter().flatten() {
        lines.insert(format!("UU {}", path.as_str().expect("path")));
    }
    lines
}

#[test]
fn fifos_in_the_work_tree_never_hang_a_read_and_status_is_gits() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let work = fixture.path();
    let tracked: Vec<String> = fixture.git(&["ls-files"]).lines().map(str::to_owned).collect();
    let patterns = [".gitignore", ".gitattributes", ".mailmap", ".gitmodules", "fresh/.gitignore"];
    let victim = tracked
        .iter()
        .find(|path| !path.contains('/') && !patterns.contains(&path.as_str()))
        .expect("a tracked file at the top")
        .clone();
    std::fs::remove_file(work.join(&victim)).expect("removes");
    // git lists a tracked file turned FIFO as modified, and lists no FIFO as untracked.
    mkfifo(&work.join(&victim));
    std::fs::create_dir(work.join("fresh")).expect("mkdir");
    std::fs::write(work.join("fresh/new.txt"), "new\n").expect("writes");
    let mut expected = git_porcelain(&fixture);
    assert!(expected.contains(&format!(" M {victim}")) && expected.contains("?? fresh/"), "{expected:?}");
    // git itself would block on these (a FIFO `.gitignore` hangs `git status`, a FIFO `.mailmap` `git log`), so
    // its answer is taken before; a tracked one turned FIFO is modified, as git shows the victim above.
    for name in patterns {
        if tracked.iter().any(|path| path == name) {
            std::fs::remove_file(work.join(name)).expect("removes");
            expected.insert(format!(" M {name}"));
        }
        mkfifo(&work.join(name));
    }

    let home = tempfile::tempdir().expect("tempdir");
    let mut server = started(&fixture, home.path());
    let repo = work.to_str().expect("utf-8");
    let status = answer_within(&mut server, &tool_call(1, "repo.status", json!({"repoPath": repo})));
    assert_eq!(our_porcelain(data(&status)), expected, "{status}");
    let unreadable = data(&status)["unreadable"].to_string();
    assert!(unreadable.contains(".gitmodules") && unreadable.contains("FIFO"), "{unreadable}");
    let calls = [
        tool_call(2, "repo.brief", json!({"repoPath": repo})),
        tool_call(3, "worktree.changes", json!({"repoPath": repo})),
        tool_call(4, "repo.scope", json!({"repoPath": repo, "path": "."})),
        tool_call(5, "diff.text", json!({"repoPath": repo, "base": "HEAD"})),
        tool_call(6, "diff.text", json!({"repoPath": repo})),
        tool_call(7, "repo.history", json!({"repoPath": repo, "limit": 3})),
        tool_call(8, "conflict.read", json!({"repoPath": repo})),
    ];
    for call in &calls {
        let answer = answer_within(&mut server, call);
        assert!(answer.get("result").is_some(), "a tool result, not a protocol error: {answer}");
    }
    // diff.text of the work tree says which submodule file it could not read, in JSON and in text.
    let diff = answer_within(&mut server, &tool_call(10, "diff.text", json!({"repoPath": repo})));
    let unreadable = data(&diff)["unreadable"].to_string();
    assert!(unreadable.contains(".gitmodules") && unreadable.contains("FIFO"), "{unreadable}");
    let text_call = json!({"repoPath": repo, "format": "text"});
    let diff = answer_within(&mut server, &tool_call(11, "diff.text", text_call));
    let text = diff["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    assert!(text.contains("unreadable .gitmodules: a FIFO"), "{diff}");
    // Blaming the FIFO itself is refused in words, as git refuses to blame what is no file.
    let blame = answer_within(&mut server, &tool_call(9, "file.blame", json!({"repoPath": repo, "path": victim})));
    assert_eq!(blame["error"]["data"]["reason"], "not_a_file", "{blame}");
    assert!(blame["error"]["message"].as_str().is_some_and(|message| message.contains("FIFO")), "{blame}");
    let (_, exit, stderr) = server.drain();
    assert!(exit.success(), "{stderr}");
}

#[test]
fn a_fifo_in_place_of_a_conflicted_file_is_read_as_no_file() {
    let fixture = fluxgit_fixtures::build(Scenario::MergeConflict);
    let conflicted: Vec<String> =
        fixture.git(&["diff", "--name-only", "--diff-filter=U"]).lines().map(str::to_owned).collect();
    let victim = conflicted.first().expect("a conflicted file").clone();
    std::fs::remove_file(fixture.path().join(&victim)).expect("removes");
    mkfifo(&fixture.path().join(&victim));
    let home = tempfile::tempdir().expect("tempdir");
    let mut server = started(&fixture, home.path());
    let repo = fixture.path().to_str().expect("utf-8");
    let read = answer_within(&mut server, &tool_call(1, "conflict.read", json!({"repoPath": repo})));
    let files = data(&read)["files"].as_array().cloned().unwrap_or_default();
    let file = files.iter().find(|file| file["path"] == victim.as_str()).expect("the victim is listed");
    assert_ne!(file["workTree"]["exists"], true, "a FIFO is no file to scan: {file}");
    for (id, call) in [
        (2, tool_call(2, "repo.status", json!({"repoPath": repo}))),
        (3, tool_call(3, "diff.text", json!({"repoPath": repo, "base": "HEAD"}))),
        (4, tool_call(4, "worktree.changes", json!({"repoPath": repo}))),
    ] {
        let answer = answer_within(&mut server, &call);
        assert_eq!(answer["id"], id);
        assert!(answer.get("result").is_some(), "{answer}");
    }
    let (_, exit, stderr) = server.drain();
    assert!(exit.success(), "{stderr}");
}

/// Creates `levels` nested directories named `d` under `dir`, and `leaf.txt` in the deepest: a shell that walks
/// down with relative `cd`s of 1,000 levels each, as no single path may exceed the system's `PATH_MAX`.
fn deep_directories(dir: &Path, levels: usize) {
    let chunk = "d/".repeat(1000);
    let script = format!(
        "set -e; i=0; while [ $i -lt {} ]; do mkdir -p {chunk}; cd -P {chunk}; i=$((i+1)); done; \
         echo leaf > leaf.txt",
        levels / 1000
    );
    let status = Command::new("sh").arg("-c").arg(script).current_dir(dir).status().expect("sh runs");
    assert!(status.success(), "deep directories built");
}

#[test]
fn a_ten_thousand_deep_untracked_directory_is_listed_as_git_lists_it() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let work = fixture.path();
    let started_at = Instant::now();
    deep_directories(work, 10_000);
    std::fs::write(work.join("d/top.txt"), "top\n").expect("writes");
    eprintln!("10,000 directories built in {:?}", started_at.elapsed());
    // git answers (with `status.showUntrackedFiles=all` it also warns: "could not open directory").
    let asked = Instant::now();
    let output = fixture.git_raw(&["-c", "core.quotePath=false", "status", "--porcelain=v1"]);
    eprintln!("git status answered in {:?}", asked.elapsed());
    assert!(output.status.success(), "git answers");
    let expected: BTreeSet<String> = String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect();
    assert_eq!(expected, BTreeSet::from(["?? d/".to_owned()]));

    let home = tempfile::tempdir().expect("tempdir");
    let mut server = started(&fixture, home.path());
    let repo = work.to_str().expect("utf-8");
    let asked = Instant::now();
    let status = answer_within(&mut server, &tool_call(1, "repo.status", json!({"repoPath": repo})));
    eprintln!("repo.status answered in {:?}", asked.elapsed());
    assert_eq!(our_porcelain(data(&status)), expected, "{status}");
    let unreadable = data(&status)["unreadable"].as_array().cloned().unwrap_or_default();
    assert_eq!(unreadable.len(), 1, "{unreadable:?}");
    let named = unreadable[0]["path"].as_str().expect("a path");
    assert!(named.starts_with("d/d/") && named.len() < 4096, "the deepest directory walked is named: {named}");
    assert!(unreadable[0]["error"]["reason"].as_str().is_some_and(|reason| reason.contains("could not open")));
    // The text names it too, on a line of its own.
    let text_call = json!({"repoPath": repo, "format": "text"});
    let text = answer_within(&mut server, &tool_call(5, "repo.status", text_call));
    let text = text["result"]["content"][0]["text"].as_str().expect("a text").to_owned();
    let line = format!("unreadable {named}: could not open directory");
    assert!(text.lines().any(|text_line| text_line.starts_with(&line)), "{text}");
    assert!(text.lines().any(|text_line| text_line == "?? d/"), "{text}");
    for call in [
        tool_call(2, "repo.brief", json!({"repoPath": repo})),
        tool_call(3, "worktree.changes", json!({"repoPath": repo})),
        tool_call(4, "repo.scope", json!({"repoPath": repo, "path": "."})),
    ] {
        let asked = Instant::now();
        let answer = answer_within(&mut server, &call);
        eprintln!("{} answered in {:?}", call["params"]["name"], asked.elapsed());
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    let asked = Instant::now();
    let (_, exit, stderr) = server.drain();
    eprintln!("drained in {:?}", asked.elapsed());
    assert!(exit.success(), "{stderr}");
}

#[test]
fn repo_search_on_a_tree_ten_thousand_directories_deep_answers_and_is_cancelled() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let deep = format!("{}leaf.txt", "d/".repeat(10_000));
    let stream = format!(
        "commit refs/heads/deep\ncommitter A U Thor <author@example.com> 1700000000 +0000\ndata 10\ndeep tree\n\
         from refs/heads/main\nM 100644 inline {deep}\ndata 5\ndeep\n\n"
    );
    let mut import = fixture.git_command(fixture.path());
    import.args(["fast-import", "--quiet"]).stdin(std::process::Stdio::piped());
    let mut child = import.spawn().expect("git fast-import runs");
    std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), stream.as_bytes()).expect("writes");
    drop(child.stdin.take());
    assert!(child.wait().expect("waits").success(), "fast-import");
    fixture.git(&["checkout", "-q", "--detach", "main"]);
    fixture.git(&["update-ref", "refs/heads/main", "deep"]);

    let home = tempfile::tempdir().expect("tempdir");
    let mut server = started(&fixture, home.path());
    let repo = fixture.path().to_str().expect("utf-8");
    let found = answer_within(&mut server, &tool_call(1, "repo.search", json!({"repoPath": repo, "query": "deep"})));
    let commits = data(&found)["commits"].as_array().cloned().unwrap_or_default();
    assert_eq!(commits.len(), 1, "{found}");
    let by_path = json!({"repoPath": repo, "query": "deep", "path": "d/d/d", "ref": "deep"});
    let found = answer_within(&mut server, &tool_call(2, "repo.search", by_path));
    assert_eq!(data(&found)["commits"].as_array().map(Vec::len), Some(1), "{found}");
    let too_deep = json!({"repoPath": repo, "query": "deep", "path": "d/".repeat(300)});
    let refused = answer_within(&mut server, &tool_call(3, "repo.search", too_deep));
    assert_eq!(refused["error"]["data"]["reason"], "invalid_path", "{refused}");
    let (_, exit, stderr) = server.drain();
    assert!(exit.success(), "{stderr}");

    // Cancelled while a fresh server builds its index of the deep tree: the next call is answered in time, and the
    // cancelled one gets no reply unless it had already finished.
    let home = tempfile::tempdir().expect("tempdir");
    let mut server = started(&fixture, home.path());
    server.send(&tool_call(10, "repo.search", json!({"repoPath": repo, "query": "deep", "path": "d/d"})));
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 10}}));
    let mut answer = answer_within(&mut server, &tool_call(11, "repo.status", json!({"repoPath": repo})));
    if answer["id"] == 10 {
        assert!(answer.get("result").is_some(), "{answer}");
        answer = server.receive().expect("the status is answered");
    }
    assert_eq!(answer["id"], 11, "{answer}");
    data(&answer);
    let (rest, exit, stderr) = server.drain();
    assert!(exit.success(), "{stderr}");
    assert!(rest.iter().all(|reply| reply["id"] != 10), "{rest:?}");
}

#[test]
fn diff_text_from_a_revision_to_the_work_tree_finds_copies_as_git_does() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let work = fixture.path();
    let lines: String = (1..=50).map(|line| format!("line {line}\n")).collect();
    std::fs::write(work.join("copied-from.txt"), &lines).expect("writes");
    fixture.git(&["add", "copied-from.txt"]);
    fixture.git(&["commit", "-q", "-m", "a file to copy"]);
    fixture.git(&["config", "diff.renames", "copies"]);
    // Copied, then the source edited: git takes the source's old content (C100).
    std::fs::write(work.join("copy.txt"), &lines).expect("writes");
    fixture.git(&["add", "copy.txt"]);
    std::fs::write(work.join("copied-from.txt"), format!("{lines}one more\n")).expect("writes");
    let expected: BTreeSet<String> =
        fixture.git(&["diff", "HEAD", "--name-status"]).lines().map(str::to_owned).collect();
    assert!(expected.contains("C100\tcopied-from.txt\tcopy.txt"), "{expected:?}");

    let home = tempfile::tempdir().expect("tempdir");
    let mut server = started(&fixture, home.path());
    let repo = work.to_str().expect("utf-8");
    let diff = answer_within(&mut server, &tool_call(1, "diff.text", json!({"repoPath": repo, "base": "HEAD"})));
    let ours: BTreeSet<String> = data(&diff)["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|file| {
            let status = file["status"].as_str().expect("status");
            let letter = status[..1].to_uppercase();
            match file["from"].as_str() {
                Some(from) => format!("{letter}100\t{from}\t{}", file["path"].as_str().expect("path")),
                None => format!("{letter}\t{}", file["path"].as_str().expect("path")),
            }
        })
        .collect();
    assert_eq!(ours, expected, "{diff}");
    let patch = data(&diff)["patch"].as_str().expect("a patch");
    assert!(patch.contains("similarity index 100%\ncopy from copied-from.txt\ncopy to copy.txt"), "{patch}");
    let (_, exit, stderr) = server.drain();
    assert!(exit.success(), "{stderr}");
}

/// The server of [`started`] under a 2 GB address-space limit (`ulimit -v 2000000`), as the probe ran it.
pub(crate) fn started_limited(fixture: &Fixture, home: &Path) -> Running {
    let root = fixture.root().canonicalize().expect("root");
    start_limited(&sidecar(&root, home, &[]))
}

/// Starts `inner` (a [`sidecar`] command) under a 2 GB address-space limit, and initializes it.
pub(crate) fn start_limited(inner: &Command) -> Running {
    let mut command = Command::new("sh");
    command.arg("-c").arg("ulimit -v 2000000 && exec \"$0\"").arg(inner.get_program()).env_clear();
    for (key, value) in inner.get_envs() {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    let mut server = Running::start(command);
    server.request(&initialize("hostile-test", "1"));
    server
}

#[test]
fn a_tracked_file_grown_to_two_gigabytes_is_blamed_by_its_size_in_bounded_memory() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let tracked: Vec<String> = fixture.git(&["ls-files"]).lines().map(str::to_owned).collect();
    let victim = tracked.iter().find(|path| !path.contains('/')).expect("a tracked file at the top").clone();
    // A sparse file: 2 GiB long, no blocks written.
    let file = std::fs::OpenOptions::new().write(true).open(fixture.path().join(&victim)).expect("opens");
    file.set_len(2 << 30).expect("grows");
    drop(file);
    let expected = git_porcelain(&fixture);
    assert_eq!(expected, BTreeSet::from([format!(" M {victim}")]));

    let home = tempfile::tempdir().expect("tempdir");
    let mut server = started_limited(&fixture, home.path());
    let repo = fixture.path().to_str().expect("utf-8");
    let blame = answer_within(&mut server, &tool_call(1, "file.blame", json!({"repoPath": repo, "path": victim})));
    assert_eq!(blame["error"]["data"]["reason"], "binary_file", "{blame}");
    assert!(blame["error"]["message"].as_str().is_some_and(|text| text.contains("2147483648 bytes")), "{blame}");
    let status = answer_within(&mut server, &tool_call(2, "repo.status", json!({"repoPath": repo})));
    assert_eq!(our_porcelain(data(&status)), expected, "{status}");
    // The committed version is still read and blamed as git blames it.
    let at_head = json!({"repoPath": repo, "path": victim, "rev": "HEAD"});
    let blame = answer_within(&mut server, &tool_call(3, "file.blame", at_head));
    assert_eq!(blame["result"]["isError"], false, "{blame}");
    let (_, exit, stderr) = server.drain();
    assert!(exit.success(), "{stderr}");
}

#[test]
fn user_config_includes_of_fifos_and_devices_are_refused_at_once() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    std::fs::write(fixture.path().join("new.txt"), "new\n").expect("writes");
    let home = tempfile::tempdir().expect("tempdir");
    let gitconfig = home.path().join(".gitconfig");
    let fifo = home.path().join("include.fifo");
    mkfifo(&fifo);
    let user_git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(fixture.path())
            .env("HOME", home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git runs")
    };
    let repo = fixture.path().to_str().expect("utf-8");
    let include = |target: &Path| format!("[include]\n\tpath = {}\n", target.display());
    // git stops on /dev/zero ("bad config line 1") and blocks on the FIFO; the server refuses both at once, naming
    // the file, and answers again once the configuration is readable.
    std::fs::write(&gitconfig, include(Path::new("/dev/zero"))).expect("writes");
    let output = user_git(&["status", "--porcelain"]);
    assert!(!output.status.success(), "git fails");
    assert!(String::from_utf8_lossy(&output.stderr).contains("bad config line 1 in file /dev/zero"), "{output:?}");
    let mut server = started(&fixture, home.path());
    let cases = [(include(Path::new("/dev/zero")), "/dev/zero"), (include(&fifo), "FIFO")];
    for (id, (config, named)) in (1..).zip(cases) {
        std::fs::write(&gitconfig, config).expect("writes");
        let answer = answer_within(&mut server, &tool_call(id, "repo.status", json!({"repoPath": repo})));
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        let text = answer.to_string();
        // Named as what it is: the user's configuration, not the repository's git dir.
        assert!(text.contains(named) && text.contains("reading the user's configuration"), "{named}: {answer}");
        assert!(!text.contains("git dir"), "{named}: {answer}");
    }
    // ~/.gitconfig itself a FIFO.
    std::fs::remove_file(&gitconfig).expect("removes");
    mkfifo(&gitconfig);
    let answer = answer_within(&mut server, &tool_call(3, "repo.brief", json!({"repoPath": repo})));
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer.to_string().contains(".gitconfig"), "{answer}");
    // A regular include is followed as git follows it: its setting shows.
    std::fs::remove_file(&gitconfig).expect("removes");
    let included = home.path().join("included.cfg");
    std::fs::write(&included, "[status]\n\tshowUntrackedFiles = no\n").expect("writes");
    std::fs::write(&gitconfig, include(&included)).expect("writes");
    let output = user_git(&["status", "--porcelain"]);
    assert!(output.status.success() && output.stdout.is_empty(), "git hides the untracked file: {output:?}");
    let status = answer_within(&mut server, &tool_call(4, "repo.status", json!({"repoPath": repo})));
    assert!(our_porcelain(data(&status)).is_empty(), "{status}");
    let (_, exit, stderr) = server.drain();
    assert!(exit.success(), "{stderr}");
}
