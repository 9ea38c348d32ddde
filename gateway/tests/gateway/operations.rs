//! The five operations of issue 20 through the library (branchDelete, worktree, push, submodulePointer, plan):
//! approve, execute behind a restore point, check the effect with git, then `restore` gives back byte-identical
//! refs, HEAD, index, work tree and config in every repository the operation touched.

use std::path::{Path, PathBuf};

use fluxgit_gateway::approval;
use fluxgit_gateway::audit::Audit;
use fluxgit_gateway::executor;
use fluxgit_gateway::journal::{Journal, Proposal, Status};
use fluxgit_gateway::proposal;
use serde_json::json;
use sha2::Digest;

use crate::support::{Sandbox, approve_lib, body, git, propose_lib, state, write};

/// `state` (for any work tree, a submodule's too: its git dir is asked for) plus the `config` file's bytes.
fn full_state(repo: &Path) -> String {
    let common = git(repo, &["rev-parse", "--path-format=absolute", "--git-common-dir"]);
    let config = std::fs::read_to_string(Path::new(common.trim()).join("config")).expect("read config");
    let git_dir = PathBuf::from(git(repo, &["rev-parse", "--absolute-git-dir"]).trim());
    if git_dir == repo.join(".git") {
        return format!("{}config:\n{config}", state(repo));
    }
    let refs: Vec<String> = git(repo, &["for-each-ref", "--format=%(objectname) %(refname)"])
        .lines()
        .filter(|line| !line.contains(" refs/fluxgit/"))
        .map(str::to_owned)
        .collect();
    let head = std::fs::read_to_string(git_dir.join("HEAD")).expect("read HEAD");
    let index = std::fs::read(git_dir.join("index")).map(|bytes| faster_hex::hex_string(&sha2::Sha256::digest(&bytes)));
    let tree: Vec<String> = fluxgit_fixtures::snapshot_listing(repo)
        .into_iter()
        .filter_map(|line| {
            let fields: Vec<&str> = line.splitn(6, ' ').collect();
            let path = fields.get(5).copied().unwrap_or_default();
            (fields[0] != "d").then(|| format!("{} {} {} {} {path}", fields[0], fields[1], fields[3], fields[4]))
        })
        .collect();
    format!(
        "HEAD {head}\nrefs:\n{}\nindex {index:?}\nwork tree:\n{}\nconfig:\n{config}",
        refs.join("\n"),
        tree.join("\n")
    )
}

/// Approves `proposal` (answering `answers` after the code) and runs it; the proposal as it ended.
pub(crate) fn approve_and_run(
    journal: &mut Journal,
    roots: &[PathBuf],
    proposal: &Proposal,
    answers: &[&str],
) -> Proposal {
    approve_lib(journal, roots, &proposal.id, answers).unwrap_or_else(|error| panic!("{}: {error}", proposal.id));
    let approved = journal.get(&proposal.id).expect("get").expect("known");
    assert_eq!(approved.status, Status::Approved);
    assert!(executor::run_approved(journal, &approved, roots, &Audit::DISABLED).expect("run"));
    journal.get(&proposal.id).expect("get").expect("known")
}

pub(crate) fn restore(journal: &mut Journal, id: &str) {
    approval::restore(journal, id, &Audit::DISABLED).unwrap_or_else(|error| panic!("{id}: {error}"));
}

fn branches(repo: &Path) -> String {
    git(repo, &["for-each-ref", "--format=%(refname:short)", "refs/heads/"])
}

