//! Which tools `tools/list` shows, and how their names are spelled.
//!
//! Names. Every tool has a dotted name (`repo.brief`, `operation.preview.branchDelete`); hosts that hand tool
//! definitions to a model API refuse dots (names must match `^[a-zA-Z0-9_-]{1,64}$`), so the listed name is the
//! dotted one with every `.` written `_` (`repo_brief`, `operation_preview_branchDelete`). No dotted name holds an
//! `_`, so the rule maps back one to one. `tools/call` accepts either spelling. `FLUXGIT_MCP_TOOL_NAMES=dotted`
//! lists the dotted names instead (`underscore`, the default, or unset: the underscore names). Every place that
//! names a tool (the envelope's `tool`, hints, `nextAction`, messages) uses the listed spelling, which is fixed
//! for the process when it starts ([`set_spelling`]).
//!
//! Listing. A tool is listed when it can answer in this configuration and the user chose it. Without a configured
//! gateway the write proposals, `operation.cancel`, `operation.status` and the gateway-only reads are not listed
//! (a call still answers 10003 or 10001 with the hint). `FLUXGIT_MCP_TOOLSETS` (a comma list of [`TOOLSETS`]
//! names) and `FLUXGIT_MCP_TOOLS` (a comma list of tool names, either spelling) narrow the listing: a tool is
//! listed when its toolset or its own name is chosen; with neither variable set, every toolset is. An unknown
//! toolset or tool name stops start-up with an error that names it. Narrowing only changes the listing: a call to
//! a tool that is not listed still answers, as for a client written before the narrowing.

use std::borrow::Cow;
use std::sync::OnceLock;

pub use fluxgit_engine::Spelling;

/// Variable that picks the listed spelling: `underscore` (default) or `dotted`.
pub const TOOL_NAMES_VAR: &str = "FLUXGIT_MCP_TOOL_NAMES";
/// Variable that lists the toolsets to list, comma-separated (default: all).
pub const TOOLSETS_VAR: &str = "FLUXGIT_MCP_TOOLSETS";
/// Variable that lists tools to list by exact name (either spelling), comma-separated.
pub const TOOLS_VAR: &str = "FLUXGIT_MCP_TOOLS";

/// The toolsets, each a name, what it is for, and its tools by dotted name. Every tool is in exactly one.
pub const TOOLSETS: &[Toolset] = &[
    Toolset {
        name: "core",
        about: "the repository's state and history: brief, status, refs, history, reflog, changes, commits, diffs",
        tools: &[
            "repo.brief",
            "repo.scope",
            "repo.status",
            "repo.refs",
            "repo.branchStack",
            "repo.history",
            "repo.reflog",
            "commit.details",
            "worktree.changes",
            "worktree.list",
            "submodule.status",
            "diff.text",
        ],
    },
    Toolset {
        name: "conflicts",
        about: "conflicts in progress and predicted",
        tools: &["conflict.read", "repo.conflictPreflight", "repo.collisions"],
    },
    Toolset { name: "semantic", about: "symbol-level diffs", tools: &["diff.semantic", "diff.semanticFallbacks"] },
    Toolset { name: "files", about: "file content and blame at a revision", tools: &["file.read", "file.blame"] },
    Toolset { name: "search", about: "the history index", tools: &["repo.search"] },
    Toolset { name: "fleet", about: "many repositories at once", tools: &["fleet.digest", "fleet.radar"] },
    Toolset { name: "agents", about: "other coding agents working in the repository", tools: &["agents.presence"] },
    Toolset {
        name: "safety",
        about: "the gateway's timeline and restore points (listed only with a gateway)",
        tools: &[
            "safety.timeline",
            "safety.eventDetails",
            "flux.restorePoints",
            "flux.latestRestorePoint",
            "flux.restorePointDetails",
        ],
    },
    Toolset {
        name: "write",
        about: "write proposals a person approves, their status and cancel (listed only with a gateway)",
        tools: &[
            "operation.preview.merge",
            "operation.preview.rebase",
            "operation.preview.discard",
            "operation.preview.reset",
            "operation.preview.patch",
            "operation.preview.plan",
            "operation.preview.worktree",
            "operation.preview.commit",
            "operation.preview.push",
            "operation.preview.branch",
            "operation.preview.branchDelete",
            "operation.preview.submodulePointer",
            "operation.preview.worktreeRemove",
            "operation.status",
            "operation.cancel",
        ],
    },
];

/// A named group of tools for [`TOOLSETS_VAR`].
#[derive(Debug, Clone, Copy)]
pub struct Toolset {
    /// The name users write, e.g. `core`.
    pub name: &'static str,
    /// What the group is for, in a few words.
    pub about: &'static str,
    /// Its tools, by dotted name.
    pub tools: &'static [&'static str],
}

