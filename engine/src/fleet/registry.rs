//! The repository registry (design.md#engine): the repositories `fleet.radar` and `fleet.digest`
//! look at when a call names none. It holds repositories registered with
//! `fluxgit-mcp-sidecar fleet add` and repositories seen in tool calls, stored as one JSON file in
//! the run dir (`<run dir>/fleet/registry.json`), replaced atomically (written to a temporary file
//! in the same directory, synced, renamed over the old one). It is read as a regular file only, up
//! to
//! [`MAX_FILE_BYTES`]: a FIFO, a device or a symbolic link in its place is refused, never waited on
//! or read without end, and never replaced.
//!
//! Only repositories inside the allowed roots are added; entries whose path later falls outside the
//! roots in force are kept in the file but never read (the fleet tools skip them, `fleet list`
//! marks them).

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::regular_file::Opened;

/// The registry file's format version.
pub const VERSION: u32 = 1;
/// The largest registry file read, in bytes (16 MiB: some 40,000 entries of long paths).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Repositories a fleet call reads at most (design.md#tools).
pub const MAX_REPOSITORIES: usize = 500;
/// How deep `fleet add --scan` looks below its directory by default (the directory itself is depth
/// 0).
pub const DEFAULT_SCAN_DEPTH: usize = 4;
/// How long [`SeenWriter`]'s thread lets newly queued roots wait before it writes them, unless
/// someone waits for the file ([`SeenWriter::flush`], drop): a root is queued when a call first
/// resolves it, and the rewrite and `fsync` would otherwise run while that call reads the
/// repository and writes its answer.
pub const WRITE_DELAY: std::time::Duration = std::time::Duration::from_millis(200);

/// How an entry got into the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// `fluxgit-mcp-sidecar fleet add` (a path or a scan).
    Added,
    /// A tool call named it.
    Seen,
}

/// One registered repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// The repository's canonical root (work-tree top), as tools report `repoPath`.
    pub path: PathBuf,
    /// A label given with `fleet add --label`, shown by the radar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// How it got here; an `added` entry is never downgraded to `seen`.
    pub origin: Origin,
    /// When it was added or first seen, Unix milliseconds.
    pub since_ms: i64,
}

/// The registry file's content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registry {
    /// [`VERSION`].
    pub version: u32,
    /// Entries in path order, one per path.
    pub repositories: Vec<Entry>,
}

/// Registry file failures (the file is never left half-written).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// The file is not a registry this version understands.
    #[error("{path} is not a fleet registry of version {VERSION}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Something other than a regular file is in the registry's place.
    #[error("{path} is a {kind}, not a regular file: not read")]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What is there: `FIFO`, `device`, `socket`, `directory` or `symbolic link`.
        kind: &'static str,
    },
    /// The file is larger than [`MAX_FILE_BYTES`].
    #[error("{path} has {bytes} bytes, over the registry's limit of {MAX_FILE_BYTES}: not read")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        bytes: u64,
    },
}

