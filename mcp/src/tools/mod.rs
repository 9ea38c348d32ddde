//! The tool registry: definitions (schemas, annotations) and handlers.
//!
//! Each tool family lives in its own module; a handler maps validated arguments to one engine call and wraps the
//! result in the envelope of SPEC §4.2.

use fluxgit_engine::facets::Facet;
use serde_json::{Map, Value};

/// What a tool call needs besides its arguments.
pub struct CallContext<'a> {
    /// The engine every read goes through.
    pub engine: &'a fluxgit_engine::Engine,
    /// The sanitised, self-declared client name (SPEC §4.1): attribution, never identity.
    pub client_name: &'a str,
    /// The write-proposal bridge to the approval gateway ([`crate::bridge::Bridge::NONE`] when none is configured).
    pub bridge: &'a crate::bridge::Bridge,
    /// The call's cancellation flag (`notifications/cancelled`), set on every repository [`CallContext::resolve`]
    /// opens so that the engine's long reads stop when it is triggered.
    pub interrupt: &'a fluxgit_engine::Interrupt,
}

impl CallContext<'_> {
    /// [`fluxgit_engine::Engine::resolve`], read under this call's interrupt.
    ///
    /// # Errors
    /// As [`fluxgit_engine::Engine::resolve`].
    pub fn resolve(&self, repo_path: &str) -> fluxgit_engine::Result<fluxgit_engine::Repo> {
        self.engine.resolve(repo_path).map(|repo| repo.with_interrupt(self.interrupt.clone()))
    }
}

/// A tool as advertised in `tools/list`.
#[derive(Debug, Clone)]
pub struct ToolDefinition {
    /// The tool name, e.g. `repo.brief`.
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

/// A successful or product-error tool result, before protocol framing.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    /// The compact JSON of the envelope: exactly what goes into `content[0].text` and what budgets are measured on.
    pub text: String,
    /// The same envelope as a value, for `structuredContent`.
    pub structured: Value,
    /// `true` for product errors (100xx), which are tool results, not JSON-RPC errors (SPEC §4.3).
    pub is_error: bool,
}

/// A failure that must become a JSON-RPC error (SPEC §4.3), e.g. invalid params with `data.reason`.
#[derive(Debug, Clone)]
pub struct ProtocolError {
    /// JSON-RPC error code (-32602 for invalid params).
    pub code: i32,
    /// Human-readable message.
    pub message: String,
    /// Structured detail, e.g. `{"reason": "outside_allowed_roots"}`.
    pub data: Option<Value>,
}

/// One tool: its definition and its handler.
pub trait Tool: Send + Sync {
    /// The definition advertised in `tools/list`.
    fn definition(&self) -> &ToolDefinition;
    /// Runs the tool on arguments already validated against `definition().input_schema`.
    fn call(&self, ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError>;
}

pub mod agents;
pub mod conflict;
pub mod diff;
pub mod docs;
pub mod file;
pub mod fleet;
pub mod gateway;
pub mod history;
pub mod operation;
/// A tool made of its definition and the function that handles a call: the shape of every local read tool.
pub struct FnTool {
    pub(crate) definition: ToolDefinition,
    pub(crate) handler: fn(&CallContext<'_>, &Map<String, Value>) -> Result<ToolOutput, ProtocolError>,
}

impl Tool for FnTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Runs the handler, or serves its rendered answer from the engine's cache when the tool's answers are cached
    /// ([`cached_reads`]) and nothing they read changed since the same arguments were answered.
    fn call(&self, ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
        let name = self.definition.name;
        let repo = match (cached_reads(name), arguments.get("repoPath").and_then(Value::as_str)) {
            (Some(reads), Some(path)) => ctx.resolve(path).ok().map(|repo| (reads, repo)),
            _ => None,
        };
        let Some((reads, repo)) = repo else {
            return (self.handler)(ctx, arguments);
        };
        // Everything the answer depends on besides the repository's state: the tool, the path the caller gave
        // (the envelope names it), the arguments and, for the brief, the hour (its hints look at the branch
        // movements of the last days) and, for file.blame, the content of its ignore-revs files (one may lie outside
        // the watched repository). Product errors and protocol errors are never kept.
        let hour = if name == "repo.brief" { crate::config::now_epoch_secs() / 3600 } else { 0 };
        let outside = if name == "file.blame" { ctx.engine.file_blame_key(&repo) } else { String::new() };
        let variant = format!(
            "{name}\0{}\0{}\0{hour}\0{outside}",
            repo.location.requested.display(),
            Value::Object(arguments.clone())
        );
        let outcome = ctx.engine.answer(
            &repo,
            &variant,
            reads,
            |output: &ToolOutput| output.text.len() * 3,
            || match (self.handler)(ctx, arguments) {
                Ok(output) if !output.is_error => Ok(output),
                other => Err(other),
            },
        );
        outcome.or_else(|uncached| uncached)
    }
}

/// Tools whose rendered answers the engine keeps until a facet they read changes: `Some(Some(facets))`, or
/// `Some(None)` when any change of the repository invalidates them. `None`: never cached (`repo.scope` depends on
/// the clock, `worktree.list` on directories outside the repository's trees, the rest on the gateway).
fn cached_reads(tool: &str) -> Option<Option<&'static [Facet]>> {
    match tool {
        "repo.brief" => Some(Some(fluxgit_engine::brief::READS)),
        "repo.status" => Some(Some(fluxgit_engine::status::READS)),
        "repo.refs" => Some(Some(fluxgit_engine::refs::READS)),
        "repo.history" | "repo.reflog" | "repo.branchStack" | "commit.details" | "diff.text" | "worktree.changes"
        | "submodule.status" | "conflict.read" | "file.read" | "file.blame" => Some(None),
        _ => None,
    }
}

mod registry;
pub mod repo;
pub mod schema;
pub mod scope;
pub mod search;
pub mod semantic;
pub mod topology;

pub use registry::{ArgumentsError, Registry, RegistryError, SchemaViolation};

/// Builds the registry of every working tool, in `tools/list` order (`repo.brief` first, SPEC §4.1).
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
