//! The walks other than counts are exact whatever the commit dates: merge bases (`ancestry::merge_bases`, the fork
//! point of `repo.branchStack`, the merge bases of `repo.conflictPreflight`) equal `git merge-base --all`, and the
//! commits a rebase would replay equal `git rev-list target..current`, on histories with merges and commits dated a
//! year before or after their parents, without a commit-graph, with a full one and with one that misses the newest
//! commits. gix's date-ordered merge-base keeps a common commit that is an ancestor of another when a skewed date
//! pops it first and the path between them runs through a second parent; its hidden-tip walk stops early.

use crate::common;

use std::collections::BTreeMap;

use common::{commit_tree, engine_for, repo_path};
use fluxgit_engine::ancestry;
use fluxgit_fixtures::{Fixture, Scenario};

const YEAR: i64 = 365 * 24 * 3_600;

/// A commit time `step` minutes into the test's history (after every fixture commit).
fn at(step: i64) -> i64 {
    fluxgit_fixtures::CLOCK_START as i64 + 400 * 24 * 3_600 + step * 60
}

/// Builds the shapes and a generated history; returns the commits by name.
///
/// - `mb-a` and `mb-b` (both merge `d` and `c`): their one merge base is `d`; `c` is common too but an ancestor of
///   `d` through `x`'s second parent, and `x` is dated before `c`, so a date-ordered walk meets `c` first.
/// - `v` (merges `a` and `s`) and `h` (on `s`): the case of the ahead/behind tests, `p` dated ten years before its
///   parent `y`: `h` reaches `y` only through `p`.
/// - `g0`..`g39`: every third commit a merge of an older one, every fifth dated a year before its parent and every
///   seventh a year after.
fn build(fixture: &Fixture) -> BTreeMap<String, String> {
    let root = fixture.git(&["rev-parse", "main"]).trim().to_owned();
    let mut named = BTreeMap::new();
    let mut add = |name: &str, parents: &[&str], time: i64| -> String {
        let parents: Vec<String> =
            parents.iter().map(|parent| named.get(*parent).cloned().unwrap_or_else(|| (*parent).to_owned())).collect();
        let parents: Vec<&str> = parents.iter().map(String::as_str).collect();
        let id = commit_tree(fixture, &parents, name, time);
        named.insert(name.to_owned(), id.clone());
        id
    };
    add("root", &[&root], at(0));
    add("c", &["root"], at(10));
    add("x1", &["root"], at(3));
    add("x", &["x1", "c"], at(2));
    add("d", &["x"], at(4));
    add("mb-a", &["d", "c"], at(20));
    add("mb-b", &["d", "c"], at(21));
    add("y", &["root"], at(1));
    add("p", &["y"], at(0) - 10 * YEAR);
    add("s", &["p"], at(2));
    add("a", &["y"], at(3));
    add("v", &["a", "s"], at(4));
    add("h", &["s"], at(5));
    let mut generated: Vec<String> = vec!["mb-a".into(), "v".into(), "h".into()];
    for step in 0..40_usize {
        let k = generated.len();
        let first = generated[k - 1].clone();
        let mut parents = vec![first.as_str()];
        let second = generated[(step * 7 + 1) % k].clone();
        if step % 3 == 0 && second != first {
            parents.push(second.as_str());
        }
        let skew = match (step % 5, step % 7) {
            (4, _) => -YEAR,
            (_, 6) => YEAR,
            _ => 0,
        };
        let name = format!("g{step}");
        add(&name, &parents, at(30 + step as i64) + skew);
        generated.push(name);
    }
    named
}

/// `git merge-base --all one others...`, in git's order (empty when git finds none: it exits 1).
fn git_merge_bases(fixture: &Fixture, one: &str, others: &[&str]) -> Vec<String> {
    let mut args = vec!["merge-base", "--all", one];
    args.extend(others);
    let output = fixture.git_raw(&args);
    String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect()
}

