//! `install HOST` on a temporary HOME: the entry lands in the file each host reads, the rest of the file is kept,
//! a second run changes nothing, a broken file is left alone and `--dry-run` writes nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::BIN;

/// A temporary HOME with two directories to allow.
struct Home {
    dir: tempfile::TempDir,
    roots: [PathBuf; 2],
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().expect("tempdir");
        let roots = [dir.path().join("src"), dir.path().join("work tree")];
        for root in &roots {
            std::fs::create_dir_all(root).expect("mkdir root");
        }
        Home { dir, roots }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `fluxgit-mcp-sidecar install ARGS` with only HOME and PATH set (PATH holds no `claude`, unless `path`).
    fn install(&self, args: &[&str], path: Option<&Path>) -> Output {
        let mut command = Command::new(BIN);
        command
            .arg("install")
            .args(args)
            .env_clear()
            .env("HOME", self.path())
            .env("PATH", path.unwrap_or(Path::new("/nonexistent")))
            .current_dir(self.path());
        command.output().expect("run install")
    }

    /// `install HOST --roots src "work tree"` (relative roots: made absolute and canonical).
    fn install_with_roots(&self, host: &str, extra: &[&str]) -> Output {
        let mut args = vec![host, "--roots", "src", "work tree"];
        args.extend_from_slice(extra);
        self.install(&args, None)
    }

    /// The roots as the entry must name them: canonical, joined with `:`.
    fn joined_roots(&self) -> String {
        let canonical: Vec<PathBuf> =
            self.roots.iter().map(|root| root.canonicalize().expect("canonical root")).collect();
        std::env::join_paths(canonical).expect("joinable").into_string().expect("utf-8")
    }
}

fn binary() -> String {
    Path::new(BIN).canonicalize().expect("canonical binary").display().to_string()
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("seed the file");
}

