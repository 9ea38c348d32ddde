//! `install HOST` on a hostile HOME, with real files, links, FIFOs and processes: links planted where install
//! writes, files that are not regular, read-only files, `\r\n` and a byte order mark, roots that are not UTF-8,
//! installs running at once and installs killed with SIGKILL in the middle of a write.
//!
//! Every test runs the built binary with a temporary HOME (and only HOME and PATH set), never the real one.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::BufRead as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::FileTypeExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::BIN;

/// A host, the file it reads (relative to HOME), and the JSON object its servers are in (`None`: Codex's TOML).
const HOSTS: [(&str, &str, Option<&str>); 6] = [
    ("claude-code", ".claude.json", Some("mcpServers")),
    ("claude-desktop", ".config/Claude/claude_desktop_config.json", Some("mcpServers")),
    ("cursor", ".cursor/mcp.json", Some("mcpServers")),
    ("vscode", ".config/Code/User/mcp.json", Some("servers")),
    ("codex", ".codex/config.toml", None),
    ("gemini", ".gemini/settings.json", Some("mcpServers")),
];

/// A temporary HOME beside a directory that stands for the rest of the disk ("outside").
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
        for path in [&home, &outside] {
            std::fs::create_dir_all(path).expect("mkdir");
        }
        for root in ["r0", "r1", "r2", "r3"] {
            std::fs::create_dir_all(home.join(root)).expect("mkdir root");
        }
        Home { _dir: dir, home, outside }
    }

    /// `install ARGS` with only HOME and PATH (no `claude` on it) set, run from HOME.
    fn command(&self, args: &[&OsStr]) -> Command {
        let mut command = Command::new(BIN);
        command
            .arg("install")
            .args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", "/nonexistent")
            .current_dir(&self.home);
        command
    }

    fn install(&self, args: &[&str]) -> Output {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        self.command(&args).output().expect("run install")
    }

    /// The canonical path of a root below HOME.
    fn root(&self, name: &str) -> String {
        self.home.join(name).canonicalize().expect("canonical root").display().to_string()
    }
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

fn seed(path: &Path, contents: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, contents).expect("seed the file");
}

/// `path` with `suffix` added to its file name.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// The names in a directory, sorted.
fn listing(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .expect("list the directory")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .collect()
}

/// A host's file with unrelated settings of the user's.
fn user_file(container: Option<&str>) -> String {
    match container {
        Some(container) => format!(
            "{{\n  \"theme\": \"dark\",\n  \"{container}\": {{\n    \"other\": {{\"command\": \"/usr/bin/other\"}}\n  }}\n}}\n"
        ),
        None => "model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"/usr/bin/other\"\n".to_owned(),
    }
}

/// The env of each server entry of a host's file, by server name; panics when the file does not parse or lost the
/// user's own settings.
fn entries(text: &str, container: Option<&str>) -> Vec<(String, Value)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match container {
        Some(container) => {
            let json: Value = serde_json::from_str(text).unwrap_or_else(|error| panic!("not JSON ({error}):\n{text}"));
            assert_eq!(json["theme"], "dark", "{text}");
            assert_eq!(json[container]["other"]["command"], "/usr/bin/other", "{text}");
            let servers = json[container].as_object().expect("servers");
            servers.iter().map(|(name, entry)| (name.clone(), entry["env"].clone())).collect()
        }
        None => {
            let document: toml_edit::DocumentMut =
                text.parse().unwrap_or_else(|error| panic!("not TOML ({error}):\n{text}"));
            assert_eq!(document["model"].as_str(), Some("o3"), "{text}");
            assert_eq!(document["mcp_servers"]["other"]["command"].as_str(), Some("/usr/bin/other"), "{text}");
            let servers = document["mcp_servers"].as_table().expect("servers");
            servers
                .iter()
                .map(|(name, entry)| {
                    let env: serde_json::Map<String, Value> = entry
                        .get("env")
                        .and_then(toml_edit::Item::as_table_like)
                        .map(|env| env.iter().map(|(key, value)| (key.to_owned(), value.as_str().into())).collect())
                        .unwrap_or_default();
                    (name.to_owned(), Value::Object(env))
                })
                .collect()
        }
    }
}

/// The roots an entry allows, as written.
fn roots_of(env: &Value) -> &str {
    env["FLUXGIT_MCP_ALLOWED_ROOTS"].as_str().unwrap_or("")
}

