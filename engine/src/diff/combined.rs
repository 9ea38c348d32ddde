//! Git's dense combined diff (`diff --cc`) of an unmerged path: the work-tree file against the
//! conflict's sides (stage 2, ours, first; stage 3, theirs, second), as `git diff` prints it during
//! a stopped merge.
//!
//! A port of git's `combine-diff.c` (`show_patch_diff` with `--cc`): each side is diffed against
//! the result with no context; lines of the result get a mark per side that lacks them (`+` in that
//! side's column), lines a side had and the result lost hang before the next result line (`-` in
//! that side's column), the lost lines of the second side are merged into the first's by their
//! longest common subsequence (a line both sides lost is shown once with two `-`), and a stretch of
//! changes is shown only when it is interesting: the result differs from both sides there, or the
//! sides differ among themselves (a hunk taken verbatim from one side is left out). Hunks get three
//! lines of context, `@@@ -a,b -c,d +e,f @@@` headers and git's hunk comment (the last line above
//! the hunk that starts with a letter, `_` or `$`, cut at 40 characters exactly as git cuts it). A
//! binary side or result gives `Binary files differ`; a deleted work-tree file gives the header and
//! no hunks.
//!
//! Deviation: bytes that are not UTF-8 in the compared files are replaced with U+FFFD (the patch is
//! text); git prints them raw.

use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};
use gix::diff::blob::{Algorithm, Diff, InternedInput};
use gix::index::entry::Mode;

use super::section::{Section, quote};

/// Lines of context around each change, as git's default `-U3`.
const CONTEXT: usize = 3;

/// One side of the conflict (stage 2 or 3).
pub(crate) struct Parent {
    /// The stage's mode.
    pub(crate) mode: Mode,
    /// The stage's blob id.
    pub(crate) id: ObjectId,
    /// Its content as git diffs it, or `None` when binary.
    pub(crate) content: Option<Vec<u8>>,
}

/// The merge result: the work-tree file.
pub(crate) enum Merged {
    /// The file is not in the work tree.
    Deleted,
    /// The file, with its mode and content as git diffs it (`None` when binary).
    File { mode: Mode, content: Option<Vec<u8>> },
}

/// The `diff --cc` section of `path`: its header (`diff --cc`, `index`, modes, `---`/`+++`) and its
/// `@@@` hunks.
pub(crate) fn render(
    path: &BStr,
    parents: &[Parent],
    merged: &Merged,
    algorithm: Algorithm,
    quoting: crate::quote::Style,
) -> Section {
    let hash_kind = parents.first().map_or(gix::hash::Kind::Sha1, |parent| parent.id.kind());
    let short = |id: &ObjectId| id.to_string()[..7].to_owned();
    let mut header = format!("diff --cc {}\n", quote("", path, quoting));
    let ids: Vec<String> = parents.iter().map(|parent| short(&parent.id)).collect();
    header.push_str(&format!("index {}..{}\n", ids.join(","), short(&ObjectId::null(hash_kind))));
    let result_mode = match merged {
        Merged::Deleted => None,
        Merged::File { mode, .. } => Some(*mode),
    };
    if parents.iter().any(|parent| Some(parent.mode) != result_mode) {
        let modes: Vec<String> = parents.iter().map(|parent| mode_text(parent.mode)).collect();
        match result_mode {
            None => header.push_str(&format!("deleted file mode {}\n", modes.join(","))),
            Some(mode) => header.push_str(&format!("mode {}..{}\n", modes.join(","), mode_text(mode))),
        }
    }
    let binary = match merged {
        Merged::File { content: None, .. } => true,
        _ => parents.iter().any(|parent| parent.content.is_none()),
    };
    if binary {
        header.push_str("Binary files differ\n");
        return Section { header, hunks: Vec::new() };
    }
    header.push_str(&format!("--- {}\n", quote("a/", path, quoting)));
    match merged {
        Merged::Deleted => {
            header.push_str("+++ /dev/null\n");
            Section { header, hunks: Vec::new() }
        }
        Merged::File { content, .. } => {
            header.push_str(&format!("+++ {}\n", quote("b/", path, quoting)));
            let result = content.as_deref().unwrap_or_default();
            let mut lines = Lines::new(result, parents.len());
            for (n, parent) in parents.iter().enumerate() {
                match parents[..n].iter().position(|earlier| earlier.id == parent.id) {
                    Some(same) => lines.reuse(n, same),
                    None => lines.combine(n, parent.content.as_deref().unwrap_or_default(), result, algorithm),
                }
            }
            lines.make_hunks();
            Section { header, hunks: lines.dump() }
        }
    }
}

