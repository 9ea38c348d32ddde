//! `commit.details` equal to `git show --numstat -M`, and `worktree.changes` equal to `git diff --numstat` +
//! `git diff --cached --numstat` + untracked files.

use fluxgit_fixtures::{Scenario, facts};

use crate::diffs::support::{UNLIMITED, git_numstat, measure, numstat_of, paths, read, unmerged};

#[test]
fn commit_details_match_git_show() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    let root = facts::CLEAN_HISTORY[0];
    for rev in ["HEAD", "HEAD~1", "HEAD~2", "HEAD^2", "v1.0", root] {
        let details =
            read(&fixture, |engine, repo| engine.commit_details(repo, rev, UNLIMITED, &mut measure)).expect("details");
        let details = details.data;
        let format = "--format=%H%n%p%n%an%n%ae%n%aI%n%cn%n%ce%n%cI%n%s";
        let meta = fixture.git(&["log", "-1", format, rev]);
        let meta: Vec<&str> = meta.lines().collect();
        assert_eq!(details.sha, meta[0], "{rev}");
        assert_eq!(details.parents.join(" "), meta[1], "{rev}");
        let git_time = |time: &str| time.replace("+00:00", "Z");
        assert_eq!(
            [&details.author.name, &details.author.email, &details.author.time],
            [meta[2], meta[3], &git_time(meta[4])],
            "{rev}"
        );
        let committer = details.committer.as_ref().unwrap_or(&details.author);
        assert_eq!([&committer.name, &committer.email], [meta[5], meta[6]], "{rev}");
        assert_eq!(committer.time, git_time(meta[7]), "{rev}");
        assert_eq!(details.subject, meta[8], "{rev}");
        assert_eq!(details.body, fixture.git(&["log", "-1", "--format=%b", rev]).trim(), "{rev}");
        assert_eq!(details.merge, details.parents.len() > 1, "{rev}");
        assert_eq!(details.diffed_against.as_deref(), details.parents.first().map(String::as_str), "{rev}");
        assert_eq!(details.note.is_some(), details.merge, "{rev}");
        let commit = format!("{rev}^{{commit}}");
        let git = git_numstat(
            &fixture,
            &["show", "--numstat", "-z", "-M", "--diff-merges=first-parent", "--format=", &commit],
        );
        assert_eq!(numstat_of(&details.files), git, "{rev}");
        assert_eq!(details.totals.files, details.files.len());
    }
    let merge =
        read(&fixture, |engine, repo| engine.commit_details(repo, "HEAD", UNLIMITED, &mut measure)).expect("merge");
    assert_eq!(merge.data.parents.len(), 2);
    assert!(merge.data.files.iter().any(|file| file.path == "src/topic.c"), "the topic's files, against main");
    let refactor = read(&fixture, |engine, repo| engine.commit_details(repo, "HEAD~2", UNLIMITED, &mut measure));
    let refactor = refactor.expect("refactor").data;
    let binary = refactor.files.iter().find(|file| file.path == "assets/logo.bin").expect("the binary file");
    assert!(binary.binary && binary.additions.is_none());
    assert!(refactor.files.iter().any(|file| file.from.as_deref() == Some("src/util.c")), "a rename");
}

/// Attributes as git reads them: for two trees (`git show`) from the work tree's `.gitattributes` only, never the
/// index's copy; with the index as a side (`git diff --cached`, `git diff`) from the work tree, then the index.
#[test]
fn attributes_are_read_where_git_reads_them() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let write = |path: &str, text: &str| std::fs::write(fixture.path().join(path), text).expect("writable");
    write("data.dat", "a\nb\n");
    write(".gitattributes", "*.dat -diff\n");
    fixture.git(&["add", "data.dat", ".gitattributes"]);
    fixture.git(&["commit", "-q", "-m", "data marked -diff"]);
    write("data.dat", "a\nc\n");
    fixture.git(&["commit", "-q", "-am", "data changed"]);
    let show = || {
        let details =
            read(&fixture, |engine, repo| engine.commit_details(repo, "HEAD", UNLIMITED, &mut measure)).expect("reads");
        let git = git_numstat(&fixture, &["show", "--numstat", "-z", "-M", "--format=", "HEAD"]);
        assert_eq!(numstat_of(&details.data.files), git);
        details.data.files.iter().find(|file| file.path == "data.dat").expect("listed").binary
    };
    assert!(show(), "the committed -diff in the work tree applies");
    std::fs::remove_file(fixture.path().join(".gitattributes")).expect("removable");
    assert!(!show(), "deleted from the work tree: the index's copy is not read for two trees");
    write(".gitattributes", "*.dat diff\n");
    assert!(!show(), "the work tree's file wins over the index's");
    fixture.git(&["checkout", "-q", "--", ".gitattributes"]);
    fixture.git(&["rm", "-q", "--cached", ".gitattributes"]);
    assert!(show(), "an untracked work-tree file applies too");
    fixture.git(&["reset", "-q"]);

    // The index as a side: the work tree's file first, then the index's.
    write("data.dat", "a\nd\n");
    fixture.git(&["add", "data.dat"]);
    write("data.dat", "a\ne\n");
    let changes = || {
        let report =
            read(&fixture, |engine, repo| engine.worktree_changes(repo, UNLIMITED, &mut measure)).expect("reads");
        let report = report.data;
        assert_eq!(numstat_of(&report.staged), git_numstat(&fixture, &["diff", "--numstat", "-z", "-M", "--cached"]));
        assert_eq!(numstat_of(&report.unstaged), git_numstat(&fixture, &["diff", "--numstat", "-z", "-M"]));
        let binary = |files: &[fluxgit_engine::diff::FileStat]| {
            files.iter().find(|file| file.path == "data.dat").expect("listed").binary
        };
        (binary(&report.staged), binary(&report.unstaged))
    };
    assert_eq!(changes(), (true, true));
    write(".gitattributes", "*.dat diff\n");
    assert_eq!(changes(), (false, false), "the work tree's file wins over the index's");
    std::fs::remove_file(fixture.path().join(".gitattributes")).expect("removable");
    assert_eq!(changes(), (true, true), "deleted from the work tree: the index's copy applies");
}

