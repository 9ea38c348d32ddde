//! The function context git prints after a hunk's `@@`: the last line above the hunk that looks
//! like the start of a function, as `git diff` finds it.
//!
//! # Which rule
//!
//! A file's driver is named by its `diff` attribute (`.gitattributes`, read on the old path first,
//! as git does; only for regular files). A driver's rule is `diff.<driver>.xfuncname` (extended
//! regular expressions) or `diff.<driver>.funcname` (basic ones) from the configuration, the last
//! of the two set winning; else the built-in pattern git ships for that name ([`BUILTINS`], ported
//! from git's `userdiff.c`). A file without a `diff` attribute uses the driver `default`, which has
//! no pattern unless configured. When the old side's driver has no pattern the new side's is tried;
//! when neither has one, git's default rule applies: a line whose first byte is an ASCII letter,
//! `_` or `$`. A textconv or external diff program is never run (design.md#roots).
//!
//! # Patterns
//!
//! A rule is one or more patterns, one per line. The first that matches a line decides: a pattern
//! that starts with `!` rejects the line, any other accepts it. The function text is the first
//! capture group when it took part in the match, else the whole match, tested on the line without
//! its line break (and a carriage return before it).
//!
//! The text is cut at 80 bytes and its trailing spaces, tabs, carriage returns and line breaks are
//! removed, as in git's `xemit.c`; the hunk header line itself holds at most 127 bytes before its
//! line break. Where git would cut inside a UTF-8 character, the text here stops before that
//! character, so the patch stays valid UTF-8 (`git apply` reads nothing after the second `@@`).
//!
//! POSIX patterns are translated to the syntax of `fancy_regex` (the `regex` engine with
//! back-references): bracket expressions keep their POSIX meaning (a backslash inside is literal,
//! `[:alpha:]` classes work), `\<` and `\>` are word boundaries, `\1` is a back-reference, and a
//! `*`, `+`, `?` or `{` where it cannot repeat anything is literal. One difference remains: a POSIX
//! regex picks the longest of alternative matches and this one the first; git's built-in patterns
//! are anchored at both ends or end in `.*`, where the two agree. A rule that cannot be translated
//! or compiled, or whose last pattern is negated (git refuses both), gives no function context.

use std::collections::HashMap;
use std::rc::Rc;

use fancy_regex::Regex;
use gix::bstr::{BStr, BString, ByteSlice};
use gix::index::entry::Mode;

use crate::compare::changes::AttributeFiles;
use crate::compare::side::Entry;
use crate::error::{Error, Result};

/// Most bytes of function context, the size of git's `func_line` buffer.
pub(crate) const MAX_BYTES: usize = 80;

/// Most bytes of a hunk header line before its line break, the size of git's header buffer less
/// one.
const MAX_HEADER_BYTES: usize = 127;

/// One of git's built-in diff drivers: its name and its function-name patterns.
pub(crate) struct Builtin {
    /// The name a `diff=<name>` attribute selects.
    pub(crate) name: &'static str,
    /// Whether git compiles the patterns with `REG_ICASE`.
    pub(crate) ignore_case: bool,
    /// The patterns, one per line of git's pattern string, each an extended regular expression.
    pub(crate) patterns: &'static [&'static str],
}

