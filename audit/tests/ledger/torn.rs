//! Torn tails (design.md#audit): a last line an append left unfinished (no newline, or not a JSON object) is reported
//! by the verifier apart from tampering, cut by the next append or open and recorded by a chained `tail_repair`
//! record; a torn line anywhere else, or a record that lies about the cut, fails verification.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use fluxgit_audit::{AppendError, Ledger, Limits, TailRepair, TornTail};
use serde_json::{Map, Value};

use crate::support::{append_range, event, integrity_reason, key, line_count, rehash, segments, verify};

/// A signed ledger of `entries` entries.
fn signed_ledger(dir: &Path, entries: u64) -> PathBuf {
    let path = dir.join("audit").join("mcp.jsonl");
    let ledger = Ledger::open(&path, Some(key(1))).expect("open");
    append_range(&ledger, 0, entries);
    path
}

fn append_bytes(path: &Path, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).expect("open");
    file.write_all(bytes).expect("write");
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).expect("read").lines().map(str::to_owned).collect()
}

fn object(line: &str) -> Map<String, Value> {
    serde_json::from_str(line).expect("a JSON object")
}

#[test]
fn a_torn_tail_is_reported_then_cut_and_recorded_when_the_ledger_opens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = signed_ledger(dir.path(), 5);
    let whole = std::fs::read(&path).expect("read");
    let torn = br#"{"approval":"none","args_fingerprint":"sha256:0123"#;
    append_bytes(&path, torn);
    let keys = [key(1).public_key()];
    let report = verify(&path, &keys, true).expect("a torn tail is no integrity failure");
    assert_eq!((report.chained, report.tail_repairs), (5, 0));
    assert_eq!(report.torn_tail, Some(TornTail { line: 6, bytes: torn.len() as u64 }));

    let _ledger = Ledger::open(&path, Some(key(1))).expect("open repairs");
    let repaired = std::fs::read(&path).expect("read");
    assert!(repaired.starts_with(&whole) && repaired.ends_with(b"\n"));
    let record = object(lines(&path).last().expect("a line"));
    assert_eq!(record["event_type"], "tail_repair");
    assert_eq!(record["sequence"], 6);
    assert_eq!(record["tornBytes"], torn.len() as u64);
    assert_eq!(record["tornSha256"], fluxgit_audit::sha256_digest(torn).as_str());
    let report = verify(&path, &keys, true).expect("verifies");
    assert_eq!((report.chained, report.signed, report.torn_tail), (6, 6, None));
    assert_eq!(report.last_tail_repair, Some(TailRepair { sequence: 6, torn_bytes: torn.len() as u64 }));
    // Opening a sound ledger writes nothing.
    drop(Ledger::open(&path, Some(key(1))).expect("open"));
    assert_eq!(line_count(&path), 6);
}

#[test]
fn a_last_line_that_is_not_json_is_replaced_by_the_record_whether_shorter_or_longer() {
    for garbage in ["{\"sequence\":6,\0\0\0\n".to_owned(), format!("{}\n", "#".repeat(5_000))] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = signed_ledger(dir.path(), 3);
        let whole = std::fs::read(&path).expect("read");
        append_bytes(&path, garbage.as_bytes());
        let keys = [key(1).public_key()];
        let report = verify(&path, &keys, true).expect("reported, not failed");
        assert_eq!(report.torn_tail, Some(TornTail { line: 4, bytes: garbage.len() as u64 }));

        let ledger = Ledger::open_with_limits(&path, Some(key(1)), Limits::STANDARD).expect("open");
        let appended = ledger.append(&event(3)).expect("append");
        assert_eq!((appended.sequence, appended.torn_bytes_cut), (5, None), "repaired at open already");
        let text = std::fs::read(&path).expect("read");
        assert!(text.starts_with(&whole) && !text.windows(garbage.len()).any(|window| window == garbage.as_bytes()));
        assert_eq!(line_count(&path), 5);
        let report = verify(&path, &keys, true).expect("verifies");
        assert_eq!((report.chained, report.tail_repairs, report.torn_tail), (5, 1, None));
        assert_eq!(report.last_tail_repair, Some(TailRepair { sequence: 4, torn_bytes: garbage.len() as u64 }));
    }
}

#[test]
fn a_torn_tail_found_by_an_append_is_recorded_before_the_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = signed_ledger(dir.path(), 2);
    let ledger = Ledger::open(&path, Some(key(1))).expect("open");
    append_bytes(&path, b"{\"approval\":\"no");
    let appended = ledger.append(&event(2)).expect("append");
    assert_eq!((appended.sequence, appended.torn_bytes_cut), (4, Some(15)));
    let all = lines(&path);
    assert_eq!(object(&all[2])["event_type"], "tail_repair");
    assert_eq!(object(&all[3])["previousHash"], object(&all[2])["entryHash"]);
    let keys = [key(1).public_key()];
    assert_eq!(verify(&path, &keys, true).expect("verifies").chained, 4);
}

