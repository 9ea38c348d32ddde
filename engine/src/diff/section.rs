//! A file's patch text in pieces, and path quoting in patch headers, shared by the two-sided
//! patches ([`super::patch`]) and the combined diffs of unmerged paths ([`super::combined`]).

use gix::bstr::BStr;

use crate::quote;

/// A file's patch text in the pieces a budget may keep or drop.
#[derive(Debug, Clone, Default)]
pub(crate) struct Section {
    /// From `diff --git` to the `+++` line (or the `Binary files ... differ` line): required by any
    /// hunk.
    pub(crate) header: String,
    /// Each `@@` hunk, or the one `GIT binary patch` block.
    pub(crate) hunks: Vec<String>,
}

/// `prefix` + `path`, C-quoted as git quotes names in a patch under `core.quotePath`
/// ([`quote::path`]).
pub(crate) fn quote(prefix: &str, path: &BStr, quoting: quote::Style) -> String {
    quote::path(prefix, path, quoting)
}
