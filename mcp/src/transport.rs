//! Stdio framing (design.md#transport): reads JSON-RPC frames from any [`BufRead`] and writes one compact JSON value per line.
//!
//! Input framing is detected per message, so a stream may mix both kinds:
//! - newline-delimited JSON: one message per line, an optional `\r` before the `\n` is dropped;
//! - `Content-Length: N\r\n\r\n` + N bytes of body, as legacy FluxGit (LSP-style) clients send it. Header names are
//!   case-insensitive, other headers (`Content-Type`, ...) are ignored, and bare `\n` line ends are accepted too.
//!
//! Blank lines between messages are skipped. A frame over [`MAX_FRAME_BYTES`] is never buffered: the reader discards
//! a line over the cap to its newline and yields [`Frame::TooLarge`], so the server can answer an error and keep
//! serving the next message.
//!
//! A `Content-Length` header that declares more than the cap is refused at once, from the header: the reader yields
//! [`Frame::TooLarge`] without waiting for a body that may never come, drops the rest of that header block, and
//! goes back to reading line by line. A declared length is not trusted to skip bytes, so a client that lies about
//! it cannot make the reader swallow the messages after it. A client that does send the over-cap body has it read
//! as one line over the cap, which is dropped without a second answer; when the next frame's `Content-Length`
//! header is glued to the end of that body, as LSP-style clients write frames, the reader picks the frame up there.
//!
//! Output always uses newline-delimited compact JSON, whatever framing the request came in, because stdout
//! carries exactly one JSON value per line (design.md#transport).
//!
//! ```
//! use std::io::Cursor;
//! use fluxgit_mcp_sidecar::transport::{Frame, FrameReader};
//!
//! let input = b"{\"a\":1}\nContent-Length: 7\r\n\r\n{\"b\":2}";
//! let mut reader = FrameReader::new(Cursor::new(&input[..]));
//! assert_eq!(reader.next_frame().unwrap(), Some(Frame::Message(b"{\"a\":1}".to_vec())));
//! assert_eq!(reader.next_frame().unwrap(), Some(Frame::Message(b"{\"b\":2}".to_vec())));
//! assert_eq!(reader.next_frame().unwrap(), None);
//! ```

use std::io::{self, BufRead, Read as _, Write};

use serde_json::value::RawValue;

/// Largest accepted frame body, in bytes: 8 MiB (design.md#transport). Larger frames yield [`Frame::TooLarge`].
pub const MAX_FRAME_BYTES: usize = 8 * 1024 * 1024;

/// Largest accepted header line of a `Content-Length` frame, in bytes. Longer header lines make the frame
/// [`Frame::Malformed`].
const MAX_HEADER_LINE_BYTES: usize = 8 * 1024;

/// One unit read from the input stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// The raw bytes of one message (not yet parsed as JSON; not necessarily valid UTF-8).
    Message(Vec<u8>),
    /// A frame larger than [`MAX_FRAME_BYTES`] was discarded without being buffered.
    TooLarge {
        /// The body size in bytes: as declared for `Content-Length` frames (`u64::MAX` for a number beyond it);
        /// for lines, the bytes discarded (the line end may be counted).
        size: u64,
    },
    /// A `Content-Length` header block that could not be understood (missing or invalid length, overlong header
    /// line, a line that is no header before the empty line). An invalid length is refused from its header and the
    /// rest of the block dropped; the reader resumes with per-message detection after it (a non-header line that
    /// cut the block short is yielded next).
    Malformed {
        /// What was wrong, for the error message sent back to the client.
        reason: String,
    },
}

/// Reads [`Frame`]s from a buffered byte stream.
///
/// Memory use is bounded by [`MAX_FRAME_BYTES`] plus the reader's buffer, whatever the input.
#[derive(Debug)]
pub struct FrameReader<R> {
    input: R,
    limit: usize,
    /// A line read while looking for headers that turned out to be a message of its own.
    pending: Option<Vec<u8>>,
    /// A `Content-Length` header found glued to the end of a line over the cap: the next frame starts with it.
    pending_header: Option<Vec<u8>>,
    /// A `Content-Length` over the cap was refused from its header: the rest of its header block is dropped.
    skipping_headers: bool,
    /// A `Content-Length` over the cap was refused and no line has been read since: a line over the cap that comes
    /// next is that frame's body, dropped without a second answer.
    refused_body: bool,
}