/// git's built-in drivers that have a function-name pattern, as in its `userdiff.c`, in name order.
/// git has no `javascript` driver.
pub(crate) const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "ada",
        ignore_case: true,
        patterns: &[
            "!^(.*[ \t])?(is[ \t]+new|renames|is[ \t]+separate)([ \t].*)?$",
            "!^[ \t]*with[ \t].*$",
            "^[ \t]*((procedure|function)[ \t]+.*)$",
            "^[ \t]*((package|protected|task)[ \t]+.*)$",
        ],
    },
    Builtin {
        name: "bash",
        ignore_case: false,
        patterns: &[
            "^[ \t]*((([a-zA-Z_][a-zA-Z0-9_]*[ \t]*\\([ \t]*\\))|(function[ \t]+[a-zA-Z_][a-zA-Z0-9_]*(([ \t]*\\([ \t]*\\))|([ \t]+)))).*$)",
        ],
    },
    Builtin {
        name: "bibtex",
        ignore_case: false,
        patterns: &["(@[a-zA-Z]{1,}[ \t]*\\{{0,1}[ \t]*[^ \t\"@',\\#}{~%]*).*$"],
    },
    Builtin {
        name: "cpp",
        ignore_case: false,
        patterns: &["!^[ \t]*[A-Za-z_][A-Za-z_0-9]*:[[:space:]]*($|/[/*])", "^((::[[:space:]]*)?[A-Za-z_].*)$"],
    },
    Builtin {
        name: "csharp",
        ignore_case: false,
        patterns: &[
            "!(^|[ \t]+)(do|while|for|foreach|if|else|new|default|return|switch|case|throw|catch|using|lock|fixed)([ \t(]+|$)",
            "^[ \t]*(([][[:alnum:]@_.](<[][[:alnum:]@_, \t<>]+>)?)+([ \t]+([][[:alnum:]@_.](<[][[:alnum:]@_, \t<>]+>)?)+)+[ \t]*\\([^;]*)$",
            "^[ \t]*(([][[:alnum:]@_.](<[][[:alnum:]@_, \t<>]+>)?)+([ \t]+([][[:alnum:]@_.](<[][[:alnum:]@_, \t<>]+>)?)+)+[^;=:,()]*)$",
            "^[ \t]*(((static|public|internal|private|protected|new|unsafe|sealed|abstract|partial)[ \t]+)*(class|enum|interface|struct|record)[ \t]+.*)$",
            "^[ \t]*(namespace[ \t]+.*)$",
        ],
    },
    Builtin { name: "css", ignore_case: true, patterns: &["![:;][[:space:]]*$", "^[:[@.#]?[_a-z0-9].*$"] },
    Builtin { name: "dts", ignore_case: false, patterns: &["!;", "!=", "^[ \t]*((/[ \t]*\\{|&?[a-zA-Z_]).*)"] },
    Builtin {
        name: "elixir",
        ignore_case: false,
        patterns: &["^[ \t]*((def(macro|module|impl|protocol|p)?|test)[ \t].*)$"],
    },
    Builtin {
        name: "fortran",
        ignore_case: true,
        patterns: &[
            "!^([C*]|[ \t]*!)",
            "!^[ \t]*MODULE[ \t]+PROCEDURE[ \t]",
            "^[ \t]*((END[ \t]+)?(PROGRAM|MODULE|BLOCK[ \t]+DATA|([^!'\" \t]+[ \t]+)*(SUBROUTINE|FUNCTION))[ \t]+[A-Z].*)$",
        ],
    },
    Builtin { name: "fountain", ignore_case: true, patterns: &["^((\\.[^.]|(int|ext|est|int\\.?/ext|i/e)[. ]).*)$"] },
    Builtin {
        name: "golang",
        ignore_case: false,
        patterns: &["^[ \t]*(func[ \t]*.*(\\{[ \t]*)?)", "^[ \t]*(type[ \t].*(struct|interface)[ \t]*(\\{[ \t]*)?)"],
    },
    Builtin { name: "html", ignore_case: false, patterns: &["^[ \t]*(<[Hh][1-6]([ \t].*)?>.*)$"] },
    Builtin { name: "ini", ignore_case: false, patterns: &["^[ \t]*\\[[^]]+\\]"] },
    Builtin {
        name: "java",
        ignore_case: false,
        patterns: &[
            "!^[ \t]*(catch|do|for|if|instanceof|new|return|switch|throw|while)",
            "^[ \t]*(([a-z-]+[ \t]+)*(class|enum|interface|record)[ \t]+.*)$",
            "^[ \t]*(([A-Za-z_<>&][][?&<>.,A-Za-z_0-9]*[ \t]+)+[A-Za-z_][A-Za-z_0-9]*[ \t]*\\([^;]*)$",
        ],
    },
    Builtin {
        name: "kotlin",
        ignore_case: false,
        patterns: &["^[ \t]*(([a-z]+[ \t]+)*(fun|class|interface)[ \t]+.*)$"],
    },
    Builtin { name: "markdown", ignore_case: false, patterns: &["^ {0,3}#{1,6}[ \t].*"] },
    Builtin {
        name: "matlab",
        ignore_case: false,
        patterns: &["^[[:space:]]*((classdef|function)[[:space:]].*)$|^(%%%?|##)[[:space:]].*$"],
    },
    Builtin {
        name: "objc",
        ignore_case: false,
        patterns: &[
            "!^[ \t]*(do|for|if|else|return|switch|while)",
            "^[ \t]*([-+][ \t]*\\([ \t]*[A-Za-z_][A-Za-z_0-9* \t]*\\)[ \t]*[A-Za-z_].*)$",
            "^[ \t]*(([A-Za-z_][A-Za-z_0-9]*[ \t]+)+[A-Za-z_][A-Za-z_0-9]*[ \t]*\\([^;]*)$",
            "^(@(implementation|interface|protocol)[ \t].*)$",
        ],
    },
    Builtin {
        name: "pascal",
        ignore_case: false,
        patterns: &[
            "^(((class[ \t]+)?(procedure|function)|constructor|destructor|interface|implementation|initialization|finalization)[ \t]*.*)$",
            "^(.*=[ \t]*(class|record).*)$",
        ],
    },
    Builtin {
        name: "perl",
        ignore_case: false,
        patterns: &[
            "^package .*",
            "^sub [[:alnum:]_':]+[ \t]*(\\([^)]*\\)[ \t]*)?(:[^;#]*)?(\\{[ \t]*)?(#.*)?$",
            "^(BEGIN|END|INIT|CHECK|UNITCHECK|AUTOLOAD|DESTROY)[ \t]*(\\{[ \t]*)?(#.*)?$",
            "^=head[0-9] .*",
        ],
    },
    Builtin {
        name: "php",
        ignore_case: false,
        patterns: &[
            "^[\t ]*(((public|protected|private|static|abstract|final)[\t ]+)*function.*)$",
            "^[\t ]*((((final|abstract)[\t ]+)?class|enum|interface|trait).*)$",
        ],
    },
    Builtin { name: "python", ignore_case: false, patterns: &["^[ \t]*((class|(async[ \t]+)?def)[ \t].*)$"] },
    Builtin {
        name: "r",
        ignore_case: false,
        patterns: &["^[ \t]*([a-zA-z][a-zA-Z0-9_.]*[ \t]*(<-|=)[ \t]*function.*)$"],
    },
    Builtin { name: "ruby", ignore_case: false, patterns: &["^[ \t]*((class|module|def)[ \t].*)$"] },
    Builtin {
        name: "rust",
        ignore_case: false,
        patterns: &[
            "^[\t ]*((pub(\\([^\\)]+\\))?[\t ]+)?((async|const|unsafe|extern([\t ]+\"[^\"]+\"))[\t ]+)?(struct|enum|union|mod|trait|fn|impl|macro_rules!)[< \t]+[^;]*)$",
        ],
    },
    Builtin {
        name: "scheme",
        ignore_case: false,
        patterns: &[
            "^(\\(.*)$",
            "^[\t ]*(\\(((define|def(struct|syntax|class|method|rules|record|proto|alias)?)[-*/ \t]|(library|module|struct|class)[*+ \t]).*)$",
            "^  ?(\\([Dd][Ee][Ff].*)$",
        ],
    },
    Builtin {
        name: "swift",
        ignore_case: false,
        patterns: &[
            "^[ \t]*((@[A-Za-z_][A-Za-z0-9_]*(\\([^()]*\\))?[ \t]+)*([a-z]+[ \t]+)*(func|init|deinit|subscript|class|struct|enum|protocol|extension|actor)[ \t(?!<].*)$",
        ],
    },
    Builtin { name: "tex", ignore_case: false, patterns: &["^(\\\\((sub)*section|chapter|part)\\*{0,1}\\{.*)$"] },
];

