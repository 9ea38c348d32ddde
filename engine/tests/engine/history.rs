//! `repo.history` and `repo.reflog` against the git CLI: `git log` order and paging (also with `-- path` and across
//! a commit landing between pages), `git reflog`, lost tips from `git rev-list <old> --not --all`, bad input.

use crate::common;

use common::{engine_for, measure, repo_path};
use fluxgit_engine::{Engine, Error, InvalidReason, history, reflog};
use fluxgit_fixtures::{Fixture, Scenario};

const UNLIMITED: usize = 1_000_000;

/// Every page of `options` (limit and filters), following `nextCursor`; with `between` run after the first page.
fn all_pages(fixture: &Fixture, options: history::Options, mut between: impl FnMut()) -> Vec<history::Commit> {
    let engine = engine_for(fixture);
    let mut commits = Vec::new();
    let mut cursor = None;
    loop {
        let repo = engine.resolve(repo_path(fixture)).expect("resolves");
        let page = engine
            .history(&repo, &history::Options { cursor: cursor.clone(), ..options.clone() }, UNLIMITED, &mut measure)
            .expect("page")
            .data;
        assert!(page.commits.len() <= options.limit);
        commits.extend(page.commits);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return commits,
        }
        between();
    }
}

/// `git log --format=...` lines for `args`, as (sha, parents, author, email, time, subject).
fn git_log(fixture: &Fixture, args: &[&str]) -> Vec<(String, String, String, String, String, String)> {
    let mut command = vec!["log", "--format=%h%x1f%p%x1f%aN%x1f%aE%x1f%aI%x1f%s"];
    command.extend_from_slice(args);
    fixture
        .git(&command)
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split('\x1f').collect();
            let field = |index: usize| fields[index].to_owned();
            (field(0), field(1), field(2), field(3), field(4), field(5))
        })
        .collect()
}

fn as_log(commits: &[history::Commit]) -> Vec<(String, String, String, String, String, String)> {
    commits
        .iter()
        .map(|commit| {
            (
                commit.sha.clone(),
                commit.parents.join(" "),
                commit.author.name.clone(),
                commit.author.email.clone(),
                commit.time.clone(),
                commit.subject.clone(),
            )
        })
        .collect()
}

fn options(start: Option<&str>, path: Option<&str>, limit: usize) -> history::Options {
    history::Options {
        start: start.map(str::to_owned),
        path: path.map(str::to_owned),
        limit,
        cursor: None,
        symbol: None,
    }
}

#[test]
fn history_pages_equal_git_log() {
    for scenario in [Scenario::ManyBranches, Scenario::RewrittenHistory, Scenario::AheadBehind] {
        let fixture = fluxgit_fixtures::build(scenario);
        let before = fluxgit_fixtures::tree_digest(fixture.root());
        for limit in [1, 3, 7, 200] {
            let pages = all_pages(&fixture, options(None, None, limit), || {});
            assert_eq!(as_log(&pages), git_log(&fixture, &[]), "{} limit {limit}", scenario.name());
        }
        assert_eq!(before, fluxgit_fixtures::tree_digest(fixture.root()), "history changed the repository");
    }
}

#[test]
fn history_of_other_refs_and_paths_equals_git_log() {
    let fixture = fluxgit_fixtures::build(Scenario::RewrittenHistory);
    let cases: [(Option<&str>, Option<&str>); 7] = [
        (Some("topic"), None),
        (Some("side"), None),
        (Some("v1.0"), None),
        (None, Some("side.txt")),
        (None, Some("README.md")),
        (None, Some("src")),
        (Some("main~1"), Some("src/util.c")),
    ];
    for (start, path) in cases {
        let mut args: Vec<&str> = start.into_iter().collect();
        if let Some(path) = path {
            args.extend(["--", path]);
        }
        let expected = git_log(&fixture, &args);
        assert!(!expected.is_empty(), "{args:?} has history");
        for limit in [2, 50] {
            let pages = all_pages(&fixture, options(start, path, limit), || {});
            assert_eq!(as_log(&pages), expected, "git log {args:?}, limit {limit}");
        }
    }
    // A path no commit touched: an empty page, no cursor.
    assert!(all_pages(&fixture, options(None, Some("nowhere/at/all"), 10), || {}).is_empty());
}

