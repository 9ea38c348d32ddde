//! The verifier: [`verify_audit_ledger`] streams the retained segments and the active file in chain order with
//! bounded memory (one line of at most 256 KiB at a time) and checks (design.md#audit):
//! - every line is a whole JSON object (a file cut inside a line fails);
//! - chained entries: versions, `sequence` one more than the previous entry, `previousHash` equal to the previous
//!   `entryHash` (`genesis` first, or the checkpoint's `prunedThroughHash` after pruning), `entryHash` recomputed,
//!   `segmentId` matching the segment's file name (rotated segments) or constant within the active file;
//! - segment names: well-formed, first and last sequence matching the contents;
//! - the checkpoint: its hash and signature, and that it covers exactly what was pruned;
//! - signatures, when public keys are given; with `require_signed`, every entry and the checkpoint are signed.
//!
//! Legacy (unchained, per-entry) records may only precede the chain; they are counted as `legacy`, never as
//! chained, and their signatures are checked as legacy signatures.
//!
//! # Torn tails
//! An append that failed part-way (a full disk, a crash) leaves the active file's last line torn: no newline, or
//! not a JSON object. That is not tampering with an entry, and everything before it is verified as usual: the
//! report names it ([`Report::torn_tail`]) instead of failing. The writer's next append cuts it and writes a
//! `tail_repair` record, chained and signed like an entry, with the length and digest of the bytes cut; the
//! verifier checks its fields and counts it ([`Report::tail_repairs`]). A torn line anywhere else (inside the
//! active file, in a segment) is an integrity failure.
//!
//! Every file is opened as a regular file only: a FIFO, device or symbolic link in a ledger file's place is an
//! integrity failure, never a wait.
//!
//! # What a local chain cannot prove
//! Removing the newest lines cleanly (whole lines, from the end) leaves a shorter chain that verifies: only an
//! external anchor (e.g. the last `entryHash` and `sequence` recorded elsewhere) can show that entries are missing
//! at the end. Likewise the deletion or replacement of the whole retained history (with its checkpoint) cannot be
//! detected without such an anchor. Signatures stop anyone without the private key from recomputing a modified
//! chain, but not from cutting it.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::canonical::SHA256_PREFIX;
use crate::checkpoint::{self, Checkpoint};
use crate::entry::{
    self, AUDIT_CHAIN_VERSION, AUDIT_SCHEMA_VERSION, CHAIN_VERSION, ENTRY_HASH, EVENT_TYPE, GENESIS, PREVIOUS_HASH,
    SCHEMA_VERSION, SEGMENT_ID, SEQUENCE, TAIL_REPAIR, TORN_BYTES, TORN_SHA256,
};
use crate::files::{self, Line, LineReader, Segment};
use crate::key::PublicKey;
use crate::signature::{self, SignatureError};

/// How to verify.
#[derive(Debug, Clone, Copy)]
pub struct VerifyOptions<'a> {
    /// Keys to check signatures with, chosen by `signatureKeyId`. Empty: signatures are counted, not checked.
    pub public_keys: &'a [PublicKey],
    /// Fail on any unsigned entry or checkpoint. Needs at least one public key.
    pub require_signed: bool,
}

/// Counters of a verified ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Entries read: `chained + legacy`.
    pub entries: u64,
    /// Entries in the hash chain.
    pub chained: u64,
    /// Legacy per-entry records before the chain.
    pub legacy: u64,
    /// Signed entries (checked when public keys were given).
    pub signed: u64,
    /// Unsigned entries.
    pub unsigned: u64,
    /// Files read: rotated segments plus the active file if it exists.
    pub segments: u64,
    /// The first retained chained sequence.
    pub first_sequence: Option<u64>,
    /// The last chained sequence.
    pub last_sequence: Option<u64>,
    /// The last sequence a checkpoint says was pruned, when the retained chain starts from it.
    pub pruned_through: Option<u64>,
    /// Whether a checkpoint file exists, and if so whether it is signed (`Some(true)`).
    pub checkpoint_signed: Option<bool>,
    /// Whether signatures were checked (public keys given).
    pub signatures_checked: bool,
    /// `tail_repair` records in the chain: torn last lines the writer cut and recorded.
    pub tail_repairs: u64,
    /// The newest `tail_repair` record, if any.
    pub last_tail_repair: Option<TailRepair>,
    /// The active file's last line is torn (an append that failed part-way, not yet cut by a later append).
    /// Everything before it verified; `verify-audit` exits 4 for it.
    pub torn_tail: Option<TornTail>,
}

