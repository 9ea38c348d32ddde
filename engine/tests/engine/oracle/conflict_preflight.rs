//! `repo.conflictPreflight` vs `git merge-tree --write-tree` and a real `git rebase`, on every branch pair of the
//! Preflight fixture.

use std::collections::BTreeMap;

use fluxgit_engine::conflict::preflight::{MergeStatus, Options, Preflight, RebaseStatus};
use fluxgit_engine::conflict::{ConflictKind, markers};
use fluxgit_fixtures::{Fixture, Scenario, facts, tree_digest};

use super::{open, records, stage_lines};

/// Runs the preflight of every pair (`<name>-theirs` into `<name>-ours`), checking the digest after each.
fn predict_all(fixture: &Fixture) -> BTreeMap<&'static str, Preflight> {
    let (engine, repo) = open(fixture);
    let mut out = BTreeMap::new();
    for name in facts::PREFLIGHT_PAIRS {
        let before = tree_digest(fixture.root());
        let result = engine
            .conflict_preflight(&repo, &format!("{name}-theirs"), &format!("{name}-ours"), &Options::default())
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        assert!(result.omitted.is_empty(), "{name}: {:?}", result.omitted);
        assert_eq!(tree_digest(fixture.root()), before, "{name}: the preflight changed the repository");
        out.insert(name, result.data);
    }
    out
}

#[test]
fn merge_prediction_agrees_with_merge_tree_on_every_pair() {
    let fixture = fluxgit_fixtures::build(Scenario::Preflight);
    let predictions = predict_all(&fixture);
    let expected_kinds: BTreeMap<&str, Vec<(&str, ConflictKind)>> = BTreeMap::from([
        ("clean", vec![]),
        ("content", vec![("src/main.c", ConflictKind::Content)]),
        ("add-add", vec![("config/settings.toml", ConflictKind::AddAdd)]),
        ("modify-delete", vec![("docs/guide.md", ConflictKind::ModifyDelete)]),
        ("rename-modify", vec![("src/greet.c", ConflictKind::Content)]),
        (
            "rename-rename",
            vec![
                ("docs/guide.md", ConflictKind::RenameRename),
                ("docs/manual.md", ConflictKind::RenameRename),
                ("guide.md", ConflictKind::RenameRename),
            ],
        ),
        ("rename-delete", vec![("notes/todo.txt", ConflictKind::RenameDelete)]),
        ("binary", vec![("assets/logo.bin", ConflictKind::Binary)]),
        ("submodule", vec![("vendor/lib", ConflictKind::Submodule)]),
        ("criss-cross", vec![("notes/criss-cross.txt", ConflictKind::Content)]),
        ("rebase", vec![("src/main.c", ConflictKind::Content)]),
    ]);
    for (name, prediction) in &predictions {
        let (ours, theirs) = (format!("{name}-ours"), format!("{name}-theirs"));
        assert!(prediction.prediction, "{name}: marked as a prediction");
        assert_eq!(prediction.current.commit.sha, fixture.git(&["rev-parse", &ours]).trim(), "{name}");

        // Verdict and paths, as the issue asks: `--name-only`.
        let names =
            fixture.git_raw(&["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", &ours, &theirs]);
        let names_out = records(&names.stdout);
        let git_conflicted = names.status.code() == Some(1);
        assert!(names.status.code() == Some(0) || git_conflicted, "{name}: merge-tree failed: {names:?}");
        assert_eq!(prediction.merge.status == MergeStatus::Conflicted, git_conflicted, "{name}: verdict");
        let engine_paths: Vec<&str> = prediction.merge.conflicts.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(engine_paths, names_out[1..].iter().map(String::as_str).collect::<Vec<_>>(), "{name}: paths");
        assert_eq!(prediction.merge.conflict_count, engine_paths.len(), "{name}: count");
        let kinds: Vec<(&str, ConflictKind)> =
            prediction.merge.conflicts.iter().map(|c| (c.path.as_str(), c.kind)).collect();
        assert_eq!(kinds, expected_kinds[name], "{name}: kinds");

        // The markers of the merged text where git wrote them.
        let full = fixture.git_raw(&["merge-tree", "--write-tree", "--no-messages", "-z", &ours, &theirs]);
        let lines = records(&full.stdout);
        for conflict in &prediction.merge.conflicts {
            if matches!(conflict.kind, ConflictKind::Content | ConflictKind::AddAdd) {
                let blob = fixture.git_raw(&["cat-file", "blob", &format!("{}:{}", lines[0], conflict.path)]);
                let git_regions = markers::regions(&blob.stdout, markers::DEFAULT_MARKER_SIZE);
                assert!(!git_regions.is_empty(), "{name}: git wrote markers into {}", conflict.path);
                assert_eq!(conflict.regions, git_regions, "{name}: marker regions of {}", conflict.path);
                assert_eq!(conflict.region_count, git_regions.len());
            }
        }
    }
    let rename = &predictions["rename-modify"].merge.conflicts[0];
    assert_eq!(rename.renamed_from.as_deref(), Some("src/util.c"), "the rename source is reported");
    assert_eq!(predictions["criss-cross"].merge_bases.len(), 2, "a criss-cross has two merge bases");
    let bases = fixture.git(&["merge-base", "--all", "criss-cross-ours", "criss-cross-theirs"]);
    let mut git_bases: Vec<&str> = bases.lines().collect();
    git_bases.sort_unstable();
    let mut engine_bases: Vec<&str> = predictions["criss-cross"].merge_bases.iter().map(String::as_str).collect();
    engine_bases.sort_unstable();
    assert_eq!(engine_bases, git_bases);
}

