//! The presence file (design.md#presence): `<run_dir>/presence/mcp/<pid>.json` tells the FluxGit desktop and other sidecars
//! which client this process serves and in which repositories it works.
//!
//! Content: `{schemaVersion: 1, pid, client: {name, version}, repos: [{repoPath, lastCallMs, lastTool}]}`, the
//! client as it declared itself (sanitised), at most [`MAX_REPOS`] repositories (the most recently used; the
//! canonical repository root the tool resolved), no arguments and no results. Only accepted calls are recorded: a
//! tool result with `isError: false` whose envelope names a repository. The file is written from the first such
//! call on, with mode 0600 in a 0700 directory, replaced atomically (temporary file + rename), and removed on clean
//! exit ([`Presence::remove`]). Files of other processes untouched for [`STALE_AFTER`] are swept ([`sweep`]).
//! A symlink at the directory or the file is refused. Writing it never affects a call: failures are logged once.

use std::fs::OpenOptions;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::protocol::{CallObserver, CallRecord};
use crate::shutdown::ExitGuard;

/// `schemaVersion` of the file.
pub const SCHEMA_VERSION: u64 = 1;
/// Most repositories listed; the least recently used one is dropped first.
pub const MAX_REPOS: usize = 16;
/// Age (by modification time) after which another process's presence file is swept: 24 hours.
pub const STALE_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// This process's presence file.
#[derive(Debug)]
pub struct Presence {
    dir: PathBuf,
    pid: u32,
    guard: ExitGuard,
    client: (String, Option<String>),
    repos: Vec<RepoEntry>,
    /// Set after the first failure, so a broken run dir is reported once, not on every call.
    warned: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct RepoEntry {
    repo_path: String,
    last_call_ms: u64,
    last_tool: String,
}

impl Presence {
    /// The presence file of process `pid` in `dir` (nothing is written yet); writes hold `guard`.
    pub fn new(dir: &Path, pid: u32, guard: ExitGuard) -> Self {
        Self {
            dir: dir.to_path_buf(),
            pid,
            guard,
            client: (crate::protocol::DEFAULT_CLIENT_NAME.to_owned(), None),
            repos: Vec::new(),
            warned: false,
        }
    }

    /// The file's path: `<dir>/<pid>.json`.
    pub fn path(&self) -> PathBuf {
        file_path(&self.dir, self.pid)
    }

    /// Records an accepted call on `repo_path` with `tool` at `now_ms` and rewrites the file.
    ///
    /// # Errors
    /// Why the file could not be written (a symlinked path, permissions, a full disk).
    pub fn record(&mut self, repo_path: &str, tool: &str, now_ms: u64) -> io::Result<()> {
        match self.repos.iter_mut().find(|entry| entry.repo_path == repo_path) {
            Some(entry) => {
                entry.last_call_ms = now_ms;
                tool.clone_into(&mut entry.last_tool);
            }
            None => self.repos.push(RepoEntry {
                repo_path: repo_path.to_owned(),
                last_call_ms: now_ms,
                last_tool: tool.to_owned(),
            }),
        }
        // Most recent first; a full list drops the least recent.
        self.repos.sort_by_key(|entry| std::cmp::Reverse(entry.last_call_ms));
        self.repos.truncate(MAX_REPOS);
        self.write()
    }

    /// The file's content.
    fn document(&self) -> Value {
        let repos: Vec<Value> = self
            .repos
            .iter()
            .map(|entry| json!({"repoPath": entry.repo_path, "lastCallMs": entry.last_call_ms, "lastTool": entry.last_tool}))
            .collect();
        json!({
            "schemaVersion": SCHEMA_VERSION,
            "pid": self.pid,
            "client": {"name": self.client.0, "version": self.client.1},
            "repos": repos,
        })
    }

