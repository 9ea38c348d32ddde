//! The fact checklist of a scenario and which side carries which fact, matched by value, never by key name.
//!
//! A side is a list of documents (one per tool answer or git command output). A fact is carried when some
//! document shows its oracle value in a form that identifies it:
//!
//! - a name or path: the exact text, bounded (so `main` is not found in `origin/main` or `domain`), or a path the
//!   text format's submodules line marks (`-libs/uninit`);
//! - a sha: any prefix of 7 or more hex digits, bounded;
//! - a count: a number right after a word naming it (`ahead 2`, `"staged":2`, `stashes":{"count":8`, at most
//!   40 non-digit characters between, same line), or the count a reader gets by counting the entries of a git
//!   listing (`git status` sections, `git status -sb` codes, `git stash list` lines, `git submodule status`
//!   markers and the text format's `submodules N: +path -path` marks, `git rev-list --left-right --count`, the `*`
//!   line of `git branch -vv`); in compact JSON (design.md#envelope)
//!   an ahead or behind of 0 is a JSON document that names the upstream and leaves the count out; a `##
//!   branch...upstream [ahead N]` line (git status -sb, and our text format) gives both;
//! - detached HEAD, a clean tree, an operation in progress: `detached":true`-like flags, a JSON string equal to
//!   the operation's name, git's own sentences (`HEAD detached at`, `working tree clean`,
//!   `You are currently rebasing`), or our text format's lines (`## HEAD (detached at`, `clean`,
//!   `merge in progress`);
//! - recent commits: every one of the ten with a sha prefix and its subject in the same document.

use serde::Serialize;

use crate::listing::{self, Count, Doc};
use crate::oracle::Truth;

/// One checklist fact.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Fact {
    /// Stable id, e.g. `ahead` or `conflictedPath:src/main.c`.
    pub(crate) id: String,
    /// What it is, for the tables.
    pub(crate) label: String,
    /// The oracle's value, as shown in the tables.
    pub(crate) value: String,
    #[serde(skip)]
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Text(String),
    Sha(String),
    Count { concepts: &'static [&'static str], value: usize, derived: Count },
    Detached,
    Clean,
    Operation(String),
    RebasingBranch(String),
    Commits(Vec<(String, String)>),
}

/// Whether a side carries a fact, with a detail for partial lists (`7/10`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Carried {
    /// Carried with the oracle's value.
    pub(crate) carried: bool,
    /// How much of a list was found, when not all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) detail: Option<String>,
}

/// The checklist for `truth`: branch or detached HEAD, HEAD, upstream and ahead/behind, the operation in
/// progress, each non-zero work-tree count (or a clean tree), conflicted paths, stash count, submodule drift,
/// recent commits.
pub(crate) fn checklist(truth: &Truth) -> Vec<Fact> {
    let mut facts = Vec::new();
    let mut push = |id: String, label: &str, value: String, kind: Kind| {
        facts.push(Fact { id, label: label.to_owned(), value, kind });
    };
    if let Some(branch) = &truth.branch {
        push("branch".into(), "branch", branch.clone(), Kind::Text(branch.clone()));
    }
    if truth.detached {
        push("detached".into(), "HEAD detached", "yes".into(), Kind::Detached);
    }
    if let Some(branch) = &truth.rebasing_branch {
        push("rebasingBranch".into(), "branch being rebased", branch.clone(), Kind::RebasingBranch(branch.clone()));
    }
    if let Some(head) = &truth.head {
        push("head".into(), "HEAD commit", head[..12.min(head.len())].to_owned(), Kind::Sha(head.clone()));
    }
    if let Some(upstream) = &truth.upstream {
        push("upstream".into(), "upstream", upstream.clone(), Kind::Text(upstream.clone()));
    }
    let mut count = |id: &str, label: &str, value: usize, concepts: &'static [&'static str], derived| {
        push(id.into(), label, value.to_string(), Kind::Count { concepts, value, derived });
    };
    if let (Some(ahead), Some(behind)) = (truth.ahead, truth.behind) {
        count("ahead", "ahead of upstream", ahead, &["ahead"], Count::Ahead);
        count("behind", "behind upstream", behind, &["behind"], Count::Behind);
    }
    let lists = [
        ("staged", &truth.staged, &["staged"] as &'static [&'static str], Count::Staged),
        ("unstaged", &truth.unstaged, &["unstaged"], Count::Unstaged),
        ("untracked", &truth.untracked, &["untracked"], Count::Untracked),
        ("conflicted", &truth.conflicted, &["conflicted", "conflicts", "unmerged"], Count::Conflicted),
    ];
    for (id, paths, concepts, derived) in lists {
        if !paths.is_empty() {
            count(id, &format!("{id} files"), paths.len(), concepts, derived);
        }
    }
    if truth.stashes > 0 {
        count("stashes", "stash count", truth.stashes, &["stash"], Count::Stashes);
    }
    let drifted = truth.submodules_in("drifted").len();
    if drifted > 0 {
        count("submodulesDrifted", "drifted submodules", drifted, &["drifted"], Count::Drifted);
    }
    let uninitialized = truth.submodules_in("uninitialized").len();
    if uninitialized > 0 {
        count("submodulesUninitialized", "uninitialized submodules", uninitialized, &["uninit"], Count::Uninitialized);
    }
    let clean = [&truth.staged, &truth.unstaged, &truth.untracked, &truth.conflicted].iter().all(|v| v.is_empty());
    if clean && truth.head.is_some() {
        push("clean".into(), "working tree clean", "yes".into(), Kind::Clean);
    }
    if let Some(operation) = &truth.operation {
        push("operation".into(), "operation in progress", operation.clone(), Kind::Operation(operation.clone()));
    }
    for path in &truth.conflicted {
        push(format!("conflictedPath:{path}"), "conflicted path", path.clone(), Kind::Text(path.clone()));
    }
    for submodule in truth.submodules.iter().filter(|submodule| submodule.state != "clean") {
        let id = format!("submoduleAttention:{}", submodule.path);
        push(id, "submodule needing attention", submodule.path.clone(), Kind::Text(submodule.path.clone()));
    }
    if !truth.recent_commits.is_empty() {
        let value = format!("{} commits", truth.recent_commits.len());
        push("recentCommits".into(), "recent commits", value, Kind::Commits(truth.recent_commits.clone()));
    }
    facts
}

