//! A repository whose every configurable program writes a marker: rendering the card of every operation (through
//! the library's `show`, the `show` binary and the approval page's card route) runs none of them and writes
//! nothing into the repository. Plain git on a copy of the repository is the control: the same traps fire there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fluxgit_gateway::approval;
use fluxgit_gateway::audit::Audit;
use fluxgit_gateway::executor;
use fluxgit_gateway::journal::{Journal, Status};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::support::{Sandbox, approve_lib, body, git, propose_lib, write};

/// Every hook git knows of.
const HOOKS: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
];

/// The trap: `sh trap.sh NAME [FILE...]` appends NAME to `markers/NAME`, then passes its input (or FILE) through,
/// so a filter or textconv that ran would still give git sensible bytes. `process` fails after marking.
fn trap_script(markers: &Path) -> String {
    format!(
        "#!/bin/sh\nname=$1\nshift\necho \"$name $*\" >> '{}/'\"$name\"\n[ \"$name\" = process ] && exit 1\n\
         if [ $# -gt 0 ] && [ -f \"$1\" ]; then cat \"$1\"; else cat; fi\nexit 0\n",
        markers.display()
    )
}

/// Sets every program-naming key of `repo`'s config to the trap.
fn arm(repo: &Path, trap: &Path, hooks: &Path) {
    let run = |name: &str| format!("sh {} {name}", trap.display());
    let settings = [
        ("filter.trap.clean", run("clean")),
        ("filter.trap.smudge", run("smudge")),
        ("filter.trap.required", "true".to_owned()),
        ("filter.proc.process", run("process")),
        ("filter.proc.required", "true".to_owned()),
        ("merge.trap.driver", format!("{} %O %A %B", run("merge"))),
        ("merge.trap.name", "trap".to_owned()),
        ("merge.default", "trap".to_owned()),
        ("diff.trap.textconv", run("textconv")),
        ("diff.trap.command", run("diffcommand")),
        ("diff.external", run("external")),
        ("gpg.program", hooks.join("gpg").display().to_string()),
        ("gpg.ssh.program", hooks.join("gpgssh").display().to_string()),
        ("gpg.x509.program", hooks.join("gpgx509").display().to_string()),
        ("log.showSignature", "true".to_owned()),
        ("core.hooksPath", hooks.display().to_string()),
        ("core.fsmonitor", run("fsmonitor")),
        ("core.pager", run("pager")),
        ("pager.log", run("pagerlog")),
        ("pager.diff", run("pagerdiff")),
        ("pager.status", run("pagerstatus")),
        ("core.editor", run("editor")),
        ("sequence.editor", run("sequenceeditor")),
        ("core.askPass", run("askpass")),
        ("core.sshCommand", run("ssh")),
        ("credential.helper", run("credential")),
        ("core.alternateRefsCommand", run("alternaterefs")),
        ("uploadpack.packObjectsHook", run("packobjects")),
        ("diff.trap.cachetextconv", "true".to_owned()),
        ("merge.renormalize", "true".to_owned()),
        ("gc.auto", "1".to_owned()),
    ];
    for (key, value) in settings {
        git(repo, &["config", key, value.as_str()]);
    }
}

/// The markers written so far, by name.
fn markers(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .expect("read the marker dir")
        .map(|entry| {
            let entry = entry.expect("a marker");
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            (entry.file_name().to_string_lossy().into_owned(), text)
        })
        .collect()
}

fn clear(dir: &Path) {
    for name in markers(dir).keys() {
        std::fs::remove_file(dir.join(name)).expect("remove a marker");
    }
}

/// Every file under `dir` with the sha256 of its bytes (symlinks by their target), recursively.
fn listing(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).expect("read a dir") {
            let path = entry.expect("an entry").path();
            let meta = std::fs::symlink_metadata(&path).expect("metadata");
            let relative = path.strip_prefix(dir).expect("under dir").to_owned();
            if meta.is_dir() {
                out.insert(relative, "dir".to_owned());
                stack.push(path);
            } else if meta.file_type().is_symlink() {
                out.insert(relative, format!("-> {}", std::fs::read_link(&path).expect("link").display()));
            } else {
                let bytes = std::fs::read(&path).expect("read a file");
                out.insert(relative, faster_hex::hex_string(&Sha256::digest(&bytes)));
            }
        }
    }
    out
}

/// The loose objects and packs of a git dir: (loose count, pack names).
fn objects(git_dir: &Path) -> (usize, Vec<String>) {
    let store = git_dir.join("objects");
    let mut loose = 0;
    for entry in std::fs::read_dir(&store).expect("read objects") {
        let entry = entry.expect("an entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.len() == 2 && name.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            loose += std::fs::read_dir(entry.path()).expect("read a fan-out dir").count();
        }
    }
    let mut packs: Vec<String> = std::fs::read_dir(store.join("pack"))
        .map(|entries| entries.filter_map(Result::ok).map(|entry| entry.file_name().to_string_lossy().into()).collect())
        .unwrap_or_default();
    packs.sort();
    (loose, packs)
}

