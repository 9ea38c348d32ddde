//! One bad part never sinks the answer (design.md#roots): on repositories with an unreadable submodule (a name git
//! ignores as suspicious, a gitdir that is gone), a missing blob, refs that do not resolve and broken worktree
//! entries, every read tool answers, marks the bad item, and gives the rest as git does. The suspicious name never
//! makes the engine open the place it leads to.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use common::{engine_for, measure, repo_path};
use fluxgit_fixtures::{Fixture, Scenario};

const UNLIMITED: usize = 1_000_000;

/// `git status --porcelain=v1` lines (paths unquoted) for `extra` arguments.
fn porcelain(fixture: &Fixture, extra: &[&str]) -> BTreeSet<String> {
    let mut args = vec!["-c", "core.quotePath=false", "status", "--porcelain=v1"];
    args.extend_from_slice(extra);
    fixture.git(&args).lines().map(str::to_owned).collect()
}

/// Our status as porcelain v1 lines.
fn our_porcelain(report: &fluxgit_engine::status::Report) -> BTreeSet<String> {
    let letter = |status: fluxgit_engine::facets::worktree::ChangeKind| {
        serde_json::to_value(status).expect("serialises").as_str().expect("a string")[..1].to_uppercase()
    };
    let mut lines = BTreeSet::new();
    for change in &report.staged {
        lines.insert(format!("{}  {}", letter(change.status), change.path));
    }
    for change in &report.unstaged {
        lines.insert(format!(" {} {}", letter(change.status), change.path));
    }
    for path in &report.untracked {
        lines.insert(format!("?? {path}"));
    }
    lines
}

#[test]
fn broken_submodules_are_marked_and_the_rest_is_gits_answer() {
    let fixture = fluxgit_fixtures::build(Scenario::BrokenSubmodules);
    std::fs::write(fixture.path().join("README.md"), "# Superproject\n\nEdited.\n").expect("writable");
    std::fs::write(fixture.path().join("notes.txt"), "untracked\n").expect("writable");
    // git itself stops at the lost gitdir; without looking at submodules it answers.
    assert!(!fixture.git_raw(&["status", "--porcelain"]).status.success(), "git stops at libs/lost");
    let expected = porcelain(&fixture, &["--ignore-submodules=all"]);
    assert_eq!(expected, BTreeSet::from([" M README.md".to_owned(), "?? notes.txt".to_owned()]));

    let engine = engine_for(&fixture);
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
    let status = engine.status(&repo, UNLIMITED, &mut measure).expect("repo.status answers").data;
    assert_eq!(our_porcelain(&status), expected);
    let unreadable: Vec<&str> = status.unreadable.iter().map(|item| item.path.as_str()).collect();
    assert_eq!(unreadable, ["libs/evil", "libs/lost"]);
    assert!(status.unreadable[0].error.reason.contains("suspicious submodule name"), "{:?}", status.unreadable);
    assert_eq!(status.counts.unreadable, 2);

    let brief = engine.brief(&repo, &Default::default(), UNLIMITED, &mut measure).expect("repo.brief answers").data;
    assert_eq!((brief.working_tree.unstaged, brief.working_tree.untracked), (1, 1));
    assert_eq!((brief.submodules.total, brief.submodules.clean, brief.submodules.unreadable), (3, 1, 2));

    let changes = engine.worktree_changes(&repo, UNLIMITED, &mut measure).expect("worktree.changes answers").data;
    let numstat = fixture.git(&["diff", "--numstat", "--ignore-submodules=all"]);
    let ours: Vec<String> = changes
        .unstaged
        .iter()
        .map(|file| format!("{}\t{}\t{}", file.additions.unwrap_or(0), file.deletions.unwrap_or(0), file.path))
        .collect();
    assert_eq!(ours, numstat.lines().collect::<Vec<_>>());
    assert_eq!(changes.untracked, ["notes.txt"]);
    assert_eq!(changes.unreadable.len(), 2);

    let submodules = engine.submodule_status(&repo, None).expect("submodule.status answers").submodules;
    let states: Vec<(String, String)> = submodules
        .iter()
        .map(|sub| (sub.path.clone(), serde_json::to_value(sub.state).expect("serialises").to_string()))
        .collect();
    assert_eq!(
        states,
        [
            ("libs/evil".to_owned(), "\"unreadable\"".to_owned()),
            ("libs/good".to_owned(), "\"clean\"".to_owned()),
            ("libs/lost".to_owned(), "\"unreadable\"".to_owned()),
        ]
    );
    let good = &submodules[1];
    let recorded = fixture.git(&["rev-parse", "HEAD:libs/good"]);
    assert_eq!(good.recorded_sha.as_deref(), Some(recorded.trim()));
    assert_eq!(good.checked_out_sha, None, "checked out where recorded: left out");
    assert!(good.initialized);
    assert!(submodules[0].error.is_some() && submodules[2].error.is_some() && good.error.is_none());

    let worktrees = engine.worktree_list(&repo, &Default::default()).expect("worktree.list answers").worktrees;
    assert_eq!(worktrees.len(), 1);
    let refs = engine.refs(&repo, UNLIMITED, &mut measure).expect("repo.refs answers").data;
    assert_eq!(refs.branches.len(), 1);
    assert!(refs.unreadable.is_empty());
}

