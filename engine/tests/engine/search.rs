//! `repo.search` and the commit index against the git CLI: the same commits as `git log --all-match -i -F
//! --grep=<word>... [--author] [--since] [--until] --branches HEAD [-- path]` for each filter on several fixtures,
//! from the index and from the history walk; the index kept equal to `git rev-list --branches HEAD` after commits,
//! resets, amends, rebases, forced and deleted branches; a truncated segment file rebuilt; a `meta.json` listing its
//! segments three times and FIFOs in place of the index's files rebuilt, each commit answered once and every call
//! within 5 s; bad input refused.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use common::{commit_tree, measure, repo_path};
use fluxgit_engine::commit_index::Status;
use fluxgit_engine::search::{Options as SearchOptions, Report};
use fluxgit_engine::{Engine, Error, InvalidReason, Options};
use fluxgit_fixtures::{Fixture, Scenario};

const UNLIMITED: usize = 1_000_000;

/// An engine over the fixture, with its indexes under `index_dir` when given.
fn engine(fixture: &Fixture, index_dir: Option<&Path>) -> Engine {
    let root = fixture.root().canonicalize().expect("fixture root exists");
    let engine = Engine::new(Options { allowed_roots: vec![root] });
    match index_dir {
        Some(dir) => engine.with_index(dir.to_path_buf()),
        None => engine,
    }
}

/// One search, its index settled first when `settle`.
fn search(engine: &Engine, fixture: &Fixture, options: &SearchOptions, settle: bool) -> Result<Report, Error> {
    let repo = engine.resolve(repo_path(fixture)).expect("resolves");
    if settle {
        let status = engine.index_settle(&repo, Duration::from_secs(120)).expect("an index is configured");
        assert!(matches!(status, Status::Ready(_)), "index not ready: {status:?}");
    }
    engine.search(&repo, options, UNLIMITED, &mut measure).map(|budgeted| budgeted.data)
}

/// The abbreviated shas `git log` lists for the same filters, over the local branches and HEAD (or `start`).
fn git_log(fixture: &Fixture, options: &SearchOptions) -> BTreeSet<String> {
    git_list(fixture, options, &[]).into_iter().collect()
}