impl Registry {
    /// Reads the registry at `file`; a missing file is an empty registry. The file is opened
    /// without blocking and without following a symbolic link, and read up to [`MAX_FILE_BYTES`].
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read, [`Error::NotRegular`] for a FIFO, device,
    /// socket, directory or symbolic link in its place, [`Error::TooLarge`] over
    /// [`MAX_FILE_BYTES`], [`Error::Format`] when it does not parse or has another version.
    pub fn load(file: &Path) -> Result<Self, Error> {
        let path = || file.to_path_buf();
        let bytes = match crate::regular_file::read(file, false, MAX_FILE_BYTES) {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(Opened::Missing)) => return Ok(Self { version: VERSION, repositories: Vec::new() }),
            Ok(Err(Opened::Symlink)) => return Err(Error::NotRegular { path: path(), kind: "symbolic link" }),
            Ok(Err(Opened::NotRegular(kind))) => return Err(Error::NotRegular { path: path(), kind }),
            Ok(Err(Opened::File(_, bytes))) => return Err(Error::TooLarge { path: path(), bytes }),
            Err(source) => return Err(Error::Io { path: path(), source }),
        };
        let registry: Self = serde_json::from_slice(&bytes)
            .map_err(|error| Error::Format { path: file.to_path_buf(), message: error.to_string() })?;
        if registry.version != VERSION {
            return Err(Error::Format { path: file.to_path_buf(), message: format!("version {}", registry.version) });
        }
        Ok(registry)
    }

    /// Writes the registry to `file` atomically: a temporary file beside it (mode 0600), synced,
    /// then renamed over it. The directory is created (0700) when missing.
    ///
    /// # Errors
    /// [`Error::Io`] naming the path that failed.
    pub fn save(&self, file: &Path) -> Result<(), Error> {
        fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
            move |source| Error::Io { path: path.to_path_buf(), source }
        }
        let dir = file.parent().unwrap_or_else(|| Path::new("."));
        create_private_dir(dir).map_err(io(dir))?;
        let temporary = dir.join(format!(".registry.{}.tmp", std::process::id()));
        let text = serde_json::to_string_pretty(self).expect("the registry serialises: strings and numbers");
        let written = (|| {
            // Created anew: `O_EXCL` neither follows a symbolic link nor opens a FIFO planted under the
            // temporary name (a leftover is removed first).
            match std::fs::remove_file(&temporary) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
                _ => {}
            }
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut handle = options.open(&temporary)?;
            handle.write_all(text.as_bytes())?;
            handle.write_all(b"\n")?;
            handle.sync_all()?;
            std::fs::rename(&temporary, file)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written.map_err(io(file))
    }

    /// Adds `path` (a canonical repository root) or updates its entry: an `added` origin and a
    /// label win over `seen`. Returns `true` when the registry changed.
    pub fn insert(&mut self, path: &Path, label: Option<&str>, origin: Origin, now_ms: i64) -> bool {
        match self.repositories.iter_mut().find(|entry| entry.path == path) {
            Some(entry) => {
                let mut changed = false;
                if origin == Origin::Added && entry.origin != Origin::Added {
                    entry.origin = Origin::Added;
                    changed = true;
                }
                if let Some(label) = label
                    && entry.label.as_deref() != Some(label)
                {
                    entry.label = Some(label.to_owned());
                    changed = true;
                }
                changed
            }
            None => {
                self.repositories.push(Entry {
                    path: path.to_path_buf(),
                    label: label.map(str::to_owned),
                    origin,
                    since_ms: now_ms,
                });
                self.repositories.sort_by(|one, two| one.path.cmp(&two.path));
                true
            }
        }
    }

    /// Removes the entry of `path`; `true` when there was one.
    pub fn remove(&mut self, path: &Path) -> bool {
        let before = self.repositories.len();
        self.repositories.retain(|entry| entry.path != path);
        self.repositories.len() != before
    }
}

/// Records the repositories a process's calls resolve in the registry file on a thread of its own,
/// so that no call waits for the file's rewrite and `fsync` (about 15 ms): [`SeenWriter::record`]
/// queues a root and returns; the thread takes everything queued at once, loads the file, adds the
/// roots as [`Origin::Seen`] and saves it when that changed anything (one rewrite per batch),
/// [`WRITE_DELAY`] after the first of them was queued, so that the call that queued it is not
/// slowed by the write. [`SeenWriter::flush`] waits until every root queued before it was written;
/// dropping the writer flushes and ends the thread, so a process that ends normally leaves every
/// repository it saw in the file. A file that cannot be read or written is left alone (the call
/// never fails for it), as before.
#[derive(Debug)]
pub struct SeenWriter {
    file: PathBuf,
    shared: Arc<(Mutex<Queue>, Condvar)>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// The roots waiting for the writer thread, and how far it got.
#[derive(Debug, Default)]
struct Queue {
    /// Roots with the time they were seen (Unix milliseconds), oldest first.
    pending: Vec<(PathBuf, i64)>,
    /// Roots queued since start.
    queued: u64,
    /// Roots written (or given up on) since start: every root up to this count is done.
    done: u64,
    /// The writer is being dropped: the thread writes what is pending and ends.
    closing: bool,
    /// Callers of [`SeenWriter::flush`] waiting now: the thread writes without [`WRITE_DELAY`].
    flushing: usize,
}

impl SeenWriter {
    /// A writer of `file`; its thread starts with the first [`SeenWriter::record`].
    pub fn new(file: PathBuf) -> Self {
        Self { file, shared: Arc::default(), thread: Mutex::new(None) }
    }

