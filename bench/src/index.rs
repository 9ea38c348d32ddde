//! `fluxgit-bench index`: the commit index on the big-history fixture (50,000 commits, 500 branches) or, with
//! `--scenario blame-history`, on 80,000 commits of one branch: the time to build it from nothing, its size on disk
//! per 10,000 commits, the time to take in one new commit (on the next call, and with no call when the watcher
//! reports it), and `repo.search` (in-process engine calls: resolve, answer cut to its budget) against `git log
//! --all-match -i -F --grep=...` over the same refs, two ways: a query asked again with nothing changed (served by
//! the answer cache), and every call asking the index (the answer cache off: index freshness check, query,
//! documents of the `limit` best); `repo.history` deep pages (the kept walk continued, a fresh walk from the
//! cursor, `git log --skip`) and `repo.scope` cold and warm against `git log --since --until`. Raw numbers go to
//! `bench/results/index/numbers.json` (`numbers-blame-history.json`), a `## Index` (`## Index on 80,000 commits`)
//! section of `BENCHMARK.md` gives them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use fluxgit_engine::commit_index::Status;
use fluxgit_engine::{history, scope, search};
use fluxgit_fixtures::Scenario;
use serde::Serialize;

/// One `repo.search` measured.
#[derive(Debug, Serialize)]
pub(crate) struct SearchRun {
    label: &'static str,
    query: &'static str,
    path: Option<&'static str>,
    total: usize,
    /// The same query asked again, nothing changed: the answer cache serves it.
    warm_ms: f64,
    /// The answer cache off: each call asks the (open, current) index.
    index_ms: f64,
    git_ms: f64,
    git_total: usize,
}

/// One `repo.history` deep page measured.
#[derive(Debug, Serialize)]
pub(crate) struct PageRun {
    path: Option<&'static str>,
    /// 1-based page number, `limit` commits a page.
    page: usize,
    limit: usize,
    /// Page 1 in an engine that has read the repository before (a `repo.history` page of `HEAD~1`): a new walk from
    /// the tip.
    first_ms: f64,
    /// The page after the pages before it, in the same process (the kept walk continues).
    kept_ms: f64,
    /// The same page from its cursor in a fresh engine: a walk from the tip over every earlier page (what every
    /// page cost before kept walks).
    fresh_ms: f64,
    /// `git log --skip=<(page-1) x limit> -n <limit> [-- path]`.
    git_ms: f64,
}

/// One `repo.scope` measured.
#[derive(Debug, Serialize)]
pub(crate) struct ScopeRun {
    path: &'static str,
    churn_commits: usize,
    /// The first call of a fresh engine.
    cold_ms: f64,
    /// The median of the calls after it, nothing changed, once the repository's watches are in place (what a
    /// running server's later calls see: the first call's end releases the watches, added in the background).
    warm_ms: f64,
    /// The slowest of those calls.
    warm_max_ms: f64,
    /// The same calls with watching off (the repository served stat-validated: the work-tree status is read again
    /// on every call), median.
    stat_validated_ms: f64,
    /// `git log --since --until --format=%ae -- path` (the churn alone).
    git_churn_ms: f64,
}

/// Everything measured.
#[derive(Debug, Serialize)]
pub(crate) struct IndexRun {
    scenario: &'static str,
    commits: u64,
    build_s: f64,
    bytes: u64,
    bytes_per_10k_commits: u64,
    /// Median over [`UPDATES`] commits, each taken in by the next call (watching off, so the call does it).
    one_commit_ms: f64,
    /// Median time from a commit's end to its index being current with no call made (the watcher and the feed).
    fed_ms: f64,
    searches: Vec<SearchRun>,
    pages: Vec<PageRun>,
    scopes: Vec<ScopeRun>,
}

/// Commits made one by one to measure updates.
const UPDATES: usize = 9;

/// `(label, query, path)` per scenario.
type Queries = &'static [(&'static str, &'static str, Option<&'static str>)];

const BIG_HISTORY_QUERIES: Queries = &[
    ("a rare word", "topic-0123", None),
    ("a phrase", "\"tidy d42\"", None),
    ("two words", "fix correct", None),
    ("a word under a path", "revise", Some("src/m007")),
    ("a word in 10,000 commits", "feat", None),
];

