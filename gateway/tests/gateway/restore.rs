//! Each of the seven executed operations, through the library: approve, execute behind a restore point, check the
//! effect with git, then `restore` gives back byte-identical refs, HEAD, index and work tree. Plus conflicts and
//! revalidation.

use std::path::Path;

use fluxgit_gateway::approval;
use fluxgit_gateway::audit::Audit;
use fluxgit_gateway::executor;
use fluxgit_gateway::journal::{Journal, Status};
use serde_json::{Value, json};

use crate::support::{Sandbox, approve_lib, body, git, propose_lib, state, write};

/// Makes the work tree dirty: an unstaged change, a staged new file and an untracked file.
fn dirty(repo: &Path, staged: bool) {
    write(repo, "b.txt", "bee changed\n");
    if staged {
        write(repo, "s.txt", "staged\n");
        git(repo, &["add", "s.txt"]);
    }
    write(repo, "u.txt", "untracked\n");
}

/// Proposes, approves and executes `op` on a fresh repository prepared by `prepare`, checks the effect with
/// `check`, restores, and compares the state with the one before.
fn round_trip(op: &str, fields: Value, extra_answers: &[&str], prepare: impl Fn(&Path), check: impl Fn(&Path, &Value)) {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    prepare(&repo);
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();
    let proposal = propose_lib(&mut journal, &roots, &body(&format!("rt-{op}"), "agent", op, &repo, fields));
    let before = state(&repo);
    approve_lib(&mut journal, &roots, &proposal.id, extra_answers).unwrap_or_else(|error| panic!("{op}: {error}"));
    let approved = journal.get(&proposal.id).expect("get").expect("known");
    assert_eq!(approved.status, Status::Approved);
    assert_eq!(state(&repo), before, "{op}: approving changes nothing");
    assert!(executor::run_approved(&mut journal, &approved, &roots, &Audit::DISABLED).expect("run"));
    let done = journal.get(&proposal.id).expect("get").expect("known");
    assert_eq!(done.status, Status::Completed, "{op}: {:?} {:?}", done.status_message, done.result);
    let result = done.result.clone().expect("result");
    let after = state(&repo);
    assert_ne!(after, before, "{op} changed nothing");
    check(&repo, &result);
    let point = result["restorePointId"].as_str().expect("restorePointId");
    let snapshot_ref = format!("refs/fluxgit/restore/{point}");
    assert!(!git(&repo, &["rev-parse", snapshot_ref.as_str()]).trim().is_empty());

    approval::restore(&mut journal, &proposal.id, &Audit::DISABLED).unwrap_or_else(|error| panic!("{op}: {error}"));
    assert_eq!(state(&repo), before, "{op}: restore is not byte-identical");
    let transitions = journal.transitions_of(&proposal.id).expect("transitions");
    let acts: Vec<&str> = transitions.iter().map(|transition| transition.to.as_str()).collect();
    assert_eq!(acts, ["pending", "approved", "executing", "completed", "restored"], "{op}");
}

fn head(repo: &Path) -> String {
    git(repo, &["rev-parse", "HEAD"]).trim().to_owned()
}

#[test]
fn merge_round_trip() {
    round_trip(
        "merge",
        json!({"sourceRef": "topic", "targetRef": "main", "strategy": "merge"}),
        &[],
        |repo| dirty(repo, false),
        |repo, result| {
            assert_eq!(result["newSha"], head(repo));
            assert_eq!(
                git(repo, &["rev-list", "--parents", "-n", "1", "HEAD"]).split_whitespace().count(),
                3,
                "a merge commit"
            );
            assert!(repo.join("t.txt").exists());
        },
    );
}

#[test]
fn rebase_round_trip() {
    round_trip(
        "rebase",
        json!({"ontoRef": "main", "currentRef": "topic", "interactive": false}),
        &[],
        |repo| write(repo, "u.txt", "untracked\n"),
        |repo, result| {
            assert_eq!(result["newSha"], head(repo));
            assert_eq!(git(repo, &["symbolic-ref", "HEAD"]).trim(), "refs/heads/topic");
            assert_eq!(git(repo, &["merge-base", "main", "topic"]).trim(), git(repo, &["rev-parse", "main"]).trim());
        },
    );
}

#[test]
fn discard_round_trip() {
    round_trip(
        "discard",
        json!({"paths": ["b.txt", "s.txt", "u.txt"]}),
        &[],
        |repo| dirty(repo, true),
        |repo, _| {
            assert_eq!(git(repo, &["status", "--porcelain"]), "");
        },
    );
}

