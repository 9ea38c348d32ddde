//! `repo.collisions` against the git CLI: on a repository with four linked worktrees (committed and
//! uncommitted edits, a rename, a conflict only with the default branch), every pair's conflicted
//! files equal `git merge-tree --write-tree --name-only` of the two sides, the uncommitted side
//! committed by git into a scratch object directory (the repository's objects as its alternate);
//! the repository is byte-identical after the forecast.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::engine_for;
use fluxgit_engine::collision::{MergeVerdict, Options};
use fluxgit_fixtures::{Fixture, Scenario};

const LIB: &str = "fn one() -> u32 {\n    1\n}\n\nfn two() -> u32 {\n    2\n}\n\nfn three() -> u32 {\n    3\n}\n";

fn write(dir: &Path, path: &str, text: &str) {
    let full = dir.join(path);
    std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
    std::fs::write(full, text).expect("write");
}

fn notes(changed_line: Option<&str>) -> String {
    (1..=10)
        .map(|n| if n == 9 { format!("{}\n", changed_line.unwrap_or("nine")) } else { format!("line {n}\n") })
        .collect()
}

/// The tip git would give the worktree at `dir`: HEAD, or `git add -A` and `git commit-tree` on top of
/// it when its work tree differs, with every object written into `scratch` (alternate: the repository's
/// objects) and a copy of its index.
fn git_tip(fixture: &Fixture, dir: &Path, scratch: &Path, objects: &Path) -> String {
    let head = fixture.git_in(dir, &["rev-parse", "HEAD"]).trim().to_owned();
    if fixture.git_in(dir, &["status", "--porcelain"]).trim().is_empty() {
        return head;
    }
    let index_path =
        PathBuf::from(fixture.git_in(dir, &["rev-parse", "--path-format=absolute", "--git-path", "index"]).trim());
    let index = scratch.join(format!("index-{}", head));
    std::fs::copy(index_path, &index).expect("copy the index");
    let run = |args: &[&str]| {
        let output = fixture
            .git_command(dir)
            .args(args)
            .env("GIT_INDEX_FILE", &index)
            .env("GIT_OBJECT_DIRECTORY", scratch.join("objects"))
            .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", objects)
            .output()
            .expect("git runs");
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).expect("utf-8").trim().to_owned()
    };
    run(&["add", "-A"]);
    let tree = run(&["write-tree"]);
    run(&["commit-tree", &tree, "-p", &head, "-m", "uncommitted"])
}

