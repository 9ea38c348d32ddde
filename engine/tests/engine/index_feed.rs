//! The commit index fed by the watcher: a commit made while no call runs is taken into the index in the background,
//! so the next search finds it current (and answers from the index, equal to `git log --grep`).

use std::time::{Duration, Instant};

use fluxgit_engine::commit_index::Status;
use fluxgit_engine::{Engine, Options, search};
use fluxgit_fixtures::Scenario;

#[test]
fn the_watcher_brings_the_index_up_to_date_before_the_next_call() {
    let fixture = fluxgit_fixtures::build(Scenario::ManyBranches);
    let index_dir = tempfile::tempdir().expect("temp dir");
    let root = fixture.root().canonicalize().expect("fixture root exists");
    let engine = Engine::new(Options { allowed_roots: vec![root] }).with_index(index_dir.path().to_path_buf());
    let repo_path = fixture.path().to_str().expect("utf-8 temp path");
    let repo = engine.resolve(repo_path).expect("resolves");
    assert_eq!(engine.cache_diagnostics(&repo).cache, "watched", "the repository is watched");
    assert!(matches!(engine.index_settle(&repo, Duration::from_secs(120)), Some(Status::Ready(_))));
    assert!(engine.index_is_current(&repo));
    let refreshes = engine.index_refreshes();

    for round in 0..3 {
        let message = format!("fed by the watcher {round}");
        fixture.git(&["commit", "-q", "--allow-empty", "-m", &message]);
        if round == 1 {
            fixture.git(&["reset", "-q", "--hard", "HEAD~1"]);
        }
        // No call touches the index: the feed thread takes the commit in.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let repo = engine.resolve(repo_path).expect("resolves");
            if engine.index_is_current(&repo) {
                break;
            }
            assert!(Instant::now() < deadline, "round {round}: the index was not updated in the background");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(engine.index_refreshes() > refreshes, "round {round}: the feed thread ran");
        let repo = engine.resolve(repo_path).expect("resolves");
        let options = search::Options { query: format!("\"{message}\""), limit: 20, ..search::Options::default() };
        let report = engine.search(&repo, &options, 3000, &mut |_| 0).expect("searches").data;
        assert_eq!(report.walked, None, "round {round}: answered from the index");
        let expected = fixture.git(&["log", "--format=%h", "--branches", "HEAD", "-F", &format!("--grep={message}")]);
        assert_eq!(report.total, expected.lines().count(), "round {round}: git log --grep");
        assert_eq!(report.total, usize::from(round != 1), "round {round}");
    }
}
