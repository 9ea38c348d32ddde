//! Static bearer tokens (`--tokens FILE`): each entry holds a token's SHA-256, never the token, with the roots and
//! toolsets its calls may use.
//!
//! The file is JSON: `{"tokens": [{"name": "team-a", "sha256": "<64 hex>", "roots": ["/srv/a"], "toolsets":
//! ["core"]}]}` (`toolsets` optional: all). `fluxgit-mcp-sidecar token add` writes entries ([`add`]), printing the
//! new token once. A presented token is hashed and compared with every entry in constant time ([`Tokens::check`]).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// Prefix of the tokens [`add`] makes (so that secret scanners and people recognise one).
pub const TOKEN_PREFIX: &str = "fgt_";

/// Largest tokens file read, in bytes (1 MiB): far more than any team's list.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// One entry of the tokens file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    /// Who holds the token (`[A-Za-z0-9._-]{1,64}`): named in logs and refusals, never secret.
    pub name: String,
    /// The token's SHA-256, 64 lowercase hex digits.
    pub sha256: String,
    /// Directories its calls may read repositories under (absolute, canonical when added).
    pub roots: Vec<PathBuf>,
    /// Toolsets its calls may use (`core`, `files`, ...); absent: every toolset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolsets: Option<Vec<String>>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenFile {
    tokens: Vec<TokenEntry>,
}

/// The tokens a server accepts, loaded from a file ([`Tokens::load`]).
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    entries: Vec<(TokenEntry, [u8; 32])>,
}

/// Errors reading or writing a tokens file.
#[derive(Debug, thiserror::Error)]
pub enum TokensError {
    /// The file could not be read or written (the I/O error is the source, shown once by the error chain).
    #[error("{}", path.display())]
    Io {
        /// The tokens file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not what this module writes.
    #[error("{path}: {message}")]
    Invalid {
        /// The tokens file.
        path: PathBuf,
        /// What is wrong, e.g. which entry's hash is not 64 hex digits.
        message: String,
    },
}

impl Tokens {
    /// Reads `path`: a regular file of at most 1 MiB (no FIFO, device or symbolic link), JSON as the module docs
    /// say, at least one entry, every entry with a 64-hex-digit hash, a valid name, at least one absolute root and
    /// known toolsets.
    ///
    /// # Errors
    /// [`TokensError::Io`] when it cannot be opened or read; [`TokensError::Invalid`] for anything else wrong.
    pub fn load(path: &Path) -> Result<Self, TokensError> {
        let file = read_file(path)?;
        if file.tokens.is_empty() {
            return Err(TokensError::Invalid {
                path: path.to_owned(),
                message: "holds no token, so every request would be refused: add one with \
                          `fluxgit-mcp-sidecar token add`"
                    .to_owned(),
            });
        }
        let mut entries = Vec::new();
        for entry in file.tokens {
            let invalid = |message: String| TokensError::Invalid { path: path.to_owned(), message };
            if !valid_name(&entry.name) {
                return Err(invalid(format!("token name {:?}: use 1 to 64 of A-Z a-z 0-9 . _ -", entry.name)));
            }
            let hash = parse_hash(&entry.sha256)
                .ok_or_else(|| invalid(format!("token {}: sha256 must be 64 hex digits", entry.name)))?;
            if entry.roots.is_empty() || entry.roots.iter().any(|root| !root.is_absolute()) {
                return Err(invalid(format!("token {}: roots must be one or more absolute directories", entry.name)));
            }
            if let Some(unknown) = entry.toolsets.iter().flatten().find(|set| !known_toolset(set)) {
                return Err(invalid(format!("token {}: {}", entry.name, unknown_toolset(unknown))));
            }
            entries.push((entry, hash));
        }
        Ok(Self { entries })
    }

    /// The names of the tokens accepted, in the file's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(entry, _)| entry.name.as_str())
    }

    /// The entries accepted, in the file's order.
    pub fn entries(&self) -> impl Iterator<Item = &TokenEntry> {
        self.entries.iter().map(|(entry, _)| entry)
    }

    /// How many tokens are accepted.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no token is accepted.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry whose hash is the SHA-256 of `presented`, compared with every entry in constant time (the time
    /// taken says nothing about how much of a hash matched, nor which entry did).
    pub fn check(&self, presented: &str) -> Option<&TokenEntry> {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let mut found = None;
        for (entry, hash) in &self.entries {
            if constant_time_eq(&digest, hash) {
                found = Some(entry);
            }
        }
        found
    }
}

/// Whether `a` and `b` are equal, looking at every byte whatever the first difference.
pub fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(difference) == 0
}

