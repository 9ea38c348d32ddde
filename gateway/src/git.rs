//! The git CLI, as the gateway runs it.
//!
//! Two flavours: [`Git::read`] for checks and cards, and [`Git::write`] for the executor, where the repository's
//! hooks, signing and credential helpers apply as they would for the person (only the editor and terminal prompts
//! are off: nobody is there to answer).
//!
//! # Reads run no program of the repository
//!
//! A card is what a person reads before deciding, so nothing the repository configures may run while it is
//! rendered, and nothing may be written into the repository. Every read command turns off fsmonitor, the pager,
//! hooks (`core.hooksPath` is `/dev/null`), signature display (`log.showSignature`), the mailmap, automatic
//! maintenance and submodule recursion, and neutralises every filter driver named in any config scope
//! (`filter.<name>.clean`, `smudge` and `process` set empty, `required` false). The diffs it prints pass
//! `--no-ext-diff --no-textconv`. The optional locks are off, so `status` does not rewrite the index.
//! Merge drivers are left out by computing merges in a scratch repository ([`Git::merge_preview`]): its objects
//! are a temporary directory with the real object store as an alternate, its config holds only the rename
//! settings copied from the repository, and its attributes come from the tree of the side merged into.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// A repository's work tree, for running git in it.
#[derive(Debug, Clone)]
pub struct Git {
    work_tree: PathBuf,
    timeout: Option<Duration>,
    /// The config overrides of every read command, found once (see the module docs).
    read_overrides: OnceLock<Vec<(String, String)>>,
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
    /// The scratch repository of a merge preview could not be made.
    #[error("cannot prepare the merge preview's scratch repository: {0}")]
    Scratch(std::io::Error),
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
        Self { work_tree: work_tree.to_owned(), timeout: None, read_overrides: OnceLock::new() }
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

    /// A command for reading that runs no program the repository configures and writes nothing into it (see
    /// the module docs). The first call runs `git config --list` once to find the filter drivers to neutralise.
    pub fn read_command(&self) -> Command {
        let overrides = self.read_overrides.get_or_init(|| self.find_read_overrides());
        let mut command = self.base_read_command();
        command.env("GIT_CONFIG_COUNT", overrides.len().to_string());
        for (index, (key, value)) in overrides.iter().enumerate() {
            command.env(format!("GIT_CONFIG_KEY_{index}"), key).env(format!("GIT_CONFIG_VALUE_{index}"), value);
        }
        command
    }

