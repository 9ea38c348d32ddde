//! Canonical JSON and sha256 fingerprints (design.md#audit).
//!
//! Canonical JSON: object keys sorted by their UTF-8 bytes, recursively; arrays in order; compact (no whitespace);
//! strings and numbers as `serde_json` writes them. Hashes and signatures are computed over these bytes, and the
//! ledger's lines are written in this form too.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// Prefix of every hash and fingerprint in the ledger.
pub const SHA256_PREFIX: &str = "sha256:";

/// The canonical JSON text of `value`.
///
/// ```
/// let value = serde_json::json!({"b": [2, {"d": 1, "c": null}], "a": "é"});
/// assert_eq!(fluxgit_audit::canonical_json(&value), r#"{"a":"é","b":[2,{"c":null,"d":1}]}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// `sha256:` + the lowercase hex sha256 of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(SHA256_PREFIX.len() + 64);
    text.push_str(SHA256_PREFIX);
    text.push_str(&faster_hex::hex_string(&Sha256::digest(bytes)));
    text
}

/// `sha256:` + the hex sha256 of the canonical JSON of `value`: how arguments are recorded (never verbatim).
///
/// ```
/// use serde_json::json;
/// // Key order does not matter.
/// assert_eq!(
///     fluxgit_audit::fingerprint(&json!({"a": 1, "b": 2})),
///     fluxgit_audit::fingerprint(&json!({"b": 2, "a": 1})),
/// );
/// ```
pub fn fingerprint(value: &Value) -> String {
    sha256_digest(canonical_json(value).as_bytes())
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            // `str` ordering is the ordering of the UTF-8 bytes.
            entries.sort_unstable_by(|(a, _), (b, _)| a.as_bytes().cmp(b.as_bytes()));
            out.push('{');
            for (index, (key, value)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::String(text) => write_string(text, out),
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn write_string(text: &str, out: &mut String) {
    out.push_str(&serde_json::to_string(text).expect("a string always serialises"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_sort_by_utf8_bytes_not_by_utf16() {
        // U+FF21 (3 UTF-8 bytes, EF BC A1) sorts before U+1F600 (F0 9F 98 80) by bytes; by UTF-16 code units the
        // surrogate D83D would sort before FF21.
        let value = json!({"\u{1F600}": 1, "\u{FF21}": 2, "Z": 3, "a": 4});
        assert_eq!(canonical_json(&value), "{\"Z\":3,\"a\":4,\"\u{FF21}\":2,\"\u{1F600}\":1}");
    }

    #[test]
    fn strings_are_escaped_as_json_and_numbers_kept() {
        let value = json!({"s": "a\"b\\c\n\u{1}", "n": -12, "f": 1.5, "t": true, "z": null});
        assert_eq!(canonical_json(&value), r#"{"f":1.5,"n":-12,"s":"a\"b\\c\n\u0001","t":true,"z":null}"#);
    }

    #[test]
    fn digest_is_prefixed_lowercase_hex() {
        assert_eq!(sha256_digest(b"abc"), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(fingerprint(&json!({})), sha256_digest(b"{}"));
        assert_eq!(faster_hex::hex_string(&[0x00, 0xab, 0x1f]), "00ab1f");
    }
}