impl<R: BufRead> FrameReader<R> {
    /// Wraps `input` with the standard [`MAX_FRAME_BYTES`] limit.
    pub fn new(input: R) -> Self {
        Self::with_limit(input, MAX_FRAME_BYTES)
    }

    /// Wraps `input` with a custom frame limit in bytes (for tests and tools; the server uses [`Self::new`]).
    pub fn with_limit(input: R, limit: usize) -> Self {
        Self { input, limit, pending: None, pending_header: None, skipping_headers: false, refused_body: false }
    }

    /// Returns the next frame, or `None` at end of input.
    ///
    /// At end of input, a last line without a trailing newline still counts as a message; a `Content-Length` frame
    /// cut short by end of input (in its headers or its body) is dropped with a warning on the log and `None` is
    /// returned, since nobody is left to answer.
    ///
    /// # Errors
    /// Only I/O errors of the underlying reader (other than `Interrupted`, which is retried).
    pub fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        if let Some(line) = self.pending.take() {
            return Ok(Some(Frame::Message(line)));
        }
        if let Some(header) = self.pending_header.take() {
            return self.read_framed_body(&header);
        }
        loop {
            let line = match read_line_bounded(&mut self.input, self.limit)? {
                Line::Eof => return Ok(None),
                Line::TooLong { size, tail } => {
                    let body_of_refused = std::mem::take(&mut self.refused_body);
                    self.skipping_headers = false;
                    if let Some(header) = glued_header(&tail) {
                        // A frame's header glued to the end of the long line: answer the line (unless it was the body of a
                        // frame refused already), then read the frame.
                        if body_of_refused {
                            return self.read_framed_body(&header);
                        }
                        self.pending_header = Some(header);
                        return Ok(Some(Frame::TooLarge { size }));
                    }
                    if body_of_refused {
                        continue;
                    }
                    return Ok(Some(Frame::TooLarge { size }));
                }
                Line::Complete(line) | Line::Unterminated(line) => line,
            };
            let trimmed = trim_ascii(&line);
            if self.skipping_headers {
                if trimmed.is_empty() {
                    self.skipping_headers = false;
                    continue;
                }
                if is_header_shaped(trimmed) {
                    continue;
                }
                self.skipping_headers = false;
            }
            if trimmed.is_empty() {
                continue;
            }
            self.refused_body = false;
            if !looks_like_header(trimmed) {
                return Ok(Some(Frame::Message(strip_line_end(line))));
            }
            return self.read_framed_body(trimmed);
        }
    }

    /// Reads the rest of a `Content-Length` header block whose first line is `first_header`, then the body.
    ///
    /// A `Content-Length` over the limit ends the read at once with [`Frame::TooLarge`] (see the module docs), one
    /// that is no number at once with [`Frame::Malformed`]; a header block with two different lengths is
    /// [`Frame::Malformed`] once it ends.
    fn read_framed_body(&mut self, first_header: &[u8]) -> io::Result<Option<Frame>> {
        let mut content_length: Result<Option<u64>, String> = Ok(None);
        let mut header = first_header.to_vec();
        loop {
            if let Some(refused) = self.take_length(&mut content_length, &header) {
                return Ok(Some(refused));
            }
            let line = match read_line_bounded(&mut self.input, MAX_HEADER_LINE_BYTES)? {
                Line::Eof | Line::Unterminated(_) => {
                    tracing::warn!("end of input inside a Content-Length header block; frame dropped");
                    return Ok(None);
                }
                Line::TooLong { .. } => {
                    return Ok(Some(Frame::Malformed {
                        reason: format!("header line longer than {MAX_HEADER_LINE_BYTES} bytes"),
                    }));
                }
                Line::Complete(line) => line,
            };
            let trimmed = trim_ascii(&line);
            if trimmed.is_empty() {
                break;
            }
            if !is_header_shaped(trimmed) {
                // The client did not finish its header block: report that, and serve the line on its own next.
                self.pending = Some(strip_line_end(line));
                return Ok(Some(Frame::Malformed { reason: "header block not ended by an empty line".to_owned() }));
            }
            header = trimmed.to_vec();
        }
        let size = match content_length {
            Ok(Some(size)) => size,
            Ok(None) => {
                return Ok(Some(Frame::Malformed { reason: "header block without Content-Length".to_owned() }));
            }
            Err(reason) => return Ok(Some(Frame::Malformed { reason })),
        };
        // `size` is at most `self.limit`, which is a `usize`: larger ones were refused from the header.
        let mut body = Vec::with_capacity(usize::try_from(size).unwrap_or(self.limit));
        let read = (&mut self.input).take(size).read_to_end(&mut body)?;
        if (read as u64) < size {
            tracing::warn!(size, read, "end of input inside a Content-Length body; frame dropped");
            return Ok(None);
        }
        Ok(Some(Frame::Message(body)))
    }

    /// Records the length `header` declares into `content_length`. Returns the refusal of a length over the limit
    /// or of one that is no number, after which the rest of the header block is dropped and lines are read again.
    fn take_length(&mut self, content_length: &mut Result<Option<u64>, String>, header: &[u8]) -> Option<Frame> {
        let declared = match parse_header(header) {
            Ok(Some(size)) => size,
            Ok(None) => return None,
            Err(reason) => {
                self.skipping_headers = true;
                return Some(Frame::Malformed { reason });
            }
        };
        if declared > self.limit as u64 {
            self.skipping_headers = true;
            self.refused_body = true;
            return Some(Frame::TooLarge { size: declared });
        }
        match content_length {
            Ok(None) => *content_length = Ok(Some(declared)),
            Ok(Some(earlier)) if *earlier != declared => {
                *content_length = Err(format!("two different Content-Length headers: {earlier} and {declared}"));
            }
            Ok(Some(_)) | Err(_) => {}
        }
        None
    }
}