    /// The registry file written.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Queues `root` (a canonical repository root) to be recorded as seen at `now_ms`, and returns
    /// at once. When no thread can be started the root is written before returning.
    pub fn record(&self, root: &Path, now_ms: i64) {
        {
            let (queue, wake) = &*self.shared;
            let mut queue = queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.pending.push((root.to_path_buf(), now_ms));
            queue.queued += 1;
            wake.notify_all();
        }
        let mut thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner);
        if thread.is_none() {
            let (file, shared) = (self.file.clone(), Arc::clone(&self.shared));
            match std::thread::Builder::new()
                .name("fleet-registry".to_owned())
                .spawn(move || write_queued(&file, &shared))
            {
                Ok(handle) => *thread = Some(handle),
                Err(_) => {
                    drop(thread);
                    let (queue, _) = &*self.shared;
                    let mut queue = queue.lock().unwrap_or_else(PoisonError::into_inner);
                    let batch = std::mem::take(&mut queue.pending);
                    queue.done = queue.queued;
                    drop(queue);
                    write_batch(&self.file, batch);
                }
            }
        }
    }

    /// Waits until every root queued before this call is in the file (or could not be written).
    pub fn flush(&self) {
        let (queue, wake) = &*self.shared;
        let mut queue = queue.lock().unwrap_or_else(PoisonError::into_inner);
        let target = queue.queued;
        queue.flushing += 1;
        wake.notify_all();
        while queue.done < target {
            queue = wake.wait(queue).unwrap_or_else(PoisonError::into_inner);
        }
        queue.flushing -= 1;
    }
}

