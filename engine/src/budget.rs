//! Token budgets (design.md#engine): counting with `o200k_base` and filling list sections by
//! priority.
//!
//! The engine never knows what wraps its results; callers pass a `measure` function that renders
//! the exact text a model will read (for MCP: the compact JSON envelope) for a given choice of
//! shown items and returns its size in tokens. [`fit`] then picks, section by section in priority
//! order, the largest count that keeps the text within the budget, so the budget is used and not
//! merely respected.
//!
//! Counting is the costly part of a first call (the o200k pre-tokenizer is a backtracking regex: a
//! 4 KB answer takes about a millisecond). While [`fit`] runs, measures that count with
//! [`measure_tokens`] skip the count of a text no longer in bytes than the budget: every o200k
//! token covers at least one byte, so such a text fits, and its byte length stands for its size. A
//! longer text is counted exactly, chunk by chunk at junctions where o200k's pieces are cut
//! whatever follows, reusing the chunks an earlier probe of the same fit counted (the probes differ
//! only from where their lists are cut), and only until the count is over the budget: the text does
//! not fit, and the count so far, scaled to the whole text, stands for its size. [`fit`] only
//! compares sizes with the budget (and guesses where to probe from them: a size near the count
//! needs few probes), so what it chooses is the same as with exact counts; a floor it reports is
//! counted exactly.

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::error::{Error, InvalidReason, Result};

/// Counts `text` in `o200k_base` tokens, the tokenizer of current OpenAI models (tiktoken-rs).
///
/// The ranks are static data (nothing is built at start-up) and ASCII texts are cut into pieces
/// without tiktoken's regex (`o200k/mod.rs`): the same pieces and count as tiktoken's.
pub fn count_tokens(text: &str) -> usize {
    crate::o200k::count(text)
}

thread_local! {
    /// The budget of the [`fit`] running on this thread, if any.
    static FITTING: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
    /// Token counts of the chunks [`count_in_chunks`] counted during the outermost [`fit`] running
    /// on this thread.
    static CHUNKS: std::cell::RefCell<FxHashMap<Box<str>, usize>> = std::cell::RefCell::new(FxHashMap::default());
}

/// Bytes a chunk of [`count_in_chunks`] holds at least (the last one of a text may hold fewer).
const CHUNK_BYTES: usize = 256;

/// [`count_tokens`]`(text)`, counted chunk by chunk with the counts of chunks seen before in this
/// fit reused. The texts a fit measures share their beginning (the same answer with more or fewer
/// items at its end), so only the chunks from where they differ are counted. Counting stops at the
/// first chunk end where the count is over `limit`: the result is then that count scaled by the
/// text's length over the length counted (over `limit`, an estimate).
///
/// A chunk ends at the first junction after `min_bytes` where an ASCII letter or digit is followed
/// by ASCII punctuation other than `'` (in JSON: the end of a string value or a number). The count
/// of a text is the sum of its chunks' counts because o200k cuts a piece there, and what it cuts
/// before the junction does not depend on what follows: every character belongs to one of the
/// pattern's alternatives, none empty, so the pieces tile the text; a piece never goes from a
/// letter or digit to such punctuation (in the letter alternatives a letter is followed only by
/// letters or a suffix starting with `'`, the digit alternative holds only digits, and the others
/// hold neither); the pattern has no look-behind, so the pieces from the junction on are those of
/// the rest alone; and an attempt that reached the letter or digit before the junction (a letter
/// run with its optional `'s` suffix, or up to 3 digits; no other alternative holds one) stops at
/// the punctuation as it stops at the end of the text, so the pieces before the junction are those
/// of the beginning alone. Chunk ends depend only on the text from the previous end, so two texts
/// with the same beginning are cut the same way up to where they differ.
fn count_in_chunks(text: &str, min_bytes: usize, limit: usize, counts: &mut FxHashMap<Box<str>, usize>) -> usize {
    let bytes = text.as_bytes();
    let step = min_bytes.max(1);
    let mut total = 0;
    let mut start = 0;
    let mut at = step;
    while at < bytes.len() {
        let (a, b) = (bytes[at - 1], bytes[at]);
        if a.is_ascii_alphanumeric() && b.is_ascii_punctuation() && b != b'\'' {
            total += chunk_count(&text[start..at], counts);
            start = at;
            if total > limit {
                return (total as f64 * bytes.len() as f64 / start as f64) as usize;
            }
            at += step;
        } else {
            at += 1;
        }
    }
    total + chunk_count(&text[start..], counts)
}

