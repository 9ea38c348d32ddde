//! What the approval page shows, as JSON: the queue, and each proposal's card as data.
//!
//! The card is the very text `fluxgit-gateway show` prints ([`crate::card::render`]), cut into sections by its
//! layout (a line at the left margin starts a section, `Title:` then lines indented by two spaces, or
//! `Title: text` on one line), so an operation whose card gains sections shows them on the page with no page change.
//! A section holding a unified diff gets old and new line numbers; a `Conflict preflight` section is marked so.
//! The digest the page sends back to approve is the digest of that same text: a person approves what they saw.

use serde_json::{Map, Value, json};

use crate::card::{self, Card};
use crate::journal::{self, Journal, Proposal, Status};
use crate::proposal::path_list;
use crate::time::now_ms;

/// How many ended proposals the queue lists after the open ones (newest change first).
pub const RECENT_OUTCOMES: usize = 30;
/// Characters of the reason shown in the queue (the card shows it whole).
pub const QUEUE_REASON_CHARS: usize = 140;

/// Card lines the page shows in the header instead of as sections.
const HEADER_TITLES: [&str; 5] = ["Operation", "Agent", "Repository", "Reason", "Requested"];
/// Body fields that are not the operation's own fields (or that the card shows in its own sections: a plan's steps,
/// what the gateway observed on receipt).
const ENVELOPE_FIELDS: [&str; 10] = [
    "previewId",
    "agentId",
    "idempotencyKey",
    "operationType",
    "repoPath",
    "reason",
    "requestedAt",
    "otherAgents",
    "steps",
    crate::proposal::OBSERVED,
];

/// `text` with control characters (but newline and tab) and bidirectional overrides escaped as `\u{..}`, so that
/// nothing an agent sends can hide or reorder what a person reads.
pub fn clean(text: &str) -> String {
    card::sanitize(text)
        .chars()
        .map(|character| {
            if matches!(character, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
                character.escape_unicode().to_string()
            } else {
                character.to_string()
            }
        })
        .collect()
}

/// The queue: proposals waiting for a person (oldest first: the first to expire), then approved and executing ones
/// and those needing reconciliation, then the [`RECENT_OUTCOMES`] latest ended ones. `nowMs` lets the page count
/// expiry down on the gateway's clock.
pub fn queue(journal: &mut Journal) -> Result<Value, journal::Error> {
    journal.expire_due()?;
    let (mut open, ended) = journal.queue(RECENT_OUTCOMES)?;
    open.sort_by_key(|proposal| (proposal.status != Status::Pending, proposal.created_ms));
    let pending = open.iter().filter(|proposal| proposal.status == Status::Pending).count();
    let mut items = Vec::new();
    for proposal in open.iter().chain(ended.iter()) {
        items.push(summary(journal, proposal)?);
    }
    Ok(json!({ "nowMs": now_ms(), "pending": pending, "proposals": items }))
}

/// One proposal as the queue lists it.
fn summary(journal: &Journal, proposal: &Proposal) -> Result<Value, journal::Error> {
    let point = journal.restore_point_of(&proposal.id)?;
    let reason: String = proposal.reason.chars().take(QUEUE_REASON_CHARS).collect();
    Ok(json!({
        "id": proposal.id,
        "op": proposal.op,
        "agent": clean(&proposal.agent),
        "status": proposal.status.as_str(),
        "risk": card::risk(&proposal.op, &proposal.body),
        "reason": clean(&reason.replace('\n', " ")),
        "repo": clean(proposal.canonical.get("workTree").and_then(Value::as_str).unwrap_or(&proposal.repo_path)),
        "createdMs": proposal.created_ms,
        "updatedMs": proposal.updated_ms,
        "expiresAtMs": proposal.expires_at_ms,
        "needsReconciliation": proposal.needs_reconciliation,
        "statusReason": proposal.status_reason,
        "statusMessage": proposal.status_message.as_deref().map(clean),
        "restorePointId": point.as_ref().map(|point| point.id.clone()),
        "restored": point.as_ref().is_some_and(|point| point.restored_ms.is_some()),
    }))
}

