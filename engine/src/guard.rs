//! Checks made before the engine reads a repository's files: what kind of file each is, where a
//! symbolic link leads, how large it is, and whether it lies under the allowed roots.
//!
//! A FIFO, a device or a socket is never opened for reading: a FIFO blocks a read for as long as
//! nobody writes into it, `/dev/zero` never ends. Files the engine reads itself ([`read_capped`])
//! are checked with `lstat`, opened without blocking and checked again on the opened descriptor,
//! then read up to a cap that fits their purpose. Files gix opens itself (HEAD, config and the
//! files it includes, packed-refs, the index, loose refs, reflogs, loose objects, alternates,
//! `shallow`, `info/exclude`...) cannot be opened another way, so [`vet_git_dir`] checks them with
//! `lstat` before the repository is handed to gix. What remains is a race: a file swapped for a
//! FIFO between that check and gix's open still blocks the read; only someone who can write into
//! the git dir while the read runs can start it. The walk of the git dir's folders remembers each
//! folder it found clean ([`Clean`]), so a store of many loose objects that did not change costs
//! one `lstat` per folder, not one listing.
//!
//! The same vetting keeps reads inside the allowed roots: a git dir, a common dir, a symbolic link
//! in the git dir, an alternate object store, a configuration file the repository's config includes
//! or a submodule's git dir outside every allowed root is refused before gix opens it
//! ([`Refusal::Outside`]).

use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice as _;

use crate::error::{Error, InvalidReason, ItemError};

/// Bytes read at most from a small control file: a `.git` file, `commondir`,
/// `objects/info/alternates` (64 KiB).
pub(crate) const CONTROL_FILE_CAP: u64 = 64 * 1024;

/// Bytes read at most from a list the engine reads on its own: a mailmap, an ignore-revs file (8
/// MiB).
pub(crate) const LIST_FILE_CAP: u64 = 8 * 1024 * 1024;

/// Entries of a git dir's `refs/`, `logs/` and other walked folders looked at per vetting, at most,
/// and as many again of its `objects/` (loose objects, packs, `info/`). A folder remembered clean
/// ([`Clean`]) costs one entry. A git dir with more loose refs or loose objects than that to list
/// is vetted up to there; the rest is read by gix unchecked.
const WALK_BUDGET: usize = 20_000;

/// Files of a git dir (or common dir) that gix may open while the engine reads, relative to it.
const GIT_DIR_FILES: &[&str] = &[
    "HEAD",
    "config",
    "config.worktree",
    "commondir",
    "gitdir",
    "packed-refs",
    "index",
    "sharedindex",
    "shallow",
    "FETCH_HEAD",
    "ORIG_HEAD",
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "AUTO_MERGE",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "REBASE_HEAD",
    "BISECT_LOG",
    "BISECT_START",
    "objects/info/alternates",
    "objects/info/commit-graph",
    "objects/info/packs",
    "objects/info/grafts",
    // The stash list is read by most tools; other reflogs are vetted where one is read (`vet_reflog`).
    "logs/refs/stash",
];

/// Folders of a git dir walked for FIFOs, devices, sockets and symbolic links leading outside the
/// roots (`objects/` is walked too, on a budget of its own).
const GIT_DIR_FOLDERS: &[&str] = &["refs", "info", "rebase-merge", "rebase-apply", "sequencer", "worktrees"];

/// Folders nested deeper than this under a walked folder are not walked.
const WALK_DEPTH: usize = 12;

/// Alternate object stores followed at most when vetting a repository's alternates (gix follows
/// every one).
const MAX_ALTERNATES: usize = 64;

/// Whether a symbolic link at the path read is followed (as git follows it) or refused (as git
/// refuses it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Symlinks {
    /// Read the file the link leads to (git's `fopen`).
    Follow,
    /// Refuse the link without reading its target (git's `open_nofollow`).
    Refuse,
}

/// Why a repository, or one item of it, is not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// It lies, or leads, outside the allowed roots; the text says what and where.
    Outside(String),
    /// It cannot be read safely or at all: not a regular file, too large, missing parts; the text
    /// says which.
    Unreadable(String),
    /// A file of the user's configuration (`~/.gitconfig`, the system's, or one they include)
    /// cannot be read safely; the text says which.
    UserConfig(String),
}

impl Refusal {
    /// The error of a call refused as a whole: `outside_allowed_roots`, or a Git read error
    /// (10010) of the repository or of the user's configuration.
    pub(crate) fn into_error(self) -> Error {
        match self {
            Self::Outside(message) => Error::invalid(InvalidReason::OutsideAllowedRoots, message),
            Self::Unreadable(message) => Error::git_text("the repository", message),
            Self::UserConfig(message) => Error::git_text("the user's configuration", message),
        }
    }

