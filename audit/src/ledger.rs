//! The writer: [`Ledger::append`] under a cross-process lock (design.md#audit).
//!
//! Each append takes an exclusive lock on `<ledger>.lock` (a stable file, never renamed), then, holding it:
//! reads the chain's tail (the last line of the active file, else of the newest segment, else the checkpoint, else
//! `genesis`), seals the entry, rotates the active file into a segment if the entry would take it past
//! [`Limits::rotate_bytes`], appends the line with one write and `fsync`s it, and finally prunes segments beyond
//! [`Limits::keep_segments`], writing and syncing the checkpoint before each removal. A grouped append
//! ([`Durability::Grouped`] with a group commit) skips the `fsync` and hands the file to the syncer; the active
//! file is synced before every rotation, so a segment is always durable. No chain state is kept in
//! memory, so any number of processes (sidecars, gateway) can append to one ledger.
//!
//! # Torn tails
//! An append that fails part-way (a full disk writes part of the line and fails with ENOSPC; a crash or a kill
//! stops the write) leaves a torn last line: bytes with no newline, or a last line that is not a JSON object. The
//! next append, and [`Ledger::open`], replace the torn bytes with a `tail_repair` record, chained, hashed and signed
//! like an entry, naming the length and `sha256:` of the bytes cut; the append's entry follows it in the same write
//! and the chain goes on. Nothing is cut unless the chain can be continued from the line before the torn one. The
//! record is written over the torn bytes and the rest is cut only after it, so a repair that fails too (the disk
//! still full) leaves a torn tail again, never a file cut back with no record of the cut. The record written once
//! there is room names the bytes it replaced, which may be an earlier record's torn start.

mod error;

pub use error::AppendError;

use std::fs::File;
use std::io::{self, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::checkpoint;
use crate::entry::{self, ENTRY_HASH, Event, GENESIS, Position, SEGMENT_ID, SEQUENCE, Sealed, Torn};
use crate::files::{self, MAX_LINE_BYTES, Tail};
use crate::group::{Durability, GroupCommit, SyncHandle, Syncer};
use crate::key::SigningKey;

/// Size at which the active file is rotated into a segment: 4 MiB (design.md#audit).
pub const ROTATE_BYTES: u64 = 4 * 1024 * 1024;
/// Rotated segments kept; older ones are pruned behind a checkpoint (design.md#audit).
pub const KEEP_SEGMENTS: usize = 4;

/// The retention by age, in whole days: rotated segments whose newest entry is older are pruned.
pub const RETAIN_DAYS_VAR: &str = "FLUXGIT_MCP_AUDIT_RETAIN_DAYS";
/// The retention by size, in bytes: the oldest rotated segments are pruned while all of them together are larger.
pub const MAX_BYTES_VAR: &str = "FLUXGIT_MCP_AUDIT_MAX_BYTES";

/// Rotation and retention limits. [`Limits::STANDARD`] is what design.md#audit prescribes; tests use smaller ones.
///
/// Retention is applied at each rotation, oldest segment first: a segment is pruned (behind a checkpoint) while
/// more than `keep_segments` are kept, while the kept segments total more than `max_bytes`, or while its newest
/// entry is older than `retain_ms`; the first segment none of these applies to stops the pruning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The active file never grows past this many bytes, unless a single entry is larger or an append repaired a
    /// torn tail (a repair is not rotated: the next append is).
    pub rotate_bytes: u64,
    /// Rotated segments kept at most.
    pub keep_segments: usize,
    /// Bytes of rotated segments kept at most (the active file adds up to `rotate_bytes`).
    pub max_bytes: u64,
    /// Milliseconds a rotated segment is kept after its newest entry; `None`: no limit by age.
    pub retain_ms: Option<u64>,
}

/// Why [`Limits::with_retention`] refused a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RetentionError {
    /// Not a whole number of days from 1 to 36500.
    #[error("{RETAIN_DAYS_VAR} must be a whole number of days from 1 to 36500, got {0:?}")]
    Days(String),
    /// Not a whole number of bytes of at least 1 MiB.
    #[error("{MAX_BYTES_VAR} must be a whole number of bytes, at least 1048576 (1 MiB), got {0:?}")]
    Bytes(String),
}

