//! The [`Registry`]: the ordered list of tools, with their input schemas compiled once, on a tool's first call.
//!
//! `tools/list` shows tools in registration order (design.md#transport: deterministic, `repo.brief` first), and `tools/call`
//! validates arguments against exactly the advertised `inputSchema` before a handler runs. Compiling every schema at
//! start-up cost about as many instructions as a first `repo.brief` itself (issue 38), so each is compiled when its
//! tool is first called; [`Registry::compile_all`] compiles them all at once (the tests hold every shipped schema to
//! it).

use serde_json::Value;

use crate::tools::Tool;
use crate::tools::listing::{
    self, Selection, Spelling, TOOL_NAMES_VAR, TOOLS_VAR, TOOLSETS, TOOLSETS_VAR, needs_gateway, spelled, toolset_of,
};

/// Most schema violations reported for one call; the rest are counted in the message, not listed.
const MAX_REPORTED_VIOLATIONS: usize = 20;

/// Longest string instance quoted verbatim in a violation message; longer values are masked as `value`.
const MAX_QUOTED_STRING_CHARS: usize = 64;

/// The tools this server offers, in `tools/list` order.
pub struct Registry {
    entries: Vec<Entry>,
    /// What `tools/list` shows: the user's selection and whether a gateway is configured; `None` lists every tool.
    listing: Option<(Selection, bool)>,
}

struct Entry {
    tool: Box<dyn Tool>,
    /// The compiled input schema, or why it does not compile; empty until the tool's first call.
    validator: std::sync::OnceLock<Result<jsonschema::Validator, String>>,
}

impl Entry {
    fn validator(&self) -> &Result<jsonschema::Validator, String> {
        self.validator.get_or_init(|| {
            jsonschema::validator_for(&self.tool.definition().input_schema).map_err(|error| error.to_string())
        })
    }
}

/// Why a tool could not be registered. These are programming errors in a tool definition, reported at start-up.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Two tools share a name.
    #[error("tool {name:?} is registered twice")]
    Duplicate {
        /// The repeated tool name.
        name: String,
    },
    /// The tool name is empty.
    #[error("a tool has an empty name")]
    EmptyName,
    /// The `inputSchema` or `outputSchema` is not a JSON Schema object with `"type": "object"` (MCP requires
    /// both to describe objects), or the input schema does not compile.
    #[error("tool {name:?} has an invalid {which}: {message}")]
    InvalidSchema {
        /// The tool name.
        name: String,
        /// `inputSchema` or `outputSchema`.
        which: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

/// Why `tools/call` arguments were refused; both become JSON-RPC `-32602` (design.md#errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgumentsError {
    /// No tool has this name.
    UnknownTool,
    /// The arguments do not satisfy the tool's `inputSchema`: at most 20 violations, in schema evaluation order,
    /// plus the number of further ones left out.
    Invalid {
        /// The violations reported.
        violations: Vec<SchemaViolation>,
        /// How many more violations there were beyond `violations`.
        omitted: usize,
    },
}

/// One place where arguments fail the input schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolation {
    /// JSON Pointer into the arguments object, e.g. `/maxTokens` (empty for the object itself).
    pub instance_path: String,
    /// What is wrong, e.g. `300 is greater than the maximum of 200`. Long or structured values are masked as `value`
    /// so a 4 MiB patch is never echoed back.
    pub message: String,
}

impl Registry {
    /// An empty registry; `tools/list` then answers `{"tools": []}`.
    pub fn new() -> Self {
        Self { entries: Vec::new(), listing: None }
    }

    /// Appends `tool` (it is listed after the tools registered before it). Its input schema is compiled on its first
    /// call (or by [`Registry::compile_all`]).
    ///
    /// # Errors
    /// [`RegistryError`] for an empty or duplicate name, or a schema that is not an object schema.
    pub fn register(&mut self, tool: Box<dyn Tool>) -> Result<(), RegistryError> {
        let definition = tool.definition();
        let name = definition.name;
        if name.is_empty() {
            return Err(RegistryError::EmptyName);
        }
        if name.contains('_') {
            return Err(RegistryError::InvalidSchema {
                name: name.to_owned(),
                which: "name",
                message: "a dotted tool name may not hold `_` (the listed spelling writes `.` as `_`)".to_owned(),
            });
        }
        if self.lookup(name).is_some() {
            return Err(RegistryError::Duplicate { name: name.to_owned() });
        }
        check_object_schema(name, "inputSchema", &definition.input_schema)?;
        check_object_schema(name, "outputSchema", &definition.output_schema)?;
        self.entries.push(Entry { tool, validator: std::sync::OnceLock::new() });
        Ok(())
    }

    /// Compiles every registered tool's input schema now (each is otherwise compiled on its tool's first call).
    ///
    /// # Errors
    /// [`RegistryError::InvalidSchema`] for the first schema that does not compile.
    pub fn compile_all(&self) -> Result<(), RegistryError> {
        for entry in &self.entries {
            if let Err(message) = entry.validator() {
                let name = entry.tool.definition().name.to_owned();
                return Err(RegistryError::InvalidSchema { name, which: "inputSchema", message: message.clone() });
            }
        }
        Ok(())
    }

    /// Lists only what `selection` chose and can answer (`gateway`: a gateway is configured); see
    /// [`crate::tools::listing`]. Calls still reach every registered tool.
    pub fn restrict(&mut self, selection: Selection, gateway: bool) {
        self.listing = Some((selection, gateway));
    }