/// Waits for `child` at most `limit`; kills it and fails when it is still running then.
fn wait_within(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: install still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("output")
}

#[test]
fn a_symlinked_backup_is_replaced_never_written_through_for_every_host() {
    for (host, file, container) in HOSTS {
        let home = Home::new();
        let file = home.home.join(file);
        let before = user_file(container);
        seed(&file, &before);
        let victim = home.outside.join("victim");
        std::fs::write(&victim, "precious\n").expect("victim");
        let backup = sibling(&file, ".fluxgit-backup");
        std::os::unix::fs::symlink(&victim, &backup).expect("plant the link");

        let output = home.install(&[host, "--roots", "r0"]);
        assert!(output.status.success(), "{host}: {}", text(&output));
        assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "precious\n", "{host} wrote through the link");
        assert_eq!(listing(&home.outside), BTreeSet::from(["victim".to_owned()]), "{host}");
        let metadata = std::fs::symlink_metadata(&backup).expect("backup");
        assert!(metadata.is_file(), "{host}: the link was replaced by a regular backup");
        assert_eq!(std::fs::read_to_string(&backup).expect("backup"), before, "{host}");
        let env = entries(&std::fs::read_to_string(&file).expect("file"), container);
        assert!(env.iter().any(|(name, env)| name == "fluxgit" && roots_of(env) == home.root("r0")), "{host}");
    }
}

#[test]
fn a_config_or_directory_symlinked_outside_home_is_refused_and_left_alone() {
    for (host, file, container) in HOSTS {
        let home = Home::new();
        let file = home.home.join(file);
        let outside_file = home.outside.join("config");
        std::fs::write(&outside_file, user_file(container)).expect("outside file");
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(&outside_file, &file).expect("link the file");

        for args in [&[host, "--roots", "r0"][..], &[host, "--roots", "r0", "--dry-run"]] {
            let output = home.install(args);
            assert_eq!(output.status.code(), Some(1), "{host} {args:?}: {}", text(&output));
            assert!(text(&output).contains("leads outside HOME"), "{host}: {}", text(&output));
        }
        assert_eq!(std::fs::read_to_string(&outside_file).expect("outside"), user_file(container), "{host}");
        assert_eq!(listing(&home.outside), BTreeSet::from(["config".to_owned()]), "{host}");
        assert!(std::fs::symlink_metadata(&file).expect("link").file_type().is_symlink(), "{host}: link kept");
    }

    // A directory on the way that links outside: nothing is created there either.
    let home = Home::new();
    std::os::unix::fs::symlink(&home.outside, home.home.join(".cursor")).expect("link the directory");
    let output = home.install(&["cursor", "--roots", "r0"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("leads outside HOME"), "{}", text(&output));
    assert!(listing(&home.outside).is_empty(), "{:?}", listing(&home.outside));

    // A link to a file inside HOME (a dotfiles checkout) is written through, and stays a link.
    let home = Home::new();
    let real = home.home.join("dotfiles/cursor-mcp.json");
    seed(&real, &user_file(Some("mcpServers")));
    let file = home.home.join(".cursor/mcp.json");
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    std::os::unix::fs::symlink("../dotfiles/cursor-mcp.json", &file).expect("link");
    let output = home.install(&["cursor", "--roots", "r1"]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(std::fs::symlink_metadata(&file).expect("link").file_type().is_symlink());
    let env = entries(&std::fs::read_to_string(&real).expect("real"), Some("mcpServers"));
    assert!(env.iter().any(|(name, env)| name == "fluxgit" && roots_of(env) == home.root("r1")), "{env:?}");
    assert_eq!(
        std::fs::read_to_string(sibling(&real, ".fluxgit-backup")).expect("backup"),
        user_file(Some("mcpServers"))
    );
}

#[test]
fn a_fifo_or_dev_zero_config_is_answered_with_an_error_within_5_seconds() {
    for (host, file, _) in HOSTS {
        let home = Home::new();
        let file = home.home.join(file);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        let status = Command::new("mkfifo").arg(&file).status().expect("mkfifo runs");
        assert!(status.success(), "mkfifo");
        for extra in [None, Some("--dry-run")] {
            let args: Vec<&OsStr> = [host, "--roots", "r0"].into_iter().chain(extra).map(OsStr::new).collect();
            let child = home.command(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
            let output = wait_within(child, Duration::from_secs(5), &format!("{host} on a FIFO"));
            assert_eq!(output.status.code(), Some(1), "{host}: {}", text(&output));
            assert!(text(&output).contains("a FIFO, not a regular file"), "{host}: {}", text(&output));
        }
        assert!(std::fs::symlink_metadata(&file).expect("fifo").file_type().is_fifo(), "{host}: FIFO kept");

        std::fs::remove_file(&file).expect("remove the FIFO");
        std::os::unix::fs::symlink("/dev/zero", &file).expect("link /dev/zero");
        let child = home
            .command(&[OsStr::new(host), OsStr::new("--roots"), OsStr::new("r0")])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let output = wait_within(child, Duration::from_secs(5), &format!("{host} on /dev/zero"));
        assert_eq!(output.status.code(), Some(1), "{host}: {}", text(&output));
        assert!(text(&output).contains("leads outside HOME, to /dev/zero"), "{host}: {}", text(&output));
    }
}

#[test]
fn a_read_only_config_is_refused_and_neither_replaced_nor_chmodded() {
    for (host, file, container) in HOSTS {
        let home = Home::new();
        let file = home.home.join(file);
        seed(&file, &user_file(container));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).expect("chmod 0444");
        let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&file).expect("meta"));

        let output = home.install(&[host, "--roots", "r0"]);
        assert_eq!(output.status.code(), Some(1), "{host}: {}", text(&output));
        assert!(text(&output).contains("read-only"), "{host}: {}", text(&output));
        let metadata = std::fs::metadata(&file).expect("meta");
        assert_eq!(metadata.permissions().mode() & 0o777, 0o444, "{host}: mode kept");
        assert_eq!(std::os::unix::fs::MetadataExt::ino(&metadata), inode, "{host}: the file was not replaced");
        assert_eq!(std::fs::read_to_string(&file).expect("file"), user_file(container), "{host}");
        let names = listing(file.parent().expect("parent"));
        assert!(names.iter().all(|name| !name.contains("fluxgit")), "{host}: {names:?}");
    }
}

