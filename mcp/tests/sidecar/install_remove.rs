//! `install HOST --remove` on a temporary HOME: an install followed by a removal gives back each host's file byte
//! for byte, edits made in between are kept, a missing entry changes nothing, the `claude` CLI removes through
//! `claude mcp remove`, a removal refuses what install refuses, and an install that drops a variable of the
//! existing entry says so.
//!
//! Every test runs the built binary with only HOME and PATH set, never the real HOME.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::fs::FileTypeExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::BIN;

/// A host, the file it reads (relative to HOME), and a file of the user's own in the host's format: another
/// server, other settings, comments where the format has them, `\r\n` line endings for Cursor and a byte order
/// mark for Gemini.
const HOSTS: [(&str, &str, &str); 6] = [
    (
        "claude-code",
        ".claude.json",
        "{\n  \"numStartups\": 7,\n  \"mcpServers\": {\n    \"other\": {\n      \"type\": \"stdio\",\n      \
         \"command\": \"/usr/bin/other\",\n      \"args\": []\n    }\n  },\n  \"projects\": {}\n}",
    ),
    (
        "claude-desktop",
        ".config/Claude/claude_desktop_config.json",
        "{\n    \"mcpServers\": {\n        \"other\": { \"command\": \"/usr/bin/other\", \"args\": [\"--x\"] }\n    \
         },\n    \"globalShortcut\": \"\"\n}\n",
    ),
    (
        "cursor",
        ".cursor/mcp.json",
        "{\r\n  \"mcpServers\": {\r\n    \"other\": {\r\n      \"command\": \"/usr/bin/other\"\r\n    }\r\n  }\r\n}\r\n",
    ),
    (
        "vscode",
        ".config/Code/User/mcp.json",
        "// My MCP servers.\n{\n\t\"servers\": {\n\t\t/* the old one */\n\t\t\"other\": {\"type\": \"stdio\", \
         \"command\": \"/usr/bin/other\"}, // keep\n\t},\n\t\"inputs\": [],\n}\n",
    ),
    (
        "codex",
        ".codex/config.toml",
        "# Codex settings\nmodel = \"o3\"   # pinned\n\n[mcp_servers.other]\ncommand = \"/usr/bin/other\"\nargs = \
         [\"--x\"]\n\n# profiles\n[profiles.fast]\nmodel = \"o4-mini\"\n",
    ),
    (
        "gemini",
        ".gemini/settings.json",
        "\u{feff}{\n  \"theme\": \"GitHub\",\n  \"mcpServers\": {\n    \"other\": {\"command\": \"/usr/bin/other\"}\n  \
         }\n}\n",
    ),
];

/// A temporary HOME with two directories to allow, beside a directory that stands for the rest of the disk.
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    outside: PathBuf,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let outside = dir.path().join("outside");
        for path in [home.join("src"), home.join("work"), outside.clone()] {
            std::fs::create_dir_all(path).expect("mkdir");
        }
        Home { _dir: dir, home, outside }
    }

    /// `install ARGS` with only HOME and PATH set (`path`, or one with no `claude` on it), run from HOME.
    fn command(&self, args: &[&str], path: Option<&OsStr>) -> Command {
        let mut command = Command::new(BIN);
        command
            .arg("install")
            .args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", path.unwrap_or(OsStr::new("/nonexistent")))
            .current_dir(&self.home);
        command
    }

    fn install(&self, args: &[&str]) -> Output {
        self.command(args, None).output().expect("run install")
    }
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

fn seed(path: &Path, contents: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, contents).expect("seed the file");
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn backup_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".fluxgit-backup");
    PathBuf::from(name)
}

fn succeeded(output: &Output, what: &str) {
    assert!(output.status.success(), "{what}: {}", text(output));
}

