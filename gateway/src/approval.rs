//! A person's decisions: `show` (the card and a one-time code), `approve`, `reject`, `restore`.
//!
//! Approval is a person's act (design.md#gateway): [`approve`] runs only on an interactive terminal (the binary checks that
//! stdin is a TTY), only for a pending, unexpired proposal whose card was printed by `show`, and only when the
//! person types the one-time code printed on that card (the journal keeps only its sha256, and a wrong code voids
//! it) and, for a hard reset, a force push or a branch deletion, the strong confirmation (the branch name).
//! The card is rendered again and must be the one shown. The canonical repository is resolved again: a mismatch
//! blocks. [`approve_in_page`] is the approval page's way, with the same checks and the page's guards (launch
//! secret, same origin, CSRF token) in place of the code. No MCP tool, sidecar-facing HTTP route or environment
//! variable reaches either.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use sha2::{Digest, Sha256};

use crate::audit::Audit;
use crate::card::{self, Card};
use crate::executor;
use crate::journal::{self, Change, Journal, Proposal, Status};
use crate::repo::{self, Canonical};

/// Characters of a one-time code (no 0/O, 1/I/L).
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";

/// A decision that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The journal failed.
    #[error(transparent)]
    Journal(#[from] journal::Error),
    /// No such proposal.
    #[error("no proposal {0}")]
    Unknown(String),
    /// No proposal has the previewId given to the CLI, and none starts with it.
    #[error("no proposal {0}, and no previewId starts with it (`fluxgit-gateway list --all` shows every previewId)")]
    NoMatch(String),
    /// A shortened previewId that more than one proposal starts with.
    #[error("{prefix} is the start of {} previewIds: {}; give more of it", candidates.len(), candidates.join(", "))]
    Ambiguous {
        /// The id as given.
        prefix: String,
        /// Some of the proposals it could name (at most [`MAX_CANDIDATES`]).
        candidates: Vec<String>,
    },
    /// Not in a state that allows the act.
    #[error("proposal {id} is {status}: {message}")]
    State {
        /// The proposal.
        id: String,
        /// Its state.
        status: &'static str,
        /// What to do.
        message: &'static str,
    },
    /// Refused (not a terminal, wrong code, changed card, ...).
    #[error("{0}")]
    Refused(String),
    /// IO on the terminal.
    #[error("terminal: {0}")]
    Io(#[from] std::io::Error),
    /// Restore failed.
    #[error(transparent)]
    Restore(#[from] crate::restore::Error),
    /// The card rendered now differs from the one the page showed (the repository moved): show it again.
    #[error("the card of {0} changed since it was shown (the repository moved): look at it again")]
    CardChanged(String),
}

/// A shortened previewId must have at least this many characters (as git asks of an abbreviated sha).
pub const MIN_PREFIX: usize = 4;

/// At most this many candidates are named for an ambiguous previewId.
pub const MAX_CANDIDATES: usize = 5;

/// The full previewId that `given` names: `given` itself when a proposal has that id, else the one proposal whose
/// id starts with it (at least [`MIN_PREFIX`] characters).
///
/// # Errors
/// [`Error::NoMatch`] when nothing matches, [`Error::Refused`] for a shorter start, [`Error::Ambiguous`] naming
/// the candidates when more than one proposal starts with it.
pub fn resolve_id(journal: &Journal, given: &str) -> Result<String, Error> {
    if journal.get(given)?.is_some() {
        return Ok(given.to_owned());
    }
    if given.chars().count() < MIN_PREFIX {
        return Err(Error::Refused(format!(
            "no proposal {given}; a shortened previewId needs at least {MIN_PREFIX} characters \
             (`fluxgit-gateway list --all` shows every previewId)"
        )));
    }
    let mut candidates = journal.ids_starting_with(given, MAX_CANDIDATES + 1)?;
    match candidates.len() {
        0 => Err(Error::NoMatch(given.to_owned())),
        1 => Ok(candidates.remove(0)),
        _ => {
            candidates.truncate(MAX_CANDIDATES);
            Err(Error::Ambiguous { prefix: given.to_owned(), candidates })
        }
    }
}

fn load(journal: &mut Journal, id: &str) -> Result<Proposal, Error> {
    journal.expire_due()?;
    journal.get(id)?.ok_or_else(|| Error::Unknown(id.to_owned()))
}

fn code_hash(id: &str, code: &str) -> String {
    let normalised: String =
        code.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_uppercase()).collect();
    faster_hex::hex_string(&Sha256::digest(format!("{id}:{normalised}").as_bytes()))
}

fn new_code() -> Result<String, Error> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|error| Error::Refused(format!("no randomness for the code: {error}")))?;
    let chars: String =
        bytes.iter().map(|byte| CODE_ALPHABET[usize::from(*byte) % CODE_ALPHABET.len()] as char).collect();
    Ok(format!("{}-{}", &chars[..4], &chars[4..]))
}

