//! Generation tables saved in the engine's run dir (`<run dir>/generations/<name>.gen`, one file
//! per repository), so that a new process loads a repository's commit table (a few milliseconds for
//! 80,000 commits) instead of reading its whole history again. Never in a repository: a read never
//! writes one.
//!
//! The file (little-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `FXGENTAB` |
//! | 4 | format version ([`VERSION`]) |
//! | 1 | object hash kind (1 = SHA-1, 2 = SHA-256); ids are that long |
//! | 3 | zero |
//! | 32 | the fingerprint of what gix's parents depend on besides the commits (shallow boundary, replacements) |
//! | 4 | entry count `n` |
//! | 4 | parent count `m` (of every entry together) |
//! | 4 | length `p` of the common dir path |
//! | `p` | the common dir path (the repository the table belongs to) |
//! | `n` x id length | the ids, strictly ascending |
//! | `n` x 4 | their generation numbers, in the same order |
//! | `n` x 8 | their committer dates (seconds since the epoch, signed), in the same order |
//! | `n` x 4 | how many parents each has (as git walks them: none at a shallow boundary), in the same order |
//! | `m` x 4 | the parents, as positions of entries (0-based, in the order above), each entry's in a run, in order |
//! | 4 | CRC-32 of every byte before it |
//!
//! Why a saved table can be trusted. A wrong number breaks the walk's exactness silently (a number
//! too low lets the walk stop before a path that makes commits common, and a count comes out too
//! high), and a wrong parent sends the walks down another history, so a file is used only when it
//! is exactly what this engine wrote for this repository as it is now: the magic, version, hash
//! kind, fingerprint and path must match, the length must be exactly what the counts say, the
//! checksum must hold (a truncated, damaged or half-written file fails it), the ids must ascend,
//! the parent counts add up to `m`, every parent is another entry, and every number is one more
//! than its parents' highest (1 without parents), so the numbers are the levels of the parents
//! written. Anything else is ignored (the history is numbered again and the file rewritten). What
//! is written is trusted because only complete tables are written: every entry was read and
//! numbered from a complete ancestry, and every parent of an entry is an entry too (tables filled
//! with the commit-graph's help, whose parents' numbers live in the commit-graph, are not saved:
//! with a commit-graph there is little to save). A commit id hashes its parents and its committer,
//! so an entry never changes while the fingerprint holds, even if the repository at that path is
//! replaced by another.
//!
//! Writes go through one thread of their own, off every call's path, to a temporary file in the
//! same directory renamed over the old one: a reader sees the old file or the new one, never a mix
//! (and a file cut short by a crash fails the checksum). Two processes writing the same table each
//! rename a complete file; the last one stays.

use std::collections::VecDeque;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError, RwLock};

use gix::ObjectId;
use sha2::Digest as _;

use super::{Entry, Fingerprint, Shared, Table};

/// The file format's version: a file of another version is ignored (and rewritten). 2: parents and
/// dates.
const VERSION: u32 = 2;

/// The first bytes of every table file.
const MAGIC: &[u8; 8] = b"FXGENTAB";

/// Bytes of the header before the path.
const HEAD: usize = 8 + 4 + 1 + 3 + 32 + 4 + 4 + 4;

/// The directory tables are saved in, process-wide as the tables are; `None`: in memory only.
fn directory() -> &'static RwLock<Option<PathBuf>> {
    static DIRECTORY: OnceLock<RwLock<Option<PathBuf>>> = OnceLock::new();
    DIRECTORY.get_or_init(|| RwLock::new(None))
}

/// Saves tables in `dir` from now on (`None`: keep them in memory only).
pub(crate) fn keep_in(dir: Option<PathBuf>) {
    *directory().write().unwrap_or_else(PoisonError::into_inner) = dir;
}

/// The file of the repository whose common dir is `common_dir`, when tables are saved.
fn file_of(common_dir: &Path) -> Option<PathBuf> {
    let dir = directory().read().unwrap_or_else(PoisonError::into_inner).clone()?;
    let digest = sha2::Sha256::digest(common_dir.as_os_str().as_encoded_bytes());
    let name: String = faster_hex::hex_string(&digest[..16]);
    Some(dir.join(format!("{name}.gen")))
}

/// The code of an object hash kind in the header.
fn kind_code(kind: gix::hash::Kind) -> u8 {
    match kind {
        gix::hash::Kind::Sha1 => 1,
        _ => 2,
    }
}

/// The saved table of `common_dir` for `fingerprint`, when a valid one is there (see the module
/// documentation).
pub(super) fn load(common_dir: &Path, kind: gix::hash::Kind, fingerprint: &Fingerprint) -> Option<Table> {
    let bytes = std::fs::read(file_of(common_dir)?).ok()?;
    let (entries, parents) = parse(&bytes, common_dir, kind, fingerprint)?;
    Some(Table::with(*fingerprint, entries, parents))
}