/// A JSON host: seeds `file` (relative to HOME) with another server and unrelated keys in a formatting of its own,
/// installs, and checks the entry, what was kept, the backup and that a second run changes nothing.
fn check_json_host(host: &str, file: &str, container: &str, typed: bool, comment: &str) {
    let home = Home::new();
    let file = home.path().join(file);
    let seed = format!(
        "{comment}{{\n    \"theme\": \"dark\",\n    \"{container}\": {{\n        \"other\": {{ \"command\": \"/usr/bin/other\", \
         \"args\": [\"--x\"] }}\n    }},\n    \"zzz\": [1, 2]\n}}\n"
    );
    write(&file, &seed);
    let output = home.install_with_roots(host, &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains(&format!("added {container}.fluxgit")), "{}", text(&output));
    let after = std::fs::read_to_string(&file).expect("the file is still there");
    let json: Value = serde_json::from_str(after.strip_prefix(comment).expect("the comment is kept first"))
        .unwrap_or_else(|error| panic!("{host}: the file parses ({error}):\n{after}"));
    let entry = &json[container]["fluxgit"];
    assert_eq!(entry["command"], binary(), "{after}");
    assert_eq!(entry["args"], serde_json::json!([]));
    assert_eq!(entry["env"]["FLUXGIT_MCP_ALLOWED_ROOTS"], home.joined_roots());
    assert_eq!(entry.get("type").and_then(Value::as_str), typed.then_some("stdio"), "{after}");
    assert_eq!(json[container]["other"], serde_json::json!({"command": "/usr/bin/other", "args": ["--x"]}));
    assert_eq!(json["theme"], "dark");
    assert_eq!(json["zzz"], serde_json::json!([1, 2]));
    // The other lines are kept byte for byte, in their order and indentation.
    let kept_head = format!(
        "{comment}{{\n    \"theme\": \"dark\",\n    \"{container}\": {{\n        \"other\": {{ \"command\": \"/usr/bin/other\", \
         \"args\": [\"--x\"] }},\n        \"fluxgit\": {{\n            "
    );
    assert!(after.starts_with(&kept_head), "{after}");
    assert!(after.ends_with("\n    },\n    \"zzz\": [1, 2]\n}\n"), "{after}");
    let keys: Vec<&String> = json.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["theme", container, "zzz"]);
    let mut backup = file.clone().into_os_string();
    backup.push(".fluxgit-backup");
    assert_eq!(std::fs::read_to_string(&backup).expect("a backup"), seed);

    let again = home.install_with_roots(host, &[]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(text(&again).contains("nothing changed"), "{}", text(&again));
    assert_eq!(std::fs::read_to_string(&file).expect("file"), after, "a second run changes nothing");

    // A broken file is left as it was, with the place of the problem.
    let broken = format!("{comment}{{\n  \"{container}\": {{\n    \"other\": {{}}\n  \n");
    write(&file, &broken);
    let refused = home.install_with_roots(host, &[]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(text(&refused).contains("not valid JSON at line"), "{}", text(&refused));
    assert!(text(&refused).contains("left as it was"), "{}", text(&refused));
    assert_eq!(std::fs::read_to_string(&file).expect("file"), broken);

    // --dry-run prints the result and writes nothing.
    std::fs::remove_file(&file).expect("remove");
    let dry = home.install_with_roots(host, &["--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(text(&dry).contains("nothing written"), "{}", text(&dry));
    assert!(text(&dry).contains(&format!("\"{container}\": {{\n    \"fluxgit\": {{")), "{}", text(&dry));
    assert!(!file.exists(), "--dry-run wrote {}", file.display());
}

#[test]
fn claude_desktop_reads_its_xdg_config_file() {
    check_json_host("claude-desktop", ".config/Claude/claude_desktop_config.json", "mcpServers", false, "");
}

#[test]
fn cursor_reads_its_global_mcp_json() {
    check_json_host("cursor", ".cursor/mcp.json", "mcpServers", false, "");
}

#[test]
fn vscode_reads_servers_of_its_user_profile_and_keeps_comments() {
    check_json_host("vscode", ".config/Code/User/mcp.json", "servers", true, "// my servers\n");
}

#[test]
fn gemini_reads_its_user_settings() {
    check_json_host("gemini", ".gemini/settings.json", "mcpServers", false, "");
}

#[test]
fn claude_code_without_its_cli_writes_the_user_scope_of_claude_json() {
    check_json_host("claude-code", ".claude.json", "mcpServers", true, "");
}

#[test]
fn claude_code_with_its_cli_on_the_path_adds_through_it() {
    let home = Home::new();
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir bin");
    let log = home.path().join("claude.log");
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> '{}'\necho --- >> '{}'\n",
        log.display(),
        log.display()
    );
    let claude = bin.join("claude");
    std::fs::write(&claude, script).expect("write the fake claude");
    let mut permissions = std::fs::metadata(&claude).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&claude, permissions).expect("chmod");
    let path = std::env::join_paths([bin.as_path(), Path::new("/usr/bin"), Path::new("/bin")]).expect("PATH");

    let dry = home.install(&["claude-code", "--roots", "src", "--dry-run"], Some(Path::new(&path)));
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(text(&dry).contains("would run:"), "{}", text(&dry));
    assert!(!log.exists(), "--dry-run ran claude");

    let output = home.install(&["claude-code", "--roots", "src"], Some(Path::new(&path)));
    assert!(output.status.success(), "{}", text(&output));
    let calls = std::fs::read_to_string(&log).expect("claude was run");
    let words: Vec<&str> = calls.lines().collect();
    assert_eq!(words[..5], ["mcp", "add-json", "--scope", "user", "fluxgit"], "{calls}");
    let entry: Value = serde_json::from_str(words[5]).expect("the entry is JSON");
    assert_eq!(entry["type"], "stdio");
    assert_eq!(entry["command"], binary());
    let root = home.roots[0].canonicalize().expect("canonical").display().to_string();
    assert_eq!(entry["env"]["FLUXGIT_MCP_ALLOWED_ROOTS"], root);
    assert!(!home.path().join(".claude.json").exists(), "the CLI, not install, writes the file");
}

#[test]
fn codex_gets_a_toml_table_and_keeps_the_rest() {
    let home = Home::new();
    let file = home.path().join(".codex/config.toml");
    let seed = "# Codex settings\nmodel = \"o3\"   # pinned\n\n[mcp_servers.other]\ncommand = \"/usr/bin/other\"\nargs = [\"--x\"]\n\n[profiles.fast]\nmodel = \"o4-mini\"\n";
    write(&file, seed);
    let output = home.install_with_roots("codex", &["--gateway", "127.0.0.1:7777"]);
    assert!(output.status.success(), "{}", text(&output));
    let after = std::fs::read_to_string(&file).expect("file");
    // The new table goes beside its sibling; every other byte stays as it was.
    let (start, end) = (after.find("[mcp_servers.fluxgit]").expect("the table"), after.find("[profiles.fast]"));
    let rest = format!("{}{}", &after[..start], &after[end.expect("kept")..]);
    assert_eq!(rest, seed, "the old text is kept as it was:\n{after}");
    let document: toml_edit::DocumentMut = after.parse().expect("the file parses as TOML");
    let entry = &document["mcp_servers"]["fluxgit"];
    assert_eq!(entry["command"].as_str(), Some(binary().as_str()));
    assert_eq!(entry["args"].as_array().map(toml_edit::Array::len), Some(0));
    assert_eq!(entry["env"]["FLUXGIT_MCP_ALLOWED_ROOTS"].as_str(), Some(home.joined_roots().as_str()));
    assert_eq!(entry["env"]["FLUXGIT_MCP_HANDSHAKE_ADDR"].as_str(), Some("127.0.0.1:7777"));
    assert_eq!(document["mcp_servers"]["other"]["command"].as_str(), Some("/usr/bin/other"));
    assert_eq!(document["profiles"]["fast"]["model"].as_str(), Some("o4-mini"));

    let again = home.install_with_roots("codex", &["--gateway", "127.0.0.1:7777"]);
    assert!(text(&again).contains("nothing changed"), "{}", text(&again));
    assert_eq!(std::fs::read_to_string(&file).expect("file"), after);

    // The entry, as written, starts a server that allows exactly those roots.
    let env_var = |name: &str| entry["env"][name].as_str().expect("set").to_owned();
    let doctor = Command::new(entry["command"].as_str().expect("command"))
        .arg("doctor")
        .env_clear()
        .env("HOME", home.path())
        .env("FLUXGIT_RUN_DIR", home.path().join("run"))
        .env("FLUXGIT_MCP_ALLOWED_ROOTS", env_var("FLUXGIT_MCP_ALLOWED_ROOTS"))
        .output()
        .expect("run doctor");
    let report = text(&doctor);
    assert!(report.contains("allowed roots (from FLUXGIT_MCP_ALLOWED_ROOTS)"), "{report}");
    for root in &home.roots {
        assert!(report.contains(&format!("  {}\n", root.canonicalize().expect("canonical").display())), "{report}");
    }

    let broken = "[mcp_servers.other\ncommand = 1\n";
    write(&file, broken);
    let refused = home.install_with_roots("codex", &[]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(text(&refused).contains("not valid TOML"), "{}", text(&refused));
    assert_eq!(std::fs::read_to_string(&file).expect("file"), broken);
}

#[test]
fn codex_honours_codex_home_and_bad_arguments_are_refused() {
    let home = Home::new();
    let codex_home = home.path().join("elsewhere");
    let output = Command::new(BIN)
        .args(["install", "codex", "--dry-run"])
        .env_clear()
        .env("HOME", home.path())
        .env("CODEX_HOME", &codex_home)
        .output()
        .expect("run install");
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains(&format!("{}/config.toml", codex_home.display())), "{}", text(&output));
    assert!(text(&output).contains("no --roots"), "{}", text(&output));

    let missing = home.install(&["cursor", "--roots", "does-not-exist"], None);
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing).contains("--roots"), "{}", text(&missing));
    let remote = home.install(&["cursor", "--gateway", "example.com:80"], None);
    assert_eq!(remote.status.code(), Some(1));
    assert!(text(&remote).contains("--gateway"), "{}", text(&remote));
    let unknown = home.install(&["notepad"], None);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    assert!(!home.path().join(".cursor").exists(), "refused runs write nothing");
}