#[test]
fn install_then_remove_gives_back_each_hosts_file_byte_for_byte() {
    for (host, file, user) in HOSTS {
        let home = Home::new();
        let file = home.home.join(file);
        seed(&file, user);

        succeeded(&home.install(&[host, "--roots", "src", "work", "--gateway", "127.0.0.1:7420"]), host);
        let installed = read(&file);
        assert!(installed.contains("fluxgit") && installed != user, "{host}: installed:\n{installed}");

        let dry = home.install(&[host, "--remove", "--dry-run"]);
        succeeded(&dry, host);
        assert!(text(&dry).contains("  removed "), "{host}: {}", text(&dry));
        assert!(text(&dry).contains(&format!("the file would read:\n{}", user.trim_end())), "{host}: {}", text(&dry));
        assert_eq!(read(&file), installed, "{host}: --dry-run wrote");

        let removed = home.install(&[host, "--remove"]);
        succeeded(&removed, host);
        assert!(text(&removed).contains("written: restart"), "{host}: {}", text(&removed));
        assert_eq!(read(&file), user, "{host}: the file is back as it was, byte for byte");
        assert_eq!(read(&sibling(&file, ".fluxgit-remove-backup")), installed, "{host}: the installed file is saved");
        assert_eq!(read(&backup_of(&file)), user, "{host}: install's backup, the original, is still there");

        // A second removal finds nothing, says so, and writes nothing (not even the backup).
        let again = home.install(&[host, "--remove"]);
        succeeded(&again, host);
        assert!(text(&again).contains("no server \"fluxgit\" to remove"), "{host}: {}", text(&again));
        assert!(text(&again).contains("nothing changed"), "{host}: {}", text(&again));
        assert_eq!(read(&file), user, "{host}");
        assert_eq!(read(&sibling(&file, ".fluxgit-remove-backup")), installed, "{host}: the backup was not rewritten");
    }
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// A file of the user's own in the host's format with no server list at all: install adds one, and the removal
/// must take it away again.
fn without_servers(host: &str) -> &'static str {
    match host {
        "codex" => "# Codex settings\nmodel = \"o3\"\n",
        "vscode" => "// mine\n{\n\t\"inputs\": [],\n}\n",
        "cursor" => "{\r\n  \"theme\": \"dark\"\r\n}\r\n",
        _ => "{\n  \"theme\": \"GitHub\",\n  \"numStartups\": 3\n}\n",
    }
}

#[test]
fn install_then_remove_takes_away_the_server_list_and_the_file_install_made() {
    for (host, relative, _) in HOSTS {
        // A file with no server list: the list install added goes with the entry.
        let home = Home::new();
        let file = home.home.join(relative);
        let user = without_servers(host);
        seed(&file, user);
        succeeded(&home.install(&[host, "--roots", "src"]), host);
        assert_ne!(read(&file), user, "{host}: installed");
        let removed = home.install(&[host, "--remove"]);
        succeeded(&removed, host);
        assert!(text(&removed).contains(", now empty"), "{host}: {}", text(&removed));
        assert_eq!(read(&file), user, "{host}: the file is back as it was, byte for byte");
        assert_eq!(read(&backup_of(&file)), user, "{host}: install's backup is the original");

        // No file at all: install creates it, the removal deletes it (and says so first in a dry run).
        let home = Home::new();
        let file = home.home.join(relative);
        succeeded(&home.install(&[host, "--roots", "src"]), host);
        let installed = read(&file);
        let dry = home.install(&[host, "--remove", "--dry-run"]);
        succeeded(&dry, host);
        assert!(text(&dry).contains("the file would be deleted"), "{host}: {}", text(&dry));
        assert_eq!(read(&file), installed, "{host}: --dry-run deleted");
        let removed = home.install(&[host, "--remove"]);
        succeeded(&removed, host);
        assert!(text(&removed).contains("deleted the file: nothing is left in it"), "{host}: {}", text(&removed));
        assert!(std::fs::symlink_metadata(&file).is_err(), "{host}: the file install created is gone");
        assert_eq!(read(&sibling(&file, ".fluxgit-remove-backup")), installed, "{host}: and saved");
    }
}

