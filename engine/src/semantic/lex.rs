//! Where each line of a source file starts: in code at some depth of brackets, or inside a
//! comment or a string. A file is only ever cut at a line that starts in code (`split.rs`): a blank
//! line and a line that looks like an item also occur inside a block comment, a docstring or a
//! template literal, and the text before a part of a file is not parsed (`parts.rs`).
//!
//! The scan is a lexer of comments, string literals (raw, triple-quoted, template literals with
//! their `${...}`) and JavaScript's regex literals only, per language, about a hundred times
//! cheaper than a parse. It also gives each line's last code byte, comments left out. Where it
//! cannot follow the text (a closing bracket with none open, a one-line string still open at its
//! line's end) it stops, and no line after that starts in code: a line it is unsure of is never a
//! cut.

use super::{Language, Lines};

/// What the scan is inside of.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Code,
    /// A block comment, nested this deep (Rust nests them).
    Block(u32),
    /// A string closed by `quote`; `lines`: whether it may span lines (else a line break ends it,
    /// unless escaped).
    Quoted {
        quote: u8,
        lines: bool,
    },
    /// A Python or Java string closed by three `quote`s.
    Triple(u8),
    /// A Rust raw string closed by `"` and this many `#`.
    RawRust(usize),
    /// A C++ raw string closed by `)`, this delimiter and `"`.
    RawCpp(Vec<u8>),
}

/// What the scan says of one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Line {
    /// The depth of brackets open where the line starts, or `None` when it starts inside a comment
    /// or a string, or past a place the scan could not follow.
    pub(super) start: Option<u32>,
    /// The byte of the line's last code (outside comments; a string's quotes count), or `None` for
    /// a line without code.
    pub(super) last: Option<usize>,
}

