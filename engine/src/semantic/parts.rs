//! The parts of a file that its diff touches, parsed alone: how a large file with a small change
//! is read without parsing all of it.
//!
//! # Which parts
//!
//! The file is cut where [`super::split`] may cut it: at a line that starts an item after a blank
//! line, the diff touching neither. The cuts between top-level items make top-level pieces; the
//! cuts between the members of a top-level item (a class, an impl, a namespace) make member
//! pieces. A top-level piece with a hunk is parsed whole, unless all its hunks lie in the member
//! pieces of one item: then only those member pieces are parsed, with the item's header (from the
//! top-level piece's first line to the line that opens the body) and its closing line. A Python
//! item has no closing line and ends at its last member, so its last member piece is parsed too,
//! and its body starts at its first member, which ends its signature, so its first one too.
//! The rest of the file is left out of both sides: the same lines, untouched by the diff. Each side
//! is parsed with tree-sitter's included ranges, so its nodes keep their places in the whole file,
//! and the new side as an edit of the old side's tree.
//!
//! # Why the answer is the whole parse's
//!
//! A split parse learns from its first half that the text before the cut ends where an item does;
//! the text before a part is never parsed, so the cut itself must show it. A cut line starts in
//! code, outside every comment and string and at its level of brackets (`lex.rs` scans the whole
//! text for that, about a hundred times cheaper than a parse); the last code before the blank line
//! (comments left out) ends an item: not `=`, `,`, an operator, `\` or a word that needs more
//! (`export`, `pub`, `else`), in JavaScript and TypeScript not a `)` (the head of an `if`), and in
//! Rust, C, C++ and Java a `}`, a `;` or a preprocessor line (in C and C++ not the `}` of a struct,
//! union, enum or class, which a declarator may follow); the item it ends is no decorator,
//! attribute or template head (nor a line that continues one), which belong to the item after the
//! blank line; and the cut line does not start with a word that goes on an item (`else`, `where`,
//! `satisfies`). Each part's symbols are then those the whole parse has there. The parts are kept
//! only when, on both sides:
//! - the tree has no error node;
//! - each top-level piece's first line starts a top-level node;
//! - each item parsed in part closes on its closing line (in Python, in its last member piece),
//!   and each of its member pieces' first lines starts a member of it, at its members' column.
//!
//! The symbols left out are unchanged and the same on both sides, so they pair with each other
//! and change nothing in the answer, with one exception: the diff pairs the symbols of one kind
//! and name in order (the n-th old one with the n-th new one), so a left-out symbol of a name
//! whose count differs between the sides within a part would shift those pairs. The parts are not
//! used when a word of such a name appears anywhere in the text left out, nor when such a name is
//! made up where the text has none (`(anonymous)` for a C++ `namespace {`). Otherwise the file is
//! parsed whole (or split). Tested against the whole parse, symbol by symbol and answer by answer,
//! on this repository's sources, on files made to break each rule (three reviews' worth), and in a
//! long run on public ones.
//!
//! A file with errors of its own, in the text left out, is the exception: tree-sitter's error
//! recovery can swallow symbols far from an error (in C, a function after an `#else` branch that
//! does not parse), and its parts, free of the error, still see them. There the parts give the
//! better answer, and the whole parse's is not theirs.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::time::Instant;

use gix::diff::blob::Hunk;

use super::split::{Cut, cuts, first_member, moved_line};
use super::{Kind, Language, Lines, Symbol, discard, edits, languages, parse_until, parser};

/// Files smaller than this are parsed whole (4 KiB: about half a millisecond of parsing).
pub(crate) const MIN_PARTS_BYTES: usize = 4 * 1024;

/// Largest share of a file's bytes that its parts may hold (0.5); a file whose diff touches more
/// is parsed whole.
const MAX_PARTS_SHARE: f64 = 0.5;

/// The parts of a file's old side to parse, from its diff's hunks ([`plan`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Line ranges (0-based, half-open), in order and apart.
    ranges: Vec<Range<u32>>,
    /// First lines of the top-level pieces parsed after a left-out line.
    tops: Vec<u32>,
    /// The items parsed in part.
    items: Vec<Item>,
    /// The bytes of the parts: about what the parse costs.
    pub(crate) bytes: usize,
}

