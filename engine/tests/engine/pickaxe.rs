//! `repo.search`'s content search against git's pickaxe: on a history built with git (a string added, removed,
//! moved within a file, renamed with its file, on a merged side branch, in a binary file, under a path, in
//! unicode) the commits listed for `added` equal `git log -S<s> --branches HEAD [-- path]` and those for
//! `addedRegex` equal `git log -G<re>`, in the same order; on this checkout, for a few strings, equal to git's over
//! the last 300 commits; a spent time budget says how far it came, a triggered interrupt cancels, bad arguments
//! are refused.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{measure, repo_path};
use fluxgit_engine::search::{Options as SearchOptions, Report, Sort};
use fluxgit_engine::{Engine, Error, Interrupt, InvalidReason, Options};
use fluxgit_fixtures::{Fixture, Scenario};

const UNLIMITED: usize = 1_000_000;

fn engine_at(root: &Path) -> Engine {
    Engine::new(Options { allowed_roots: vec![root.canonicalize().expect("root exists")] })
}

fn run(engine: &Engine, path: &str, options: &SearchOptions) -> Result<Report, Error> {
    let repo = engine.resolve(path).expect("resolves");
    engine.search(&repo, options, UNLIMITED, &mut measure).map(|budgeted| budgeted.data)
}

/// `-S` (`regex` false) or `-G` options for `pattern`, every match listed.
fn content(pattern: &str, regex: bool) -> SearchOptions {
    SearchOptions {
        added: (!regex).then(|| pattern.to_owned()),
        added_regex: regex.then(|| pattern.to_owned()),
        limit: fluxgit_engine::search::MAX_LIMIT,
        ..SearchOptions::default()
    }
}

fn listed(report: &Report) -> Vec<String> {
    report.commits.iter().map(|commit| commit.sha.clone()).collect()
}