/// [`git_log`] in git's order, with `extra` options (`--use-mailmap`).
fn git_list(fixture: &Fixture, options: &SearchOptions, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> =
        vec!["log".into(), "--format=%h".into(), "--all-match".into(), "-i".into(), "-F".into()];
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    for term in words(&options.query) {
        args.push(format!("--grep={term}"));
    }
    if let Some(author) = &options.author {
        args.push(format!("--author={author}"));
    }
    for (flag, value) in [("--since", &options.since), ("--until", &options.until)] {
        if let Some(value) = value {
            // git reads a bare date at the current time of day; the tool reads it at midnight UTC.
            let value = if value.len() == 10 { format!("{value}T00:00:00Z") } else { value.clone() };
            args.push(format!("{flag}={value}"));
        }
    }
    match &options.start {
        Some(start) => args.push(start.clone()),
        None => args.extend(["--branches".to_owned(), "HEAD".to_owned()]),
    }
    if let Some(path) = &options.path {
        args.extend(["--".to_owned(), path.clone()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fixture.git(&args).lines().map(str::to_owned).collect()
}

fn listed(report: &Report) -> Vec<String> {
    report.commits.iter().map(|commit| commit.sha.clone()).collect()
}

/// The query's words and phrases as git patterns (the oracle's own split, quotes removed).
fn words(query: &str) -> Vec<String> {
    query
        .split('"')
        .enumerate()
        .flat_map(|(index, part)| {
            if index % 2 == 1 { vec![part.to_owned()] } else { part.split_whitespace().map(str::to_owned).collect() }
        })
        .collect()
}

fn shas(report: &Report) -> BTreeSet<String> {
    report.commits.iter().map(|commit| commit.sha.clone()).collect()
}

fn query(query: &str) -> SearchOptions {
    SearchOptions { query: query.to_owned(), limit: 200, ..SearchOptions::default() }
}

/// Every filter, alone and together, on `fixture`: the index, the walk and git agree.
fn check_filters(fixture: &Fixture, cases: &[SearchOptions]) {
    let index_dir = tempfile::tempdir().expect("temp dir");
    let indexed = engine(fixture, Some(index_dir.path()));
    let walking = engine(fixture, None);
    for options in cases {
        let expected = git_log(fixture, options);
        let from_index = search(&indexed, fixture, options, true).expect("searches");
        assert_eq!(
            from_index.walked.is_some(),
            options.start.is_some(),
            "{options:?}: the index answers without a ref"
        );
        assert_eq!(shas(&from_index), expected, "{options:?}: index vs git log");
        assert_eq!(from_index.total, expected.len(), "{options:?}: total");
        let walked = search(&walking, fixture, options, false).expect("searches");
        assert!(walked.walked.is_some(), "{options:?}: no index, walked");
        assert_eq!(shas(&walked), expected, "{options:?}: walk vs git log");
        assert_eq!(walked.total, expected.len());
    }
}

#[test]
fn monorepo_filters_match_git_log() {
    let fixture = fluxgit_fixtures::build(Scenario::Monorepo);
    let with = |base: &str, change: &dyn Fn(&mut SearchOptions)| {
        let mut options = query(base);
        change(&mut options);
        options
    };
    let cases = vec![
        query("api"),
        query("FEAT"),
        query("feat web"),
        query("\"route parameters\""),
        query("fix \"request timeout\""),
        query("a"),
        query("ap"),
        query("nothing-like-this"),
        query("merge"),
        with("feat", &|o| o.author = Some("bob".into())),
        with("fix", &|o| o.author = Some("Bob Builder <bob@".into())),
        with("e", &|o| o.path = Some("packages/api".into())),
        with("e", &|o| o.path = Some("packages/web/src/theme.css".into())),
        with("e", &|o| o.path = Some("packages/web/".into())),
        with("e", &|o| o.path = Some("pack".into())),
        with("e", &|o| o.since = Some("2025-09-01".into())),
        with("e", &|o| o.until = Some("2025-10-10T10:00:00Z".into())),
        with("e", &|o| {
            o.since = Some("2025-08-01".into());
            o.until = Some("2025-12-01".into());
            o.author = Some("alice".into());
            o.path = Some("packages".into());
        }),
        with("feat", &|o| o.start = Some("web-theme".into())),
    ];
    check_filters(&fixture, &cases);
}

#[test]
fn branches_and_rewrites_match_git_log() {
    for scenario in [Scenario::ManyBranches, Scenario::RewrittenHistory, Scenario::Clean] {
        let fixture = fluxgit_fixtures::build(scenario);
        let cases = vec![
            query("feat"),
            query("fix"),
            query("step 1"),
            query("\"notes (\""),
            query("e"),
            SearchOptions { path: Some("src".into()), ..query("e") },
            SearchOptions { start: Some("HEAD~1".into()), ..query("e") },
        ];
        check_filters(&fixture, &cases);
    }
}

#[test]
fn ranking_is_relevance_then_date_and_limits_cut() {
    let fixture = fluxgit_fixtures::build(Scenario::ManyBranches);
    let index_dir = tempfile::tempdir().expect("temp dir");
    let engine = engine(&fixture, Some(index_dir.path()));
    let all = search(&engine, &fixture, &query("e"), true).expect("searches");
    assert!(all.total > 5);
    let limited = search(&engine, &fixture, &SearchOptions { limit: 5, ..query("e") }, true).expect("searches");
    assert_eq!(limited.total, all.total, "total is exact beyond the limit");
    assert_eq!(limited.commits, all.commits[..5], "the limit keeps the best");
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
    let cut = engine.search(&repo, &query("e"), 300, &mut measure).expect("fits 300 tokens");
    assert!(measure(&cut) <= 300);
    assert_eq!(cut.data.total, all.total);
    let omitted = serde_json::to_value(&cut.omitted).expect("serialises")["commits"].as_u64().expect("cut") as usize;
    assert_eq!(cut.data.commits.len() + omitted, all.commits.len());
}

/// The best `limit` are kept while collecting (a heap, pruned by score for words): any limit lists the first
/// commits of the full ranking, ties in score broken by date and then by index order, for a word (pruned), two words
/// and a phrase (one pass), with exact totals.
#[test]
fn any_limit_lists_the_head_of_the_full_ranking() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    for n in 0..40 {
        // Equal messages tie in score; a few say the word twice (a higher score) or have a longer body (lower).
        let message = match n % 7 {
            0 => format!("chore chore: tidy {n:02}"),
            3 => format!("chore: tidy {n:02}\n\nwith a longer body that lowers the score of the word"),
            _ => format!("chore: tidy {n:02}"),
        };
        commit(&fixture, &format!("f{n}.txt"), &message);
    }
    let index_dir = tempfile::tempdir().expect("temp dir");
    let engine = engine(&fixture, Some(index_dir.path()));
    for text in ["chore", "tidy chore", "\"chore: tidy\""] {
        let all = search(&engine, &fixture, &SearchOptions { limit: 200, ..query(text) }, true).expect("searches");
        assert_eq!(all.total, git_log(&fixture, &query(text)).len(), "{text}");
        assert_eq!(all.commits.len(), all.total.min(200), "{text}");
        for limit in [1, 2, 3, 5, 8, 13, 21, 34] {
            let some = search(&engine, &fixture, &SearchOptions { limit, ..query(text) }, true).expect("searches");
            assert_eq!(some.total, all.total, "{text}, limit {limit}: total is exact");
            assert_eq!(some.commits, all.commits[..limit], "{text}, limit {limit}");
        }
    }
}

/// A rebuilt index removes what older schema versions kept for the same repository, and nothing else.
#[test]
fn indexes_of_other_versions_are_removed_on_rebuild() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let index_dir = tempfile::tempdir().expect("temp dir");
    let current = {
        let engine = engine(&fixture, Some(index_dir.path()));
        search(&engine, &fixture, &query("e"), true).expect("searches");
        let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
        engine.index_dir(&repo).expect("an index dir")
    };
    let digest = current.file_name().expect("a digest").to_owned();
    let version = format!("v{}", fluxgit_engine::commit_index::SCHEMA_VERSION);
    assert_eq!(current.parent().and_then(Path::file_name), Some(std::ffi::OsStr::new(&version)));
    let plant = |relative: &Path| {
        std::fs::create_dir_all(index_dir.path().join(relative)).expect("mkdir");
        std::fs::write(index_dir.path().join(relative).join("meta.json"), "{}").expect("write");
    };
    let old = Path::new("v1").join(&digest);
    let other_repository = Path::new("v1").join("0123456789abcdef");
    let only_this = Path::new("v0").join(&digest);
    let not_a_version = Path::new("vx").join(&digest);
    for planted in [&old, &other_repository, &only_this, &not_a_version] {
        plant(planted);
    }
    // An index that opens stays: nothing is removed.
    let engine_again = engine(&fixture, Some(index_dir.path()));
    search(&engine_again, &fixture, &query("e"), true).expect("searches");
    assert!(index_dir.path().join(&old).exists(), "an index that opens is no rebuild");
    drop(engine_again);
    // A rebuild (the current one is gone) removes the older versions of this repository.
    std::fs::remove_dir_all(&current).expect("remove the current index");
    let engine = engine(&fixture, Some(index_dir.path()));
    let report = search(&engine, &fixture, &query("e"), true).expect("searches");
    assert_eq!(shas(&report), git_log(&fixture, &query("e")));
    assert!(current.join("meta.json").exists(), "rebuilt");
    assert!(!index_dir.path().join(&old).exists(), "v1 of this repository removed");
    assert!(index_dir.path().join(&other_repository).exists(), "another repository's v1 kept");
    assert!(!index_dir.path().join("v0").exists(), "an emptied version directory removed");
    assert!(index_dir.path().join(&not_a_version).exists(), "not a version: kept");
}

#[test]
fn words_inside_long_words_and_around_punctuation_match_git_log() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let long = format!("{}zzyzx{}", "a".repeat(300), "b".repeat(300));
    commit(&fixture, "a.txt", &format!("long {long} word"));
    commit(&fixture, "b.txt", "snake_case_word and dotted.name\n\nbody: Zzyzx-Road (x2)");
    commit(&fixture, "c.txt", "zzyzx alone");
    let cases = vec![
        query("zzyzx"),
        query("ZZYZX"),
        query("aaazzyzxbbb"),
        query(&long[..280]),
        query("case"),
        query("_case_"),
        query("e_w"),
        query("dotted.name"),
        query("x2"),
        query("word zzyzx"),
        query("road"),
    ];
    check_filters(&fixture, &cases);
}

