//! Crash recovery: the serving gateway killed with SIGKILL at each executor fault point during a real git
//! operation, then restarted: nothing runs twice, nothing is lost, an interrupted execution is flagged for a
//! person to reconcile. And an approval made while no gateway serves is executed after the next start.

use serde_json::json;

use crate::support::{Sandbox, approve_lib, body, git, propose_lib};
use fluxgit_gateway::journal::{Journal, Status};

fn commits(repo: &std::path::Path) -> usize {
    git(repo, &["rev-list", "--count", "HEAD"]).trim().parse().expect("a count")
}

#[test]
fn killed_at_each_fault_point_runs_nothing_twice_and_loses_nothing() {
    for point in ["after_claim", "after_restore_point", "after_git", "after_complete"] {
        let sandbox = Sandbox::new();
        let repo = sandbox.repo("repo");
        crate::support::write(&repo, "new.txt", "new\n");
        let roots = sandbox.roots();
        let id = format!("crash-{}", point.replace('_', "-"));
        {
            let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
            let fields = json!({"message": "crash test commit", "stageAll": true});
            propose_lib(&mut journal, &roots, &body(&id, "agent", "commit", &repo, fields));
            approve_lib(&mut journal, &roots, &id, &[]).expect("approve");
        }
        let before = commits(&repo);
        let mut gateway = sandbox.serve(&[("FLUXGIT_GATEWAY_FAULT", point)]);
        let status = gateway.child.wait().expect("the gateway dies at the fault point");
        assert!(!status.success(), "{point}: {status:?}");
        let ran = commits(&repo) - before;

        let gateway = sandbox.serve(&[]);
        std::thread::sleep(std::time::Duration::from_millis(600));
        let answer = gateway.status(&id);
        let journal = Journal::open(&sandbox.run_dir).expect("journal");
        let proposal = journal.get(&id).expect("get").expect("not lost");
        match point {
            "after_complete" => {
                assert_eq!(ran, 1, "{point}");
                assert_eq!(proposal.status, Status::Completed);
            }
            _ => {
                assert_eq!(proposal.status, Status::Executing, "{point}");
                assert!(proposal.needs_reconciliation, "{point}");
                assert_eq!(answer["needsReconciliation"], true, "{point}: {answer}");
                assert_eq!(ran, usize::from(point == "after_git"), "{point}");
            }
        }
        assert_eq!(commits(&repo) - before, ran, "{point}: nothing ran again after the restart");
        let (_, listing, _) = sandbox.cli(&["list"]);
        if point != "after_complete" {
            assert!(listing.contains("NEEDS RECONCILIATION"), "{listing}");
            // The person can put the repository back from the restore point when one was taken.
            if point != "after_claim" {
                let (ok, out, err) = sandbox.cli(&["restore", &id]);
                assert!(ok, "{out}{err}");
                assert_eq!(commits(&repo), before);
            }
            // Then closes it; the agent sees how it ended.
            let (ok, out, err) = sandbox.cli(&["reconcile", &id, "--outcome", "failed", "--note", "undone by hand"]);
            assert!(ok, "{out}{err}");
            let closed = gateway.status(&id);
            assert_eq!(
                (closed["status"].as_str(), closed["message"].as_str()),
                (Some("failed"), Some("undone by hand"))
            );
            let (ok, _, _) = sandbox.cli(&["reconcile", &id, "--outcome", "failed"]);
            assert!(!ok, "only once");
        }
        drop(gateway);
    }
}

#[test]
fn approved_while_stopped_runs_after_revalidation_on_the_next_start() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let roots = sandbox.roots();
    {
        let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
        let fields = json!({"name": "later", "startPoint": "HEAD", "checkout": false});
        propose_lib(&mut journal, &roots, &body("later", "agent", "branch", &repo, fields));
        approve_lib(&mut journal, &roots, "later", &[]).expect("approve");
    }
    let gateway = sandbox.serve(&[]);
    let done = gateway.wait_terminal("later");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["newSha"], git(&repo, &["rev-parse", "refs/heads/later"]).trim());
}

#[test]
fn hooks_apply_and_a_hanging_hook_is_stopped() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let roots = sandbox.roots();
    let hooks = repo.join(".git/hooks");
    std::fs::create_dir_all(&hooks).expect("hooks dir");
    let install = |name: &str, script: &str| {
        let path = hooks.join(name);
        std::fs::write(&path, script).expect("write hook");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod hook");
    };
    install("pre-commit", "#!/bin/sh\necho 'pre-commit says no' >&2\nexit 1\n");
    crate::support::write(&repo, "new.txt", "new\n");
    let propose = |id: &str| {
        let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
        let fields = json!({"message": "hooked", "stageAll": true});
        propose_lib(&mut journal, &roots, &body(id, "agent", "commit", &repo, fields));
        approve_lib(&mut journal, &roots, id, &[]).expect("approve");
    };
    let gateway = sandbox.serve(&[("FLUXGIT_GATEWAY_GIT_TIMEOUT_SECS", "2")]);
    propose("hook-no");
    let refused = gateway.wait_terminal("hook-no");
    assert_eq!(refused["status"], "failed", "{refused}");
    assert!(refused["message"].as_str().is_some_and(|message| message.contains("pre-commit says no")), "{refused}");

    install("pre-commit", "#!/bin/sh\nsleep 60\n");
    let started = std::time::Instant::now();
    propose("hook-hangs");
    let stopped = gateway.wait_terminal("hook-hangs");
    assert_eq!(stopped["status"], "failed", "{stopped}");
    assert!(stopped["message"].as_str().is_some_and(|message| message.contains("stopped after 2 s")), "{stopped}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "the hook was not stopped");

    install("pre-commit", "#!/bin/sh\nexit 0\n");
    install("post-commit", "#!/bin/sh\ngit rev-parse HEAD > .git/post-commit-ran\n");
    propose("hook-ok");
    let done = gateway.wait_terminal("hook-ok");
    assert_eq!(done["status"], "completed", "{done}");
    let marker = std::fs::read_to_string(repo.join(".git/post-commit-ran")).expect("the post-commit hook ran");
    assert_eq!(done["result"]["newSha"], marker.trim());
}

