//! `o200k_base` token counts of ASCII texts without tiktoken's regex.
//!
//! tiktoken cuts a text into pieces with a backtracking regex (`tiktoken_rs::O200K_BASE_PAT_STR`), then encodes each
//! piece on its own by byte-pair merges. The regex costs about 1,500 instructions a byte: most of a first call's
//! count (45% of a cold 50-commit `repo.history`). Answers are nearly always ASCII, where the pattern's classes are
//! simple (letters `A-Z`/`a-z`, digits, the six whitespace bytes, everything else "other"), so [`count`] cuts ASCII
//! texts with [`piece_end`], which decides what the regex's leftmost-first alternation decides, and merges each
//! piece with tiktoken's own [`tiktoken_rs::byte_pair_split`] over the same ranks; any other text goes to tiktoken.
//! A test compares the pieces with the regex's and the counts with tiktoken's on 100,000 drawn texts.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

/// o200k's ordinary tokens (no special tokens: ordinary encoding never produces them), bytes to rank, rebuilt from
/// tiktoken's decoder (its encoder is private) by [`preload`]: about 200,000 entries, 14 MB.
static RANKS: OnceLock<FxHashMap<Vec<u8>, tiktoken_rs::Rank>> = OnceLock::new();

/// Builds tiktoken's tables, then the ranks [`count`] uses (about 0.1 s of CPU each in release); for the start-up
/// thread. Until the ranks are built, [`count`] counts with tiktoken alone, so no call waits for them.
pub(crate) fn preload() {
    let bpe = tiktoken_rs::o200k_base_singleton();
    RANKS.get_or_init(|| {
        let special = bpe.special_tokens();
        // o200k's ranks are 0..199,998 plus two special tokens above; a rank without a token is skipped.
        let mut ranks = FxHashMap::with_capacity_and_hasher(200_000, Default::default());
        for rank in 0..=200_100 {
            if let Ok(bytes) = bpe.decode_bytes(&[rank])
                && !std::str::from_utf8(&bytes).is_ok_and(|text| special.contains(text))
            {
                ranks.insert(bytes, rank);
            }
        }
        ranks
    });
}

/// The number of `o200k_base` tokens of `text`, as `o200k_base().encode_ordinary(text).len()`.
pub(crate) fn count(text: &str) -> usize {
    let bpe = tiktoken_rs::o200k_base_singleton();
    let Some(ranks) = RANKS.get().filter(|_| text.is_ascii()) else {
        return bpe.encode_ordinary(text).len();
    };
    pieces(text.as_bytes())
        .map(|piece| {
            if piece.len() == 1 || ranks.contains_key(piece) {
                1
            } else {
                tiktoken_rs::byte_pair_split(piece, ranks).len()
            }
        })
        .sum()
}

/// The pieces o200k's pattern cuts the ASCII `text` into, in order ([`piece_end`]).
fn pieces(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    std::iter::from_fn(move || {
        (start < text.len()).then(|| {
            let end = piece_end(text, start);
            let piece = &text[start..end];
            start = end;
            piece
        })
    })
}

/// Whitespace as the pattern's `\s` matches it in ASCII: space, tab, line feed, vertical tab, form feed, carriage
/// return.
fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn is_line_break(byte: u8) -> bool {
    byte == b'\r' || byte == b'\n'
}

/// Neither letter, digit nor whitespace (`[^\s\p{L}\p{N}]` in ASCII).
fn is_other(byte: u8) -> bool {
    !byte.is_ascii_alphanumeric() && !is_space(byte)
}

/// The end of the first run of bytes from `at` that satisfy `class`.
fn run_end(text: &[u8], at: usize, class: impl Fn(u8) -> bool) -> usize {
    text[at..].iter().position(|&byte| !class(byte)).map_or(text.len(), |length| at + length)
}

