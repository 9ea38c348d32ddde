//! The generation tables that make ahead/behind counts exact without a commit-graph (`ancestry/generations/mod.rs`):
//! saved in the run dir, a new process loads them instead of reading the history again; a damaged, cut or foreign
//! file is ignored and rewritten; a change of `.git/shallow` or of `refs/replace/` starts a table again, in memory
//! and on disk. Counts are checked against `git rev-list --left-right --count` (dates run forward here, so git's
//! date-ordered walk is exact) and against `git rev-list A --not B` on both sides.
//!
//! The tables and the count of numbered commits are process-wide, so the tests here take one lock.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

mod common;

use common::commit_tree;
use fluxgit_engine::ancestry;
use fluxgit_fixtures::{Fixture, Scenario};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The counts of `one...other` from the commit sets (`git rev-list one` lists every commit `one` reaches, whatever
/// the dates; it honours `.git/shallow` and replace refs), checked against `git rev-list --left-right --count`.
fn git_counts(fixture: &Fixture, one: &str, other: &str) -> (usize, usize) {
    let set = |rev: &str| -> HashSet<String> { fixture.git(&["rev-list", rev]).lines().map(str::to_owned).collect() };
    let (of_one, of_other) = (set(one), set(other));
    let counts = (of_one.difference(&of_other).count(), of_other.difference(&of_one).count());
    let git = fixture.git(&["rev-list", "--left-right", "--count", &format!("{one}...{other}")]);
    let mut fields = git.split_whitespace().map(|field| field.parse::<usize>().expect("a count"));
    let git = (fields.next().expect("left"), fields.next().expect("right"));
    assert_eq!(counts, git, "the commit sets and git rev-list --left-right --count {one}...{other} agree");
    counts
}

/// Our counts of `one...other` through a freshly opened repository (as a new call opens it), and how many commits
/// the count numbered by reading them.
fn our_counts(fixture: &Fixture, one: &str, other: &str) -> ((usize, usize), u64) {
    let repo = gix::open(fixture.path()).expect("gix opens the repository");
    let id = |rev: &str| {
        gix::ObjectId::from_hex(fixture.git(&["rev-parse", &format!("{rev}^{{commit}}")]).trim().as_bytes())
            .expect("hex")
    };
    let before = ancestry::numbered_commits();
    let counts = ancestry::ahead_behind(&repo, id(one), id(other)).expect("counts");
    (counts, ancestry::numbered_commits() - before)
}

/// The table file of the fixture's repository (its common dir as gix opens it names it).
fn table_file(fixture: &Fixture) -> PathBuf {
    let repo = gix::open(fixture.path()).expect("opens");
    ancestry::generation_table_file(repo.common_dir()).expect("tables are saved")
}

/// Seconds after the fixture's clock start.
fn at(seconds: i64) -> i64 {
    fluxgit_fixtures::CLOCK_START as i64 + seconds
}

/// `r` (main) <- x1 <- ... <- x10 (`x`), dates running forward; `c` with the parents `c_parents(x)`, dated a year
/// before the fixture's first commit (so that, numbered 1 and oldest, a walk pops it last); `a` merges `c` and `x`,
/// `b` is on `c`. Returns (x, c).
fn diamond(fixture: &Fixture, c_parents: impl Fn(&str) -> Vec<String>) -> (String, String) {
    let mut x = fixture.git(&["rev-parse", "main"]).trim().to_owned();
    for step in 1..=10 {
        x = commit_tree(fixture, &[&x], &format!("x{step}"), at(3_600 + step * 60));
    }
    let parents = c_parents(&x);
    let parents: Vec<&str> = parents.iter().map(String::as_str).collect();
    let c = commit_tree(fixture, &parents, "c", at(-YEAR));
    let a = commit_tree(fixture, &[&c, &x], "a merges c and x", at(5_000));
    let b = commit_tree(fixture, &[&c], "b", at(5_000));
    fixture.git(&["update-ref", "refs/heads/a", &a]);
    fixture.git(&["update-ref", "refs/heads/b", &b]);
    (x, c)
}

const YEAR: i64 = 365 * 24 * 3_600;

/// Saves tables in a directory of the test's own from now on.
fn save_in(dir: &Path) {
    ancestry::keep_generation_tables_in(Some(dir.to_path_buf()));
}

#[test]
fn a_saved_table_spares_a_new_process_the_history_read_and_a_bad_file_is_refused() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let saved = tempfile::tempdir().expect("tempdir");
    save_in(saved.path());
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    diamond(&fixture, |x| vec![x.to_owned()]);
    let expected = git_counts(&fixture, "a", "b");
    let commits = fixture.git(&["rev-list", "--count", "a", "b"]).trim().parse::<u64>().expect("a count");

    ancestry::forget_generation_tables();
    let (counts, numbered) = our_counts(&fixture, "a", "b");
    assert_eq!(counts, expected, "first count");
    assert_eq!(numbered, commits, "the first count numbers the whole history once");
    ancestry::flush_generation_tables();
    let file = table_file(&fixture);
    let written = std::fs::read(&file).expect("the table is saved");

    // A new process (nothing in memory) loads it and reads no history.
    ancestry::forget_generation_tables();
    assert_eq!(our_counts(&fixture, "a", "b"), (expected, 0), "loaded from the saved table");

    // A flipped bit, a cut file, another repository's file, garbage: refused, numbered again, and rewritten.
    let other = fluxgit_fixtures::build(Scenario::Clean);
    diamond(&other, |x| vec![x.to_owned()]);
    ancestry::forget_generation_tables();
    our_counts(&other, "a", "b");
    ancestry::flush_generation_tables();
    let foreign = std::fs::read(table_file(&other)).expect("the other table is saved");
    let mut flipped = written.clone();
    flipped[written.len() / 2] ^= 0x01;
    let bad_files = [
        ("a flipped bit", flipped),
        ("a cut file", written[..written.len() - 30].to_vec()),
        ("another repository's file", foreign),
        ("garbage", b"not a table".to_vec()),
        ("an empty file", Vec::new()),
    ];
    for (what, bytes) in bad_files {
        std::fs::write(&file, bytes).expect("writes");
        ancestry::forget_generation_tables();
        assert_eq!(our_counts(&fixture, "a", "b"), (expected, commits), "{what}: ignored, the history numbered again");
        ancestry::flush_generation_tables();
        assert_eq!(std::fs::read(&file).expect("rewritten"), written, "{what}: rewritten as it was");
        ancestry::forget_generation_tables();
        assert_eq!(our_counts(&fixture, "a", "b"), (expected, 0), "{what}: the rewritten table loads");
    }
    assert_eq!(fixture.git(&["status", "--porcelain"]), "", "nothing was written to the repository");
    ancestry::keep_generation_tables_in(None);
}

