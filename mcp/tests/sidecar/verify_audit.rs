//! `verify-audit` through the real binary: exit 0 for a sound ledger, 3 for each kind of tampering, 4 for a torn
//! last line, 2 for usage errors (design.md#audit). Ledgers are written with `fluxgit-audit`, the writer the sidecar
//! uses.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fluxgit_audit::{Approval, Event, EventType, Ledger, Limits, Outcome, Risk, SigningKey};
use serde_json::{Map, Value};

use crate::support::{BIN, run};

const SECRET: [u8; 32] = [11; 32];
const FORGER: [u8; 32] = [12; 32];

fn event(index: u64) -> Event {
    Event {
        tool: "repo.brief".to_owned(),
        event_type: EventType::ToolCall,
        repo_scope: fluxgit_audit::repo_scope("/work/repo"),
        args_fingerprint: fluxgit_audit::fingerprint(&serde_json::json!({"i": index})),
        risk: Risk::Read,
        approval: Approval::None,
        result: Outcome::Success,
        session_id: "verify-test".to_owned(),
        duration_ms: 40 + index,
        summary: "repo.brief: success".to_owned(),
        read_only: true,
        sidecar_read_only: true,
    }
}

/// A temporary ledger of `entries` signed entries (unsigned for the first `unsigned`), and its public key file.
struct Fixture {
    dir: tempfile::TempDir,
    ledger: PathBuf,
    pubkey: PathBuf,
}

impl Fixture {
    fn new(entries: u64, unsigned: u64, limits: Limits) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let ledger = dir.path().join("mcp.jsonl");
        let plain = Ledger::open_with_limits(&ledger, None, limits).expect("open");
        (0..unsigned).for_each(|index| drop(plain.append(&event(index)).expect("append")));
        let key = SigningKey::from_bytes(&SECRET);
        let pubkey = dir.path().join("key.pub.pem");
        std::fs::write(&pubkey, key.public_key().to_pem()).expect("public key");
        let signed = Ledger::open_with_limits(&ledger, Some(key), limits).expect("open");
        (unsigned..entries).for_each(|index| drop(signed.append(&event(index)).expect("append")));
        Self { dir, ledger, pubkey }
    }

    fn signed(entries: u64) -> Self {
        Self::new(entries, 0, Limits::STANDARD)
    }

    /// `verify-audit LEDGER --pubkey KEY [extra]`.
    fn verify(&self, extra: &[&str]) -> (i32, String, String) {
        let mut args = vec!["verify-audit", path_str(&self.ledger), "--pubkey", path_str(&self.pubkey)];
        args.extend_from_slice(extra);
        run(&args, &[("HOME", self.dir.path().as_os_str())])
    }

    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.ledger).expect("read").lines().map(str::to_owned).collect()
    }

    fn write_lines(&self, lines: &[String]) {
        std::fs::write(&self.ledger, lines.iter().map(|line| format!("{line}\n")).collect::<String>()).expect("write");
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

fn object(line: &str) -> Map<String, Value> {
    serde_json::from_str(line).expect("entry")
}

/// Recomputes `entryHash` and re-signs with `secret`, as someone holding only that key would.
fn reseal(entry: &mut Map<String, Value>, secret: &[u8; 32]) -> String {
    use base64::Engine as _;
    use ed25519_dalek::Signer as _;
    entry.remove("signature");
    entry.remove("entryHash");
    let hash = fluxgit_audit::sha256_digest(fluxgit_audit::canonical_json(&Value::Object(entry.clone())).as_bytes());
    entry.insert("entryHash".into(), hash.into());
    let message = fluxgit_audit::canonical_json(&Value::Object(entry.clone()));
    let signature = ed25519_dalek::SigningKey::from_bytes(secret).sign(message.as_bytes()).to_bytes();
    entry.insert("signature".into(), base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signature).into());
    fluxgit_audit::canonical_json(&Value::Object(entry.clone()))
}

/// Asserts exit 3 with `reason` in stderr.
fn assert_fails(result: (i32, String, String), reason: &str) {
    let (code, stdout, stderr) = result;
    assert_eq!(code, 3, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stderr.contains("FAILED") && stderr.contains(reason), "expected {reason:?} in:\n{stderr}");
}

