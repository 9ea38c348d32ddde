//! Names written as git writes them, so that no name from a repository can start a line of its own.
//!
//! # Paths
//!
//! [`path`] follows git's `quote_c_style` under `core.quotePath`. A path that holds a control
//! character, `"` or `\`, or a byte from 0x80 when `core.quotePath` is true (git's default), is
//! written in double quotes with C escapes (`\a \b \t \n \v \f \r \" \\`) and the other bytes in
//! octal (`\303\251` for `é`). A path that needs none of that is written as it is. Two deviations
//! keep the output one valid UTF-8 line: a path that is not UTF-8 is quoted with its bytes from
//! 0x80 in octal even when `core.quotePath` is false, and so are the C1 controls and the Unicode
//! line and paragraph separators, which some readers take for line breaks.
//!
//! # Other repository strings
//!
//! [`controls`] escapes the control characters of free text such as an author name, a ref name or a
//! stash message in the same C style, without quotes, and leaves every other character as it is.

use std::borrow::Cow;

/// Whether `core.quotePath` asks for the bytes from 0x80 in octal, and whether a space forces
/// quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Style {
    /// Bytes from 0x80 are written in octal, as with git's default `core.quotePath=true`.
    pub(crate) non_ascii: bool,
    /// A path holding a space is quoted, as `git status --short` quotes it; diff headers and name
    /// lists do not.
    pub(crate) space: bool,
}

/// The repository's `core.quotePath`, from every configuration level git reads; true (git's
/// default) when it is not set or not a boolean.
pub(crate) fn quote_path_config(repo: &gix::Repository) -> bool {
    repo.config_snapshot().boolean("core.quotePath").unwrap_or(true)
}

/// `prefix` + `path`, quoted as git quotes it under `style` (see the module docs); the prefix goes
/// inside the quotes, as in git's `"a/name\twith tab"`.
pub(crate) fn path(prefix: &str, path: &[u8], style: Style) -> String {
    let text = std::str::from_utf8(path).ok();
    let needs = |byte: u8| needs_escape(byte) || (style.space && byte == b' ');
    let quoted =
        |text: &str| text.bytes().any(needs) || text.chars().any(breaks_lines) || (style.non_ascii && !text.is_ascii());
    let plain = text.filter(|text| !quoted(text));
    if let Some(text) = plain {
        return format!("{prefix}{text}");
    }
    let mut out = String::with_capacity(prefix.len() + path.len() + 2);
    out.push('"');
    out.push_str(prefix);
    match text.filter(|_| !style.non_ascii) {
        Some(text) => {
            for character in text.chars() {
                escape_char(&mut out, character, true);
            }
        }
        None => {
            for &byte in path {
                escape_byte(&mut out, byte);
            }
        }
    }
    out.push('"');
    out
}

/// `text` with its control characters (and the Unicode line and paragraph separators) written as C
/// escapes, `\n`, `\r`, `\t` and the like or octal; every other character, `"` and `\` included, is
/// left as it is.
pub(crate) fn controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|character| character.is_control() || breaks_lines(character)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for character in text.chars() {
        escape_char(&mut out, character, false);
    }
    Cow::Owned(out)
}

/// `word` as a POSIX shell reads it back as one word: as it is when it holds only letters, digits
/// and `-_./@+`, else in single quotes (a `'` inside written `'\''`), so a branch name such as
/// `x;rm` in a suggested command stays a name.
pub(crate) fn shell_word(word: &str) -> Cow<'_, str> {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./@+".contains(c)) {
        return Cow::Borrowed(word);
    }
    Cow::Owned(format!("'{}'", word.replace('\'', "'\\''")))
}

/// Whether git's `quote_c_style` escapes the ASCII `byte`: a control character, DEL, `"` or `\`.
fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == 0x7f || byte == b'"' || byte == b'\\'
}