    /// The item error of one item refused: `outside_allowed_roots: ...` for a place outside the
    /// roots, else the text as is.
    pub(crate) fn into_item(self) -> ItemError {
        match self {
            Self::Outside(message) => {
                ItemError::new(format!("{}: {message}", InvalidReason::OutsideAllowedRoots.as_str()))
            }
            Self::Unreadable(message) => ItemError::new(message),
            Self::UserConfig(message) => ItemError::new(format!("the user's configuration: {message}")),
        }
    }
}

/// What a file that is neither a regular file, a directory nor a symbolic link is, in words; `None`
/// for those.
#[cfg(unix)]
fn special_kind(file_type: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if file_type.is_char_device() {
        Some("a character device")
    } else if file_type.is_block_device() {
        Some("a block device")
    } else if file_type.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

#[cfg(not(unix))]
fn special_kind(_file_type: &std::fs::FileType) -> Option<&'static str> {
    None
}

/// The metadata of what `path` is (of what a symbolic link leads to, with [`Symlinks::Follow`]);
/// `None` when nothing is there (a dangling link included).
///
/// # Errors
/// The reason in words for a FIFO, a device or a socket, a refused symbolic link, or a failed
/// `lstat`.
pub(crate) fn examine(path: &Path, symlinks: Symlinks) -> Result<Option<std::fs::Metadata>, String> {
    let missing = |err: &std::io::Error| err.kind() == std::io::ErrorKind::NotFound;
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(err) if missing(&err) => return Ok(None),
        Err(err) => return Err(format!("{} cannot be examined: {err}", path.display())),
    };
    let metadata = if metadata.file_type().is_symlink() {
        if symlinks == Symlinks::Refuse {
            return Err(format!("{} is a symbolic link, which git does not follow there: not read", path.display()));
        }
        match std::fs::metadata(path) {
            Ok(metadata) => metadata,
            Err(err) if missing(&err) => return Ok(None),
            Err(err) => return Err(format!("{} cannot be examined: {err}", path.display())),
        }
    } else {
        metadata
    };
    match special_kind(&metadata.file_type()) {
        Some(kind) => Err(format!("{} is {kind}, not a regular file: not read", path.display())),
        None => Ok(Some(metadata)),
    }
}

/// Reads `path` whole when it is a regular file of at most `cap` bytes; `None` when nothing is
/// there. The file is checked with `lstat` first (a device is never opened), then read by
/// [`crate::regular_file::read`]: opened without blocking (and, with [`Symlinks::Refuse`], without
/// following a link) and checked again on the opened descriptor, so a file swapped for a FIFO after
/// the first check is refused too. `purpose` names the file in the message of a file over the cap,
/// e.g. `a mailmap`.
///
/// # Errors
/// The reason in words: a directory, a FIFO, a device or a socket, a refused link, a file over the
/// cap, or a failed read.
pub(crate) fn read_capped(path: &Path, symlinks: Symlinks, cap: u64, purpose: &str) -> Result<Option<Vec<u8>>, String> {
    use crate::regular_file::Opened;
    let Some(metadata) = examine(path, symlinks)? else { return Ok(None) };
    if metadata.is_dir() {
        return Err(format!("{} is a directory, not a file: not read", path.display()));
    }
    let read = crate::regular_file::read(path, symlinks == Symlinks::Follow, cap)
        .map_err(|err| format!("{} cannot be read: {err}", path.display()))?;
    match read {
        Ok(bytes) => Ok(Some(bytes)),
        Err(Opened::Missing) => Ok(None),
        Err(Opened::File(_, size)) => {
            Err(format!("{} holds {size} bytes, more than the {cap} bytes read of {purpose}: not read", path.display()))
        }
        Err(Opened::Symlink) => {
            Err(format!("{} is a symbolic link, which git does not follow there: not read", path.display()))
        }
        Err(Opened::NotRegular(kind)) => Err(format!("{} is a {kind}, not a regular file: not read", path.display())),
    }
}

/// Whether `path` (canonical) lies under one of `roots`; always when `roots` is `None` (nothing
/// recorded).
fn inside(path: &Path, roots: Option<&[PathBuf]>) -> bool {
    roots.is_none_or(|roots| roots.iter().any(|root| path.starts_with(root)))
}

/// `Ok` when `path` (canonical) lies under the roots, else the refusal saying `what` it is.
fn require_inside(path: &Path, roots: Option<&[PathBuf]>, what: &str) -> Result<(), Refusal> {
    if inside(path, roots) {
        Ok(())
    } else {
        Err(Refusal::Outside(format!(
            "{what} {} is outside the allowed roots (FLUXGIT_MCP_ALLOWED_ROOTS): not read",
            path.display()
        )))
    }
}

/// The canonical form of `path`, or the refusal naming it.
fn canonical(path: &Path, what: &str) -> Result<PathBuf, Refusal> {
    path.canonicalize()
        .map_err(|err| Refusal::Unreadable(format!("{what} {} cannot be resolved: {err}", path.display())))
}