/// A `tail_repair` record: where it is in the chain and how many bytes it says were cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailRepair {
    /// Its sequence.
    pub sequence: u64,
    /// The bytes of the torn line that were cut (`tornBytes`).
    pub torn_bytes: u64,
}

/// A torn last line of the active file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornTail {
    /// Its 1-based line number in the active file.
    pub line: u64,
    /// Its length in bytes, newline included when it has one.
    pub bytes: u64,
}

/// Why a ledger does not verify.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// No active file, segment or checkpoint exists at the path.
    #[error("no audit ledger at {0:?}")]
    NotFound(PathBuf),
    /// `require_signed` without a public key to check signatures with.
    #[error("requiring signatures needs a public key to check them with")]
    NoPublicKey,
    /// A file of the ledger could not be read.
    #[error("cannot read {path:?}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The ledger is malformed or was tampered with.
    #[error("{}{}: {reason}", .path.display(), .line.map(|line| format!(" line {line}")).unwrap_or_default())]
    Integrity {
        /// The file where the problem showed.
        path: PathBuf,
        /// The 1-based line, when the problem is one line.
        line: Option<u64>,
        /// What is wrong.
        reason: String,
    },
}

/// Verifies the whole retained ledger whose active file is `path` (its segments and checkpoint beside it).
///
/// # Errors
/// [`VerifyError`]: nothing to verify, bad options, a read failure, or an integrity failure with its place.
pub fn verify_audit_ledger(path: &Path, options: &VerifyOptions<'_>) -> Result<Report, VerifyError> {
    walk(path, options, false, &mut |_, _| Ok(())).map(|(report, _)| report)
}

/// What [`walk`] hands its sink for every record it reads: the record, and whether the chain vouches for it
/// (`false` for the broken record and every one after it, when walking tolerantly).
pub(crate) type Sink<'s> = dyn FnMut(&Map<String, Value>, bool) -> Result<(), VerifyError> + 's;

/// Verifies the retained ledger as [`verify_audit_ledger`] does, handing every record read to `sink` in chain order,
/// as soon as it is checked.
///
/// With `tolerate`, the first failure of a line (an edited, missing or moved entry, a bad signature, a torn line
/// inside the ledger) does not stop the walk: it is returned beside the report, and the records after it are
/// handed to the sink unverified. Failures that leave nothing to walk (no ledger, a bad checkpoint, a file that
/// cannot be opened) are errors either way.
///
/// # Errors
/// As [`verify_audit_ledger`]; the sink's own errors are passed on.
pub(crate) fn walk(
    path: &Path,
    options: &VerifyOptions<'_>,
    tolerate: bool,
    sink: &mut Sink<'_>,
) -> Result<(Report, Option<VerifyError>), VerifyError> {
    if options.require_signed && options.public_keys.is_empty() {
        return Err(VerifyError::NoPublicKey);
    }
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let listing = files::list_segments(path).map_err(|source| VerifyError::Io { path: dir, source })?;
    if let Some(bad) = listing.malformed.first() {
        return Err(integrity(bad, None, "a file named like a segment whose name does not parse"));
    }
    let checkpoint_path = files::checkpoint_path(path);
    let checkpoint_object =
        checkpoint::read(&checkpoint_path).map_err(|reason| integrity(&checkpoint_path, None, reason))?;
    let active = match files::open_regular(path) {
        Ok(file) => Some(file),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(open_failure(path, error)),
    };
    if active.is_none() && listing.segments.is_empty() && checkpoint_object.is_none() {
        return Err(VerifyError::NotFound(path.to_path_buf()));
    }

    let mut verifier = Verifier::new(*options, tolerate);
    if let Some(object) = checkpoint_object {
        let checkpoint = checkpoint::parse(&object).map_err(|reason| integrity(&checkpoint_path, None, reason))?;
        verifier.check_signature(&object, false).map_err(|reason| integrity(&checkpoint_path, None, reason))?;
        verifier.report.checkpoint_signed = Some(signature::claims_signature(&object));
        verifier.checkpoint = Some(checkpoint);
    }
    let mut previous_segment_id: Option<String> = None;
    for segment in &listing.segments {
        let file = files::open_regular(&segment.path).map_err(|error| open_failure(&segment.path, error))?;
        verifier.verify_file(file, &segment.path, Some(segment), previous_segment_id.as_deref(), sink)?;
        previous_segment_id = Some(segment.segment_id.clone());
    }
    if let Some(file) = active {
        verifier.verify_file(file, path, None, previous_segment_id.as_deref(), sink)?;
    }
    let broken = verifier.broken.take();
    match verifier.finish(path) {
        Ok(report) => Ok((report, broken)),
        // A break explains a chain that ends wrong better than its end does.
        Err(error) => Err(broken.unwrap_or(error)),
    }
}

