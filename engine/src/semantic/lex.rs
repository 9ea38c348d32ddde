//! Where each line of a source file starts: in code at some depth of brackets, or inside a
//! comment or a string. A file is only ever cut at a line that starts in code (`split.rs`): a blank
//! line and a line that looks like an item also occur inside a block comment, a docstring or a
//! template literal, and the text before a part of a file is not parsed (`parts.rs`).
//!
//! The scan is a lexer of comments and string literals only, per language, about a hundred times
//! cheaper than a parse. Where it cannot follow the text (a closing bracket with none open) it
//! stops, and no line after that starts in code: a line it is unsure of is never a cut.

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

/// For each line of `text` (as `lines` splits it), the depth of brackets open where it starts, or
/// `None` when it starts inside a comment or a string or past a place the scan could not follow.
pub(super) fn line_starts(language: Language, text: &[u8], lines: &Lines) -> Vec<Option<u32>> {
    let count = lines.count() as usize;
    let mut starts = Vec::with_capacity(count);
    let mut state = State::Code;
    let mut depth: u32 = 0;
    let python = language == Language::Python;
    let c_like = matches!(language, Language::C | Language::Cpp);
    let at = |index: usize| text.get(index).copied().unwrap_or(0);
    let word = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_';
    let mut index = 0;
    let mut line = 0;
    while line < count {
        let end = lines.offset(line as u32 + 1);
        starts.push((state == State::Code).then_some(depth));
        while index < end {
            let byte = text[index];
            match &mut state {
                State::Code => match byte {
                    b'(' | b'[' | b'{' => depth += 1,
                    b')' | b']' | b'}' => match depth.checked_sub(1) {
                        Some(less) => depth = less,
                        None => return lost(starts, count),
                    },
                    b'#' if python => index = end - 1,
                    b'/' if !python && at(index + 1) == b'/' => index = end - 1,
                    b'/' if !python && at(index + 1) == b'*' => {
                        state = State::Block(1);
                        index += 1;
                    }
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
                            text[index + 1..end].iter().take_while(|&&b| b != b'(').copied().collect();
                        if delimiter.len() > 16 || index + 1 + delimiter.len() >= end {
                            return lost(starts, count);
                        }
                        index += delimiter.len() + 1;
                        state = State::RawCpp(delimiter);
                    }
                    b'"' => state = State::Quoted { quote: b'"', lines: language == Language::Rust },
                    b'`' if matches!(language, Language::JavaScript | Language::TypeScript | Language::Go) => {
                        state = State::Quoted { quote: b'`', lines: true };
                    }
                    b'\'' if language == Language::Rust => {
                        // A char literal ('a', '\n', 'é') or a lifetime ('a, 'static): a char when it closes.
                        if let Some(close) = rust_char(text, index) {
                            index = close;
                        }
                    }
                    b'\'' if !(c_like && index > 0 && text[index - 1].is_ascii_hexdigit() && word(at(index + 1))) => {
                        // (Not a C++ digit separator, 1'000.)
                        state = State::Quoted { quote: b'\'', lines: false };
                    }
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
                        index += 1;
                    } else if byte == quote {
                        state = State::Code;
                    } else if byte == b'\n' && !lines {
                        // An unclosed one-line string: the parser sees an error; the scan goes on in code.
                        state = State::Code;
                    }
                }
                State::Triple(quote) => {
                    let quote = *quote;
                    if byte == b'\\' {
                        index += 1;
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
            index += 1;
        }
        line += 1;
    }
    starts
}

/// `starts` with every line after the ones it has marked as not in code: the scan lost its way.
fn lost(mut starts: Vec<Option<u32>>, count: usize) -> Vec<Option<u32>> {
    starts.resize(count, None);
    starts
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
    fn a_closing_bracket_with_none_open_stops_the_scan() {
        assert_eq!(starts(Language::C, "}\nint f(void);\n"), [Some(0), None]);
    }
}