/// The length of the longest common prefix and suffix of two texts, in bytes.
fn common_ends(a: &[u8], b: &[u8]) -> (usize, usize) {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let room = a.len().min(b.len()) - prefix;
    let suffix = a.iter().rev().zip(b.iter().rev()).take(room).take_while(|(x, y)| x == y).count();
    (prefix, suffix)
}

#[test]
fn crlf_and_a_byte_order_mark_are_kept_byte_for_byte_around_the_edited_entry() {
    for (host, file, container) in HOSTS {
        let home = Home::new();
        let file = home.home.join(file);
        let before = format!("\u{feff}{}", user_file(container).replace('\n', "\r\n"));
        seed(&file, &before);

        let output = home.install(&[host, "--roots", "r0"]);
        assert!(output.status.success(), "{host}: {}", text(&output));
        let after = std::fs::read_to_string(&file).expect("file");
        assert!(after.starts_with('\u{feff}'), "{host}: the byte order mark is kept:\n{after:?}");
        let lone = after.match_indices('\n').filter(|(at, _)| !after[..*at].ends_with('\r')).count();
        assert_eq!(lone, 0, "{host}: every line ends with \\r\\n:\n{after:?}");
        // The old text is one piece before the new entry and one after it.
        let (prefix, suffix) = common_ends(before.as_bytes(), after.as_bytes());
        assert!(prefix + suffix >= before.len(), "{host}: only the entry is new:\n{before:?}\n{after:?}");
        let env = entries(&after, container);
        assert!(env.iter().any(|(name, env)| name == "fluxgit" && roots_of(env) == home.root("r0")), "{host}");

        // Changing the entry keeps the rest again; running twice changes nothing.
        let changed = home.install(&[host, "--roots", "r1"]);
        assert!(changed.status.success(), "{host}: {}", text(&changed));
        let again = std::fs::read_to_string(&file).expect("file");
        assert!(again.starts_with('\u{feff}') && !again.replace("\r\n", "").contains('\n'), "{host}: {again:?}");
        let same = home.install(&[host, "--roots", "r1"]);
        assert!(text(&same).contains("nothing changed"), "{host}: {}", text(&same));
        assert_eq!(std::fs::read_to_string(&file).expect("file"), again, "{host}");
    }
}