    /// Replaces the file atomically.
    fn write(&self) -> io::Result<()> {
        let _hold = self.guard.hold();
        private_dir(&self.dir)?;
        let path = self.path();
        if path.symlink_metadata().is_ok_and(|metadata| metadata.file_type().is_symlink()) {
            return Err(io::Error::other(format!("{} is a symlink; refusing to write through it", path.display())));
        }
        let temporary = self.dir.join(format!("{}.json.tmp", self.pid));
        // A leftover from a crash of a process with the same pid; removing a symlink removes only the link.
        match std::fs::remove_file(&temporary) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
            _ => {}
        }
        let mut options = OpenOptions::new();
        // `create_new` (O_EXCL) never follows a symlink planted at the temporary path.
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&temporary)?;
        let mut text = self.document().to_string();
        text.push('\n');
        let written = file.write_all(text.as_bytes()).and_then(|()| std::fs::rename(&temporary, &path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written
    }

    /// Removes the file, if written (clean exit).
    pub fn remove(&self) {
        remove_file(&self.path());
    }
}

impl CallObserver for Presence {
    fn observe(&mut self, call: &CallRecord<'_>) {
        let Ok(output) = call.outcome else { return };
        let (Some(definition), false) = (call.definition, output.is_error) else { return };
        let Some(repo_path) = output.repo_path.as_deref() else { return };
        self.client = (call.client_name.to_owned(), call.client_version.map(str::to_owned));
        if let Err(error) = self.record(repo_path, definition.name, fluxgit_contract::now_ms())
            && !self.warned
        {
            tracing::warn!(%error, dir = %self.dir.display(), "presence file not written (calls are unaffected)");
            self.warned = true;
        }
    }
}

/// `<dir>/<pid>.json`.
pub fn file_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.json"))
}

/// Removes a presence file, ignoring a missing one.
pub fn remove_file(path: &Path) {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => {
            tracing::warn!(%error, path = %path.display(), "presence file not removed");
        }
        _ => {}
    }
}

/// Removes presence files (`<pid>.json` and leftover `<pid>.json.tmp`) in `dir` not modified for [`STALE_AFTER`]
/// before `now`, except `own_pid`'s. Only regular files are touched (a symlink is left alone). Returns how many
/// were removed; a missing or unreadable directory sweeps nothing.
pub fn sweep(dir: &Path, own_pid: u32, now: SystemTime) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let own = [format!("{own_pid}.json"), format!("{own_pid}.json.tmp")];
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let stem = name.strip_suffix(".json").or_else(|| name.strip_suffix(".json.tmp"));
        let is_presence = stem.is_some_and(|stem| !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()));
        if !is_presence || own.iter().any(|own| own == name) {
            continue;
        }
        // `DirEntry::metadata` does not follow symlinks.
        let Ok(metadata) = entry.metadata() else { continue };
        let stale = metadata.modified().ok().and_then(|modified| now.duration_since(modified).ok());
        if metadata.is_file()
            && stale.is_some_and(|age| age >= STALE_AFTER)
            && std::fs::remove_file(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// Creates `dir` (0700) if needed and checks that neither it nor its parent is a symlink; tightens its mode to
/// 0700 if it was looser.
fn private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    for path in [Some(dir), dir.parent()].into_iter().flatten() {
        if path.symlink_metadata()?.file_type().is_symlink() {
            return Err(io::Error::other(format!("{} is a symlink; refusing to write through it", path.display())));
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = dir.symlink_metadata()?.permissions().mode() & 0o777;
        if mode != 0o700 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_sixteen_most_recent_repositories() {
        let run = tempfile::tempdir().expect("tempdir");
        let dir = run.path().join("presence/mcp");
        let mut presence = Presence::new(&dir, 42, ExitGuard::default());
        for index in 0..20u64 {
            presence.record(&format!("/repos/{index}"), "repo.status", 1000 + index).expect("write");
        }
        presence.record("/repos/5", "repo.brief", 5000).expect("write");
        let text = std::fs::read_to_string(presence.path()).expect("read");
        let document: Value = serde_json::from_str(&text).expect("json");
        let repos = document["repos"].as_array().expect("repos");
        assert_eq!(repos.len(), MAX_REPOS);
        assert_eq!(repos[0], json!({"repoPath": "/repos/5", "lastCallMs": 5000, "lastTool": "repo.brief"}));
        let listed: Vec<&str> = repos.iter().filter_map(|repo| repo["repoPath"].as_str()).collect();
        assert!(!listed.contains(&"/repos/0") && !listed.contains(&"/repos/3"), "{listed:?}");
        assert!(listed.contains(&"/repos/4") && listed.contains(&"/repos/19"), "{listed:?}");
        assert_eq!(document["pid"], 42);
        assert_eq!(document["schemaVersion"], SCHEMA_VERSION);
    }
}
