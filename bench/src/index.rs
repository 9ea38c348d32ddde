//! `fluxgit-bench index`: the commit index on the big-history fixture (50,000 commits, 500 branches) or, with
//! `--scenario blame-history`, on 80,000 commits of one branch: the time to build it from nothing, its size on disk
//! per 10,000 commits, the time to take in one new commit, and `repo.search` (in-process engine calls: resolve,
//! answer cut to its budget) against `git log --all-match -i -F --grep=...` over the same refs, two ways: a query
//! asked again with nothing changed (served by the answer cache), and every call asking the index (the answer
//! cache off: index freshness check, query, documents of the `limit` best). Raw numbers go to
//! `bench/results/index/numbers.json` (`numbers-blame-history.json`), a `## Index` (`## Search on 80,000
//! commits`) section of `BENCHMARK.md` gives them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use fluxgit_engine::index::Status;
use fluxgit_engine::search;
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

/// Everything measured.
#[derive(Debug, Serialize)]
pub(crate) struct IndexRun {
    scenario: &'static str,
    commits: u64,
    build_s: f64,
    bytes: u64,
    bytes_per_10k_commits: u64,
    one_commit_ms: f64,
    searches: Vec<SearchRun>,
}

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

/// The fixture's directory name, its queries and the Markdown section's name.
fn setup(scenario: Scenario) -> anyhow::Result<(&'static str, Queries, &'static str)> {
    match scenario {
        Scenario::BigHistory => Ok(("big-history", BIG_HISTORY_QUERIES, "Index")),
        Scenario::BlameHistory => Ok(("blame-history", BLAME_HISTORY_QUERIES, "Search on 80,000 commits")),
        other => bail!("no queries for {other:?}: big-history or blame-history"),
    }
}

/// The `## ...` section `render` writes for `scenario`'s run.
pub(crate) fn section(run: &IndexRun) -> &'static str {
    if run.scenario == "blame-history" { "Search on 80,000 commits" } else { "Index" }
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
    let (name, queries, _) = setup(scenario)?;
    let dir = fixtures_dir.join(format!("{name}-index"));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    eprintln!("fluxgit-bench index: building the {name} fixture ...");
    let fixture = fluxgit_fixtures::build_in(scenario, &dir);
    let index_dir = tempfile::tempdir()?;
    let engine =
        fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots: vec![fixture.root().to_path_buf()] })
            .with_index(index_dir.path().to_path_buf());
    let repo_path = fixture.path().to_str().context("utf-8 fixture path")?.to_owned();
    let repo = engine.resolve(&repo_path)?;

    eprintln!("fluxgit-bench index: building the index ...");
    let started = Instant::now();
    let status = engine.index_settle(&repo, Duration::from_secs(1800)).context("an index dir")?;
    let build_s = started.elapsed().as_secs_f64();
    if !matches!(status, Status::Ready(_)) {
        bail!("the index did not become ready: {status:?}");
    }
    let stats = engine.index_stats(&repo).context("index stats")?;

    fixture.git(&["commit", "-q", "--allow-empty", "-m", "bench: one more commit"]);
    let started = Instant::now();
    let repo = engine.resolve(&repo_path)?;
    let status = engine.index_settle(&repo, Duration::from_secs(60)).context("an index dir")?;
    let one_commit_ms = millis(started);
    if !matches!(status, Status::Ready(_)) {
        bail!("the index did not take the new commit: {status:?}");
    }

    // The same index, asked by an engine without answer cache: every call goes to the index.
    let uncached = fluxgit_engine::cache::Options { enabled: false, ..Default::default() };
    let index_engine = fluxgit_engine::Engine::with_cache(
        fluxgit_engine::Options { allowed_roots: vec![fixture.root().to_path_buf()] },
        uncached,
    )
    .with_index(index_dir.path().to_path_buf());
    let mut searches = Vec::new();
    for (label, query, path) in queries {
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
    Ok(IndexRun {
        scenario: name,
        commits: stats.commits,
        build_s,
        bytes: stats.bytes,
        bytes_per_10k_commits: stats.bytes * 10_000 / stats.commits.max(1),
        one_commit_ms,
        searches,
    })
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
    let _ = writeln!(out, "| one new commit taken in (next call) | {:.1} ms |\n", run.one_commit_ms);
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
    out
}
