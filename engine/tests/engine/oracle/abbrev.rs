//! Abbreviated object ids against git's own: `git ls-tree --abbrev` of a tree naming every object of the repository
//! (and ids of no object), `git log --all --format=%H %h` and `git for-each-ref --format=%(objectname:short)`,
//! with `core.abbrev` unset (`auto`), 4, 7 and 10.
//!
//! The objects are crafted so that prefixes are shared: blobs whose ids agree in their first 7 or 8 hex digits
//! (found by hashing candidate contents), one of each pair in a pack and the other loose or in another pack, and,
//! for `auto` past 7 digits, more than 16,384 packed objects. A mutant that looks only at the packs, only at the
//! loose objects, at one pack, at one neighbour in a pack, or that counts the objects as git does not, fails.

use std::collections::HashMap;
use std::io::Write as _;
use std::process::Stdio;

use fluxgit_engine::facets::commits::Abbrev;
use fluxgit_fixtures::{Fixture, Scenario};
use gix::ObjectId;

/// The id git gives a blob of `content`.
fn blob_id(content: &str) -> ObjectId {
    gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, content.as_bytes()).expect("hashes")
}

/// Contents of candidate blobs, grouped so that each group's ids share their first `digits` hex digits; the first
/// `groups` groups in candidate order (deterministic).
fn colliding(prefix: &str, candidates: usize, digits: usize, groups: usize) -> Vec<Vec<String>> {
    let mut by_prefix: HashMap<String, Vec<String>> = HashMap::new();
    let mut order = Vec::new();
    for n in 0..candidates {
        let content = format!("{prefix} {n}\n");
        let key = blob_id(&content).to_string()[..digits].to_owned();
        let group = by_prefix.entry(key.clone()).or_default();
        group.push(content);
        if group.len() == 2 {
            order.push(key);
        }
    }
    order.into_iter().take(groups).filter_map(|key| by_prefix.remove(&key)).collect()
}

