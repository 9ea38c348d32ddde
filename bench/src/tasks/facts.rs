//! The facts a task needs and how each is recognised in what the agent or the expert read.

use serde::Serialize;

/// One fact a task needs, with how it is recognised in text.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Fact {
    /// What the fact is, e.g. `conflicted path 1`.
    pub(crate) name: String,
    /// How it is matched.
    pub(crate) matcher: Matcher,
    /// The git commands never print it, an expert types it from knowledge (e.g. `git rebase --onto`): found on the
    /// git side by definition, on ours only when an answer says it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) expert_knows: bool,
}

/// How a fact is recognised in what a side read.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub(crate) enum Matcher {
    /// The text itself, not inside a longer name (no letter, digit, `/`, `-` or `_` on either side).
    Text {
        /// The text.
        value: String,
    },
    /// A commit: a hex word of at least 7 digits that begins the full sha.
    Sha {
        /// The full sha.
        value: String,
    },
    /// `label` followed within 50 characters of the same line by the whole number `number`, or preceded by it
    /// within 8 (`git shortlog -sn`: `16 Carl Lerche`).
    Pair {
        /// The name, e.g. an author.
        label: String,
        /// The count that goes with it.
        number: usize,
    },
    /// After `anchor`, before the next of `others` (another repository's name), one of `any` (case-insensitive).
    Near {
        /// The repository's name.
        anchor: String,
        /// The other repositories' names: where its part of the text ends.
        others: Vec<String>,
        /// Words that say why it needs attention.
        any: Vec<String>,
    },
}

impl Fact {
    pub(crate) fn text(name: impl Into<String>, value: impl Into<String>) -> Fact {
        Fact { name: name.into(), matcher: Matcher::Text { value: value.into() }, expert_knows: false }
    }

    pub(crate) fn sha(name: impl Into<String>, value: impl Into<String>) -> Fact {
        Fact { name: name.into(), matcher: Matcher::Sha { value: value.into() }, expert_knows: false }
    }

    pub(crate) fn pair(name: impl Into<String>, label: impl Into<String>, number: usize) -> Fact {
        Fact { name: name.into(), matcher: Matcher::Pair { label: label.into(), number }, expert_knows: false }
    }

    /// The value shown in reports: the text, a 7-digit sha, `label number`, `anchor: any|...`.
    pub(crate) fn shown(&self) -> String {
        match &self.matcher {
            Matcher::Text { value } => value.clone(),
            Matcher::Sha { value } => value.chars().take(7).collect(),
            Matcher::Pair { label, number } => format!("{label} {number}"),
            Matcher::Near { anchor, any, .. } => format!("{anchor}: {}", any.join("|")),
        }
    }

    /// Whether some document of `docs` shows the fact.
    pub(crate) fn found_in(&self, docs: &[&str]) -> bool {
        docs.iter().any(|doc| self.matches(doc))
    }

    fn matches(&self, doc: &str) -> bool {
        let lines = normalise_lines(doc);
        let flat = lines.replace('\n', " ");
        match &self.matcher {
            Matcher::Text { value } => {
                let value = normalise_lines(value).replace('\n', " ");
                let escaped = serde_json::to_string(&value).unwrap_or_default();
                bounded(&flat, &value) || bounded(&flat, escaped.trim_matches('"'))
            }
            Matcher::Sha { value } => flat
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|word| word.len() >= 7 && value.starts_with(word) && word.bytes().all(|b| b.is_ascii_hexdigit())),
            Matcher::Pair { label, number } => lines.lines().any(|line| pair_in_line(line, label, *number)),
            Matcher::Near { anchor, others, any } => {
                let lower = flat.to_lowercase();
                let anchor = anchor.to_lowercase();
                lower.match_indices(&anchor).any(|(start, _)| {
                    let rest = &lower[start + anchor.len()..];
                    if rest.starts_with(|c: char| c.is_alphanumeric()) {
                        return false;
                    }
                    let end =
                        others.iter().filter_map(|other| rest.find(&other.to_lowercase())).min().unwrap_or(rest.len());
                    any.iter().any(|word| rest[..end].contains(&word.to_lowercase()))
                })
            }
        }
    }
}

