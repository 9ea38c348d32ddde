//! Symbols of a source file from its tree-sitter syntax tree: the plumbing of `diff.semantic`.
//!
//! A file's [`Language`] comes from its `linguist-language` or `diff` attribute when set, else from
//! its extension ([`Language::detect`]). [`parse`] reads one side of a file into its [`Symbol`]s:
//! functions and methods, types (struct, enum, union, class, interface, trait, type alias), impl
//! blocks, modules and namespaces, and top-level constants. Each symbol has a qualified name built
//! from its containers (`Flags::new` inside `impl Flags`, `Client.get` inside `class Client`), a
//! line range, its declaration text up to the body (the signature) and its byte range, whose bag of
//! hashed tokens ([`tokens`]) stands for its body when renames and moves are matched by similarity
//! ([`similarity`]). The bags are made only for the symbols compared, so most symbols never need
//! one.
//!
//! # What is a symbol
//!
//! Only declarations at the top level of a file or inside a container (impl, trait, class, module,
//! namespace) are symbols: a function's body is part of the function, so a closure or a nested
//! function is never listed apart. Transparent wrappers (`export`, decorators, `template<...>`,
//! `#ifdef` blocks, `extern "C"`) lend their lines to the declaration they wrap. Everything else
//! (imports, attributes, file-level statements) lies outside every symbol and is what the diff
//! counts as top level.
//!
//! # Cost and bounds
//!
//! Parsing is linear in the file's size (tree-sitter: about 1-5 ms per 100 KB in release).
//! [`parse`] refuses text over [`MAX_FILE_BYTES`] and stops at a deadline through tree-sitter's
//! progress callback, and reports a tree whose error nodes exceed [`MAX_ERROR_RATIO`] of its nodes;
//! the caller falls back to the text diff for such a file and says why. The result depends only on
//! the bytes and the language, so callers cache it by blob id. [`parse_parts`] parses only the
//! parts of a file that its diff touches, on both sides, so its result depends on both. Each
//! language is a cargo feature of the engine (`lang-rust`, `lang-python`, ...); without it its
//! files are `unsupported_language`.

mod languages;
mod lex;
mod parts;
mod split;

use std::time::Instant;

use serde::Serialize;

pub(crate) use languages::Language;
pub(crate) use parts::{Plan, parse_parts, plan};
pub(crate) use split::{MIN_SPLIT_BYTES, parse_split};

/// Largest side of a file that is parsed, in bytes (1 MiB); a larger one falls back to the text
/// diff.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

/// Largest share of error and missing nodes in a tree that still counts as parsed (5%).
pub const MAX_ERROR_RATIO: f64 = 0.05;

/// What a symbol declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A function or a method.
    Fn,
    /// A struct (Rust, Go, C, C++).
    Struct,
    /// An enum.
    Enum,
    /// A union (Rust, C, C++).
    Union,
    /// A class (Python, JavaScript, TypeScript, Java, C++).
    Class,
    /// An interface (TypeScript, Go, Java).
    Interface,
    /// A trait (Rust).
    Trait,
    /// An impl block (Rust); its name is `Type` or `Trait for Type`.
    Impl,
    /// A module (Rust `mod`, TypeScript `module`).
    Mod,
    /// A namespace (C++, TypeScript).
    Namespace,
    /// A top-level constant (also a `static` in Rust and a `#define` in C and C++).
    Const,
    /// A type alias or typedef.
    Type,
    /// A macro (`macro_rules!`, a C function-like `#define`).
    Macro,
}

impl Kind {
    /// The word the text rendering shows (`fn`, `struct`, ...).
    pub fn label(self) -> &'static str {
        match self {
            Kind::Fn => "fn",
            Kind::Struct => "struct",
            Kind::Enum => "enum",
            Kind::Union => "union",
            Kind::Class => "class",
            Kind::Interface => "interface",
            Kind::Trait => "trait",
            Kind::Impl => "impl",
            Kind::Mod => "mod",
            Kind::Namespace => "namespace",
            Kind::Const => "const",
            Kind::Type => "type",
            Kind::Macro => "macro",
        }
    }
}

