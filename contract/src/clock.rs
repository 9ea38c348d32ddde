//! The wall clock in Unix milliseconds, for every crate of the workspace (the ledger, the gateway, the sidecar and
//! the engine each read it here, so that none of them links another for a clock).

use std::time::{SystemTime, UNIX_EPOCH};

/// `time` in milliseconds since the Unix epoch.
///
/// A time before the epoch is 0, and one past `u64::MAX` milliseconds is `u64::MAX`: the answer saturates at both
/// ends rather than wrapping or falling back to 0, so that a later time never reads as earlier than an earlier one
/// (ages, expiries and "newest first" orders stay right whatever the clock says).
#[must_use]
pub fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
}

/// Now, in milliseconds since the Unix epoch (saturating as [`unix_ms`] does).
#[must_use]
pub fn now_ms() -> u64 {
    unix_ms(SystemTime::now())
}

/// [`now_ms`] as an `i64`, for the places that store signed milliseconds (saturating at `i64::MAX`).
#[must_use]
pub fn now_ms_i64() -> i64 {
    i64::try_from(now_ms()).unwrap_or(i64::MAX)
}

/// Now, in whole seconds since the Unix epoch (saturating as [`unix_ms`] does).
#[must_use]
pub fn now_secs() -> i64 {
    now_ms_i64() / 1000
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn saturates_at_both_ends() {
        assert_eq!(unix_ms(UNIX_EPOCH), 0);
        assert_eq!(unix_ms(UNIX_EPOCH - Duration::from_secs(1)), 0);
        assert_eq!(unix_ms(UNIX_EPOCH + Duration::from_millis(1_234)), 1_234);
        if let Some(far) = UNIX_EPOCH.checked_add(Duration::from_secs(u64::MAX)) {
            assert_eq!(unix_ms(far), u64::MAX);
        }
    }

    #[test]
    fn now_is_after_2020_and_seconds_agree_with_milliseconds() {
        let (before, secs, after) = (now_ms(), now_secs(), now_ms());
        assert!(before > 1_577_836_800_000, "{before}");
        assert!(
            i64::try_from(before / 1000).expect("fits") <= secs && secs <= i64::try_from(after / 1000).expect("fits")
        );
    }
}