/// What the scan says of each line of `text` (as `lines` splits it).
pub(super) fn scan(language: Language, text: &[u8], lines: &Lines) -> Vec<Line> {
    let count = lines.count() as usize;
    let mut out: Vec<Line> = Vec::with_capacity(count);
    let mut state = State::Code;
    let mut depth: u32 = 0;
    // The depths at which each `${` of a template literal opened code (JavaScript, TypeScript).
    let mut templates: Vec<u32> = Vec::new();
    let python = language == Language::Python;
    let c_like = matches!(language, Language::C | Language::Cpp);
    let script = matches!(language, Language::JavaScript | Language::TypeScript | Language::Tsx);
    let at = |index: usize| text.get(index).copied().unwrap_or(0);
    let mut index = 0;
    let mut line = 0;
    while line < count {
        let end = lines.offset(line as u32 + 1);
        out.push(Line { start: (state == State::Code).then_some(depth), last: None });
        let mut last = None;
        // The last code byte before this one on the line, for telling a regex from a division.
        let mut before: Option<usize> = None;
        while index < end {
            let byte = text[index];
            let was_code = state == State::Code;
            let in_block = matches!(state, State::Block(_));
            let mut remark = false;
            match &mut state {
                State::Code => match byte {
                    b'(' | b'[' | b'{' => depth += 1,
                    b')' | b']' | b'}' => {
                        let Some(less) = depth.checked_sub(1) else { return lost(out, count) };
                        depth = less;
                        if byte == b'}' && templates.last() == Some(&depth) {
                            templates.pop();
                            state = State::Quoted { quote: b'`', lines: true };
                        }
                    }
                    b'#' if python => {
                        remark = true;
                        index = end - 1;
                    }
                    b'/' if !python && at(index + 1) == b'/' => {
                        remark = true;
                        index = end - 1;
                    }
                    b'/' if !python && at(index + 1) == b'*' => {
                        remark = true;
                        state = State::Block(1);
                        index += 1;
                    }
                    b'/' if script && starts_regex(text, before) => match regex_end(text, index, end) {
                        Some(close) => index = close,
                        None => return lost(out, count),
                    },
                    b'"' | b'\'' if python && at(index + 1) == byte && at(index + 2) == byte => {
                        state = State::Triple(byte);
                        index += 2;
                    }
                    b'"' if language == Language::Java && at(index + 1) == b'"' && at(index + 2) == b'"' => {
                        state = State::Triple(byte);
                        index += 2;
                    }
                    b'"' if language == Language::Rust && raw_rust(text, index).is_some() => {
                        state = State::RawRust(raw_rust(text, index).unwrap_or(0));
                    }
                    b'"' if language == Language::Cpp && index > 0 && text[index - 1] == b'R' => {
                        let delimiter: Vec<u8> =
                            text[index + 1..end].iter().take_while(|&&byte| byte != b'(').copied().collect();
                        if delimiter.len() > 16 || index + 1 + delimiter.len() >= end {
                            return lost(out, count);
                        }
                        index += delimiter.len() + 1;
                        state = State::RawCpp(delimiter);
                    }
                    b'"' => state = State::Quoted { quote: b'"', lines: language == Language::Rust },
                    b'`' if script || language == Language::Go => {
                        state = State::Quoted { quote: b'`', lines: true };
                    }
                    b'\'' if language == Language::Rust => {
                        // A char literal ('a', '\n', 'é') or a lifetime ('a, 'static): a char when it closes.
                        if let Some(close) = rust_char(text, index) {
                            index = close;
                        }
                    }
                    b'\'' if c_like && digit_separator(text, index) => {}
                    b'\'' => state = State::Quoted { quote: b'\'', lines: false },
                    _ => {}
                },
                State::Block(nesting) => {
                    if byte == b'*' && at(index + 1) == b'/' {
                        *nesting -= 1;
                        index += 1;
                        if *nesting == 0 {
                            state = State::Code;
                        }
                    } else if language == Language::Rust && byte == b'/' && at(index + 1) == b'*' {
                        *nesting += 1;
                        index += 1;
                    }
                }
                State::Quoted { quote, lines } => {
                    let (quote, lines) = (*quote, *lines);
                    if byte == b'\\' && !(quote == b'`' && language == Language::Go) {
                        index += escaped(text, index);
                    } else if byte == quote {
                        state = State::Code;
                    } else if quote == b'`' && script && byte == b'$' && at(index + 1) == b'{' {
                        templates.push(depth);
                        depth += 1;
                        index += 1;
                        state = State::Code;
                    } else if byte == b'\n' && !lines {
                        // A one-line string open at the line's end: the parser would see an error, so the
                        // scan misread the line (a regex, an apostrophe in JSX text).
                        return lost(out, count);
                    }
                }
                State::Triple(quote) => {
                    let quote = *quote;
                    if byte == b'\\' {
                        index += escaped(text, index);
                    } else if byte == quote && at(index + 1) == quote && at(index + 2) == quote {
                        index += 2;
                        state = State::Code;
                    }
                }
                State::RawRust(hashes) => {
                    let hashes = *hashes;
                    if byte == b'"' && text[index + 1..].iter().take(hashes).filter(|&&b| b == b'#').count() == hashes {
                        index += hashes;
                        state = State::Code;
                    }
                }
                State::RawCpp(delimiter) => {
                    if byte == b')'
                        && text[index + 1..].starts_with(delimiter)
                        && at(index + 1 + delimiter.len()) == b'"'
                    {
                        index += delimiter.len() + 1;
                        state = State::Code;
                    }
                }
            }
            // Code is what was read in code, and the quote that closes a string; comments are not.
            if !byte.is_ascii_whitespace() && !remark && !in_block && (was_code || state == State::Code) {
                last = Some(index.min(end - 1));
                if state == State::Code {
                    before = last;
                }
            }
            index += 1;
        }
        if let Some(current) = out.last_mut() {
            current.last = last;
        }
        line += 1;
    }
    out
}