#[test]
fn a_sound_signed_ledger_verifies_with_counters() {
    let fixture = Fixture::signed(10);
    let (code, stdout, stderr) = fixture.verify(&["--require-signed"]);
    assert_eq!(code, 0, "{stderr}");
    for expected in ["entries:    10\n", "chained:    10\n", "legacy:     0\n", "signed:     10\n", "unsigned:   0\n"] {
        assert!(stdout.contains(expected), "{expected:?} in:\n{stdout}");
    }
    assert!(stdout.contains("segments:   1\n") && stdout.contains("sequence:   1..10\n"), "{stdout}");
    let key_id = SigningKey::from_bytes(&SECRET).key_id().to_owned();
    assert!(stdout.contains(&format!("signatures: checked (key {key_id})")), "{stdout}");
}

#[test]
fn one_edited_byte_fails() {
    let fixture = Fixture::signed(10);
    let mut lines = fixture.lines();
    // duration_ms 44 -> 45: still valid JSON, one byte different.
    assert!(lines[4].contains("\"duration_ms\":44,"));
    lines[4] = lines[4].replacen("\"duration_ms\":44,", "\"duration_ms\":45,", 1);
    fixture.write_lines(&lines);
    assert_fails(fixture.verify(&[]), "line 5: sequence 5: entryHash does not match");
}

#[test]
fn a_deleted_middle_line_fails() {
    let fixture = Fixture::signed(10);
    let mut lines = fixture.lines();
    lines.remove(4);
    fixture.write_lines(&lines);
    assert_fails(fixture.verify(&[]), "sequence 6 where 5 was expected");
}

#[test]
fn two_swapped_lines_fail() {
    let fixture = Fixture::signed(10);
    let mut lines = fixture.lines();
    lines.swap(3, 4);
    fixture.write_lines(&lines);
    assert_fails(fixture.verify(&[]), "sequence 5 where 4 was expected");
}

#[test]
fn a_file_cut_inside_its_last_line_is_a_torn_tail_not_a_failure() {
    let fixture = Fixture::signed(10);
    let lines = fixture.lines();
    let cut: usize = lines[..6].iter().map(|line| line.len() + 1).sum::<usize>() + lines[6].len() / 2;
    let bytes = std::fs::read(&fixture.ledger).expect("read");
    std::fs::write(&fixture.ledger, &bytes[..cut]).expect("write");
    let (code, stdout, stderr) = fixture.verify(&["--require-signed"]);
    assert_eq!(code, 4, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("entries:    6\n") && stdout.contains("sequence:   1..6\n"), "{stdout}");
    assert!(stdout.contains(&format!("torn tail:  line 7 ({} bytes)\n", lines[6].len() / 2)), "{stdout}");
    assert!(!stdout.contains("\nok\n") && !stderr.contains("FAILED"), "{stdout}{stderr}");
    assert!(stderr.contains("is torn: an append failed part-way") && stderr.contains("the next append cuts it"));
}

#[test]
fn a_line_cut_inside_the_file_fails() {
    let fixture = Fixture::signed(10);
    let mut lines = fixture.lines();
    // Line 7 cut half-way and the lines after it kept: the cut line runs into line 8.
    let half = lines[6].len() / 2;
    lines[6] = format!("{}{}", &lines[6][..half], lines[7]);
    lines.remove(7);
    fixture.write_lines(&lines);
    assert_fails(fixture.verify(&[]), "line 7: not a JSON object");
}

#[test]
fn a_torn_tail_cut_by_the_next_append_verifies_and_is_reported() {
    let fixture = Fixture::signed(10);
    let torn = b"{\"approval\":\"none\",\"args_fingerprint\":\"sha256:ab";
    let mut bytes = std::fs::read(&fixture.ledger).expect("read");
    bytes.extend_from_slice(torn);
    std::fs::write(&fixture.ledger, bytes).expect("write");
    let signed = Ledger::open(&fixture.ledger, Some(SigningKey::from_bytes(&SECRET))).expect("open");
    let appended = signed.append(&event(10)).expect("append");
    assert_eq!((appended.sequence, appended.torn_bytes_cut), (12, None), "cut and recorded at open");
    let (code, stdout, stderr) = fixture.verify(&["--require-signed"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("entries:    12\n") && stdout.contains("signed:     12\n"), "{stdout}");
    let repairs =
        format!("repairs:    1 torn tail cut and recorded (the newest at sequence 11, {} bytes cut)\n", torn.len());
    assert!(stdout.contains(&repairs) && stdout.ends_with("ok\n"), "{stdout}");
}

/// `verify-audit LEDGER` run with a watchdog: its exit code and stderr, failing the test when it takes 5 s.
fn verify_within_5_s(ledger: &Path) -> (i32, String) {
    let mut child = Command::new(BIN)
        .args(["verify-audit", path_str(ledger)])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the sidecar");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() >= Duration::from_secs(5) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("verify-audit did not answer within 5 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr).expect("stderr");
    (status.code().unwrap_or(-1), stderr)
}

