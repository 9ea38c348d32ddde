//! The person's desktop: whether there is one, and opening an address in their browser.
//!
//! On macOS the opener is `open`; elsewhere it is `xdg-open`, and only when `DISPLAY` or `WAYLAND_DISPLAY` says a
//! graphical session is there. The opener is looked up on `PATH` and started detached, with no stdin and its output
//! discarded; the address is its one argument, never a shell word.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Why an address could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No graphical session, or no opener program on `PATH`.
    #[error("no desktop to open it on (no DISPLAY or WAYLAND_DISPLAY, or no {0} on PATH)")]
    NoDesktop(&'static str),
    /// The opener could not be started, or said it failed.
    #[error("{program}: {message}")]
    Opener {
        /// The opener.
        program: &'static str,
        /// What went wrong.
        message: String,
    },
}

/// The opener program of this platform.
pub fn opener() -> &'static str {
    if cfg!(target_os = "macos") { "open" } else { "xdg-open" }
}

/// The opener's path when a graphical session is there to show what it opens.
pub fn desktop_opener() -> Option<PathBuf> {
    let graphical = cfg!(target_os = "macos")
        || ["DISPLAY", "WAYLAND_DISPLAY"]
            .iter()
            .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()));
    if !graphical {
        return None;
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(opener())).find(|candidate| is_executable(candidate))
}

fn is_executable(path: &std::path::Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// Opens `url` in the person's browser and waits for the opener to say it did (it returns once the browser has
/// the address).
///
/// # Errors
/// [`Error::NoDesktop`] without a graphical session or opener, [`Error::Opener`] when it fails to start or exits
/// with a failure.
pub fn open_url(url: &str) -> Result<(), Error> {
    let program = opener();
    let path = desktop_opener().ok_or(Error::NoDesktop(program))?;
    let status = Command::new(path)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|error| Error::Opener { program, message: error.to_string() })?;
    if status.success() { Ok(()) } else { Err(Error::Opener { program, message: format!("exited with {status}") }) }
}