/// Writes `message` (compact JSON text, as serde_json serialises: never a raw newline) as one line and flushes.
///
/// # Errors
/// I/O errors of `out` (e.g. `BrokenPipe` when the client went away).
pub fn write_message(out: &mut dyn Write, message: &RawValue) -> io::Result<()> {
    let mut line = Vec::with_capacity(message.get().len() + 1);
    line.extend_from_slice(message.get().as_bytes());
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

/// The outcome of reading one line with a size bound.
enum Line {
    /// End of input before any byte.
    Eof,
    /// A line including its `\n`.
    Complete(Vec<u8>),
    /// The last bytes of the input, with no `\n`.
    Unterminated(Vec<u8>),
    /// A line over the bound, consumed up to and including its `\n` (or end of input) without being kept but for
    /// its last [`TAIL_BYTES`] bytes, line end included.
    TooLong { size: u64, tail: Vec<u8> },
}

/// Bytes kept of the end of a line over the cap, enough for a `Content-Length` header glued to it.
const TAIL_BYTES: usize = 64;

/// Reads one line of at most `limit` bytes (the `\n` and an optional `\r` before it not counted).
fn read_line_bounded(input: &mut impl BufRead, limit: usize) -> io::Result<Line> {
    let mut line = Vec::new();
    let mut discarded: Option<u64> = None;
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if available.is_empty() {
            return Ok(match discarded {
                Some(size) => Line::TooLong { size, tail: line },
                None if line.is_empty() => Line::Eof,
                None if content_len(&line) > limit => Line::TooLong { size: line.len() as u64, tail: tail_of(line) },
                None => Line::Unterminated(line),
            });
        }
        let (chunk, found_newline) = match available.iter().position(|&byte| byte == b'\n') {
            Some(index) => (&available[..=index], true),
            None => (available, false),
        };
        let chunk_len = chunk.len();
        match discarded.as_mut() {
            Some(size) => {
                // While discarding, `line` keeps only the tail.
                *size += chunk_len as u64;
                line.extend_from_slice(&chunk[chunk_len.saturating_sub(TAIL_BYTES)..]);
                line = tail_of(line);
            }
            None => {
                line.extend_from_slice(chunk);
                // Allow for the line end, then switch to discarding once the content is certainly too long.
                if line.len() > limit.saturating_add(2) {
                    discarded = Some(line.len() as u64);
                    line = tail_of(line);
                }
            }
        }
        input.consume(chunk_len);
        if found_newline {
            return Ok(match discarded {
                Some(size) => Line::TooLong { size, tail: line },
                None if content_len(&line) > limit => {
                    Line::TooLong { size: content_len(&line) as u64, tail: tail_of(line) }
                }
                None => Line::Complete(line),
            });
        }
    }
}

