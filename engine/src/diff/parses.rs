//! The parses `diff.semantic` keeps between calls, by blob id and language, held by the
//! [`crate::Engine`], and how one call makes the parses it lacks.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use gix::ObjectId;

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
            .map(|symbol| 96 + symbol.name.len() + symbol.leaf.len() + 8 * symbol.tokens.len())
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
}

/// A parse to do: one side, or both sides of a file (the new one as an edit of the old).
enum Job<'a> {
    Side(Language, Blob<'a>),
    Pair(Language, Blob<'a>, Blob<'a>),
}

impl Job<'_> {
    /// Parses what the job names, or marks it [`Parsed::TimeBudget`] when `deadline` has passed.
    fn run(&self, deadline: Instant) -> Vec<((ObjectId, Language), Arc<Parsed>)> {
        let late = Instant::now() > deadline;
        let parse = |language, text| if late { Parsed::TimeBudget } else { semantic::parse(language, text, deadline) };
        match *self {
            Job::Side(language, (id, text)) => vec![((id, language), Arc::new(parse(language, text)))],
            Job::Pair(language, (old_id, old), (new_id, new)) => {
                let (old, new) = if late {
                    (Parsed::TimeBudget, Parsed::TimeBudget)
                } else {
                    semantic::parse_pair(language, old, new, deadline)
                };
                vec![((old_id, language), Arc::new(old)), ((new_id, language), Arc::new(new))]
            }
        }
    }
}

/// Parses every side of `files` not in `cache` yet, on up to two threads (both sides of a file on
/// one, the new side as an edit of the old: [`semantic::parse_pair`]), keeps the new parses in
/// `cache` and returns all the parses the call needs.
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
            [old, new] => jobs.push(Job::Pair(file.language, old, new)),
            [side] => jobs.push(Job::Side(file.language, side)),
            _ => {}
        }
    }
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(2).min(jobs.len());
    let parsed: Vec<((ObjectId, Language), Arc<Parsed>)> = if workers <= 1 {
        jobs.iter().flat_map(|job| job.run(deadline)).collect()
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results = std::sync::Mutex::new(Vec::with_capacity(wanted.len()));
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    while let Some(job) = jobs.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                        let result = job.run(deadline);
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