/// What `git log` lists for the same content search, over the local branches and HEAD.
fn git_pickaxe(fixture: &Fixture, options: &SearchOptions) -> Vec<String> {
    let mut args = vec!["log".to_owned(), "--format=%h".to_owned()];
    if let Some(added) = &options.added {
        args.push(format!("-S{added}"));
    }
    if let Some(regex) = &options.added_regex {
        args.push(format!("-G{regex}"));
    }
    args.extend(["--branches".to_owned(), "HEAD".to_owned()]);
    if let Some(path) = &options.path {
        args.extend(["--".to_owned(), path.clone()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fixture.git(&args).lines().map(str::to_owned).collect()
}

fn write(fixture: &Fixture, path: &str, content: &[u8]) {
    let file = fixture.path().join(path);
    std::fs::create_dir_all(file.parent().expect("has a parent")).expect("creates the directory");
    std::fs::write(file, content).expect("writes the file");
}

fn commit(fixture: &Fixture, message: &str) {
    fixture.git(&["add", "-A"]);
    fixture.git(&["commit", "-q", "-m", message]);
}

/// The clean fixture grown by one commit per pickaxe case, a side branch merged in.
fn pickaxe_history() -> Fixture {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    write(&fixture, "src/needle.txt", b"alpha\nneedle here\nbeta\n");
    commit(&fixture, "add the needle");
    write(&fixture, "src/needle.txt", b"alpha\nbeta\ngamma\ndelta\nneedle here\n");
    commit(&fixture, "move the needle to the end, same count");
    write(&fixture, "src/needle.txt", b"alpha\nbeta\ngamma\ndelta\nneedle here\nneedle again\n");
    commit(&fixture, "a second needle");
    fixture.git(&["mv", "src/needle.txt", "docs/needle.txt"]);
    commit(&fixture, "rename the needle's file");
    write(&fixture, "docs/needle.txt", b"alpha\nbeta\ngamma\ndelta\nneedle here\nneedle again\nepsilon\n");
    fixture.git(&["mv", "docs/needle.txt", "docs/renamed.txt"]);
    commit(&fixture, "rename and edit, needles kept");
    fixture.git(&["checkout", "-q", "-b", "side"]);
    write(&fixture, "side.txt", b"a needle on the side\n");
    commit(&fixture, "side: needle");
    fixture.git(&["checkout", "-q", "-"]);
    write(&fixture, "main.txt", b"unrelated\n");
    commit(&fixture, "main: unrelated");
    fixture.git(&["merge", "-q", "--no-ff", "-m", "merge side", "side"]);
    write(&fixture, "blob.bin", b"needle\0binary\n");
    commit(&fixture, "a binary needle");
    write(&fixture, "blob.bin", b"needle\0binary\nneedle\n");
    commit(&fixture, "a second binary needle");
    write(&fixture, "unicode.txt", "Grüße, Ünïcödé needle ✓\n".as_bytes());
    commit(&fixture, "unicode");
    write(&fixture, "docs/renamed.txt", b"alpha\nbeta\ngamma\ndelta\nneedle here\nepsilon\n");
    commit(&fixture, "drop one needle");
    std::fs::remove_file(fixture.path().join("side.txt")).expect("removes side.txt");
    commit(&fixture, "drop the side needle");
    fixture
}

#[test]
fn pickaxe_cases_match_git_log_s_and_g() {
    let fixture = pickaxe_history();
    let engine = engine_at(fixture.root());
    let with_path = |mut options: SearchOptions, path: &str| {
        options.path = Some(path.to_owned());
        options
    };
    let cases = vec![
        content("needle", false),
        content("needle", true),
        content("needle here", false),
        content("^needle", true),
        content("needle$", true),
        content("ne+dle (here|again)", true),
        content("Needle", false),
        content("Ünïcödé", false),
        content("[✓]", true),
        content("binary", false),
        content("binary", true),
        content("alpha", false),
        content("epsilon", true),
        content("nothing-like-this", false),
        with_path(content("needle", false), "docs"),
        with_path(content("needle", true), "docs/renamed.txt"),
        with_path(content("needle", false), "src"),
        with_path(content("needle", false), "side.txt"),
        SearchOptions { start: Some("side".into()), ..content("needle", false) },
        SearchOptions { query: "needle".into(), sort: Some(Sort::Newest), ..content("needle", false) },
    ];
    let mut nonempty = 0;
    for options in &cases {
        let ours = run(&engine, repo_path(&fixture), options).expect("searches");
        let mut git = git_pickaxe(&fixture, options);
        if options.start.is_some() {
            git = fixture.git(&["log", "--format=%h", "-Sneedle", "side"]).lines().map(str::to_owned).collect();
        }
        if !options.query.is_empty() {
            git = fixture
                .git(&["log", "--format=%h", "-Sneedle", "-i", "--grep=needle", "--branches", "HEAD"])
                .lines()
                .map(str::to_owned)
                .collect();
        }
        assert_eq!(listed(&ours), git, "{options:?}");
        assert_eq!(ours.total, git.len(), "{options:?}");
        assert!(ours.stopped.is_none(), "{options:?}: {:?}", ours.stopped);
        assert!(ours.commits.iter().all(|commit| !commit.files.is_empty()), "{options:?}");
        nonempty += usize::from(!git.is_empty());
    }
    assert!(nonempty >= 15, "the cases list commits: {nonempty} of {}", cases.len());
}

#[test]
fn pickaxe_lists_the_files_whose_count_changed_and_never_the_merge() {
    let fixture = pickaxe_history();
    let engine = engine_at(fixture.root());
    let report = run(&engine, repo_path(&fixture), &content("needle", false)).expect("searches");
    let files = |subject: &str| {
        report.commits.iter().find(|commit| commit.subject == subject).map(|commit| commit.files.clone())
    };
    assert_eq!(files("a second needle"), Some(vec!["src/needle.txt".to_owned()]));
    assert_eq!(files("drop one needle"), Some(vec!["docs/renamed.txt".to_owned()]));
    assert_eq!(files("a second binary needle"), Some(vec!["blob.bin".to_owned()]));
    assert_eq!(files("move the needle to the end, same count"), None, "-S: the count did not change");
    assert_eq!(files("rename the needle's file"), None, "a pure rename changes no count");
    assert_eq!(files("merge side"), None, "git log shows no diff for a merge");
    let regex = run(&engine, repo_path(&fixture), &content("needle", true)).expect("searches");
    assert!(regex.commits.iter().any(|commit| commit.subject == "move the needle to the end, same count"));
    assert!(regex.commits.iter().all(|commit| !commit.subject.contains("binary")), "-G skips binary files");
}

#[test]
fn pickaxe_on_this_checkout_matches_git_over_the_last_300_commits() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
    let git = |args: &[&str]| -> String {
        let output = std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git runs");
        assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).expect("utf-8")
    };
    let dates = git(&["log", "--format=%cI", "-n", "300", "HEAD"]);
    let since = dates.lines().last().expect("the checkout has commits").to_owned();
    // A linked worktree's git dir lies in the main checkout's: both are allowed.
    let common = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]);
    let common = Path::new(common.trim()).canonicalize().expect("the common git dir exists");
    let engine = Engine::new(Options { allowed_roots: vec![root.canonicalize().expect("root exists"), common] });
    let path = root.to_str().expect("utf-8 path");
    let mut found = 0;
    for (pattern, regex) in [("Interrupt", false), ("MAX_LIMIT", false), ("fn search", true), ("pickaxe", false)] {
        let options = SearchOptions {
            start: Some("HEAD".into()),
            since: Some(since.clone()),
            time_budget: Some(Duration::from_secs(600)),
            ..content(pattern, regex)
        };
        let ours = run(&engine, path, &options).expect("searches");
        let flag = if regex { format!("-G{pattern}") } else { format!("-S{pattern}") };
        let theirs: Vec<String> = git(&["log", "--format=%H", &flag, &format!("--since={since}"), "HEAD"])
            .lines()
            .map(str::to_owned)
            .collect();
        let full: Vec<String> =
            ours.commits.iter().map(|commit| git(&["rev-parse", &commit.sha]).trim().to_owned()).collect();
        // Past the limit, the count alone is compared.
        let shown = theirs.len().min(fluxgit_engine::search::MAX_LIMIT);
        assert_eq!(full, theirs[..shown], "{pattern}");
        assert_eq!(ours.total, theirs.len(), "{pattern}");
        found += theirs.len();
    }
    assert!(found > 0, "the strings occur in this checkout's recent history");
}

