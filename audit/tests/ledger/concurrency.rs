//! Several ledger handles appending at once: each handle has its own lock file descriptor, so the lock excludes
//! them exactly as it excludes processes (the two-process test with the real sidecar lives in the sidecar tests).

use fluxgit_audit::{Ledger, Limits};

use crate::support::{append_range, verify};

#[test]
fn handles_appending_concurrently_form_one_chain_across_rotations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    let limits = Limits { rotate_bytes: 32 * 1024, keep_segments: 1000 };
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
