//! One file parsed as two halves at once, on two threads: how a call with a single file to parse
//! uses a second core.
//!
//! # Where a file is cut
//!
//! At a line that starts an item, after a blank line, unchanged by the diff, in code (outside
//! every comment and string, at its item's level of brackets: `lex.rs`), after a line that does
//! not go on past it ([`cuts`]), chosen so that the halves are of about the same size ([`Cut`]):
//! - between two top-level items (the line starts in the first column): the halves are the lines
//!   before and the lines from there;
//! - between two members of a top-level item (a class, an impl, a namespace, a function's body: a
//!   line in the first column that opens a body, indented lines, then a closing line in the first
//!   column or, in Python, the next top-level line). The second half is the item's header, the
//!   members from the cut and the closing line; the first half is all the rest.
//!
//! Each half is parsed with tree-sitter's included ranges, so its nodes keep their places in the
//! whole file: the old side from scratch, then the new side as an edit of it. The second half's
//! symbols from the cut on go between the first half's, inside the first half's container (whose
//! extent is the larger of the two).
//!
//! # Why the result is the whole parse's
//!
//! A cut between two items leaves an LR parser where it would be anyway: every item before it is
//! complete, and no token spans the blank line. A cut anywhere else (inside a string or a comment
//! that spans lines, an unclosed bracket, an `#if`, a member nested deeper) leaves one half with
//! something unclosed or out of place: an error in its tree. So the halves are kept only when
//! neither tree has an error node; otherwise that side is parsed whole, after the halves' wasted
//! work (half a parse, on both cores). A file with errors of its own always ends up parsed whole.
//! Tested against the whole parse on this repository's sources, and in a long run on public ones.

use std::ops::Range;
use std::time::Instant;

use gix::diff::blob::Hunk;

use super::{Language, Lines, Parsed, Symbol, discard, edits, languages, parse, parse_pair, parser};

/// Files with both sides smaller than this are parsed whole (8 KiB: about 1 ms of parsing, where a
/// second thread costs some 50 µs).
pub(crate) const MIN_SPLIT_BYTES: usize = 8 * 1024;

/// Largest share of a file's bytes that the larger half may parse (0.7); a file with no better cut
/// is parsed whole.
const MAX_HALF_SHARE: f64 = 0.7;

/// Words that go on the item before them when they start a line (`satisfies`, `else`, `where`):
/// such a line is no cut.
const CONTINUATIONS: &[&[u8]] = &[
    b"satisfies",
    b"instanceof",
    b"in",
    b"as",
    b"extends",
    b"implements",
    b"where",
    b"else",
    b"elif",
    b"except",
    b"finally",
    b"catch",
    b"for",
    b"throws",
    b"requires",
];

/// Words that need more after them when they end a line (`export`, `pub`, `static`): the item
/// goes on past a blank line after one.
const MODIFIERS: &[&[u8]] = &[
    b"export",
    b"default",
    b"async",
    b"static",
    b"declare",
    b"abstract",
    b"public",
    b"private",
    b"protected",
    b"readonly",
    b"override",
    b"pub",
    b"unsafe",
    b"extern",
    b"inline",
    b"virtual",
    b"final",
    b"const",
    b"let",
    b"var",
    b"function",
    b"class",
    b"new",
    b"typeof",
    b"await",
    b"yield",
    b"type",
    b"interface",
    b"enum",
    b"namespace",
    b"module",
    b"struct",
    b"fn",
    b"def",
    b"else",
    b"do",
    b"void",
    b"delete",
];

/// How the first line of a decorator, an attribute or a template head starts: such an item belongs
/// to the item after it, even past a blank line.
const HEADS: &[&[u8]] = &[b"@", b"#[", b"[[", b"template", b"__attribute__", b"__declspec"];

/// Lines a header may span, from its first line to the one that opens its body.
const MAX_HEADER_LINES: u32 = 8;

/// Where a file is cut, in 0-based line numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cut {
    /// Between two top-level items: the second half is the lines from `at`.
    TopLevel { at: u32 },
    /// Between two members of the top-level item whose header runs from line `header` to line
    /// `open` and whose body ends before line `end`: the second half is the header, the lines
    /// `at..end` and, when `closed`, the closing line `end`. `end` is the number of lines when
    /// the item runs to the end of the file (Python).
    Inside { header: u32, open: u32, at: u32, end: u32, closed: bool },
}

