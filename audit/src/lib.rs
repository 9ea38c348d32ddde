//! `fluxgit-audit`: the FluxGit audit ledger (design.md#audit), shared by the sidecar and the gateway (which never link
//! each other).
//!
//! The ledger is append-only JSONL: one canonical JSON entry per line, hash-chained (`sequence`, `previousHash`,
//! `entryHash`) and optionally Ed25519-signed (`signature`, `signatureKeyId`, `signatureVersion` 3). Arguments and
//! paths are recorded only as sha256 fingerprints ([`fingerprint`], [`repo_scope`]).
//!
//! - [`Ledger`] writes: [`Ledger::append`] holds a cross-process lock (`<ledger>.lock`) around reading the chain's
//!   tail, rotation, the append and its `fsync`. The active file rotates at 4 MiB into segments named
//!   `<ledger>.segment-<first>-<last>-<segmentId>`; at most 4 rotated segments are kept, and before the oldest is
//!   removed a checkpoint (`<ledger>.checkpoint`, signed when signing) naming its last entry is synced. Lines are at
//!   most 256 KiB. A torn last line left by an append that failed part-way (a full disk, a crash) is cut by the
//!   next append (or [`Ledger::open`]) and recorded by a chained `tail_repair` record, so the chain goes on.
//!   Every ledger file is opened as a regular file only: a FIFO, device or symbolic link in its place is refused.
//! - Group commit: [`Ledger::with_group_commit`] starts one syncer thread, and [`Ledger::append_with`] in
//!   [`Durability::Grouped`] writes the entry under the lock but leaves its `fdatasync` to that thread, which
//!   syncs a batch at a time ([`GroupCommit`]). [`Ledger::sync`], a [`SyncHandle`] and dropping the ledger sync
//!   what is pending.
//! - [`verify_audit_ledger`] verifies the whole retained ledger with bounded memory, reporting a torn last line
//!   ([`Report::torn_tail`]) and the `tail_repair` records apart from tampering; [`verify_audit_event_signature`]
//!   checks one entry's signature.
//! - [`export_audit_ledger`] writes the retained ledger as CSV or JSON Lines, filtered, verifying the chain as it
//!   reads (refusing, or with [`ExportOptions::mark_broken`] marking, the records after a break).
//! - [`SigningKey::load`] loads the signing key fail-closed (empty path, missing, group/world-accessible, oversized
//!   or not an Ed25519 PKCS#8 PEM key: an error, never unsigned output); [`generate_key_pair`] makes one.
//!
//! # Limits of a local chain
//! A clean cut of the newest lines (whole lines removed from the end of the active file) cannot be detected
//! without an external anchor: what remains is a shorter, valid chain. The same holds for deleting the whole
//! retained history together with its checkpoint. Record the latest `sequence` and `entryHash` elsewhere (or
//! compare with the gateway's journal) when that matters. Signatures prevent rewriting a chain without the
//! private key; they do not prevent cutting it.
//!
//! ```
//! use fluxgit_audit::{Approval, Event, EventType, Ledger, Outcome, Risk, SigningKey, VerifyOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("audit").join("mcp.jsonl");
//! let key = SigningKey::from_bytes(&[1; 32]);
//! let public_key = key.public_key();
//! let ledger = Ledger::open(&path, Some(key))?;
//! let event = Event {
//!     tool: "repo.status".into(),
//!     event_type: EventType::ToolCall,
//!     repo_scope: fluxgit_audit::repo_scope("/home/me/repo"),
//!     args_fingerprint: fluxgit_audit::fingerprint(&serde_json::json!({"repoPath": "/home/me/repo"})),
//!     risk: Risk::Read,
//!     approval: Approval::None,
//!     result: Outcome::Success,
//!     session_id: "my-agent".into(),
//!     duration_ms: 3,
//!     summary: "repo.status: success".into(),
//!     read_only: true,
//!     sidecar_read_only: true,
//! };
//! ledger.append(&event)?;
//! ledger.append(&event)?;
//! let keys = [public_key];
//! let report = fluxgit_audit::verify_audit_ledger(&path, &VerifyOptions { public_keys: &keys, require_signed: true })?;
//! assert_eq!((report.chained, report.signed, report.last_sequence), (2, 2, Some(2)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

mod canonical;
mod checkpoint;
mod entry;
mod export;
mod files;
mod group;
mod key;
mod ledger;
mod signature;
mod verify;

pub use canonical::{SHA256_PREFIX, canonical_json, fingerprint, sha256_digest};
pub use checkpoint::CHECKPOINT_VERSION;
// The clock and the operation list live in `fluxgit-contract`; re-exported for the ledger's users.
pub use entry::{
    AUDIT_CHAIN_VERSION, AUDIT_SCHEMA_VERSION, Approval, Event, EventType, GENESIS, MAX_SUMMARY_CHARS, Outcome, Risk,
    repo_scope,
};
pub use export::{
    CHAIN_VERIFIED, CSV_COLUMNS, ExportError, ExportOptions, Exported, Filter, Format, export_audit_ledger,
};
pub use files::MAX_LINE_BYTES;
pub use fluxgit_contract::{OPERATIONS, STEP_TYPES, now_ms, now_ms_i64, now_secs, unix_ms};
pub use group::{Durability, GroupCommit, SyncHandle};
pub use key::{
    KEY_ID_HEX_CHARS, KeyError, MAX_KEY_FILE_BYTES, PublicKey, SigningKey, generate_key_pair, public_key_path,
};
pub use ledger::{
    AppendError, Appended, KEEP_SEGMENTS, Ledger, Limits, MAX_BYTES_VAR, OpenError, RETAIN_DAYS_VAR, ROTATE_BYTES,
    RetentionError,
};
pub use signature::{SIGNATURE_VERSION, SignatureError, Signed, verify_audit_event_signature};
pub use verify::{Report, TailRepair, TornTail, VerifyError, VerifyOptions, verify_audit_ledger};
