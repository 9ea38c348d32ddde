//! The sidecar's audit of every `tools/call` (design.md#audit): [`open`] loads the configuration fail-closed at start-up,
//! and [`AuditRecorder`] appends one entry per call to the shared ledger (`fluxgit-audit`).
//!
//! What an entry holds for a call: `tool` (the registered name, or `unknown` for a name that is no tool: the name
//! the client sent is not recorded verbatim), `event_type` `tool_call`, `repo_scope` (`repoPath:sha256:` of the
//! `repoPath` argument as sent, or `none`), `args_fingerprint` (sha256 of the canonical arguments), `risk` (`read`,
//! `write-proposal`, or `unknown`), `approval` (`none` for reads), `result` (`success`, or `error` for a JSON-RPC
//! error or an `isError` result), `session_id` (the sanitised client name), `duration_ms`, a `summary` made only of
//! the tool name, the result and error codes (never a message, path or argument), `readOnly`, and
//! `sidecarReadOnly: true`.
//!
//! Every entry is written (appended, chained, signed) before the call's reply is sent, so a killed process loses
//! none. A read's entry is then made durable by the ledger's group commit ([`GROUP_COMMIT`]: one thread syncs a
//! batch every 5 ms or 64 entries); a write proposal's entry, and any entry not of a read, is synced before the
//! reply. The end of input drops the recorder and a signal calls [`fluxgit_audit::SyncHandle::sync`]: both sync
//! what is pending.
//!
//! An append that fails later (disk full, a broken ledger) is logged on stderr and counted as degraded; the tool's
//! response is never changed or delayed beyond the attempt. An append that failed part-way leaves a torn last
//! line, which the ledger cuts and records at the next append (or when the next server opens it), so the audit
//! goes on once the disk has room again.

use fluxgit_audit::{
    Approval, Durability, Event, EventType, GroupCommit, KeyError, Ledger, OpenError, Outcome, Risk, SigningKey,
};
use serde_json::Value;

use crate::config::{AUDIT_SIGN_KEY_VAR, Config};
use crate::protocol::{CallObserver, CallRecord};
use crate::shutdown::ExitGuard;

/// `tool` recorded for a name that is no registered tool.
pub const UNKNOWN_TOOL: &str = "unknown";

