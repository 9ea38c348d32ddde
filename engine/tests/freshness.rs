//! The cache's freshness contract (design.md#engine): rounds of "change the repository with the git CLI, then call at once";
//! every answer of the caching engine (facets and rendered answers) must equal a fresh read by an engine with
//! caching off. Also with watching disabled, and with the watch limit forced low, where the diagnostics say so.
//!
//! `FLUXGIT_FRESHNESS_ROUNDS` sets the rounds per mode (default 100; the documented long run is 10000).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use fluxgit_engine::cache::Options as CacheOptions;
use fluxgit_engine::{Engine, Options, brief, refs, scope, status};
use fluxgit_fixtures::{Fixture, Scenario};

/// The changes made between calls, each with the git CLI (or a plain file write where that is what a user does).
const ACTIONS: [&str; 15] = [
    "commit",
    "branch-create",
    "branch-delete",
    "checkout",
    "reset",
    "stash",
    "merge",
    "add",
    "untracked",
    "edit",
    "pack-refs",
    "submodule-checkout",
    "tag",
    "new-dir",
    "codeowners",
];

fn rounds() -> usize {
    std::env::var("FLUXGIT_FRESHNESS_ROUNDS").ok().and_then(|value| value.parse().ok()).unwrap_or(100)
}

/// Builds the superproject with submodules plus a `side` branch whose `conflict.txt` conflicts with `main`'s.
fn fixture() -> Fixture {
    let fixture = fluxgit_fixtures::build(Scenario::Submodules);
    let path = fixture.path();
    fixture.git(&["checkout", "-q", "-b", "side"]);
    std::fs::write(path.join("conflict.txt"), "side\n").expect("write");
    fixture.git(&["add", "conflict.txt"]);
    fixture.git(&["commit", "-q", "-m", "side: conflict"]);
    fixture.git(&["checkout", "-q", "main"]);
    std::fs::write(path.join("conflict.txt"), "main\n").expect("write");
    fixture.git(&["add", "conflict.txt"]);
    fixture.git(&["commit", "-q", "-m", "main: conflict"]);
    fixture
}

fn engine(fixture: &Fixture, cache: CacheOptions) -> Engine {
    let root = fixture.root().canonicalize().expect("fixture root exists");
    Engine::with_cache(Options { allowed_roots: vec![root] }, cache)
}

fn uncached() -> CacheOptions {
    CacheOptions { enabled: false, ..CacheOptions::default() }
}

/// The three cached tools' answers and two scopes as JSON: through the engine's answer cache (as the sidecar calls them) and
/// without diagnostics (which name the cache mode), plus the mode.
fn answers(engine: &Engine, path: &str) -> ([String; 5], &'static str) {
    let repo = engine.resolve(path).expect("resolves");
    let json = |value: &dyn erased::Json| value.json();
    let brief = engine
        .answer(&repo, "brief", Some(brief::READS), String::len, || {
            engine.brief(&repo, &brief::Options::default(), usize::MAX, &mut |_| 0).map(|mut brief| {
                brief.data.diagnostics = None;
                json(&brief.data)
            })
        })
        .expect("brief");
    let status = engine
        .answer(&repo, "status", Some(status::READS), String::len, || {
            engine.status(&repo, usize::MAX, &mut |_| 0).map(|status| json(&status.data))
        })
        .expect("status");
    let refs = engine
        .answer(&repo, "refs", Some(refs::READS), String::len, || {
            engine.refs(&repo, usize::MAX, &mut |_| 0).map(|refs| json(&refs.data))
        })
        .expect("refs");
    // `repo.scope` is not kept as an answer; its work-tree part comes from the cached status facet, what it reads
    // at HEAD (the path in HEAD's tree, CODEOWNERS, the shallow boundary) is kept under the HEAD facet. The whole
    // repository, and a file that comes and goes (its error, when absent, compared too).
    let scope = |path: &str| {
        let options = scope::Options { path: path.to_owned(), churn_days: 90, recent_commits: 10, now: 2_000_000_000 };
        engine
            .scope(&repo, &options, usize::MAX, &mut |_| 0)
            .map_or_else(|err| err.to_string(), |scope| json(&scope.data))
    };
    ([brief, status, refs, scope("."), scope("counter.txt")], engine.cache_diagnostics(&repo).cache)
}

mod erased {
    /// Serialises any engine result to JSON.
    pub(crate) trait Json {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> String {
            serde_json::to_string(self).expect("serialises")
        }
    }
}

