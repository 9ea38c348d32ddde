//! Worktrees, submodules and branch stacks against the git CLI: `worktree.list` vs `git worktree list --porcelain`,
//! `submodule.status` vs `git submodule status --recursive`, `repo.branchStack` vs `git merge-base` and
//! `git rev-list --count`; repositories byte-identical after each read.

use crate::common;

use common::{commit_tree, engine_for};
use fluxgit_engine::facets::submodules::SubmoduleState;
use fluxgit_engine::{Engine, Error, InvalidReason};
use fluxgit_fixtures::{Fixture, Scenario};

/// One worktree as `git worktree list --porcelain` describes it: (path, HEAD, branch ref, detached, bare, locked
/// reason, prunable).
type PorcelainWorktree = (String, Option<String>, Option<String>, bool, bool, Option<String>, bool);

fn git_worktrees(fixture: &Fixture, dir: &std::path::Path) -> Vec<PorcelainWorktree> {
    let output = fixture.git_in(dir, &["worktree", "list", "--porcelain"]);
    output
        .split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut worktree: PorcelainWorktree = (String::new(), None, None, false, false, None, false);
            for line in block.lines() {
                let (key, value) = line.split_once(' ').unwrap_or((line, ""));
                match key {
                    "worktree" => worktree.0 = value.to_owned(),
                    // Abbreviated as `git worktree list` (and the tool) show it.
                    "HEAD" => {
                        worktree.1 = (value != "0".repeat(40))
                            .then(|| fixture.git_in(dir, &["rev-parse", "--short", value]).trim().to_owned());
                    }
                    "branch" => worktree.2 = Some(value.to_owned()),
                    "detached" => worktree.3 = true,
                    "bare" => worktree.4 = true,
                    "locked" => worktree.5 = Some(value.to_owned()),
                    "prunable" => worktree.6 = true,
                    other => panic!("unexpected porcelain key {other:?}"),
                }
            }
            worktree
        })
        .collect()
}

fn our_worktrees(engine: &Engine, dir: &std::path::Path) -> (Vec<PorcelainWorktree>, Vec<bool>) {
    let repo = engine.resolve(dir.to_str().expect("utf-8")).expect("resolves");
    let report = engine.worktree_list(&repo, &Default::default()).expect("worktree list");
    let current = report.worktrees.iter().map(|worktree| worktree.current).collect();
    let porcelain = report
        .worktrees
        .into_iter()
        .map(|worktree| {
            let locked = worktree.locked.then(|| worktree.lock_reason.clone().unwrap_or_default());
            (
                worktree.path,
                worktree.head_sha,
                worktree.branch.map(|branch| format!("refs/heads/{branch}")),
                worktree.detached,
                worktree.bare,
                locked,
                worktree.prunable,
            )
        })
        .collect();
    (porcelain, current)
}

#[test]
fn worktree_list_equals_git_worktree_list() {
    let fixture = fluxgit_fixtures::build(Scenario::LinkedWorktree);
    let root = fixture.root().canonicalize().expect("root");
    fixture.git(&["worktree", "add", "-q", "--detach", "../wt-detached", "HEAD~1"]);
    fixture.git(&["worktree", "add", "-q", "-b", "usb-work", "../wt-locked"]);
    fixture.git(&["worktree", "lock", "--reason", "on a USB disk", "../wt-locked"]);
    fixture.git(&["worktree", "add", "-q", "-b", "gone-work", "../wt-gone"]);
    std::fs::remove_dir_all(root.join("wt-gone")).expect("remove a checkout");
    let engine = engine_for(&fixture);
    let before = fluxgit_fixtures::tree_digest(&root);

    let linked = fixture.linked_worktree().expect("linked").canonicalize().expect("exists");
    for (dir, current_index) in [(fixture.path().canonicalize().expect("main"), 0), (linked, 1)] {
        let (ours, current) = our_worktrees(&engine, &dir);
        let mut expected = git_worktrees(&fixture, &dir);
        // git names the prunable worktree's recorded path, which no longer exists and so cannot be canonical.
        assert_eq!(ours.len(), 5);
        assert_eq!(ours, std::mem::take(&mut expected), "from {}", dir.display());
        assert_eq!(current.iter().position(|&c| c), Some(current_index), "current from {}", dir.display());
    }
    assert_eq!(before, fluxgit_fixtures::tree_digest(&root), "worktree.list changed the repository");
}

/// Each worktree's state as `git -C <worktree> status --porcelain=v2 --branch` counts it: (upstream, ahead,
/// behind, conflicted, staged, unstaged, untracked).
type GitState = (Option<String>, usize, usize, usize, usize, usize, usize);

fn git_state(fixture: &Fixture, dir: &std::path::Path) -> GitState {
    let mut state: GitState = (None, 0, 0, 0, 0, 0, 0);
    for line in fixture.git_in(dir, &["status", "--porcelain=v2", "--branch", "--untracked-files=all"]).lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        match fields[0] {
            "#" if fields[1] == "branch.upstream" => state.0 = Some(fields[2].to_owned()),
            "#" if fields[1] == "branch.ab" => {
                state.1 = fields[2].trim_start_matches('+').parse().expect("ahead");
                state.2 = fields[3].trim_start_matches('-').parse().expect("behind");
            }
            "u" => state.3 += 1,
            "1" | "2" => {
                let xy = fields[1].as_bytes();
                state.4 += usize::from(xy[0] != b'.');
                state.5 += usize::from(xy[1] != b'.');
            }
            "?" => state.6 += 1,
            _ => {}
        }
    }
    state
}