/// A top-level item parsed in part, in 0-based lines: its header from `header` to `open`, its
/// closing line `end` when `closed` (else `end` is the line after it, as in [`Cut::Inside`]), and
/// the first lines of its member pieces parsed after a left-out line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Item {
    header: u32,
    open: u32,
    end: u32,
    closed: bool,
    starts: Vec<u32>,
}

/// The members of one item that the cuts show: the item's lines and the first line of each of
/// its member pieces but the first.
struct Members {
    open: u32,
    end: u32,
    closed: bool,
    cuts: Vec<u32>,
}

/// The parts of `old` to parse for a diff with `hunks` (module docs); `None` when the file is
/// small, has no cut near the hunks, or the parts would hold more than half its bytes.
pub(crate) fn plan(language: Language, old: &[u8], hunks: &[Hunk]) -> Option<Plan> {
    if old.len() < MIN_PARTS_BYTES || old.len() > super::MAX_FILE_BYTES || hunks.is_empty() {
        return None;
    }
    let lines = Lines::of(old);
    let count = lines.count();
    let mut tops = vec![0];
    let mut items: Vec<(u32, Members)> = Vec::new();
    for cut in cuts(language, old, &lines, hunks) {
        match cut {
            Cut::TopLevel { at } => tops.push(at),
            Cut::Inside { header, open, at, end, closed } => match items.last_mut() {
                Some((last, members)) if *last == header => members.cuts.push(at),
                _ => items.push((header, Members { open, end, closed, cuts: vec![at] })),
            },
        }
    }
    tops.push(count);
    // The lines each hunk stands on: an insertion stands on the line it comes before (no cut is there
    // or on the line after).
    let span = |hunk: &Hunk| {
        let first = hunk.before.start.min(count - 1);
        first..hunk.before.end.max(first + 1)
    };
    let mut plan = Plan { ranges: Vec::new(), tops: Vec::new(), items: Vec::new(), bytes: 0 };
    let mut hunk_idx = 0;
    while hunk_idx < hunks.len() {
        let piece = tops.partition_point(|&top| top <= span(&hunks[hunk_idx]).start) - 1;
        let (start, stop) = (tops[piece], tops[piece + 1]);
        let first_hunk = hunk_idx;
        while hunk_idx < hunks.len() && span(&hunks[hunk_idx]).start < stop {
            hunk_idx += 1;
        }
        let spans: Vec<Range<u32>> = hunks[first_hunk..hunk_idx].iter().map(span).collect();
        if start > 0 {
            plan.tops.push(start);
        }
        let inside = items.iter().find(|(header, members)| {
            (start..stop).contains(header)
                && spans.iter().all(|span| span.start > members.open && span.end <= members.end)
        });
        let parted = inside.is_some_and(|(header, members)| plan_members(&mut plan, start, *header, members, &spans));
        if !parted {
            plan.ranges.push(start..stop);
        }
    }
    // Adjacent ranges become one.
    let mut merged: Vec<Range<u32>> = Vec::with_capacity(plan.ranges.len());
    for range in plan.ranges.drain(..) {
        match merged.last_mut() {
            Some(last) if last.end >= range.start => last.end = last.end.max(range.end),
            _ => merged.push(range),
        }
    }
    plan.ranges = merged;
    plan.bytes =
        plan.ranges.iter().map(|range| lines.offset(range.end).saturating_sub(lines.offset(range.start))).sum();
    (plan.bytes as f64 <= MAX_PARTS_SHARE * old.len() as f64).then_some(plan)
}

/// Adds to `plan` the parts of the top-level piece from line `start` that hold the `spans` (line
/// ranges of hunks), all in the members of the item at `header`; `false` (and nothing added) when
/// the item's lines are out of order (a column-0 line in a Python body taken for its end).
fn plan_members(plan: &mut Plan, start: u32, header: u32, members: &Members, spans: &[Range<u32>]) -> bool {
    // The member pieces: from the line after the header's last to the first cut, between cuts, and
    // from the last cut to the closing line.
    let bounds: Vec<u32> =
        std::iter::once(members.open + 1).chain(members.cuts.iter().copied()).chain([members.end]).collect();
    if start > members.open || bounds.windows(2).any(|pair| pair[0] >= pair[1]) {
        return false;
    }
    let mut wanted = vec![false; bounds.len() - 1];
    for span in spans {
        let piece = bounds.partition_point(|&bound| bound <= span.start).saturating_sub(1).min(wanted.len() - 1);
        wanted[piece] = true;
    }
    if !members.closed {
        // A Python item ends at its last member, and its body starts at its first (which ends the
        // item's signature): without them, the item would end sooner, or its signature later.
        wanted[0] = true;
        wanted[bounds.len() - 2] = true;
    }
    let mut item = Item { header, open: members.open, end: members.end, closed: members.closed, starts: Vec::new() };
    plan.ranges.push(start..members.open + 1);
    for (piece, _) in wanted.iter().enumerate().filter(|(_, wanted)| **wanted) {
        if piece > 0 {
            item.starts.push(bounds[piece]);
        }
        plan.ranges.push(bounds[piece]..bounds[piece + 1]);
    }
    if members.closed {
        plan.ranges.push(members.end..members.end + 1);
    }
    plan.items.push(item);
    true
}

