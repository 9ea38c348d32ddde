//! The audit of every `tools/call` through the real binary (design.md#audit): entries with fingerprints only, responses
//! unchanged by the audit (even when an append fails), a torn last line cut and recorded by the next call,
//! start-up failing closed on a bad signing key, two processes appending to one ledger, `kill -9` at random moments
//! losing no entry of an answered call, and SIGTERM syncing what is pending.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::{exchange, initialize, run, sidecar, tool_call};

/// The sidecar with the audit on, writing `ledger`, optionally signing with `key`.
fn audited(root: &Path, home: &Path, ledger: &Path, key: Option<&Path>) -> Command {
    let mut command = sidecar(root, home, &[]);
    command.env_remove("FLUXGIT_MCP_AUDIT_DISABLED").env("FLUXGIT_MCP_AUDIT_LOG", ledger);
    if let Some(key) = key {
        command.env("FLUXGIT_MCP_AUDIT_SIGN_KEY", key);
    }
    command
}

fn input(messages: &[Value]) -> Vec<u8> {
    messages.iter().flat_map(|message| format!("{message}\n").into_bytes()).collect()
}

fn ledger_entries(ledger: &Path) -> Vec<Value> {
    std::fs::read_to_string(ledger)
        .expect("ledger")
        .lines()
        .map(|line| serde_json::from_str(line).expect("entry"))
        .collect()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("metadata").permissions().mode() & 0o777
}

#[test]
fn every_call_is_signed_into_the_ledger_and_responses_are_unchanged() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("tempdir");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let secret_name = "no.such.tool/with/a/path";
    let messages = [
        initialize("audit-test", "2.0.1"),
        tool_call(1, "repo.status", json!({"repoPath": repo})),
        tool_call(2, "repo.brief", json!({"repoPath": repo, "recentCommits": 3})),
        tool_call(3, secret_name, json!({})),
        tool_call(4, "repo.status", json!({"repoPath": "/definitely/not/here"})),
        tool_call(5, "repo.refs", json!({"repoPath": repo, "maxTokens": 1})),
    ];

    let key = home.path().join("keys").join("audit.pem");
    std::fs::create_dir(key.parent().expect("parent")).expect("mkdir");
    let (code, stdout, stderr) = run(&["audit-keygen", key.to_str().expect("utf-8")], &[]);
    assert_eq!(code, 0, "{stderr}");
    let public_key = PathBuf::from(format!("{}.pub.pem", key.display()));
    assert_eq!((mode(&key), mode(&public_key)), (0o600, 0o644));
    assert!(stdout.contains("key id:"), "{stdout}");
    let (code, _, stderr) = run(&["audit-keygen", key.to_str().expect("utf-8")], &[]);
    assert_eq!(code, 1, "never overwrites a key");
    assert!(stderr.contains("already exists"), "{stderr}");

    let plain = exchange(sidecar(&root, home.path(), &[]), input(&messages));
    let ledger = home.path().join("audit").join("mcp.jsonl");
    let audited_responses = exchange(audited(&root, home.path(), &ledger, Some(&key)), input(&messages));
    assert_eq!(audited_responses, plain, "the audit never changes a response");

    let entries = ledger_entries(&ledger);
    let tools: Vec<&str> = entries.iter().filter_map(|entry| entry["tool"].as_str()).collect();
    assert_eq!(tools, ["repo.status", "repo.brief", "unknown", "repo.status", "repo.refs"]);
    let results: Vec<&str> = entries.iter().filter_map(|entry| entry["result"].as_str()).collect();
    assert_eq!(results, ["success", "success", "error", "error", "error"]);
    let first = &entries[0];
    assert_eq!(first["session_id"], "audit-test");
    assert_eq!(first["repo_scope"], fluxgit_audit::repo_scope(&repo));
    assert_eq!(first["args_fingerprint"], fluxgit_audit::fingerprint(&json!({"repoPath": repo})));
    assert_eq!((first["sequence"].as_u64(), first["previousHash"].as_str()), (Some(1), Some("genesis")));
    assert_eq!((first["risk"].as_str(), first["approval"].as_str()), (Some("read"), Some("none")));
    assert_eq!((first["readOnly"].as_bool(), first["sidecarReadOnly"].as_bool()), (Some(true), Some(true)));
    assert_eq!(first["signatureVersion"], 3);
    assert_eq!(entries[3]["summary"], "repo.status: JSON-RPC error -32602 (not_found)");
    assert_eq!(entries[4]["summary"], "repo.refs: JSON-RPC error -32602", "schema violations carry no reason");
    let text = std::fs::read_to_string(&ledger).expect("ledger");
    for raw in [repo.as_str(), secret_name, "/definitely/not/here", root.to_str().expect("utf-8")] {
        assert!(!text.contains(raw), "{raw:?} appears verbatim in the ledger");
    }
    assert_eq!((mode(&ledger), mode(ledger.parent().expect("dir"))), (0o600, 0o700));

    let (code, stdout, stderr) = run(
        &[
            "verify-audit",
            ledger.to_str().expect("utf-8"),
            "--pubkey",
            public_key.to_str().expect("utf-8"),
            "--require-signed",
        ],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("entries:    5\n") && stdout.contains("signed:     5\n"), "{stdout}");
}

