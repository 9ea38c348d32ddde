//! The ledger's files beside the active one, and bounded line reading.
//!
//! For an active file `mcp.jsonl` in a directory:
//! - rotated segments: `mcp.jsonl.segment-<first>-<last>-<segmentId>`, where `first` and `last` are the segment's
//!   first and last `sequence`, 20 digits zero-padded (so names sort in chain order), and `segmentId` the id every
//!   entry of the segment carries;
//! - `mcp.jsonl.checkpoint`: the latest retention checkpoint (one JSON object), written before a segment is pruned;
//! - `mcp.jsonl.lock`: the cross-process lock file (never renamed or removed).

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};

/// Longest ledger line in bytes, newline included (design.md §7: 256 KiB).
pub const MAX_LINE_BYTES: usize = 256 * 1024;

const SEGMENT_MARK: &str = ".segment-";
const SEQUENCE_DIGITS: usize = 20;

/// A rotated segment, as named on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) path: PathBuf,
    pub(crate) first: u64,
    pub(crate) last: u64,
    pub(crate) segment_id: String,
}

/// The segments of a ledger, in chain order, and the names that look like segments but do not parse.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub(crate) segments: Vec<Segment>,
    pub(crate) malformed: Vec<PathBuf>,
}

/// The lock file of the ledger at `active`.
pub(crate) fn lock_path(active: &Path) -> PathBuf {
    sibling(active, ".lock")
}

/// The checkpoint file of the ledger at `active`.
pub(crate) fn checkpoint_path(active: &Path) -> PathBuf {
    sibling(active, ".checkpoint")
}

/// The path of a rotated segment.
pub(crate) fn segment_path(active: &Path, first: u64, last: u64, segment_id: &str) -> PathBuf {
    sibling(active, &format!("{SEGMENT_MARK}{first:020}-{last:020}-{segment_id}"))
}

fn sibling(active: &Path, suffix: &str) -> PathBuf {
    let mut name = active.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Lists the rotated segments of the ledger at `active`, sorted by first sequence. A missing directory lists none.
pub(crate) fn list_segments(active: &Path) -> io::Result<Listing> {
    let (Some(dir), Some(file_name)) = (active.parent(), active.file_name().and_then(|name| name.to_str())) else {
        return Ok(Listing::default());
    };
    let prefix = format!("{file_name}{SEGMENT_MARK}");
    let entries = match std::fs::read_dir(if dir.as_os_str().is_empty() { Path::new(".") } else { dir }) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Listing::default()),
        Err(error) => return Err(error),
    };
    let mut listing = Listing::default();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix(&prefix) else { continue };
        match parse_segment_name(rest) {
            Some((first, last, segment_id)) => {
                listing.segments.push(Segment { path: dir.join(name), first, last, segment_id })
            }
            None => listing.malformed.push(dir.join(name)),
        }
    }
    listing.segments.sort_by_key(|segment| (segment.first, segment.last));
    listing.malformed.sort();
    Ok(listing)
}

/// Parses `<first>-<last>-<segmentId>`.
fn parse_segment_name(rest: &str) -> Option<(u64, u64, String)> {
    let first = rest.get(..SEQUENCE_DIGITS)?;
    let rest = rest.get(SEQUENCE_DIGITS..)?.strip_prefix('-')?;
    let last = rest.get(..SEQUENCE_DIGITS)?;
    let segment_id = rest.get(SEQUENCE_DIGITS..)?.strip_prefix('-')?;
    let digits = |text: &str| text.bytes().all(|b| b.is_ascii_digit()).then(|| text.parse::<u64>().ok()).flatten();
    let valid_id = !segment_id.is_empty() && segment_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let (first, last) = (digits(first)?, digits(last)?);
    (valid_id && first <= last).then(|| (first, last, segment_id.to_owned()))
}

/// The end of a file, as far as the chain is concerned.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Tail {
    /// The file is empty.
    Empty,
    /// The last complete line, without its newline.
    Line(Vec<u8>),
    /// The file does not end with a newline: its last line was cut.
    Incomplete,
    /// The last line is longer than [`MAX_LINE_BYTES`].
    TooLong,
}