impl Cut {
    /// The first line that only the second half parses.
    fn at(self) -> u32 {
        match self {
            Cut::TopLevel { at } | Cut::Inside { at, .. } => at,
        }
    }

    /// The line ranges of each half, of a text of `lines` lines.
    fn halves(self, lines: u32) -> [Vec<Range<u32>>; 2] {
        match self {
            Cut::TopLevel { at } => [std::iter::once(0..at).collect(), std::iter::once(at..lines).collect()],
            Cut::Inside { header, open, at, end, closed } => {
                let tail = if closed { end + 1 } else { end };
                [vec![0..at, end..lines], vec![header..open + 1, at..tail]]
            }
        }
    }

    /// The same cut in the new side, whose lines the diff's `hunks` moved; `None` when a hunk
    /// touches a line the cut stands on.
    fn moved(self, hunks: &[Hunk], old_lines: u32, new_lines: u32) -> Option<Cut> {
        let map = |line: u32| moved_line(hunks, line);
        Some(match self {
            Cut::TopLevel { at } => Cut::TopLevel { at: map(at)? },
            Cut::Inside { header, open, at, end, closed } => Cut::Inside {
                header: map(header)?,
                open: map(open)?,
                at: map(at)?,
                end: if end == old_lines { new_lines } else { map(end)? },
                closed,
            },
        })
    }
}

/// Where the old line `line` is in the new side, or `None` when a hunk removes or replaces it.
pub(super) fn moved_line(hunks: &[Hunk], line: u32) -> Option<u32> {
    let mut moved = line;
    for hunk in hunks {
        if hunk.before.start > line {
            break;
        }
        if hunk.before.end > line {
            return None;
        }
        moved = line - hunk.before.end + hunk.after.end;
    }
    Some(moved)
}

/// Parses `old` and, when given, `new` (with the hunks of their line diff) as [`parse`] and
/// [`parse_pair`] do, each side cut in two halves parsed on two threads.
///
/// Returns the old side's parse and the new side's (`None` when `new` is not given). The result is
/// what a whole parse gives: a side whose halves show an error is parsed whole (module docs).
pub(crate) fn parse_split(
    language: Language,
    old: &[u8],
    new: Option<(&[u8], &[Hunk])>,
    deadline: Instant,
) -> (Parsed, Option<Parsed>) {
    let whole = || match new {
        Some((new, hunks)) => {
            let (old, new) = parse_pair(language, old, new, hunks, deadline);
            (old, Some(new))
        }
        None => (parse(language, old, deadline), None),
    };
    if old.len() > super::MAX_FILE_BYTES || new.is_some_and(|(new, _)| new.len() > super::MAX_FILE_BYTES) {
        return whole();
    }
    let old_lines = Lines::of(old);
    let hunks = new.map_or(&[][..], |(_, hunks)| hunks);
    let Some(old_cut) = cut(language, old, &old_lines, hunks) else { return whole() };
    let new_side = match new {
        Some((text, hunks)) => {
            let lines = Lines::of(text);
            match old_cut.moved(hunks, old_lines.count(), lines.count()) {
                // The edits are the whole file's: both halves apply all of them to their trees.
                Some(cut) => Some(Side { edits: edits(&old_lines, text, &lines, hunks), text, lines, cut }),
                None => return whole(),
            }
        }
        None => None,
    };
    let old_side = Side { text: old, lines: old_lines, cut: old_cut, edits: Vec::new() };
    let (first, second) = std::thread::scope(|scope| {
        let second = scope.spawn(|| half(language, &old_side, new_side.as_ref(), 1, deadline));
        let first = half(language, &old_side, new_side.as_ref(), 0, deadline);
        // A parse never panics (tree-sitter's errors are values); were it to, its side is parsed whole.
        (first, second.join().unwrap_or_default())
    });
    let joined = |first: Option<Vec<Symbol>>, second: Option<Vec<Symbol>>, side: &Side<'_>| {
        join(first?, second?, side.lines.offset(side.cut.at()))
    };
    let Some(old_symbols) = joined(first.old, second.old, &old_side) else { return whole() };
    let new_parsed = new_side.as_ref().map(|side| match joined(first.new, second.new, side) {
        Some(symbols) => Parsed::Symbols(symbols),
        None => parse(language, side.text, deadline),
    });
    (Parsed::Symbols(old_symbols), new_parsed)
}