#[test]
fn a_root_that_is_not_utf8_is_refused_by_name() {
    let home = Home::new();
    let root = home.home.join(OsStr::from_bytes(b"caf\xe9"));
    std::fs::create_dir(&root).expect("a directory whose name is Latin-1");
    let output = home.command(&[OsStr::new("cursor"), OsStr::new("--roots"), root.as_os_str()]).output().expect("run");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("caf\u{fffd}: the path is not valid UTF-8"), "{}", text(&output));
    assert!(!home.home.join(".cursor").exists(), "nothing was written");

    // A missing root is refused for a real install; --dry-run warns about it and goes on.
    let missing = home.install(&["cursor", "--roots", "not-yet"]);
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing));
    let dry = home.install(&["cursor", "--roots", "not-yet", "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(
        text(&dry).contains("warning: --roots") && text(&dry).contains("not-yet: does not exist"),
        "{}",
        text(&dry)
    );
    assert!(!home.home.join(".cursor").exists(), "--dry-run wrote nothing");
}

#[test]
fn concurrent_installs_lose_no_entry_and_readers_never_see_a_mixed_file() {
    const ROUNDS: usize = 40;
    const WRITERS: usize = 4;
    for round in 0..ROUNDS {
        let (host, file, container) = if round % 2 == 0 { HOSTS[2] } else { HOSTS[4] };
        let home = Home::new();
        let file = home.home.join(file);
        seed(&file, &user_file(container));
        // Rounds 0 and 1 of every 4: each writer adds a server of its own name. Rounds 2 and 3: all write
        // `fluxgit`, each with other roots, and one of them must be there whole.
        let same_name = round % 4 >= 2;
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let (file, done) = (file.clone(), done.clone());
            std::thread::spawn(move || {
                let mut reads = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let text = std::fs::read_to_string(&file).expect("the file is always there");
                    entries(&text, container);
                    reads += 1;
                }
                reads
            })
        };
        let children: Vec<Child> = (0..WRITERS)
            .map(|writer| {
                let name = if same_name { "fluxgit".to_owned() } else { format!("fluxgit-{writer}") };
                let root = format!("r{writer}");
                let args: Vec<&OsStr> = [host, "--roots", &root, "--name", &name].into_iter().map(OsStr::new).collect();
                home.command(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn")
            })
            .collect();
        for child in children {
            let output = wait_within(child, Duration::from_secs(60), "a concurrent install");
            assert!(output.status.success(), "round {round}: {}", text(&output));
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let reads = reader.join().expect("every read parsed and kept the user's settings");
        assert!(reads > 0);

        let servers = entries(&std::fs::read_to_string(&file).expect("file"), container);
        let writers: Vec<String> = (0..WRITERS).map(|writer| home.root(&format!("r{writer}"))).collect();
        if same_name {
            let names: Vec<&str> = servers.iter().map(|(name, _)| name.as_str()).collect();
            assert_eq!(names, ["other", "fluxgit"], "round {round}");
            assert!(writers.iter().any(|roots| roots == roots_of(&servers[1].1)), "round {round}: {servers:?}");
        } else {
            for (writer, roots) in writers.iter().enumerate() {
                let name = format!("fluxgit-{writer}");
                let found = servers.iter().find(|(server, _)| *server == name);
                assert_eq!(found.map(|(_, env)| roots_of(env)), Some(roots.as_str()), "round {round}: {servers:?}");
            }
            assert_eq!(servers.len(), WRITERS + 1, "round {round}: {servers:?}");
        }
        let names = listing(file.parent().expect("parent"));
        let expected = [file.file_name(), sibling(&file, ".fluxgit-backup").file_name()]
            .map(|name| name.expect("name").to_string_lossy().into_owned());
        assert_eq!(names, BTreeSet::from(expected), "round {round}: no stray file");
    }
}

/// Spawns `install` stopped by the debug seam at `stage`, waits until it says so, and returns it.
fn stalled_install(home: &Home, args: &[&str], stage: &str) -> Child {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    let mut child = home
        .command(&args)
        .env("FLUXGIT_INSTALL_TEST_STALL", stage)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("piped");
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let _ = sender.send(line.unwrap_or_default());
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match receiver.recv_timeout(left) {
            Ok(line) if line.contains(&format!("stalled at {stage}")) => return child,
            Ok(_) => {}
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "install never stalled at {stage} (the seam is in debug builds only: run the tests unoptimised)"
                );
            }
        }
    }
}