/// The git dir and common dir of a vetted repository, canonical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Vetted {
    /// The git dir (a linked worktree's private one).
    pub git_dir: PathBuf,
    /// The common dir (the git dir itself outside linked worktrees).
    pub common_dir: PathBuf,
}

/// Vets a repository's git dir before gix opens it: the git dir, the common dir its `commondir`
/// names, every alternate object store and every file its configuration includes ([`vet_includes`])
/// lie under `roots` (when given), and none of the files gix may open there ([`GIT_DIR_FILES`], the
/// walked folders, loose objects) is a FIFO, a device, a socket or a symbolic link leading outside
/// the roots. See the [module docs](self) for the race that remains.
///
/// # Errors
/// [`Refusal::Outside`] or [`Refusal::Unreadable`], saying which file.
pub(crate) fn vet_git_dir(git_dir: &Path, roots: Option<&[PathBuf]>) -> Result<Vetted, Refusal> {
    let git_dir = canonical(git_dir, "the git dir")?;
    require_inside(&git_dir, roots, "the git dir")?;
    vet_files(&git_dir, roots)?;
    let common_dir =
        match read_capped(&git_dir.join("commondir"), Symlinks::Follow, CONTROL_FILE_CAP, "a commondir file")
            .map_err(Refusal::Unreadable)?
        {
            Some(text) => {
                let text = String::from_utf8_lossy(&text);
                let named = Path::new(text.lines().next().unwrap_or_default().trim());
                let common_dir = canonical(&git_dir.join(named), "the common dir")?;
                require_inside(&common_dir, roots, "the common dir")?;
                if common_dir != git_dir {
                    vet_files(&common_dir, roots)?;
                }
                common_dir
            }
            None => git_dir.clone(),
        };
    vet_alternates(&common_dir.join("objects"), roots)?;
    vet_includes(&common_dir.join("config"), roots)?;
    vet_includes(&git_dir.join("config.worktree"), roots)?;
    vet_user_config()?;
    Ok(Vetted { git_dir, common_dir })
}

/// Checks the configuration files gix reads beside the repository's own (the installation's, the
/// system's, `$XDG_CONFIG_HOME/git/config` and `~/.gitconfig`, or what `GIT_CONFIG_SYSTEM` and
/// `GIT_CONFIG_GLOBAL` name) and every file they include, as [`vet_includes`] checks the
/// repository's: each is a regular file of at most [`CONFIG_FILE_CAP`] bytes. They are the user's,
/// so they may lie anywhere. git itself blocks on a FIFO there and stops with "bad config line 1"
/// on `/dev/zero`; the engine refuses the read at once, naming the file.
///
/// # Errors
/// [`Refusal::UserConfig`], saying which file.
fn vet_user_config() -> Result<(), Refusal> {
    use gix::config::Source;
    let mut env = |name: &str| std::env::var_os(name);
    for source in [Source::GitInstallation, Source::System, Source::Git, Source::User] {
        let Some(file) = source.storage_location(&mut env) else { continue };
        vet_includes(&file, None).map_err(|refusal| match refusal {
            Refusal::Unreadable(message) | Refusal::Outside(message) | Refusal::UserConfig(message) => {
                Refusal::UserConfig(message)
            }
        })?;
    }
    Ok(())
}

/// Bytes read at most from a configuration file the repository holds or includes (8 MiB), to find
/// its includes.
const CONFIG_FILE_CAP: u64 = 8 * 1024 * 1024;

/// Files of one include chain followed at most, as git and gix follow at most 10 nested includes.
const MAX_INCLUDE_DEPTH: usize = 10;