#[test]
fn worktree_list_states_equal_git_status_in_each_worktree() {
    let fixture = fluxgit_fixtures::build(Scenario::LinkedWorktree);
    let root = fixture.root().canonicalize().expect("root");
    let main = fixture.path().canonicalize().expect("main");
    let feature = fixture.linked_worktree().expect("linked").canonicalize().expect("exists");
    // The main worktree: one behind its upstream, one path staged, one changed, two untracked.
    fixture.git(&["reset", "-q", "--hard", "HEAD~1"]);
    std::fs::write(main.join("README.md"), b"staged\n").expect("write");
    fixture.git(&["add", "README.md"]);
    std::fs::write(main.join("src/main.c"), b"changed\n").expect("write");
    std::fs::write(main.join("new-a.txt"), b"a\n").expect("write");
    std::fs::create_dir(main.join("notes")).expect("mkdir");
    std::fs::write(main.join("notes/new-b.txt"), b"b\n").expect("write");
    // The feature worktree: two commits ahead of origin/main, its upstream.
    fixture.git_in(&feature, &["branch", "-q", "--set-upstream-to=origin/main"]);
    for (file, text) in [("README.md", "feature\n"), ("feature.txt", "more\n")] {
        std::fs::write(feature.join(file), text).expect("write");
        fixture.git_in(&feature, &["add", file]);
        fixture.git_in(&feature, &["commit", "-q", "-m", file]);
    }
    // A third worktree stopped in a merge that conflicts on README.md.
    fixture.git(&["worktree", "add", "-q", "-b", "clash", "../wt-clash", "origin/main"]);
    let clash = root.join("wt-clash");
    std::fs::write(clash.join("README.md"), b"clash\n").expect("write");
    fixture.git_in(&clash, &["commit", "-q", "-am", "clash"]);
    let merge = std::process::Command::new("git")
        .arg("-C")
        .arg(&clash)
        .args(["merge", "-q", "feature"])
        .output()
        .expect("git merge runs");
    assert!(!merge.status.success(), "the merge conflicts");
    // A fourth outside the allowed roots: named, not read.
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let far = elsewhere.path().canonicalize().expect("exists").join("far");
    fixture.git(&["worktree", "add", "-q", "-b", "far", far.to_str().expect("utf-8")]);
    std::fs::write(far.join("unseen.txt"), b"x\n").expect("write");

    let engine = engine_for(&fixture);
    let before = fluxgit_fixtures::tree_digest(&root);
    let repo = engine.resolve(main.to_str().expect("utf-8")).expect("resolves");
    let report = engine.worktree_list(&repo, &Default::default()).expect("worktree list");
    assert_eq!(before, fluxgit_fixtures::tree_digest(&root), "worktree.list changed the repository");
    assert_eq!(report.worktrees.len(), 4);
    for dir in [&main, &feature, &clash] {
        let ours = report.worktrees.iter().find(|worktree| worktree.path == dir.display().to_string()).expect("listed");
        let upstream = ours.upstream.as_ref();
        let state = (
            upstream.map(|upstream| upstream.name.clone()),
            upstream.map_or(0, |upstream| upstream.ahead),
            upstream.map_or(0, |upstream| upstream.behind),
            ours.conflicted,
            ours.staged,
            ours.unstaged,
            ours.untracked,
        );
        assert_eq!(state, git_state(&fixture, dir), "{}", dir.display());
        assert!(!ours.outside_roots && ours.state_error.is_none(), "{}", dir.display());
    }
    let states: Vec<GitState> = [&main, &feature, &clash].iter().map(|dir| git_state(&fixture, dir)).collect();
    assert_eq!(states[0].2, 1, "the main worktree is behind");
    assert!(states[1].1 >= 2, "the feature worktree is ahead");
    assert!(states[2].3 > 0, "the clash worktree has conflicts");
    let clash_entry = report.worktrees.iter().find(|worktree| worktree.path == clash.display().to_string());
    assert_eq!(clash_entry.and_then(|worktree| worktree.operation).map(|op| op.name()), Some("merge"));
    // Against the default branch, as `git rev-list --left-right --count HEAD...main` counts in each worktree.
    for (dir, expected_some) in [(&main, false), (&feature, true), (&clash, true)] {
        let ours = report.worktrees.iter().find(|worktree| worktree.path == dir.display().to_string()).expect("listed");
        assert_eq!(ours.vs_default.is_some(), expected_some, "{}", dir.display());
        if let Some(counts) = &ours.vs_default {
            let git = fixture.git_in(dir, &["rev-list", "--left-right", "--count", "HEAD...main"]);
            let (ahead, behind) = git.trim().split_once('\t').expect("two counts");
            assert_eq!(counts.name, "main");
            assert_eq!((counts.ahead.to_string(), counts.behind.to_string()), (ahead.to_owned(), behind.to_owned()));
        }
    }
    let far_entry = report.worktrees.iter().find(|worktree| worktree.path == far.display().to_string()).expect("far");
    assert!(far_entry.outside_roots, "named as outside the roots");
    assert_eq!((far_entry.untracked, far_entry.upstream.is_none()), (0, true), "and not read");
    assert_eq!(far_entry.branch.as_deref(), Some("far"), "its registry entry is still listed");
}

#[test]
fn worktree_list_of_a_bare_repository() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let origin = fixture.origin().expect("origin").canonicalize().expect("exists");
    let engine = engine_for(&fixture);
    let (ours, _) = our_worktrees(&engine, &origin);
    assert_eq!(ours, git_worktrees(&fixture, &origin));
    assert!(ours[0].4, "bare");
}

