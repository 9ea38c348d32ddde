//! A JSON editor that changes one member and leaves every other byte of the file as it was.
//!
//! [`parse`] reads a document into a tree of nodes that know their byte spans; [`set`] replaces the value at a
//! path of object keys, or inserts the missing members, by splicing text. Keys keep their order, and comments,
//! indentation and line endings outside the edited value are untouched. The inserted text is indented like its
//! neighbours (the file's own indentation unit, two spaces when it has none) and uses the file's line ending.
//!
//! With [`Dialect::Jsonc`] the parser also accepts `//` and `/* */` comments and trailing commas, as VS Code's
//! configuration files do.

use serde_json::{Map, Value};

/// Which JSON a file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Strict JSON (RFC 8259).
    Strict,
    /// JSON with comments and trailing commas (VS Code's `jsonc`).
    Jsonc,
}

/// Why a document could not be read or edited.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The text is not JSON of the dialect; `line` and `column` count from 1.
    #[error("not valid JSON at line {line}, column {column}: {message}")]
    Syntax {
        /// The line of the problem.
        line: usize,
        /// The column (in characters) of the problem.
        column: usize,
        /// What is wrong there.
        message: String,
    },
    /// A value on the path to the member is not an object, so no member can be set in it.
    #[error("`{path}` is not a JSON object")]
    NotAnObject {
        /// The keys leading to the value, joined with `.` (`(top level)` for the document itself).
        path: String,
    },
}

/// One value of a parsed document with the byte span of its text.
#[derive(Debug, Clone)]
struct Node {
    start: usize,
    end: usize,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Object(Vec<Member>),
    Array(Vec<Node>),
    String(String),
    Number(String),
    Bool(bool),
    Null,
}

#[derive(Debug, Clone)]
struct Member {
    key: String,
    key_start: usize,
    value: Node,
}

/// Parses `text` and returns its value, or where it stops being JSON of the dialect. An empty file (only
/// whitespace) is `None`.
///
/// # Errors
/// [`Error::Syntax`] with the line and column of the first problem.
pub fn parse(text: &str, dialect: Dialect) -> Result<Option<Value>, Error> {
    Ok(parse_node(text, dialect)?.map(|node| to_value(&node)))
}

/// Sets the member at `path` (object keys from the top level) to `value` and returns the new text, or `None`
/// when the member already holds an equal value. Missing objects on the path are inserted; an empty file becomes
/// a document holding only the path.
///
/// # Errors
/// [`Error::Syntax`] when `text` does not parse, [`Error::NotAnObject`] when a value on the path is not an object.
pub fn set(text: &str, dialect: Dialect, path: &[&str], value: &Value) -> Result<Option<String>, Error> {
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let unit = indent_unit(text);
    let Some(root) = parse_node(text, dialect)? else {
        let rendered = render(&nest(path, value), "", &unit, newline);
        return Ok(Some(format!("{rendered}{newline}")));
    };
    let mut node = &root;
    for (depth, key) in path.iter().enumerate() {
        let Kind::Object(members) = &node.kind else {
            return Err(Error::NotAnObject { path: path_text(&path[..depth]) });
        };
        let Some(member) = members.iter().find(|member| member.key == *key) else {
            let inserted = insert_member(text, node, members, key, &nest(&path[depth + 1..], value), &unit, newline);
            return Ok(Some(inserted));
        };
        node = &member.value;
        if depth + 1 == path.len() {
            if to_value(node) == *value {
                return Ok(None);
            }
            let base = line_indent(text, member.key_start);
            let rendered = render(value, &base, &unit, newline);
            return Ok(Some(format!("{}{rendered}{}", &text[..node.start], &text[node.end..])));
        }
    }
    // An empty path names the whole document.
    if to_value(&root) == *value {
        return Ok(None);
    }
    Ok(Some(format!("{}{}{}", &text[..root.start], render(value, "", &unit, newline), &text[root.end..])))
}