/// One declaration of a parsed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Symbol {
    /// What it declares.
    pub kind: Kind,
    /// Its name qualified by its containers, e.g. `Flags::new` or `Client.get`.
    pub name: String,
    /// Its own name, without containers.
    pub leaf: String,
    /// First line, 1-based, including the wrappers it lends its lines from (decorators, `export`).
    pub start_line: u32,
    /// Last line, 1-based and inclusive.
    pub end_line: u32,
    /// The declaration up to its body with whitespace collapsed, or `None` for a symbol without a
    /// body (a constant, an alias).
    pub signature: Option<String>,
    /// Its bytes in the file's text, wrappers included: what [`tokens`] reads for [`similarity`].
    pub bytes: std::ops::Range<usize>,
    /// Index of the container it is declared in, within the same list.
    pub parent: Option<usize>,
}

/// One side of a file, parsed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Parsed {
    /// The symbols in source order (a container before its members).
    Symbols(Vec<Symbol>),
    /// Too many error nodes: the share of error and missing nodes among all nodes.
    ParseErrors(f64),
    /// Larger than [`MAX_FILE_BYTES`].
    TooLarge,
    /// The deadline passed before the tree was complete.
    TimeBudget,
    /// Containers nest deeper than [`languages::MAX_DEPTH`].
    TooDeep,
}

/// Parses `text` as `language` and lists its symbols, giving up at `deadline`.
pub(crate) fn parse(language: Language, text: &[u8], deadline: Instant) -> Parsed {
    if text.len() > MAX_FILE_BYTES {
        return Parsed::TooLarge;
    }
    let Some(mut parser) = parser(language) else { return Parsed::ParseErrors(1.0) };
    match tree(&mut parser, text, None, deadline) {
        Some(tree) => {
            let parsed = symbols_of(language, &tree, text);
            discard(tree);
            parsed
        }
        None => Parsed::TimeBudget,
    }
}

/// Parses two versions of one file: `old` from scratch, then `new` as an edit of `old`'s tree.
///
/// `hunks` is the line diff of `old` and `new` (0-based line ranges, in order, as git's line diff
/// gives them); each hunk becomes one edit of the old tree, so tree-sitter's incremental parsing
/// reuses every subtree between the hunks, however far apart they lie. The second parse of a small
/// change costs a few percent of the first: 0.18 ms where a full parse takes 3.5 ms, on a 37 KB
/// TypeScript file. The result is what a full parse gives (tested). A side that is too large, or an
/// old side cut short by `deadline`, is parsed on its own.
pub(crate) fn parse_pair(
    language: Language,
    old: &[u8],
    new: &[u8],
    hunks: &[gix::diff::blob::Hunk],
    deadline: Instant,
) -> (Parsed, Parsed) {
    if old.len() > MAX_FILE_BYTES || new.len() > MAX_FILE_BYTES {
        return (parse(language, old, deadline), parse(language, new, deadline));
    }
    let Some(mut parser) = parser(language) else { return (Parsed::ParseErrors(1.0), Parsed::ParseErrors(1.0)) };
    let Some(mut old_tree) = tree(&mut parser, old, None, deadline) else {
        return (Parsed::TimeBudget, parse(language, new, deadline));
    };
    let old_parsed = symbols_of(language, &old_tree, old);
    for edit in edits(&Lines::of(old), new, &Lines::of(new), hunks) {
        old_tree.edit(&edit);
    }
    let new_parsed = match tree(&mut parser, new, Some(&old_tree), deadline) {
        // tree-sitter recovers from errors by the way it came: a tree with errors is parsed again
        // from scratch, so that a blob's symbols never depend on the parse before it.
        Some(tree) if tree.root_node().has_error() => {
            discard(tree);
            parse(language, new, deadline)
        }
        Some(tree) => {
            let parsed = symbols_of(language, &tree, new);
            discard(tree);
            parsed
        }
        None => Parsed::TimeBudget,
    };
    discard(old_tree);
    (old_parsed, new_parsed)
}