#[test]
fn kill_9_in_the_middle_of_a_write_leaves_the_old_file_and_no_stray_after_the_next_run() {
    let home = Home::new();
    let file = home.home.join(".cursor/mcp.json");
    let dir = file.parent().expect("parent").to_path_buf();
    seed(&file, &user_file(Some("mcpServers")));
    let clean = || {
        let expected = ["mcp.json", "mcp.json.fluxgit-backup"].map(str::to_owned);
        let names = listing(&dir);
        assert!(names.iter().all(|name| expected.contains(name)), "stray files: {names:?}");
    };
    // At each seam: the temporary file is there, the file is still the old one, and a backup is whole.
    for round in 0..20 {
        let stage = if round % 2 == 0 { "backup" } else { "config" };
        let old = std::fs::read_to_string(&file).expect("file");
        let root = format!("r{}", round % 3);
        let mut child = stalled_install(&home, &["cursor", "--roots", &root], stage);
        let temporary = if stage == "backup" { ".mcp.json.fluxgit-backup-tmp-" } else { ".mcp.json.fluxgit-tmp-" };
        let stray = format!("{temporary}{}", child.id());
        assert!(listing(&dir).contains(&stray), "round {round}: {stray} while stalled: {:?}", listing(&dir));
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        assert_eq!(std::fs::read_to_string(&file).expect("file"), old, "round {round}: the old file, whole");
        if stage == "config" {
            assert_eq!(std::fs::read_to_string(sibling(&file, ".fluxgit-backup")).expect("backup"), old);
        }
        let next = home.install(&["cursor", "--roots", &root]);
        assert!(next.status.success(), "round {round}: {}", text(&next));
        clean();
        let servers = entries(&std::fs::read_to_string(&file).expect("file"), Some("mcpServers"));
        assert!(servers.iter().any(|(name, env)| name == "fluxgit" && roots_of(env) == home.root(&root)));
        assert_eq!(std::fs::read_to_string(sibling(&file, ".fluxgit-backup")).expect("backup"), old);
    }

    // At arbitrary moments, on a file of 1 MiB that takes a while: the file is always whole, old or new.
    let mut big = serde_json::from_str::<Value>(&user_file(Some("mcpServers"))).expect("JSON");
    big["zzz"] = Value::from(vec!["x".repeat(1000); 1000]);
    let big = serde_json::to_string_pretty(&big).expect("JSON");
    std::fs::write(&file, &big).expect("seed");
    // How long a whole install takes here: the kills are spread from its start to three times as long.
    let start = Instant::now();
    let whole = home.install(&["cursor", "--roots", "r3"]);
    assert!(whole.status.success(), "{}", text(&whole));
    let span = start.elapsed();
    let mut roots_seen = BTreeSet::new();
    for round in 0..30_u32 {
        let root = format!("r{}", round % 3);
        let args: Vec<&OsStr> = ["cursor", "--roots", root.as_str()].into_iter().map(OsStr::new).collect();
        let mut child = home.command(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn");
        std::thread::sleep(span * round / 10);
        let _ = child.kill();
        child.wait().expect("reaped");
        let text = std::fs::read_to_string(&file).expect("file");
        let servers = entries(&text, Some("mcpServers"));
        let json: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(json["zzz"].as_array().map(Vec::len), Some(1000), "round {round}: the rest is whole");
        roots_seen
            .extend(servers.iter().filter(|(name, _)| name == "fluxgit").map(|(_, env)| roots_of(env).to_owned()));
        if let Ok(backup) = std::fs::read_to_string(sibling(&file, ".fluxgit-backup")) {
            entries(&backup, Some("mcpServers"));
        }
    }
    let next = home.install(&["cursor", "--roots", "r0", "r1"]);
    assert!(next.status.success(), "{}", text(&next));
    clean();
    let servers = entries(&std::fs::read_to_string(&file).expect("file"), Some("mcpServers"));
    let both = format!("{}:{}", home.root("r0"), home.root("r1"));
    assert!(servers.iter().any(|(name, env)| name == "fluxgit" && roots_of(env) == both), "{servers:?}");
    roots_seen.remove(&home.root("r3"));
    assert!(!roots_seen.is_empty(), "no killed install ever finished: the kills came too early to mean anything");
}
