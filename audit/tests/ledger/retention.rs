//! Rotation into named segments, pruning behind checkpoints, and what verification says when segments or the
//! checkpoint go missing (design.md#audit). Small limits stand in for 4 MiB segments; the code path is the same.

use std::path::{Path, PathBuf};

use fluxgit_audit::{Ledger, Limits};
use serde_json::{Map, Value};

use crate::support::{append_range, integrity_reason, key, line_count, rehash, segments, sign_with, verify};

/// Segments of about five entries, four kept.
const SMALL: Limits = Limits { rotate_bytes: 4096, keep_segments: 4, ..Limits::STANDARD };

/// A signed ledger with `entries` appended under [`SMALL`] limits.
fn signed_ledger(dir: &Path, entries: u64) -> (PathBuf, Ledger) {
    let path = dir.join("audit").join("mcp.jsonl");
    let ledger = Ledger::open_with_limits(&path, Some(key(1)), SMALL).expect("open");
    append_range(&ledger, 0, entries);
    (path, ledger)
}

#[test]
fn rotation_and_pruning_keep_four_segments_behind_a_signed_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _ledger) = signed_ledger(dir.path(), 120);
    let kept = segments(&path);
    assert_eq!(kept.len(), 4, "{kept:?}");
    for segment in &kept {
        let size = std::fs::metadata(segment).expect("segment").len();
        assert!(size <= SMALL.rotate_bytes, "{segment:?} has {size} bytes");
    }
    let retained: u64 = kept.iter().map(|segment| line_count(segment)).sum::<u64>() + line_count(&path);
    let checkpoint = path.with_file_name("mcp.jsonl.checkpoint");
    assert!(checkpoint.is_file(), "a checkpoint was written before pruning");

    let keys = [key(1).public_key()];
    let report = verify(&path, &keys, true).expect("verifies");
    assert_eq!(report.last_sequence, Some(120));
    assert_eq!(report.chained, retained);
    assert_eq!(report.entries, retained);
    assert_eq!(report.signed, retained);
    assert_eq!(report.segments, 5, "four rotated segments and the active file");
    let through = report.pruned_through.expect("the chain starts after the checkpoint");
    assert_eq!(report.first_sequence, Some(through + 1));
    assert_eq!(report.checkpoint_signed, Some(true));
    assert!(through > 0 && through + retained == 120);

    // Segment names carry first and last sequence: consecutive segments continue each other.
    let ranges: Vec<(u64, u64)> = kept
        .iter()
        .map(|segment| {
            let name = segment.file_name().and_then(|name| name.to_str()).expect("name");
            let digits: Vec<u64> = name["mcp.jsonl.segment-".len()..]
                .splitn(3, '-')
                .take(2)
                .map(|part| part.parse().expect("sequence"))
                .collect();
            (digits[0], digits[1])
        })
        .collect();
    assert_eq!(ranges[0].0, through + 1);
    for pair in ranges.windows(2) {
        assert_eq!(pair[1].0, pair[0].1 + 1, "{ranges:?}");
    }
}

#[test]
fn a_missing_middle_segment_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _ledger) = signed_ledger(dir.path(), 60);
    std::fs::remove_file(&segments(&path)[1]).expect("remove");
    let reason = integrity_reason(verify(&path, &[key(1).public_key()], false));
    assert!(reason.contains("expected (entries missing or moved)"), "{reason}");
}

#[test]
fn a_missing_oldest_segment_fails_against_the_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _ledger) = signed_ledger(dir.path(), 60);
    std::fs::remove_file(&segments(&path)[0]).expect("remove");
    let reason = integrity_reason(verify(&path, &[], false));
    assert!(reason.contains("the checkpoint covers entries through"), "{reason}");
}

#[test]
fn a_missing_checkpoint_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _ledger) = signed_ledger(dir.path(), 60);
    std::fs::remove_file(path.with_file_name("mcp.jsonl.checkpoint")).expect("remove");
    let reason = integrity_reason(verify(&path, &[], false));
    assert!(reason.contains("without a checkpoint: earlier entries are missing"), "{reason}");
}

