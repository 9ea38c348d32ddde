//! A host's file on a disk that may be hostile: where it really is, reading it, locking it and replacing it.
//!
//! # Where
//!
//! [`locate`] resolves the file's directory and, when the file is a symbolic link, the link itself. A link
//! (or a linked directory on the way) that leads outside the allowed directories (HOME, and the directory an
//! environment variable named for the host) is refused: install never writes outside them. Everything after
//! works on the resolved path and never follows a link again: the file is opened with `O_NOFOLLOW`, and every
//! file install creates is opened with `O_CREAT | O_EXCL | O_NOFOLLOW`.
//!
//! # Reading
//!
//! [`read`] opens the file with `O_NONBLOCK`, so a FIFO opens at once, and checks it with `fstat` on the open
//! descriptor: anything but a regular file (a FIFO, a device, a socket, a directory) is refused, and so is a
//! file over [`MAX_BYTES`].
//!
//! # Writing
//!
//! [`lock`] takes an advisory `flock` on the file's directory, held across the read, the merge and the
//! replacement, so installs running at once take turns and each merges into the file the one before wrote.
//! [`replace`] writes a temporary file beside the target, named `.<file>.fluxgit-tmp-<pid>` (or
//! `.<file>.fluxgit-backup-tmp-<pid>` for the backup), syncs it and renames it over the target, so the target
//! is always the old file or the new one, never a mix. A run killed in the middle leaves at most such a
//! temporary file; [`clean_stale`] removes them at the next run, under the lock (a live install holds the lock
//! for as long as its temporary files exist, so any found then are a dead run's).

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::Error;

/// The largest host file install reads, in bytes (4 MiB; host files are a few kilobytes).
pub(crate) const MAX_BYTES: u64 = 4 << 20;

/// How long [`lock`] waits for another install to finish with the same directory.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// The file install reads and writes, after its links were followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Located {
    /// The file as the host names it, for messages.
    pub(crate) file: PathBuf,
    /// The real file: its directory holds no link (as far as it exists), and the file itself is not a link.
    pub(crate) target: PathBuf,
}

/// The host's file as it is now.
#[derive(Debug)]
pub(crate) struct Current {
    /// Its text.
    pub(crate) text: String,
    /// Its permissions.
    pub(crate) permissions: std::fs::Permissions,
}

impl Located {
    /// The directory of the real file.
    pub(crate) fn dir(&self) -> &Path {
        self.target.parent().unwrap_or_else(|| Path::new("/"))
    }

    /// The real file's name.
    fn name(&self) -> String {
        self.target.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

/// Resolves `file`: its directory made canonical (as far as it exists), and the file itself followed when it is
/// a symbolic link. Both must lie inside one of `allowed` (made canonical the same way).
///
/// # Errors
/// [`Error::Outside`] when a link leads outside `allowed`; [`Error::Io`] when a link cannot be resolved (it
/// dangles or loops) or a directory cannot be read.
pub(crate) fn locate(file: &Path, allowed: &[PathBuf]) -> Result<Located, Error> {
    let io = |source| Error::Io { path: file.to_path_buf(), source };
    let (Some(parent), Some(name)) = (file.parent(), file.file_name()) else {
        return Err(io(io::Error::new(io::ErrorKind::InvalidInput, "not a file path")));
    };
    let allowed: Vec<PathBuf> =
        allowed.iter().map(|dir| canonical_prefix(dir)).collect::<Result<_, _>>().map_err(io)?;
    let inside = |path: &Path| allowed.iter().any(|dir| path.starts_with(dir));
    let dir = canonical_prefix(parent).map_err(io)?;
    let mut target = dir.join(name);
    if !inside(&target) {
        return Err(Error::Outside { file: file.to_path_buf(), target });
    }
    match std::fs::symlink_metadata(&target) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            let resolved = std::fs::canonicalize(&target).map_err(|source| Error::Io {
                path: file.to_path_buf(),
                source: io::Error::new(source.kind(), format!("a symbolic link that does not resolve: {source}")),
            })?;
            if !inside(&resolved) {
                return Err(Error::Outside { file: file.to_path_buf(), target: resolved });
            }
            target = resolved;
        }
        Ok(_) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(source) => return Err(io(source)),
    }
    Ok(Located { file: file.to_path_buf(), target })
}

