//! The tool registry: definitions (schemas, annotations) and handlers.
//!
//! Each tool family lives in its own module; a handler maps validated arguments to one engine call and wraps the
//! result in the envelope of design.md#envelope.

use fluxgit_engine::facets::Facet;
use serde_json::{Map, Value};

pub use crate::envelope::{ProtocolError, ToolOutput};

/// What a tool call needs besides its arguments.
pub struct CallContext<'a> {
    /// The engine every read goes through.
    pub engine: &'a fluxgit_engine::Engine,
    /// The sanitised, self-declared client name (design.md#transport): attribution, never identity.
    pub client_name: &'a str,
    /// The write-proposal bridge to the approval gateway ([`crate::bridge::Bridge::NONE`] when none is configured).
    pub bridge: &'a crate::bridge::Bridge,
    /// The call's cancellation flag (`notifications/cancelled`), set on every repository [`CallContext::resolve`]
    /// opens so that the engine's long reads stop when it is triggered.
    pub interrupt: &'a fluxgit_engine::Interrupt,
    /// A repository this call already resolved, with the `repoPath` it came from (`None` outside
    /// [`FnTool::call`]): [`CallContext::resolve`] of that same path lends it instead of opening the repository
    /// again.
    pub resolved: Option<(&'a str, &'a fluxgit_engine::Repo)>,
}

impl CallContext<'_> {
    /// [`fluxgit_engine::Engine::resolve`], read under this call's interrupt; the repository already resolved for
    /// `repo_path` in this call ([`CallContext::resolved`]) when there is one, so that one call opens a repository
    /// once (opening is most of a cold first call of the small tools).
    ///
    /// # Errors
    /// As [`fluxgit_engine::Engine::resolve`].
    pub fn resolve(&self, repo_path: &str) -> fluxgit_engine::Result<Resolved<'_>> {
        if let Some((path, repo)) = self.resolved
            && path == repo_path
        {
            return Ok(Resolved::Lent(repo));
        }
        self.engine
            .resolve(repo_path)
            .map(|repo| Resolved::Opened(Box::new(repo.with_interrupt(self.interrupt.clone()))))
    }
}

/// A repository [`CallContext::resolve`] gave: opened for the caller, or lent from the call's earlier resolution.
/// Dereferences to the [`fluxgit_engine::Repo`].
#[derive(Debug)]
pub enum Resolved<'a> {
    /// Resolved and opened by this [`CallContext::resolve`] (boxed: a repository handle is large).
    Opened(Box<fluxgit_engine::Repo>),
    /// The call's repository resolved earlier ([`CallContext::resolved`]).
    Lent(&'a fluxgit_engine::Repo),
}

impl std::ops::Deref for Resolved<'_> {
    type Target = fluxgit_engine::Repo;

    fn deref(&self) -> &fluxgit_engine::Repo {
        match self {
            Resolved::Opened(repo) => repo,
            Resolved::Lent(repo) => repo,
        }
    }
}

/// A tool as advertised in `tools/list`.
#[derive(Debug, Clone)]
pub struct ToolDefinition {
    /// The tool's dotted name, e.g. `repo.brief`; it is listed as [`listing::listed`] spells it (`repo_brief`).
    pub name: &'static str,
    /// Human-readable title.
    pub title: &'static str,
    /// What the tool does and when an agent should call it.
    pub description: &'static str,
    /// JSON Schema of the arguments, with bounds; arguments are validated against exactly this schema.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent` (advertised from 2025-06-18 on).
    pub output_schema: Value,
    /// `true` for read tools (`readOnlyHint: true`), `false` for proposals and cancel.
    pub read_only: bool,
}

/// One tool: its definition and its handler.
pub trait Tool: Send + Sync {
    /// The definition advertised in `tools/list`.
    fn definition(&self) -> &ToolDefinition;
    /// Runs the tool on arguments already validated against `definition().input_schema`.
    fn call(&self, ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError>;
}

pub mod agents;
pub(crate) mod call;
pub mod conflict;
pub mod diff;
pub mod docs;
pub mod file;
pub mod fleet;
pub mod gateway;
pub mod history;
pub mod listing;
pub mod operation;
mod reference;
/// A tool made of its definition and the function that handles a call: the shape of every local read tool.
pub struct FnTool {
    pub(crate) definition: ToolDefinition,
    pub(crate) handler: fn(&CallContext<'_>, &Map<String, Value>) -> Result<ToolOutput, ProtocolError>,
    /// Whether the engine keeps the tool's rendered answers, and until what changes.
    pub(crate) cache: Cache,
}

/// Whether a tool's rendered answers are kept in the engine's answer cache (keyed by the tool, the path the caller
/// gave, the arguments and [`Cache::Kept::also`]) until a change the engine's watcher sees.
#[derive(Clone, Copy)]
pub enum Cache {
    /// Never kept: the answer depends on what no watch of the repository sees (`repo.scope` the clock through its
    /// churn window, `worktree.list` directories outside the repository's trees, the fleet tools many repositories,
    /// `agents.presence` the agents' session stores, `repo.search` its index, the gateway tools the gateway;
    /// `repo.conflictPreflight` computes each prediction afresh).
    Never,
    /// Kept until a change of the repository invalidates it.
    Kept {
        /// The facets the answer reads: a change to another facet keeps it. `None`: any change of the repository
        /// invalidates it.
        reads: Option<&'static [Facet]>,
        /// What else the answer depends on, as part of its key: [`depends_on_nothing_else`], [`the_hour`], or for
        /// `file.blame` the ignore-revs and mailmap files' content ([`file::blame_files`]).
        also: fn(&CallContext<'_>, &fluxgit_engine::Repo) -> String,
    },
}

impl Cache {
    /// Kept until one of the facets in `reads` changes; the answer depends on nothing else.
    pub(crate) const fn until_change_of(reads: &'static [Facet]) -> Self {
        Self::Kept { reads: Some(reads), also: depends_on_nothing_else }
    }

