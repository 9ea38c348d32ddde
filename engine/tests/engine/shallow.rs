//! Shallow clones (design.md#roots) against the git CLI on the same clone: `git log` (order, parents, `-- path`),
//! `git rev-list --count`, `git merge-base --all`, `git show --numstat` at the boundary, for clones of depth 1 and
//! 2 whose branches grew past the boundary and were merged across it.

use crate::common;

use std::collections::BTreeSet;

use common::{engine_for, measure, repo_path};
use fluxgit_engine::{ancestry, branch_stack, history, scope};
use fluxgit_fixtures::{Fixture, Scenario};

const UNLIMITED: usize = 1_000_000;
const SCENARIOS: [Scenario; 2] = [Scenario::ShallowOne, Scenario::ShallowTwo];
const REFS: [&str; 7] = ["HEAD", "main", "topic", "feature", "origin/main", "origin/side", "v1.0"];

fn boundary(fixture: &Fixture) -> BTreeSet<String> {
    let text = std::fs::read_to_string(fixture.git_dir().join("shallow")).expect("a shallow clone has .git/shallow");
    text.lines().map(str::to_owned).collect()
}

fn rev(fixture: &Fixture, spec: &str) -> String {
    fixture.git(&["rev-parse", "--verify", spec]).trim().to_owned()
}

fn count(fixture: &Fixture, range: &str) -> usize {
    fixture.git(&["rev-list", "--count", range]).trim().parse().expect("a count")
}

/// `git merge-base --all a b` (empty when git finds none: it exits 1).
fn git_merge_bases(fixture: &Fixture, a: &str, b: &str) -> BTreeSet<String> {
    let output = fixture.git_raw(&["merge-base", "--all", a, b]);
    String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect()
}

#[test]
fn history_matches_git_log_and_marks_the_boundary() {
    for scenario in SCENARIOS {
        let fixture = fluxgit_fixtures::build(scenario);
        let cut = boundary(&fixture);
        // The tips of `origin/main`, `origin/side` and `v1.0` are cut at the same depth.
        assert_eq!(cut.len(), 3, "{scenario:?}: {cut:?}");
        let engine = engine_for(&fixture);
        let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
        for start in REFS {
            for path in [None, Some("side"), Some("mainline/1.txt"), Some("README.md")] {
                let options = history::Options {
                    start: Some(start.to_owned()),
                    path: path.map(str::to_owned),
                    limit: 200,
                    cursor: None,
                    symbol: None,
                };
                let page = engine.history(&repo, &options, UNLIMITED, &mut measure).expect("history answers").data;
                let mut args = vec!["log", "--format=%h %p", start, "--"];
                args.extend(path);
                let expected: Vec<String> = fixture.git(&args).lines().map(|line| line.trim().to_owned()).collect();
                let shown: Vec<String> = page
                    .commits
                    .iter()
                    .map(|commit| format!("{} {}", commit.sha, commit.parents.join(" ")).trim().to_owned())
                    .collect();
                assert_eq!(shown, expected, "{scenario:?} git log {start} -- {path:?}");
                assert!(page.shallow, "{scenario:?}: the page says history is cut");
                for commit in &page.commits {
                    let on_boundary = cut.iter().any(|full| full.starts_with(&commit.sha));
                    assert_eq!(commit.shallow, on_boundary, "{scenario:?} {}", commit.sha);
                }
                assert!(page.next_cursor.is_none());
            }
        }
    }
}

#[test]
fn counts_and_merge_bases_match_git() {
    for scenario in SCENARIOS {
        let fixture = fluxgit_fixtures::build(scenario);
        let engine = engine_for(&fixture);
        let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
        let git = gix::open(fixture.path()).expect("gix opens the clone");
        for a in REFS {
            for b in REFS {
                let (one, two) = (rev(&fixture, &format!("{a}^{{commit}}")), rev(&fixture, &format!("{b}^{{commit}}")));
                let id = |hex: &str| gix::ObjectId::from_hex(hex.as_bytes()).expect("hex");
                let ours = ancestry::count_exclusive(&git, id(&one), id(&two)).expect("counts");
                assert_eq!(ours, count(&fixture, &format!("{b}..{a}")), "{scenario:?} rev-list --count {b}..{a}");
                let bases: BTreeSet<String> = ancestry::merge_bases(&git, id(&one), &[id(&two)])
                    .expect("merge bases")
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                assert_eq!(bases, git_merge_bases(&fixture, a, b), "{scenario:?} merge-base --all {a} {b}");
            }
        }

        // Upstreams: `main` tracks `origin/main`, `topic` tracks `origin/side`, both across the boundary.
        let refs = engine.refs(&repo, UNLIMITED, &mut measure).expect("refs answers").data;
        assert!(refs.head.shallow);
        for branch in &refs.branches {
            let Some(upstream) = &branch.upstream else { continue };
            let name = &branch.name;
            assert_eq!(upstream.ahead, count(&fixture, &format!("{}..{name}", upstream.name)), "{scenario:?} {name}");
            assert_eq!(upstream.behind, count(&fixture, &format!("{name}..{}", upstream.name)), "{scenario:?} {name}");
        }
        assert!(refs.branches.iter().filter(|branch| branch.upstream.is_some()).count() >= 2, "{:?}", refs.branches);

        let brief = engine.brief(&repo, &Default::default(), UNLIMITED, &mut measure).expect("brief answers").data;
        assert!(brief.head.shallow);
        assert_eq!(brief.head.ahead, count(&fixture, "origin/main..main"));
        assert_eq!(brief.head.behind, count(&fixture, "main..origin/main"));
        let default = fluxgit_engine::brief::DEFAULT_RECENT_COMMITS.to_string();
        let oneline: Vec<String> =
            fixture.git(&["log", "--format=%h", "-n", &default]).lines().map(str::to_owned).collect();
        let recent: Vec<String> = brief.recent_commits.iter().map(|line| line.sha.clone()).collect();
        assert_eq!(recent, oneline, "{scenario:?}: brief recent commits are git log's");

        let status = engine.status(&repo, UNLIMITED, &mut measure).expect("status answers").data;
        assert!(status.head.shallow);
        let upstream = status.upstream.expect("main tracks origin/main");
        assert_eq!((upstream.ahead, upstream.behind), (brief.head.ahead, brief.head.behind));
    }
}