/// Whether the side made of `docs` carries `fact`.
pub(crate) fn carried(fact: &Fact, docs: &[Doc<'_>]) -> Carried {
    let yes = |carried| Carried { carried, detail: None };
    match &fact.kind {
        Kind::Text(text) => yes(docs.iter().any(|doc| {
            contains_text(doc.text, text)
                || listing::submodule_marks(doc).is_some_and(|marks| marks.iter().any(|(_, path)| path == text))
        })),
        Kind::Sha(sha) => yes(docs.iter().any(|doc| contains_sha(doc.text, sha))),
        Kind::Count { concepts, value, derived } => yes(docs.iter().any(|doc| {
            let labelled = !doc.source.starts_with("git branch")
                && concepts.iter().any(|concept| labelled_number(doc.text, concept, *value));
            let compact_zero = *value == 0
                && matches!(derived, Count::Ahead | Count::Behind)
                && compact_default(doc.text, "upstream", concepts);
            let branch_line = match derived {
                Count::Ahead => listing::branch_line(doc.text).map(|(ahead, _)| ahead),
                Count::Behind => listing::branch_line(doc.text).map(|(_, behind)| behind),
                _ => None,
            };
            labelled || compact_zero || branch_line == Some(*value) || listing::count(doc, *derived) == Some(*value)
        })),
        Kind::Detached => yes(docs.iter().any(|doc| {
            flag_true(doc.text, "detached")
                || ["HEAD detached at", "HEAD detached from", "(no branch", "## HEAD (detached at"]
                    .iter()
                    .any(|p| doc.text.contains(p))
        })),
        Kind::Clean => yes(docs.iter().any(|doc| {
            flag_true(doc.text, "clean")
                || doc.text.contains("working tree clean")
                || doc.text.lines().any(|line| line == "clean")
                || listing::clean(doc) == Some(true)
        })),
        Kind::Operation(operation) => yes(docs.iter().any(|doc| {
            doc.text.contains(&format!("\"{operation}\""))
                || doc.text.lines().any(|line| line.starts_with(&format!("{operation} in progress")))
                || operation_sentences(operation).iter().any(|s| doc.text.contains(s))
        })),
        Kind::RebasingBranch(branch) => yes(docs.iter().any(|doc| {
            doc.text.contains(&format!("rebasing branch '{branch}'"))
                || doc.text.contains(&format!("rebasing {branch})"))
                || (doc.text.contains(&format!("\"{branch}\"")) && doc.text.contains("\"rebase\""))
        })),
        Kind::Commits(commits) => {
            let found = commits
                .iter()
                .filter(|(sha, subject)| {
                    docs.iter().any(|doc| contains_sha(doc.text, sha) && contains_text(doc.text, subject))
                })
                .count();
            Carried {
                carried: found == commits.len(),
                detail: (found != commits.len()).then(|| format!("{found}/{}", commits.len())),
            }
        }
    }
}

/// `text` is a JSON document (compact, design.md#envelope) with a `"context"` key and none of the `concepts` as keys: the
/// counts are left out because they are 0.
fn compact_default(text: &str, context: &str, concepts: &[&str]) -> bool {
    text.starts_with('{')
        && text.contains(&format!("\"{context}\":"))
        && !concepts.iter().any(|concept| text.contains(&format!("\"{concept}\":")))
}

/// Git's own words for an operation in progress (`git status`).
fn operation_sentences(operation: &str) -> &'static [&'static str] {
    match operation {
        "merge" => &["You have unmerged paths", "you are still merging"],
        "rebase" => &["rebase in progress", "You are currently rebasing"],
        "cherry-pick" => &["cherry-pick in progress", "You are currently cherry-picking"],
        "revert" => &["revert in progress", "You are currently reverting"],
        "bisect" => &["You are currently bisecting"],
        "am" => &["am session", "You are in the middle of an am session"],
        _ => &[],
    }
}

