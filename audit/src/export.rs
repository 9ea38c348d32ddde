//! The export (design.md#audit): [`export_audit_ledger`] writes the retained ledger (rotated segments oldest first,
//! then the active file) as CSV or JSON Lines, filtered by time, tool, risk and result, verifying the chain as it
//! reads.
//!
//! Memory stays bounded whatever the ledger's size: one line of at most 256 KiB is read, checked and written at a
//! time, as [`crate::verify_audit_ledger`] reads it.
//!
//! # A broken chain
//! Records are written as they are verified. At the first failure (an edited, missing or moved entry, a bad
//! signature) the export stops with [`ExportError::Broken`], naming the place, and what was written before it is
//! all the chain vouches for. With [`ExportOptions::mark_broken`] it goes on instead: every record gets a
//! `chainVerified` field (a column in CSV), `false` from the break on, and the break is returned in the report.
//!
//! # CSV
//! RFC 4180: a header line, then one line per record, each ended by CRLF; a field with a comma, a double quote, a
//! CR or an LF is quoted, its double quotes doubled. Strings are written as they are, numbers and booleans as
//! their JSON text, a missing field as an empty one. `time` is `timestamp` as an RFC 3339 UTC time.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::verify::{self, Report, VerifyError, VerifyOptions};

/// How the records are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A header and one CSV line per record ([`CSV_COLUMNS`]).
    Csv,
    /// Each record as one JSON object per line, as stored.
    Jsonl,
}

/// The CSV columns, in order (then `chainVerified` with [`ExportOptions::mark_broken`]).
pub const CSV_COLUMNS: [&str; 22] = [
    "sequence",
    "timestamp",
    "time",
    "id",
    "event_type",
    "tool",
    "risk",
    "approval",
    "result",
    "session_id",
    "duration_ms",
    "summary",
    "repo_scope",
    "args_fingerprint",
    "readOnly",
    "sidecarReadOnly",
    "segmentId",
    "previousHash",
    "entryHash",
    "signatureKeyId",
    "tornBytes",
    "tornSha256",
];

/// The field (CSV column) that [`ExportOptions::mark_broken`] adds.
pub const CHAIN_VERIFIED: &str = "chainVerified";

/// Which records to write. Every condition given must hold; a record without the field fails it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Records at or after this Unix time in milliseconds.
    pub since_ms: Option<u64>,
    /// Records before this Unix time in milliseconds.
    pub until_ms: Option<u64>,
    /// Records whose `tool` is this.
    pub tool: Option<String>,
    /// Records whose `risk` is this (`read`, `write-proposal`, `write`, `unknown`).
    pub risk: Option<String>,
    /// Records whose `result` is this (`success`, `error`).
    pub result: Option<String>,
}

impl Filter {
    /// Whether `record` passes.
    fn passes(&self, record: &Map<String, Value>) -> bool {
        let text = |name: &str| record.get(name).and_then(Value::as_str);
        let timestamp = record.get("timestamp").and_then(Value::as_u64);
        self.since_ms.is_none_or(|since| timestamp.is_some_and(|time| time >= since))
            && self.until_ms.is_none_or(|until| timestamp.is_some_and(|time| time < until))
            && self.tool.as_deref().is_none_or(|tool| text("tool") == Some(tool))
            && self.risk.as_deref().is_none_or(|risk| text("risk") == Some(risk))
            && self.result.as_deref().is_none_or(|result| text("result") == Some(result))
    }
}

/// How to export.
#[derive(Debug, Clone)]
pub struct ExportOptions<'a> {
    /// CSV or JSON Lines.
    pub format: Format,
    /// Which records.
    pub filter: Filter,
    /// Go on past a break of the chain, marking every record with `chainVerified`.
    pub mark_broken: bool,
    /// Keys and the signature requirement, as for verifying.
    pub verify: VerifyOptions<'a>,
}

/// What an export did.
#[derive(Debug)]
pub struct Exported {
    /// The verification's counters (up to the break, when there is one).
    pub report: Report,
    /// Records written.
    pub written: u64,
    /// Records read (written or filtered out).
    pub read: u64,
    /// The break, with [`ExportOptions::mark_broken`]: the records from it on were written with `chainVerified`
    /// false.
    pub broken: Option<VerifyError>,
}

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The ledger cannot be verified at all (none there, a bad checkpoint or option, a file that cannot be read).
    #[error(transparent)]
    Verify(VerifyError),
    /// The chain breaks: the records before the break were written, none after it.
    #[error("the chain breaks after {written} records written: {error}; nothing after the break was exported")]
    Broken {
        /// Records written before the break.
        written: u64,
        /// Where and how it breaks.
        error: VerifyError,
    },
    /// Writing the output failed (e.g. a closed pipe).
    #[error("writing the export: {0}")]
    Write(#[source] io::Error),
}

