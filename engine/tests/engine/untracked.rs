//! `status.showUntrackedFiles` (`no` / `normal` / `all`, `false` / `true`, unset = `normal`) in `repo.status`,
//! `repo.brief`, `worktree.changes` and `repo.scope`, against `git status --porcelain=v1 -z` in the same mode.

use crate::common;

use common::measure;
use fluxgit_engine::facets::worktree::UntrackedMode;
use fluxgit_engine::{Engine, Options, scope};
use fluxgit_fixtures::{Fixture, Scenario};

const UNLIMITED: usize = 1_000_000;

/// The `??` paths of `git status --porcelain=v1 -z`, in git's order.
fn git_untracked(fixture: &Fixture) -> Vec<String> {
    let output = fixture.git_raw(&["-c", "core.fsmonitor=", "status", "--porcelain=v1", "-z"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut paths: Vec<String> =
        text.split('\0').filter_map(|record| record.strip_prefix("?? ")).map(str::to_owned).collect();
    paths.sort();
    paths
}

#[test]
fn untracked_files_follow_status_show_untracked_files() {
    for scenario in [Scenario::Dirty, Scenario::Monorepo, Scenario::DirtyMonorepo] {
        let fixture = fluxgit_fixtures::build(scenario);
        let engine = Engine::new(Options { allowed_roots: vec![fixture.root().canonicalize().expect("root")] });
        let path = fixture.path().to_str().expect("utf-8").to_owned();
        let mut seen_collapsed = false;
        for value in [None, Some("no"), Some("normal"), Some("all"), Some("false"), Some("true")] {
            if let Some(value) = value {
                fixture.git(&["config", "status.showUntrackedFiles", value]);
            }
            let mode = match value {
                Some("no" | "false") => UntrackedMode::No,
                Some("all") => UntrackedMode::All,
                _ => UntrackedMode::Normal,
            };
            let expected = git_untracked(&fixture);
            seen_collapsed |= expected.iter().any(|path| path.ends_with('/'));
            let label = format!("{scenario:?} status.showUntrackedFiles={value:?}");

            let repo = engine.resolve(&path).expect("resolves");
            let status = engine.status(&repo, UNLIMITED, &mut measure).expect("status").data;
            assert_eq!(status.untracked, expected, "{label}: repo.status");
            assert_eq!((status.counts.untracked, status.counts.untracked_mode), (expected.len(), mode), "{label}");
            let json = serde_json::to_value(status.counts).expect("serialises");
            let written = json.get("untrackedFiles").and_then(|mode| mode.as_str());
            let expected_mode = match mode {
                UntrackedMode::Normal => None,
                UntrackedMode::No => Some("no"),
                UntrackedMode::All => Some("all"),
            };
            assert_eq!(written, expected_mode, "{label}: the mode is named unless normal");

            let brief = engine.brief(&repo, &Default::default(), UNLIMITED, &mut measure).expect("brief").data;
            assert_eq!(brief.working_tree.untracked, expected.len(), "{label}: repo.brief");
            let changes = engine.worktree_changes(&repo, UNLIMITED, &mut measure).expect("changes").data;
            assert_eq!(changes.untracked, expected, "{label}: worktree.changes");
            assert_eq!(changes.counts.untracked_mode, mode, "{label}");
            let options = scope::Options { path: ".".into(), churn_days: 90, recent_commits: 10, now: 0 };
            let scope = engine.scope(&repo, &options, UNLIMITED, &mut measure).expect("scope").data;
            assert_eq!(scope.working_tree.untracked, expected, "{label}: repo.scope");
        }
        assert!(seen_collapsed, "{scenario:?} has a wholly untracked directory");
    }
}
