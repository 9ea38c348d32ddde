//! `fluxgit-mcp-sidecar install HOST`: writes this server's entry into an MCP host's user-level configuration.
//!
//! # Hosts and their files (Linux)
//!
//! | host | file | where the entry goes |
//! |---|---|---|
//! | `claude-code` | `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json` when set), or `claude mcp add-json --scope user` when the `claude` CLI is on the PATH | `mcpServers.<name>`, `"type": "stdio"` |
//! | `claude-desktop` | `$XDG_CONFIG_HOME/Claude/claude_desktop_config.json` (default `~/.config`) | `mcpServers.<name>` |
//! | `cursor` | `~/.cursor/mcp.json` | `mcpServers.<name>` |
//! | `vscode` | `$XDG_CONFIG_HOME/Code/User/mcp.json` (default `~/.config`), JSON with comments | `servers.<name>`, `"type": "stdio"` |
//! | `codex` | `$CODEX_HOME/config.toml` (default `~/.codex`) | `[mcp_servers.<name>]` |
//! | `gemini` | `~/.gemini/settings.json`, comments allowed | `mcpServers.<name>` |
//!
//! The entry runs the absolute path of this binary with no arguments, or with `--runner uvx|npx` a package
//! runner that fetches this version's package ([`Runner::command`]), and sets `FLUXGIT_MCP_ALLOWED_ROOTS` (the
//! roots, canonical, joined with `:`) and `FLUXGIT_MCP_HANDSHAKE_ADDR` when they are given.
//!
//! # What is kept
//!
//! Everything outside the entry's `command`, `args`, `env` (and `type` where the host has it) stays byte for
//! byte: other servers, other keys, their order, indentation, comments, a UTF-8 byte order mark and line
//! endings ([`json`] splices text; TOML goes through `toml_edit`, and the lines it did not change get their
//! `\r\n` or `\n` back, new ones the file's usual one). Keys the user added to the entry itself are kept too.
//! A file that does not parse is never written. Running the same command twice changes nothing the second
//! time. Through the `claude` CLI, an entry of the same name that differs is removed and added again whole
//! (the CLI has no update).
//!
//! # Removal
//!
//! `install HOST --remove` ([`apply_removal`]) takes the entry out again with its comma and its lines, written
//! the same way and kept to the same bytes, so an install followed by a removal gives back the file as it was:
//! the object holding the servers goes too when the removal leaves it empty with nothing inside (install adds
//! it to a file that had none), and a file left holding nothing is deleted (install creates a missing file).
//! The previous file is saved as `<file>.fluxgit-remove-backup`, beside install's `<file>.fluxgit-backup`, so
//! neither backup replaces the other. A file without the entry is not touched. Through the `claude` CLI, the
//! removal is `claude mcp remove --scope user NAME`.
//!
//! # How it is written
//!
//! [`apply`] locks the file's directory, reads the file, merges and writes it, so installs running at once
//! each merge into what the previous one wrote. The previous file is copied to `<file>.fluxgit-backup` and the
//! new one replaces the file, both by a rename of a synced temporary file, so a killed run leaves the old file
//! or the new one, never a mix, and the next run removes its temporary files. A symbolic link to a file inside
//! HOME (a dotfiles checkout) is written through; a link that leads outside HOME (or outside the directory
//! `XDG_CONFIG_HOME`, `CODEX_HOME` or `CLAUDE_CONFIG_DIR` names for the host) is refused, and so are a FIFO, a
//! device, a file over 4 MiB and a read-only file. The `file` module has the details.

mod file;
pub mod json;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// An MCP host whose configuration `install` can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// Anthropic's Claude Code CLI.
    ClaudeCode,
    /// Anthropic's Claude Desktop app.
    ClaudeDesktop,
    /// The Cursor editor.
    Cursor,
    /// Visual Studio Code (its agent mode and Copilot Chat).
    VsCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// Google's Gemini CLI.
    Gemini,
}