/// Removes the member at `path` (object keys from the top level) and returns the new text, or `None` when there
/// is no such member. The member goes with its comma and the line it had to itself, so removing the member
/// [`set`] appended last gives back the text as it was before. An object left with no member becomes `{}` when
/// nothing else (a comment) is inside it.
///
/// # Errors
/// [`Error::Syntax`] when `text` does not parse, [`Error::NotAnObject`] when a value on the path is not an object.
pub fn remove(text: &str, dialect: Dialect, path: &[&str]) -> Result<Option<String>, Error> {
    let Some((key, parents)) = path.split_last() else {
        return Err(Error::NotAnObject { path: path_text(path) });
    };
    let Some(root) = parse_node(text, dialect)? else { return Ok(None) };
    let mut node = &root;
    for (depth, parent) in parents.iter().enumerate() {
        let Kind::Object(members) = &node.kind else {
            return Err(Error::NotAnObject { path: path_text(&path[..depth]) });
        };
        let Some(member) = members.iter().find(|member| member.key == *parent) else { return Ok(None) };
        node = &member.value;
    }
    let Kind::Object(members) = &node.kind else {
        return Err(Error::NotAnObject { path: path_text(parents) });
    };
    // A duplicated key is removed where the host reads it: its last occurrence.
    let Some(index) = members.iter().rposition(|member| member.key == *key) else { return Ok(None) };
    let member = &members[index];
    let bytes = text.as_bytes();
    // The comma after the member's value, if any, and where the blank after it ends.
    let comma = {
        let mut at = blank_end(text, member.value.end);
        (bytes.get(at) == Some(&b',')).then(|| {
            at += 1;
            at
        })
    };
    let own_line = starts_its_line(text, member.key_start);
    let line_start = text[..member.key_start].rfind('\n').map_or(0, |newline| newline + 1);
    if let Some(next) = members.get(index + 1) {
        // Not the last member: it goes with its own comma, and with its line when nothing else is on it.
        let after_comma = comma.unwrap_or(next.key_start);
        let mut end = after_comma + spaces(&text[after_comma..]);
        let start = if own_line && text[end..].starts_with(['\r', '\n']) {
            end += if text[end..].starts_with("\r\n") { 2 } else { 1 };
            line_start
        } else {
            member.key_start
        };
        return Ok(Some(format!("{}{}", &text[..start], &text[end..])));
    }
    let inner_start = node.start + 1;
    let inner_end = node.end - 1;
    let Some(previous) = index.checked_sub(1).map(|previous| &members[previous]) else {
        // The only member: an object with nothing else inside becomes `{}`.
        let end = comma.unwrap_or(member.value.end);
        let rest_blank =
            text[inner_start..member.key_start].trim().is_empty() && text[end..inner_end].trim().is_empty();
        if rest_blank {
            return Ok(Some(format!("{}{}", &text[..inner_start], &text[inner_end..])));
        }
        let start = if own_line { newline_before(text, line_start) } else { member.key_start };
        return Ok(Some(format!("{}{}", &text[..start], &text[end..])));
    };
    // The last member: the comma before it goes, and the member from the end of the line before it. In JSONC its
    // own trailing comma stays, as the previous member's.
    let end = member.value.end;
    let start = if own_line { newline_before(text, line_start) } else { member.key_start };
    let previous_comma = blank_end(text, previous.value.end);
    if bytes.get(previous_comma) != Some(&b',') || previous_comma >= start {
        return Ok(Some(format!("{}{}", &text[..start], &text[end..])));
    }
    Ok(Some(if text[previous_comma + 1..start].trim().is_empty() {
        format!("{}{}", &text[..previous_comma], &text[end..])
    } else {
        // A comment between the comma and the member stays.
        format!("{}{}{}", &text[..previous_comma], &text[previous_comma + 1..start], &text[end..])
    }))
}

/// Removes the member at `path` when its value is an object with nothing inside, not even a comment, and returns
/// the new text; `None` when there is no such member or it holds something. `install --remove` uses it to drop the
/// server object it emptied, which `install` adds when the file had none.
///
/// # Errors
/// As [`remove`].
pub fn remove_if_empty(text: &str, dialect: Dialect, path: &[&str]) -> Result<Option<String>, Error> {
    let Some(root) = parse_node(text, dialect)? else { return Ok(None) };
    let mut node = &root;
    for key in path {
        let Kind::Object(members) = &node.kind else { return Ok(None) };
        let Some(member) = members.iter().rev().find(|member| member.key == *key) else { return Ok(None) };
        node = &member.value;
    }
    let empty = matches!(&node.kind, Kind::Object(members) if members.is_empty())
        && text[node.start + 1..node.end - 1].trim().is_empty();
    if !empty {
        return Ok(None);
    }
    remove(text, dialect, path)
}