/// The token count of `chunk`, from `counts` or counted and added.
fn chunk_count(chunk: &str, counts: &mut FxHashMap<Box<str>, usize>) -> usize {
    if let Some(&count) = counts.get(chunk) {
        return count;
    }
    let count = count_tokens(chunk);
    counts.insert(chunk.into(), count);
    count
}

/// The size of `text` for a budget decision: while a [`fit`] with budget `max_tokens` runs on this
/// thread, a text of at most `max_tokens` bytes counts as its byte length (an upper bound of its
/// token count that still fits: a token covers at least one byte), a longer one by its exact count,
/// taken chunk by chunk with the counts of the chunks the fit met before, or, once that count is
/// over `max_tokens` (the text does not fit), by the count so far scaled to the whole text
/// ([`count_in_chunks`]); outside [`fit`], by [`count_tokens`]. For measures only (see the module
/// documentation); a size that is reported or subtracted must come from [`count_tokens`].
pub fn measure_tokens(text: &str) -> usize {
    match FITTING.get() {
        Some(max_tokens) if text.len() <= max_tokens => text.len(),
        Some(max_tokens) => CHUNKS.with_borrow_mut(|counts| count_in_chunks(text, CHUNK_BYTES, max_tokens, counts)),
        None => count_tokens(text),
    }
}

/// Sets this thread's fitting budget for [`measure_tokens`] and restores the one before when
/// dropped (a fit may run inside another's measure).
struct Fitting(Option<usize>);

impl Fitting {
    fn within(max_tokens: usize) -> Self {
        Self(FITTING.replace(Some(max_tokens)))
    }

    /// Exact counts until dropped, even inside another fit's measure.
    fn exact() -> Self {
        Self(FITTING.replace(None))
    }
}

impl Drop for Fitting {
    fn drop(&mut self) {
        FITTING.set(self.0);
        if self.0.is_none() {
            // The outermost fit ended: its chunk counts go (the next fit measures other texts).
            CHUNKS.with_borrow_mut(FxHashMap::clear);
        }
    }
}

/// Counts `text` in `cl100k_base` tokens, for comparison tables.
pub fn count_tokens_cl100k(text: &str) -> usize {
    tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len()
}

/// Chooses how many items of each list section to show within `max_tokens`.
///
/// `totals[i]` is the number of items section `i` holds; sections are given in priority order
/// (highest first). `measure(shown)` returns the token count of the rendered result when section
/// `i` shows its first `shown[i]` items; it must not decrease when any count grows. Returns the
/// shown counts; every section cut short would not have fitted one more item. The floor is
/// `measure` with every section empty.
///
/// # Errors
/// [`InvalidReason::BudgetBelowFloor`] (with the floor) when even the required fields exceed
/// `max_tokens`.
pub fn fit(totals: &[usize], max_tokens: usize, measure: &mut dyn FnMut(&[usize]) -> usize) -> Result<Vec<usize>> {
    let fitting = Fitting::within(max_tokens);
    let mut shown = vec![0; totals.len()];
    let floor = measure(&shown);
    if floor > max_tokens {
        // The floor is reported: its exact count, not the bound that showed it does not fit.
        drop(fitting);
        let _exact = Fitting::exact();
        let floor = measure(&shown);
        return Err(Error::Invalid {
            reason: InvalidReason::BudgetBelowFloor,
            message: format!("maxTokens {max_tokens} is below this result's floor of {floor} tokens"),
            floor: Some(floor),
            suggestions: Vec::new(),
        });
    }
    // The size of the current choice (every earlier section at its final count, this one at 0): known to fit.
    let mut fitting = floor;
    for (section_idx, &total) in totals.iter().enumerate() {
        if total == 0 {
            // Nothing to show: the choice stays the one known to fit.
            continue;
        }
        shown[section_idx] = total;
        let full = measure(&shown);
        if full <= max_tokens {
            fitting = full;
            continue;
        }
        // The largest count in [0, total) that fits: `low` fits (its size `fitting`), `high` does not (its size
        // `over`). The first probes go where the budget falls between those sizes as if the items between were of
        // even size (with sizes near the count, two or three probes end it), the others halve; `measure` never
        // decreases with a count, so the answer is the same as a plain bisection's.
        let (mut low, mut high, mut over) = (0, total, full);
        for round in 0.. {
            if low + 1 >= high {
                break;
            }
            let mid = if round < 4 {
                let share = (max_tokens - fitting) as f64 / (over - fitting) as f64;
                (low + (share * (high - low) as f64) as usize).clamp(low + 1, high - 1)
            } else {
                low + (high - low) / 2
            };
            shown[section_idx] = mid;
            match measure(&shown) {
                size if size <= max_tokens => (low, fitting) = (mid, size),
                size => (high, over) = (mid, size),
            }
        }
        shown[section_idx] = low;
    }
    Ok(shown)
}