/// The directories that decide where hosts keep their files, read from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirs {
    /// The user's home directory (`HOME`).
    pub home: PathBuf,
    /// `XDG_CONFIG_HOME` when set to an absolute path (Claude Desktop and VS Code honour it).
    pub xdg_config_home: Option<PathBuf>,
    /// `CODEX_HOME` when set to an absolute path.
    pub codex_home: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR` when set to an absolute path (Claude Code keeps `.claude.json` there).
    pub claude_config_dir: Option<PathBuf>,
}

/// The server entry to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name the host knows the server by, e.g. `fluxgit`.
    pub name: String,
    /// The program to run: the absolute path of the binary, or a package runner (`uvx`, `npx`) found on the
    /// host's PATH.
    pub command: PathBuf,
    /// Its arguments, in order; empty for the binary itself.
    pub args: Vec<String>,
    /// Environment variables for the server, in order.
    pub env: Vec<(String, String)>,
}

/// A package runner that starts the server from its published package instead of an installed binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// Astral's `uvx`, which runs the PyPI package [`PYPI_PACKAGE`] in a cached virtual environment.
    Uvx,
    /// npm's `npx`, which runs the npm package [`NPM_PACKAGE`] (its launcher picks the platform's binary).
    Npx,
}

/// The PyPI package that carries the binaries as a wheel.
pub const PYPI_PACKAGE: &str = "fluxgit-mcp";

/// The npm launcher package; the binaries come in its per-platform optional dependencies.
pub const NPM_PACKAGE: &str = "fluxgit-mcp";

impl Runner {
    /// Every runner, in the order `--runner` lists them.
    pub const ALL: [Runner; 2] = [Runner::Uvx, Runner::Npx];

    /// The name on the command line: `uvx` or `npx`.
    pub fn name(self) -> &'static str {
        match self {
            Runner::Uvx => "uvx",
            Runner::Npx => "npx",
        }
    }

    /// The runner named `name` on the command line.
    pub fn from_name(name: &str) -> Option<Runner> {
        Runner::ALL.into_iter().find(|runner| runner.name() == name)
    }

    /// The command and arguments that run `version` of the server's package, pinned so that the host starts
    /// the same server every time: `uvx --from fluxgit-mcp==VERSION fluxgit-mcp-sidecar` or
    /// `npx -y fluxgit-mcp@VERSION`.
    pub fn command(self, version: &str) -> (PathBuf, Vec<String>) {
        match self {
            Runner::Uvx => (
                PathBuf::from("uvx"),
                vec!["--from".into(), format!("{PYPI_PACKAGE}=={version}"), "fluxgit-mcp-sidecar".into()],
            ),
            Runner::Npx => (PathBuf::from("npx"), vec!["-y".into(), format!("{NPM_PACKAGE}@{version}")]),
        }
    }
}

/// What `install` (or `install --remove`) would do to a host's file: its text before and after, and the changes in
/// words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The configuration file.
    pub file: PathBuf,
    /// Its text now, `None` when it does not exist.
    pub before: Option<String>,
    /// Its text with the entry merged in.
    pub after: String,
    /// One line per change, e.g. `added mcpServers.fluxgit`; empty when the file already holds the entry (or,
    /// for a removal, holds no entry of that name).
    pub changes: Vec<String>,
    /// The `env` of the entry of that name the file held before, in its order; empty when there was none. An
    /// install writes `env` whole, so a variable here that the new entry lacks is dropped.
    pub previous_env: Vec<(String, String)>,
    /// A removal left the file holding nothing (an empty object, or no TOML at all), so it is deleted rather
    /// than written: an install into a missing file followed by a removal leaves no file. A file reached
    /// through a symbolic link is written instead, so the link does not dangle.
    pub delete: bool,
}

/// Why a host's file could not be planned or written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file exists but is not JSON or TOML as the host reads it: it is left as it was.
    #[error("{}: {message}; the file was left as it was (fix it, or move it away, and run install again)", file.display())]
    Unparsable {
        /// The file.
        file: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// Reading or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file changed between reading and replacing it (the host rewrote it): nothing was written.
    #[error("{}: it changed while install was merging (is the host running and rewriting it?); nothing was written, run install again", file.display())]
    Changed {
        /// The file.
        file: PathBuf,
    },
    /// The file, or a directory on its way, is a symbolic link that leads outside HOME (and outside the host's
    /// own directory variable): install writes nothing there.
    #[error("{}: leads outside HOME, to {}; install does not write there (point the link inside HOME, or add the entry by hand)", file.display(), target.display())]
    Outside {
        /// The file as the host names it.
        file: PathBuf,
        /// Where its links lead.
        target: PathBuf,
    },
    /// Something other than a regular file is in the file's place: nothing is read or written.
    #[error("{}: a {kind}, not a regular file; the file was left as it was (move it away and run install again)", file.display())]
    NotRegular {
        /// The file.
        file: PathBuf,
        /// What is there instead: `FIFO`, `device`, `socket`, `directory`, `symbolic link`.
        kind: &'static str,
    },
    /// The file is larger than any host writes.
    #[error("{}: larger than {} MiB; the file was left as it was", file.display(), cap >> 20)]
    TooLarge {
        /// The file.
        file: PathBuf,
        /// The cap, in bytes.
        cap: u64,
    },
    /// The file is read-only: install does not replace a file someone protected.
    #[error("{}: read-only; the file was left as it was (make it writable, e.g. `chmod u+w`, and run install again, or add the entry by hand)", file.display())]
    ReadOnly {
        /// The file.
        file: PathBuf,
    },
    /// Another install kept the directory locked for 30 s.
    #[error("{}: another install has been writing here for 30 s; nothing was written, run install again", dir.display())]
    Busy {
        /// The locked directory.
        dir: PathBuf,
    },
}

/// What [`apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The merge it wrote, made under the lock from the file as it was then (no changes: nothing was written).
    pub plan: Plan,
    /// Where the previous file was saved, when there was one and the file was written.
    pub backup: Option<PathBuf>,
}