/// The last [`TAIL_BYTES`] bytes of `line`.
fn tail_of(mut line: Vec<u8>) -> Vec<u8> {
    line.drain(..line.len().saturating_sub(TAIL_BYTES));
    line
}

/// A `Content-Length: N` header at the end of `tail` (the end of a line over the cap), as a client that writes
/// LSP-style frames back to back leaves it after a body: the header's bytes, when there is one.
fn glued_header(tail: &[u8]) -> Option<Vec<u8>> {
    let end = content_len(tail);
    let text = &tail[..end];
    let lower = text.to_ascii_lowercase();
    let start = lower.windows(b"content-length:".len()).rposition(|window| window == b"content-length:")?;
    let header = text[start..].to_vec();
    matches!(parse_header(&header), Ok(Some(_))).then_some(header)
}

/// The length of `line` without its `\n` / `\r\n` ending.
fn content_len(line: &[u8]) -> usize {
    let mut len = line.len();
    if len > 0 && line[len - 1] == b'\n' {
        len -= 1;
    }
    if len > 0 && line[len - 1] == b'\r' {
        len -= 1;
    }
    len
}

fn strip_line_end(mut line: Vec<u8>) -> Vec<u8> {
    let len = content_len(&line);
    line.truncate(len);
    line
}

fn trim_ascii(bytes: &[u8]) -> &[u8] {
    bytes.trim_ascii()
}

/// Whether `line` starts a `Content-Length` frame: a `Content-Length` or `Content-Type` header, the only two
/// headers of the LSP-style framing. Any other first line is taken as a newline-delimited message, so a stray
/// `word: text` line cannot swallow the messages after it.
fn looks_like_header(line: &[u8]) -> bool {
    if !is_header_shaped(line) {
        return false;
    }
    let name = line.split(|&byte| byte == b':').next().unwrap_or_default().trim_ascii();
    name.eq_ignore_ascii_case(b"content-length") || name.eq_ignore_ascii_case(b"content-type")
}

/// A header line is `token: value` where the token is made of letters, digits and `-` (RFC 7230 in spirit).
fn is_header_shaped(line: &[u8]) -> bool {
    match line.iter().position(|&byte| byte == b':') {
        Some(0) | None => false,
        Some(colon) => line[..colon].iter().all(|&byte| byte.is_ascii_alphanumeric() || byte == b'-'),
    }
}

/// Parses one header line: `Ok(Some(n))` for a valid `Content-Length` (`u64::MAX` for a number beyond it, which
/// is over any limit), `Ok(None)` for any other header.
fn parse_header(line: &[u8]) -> Result<Option<u64>, String> {
    let Some(colon) = line.iter().position(|&byte| byte == b':') else {
        return Ok(None);
    };
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if !name.eq_ignore_ascii_case(b"content-length") {
        return Ok(None);
    }
    let value = value.trim_ascii();
    let text = std::str::from_utf8(value).map_err(|_| "Content-Length is not a number".to_owned())?;
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(format!("Content-Length is not a number: {text:?}"));
    }
    Ok(Some(text.parse::<u64>().unwrap_or(u64::MAX)))
}

#[cfg(test)]
mod tests {
    use std::io::{BufReader, Cursor};

    use super::*;

    fn frames(input: &[u8], limit: usize) -> Vec<Frame> {
        let mut reader = FrameReader::with_limit(Cursor::new(input.to_vec()), limit);
        let mut out = Vec::new();
        while let Some(frame) = reader.next_frame().expect("in-memory reads cannot fail") {
            out.push(frame);
        }
        out
    }

    fn message(text: &str) -> Frame {
        Frame::Message(text.as_bytes().to_vec())
    }

    #[test]
    fn newline_delimited_messages_and_blank_lines() {
        let input = b"\n{\"a\":1}\r\n  \n{\"b\":2}\n\n{\"c\":3}";
        assert_eq!(
            frames(input, MAX_FRAME_BYTES),
            vec![message("{\"a\":1}"), message("{\"b\":2}"), message("{\"c\":3}")]
        );
    }

    #[test]
    fn content_length_frames_with_other_headers_any_case() {
        let input = b"content-length: 7\r\nContent-Type: application/json\r\n\r\n{\"a\":1}\
CONTENT-LENGTH:7\n\n{\"b\":2}";
        assert_eq!(frames(input, MAX_FRAME_BYTES), vec![message("{\"a\":1}"), message("{\"b\":2}")]);
    }

