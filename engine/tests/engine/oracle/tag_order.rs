//! `repo.refs` lists tags newest first, by the committer date of the commit each tag peels to, as `git log -1
//! --format=%ct <tag>^{commit}` gives it: an annotated tag dates from its commit, not its tagger line, tags of one
//! date follow in name order, and a tag of a tree comes last. Under a budget the cut drops the oldest tags and keeps
//! every branch, and the counts stay exact. A mutant that keeps name order, dates annotated tags by their tagger,
//! or cuts tags before remote-tracking branches, fails.

use fluxgit_fixtures::Scenario;

use crate::common::{commit_tree, engine_for, measure};

/// Tags named against their dates' order, so name order and date order differ.
const TAGS: &[(&str, i64, bool)] = &[
    ("a-oldest", 1_000, true),
    ("b-newest", 9_000, false),
    ("c-middle", 5_000, false),
    ("d-middle", 5_000, true),
    ("e-older", 2_000, false),
];

#[test]
fn tags_come_newest_first_by_their_commit_and_a_cut_drops_the_oldest() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    for (name, time, annotated) in TAGS {
        let commit = commit_tree(&fixture, &["main"], name, *time);
        match annotated {
            // The tagger line carries the fixture clock's date, newer than every commit above.
            true => fixture.git(&["tag", "-a", "-m", name, name, &commit]),
            false => fixture.git(&["tag", name, &commit]),
        };
    }
    fixture.git(&["tag", "-a", "-m", "a tree", "tree-tag", "main^{tree}"]);
    for index in 0..30 {
        fixture.git(&["branch", &format!("topic-{index:02}"), "main"]);
    }

    // git as the oracle: every tag with its commit's date, newest first, ties (and no date) in name order.
    let listed = fixture.git(&["for-each-ref", "--format=%(refname:short)", "refs/tags"]);
    let mut expected: Vec<(Option<i64>, String)> = listed
        .lines()
        .map(|tag| {
            let output = fixture.git_raw(&["log", "-1", "--format=%ct", &format!("{tag}^{{commit}}")]);
            let date = output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned());
            (date.and_then(|date| date.parse().ok()), tag.to_owned())
        })
        .collect();
    expected.sort_by(|(a, _), (b, _)| b.cmp(a));
    let expected: Vec<String> = expected.into_iter().map(|(_, tag)| tag).collect();
    assert_eq!(expected.first().map(String::as_str), Some("v1.0"), "the fixture's own tag is the newest commit");
    assert_eq!(expected.last().map(String::as_str), Some("tree-tag"), "a tag of a tree has no commit date");

    let engine = engine_for(&fixture);
    let repo = engine.resolve(crate::common::repo_path(&fixture)).expect("resolves");
    let full = engine.refs(&repo, 1_000_000, &mut measure).expect("refs");
    let names: Vec<&str> = full.data.tags.iter().map(|tag| tag.name.as_str()).collect();
    assert_eq!(names, expected, "tags newest first");
    let order: Vec<&str> = ["b-newest", "c-middle", "d-middle", "e-older", "a-oldest"].to_vec();
    let ours: Vec<&str> = names.iter().copied().filter(|name| order.contains(name)).collect();
    assert_eq!(ours, order, "annotated tags date from their commit, ties by name");

    // A budget that holds every branch but not every tag: the oldest tags go, counted exactly.
    let branches = fixture.git(&["for-each-ref", "--format=%(refname:short)", "refs/heads"]).lines().count();
    let whole = measure(&full);
    let cut = engine.refs(&repo, whole - 15, &mut measure).expect("fits a smaller budget");
    assert_eq!(cut.data.branches.len(), branches, "every branch kept: {:?}", cut.omitted);
    let shown: Vec<&str> = cut.data.tags.iter().map(|tag| tag.name.as_str()).collect();
    assert!(shown.len() < expected.len(), "the budget cuts tags");
    assert_eq!(shown, expected[..shown.len()], "the newest tags are kept");
    let omitted = serde_json::to_value(&cut.omitted).expect("serialises");
    assert_eq!(omitted["tags"], expected.len() - shown.len(), "{omitted}");
    assert!(omitted.get("branches").is_none() && omitted.get("remoteBranches").is_none(), "{omitted}");
    assert!(!cut.data.counts.implied, "counts are stated beside a cut list");
    assert_eq!((cut.data.counts.tags, cut.data.counts.branches), (expected.len(), branches), "exact counts");
}
