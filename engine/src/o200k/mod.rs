//! `o200k_base` token counts from static ranks, without tiktoken's tables or, for ASCII texts, its
//! regex.
//!
//! tiktoken cuts a text into pieces with a backtracking regex (`tiktoken_rs::O200K_BASE_PAT_STR`),
//! then encodes each piece on its own by byte-pair merges over its ranks, a hash map of 200,000
//! tokens it builds from its embedded data (about 170 ms of CPU and 50 MB, which a first call would
//! wait for). Here the ranks are static data: the token bytes (`engine/data/o200k_base.bin`,
//! checked against tiktoken's by a test) and a hash table over them that the build script writes
//! ([`table`]), looked up in place ([`rank`]); [`count`] merges each piece over them with
//! tiktoken's own algorithm ([`merged_tokens`]).
//!
//! The regex costs about 1,500 instructions a byte. Answers are nearly always ASCII, where the
//! pattern's classes are simple (letters `A-Z`/`a-z`, digits, the six whitespace bytes, everything
//! else "other"), so [`count`] cuts ASCII texts with [`piece_end`], which decides what the regex's
//! leftmost-first alternation decides. Any other text is cut by the pattern itself ([`pattern`],
//! compiled on the first such text: a few milliseconds). Tests compare the pieces with the regex's
//! and the counts with tiktoken's on 100,000 drawn texts, ASCII and not.

mod table;

use std::sync::OnceLock;

use tiktoken_rs::Rank;

/// Every ordinary o200k token's length in bytes (the first [`table::TOKENS`] bytes), then their
/// bytes, in rank order.
static TOKEN_DATA: &[u8] = include_bytes!("../../data/o200k_base.bin");

/// The hash table of the tokens in [`TOKEN_DATA`], [`table::SLOTS`] little-endian 64-bit slots.
static TABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_table.bin"));

/// The rank of the ordinary o200k token `bytes`, if it is one. Probes [`TABLE`] from the token's
/// home slot to the next empty one, comparing bytes only where length and tag match.
pub(crate) fn rank(bytes: &[u8]) -> Option<Rank> {
    let hash = table::hash(bytes);
    let tag = table::tag(hash);
    let tokens = &TOKEN_DATA[table::TOKENS..];
    let mut slot = table::home(hash);
    loop {
        let at = slot * 8;
        let entry = u64::from_le_bytes(TABLE[at..at + 8].try_into().expect("a slot is 8 bytes"));
        let (length, offset, rank, entry_tag) = table::unpack(entry);
        if length == 0 {
            return None;
        }
        if length == bytes.len() && entry_tag == tag && &tokens[offset..offset + length] == bytes {
            return Some(rank);
        }
        slot = (slot + 1) % table::SLOTS;
    }
}

/// tiktoken's pre-tokenizer, the o200k pattern, for texts that are not ASCII; compiled on first
/// use.
fn pattern() -> &'static fancy_regex::Regex {
    static PATTERN: OnceLock<fancy_regex::Regex> = OnceLock::new();
    PATTERN
        .get_or_init(|| fancy_regex::Regex::new(tiktoken_rs::O200K_BASE_PAT_STR).expect("the o200k pattern compiles"))
}

/// Compiles the pattern for texts that are not ASCII ([`pattern`]), for tests that time or compare
/// counts without its first use. Nothing else needs building: the ranks are static.
#[cfg(test)]
pub(crate) fn preload() {
    pattern();
}

/// The number of `o200k_base` tokens of `text`, as `o200k_base().encode_ordinary(text).len()`.
pub(crate) fn count(text: &str) -> usize {
    if text.is_ascii() {
        return pieces(text.as_bytes()).map(piece_tokens).sum();
    }
    let mut total = 0;
    let mut counted = 0;
    for piece in pattern().find_iter(text) {
        let Ok(piece) = piece else {
            // The regex gave up (its backtrack limit, where tiktoken would panic): the rest counts as its bytes,
            // an upper bound (a token covers at least one byte).
            return total + text.len() - counted;
        };
        total += piece_tokens(piece.as_str().as_bytes());
        counted = piece.end();
    }
    total
}

/// The tokens of one piece: 1 when it is a token, else as many as the byte-pair merge leaves.
fn piece_tokens(piece: &[u8]) -> usize {
    if piece.len() == 1 || rank(piece).is_some() {
        1
    } else if piece.len() < LONG_PIECE_BYTES {
        merged_tokens(piece)
    } else {
        merged_tokens_long(piece)
    }
}