impl Host {
    /// Every host, in the order `--help` lists them.
    pub const ALL: [Host; 6] =
        [Host::ClaudeCode, Host::ClaudeDesktop, Host::Cursor, Host::VsCode, Host::Codex, Host::Gemini];

    /// The name on the command line, e.g. `claude-code`.
    pub fn name(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::ClaudeDesktop => "claude-desktop",
            Host::Cursor => "cursor",
            Host::VsCode => "vscode",
            Host::Codex => "codex",
            Host::Gemini => "gemini",
        }
    }

    /// The host named `name` on the command line.
    pub fn from_name(name: &str) -> Option<Host> {
        Host::ALL.into_iter().find(|host| host.name() == name)
    }

    /// How people call it, e.g. `Claude Code`.
    pub fn title(self) -> &'static str {
        match self {
            Host::ClaudeCode => "Claude Code",
            Host::ClaudeDesktop => "Claude Desktop",
            Host::Cursor => "Cursor",
            Host::VsCode => "VS Code",
            Host::Codex => "Codex",
            Host::Gemini => "Gemini CLI",
        }
    }

    /// The user-level file the host reads its MCP servers from.
    pub fn config_file(self, dirs: &Dirs) -> PathBuf {
        let config_home = || dirs.xdg_config_home.clone().unwrap_or_else(|| dirs.home.join(".config"));
        match self {
            Host::ClaudeCode => dirs.claude_config_dir.as_ref().unwrap_or(&dirs.home).join(".claude.json"),
            Host::ClaudeDesktop => config_home().join("Claude").join("claude_desktop_config.json"),
            Host::Cursor => dirs.home.join(".cursor").join("mcp.json"),
            Host::VsCode => config_home().join("Code").join("User").join("mcp.json"),
            Host::Codex => dirs.codex_home.clone().unwrap_or_else(|| dirs.home.join(".codex")).join("config.toml"),
            Host::Gemini => dirs.home.join(".gemini").join("settings.json"),
        }
    }

    /// The directories the file may lie in once its links are followed: HOME, and the directory the host's own
    /// variable names when it is set.
    fn allowed_dirs(self, dirs: &Dirs) -> Vec<PathBuf> {
        let own = match self {
            Host::ClaudeCode => dirs.claude_config_dir.as_ref(),
            Host::ClaudeDesktop | Host::VsCode => dirs.xdg_config_home.as_ref(),
            Host::Codex => dirs.codex_home.as_ref(),
            Host::Cursor | Host::Gemini => None,
        };
        std::iter::once(&dirs.home).chain(own).cloned().collect()
    }

    /// The JSON object that maps server names to entries (`None` for Codex's TOML).
    fn container(self) -> Option<&'static str> {
        match self {
            Host::VsCode => Some("servers"),
            Host::Codex => None,
            _ => Some("mcpServers"),
        }
    }

    /// VS Code reads its file as JSON with comments, and Gemini CLI strips comments from its settings before
    /// parsing them (`strip-json-comments`): both keep a person's comments.
    fn dialect(self) -> json::Dialect {
        if matches!(self, Host::VsCode | Host::Gemini) { json::Dialect::Jsonc } else { json::Dialect::Strict }
    }

    /// The entry as this host's JSON: `command`, `args`, `env`, and `type` first for the hosts that write it.
    pub fn json_entry(self, entry: &Entry) -> Map<String, Value> {
        let mut fields = Map::new();
        if matches!(self, Host::ClaudeCode | Host::VsCode) {
            fields.insert("type".to_owned(), json!("stdio"));
        }
        fields.insert("command".to_owned(), json!(entry.command.display().to_string()));
        fields.insert("args".to_owned(), json!(entry.args));
        let env: Map<String, Value> = entry.env.iter().map(|(name, value)| (name.clone(), json!(value))).collect();
        fields.insert("env".to_owned(), Value::Object(env));
        fields
    }
}

impl Dirs {
    /// Reads `HOME`, `XDG_CONFIG_HOME`, `CODEX_HOME` and `CLAUDE_CONFIG_DIR`; `None` without an absolute `HOME`.
    pub fn from_env() -> Option<Dirs> {
        let absolute = |name: &str| {
            std::env::var_os(name).map(PathBuf::from).filter(|path| path.is_absolute() && !path.as_os_str().is_empty())
        };
        Some(Dirs {
            home: absolute("HOME")?,
            xdg_config_home: absolute("XDG_CONFIG_HOME"),
            codex_home: absolute("CODEX_HOME"),
            claude_config_dir: absolute("CLAUDE_CONFIG_DIR"),
        })
    }
}

