//! Entry signatures (design.md#audit): Ed25519 over the canonical JSON of the entry without `signature`, base64url without
//! padding.
//!
//! Signature versions 2 and 3 keep `signatureKeyId` and `signatureVersion` inside the signed bytes; version 3 is the
//! chained domain (the signed entry also holds `sequence`, `previousHash` and `entryHash`), and the one this crate
//! writes. Legacy signed entries carry no `signatureVersion`: their signed bytes leave out `signatureKeyId` too.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

use crate::canonical::canonical_json;
use crate::key::{KEY_ID_HEX_CHARS, PublicKey, SigningKey};

/// The signature version this crate writes.
pub const SIGNATURE_VERSION: u64 = 3;

/// Field names of the signature.
pub(crate) const SIGNATURE: &str = "signature";
pub(crate) const SIGNATURE_KEY_ID: &str = "signatureKeyId";
pub(crate) const SIGNATURE_VERSION_FIELD: &str = "signatureVersion";

/// How an entry is signed, once its signature checked out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signed {
    /// `signatureVersion` 2 or 3: key id and version inside the signed bytes.
    Versioned(u64),
    /// A legacy entry without `signatureVersion`.
    Legacy,
}

/// Why an entry's signature does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The entry has no `signature`.
    #[error("the entry is not signed")]
    Unsigned,
    /// A signature field has the wrong type or shape (e.g. `signatureKeyId` not 16 hex characters, `signature` not
    /// 64 bytes of base64url), or `signatureKeyId`/`signatureVersion` without a `signature`.
    #[error("malformed signature fields: {0}")]
    Malformed(String),
    /// A `signatureVersion` other than 2 or 3.
    #[error("unsupported signatureVersion {0}")]
    UnsupportedVersion(u64),
    /// None of the given public keys has this key id.
    #[error("signed by key {key_id}, which is not among the public keys given")]
    UnknownKey {
        /// The entry's `signatureKeyId`.
        key_id: String,
    },
    /// The signature does not match the entry.
    #[error("the signature does not match the entry (key {key_id})")]
    Invalid {
        /// The key id whose public key was tried.
        key_id: String,
    },
}

/// Checks the signature of one ledger entry (or checkpoint) against `keys`, chosen by `signatureKeyId`.
///
/// A legacy entry (signed, no `signatureVersion`) is checked against every key when it has no key id.
///
/// # Errors
/// [`SignatureError`]: unsigned, malformed, unsupported version, unknown key, or a signature that does not verify.
pub fn verify_audit_event_signature(entry: &Map<String, Value>, keys: &[PublicKey]) -> Result<Signed, SignatureError> {
    let Some(signature) = entry.get(SIGNATURE) else {
        if entry.contains_key(SIGNATURE_KEY_ID) || entry.contains_key(SIGNATURE_VERSION_FIELD) {
            return Err(SignatureError::Malformed("signatureKeyId or signatureVersion without a signature".into()));
        }
        return Err(SignatureError::Unsigned);
    };
    let signature = decode_signature(signature)?;
    let key_id = match entry.get(SIGNATURE_KEY_ID) {
        None => None,
        Some(Value::String(id)) if id.len() == KEY_ID_HEX_CHARS && id.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Some(id.to_ascii_lowercase())
        }
        Some(_) => return Err(SignatureError::Malformed("signatureKeyId is not 16 hex characters".into())),
    };
    let kind = match entry.get(SIGNATURE_VERSION_FIELD) {
        None => Signed::Legacy,
        Some(version) => match version.as_u64() {
            Some(version @ (2 | 3)) => Signed::Versioned(version),
            Some(other) => return Err(SignatureError::UnsupportedVersion(other)),
            None => return Err(SignatureError::Malformed("signatureVersion is not an integer".into())),
        },
    };
    let mut signed = entry.clone();
    signed.remove(SIGNATURE);
    if kind == Signed::Legacy {
        signed.remove(SIGNATURE_KEY_ID);
    }
    let message = canonical_json(&Value::Object(signed));
    let candidates: Vec<&PublicKey> = match (&key_id, kind) {
        (Some(id), _) => keys.iter().filter(|key| key.key_id() == id).collect(),
        (None, Signed::Legacy) => keys.iter().collect(),
        (None, Signed::Versioned(_)) => {
            return Err(SignatureError::Malformed("a versioned signature needs a signatureKeyId".into()));
        }
    };
    let key_id = key_id.unwrap_or_else(|| "(none)".to_owned());
    if candidates.is_empty() {
        return Err(SignatureError::UnknownKey { key_id });
    }
    if candidates.iter().any(|key| key.verifies(message.as_bytes(), &signature)) {
        Ok(kind)
    } else {
        Err(SignatureError::Invalid { key_id })
    }
}