fn mode_text(mode: Mode) -> String {
    format!("{:06o}", mode.bits())
}

/// A line some sides had and the result lost, with the sides that lost it (bit `n` for side `n`).
#[derive(Debug, Clone)]
struct Lost {
    line: Vec<u8>,
    parents: u64,
}

/// A line of the result (or, at index `cnt`, the end of the file where trailing lost lines hang).
#[derive(Debug, Clone, Default)]
struct Line<'a> {
    /// Lost lines shown before this one, merged over the sides.
    lost: Vec<Lost>,
    /// Lost lines of the side being merged in.
    pending: Vec<Lost>,
    /// The line without its newline; `None` past the end.
    text: Option<&'a [u8]>,
    /// Bit `n`: side `n` lacks this line; bit `parents`: shown; bit `parents + 1`: do not show the
    /// lost lines before it (a leading context line).
    flag: u64,
    /// Per side, the side's line number where a hunk starting here starts.
    side_line: Vec<usize>,
}

/// The result's lines and what every side says about them (git's `sline` array, `cnt + 2` entries).
struct Lines<'a> {
    lines: Vec<Line<'a>>,
    cnt: usize,
    parents: usize,
}

impl<'a> Lines<'a> {
    fn new(result: &'a [u8], parents: usize) -> Self {
        let mut texts: Vec<&[u8]> = result.split(|byte| *byte == b'\n').collect();
        if result.ends_with(b"\n") || result.is_empty() {
            texts.pop();
        }
        let cnt = texts.len();
        let mut lines = vec![Line { side_line: vec![0; parents], ..Line::default() }; cnt + 2];
        for (line, text) in lines.iter_mut().zip(texts) {
            line.text = Some(text);
        }
        Self { lines, cnt, parents }
    }

    fn all_mask(&self) -> u64 {
        (1 << self.parents) - 1
    }

    fn mark(&self) -> u64 {
        1 << self.parents
    }

    fn no_pre_delete(&self) -> u64 {
        2 << self.parents
    }

    /// git's `combine_diff`: side `n` against the result.
    fn combine(&mut self, n: usize, side: &[u8], result: &[u8], algorithm: Algorithm) {
        let nmask = 1u64 << n;
        let input = InternedInput::new(
            gix::diff::blob::sources::byte_lines(side),
            gix::diff::blob::sources::byte_lines(result),
        );
        let mut diff = Diff::compute(algorithm, &input);
        diff.postprocess_lines(&input);
        for hunk in diff.hunks() {
            let bucket = hunk.after.start as usize;
            for token in hunk.before.clone() {
                let line = &input.interner[input.before[token as usize]];
                let line = line.strip_suffix(b"\n").unwrap_or(line);
                self.lines[bucket].pending.push(Lost { line: line.to_vec(), parents: nmask });
            }
            for added in hunk.after {
                self.lines[added as usize].flag |= nmask;
            }
        }
        let mut side_line = 1;
        for lno in 0..=self.cnt {
            let line = &mut self.lines[lno];
            line.side_line[n] = side_line;
            if !line.pending.is_empty() {
                let pending = std::mem::take(&mut line.pending);
                coalesce(&mut line.lost, pending, n);
            }
            side_line += line.lost.iter().filter(|lost| lost.parents & nmask != 0).count();
            if lno < self.cnt && line.flag & nmask == 0 {
                side_line += 1;
            }
        }
        self.lines[self.cnt + 1].side_line[n] = side_line;
    }

    /// git's `reuse_combine_diff`: side `n` is the same blob as side `same`.
    fn reuse(&mut self, n: usize, same: usize) {
        let (imask, jmask) = (1u64 << n, 1u64 << same);
        for line in &mut self.lines {
            line.side_line[n] = line.side_line[same];
            for lost in &mut line.lost {
                if lost.parents & jmask != 0 {
                    lost.parents |= imask;
                }
            }
            if line.flag & jmask != 0 {
                line.flag |= imask;
            }
        }
    }

    fn interesting(&self, lno: usize) -> bool {
        self.lines[lno].flag & self.all_mask() != 0 || !self.lines[lno].lost.is_empty()
    }

    /// git's `adjust_hunk_tail`.
    fn adjust_hunk_tail(&self, hunk_begin: usize, i: usize) -> usize {
        if hunk_begin < i && self.lines[i - 1].flag & self.all_mask() == 0 { i - 1 } else { i }
    }

