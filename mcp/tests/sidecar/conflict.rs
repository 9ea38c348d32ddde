//! `conflict_read` and `repo_conflictPreflight`: budgets on real conflicts, and the real binary over stdio with bad
//! input (unknown refs, `maxFiles` 0, `maxBytesPerSide` over 1 MiB) answered and the server serving on.

use std::path::Path;

use fluxgit_engine::budget::count_tokens;
use fluxgit_engine::{Engine, Options};
use fluxgit_fixtures::{Scenario, facts, tree_digest};
use fluxgit_mcp_sidecar::tools::{CallContext, registry};
use serde_json::{Value, json};

use crate::support::{exchange, sidecar};

/// One server process on `requests` after a legacy `initialize`; returns the responses in order.
fn session(allowed_root: &Path, requests: &[Value]) -> Vec<Value> {
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "conflict-test", "version": "1"}}});
    let mut input = Vec::new();
    for message in std::iter::once(&initialize).chain(requests) {
        input.extend(message.to_string().bytes());
        input.push(b'\n');
    }
    let responses = exchange(sidecar(allowed_root, elsewhere.path(), &[]), input);
    assert_eq!(responses.len(), requests.len() + 1, "one response per request: {responses:?}");
    responses[1..].to_vec()
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

/// Checks every successful tool result against the `outputSchema` its tool advertises in `tools/list`.
fn check_output_schemas(tools: &Value, requests: &[Value], responses: &[Value]) {
    let tools = tools.as_array().expect("tools");
    for (request, response) in requests.iter().zip(responses) {
        let Some(structured) = response["result"].get("structuredContent") else { continue };
        let name = request["params"]["name"].as_str().expect("tool name");
        let tool = tools.iter().find(|tool| tool["name"] == name).expect("listed");
        let validator = jsonschema::validator_for(&tool["outputSchema"]).expect("the output schema compiles");
        let errors: Vec<String> = validator.iter_errors(structured).map(|error| error.to_string()).collect();
        assert!(errors.is_empty(), "{name}: output does not satisfy its schema: {errors:?}");
    }
}

fn data(response: &Value) -> &Value {
    assert_eq!(response["result"]["isError"], false, "{response}");
    let text = response["result"]["content"][0]["text"].as_str().expect("text content");
    let parsed: Value = serde_json::from_str(text).expect("the text is the envelope");
    assert_eq!(parsed, response["result"]["structuredContent"], "structuredContent is the same envelope");
    &response["result"]["structuredContent"]["data"]
}

#[test]
fn bad_input_gets_clear_errors_and_the_server_serves_on() {
    let fixture = fluxgit_fixtures::build(Scenario::MergeConflict);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let before = tree_digest(&root);
    let requests = [
        call(1, "repo_conflictPreflight", json!({"repoPath": repo, "targetRef": "no-such-branch"})),
        call(2, "repo_conflictPreflight", json!({"repoPath": repo, "targetRef": "topic", "currentRef": "nope~3"})),
        call(3, "repo_conflictPreflight", json!({"repoPath": repo, "targetRef": "--output=/tmp/x"})),
        call(4, "repo_conflictPreflight", json!({"repoPath": repo})),
        call(5, "conflict_read", json!({"repoPath": repo, "maxFiles": 0})),
        call(6, "conflict_read", json!({"repoPath": repo, "maxBytesPerSide": 1_048_577})),
        call(7, "conflict_read", json!({"repoPath": repo, "maxTokens": 10})),
        call(8, "conflict_read", json!({"repoPath": repo, "maxTokens": 500})),
        call(9, "conflict_read", json!({"repoPath": repo, "maxBytesPerSide": 1_048_576})),
        call(10, "repo_conflictPreflight", json!({"repoPath": repo, "targetRef": "topic", "currentRef": "main"})),
        json!({"jsonrpc": "2.0", "id": 11, "method": "tools/list"}),
        call(
            12,
            "repo_conflictPreflight",
            json!({"repoPath": repo, "targetRef": "topic", "currentRef": "main", "format": "text"}),
        ),
    ];
    let responses = session(&root, &requests);
    check_output_schemas(&responses[10]["result"]["tools"], &requests, &responses);
    let reason = |response: &Value| {
        assert_eq!(response["error"]["code"], -32602, "{response}");
        response["error"]["data"]["reason"].as_str().unwrap_or_default().to_owned()
    };
    assert_eq!(reason(&responses[0]), "unknown_revision");
    assert_eq!(reason(&responses[1]), "unknown_revision");
    assert_eq!(reason(&responses[2]), "invalid_revision");
    for (idx, what) in
        [(3, "targetRef missing"), (4, "maxFiles 0"), (5, "maxBytesPerSide over 1 MiB"), (6, "maxTokens")]
    {
        assert_eq!(responses[idx]["error"]["code"], -32602, "{what}: {}", responses[idx]);
        assert!(responses[idx]["error"]["data"]["errors"].is_array(), "{what}: schema violations listed");
    }
    // Served on: a tight budget, the largest cap, and a prediction.
    let tight = data(&responses[7]);
    assert_eq!(tight["conflict"], true);
    assert_eq!(tight["conflictedFiles"], 3);
    let text = responses[7]["result"]["content"][0]["text"].as_str().expect("text");
    assert!(count_tokens(text) <= 500, "within maxTokens");
    assert_eq!(data(&responses[8])["operation"], "merge");
    let prediction = data(&responses[9]);
    assert_eq!(prediction["prediction"], true);
    // Issue 22: the stopped merge is said first (MERGE_HEAD is there), with what ends it.
    assert!(fixture.path().join(".git/MERGE_HEAD").exists());
    let text = responses[9]["result"]["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("\"data\":{\"inProgress\":{\"operation\":\"merge\""), "said first: {text}");
    assert_eq!(prediction["inProgress"]["unmerged"], 3);
    assert!(prediction["inProgress"]["message"].as_str().expect("message").contains("git merge --abort"));
    assert_eq!(prediction["merge"]["status"], "conflicted");
    let paths: Vec<&str> =
        prediction["merge"]["conflicts"].as_array().expect("list").iter().filter_map(|c| c["path"].as_str()).collect();
    assert_eq!(paths, ["docs/guide.md", "src/main.c", "src/util.c"], "what the stopped merge shows");
    // Issue 55: in text too, the stopped merge is said first, in the JSON's words.
    let text = responses[11]["result"]["content"][0]["text"].as_str().expect("text");
    assert_eq!(text.lines().next(), prediction["inProgress"]["message"].as_str(), "said first: {text}");
    assert!(text.contains("\nmerge topic into main: conflicts in 3 files\n"), "{text}");
    assert_eq!(tree_digest(&root), before, "the repository is byte-identical");
}