/// The same plan in the new side of the diff with `hunks`, whose texts have `old_count` and
/// `new_count` lines; `None` when a line it stands on was changed (never, for a plan from the
/// same hunks).
fn moved(plan: &Plan, hunks: &[Hunk], old_count: u32, new_count: u32) -> Option<Plan> {
    let start = |line: u32| match line {
        0 => Some(0),
        line if line >= old_count => Some(new_count),
        line => moved_line(hunks, line),
    };
    let end = |line: u32| match line {
        line if line >= old_count => Some(new_count),
        line => moved_line(hunks, line.checked_sub(1)?).map(|moved| moved + 1),
    };
    let ranges = plan.ranges.iter().map(|range| Some(start(range.start)?..end(range.end)?)).collect::<Option<_>>()?;
    let tops = plan.tops.iter().map(|&top| start(top)).collect::<Option<_>>()?;
    let items = plan
        .items
        .iter()
        .map(|item| {
            Some(Item {
                header: start(item.header)?,
                open: start(item.open)?,
                end: start(item.end)?,
                closed: item.closed,
                starts: item.starts.iter().map(|&line| start(line)).collect::<Option<_>>()?,
            })
        })
        .collect::<Option<_>>()?;
    Some(Plan { ranges, tops, items, bytes: plan.bytes })
}

/// One side of the file, with its plan.
struct Side<'a> {
    text: &'a [u8],
    lines: Lines,
    plan: Plan,
}

impl Side<'_> {
    /// The plan's ranges in bytes.
    fn bytes(&self) -> Vec<Range<usize>> {
        self.plan.ranges.iter().map(|range| self.lines.offset(range.start)..self.lines.offset(range.end)).collect()
    }

    /// The plan's ranges as tree-sitter takes them.
    fn ranges(&self) -> Vec<tree_sitter::Range> {
        self.plan
            .ranges
            .iter()
            .map(|range| tree_sitter::Range {
                start_byte: self.lines.offset(range.start),
                end_byte: self.lines.offset(range.end),
                start_point: self.lines.point(range.start),
                end_point: self.lines.point(range.end),
            })
            .collect()
    }

    /// Whether every hunk's lines on this side (`new`: its new lines) lie in one of the ranges.
    fn holds(&self, hunks: &[Hunk], new: bool) -> bool {
        hunks.iter().all(|hunk| {
            let lines = if new { &hunk.after } else { &hunk.before };
            self.plan.ranges.iter().any(|range| range.start <= lines.start && lines.end <= range.end)
        })
    }

    /// The byte where line `line` starts, after its indentation.
    fn indented(&self, line: u32) -> usize {
        let at = self.lines.offset(line);
        at + self.text[at..].iter().take_while(|&&byte| byte == b' ' || byte == b'\t').count()
    }

    /// Whether the tree under `root` has its pieces where the plan says (module docs).
    fn checks(&self, root: tree_sitter::Node<'_>) -> bool {
        let mut cursor = root.walk();
        let children: Vec<tree_sitter::Node<'_>> = root.children(&mut cursor).collect();
        // The first node that ends after byte `at`, and whether it starts there.
        let starts_at = |nodes: &[tree_sitter::Node<'_>], at: usize| {
            nodes
                .iter()
                .find(|node| node.end_byte() > at && node.is_named() && !node.kind().contains("comment"))
                .is_some_and(|node| node.start_byte() == at)
        };
        if !self.plan.tops.iter().all(|&top| starts_at(&children, self.lines.offset(top))) {
            return false;
        }
        self.plan.items.iter().all(|item| {
            let header = self.lines.offset(item.header);
            let Some(node) = children.iter().find(|child| child.end_byte() > header) else { return false };
            let closes = if item.closed {
                self.lines.offset(item.end) < node.end_byte() && node.end_byte() <= self.lines.offset(item.end + 1)
            } else {
                let last = item.starts.last().map_or(item.open + 1, |&last| last);
                self.lines.offset(last) < node.end_byte() && node.end_byte() <= self.lines.offset(item.end)
            };
            let Some(member) = first_member(*node, item.open as usize) else { return false };
            // The members' parent; in Python, the `block` that first_member stops at is the body.
            let body = if member.kind() == "block" { Some(member) } else { member.parent() };
            let Some(body) = body else { return false };
            let member = if member.kind() == "block" {
                let mut cursor = member.walk();
                let first = member.named_children(&mut cursor).find(|child| !child.kind().contains("comment"));
                let Some(first) = first else { return false };
                first
            } else {
                member
            };
            let column = member.start_position().column;
            let mut cursor = body.walk();
            let members: Vec<tree_sitter::Node<'_>> = body.children(&mut cursor).collect();
            closes
                && item.starts.iter().all(|&line| {
                    let at = self.indented(line);
                    at - self.lines.offset(line) == column && starts_at(&members, at)
                })
        })
    }
}