/// Writes `contents` into one new pack with `git fast-import`.
fn pack(fixture: &Fixture, contents: &[String]) {
    let mut import = fixture.git_command(fixture.path());
    let mut child = import
        .args(["-c", "fastimport.unpackLimit=0", "fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("fast-import");
    let stream: String = contents.iter().map(|data| format!("blob\ndata {}\n{data}\n", data.len())).collect();
    child.stdin.take().expect("stdin").write_all(stream.as_bytes()).expect("feeds fast-import");
    assert!(child.wait().expect("fast-import ends").success());
}

/// Writes `contents` as loose objects with `git hash-object -w`.
fn loose(fixture: &Fixture, contents: &[String]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let paths: Vec<String> = contents
        .iter()
        .enumerate()
        .map(|(n, data)| {
            let path = dir.path().join(n.to_string());
            std::fs::write(&path, data).expect("writes");
            path.display().to_string()
        })
        .collect();
    let mut hash = fixture.git_command(fixture.path());
    let mut child = hash
        .args(["hash-object", "-w", "--stdin-paths"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("hash-object");
    child.stdin.take().expect("stdin").write_all((paths.join("\n") + "\n").as_bytes()).expect("feeds hash-object");
    assert!(child.wait().expect("hash-object ends").success());
}

/// git's abbreviation of every object of the repository and of `absent` ids (through a tree naming them all,
/// written with `git mktree --missing`), and of every commit through `git log`: pairs (full, abbreviated).
fn git_abbreviations(fixture: &Fixture, absent: &[ObjectId]) -> Vec<(String, String)> {
    let listing = fixture.git(&["cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)"]);
    // Tree entries of each object's type (a tag cannot be one: refs name those, below).
    let mut ids = Vec::new();
    let mut entries = String::new();
    let typed = listing.lines().filter_map(|line| line.split_once(' '));
    let absent = absent.iter().map(|id| (id.to_string(), "blob".to_owned()));
    for (id, kind) in typed.map(|(id, kind)| (id.to_owned(), kind.to_owned())).chain(absent) {
        let mode = match kind.as_str() {
            "blob" => "100644",
            "tree" => "040000",
            "commit" => "160000",
            _ => continue,
        };
        entries.push_str(&format!("{mode} {kind} {id}\t{}\n", ids.len()));
        ids.push(id);
    }
    let mut mktree = fixture.git_command(fixture.path());
    let mut child =
        mktree.args(["mktree", "--missing"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("mktree");
    child.stdin.take().expect("stdin").write_all(entries.as_bytes()).expect("feeds mktree");
    let output = child.wait_with_output().expect("mktree ends");
    assert!(output.status.success());
    let tree = String::from_utf8(output.stdout).expect("utf-8").trim().to_owned();
    let abbreviated = fixture.git(&["ls-tree", "--abbrev", &tree]);
    let mut by_name: HashMap<usize, String> = HashMap::new();
    for line in abbreviated.lines() {
        let (meta, name) = line.split_once('\t').expect("ls-tree line");
        let short = meta.rsplit(' ').next().expect("abbreviated id");
        by_name.insert(name.parse().expect("entry number"), short.to_owned());
    }
    let mut pairs: Vec<(String, String)> =
        ids.into_iter().enumerate().map(|(n, id)| (id, by_name.remove(&n).expect("listed"))).collect();
    let log = fixture.git(&["log", "--all", "--format=%H %h"]);
    let refs = fixture.git(&["for-each-ref", "--format=%(objectname) %(objectname:short)"]);
    pairs.extend(log.lines().chain(refs.lines()).map(|line| {
        let (full, short) = line.split_once(' ').expect("log line");
        (full.to_owned(), short.to_owned())
    }));
    pairs
}

/// Checks every pair against [`Abbrev`] and returns how many of git's abbreviations are longer than `least`.
fn check(fixture: &Fixture, absent: &[ObjectId], least: usize, round: &str) -> usize {
    let pairs = git_abbreviations(fixture, absent);
    let repo = gix::open(fixture.path()).expect("opens");
    let abbrev = Abbrev::new(&repo);
    let mut longer = 0;
    for (full, short) in &pairs {
        assert!(short.len() >= least, "{round}: git abbreviates {full} to {short}");
        assert_eq!(&abbrev.hex(full), short, "{round}: {full}");
        longer += usize::from(short.len() > least);
    }
    longer
}

#[test]
fn abbreviations_are_git_s() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    // Pairs sharing 7 digits (one packed, the other loose or in a second pack) and groups sharing 8.
    let seven = colliding("seven", 100_000, 7, 6);
    let eight = colliding("eight", 400_000, 8, 4);
    assert_eq!((seven.len(), eight.len()), (6, 4), "enough shared prefixes among the candidates");
    pack(&fixture, &seven.iter().chain(&eight).map(|group| group[0].clone()).collect::<Vec<_>>());
    loose(&fixture, &seven[..3].iter().chain(&eight[..2]).map(|group| group[1].clone()).collect::<Vec<_>>());
    pack(&fixture, &seven[3..].iter().chain(&eight[2..]).map(|group| group[1].clone()).collect::<Vec<_>>());
    // Ids of no object: one beside each crafted blob (the same first 38 digits: git lets a neighbour sharing 32 or
    // more digits lengthen nothing), and one alone.
    let absent: Vec<ObjectId> = seven
        .iter()
        .chain(&eight)
        .map(|group| {
            let mut id = blob_id(&group[0]);
            id.as_mut_slice()[19] ^= 0x01;
            id
        })
        .chain([ObjectId::from_hex(b"0123456789abcdef0123456789abcdef01234567").expect("hex")])
        .collect();
    assert!(fixture.git_dir().join("objects/pack").read_dir().expect("packs").count() >= 4, "two packs or more");

    // Few objects: `auto` is 7 digits; the crafted pairs need 8, the groups of 8 need 9 or more.
    assert!(check(&fixture, &absent, 7, "auto, few objects") >= 20);
    for (value, least) in [("4", 4), ("7", 7), ("10", 10)] {
        fixture.git(&["config", "core.abbrev", value]);
        let longer = check(&fixture, &absent, least, &format!("core.abbrev={value}"));
        assert!(value == "10" || longer > 0, "core.abbrev={value}: some prefixes are shared");
    }
    fixture.git(&["config", "--unset", "core.abbrev"]);

    // More than 2^14 packed objects: `auto` is 8 digits; the groups sharing 8 still need more.
    pack(&fixture, &(0..17_000).map(|n| format!("filler {n}\n")).collect::<Vec<_>>());
    assert!(check(&fixture, &absent, 8, "auto, 17,000 objects") >= 8);
    // The same objects all in one pack (unreachable ones kept, loose ones packed).
    fixture.git(&["repack", "-adkq"]);
    check(&fixture, &absent, 8, "repacked");
}