/// A commit of `repo` carrying a (fake) PGP signature, with `parent` and `tree`, written by plain git.
fn signed_commit(repo: &Path, tree: &str, parent: &str, message: &str) -> String {
    let text = format!(
        "tree {tree}\nparent {parent}\nauthor Test Person <person@example.invalid> 1767225600 +0000\n\
         committer Test Person <person@example.invalid> 1767225600 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n \
         iQEzBAABCAAdFiEEfakefakefakefakefakefakefakefakeFAKE=\n =fake\n -----END PGP SIGNATURE-----\n\n{message}\n"
    );
    let path = repo.join(".git").join("signed-commit.txt");
    std::fs::write(&path, text).expect("write the commit text");
    let sha = git(repo, &["hash-object", "-t", "commit", "-w", path.to_str().expect("utf-8")]).trim().to_owned();
    std::fs::remove_file(path).expect("remove the commit text");
    sha
}

/// The trapped repository `repo` (with a submodule `sub`, a remote `origin`, a signed tip on `main`, a `side`
/// branch that conflicts on `a.txt`, a modified `a.txt`, a staged `s.txt` and an untracked `u.proc`), armed.
struct Trapped {
    sandbox: Sandbox,
    repo: PathBuf,
    markers: PathBuf,
}

fn trapped() -> Trapped {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo("repo");
    let markers = sandbox.home.join("markers");
    let hooks = sandbox.home.join("hooks");
    std::fs::create_dir_all(&markers).expect("marker dir");
    std::fs::create_dir_all(&hooks).expect("hooks dir");
    let trap = sandbox.home.join("trap.sh");
    std::fs::write(&trap, trap_script(&markers)).expect("write the trap");
    // Hooks and the signing programs (which git runs without a shell) as executables that call the trap.
    let programs = HOOKS.iter().map(|hook| ((*hook).to_owned(), format!("hook-{hook}")));
    let programs = programs.chain(["gpg", "gpgssh", "gpgx509"].map(|name| (name.to_owned(), name.to_owned())));
    for (file, marker) in programs {
        let path = hooks.join(file);
        std::fs::write(&path, format!("#!/bin/sh\nexec sh {} {marker} \"$@\"\n", trap.display())).expect("hook");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod the hook");
    }

    // History, before any trap: attributes naming the trapped drivers for every path.
    write(&repo, ".gitattributes", "* filter=trap merge=trap diff=trap\n*.proc filter=proc\n");
    write(&repo, "x.proc", "process me\n");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "attributes"]);
    git(&repo, &["branch", "-f", "side", "HEAD"]);
    git(&repo, &["switch", "-q", "side"]);
    write(&repo, "a.txt", "side\n");
    write(&repo, "x.proc", "side process\n");
    git(&repo, &["commit", "-q", "-am", "side work"]);
    git(&repo, &["switch", "-q", "main"]);
    write(&repo, "a.txt", "mainline\n");
    git(&repo, &["commit", "-q", "-am", "main work"]);
    let tree = git(&repo, &["rev-parse", "HEAD^{tree}"]).trim().to_owned();
    let parent = git(&repo, &["rev-parse", "HEAD~1"]).trim().to_owned();
    let signed = signed_commit(&repo, &tree, &parent, "main work, signed");
    git(&repo, &["update-ref", "refs/heads/main", signed.as_str()]);

    // A submodule checked out one commit past what is recorded.
    let sub_src = sandbox.root.join("subsrc");
    std::fs::create_dir_all(&sub_src).expect("mkdir");
    git(&sub_src, &["init", "-q", "-b", "main"]);
    write(&sub_src, "s.txt", "one\n");
    git(&sub_src, &["add", "-A"]);
    git(&sub_src, &["-c", "user.name=T", "-c", "user.email=t@x.invalid", "commit", "-q", "-m", "s1"]);
    write(&sub_src, "s.txt", "two\n");
    git(&sub_src, &["-c", "user.name=T", "-c", "user.email=t@x.invalid", "commit", "-q", "-am", "s2"]);
    git(
        &repo,
        &["-c", "protocol.file.allow=always", "submodule", "add", "-q", sub_src.to_str().expect("utf-8"), "sub"],
    );
    let sub = repo.join("sub");
    git(&sub, &["checkout", "-q", "--detach", "HEAD~1"]);
    git(&repo, &["add", "sub"]);
    git(&repo, &["commit", "-q", "-m", "add sub"]);
    git(&sub, &["checkout", "-q", "--detach", "main"]);
    write(&sub, "s.txt", "dirty in the submodule\n");

    // A remote that has side and main with one more commit, which a forced push would drop.
    write(&repo, "r.txt", "only on the remote\n");
    git(&repo, &["add", "r.txt"]);
    git(&repo, &["commit", "-q", "-m", "remote only"]);
    git(&sandbox.root, &["init", "-q", "--bare", "-b", "main", "remote.git"]);
    git(&repo, &["remote", "add", "origin", sandbox.root.join("remote.git").to_str().expect("utf-8")]);
    git(&repo, &["push", "-q", "origin", "main", "side"]);
    git(&repo, &["reset", "-q", "--hard", "HEAD~1"]);

    // Work-tree changes: modified (content and stat), staged, untracked.
    write(&repo, "a.txt", "changed in the work tree\n");
    write(&repo, "x.proc", "changed process\n");
    write(&repo, "s.txt", "staged\n");
    git(&repo, &["add", "s.txt"]);
    write(&repo, "u.proc", "untracked\n");

    arm(&repo, &trap, &hooks);
    arm(&sub, &trap, &hooks);
    clear(&markers);
    Trapped { sandbox, repo, markers }
}