/// Runs of spaces and tabs become one space on every line; lines are trimmed.
fn normalise_lines(text: &str) -> String {
    text.lines().map(|line| line.split_whitespace().collect::<Vec<_>>().join(" ")).collect::<Vec<_>>().join("\n")
}

/// `text` holds `needle` with no name character (letter, digit, `/`, `-`, `_`) right before or after it.
fn bounded(text: &str, needle: &str) -> bool {
    !needle.is_empty()
        && text.match_indices(needle).any(|(start, _)| {
            let name = |c: char| c.is_alphanumeric() || "/-_".contains(c);
            let before = text[..start].chars().next_back();
            let after = text[start + needle.len()..].chars().next();
            // A needle that itself starts or ends with punctuation (`@owner`, `--abort`) only needs that side free of
            // letters and digits.
            !before.is_some_and(name) && !after.is_some_and(name)
        })
}

/// `label` in `line`, then the whole number within 50 characters after it, or the number within 8 before it.
fn pair_in_line(line: &str, label: &str, number: usize) -> bool {
    let wanted = number.to_string();
    let numbers = |text: &str| -> Vec<(usize, String)> {
        let mut found = Vec::new();
        let mut digits = String::new();
        let mut start = 0;
        for (idx, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
            if c.is_ascii_digit() {
                if digits.is_empty() {
                    start = idx;
                }
                digits.push(c);
            } else if !digits.is_empty() {
                let before_ok = !text[..start].ends_with(|c: char| c.is_alphanumeric() || c == '.');
                let after_ok =
                    !(c.is_alphanumeric() || (c == '.' && text[idx + 1..].starts_with(|c: char| c.is_ascii_digit())));
                if before_ok && after_ok {
                    found.push((start, std::mem::take(&mut digits)));
                }
                digits.clear();
            }
        }
        found
    };
    let all = numbers(line);
    line.match_indices(label).any(|(start, _)| {
        let end = start + label.len();
        all.iter().any(|(at, digits)| {
            *digits == wanted && ((*at >= end && *at - end <= 50) || (*at < start && start - (*at + digits.len()) <= 8))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::{Fact, Matcher};

    fn near(anchor: &str, others: &[&str], any: &[&str]) -> Fact {
        Fact {
            name: anchor.to_owned(),
            matcher: Matcher::Near {
                anchor: anchor.to_owned(),
                others: others.iter().map(|other| (*other).to_owned()).collect(),
                any: any.iter().map(|word| (*word).to_owned()).collect(),
            },
            expert_knows: false,
        }
    }

    #[test]
    fn facts_match_values_not_lookalikes() {
        let owner = Fact::text("owner", "@net-reviewers");
        assert!(owner.found_in(&["tokio/src/net/ @net-reviewers @alice-net"]));
        assert!(!owner.found_in(&["@net-reviewers-2"]));
        let subject = Fact::text("subject", "wildmatch: hide internal return values");
        assert!(subject.found_in(&["91b81b64e3 wildmatch:  hide\n internal return values"]), "whitespace normalised");
        assert!(subject.found_in(&[r#"{"subject":"wildmatch: hide internal return values"}"#]));
        let sha = Fact::sha("sha", "3b7949ff9327971289f94e90edb3c7132b887638");
        assert!(sha.found_in(&["3b7949f feat"]));
        assert!(!sha.found_in(&["3b7949 feat"]), "six digits are not enough");
        let author = Fact::pair("author", "Carl Lerche", 16);
        assert!(author.found_in(&["    16\tCarl Lerche"]));
        assert!(author.found_in(&[r#"{"author":"Carl Lerche <me@carllerche.com>","commits":16}"#]));
        assert!(!author.found_in(&["Carl Lerche 160"]));
        assert!(!author.found_in(&["Carl Lerche\n16 others"]), "same line only");
        let remaining = Fact::pair("left", "remaining", 1);
        assert!(remaining.found_in(&["Next command to do (1 remaining command):"]));
        assert!(remaining.found_in(&[r#""remaining":1"#]));
        let behind = near("checkout-04", &["checkout-05"], &["behind 2"]);
        assert!(behind.found_in(&["== checkout-04\n## main...origin/main [behind 2]\n== checkout-05\n"]));
        assert!(!behind.found_in(&["== checkout-04\n## main\n== checkout-05\n## main [behind 2]"]));
    }
}