/// The depth of brackets where each line of `text` starts, or `None` ([`Line::start`]).
#[cfg(test)]
pub(super) fn line_starts(language: Language, text: &[u8], lines: &Lines) -> Vec<Option<u32>> {
    scan(language, text, lines).into_iter().map(|line| line.start).collect()
}

/// How many bytes past the `\` at `at` its escape runs: one, or two for a line break `\r\n`.
fn escaped(text: &[u8], at: usize) -> usize {
    if text.get(at + 1) == Some(&b'\r') && text.get(at + 2) == Some(&b'\n') { 2 } else { 1 }
}

/// Whether a `'` at `at` in C or C++ separates digits (`1'000`, `0xFF'FF`): the word before it
/// is a number.
fn digit_separator(text: &[u8], at: usize) -> bool {
    let word_start = text[..at].iter().rposition(|&byte| !is_word(byte)).map_or(0, |index| index + 1);
    at > word_start && text[word_start].is_ascii_digit() && text.get(at + 1).is_some_and(|&byte| is_word(byte))
}

/// Whether a `/` in JavaScript or TypeScript code, after the code byte at `before` on its line
/// (`None`: the first on the line), starts a regex literal rather than a division.
fn starts_regex(text: &[u8], before: Option<usize>) -> bool {
    let Some(before) = before else { return true };
    let byte = text[before];
    if b"(,=:[!&|?{};+-*%<>~^".contains(&byte) {
        return true;
    }
    // After a keyword that an expression follows.
    let start = text[..=before].iter().rposition(|&byte| !is_word(byte)).map_or(0, |index| index + 1);
    matches!(&text[start..=before], b"return" | b"typeof" | b"case" | b"in" | b"of" | b"void" | b"yield" | b"await")
}

/// The `/` that closes the regex literal opened at `open`, on its line (before `end`), or `None`.
fn regex_end(text: &[u8], open: usize, end: usize) -> Option<usize> {
    let mut index = open + 1;
    let mut class = false;
    while index < end {
        match text[index] {
            b'\\' => index += 1,
            b'[' => class = true,
            b']' => class = false,
            b'/' if !class => return Some(index),
            b'\n' => return None,
            _ => {}
        }
        index += 1;
    }
    None
}

/// `lines` with every line after the ones it has marked as not in code, and without code: the
/// scan lost its way.
fn lost(mut lines: Vec<Line>, count: usize) -> Vec<Line> {
    if let Some(line) = lines.last_mut() {
        line.last = None;
    }
    lines.resize(count, Line { start: None, last: None });
    lines
}

/// The `#`s of the Rust raw string whose `"` is at `quote` (`r"`, `r#"`, `br##"`), or `None`
/// when that `"` opens no raw string.
fn raw_rust(text: &[u8], quote: usize) -> Option<usize> {
    let hashes = text[..quote].iter().rev().take_while(|&&byte| byte == b'#').count();
    let r = quote.checked_sub(hashes + 1)?;
    let before = r.checked_sub(1).map(|index| text[index]);
    let prefix_ok = match before {
        Some(b'b' | b'c') => r.checked_sub(2).is_none_or(|index| !is_word(text[index])),
        Some(byte) => !is_word(byte),
        None => true,
    };
    (text[r] == b'r' && prefix_ok).then_some(hashes)
}