/// One side of a file and where it is cut.
struct Side<'a> {
    text: &'a [u8],
    lines: Lines,
    cut: Cut,
    /// The edits of the old side's tree that make it this side's (none on the old side itself).
    edits: Vec<tree_sitter::InputEdit>,
}

impl Side<'_> {
    /// tree-sitter's ranges of half `which` (0 or 1), empty ranges left out.
    fn ranges(&self, which: usize) -> Vec<tree_sitter::Range> {
        self.cut.halves(self.lines.count())[which]
            .iter()
            .filter(|lines| lines.start < lines.end)
            .map(|lines| tree_sitter::Range {
                start_byte: self.lines.offset(lines.start),
                end_byte: self.lines.offset(lines.end),
                start_point: self.lines.point(lines.start),
                end_point: self.lines.point(lines.end),
            })
            .collect()
    }
}

impl Side<'_> {
    /// Whether half `which`'s tree, under `root`, has the item it was cut in where the cut says:
    /// the node that holds the item's first line ends on its closing line in both halves (in
    /// Python, before the cut in the first half and after it in the second, as its last node).
    /// Without this, a text whose braces do not pair as its indentation says could close the item
    /// early in one half and still parse without an error (C takes many statements for
    /// declarations).
    fn encloses(&self, root: tree_sitter::Node<'_>, which: usize) -> bool {
        let Cut::Inside { header, open, at, end, closed } = self.cut else { return true };
        let start = self.lines.offset(header);
        let mut cursor = root.walk();
        let mut children = root.children(&mut cursor).skip_while(|child| child.end_byte() <= start);
        let Some(item) = children.next() else { return false };
        let item_end = item.end_byte();
        let ends = match (closed, which) {
            (true, _) => self.lines.offset(end) < item_end && item_end <= self.lines.offset(end + 1),
            (false, 0) => item_end <= self.lines.offset(at),
            (false, _) => self.lines.offset(at) < item_end && children.next().is_none(),
        };
        // The cut line starts where the item's first member does: in Python a deeper line (a nested
        // function) parses without an error in both halves, but is not a member.
        let cut_line = &self.text[self.lines.offset(at)..];
        let column = cut_line.iter().take_while(|&&byte| byte == b' ' || byte == b'\t').count();
        ends && first_member(item, open as usize).is_some_and(|member| member.start_position().column == column)
    }
}

/// The first node under `node` that starts after row `open` (the header's last) and is not a
/// comment, nor a node whose first child is one (a body that starts with a comment): the item's
/// first member. A depth-first search in source order with a stack of its own, so a file's
/// nesting never nests calls.
pub(super) fn first_member(node: tree_sitter::Node<'_>, open: usize) -> Option<tree_sitter::Node<'_>> {
    let is_comment = |node: tree_sitter::Node<'_>| node.kind().contains("comment");
    let mut cursor = node.walk();
    // The nodes left to look at, the next one last.
    let mut stack: Vec<tree_sitter::Node<'_>> = node.children(&mut cursor).collect();
    stack.reverse();
    fn descend<'tree>(stack: &mut Vec<tree_sitter::Node<'tree>>, child: tree_sitter::Node<'tree>) {
        let at = stack.len();
        stack.extend(child.children(&mut child.walk()));
        stack[at..].reverse();
    }
    while let Some(child) = stack.pop() {
        if child.start_position().row > open {
            if !child.is_named() || is_comment(child) {
                continue;
            }
            if child.child(0).is_some_and(is_comment) {
                descend(&mut stack, child);
                continue;
            }
            return Some(child);
        }
        if child.end_position().row > open {
            descend(&mut stack, child);
        }
    }
    None
}

/// The symbols of one half of each side, each `None` when its tree has an error (or was not made).
#[derive(Default)]
struct Half {
    old: Option<Vec<Symbol>>,
    new: Option<Vec<Symbol>>,
}