#[test]
fn branch_delete_keeps_what_it_must_deletes_the_rest_and_restore_brings_every_tip_back() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let other = sandbox.repo("other");
    // merged: behind HEAD; up: ahead of HEAD but inside its upstream (topic); gone: moves after the proposal;
    // wt: checked out in a linked worktree; topic: unmerged; main: checked out; nope: absent.
    git(&repo, &["branch", "merged", "main~1"]);
    git(&repo, &["branch", "up", "topic"]);
    git(&repo, &["branch", "--set-upstream-to=topic", "up"]);
    git(&repo, &["branch", "gone", "main"]);
    git(&repo, &["branch", "wt", "main~1"]);
    git(&repo, &["worktree", "add", "-q", sandbox.root.join("wt").to_str().expect("utf-8"), "wt"]);
    git(&repo, &["update-ref", "refs/remotes/origin/merged", "main~1"]);
    git(&other, &["branch", "old", "main~1"]);
    let before = (full_state(&repo), full_state(&other));

    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();
    let targets = json!([
        {"repoPath": repo.display().to_string(),
         "branches": ["merged", "up", "gone", "wt", "topic", "main", "nope", "refs/heads/clash"]},
        {"repoPath": other.display().to_string(), "branches": ["old", "topic"]},
    ]);
    let proposal =
        propose_lib(&mut journal, &roots, &body("bd", "agent", "branchDelete", &repo, json!({"targets": targets})));
    git(&repo, &["branch", "-f", "gone", "main~1"]);
    let card = approval::show(&mut journal, "bd").expect("show");
    for expected in ["merged at", "-> DELETE", "tip_moved", "checked_out", "unmerged", "not_found", "risk: high"] {
        assert!(card.contains(expected), "card lacks {expected:?}:\n{card}");
    }
    let moved = (full_state(&repo), full_state(&other));
    // Strong confirmation: the number of branches (one branch: its name).
    assert!(approve_lib(&mut journal, &roots, "bd", &["delete 9 branches"]).is_err());
    let done = approve_and_run(&mut journal, &roots, &proposal, &["delete 10 branches"]);
    assert_eq!(done.status, Status::Completed, "{:?} {:?}", done.status_message, done.result);
    let result = done.result.expect("result");
    let outcome = |repo_path: &Path, branch: &str| -> (String, String) {
        let entry = result["branches"]
            .as_array()
            .expect("branches")
            .iter()
            .find(|entry| entry["repoPath"] == repo_path.display().to_string() && entry["branch"] == branch)
            .unwrap_or_else(|| panic!("no outcome for {branch}: {result}"));
        (entry["outcome"].as_str().unwrap_or_default().into(), entry["reason"].as_str().unwrap_or_default().into())
    };
    let expect = |repo_path: &Path, branch: &str, expected: &str, reason: &str| {
        assert_eq!(outcome(repo_path, branch), (expected.to_owned(), reason.to_owned()), "{branch}");
    };
    expect(&repo, "merged", "deleted", "");
    expect(&repo, "up", "deleted", "");
    expect(&repo, "gone", "skipped", "tip_moved");
    expect(&repo, "wt", "skipped", "checked_out");
    expect(&repo, "topic", "skipped", "unmerged");
    expect(&repo, "main", "skipped", "checked_out");
    expect(&repo, "nope", "skipped", "not_found");
    expect(&repo, "refs/heads/clash", "skipped", "unmerged");
    expect(&other, "old", "deleted", "");
    expect(&other, "topic", "skipped", "unmerged");
    assert_eq!((result["deleted"].clone(), result["skipped"].clone()), (json!(3), json!(7)), "{result}");
    assert_eq!(branches(&repo), "clash\ngone\nmain\ntopic\nwt\n");
    assert_eq!(branches(&other), "clash\nmain\ntopic\n");
    assert!(!full_state(&repo).contains("[branch \"up\"]"), "the deleted branch's config section is removed");
    assert!(moved.0.contains("[branch \"up\"]"));
    assert_eq!(git(&repo, &["rev-parse", "refs/remotes/origin/merged"]), git(&repo, &["rev-parse", "main~1"]));

    restore(&mut journal, "bd");
    assert_eq!((full_state(&repo), full_state(&other)), moved, "every tip and config back");
    assert_ne!(moved, before, "gone had moved");
}

fn worktree_run(
    sandbox: &Sandbox,
    journal: &mut Journal,
    repo: &Path,
    id: &str,
    branch: &str,
    path: &Path,
) -> Proposal {
    let roots = sandbox.roots();
    let fields = json!({"branch": branch, "path": path.display().to_string()});
    let proposal = propose_lib(journal, &roots, &body(id, "agent", "worktree", repo, fields));
    approve_and_run(journal, &roots, &proposal, &[])
}