    #[test]
    fn content_type_before_content_length() {
        let input = b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(frames(input, MAX_FRAME_BYTES), vec![message("{}")]);
    }

    #[test]
    fn mixed_framings_in_one_stream() {
        let input =
            b"{\"n\":1}\nContent-Length: 7\r\n\r\n{\"n\":2}\n{\"n\":3}\nContent-Length: 7\r\n\r\n{\"n\":4}{\"n\":5}\n";
        assert_eq!(
            frames(input, MAX_FRAME_BYTES),
            vec![
                message("{\"n\":1}"),
                message("{\"n\":2}"),
                message("{\"n\":3}"),
                message("{\"n\":4}"),
                message("{\"n\":5}")
            ]
        );
    }

    #[test]
    fn oversized_line_is_skipped_and_the_next_one_served() {
        // 9 MiB line followed by a valid message, read through a small buffer so the discard path runs in chunks.
        let mut input = vec![b'x'; 9 * 1024 * 1024];
        input.extend_from_slice(b"\n{\"ok\":true}\n");
        let mut reader = FrameReader::new(BufReader::with_capacity(4096, Cursor::new(input)));
        match reader.next_frame().expect("in-memory") {
            Some(Frame::TooLarge { size }) => assert!(size > MAX_FRAME_BYTES as u64),
            other => panic!("expected TooLarge, got {other:?}"),
        }
        assert_eq!(reader.next_frame().expect("in-memory"), Some(message("{\"ok\":true}")));
        assert_eq!(reader.next_frame().expect("in-memory"), None);
    }

    #[test]
    fn line_exactly_at_the_limit_is_accepted() {
        let mut input = vec![b'x'; 16];
        input.extend_from_slice(b"\r\n");
        input.extend_from_slice(&[b'y'; 17]);
        input.extend_from_slice(b"\n");
        assert_eq!(frames(&input, 16), vec![Frame::Message(vec![b'x'; 16]), Frame::TooLarge { size: 17 }]);
    }

    #[test]
    fn oversized_content_length_body_is_refused_once_and_the_next_frame_served() {
        // Frames back to back, as LSP-style clients write them: the next header is glued to the long body.
        let mut input = b"Content-Length: 40\r\n\r\n".to_vec();
        input.extend_from_slice(&[b'z'; 40]);
        input.extend_from_slice(b"Content-Length: 8\r\n\r\n{\"ok\":1}{\"n\":2}\n");
        assert_eq!(frames(&input, 32), vec![Frame::TooLarge { size: 40 }, message("{\"ok\":1}"), message("{\"n\":2}")]);
        // A body ended by a newline: dropped with it, the next line served.
        let mut input = b"Content-Length: 40\r\n\r\n".to_vec();
        input.extend_from_slice(&[b'z'; 40]);
        input.extend_from_slice(b"\n{\"ok\":1}\n");
        assert_eq!(frames(&input, 32), vec![Frame::TooLarge { size: 40 }, message("{\"ok\":1}")]);
    }

    #[test]
    fn a_length_over_the_cap_is_refused_before_any_body_byte_is_read() {
        /// The header, then a reader that fails the test if it is read further.
        struct HeaderOnly(Option<&'static [u8]>);
        impl io::Read for HeaderOnly {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let chunk = self.0.take().expect("the reader waited for a body after an over-cap header");
                buf[..chunk.len()].copy_from_slice(chunk);
                Ok(chunk.len())
            }
        }
        let mut reader = FrameReader::new(BufReader::new(HeaderOnly(Some(b"Content-Length: 99999999999\r\n"))));
        assert_eq!(reader.next_frame().expect("in memory"), Some(Frame::TooLarge { size: 99_999_999_999 }));
    }

