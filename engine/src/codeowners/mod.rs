//! CODEOWNERS as GitHub reads it: which file, how it parses, and who owns a path.
//!
//! Source: GitHub's "About code owners" (docs.github.com,
//! `customizing-your-repository/about-code-owners`).
//! - The file is the first of `.github/CODEOWNERS`, `CODEOWNERS`, `docs/CODEOWNERS` ([`LOCATIONS`])
//!   in the tree of the branch (here: HEAD's commit, never the work tree); files of 3 MB or more
//!   are not loaded.
//! - Each line is a pattern followed by owners: `@user`, `@org/team` or an email address. Blank
//!   lines and lines starting with `#` are skipped; a `#` word after the pattern starts an inline
//!   comment.
//! - The last matching rule wins; a rule without owners leaves what it matches unowned.
//! - Patterns follow gitignore with exceptions (see `pattern.rs`): `!` negation, `[ ]` ranges and
//!   escaping a leading `#` do not work. GitHub skips a line with invalid syntax; so do we, and
//!   report it in [`CodeOwners::errors`] with its line number instead of guessing.

pub(crate) mod kept;
mod pattern;

use serde::Serialize;

use crate::error::{Error, Result};
use pattern::{Component, Pattern};

/// Where GitHub looks for the file, in order; the first that exists is used.
pub(crate) const LOCATIONS: [&str; 3] = [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];

/// GitHub does not load a CODEOWNERS file of this size or more (3 MB).
pub(crate) const MAX_BYTES: usize = 3 * 1024 * 1024;

/// A parsed CODEOWNERS file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CodeOwners {
    /// The valid rules in file order.
    pub rules: Vec<Rule>,
    /// Lines GitHub would skip as invalid, in file order.
    pub errors: Vec<LineError>,
}

/// One valid rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// 1-based line number in the file.
    pub line: usize,
    /// The pattern as written (escapes included).
    pub pattern: String,
    /// Owners as written (`@user`, `@org/team`, `user@example.com`); empty for a rule that
    /// unassigns.
    pub owners: Vec<String>,
    #[serde(skip)]
    matcher: Pattern,
}

/// A line GitHub would skip.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    /// Why the line is invalid.
    pub message: String,
}

/// A CODEOWNERS file read from a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Loaded {
    /// Which of [`LOCATIONS`] it came from.
    pub file: &'static str,
    /// Its parsed content (empty with one error when the file is too large for GitHub), shared with
    /// every read of the same blob ([`crate::codeowners::kept`]).
    pub codeowners: std::sync::Arc<CodeOwners>,
}

/// Parses CODEOWNERS text. Never fails: invalid lines become [`CodeOwners::errors`].
pub fn parse(text: &str) -> CodeOwners {
    let mut out = CodeOwners::default();
    for (line_idx, line) in text.lines().enumerate() {
        let line_number = line_idx + 1;
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (pattern, rest) = split_pattern(line);
        let mut owners = Vec::new();
        let mut invalid = None;
        for word in rest.split_whitespace() {
            if word.starts_with('#') {
                break;
            }
            if !valid_owner(word) {
                invalid = Some(format!("owner `{word}` is not a @user, an @org/team or an email address"));
                break;
            }
            owners.push(word.to_owned());
        }
        let matcher = match (Pattern::parse(pattern), invalid) {
            (Err(message), _) | (Ok(_), Some(message)) => {
                out.errors.push(LineError { line: line_number, message });
                continue;
            }
            (Ok(matcher), None) => matcher,
        };
        out.rules.push(Rule { line: line_number, pattern: pattern.to_owned(), owners, matcher });
    }
    out
}

/// Splits a line (leading blanks removed) at the first unescaped whitespace: the pattern, then the
/// rest.
fn split_pattern(line: &str) -> (&str, &str) {
    let mut chars = line.char_indices();
    while let Some((idx, ch)) = chars.next() {
        if ch == '\\' {
            chars.next();
        } else if ch.is_whitespace() {
            return (&line[..idx], &line[idx..]);
        }
    }
    (line, "")
}

