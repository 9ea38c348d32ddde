//! Text rendering of `agents.presence`.

use super::{Lines, Options, esc};
use crate::agents::{Agent, Report, Source, State};
use crate::budget::Budgeted;

/// `agents.presence`: a count line (`2 other agents` or `no other agents`), then one line per agent
/// (`working claude-code on feature/a last Edit pid 42 at 1764500000000 via session-store,process`,
/// with `(likely caller)` on the record that is probably the caller and `mcp <client>` for a
/// sidecar it runs), the files it touched on an indented `files:` line, `... N more agents` when
/// the budget cut the list, and one `skipped:` line per store that could not be read. Times are
/// Unix milliseconds, as in the JSON.
pub fn agents_presence(result: &Budgeted<Report>, options: &Options) -> String {
    let report = &result.data;
    let mut out = Lines::default();
    match report.agent_count {
        0 => out.line("no other agents"),
        1 => out.line("1 other agent"),
        count => out.line(format!("{count} other agents")),
    }
    for agent in &report.agents {
        out.line(agent_line(agent));
        if !agent.files.is_empty() {
            let files: Vec<String> = agent.files.iter().map(|file| options.path(file)).collect();
            out.line(format!("  files: {}", files.join(", ")));
        }
    }
    out.more(&result.omitted, "agents", "agents");
    for diagnostic in &report.diagnostics {
        out.line(format!("skipped: {}", esc(diagnostic)));
    }
    out.finish()
}

fn agent_line(agent: &Agent) -> String {
    let mut line = format!("{} {}", state_name(agent.state), esc(&agent.agent));
    if agent.likely_caller {
        line.push_str(" (likely caller)");
    }
    if let Some(branch) = &agent.branch {
        line.push_str(&format!(" on {}", esc(branch)));
    }
    if let Some(tool) = &agent.last_tool {
        line.push_str(&format!(" last {}", esc(tool)));
    }
    if let Some(client) = &agent.mcp_client {
        line.push_str(&format!(" mcp {}", esc(client)));
    }
    if let Some(pid) = agent.pid {
        line.push_str(&format!(" pid {pid}"));
    }
    if let Some(at) = agent.last_activity_ms {
        line.push_str(&format!(" at {at}"));
    }
    let sources: Vec<&str> = agent.sources.iter().map(|source| source_name(*source)).collect();
    line.push_str(&format!(" via {}", sources.join(",")));
    line
}

/// The JSON names of [`State`].
fn state_name(state: State) -> &'static str {
    match state {
        State::Working => "working",
        State::Open => "open",
        State::Recent => "recent",
    }
}

/// The JSON names of [`Source`].
fn source_name(source: Source) -> &'static str {
    match source {
        Source::Process => "process",
        Source::SessionStore => "session-store",
        Source::RepoFiles => "repo-files",
        Source::Editor => "editor",
        Source::McpPresence => "mcp-presence",
    }
}
