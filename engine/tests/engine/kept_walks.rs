//! Kept walks: `repo.history` pages and `repo.scope`'s recent commits and churn continued from a walk the engine
//! kept, against fresh walks (`scope::read`, a new engine) and the git CLI: deep pages cost their limit, not the
//! pages before them; answers stay equal after every kind of history rewrite and with skewed committer dates.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use common::{engine_for, measure, repo_path};
use fluxgit_engine::scope::{self, Scope};
use fluxgit_engine::{Engine, history};
use fluxgit_fixtures::{CLOCK_START, Fixture, Scenario};

const UNLIMITED: usize = 1_000_000;
const DAY: i64 = 86_400;

/// Every page of `git log [start] [-- path]` through `engine`, `limit` commits a page: (short sha, subject).
fn pages(engine: &Engine, fixture: &Fixture, start: Option<&str>, path: Option<&str>, limit: usize) -> Vec<String> {
    let mut shown = Vec::new();
    let mut cursor = None;
    loop {
        let repo = engine.resolve(repo_path(fixture)).expect("resolves");
        let options = history::Options {
            start: start.map(str::to_owned),
            path: path.map(str::to_owned),
            limit,
            cursor: cursor.clone(),
            symbol: None,
        };
        let page = engine.history(&repo, &options, UNLIMITED, &mut measure).expect("page").data;
        assert!(page.commits.len() <= limit);
        shown.extend(page.commits.iter().map(|commit| format!("{} {}", commit.sha, commit.subject)));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return shown,
        }
    }
}

fn git_log(fixture: &Fixture, start: Option<&str>, path: Option<&str>) -> Vec<String> {
    let mut args = vec!["log", "--format=%h %s"];
    args.extend(start);
    if let Some(path) = path {
        args.extend(["--", path]);
    }
    fixture.git(&args).lines().map(str::to_owned).collect()
}

/// A commit changing `file`, with its author and committer dates set to `time` (seconds), which may be older than
/// its parent's (a skewed clock).
fn commit_at(fixture: &Fixture, file: &str, message: &str, time: i64, author: (&str, &str)) {
    let path = fixture.path().join(file);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("dirs");
    let before = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::write(&path, format!("{before}{message}\n")).expect("writes");
    fixture.git(&["add", file]);
    let date = format!("@{time} +0000");
    let status = Command::new("git")
        .args(["-c", "commit.gpgsign=false", "commit", "-q", "-m", message])
        .current_dir(fixture.path())
        .env("GIT_AUTHOR_NAME", author.0)
        .env("GIT_AUTHOR_EMAIL", author.1)
        .env("GIT_COMMITTER_NAME", author.0)
        .env("GIT_COMMITTER_EMAIL", author.1)
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .status()
        .expect("git runs");
    assert!(status.success(), "commit {message}");
}

/// A linear history of `count` more commits on `main`, alternating `a/` and `b/` files, one hour apart.
fn grow(fixture: &Fixture, count: usize) {
    let base = CLOCK_START as i64 + 30 * DAY;
    for index in 0..count {
        let file = if index % 3 == 0 { format!("a/f{}.txt", index % 4) } else { format!("b/g{}.txt", index % 5) };
        commit_at(fixture, &file, &format!("step {index}"), base + index as i64 * 3600, ("Ann", "ann@example.com"));
    }
}

#[test]
fn deep_pages_continue_the_kept_walk_and_equal_git_log() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    grow(&fixture, 60);
    let engine = engine_for(&fixture);
    let total = git_log(&fixture, None, None).len();
    for (path, limit) in [(None, 4), (Some("a"), 3), (Some("b/g1.txt"), 2)] {
        let before = engine.walked_commits();
        let expected = git_log(&fixture, None, path);
        assert_eq!(pages(&engine, &fixture, None, path, limit), expected, "{path:?} by {limit}");
        // One walk for all the pages: every commit is taken from the queue once, however many pages there are
        // (page N of a fresh walk would take N x limit commits again).
        let walked = engine.walked_commits() - before;
        assert!(walked >= expected.len() as u64, "{path:?} by {limit}: the kept walk served the pages");
        assert!(walked <= total as u64 + 1, "{path:?} by {limit}: {walked} commits walked for {total}");
    }
    // Another page size over the same tip and path continues the same walk: nothing walked again.
    let before = engine.walked_commits();
    assert_eq!(pages(&engine, &fixture, None, None, 200), git_log(&fixture, None, None));
    assert_eq!(engine.walked_commits(), before, "the kept walk of HEAD answers pages of any size");
    // The same pages again: from memory, nothing walked.
    let before = engine.walked_commits();
    assert_eq!(pages(&engine, &fixture, None, Some("a"), 3), git_log(&fixture, None, Some("a")));
    assert_eq!(engine.walked_commits(), before, "a kept walk answers repeated pages");
}