/// Writes the retained ledger whose active file is `path` to `output`, verified as it is read (see the module
/// docs). `output` is written line by line; wrap it in a buffer.
///
/// # Errors
/// [`ExportError`]: the ledger cannot be verified, its chain breaks (without `mark_broken`), or a write failed.
pub fn export_audit_ledger(
    path: &Path,
    options: &ExportOptions<'_>,
    output: &mut dyn Write,
) -> Result<Exported, ExportError> {
    let mut writer = Writer { output, format: options.format, mark: options.mark_broken, line: String::new() };
    writer.header().map_err(ExportError::Write)?;
    let (mut written, mut read) = (0u64, 0u64);
    // A write error is kept here, for the sink can only return a `VerifyError`.
    let mut write_error: Option<io::Error> = None;
    let mut sink = |record: &Map<String, Value>, verified: bool| -> Result<(), VerifyError> {
        read += 1;
        if !options.filter.passes(record) {
            return Ok(());
        }
        if let Err(error) = writer.record(record, verified) {
            write_error = Some(error);
            return Err(VerifyError::Io { path: PathBuf::from("<output>"), source: io::Error::other("write failed") });
        }
        written += 1;
        Ok(())
    };
    let walked = verify::walk(path, &options.verify, options.mark_broken, &mut sink);
    if let Some(error) = write_error {
        return Err(ExportError::Write(error));
    }
    match walked {
        Ok((report, broken)) => Ok(Exported { report, written, read, broken }),
        Err(error @ VerifyError::Integrity { .. }) => Err(ExportError::Broken { written, error }),
        Err(error) => Err(ExportError::Verify(error)),
    }
}

/// Writes records in one format.
struct Writer<'w> {
    output: &'w mut dyn Write,
    format: Format,
    mark: bool,
    /// The line being built, reused.
    line: String,
}

impl Writer<'_> {
    fn header(&mut self) -> io::Result<()> {
        if self.format != Format::Csv {
            return Ok(());
        }
        self.line.clear();
        let columns = CSV_COLUMNS.iter().copied().chain(self.mark.then_some(CHAIN_VERIFIED));
        for (index, column) in columns.enumerate() {
            if index > 0 {
                self.line.push(',');
            }
            self.line.push_str(column);
        }
        self.line.push_str("\r\n");
        self.output.write_all(self.line.as_bytes())
    }

    fn record(&mut self, record: &Map<String, Value>, verified: bool) -> io::Result<()> {
        self.line.clear();
        match self.format {
            Format::Jsonl => {
                if self.mark {
                    let mut marked = record.clone();
                    marked.insert(CHAIN_VERIFIED.to_owned(), verified.into());
                    self.line = serde_json::to_string(&marked).map_err(io::Error::other)?;
                } else {
                    self.line = serde_json::to_string(record).map_err(io::Error::other)?;
                }
                self.line.push('\n');
            }
            Format::Csv => {
                for (index, column) in CSV_COLUMNS.iter().enumerate() {
                    if index > 0 {
                        self.line.push(',');
                    }
                    let value = if *column == "time" {
                        record.get("timestamp").and_then(Value::as_u64).map(rfc3339).unwrap_or_default()
                    } else {
                        field_text(record.get(*column))
                    };
                    push_csv_field(&mut self.line, &value);
                }
                if self.mark {
                    self.line.push(',');
                    self.line.push_str(if verified { "true" } else { "false" });
                }
                self.line.push_str("\r\n");
            }
        }
        self.output.write_all(self.line.as_bytes())
    }
}

/// A field's text: a string as it is, anything else as its JSON text, nothing for a missing field or null.
fn field_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

/// Appends `value` as one CSV field, quoted when it holds a comma, a double quote, a CR or an LF.
pub(crate) fn push_csv_field(line: &mut String, value: &str) {
    if value.contains([',', '"', '\r', '\n']) {
        line.push('"');
        line.push_str(&value.replace('"', "\"\""));
        line.push('"');
    } else {
        line.push_str(value);
    }
}

/// Unix milliseconds as an RFC 3339 UTC time with milliseconds, e.g. `2026-12-07T20:05:35.123Z`.
fn rfc3339(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map(|time| format!("{time:.3}"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_only_when_they_must_be() {
        let mut line = String::new();
        for value in ["plain", "a,b", "say \"hi\"", "two\nlines", "cr\r", ""] {
            push_csv_field(&mut line, value);
            line.push('|');
        }
        assert_eq!(line, "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"|\"cr\r\"||");
    }

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_795_995_813_786), "2026-11-29T23:43:33.786Z");
        assert_eq!(rfc3339(u64::MAX), "");
    }

    #[test]
    fn filters_need_every_condition_and_the_field() {
        let record: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "timestamp": 1000, "tool": "repo.status", "risk": "read", "result": "success"
        }))
        .expect("object");
        let passes = |filter: Filter| filter.passes(&record);
        assert!(passes(Filter::default()));
        assert!(passes(Filter { since_ms: Some(1000), until_ms: Some(1001), ..Filter::default() }));
        assert!(!passes(Filter { until_ms: Some(1000), ..Filter::default() }), "until is exclusive");
        assert!(!passes(Filter { tool: Some("repo.brief".into()), ..Filter::default() }));
        assert!(passes(Filter { risk: Some("read".into()), result: Some("success".into()), ..Filter::default() }));
        let repair: Map<String, Value> =
            serde_json::from_value(serde_json::json!({"timestamp": 1000})).expect("object");
        assert!(!Filter { tool: Some("repo.status".into()), ..Filter::default() }.passes(&repair));
    }
}
