//! Ref and reflog movements (design.md#engine): every line of HEAD's and each local branch's
//! reflog, per repository (per work tree: HEAD's log is the work tree's own), parsed once and then
//! fed incrementally. `fleet.digest` answers from them.
//!
//! The reflog files stay the source of truth. Each use of a repository compares every log with what
//! was taken in:
//! - a file that grew by appending (git's only way of writing a reflog line) -> only the new lines
//!   are read: the bytes of the last line taken in are still where they were, the new complete
//!   lines follow them;
//! - a file that was rewritten (`git reflog expire`, `git reflog delete`, `gc`: another inode, a
//!   shorter file, or the last line taken in is no longer there) -> that log is read again from its
//!   start;
//! - a branch that is gone (deleted, renamed) -> its log is dropped; a new branch -> its log is
//!   read.
//!
//! A line still being written (no newline yet) is taken in with the next use. Per line, whether the
//! old tip is an ancestor of the new one is computed once (commits do not change); which HEAD lines
//! repeat a branch's line is computed again after every change (it depends on both logs).
//!
//! With a directory ([`Store::new`]), each repository's movements are also kept in
//! `<dir>/v<VERSION>/<digest of the git dir>.json` (rewritten atomically after a change), so that a
//! process starting with an existing index only reads what was appended since. A file of another
//! version, of another repository or that does not parse is ignored and replaced. Keeping it never
//! fails a call.

use std::collections::HashMap;
use std::io::{Read as _, Seek as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use gix::ObjectId;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::facets::{iso_time, utf8};

/// The version of the files kept on disk: a file of another version is read again from the reflogs.
pub const VERSION: u32 = 1;
/// The largest kept movements file read, in bytes (256 MiB: about a million reflog lines); a
/// larger one is ignored and the reflogs are read again.
pub const MAX_KEPT_BYTES: u64 = 256 * 1024 * 1024;

/// One reflog line, parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// The tip before (the null id when the ref was created).
    #[serde(with = "hex")]
    pub old: ObjectId,
    /// The tip after (the null id when the ref was deleted).
    #[serde(with = "hex")]
    pub new: ObjectId,
    /// When, seconds since the epoch.
    pub seconds: i64,
    /// When, ISO 8601 with the offset git recorded.
    pub at: String,
    /// `Name <email>` as git recorded it.
    pub identity: String,
    /// The reflog message exactly.
    pub message: String,
    /// `old` is an ancestor of `new` (`git merge-base --is-ancestor`), computed once when an answer
    /// needs it; a commit that is gone counts as an ancestor (nothing can be claimed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ancestor: Option<bool>,
    /// For a branch's line: HEAD's log holds the same line (HEAD moved with the branch). For a line
    /// of HEAD's log: a branch's line is the same movement (so it is no movement of HEAD alone).
    #[serde(default)]
    pub paired: bool,
}

impl Line {
    fn same(&self, other: &Self) -> bool {
        self.old == other.old
            && self.new == other.new
            && self.seconds == other.seconds
            && self.identity == other.identity
            && self.message == other.message
    }
}

/// One reflog file and what was taken in of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Log {
    /// `HEAD`, or the branch's short name (`main`).
    pub name: String,
    /// Its lines, oldest first (the file's order).
    pub lines: Vec<Line>,
    /// Bytes of the file taken in (up to the end of the last complete line).
    taken: u64,
    /// The file's inode when it was read (0 where there is none): another inode means the file was
    /// rewritten.
    inode: u64,
    /// The bytes of the last line taken in, newline included: they must still end at `taken`.
    #[serde(with = "hex_bytes")]
    last: Vec<u8>,
}

/// The movements of one repository: its local branches' logs in ref order, then HEAD's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Movements {
    /// The local branches that exist, in the order git lists them, each with its log (empty without
    /// one).
    pub branches: Vec<Log>,
    /// HEAD's log; `None` when HEAD cannot be read.
    pub head: Option<Log>,
}

/// What is kept on disk for one repository.
#[derive(Debug, Serialize, Deserialize)]
struct Kept {
    version: u32,
    git_dir: String,
    movements: Movements,
}

/// Repositories whose movements are held in memory at most (twice the 500 a fleet call reads);
/// beyond it the least recently read one not being read right now is dropped from memory (its kept
/// file stays: the next read loads it and reads only what was appended since).
pub const MAX_REPOSITORIES: usize = 1_024;