/// How lines are tested for a function start.
#[derive(Clone)]
pub(crate) enum Rule {
    /// git's default: a first byte that is an ASCII letter, `_` or `$`.
    Default,
    /// A driver's patterns, tried in order.
    Patterns(Rc<Vec<Pattern>>),
    /// A driver whose patterns git would refuse: no line is a function start.
    Refused,
}

/// One compiled pattern of a rule.
pub(crate) struct Pattern {
    /// A line this matches is rejected rather than accepted.
    negate: bool,
    regex: Regex,
}

impl Rule {
    /// The function text of `line` (which may end with its line break), or `None` when it is no
    /// function start. The text is cut to [`MAX_BYTES`] (at a character boundary) and its trailing
    /// whitespace removed; it may be empty, which still counts as a function start, as in git.
    pub(crate) fn function_text<'a>(&self, line: &'a str) -> Option<&'a str> {
        let text = match self {
            Rule::Refused => return None,
            Rule::Default => {
                let first = *line.as_bytes().first()?;
                if !(first.is_ascii_alphabetic() || first == b'_' || first == b'$') {
                    return None;
                }
                line
            }
            Rule::Patterns(patterns) => {
                let body = line.strip_suffix('\n').map_or(line, |rest| rest.strip_suffix('\r').unwrap_or(rest));
                // Most lines match nothing: a plain match test first, the capture groups only for the line found.
                let pattern = patterns.iter().find(|pattern| pattern.regex.is_match(body).unwrap_or(false))?;
                if pattern.negate {
                    return None;
                }
                let captures = pattern.regex.captures(body).ok().flatten()?;
                captures.get(1).or_else(|| captures.get(0)).map(|found| found.as_str())?
            }
        };
        Some(trim_end(cut(text, MAX_BYTES)))
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `text` without trailing bytes git's `isspace` takes for white space: space, tab, line feed,
/// carriage return.
fn trim_end(text: &str) -> &str {
    text.trim_end_matches([' ', '\t', '\n', '\r'])
}

