//! Wall-clock helpers: milliseconds since the epoch and RFC 3339 UTC with milliseconds (the wire format).

/// Milliseconds since the Unix epoch, now (the workspace's one clock, saturating at `i64::MAX`).
pub use fluxgit_contract::now_ms_i64 as now_ms;

/// `ms` as RFC 3339 UTC with milliseconds, e.g. `2026-01-01T00:00:00.000Z`.
pub fn format_ms(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(timestamp) => format!("{timestamp:.3}"),
        Err(_) => "1970-01-01T00:00:00.000Z".to_owned(),
    }
}

/// Parses an RFC 3339 time into milliseconds since the epoch; `None` if it is not one.
pub fn parse_ms(text: &str) -> Option<i64> {
    text.parse::<jiff::Timestamp>().ok().map(|timestamp| timestamp.as_millisecond())
}