const BLAME_HISTORY_QUERIES: Queries = &[
    ("a rare word", "41234", None),
    ("a phrase", "\"touch f007\"", None),
    ("two words", "revise lines", None),
    ("a word under a path", "touch", Some("src/other/f007.txt")),
    ("a word in 78,000 commits", "chore", None),
];

/// `(path, page, limit)` of the `repo.history` deep pages measured per scenario.
type Pages = &'static [(Option<&'static str>, usize, usize)];

/// What one scenario measures.
struct Setup {
    /// The fixture's directory name.
    name: &'static str,
    queries: Queries,
    pages: Pages,
    /// `repo.scope` paths.
    scopes: &'static [&'static str],
}

/// The fixture's name, its queries, deep pages and scope paths.
fn setup(scenario: Scenario) -> anyhow::Result<Setup> {
    match scenario {
        Scenario::BigHistory => Ok(Setup {
            name: "big-history",
            queries: BIG_HISTORY_QUERIES,
            pages: &[(None, 50, 20), (Some("src/m007"), 3, 10)],
            scopes: &[".", "src/m007"],
        }),
        Scenario::BlameHistory => Ok(Setup {
            name: "blame-history",
            queries: BLAME_HISTORY_QUERIES,
            pages: &[(None, 50, 20), (Some("src/other/f007.txt"), 3, 10)],
            scopes: &[".", "src/blamed.c", "src/other/f007.txt"],
        }),
        other => bail!("no queries for {other:?}: big-history or blame-history"),
    }
}

/// The `## ...` section `render` writes for `scenario`'s run.
pub(crate) fn section(run: &IndexRun) -> &'static str {
    if run.scenario == "blame-history" { "Index on 80,000 commits" } else { "Index" }
}

/// The numbers file of `scenario`'s run.
pub(crate) fn numbers_file(run: &IndexRun) -> String {
    if run.scenario == "blame-history" { "numbers-blame-history.json".to_owned() } else { "numbers.json".to_owned() }
}