/// The hunk header `@@ <ranges> @@`, with ` <function>` when `function` is not empty, cut as git
/// cuts the line.
pub(crate) fn hunk_header(ranges: &str, function: &str) -> String {
    let mut line = format!("@@ {ranges} @@");
    if !function.is_empty() {
        line.push(' ');
        let room = MAX_HEADER_BYTES.saturating_sub(line.len());
        line.push_str(cut(function, room));
    }
    line.push('\n');
    line
}

/// Finds each hunk's function context in one file's old side, as git's `xdl_emit_diff` does.
pub(crate) struct Finder<'a> {
    rule: Rule,
    lines: Vec<&'a str>,
    /// Lines at and above this one were searched for the previous hunk (git's `funclineprev`).
    searched_to: Option<usize>,
    /// The function text found last, kept when a search finds nothing new.
    current: &'a str,
}

impl<'a> Finder<'a> {
    /// A finder over the old side `old` (the whole file) with `rule`.
    pub(crate) fn new(rule: Rule, old: &'a str) -> Self {
        Self { rule, lines: old.split_inclusive('\n').collect(), searched_to: None, current: "" }
    }

    /// The function context of a hunk whose old side starts at line `start` (1-based, as in the
    /// header; for an empty old range, the line after the one the header names). Hunks are asked in
    /// order.
    pub(crate) fn before(&mut self, start: usize) -> &'a str {
        // The lines above the hunk, nearest first, down to where the previous search began.
        let above = start.saturating_sub(1).min(self.lines.len());
        let floor = self.searched_to.map_or(0, |line| line + 1).min(above);
        for line in (floor..above).rev() {
            if let Some(text) = self.rule.function_text(self.lines[line]) {
                self.current = text;
                break;
            }
        }
        self.searched_to = above.checked_sub(1);
        self.current
    }
}

/// Resolves the rule of each file: the `diff` attribute, the configured drivers and git's built-in
/// ones.
pub(crate) struct Drivers<'repo> {
    repo: &'repo gix::Repository,
    attribute_files: AttributeFiles,
    /// The `diff` attribute stack, made at the first lookup.
    stack: Option<(gix::AttributeStack<'repo>, gix::attrs::search::Outcome)>,
    /// Per configured driver name: its configured pattern and whether it is extended, if one is
    /// set.
    configured: HashMap<BString, Option<(BString, bool)>>,
    /// Rules by driver name, compiled at first use; `None` for a driver without a pattern.
    compiled: HashMap<BString, Option<Rule>>,
}

/// A side's driver as git's `userdiff_find_by_path` names it.
enum Driver {
    /// The `diff` attribute set (`diff`): git's `diff=true` driver, with no pattern.
    Plain,
    /// A named driver (`diff=<name>`, or `default` when the attribute is unspecified or names no
    /// driver).
    Named(BString),
}

impl<'repo> Drivers<'repo> {
    /// The drivers of `repo`, with the `.gitattributes` of `attribute_files`.
    pub(crate) fn new(repo: &'repo gix::Repository, attribute_files: &AttributeFiles) -> Self {
        let mut configured: HashMap<BString, Option<(BString, bool)>> = HashMap::new();
        let config = repo.config_snapshot();
        for section in config.plumbing().sections_by_name("diff").into_iter().flatten() {
            let Some(name) = section.header().subsection_name() else { continue };
            let entry = configured.entry(name.to_owned()).or_default();
            let body = section.body();
            let mut seen: HashMap<String, usize> = HashMap::new();
            for key in body.value_names() {
                let lower = key.to_ascii_lowercase();
                let extended = match lower.as_str() {
                    "xfuncname" => true,
                    "funcname" => false,
                    _ => continue,
                };
                let nth = seen.entry(lower.clone()).or_default();
                if let Some(value) = body.values(&lower).get(*nth) {
                    *entry = Some((value.clone(), extended));
                }
                *nth += 1;
            }
        }
        Self { repo, attribute_files: attribute_files.clone(), stack: None, configured, compiled: HashMap::new() }
    }