#[test]
fn worktree_adds_a_linked_worktree_and_restore_removes_it() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    write(&repo, "u.txt", "untracked\n");
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let before = full_state(&repo);
    let list_before = git(&repo, &["worktree", "list", "--porcelain"]);

    // An existing branch.
    let path = sandbox.root.join("repo.worktrees/topic");
    let proposal = worktree_run(&sandbox, &mut journal, &repo, "wt-topic", "topic", &path);
    assert_eq!(proposal.status, Status::Completed, "{:?}", proposal.status_message);
    let result = proposal.result.expect("result");
    assert_eq!(result["newSha"], git(&repo, &["rev-parse", "topic"]).trim());
    assert_eq!(result["createdBranch"], false);
    assert_eq!(git(&path, &["symbolic-ref", "HEAD"]).trim(), "refs/heads/topic");
    assert!(git(&repo, &["worktree", "list", "--porcelain"]).contains(&format!("worktree {}", path.display())));
    let someone_elses = sandbox.root.join("by-hand");
    git(&repo, &["worktree", "add", "-q", "--detach", someone_elses.to_str().expect("utf-8"), "main"]);
    restore(&mut journal, "wt-topic");
    assert!(!path.exists(), "the worktree is removed");
    assert!(someone_elses.join("a.txt").exists(), "a worktree added since by someone else stays");
    git(&repo, &["worktree", "remove", someone_elses.to_str().expect("utf-8")]);
    assert_eq!(git(&repo, &["worktree", "list", "--porcelain"]), list_before);
    assert_eq!(full_state(&repo), before);

    // A new branch, created from HEAD.
    let path = sandbox.root.join("repo.worktrees/fresh");
    let proposal = worktree_run(&sandbox, &mut journal, &repo, "wt-fresh", "fresh", &path);
    assert_eq!(proposal.status, Status::Completed, "{:?}", proposal.status_message);
    assert_eq!(proposal.result.expect("result")["createdBranch"], true);
    assert_eq!(git(&repo, &["rev-parse", "fresh"]), git(&repo, &["rev-parse", "main"]));
    restore(&mut journal, "wt-fresh");
    assert_eq!(git(&repo, &["branch", "--list", "fresh"]), "");
    assert_eq!(git(&repo, &["worktree", "list", "--porcelain"]), list_before);
    assert_eq!(full_state(&repo), before);

    // Refused: the path exists; a symlink leads out of the allowed roots.
    let taken = sandbox.root.join("taken");
    std::fs::create_dir_all(&taken).expect("mkdir");
    let proposal = worktree_run(&sandbox, &mut journal, &repo, "wt-taken", "topic", &taken);
    assert_eq!((proposal.status, proposal.status_reason.as_deref()), (Status::Failed, Some("path_exists")));
    let outside = tempfile::tempdir().expect("temp dir");
    std::os::unix::fs::symlink(outside.path(), sandbox.root.join("link")).expect("symlink");
    let proposal = worktree_run(&sandbox, &mut journal, &repo, "wt-out", "topic", &sandbox.root.join("link/wt"));
    assert_eq!((proposal.status, proposal.status_reason.as_deref()), (Status::Failed, Some("outside_allowed_roots")));
    assert!(!outside.path().join("wt").exists());
    assert_eq!(git(&repo, &["worktree", "list", "--porcelain"]), list_before);
}

/// A bare repository `remote.git` as `origin` of `repo` (main and topic pushed), and a second clone `elsewhere`.
fn with_remote(sandbox: &Sandbox, repo: &Path) -> (PathBuf, PathBuf) {
    let remote = sandbox.root.join("remote.git");
    git(&sandbox.root, &["init", "-q", "--bare", "-b", "main", "remote.git"]);
    git(repo, &["remote", "add", "origin", remote.to_str().expect("utf-8")]);
    git(repo, &["push", "-q", "origin", "main", "topic"]);
    git(&sandbox.root, &["clone", "-q", "remote.git", "elsewhere"]);
    let elsewhere = sandbox.root.join("elsewhere");
    git(&elsewhere, &["config", "user.name", "Someone Else"]);
    git(&elsewhere, &["config", "user.email", "else@example.invalid"]);
    (remote, elsewhere)
}

fn push_fields(force: bool, upstream: bool) -> serde_json::Value {
    json!({"remote": "origin", "branch": "main", "setUpstream": upstream, "forceWithLease": force})
}