/// A replace ref that gives `c` (a root) the parent `x`: with the numbers of the history before it (`c` numbered 1,
/// below `x`, and the oldest), the walk would stop before popping `c` with `x`'s chain counted as `a`'s alone. The table starts again in memory when the
/// replacement appears, and a saved table of the history before it is not loaded by a new process.
#[test]
fn a_change_of_replace_refs_starts_the_table_again_in_memory_and_on_disk() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let saved = tempfile::tempdir().expect("tempdir");
    save_in(saved.path());
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let (x, c) = diamond(&fixture, |_| Vec::new());
    let replacement = commit_tree(&fixture, &[&x], "c", at(-YEAR));
    let plain = git_counts(&fixture, "a", "b");
    fixture.git(&["replace", &c, &replacement]);
    let replaced = git_counts(&fixture, "a", "b");
    assert_eq!(replaced, (1, 1), "with the replacement b reaches x's chain");
    assert_ne!(plain, replaced);
    fixture.git(&["replace", "-d", &c]);

    ancestry::forget_generation_tables();
    assert_eq!(our_counts(&fixture, "a", "b").0, plain, "before the replacement");
    ancestry::flush_generation_tables();
    fixture.git(&["replace", &c, &replacement]);
    let (counts, numbered) = our_counts(&fixture, "a", "b");
    assert_eq!(counts, replaced, "in memory: the replacement starts the table again");
    assert!(numbered > 0, "numbered again");

    // On disk: the file holds the history without the replacement; a new process must not load it.
    fixture.git(&["replace", "-d", &c]);
    ancestry::forget_generation_tables();
    assert_eq!(our_counts(&fixture, "a", "b").0, plain, "the replacement removed");
    ancestry::flush_generation_tables();
    fixture.git(&["replace", &c, &replacement]);
    ancestry::forget_generation_tables();
    let (counts, numbered) = our_counts(&fixture, "a", "b");
    assert_eq!(counts, replaced, "a new process: the saved table of the other history is not used");
    assert!(numbered > 0, "numbered again");
    ancestry::flush_generation_tables();
    ancestry::forget_generation_tables();
    assert_eq!(our_counts(&fixture, "a", "b"), (replaced, 0), "the table of the replaced history is saved");
    ancestry::keep_generation_tables_in(None);
}