fn integrity(path: &Path, line: Option<u64>, reason: impl Into<String>) -> VerifyError {
    VerifyError::Integrity { path: path.to_path_buf(), line, reason: reason.into() }
}

/// A ledger file that cannot be opened: something other than a regular file in its place is an integrity failure,
/// any other error an I/O one.
fn open_failure(path: &Path, error: std::io::Error) -> VerifyError {
    match files::not_regular(&error) {
        Some(not_regular) => integrity(path, None, not_regular.to_string()),
        None => VerifyError::Io { path: path.to_path_buf(), source: error },
    }
}

/// What the next chained entry must be.
enum Expected {
    /// No chained entry yet.
    Start,
    /// After a chained entry.
    Next { sequence: u64, previous_hash: String },
}

struct Verifier<'a> {
    options: VerifyOptions<'a>,
    report: Report,
    checkpoint: Option<Checkpoint>,
    expected: Expected,
    /// An interrupted prune: the checkpoint names a retained entry, whose hash must match when it comes.
    pending: Option<(u64, String)>,
    /// Go on after a failure (see [`walk`]).
    tolerate: bool,
    /// The first failure, when tolerating: every record after it is unverified.
    broken: Option<VerifyError>,
}

impl<'a> Verifier<'a> {
    fn new(options: VerifyOptions<'a>, tolerate: bool) -> Self {
        let report = Report { signatures_checked: !options.public_keys.is_empty(), ..Report::default() };
        Self { options, report, checkpoint: None, expected: Expected::Start, pending: None, tolerate, broken: None }
    }

    /// Records `error` as the break when tolerating; returns it otherwise.
    fn fail(&mut self, error: VerifyError) -> Result<(), VerifyError> {
        if !self.tolerate {
            return Err(error);
        }
        self.broken.get_or_insert(error);
        Ok(())
    }

    /// Verifies one file, open as `file`, handing each record to `sink`; `segment` is its parsed name for a rotated
    /// segment, `None` for the active file.
    fn verify_file(
        &mut self,
        file: File,
        path: &Path,
        segment: Option<&Segment>,
        previous_segment_id: Option<&str>,
        sink: &mut Sink<'_>,
    ) -> Result<(), VerifyError> {
        self.report.segments += 1;
        let mut reader = LineReader::new(file);
        let mut line = Vec::new();
        let mut number: u64 = 0;
        let mut file_segment_id: Option<String> = segment.map(|segment| segment.segment_id.clone());
        let (mut first, mut last) = (None, None);
        while let Some(kind) =
            reader.next_line(&mut line).map_err(|source| VerifyError::Io { path: path.to_path_buf(), source })?
        {
            number += 1;
            if self.broken.is_some() {
                // After a break the chain vouches for nothing: what parses is passed on, unverified.
                if kind == Line::TooLong {
                    break;
                }
                if let Ok(entry) = serde_json::from_slice::<Map<String, Value>>(&line) {
                    sink(&entry, false)?;
                }
                continue;
            }
            let fail = |reason: String| integrity(path, Some(number), reason);
            let torn = |bytes: usize| TornTail { line: number, bytes: bytes as u64 };
            match kind {
                Line::Complete => {}
                Line::Incomplete if segment.is_none() => {
                    self.report.torn_tail = Some(torn(line.len()));
                    break;
                }
                Line::Incomplete => {
                    self.fail(fail("the line is incomplete (the file was cut)".into()))?;
                    continue;
                }
                Line::TooLong => {
                    self.fail(fail(format!("a line over {} bytes", files::MAX_LINE_BYTES)))?;
                    break;
                }
            }
            let entry: Map<String, Value> = match serde_json::from_slice(&line) {
                Ok(entry) => entry,
                Err(_) => {
                    let last =
                        reader.at_end().map_err(|source| VerifyError::Io { path: path.to_path_buf(), source })?;
                    if segment.is_none() && last {
                        self.report.torn_tail = Some(torn(line.len() + 1));
                        break;
                    }
                    self.fail(fail("not a JSON object".into()))?;
                    continue;
                }
            };
            if !is_chained(&entry) {
                if !matches!(self.expected, Expected::Start) {
                    self.fail(fail("an unchained (legacy) record inside the chain".into()))?;
                    sink(&entry, false)?;
                    continue;
                }
                if let Err(reason) = self.check_signature(&entry, true) {
                    self.fail(fail(reason))?;
                    sink(&entry, false)?;
                    continue;
                }
                self.report.legacy += 1;
                self.report.entries += 1;
                sink(&entry, true)?;
                continue;
            }
            let sequence = match self.check_chained(&entry, file_segment_id.as_deref(), segment) {
                Ok(sequence) => sequence,
                Err(reason) => {
                    self.fail(fail(reason))?;
                    sink(&entry, false)?;
                    continue;
                }
            };
            if file_segment_id.is_none() {
                let id = entry.get(SEGMENT_ID).and_then(Value::as_str).unwrap_or_default().to_owned();
                if previous_segment_id == Some(id.as_str()) {
                    self.fail(fail("the active file reuses the previous segment's segmentId".into()))?;
                    sink(&entry, false)?;
                    continue;
                }
                file_segment_id = Some(id);
            }
            first.get_or_insert(sequence);
            last = Some(sequence);
            sink(&entry, true)?;
        }
        if let Some(segment) = segment
            && self.broken.is_none()
            && (first, last) != (Some(segment.first), Some(segment.last))
        {
            self.fail(integrity(
                path,
                None,
                format!(
                    "the segment is named for sequences {}..{} but holds {}",
                    segment.first,
                    segment.last,
                    range_text(first, last)
                ),
            ))?;
        }
        Ok(())
    }

