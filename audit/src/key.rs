//! Ed25519 keys: loading the signing key fail-closed, loading public keys, and generating a key pair (design.md#audit).
//!
//! The signing key is an Ed25519 private key in PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`, as written by
//! [`generate_key_pair`] or `openssl genpkey -algorithm ed25519`). Its key id is the hex of the first 8 bytes of the
//! public key (16 hex characters), so that entries signed by rotated keys can coexist in one ledger.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey as _, DecodePublicKey as _, EncodePrivateKey as _, EncodePublicKey as _};

/// Largest key file accepted, in bytes. An Ed25519 PKCS#8 PEM is under 200 bytes; anything much larger is not one.
pub const MAX_KEY_FILE_BYTES: u64 = 8 * 1024;

/// Length of a key id in hex characters (the first 8 bytes of the public key).
pub const KEY_ID_HEX_CHARS: usize = 16;

/// A loaded signing key and its key id.
pub struct SigningKey {
    key: ed25519_dalek::SigningKey,
    key_id: String,
}

/// A public key and its key id, for verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    key: ed25519_dalek::VerifyingKey,
    key_id: String,
}

/// Why a key could not be loaded or written. Each message names the path and what to do.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The key path is empty (e.g. `FLUXGIT_MCP_AUDIT_SIGN_KEY` set to nothing).
    #[error("the key path is empty")]
    EmptyPath,
    /// Nothing at the path.
    #[error("key file {path:?} does not exist")]
    Missing {
        /// The key path.
        path: PathBuf,
    },
    /// The path is not a regular file.
    #[error("key file {path:?} is not a regular file")]
    NotAFile {
        /// The key path.
        path: PathBuf,
    },
    /// A private key readable or writable by group or others.
    #[error("key file {path:?} is accessible by group or others (mode {mode:04o}); run `chmod 600` on it")]
    Insecure {
        /// The key path.
        path: PathBuf,
        /// The file's permission bits.
        mode: u32,
    },
    /// Larger than [`MAX_KEY_FILE_BYTES`].
    #[error("key file {path:?} is larger than {MAX_KEY_FILE_BYTES} bytes: not an Ed25519 PEM key")]
    Oversized {
        /// The key path.
        path: PathBuf,
    },
    /// Not a PEM Ed25519 key of the expected kind.
    #[error("key file {path:?} is not an Ed25519 {expected} in PEM: {reason}")]
    Invalid {
        /// The key path.
        path: PathBuf,
        /// `PKCS#8 private key` or `public key (SPKI)`.
        expected: &'static str,
        /// What the decoder said.
        reason: String,
    },
    /// [`generate_key_pair`] refuses to overwrite.
    #[error("{path:?} already exists; refusing to overwrite a key")]
    Exists {
        /// The existing path.
        path: PathBuf,
    },
    /// The system's random source failed.
    #[error("no randomness for a new key: {0}")]
    Random(String),
    /// Reading or writing the file failed.
    #[error("key file {path:?}: {source}")]
    Io {
        /// The key path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl SigningKey {
    /// Loads the signing key at `path`, failing closed (design.md#audit): the path must be non-empty and name a regular
    /// file of at most [`MAX_KEY_FILE_BYTES`], with no permission bits for group or others (on Unix), holding an
    /// Ed25519 PKCS#8 PEM private key.
    ///
    /// # Errors
    /// [`KeyError`] naming the path and the problem; the caller must then refuse to write anything.
    pub fn load(path: &Path) -> Result<SigningKey, KeyError> {
        let pem = read_key_file(path, true)?;
        let key = ed25519_dalek::SigningKey::from_pkcs8_pem(&pem).map_err(|error| KeyError::Invalid {
            path: path.to_path_buf(),
            expected: "PKCS#8 private key",
            reason: error.to_string(),
        })?;
        Ok(SigningKey::from_dalek(key))
    }

    /// A signing key from its 32 secret bytes.
    pub fn from_bytes(secret: &[u8; 32]) -> SigningKey {
        SigningKey::from_dalek(ed25519_dalek::SigningKey::from_bytes(secret))
    }

    fn from_dalek(key: ed25519_dalek::SigningKey) -> SigningKey {
        let key_id = key_id(&key.verifying_key());
        SigningKey { key, key_id }
    }

    /// The key id: hex of the first 8 bytes of the public key.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        PublicKey { key: self.key.verifying_key(), key_id: self.key_id.clone() }
    }

    /// The Ed25519 signature of `message`.
    pub(crate) fn sign(&self, message: &[u8]) -> [u8; 64] {
        use ed25519_dalek::Signer as _;
        self.key.sign(message).to_bytes()
    }
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey").field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

impl PublicKey {
    /// Loads a public key from a PEM file (`-----BEGIN PUBLIC KEY-----`, SPKI), as written next to a key by
    /// [`generate_key_pair`] or by `openssl pkey -pubout`.
    ///
    /// # Errors
    /// [`KeyError`] for a missing, oversized or invalid file.
    pub fn load(path: &Path) -> Result<PublicKey, KeyError> {
        let pem = read_key_file(path, false)?;
        PublicKey::from_pem(&pem).map_err(|reason| KeyError::Invalid {
            path: path.to_path_buf(),
            expected: "public key (SPKI)",
            reason,
        })
    }