#[test]
fn submodule_status_equals_git_submodule_status() {
    let fixture = fluxgit_fixtures::build(Scenario::Submodules);
    let root = fixture.root().canonicalize().expect("root");
    // Make the initialised submodule dirty: one tracked file changed, one untracked file.
    let initialised = fixture.path().join("libs/initialised");
    let tracked = fixture
        .git_in(&initialised, &["ls-files"])
        .lines()
        .find(|path| !path.starts_with('.') && !path.starts_with("vendor"))
        .expect("a tracked file")
        .to_owned();
    std::fs::write(initialised.join(&tracked), b"changed in the checkout\n").expect("write");
    std::fs::write(initialised.join("untracked.txt"), b"new\n").expect("write");
    let engine = engine_for(&fixture);
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let before = fluxgit_fixtures::tree_digest(&root);
    let report = engine.submodule_status(&repo, None).expect("status");
    assert_eq!(before, fluxgit_fixtures::tree_digest(&root), "submodule.status changed the repository");

    let expected: Vec<(char, String, String)> = fixture
        .git(&["submodule", "status", "--recursive"])
        .lines()
        .map(|line| {
            let state = line.chars().next().expect("state column");
            let mut fields = line[1..].split(' ');
            let sha = fields.next().expect("sha").to_owned();
            (state, sha, fields.next().expect("path").to_owned())
        })
        .collect();
    let ours: Vec<(char, String, String)> = report
        .submodules
        .iter()
        .map(|submodule| {
            let state = match submodule.state {
                SubmoduleState::Clean => ' ',
                SubmoduleState::Drifted => '+',
                SubmoduleState::Uninitialized => '-',
                SubmoduleState::Conflict => 'U',
                SubmoduleState::Unreadable => '!',
            };
            // The checked-out commit is left out when it is the recorded one.
            let sha = submodule.checked_out_sha.clone().or(submodule.recorded_sha.clone()).expect("a sha");
            assert_eq!(submodule.checked_out_sha.is_some(), submodule.state == SubmoduleState::Drifted);
            (state, sha, submodule.path.clone())
        })
        .collect();
    assert_eq!(ours, expected);
    for submodule in &report.submodules {
        let recorded = fixture.git(&["ls-files", "-s", "--", &submodule.path]);
        if let Some(line) = recorded.lines().next() {
            assert_eq!(submodule.recorded_sha.as_deref(), line.split(' ').nth(1), "{}", submodule.path);
        }
        assert_eq!(submodule.initialized, submodule.state != SubmoduleState::Uninitialized);
        let checkout = fixture.path().join(&submodule.path);
        if submodule.initialized {
            let porcelain = fixture.git_in(&checkout, &["status", "--porcelain"]);
            let untracked = porcelain.lines().filter(|line| line.starts_with("??")).count();
            assert_eq!(submodule.untracked, untracked, "{}", submodule.path);
            assert_eq!(submodule.dirty, porcelain.lines().any(|line| !line.starts_with("??")), "{}", submodule.path);
        }
    }
    assert!(report.submodules.iter().any(|submodule| submodule.dirty), "the dirty one is seen");

    let filtered = engine.submodule_status(&repo, Some("libs/initialised")).expect("filtered");
    let paths: Vec<&str> = filtered.submodules.iter().map(|submodule| submodule.path.as_str()).collect();
    assert_eq!(paths, ["libs/initialised", "libs/initialised/vendor/nested"]);
    assert!(engine.submodule_status(&repo, Some("libs/init")).expect("no match").submodules.is_empty());
    assert!(matches!(
        engine.submodule_status(&repo, Some("../x")),
        Err(Error::Invalid { reason: InvalidReason::InvalidPath, .. })
    ));
}