/// A small deterministic generator (no dependency).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        usize::try_from((self.0 >> 33) % below as u64).expect("fits")
    }
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// Applies one change; failures (a checkout refused during a merge, a branch that does not exist) are part of the
/// game: whatever state results, the answers must match it.
fn act(fixture: &Fixture, action: &str) {
    let path = fixture.path();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let git = |args: &[&str]| {
        fixture.git_raw(args);
    };
    match action {
        "commit" => {
            std::fs::write(path.join("counter.txt"), format!("{n}\n")).expect("write");
            git(&["add", "counter.txt"]);
            git(&["commit", "-q", "-m", &format!("feat: change {n}")]);
        }
        "branch-create" => git(&["branch", &format!("topic/b{}", n % 5)]),
        "branch-delete" => git(&["branch", "-D", &format!("topic/b{}", (n + 2) % 5)]),
        "checkout" => {
            let current = fixture.git(&["rev-parse", "--abbrev-ref", "HEAD"]);
            let target = if current.trim() == "main" { "side" } else { "main" };
            git(&["checkout", "-q", target]);
        }
        "reset" => {
            if n.is_multiple_of(2) {
                git(&["reset", "-q", "--soft", "HEAD~1"]);
            } else {
                git(&["reset", "-q", "--hard", "HEAD@{1}"]);
            }
        }
        "stash" => {
            if n.is_multiple_of(2) {
                std::fs::write(path.join("stashed.txt"), format!("{n}\n")).expect("write");
                git(&["stash", "push", "-q", "--include-untracked", "-m", &format!("wip {n}")]);
            } else {
                git(&["stash", "pop", "-q"]);
            }
        }
        "merge" => {
            if path.join(".git/MERGE_HEAD").exists() {
                git(&["merge", "--abort"]);
            } else {
                git(&["merge", "-q", "--no-edit", "side"]);
            }
        }
        // Only the index changes: stage or unstage the edited file.
        "add" => {
            if n.is_multiple_of(2) {
                git(&["add", "counter.txt"]);
            } else {
                git(&["reset", "-q", "counter.txt"]);
            }
        }
        "untracked" => std::fs::write(path.join(format!("untracked-{}.txt", n % 3)), "u\n").expect("write"),
        "edit" => {
            let file = path.join("counter.txt");
            if file.exists() {
                std::fs::write(file, format!("edited {n}\n")).expect("write");
            }
        }
        "pack-refs" => git(&["pack-refs", "--all"]),
        "submodule-checkout" => {
            let sub = path.join("libs/drifted");
            let head = fixture.git_in(&sub, &["rev-parse", "--abbrev-ref", "HEAD"]);
            let target = if head.trim() == "main" { "HEAD~1" } else { "main" };
            fixture.git_raw_in(&sub, &["checkout", "-q", target]);
        }
        "tag" => git(&["tag", "-f", &format!("v{}", n % 4)]),
        // CODEOWNERS at HEAD decides `repo.scope`'s owners: a commit that changes its rules.
        "codeowners" => {
            std::fs::create_dir_all(path.join(".github")).expect("mkdir");
            let rules = format!("* @team{}\n/counter.txt @owner{}\n", n % 3, n % 2);
            std::fs::write(path.join(".github/CODEOWNERS"), rules).expect("write");
            git(&["add", ".github/CODEOWNERS"]);
            git(&["commit", "-q", "-m", &format!("chore: owners {n}")]);
        }
        "new-dir" => {
            let dir = path.join(format!("new/dir{}", n % 3));
            std::fs::create_dir_all(&dir).expect("mkdir");
            std::fs::write(dir.join("file.txt"), format!("{n}\n")).expect("write");
        }
        other => panic!("unknown action {other}"),
    }
}

/// Runs `rounds` rounds on `cached`: warm the caches, change, compare at once with a fresh read. Returns the modes
/// the cached engine reported.
fn run_rounds(fixture: &Fixture, cached: &Engine, rounds: usize, seed: u64) -> Vec<&'static str> {
    let fresh = engine(fixture, uncached());
    let path = fixture.path().to_str().expect("utf-8").to_owned();
    let mut random = Lcg(seed);
    let mut modes = Vec::new();
    for round in 0..rounds {
        // Warm: the cached engine now holds the state before the change.
        let (before, _) = answers(cached, &path);
        let (again, _) = answers(cached, &path);
        assert_eq!(before, again, "round {round}: an unchanged repository answered differently");
        let action = ACTIONS[random.next(ACTIONS.len())];
        act(fixture, action);
        let (ours, mode) = answers(cached, &path);
        let (truth, _) = answers(&fresh, &path);
        for (idx, tool) in
            ["repo.brief", "repo.status", "repo.refs", "repo.scope .", "repo.scope counter.txt"].iter().enumerate()
        {
            assert_eq!(ours[idx], truth[idx], "round {round}: {tool} stale after {action}");
        }
        modes.push(mode);
    }
    modes
}

