//! Audit entries for what happens at the gateway (design.md#audit): a person's decisions (`human_decision`: approve,
//! reject, restore) and executions (`execution`), appended to the ledger the sidecar writes, through
//! `fluxgit-audit` (same cross-process lock and chain). Raw paths and ids never appear: the repository is a
//! `repo_scope` hash and the proposal body a fingerprint. An append failure is logged and never undoes an act.

use std::path::Path;

use fluxgit_audit::{Approval, Event, EventType, Ledger, Limits, Outcome, Risk, SigningKey};

use crate::journal::Proposal;

/// The ledger, or nothing when the audit is disabled.
#[derive(Debug)]
pub struct Audit {
    ledger: Option<Ledger>,
}

/// Why the ledger cannot be opened: the gateway does not start (never unsigned output for a bad key).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The signing key is set but unusable.
    #[error("audit signing key: {0}")]
    Key(#[from] fluxgit_audit::KeyError),
    /// The ledger cannot be opened.
    #[error("audit ledger: {0}")]
    Open(#[from] fluxgit_audit::OpenError),
}

impl Audit {
    /// No ledger.
    pub const DISABLED: Audit = Audit { ledger: None };

    /// Opens the ledger at `path` (signing with the key at `key`, loaded fail-closed), or disabled for `None`.
    pub fn open(path: Option<&Path>, key: Option<&Path>) -> Result<Self, Error> {
        Self::open_with_limits(path, key, Limits::STANDARD)
    }

    /// [`Audit::open`] with the rotation and retention the sidecars use too.
    pub fn open_with_limits(path: Option<&Path>, key: Option<&Path>, limits: Limits) -> Result<Self, Error> {
        let Some(path) = path else { return Ok(Self::DISABLED) };
        let key = key.map(SigningKey::load).transpose()?;
        Ok(Self { ledger: Some(Ledger::open_with_limits(path, key, limits)?) })
    }

    /// A person approved (`true`) or rejected (`false`) `proposal`.
    pub fn decision(&self, proposal: &Proposal, approved: bool) {
        let (approval, verb) =
            if approved { (Approval::Approved, "approved") } else { (Approval::Rejected, "rejected") };
        self.append(
            proposal,
            EventType::HumanDecision,
            "gateway.decide",
            approval,
            Outcome::Success,
            &format!("{} proposal {verb} by a person at the gateway", proposal.op),
        );
    }

    /// A person restored the restore point of `proposal`.
    pub fn restored(&self, proposal: &Proposal, success: bool) {
        let outcome = if success { Outcome::Success } else { Outcome::Error };
        self.append(
            proposal,
            EventType::HumanDecision,
            "gateway.restore",
            Approval::Approved,
            outcome,
            &format!("restore point of a {} proposal put back by a person", proposal.op),
        );
    }

    /// The executor ran (or refused to run) `proposal`.
    pub fn execution(&self, proposal: &Proposal, success: bool, reason: &str) {
        let outcome = if success { Outcome::Success } else { Outcome::Error };
        self.append(
            proposal,
            EventType::Execution,
            "gateway.execute",
            Approval::Approved,
            outcome,
            &format!("{} executed by the gateway: {reason}", proposal.op),
        );
    }

    fn append(
        &self,
        proposal: &Proposal,
        event_type: EventType,
        tool: &str,
        approval: Approval,
        result: Outcome,
        summary: &str,
    ) {
        let Some(ledger) = &self.ledger else { return };
        let event = Event {
            tool: tool.to_owned(),
            event_type,
            repo_scope: fluxgit_audit::repo_scope(&proposal.repo_path),
            args_fingerprint: fluxgit_audit::fingerprint(&proposal.body),
            risk: Risk::Write,
            approval,
            result,
            session_id: proposal.agent.clone(),
            duration_ms: 0,
            summary: summary.to_owned(),
            read_only: false,
            sidecar_read_only: false,
        };
        if let Err(error) = ledger.append(&event) {
            tracing::warn!(%error, "audit append failed (degraded); the act stands");
        }
    }
}