/// Renders the card of `id` for a person; for a pending proposal, issues a new one-time code (stored hashed,
/// replacing any earlier one) and prints it on the card.
pub fn show(journal: &mut Journal, id: &str) -> Result<String, Error> {
    let proposal = load(journal, id)?;
    let card = card::render(&proposal);
    let mut text = card::sanitize(&format!("{}\n{}", card.header, card.body));
    match proposal.status {
        Status::Pending => {
            let code = new_code()?;
            journal.set_code(id, &code_hash(id, &code), &card.digest())?;
            text.push_str(&format!(
                "\nOne-time approval code: {code}\nTo approve: fluxgit-gateway approve {id}   (on this terminal; you will be asked for the code)\nTo reject:  fluxgit-gateway reject {id} --reason \"...\"\n"
            ));
        }
        status => {
            text.push_str(&format!("\nState: {}", status.as_str()));
            if let Some(reason) = &proposal.status_reason {
                text.push_str(&format!(" ({reason})"));
            }
            if let Some(message) = &proposal.status_message {
                text.push_str(&card::sanitize(&format!(": {message}")));
            }
            text.push('\n');
            if let Some(result) = &proposal.result {
                text.push_str(&card::sanitize(&format!("Result: {result}\n")));
            }
        }
    }
    Ok(text)
}

/// Approves `id` after the checks of the module docs. `is_terminal` is whether stdin is an interactive terminal;
/// prompts go to `output`, answers come from `input`.
pub fn approve(
    journal: &mut Journal,
    id: &str,
    is_terminal: bool,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
    allowed_roots: &[PathBuf],
    audit: &Audit,
) -> Result<(), Error> {
    if !is_terminal {
        return Err(Error::Refused(
            "approve needs an interactive terminal (stdin is not a TTY): approval is a person's act".to_owned(),
        ));
    }
    let proposal = load(journal, id)?;
    if proposal.status != Status::Pending {
        return Err(Error::State {
            id: id.to_owned(),
            status: proposal.status.as_str(),
            message: "only a pending proposal can be approved",
        });
    }
    let (Some(stored_hash), Some(stored_digest)) = (&proposal.code_hash, &proposal.card_digest) else {
        return Err(Error::Refused(format!("no card was shown for {id}: run `fluxgit-gateway show {id}` first")));
    };
    let card: Card = card::render(&proposal);
    if card.digest() != *stored_digest {
        journal.clear_code(id)?;
        return Err(Error::Refused(format!(
            "the card of {id} changed since it was shown (the repository moved): run `fluxgit-gateway show {id}` again"
        )));
    }
    write!(output, "One-time code from the card of {id}: ")?;
    output.flush()?;
    let mut code = String::new();
    input.read_line(&mut code)?;
    if code_hash(id, code.trim()) != *stored_hash {
        journal.clear_code(id)?;
        return Err(Error::Refused(format!(
            "wrong code: the code is void; run `fluxgit-gateway show {id}` for a new one"
        )));
    }
    if let Some(expected) = &card.confirmation {
        write!(output, "Strong confirmation ({} risk): type the branch name ({expected}) to confirm: ", card.risk)?;
        output.flush()?;
        let mut typed = String::new();
        input.read_line(&mut typed)?;
        if typed.trim() != expected {
            journal.clear_code(id)?;
            return Err(Error::Refused("the confirmation did not match: not approved".to_owned()));
        }
    }
    approve_checked(journal, &proposal, "approved at the terminal with the card's code", allowed_roots, audit)
}

