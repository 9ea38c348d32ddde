//! `conflict.read` vs `git ls-files -u`, `git status --porcelain=v2`, `git cat-file` and the work-tree markers
//! during a stopped merge, rebase, cherry-pick and stash pop.

use fluxgit_engine::conflict::ConflictKind;
use fluxgit_engine::conflict::read::{ConflictFile, ConflictRead, FileStatus, Options, SideBlob};
use fluxgit_engine::conflict::state::Activity;
use fluxgit_engine::{Budgeted, budget};
use fluxgit_fixtures::{Fixture, Scenario, facts, tree_digest};

use super::{open, records, stage_lines};
use crate::oracle::UNLIMITED;

/// Reads the conflict with `options` and no budget cut, checking the repository is byte-identical afterwards.
fn read(fixture: &Fixture, options: &Options) -> ConflictRead {
    let before = tree_digest(fixture.root());
    let (engine, repo) = open(fixture);
    let result = engine.conflict_read(&repo, options, UNLIMITED, &mut crate::oracle::measure).expect("conflict.read");
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
        None => assert!(side.binary || side.submodule || !options.sides, "{}: content missing", side.oid),
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
    assert_eq!(regions.iter().map(|r| r.markers.start).collect::<Vec<_>>(), lines_starting("<<<<<<<"), "{}", file.path);
    assert_eq!(regions.iter().map(|r| r.markers.end).collect::<Vec<_>>(), lines_starting(">>>>>>>"), "{}", file.path);
    let dividers: Vec<usize> = regions.iter().map(|r| r.markers.theirs.start - 1).collect();
    assert_eq!(dividers, lines_starting("======="), "{}", file.path);
    let bases: Vec<usize> = regions.iter().filter_map(|r| r.markers.base.map(|base| base.start - 1)).collect();
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
    assert_eq!(main_c.work_tree.regions[0].markers.base, None, "merge style: no base section");
    assert_eq!(main_c.work_tree.regions[0].markers.theirs_label.as_deref(), Some("topic"));
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
    assert_eq!((region.markers.start, region.markers.end), (5, 11));
    assert_eq!(region.markers.base.map(|base| (base.start, base.count)), Some((8, 1)), "diff3 shows the base");
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
    let read_markers: Vec<_> = file(&read, "src/main.c").work_tree.regions.iter().map(|r| r.markers.clone()).collect();
    assert_eq!(stop.conflicts[1].regions, read_markers, "the same diff3 markers");
}

#[test]
fn stopped_cherry_pick_sequence_with_a_3_mib_file() {
    let fixture = fluxgit_fixtures::build(Scenario::CherryPickConflict);
    let options = Options { sides: true, ..Options::default() };
    let read = read(&fixture, &options);
    check_against_git(&fixture, &read, &options);
    assert_eq!(read.operation, Some(Activity::CherryPick));
    // After the stopped pick, as a rebase counts: the picks git makes once it is resolved, less the stopped one.
    let remaining = read.progress.and_then(|p| p.remaining);
    assert_eq!(remaining, Some(picks_after_the_stopped_one(&fixture)));
    assert_eq!(remaining, Some(1), "one pick after the stopped one");
    assert_eq!(read.ours.as_ref().map(|c| c.sha.as_str()), Some(facts::CHERRY_PICK_CONFLICT_HEAD));
    assert_eq!(read.theirs.as_ref().map(|c| c.sha.as_str()), Some(facts::CHERRY_PICK_CONFLICT_PICKED));
    let big = file(&read, "data/big.txt");
    for side in [&big.base, &big.ours, &big.theirs] {
        let side = side.as_ref().expect("three stages");
        assert_eq!(side.size, 3_162_000, "the full size, not the cap");
        assert!(side.truncated && side.content.as_ref().is_some_and(|c| c.len() == 16 * 1024));
    }
    let spans: Vec<(usize, usize)> = big.work_tree.regions.iter().map(|r| (r.markers.start, r.markers.end)).collect();
    assert_eq!(spans, vec![(100, 106), (60_006, 60_012)], "zdiff3 regions in the 3 MiB work-tree file");
    assert!(big.work_tree.size > 3 * 1024 * 1024);
    assert_eq!(file(&read, "docs/guide.md").status, FileStatus::DeletedByUs);

    let wide = Options { max_files: 1, max_bytes_per_side: 1024 * 1024, sides: true };
    let wide_read = self::read(&fixture, &wide);
    assert_eq!((wide_read.conflicted_files, wide_read.files.len()), (2, 1));
    let ours = wide_read.files[0].ours.as_ref().expect("ours");
    assert_eq!(
        (ours.size, ours.content.as_ref().map(String::len), ours.truncated),
        (3_162_000, Some(1024 * 1024), true)
    );
}