/// The number of commits `git rev-list --branches HEAD` lists: what the index must hold.
fn reachable(fixture: &Fixture) -> u64 {
    fixture.git(&["rev-list", "--count", "--branches", "HEAD"]).trim().parse().expect("a count")
}

fn commit(fixture: &Fixture, file: &str, message: &str) {
    std::fs::write(fixture.path().join(file), message).expect("writes");
    fixture.git(&["add", file]);
    fixture.git(&["commit", "-q", "-m", message]);
}

/// Searches `probe` through the index and asserts, at `step`, that it finds what `git log` finds and that the index
/// holds every reachable commit; returns the report.
fn index_matches_git(engine: &Engine, fixture: &Fixture, probe: &SearchOptions, step: &str) -> Report {
    let report = search(engine, fixture, probe, true).expect("searches");
    assert_eq!(shas(&report), git_log(fixture, probe), "{step}");
    let repo = engine.resolve(repo_path(fixture)).expect("resolves");
    assert_eq!(engine.index_stats(&repo).expect("stats").commits, reachable(fixture), "{step}: indexed commits");
    report
}

#[test]
fn index_follows_commits_and_history_rewrites() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let index_dir = tempfile::tempdir().expect("temp dir");
    let engine = engine(&fixture, Some(index_dir.path()));
    let probe = query("probe");
    let check = |step: &str| {
        let report = index_matches_git(&engine, &fixture, &probe, step);
        assert_eq!(report.walked, None, "{step}");
    };
    check("start");
    commit(&fixture, "a.txt", "probe one\n\nbody mentions retry");
    commit(&fixture, "b.txt", "probe two");
    check("two commits");
    fixture.git(&["reset", "-q", "--hard", "HEAD~1"]);
    check("reset");
    fixture.git(&["commit", "-q", "--amend", "-m", "probe one amended"]);
    check("amend");
    fixture.git(&["checkout", "-q", "-b", "topic", "HEAD~1"]);
    commit(&fixture, "c.txt", "probe topic");
    fixture.git(&["rebase", "-q", "main"]);
    check("rebase");
    fixture.git(&["checkout", "-q", "main"]);
    fixture.git(&["branch", "-f", "topic", "HEAD~2"]);
    check("forced branch move");
    fixture.git(&["checkout", "-q", "--detach", "HEAD~1"]);
    commit(&fixture, "d.txt", "probe detached");
    check("detached commit");
    fixture.git(&["checkout", "-q", "main"]);
    check("detached commit left behind");
    fixture.git(&["branch", "-D", "topic"]);
    check("branch deleted");
}