/// Follows the `include.path` and `includeIf.<condition>.path` entries of the repository's
/// configuration file `config` (and of every file they include, [`MAX_INCLUDE_DEPTH`] deep) before
/// gix follows them, whatever their condition: each included file must lie under `roots` (when
/// given) and be a regular file (a symbolic link is followed, as git follows it). Paths are
/// resolved as gix resolves them: `~/` against the home directory, `%(prefix)/` against the
/// program's folder, a relative path against the including file's folder. An include that names
/// nothing is skipped, as git skips it. [`vet_user_config`] checks the user's own files with no
/// roots.
///
/// # Errors
/// [`Refusal::Outside`] for an included file outside the roots; [`Refusal::Unreadable`] for one
/// that is a FIFO, a device or a socket, larger than [`CONFIG_FILE_CAP`], or deeper than
/// [`MAX_INCLUDE_DEPTH`] (git refuses such a chain too: "exceeded maximum include depth").
fn vet_includes(config: &Path, roots: Option<&[PathBuf]>) -> Result<(), Refusal> {
    let home = gix::path::env::home_dir();
    let install_dir = std::env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf));
    let context = gix::config::path::interpolate::Context {
        git_install_dir: install_dir.as_deref(),
        home_dir: home.as_deref(),
        home_for_user: Some(gix::config::path::interpolate::home_for_user),
    };
    let mut todo = vec![(config.to_path_buf(), 0usize)];
    while let Some((file, depth)) = todo.pop() {
        let Some(bytes) =
            read_capped(&file, Symlinks::Follow, CONFIG_FILE_CAP, "a config file").map_err(Refusal::Unreadable)?
        else {
            continue;
        };
        // A file that does not parse is gix's to report when it opens the repository.
        let Ok(parsed) = gix::config::File::from_bytes_no_includes(
            &bytes,
            gix::config::file::Metadata::from(gix::config::Source::Local),
            Default::default(),
        ) else {
            continue;
        };
        let mut named = Vec::new();
        for section in parsed.sections() {
            let header = section.header();
            let name = header.name();
            let is_include = (name == "include" && header.subsection_name().is_none())
                || (name == "includeIf" && header.subsection_name().is_some());
            if is_include {
                named.extend(section.values("path"));
            }
        }
        for value in named {
            let Ok(path) = gix::config::Path::from(value).interpolate(context) else { continue };
            let path = match file.parent() {
                Some(dir) if path.is_relative() => dir.join(path),
                _ => path,
            };
            let Ok(target) = path.canonicalize() else { continue };
            if !inside(&target, roots) {
                return Err(Refusal::Outside(format!(
                    "{} includes the configuration file {}, outside the allowed roots (FLUXGIT_MCP_ALLOWED_ROOTS): \
                     not read",
                    file.display(),
                    target.display()
                )));
            }
            if depth + 1 >= MAX_INCLUDE_DEPTH {
                return Err(Refusal::Unreadable(format!(
                    "{} exceeds the maximum include depth ({MAX_INCLUDE_DEPTH}) of its configuration, as git \
                     refuses it: not read",
                    config.display()
                )));
            }
            todo.push((target, depth + 1));
        }
    }
    Ok(())
}

/// Checks the files of one git dir that gix may open, and walks its folders of loose refs, reflogs
/// and packs.
fn vet_files(dir: &Path, roots: Option<&[PathBuf]>) -> Result<(), Refusal> {
    for name in GIT_DIR_FILES {
        vet_entry(&dir.join(name), roots)?;
    }
    let mut budget = WALK_BUDGET;
    for folder in GIT_DIR_FOLDERS {
        walk(&dir.join(folder), roots, 0, &mut budget)?;
    }
    // The object store has a budget of its own, so that many loose refs leave its loose objects and packs vetted.
    let mut budget = WALK_BUDGET;
    walk(&dir.join("objects"), roots, 0, &mut budget)
}

/// Checks one entry of a git dir: not a FIFO, device or socket, and not a symbolic link leading
/// outside the roots (git follows links there, so the engine follows those that stay inside).
fn vet_entry(path: &Path, roots: Option<&[PathBuf]>) -> Result<(), Refusal> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.file_type().is_symlink());
    if is_link && let Ok(target) = path.canonicalize() {
        require_inside(&target, roots, &format!("{} is a symbolic link to", path.display()))?;
    }
    examine(path, Symlinks::Follow).map(|_| ()).map_err(Refusal::Unreadable)
}

/// Walks `dir` (when it is a directory, not through a link) checking each entry with [`vet_entry`],
/// within `budget` entries and [`WALK_DEPTH`] levels. A directory found clean before and unchanged
/// since ([`Clean`]) is not listed again: only its subdirectories are walked, so a call costs one
/// `lstat` per directory of a store that did not change, whatever the number of loose objects in
/// it.
fn walk(dir: &Path, roots: Option<&[PathBuf]>, depth: usize, budget: &mut usize) -> Result<(), Refusal> {
    if depth > WALK_DEPTH || *budget == 0 {
        return Ok(());
    }
    let Ok(mut metadata) = std::fs::symlink_metadata(dir) else { return Ok(()) };
    if metadata.file_type().is_symlink() {
        // Only a walked folder itself can be a link here (a link inside is vetted as an entry, never walked into):
        // gix follows it, so it must lead inside the roots, and what it leads to is walked.
        vet_entry(dir, roots)?;
        let Ok(target) = std::fs::metadata(dir) else { return Ok(()) };
        metadata = target;
    }
    if !metadata.is_dir() {
        return Ok(());
    }
    let stamp = Stamp::of(&metadata);
    if let Some(subdirs) = stamp.as_ref().and_then(|stamp| Clean::subdirs(dir, stamp, roots)) {
        for subdir in subdirs {
            *budget = budget.saturating_sub(1);
            walk(&dir.join(subdir), roots, depth + 1, budget)?;
        }
        return Ok(());
    }
    let listed_at = std::time::SystemTime::now();
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    let mut subdirs = Vec::new();
    let mut whole = true;
    for entry in entries.flatten() {
        if *budget == 0 {
            whole = false;
            break;
        }
        *budget -= 1;
        let Ok(file_type) = entry.file_type() else {
            whole = false;
            continue;
        };
        let path = entry.path();
        if file_type.is_dir() {
            walk(&path, roots, depth + 1, budget)?;
            subdirs.push(entry.file_name());
        } else if !file_type.is_file() {
            vet_entry(&path, roots)?;
            // A link's target may change without its directory changing: a directory holding one is listed again.
            whole = false;
        }
    }
    if let Some(stamp) = stamp.filter(|stamp| whole && stamp.settled_before(listed_at)) {
        Clean::remember(dir, stamp, roots, subdirs);
    }
    Ok(())
}

