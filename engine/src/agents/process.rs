//! Running processes (Linux `/proc`): agent CLIs and editors whose working directory lies inside
//! the repository.
//!
//! A process is an agent when the base name of `argv[0]` (or of `argv[1]` under an interpreter such
//! as `node` or `python3`) names one (`claude`, `codex`, `gemini`, `aider`, `cursor`, `code`, ...),
//! or its script path holds the agent's npm package (`@anthropic-ai/claude-code`, `@openai/codex`,
//! `@google/gemini-cli`). Only the command's name, the process id, the parent id and the working
//! directory are read; the rest of the command line (which may hold a prompt) is never kept.
//! Elsewhere than Linux the table is empty.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::agents::{Sighting, Source, inside};

/// Interpreters whose first argument is the program.
const INTERPRETERS: [&str; 6] = ["node", "bun", "deno", "python", "python3", "uv"];

/// Program names of agents and editors: (base name, agent kind).
const PROGRAMS: [(&str, &str); 14] = [
    ("claude", "claude-code"),
    ("codex", "codex"),
    ("gemini", "gemini-cli"),
    ("aider", "aider"),
    ("cursor", "cursor"),
    ("cursor-agent", "cursor"),
    ("code", "vscode"),
    ("code-insiders", "vscode"),
    ("codium", "vscode"),
    ("windsurf", "windsurf"),
    ("opencode", "opencode"),
    ("goose", "goose"),
    ("qwen", "qwen-code"),
    ("amp", "amp"),
];

/// npm packages whose scripts are agents.
const PACKAGES: [(&str, &str); 3] =
    [("@anthropic-ai/claude-code", "claude-code"), ("@openai/codex", "codex"), ("@google/gemini-cli", "gemini-cli")];

/// One process as far as detection needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Process {
    /// Parent process id.
    pub ppid: u32,
    /// Agent kind, when its command names one.
    pub agent: Option<&'static str>,
    /// Working directory, for agents only (read lazily).
    pub cwd: Option<PathBuf>,
}

/// The process table.
#[derive(Debug, Default)]
pub(super) struct Table {
    processes: HashMap<u32, Process>,
}

impl Table {
    /// Reads every process under `proc_root` (`/proc`); processes that vanish or cannot be read are
    /// skipped.
    pub(super) fn read(proc_root: &Path) -> Self {
        let mut processes = HashMap::new();
        let Ok(dir) = std::fs::read_dir(proc_root) else { return Self { processes } };
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
            let path = entry.path();
            let Some(ppid) = std::fs::read_to_string(path.join("stat")).ok().as_deref().and_then(parent_of) else {
                continue;
            };
            let agent = std::fs::read(path.join("cmdline")).ok().as_deref().and_then(agent_of_cmdline);
            let cwd = agent.and_then(|_| std::fs::read_link(path.join("cwd")).ok());
            processes.insert(pid, Process { ppid, agent, cwd });
        }
        Self { processes }
    }

    /// `pid`'s ancestors, parent first (`pid` itself not included), stopping at pid 1 or a loop.
    pub(super) fn ancestors(&self, pid: u32) -> Vec<u32> {
        let mut chain = Vec::new();
        let mut current = pid;
        while let Some(process) = self.processes.get(&current) {
            let parent = process.ppid;
            if parent == 0 || chain.contains(&parent) || parent == pid {
                break;
            }
            chain.push(parent);
            current = parent;
        }
        chain
    }

    /// Whether `pid` is in the table (alive when it was read).
    pub(super) fn alive(&self, pid: u32) -> bool {
        self.processes.contains_key(&pid)
    }
}

/// Agent processes whose working directory lies inside `root`, our own excluded.
pub(super) fn sightings(table: &Table, root: &Path, own_pid: u32, branch: Option<&str>) -> Vec<Sighting> {
    let mut found: Vec<Sighting> = table
        .processes
        .iter()
        .filter(|(pid, _)| **pid != own_pid)
        .filter_map(|(pid, process)| {
            let agent = process.agent?;
            let cwd = process.cwd.as_ref()?;
            inside(root, cwd).then(|| Sighting {
                agent: agent.to_owned(),
                source: Some(Source::Process),
                branch: branch.map(str::to_owned),
                pid: Some(*pid),
                alive: true,
                ..Sighting::default()
            })
        })
        .collect();
    // A helper child with the same command as its parent (e.g. node workers) is the same agent.
    let pids: Vec<(u32, String)> = found.iter().filter_map(|s| s.pid.map(|pid| (pid, s.agent.clone()))).collect();
    found.retain(|sighting| {
        let Some(pid) = sighting.pid else { return true };
        let parent = table.processes.get(&pid).map(|process| process.ppid);
        !pids.iter().any(|(other, agent)| Some(*other) == parent && *agent == sighting.agent)
    });
    found.sort_by_key(|sighting| sighting.pid);
    found
}

/// The parent pid from `/proc/<pid>/stat` (`pid (comm) state ppid ...`; `comm` may hold spaces and
/// parentheses).
fn parent_of(stat: &str) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// The agent a NUL-separated command line names, if any.
pub(super) fn agent_of_cmdline(cmdline: &[u8]) -> Option<&'static str> {
    let mut args = cmdline.split(|&byte| byte == 0).filter(|arg| !arg.is_empty()).map(String::from_utf8_lossy);
    let first = args.next()?;
    let program = program_name(&first);
    if INTERPRETERS.iter().any(|interpreter| program == *interpreter || program.starts_with("python3.")) {
        let script = args.find(|arg| !arg.starts_with('-'))?;
        if let Some((_, agent)) = PACKAGES.iter().find(|(package, _)| script.contains(package)) {
            return Some(agent);
        }
        return known(&program_name(&script));
    }
    known(&program)
}

fn known(program: &str) -> Option<&'static str> {
    PROGRAMS.iter().find(|(name, _)| program == *name).map(|(_, agent)| *agent)
}

/// The base name of a program path, lower-cased, without `.js`, `.mjs`, `.cjs`, `.exe` or `.py`.
fn program_name(path: &str) -> String {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path).to_ascii_lowercase();
    for suffix in [".js", ".mjs", ".cjs", ".exe", ".py"] {
        if let Some(stripped) = base.strip_suffix(suffix) {
            return stripped.to_owned();
        }
    }
    base
}