/// The index's update plan is exact whatever the commit dates: `p` is dated ten years before its parent `y`, and
/// `h` reaches `y` only through `p`, so a date-ordered walk of `v`'s commits hidden by `h` stops too late (it would
/// add `y` and everything below again) and, the other way, drops commits `h` still reaches.
#[test]
fn index_follows_branches_with_skewed_dates() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let index_dir = tempfile::tempdir().expect("temp dir");
    let engine = engine(&fixture, Some(index_dir.path()));
    let probe = query("probe");
    let check = |step: &str| {
        index_matches_git(&engine, &fixture, &probe, step);
    };
    let at = |minutes: i64| fluxgit_fixtures::CLOCK_START as i64 + 400 * 24 * 3_600 + minutes * 60;
    let year = 365 * 24 * 3_600;
    let root = fixture.git(&["rev-parse", "main"]).trim().to_owned();
    let y = commit_tree(&fixture, &[&root], "probe y", at(1));
    let p = commit_tree(&fixture, &[&y], "probe p, dated years before its parent", at(0) - 10 * year);
    let s = commit_tree(&fixture, &[&p], "probe s", at(2));
    let a = commit_tree(&fixture, &[&y], "probe a", at(3));
    let v = commit_tree(&fixture, &[&a, &s], "probe v merges s", at(4));
    let h = commit_tree(&fixture, &[&s], "probe h", at(5));
    fixture.git(&["update-ref", "refs/heads/main", &h]);
    check("main on h");
    fixture.git(&["update-ref", "refs/heads/topic", &v]);
    check("topic on v added");
    fixture.git(&["update-ref", "-d", "refs/heads/topic"]);
    check("topic deleted");
    fixture.git(&["update-ref", "refs/heads/main", &v]);
    fixture.git(&["update-ref", "refs/heads/other", &h]);
    check("main on v, other on h");
    fixture.git(&["update-ref", "-d", "refs/heads/other"]);
    check("other deleted");
}