    /// git's `find_next`.
    fn find_next(&self, mut i: usize, look_for_uninteresting: bool) -> usize {
        let mark = self.mark();
        while i <= self.cnt {
            let marked = self.lines[i].flag & mark != 0;
            if marked != look_for_uninteresting {
                return i;
            }
            i += 1;
        }
        i
    }

    /// git's `make_hunks` with `dense` (`--cc`).
    fn make_hunks(&mut self) {
        let (all_mask, mark, cnt) = (self.all_mask(), self.mark(), self.cnt);
        for lno in 0..=cnt {
            if self.interesting(lno) {
                self.lines[lno].flag |= mark;
            } else {
                self.lines[lno].flag &= !mark;
            }
        }
        let mut i = 0;
        while i <= cnt {
            while i <= cnt && self.lines[i].flag & mark == 0 {
                i += 1;
            }
            if cnt < i {
                break;
            }
            let hunk_begin = i;
            let mut j = i + 1;
            while j <= cnt {
                if self.lines[j].flag & mark == 0 {
                    let mut lookahead = self.adjust_hunk_tail(hunk_begin, j);
                    lookahead = (lookahead + CONTEXT).min(cnt + 1);
                    let mut contin = false;
                    while lookahead != 0 {
                        lookahead -= 1;
                        if j > lookahead {
                            break;
                        }
                        if self.lines[lookahead].flag & mark != 0 {
                            contin = true;
                            break;
                        }
                    }
                    if !contin {
                        break;
                    }
                    j = lookahead;
                }
                j += 1;
            }
            let hunk_end = j;
            let mut same_diff = 0;
            let mut has_interesting = false;
            'lines: for line in &self.lines[i..hunk_end] {
                let this_diff = line.flag & all_mask;
                if this_diff != 0 {
                    if same_diff == 0 {
                        same_diff = this_diff;
                    } else if same_diff != this_diff {
                        has_interesting = true;
                        break;
                    }
                }
                for lost in &line.lost {
                    if same_diff == 0 {
                        same_diff = lost.parents;
                    } else if same_diff != lost.parents {
                        has_interesting = true;
                        break 'lines;
                    }
                }
            }
            if !has_interesting && same_diff != all_mask {
                for line in &mut self.lines[hunk_begin..hunk_end] {
                    line.flag &= !mark;
                }
            }
            i = hunk_end;
        }
        self.give_context();
    }

    /// git's `give_context`: paint context around the shown lines, joining groups closer than the
    /// context.
    fn give_context(&mut self) {
        let (mark, no_pre_delete, cnt) = (self.mark(), self.no_pre_delete(), self.cnt);
        let mut i = self.find_next(0, false);
        if cnt < i {
            return;
        }
        while i <= cnt {
            let mut j = i.saturating_sub(CONTEXT);
            while j < i {
                if self.lines[j].flag & mark == 0 {
                    self.lines[j].flag |= no_pre_delete;
                }
                self.lines[j].flag |= mark;
                j += 1;
            }
            loop {
                j = self.find_next(i, true);
                if cnt < j {
                    return;
                }
                let mut k = self.find_next(j, false);
                j = self.adjust_hunk_tail(i, j);
                if k < j + CONTEXT {
                    while j < k {
                        self.lines[j].flag |= mark;
                        j += 1;
                    }
                    i = k;
                    continue;
                }
                i = k;
                k = (j + CONTEXT).min(cnt + 1);
                while j < k {
                    self.lines[j].flag |= mark;
                    j += 1;
                }
                break;
            }
        }
    }

    /// git's `dump_sline`: the hunks as text.
    fn dump(&self) -> Vec<String> {
        let (mark, no_pre_delete, cnt) = (self.mark(), self.no_pre_delete(), self.cnt);
        let markers = "@".repeat(self.parents + 1);
        let mut hunks = Vec::new();
        let mut lno = 0;
        loop {
            let mut comment = None;
            while lno <= cnt && self.lines[lno].flag & mark == 0 {
                if let Some(text) = self.lines[lno].text.filter(|text| is_comment_line(text)) {
                    comment = Some(text);
                }
                lno += 1;
            }
            if cnt < lno {
                break;
            }
            let mut hunk_end = lno + 1;
            while hunk_end <= cnt && self.lines[hunk_end].flag & mark != 0 {
                hunk_end += 1;
            }
            let mut result_lines = hunk_end - lno;
            if cnt < hunk_end {
                result_lines -= 1;
            }
            let mut text = markers.clone();
            for n in 0..self.parents {
                let start = self.lines[lno].side_line[n];
                let end = self.lines[hunk_end].side_line[n];
                text.push_str(&format!(" -{start},{}", end - start));
            }
            text.push_str(&format!(" +{},{result_lines} {markers}", lno + 1));
            if let Some(comment) = comment {
                text.push_str(&comment_text(comment));
            }
            text.push('\n');
            while lno < hunk_end {
                let line = &self.lines[lno];
                lno += 1;
                if line.flag & no_pre_delete == 0 {
                    for lost in &line.lost {
                        for n in 0..self.parents {
                            text.push(if lost.parents & (1 << n) != 0 { '-' } else { ' ' });
                        }
                        text.push_str(&lost.line.to_str_lossy());
                        text.push('\n');
                    }
                }
                if cnt < lno {
                    break;
                }
                for n in 0..self.parents {
                    text.push(if line.flag & (1 << n) != 0 { '+' } else { ' ' });
                }
                text.push_str(&line.text.unwrap_or_default().to_str_lossy());
                text.push('\n');
            }
            hunks.push(text);
        }
        hunks
    }
}