    #[test]
    fn lying_lengths_resynchronise_on_the_next_line() {
        let ping = "{\"a\":1}";
        let over = Frame::TooLarge { size: 99_999_999_999 };
        let beyond_u64 = Frame::TooLarge { size: u64::MAX };
        let cases: [(&str, Vec<Frame>); 8] = [
            ("Content-Length: 99999999999999999999999\r\n\r\n{\"a\":1}\n", vec![beyond_u64, message(ping)]),
            ("Content-Length: 99999999999\r\n\r\n{\"a\":1}\n", vec![over.clone(), message(ping)]),
            ("Content-Length: 99999999999\r\n{\"a\":1}\n", vec![over.clone(), message(ping)]),
            ("Content-Length: 99999999999\r\nContent-Type: x\r\n\r\n{\"a\":1}\n", vec![over.clone(), message(ping)]),
            ("Content-Type: x\r\nContent-Length: 99999999999\r\n\r\n{\"a\":1}\n", vec![over.clone(), message(ping)]),
            ("Content-Length: 7\r\nContent-Length: 99999999999\r\n\r\n{\"a\":1}\n", vec![over, message(ping)]),
            ("Content-Length: 3\r\n\r\n{\"a\":1}\n", vec![message("{\"a"), message("\":1}")]),
            ("Content-Length: 7\r\ncontent-length: 7\r\n\r\n{\"a\":1}", vec![message(ping)]),
        ];
        for (input, expected) in cases {
            assert_eq!(frames(input.as_bytes(), MAX_FRAME_BYTES), expected, "{input:?}");
        }
        let refused = [
            ("Content-Length: -1\r\n\r\n{\"a\":1}\n", "not a number"),
            ("Content-Length: 1e9\r\n\r\n{\"a\":1}\n", "not a number"),
            ("Content-Length: 7\r\nContent-Length: 9\r\n\r\n{\"a\":1}\n", "two different"),
        ];
        for (input, reason) in refused {
            let got = frames(input.as_bytes(), MAX_FRAME_BYTES);
            assert!(matches!(&got[0], Frame::Malformed { reason: got } if got.contains(reason)), "{input:?}: {got:?}");
            assert_eq!(&got[1..], &[message(ping)], "{input:?}");
        }
    }

    #[test]
    fn malformed_headers_resynchronise() {
        let input = b"Content-Length: abc\r\n\r\n{\"a\":1}\nContent-Type: x\r\n\r\n{\"b\":2}\n";
        let got = frames(input, MAX_FRAME_BYTES);
        assert!(matches!(&got[0], Frame::Malformed { reason } if reason.contains("not a number")));
        assert_eq!(got[1], message("{\"a\":1}"));
        assert!(matches!(&got[2], Frame::Malformed { reason } if reason.contains("without Content-Length")));
        assert_eq!(got[3], message("{\"b\":2}"));
        assert_eq!(got.len(), 4);
    }

    #[test]
    fn unterminated_header_block_yields_the_interrupting_line() {
        let input = b"Content-Length: 7\r\n{\"a\":1}\n{\"b\":2}\n";
        let got = frames(input, MAX_FRAME_BYTES);
        assert!(matches!(&got[0], Frame::Malformed { reason } if reason.contains("not ended")));
        assert_eq!(&got[1..], &[message("{\"a\":1}"), message("{\"b\":2}")]);
    }

    #[test]
    fn stray_header_like_line_is_a_message() {
        let input = b"hello: world\n{\"a\":1}\n";
        assert_eq!(frames(input, MAX_FRAME_BYTES), vec![message("hello: world"), message("{\"a\":1}")]);
    }

    #[test]
    fn eof_in_the_middle_of_a_body_ends_the_stream() {
        assert_eq!(frames(b"{\"a\":1}\nContent-Length: 10\r\n\r\n{\"b\"", MAX_FRAME_BYTES), vec![message("{\"a\":1}")]);
    }

    #[test]
    fn eof_in_the_middle_of_headers_ends_the_stream() {
        assert_eq!(frames(b"Content-Length: 10\r\nContent-Ty", MAX_FRAME_BYTES), vec![]);
    }

    #[test]
    fn bytes_after_an_oversized_header_are_read_as_lines() {
        assert_eq!(
            frames(b"Content-Length: 100\r\n\r\nshort", 32),
            vec![Frame::TooLarge { size: 100 }, message("short")]
        );
    }

    #[test]
    fn eof_in_the_middle_of_a_line_yields_it() {
        assert_eq!(frames(b"{\"a\":", MAX_FRAME_BYTES), vec![message("{\"a\":")]);
    }

    #[test]
    fn writer_emits_one_compact_line() {
        let mut out = Vec::new();
        let message = serde_json::value::to_raw_value(&serde_json::json!({"a": [1, 2], "b": "x\ny"})).expect("JSON");
        write_message(&mut out, &message).expect("in-memory");
        assert_eq!(out, b"{\"a\":[1,2],\"b\":\"x\\ny\"}\n");
    }
}
