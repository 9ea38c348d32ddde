//! Token budgets (design.md#engine) on real fixtures: for every tool and budget, `tokens(content[0].text) <= maxTokens` in
//! o200k_base, each `omitted` count equals the oracle's total minus what was shown, and one more item of any cut
//! section would not have fitted (the budget is used, not merely respected).

use fluxgit_engine::budget::count_tokens;
use fluxgit_engine::{Engine, Options};
use fluxgit_fixtures::{Fixture, Scenario};
use fluxgit_mcp_sidecar::bridge::Bridge;
use fluxgit_mcp_sidecar::tools::{CallContext, Registry, Tool, ToolOutput, registry};
use serde_json::{Map, Value, json};

pub(crate) const BUDGETS: [u64; 5] = [200, 400, 600, 1000, 4000];

/// Budgets under the schemas' minimum of 200 as well: compact answers often fit 200 tokens whole, and the engine
/// takes any budget above a result's floor, so these make the cuts happen (a budget under the floor is refused).
pub(crate) const SMALL_AND_USUAL_BUDGETS: [u64; 8] = [100, 130, 160, 200, 400, 600, 1000, 4000];

/// (section name in `omitted`, JSON pointer of its list inside the envelope).
const BRIEF_SECTIONS: &[(&str, &str)] = &[
    ("hints", "/data/hints"),
    ("submoduleAttention", "/data/submodules/attention"),
    ("recentCommits", "/data/recentCommits"),
    ("branchPrefixes", "/data/conventions/branchPrefixes"),
];
const STATUS_SECTIONS: &[(&str, &str)] = &[
    ("conflicted", "/data/conflicted"),
    ("staged", "/data/staged"),
    ("unstaged", "/data/unstaged"),
    ("untracked", "/data/untracked"),
];
const REFS_SECTIONS: &[(&str, &str)] = &[
    ("branches", "/data/branches"),
    ("remotes", "/data/remotes"),
    ("stashes", "/data/stashes"),
    ("tags", "/data/tags"),
    ("remoteBranches", "/data/remoteBranches"),
];

pub(crate) fn call(registry: &Registry, engine: &Engine, tool: &str, arguments: Value) -> Result<ToolOutput, String> {
    let tool: &dyn Tool = registry.lookup(tool).expect("registered");
    let ctx = CallContext {
        engine,
        client_name: "budget-test",
        bridge: &Bridge::NONE,
        interrupt: &fluxgit_engine::Interrupt::new(),
        resolved: None,
    };
    let arguments: Map<String, Value> = arguments.as_object().expect("object").clone();
    tool.call(&ctx, &arguments).map_err(|err| format!("{} {}", err.code, err.message))
}

pub(crate) fn list_len(value: &Value, pointer: &str) -> usize {
    value.pointer(pointer).and_then(Value::as_array).map_or(0, Vec::len)
}

/// Checks one budgeted call against the unbudgeted `full` result and the oracle's `totals`.
/// Returns whether anything was cut.
pub(crate) fn check_budget(
    full: &Value,
    cut: &ToolOutput,
    budget: u64,
    sections: &[(&str, &str)],
    totals: &[usize],
    label: &str,
) -> bool {
    let tokens = count_tokens(&cut.text);
    assert!(tokens as u64 <= budget, "{label}: {tokens} tokens over a budget of {budget}");
    assert!(!cut.is_error, "{label}: {}", cut.text);
    let cut_value = &cut.structured_value();
    for ((section, pointer), total) in sections.iter().zip(totals) {
        let shown = list_len(cut_value, pointer);
        let omitted = cut_value.pointer(&format!("/omitted/{section}")).and_then(Value::as_u64).unwrap_or(0) as usize;
        assert_eq!(shown + omitted, *total, "{label}: {section} shown {shown} + omitted {omitted} != total {total}");
        if omitted == 0 {
            continue;
        }
        // One more item of this section, with `omitted` adjusted exactly as the tool would render it.
        let mut grown = cut_value.clone();
        let next = full.pointer(pointer).and_then(Value::as_array).expect("full list")[shown].clone();
        if grown.pointer(pointer).is_none() {
            // Empty lists are left out of the JSON (compact shapes): put it back where the tool renders it, in the
            // full answer's key order (a key appended at the end tokenises differently at its neighbours' edges).
            let (parent, key) = pointer.rsplit_once('/').expect("pointer has a parent");
            let order: Vec<String> =
                full.pointer(parent).and_then(Value::as_object).expect("full parent").keys().cloned().collect();
            let object = grown.pointer_mut(parent).and_then(Value::as_object_mut).expect("parent object");
            object.insert(key.to_owned(), json!([]));
            let mut entries: Vec<(String, Value)> = std::mem::take(object).into_iter().collect();
            entries.sort_by_key(|(name, _)| order.iter().position(|known| known == name).unwrap_or(usize::MAX));
            object.extend(entries);
        }
        grown.pointer_mut(pointer).and_then(Value::as_array_mut).expect("list").push(next);
        let omitted_map = grown["omitted"].as_object_mut().expect("omitted object");
        if omitted == 1 {
            omitted_map.remove(*section);
        } else {
            omitted_map.insert((*section).to_owned(), json!(omitted - 1));
        }
        if omitted_map.is_empty() {
            grown.as_object_mut().expect("envelope").remove("omitted");
        }
        if *section == "submoduleAttention" && omitted == 1 {
            grown["data"]["submodules"]["attentionTruncated"] =
                full["data"]["submodules"]["attentionTruncated"].clone();
        }
        let grown_tokens = count_tokens(&serde_json::to_string(&grown).expect("serialises"));
        assert!(
            grown_tokens as u64 > budget,
            "{label}: one more {section} item would have fitted ({grown_tokens} <= {budget})"
        );
    }
    cut_value.get("omitted").is_some()
}

