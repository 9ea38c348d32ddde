//! Symbols of a source file from its tree-sitter syntax tree: the plumbing of `diff.semantic`.
//!
//! A file's [`Language`] comes from its `linguist-language` or `diff` attribute when set, else from
//! its extension ([`Language::detect`]). [`parse`] reads one side of a file into its [`Symbol`]s:
//! functions and methods, types (struct, enum, union, class, interface, trait, type alias), impl
//! blocks, modules and namespaces, and top-level constants. Each symbol has a qualified name built
//! from its containers (`Flags::new` inside `impl Flags`, `Client.get` inside `class Client`), a
//! line range, its declaration text up to the body (the signature) and a bag of hashed tokens that
//! stands for its body when renames and moves are matched by similarity ([`similarity`]).
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
//! the bytes and the language, so callers cache it by blob id. Each language is a cargo feature of
//! the engine (`lang-rust`, `lang-python`, ...); without it its files are `unsupported_language`.

mod languages;

use std::time::Instant;

use serde::Serialize;

pub(crate) use languages::Language;

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
    /// Hashes of its tokens other than its own name, sorted: what [`similarity`] compares.
    pub tokens: Vec<u64>,
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
}

/// Parses `text` as `language` and lists its symbols, giving up at `deadline`.
pub(crate) fn parse(language: Language, text: &[u8], deadline: Instant) -> Parsed {
    if text.len() > MAX_FILE_BYTES {
        return Parsed::TooLarge;
    }
    let Some(mut parser) = parser(language) else { return Parsed::ParseErrors(1.0) };
    match tree(&mut parser, text, None, deadline) {
        Some(tree) => symbols_of(language, &tree, text),
        None => Parsed::TimeBudget,
    }
}

/// Parses two versions of one file: `old` from scratch, then `new` as an edit of `old`'s tree.
///
/// tree-sitter's incremental parsing reuses every subtree outside the edit (here the span from the
/// first to the last byte that differs), so the second parse of a small change costs a few percent
/// of the first: 0.18 ms where a full parse takes 3.5 ms, on a 37 KB TypeScript file. The result
/// is what a full parse gives (tested). A side that is too large, or an old side cut short by
/// `deadline`, is parsed on its own.
pub(crate) fn parse_pair(language: Language, old: &[u8], new: &[u8], deadline: Instant) -> (Parsed, Parsed) {
    if old.len() > MAX_FILE_BYTES || new.len() > MAX_FILE_BYTES {
        return (parse(language, old, deadline), parse(language, new, deadline));
    }
    let Some(mut parser) = parser(language) else { return (Parsed::ParseErrors(1.0), Parsed::ParseErrors(1.0)) };
    let Some(mut old_tree) = tree(&mut parser, old, None, deadline) else {
        return (Parsed::TimeBudget, parse(language, new, deadline));
    };
    let old_parsed = symbols_of(language, &old_tree, old);
    old_tree.edit(&edit(old, new));
    let new_parsed = match tree(&mut parser, new, Some(&old_tree), deadline) {
        Some(tree) => symbols_of(language, &tree, new),
        None => Parsed::TimeBudget,
    };
    (old_parsed, new_parsed)
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
    let len = text.len();
    let mut read = |offset: usize, _| if offset < len { &text[offset..] } else { &[][..] };
    let mut past_deadline = |_: &tree_sitter::ParseState| Instant::now() > deadline;
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
    Parsed::Symbols(languages::symbols(language, root, text))
}

/// The edit that turns `old` into `new`: the bytes between their common prefix and their common
/// suffix replaced.
fn edit(old: &[u8], new: &[u8]) -> tree_sitter::InputEdit {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..].iter().rev().zip(new[prefix..].iter().rev()).take_while(|(a, b)| a == b).count();
    let (old_end, new_end) = (old.len() - suffix, new.len() - suffix);
    let point = |text: &[u8], offset: usize| {
        let before = &text[..offset];
        let row = before.iter().filter(|&&byte| byte == b'\n').count();
        let column = offset - before.iter().rposition(|&byte| byte == b'\n').map_or(0, |newline| newline + 1);
        tree_sitter::Point { row, column }
    };
    tree_sitter::InputEdit {
        start_byte: prefix,
        old_end_byte: old_end,
        new_end_byte: new_end,
        start_position: point(old, prefix),
        old_end_position: point(old, old_end),
        new_end_position: point(new, new_end),
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

/// How alike two symbols' bodies are, from 0 to 1: the Dice coefficient of their token bags (twice
/// the shared tokens over the sum of their sizes). Two empty bags are alike (1).
pub(crate) fn similarity(a: &Symbol, b: &Symbol) -> f64 {
    let (left, right) = (&a.tokens, &b.tokens);
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

    /// Versions of `text`: its first, middle and last lines edited at once (one edit spanning the
    /// file), a block removed, a function inserted in the middle and at the start, the middle third
    /// replaced, and nothing left. None needs to be valid code: the incremental parse must equal
    /// the full one whatever the text.
    fn versions(text: &str, function: &str) -> Vec<String> {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let n = lines.len();
        let join = |parts: &[&str]| parts.concat();
        let mut edited: Vec<String> = lines.iter().map(|line| (*line).to_owned()).collect();
        for index in [0, n / 2, n - 1] {
            edited[index] = format!("{} // edited\n", edited[index].trim_end_matches('\n'));
        }
        vec![
            edited.concat(),
            join(&[&lines[..n / 3], &lines[(n / 3 + 8).min(n)..]].concat()),
            join(&[&lines[..n / 2], &[function], &lines[n / 2..]].concat()),
            join(&[&[function], &lines[..]].concat()),
            join(&[&lines[..n / 3], &[function], &lines[2 * n / 3..]].concat()),
            String::new(),
        ]
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
                let (old_parsed, new_parsed) = parse_pair(language, old.as_bytes(), new.as_bytes(), deadline);
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

    #[test]
    fn the_incremental_parse_of_the_new_side_equals_a_full_parse() {
        // Real-sized Rust: this crate's own semantic diff, 1,100 lines.
        check(Language::Rust, include_str!("../diff/semantic.rs"), "fn inserted(x: u32) -> u32 {\n    x + 1\n}\n");
        check(Language::Python, PYTHON, "def inserted(x):\n    return x\n");
        check(Language::TypeScript, TYPESCRIPT, "function inserted(x: number) {\n  return x;\n}\n");
    }
}