#[test]
fn a_ledger_of_only_torn_bytes_starts_again_at_genesis() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    std::fs::write(&path, b"{\"approval\":\"none\",\"args_fing").expect("write");
    let ledger = Ledger::open(&path, None).expect("open");
    ledger.append(&event(0)).expect("append");
    let all = lines(&path);
    assert_eq!(
        (object(&all[0])["sequence"].clone(), object(&all[0])["previousHash"].clone()),
        (1.into(), "genesis".into())
    );
    let report = verify(&path, &[], false).expect("verifies");
    assert_eq!((report.first_sequence, report.last_sequence, report.tail_repairs), (Some(1), Some(2), 1));
}

#[test]
fn a_torn_first_line_after_a_rotation_continues_after_the_newest_segment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    let small = Limits { rotate_bytes: 4096, keep_segments: 100, ..Limits::STANDARD };
    let ledger = Ledger::open_with_limits(&path, Some(key(1)), small).expect("open");
    let mut index = 0;
    while segments(&path).is_empty() || line_count(&path) != 1 {
        ledger.append(&event(index)).expect("append");
        index += 1;
        assert!(index < 100, "no rotation");
    }
    // The first line of the new active file is cut half-way, as a full disk would leave it.
    let text = std::fs::read(&path).expect("read");
    std::fs::write(&path, &text[..text.len() / 2]).expect("cut");
    let appended = ledger.append(&event(index)).expect("append");
    assert_eq!((appended.sequence, appended.torn_bytes_cut), (index + 1, Some((text.len() / 2) as u64)));
    let keys = [key(1).public_key()];
    let report = verify(&path, &keys, true).expect("verifies");
    assert_eq!((report.chained, report.tail_repairs), (index + 1, 1));
}

#[test]
fn a_torn_tail_after_a_line_that_is_not_chained_is_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    std::fs::write(&path, b"{\"hello\":1}\n{\"approval\":\"no").expect("write");
    let before = std::fs::read(&path).expect("read");
    let ledger = Ledger::open(&path, None).expect("open");
    let error = ledger.append(&event(0)).expect_err("cannot continue the chain");
    assert!(
        matches!(&error, AppendError::BrokenTail { reason, .. } if reason.contains("before a torn last line")),
        "{error}"
    );
    assert_eq!(std::fs::read(&path).expect("read"), before, "nothing cut, nothing written");
}

#[test]
fn a_torn_line_inside_the_active_file_fails_verification() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = signed_ledger(dir.path(), 5);
    let all = lines(&path);
    // Line 3 cut half-way, the lines after it kept: not a torn tail but a damaged file.
    let text = format!("{}\n{}\n{}{}\n{}\n", all[0], all[1], &all[2][..all[2].len() / 2], all[3], all[4]);
    std::fs::write(&path, text).expect("write");
    let reason = integrity_reason(verify(&path, &[], false));
    assert_eq!(reason, "not a JSON object");
}

#[test]
fn a_tail_repair_record_that_names_no_cut_fails_verification() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    let ledger = Ledger::open(&path, None).expect("open");
    append_range(&ledger, 0, 2);
    append_bytes(&path, b"{\"torn");
    ledger.append(&event(2)).expect("append");
    assert_eq!(verify(&path, &[], false).expect("verifies").tail_repairs, 1);
    // Someone without a key rewrites the record to say nothing was cut, and rechains the entry after it.
    let mut all = lines(&path);
    let mut record = object(&all[2]);
    record.insert("tornBytes".into(), 0.into());
    let hash = rehash(&record);
    record.insert("entryHash".into(), hash.as_str().into());
    all[2] = fluxgit_audit::canonical_json(&Value::Object(record));
    let mut next = object(&all[3]);
    next.insert("previousHash".into(), hash.into());
    let next_hash = rehash(&next);
    next.insert("entryHash".into(), next_hash.into());
    all[3] = fluxgit_audit::canonical_json(&Value::Object(next));
    std::fs::write(&path, all.iter().map(|line| format!("{line}\n")).collect::<String>()).expect("write");
    let reason = integrity_reason(verify(&path, &[], false));
    assert!(reason.contains("sequence 3: a tail_repair record without a valid tornBytes and tornSha256"), "{reason}");
}