/// Where the piece that o200k's pattern matches at `start` of the ASCII `text` ends (`start < text.len()`). The
/// pattern's alternatives, tried in order at `start` (the first that matches wins; inside one, quantifiers are
/// greedy and give back only what a later part needs):
/// 1. `[^\r\n\p{L}\p{N}]?[\p{Lu}…]*[\p{Ll}…]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` and
/// 2. `[^\r\n\p{L}\p{N}]?[\p{Lu}…]+[\p{Ll}…]*(suffix)?`: an optional leading byte (not a line break, letter or
///    digit), the upper-case run, then the lower-case run (1 needs one lower-case letter; 2, tried only when 1
///    fails, takes the upper-case run alone), then an optional `'s`-like suffix;
/// 3. `\p{N}{1,3}`: up to three digits;
/// 4. ` ?[^\s\p{L}\p{N}]+[\r\n/]*`: an optional space, a run of other bytes, then line breaks and `/`;
/// 5. `\s*[\r\n]+`: the whitespace run up to its last line break;
/// 6. `\s+(?!\S)`: the whitespace run, less its last byte when a non-space follows;
/// 7. `\s+`: what is left, a single whitespace byte before a non-space.
fn piece_end(text: &[u8], start: usize) -> usize {
    let first = text[start];
    let leads = !first.is_ascii_alphanumeric() && !is_line_break(first);
    let letters = if leads { start + 1 } else { start };
    if text.get(letters).is_some_and(u8::is_ascii_alphabetic) {
        let upper_end = run_end(text, letters, |byte| byte.is_ascii_uppercase());
        let end = run_end(text, upper_end, |byte| byte.is_ascii_lowercase());
        return suffix_end(text, end);
    }
    if first.is_ascii_digit() {
        return run_end(text, start, |byte| byte.is_ascii_digit()).min(start + 3);
    }
    let others =
        if first == b' ' && text.get(start + 1).is_some_and(|&byte| is_other(byte)) { start + 1 } else { start };
    if is_other(text[others]) {
        let end = run_end(text, others, is_other);
        return run_end(text, end, |byte| is_line_break(byte) || byte == b'/');
    }
    // Whitespace.
    let end = run_end(text, start, is_space);
    if let Some(last_break) = text[start..end].iter().rposition(|&byte| is_line_break(byte)) {
        start + last_break + 1
    } else if end < text.len() && end - start >= 2 {
        end - 1
    } else {
        end
    }
}

/// `end` plus the length of a `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `end`.
fn suffix_end(text: &[u8], end: usize) -> usize {
    if text.get(end) != Some(&b'\'') {
        return end;
    }
    let lower = |at: usize| text.get(at).map(u8::to_ascii_lowercase);
    match (lower(end + 1), lower(end + 2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => end + 2,
        (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => end + 3,
        _ => end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces as tiktoken's regex (`regex`: its pattern) cuts them.
    fn regex_pieces<'t>(regex: &fancy_regex::Regex, text: &'t str) -> Vec<&'t str> {
        regex.find_iter(text).map(|piece| piece.expect("no backtrack limit").as_str()).collect()
    }

    fn our_pieces(text: &str) -> Vec<&str> {
        pieces(text.as_bytes()).map(|piece| std::str::from_utf8(piece).expect("ASCII")).collect()
    }

    /// Drawn ASCII texts (every byte class the pattern distinguishes, the suffixes in both cases, runs of spaces and
    /// line breaks, JSON and `git status` shapes) are cut into the regex's pieces and counted as tiktoken counts
    /// them. A rule off by one (up to 4 digits, no `'ll` suffix) fails it.
    #[test]
    fn ascii_pieces_and_counts_equal_tiktokens() {
        let alphabet = [
            "a", "b", "Z", "Q", "'", "'s", "'S", "'t", "'re", "'VE", "'m", "'ll", "'d", "'x", "1", "0", "42", " ",
            "  ", "\t", "\n", "\r", "\r\n", "\u{b}", "\u{c}", "\u{0}", "\u{7f}", "/", "\"", "{", "}", ":", ",", "-",
            ".", "_", "(", "#", "ab", "The", "HEAD", "sha", "x9", "1a3e64c", "a...b/c",
        ];
        let mut draw = crate::budget::tests::xorshift(0x2545_f491_4f6c_dd1d);
        let mut next = |bound: usize| draw(bound as u64) as usize;
        let mut texts: Vec<String> =
            (0..100_000).map(|_| (0..1 + next(30)).map(|_| alphabet[next(alphabet.len())]).collect()).collect();
        texts.push(r#"{"tool":"repo.history","data":{"commits":[{"sha":"1a3e64c","subject":"Don't stop"}]}}"#.into());
        texts.push("## main...origin/main [ahead 3]\n M src/lib.rs\n?? notes.txt\n\n\n   \tx  \n".into());
        texts.push("1234567".repeat(5) + "   " + &"ab".repeat(300));
        preload();
        let bpe = tiktoken_rs::o200k_base_singleton();
        let regex = fancy_regex::Regex::new(tiktoken_rs::O200K_BASE_PAT_STR).expect("the pattern compiles");
        for text in &texts {
            assert_eq!(our_pieces(text), regex_pieces(&regex, text), "{text:?}");
            assert_eq!(count(text), bpe.encode_ordinary(text).len(), "{text:?}");
        }
    }

    #[test]
    fn non_ascii_texts_are_counted_by_tiktoken() {
        let text = "Ævar: naïve café ✓ 日本語";
        assert_eq!(count(text), tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len());
    }
}
