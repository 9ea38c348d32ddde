//! `verify-audit` through the real binary: exit 0 for a sound ledger, 3 for each kind of tampering, 2 for usage
//! errors (design.md §7). Ledgers are written with `fluxgit-audit`, the writer the sidecar uses.

use std::path::{Path, PathBuf};

use fluxgit_audit::{Approval, Event, EventType, Ledger, Limits, Outcome, Risk, SigningKey};
use serde_json::{Map, Value};

use crate::support::run;

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
fn a_file_cut_inside_a_line_fails() {
    let fixture = Fixture::signed(10);
    let lines = fixture.lines();
    let cut: usize = lines[..6].iter().map(|line| line.len() + 1).sum::<usize>() + lines[6].len() / 2;
    let bytes = std::fs::read(&fixture.ledger).expect("read");
    std::fs::write(&fixture.ledger, &bytes[..cut]).expect("write");
    assert_fails(fixture.verify(&[]), "line 7: the line is incomplete (the file was cut)");
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
    let fixture = Fixture::new(120, 0, Limits { rotate_bytes: 4096, keep_segments: 4 });
    let (code, stdout, stderr) = fixture.verify(&["--require-signed"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("segments:   5\n") && stdout.contains("checkpoint: pruned through "), "{stdout}");
    assert!(stdout.contains("..120\n") && stdout.contains("(signed)"), "{stdout}");
    std::fs::remove_file(fixture.dir.path().join("mcp.jsonl.checkpoint")).expect("remove");
    assert_fails(fixture.verify(&[]), "without a checkpoint: earlier entries are missing");
}

#[test]
fn a_removed_middle_segment_fails() {
    let fixture = Fixture::new(40, 0, Limits { rotate_bytes: 4096, keep_segments: 100 });
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