/// Length in bytes from which a piece is merged by [`merged_tokens_long`] (a heap, `O(n log n)`)
/// instead of [`merged_tokens`] (a scan per merge, `O(n²)`, faster on the short pieces that make
/// up nearly every text). A piece is as long as its run of letters or other bytes: a commit
/// message of 300 KB without a space is one piece, which the scan took minutes to merge.
const LONG_PIECE_BYTES: usize = 128;

/// The number of tokens the byte-pair merge leaves of `piece` (at least 2 bytes), as tiktoken's
/// `_byte_pair_merge`: start from single bytes, and merge the adjacent pair whose union has the
/// lowest rank (the leftmost of equals) until no union is a token. `parts` holds each part's start
/// and the rank of its union with the next part (`Rank::MAX`: not a token); the rank of a part and
/// the next two is looked up before the middle one is removed, as tiktoken does.
fn merged_tokens(piece: &[u8]) -> usize {
    let mut parts: Vec<(usize, Rank)> = Vec::with_capacity(piece.len() + 1);
    let mut min_rank = (Rank::MAX, usize::MAX);
    for start in 0..piece.len() - 1 {
        let pair_rank = rank(&piece[start..start + 2]).unwrap_or(Rank::MAX);
        if pair_rank < min_rank.0 {
            min_rank = (pair_rank, start);
        }
        parts.push((start, pair_rank));
    }
    parts.push((piece.len() - 1, Rank::MAX));
    parts.push((piece.len(), Rank::MAX));
    let union_rank = |parts: &[(usize, Rank)], at: usize| {
        if at + 3 < parts.len() { rank(&piece[parts[at].0..parts[at + 3].0]).unwrap_or(Rank::MAX) } else { Rank::MAX }
    };
    while min_rank.0 != Rank::MAX {
        let at = min_rank.1;
        if at > 0 {
            parts[at - 1].1 = union_rank(&parts, at - 1);
        }
        parts[at].1 = union_rank(&parts, at);
        parts.remove(at + 1);
        min_rank = (Rank::MAX, usize::MAX);
        for (at, &(_, pair_rank)) in parts[..parts.len() - 1].iter().enumerate() {
            if pair_rank < min_rank.0 {
                min_rank = (pair_rank, at);
            }
        }
    }
    parts.len() - 1
}

