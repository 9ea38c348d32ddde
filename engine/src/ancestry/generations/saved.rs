//! Generation tables saved in the engine's run dir (`<run dir>/generations/<name>.gen`, one file per repository), so
//! that a new process loads a repository's numbers (a few milliseconds for 80,000 commits) instead of reading its
//! whole history again. Never in a repository: a read never writes one.
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
//! | 4 | length `p` of the common dir path |
//! | `p` | the common dir path (the repository the table belongs to) |
//! | `n` x id length | the ids, strictly ascending |
//! | `n` x 4 | their generation numbers (each >= 1), in the same order |
//! | 4 | CRC-32 of every byte before it |
//!
//! Why a saved number can be trusted. A wrong number breaks the walk's exactness silently (a number too low lets
//! the walk stop before a path that makes commits common, and a count comes out too high), so a file is used only
//! when it is exactly what this engine wrote for this repository as it is now: the magic, version, hash kind,
//! fingerprint and path must match, the length must be exactly what the count says, the checksum must hold (a
//! truncated, damaged or half-written file fails it), the ids must ascend and every number be at least 1. Anything
//! else is ignored (the history is numbered again and the file rewritten). What is written is trusted because only
//! complete tables are written: every entry was numbered from a complete ancestry, and every parent of an entry is
//! an entry too (tables filled with the commit-graph's help, whose parents' numbers live in the commit-graph, are
//! not saved: with a commit-graph there is little to save). A commit id hashes its parents, so an id's number never
//! changes while the fingerprint holds, even if the repository at that path is replaced by another.
//!
//! Writes go through one thread of their own, off every call's path, to a temporary file in the same directory
//! renamed over the old one: a reader sees the old file or the new one, never a mix (and a file cut short by a
//! crash fails the checksum). Two processes writing the same table each rename a complete file; the last one
//! stays.

use std::collections::VecDeque;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError, RwLock};

use gix::ObjectId;
use sha2::Digest as _;

use super::{Fingerprint, Shared, Table};

/// The file format's version: a file of another version is ignored (and rewritten).
const VERSION: u32 = 1;

/// The first bytes of every table file.
const MAGIC: &[u8; 8] = b"FXGENTAB";

/// Bytes of the header before the path.
const HEAD: usize = 8 + 4 + 1 + 3 + 32 + 4 + 4;

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
    let name: String = digest[..16].iter().map(|byte| format!("{byte:02x}")).collect();
    Some(dir.join(format!("{name}.gen")))
}

/// The code of an object hash kind in the header.
fn kind_code(kind: gix::hash::Kind) -> u8 {
    match kind {
        gix::hash::Kind::Sha1 => 1,
        _ => 2,
    }
}

/// The saved table of `common_dir` for `fingerprint`, when a valid one is there (see the module documentation).
pub(super) fn load(common_dir: &Path, kind: gix::hash::Kind, fingerprint: &Fingerprint) -> Option<Table> {
    let bytes = std::fs::read(file_of(common_dir)?).ok()?;
    let numbers = parse(&bytes, common_dir, kind, fingerprint)?;
    let saved = numbers.len();
    Some(Table { epoch: *fingerprint, numbers, saved, self_contained: true })
}

/// The numbers of a valid file, `None` for anything else.
fn parse(
    bytes: &[u8],
    common_dir: &Path,
    kind: gix::hash::Kind,
    fingerprint: &Fingerprint,
) -> Option<gix::hashtable::HashMap<ObjectId, u32>> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(4)?)?;
    if crc32fast::hash(body).to_le_bytes() != *sum || body.len() < HEAD {
        return None;
    }
    let word = |at: usize| -> Option<usize> {
        let field: [u8; 4] = body.get(at..at + 4)?.try_into().ok()?;
        usize::try_from(u32::from_le_bytes(field)).ok()
    };
    let path = common_dir.as_os_str().as_encoded_bytes();
    let header_ok = &body[..8] == MAGIC
        && word(8)? == VERSION as usize
        && body[12] == kind_code(kind)
        && body[13..16] == [0, 0, 0]
        && body[16..48] == fingerprint[..];
    let (count, path_len) = (word(48)?, word(52)?);
    let id_len = kind.len_in_bytes();
    let ids_at = HEAD.checked_add(path_len)?;
    let numbers_at = ids_at.checked_add(count.checked_mul(id_len)?)?;
    if !header_ok || body.get(HEAD..ids_at)? != path || body.len() != numbers_at.checked_add(count.checked_mul(4)?)? {
        return None;
    }
    let mut numbers = gix::hashtable::HashMap::default();
    numbers.reserve(count);
    let mut previous: Option<&[u8]> = None;
    for (id, number) in body[ids_at..numbers_at].chunks_exact(id_len).zip(body[numbers_at..].chunks_exact(4)) {
        let number = u32::from_le_bytes(number.try_into().ok()?);
        if number == 0 || previous.is_some_and(|previous| previous >= id) {
            return None;
        }
        previous = Some(id);
        numbers.insert(ObjectId::try_from(id).ok()?, number);
    }
    Some(numbers)
}

