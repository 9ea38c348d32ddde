//! worktreeRemove (issue 54) through the library: refused on receipt when the path names no removable worktree
//! (main, repoPath itself, unregistered, outside the allowed roots), refused on the card and at execution in every
//! case that would lose work (git's own `git worktree remove` is run after each refusal it would also make), and
//! completed otherwise: the directory gone, `git worktree list` without it, the branch kept, and `restore` adds it
//! back.

use std::path::{Path, PathBuf};

use fluxgit_gateway::approval;
use fluxgit_gateway::journal::{Journal, Proposal, Status};
use fluxgit_gateway::proposal;
use serde_json::{Value, json};

use crate::operations::{approve_and_run, restore};
use crate::support::{Sandbox, body, git, propose_lib, write};

/// `repo` with a linked worktree for `branch` (created at `start`) at `<root>/repo.worktrees/<name>`.
fn add_worktree(sandbox: &Sandbox, repo: &Path, name: &str, branch: Option<&str>, start: &str) -> PathBuf {
    let path = sandbox.root.join("repo.worktrees").join(name);
    let text = path.to_str().expect("utf-8");
    match branch {
        Some(branch) => git(repo, &["worktree", "add", "-q", "-b", branch, text, start]),
        None => git(repo, &["worktree", "add", "-q", "--detach", text, start]),
    };
    path
}

fn fields(path: &str) -> Value {
    json!({ "path": path })
}

/// Proposes removing `path` (as given) from `repo`; the proposal as it ended after approval and execution.
fn run(sandbox: &Sandbox, journal: &mut Journal, repo: &Path, id: &str, path: &str) -> (Proposal, String) {
    let roots = sandbox.roots();
    let proposal = propose_lib(journal, &roots, &body(id, "agent", "worktreeRemove", repo, fields(path)));
    let card = approval::show(journal, id).expect("show");
    (approve_and_run(journal, &roots, &proposal, &[]), card)
}

fn listed(repo: &Path, path: &Path) -> bool {
    git(repo, &["worktree", "list", "--porcelain"]).lines().any(|line| line == format!("worktree {}", path.display()))
}

fn refused_on_receipt(sandbox: &Sandbox, repo: &Path, id: &str, path: &str) -> proposal::Invalid {
    let request = body(id, "agent", "worktreeRemove", repo, fields(path));
    proposal::check("worktreeRemove", &request, &sandbox.roots()).expect_err("refused on receipt")
}

/// Whether git's own `git worktree remove` (no `--force`) refuses `path`.
fn git_refuses(repo: &Path, path: &Path) -> bool {
    let output = std::process::Command::new("git")
        .current_dir(repo)
        .args(["worktree", "remove", "--", path.to_str().expect("utf-8")])
        .output()
        .expect("run git");
    !output.status.success()
}

#[test]
fn worktree_remove_completes_for_a_clean_worktree_keeps_its_branch_and_restore_adds_it_back() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    // feat holds topic's commits only (topic reaches them); an ignored file goes with the worktree.
    let path = add_worktree(&sandbox, &repo, "feat", Some("feat"), "topic");
    write(&path, ".gitignore", "build/\n");
    git(&path, &["add", ".gitignore"]);
    git(&path, &["commit", "-q", "-m", "ignore build"]);
    git(&repo, &["branch", "pushed", "feat"]);
    write(&path, "build/out.o", "ignored\n");
    let feat_tip = git(&repo, &["rev-parse", "feat"]);

    let (done, card) = run(&sandbox, &mut journal, &repo, "rm-feat", "../repo.worktrees/feat");
    for expected in ["Worktree to remove:", "branch feat", "KEPT", "REMOVE: nothing is lost", "Ignored files"] {
        assert!(card.contains(expected), "card lacks {expected:?}:\n{card}");
    }
    assert_eq!(done.status, Status::Completed, "{:?} {:?}", done.status_message, done.result);
    let result = done.result.expect("result");
    assert_eq!((result["branch"].clone(), result["branchKept"].clone()), (json!("feat"), json!(true)));
    assert!(!path.exists(), "the worktree's directory is gone");
    assert!(!listed(&repo, &path), "git worktree list no longer lists it");
    assert_eq!(git(&repo, &["rev-parse", "feat"]), feat_tip, "the branch is kept where it was");
    let undo: Vec<&str> = result["undo"].as_array().expect("undo").iter().filter_map(Value::as_str).collect();
    assert_eq!(undo, [format!("git worktree add {} feat", path.display())], "{result}");

    restore(&mut journal, "rm-feat");
    assert!(listed(&repo, &path), "restore adds the worktree back");
    assert_eq!(git(&path, &["symbolic-ref", "HEAD"]).trim(), "refs/heads/feat");
    assert_eq!(git(&path, &["status", "--porcelain"]), "", "clean, as it was");
    assert!(!path.join("build/out.o").exists(), "ignored files do not come back (the card says so)");

    // A detached HEAD whose commits main reaches: nothing lost either; restore adds it back detached.
    let detached = add_worktree(&sandbox, &repo, "old", None, "main~1");
    let (done, _) = run(&sandbox, &mut journal, &repo, "rm-old", detached.to_str().expect("utf-8"));
    assert_eq!(done.status, Status::Completed, "{:?} {:?}", done.status_message, done.result);
    assert!(!detached.exists() && !listed(&repo, &detached));
    restore(&mut journal, "rm-old");
    assert_eq!(git(&detached, &["rev-parse", "HEAD"]), git(&repo, &["rev-parse", "main~1"]));
}