/// The index of the `'` that closes the Rust char literal opened at `open`, or `None` when the
/// `'` starts a lifetime or a label.
fn rust_char(text: &[u8], open: usize) -> Option<usize> {
    let rest = &text[open + 1..];
    if rest.first() == Some(&b'\\') {
        // An escape: up to the next quote on the line ('\n', '\'', '\u{1F600}').
        let close = rest.iter().skip(2).take(12).position(|&byte| byte == b'\'' || byte == b'\n')? + 2;
        return (rest[close] == b'\'').then_some(open + 1 + close);
    }
    // One character, of one to four bytes, then the closing quote.
    let width = match rest.first()? {
        byte if *byte < 0x80 => 1,
        byte if *byte >= 0xF0 => 4,
        byte if *byte >= 0xE0 => 3,
        _ => 2,
    };
    (rest.get(width) == Some(&b'\'') && rest[0] != b'\'' && rest[0] != b'\n').then_some(open + 1 + width)
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

#[cfg(test)]
mod tests {
    use super::super::{Language, Lines};
    use super::line_starts;

    fn starts(language: Language, text: &str) -> Vec<Option<u32>> {
        line_starts(language, text.as_bytes(), &Lines::of(text.as_bytes()))
    }

    #[test]
    fn comments_strings_and_brackets_are_followed() {
        let c = "/* a\n\nint f(void) {\n*/\nint g(void) {\n  return \"}\";\n}\n";
        assert_eq!(starts(Language::C, c), [Some(0), None, None, None, Some(0), Some(1), Some(1)]);
        let js = "const s = `\n\nfunction f() {\n}\n`;\nfunction g() {\n}\n";
        assert_eq!(starts(Language::JavaScript, js), [Some(0), None, None, None, None, Some(0), Some(1)]);
        let python = "x = \"\"\"a\n\ndef f():\n\"\"\"\ndef g(a='('):\n    pass\n";
        assert_eq!(starts(Language::Python, python), [Some(0), None, None, None, Some(0), Some(0)]);
        let rust = "fn f<'a>(x: &'a str) -> char {\n    let s = r#\"\n}\"#;\n    '}'\n}\nfn g() {}\n";
        assert_eq!(starts(Language::Rust, rust), [Some(0), Some(1), None, Some(1), Some(1), Some(0)]);
        let nested = "/* a /* b */\n}\n*/\nfn f() {}\n";
        assert_eq!(starts(Language::Rust, nested), [Some(0), None, None, Some(0)]);
        let cpp = "auto s = R\"x(\n)\"\n)x\";\nint n = 1'000;\nint f() {\n}\n";
        assert_eq!(starts(Language::Cpp, cpp), [Some(0), None, None, Some(0), Some(0), Some(1)]);
    }

    #[test]
    fn templates_regexes_and_separators_are_followed() {
        let nested = "const s = `a ${f(`\n\nx`)} b\n\n`;\nfunction g() {\n}\n";
        assert_eq!(starts(Language::JavaScript, nested), [Some(0), None, None, None, None, Some(0), Some(1)]);
        let regex = "const re = /`/g;\nconst d = a / b / c;\nfunction g() {\n}\n";
        assert_eq!(starts(Language::TypeScript, regex), [Some(0), Some(0), Some(0), Some(1)]);
        let cpp = "char c = u8'a'; /* x\n*/\nint n = 1'000;\nint f();\n";
        assert_eq!(starts(Language::Cpp, cpp), [Some(0), None, Some(0), Some(0)]);
        let crlf = "x = 'a\\\r\nb' + 1\r\ny = 2\r\n";
        assert_eq!(starts(Language::Python, crlf), [Some(0), None, Some(0)]);
    }

    #[test]
    fn a_one_line_string_open_at_its_line_end_stops_the_scan() {
        let jsx = "const A = () => <p>Don't</p>;\nfunction g() {\n}\n";
        assert_eq!(starts(Language::JavaScript, jsx), [Some(0), None, None]);
    }

    #[test]
    fn the_last_code_of_a_line_leaves_comments_out() {
        let text = "const x = 1; // note\n/* only */\nfoo(\"a\") /* b */\n";
        let scanned = super::scan(Language::JavaScript, text.as_bytes(), &Lines::of(text.as_bytes()));
        let last: Vec<Option<u8>> = scanned.iter().map(|line| line.last.map(|at| text.as_bytes()[at])).collect();
        assert_eq!(last, [Some(b';'), None, Some(b')')]);
    }

    #[test]
    fn a_closing_bracket_with_none_open_stops_the_scan() {
        assert_eq!(starts(Language::C, "}\nint f(void);\n"), [Some(0), None]);
    }
}
