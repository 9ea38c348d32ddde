//! A ledger written by the published `fluxgit-mcp-sidecar` 0.2.1 (test data, see `tests/data/peer-0.2.1/README.md`)
//! verifies with this crate, with the counters the published binary's own `verify-audit` printed; and this crate's
//! writer continues that chain.

use std::path::{Path, PathBuf};

use fluxgit_audit::{Ledger, PublicKey, Report};

use crate::support::{append_range, integrity_reason, key, verify};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/peer-0.2.1").join(name)
}

fn peer_key() -> PublicKey {
    PublicKey::load(&data("key.pub.pem")).expect("peer public key")
}

/// What `fluxgit-mcp-sidecar 0.2.1 verify-audit mcp.jsonl --pubkey key.pub.pem` printed: entries 4, chained 4,
/// legacy 0, signed 4, unsigned 0, segments 1, sequence 1..4, retention_checkpoint_used false.
const PEER_COUNTERS: Report = Report {
    entries: 4,
    chained: 4,
    legacy: 0,
    signed: 4,
    unsigned: 0,
    segments: 1,
    first_sequence: Some(1),
    last_sequence: Some(4),
    pruned_through: None,
    checkpoint_signed: None,
    signatures_checked: true,
    tail_repairs: 0,
    last_tail_repair: None,
    torn_tail: None,
};

#[test]
fn published_sidecar_ledger_verifies_with_its_own_counters() {
    let keys = [peer_key()];
    assert_eq!(keys[0].key_id(), "d87d60c4a22f3ca9");
    assert_eq!(verify(&data("mcp.jsonl"), &keys, true).expect("verifies"), PEER_COUNTERS);
    let unchecked = verify(&data("mcp.jsonl"), &[], false).expect("verifies without a key");
    assert_eq!(unchecked, Report { signatures_checked: false, ..PEER_COUNTERS });
    // Another key than the one it was signed with: every signature is by an unknown key.
    let reason = integrity_reason(verify(&data("mcp.jsonl"), &[key(3).public_key()], false));
    assert!(reason.contains("not among the public keys given"), "{reason}");
}

#[test]
fn our_writer_continues_the_published_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    std::fs::copy(data("mcp.jsonl"), &path).expect("copy");
    let ledger = Ledger::open(&path, Some(key(4))).expect("open");
    append_range(&ledger, 0, 2);
    let keys = [peer_key(), key(4).public_key()];
    let report = verify(&path, &keys, true).expect("verifies with both keys");
    assert_eq!((report.chained, report.signed, report.last_sequence), (6, 6, Some(6)));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&path)
        .expect("read")
        .lines()
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect();
    assert_eq!(lines[4]["segmentId"], lines[3]["segmentId"], "the same segment continues");
    assert_eq!(lines[4]["previousHash"], lines[3]["entryHash"]);
    // With only the published key, our entries are by an unknown key.
    assert!(verify(&path, &keys[..1], false).is_err());
}