#[test]
fn a_checkpoint_rewritten_without_the_key_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _ledger) = signed_ledger(dir.path(), 60);
    // Someone without the private key hides the oldest segment and forges a checkpoint that covers it: a correct
    // hash, but an unsigned or wrongly signed checkpoint.
    let oldest = segments(&path)[0].clone();
    let text = std::fs::read_to_string(&oldest).expect("read");
    let last: serde_json::Value = serde_json::from_str(text.lines().last().expect("line")).expect("json");
    std::fs::remove_file(&oldest).expect("remove");
    let checkpoint = path.with_file_name("mcp.jsonl.checkpoint");
    let real: Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(&checkpoint).expect("read")).expect("json");
    // The forger's checkpoint: the real one, moved on to cover the hidden segment, hash recomputed, then signed
    // with the forger's own key (`Some`) or left unsigned.
    let forged = |forger: Option<[u8; 32]>| {
        let mut object = real.clone();
        object.insert("prunedThroughSequence".into(), last["sequence"].clone());
        object.insert("prunedThroughHash".into(), last["entryHash"].clone());
        object.insert("prunedSegmentId".into(), last["segmentId"].clone());
        object.remove("signature");
        if forger.is_none() {
            object.remove("signatureKeyId");
            object.remove("signatureVersion");
        }
        object.insert("entryHash".into(), rehash(&object).into());
        if let Some(secret) = forger {
            sign_with(&mut object, &secret);
        }
        fluxgit_audit::canonical_json(&Value::Object(object))
    };
    let keys = [key(1).public_key()];

    std::fs::write(&checkpoint, forged(None)).expect("write");
    let unsigned = verify(&path, &keys, false).expect("an unsigned checkpoint verifies without --require-signed");
    assert_eq!(unsigned.checkpoint_signed, Some(false), "and the report says it is unsigned");
    let reason = integrity_reason(verify(&path, &keys, true));
    assert!(reason.contains("the checkpoint is unsigned"), "{reason}");

    // Signed by another key while claiming the real key id: the signature does not verify.
    std::fs::write(&checkpoint, forged(Some([2; 32]))).expect("write");
    let reason = integrity_reason(verify(&path, &keys, false));
    assert!(reason.contains("the signature does not match"), "{reason}");
}

#[test]
fn an_interrupted_prune_still_verifies_and_the_next_rotation_finishes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    let ledger = Ledger::open_with_limits(&path, Some(key(1)), SMALL).expect("open");
    // Append until the next append prunes, keeping a copy of the segment it will remove.
    let mut index = 0;
    let saved = loop {
        ledger.append(&crate::support::event(index)).expect("append");
        index += 1;
        let kept = segments(&path);
        if kept.len() == 4 {
            let oldest = kept[0].clone();
            let bytes = std::fs::read(&oldest).expect("read");
            let mut pruned = false;
            while !pruned {
                pruned = ledger.append(&crate::support::event(index)).expect("append").pruned > 0;
                index += 1;
            }
            break (oldest, bytes);
        }
    };
    // Put the pruned segment back: the state of a crash between the synced checkpoint and the removal.
    std::fs::write(&saved.0, &saved.1).expect("restore");
    assert_eq!(segments(&path).len(), 5);
    let keys = [key(1).public_key()];
    let report = verify(&path, &keys, true).expect("an interrupted prune verifies");
    assert_eq!(report.pruned_through, None, "the chain starts inside the segment being pruned");
    assert_eq!(report.checkpoint_signed, Some(true));
    assert_eq!(report.last_sequence, Some(index));

    // The restored segment must be the one the checkpoint names: with its tail edited, verification fails.
    let text = String::from_utf8(saved.1.clone()).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    let truncated = lines[..lines.len() - 1].join("\n") + "\n";
    std::fs::write(&saved.0, truncated).expect("write");
    assert!(verify(&path, &keys, true).is_err());
    std::fs::write(&saved.0, &saved.1).expect("restore");

    // Appending until the next rotation prunes it (and one more) again.
    while segments(&path).len() > 4 || !segments(&path).iter().all(|segment| segment != &saved.0) {
        ledger.append(&crate::support::event(index)).expect("append");
        index += 1;
    }
    let report = verify(&path, &keys, true).expect("verifies after the prune finished");
    assert!(report.pruned_through.is_some());
    assert_eq!(report.last_sequence, Some(index));
}

#[test]
fn rotation_without_pruning_starts_at_genesis() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    let ledger =
        Ledger::open_with_limits(&path, None, Limits { rotate_bytes: 4096, keep_segments: 100, ..Limits::STANDARD })
            .expect("open");
    append_range(&ledger, 0, 40);
    let report = verify(&path, &[], false).expect("verifies");
    assert_eq!((report.first_sequence, report.last_sequence, report.chained), (Some(1), Some(40), 40));
    assert_eq!((report.signed, report.unsigned, report.pruned_through, report.checkpoint_signed), (0, 40, None, None));
    assert_eq!(report.segments, segments(&path).len() as u64 + 1);
    assert!(report.segments > 5);
    // A renamed segment (its name no longer matching its contents) fails.
    let first = segments(&path)[0].clone();
    let name = first.file_name().and_then(|name| name.to_str()).expect("name").to_owned();
    let renamed = first.with_file_name(name.replacen("-00000000000000000001-", "-00000000000000000002-", 1));
    assert_ne!(renamed, first);
    std::fs::rename(&first, &renamed).expect("rename");
    assert!(integrity_reason(verify(&path, &[], false)).contains("the segment is named for sequences"));
}

