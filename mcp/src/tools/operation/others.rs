//! Previews' informational `otherAgents` (design.md#tools): the agents working in the repository (see `agents.presence`),
//! with the proposal's paths they touched. It is added after the gateway's decision and never blocks or changes a
//! proposal; it is absent when agent detection is disabled.
//!
//! Proposal paths come from discard and commit `paths`, the file headers of `patchContent`, the same fields of plan
//! steps, and the submodule directory of submodulePointer (`parentPath/relativePath`). A path overlaps an agent's
//! file when they are equal or one is a directory holding the other.

use fluxgit_contract::Operation;
use fluxgit_engine::agents::{self, Agent};
use serde_json::{Map, Value, json};

/// Most agents listed; `agentCount` stays exact.
pub const MAX_AGENTS: usize = 10;
/// Most overlapping paths listed per agent.
pub const MAX_OVERLAPS: usize = 20;

const NOTE: &str = "Informational only: other agents' activity never blocks or changes this proposal; where paths \
    overlap, consider waiting or telling the person.";

/// The proposal's repo-relative paths, or `None` when the operation does not name paths (merge, reset, push, a
/// commit of what is staged, ...).
pub fn proposal_paths(operation: &str, fields: &Map<String, Value>) -> Option<Vec<String>> {
    let mut paths = Vec::new();
    let known = collect(operation, fields, &mut paths);
    known.then(|| {
        paths.sort();
        paths.dedup();
        paths
    })
}

fn collect(operation: &str, fields: &Map<String, Value>, paths: &mut Vec<String>) -> bool {
    let text = |name: &str| fields.get(name).and_then(Value::as_str);
    let Some(operation) = Operation::from_name(operation) else { return false };
    match operation {
        Operation::Discard | Operation::Commit => {
            let Some(list) = fields.get("paths").and_then(Value::as_array) else { return false };
            paths.extend(list.iter().filter_map(Value::as_str).map(|path| path.trim_end_matches('/').to_owned()));
            true
        }
        Operation::Patch => {
            paths.extend(patch_files(text("patchContent").unwrap_or_default()));
            true
        }
        Operation::SubmodulePointer => {
            let Some(relative) = text("relativePath") else { return false };
            let path = match text("parentPath").filter(|parent| !parent.is_empty()) {
                Some(parent) => format!("{}/{}", parent.trim_end_matches('/'), relative),
                None => relative.to_owned(),
            };
            paths.push(path.trim_end_matches('/').to_owned());
            true
        }
        Operation::Plan => {
            let steps = fields.get("steps").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            let mut any = false;
            for step in steps.iter().filter_map(Value::as_object) {
                let kind = step.get("type").and_then(Value::as_str).unwrap_or_default();
                any |= collect(kind, step, paths);
            }
            any
        }
        Operation::Merge
        | Operation::Rebase
        | Operation::Reset
        | Operation::Worktree
        | Operation::WorktreeRemove
        | Operation::Push
        | Operation::Branch
        | Operation::BranchDelete => false,
    }
}

/// File paths named by a unified patch's headers (`diff --git a/x b/y`, `--- a/x`, `+++ b/y`), without the `a/`
/// and `b/` prefixes; `/dev/null` skipped.
pub fn patch_files(patch: &str) -> Vec<String> {
    let mut files = Vec::new();
    for line in patch.lines() {
        let names: Vec<&str> = if let Some(rest) = line.strip_prefix("diff --git ") {
            rest.split_once(" b/").map(|(a, b)| vec![a.strip_prefix("a/").unwrap_or(a), b]).unwrap_or_default()
        } else if let Some(rest) = line.strip_prefix("--- ").or_else(|| line.strip_prefix("+++ ")) {
            let name = rest.split('\t').next().unwrap_or(rest).trim_end();
            if name == "/dev/null" {
                continue;
            }
            vec![name.strip_prefix("a/").or_else(|| name.strip_prefix("b/")).unwrap_or(name)]
        } else {
            continue;
        };
        for name in names {
            if !name.is_empty() && !files.iter().any(|known| known == name) {
                files.push(name.to_owned());
            }
        }
    }
    files
}

/// Whether `a` and `b` are the same path or one is a directory holding the other.
fn overlaps(a: &str, b: &str) -> bool {
    let holds =
        |dir: &str, path: &str| path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/';
    a == b || holds(a, b) || holds(b, a)
}

