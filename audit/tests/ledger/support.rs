//! Shared helpers: events, keys, appending and verifying.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use fluxgit_audit::{
    Approval, Event, EventType, Ledger, Outcome, PublicKey, Report, Risk, SigningKey, VerifyError, VerifyOptions,
};

/// A read `tools/call` event; `index` varies its fingerprint and summary.
pub(crate) fn event(index: u64) -> Event {
    Event {
        tool: "repo.status".to_owned(),
        event_type: EventType::ToolCall,
        repo_scope: fluxgit_audit::repo_scope("/home/someone/repo"),
        args_fingerprint: fluxgit_audit::fingerprint(
            &serde_json::json!({"repoPath": "/home/someone/repo", "i": index}),
        ),
        risk: Risk::Read,
        approval: Approval::None,
        result: Outcome::Success,
        session_id: "ledger-test".to_owned(),
        duration_ms: index % 17,
        summary: format!("repo.status: success #{index}"),
        read_only: true,
        sidecar_read_only: true,
    }
}

/// A deterministic signing key.
pub(crate) fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

/// Appends events `from..to`.
pub(crate) fn append_range(ledger: &Ledger, from: u64, to: u64) {
    for index in from..to {
        ledger.append(&event(index)).expect("append");
    }
}

/// Verifies the ledger at `path`.
pub(crate) fn verify(path: &Path, keys: &[PublicKey], require_signed: bool) -> Result<Report, VerifyError> {
    fluxgit_audit::verify_audit_ledger(path, &VerifyOptions { public_keys: keys, require_signed })
}

/// The reason of an integrity failure; panics on success or another error.
pub(crate) fn integrity_reason(result: Result<Report, VerifyError>) -> String {
    match result {
        Err(VerifyError::Integrity { reason, .. }) => reason,
        other => panic!("expected an integrity failure, got {other:?}"),
    }
}

/// The rotated segments beside `active`, oldest first.
pub(crate) fn segments(active: &Path) -> Vec<PathBuf> {
    let prefix = format!("{}.segment-", active.file_name().and_then(|name| name.to_str()).expect("file name"));
    let dir = active.parent().expect("parent");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with(&prefix)))
        .collect();
    found.sort();
    found
}

/// Number of lines of a file.
pub(crate) fn line_count(path: &Path) -> u64 {
    std::fs::read_to_string(path).expect("read").lines().count() as u64
}

/// `sha256:` of the canonical JSON of `object` without `entryHash` and `signature`: what a forger recomputes.
pub(crate) fn rehash(object: &Map<String, Value>) -> String {
    let mut hashed = object.clone();
    hashed.remove("entryHash");
    hashed.remove("signature");
    fluxgit_audit::sha256_digest(fluxgit_audit::canonical_json(&Value::Object(hashed)).as_bytes())
}

/// Signs `object` (which keeps its `signatureKeyId`) with the Ed25519 key of `secret`, as a forger would.
pub(crate) fn sign_with(object: &mut Map<String, Value>, secret: &[u8; 32]) {
    use base64::Engine as _;
    use ed25519_dalek::Signer as _;
    object.remove("signature");
    let message = fluxgit_audit::canonical_json(&Value::Object(object.clone()));
    let signature = ed25519_dalek::SigningKey::from_bytes(secret).sign(message.as_bytes());
    let text = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signature.to_bytes());
    object.insert("signature".into(), text.into());
}