fn valid_owner(owner: &str) -> bool {
    let login = |name: &str| {
        !name.is_empty()
            && name.len() <= 39
            && name.starts_with(|ch: char| ch.is_ascii_alphanumeric())
            && name.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_')
    };
    if let Some(name) = owner.strip_prefix('@') {
        return match name.split_once('/') {
            Some((org, team)) => {
                login(org)
                    && !team.is_empty()
                    && team.chars().all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.'))
            }
            None => login(name),
        };
    }
    match owner.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.contains('@')
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }
        None => false,
    }
}

impl CodeOwners {
    /// The rule that decides the owners of the file at repository-relative `path`: the last one
    /// matching it.
    pub fn for_file(&self, path: &str) -> Option<&Rule> {
        let components: Vec<Component<'_>> = path.split('/').map(Component::Name).collect();
        self.rules.iter().rev().find(|rule| rule.matcher.matches(&components))
    }

    /// The rule that decides the owners of everything under the directory `path` (`""` for the
    /// repository root) unless a later rule matches some files only: the last rule matching every
    /// path below the directory.
    ///
    /// `/packages/web/` and `*` decide `packages/web`; `docs/*` or `*.md` decide no directory,
    /// since they match only some of what a directory can hold.
    pub fn for_directory(&self, path: &str) -> Option<&Rule> {
        let mut components: Vec<Component<'_>> =
            path.split('/').filter(|name| !name.is_empty()).map(Component::Name).collect();
        components.push(Component::Any);
        let child = components.clone();
        components.push(Component::Any);
        self.rules.iter().rev().find(|rule| rule.matcher.matches(&child) && rule.matcher.matches(&components))
    }

    /// `paths` grouped by their owners, as `(owners, paths)` with the most paths first (ties in
    /// owner order), each path once and in the given order. A path ending in `/` (an untracked
    /// directory) is owned as a directory, and an unowned path (no rule, or a rule without owners)
    /// has empty owners.
    pub fn group<'a>(&self, paths: impl IntoIterator<Item = &'a str>) -> Vec<(Vec<String>, Vec<String>)> {
        let mut seen = std::collections::HashSet::new();
        let mut groups: std::collections::BTreeMap<Vec<String>, Vec<String>> = std::collections::BTreeMap::new();
        for path in paths {
            if !seen.insert(path) {
                continue;
            }
            let rule = match path.strip_suffix('/') {
                Some(directory) => self.for_directory(directory),
                None => self.for_file(path),
            };
            let owners = rule.map(|rule| rule.owners.clone()).unwrap_or_default();
            groups.entry(owners).or_default().push(path.to_owned());
        }
        let mut groups: Vec<(Vec<String>, Vec<String>)> = groups.into_iter().collect();
        groups.sort_by_key(|(_, files)| std::cmp::Reverse(files.len()));
        groups
    }
}

/// Reads the CODEOWNERS file GitHub would use from `commit`'s tree; `None` when none of
/// [`LOCATIONS`] is a file. The rules of a blob parsed before come from
/// [`crate::codeowners::kept`].
///
/// # Errors
/// [`Error::GitRead`] when the tree or blob cannot be read.
pub(crate) fn read_at(commit: &gix::Commit<'_>) -> Result<Option<Loaded>> {
    let tree = commit.tree().map_err(|err| Error::git("commit tree", err))?;
    for location in LOCATIONS {
        let Some(entry) = tree.lookup_entry_by_path(location).map_err(|err| Error::git("tree entry", err))? else {
            continue;
        };
        if !entry.mode().is_blob() {
            continue;
        }
        let codeowners = crate::codeowners::kept::rules(entry.object_id(), || {
            let blob = entry.object().map_err(|err| Error::git("CODEOWNERS blob", err))?;
            Ok::<_, Error>(if blob.data.len() >= MAX_BYTES {
                let message =
                    format!("the file is {} bytes; GitHub does not load a CODEOWNERS of 3 MB or more", blob.data.len());
                CodeOwners { rules: Vec::new(), errors: vec![LineError { line: 0, message }] }
            } else {
                parse(&String::from_utf8_lossy(&blob.data))
            })
        })?;
        return Ok(Some(Loaded { file: location, codeowners }));
    }
    Ok(None)
}

#[cfg(test)]
mod tests;