#[test]
fn push_sets_the_upstream_and_restore_gives_the_local_side_back() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let (remote, _) = with_remote(&sandbox, &repo);
    write(&repo, "a.txt", "one\ntwo\nthree\n");
    git(&repo, &["commit", "-q", "-am", "third"]);
    let before = full_state(&repo);
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();
    let proposal = propose_lib(&mut journal, &roots, &body("push", "agent", "push", &repo, push_fields(false, true)));
    let card = approval::show(&mut journal, "push").expect("show");
    assert!(card.contains("risk: medium") && card.contains("third") && card.contains("Sets the upstream"), "{card}");
    let done = approve_and_run(&mut journal, &roots, &proposal, &[]);
    assert_eq!(done.status, Status::Completed, "{:?} {:?}", done.status_message, done.result);
    let main = git(&repo, &["rev-parse", "main"]);
    assert_eq!(git(&remote, &["rev-parse", "main"]), main);
    assert_eq!(done.result.expect("result")["newSha"], main.trim());
    assert_eq!(git(&repo, &["rev-parse", "refs/remotes/origin/main"]), main);
    assert_eq!(git(&repo, &["config", "branch.main.remote"]).trim(), "origin");
    restore(&mut journal, "push");
    assert_eq!(full_state(&repo), before, "tracking ref and upstream config back");
    assert_eq!(git(&remote, &["rev-parse", "main"]), main, "the remote is never undone");
}

#[test]
fn a_forced_push_needs_the_branch_name_and_its_lease_refuses_after_a_concurrent_push() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let (remote, elsewhere) = with_remote(&sandbox, &repo);
    git(&repo, &["reset", "-q", "--hard", "main~1"]);
    write(&repo, "a.txt", "rewritten\n");
    git(&repo, &["commit", "-q", "-am", "rewritten history"]);
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();
    let remote_main = git(&remote, &["rev-parse", "main"]);

    let proposal = propose_lib(&mut journal, &roots, &body("force", "agent", "push", &repo, push_fields(true, false)));
    assert_eq!(proposal.body["gatewayObserved"]["expectedRemoteSha"], remote_main.trim());
    let card = approval::show(&mut journal, "force").expect("show");
    for expected in [
        "risk: high",
        "FORCE PUSH",
        &format!("--force-with-lease=refs/heads/main:{}", remote_main.trim()),
        "second",
        "Strong confirmation",
    ] {
        assert!(card.contains(expected), "card lacks {expected:?}:\n{card}");
    }
    let refused = approve_lib(&mut journal, &roots, "force", &["not-main"]);
    assert!(matches!(refused, Err(approval::Error::Refused(_))), "{refused:?}");
    // Someone else pushes between the proposal and the approval: the lease no longer holds.
    write(&elsewhere, "e.txt", "elsewhere\n");
    git(&elsewhere, &["add", "e.txt"]);
    git(&elsewhere, &["commit", "-q", "-m", "concurrent"]);
    git(&elsewhere, &["push", "-q", "origin", "main"]);
    let concurrent = git(&elsewhere, &["rev-parse", "main"]);
    let done = approve_and_run(&mut journal, &roots, &proposal, &["main"]);
    assert_eq!(
        (done.status, done.status_reason.as_deref()),
        (Status::Failed, Some("lease_refused")),
        "{:?}",
        done.result
    );
    assert_eq!(git(&remote, &["rev-parse", "main"]), concurrent, "nothing was pushed");

    // Without a concurrent push the same lease holds and the remote takes the rewritten branch.
    git(&repo, &["fetch", "-q", "origin"]);
    let proposal = propose_lib(&mut journal, &roots, &body("force2", "agent", "push", &repo, push_fields(true, false)));
    let before = full_state(&repo);
    let done = approve_and_run(&mut journal, &roots, &proposal, &["main"]);
    assert_eq!(done.status, Status::Completed, "{:?} {:?}", done.status_message, done.result);
    assert_eq!(git(&remote, &["rev-parse", "main"]), git(&repo, &["rev-parse", "main"]));
    restore(&mut journal, "force2");
    assert_eq!(full_state(&repo), before);
}