/// The card of `id` as data (`None`: no such proposal): the queue's summary, the whole reason, the operation's
/// fields and paths, `otherAgents` when the proposal carries them, the card's sections, the strong confirmation
/// expected, the digest to approve, the result, the restore point and the journaled transitions.
pub fn card(journal: &mut Journal, id: &str) -> Result<Option<Value>, journal::Error> {
    journal.expire_due()?;
    let Some(proposal) = journal.get(id)? else {
        return Ok(None);
    };
    let rendered: Card = card::render(&proposal);
    let mut view = summary(journal, &proposal)?;
    let object = view.as_object_mut().expect("a summary is an object");
    let fields: Map<String, Value> = proposal
        .body
        .as_object()
        .map(|body| {
            body.iter()
                .filter(|(name, _)| !ENVELOPE_FIELDS.contains(&name.as_str()))
                .map(|(name, value)| (clean(name), clean_value(value)))
                .collect()
        })
        .unwrap_or_default();
    let point = journal.restore_point_of(&proposal.id)?;
    let transitions: Vec<Value> = journal
        .transitions_of(&proposal.id)?
        .into_iter()
        .map(|transition| {
            json!({
                "atMs": transition.at_ms,
                "from": transition.from,
                "to": transition.to,
                "actor": clean(&transition.actor),
                "detail": clean(&transition.detail),
            })
        })
        .collect();
    object.insert("reason".into(), json!(clean(&proposal.reason)));
    object.insert("requestedAt".into(), json!(clean(&proposal.requested_at)));
    object.insert("fields".into(), Value::Object(fields));
    object.insert("paths".into(), json!(path_list(&proposal.body).iter().map(|path| clean(path)).collect::<Vec<_>>()));
    if let Some(others) = proposal.body.get("otherAgents").filter(|others| others.is_object()) {
        object.insert("otherAgents".into(), clean_value(others));
    }
    object.insert("header".into(), json!(clean(&rendered.header)));
    object.insert("sections".into(), Value::Array(sections(&clean(&rendered.body))));
    object.insert("confirmation".into(), json!(rendered.confirmation.as_deref().map(clean)));
    object.insert("digest".into(), json!(rendered.digest()));
    object.insert("result".into(), proposal.result.as_ref().map(clean_value).unwrap_or(Value::Null));
    object.insert("restorePoint".into(), point.as_ref().map(crate::restore::to_json).unwrap_or(Value::Null));
    object.insert("transitions".into(), Value::Array(transitions));
    Ok(Some(view))
}

/// `value` with every string [`clean`]ed.
fn clean_value(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(clean(text)),
        Value::Array(items) => Value::Array(items.iter().map(clean_value).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(name, item)| (clean(name), clean_value(item))).collect()),
        other => other.clone(),
    }
}

/// The card's body cut into sections (module docs): `[{title, kind, text?, lines}]`, `kind` one of `text`, `diff`
/// (lines as `{kind, old, new, text}`: `kind` `meta`, `hunk`, `context`, `add`, `del`), `preflight` (with
/// `conflicts: true` when conflicts are predicted), `confirmation`; the header lines (operation, agent,
/// repository, reason, requested) are left out: the page shows them from the proposal itself.
pub fn sections(body: &str) -> Vec<Value> {
    let mut raw: Vec<(String, Option<String>, Vec<String>)> = Vec::new();
    for line in body.lines() {
        if let Some(content) = line.strip_prefix("  ").filter(|_| !raw.is_empty()) {
            if let Some(section) = raw.last_mut() {
                section.2.push(content.to_owned());
            }
            continue;
        }
        let (title, text) = match line.split_once(':') {
            Some((title, text)) => {
                let text = text.trim().trim_end_matches(':').trim();
                (title.to_owned(), (!text.is_empty()).then(|| text.to_owned()))
            }
            None => (line.to_owned(), None),
        };
        raw.push((title, text, Vec::new()));
    }
    raw.into_iter()
        .filter(|(title, _, _)| !HEADER_TITLES.contains(&title.as_str()))
        .map(|(title, text, lines)| {
            if title.starts_with("Conflict preflight") {
                let conflicts = title.contains("CONFLICTS") || text.as_deref().is_some_and(|text| text.contains("CONFLICTS"));
                return json!({ "title": title, "kind": "preflight", "text": text, "conflicts": conflicts, "lines": lines });
            }
            if title.starts_with("Strong confirmation") {
                return json!({ "title": title, "kind": "confirmation", "text": text, "lines": lines });
            }
            if lines.iter().any(|line| line.starts_with("diff --git ") || line.starts_with("@@ ")) {
                return json!({ "title": title, "kind": "diff", "text": text, "lines": numbered(&lines) });
            }
            json!({ "title": title, "kind": "text", "text": text, "lines": lines })
        })
        .collect()
}