/// The text format of the same call (design.md#envelope): the text fits `budget`, the JSON in `structuredContent` counts
/// exactly what was cut (shown + omitted = the oracle's total), and each cut is stated in the text.
pub(crate) fn check_text_budget(
    cut: &ToolOutput,
    budget: u64,
    sections: &[(&str, &str)],
    totals: &[usize],
    label: &str,
) {
    let tokens = count_tokens(&cut.text);
    assert!(tokens as u64 <= budget, "{label} text: {tokens} tokens over a budget of {budget}\n{}", cut.text);
    for ((section, pointer), total) in sections.iter().zip(totals) {
        let shown = list_len(&cut.structured_value(), pointer);
        let omitted =
            cut.structured_value().pointer(&format!("/omitted/{section}")).and_then(Value::as_u64).unwrap_or(0)
                as usize;
        assert_eq!(shown + omitted, *total, "{label} text: {section} shown {shown} + omitted {omitted} != {total}");
        if omitted > 0 {
            assert!(cut.text.contains(&format!("... {omitted} more")), "{label} text: {section} cut not stated");
        }
    }
}

/// `arguments` with `format: "text"`.
pub(crate) fn as_text(mut arguments: Value) -> Value {
    arguments["format"] = json!("text");
    arguments
}

pub(crate) fn git_count(fixture: &Fixture, args: &[&str]) -> usize {
    let output = fixture.git_raw(args);
    String::from_utf8_lossy(&output.stdout).lines().filter(|l| !l.is_empty()).count()
}

pub(crate) fn setup(scenario: Scenario) -> (Fixture, Engine, Registry, String) {
    let fixture = fluxgit_fixtures::build(scenario);
    let root = fixture.root().canonicalize().expect("exists");
    let engine = Engine::new(Options { allowed_roots: vec![root] });
    let path = fixture.path().to_str().expect("utf-8").to_owned();
    (fixture, engine, registry().expect("registry"), path)
}

#[test]
fn brief_fits_every_budget() {
    let mut cuts = 0;
    for scenario in
        [Scenario::ManyBranches, Scenario::Submodules, Scenario::MergeConflict, Scenario::Dirty, Scenario::AheadBehind]
    {
        let (fixture, engine, registry, path) = setup(scenario);
        let full = call(
            &registry,
            &engine,
            "repo_brief",
            json!({"repoPath": path, "recentCommits": 20, "maxTokens": 1_000_000}),
        )
        .expect("full");
        assert!(full.structured_value().get("omitted").is_none(), "nothing cut at an unlimited budget");
        let full = full.structured_value();
        let commits = git_count(&fixture, &["rev-list", "--max-count=20", "HEAD"]);
        let totals = [
            list_len(&full, "/data/hints"),
            list_len(&full, "/data/submodules/attention"),
            commits,
            list_len(&full, "/data/conventions/branchPrefixes"),
        ];
        for budget in SMALL_AND_USUAL_BUDGETS {
            let label = format!("{} repo_brief @{budget}", scenario.name());
            match call(
                &registry,
                &engine,
                "repo_brief",
                json!({"repoPath": path, "recentCommits": 20, "maxTokens": budget}),
            ) {
                Ok(cut) => cuts += usize::from(check_budget(&full, &cut, budget, BRIEF_SECTIONS, &totals, &label)),
                Err(err) => assert!(err.starts_with("-32602") && budget < 200, "{label}: {err}"),
            }
            let arguments = as_text(json!({"repoPath": path, "recentCommits": 20, "maxTokens": budget}));
            match call(&registry, &engine, "repo_brief", arguments) {
                Ok(cut) => check_text_budget(&cut, budget, BRIEF_SECTIONS, &totals, &label),
                Err(err) => assert!(err.starts_with("-32602") && budget < 200, "{label} text: {err}"),
            }
        }
    }
    assert!(cuts >= 5, "the small budgets must cut something ({cuts} cut results)");
}

