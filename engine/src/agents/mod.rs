//! `agents.presence` (design.md#tools): which other coding agents work in a repository, from local
//! sources only.
//!
//! Each source is a small adapter returning [`Sighting`]s for one repository root:
//! - [`process`]: running processes (Linux `/proc`) whose command line names a known agent CLI or
//!   editor and whose working directory lies inside the repository; the parent chain of our own
//!   process marks the likely caller.
//! - [`claude`], [`codex`], [`gemini`]: the agents' session stores under the home directory,
//!   read-only, by metadata and by the tail of each append-only log ([`tail`]), cached by
//!   `(path, size, mtime)`.
//! - [`aider`]: the history files Aider keeps in the repository itself.
//! - [`vscode`]: Cursor's and VS Code's per-workspace `state.vscdb` (SQLite opened
//!   `mode=ro&immutable=1`).
//! - [`presence`]: the presence files of other MCP sidecars (`<run dir>/presence/mcp/<pid>.json`).
//!
//! Sightings of one agent are merged into one [`Agent`] (a process, the MCP sidecar it started, its
//! newest session). Only names, times, paths and branches are ever kept: never prompts, messages,
//! tool arguments or outputs, nor file contents. A store that cannot be read or parsed is skipped
//! with a diagnostic; detection never fails a call.

mod aider;
pub mod claude;
mod codex;
pub mod gemini;
mod presence;
mod process;
mod read;
mod tail;
mod vscode;

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::Serialize;

use crate::budget::Omitted;
use crate::error::Result;
use crate::{Budgeted, Measure};

/// Activity within this many milliseconds makes an agent `working` (2 minutes).
pub const WORKING_WITHIN_MS: u64 = 2 * 60 * 1000;
/// Activity within this many milliseconds keeps an agent without a live process `recent` (24
/// hours).
pub const RECENT_WITHIN_MS: u64 = 24 * 60 * 60 * 1000;
/// Most repo-relative files listed per agent (most recent first).
pub const MAX_FILES_PER_AGENT: usize = 20;

/// Where detection looks, resolved by the caller (the engine reads no environment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The user's home directory (`~/.claude`, `~/.codex`, `~/.gemini`, `~/.config/Cursor`, ...);
    /// `None` skips the home stores.
    pub home: Option<PathBuf>,
    /// Codex's home (`CODEX_HOME`), default `<home>/.codex`.
    pub codex_home: Option<PathBuf>,
    /// Run dirs whose `presence/mcp/*.json` files are read (ours and the published product's).
    pub run_dirs: Vec<PathBuf>,
    /// The proc file system (`/proc`); tests may point it elsewhere.
    pub proc_root: PathBuf,
    /// Our own process id: its record is excluded, its ancestors mark the likely caller.
    pub own_pid: u32,
    /// The MCP client name the caller declared (sanitised), used when no ancestor process is
    /// recognised.
    pub client_name: Option<String>,
    /// Now, in Unix milliseconds.
    pub now_ms: u64,
}

/// What an agent is doing, by the freshest evidence (design.md#tools).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Activity within [`WORKING_WITHIN_MS`].
    Working,
    /// Its process is alive, no recent activity.
    Open,
    /// No live process; activity within [`RECENT_WITHIN_MS`].
    Recent,
}

/// Where a sighting came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// A running process.
    Process,
    /// The agent's own session store under the home directory.
    SessionStore,
    /// Files the agent keeps in the repository (Aider's histories).
    RepoFiles,
    /// An editor's workspace state (Cursor, VS Code).
    Editor,
    /// Another MCP sidecar's presence file.
    McpPresence,
}

/// One agent working in the repository. Compact: `null`, `false`, `0` and empty lists are left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Agent {
    /// Agent kind, e.g. `claude-code`, `codex`, `gemini-cli`, `aider`, `cursor`, `vscode`, or an
    /// MCP client name.
    pub agent: String,
    /// `working`, `open` or `recent`.
    pub state: State,
    /// Every source that saw it, sorted.
    pub sources: Vec<Source>,
    /// The branch the agent's session recorded (or the repository's when only its process is
    /// known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The name of the last tool it used (never its arguments or output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_tool: Option<String>,
    /// Repo-relative files its store says it touched, most recent first, at most
    /// [`MAX_FILES_PER_AGENT`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Its process id, when a live process is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Its last recorded activity, Unix milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_activity_ms: Option<u64>,
    /// The MCP client name of a sidecar it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_client: Option<String>,
    /// Probably the agent calling us: an ancestor of our process, else the only record of the
    /// caller's kind.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub likely_caller: bool,
}

