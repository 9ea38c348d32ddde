//! The audit subcommands: `verify-audit`, `audit export` and `audit-keygen`.

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use fluxgit_audit::{PublicKey, VerifyError, VerifyOptions};
use fluxgit_mcp_sidecar::config;

use super::exit::{EXIT_INTEGRITY, EXIT_TORN_TAIL, EXIT_USAGE};

#[derive(Debug, clap::Subcommand)]
pub(super) enum AuditCommand {
    /// Write the retained ledger (rotated segments oldest first, then the active file) as CSV or JSON Lines on
    /// stdout, filtered, verifying the chain as it reads with bounded memory.
    ///
    /// At a break of the chain (an edited, missing or moved entry, a bad signature) the export stops: what was
    /// written before it is verified, and the exit status is 3. With --mark-broken it goes on and every record gets
    /// a `chainVerified` field (CSV column), false from the break on; the exit status is still 3. Exit 2 on usage
    /// errors (no ledger, a bad time or key), 1 when stdout fails.
    Export {
        /// The ledger's active file, e.g. ~/.local/share/FluxGit/run/audit/mcp.jsonl.
        file: PathBuf,
        /// `csv` (a header, RFC 4180 quoting, CRLF) or `jsonl` (one JSON object per line, as stored).
        #[arg(long, value_parser = ["csv", "jsonl"])]
        format: String,
        /// Only records at or after this time: RFC 3339 (2026-12-07T20:00:00Z), a date (2026-12-07, UTC midnight)
        /// or Unix milliseconds.
        #[arg(long, value_name = "TIME")]
        since: Option<String>,
        /// Only records before this time (same forms as --since).
        #[arg(long, value_name = "TIME")]
        until: Option<String>,
        /// Only records of this tool, e.g. repo.status (as the ledger names it).
        #[arg(long, value_name = "NAME")]
        tool: Option<String>,
        /// Only records of this risk: read, write-proposal, write or unknown.
        #[arg(long, value_name = "RISK")]
        risk: Option<String>,
        /// Only records of this result: success or error.
        #[arg(long, value_name = "RESULT")]
        result: Option<String>,
        /// Go on past a break of the chain, adding the `chainVerified` field (false from the break on).
        #[arg(long)]
        mark_broken: bool,
        /// Public key (PEM) to check signatures with; repeatable. Without it signatures are not checked.
        #[arg(long = "pubkey", value_name = "PEM")]
        pubkeys: Vec<PathBuf>,
        /// Fail on any unsigned entry or checkpoint (needs --pubkey).
        #[arg(long)]
        require_signed: bool,
    },
}

