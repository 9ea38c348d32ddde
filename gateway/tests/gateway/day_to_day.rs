//! A person's day to day with the real binary: `open` reads the serving gateway's page address, the service
//! files pass their managers' checks, and a completed proposal tells the git commands that undo it.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{Sandbox, body, code_of, git};

fn page_file(sandbox: &Sandbox) -> std::path::PathBuf {
    sandbox.run_dir.join("gateway").join("page-address")
}

#[test]
fn open_prints_the_page_address_from_a_private_file_removed_on_exit() {
    let sandbox = Sandbox::new();
    let (ok, _, stderr) = sandbox.cli(&["open"]);
    assert!(!ok && stderr.contains("no gateway is serving"), "{stderr}");

    let mut gateway = sandbox.serve(&[]);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::symlink_metadata(page_file(&sandbox)).expect("the page file").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // No DISPLAY in the sandbox's environment: `open` prints the address.
    let (ok, stdout, stderr) = sandbox.cli(&["open"]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, format!("{}\n", gateway.page));

    // A SIGTERM ends serving; the file goes with it.
    let pid = gateway.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().expect("kill").success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while gateway.child.try_wait().expect("wait").is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!page_file(&sandbox).exists(), "the page file outlived its gateway");
    let (ok, _, stderr) = sandbox.cli(&["open"]);
    assert!(!ok && stderr.contains("no gateway is serving"), "{stderr}");
}

#[test]
fn open_refuses_a_planted_symlink_or_fifo_and_names_no_page() {
    let sandbox = Sandbox::new();
    let mut gateway = sandbox
        .command(&["serve", "--addr", "127.0.0.1:0", "--no-page"], &[])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve --no-page");
    let mut line = String::new();
    BufReader::new(gateway.stdout.take().expect("stdout")).read_line(&mut line).expect("handshake line");
    assert!(line.starts_with("FLUXGIT_MCP_HANDSHAKE_ADDR="), "{line}");
    let (ok, _, stderr) = sandbox.cli(&["open"]);
    assert!(!ok && stderr.contains("serves no approval page"), "{stderr}");

    // Something planted in its place: a symlink to a file holding a page-shaped address, then a FIFO.
    let decoy = sandbox.home.join("decoy");
    std::fs::write(&decoy, format!("http://127.0.0.1:1/{}/\n", "ab".repeat(32))).expect("decoy");
    std::os::unix::fs::symlink(&decoy, page_file(&sandbox)).expect("plant a symlink");
    let (ok, stdout, stderr) = sandbox.cli(&["open"]);
    assert!(!ok && stdout.is_empty() && stderr.contains("without following a link"), "{stdout}{stderr}");
    std::fs::remove_file(page_file(&sandbox)).expect("remove the symlink");
    assert!(Command::new("mkfifo").arg(page_file(&sandbox)).status().expect("mkfifo").success());
    let started = Instant::now();
    let (ok, _, stderr) = sandbox.cli(&["open"]);
    assert!(!ok && stderr.contains("not a regular file"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(5), "a FIFO must not block open");
    let _ = gateway.kill();
    let _ = gateway.wait();
}

#[test]
fn open_with_a_desktop_runs_the_opener_with_the_address() {
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&[]);
    let bin = sandbox.home.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let opened = sandbox.home.join("opened.txt");
    let script = bin.join("xdg-open");
    std::fs::write(&script, format!("#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n", opened.display())).expect("script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let output = sandbox
        .command(&["open"], &[("DISPLAY", ":99"), ("PATH", path.as_str())])
        .stdin(Stdio::null())
        .output()
        .expect("run open");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!stdout.contains(&gateway.page), "the secret stays off the terminal when a browser opens it");
    assert_eq!(std::fs::read_to_string(&opened).expect("the opener ran"), format!("{}\n", gateway.page));
}

/// `install-service --no-enable` with HOME in the sandbox; the unit's text.
fn install_unit(sandbox: &Sandbox, roots: &[&Path]) -> String {
    let mut args =
        vec!["install-service".to_owned(), "--no-enable".to_owned(), "--addr".to_owned(), "127.0.0.1:7431".to_owned()];
    if !roots.is_empty() {
        args.push("--roots".to_owned());
        args.extend(roots.iter().map(|root| root.display().to_string()));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = sandbox.command(&args, &[]).stdin(Stdio::null()).output().expect("install-service");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("systemctl --user daemon-reload && systemctl --user enable --now"), "{stdout}");
    let unit = sandbox.home.join(".config/systemd/user/fluxgit-gateway.service");
    std::fs::read_to_string(unit).expect("the unit was written")
}