/// Parses half `which` of `old` from scratch, then of `new` as an edit of it.
fn half(language: Language, old: &Side<'_>, new: Option<&Side<'_>>, which: usize, deadline: Instant) -> Half {
    let Some(mut parser) = parser(language) else { return Half::default() };
    let clean = |tree: &tree_sitter::Tree, side: &Side<'_>| {
        let root = tree.root_node();
        (!root.has_error() && side.encloses(root, which))
            .then(|| languages::symbols(language, root, side.text).ok())
            .flatten()
    };
    let mut parse = |side: &Side<'_>, previous: Option<&tree_sitter::Tree>| {
        parser.set_included_ranges(&side.ranges(which)).ok()?;
        super::parse_until(&mut parser, side.text, previous, deadline, true)
    };
    let Some(mut old_tree) = parse(old, None) else { return Half::default() };
    let mut half = Half { old: clean(&old_tree, old), new: None };
    if let (Some(_), Some(new)) = (&half.old, new) {
        for edit in &new.edits {
            old_tree.edit(edit);
        }
        if let Some(new_tree) = parse(new, Some(&old_tree)) {
            half.new = clean(&new_tree, new);
            discard(new_tree);
        }
    }
    discard(old_tree);
    half
}

/// Where to cut `text` (module docs), its lines unchanged by `hunks`; `None` when no cut leaves
/// both halves under [`MAX_HALF_SHARE`] of the bytes.
pub(super) fn cut(language: Language, text: &[u8], lines: &Lines, hunks: &[Hunk]) -> Option<Cut> {
    let count = lines.count();
    let bytes = |ranges: &[Range<u32>]| {
        ranges.iter().map(|range| lines.offset(range.end) - lines.offset(range.start)).sum::<usize>()
    };
    let mut best: Option<(usize, Cut)> = None;
    for cut in cuts(language, text, lines, hunks) {
        let [first, second] = cut.halves(count);
        let larger = bytes(&first).max(bytes(&second));
        if best.is_none_or(|(smallest, _)| larger < smallest) {
            best = Some((larger, cut));
        }
    }
    let (larger, cut) = best?;
    (larger as f64 <= MAX_HALF_SHARE * text.len() as f64).then_some(cut)
}