/// `verify-audit FILE [--pubkey PEM]... [--require-signed]`.
pub(super) fn verify_audit(file: &Path, pubkeys: &[PathBuf], require_signed: bool) -> ExitCode {
    let mut keys = Vec::new();
    for path in pubkeys {
        match PublicKey::load(path) {
            Ok(key) => keys.push(key),
            Err(error) => {
                eprintln!("verify-audit: --pubkey: {error}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    let options = VerifyOptions { public_keys: &keys, require_signed };
    let report = match fluxgit_audit::verify_audit_ledger(file, &options) {
        Ok(report) => report,
        Err(error @ (VerifyError::NotFound(_) | VerifyError::NoPublicKey)) => {
            let hint = if matches!(error, VerifyError::NoPublicKey) { " (give --pubkey)" } else { "" };
            eprintln!("verify-audit: {error}{hint}");
            return ExitCode::from(EXIT_USAGE);
        }
        Err(error) => {
            eprintln!("verify-audit: FAILED: {error}");
            return ExitCode::from(EXIT_INTEGRITY);
        }
    };
    let sequence = match (report.first_sequence, report.last_sequence) {
        (Some(first), Some(last)) => format!("{first}..{last}"),
        _ => "none".to_owned(),
    };
    let checkpoint = match (report.pruned_through, report.checkpoint_signed) {
        (_, None) => "none".to_owned(),
        (Some(through), Some(signed)) => format!("pruned through {through} ({})", signed_text(signed)),
        (None, Some(signed)) => format!("present, prune in progress ({})", signed_text(signed)),
    };
    let key_ids: Vec<&str> = keys.iter().map(PublicKey::key_id).collect();
    let signatures = if report.signatures_checked {
        format!("checked (key {})", key_ids.join(", "))
    } else {
        "not checked (no --pubkey)".to_owned()
    };
    println!("entries:    {}", report.entries);
    println!("chained:    {}", report.chained);
    println!("legacy:     {}", report.legacy);
    println!("signed:     {}", report.signed);
    println!("unsigned:   {}", report.unsigned);
    println!("segments:   {}", report.segments);
    println!("sequence:   {sequence}");
    println!("checkpoint: {checkpoint}");
    println!("signatures: {signatures}");
    println!("repairs:    {}", repairs_text(&report));
    if let Some(torn) = report.torn_tail {
        println!("torn tail:  line {} ({} bytes)", torn.line, torn.bytes);
        eprintln!(
            "verify-audit: the last line of {} is torn: an append failed part-way (a full disk or a crash). Every \
             entry before it verifies; the next append cuts it and records the cut.",
            file.display()
        );
        return ExitCode::from(EXIT_TORN_TAIL);
    }
    println!("ok");
    ExitCode::SUCCESS
}

/// `audit export FILE --format F [filters] [--mark-broken] [--pubkey PEM]... [--require-signed]`.
pub(super) fn audit_command(command: AuditCommand) -> ExitCode {
    let AuditCommand::Export { file, format, since, until, tool, risk, result, mark_broken, pubkeys, require_signed } =
        command;
    let usage = |message: String| {
        eprintln!("audit export: {message}");
        ExitCode::from(EXIT_USAGE)
    };
    let mut keys = Vec::new();
    for path in &pubkeys {
        match PublicKey::load(path) {
            Ok(key) => keys.push(key),
            Err(error) => return usage(format!("--pubkey: {error}")),
        }
    }
    let (since_ms, until_ms) =
        match (since.as_deref().map(parse_time).transpose(), until.as_deref().map(parse_time).transpose()) {
            (Ok(since), Ok(until)) => (since, until),
            (Err(error), _) => return usage(format!("--since: {error}")),
            (_, Err(error)) => return usage(format!("--until: {error}")),
        };
    let options = fluxgit_audit::ExportOptions {
        format: if format == "csv" { fluxgit_audit::Format::Csv } else { fluxgit_audit::Format::Jsonl },
        filter: fluxgit_audit::Filter { since_ms, until_ms, tool, risk, result },
        mark_broken,
        verify: VerifyOptions { public_keys: &keys, require_signed },
    };
    let stdout = io::stdout().lock();
    let mut output = io::BufWriter::with_capacity(64 * 1024, stdout);
    let exported = fluxgit_audit::export_audit_ledger(&file, &options, &mut output);
    let flushed = output.flush();
    match (exported, flushed) {
        (Err(fluxgit_audit::ExportError::Write(error)), _) | (Ok(_), Err(error)) => {
            // A reader that went away (`| head`) is no failure of the ledger.
            if error.kind() == io::ErrorKind::BrokenPipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("audit export: writing stdout: {error}");
            ExitCode::FAILURE
        }
        (Err(fluxgit_audit::ExportError::Verify(error)), _) => usage(error.to_string()),
        (Err(error @ fluxgit_audit::ExportError::Broken { .. }), _) => {
            eprintln!("audit export: REFUSED: {error}; --mark-broken exports the rest marked chainVerified=false");
            ExitCode::from(EXIT_INTEGRITY)
        }
        (Ok(exported), Ok(())) => {
            eprintln!(
                "audit export: {} of {} records written, chain verified through sequence {}",
                exported.written,
                exported.read,
                exported.report.last_sequence.map_or_else(|| "none".to_owned(), |last| last.to_string())
            );
            match exported.broken {
                Some(error) => {
                    eprintln!(
                        "audit export: the chain breaks: {error}; the records from there on are marked chainVerified=false"
                    );
                    ExitCode::from(EXIT_INTEGRITY)
                }
                None => ExitCode::SUCCESS,
            }
        }
    }
}

/// Parses `--since`/`--until`: RFC 3339, a date (UTC midnight) or Unix milliseconds.
fn parse_time(text: &str) -> Result<u64, String> {
    if !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit()) {
        return text.parse().map_err(|_| format!("{text:?} is out of range"));
    }
    let timestamp = text
        .parse::<jiff::Timestamp>()
        .or_else(|_| {
            text.parse::<jiff::civil::Date>()
                .and_then(|date| date.to_zoned(jiff::tz::TimeZone::UTC))
                .map(|zoned| zoned.timestamp())
        })
        .map_err(|_| {
            format!("{text:?} is not an RFC 3339 time (2026-12-07T20:00:00Z), a date (2026-12-07) or Unix milliseconds")
        })?;
    u64::try_from(timestamp.as_millisecond()).map_err(|_| format!("{text:?} is before 1970"))
}

/// The `repairs:` line: how many torn tails the writer cut and recorded, and the newest.
fn repairs_text(report: &fluxgit_audit::Report) -> String {
    match report.last_tail_repair {
        None => "none".to_owned(),
        Some(last) => format!(
            "{} torn tail{} cut and recorded (the newest at sequence {}, {} bytes cut)",
            report.tail_repairs,
            if report.tail_repairs == 1 { "" } else { "s" },
            last.sequence,
            last.torn_bytes
        ),
    }
}

fn signed_text(signed: bool) -> &'static str {
    if signed { "signed" } else { "unsigned" }
}

/// `audit-keygen PATH`.
pub(super) fn audit_keygen(path: &Path) -> anyhow::Result<ExitCode> {
    let (key, public_path) = fluxgit_audit::generate_key_pair(path).context("audit-keygen")?;
    println!("private key: {} (mode 0600)", path.display());
    println!("public key:  {}", public_path.display());
    println!("key id:      {}", key.key_id());
    println!("sign with:   {}={}", config::AUDIT_SIGN_KEY_VAR, path.display());
    println!("verify with: fluxgit-mcp-sidecar verify-audit LEDGER --pubkey {}", public_path.display());
    Ok(ExitCode::SUCCESS)
}