/// Whether the whole parse of `text` has an error node (tests compare parts with whole parses only
/// where it has none: module docs of `parts`).
#[cfg(test)]
pub(crate) fn has_errors(language: Language, text: &[u8]) -> bool {
    let mut parser = parser(language).expect("a grammar");
    tree(&mut parser, text, None, Instant::now() + std::time::Duration::from_secs(600))
        .is_none_or(|tree| tree.root_node().has_error())
}

/// Trees waiting for the freeing thread at most; one more is freed by its caller. A tree of a
/// large file holds tens of megabytes, and an unbounded queue let 100 parsed files of 800 KB pile
/// up faster than one thread freed them (3.4 GB).
const QUEUED_TREES: usize = 2;

/// Frees `tree` on a thread of its own, off the call's path: freeing a tree's nodes costs about 4%
/// of its parse (in instructions, for a 37 KB TypeScript file), and nothing waits for it. Freed
/// here when that thread cannot be started or already has [`QUEUED_TREES`] waiting.
fn discard(tree: tree_sitter::Tree) {
    static FREER: std::sync::OnceLock<Option<std::sync::mpsc::SyncSender<tree_sitter::Tree>>> =
        std::sync::OnceLock::new();
    let freer = FREER.get_or_init(|| {
        let (sender, receiver) = std::sync::mpsc::sync_channel::<tree_sitter::Tree>(QUEUED_TREES);
        let spawned = std::thread::Builder::new().name("fluxgit-tree-free".to_owned()).spawn(move || {
            for tree in receiver {
                drop(tree);
            }
        });
        spawned.is_ok().then_some(sender)
    });
    // A send fails when the queue is full or the thread is gone; the tree comes back and is freed here.
    match freer.as_ref() {
        Some(sender) => {
            if let Err(std::sync::mpsc::TrySendError::Full(tree) | std::sync::mpsc::TrySendError::Disconnected(tree)) =
                sender.try_send(tree)
            {
                drop(tree);
            }
        }
        None => drop(tree),
    }
}

/// A parser for `language`; `None` when this build has no grammar for it.
fn parser(language: Language) -> Option<tree_sitter::Parser> {
    let mut parser = tree_sitter::Parser::new();
    // A language without a grammar in this build is never detected; the grammar crates and the runtime are
    // pinned to compatible versions, so a refused grammar is a build error, reported as a tree of errors.
    language.grammar().is_some_and(|grammar| parser.set_language(&grammar).is_ok()).then_some(parser)
}

/// The tree of `text`, reusing `old` (already edited to match `text`) when given; `None` when
/// `deadline` passed first.
fn tree(
    parser: &mut tree_sitter::Parser,
    text: &[u8],
    old: Option<&tree_sitter::Tree>,
    deadline: Instant,
) -> Option<tree_sitter::Tree> {
    parse_until(parser, text, old, deadline, false)
}

/// [`tree`], also giving up at the first error when `stop_at_error` (a tree with an error is of no
/// use to the caller, and tree-sitter's error recovery can cost many times the parse).
fn parse_until(
    parser: &mut tree_sitter::Parser,
    text: &[u8],
    old: Option<&tree_sitter::Tree>,
    deadline: Instant,
    stop_at_error: bool,
) -> Option<tree_sitter::Tree> {
    let len = text.len();
    let mut read = |offset: usize, _| if offset < len { &text[offset..] } else { &[][..] };
    let mut past_deadline =
        |state: &tree_sitter::ParseState| (stop_at_error && state.has_error()) || Instant::now() > deadline;
    let options = tree_sitter::ParseOptions::new().progress_callback(&mut past_deadline);
    parser.parse_with_options(&mut read, old, Some(options))
}