#[test]
fn branch_stack_of_three_stacked_branches_and_an_unrelated_one() {
    use fluxgit_engine::branch_stack::{Options as StackOptions, Relation};
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let commit = |file: &str| {
        std::fs::write(fixture.path().join(file), format!("{file}\n")).expect("write");
        fixture.git(&["add", file]);
        fixture.git(&["commit", "-q", "-m", &format!("add {file}")]);
    };
    fixture.git(&["checkout", "-q", "-b", "stack/one"]);
    commit("one-a.txt");
    commit("one-b.txt");
    fixture.git(&["checkout", "-q", "-b", "stack/two"]);
    commit("two.txt");
    fixture.git(&["checkout", "-q", "-b", "stack/three"]);
    commit("three.txt");
    fixture.git(&["checkout", "-q", "-b", "sibling", "main"]);
    commit("sibling.txt");
    fixture.git(&["checkout", "-q", "--orphan", "unrelated"]);
    commit("unrelated.txt");
    fixture.git(&["checkout", "-q", "main"]);
    commit("main-later.txt");
    fixture.git(&["checkout", "-q", "stack/two"]);

    let engine = engine_for(&fixture);
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let before = fluxgit_fixtures::tree_digest(fixture.root());
    let options = StackOptions { base_candidates: vec!["develop".into(), "main".into()], max_related: 8, branch: None };
    let report = engine.branch_stack(&repo, &options).expect("branch stack");
    assert_eq!(before, fluxgit_fixtures::tree_digest(fixture.root()), "branchStack changed the repository");

    assert_eq!(report.branch.as_deref(), Some("stack/two"));
    let base = report.base.as_ref().expect("a base");
    assert_eq!(base.name, "main");
    let merge_base = fixture.git(&["merge-base", "HEAD", "main"]);
    assert_eq!(base.merge_base.as_deref(), Some(fixture.git(&["rev-parse", "--short", merge_base.trim()]).trim()));
    assert_eq!((base.ahead, base.behind), left_right(&fixture, "HEAD", "main"));
    assert_eq!((base.ahead, base.behind), (3, 1));

    // Every count from the examined branch: `ahead` = commits it has that the other lacks. In stack order: the
    // branch it is built on, the one built on it, then the one sharing its base.
    let related: Vec<(&str, Relation, (usize, usize))> =
        report.related.iter().map(|r| (r.name.as_str(), r.relation, (r.ahead, r.behind))).collect();
    let counts = |name: &str| left_right(&fixture, "HEAD", name);
    assert_eq!(
        related,
        vec![
            ("stack/one", Relation::CurrentStackedOn, counts("stack/one")),
            ("stack/three", Relation::StackedOnCurrent, counts("stack/three")),
            ("sibling", Relation::SharesBase, counts("sibling")),
        ],
        "the unrelated orphan branch and the base itself are not listed"
    );
    assert_eq!(counts("stack/one"), (1, 0), "stack/two is one commit ahead of stack/one");
    assert_eq!(report.related_total, 3);

    // Seen from another branch: the same counts git gives from that branch, the chain in stack order.
    let from_three = StackOptions { branch: Some("stack/three".into()), ..options.clone() };
    let three = engine.branch_stack(&repo, &from_three).expect("branch stack of stack/three");
    assert_eq!(three.branch.as_deref(), Some("stack/three"));
    let base = three.base.as_ref().expect("a base");
    assert_eq!((base.ahead, base.behind), left_right(&fixture, "stack/three", "main"));
    let related: Vec<(&str, Relation, (usize, usize))> =
        three.related.iter().map(|r| (r.name.as_str(), r.relation, (r.ahead, r.behind))).collect();
    assert_eq!(
        related,
        vec![
            ("stack/one", Relation::CurrentStackedOn, left_right(&fixture, "stack/three", "stack/one")),
            ("stack/two", Relation::CurrentStackedOn, left_right(&fixture, "stack/three", "stack/two")),
            ("sibling", Relation::SharesBase, left_right(&fixture, "stack/three", "sibling")),
        ]
    );
    let unknown = engine.branch_stack(&repo, &StackOptions { branch: Some("stack/thre".into()), ..options.clone() });
    match unknown {
        Err(Error::Invalid { reason: InvalidReason::UnknownRevision, suggestions, message, .. }) => {
            assert_eq!(suggestions.first().map(String::as_str), Some("stack/three"), "{message}");
            assert!(suggestions.len() <= 3 && message.contains("stack/three"), "{message}");
        }
        other => panic!("an unknown branch: {other:?}"),
    }

    let one = engine.branch_stack(&repo, &StackOptions { max_related: 1, ..options.clone() }).expect("branch stack");
    assert_eq!((one.related.len(), one.related_total), (1, 3));
    // No candidate exists but the defaults: main is found; an option-like candidate is refused.
    let refused = engine.branch_stack(&repo, &StackOptions { base_candidates: vec!["--all".into()], ..options });
    assert!(matches!(refused, Err(Error::Invalid { reason: InvalidReason::InvalidRevision, .. })));
}

/// `git rev-list --left-right --count one...other`: (commits only on `one`, commits only on `other`).
fn left_right(fixture: &Fixture, one: &str, other: &str) -> (usize, usize) {
    let out = fixture.git(&["rev-list", "--left-right", "--count", &format!("{one}...{other}")]);
    let mut counts = out.split_whitespace().map(|count| count.parse().expect("a count"));
    (counts.next().expect("left"), counts.next().expect("right"))
}

/// A clean filter configured inside a submodule (its own config, its own `.gitattributes`) must not run when a read
/// looks into the submodule's work tree: the engine opens submodules with filter drivers removed, as it does the
/// top-level repository.
#[test]
fn filter_drivers_inside_a_submodule_never_run() {
    use fluxgit_engine::{Budgeted, brief, budget};
    let fixture = fluxgit_fixtures::build(Scenario::Submodules);
    let root = fixture.root().canonicalize().expect("root");
    let submodule = fixture.path().join("libs/initialised");
    let marker = root.join("submodule-filter.marker");
    let script = root.join("submodule-filter.sh");
    std::fs::write(&script, format!("#!/bin/sh\n: > '{}'\nexec cat\n", marker.display())).expect("script");
    let chmod = std::process::Command::new("chmod").arg("+x").arg(&script).status().expect("chmod");
    assert!(chmod.success());
    std::fs::write(submodule.join(".gitattributes"), "* filter=evil\n").expect("attributes");
    fixture.git_in(&submodule, &["add", ".gitattributes"]);
    fixture.git_in(&submodule, &["commit", "-q", "-m", "chore: filter everything"]);
    fixture.git_in(&submodule, &["config", "filter.evil.clean", &format!("'{}'", script.display())]);
    // Edit a tracked file so any status of the submodule has to hash (and so filter) its content.
    let tracked = fixture
        .git_in(&submodule, &["ls-files"])
        .lines()
        .find(|path| !path.starts_with('.') && !path.starts_with("vendor"))
        .expect("a tracked file")
        .to_owned();
    std::fs::write(submodule.join(&tracked), b"edited in the submodule\n").expect("edit");
    assert!(!marker.exists(), "nothing ran while setting up");

    let engine = engine_for(&fixture);
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let mut measure =
        |result: &Budgeted<brief::Brief>| budget::count_tokens(&serde_json::to_string(result).expect("json"));
    engine.brief(&repo, &brief::Options::default(), 100_000, &mut measure).expect("brief");
    assert!(!marker.exists(), "repo.brief ran a filter driver configured in a submodule");
    let report = engine.submodule_status(&repo, None).expect("submodule status");
    assert!(report.submodules.iter().any(|submodule| submodule.dirty), "the edit is seen");
    assert!(!marker.exists(), "submodule.status ran a filter driver configured in a submodule");
    let inner = engine.resolve(submodule.to_str().expect("utf-8")).expect("the submodule resolves");
    let mut measure = |result: &Budgeted<fluxgit_engine::status::Report>| {
        budget::count_tokens(&serde_json::to_string(result).expect("json"))
    };
    engine.status(&inner, 100_000, &mut measure).expect("status of the submodule itself");
    let top = engine.status(&repo, 100_000, &mut measure).expect("status of the superproject").data;
    assert!(!marker.exists(), "a filter driver configured in a submodule ran");
    // Its modified content is still reported, as `git status --porcelain` does (` M libs/initialised`).
    let unstaged: Vec<&str> = top.unstaged.iter().map(|change| change.path.as_str()).collect();
    let porcelain = fixture.git(&["-c", "core.fsmonitor=false", "status", "--porcelain", "--ignore-submodules=none"]);
    assert!(porcelain.lines().any(|line| line == " M libs/initialised"), "{porcelain}");
    assert!(unstaged.contains(&"libs/initialised"), "{unstaged:?}");

    // The trap is real: git itself runs it (a diff reads the file through the clean filter).
    fixture.git_in(&submodule, &["diff"]);
    assert!(marker.exists(), "git runs the submodule's clean filter, so the check above can fail");
}

