//! Compact JSON (design.md#envelope): a field whose value is its documented default (null, 0,
//! false, an empty list or object) is left out of the JSON, so an absent field means exactly that
//! default.
//!
//! These are the `skip_serializing_if` predicates the result types share. Each skipped field's doc
//! comment states its default, and the MCP layer repeats it in the field's outputSchema
//! description.

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

/// A value the JSON leaves out while the rest of the answer already says it (design.md#envelope: no
/// field repeats what another says), e.g. work-tree counts that are the lengths of uncut lists, or
/// totals that are the sums of an uncut file list. Rust callers always read the value (it derefs to
/// it); serialised, it is the value itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct Implied<T> {
    /// The value, exact whether or not it is serialised.
    pub value: T,
    /// The rest of the answer says it: the field is left out of the JSON. Not serialised.
    #[serde(skip)]
    pub implied: bool,
}

impl<T> Implied<T> {
    /// `value`, left out of the JSON when `implied`.
    pub fn new(value: T, implied: bool) -> Self {
        Self { value, implied }
    }

    /// `value`, always serialised (e.g. an answer no budget has cut yet).
    pub fn stated(value: T) -> Self {
        Self { value, implied: false }
    }

    /// `true` when the field is left out of the JSON.
    pub fn is_implied(&self) -> bool {
        self.implied
    }
}

impl<T> std::ops::Deref for Implied<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}