/// [`merged_tokens`] in `O(n log n)` for a long piece: the same merges in the same order.
///
/// Parts are named by their first byte's offset, which orders them as the scan's positions do, and
/// linked to their neighbours (`next`, `prev`; `piece.len()` is the end). Every pair's rank goes
/// into a min-heap keyed `(rank, start)`, so the top is the scan's choice: the lowest rank, the
/// leftmost of equals. A merge changes only the ranks of the merged part and of the part before
/// it; their new ranks are pushed, and an entry whose part is gone or whose rank has changed since
/// is skipped when it comes up.
fn merged_tokens_long(piece: &[u8]) -> usize {
    use std::cmp::Reverse;
    let end = piece.len();
    let mut next: Vec<usize> = (1..=end).collect();
    let mut prev: Vec<usize> = (0..end).map(|start| start.wrapping_sub(1)).collect();
    let mut ranks: Vec<Rank> = vec![Rank::MAX; end];
    let mut alive = vec![true; end];
    // The rank of the union of the part at `start` and the part after it.
    let pair_rank = |next: &[usize], start: usize| match next[start] {
        after if after < end => rank(&piece[start..next[after]]).unwrap_or(Rank::MAX),
        _ => Rank::MAX,
    };
    let mut heap = std::collections::BinaryHeap::with_capacity(end);
    for (start, rank) in ranks.iter_mut().enumerate() {
        *rank = pair_rank(&next, start);
        if *rank != Rank::MAX {
            heap.push(Reverse((*rank, start)));
        }
    }
    let mut parts = end;
    while let Some(Reverse((top, start))) = heap.pop() {
        if !alive[start] || ranks[start] != top {
            continue;
        }
        let gone = next[start];
        alive[gone] = false;
        next[start] = next[gone];
        if next[start] < end {
            prev[next[start]] = start;
        }
        parts -= 1;
        for part in [prev[start], start] {
            if part < end {
                ranks[part] = pair_rank(&next, part);
                if ranks[part] != Rank::MAX {
                    heap.push(Reverse((ranks[part], part)));
                }
            }
        }
    }
    parts
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

/// Whitespace as the pattern's `\s` matches it in ASCII: space, tab, line feed, vertical tab, form
/// feed, carriage return.
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

/// Where the piece that o200k's pattern matches at `start` of the ASCII `text` ends
/// (`start < text.len()`). The pattern's alternatives, tried in order at `start` (the first that
/// matches wins; inside one, quantifiers are greedy and give back only what a later part needs):
/// 1. `[^\r\n\p{L}\p{N}]?[\p{Lu}…]*[\p{Ll}…]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` and
/// 2. `[^\r\n\p{L}\p{N}]?[\p{Lu}…]+[\p{Ll}…]*(suffix)?`: an optional leading byte (not a line
///    break, letter or digit), the upper-case run, then the lower-case run (1 needs one lower-case
///    letter; 2, tried only when 1 fails, takes the upper-case run alone), then an optional
///    `'s`-like suffix;
/// 3. `\p{N}{1,3}`: up to three digits;
/// 4. ` ?[^\s\p{L}\p{N}]+[\r\n/]*`: an optional space, a run of other bytes, then line breaks and
///    `/`;
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

    /// Drawn ASCII texts (every byte class the pattern distinguishes, the suffixes in both cases,
    /// runs of spaces and line breaks, JSON and `git status` shapes) are cut into the regex's
    /// pieces and counted as tiktoken counts them. A rule off by one (up to 4 digits, no `'ll`
    /// suffix) fails it.
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

    /// Drawn texts that are not ASCII (accented and other-script letters, marks, non-ASCII digits
    /// and spaces, the long s that `(?i)'s` matches, emoji, mixed with ASCII) are counted as
    /// tiktoken counts them.
    #[test]
    fn non_ascii_counts_equal_tiktokens() {
        let alphabet = [
            "a",
            "Z",
            "'",
            "'s",
            "'ſ",
            "1",
            " ",
            "\n",
            "\r\n",
            "\t",
            "/",
            "\"",
            ".",
            "é",
            "Ævar",
            "naïve",
            "ß",
            "ǅ",
            "ʰ",
            "日本語",
            "\u{301}",
            "\u{20e3}",
            "٣",
            "Ⅻ",
            "½",
            "\u{a0}",
            "\u{3000}",
            "\u{2028}",
            "\u{85}",
            "—",
            "✓",
            "🦀",
            "👍🏽",
            "Ω",
            "ﬁ",
            "\u{feff}",
            "x9",
        ];
        let mut draw = crate::budget::tests::xorshift(0x6a09_e667_f3bc_c908);
        let mut next = |bound: usize| draw(bound as u64) as usize;
        let mut texts: Vec<String> =
            (0..100_000).map(|_| (0..1 + next(30)).map(|_| alphabet[next(alphabet.len())]).collect()).collect();
        texts.push("Ævar: naïve café ✓ 日本語".into());
        texts.push("Author: Jöhn Dœ <j@example.org>\n\n    Fix the ‘quoted’ path — again\n".into());
        texts.push("é".repeat(300) + &"日本".repeat(80));
        let bpe = tiktoken_rs::o200k_base_singleton();
        for text in &texts {
            assert_eq!(count(text), bpe.encode_ordinary(text).len(), "{text:?}");
        }
    }

    /// The static ranks are tiktoken's: every rank's bytes in the data are those tiktoken decodes,
    /// and looking them up gives the rank back; special tokens and bytes that are no token have
    /// none. With `FLUXGIT_WRITE_O200K_DATA=1` the test writes `engine/data/o200k_base.bin` from
    /// tiktoken-rs instead (after a tiktoken-rs update).
    #[test]
    fn static_ranks_are_tiktokens() {
        let bpe = tiktoken_rs::o200k_base_singleton();
        let decoded: Vec<Vec<u8>> = (0..table::TOKENS as Rank)
            .map(|rank| bpe.decode_bytes(&[rank]).expect("every ordinary rank decodes"))
            .collect();
        if std::env::var_os("FLUXGIT_WRITE_O200K_DATA").is_some_and(|value| value == "1") {
            let mut data: Vec<u8> =
                decoded.iter().map(|token| u8::try_from(token.len()).expect("tokens up to 255 bytes")).collect();
            decoded.iter().for_each(|token| data.extend_from_slice(token));
            std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/data/o200k_base.bin"), data).expect("data written");
            return;
        }
        assert!(bpe.decode_bytes(&[table::TOKENS as Rank]).is_err(), "no ordinary token beyond the data's");
        let (lengths, mut tokens) = TOKEN_DATA.split_at(table::TOKENS);
        for (rank, token) in decoded.iter().enumerate() {
            let (ours, rest) = tokens.split_at(usize::from(lengths[rank]));
            assert_eq!(ours, token.as_slice(), "rank {rank}");
            assert_eq!(super::rank(token), Some(rank as Rank), "rank {rank}");
            tokens = rest;
        }
        assert!(tokens.is_empty(), "no bytes after the last token");
        for text in ["<|endoftext|>", "<|endofprompt|>", "zzzzzzzzzzzzzzzzzzzzzzzz", "", "é", " the"] {
            let tokens = bpe.encode_ordinary(text);
            let expected = tokens.first().copied().filter(|_| tokens.len() == 1);
            assert_eq!(super::rank(text.as_bytes()), expected, "{text:?}");
        }
    }

    /// The heap merge of long pieces leaves exactly what the scan leaves, on drawn pieces from 2 to
    /// 700 bytes: letters in English frequencies, runs of one letter, of punctuation and of bytes
    /// of UTF-8 text (the shapes whose merges tie most often).
    #[test]
    fn the_heap_merge_equals_the_scan() {
        let mut draw = crate::budget::tests::xorshift(0x3c6e_f372_fe94_f82b);
        let alphabets: [&[u8]; 4] = [b"etaoinshrdlucmfwypvbgkqjxz", b"a", b"-=_*#", "éü日本ß".as_bytes()];
        for length in (2..60).chain([127, 128, 129, 300, 700]) {
            for alphabet in alphabets {
                for _ in 0..8 {
                    let piece: Vec<u8> = (0..length).map(|_| alphabet[draw(alphabet.len() as u64) as usize]).collect();
                    assert_eq!(merged_tokens_long(&piece), merged_tokens(&piece), "{piece:?}");
                }
            }
        }
    }

    /// A text of one unbroken piece (a 300 KB commit message without a space, a run of one byte, a
    /// run of punctuation, a non-ASCII run) is counted within 5 s even unoptimized: the scan merge
    /// took 7 s at 100 KB and minutes at 300 KB (release). The bound is loose on purpose (shared
    /// machines); a quadratic merge misses it by orders of magnitude.
    #[test]
    fn a_long_unbroken_piece_is_counted_in_linearithmic_time() {
        let mut draw = crate::budget::tests::xorshift(0x510e_527f_ade6_82d1);
        let letters = b"etaoinshrdlucmfwypvbgkqjxz";
        let words: String = (0..300_000).map(|_| char::from(letters[draw(letters.len() as u64) as usize])).collect();
        let texts = [words, "a".repeat(300_000), "-".repeat(300_000), "日本".repeat(50_000)];
        for text in &texts {
            let started = std::time::Instant::now();
            let tokens = count(text);
            assert!(tokens > 0 && tokens <= text.len(), "{tokens} tokens of {} bytes", text.len());
            let elapsed = started.elapsed();
            eprintln!("{} bytes from {:?}: {tokens} tokens in {elapsed:?}", text.len(), &text[..6]);
            assert!(elapsed < std::time::Duration::from_secs(5), "{elapsed:?}");
        }
        // Exact on a long piece still short enough for tiktoken's own merge to check.
        let bpe = tiktoken_rs::o200k_base_singleton();
        let piece = &texts[0][..20_000];
        assert_eq!(count(piece), bpe.encode_ordinary(piece).len());
    }

    /// The merge leaves as many tokens as tiktoken's on pieces that are no token, short and long
    /// (tiktoken switches to a heap from 100 bytes; the order of merges is the same).
    #[test]
    fn merges_leave_tiktokens_tokens() {
        let bpe = tiktoken_rs::o200k_base_singleton();
        let mut draw = crate::budget::tests::xorshift(0xbb67_ae85_84ca_a73b);
        let letters = b"etaoinshrdlucmfwypvbgkqjxz";
        for length in (2..40).chain([99, 100, 101, 250, 600]) {
            for _ in 0..40 {
                let piece: String =
                    (0..length).map(|_| char::from(letters[draw(letters.len() as u64) as usize])).collect();
                assert_eq!(piece_tokens(piece.as_bytes()), bpe.encode_ordinary(&piece).len(), "{piece:?}");
            }
        }
    }
}