/// Every line of `text` where it could be cut (module docs), in order, none of them or their
/// items' headers and closing lines changed by `hunks`.
pub(super) fn cuts(language: Language, text: &[u8], lines: &Lines, hunks: &[Hunk]) -> Vec<Cut> {
    let count = lines.count();
    let line = |index: u32| &text[lines.offset(index)..lines.offset(index + 1)];
    // Each line's indentation and whether it is blank, read once.
    let indents: Vec<usize> =
        (0..count).map(|index| line(index).iter().take_while(|&&byte| byte == b' ' || byte == b'\t').count()).collect();
    let blanks: Vec<bool> = (0..count).map(|index| line(index).iter().all(u8::is_ascii_whitespace)).collect();
    let indent = |index: u32| indents[index as usize];
    let blank = |index: u32| blanks[index as usize];
    let top = |index: u32| !blank(index) && indent(index) == 0;
    let first_byte = |index: u32| line(index).get(indent(index)).copied();
    let starts_item = |index: u32| first_byte(index).is_some_and(|byte| byte.is_ascii_alphabetic() || byte == b'_');
    let opens = |index: u32| {
        let trimmed = line(index).trim_ascii_end();
        trimmed.ends_with(if language == Language::Python { b":" } else { b"{" })
    };
    let untouched = |from: u32, to: u32| hunks.iter().all(|hunk| hunk.before.end < from || hunk.before.start > to);
    // The nearest top-level line (non-blank, in the first column) before each line, and at or after it.
    let mut top_above = Vec::with_capacity(count as usize);
    let mut last_top = None;
    for index in 0..count {
        top_above.push(last_top);
        if top(index) {
            last_top = Some(index);
        }
    }
    let mut top_from = vec![None; count as usize + 1];
    for index in (0..count).rev() {
        top_from[index as usize] = if top(index) { Some(index) } else { top_from[index as usize + 1] };
    }
    // How many blocks are open before each line at the top level: braces opened and closed in the first
    // column (`namespace x {`, `extern "C" {`, a function) and, in C and C++, `#if` ... `#endif`. A
    // top-level cut inside one would leave both halves with an error at their ends: half a parse wasted.
    let preprocessor = matches!(language, Language::C | Language::Cpp);
    let mut open_blocks = Vec::with_capacity(count as usize);
    let mut depth = 0usize;
    for index in 0..count {
        open_blocks.push(depth);
        let text = line(index).trim_ascii();
        if top(index) && text.starts_with(b"}") {
            depth = depth.saturating_sub(1);
        }
        if top(index) && text.ends_with(b"{") {
            depth += 1;
        }
        if preprocessor && text.starts_with(b"#") {
            let directive = text[1..].trim_ascii_start();
            if directive.starts_with(b"if") {
                depth += 1;
            } else if directive.starts_with(b"endif") {
                depth = depth.saturating_sub(1);
            }
        }
    }
    let comment = |index: u32| matches!(first_byte(index), Some(b'#' | b'/' | b'*'));
    // Python measures a tab as up to 8 columns where tree-sitter counts a byte: no cut among tabs.
    let tabbed = |index: u32| language == Language::Python && line(index)[..indent(index)].contains(&b'\t');
    let mut found = Vec::new();
    // Where each line starts (in code at a depth of brackets, or in a comment or a string) and where
    // its code ends.
    let scanned = super::lex::scan(language, text, lines);
    let in_code = |index: u32, depth: u32| scanned.get(index as usize).and_then(|line| line.start) == Some(depth);
    let is_word = |byte: &u8| byte.is_ascii_alphanumeric() || *byte == b'_';
    // Whether the item before a cut at line `at` (of bracket depth `depth`) ends before the blank line.
    // The last line of code before it (comments left out) does not go on past its end (`=`, `,`, an
    // operator, `\`, a modifier such as `export`); in Rust, C, C++ and Java it ends an item (`}`, `;`, a
    // preprocessor line). And the line that starts that item is not a decorator, an attribute or a
    // template head, which belong to the item after the blank line.
    let ends_before = |at: u32, depth: u32| {
        let Some((last, end)) = (0..at).rev().find_map(|index| scanned[index as usize].last.map(|end| (index, end)))
        else {
            return true;
        };
        let byte = text[end];
        if b"=,([{\\+-*/%&|^<>!?:.~".contains(&byte) {
            return false;
        }
        // In JavaScript and TypeScript a `)` may close the head of an `if`, `for` or `while` whose body
        // is the item after the blank line.
        let script = matches!(language, Language::JavaScript | Language::TypeScript | Language::Tsx);
        if script && byte == b')' {
            return false;
        }
        let braced = matches!(language, Language::Rust | Language::C | Language::Cpp | Language::Java);
        let preprocessor =
            matches!(language, Language::C | Language::Cpp) && line(last).trim_ascii_start().starts_with(b"#");
        if braced && !matches!(byte, b'}' | b';') && !preprocessor {
            return false;
        }
        let word_start = text[..=end].iter().rposition(|byte| !is_word(byte)).map_or(0, |index| index + 1);
        if MODIFIERS.contains(&&text[word_start..=end]) {
            return false;
        }
        let mut head = (0..=last)
            .rev()
            .find(|&index| in_code(index, depth) && scanned[index as usize].last.is_some())
            .unwrap_or(0);
        // A line that goes on the one before it (`\` there; `.b` or `(x)` here) is not a head.
        while head > 0 {
            let here = line(head).trim_ascii_start();
            let goes_on = line(head - 1).trim_ascii_end().ends_with(b"\\")
                || here.starts_with(b".")
                || here.starts_with(b"?.")
                || here.starts_with(b"(");
            if !goes_on {
                break;
            }
            head -= 1;
        }
        let head = line(head).trim_ascii_start();
        // In C and C++ a `}` ends a function, but not a struct, union, enum or class body, which a
        // declarator (or a function's name) may follow. A function's head has a `(`; such a body's
        // head names its kind and has none.
        let type_body = byte == b'}'
            && matches!(language, Language::C | Language::Cpp)
            && !head.contains(&b'(')
            && head.split(|byte| !is_word(byte)).any(|word| matches!(word, b"struct" | b"union" | b"enum" | b"class"));
        !type_body && !HEADS.iter().any(|prefix| head.starts_with(prefix))
    };
    // A line that goes on the item before it, whatever stands between them.
    let continues = |index: u32| {
        let text = line(index).trim_ascii_start();
        let word: &[u8] = &text[..text.iter().take_while(|&&byte| byte.is_ascii_alphanumeric()).count()];
        CONTINUATIONS.contains(&word)
    };
    for at in 1..count {
        if !blank(at - 1) || !starts_item(at) || !untouched(at - 1, at) || continues(at) {
            continue;
        }
        let cut = if indent(at) == 0 {
            if open_blocks[at as usize] > 0 || !in_code(at, 0) || !ends_before(at, 0) {
                continue;
            }
            Cut::TopLevel { at }
        } else {
            let Some(header) = top_above[at as usize] else { continue };
            if !starts_item(header) {
                continue;
            }
            let Some(open) = (header..at.min(header + MAX_HEADER_LINES)).find(|&index| opens(index)) else { continue };
            // The cut is at the level of the body's first line that is not a comment: a member, not a
            // line nested deeper (the trees check this again, on both sides: `Side::encloses`).
            let Some(first) = (open + 1..at + 1).find(|&index| !blank(index) && !comment(index)) else { continue };
            if indent(first) != indent(at) || tabbed(first) || tabbed(at) || !untouched(header, open) {
                continue;
            }
            let end = top_from[at as usize + 1];
            let (end, closed) = match (language, end) {
                (Language::Python, None) => (count, false),
                (Language::Python, Some(end)) if starts_item(end) || first_byte(end) == Some(b'@') => (end, false),
                (_, Some(end)) if first_byte(end) == Some(b'}') => (end, true),
                _ => continue,
            };
            if end < count && !untouched(end, end) {
                continue;
            }
            // The body's members lie one bracket deep (in Python, none), its closing line too.
            let body = u32::from(language != Language::Python);
            let closes = !closed || in_code(end, body);
            if !in_code(header, 0) || !in_code(at, body) || !closes || !ends_before(at, body) {
                continue;
            }
            Cut::Inside { header, open, at, end, closed }
        };
        found.push(cut);
    }
    found
}