/// The SHA-256 of `token` as 64 lowercase hex digits (what the file stores).
pub fn hash_hex(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// Adds a token named `name` for `roots` (each canonicalised; must be directories) and `toolsets` to `path`
/// (created with mode 0600 when absent, replaced atomically otherwise) and returns the new token: [`TOKEN_PREFIX`]
/// and 64 hex digits of the system's random generator. The token itself is stored nowhere.
///
/// # Errors
/// A bad name, a name already in the file, a root that is not a directory, an unreadable or invalid file, or a
/// failed write.
pub fn add(path: &Path, name: &str, roots: &[PathBuf], toolsets: Option<Vec<String>>) -> anyhow::Result<String> {
    use anyhow::Context as _;
    anyhow::ensure!(valid_name(name), "--name {name:?}: use 1 to 64 of A-Z a-z 0-9 . _ -");
    anyhow::ensure!(!roots.is_empty(), "--roots: give at least one directory");
    if let Some(unknown) = toolsets.iter().flatten().find(|set| !known_toolset(set)) {
        anyhow::bail!("--toolsets: {}", unknown_toolset(unknown));
    }
    let mut file = match std::fs::symlink_metadata(path) {
        Ok(_) => read_file(path)?,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => TokenFile::default(),
        Err(error) => return Err(error).with_context(|| format!("{}", path.display())),
    };
    anyhow::ensure!(
        file.tokens.iter().all(|entry| entry.name != name),
        "{}: a token named {name} exists already",
        path.display()
    );
    let mut canonical = Vec::new();
    for root in roots {
        let resolved = std::path::absolute(root)
            .and_then(std::fs::canonicalize)
            .with_context(|| format!("--roots {}", root.display()))?;
        anyhow::ensure!(resolved.is_dir(), "--roots {}: not a directory", resolved.display());
        canonical.push(resolved);
    }
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|error| anyhow::anyhow!("the system random generator failed: {error}"))?;
    let token = format!("{TOKEN_PREFIX}{}", hex(&secret));
    file.tokens.push(TokenEntry { name: name.to_owned(), sha256: hash_hex(&token), roots: canonical, toolsets });
    let folder = path.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut temporary = tempfile::NamedTempFile::new_in(folder).with_context(|| format!("{}", folder.display()))?;
    let text = serde_json::to_string_pretty(&file).expect("token files serialise");
    temporary.write_all(format!("{text}\n").as_bytes())?;
    temporary.as_file().sync_all()?;
    temporary.persist(path).with_context(|| format!("{}", path.display()))?;
    Ok(token)
}

fn read_file(path: &Path) -> Result<TokenFile, TokensError> {
    let io = |source| TokensError::Io { path: path.to_owned(), source };
    let invalid = |message: String| TokensError::Invalid { path: path.to_owned(), message };
    let metadata = std::fs::symlink_metadata(path).map_err(io)?;
    if !metadata.is_file() {
        return Err(invalid("not a regular file (a symbolic link, FIFO or device is refused)".to_owned()));
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(invalid(format!("larger than {MAX_FILE_BYTES} bytes")));
    }
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut std::io::Read::take(std::fs::File::open(path).map_err(io)?, MAX_FILE_BYTES),
        &mut text,
    )
    .map_err(io)?;
    serde_json::from_str(&text).map_err(|error| invalid(format!("not a tokens file: {error}")))
}

/// Whether `name` is a toolset.
fn known_toolset(name: &str) -> bool {
    crate::tools::listing::TOOLSETS.iter().any(|toolset| toolset.name == name)
}

/// `unknown toolset "x" (toolsets: core, files, ...)`.
pub fn unknown_toolset(name: &str) -> String {
    let known: Vec<&str> = crate::tools::listing::TOOLSETS.iter().map(|toolset| toolset.name).collect();
    format!("unknown toolset {name:?} (toolsets: {})", known.join(", "))
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn parse_hash(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut hash = [0u8; 32];
    for (index, byte) in hash.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(index * 2..index * 2 + 2)?, 16).ok()?;
    }
    Some(hash)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_added_token_is_accepted_and_only_its_hash_is_stored() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let file = dir.path().join("tokens.json");
        let token = add(&file, "team-a", &[dir.path().to_owned()], None).expect("adds");
        assert!(token.starts_with(TOKEN_PREFIX) && token.len() == TOKEN_PREFIX.len() + 64, "{token}");
        let stored = std::fs::read_to_string(&file).expect("written");
        assert!(!stored.contains(&token[TOKEN_PREFIX.len()..]), "the token is not stored: {stored}");
        assert!(stored.contains(&hash_hex(&token)));
        let tokens = Tokens::load(&file).expect("loads");
        assert_eq!(tokens.check(&token).map(|entry| entry.name.as_str()), Some("team-a"));
        assert!(tokens.check(&format!("{token}x")).is_none());
        assert!(tokens.check("").is_none());
        let second = add(&file, "team-b", &[dir.path().to_owned()], Some(vec!["core".to_owned()])).expect("adds");
        let tokens = Tokens::load(&file).expect("loads");
        assert_eq!(tokens.len(), 2);
        assert_eq!(tokens.check(&second).map(|entry| entry.name.as_str()), Some("team-b"));
        assert!(add(&file, "team-b", &[dir.path().to_owned()], None).is_err(), "names are unique");
    }

    #[test]
    fn an_unreadable_tokens_file_names_its_os_error_once() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        // Permissions do not stop root, so the I/O error comes from a path under a regular file (ENOTDIR).
        let file = dir.path().join("plain");
        std::fs::write(&file, "x").expect("writes");
        let error = Tokens::load(&file.join("tokens.json")).expect_err("not readable");
        let shown = format!("{:#}", anyhow::Error::from(error).context("--tokens"));
        let os_error = std::io::Error::from_raw_os_error(libc::ENOTDIR).to_string();
        assert_eq!(shown.matches(&os_error).count(), 1, "{shown}");
        assert!(shown.starts_with("--tokens: ") && shown.contains("plain/tokens.json"), "{shown}");
    }

    #[test]
    fn a_fifo_or_a_malformed_hash_is_refused_with_its_reason() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
        assert!(status.success());
        let error = Tokens::load(&fifo).expect_err("a FIFO is refused");
        assert!(error.to_string().contains("not a regular file"), "{error}");
        let file = dir.path().join("tokens.json");
        std::fs::write(&file, r#"{"tokens":[{"name":"a","sha256":"abc","roots":["/"]}]}"#).expect("writes");
        let error = Tokens::load(&file).expect_err("a short hash is refused");
        assert!(error.to_string().contains("64 hex digits"), "{error}");
    }
}