    /// Checks one chained entry; returns its sequence.
    fn check_chained(
        &mut self,
        entry: &Map<String, Value>,
        segment_id: Option<&str>,
        segment: Option<&Segment>,
    ) -> Result<u64, String> {
        match entry.get(CHAIN_VERSION).and_then(Value::as_u64) {
            Some(AUDIT_CHAIN_VERSION) => {}
            _ => return Err(format!("auditChainVersion is not {AUDIT_CHAIN_VERSION}")),
        }
        match entry.get(SCHEMA_VERSION).and_then(Value::as_u64) {
            Some(AUDIT_SCHEMA_VERSION) => {}
            _ => return Err(format!("auditSchemaVersion is not {AUDIT_SCHEMA_VERSION}")),
        }
        let text = |name: &str| entry.get(name).and_then(Value::as_str);
        let (Some(sequence), Some(previous_hash), Some(recorded_hash), Some(entry_segment)) =
            (entry.get(SEQUENCE).and_then(Value::as_u64), text(PREVIOUS_HASH), text(ENTRY_HASH), text(SEGMENT_ID))
        else {
            return Err("a chained entry lacks sequence, previousHash, entryHash or segmentId".into());
        };
        if segment_id.is_some_and(|expected| expected != entry_segment) {
            return Err(format!("segmentId {entry_segment} does not match the segment {}", segment_id.unwrap_or("")));
        }
        if entry::entry_hash(entry) != recorded_hash {
            return Err(format!("sequence {sequence}: entryHash does not match the entry (it was edited)"));
        }
        let repair = tail_repair(entry, sequence)?;
        match &self.expected {
            Expected::Next { sequence: expected, previous_hash: expected_hash } => {
                if sequence != *expected {
                    return Err(format!(
                        "sequence {sequence} where {expected} was expected (entries missing or moved)"
                    ));
                }
                if previous_hash != expected_hash {
                    return Err(format!("sequence {sequence}: previousHash does not match the previous entry"));
                }
            }
            Expected::Start => self.check_start(sequence, previous_hash, segment)?,
        }
        if self.pending.as_ref().is_some_and(|(through, _)| *through == sequence)
            && let Some((_, hash)) = self.pending.take().filter(|(_, hash)| hash != recorded_hash)
        {
            return Err(format!("sequence {sequence}: entryHash differs from the checkpoint's {hash}"));
        }
        self.check_signature(entry, false)?;
        self.expected = Expected::Next {
            sequence: sequence.checked_add(1).ok_or("the sequence overflows")?,
            previous_hash: recorded_hash.to_owned(),
        };
        self.report.chained += 1;
        self.report.entries += 1;
        if let Some(repair) = repair {
            self.report.tail_repairs += 1;
            self.report.last_tail_repair = Some(repair);
        }
        self.report.first_sequence.get_or_insert(sequence);
        self.report.last_sequence = Some(sequence);
        Ok(sequence)
    }