#[test]
fn fifos_and_dev_zero_in_place_of_ledger_files_fail_at_once() {
    let mkfifo = |path: &Path| {
        let status = Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
        assert!(status.success(), "mkfifo {}", path.display());
    };
    let fixture = Fixture::new(60, 0, Limits { rotate_bytes: 4096, keep_segments: 100, ..Limits::STANDARD });
    let mut segments: Vec<PathBuf> = std::fs::read_dir(fixture.dir.path())
        .expect("dir")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path_str(path).contains("mcp.jsonl.segment-"))
        .collect();
    segments.sort();
    std::fs::remove_file(&segments[1]).expect("remove");
    mkfifo(&segments[1]);
    let (code, stderr) = verify_within_5_s(&fixture.ledger);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("FAILED") && stderr.contains("a FIFO, not a regular file"), "{stderr}");
    std::fs::remove_file(&segments[1]).expect("remove");
    std::os::unix::fs::symlink("/dev/zero", &segments[1]).expect("symlink");
    let (code, stderr) = verify_within_5_s(&fixture.ledger);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("a symbolic link, not a regular file"), "{stderr}");

    let fixture = Fixture::signed(2);
    std::fs::remove_file(&fixture.ledger).expect("remove");
    mkfifo(&fixture.ledger);
    let (code, stderr) = verify_within_5_s(&fixture.ledger);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("a FIFO, not a regular file"), "{stderr}");
}

#[test]
fn a_line_over_256_kib_fails_without_being_buffered_whole() {
    let fixture = Fixture::signed(3);
    let mut lines = fixture.lines();
    lines.push(format!("{{\"summary\":\"{}\"}}", "a".repeat(300 * 1024)));
    fixture.write_lines(&lines);
    assert_fails(fixture.verify(&[]), "line 4: a line over 262144 bytes");
}

#[test]
fn a_pruned_ledger_verifies_from_its_signed_checkpoint() {
    let fixture = Fixture::new(120, 0, Limits { rotate_bytes: 4096, keep_segments: 4, ..Limits::STANDARD });
    let (code, stdout, stderr) = fixture.verify(&["--require-signed"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("segments:   5\n") && stdout.contains("checkpoint: pruned through "), "{stdout}");
    assert!(stdout.contains("..120\n") && stdout.contains("(signed)"), "{stdout}");
    std::fs::remove_file(fixture.dir.path().join("mcp.jsonl.checkpoint")).expect("remove");
    assert_fails(fixture.verify(&[]), "without a checkpoint: earlier entries are missing");
}

#[test]
fn a_removed_middle_segment_fails() {
    let fixture = Fixture::new(40, 0, Limits { rotate_bytes: 4096, keep_segments: 100, ..Limits::STANDARD });
    let mut segments: Vec<PathBuf> = std::fs::read_dir(fixture.dir.path())
        .expect("dir")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path_str(path).contains("mcp.jsonl.segment-"))
        .collect();
    segments.sort();
    assert!(segments.len() >= 3, "{segments:?}");
    let (code, _, stderr) = fixture.verify(&["--require-signed"]);
    assert_eq!(code, 0, "sound before the removal: {stderr}");
    std::fs::remove_file(&segments[1]).expect("remove");
    assert_fails(fixture.verify(&[]), "was expected (entries missing or moved)");
}

#[test]
fn a_forged_signature_fails() {
    let fixture = Fixture::signed(10);
    let mut lines = fixture.lines();
    // The newest entry rewritten and signed by another key under the real key id (no later entry to break).
    let mut entry = object(&lines[9]);
    entry.insert("summary".into(), "repo.brief: nothing to see".into());
    lines[9] = reseal(&mut entry, &FORGER);
    fixture.write_lines(&lines);
    assert_fails(fixture.verify(&[]), "the signature does not match the entry");
}