#[test]
fn a_truncated_segment_is_rebuilt_and_the_call_answers() {
    let fixture = fluxgit_fixtures::build(Scenario::ManyBranches);
    let index_dir = tempfile::tempdir().expect("temp dir");
    let options = query("feat");
    let expected = git_log(&fixture, &options);
    let dir = {
        let engine = engine(&fixture, Some(index_dir.path()));
        assert_eq!(shas(&search(&engine, &fixture, &options, true).expect("searches")), expected);
        let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
        engine.index_dir(&repo).expect("an index dir")
    };
    let mut segments: Vec<_> = std::fs::read_dir(&dir)
        .expect("index dir")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "pos" || ext == "idx" || ext == "term"))
        .collect();
    segments.sort();
    assert!(!segments.is_empty(), "segment files in {}", dir.display());
    for segment in &segments {
        let length = std::fs::metadata(segment).expect("metadata").len();
        std::fs::OpenOptions::new().write(true).open(segment).expect("opens").set_len(length / 2).expect("truncates");
    }
    // A new process (engine) meets the damaged index: the call answers, from git or a rebuilt index.
    let engine = engine(&fixture, Some(index_dir.path()));
    let report = search(&engine, &fixture, &options, false).expect("answers despite the damage");
    assert_eq!(shas(&report), expected);
    let settled = search(&engine, &fixture, &options, true).expect("searches");
    assert_eq!(settled.walked, None, "rebuilt");
    assert_eq!(shas(&settled), expected);
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
    assert_eq!(engine.index_stats(&repo).expect("stats").commits, reachable(&fixture));
}

/// The index directory of `fixture`'s repository after a settled search by an engine that is then dropped (its
/// writer closed), and what `git log` finds for `options`.
fn built_index(fixture: &Fixture, index_dir: &Path, options: &SearchOptions) -> (std::path::PathBuf, BTreeSet<String>) {
    let expected = git_log(fixture, options);
    let engine = engine(fixture, Some(index_dir));
    assert_eq!(shas(&search(&engine, fixture, options, true).expect("searches")), expected);
    let repo = engine.resolve(repo_path(fixture)).expect("resolves");
    (engine.index_dir(&repo).expect("an index dir"), expected)
}

