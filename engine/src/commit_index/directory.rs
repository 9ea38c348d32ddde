//! The commit index's directory: tantivy's memory-mapped directory, with every file it reads or
//! locks checked first to be a regular file.
//!
//! tantivy opens its files with a plain blocking `open`, so a FIFO in place of `meta.json`, a
//! segment file or a lock file would stop the call that opens the index (and every later call
//! waiting on the repository's slot). [`Guarded`] opens each file itself first, without blocking
//! and without following a symbolic link ([`crate::regular_file`]), and refuses anything but a
//! regular file with an error, which makes the caller delete the index and build it again.
//!
//! The small files tantivy reads whole (`meta.json`, `.managed.json`) are read here, up to
//! [`MAX_META_BYTES`]. A `meta.json` that lists one segment more than once is refused too:
//! tantivy would read the segment once per listing and answer every commit in it as many times.
//!
//! The check and tantivy's own open of a segment file are two opens: a file swapped in between
//! could still block. The index directory is private to the run dir (mode 0700), so only its owner
//! could make that swap.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::Directory;
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr};

use crate::regular_file::{self, Opened};

/// The largest `meta.json` or `.managed.json` read, in bytes (16 MiB: the payload lists every
/// branch tip, so a repository of 100,000 branches still fits).
pub(crate) const MAX_META_BYTES: u64 = 16 * 1024 * 1024;

/// An index directory whose files are opened only when they are regular files.
#[derive(Debug, Clone)]
pub(crate) struct Guarded {
    root: PathBuf,
    inner: MmapDirectory,
}

impl Guarded {
    /// The directory at `root`, which must exist.
    pub(crate) fn open(root: &Path) -> tantivy::Result<Self> {
        Ok(Self { root: root.to_path_buf(), inner: MmapDirectory::open(root)? })
    }

    /// Why the file at `path` (relative to the directory) is not opened, if it is not a regular
    /// file; `Ok(None)` for a regular file or none at all.
    fn refusal(&self, path: &Path) -> io::Result<Option<io::Error>> {
        Ok(match regular_file::open(&self.root.join(path), false)? {
            Opened::Missing | Opened::File(..) => None,
            Opened::Symlink => Some(not_regular(path, "symbolic link")),
            Opened::NotRegular(kind) => Some(not_regular(path, kind)),
        })
    }
}

fn not_regular(path: &Path, kind: &str) -> io::Error {
    io::Error::other(format!("{} is a {kind}, not a regular file", path.display()))
}

fn read_error(error: io::Error, path: &Path) -> OpenReadError {
    OpenReadError::wrap_io_error(error, path.to_path_buf())
}

impl Directory for Guarded {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        if let Some(refusal) = self.refusal(path).map_err(|error| read_error(error, path))? {
            return Err(read_error(refusal, path));
        }
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        // tantivy creates files with `O_EXCL`: a FIFO in the way is an error, not a wait.
        self.inner.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        let bytes = match regular_file::read(&self.root.join(path), false, MAX_META_BYTES) {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(Opened::Missing)) => return Err(OpenReadError::FileDoesNotExist(path.to_path_buf())),
            Ok(Err(Opened::Symlink)) => return Err(read_error(not_regular(path, "symbolic link"), path)),
            Ok(Err(Opened::NotRegular(kind))) => return Err(read_error(not_regular(path, kind), path)),
            Ok(Err(Opened::File(_, size))) => {
                let message = format!("{} has {size} bytes, over the limit of {MAX_META_BYTES}", path.display());
                return Err(read_error(io::Error::other(message), path));
            }
            Err(error) => return Err(read_error(error, path)),
        };
        if path == Path::new("meta.json")
            && let Some(repeated) = repeated_segment(&bytes)
        {
            return Err(read_error(io::Error::other(format!("meta.json {repeated}")), path));
        }
        Ok(bytes)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        // tantivy opens the lock file to write without `O_EXCL`, which would wait for a FIFO's reader.
        if let Some(refusal) = self.refusal(&lock.filepath).map_err(LockError::wrap_io_error)? {
            return Err(LockError::wrap_io_error(refusal));
        }
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

/// The first segment a `meta.json` lists more than once, said as `lists segment <id> <n> times`;
/// `None` when each is listed once (or the text is no JSON tantivy would take either).
fn repeated_segment(meta: &[u8]) -> Option<String> {
    let meta: serde_json::Value = serde_json::from_slice(meta).ok()?;
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut order = Vec::new();
    for segment in meta.get("segments")?.as_array()? {
        let Some(id) = segment.get("segment_id").and_then(serde_json::Value::as_str) else { continue };
        let count = seen.entry(id).or_insert(0);
        if *count == 0 {
            order.push(id);
        }
        *count += 1;
    }
    order.into_iter().find(|id| seen[id] > 1).map(|id| format!("lists segment {id} {} times", seen[id]))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_segment_listed_three_times_is_named() {
        let meta = br#"{"segments":[{"segment_id":"a1","max_doc":3},{"segment_id":"b2","max_doc":1},
            {"segment_id":"a1","max_doc":3},{"segment_id":"a1","max_doc":3}],"opstamp":4}"#;
        assert_eq!(repeated_segment(meta).as_deref(), Some("lists segment a1 3 times"));
        let once = br#"{"segments":[{"segment_id":"a1"},{"segment_id":"b2"}]}"#;
        assert_eq!(repeated_segment(once), None);
    }

    #[test]
    fn fifos_and_links_are_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("temp dir");
        let guarded = Guarded::open(dir.path()).expect("opens");
        let status = std::process::Command::new("mkfifo").arg(dir.path().join("meta.json")).status().expect("mkfifo");
        assert!(status.success());
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("x.idx")).expect("symlink");
        let error = guarded.atomic_read(Path::new("meta.json")).expect_err("a FIFO");
        assert!(error.to_string().contains("meta.json is a FIFO, not a regular file"), "{error}");
        let error = guarded.get_file_handle(Path::new("x.idx")).map(drop).expect_err("a link");
        assert!(error.to_string().contains("x.idx is a symbolic link, not a regular file"), "{error}");
        assert!(matches!(guarded.atomic_read(Path::new("missing.json")), Err(OpenReadError::FileDoesNotExist(_))));
        std::fs::remove_file(dir.path().join("meta.json")).expect("remove");
        std::fs::write(dir.path().join("meta.json"), br#"{"segments":[]}"#).expect("write");
        assert_eq!(guarded.atomic_read(Path::new("meta.json")).expect("a regular file"), br#"{"segments":[]}"#);
    }
}
