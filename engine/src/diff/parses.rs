//! The parses `diff.semantic` keeps between calls, by blob id and language, held by the
//! [`crate::Engine`], and how one call makes the parses it lacks.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use gix::ObjectId;
use gix::diff::blob::Hunk;

use crate::semantic::{self, Language, Parsed};

/// Bytes of parses the engine keeps (32 MiB).
const CACHE_BYTES: u64 = 32 * 1024 * 1024;

/// The parses the engine keeps, by blob id and language.
pub(crate) struct Cache {
    pub(super) parses: moka::sync::Cache<(ObjectId, Language), Arc<Parsed>>,
}

impl Default for Cache {
    fn default() -> Self {
        let parses = moka::sync::Cache::builder()
            .max_capacity(CACHE_BYTES)
            .weigher(|_, parsed: &Arc<Parsed>| weight(parsed))
            .build();
        Self { parses }
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache").field("parses", &self.parses.entry_count()).finish()
    }
}

/// The bytes a kept parse holds, roughly.
fn weight(parsed: &Parsed) -> u32 {
    let bytes = match parsed {
        Parsed::Symbols(symbols) => symbols
            .iter()
            .map(|symbol| {
                112 + symbol.name.len() + symbol.leaf.len() + symbol.signature.as_ref().map_or(0, String::len)
            })
            .sum::<usize>(),
        _ => 0,
    };
    u32::try_from(bytes + 64).unwrap_or(u32::MAX)
}

/// The parses of one call, by blob id and language.
pub(super) type Parses = HashMap<(ObjectId, Language), Arc<Parsed>>;

/// One blob to parse: its id and its text.
pub(super) type Blob<'a> = (ObjectId, &'a [u8]);

/// The sides of one changed file to parse, in `language`; a side is absent for an added or deleted
/// file.
pub(super) struct FileSides<'a> {
    pub(super) language: Language,
    pub(super) old: Option<Blob<'a>>,
    pub(super) new: Option<Blob<'a>>,
    /// The line diff of the two sides.
    pub(super) hunks: &'a [Hunk],
}

/// A parse to do: one side, or both sides of a file (the new one as an edit of the old).
enum Job<'a> {
    Side(Language, Blob<'a>),
    Pair(Language, Blob<'a>, Blob<'a>, &'a [Hunk]),
}

impl Job<'_> {
    /// The bytes it parses from scratch, roughly what it costs: its larger side.
    fn bytes(&self) -> usize {
        match *self {
            Job::Side(_, (_, text)) => text.len(),
            Job::Pair(_, (_, old), (_, new), _) => old.len().max(new.len()),
        }
    }

    /// Parses what the job names, or marks it [`Parsed::TimeBudget`] when `deadline` has passed;
    /// `split`: each side as two halves on two threads ([`semantic::parse_split`]).
    fn run(&self, deadline: Instant, split: bool) -> Vec<((ObjectId, Language), Arc<Parsed>)> {
        let late = Instant::now() > deadline;
        match *self {
            Job::Side(language, (id, text)) => {
                let parsed = match late {
                    true => Parsed::TimeBudget,
                    false if split => semantic::parse_split(language, text, None, deadline).0,
                    false => semantic::parse(language, text, deadline),
                };
                vec![((id, language), Arc::new(parsed))]
            }
            Job::Pair(language, (old_id, old), (new_id, new), hunks) => {
                let (old, new) = match late {
                    true => (Parsed::TimeBudget, Parsed::TimeBudget),
                    false if split => match semantic::parse_split(language, old, Some((new, hunks)), deadline) {
                        (old, Some(new)) => (old, new),
                        (old, None) => (old, Parsed::TimeBudget),
                    },
                    false => semantic::parse_pair(language, old, new, hunks, deadline),
                };
                vec![((old_id, language), Arc::new(old)), ((new_id, language), Arc::new(new))]
            }
        }
    }
}

/// Parses every side of `files` not in `cache` yet, on up to two threads (both sides of a file on
/// one, the new side as an edit of the old: [`semantic::parse_pair`]; a file larger than the rest
/// together in halves on both: [`semantic::parse_split`]), keeps the new parses in `cache` and
/// returns all the parses the call needs.
pub(super) fn parse_all(files: &[FileSides<'_>], cache: &Cache, deadline: Instant) -> Parses {
    let mut parses = Parses::new();
    let mut jobs: Vec<Job<'_>> = Vec::new();
    let mut wanted: HashSet<(ObjectId, Language)> = HashSet::new();
    for file in files {
        let mut sides = Vec::with_capacity(2);
        for (id, text) in [file.old, file.new].into_iter().flatten() {
            let key = (id, file.language);
            if parses.contains_key(&key) || wanted.contains(&key) {
                continue;
            }
            match cache.parses.get(&key) {
                Some(parsed) => {
                    parses.insert(key, parsed);
                }
                None => {
                    wanted.insert(key);
                    sides.push((id, text));
                }
            }
        }
        match sides[..] {
            [old, new] => jobs.push(Job::Pair(file.language, old, new, file.hunks)),
            [side] => jobs.push(Job::Side(file.language, side)),
            _ => {}
        }
    }
    // The largest first, each to the next free thread; one that is more than its share of the work (of
    // all the call's, shared by the cores) is parsed in halves on two threads, so that one large file
    // does not keep a core waiting.
    jobs.sort_by_key(|job| std::cmp::Reverse(job.bytes()));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).min(2);
    let total: usize = jobs.iter().map(Job::bytes).sum();
    let split = |job: &Job<'_>| cores > 1 && job.bytes() >= semantic::MIN_SPLIT_BYTES && job.bytes() * cores > total;
    let workers = cores.min(jobs.len());
    let parsed: Vec<((ObjectId, Language), Arc<Parsed>)> = if workers <= 1 {
        jobs.iter().flat_map(|job| job.run(deadline, split(job))).collect()
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results = std::sync::Mutex::new(Vec::with_capacity(wanted.len()));
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    while let Some(job) = jobs.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                        let result = job.run(deadline, split(job));
                        results.lock().expect("a parse thread never panics holding the lock").extend(result);
                    }
                });
            }
        });
        results.into_inner().expect("the parse threads ended")
    };
    for (key, parsed) in parsed {
        // A parse cut short by the deadline is not kept: the next call may have the time.
        if !matches!(*parsed, Parsed::TimeBudget) {
            cache.parses.insert(key, Arc::clone(&parsed));
        }
        parses.insert(key, parsed);
    }
    parses
}