/// Unified diff lines with their old and new line numbers, read from the `@@ -a,b +c,d @@` hunk headers.
fn numbered(lines: &[String]) -> Vec<Value> {
    let (mut old, mut new, mut in_hunk) = (0u64, 0u64, false);
    lines
        .iter()
        .map(|line| {
            if line.starts_with("diff --git ") {
                in_hunk = false;
            }
            if let Some((start_old, start_new)) = hunk_starts(line) {
                (old, new, in_hunk) = (start_old, start_new, true);
                return json!({ "kind": "hunk", "text": line });
            }
            if !in_hunk {
                return json!({ "kind": "meta", "text": line });
            }
            match line.chars().next() {
                Some('+') => {
                    new += 1;
                    json!({ "kind": "add", "new": new - 1, "text": line })
                }
                Some('-') => {
                    old += 1;
                    json!({ "kind": "del", "old": old - 1, "text": line })
                }
                Some(' ') | None => {
                    (old, new) = (old + 1, new + 1);
                    json!({ "kind": "context", "old": old - 1, "new": new - 1, "text": line })
                }
                // `\ No newline at end of file`, and anything past the hunk.
                _ => json!({ "kind": "meta", "text": line }),
            }
        })
        .collect()
}

/// The first old and new line numbers of a hunk header `@@ -a[,b] +c[,d] @@`.
fn hunk_starts(line: &str) -> Option<(u64, u64)> {
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(" +")?;
    let (new, _) = rest.split_once(" @@")?;
    let first = |range: &str| range.split(',').next().and_then(|start| start.parse::<u64>().ok());
    Some((first(old)?, first(new)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_follow_the_card_layout_and_number_diff_lines() {
        let body = "Operation:  discard (risk: high)\nAgent:      a\nReason:     two\n            lines\nFields:\n  paths = [\"a.txt\"]\nHEAD:       refs/heads/main at abc\nPaths to discard (changes lost):\n  a.txt\nDiff (HEAD vs work tree):\n  diff --git a/a.txt b/a.txt\n  index 1..2 100644\n  --- a/a.txt\n  +++ b/a.txt\n  @@ -3,2 +3,3 @@ fn\n   same\n  -old\n  +new\n  +more\n  \\ No newline at end of file\nConflict preflight: CONFLICTS predicted in 1 path(s):\n  a.txt\nStrong confirmation: approving asks you to type: main\n";
        let sections = sections(body);
        let titles: Vec<&str> = sections.iter().filter_map(|section| section["title"].as_str()).collect();
        assert_eq!(
            titles,
            [
                "Fields",
                "HEAD",
                "Paths to discard (changes lost)",
                "Diff (HEAD vs work tree)",
                "Conflict preflight",
                "Strong confirmation"
            ]
        );
        assert_eq!(sections[1]["text"], "refs/heads/main at abc");
        let diff = &sections[3];
        assert_eq!(diff["kind"], "diff");
        let lines = diff["lines"].as_array().expect("lines");
        assert_eq!(lines[4], json!({"kind": "hunk", "text": "@@ -3,2 +3,3 @@ fn"}));
        assert_eq!(lines[5], json!({"kind": "context", "old": 3, "new": 3, "text": " same"}));
        assert_eq!(lines[6], json!({"kind": "del", "old": 4, "text": "-old"}));
        assert_eq!(lines[7], json!({"kind": "add", "new": 4, "text": "+new"}));
        assert_eq!(lines[8], json!({"kind": "add", "new": 5, "text": "+more"}));
        assert_eq!(lines[9]["kind"], "meta");
        assert_eq!(sections[4]["kind"], "preflight");
        assert_eq!(sections[4]["conflicts"], true);
        assert_eq!(sections[4]["lines"], json!(["a.txt"]));
        assert_eq!(sections[5]["kind"], "confirmation");
        assert_eq!(sections[2]["kind"], "text");
    }

    #[test]
    fn clean_escapes_terminal_controls_and_bidirectional_overrides() {
        assert_eq!(clean("a\u{1b}[2Jb\u{202e}c\nd"), "a\\u{1b}[2Jb\\u{202e}c\nd");
    }
}
