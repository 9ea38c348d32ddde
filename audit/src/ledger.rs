//! The writer: [`Ledger::append`] under a cross-process lock (design.md §7).
//!
//! Each append takes an exclusive lock on `<ledger>.lock` (a stable file, never renamed), then, holding it:
//! reads the chain's tail (the last line of the active file, else of the newest segment, else the checkpoint, else
//! `genesis`), seals the entry, rotates the active file into a segment if the entry would take it past
//! [`Limits::rotate_bytes`], appends the line with one write and `fsync`s it, and finally prunes segments beyond
//! [`Limits::keep_segments`], writing and syncing the checkpoint before each removal. No chain state is kept in
//! memory, so any number of processes (sidecars, gateway) can append to one ledger.

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::checkpoint;
use crate::entry::{self, ENTRY_HASH, Event, GENESIS, Position, SEGMENT_ID, SEQUENCE, Sealed};
use crate::files::{self, MAX_LINE_BYTES, Tail};
use crate::key::SigningKey;

/// Size at which the active file is rotated into a segment: 4 MiB (design.md §7).
pub const ROTATE_BYTES: u64 = 4 * 1024 * 1024;
/// Rotated segments kept; older ones are pruned behind a checkpoint (design.md §7).
pub const KEEP_SEGMENTS: usize = 4;

/// Rotation and retention limits. [`Limits::STANDARD`] is what design.md §7 prescribes; tests use smaller ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The active file never grows past this many bytes (unless a single entry is larger).
    pub rotate_bytes: u64,
    /// Rotated segments kept.
    pub keep_segments: usize,
}

impl Limits {
    /// 4 MiB segments, 4 kept.
    pub const STANDARD: Limits = Limits { rotate_bytes: ROTATE_BYTES, keep_segments: KEEP_SEGMENTS };
}

/// An open ledger: where it is, the signing key if any, and the lock file.
#[derive(Debug)]
pub struct Ledger {
    path: PathBuf,
    key: Option<SigningKey>,
    limits: Limits,
    lock: File,
}

/// What one append did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The entry's sequence number.
    pub sequence: u64,
    /// The entry's hash.
    pub entry_hash: String,
    /// Whether the active file was rotated into a segment first.
    pub rotated: bool,
    /// Segments pruned after the append.
    pub pruned: usize,
}

/// Why the ledger could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The path has no file name or is a directory.
    #[error("audit ledger path {0:?} does not name a file")]
    NotAFile(PathBuf),
    /// The directory or the lock file could not be created.
    #[error("audit ledger {path:?}: {source}")]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
}

/// Why an append failed. Nothing was written (the ledger is as before), except that a rotation may have happened.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    /// Reading, writing, renaming or syncing failed (e.g. disk full).
    #[error("audit ledger {path:?}: {source}")]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The chain's last line is not a whole chained entry: the file was cut or edited. Appending would extend a
    /// broken chain, so the ledger refuses until a person checks it (`verify-audit`) and moves it aside.
    #[error("audit ledger {path:?}: cannot continue the chain: {reason}; check it with verify-audit")]
    BrokenTail {
        /// The file whose tail is broken.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The sealed entry is longer than the 256 KiB line limit.
    #[error("audit entry of {0} bytes is over the {MAX_LINE_BYTES}-byte line limit")]
    LineTooLong(usize),
}

impl Ledger {
    /// Opens the ledger at `path` with the standard limits: creates its directory (0700) and lock file (0600) if
    /// needed. `key` signs every entry and checkpoint when given.
    ///
    /// # Errors
    /// [`OpenError`] if the path names no file or the directory or lock file cannot be created.
    pub fn open(path: &Path, key: Option<SigningKey>) -> Result<Ledger, OpenError> {
        Ledger::open_with_limits(path, key, Limits::STANDARD)
    }