/// Asserts that `report` lists each of `expected` exactly once and counts them once.
fn each_once(report: &Report, expected: &BTreeSet<String>, step: &str) {
    let listed = listed(report);
    assert_eq!(listed.len(), listed.iter().collect::<BTreeSet<_>>().len(), "{step}: a commit repeated: {listed:?}");
    assert_eq!(listed.into_iter().collect::<BTreeSet<_>>(), *expected, "{step}");
    assert_eq!(report.total, expected.len(), "{step}: total");
}

#[test]
fn a_meta_json_listing_its_segments_three_times_answers_each_commit_once() {
    let fixture = fluxgit_fixtures::build(Scenario::ManyBranches);
    let index_dir = tempfile::tempdir().expect("temp dir");
    let options = query("feat");
    let (dir, expected) = built_index(&fixture, index_dir.path(), &options);
    let meta_path = dir.join("meta.json");
    let mut meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&meta_path).expect("meta.json")).expect("JSON");
    let segments = meta["segments"].as_array().expect("segments").clone();
    assert!(!segments.is_empty(), "{meta}");
    meta["segments"] = segments.iter().chain(&segments).chain(&segments).cloned().collect();
    std::fs::write(&meta_path, serde_json::to_vec(&meta).expect("serialises")).expect("write");

    let engine = engine(&fixture, Some(index_dir.path()));
    let report = search(&engine, &fixture, &options, false).expect("answers");
    each_once(&report, &expected, "first call");
    let settled = search(&engine, &fixture, &options, true).expect("searches");
    assert_eq!(settled.walked, None, "answered by the rebuilt index");
    each_once(&settled, &expected, "rebuilt");
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta_path).expect("meta.json")).expect("JSON");
    let ids: Vec<&str> = meta["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .map(|segment| segment["segment_id"].as_str().expect("an id"))
        .collect();
    assert_eq!(ids.len(), ids.iter().collect::<BTreeSet<_>>().len(), "the rebuilt meta.json lists each once: {ids:?}");
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
    assert_eq!(engine.index_stats(&repo).expect("stats").commits, reachable(&fixture));
}

/// A search by `engine` on a thread of its own, failing the test when it does not answer within 5 s.
fn search_within_5_s(engine: &std::sync::Arc<Engine>, fixture: &Fixture, options: &SearchOptions) -> Report {
    let engine = std::sync::Arc::clone(engine);
    let (path, options) = (repo_path(fixture).to_owned(), options.clone());
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let repo = engine.resolve(&path).expect("resolves");
        let _ = sender.send(engine.search(&repo, &options, UNLIMITED, &mut measure).map(|budgeted| budgeted.data));
    });
    receiver.recv_timeout(Duration::from_secs(5)).expect("the search answers within 5 s").expect("answers")
}

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[test]
fn fifos_in_place_of_the_index_files_are_rebuilt_and_never_wait() {
    let fixture = fluxgit_fixtures::build(Scenario::ManyBranches);
    let options = query("feat");
    // meta.json and .managed.json are read whole at open, a segment file is opened to be mapped, and the writer's
    // lock file is opened when new commits are taken in.
    let segment_file = |dir: &Path| {
        std::fs::read_dir(dir)
            .expect("index dir")
            .map(|entry| entry.expect("entry").path())
            .find(|path| path.extension().is_some_and(|ext| ext == "idx"))
            .expect("a segment file")
    };
    for target in ["meta.json", ".managed.json", "segment", ".tantivy-writer.lock"] {
        let index_dir = tempfile::tempdir().expect("temp dir");
        let (dir, _) = built_index(&fixture, index_dir.path(), &options);
        let file = if target == "segment" { segment_file(&dir) } else { dir.join(target) };
        mkfifo(&file);
        if target == ".tantivy-writer.lock" {
            commit(&fixture, "fifo-lock.txt", &format!("feat: a commit to take in past a FIFO lock {target}"));
        }
        let expected = git_log(&fixture, &options);
        // A new process meets the index: its first call answers at once, and the index is rebuilt (for the lock,
        // by this engine's next use: the failed write marked it broken).
        let engine = std::sync::Arc::new(engine(&fixture, Some(index_dir.path())));
        let report = search_within_5_s(&engine, &fixture, &options);
        each_once(&report, &expected, target);
        let settled = search(&engine, &fixture, &options, true).expect("searches");
        assert_eq!(settled.walked, None, "{target}: rebuilt");
        each_once(&settled, &expected, target);
        assert!(
            std::fs::symlink_metadata(&file).map_or(true, |metadata| metadata.is_file()),
            "{target}: the FIFO is gone with the old index"
        );
    }
}

