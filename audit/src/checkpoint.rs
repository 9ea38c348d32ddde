//! The retention checkpoint (design.md#audit): before the oldest segment is pruned, `<ledger>.checkpoint` is replaced
//! (written to a temporary file, synced, renamed, directory synced) by one canonical JSON object:
//!
//! `{checkpointVersion: 1, timestamp, prunedThroughSequence, prunedThroughHash, prunedSegmentId, entryHash,
//! [signatureKeyId, signatureVersion, signature]}`
//!
//! `prunedThroughHash` is the `entryHash` of the last pruned entry, so the first retained entry must name it as its
//! `previousHash`. `entryHash` and the signature are computed as for entries. Only the latest checkpoint is kept: it
//! covers everything pruned before it.

use std::fs::OpenOptions;
use std::io::{Read as _, Write as _};
use std::path::Path;

use serde_json::{Map, Value};

use crate::canonical::canonical_json;
use crate::entry::{self, ENTRY_HASH};
use crate::files::{self, MAX_LINE_BYTES};
use crate::key::SigningKey;
use crate::ledger::AppendError;

/// `checkpointVersion` written and understood.
pub const CHECKPOINT_VERSION: u64 = 1;

const VERSION: &str = "checkpointVersion";
const THROUGH_SEQUENCE: &str = "prunedThroughSequence";
const THROUGH_HASH: &str = "prunedThroughHash";
const SEGMENT: &str = "prunedSegmentId";

/// What a checkpoint says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    /// The last pruned sequence.
    pub(crate) pruned_through_sequence: u64,
    /// The `entryHash` of that entry.
    pub(crate) pruned_through_hash: String,
    /// The segment pruned last.
    pub(crate) pruned_segment_id: String,
}

/// Replaces the checkpoint at `path` durably.
pub(crate) fn write(
    path: &Path,
    checkpoint: &Checkpoint,
    timestamp_ms: u64,
    key: Option<&SigningKey>,
) -> Result<(), AppendError> {
    let mut object = Map::new();
    object.insert(VERSION.to_owned(), CHECKPOINT_VERSION.into());
    object.insert("timestamp".to_owned(), timestamp_ms.into());
    object.insert(THROUGH_SEQUENCE.to_owned(), checkpoint.pruned_through_sequence.into());
    object.insert(THROUGH_HASH.to_owned(), checkpoint.pruned_through_hash.as_str().into());
    object.insert(SEGMENT.to_owned(), checkpoint.pruned_segment_id.as_str().into());
    entry::seal_object(&mut object, key);
    let mut text = canonical_json(&Value::Object(object));
    text.push('\n');

    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = std::path::PathBuf::from(temporary);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| AppendError::Io { path, source }
    };
    // A leftover of an interrupted write, or anything planted there, is removed: the temporary file is always
    // created anew (`O_EXCL` neither follows a symbolic link nor opens a FIFO).
    match std::fs::remove_file(&temporary) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(io(&temporary)(error)),
    }
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temporary).map_err(io(&temporary))?;
    file.write_all(text.as_bytes()).map_err(io(&temporary))?;
    file.sync_all().map_err(io(&temporary))?;
    std::fs::rename(&temporary, path).map_err(io(path))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    files::sync_dir(dir).map_err(io(dir))
}

/// Reads the checkpoint object at `path`, if there is one (at most [`MAX_LINE_BYTES`]).
///
/// # Errors
/// A reason when the file exists but is not a regular file, cannot be read or is not one JSON object.
pub(crate) fn read(path: &Path) -> Result<Option<Map<String, Value>>, String> {
    let file = match files::open_regular(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(format!("cannot open the checkpoint: {error}")),
    };
    let mut text = Vec::new();
    file.take(MAX_LINE_BYTES as u64 + 1)
        .read_to_end(&mut text)
        .map_err(|error| format!("cannot read the checkpoint: {error}"))?;
    if text.len() > MAX_LINE_BYTES {
        return Err("the checkpoint is over the line limit".to_owned());
    }
    serde_json::from_slice(&text).map(Some).map_err(|_| "the checkpoint is not one JSON object".to_owned())
}

/// Checks a checkpoint object's version, fields and `entryHash` (not its signature).
///
/// # Errors
/// What is wrong with it.
pub(crate) fn parse(object: &Map<String, Value>) -> Result<Checkpoint, String> {
    match object.get(VERSION).and_then(Value::as_u64) {
        Some(CHECKPOINT_VERSION) => {}
        Some(other) => return Err(format!("unsupported checkpointVersion {other}")),
        None => return Err("the checkpoint has no checkpointVersion".to_owned()),
    }
    let text = |name: &str| object.get(name).and_then(Value::as_str).map(str::to_owned);
    let (Some(pruned_through_sequence), Some(pruned_through_hash), Some(pruned_segment_id), Some(recorded)) =
        (object.get(THROUGH_SEQUENCE).and_then(Value::as_u64), text(THROUGH_HASH), text(SEGMENT), text(ENTRY_HASH))
    else {
        return Err(
            "the checkpoint lacks prunedThroughSequence, prunedThroughHash, prunedSegmentId or entryHash".to_owned()
        );
    };
    if entry::entry_hash(object) != recorded {
        return Err("the checkpoint's entryHash does not match its content".to_owned());
    }
    Ok(Checkpoint { pruned_through_sequence, pruned_through_hash, pruned_segment_id })
}

/// For the writer: where the chain continues after the checkpoint at `path`, if there is one.
pub(crate) fn read_link(path: &Path) -> Result<Option<(u64, String)>, String> {
    let Some(object) = read(path)? else { return Ok(None) };
    let checkpoint = parse(&object)?;
    Ok(Some((checkpoint.pruned_through_sequence, checkpoint.pruned_through_hash)))
}
