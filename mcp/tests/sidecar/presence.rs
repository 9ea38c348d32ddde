//! The presence file through the real binary (design.md#presence): private modes, atomic rewrites, only accepted calls,
//! removal at end of input and on SIGTERM, the 24-hour sweep, symlink refusal and the 16-repository cap.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::support::{Running, initialize, sidecar, tool_call};

/// A server with presence on, the run dir at `<home>/run`.
fn with_presence(root: &Path, home: &Path) -> Command {
    let mut command = sidecar(root, home, &[]);
    command.env_remove("FLUXGIT_MCP_PRESENCE_DISABLED");
    command
}

fn presence_dir(home: &Path) -> PathBuf {
    home.join("run").join("presence").join("mcp")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("presence file")).expect("json")
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).expect("metadata").permissions().mode() & 0o777
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| entries.map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn presence_file_is_private_rewritten_atomically_and_removed_at_end_of_input() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().canonicalize().expect("repo");
    let home = tempfile::tempdir().expect("tempdir");
    let dir = presence_dir(home.path());
    let mut server = Running::start(with_presence(&root, home.path()));
    let file = dir.join(format!("{}.json", server.pid()));

    server.request(&initialize("presence-test", "3.1.4"));
    assert!(!file.exists(), "nothing is written before an accepted call");
    let before = fluxgit_audit::now_ms();
    let response = server.request(&tool_call(1, "repo_status", json!({"repoPath": repo})));
    assert_eq!(response["result"]["isError"], false, "{response}");
    let after = fluxgit_audit::now_ms();
    assert_eq!((mode(&file), mode(&dir)), (0o600, 0o700));
    let document = read_json(&file);
    assert_eq!(document["schemaVersion"], 1);
    assert_eq!(document["pid"], server.pid());
    assert_eq!(document["client"], json!({"name": "presence-test", "version": "3.1.4"}));
    let entry = &document["repos"][0];
    assert_eq!((entry["repoPath"].as_str(), entry["lastTool"].as_str()), (repo.to_str(), Some("repo.status")));
    let last_call = entry["lastCallMs"].as_u64().expect("lastCallMs");
    assert!((before..=after).contains(&last_call), "{before} <= {last_call} <= {after}");
    let first_inode = std::fs::metadata(&file).expect("metadata").ino();

    // A call from a subfolder records the repository root; the file is replaced, not rewritten in place.
    let subfolder = repo.join("src");
    std::fs::create_dir_all(&subfolder).expect("subfolder");
    server.request(&tool_call(2, "repo_brief", json!({"repoPath": subfolder})));
    let document = read_json(&file);
    assert_eq!(document["repos"].as_array().map(Vec::len), Some(1));
    assert_eq!(document["repos"][0]["lastTool"], "repo.brief");
    assert_ne!(std::fs::metadata(&file).expect("metadata").ino(), first_inode, "replaced by a rename");
    assert_eq!(names(&dir), [format!("{}.json", server.pid())], "no temporary file left");

    // Refused calls are not recorded.
    let bytes = std::fs::read(&file).expect("read");
    let outside = tempfile::tempdir().expect("outside");
    for (id, call) in [
        tool_call(3, "repo_status", json!({"repoPath": outside.path()})),
        tool_call(4, "no.such.tool", json!({"repoPath": repo})),
        tool_call(5, "repo_refs", json!({"repoPath": repo, "maxTokens": 1})),
    ]
    .into_iter()
    .enumerate()
    {
        let response = server.request(&call);
        assert!(response.get("error").is_some(), "call {id} is refused: {response}");
    }
    assert_eq!(std::fs::read(&file).expect("read"), bytes);

    let (status, stderr) = server.finish();
    assert!(status.success(), "{stderr}");
    assert!(!file.exists(), "removed at end of input");
}

#[test]
fn sigterm_removes_the_presence_file() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("tempdir");
    let mut server = Running::start(with_presence(&root, home.path()));
    let file = presence_dir(home.path()).join(format!("{}.json", server.pid()));
    server.request(&initialize("sigterm-test", "1"));
    server.request(&tool_call(1, "repo_status", json!({"repoPath": fixture.path()})));
    assert!(file.is_file());
    let (status, stderr) = server.signal("TERM");
    assert!(status.success(), "a clean exit on SIGTERM: {status:?}\n{stderr}");
    assert!(!file.exists(), "removed on SIGTERM");
}