impl Limits {
    /// 4 MiB segments, 4 kept (16 MiB), no limit by age.
    pub const STANDARD: Limits = Limits {
        rotate_bytes: ROTATE_BYTES,
        keep_segments: KEEP_SEGMENTS,
        max_bytes: ROTATE_BYTES * KEEP_SEGMENTS as u64,
        retain_ms: None,
    };

    /// The standard limits with the retention a person set: `retain_days` ([`RETAIN_DAYS_VAR`]) and `max_bytes`
    /// ([`MAX_BYTES_VAR`]), as their variables' values. A `max_bytes` replaces the bound of four segments; unset,
    /// the standard 16 MiB in four segments stays.
    ///
    /// # Errors
    /// [`RetentionError`] for a value that is not a whole number in range.
    pub fn with_retention(
        retain_days: Option<&std::ffi::OsStr>,
        max_bytes: Option<&std::ffi::OsStr>,
    ) -> Result<Limits, RetentionError> {
        let mut limits = Limits::STANDARD;
        if let Some(value) = retain_days {
            let text = value.to_string_lossy();
            match text.trim().parse::<u64>() {
                Ok(days @ 1..=36500) => limits.retain_ms = Some(days * 86_400_000),
                _ => return Err(RetentionError::Days(text.into_owned())),
            }
        }
        if let Some(value) = max_bytes {
            let text = value.to_string_lossy();
            match text.trim().parse::<u64>() {
                Ok(bytes @ 1_048_576..) => {
                    limits.max_bytes = bytes;
                    limits.keep_segments = usize::MAX;
                }
                _ => return Err(RetentionError::Bytes(text.into_owned())),
            }
        }
        Ok(limits)
    }
}

/// An open ledger: where it is, the signing key if any, and the lock file.
#[derive(Debug)]
pub struct Ledger {
    path: PathBuf,
    key: Option<SigningKey>,
    limits: Limits,
    lock: File,
    disk: Box<dyn Disk>,
    /// The group commit's syncer, when grouped appends are synced in batches.
    syncer: Option<Syncer>,
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
    /// Bytes of a torn last line cut before the entry (recorded by a `tail_repair` record just before it), if
    /// there was one.
    pub torn_bytes_cut: Option<u64>,
}

/// Why the ledger could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The path has no file name or is a directory.
    #[error("audit ledger path {0:?} does not name a file")]
    NotAFile(PathBuf),
    /// The directory or the lock file could not be created, or the lock file is not a regular file.
    #[error("audit ledger {path:?}: {source}")]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
}

/// How the ledger's text reaches the active file: one write of the whole text at the file's position (its end,
/// for a file opened to append), as `write_all` does it. Tests put a disk that fills up in its place, which writes
/// a part of the text and fails with ENOSPC as a full disk does.
pub(crate) trait Disk: std::fmt::Debug + Send + Sync {
    /// Writes `bytes` to `file` at its position.
    fn write(&self, file: &mut File, bytes: &[u8]) -> io::Result<()>;
}

/// The file system itself.
#[derive(Debug)]
struct FileSystem;

impl Disk for FileSystem {
    fn write(&self, file: &mut File, bytes: &[u8]) -> io::Result<()> {
        file.write_all(bytes)
    }
}

impl Ledger {
    /// Opens the ledger at `path` with the standard limits: creates its directory (0700) and lock file (0600) if
    /// needed. `key` signs every entry and checkpoint when given.
    ///
    /// A torn last line in the active file (an append that failed part-way) is cut and recorded now, as the next
    /// append would; when that fails (the disk is still full) it is logged and left to the next append.
    ///
    /// # Errors
    /// [`OpenError`] if the path names no file, the directory or lock file cannot be created, or the lock file is
    /// not a regular file.
    pub fn open(path: &Path, key: Option<SigningKey>) -> Result<Ledger, OpenError> {
        Ledger::open_with_limits(path, key, Limits::STANDARD)
    }

    /// [`Ledger::open`] with other limits.
    ///
    /// # Errors
    /// As [`Ledger::open`].
    pub fn open_with_limits(path: &Path, key: Option<SigningKey>, limits: Limits) -> Result<Ledger, OpenError> {
        Ledger::open_on(path, key, limits, Box::new(FileSystem))
    }