#[test]
fn install_service_writes_a_unit_that_systemd_analyze_verifies() {
    let sandbox = Sandbox::new();
    let odd = sandbox.root.join("with space $HOME %h");
    std::fs::create_dir_all(&odd).expect("odd root");
    let unit = install_unit(&sandbox, &[&sandbox.root, &odd]);
    assert!(
        unit.contains(&format!(
            "ExecStart=\"{}\" serve --addr \"127.0.0.1:7431\"",
            env!("CARGO_BIN_EXE_fluxgit-gateway")
        )),
        "{unit}"
    );
    assert!(unit.contains(&format!("\"FLUXGIT_RUN_DIR={}\"", sandbox.run_dir.display())), "{unit}");
    assert!(unit.contains("with space $HOME %%h\""), "{unit}");

    let runtime = tempfile::tempdir().expect("runtime dir");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(runtime.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod 0700");
    let path = sandbox.home.join(".config/systemd/user/fluxgit-gateway.service");
    let output = Command::new("systemd-analyze")
        .args(["verify", "--user"])
        .arg(&path)
        .env("XDG_RUNTIME_DIR", runtime.path())
        .env("HOME", &sandbox.home)
        .output()
        .expect("run systemd-analyze (a test dependency)");
    let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success() && !said.contains("fluxgit-gateway.service:"), "systemd-analyze: {said}\n{unit}");

    let (ok, stdout, stderr) = sandbox.cli(&["uninstall-service"]);
    assert!(ok && stdout.contains("removed"), "{stdout}{stderr}");
    assert!(!path.exists());
    let (ok, stdout, _) = sandbox.cli(&["uninstall-service"]);
    assert!(ok && stdout.contains("nothing to remove"), "{stdout}");
}

#[test]
fn install_service_replaces_a_planted_symlink_and_refuses_a_newline_root() {
    let sandbox = Sandbox::new();
    let dir = sandbox.home.join(".config/systemd/user");
    std::fs::create_dir_all(&dir).expect("unit dir");
    let target = sandbox.home.join("precious");
    std::fs::write(&target, "keep me").expect("target");
    std::os::unix::fs::symlink(&target, dir.join("fluxgit-gateway.service")).expect("plant");
    let unit = install_unit(&sandbox, &[]);
    assert!(unit.contains("[Service]"));
    assert_eq!(std::fs::read_to_string(&target).expect("target"), "keep me", "the symlink's target was written");
    assert!(!std::fs::symlink_metadata(dir.join("fluxgit-gateway.service")).expect("unit").is_symlink());

    let bad = sandbox.root.join("line\nExecStartPre=evil");
    std::fs::create_dir_all(&bad).expect("newline root");
    let output = sandbox
        .command(&["install-service", "--no-enable", "--roots", bad.to_str().expect("utf-8")], &[])
        .stdin(Stdio::null())
        .output()
        .expect("install-service");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("control character"), "{stderr}");
    let kept = std::fs::read_to_string(dir.join("fluxgit-gateway.service")).expect("unit");
    assert_eq!(kept, unit, "a refused install leaves the earlier unit as it was");
}

#[test]
fn completed_proposal_result_lists_the_git_commands_that_undo_it() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("undone");
    let refs_before = git(&repo, &["for-each-ref", "--format=%(objectname) %(refname)"]);
    let head_before = git(&repo, &["symbolic-ref", "HEAD"]);
    let gateway = sandbox.serve(&[]);
    let (code, answer) = gateway.propose(&body(
        "undo-branch",
        "a",
        "branch",
        &repo,
        json!({ "name": "feature/undo", "startPoint": "topic", "checkout": true }),
    ));
    assert_eq!(code, 202, "{answer}");
    let (_, card, _) = sandbox.cli(&["show", "undo-branch"]);
    let (ok, text) = sandbox.approve_on_pty("undo-branch", &[code_of(&card).as_str()]);
    assert!(ok, "{text}");
    let status = gateway.wait_terminal("undo-branch");
    assert_eq!(status["status"], "completed", "{status}");
    let topic = git(&repo, &["rev-parse", "topic"]).trim().to_owned();
    let undo: Vec<String> =
        serde_json::from_value(status["result"]["undo"].clone()).expect("undo is a list of strings");
    assert_eq!(undo, ["git switch main".to_owned(), format!("git update-ref -d refs/heads/feature/undo {topic}")]);

    // Run them as an agent or a person would: the refs and HEAD are as they were.
    for command in &undo {
        let output = Command::new("sh").arg("-c").arg(command).current_dir(&repo).output().expect("sh");
        assert!(output.status.success(), "{command}: {}", String::from_utf8_lossy(&output.stderr));
    }
    let refs_after: BTreeMap<String, String> = git(&repo, &["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .filter(|line| !line.starts_with("refs/fluxgit/"))
        .filter_map(|line| line.split_once(' ').map(|(name, sha)| (name.to_owned(), sha.to_owned())))
        .collect();
    let refs_before: BTreeMap<String, String> = refs_before
        .lines()
        .filter_map(|line| line.split_once(' ').map(|(sha, name)| (name.to_owned(), sha.to_owned())))
        .collect();
    assert_eq!(refs_after, refs_before);
    assert_eq!(git(&repo, &["symbolic-ref", "HEAD"]), head_before);
}