/// The movements of every repository the engine has read recently (at most [`MAX_REPOSITORIES`]),
/// in memory and (with a directory) on disk. Per repository the memory is the size of its HEAD and
/// branch reflogs as parsed (git expires reflog lines after 90 days by default), so the whole is
/// bounded by the repository count.
#[derive(Debug)]
pub struct Store {
    dir: Option<PathBuf>,
    repos: Mutex<Repos>,
    /// Repositories held in memory at most.
    limit: usize,
}

impl Default for Store {
    fn default() -> Self {
        Self::new(None)
    }
}

/// The repositories held, by git dir, each with when it was last read (a tick of `clock`).
#[derive(Debug, Default)]
struct Repos {
    slots: HashMap<PathBuf, (Arc<Slot>, u64)>,
    clock: u64,
}

impl Repos {
    /// `git_dir`'s slot (created empty when absent), marked as read now; drops the least recently
    /// read slots not in use while more than `limit` are held.
    fn take(&mut self, git_dir: &Path, limit: usize) -> Arc<Slot> {
        self.clock += 1;
        let clock = self.clock;
        let entry = self.slots.entry(git_dir.to_path_buf()).or_default();
        entry.1 = clock;
        let slot = Arc::clone(&entry.0);
        while self.slots.len() > limit {
            // Only slots nobody holds (the map's own `Arc` is the only one) can go; the one just taken is held.
            let oldest = self
                .slots
                .iter()
                .filter(|(_, (slot, _))| Arc::strong_count(slot) == 1)
                .min_by_key(|(_, (_, used))| *used)
                .map(|(dir, _)| dir.clone());
            let Some(oldest) = oldest else { break };
            self.slots.remove(&oldest);
        }
        slot
    }
}

/// One repository's movements once read (`None` before, or after a read failed).
type Slot = Mutex<Option<Arc<Movements>>>;

impl Store {
    /// Movements kept in memory and, when `dir` is given, under it (`<index dir>/movements` for the
    /// sidecar).
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self::with_limit(dir, MAX_REPOSITORIES)
    }

    /// [`Store::new`] holding at most `limit` repositories in memory (at least 1).
    pub fn with_limit(dir: Option<PathBuf>, limit: usize) -> Self {
        Self { dir, repos: Mutex::new(Repos::default()), limit: limit.max(1) }
    }

    /// How many repositories' movements are held in memory.
    pub fn held(&self) -> usize {
        self.repos.lock().unwrap_or_else(PoisonError::into_inner).slots.len()
    }

    /// The file `repo`'s movements are kept in, when the store has a directory.
    pub fn file(&self, git_dir: &Path) -> Option<PathBuf> {
        let digest = crate::hex_digest::hex_digest(&[&git_dir.display().to_string()], 16);
        Some(self.dir.as_ref()?.join(format!("v{VERSION}")).join(format!("{digest}.json")))
    }

    /// `repo`'s movements, brought up to date with its reflog files (only what changed since the
    /// last read is read).
    ///
    /// # Errors
    /// [`Error::GitRead`] when the refs cannot be listed, a reflog cannot be read or does not
    /// parse, or a commit cannot be judged.
    pub fn read(&self, repo: &gix::Repository) -> Result<Arc<Movements>> {
        let git_dir = repo.git_dir().to_path_buf();
        let slot = self.repos.lock().unwrap_or_else(PoisonError::into_inner).take(&git_dir, self.limit);
        let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
        let before = match slot.take() {
            Some(known) => known,
            None => Arc::new(self.load(&git_dir).unwrap_or_default()),
        };
        let after = refresh(repo, &before)?;
        let current = if after == *before {
            before
        } else {
            let after = Arc::new(after);
            self.keep(&git_dir, &after);
            after
        };
        *slot = Some(Arc::clone(&current));
        Ok(current)
    }

    /// The movements kept for `git_dir`, read as a regular file only (a FIFO or a link to a device
    /// there is ignored, as a file that does not parse is) and up to [`MAX_KEPT_BYTES`].
    fn load(&self, git_dir: &Path) -> Option<Movements> {
        let text = crate::regular_file::read(&self.file(git_dir)?, false, MAX_KEPT_BYTES).ok()?.ok()?;
        let kept: Kept = serde_json::from_slice(&text).ok()?;
        (kept.version == VERSION && kept.git_dir == git_dir.display().to_string()).then_some(kept.movements)
    }

    fn keep(&self, git_dir: &Path, movements: &Movements) {
        let Some(file) = self.file(git_dir) else { return };
        let kept = Kept { version: VERSION, git_dir: git_dir.display().to_string(), movements: movements.clone() };
        let Ok(text) = serde_json::to_vec(&kept) else { return };
        let Some(parent) = file.parent() else { return };
        if std::fs::create_dir_all(parent).is_err() {
            return;
        }
        let temporary = file.with_extension(format!("json.{}.tmp", std::process::id()));
        // Created anew: `O_EXCL` neither follows a symbolic link nor opens a FIFO planted under the
        // temporary name (a leftover is removed first).
        let _ = std::fs::remove_file(&temporary);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
            .and_then(|mut handle| std::io::Write::write_all(&mut handle, &text));
        if written.is_err() || std::fs::rename(&temporary, &file).is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
    }
}

