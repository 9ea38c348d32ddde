use std::path::Path;

use super::*;

#[test]
fn command_lines_name_agents() {
    assert_eq!(process::agent_of_cmdline(b"/usr/local/bin/claude\0--resume\0"), Some("claude-code"));
    assert_eq!(process::agent_of_cmdline(b"node\0/usr/lib/node_modules/@openai/codex/bin/codex.js\0"), Some("codex"));
    assert_eq!(process::agent_of_cmdline(b"/usr/bin/python3.12\0/home/me/.local/bin/aider\0"), Some("aider"));
    assert_eq!(process::agent_of_cmdline(b"node\0--max-old-space-size=4096\0/opt/gemini\0"), Some("gemini-cli"));
    assert_eq!(process::agent_of_cmdline(b"vim\0claude\0"), None, "only the program counts, not its arguments");
    assert_eq!(process::agent_of_cmdline(b""), None);
}

#[test]
fn paths_become_repo_relative_or_nothing() {
    let root = Path::new("/work/repo");
    assert_eq!(relative_to(root, None, "/work/repo/src/a.rs").as_deref(), Some("src/a.rs"));
    assert_eq!(relative_to(root, Some(Path::new("/work/repo/src")), "b.rs").as_deref(), Some("src/b.rs"));
    assert_eq!(relative_to(root, None, "/work/repo/../other/x"), None);
    assert_eq!(relative_to(root, None, "/work/repository/x"), None);
    assert_eq!(relative_to(root, None, "/work/repo/.git/config"), None);
    assert_eq!(relative_to(root, None, "relative-without-cwd"), None);
}

#[test]
fn store_names() {
    assert_eq!(claude::encode(Path::new("/home/me/my.repo")), "-home-me-my-repo");
    assert_eq!(vscode::file_uri_path("file:///home/me/a%20b/c.rs").as_deref(), Some("/home/me/a b/c.rs"));
    assert_eq!(vscode::file_uri_path("vscode-remote://ssh/home/x"), None);
    let patch =
        "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-secret\n+more\n*** Add File: b.txt\n+x\n*** End Patch";
    assert_eq!(tail::patch_paths(patch).collect::<Vec<_>>(), ["src/a.rs", "b.txt"]);
    assert_eq!(gemini::project_hash(Path::new("/a")).len(), 64);
}

#[test]
fn states_follow_activity_and_liveness() {
    let now = 10 * RECENT_WITHIN_MS;
    let at = |ago: u64, alive: bool| Sighting { last_activity_ms: Some(now - ago), alive, ..Sighting::default() };
    assert_eq!(state(&at(1000, false), now), Some(State::Working));
    assert_eq!(state(&at(WORKING_WITHIN_MS + 1, true), now), Some(State::Open));
    assert_eq!(state(&at(WORKING_WITHIN_MS + 1, false), now), Some(State::Recent));
    assert_eq!(state(&at(RECENT_WITHIN_MS + 1, false), now), None);
}