#[test]
fn a_failing_append_is_degraded_and_the_response_unchanged() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("tempdir");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    // A ledger whose last line is a JSON object but no chained entry: the chain cannot be continued, so every
    // append fails.
    let ledger = home.path().join("mcp.jsonl");
    std::fs::write(&ledger, b"{\"sequence\":1,\"note\":\"edited by hand\"}\n").expect("write");
    let before = std::fs::read(&ledger).expect("read");
    let messages = [initialize("degraded", "1"), tool_call(1, "repo.status", json!({"repoPath": repo}))];
    let plain = exchange(sidecar(&root, home.path(), &[]), input(&messages));

    let mut command = audited(&root, home.path(), &ledger, None);
    let output = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child.stdin.take().expect("stdin").write_all(&input(&messages))?;
            child.wait_with_output()
        })
        .expect("run");
    assert!(output.status.success());
    let responses: Vec<Value> =
        String::from_utf8_lossy(&output.stdout).lines().map(|line| serde_json::from_str(line).expect("json")).collect();
    assert_eq!(responses, plain);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("degraded") && stderr.contains("the last line is not a chained entry"), "{stderr}");
    assert_eq!(std::fs::read(&ledger).expect("read"), before, "nothing appended after a broken tail");
}

#[test]
fn a_torn_last_line_is_cut_and_recorded_and_the_next_calls_are_audited() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("tempdir");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let ledger = home.path().join("audit").join("mcp.jsonl");
    let messages = [initialize("torn", "1"), tool_call(1, "repo.status", json!({"repoPath": repo}))];
    exchange(audited(&root, home.path(), &ledger, None), input(&messages));
    // The disk filled up during the next append: its line is cut part-way.
    let whole = std::fs::read(&ledger).expect("read");
    let mut torn = whole.clone();
    torn.extend_from_slice(br#"{"approval":"none","args_fingerprint":"sha256:5e"#);
    std::fs::write(&ledger, &torn).expect("write");
    let (code, stdout, _) = run(&["verify-audit", ledger.to_str().expect("utf-8")], &[]);
    assert_eq!(code, 4, "a torn tail: {stdout}");

    let plain = exchange(sidecar(&root, home.path(), &[]), input(&messages));
    let responses = exchange(audited(&root, home.path(), &ledger, None), input(&messages));
    assert_eq!(responses, plain);
    let entries = ledger_entries(&ledger);
    let kinds: Vec<(&str, u64)> = entries
        .iter()
        .map(|entry| (entry["event_type"].as_str().unwrap_or(""), entry["sequence"].as_u64().unwrap_or(0)))
        .collect();
    assert_eq!(kinds, [("tool_call", 1), ("tail_repair", 2), ("tool_call", 3)]);
    assert_eq!(entries[1]["tornBytes"], torn.len() - whole.len());
    let (code, stdout, stderr) = run(&["verify-audit", ledger.to_str().expect("utf-8")], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("repairs:    1 torn tail cut and recorded (the newest at sequence 2"), "{stdout}");
}