/// `agents.presence`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Agents, `working` first, then `open`, then `recent`, newest activity first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<Agent>,
    /// Exact number of agents found, even when `agents` is cut (0 is left out).
    #[serde(skip_serializing_if = "is_zero")]
    pub agent_count: usize,
    /// Stores skipped (unreadable, unparseable), one line each; never their content.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<String>,
}

fn is_zero(value: &usize) -> bool {
    *value == 0
}

/// What one adapter saw of one agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sighting {
    /// Agent kind.
    pub agent: String,
    /// The adapter.
    pub source: Option<Source>,
    /// Branch, if recorded.
    pub branch: Option<String>,
    /// Last tool name, if recorded.
    pub last_tool: Option<String>,
    /// Repo-relative files, most recent first.
    pub files: Vec<String>,
    /// Process id (a live process, or the client process of a sidecar).
    pub pid: Option<u32>,
    /// Whether `pid` is alive.
    pub alive: bool,
    /// Last activity, Unix ms.
    pub last_activity_ms: Option<u64>,
    /// MCP client name.
    pub mcp_client: Option<String>,
}

/// The detector: per-process caches of the stores' parsed tails. Cheap to share; calls lock it
/// briefly.
#[derive(Debug, Default)]
pub struct Detector {
    cache: Mutex<Caches>,
}

/// The caches one detection pass uses.
#[derive(Debug, Default)]
pub struct Caches {
    /// Append-only logs, by path.
    pub logs: tail::LogCache,
    /// Whole small documents and SQLite summaries, by path, validated by size and mtime.
    pub documents: HashMap<PathBuf, (u64, SystemTime, tail::Summary)>,
}

impl Detector {
    /// Every agent working in the repository at `root` (canonical), cut to `max_tokens` as
    /// `measure` counts.
    ///
    /// `branch` is the repository's current branch, reported for agents known only by their
    /// process.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] (`budget_below_floor`) when even an empty answer exceeds
    /// `max_tokens`.
    pub fn presence(
        &self,
        root: &Path,
        branch: Option<&str>,
        options: &Options,
        max_tokens: usize,
        measure: &mut Measure<'_, Report>,
    ) -> Result<Budgeted<Report>> {
        let full = self.detect(root, branch, options);
        let total = full.agents.len();
        let cut = |shown: usize| Report {
            agents: full.agents[..shown.min(total)].to_vec(),
            agent_count: full.agent_count,
            diagnostics: full.diagnostics.clone(),
        };
        let mut candidate = |shown: &[usize]| {
            let omitted = Omitted::from_counts(&["agents"], &[total], shown);
            measure(&Budgeted { data: cut(shown[0]), omitted })
        };
        let shown = crate::budget::fit(&[total], max_tokens, &mut candidate)?;
        Ok(Budgeted { data: cut(shown[0]), omitted: Omitted::from_counts(&["agents"], &[total], &shown) })
    }

    /// Every agent working in the repository at `root`, uncut (see [`Detector::presence`]).
    pub fn detect(&self, root: &Path, branch: Option<&str>, options: &Options) -> Report {
        self.detect_many(&[(root, branch)], options).pop().unwrap_or_default()
    }

    /// [`Detector::detect`] for each of several checkouts (a repository's worktrees), from one read
    /// of the process table: one report per `(root, branch)`, in order.
    pub fn detect_many(&self, checkouts: &[(&Path, Option<&str>)], options: &Options) -> Vec<Report> {
        let table = process::Table::read(&options.proc_root);
        let ancestors = table.ancestors(options.own_pid);
        checkouts.iter().map(|(root, branch)| self.detect_in(root, *branch, options, &table, &ancestors)).collect()
    }

    fn detect_in(
        &self,
        root: &Path,
        branch: Option<&str>,
        options: &Options,
        table: &process::Table,
        ancestors: &[u32],
    ) -> Report {
        let mut diagnostics = Vec::new();
        let mut sightings = process::sightings(table, root, options.own_pid, branch);
        {
            let mut caches = match self.cache.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            if let Some(home) = &options.home {
                sightings.extend(claude::sightings(home, root, options.now_ms, &mut caches, &mut diagnostics));
                sightings.extend(gemini::sightings(home, root, options.now_ms, &mut caches, &mut diagnostics));
                sightings.extend(vscode::sightings(home, root, options.now_ms, &mut caches, &mut diagnostics));
            }
            let codex_home =
                options.codex_home.clone().or_else(|| options.home.as_ref().map(|home| home.join(".codex")));
            if let Some(codex_home) = codex_home {
                sightings.extend(codex::sightings(&codex_home, root, options.now_ms, &mut caches, &mut diagnostics));
            }
            sightings.extend(aider::sightings(root, options.now_ms, &mut caches, &mut diagnostics));
        }
        let presence = presence::sightings(&options.run_dirs, root, options, table, &mut diagnostics);
        let agents = merge(sightings, presence, table, ancestors, options);
        Report { agent_count: agents.len(), agents, diagnostics }
    }
}