#[test]
fn hard_reset_round_trip_needs_the_branch_name() {
    round_trip(
        "reset",
        json!({"targetRef": "HEAD~1", "mode": "hard"}),
        &["main"],
        |repo| dirty(repo, true),
        |repo, result| {
            assert_eq!(result["newSha"], git(repo, &["rev-parse", "main~0"]).trim());
            assert_eq!(std::fs::read_to_string(repo.join("a.txt")).expect("a.txt"), "one\n");
        },
    );
}

#[test]
fn patch_round_trip() {
    let patch = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,3 @@\n one\n two\n+three\n";
    round_trip(
        "patch",
        json!({"patchContent": patch, "applyToIndex": true}),
        &[],
        |repo| dirty(repo, true),
        |repo, _| {
            assert_eq!(std::fs::read_to_string(repo.join("a.txt")).expect("a.txt"), "one\ntwo\nthree\n");
            assert!(git(repo, &["diff", "--cached", "--name-only"]).contains("a.txt"));
        },
    );
}

#[test]
fn branch_round_trip() {
    round_trip(
        "branch",
        json!({"name": "feature/new", "startPoint": "topic", "checkout": true}),
        &[],
        |repo| dirty(repo, true),
        |repo, result| {
            assert_eq!(result["newSha"], git(repo, &["rev-parse", "topic"]).trim());
            assert_eq!(git(repo, &["symbolic-ref", "HEAD"]).trim(), "refs/heads/feature/new");
        },
    );
}

#[test]
fn commit_round_trip() {
    round_trip(
        "commit",
        json!({"message": "feat: commit everything", "stageAll": true}),
        &[],
        |repo| dirty(repo, true),
        |repo, result| {
            assert_eq!(result["newSha"], head(repo));
            assert_eq!(git(repo, &["log", "-1", "--format=%s"]).trim(), "feat: commit everything");
            assert_eq!(git(repo, &["status", "--porcelain"]), "");
        },
    );
}

#[test]
fn commit_of_exact_paths_leaves_the_rest() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    dirty(&repo, true);
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();
    let fields = json!({"message": "only u", "paths": ["u.txt"], "stageAll": false});
    let proposal = propose_lib(&mut journal, &roots, &body("c-paths", "agent", "commit", &repo, fields));
    approve_lib(&mut journal, &roots, &proposal.id, &[]).expect("approve");
    let approved = journal.get(&proposal.id).expect("get").expect("known");
    executor::run_approved(&mut journal, &approved, &roots, &Audit::DISABLED).expect("run");
    assert_eq!(journal.get(&proposal.id).expect("get").expect("known").status, Status::Completed);
    assert_eq!(git(&repo, &["show", "--name-only", "--format=", "HEAD"]).trim(), "u.txt");
    assert_eq!(git(&repo, &["status", "--porcelain"]), " M b.txt\nA  s.txt\n");
}

#[test]
fn conflicting_merge_is_aborted_and_reported() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();
    let fields = json!({"sourceRef": "clash", "targetRef": "main", "strategy": "merge"});
    let proposal = propose_lib(&mut journal, &roots, &body("m-clash", "agent", "merge", &repo, fields));
    let card = approval::show(&mut journal, &proposal.id).expect("show");
    assert!(card.contains("CONFLICTS predicted in 1 path(s)") && card.contains("a.txt"), "{card}");
    let before = state(&repo);
    approve_lib(&mut journal, &roots, &proposal.id, &[]).expect("approve");
    let approved = journal.get(&proposal.id).expect("get").expect("known");
    executor::run_approved(&mut journal, &approved, &roots, &Audit::DISABLED).expect("run");
    let done = journal.get(&proposal.id).expect("get").expect("known");
    assert_eq!((done.status, done.status_reason.as_deref()), (Status::Failed, Some("conflicts")));
    assert_eq!(done.result.expect("result")["conflicts"], json!(["a.txt"]));
    assert!(!repo.join(".git/MERGE_HEAD").exists());
    let after = state(&repo);
    // The aborted merge rewrote the index (same entries); refs, HEAD and the work tree are as before.
    let strip_index =
        |text: &str| text.lines().filter(|line| !line.starts_with("index ")).collect::<Vec<_>>().join("\n");
    assert_eq!(strip_index(&after), strip_index(&before));
}