/// The entries and parent positions of a valid file, `None` for anything else.
fn parse(
    bytes: &[u8],
    common_dir: &Path,
    kind: gix::hash::Kind,
    fingerprint: &Fingerprint,
) -> Option<(Vec<Entry>, Vec<u32>)> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(4)?)?;
    if crc32fast::hash(body).to_le_bytes() != *sum || body.len() < HEAD {
        return None;
    }
    let word = |at: usize| -> Option<u32> { Some(u32::from_le_bytes(body.get(at..at + 4)?.try_into().ok()?)) };
    let path = common_dir.as_os_str().as_encoded_bytes();
    let header_ok = &body[..8] == MAGIC
        && word(8)? == VERSION
        && body[12] == kind_code(kind)
        && body[13..16] == [0, 0, 0]
        && body[16..48] == fingerprint[..];
    let (count, parent_total, path_len) =
        (usize::try_from(word(48)?).ok()?, usize::try_from(word(52)?).ok()?, usize::try_from(word(56)?).ok()?);
    let id_len = kind.len_in_bytes();
    let ids_at = HEAD.checked_add(path_len)?;
    let numbers_at = ids_at.checked_add(count.checked_mul(id_len)?)?;
    let times_at = numbers_at.checked_add(count.checked_mul(4)?)?;
    let counts_at = times_at.checked_add(count.checked_mul(8)?)?;
    let parents_at = counts_at.checked_add(count.checked_mul(4)?)?;
    let end = parents_at.checked_add(parent_total.checked_mul(4)?)?;
    if !header_ok || body.get(HEAD..ids_at)? != path || body.len() != end {
        return None;
    }
    let parents: Vec<u32> = words(&body[parents_at..end]).collect();
    let mut entries: Vec<Entry> = Vec::with_capacity(count);
    let mut next_parent = 0_usize;
    let columns = body[ids_at..numbers_at]
        .chunks_exact(id_len)
        .zip(words(&body[numbers_at..times_at]))
        .zip(body[times_at..counts_at].chunks_exact(8))
        .zip(words(&body[counts_at..parents_at]));
    for (((id, generation), time), parent_count) in columns {
        if entries.last().is_some_and(|previous| previous.id.as_bytes() >= id) {
            return None;
        }
        let parents_at = next_parent;
        next_parent = next_parent.checked_add(usize::try_from(parent_count).ok()?)?;
        entries.push(Entry {
            id: ObjectId::try_from(id).ok()?,
            generation,
            time: i64::from_le_bytes(time.try_into().ok()?),
            parents_at: u32::try_from(parents_at).ok()?,
            parent_count,
        });
    }
    if next_parent != parent_total {
        return None;
    }
    // Every parent another entry, every number its parents' highest plus one.
    for entry in &entries {
        let own = &parents[entry.parents_at as usize..entry.parents_at as usize + entry.parent_count as usize];
        let mut highest = 0;
        for parent in own {
            // A commit its own parent fails the number check below.
            highest = highest.max(entries.get(*parent as usize)?.generation);
        }
        if Some(entry.generation) != highest.checked_add(1) {
            return None;
        }
    }
    Some((entries, parents))
}

/// The little-endian 32-bit words of `bytes` (a multiple of 4 long).
fn words(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes.chunks_exact(4).map(|word| u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
}

/// The bytes of a file holding `table`'s entries (sorted by id here, parents renumbered to match).
fn render(common_dir: &Path, kind: gix::hash::Kind, table: &Table) -> Option<Vec<u8>> {
    let mut order: Vec<u32> = (0..u32::try_from(table.entries.len()).ok()?).collect();
    order.sort_unstable_by_key(|at| table.entries[*at as usize].id);
    let mut position = vec![0_u32; order.len()];
    for (new, old) in order.iter().enumerate() {
        position[*old as usize] = u32::try_from(new).ok()?;
    }
    let sorted: Vec<&Entry> = order.iter().map(|at| &table.entries[*at as usize]).collect();
    let mut parents: Vec<u32> = Vec::with_capacity(table.parents.len());
    for entry in &sorted {
        parents.extend(table.parents_of(entry)?.iter().map(|parent| position[*parent as usize]));
    }
    let path = common_dir.as_os_str().as_encoded_bytes();
    let id_len = kind.len_in_bytes();
    let mut bytes = Vec::with_capacity(HEAD + path.len() + sorted.len() * (id_len + 16) + parents.len() * 4 + 4);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&[kind_code(kind), 0, 0, 0]);
    bytes.extend_from_slice(&table.epoch);
    bytes.extend_from_slice(&u32::try_from(sorted.len()).ok()?.to_le_bytes());
    bytes.extend_from_slice(&u32::try_from(parents.len()).ok()?.to_le_bytes());
    bytes.extend_from_slice(&u32::try_from(path.len()).ok()?.to_le_bytes());
    bytes.extend_from_slice(path);
    for entry in &sorted {
        bytes.extend_from_slice(entry.id.as_bytes());
    }
    for entry in &sorted {
        bytes.extend_from_slice(&entry.generation.to_le_bytes());
    }
    for entry in &sorted {
        bytes.extend_from_slice(&entry.time.to_le_bytes());
    }
    for entry in &sorted {
        bytes.extend_from_slice(&entry.parent_count.to_le_bytes());
    }
    for parent in &parents {
        bytes.extend_from_slice(&parent.to_le_bytes());
    }
    let sum = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&sum.to_le_bytes());
    Some(bytes)
}