    /// The rule for a change from `old` to `new` (either may be absent).
    ///
    /// # Errors
    /// [`Error::GitRead`] when the attributes cannot be read.
    pub(crate) fn rule(&mut self, old: Option<&Entry>, new: Option<&Entry>) -> Result<Rule> {
        for entry in [old, new] {
            let driver = self.driver(entry)?;
            if let Some(rule) = self.pattern_of(&driver) {
                return Ok(rule);
            }
        }
        Ok(Rule::Default)
    }

    /// The driver of one side, as git's `diff_filespec_load_driver` picks it.
    fn driver(&mut self, entry: Option<&Entry>) -> Result<Driver> {
        let default = || Driver::Named("default".into());
        let Some(entry) = entry.filter(|entry| matches!(entry.mode, Mode::FILE | Mode::FILE_EXECUTABLE)) else {
            return Ok(default());
        };
        let (stack, outcome) = match &mut self.stack {
            Some(stack) => stack,
            None => self.stack.insert(self.attribute_files.stack(self.repo, &["diff"])),
        };
        outcome.reset();
        let platform = stack.at_entry(entry.path.as_bstr(), None).map_err(|err| Error::git("attributes", err))?;
        platform.matching_attributes(outcome);
        let value = match outcome.iter_selected().next().map(|matched| matched.assignment.state) {
            Some(gix::attrs::StateRef::Set) => return Ok(Driver::Plain),
            Some(gix::attrs::StateRef::Value(name)) => Some(name.as_bstr().to_owned()),
            _ => None,
        };
        Ok(match value {
            Some(name) if self.exists(name.as_bstr()) => Driver::Named(name),
            // `-diff` makes the file binary (it has no hunks); an unknown name is the default driver.
            _ => default(),
        })
    }

    /// Whether a driver of that name exists: built in, or a `[diff "<name>"]` section.
    fn exists(&self, name: &BStr) -> bool {
        self.configured.contains_key(name) || BUILTINS.iter().any(|builtin| builtin.name.as_bytes() == name)
    }

    /// The compiled rule of `driver`, or `None` when it has no pattern.
    fn pattern_of(&mut self, driver: &Driver) -> Option<Rule> {
        let Driver::Named(name) = driver else { return None };
        if let Some(rule) = self.compiled.get(name) {
            return rule.clone();
        }
        let rule = match self.configured.get(name).cloned().flatten() {
            Some((value, extended)) => Some(compile_configured(value.as_bstr(), extended)),
            None => BUILTINS
                .iter()
                .find(|builtin| builtin.name.as_bytes() == name.as_slice())
                .map(|builtin| compile(builtin.patterns.iter().copied(), true, builtin.ignore_case)),
        };
        self.compiled.insert(name.clone(), rule.clone());
        rule
    }
}

/// A configured pattern string (lines separated by line breaks) compiled, or [`Rule::Refused`].
fn compile_configured(value: &BStr, extended: bool) -> Rule {
    match value.to_str() {
        Ok(text) => compile(text.split('\n'), extended, false),
        Err(_) => Rule::Refused,
    }
}

/// Compiles `lines` (`!` for a negated pattern) as git's `xdiff_set_find_func`, or
/// [`Rule::Refused`] where git refuses them (an invalid pattern, a negated last one) or they cannot
/// be translated.
pub(crate) fn compile<'a>(lines: impl Iterator<Item = &'a str>, extended: bool, ignore_case: bool) -> Rule {
    let mut patterns = Vec::new();
    for line in lines {
        let (negate, expression) = match line.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, line),
        };
        let Ok(translated) = translate(expression, extended) else { return Rule::Refused };
        let flags = if ignore_case { "(?si)" } else { "(?s)" };
        let Ok(regex) = Regex::new(&format!("{flags}{translated}")) else { return Rule::Refused };
        patterns.push(Pattern { negate, regex });
    }
    match patterns.last() {
        None => Rule::Refused,
        Some(last) if last.negate => Rule::Refused,
        Some(_) => Rule::Patterns(Rc::new(patterns)),
    }
}

