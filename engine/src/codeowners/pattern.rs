//! CODEOWNERS path patterns: gitignore's rules minus what GitHub leaves out (`!`, `[ ]`, an escaped
//! leading `#`).
//!
//! A pattern is split on unescaped `/` into segments:
//! - a leading `/` anchors it to the repository root; so does a `/` in the middle (`docs/*`); a
//!   pattern of one segment (`*.js`, `apps/`, `logs`) matches at any depth, as if it started with
//!   `**/`;
//! - a trailing `/` matches a directory, hence every file under it (like a trailing `/**`);
//! - `**` as a whole segment matches any number of directories (at the end: at least one more
//!   component);
//! - `*` matches any run of characters but `/`, `?` one character but `/`; `\c` is the character
//!   `c`, so `\ ` is a space and `\*` a star;
//! - a pattern that matches a directory also matches everything under it (`/apps/github`,
//!   `**/logs`), except when its last segment is a bare `*`: `docs/*` matches `docs/a.md` but not
//!   `docs/build/b.md`, as GitHub documents.

/// A parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pattern {
    segments: Vec<Segment>,
    /// Whether matching a directory also matches everything under it.
    descendants: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// `**`: any number of path components.
    AnyDepth,
    /// One path component.
    Glob(Vec<Token>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Char(char),
    Star,
    Question,
}

/// One component of a path being matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Component<'a> {
    /// A real file or directory name.
    Name(&'a str),
    /// Any name at all: matched only by segments that match every name (`*`, `**`), so that a
    /// pattern matching `dir/<Any>` and `dir/<Any>/<Any>` matches everything under `dir`.
    Any,
}

impl Pattern {
    /// Parses `text` as written in the file (escapes included).
    ///
    /// # Errors
    /// A sentence saying why GitHub would not accept the pattern.
    pub(crate) fn parse(text: &str) -> Result<Pattern, String> {
        if text.starts_with('!') {
            return Err("negation with `!` is not supported in CODEOWNERS".to_owned());
        }
        if text.starts_with("\\#") {
            return Err("escaping a leading `#` with `\\` is not supported in CODEOWNERS".to_owned());
        }
        let mut raw: Vec<Vec<Token>> = vec![Vec::new()];
        let mut chars = text.chars();
        while let Some(ch) = chars.next() {
            let token = match ch {
                '\\' => Token::Char(chars.next().ok_or("the pattern ends with a lone `\\`")?),
                '[' | ']' => return Err("character ranges with `[ ]` are not supported in CODEOWNERS".to_owned()),
                '*' => Token::Star,
                '?' => Token::Question,
                '/' => {
                    raw.push(Vec::new());
                    continue;
                }
                other => Token::Char(other),
            };
            let segment = raw.last_mut().expect("raw always holds the current segment");
            if token == Token::Star && segment.ends_with(&[Token::Star, Token::Star]) {
                return Err("three or more consecutive `*` are not a valid pattern".to_owned());
            }
            segment.push(token);
        }
        let anchored = raw[0].is_empty();
        if anchored {
            raw.remove(0);
        }
        let directory = raw.len() > 1 && raw.last().is_some_and(Vec::is_empty);
        if directory {
            raw.pop();
        }
        raw.retain(|segment| !segment.is_empty());
        if raw.is_empty() {
            return Err("the pattern `/` never matches anything; did you mean `*`?".to_owned());
        }
        let is_any_depth = |segment: &[Token]| segment == [Token::Star, Token::Star];
        let mut segments: Vec<Segment> = raw
            .into_iter()
            .map(|segment| if is_any_depth(&segment) { Segment::AnyDepth } else { Segment::Glob(segment) })
            .collect();
        if !anchored && segments.len() == 1 && segments[0] != Segment::AnyDepth {
            segments.insert(0, Segment::AnyDepth);
        }
        if directory {
            segments.push(Segment::AnyDepth);
        }
        let descendants = match segments.last() {
            Some(Segment::Glob(tokens)) => tokens.as_slice() != [Token::Star],
            _ => false,
        };
        Ok(Pattern { segments, descendants })
    }