    /// [`Ledger::open_with_limits`] writing through `disk`.
    pub(crate) fn open_on(
        path: &Path,
        key: Option<SigningKey>,
        limits: Limits,
        disk: Box<dyn Disk>,
    ) -> Result<Ledger, OpenError> {
        if path.file_name().is_none() || path.is_dir() {
            return Err(OpenError::NotAFile(path.to_path_buf()));
        }
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            files::create_private_dir(dir).map_err(|source| OpenError::Io { path: dir.to_path_buf(), source })?;
        }
        let lock_path = files::lock_path(path);
        let lock =
            files::open_private_append(&lock_path).map_err(|source| OpenError::Io { path: lock_path, source })?;
        let ledger = Ledger { path: path.to_path_buf(), key, limits, lock, disk, syncer: None };
        if let Err(error) = ledger.locked(|ledger| ledger.repair_locked()) {
            tracing::warn!(%error, "audit ledger: a torn last line was not repaired at open; the next append tries");
        }
        Ok(ledger)
    }

    /// The active file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The key id entries are signed with, if signing.
    pub fn key_id(&self) -> Option<&str> {
        self.key.as_ref().map(SigningKey::key_id)
    }

    /// Starts a group commit: from now on [`Durability::Grouped`] appends are synced in batches by one thread
    /// (design.md#audit), which makes them durable after at most `policy.interval` plus one `fdatasync`. Dropping the
    /// ledger syncs what is pending.
    ///
    /// # Errors
    /// The thread cannot be started.
    pub fn with_group_commit(mut self, policy: GroupCommit) -> io::Result<Ledger> {
        self.syncer = Some(Syncer::start(policy)?);
        Ok(self)
    }

    /// A handle that syncs every grouped append written so far (for an exit that drops nothing); `None` without
    /// a group commit, where every append is synced before it returns.
    pub fn sync_handle(&self) -> Option<SyncHandle> {
        self.syncer.as_ref().map(Syncer::handle)
    }

    /// Syncs every grouped append written so far.
    ///
    /// # Errors
    /// [`AppendError::Io`] when a sync failed.
    pub fn sync(&self) -> Result<(), AppendError> {
        match &self.syncer {
            None => Ok(()),
            Some(syncer) => syncer.handle().sync().map_err(self.io()),
        }
    }

    /// Appends `event` as the next entry of the chain, durably (the line is synced before this returns).
    ///
    /// A torn last line left by an append that failed part-way is replaced by a `tail_repair` record that names
    /// it, written with the entry in the same write over the torn bytes ([`Appended::torn_bytes_cut`]).
    ///
    /// Cost: one lock, a read of the tail (a few KiB), one write and one `fsync`; plus a rename and directory sync
    /// when rotating, and a read of the torn bytes and a truncation after a torn tail.
    ///
    /// # Errors
    /// [`AppendError`]; the caller records the failure as degraded and goes on (design.md#audit).
    pub fn append(&self, event: &Event) -> Result<Appended, AppendError> {
        self.append_with(event, Durability::Synced)
    }

    /// Appends `event` as [`Ledger::append`] does; with [`Durability::Grouped`] and a group commit
    /// ([`Ledger::with_group_commit`]) the line is written before this returns and synced later by the syncer, so
    /// the caller does not wait for the disk.
    ///
    /// # Errors
    /// As [`Ledger::append`].
    pub fn append_with(&self, event: &Event, durability: Durability) -> Result<Appended, AppendError> {
        let grouped = match (&self.syncer, durability) {
            (Some(syncer), Durability::Grouped) => Some(syncer),
            _ => None,
        };
        let (appended, active) = self.locked(|ledger| {
            let mut active = files::open_private_append(&ledger.path).map_err(ledger.io())?;
            let size = active.metadata().map_err(ledger.io())?.len();
            let end = read_end(&ledger.path, &mut active, size)?;
            ledger.write_records(active, size, end, Some(event), grouped.is_some())
        })?;
        if let (Some(syncer), Some(active)) = (grouped, active) {
            syncer.pending(active);
        }
        Ok(appended)
    }

    /// Runs `work` holding the cross-process lock.
    fn locked<T>(&self, work: impl FnOnce(&Self) -> Result<T, AppendError>) -> Result<T, AppendError> {
        self.lock.lock().map_err(|source| AppendError::Io { path: files::lock_path(&self.path), source })?;
        let result = work(self);
        if let Err(error) = self.lock.unlock() {
            // Closing the file (when the ledger is dropped or the process exits) releases the lock anyway.
            tracing::warn!(%error, "audit ledger: unlocking failed");
        }
        result
    }

    /// Cuts and records a torn last line of the active file, if there is one; nothing else is written.
    fn repair_locked(&self) -> Result<Option<Appended>, AppendError> {
        let Some(mut active) = files::open_existing_append(&self.path).map_err(self.io())? else { return Ok(None) };
        let size = active.metadata().map_err(self.io())?.len();
        let end = read_end(&self.path, &mut active, size)?;
        if end.torn.is_none() {
            return Ok(None);
        }
        self.write_records(active, size, end, None, false).map(|(appended, _)| Some(appended))
    }

    /// Writes, after the active file's `end` (`active`, open to append, of `size` bytes), the record of its torn
    /// tail if it has one and then `event` if given: the whole write of design.md#audit. With `defer_sync` the line
    /// is not synced and the active file is returned for the syncer (a repair is always synced at once).
    fn write_records(
        &self,
        mut active: File,
        size: u64,
        end: End,
        event: Option<&Event>,
        defer_sync: bool,
    ) -> Result<(Appended, Option<File>), AppendError> {
        let mut position = match end.link {
            None => self.position_after_segments()?,
            Some(previous) => Position {
                sequence: next_sequence(&self.path, previous.sequence)?,
                segment_id: previous.segment_id,
                previous_hash: previous.entry_hash,
            },
        };
        let records =
            Records { path: &self.path, torn: end.torn.as_ref().map(|(_, torn)| torn), event, key: self.key.as_ref() };
        let mut sealed = records.seal(&position, crate::now_ms())?;
        let length: u64 = sealed.iter().map(|sealed| sealed.line.len() as u64).sum();
        // A repair is never rotated: the torn bytes must leave the file before it becomes a segment, and they are
        // overwritten by the records below. The next append rotates.
        let rotated = end.torn.is_none() && size > 0 && size + length > self.limits.rotate_bytes;
        if rotated {
            // Lines written by grouped appends (of any process) are synced before the file becomes a segment.
            active.sync_data().map_err(self.io())?;
            self.rotate(position.sequence - 1, &position.segment_id)?;
            active = files::open_private_append(&self.path).map_err(self.io())?;
            position.segment_id = new_segment_id();
            sealed = records.seal(&position, crate::now_ms())?;
        }
        let text: String = sealed.iter().map(|sealed| sealed.line.as_str()).collect();
        let mut deferred = None;
        match &end.torn {
            None => {
                self.write(&mut active, &text, size == 0 || rotated, !defer_sync)?;
                deferred = defer_sync.then_some(active);
            }
            Some((start, torn)) => {
                drop(active);
                self.write_over(*start, size, &text)?;
                tracing::warn!(
                    bytes = torn.bytes,
                    "audit ledger: a torn last line left by an append that failed part-way was cut and recorded"
                );
            }
        }
        let pruned = if rotated { self.prune() } else { 0 };
        let written = sealed.len() as u64;
        let last = sealed.pop().expect("a torn tail or an event is always sealed");
        let appended = Appended {
            sequence: position.sequence + written - 1,
            entry_hash: last.entry_hash,
            rotated,
            pruned,
            torn_bytes_cut: end.torn.map(|(_, torn)| torn.bytes),
        };
        Ok((appended, deferred))
    }

    /// Writes `text` over the torn bytes from `start` to `size`, then cuts what is left of them and syncs.
    ///
    /// Overwriting needs no new space for the first bytes: a write that fails part-way (the disk still full)
    /// leaves a torn tail again, never a file cut back with the cut unrecorded.
    fn write_over(&self, start: u64, size: u64, text: &str) -> Result<(), AppendError> {
        let mut file = files::open_to_overwrite(&self.path).map_err(self.io())?;
        file.seek(SeekFrom::Start(start)).map_err(self.io())?;
        self.disk.write(&mut file, text.as_bytes()).map_err(self.io())?;
        let end = start + text.len() as u64;
        if end < size {
            file.set_len(end).map_err(self.io())?;
        }
        file.sync_data().map_err(self.io())?;
        if start == 0 {
            self.sync_dir()?;
        }
        Ok(())
    }

    /// An I/O error on the active file.
    fn io(&self) -> impl FnOnce(io::Error) -> AppendError + '_ {
        move |source| AppendError::Io { path: self.path.clone(), source }
    }

    /// Where the chain continues when the active file is empty: after the newest segment, else after the
    /// checkpoint, else at genesis. A new active file starts a new segment.
    fn position_after_segments(&self) -> Result<Position, AppendError> {
        let listing = files::list_segments(&self.path).map_err(|source| AppendError::Io {
            path: self.path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            source,
        })?;
        let previous = if let Some(newest) = listing.segments.last() {
            let io = |source| AppendError::Io { path: newest.path.clone(), source };
            let mut file = files::open_regular(&newest.path).map_err(io)?;
            let size = file.metadata().map_err(io)?.len();
            let tail = files::last_line(&mut file, size).map_err(io)?;
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

    /// Writes the text with one write through the disk, syncs it when `sync`, and syncs the directory when the
    /// file is new (always: a new file is rare, and a synced line in a file with no durable name is lost).
    fn write(&self, active: &mut File, text: &str, new_file: bool, sync: bool) -> Result<(), AppendError> {
        let io = |source| AppendError::Io { path: self.path.clone(), source };
        self.disk.write(active, text.as_bytes()).map_err(io)?;
        if sync {
            active.sync_data().map_err(io)?;
        }
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
        let sizes: Vec<u64> = listing
            .segments
            .iter()
            .map(|segment| std::fs::symlink_metadata(&segment.path).map_or(0, |metadata| metadata.len()))
            .collect();
        let (mut kept, mut kept_bytes) = (listing.segments.len(), sizes.iter().sum::<u64>());
        let now = crate::now_ms();
        let mut pruned = 0;
        for (segment, size) in listing.segments.iter().zip(sizes) {
            let too_old = || {
                self.limits.retain_ms.is_some_and(|retain| {
                    newest_timestamp(segment).is_some_and(|newest| newest.saturating_add(retain) < now)
                })
            };
            if kept <= self.limits.keep_segments && kept_bytes <= self.limits.max_bytes && !too_old() {
                break;
            }
            if let Err(error) = self.prune_one(segment) {
                tracing::warn!(%error, segment = %segment.path.display(), "audit ledger: segment not pruned");
                break;
            }
            pruned += 1;
            kept -= 1;
            kept_bytes -= size;
        }
        pruned
    }

    fn prune_one(&self, segment: &files::Segment) -> Result<(), AppendError> {
        let io = |source| AppendError::Io { path: segment.path.clone(), source };
        let mut file = files::open_regular(&segment.path).map_err(io)?;
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

/// The `timestamp` of the last line of a segment, if it reads as one.
fn newest_timestamp(segment: &files::Segment) -> Option<u64> {
    let mut file = files::open_regular(&segment.path).ok()?;
    let size = file.metadata().ok()?.len();
    let Tail::Line { line, .. } = files::last_line(&mut file, size).ok()? else { return None };
    serde_json::from_slice::<Map<String, Value>>(&line).ok()?.get("timestamp")?.as_u64()
}

/// What one write puts in the active file: the record of a cut torn tail, the event, or both in that order.
struct Records<'a> {
    /// The active file, named by an exhausted sequence.
    path: &'a Path,
    torn: Option<&'a Torn>,
    event: Option<&'a Event>,
    key: Option<&'a SigningKey>,
}

impl Records<'_> {
    /// Seals the records from `position` on, each with a new id.
    fn seal(&self, position: &Position, timestamp_ms: u64) -> Result<Vec<Sealed>, AppendError> {
        let mut sealed = Vec::with_capacity(2);
        let mut position = position.clone();
        if let Some(torn) = self.torn {
            let repair = entry::seal_tail_repair(torn, &position, &new_id(), timestamp_ms, self.key);
            position = Position {
                sequence: next_sequence(self.path, position.sequence)?,
                segment_id: position.segment_id,
                previous_hash: repair.entry_hash.clone(),
            };
            sealed.push(repair);
        }
        if let Some(event) = self.event {
            sealed.push(entry::seal(event, &position, &new_id(), timestamp_ms, self.key));
        }
        if let Some(long) = sealed.iter().find(|sealed| sealed.line.len() > MAX_LINE_BYTES) {
            return Err(AppendError::LineTooLong(long.line.len()));
        }
        Ok(sealed)
    }
}

/// The chain fields of an entry line.
struct Link {
    sequence: u64,
    entry_hash: String,
    segment_id: String,
}

/// The end of the active file: the chain link of its last whole entry (`None` when it has none) and, when its
/// last line is torn, where the torn bytes start and what they are.
struct End {
    link: Option<Link>,
    torn: Option<(u64, Torn)>,
}

/// Reads the end of the active file at `path` (open as `file`, of `size` bytes). A last line with no newline, or
/// one that is not a JSON object, is torn; the line before it must then be a chained entry (or nothing).
fn read_end(path: &Path, file: &mut File, size: u64) -> Result<End, AppendError> {
    let io = |source| AppendError::Io { path: path.to_path_buf(), source };
    let tail = files::last_line(file, size).map_err(io)?;
    let start = match &tail {
        Tail::Empty => return Ok(End { link: None, torn: None }),
        Tail::Line { line, start } => match serde_json::from_slice::<Map<String, Value>>(line) {
            Ok(entry) => return Ok(End { link: Some(link_of(path, &entry)?), torn: None }),
            Err(_) => *start,
        },
        Tail::Torn { start } => *start,
        Tail::TooLong => return Err(broken(path, "the last line is over the line limit")),
    };
    let torn = torn_bytes(file, start, size).map_err(io)?;
    let link = match files::last_line(file, start).map_err(io)? {
        Tail::Empty => None,
        before => Some(chain_link(path, before).map_err(|error| match error {
            AppendError::BrokenTail { path, reason } => {
                AppendError::BrokenTail { path, reason: format!("before a torn last line, {reason}") }
            }
            other => other,
        })?),
    };
    Ok(End { link, torn: Some((start, torn)) })
}

/// The length and digest of the bytes from `start` to `size` (at most [`MAX_LINE_BYTES`]).
fn torn_bytes(file: &mut File, start: u64, size: u64) -> io::Result<Torn> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(start))?;
    file.take(size - start).read_to_end(&mut bytes)?;
    Ok(Torn { bytes: bytes.len() as u64, sha256: crate::sha256_digest(&bytes) })
}