    /// Kept until any change of the repository; the answer depends on nothing else.
    pub(crate) const fn until_any_change() -> Self {
        Self::Kept { reads: None, also: depends_on_nothing_else }
    }
}

/// For [`Cache::Kept::also`]: the answer depends on the repository and the arguments only.
pub(crate) fn depends_on_nothing_else(_: &CallContext<'_>, _: &fluxgit_engine::Repo) -> String {
    String::new()
}

/// For [`Cache::Kept::also`]: the current hour (`repo.brief`'s hints look at the branch movements of the last
/// days), so that a kept answer is at most an hour old.
pub(crate) fn the_hour(_: &CallContext<'_>, _: &fluxgit_engine::Repo) -> String {
    (crate::config::now_epoch_secs() / 3600).to_string()
}

impl Tool for FnTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Runs the handler, or serves its rendered answer from the engine's cache when the tool's answers are kept
    /// ([`FnTool::cache`]) and nothing they depend on changed since the same arguments were answered.
    fn call(&self, ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
        let Cache::Kept { reads, also } = self.cache else {
            return (self.handler)(ctx, arguments);
        };
        let Some((repo_path, repo)) =
            arguments.get("repoPath").and_then(Value::as_str).and_then(|path| Some((path, ctx.resolve(path).ok()?)))
        else {
            return (self.handler)(ctx, arguments);
        };
        // The handler resolves the same path: it is lent this repository instead of opening it a second time.
        let lent = CallContext { resolved: Some((repo_path, &repo)), ..*ctx };
        // Everything the answer depends on besides the repository's state: the tool, the path the caller gave
        // (the envelope names it), the arguments and what the tool's `also` names. Product errors and protocol
        // errors are never kept.
        let variant = format!(
            "{}\0{}\0{}\0{}",
            self.definition.name,
            repo.location.requested.display(),
            Value::Object(arguments.clone()),
            also(ctx, &repo)
        );
        let outcome = ctx.engine.answer(
            &repo,
            &variant,
            reads,
            |output: &ToolOutput| output.text.len() * 3,
            || match (self.handler)(&lent, arguments) {
                Ok(output) if !output.is_error => Ok(output),
                other => Err(other),
            },
        );
        outcome.or_else(|uncached| uncached)
    }
}

mod registry;
pub mod repo;
pub mod schema;
pub mod scope;
pub mod search;
pub mod semantic;
pub mod topology;

pub use registry::{ArgumentsError, Registry, RegistryError, SchemaViolation, doctor_report};

/// Builds the registry of every working tool, in `tools/list` order (`repo.brief` first, design.md#transport).
///
/// The binary serves exactly this registry; it is empty until tools are added here.
///
/// # Errors
/// [`RegistryError`] if a tool definition is inconsistent (a programming error, caught by the tests).
pub fn registry() -> Result<Registry, RegistryError> {
    let mut registry = Registry::new();
    registry.register(Box::new(repo::brief()))?;
    registry.register(Box::new(scope::scope()))?;
    registry.register(Box::new(repo::status()))?;
    registry.register(Box::new(repo::refs()))?;
    registry.register(Box::new(topology::branch_stack()))?;
    registry.register(Box::new(history::history()))?;
    registry.register(Box::new(history::reflog()))?;
    registry.register(Box::new(conflict::read()))?;
    registry.register(Box::new(diff::commit_details()))?;
    registry.register(Box::new(diff::worktree_changes()))?;
    registry.register(Box::new(topology::worktree_list()))?;
    registry.register(Box::new(topology::submodule_status()))?;
    registry.register(Box::new(diff::diff_text()))?;
    registry.register(Box::new(fleet::digest()))?;
    registry.register(Box::new(fleet::radar()))?;
    registry.register(Box::new(operation::status_tool()))?;
    registry.register(Box::new(agents::presence()))?;
    registry.register(Box::new(semantic::semantic()))?;
    registry.register(Box::new(semantic::semantic_fallbacks()))?;
    registry.register(Box::new(conflict::preflight()))?;
    registry.register(Box::new(topology::collisions()))?;
    for tool in gateway::tools() {
        registry.register(Box::new(tool))?;
    }
    registry.register(Box::new(file::read_tool()))?;
    registry.register(Box::new(file::blame_tool()))?;
    registry.register(Box::new(search::search()))?;
    for preview in operation::previews() {
        registry.register(Box::new(preview))?;
    }
    registry.register(Box::new(operation::cancel_tool()))?;
    Ok(registry)
}