/// `.git/shallow` naming `c` (whose recorded parent is `x`) cuts `c` off: numbered that way `c` is 1, below `x`;
/// once the boundary is gone those numbers would let the walk stop before popping `c` (the oldest) with `x`'s chain
/// counted as `a`'s alone. The
/// table starts again in memory when `.git/shallow` changes, and a saved table of the shallow history is not loaded
/// by a new process.
#[test]
fn a_change_of_the_shallow_boundary_starts_the_table_again_in_memory_and_on_disk() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let saved = tempfile::tempdir().expect("tempdir");
    save_in(saved.path());
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let (_, c) = diamond(&fixture, |x| vec![x.to_owned()]);
    let shallow_file = fixture.path().join(".git").join("shallow");
    let complete = git_counts(&fixture, "a", "b");
    assert_eq!(complete, (1, 1), "b reaches x's chain through c");
    std::fs::write(&shallow_file, format!("{c}\n")).expect("writes .git/shallow");
    let cut = git_counts(&fixture, "a", "b");
    assert_ne!(cut, complete, "with c a boundary, x's chain is a's alone");

    ancestry::forget_generation_tables();
    assert_eq!(our_counts(&fixture, "a", "b").0, cut, "shallow");
    ancestry::flush_generation_tables();
    std::fs::remove_file(&shallow_file).expect("removes .git/shallow");
    let (counts, numbered) = our_counts(&fixture, "a", "b");
    assert_eq!(counts, complete, "in memory: the boundary's removal starts the table again");
    assert!(numbered > 0, "numbered again");

    // On disk: the file holds the shallow history's numbers; a new process on the complete one must not load it.
    std::fs::write(&shallow_file, format!("{c}\n")).expect("writes .git/shallow");
    ancestry::forget_generation_tables();
    assert_eq!(our_counts(&fixture, "a", "b").0, cut, "shallow again");
    ancestry::flush_generation_tables();
    std::fs::remove_file(&shallow_file).expect("removes .git/shallow");
    ancestry::forget_generation_tables();
    let (counts, numbered) = our_counts(&fixture, "a", "b");
    assert_eq!(counts, complete, "a new process: the saved shallow table is not used");
    assert!(numbered > 0, "numbered again");
    ancestry::keep_generation_tables_in(None);
}

