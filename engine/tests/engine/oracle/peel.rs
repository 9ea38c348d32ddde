//! Ref listings peeled as git peels them (`git rev-parse <ref>^{}`), from loose refs and from `packed-refs` (with
//! its `^` peeled lines): lightweight and annotated tags, tags of a tag, of a tree and of a blob, a branch and a
//! remote-tracking branch (an upstream) at a tag object, a loose ref shadowing a packed one; and refs naming an
//! object that does not exist (directly, through a tag, loose and packed), which git cannot peel and the engine lists
//! with the error gix's own `peel_to_id` gives; and each ref peeled to a commit (`<ref>^{commit}`), none for tags of
//! a tree or a blob. A mutant that takes a tag's id for its target, follows one tag only, ignores the peeled lines,
//! takes a missing object for a commit, answers it with another error, or takes any object for a commit, fails.

use std::collections::BTreeMap;

use fluxgit_engine::facets::refs;
use fluxgit_engine::{ItemError, Unreadable};
use fluxgit_fixtures::{Fixture, Scenario};

/// An object id no object of the fixture has.
const MISSING: &str = "0123456789abcdef0123456789abcdef01234567";

/// The refs of every kind above; returns the names of those that name a missing object.
fn plant_refs(fixture: &Fixture) -> Vec<&'static str> {
    let git = |args: &[&str]| fixture.git(args).trim().to_owned();
    // `git update-ref` refuses a branch at a tag object: written by hand.
    let write_ref = |name: &str, id: &str| {
        std::fs::write(fixture.git_dir().join(name), format!("{id}\n")).expect("writable");
    };
    git(&["tag", "light", "HEAD~1"]);
    git(&["-c", "advice.nestedTag=false", "tag", "-a", "-m", "outer", "outer", "v1.0"]);
    git(&["tag", "-a", "-m", "tree", "tree-tag", "HEAD^{tree}"]);
    git(&["tag", "blob-tag", "HEAD:README.md"]);
    write_ref("refs/heads/at-tag", &git(&["rev-parse", "v1.0"]));
    git(&["update-ref", "refs/remotes/origin/at-tag", &git(&["rev-parse", "outer"])]);
    git(&["config", "branch.at-tag.remote", "origin"]);
    git(&["config", "branch.at-tag.merge", "refs/heads/at-tag"]);
    git(&["pack-refs", "--all"]);
    // Loose from here on; `light` now shadows its packed entry.
    git(&["tag", "-a", "-m", "loose", "loose-annotated", "HEAD~2"]);
    git(&["-c", "advice.nestedTag=false", "tag", "-a", "-m", "loose outer", "loose-outer", "outer"]);
    git(&["tag", "loose-light", "HEAD"]);
    write_ref("refs/heads/loose-at-tag", &git(&["rev-parse", "loose-outer"]));
    git(&["update-ref", "refs/tags/light", "HEAD"]);
    let tag = format!("object {MISSING}\ntype commit\ntag dangling\ntagger T <t@example.com> 0 +0000\n\ndangling\n");
    std::fs::write(fixture.root().join("dangling-tag"), tag).expect("writable");
    let dangling = git(&["hash-object", "-t", "tag", "-w", "--literally", "../dangling-tag"]);
    write_ref("refs/tags/dangling", &dangling);
    write_ref("refs/heads/broken", MISSING);
    write_ref("refs/tags/gone", MISSING);
    let git_dir = fixture.git_dir();
    // Last in name order, so `packed-refs` stays sorted.
    let mut packed = std::fs::read_to_string(git_dir.join("packed-refs")).expect("packed by git");
    assert!(packed.starts_with("# pack-refs with: peeled fully-peeled sorted"), "{packed}");
    packed.push_str(&format!("{MISSING} refs/tags/zz-missing\n"));
    std::fs::write(git_dir.join("packed-refs"), packed).expect("writable");
    vec!["refs/heads/broken", "refs/tags/dangling", "refs/tags/gone", "refs/tags/zz-missing"]
}