/// Parses the parts of `old` that `plan` names (from [`plan`] with the same `hunks`), then the
/// same parts of `new` as an edit of them.
///
/// Returns the symbols of the old side's parts and of the new side's: what the whole parses give
/// there, and all the diff needs (module docs). `None` when a check fails or `deadline` passes:
/// then the file is to be parsed whole.
pub(crate) fn parse_parts(
    language: Language,
    plan: &Plan,
    old: &[u8],
    new: &[u8],
    hunks: &[Hunk],
    deadline: Instant,
) -> Option<(Vec<Symbol>, Vec<Symbol>)> {
    if new.len() > super::MAX_FILE_BYTES {
        return None;
    }
    let old = Side { text: old, lines: Lines::of(old), plan: plan.clone() };
    let new_lines = Lines::of(new);
    let new_plan = moved(plan, hunks, old.lines.count(), new_lines.count())?;
    let new = Side { text: new, lines: new_lines, plan: new_plan };
    if !old.holds(hunks, false) || !new.holds(hunks, true) {
        return None;
    }
    let mut parser = parser(language)?;
    parser.set_included_ranges(&old.ranges()).ok()?;
    let mut old_tree = parse_until(&mut parser, old.text, None, deadline, true)?;
    let clean = |tree: &tree_sitter::Tree, side: &Side<'_>| {
        let root = tree.root_node();
        (!root.has_error() && side.checks(root)).then(|| languages::symbols(language, root, side.text).ok()).flatten()
    };
    let Some(old_symbols) = clean(&old_tree, &old) else {
        discard(old_tree);
        return None;
    };
    for edit in edits(&old.lines, new.text, &new.lines, hunks) {
        old_tree.edit(&edit);
    }
    let new_tree = match parser.set_included_ranges(&new.ranges()) {
        Ok(()) => parse_until(&mut parser, new.text, Some(&old_tree), deadline, true),
        Err(_) => None,
    };
    discard(old_tree);
    let new_tree = new_tree?;
    let new_symbols = clean(&new_tree, &new);
    discard(new_tree);
    let new_symbols = new_symbols?;
    pairs_hold(&old_symbols, &new_symbols, &old, &new).then_some((old_symbols, new_symbols))
}