/// What to do to the host's file.
#[derive(Debug, Clone, Copy)]
enum Edit<'a> {
    /// Merge this entry in.
    Install(&'a Entry),
    /// Remove the entry of this name.
    Remove(&'a str),
}

/// Reads the host's file and merges `entry` into it, without writing anything (`--dry-run`).
///
/// # Errors
/// [`Error::Unparsable`] when the file is not JSON (or TOML for Codex) as the host reads it, or a value on the
/// way to the entry is of another type; [`Error::Outside`], [`Error::NotRegular`] and [`Error::TooLarge`] for a
/// file install would not write; [`Error::Io`] when it cannot be read.
pub fn plan(host: Host, dirs: &Dirs, entry: &Entry) -> Result<Plan, Error> {
    plan_edit(host, dirs, Edit::Install(entry))
}

/// Reads the host's file and removes the entry named `name` from it, without writing anything
/// (`install --remove --dry-run`). The plan has no changes when the file, or the entry, is not there.
///
/// # Errors
/// As [`plan`].
pub fn plan_removal(host: Host, dirs: &Dirs, name: &str) -> Result<Plan, Error> {
    plan_edit(host, dirs, Edit::Remove(name))
}

fn plan_edit(host: Host, dirs: &Dirs, edit: Edit<'_>) -> Result<Plan, Error> {
    let located = file::locate(&host.config_file(dirs), &host.allowed_dirs(dirs))?;
    let current = file::read(&located)?;
    merge(host, &located, current.map(|current| current.text), edit)
}

/// Merges `entry` into the host's file and writes it: under a lock on the file's directory, it reads the file,
/// merges, copies the previous file to `<file>.fluxgit-backup` and replaces the file (each through a synced
/// temporary file and a rename; permissions kept, a new file gets mode 0600 and its directory 0700). Nothing
/// is written when the file already holds the entry.
///
/// # Errors
/// As [`plan`], and [`Error::ReadOnly`] for a read-only file, [`Error::Busy`] when another install holds the
/// lock for 30 s, [`Error::Changed`] when something else rewrote the file meanwhile, [`Error::Io`] when writing
/// fails. The file is then as it was.
pub fn apply(host: Host, dirs: &Dirs, entry: &Entry) -> Result<Applied, Error> {
    apply_edit(host, dirs, Edit::Install(entry))
}

/// Removes the entry named `name` from the host's file and writes it, the way [`apply`] writes: under the lock,
/// with the previous file saved as `<file>.fluxgit-remove-backup`, through a temporary file and a rename. Every
/// byte outside the entry stays, except that a server object left empty with nothing inside goes too, and a file
/// left holding nothing is deleted ([`Plan::delete`]). Nothing is written, and no directory is made, when the
/// file holds no entry of that name.
///
/// # Errors
/// As [`apply`].
pub fn apply_removal(host: Host, dirs: &Dirs, name: &str) -> Result<Applied, Error> {
    apply_edit(host, dirs, Edit::Remove(name))
}

fn apply_edit(host: Host, dirs: &Dirs, edit: Edit<'_>) -> Result<Applied, Error> {
    let located = file::locate(&host.config_file(dirs), &host.allowed_dirs(dirs))?;
    if matches!(edit, Edit::Remove(_)) && std::fs::symlink_metadata(located.dir()).is_err() {
        // No directory, so no file and no entry: a removal makes nothing, not even the directory.
        return Ok(Applied { plan: merge(host, &located, None, edit)?, backup: None });
    }
    file::create_dir(&located)?;
    let _lock = file::lock(&located)?;
    file::clean_stale(&located)?;
    let current = file::read(&located)?;
    let before = current.as_ref().map(|current| current.text.clone());
    let plan = merge(host, &located, before.clone(), edit)?;
    if plan.changes.is_empty() {
        return Ok(Applied { plan, backup: None });
    }
    // The host itself does not take the lock: check before each rename that it has not rewritten the file.
    let unchanged = || {
        let now = file::read(&located)?.map(|current| current.text);
        if now == before { Ok(()) } else { Err(Error::Changed { file: located.file.clone() }) }
    };
    let mut backup = None;
    let mut permissions = None;
    if let Some(current) = &current {
        if file::is_read_only(&located, current) {
            return Err(Error::ReadOnly { file: located.file.clone() });
        }
        let mut name = located.target.file_name().unwrap_or_default().to_os_string();
        name.push(match edit {
            Edit::Install(_) => ".fluxgit-backup",
            Edit::Remove(_) => ".fluxgit-remove-backup",
        });
        let path = located.target.with_file_name(name);
        file::replace(&located, &path, "backup-", current.text.as_bytes(), Some(&current.permissions), unchanged)?;
        backup = Some(path);
        permissions = Some(&current.permissions);
    }
    if plan.delete {
        unchanged()?;
        file::delete(&located)?;
    } else {
        file::replace(&located, &located.target, "", plan.after.as_bytes(), permissions, unchanged)?;
    }
    Ok(Applied { plan, backup })
}

/// Makes the edit to the file's text (`None`: no file), keeping its byte order mark and line endings.
fn merge(host: Host, located: &file::Located, before: Option<String>, edit: Edit<'_>) -> Result<Plan, Error> {
    let text = before.as_deref().unwrap_or_default();
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(body) => ("\u{feff}", body),
        None => ("", text),
    };
    let name = match edit {
        Edit::Install(entry) => entry.name.as_str(),
        Edit::Remove(name) => name,
    };
    let (merged, previous_env) = match host.container() {
        Some(container) => {
            let merged = match edit {
                Edit::Install(entry) => merge_json(body, host.dialect(), container, name, &host.json_entry(entry)),
                Edit::Remove(name) => remove_json(body, host.dialect(), container, name),
            };
            (merged, json_env(body, host.dialect(), container, name))
        }
        None => {
            // The edit is made on `\n` lines; each line then gets its own ending back.
            let lines = body.replace("\r\n", "\n");
            let merged = match edit {
                Edit::Install(entry) => merge_toml(&lines, entry),
                Edit::Remove(name) => remove_toml(&lines, name),
            };
            (merged.map(|(after, changes)| (restore_line_endings(body, &after), changes)), toml_env(&lines, name))
        }
    };
    let (after, mut changes) = merged.map_err(|message| Error::Unparsable { file: located.file.clone(), message })?;
    let after = if changes.is_empty() { text.to_owned() } else { format!("{bom}{after}") };
    let linked = std::fs::symlink_metadata(&located.file).is_ok_and(|metadata| metadata.is_symlink());
    let delete = matches!(edit, Edit::Remove(_))
        && !changes.is_empty()
        && !linked
        && match host.container() {
            Some(_) => json::is_empty_document(&after),
            None => after.trim().is_empty(),
        };
    if delete {
        changes.push("deleted the file: nothing is left in it".to_owned());
    }
    Ok(Plan { file: located.file.clone(), before, after, changes, previous_env, delete })
}