/// Approves `id` from the approval page ([`crate::web`]), with the same checks as the terminal: the proposal is
/// pending and unexpired, the card rendered now is the one the page showed (`seen_digest`, the sha256 of its
/// body: the repository did not move since), the strong confirmation (hard reset, force push, branch deletion) was
/// typed exactly (`typed`), and the repository path still resolves to the canonical repository it named. The
/// page's own guards (launch secret, loopback `Host`, same origin, CSRF token) stand where the terminal's code does.
pub fn approve_in_page(
    journal: &mut Journal,
    id: &str,
    seen_digest: &str,
    typed: Option<&str>,
    allowed_roots: &[PathBuf],
    audit: &Audit,
) -> Result<(), Error> {
    let proposal = load(journal, id)?;
    if proposal.status != Status::Pending {
        return Err(Error::State {
            id: id.to_owned(),
            status: proposal.status.as_str(),
            message: "only a pending proposal can be approved",
        });
    }
    let card: Card = card::render(&proposal);
    if card.digest() != seen_digest {
        return Err(Error::CardChanged(id.to_owned()));
    }
    if let Some(expected) = &card.confirmation
        && typed.map(str::trim) != Some(expected.as_str())
    {
        return Err(Error::Refused(format!("strong confirmation: type {expected} exactly to approve")));
    }
    approve_checked(
        journal,
        &proposal,
        "approved in the approval page (launch secret, same origin, CSRF token)",
        allowed_roots,
        audit,
    )
}

/// The checks and the transition both ways of approving share: the canonical repository resolved again, the
/// approval snapshot of its refs, `pending -> approved`, the audit entry.
///
/// A repository outside *this process's* allowed roots says nothing about the repository: the person started
/// `approve` with other roots than `serve`, so the approval is refused and the proposal stays pending. A path that
/// no longer resolves, or resolves to another repository (another `device:inode`), fails the proposal for good
/// (`blocked_repository_mismatch`).
fn approve_checked(
    journal: &mut Journal,
    proposal: &Proposal,
    detail: &str,
    allowed_roots: &[PathBuf],
    audit: &Audit,
) -> Result<(), Error> {
    let id = proposal.id.as_str();
    let received: Option<Canonical> = serde_json::from_value(proposal.canonical.clone()).ok();
    let resolved = match repo::resolve(std::path::Path::new(&proposal.repo_path), allowed_roots) {
        Ok(resolved) if Some(&resolved) == received.as_ref() => resolved,
        Err(repo::Error::OutsideAllowedRoots) => {
            return Err(Error::Refused(format!(
                "{} is outside this process's allowed roots (FLUXGIT_MCP_ALLOWED_ROOTS): approve with the roots \
                 the gateway serves with; {id} stays pending",
                proposal.repo_path
            )));
        }
        other => {
            let why = match other {
                Ok(_) => "the repository path now resolves to another repository".to_owned(),
                Err(error) => format!("the repository path no longer resolves: {error}"),
            };
            let change = Change {
                actor: "person",
                detail: "approval blocked: repository mismatch",
                reason: Some("blocked_repository_mismatch"),
                message: Some(&why),
                ..Change::default()
            };
            journal.transition(id, &[Status::Pending], Status::Failed, &change)?;
            return Err(Error::Refused(format!("{why}: {id} is blocked")));
        }
    };
    let snapshot = executor::approval_snapshot(&resolved).map_err(|error| Error::Refused(error.to_string()))?;
    let change = Change { actor: "person", detail, approval: Some(&snapshot), ..Change::default() };
    if !journal.transition(id, &[Status::Pending], Status::Approved, &change)? {
        return Err(Error::Refused(format!("{id} is no longer pending")));
    }
    audit.decision(proposal, true);
    Ok(())
}

