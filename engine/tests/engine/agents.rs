//! `agents.presence` detection on fixture home directories built here, one store per agent in its real on-disk
//! layout, and fake agent processes (a copied `sleep` named `claude`, `exec -a codex`), issue 18.
//!
//! A secret string is planted in every store's prompts, messages and tool outputs; it must never come out.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, SystemTime};

use fluxgit_engine::agents::{Agent, Detector, Options, Report, Source, State, claude, gemini};
use serde_json::json;

const SECRET: &str = "SECRET-7f3a9c-do-not-leak";

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

fn repo(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("src")).expect("mkdir");
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("src/lib.rs"), "fn main() {}\n").expect("write");
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "init"]);
    dir.canonicalize().expect("canonical")
}

fn write_lines(path: &Path, lines: &[serde_json::Value]) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let mut file = std::fs::File::create(path).expect("create");
    for line in lines {
        writeln!(file, "{line}").expect("write");
    }
}

fn age(path: &Path, ago: Duration) {
    let file = std::fs::File::options().write(true).open(path).expect("open");
    file.set_modified(SystemTime::now() - ago).expect("set mtime");
}

/// Claude Code: one session in the repository, one in a sibling repository whose encoded name shares the prefix.
fn claude_store(home: &Path, root: &Path, other: &Path) {
    let session = |cwd: &Path, branch: &str, file: &str| {
        vec![
            json!({"type": "user", "cwd": cwd, "gitBranch": branch, "sessionId": "s1", "timestamp": "2026-11-30T10:00:00Z",
                "message": {"role": "user", "content": format!("please fix {SECRET}")}}),
            json!({"type": "assistant", "cwd": cwd, "gitBranch": branch, "sessionId": "s1",
                "message": {"role": "assistant", "content": [
                    {"type": "text", "text": format!("I will edit {SECRET}")},
                    {"type": "tool_use", "id": "t1", "name": "Edit",
                        "input": {"file_path": cwd.join(file), "old_string": SECRET, "new_string": SECRET}}]}}),
            json!({"type": "user", "cwd": cwd, "gitBranch": branch, "sessionId": "s1",
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": SECRET}]},
                "toolUseResult": {"stdout": SECRET}}),
        ]
    };
    let projects = home.join(".claude/projects");
    write_lines(&projects.join(claude::encode(root)).join("s1.jsonl"), &session(root, "feature/claude", "src/lib.rs"));
    write_lines(&projects.join(claude::encode(other)).join("s2.jsonl"), &session(other, "elsewhere", "x.rs"));
}

/// Codex CLI: a rollout whose session_meta names the repository and a branch; an apply_patch through `shell`.
fn codex_store(home: &Path, root: &Path, other: &Path) {
    let patch = format!("*** Begin Patch\n*** Update File: src/main.rs\n@@\n-{SECRET}\n+{SECRET}\n*** End Patch\n");
    let arguments = json!({"command": ["apply_patch", patch], "workdir": root}).to_string();
    let rollout = |cwd: &Path, branch: &str| {
        vec![
            json!({"timestamp": "2026-11-30T10:00:00.000Z", "type": "session_meta", "payload": {"id": "u1", "cwd": cwd,
                "originator": "codex_cli_rs", "cli_version": "0.65.0", "instructions": SECRET,
                "git": {"commit_hash": "abc", "branch": branch, "repository_url": "https://example.com/r.git"}}}),
            json!({"timestamp": "2026-11-30T10:00:01.000Z", "type": "response_item", "payload": {"type": "message",
                "role": "user", "content": [{"type": "input_text", "text": SECRET}]}}),
            json!({"timestamp": "2026-11-30T10:00:02.000Z", "type": "response_item", "payload": {"type": "function_call",
                "name": "shell", "arguments": arguments, "call_id": "c1"}}),
            json!({"timestamp": "2026-11-30T10:00:03.000Z", "type": "response_item", "payload": {
                "type": "function_call_output", "call_id": "c1", "output": SECRET}}),
            json!({"timestamp": "2026-11-30T10:00:04.000Z", "type": "event_msg", "payload": {"type": "agent_message",
                "message": SECRET}}),
        ]
    };
    let day = home.join(".codex/sessions/2026/11/30");
    write_lines(&day.join("rollout-2026-11-30T10-00-00-u1.jsonl"), &rollout(root, "feature/codex"));
    write_lines(&day.join("rollout-2026-11-30T10-00-00-u2.jsonl"), &rollout(other, "elsewhere"));
}