/// The `otherAgents` object for a proposal on a repository where `report` was detected.
pub fn other_agents(report: &agents::Report, client_name: &str, paths: Option<&[String]>) -> Value {
    let caller_kind = agents::agent_of_client(client_name);
    let omitted_likely_caller = report.agents.iter().any(|agent| agent.likely_caller);
    let mut listed: Vec<(Value, bool)> = report
        .agents
        .iter()
        .filter(|agent| !agent.likely_caller)
        .map(|agent| entry(agent, &caller_kind, paths.unwrap_or_default()))
        .collect();
    // Overlapping agents first; otherwise the detector's order (working, open, recent; newest first).
    listed.sort_by_key(|(_, overlapping)| !overlapping);
    let agent_count = listed.len();
    let overlapping_count = listed.iter().filter(|(_, overlapping)| *overlapping).count();
    let shown: Vec<Value> = listed.into_iter().take(MAX_AGENTS).map(|(value, _)| value).collect();
    let mut out = json!({ "informational": true, "note": NOTE });
    if !shown.is_empty() {
        out["agents"] = Value::Array(shown);
        out["agentCount"] = json!(agent_count);
    }
    if overlapping_count > 0 {
        out["overlappingAgentCount"] = json!(overlapping_count);
    }
    if paths.is_some() {
        out["proposalPathsKnown"] = json!(true);
    }
    if omitted_likely_caller {
        out["omittedLikelyCaller"] = json!(true);
    }
    out
}

fn entry(agent: &Agent, caller_kind: &str, paths: &[String]) -> (Value, bool) {
    let overlapping: Vec<&String> =
        paths.iter().filter(|path| agent.files.iter().any(|file| overlaps(path, file))).take(MAX_OVERLAPS).collect();
    let mut value = serde_json::to_value(agent).expect("agent records serialise");
    if let Some(object) = value.as_object_mut() {
        object.remove("likelyCaller");
        if !overlapping.is_empty() {
            object.insert("overlappingPaths".to_owned(), json!(overlapping));
        }
        if agent.agent == caller_kind {
            object.insert("sameAgentAsCaller".to_owned(), json!(true));
        }
    }
    (value, !overlapping.is_empty())
}

/// The schema of `otherAgents`.
pub fn schema() -> Value {
    // Each of the thirteen previews carries this schema: an agent's fields are described once, in agents_presence's
    // output schema, and named here (about 100 tokens less per preview in every tools/list).
    let agent = json!({ "type": "object", "required": ["agent", "state", "sources"],
        "description": "An agent as agents_presence describes it, with overlappingPaths (the proposal's paths this \
            agent touched; absent: none) and sameAgentAsCaller (another session of the caller's kind; absent: false)." });
    json!({ "type": "object", "required": ["informational", "note"],
        "description": "Informational, added after the gateway's decision: the other agents working in this \
            repository and the proposal's paths they touched. Never blocks or changes the proposal. Absent when agent \
            detection is disabled.",
        "properties": {
            "informational": { "const": true },
            "agents": { "type": "array", "maxItems": MAX_AGENTS, "items": agent, "description": "Overlapping agents \
                first. The likely caller is left out. Absent (the default): none." },
            "agentCount": { "type": "integer", "minimum": 0, "description": "Exact number of other agents. Absent: 0." },
            "overlappingAgentCount": { "type": "integer", "minimum": 0, "description": "Agents with overlapping \
                paths. Absent: 0." },
            "proposalPathsKnown": { "type": "boolean", "description": "Whether the proposal names its paths \
                (discard, commit with paths, patch, plan steps, submodulePointer). Absent: false." },
            "omittedLikelyCaller": { "type": "boolean", "description": "The record that is probably the caller was \
                left out. Absent: false." },
            "note": { "type": "string" }
        } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_of_proposals() {
        let patch = "diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1 @@\n-x\n+y\n\
                     diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n";
        assert_eq!(patch_files(patch), ["src/a.rs", "new.txt"]);
        let fields = json!({ "steps": [{ "type": "merge", "sourceRef": "x" },
            { "type": "discard", "paths": ["docs/", "a"] }] });
        assert_eq!(proposal_paths("plan", fields.as_object().expect("object")), Some(vec!["a".into(), "docs".into()]));
        let fields = json!({ "relativePath": "lib/sub", "parentPath": "vendor" });
        assert_eq!(
            proposal_paths("submodulePointer", fields.as_object().expect("object")),
            Some(vec!["vendor/lib/sub".into()])
        );
        assert_eq!(proposal_paths("merge", &Map::new()), None);
        assert!(overlaps("docs", "docs/x.md") && overlaps("a/b", "a") && !overlaps("doc", "docs/x"));
    }
}