#[test]
fn a_server_list_holding_a_comment_stays_after_the_removal() {
    let home = Home::new();
    let file = home.home.join(".config/Code/User/mcp.json");
    seed(&file, "{\n  \"servers\": {\n    // mine later\n  }\n}\n");
    succeeded(&home.install(&["vscode", "--roots", "src"]), "install");
    let removed = home.install(&["vscode", "--remove"]);
    succeeded(&removed, "remove");
    assert!(!text(&removed).contains("now empty"), "{}", text(&removed));
    let after = read(&file);
    assert!(after.contains("\"servers\"") && after.contains("// mine later") && !after.contains("fluxgit"), "{after}");
}

/// The user's edits made after the install: a setting changed by hand and a server of their own appended after
/// the entry (by a second install under another name, which appends as a person would).
fn edit_after_install(home: &Home, host: &str, file: &Path) {
    let text = read(file);
    let edited = text.replacen("/usr/bin/other", "/opt/other/bin/other", 1);
    assert_ne!(edited, text, "{host}: the edit applies");
    std::fs::write(file, edited).expect("edit");
    succeeded(&home.install(&[host, "--roots", "work", "--name", "mine"]), host);
}

#[test]
fn removal_keeps_what_the_user_changed_since_the_install() {
    for (host, file, user) in HOSTS {
        // The file as the user would have it without fluxgit: their own edits made to the original.
        let home = Home::new();
        let file = home.home.join(file);
        seed(&file, user);
        edit_after_install(&home, host, &file);
        let expected = read(&file);

        seed(&file, user);
        succeeded(&home.install(&[host, "--roots", "src"]), host);
        edit_after_install(&home, host, &file);
        let edited = read(&file);
        let fluxgit_at = edited.find("fluxgit").expect("the entry");
        assert!(fluxgit_at < edited.find("\"mine\"").or(edited.find(".mine]")).expect("mine"), "{host}: {edited}");

        succeeded(&home.install(&[host, "--remove"]), host);
        assert_eq!(read(&file), expected, "{host}: only the entry went; edited before:\n{edited}");
        // Another name is removed by --name, and only it.
        succeeded(&home.install(&[host, "--remove", "--name", "mine"]), host);
        assert_eq!(read(&file), user.replacen("/usr/bin/other", "/opt/other/bin/other", 1), "{host}");
    }
}

#[test]
fn removal_where_nothing_is_installed_changes_nothing_and_creates_nothing() {
    for (host, file, user) in HOSTS {
        let home = Home::new();
        let file = home.home.join(file);
        for args in [&[host, "--remove"][..], &[host, "--remove", "--dry-run"]] {
            let output = home.install(args);
            succeeded(&output, host);
            assert!(text(&output).contains("(the file does not exist): nothing changed"), "{host}: {}", text(&output));
        }
        let names: BTreeSet<String> = std::fs::read_dir(&home.home)
            .expect("list HOME")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, BTreeSet::from(["src".to_owned(), "work".to_owned()]), "{host}: no file, no directory");

        seed(&file, user);
        let output = home.install(&[host, "--remove"]);
        succeeded(&output, host);
        assert!(text(&output).contains("(the file has no such entry): nothing changed"), "{host}: {}", text(&output));
        assert_eq!(read(&file), user, "{host}");
        assert!(!backup_of(&file).exists(), "{host}: nothing written, no backup");
    }
}

