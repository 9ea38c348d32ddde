//! Compact JSON (SPEC §4.2): a field whose value is its documented default (null, 0, false, an empty list or
//! object) is left out of the JSON, so an absent field means exactly that default.
//!
//! These are the `skip_serializing_if` predicates the result types share. Each skipped field's doc comment states
//! its default, and the MCP layer repeats it in the field's outputSchema description.

/// `true` for 0: the field is left out.
pub(crate) fn is_zero(count: &usize) -> bool {
    *count == 0
}

/// `true` for 0: the field is left out (for `u64` counts).
pub(crate) fn is_zero_u64(count: &u64) -> bool {
    *count == 0
}

/// `true` for `false`: the field is left out.
pub(crate) fn is_false(flag: &bool) -> bool {
    !*flag
}