/// The retention by size: after each rotation the oldest segments are pruned while the kept ones total more than
/// `max_bytes`, so what is kept is exactly the newest segments that fit, and the rest still verifies.
#[test]
fn retention_by_size_keeps_exactly_the_newest_segments_that_fit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    let limits = Limits { rotate_bytes: 4096, keep_segments: usize::MAX, max_bytes: 10_000, retain_ms: None };
    let ledger = Ledger::open_with_limits(&path, Some(key(1)), limits).expect("open");
    append_range(&ledger, 0, 200);
    let kept = segments(&path);
    let sizes: Vec<u64> = kept.iter().map(|segment| std::fs::metadata(segment).expect("segment").len()).collect();
    let total: u64 = sizes.iter().sum();
    assert!(total <= 10_000, "{sizes:?}");
    // One more (older) segment of the same size would not have fitted: each is nearly 4096 bytes.
    assert!(total + sizes.iter().min().expect("a segment") > 10_000, "{sizes:?}");
    assert_eq!(kept.len(), 2, "{sizes:?}");
    let report = verify(&path, &[key(1).public_key()], true).expect("the rest verifies");
    assert_eq!(report.last_sequence, Some(200));
    assert_eq!(report.pruned_through.map(|through| through + 1), report.first_sequence);
    assert_eq!(report.checkpoint_signed, Some(true));
}

/// The retention by age: segments whose newest entry is older than `retain_ms` are pruned at the next rotation;
/// newer ones stay, and the rest still verifies.
#[test]
fn retention_by_age_prunes_exactly_the_segments_older_than_the_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    let limits = Limits { rotate_bytes: 4096, keep_segments: usize::MAX, max_bytes: u64::MAX, retain_ms: Some(1_000) };
    let ledger = Ledger::open_with_limits(&path, Some(key(1)), limits).expect("open");
    append_range(&ledger, 0, 40);
    let old = segments(&path);
    assert!(old.len() >= 5, "{old:?}");
    let paused_at = fluxgit_audit::now_ms();
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    // Two rotations after the pause: the first prunes every segment written before it; the second keeps the
    // segment rotated first, whose newest entry came after the pause.
    let (mut index, mut rotations) = (40, 0);
    while rotations < 2 {
        rotations += u32::from(ledger.append(&crate::support::event(index)).expect("append").rotated);
        index += 1;
    }
    let kept = segments(&path);
    assert!(kept.iter().all(|segment| !old.contains(segment)), "every segment of before the pause is pruned: {kept:?}");
    assert!(!kept.is_empty(), "the segment written after the pause is kept");
    for segment in &kept {
        let text = std::fs::read_to_string(segment).expect("segment");
        let last: Map<String, Value> = serde_json::from_str(text.lines().last().expect("a line")).expect("JSON");
        assert!(last["timestamp"].as_u64().expect("timestamp") > paused_at, "{segment:?}");
    }
    let report = verify(&path, &[key(1).public_key()], true).expect("the rest verifies");
    assert!(report.pruned_through.is_some(), "{report:?}");
    assert_eq!(report.last_sequence, Some(index));
}

#[test]
fn retention_variables_are_parsed_or_refused() {
    use std::ffi::OsStr;
    let limits = Limits::with_retention(Some(OsStr::new("30")), Some(OsStr::new("1073741824"))).expect("valid");
    assert_eq!(limits.retain_ms, Some(30 * 86_400_000));
    assert_eq!((limits.max_bytes, limits.keep_segments), (1 << 30, usize::MAX));
    assert_eq!(Limits::with_retention(None, None).expect("defaults"), Limits::STANDARD);
    assert_eq!(Limits::STANDARD.max_bytes, 4 * fluxgit_audit::ROTATE_BYTES);
    for (days, bytes) in [("0", "1048576"), ("1", "1048575"), ("-1", "2000000"), ("1", "1e9"), ("x", "2000000")] {
        let refused = Limits::with_retention(Some(OsStr::new(days)), Some(OsStr::new(bytes)));
        assert!(refused.is_err(), "{days} {bytes}");
    }
}
