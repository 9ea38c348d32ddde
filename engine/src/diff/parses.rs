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

/// Which parse of a blob: the whole blob's, or that of the parts of it that its diff with another
/// blob touches ([`semantic::parse_parts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Key {
    pub(super) id: ObjectId,
    pub(super) language: Language,
    /// For the parse of parts: the diff they were chosen by.
    pub(super) against: Option<Against>,
}

/// The diff a parse of parts was chosen by: the other side, which side this is, and the hunks (as
/// a digest: another diff algorithm gives other hunks, and other parts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Against {
    pub(super) other: ObjectId,
    pub(super) new: bool,
    hunks: u64,
}

impl Key {
    /// The key of `id`'s whole parse.
    pub(super) fn whole(id: ObjectId, language: Language) -> Self {
        Self { id, language, against: None }
    }

    /// The keys of the parts of `old` and of `new` that their diff, `hunks`, touches.
    pub(super) fn parts(old: ObjectId, new: ObjectId, language: Language, hunks: &[Hunk]) -> [Self; 2] {
        use std::hash::{Hash as _, Hasher as _};
        let mut hasher = rustc_hash::FxHasher::default();
        for hunk in hunks {
            (hunk.before.start, hunk.before.end, hunk.after.start, hunk.after.end).hash(&mut hasher);
        }
        let hunks = hasher.finish();
        [
            Self { id: old, language, against: Some(Against { other: new, new: false, hunks }) },
            Self { id: new, language, against: Some(Against { other: old, new: true, hunks }) },
        ]
    }
}

