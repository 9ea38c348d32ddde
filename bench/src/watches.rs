//! Whether a server process watches a repository: the directories the engine's watcher covers (the common dir
//! tree but `objects/`, `lfs/` and `hooks/`, the work tree but `.git`, as `engine/src/cache/watch.rs` adds them),
//! checked against the inotify watches the kernel lists for the process (`/proc/<pid>/fdinfo/<fd>` of each
//! `anon_inode:inotify` descriptor: one `inotify wd:.. ino:<hex> ..` line per watch).
//!
//! This is how the latency bench knows, from outside a server, that its warm calls come after the repository's
//! watches are in place (until then the engine reads every call fresh): a signal from the kernel, not a sleep.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// The directories of one repository a watching server must cover, by inode number.
pub(crate) struct Covered {
    inodes: HashSet<u64>,
}

impl Covered {
    /// The directories of the repository at `repo` (a work tree, or a bare repository) that the engine watches.
    pub(crate) fn of(repo: &Path) -> anyhow::Result<Self> {
        let rev_parse = |args: &[&str]| -> anyhow::Result<Option<PathBuf>> {
            let output = Command::new("git").args(args).current_dir(repo).output().context("git rev-parse")?;
            let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            Ok((output.status.success() && !text.is_empty()).then(|| PathBuf::from(text)))
        };
        let Some(common_dir) = rev_parse(&["rev-parse", "--path-format=absolute", "--git-common-dir"])? else {
            bail!("{} is not a git repository", repo.display());
        };
        let mut inodes = HashSet::new();
        tree(&common_dir, &["objects", "lfs", "hooks"], &mut inodes);
        if let Some(work_tree) = rev_parse(&["rev-parse", "--show-toplevel"])? {
            tree(&work_tree, &[".git"], &mut inodes);
        }
        Ok(Self { inodes })
    }

    /// The number of directories.
    pub(crate) fn len(&self) -> usize {
        self.inodes.len()
    }

    /// Whether process `pid` has an inotify watch on every directory (`false` when /proc cannot tell).
    pub(crate) fn watched_by(&self, pid: u32) -> bool {
        let watched = watched_inodes(pid);
        !watched.is_empty() && self.inodes.iter().all(|inode| watched.contains(inode))
    }

    /// Whether process `pid` has an inotify instance at all.
    pub(crate) fn has_watcher(&self, pid: u32) -> bool {
        !inotify_fds(pid).is_empty()
    }

    /// Waits, polling every 5 ms for at most `limit`, until process `pid` watches every directory; returns how long
    /// that took, or `None` when it did not happen within `limit` (a server without a watcher, or one serving the
    /// repository stat-validated).
    pub(crate) fn wait_watched(&self, pid: u32, limit: Duration) -> Option<Duration> {
        let started = Instant::now();
        loop {
            if self.watched_by(pid) {
                return Some(started.elapsed());
            }
            if started.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Adds the inode of `top` and of every directory below it, except those named in `skipped` (at any depth) and
/// symbolic links, to `inodes`.
fn tree(top: &Path, skipped: &[&str], inodes: &mut HashSet<u64>) {
    let mut pending = vec![top.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(metadata) = std::fs::symlink_metadata(&dir) else { continue };
        inodes.insert(metadata.ino());
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
            if is_dir && !skipped.iter().any(|name| entry.file_name() == *name) {
                pending.push(entry.path());
            }
        }
    }
}

/// The `/proc/<pid>/fd` names of the inotify descriptors of process `pid`.
fn inotify_fds(pid: u32) -> Vec<String> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    fds.filter_map(Result::ok)
        .filter(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == Path::new("anon_inode:inotify")))
        .map(|fd| fd.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The inode numbers of every inotify watch of process `pid` (empty when it has none or /proc cannot tell).
fn watched_inodes(pid: u32) -> HashSet<u64> {
    let mut inodes = HashSet::new();
    for fd in inotify_fds(pid) {
        if let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")) {
            inodes.extend(info.lines().filter_map(inode_of_watch));
        }
    }
    inodes
}

/// The inode of one `inotify wd:1 ino:3c4a7 sdev:fe00000 mask:..` line.
fn inode_of_watch(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("inotify ")?;
    let hex = rest.split_whitespace().find_map(|field| field.strip_prefix("ino:"))?;
    u64::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::{Covered, inode_of_watch};

    #[test]
    fn reads_the_kernels_watch_lines() {
        let line = "inotify wd:1 ino:3c4a7 sdev:fe00000 mask:100 ignored_mask:0 fhandle-bytes:8 fhandle-type:1";
        assert_eq!(inode_of_watch(line), Some(0x3c4a7));
        assert_eq!(inode_of_watch("pos:\t0"), None);
        assert_eq!(inode_of_watch("ino:\t1038"), None, "the descriptor's own inode is not a watch");
    }

    #[test]
    fn a_process_without_watches_covers_nothing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let status = std::process::Command::new("git").arg("init").arg("-q").arg(dir.path()).status().expect("git");
        assert!(status.success());
        std::fs::create_dir_all(dir.path().join("src/deep")).expect("dirs");
        let covered = Covered::of(dir.path()).expect("a repository");
        // The work tree, src, src/deep, and the git dir with its refs, refs/heads, refs/tags, info (no objects,
        // hooks).
        assert!(covered.len() >= 7, "{}", covered.len());
        assert!(!covered.watched_by(std::process::id()), "this test process watches nothing");
    }

    /// The directories the bench expects are the ones the engine's watcher adds: an engine in this process, once it
    /// says the repository is watched, has a watch on every one of them (a change of the watcher's rule fails this).
    #[test]
    fn an_engine_watching_the_repository_covers_it() {
        let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Submodules);
        let root = std::fs::canonicalize(fixture.root()).expect("canonical root");
        let engine = fluxgit_engine::Engine::with_cache(
            fluxgit_engine::Options { allowed_roots: vec![root] },
            fluxgit_engine::cache::Options::default(),
        );
        let covered = Covered::of(fixture.path()).expect("a repository");
        assert!(!covered.watched_by(std::process::id()), "nothing watched before the engine saw it");
        let repo = engine.resolve(fixture.path().to_str().expect("UTF-8")).expect("resolves");
        assert_eq!(engine.cache_diagnostics(&repo).cache, "watched");
        assert!(covered.watched_by(std::process::id()), "every directory of the repository is watched");
    }
}