fn millis(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

/// Builds `scenario`'s fixture in `fixtures_dir/<name>-index` and measures; `samples` warm calls per query.
pub(crate) fn run(fixtures_dir: &Path, samples: usize, scenario: Scenario) -> anyhow::Result<IndexRun> {
    let setup = setup(scenario)?;
    let name = setup.name;
    let dir = fixtures_dir.join(format!("{name}-index"));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    eprintln!("fluxgit-bench index: building the {name} fixture ...");
    let fixture = fluxgit_fixtures::build_in(scenario, &dir);
    let index_dir = tempfile::tempdir()?;
    let options = || fluxgit_engine::Options { allowed_roots: vec![fixture.root().to_path_buf()] };
    let repo_path = fixture.path().to_str().context("utf-8 fixture path")?.to_owned();

    // One new commit taken in by the next call: watching off, so the call does the update itself.
    let unwatched = fluxgit_engine::Engine::with_cache(
        options(),
        fluxgit_engine::cache::Options { watch: false, ..fluxgit_engine::cache::Options::default() },
    )
    .with_index(index_dir.path().to_path_buf());
    let repo = unwatched.resolve(&repo_path)?;
    eprintln!("fluxgit-bench index: building the index ...");
    let started = Instant::now();
    let status = unwatched.index_settle(&repo, Duration::from_secs(1800)).context("an index dir")?;
    let build_s = started.elapsed().as_secs_f64();
    if !matches!(status, Status::Ready(_)) {
        bail!("the index did not become ready: {status:?}");
    }
    let stats = unwatched.index_stats(&repo).context("index stats")?;
    eprintln!("fluxgit-bench index: {} commits indexed in {build_s:.1} s", stats.commits);
    let mut updates = Vec::new();
    for round in 0..UPDATES {
        fixture.git(&["commit", "-q", "--allow-empty", "-m", &format!("bench: one more commit {round}")]);
        let started = Instant::now();
        let repo = unwatched.resolve(&repo_path)?;
        let status = unwatched.index_settle(&repo, Duration::from_secs(60)).context("an index dir")?;
        updates.push(millis(started));
        if !matches!(status, Status::Ready(_)) {
            bail!("the index did not take the new commit: {status:?}");
        }
    }
    let one_commit_ms = median(updates);
    drop(unwatched);

    // The same, fed by the watcher: no call, the feed thread takes the commit in.
    let engine = fluxgit_engine::Engine::new(options()).with_index(index_dir.path().to_path_buf());
    let repo = engine.resolve(&repo_path)?;
    engine.cache_diagnostics(&repo);
    engine.index_settle(&repo, Duration::from_secs(60)).context("an index dir")?;
    let mut fed = Vec::new();
    for round in 0..UPDATES {
        fixture.git(&["commit", "-q", "--allow-empty", "-m", &format!("bench: fed by the watcher {round}")]);
        let started = Instant::now();
        loop {
            let repo = engine.resolve(&repo_path)?;
            if engine.index_is_current(&repo) {
                break;
            }
            if started.elapsed() > Duration::from_secs(60) {
                bail!("the watcher did not bring the index up to date");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        fed.push(millis(started));
    }
    let fed_ms = median(fed);
    eprintln!("fluxgit-bench index: one commit: next call {one_commit_ms:.1} ms, fed by the watcher {fed_ms:.1} ms");

    // The same index, asked by an engine without answer cache: every call goes to the index.
    let uncached = fluxgit_engine::cache::Options { enabled: false, ..Default::default() };
    let index_engine =
        fluxgit_engine::Engine::with_cache(options(), uncached).with_index(index_dir.path().to_path_buf());
    let mut searches = Vec::new();
    for (label, query, path) in setup.queries {
        let options = search::Options {
            query: (*query).to_owned(),
            path: path.map(str::to_owned),
            limit: 20,
            ..search::Options::default()
        };
        let (total, warm) = searches_timed(&engine, &repo_path, &options, samples, label)?;
        let (index_total, index) = searches_timed(&index_engine, &repo_path, &options, samples, label)?;
        let (git_ms, git_total) = git_log(fixture.path(), query, *path, 3)?;
        if git_total != total || index_total != total {
            bail!("{label}: {total} matches ({index_total} from the index), git log lists {git_total}");
        }
        eprintln!(
            "fluxgit-bench index: {label}: {total} matches, {:.2} ms again, {:.2} ms from the index, git {:.0} ms",
            median(warm.clone()),
            median(index.clone()),
            git_ms
        );
        searches.push(SearchRun {
            label,
            query,
            path: *path,
            total,
            warm_ms: median(warm),
            index_ms: median(index),
            git_ms,
            git_total,
        });
    }
    drop(index_engine);
    drop(engine);
    let mut pages = Vec::new();
    for (path, page, limit) in setup.pages {
        pages.push(deep_page(&fixture, &repo_path, *path, *page, *limit, samples)?);
    }
    let mut scopes = Vec::new();
    for path in setup.scopes {
        scopes.push(scope_timed(&fixture, &repo_path, path, samples)?);
    }
    Ok(IndexRun {
        scenario: name,
        commits: stats.commits,
        build_s,
        bytes: stats.bytes,
        bytes_per_10k_commits: stats.bytes * 10_000 / stats.commits.max(1),
        one_commit_ms,
        fed_ms,
        searches,
        pages,
        scopes,
    })
}

fn engine_for(fixture: &fluxgit_fixtures::Fixture) -> fluxgit_engine::Engine {
    fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots: vec![fixture.root().to_path_buf()] })
}

fn tokens<T: Serialize>(answer: &T) -> usize {
    fluxgit_engine::budget::count_tokens(&serde_json::to_string(answer).unwrap_or_default())
}

/// `repo.history` page `page` of HEAD (`limit` a page): after the pages before it in one engine, and from its
/// cursor in a fresh engine; `git log --skip` for the same commits (all three must list the same commits).
fn deep_page(
    fixture: &fluxgit_fixtures::Fixture,
    repo_path: &str,
    path: Option<&'static str>,
    page: usize,
    limit: usize,
    samples: usize,
) -> anyhow::Result<PageRun> {
    let options = |cursor: Option<String>| history::Options {
        start: None,
        path: path.map(str::to_owned),
        limit,
        cursor,
        symbol: None,
    };
    let mut first = Vec::new();
    let mut kept = Vec::new();
    let mut fresh = Vec::new();
    let mut shas = Vec::new();
    for _ in 0..samples.clamp(1, 5) {
        let engine = engine_for(fixture);
        // The repository read once (opened, packs mapped) by a walk of another tip, so page 1 times its own walk.
        let warm_up = history::Options { start: Some("HEAD~1".to_owned()), limit: 1, ..options(None) };
        engine.history(&engine.resolve(repo_path)?, &warm_up, 32_000, &mut tokens)?;
        let mut cursor = None;
        for number in 1..=page {
            let started = Instant::now();
            let repo = engine.resolve(repo_path)?;
            let answer = engine.history(&repo, &options(cursor.clone()), 32_000, &mut tokens)?.data;
            if number == 1 {
                first.push(millis(started));
            }
            if number == page {
                kept.push(millis(started));
                shas = answer.commits.iter().map(|commit| commit.sha.clone()).collect();
                break;
            }
            cursor = Some(answer.next_cursor.context("history ended before the page")?);
        }
        let engine = engine_for(fixture);
        let started = Instant::now();
        let repo = engine.resolve(repo_path)?;
        let answer = engine.history(&repo, &options(cursor.clone()), 32_000, &mut tokens)?.data;
        fresh.push(millis(started));
        let fresh_shas: Vec<String> = answer.commits.iter().map(|commit| commit.sha.clone()).collect();
        if fresh_shas != shas {
            bail!("page {page}: the kept and the fresh walk disagree");
        }
    }
    let skip = format!("--skip={}", (page - 1) * limit);
    let count = format!("-n{limit}");
    let mut args = vec!["log", "--format=%h", skip.as_str(), count.as_str()];
    if let Some(path) = path {
        args.extend(["--", path]);
    }
    let mut git = Vec::new();
    let mut git_shas = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let output =
            Command::new("git").args(&args).current_dir(fixture.path()).env("GIT_OPTIONAL_LOCKS", "0").output()?;
        git.push(millis(started));
        git_shas = String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect();
    }
    if git_shas != shas {
        bail!("page {page} of {path:?}: git log --skip lists other commits");
    }
    let run = PageRun {
        path,
        page,
        limit,
        first_ms: median(first),
        kept_ms: median(kept),
        fresh_ms: median(fresh),
        git_ms: median(git),
    };
    eprintln!("fluxgit-bench index: {run:?}");
    Ok(run)
}