#[test]
fn rebase_prediction_agrees_with_git_rebase_on_every_pair() {
    let fixture = fluxgit_fixtures::build(Scenario::Preflight);
    let predictions = predict_all(&fixture);
    for (name, prediction) in &predictions {
        let (ours, theirs) = (format!("{name}-ours"), format!("{name}-theirs"));
        let range = format!("{theirs}..{ours}");
        let count =
            |flag: &str| fixture.git(&["rev-list", "--count", flag, &range]).trim().parse::<usize>().expect("count");
        let rebase = &prediction.rebase;
        assert_eq!(rebase.commits, count("--no-merges"), "{name}: commits to replay");
        assert_eq!(rebase.skipped_merges, count("--merges"), "{name}: merges left out");

        let run = fixture.git_raw(&["rebase", &theirs, &ours]);
        let stopped = fixture.git_dir().join("rebase-merge").is_dir();
        assert_eq!(run.status.success(), !stopped, "{name}: {run:?}");
        assert_eq!(rebase.status == RebaseStatus::Stops, stopped, "{name}: rebase verdict");
        if let Some(stop) = &rebase.stops_at {
            let read = |file: &str| std::fs::read_to_string(fixture.git_dir().join(file)).expect("state file");
            assert_eq!(stop.step.to_string(), read("rebase-merge/msgnum").trim(), "{name}: step");
            assert_eq!(stop.total.to_string(), read("rebase-merge/end").trim(), "{name}: total");
            assert_eq!(stop.commit.sha, read("REBASE_HEAD").trim(), "{name}: stopping commit");
            let unmerged = stage_lines(&records(&fixture.git_raw(&["ls-files", "-u", "-z"]).stdout));
            let mut paths: Vec<&str> = unmerged.iter().map(|(path, ..)| path.as_str()).collect();
            paths.dedup();
            let engine_paths: Vec<&str> = stop.conflicts.iter().map(|c| c.path.as_str()).collect();
            assert_eq!(engine_paths, paths, "{name}: conflicting paths at the stop");
            fixture.git(&["rebase", "--abort"]);
        }
    }
    let stop = predictions["rebase"].rebase.stops_at.as_ref().expect("the rebase pair stops");
    assert_eq!((stop.step, stop.total), (2, 3));
    assert_eq!(stop.commit.subject, "rebase: second, conflicting");
    assert_eq!(predictions["criss-cross"].rebase.skipped_merges, 1);
}