    /// Parses a PEM public key.
    ///
    /// # Errors
    /// The decoder's message.
    pub fn from_pem(pem: &str) -> Result<PublicKey, String> {
        let key = ed25519_dalek::VerifyingKey::from_public_key_pem(pem).map_err(|error| error.to_string())?;
        Ok(PublicKey { key_id: key_id(&key), key })
    }

    /// The key id: hex of the first 8 bytes of the public key.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The key as PEM (SPKI).
    pub fn to_pem(&self) -> String {
        self.key.to_public_key_pem(LineEnding::LF).expect("an Ed25519 public key always encodes")
    }

    /// Whether `signature` is a valid (strict) Ed25519 signature of `message` by this key.
    pub(crate) fn verifies(&self, message: &[u8], signature: &[u8; 64]) -> bool {
        let signature = ed25519_dalek::Signature::from_bytes(signature);
        self.key.verify_strict(message, &signature).is_ok()
    }
}

/// Generates a new Ed25519 key pair: the private key at `path` (PKCS#8 PEM, created with mode 0600, never
/// overwriting) and the public key at `path` + `.pub.pem`. Returns the public key path.
///
/// # Errors
/// [`KeyError::Exists`] if either file exists; [`KeyError::Io`] or [`KeyError::Random`] otherwise.
pub fn generate_key_pair(path: &Path) -> Result<(SigningKey, PathBuf), KeyError> {
    if path.as_os_str().is_empty() {
        return Err(KeyError::EmptyPath);
    }
    let public_path = public_key_path(path);
    for existing in [path, public_path.as_path()] {
        if existing.symlink_metadata().is_ok() {
            return Err(KeyError::Exists { path: existing.to_path_buf() });
        }
    }
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|error| KeyError::Random(error.to_string()))?;
    let key = SigningKey::from_bytes(&secret);
    secret.fill(0);
    let private_pem = key.key.to_pkcs8_pem(LineEnding::LF).expect("an Ed25519 key always encodes as PKCS#8");
    write_new(path, private_pem.as_bytes(), 0o600)?;
    write_new(&public_path, key.public_key().to_pem().as_bytes(), 0o644)?;
    Ok((key, public_path))
}

/// `path` + `.pub.pem`: where [`generate_key_pair`] puts the public key.
pub fn public_key_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".pub.pem");
    PathBuf::from(name)
}

fn key_id(key: &ed25519_dalek::VerifyingKey) -> String {
    faster_hex::hex_string(&key.as_bytes()[..KEY_ID_HEX_CHARS / 2])
}

/// Reads a key file with the checks of [`SigningKey::load`]; `private` adds the permission check.
fn read_key_file(path: &Path, private: bool) -> Result<String, KeyError> {
    if path.as_os_str().is_empty() {
        return Err(KeyError::EmptyPath);
    }
    let io = |source: std::io::Error| KeyError::Io { path: path.to_path_buf(), source };
    let file = File::open(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => KeyError::Missing { path: path.to_path_buf() },
        _ => io(source),
    })?;
    // The checks use the opened file, so a swap between check and read cannot slip past them.
    let metadata = file.metadata().map_err(io)?;
    if !metadata.is_file() {
        return Err(KeyError::NotAFile { path: path.to_path_buf() });
    }
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = metadata.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(KeyError::Insecure { path: path.to_path_buf(), mode });
        }
    }
    #[cfg(not(unix))]
    let _ = private;
    let mut text = String::new();
    let read = file.take(MAX_KEY_FILE_BYTES + 1).read_to_string(&mut text);
    match read {
        Ok(_) if text.len() as u64 > MAX_KEY_FILE_BYTES => Err(KeyError::Oversized { path: path.to_path_buf() }),
        Ok(_) => Ok(text),
        Err(error) if error.kind() == std::io::ErrorKind::InvalidData => Err(KeyError::Invalid {
            path: path.to_path_buf(),
            expected: if private { "PKCS#8 private key" } else { "public key (SPKI)" },
            reason: "not UTF-8 text".to_owned(),
        }),
        Err(error) => Err(io(error)),
    }
}

/// Creates `path` (never overwriting) with `mode` on Unix, writes `bytes` and syncs.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), KeyError> {
    let io = |source: std::io::Error| match source.kind() {
        std::io::ErrorKind::AlreadyExists => KeyError::Exists { path: path.to_path_buf() },
        _ => KeyError::Io { path: path.to_path_buf(), source },
    };
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(path).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_pair_round_trips_and_ids_match() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.pem");
        let (key, public_path) = generate_key_pair(&path).expect("generate");
        assert_eq!(public_path, dir.path().join("audit.pem.pub.pem"));
        let loaded = SigningKey::load(&path).expect("load private");
        let public = PublicKey::load(&public_path).expect("load public");
        assert_eq!(loaded.key_id(), key.key_id());
        assert_eq!(public.key_id(), key.key_id());
        assert_eq!(key.key_id().len(), KEY_ID_HEX_CHARS);
        let signature = loaded.sign(b"message");
        assert!(public.verifies(b"message", &signature));
        assert!(!public.verifies(b"messagf", &signature));
        assert!(matches!(generate_key_pair(&path), Err(KeyError::Exists { .. })));
    }
}