/// `repo.scope` of `path` with a 90-day churn window ending an hour after the last commit and 10 recent commits:
/// the first call of a fresh engine, then `samples` calls (median) once the repository's watches are in place, and
/// `samples` calls of an engine with watching off (stat-validated) after its own first call; every answer equal to
/// the cold one, the churn's commit count checked against `git log --since --until -- path`.
fn scope_timed(
    fixture: &fluxgit_fixtures::Fixture,
    repo_path: &str,
    path: &'static str,
    samples: usize,
) -> anyhow::Result<ScopeRun> {
    let last: i64 = fixture.git(&["log", "-1", "--format=%ct"]).trim().parse()?;
    let now = last + 3600;
    let options = scope::Options { path: path.to_owned(), churn_days: 90, recent_commits: 10, now };
    let engine = engine_for(fixture);
    let started = Instant::now();
    let repo = engine.resolve(repo_path)?;
    let cold = engine.scope(&repo, &options, 2000, &mut tokens)?.data;
    let cold_ms = millis(started);
    // The call has ended (a server drops its handle with the answer): its watches are added in the background, and
    // a later call reads fresh until they are in place. Measure the calls after that.
    drop(repo);
    let diagnostics = engine.cache_diagnostics(&engine.resolve(repo_path)?);
    if diagnostics.cache != "watched" {
        bail!("{path}: the repository is not watched: {diagnostics:?}");
    }
    let warm = warm_scopes(&engine, repo_path, &options, &cold, samples)?;
    let unwatched = fluxgit_engine::Engine::with_cache(
        fluxgit_engine::Options { allowed_roots: vec![fixture.root().to_path_buf()] },
        fluxgit_engine::cache::Options { watch: false, ..fluxgit_engine::cache::Options::default() },
    );
    warm_scopes(&unwatched, repo_path, &options, &cold, 1)?;
    let stat_validated = warm_scopes(&unwatched, repo_path, &options, &cold, samples)?;
    let since = format!("--since=@{}", now - 90 * 86_400);
    let until = format!("--until=@{now}");
    let started = Instant::now();
    let output = Command::new("git")
        .args(["log", &since, &until, "--format=%ae", "--", path])
        .current_dir(fixture.path())
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()?;
    let git_churn_ms = millis(started);
    let git_commits = output.stdout.split(|byte| *byte == b'\n').filter(|line| !line.is_empty()).count();
    if git_commits != cold.churn.commits {
        bail!("{path}: churn {} commits, git log {git_commits}", cold.churn.commits);
    }
    let run = ScopeRun {
        path,
        churn_commits: cold.churn.commits,
        cold_ms,
        warm_max_ms: warm.iter().copied().fold(0.0, f64::max),
        warm_ms: median(warm),
        stat_validated_ms: median(stat_validated),
        git_churn_ms,
    };
    eprintln!("fluxgit-bench index: {run:?}");
    Ok(run)
}