/// Issue 22: `.` is the whole tree as `git log -- .` reads it (empty commits and merges that take one parent's tree
/// simplified away), and `./src/` is `src`.
#[test]
fn history_of_the_whole_tree_equals_git_log_dot() {
    let fixture = fluxgit_fixtures::build(Scenario::RewrittenHistory);
    fixture.git(&["commit", "-q", "--allow-empty", "-m", "chore: an empty commit"]);
    fixture.git(&["merge", "-q", "--no-ff", "-s", "ours", "-m", "Merge topic, keeping ours", "topic"]);
    for path in [".", "./", "./src/", "src/.", "./src//util.c"] {
        let expected = git_log(&fixture, &["--", path]);
        for limit in [1, 3, 50] {
            let pages = all_pages(&fixture, options(None, Some(path), limit), || {});
            assert_eq!(as_log(&pages), expected, "git log -- {path}, limit {limit}");
        }
    }
    let whole = git_log(&fixture, &["--", "."]);
    let everything = git_log(&fixture, &[]);
    assert!(whole.len() >= 5 && whole.len() + 2 <= everything.len(), "{} of {}", whole.len(), everything.len());
}

#[test]
fn history_of_ranges_equals_git_log() {
    let cases: [(Scenario, &[&str], &str); 3] = [
        (
            Scenario::AheadBehind,
            &["origin/main..main", "main..origin/main", "main...origin/main", "..origin/main"],
            "local",
        ),
        (
            Scenario::ManyBranches,
            &["feature/login..main", "main...fix/typo", "fix/typo...feature/login", "main..main"],
            "changes",
        ),
        (Scenario::RewrittenHistory, &["side..main", "main...topic", "topic...", "v1.0..HEAD"], "README.md"),
    ];
    for (scenario, ranges, path) in cases {
        let fixture = fluxgit_fixtures::build(scenario);
        for range in ranges {
            let expected = git_log(&fixture, &[range]);
            for limit in [1, 2, 50] {
                let pages = all_pages(&fixture, options(Some(range), None, limit), || {});
                assert_eq!(as_log(&pages), expected, "{}: git log {range}, limit {limit}", scenario.name());
            }
        }
        // With a path: the same commits as `git log A..B -- path`.
        let with_path = git_log(&fixture, &[ranges[0], "--", path]);
        assert!(!with_path.is_empty(), "{range} -- {path}", range = ranges[0]);
        assert_eq!(as_log(&all_pages(&fixture, options(Some(ranges[0]), Some(path), 3), || {})), with_path);
    }
    // A range whose side names nothing is unknown, with the nearest names.
    let fixture = fluxgit_fixtures::build(Scenario::ManyBranches);
    let engine = engine_for(&fixture);
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
    match engine.history(&repo, &options(Some("mian..fix/typo"), None, 5), UNLIMITED, &mut measure) {
        Err(Error::Invalid { reason: InvalidReason::UnknownRevision, suggestions, .. }) => {
            assert_eq!(suggestions.first().map(String::as_str), Some("main"));
        }
        other => panic!("an unknown side: {other:?}"),
    }
    // A name that exists followed by more ancestors than its history has: no other names are suggested.
    let count: usize = fixture.git(&["rev-list", "--count", "HEAD"]).trim().parse().expect("count");
    let past = format!("HEAD~{count}");
    match engine.history(&repo, &options(Some(&past), None, 5), UNLIMITED, &mut measure) {
        Err(Error::Invalid { reason: InvalidReason::UnknownRevision, suggestions, message, .. }) => {
            assert!(suggestions.is_empty(), "{message}: {suggestions:?}");
            assert!(message.contains("\"HEAD\" exists"), "{message}");
        }
        other => panic!("past the root: {other:?}"),
    }
}

#[test]
fn history_pages_are_pinned_while_a_commit_lands() {
    let fixture = fluxgit_fixtures::build(Scenario::ManyBranches);
    let expected = git_log(&fixture, &[]);
    let mut landed = 0;
    let pages = all_pages(&fixture, options(None, None, 10), || {
        if landed == 0 {
            fixture.git(&["commit", "-q", "--allow-empty", "-m", "landed between pages"]);
        }
        landed += 1;
    });
    assert!(landed >= 2, "several pages were read");
    assert_eq!(as_log(&pages), expected, "no commit skipped or repeated; the new one is not in the pinned walk");
    assert_eq!(git_log(&fixture, &["-1"])[0].5, "landed between pages");
}