/// Gemini CLI: a single-document session under the project's SHA-256 directory, an hour old.
fn gemini_store(home: &Path, root: &Path) -> PathBuf {
    let session = json!({"sessionId": "g1", "projectHash": gemini::project_hash(root), "startTime": "2026-11-30T09:00:00Z",
        "lastUpdated": "2026-11-30T09:10:00Z", "messages": [
            {"id": "m1", "timestamp": "2026-11-30T09:00:00Z", "type": "user", "content": SECRET},
            {"id": "m2", "timestamp": "2026-11-30T09:01:00Z", "type": "gemini", "content": SECRET, "thoughts": [SECRET],
                "toolCalls": [{"id": "c1", "name": "write_file", "status": "success", "result": SECRET,
                    "args": {"file_path": root.join("docs/guide.md"), "content": SECRET}}]}]});
    let path = home.join(".gemini/tmp").join(gemini::project_hash(root)).join("chats/session-2026-11-30T09-00-g1.json");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, session.to_string()).expect("write");
    age(&path, Duration::from_secs(3600));
    path
}

/// Aider: its chat and input histories in the repository.
fn aider_files(root: &Path) {
    let chat = format!(
        "# aider chat started at 2026-11-30 10:00:00\n\n#### {SECRET}\n\n{SECRET} reply\n\n> Added src/lib.rs to the chat\n\
         > Applied edit to README.md\n> {SECRET}\n"
    );
    std::fs::write(root.join(".aider.chat.history.md"), chat).expect("write");
    std::fs::write(root.join(".aider.input.history"), format!("\n# 2026-11-30 10:00:00.000000\n+{SECRET}\n"))
        .expect("write");
}

/// Cursor: a workspace opened on the repository with its editor history, and a prompt beside it.
fn cursor_store(home: &Path, root: &Path) {
    let storage = home.join(".config/Cursor/User/workspaceStorage/0123abcd");
    std::fs::create_dir_all(&storage).expect("mkdir");
    std::fs::write(storage.join("workspace.json"), json!({"folder": format!("file://{}", root.display())}).to_string())
        .expect("write");
    let db = rusqlite::Connection::open(storage.join("state.vscdb")).expect("sqlite");
    db.execute_batch("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);").expect("schema");
    let history = json!([{"editor": {"resource": format!("file://{}/src/ui%20kit.ts", root.display())}},
        {"editor": {"resource": "file:///elsewhere/x.ts"}}]);
    let prompts = json!([{"text": SECRET, "commandType": 4}]);
    db.execute("INSERT INTO ItemTable VALUES ('history.entries', ?1)", [history.to_string()]).expect("insert");
    db.execute("INSERT INTO ItemTable VALUES ('aiService.prompts', ?1)", [prompts.to_string()]).expect("insert");
}

/// Presence files: another sidecar (a live `sleep`), ours, a dead one of two days ago, and garbage.
fn presence_files(run_dir: &Path, root: &Path, sidecar_pid: u32, own_pid: u32) {
    let dir = run_dir.join("presence/mcp");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let file = |pid: u32, client: &str, at: u64| {
        json!({"schemaVersion": 1, "pid": pid, "client": {"name": client, "version": "1"},
            "repos": [{"repoPath": root, "lastCallMs": at, "lastTool": "repo.status"}]})
    };
    std::fs::write(
        dir.join(format!("{sidecar_pid}.json")),
        file(sidecar_pid, "windsurf", fluxgit_contract::now_ms() - 1000).to_string(),
    )
    .expect("write");
    std::fs::write(
        dir.join(format!("{own_pid}.json")),
        file(own_pid, "claude-code", fluxgit_contract::now_ms()).to_string(),
    )
    .expect("write");
    std::fs::write(
        dir.join("999999999.json"),
        file(999_999_999, "old-client", fluxgit_contract::now_ms() - 48 * 3600 * 1000).to_string(),
    )
    .expect("write");
    std::fs::write(dir.join("bad.json"), "{not json").expect("write");
}

struct Processes(Vec<Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn children_of(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("proc").flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some(after) = stat.rfind(')').map(|at| &stat[at + 1..]) else { continue };
        if after.split_whitespace().nth(1) == Some(&pid.to_string()) {
            found.extend(entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()));
        }
    }
    found
}

fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    for _ in 0..200 {
        if ready() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting for {what}");
}

fn by_agent<'a>(report: &'a Report, agent: &str) -> Vec<&'a Agent> {
    report.agents.iter().filter(|record| record.agent == agent).collect()
}

#[test]
fn detects_each_agent_from_its_real_layout() {
    let temp = tempfile::tempdir().expect("tempdir");
    let base = temp.path().canonicalize().expect("canonical");
    let root = repo(&base.join("repo"));
    let other = repo(&base.join("repo-other"));
    let home = base.join("home");
    let run_dir = base.join("run");
    claude_store(&home, &root, &other);
    codex_store(&home, &root, &other);
    gemini_store(&home, &root);
    aider_files(&root);
    cursor_store(&home, &root);

    // Fake agent processes with their working directory inside the repository.
    let bin = base.join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let sleep = ["/bin/sleep", "/usr/bin/sleep"].into_iter().find(|path| Path::new(path).exists()).expect("sleep");
    std::fs::copy(sleep, bin.join("claude")).expect("copy sleep");
    let mut processes = Processes(Vec::new());
    processes
        .0
        .push(Command::new(bin.join("claude")).arg("300").current_dir(root.join("src")).spawn().expect("claude"));
    // `codex` (a shell) whose child `gemini` stands for this process: the caller and ourselves.
    processes.0.push(
        Command::new("bash")
            .args(["-c", "exec -a codex bash -c '(exec -a gemini sleep 300) & wait'"])
            .current_dir(&root)
            .spawn()
            .expect("codex"),
    );
    let codex_pid = processes.0[1].id();
    let mut own_pid = 0;
    wait_for("the codex process's child", || {
        own_pid = children_of(codex_pid).first().copied().unwrap_or(0);
        own_pid != 0 && std::fs::read(format!("/proc/{own_pid}/cmdline")).is_ok_and(|cmd| cmd.starts_with(b"gemini"))
    });
    wait_for("the codex process's name", || {
        std::fs::read(format!("/proc/{codex_pid}/cmdline")).is_ok_and(|cmd| cmd.starts_with(b"codex"))
    });
    // Another sidecar, started by this test process.
    processes.0.push(Command::new(sleep).arg("300").spawn().expect("sidecar"));
    let sidecar_pid = processes.0[2].id();
    presence_files(&run_dir, &root, sidecar_pid, own_pid);

    let options = Options {
        home: Some(home.clone()),
        codex_home: None,
        run_dirs: vec![run_dir.clone()],
        proc_root: PathBuf::from("/proc"),
        own_pid,
        client_name: Some("codex-mcp-client".to_owned()),
        now_ms: fluxgit_contract::now_ms(),
    };
    let detector = Detector::default();
    let report = detector.detect(&root, Some("main"), &options);
    let text = serde_json::to_string(&report).expect("serialises");
    assert!(!text.contains(SECRET), "no prompt, message or output leaks: {text}");
    assert!(!text.contains("elsewhere") && !text.contains("x.rs"), "another repository's stores stay out: {text}");

    let claude = by_agent(&report, "claude-code");
    assert_eq!(claude.len(), 1, "{text}");
    assert_eq!(claude[0].state, State::Working);
    assert_eq!(claude[0].sources, [Source::Process, Source::SessionStore]);
    assert_eq!(claude[0].pid, Some(processes.0[0].id()));
    assert_eq!(claude[0].branch.as_deref(), Some("feature/claude"));
    assert_eq!(claude[0].last_tool.as_deref(), Some("Edit"));
    assert_eq!(claude[0].files, ["src/lib.rs"]);
    assert!(!claude[0].likely_caller);

    let codex = by_agent(&report, "codex");
    assert_eq!(codex.len(), 1, "{text}");
    assert_eq!((codex[0].state, codex[0].pid), (State::Working, Some(codex_pid)));
    assert_eq!(codex[0].sources, [Source::Process, Source::SessionStore]);
    assert_eq!(codex[0].branch.as_deref(), Some("feature/codex"));
    assert_eq!(
        (codex[0].last_tool.as_deref(), codex[0].files.as_slice()),
        (Some("shell"), &["src/main.rs".to_owned()][..])
    );
    assert!(codex[0].likely_caller, "our parent process is the likely caller: {text}");

    // Our own process (named gemini) is excluded: the Gemini session stands alone, an hour old.
    let gemini = by_agent(&report, "gemini-cli");
    assert_eq!(gemini.len(), 1, "{text}");
    assert_eq!((gemini[0].state, gemini[0].pid), (State::Recent, None));
    assert_eq!(gemini[0].sources, [Source::SessionStore]);
    assert_eq!(
        (gemini[0].last_tool.as_deref(), gemini[0].files.as_slice()),
        (Some("write_file"), &["docs/guide.md".to_owned()][..])
    );

    let aider = by_agent(&report, "aider");
    assert_eq!(aider.len(), 1, "{text}");
    assert_eq!((aider[0].state, aider[0].sources.as_slice()), (State::Working, &[Source::RepoFiles][..]));
    assert_eq!(aider[0].files, ["README.md", "src/lib.rs"]);

    let cursor = by_agent(&report, "cursor");
    assert_eq!(cursor.len(), 1, "{text}");
    assert_eq!((cursor[0].state, cursor[0].sources.as_slice()), (State::Working, &[Source::Editor][..]));
    assert_eq!(cursor[0].files, ["src/ui kit.ts"]);

    let windsurf = by_agent(&report, "windsurf");
    assert_eq!(windsurf.len(), 1, "{text}");
    assert_eq!(windsurf[0].sources, [Source::McpPresence]);
    assert_eq!(
        (windsurf[0].mcp_client.as_deref(), windsurf[0].last_tool.as_deref()),
        (Some("windsurf"), Some("repo.status"))
    );
    assert_eq!(windsurf[0].state, State::Working);

    assert_eq!(report.agent_count, 6, "{text}");
    assert!(by_agent(&report, "old-client").is_empty(), "a dead sidecar of two days ago is gone: {text}");
    assert!(report.diagnostics.iter().any(|line| line.contains("bad.json")), "{:?}", report.diagnostics);
    assert_eq!(report.agents[0].state, State::Working);
    assert_eq!(report.agents.last().map(|agent| agent.state), Some(State::Recent));

    // Warm: the same answer from the caches; appended activity is read incrementally.
    assert_eq!(detector.detect(&root, Some("main"), &options).agents, report.agents);
    let log = home.join(".claude/projects").join(claude::encode(&root)).join("s1.jsonl");
    let mut file = std::fs::File::options().append(true).open(&log).expect("append");
    writeln!(
        file,
        "{}",
        json!({"type": "assistant", "cwd": root, "gitBranch": "feature/claude-2", "message": {"content": [
        {"type": "tool_use", "name": "Write", "input": {"file_path": "src/new.rs", "content": SECRET}}]}})
    )
    .expect("append");
    drop(file);
    let again = detector.detect(&root, Some("main"), &options);
    let claude = by_agent(&again, "claude-code");
    assert_eq!(claude[0].branch.as_deref(), Some("feature/claude-2"));
    assert_eq!(claude[0].files, ["src/new.rs", "src/lib.rs"]);
    assert!(!serde_json::to_string(&again).expect("serialises").contains(SECRET));
}