/// The whole commit graph as git lists it (`git rev-list --parents --all`): commit -> parents.
fn parent_map(fixture: &Fixture) -> std::collections::HashMap<String, Vec<String>> {
    fixture
        .git(&["rev-list", "--parents", "--all"])
        .lines()
        .map(|line| {
            let mut ids = line.split_whitespace().map(str::to_owned);
            let id = ids.next().expect("a commit");
            (id, ids.collect())
        })
        .collect()
}

/// The commits reachable from `tip` (itself included) in `parents`, not entering `stop`.
fn reachable(
    parents: &std::collections::HashMap<String, Vec<String>>,
    tip: &str,
    stop: &std::collections::HashSet<String>,
) -> std::collections::HashSet<String> {
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![tip.to_owned()];
    while let Some(id) = stack.pop() {
        if stop.contains(&id) || !seen.insert(id.clone()) {
            continue;
        }
        stack.extend(parents.get(&id).into_iter().flatten().cloned());
    }
    seen
}

/// What `repo.branchStack` must list for `examined` against `base` (None: no base), from git: ancestry from `git
/// merge-base --is-ancestor`, the fork point from `git merge-base`, the commits a branch has and the base lacks and
/// the counts from the commit graph `git rev-list --parents --all` lists; in stack order, with the total.
fn expected_stack(
    fixture: &Fixture,
    examined: &str,
    base: Option<&str>,
) -> (Vec<(String, fluxgit_engine::branch_stack::Relation, usize, usize)>, usize) {
    use fluxgit_engine::branch_stack::Relation;
    use std::collections::HashSet;
    let parents = parent_map(fixture);
    let id = |rev: &str| fixture.git(&["rev-parse", &format!("{rev}^{{commit}}")]).trim().to_owned();
    let is_ancestor =
        |one: &str, two: &str| fixture.git_raw(&["merge-base", "--is-ancestor", one, two]).status.success();
    let tip = id(examined);
    let in_tip = reachable(&parents, &tip, &HashSet::new());
    let base_tip = base.map(id);
    let in_base = base_tip.as_deref().map(|base| reachable(&parents, base, &HashSet::new())).unwrap_or_default();
    let fork = base.and_then(|base| {
        let output = fixture.git_raw(&["merge-base", examined, base]);
        output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    });
    let mut rows = Vec::new();
    for name in fixture.git(&["for-each-ref", "--format=%(refname:short)", "refs/heads"]).lines() {
        if name == examined || Some(name) == base {
            continue;
        }
        let other = id(name);
        let below = is_ancestor(&other, &tip);
        assert_eq!(below, in_tip.contains(&other), "git and the parent map agree on {name}");
        let relation = if below {
            (base.is_none() || !is_ancestor(&other, base_tip.as_deref().expect("a base")))
                .then_some(Relation::CurrentStackedOn)
        } else if is_ancestor(&tip, &other) {
            Some(Relation::StackedOnCurrent)
        } else if let Some(fork) = fork.as_deref() {
            // Its own commits (those the base lacks) have the fork point as a parent.
            let own = reachable(&parents, &other, &in_base);
            own.iter().any(|commit| parents[commit].iter().any(|parent| parent == fork)).then_some(Relation::SharesBase)
        } else {
            None
        };
        let Some(relation) = relation else { continue };
        let in_other = reachable(&parents, &other, &HashSet::new());
        let ahead = in_tip.difference(&in_other).count();
        let behind = in_other.difference(&in_tip).count();
        let time: i64 = fixture.git(&["log", "-1", "--format=%ct", name]).trim().parse().expect("a date");
        rows.push((name.to_owned(), relation, ahead, behind, time));
    }
    rows.sort_by(|a, b| {
        a.1.cmp(&b.1)
            .then_with(|| match a.1 {
                Relation::CurrentStackedOn => b.2.cmp(&a.2),
                Relation::StackedOnCurrent => a.3.cmp(&b.3),
                Relation::SharesBase => b.4.cmp(&a.4),
            })
            .then(a.0.cmp(&b.0))
    });
    let total = rows.len();
    (rows.into_iter().map(|(name, relation, ahead, behind, _)| (name, relation, ahead, behind)).collect(), total)
}