/// The toolset that holds `tool` (dotted name).
pub fn toolset_of(tool: &str) -> Option<&'static Toolset> {
    TOOLSETS.iter().find(|toolset| toolset.tools.contains(&tool))
}

/// Whether `tool` (dotted name) answers only through a configured gateway: the write proposals, their status and
/// cancel, and the gateway-only reads.
pub fn needs_gateway(tool: &str) -> bool {
    matches!(toolset_of(tool).map(|toolset| toolset.name), Some("write" | "safety"))
}

static SPELLING: OnceLock<Spelling> = OnceLock::new();

/// Fixes the listed spelling for this process; a later call keeps the first spelling (and returns `false`).
pub fn set_spelling(spelling: Spelling) -> bool {
    SPELLING.set(spelling).is_ok()
}

/// The listed spelling of this process ([`Spelling::Underscore`] unless [`set_spelling`] chose another).
pub fn spelling() -> Spelling {
    SPELLING.get().copied().unwrap_or_default()
}

/// `tool` (dotted) in `spelling`.
pub fn spelled(tool: &'static str, spelling: Spelling) -> Cow<'static, str> {
    match spelling {
        Spelling::Dotted => Cow::Borrowed(tool),
        Spelling::Underscore => Cow::Owned(tool.replace('.', "_")),
    }
}

/// `tool` (dotted) as this process lists it.
pub fn listed(tool: &'static str) -> Cow<'static, str> {
    spelled(tool, spelling())
}

/// Whether `given` names the tool `dotted` in either spelling.
pub fn names(dotted: &str, given: &str) -> bool {
    dotted.len() == given.len()
        && dotted.bytes().zip(given.bytes()).all(|(ours, theirs)| ours == theirs || (ours == b'.' && theirs == b'_'))
}

/// `text` with every tool name (and the family `operation.preview.*`) written in `spelling`, whichever spelling it
/// was written in: descriptions, hints and messages are written once and follow the listing.
pub fn respell(text: &str, spelling: Spelling) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    let all = TOOLSETS.iter().flat_map(|toolset| toolset.tools.iter().copied()).chain(["operation.preview."]);
    for dotted in all {
        let underscore = dotted.replace('.', "_");
        let (from, to) = match spelling {
            Spelling::Underscore => (dotted, underscore.as_str()),
            Spelling::Dotted => (underscore.as_str(), dotted),
        };
        if out.contains(from) {
            out = Cow::Owned(out.replace(from, to));
        }
    }
    out
}

/// What the user chose to list, read once at start-up.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    /// The listed spelling.
    pub spelling: Spelling,
    /// Chosen toolsets by name; `None`: every toolset (neither variable set).
    pub toolsets: Option<Vec<&'static str>>,
    /// Tools chosen by name (dotted), besides the toolsets'.
    pub tools: Vec<&'static str>,
}

/// A listing variable that cannot be served with; the server refuses to start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    /// [`TOOL_NAMES_VAR`] is neither `underscore` nor `dotted`.
    #[error("{TOOL_NAMES_VAR} must be `underscore` or `dotted`, got {0:?}")]
    Spelling(String),
    /// [`TOOLSETS_VAR`] names no toolset.
    #[error("{TOOLSETS_VAR} names an unknown toolset {name:?}; toolsets: {known}")]
    UnknownToolset {
        /// The name as given.
        name: String,
        /// The known toolsets, comma-separated.
        known: String,
    },
    /// [`TOOLS_VAR`] names no tool.
    #[error("{TOOLS_VAR} names an unknown tool {0:?}; `fluxgit-mcp-sidecar doctor` lists the tools")]
    UnknownTool(String),
}