/// Merges sightings into agents, drops our own record and stale ones, marks the likely caller and
/// sorts.
fn merge(
    sightings: Vec<Sighting>,
    presence: Vec<Sighting>,
    table: &process::Table,
    ancestors: &[u32],
    options: &Options,
) -> Vec<Agent> {
    let (processes, stores): (Vec<Sighting>, Vec<Sighting>) =
        sightings.into_iter().partition(|sighting| sighting.source == Some(Source::Process));
    let mut records: Vec<(Sighting, Vec<Source>, bool)> =
        processes.into_iter().map(|sighting| (sighting, vec![Source::Process], false)).collect();
    // A sidecar's presence joins the agent process among its ancestors.
    for sighting in presence {
        let chain: Vec<u32> = sighting.pid.map(|pid| [vec![pid], table.ancestors(pid)].concat()).unwrap_or_default();
        let target = records.iter_mut().find(|(record, _, _)| record.pid.is_some_and(|pid| chain.contains(&pid)));
        match target {
            Some((record, sources, _)) => {
                absorb(record, &sighting);
                sources.push(Source::McpPresence);
            }
            None => records.push((sighting, vec![Source::McpPresence], false)),
        }
    }
    // Stores join a record of the same agent that has none yet, newest store first; else they stand alone.
    let mut stores = stores;
    stores.sort_by_key(|sighting| std::cmp::Reverse(sighting.last_activity_ms));
    for sighting in stores {
        let source = sighting.source.unwrap_or(Source::SessionStore);
        let target = records.iter_mut().find(|(record, sources, has_store)| {
            !has_store && record.agent == sighting.agent && !sources.contains(&source)
        });
        match target {
            Some((record, sources, has_store)) => {
                absorb(record, &sighting);
                sources.push(source);
                *has_store = true;
            }
            None => records.push((sighting, vec![source], true)),
        }
    }
    let mut agents: Vec<Agent> = records
        .into_iter()
        .filter(|(record, _, _)| record.pid != Some(options.own_pid))
        .filter_map(|(record, mut sources, _)| {
            let state = state(&record, options.now_ms)?;
            sources.sort();
            sources.dedup();
            Some(Agent {
                agent: record.agent,
                state,
                sources,
                branch: record.branch,
                last_tool: record.last_tool,
                files: record.files,
                pid: record.pid.filter(|_| record.alive),
                last_activity_ms: record.last_activity_ms,
                mcp_client: record.mcp_client,
                likely_caller: false,
            })
        })
        .collect();
    let by_ancestry: Vec<usize> = agents
        .iter()
        .enumerate()
        .filter(|(_, agent)| agent.pid.is_some_and(|pid| ancestors.contains(&pid)))
        .map(|(idx, _)| idx)
        .collect();
    if let Some(&idx) = by_ancestry.first() {
        agents[idx].likely_caller = true;
    } else if let Some(kind) = options.client_name.as_deref().map(agent_of_client) {
        let same: Vec<usize> =
            agents.iter().enumerate().filter(|(_, agent)| agent.agent == kind).map(|(idx, _)| idx).collect();
        if let [only] = same[..] {
            agents[only].likely_caller = true;
        }
    }
    agents.sort_by(|a, b| {
        a.state.cmp(&b.state).then(b.last_activity_ms.cmp(&a.last_activity_ms)).then(a.agent.cmp(&b.agent))
    });
    agents
}

/// Folds `other` into `record`: the newest activity wins the last tool, files are joined newest
/// first.
fn absorb(record: &mut Sighting, other: &Sighting) {
    let newer = other.last_activity_ms > record.last_activity_ms;
    if other.last_tool.is_some() && (newer || record.last_tool.is_none()) {
        record.last_tool.clone_from(&other.last_tool);
    }
    if other.branch.is_some() && (newer || record.branch.is_none()) {
        record.branch.clone_from(&other.branch);
    }
    let mut files = if newer { other.files.clone() } else { record.files.clone() };
    for file in if newer { &record.files } else { &other.files } {
        if !files.contains(file) {
            files.push(file.clone());
        }
    }
    files.truncate(MAX_FILES_PER_AGENT);
    record.files = files;
    record.last_activity_ms = record.last_activity_ms.max(other.last_activity_ms);
    if record.mcp_client.is_none() {
        record.mcp_client.clone_from(&other.mcp_client);
    }
    if record.pid.is_none() || (!record.alive && other.alive) {
        record.pid = other.pid;
        record.alive = other.alive;
    }
}