#[test]
fn execution_is_blocked_when_the_repository_moved_after_approval() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();
    let fields = json!({"targetRef": "HEAD~1", "mode": "soft"});
    let proposal = propose_lib(&mut journal, &roots, &body("r-moved", "agent", "reset", &repo, fields));
    approve_lib(&mut journal, &roots, &proposal.id, &[]).expect("approve");
    write(&repo, "a.txt", "moved\n");
    git(&repo, &["commit", "-q", "-am", "moved on"]);
    let moved = head(&repo);
    let approved = journal.get(&proposal.id).expect("get").expect("known");
    executor::run_approved(&mut journal, &approved, &roots, &Audit::DISABLED).expect("run");
    let done = journal.get(&proposal.id).expect("get").expect("known");
    assert_eq!((done.status, done.status_reason.as_deref()), (Status::Failed, Some("blocked_refs_moved")));
    assert_eq!(head(&repo), moved, "git never ran");
    assert!(journal.restore_point_of(&proposal.id).expect("query").is_none());

    // A card that changed between show and approve is refused too.
    let proposal =
        propose_lib(&mut journal, &roots, &body("r-card", "agent", "discard", &repo, json!({"paths": ["a.txt"]})));
    let card = approval::show(&mut journal, &proposal.id).expect("show");
    write(&repo, "a.txt", "changed after the card was shown\n");
    let mut input = std::io::Cursor::new(format!("{}\n", crate::support::code_of(&card)).into_bytes());
    let refused =
        approval::approve(&mut journal, &proposal.id, true, &mut input, &mut Vec::new(), &roots, &Audit::DISABLED);
    assert!(
        matches!(refused, Err(approval::Error::Refused(ref message)) if message.contains("changed")),
        "{refused:?}"
    );
}

#[test]
fn patch_cards_tell_whether_the_patch_applies_and_which_files_it_touches() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();
    let good = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,3 @@\n one\n two\n+three\n";
    let bad = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,3 @@\n nine\n ten\n+three\n";
    for (id, patch, expected) in [("pc-good", good, "1\t0\ta.txt"), ("pc-bad", bad, "does NOT apply")] {
        let fields = json!({"patchContent": patch, "applyToIndex": false});
        let proposal = propose_lib(&mut journal, &roots, &body(id, "agent", "patch", &repo, fields));
        let card = approval::show(&mut journal, &proposal.id).expect("show");
        assert!(card.contains(expected), "{id}: {card}");
    }
    assert_eq!(std::fs::read_to_string(repo.join("a.txt")).expect("a.txt"), "one\ntwo\n", "checking applies nothing");
}

#[test]
fn a_repository_replaced_at_the_same_path_blocks_approval() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();
    let fields = json!({"name": "x", "startPoint": "HEAD", "checkout": false});
    let proposal = propose_lib(&mut journal, &roots, &body("switched", "agent", "branch", &repo, fields));
    let card = approval::show(&mut journal, &proposal.id).expect("show");
    // Another repository with the same history, put where the first one was.
    std::fs::rename(&repo, sandbox.root.join("old")).expect("move the repository away");
    git(&sandbox.root, &["clone", "-q", "old", "repo"]);
    git(&repo, &["switch", "-q", "main"]);
    let mut input = std::io::Cursor::new(format!("{}\n", crate::support::code_of(&card)).into_bytes());
    let refused =
        approval::approve(&mut journal, &proposal.id, true, &mut input, &mut Vec::new(), &roots, &Audit::DISABLED);
    assert!(refused.is_err(), "{refused:?}");
    let done = journal.get(&proposal.id).expect("get").expect("known");
    assert_ne!(done.status, Status::Approved);
    assert!(git(&repo, &["branch", "--list", "x"]).is_empty());
}

#[test]
fn expired_proposals_cannot_be_approved() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();
    let mut proposal =
        body("late", "agent", "branch", &repo, json!({"name": "x", "startPoint": "HEAD", "checkout": false}));
    proposal["requestedAt"] =
        json!(fluxgit_gateway::time::format_ms(fluxgit_gateway::time::now_ms() - 5 * 60 * 1000 + 1500));
    propose_lib(&mut journal, &roots, &proposal);
    let card = approval::show(&mut journal, "late").expect("show");
    std::thread::sleep(std::time::Duration::from_millis(2000));
    let mut input = std::io::Cursor::new(format!("{}\n", crate::support::code_of(&card)).into_bytes());
    let refused = approval::approve(&mut journal, "late", true, &mut input, &mut Vec::new(), &roots, &Audit::DISABLED);
    assert!(matches!(refused, Err(approval::Error::State { status: "expired", .. })), "{refused:?}");
}
