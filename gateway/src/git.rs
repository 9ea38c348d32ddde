//! The git CLI, as the gateway runs it.
//!
//! Two flavours: [`Git::read`] for checks and cards (no fsmonitor, no pager, no external diff or textconv, no
//! prompt) and [`Git::write`] for the executor, where the repository's hooks, signing and credential helpers apply
//! as they would for the person (only the editor and terminal prompts are off: nobody is there to answer).

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A repository's work tree, for running git in it.
#[derive(Debug, Clone)]
pub struct Git {
    work_tree: PathBuf,
    timeout: Option<Duration>,
}

/// What one git run printed.
#[derive(Debug, Clone)]
pub struct Output {
    /// Whether it exited 0.
    pub success: bool,
    /// Its exit code (`-1` when killed by a signal).
    pub code: i32,
    /// Stdout, lossy UTF-8.
    pub stdout: String,
    /// Stderr, lossy UTF-8.
    pub stderr: String,
}

/// A git run that could not start or failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// git could not be started.
    #[error("cannot run git: {0}")]
    Spawn(#[from] std::io::Error),
    /// git exited non-zero.
    #[error("`git {args}` failed: {stderr}")]
    Failed {
        /// The arguments.
        args: String,
        /// Its stderr, trimmed.
        stderr: String,
    },
}

impl Git {
    /// Git in `work_tree`.
    pub fn new(work_tree: &Path) -> Self {
        Self { work_tree: work_tree.to_owned(), timeout: None }
    }

    /// The same, with executor commands ([`Git::write`]) stopped after `timeout`: git and everything it started
    /// (hooks, signing programs) are killed as one process group, and the run fails saying so.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The work tree.
    pub fn work_tree(&self) -> &Path {
        &self.work_tree
    }

    /// A command for reading: no fsmonitor, pager, prompt, external diff, textconv or optional locks.
    pub fn read_command(&self) -> Command {
        let mut command = Command::new("git");
        command
            .current_dir(&self.work_tree)
            .args(["-c", "core.fsmonitor=false", "-c", "core.pager=cat", "--no-pager"])
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .stdin(Stdio::null());
        command
    }

