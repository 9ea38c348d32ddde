//! The ledger's files beside the active one, bounded line reading, and opening them as regular files only.
//!
//! For an active file `mcp.jsonl` in a directory:
//! - rotated segments: `mcp.jsonl.segment-<first>-<last>-<segmentId>`, where `first` and `last` are the segment's
//!   first and last `sequence`, 20 digits zero-padded (so names sort in chain order), and `segmentId` the id every
//!   entry of the segment carries;
//! - `mcp.jsonl.checkpoint`: the latest retention checkpoint (one JSON object), written before a segment is pruned;
//! - `mcp.jsonl.lock`: the cross-process lock file (never renamed or removed).
//!
//! Every one of them is opened with `O_NONBLOCK` and `O_NOFOLLOW`, then checked with `fstat` on the open
//! descriptor ([`open_regular`], [`open_private_append`]): a FIFO, a device, a socket or a symbolic link in a
//! ledger file's place is refused with [`NotRegular`], never waited on or read without end.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};

/// Longest ledger line in bytes, newline included (design.md#audit: 256 KiB).
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
    /// The last line is whole: its bytes without the newline, and the offset where it starts.
    Line {
        /// The line without its newline.
        line: Vec<u8>,
        /// Its first byte's offset in the file.
        start: u64,
    },
    /// The file does not end with a newline: its last line, from `start` to the end, was cut (an append that
    /// failed part-way, a full disk or a crash).
    Torn {
        /// The offset of the cut line's first byte: the end of the last whole line, or 0.
        start: u64,
    },
    /// The last line is longer than [`MAX_LINE_BYTES`] (newline included), whole or not.
    TooLong,
}

/// Reads the end of `file` (of `size` bytes), reading backwards in growing chunks and never more than
/// [`MAX_LINE_BYTES`] + 1 bytes.
///
/// A whole line is at most [`MAX_LINE_BYTES`] bytes with its newline, and a cut one at most
/// [`MAX_LINE_BYTES`] - 1 bytes, as [`LineReader`] reads them.
pub(crate) fn last_line(file: &mut File, size: u64) -> io::Result<Tail> {
    if size == 0 {
        return Ok(Tail::Empty);
    }
    let limit = size.min(MAX_LINE_BYTES as u64 + 1);
    let mut window: u64 = 4096.min(limit);
    loop {
        let from = size - window;
        let mut buffer = vec![0u8; usize::try_from(window).expect("at most MAX_LINE_BYTES + 1")];
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(&mut buffer)?;
        let whole = buffer.last() == Some(&b'\n');
        let body = if whole { &buffer[..buffer.len() - 1] } else { &buffer[..] };
        let start = match body.iter().rposition(|&b| b == b'\n') {
            Some(newline) => Some(from + newline as u64 + 1),
            None if from == 0 => Some(0),
            None => None,
        };
        if let Some(start) = start {
            let body_end = if whole { size - 1 } else { size };
            if body_end - start >= MAX_LINE_BYTES as u64 {
                return Ok(Tail::TooLong);
            }
            if !whole {
                return Ok(Tail::Torn { start });
            }
            let skip = usize::try_from(start - from).expect("inside the window");
            return Ok(Tail::Line { line: body[skip..].to_vec(), start });
        }
        if window == limit {
            return Ok(Tail::TooLong);
        }
        window = (window * 4).min(limit);
    }
}

/// Reads the first line of the regular file at `path` (without its newline), at most [`MAX_LINE_BYTES`]; `None` if
/// the file is empty or its first line is incomplete or too long.
pub(crate) fn first_line(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let mut reader = LineReader::new(open_regular(path)?);
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

    /// Whether the file has no byte left after the lines read so far.
    pub(crate) fn at_end(&mut self) -> io::Result<bool> {
        Ok(self.input.fill_buf()?.is_empty())
    }
}

/// Something other than a regular file where a ledger file should be: the error inside the [`io::Error`] that
/// [`open_regular`] and [`open_private_append`] return for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotRegular(pub(crate) &'static str);

