//! The tool registry: definitions (schemas, annotations) and handlers.
//!
//! Each tool family lives in its own module; a handler maps validated arguments to one engine call and wraps the
//! result in the envelope of SPEC §4.2.

use serde_json::{Map, Value};

/// What a tool call needs besides its arguments.
pub struct CallContext<'a> {
    /// The engine every read goes through.
    pub engine: &'a fluxgit_engine::Engine,
    /// The sanitised, self-declared client name (SPEC §4.1): attribution, never identity.
    pub client_name: &'a str,
    /// The write-proposal bridge to the approval gateway ([`crate::bridge::Bridge::NONE`] when none is configured).
    pub bridge: &'a crate::bridge::Bridge,
    /// The call's validated arguments, as the client sent them (the key of the engine's answer cache).
    pub arguments: &'a Map<String, Value>,
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

pub mod conflict;
pub mod diff;
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

    fn call(&self, ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
        (self.handler)(ctx, arguments)
    }
}

mod registry;
pub mod repo;
pub mod schema;
pub mod scope;
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
    registry.register(Box::new(operation::status_tool()))?;
    registry.register(Box::new(semantic::semantic()))?;
    registry.register(Box::new(semantic::semantic_fallbacks()))?;
    registry.register(Box::new(conflict::preflight()))?;
    for tool in gateway::tools() {
        registry.register(Box::new(tool))?;
    }
    for preview in operation::previews() {
        registry.register(Box::new(preview))?;
    }
    registry.register(Box::new(operation::cancel_tool()))?;
    Ok(registry)
}