/// A P-256 private key in PKCS#8 PEM: a valid key, but not Ed25519.
const P256_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQggdyDWjMx6Zjv/j01
mHhQC1jmO7T+GAm45WgT/jc0A5+hRANCAASd0L1Rz3DWaCx1OwyEzVb8X234Rp84
YIN/8b2ICMIizot4us0N/0FdTMEgRPK8hgjhcjBP8UPA84aeRBYBAAs4
-----END PRIVATE KEY-----
";

/// An X25519 private key in PKCS#8 PEM: the same size as an Ed25519 one, another algorithm.
const X25519_KEY: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VuBCIEIKhd4Wo5jk9KzEs/4lxA1VlZt1XcHG7fqviU2yFSHJ9C
-----END PRIVATE KEY-----
";

#[test]
fn a_bad_signing_key_fails_start_up_and_writes_nothing() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
    let root = fixture.root().canonicalize().expect("root");
    let home = tempfile::tempdir().expect("tempdir");
    let keys = home.path().join("keys");
    std::fs::create_dir(&keys).expect("mkdir");
    let write_key = |name: &str, content: &[u8], mode: u32| {
        let path = keys.join(name);
        std::fs::write(&path, content).expect("write key");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        path
    };
    let (good, _) = fluxgit_audit::generate_key_pair(&keys.join("good.pem")).expect("keygen");
    let good_pem = std::fs::read(keys.join("good.pem")).expect("read");
    let cases: Vec<(&str, PathBuf, &str)> = vec![
        ("empty variable", PathBuf::new(), "the key path is empty"),
        ("missing file", keys.join("absent.pem"), "does not exist"),
        ("group-readable", write_key("group.pem", &good_pem, 0o640), "accessible by group or others (mode 0640)"),
        ("world-readable", write_key("world.pem", &good_pem, 0o604), "accessible by group or others (mode 0604)"),
        ("oversized", write_key("big.pem", &vec![b'A'; 9000], 0o600), "larger than 8192 bytes"),
        ("not Ed25519 (P-256)", write_key("p256.pem", P256_KEY.as_bytes(), 0o600), "is not an Ed25519"),
        ("not Ed25519 (X25519)", write_key("x25519.pem", X25519_KEY.as_bytes(), 0o600), "is not an Ed25519"),
        ("not a key", write_key("text.pem", b"hello\n", 0o600), "is not an Ed25519"),
        ("a directory", keys.clone(), "is not a regular file"),
    ];
    let messages = [initialize("bad-key", "1"), tool_call(1, "repo.status", json!({"repoPath": fixture.path()}))];
    for (case, key, expected) in cases {
        let ledger = home.path().join(format!("ledger-{}.jsonl", case.replace(' ', "-")));
        let output = audited(&root, home.path(), &ledger, Some(&key))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write as _;
                // The server may exit before reading: a broken pipe is expected.
                let _ = child.stdin.take().expect("stdin").write_all(&input(&messages));
                child.wait_with_output()
            })
            .expect("run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{case}: must not start");
        assert!(output.stdout.is_empty(), "{case}: nothing served");
        assert!(
            stderr.contains("FLUXGIT_MCP_AUDIT_SIGN_KEY") && stderr.contains(expected),
            "{case}: expected {expected:?} in:\n{stderr}"
        );
        assert!(!ledger.exists(), "{case}: no entry written");
    }
    // The good key serves, and signs.
    let ledger = home.path().join("good.jsonl");
    let responses = exchange(audited(&root, home.path(), &ledger, Some(&keys.join("good.pem"))), input(&messages));
    assert_eq!(responses.len(), 2);
    assert_eq!(ledger_entries(&ledger)[0]["signatureKeyId"], good.key_id());
}

/// Sends `calls` tools/call requests to a sidecar writing `ledger`; returns the child once spawned.
fn spawn_appender(root: &Path, home: &Path, ledger: &Path, name: &str, calls: usize) -> std::process::Child {
    let mut messages = vec![initialize(name, "1")];
    // Cheap calls that are still audited: a repository that does not exist and a name that is no tool.
    for id in 1..=calls {
        messages.push(if id.is_multiple_of(2) {
            tool_call(id as i64, "repo.status", json!({"repoPath": format!("/nowhere/{name}/{id}")}))
        } else {
            tool_call(id as i64, "no.such.tool", json!({"i": id}))
        });
    }
    let mut child = audited(root, home, ledger, None)
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let bytes = input(&messages);
    std::thread::spawn(move || {
        use std::io::Write as _;
        stdin.write_all(&bytes).expect("write requests");
    });
    child
}