/// The `env` of the JSON entry `container.name`, values that are not strings as JSON; empty when there is none
/// or the text does not parse (the edit reports that).
fn json_env(text: &str, dialect: json::Dialect, container: &str, name: &str) -> Vec<(String, String)> {
    let Ok(Some(document)) = json::parse(text, dialect) else { return Vec::new() };
    let Some(Value::Object(env)) =
        document.get(container).and_then(|servers| servers.get(name)).and_then(|entry| entry.get("env"))
    else {
        return Vec::new();
    };
    env.iter()
        .map(|(variable, value)| (variable.clone(), value.as_str().map_or_else(|| value.to_string(), str::to_owned)))
        .collect()
}

/// The `env` of Codex's `[mcp_servers.<name>]`, values that are not strings as TOML; empty when there is none.
fn toml_env(text: &str, name: &str) -> Vec<(String, String)> {
    let Ok(document) = text.parse::<toml_edit::DocumentMut>() else { return Vec::new() };
    let env = document
        .get("mcp_servers")
        .and_then(|servers| servers.get(name))
        .and_then(|entry| entry.get("env"))
        .and_then(toml_edit::Item::as_table_like);
    let Some(env) = env else { return Vec::new() };
    env.iter()
        .map(|(variable, value)| {
            let value = value.as_str().map_or_else(|| value.to_string().trim().to_owned(), str::to_owned);
            (variable.to_owned(), value)
        })
        .collect()
}

/// Removes `container.name` from a JSON document, keeping every other byte.
fn remove_json(
    text: &str,
    dialect: json::Dialect,
    container: &str,
    name: &str,
) -> Result<(String, Vec<String>), String> {
    // A key written twice would leave the host reading the other one: every occurrence goes.
    let mut edited = text.to_owned();
    let mut changes = Vec::new();
    while let Some(shorter) = json::remove(&edited, dialect, &[container, name]).map_err(|error| error.to_string())? {
        edited = shorter;
        changes = vec![format!("removed {container}.{name}")];
    }
    // The server object the removal emptied goes too: install adds it where the file had none.
    if !changes.is_empty()
        && let Some(shorter) =
            json::remove_if_empty(&edited, dialect, &[container]).map_err(|error| error.to_string())?
    {
        edited = shorter;
        changes.push(format!("removed {container}, now empty"));
    }
    Ok((edited, changes))
}