/// Reads the last line of `file` (of `size` bytes), reading backwards in growing chunks and never more than
/// [`MAX_LINE_BYTES`] + 1 bytes.
pub(crate) fn last_line(file: &mut File, size: u64) -> io::Result<Tail> {
    if size == 0 {
        return Ok(Tail::Empty);
    }
    let limit = size.min(MAX_LINE_BYTES as u64 + 1);
    let mut window: u64 = 4096.min(limit);
    loop {
        let mut buffer = vec![0u8; window as usize];
        file.seek(SeekFrom::Start(size - window))?;
        file.read_exact(&mut buffer)?;
        if buffer.last() != Some(&b'\n') {
            return Ok(Tail::Incomplete);
        }
        let body = &buffer[..buffer.len() - 1];
        if let Some(newline) = body.iter().rposition(|&b| b == b'\n') {
            return Ok(Tail::Line(body[newline + 1..].to_vec()));
        }
        if window == size {
            return Ok(Tail::Line(body.to_vec()));
        }
        if window == limit {
            return Ok(Tail::TooLong);
        }
        window = (window * 4).min(limit);
    }
}

/// Reads the first line of the file at `path` (without its newline), at most [`MAX_LINE_BYTES`]; `None` if the file
/// is empty or its first line is incomplete or too long.
pub(crate) fn first_line(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let mut reader = LineReader::new(File::open(path)?);
    let mut line = Vec::new();
    Ok(match reader.next_line(&mut line)? {
        Some(Line::Complete) => Some(line),
        _ => None,
    })
}

/// What [`LineReader::next_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A whole line (the buffer holds it without its newline).
    Complete,
    /// The last bytes of the file, without a newline: the file was cut.
    Incomplete,
    /// A line longer than [`MAX_LINE_BYTES`]; the reader cannot go on.
    TooLong,
}

/// Reads lines of at most [`MAX_LINE_BYTES`] with one reused buffer: memory stays bounded whatever the file.
pub(crate) struct LineReader {
    input: io::BufReader<File>,
}

impl LineReader {
    pub(crate) fn new(file: File) -> Self {
        Self { input: io::BufReader::with_capacity(64 * 1024, file) }
    }

    /// Reads the next line into `line` (cleared first); `None` at end of file.
    pub(crate) fn next_line(&mut self, line: &mut Vec<u8>) -> io::Result<Option<Line>> {
        line.clear();
        let read = (&mut self.input).take(MAX_LINE_BYTES as u64).read_until(b'\n', line)?;
        if read == 0 {
            return Ok(None);
        }
        if line.last() == Some(&b'\n') {
            line.pop();
            return Ok(Some(Line::Complete));
        }
        if read == MAX_LINE_BYTES {
            return Ok(Some(Line::TooLong));
        }
        Ok(Some(Line::Incomplete))
    }
}

/// Opens (creating if needed) a private file for appending and reading: mode 0600 on Unix.
pub(crate) fn open_private_append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Creates `dir` and its missing parents (mode 0700 on Unix for the ones created).
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Syncs a directory so that a rename or removal in it is durable (a no-op where directories cannot be opened).
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(if dir.as_os_str().is_empty() { Path::new(".") } else { dir })?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn segment_names_round_trip_and_sort() {
        let active = Path::new("/l/mcp.jsonl");
        let path = segment_path(active, 1, 4740, "f0e1e821-0600-4a0b-ae25-953dec15fad8");
        assert_eq!(
            path,
            Path::new(
                "/l/mcp.jsonl.segment-00000000000000000001-00000000000000004740-f0e1e821-0600-4a0b-ae25-953dec15fad8"
            )
        );
        let rest = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix("mcp.jsonl.segment-"));
        assert_eq!(
            rest.and_then(parse_segment_name),
            Some((1, 4740, "f0e1e821-0600-4a0b-ae25-953dec15fad8".to_owned()))
        );
        for bad in
            ["1-2-x", "00000000000000000002-00000000000000000001-x", "00000000000000000001-00000000000000000002-"]
        {
            assert_eq!(parse_segment_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn last_line_finds_long_lines_and_cuts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let long = "x".repeat(10_000);
        std::fs::write(&path, format!("a\n{long}\n")).expect("write");
        let mut file = File::open(&path).expect("open");
        let size = file.metadata().expect("meta").len();
        assert_eq!(last_line(&mut file, size).expect("tail"), Tail::Line(long.into_bytes()));
        std::fs::write(&path, "only\n").expect("write");
        let mut file = File::open(&path).expect("open");
        assert_eq!(last_line(&mut file, 5).expect("tail"), Tail::Line(b"only".to_vec()));
        let mut file = OpenOptions::new().append(true).read(true).open(&path).expect("open");
        file.write_all(b"cut").expect("write");
        assert_eq!(last_line(&mut file, 8).expect("tail"), Tail::Incomplete);
        let huge = "y".repeat(MAX_LINE_BYTES + 10);
        std::fs::write(&path, format!("{huge}\n")).expect("write");
        let mut file = File::open(&path).expect("open");
        let size = file.metadata().expect("meta").len();
        assert_eq!(last_line(&mut file, size).expect("tail"), Tail::TooLong);
    }
}