/// A temporary directory on tmpfs where there is one. Each append syncs its line (`fdatasync`), which costs 1-4 ms
/// of wall time on this machine's ext4 disk and ~0 on tmpfs; 20,000 serialised appends would spend ~50 s waiting
/// for the disk there, while this test is about the lock and the chain, not the disk.
fn memory_tempdir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).expect("tempdir on tmpfs")
    } else {
        tempfile::tempdir().expect("tempdir")
    }
}

#[test]
fn two_processes_append_ten_thousand_entries_each_into_one_chain() {
    let root = tempfile::tempdir().expect("tempdir");
    let home = memory_tempdir();
    let ledger = home.path().join("audit").join("mcp.jsonl");
    let started = std::time::Instant::now();
    let children: Vec<_> = ["first", "second"]
        .iter()
        .map(|name| spawn_appender(root.path(), home.path(), &ledger, name, 10_000))
        .collect();
    for child in children {
        let output = child.wait_with_output().expect("wait");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        assert!(output.stderr.is_empty(), "no degraded append: {}", String::from_utf8_lossy(&output.stderr));
    }
    let elapsed = started.elapsed();
    let (code, stdout, stderr) = run(&["verify-audit", ledger.to_str().expect("utf-8")], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("entries:    20000\n") && stdout.contains("chained:    20000\n"), "{stdout}");
    assert!(stdout.contains("sequence:   1..20000\n"), "one continuous sequence: {stdout}");
    // About 14 MiB: the active file rotated (under contention) into 4 MiB segments.
    let segments: u64 = stdout
        .lines()
        .find_map(|line| line.strip_prefix("segments:"))
        .and_then(|count| count.trim().parse().ok())
        .expect("segments counter");
    assert!(segments >= 3, "{stdout}");
    // Both processes' entries are in the one chain.
    let mut sessions = [0usize; 2];
    for file in std::fs::read_dir(ledger.parent().expect("dir")).expect("dir") {
        let path = file.expect("entry").path();
        let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default().to_owned();
        if name == "mcp.jsonl" || name.starts_with("mcp.jsonl.segment-") {
            let text = std::fs::read_to_string(&path).expect("read");
            for (count, session) in sessions.iter_mut().zip(["first", "second"]) {
                *count += text.matches(&format!("\"session_id\":\"{session}\"")).count();
            }
        }
    }
    assert_eq!(sessions, [10_000, 10_000]);
    eprintln!("two processes, 20,000 audited calls: {elapsed:?}");
}

#[test]
fn doctor_states_what_a_power_loss_can_cost_in_one_line() {
    let root = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    let ledger = home.path().join("audit").join("mcp.jsonl");
    let output = audited(root.path(), home.path(), &ledger, None).arg("doctor").output().expect("doctor runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let lines: Vec<&str> = stdout.lines().filter(|line| line.starts_with("audit durability: ")).collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert!(lines[0].contains("the last 5 ms of reads") && lines[0].contains("write proposals are synced"), "{stdout}");
}

/// A pseudo-random number below `bound`, different each call (no random crate in the tree).
fn random_below(bound: u64) -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    hasher.finish() % bound.max(1)
}

/// The `args_fingerprint` of every record in the ledger at `ledger` (active file and segments).
fn fingerprints(ledger: &Path) -> std::collections::HashSet<String> {
    let dir = ledger.parent().expect("dir");
    let mut found = std::collections::HashSet::new();
    for file in std::fs::read_dir(dir).expect("dir") {
        let path = file.expect("entry").path();
        let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default().to_owned();
        if name == "mcp.jsonl" || name.starts_with("mcp.jsonl.segment-") {
            for line in std::fs::read_to_string(&path).expect("read").lines() {
                if let Ok(entry) = serde_json::from_str::<Value>(line)
                    && let Some(fingerprint) = entry["args_fingerprint"].as_str()
                {
                    found.insert(fingerprint.to_owned());
                }
            }
        }
    }
    found
}