/// The number of items of each named section that a budget dropped; only non-zero entries are kept.
///
/// Serialises as an object, e.g. `{"recentCommits": 7}`, in section order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Omitted(pub Vec<(&'static str, usize)>);

impl serde::Serialize for Omitted {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, count) in &self.0 {
            map.serialize_entry(name, count)?;
        }
        map.end()
    }
}

impl Omitted {
    /// Builds the map from section names, totals and shown counts.
    pub fn from_counts(names: &[&'static str], totals: &[usize], shown: &[usize]) -> Self {
        Self(
            names
                .iter()
                .zip(totals.iter().zip(shown))
                .filter(|(_, (total, shown))| total > shown)
                .map(|(name, (total, shown))| (*name, total - shown))
                .collect(),
        )
    }

    /// `true` when nothing was dropped.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A result cut to a token budget: the data, and how many items of each list section were dropped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Budgeted<T> {
    /// The (possibly shortened) result.
    pub data: T,
    /// Dropped items per section; empty when nothing was cut.
    pub omitted: Omitted,
}

/// Measures the rendered size, in tokens, of a candidate result (see [`fit`]).
pub type Measure<'a, T> = dyn FnMut(&Budgeted<T>) -> usize + 'a;

/// Shows the first `count` items of `items`.
pub(crate) fn first<T: Clone>(items: &[T], count: usize) -> Vec<T> {
    items[..count.min(items.len())].to_vec()
}

/// Passes of [`top_up`] over the sections at most: each pass that grows a section may make room in
/// another.
const TOP_UP_PASSES: usize = 3;

/// Runs [`crate::budget::fit`] over named sections of a full result, rebuilding the shortened
/// result with `cut`.
pub(crate) fn fit_sections<T>(
    full: &T,
    names: &[&'static str],
    totals: &[usize],
    max_tokens: usize,
    cut: &dyn Fn(&T, &[usize]) -> T,
    measure: &mut Measure<'_, T>,
) -> Result<Budgeted<T>> {
    let fitting = Fitting::within(max_tokens);
    // The whole answer first: a field it leaves out because its lists say it ([`crate::Implied`], e.g. counts
    // equal to the lists' lengths) comes back in every cut answer, so the whole one can fit where a cut one does not.
    // It is the answer when it fits (nothing omitted: `from_counts` of the totals is empty).
    let whole_answer = Budgeted { data: cut(full, totals), omitted: Omitted::default() };
    let whole = measure(&whole_answer);
    if whole <= max_tokens {
        return Ok(whole_answer);
    }
    drop((fitting, whole_answer));
    let mut candidate = |shown: &[usize]| {
        let data = cut(full, shown);
        measure(&Budgeted { data, omitted: Omitted::from_counts(names, totals, shown) })
    };
    // [`fit`] measures the whole answer again when it is its first choice with every section full (one section, or
    // the later ones empty): that measure is the one just taken.
    let mut whole = Some(whole);
    let mut shown = fit(totals, max_tokens, &mut |shown| match whole.take_if(|_| shown == totals) {
        Some(size) => size,
        None => candidate(shown),
    })?;
    top_up(&mut shown, totals, max_tokens, &mut candidate);
    Ok(Budgeted { data: cut(full, &shown), omitted: Omitted::from_counts(names, totals, &shown) })
}

/// Grows each cut section of `shown` by single items while the answer still fits `max_tokens`, in
/// priority order, until no section can grow (at most [`TOP_UP_PASSES`] passes).
///
/// [`fit`] sizes each section with the later ones empty, which is exact when an answer's size only
/// grows with its items. It does not quite: showing a section's last item drops its `omitted`
/// entry, and a list shown whole lets its implied count go, so a later section's items can make
/// room for one more of an earlier one.
fn top_up(shown: &mut [usize], totals: &[usize], max_tokens: usize, measure: &mut dyn FnMut(&[usize]) -> usize) {
    for _ in 0..TOP_UP_PASSES {
        let mut grown = false;
        for section in 0..shown.len() {
            while shown[section] < totals[section] {
                shown[section] += 1;
                if measure(shown) <= max_tokens {
                    grown = true;
                } else {
                    shown[section] -= 1;
                    break;
                }
            }
        }
        if !grown {
            return;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A deterministic xorshift generator from `seed`: each call gives a number below its `bound`.
    pub(crate) fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |bound| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        }
    }

    #[test]
    fn fit_uses_the_budget_by_priority() {
        // Each item costs 10 tokens, the frame 5.
        let mut measure = |shown: &[usize]| 5 + shown.iter().sum::<usize>() * 10;
        assert_eq!(fit(&[3, 10, 4], 75, &mut measure).expect("fits"), vec![3, 4, 0]);
        assert_eq!(fit(&[3, 10, 4], 1000, &mut measure).expect("fits"), vec![3, 10, 4]);
        let err = fit(&[1], 4, &mut measure).expect_err("below floor");
        assert!(matches!(err, Error::Invalid { floor: Some(5), .. }));
    }

    /// The galloping search gives what a plain bisection gives: the largest fitting count of each
    /// section in turn, on many monotone cost shapes (uneven item sizes, a frame, budgets around
    /// every boundary).
    #[test]
    fn fit_equals_the_largest_fitting_counts() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for _ in 0..300 {
            let sections = 1 + next(3) as usize;
            let sizes: Vec<Vec<usize>> =
                (0..sections).map(|_| (0..next(40)).map(|_| 1 + next(30) as usize).collect()).collect();
            let totals: Vec<usize> = sizes.iter().map(Vec::len).collect();
            let frame = 5 + next(20) as usize;
            let cost = |shown: &[usize]| {
                frame + shown.iter().zip(&sizes).map(|(n, s)| s[..*n].iter().sum::<usize>()).sum::<usize>()
            };
            let everything = cost(&totals);
            for _ in 0..8 {
                let budget = frame + next(everything as u64 + 1) as usize;
                let mut expected = vec![0; sections];
                for idx in 0..sections {
                    expected[idx] = (0..=totals[idx])
                        .rev()
                        .find(|n| {
                            let mut probe = expected.clone();
                            probe[idx] = *n;
                            cost(&probe) <= budget
                        })
                        .unwrap_or(0);
                }
                let mut measure = |shown: &[usize]| cost(shown);
                assert_eq!(fit(&totals, budget, &mut measure).expect("fits"), expected, "{sizes:?} at {budget}");
            }
        }
    }

    #[test]
    fn omitted_keeps_only_cut_sections() {
        let omitted = Omitted::from_counts(&["a", "b"], &[3, 2], &[1, 2]);
        assert_eq!(serde_json::to_string(&omitted).expect("serialises"), r#"{"a":2}"#);
    }

    /// tiktoken's own count, the oracle of the chunked counts.
    fn tiktoken_count(text: &str) -> usize {
        tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len()
    }

    #[test]
    fn counts_tokens_with_o200k() {
        assert_eq!(count_tokens(""), 0);
        assert!(count_tokens("hello world") <= 3);
    }

    /// Inside a fit, a text within the budget in bytes is sized by its length without counting, a
    /// longer one by its count, or once that is over the budget by the count so far scaled to its
    /// length; outside, the count is exact. A fit measured that way chooses what one measured
    /// exactly chooses, on every budget from below the floor to above the whole (commit-like lines
    /// of uneven size, a frame).
    #[test]
    fn fits_measured_by_bytes_within_the_budget_choose_as_exact_counts() {
        let text = "x".repeat(40);
        assert_eq!(measure_tokens(&text), count_tokens(&text));
        let lines: Vec<String> = (0..60)
            .map(|i| format!("{:07x} {} the subject of change number {i}", i * 7919, "word ".repeat(i % 9)))
            .collect();
        let render = |shown: &[usize]| format!("{{\"frame\":1,\"commits\":{:?}}}", &lines[..shown[0]]);
        let whole = count_tokens(&render(&[lines.len()]));
        for max_tokens in (0..whole + 40).step_by(7) {
            let exact = fit(&[lines.len()], max_tokens, &mut |shown| count_tokens(&render(shown)));
            let mut inside = Vec::new();
            let bounded = fit(&[lines.len()], max_tokens, &mut |shown| {
                let text = render(shown);
                let size = measure_tokens(&text);
                inside.push((text.len() <= max_tokens, size == text.len()));
                size
            });
            let floor = |result: &Result<Vec<usize>>| match result {
                Err(Error::Invalid { floor, .. }) => *floor,
                _ => None,
            };
            assert_eq!(floor(&bounded), floor(&exact), "budget {max_tokens}: the floor reported is exact");
            assert_eq!(bounded.ok(), exact.ok(), "budget {max_tokens}");
            assert!(inside.iter().all(|(short, by_length)| !short || *by_length), "budget {max_tokens}");
        }
        assert_eq!(measure_tokens(&text), count_tokens(&text), "the budget ends with the fit");
    }

    /// Counting chunk by chunk gives the count, and a count stopped over a limit is over it: texts
    /// drawn from the characters the pattern's rules turn on (letters, `'s`, digits, punctuation,
    /// spaces, tabs, line breaks, `/`, non-ASCII letters, digits and marks), the JSON and text
    /// shapes of tool answers, and long runs. Chunks that also ended between punctuation and a
    /// letter fail it.
    #[test]
    fn chunks_sum_to_the_count() {
        let alphabet = [
            "a", "Z", "s", "'", "'s", "1", "0", " ", "  ", "\t", "\n", "\r\n", "/", "\"", "{", ":", ",", "-", ".", "é",
            "٣", "\u{301}", "—", "x9", "ab", "\u{b}", "\u{c}", "\u{0}",
        ];
        // The ASCII counter's ranks, so that chunks are counted by it (the oracle is tiktoken's regex).
        crate::o200k::preload();
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut texts: Vec<String> = (0..20_000)
            .map(|_| (0..1 + next(24)).map(|_| alphabet[next(alphabet.len() as u64) as usize]).collect())
            .collect();
        texts.push(
            r#"{"branches":[{"name":"feature/abbrev-12","sha":"1a3e64c","upstream":"origin/main","ahead":3}]}"#.into(),
        );
        texts.push("## main...origin/main [ahead 3]\n1a3e64c0 Merge branch 'jc/fix' into next\n... 12 more\n".into());
        texts.push("1234567890123".repeat(7));
        texts.push("\n".repeat(9) + "/x" + &" ".repeat(5) + "\t.");
        let mut counts = FxHashMap::default();
        for text in &texts {
            let count = tiktoken_count(text);
            // Every junction a chunk may end at, and chunks as a fit cuts them, with counts reused across texts.
            assert_eq!(count_in_chunks(text, 1, usize::MAX, &mut counts), count, "{text:?}");
            assert_eq!(count_in_chunks(text, 4, count, &mut counts), count, "{text:?}");
            assert!(count_in_chunks(text, 4, count / 2, &mut counts) > count / 2, "{text:?}");
        }
    }
}