#[test]
fn server_json_lists_the_wheel_npm_package_and_bundle_valid_against_the_registry_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |path: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(root.join(path)).expect(path)).expect("JSON")
    };
    let server = read("server.json");
    // The registry's published schema (2025-12-11), kept in packaging/ so that this test needs no network.
    let schema = read("packaging/server.schema.json");
    assert_eq!(server["$schema"], schema["$id"]);
    let validator = jsonschema::options().should_validate_formats(true).build(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator.iter_errors(&server).map(|error| error.to_string()).collect();
    assert!(errors.is_empty(), "server.json is not valid against the registry schema: {errors:?}");
    let name = server["name"].as_str().expect("name");
    let (namespace, server_name) = name.split_once('/').expect("one slash");
    assert!(namespace.starts_with("io.github.") && !server_name.contains('/'), "{name}");
    // PyPI's ownership marker is a visible `mcp-name:` line in the README the package carries; npm's is mcpName.
    for readme in ["README.md", "packaging/python/README.md", "packaging/npm/fluxgit-mcp/README.md"] {
        let text = std::fs::read_to_string(root.join(readme)).expect("README");
        assert!(text.lines().any(|line| line == format!("mcp-name: {name}")), "{readme} names {name} visibly");
    }
    assert_eq!(read("packaging/npm/fluxgit-mcp/package.json")["mcpName"], name);
    assert_eq!(server["version"], env!("CARGO_PKG_VERSION"));
    let packages = server["packages"].as_array().expect("packages");
    let kinds: Vec<(&str, &str)> = packages
        .iter()
        .map(|package| (package["registryType"].as_str().expect("type"), package["identifier"].as_str().expect("id")))
        .collect();
    let bundle = format!(
        "https://github.com/fluxgit/fluxgit-mcp/releases/download/v{0}/fluxgit-mcp-{0}-linux-x64.mcpb",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(
        kinds,
        [
            ("pypi", fluxgit_mcp_sidecar::install::PYPI_PACKAGE),
            ("npm", fluxgit_mcp_sidecar::install::NPM_PACKAGE),
            ("mcpb", bundle.as_str())
        ]
    );
    assert!(kinds.iter().all(|(_, identifier)| *identifier != env!("CARGO_PKG_NAME")), "never the peer's name");
    for package in packages {
        assert_eq!(package["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(package["transport"], serde_json::json!({"type": "stdio"}));
        if package["registryType"] == "mcpb" {
            let sha = package["fileSha256"].as_str().expect("an MCPB package carries its sha-256");
            assert!(sha.len() == 64 && sha.bytes().all(|byte| byte.is_ascii_hexdigit()), "{sha}");
            continue;
        }
        let variables: Vec<&str> = package["environmentVariables"]
            .as_array()
            .expect("variables")
            .iter()
            .filter_map(|variable| variable["name"].as_str())
            .collect();
        assert_eq!(
            variables,
            [fluxgit_mcp_sidecar::config::ALLOWED_ROOTS_VAR, fluxgit_mcp_sidecar::config::GATEWAY_ADDR_VARS[0]]
        );
    }
    // A schema-invalid server.json is caught: the check can fail.
    let mut broken = server.clone();
    broken["packages"][0]["version"] = serde_json::json!("latest");
    assert!(!validator.is_valid(&broken), "the registry refuses version \"latest\"");
}

#[test]
fn runner_npx_writes_the_package_runner_form_and_a_plain_install_puts_the_path_back() {
    let home = Home::new();
    let output = home.install_with_roots("cursor", &["--runner", "npx"]);
    assert!(output.status.success(), "{}", text(&output));
    let file = home.path().join(".cursor/mcp.json");
    let read = || -> Value { serde_json::from_str(&std::fs::read_to_string(&file).expect("written")).expect("JSON") };
    let entry = read()["mcpServers"]["fluxgit"].clone();
    assert_eq!(entry["command"], "npx");
    assert_eq!(entry["args"], serde_json::json!(["-y", format!("fluxgit-mcp@{}", env!("CARGO_PKG_VERSION"))]));
    assert_eq!(entry["env"]["FLUXGIT_MCP_ALLOWED_ROOTS"], home.joined_roots());
    let again = home.install_with_roots("cursor", &["--runner", "npx"]);
    assert!(again.status.success() && text(&again).contains("already"), "{}", text(&again));
    let plain = home.install_with_roots("cursor", &[]);
    assert!(plain.status.success(), "{}", text(&plain));
    assert_eq!(read()["mcpServers"]["fluxgit"]["command"], binary());
    assert_eq!(read()["mcpServers"]["fluxgit"]["args"], serde_json::json!([]));
    let unknown = home.install(&["cursor", "--runner", "pipx"], None);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    let removal = home.install(&["cursor", "--remove", "--runner", "uvx"], None);
    assert_eq!(removal.status.code(), Some(2), "--runner is for adding: {}", text(&removal));
}

#[test]
fn roots_flag_serves_those_roots_and_belongs_to_no_subcommand() {
    let home = Home::new();
    let repo = home.roots[0].canonicalize().expect("root");
    let request = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "repo_brief", "arguments": {"repoPath": home.path().canonicalize().expect("home")}}});
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let mut child = Command::new(BIN)
        .args(["--roots", repo.to_str().expect("utf-8")])
        .env_clear()
        .env("HOME", home.path())
        .env("FLUXGIT_RUN_DIR", home.path().join("run"))
        .env("FLUXGIT_MCP_AUDIT_DISABLED", "1")
        .env("FLUXGIT_MCP_PRESENCE_DISABLED", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(stdin, "{initialize}\n{request}").expect("write");
    }
    let output = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let response: Value = serde_json::from_str(stdout.lines().nth(1).expect("two responses")).expect("JSON");
    // HOME is outside the one root given on the command line, so the call is refused and names that root.
    let refusal = response.to_string();
    assert!(refusal.contains("outside") && refusal.contains(repo.to_str().expect("utf-8")), "{refusal}");
    let mixed = Command::new(BIN).args(["doctor", "--roots", "/tmp"]).output().expect("run");
    assert_eq!(mixed.status.code(), Some(2), "{}", text(&mixed));
}