impl Drop for SeenWriter {
    fn drop(&mut self) {
        {
            let (queue, wake) = &*self.shared;
            queue.lock().unwrap_or_else(PoisonError::into_inner).closing = true;
            wake.notify_all();
        }
        let thread = self.thread.get_mut().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

/// The writer thread: writes every batch queued until the writer is dropped and nothing is pending.
fn write_queued(file: &Path, shared: &(Mutex<Queue>, Condvar)) {
    let (queue, wake) = shared;
    let mut guard = queue.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if guard.pending.is_empty() {
            if guard.closing {
                return;
            }
            guard = wake.wait(guard).unwrap_or_else(PoisonError::into_inner);
            continue;
        }
        guard = match wake.wait_timeout_while(guard, WRITE_DELAY, |queue| !queue.closing && queue.flushing == 0) {
            Ok((guard, _)) => guard,
            Err(poisoned) => poisoned.into_inner().0,
        };
        let batch = std::mem::take(&mut guard.pending);
        let upto = guard.queued;
        drop(guard);
        write_batch(file, batch);
        guard = queue.lock().unwrap_or_else(PoisonError::into_inner);
        guard.done = upto;
        wake.notify_all();
    }
}

/// Adds `batch` to the registry in `file` as seen, saving it once if anything changed; failures are
/// ignored.
fn write_batch(file: &Path, batch: Vec<(PathBuf, i64)>) {
    let Ok(mut registry) = Registry::load(file) else { return };
    let mut changed = false;
    for (root, now_ms) in batch {
        changed |= registry.insert(&root, None, Origin::Seen, now_ms);
    }
    if changed {
        let _ = registry.save(file);
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Finds Git work trees below `dir`: directories holding a `.git` entry (directory or file), at
/// most `max_depth` levels down (`dir` itself is level 0). Symbolic links are never followed (so no
/// loop is possible), a work tree found is not searched further (its submodules and nested clones
/// are its own business), and unreadable directories are skipped. Returns the directories in path
/// order, not yet resolved or checked against roots.
pub fn scan(dir: &Path, max_depth: usize) -> Vec<PathBuf> {
    scan_bounded(dir, max_depth, usize::MAX, usize::MAX).found
}

/// What a bounded [`scan_bounded`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// The work trees found, in path order.
    pub found: Vec<PathBuf>,
    /// Directories looked at (`dir` included).
    pub visited: usize,
    /// `true` when a bound stopped the scan before it looked at everything within `max_depth`.
    pub stopped: bool,
}

/// [`scan`] with bounds: at most `max_found` work trees and `max_visited` directories looked at.
/// Levels are read in breadth-first order and each directory's entries by name, so a bounded scan
/// keeps the shallowest work trees, the same ones each time.
pub fn scan_bounded(dir: &Path, max_depth: usize, max_found: usize, max_visited: usize) -> Scan {
    let mut found = Vec::new();
    let mut visited = HashSet::new();
    let mut level = vec![dir.to_path_buf()];
    let mut looked = 0usize;
    let mut stopped = false;
    'levels: for depth in 0..=max_depth {
        let mut next = Vec::new();
        for current in level {
            if found.len() >= max_found || looked >= max_visited {
                stopped = true;
                break 'levels;
            }
            let Ok(metadata) = std::fs::symlink_metadata(&current) else { continue };
            if !metadata.is_dir() {
                continue;
            }
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt as _;
                if !visited.insert((metadata.dev(), metadata.ino())) {
                    continue;
                }
            }
            #[cfg(not(unix))]
            if !visited.insert(current.clone()) {
                continue;
            }
            looked += 1;
            if std::fs::symlink_metadata(current.join(".git")).is_ok() {
                found.push(current);
                continue;
            }
            if depth == max_depth {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&current) else { continue };
            let mut children: Vec<PathBuf> = entries
                .flatten()
                // `file_type` does not follow symlinks: a linked directory is skipped.
                .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
                .map(|entry| entry.path())
                .collect();
            children.sort();
            next.extend(children);
        }
        level = next;
    }
    found.sort();
    Scan { found, visited: looked, stopped }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_update_remove_and_round_trip() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("fleet/registry.json");
        let mut registry = Registry::load(&file).expect("missing is empty");
        assert!(registry.insert(Path::new("/b"), None, Origin::Seen, 1));
        assert!(registry.insert(Path::new("/a"), Some("api"), Origin::Added, 2));
        assert!(!registry.insert(Path::new("/a"), None, Origin::Seen, 3));
        assert!(registry.insert(Path::new("/b"), None, Origin::Added, 4));
        registry.save(&file).expect("saved");
        let loaded = Registry::load(&file).expect("loads");
        assert_eq!(loaded, registry);
        assert_eq!(loaded.repositories[0].label.as_deref(), Some("api"));
        assert_eq!(loaded.repositories[1].origin, Origin::Added);
        let mut loaded = loaded;
        assert!(loaded.remove(Path::new("/a")) && !loaded.remove(Path::new("/a")));
        std::fs::write(&file, "{\"version\": 9, \"repositories\": []}").expect("write");
        assert!(matches!(Registry::load(&file), Err(Error::Format { .. })));
    }

    /// Runs `work` on a thread of its own, failing the test when it takes 5 s or more.
    #[cfg(unix)]
    fn within_5_s<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || sender.send(work()));
        receiver.recv_timeout(std::time::Duration::from_secs(5)).expect("answered within 5 s")
    }

    #[cfg(unix)]
    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
        assert!(status.success(), "mkfifo {}", path.display());
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_registry_is_refused_at_once_and_left_in_place() {
        use std::os::unix::fs::FileTypeExt as _;
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("fleet/registry.json");
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        mkfifo(&file);
        let loading = file.clone();
        let loaded = within_5_s(move || Registry::load(&loading));
        assert!(matches!(loaded, Err(Error::NotRegular { kind: "FIFO", .. })), "{loaded:?}");
        let message = loaded.expect_err("refused").to_string();
        assert!(message.ends_with("registry.json is a FIFO, not a regular file: not read"), "{message}");
        // The seen writer neither waits on it nor replaces it.
        let writing = file.clone();
        within_5_s(move || {
            let writer = SeenWriter::new(writing);
            writer.record(Path::new("/a"), 1);
            writer.flush();
        });
        assert!(std::fs::symlink_metadata(&file).expect("still there").file_type().is_fifo());
    }

    #[cfg(unix)]
    #[test]
    fn a_registry_linked_to_dev_zero_or_too_large_is_refused_unread() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("registry.json");
        std::os::unix::fs::symlink("/dev/zero", &file).expect("symlink");
        let loading = file.clone();
        let loaded = within_5_s(move || Registry::load(&loading));
        assert!(matches!(loaded, Err(Error::NotRegular { kind: "symbolic link", .. })), "{loaded:?}");
        // A regular file over the limit is refused by its size, before a byte is read: a sparse file of 1 GiB
        // would otherwise be read whole.
        std::fs::remove_file(&file).expect("remove");
        std::fs::File::create(&file).expect("create").set_len(1 << 30).expect("sparse");
        let loading = file.clone();
        let loaded = within_5_s(move || Registry::load(&loading));
        assert!(matches!(loaded, Err(Error::TooLarge { bytes: 1_073_741_824, .. })), "{loaded:?}");
        std::fs::remove_file(&file).expect("remove");
        std::os::unix::fs::symlink(dir.path(), &file).expect("symlink");
        assert!(matches!(Registry::load(&file), Err(Error::NotRegular { kind: "symbolic link", .. })));
        std::fs::remove_file(&file).expect("remove");
        std::fs::create_dir(&file).expect("mkdir");
        assert!(matches!(Registry::load(&file), Err(Error::NotRegular { kind: "directory", .. })));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_planted_at_the_temporary_name_does_not_stop_a_save() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("registry.json");
        mkfifo(&dir.path().join(format!(".registry.{}.tmp", std::process::id())));
        let saving = file.clone();
        let saved = within_5_s(move || {
            let mut registry = Registry::load(&saving).expect("missing is empty");
            registry.insert(Path::new("/a"), None, Origin::Added, 1);
            registry.save(&saving)
        });
        saved.expect("saved");
        assert_eq!(Registry::load(&file).expect("loads").repositories.len(), 1);
    }

    #[test]
    fn seen_writer_writes_off_the_caller_and_flushes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("fleet/registry.json");
        let mut added = Registry::load(&file).expect("missing is empty");
        added.insert(Path::new("/b"), Some("api"), Origin::Added, 1);
        added.save(&file).expect("saved");
        let writer = SeenWriter::new(file.clone());
        writer.record(Path::new("/a"), 10);
        writer.record(Path::new("/b"), 11);
        writer.flush();
        let loaded = Registry::load(&file).expect("loads");
        let entries: Vec<_> = loaded.repositories.iter().map(|e| (e.path.clone(), e.origin, e.since_ms)).collect();
        assert_eq!(
            entries,
            [(PathBuf::from("/a"), Origin::Seen, 10), (PathBuf::from("/b"), Origin::Added, 1)],
            "a seen root is added; an added one keeps its origin"
        );
        // Dropping the writer writes what is still queued.
        writer.record(Path::new("/c"), 12);
        drop(writer);
        let loaded = Registry::load(&file).expect("loads");
        assert_eq!(loaded.repositories.len(), 3);
        assert_eq!(loaded.repositories[2].path, Path::new("/c"));
        // A flush with nothing queued returns at once.
        SeenWriter::new(file).flush();
    }

    /// Unflushed, a queued root is written, but not before [`WRITE_DELAY`] has passed (the call
    /// that queued it is then done). A lower bound of the clock, so it cannot fail by load; a
    /// writer that writes at once fails it.
    #[test]
    fn seen_writer_waits_before_writing_unless_flushed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("fleet/registry.json");
        let writer = SeenWriter::new(file.clone());
        let queued = std::time::Instant::now();
        writer.record(Path::new("/a"), 10);
        let written = |file: &Path| Registry::load(file).is_ok_and(|loaded| loaded.repositories.len() == 1);
        while !written(&file) {
            assert!(queued.elapsed() < std::time::Duration::from_secs(60), "the root is written without a flush");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(queued.elapsed() >= WRITE_DELAY, "written {:?} after it was queued", queued.elapsed());
        drop(writer);
    }

    #[cfg(unix)]
    #[test]
    fn scan_is_bounded_and_follows_no_symlink() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        for repo in ["a", "x/b", "x/y/z/deep", "a/nested"] {
            std::fs::create_dir_all(root.join(repo).join(".git")).expect("mkdir");
        }
        std::fs::create_dir_all(root.join("w")).expect("mkdir");
        std::fs::write(root.join("w/.git"), "gitdir: ../a/.git\n").expect("write");
        std::os::unix::fs::symlink(root, root.join("x/loop")).expect("symlink");
        let found = scan(root, 3);
        let names: Vec<_> = found.iter().map(|path| path.strip_prefix(root).expect("below").to_owned()).collect();
        assert_eq!(names, [PathBuf::from("a"), PathBuf::from("w"), PathBuf::from("x/b")]);
        assert_eq!(scan(root, 4).len(), 4);
    }
}