/// Many branches around a history with merges and skewed committer dates (a commit dated years after its
/// children, branch commits dated before their parents): every branch is placed as git places it, seen from
/// several branches, with and without a base, without and with a commit-graph (generation numbers) and with one
/// that misses the newest commits.
#[test]
fn branch_stack_places_every_branch_as_git_does_with_skewed_clocks() {
    use fluxgit_engine::branch_stack::Options as StackOptions;
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let hour = 3_600_i64;
    let at = |hours: i64| fluxgit_fixtures::CLOCK_START as i64 + 100 * 24 * hour + hours * hour;
    let branch = |name: &str, id: &str| {
        fixture.git(&["update-ref", &format!("refs/heads/{name}"), id]);
    };
    let m1 = commit_tree(&fixture, &["main"], "m1", at(1));
    let m2 = commit_tree(&fixture, &[&m1], "m2", at(2));
    // Years after its children: popped first by a date-ordered walk.
    let m3 = commit_tree(&fixture, &[&m2], "m3 (dated years later)", at(80_000));
    let m4 = commit_tree(&fixture, &[&m3], "m4", at(4));
    let m5 = commit_tree(&fixture, &[&m4], "m5", at(5));
    let m6 = commit_tree(&fixture, &[&m5], "m6", at(6));
    let done = commit_tree(&fixture, &[&m5], "done", at(7));
    let m7 = commit_tree(&fixture, &[&m6, &done], "m7 merges done", at(8));
    let m8 = commit_tree(&fixture, &[&m7], "m8", at(9));
    branch("main", &m8);
    branch("done", &done);
    branch("old", &m1);
    branch("at-fork", &m4);
    let a1 = commit_tree(&fixture, &[&m4], "a1", at(20));
    let a2 = commit_tree(&fixture, &[&a1], "a2", at(21));
    branch("stack/a", &a2);
    branch("same-as-a", &a2);
    let b1 = commit_tree(&fixture, &[&a2], "b1", at(22));
    branch("stack/b", &b1);
    let c1 = commit_tree(&fixture, &[&b1], "c1", at(23));
    branch("stack/c", &c1);
    let s1 = commit_tree(&fixture, &[&m4], "s1", at(30));
    branch("sibling", &s1);
    let s2 = commit_tree(&fixture, &[&m2], "s2", at(31));
    branch("sibling-lower", &s2);
    let k1 = commit_tree(&fixture, &[&m3], "k1 (dated before its parent)", at(3));
    branch("from-skewed", &k1);
    let y1 = commit_tree(&fixture, &[&a2, &m6], "y1 merges main into stack/a", at(40));
    branch("stack/synced", &y1);
    let z1 = commit_tree(&fixture, &[&m8], "z1", at(41));
    branch("on-main", &z1);
    let lone = commit_tree(&fixture, &[], "lone", at(42));
    branch("lone", &lone);
    let views: [(&str, &[&str], Option<&str>); 8] = [
        ("stack/b", &[], Some("main")),
        ("stack/a", &[], Some("main")),
        ("stack/c", &[], Some("main")),
        ("sibling", &[], Some("main")),
        ("from-skewed", &[], Some("main")),
        ("lone", &[], Some("main")),
        ("main", &[], None),
        ("stack/b", &["sibling-lower"], Some("sibling-lower")),
    ];
    let check = |round: &str| {
        let before = fluxgit_fixtures::tree_digest(fixture.root());
        let engine = engine_for(&fixture);
        let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
        for (examined, candidates, base) in views {
            let options = StackOptions {
                base_candidates: candidates.iter().map(|name| (*name).to_owned()).collect(),
                max_related: 50,
                branch: Some(examined.to_owned()),
            };
            let report = engine.branch_stack(&repo, &options).expect("branch stack");
            assert_eq!(report.base.as_ref().map(|base| base.name.as_str()), base, "{round}: base of {examined}");
            let ours: Vec<_> = report
                .related
                .iter()
                .map(|related| (related.name.clone(), related.relation, related.ahead, related.behind))
                .collect();
            let (expected, total) = expected_stack(&fixture, examined, base);
            assert_eq!(ours, expected, "{round}: branches around {examined}");
            assert_eq!(report.related_total, total, "{round}: related to {examined}");
        }
        assert_eq!(
            before,
            fluxgit_fixtures::tree_digest(fixture.root()),
            "{round}: branchStack changed the repository"
        );
    };
    check("no commit-graph");
    fixture.git(&["commit-graph", "write", "--reachable"]);
    check("commit-graph");
    // Commits newer than the commit-graph: no generation numbers for them.
    let c2 = commit_tree(&fixture, &[&c1, &s1], "c2 merges sibling", at(50));
    branch("stack/c", &c2);
    let d1 = commit_tree(&fixture, &[&c2], "d1 (dated before its parents)", at(-20_000));
    branch("stack/d", &d1);
    check("commit-graph missing the newest commits");
}