#[test]
fn removal_refuses_a_broken_read_only_outside_or_fifo_file_and_leaves_it_alone() {
    for (host, file, user) in HOSTS {
        let home = Home::new();
        let file = home.home.join(file);
        seed(&file, user);
        succeeded(&home.install(&[host, "--roots", "src"]), host);
        let installed = read(&file);

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).expect("chmod 0444");
        let output = home.install(&[host, "--remove"]);
        assert_eq!(output.status.code(), Some(1), "{host}: {}", text(&output));
        assert!(text(&output).contains("read-only"), "{host}: {}", text(&output));
        assert_eq!(read(&file), installed, "{host}");
        assert_eq!(std::fs::metadata(&file).expect("meta").permissions().mode() & 0o777, 0o444, "{host}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod 0600");

        let broken = format!("{}\n{{", installed.trim_end());
        std::fs::write(&file, &broken).expect("break the file");
        let output = home.install(&[host, "--remove"]);
        assert_eq!(output.status.code(), Some(1), "{host}: {}", text(&output));
        assert!(text(&output).contains("left as it was"), "{host}: {}", text(&output));
        assert_eq!(read(&file), broken, "{host}");

        // A link that leads outside HOME: refused, the file there untouched.
        let outside_file = home.outside.join("config");
        std::fs::write(&outside_file, &installed).expect("outside file");
        std::fs::remove_file(&file).expect("remove");
        std::os::unix::fs::symlink(&outside_file, &file).expect("link");
        let output = home.install(&[host, "--remove"]);
        assert_eq!(output.status.code(), Some(1), "{host}: {}", text(&output));
        assert!(text(&output).contains("leads outside HOME"), "{host}: {}", text(&output));
        assert_eq!(read(&outside_file), installed, "{host}");

        // A FIFO is answered at once, not read forever.
        std::fs::remove_file(&file).expect("remove the link");
        assert!(Command::new("mkfifo").arg(&file).status().expect("mkfifo runs").success());
        let mut command = home.command(&[host, "--remove"], None);
        let child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
        let output = wait_within(child, Duration::from_secs(5), host);
        assert_eq!(output.status.code(), Some(1), "{host}: {}", text(&output));
        assert!(text(&output).contains("a FIFO, not a regular file"), "{host}: {}", text(&output));
        assert!(std::fs::symlink_metadata(&file).expect("fifo").file_type().is_fifo(), "{host}: FIFO kept");
    }
}

/// Waits for `child` at most `limit`; kills it and fails when it is still running then.
fn wait_within(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: install --remove still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("output")
}

#[test]
fn claude_code_with_its_cli_on_the_path_removes_through_claude_mcp_remove() {
    let home = Home::new();
    let bin = home.home.join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir bin");
    let log = home.home.join("claude.log");
    let script = format!("#!/bin/sh\nprintf '%s ' \"$@\" >> '{}'\necho >> '{}'\n", log.display(), log.display());
    let claude = bin.join("claude");
    std::fs::write(&claude, script).expect("write the fake claude");
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = std::env::join_paths([bin.as_path(), Path::new("/usr/bin"), Path::new("/bin")]).expect("PATH");
    let file = home.home.join(".claude.json");

    // No entry in the file: claude is not run.
    seed(&file, HOSTS[0].2);
    let output = home.command(&["claude-code", "--remove"], Some(&path)).output().expect("run");
    succeeded(&output, "no entry");
    assert!(text(&output).contains("nothing changed"), "{}", text(&output));
    assert!(!log.exists(), "claude was run for nothing");

    // An entry (as the CLI would have written it): --dry-run names the command, a real run runs it.
    succeeded(&home.install(&["claude-code", "--roots", "src"]), "install without the CLI");
    let installed = read(&file);
    let dry = home.command(&["claude-code", "--remove", "--dry-run"], Some(&path)).output().expect("run");
    succeeded(&dry, "dry run");
    assert!(
        text(&dry).contains(&format!("would run: {} mcp remove --scope user fluxgit", claude.display())),
        "{}",
        text(&dry)
    );
    assert!(!log.exists(), "--dry-run ran claude");
    let output = home.command(&["claude-code", "--remove"], Some(&path)).output().expect("run");
    succeeded(&output, "remove");
    assert_eq!(read(&log), "mcp remove --scope user fluxgit \n");
    assert_eq!(read(&file), installed, "the CLI, not install, writes the file");
    assert_eq!(read(&backup_of(&file)), HOSTS[0].2, "the backup is still the one the install made");
}