/// Group commit under `kill -9`: 50 sidecars in turn, each sent 400 audited calls and killed at a random moment
/// while answering them. After every kill `verify-audit` passes and every call whose reply the client read has its
/// entry: an entry is written before its reply, only its `fdatasync` is grouped.
#[test]
fn kill_9_at_random_moments_loses_no_entry_of_an_answered_call() {
    use std::io::BufRead as _;
    const KILLS: usize = 50;
    const CALLS: usize = 400;
    let root = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    let ledger = home.path().join("audit").join("mcp.jsonl");
    let (mut answered_total, mut killed_early) = (0, 0);
    for round in 0..KILLS {
        let arguments = |id: usize| json!({"repoPath": format!("/nowhere/{round}/{id}")});
        let mut messages = vec![initialize("crash", "1")];
        messages.extend((1..=CALLS).map(|id| tool_call(id as i64, "repo.status", arguments(id))));
        let mut child = audited(root.path(), home.path(), &ledger, None)
            .env("RUST_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let mut stdin = child.stdin.take().expect("stdin");
        let bytes = input(&messages);
        std::thread::spawn(move || {
            use std::io::Write as _;
            // The write fails once the child is killed: that is the point.
            let _ = stdin.write_all(&bytes);
            // Keep stdin open so that the server does not reach the end of input before the kill.
            std::thread::sleep(std::time::Duration::from_secs(30));
        });
        let stdout = child.stdout.take().expect("stdout");
        let (seen_tx, seen_rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut ids = Vec::new();
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(reply) = serde_json::from_str::<Value>(&line)
                    && let Some(id) = reply["id"].as_u64().filter(|id| *id > 0)
                {
                    ids.push(id as usize);
                    let _ = seen_tx.send(ids.len());
                }
            }
            ids
        });
        // The kill comes after a random number of replies, while the server answers the others.
        let kill_after = 1 + random_below(CALLS as u64 - 1) as usize;
        while seen_rx.recv().is_ok_and(|seen| seen < kill_after) {}
        child.kill().expect("kill -9");
        child.wait().expect("reap");
        let answered = reader.join().expect("reader");
        killed_early += usize::from(answered.len() < CALLS);
        answered_total += answered.len();
        let (code, stdout, stderr) = run(&["verify-audit", ledger.to_str().expect("utf-8")], &[]);
        assert_eq!(code, 0, "round {round}: {stdout}{stderr}");
        let recorded = fingerprints(&ledger);
        for id in answered {
            let fingerprint = fluxgit_audit::fingerprint(&arguments(id));
            assert!(recorded.contains(&fingerprint), "round {round}: call {id} was answered but has no entry");
        }
    }
    assert!(killed_early > KILLS / 2, "most kills came mid-stream: {killed_early} of {KILLS}");
    eprintln!("{KILLS} kills, {answered_total} answered calls, each with its entry; {killed_early} kills mid-stream");
}

/// SIGTERM syncs the grouped entries and exits 0 at once, with every answered call's entry in the ledger.
#[test]
fn sigterm_after_answered_calls_exits_cleanly_with_every_entry() {
    use std::io::{BufRead as _, Write as _};
    let root = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    let ledger = home.path().join("audit").join("mcp.jsonl");
    let mut child = audited(root.path(), home.path(), &ledger, None)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut messages = vec![initialize("term", "1")];
    messages.extend((1..=20).map(|id| tool_call(id, "repo.status", json!({"repoPath": format!("/nowhere/{id}")}))));
    stdin.write_all(&input(&messages)).expect("write");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    for _ in 0..21 {
        lines.next().expect("a reply").expect("read");
    }
    let started = std::time::Instant::now();
    let status = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().expect("kill");
    assert!(status.success());
    let exit = child.wait().expect("wait");
    assert_eq!(exit.code(), Some(0));
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    drop(stdin);
    let recorded = fingerprints(&ledger);
    for id in 1..=20 {
        assert!(recorded.contains(&fluxgit_audit::fingerprint(&json!({"repoPath": format!("/nowhere/{id}")}))));
    }
    let (code, stdout, stderr) = run(&["verify-audit", ledger.to_str().expect("utf-8")], &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("entries:    20\n"), "{stdout}");
}