#[test]
fn worktree_remove_is_refused_on_receipt_for_what_is_no_removable_worktree() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let linked = add_worktree(&sandbox, &repo, "feat", Some("feat"), "main");
    let refused = |repo: &Path, path: &str| refused_on_receipt(&sandbox, repo, "p", path).reason;
    assert_eq!(refused(&repo, repo.to_str().expect("utf-8")), "main_worktree");
    assert_eq!(refused(&repo, "."), "main_worktree");
    assert_eq!(refused(&linked, "."), "current_worktree");
    assert_eq!(refused(&linked, "../../repo"), "main_worktree");
    assert_eq!(refused(&repo, "../nowhere"), "not_a_worktree");
    assert_eq!(refused(&repo, "a.txt"), "not_a_worktree");
    assert_eq!(refused(&repo, "../repo.worktrees/feat\nx"), "invalid_path");

    // A registered worktree outside the allowed roots, directly or through a symlink inside them: named, not read
    // (it is dirty, yet the refusal is about where it is).
    let outside = tempfile::tempdir().expect("temp dir");
    let out_path = std::fs::canonicalize(outside.path()).expect("canonical").join("wt");
    git(&repo, &["worktree", "add", "-q", "-b", "away", out_path.to_str().expect("utf-8"), "main"]);
    write(&out_path, "dirty.txt", "x\n");
    assert_eq!(refused(&repo, out_path.to_str().expect("utf-8")), "outside_allowed_roots");
    std::os::unix::fs::symlink(&out_path, sandbox.root.join("link")).expect("symlink");
    assert_eq!(refused(&repo, "../link"), "outside_allowed_roots");
    assert!(listed(&repo, &out_path) && listed(&repo, &linked));
}

/// What a test does to a repository and its worktree after the proposal.
type Change = fn(&Path, &Path);

