//! `conflict.read` vs `git ls-files -u`, `git status --porcelain=v2`, `git cat-file` and the work-tree markers
//! during a stopped merge, rebase, cherry-pick and stash pop.

use fluxgit_engine::conflict::ConflictKind;
use fluxgit_engine::conflict::read::{ConflictFile, ConflictRead, FileStatus, Options, SideBlob};
use fluxgit_engine::conflict::state::Activity;
use fluxgit_engine::{Budgeted, budget};
use fluxgit_fixtures::{Fixture, Scenario, facts, tree_digest};

use super::{open, records, stage_lines};
use crate::UNLIMITED;

/// Reads the conflict with `options` and no budget cut, checking the repository is byte-identical afterwards.
fn read(fixture: &Fixture, options: &Options) -> ConflictRead {
    let before = tree_digest(fixture.root());
    let (engine, repo) = open(fixture);
    let result = engine.conflict_read(&repo, options, UNLIMITED, &mut crate::measure).expect("conflict.read");
    assert_eq!(tree_digest(fixture.root()), before, "conflict.read changed the repository");
    result.data
}

/// Checks every file against git: stages, modes and oids (`ls-files -u`), the `git status` classification, the
/// side contents (`cat-file`) with their caps, and the marker regions against a plain scan of the work-tree file.
fn check_against_git(fixture: &Fixture, read: &ConflictRead, options: &Options) {
    let unmerged = stage_lines(&records(&fixture.git_raw(&["ls-files", "-u", "-z", "--abbrev"]).stdout));
    let mut engine_stages = Vec::new();
    for file in &read.files {
        for (stage, side) in [(1u8, &file.base), (2, &file.ours), (3, &file.theirs)] {
            if let Some(side) = side {
                engine_stages.push((file.path.clone(), stage, side.mode.clone(), side.oid.clone()));
                check_side(fixture, side, options);
            }
        }
        check_markers(fixture, file);
    }
    assert_eq!(engine_stages, unmerged, "stages as `git ls-files -u`");
    let mut paths: Vec<&str> = unmerged.iter().map(|(path, ..)| path.as_str()).collect();
    paths.dedup();
    assert_eq!(read.conflicted_files, paths.len());
    assert_eq!(read.conflict, !paths.is_empty());

    let status = records(&fixture.git_raw(&["status", "--porcelain=v2", "-z"]).stdout);
    for file in &read.files {
        let line = status.iter().find(|line| line.starts_with("u ") && line.ends_with(&format!(" {}", file.path)));
        let xy = &line.expect("git lists the path as unmerged")[2..4];
        let expected = match xy {
            "UU" => FileStatus::BothModified,
            "AA" => FileStatus::BothAdded,
            "AU" => FileStatus::AddedByUs,
            "UA" => FileStatus::AddedByThem,
            "DU" => FileStatus::DeletedByUs,
            "UD" => FileStatus::DeletedByThem,
            "DD" => FileStatus::BothDeleted,
            other => panic!("unexpected XY {other}"),
        };
        assert_eq!(file.status, expected, "{}: {xy}", file.path);
    }
}

fn check_side(fixture: &Fixture, side: &SideBlob, options: &Options) {
    let blob = fixture.git_raw(&["cat-file", "blob", &side.oid]).stdout;
    assert_eq!(side.size, blob.len(), "{}: full size", side.oid);
    assert_eq!(side.binary, blob[..blob.len().min(8000)].contains(&0), "{}: binary", side.oid);
    match &side.content {
        Some(content) => {
            assert!(content.len() <= options.max_bytes_per_side, "{}: capped", side.oid);
            assert_eq!(content.as_bytes(), &blob[..content.len()], "{}: a prefix of the blob", side.oid);
            assert_eq!(side.truncated, content.len() < blob.len(), "{}: truncated flag", side.oid);
        }
        None => assert!(side.binary || side.submodule, "{}: content missing", side.oid),
    }
}

