//! The fleet over stdio through the real binary: `tools/list` lists `fleet_radar` and `fleet_digest`, answers fit
//! their outputSchemas and budgets, bad repositories are entries and bad arguments JSON-RPC errors, the
//! `fleet add|list|remove` subcommands edit the registry the tools read, and a commit shows at once.

use serde_json::{Value, json};

use crate::support::{Running, assert_fits_output_schema, initialize, sidecar, tool_call};
use fluxgit_fixtures::fleet::{self, FLEET_NOW, Kind};

fn start(fleet: &fleet::Fleet, home: &std::path::Path) -> Running {
    let mut command = sidecar(fleet.root(), home, &[]);
    command.env("FLUXGIT_NOW_EPOCH_SECS", FLEET_NOW.to_string());
    let mut server = Running::start(command);
    server.request(&initialize("fleet-test", "1"));
    server
}

fn envelope(response: &Value) -> Value {
    let text = response["result"]["content"][0]["text"].as_str().expect("a text result");
    serde_json::from_str(text).expect("the text is JSON")
}

fn tokens(response: &Value) -> usize {
    fluxgit_engine::budget::count_tokens(response["result"]["content"][0]["text"].as_str().expect("text"))
}

#[test]
fn fleet_tools_over_stdio() {
    let fleet = fleet::build_fleet();
    let home = tempfile::tempdir().expect("temp dir");
    let mut server = start(&fleet, home.path());
    let listed = server.request(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().expect("tools").iter().filter_map(|tool| tool["name"].as_str()).collect();
    assert!(names.contains(&"fleet_radar") && names.contains(&"fleet_digest"), "{names:?}");

    let paths: Vec<String> = fleet.members().iter().map(|member| member.path.display().to_string()).collect();
    let radar = server.request(&tool_call(2, "fleet_radar", json!({"repoPaths": paths})));
    assert_eq!(radar["result"]["isError"], false, "{radar}");
    assert_fits_output_schema("fleet_radar", &radar);
    let data = envelope(&radar)["data"].clone();
    assert_eq!(data["repositories"], Kind::ALL.len());
    assert_eq!(
        data["counts"],
        json!({"error": 2, "conflicts": 1, "operation": 1, "detached": 1, "behind": 1,
        "dirty": 1, "unpushed": 1, "stale": 1, "clean": 2})
    );
    assert_eq!(data["queue"][2]["state"], "conflicts");
    assert!(envelope(&radar).get("repoPath").is_none());
    assert!(tokens(&radar) <= 4000);

    let labelled = json!([{"repoPath": paths[0], "label": "first"}, {"repoPath": "/nowhere/at/all"}]);
    let radar = server.request(&tool_call(3, "fleet_radar", json!({"repositories": labelled, "maxTokens": 200})));
    assert_fits_output_schema("fleet_radar", &radar);
    assert!(tokens(&radar) <= 200);
    let data = envelope(&radar)["data"].clone();
    assert_eq!(data["counts"]["error"], 1, "a path outside the roots is an entry, not a failed call");

    for (id, arguments) in [
        (4, json!({"repoPaths": ["relative/path"]})),
        (5, json!({"repoPaths": [paths[0]], "repositories": []})),
        (6, json!({"maxRepos": 0})),
        (7, json!({"maxTokens": 10})),
    ] {
        let refused = server.request(&tool_call(id, "fleet_radar", arguments.clone()));
        assert_eq!(refused["error"]["code"], -32602, "{arguments}: {refused}");
    }
    let refused = server.request(&tool_call(8, "fleet_digest", json!({})));
    assert_eq!(refused["error"]["code"], -32602, "sinceMs is required: {refused}");

    let digest = server.request(&tool_call(9, "fleet_digest", json!({"sinceMs": 0, "repoPaths": paths})));
    assert_eq!(digest["result"]["isError"], false, "{digest}");
    assert_fits_output_schema("fleet_digest", &digest);
    let data = envelope(&digest)["data"].clone();
    assert_eq!(data["unreadable"].as_array().map(Vec::len), Some(2));
    let total = data["total"].as_u64().expect("total");
    assert!(total > 10 && tokens(&digest) <= 4000);

    // A commit shows at once in both tools.
    let clean = fleet.member(Kind::Clean);
    std::fs::write(clean.join("x.txt"), "x\n").expect("writable");
    fleet.git(clean, &["add", "x.txt"]);
    fleet.git(clean, &["commit", "-q", "-m", "over stdio"]);
    let clean_path = clean.display().to_string();
    let radar = server.request(&tool_call(10, "fleet_radar", json!({"repoPaths": [clean_path]})));
    assert_eq!(envelope(&radar)["data"]["queue"][0]["state"], "unpushed");
    let digest = server.request(&tool_call(11, "fleet_digest", json!({"sinceMs": 0, "repoPaths": paths})));
    let data = envelope(&digest)["data"].clone();
    assert_eq!(data["total"].as_u64(), Some(total + 1));
    assert_eq!(data["events"][0]["message"], "commit: over stdio");
    let (status, stderr) = server.finish();
    assert!(status.success(), "{stderr}");
}

#[test]
fn fleet_subcommands_edit_the_registry_the_tools_read() {
    let fleet = fleet::build_fleet();
    let home = tempfile::tempdir().expect("temp dir");
    let run = |args: &[&str]| {
        let output = sidecar(fleet.root(), home.path(), args).output().expect("runs");
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned())
    };
    let root = fleet.root().display().to_string();
    let (code, out) = run(&["fleet", "add", "--scan", &root]);
    assert_eq!(code, Some(0), "{out}");
    // Every work tree below the root: the nine repositories (not the deleted one nor the plain directory).
    assert_eq!(out.lines().filter(|line| line.starts_with("added: ")).count(), 9, "{out}");
    let (code, out) = run(&["fleet", "add", "/", &fleet.member(Kind::NotARepository).display().to_string()]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("outside_allowed_roots") && out.contains("not_a_repository"), "{out}");
    let dirty = fleet.member(Kind::Dirty).display().to_string();
    let (code, out) = run(&["fleet", "add", "--label", "the dirty one", &dirty]);
    assert_eq!(code, Some(0), "{out}");
    let (_, listing) = run(&["fleet", "list"]);
    assert_eq!(listing.lines().count(), 9, "{listing}");
    assert!(listing.contains(&format!("{dirty} [the dirty one]\tadded\tok")), "{listing}");
    let (code, out) = run(&["fleet", "remove", &fleet.member(Kind::Stale).display().to_string()]);
    assert_eq!(code, Some(0), "{out}");
    let (code, _) = run(&["fleet", "remove", "/not/registered"]);
    assert_eq!(code, Some(1));

    let mut server = start(&fleet, home.path());
    let radar = server.request(&tool_call(1, "fleet_radar", json!({})));
    assert_fits_output_schema("fleet_radar", &radar);
    let data = envelope(&radar)["data"].clone();
    assert_eq!((data["repositories"].as_u64(), data["fromRegistry"].as_bool()), (Some(8), Some(true)));
    assert!(data["counts"].get("stale").is_none(), "removed: {data}");
    let labelled = data["queue"].as_array().expect("queue").iter().find(|entry| entry["repoPath"] == dirty.as_str());
    assert_eq!(labelled.map(|entry| entry["label"].clone()), Some(json!("the dirty one")));
    let digest = server.request(&tool_call(2, "fleet_digest", json!({"sinceMs": 0, "maxEvents": 3})));
    assert_fits_output_schema("fleet_digest", &digest);
    let data = envelope(&digest)["data"].clone();
    assert_eq!((data["repositories"].as_u64(), data["truncated"].as_bool()), (Some(8), Some(true)));
    assert_eq!(data["events"].as_array().map(Vec::len), Some(3));
    let (status, stderr) = server.finish();
    assert!(status.success(), "{stderr}");
}