/// `text` holds `needle` (or its JSON-escaped form) with no name character on either side.
fn contains_text(text: &str, needle: &str) -> bool {
    let escaped = serde_json::to_string(needle).unwrap_or_default();
    let escaped = escaped.trim_matches('"');
    [needle, escaped].iter().any(|needle| {
        !needle.is_empty()
            && text.match_indices(needle).any(|(start, _)| {
                let before = text[..start].chars().next_back();
                let after = text[start + needle.len()..].chars().next();
                !before.is_some_and(|c| c.is_alphanumeric() || "/-_".contains(c))
                    && !after.is_some_and(|c| c.is_alphanumeric() || "/-_".contains(c))
            })
    })
}

/// `text` holds a prefix of `sha` of at least 7 hex digits, as a whole word.
fn contains_sha(text: &str, sha: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| word.len() >= 7 && sha.starts_with(word) && word.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A word starting with `concept` (case-insensitive, at a word start) is followed, within 40 characters that are
/// neither digits nor line breaks, by the number `value`.
fn labelled_number(text: &str, concept: &str, value: usize) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.match_indices(concept).any(|(start, _)| {
        if lower[..start].chars().next_back().is_some_and(char::is_alphanumeric) {
            return false;
        }
        let rest = &lower[start + concept.len()..];
        let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphabetic());
        let Some(digits_at) = rest.find(|c: char| c.is_ascii_digit() || c == '\n') else {
            return false;
        };
        if digits_at > 40 || rest[digits_at..].starts_with('\n') {
            return false;
        }
        let digits: String = rest[digits_at..].chars().take_while(char::is_ascii_digit).collect();
        let after = rest[digits_at + digits.len()..].chars().next();
        digits.parse::<usize>().ok() == Some(value) && !after.is_some_and(|c| c == '.' || c.is_alphanumeric())
    })
}

/// A word starting with `concept` is followed, within 3 punctuation characters, by `true`.
fn flag_true(text: &str, concept: &str) -> bool {
    text.match_indices(concept).any(|(start, _)| {
        let rest = text[start + concept.len()..].trim_start_matches(|c: char| c.is_ascii_alphabetic());
        let gap = rest.find(|c: char| c.is_alphanumeric()).unwrap_or(rest.len());
        gap <= 3 && rest[gap..].starts_with("true")
    })
}

#[cfg(test)]
mod tests {
    use super::{compact_default, contains_sha, contains_text, flag_true, labelled_number};

    #[test]
    fn values_are_found_in_json_and_in_git_prose() {
        assert!(labelled_number(r#"{"ahead":2,"behind":3}"#, "behind", 3));
        assert!(labelled_number("## main...origin/main [ahead 2, behind 3]", "ahead", 2));
        assert!(labelled_number("Your branch is ahead of 'origin/main' by 2 commits.", "ahead", 2));
        assert!(labelled_number(r#""stashes":{"count":8}"#, "stash", 8));
        assert!(!labelled_number(r#"{"unstaged":2}"#, "staged", 2), "staged is not unstaged");
        assert!(!labelled_number("Changes not staged for commit:\n\tmodified: 2.txt", "staged", 2));
        assert!(!labelled_number(r#""ratio":1.0"#, "ratio", 1));
        assert!(contains_text("On branch main\n", "main"));
        assert!(contains_text("## main...origin/main", "main"));
        assert!(contains_text("## main...origin/main", "origin/main"));
        assert!(!contains_text("origin/main domain", "main"));
        assert!(contains_text(r#""subject":"say \"hi\"""#, "say \"hi\""));
        assert!(contains_sha(
            "commit 3b7949ff9327971289f94e90edb3c7132b887638",
            "3b7949ff9327971289f94e90edb3c7132b887638"
        ));
        assert!(contains_sha("3b7949f feat", "3b7949ff9327971289f94e90edb3c7132b887638"));
        assert!(!contains_sha("3b7949 feat", "3b7949ff9327971289f94e90edb3c7132b887638"), "six digits are not enough");
        assert!(compact_default(r#"{"head":{"branch":"main","upstream":"origin/main"}}"#, "upstream", &["ahead"]));
        assert!(!compact_default(r#"{"head":{"upstream":"origin/main","ahead":2}}"#, "upstream", &["ahead"]));
        assert!(!compact_default("## main...origin/main", "upstream", &["ahead"]));
        assert!(flag_true(r#"{"detached":true}"#, "detached"));
        assert!(!flag_true(r#"{"detached":false}"#, "detached"));
    }
}