/// Marker lines found by a plain scan: `<<<<<<< `, `|||||||`, `=======`, `>>>>>>> ` at the start of a line.
fn check_markers(fixture: &Fixture, file: &ConflictFile) {
    let Ok(bytes) = std::fs::read(fixture.path().join(&file.path)) else {
        assert!(!file.work_tree.exists, "{}: absent in the work tree", file.path);
        return;
    };
    assert!(file.work_tree.exists);
    assert_eq!(file.work_tree.size, bytes.len() as u64);
    let text = String::from_utf8_lossy(&bytes);
    let lines_starting = |prefix: &str| -> Vec<usize> {
        text.lines().enumerate().filter(|(_, line)| line.starts_with(prefix)).map(|(idx, _)| idx + 1).collect()
    };
    let regions = &file.work_tree.regions;
    assert_eq!(regions.iter().map(|r| r.start).collect::<Vec<_>>(), lines_starting("<<<<<<<"), "{}", file.path);
    assert_eq!(regions.iter().map(|r| r.end).collect::<Vec<_>>(), lines_starting(">>>>>>>"), "{}", file.path);
    let dividers: Vec<usize> = regions.iter().map(|r| r.theirs.start - 1).collect();
    assert_eq!(dividers, lines_starting("======="), "{}", file.path);
    let bases: Vec<usize> = regions.iter().filter_map(|r| r.base.map(|base| base.start - 1)).collect();
    assert_eq!(bases, lines_starting("|||||||"), "{}", file.path);
    assert_eq!(file.work_tree.region_count, regions.len());
}

fn file<'a>(read: &'a ConflictRead, path: &str) -> &'a ConflictFile {
    read.files.iter().find(|file| file.path == path).unwrap_or_else(|| panic!("{path} listed"))
}

#[test]
fn stopped_merge() {
    let fixture = fluxgit_fixtures::build(Scenario::MergeConflict);
    let options = Options::default();
    let read = read(&fixture, &options);
    check_against_git(&fixture, &read, &options);
    assert_eq!(read.operation, Some(Activity::Merge));
    assert_eq!(read.ours.as_ref().map(|c| c.sha.as_str()), Some(facts::MERGE_CONFLICT_HEAD));
    assert_eq!(read.theirs.as_ref().map(|c| c.sha.as_str()), Some(facts::MERGE_CONFLICT_TOPIC));
    assert_eq!(read.theirs.as_ref().map(|c| c.subject.as_str()), Some("feat(topic): rework greetings, drop the guide"));
    assert!(read.progress.is_none());
    let main_c = file(&read, "src/main.c");
    assert_eq!(main_c.work_tree.regions.len(), 1);
    assert_eq!(main_c.work_tree.regions[0].base, None, "merge style: no base section");
    assert_eq!(main_c.work_tree.regions[0].theirs_label.as_deref(), Some("topic"));
    assert_eq!(file(&read, "docs/guide.md").status, FileStatus::DeletedByThem);
}

#[test]
fn stopped_rebase_with_diff3_markers_and_a_binary_file() {
    let fixture = fluxgit_fixtures::build(Scenario::RebaseConflict);
    let options = Options::default();
    let read = read(&fixture, &options);
    check_against_git(&fixture, &read, &options);
    assert_eq!(read.operation, Some(Activity::Rebase));
    let progress = read.progress.expect("rebase progress");
    assert_eq!((progress.step, progress.total), (Some(2), Some(3)));
    assert_eq!(read.ours.as_ref().map(|c| c.sha.as_str()), Some(facts::REBASE_CONFLICT_HEAD));
    let theirs = read.theirs.as_ref().expect("REBASE_HEAD");
    assert_eq!(
        (theirs.sha.as_str(), theirs.subject.as_str()),
        (facts::REBASE_CONFLICT_STOPPED, "feat(feature): greet the feature, add a logo")
    );
    let region = &file(&read, "src/main.c").work_tree.regions[0];
    assert_eq!((region.start, region.end), (5, 11));
    assert_eq!(region.base.map(|base| (base.start, base.count)), Some((8, 1)), "diff3 shows the base");
    let logo = file(&read, "assets/logo.bin");
    assert_eq!(logo.status, FileStatus::BothAdded);
    assert!(logo.ours.as_ref().is_some_and(|side| side.binary && side.content.is_none()));
    assert!(logo.work_tree.binary && logo.work_tree.regions.is_empty(), "no markers in a binary file");

    // The preflight of the same rebase, from the refs left in place, predicted this very stop.
    let (engine, repo) = open(&fixture);
    let options = fluxgit_engine::conflict::preflight::Options::default();
    let predicted = engine.conflict_preflight(&repo, "main", "feature", &options).expect("preflight").data;
    let stop = predicted.rebase.stops_at.expect("the rebase stops");
    assert_eq!((stop.step, stop.total, stop.commit.sha.as_str()), (2, 3, facts::REBASE_CONFLICT_STOPPED));
    let kinds: Vec<(&str, ConflictKind)> = stop.conflicts.iter().map(|c| (c.path.as_str(), c.kind)).collect();
    assert_eq!(kinds, vec![("assets/logo.bin", ConflictKind::Binary), ("src/main.c", ConflictKind::Content)]);
    assert_eq!(stop.conflicts[1].regions, file(&read, "src/main.c").work_tree.regions, "the same diff3 markers");
}