/// The picks a stopped cherry-pick sequence still makes after the stopped one, from git: in a copy of the
/// repository, the conflicts resolved as they stand (`git add -A`) and `git cherry-pick --continue` run, the commits
/// it made less the stopped one.
fn picks_after_the_stopped_one(fixture: &Fixture) -> usize {
    let copy = tempfile::tempdir().expect("temp dir");
    let source = format!("{}/.", fixture.path().display());
    let status = std::process::Command::new("cp").args(["-a", &source]).arg(copy.path()).status().expect("cp");
    assert!(status.success(), "copying the repository");
    let before = fixture.git_in(copy.path(), &["rev-parse", "HEAD"]);
    fixture.git_in(copy.path(), &["add", "-A"]);
    let output =
        fixture.git_command(copy.path()).args(["cherry-pick", "--continue"]).env("GIT_EDITOR", "true").output();
    let output = output.expect("git runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!copy.path().join(".git/sequencer").exists(), "the sequence finished");
    let made = fixture.git_in(copy.path(), &["rev-list", "--count", &format!("{}..HEAD", before.trim())]);
    made.trim().parse::<usize>().expect("a count") - 1
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
    assert_eq!(readme.work_tree.regions[0].markers.ours_label.as_deref(), Some("Updated upstream"));
    assert_eq!(readme.work_tree.regions[0].markers.theirs_label.as_deref(), Some("Stashed changes"));
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
    let options = Options { sides: true, ..Options::default() };
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
    assert_eq!(predicted.merge.conflicts[0].regions[0].start, region.markers.start, "predicted where git wrote it");
    assert_eq!(predicted.merge.conflicts[0].regions[0].end, region.markers.end);
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

/// The lines of `git diff` (the dense combined diff of the unmerged paths) for `path` whose two columns are
/// `marks`, without the marks: `" +"` is in ours only, `"+ "` in theirs only, `"++"` in neither (markers, base).
fn combined_lines(fixture: &Fixture, path: &str, marks: &str) -> String {
    let diff = fixture.git(&["-c", "core.quotePath=false", "diff", "--", path]);
    assert!(diff.starts_with(&format!("diff --cc {path}")), "{diff}");
    diff.lines()
        .skip_while(|line| !line.starts_with("@@@"))
        .filter(|line| !line.starts_with("@@@"))
        .filter_map(|line| line.strip_prefix(marks))
        .filter(|line| !["<<<<<<<", "|||||||", "=======", ">>>>>>>"].iter().any(|marker| line.starts_with(marker)))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// Each file's regions against `git diff`: ours lines are the diff's ` +` lines, theirs its `+ ` lines, the base
/// (diff3) its `++` lines that are no marker; the context lines are the work-tree file's.
fn check_regions_against_git_diff(fixture: &Fixture, read: &ConflictRead) {
    for file in read.files.iter().filter(|file| file.work_tree.region_count > 0) {
        let regions = &file.work_tree.regions;
        let joined = |pick: &dyn Fn(&fluxgit_engine::conflict::read::Region) -> String| -> String {
            regions.iter().map(pick).collect()
        };
        assert_eq!(joined(&|r| r.ours_text.clone()), combined_lines(fixture, &file.path, " +"), "{}: ours", file.path);
        assert_eq!(
            joined(&|r| r.theirs_text.clone()),
            combined_lines(fixture, &file.path, "+ "),
            "{}: theirs",
            file.path
        );
        assert_eq!(
            joined(&|r| r.base_text.clone().unwrap_or_default()),
            combined_lines(fixture, &file.path, "++"),
            "{}: base",
            file.path
        );
        let text = std::fs::read_to_string(fixture.path().join(&file.path)).expect("work-tree file");
        let lines: Vec<&str> = text.lines().collect();
        for region in regions {
            let span =
                |from: usize, to: usize| -> String { lines[from - 1..to].iter().map(|l| format!("{l}\n")).collect() };
            let start = region.markers.start;
            let low = start.saturating_sub(3).max(1);
            assert!(span(low, start - 1).ends_with(&region.before), "{}: context above", file.path);
            let end = region.markers.end;
            let high = (end + 3).min(lines.len());
            assert!(span(end + 1, high).starts_with(&region.after), "{}: context below", file.path);
            assert!(!region.truncated);
        }
        assert!(file.ours.as_ref().is_none_or(|side| side.content.is_none()), "no whole side unless asked");
    }
}

#[test]
fn regions_carry_the_lines_git_diff_shows() {
    for scenario in [Scenario::MergeConflict, Scenario::RebaseConflict, Scenario::StashPopConflict] {
        let fixture = fluxgit_fixtures::build(scenario);
        let read = read(&fixture, &Options::default());
        assert!(read.files.iter().any(|file| !file.work_tree.regions.is_empty()), "{}", scenario.name());
        check_regions_against_git_diff(&fixture, &read);
    }
}

/// Writes `files` (path, content) and commits them with `message`.
fn commit_files(fixture: &Fixture, files: &[(&str, String)], message: &str) {
    for (path, content) in files {
        std::fs::write(fixture.path().join(path), content).expect("write");
        fixture.git(&["add", path]);
    }
    fixture.git(&["commit", "-q", "-m", message]);
}

/// `git status`'s "(N commands done)" and "(N remaining commands)" counts (0 for "No commands remaining").
fn status_counts(fixture: &Fixture) -> (usize, usize) {
    let status = fixture.git(&["status"]);
    let count_before = |suffix: &str| -> Option<usize> {
        status.lines().find_map(|line| {
            let (head, _) = line.split_once(suffix)?;
            head.rsplit('(').next()?.trim().parse().ok()
        })
    };
    let done = count_before(" command done)").or_else(|| count_before(" commands done)")).expect("done line");
    let remaining = count_before(" remaining command)").or_else(|| count_before(" remaining commands)")).unwrap_or(0);
    if remaining == 0 {
        assert!(status.contains("No commands remaining"), "{status}");
    }
    (done, remaining)
}

fn numbered(prefix: &str, count: usize) -> String {
    (1..=count).map(|n| format!("{prefix} line {n}\n")).collect()
}

#[test]
fn rebase_progress_and_upcoming_commits_as_git_counts_them() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    fixture.git(&["checkout", "-q", "-b", "base"]);
    commit_files(&fixture, &[("a.txt", numbered("a", 10)), ("b.txt", numbered("b", 10))], "base: a and b");
    fixture.git(&["checkout", "-q", "-b", "upstream"]);
    let upstream_a = numbered("a", 10).replace("a line 1\n", "a line 1 upstream\n");
    let upstream_b = numbered("b", 10).replace("b line 1\n", "b line 1 upstream\n");
    commit_files(&fixture, &[("a.txt", upstream_a), ("b.txt", upstream_b)], "upstream: first lines");
    fixture.git(&["checkout", "-q", "-b", "work", "base"]);
    commit_files(&fixture, &[("a.txt", numbered("a", 10).replace("a line 1\n", "a line 1 work\n"))], "work: a");
    commit_files(&fixture, &[("b.txt", numbered("b", 10).replace("b line 1\n", "b line 1 work\n"))], "work: b");
    let third = numbered("a", 10).replace("a line 1\n", "a line 1 work\n").replace("a line 9\n", "a line 9 work\n");
    commit_files(&fixture, &[("a.txt", third)], "work: a again");
    let third_sha = fixture.git(&["rev-parse", "HEAD"]).trim().to_owned();

    // Predicted first: the replay stops at the first pick, and the third pick changes the same file.
    let (engine, repo) = open(&fixture);
    let options = fluxgit_engine::conflict::preflight::Options::default();
    let predicted = engine.conflict_preflight(&repo, "upstream", "work", &options).expect("preflight").data;
    let stop = predicted.rebase.stops_at.expect("stops");
    assert_eq!(stop.step, 1);
    let later: Vec<(&str, Vec<String>)> =
        stop.later_commits.iter().map(|c| (c.sha.as_str(), c.paths.clone())).collect();
    assert_eq!(later, vec![(third_sha.as_str(), vec!["a.txt".to_owned()])]);
    drop(repo);

    assert!(!fixture.git_raw(&["rebase", "upstream"]).status.success(), "stops at pick 1");
    let first = read(&fixture, &Options::default());
    let progress = first.progress.expect("progress");
    assert_eq!(status_counts(&fixture), (1, 2));
    assert_eq!(
        (progress.done, progress.remaining, progress.step, progress.total),
        (Some(1), Some(2), Some(1), Some(3))
    );
    let upcoming: Vec<(&str, Vec<String>)> = first.upcoming.iter().map(|c| (c.sha.as_str(), c.paths.clone())).collect();
    assert_eq!(upcoming, vec![(third_sha.as_str(), vec!["a.txt".to_owned()])], "work: b leaves a.txt alone");
    assert_eq!(first.conclude, Some("git add <path>; git rebase --continue"));
    assert_eq!(first.abort, Some("git rebase --abort"));
    let text = fluxgit_engine::render::conflict_read(
        &Budgeted { data: first.clone(), omitted: Default::default() },
        &fluxgit_engine::render::Options::default(),
    );
    assert!(text.contains("1 command done, 2 remaining commands"), "{text}");
    assert!(text.contains("git rebase --continue") && text.contains("git rebase --abort"), "{text}");

    // The preflight during the stop: one message, whitespace as git prints it.
    let (engine, repo) = open(&fixture);
    let during = engine.conflict_preflight(&repo, "upstream", "HEAD", &options).expect("preflight").data;
    let message = during.in_progress.expect("in progress").message;
    assert!(!message.contains("  "), "{message:?}");
    drop(repo);

    std::fs::write(fixture.path().join("a.txt"), numbered("a", 10)).expect("resolve");
    fixture.git(&["add", "a.txt"]);
    assert!(!fixture.git_raw(&["-c", "core.editor=true", "rebase", "--continue"]).status.success(), "stops at 2");
    let second = read(&fixture, &Options::default());
    assert_eq!(status_counts(&fixture), (2, 1));
    let progress = second.progress.expect("progress");
    assert_eq!((progress.done, progress.remaining), (Some(2), Some(1)));
    assert!(second.upcoming.is_empty(), "the third pick does not touch b.txt: {:?}", second.upcoming);
}

/// A deterministic two-file conflict, one file 5 KB with two regions, the other small with one: merge style.
fn two_file_conflict() -> Fixture {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let big = |tag: &str| -> String {
        (1..=100)
            .map(|n| match (n, tag) {
                (20 | 70, "") => format!("line {n:03}: the common text of this fixture file\n"),
                (20 | 70, tag) => format!("line {n:03}: changed on the {tag} side of the fixture\n"),
                _ => format!("line {n:03}: the common text of this fixture file\n"),
            })
            .collect()
    };
    let small = |tag: &str| format!("title\nversion {tag}\nend\n");
    fixture.git(&["checkout", "-q", "-b", "left"]);
    commit_files(&fixture, &[("big.txt", big("")), ("small.txt", small("1"))], "base");
    fixture.git(&["checkout", "-q", "-b", "right"]);
    commit_files(&fixture, &[("big.txt", big("right")), ("small.txt", small("right"))], "right");
    fixture.git(&["checkout", "-q", "left"]);
    commit_files(&fixture, &[("big.txt", big("left")), ("small.txt", small("left"))], "left");
    assert!(!fixture.git_raw(&["merge", "right"]).status.success(), "the merge stops");
    fixture
}

#[test]
fn two_file_conflict_costs_a_fifth_of_whole_sides() {
    let fixture = two_file_conflict();
    let size = std::fs::metadata(fixture.path().join("big.txt")).expect("big.txt").len();
    assert!((4_500..5_500).contains(&size), "{size}");
    let (engine, repo) = open(&fixture);
    let default_budget = 8000;
    let answer =
        engine.conflict_read(&repo, &Options::default(), default_budget, &mut crate::oracle::measure).expect("read");
    assert!(answer.omitted.0.is_empty(), "{:?}", answer.omitted);
    check_regions_against_git_diff(&fixture, &answer.data);
    let regions: usize = answer.data.files.iter().map(|f| f.work_tree.regions.len()).sum();
    assert_eq!(regions, 3);
    for region in answer.data.files.iter().flat_map(|f| &f.work_tree.regions) {
        assert!(!region.ours_text.is_empty() && !region.theirs_text.is_empty());
    }
    let tokens = crate::oracle::measure(&answer);

    // Today's answer (before regions carried their lines): every whole side, regions as line ranges only.
    let sides = Options { sides: true, ..Options::default() };
    let mut whole = engine.conflict_read(&repo, &sides, 200_000, &mut crate::oracle::measure).expect("sides");
    let with_sides = crate::oracle::measure(&whole);
    for region in whole.data.files.iter_mut().flat_map(|f| f.work_tree.regions.iter_mut()) {
        *region = fluxgit_engine::conflict::read::Region { markers: region.markers.clone(), ..region_without_text() };
    }
    whole.data.conclude = None;
    whole.data.abort = None;
    let before = crate::oracle::measure(&whole);
    eprintln!("two-file conflict: {tokens} tokens now, {before} with whole sides as before, {with_sides} with sides");
    assert!(tokens * 5 <= before, "{tokens} tokens is more than a fifth of {before}");

    for result in [&answer, &engine.conflict_read(&repo, &sides, 200_000, &mut crate::oracle::measure).expect("sides")]
    {
        let text = fluxgit_engine::render::conflict_read(result, &fluxgit_engine::render::Options::default());
        assert!(budget::count_tokens(&text) <= crate::oracle::measure(result), "text larger than JSON:\n{text}");
    }
}

fn region_without_text() -> fluxgit_engine::conflict::read::Region {
    let span = fluxgit_engine::conflict::markers::LineSpan { start: 0, count: 0 };
    fluxgit_engine::conflict::read::Region {
        markers: fluxgit_engine::conflict::markers::MarkerRegion {
            start: 0,
            end: 0,
            ours: span,
            base: None,
            theirs: span,
            ours_label: None,
            base_label: None,
            theirs_label: None,
        },
        before: String::new(),
        ours_text: String::new(),
        base_text: None,
        theirs_text: String::new(),
        after: String::new(),
        truncated: false,
    }
}