/// Why a POSIX pattern has no translation.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Untranslatable(pub(crate) &'static str);

/// A POSIX regular expression (extended, else basic with GNU's `\+`, `\?` and `\|`) in the `regex`
/// crate's syntax.
///
/// # Errors
/// [`Untranslatable`] for a trailing backslash, an unterminated bracket expression or a collating
/// element.
pub(crate) fn translate(pattern: &str, extended: bool) -> std::result::Result<String, Untranslatable> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    // Whether nothing precedes that a repetition could apply to (the start, `(`, `|` or a leading `^`).
    let mut at_start = true;
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        index += 1;
        // The operator this character (or escape) stands for, if any, in this flavour.
        let (operator, escaped) = if c == '\\' {
            let Some(&next) = chars.get(index) else { return Err(Untranslatable("a trailing backslash")) };
            index += 1;
            (next, true)
        } else {
            (c, false)
        };
        let special = |op: char| -> bool {
            match op {
                '(' | ')' | '{' | '}' | '|' | '+' | '?' => escaped != extended,
                _ => false,
            }
        };
        match operator {
            '[' if !escaped => {
                index = bracket(&chars, index, &mut out)?;
                at_start = false;
            }
            '.' | '*' if !escaped => {
                if operator == '*' && at_start {
                    out.push_str("\\*");
                } else {
                    out.push(operator);
                }
                at_start = false;
            }
            '^' if !escaped => {
                let anchor = extended || at_start;
                out.push_str(if anchor { "^" } else { "\\^" });
                // A repetition right after a leading anchor has nothing to repeat.
                at_start = anchor && at_start;
            }
            '$' if !escaped => {
                let rest = &chars[index..];
                let at_end = rest.is_empty() || rest.starts_with(&['\\', ')']) || rest.starts_with(&['\\', '|']);
                out.push_str(if extended || at_end { "$" } else { "\\$" });
                at_start = false;
            }
            op if special(op) => match op {
                '(' => {
                    out.push('(');
                    at_start = true;
                }
                '|' => {
                    out.push('|');
                    at_start = true;
                }
                ')' => {
                    out.push(')');
                    at_start = false;
                }
                '{' => {
                    let (interval, length) = interval(&chars[index..], extended);
                    match interval {
                        Some(text) if !at_start => {
                            out.push_str(&text);
                            index += length;
                        }
                        _ => out.push_str("\\{"),
                    }
                    at_start = false;
                }
                '}' => {
                    out.push_str("\\}");
                    at_start = false;
                }
                _ => {
                    // `+` or `?`.
                    if at_start {
                        out.push('\\');
                    }
                    out.push(op);
                    at_start = false;
                }
            },
            op if escaped => {
                match op {
                    '<' | '>' | 'b' | 'B' | 'w' | 'W' | 's' | 'S' => {
                        out.push('\\');
                        out.push(op);
                    }
                    '`' => out.push_str("\\A"),
                    '\'' => out.push_str("\\z"),
                    '1'..='9' => {
                        out.push('\\');
                        out.push(op);
                    }
                    _ => escape(op, &mut out),
                }
                at_start = false;
            }
            op => {
                escape(op, &mut out);
                at_start = false;
            }
        }
    }
    Ok(out)
}

/// `c` as a literal outside a class.
fn escape(c: char, out: &mut String) {
    if matches!(c, '\\' | '.' | '+' | '*' | '?' | '(' | ')' | '|' | '[' | ']' | '{' | '}' | '^' | '$' | '#') {
        out.push('\\');
    }
    out.push(c);
}

/// An interval `{m}`, `{m,}` or `{m,n}` after its `{` (closed by `}`, or `\}` in a basic pattern),
/// translated, and the characters it takes; `None` when `rest` holds none (the `{` is then
/// literal).
fn interval(rest: &[char], extended: bool) -> (Option<String>, usize) {
    let mut index = 0;
    let mut text = String::from("{");
    let digits = |index: &mut usize, text: &mut String| {
        let start = *index;
        while rest.get(*index).is_some_and(char::is_ascii_digit) {
            text.push(rest[*index]);
            *index += 1;
        }
        *index > start
    };
    let first = digits(&mut index, &mut text);
    if rest.get(index) == Some(&',') {
        text.push(',');
        index += 1;
        digits(&mut index, &mut text);
    }
    if !first {
        return (None, 0);
    }
    let close: &[char] = if extended { &['}'] } else { &['\\', '}'] };
    if !rest[index..].starts_with(close) {
        return (None, 0);
    }
    text.push('}');
    (Some(text), index + close.len())
}