/// A proposal body for `op` with `fields`, on the trapped repository.
fn proposals(trapped: &Trapped) -> Vec<(String, serde_json::Value)> {
    let repo = &trapped.repo;
    let patch = "diff --git a/b.txt b/b.txt\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1,2 @@\n bee\n+more\n";
    let fields: Vec<(&str, serde_json::Value)> = vec![
        ("merge", json!({"sourceRef": "side", "targetRef": "main", "strategy": "merge"})),
        ("rebase", json!({"ontoRef": "side", "currentRef": "HEAD", "interactive": false})),
        ("discard", json!({"paths": ["a.txt", "x.proc"]})),
        ("reset", json!({"targetRef": "HEAD~1", "mode": "hard"})),
        ("patch", json!({"patchContent": patch, "applyToIndex": true})),
        ("commit", json!({"message": "all", "stageAll": true})),
        ("commit", json!({"message": "these", "paths": ["a.txt", "x.proc", "u.proc"], "stageAll": false})),
        ("commit", json!({"message": "staged", "stageAll": false})),
        ("branch", json!({"name": "fresh", "startPoint": "origin/main", "checkout": false})),
        ("branchDelete", json!({"targets": [{"repoPath": repo.display().to_string(), "branches": ["side", "topic"]}]})),
        (
            "worktree",
            json!({"branch": "side", "path": trapped.sandbox.root.join("repo.worktrees/side").display().to_string()}),
        ),
        ("push", json!({"remote": "origin", "branch": "main", "setUpstream": true, "forceWithLease": true})),
        ("submodulePointer", json!({"relativePath": "sub", "direction": "record"})),
        ("submodulePointer", json!({"relativePath": "sub", "direction": "return"})),
        (
            "plan",
            json!({"steps": [
                {"type": "merge", "sourceRef": "side", "targetRef": "main", "strategy": "merge"},
                {"type": "rebase", "ontoRef": "side", "currentRef": "HEAD", "interactive": false},
                {"type": "discard", "paths": ["a.txt"]},
                {"type": "reset", "targetRef": "HEAD~1", "mode": "hard"},
                {"type": "patch", "patchContent": patch, "applyToIndex": false},
            ]}),
        ),
    ];
    fields
        .into_iter()
        .enumerate()
        .map(|(index, (op, fields))| {
            let id = format!("{op}-{index}");
            let proposal = body(&id, &format!("agent{index}"), op, repo, fields);
            (id, proposal)
        })
        .collect()
}

/// The markers, the objects of the repository and of its submodule, and every file of the work tree and the git
/// dir (with their bytes' digests).
type Footprint = (BTreeMap<String, String>, [(usize, Vec<String>); 2], BTreeMap<PathBuf, String>);

/// What must not change: the [`Footprint`] now.
fn untouched(trapped: &Trapped) -> Footprint {
    let sub_git_dir = git(&trapped.repo.join("sub"), &["rev-parse", "--absolute-git-dir"]);
    let objects = [objects(&trapped.repo.join(".git")), objects(Path::new(sub_git_dir.trim()))];
    (markers(&trapped.markers), objects, listing(&trapped.repo))
}