#[test]
fn tools_are_listed_and_answer_over_stdio() {
    let fixture = fluxgit_fixtures::build(Scenario::Preflight);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let before = tree_digest(&root);
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        call(2, "repo_conflictPreflight", json!({"repoPath": repo, "targetRef": "rebase-theirs"})),
        call(3, "conflict_read", json!({"repoPath": repo})),
        call(
            4,
            "repo_conflictPreflight",
            json!({"repoPath": repo, "targetRef": "rename-modify-theirs", "currentRef": "rename-modify-ours"}),
        ),
    ];
    let responses = session(&root, &requests);
    check_output_schemas(&responses[0]["result"]["tools"], &requests[1..], &responses[1..]);
    let tools = responses[0]["result"]["tools"].as_array().expect("tools");
    for name in ["conflict_read", "repo_conflictPreflight"] {
        let tool = tools.iter().find(|tool| tool["name"] == name).unwrap_or_else(|| panic!("{name} listed"));
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{name}");
    }
    let prediction = data(&responses[1]);
    assert_eq!(prediction["current"]["ref"], "HEAD");
    assert_eq!(prediction["rebase"]["status"], "stops");
    assert_eq!(prediction["rebase"]["stopsAt"]["step"], 2);
    assert_eq!(prediction["rebase"]["stopsAt"]["total"], 3);
    assert_eq!(prediction["rebase"]["stopsAt"]["conflicts"][0]["kind"], "content");
    assert_eq!(data(&responses[3])["merge"]["conflicts"][0]["renamedFrom"], "src/util.c");
    let none = data(&responses[2]);
    assert_eq!(
        (none["conflict"].as_bool(), none["operation"].is_null()),
        (None, true),
        "compact: absent is false; {none}"
    );
    assert_eq!(tree_digest(&root), before, "the repository is byte-identical");
}