/// A repository `name` under the root with commits c1, c2 (file lib.txt), HEAD on main at c2.
fn library(sandbox: &Sandbox, name: &str) -> PathBuf {
    let path = sandbox.root.join(name);
    std::fs::create_dir_all(&path).expect("mkdir");
    git(&path, &["init", "-q", "-b", "main"]);
    git(&path, &["config", "user.name", "Lib"]);
    git(&path, &["config", "user.email", "lib@example.invalid"]);
    for n in 1..=2 {
        write(&path, "lib.txt", &format!("version {n}\n"));
        git(&path, &["add", "lib.txt"]);
        git(&path, &["commit", "-q", "-m", &format!("c{n}")]);
    }
    path
}

fn add_submodule(parent: &Path, url: &Path, at: &str) {
    git(parent, &["-c", "protocol.file.allow=always", "submodule", "add", "-q", url.to_str().expect("utf-8"), at]);
    git(parent, &["commit", "-q", "-m", &format!("add {at}")]);
}

#[test]
fn submodule_pointer_records_and_returns_and_restore_gives_both_repositories_back() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let lib_src = library(&sandbox, "libsrc");
    add_submodule(&repo, &lib_src, "lib");
    let lib = repo.join("lib");
    let c2 = git(&lib, &["rev-parse", "HEAD"]).trim().to_owned();
    let c1 = git(&lib, &["rev-parse", "HEAD~1"]).trim().to_owned();
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();

    // record: lib checked out at c1 (detached), recorded c2; something else staged stays staged.
    git(&lib, &["checkout", "-q", "--detach", &c1]);
    write(&repo, "b.txt", "staged elsewhere\n");
    git(&repo, &["add", "b.txt"]);
    let before = (full_state(&repo), full_state(&lib));
    let mismatch = body(
        "sp-bad",
        "agent",
        "submodulePointer",
        &repo,
        json!({"relativePath": "lib", "direction": "record", "expectedRecordedOid": c1}),
    );
    let refused = proposal::check("submodulePointer", &mismatch, &roots).expect_err("expected oid enforced");
    assert_eq!(refused.reason, "expected_oid_mismatch");
    let fields = json!({"relativePath": "lib", "direction": "record", "message": "chore: pin lib to c1",
        "expectedRecordedOid": c2, "expectedCheckedOutOid": c1});
    let proposal = propose_lib(&mut journal, &roots, &body("sp-rec", "agent", "submodulePointer", &repo, fields));
    let card = approval::show(&mut journal, "sp-rec").expect("show");
    assert!(card.contains(&format!("recorded in the parent's HEAD: {c2}")) && card.contains("Record:"), "{card}");
    let done = approve_and_run(&mut journal, &roots, &proposal, &[]);
    assert_eq!(done.status, Status::Completed, "{:?} {:?}", done.status_message, done.result);
    assert_eq!(git(&repo, &["rev-parse", "HEAD:lib"]).trim(), c1);
    assert_eq!(git(&repo, &["show", "--name-only", "--format=%s", "HEAD"]), "chore: pin lib to c1\n\nlib\n");
    assert_eq!(git(&repo, &["diff", "--cached", "--name-only"]), "b.txt\n", "only the gitlink was committed");
    restore(&mut journal, "sp-rec");
    assert_eq!((full_state(&repo), full_state(&lib)), before);

    // return: lib on a branch with a new commit c3; it goes back to the recorded c2, detached.
    git(&repo, &["restore", "--staged", "b.txt"]);
    git(&repo, &["checkout", "-q", "--", "b.txt"]);
    git(&lib, &["switch", "-q", "-c", "work", &c2]);
    write(&lib, "lib.txt", "version 3\n");
    git(&lib, &["commit", "-q", "-am", "c3"]);
    let before = (full_state(&repo), full_state(&lib));
    let fields = json!({"relativePath": "lib", "direction": "return"});
    let proposal = propose_lib(&mut journal, &roots, &body("sp-ret", "agent", "submodulePointer", &repo, fields));
    let done = approve_and_run(&mut journal, &roots, &proposal, &[]);
    assert_eq!(done.status, Status::Completed, "{:?} {:?}", done.status_message, done.result);
    assert_eq!(git(&lib, &["rev-parse", "HEAD"]).trim(), c2);
    assert!(
        std::process::Command::new("git")
            .current_dir(&lib)
            .args(["symbolic-ref", "-q", "HEAD"])
            .status()
            .expect("git")
            .code()
            == Some(1),
        "detached"
    );
    restore(&mut journal, "sp-ret");
    assert_eq!((full_state(&repo), full_state(&lib)), before, "back on work at c3");

    // A dirty submodule is refused at execution; a pointer already recorded is refused on receipt or execution.
    write(&lib, "lib.txt", "dirty\n");
    let proposal = propose_lib(
        &mut journal,
        &roots,
        &body("sp-dirty", "agent", "submodulePointer", &repo, json!({"relativePath": "lib", "direction": "return"})),
    );
    let done = approve_and_run(&mut journal, &roots, &proposal, &[]);
    assert_eq!((done.status, done.status_reason.as_deref()), (Status::Failed, Some("submodule_dirty")));
    assert_eq!(std::fs::read_to_string(lib.join("lib.txt")).expect("read"), "dirty\n");
}