/// Whether the symbols left out could not change how the diff pairs those of the parts: no word
/// of a name whose count differs between the sides in one part appears in the text left out.
fn pairs_hold(old: &[Symbol], new: &[Symbol], old_side: &Side<'_>, new_side: &Side<'_>) -> bool {
    let (old_bytes, new_bytes) = (old_side.bytes(), new_side.bytes());
    let part = |bytes: &[Range<usize>], symbol: &Symbol| bytes.partition_point(|range| range.end <= symbol.bytes.start);
    let mut counts: HashMap<(usize, Kind, &str), (i64, &str)> = HashMap::new();
    for symbol in old {
        counts
            .entry((part(&old_bytes, symbol), symbol.kind, symbol.name.as_str()))
            .or_insert((0, symbol.leaf.as_str()))
            .0 += 1;
    }
    for symbol in new {
        counts
            .entry((part(&new_bytes, symbol), symbol.kind, symbol.name.as_str()))
            .or_insert((0, symbol.leaf.as_str()))
            .0 -= 1;
    }
    let mut uneven = counts.values().filter(|(count, _)| *count != 0).map(|(_, leaf)| *leaf).peekable();
    if uneven.peek().is_none() {
        return true;
    }
    // A name made up where the text has none (`(anonymous)` for `namespace {`) cannot be looked for.
    let named = |symbol: &Symbol, text: &[u8]| {
        let own: HashSet<&[u8]> = words(&text[symbol.bytes.clone()]).collect();
        words(symbol.leaf.as_bytes()).all(|word| own.contains(word))
    };
    let made_up = |symbols: &[Symbol], bytes: &[Range<usize>], text: &[u8]| {
        symbols.iter().any(|symbol| {
            let key = (part(bytes, symbol), symbol.kind, symbol.name.as_str());
            counts.get(&key).is_some_and(|(count, _)| *count != 0) && !named(symbol, text)
        })
    };
    if made_up(old, &old_bytes, old_side.text) || made_up(new, &new_bytes, new_side.text) {
        return false;
    }
    // The words of the text left out.
    let mut left_out: HashSet<&[u8]> = HashSet::new();
    let mut from = 0;
    for range in &old_bytes {
        left_out.extend(words(&old_side.text[from..range.start]));
        from = range.end;
    }
    left_out.extend(words(&old_side.text[from..]));
    uneven.all(|leaf| {
        let mut any = false;
        words(leaf.as_bytes()).all(|word| {
            any = true;
            !left_out.contains(word)
        }) && any
    })
}