#[test]
fn cards_of_every_operation_run_no_repository_program_and_write_nothing() {
    let trapped = trapped();
    let roots = trapped.sandbox.roots();

    // The control: on a copy, plain git runs the traps the cards would meet.
    let copy = trapped.sandbox.home.join("copy");
    let copied = std::process::Command::new("cp")
        .args(["-a", trapped.repo.to_str().expect("utf-8"), copy.to_str().expect("utf-8")])
        .status()
        .expect("run cp");
    assert!(copied.success());
    let mut said = String::new();
    let mut plain = |args: &[&str]| {
        let output = std::process::Command::new("git")
            .current_dir(&copy)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &trapped.sandbox.home)
            .output()
            .expect("run git");
        said.push_str(&format!("git {args:?}: {}\n", String::from_utf8_lossy(&output.stderr)));
    };
    plain(&["status", "--porcelain"]);
    plain(&["diff", "HEAD", "--", "a.txt"]);
    plain(&["diff", "HEAD", "--", "x.proc"]);
    plain(&["log", "-n", "3", "main"]);
    plain(&["merge-tree", "--write-tree", "main", "side"]);
    plain(&["commit", "--allow-empty", "-q", "-m", "control"]);
    let fired = markers(&trapped.markers);
    for name in ["fsmonitor", "clean", "process", "diffcommand", "gpg", "merge", "hook-pre-commit"] {
        assert!(fired.contains_key(name), "the control did not fire {name}: {fired:?}\n{said}");
    }
    clear(&trapped.markers);
    std::fs::remove_dir_all(&copy).expect("remove the copy");

    let before = untouched(&trapped);
    let mut journal = Journal::open(&trapped.sandbox.run_dir).expect("journal");
    let mut cards = Vec::new();
    for (id, proposal) in proposals(&trapped) {
        propose_lib(&mut journal, &roots, &proposal);
        let card = approval::show(&mut journal, &id).unwrap_or_else(|error| panic!("{id}: {error}"));
        assert_eq!(untouched(&trapped), before, "the card of {id} ran a program or wrote:\n{card}");
        cards.push((id, card));
    }
    let card = |id: &str| &cards.iter().find(|(card_id, _)| card_id == id).expect("a card").1;

    // The cards still say what git would: the conflict, the diff, the files, the commits.
    assert!(card("merge-0").contains("CONFLICTS predicted in 1 path(s):\n  a.txt\n"), "{}", card("merge-0"));
    assert!(card("merge-0").contains("merge driver(s) trap run only at execution"), "{}", card("merge-0"));
    assert!(card("rebase-1").contains("main work"), "{}", card("rebase-1"));
    assert!(card("discard-2").contains("+changed in the work tree"), "{}", card("discard-2"));
    assert!(card("discard-2").contains("+changed process"), "{}", card("discard-2"));
    assert!(card("patch-4").contains("the patch applies cleanly"), "{}", card("patch-4"));
    assert!(card("commit-5").contains("?? u.proc"), "{}", card("commit-5"));
    assert!(card("commit-7").contains("A\ts.txt"), "{}", card("commit-7"));
    assert!(card("push-11").contains("Commits the remote LOSES"), "{}", card("push-11"));
    assert!(card("submodulePointer-12").contains("s2"), "{}", card("submodulePointer-12"));
    assert!(card("plan-14").contains("Step 5 of 5"), "{}", card("plan-14"));

    // The binary's `show` and the page's card route render the same cards, just as harmlessly.
    for id in ["merge-0", "rebase-1", "discard-2", "commit-6", "push-11"] {
        let (ok, text, error) = trapped.sandbox.cli(&["show", id]);
        assert!(ok, "{id}: {error}");
        assert!(text.contains("Conflict preflight") || !id.starts_with("merge"), "{text}");
    }
    assert_eq!(untouched(&trapped), before, "`fluxgit-gateway show` ran a program or wrote");
    let gateway = trapped.sandbox.serve(&[]);
    let prefix = gateway.page.trim_start_matches(&format!("http://{}", gateway.addr)).to_owned();
    for (id, _) in &cards {
        let (status, card) = gateway.request("GET", &format!("{prefix}api/proposals/{id}"), None);
        assert_eq!(status, 200, "{id}: {card}");
    }
    drop(gateway);
    assert_eq!(untouched(&trapped), before, "the page's card route ran a program or wrote");

    // Execution after approval still runs the person's programs: the restore point's snapshot runs the clean
    // filter and creating the branch runs its hook. The failing process filter is taken out first, as it would
    // (rightly) stop the snapshot.
    git(&trapped.repo, &["config", "--unset", "filter.proc.process"]);
    git(&trapped.repo, &["config", "--unset", "filter.proc.required"]);
    let branch = journal.get("branch-8").expect("get").expect("known");
    approve_lib(&mut journal, &roots, &branch.id, &[]).expect("approve");
    let approved = journal.get("branch-8").expect("get").expect("known");
    assert!(executor::run_approved(&mut journal, &approved, &roots, &Audit::DISABLED).expect("run"));
    let done = journal.get("branch-8").expect("get").expect("known");
    assert_eq!(done.status, Status::Completed, "{:?}", done.status_message);
    let fired = markers(&trapped.markers);
    assert!(fired.contains_key("hook-reference-transaction") && fired.contains_key("clean"), "{fired:?}");
}