impl std::fmt::Display for NotRegular {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a {}, not a regular file", self.0)
    }
}

impl std::error::Error for NotRegular {}

/// What is in a ledger file's place, when [`open_regular`] or [`open_private_append`] refused it.
pub(crate) fn not_regular(error: &io::Error) -> Option<NotRegular> {
    error.get_ref().and_then(|inner| inner.downcast_ref::<NotRegular>()).copied()
}

/// Opens the regular file at `path` for reading, without blocking and without following a symbolic link.
///
/// # Errors
/// The open's own error (`NotFound` for a missing file), or an [`io::Error`] holding [`NotRegular`] for a FIFO,
/// device, socket, directory or symbolic link.
pub(crate) fn open_regular(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    open_checked(path, &mut options)
}

/// Opens (creating if needed) a private regular file for appending and reading: mode 0600 on Unix, without
/// blocking and without following a symbolic link.
///
/// # Errors
/// As [`open_regular`].
pub(crate) fn open_private_append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    open_checked(path, &mut options)
}

/// Opens the existing regular file at `path` for appending and reading, as [`open_private_append`] does; `None`
/// when there is no file.
///
/// # Errors
/// As [`open_regular`], except that a missing file is `Ok(None)`.
pub(crate) fn open_existing_append(path: &Path) -> io::Result<Option<File>> {
    let mut options = OpenOptions::new();
    options.read(true).append(true);
    match open_checked(path, &mut options) {
        Ok(file) => Ok(Some(file)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// Opens the existing regular file at `path` for writing at any offset (not appending), as [`open_regular`] does.
///
/// # Errors
/// As [`open_regular`].
pub(crate) fn open_to_overwrite(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true);
    open_checked(path, &mut options)
}

/// Opens with `O_NONBLOCK` (a FIFO without a writer opens at once) and `O_NOFOLLOW`, then checks the open
/// descriptor with `fstat`, so that a file swapped between a check and the open cannot slip through.
fn open_checked(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(options, libc::O_NONBLOCK | libc::O_NOFOLLOW);
    let file = match options.open(path) {
        Ok(file) => file,
        Err(error) => {
            // `O_NOFOLLOW` fails with ELOOP on a symbolic link, and opening a directory to write with EISDIR: name
            // them as what they are.
            let link = std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.file_type().is_symlink());
            if link && error.kind() != io::ErrorKind::NotFound {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, NotRegular("symbolic link")));
            }
            if error.kind() == io::ErrorKind::IsADirectory {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, NotRegular("directory")));
            }
            return Err(error);
        }
    };
    let metadata = file.metadata()?;
    if metadata.is_file() {
        return Ok(file);
    }
    Err(io::Error::new(io::ErrorKind::InvalidInput, NotRegular(kind_name(&metadata))))
}