#[test]
fn a_commit_body_is_read_and_cut_last() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let body = "Why: the parser dropped the last line.\n\nHow: read to the end; see café notes.";
    fixture.git(&["commit", "-q", "--allow-empty", "-m", "fix: keep the last line", "-m", body]);
    let full =
        read(&fixture, |engine, repo| engine.commit_details(repo, "HEAD", UNLIMITED, &mut measure)).expect("reads");
    assert_eq!(full.data.body, fixture.git(&["log", "-1", "--format=%b"]).trim());
    assert_eq!(full.data.body, body);
    assert!(full.data.files.is_empty() && full.omitted.0.is_empty());
    let floor = read(&fixture, |engine, repo| engine.commit_details(repo, "HEAD", 1, &mut measure));
    let Err(fluxgit_engine::Error::Invalid { floor: Some(floor), .. }) = floor else { panic!("under the floor") };
    let cut =
        read(&fixture, |engine, repo| engine.commit_details(repo, "HEAD", floor + 5, &mut measure)).expect("fits");
    assert!(measure(&cut) <= floor + 5);
    let shown = cut.data.body.chars().count();
    assert!(shown < body.chars().count() && body.starts_with(&cut.data.body), "{:?}", cut.data.body);
    assert_eq!(cut.omitted.0, vec![("bodyChars", body.chars().count() - shown)]);
}

#[test]
fn commit_details_cut_to_the_budget_and_refuse_bad_revisions() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    let details =
        read(&fixture, |engine, repo| engine.commit_details(repo, "HEAD~2", 250, &mut measure)).expect("fits");
    assert!(measure(&details) <= 250);
    let shown = details.data.files.len();
    assert_eq!(details.omitted.0, vec![("files", details.data.totals.files - shown)]);
    assert_eq!(details.data.totals.files, 9, "totals stay exact");
    for (rev, reason) in
        [("nope", "unknown_revision"), ("-p", "invalid_revision"), ("HEAD:README.md", "unknown_revision")]
    {
        let error =
            read(&fixture, |engine, repo| engine.commit_details(repo, rev, UNLIMITED, &mut measure)).expect_err(rev);
        assert!(
            matches!(error, fluxgit_engine::Error::Invalid { reason: r, .. } if r.as_str() == reason),
            "{rev}: {error:?}"
        );
    }
}

#[test]
fn worktree_changes_match_git_diff_and_ls_files() {
    for scenario in [
        Scenario::Diffs,
        Scenario::Dirty,
        Scenario::MergeConflict,
        Scenario::Unborn,
        Scenario::Submodules,
        Scenario::FsMonitor,
    ] {
        let fixture = fluxgit_fixtures::build(scenario);
        let name = scenario.name();
        let report =
            read(&fixture, |engine, repo| engine.worktree_changes(repo, UNLIMITED, &mut measure)).expect("changes");
        let report = report.data;
        // The oracle must not spring the fs-monitor fixture's traps.
        let git = |extra: &[&str]| {
            let mut args = vec!["-c", "core.fsmonitor=", "diff", "--numstat", "-z", "-M"];
            args.extend(extra);
            git_numstat(&fixture, &args)
        };
        assert_eq!(numstat_of(&report.unstaged), git(&[]), "{name}: unstaged");
        assert_eq!(numstat_of(&report.staged), git(&["--cached"]), "{name}: staged");
        let untracked = paths(
            &fixture,
            &[
                "-c",
                "core.fsmonitor=",
                "ls-files",
                "-z",
                "--others",
                "--exclude-standard",
                "--directory",
                "--no-empty-directory",
            ],
        );
        assert_eq!(report.untracked, untracked, "{name}: untracked");
        assert_eq!(report.conflicted, unmerged(&fixture), "{name}: conflicted");
        assert_eq!(
            (report.counts.staged, report.counts.unstaged, report.counts.untracked, report.counts.conflicted),
            (report.staged.len(), report.unstaged.len(), report.untracked.len(), report.conflicted.len())
        );
    }
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    let small = read(&fixture, |engine, repo| engine.worktree_changes(repo, 150, &mut measure)).expect("fits");
    assert!(measure(&small) <= 150 && !small.omitted.0.is_empty());
    assert_eq!(small.data.counts.unstaged, 8, "counts stay exact");
}