/// `samples` timed `repo.scope` calls of `engine` (resolve included), each checked equal to `cold`.
fn warm_scopes(
    engine: &fluxgit_engine::Engine,
    repo_path: &str,
    options: &scope::Options,
    cold: &scope::Scope,
    samples: usize,
) -> anyhow::Result<Vec<f64>> {
    let mut times = Vec::new();
    for _ in 0..samples.max(1) {
        let started = Instant::now();
        let repo = engine.resolve(repo_path)?;
        let answer = engine.scope(&repo, options, 2000, &mut tokens)?.data;
        times.push(millis(started));
        if answer != *cold {
            bail!("{}: a warm scope differs from the cold one", options.path);
        }
    }
    Ok(times)
}

/// `samples` timed calls of `repo.search` (after one untimed): the total and the times in ms.
fn searches_timed(
    engine: &fluxgit_engine::Engine,
    repo_path: &str,
    options: &search::Options,
    samples: usize,
    label: &str,
) -> anyhow::Result<(usize, Vec<f64>)> {
    let mut total = 0;
    let mut times = Vec::new();
    for _ in 0..samples.max(1) + 1 {
        let started = Instant::now();
        let repo = engine.resolve(repo_path)?;
        let answer = engine.search(&repo, options, 3000, &mut |answer| {
            fluxgit_engine::budget::count_tokens(&serde_json::to_string(answer).unwrap_or_default())
        })?;
        times.push(millis(started));
        if answer.data.walked.is_some() {
            bail!("{label}: the index did not answer: {:?}", answer.data.walked);
        }
        total = answer.data.total;
    }
    times.remove(0);
    Ok((total, times))
}

/// The median time of `git log --all-match -i -F --grep=<word>... --branches HEAD [-- path]` and its line count.
fn git_log(repo: &Path, query: &str, path: Option<&str>, samples: usize) -> anyhow::Result<(f64, usize)> {
    let mut args: Vec<String> =
        vec!["log".into(), "--format=%h".into(), "--all-match".into(), "-i".into(), "-F".into()];
    for (index, part) in query.split('"').enumerate() {
        if index % 2 == 1 {
            args.push(format!("--grep={part}"));
        } else {
            args.extend(part.split_whitespace().map(|word| format!("--grep={word}")));
        }
    }
    args.extend(["--branches".to_owned(), "HEAD".to_owned()]);
    if let Some(path) = path {
        args.extend(["--".to_owned(), path.to_owned()]);
    }
    let mut times = Vec::new();
    let mut lines = 0;
    for _ in 0..samples {
        let started = Instant::now();
        let output = Command::new("git").args(&args).current_dir(repo).env("GIT_OPTIONAL_LOCKS", "0").output()?;
        times.push(millis(started));
        if !output.status.success() {
            bail!("git {} failed", args.join(" "));
        }
        lines = output.stdout.split(|byte| *byte == b'\n').filter(|line| !line.is_empty()).count();
    }
    Ok((median(times), lines))
}

/// Writes `numbers.json` into `dir`.
pub(crate) fn write_results(dir: &Path, run: &IndexRun) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let file = dir.join(numbers_file(run));
    std::fs::write(&file, serde_json::to_string_pretty(run)? + "\n")?;
    Ok(file)
}