/// What identifies one state of a directory's list of entries: its device and inode, and its
/// modification and change times, to the nanosecond. Adding, removing or renaming an entry changes
/// both times; setting the modification time back (`touch -d`) still changes the change time, which
/// no one can set.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    device: u64,
    inode: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    #[cfg(unix)]
    fn of(metadata: &std::fs::Metadata) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        Some(Stamp {
            device: metadata.dev(),
            inode: metadata.ino(),
            modified: (metadata.mtime(), metadata.mtime_nsec()),
            changed: (metadata.ctime(), metadata.ctime_nsec()),
        })
    }

    #[cfg(not(unix))]
    fn of(_metadata: &std::fs::Metadata) -> Option<Self> {
        None
    }

    /// Whether both times lie a whole second before `listed_at`, when the directory began to be
    /// listed: a change made while it was listed, within the file system's timestamp granularity,
    /// could otherwise keep the times it found, and a directory changed that recently is listed
    /// again next time.
    fn settled_before(&self, listed_at: std::time::SystemTime) -> bool {
        let Ok(now) = listed_at.duration_since(std::time::UNIX_EPOCH) else { return false };
        let limit = i64::try_from(now.as_secs()).unwrap_or(i64::MAX).saturating_sub(1);
        self.modified.0 < limit && self.changed.0 < limit
    }
}

/// Directories of git dirs found clean (no FIFO, device, socket or symbolic link in them) by a walk
/// that listed them whole, with the [`Stamp`] they had and the roots they were vetted against, for
/// the life of the process.
struct Clean {
    stamp: Stamp,
    roots: Option<Vec<PathBuf>>,
    subdirs: Vec<std::ffi::OsString>,
}

/// Directories [`Clean`] remembers at most; it forgets them all when it is full (about 100 bytes
/// each).
const CLEAN_DIRS: usize = 65_536;

static CLEAN: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<PathBuf, Clean>>> =
    std::sync::LazyLock::new(Default::default);

impl Clean {
    /// The subdirectories of `dir` when it was found clean against `roots` with the stamp it has
    /// now.
    fn subdirs(dir: &Path, stamp: &Stamp, roots: Option<&[PathBuf]>) -> Option<Vec<std::ffi::OsString>> {
        let known = CLEAN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let clean = known.get(dir)?;
        (clean.stamp == *stamp && clean.roots.as_deref() == roots).then(|| clean.subdirs.clone())
    }

    fn remember(dir: &Path, stamp: Stamp, roots: Option<&[PathBuf]>, subdirs: Vec<std::ffi::OsString>) {
        let mut known = CLEAN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if known.len() >= CLEAN_DIRS {
            known.clear();
        }
        known.insert(dir.to_path_buf(), Clean { stamp, roots: roots.map(<[PathBuf]>::to_vec), subdirs });
    }
}

/// Vets the reflog of the ref `name` (in the git dir, and in the common dir of a linked worktree)
/// where gix would read it: not a FIFO, a device or a socket, and not a symbolic link leading
/// outside the roots the repository was opened under ([`roots_of`]). Reflogs are left out of
/// [`vet_git_dir`]'s walk (but for the stash's), so that one bad reflog refuses only the reads of
/// that ref's reflog.
///
/// # Errors
/// [`Refusal::Outside`] or [`Refusal::Unreadable`], naming the file.
pub(crate) fn vet_reflog(repo: &gix::Repository, name: &gix::refs::FullNameRef) -> Result<(), Refusal> {
    let roots = roots_of(repo);
    // A ref name is never a path gix cannot convert on Unix; one that cannot be is not a file to vet.
    let Ok(relative) = gix::path::from_bstr(name.as_bstr()) else { return Ok(()) };
    for dir in [repo.git_dir(), repo.common_dir()] {
        vet_entry(&dir.join("logs").join(&relative), roots.as_deref())?;
    }
    Ok(())
}

/// Vets every reflog of the repository ([`vet_reflog`]'s checks, within [`WALK_BUDGET`] entries)
/// when `spec` may read one: a revision with `@{` (`main@{1}`, `@{-1}`, `HEAD@{yesterday}`), which
/// gix answers from the reflogs.
///
/// # Errors
/// [`Refusal::Outside`] or [`Refusal::Unreadable`], naming the file.
pub(crate) fn vet_reflogs_for(repo: &gix::Repository, spec: &str) -> Result<(), Refusal> {
    if !spec.contains("@{") {
        return Ok(());
    }
    let roots = roots_of(repo);
    let mut budget = WALK_BUDGET;
    for dir in [repo.git_dir(), repo.common_dir()] {
        walk(&dir.join("logs"), roots.as_deref(), 0, &mut budget)?;
    }
    Ok(())
}