    /// A command for executing an approved operation: hooks, signing and credential helpers apply; no editor and
    /// no terminal prompt.
    pub fn write_command(&self) -> Command {
        let mut command = Command::new("git");
        command
            .current_dir(&self.work_tree)
            .env("GIT_EDITOR", "true")
            .env("GIT_SEQUENCE_EDITOR", "true")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_MERGE_AUTOEDIT", "no")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .stdin(Stdio::null());
        #[cfg(unix)]
        {
            // Its own process group, so a timeout stops hooks and helpers too.
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        command
    }

    /// Runs a read command with `args`; any exit status.
    pub fn read<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Output, Error> {
        run(self.read_command(), args, None, None)
    }

    /// Runs a read command with `args`, feeding `stdin`; any exit status.
    pub fn read_with_input<S: AsRef<OsStr>>(&self, args: &[S], stdin: &[u8]) -> Result<Output, Error> {
        run(self.read_command(), args, Some(stdin), None)
    }

    /// Runs a read command and returns stdout, or [`Error::Failed`].
    pub fn read_ok<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<String, Error> {
        ok(self.read(args)?, args)
    }

    /// Runs an executor command with `args` and optional stdin bytes; any exit status.
    pub fn write<S: AsRef<OsStr>>(&self, args: &[S], stdin: Option<&[u8]>) -> Result<Output, Error> {
        run(self.write_command(), args, stdin, self.timeout)
    }

    /// Runs an executor command and returns stdout, or [`Error::Failed`].
    pub fn write_ok<S: AsRef<OsStr>>(&self, args: &[S], stdin: Option<&[u8]>) -> Result<String, Error> {
        ok(self.write(args, stdin)?, args)
    }

    /// Runs `command` (made by [`Git::write_command`] or [`Git::read_command`] and adjusted) with `args`.
    pub fn run_command<S: AsRef<OsStr>>(command: Command, args: &[S], stdin: Option<&[u8]>) -> Result<String, Error> {
        ok(run(command, args, stdin, None)?, args)
    }

    /// Runs `command` (made by [`Git::write_command`] and adjusted) with `args` under this value's timeout.
    pub fn write_prepared<S: AsRef<OsStr>>(
        &self,
        command: Command,
        args: &[S],
        stdin: Option<&[u8]>,
    ) -> Result<String, Error> {
        ok(run(command, args, stdin, self.timeout)?, args)
    }

    /// The commit `revision` names, or `None` when it names none.
    pub fn resolve_commit(&self, revision: &str) -> Result<Option<String>, Error> {
        let spec = format!("{revision}^{{commit}}");
        let output = self.read(&["rev-parse", "--verify", "--quiet", "--end-of-options", spec.as_str()])?;
        Ok(output.success.then(|| output.stdout.trim().to_owned()).filter(|sha| !sha.is_empty()))
    }

    /// HEAD's symbolic target (`refs/heads/main`), or `None` when detached.
    pub fn head_symbolic(&self) -> Result<Option<String>, Error> {
        let output = self.read(&["symbolic-ref", "-q", "HEAD"])?;
        Ok(output.success.then(|| output.stdout.trim().to_owned()))
    }

    /// The commit HEAD points at, or `None` on an unborn branch.
    pub fn head_sha(&self) -> Result<Option<String>, Error> {
        self.resolve_commit("HEAD")
    }

    /// Every ref with its target (`for-each-ref`), outside the gateway's private `refs/fluxgit/` namespace.
    pub fn refs(&self) -> Result<std::collections::BTreeMap<String, String>, Error> {
        let listing = self.read_ok(&["for-each-ref", "--format=%(objectname) %(refname)"])?;
        Ok(listing
            .lines()
            .filter_map(|line| line.split_once(' '))
            .filter(|(_, name)| !name.starts_with("refs/fluxgit/"))
            .map(|(sha, name)| (name.to_owned(), sha.to_owned()))
            .collect())
    }
}

fn run<S: AsRef<OsStr>>(
    mut command: Command,
    args: &[S],
    stdin: Option<&[u8]>,
    timeout: Option<Duration>,
) -> Result<Output, Error> {
    command.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    if stdin.is_some() {
        command.stdin(Stdio::piped());
    }
    let mut child = command.spawn()?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A git that exits early closes the pipe; its exit status tells what happened.
        let _ = pipe.write_all(bytes);
    }
    let finished = Arc::new(AtomicBool::new(false));
    let watchdog = timeout.map(|limit| {
        let (finished, group) = (Arc::clone(&finished), format!("-{}", child.id()));
        std::thread::spawn(move || {
            let deadline = Instant::now() + limit;
            while Instant::now() < deadline {
                if finished.load(Ordering::SeqCst) {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = Command::new("kill").args(["-KILL", "--", group.as_str()]).status();
            true
        })
    });
    let output = child.wait_with_output();
    finished.store(true, Ordering::SeqCst);
    let timed_out = watchdog.is_some_and(|watchdog| watchdog.join().unwrap_or(false));
    let output = output?;
    let mut stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if timed_out {
        let seconds = timeout.map_or(0, |limit| limit.as_secs());
        stderr = format!("git (and its hooks) were stopped after {seconds} s; {stderr}");
    }
    Ok(Output {
        success: output.status.success() && !timed_out,
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr,
    })
}

fn ok<S: AsRef<OsStr>>(output: Output, args: &[S]) -> Result<String, Error> {
    if output.success {
        Ok(output.stdout)
    } else {
        let args = args.iter().map(|arg| arg.as_ref().to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ");
        Err(Error::Failed { args, stderr: output.stderr.trim().to_owned() })
    }
}