/// `path` with its deepest existing ancestor made canonical and the rest appended as written.
fn canonical_prefix(path: &Path) -> io::Result<PathBuf> {
    let mut missing = Vec::new();
    let mut existing = path;
    loop {
        match std::fs::canonicalize(existing) {
            Ok(mut canonical) => {
                for component in missing.iter().rev() {
                    canonical.push(component);
                }
                return Ok(canonical);
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
                    return Err(error);
                };
                missing.push(name.to_os_string());
                existing = parent;
            }
            Err(error) => return Err(error),
        }
    }
}

/// Reads the located file: `None` when it does not exist.
///
/// # Errors
/// [`Error::NotRegular`] for a FIFO, device, socket or directory (or a link put there since [`locate`]);
/// [`Error::TooLarge`] over [`MAX_BYTES`]; [`Error::Unparsable`] when it is not UTF-8; [`Error::Io`] otherwise.
pub(crate) fn read(located: &Located) -> Result<Option<Current>, Error> {
    let io = |source| Error::Io { path: located.file.clone(), source };
    let mut options = OpenOptions::new();
    options.read(true);
    no_follow_no_block(&mut options);
    let file = match options.open(&located.target) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(_) if std::fs::symlink_metadata(&located.target).is_ok_and(|meta| meta.file_type().is_symlink()) => {
            return Err(Error::NotRegular { file: located.file.clone(), kind: "symbolic link" });
        }
        Err(source) => return Err(io(source)),
    };
    let metadata = file.metadata().map_err(io)?;
    if !metadata.is_file() {
        return Err(Error::NotRegular { file: located.file.clone(), kind: kind_name(&metadata) });
    }
    if metadata.len() > MAX_BYTES {
        return Err(Error::TooLarge { file: located.file.clone(), cap: MAX_BYTES });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(Error::TooLarge { file: located.file.clone(), cap: MAX_BYTES });
    }
    let text = String::from_utf8(bytes).map_err(|error| Error::Unparsable {
        file: located.file.clone(),
        message: format!("not UTF-8 text (byte {})", error.utf8_error().valid_up_to()),
    })?;
    Ok(Some(Current { text, permissions: metadata.permissions() }))
}

/// Whether the current user may not write the located regular file: it has no write bit at all, or opening it
/// for writing is refused.
pub(crate) fn is_read_only(located: &Located, current: &Current) -> bool {
    if current.permissions.readonly() {
        return true;
    }
    let mut options = OpenOptions::new();
    options.write(true);
    no_follow_no_block(&mut options);
    matches!(options.open(&located.target), Err(error) if error.kind() == io::ErrorKind::PermissionDenied)
}

/// Creates the located file's directory (mode 0700 for the new ones) and checks that it still resolves to
/// itself, so a link put on the way since [`locate`] is refused.
///
/// # Errors
/// [`Error::Io`] when it cannot be created; [`Error::Outside`] when it no longer resolves to itself.
pub(crate) fn create_dir(located: &Located) -> Result<(), Error> {
    let dir = located.dir();
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;
    let canonical = std::fs::canonicalize(dir).map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;
    if canonical != dir {
        return Err(Error::Outside { file: located.file.clone(), target: canonical });
    }
    Ok(())
}

/// Takes an exclusive advisory lock on the located file's directory, waiting up to 30 s for another install.
/// The lock lasts as long as the returned handle (and ends with the process, however it ends).
///
/// # Errors
/// [`Error::Busy`] when another install keeps it longer; [`Error::Io`] when the directory cannot be opened.
pub(crate) fn lock(located: &Located) -> Result<File, Error> {
    let dir = located.dir();
    let io = |source| Error::Io { path: dir.to_path_buf(), source };
    let mut options = OpenOptions::new();
    options.read(true);
    no_follow_no_block(&mut options);
    let handle = options.open(dir).map_err(io)?;
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        match handle.try_lock() {
            Ok(()) => return Ok(handle),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::WouldBlock) => return Err(Error::Busy { dir: dir.to_path_buf() }),
            Err(std::fs::TryLockError::Error(source)) => return Err(io(source)),
        }
    }
}

/// The temporary file beside the located file for `kind` (`""` for the file, `"backup-"` for its backup).
fn temporary_name(name: &str, kind: &str, pid: u32) -> String {
    format!(".{name}.fluxgit-{kind}tmp-{pid}")
}