/// Translates the bracket expression whose `[` came before `chars[start]` into `out`; returns the
/// index after its `]`.
fn bracket(chars: &[char], start: usize, out: &mut String) -> std::result::Result<usize, Untranslatable> {
    let mut index = start;
    out.push('[');
    if chars.get(index) == Some(&'^') {
        out.push('^');
        index += 1;
    }
    let literal = |c: char, out: &mut String| {
        if matches!(c, '\\' | '[' | ']' | '-' | '^' | '&' | '~') {
            out.push('\\');
        }
        out.push(c);
    };
    let mut first = true;
    loop {
        let Some(&c) = chars.get(index) else { return Err(Untranslatable("an unterminated bracket expression")) };
        if c == ']' && !first {
            out.push(']');
            return Ok(index + 1);
        }
        first = false;
        if c == '[' && matches!(chars.get(index + 1), Some(':' | '=' | '.')) {
            let kind = chars[index + 1];
            let close = (index + 2..chars.len().saturating_sub(1))
                .find(|&at| chars[at] == kind && chars[at + 1] == ']')
                .ok_or(Untranslatable("an unterminated bracket expression"))?;
            let inner: String = chars[index + 2..close].iter().collect();
            match kind {
                ':' => out.push_str(&format!("[:{inner}:]")),
                _ if inner.chars().count() == 1 => literal(inner.chars().next().expect("one"), out),
                _ => return Err(Untranslatable("a collating element")),
            }
            index = close + 2;
            continue;
        }
        // A range `c-d`, unless the `-` is the last character before `]`.
        if chars.get(index + 1) == Some(&'-') && chars.get(index + 2).is_some_and(|&end| end != ']') {
            literal(c, out);
            out.push('-');
            literal(chars[index + 2], out);
            index += 3;
            continue;
        }
        literal(c, out);
        index += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the extended `pattern`, translated, matches `text`.
    fn matches(pattern: &str, text: &str) -> bool {
        let regex = Regex::new(&translate(pattern, true).expect("translates")).expect("compiles");
        regex.is_match(text).expect("no backtracking limit")
    }

    fn rule(patterns: &str, extended: bool) -> Rule {
        compile(patterns.split('\n'), extended, false)
    }

    #[test]
    fn every_builtin_driver_compiles() {
        for builtin in BUILTINS {
            let compiled = compile(builtin.patterns.iter().copied(), true, builtin.ignore_case);
            assert!(matches!(compiled, Rule::Patterns(_)), "{} does not compile", builtin.name);
        }
        let names: Vec<&str> = BUILTINS.iter().map(|builtin| builtin.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert_eq!(names.len(), 28);
    }

    #[test]
    fn the_default_rule_takes_identifier_lines_cut_at_80_bytes() {
        assert_eq!(Rule::Default.function_text("int main(void)\n"), Some("int main(void)"));
        assert_eq!(Rule::Default.function_text("$x = 1 \r\n"), Some("$x = 1"));
        assert_eq!(Rule::Default.function_text("_start:\n"), Some("_start:"));
        assert_eq!(Rule::Default.function_text("\tindented\n"), None);
        assert_eq!(Rule::Default.function_text("{\n"), None);
        assert_eq!(Rule::Default.function_text("\n"), None);
        let long = format!("{}\n", "a".repeat(100));
        assert_eq!(Rule::Default.function_text(&long), Some(&long[..80]));
        // 79 ASCII bytes then a two-byte character: the cut stops before it.
        let split = format!("{}é tail\n", "b".repeat(79));
        assert_eq!(Rule::Default.function_text(&split), Some(&split[..79]));
    }

    #[test]
    fn patterns_take_the_first_group_and_negations_reject() {
        let custom = rule("^sub ([a-z]+)", true);
        assert_eq!(custom.function_text("sub alpha {\n"), Some("alpha"));
        let whole = rule("^sub [a-z]+", true);
        assert_eq!(whole.function_text("sub alpha {\n"), Some("sub alpha"));
        let negated = rule("!^static\n^[a-z].*", true);
        assert_eq!(negated.function_text("static int x;\n"), None);
        assert_eq!(negated.function_text("int f(void)\n"), Some("int f(void)"));
        // An empty match still counts as a function line.
        assert_eq!(rule("^", true).function_text("anything\n"), Some(""));
        assert!(matches!(rule("!^x", true), Rule::Refused), "a negated last pattern is refused, as git refuses it");
        assert!(matches!(rule("^(a", true), Rule::Refused));
        assert_eq!(rule("^\\(a*\\)b\\1$", false).function_text("aabaa\n"), Some("aa"), "a back-reference");
    }

    #[test]
    fn posix_syntax_is_translated() {
        // Bracket expressions: a backslash is literal, `]` first is literal, classes stay.
        assert!(!matches(r"[^\)]+", "\\"));
        assert!(!matches(r"^[^\)]+$", "a\\b"));
        assert!(matches(r"^[]a]+$", "]a]"));
        assert!(matches(r"^[[:alpha:]_&~-]+$", "a_&~-"));
        // Basic syntax: `\(` groups, `(` and `+` are literal, `\+` repeats, `*` first is literal.
        let basic = rule(r"^\(fn\) (x)+\{1,\}", false);
        assert_eq!(basic.function_text("fn (x)++\n"), Some("fn"));
        assert_eq!(rule(r"*a", false).function_text("*a\n"), Some("*a"));
        assert_eq!(rule(r"^a\+$", false).function_text("aaa\n"), Some("aaa"));
        assert_eq!(rule(r"a^b$c", false).function_text("a^b$c\n"), Some("a^b$c"));
        // Extended syntax: a `{` that starts no interval is literal; word boundaries work.
        assert_eq!(rule(r"^\\section\{.*", true).function_text("\\section{A}\n"), Some("\\section{A}"));
        assert_eq!(rule(r"x{ ", true).function_text("x{ \n"), Some("x{"));
        assert_eq!(rule(r"\<def\>.*", true).function_text("  def f\n"), Some("def f"));
        assert_eq!(rule(r"\<def\>.*", true).function_text("undef f\n"), None);
    }

    #[test]
    fn builtin_drivers_find_what_git_finds() {
        let builtin = |name: &str| {
            let builtin = BUILTINS.iter().find(|builtin| builtin.name == name).expect("a builtin");
            compile(builtin.patterns.iter().copied(), true, builtin.ignore_case)
        };
        let rust = builtin("rust");
        assert_eq!(rust.function_text("    pub(crate) fn run(x: u8) {\n"), Some("pub(crate) fn run(x: u8) {"));
        assert_eq!(rust.function_text("    let x = 1;\n"), None);
        let python = builtin("python");
        assert_eq!(python.function_text("    async def fetch(self):\n"), Some("async def fetch(self):"));
        let cpp = builtin("cpp");
        assert_eq!(cpp.function_text("public:\n"), None);
        assert_eq!(cpp.function_text("int main(int argc)\n"), Some("int main(int argc)"));
        let fortran = builtin("fortran");
        assert_eq!(fortran.function_text("      subroutine foo(x)\n"), Some("subroutine foo(x)"));
        let tex = builtin("tex");
        assert_eq!(tex.function_text("\\section{Intro}\n"), Some("\\section{Intro}"));
    }

    #[test]
    fn each_hunk_takes_the_last_function_line_above_it() {
        let old = "int a(void)\n{\n\tx;\n}\nint b(void)\n{\n\ty;\n}\n";
        let mut finder = Finder::new(Rule::Default, old);
        assert_eq!(finder.before(1), "");
        assert_eq!(finder.before(3), "int a(void)");
        // Nothing new between the hunks: the last one found stays.
        assert_eq!(finder.before(4), "int a(void)");
        assert_eq!(finder.before(7), "int b(void)");
    }

    #[test]
    fn hunk_headers_are_cut_as_git_cuts_them() {
        assert_eq!(hunk_header("-1,2 +1,3", ""), "@@ -1,2 +1,3 @@\n");
        assert_eq!(hunk_header("-1,2 +1,3", "fn x()"), "@@ -1,2 +1,3 @@ fn x()\n");
        let ranges = "-1234567890,1234567890 +1234567890,1234567890";
        let header = hunk_header(ranges, &"f".repeat(80));
        assert_eq!(header.len(), MAX_HEADER_BYTES + 1);
    }
}