#[test]
fn defaults_fast_forward_up_to_date_and_unrelated() {
    let fixture = fluxgit_fixtures::build(Scenario::Preflight);
    let (engine, repo) = open(&fixture);
    let before = tree_digest(fixture.root());
    let options = Options::default();
    let head = engine.conflict_preflight(&repo, "rebase-theirs", "HEAD", &options).expect("preflight").data;
    assert_eq!(head.current.reference, "HEAD");
    assert_eq!(head.current.commit.sha, facts::PREFLIGHT_HEAD);
    let region = &head.merge.conflicts[0].regions[0];
    assert_eq!((region.start, region.end, region.ours.count, region.theirs.count), (5, 9, 1, 1));
    assert_eq!(region.ours_label.as_deref(), Some("HEAD"));
    assert_eq!(region.theirs_label.as_deref(), Some("rebase-theirs"));

    let up_to_date = engine.conflict_preflight(&repo, "main", "HEAD", &options).expect("preflight").data;
    assert_eq!((up_to_date.merge.status, up_to_date.rebase.status), (MergeStatus::UpToDate, RebaseStatus::UpToDate));
    let forward = engine.conflict_preflight(&repo, "HEAD", "main", &options).expect("preflight").data;
    assert_eq!((forward.merge.status, forward.rebase.status), (MergeStatus::FastForward, RebaseStatus::FastForward));
    let capped =
        engine.conflict_preflight(&repo, "rename-rename-theirs", "rename-rename-ours", &Options { max_paths: 1 });
    let capped = capped.expect("preflight");
    assert_eq!((capped.data.merge.conflict_count, capped.data.merge.conflicts.len()), (3, 1));
    let omitted = serde_json::to_string(&capped.omitted).expect("json");
    assert_eq!(omitted, r#"{"mergeConflicts":2,"rebaseConflicts":2}"#, "the rebase stops on the same rename");
    assert_eq!(tree_digest(fixture.root()), before, "preflights changed the repository");
    for (spec, reason) in [("no-such-branch", "unknown_revision"), ("--all", "invalid_revision")] {
        match engine.conflict_preflight(&repo, spec, "HEAD", &options) {
            Err(fluxgit_engine::Error::Invalid { reason: got, .. }) => assert_eq!(got.as_str(), reason, "{spec}"),
            other => panic!("{spec}: {other:?}"),
        }
    }

    // Unrelated histories: an orphan branch.
    fixture.git(&["checkout", "-q", "--orphan", "lonely"]);
    fixture.git(&["commit", "-q", "-m", "lonely root"]);
    let (engine, repo) = open(&fixture);
    let unrelated = engine.conflict_preflight(&repo, "main", "lonely", &options).expect("preflight").data;
    assert_eq!(unrelated.merge.status, MergeStatus::UnrelatedHistories);
    assert!(unrelated.merge_bases.is_empty());
    assert!(!fixture.git_raw(&["merge-tree", "--write-tree", "lonely", "main"]).status.success(), "git refuses too");
}

#[test]
fn merge_drivers_are_never_run_and_objects_stay_in_memory() {
    let fixture = fluxgit_fixtures::build(Scenario::Preflight);
    let marker = fixture.root().join("driver.marker");
    let driver = format!("touch '{}'; exit 1", marker.display());
    fixture.git(&["config", "merge.evil.driver", &driver]);
    std::fs::create_dir_all(fixture.git_dir().join("info")).expect("info dir");
    std::fs::write(fixture.git_dir().join("info/attributes"), "* merge=evil\n").expect("info/attributes");
    let objects_before = fixture.git(&["count-objects", "-v"]);
    let before = tree_digest(fixture.root());
    let (engine, repo) = open(&fixture);
    let result = engine.conflict_preflight(&repo, "content-theirs", "content-ours", &Options::default()).expect("ok");
    assert_eq!(tree_digest(fixture.root()), before, "nothing written, no object either");
    assert!(!marker.exists(), "the repository's merge driver ran");
    assert_eq!(result.data.merge.status, MergeStatus::Conflicted, "built-in text merge stands in");
    assert!(result.data.caveats.iter().any(|caveat| caveat.contains("\"evil\"")), "{:?}", result.data.caveats);
    assert_eq!(fixture.git(&["count-objects", "-v"]), objects_before);
    // git itself runs the driver: the trap is armed.
    let _ = fixture.git_raw(&["merge-tree", "--write-tree", "content-ours", "content-theirs"]);
    assert!(marker.exists(), "git merge-tree runs the configured driver");
}

#[test]
fn filters_hooks_and_fsmonitor_never_run() {
    let fixture = fluxgit_fixtures::build(Scenario::FsMonitor);
    let traps = fixture.traps().expect("traps").clone();
    // Two sides changing the same filtered `*.txt` file; git springs the traps while building them.
    fixture.git(&["checkout", "-q", "-b", "evil-ours"]);
    fixture.git(&["commit", "-q", "-am", "ours: dirty changes"]);
    fixture.git(&["checkout", "-q", "-b", "evil-theirs", "main"]);
    std::fs::write(fixture.path().join("notes/todo list.txt"), "- ship 2.0\n").expect("write");
    fixture.git(&["commit", "-q", "-am", "theirs: another todo"]);
    for marker in [&traps.fsmonitor_marker, &traps.filter_marker, &traps.hook_marker] {
        let _ = std::fs::remove_file(marker);
    }
    let before = tree_digest(fixture.root());
    let (engine, repo) = open(&fixture);
    let result = engine.conflict_preflight(&repo, "evil-theirs", "evil-ours", &Options::default()).expect("ok").data;
    assert_eq!(tree_digest(fixture.root()), before, "nothing written");
    assert!(traps.sprung().is_empty(), "a repository-configured program ran: {:?}", traps.sprung());
    let paths: Vec<&str> = result.merge.conflicts.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["notes/todo list.txt"]);
}