/// Removes the temporary files that killed runs left beside the located file. Call it under [`lock`].
///
/// # Errors
/// [`Error::Io`] when the directory cannot be listed or a stale file cannot be removed.
pub(crate) fn clean_stale(located: &Located) -> Result<(), Error> {
    let dir = located.dir();
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let name = located.name();
    let prefixes = [temporary_name(&name, "", 0), temporary_name(&name, "backup-", 0)].map(|mut prefix| {
        prefix.pop();
        prefix
    });
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(io(dir)(source)),
    };
    for entry in entries {
        let entry = entry.map_err(io(dir))?;
        let file_name = entry.file_name();
        let Some(file_name) = file_name.to_str() else { continue };
        let stale = prefixes.iter().any(|prefix| {
            file_name
                .strip_prefix(prefix.as_str())
                .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|byte| byte.is_ascii_digit()))
        });
        if !stale || entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            continue;
        }
        let path = entry.path();
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(io(&path)(source)),
        }
    }
    Ok(())
}

/// Replaces `target` (in the located file's directory) with `bytes`: a temporary file created with `O_EXCL` and
/// `O_NOFOLLOW` (mode 0600, or `permissions` when given), synced, then renamed over `target` (a link there is replaced, never
/// followed), and the directory synced. `kind` names the temporary file (see [`temporary_name`]).
///
/// # Errors
/// [`Error::Io`] when a step fails; the temporary file is removed then. `before_rename` runs last and can stop it
/// with its error.
pub(crate) fn replace(
    located: &Located,
    target: &Path,
    kind: &str,
    bytes: &[u8],
    permissions: Option<&std::fs::Permissions>,
    before_rename: impl FnOnce() -> Result<(), Error>,
) -> Result<(), Error> {
    let dir = located.dir();
    let temporary = dir.join(temporary_name(&located.name(), kind, std::process::id()));
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    no_follow_no_block(&mut options);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temporary).map_err(io(&temporary))?;
    let written = (|| {
        file.write_all(bytes).map_err(io(&temporary))?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions.clone()).map_err(io(&temporary))?;
        }
        file.sync_all().map_err(io(&temporary))?;
        stall(if kind.is_empty() { "config" } else { "backup" });
        before_rename()?;
        std::fs::rename(&temporary, target).map_err(io(target))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
        return written;
    }
    // The rename is durable once the directory is synced; a failure here loses nothing already written.
    if let Ok(handle) = File::open(dir) {
        let _ = handle.sync_all();
    }
    Ok(())
}

/// Deletes the located file and syncs its directory. Call it under [`lock`], after saving a backup.
///
/// # Errors
/// [`Error::Io`] when the file cannot be removed.
pub(crate) fn delete(located: &Located) -> Result<(), Error> {
    std::fs::remove_file(&located.target).map_err(|source| Error::Io { path: located.target.clone(), source })?;
    if let Ok(handle) = File::open(located.dir()) {
        let _ = handle.sync_all();
    }
    Ok(())
}

/// A test seam of debug builds: with `FLUXGIT_INSTALL_TEST_STALL` set to `stage` (`backup` or `config`), the
/// process says so on stderr and waits forever with its temporary file written and not yet renamed, so a test
/// can kill it there.
fn stall(stage: &str) {
    #[cfg(debug_assertions)]
    if std::env::var_os("FLUXGIT_INSTALL_TEST_STALL").is_some_and(|wanted| wanted == stage) {
        eprintln!("fluxgit-mcp-sidecar install: stalled at {stage} (FLUXGIT_INSTALL_TEST_STALL)");
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    #[cfg(not(debug_assertions))]
    let _ = stage;
}

/// Adds `O_NOFOLLOW` and `O_NONBLOCK` where the system has them.
fn no_follow_no_block(options: &mut OpenOptions) {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(options, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    #[cfg(not(unix))]
    let _ = options;
}

/// What a file that is not a regular one is, in words.
fn kind_name(metadata: &std::fs::Metadata) -> &'static str {
    let kind = metadata.file_type();
    if kind.is_dir() {
        return "directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return "FIFO";
        }
        if kind.is_socket() {
            return "socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "device";
        }
    }
    "special file"
}