#[test]
fn a_changed_key_id_fails() {
    let fixture = Fixture::signed(10);
    let mut lines = fixture.lines();
    let forger_id = SigningKey::from_bytes(&FORGER).key_id().to_owned();
    // Only the key id edited: the entry hash no longer matches.
    let mut entry = object(&lines[2]);
    entry.insert("signatureKeyId".into(), forger_id.as_str().into());
    lines[2] = fluxgit_audit::canonical_json(&Value::Object(entry));
    fixture.write_lines(&lines);
    assert_fails(fixture.verify(&[]), "line 3: sequence 3: entryHash does not match");
    // The newest entry re-signed by another key under that key's own id: not a key we trust.
    let fixture = Fixture::signed(10);
    let mut lines = fixture.lines();
    let mut entry = object(&lines[9]);
    entry.insert("signatureKeyId".into(), forger_id.as_str().into());
    lines[9] = reseal(&mut entry, &FORGER);
    fixture.write_lines(&lines);
    assert_fails(fixture.verify(&[]), &format!("signed by key {forger_id}, which is not among the public keys"));
}

#[test]
fn unsigned_entries_fail_only_when_signatures_are_required() {
    let fixture = Fixture::new(10, 3, Limits::STANDARD);
    let (code, stdout, stderr) = fixture.verify(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("signed:     7\n") && stdout.contains("unsigned:   3\n"), "{stdout}");
    assert_fails(fixture.verify(&["--require-signed"]), "line 1: an entry is unsigned and signatures are required");

    // A whole chain recomputed without signatures by someone without the key: it chains, so only
    // --require-signed (or the signed counter dropping to 0) shows it.
    let fixture = Fixture::signed(10);
    let mut previous = fluxgit_audit::GENESIS.to_owned();
    let lines: Vec<String> = fixture
        .lines()
        .iter()
        .map(|line| {
            let mut entry = object(line);
            for field in ["signature", "signatureKeyId", "signatureVersion", "entryHash"] {
                entry.remove(field);
            }
            entry.insert("previousHash".into(), previous.as_str().into());
            let hash =
                fluxgit_audit::sha256_digest(fluxgit_audit::canonical_json(&Value::Object(entry.clone())).as_bytes());
            entry.insert("entryHash".into(), hash.as_str().into());
            previous = hash;
            fluxgit_audit::canonical_json(&Value::Object(entry))
        })
        .collect();
    fixture.write_lines(&lines);
    let (code, stdout, _) = fixture.verify(&[]);
    assert_eq!(code, 0);
    assert!(stdout.contains("signed:     0\n") && stdout.contains("unsigned:   10\n"), "{stdout}");
    assert_fails(fixture.verify(&["--require-signed"]), "an entry is unsigned and signatures are required");
}

#[test]
fn a_clean_cut_of_the_newest_lines_is_not_detected_without_an_anchor() {
    // Documented limitation (fluxgit-audit crate docs): whole lines removed from the end leave a shorter chain
    // that verifies. Everything before the cut still verifies, signatures included.
    let fixture = Fixture::signed(10);
    let lines = fixture.lines();
    fixture.write_lines(&lines[..7]);
    let (code, stdout, stderr) = fixture.verify(&["--require-signed"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("entries:    7\n") && stdout.contains("sequence:   1..7\n"), "{stdout}");
}

#[test]
fn usage_errors_exit_2() {
    let fixture = Fixture::signed(2);
    let home = [("HOME", fixture.dir.path().as_os_str())];
    let missing = fixture.dir.path().join("missing.jsonl");
    let (code, _, stderr) = run(&["verify-audit", path_str(&missing)], &home);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no audit ledger at"), "{stderr}");
    let (code, _, stderr) = run(&["verify-audit", path_str(&fixture.ledger), "--require-signed"], &home);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("give --pubkey"), "{stderr}");
    let not_a_key = fixture.ledger.clone();
    let (code, _, stderr) = run(&["verify-audit", path_str(&fixture.ledger), "--pubkey", path_str(&not_a_key)], &home);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--pubkey"), "{stderr}");
    let (code, _, _) = run(&["verify-audit"], &home);
    assert_eq!(code, 2);
    // Without --pubkey a signed ledger verifies, signatures counted but not checked.
    let (code, stdout, _) = run(&["verify-audit", path_str(&fixture.ledger)], &home);
    assert_eq!(code, 0);
    assert!(stdout.contains("signatures: not checked (no --pubkey)"), "{stdout}");
}