#[test]
fn stopped_cherry_pick_sequence_with_a_3_mib_file() {
    let fixture = fluxgit_fixtures::build(Scenario::CherryPickConflict);
    let options = Options::default();
    let read = read(&fixture, &options);
    check_against_git(&fixture, &read, &options);
    assert_eq!(read.operation, Some(Activity::CherryPick));
    assert_eq!(read.progress.and_then(|p| p.remaining), Some(2), "the stopped pick and one more");
    assert_eq!(read.ours.as_ref().map(|c| c.sha.as_str()), Some(facts::CHERRY_PICK_CONFLICT_HEAD));
    assert_eq!(read.theirs.as_ref().map(|c| c.sha.as_str()), Some(facts::CHERRY_PICK_CONFLICT_PICKED));
    let big = file(&read, "data/big.txt");
    for side in [&big.base, &big.ours, &big.theirs] {
        let side = side.as_ref().expect("three stages");
        assert_eq!(side.size, 3_162_000, "the full size, not the cap");
        assert!(side.truncated && side.content.as_ref().is_some_and(|c| c.len() == 16 * 1024));
    }
    let spans: Vec<(usize, usize)> = big.work_tree.regions.iter().map(|r| (r.start, r.end)).collect();
    assert_eq!(spans, vec![(100, 106), (60_006, 60_012)], "zdiff3 regions in the 3 MiB work-tree file");
    assert!(big.work_tree.size > 3 * 1024 * 1024);
    assert_eq!(file(&read, "docs/guide.md").status, FileStatus::DeletedByUs);

    let wide = Options { max_files: 1, max_bytes_per_side: 1024 * 1024 };
    let wide_read = self::read(&fixture, &wide);
    assert_eq!((wide_read.conflicted_files, wide_read.files.len()), (2, 1));
    let ours = wide_read.files[0].ours.as_ref().expect("ours");
    assert_eq!(
        (ours.size, ours.content.as_ref().map(String::len), ours.truncated),
        (3_162_000, Some(1024 * 1024), true)
    );
}

#[test]
fn failed_stash_pop() {
    let fixture = fluxgit_fixtures::build(Scenario::StashPopConflict);
    let options = Options::default();
    let read = read(&fixture, &options);
    check_against_git(&fixture, &read, &options);
    assert_eq!(read.operation, Some(Activity::StashApply));
    assert!(read.evidence.as_deref().is_some_and(|e| e.contains("no operation state file")), "{:?}", read.evidence);
    assert_eq!(read.ours.as_ref().map(|c| c.sha.as_str()), Some(facts::STASH_POP_CONFLICT_HEAD));
    let theirs = read.theirs.as_ref().expect("the stash is identified");
    assert_eq!(theirs.sha, facts::STASH_POP_CONFLICT_STASH);
    assert!(theirs.role.starts_with("stash@{0}"), "{}", theirs.role);
    let readme = file(&read, "README.md");
    assert_eq!(readme.work_tree.regions[0].ours_label.as_deref(), Some("Updated upstream"));
    assert_eq!(readme.work_tree.regions[0].theirs_label.as_deref(), Some("Stashed changes"));
}

#[test]
fn no_conflict_is_a_result_not_an_error() {
    for scenario in [Scenario::Clean, Scenario::Preflight, Scenario::Stashes] {
        let fixture = fluxgit_fixtures::build(scenario);
        let read = read(&fixture, &Options::default());
        assert!(!read.conflict && read.files.is_empty() && read.conflicted_files == 0, "{}", scenario.name());
        assert!(read.message.is_some_and(|m| m.contains("No conflict")));
        assert_eq!(read.operation, None, "{}", scenario.name());
    }
}