/// Follows the alternates of the object store `objects` as gix does (relative entries against the
/// first store's directory; as git does too, against the naming store's), refusing any store
/// outside the roots and any alternates file that is not a small regular file.
fn vet_alternates(objects: &Path, roots: Option<&[PathBuf]>) -> Result<(), Refusal> {
    let mut todo = vec![objects.to_path_buf()];
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some(store) = todo.pop() {
        if seen.len() >= MAX_ALTERNATES {
            return Err(Refusal::Unreadable(format!(
                "{} leads to more than {MAX_ALTERNATES} alternate object stores: not read",
                objects.join("info/alternates").display()
            )));
        }
        // A store that is not there is not read from; gix reports it when it looks.
        let Ok(canonical_store) = store.canonicalize() else { continue };
        if seen.contains(&canonical_store) {
            continue;
        }
        if !seen.is_empty() && !inside(&canonical_store, roots) {
            return Err(Refusal::Outside(format!(
                "objects/info/alternates names the object store {}, outside the allowed roots \
                 (FLUXGIT_MCP_ALLOWED_ROOTS): no object is read from there",
                canonical_store.display()
            )));
        }
        seen.push(canonical_store.clone());
        let file = canonical_store.join("info").join("alternates");
        let Some(text) = read_capped(&file, Symlinks::Follow, CONTROL_FILE_CAP, "an alternates file")
            .map_err(Refusal::Unreadable)?
        else {
            continue;
        };
        let named = gix::odb::alternate::parse(&text)
            .map_err(|err| Refusal::Unreadable(format!("{} cannot be parsed: {err}", file.display())))?;
        for path in named {
            if path.is_relative() {
                todo.push(canonical_store.join(&path));
            }
            todo.push(objects.join(&path));
        }
    }
    Ok(())
}

/// Vets the places gix reads while discovering the repository around `start` (canonical), before it
/// does: the `.git` entry and `HEAD` of `start` and of every folder above it are no FIFO, device or
/// socket, a `.git` file is small, and the git dir the nearest `.git` file names lies under
/// `roots`.
///
/// # Errors
/// [`Refusal::Outside`] or [`Refusal::Unreadable`], saying which file.
pub(crate) fn vet_discovery(start: &Path, roots: &[PathBuf]) -> Result<(), Refusal> {
    let mut nearest = true;
    for dir in start.ancestors() {
        let dot_git = dir.join(".git");
        match examine(&dot_git, Symlinks::Follow).map_err(Refusal::Unreadable)? {
            Some(metadata) if metadata.is_file() => {
                let text = read_capped(&dot_git, Symlinks::Follow, CONTROL_FILE_CAP, "a .git file")
                    .map_err(Refusal::Unreadable)?
                    .unwrap_or_default();
                if nearest
                    && let Some(named) = gitdir_line(&text)
                    && let Ok(target) = dir.join(named).canonicalize()
                {
                    require_inside(&target, Some(roots), &format!("the git dir named by {}", dot_git.display()))?;
                    vet_discovered(&target)?;
                }
                nearest = false;
            }
            Some(metadata) if metadata.is_dir() => {
                vet_discovered(&dot_git)?;
                nearest = false;
            }
            _ => {}
        }
        if std::fs::symlink_metadata(dir.join("HEAD")).is_ok() {
            vet_discovered(dir)?;
        }
    }
    Ok(())
}

/// Checks the files gix's discovery reads in a candidate git dir: `HEAD` and `commondir`.
fn vet_discovered(candidate: &Path) -> Result<(), Refusal> {
    for name in ["HEAD", "commondir"] {
        examine(&candidate.join(name), Symlinks::Follow).map_err(Refusal::Unreadable)?;
    }
    Ok(())
}

/// The path a `.git` file's `gitdir: <path>` line names.
fn gitdir_line(text: &[u8]) -> Option<PathBuf> {
    let text = std::str::from_utf8(text).ok()?;
    let named = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    (!named.is_empty()).then(|| PathBuf::from(named))
}