#[test]
fn status_and_refs_fit_every_budget() {
    let mut cuts = 0;
    for scenario in
        [Scenario::Dirty, Scenario::MergeConflict, Scenario::ManyBranches, Scenario::AheadBehind, Scenario::Stashes]
    {
        let (fixture, engine, registry, path) = setup(scenario);
        let status_full = call(&registry, &engine, "repo_status", json!({"repoPath": path, "maxTokens": 1_000_000}))
            .expect("full")
            .structured_value();
        let porcelain = |filter: &dyn Fn(&str) -> bool| {
            let output = fixture.git_raw(&["status", "--porcelain"]);
            String::from_utf8_lossy(&output.stdout).lines().filter(|l| filter(l)).count()
        };
        let unmerged = ["DD", "AU", "UD", "UA", "DU", "AA", "UU"];
        let is_unmerged = |line: &str| unmerged.iter().any(|code| line.starts_with(code));
        let status_totals = [
            porcelain(&|l| is_unmerged(l)),
            porcelain(&|l| !is_unmerged(l) && !l.starts_with('?') && !l.starts_with(' ')),
            porcelain(&|l| !is_unmerged(l) && !l.starts_with('?') && l.as_bytes().get(1) != Some(&b' ')),
            porcelain(&|l| l.starts_with("??")),
        ];
        let refs_full = call(&registry, &engine, "repo_refs", json!({"repoPath": path, "maxTokens": 1_000_000}))
            .expect("full")
            .structured_value();
        let refs_totals = [
            git_count(&fixture, &["for-each-ref", "refs/heads"]),
            git_count(&fixture, &["remote"]),
            git_count(&fixture, &["stash", "list"]),
            git_count(&fixture, &["for-each-ref", "refs/tags"]),
            // Remote-tracking branches without symbolic refs such as origin/HEAD.
            git_count(&fixture, &["for-each-ref", "--format=%(if)%(symref)%(then)%(else)x%(end)", "refs/remotes"]),
        ];
        check_refs_counts(&refs_full, &refs_totals, &format!("{} repo_refs uncut", scenario.name()));
        for budget in SMALL_AND_USUAL_BUDGETS {
            let label = format!("{} repo_status @{budget}", scenario.name());
            match call(&registry, &engine, "repo_status", as_text(json!({"repoPath": path, "maxTokens": budget}))) {
                Ok(cut) => check_text_budget(&cut, budget, STATUS_SECTIONS, &status_totals, &label),
                Err(err) => assert!(err.starts_with("-32602") && budget < 200, "{label} text: {err}"),
            }
            match call(&registry, &engine, "repo_status", json!({"repoPath": path, "maxTokens": budget})) {
                Ok(cut) => {
                    cuts +=
                        usize::from(check_budget(&status_full, &cut, budget, STATUS_SECTIONS, &status_totals, &label))
                }
                Err(err) => assert!(err.starts_with("-32602") && budget < 200, "{label}: {err}"),
            }
            let label = format!("{} repo_refs @{budget}", scenario.name());
            match call(&registry, &engine, "repo_refs", as_text(json!({"repoPath": path, "maxTokens": budget}))) {
                Ok(cut) => check_text_budget(&cut, budget, REFS_SECTIONS, &refs_totals, &label),
                Err(err) => assert!(err.starts_with("-32602") && budget < 200, "{label} text: {err}"),
            }
            match call(&registry, &engine, "repo_refs", json!({"repoPath": path, "maxTokens": budget})) {
                Ok(cut) => {
                    check_refs_counts(&cut.structured_value(), &refs_totals, &label);
                    cuts += usize::from(check_budget(&refs_full, &cut, budget, REFS_SECTIONS, &refs_totals, &label))
                }
                Err(err) => assert!(err.starts_with("-32602") && budget < 200, "{label}: {err}"),
            }
        }
    }
    assert!(cuts >= 5, "the small budgets must cut something ({cuts} cut results)");
}

/// `repo_refs` gives `counts` only beside a cut list (compact JSON: uncut, they are the lists' lengths), and then
/// git's exact totals.
fn check_refs_counts(envelope: &Value, totals: &[usize], label: &str) {
    let cut = REFS_SECTIONS.iter().any(|(section, _)| envelope.pointer(&format!("/omitted/{section}")).is_some());
    let counts = envelope["data"].get("counts");
    assert_eq!(counts.is_some(), cut, "{label}: counts only beside a cut list: {envelope}");
    for ((section, _), total) in REFS_SECTIONS.iter().zip(totals).filter(|_| cut) {
        let stated = envelope.pointer(&format!("/data/counts/{section}")).and_then(Value::as_u64).unwrap_or(0);
        assert_eq!(stated, *total as u64, "{label}: counts.{section}");
    }
}

#[test]
fn a_budget_under_the_floor_names_the_floor() {
    let (_fixture, engine, registry, path) = setup(Scenario::Dirty);
    let tool = registry.lookup("repo_status").expect("registered");
    let ctx = CallContext {
        engine: &engine,
        client_name: "budget-test",
        bridge: &Bridge::NONE,
        interrupt: &fluxgit_engine::Interrupt::new(),
        resolved: None,
    };
    let arguments = json!({"repoPath": path, "maxTokens": 20});
    let err = tool.call(&ctx, arguments.as_object().expect("object")).expect_err("below floor");
    assert_eq!(err.code, -32602);
    let data = err.data.expect("data");
    assert_eq!(data["reason"], "budget_below_floor");
    assert!(data["floor"].as_u64().expect("floor") > 20);
}