#[test]
fn bad_input_is_refused() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let engine = engine(&fixture, None);
    let reason = |options: SearchOptions| match search(&engine, &fixture, &options, false) {
        Err(Error::Invalid { reason, .. }) => reason,
        other => panic!("{options:?} was not refused: {other:?}"),
    };
    assert_eq!(reason(query("  ")), InvalidReason::InvalidQuery);
    assert_eq!(reason(query("fix \"open")), InvalidReason::InvalidQuery);
    assert_eq!(reason(SearchOptions { author: Some(" ".into()), ..query("fix") }), InvalidReason::InvalidQuery);
    assert_eq!(reason(SearchOptions { since: Some("last week".into()), ..query("fix") }), InvalidReason::InvalidQuery);
    assert_eq!(reason(SearchOptions { start: Some("-n1".into()), ..query("fix") }), InvalidReason::InvalidRevision);
    assert_eq!(
        reason(SearchOptions { start: Some("no-such-ref".into()), ..query("fix") }),
        InvalidReason::UnknownRevision
    );
    assert_eq!(reason(SearchOptions { path: Some("../etc".into()), ..query("fix") }), InvalidReason::InvalidPath);
    assert_eq!(reason(SearchOptions { path: Some("/etc".into()), ..query("fix") }), InvalidReason::InvalidPath);
}

/// Commits a file as `author`.
fn commit_as(fixture: &Fixture, author: &str, path: &str, content: &str) {
    std::fs::write(fixture.path().join(path), content).expect("write");
    fixture.git(&["add", path]);
    fixture.git(&["commit", "-q", &format!("--author={author}"), "-m", &format!("chore: touch {path}")]);
}