/// `known` brought up to date with `repo`'s reflog files.
fn refresh(repo: &gix::Repository, known: &Movements) -> Result<Movements> {
    let logs = repo.common_dir().join("logs");
    let mut by_name: HashMap<&str, &Log> = known.branches.iter().map(|log| (log.name.as_str(), log)).collect();
    let mut branches = Vec::new();
    let platform = repo.references().map_err(|err| Error::git("refs", err))?;
    for reference in platform.local_branches().map_err(|err| Error::git("refs", err))? {
        let Ok(reference) = reference else { continue };
        let name = reference.name().shorten().to_string();
        let relative = gix::path::from_bstr(reference.name().as_bstr()).map_err(|err| Error::git("refs", err))?;
        let path = logs.join(relative);
        branches.push(read_log(&name, &path, by_name.remove(name.as_str()))?);
    }
    let head = match repo.find_reference("HEAD") {
        Ok(_) => Some(read_log("HEAD", &repo.git_dir().join("logs").join("HEAD"), known.head.as_ref())?),
        Err(_) => None,
    };
    let mut movements = Movements { branches, head };
    pair(&mut movements);
    judge(repo, &mut movements)?;
    Ok(movements)
}

/// The log `name` at `path`, reading only what was appended since `known` when the file is the one
/// read before.
fn read_log(name: &str, path: &Path, known: Option<&Log>) -> Result<Log> {
    let empty = Log { name: name.to_owned(), lines: Vec::new(), taken: 0, inode: 0, last: Vec::new() };
    // Opened without blocking and checked on the open file: a FIFO or a device in a reflog's place is read as no
    // reflog, never waited on or read without end.
    let mut file = match crate::regular_file::open(path, true) {
        Ok(crate::regular_file::Opened::File(file, _)) => file,
        Ok(_) => return Ok(empty),
        Err(err) => return Err(Error::git_text("reflog", format!("{}: {err}", path.display()))),
    };
    let failed = |err: std::io::Error| Error::git_text("reflog", format!("{}: {err}", path.display()));
    let metadata = file.metadata().map_err(failed)?;
    let inode = inode(&metadata);
    if let Some(known) = known
        .filter(|known| known.inode == inode && known.taken <= metadata.len() && known.last.len() as u64 <= known.taken)
    {
        let start = known.taken - known.last.len() as u64;
        file.seek(std::io::SeekFrom::Start(start)).map_err(failed)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(failed)?;
        if let Some(appended) = bytes.strip_prefix(known.last.as_slice()) {
            let mut log = known.clone();
            log.name = name.to_owned();
            take_in(&mut log, appended)?;
            return Ok(log);
        }
        file.rewind().map_err(failed)?;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(failed)?;
    let mut log = Log { inode, ..empty };
    take_in(&mut log, &bytes)?;
    Ok(log)
}

#[cfg(unix)]
fn inode(metadata: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(metadata)
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> u64 {
    0
}

/// Parses the complete lines of `bytes` (which follow what `log` took in) into `log`.
fn take_in(log: &mut Log, bytes: &[u8]) -> Result<()> {
    let Some(end) = bytes.iter().rposition(|byte| *byte == b'\n') else { return Ok(()) };
    let complete = &bytes[..=end];
    for line in complete[..end].split(|byte| *byte == b'\n') {
        let parsed = gix::refs::file::log::LineRef::from_bytes(line).map_err(|err| Error::git("reflog", err))?;
        let parsed = parsed.to_owned();
        log.lines.push(Line {
            old: parsed.previous_oid,
            new: parsed.new_oid,
            seconds: parsed.signature.time.seconds,
            at: iso_time(parsed.signature.time),
            identity: format!(
                "{} <{}>",
                crate::facets::name(&parsed.signature.name),
                crate::facets::name(&parsed.signature.email)
            ),
            message: crate::facets::clipped(&utf8(&parsed.message), crate::facets::MAX_SUBJECT_CHARS),
            ancestor: None,
            paired: false,
        });
    }
    log.last = complete[complete[..end].iter().rposition(|byte| *byte == b'\n').map_or(0, |at| at + 1)..].to_vec();
    log.taken += complete.len() as u64;
    Ok(())
}

/// Marks the lines HEAD's log shares with a branch's: each branch line (branches in order, lines
/// oldest first) takes the first HEAD line not yet taken that records the same movement (same tips,
/// time, identity, message).
fn pair(movements: &mut Movements) {
    let Movements { branches, head } = movements;
    let mut waiting: HashMap<(ObjectId, ObjectId, i64), Vec<usize>> = HashMap::new();
    if let Some(head) = head.as_mut() {
        for (idx, line) in head.lines.iter_mut().enumerate().rev() {
            line.paired = false;
            waiting.entry((line.old, line.new, line.seconds)).or_default().push(idx);
        }
    }
    for line in branches.iter_mut().flat_map(|log| log.lines.iter_mut()) {
        line.paired = false;
        let (Some(head), Some(candidates)) = (head.as_mut(), waiting.get_mut(&(line.old, line.new, line.seconds)))
        else {
            continue;
        };
        // Candidates are kept newest last-in-first-out: the oldest free one is at the end.
        if let Some(position) = candidates.iter().rposition(|idx| head.lines[*idx].same(line)) {
            let idx = candidates.remove(position);
            head.lines[idx].paired = true;
            line.paired = true;
        }
    }
}

/// A movement of HEAD alone with this message switches what HEAD points to (`checkout:`, the steps
/// of a rebase): it never counts as a rewrite.
pub fn switches_head(message: &str) -> bool {
    message.starts_with("checkout:") || message.starts_with("rebase")
}

/// Computes, for every line that is an event of its own (every branch line, HEAD's unpaired lines
/// that do not switch HEAD) and was not judged yet, whether its old tip is an ancestor of the new
/// one.
fn judge(repo: &gix::Repository, movements: &mut Movements) -> Result<()> {
    let Movements { branches, head } = movements;
    let head_alone = head
        .iter_mut()
        .flat_map(|log| log.lines.iter_mut())
        .filter(|line| !line.paired && !switches_head(&line.message));
    for line in branches.iter_mut().flat_map(|log| log.lines.iter_mut()).chain(head_alone) {
        if line.ancestor.is_none() && !line.old.is_null() && !line.new.is_null() {
            line.ancestor = Some(is_ancestor(repo, line.old, line.new)?);
        }
    }
    Ok(())
}

/// `git merge-base --is-ancestor old new`; a commit that is gone (pruned) cannot be judged and
/// counts as an ancestor (no rewrite is claimed).
fn is_ancestor(git: &gix::Repository, old: ObjectId, new: ObjectId) -> Result<bool> {
    if old == new {
        return Ok(true);
    }
    let Ok(commit) = git.find_commit(new) else { return Ok(true) };
    if git.find_commit(old).is_err() {
        return Ok(true);
    }
    if commit.parent_ids().any(|parent| parent.detach() == old) {
        return Ok(true);
    }
    Ok(crate::ancestry::merge_base(git, old, new)? == Some(old))
}

mod hex {
    use gix::ObjectId;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(id: &ObjectId, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&id.to_string())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ObjectId, D::Error> {
        let text = String::deserialize(deserializer)?;
        ObjectId::from_hex(text.as_bytes()).map_err(serde::de::Error::custom)
    }
}

mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&faster_hex::hex_string(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        (0..text.len())
            .step_by(2)
            .map(|at| {
                text.get(at..at + 2)
                    .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                    .ok_or_else(|| serde::de::Error::custom("not hex"))
            })
            .collect()
    }
}