fn broken(path: &Path, reason: &str) -> AppendError {
    AppendError::BrokenTail { path: path.to_path_buf(), reason: reason.to_owned() }
}

/// Reads the chain fields of the last line of `path`.
fn chain_link(path: &Path, tail: Tail) -> Result<Link, AppendError> {
    let line = match tail {
        Tail::Line { line, .. } => line,
        Tail::Empty => return Err(broken(path, "the file is empty")),
        Tail::Torn { .. } => return Err(broken(path, "the last line is incomplete (no newline)")),
        Tail::TooLong => return Err(broken(path, "the last line is over the line limit")),
    };
    let entry: Map<String, Value> =
        serde_json::from_slice(&line).map_err(|_| broken(path, "the last line is not a JSON object"))?;
    link_of(path, &entry)
}

fn link_of(path: &Path, entry: &Map<String, Value>) -> Result<Link, AppendError> {
    let field = |name| entry.get(name).and_then(Value::as_str).map(str::to_owned);
    match (entry.get(SEQUENCE).and_then(Value::as_u64), field(ENTRY_HASH), field(SEGMENT_ID)) {
        (Some(sequence), Some(entry_hash), Some(segment_id)) => Ok(Link { sequence, entry_hash, segment_id }),
        _ => Err(broken(path, "the last line is not a chained entry")),
    }
}

fn next_sequence(path: &Path, sequence: u64) -> Result<u64, AppendError> {
    sequence.checked_add(1).ok_or_else(|| broken(path, "the sequence number is exhausted"))
}

fn new_segment_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(all(test, unix))]
mod tests;