    /// A read command with the fixed overrides only, and no config taken from the gateway's own environment.
    fn base_read_command(&self) -> Command {
        let mut command = Command::new("git");
        command.current_dir(&self.work_tree).arg("--no-pager");
        for setting in READ_SETTINGS {
            command.args(["-c", setting]);
        }
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if name == "GIT_CONFIG_PARAMETERS"
                || name == "GIT_CONFIG_COUNT"
                || name.starts_with("GIT_CONFIG_KEY_")
                || name.starts_with("GIT_CONFIG_VALUE_")
            {
                command.env_remove(name.as_ref());
            }
        }
        command
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", ":")
            .env("GIT_SEQUENCE_EDITOR", ":")
            .env_remove("GIT_PAGER")
            .env_remove("GIT_EXTERNAL_DIFF")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .stdin(Stdio::null());
        command
    }

    /// The overrides that neutralise every filter driver the repository's config (all scopes) names.
    fn find_read_overrides(&self) -> Vec<(String, String)> {
        let listed = run(self.base_read_command(), &["config", "--list", "--name-only", "-z"], None, None);
        let names = listed.map(|output| output.stdout).unwrap_or_default();
        let mut drivers: Vec<&str> = names.split('\0').filter_map(|name| driver_of(name, "filter")).collect();
        drivers.sort_unstable();
        drivers.dedup();
        let mut overrides = Vec::new();
        for driver in drivers {
            for key in ["clean", "smudge", "process"] {
                overrides.push((format!("filter.{driver}.{key}"), String::new()));
            }
            overrides.push((format!("filter.{driver}.required"), "false".to_owned()));
        }
        overrides
    }

    /// The names of the merge drivers (`merge.<name>.driver`) the repository's config names: they run at
    /// execution, never in a preview.
    pub fn merge_drivers(&self) -> Vec<String> {
        let listed = self.read(&["config", "--list", "--name-only", "-z"]);
        let names = listed.map(|output| output.stdout).unwrap_or_default();
        let mut drivers: Vec<String> = names
            .split('\0')
            .filter(|name| name.to_ascii_lowercase().ends_with(".driver"))
            .filter_map(|name| driver_of(name, "merge"))
            .map(str::to_owned)
            .collect();
        drivers.sort_unstable();
        drivers.dedup();
        drivers
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

    /// A merge of `theirs` into `ours` (two revisions) as `git merge-tree --write-tree --name-only
    /// --no-messages` prints it (exit 0 clean, 1 conflicts), computed in a scratch repository under the temporary
    /// directory: its objects go there (the repository's store is its alternate), its config holds only the
    /// repository's rename settings, its attributes come from `ours`' tree, and no merge driver, hook or filter
    /// of the repository runs. The scratch repository is removed before returning.
    pub fn merge_preview(&self, ours: &str, theirs: &str) -> Result<Output, Error> {
        let failed = |stderr: String| Error::Failed { args: format!("merge-tree {ours} {theirs}"), stderr };
        let ours = self.resolve_commit(ours)?.ok_or_else(|| failed(format!("{ours} names no commit")))?;
        let theirs = self.resolve_commit(theirs)?.ok_or_else(|| failed(format!("{theirs} names no commit")))?;
        let objects = self.read_ok(&["rev-parse", "--path-format=absolute", "--git-path", "objects"])?;
        let objects = objects.trim_end_matches('\n');
        let format = self.read_ok(&["rev-parse", "--show-object-format"])?.trim().to_owned();
        let pattern = "^(merge\\.(renames|directoryrenames|renamelimit)|diff\\.(renames|renamelimit))$";
        let renames = self.read(&["config", "--get-regexp", pattern])?.stdout;
        let scratch = Scratch::create()?;
        let config = if format == "sha1" {
            "[core]\n\trepositoryformatversion = 0\n\tbare = true\n".to_owned()
        } else {
            format!("[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectFormat = {format}\n")
        };
        scratch.write("HEAD", "ref: refs/heads/preview\n")?;
        scratch.write("config", &config)?;
        scratch.write("objects/info/alternates", &format!("{objects}\n"))?;
        std::fs::create_dir_all(scratch.0.join("refs")).map_err(Error::Scratch)?;
        let mut settings: Vec<String> = READ_SETTINGS.iter().map(|setting| (*setting).to_owned()).collect();
        for line in renames.lines() {
            if let Some((key, value)) = line.split_once(' ') {
                settings.push(format!("{key}={value}"));
            }
        }
        let command = |attributes: bool| {
            let mut command = self.base_read_command();
            command
                .current_dir(&scratch.0)
                .env("GIT_DIR", &scratch.0)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env_remove("GIT_OBJECT_DIRECTORY")
                .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES")
                .env_remove("GIT_COMMON_DIR");
            for setting in &settings {
                command.args(["-c", setting]);
            }
            if attributes {
                command.arg(format!("--attr-source={ours}"));
            }
            command
        };
        let args = ["merge-tree", "--write-tree", "--name-only", "--no-messages", ours.as_str(), theirs.as_str()];
        let output = run(command(true), &args, None, None)?;
        if output.code > 1 && output.stderr.contains("attr-source") {
            // A git older than 2.40 has no --attr-source: merge without the tree's attributes.
            return run(command(false), &args, None, None);
        }
        Ok(output)
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

/// A private directory under the temporary directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn create() -> Result<Self, Error> {
        let path = std::env::temp_dir().join(format!("fluxgit-merge-preview-{}", uuid::Uuid::new_v4().simple()));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder.create(&path).map_err(Error::Scratch)?;
        Ok(Self(path))
    }

    fn write(&self, relative: &str, content: &str) -> Result<(), Error> {
        let path = self.0.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(Error::Scratch)?;
        }
        std::fs::write(path, content).map_err(Error::Scratch)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The fixed settings of every read command (module docs).
const READ_SETTINGS: &[&str] = &[
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.hooksPath=/dev/null",
    "log.showSignature=false",
    "log.mailmap=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "submodule.recurse=false",
    "diff.submodule=short",
    "status.submoduleSummary=false",
];

/// The subsection of `name` (`section.subsection.key`, as `git config --name-only` prints it) when its section
/// is `section`, case-insensitively as git compares section names.
fn driver_of<'a>(name: &'a str, section: &str) -> Option<&'a str> {
    let (head, rest) = name.split_once('.')?;
    let (subsection, _key) = rest.rsplit_once('.')?;
    (head.eq_ignore_ascii_case(section) && !subsection.is_empty()).then_some(subsection)
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
