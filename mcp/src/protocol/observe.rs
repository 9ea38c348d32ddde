//! Observers of finished `tools/call`s: the audit ledger and the presence file (design.md#audit, §8) watch every call
//! through this interface, after the call ran and before its response is written, one call at a time in the order
//! the calls finish (so the ledger's chain follows completion order). They cannot change or fail
//! the response: they get a read-only view and return nothing, and a panic inside one is caught and logged.

use std::time::Duration;

use serde_json::Value;

use crate::tools::{ProtocolError, ToolDefinition, ToolOutput};

/// One finished `tools/call`, as observers see it.
#[derive(Debug)]
pub struct CallRecord<'a> {
    /// `params.name` as sent, if it was a string (it may name no tool).
    pub name: Option<&'a str>,
    /// The registered tool's definition, when `name` names one.
    pub definition: Option<&'a ToolDefinition>,
    /// `params.arguments` as sent, if any.
    pub arguments: Option<&'a Value>,
    /// The sanitised, self-declared client name (attribution, never identity).
    pub client_name: &'a str,
    /// The client's declared version, sanitised ([`super::sanitize_client_version`]), if any.
    pub client_version: Option<&'a str>,
    /// The tool's output (a success or a 100xx tool error), or the JSON-RPC error answered.
    pub outcome: Result<&'a ToolOutput, &'a ProtocolError>,
    /// Wall-clock time from receiving the call to having its result.
    pub duration: Duration,
}

impl CallRecord<'_> {
    /// Whether the call was accepted and succeeded: a tool result with `isError: false`.
    pub fn succeeded(&self) -> bool {
        matches!(self.outcome, Ok(output) if !output.is_error)
    }
}

/// Something told about every `tools/call`.
pub trait CallObserver: Send {
    /// Called once per `tools/call` that ran, on the thread that ran it, for one call at a time (under the
    /// server's lock), in the order the calls finish. Must not block for long: the next finished call waits.
    fn observe(&mut self, call: &CallRecord<'_>);
}
