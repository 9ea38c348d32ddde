//! The exit statuses the sidecar's commands use beside 0 and 1.

/// `verify-audit` exit status for an integrity failure.
pub(super) const EXIT_INTEGRITY: u8 = 3;
/// `verify-audit` exit status for a ledger sound up to a torn last line.
pub(super) const EXIT_TORN_TAIL: u8 = 4;
/// Exit status for usage errors (as clap's own).
pub(super) const EXIT_USAGE: u8 = 2;
