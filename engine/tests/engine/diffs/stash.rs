//! Issue 22: `commit.details` on a stash (`stash@{n}` or its sha) gives its parts apart: the work tree against its
//! base as `git stash show` lists it, the index part as `git diff stash^1 stash^2`, the untracked part as
//! `git show stash^3`; a merge that is no stash stays a merge.

use fluxgit_engine::Implied;
use fluxgit_engine::diff::commit::{Details, STASH_NOTE};
use fluxgit_fixtures::{Fixture, Scenario};

use crate::diffs::support::{UNLIMITED, git_numstat_all, measure, numstat_of, read};

fn details(fixture: &Fixture, commit: &str, max_tokens: usize) -> fluxgit_engine::Budgeted<Details> {
    read(fixture, |engine, repo| engine.commit_details(repo, commit, max_tokens, &mut measure)).expect("details")
}

#[test]
fn a_stash_is_read_as_its_parts() {
    let fixture = fluxgit_fixtures::build(Scenario::Stashes);
    let mut untracked_seen = 0;
    for n in 0..3 {
        let name = format!("stash@{{{n}}}");
        let sha = fixture.git(&["rev-parse", &name]).trim().to_owned();
        for commit in [name.as_str(), sha.as_str(), &sha[..10]] {
            let details = details(&fixture, commit, UNLIMITED).data;
            let label = format!("{name} as {commit}");
            let stash = details.stash.as_ref().unwrap_or_else(|| panic!("{label}: a stash"));
            assert_eq!(stash.name, name, "{label}");
            assert_eq!(details.note.as_deref(), Some(STASH_NOTE), "{label}");
            let show = git_numstat_all(&fixture, &["stash", "show", "--numstat", "-z", "-M", &name]);
            assert_eq!(numstat_of(&details.files), show, "{label}: git stash show");
            let index_part = format!("{name}^2");
            let base = format!("{name}^1");
            let index = git_numstat_all(&fixture, &["diff", "--numstat", "-z", "-M", &base, &index_part]);
            assert_eq!(numstat_of(&stash.index.files), index, "{label}: git diff stash^1 stash^2");
            assert_eq!(stash.index.totals.files, stash.index.files.len(), "{label}");
            let third = format!("{name}^3");
            let has_untracked = fixture.git_raw(&["rev-parse", "--verify", "-q", &third]).status.success();
            match &stash.untracked {
                Some(part) => {
                    assert!(has_untracked, "{label}: no third parent");
                    let git = git_numstat_all(&fixture, &["show", "--numstat", "-z", "--format=", &third]);
                    assert_eq!(numstat_of(&part.files), git, "{label}: git show stash^3");
                    untracked_seen += 1;
                }
                None => assert!(!has_untracked, "{label}: the untracked part is missing"),
            }
        }
    }
    // stash@{0} saved `scratch.txt` untracked; stash@{1} had `src/util.c` staged and `src/main.c` not.
    assert_eq!(untracked_seen, 3);
    let staged = details(&fixture, "stash@{1}", UNLIMITED).data;
    let stash = staged.stash.expect("a stash");
    let index: Vec<&str> = stash.index.files.iter().map(|file| file.path.as_str()).collect();
    assert_eq!(index, ["src/util.c"]);
    let all: Vec<&str> = staged.files.iter().map(|file| file.path.as_str()).collect();
    assert_eq!(all, ["src/main.c", "src/util.c"]);
}

#[test]
fn stash_lists_are_cut_after_the_files_and_counted() {
    let fixture = fluxgit_fixtures::build(Scenario::Stashes);
    let full = details(&fixture, "stash@{1}", UNLIMITED);
    // Every list cut: the totals, left out of the whole answer (the lists' sums), are stated again.
    let floor = measure(&fluxgit_engine::Budgeted {
        data: Details {
            totals: Implied::stated(*full.data.totals),
            files: Vec::new(),
            body: String::new(),
            stash: full.data.stash.clone().map(|mut stash| {
                stash.index.files.clear();
                stash.index.totals = Implied::stated(*stash.index.totals);
                stash
            }),
            ..full.data.clone()
        },
        omitted: fluxgit_engine::budget::Omitted(vec![("files", 2), ("stashIndexFiles", 1)]),
    });
    let cut = details(&fixture, "stash@{1}", floor + 30);
    assert!(measure(&cut) <= floor + 30);
    let shown = cut.data.files.len() + cut.data.stash.as_ref().map_or(0, |stash| stash.index.files.len());
    let omitted: usize = cut.omitted.0.iter().map(|(_, count)| count).sum();
    assert_eq!(shown + omitted, 3, "{:?}", cut.omitted);
    assert_eq!(cut.data.stash.as_ref().map(|stash| stash.index.totals.files), Some(1), "totals stay exact");
}

#[test]
fn a_merge_that_is_no_stash_stays_a_merge() {
    let fixture = fluxgit_fixtures::build(Scenario::RewrittenHistory);
    let merge = details(&fixture, "main", UNLIMITED).data;
    assert_eq!(merge.parents.len(), 2);
    assert!(merge.stash.is_none());
    assert_eq!(merge.note.as_deref(), Some("a merge: files are diffed against its first parent only"));
}