/// `git merge-tree --write-tree --name-only a b`'s conflicted paths.
fn git_conflicts(fixture: &Fixture, scratch: &Path, objects: &Path, a: &str, b: &str) -> BTreeSet<String> {
    let output = fixture
        .git_command(fixture.path())
        .args(["merge-tree", "--write-tree", "--name-only", "--no-messages", a, b])
        .env("GIT_OBJECT_DIRECTORY", scratch.join("objects"))
        .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", objects)
        .output()
        .expect("git runs");
    assert!(matches!(output.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .expect("utf-8")
        .lines()
        .skip(1)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

fn repository_state(fixture: &Fixture) -> (String, String, String) {
    let refs = fixture.git(&["for-each-ref", "--format=%(refname) %(objectname)"]);
    let objects = fixture.git(&["count-objects", "-v"]);
    (refs, objects, fluxgit_fixtures::tree_digest(fixture.root()))
}

#[test]
fn every_pair_of_worktrees_conflicts_exactly_where_git_merge_tree_does_and_nothing_is_written() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let repo = fixture.path().to_path_buf();
    write(&repo, "src/lib.rs", LIB);
    write(&repo, "notes.txt", &notes(None));
    write(&repo, "old.txt", "keep me\nas I am\n");
    fixture.git(&["add", "-A"]);
    fixture.git(&["commit", "-q", "-m", "base"]);
    let root = fixture.root().canonicalize().expect("root");
    let worktree = |name: &str| {
        let dir = root.join(format!("wt-{name}"));
        fixture.git(&["worktree", "add", "-q", "-b", name, dir.to_str().expect("utf-8")]);
        dir
    };
    // a: a committed edit of `one`; b: an uncommitted edit of the same line (a conflict of a dirty side).
    let a = worktree("a");
    write(&a, "src/lib.rs", &LIB.replace("    1\n", "    10\n"));
    fixture.git_in(&a, &["commit", "-q", "-am", "one is ten"]);
    let b = worktree("b");
    write(&b, "src/lib.rs", &LIB.replace("    1\n", "    11\n"));
    // c: line 9 of the notes, and an untracked file in a new directory; main changes line 9 too (a
    // conflict with the default branch only).
    let c = worktree("c");
    write(&c, "notes.txt", &notes(Some("nine from c")));
    fixture.git_in(&c, &["commit", "-q", "-am", "c's nine"]);
    write(&c, "docs/new.md", "new\n");
    // d: a rename and a disjoint edit of `three` (clean with everyone).
    let d = worktree("d");
    fixture.git_in(&d, &["mv", "old.txt", "moved.txt"]);
    write(&d, "src/lib.rs", &LIB.replace("    3\n", "    30\n"));
    fixture.git_in(&d, &["commit", "-q", "-am", "move and three"]);
    write(&repo, "notes.txt", &notes(Some("nine from main")));
    fixture.git(&["commit", "-q", "-am", "main's nine"]);

    let before = repository_state(&fixture);
    let engine = engine_for(&fixture);
    let resolved = engine.resolve(repo.to_str().expect("utf-8")).expect("resolves");
    let report = engine.collisions_full(&resolved, &Options::default()).expect("forecast");
    assert_eq!(repository_state(&fixture), before, "the forecast wrote nothing");

    let names: Vec<&str> = report.lines.iter().map(|line| line.name.as_str()).collect();
    assert_eq!(names, ["main", "a", "b", "c", "d"], "{report:#?}");
    assert_eq!(report.lines[2].uncommitted, 1);
    assert_eq!(report.lines[3].uncommitted, 1, "the untracked file in a new directory");
    assert!(report.lines[0].default);
    assert_eq!(report.pair_count, 10);

    let scratch = tempfile::tempdir().expect("scratch");
    std::fs::create_dir_all(scratch.path().join("objects")).expect("objects dir");
    let objects = PathBuf::from(fixture.git(&["rev-parse", "--path-format=absolute", "--git-path", "objects"]).trim());
    let tips: BTreeMap<&str, String> = [("main", repo.clone()), ("a", a), ("b", b), ("c", c), ("d", d)]
        .iter()
        .map(|(name, dir)| (*name, git_tip(&fixture, dir, scratch.path(), &objects)))
        .collect();
    let mut conflicting = 0;
    for (first_idx, first) in names.iter().enumerate() {
        for second in &names[first_idx + 1..] {
            let expected = git_conflicts(&fixture, scratch.path(), &objects, &tips[first], &tips[second]);
            let pair = report.pairs.iter().find(|pair| pair.a == *first && pair.b == *second);
            let predicted: BTreeSet<String> = pair
                .map(|pair| {
                    pair.files.iter().filter(|file| file.conflict.is_some()).map(|file| file.path.clone()).collect()
                })
                .unwrap_or_default();
            assert_eq!(predicted, expected, "{first} x {second}: {pair:#?}");
            if !expected.is_empty() {
                conflicting += 1;
                assert_eq!(pair.map(|pair| pair.merge), Some(MergeVerdict::Conflicted));
            }
        }
    }
    assert_eq!(conflicting, 2, "a x b and main x c");
    assert_eq!(report.conflicting, 2);
    assert_eq!(report.pairs[0].merge, MergeVerdict::Conflicted, "conflicts first");
    let ab = report.pairs.iter().find(|pair| pair.a == "a" && pair.b == "b").expect("a x b listed");
    assert_eq!(ab.files[0].lines, vec![[2, 2]], "{ab:#?}");
    assert!(ab.files[0].symbols.is_empty(), "b's side is uncommitted: {ab:#?}");
    let ad = report.pairs.iter().find(|pair| pair.a == "a" && pair.b == "d").expect("a x d share src/lib.rs");
    assert_eq!(ad.merge, MergeVerdict::Clean);
    assert!(ad.files[0].lines.is_empty() && ad.files[0].symbols.is_empty(), "disjoint edits: {ad:#?}");

    // Warm: the same answer and nothing written (the oracle's `git status` above refreshed indexes).
    let before = repository_state(&fixture);
    let again = engine.collisions_full(&resolved, &Options::default()).expect("warm forecast");
    assert_eq!(again, report);
    assert_eq!(repository_state(&fixture), before);
}

#[test]
fn a_worktree_outside_the_allowed_roots_is_named_not_read() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let outside = tempfile::tempdir().expect("outside");
    let dir = outside.path().canonicalize().expect("canonical").join("wt-out");
    fixture.git(&["worktree", "add", "-q", "-b", "out", dir.to_str().expect("utf-8")]);
    write(&dir, "secret.txt", "never read\n");
    let engine = engine_for(&fixture);
    let resolved = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let report = engine.collisions_full(&resolved, &Options::default()).expect("forecast");
    assert_eq!(report.outside_roots, vec![dir.display().to_string()]);
    assert!(report.lines.iter().all(|line| line.name != "out"), "{report:#?}");
}

#[test]
fn the_brief_of_parallel_work_says_so_and_hints_at_the_forecast_only_when_lines_collide() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let engine = engine_for(&fixture);
    let brief = |engine: &fluxgit_engine::Engine| {
        let resolved = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
        let options = fluxgit_engine::brief::Options::default();
        engine.brief(&resolved, &options, 100_000, &mut crate::common::measure).expect("a brief").data
    };
    // No linked worktree: no line, no forecast.
    assert_eq!(brief(&engine).parallel, None);

    // Two worktrees editing different files: parallel, nothing collides, no hint.
    let root = fixture.root().canonicalize().expect("root");
    let (one, two) = (root.join("wt-one"), root.join("wt-two"));
    for (dir, branch) in [(&one, "one"), (&two, "two")] {
        fixture.git(&["worktree", "add", "-q", "-b", branch, dir.to_str().expect("utf-8")]);
    }
    write(&one, "one.txt", "mine\n");
    write(&two, "two.txt", "mine\n");
    let engine = engine_for(&fixture);
    let parallel = brief(&engine).parallel.expect("a parallel line");
    assert_eq!((parallel.lines, parallel.overlapping, parallel.first), (3, 0, None));
    assert!(brief(&engine).hints.iter().all(|hint| hint.tool != "repo_collisions"));

    // Both edit the same line of the same file: a conflict, named, and the hint.
    write(&one, "shared.txt", "one's\n");
    write(&two, "shared.txt", "two's\n");
    let engine = engine_for(&fixture);
    let brief = brief(&engine);
    let parallel = brief.parallel.expect("a parallel line");
    assert_eq!((parallel.conflicting, parallel.overlapping), (1, 1), "{parallel:?}");
    assert_eq!(parallel.first.as_deref(), Some("one x two: shared.txt"));
    assert!(brief.hints.iter().any(|hint| hint.tool == "repo_collisions"), "{:?}", brief.hints);
}