/// The parses the engine keeps, by [`Key`].
pub(crate) struct Cache {
    pub(super) parses: moka::sync::Cache<Key, Arc<Parsed>>,
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

/// The parses of one call, by [`Key`].
pub(super) type Parses = HashMap<Key, Arc<Parsed>>;

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

/// A parse to do: one side, both sides of a file (the new one as an edit of the old), or the parts
/// of both sides that their diff touches.
enum Job<'a> {
    Side(Language, Blob<'a>),
    Pair(Language, Blob<'a>, Blob<'a>, &'a [Hunk]),
    /// The parts of a file that `plan` names; when they fail their checks, the sides `whole` names
    /// are parsed whole.
    Parts {
        language: Language,
        old: Blob<'a>,
        new: Blob<'a>,
        hunks: &'a [Hunk],
        plan: semantic::Plan,
        whole: Option<Box<Job<'a>>>,
    },
}

/// The parses a job made, by key.
type Made = Vec<(Key, Arc<Parsed>)>;

impl Job<'_> {
    /// The bytes it parses from scratch, roughly what it costs: its larger side, or its parts.
    fn bytes(&self) -> usize {
        match self {
            Job::Side(_, (_, text)) => text.len(),
            Job::Pair(_, (_, old), (_, new), _) => old.len().max(new.len()),
            Job::Parts { plan, .. } => plan.bytes,
        }
    }

    /// Parses what the job names, or marks it [`Parsed::TimeBudget`] when `deadline` has passed; a
    /// job for which `split` says so parses each side as two halves on two threads
    /// ([`semantic::parse_split`]).
    fn run(&self, deadline: Instant, split: &dyn Fn(&Job<'_>) -> bool) -> Made {
        let late = Instant::now() > deadline;
        match self {
            &Job::Side(language, (id, text)) => {
                let parsed = match late {
                    true => Parsed::TimeBudget,
                    false if split(self) => semantic::parse_split(language, text, None, deadline).0,
                    false => semantic::parse(language, text, deadline),
                };
                vec![(Key::whole(id, language), Arc::new(parsed))]
            }
            &Job::Pair(language, (old_id, old), (new_id, new), hunks) => {
                let (old, new) = match late {
                    true => (Parsed::TimeBudget, Parsed::TimeBudget),
                    false if split(self) => match semantic::parse_split(language, old, Some((new, hunks)), deadline) {
                        (old, Some(new)) => (old, new),
                        (old, None) => (old, Parsed::TimeBudget),
                    },
                    false => semantic::parse_pair(language, old, new, hunks, deadline),
                };
                vec![(Key::whole(old_id, language), Arc::new(old)), (Key::whole(new_id, language), Arc::new(new))]
            }
            Job::Parts { language, old, new, hunks, plan, whole } => {
                let parts = match late {
                    true => None,
                    false => semantic::parse_parts(*language, plan, old.1, new.1, hunks, deadline),
                };
                match parts {
                    Some((old_symbols, new_symbols)) => {
                        let [old_key, new_key] = Key::parts(old.0, new.0, *language, hunks);
                        let symbols = |symbols| Arc::new(Parsed::Symbols(symbols));
                        vec![(old_key, symbols(old_symbols)), (new_key, symbols(new_symbols))]
                    }
                    None => whole.as_ref().map_or_else(Vec::new, |whole| whole.run(deadline, split)),
                }
            }
        }
    }
}

/// The job that parses whole the sides of `file` that neither `parses` nor `cache` has, nor
/// another job of `wanted` makes, with the keys of the sides it parses (the caller adds them to
/// `wanted` when the job will surely run).
fn whole_job<'a>(
    file: &FileSides<'a>,
    parses: &mut Parses,
    cache: &Cache,
    wanted: &HashSet<Key>,
) -> (Option<Job<'a>>, Vec<Key>) {
    let mut sides = Vec::with_capacity(2);
    let mut keys = Vec::with_capacity(2);
    for (id, text) in [file.old, file.new].into_iter().flatten() {
        let key = Key::whole(id, file.language);
        if parses.contains_key(&key) || wanted.contains(&key) {
            continue;
        }
        match cache.parses.get(&key) {
            Some(parsed) => {
                parses.insert(key, parsed);
            }
            None => {
                keys.push(key);
                sides.push((id, text));
            }
        }
    }
    let job = match sides[..] {
        [old, new] => Some(Job::Pair(file.language, old, new, file.hunks)),
        [side] => Some(Job::Side(file.language, side)),
        _ => None,
    };
    (job, keys)
}

/// Whether `parses` has, or `cache` keeps (then `parses` gets them), the parses of both sides of
/// `file`, whose blob ids are `old` and `new`: their whole parses, or their parts'.
fn at_hand(file: &FileSides<'_>, old: ObjectId, new: ObjectId, parses: &mut Parses, cache: &Cache) -> bool {
    let wholes = [Key::whole(old, file.language), Key::whole(new, file.language)];
    for keys in [wholes, Key::parts(old, new, file.language, file.hunks)] {
        if keys.iter().all(|key| parses.contains_key(key)) {
            return true;
        }
        let kept: Vec<Arc<Parsed>> = keys.iter().map_while(|key| cache.parses.get(key)).collect();
        if let [old_parsed, new_parsed] = &kept[..] {
            parses.insert(keys[0], Arc::clone(old_parsed));
            parses.insert(keys[1], Arc::clone(new_parsed));
            return true;
        }
    }
    false
}

/// Parses every side of `files` not in `cache` yet, on up to two threads, and keeps the new parses
/// in `cache`; returns all the parses the call needs. A large file with a small change has only
/// the parts its diff touches parsed ([`semantic::parse_parts`]); otherwise both sides of a file
/// are parsed on one thread, the new side as an edit of the old ([`semantic::parse_pair`]), and a
/// file larger than the rest together in halves on both threads ([`semantic::parse_split`]).
/// The caller looks a side up by its parts' key first, then by its whole key. Without `parts`,
/// every file is parsed whole.
pub(super) fn parse_all(files: &[FileSides<'_>], cache: &Cache, deadline: Instant, parts: bool) -> Parses {
    let mut parses = Parses::new();
    let mut jobs: Vec<Job<'_>> = Vec::new();
    let mut wanted: HashSet<Key> = HashSet::new();
    for file in files {
        // Planning parts scans the whole old side, so past the deadline a file goes to a whole job,
        // which answers `TimeBudget` at once.
        let planning = parts && Instant::now() <= deadline;
        if let (true, Some(old), Some(new)) = (planning, file.old, file.new) {
            let parts = Key::parts(old.0, new.0, file.language, file.hunks);
            if parts.iter().all(|key| wanted.contains(key)) || at_hand(file, old.0, new.0, &mut parses, cache) {
                continue;
            }
            if let Some(plan) = semantic::plan(file.language, old.1, file.hunks) {
                // The whole sides are parsed only when the parts fail, so they do not join `wanted`.
                let whole = whole_job(file, &mut parses, cache, &wanted).0.map(Box::new);
                wanted.extend(parts);
                jobs.push(Job::Parts { language: file.language, old, new, hunks: file.hunks, plan, whole });
                continue;
            }
        }
        let (job, keys) = whole_job(file, &mut parses, cache, &wanted);
        wanted.extend(keys);
        jobs.extend(job);
    }
    // The largest first, each to the next free thread; one that is more than its share of the work (of
    // all the call's, shared by the cores) is parsed in halves on two threads, so that one large file
    // does not keep a core waiting.
    jobs.sort_by_key(|job| std::cmp::Reverse(job.bytes()));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).min(2);
    let total: usize = jobs.iter().map(Job::bytes).sum();
    let split = |job: &Job<'_>| cores > 1 && job.bytes() >= semantic::MIN_SPLIT_BYTES && job.bytes() * cores > total;
    let workers = cores.min(jobs.len());
    let parsed: Made = if workers <= 1 {
        jobs.iter().flat_map(|job| job.run(deadline, &split)).collect()
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results = std::sync::Mutex::new(Vec::with_capacity(wanted.len()));
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    while let Some(job) = jobs.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                        let result = job.run(deadline, &split);
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