#[test]
fn a_plan_killed_after_each_step_is_flagged_never_resumed_and_its_checkpoint_restores_all() {
    let patch = crate::operations::new_file_patch;
    for killed_after in 1..=3 {
        let sandbox = Sandbox::new();
        let repo = sandbox.repo("repo");
        crate::support::write(&repo, "b.txt", "dirty\n");
        let roots = sandbox.roots();
        let id = format!("plan-crash-{killed_after}");
        let steps: Vec<serde_json::Value> = (1..=3)
            .map(|n| json!({"type": "patch", "patchContent": patch(&format!("n{n}.txt"), "x"), "applyToIndex": n == 2}))
            .collect();
        {
            let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
            propose_lib(&mut journal, &roots, &body(&id, "agent", "plan", &repo, json!({"steps": steps})));
            approve_lib(&mut journal, &roots, &id, &[]).expect("approve");
        }
        let before = crate::support::state(&repo);
        let point = format!("after_step_{killed_after}");
        let mut gateway = sandbox.serve(&[("FLUXGIT_GATEWAY_FAULT", point.as_str())]);
        let status = gateway.child.wait().expect("the gateway dies after the step");
        assert!(!status.success(), "{point}: {status:?}");
        let ran: Vec<bool> = (1..=3).map(|n| repo.join(format!("n{n}.txt")).exists()).collect();
        assert_eq!(ran, (1..=3).map(|n| n <= killed_after).collect::<Vec<_>>(), "{point}");

        let gateway = sandbox.serve(&[]);
        std::thread::sleep(std::time::Duration::from_millis(600));
        assert_eq!(gateway.status(&id)["needsReconciliation"], true, "{point}");
        let journal = Journal::open(&sandbox.run_dir).expect("journal");
        let proposal = journal.get(&id).expect("get").expect("not lost");
        assert_eq!((proposal.status, proposal.needs_reconciliation), (Status::Executing, true), "{point}");
        let again: Vec<bool> = (1..=3).map(|n| repo.join(format!("n{n}.txt")).exists()).collect();
        assert_eq!(again, ran, "{point}: no step ran again after the restart");
        let (ok, out, err) = sandbox.cli(&["restore", &id]);
        assert!(ok, "{out}{err}");
        assert_eq!(crate::support::state(&repo), before, "{point}: the checkpoint restores every step done");
        let (ok, out, err) = sandbox.cli(&["reconcile", &id, "--outcome", "failed", "--note", "restored"]);
        assert!(ok, "{out}{err}");
        assert_eq!(gateway.status(&id)["status"], "failed");
        drop(gateway);
    }
}

#[test]
fn approving_with_other_allowed_roots_is_refused_and_the_proposal_stays_pending() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let roots = sandbox.roots();
    let mut journal = Journal::open(&sandbox.run_dir).expect("journal");
    let fields = json!({"name": "elsewhere", "startPoint": "HEAD", "checkout": false});
    propose_lib(&mut journal, &roots, &body("elsewhere", "agent", "branch", &repo, fields));

    // A person runs `approve` with roots that do not hold the repository: nothing is decided.
    let other_roots = vec![sandbox.home.clone()];
    let refused = approve_lib(&mut journal, &other_roots, "elsewhere", &[]).expect_err("outside the roots");
    assert!(refused.to_string().contains("outside this process's allowed roots"), "{refused}");
    assert!(refused.to_string().contains("stays pending"), "{refused}");
    let proposal = journal.get("elsewhere").expect("get").expect("known");
    assert_eq!(proposal.status, Status::Pending);

    // The same person with the serving roots approves it.
    approve_lib(&mut journal, &roots, "elsewhere", &[]).expect("approve");
    assert_eq!(journal.get("elsewhere").expect("get").expect("known").status, Status::Approved);

    // A repository replaced at the same path is another repository: blocked for good.
    let fields = json!({"name": "replaced", "startPoint": "HEAD", "checkout": false});
    propose_lib(&mut journal, &roots, &body("replaced", "agent", "branch", &repo, fields));
    // Moved away first, so the new common dir cannot reuse the old one's inode.
    std::fs::rename(&repo, sandbox.root.join("repo-before")).expect("move the repository away");
    let _ = sandbox.repo("repo");
    let blocked = approve_lib(&mut journal, &roots, "replaced", &[]).expect_err("replaced");
    assert!(blocked.to_string().contains("another repository"), "{blocked}");
    assert_eq!(journal.get("replaced").expect("get").expect("known").status, Status::Failed);
}
