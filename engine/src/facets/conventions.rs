//! The conventions facet: commit-subject style, default branch, branch-name prefixes.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::Result;
use crate::facets::commits::CommitLine;
use crate::facets::refs;

/// Subjects examined for [`Conventions::conventional_commit_ratio`] (design.md#tools: the last 50).
pub const SUBJECTS_EXAMINED: usize = 50;
/// Branch prefixes reported at most.
pub const MAX_PREFIXES: usize = 3;

/// Conventions an agent should follow when it writes commits and branches here.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conventions {
    /// Share (0.0-1.0, two decimals) of the last 50 commit subjects that follow Conventional
    /// Commits (`type(scope)!: description`); default `null` (no commits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conventional_commit_ratio: Option<f64>,
    /// `origin/HEAD`'s branch, else `main` or `master` if it exists locally; default `null` (none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_branch: Option<String>,
    /// The most common `x/` prefixes of local branch names, most used first (ties by name), at most
    /// 3; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub branch_prefixes: Vec<String>,
}

impl Conventions {
    /// `true` when nothing was detected (the object is then left out of the brief).
    pub fn is_empty(&self) -> bool {
        self.conventional_commit_ratio.is_none() && self.default_branch.is_none() && self.branch_prefixes.is_empty()
    }
}

/// Reads the conventions from `history` (newest first; the first [`SUBJECTS_EXAMINED`] are used),
/// the local `branch_names` and the refs.
///
/// # Errors
/// [`crate::Error::GitRead`] when history or refs cannot be read.
pub fn read(repo: &gix::Repository, history: &[CommitLine], branch_names: &[String]) -> Result<Conventions> {
    let subjects = &history[..history.len().min(SUBJECTS_EXAMINED)];
    let conventional_commit_ratio = (!subjects.is_empty()).then(|| {
        let conventional = subjects.iter().filter(|line| is_conventional(&line.subject)).count();
        (conventional as f64 / subjects.len() as f64 * 100.0).round() / 100.0
    });
    Ok(Conventions {
        conventional_commit_ratio,
        default_branch: refs::default_branch(repo)?,
        branch_prefixes: prefixes(branch_names),
    })
}

/// `true` for a Conventional Commits subject: `type`, optional `(scope)`, optional `!`, `: `, a
/// description.
pub fn is_conventional(subject: &str) -> bool {
    let Some((head, description)) = subject.split_once(": ") else {
        return false;
    };
    if description.trim().is_empty() {
        return false;
    }
    let head = head.strip_suffix('!').unwrap_or(head);
    let kind = match head.split_once('(') {
        Some((kind, rest)) => match rest.strip_suffix(')') {
            Some(scope) if !scope.is_empty() && !scope.contains(['(', ')']) => kind,
            _ => return false,
        },
        None => head,
    };
    !kind.is_empty() && kind.chars().all(|c| c.is_ascii_alphabetic())
}

fn prefixes(branch_names: &[String]) -> Vec<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for name in branch_names {
        if let Some((prefix, rest)) = name.split_once('/')
            && !rest.is_empty()
        {
            *counts.entry(prefix).or_default() += 1;
        }
    }
    let mut ranked: Vec<(&str, usize)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked.into_iter().take(MAX_PREFIXES).map(|(prefix, _)| format!("{prefix}/")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conventional_subjects() {
        for yes in ["feat: add", "fix(parser): handle x", "refactor!: drop y", "chore(deps)!: bump"] {
            assert!(is_conventional(yes), "{yes}");
        }
        for no in ["Add feature", "feat:missing space", "fix(): empty scope", ": nothing", "feat: ", "fe at: x"] {
            assert!(!is_conventional(no), "{no}");
        }
    }

    #[test]
    fn prefixes_rank_by_count_then_name() {
        let names: Vec<String> =
            ["feature/a", "feature/b", "fix/c", "chore/d", "fix/e", "main", "x/"].map(String::from).to_vec();
        assert_eq!(prefixes(&names), vec!["feature/", "fix/", "chore/"]);
    }
}
