//! The engine's error type and the reasons of design.md#roots.

use serde::Serialize;

/// Why an argument was refused before any Git read (design.md#roots `data.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InvalidReason {
    /// The path does not exist.
    NotFound,
    /// The path exists but is not inside a Git work tree or git dir.
    NotARepository,
    /// The path, its repository's git dir or its common dir lies outside every allowed root.
    OutsideAllowedRoots,
    /// The path is not absolute, or holds control characters or `..` escapes.
    InvalidPath,
    /// A well-formed revision that names no object.
    UnknownRevision,
    /// A revision that is refused before lookup: starts with `-`, holds control characters, or does
    /// not parse.
    InvalidRevision,
    /// A token budget below the tool's floor (the size of its required fields).
    BudgetBelowFloor,
    /// A pagination cursor that was altered, or made for another repository, ref or path.
    InvalidCursor,
    /// A repository path that names a directory or a submodule where a file is expected
    /// (`file.read`).
    NotAFile,
    /// A line range that is empty or starts past the end of the file (`endLine` < `startLine`,
    /// ...).
    InvalidRange,
    /// A file Git would call binary (a NUL byte in its first 8000 bytes) where lines are needed
    /// (`file.blame`).
    BinaryFile,
    /// A `repo.search` argument that cannot be searched for: an empty query or author, an unclosed
    /// quote, a date that does not parse.
    InvalidQuery,
    /// A name for a branch that does not exist yet which git would refuse
    /// (`git check-ref-format --branch`).
    InvalidRefName,
}

impl InvalidReason {
    /// The wire spelling, e.g. `outside_allowed_roots`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::NotARepository => "not_a_repository",
            Self::OutsideAllowedRoots => "outside_allowed_roots",
            Self::InvalidPath => "invalid_path",
            Self::UnknownRevision => "unknown_revision",
            Self::InvalidRevision => "invalid_revision",
            Self::BudgetBelowFloor => "budget_below_floor",
            Self::InvalidCursor => "invalid_cursor",
            Self::NotAFile => "not_a_file",
            Self::InvalidRange => "invalid_range",
            Self::BinaryFile => "binary_file",
            Self::InvalidQuery => "invalid_query",
            Self::InvalidRefName => "invalid_ref_name",
        }
    }
}

/// An engine failure.
///
/// [`Error::Invalid`] is the caller's fault (the MCP layer maps it to JSON-RPC -32602 with
/// `data.reason`); [`Error::GitRead`] is a read that failed on a valid repository (tool error
/// 10010, design.md#errors); [`Error::Cancelled`] a read its caller stopped through its
/// [`crate::Interrupt`].
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The input was refused; nothing was read.
    #[error("{message}")]
    Invalid {
        /// The machine-readable reason.
        reason: InvalidReason,
        /// A human-readable explanation naming the offending value.
        message: String,
        /// For [`InvalidReason::BudgetBelowFloor`]: the smallest budget, in tokens, that fits the
        /// required fields.
        floor: Option<usize>,
        /// For [`InvalidReason::UnknownRevision`]: up to 3 existing ref names nearest to the one
        /// given, nearest first (also named in `message`); for an ambiguous `symbol`
        /// ([`InvalidReason::InvalidQuery`]): the qualified names of the symbols it names; empty
        /// otherwise.
        suggestions: Vec<String>,
    },
    /// A Git read failed on a valid repository (corrupt object, unreadable pack, ...).
    #[error("git read failed while reading {what}: {message}")]
    GitRead {
        /// What was being read, e.g. `work-tree status`.
        what: &'static str,
        /// The underlying error, rendered.
        message: String,
    },
    /// The caller triggered the read's [`crate::Interrupt`]: it stopped before finishing, and
    /// nothing it read was kept. Never returned to a caller that did not trigger it.
    #[error("the read was cancelled by its caller")]
    Cancelled,
}

impl Error {
    /// An [`Error::Invalid`] without a floor.
    pub fn invalid(reason: InvalidReason, message: impl Into<String>) -> Self {
        Self::Invalid { reason, message: message.into(), floor: None, suggestions: Vec::new() }
    }

    /// An [`Error::GitRead`] for `what`, rendering `err` and its sources on one line
    /// ([`one_line`]).
    pub fn git(what: &'static str, err: impl std::error::Error) -> Self {
        Self::GitRead { what, message: one_line(&err) }
    }

    /// An [`Error::GitRead`] for `what` whose cause is a text of the engine's own (no error value
    /// to render).
    pub fn git_text(what: &'static str, message: impl Into<String>) -> Self {
        Self::GitRead { what, message: message.into() }
    }
}

/// `err`'s `Display` and its sources' (`std::error::Error::source`, in order) on one line, `: `
/// between them; a source whose text the line already holds is left out (an error that writes its
/// cause into its own message), and line breaks become spaces. Plain `Display` of each: gix's
/// errors answer the alternate flag (`{:#}`) with a debug dump of their fields
/// (`Message { message: "...", class: NotFound }`).
pub(crate) fn one_line(err: &dyn std::error::Error) -> String {
    let mut line = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line.lines().map(str::trim).filter(|part| !part.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Why one item of an answer could not be read (design.md#roots): the item is marked with it and
/// the rest of the answer is given. Serialised as `error: {reason}` in the item's entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemError {
    /// What went wrong, for a person or an agent to read (e.g.
    /// `ignoring suspicious submodule name ../x`).
    pub reason: String,
}

impl ItemError {
    /// An item error saying `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self { reason: reason.into() }
    }

    /// An item error rendering `err` and its sources on one line ([`one_line`]).
    pub fn from_error(err: impl std::error::Error) -> Self {
        Self { reason: one_line(&err) }
    }
}

/// A path of the repository that could not be read, with why (one entry of an `unreadable` list).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unreadable {
    /// The repository-relative path.
    pub path: String,
    /// Why it could not be read.
    pub error: ItemError,
}

/// Shorthand for engine results.
pub type Result<T, E = Error> = std::result::Result<T, E>;