/// What git says of each ref it lists: full name -> (peeled id, annotated) for those it can peel, and the names of
/// those it cannot (`git rev-parse <ref>^{}` fails: they name no object).
fn git_refs(fixture: &Fixture) -> (BTreeMap<String, (String, bool)>, Vec<String>) {
    let listed = fixture.git(&["for-each-ref", "--format=%(refname) %(symref)"]);
    let (mut refs, mut unpeelable) = (BTreeMap::new(), Vec::new());
    for (name, symref) in listed.lines().filter_map(|line| line.split_once(' ')) {
        if !symref.is_empty() || name == "refs/stash" {
            continue;
        }
        let peeled = fixture.git_raw(&["rev-parse", "--verify", "-q", &format!("{name}^{{}}")]);
        if !peeled.status.success() {
            unpeelable.push(name.to_owned());
            continue;
        }
        let peeled = String::from_utf8(peeled.stdout).expect("hex").trim().to_owned();
        let kind = fixture.git(&["cat-file", "-t", name]);
        refs.insert(name.to_owned(), (peeled, kind.trim() == "tag"));
    }
    (refs, unpeelable)
}

#[test]
fn refs_peel_as_git_does_loose_and_packed_and_missing_objects_keep_their_error() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let missing = plant_refs(&fixture);
    let repo = gix::open(fixture.path()).expect("opens");
    let mut unreadable = Vec::new();
    let branches = refs::branches(&repo, &mut unreadable).expect("branches");
    let remote_branches = refs::remote_branches(&repo, &mut unreadable).expect("remote branches");
    let tags = refs::tags(&repo, &mut unreadable).expect("tags");

    let mut ours = BTreeMap::new();
    for branch in branches.iter().filter(|branch| branch.error.is_none()) {
        ours.insert(format!("refs/heads/{}", branch.name), (branch.sha.clone(), false));
    }
    for branch in &remote_branches {
        ours.insert(format!("refs/remotes/{}", branch.name), (branch.sha.clone(), false));
    }
    for tag in &tags {
        ours.insert(format!("refs/tags/{}", tag.name), (tag.sha.clone(), tag.annotated));
    }
    let (mut expected, unpeelable) = git_refs(&fixture);
    assert_eq!(unpeelable, missing);
    for (name, (_, annotated)) in &mut expected {
        // `annotated` is said of tags only.
        *annotated &= name.starts_with("refs/tags/");
    }
    assert_eq!(ours, expected);

    // The upstream at a tag object counts from the commit it peels to, as git does.
    let at_tag = branches.iter().find(|branch| branch.name == "at-tag").expect("listed");
    let upstream = at_tag.upstream.as_ref().expect("configured");
    let counts =
        fixture.git(&["rev-list", "--left-right", "--count", "refs/remotes/origin/at-tag...refs/heads/at-tag"]);
    assert_eq!(format!("{}\t{}", upstream.behind, upstream.ahead), counts.trim());

    // Missing objects: listed here with gix's own peel error.
    let peel_error = |name: &str| {
        let err = repo.find_reference(name).expect("parses").peel_to_id().expect_err("names no object");
        ItemError::from_error(err)
    };
    let broken: Vec<(&str, &ItemError)> =
        branches.iter().filter_map(|branch| Some((branch.name.as_str(), branch.error.as_ref()?))).collect();
    assert_eq!(broken, [("broken", &peel_error(missing[0]))]);
    assert_eq!(branches.iter().find(|branch| branch.name == "broken").expect("listed").sha, MISSING);
    let expected: Vec<Unreadable> =
        missing[1..].iter().map(|name| Unreadable { path: (*name).to_owned(), error: peel_error(name) }).collect();
    assert_eq!(unreadable, expected);
    assert!(unreadable.iter().all(|item| item.error.reason.contains("could not be found")), "{unreadable:?}");
}

#[test]
fn each_ref_peels_to_what_git_names_with_and_without_a_commit_wanted() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    plant_refs(&fixture);
    let repo = gix::open(fixture.path()).expect("opens");
    let listed = fixture.git(&["for-each-ref", "--format=%(refname)"]);
    let git_peel = |spec: String| {
        let output = fixture.git_raw(&["rev-parse", "--verify", "-q", &spec]);
        output.status.success().then(|| String::from_utf8(output.stdout).expect("hex").trim().to_owned())
    };
    for name in listed.lines() {
        let find = || repo.find_reference(name).expect("parses");
        let ours = refs::peel_to_id(&mut find());
        assert_eq!(ours.as_ref().ok().map(ToString::to_string), git_peel(format!("{name}^{{}}")), "{name}");
        let gix = find().peel_to_id().map(|id| id.detach());
        assert_eq!(ours.map_err(ItemError::from_error), gix.map_err(ItemError::from_error), "{name}");
        let commit = refs::peel_to_commit_id(&mut find());
        assert_eq!(commit.map(|id| id.to_string()), git_peel(format!("{name}^{{commit}}")), "{name}");
        assert_eq!(commit, find().peel_to_commit().ok().map(|commit| commit.id), "{name}: as gix peels to a commit");
    }
}