/// The stack-after-parent-rebase recipe: on `main`, `parent` gets two commits, `child` two on top of `parent`;
/// `main` gets one more (`main-file`, changing `shared.txt` when `conflicting`), `git rebase main` on `parent`,
/// then `child` is checked out. With `conflicting`, child's first commit changes `shared.txt` too.
pub(crate) fn parent_rebased_under_child(conflicting: bool) -> Fixture {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let write = |file: &str, text: &str, message: &str| {
        std::fs::write(fixture.path().join(file), text).expect("write");
        fixture.git(&["add", file]);
        fixture.git(&["commit", "-q", "-m", message]);
    };
    write("shared.txt", "one\ntwo\nthree\n", "add shared.txt");
    fixture.git(&["checkout", "-q", "-b", "parent"]);
    write("p1.txt", "p1\n", "parent one");
    write("p2.txt", "p2\n", "parent two");
    fixture.git(&["checkout", "-q", "-b", "child"]);
    match conflicting {
        true => write("shared.txt", "one\nchild\nthree\n", "child one"),
        false => write("c1.txt", "c1\n", "child one"),
    }
    write("c2.txt", "c2\n", "child two");
    fixture.git(&["checkout", "-q", "main"]);
    match conflicting {
        true => write("shared.txt", "one\nmain\nthree\n", "main moves"),
        false => write("main-file.txt", "main\n", "main moves"),
    }
    fixture.git(&["checkout", "-q", "parent"]);
    fixture.git(&["rebase", "-q", "main"]);
    fixture.git(&["checkout", "-q", "child"]);
    fixture
}

/// A copy of the fixture's repository (work tree, git dir and reflogs) in a new temporary directory.
fn copy_of(fixture: &Fixture) -> tempfile::TempDir {
    let copy = tempfile::tempdir().expect("temp dir");
    let status = std::process::Command::new("cp")
        .args(["-a", &format!("{}/.", fixture.path().display()), &copy.path().display().to_string()])
        .status()
        .expect("cp runs");
    assert!(status.success(), "copying the repository");
    copy
}

/// `git rebase --onto ...` as the report gives it, run in `dir`: its output, whatever the exit status.
fn run_command(fixture: &Fixture, dir: &std::path::Path, command: &str) -> std::process::Output {
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(&words[..3], ["git", "rebase", "--onto"], "{command}");
    fixture.git_raw_in(dir, &words[1..])
}

/// The short form `report` uses for `rev`.
fn short_sha(fixture: &Fixture, rev: &str) -> String {
    fixture.git(&["rev-parse", "--short", rev]).trim().to_owned()
}

#[test]
fn branch_stack_names_a_rebased_parent_as_git_fork_point_does() {
    use fluxgit_engine::branch_stack::Options as StackOptions;
    use fluxgit_engine::conflict::preflight::RebaseStatus;
    let fixture = parent_rebased_under_child(false);
    let engine = engine_for(&fixture);
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let before = fluxgit_fixtures::tree_digest(fixture.root());
    let report =
        engine.branch_stack(&repo, &StackOptions { max_related: 8, ..StackOptions::default() }).expect("stack");
    assert_eq!(before, fluxgit_fixtures::tree_digest(fixture.root()), "branchStack changed the repository");

    let moved = report.parent_moved.as_ref().expect("the rebased parent is named");
    assert_eq!(moved.parent, "parent");
    let fork_point = fixture.git(&["merge-base", "--fork-point", "parent", "child"]);
    assert_eq!(moved.old_tip, short_sha(&fixture, fork_point.trim()), "the old tip is git's fork point");
    assert_eq!(moved.new_tip, short_sha(&fixture, "parent"));
    let own = fixture.git(&["rev-list", "--count", &format!("{}..child", fork_point.trim())]);
    assert_eq!(moved.commits.to_string(), own.trim());
    assert_eq!(moved.commits, 2);
    assert_eq!(moved.command, format!("git rebase --onto parent {} child", moved.old_tip));
    assert_eq!((moved.replay, moved.stops_at.as_ref(), moved.conflicts.len()), (RebaseStatus::Clean, None, 0));
    // The same answer for `branch` given from another branch.
    fixture.git(&["checkout", "-q", "main"]);
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let named = StackOptions { max_related: 8, branch: Some("child".into()), ..StackOptions::default() };
    assert_eq!(engine.branch_stack(&repo, &named).expect("stack").parent_moved.as_ref(), Some(moved));
    fixture.git(&["checkout", "-q", "child"]);
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");

    // The command, run by git on a copy, puts child's own commits on the parent's tip now.
    let copy = copy_of(&fixture);
    let subjects = |dir: &std::path::Path, range: &str| fixture.git_in(dir, &["log", "--format=%s", range]);
    let own_subjects = subjects(copy.path(), &format!("{}..child", fork_point.trim()));
    let output = run_command(&fixture, copy.path(), &moved.command);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let on_parent = fixture.git_in(copy.path(), &["rev-list", "--count", "parent..child"]);
    assert_eq!(on_parent.trim(), "2");
    assert_eq!(
        fixture.git_in(copy.path(), &["rev-parse", "child~2"]),
        fixture.git_in(copy.path(), &["rev-parse", "parent"])
    );
    assert_eq!(subjects(copy.path(), "parent..child"), own_subjects);

    // The brief hints at it, before the stack hint, which it replaces.
    let options = fluxgit_engine::brief::Options::default();
    let brief = engine.brief(&repo, &options, usize::MAX, &mut |_| 0).expect("brief").data;
    let hint = brief.hints.first().expect("a hint");
    assert_eq!((hint.kind, hint.tool), ("parentMoved", "repo_branchStack"), "{:?}", brief.hints);
    assert_eq!(hint.arguments.get("branch").and_then(|branch| branch.as_str()), Some("child"));
    assert_eq!(hint.why, "parent parent was rebased; this branch still sits on its old commits");
    assert!(brief.hints.iter().all(|hint| hint.kind != "stack"), "{:?}", brief.hints);
}