#[test]
fn history_budget_cuts_move_commits_to_the_next_page() {
    let fixture = fluxgit_fixtures::build(Scenario::ManyBranches);
    let engine = engine_for(&fixture);
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
    let page = engine.history(&repo, &options(None, None, 50), 600, &mut measure).expect("page");
    assert!(measure(&page) <= 600);
    let shown = page.data.commits.len();
    let total = git_log(&fixture, &[]).len().min(50);
    assert!(shown > 0 && shown < total, "600 tokens hold some, not all, of {total} commits: {shown}");
    assert_eq!(page.omitted.0, vec![("commits", total - shown)]);
    let next = history::Options { cursor: page.data.next_cursor.clone(), ..options(None, None, 50) };
    let second = engine.history(&repo, &next, UNLIMITED, &mut measure).expect("second page").data;
    let expected = git_log(&fixture, &[]);
    assert_eq!(as_log(&second.commits)[0], expected[shown], "the next page starts right after the last shown");
    let floor = engine.history(&repo, &options(None, None, 50), 10, &mut measure).expect_err("below the floor");
    assert!(matches!(floor, Error::Invalid { reason: InvalidReason::BudgetBelowFloor, floor: Some(_), .. }));
}

#[test]
fn history_refuses_bad_cursors_refs_and_paths() {
    let fixture = fluxgit_fixtures::build(Scenario::ManyBranches);
    let other = fluxgit_fixtures::build(Scenario::Clean);
    let engine = engine_for(&fixture);
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
    let first = engine.history(&repo, &options(None, None, 5), UNLIMITED, &mut measure).expect("page").data;
    let cursor = first.next_cursor.expect("more pages");

    let reason = |engine: &Engine, path: &str, options: history::Options| {
        let repo = engine.resolve(path).expect("resolves");
        match engine.history(&repo, &options, UNLIMITED, &mut measure) {
            Err(Error::Invalid { reason, .. }) => reason,
            other => panic!("expected a refusal, got {other:?}"),
        }
    };
    let with_cursor = |cursor: &str, start: Option<&str>, path: Option<&str>| history::Options {
        cursor: Some(cursor.to_owned()),
        ..options(start, path, 5)
    };
    let tampered = cursor.replacen(".5.", ".6.", 1);
    assert_ne!(tampered, cursor);
    for bad in [tampered.as_str(), "garbage", "", "h1.x.y"] {
        assert_eq!(reason(&engine, repo_path(&fixture), with_cursor(bad, None, None)), InvalidReason::InvalidCursor);
    }
    assert_eq!(
        reason(&engine, repo_path(&fixture), with_cursor(&cursor, None, Some("changes"))),
        InvalidReason::InvalidCursor,
        "a cursor of another path",
    );
    let other_engine = engine_for(&other);
    assert_eq!(
        reason(&other_engine, repo_path(&other), with_cursor(&cursor, None, None)),
        InvalidReason::InvalidCursor,
        "a cursor of another repository",
    );
    assert_eq!(
        reason(&engine, repo_path(&fixture), options(Some("no-such-branch"), None, 5)),
        InvalidReason::UnknownRevision
    );
    assert_eq!(reason(&engine, repo_path(&fixture), options(Some("--all"), None, 5)), InvalidReason::InvalidRevision);
    assert_eq!(reason(&engine, repo_path(&fixture), options(None, Some("../x"), 5)), InvalidReason::InvalidPath);
    assert_eq!(reason(&engine, repo_path(&fixture), options(None, Some("/etc"), 5)), InvalidReason::InvalidPath);
}

#[test]
fn history_of_an_unborn_branch_is_empty() {
    let fixture = fluxgit_fixtures::build(Scenario::Unborn);
    let engine = engine_for(&fixture);
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
    let page = engine.history(&repo, &options(None, None, 5), UNLIMITED, &mut measure).expect("page").data;
    assert_eq!((page.tip, page.commits.len(), page.next_cursor), (None, 0, None));
}