    /// The tools `tools/list` shows, in registration order: every tool unless [`Registry::restrict`] narrowed it.
    pub fn listed(&self) -> impl Iterator<Item = &dyn Tool> + '_ {
        self.tools().filter(|tool| self.is_listed(tool.definition().name))
    }

    /// Whether `tools/list` shows the tool with dotted name `name`.
    pub fn is_listed(&self, name: &str) -> bool {
        self.listing.as_ref().is_none_or(|(selection, gateway)| selection.lists(name, *gateway))
    }

    /// The tool called `name` (either spelling, see [`crate::tools::listing`]), if registered.
    pub fn lookup(&self, name: &str) -> Option<&dyn Tool> {
        self.entry(name).map(|entry| entry.tool.as_ref())
    }

    /// Checks `arguments` against the input schema of tool `name` (compiled on the tool's first call).
    ///
    /// # Errors
    /// [`ArgumentsError::UnknownTool`] or [`ArgumentsError::Invalid`] with the violations; a schema that does not
    /// compile (a defect [`Registry::compile_all`] finds first) refuses every call with one violation saying so.
    pub fn validate(&self, name: &str, arguments: &Value) -> Result<(), ArgumentsError> {
        let entry = self.entry(name).ok_or(ArgumentsError::UnknownTool)?;
        let validator = match entry.validator() {
            Ok(validator) => validator,
            Err(message) => {
                let message = format!("the tool's inputSchema does not compile: {message}");
                return Err(ArgumentsError::Invalid {
                    violations: vec![SchemaViolation { instance_path: String::new(), message }],
                    omitted: 0,
                });
            }
        };
        let mut violations = Vec::new();
        let mut omitted = 0;
        for error in validator.iter_errors(arguments) {
            if violations.len() == MAX_REPORTED_VIOLATIONS {
                omitted += 1;
                continue;
            }
            violations.push(SchemaViolation {
                instance_path: error.instance_path().as_str().to_owned(),
                message: violation_message(&error),
            });
        }
        if violations.is_empty() { Ok(()) } else { Err(ArgumentsError::Invalid { violations, omitted }) }
    }

    /// The tools in registration (= `tools/list`) order.
    pub fn tools(&self) -> impl ExactSizeIterator<Item = &dyn Tool> + '_ {
        self.entries.iter().map(|entry| entry.tool.as_ref())
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|entry| listing::names(entry.tool.definition().name, name))
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools().map(|tool| tool.definition().name)).finish()
    }
}

fn check_object_schema(name: &str, which: &'static str, schema: &Value) -> Result<(), RegistryError> {
    if schema.get("type").and_then(Value::as_str) == Some("object") {
        return Ok(());
    }
    Err(RegistryError::InvalidSchema {
        name: name.to_owned(),
        which,
        message: "must be a JSON object with \"type\": \"object\"".to_owned(),
    })
}

/// The message for one violation: verbatim for small scalars, masked for long strings, arrays and objects.
fn violation_message(error: &jsonschema::ValidationError<'_>) -> String {
    if let jsonschema::error::ValidationErrorKind::Pattern { pattern } = error.kind()
        && pattern == crate::tools::schema::REPO_PATH_PATTERN
    {
        return match error.instance().as_ref() {
            Value::String(text) if text.chars().count() <= MAX_QUOTED_STRING_CHARS => {
                format!("{text:?} must be an absolute path")
            }
            _ => "must be an absolute path".to_owned(),
        };
    }
    let small_scalar = match error.instance().as_ref() {
        Value::Null | Value::Bool(_) | Value::Number(_) => true,
        Value::String(text) => text.chars().count() <= MAX_QUOTED_STRING_CHARS,
        Value::Array(_) | Value::Object(_) => false,
    };
    if small_scalar { error.to_string() } else { error.masked().to_string() }
}

/// `doctor`'s tools section: what is listed, what is not and why, and how to list more.
pub fn doctor_report(registry: &Registry, selection: &Selection, gateway: bool) -> String {
    use std::fmt::Write as _;

    let spelling_name = match selection.spelling {
        Spelling::Underscore => "underscore",
        Spelling::Dotted => "dotted",
    };
    let listed: Vec<_> = registry.tools().filter(|tool| selection.lists(tool.definition().name, gateway)).collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "tools: {} of {} listed ({TOOL_NAMES_VAR}: {spelling_name} names; a call answers to either spelling)",
        listed.len(),
        registry.len()
    );
    let mut hidden_for_gateway = 0;
    let mut hidden_by_choice = 0;
    for tool in registry.tools() {
        let definition = tool.definition();
        let kind = if definition.read_only { "read" } else { "proposal" };
        let set = toolset_of(definition.name).map_or("-", |toolset| toolset.name);
        let state = if selection.lists(definition.name, gateway) {
            ""
        } else if needs_gateway(definition.name) && !gateway {
            hidden_for_gateway += 1;
            " [not listed: needs a gateway]"
        } else {
            hidden_by_choice += 1;
            " [not listed: toolset not chosen]"
        };
        let name = spelled(definition.name, selection.spelling);
        let _ = writeln!(out, "  {name} ({kind}, {set}): {}{state}", definition.title);
    }
    if hidden_for_gateway > 0 {
        let _ = writeln!(
            out,
            "{hidden_for_gateway} tools need the approval gateway (write proposals, operation status and cancel, \
             restore points, the safety timeline): run fluxgit-gateway and set {} to the address it prints to list \
             them",
            crate::config::GATEWAY_ADDR_VARS[0]
        );
    }
    let sets: Vec<String> = TOOLSETS.iter().map(|toolset| format!("{} ({})", toolset.name, toolset.about)).collect();
    let _ = writeln!(out, "toolsets ({TOOLSETS_VAR}, comma-separated; default all): {}", sets.join("; "));
    if hidden_by_choice > 0 {
        let _ = writeln!(out, "{hidden_by_choice} tools left out by {TOOLSETS_VAR}/{TOOLS_VAR}");
    }
    out
}