/// Writes the table of `common_dir` now, rendered under its read lock; `false` when there is
/// nothing to write (no directory, not self-contained, empty) or the write failed (the next process
/// numbers again).
fn write(common_dir: &Path, kind: gix::hash::Kind, shared: &Shared) -> bool {
    let Some(file) = file_of(common_dir) else { return false };
    let bytes = {
        let table = shared.table.read().unwrap_or_else(PoisonError::into_inner);
        if !table.self_contained || table.entries.is_empty() {
            return false;
        }
        render(common_dir, kind, &table)
    };
    let Some(bytes) = bytes else { return false };
    let Some(dir) = file.parent() else { return false };
    let written = std::fs::create_dir_all(dir).and_then(|()| {
        let mut temporary = tempfile::Builder::new().prefix(".gen-").tempfile_in(dir)?;
        temporary.write_all(&bytes)?;
        temporary.persist(&file).map_err(|err| err.error)?;
        Ok(())
    });
    written.is_ok()
}

/// One table waiting to be written.
struct Job {
    common_dir: PathBuf,
    kind: gix::hash::Kind,
    shared: Arc<Shared>,
}

/// The writer thread's queue: the tables waiting and whether one is being written.
#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    busy: bool,
}

/// The queue and the condition the writer thread and [`flush`] wait on.
fn queue() -> &'static (Mutex<Queue>, Condvar) {
    static QUEUE: OnceLock<(Mutex<Queue>, Condvar)> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let spawned = std::thread::Builder::new().name("fluxgit-generation-tables".to_owned()).spawn(writer);
        drop(spawned);
        (Mutex::new(Queue::default()), Condvar::new())
    })
}

/// The writer thread: writes queued tables one at a time (a table queued twice is written once,
/// with its entries at that time).
fn writer() {
    let (lock, wake) = queue();
    let mut queue = lock.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        let Some(job) = queue.jobs.pop_front() else {
            queue = wake.wait(queue).unwrap_or_else(PoisonError::into_inner);
            continue;
        };
        queue.jobs.retain(|other| other.common_dir != job.common_dir);
        queue.busy = true;
        drop(queue);
        write(&job.common_dir, job.kind, &job.shared);
        queue = lock.lock().unwrap_or_else(PoisonError::into_inner);
        queue.busy = false;
        wake.notify_all();
    }
}

/// Queues the table of `common_dir` for the writer thread (when tables are saved at all).
pub(super) fn schedule(common_dir: &Path, kind: gix::hash::Kind, shared: &Arc<Shared>) {
    if directory().read().unwrap_or_else(PoisonError::into_inner).is_none() {
        return;
    }
    let (lock, wake) = queue();
    let job = Job { common_dir: common_dir.to_path_buf(), kind, shared: Arc::clone(shared) };
    lock.lock().unwrap_or_else(PoisonError::into_inner).jobs.push_back(job);
    wake.notify_all();
}

/// Waits until every table queued so far is written (or failed to be).
pub(crate) fn flush() {
    let (lock, wake) = queue();
    let mut queue = lock.lock().unwrap_or_else(PoisonError::into_inner);
    while queue.busy || !queue.jobs.is_empty() {
        queue = wake.wait(queue).unwrap_or_else(PoisonError::into_inner);
    }
}