#[test]
fn stale_presence_files_are_swept_and_symlinks_left_alone() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("tempdir");
    let dir = presence_dir(home.path());
    std::fs::create_dir_all(&dir).expect("mkdir");
    let day_ago = SystemTime::now() - Duration::from_secs(25 * 60 * 60);
    let plant = |name: &str, modified: SystemTime| {
        let path = dir.join(name);
        std::fs::write(&path, b"{}").expect("write");
        std::fs::File::options().write(true).open(&path).expect("open").set_modified(modified).expect("mtime");
    };
    plant("111.json", day_ago);
    plant("112.json.tmp", day_ago);
    plant("113.json", SystemTime::now() - Duration::from_secs(23 * 60 * 60));
    plant("notes.txt", day_ago);
    let target = home.path().join("elsewhere.json");
    std::fs::write(&target, b"{}").expect("write");
    std::fs::File::options().write(true).open(&target).expect("open").set_modified(day_ago).expect("mtime");
    std::os::unix::fs::symlink(&target, dir.join("114.json")).expect("symlink");

    let mut server = Running::start(with_presence(&root, home.path()));
    server.request(&initialize("sweep-test", "1"));
    server.request(&tool_call(1, "repo_status", json!({"repoPath": fixture.path()})));
    let own = format!("{}.json", server.pid());
    let mut expected = vec!["113.json".to_owned(), "114.json".to_owned(), own, "notes.txt".to_owned()];
    expected.sort();
    assert_eq!(names(&dir), expected);
    assert!(target.is_file(), "a symlink's target is never touched");
    let (status, _) = server.finish();
    assert!(status.success());
}

#[test]
fn symlinked_presence_directories_are_refused_without_affecting_calls() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let call = tool_call(1, "repo_status", json!({"repoPath": fixture.path()}));
    for linked in ["presence/mcp", "presence"] {
        let home = tempfile::tempdir().expect("tempdir");
        let elsewhere = home.path().join("elsewhere");
        std::fs::create_dir_all(elsewhere.join("mcp")).expect("mkdir");
        let link = home.path().join("run").join(linked);
        std::fs::create_dir_all(link.parent().expect("parent")).expect("mkdir");
        let target = if linked == "presence" { elsewhere.clone() } else { elsewhere.join("mcp") };
        std::os::unix::fs::symlink(&target, &link).expect("symlink");

        let mut server = Running::start(with_presence(&root, home.path()));
        server.request(&initialize("symlink-test", "1"));
        let response = server.request(&call);
        assert_eq!(response["result"]["isError"], false, "{linked}: the call is unaffected: {response}");
        server.request(&call);
        let (status, stderr) = server.finish();
        assert!(status.success(), "{stderr}");
        assert!(names(&elsewhere.join("mcp")).is_empty(), "{linked}: nothing written through the symlink");
        assert_eq!(stderr.matches("is a symlink; refusing to write through it").count(), 1, "{linked}: {stderr}");
    }
}

#[test]
fn at_most_sixteen_repositories_are_listed() {
    let root = tempfile::tempdir().expect("tempdir");
    let root_path = root.path().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("tempdir");
    let repos: Vec<PathBuf> = (0..17)
        .map(|index| {
            let repo = root_path.join(format!("r{index:02}"));
            let status = Command::new("git").args(["init", "-q"]).arg(&repo).status().expect("git init");
            assert!(status.success());
            repo
        })
        .collect();
    let mut server = Running::start(with_presence(&root_path, home.path()));
    server.request(&initialize("many-repos", "1"));
    for (id, repo) in repos.iter().enumerate() {
        let response = server.request(&tool_call(id as i64 + 1, "repo_status", json!({"repoPath": repo})));
        assert_eq!(response["result"]["isError"], false, "{response}");
    }
    let document = read_json(&presence_dir(home.path()).join(format!("{}.json", server.pid())));
    let listed: Vec<&str> =
        document["repos"].as_array().expect("repos").iter().filter_map(|repo| repo["repoPath"].as_str()).collect();
    assert_eq!(listed.len(), 16);
    assert!(!listed.contains(&repos[0].to_str().expect("utf-8")), "the least recent is dropped: {listed:?}");
    assert_eq!(listed[0], repos[16].to_str().expect("utf-8"), "most recent first");
    let (status, _) = server.finish();
    assert!(status.success());
}

#[test]
fn disabled_presence_writes_nothing() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("tempdir");
    // `sidecar` sets FLUXGIT_MCP_PRESENCE_DISABLED (empty: any value counts).
    let mut server = Running::start(sidecar(&root, home.path(), &[]));
    server.request(&initialize("disabled", "1"));
    let response = server.request(&tool_call(1, "repo_status", json!({"repoPath": fixture.path()})));
    assert_eq!(response["result"]["isError"], false);
    let (status, _) = server.finish();
    assert!(status.success());
    assert!(!home.path().join("run").join("presence").exists());
}