/// Plants FIFOs where the suspicious name `../../../x` leads (`<root>/x`): opening any of them for reading blocks,
/// so an engine that opened the path would hang there instead of answering.
fn plant_trap(root: &Path) -> Vec<std::path::PathBuf> {
    let trap = root.join("x");
    std::fs::create_dir_all(trap.join("objects")).expect("writable");
    std::fs::create_dir_all(trap.join("refs/heads")).expect("writable");
    let fifos: Vec<_> = ["HEAD", "config", "commondir", "gitdir", "index", "packed-refs", ".git"]
        .iter()
        .map(|name| trap.join(name))
        .collect();
    for fifo in &fifos {
        let status = std::process::Command::new("mkfifo").arg(fifo).status().expect("mkfifo runs");
        assert!(status.success(), "mkfifo {}", fifo.display());
    }
    fifos
}

#[test]
fn the_suspicious_name_never_leads_outside_the_git_dir() {
    let fixture = fluxgit_fixtures::build(Scenario::BrokenSubmodules);
    let fifos = plant_trap(fixture.root());
    let path = repo_path(&fixture).to_owned();
    let engine = engine_for(&fixture);
    let (sender, receiver) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let repo = engine.resolve(&path).expect("resolves");
        let mut answered = Vec::new();
        let mut note = |tool: &str, ok: bool| answered.push((tool.to_owned(), ok));
        note("repo.brief", engine.brief(&repo, &Default::default(), UNLIMITED, &mut measure).is_ok());
        note("repo.status", engine.status(&repo, UNLIMITED, &mut measure).is_ok());
        note("worktree.changes", engine.worktree_changes(&repo, UNLIMITED, &mut measure).is_ok());
        note("submodule.status", engine.submodule_status(&repo, None).is_ok());
        note("repo.refs", engine.refs(&repo, UNLIMITED, &mut measure).is_ok());
        note("worktree.list", engine.worktree_list(&repo, &Default::default()).is_ok());
        sender.send(answered).expect("the test waits");
    });
    let answered = receiver.recv_timeout(Duration::from_secs(120));
    if answered.is_err() {
        // Release a reader blocked on a FIFO so the thread can end, then fail.
        for fifo in &fifos {
            let _ = std::fs::OpenOptions::new().write(true).open(fifo);
        }
        panic!("the engine opened a file at <root>/x, where the suspicious submodule name leads");
    }
    let answered = answered.expect("checked above");
    assert!(answered.iter().all(|(_, ok)| *ok), "{answered:?}");
    worker.join().expect("the worker ends");
}