/// Vets the repository of the submodule whose work tree is (or would be) `work_dir` before anything
/// opens it: the git dir its `.git` names (a folder, or a file's `gitdir:` line; `modules_git_dir`,
/// the superproject's `.git/modules/<name>`, when there is no `.git`) is vetted with
/// [`vet_git_dir`] against `roots`. Nothing to vet (not checked out, a gitdir that is gone) is
/// `Ok`: gix's own error then says what is wrong.
///
/// # Errors
/// [`Refusal::Outside`] or [`Refusal::Unreadable`], saying which file.
pub(crate) fn vet_submodule(
    work_dir: &Path,
    modules_git_dir: Option<&Path>,
    roots: Option<&[PathBuf]>,
) -> Result<(), Refusal> {
    let dot_git = work_dir.join(".git");
    let git_dir = match examine(&dot_git, Symlinks::Follow).map_err(Refusal::Unreadable)? {
        Some(metadata) if metadata.is_dir() => dot_git,
        Some(_) => {
            let text = read_capped(&dot_git, Symlinks::Follow, CONTROL_FILE_CAP, "a .git file")
                .map_err(Refusal::Unreadable)?
                .unwrap_or_default();
            match gitdir_line(&text) {
                Some(named) => work_dir.join(named),
                None => return Ok(()),
            }
        }
        None => match modules_git_dir {
            Some(dir) => dir.to_path_buf(),
            None => return Ok(()),
        },
    };
    if !git_dir.exists() {
        return Ok(());
    }
    vet_git_dir(&git_dir, roots).map(|_| ())
}

/// Whether a file named by the configuration key `key` (`mailmap.file`, `blame.ignoreRevsFile`) may
/// be read: a file the user's own configuration names may lie anywhere (it is theirs, like
/// `~/.mailmap`); one the repository's own configuration (`.git/config`, `config.worktree`) names
/// must lie under the allowed roots.
///
/// # Errors
/// [`Refusal::Outside`] for a file the repository names outside the roots.
pub(crate) fn configured_file_allowed(repo: &gix::Repository, key: &str, path: &Path) -> Result<(), Refusal> {
    use gix::config::Source;
    let named_by_repository = repo
        .config_snapshot()
        .plumbing()
        .strings_filter(key, |meta| matches!(meta.source, Source::Local | Source::Worktree))
        .is_some_and(|values| !values.is_empty());
    let Some(roots) = roots_of(repo).filter(|_| named_by_repository) else { return Ok(()) };
    match path.canonicalize() {
        Ok(file) => require_inside(&file, Some(roots.as_slice()), &format!("the file {key} names,")),
        // Nothing there: the read says so.
        Err(_) => Ok(()),
    }
}

/// The repository's mailmap, read as gix's `open_mailmap` reads it (the work tree's `.mailmap`, not
/// through a symbolic link, or HEAD's in a bare repository; `mailmap.blob`; `mailmap.file`,
/// following links) but with every file checked and read up to [`LIST_FILE_CAP`] ([`read_capped`]),
/// every blob's size taken from its header first, and a `mailmap.file` the repository names outside
/// the roots left out ([`configured_file_allowed`]). A source that cannot be read is left out, as
/// git leaves it.
pub(crate) fn open_mailmap(repo: &gix::Repository) -> gix::mailmap::Snapshot {
    let mut out = gix::mailmap::Snapshot::default();
    let config = repo.config_snapshot();
    let mut blob = config.string("mailmap.blob").and_then(|spec| {
        // A spec that reads a reflog (`main@{1}:.mailmap`) reads only vetted ones.
        vet_reflogs_for(repo, &spec.to_str_lossy()).ok()?;
        repo.rev_parse_single(spec.as_bstr()).ok().map(gix::Id::detach)
    });
    match repo.workdir() {
        None => {
            if blob.is_none() {
                blob =
                    repo.head_tree().ok().and_then(|tree| tree.find_entry(".mailmap").map(|entry| entry.object_id()));
            }
        }
        Some(root) => {
            if let Ok(Some(bytes)) = read_capped(&root.join(".mailmap"), Symlinks::Refuse, LIST_FILE_CAP, "a mailmap") {
                out.merge(gix::mailmap::parse_ignore_errors(&bytes));
            }
        }
    }
    if let Some(id) = blob
        && repo.find_header(id).is_ok_and(|header| header.size() <= LIST_FILE_CAP)
        && let Ok(object) = repo.find_object(id)
    {
        out.merge(gix::mailmap::parse_ignore_errors(&object.data));
    }
    if let Ok(Some(file)) = config.trusted_path("mailmap.file")
        && configured_file_allowed(repo, "mailmap.file", &file).is_ok()
        && let Ok(Some(bytes)) = read_capped(&file, Symlinks::Follow, LIST_FILE_CAP, "a mailmap")
    {
        out.merge(gix::mailmap::parse_ignore_errors(&bytes));
    }
    out
}

/// The config section holding the allowed roots a repository was opened under (see [`confine`]).
const CONFINEMENT_SECTION: &str = "fluxgit";
/// The key of each allowed root in [`CONFINEMENT_SECTION`].
const CONFINEMENT_KEY: &str = "allowedRoot";