#[test]
fn conflict_read_fits_every_budget_and_counts_what_it_cut() {
    let (mut cuts, mut grown_checks) = (0, 0);
    for scenario in [Scenario::MergeConflict, Scenario::RebaseConflict, Scenario::CherryPickConflict] {
        let fixture = fluxgit_fixtures::build(scenario);
        let engine = Engine::new(Options { allowed_roots: vec![fixture.root().canonicalize().expect("root")] });
        let registry = registry().expect("registry");
        let tool = registry.lookup("conflict_read").expect("registered");
        let ctx = CallContext {
            engine: &engine,
            client_name: "budget-test",
            bridge: &fluxgit_mcp_sidecar::bridge::Bridge::NONE,
            interrupt: &fluxgit_engine::Interrupt::new(),
            resolved: None,
        };
        let repo = fixture.path().to_str().expect("utf-8");
        let run = |max_tokens: u64| {
            let arguments = json!({"repoPath": repo, "maxTokens": max_tokens, "sides": true});
            tool.call(&ctx, arguments.as_object().expect("object")).expect("conflict_read")
        };
        let full = run(200_000).structured_value();
        assert!(full.get("omitted").is_none(), "nothing cut at the largest budget");
        let unmerged = fixture.git(&["diff", "--name-only", "--diff-filter=U"]).lines().count();
        let contents = |value: &Value, field: &str| -> usize {
            let files = value["data"]["files"].as_array().expect("files");
            let sides = files.iter().flat_map(|file| ["base", "ours", "theirs"].map(|side| &file[side]));
            sides.filter(|side| side.get(field).is_some()).count()
        };
        let regions = |value: &Value| -> usize {
            let files = value["data"]["files"].as_array().expect("files");
            files.iter().map(|file| file["workTree"]["regions"].as_array().map_or(0, Vec::len)).sum()
        };
        for budget in [500, 800, 1_500, 4_000, 8_000] {
            let label = format!("{} @{budget}", scenario.name());
            let cut = run(budget);
            assert!(count_tokens(&cut.text) as u64 <= budget, "{label}: over budget");
            let value = &cut.structured_value();
            let omitted = |name: &str| value.pointer(&format!("/omitted/{name}")).and_then(Value::as_u64).unwrap_or(0);
            let files = value["data"]["files"].as_array().expect("files").len();
            assert_eq!(value["data"]["conflictedFiles"], unmerged, "{label}: exact count");
            assert_eq!(files as u64 + omitted("files"), unmerged as u64, "{label}: files");
            assert_eq!(regions(value) as u64 + omitted("markerRegions"), regions(&full) as u64, "{label}: regions");
            assert_eq!(
                contents(value, "content") as u64 + omitted("contents"),
                contents(&full, "content") as u64,
                "{label}"
            );
            cuts += usize::from(value.get("omitted").is_some());
            // With every file shown, one more side content would not have fitted.
            if omitted("files") == 0 && omitted("contents") > 0 {
                let mut grown = value.clone();
                let slot = grown["data"]["files"]
                    .as_array_mut()
                    .expect("files")
                    .iter_mut()
                    .enumerate()
                    .flat_map(|(idx, file)| {
                        ["ours", "theirs", "base"].map(|side| (idx, side, file[side].get("contentOmitted").is_some()))
                    })
                    .find(|(_, _, cut)| *cut)
                    .map(|(idx, side, _)| (idx, side))
                    .expect("a cut side");
                let side = &mut grown["data"]["files"][slot.0][slot.1];
                side.as_object_mut().expect("side").remove("contentOmitted");
                side["content"] = full["data"]["files"][slot.0][slot.1]["content"].clone();
                let left = omitted("contents") - 1;
                if left == 0 {
                    grown["omitted"].as_object_mut().expect("omitted").remove("contents");
                } else {
                    grown["omitted"]["contents"] = json!(left);
                }
                let tokens = count_tokens(&serde_json::to_string(&grown).expect("json"));
                assert!(tokens as u64 > budget, "{label}: one more content would have fitted");
                grown_checks += 1;
            }
        }
    }
    assert!(cuts >= 5, "small budgets must cut something ({cuts})");
    assert!(grown_checks >= 3, "contents were cut with every file shown ({grown_checks})");
}

