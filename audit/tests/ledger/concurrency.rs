//! Several ledger handles appending at once: each handle has its own lock file descriptor, so the lock excludes
//! them exactly as it excludes processes (the two-process test with the real sidecar lives in the sidecar tests).

use fluxgit_audit::{Ledger, Limits};

use crate::support::{append_range, verify};

#[test]
fn handles_appending_concurrently_form_one_chain_across_rotations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    let limits = Limits { rotate_bytes: 32 * 1024, keep_segments: 1000, ..Limits::STANDARD };
    let writers: Vec<_> = (0..3u64)
        .map(|writer| {
            let path = path.clone();
            std::thread::spawn(move || {
                let ledger = Ledger::open_with_limits(&path, None, limits).expect("open");
                append_range(&ledger, writer * 1000, writer * 1000 + 200);
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer");
    }
    let report = verify(&path, &[], false).expect("one chain");
    assert_eq!((report.chained, report.first_sequence, report.last_sequence), (600, Some(1), Some(600)));
    assert!(report.segments > 3, "rotated while contended: {report:?}");
}

/// Group commit: handles appending reads whose sync is grouped, with a synced append (a write proposal's) now and
/// then, across rotations. Every entry is in the file when its append returns, before any sync, and the result is
/// one chain.
#[test]
fn grouped_appends_from_several_handles_are_written_at_once_and_form_one_chain() {
    use fluxgit_audit::{Durability, GroupCommit};

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    let limits = Limits { rotate_bytes: 32 * 1024, keep_segments: 1000, ..Limits::STANDARD };
    // An hour's interval and a huge batch: only rotations, the synced appends and the drop sync anything.
    let policy = GroupCommit { interval: std::time::Duration::from_secs(3600), batch: u64::MAX };
    let writers: Vec<_> = (0..3u64)
        .map(|writer| {
            let path = path.clone();
            std::thread::spawn(move || {
                let ledger = Ledger::open_with_limits(&path, None, limits)
                    .expect("open")
                    .with_group_commit(policy)
                    .expect("syncer");
                for index in writer * 1000..writer * 1000 + 200 {
                    let durability = if index.is_multiple_of(50) { Durability::Synced } else { Durability::Grouped };
                    let appended = ledger.append_with(&crate::support::event(index), durability).expect("append");
                    let active = std::fs::read_to_string(&path).expect("read the active file");
                    if !appended.rotated {
                        // Another handle may have rotated since; then the entry is in the newest segment.
                        let in_segment = || {
                            crate::support::segments(&path).iter().rev().take(2).any(|segment| {
                                std::fs::read_to_string(segment).expect("segment").contains(&appended.entry_hash)
                            })
                        };
                        assert!(active.contains(&appended.entry_hash) || in_segment(), "entry {index} not written");
                    }
                }
                ledger.sync().expect("sync");
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer");
    }
    let report = verify(&path, &[], false).expect("one chain");
    assert_eq!((report.chained, report.first_sequence, report.last_sequence), (600, Some(1), Some(600)));
    assert!(report.segments > 3, "rotated while contended: {report:?}");
}