#[test]
fn remove_takes_neither_roots_nor_gateway() {
    let home = Home::new();
    for extra in [&["--roots", "src"][..], &["--gateway", "127.0.0.1:7420"]] {
        let args: Vec<&str> = ["cursor", "--remove"].into_iter().chain(extra.iter().copied()).collect();
        let output = home.install(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        assert!(text(&output).contains("cannot be used with"), "{}", text(&output));
    }
    assert!(!home.home.join(".cursor").exists());
}

#[test]
fn a_reinstall_without_gateway_says_it_drops_the_gateway_address() {
    for (host, file, user) in [HOSTS[2], HOSTS[4]] {
        let home = Home::new();
        let file = home.home.join(file);
        seed(&file, user);
        succeeded(&home.install(&[host, "--roots", "src", "--gateway", "127.0.0.1:7420"]), host);
        let note = "note: drops FLUXGIT_MCP_HANDSHAKE_ADDR=127.0.0.1:7420 from the existing entry (pass --gateway to \
                    keep it)";

        let dry = home.install(&[host, "--roots", "src", "--dry-run"]);
        succeeded(&dry, host);
        let stdout = String::from_utf8_lossy(&dry.stdout);
        assert!(stdout.contains(&format!("  {note}\n")), "{host}: the dry-run summary says it:\n{stdout}");
        assert_eq!(stdout.matches("note: ").count(), 1, "{host}: the same roots are not dropped:\n{stdout}");

        // The same install with --gateway drops nothing and says nothing.
        let kept = home.install(&[host, "--roots", "src", "--gateway", "127.0.0.1:7420", "--dry-run"]);
        assert!(!text(&kept).contains("note: drops"), "{host}: {}", text(&kept));

        let real = home.install(&[host, "--roots", "src"]);
        succeeded(&real, host);
        let stderr = String::from_utf8_lossy(&real.stderr);
        assert_eq!(
            stderr,
            format!("fluxgit-mcp-sidecar install: {note}\n"),
            "{host}: a real install says it on stderr"
        );
        assert!(!read(&file).contains("FLUXGIT_MCP_HANDSHAKE_ADDR"), "{host}: dropped as the note said");

        // Without --roots, the roots are dropped too, and said so.
        let bare = home.install(&[host, "--dry-run"]);
        assert!(
            text(&bare).contains("note: drops FLUXGIT_MCP_ALLOWED_ROOTS=")
                && text(&bare).contains("(pass --roots to keep it)"),
            "{host}: {}",
            text(&bare)
        );
    }
}

#[test]
fn a_file_reached_through_a_link_is_emptied_never_deleted() {
    let home = Home::new();
    let real = home.home.join("dotfiles/cursor-mcp.json");
    seed(&real, "{}\n");
    let file = home.home.join(".cursor/mcp.json");
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    std::os::unix::fs::symlink(&real, &file).expect("link");
    succeeded(&home.install(&["cursor", "--roots", "src"]), "install");
    assert!(read(&real).contains("fluxgit"), "written through the link");
    let removed = home.install(&["cursor", "--remove"]);
    succeeded(&removed, "remove");
    assert!(!text(&removed).contains("deleted the file"), "{}", text(&removed));
    assert!(std::fs::symlink_metadata(&file).expect("link").file_type().is_symlink(), "the link stays");
    assert_eq!(read(&real), "{}\n", "the dotfile is back as it was");
}

#[test]
fn gemini_settings_with_comments_are_edited_and_the_comments_kept() {
    let home = Home::new();
    let file = home.home.join(".gemini/settings.json");
    let user = "// my settings\n{\n  \"theme\": \"GitHub\" /* dark later */\n}\n";
    seed(&file, user);
    succeeded(&home.install(&["gemini", "--roots", "src"]), "install");
    let installed = read(&file);
    assert!(installed.contains("// my settings") && installed.contains("/* dark later */"), "{installed}");
    assert!(installed.contains("\"fluxgit\""), "{installed}");
    succeeded(&home.install(&["gemini", "--remove"]), "remove");
    assert_eq!(read(&file), user, "back as it was, comments and all");
}