/// Whether `text` is a document holding nothing: an empty object with only whitespace around and inside it (a
/// byte order mark aside), or only whitespace.
pub fn is_empty_document(text: &str) -> bool {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text).trim();
    body.is_empty()
        || body.strip_prefix('{').and_then(|rest| rest.strip_suffix('}')).is_some_and(|inner| inner.trim().is_empty())
}

/// Where the blank (whitespace and, in JSONC, comments) from byte `at` ends.
fn blank_end(text: &str, at: usize) -> usize {
    let mut parser = Parser { text, bytes: text.as_bytes(), at, dialect: Dialect::Jsonc };
    match parser.skip_blank() {
        Ok(()) => parser.at,
        Err(_) => at,
    }
}

/// How many spaces and tabs start `text`.
fn spaces(text: &str) -> usize {
    text.bytes().take_while(|byte| *byte == b' ' || *byte == b'\t').count()
}

/// Where the line ending before the line that starts at `line_start` begins (`line_start` on the first line).
fn newline_before(text: &str, line_start: usize) -> usize {
    match line_start.checked_sub(1) {
        Some(newline) if newline > 0 && text.as_bytes()[newline - 1] == b'\r' => newline - 1,
        Some(newline) => newline,
        None => 0,
    }
}

/// `value` wrapped in one object per key of `path`, outermost first.
fn nest(path: &[&str], value: &Value) -> Value {
    path.iter().rev().fold(value.clone(), |inner, key| Value::Object(Map::from_iter([((*key).to_owned(), inner)])))
}

fn path_text(path: &[&str]) -> String {
    if path.is_empty() { "(top level)".to_owned() } else { path.join(".") }
}

/// Inserts `"key": value` as the last member of `object`.
fn insert_member(
    text: &str,
    object: &Node,
    members: &[Member],
    key: &str,
    value: &Value,
    unit: &str,
    newline: &str,
) -> String {
    let key_json = Value::from(key).to_string();
    let Some(last) = members.last() else {
        // An empty object: the member goes on its own line between the braces.
        let base = line_indent(text, object.start);
        let indent = format!("{base}{unit}");
        let rendered = render(value, &indent, unit, newline);
        let inner = &text[object.start + 1..object.end - 1];
        let member = format!("{newline}{indent}{key_json}: {rendered}{newline}{base}");
        return if inner.trim().is_empty() {
            format!("{}{member}{}", &text[..=object.start], &text[object.end - 1..])
        } else {
            // Keep what sits between the braces (a comment): the member goes before the closing brace.
            format!("{}{member}{}", &text[..object.end - 1], &text[object.end - 1..])
        };
    };
    let at = last.value.end;
    if starts_its_line(text, last.key_start) {
        let indent = line_indent(text, last.key_start);
        let rendered = render(value, &indent, unit, newline);
        format!("{},{newline}{indent}{key_json}: {rendered}{}", &text[..at], &text[at..])
    } else {
        // An object written on one line stays on one line.
        format!("{}, {key_json}: {value}{}", &text[..at], &text[at..])
    }
}

/// `value` as pretty JSON indented by `unit`, every line after the first prefixed with `base`.
fn render(value: &Value, base: &str, unit: &str, newline: &str) -> String {
    use serde::Serialize as _;
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut serializer).expect("JSON values serialise");
    let pretty = String::from_utf8(out).expect("serde_json writes UTF-8");
    pretty.replace('\n', &format!("{newline}{base}"))
}

/// The whitespace that starts the line holding byte `at`.
fn line_indent(text: &str, at: usize) -> String {
    let line_start = text[..at].rfind('\n').map_or(0, |newline| newline + 1);
    text[line_start..].chars().take_while(|c| *c == ' ' || *c == '\t').collect()
}

/// Whether only whitespace precedes byte `at` on its line.
fn starts_its_line(text: &str, at: usize) -> bool {
    let line_start = text[..at].rfind('\n').map_or(0, |newline| newline + 1);
    text[line_start..at].chars().all(|c| c == ' ' || c == '\t')
}

/// The file's indentation unit: the leading whitespace of its first indented line, else two spaces.
fn indent_unit(text: &str) -> String {
    text.lines()
        .map(|line| line.chars().take_while(|c| *c == ' ' || *c == '\t').collect::<String>())
        .find(|indent| !indent.is_empty())
        .unwrap_or_else(|| "  ".to_owned())
}