/// `git log -g` of `name` as (new sha, selector, subject, identity name, email, time).
fn git_reflog(fixture: &Fixture, name: &str) -> Vec<(String, String, String, String, String, String)> {
    let dated = fixture.git(&["log", "-g", "--date=iso-strict", "--format=%gd", name]);
    fixture
        .git(&["log", "-g", "--format=%h%x1f%gd%x1f%gs%x1f%gn%x1f%ge", name])
        .lines()
        .zip(dated.lines())
        .map(|(line, dated)| {
            let fields: Vec<&str> = line.split('\x1f').collect();
            let field = |index: usize| fields[index].to_owned();
            let time = dated.split_once("@{").expect("selector").1.trim_end_matches('}').to_owned();
            (field(0), field(1), field(2), field(3), field(4), time)
        })
        .collect()
}

fn reflog_of(fixture: &Fixture, name: Option<&str>, limit: usize) -> reflog::Report {
    reflog_with(fixture, name, limit, false)
}

/// The reflog, with recoveries as proposals (`proposals`: a gateway is configured) or as git commands.
fn reflog_with(fixture: &Fixture, name: Option<&str>, limit: usize, proposals: bool) -> reflog::Report {
    let engine = engine_for(fixture);
    let repo = engine.resolve(repo_path(fixture)).expect("resolves");
    engine
        .reflog(&repo, name, limit, proposals.then_some(fluxgit_engine::Spelling::Underscore), UNLIMITED, &mut measure)
        .expect("reflog")
        .data
}