/// What a file of this type is called in messages.
fn kind_name(metadata: &std::fs::Metadata) -> &'static str {
    let kind = metadata.file_type();
    if kind.is_dir() {
        return "directory";
    }
    if kind.is_symlink() {
        return "symbolic link";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return "FIFO";
        }
        if kind.is_socket() {
            return "socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "device";
        }
    }
    "file of an unsupported type"
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
/// It is opened with `O_DIRECTORY`, so nothing else in its place is opened or waited on.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        let mut options = OpenOptions::new();
        options.read(true);
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_DIRECTORY | libc::O_NONBLOCK);
        options.open(if dir.as_os_str().is_empty() { Path::new(".") } else { dir })?.sync_all()
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
        assert_eq!(last_line(&mut file, size).expect("tail"), Tail::Line { line: long.into_bytes(), start: 2 });
        std::fs::write(&path, "only\n").expect("write");
        let mut file = File::open(&path).expect("open");
        assert_eq!(last_line(&mut file, 5).expect("tail"), Tail::Line { line: b"only".to_vec(), start: 0 });
        let mut file = OpenOptions::new().append(true).read(true).open(&path).expect("open");
        file.write_all(b"cut").expect("write");
        assert_eq!(last_line(&mut file, 8).expect("tail"), Tail::Torn { start: 5 });
        std::fs::write(&path, "cut from the start").expect("write");
        let mut file = File::open(&path).expect("open");
        assert_eq!(last_line(&mut file, 18).expect("tail"), Tail::Torn { start: 0 });
        let huge = "y".repeat(MAX_LINE_BYTES + 10);
        std::fs::write(&path, format!("{huge}\n")).expect("write");
        let mut file = File::open(&path).expect("open");
        let size = file.metadata().expect("meta").len();
        assert_eq!(last_line(&mut file, size).expect("tail"), Tail::TooLong);
        std::fs::write(&path, format!("a\n{huge}")).expect("write");
        let mut file = File::open(&path).expect("open");
        let size = file.metadata().expect("meta").len();
        assert_eq!(last_line(&mut file, size).expect("tail"), Tail::TooLong, "a cut line over the limit");
    }

    /// The writer and the verifier draw the line limit at the same byte: a whole line of exactly
    /// [`MAX_LINE_BYTES`] with its newline is a line for both, one byte more is too long for both, and a cut line
    /// is cut up to [`MAX_LINE_BYTES`] - 1 bytes.
    #[test]
    fn last_line_and_the_line_reader_agree_on_the_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let read_both = |bytes: &[u8]| {
            std::fs::write(&path, bytes).expect("write");
            let mut file = File::open(&path).expect("open");
            let tail = last_line(&mut file, bytes.len() as u64).expect("tail");
            let mut reader = LineReader::new(File::open(&path).expect("open"));
            let (mut line, mut last) = (Vec::new(), None);
            while let Some(kind) = reader.next_line(&mut line).expect("read") {
                last = Some(kind);
                if last == Some(Line::TooLong) {
                    break;
                }
            }
            (tail, last)
        };
        let body = |n: usize| vec![b'z'; n];
        let with_newline = |n: usize| [b"a\n".as_slice(), &body(n), b"\n"].concat();
        let cut = |n: usize| [b"a\n".as_slice(), &body(n)].concat();
        let (tail, last) = read_both(&with_newline(MAX_LINE_BYTES - 1));
        assert!(matches!(tail, Tail::Line { start: 2, .. }) && last == Some(Line::Complete));
        assert_eq!(read_both(&with_newline(MAX_LINE_BYTES)), (Tail::TooLong, Some(Line::TooLong)));
        assert_eq!(read_both(&cut(MAX_LINE_BYTES - 1)), (Tail::Torn { start: 2 }, Some(Line::Incomplete)));
        assert_eq!(read_both(&cut(MAX_LINE_BYTES)), (Tail::TooLong, Some(Line::TooLong)));
    }

    #[cfg(unix)]
    #[test]
    fn fifos_devices_and_links_are_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
        assert!(status.success());
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        let regular = dir.path().join("regular");
        std::fs::write(&regular, "x\n").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&regular, &link).expect("symlink");
        let refused = |result: io::Result<File>| result.map(drop).map_err(|error| not_regular(&error));
        assert_eq!(refused(open_regular(&fifo)), Err(Some(NotRegular("FIFO"))));
        assert_eq!(refused(open_private_append(&fifo)), Err(Some(NotRegular("FIFO"))));
        assert_eq!(refused(open_regular(Path::new("/dev/zero"))), Err(Some(NotRegular("device"))));
        assert_eq!(refused(open_regular(&zero)), Err(Some(NotRegular("symbolic link"))));
        assert_eq!(refused(open_private_append(&link)), Err(Some(NotRegular("symbolic link"))));
        assert_eq!(refused(open_regular(dir.path())), Err(Some(NotRegular("directory"))));
        assert_eq!(refused(open_regular(&regular)), Ok(()));
        assert!(open_existing_append(&dir.path().join("missing")).expect("missing is no error").is_none());
        assert!(sync_dir(&fifo).is_err(), "a FIFO is no directory to sync");
        assert_eq!(
            open_regular(&fifo).map(drop).map_err(|error| error.to_string()),
            Err("a FIFO, not a regular file".to_owned())
        );
    }
}