/// Rejects a pending (or approved, not yet claimed) proposal; `reason` is passed to the agent.
pub fn reject(journal: &mut Journal, id: &str, reason: Option<&str>, audit: &Audit) -> Result<(), Error> {
    let proposal = load(journal, id)?;
    let message = reason.unwrap_or("a person rejected the proposal");
    let change = Change {
        actor: "person",
        detail: "rejected",
        reason: Some("rejected_by_person"),
        message: Some(message),
        ..Change::default()
    };
    if !journal.transition(id, &[Status::Pending, Status::Approved], Status::Rejected, &change)? {
        return Err(Error::State {
            id: id.to_owned(),
            status: proposal.status.as_str(),
            message: "only a pending or approved proposal can be rejected",
        });
    }
    audit.decision(&proposal, false);
    Ok(())
}

/// Closes a proposal that was found `executing` after a restart, once a person has looked at the repository:
/// `completed` (git did it) or `failed` (it did not, or it was restored). Only such flagged proposals.
pub fn reconcile(
    journal: &mut Journal,
    id: &str,
    completed: bool,
    note: Option<&str>,
    audit: &Audit,
) -> Result<(), Error> {
    let proposal = load(journal, id)?;
    if proposal.status != Status::Executing || !proposal.needs_reconciliation {
        return Err(Error::State {
            id: id.to_owned(),
            status: proposal.status.as_str(),
            message: "only an execution interrupted by a restart is reconciled",
        });
    }
    let point = journal.restore_point_of(id)?.map(|point| point.id);
    let result = serde_json::json!({ "reconciled": true, "restorePointId": point });
    let (to, message) = if completed {
        (Status::Completed, note.unwrap_or("a person confirmed the interrupted execution completed"))
    } else {
        (Status::Failed, note.unwrap_or("a person found the interrupted execution did not complete"))
    };
    let change = Change {
        actor: "person",
        detail: "reconciled after a restart",
        reason: (!completed).then_some("reconciled_by_person"),
        message: Some(message),
        result: Some(&result),
        ..Change::default()
    };
    if !journal.transition(id, &[Status::Executing], to, &change)? {
        return Err(Error::Refused(format!("{id} is no longer executing")));
    }
    audit.execution(&proposal, completed, "reconciled by a person");
    Ok(())
}

/// Puts back the restore point `id` (a restore point id, or the id of the proposal it protects).
pub fn restore(journal: &mut Journal, id: &str, audit: &Audit) -> Result<String, Error> {
    let _lock = journal.execution_lock()?;
    let point = match journal.restore_point(id)? {
        Some(point) => point,
        None => journal.restore_point_of(id)?.ok_or_else(|| Error::Unknown(id.to_owned()))?,
    };
    let proposal = journal.get(&point.proposal_id)?.ok_or_else(|| Error::Unknown(point.proposal_id.clone()))?;
    if proposal.status == Status::Executing && !proposal.needs_reconciliation {
        return Err(Error::State { id: proposal.id.clone(), status: "executing", message: "wait until it ends" });
    }
    let canonical: Canonical = serde_json::from_value(proposal.canonical.clone())
        .map_err(|_| Error::Refused("the journal holds no canonical repository for it".to_owned()))?;
    let result = crate::restore::restore(journal, &canonical, &point, "person");
    audit.restored(&proposal, result.is_ok());
    result?;
    Ok(point.id)
}