/// Removes `[mcp_servers.<name>]` (however it is written) from Codex's TOML.
fn remove_toml(text: &str, name: &str) -> Result<(String, Vec<String>), String> {
    let mut document: toml_edit::DocumentMut = text.parse().map_err(|error: toml_edit::TomlError| {
        format!("not valid TOML: {}", error.to_string().trim_end().replace('\n', " "))
    })?;
    let Some(servers) = document.get_mut("mcp_servers") else { return Ok((text.to_owned(), Vec::new())) };
    let servers = servers.as_table_like_mut().ok_or("`mcp_servers` is not a table")?;
    if servers.remove(name).is_none() {
        return Ok((text.to_owned(), Vec::new()));
    }
    let mut changes = vec![format!("removed [mcp_servers.{name}]")];
    // A `mcp_servers` with no header of its own (install's) and nothing left in it goes too.
    let emptied = document
        .get("mcp_servers")
        .and_then(toml_edit::Item::as_table)
        .is_some_and(|servers| servers.is_implicit() && servers.is_empty());
    if emptied {
        document.remove("mcp_servers");
        changes.push("removed [mcp_servers], now empty".to_owned());
    }
    Ok((document.to_string(), changes))
}

/// `edited` (which ends its lines with `\n`) with the line endings of `original` put back: the lines at the
/// start and at the end that are the same in both get their own ending back, the lines between get the ending
/// most of `original`'s lines have.
fn restore_line_endings(original: &str, edited: &str) -> String {
    fn lines(text: &str) -> Vec<(&str, &str)> {
        text.split_inclusive('\n')
            .map(|line| match line.strip_suffix("\r\n") {
                Some(content) => (content, "\r\n"),
                None => line.strip_suffix('\n').map_or((line, ""), |content| (content, "\n")),
            })
            .collect()
    }
    let (old, new) = (lines(original), lines(edited));
    let crlf = old.iter().filter(|(_, ending)| *ending == "\r\n").count();
    let lf = old.iter().filter(|(_, ending)| *ending == "\n").count();
    let newline = if crlf > lf { "\r\n" } else { "\n" };
    let same = |(a, b): (&(&str, &str), &(&str, &str))| a.0 == b.0 && a.1.is_empty() == b.1.is_empty();
    let prefix = old.iter().zip(&new).take_while(|pair| same(*pair)).count();
    let room = old.len().min(new.len()) - prefix;
    let suffix = old.iter().rev().zip(new.iter().rev()).take(room).take_while(|pair| same(*pair)).count();
    let mut out = String::with_capacity(edited.len() + crlf);
    for (content, ending) in &old[..prefix] {
        out.push_str(content);
        out.push_str(ending);
    }
    for (content, ending) in &new[prefix..new.len() - suffix] {
        out.push_str(content);
        out.push_str(if ending.is_empty() { "" } else { newline });
    }
    for (content, ending) in &old[old.len() - suffix..] {
        out.push_str(content);
        out.push_str(ending);
    }
    out
}

/// Merges the entry into a JSON document: a new entry is inserted whole; in an existing one, each of our keys is
/// set where it differs and the others are kept.
fn merge_json(
    text: &str,
    dialect: json::Dialect,
    container: &str,
    name: &str,
    fields: &Map<String, Value>,
) -> Result<(String, Vec<String>), String> {
    let current = json::parse(text, dialect).map_err(|error| error.to_string())?;
    let existing = current.as_ref().and_then(|value| value.get(container)).and_then(|servers| servers.get(name));
    let mut text = text.to_owned();
    let mut changes = Vec::new();
    if let Some(Value::Object(_)) = existing {
        for (key, value) in fields {
            if let Some(edited) =
                json::set(&text, dialect, &[container, name, key], value).map_err(|error| error.to_string())?
            {
                text = edited;
                changes.push(format!("set {container}.{name}.{key}"));
            }
        }
    } else {
        let value = Value::Object(fields.clone());
        if let Some(edited) =
            json::set(&text, dialect, &[container, name], &value).map_err(|error| error.to_string())?
        {
            text = edited;
            let verb = if existing.is_some() { "replaced" } else { "added" };
            changes.push(format!("{verb} {container}.{name}"));
        }
    }
    Ok((text, changes))
}

/// Merges the entry into Codex's TOML as `[mcp_servers.<name>]` with `command`, `args` and an inline `env`.
fn merge_toml(text: &str, entry: &Entry) -> Result<(String, Vec<String>), String> {
    use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};
    let mut document: DocumentMut = text.parse().map_err(|error: toml_edit::TomlError| {
        format!("not valid TOML: {}", error.to_string().trim_end().replace('\n', " "))
    })?;
    let servers = document.entry("mcp_servers").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    let servers = servers.as_table_mut().ok_or("`mcp_servers` is not a table")?;
    let mut changes = Vec::new();
    if !servers.contains_key(&entry.name) {
        changes.push(format!("added [mcp_servers.{}]", entry.name));
    }
    let server = servers
        .entry(&entry.name)
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_mut()
        .ok_or_else(|| format!("`mcp_servers.{}` is not a table", entry.name))?;
    let fresh = !changes.is_empty();
    let mut updates: Vec<(&str, Item)> = Vec::new();
    let command = entry.command.display().to_string();
    if server.get("command").and_then(Item::as_str) != Some(command.as_str()) {
        updates.push(("command", value(command)));
    }
    let current_args: Option<Vec<&str>> =
        server.get("args").and_then(Item::as_array).map(|array| array.iter().filter_map(|arg| arg.as_str()).collect());
    if current_args.is_none_or(|current| current != entry.args) {
        updates.push(("args", value(entry.args.iter().map(String::as_str).collect::<Array>())));
    }
    let current_env: Option<Vec<(String, String)>> = server.get("env").and_then(Item::as_table_like).map(|env| {
        env.iter().map(|(name, value)| (name.to_owned(), value.as_str().unwrap_or_default().to_owned())).collect()
    });
    let same_env = current_env.is_some_and(|mut current| {
        let mut wanted = entry.env.clone();
        current.sort();
        wanted.sort();
        current == wanted
    });
    if !same_env {
        let mut env = InlineTable::new();
        for (name, value) in &entry.env {
            env.insert(name, value.as_str().into());
        }
        updates.push(("env", value(env)));
    }
    for (key, item) in updates {
        server.insert(key, item);
        if !fresh {
            changes.push(format!("set mcp_servers.{}.{key}", entry.name));
        }
    }
    Ok((document.to_string(), changes))
}