#[test]
fn a_spent_time_budget_says_how_far_the_walk_came() {
    let fixture = pickaxe_history();
    let engine = engine_at(fixture.root());
    let options = SearchOptions { time_budget: Some(Duration::ZERO), ..content("needle", false) };
    let report = run(&engine, repo_path(&fixture), &options).expect("searches");
    let commits = fixture.git(&["rev-list", "--count", "--branches", "HEAD"]);
    let stopped = report.stopped.expect("the budget ran out");
    assert!(stopped.contains(&format!("after 0 of {} commits", commits.trim())), "{stopped}");
    assert_eq!((report.total, report.commits.len()), (0, 0));
}

#[test]
fn a_triggered_interrupt_cancels_a_content_search() {
    let fixture = pickaxe_history();
    let engine = engine_at(fixture.root());
    let interrupt = Interrupt::new();
    interrupt.trigger();
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves").with_interrupt(interrupt);
    let result = engine.search(&repo, &content("needle", false), UNLIMITED, &mut measure);
    assert!(matches!(result, Err(Error::Cancelled)), "{result:?}");
}

#[test]
fn bad_content_arguments_are_refused() {
    let fixture = pickaxe_history();
    let engine = engine_at(fixture.root());
    let both = SearchOptions { added_regex: Some("b".into()), ..content("a", false) };
    for options in [both, content("(unclosed", true), content("", false), content(&"x".repeat(2000), true)] {
        match run(&engine, repo_path(&fixture), &options) {
            Err(Error::Invalid { reason: InvalidReason::InvalidQuery, .. }) => {}
            other => panic!("{options:?}: {other:?}"),
        }
    }
}