#[test]
fn watched_answers_are_never_stale() {
    let fixture = fixture();
    let cached = engine(&fixture, CacheOptions::default());
    let modes = run_rounds(&fixture, &cached, rounds(), 12);
    assert!(modes.iter().all(|mode| *mode == "watched"), "modes: {modes:?}");
    let stats = cached.cache_stats();
    assert!(stats.hits > 0 && stats.events > 0 && stats.invalidations > 0, "{stats:?}");
    assert_eq!(stats.watcher, "running");
    assert_eq!((stats.repositories, stats.fallbacks), (1, 0), "{stats:?}");
}

#[test]
fn answers_are_fresh_with_watching_disabled() {
    let fixture = fixture();
    let cached = engine(&fixture, CacheOptions { watch: false, ..CacheOptions::default() });
    let modes = run_rounds(&fixture, &cached, rounds() / 2, 34);
    assert!(modes.iter().all(|mode| *mode == "stat-validated"), "modes: {modes:?}");
    let repo = cached.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let diagnostics = cached.cache_diagnostics(&repo);
    assert!(diagnostics.reason.as_deref().is_some_and(|reason| reason.contains("FLUXGIT_ENGINE_WATCH_DISABLED")));
}

#[test]
fn answers_are_fresh_when_the_watch_limit_is_reached() {
    let fixture = fixture();
    let cached = engine(&fixture, CacheOptions { watch_limit: Some(5), ..CacheOptions::default() });
    let modes = run_rounds(&fixture, &cached, rounds() / 2, 56);
    assert!(modes.iter().all(|mode| *mode == "stat-validated"), "modes: {modes:?}");
    let repo = cached.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let reason = cached.cache_diagnostics(&repo).reason.unwrap_or_default();
    assert!(reason.contains("watch limit"), "{reason}");
    assert_eq!(cached.cache_stats().fallbacks, 1);
}

/// Stat validation once the files have settled (older than the racy window): a cached answer is served, and a
/// change made afterwards changes the fingerprint, so the next answer is fresh.
#[test]
fn stat_validated_caches_see_changes_after_settling() {
    let fixture = fixture();
    let cached = engine(&fixture, CacheOptions { watch: false, ..CacheOptions::default() });
    let fresh = engine(&fixture, uncached());
    let path = fixture.path().to_str().expect("utf-8").to_owned();
    let settle = || std::thread::sleep(fluxgit_engine::cache::RACY_WINDOW + std::time::Duration::from_millis(100));
    for action in ["branch-create", "tag", "pack-refs"] {
        settle();
        answers(&cached, &path);
        let hits = cached.cache_stats().hits;
        answers(&cached, &path);
        assert!(cached.cache_stats().hits > hits, "settled refs are served from memory");
        act(&fixture, action);
        settle();
        assert_eq!(answers(&cached, &path).0, answers(&fresh, &path).0, "stale after {action}");
    }
}

/// Concurrent callers of one facet share one computation and all get the same fresh answer.
#[test]
fn concurrent_callers_share_the_cache() {
    let fixture = fixture();
    let cached = engine(&fixture, CacheOptions::default());
    let fresh = engine(&fixture, uncached());
    let path = fixture.path().to_str().expect("utf-8").to_owned();
    act(&fixture, "untracked");
    let truth = answers(&fresh, &path).0;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| answers(&cached, &path).0)).collect();
        for handle in handles {
            assert_eq!(handle.join().expect("no panic"), truth);
        }
    });
}

#[test]
fn watched_calls_write_nothing_to_the_repository() {
    let fixture = fixture();
    let before = fluxgit_fixtures::tree_digest(fixture.path());
    let cached = engine(&fixture, CacheOptions::default());
    let path = fixture.path().to_str().expect("utf-8").to_owned();
    for _ in 0..3 {
        answers(&cached, &path);
    }
    assert_eq!(fluxgit_fixtures::tree_digest(fixture.path()), before);
    assert!(!Path::new(&path).join(".git/index.lock").exists());
}