#[test]
fn a_missing_blob_bad_refs_and_broken_worktrees_are_marked() {
    let fixture = fluxgit_fixtures::build(Scenario::Damaged);
    let engine = engine_for(&fixture);
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves");

    let status = engine.status(&repo, UNLIMITED, &mut measure).expect("repo.status answers").data;
    assert_eq!(our_porcelain(&status), porcelain(&fixture, &[]));
    let brief = engine.brief(&repo, &Default::default(), UNLIMITED, &mut measure).expect("repo.brief answers").data;
    assert_eq!(brief.working_tree.unstaged, 2);

    let changes = engine.worktree_changes(&repo, UNLIMITED, &mut measure).expect("worktree.changes answers").data;
    let paths: Vec<&str> = changes.unstaged.iter().map(|file| file.path.as_str()).collect();
    assert_eq!(paths, ["README.md", "src/util.c"]);
    let readme = &changes.unstaged[0];
    let numstat = fixture.git(&["diff", "--numstat", "--", "README.md"]);
    assert_eq!(
        format!("{}\t{}\tREADME.md", readme.additions.expect("counted"), readme.deletions.expect("counted")),
        numstat.trim()
    );
    let util = &changes.unstaged[1];
    assert!(util.error.is_some() && util.additions.is_none(), "{util:?}");
    // The cause is named in words, not dumped (`Message { message: ..., class: NotFound }`).
    let reason = &util.error.as_ref().expect("marked").reason;
    assert!(reason.contains("could not be found") && !reason.contains('{'), "{reason}");
    assert!(!fixture.git_raw(&["diff", "--numstat", "--", "src/util.c"]).status.success(), "git stops there too");

    let refs = engine.refs(&repo, UNLIMITED, &mut measure).expect("repo.refs answers").data;
    let ours: Vec<String> = refs.branches.iter().map(|branch| branch.name.clone()).collect();
    let git_branches = fixture.git(&["for-each-ref", "--format=%(refname:short)", "refs/heads"]);
    assert_eq!(ours, git_branches.lines().collect::<Vec<_>>());
    let broken = &refs.branches[0];
    assert!(broken.name == "broken" && broken.error.is_some() && broken.upstream.is_none(), "{broken:?}");
    assert!(refs.branches[1..].iter().all(|branch| branch.error.is_none()));
    let bad: Vec<&str> = refs.unreadable.iter().map(|item| item.path.as_str()).collect();
    assert_eq!(bad, ["refs/heads/garbled"]);
    // Reasons are sentences on one line, not a debug dump of gix's error fields (`Message { ..., class: ... }`).
    let broken_id = fixture.git(&["rev-parse", "refs/heads/broken"]);
    let reason = &broken.error.as_ref().expect("marked").reason;
    assert!(reason.starts_with("Could not peel reference") && reason.contains(broken_id.trim()), "{reason}");
    let reason = &refs.unreadable[0].error.reason;
    assert!(reason.starts_with("The reference at \"refs/heads/garbled\" could not be decoded"), "{reason}");
    assert!(!reason.contains('{') && !reason.contains('\n'), "{reason}");

    let worktrees = engine.worktree_list(&repo, &Default::default()).expect("worktree.list answers").worktrees;
    let listed = fixture.git(&["worktree", "list", "--porcelain"]);
    let git_paths: Vec<&str> = listed.lines().filter_map(|line| line.strip_prefix("worktree ")).collect();
    let our_paths: Vec<&str> = worktrees.iter().map(|worktree| worktree.path.as_str()).collect();
    assert_eq!(our_paths, git_paths);
    let broken = worktrees.iter().find(|worktree| worktree.path.ends_with("wt-broken")).expect("listed");
    assert!(broken.error.is_some() && broken.head_sha.is_none(), "{broken:?}");
    let gone = worktrees.iter().find(|worktree| worktree.path.ends_with("wt-gone")).expect("listed");
    assert!(gone.prunable && gone.error.is_none(), "{gone:?}");

    assert!(engine.submodule_status(&repo, None).expect("submodule.status answers").submodules.is_empty());
}

/// git reads an index without checking its trailing checksum (only `git fsck` checks it: `read-cache.c`,
/// `verify_index_checksum`), so an index whose checksum is wrong but whose entries are whole still gives a status;
/// the engine reads it the same way (it does not hash the index: on 100,000 entries that was 230M instructions).
/// Fails when the repository is opened without `index.skipHash` (gix then refuses the index).
#[test]
fn an_index_with_a_wrong_checksum_is_read_as_git_reads_it() {
    let fixture = fluxgit_fixtures::build(Scenario::Dirty);
    let index_path = fixture.path().join(".git/index");
    let mut index = std::fs::read(&index_path).expect("the index");
    let last = index.len() - 1;
    index[last] ^= 0xff;
    std::fs::write(&index_path, &index).expect("writable");
    assert!(!fixture.git_raw(&["fsck", "--no-dangling"]).status.success(), "fsck sees the bad checksum");
    // Without optional locks git does not write back a refreshed index (which would mend the checksum).
    // `-z`: paths as they are (no quoting of spaces).
    let expected: BTreeSet<String> = fixture
        .git(&["--no-optional-locks", "status", "--porcelain=v1", "-z"])
        .split('\0')
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    assert!(expected.contains("M  src/main.c"), "git still reads the index: {expected:?}");
    assert_eq!(std::fs::read(&index_path).expect("the index"), index, "git left the index as it was");

    let engine = engine_for(&fixture);
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
    let status = engine.status(&repo, UNLIMITED, &mut measure).expect("repo.status answers").data;
    assert_eq!(our_porcelain(&status), expected);
    assert_eq!(std::fs::read(&index_path).expect("the index"), index, "the index is left as it was");
}
