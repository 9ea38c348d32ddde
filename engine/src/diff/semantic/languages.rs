//! The language of each changed path for `diff.semantic`: `.gitattributes` over the extension.

use gix::bstr::ByteSlice as _;

use crate::compare::changes::AttributeFiles;
use crate::error::{Error, Result};
use crate::semantic::Language;

/// The language of each path: `.gitattributes` (`linguist-language`, else `diff`) over the
/// extension.
pub(crate) struct Languages<'repo> {
    stack: gix::AttributeStack<'repo>,
    outcome: gix::attrs::search::Outcome,
}

impl<'repo> Languages<'repo> {
    /// Looks up the `linguist-language` and `diff` attributes of `files`.
    pub(crate) fn new(repo: &'repo gix::Repository, files: &AttributeFiles) -> Self {
        let (stack, outcome) = files.stack(repo, &["linguist-language", "diff"]);
        Self { stack, outcome }
    }

    /// The language of `path`, or `None` for one this build has no grammar for.
    ///
    /// # Errors
    /// [`Error::GitRead`] when the attributes cannot be read.
    pub(crate) fn of(&mut self, path: &gix::bstr::BStr) -> Result<Option<Language>> {
        self.outcome.reset();
        let platform = self.stack.at_entry(path, None).map_err(|err| Error::git("attributes", err))?;
        platform.matching_attributes(&mut self.outcome);
        let (mut linguist, mut driver) = (None, None);
        for matched in self.outcome.iter_selected() {
            if let gix::attrs::StateRef::Value(value) = matched.assignment.state {
                let value = value.as_bstr().to_str_lossy().into_owned();
                match matched.assignment.name.as_str() {
                    "linguist-language" => linguist = Some(value),
                    _ => driver = Some(value),
                }
            }
        }
        let path = path.to_str_lossy();
        Ok(Language::detect(&path, linguist.or(driver).as_deref()))
    }
}