/// The symbols of a parsed `text`, or its error ratio when it has too many error nodes.
fn symbols_of(language: Language, tree: &tree_sitter::Tree, text: &[u8]) -> Parsed {
    let root = tree.root_node();
    if root.has_error() {
        let ratio = error_ratio(root);
        if ratio > MAX_ERROR_RATIO {
            return Parsed::ParseErrors(ratio);
        }
    }
    match languages::symbols(language, root, text) {
        Ok(symbols) => Parsed::Symbols(symbols),
        Err(languages::TooDeep) => Parsed::TooDeep,
    }
}

/// The edits that turn the text of `old_lines` into `new` (whose lines are `new_lines`), one per
/// hunk of their line diff, last hunk first: each edit's offsets are then still those of the old
/// text, since only the text after it has changed.
fn edits(
    old_lines: &Lines,
    new: &[u8],
    new_lines: &Lines,
    hunks: &[gix::diff::blob::Hunk],
) -> Vec<tree_sitter::InputEdit> {
    hunks
        .iter()
        .rev()
        .map(|hunk| {
            let start_byte = old_lines.offset(hunk.before.start);
            let old_end_byte = old_lines.offset(hunk.before.end);
            let inserted = &new[new_lines.offset(hunk.after.start)..new_lines.offset(hunk.after.end)];
            let start_position = old_lines.point(hunk.before.start);
            tree_sitter::InputEdit {
                start_byte,
                old_end_byte,
                new_end_byte: start_byte + inserted.len(),
                start_position,
                old_end_position: old_lines.point(hunk.before.end),
                new_end_position: advance(start_position, inserted),
            }
        })
        .collect()
}

/// Where the lines of a text start, as git's line diff splits it (each line with its `\n`, the
/// last one perhaps without).
struct Lines {
    /// The first byte of each line.
    starts: Vec<usize>,
    /// The text's length in bytes.
    len: usize,
    /// Whether the text is empty or ends with a line break.
    ends_with_newline: bool,
}

impl Lines {
    fn of(text: &[u8]) -> Self {
        let mut starts = Vec::with_capacity(text.len() / 32 + 1);
        if !text.is_empty() {
            starts.push(0);
        }
        let mut at = 0;
        while let Some(found) = text[at..].iter().position(|&byte| byte == b'\n') {
            at += found + 1;
            if at < text.len() {
                starts.push(at);
            }
        }
        Self { starts, len: text.len(), ends_with_newline: text.last().is_none_or(|&byte| byte == b'\n') }
    }

    /// The number of lines.
    fn count(&self) -> u32 {
        u32::try_from(self.starts.len()).unwrap_or(u32::MAX)
    }

    /// The byte where line `line` (0-based) starts; the text's end for the line after the last.
    fn offset(&self, line: u32) -> usize {
        self.starts.get(line as usize).copied().unwrap_or(self.len)
    }

    /// The row and column where line `line` starts; for the line after the last, the text's end.
    fn point(&self, line: u32) -> tree_sitter::Point {
        let line = line as usize;
        match self.starts.last() {
            Some(&last_start) if line >= self.starts.len() && !self.ends_with_newline => {
                tree_sitter::Point { row: self.starts.len() - 1, column: self.len - last_start }
            }
            _ => tree_sitter::Point { row: line.min(self.starts.len()), column: 0 },
        }
    }
}

/// The point reached from `start` after `text`.
fn advance(start: tree_sitter::Point, text: &[u8]) -> tree_sitter::Point {
    match text.iter().rposition(|&byte| byte == b'\n') {
        Some(last) => tree_sitter::Point {
            row: start.row + text.iter().filter(|&&byte| byte == b'\n').count(),
            column: text.len() - last - 1,
        },
        None => tree_sitter::Point { row: start.row, column: start.column + text.len() },
    }
}

/// The share of error and missing nodes among all nodes of the tree under `root`.
fn error_ratio(root: tree_sitter::Node<'_>) -> f64 {
    let (mut nodes, mut errors) = (0u64, 0u64);
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        nodes += 1;
        if node.is_error() || node.is_missing() {
            errors += 1;
        }
        if cursor.goto_first_child() || cursor.goto_next_sibling() {
            continue;
        }
        loop {
            if !cursor.goto_parent() {
                return errors as f64 / nodes.max(1) as f64;
            }
            if cursor.goto_next_sibling() {
                break;
            }
        }
    }
}