/// A repository a tool call named is recorded in the registry by a writer thread, off the call's path: a fleet
/// call of the same server lists it at once, and `fleet list` does after the server ended.
#[test]
fn a_repository_seen_in_a_call_is_registered() {
    let fleet = fleet::build_fleet();
    let home = tempfile::tempdir().expect("temp dir");
    let mut server = start(&fleet, home.path());
    let clean = fleet.member(Kind::Clean).display().to_string();
    let brief = server.request(&tool_call(1, "repo_brief", json!({"repoPath": clean})));
    assert_eq!(brief["result"]["isError"], false, "{brief}");
    let radar = server.request(&tool_call(2, "fleet_radar", json!({})));
    let data = envelope(&radar)["data"].clone();
    assert_eq!((data["repositories"].as_u64(), data["fromRegistry"].as_bool()), (Some(1), Some(true)), "{data}");
    assert_eq!(data["queue"][0]["repoPath"], clean.as_str());
    let (status, stderr) = server.finish();
    assert!(status.success(), "{stderr}");
    let listed = sidecar(fleet.root(), home.path(), &["fleet", "list"]).output().expect("runs");
    let listing = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(listing.lines().collect::<Vec<_>>(), [format!("{clean}\tseen\tok")], "{listing}");
}

#[test]
fn fleet_tools_in_text_carry_the_json_facts_within_budget() {
    let fleet = fleet::build_fleet();
    let home = tempfile::tempdir().expect("temp dir");
    let mut server = start(&fleet, home.path());
    let paths: Vec<String> = fleet.members().iter().map(|member| member.path.display().to_string()).collect();
    let text_of = |response: &Value| response["result"]["content"][0]["text"].as_str().expect("text").to_owned();

    let json_radar = server.request(&tool_call(1, "fleet_radar", json!({"repoPaths": paths})));
    let text_radar = server.request(&tool_call(2, "fleet_radar", json!({"repoPaths": paths, "format": "text"})));
    let data = envelope(&json_radar)["data"].clone();
    assert_eq!(text_radar["result"]["structuredContent"]["data"], data, "structuredContent stays JSON");
    let text = text_of(&text_radar);
    let first = text.lines().next().expect("count line");
    assert!(first.starts_with(&format!("{} repositories", data["repositories"])), "{first}");
    for (state, count) in data["counts"].as_object().expect("counts") {
        assert!(first.contains(&format!("{count} {state}")), "{state} {count} in {first}");
    }
    // Every repository lies in the fleet's folder: the count line names it, each line the path below it.
    let base = first.split_once(" under ").and_then(|(_, rest)| rest.split_once(": ")).map(|(base, _)| base);
    let base = base.expect("the common folder is named");
    let queue = data["queue"].as_array().expect("queue");
    let mut clean_reasons = std::collections::BTreeSet::new();
    for entry in queue {
        let (state, reason) = (entry["state"].as_str().expect("state"), entry["reason"].as_str().expect("reason"));
        let path = entry["repoPath"].as_str().expect("path");
        let name = path.strip_prefix(base).and_then(|rest| rest.strip_prefix('/')).expect("below the folder");
        if state != "clean" {
            let expected = format!("{state} {name}: {reason}");
            assert!(text.lines().any(|line| line == expected), "{expected} in {text}");
            continue;
        }
        // The clean ones share a line per reason, a stash note after the name.
        let (shared, named) = match reason.rsplit_once(", ") {
            Some((shared, note)) if note.ends_with("stash") || note.ends_with("stashes") => {
                (shared, format!("{name} ({note})"))
            }
            _ => (reason, name.to_owned()),
        };
        clean_reasons.insert(shared);
        let line = text.lines().find(|line| line.starts_with(&format!("{shared}: "))).expect("a clean line");
        assert!(line[shared.len() + 2..].split(", ").any(|item| item == named), "{named} in {line}");
    }
    let others = queue.iter().filter(|entry| entry["state"] != "clean").count();
    assert_eq!(text.lines().count(), 1 + others + clean_reasons.len(), "{text}");
    let cut =
        server.request(&tool_call(3, "fleet_radar", json!({"repoPaths": paths, "format": "text", "maxTokens": 200})));
    let cut_text = text_of(&cut);
    assert!(tokens(&cut) <= 200, "{cut_text}");
    let shown = cut["result"]["structuredContent"]["data"]["queue"].as_array().expect("queue").len();
    if shown < queue.len() {
        assert!(cut_text.ends_with(&format!("... {} more repositories\n", queue.len() - shown)), "{cut_text}");
    }

    let json_digest = server.request(&tool_call(4, "fleet_digest", json!({"sinceMs": 0, "repoPaths": paths})));
    let text_digest =
        server.request(&tool_call(5, "fleet_digest", json!({"sinceMs": 0, "repoPaths": paths, "format": "text"})));
    let data = envelope(&json_digest)["data"].clone();
    let text = text_of(&text_digest);
    assert!(
        text.starts_with(&format!("{} movements in {} repositories\n", data["total"], data["repositories"])),
        "{text}"
    );
    for event in data["events"].as_array().expect("events").iter().take(5) {
        let message = event["message"].as_str().expect("message");
        let at = event["at"].as_str().expect("at");
        assert!(text.lines().any(|line| line.starts_with(at) && line.ends_with(message)), "{event} in {text}");
    }
    assert_eq!(text.lines().filter(|line| line.starts_with("unreadable ")).count(), 2, "{text}");
    let cut = server.request(&tool_call(
        6,
        "fleet_digest",
        json!({"sinceMs": 0, "repoPaths": paths, "format": "text", "maxTokens": 200}),
    ));
    assert!(tokens(&cut) <= 200, "{}", text_of(&cut));
    assert!(text_of(&cut).contains(" more movements\n"), "{}", text_of(&cut));
    let (status, stderr) = server.finish();
    assert!(status.success(), "{stderr}");
}

/// A FIFO in place of the registry file: `fleet list` and `fleet add` refuse it by name within 5 s (a plain read
/// would wait for a writer for ever), and leave it in place.
#[test]
fn fleet_subcommands_refuse_a_fifo_registry_at_once() {
    use std::os::unix::fs::FileTypeExt as _;
    use std::time::{Duration, Instant};
    let fleet = fleet::build_fleet();
    let home = tempfile::tempdir().expect("temp dir");
    let file = home.path().join("run/fleet/registry.json");
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    let status = std::process::Command::new("mkfifo").arg(&file).status().expect("mkfifo runs");
    assert!(status.success());
    let clean = fleet.member(Kind::Clean).display().to_string();
    for args in [vec!["fleet", "list"], vec!["fleet", "add", clean.as_str()]] {
        let mut child = sidecar(fleet.root(), home.path(), &args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("runs");
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if started.elapsed() >= Duration::from_secs(5) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{args:?} did not answer within 5 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr).expect("stderr");
        assert_eq!(status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("registry.json is a FIFO, not a regular file: not read"), "{args:?}: {stderr}");
    }
    assert!(std::fs::symlink_metadata(&file).expect("still there").file_type().is_fifo());
}