/// The table keeps each commit's parents and date, so a process that loaded it counts and places branches without
/// reading a commit object (`ancestry::walk_reads`). `merged` merges `x`'s chain and the side
/// branch `s1 <- s2`, whose commits only the second parent reaches (and which a mutant that keeps only first parents,
/// in memory or on disk, loses: then `side` is not below `merged` and the counts come out too low); `s1` and `s2`
/// are dated a year back, so that date order is not generation order. Counts against the commit sets and `git
/// rev-list --left-right --count`; the branch stack against `git merge-base --is-ancestor` and the same counts.
#[test]
fn the_walks_take_parents_and_dates_from_the_table_and_a_new_process_reads_no_commit() {
    use fluxgit_engine::branch_stack::{Options as StackOptions, Relation};
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let saved = tempfile::tempdir().expect("tempdir");
    save_in(saved.path());
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let mut x = fixture.git(&["rev-parse", "main"]).trim().to_owned();
    for step in 1..=10 {
        x = commit_tree(&fixture, &[&x], &format!("x{step}"), at(3_600 + step * 60));
    }
    let s1 = commit_tree(&fixture, &["main"], "s1", at(-YEAR));
    let s2 = commit_tree(&fixture, &[&s1], "s2", at(-YEAR + 60));
    let merged = commit_tree(&fixture, &[&x, &s2], "merged", at(5_000));
    let top = commit_tree(&fixture, &[&merged], "top", at(5_060));
    for (name, id) in [("x", &x), ("side", &s1), ("merged", &merged), ("top", &top)] {
        fixture.git(&["update-ref", &format!("refs/heads/{name}"), id]);
    }
    // The first count numbers every commit (the table is saved once, when first filled).
    let pairs = [("top", "side"), ("merged", "main"), ("merged", "side"), ("side", "x")];
    let expected: Vec<_> = pairs.iter().map(|(one, other)| git_counts(&fixture, one, other)).collect();
    assert_eq!(expected[1], (13, 0), "merged has x's chain, s1, s2 and itself");
    let is_ancestor =
        |one: &str, two: &str| fixture.git_raw(&["merge-base", "--is-ancestor", one, two]).status.success();
    assert!(is_ancestor("side", "merged") && is_ancestor("x", "merged") && is_ancestor("merged", "top"));
    let commits = fixture.git(&["rev-list", "--count", "--all"]).trim().parse::<u64>().expect("a count");
    let stack = || {
        let engine = common::engine_for(&fixture);
        let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
        let options = StackOptions {
            base_candidates: vec!["main".to_owned()],
            max_related: 10,
            branch: Some("merged".to_owned()),
        };
        let report = engine.branch_stack(&repo, &options).expect("branch stack");
        let related: Vec<_> = report
            .related
            .iter()
            .map(|related| (related.name.clone(), related.relation, related.ahead, related.behind))
            .collect();
        (related, report.base.map(|base| (base.ahead, base.behind)))
    };
    let expected_stack = (
        vec![
            ("side".to_owned(), Relation::CurrentStackedOn, git_counts(&fixture, "merged", "side").0, 0),
            ("x".to_owned(), Relation::CurrentStackedOn, git_counts(&fixture, "merged", "x").0, 0),
            ("top".to_owned(), Relation::StackedOnCurrent, 0, 1),
        ],
        Some(git_counts(&fixture, "merged", "main")),
    );

    for round in ["the first process: numbered, then walked from the table", "a new process: loaded"] {
        ancestry::forget_generation_tables();
        let (numbered, reads) = (ancestry::numbered_commits(), ancestry::walk_reads());
        for ((one, other), expected) in pairs.iter().zip(&expected) {
            assert_eq!(our_counts(&fixture, one, other).0, *expected, "{round}: {one}...{other}");
        }
        assert_eq!(stack(), expected_stack, "{round}: the branch stack around merged");
        let (numbered, reads) = (ancestry::numbered_commits() - numbered, ancestry::walk_reads() - reads);
        if round.starts_with("a new") {
            assert_eq!((numbered, reads), (0, 0), "{round}: commits numbered, commits the walks read");
        } else {
            // Before the numbering, the check for a linear history reads a few commits.
            assert_eq!(numbered, commits, "{round}: numbered");
        }
        ancestry::flush_generation_tables();
    }
    ancestry::keep_generation_tables_in(None);
}

/// A branch both ahead and behind its upstream on a linear history (two tips each a few single-parent commits above
/// a common commit) is counted without numbering the history, so a first `repo.status` does not read it; a merge
/// on one side (the control: the counter counts) makes the count number it. Fails if the shortcut takes only one
/// tip above the other.
#[test]
fn diverged_single_parent_chains_are_counted_without_numbering() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let main = fixture.git(&["rev-parse", "main"]).trim().to_owned();
    let (mut ahead, mut behind) = (main.clone(), main);
    for step in 1..=5 {
        ahead = commit_tree(&fixture, &[&ahead], &format!("ahead {step}"), at(3_600 + step * 60));
    }
    for step in 1..=3 {
        behind = commit_tree(&fixture, &[&behind], &format!("behind {step}"), at(3_600 + step * 70));
    }
    let merge = commit_tree(&fixture, &[&ahead, &behind], "merge", at(9_000));
    let above_merge = commit_tree(&fixture, &[&merge], "above the merge", at(9_100));
    for (name, id) in [("ahead", &ahead), ("behind", &behind), ("above-merge", &above_merge)] {
        fixture.git(&["update-ref", &format!("refs/heads/{name}"), id]);
    }
    ancestry::forget_generation_tables();
    let (counts, numbered) = our_counts(&fixture, "ahead", "behind");
    assert_eq!(counts, git_counts(&fixture, "ahead", "behind"));
    assert_eq!((counts, numbered), ((5, 3), 0), "counted from the two chains alone");
    let (counts, numbered) = our_counts(&fixture, "above-merge", "ahead");
    assert_eq!(counts, git_counts(&fixture, "above-merge", "ahead"));
    assert!(numbered > 0, "a merge between the tips: the history is numbered");
}