/// A character beyond ASCII that a reader may take for a line break or a control: the C1 controls
/// (NEL among them) and U+2028, U+2029.
pub(crate) fn breaks_lines(character: char) -> bool {
    matches!(character, '\u{80}'..='\u{9f}' | '\u{2028}' | '\u{2029}')
}

/// Appends `character`, escaped when it is a control character (or `"`, `\` with `quotes`), octal
/// per UTF-8 byte beyond ASCII when it may break a line, else as it is.
fn escape_char(out: &mut String, character: char, quotes: bool) {
    if character.is_ascii() {
        let byte = character as u8;
        if byte < 0x20 || byte == 0x7f || (quotes && needs_escape(byte)) {
            escape_byte(out, byte);
        } else {
            out.push(character);
        }
    } else if breaks_lines(character) {
        let mut buffer = [0; 4];
        for &byte in character.encode_utf8(&mut buffer).as_bytes() {
            escape_byte(out, byte);
        }
    } else {
        out.push(character);
    }
}

/// Appends `byte` as git's `quote_c_style` writes it inside quotes.
fn escape_byte(out: &mut String, byte: u8) {
    let escaped = match byte {
        0x07 => "\\a",
        0x08 => "\\b",
        b'\t' => "\\t",
        b'\n' => "\\n",
        0x0b => "\\v",
        0x0c => "\\f",
        b'\r' => "\\r",
        b'"' => "\\\"",
        b'\\' => "\\\\",
        0x20..=0x7e => {
            out.push(byte as char);
            return;
        }
        _ => {
            out.push_str(&format!("\\{byte:03o}"));
            return;
        }
    };
    out.push_str(escaped);
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIT: Style = Style { non_ascii: true, space: false };
    const RAW: Style = Style { non_ascii: false, space: false };
    const STATUS: Style = Style { non_ascii: true, space: true };

    #[test]
    fn shell_words_read_back_as_one_word_by_sh() {
        for word in ["feature/x", "x;rm -rf", "it's", "$(id)", "a`b`", "dev@{u}", "-"] {
            let quoted = shell_word(word);
            let output = std::process::Command::new("sh")
                .args(["-c", &format!("printf '%s|' {quoted}")])
                .output()
                .expect("sh runs");
            assert_eq!(String::from_utf8_lossy(&output.stdout), format!("{word}|"), "{quoted}");
        }
        assert_eq!(shell_word("feature/x"), "feature/x");
    }

    #[test]
    fn paths_are_quoted_as_git_quotes_them() {
        assert_eq!(path("a/", b"src/lib.rs", GIT), "a/src/lib.rs");
        assert_eq!(path("a/", "docs/café menu.md".as_bytes(), RAW), "a/docs/café menu.md");
        assert_eq!(path("a/", "docs/café menu.md".as_bytes(), GIT), "\"a/docs/caf\\303\\251 menu.md\"");
        assert_eq!(path("", b"a b", STATUS), "\"a b\"");
        assert_eq!(path("", b"a\nb", RAW), "\"a\\nb\"");
        assert_eq!(path("", b"c\x07\x08\x0b\x0c\r\x1b\x7f", GIT), "\"c\\a\\b\\v\\f\\r\\033\\177\"");
        assert_eq!(path("", b"q\"\\z", GIT), "\"q\\\"\\\\z\"");
        assert_eq!(path("", b"caf\xe9", RAW), "\"caf\\351\"", "not UTF-8: octal even without quotePath");
        assert_eq!(path("", "x\u{2028}y".as_bytes(), RAW), "\"x\\342\\200\\250y\"");
    }

    #[test]
    fn controls_are_escaped_in_free_text() {
        assert_eq!(controls("Ada \"A\" Lovelace"), "Ada \"A\" Lovelace");
        assert!(matches!(controls("plain"), Cow::Borrowed(_)));
        assert_eq!(controls("one\ntwo\r\u{1b}[31m\u{85}"), "one\\ntwo\\r\\033[31m\\302\\205");
        assert_eq!(controls("tab\there"), "tab\\there");
    }
}