/// The file a repository's table is saved in (`None` when tables are kept in memory only): for
/// tests.
pub(crate) fn path_of(common_dir: &Path) -> Option<PathBuf> {
    file_of(common_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: &str = "/repos/one/.git";
    const KIND: gix::hash::Kind = gix::hash::Kind::Sha1;
    const FINGERPRINT: Fingerprint = [7; 32];

    /// A table of `commits` (id byte, number, date, parents as positions in this list), in this
    /// order.
    fn table(commits: &[(u8, u32, i64, &[u32])]) -> Table {
        let (mut entries, mut parents) = (Vec::new(), Vec::new());
        for (id, generation, time, own) in commits {
            let id = ObjectId::Sha1([*id; 20]);
            let parents_at = u32::try_from(parents.len()).expect("small");
            parents.extend_from_slice(own);
            let parent_count = u32::try_from(own.len()).expect("small");
            entries.push(Entry { id, generation: *generation, time: *time, parents_at, parent_count });
        }
        Table::with(FINGERPRINT, entries, parents)
    }

    /// A root `3`, `1` on it, the merge `2` of `1` and `3` (in that order), dated out of order.
    fn sample() -> Table {
        table(&[(3, 1, 500, &[]), (1, 2, -20, &[0]), (2, 3, 100, &[1, 0])])
    }

    /// An entry read back: id byte, number, date, parent id bytes.
    type Row = (u8, u32, i64, Vec<u8>);

    /// Every entry of a parsed file.
    fn read_back(bytes: &[u8]) -> Option<Vec<Row>> {
        let (entries, parents) = parse(bytes, Path::new(DIR), KIND, &FINGERPRINT)?;
        let byte = |entry: &Entry| entry.id.as_bytes()[0];
        Some(
            entries
                .iter()
                .map(|entry| {
                    let own = &parents[entry.parents_at as usize..][..entry.parent_count as usize];
                    (
                        byte(entry),
                        entry.generation,
                        entry.time,
                        own.iter().map(|at| byte(&entries[*at as usize])).collect(),
                    )
                })
                .collect(),
        )
    }

    /// `bytes` with its checksum made right again.
    fn summed(mut bytes: Vec<u8>) -> Vec<u8> {
        let len = bytes.len();
        let sum = crc32fast::hash(&bytes[..len - 4]);
        bytes[len - 4..].copy_from_slice(&sum.to_le_bytes());
        bytes
    }

    #[test]
    fn a_written_table_reads_back_and_any_damage_is_refused() {
        let bytes = render(Path::new(DIR), KIND, &sample()).expect("renders");
        let expected = vec![(1, 2, -20, vec![3]), (2, 3, 100, vec![1, 3]), (3, 1, 500, vec![])];
        assert_eq!(read_back(&bytes), Some(expected), "sorted by id, parents renumbered in order");
        // Every single flipped bit, every truncation: refused.
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            assert!(read_back(&damaged).is_none(), "bit flipped at {at}");
            assert!(read_back(&bytes[..at]).is_none(), "cut at {at}");
        }
        // Another repository or another shallow boundary / replacements: refused.
        assert!(parse(&bytes, Path::new("/repos/two/.git"), KIND, &FINGERPRINT).is_none());
        assert!(parse(&bytes, Path::new(DIR), KIND, &[8; 32]).is_none());
    }

    #[test]
    fn a_well_summed_file_whose_entries_do_not_hold_together_is_refused() {
        let forge =
            |commits: &[(u8, u32, i64, &[u32])]| render(Path::new(DIR), KIND, &table(commits)).expect("renders");
        assert!(read_back(&forge(&[(1, 1, 0, &[]), (2, 2, 0, &[0])])).is_some(), "the control holds together");
        assert!(read_back(&forge(&[(1, 0, 0, &[])])).is_none(), "a zero number");
        assert!(read_back(&forge(&[(1, 1, 0, &[]), (2, 3, 0, &[0])])).is_none(), "a number above its parent's + 1");
        assert!(read_back(&forge(&[(1, 2, 0, &[]), (2, 3, 0, &[0])])).is_none(), "a root not numbered 1");
        let equal = forge(&[(3, 1, 0, &[]), (2, 2, 0, &[0]), (1, 2, 0, &[1])]);
        assert!(read_back(&equal).is_none(), "a child numbered as its parent");
        // Each of these rewritten in place, the checksum made right again.
        let control = forge(&[(1, 1, 0, &[]), (2, 2, 0, &[0])]);
        let ids_at = HEAD + DIR.len();
        let parent_at = control.len() - 8;
        let mut swapped = control.clone();
        let (first, second) = swapped[ids_at..ids_at + 40].split_at_mut(20);
        first.swap_with_slice(second);
        assert!(read_back(&summed(swapped)).is_none(), "ids out of order");
        for (what, position) in [("a parent beyond the entries", 2_u32), ("a commit its own parent", 1)] {
            let mut bytes = control.clone();
            bytes[parent_at..parent_at + 4].copy_from_slice(&position.to_le_bytes());
            assert!(read_back(&summed(bytes)).is_none(), "{what}");
        }
    }
}