pub(crate) use languages::tokens;

/// How alike two symbols' bodies are, from 0 to 1: the Dice coefficient of their token bags
/// ([`tokens`]: twice the shared tokens over the sum of their sizes). Two empty bags are alike (1).
pub(crate) fn similarity(left: &[u64], right: &[u64]) -> f64 {
    if left.is_empty() && right.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while i < left.len() && j < right.len() {
        match left[i].cmp(&right[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * shared as f64 / (left.len() + right.len()) as f64
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{Language, Parsed, parse, parse_pair};

    const PYTHON: &str = "import os\n\nclass Client:\n    def __init__(self, url):\n        self.url = url\n\n    \
        def get(self, path):\n        return os.path.join(self.url, path)\n\n\ndef helper(x):\n    if x:\n        \
        return 1\n    return 2\n\n\nclass Server(Client):\n    def serve(self):\n        pass\n";

    const TYPESCRIPT: &str = "import { a } from './a';\n\nexport class Client {\n  constructor(private url: string) \
        {}\n\n  get(path: string): string {\n    return this.url + path;\n  }\n}\n\nexport function helper(x: \
        number): number {\n  return x > 0 ? 1 : 2;\n}\n\ninterface Options {\n  retries: number;\n}\n\nconst LIMIT \
        = 10;\n";

    /// Versions of `text`: its first, middle and last lines edited at once (three hunks far
    /// apart), every seventh line edited or removed in turn (many hunks), a block removed, a
    /// function inserted in the middle and at the start, the middle third replaced, the last line
    /// without its line break and a line added after it without one, and nothing left. None needs
    /// to be valid code: the incremental parse must equal the full one whatever the text.
    pub(super) fn versions(text: &str, function: &str) -> Vec<String> {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let n = lines.len();
        let join = |parts: &[&str]| parts.concat();
        let mut edited: Vec<String> = lines.iter().map(|line| (*line).to_owned()).collect();
        for index in [0, n / 2, n - 1] {
            edited[index] = format!("{} // edited\n", edited[index].trim_end_matches('\n'));
        }
        let mut every_seventh = String::new();
        for (index, line) in lines.iter().enumerate() {
            match index % 14 {
                0 => every_seventh.push_str(&format!("{} // edited\n", line.trim_end_matches('\n'))),
                7 => {}
                _ => every_seventh.push_str(line),
            }
        }
        vec![
            edited.concat(),
            every_seventh,
            text.trim_end_matches('\n').to_owned(),
            format!("{text}tail()"),
            join(&[&lines[..n / 3], &lines[(n / 3 + 8).min(n)..]].concat()),
            join(&[&lines[..n / 2], &[function], &lines[n / 2..]].concat()),
            join(&[&[function], &lines[..]].concat()),
            join(&[&lines[..n / 3], &[function], &lines[2 * n / 3..]].concat()),
            String::new(),
        ]
    }

    /// The line diff of `old` and `new`, as diff.semantic computes it.
    pub(super) fn hunks(old: &[u8], new: &[u8]) -> Vec<gix::diff::blob::Hunk> {
        use gix::diff::blob::{Algorithm, Diff, InternedInput, sources::byte_lines};
        let input = InternedInput::new(byte_lines(old), byte_lines(new));
        let mut diff = Diff::compute(Algorithm::Myers, &input);
        diff.postprocess_lines(&input);
        diff.hunks().collect()
    }

    fn symbol_count(parsed: &Parsed) -> usize {
        match parsed {
            Parsed::Symbols(symbols) => symbols.len(),
            _ => 0,
        }
    }

    fn check(language: Language, text: &str, function: &str) {
        let deadline = Instant::now() + Duration::from_secs(600);
        assert!(symbol_count(&parse(language, text.as_bytes(), deadline)) >= 4, "{language:?}: a source with symbols");
        for version in versions(text, function) {
            for (old, new) in [(text, version.as_str()), (version.as_str(), text)] {
                let hunks = hunks(old.as_bytes(), new.as_bytes());
                let (old_parsed, new_parsed) = parse_pair(language, old.as_bytes(), new.as_bytes(), &hunks, deadline);
                // Compared without printing them: a failure names the sizes, not 1,100 lines of symbols.
                assert!(old_parsed == parse(language, old.as_bytes(), deadline), "{language:?}: the old side");
                assert!(
                    new_parsed == parse(language, new.as_bytes(), deadline),
                    "{language:?}: the new side ({} -> {} bytes) differs from a full parse",
                    old.len(),
                    new.len()
                );
            }
        }
    }

    /// The sources of a parsed language under `root`, by extension (build output and installed
    /// packages left out).
    pub(super) fn sources(root: &std::path::Path) -> Vec<(std::path::PathBuf, Language)> {
        let mut found = Vec::new();
        let mut pending = vec![root.to_path_buf()];
        while let Some(dir) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                let Ok(kind) = entry.file_type() else { continue };
                if kind.is_dir() && !matches!(name.as_str(), "target" | "node_modules" | ".venv" | ".git" | "vendor") {
                    pending.push(path);
                } else if let Some(language) = kind.is_file().then(|| Language::detect(&name, None)).flatten() {
                    found.push((path, language));
                }
            }
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found
    }

    /// The first symbol where two parses differ, for a failure's message.
    fn first_difference(left: &Parsed, right: &Parsed) -> String {
        match (left, right) {
            (Parsed::Symbols(left), Parsed::Symbols(right)) => {
                let at = left.iter().zip(right).position(|(a, b)| a != b).unwrap_or(left.len().min(right.len()));
                format!(
                    "{} and {} symbols, at {at}: {:?} against {:?}",
                    left.len(),
                    right.len(),
                    left.get(at),
                    right.get(at)
                )
            }
            _ => format!("{left:?} against {right:?}"),
        }
    }

    /// Checks [`super::parse_split`] against the whole parse on `text` alone and on two versions
    /// of it; returns whether the text has a cut (else the split parse is the whole one anyway).
    fn check_split(language: Language, text: &[u8]) -> bool {
        let deadline = Instant::now() + Duration::from_secs(600);
        let source = String::from_utf8_lossy(text);
        let (alone, _) = super::parse_split(language, text, None, deadline);
        assert!(alone == parse(language, text, deadline), "{language:?}: the halves of a text differ from it whole");
        let edited = if source.is_empty() { Vec::new() } else { versions(&source, "") };
        for version in edited.into_iter().take(2) {
            let hunks = hunks(source.as_bytes(), version.as_bytes());
            let (old, new) =
                super::parse_split(language, source.as_bytes(), Some((version.as_bytes(), &hunks)), deadline);
            assert!(old == parse(language, source.as_bytes(), deadline), "{language:?}: the old side's halves differ");
            let new = new.expect("a new side");
            let whole = parse(language, version.as_bytes(), deadline);
            assert!(new == whole, "{language:?}: the new side's halves differ: {}", first_difference(&new, &whole));
        }
        super::split::cut(language, text, &super::Lines::of(text), &[]).is_some()
    }

    #[test]
    fn a_file_parsed_in_halves_equals_it_parsed_whole() {
        let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let (mut files, mut cut) = (0, 0);
        for (path, language) in sources(&workspace) {
            let text = std::fs::read(&path).expect("a source file");
            files += 1;
            if check_split(language, &text) {
                cut += 1;
            }
        }
        check_split(Language::Python, PYTHON.as_bytes());
        check_split(Language::TypeScript, TYPESCRIPT.as_bytes());
        // Many of this workspace's sources have a cut (174 of 357 when written): the halves were really
        // parsed, not only the whole files.
        assert!(files > 100 && cut * 3 > files, "{cut} of {files} sources were cut");
    }

    /// A Python class whose method `a` holds, after a blank line, a nested function at the
    /// indentation of a comment that opens the class body: the line looks like a member's start,
    /// and each half parses without an error. Then the same class with `a` moved left by a diff,
    /// so that the old side's member line is nested in the new side.
    #[test]
    fn a_nested_function_is_never_a_cut() {
        let body: String = (0..200).map(|n| format!("        x{n} = {n}\n")).collect();
        let text = format!(
            "class A:\n        # note\n    def a(self):\n{body}\n        def inner():\n            return x0\n{body}        \
             return inner\n\n\ndef top():\n    pass\n"
        );
        assert!(!check_split(Language::Python, text.as_bytes()), "the nested function's line is no cut");
        let old =
            format!("class A:\n        def a(self):\n{body}\n        def b(self):\n{body}\ndef top():\n    pass\n");
        let old_lines = super::Lines::of(old.as_bytes());
        assert!(super::split::cut(Language::Python, old.as_bytes(), &old_lines, &[]).is_some(), "b is a cut");
        let new = old.replacen("        def a(self):", "  def a(self):", 1);
        let deadline = Instant::now() + Duration::from_secs(600);
        let hunks = hunks(old.as_bytes(), new.as_bytes());
        let (old_parsed, new_parsed) =
            super::parse_split(Language::Python, old.as_bytes(), Some((new.as_bytes(), &hunks)), deadline);
        assert!(old_parsed == parse(Language::Python, old.as_bytes(), deadline), "the old side");
        let whole = parse(Language::Python, new.as_bytes(), deadline);
        let new_parsed = new_parsed.expect("a new side");
        assert!(new_parsed == whole, "the new side: {}", first_difference(&new_parsed, &whole));
    }

    /// The long run: every source under `FLUXGIT_CORPUS` (e.g. checkouts of ripgrep, got,
    /// requests and git), parsed in halves and whole. `cargo test -p fluxgit-engine --lib --release
    /// -- --ignored halves_on_a_corpus`.
    #[test]
    #[ignore = "a long run over a corpus named by FLUXGIT_CORPUS"]
    fn halves_on_a_corpus() {
        let root = std::env::var_os("FLUXGIT_CORPUS").expect("FLUXGIT_CORPUS names a directory");
        let (mut files, mut cut) = (0, 0);
        for (path, language) in sources(std::path::Path::new(&root)) {
            let text = std::fs::read(&path).expect("a source file");
            if text.len() > super::MAX_FILE_BYTES {
                continue;
            }
            files += 1;
            eprintln!("{}", path.display());
            if check_split(language, &text) {
                cut += 1;
            }
        }
        eprintln!("{cut} of {files} sources were cut");
    }

    #[test]
    fn the_incremental_parse_of_the_new_side_equals_a_full_parse() {
        // Real-sized Rust: this crate's own semantic diff, 1,100 lines.
        check(Language::Rust, include_str!("../diff/semantic.rs"), "fn inserted(x: u32) -> u32 {\n    x + 1\n}\n");
        check(Language::Python, PYTHON, "def inserted(x):\n    return x\n");
        check(Language::TypeScript, TYPESCRIPT, "function inserted(x: number) {\n  return x;\n}\n");
    }
}

/// Hostile shapes in every grammar (issue 47): nesting far past [`languages::MAX_DEPTH`], one
/// identifier, string or comment hundreds of kilobytes long, and files at the size cap, through
/// the whole parse, the split parse, the parse of parts and the token counter. Each case runs on a
/// thread with a 256 KiB stack, so a walk that recursed once per level would overflow it (and
/// abort the test binary), and must end well within its deadline.
#[cfg(test)]
mod hostile {
    use std::time::{Duration, Instant};

    use proptest::prelude::*;

    use super::{Language, Parsed, parse, parse_pair, parse_parts, parse_split, plan, tests::hunks};

    const LANGUAGES: [Language; 9] = [
        Language::Rust,
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::Go,
        Language::Java,
        Language::C,
        Language::Cpp,
    ];

    /// A text of `language` in `shape` at `size` (a depth, or a length in bytes).
    fn hostile_text(language: Language, shape: usize, size: usize) -> String {
        let nest = |open: &str, close: &str| format!("{}x{}", open.repeat(size), close.repeat(size));
        match shape {
            // Containers the walk descends into.
            0 => match language {
                Language::Rust => nest("mod a {\n", "}\n"),
                Language::Python => {
                    (0..size.min(1200)).map(|level| format!("{}class C:\n", " ".repeat(level))).collect()
                }
                Language::JavaScript | Language::TypeScript | Language::Tsx => nest("namespace a {\n", "}\n"),
                Language::Go => nest("func f() {\n", "}\n"),
                Language::Java => nest("class A {\n", "}\n"),
                Language::C => nest("#if X\n", "#endif\n"),
                Language::Cpp => nest("namespace a {\n", "}\n"),
            },
            // Brackets: expressions, blocks, templates.
            1 => nest("(", ")"),
            2 => nest("{", "}"),
            3 => nest("std::vector<", ">"),
            // One long identifier, string and comment.
            4 => format!("x{} = 1\n", "a".repeat(size * 100)),
            5 => format!("s = \"{}\"\n", "ab".repeat(size * 50)),
            _ => format!("/* {} */\n", "z".repeat(size * 100)),
        }
    }

    /// Runs `check` on a thread with a small stack and fails if it overflows or takes too long.
    fn on_small_stack(check: impl FnOnce() + Send + 'static) {
        let started = Instant::now();
        std::thread::Builder::new().stack_size(256 << 10).spawn(check).expect("a thread").join().expect("no panic");
        assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn hostile_shapes_in_every_grammar_parse_within_bounds(
            language in 0..LANGUAGES.len(),
            shape in 0..7usize,
            size in prop_oneof![0..200usize, 1_000..3_000usize],
        ) {
            let language = LANGUAGES[language];
            on_small_stack(move || {
                let deadline = Instant::now() + Duration::from_secs(10);
                let old = hostile_text(language, shape, size);
                let new = format!("{old}y = 2\n");
                let diff = hunks(old.as_bytes(), new.as_bytes());
                for parsed in [parse(language, old.as_bytes(), deadline)]
                    .into_iter()
                    .chain([parse_pair(language, old.as_bytes(), new.as_bytes(), &diff, deadline).1])
                    .chain(parse_split(language, old.as_bytes(), Some((new.as_bytes(), &diff)), deadline).1)
                {
                    if let Parsed::Symbols(symbols) = &parsed {
                        // Nothing deeper than the bound is listed.
                        for symbol in symbols {
                            let mut depth = 0;
                            let mut parent = symbol.parent;
                            while let Some(index) = parent {
                                depth += 1;
                                parent = symbols[index].parent;
                            }
                            assert!(depth <= super::languages::MAX_DEPTH, "{language:?} depth {depth}");
                        }
                    }
                }
                if let Some(plan) = plan(language, old.as_bytes(), &diff) {
                    let _ = parse_parts(language, &plan, old.as_bytes(), new.as_bytes(), &diff, deadline);
                }
                let tokens = crate::o200k::count(&old);
                assert!(tokens <= old.len().max(1), "{tokens} tokens of {} bytes", old.len());
            });
        }
    }

    /// 2,000 nested Rust modules fall back as too deep; 100 are listed with their qualified names.
    #[test]
    fn containers_past_the_bound_are_too_deep_and_within_it_are_listed() {
        on_small_stack(|| {
            let deadline = Instant::now() + Duration::from_secs(10);
            let deep = hostile_text(Language::Rust, 0, 2_000);
            assert_eq!(parse(Language::Rust, deep.as_bytes(), deadline), Parsed::TooDeep);
            let shallow = format!("{}fn f() {{}}\n{}", "mod a {\n".repeat(100), "}\n".repeat(100));
            let Parsed::Symbols(symbols) = parse(Language::Rust, shallow.as_bytes(), deadline) else {
                panic!("100 levels are parsed")
            };
            assert_eq!(symbols.len(), 101);
            assert_eq!(symbols[100].name, format!("{}f", "a::".repeat(100)));
        });
    }
}