fn check_merge_bases(fixture: &Fixture, named: &BTreeMap<String, String>, round: &str) {
    let git = gix::open(fixture.path()).expect("gix opens the repository");
    let id = |hex: &str| gix::ObjectId::from_hex(hex.as_bytes()).expect("hex");
    let picked: Vec<(&String, &String)> = named
        .iter()
        .filter(|(name, _)| !name.starts_with('g') || name[1..].parse::<usize>().is_ok_and(|step| step % 4 == 3))
        .collect();
    let ours = |one: &str, others: &[&str]| -> Vec<String> {
        let others: Vec<gix::ObjectId> = others.iter().map(|other| id(other)).collect();
        ancestry::merge_bases(&git, id(one), &others).expect("merge bases").iter().map(ToString::to_string).collect()
    };
    for (one_name, one) in &picked {
        for (other_name, other) in &picked {
            let expected = git_merge_bases(fixture, one, &[other]);
            assert_eq!(ours(one, &[other]), expected, "{round}: merge-base --all {one_name} {other_name}");
            let first = ancestry::merge_base(&git, id(one), id(other)).expect("merge base").map(|id| id.to_string());
            assert_eq!(first.as_ref(), expected.first(), "{round}: merge-base {one_name} {other_name}");
        }
    }
    for (one, others) in
        [("mb-a", ["mb-b", "h"]), ("v", ["mb-b", "g10"]), ("g38", ["g20", "g25"]), ("h", ["g3", "mb-a"])]
    {
        let others: Vec<&str> = others.iter().map(|other| named[*other].as_str()).collect();
        assert_eq!(
            ours(&named[one], &others),
            git_merge_bases(fixture, &named[one], &others),
            "{round}: merge-base --all {one} {others:?}"
        );
    }
}

/// `repo.branchStack`'s fork point and `repo.conflictPreflight`'s merge bases and rebase replay, against git.
fn check_tools(fixture: &Fixture, named: &BTreeMap<String, String>, round: &str) {
    use fluxgit_engine::branch_stack::Options as StackOptions;
    let engine = engine_for(fixture);
    let repo = engine.resolve(repo_path(fixture)).expect("resolves");
    for (current, target) in [("mb-a", "mb-b"), ("v", "h"), ("h", "v"), ("g39", "g20"), ("g30", "mb-a")] {
        fixture.git(&["update-ref", "refs/heads/main", &named[target]]);
        fixture.git(&["update-ref", "refs/heads/topic", &named[current]]);
        let options = StackOptions {
            base_candidates: vec!["main".to_owned()],
            max_related: 50,
            branch: Some("topic".to_owned()),
        };
        let stack = engine.branch_stack(&repo, &options).expect("repo.branchStack");
        let fork = stack.base.as_ref().expect("main is the base").merge_base.clone().expect("a fork point");
        let expected = fixture.git(&["merge-base", "topic", "main"]).trim().to_owned();
        assert!(expected.starts_with(&fork), "{round}: fork of {current} from {target}: {fork}, git says {expected}");

        let preflight = engine
            .conflict_preflight(&repo, "main", "topic", &Default::default())
            .expect("repo.conflictPreflight")
            .data;
        assert_eq!(
            preflight.merge_bases,
            git_merge_bases(fixture, "topic", &["main"]),
            "{round}: preflight {current} {target}"
        );
        let count = |merges: &str| -> usize {
            fixture.git(&["rev-list", "--count", merges, "main..topic"]).trim().parse().expect("a count")
        };
        if preflight.rebase.commits > 0 || preflight.rebase.skipped_merges > 0 {
            assert_eq!(preflight.rebase.commits, count("--no-merges"), "{round}: rebase {current} onto {target}");
            assert_eq!(
                preflight.rebase.skipped_merges,
                count("--merges"),
                "{round}: merges of {current} onto {target}"
            );
        }
    }
    fixture.git(&["update-ref", "refs/heads/main", &named["root"]]);
    fixture.git(&["update-ref", "-d", "refs/heads/topic"]);
}

#[test]
fn merge_bases_and_replays_match_git_with_skewed_dates() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let mut named = build(&fixture);
    check_merge_bases(&fixture, &named, "no commit-graph");
    check_tools(&fixture, &named, "no commit-graph");
    fixture.git(&["update-ref", "refs/heads/keep", &named["g39"]]);
    fixture.git(&["update-ref", "refs/heads/keep-mb", &named["mb-b"]]);
    fixture.git(&["commit-graph", "write", "--reachable"]);
    check_merge_bases(&fixture, &named, "commit-graph");
    check_tools(&fixture, &named, "commit-graph");
    // The shapes again above the commit-graph (its commits have generation numbers, the new ones none).
    for (name, parents, time) in [
        ("n-c", vec!["g39"], at(100)),
        ("n-x1", vec!["g39"], at(93)),
        ("n-x", vec!["n-x1", "n-c"], at(92)),
        ("n-d", vec!["n-x"], at(94)),
        ("n-a", vec!["n-d", "n-c"], at(110)),
        ("n-b", vec!["n-d", "n-c", "g20"], at(111)),
    ] {
        let parents: Vec<&str> = parents.iter().map(|parent| named[*parent].as_str()).collect();
        let id = commit_tree(&fixture, &parents, name, time);
        named.insert(name.to_owned(), id);
    }
    check_merge_bases(&fixture, &named, "commit-graph missing the newest commits");
    check_tools(&fixture, &named, "commit-graph missing the newest commits");
}