#[test]
fn submodule_pointer_works_on_a_nested_submodule() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let inner_src = library(&sandbox, "innersrc");
    let mid_src = library(&sandbox, "midsrc");
    git(
        &mid_src,
        &["-c", "protocol.file.allow=always", "submodule", "add", "-q", inner_src.to_str().expect("utf-8"), "inner"],
    );
    git(&mid_src, &["commit", "-q", "-m", "add inner"]);
    add_submodule(&repo, &mid_src, "mid");
    git(&repo, &["-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "--recursive"]);
    let mid = repo.join("mid");
    let inner = mid.join("inner");
    git(&inner, &["checkout", "-q", "--detach", "HEAD~1"]);
    let c1 = git(&inner, &["rev-parse", "HEAD"]).trim().to_owned();
    let before = (full_state(&repo), full_state(&mid), full_state(&inner));
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();
    let fields = json!({"relativePath": "inner", "parentPath": "mid", "direction": "record"});
    let proposal = propose_lib(&mut journal, &roots, &body("sp-nest", "agent", "submodulePointer", &repo, fields));
    let done = approve_and_run(&mut journal, &roots, &proposal, &[]);
    assert_eq!(done.status, Status::Completed, "{:?} {:?}", done.status_message, done.result);
    assert_eq!(git(&mid, &["rev-parse", "HEAD:inner"]).trim(), c1);
    assert_eq!(git(&mid, &["log", "-1", "--format=%s"]).trim(), format!("Update submodule inner to {}", &c1[..12]));
    restore(&mut journal, "sp-nest");
    assert_eq!((full_state(&repo), full_state(&mid), full_state(&inner)), before);
}

/// A patch creating `name` with one line `text`.
pub(crate) fn new_file_patch(name: &str, text: &str) -> String {
    format!("diff --git a/{name} b/{name}\nnew file mode 100644\n--- /dev/null\n+++ b/{name}\n@@ -0,0 +1 @@\n+{text}\n")
}

fn plan_steps(third: serde_json::Value) -> serde_json::Value {
    json!({"steps": [
        {"type": "discard", "paths": ["b.txt"]},
        {"type": "merge", "sourceRef": "topic", "targetRef": "main", "strategy": "merge"},
        third,
        {"type": "patch", "patchContent": new_file_patch("n.txt", "new"), "applyToIndex": true},
    ]})
}

#[test]
fn a_plan_runs_every_step_in_order_and_its_checkpoint_restores_them_all() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    write(&repo, "b.txt", "bee changed\n");
    write(&repo, "u.txt", "untracked\n");
    let before = full_state(&repo);
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();
    let third = json!({"type": "reset", "targetRef": "HEAD", "mode": "hard"});
    let proposal = propose_lib(&mut journal, &roots, &body("plan-ok", "agent", "plan", &repo, plan_steps(third)));
    let card = approval::show(&mut journal, "plan-ok").expect("show");
    for expected in [
        "risk: high",
        "Step 1 of 4: discard",
        "Step 2 of 4: merge",
        "topic work",
        "Step 3 of 4: reset",
        "Step 4 of 4: patch",
        "n.txt",
        "Strong confirmation",
    ] {
        assert!(card.contains(expected), "card lacks {expected:?}:\n{card}");
    }
    let done = approve_and_run(&mut journal, &roots, &proposal, &["main"]);
    assert_eq!(done.status, Status::Completed, "{:?} {:?}", done.status_message, done.result);
    let result = done.result.expect("result");
    let statuses: Vec<&str> =
        result["steps"].as_array().expect("steps").iter().filter_map(|step| step["status"].as_str()).collect();
    assert_eq!(statuses, ["completed"; 4]);
    assert_eq!(result["completedSteps"], 4);
    assert_eq!(result["newSha"], git(&repo, &["rev-parse", "HEAD"]).trim());
    assert_eq!(git(&repo, &["rev-list", "--parents", "-n", "1", "HEAD"]).split_whitespace().count(), 3, "merged");
    assert_eq!(git(&repo, &["status", "--porcelain"]), "A  n.txt\n?? u.txt\n", "discarded, reset, patched");
    // Each step's snapshot is the state before it: before step 2, b.txt was discarded already.
    let point = result["restorePointId"].as_str().expect("restorePointId");
    for step in 1..=4 {
        let reference = format!("refs/fluxgit/steps/{point}/{step}");
        assert_eq!(result["steps"][step - 1]["snapshotRef"], reference.as_str());
        assert_eq!(
            git(&repo, &["rev-parse", &reference]).trim(),
            result["steps"][step - 1]["snapshot"].as_str().expect("sha")
        );
    }
    assert_eq!(git(&repo, &["show", &format!("refs/fluxgit/steps/{point}/1:b.txt")]), "bee changed\n");
    assert_eq!(git(&repo, &["show", &format!("refs/fluxgit/steps/{point}/2:b.txt")]), "bee\n");
    restore(&mut journal, "plan-ok");
    assert_eq!(full_state(&repo), before);
}