/// Why the audit configuration cannot be served with: start-up fails closed.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// `FLUXGIT_MCP_AUDIT_SIGN_KEY` is set but the key is unusable (the cause is the error's source).
    #[error("{AUDIT_SIGN_KEY_VAR}: refusing to start rather than write unsigned audit entries")]
    Key(#[from] KeyError),
    /// The ledger's directory or lock file cannot be created (the cause is the error's source).
    #[error("refusing to start without the audit ledger (set FLUXGIT_MCP_AUDIT_DISABLED to run without it)")]
    Ledger(#[from] OpenError),
    /// The group commit's syncer thread cannot be started.
    #[error("refusing to start without the audit ledger's syncer thread")]
    Syncer(#[from] std::io::Error),
}

/// How the sidecar syncs the entries of reads: [`GroupCommit::STANDARD`] (5 ms or 64 entries).
pub const GROUP_COMMIT: GroupCommit = GroupCommit::STANDARD;

/// `doctor`'s line on what a power loss can cost, from [`GROUP_COMMIT`].
pub fn durability_text() -> String {
    format!(
        "reads are written before their reply and synced in batches (every {} ms or {} entries): a power loss can \
         cost the entries of the last {} ms of reads plus one fdatasync; a kill loses none; write proposals are \
         synced before their reply",
        GROUP_COMMIT.interval.as_millis(),
        GROUP_COMMIT.batch,
        GROUP_COMMIT.interval.as_millis()
    )
}

/// Opens the ledger configured by `config`, or `None` when the audit is disabled.
///
/// # Errors
/// [`StartupError`] when the signing key is set but empty, missing, group/world-accessible, oversized or invalid,
/// or the ledger's directory cannot be created. Nothing is written then.
pub fn open(config: &Config) -> Result<Option<Ledger>, StartupError> {
    if config.audit_disabled {
        if config.audit_sign_key.is_some() {
            tracing::warn!("{AUDIT_SIGN_KEY_VAR} is set but the audit is disabled: the key is not used");
        }
        return Ok(None);
    }
    let key = config.audit_sign_key.as_deref().map(SigningKey::load).transpose()?;
    Ok(Some(Ledger::open_with_limits(&config.audit_log, key, config.audit_limits)?.with_group_commit(GROUP_COMMIT)?))
}

/// Appends one ledger entry per `tools/call`: written before the reply; a read's synced by the group commit, any
/// other synced before the reply. Dropping it syncs what is pending.
#[derive(Debug)]
pub struct AuditRecorder {
    ledger: Ledger,
    guard: ExitGuard,
    degraded: u64,
}

impl AuditRecorder {
    /// Records into `ledger`; each append holds `guard`, so a signal never cuts one short.
    pub fn new(ledger: Ledger, guard: ExitGuard) -> Self {
        Self { ledger, guard, degraded: 0 }
    }

    /// Appends that failed so far.
    pub fn degraded(&self) -> u64 {
        self.degraded
    }
}

impl CallObserver for AuditRecorder {
    fn observe(&mut self, call: &CallRecord<'_>) {
        let event = event_for(call);
        // A read's entry is written now and synced with the next batch; any other entry (a write proposal, an
        // unknown tool) is synced before the reply.
        let durability = if event.risk == Risk::Read { Durability::Grouped } else { Durability::Synced };
        let _hold = self.guard.hold();
        if let Err(error) = self.ledger.append_with(&event, durability) {
            self.degraded += 1;
            tracing::error!(
                %error,
                degraded = self.degraded,
                "audit append failed; recorded as degraded (the tool response is unaffected)"
            );
        }
    }
}

/// The ledger event for one call.
pub fn event_for(call: &CallRecord<'_>) -> Event {
    let tool = call.definition.map_or(UNKNOWN_TOOL, |definition| definition.name);
    let read_only = call.definition.is_none_or(|definition| definition.read_only);
    let risk = match call.definition {
        Some(definition) if definition.read_only => Risk::Read,
        Some(_) => Risk::WriteProposal,
        None => Risk::Unknown,
    };
    let succeeded = call.succeeded();
    let approval = if risk == Risk::WriteProposal && succeeded { Approval::Pending } else { Approval::None };
    let repo_scope = call
        .arguments
        .and_then(|arguments| arguments.get("repoPath"))
        .and_then(Value::as_str)
        .map_or_else(|| "none".to_owned(), fluxgit_audit::repo_scope);
    let arguments = call.arguments.cloned().unwrap_or_else(|| Value::Object(Default::default()));
    Event {
        tool: tool.to_owned(),
        event_type: EventType::ToolCall,
        repo_scope,
        args_fingerprint: fluxgit_audit::fingerprint(&arguments),
        risk,
        approval,
        result: if succeeded { Outcome::Success } else { Outcome::Error },
        session_id: call.client_name.to_owned(),
        duration_ms: u64::try_from(call.duration.as_millis()).unwrap_or(u64::MAX),
        summary: summary(call, tool),
        read_only,
        sidecar_read_only: true,
    }
}

/// `<tool>: success`, `<tool>: tool error 10010`, `<tool>: JSON-RPC error -32602 (outside_allowed_roots)`; for an
/// unknown name, its fingerprint instead of the name.
fn summary(call: &CallRecord<'_>, tool: &str) -> String {
    let subject = match (call.definition, call.name) {
        (Some(_), _) => tool.to_owned(),
        (None, Some(name)) => format!("unregistered tool (name {})", fluxgit_audit::sha256_digest(name.as_bytes())),
        (None, None) => "tools/call without a tool name".to_owned(),
    };
    match call.outcome {
        Ok(output) if !output.is_error => format!("{subject}: success"),
        Ok(output) => match output.error_code {
            Some(code) => format!("{subject}: tool error {code}"),
            None => format!("{subject}: tool error"),
        },
        Err(error) => {
            let reason = error
                .data
                .as_ref()
                .and_then(|data| data.get("reason"))
                .and_then(Value::as_str)
                .filter(|reason| reason.len() <= 64 && reason.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
            match reason {
                Some(reason) => format!("{subject}: JSON-RPC error {} ({reason})", error.code),
                None => format!("{subject}: JSON-RPC error {}", error.code),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::tools::{ProtocolError, ToolDefinition, ToolOutput};

    fn definition(read_only: bool) -> ToolDefinition {
        ToolDefinition {
            name: "repo.status",
            title: "t",
            description: "d",
            input_schema: json!({"type": "object"}),
            output_schema: json!({"type": "object"}),
            read_only,
        }
    }

    #[test]
    fn events_hold_fingerprints_never_paths_or_names() {
        let read = definition(true);
        let arguments = json!({"repoPath": "/home/secret/repo", "maxTokens": 600});
        let output =
            ToolOutput { text: "{}".into(), structured: None, is_error: false, error_code: None, repo_path: None };
        let record = CallRecord {
            name: Some("repo.status"),
            definition: Some(&read),
            arguments: Some(&arguments),
            client_name: "agent",
            client_version: None,
            outcome: Ok(&output),
            duration: Duration::from_millis(7),
        };
        let event = event_for(&record);
        assert_eq!(event.tool, "repo.status");
        assert_eq!(event.repo_scope, fluxgit_audit::repo_scope("/home/secret/repo"));
        assert_eq!(event.args_fingerprint, fluxgit_audit::fingerprint(&arguments));
        assert_eq!((event.risk, event.approval, event.result), (Risk::Read, Approval::None, Outcome::Success));
        assert_eq!((event.duration_ms, event.summary.as_str()), (7, "repo.status: success"));
        assert!(event.read_only && event.sidecar_read_only);

        let error = ProtocolError::invalid_params(
            "repoPath /home/secret/repo is outside the allowed roots",
            Some(json!({"reason": "outside_allowed_roots"})),
        );
        let unknown = CallRecord { name: Some("/home/secret"), definition: None, outcome: Err(&error), ..record };
        let event = event_for(&unknown);
        assert_eq!((event.tool.as_str(), event.risk, event.result), (UNKNOWN_TOOL, Risk::Unknown, Outcome::Error));
        assert!(event.summary.ends_with("JSON-RPC error -32602 (outside_allowed_roots)"), "{}", event.summary);
        assert!(!event.summary.contains("secret"), "{}", event.summary);
    }

    #[test]
    fn proposals_are_write_risk_and_pending_when_accepted() {
        let proposal = definition(false);
        let output = ToolOutput {
            text: "{}".into(),
            structured: None,
            is_error: true,
            error_code: Some(10001),
            repo_path: None,
        };
        let record = CallRecord {
            name: Some("repo.status"),
            definition: Some(&proposal),
            arguments: None,
            client_name: "agent",
            client_version: None,
            outcome: Ok(&output),
            duration: Duration::ZERO,
        };
        let event = event_for(&record);
        assert_eq!((event.risk, event.approval, event.read_only), (Risk::WriteProposal, Approval::None, false));
        assert_eq!(event.summary, "repo.status: tool error 10001");
        assert_eq!(
            (event.repo_scope.as_str(), event.args_fingerprint),
            ("none", fluxgit_audit::fingerprint(&json!({})))
        );
        let accepted = ToolOutput { is_error: false, ..output.clone() };
        let event = event_for(&CallRecord { outcome: Ok(&accepted), ..record });
        assert_eq!(event.approval, Approval::Pending);
    }
}