#[test]
fn worktree_remove_refuses_every_case_that_would_lose_work_on_the_card_and_at_execution() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();

    // Each case: a worktree made clean, proposed, then changed before approval; the run must fail with `reason`,
    // the card must name what would be lost, and git's own removal refuses where it should.
    let cases: [(&str, Change, &str, &str); 5] = [
        ("untracked", |_, wt| write(wt, "new.txt", "x\n"), "uncommitted_changes", "?? new.txt"),
        (
            "staged",
            |_, wt| {
                write(wt, "a.txt", "staged\n");
                git(wt, &["add", "a.txt"]);
            },
            "uncommitted_changes",
            "M  a.txt",
        ),
        ("unstaged", |_, wt| write(wt, "b.txt", "changed\n"), "uncommitted_changes", " M b.txt"),
        (
            "locked",
            |repo, wt| {
                git(repo, &["worktree", "lock", "--reason", "agent at work", wt.to_str().expect("utf-8")]);
            },
            "worktree_locked",
            "agent at work",
        ),
        (
            "conflict",
            |_, wt| {
                let merge = std::process::Command::new("git")
                    .current_dir(wt)
                    .args(["merge", "-q", "clash"])
                    .output()
                    .expect("run git merge");
                assert!(!merge.status.success(), "the merge stops on its conflict");
            },
            "uncommitted_changes",
            "UU a.txt",
        ),
    ];
    for (name, change, reason, shown) in cases {
        let wt = add_worktree(&sandbox, &repo, name, Some(name), "main");
        let proposal = propose_lib(
            &mut journal,
            &roots,
            &body(name, "agent", "worktreeRemove", &repo, fields(wt.to_str().expect("utf-8"))),
        );
        change(&repo, &wt);
        let card = approval::show(&mut journal, name).expect("show");
        assert!(card.contains(&format!("REFUSED at execution ({reason})")), "{name}: card:\n{card}");
        assert!(card.contains(shown), "{name}: card lacks {shown:?}:\n{card}");
        let done = approve_and_run(&mut journal, &roots, &proposal, &[]);
        assert_eq!((done.status, done.status_reason.as_deref()), (Status::Failed, Some(reason)), "{name}");
        assert!(wt.exists() && listed(&repo, &wt), "{name}: the worktree stays");
        if name == "conflict" {
            let result = done.result.expect("result");
            assert_eq!(result["operation"], "merge", "{result}");
            let reasons: Vec<&str> =
                result["blockers"].as_array().expect("blockers").iter().filter_map(|b| b["reason"].as_str()).collect();
            assert_eq!(reasons, ["uncommitted_changes", "operation_in_progress"]);
        }
        assert!(git_refuses(&repo, &wt), "{name}: git worktree remove refuses it too");
    }

    // Commits only its branch holds: refused (stricter than git, which would remove it); the branch stays.
    let wt = add_worktree(&sandbox, &repo, "solo", Some("solo"), "main");
    write(&wt, "solo.txt", "solo\n");
    git(&wt, &["add", "solo.txt"]);
    git(&wt, &["commit", "-q", "-m", "solo work"]);
    let solo = git(&repo, &["rev-parse", "solo"]).trim().to_owned();
    let (done, card) = run(&sandbox, &mut journal, &repo, "solo", wt.to_str().expect("utf-8"));
    assert_eq!((done.status, done.status_reason.as_deref()), (Status::Failed, Some("commits_only_on_branch")));
    assert!(card.contains(&format!("{solo} solo work")) && card.contains("the branch is kept"), "{card}");
    assert_eq!(done.result.expect("result")["commitCount"], 1);
    // Once a tag holds it, nothing is lost: it completes, and the branch still exists.
    git(&repo, &["tag", "keep-solo", "solo"]);
    let (done, _) = run(&sandbox, &mut journal, &repo, "solo-tagged", wt.to_str().expect("utf-8"));
    assert_eq!(done.status, Status::Completed, "{:?}", done.status_message);
    assert_eq!(git(&repo, &["rev-parse", "solo"]).trim(), solo);

    // A detached HEAD with a commit no ref reaches: lost with the worktree, so refused.
    let wt = add_worktree(&sandbox, &repo, "loose", None, "main");
    write(&wt, "loose.txt", "loose\n");
    git(&wt, &["add", "loose.txt"]);
    git(&wt, &["commit", "-q", "-m", "loose work"]);
    let loose = git(&wt, &["rev-parse", "HEAD"]).trim().to_owned();
    let (done, card) = run(&sandbox, &mut journal, &repo, "loose", wt.to_str().expect("utf-8"));
    assert_eq!((done.status, done.status_reason.as_deref()), (Status::Failed, Some("commits_would_be_lost")));
    assert!(card.contains(&format!("{loose} loose work")), "{card}");
    // Held by a remote-tracking branch: nothing lost.
    git(&repo, &["update-ref", "refs/remotes/origin/loose", &loose]);
    let (done, _) = run(&sandbox, &mut journal, &repo, "loose-tracked", wt.to_str().expect("utf-8"));
    assert_eq!(done.status, Status::Completed, "{:?}", done.status_message);

    // The worktree moved between the proposal and the approval: refused, propose again.
    let wt = add_worktree(&sandbox, &repo, "moving", Some("moving"), "main");
    let proposal = propose_lib(
        &mut journal,
        &roots,
        &body("moving", "agent", "worktreeRemove", &repo, fields(wt.to_str().expect("utf-8"))),
    );
    git(&wt, &["commit", "-q", "--allow-empty", "-m", "later"]);
    git(&repo, &["branch", "also-later", "moving"]);
    let done = approve_and_run(&mut journal, &roots, &proposal, &[]);
    assert_eq!((done.status, done.status_reason.as_deref()), (Status::Failed, Some("worktree_moved")));
    assert!(wt.exists());
}