#[test]
fn a_plan_whose_third_step_fails_reports_two_done_one_failed_one_not_run_and_restores_all() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    write(&repo, "b.txt", "bee changed\n");
    let before = full_state(&repo);
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();
    let third = json!({"type": "merge", "sourceRef": "clash", "targetRef": "main", "strategy": "merge"});
    let proposal = propose_lib(&mut journal, &roots, &body("plan-fail", "agent", "plan", &repo, plan_steps(third)));
    let card = approval::show(&mut journal, "plan-fail").expect("show");
    assert!(card.contains("Step 3 of 4: merge") && card.contains("CONFLICTS predicted in 1 path(s)"), "{card}");
    let done = approve_and_run(&mut journal, &roots, &proposal, &[]);
    assert_eq!((done.status, done.status_reason.as_deref()), (Status::Failed, Some("step_failed")));
    let result = done.result.expect("result");
    let steps = result["steps"].as_array().expect("steps");
    let statuses: Vec<&str> = steps.iter().filter_map(|step| step["status"].as_str()).collect();
    assert_eq!(statuses, ["completed", "completed", "failed", "not_run"]);
    assert_eq!(
        (steps[2]["reason"].clone(), steps[2]["result"]["conflicts"].clone()),
        (json!("conflicts"), json!(["a.txt"]))
    );
    assert_eq!((result["completedSteps"].clone(), result["failedStep"].clone()), (json!(2), json!(3)));
    assert!(repo.join("t.txt").exists() && !repo.join("n.txt").exists() && !repo.join(".git/MERGE_HEAD").exists());
    assert_eq!(git(&repo, &["status", "--porcelain"]), "", "steps 1-2 done, 3 aborted, 4 not run");
    restore(&mut journal, "plan-fail");
    assert_eq!(full_state(&repo), before);
}

#[test]
fn a_push_that_needs_a_password_fails_at_once_instead_of_waiting_for_a_prompt() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    // An HTTP server that asks every request for credentials.
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer);
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"x\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    git(&repo, &["remote", "add", "origin", &format!("http://127.0.0.1:{port}/repo.git")]);
    git(&repo, &["config", "credential.helper", ""]);
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let roots = sandbox.roots();
    let proposal =
        propose_lib(&mut journal, &roots, &body("push-auth", "agent", "push", &repo, push_fields(false, false)));
    let started = std::time::Instant::now();
    let done = approve_and_run(&mut journal, &roots, &proposal, &[]);
    assert_eq!((done.status, done.status_reason.as_deref()), (Status::Failed, Some("git_failed")));
    let message = done.status_message.unwrap_or_default();
    assert!(message.contains("terminal prompts disabled"), "{message}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}
