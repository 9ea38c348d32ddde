//! Opening files without blocking: what the engine reads itself (a tracked file it hashes, a
//! conflicted file it scans, `.mailmap`, and through [`crate::guard::read_capped`] the control
//! files and lists of a git dir) goes through [`open`] or [`read`], so a FIFO, device or socket in
//! a file's place is an answer ([`Opened::NotRegular`]), never a wait. [`read`] is the one capped
//! reader of the engine.
//!
//! The file is opened with `O_NONBLOCK` (a FIFO with no writer opens at once) and `O_NOFOLLOW`
//! where git would not follow a symbolic link, then checked with `fstat` on the open descriptor, so
//! a file swapped between a check and the open cannot slip through. A regular file is read up to a
//! cap that fits its purpose. The `.gitignore` and `.gitattributes` files gix reads for status are
//! opened the same way by the patched `gix-glob` in `vendor/`.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// What is at a path, once opened without blocking.
#[derive(Debug)]
pub(crate) enum Opened {
    /// Nothing (or a path the system cannot open: too long, a missing directory).
    Missing,
    /// A symbolic link, when links are not followed.
    Symlink,
    /// Something other than a regular file: a directory, FIFO, device or socket, named as git names
    /// it.
    NotRegular(&'static str),
    /// A regular file, with its size in bytes.
    File(File, u64),
}

/// Opens `path` for reading without blocking; `follow` says whether a symbolic link is followed.
///
/// # Errors
/// An I/O error other than the path not existing (permission denied, the path too long...).
pub(crate) fn open(path: &Path, follow: bool) -> io::Result<Opened> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | if follow { 0 } else { libc::O_NOFOLLOW });
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Opened::Missing),
        Err(_) if !follow && std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink()) => {
            return Ok(Opened::Symlink);
        }
        Err(err) => return Err(err),
    };
    let metadata = file.metadata()?;
    if metadata.is_file() {
        return Ok(Opened::File(file, metadata.len()));
    }
    Ok(Opened::NotRegular(kind_name(&metadata)))
}

/// The bytes of the regular file at `path`, at most `cap` of them (`Ok(Err(size))` when it is
/// larger), or what is there instead.
///
/// # Errors
/// As [`open`], and read errors.
pub(crate) fn read(path: &Path, follow: bool, cap: u64) -> io::Result<Result<Vec<u8>, Opened>> {
    match open(path, follow)? {
        Opened::File(file, size) if size <= cap => {
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
            if bytes.len() as u64 > cap {
                return Err(io::Error::other(format!("grew past {cap} bytes while read")));
            }
            Ok(Ok(bytes))
        }
        other => Ok(Err(other)),
    }
}

/// What git calls a file of this type in its messages.
pub(crate) fn kind_name(metadata: &std::fs::Metadata) -> &'static str {
    let kind = metadata.file_type();
    if kind.is_dir() {
        return "directory";
    }
    if kind.is_symlink() {
        return "symbolic link";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
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
    if kind.is_file() { "regular file" } else { "unsupported file type" }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
        assert!(status.success(), "mkfifo {}", path.display());
    }

    #[test]
    fn a_fifo_opens_at_once_as_not_regular() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("pipe");
        mkfifo(&fifo);
        assert!(matches!(open(&fifo, true).expect("opens"), Opened::NotRegular("FIFO")));
        assert!(matches!(read(&fifo, false, 10).expect("opens"), Err(Opened::NotRegular("FIFO"))));
    }

    #[test]
    fn a_regular_file_is_read_up_to_its_cap() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("file");
        std::fs::write(&file, "0123456789").expect("writes");
        assert_eq!(read(&file, false, 10).expect("reads").expect("regular"), b"0123456789");
        assert!(matches!(read(&file, false, 9).expect("reads"), Err(Opened::File(_, 10))));
        assert!(matches!(read(&dir.path().join("none"), false, 9).expect("reads"), Err(Opened::Missing)));
        std::os::unix::fs::symlink(&file, dir.path().join("link")).expect("links");
        assert!(matches!(open(&dir.path().join("link"), false).expect("opens"), Opened::Symlink));
        assert!(matches!(open(&dir.path().join("link"), true).expect("opens"), Opened::File(_, 10)));
        assert!(matches!(open(Path::new("/dev/null"), true).expect("opens"), Opened::NotRegular("device")));
    }
}