fn state(record: &Sighting, now_ms: u64) -> Option<State> {
    let age = record.last_activity_ms.map(|at| now_ms.saturating_sub(at));
    match age {
        Some(age) if age <= WORKING_WITHIN_MS => Some(State::Working),
        _ if record.alive => Some(State::Open),
        Some(age) if age <= RECENT_WITHIN_MS => Some(State::Recent),
        _ => None,
    }
}

/// The agent kind an MCP client name stands for (`claude-code` for `claude-code`, `claude-ai`,
/// ...).
pub fn agent_of_client(client: &str) -> String {
    let lower = client.to_ascii_lowercase();
    let known = [
        ("claude", "claude-code"),
        ("codex", "codex"),
        ("gemini", "gemini-cli"),
        ("cursor", "cursor"),
        ("aider", "aider"),
        ("visual studio code", "vscode"),
        ("vscode", "vscode"),
        ("windsurf", "windsurf"),
    ];
    known.iter().find(|(needle, _)| lower.contains(needle)).map_or(client.to_owned(), |(_, kind)| (*kind).to_owned())
}

// A file's modification time in Unix milliseconds.
pub(crate) use fluxgit_contract::unix_ms as mtime_ms;

/// Whether a store modified at `modified_ms` is old enough to be skipped without reading it.
pub(crate) fn too_old(modified_ms: u64, now_ms: u64) -> bool {
    now_ms.saturating_sub(modified_ms) > RECENT_WITHIN_MS
}

/// `path` (absolute, or relative to `cwd`) as a repository-relative path with `/` separators, if it
/// lies inside `root`; `None` for paths outside, with `..`, or with control characters.
pub(crate) fn relative_to(root: &Path, cwd: Option<&Path>, path: &str) -> Option<String> {
    if path.is_empty() || path.chars().any(char::is_control) {
        return None;
    }
    let raw = Path::new(path);
    let absolute = if raw.is_absolute() { raw.to_path_buf() } else { cwd?.join(raw) };
    let mut normal = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::ParentDir => return None,
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    let inside = normal.strip_prefix(root).ok()?;
    let parts: Vec<String> = inside.components().map(|part| part.as_os_str().to_string_lossy().into_owned()).collect();
    if parts.is_empty() || parts.first().is_some_and(|first| first == ".git") {
        return None;
    }
    Some(parts.join("/"))
}

/// Whether `path` is `root` or lies inside it.
pub(crate) fn inside(root: &Path, path: &Path) -> bool {
    path.starts_with(root)
}

#[cfg(test)]
mod tests;

/// The sighting of a session log whose recorded `cwd` lies inside `root`; `None` for another
/// repository's log.
pub(crate) fn session_sighting(
    agent: &str,
    root: &Path,
    summary: &tail::Summary,
    modified_ms: u64,
) -> Option<Sighting> {
    let cwd = PathBuf::from(summary.cwd.as_deref()?);
    if !inside(root, &cwd) {
        return None;
    }
    let files =
        summary.files.iter().filter_map(|file| relative_to(root, None, file)).take(MAX_FILES_PER_AGENT).collect();
    Some(Sighting {
        agent: agent.to_owned(),
        source: Some(Source::SessionStore),
        branch: summary.branch.clone(),
        last_tool: summary.last_tool.clone(),
        files,
        pid: None,
        alive: false,
        last_activity_ms: Some(modified_ms),
        mcp_client: None,
    })
}

/// Reads the log at `path` through the cache and turns it into a sighting for `root`; skips logs
/// older than a day by their mtime alone, and reports unreadable or unparseable logs in
/// `diagnostics`.
pub(crate) fn log_sighting(
    (agent, visit): (&str, tail::Visit),
    path: &Path,
    root: &Path,
    now_ms: u64,
    caches: &mut Caches,
    diagnostics: &mut Vec<String>,
    fixed_cwd: Option<&Path>,
) -> Option<Sighting> {
    let metadata = std::fs::metadata(path).ok()?;
    let modified_ms = mtime_ms(metadata.modified().ok()?);
    if too_old(modified_ms, now_ms) {
        return None;
    }
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    match caches.logs.read(path, &metadata, visit) {
        Ok(mut summary) if summary.is_parseable() => {
            if let Some(cwd) = fixed_cwd {
                summary.cwd = Some(cwd.display().to_string());
            }
            session_sighting(agent, root, &summary, modified_ms)
        }
        Ok(_) => {
            diagnostics.push(format!("{agent}: skipped session log {name}: not JSON lines"));
            None
        }
        Err(error) => {
            diagnostics.push(format!("{agent}: skipped session log {name}: {}", error.kind()));
            None
        }
    }
}

/// The entries of `dir` (empty when it cannot be read), sorted by name.
pub(crate) fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(read) => read.filter_map(|entry| entry.ok().map(|entry| entry.path())).collect(),
        Err(_) => Vec::new(),
    };
    paths.sort();
    paths
}