#[test]
fn unparseable_stores_are_skipped_with_a_diagnostic() {
    let temp = tempfile::tempdir().expect("tempdir");
    let base = temp.path().canonicalize().expect("canonical");
    let root = repo(&base.join("repo"));
    let home = base.join("home");
    let log = home.join(".claude/projects").join(claude::encode(&root)).join("broken.jsonl");
    std::fs::create_dir_all(log.parent().expect("parent")).expect("mkdir");
    std::fs::write(&log, format!("not json {SECRET}\nstill not\n")).expect("write");
    let gemini = home.join(".gemini/tmp").join(gemini::project_hash(&root)).join("chats/session-x.json");
    std::fs::create_dir_all(gemini.parent().expect("parent")).expect("mkdir");
    std::fs::write(&gemini, format!("{{{SECRET}")).expect("write");
    let options = Options {
        home: Some(home),
        codex_home: None,
        run_dirs: Vec::new(),
        proc_root: base.join("no-proc"),
        own_pid: std::process::id(),
        client_name: None,
        now_ms: fluxgit_contract::now_ms(),
    };
    let report = Detector::default().detect(&root, None, &options);
    assert!(report.agents.is_empty(), "{report:?}");
    assert_eq!(report.diagnostics.len(), 2, "{:?}", report.diagnostics);
    assert!(!serde_json::to_string(&report).expect("serialises").contains(SECRET));
}
