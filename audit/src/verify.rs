//! The verifier: [`verify_audit_ledger`] streams the retained segments and the active file in chain order with
//! bounded memory (one line of at most 256 KiB at a time) and checks (design.md §7):
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
//! # What a local chain cannot prove
//! Removing the newest lines cleanly (whole lines, from the end) leaves a shorter chain that verifies: only an
//! external anchor (e.g. the last `entryHash` and `sequence` recorded elsewhere) can show that entries are missing
//! at the end. Likewise the deletion or replacement of the whole retained history (with its checkpoint) cannot be
//! detected without such an anchor. Signatures stop anyone without the private key from recomputing a modified
//! chain, but not from cutting it.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::checkpoint::{self, Checkpoint};
use crate::entry::{
    self, AUDIT_CHAIN_VERSION, AUDIT_SCHEMA_VERSION, CHAIN_VERSION, ENTRY_HASH, GENESIS, PREVIOUS_HASH, SCHEMA_VERSION,
    SEGMENT_ID, SEQUENCE,
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
    let active_exists = match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_file() => true,
        Ok(_) => return Err(integrity(path, None, "not a regular file")),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => false,
        Err(source) => return Err(VerifyError::Io { path: path.to_path_buf(), source }),
    };
    if !active_exists && listing.segments.is_empty() && checkpoint_object.is_none() {
        return Err(VerifyError::NotFound(path.to_path_buf()));
    }

    let mut verifier = Verifier::new(*options);
    if let Some(object) = checkpoint_object {
        let checkpoint = checkpoint::parse(&object).map_err(|reason| integrity(&checkpoint_path, None, reason))?;
        verifier.check_signature(&object, false).map_err(|reason| integrity(&checkpoint_path, None, reason))?;
        verifier.report.checkpoint_signed = Some(signature::claims_signature(&object));
        verifier.checkpoint = Some(checkpoint);
    }
    let mut previous_segment_id: Option<String> = None;
    for segment in &listing.segments {
        verifier.verify_file(&segment.path, Some(segment), previous_segment_id.as_deref())?;
        previous_segment_id = Some(segment.segment_id.clone());
    }
    if active_exists {
        verifier.verify_file(path, None, previous_segment_id.as_deref())?;
    }
    verifier.finish(path)
}

fn integrity(path: &Path, line: Option<u64>, reason: impl Into<String>) -> VerifyError {
    VerifyError::Integrity { path: path.to_path_buf(), line, reason: reason.into() }
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
}

impl<'a> Verifier<'a> {
    fn new(options: VerifyOptions<'a>) -> Self {
        let report = Report { signatures_checked: !options.public_keys.is_empty(), ..Report::default() };
        Self { options, report, checkpoint: None, expected: Expected::Start, pending: None }
    }

    /// Verifies one file; `segment` is its parsed name for a rotated segment, `None` for the active file.
    fn verify_file(
        &mut self,
        path: &Path,
        segment: Option<&Segment>,
        previous_segment_id: Option<&str>,
    ) -> Result<(), VerifyError> {
        let file = File::open(path).map_err(|source| VerifyError::Io { path: path.to_path_buf(), source })?;
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
            let fail = |reason: String| integrity(path, Some(number), reason);
            match kind {
                Line::Complete => {}
                Line::Incomplete => return Err(fail("the line is incomplete (the file was cut)".into())),
                Line::TooLong => return Err(fail(format!("a line over {} bytes", files::MAX_LINE_BYTES))),
            }
            let entry: Map<String, Value> =
                serde_json::from_slice(&line).map_err(|_| fail("not a JSON object".into()))?;
            if !is_chained(&entry) {
                if !matches!(self.expected, Expected::Start) {
                    return Err(fail("an unchained (legacy) record inside the chain".into()));
                }
                self.check_signature(&entry, true).map_err(fail)?;
                self.report.legacy += 1;
                self.report.entries += 1;
                continue;
            }
            let sequence = self.check_chained(&entry, file_segment_id.as_deref(), segment).map_err(fail)?;
            if file_segment_id.is_none() {
                let id = entry.get(SEGMENT_ID).and_then(Value::as_str).unwrap_or_default().to_owned();
                if previous_segment_id == Some(id.as_str()) {
                    return Err(fail("the active file reuses the previous segment's segmentId".into()));
                }
                file_segment_id = Some(id);
            }
            first.get_or_insert(sequence);
            last = Some(sequence);
        }
        if let Some(segment) = segment
            && (first, last) != (Some(segment.first), Some(segment.last))
        {
            return Err(integrity(
                path,
                None,
                format!(
                    "the segment is named for sequences {}..{} but holds {}",
                    segment.first,
                    segment.last,
                    range_text(first, last)
                ),
            ));
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