/// Records `roots` in `repo`'s in-memory configuration (nothing is written to disk), so that code
/// reading through any clone of the handle can vet what it opens next (a submodule's git dir)
/// against them ([`roots_of`]). Any `[fluxgit]` section the repository's own configuration holds is
/// dropped first, so a repository cannot widen its roots.
///
/// # Errors
/// [`Error::GitRead`] when the in-memory configuration cannot be edited.
pub(crate) fn confine(repo: &mut gix::Repository, roots: &[PathBuf]) -> crate::error::Result<()> {
    let subsections: Vec<Option<gix::bstr::BString>> = repo
        .config_snapshot()
        .plumbing()
        .sections_by_name(CONFINEMENT_SECTION)
        .into_iter()
        .flatten()
        .map(|section| section.header().subsection_name().map(ToOwned::to_owned))
        .collect();
    let to_err = |err: &dyn std::fmt::Display| Error::git_text("configuration", err.to_string());
    let mut config = repo.config_snapshot_mut();
    for subsection in &subsections {
        let subsection: Option<&gix::bstr::BStr> = subsection.as_ref().map(|name| name.as_bstr());
        while config.remove_section(CONFINEMENT_SECTION, subsection).is_some() {}
    }
    {
        let mut section =
            config.new_section(CONFINEMENT_SECTION, None::<gix::bstr::BString>).map_err(|err| to_err(&err))?;
        for root in roots {
            let value = gix::path::into_bstr(root.as_path()).map_err(|err| to_err(&err))?;
            section.push(CONFINEMENT_KEY, Some(value.as_bstr())).map_err(|err| to_err(&err))?;
        }
    }
    // Committing only re-reads cached values from the edited in-memory file; nothing is written to disk.
    config.commit().map_err(|err| to_err(&err))?;
    Ok(())
}

/// The allowed roots recorded by [`confine`]; `None` for a repository opened without them (tests of
/// single functions), which is then vetted for file kinds only.
pub(crate) fn roots_of(repo: &gix::Repository) -> Option<Vec<PathBuf>> {
    let key = format!("{CONFINEMENT_SECTION}.{CONFINEMENT_KEY}");
    let values = repo.config_snapshot().plumbing().strings(key.as_str())?;
    Some(
        values
            .iter()
            .filter_map(|value| gix::path::from_bstr(value.as_bstr()).ok())
            .map(std::borrow::Cow::into_owned)
            .collect(),
    )
}

/// [`vet_submodule`] for a submodule of `parent`, against the roots `parent` was confined to
/// ([`roots_of`]).
///
/// # Errors
/// The refusal as an item error ([`Refusal::into_item`]).
pub(crate) fn vet_submodule_of(parent: &gix::Repository, submodule: &gix::Submodule<'_>) -> Result<(), ItemError> {
    let roots = roots_of(parent);
    let work_dir = submodule.work_dir().map_err(ItemError::from_error)?;
    let modules = submodule.git_dir().ok();
    vet_submodule(&work_dir, modules.as_deref(), roots.as_deref()).map_err(Refusal::into_item)
}

/// Opens a submodule of `parent` vetted with [`vet_submodule_of`], confined to `parent`'s roots
/// ([`confine`]) so that its own submodules are vetted in turn. A race remains between the vetting
/// and gix's open (module docs).
///
/// # Errors
/// gix's error opening it, as an item error.
pub(crate) fn open_submodule(
    parent: &gix::Repository,
    submodule: &gix::Submodule<'_>,
) -> Result<Option<gix::Repository>, ItemError> {
    let Some(mut opened) = submodule.open().map_err(ItemError::from_error)? else { return Ok(None) };
    if let Some(roots) = roots_of(parent) {
        confine(&mut opened, &roots).map_err(ItemError::from_error)?;
    }
    Ok(Some(opened))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitdir_lines_are_parsed() {
        assert_eq!(gitdir_line(b"gitdir: ../.git/modules/a\n"), Some(PathBuf::from("../.git/modules/a")));
        assert_eq!(gitdir_line(b"gitdir:/abs\n"), Some(PathBuf::from("/abs")));
        assert_eq!(gitdir_line(b"nothing"), None);
        assert_eq!(gitdir_line(b"gitdir: "), None);
    }

    #[test]
    fn capped_reads_refuse_what_is_not_a_small_regular_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let small = dir.path().join("small");
        std::fs::write(&small, b"abc").expect("write");
        assert_eq!(read_capped(&small, Symlinks::Refuse, 3, "a test").expect("read"), Some(b"abc".to_vec()));
        assert!(read_capped(&small, Symlinks::Refuse, 2, "a test").expect_err("over the cap").contains("more than"));
        assert_eq!(read_capped(&dir.path().join("none"), Symlinks::Follow, 3, "a test").expect("missing"), None);
        #[cfg(unix)]
        {
            let link = dir.path().join("zero");
            std::os::unix::fs::symlink("/dev/zero", &link).expect("symlink");
            let followed = read_capped(&link, Symlinks::Follow, 3, "a test").expect_err("a device");
            assert!(followed.contains("character device"), "{followed}");
            let refused = read_capped(&link, Symlinks::Refuse, 3, "a test").expect_err("a link");
            assert!(refused.contains("symbolic link"), "{refused}");
        }
    }
}
