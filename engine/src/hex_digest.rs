//! Short hex digests that name a repository, a query or a cursor: in history cursors and in the
//! file names of the commit indexes and the movement stores.

use sha2::{Digest, Sha256};

/// The first `hex_len` hex digits of sha256 over `parts` joined by NUL bytes.
pub(crate) fn hex_digest(parts: &[&str], hex_len: usize) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let mut hex: String = faster_hex::hex_string(&hasher.finalize());
    hex.truncate(hex_len);
    hex
}