fn to_value(node: &Node) -> Value {
    match &node.kind {
        Kind::Object(members) => {
            Value::Object(members.iter().map(|member| (member.key.clone(), to_value(&member.value))).collect())
        }
        Kind::Array(items) => Value::Array(items.iter().map(to_value).collect()),
        Kind::String(text) => Value::String(text.clone()),
        Kind::Number(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        Kind::Bool(value) => Value::Bool(*value),
        Kind::Null => Value::Null,
    }
}

fn parse_node(text: &str, dialect: Dialect) -> Result<Option<Node>, Error> {
    let mut parser = Parser { text, bytes: text.as_bytes(), at: 0, dialect };
    // A byte order mark is not JSON, but editors write it.
    if text.starts_with('\u{feff}') {
        parser.at = '\u{feff}'.len_utf8();
    }
    parser.skip_blank()?;
    if parser.at == parser.bytes.len() {
        return Ok(None);
    }
    let node = parser.value(0)?;
    parser.skip_blank()?;
    if parser.at != parser.bytes.len() {
        return Err(parser.error("text after the end of the document"));
    }
    Ok(Some(node))
}

/// Nesting deeper than this is refused (no configuration file is that deep; it bounds the recursion).
const MAX_DEPTH: usize = 128;

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    dialect: Dialect,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> Error {
        let mut at = self.at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        let before = &self.text[..at];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |last| last.chars().count()) + 1;
        Error::Syntax { line, column, message: message.to_owned() }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Skips whitespace and, in JSONC, comments.
    fn skip_blank(&mut self) -> Result<(), Error> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.at += 1,
                Some(b'/') if self.dialect == Dialect::Jsonc => match self.bytes.get(self.at + 1) {
                    Some(b'/') => {
                        while self.peek().is_some_and(|byte| byte != b'\n') {
                            self.at += 1;
                        }
                    }
                    Some(b'*') => {
                        let close =
                            self.text[self.at + 2..].find("*/").ok_or_else(|| self.error("unclosed comment"))?;
                        self.at += 2 + close + 2;
                    }
                    _ => return Err(self.error("unexpected `/`")),
                },
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, Error> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        let start = self.at;
        let kind = match self.peek() {
            Some(b'{') => self.object(depth)?,
            Some(b'[') => self.array(depth)?,
            Some(b'"') => Kind::String(self.string()?),
            Some(b't') => self.word("true", Kind::Bool(true))?,
            Some(b'f') => self.word("false", Kind::Bool(false))?,
            Some(b'n') => self.word("null", Kind::Null)?,
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(_) => return Err(self.error("expected a value")),
            None => return Err(self.error("the document ends where a value was expected")),
        };
        Ok(Node { start, end: self.at, kind })
    }

    fn word(&mut self, word: &str, kind: Kind) -> Result<Kind, Error> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(kind)
        } else {
            Err(self.error("expected a value"))
        }
    }

    fn number(&mut self) -> Result<Kind, Error> {
        let start = self.at;
        while self.peek().is_some_and(|byte| matches!(byte, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) {
            self.at += 1;
        }
        let number = &self.text[start..self.at];
        if serde_json::from_str::<serde_json::Number>(number).is_err() {
            self.at = start;
            return Err(self.error("not a JSON number"));
        }
        Ok(Kind::Number(number.to_owned()))
    }

    fn string(&mut self) -> Result<String, Error> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.peek() {
                None => {
                    self.at = start;
                    return Err(self.error("unclosed string"));
                }
                Some(b'"') => {
                    self.at += 1;
                    break;
                }
                Some(b'\\') => self.at += 2,
                Some(byte) if byte < 0x20 => return Err(self.error("a control character inside a string")),
                Some(_) => self.at += 1,
            }
        }
        let literal = self.text.get(start..self.at).ok_or_else(|| self.error("unclosed string"))?;
        serde_json::from_str::<String>(literal).map_err(|_| {
            self.at = start;
            self.error("invalid escape in a string")
        })
    }

    fn object(&mut self, depth: usize) -> Result<Kind, Error> {
        self.at += 1;
        let mut members: Vec<Member> = Vec::new();
        loop {
            self.skip_blank()?;
            match self.peek() {
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Kind::Object(members));
                }
                Some(b'"') => {}
                _ => return Err(self.error("expected a key in quotes or `}`")),
            }
            let key_start = self.at;
            let key = self.string()?;
            self.skip_blank()?;
            if self.peek() != Some(b':') {
                return Err(self.error("expected `:` after the key"));
            }
            self.at += 1;
            self.skip_blank()?;
            let value = self.value(depth + 1)?;
            members.push(Member { key, key_start, value });
            self.skip_blank()?;
            match self.peek() {
                Some(b',') => {
                    self.at += 1;
                    self.skip_blank()?;
                    if self.peek() == Some(b'}') && self.dialect == Dialect::Strict {
                        return Err(self.error("a trailing comma before `}`"));
                    }
                }
                Some(b'}') => {}
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Kind, Error> {
        self.at += 1;
        let mut items = Vec::new();
        loop {
            self.skip_blank()?;
            if self.peek() == Some(b']') {
                self.at += 1;
                return Ok(Kind::Array(items));
            }
            items.push(self.value(depth + 1)?);
            self.skip_blank()?;
            match self.peek() {
                Some(b',') => {
                    self.at += 1;
                    self.skip_blank()?;
                    if self.peek() == Some(b']') && self.dialect == Dialect::Strict {
                        return Err(self.error("a trailing comma before `]`"));
                    }
                }
                Some(b']') => {}
                _ => return Err(self.error("expected `,` or `]`")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set_strict(text: &str, path: &[&str], value: Value) -> Option<String> {
        set(text, Dialect::Strict, path, &value).expect("edits")
    }

    #[test]
    fn inserts_a_member_keeping_every_other_byte() {
        let text =
            "{\n    \"theme\": \"dark\",\n    \"mcpServers\": {\n        \"other\": {\"command\": \"x\"}\n    }\n}\n";
        let edited = set_strict(text, &["mcpServers", "fluxgit"], json!({"command": "/bin/f"})).expect("changed");
        assert_eq!(
            edited,
            "{\n    \"theme\": \"dark\",\n    \"mcpServers\": {\n        \"other\": {\"command\": \"x\"},\n        \
             \"fluxgit\": {\n            \"command\": \"/bin/f\"\n        }\n    }\n}\n"
        );
        assert_eq!(set_strict(&edited, &["mcpServers", "fluxgit"], json!({"command": "/bin/f"})), None);
    }

    #[test]
    fn creates_missing_objects_and_fills_empty_ones() {
        let edited = set_strict("{\"a\": 1}", &["mcpServers", "f"], json!(true)).expect("changed");
        assert_eq!(edited, "{\"a\": 1, \"mcpServers\": {\"f\":true}}");
        assert_eq!(set_strict("{}", &["s", "f"], json!(1)).expect("changed"), "{\n  \"s\": {\n    \"f\": 1\n  }\n}");
        assert_eq!(set_strict("  \n", &["s"], json!({})).expect("changed"), "{\n  \"s\": {}\n}\n");
    }

    #[test]
    fn replaces_a_changed_value_in_place() {
        let text = "{\r\n  \"s\": {\r\n    \"f\": {\"command\": \"old\"}\r\n  },\r\n  \"z\": 0\r\n}";
        let edited = set_strict(text, &["s", "f", "command"], json!("new")).expect("changed");
        assert_eq!(edited, "{\r\n  \"s\": {\r\n    \"f\": {\"command\": \"new\"}\r\n  },\r\n  \"z\": 0\r\n}");
    }

    #[test]
    fn jsonc_keeps_comments_and_trailing_commas() {
        let text = "// user MCP servers\n{\n  \"servers\": {\n    /* mine */ \"a\": {},\n  },\n}\n";
        assert!(set(text, Dialect::Strict, &["servers", "b"], &json!(1)).is_err());
        let edited = set(text, Dialect::Jsonc, &["servers", "b"], &json!(1)).expect("edits").expect("changed");
        // The last member does not start its line (a comment does): the new one joins it on that line.
        assert_eq!(edited, "// user MCP servers\n{\n  \"servers\": {\n    /* mine */ \"a\": {}, \"b\": 1,\n  },\n}\n");
    }

    /// `set` then `remove` of the same member.
    fn round_trip(text: &str, dialect: Dialect, path: &[&str]) -> String {
        let added = set(text, dialect, path, &json!({"command": "/bin/f", "args": []})).expect("edits").expect("set");
        remove(&added, dialect, path).expect("edits").expect("removed")
    }

    #[test]
    fn removing_what_set_appended_gives_back_every_byte() {
        let texts = [
            "{\n    \"theme\": \"dark\",\n    \"mcpServers\": {\n        \"other\": {\"command\": \"x\"}\n    }\n}\n",
            "{\r\n  \"mcpServers\": {\r\n    \"other\": {}\r\n  }\r\n}\r\n",
            "{\"mcpServers\": {\"other\": 1}}",
            "{\"mcpServers\": {}}\n",
            "{\n\t\"mcpServers\": {\n\t\t\"other\": 1\n\t}\n}",
        ];
        for text in texts {
            assert_eq!(round_trip(text, Dialect::Strict, &["mcpServers", "fluxgit"]), text);
        }
        let jsonc = "// mine\n{\n  \"servers\": {\n    \"a\": {}, // the first\n    /* b */ \"b\": 1,\n  },\n}\n";
        assert_eq!(round_trip(jsonc, Dialect::Jsonc, &["servers", "fluxgit"]), jsonc);
    }

    #[test]
    fn removes_a_member_anywhere_with_its_comma_and_line() {
        let text = "{\n  \"s\": {\n    \"a\": 1,\n    \"f\": {\"x\": [1]},\n    \"b\": 2\n  }\n}\n";
        let removed = remove(text, Dialect::Strict, &["s", "f"]).expect("edits").expect("removed");
        assert_eq!(removed, "{\n  \"s\": {\n    \"a\": 1,\n    \"b\": 2\n  }\n}\n");
        let first = remove(text, Dialect::Strict, &["s", "a"]).expect("edits").expect("removed");
        assert_eq!(first, "{\n  \"s\": {\n    \"f\": {\"x\": [1]},\n    \"b\": 2\n  }\n}\n");
        assert_eq!(remove("{\"f\": 1, \"b\": 2}", Dialect::Strict, &["f"]), Ok(Some("{\"b\": 2}".to_owned())));
        assert_eq!(remove("{\"b\": 2, \"f\": 1}", Dialect::Strict, &["f"]), Ok(Some("{\"b\": 2}".to_owned())));
        // Comments around the member stay, and the result still parses.
        let jsonc = "{\n  \"a\": 1, // keep me\n  \"f\": 2 // and me\n}";
        let removed = remove(jsonc, Dialect::Jsonc, &["f"]).expect("edits").expect("removed");
        assert_eq!(removed, "{\n  \"a\": 1 // keep me // and me\n}");
        assert!(parse(&removed, Dialect::Jsonc).is_ok());
        let only = "{\"s\": { /* mine */ \"f\": 1 }}";
        let removed = remove(only, Dialect::Jsonc, &["s", "f"]).expect("edits").expect("removed");
        assert_eq!(parse(&removed, Dialect::Jsonc), Ok(Some(json!({"s": {}}))), "{removed}");
        assert!(removed.contains("/* mine */"), "{removed}");
    }

    #[test]
    fn removing_what_is_not_there_changes_nothing() {
        assert_eq!(remove("{\"s\": {\"a\": 1}}", Dialect::Strict, &["s", "f"]), Ok(None));
        assert_eq!(remove("{\"t\": 1}", Dialect::Strict, &["s", "f"]), Ok(None));
        assert_eq!(remove(" \n", Dialect::Strict, &["s", "f"]), Ok(None));
        assert_eq!(
            remove("{\"s\": [1]}", Dialect::Strict, &["s", "f"]),
            Err(Error::NotAnObject { path: "s".to_owned() })
        );
        assert!(matches!(remove("{\"s\": ", Dialect::Strict, &["s", "f"]), Err(Error::Syntax { .. })));
    }

    #[test]
    fn refuses_what_does_not_parse_or_is_not_an_object() {
        let error = set("{\n  \"a\": 1,,\n}", Dialect::Strict, &["a"], &json!(2)).expect_err("refused");
        assert!(matches!(error, Error::Syntax { line: 2, column: 10, .. }), "{error}");
        let error = set("{\"s\": []}", Dialect::Strict, &["s", "f"], &json!(2)).expect_err("refused");
        assert_eq!(error, Error::NotAnObject { path: "s".to_owned() });
        assert!(set("[1]", Dialect::Strict, &["s"], &json!(2)).is_err());
        assert!(parse("{\"a\": \"\\x\"}", Dialect::Strict).is_err());
        assert!(parse("{\"a\": 01}", Dialect::Strict).is_err());
        assert_eq!(parse("{\"a\": [1, -2.5e3, null]}", Dialect::Strict), Ok(Some(json!({"a": [1, -2.5e3, null]}))));
    }
}