/// The words of `text`: its runs of letters, digits, `_`, `$` and bytes of non-ASCII characters.
fn words(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    text.split(|&byte| !(byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$' || byte >= 0x80))
        .filter(|word| !word.is_empty())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::super::tests::{hunks, sources};
    use super::super::{Language, Lines, Parsed, Symbol, parse};
    use super::{moved, parse_parts, plan};

    /// Versions of `text` with one small change at a quarter, half and three quarters of its
    /// lines: a blank line inserted, the line repeated, the line removed.
    fn small_changes(text: &str) -> Vec<String> {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let mut versions = Vec::new();
        for at in [lines.len() / 4, lines.len() / 2, 3 * lines.len() / 4] {
            let (before, after) = lines.split_at(at);
            versions.push([before, &["\n"], after].concat().concat());
            versions.push([before, &after[..1.min(after.len())], after].concat().concat());
            versions.push([before, &after[1.min(after.len())..]].concat().concat());
        }
        versions
    }

    /// Whether `part` is the symbols of `whole` that meet the byte `ranges` (each equal but for
    /// its container's place in the list, compared by name).
    fn as_whole(part: &[Symbol], whole: &[Symbol], ranges: &[std::ops::Range<usize>]) -> Result<(), String> {
        let meets = |symbol: &Symbol| {
            ranges.iter().any(|range| symbol.bytes.start < range.end && range.start < symbol.bytes.end)
        };
        let expected: Vec<&Symbol> = whole.iter().filter(|symbol| meets(symbol)).collect();
        let parent = |list: &[Symbol], symbol: &Symbol| symbol.parent.map(|parent| list[parent].name.clone());
        if part.len() != expected.len() {
            let names = |list: &[&Symbol]| {
                list.iter()
                    .map(|symbol| format!("{} {}-{}", symbol.name, symbol.start_line, symbol.end_line))
                    .collect::<Vec<_>>()
            };
            return Err(format!(
                "{:?} in the parts, {:?} in the whole parse there ({ranges:?})",
                names(&part.iter().collect::<Vec<_>>()),
                names(&expected)
            ));
        }
        for (part_symbol, whole_symbol) in part.iter().zip(expected) {
            let same = Symbol { parent: whole_symbol.parent, ..part_symbol.clone() } == *whole_symbol
                && parent(part, part_symbol) == parent(whole, whole_symbol);
            if !same {
                return Err(format!("{part_symbol:?} against {whole_symbol:?}"));
            }
        }
        Ok(())
    }

    /// Checks [`parse_parts`] on `text` changed a little in several ways, both ways; returns how
    /// many of the changes had their parts parsed (the others need the whole parse).
    fn check_parts(language: Language, text: &[u8]) -> usize {
        let deadline = Instant::now() + Duration::from_secs(600);
        let source = String::from_utf8_lossy(text).into_owned();
        let mut parsed = 0;
        for version in small_changes(&source) {
            for (old, new) in [(source.as_bytes(), version.as_bytes()), (version.as_bytes(), source.as_bytes())] {
                let hunks = hunks(old, new);
                let Some(plan) = plan(language, old, &hunks) else { continue };
                let Some((old_part, new_part)) = parse_parts(language, &plan, old, new, &hunks, deadline) else {
                    continue;
                };
                let (old_lines, new_lines) = (Lines::of(old), Lines::of(new));
                let new_plan = moved(&plan, &hunks, old_lines.count(), new_lines.count()).expect("a moved plan");
                for (part, text, lines, plan) in
                    [(&old_part, old, &old_lines, &plan), (&new_part, new, &new_lines, &new_plan)]
                {
                    if super::super::has_errors(language, text) {
                        // Error recovery can lose symbols far from an error that the parts still see.
                        continue;
                    }
                    let Parsed::Symbols(whole) = parse(language, text, deadline) else {
                        panic!("{language:?}: a whole parse without errors has symbols");
                    };
                    let ranges: Vec<_> =
                        plan.ranges.iter().map(|range| lines.offset(range.start)..lines.offset(range.end)).collect();
                    if let Err(difference) = as_whole(part, &whole, &ranges) {
                        panic!("{language:?}, {} bytes: {difference}", text.len());
                    }
                }
                parsed += 1;
            }
        }
        parsed
    }

    /// A Python class changed in one method: its parts pass the checks (the class's first member
    /// is its `block`, whose parent is the class, not the body).
    #[test]
    fn a_python_class_is_parsed_in_part() {
        let method = |name: String| format!("    def {name}(self, a):\n        x = a + 1\n        return x\n\n");
        let methods: String = (0..160).map(|i| method(format!("m{i}"))).collect();
        let old = format!("import os\n\n\nclass A:\n{methods}\ndef tail():\n    pass\n");
        let new = old.replace("m80(self, a):\n        x = a + 1", "m80(self, a):\n        x = a + 2");
        let (old, new) = (old.as_bytes(), new.as_bytes());
        let hunks = hunks(old, new);
        let plan = plan(Language::Python, old, &hunks).expect("a plan");
        let deadline = Instant::now() + Duration::from_secs(600);
        assert!(parse_parts(Language::Python, &plan, old, new, &hunks, deadline).is_some(), "{plan:?}");
    }

    #[test]
    fn the_parts_of_a_file_have_the_whole_parse_symbols() {
        let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let (mut files, mut parsed) = (0, 0);
        for (path, language) in sources(&workspace) {
            let text = std::fs::read(&path).expect("a source file");
            files += 1;
            parsed += check_parts(language, &text);
        }
        eprintln!("{parsed} changes of {files} sources had their parts parsed");
        // Most changes to this workspace's larger sources have their parts parsed.
        assert!(files > 100 && parsed > files, "{parsed} changes of {files} sources had their parts parsed");
    }

    /// The long run: every source under `FLUXGIT_CORPUS` (e.g. `git archive HEAD` of ripgrep, got,
    /// requests, tokio and git), changed a little and parsed in parts. `cargo test -p
    /// fluxgit-engine --lib --release -- --ignored parts_on_a_corpus`.
    #[test]
    #[ignore = "a long run over a corpus named by FLUXGIT_CORPUS"]
    fn parts_on_a_corpus() {
        let root = std::env::var_os("FLUXGIT_CORPUS").expect("FLUXGIT_CORPUS names a directory");
        let (mut files, mut parsed) = (0, 0);
        for (path, language) in sources(std::path::Path::new(&root)) {
            let text = std::fs::read(&path).expect("a source file");
            if text.len() > super::super::MAX_FILE_BYTES {
                continue;
            }
            files += 1;
            eprintln!("{}", path.display());
            parsed += check_parts(language, &text);
        }
        eprintln!("{parsed} changes of {files} sources had their parts parsed");
    }
}