/// Issue 22: during a stopped operation the preflight says so first, as the state files git wrote show it.
#[test]
fn an_operation_in_progress_is_said_first() {
    use fluxgit_engine::conflict::state::Activity;
    let cases = [
        (Scenario::MergeConflict, "topic", Some((Activity::Merge, "MERGE_HEAD", "git merge --abort"))),
        (Scenario::RebaseConflict, "main", Some((Activity::Rebase, "rebase-merge", "git rebase --abort"))),
        (
            Scenario::CherryPickConflict,
            "picks",
            Some((Activity::CherryPick, "CHERRY_PICK_HEAD", "git cherry-pick --abort")),
        ),
        (Scenario::StashPopConflict, "HEAD", Some((Activity::StashApply, "", "git reset --merge"))),
        (Scenario::Clean, "HEAD~1", None),
    ];
    for (scenario, target, expected) in cases {
        let fixture = fluxgit_fixtures::build(scenario);
        let (engine, repo) = open(&fixture);
        let result = engine.conflict_preflight(&repo, target, "HEAD", &Options::default()).expect("predicts");
        let unmerged: std::collections::BTreeSet<String> =
            stage_lines(&records(&fixture.git_raw(&["ls-files", "-u", "-z"]).stdout))
                .into_iter()
                .map(|(path, ..)| path)
                .collect();
        let json = serde_json::to_string(&result.data).expect("serialises");
        match expected {
            None => {
                assert!(result.data.in_progress.is_none(), "{scenario:?}");
                assert!(!json.contains("inProgress"), "{scenario:?}: left out when null");
            }
            Some((operation, state_file, undo)) => {
                let found = result.data.in_progress.as_ref().unwrap_or_else(|| panic!("{scenario:?}: said"));
                assert!(json.starts_with("{\"inProgress\":"), "{scenario:?}: said first: {json}");
                assert_eq!(found.operation, operation, "{scenario:?}");
                assert_eq!(found.unmerged, unmerged.len(), "{scenario:?}: git ls-files -u");
                assert!(found.message.contains(undo), "{scenario:?}: {}", found.message);
                // The state file git wrote is there, and is what the answer names (a stash pop writes none).
                let exists = !state_file.is_empty() && {
                    let git_path = fixture.git(&["rev-parse", "--git-path", state_file]);
                    fixture.path().join(git_path.trim()).exists()
                };
                assert_eq!(exists, !state_file.is_empty(), "{scenario:?}");
                if exists {
                    assert!(found.evidence.starts_with(state_file), "{scenario:?}: {}", found.evidence);
                }
            }
        }
    }
}