/// Whether the object carries a signature (or fields that claim one).
pub(crate) fn claims_signature(entry: &Map<String, Value>) -> bool {
    entry.contains_key(SIGNATURE) || entry.contains_key(SIGNATURE_KEY_ID) || entry.contains_key(SIGNATURE_VERSION_FIELD)
}

/// Adds `signatureKeyId` and `signatureVersion` (before hashing: they are part of the hashed and signed bytes).
pub(crate) fn add_signature_header(object: &mut Map<String, Value>, key: &SigningKey) {
    object.insert(SIGNATURE_KEY_ID.to_owned(), Value::from(key.key_id()));
    object.insert(SIGNATURE_VERSION_FIELD.to_owned(), Value::from(SIGNATURE_VERSION));
}

/// Signs the canonical JSON of `object` (which must already carry the signature header) and adds `signature`.
pub(crate) fn sign(object: &mut Map<String, Value>, key: &SigningKey) {
    let message = canonical_json(&Value::Object(object.clone()));
    let signature = URL_SAFE_NO_PAD.encode(key.sign(message.as_bytes()));
    object.insert(SIGNATURE.to_owned(), Value::from(signature));
}

fn decode_signature(value: &Value) -> Result<[u8; 64], SignatureError> {
    let text = value.as_str().ok_or_else(|| SignatureError::Malformed("signature is not a string".into()))?;
    let bytes = URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|error| SignatureError::Malformed(format!("signature is not base64url without padding: {error}")))?;
    bytes.try_into().map_err(|_| SignatureError::Malformed("signature is not 64 bytes".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        let Value::Object(map) = value else { panic!("not an object") };
        map
    }

    #[test]
    fn signed_object_verifies_and_any_change_breaks_it() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let mut entry = object(json!({"tool": "repo.status", "sequence": 1}));
        add_signature_header(&mut entry, &key);
        sign(&mut entry, &key);
        let keys = [key.public_key()];
        assert_eq!(verify_audit_event_signature(&entry, &keys), Ok(Signed::Versioned(3)));

        let mut edited = entry.clone();
        edited.insert("sequence".into(), json!(2));
        assert_eq!(
            verify_audit_event_signature(&edited, &keys),
            Err(SignatureError::Invalid { key_id: key.key_id().to_owned() })
        );
        let other = SigningKey::from_bytes(&[8; 32]);
        assert!(matches!(
            verify_audit_event_signature(&entry, &[other.public_key()]),
            Err(SignatureError::UnknownKey { .. })
        ));
        let mut unsigned = entry.clone();
        unsigned.remove(SIGNATURE);
        assert!(matches!(verify_audit_event_signature(&unsigned, &keys), Err(SignatureError::Malformed(_))));
    }

    #[test]
    fn legacy_signature_leaves_out_the_key_id() {
        let key = SigningKey::from_bytes(&[9; 32]);
        let mut entry = object(json!({"tool": "repo.status"}));
        sign(&mut entry, &key);
        entry.insert(SIGNATURE_KEY_ID.into(), Value::from(key.key_id()));
        assert_eq!(verify_audit_event_signature(&entry, &[key.public_key()]), Ok(Signed::Legacy));
    }
}