#[test]
fn branch_stack_scope_preflight_and_details_answer_as_git() {
    for scenario in SCENARIOS {
        let fixture = fluxgit_fixtures::build(scenario);
        let engine = engine_for(&fixture);
        let repo = engine.resolve(repo_path(&fixture)).expect("resolves");

        let stack = engine
            .branch_stack(
                &repo,
                &branch_stack::Options { base_candidates: vec!["origin/side".into()], max_related: 8, branch: None },
            )
            .expect("branchStack answers");
        assert!(stack.shallow);
        let base = stack.base.expect("origin/side is the base");
        let expected = git_merge_bases(&fixture, "HEAD", "origin/side");
        // branchStack abbreviates its shas as git does; git names the merge bases in full.
        let ours: Vec<&String> = base.merge_base.iter().collect();
        assert_eq!(ours.len(), expected.len(), "{scenario:?}");
        assert!(ours.iter().all(|sha| expected.iter().any(|full| full.starts_with(sha.as_str()))), "{scenario:?}");
        assert_eq!(base.ahead, count(&fixture, "origin/side..HEAD"));
        assert_eq!(base.behind, count(&fixture, "HEAD..origin/side"));
        for related in &stack.related {
            assert_eq!(related.ahead, count(&fixture, &format!("{}..HEAD", related.name)), "{scenario:?}");
            assert_eq!(related.behind, count(&fixture, &format!("HEAD..{}", related.name)), "{scenario:?}");
        }

        let options = scope::Options { path: "side".into(), churn_days: 365, recent_commits: 20, now: i64::MAX / 2 };
        let scope = engine.scope(&repo, &options, UNLIMITED, &mut measure).expect("scope answers").data;
        assert!(scope.shallow);
        let expected: Vec<String> =
            fixture.git(&["log", "--format=%h", "--", "side"]).lines().map(str::to_owned).collect();
        let shown: Vec<String> = scope.recent_commits.iter().map(|commit| commit.sha.clone()).collect();
        assert_eq!(shown, expected, "{scenario:?} git log -- side");

        // `feature` forked from the shallow `main`, `origin/side` beyond the boundary: git finds no merge base.
        for (current, target) in [("feature", "origin/side"), ("main", "topic"), ("topic", "main"), ("main", "feature")]
        {
            let prediction =
                engine.conflict_preflight(&repo, target, current, &Default::default()).expect("preflight answers").data;
            assert!(prediction.shallow);
            let bases: BTreeSet<String> = prediction.merge_bases.iter().cloned().collect();
            assert_eq!(bases, git_merge_bases(&fixture, current, target), "{scenario:?} {current} {target}");
        }

        for sha in boundary(&fixture) {
            let details = engine.commit_details(&repo, &sha, UNLIMITED, &mut measure).expect("details answer").data;
            assert!(details.shallow && details.parents.is_empty(), "{scenario:?} {sha}");
            let numstat: Vec<String> = fixture
                .git(&["-c", "core.quotePath=false", "show", "--numstat", "--format=", &sha])
                .lines()
                .filter(|line| !line.is_empty())
                .map(str::to_owned)
                .collect();
            let ours: Vec<String> = details
                .files
                .iter()
                .map(|file| format!("{}\t{}\t{}", file.additions.unwrap_or(0), file.deletions.unwrap_or(0), file.path))
                .collect();
            assert_eq!(ours, numstat, "{scenario:?} git show --numstat {sha}");
        }
        let merge = engine.commit_details(&repo, "main", UNLIMITED, &mut measure).expect("details answer").data;
        assert!(!merge.shallow && merge.parents.len() == 2);

        engine.reflog(&repo, None, 100, None, UNLIMITED, &mut measure).expect("reflog answers");
    }
}