impl Selection {
    /// Reads the three variables' values (`None`: unset).
    ///
    /// # Errors
    /// [`SelectionError`] for a spelling that is neither `underscore` nor `dotted`, or an unknown toolset or tool
    /// name.
    pub fn parse(
        tool_names: Option<&str>,
        toolsets: Option<&str>,
        tools: Option<&str>,
    ) -> Result<Self, SelectionError> {
        let spelling = match tool_names.map(str::trim) {
            None | Some("underscore") => Spelling::Underscore,
            Some("dotted") => Spelling::Dotted,
            Some(other) => return Err(SelectionError::Spelling(other.to_owned())),
        };
        let items = |value: Option<&str>| -> Vec<String> {
            value
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let mut chosen_sets = Vec::new();
        for name in items(toolsets) {
            let Some(toolset) = TOOLSETS.iter().find(|toolset| toolset.name == name) else {
                let known = TOOLSETS.iter().map(|toolset| toolset.name).collect::<Vec<_>>().join(", ");
                return Err(SelectionError::UnknownToolset { name, known });
            };
            if !chosen_sets.contains(&toolset.name) {
                chosen_sets.push(toolset.name);
            }
        }
        let mut chosen_tools = Vec::new();
        for name in items(tools) {
            let Some(tool) = TOOLSETS.iter().flat_map(|toolset| toolset.tools).find(|tool| names(tool, &name)) else {
                return Err(SelectionError::UnknownTool(name));
            };
            if !chosen_tools.contains(tool) {
                chosen_tools.push(*tool);
            }
        }
        let narrowed = toolsets.is_some_and(|value| !value.trim().is_empty()) || !chosen_tools.is_empty();
        Ok(Self { spelling, toolsets: narrowed.then_some(chosen_sets), tools: chosen_tools })
    }

    /// Whether `tool` (dotted) is listed: chosen, and answerable (`gateway`: a gateway is configured).
    pub fn lists(&self, tool: &str, gateway: bool) -> bool {
        if needs_gateway(tool) && !gateway {
            return false;
        }
        let in_set = match &self.toolsets {
            None => true,
            Some(sets) => toolset_of(tool).is_some_and(|toolset| sets.contains(&toolset.name)),
        };
        in_set || self.tools.contains(&tool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_tool_is_in_exactly_one_toolset_and_every_toolset_tool_is_registered() {
        let registry = crate::tools::registry().expect("the registry builds");
        let registered: Vec<&str> = registry.tools().map(|tool| tool.definition().name).collect();
        for name in &registered {
            let holders = TOOLSETS.iter().filter(|toolset| toolset.tools.contains(name)).count();
            assert_eq!(holders, 1, "{name} is in {holders} toolsets");
        }
        for tool in TOOLSETS.iter().flat_map(|toolset| toolset.tools) {
            assert!(registered.contains(tool), "toolset tool {tool} is not registered");
        }
    }

    #[test]
    fn every_listed_name_fits_a_model_api_with_a_host_prefix() {
        let registry = crate::tools::registry().expect("the registry builds");
        let fits = |name: &str| {
            (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        };
        for tool in registry.tools() {
            let dotted = tool.definition().name;
            assert!(!dotted.contains('_'), "{dotted}: a dotted name with `_` would not map back");
            let listed = spelled(dotted, Spelling::Underscore);
            assert!(fits(&listed), "{listed}");
            assert!(fits(&format!("mcp__fluxgit__{listed}")), "{listed} with the host prefix");
            assert!(names(dotted, &listed) && names(dotted, dotted), "{dotted} answers to both spellings");
        }
    }

    #[test]
    fn the_engine_names_only_registered_tools() {
        let registry = crate::tools::registry().expect("the registry builds");
        for name in fluxgit_engine::ToolName::ALL {
            assert!(registry.lookup(name.spelled(Spelling::Dotted)).is_some(), "{name:?}");
            assert!(registry.lookup(name.spelled(Spelling::Underscore)).is_some(), "{name:?}");
        }
    }

    #[test]
    fn selections_read_like_their_variables() {
        let all = Selection::parse(None, None, None).expect("defaults");
        assert!(all.lists("repo.brief", false) && all.lists("file.blame", false));
        assert!(!all.lists("operation.preview.merge", false) && !all.lists("flux.restorePoints", false));
        assert!(all.lists("operation.preview.merge", true) && all.lists("operation.status", true));

        let some = Selection::parse(Some("dotted"), Some("core, files"), Some("repo_search")).expect("valid");
        assert_eq!(some.spelling, Spelling::Dotted);
        assert!(some.lists("repo.brief", true) && some.lists("file.read", true) && some.lists("repo.search", true));
        assert!(!some.lists("conflict.read", true) && !some.lists("fleet.radar", true));

        let exact = Selection::parse(None, None, Some("repo.brief")).expect("valid");
        assert!(exact.lists("repo.brief", false) && !exact.lists("repo.status", false));

        let error = Selection::parse(None, Some("core,nope"), None).expect_err("unknown toolset");
        assert!(error.to_string().contains("\"nope\""), "{error}");
        let error = Selection::parse(None, None, Some("repo_brieff")).expect_err("unknown tool");
        assert!(error.to_string().contains("\"repo_brieff\""), "{error}");
        assert!(Selection::parse(Some("camel"), None, None).is_err());
    }

    #[test]
    fn respelling_rewrites_underscore_names_only_when_dotted() {
        let text = "Poll operation_status; see repo_brief and operation_preview_branchDelete.";
        let dotted = "Poll operation.status; see repo.brief and operation.preview.branchDelete.";
        assert_eq!(respell(text, Spelling::Underscore), text);
        assert_eq!(respell(text, Spelling::Dotted), dotted);
        assert_eq!(respell(dotted, Spelling::Underscore), text);
        assert_eq!(respell("operation.preview.* tools", Spelling::Underscore), "operation_preview_* tools");
    }
}