/// Issue 55: `repo_conflictPreflight` takes `format: "text"`. Over the real binary, on every branch pair of the
/// Preflight fixture, the merge's verdict line counts and its `kind: path` lines name exactly the paths
/// `git merge-tree --write-tree` leaves conflicted, in its order, with the kinds and marker ranges of the JSON; the
/// rebase of HEAD onto `rebase-theirs` says where it stops; `structuredContent` stays the JSON answer.
#[test]
fn issue_55_preflight_text_names_the_paths_git_merge_tree_conflicts() {
    let fixture = fluxgit_fixtures::build(Scenario::Preflight);
    let root = fixture.root().canonicalize().expect("root");
    let repo = fixture.path().to_str().expect("utf-8").to_owned();
    let before = tree_digest(&root);
    let mut requests = Vec::new();
    for (idx, name) in facts::PREFLIGHT_PAIRS.iter().enumerate() {
        let arguments = json!({"repoPath": repo, "targetRef": format!("{name}-theirs"),
            "currentRef": format!("{name}-ours"), "format": "text"});
        requests.push(call(idx as i64, "repo_conflictPreflight", arguments.clone()));
        let mut as_json = arguments;
        as_json.as_object_mut().expect("object").remove("format");
        requests.push(call(100 + idx as i64, "repo_conflictPreflight", as_json));
    }
    requests.push(call(
        200,
        "repo_conflictPreflight",
        json!({"repoPath": repo, "targetRef": "rebase-theirs",
        "format": "text"}),
    ));
    let responses = session(&root, &requests);
    // Before git itself runs below: `git merge-tree --write-tree` writes the merged objects.
    assert_eq!(tree_digest(&root), before, "the repository is byte-identical");
    let text_of = |response: &Value| -> String {
        assert_eq!(response["result"]["isError"], false, "{response}");
        response["result"]["content"][0]["text"].as_str().expect("text").to_owned()
    };
    let mut conflicting_pairs = 0;
    for (idx, name) in facts::PREFLIGHT_PAIRS.iter().enumerate() {
        let (ours, theirs) = (format!("{name}-ours"), format!("{name}-theirs"));
        let (text_answer, json_answer) = (&responses[2 * idx], &responses[2 * idx + 1]);
        let text = text_of(text_answer);
        assert!(serde_json::from_str::<Value>(&text).is_err(), "{name}: the text is not JSON:\n{text}");
        assert_eq!(text_answer["result"]["structuredContent"], json_answer["result"]["structuredContent"], "{name}");
        let merge = &data(json_answer)["merge"];
        let json_text = json_answer["result"]["content"][0]["text"].as_str().expect("the JSON text");
        assert!(count_tokens(&text) < count_tokens(json_text), "{name}: the text is smaller than the JSON\n{text}");

        let git =
            fixture.git_raw(&["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", &ours, &theirs]);
        let conflicted = git.status.code() == Some(1);
        assert!(conflicted || git.status.success(), "{name}: merge-tree failed: {git:?}");
        let git_paths: Vec<String> = git
            .stdout
            .split(|byte| *byte == 0)
            .skip(1)
            .filter(|path| !path.is_empty())
            .map(|path| crate::formats::git_quoted(std::str::from_utf8(path).expect("utf-8 path"), true))
            .collect();

        let lines: Vec<&str> = text.lines().collect();
        let verdict = format!("merge {theirs} into {ours}: ");
        let merge_at = lines.iter().position(|line| line.starts_with(&verdict)).unwrap_or_else(|| panic!("{text}"));
        let rebase_at = lines.iter().position(|line| line.starts_with("rebase ")).unwrap_or_else(|| panic!("{text}"));
        let files = match git_paths.len() {
            1 => "1 file".to_owned(),
            count => format!("{count} files"),
        };
        let expected = if conflicted { format!("conflicts in {files}") } else { "clean".to_owned() };
        assert_eq!(lines[merge_at], format!("{verdict}{expected}"), "{name}:\n{text}");
        // `kind: path [from path] [markers a-b ...]`, paths quoted so that each is one word.
        let listed = &lines[merge_at + 1..rebase_at];
        let paths: Vec<&str> = listed
            .iter()
            .map(|line| line.split_once(": ").expect("kind: path").1.split(' ').next().expect("a path"))
            .collect();
        assert_eq!(paths, git_paths, "{name}: the paths git merge-tree leaves conflicted\n{text}");
        conflicting_pairs += usize::from(conflicted);
        for (line, conflict) in listed.iter().zip(merge["conflicts"].as_array().into_iter().flatten()) {
            assert!(line.starts_with(&format!("{}: ", conflict["kind"].as_str().expect("kind"))), "{name}: {line}");
            if let Some(from) = conflict["renamedFrom"].as_str() {
                assert!(
                    line.contains(&format!(" from {} ", crate::formats::git_quoted(from, true)))
                        || line.ends_with(&format!(" from {}", crate::formats::git_quoted(from, true))),
                    "{name}: {line}"
                );
            }
            let ranges: Vec<String> = conflict["regions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|region| format!("{}-{}", region["start"], region["end"]))
                .collect();
            match ranges.is_empty() {
                true => assert!(!line.contains(" markers "), "{name}: {line}"),
                false => assert!(line.ends_with(&format!(" markers {}", ranges.join(" "))), "{name}: {line}"),
            }
        }
    }
    assert_eq!(conflicting_pairs, facts::PREFLIGHT_PAIRS.len() - 1, "every pair but `clean` conflicts");

    // The rebase of the checked-out `rebase-ours` stops at its second commit on `src/main.c`.
    let text = text_of(&responses[2 * facts::PREFLIGHT_PAIRS.len()]);
    let lines: Vec<&str> = text.lines().collect();
    let stop = lines.iter().position(|line| line.starts_with("rebase HEAD onto rebase-theirs: ")).expect("rebase");
    let second = fixture.git(&["rev-parse", "rebase-ours~1"]);
    assert_eq!(
        lines[stop],
        format!(
            "rebase HEAD onto rebase-theirs: stops at 2/3 {} rebase: second, conflicting, conflicts in 1 file",
            &second.trim()[..12]
        ),
        "{text}"
    );
    assert!(lines[stop + 1].starts_with("content: src/main.c markers "), "{text}");
    assert!(lines.contains(&format!("HEAD {} rebase: third, clean", &facts::PREFLIGHT_HEAD[..12]).as_str()), "{text}");
}