    /// [`Ledger::open`] with other limits.
    ///
    /// # Errors
    /// As [`Ledger::open`].
    pub fn open_with_limits(path: &Path, key: Option<SigningKey>, limits: Limits) -> Result<Ledger, OpenError> {
        if path.file_name().is_none() || path.is_dir() {
            return Err(OpenError::NotAFile(path.to_path_buf()));
        }
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            files::create_private_dir(dir).map_err(|source| OpenError::Io { path: dir.to_path_buf(), source })?;
        }
        let lock_path = files::lock_path(path);
        let lock =
            files::open_private_append(&lock_path).map_err(|source| OpenError::Io { path: lock_path, source })?;
        Ok(Ledger { path: path.to_path_buf(), key, limits, lock })
    }

    /// The active file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The key id entries are signed with, if signing.
    pub fn key_id(&self) -> Option<&str> {
        self.key.as_ref().map(SigningKey::key_id)
    }

    /// Appends `event` as the next entry of the chain, durably (the line is synced before this returns).
    ///
    /// Cost: one lock, a read of the tail (a few KiB), one write and one `fsync`; plus a rename and directory sync
    /// when rotating.
    ///
    /// # Errors
    /// [`AppendError`]; the caller records the failure as degraded and goes on (design.md §7).
    pub fn append(&self, event: &Event) -> Result<Appended, AppendError> {
        self.lock.lock().map_err(|source| AppendError::Io { path: files::lock_path(&self.path), source })?;
        let result = self.append_locked(event);
        if let Err(error) = self.lock.unlock() {
            // Closing the file (when the ledger is dropped or the process exits) releases the lock anyway.
            tracing::warn!(%error, "audit ledger: unlocking failed");
        }
        result
    }

    fn append_locked(&self, event: &Event) -> Result<Appended, AppendError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| AppendError::Io { path, source }
        };
        let mut active = files::open_private_append(&self.path).map_err(io(&self.path))?;
        let size = active.metadata().map_err(io(&self.path))?.len();
        let mut position = match files::last_line(&mut active, size).map_err(io(&self.path))? {
            Tail::Empty => self.position_after_segments()?,
            tail => {
                let previous = chain_link(&self.path, tail)?;
                Position {
                    sequence: next_sequence(&self.path, previous.sequence)?,
                    segment_id: previous.segment_id,
                    previous_hash: previous.entry_hash,
                }
            }
        };
        let id = uuid::Uuid::new_v4().to_string();
        let timestamp_ms = crate::now_ms();
        let mut sealed = entry::seal(event, &position, &id, timestamp_ms, self.key.as_ref());
        if sealed.line.len() > MAX_LINE_BYTES {
            return Err(AppendError::LineTooLong(sealed.line.len()));
        }
        let rotated = size > 0 && size + sealed.line.len() as u64 > self.limits.rotate_bytes;
        if rotated {
            self.rotate(position.sequence - 1, &position.segment_id)?;
            active = files::open_private_append(&self.path).map_err(io(&self.path))?;
            position.segment_id = new_segment_id();
            sealed = entry::seal(event, &position, &id, timestamp_ms, self.key.as_ref());
        }
        self.write(&mut active, &sealed, size == 0 || rotated)?;
        let pruned = if rotated { self.prune() } else { 0 };
        Ok(Appended { sequence: position.sequence, entry_hash: sealed.entry_hash, rotated, pruned })
    }

    /// Where the chain continues when the active file is empty: after the newest segment, else after the
    /// checkpoint, else at genesis. A new active file starts a new segment.
    fn position_after_segments(&self) -> Result<Position, AppendError> {
        let listing = files::list_segments(&self.path).map_err(|source| AppendError::Io {
            path: self.path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            source,
        })?;
        let previous = if let Some(newest) = listing.segments.last() {
            let mut file =
                File::open(&newest.path).map_err(|source| AppendError::Io { path: newest.path.clone(), source })?;
            let size = file.metadata().map_err(|source| AppendError::Io { path: newest.path.clone(), source })?.len();
            let tail = files::last_line(&mut file, size)
                .map_err(|source| AppendError::Io { path: newest.path.clone(), source })?;
            let link = chain_link(&newest.path, tail)?;
            Some((link.sequence, link.entry_hash))
        } else {
            let path = files::checkpoint_path(&self.path);
            checkpoint::read_link(&path).map_err(|reason| AppendError::BrokenTail { path, reason })?
        };
        let (sequence, previous_hash) = match previous {
            Some((sequence, hash)) => (next_sequence(&self.path, sequence)?, hash),
            None => (1, GENESIS.to_owned()),
        };
        Ok(Position { sequence, segment_id: new_segment_id(), previous_hash })
    }

    /// Renames the active file (whose last sequence is `last`) into its segment name and syncs the directory.
    fn rotate(&self, last: u64, segment_id: &str) -> Result<(), AppendError> {
        let first_line = files::first_line(&self.path)
            .map_err(|source| AppendError::Io { path: self.path.clone(), source })?
            .unwrap_or_default();
        let first = serde_json::from_slice::<Value>(&first_line)
            .ok()
            .and_then(|entry| entry.get(SEQUENCE).and_then(Value::as_u64))
            .ok_or_else(|| AppendError::BrokenTail {
                path: self.path.clone(),
                reason: "the first line of the active file is not a chained entry".to_owned(),
            })?;
        let segment = files::segment_path(&self.path, first, last, segment_id);
        std::fs::rename(&self.path, &segment).map_err(|source| AppendError::Io { path: segment.clone(), source })?;
        self.sync_dir()
    }

    /// Writes the line with one `write`, syncs it, and syncs the directory when the file is new.
    fn write(&self, active: &mut File, sealed: &Sealed, new_file: bool) -> Result<(), AppendError> {
        let io = |source| AppendError::Io { path: self.path.clone(), source };
        active.write_all(sealed.line.as_bytes()).map_err(io)?;
        active.sync_data().map_err(io)?;
        if new_file {
            self.sync_dir()?;
        }
        Ok(())
    }

    /// Removes the oldest segments beyond the limit, each after a synced checkpoint that covers it. Failures are
    /// logged, not returned: the entry is already durable, and keeping an extra segment harms no one.
    fn prune(&self) -> usize {
        let listing = match files::list_segments(&self.path) {
            Ok(listing) => listing,
            Err(error) => {
                tracing::warn!(%error, "audit ledger: cannot list segments to prune");
                return 0;
            }
        };
        let excess = listing.segments.len().saturating_sub(self.limits.keep_segments);
        let mut pruned = 0;
        for segment in &listing.segments[..excess] {
            if let Err(error) = self.prune_one(segment) {
                tracing::warn!(%error, segment = %segment.path.display(), "audit ledger: segment not pruned");
                break;
            }
            pruned += 1;
        }
        pruned
    }

    fn prune_one(&self, segment: &files::Segment) -> Result<(), AppendError> {
        let io = |source| AppendError::Io { path: segment.path.clone(), source };
        let mut file = File::open(&segment.path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        let link = chain_link(&segment.path, files::last_line(&mut file, size).map_err(io)?)?;
        let checkpoint = checkpoint::Checkpoint {
            pruned_through_sequence: link.sequence,
            pruned_through_hash: link.entry_hash,
            pruned_segment_id: segment.segment_id.clone(),
        };
        checkpoint::write(&files::checkpoint_path(&self.path), &checkpoint, crate::now_ms(), self.key.as_ref())?;
        std::fs::remove_file(&segment.path).map_err(io)?;
        self.sync_dir()
    }

    fn sync_dir(&self) -> Result<(), AppendError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        files::sync_dir(dir).map_err(|source| AppendError::Io { path: dir.to_path_buf(), source })
    }
}