#[test]
fn reflog_equals_git_reflog_with_recovery_of_lost_tips() {
    let fixture = fluxgit_fixtures::build(Scenario::RewrittenHistory);
    let before = fluxgit_fixtures::tree_digest(fixture.root());
    for (name, shown) in [("HEAD", "HEAD"), ("main", "main"), ("refs/heads/topic", "topic")] {
        let report = reflog_of(&fixture, Some(name), 100);
        let expected = git_reflog(&fixture, name);
        assert_eq!(report.total, expected.len(), "{name}");
        let ours: Vec<_> = report
            .entries
            .iter()
            .map(|entry| {
                let subject = if entry.message.is_empty() {
                    entry.action.clone()
                } else {
                    format!("{}: {}", entry.action, entry.message)
                };
                (
                    entry.new_sha.clone().unwrap_or_default(),
                    format!("{shown}@{{{}}}", entry.index),
                    subject,
                    entry.identity.name.clone(),
                    entry.identity.email.clone(),
                    entry.time.clone(),
                )
            })
            .collect();
        assert_eq!(ours, expected, "git log -g {name}");

        // The old shas, from the raw log file (oldest line first).
        let log_file =
            std::fs::read_to_string(fixture.git_dir().join("logs").join(report.ref_name.clone())).expect("reflog file");
        let mut olds: Vec<&str> = log_file.lines().map(|line| &line[..40]).collect();
        olds.reverse();
        for (entry, old) in report.entries.iter().zip(olds) {
            let expected_old =
                (old != "0".repeat(40)).then(|| fixture.git(&["rev-parse", "--short", old]).trim().to_owned());
            assert_eq!(entry.old_sha, expected_old, "{name}@{{{}}}", entry.index);
            // Dropped tips: not an ancestor of the new tip, and `git rev-list <old> --not --all` not empty.
            let lost = expected_old.map_or(0, |old| {
                let new = entry.new_sha.clone().unwrap_or_default();
                let ancestor = fixture.git_raw(&["merge-base", "--is-ancestor", &old, &new]).status.success();
                if ancestor { 0 } else { fixture.git(&["rev-list", &old, "--not", "--all"]).lines().count() }
            });
            assert_eq!(entry.recovery.as_ref().map_or(0, |recovery| recovery.lost_commits), lost, "{name} {entry:?}");
            if let Some(recovery) = &entry.recovery {
                // Without a gateway: no proposal named, the git command a person runs instead.
                assert_eq!(Some(&recovery.lost_tip), entry.old_sha.as_ref());
                assert_eq!((recovery.tool, &recovery.arguments), (None, &None), "{entry:?}");
                let command = recovery.command.as_deref().expect("a command");
                // A movement of a branch puts the commits back on it (`lost.rs` runs those commands).
                let put_back =
                    [format!("git merge --ff-only {}", recovery.lost_tip), format!("..{}", recovery.lost_tip)];
                if command.starts_with("git merge") || command.starts_with("git cherry-pick") {
                    assert!(command == put_back[0] || command.ends_with(&put_back[1]), "{command}");
                    continue;
                }
                let words: Vec<&str> = command.split(' ').collect();
                let [git, branch, name, start_point] = words[..] else { panic!("{command}") };
                assert_eq!((git, branch), ("git", "branch"), "{command}");
                assert!(name.starts_with("recover/") && start_point.starts_with(&recovery.lost_tip), "{command}");
                let full = fixture.git(&["rev-parse", "--verify", &format!("{start_point}^{{commit}}")]);
                assert_eq!(full.trim(), start_point, "{command}: the full sha of a commit git still has");
                assert!(fixture.git_raw(&["check-ref-format", "--branch", name]).status.success(), "{command}");
            }
        }
        // With a gateway: the proposal and its arguments, for the same movements.
        let proposing = reflog_with(&fixture, Some(name), 100, true);
        for (entry, plain) in proposing.entries.iter().zip(&report.entries) {
            assert_eq!(entry.recovery.is_some(), plain.recovery.is_some(), "{name}@{{{}}}", entry.index);
            if let (Some(recovery), Some(plain)) = (&entry.recovery, &plain.recovery) {
                assert_eq!(recovery.tool, Some("operation_preview_branch"));
                let arguments = recovery.arguments.as_ref().expect("arguments");
                let start_point = arguments["startPoint"].as_str().expect("startPoint");
                assert!(start_point.len() == 40 && start_point.starts_with(&recovery.lost_tip), "{start_point}");
                let command = plain.command.as_deref().expect("a command");
                if command.starts_with("git branch ") {
                    assert_eq!(recovery.command, None, "the proposal stands for the side branch");
                    assert_eq!(
                        command,
                        format!("git branch {} {start_point}", arguments["name"].as_str().expect("name"))
                    );
                } else {
                    assert_eq!(recovery.command.as_deref(), Some(command), "the put-back command stays beside it");
                }
            }
        }
    }
    // HEAD's log drops: the reset (two experiments), the amend (the wip commit) and the rebase start (old topic).
    let head = reflog_of(&fixture, None, 100);
    let dropped: Vec<(&str, usize)> = head
        .entries
        .iter()
        .filter_map(|entry| entry.recovery.as_ref().map(|recovery| (entry.action.as_str(), recovery.lost_commits)))
        .collect();
    assert_eq!(dropped, vec![("rebase (start)", 1), ("commit (amend)", 1), ("reset", 2)]);
    assert_eq!(before, fluxgit_fixtures::tree_digest(fixture.root()), "reflog changed the repository");
}

#[test]
fn reflog_limit_budget_and_bad_names() {
    let fixture = fluxgit_fixtures::build(Scenario::RewrittenHistory);
    let all = reflog_of(&fixture, None, 100);
    let three = reflog_of(&fixture, None, 3);
    assert_eq!((three.total, three.entries.len()), (all.total, 3));
    assert_eq!(three.entries[..], all.entries[..3]);

    let engine = engine_for(&fixture);
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
    let cut = engine.reflog(&repo, None, 100, None, 300, &mut measure).expect("fits 300");
    assert!(measure(&cut) <= 300);
    assert_eq!(cut.omitted.0, vec![("entries", all.entries.len() - cut.data.entries.len())]);
    assert!(cut.omitted.0[0].1 > 0);

    // A ref without a reflog is an empty list; names that are no ref, or options, are refused.
    fixture.git(&["update-ref", "--no-deref", "refs/custom/plain", "HEAD"]);
    let plain = reflog_of(&fixture, Some("refs/custom/plain"), 10);
    assert_eq!((plain.total, plain.entries.len()), (0, 0));
    for (name, expected) in [
        ("no-such-ref", InvalidReason::UnknownRevision),
        ("--all", InvalidReason::InvalidRevision),
        ("ma\nin", InvalidReason::InvalidRevision),
    ] {
        match engine.reflog(&repo, Some(name), 10, None, UNLIMITED, &mut measure) {
            Err(Error::Invalid { reason, .. }) => assert_eq!(reason, expected, "{name:?}"),
            other => panic!("{name:?}: expected a refusal, got {other:?}"),
        }
    }
}