/// git's `hunk_comment_line`: a line starting with a letter, `_` or `$`.
fn is_comment_line(text: &[u8]) -> bool {
    text.first().is_some_and(|byte| byte.is_ascii_alphabetic() || *byte == b'_' || *byte == b'$')
}

/// The hunk comment as git prints it: a space and the first 40 bytes up to, not including, the last
/// one that is not white space (git's own cut), or nothing.
fn comment_text(text: &[u8]) -> String {
    let mut comment_end = 0;
    for (idx, byte) in text.iter().take(40).enumerate() {
        if *byte == 0 {
            break;
        }
        if !byte.is_ascii_whitespace() && *byte != 0x0b {
            comment_end = idx;
        }
    }
    if comment_end == 0 { String::new() } else { format!(" {}", text[..comment_end].to_str_lossy()) }
}

/// git's `coalesce_lines`: merges side `parent`'s lost lines into `base` by their longest common
/// subsequence.
fn coalesce(base: &mut Vec<Lost>, new: Vec<Lost>, parent: usize) {
    if new.is_empty() {
        return;
    }
    if base.is_empty() {
        *base = new;
        return;
    }
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Direction {
        Match,
        Base,
        New,
    }
    let (base_len, new_len) = (base.len(), new.len());
    let width = new_len + 1;
    let mut lcs = vec![0usize; (base_len + 1) * width];
    let mut directions = vec![Direction::Base; (base_len + 1) * width];
    // Row 0: only new lines are left to take.
    directions[1..width].fill(Direction::New);
    for i in 1..=base_len {
        for j in 1..=new_len {
            let at = i * width + j;
            if base[i - 1].line == new[j - 1].line {
                lcs[at] = lcs[at - width - 1] + 1;
                directions[at] = Direction::Match;
            } else if lcs[at - 1] >= lcs[at - width] {
                lcs[at] = lcs[at - 1];
                directions[at] = Direction::New;
            } else {
                lcs[at] = lcs[at - width];
                directions[at] = Direction::Base;
            }
        }
    }
    let (mut i, mut j) = (base_len, new_len);
    while i != 0 || j != 0 {
        match directions[i * width + j] {
            Direction::Match => {
                base[i - 1].parents |= 1 << parent;
                i -= 1;
                j -= 1;
            }
            // The new line goes right after base line `i - 1` (or first), before the ones inserted already.
            Direction::New => {
                base.insert(i, new[j - 1].clone());
                j -= 1;
            }
            Direction::Base => i -= 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lost(lines: &[&str], parents: u64) -> Vec<Lost> {
        lines.iter().map(|line| Lost { line: line.as_bytes().to_vec(), parents }).collect()
    }

    #[test]
    fn lost_lines_of_both_sides_are_shown_once() {
        let mut base = lost(&["a", "b", "c"], 1);
        coalesce(&mut base, lost(&["x", "b", "y"], 2), 1);
        let shown: Vec<(String, u64)> =
            base.iter().map(|lost| (String::from_utf8_lossy(&lost.line).into_owned(), lost.parents)).collect();
        let expected = [("a", 1), ("x", 2), ("b", 3), ("c", 1), ("y", 2)];
        assert_eq!(shown, expected.map(|(line, parents)| (line.to_owned(), parents)));
    }

    #[test]
    fn hunk_comments_are_cut_as_git_cuts_them() {
        assert_eq!(comment_text(b"int main(void)"), " int main(void");
        assert_eq!(comment_text(b"x"), "");
        assert!(is_comment_line(b"_start") && !is_comment_line(b" indented") && !is_comment_line(b""));
    }
}