/// The chain fields of an entry line.
struct Link {
    sequence: u64,
    entry_hash: String,
    segment_id: String,
}

/// Reads the chain fields of the last line of `path`.
fn chain_link(path: &Path, tail: Tail) -> Result<Link, AppendError> {
    let broken = |reason: &str| AppendError::BrokenTail { path: path.to_path_buf(), reason: reason.to_owned() };
    let line = match tail {
        Tail::Line(line) => line,
        Tail::Empty => return Err(broken("the file is empty")),
        Tail::Incomplete => return Err(broken("the last line is incomplete (no newline)")),
        Tail::TooLong => return Err(broken("the last line is over the line limit")),
    };
    let entry: Map<String, Value> =
        serde_json::from_slice(&line).map_err(|_| broken("the last line is not a JSON object"))?;
    let field = |name| entry.get(name).and_then(Value::as_str).map(str::to_owned);
    match (entry.get(SEQUENCE).and_then(Value::as_u64), field(ENTRY_HASH), field(SEGMENT_ID)) {
        (Some(sequence), Some(entry_hash), Some(segment_id)) => Ok(Link { sequence, entry_hash, segment_id }),
        _ => Err(broken("the last line is not a chained entry")),
    }
}

fn next_sequence(path: &Path, sequence: u64) -> Result<u64, AppendError> {
    sequence.checked_add(1).ok_or_else(|| AppendError::BrokenTail {
        path: path.to_path_buf(),
        reason: "the sequence number is exhausted".to_owned(),
    })
}

fn new_segment_id() -> String {
    uuid::Uuid::new_v4().to_string()
}