/// Issue 35: the reflog's text reads as `git reflog` (`<sha> main@{N}: <message>`), then who and when in
/// parentheses only where they change from the line above: the identity (`%gn`) when it differs, the day with the
/// time to the minute and the offset when the day or the offset differs, else the time of day alone; a lost tip's
/// recovery writes its full sha abbreviated, and that abbreviation names the lost commit in git.
#[test]
fn reflog_text_says_identity_and_date_where_they_change() {
    let fixture = fluxgit_fixtures::build(Scenario::RewrittenHistory);
    // Another identity a day later, with another offset, then back to the fixture's identity; a reset drops both.
    let run = |args: &[&str], envs: &[(&str, &str)]| {
        let mut command = fixture.git_command(fixture.path());
        command.args(args).envs(envs.iter().copied());
        let output = command.output().expect("git runs");
        assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    };
    fixture.git(&["checkout", "-q", "main"]);
    let later = [("GIT_COMMITTER_NAME", "Bob Other"), ("GIT_COMMITTER_DATE", "@1900000000 +0200")];
    run(&["commit", "-q", "--allow-empty", "-m", "feat: by another hand"], &later);
    run(&["commit", "-q", "--allow-empty", "-m", "feat: a second one"], &later);
    fixture.git(&["commit", "-q", "--allow-empty", "-m", "feat: back home"]);
    fixture.git(&["reset", "-q", "--hard", "HEAD~3"]);

    let engine = engine_for(&fixture);
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
    let result = engine.reflog(&repo, Some("main"), 100, None, UNLIMITED, &mut measure).expect("reflog");
    let text = fluxgit_engine::render::reflog(&result, &repo.text_options());

    let git = git_reflog(&fixture, "main");
    assert!(git.iter().any(|entry| entry.3 == "Bob Other") && git.iter().any(|entry| entry.5.ends_with("+02:00")));
    let mut expected = vec![format!("# refs/heads/main ({} movements)", git.len())];
    let mut last: Option<(String, String)> = None;
    for (sha, selector, subject, name, _, time) in &git {
        let (day, clock, zone) = (&time[..10], &time[11..16], &time[19..]);
        let mut when = Vec::new();
        if last.as_ref().is_none_or(|(previous, _)| previous != name) {
            when.push(name.clone());
        }
        let stamp = format!("{day}{zone}");
        if last.as_ref().is_some_and(|(_, previous)| *previous == stamp) {
            when.push(clock.to_owned());
        } else {
            when.push(format!("{day} {clock}{zone}"));
        }
        last = Some((name.clone(), stamp));
        expected.push(format!("{sha} {selector}: {subject} ({})", when.join(", ")));
    }
    let shown: Vec<&str> = text.lines().filter(|line| !line.starts_with("  lost ")).collect();
    assert_eq!(shown, expected, "{text}");
    assert!(text.matches("Bob Other").count() == 1 && text.contains("+02:00"), "{text}");

    // The reset's recovery names the lost commits as `git log --not --all` does, then puts them back on main (which
    // has not moved since) with `git merge --ff-only <abbreviated lost tip>`, the tip naming main@{1} in git.
    let recovery = result.data.entries[0].recovery.as_ref().expect("the reset dropped commits");
    let line = text.lines().find(|line| line.starts_with("  lost ")).expect("a recovery line");
    let tip = &recovery.lost_tip;
    let named =
        fixture.git(&["log", "--format=%h", "main@{1}", "--not", "--all"]).lines().collect::<Vec<_>>().join(" ");
    assert_eq!(line, format!("  lost {} commits {named}: git merge --ff-only {tip}", recovery.lost_commits));
    let full = fixture.git(&["rev-parse", "--verify", &format!("{tip}^{{commit}}")]);
    assert_eq!(full.trim(), fixture.git(&["rev-parse", "main@{1}"]).trim());
    assert!(text.len() < serde_json::to_string(&result).expect("serialises").len(), "{text}");
}