#[test]
fn authors_match_as_recorded_or_through_the_mailmap() {
    let fixture = fluxgit_fixtures::build(Scenario::Monorepo);
    // Bob commits from an old address; `.mailmap` maps it (and his old name) to his current identity.
    commit_as(&fixture, "Bob Stone <bob@old.example>", "packages/api/old.ts", "old\n");
    commit_as(&fixture, "Bob Stone <bob@old.example>", "packages/api/older.ts", "older\n");
    commit_as(&fixture, "Erin <erin@example.com>", ".mailmap", "Bob Builder <bob@example.com> <bob@old.example>\n");
    let index_dir = tempfile::tempdir().expect("temp dir");
    let indexed = engine(&fixture, Some(index_dir.path()));
    let walking = engine(&fixture, None);
    for author in ["bob@old.example", "Bob Builder", "bob@example.com", "STONE", "erin"] {
        for query in ["", "touch"] {
            let options = SearchOptions { author: Some(author.to_owned()), ..self::query(query) };
            // `git log --author` matches the recorded identity, `--use-mailmap` the mapped one: either matches.
            let mut expected: BTreeSet<String> =
                git_list(&fixture, &options, &["--no-use-mailmap"]).into_iter().collect();
            expected.extend(git_list(&fixture, &options, &["--use-mailmap"]));
            assert!(!expected.is_empty(), "{author}: the oracle finds commits");
            let from_index = search(&indexed, &fixture, &options, true).expect("searches");
            assert!(from_index.walked.is_none());
            assert_eq!(shas(&from_index), expected, "{author} {query:?}: index vs git log");
            assert_eq!(from_index.total, expected.len(), "{author}");
            let walked = search(&walking, &fixture, &options, false).expect("searches");
            assert_eq!(shas(&walked), expected, "{author} {query:?}: walk vs git log");
        }
    }
    // The old address alone, through the mapping: what `git log --use-mailmap` finds and plain `--author` misses.
    let options = SearchOptions { author: Some("bob@example.com".into()), ..query("") };
    let mapped = git_list(&fixture, &options, &["--use-mailmap"]);
    let recorded = git_list(&fixture, &options, &["--no-use-mailmap"]);
    assert_eq!(mapped.len(), recorded.len() + 2, "the two old-address commits are found only through the mailmap");
    // Authors are shown as `git log --format='%aN <%aE>'` shows them.
    let report = search(&indexed, &fixture, &options, true).expect("searches");
    let shown: Vec<String> = report
        .commits
        .iter()
        .map(|commit| serde_json::to_value(&commit.author).expect("json").as_str().expect("a string").to_owned())
        .collect();
    let mut args = vec!["log".to_owned(), "--no-walk=unsorted".to_owned(), "--format=%aN <%aE>".to_owned()];
    args.extend(report.commits.iter().map(|commit| commit.sha.clone()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let expected: Vec<String> = fixture.git(&args).lines().map(str::to_owned).collect();
    assert_eq!(shown, expected);
    assert!(shown.iter().all(|who| !who.contains("old.example")), "{shown:?}");
}

#[test]
fn without_a_query_the_newest_come_first_as_git_log_lists_them() {
    let fixture = fluxgit_fixtures::build(Scenario::Monorepo);
    let index_dir = tempfile::tempdir().expect("temp dir");
    let indexed = engine(&fixture, Some(index_dir.path()));
    let walking = engine(&fixture, None);
    let cases = [
        SearchOptions { author: Some("bob".into()), ..query("") },
        SearchOptions { since: Some("2025-12-01".into()), ..query("") },
        SearchOptions { until: Some("2025-12-01".into()), ..query("") },
        SearchOptions { path: Some("packages/api".into()), ..query("") },
        SearchOptions { author: Some("a".into()), since: Some("2025-11-15".into()), ..query("") },
        SearchOptions { author: Some("a".into()), limit: 2, ..query("") },
    ];
    for options in &cases {
        let mut expected = git_list(&fixture, options, &[]);
        assert!(!expected.is_empty(), "{options:?}: the oracle finds commits");
        let total = expected.len();
        expected.truncate(options.limit);
        let from_index = search(&indexed, &fixture, options, true).expect("searches");
        assert_eq!(listed(&from_index), expected, "{options:?}: index vs git log, in order");
        assert_eq!(from_index.total, total);
        let walked = search(&walking, &fixture, options, false).expect("searches");
        assert_eq!(listed(&walked), expected, "{options:?}: walk vs git log, in order");
    }
    // With a query, `sort: newest` lists the same commits in the same order from the index and from a walk.
    for words in ["feat", "fix", "a"] {
        let options = SearchOptions { sort: Some(fluxgit_engine::search::Sort::Newest), ..query(words) };
        let from_index = search(&indexed, &fixture, &options, true).expect("searches");
        let walked = search(&walking, &fixture, &options, false).expect("searches");
        assert_eq!(listed(&from_index), listed(&walked), "{words}: index and walk in the same order");
        assert_eq!(listed(&from_index), git_list(&fixture, &options, &[]), "{words}: newest first, as git log");
    }
    // Nothing to narrow the search: refused with a reason.
    match search(&walking, &fixture, &query(""), false) {
        Err(Error::Invalid { reason, message, .. }) => {
            assert_eq!(reason, InvalidReason::InvalidQuery);
            assert!(message.contains("author, path, since or until"), "{message}");
        }
        other => panic!("a search without query or filter was not refused: {other:?}"),
    }
}