    /// Whether the path made of `components` matches. The segments are matched left to right
    /// over the set of component positions they can reach, so a pattern of many `**` costs
    /// segments x components steps, never a backtracking search.
    pub(crate) fn matches(&self, components: &[Component<'_>]) -> bool {
        let count = components.len();
        // `reach[at]`: the segments so far can end just before component `at`.
        let mut reach = vec![false; count + 1];
        reach[0] = true;
        for (segment_idx, segment) in self.segments.iter().enumerate() {
            let mut next = vec![false; count + 1];
            match segment {
                Segment::AnyDepth if segment_idx + 1 == self.segments.len() => {
                    return reach[..count].iter().any(|&reached| reached);
                }
                Segment::AnyDepth => {
                    let Some(first) = reach.iter().position(|&reached| reached) else { return false };
                    next[first..].fill(true);
                }
                Segment::Glob(tokens) => {
                    for (at, component) in components.iter().enumerate() {
                        next[at + 1] = reach[at] && glob(tokens, *component);
                    }
                }
            }
            reach = next;
        }
        reach[count] || (self.descendants && reach[1..].iter().any(|&reached| reached))
    }
}

/// Whether one segment's tokens match one component.
fn glob(tokens: &[Token], component: Component<'_>) -> bool {
    let name = match component {
        Component::Any => return !tokens.is_empty() && tokens.iter().all(|token| *token == Token::Star),
        Component::Name(name) => name.chars().collect::<Vec<char>>(),
    };
    // Wildcard matching with backtracking to the last star.
    let (mut token_idx, mut name_idx) = (0, 0);
    let mut last_star: Option<(usize, usize)> = None;
    while name_idx < name.len() {
        match tokens.get(token_idx) {
            Some(Token::Star) => {
                last_star = Some((token_idx, name_idx));
                token_idx += 1;
            }
            Some(Token::Question) => {
                token_idx += 1;
                name_idx += 1;
            }
            Some(Token::Char(ch)) if *ch == name[name_idx] => {
                token_idx += 1;
                name_idx += 1;
            }
            _ => match last_star {
                Some((star_idx, star_name_idx)) => {
                    token_idx = star_idx + 1;
                    name_idx = star_name_idx + 1;
                    last_star = Some((star_idx, star_name_idx + 1));
                }
                None => return false,
            },
        }
    }
    tokens[token_idx..].iter().all(|token| *token == Token::Star)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, path: &str) -> bool {
        let components: Vec<Component<'_>> = path.split('/').map(Component::Name).collect();
        Pattern::parse(pattern).expect("valid pattern").matches(&components)
    }

    #[test]
    fn many_any_depth_segments_match_in_linear_steps() {
        // Forty `**` against a path of 200 components: a backtracking search would not end.
        let pattern = format!("{}z", "**/a/".repeat(40));
        let path = vec!["a"; 200].join("/");
        let started = std::time::Instant::now();
        assert!(!matches(&pattern, &path));
        assert!(matches(&pattern, &format!("{path}/z")));
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    }

    #[test]
    fn globs_within_one_component() {
        assert!(matches("*.js", "a/b/c.js"));
        assert!(matches("*.js", "c.js"));
        assert!(!matches("*.js", "c.jsx"));
        assert!(matches("file?.txt", "file1.txt"));
        assert!(!matches("file?.txt", "file10.txt"));
        assert!(!matches("a?b", "a/b"), "`?` never matches `/`");
        assert!(matches("*a*b*", "xxaxxbxx"));
        assert!(!matches("*a*b", "xxaxxbxxc"));
    }

    #[test]
    fn anchoring_and_depth() {
        assert!(matches("/README.md", "README.md"));
        assert!(!matches("/README.md", "docs/README.md"));
        assert!(matches("README.md", "docs/README.md"), "one segment matches at any depth");
        assert!(!matches("src/lib.rs", "crate/src/lib.rs"), "a middle slash anchors");
        assert!(matches("a/**/b", "a/b"));
        assert!(matches("a/**/b", "a/x/y/b"));
        assert!(!matches("a/**", "a"), "a trailing ** needs something under the directory");
        assert!(matches("**", "anything/at/all"));
    }

    #[test]
    fn escapes_and_refusals() {
        assert!(matches("path\\ with\\ spaces/", "path with spaces/x.txt"));
        assert!(matches("literal\\*star", "literal*star"));
        assert!(!matches("literal\\*star", "literalXstar"));
        assert!(matches("a\\#b", "a#b"));
        for bad in ["!keep.me", "\\#notes", "ceval*.[ch]", "a/***/b", "/", "trailing\\"] {
            assert!(Pattern::parse(bad).is_err(), "{bad} is refused");
        }
    }

    #[test]
    fn symbolic_components_match_only_total_wildcards() {
        let pattern = Pattern::parse("docs/*").expect("valid");
        assert!(pattern.matches(&[Component::Name("docs"), Component::Any]));
        assert!(!pattern.matches(&[Component::Name("docs"), Component::Any, Component::Any]));
        let pattern = Pattern::parse("*.md").expect("valid");
        assert!(!pattern.matches(&[Component::Name("docs"), Component::Any]));
    }
}