#[test]
fn branch_stack_predicts_the_conflicts_of_moving_onto_a_rebased_parent() {
    use fluxgit_engine::branch_stack::Options as StackOptions;
    use fluxgit_engine::conflict::preflight::RebaseStatus;
    let fixture = parent_rebased_under_child(true);
    let engine = engine_for(&fixture);
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let report =
        engine.branch_stack(&repo, &StackOptions { max_related: 8, ..StackOptions::default() }).expect("stack");
    let moved = report.parent_moved.as_ref().expect("the rebased parent is named");
    let fork_point = fixture.git(&["merge-base", "--fork-point", "parent", "child"]);
    assert_eq!(moved.old_tip, short_sha(&fixture, fork_point.trim()));
    assert_eq!(moved.replay, RebaseStatus::Stops);

    // git stops at the same commit, with the same paths unmerged.
    let copy = copy_of(&fixture);
    let output = run_command(&fixture, copy.path(), &moved.command);
    assert!(!output.status.success(), "the replay conflicts: {}", String::from_utf8_lossy(&output.stdout));
    let unmerged = fixture.git_in(copy.path(), &["diff", "--name-only", "--diff-filter=U"]);
    assert_eq!(moved.conflicts, unmerged.lines().collect::<Vec<_>>());
    assert_eq!(moved.conflicts, ["shared.txt"]);
    let stopped = fixture.git_in(copy.path(), &["log", "-1", "--format=%h %s", "REBASE_HEAD"]);
    assert_eq!(moved.stops_at.as_deref(), Some(stopped.trim()));
}

#[test]
fn a_parent_that_only_advanced_is_not_a_moved_parent() {
    use fluxgit_engine::branch_stack::{Options as StackOptions, Relation};
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let commit = |file: &str| {
        std::fs::write(fixture.path().join(file), format!("{file}\n")).expect("write");
        fixture.git(&["add", file]);
        fixture.git(&["commit", "-q", "-m", &format!("add {file}")]);
    };
    fixture.git(&["checkout", "-q", "-b", "parent"]);
    commit("p1.txt");
    commit("p2.txt");
    fixture.git(&["checkout", "-q", "-b", "child"]);
    commit("c1.txt");
    commit("c2.txt");
    fixture.git(&["checkout", "-q", "main"]);
    commit("main-later.txt");
    fixture.git(&["checkout", "-q", "parent"]);
    commit("p3.txt");
    fixture.git(&["checkout", "-q", "child"]);
    let engine = engine_for(&fixture);
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let report =
        engine.branch_stack(&repo, &StackOptions { max_related: 8, ..StackOptions::default() }).expect("stack");
    assert_eq!(report.parent_moved, None, "parent advanced: its old tip is still in its history");
    // git finds the fork point all the same; it is simply parent's history.
    let fork_point = fixture.git(&["merge-base", "--fork-point", "parent", "child"]);
    let ancestor = fixture.git_raw(&["merge-base", "--is-ancestor", fork_point.trim(), "parent"]);
    assert!(ancestor.status.success());
    // The existing answer stays: child is behind parent by parent's new commit and behind the base.
    let parent = report.related.iter().find(|related| related.name == "parent").expect("parent is related");
    assert_eq!(parent.relation, Relation::SharesBase);
    assert_eq!((parent.ahead, parent.behind), left_right(&fixture, "child", "parent"));
    assert_eq!((parent.ahead, parent.behind), (2, 1));
    let base = report.base.as_ref().expect("a base");
    assert_eq!((base.ahead, base.behind), left_right(&fixture, "child", "main"));
    let options = fluxgit_engine::brief::Options::default();
    let brief = engine.brief(&repo, &options, usize::MAX, &mut |_| 0).expect("brief").data;
    assert!(brief.hints.iter().all(|hint| hint.kind != "parentMoved"), "{:?}", brief.hints);
}

#[test]
fn a_long_branch_on_a_rebased_parent_is_named_but_not_replayed() {
    use fluxgit_engine::branch_stack::{MAX_PARENT_REPLAY, Options as StackOptions};
    use fluxgit_engine::conflict::preflight::RebaseStatus;
    let fixture = parent_rebased_under_child(false);
    // Child grows past the replay bound (commits with main's tree: only their count matters here).
    let mut tip = fixture.git(&["rev-parse", "child"]).trim().to_owned();
    for step in 0..MAX_PARENT_REPLAY {
        tip = commit_tree(&fixture, &[&tip], &format!("child step {step}"), 2_000_000_000 + step as i64);
    }
    fixture.git(&["reset", "-q", "--hard", &tip]);
    let engine = engine_for(&fixture);
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let report =
        engine.branch_stack(&repo, &StackOptions { max_related: 8, ..StackOptions::default() }).expect("stack");
    let moved = report.parent_moved.as_ref().expect("the rebased parent is named");
    let fork_point = fixture.git(&["merge-base", "--fork-point", "parent", "child"]);
    assert_eq!(moved.old_tip, short_sha(&fixture, fork_point.trim()));
    let own = fixture.git(&["rev-list", "--count", &format!("{}..child", fork_point.trim())]);
    assert_eq!(moved.commits.to_string(), own.trim());
    assert!(moved.commits > MAX_PARENT_REPLAY);
    assert_eq!((moved.replay, moved.stops_at.as_ref()), (RebaseStatus::TooManyCommits, None));
    let text = fluxgit_engine::render::branch_stack(
        &fluxgit_engine::Budgeted { data: report.clone(), omitted: Default::default() },
        &Default::default(),
    );
    assert!(text.contains(&format!("{}: too many commits to predict", moved.command)), "{text}");
}