/// The `## Index` section.
pub(crate) fn render(run: &IndexRun, invocation: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## {}\n", section(run));
    let refs = if run.scenario == "blame-history" {
        "the blame-history fixture ({} commits of one branch)"
    } else {
        "the big-history fixture ({} commits reachable from its 501 local branches and HEAD)"
    };
    let _ = writeln!(
        out,
        "The commit index behind `repo.search` on {}, release build, in-process engine calls (resolve, search, \
         answer cut to its budget); `git log` over the same refs. `again`: the same query asked again with \
         nothing changed (the answer cache serves it, as for the other read tools); `index`: the answer cache off, \
         every call asks the index (freshness check of the tips, query, exact total, the `limit` best loaded). \
         Reproduce with `{invocation}`; raw numbers in `bench/results/index/{}`.\n",
        refs.replace("{}", &run.commits.to_string()),
        numbers_file(run)
    );
    let _ = writeln!(out, "| what | number |\n|---|---|");
    let _ = writeln!(out, "| build from nothing ({} commits) | {:.1} s |", run.commits, run.build_s);
    let _ = writeln!(
        out,
        "| size on disk | {:.1} MB ({:.1} MB per 10,000 commits) |",
        run.bytes as f64 / 1e6,
        run.bytes_per_10k_commits as f64 / 1e6
    );
    let _ = writeln!(
        out,
        "| one new commit taken in by the next call (median of {UPDATES}) | {:.1} ms |",
        run.one_commit_ms
    );
    let _ = writeln!(
        out,
        "| one new commit taken in with no call, fed by the watcher (commit to index current, median of {UPDATES}) | \
         {:.1} ms |\n",
        run.fed_ms
    );
    let _ = writeln!(
        out,
        "| `repo.search` | matches | again (median) | index (median) | `git log --grep` | ratio again | ratio index \
         |\n|---|---|---|---|---|---|---|"
    );
    for search in &run.searches {
        let path = search.path.map(|path| format!(" `-- {path}`")).unwrap_or_default();
        let _ = writeln!(
            out,
            "| {}: `{}`{path} | {} | {:.2} ms | {:.2} ms | {:.0} ms | {:.0}x | {:.0}x |",
            search.label,
            search.query.replace('|', "\\|"),
            search.total,
            search.warm_ms,
            search.index_ms,
            search.git_ms,
            search.git_ms / search.warm_ms.max(0.001),
            search.git_ms / search.index_ms.max(0.001)
        );
    }
    let _ = writeln!(
        out,
        "\n`repo.history` deep pages of HEAD: page 1 (a new walk from the tip, in an engine that has read the \
         repository before), the deep page after the pages before it (the walk kept by the engine continues), the \
         same page from its cursor in a fresh engine (a walk over every earlier page: what every page cost before \
         kept walks), and `git log --skip`; all three list the same commits. `deep / page 1` near 1 is a page \
         costing O(limit).\n"
    );
    let _ = writeln!(
        out,
        "| page | deep / page 1 | `git log --skip` / deep | page 1 | deep, kept walk | deep, fresh walk | `git log \
         --skip -n` |\n|---|---|---|---|---|---|---|"
    );
    for page in &run.pages {
        let path = page.path.map(|path| format!(" `-- {path}`")).unwrap_or_default();
        let _ = writeln!(
            out,
            "| page {} of {}{path} | {:.2} | {:.1}x | {:.2} ms | {:.2} ms | {:.1} ms | {:.1} ms |",
            page.page,
            page.limit,
            page.kept_ms / page.first_ms.max(0.001),
            page.git_ms / page.kept_ms.max(0.001),
            page.first_ms,
            page.kept_ms,
            page.fresh_ms,
            page.git_ms
        );
    }
    let _ = writeln!(
        out,
        "\n`repo.scope` ({} commits), churn window of 90 days ending an hour after the last commit, 10 recent \
         commits: cold (first call of a fresh engine), warm (median and slowest of the calls after it once the \
         repository's watches are in place: recent commits and churn from the kept walk, what it reads at HEAD and \
         the work-tree status from the cache), stat-validated (median, watching off: the work-tree status read on \
         every call); `git log --since --until -- path` for the churn alone (its commit count equals the answer's).\n",
        run.commits
    );
    let _ = writeln!(
        out,
        "| path | churn commits | `git log` churn / warm | warm | warm, slowest | stat-validated | cold | `git log` \
         churn |\n|---|---|---|---|---|---|---|---|"
    );
    for scope in &run.scopes {
        let _ = writeln!(
            out,
            "| `{}` | {} | {:.0}x | {:.2} ms | {:.2} ms | {:.2} ms | {:.0} ms | {:.0} ms |",
            scope.path,
            scope.churn_commits,
            scope.git_churn_ms / scope.warm_ms.max(0.001),
            scope.warm_ms,
            scope.warm_max_ms,
            scope.stat_validated_ms,
            scope.cold_ms,
            scope.git_churn_ms
        );
    }
    out
}