#[test]
fn budgets_cut_contents_then_regions_then_files_and_count_them() {
    let fixture = fluxgit_fixtures::build(Scenario::CherryPickConflict);
    let (engine, repo) = open(&fixture);
    let options = Options::default();
    let mut measure =
        |result: &Budgeted<ConflictRead>| budget::count_tokens(&serde_json::to_string(result).expect("json"));
    let full = engine.conflict_read(&repo, &options, UNLIMITED, &mut measure).expect("full").data;
    let contents: usize =
        full.files.iter().flat_map(|f| [&f.base, &f.ours, &f.theirs]).flatten().filter(|s| s.content.is_some()).count();
    for max_tokens in [300, 1_000, 5_000, 12_000] {
        let cut = engine.conflict_read(&repo, &options, max_tokens, &mut measure).expect("fits");
        assert!(measure(&cut) <= max_tokens, "{max_tokens}: over budget");
        let shown: usize = cut
            .data
            .files
            .iter()
            .flat_map(|f| [&f.base, &f.ours, &f.theirs])
            .flatten()
            .filter(|s| s.content.is_some())
            .count();
        let cut_flags = cut
            .data
            .files
            .iter()
            .flat_map(|f| [&f.base, &f.ours, &f.theirs])
            .flatten()
            .filter(|s| s.content_omitted)
            .count();
        let omitted = |name: &str| cut.omitted.0.iter().find(|(n, _)| *n == name).map_or(0, |(_, count)| *count);
        assert_eq!(shown + omitted("contents"), contents, "{max_tokens}: contents counted {:?}", cut.omitted);
        assert!(cut_flags <= omitted("contents"));
        assert_eq!(cut.data.files.len() + omitted("files"), full.files.len(), "{max_tokens}: files counted");
        assert_eq!(cut.data.conflicted_files, 2, "the count stays exact");
    }
    let err = engine.conflict_read(&repo, &options, 20, &mut measure).expect_err("below the floor");
    assert!(matches!(err, fluxgit_engine::Error::Invalid { floor: Some(_), .. }));
}

#[test]
fn conflict_marker_size_attribute_is_honoured() {
    let fixture = fluxgit_fixtures::build(Scenario::Preflight);
    std::fs::create_dir_all(fixture.git_dir().join("info")).expect("info dir");
    std::fs::write(fixture.git_dir().join("info/attributes"), "src/main.c conflict-marker-size=12\n").expect("attrs");
    let (engine, repo) = open(&fixture);
    let options = fluxgit_engine::conflict::preflight::Options::default();
    let predicted = engine.conflict_preflight(&repo, "content-theirs", "content-ours", &options).expect("ok").data;
    drop(repo);
    fixture.git(&["checkout", "-q", "content-ours"]);
    assert!(!fixture.git_raw(&["merge", "content-theirs"]).status.success(), "the merge stops");
    let read = read(&fixture, &Options::default());
    check_against_git(&fixture, &read, &Options::default());
    let main_c = file(&read, "src/main.c");
    assert_eq!(main_c.work_tree.marker_size, 12);
    let text = std::fs::read_to_string(fixture.path().join("src/main.c")).expect("src/main.c");
    assert!(text.contains(&format!("{} HEAD\n", "<".repeat(12))), "{text}");
    assert_eq!(main_c.work_tree.regions.len(), 1);
    let region = &main_c.work_tree.regions[0];
    assert_eq!(predicted.merge.conflicts[0].regions[0].start, region.start, "predicted where git wrote it");
    assert_eq!(predicted.merge.conflicts[0].regions[0].end, region.end);
}

#[test]
fn stopped_revert() {
    let fixture = fluxgit_fixtures::build(Scenario::Preflight);
    fixture.git(&["checkout", "-q", "content-ours"]);
    let main_c = std::fs::read_to_string(fixture.path().join("src/main.c")).expect("src/main.c");
    std::fs::write(fixture.path().join("src/main.c"), main_c.replace("ours", "ours again")).expect("write");
    fixture.git(&["commit", "-q", "-am", "content: ours again"]);
    assert!(!fixture.git_raw(&["revert", "--no-edit", "content-ours~1"]).status.success(), "the revert stops");
    let options = Options::default();
    let read = read(&fixture, &options);
    check_against_git(&fixture, &read, &options);
    assert_eq!(read.operation, Some(Activity::Revert));
    let reverted = fixture.git(&["rev-parse", "REVERT_HEAD"]);
    assert_eq!(read.theirs.as_ref().map(|c| c.sha.as_str()), Some(reverted.trim()));
    assert_eq!(read.progress.map(|p| (p.step, p.total)), Some((Some(1), Some(1))), "a single revert");
}