/// The `claude` CLI on the PATH, if there is one.
pub fn claude_cli() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("claude")).find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// The `claude` commands that put `entry` into Claude Code's user scope: `mcp remove` first when an entry of
/// that name exists (`mcp add-json` refuses to overwrite), then `mcp add-json --scope user NAME JSON`.
pub fn claude_commands(entry: &Entry, exists: bool) -> Vec<Vec<String>> {
    let fields = Value::Object(Host::ClaudeCode.json_entry(entry)).to_string();
    let mut commands = Vec::new();
    if exists {
        commands.push(claude_remove_command(&entry.name));
    }
    commands.push(vec!["mcp".into(), "add-json".into(), "--scope".into(), "user".into(), entry.name.clone(), fields]);
    commands
}

/// The `claude` command that removes the entry `name` from Claude Code's user scope:
/// `mcp remove --scope user NAME`.
pub fn claude_remove_command(name: &str) -> Vec<String> {
    vec!["mcp".into(), "remove".into(), "--scope".into(), "user".into(), name.to_owned()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            name: "fluxgit".to_owned(),
            command: PathBuf::from("/opt/bin/fluxgit-mcp-sidecar"),
            args: Vec::new(),
            env: vec![("FLUXGIT_MCP_ALLOWED_ROOTS".to_owned(), "/src:/work".to_owned())],
        }
    }

    #[test]
    fn codex_keeps_the_rest_of_the_file_and_is_idempotent() {
        let text = "# my settings\nmodel = \"o3\"  # pinned\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let (after, changes) = merge_toml(text, &entry()).expect("merges");
        assert_eq!(changes, vec!["added [mcp_servers.fluxgit]"]);
        assert!(after.starts_with(text), "the old text is kept as it was:\n{after}");
        assert!(after.contains("[mcp_servers.fluxgit]\ncommand = \"/opt/bin/fluxgit-mcp-sidecar\"\nargs = []\n"));
        assert!(after.contains("env = { FLUXGIT_MCP_ALLOWED_ROOTS = \"/src:/work\" }"), "{after}");
        let (again, changes) = merge_toml(&after, &entry()).expect("merges");
        assert!(changes.is_empty(), "{changes:?}");
        assert_eq!(again, after);
        let moved = Entry { command: PathBuf::from("/new/bin"), ..entry() };
        let (_, changes) = merge_toml(&after, &moved).expect("merges");
        assert_eq!(changes, vec!["set mcp_servers.fluxgit.command"]);
        assert!(merge_toml("mcp_servers = 3\n", &entry()).is_err());
        assert!(merge_toml("[a\n", &entry()).expect_err("refused").starts_with("not valid TOML"));
    }

    #[test]
    fn codex_runner_entry_writes_its_arguments_and_a_switch_back_rewrites_them() {
        let (command, args) = Runner::Uvx.command("1.2.3");
        let uvx = Entry { command, args, ..entry() };
        let (after, changes) = merge_toml("", &uvx).expect("merges");
        assert_eq!(changes, vec!["added [mcp_servers.fluxgit]"]);
        assert!(
            after.contains("command = \"uvx\"\nargs = [\"--from\", \"fluxgit-mcp==1.2.3\", \"fluxgit-mcp-sidecar\"]\n"),
            "{after}"
        );
        let (again, changes) = merge_toml(&after, &uvx).expect("merges");
        assert!(changes.is_empty() && again == after, "{changes:?}");
        let (_, changes) = merge_toml(&after, &entry()).expect("merges");
        assert_eq!(changes, vec!["set mcp_servers.fluxgit.command", "set mcp_servers.fluxgit.args"]);
    }

    #[test]
    fn runner_json_entry_pins_the_version() {
        let (command, args) = Runner::Npx.command("0.1.0");
        let npx = Entry { command, args, ..entry() };
        let fields = Host::ClaudeDesktop.json_entry(&npx);
        assert_eq!(fields["command"], "npx");
        assert_eq!(fields["args"], json!(["-y", "fluxgit-mcp@0.1.0"]));
        assert_eq!(Runner::ALL.map(Runner::name), ["uvx", "npx"]);
        assert_eq!(Runner::from_name("npx"), Some(Runner::Npx));
        assert_eq!(Runner::from_name("pipx"), None);
    }

    #[test]
    fn codex_removal_gives_back_the_file_install_started_from() {
        let texts = [
            "# my settings\nmodel = \"o3\"  # pinned\n\n[mcp_servers.other]\ncommand = \"x\"\n\n[profiles.a]\nk = 1\n",
            "model = \"o3\"\n",
            "",
            "[mcp_servers]\n",
        ];
        for text in texts {
            let (installed, _) = merge_toml(text, &entry()).expect("merges");
            assert_eq!(toml_env(&installed, "fluxgit"), entry().env);
            let (removed, changes) = remove_toml(&installed, "fluxgit").expect("removes");
            assert_eq!(changes[0], "removed [mcp_servers.fluxgit]");
            // The `[mcp_servers]` install added (no header of its own) goes with its last server.
            assert_eq!(changes.len() == 2, !text.contains("mcp_servers"), "{changes:?}");
            assert_eq!(removed, text, "installed:\n{installed}");
            let (again, changes) = remove_toml(&removed, "fluxgit").expect("removes");
            assert!(changes.is_empty() && again == text, "{changes:?}");
        }
        let dotted = "mcp_servers.fluxgit.command = \"/x\"\nmcp_servers.other.command = \"/y\"\n";
        let (removed, _) = remove_toml(dotted, "fluxgit").expect("removes");
        assert_eq!(removed, "mcp_servers.other.command = \"/y\"\n");
        assert!(remove_toml("mcp_servers = 3\n", "fluxgit").is_err());
    }

    #[test]
    fn json_removal_takes_every_occurrence_of_a_repeated_name() {
        let text = "{\"mcpServers\": {\"fluxgit\": 1, \"other\": 2, \"fluxgit\": 3}}";
        let (removed, changes) = remove_json(text, json::Dialect::Strict, "mcpServers", "fluxgit").expect("removes");
        assert_eq!(removed, "{\"mcpServers\": {\"other\": 2}}");
        assert_eq!(changes, vec!["removed mcpServers.fluxgit"]);
    }

    #[test]
    fn restored_line_endings_keep_each_old_line_and_give_new_ones_the_usual_ending() {
        // Mixed endings: every line install did not touch keeps its own, the new lines get the majority's.
        let original = "a = 1\r\nb = 2\n\r\n[t]\r\nc = 3";
        let edited = "a = 1\nb = 2\n\n[t]\nnew = 0\nc = 3";
        assert_eq!(restore_line_endings(original, edited), "a = 1\r\nb = 2\n\r\n[t]\r\nnew = 0\r\nc = 3");
        assert_eq!(restore_line_endings("x\ny\n", "x\nz\ny\n"), "x\nz\ny\n");
        assert_eq!(restore_line_endings("", "[t]\nk = 1\n"), "[t]\nk = 1\n");
        let (after, _) = merge_toml("k = 1\n", &entry()).expect("merges");
        assert!(restore_line_endings("k = 1\r\n", &after).split_inclusive('\n').all(|line| line.ends_with("\r\n")));
    }

    #[test]
    fn config_files_follow_the_documented_places() {
        let dirs = Dirs { home: PathBuf::from("/h"), xdg_config_home: None, codex_home: None, claude_config_dir: None };
        let files: Vec<PathBuf> = Host::ALL.iter().map(|host| host.config_file(&dirs)).collect();
        let expected = [
            "/h/.claude.json",
            "/h/.config/Claude/claude_desktop_config.json",
            "/h/.cursor/mcp.json",
            "/h/.config/Code/User/mcp.json",
            "/h/.codex/config.toml",
            "/h/.gemini/settings.json",
        ];
        assert_eq!(files, expected.map(PathBuf::from));
        let moved = Dirs {
            xdg_config_home: Some("/x".into()),
            codex_home: Some("/c".into()),
            claude_config_dir: Some("/k".into()),
            ..dirs
        };
        assert_eq!(Host::VsCode.config_file(&moved), PathBuf::from("/x/Code/User/mcp.json"));
        assert_eq!(Host::ClaudeDesktop.config_file(&moved), PathBuf::from("/x/Claude/claude_desktop_config.json"));
        assert_eq!(Host::Codex.config_file(&moved), PathBuf::from("/c/config.toml"));
        assert_eq!(Host::ClaudeCode.config_file(&moved), PathBuf::from("/k/.claude.json"));
        assert_eq!(Host::Cursor.config_file(&moved), PathBuf::from("/h/.cursor/mcp.json"));
    }
}