#[test]
fn kept_walks_stay_equal_to_git_log_across_history_rewrites() {
    let fixture = fluxgit_fixtures::build(Scenario::RewrittenHistory);
    grow(&fixture, 12);
    let engine = engine_for(&fixture);
    let check = |step: &str| {
        for (start, path) in [(None, None), (None, Some("a")), (Some("main"), Some("b")), (None, Some("src"))] {
            for limit in [2, 5] {
                let expected = git_log(&fixture, start, path);
                assert_eq!(pages(&engine, &fixture, start, path, limit), expected, "{step}: {start:?} {path:?}");
                // A fresh engine (a fresh walk) agrees.
                let fresh = engine_for(&fixture);
                assert_eq!(pages(&fresh, &fixture, start, path, limit), expected, "{step}: fresh");
            }
        }
    };
    check("start");
    fixture.git(&["reset", "-q", "--hard", "HEAD~3"]);
    check("reset");
    commit_at(&fixture, "a/new.txt", "after the reset", CLOCK_START as i64 + 90 * DAY, ("Bo", "bo@example.com"));
    fixture.git(&["commit", "-q", "--amend", "-m", "amended after the reset"]);
    check("amend");
    fixture.git(&["checkout", "-q", "-b", "topic2", "HEAD~2"]);
    commit_at(&fixture, "a/topic.txt", "on topic", CLOCK_START as i64 + 91 * DAY, ("Bo", "bo@example.com"));
    fixture.git(&["rebase", "-q", "main"]);
    check("rebase");
    fixture.git(&["checkout", "-q", "main"]);
    fixture.git(&["merge", "-q", "--no-ff", "-m", "merge topic2", "topic2"]);
    check("merge");
    fixture.git(&["branch", "-f", "topic2", "main~2"]);
    fixture.git(&["checkout", "-q", "topic2"]);
    check("forced branch move");
}

/// Scope's history fields: recent commits, churn commits, author count, authors (email, name, commits).
type HistoryFields = (Vec<String>, usize, usize, Vec<(String, String, usize)>);

fn history_fields(scope: &Scope) -> HistoryFields {
    let churn = &scope.churn;
    (
        scope.recent_commits.iter().map(|commit| format!("{} {}", commit.sha, commit.subject)).collect(),
        churn.commits,
        churn.author_count,
        churn.authors.iter().map(|author| (author.email.clone(), author.name.clone(), author.commits)).collect(),
    )
}

#[test]
fn scope_from_a_kept_walk_equals_fresh_walks_and_git_with_skewed_clocks() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let base = CLOCK_START as i64 + 30 * DAY;
    let ann = ("Ann", "ann@example.com");
    let bo = ("Bo", "bo@example.com");
    // Dates out of order along the history (a child older than its parent), and a side branch merged back.
    commit_at(&fixture, "a/one.txt", "one", base, ann);
    commit_at(&fixture, "a/two.txt", "two", base + 10 * DAY, bo);
    commit_at(&fixture, "b/three.txt", "three (older than its parent)", base + 2 * DAY, ann);
    fixture.git(&["checkout", "-q", "-b", "side", "HEAD~1"]);
    commit_at(&fixture, "a/side.txt", "side one", base + 5 * DAY, bo);
    commit_at(&fixture, "b/side.txt", "side two (skewed)", base + DAY, bo);
    fixture.git(&["checkout", "-q", "main"]);
    commit_at(&fixture, "a/four.txt", "four", base + 12 * DAY, ann);
    let status = Command::new("git")
        .args(["-c", "commit.gpgsign=false", "merge", "-q", "--no-ff", "-m", "merge side", "side"])
        .current_dir(fixture.path())
        .env("GIT_AUTHOR_NAME", "Cy")
        .env("GIT_AUTHOR_EMAIL", "cy@example.com")
        .env("GIT_COMMITTER_NAME", "Cy")
        .env("GIT_COMMITTER_EMAIL", "cy@example.com")
        .env("GIT_AUTHOR_DATE", format!("@{} +0000", base + 11 * DAY))
        .env("GIT_COMMITTER_DATE", format!("@{} +0000", base + 11 * DAY))
        .status()
        .expect("git runs");
    assert!(status.success());
    commit_at(&fixture, "a/five.txt", "five", base + 3 * DAY, ann);

    let engine = engine_for(&fixture);
    let mut compared = 0;
    let mut nonempty = 0;
    // Windows in a scrambled order, so kept walks are continued from narrower and wider windows alike.
    let nows = [base + 13 * DAY, base + 4 * DAY, base + 30 * DAY, base + 2 * DAY, base + 11 * DAY];
    for path in [".", "a", "b", "a/side.txt", "b/three.txt"] {
        for now in nows {
            for days in [1, 3, 9, 2, 30, 365] {
                let options = scope::Options { path: path.to_owned(), churn_days: days, recent_commits: 3, now };
                let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
                let kept = engine.scope(&repo, &options, UNLIMITED, &mut measure).expect("scope").data;
                let git_repo = gix::open(fixture.path()).expect("opens");
                let fresh = scope::read(&git_repo, &options, &fluxgit_engine::Interrupt::new()).expect("fresh scope");
                let label = format!("{path}, {days} days before {now}");
                assert_eq!(history_fields(&kept), history_fields(&fresh), "{label}");
                // And git: commits and emails in the window.
                let since = format!("--since=@{}", now - i64::from(days) * DAY);
                let until = format!("--until=@{now}");
                let emails = fixture.git(&["log", &since, &until, "--format=%ae", "--", path]);
                let mut per_email: BTreeMap<String, usize> = BTreeMap::new();
                for email in emails.lines() {
                    *per_email.entry(email.to_owned()).or_default() += 1;
                }
                let shown: BTreeMap<String, usize> =
                    kept.churn.authors.iter().map(|author| (author.email.clone(), author.commits)).collect();
                assert_eq!(shown, per_email, "{label}: git log --since --until");
                compared += 1;
                nonempty += usize::from(kept.churn.commits > 0);
            }
        }
    }
    assert_eq!(compared, 150);
    assert!(nonempty > 40, "meaningful windows: {nonempty}");
}
