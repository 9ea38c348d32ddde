//! Stat validation, the fallback for repositories the watcher cannot cover: a fingerprint of the
//! metadata (inode, size, modification and change times) of every git-dir file the cached facets
//! depend on.
//!
//! Git replaces refs, the index and HEAD by renaming a lock file over them, so each update gives
//! the file a new inode and its directory a new modification time. A fingerprint whose newest time
//! is within [`RACY_WINDOW`] of the clock is not trusted (the same reasoning as git's "racy git"):
//! file times are as coarse as the kernel's clock tick, so two updates within one tick could leave
//! equal times.

use std::hash::{Hash, Hasher};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// How recent a file time may be before the fingerprint is refused (file times of coarse
/// filesystems and clock ticks are well within it).
pub const RACY_WINDOW: Duration = Duration::from_secs(2);

/// Files of the git dir (per worktree) that cached facets read.
const GIT_DIR_FILES: [&str; 12] = [
    "",
    "HEAD",
    "index",
    "config.worktree",
    "MERGE_HEAD",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "BISECT_LOG",
    "BISECT_START",
    "rebase-merge",
    "rebase-apply",
    "sequencer",
];
/// Files of the common dir that cached facets read (refs/ is walked as a whole).
const COMMON_DIR_FILES: [&str; 7] = ["", "packed-refs", "config", "shallow", "logs/refs/stash", "modules", "refs"];

/// The fingerprint of the git-dir files of a repository, or `None` when one of them changed too
/// recently to be trusted (see the module docs).
pub(crate) fn of(git_dir: &Path, common_dir: &Path) -> Option<u64> {
    let now = SystemTime::now();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut newest = SystemTime::UNIX_EPOCH;
    let mut add = |path: &Path, hasher: &mut std::collections::hash_map::DefaultHasher| {
        path.hash(hasher);
        match std::fs::symlink_metadata(path) {
            Ok(metadata) => {
                stat_fields(&metadata).hash(hasher);
                let modified = metadata.modified().unwrap_or(now);
                newest = newest.max(modified).max(changed(&metadata).unwrap_or(modified));
            }
            Err(_) => 0_u8.hash(hasher),
        }
    };
    for name in GIT_DIR_FILES {
        add(&git_dir.join(name), &mut hasher);
    }
    for name in COMMON_DIR_FILES {
        add(&common_dir.join(name), &mut hasher);
    }
    let mut pending = vec![common_dir.join("refs")];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut entries: Vec<_> = entries.filter_map(std::result::Result::ok).map(|entry| entry.path()).collect();
        entries.sort();
        for path in entries {
            add(&path, &mut hasher);
            if path.is_dir() && !path.is_symlink() {
                pending.push(path);
            }
        }
    }
    let settled = now.duration_since(newest).is_ok_and(|age| age >= RACY_WINDOW);
    settled.then(|| hasher.finish())
}

/// A file's stat fields (device, inode, size, modification and change times) hashed, or `None` when
/// one of its times is within [`RACY_WINDOW`] of the clock (see the module docs): equal stamps then
/// mean an unchanged file.
pub(crate) fn file_stamp(metadata: &std::fs::Metadata) -> Option<u64> {
    let now = SystemTime::now();
    let modified = metadata.modified().unwrap_or(now);
    let newest = modified.max(changed(metadata).unwrap_or(modified));
    if !now.duration_since(newest).is_ok_and(|age| age >= RACY_WINDOW) {
        return None;
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    stat_fields(metadata).hash(&mut hasher);
    Some(hasher.finish())
}

#[cfg(unix)]
fn stat_fields(metadata: &std::fs::Metadata) -> (u64, u64, u64, i64, i64, i64, i64) {
    use std::os::unix::fs::MetadataExt as _;
    (
        metadata.dev(),
        metadata.ino(),
        metadata.size(),
        metadata.mtime(),
        metadata.mtime_nsec(),
        metadata.ctime(),
        metadata.ctime_nsec(),
    )
}

#[cfg(not(unix))]
fn stat_fields(metadata: &std::fs::Metadata) -> (u64, Option<SystemTime>) {
    (metadata.len(), metadata.modified().ok())
}

#[cfg(unix)]
fn changed(metadata: &std::fs::Metadata) -> Option<SystemTime> {
    use std::os::unix::fs::MetadataExt as _;
    let seconds = u64::try_from(metadata.ctime()).ok()?;
    let nanos = u32::try_from(metadata.ctime_nsec()).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::new(seconds, nanos))
}

#[cfg(not(unix))]
fn changed(metadata: &std::fs::Metadata) -> Option<SystemTime> {
    metadata.modified().ok()
}