/// The symbols of a whole file from those of its halves: the second half's symbols from byte
/// `at` on go between the first half's, their containers in the second half (its copy of the
/// item it was cut in) replaced by the first half's, whose extent is the larger of the two. `None`
/// when a container of the second half has no counterpart in the first.
fn join(first: Vec<Symbol>, second: Vec<Symbol>, at: usize) -> Option<Vec<Symbol>> {
    let mut first = first;
    let place = first.iter().position(|symbol| symbol.bytes.start >= at).unwrap_or(first.len());
    // Where each symbol of the second half goes: its own symbols after the first half's before the cut,
    // its copies of containers onto their counterparts in the first half.
    let mut target: Vec<usize> = Vec::with_capacity(second.len());
    let mut own = 0;
    for symbol in &second {
        if symbol.bytes.start >= at {
            target.push(place + own);
            own += 1;
            continue;
        }
        let counterpart = first[..place].iter().rposition(|candidate| {
            candidate.kind == symbol.kind && candidate.name == symbol.name && candidate.start_line <= symbol.start_line
        })?;
        let kept = &mut first[counterpart];
        kept.end_line = kept.end_line.max(symbol.end_line);
        kept.bytes.end = kept.bytes.end.max(symbol.bytes.end);
        target.push(counterpart);
    }
    let mut joined: Vec<Symbol> = Vec::with_capacity(first.len() + own);
    let shift = |parent: Option<usize>| parent.map(|parent| if parent >= place { parent + own } else { parent });
    let mut rest = first.split_off(place);
    joined.extend(first);
    joined.extend(second.into_iter().filter(|symbol| symbol.bytes.start >= at).map(|mut symbol| {
        symbol.parent = symbol.parent.map(|parent| target[parent]);
        symbol
    }));
    for symbol in &mut rest {
        symbol.parent = shift(symbol.parent);
    }
    joined.extend(rest);
    Some(joined)
}