    /// The first retained chained entry: genesis, or right after the checkpoint, or (an interrupted prune) inside
    /// the very segment the checkpoint was written for.
    fn check_start(&mut self, sequence: u64, previous_hash: &str, segment: Option<&Segment>) -> Result<(), String> {
        let Some(checkpoint) = &self.checkpoint else {
            if sequence == 1 && previous_hash == GENESIS {
                return Ok(());
            }
            return Err(format!(
                "the chain starts at sequence {sequence} without a checkpoint: earlier entries are missing"
            ));
        };
        let through = checkpoint.pruned_through_sequence;
        if through.checked_add(1) == Some(sequence) {
            if previous_hash != checkpoint.pruned_through_hash {
                return Err(format!("sequence {sequence}: previousHash does not match the checkpoint"));
            }
            self.report.pruned_through = Some(through);
            return Ok(());
        }
        let interrupted = sequence <= through
            && segment
                .is_some_and(|segment| segment.segment_id == checkpoint.pruned_segment_id && segment.last == through);
        if interrupted {
            // The checkpoint was synced but the segment not yet removed: the next append finishes the prune.
            if sequence == 1 && previous_hash != GENESIS {
                return Err("sequence 1 does not start from genesis".into());
            }
            self.pending = Some((through, checkpoint.pruned_through_hash.clone()));
            return Ok(());
        }
        Err(format!(
            "the chain starts at sequence {sequence} but the checkpoint covers entries through {through}: \
             entries are missing"
        ))
    }

    /// Counts and (with keys) checks the signature of an entry or checkpoint; `legacy` for unchained records.
    fn check_signature(&mut self, object: &Map<String, Value>, legacy: bool) -> Result<(), String> {
        let is_checkpoint = !legacy && !object.contains_key(SEQUENCE);
        if signature::claims_signature(object) {
            match signature::verify_audit_event_signature(object, self.options.public_keys) {
                Ok(signature::Signed::Legacy) if !legacy => {
                    return Err("a chained entry with an unversioned (legacy) signature".into());
                }
                Ok(_) => {}
                Err(SignatureError::UnknownKey { .. }) if self.options.public_keys.is_empty() => {}
                Err(error) => return Err(format!("signature: {error}")),
            }
            if !is_checkpoint {
                self.report.signed += 1;
            }
        } else {
            if self.options.require_signed {
                let what = if is_checkpoint { "the checkpoint" } else { "an entry" };
                return Err(format!("{what} is unsigned and signatures are required"));
            }
            if !is_checkpoint {
                self.report.unsigned += 1;
            }
        }
        Ok(())
    }

    fn finish(self, path: &Path) -> Result<Report, VerifyError> {
        if let Some((through, _)) = self.pending {
            return Err(integrity(
                path,
                None,
                format!("the entry at sequence {through} named by the checkpoint is missing"),
            ));
        }
        if let (Some(checkpoint), Expected::Start) = (&self.checkpoint, &self.expected) {
            return Err(integrity(
                path,
                None,
                format!(
                    "a checkpoint covers entries through {} but no later entry is retained",
                    checkpoint.pruned_through_sequence
                ),
            ));
        }
        Ok(self.report)
    }
}

/// The `tail_repair` record that `entry` (of `sequence`) is, if it is one.
///
/// # Errors
/// A `tail_repair` record whose `tornBytes` is not 1 to [`files::MAX_LINE_BYTES`] or whose `tornSha256` is not a
/// `sha256:` digest.
fn tail_repair(entry: &Map<String, Value>, sequence: u64) -> Result<Option<TailRepair>, String> {
    if entry.get(EVENT_TYPE).and_then(Value::as_str) != Some(TAIL_REPAIR) {
        return Ok(None);
    }
    let torn_bytes = entry
        .get(TORN_BYTES)
        .and_then(Value::as_u64)
        .filter(|bytes| (1..=files::MAX_LINE_BYTES as u64).contains(bytes));
    let digest = entry.get(TORN_SHA256).and_then(Value::as_str).and_then(|text| text.strip_prefix(SHA256_PREFIX));
    let digest_ok = digest.is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    match torn_bytes {
        Some(torn_bytes) if digest_ok => Ok(Some(TailRepair { sequence, torn_bytes })),
        _ => Err(format!("sequence {sequence}: a tail_repair record without a valid tornBytes and tornSha256")),
    }
}

/// Whether a record belongs to the chain: it carries any chain field.
fn is_chained(entry: &Map<String, Value>) -> bool {
    [CHAIN_VERSION, SEQUENCE, PREVIOUS_HASH, ENTRY_HASH, SEGMENT_ID].iter().any(|field| entry.contains_key(*field))
}

fn range_text(first: Option<u64>, last: Option<u64>) -> String {
    match (first, last) {
        (Some(first), Some(last)) => format!("{first}..{last}"),
        _ => "no chained entry".to_owned(),
    }
}