/// The bytes of a file holding `entries` (sorted by id here).
fn render(
    common_dir: &Path,
    kind: gix::hash::Kind,
    fingerprint: &Fingerprint,
    entries: &mut [(ObjectId, u32)],
) -> Option<Vec<u8>> {
    entries.sort_unstable_by_key(|(id, _)| *id);
    let path = common_dir.as_os_str().as_encoded_bytes();
    let id_len = kind.len_in_bytes();
    let mut bytes = Vec::with_capacity(HEAD + path.len() + entries.len() * (id_len + 4) + 4);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&[kind_code(kind), 0, 0, 0]);
    bytes.extend_from_slice(fingerprint);
    bytes.extend_from_slice(&u32::try_from(entries.len()).ok()?.to_le_bytes());
    bytes.extend_from_slice(&u32::try_from(path.len()).ok()?.to_le_bytes());
    bytes.extend_from_slice(path);
    for (id, _) in entries.iter() {
        bytes.extend_from_slice(id.as_bytes());
    }
    for (_, number) in entries.iter() {
        bytes.extend_from_slice(&number.to_le_bytes());
    }
    let sum = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&sum.to_le_bytes());
    Some(bytes)
}

/// Writes the table of `common_dir` now, from a copy taken under its read lock; `false` when there is nothing to
/// write (no directory, another epoch, not self-contained) or the write failed (the next process numbers again).
fn write(common_dir: &Path, kind: gix::hash::Kind, shared: &Shared) -> bool {
    let Some(file) = file_of(common_dir) else { return false };
    let (fingerprint, mut entries) = {
        let table = shared.table.read().unwrap_or_else(PoisonError::into_inner);
        if !table.self_contained || table.numbers.is_empty() {
            return false;
        }
        (table.epoch, table.numbers.iter().map(|(id, number)| (*id, *number)).collect::<Vec<_>>())
    };
    let Some(bytes) = render(common_dir, kind, &fingerprint, &mut entries) else { return false };
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

/// The writer thread: writes queued tables one at a time (a table queued twice is written once, with its entries
/// at that time).
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

/// The file a repository's table is saved in (`None` when tables are kept in memory only): for tests.
pub(crate) fn path_of(common_dir: &Path) -> Option<PathBuf> {
    file_of(common_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (PathBuf, Fingerprint, Vec<(ObjectId, u32)>) {
        let ids = [[3_u8; 20], [1; 20], [2; 20]];
        let entries = ids.iter().zip(1..).map(|(id, n)| (ObjectId::Sha1(*id), n)).collect();
        (PathBuf::from("/repos/one/.git"), [7; 32], entries)
    }

    #[test]
    fn a_written_table_reads_back_and_any_damage_is_refused() {
        let (dir, fingerprint, mut entries) = sample();
        let kind = gix::hash::Kind::Sha1;
        let bytes = render(&dir, kind, &fingerprint, &mut entries).expect("renders");
        let numbers = parse(&bytes, &dir, kind, &fingerprint).expect("parses");
        assert_eq!(numbers.len(), 3);
        assert_eq!(numbers.get(&ObjectId::Sha1([3; 20])), Some(&1));
        assert_eq!(numbers.get(&ObjectId::Sha1([2; 20])), Some(&3));
        // Every single flipped bit, every truncation: refused.
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            assert!(parse(&damaged, &dir, kind, &fingerprint).is_none(), "bit flipped at {at}");
            assert!(parse(&bytes[..at], &dir, kind, &fingerprint).is_none(), "cut at {at}");
        }
        // Another repository or another shallow boundary / replacements: refused.
        assert!(parse(&bytes, Path::new("/repos/two/.git"), kind, &fingerprint).is_none());
        assert!(parse(&bytes, &dir, kind, &[8; 32]).is_none());
    }

    #[test]
    fn a_well_summed_file_with_unsorted_ids_or_a_zero_number_is_refused() {
        let (dir, fingerprint, _) = sample();
        let kind = gix::hash::Kind::Sha1;
        let forge = |entries: &[([u8; 20], u32)]| {
            let mut entries: Vec<_> = entries.iter().map(|(id, n)| (ObjectId::Sha1(*id), *n)).collect();
            render(&dir, kind, &fingerprint, &mut entries).expect("renders")
        };
        assert!(parse(&forge(&[([1; 20], 0)]), &dir, kind, &fingerprint).is_none(), "a zero number");
        // Two ids swapped after sorting, the checksum recomputed.
        let mut bytes = forge(&[([1; 20], 1), ([2; 20], 2)]);
        let ids_at = HEAD + dir.as_os_str().len();
        let (first, second) = bytes[ids_at..ids_at + 40].split_at_mut(20);
        first.swap_with_slice(second);
        let len = bytes.len();
        let sum = crc32fast::hash(&bytes[..len - 4]);
        bytes[len - 4..].copy_from_slice(&sum.to_le_bytes());
        assert!(parse(&bytes, &dir, kind, &fingerprint).is_none(), "ids out of order");
    }
}
