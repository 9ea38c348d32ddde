//! What `repo.brief` answers itself (issue 35) against the git CLI: a stopped rebase's regions vs `git diff` and
//! its progress vs `git status`, commits lost to a reset vs `git rev-list <old> --not --all` with the recovery run
//! by git, a parent rebased under the branch vs `git merge-base --fork-point`, the owners of the changed files vs
//! `git status` and the CODEOWNERS rules, and a folder of checkouts vs `git status` in each; the hint the answer
//! replaces stays in the JSON and leaves the text.

use std::path::Path;

use fluxgit_engine::render::{self, Options as TextOptions};
use fluxgit_engine::{Budgeted, Engine, brief};
use fluxgit_fixtures::{Fixture, Scenario};

use crate::common::engine_for;

fn brief_of(engine: &Engine, path: &Path, now: i64) -> Budgeted<brief::Brief> {
    let repo = engine.resolve(path.to_str().expect("utf-8")).expect("resolves");
    let options = brief::Options { now, ..brief::Options::default() };
    engine.brief(&repo, &options, usize::MAX, &mut |_| 0).expect("brief")
}

fn text_of(brief: &Budgeted<brief::Brief>) -> String {
    render::brief(brief, &TextOptions::default())
}

/// An hour after the newest entry of HEAD's reflog: the fixtures' clock, not the system's.
fn clock(fixture: &Fixture) -> i64 {
    let selector = fixture.git(&["reflog", "-1", "--date=unix", "--format=%gd"]);
    let at = selector.trim().rsplit_once("@{").and_then(|(_, rest)| rest.strip_suffix('}')).expect("a time");
    at.parse::<i64>().expect("seconds") + 3600
}

fn write_commit(fixture: &Fixture, file: &str, text: &str, message: &str) {
    let path = fixture.path().join(file);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    std::fs::write(path, text).expect("write");
    fixture.git(&["add", file]);
    fixture.git(&["commit", "-q", "-m", message]);
}

#[test]
fn a_stopped_rebase_is_answered_with_its_regions_and_progress() {
    // A rebase stopped on a text conflict, two more commits to replay.
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    write_commit(&fixture, "one.txt", "a\nb\nc\n", "one");
    write_commit(&fixture, "two.txt", "x\ny\nz\n", "two");
    fixture.git(&["checkout", "-q", "-b", "topic"]);
    write_commit(&fixture, "one.txt", "a\ntopic\nc\n", "topic: one");
    write_commit(&fixture, "two.txt", "x\ntopic\nz\n", "topic: two");
    write_commit(&fixture, "later.txt", "later\n", "topic: later");
    fixture.git(&["checkout", "-q", "main"]);
    std::fs::write(fixture.path().join("one.txt"), "a\nmain\nc\n").expect("write");
    fixture.git(&["add", "one.txt"]);
    write_commit(&fixture, "two.txt", "x\nmain\nz\n", "main: one and two");
    fixture.git(&["checkout", "-q", "topic"]);
    assert!(!fixture.git_raw(&["rebase", "main"]).status.success(), "the rebase stops");
    let engine = engine_for(&fixture);
    let before = fluxgit_fixtures::tree_digest(fixture.root());
    let full = brief_of(&engine, fixture.path(), clock(&fixture));
    assert_eq!(before, fluxgit_fixtures::tree_digest(fixture.root()), "the brief changed the repository");
    let read = full.data.conflict.as_ref().expect("the conflict is in the brief");
    let unmerged = fixture.git(&["diff", "--name-only", "--diff-filter=U"]);
    let files: Vec<&str> = read.files.iter().map(|file| file.path.as_str()).collect();
    assert_eq!(files, unmerged.lines().collect::<Vec<_>>());
    // The regions are conflict.read's, which its own oracle checks against `git diff`.
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let options = fluxgit_engine::conflict::read::Options::default();
    let alone = engine.conflict_read(&repo, &options, usize::MAX, &mut |_| 0).expect("conflict.read").data;
    for (ours, theirs) in read.files.iter().zip(&alone.files) {
        assert_eq!(ours.work_tree.regions, theirs.work_tree.regions, "{}", ours.path);
    }
    let text = text_of(&full);
    // Every line between the markers of the work-tree file is shown.
    for path in unmerged.lines() {
        let content = String::from_utf8_lossy(&std::fs::read(fixture.path().join(path)).expect("read")).into_owned();
        let mut inside = false;
        for line in content.lines() {
            inside |= line.starts_with("<<<<<<<");
            if inside {
                assert!(text.contains(line), "{path}: {line:?} not in {text}");
            }
            inside &= !line.starts_with(">>>>>>>");
        }
    }
    // Progress as `git status` counts it, how to go on and back out, the commit being replayed.
    let status = fixture.git(&["status"]);
    let done = status.lines().find_map(|line| line.split_once(" done)")).map(|(head, _)| head.rsplit('(').next());
    let done = done.flatten().expect("git status counts the commands done");
    assert!(text.lines().next().is_some() && text.contains(&format!(", {done} done")), "{done} in {text}");
    assert!(text.contains("git rebase --continue") && text.contains("git rebase --abort"), "{text}");
    let replayed = fixture.git(&["log", "-1", "--format=%h %s", "REBASE_HEAD"]);
    let (sha, subject) = replayed.trim().split_once(' ').expect("sha and subject");
    assert!(text.contains(&format!("theirs {sha}")) || text.contains(sha), "{sha} in {text}");
    assert!(text.contains(subject), "{subject} in {text}");
    // The hint to conflict.read stays in the JSON, and leaves the text while the regions are whole.
    assert!(full.data.hints.iter().any(|hint| hint.kind == "conflicts"), "{:?}", full.data.hints);
    assert!(!text.contains("-> conflict_read"), "{text}");
    // A budget that cuts the regions brings the hint back, with the cut said.
    let total =
        full.data.conflict.as_ref().map_or(0, |read| read.files.iter().map(|f| f.work_tree.regions.len()).sum());
    let options = brief::Options { now: clock(&fixture), ..brief::Options::default() };
    let mut measure = |candidate: &Budgeted<brief::Brief>| {
        let shown: usize = candidate
            .data
            .conflict
            .as_ref()
            .map_or(0, |read| read.files.iter().map(|f| f.work_tree.regions.len()).sum());
        if shown == total { 1_000 } else { 0 }
    };
    let cut = engine.brief(&repo, &options, 500, &mut measure).expect("cut brief");
    let cut_text = text_of(&cut);
    assert!(cut_text.contains("-> conflict_read") && cut_text.contains("more marker regions"), "{cut_text}");
}

#[test]
fn commits_lost_to_a_reset_are_named_with_their_recovery() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    for idx in 1..=3 {
        write_commit(&fixture, &format!("lost-{idx}.txt"), "lost\n", &format!("work: lost commit {idx}"));
    }
    fixture.git(&["reset", "-q", "--hard", "HEAD~3"]);
    let engine = engine_for(&fixture);
    let full = brief_of(&engine, fixture.path(), clock(&fixture));
    let lost = full.data.lost.first().expect("the lost commits are in the brief");
    assert_eq!((lost.branch.as_str(), lost.action.as_str(), lost.more), ("main", "reset", 0));
    let old = fixture.git(&["rev-parse", "main@{1}"]);
    let expected = fixture.git(&["log", "--format=%h %s", old.trim(), "--not", "--all"]);
    assert_eq!(lost.commits, expected.lines().collect::<Vec<_>>());
    let text = text_of(&full);
    assert!(text.contains("main lost 3 commits (reset) no ref holds: git merge --ff-only "), "{text}");
    assert!(full.data.hints.iter().any(|hint| hint.kind == "dropped"), "the JSON keeps the hint");
    assert!(!text.contains("-> repo_reflog"), "{text}");
    // The command, run by git, puts every lost commit back on main, which has not moved since.
    let words: Vec<&str> = lost.command.split_whitespace().collect();
    assert_eq!(&words[..3], ["git", "merge", "--ff-only"]);
    fixture.git(&words[1..]);
    assert_eq!(fixture.git(&["rev-parse", "main"]), old);
    let after = brief_of(&engine, fixture.path(), clock(&fixture));
    assert!(after.data.lost.is_empty(), "a branch holds them now: {:?}", after.data.lost);
}

#[test]
fn a_parent_rebased_under_the_branch_is_answered_with_the_rebase_onto() {
    let fixture = crate::topology::parent_rebased_under_child(false);
    let engine = engine_for(&fixture);
    let full = brief_of(&engine, fixture.path(), clock(&fixture));
    let moved = full.data.parent_moved.as_ref().expect("the rebased parent is in the brief");
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let stack = engine.branch_stack(&repo, &fluxgit_engine::branch_stack::Options::default()).expect("stack");
    assert_eq!(Some(moved), stack.parent_moved.as_ref(), "the brief says what repo.branchStack says");
    let fork_point = fixture.git(&["merge-base", "--fork-point", "parent", "child"]);
    let short = fixture.git(&["rev-parse", "--short", fork_point.trim()]);
    assert_eq!(moved.command, format!("git rebase --onto parent {} child", short.trim()));
    let text = text_of(&full);
    assert!(text.contains(&format!("{}: clean", moved.command)), "{text}");
    assert!(!text.contains("-> repo_branchStack"), "{text}");
}

#[test]
fn the_owners_of_the_changed_files_are_grouped() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let rules = [("*", "@all"), ("/net/", "@net @alice"), ("/process/", "@proc")];
    let file: String = rules.iter().map(|(pattern, owners)| format!("{pattern} {owners}\n")).collect();
    write_commit(&fixture, ".github/CODEOWNERS", &file, "ci: owners");
    write_commit(&fixture, "net/tcp.rs", "tcp\n", "net: tcp");
    write_commit(&fixture, "net/udp.rs", "udp\n", "net: udp");
    std::fs::write(fixture.path().join("net/tcp.rs"), "tcp changed\n").expect("write");
    std::fs::write(fixture.path().join("net/udp.rs"), "udp changed\n").expect("write");
    std::fs::write(fixture.path().join("notes.txt"), "new\n").expect("write");
    let engine = engine_for(&fixture);
    let full = brief_of(&engine, fixture.path(), clock(&fixture));
    // The oracle: each path `git status` lists, owned by the last rule matching it.
    let status = fixture.git(&["status", "--porcelain"]);
    let mut expected: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for line in status.lines() {
        let path = &line[3..];
        let owners = rules
            .iter()
            .rev()
            .find(|(pattern, _)| *pattern == "*" || path.starts_with(pattern.trim_start_matches('/')))
            .map(|(_, owners)| owners.split(' ').map(str::to_owned).collect::<Vec<_>>())
            .expect("`*` matches");
        match expected.iter_mut().find(|(group, _)| *group == owners) {
            Some((_, files)) => files.push(path.to_owned()),
            None => expected.push((owners, vec![path.to_owned()])),
        }
    }
    expected.sort_by_key(|(_, files)| std::cmp::Reverse(files.len()));
    let got: Vec<(Vec<String>, Vec<String>)> =
        full.data.owners.iter().map(|group| (group.owners.clone(), group.files.clone())).collect();
    assert_eq!(got, expected);
    let text = text_of(&full);
    assert!(text.contains("owners @net @alice: net/tcp.rs net/udp.rs"), "{text}");
    assert!(full.data.hints.iter().any(|hint| hint.kind == "owners"), "the JSON keeps the hint");
    assert!(!text.contains("-> repo_scope"), "{text}");
}

#[test]
fn a_folder_of_checkouts_is_answered_with_their_radar() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let folder = fixture.root().join("src");
    std::fs::create_dir_all(&folder).expect("folder");
    let clone = |name: &str| {
        let path = folder.join(name);
        fixture.git(&["clone", "-q", fixture.path().to_str().expect("utf-8"), path.to_str().expect("utf-8")]);
        path
    };
    let (clean, dirty, other) = (clone("one"), clone("two"), clone("three"));
    std::fs::write(dirty.join("scratch.txt"), "new\n").expect("write");
    fixture.git_in(&other, &["checkout", "-q", "--detach", "HEAD"]);
    let engine = engine_for(&fixture);
    let repo_path = folder.canonicalize().expect("exists");
    let repo_path = repo_path.to_str().expect("utf-8");
    assert!(engine.resolve(repo_path).is_err(), "the folder is no repository");
    let read = engine.folder_brief(repo_path, clock(&fixture), usize::MAX, &mut |_| 0).expect("folder brief");
    let radar = &read.data.fleet;
    assert_eq!(radar.repositories, 3);
    for (path, state) in [(&clean, "clean"), (&dirty, "dirty"), (&other, "detached")] {
        // git agrees on each checkout's state.
        let porcelain = fixture.git_in(path, &["status", "--porcelain=v2", "--branch"]);
        let git_state = if porcelain.contains("# branch.head (detached)") {
            "detached"
        } else if porcelain.lines().any(|line| !line.starts_with('#')) {
            "dirty"
        } else {
            "clean"
        };
        assert_eq!(git_state, state);
        let root = path.canonicalize().expect("exists").display().to_string();
        let entry = radar.queue.iter().find(|entry| entry.repo_path == root).expect("listed");
        assert_eq!(serde_json::to_value(entry.state).expect("state"), state, "{root}");
    }
    let text = render::folder_brief(&read, &TextOptions::default());
    assert!(text.starts_with("3 repositories: "), "{text}");
    assert_eq!(text.lines().nth(1), Some(format!("scanned {repo_path}: 3 checkouts within 4 levels").as_str()));
    assert!(text.lines().any(|line| line.starts_with("clean ") && line.ends_with(": one")), "{text}");
    // A folder with no checkout below it is still no repository.
    let empty = fixture.root().join("empty");
    std::fs::create_dir_all(&empty).expect("folder");
    let error = engine.folder_brief(empty.to_str().expect("utf-8"), clock(&fixture), usize::MAX, &mut |_| 0);
    assert!(error.is_err_and(|error| error.to_string().contains("holds no checkout")));
}

/// Issue 52: a stopped rebase says what it replays onto, as `git status` does (`interactive rebase in progress;
/// onto 1568876`), with the branch pointing there (a local one first, else a remote-tracking one), and its text
/// says once which side is ours (the new base) and which theirs (the commit being replayed).
#[test]
fn a_stopped_rebase_says_what_it_replays_onto_and_which_side_is_ours() {
    let fixture = fluxgit_fixtures::build(Scenario::RebaseStopped);
    let engine = engine_for(&fixture);
    let onto_of_git_status = |fixture: &Fixture| -> String {
        let status = fixture.git(&["status"]);
        let onto = status.lines().find_map(|line| line.split_once("; onto ")).map(|(_, sha)| sha.trim().to_owned());
        onto.unwrap_or_else(|| panic!("git status names the onto commit: {status}"))
    };
    let onto = onto_of_git_status(&fixture);
    assert_eq!(fixture.git(&["rev-parse", "--short", "main"]).trim(), onto, "the fixture rebases onto main");
    let full = brief_of(&engine, fixture.path(), clock(&fixture));
    assert_eq!(full.data.head.rebasing.as_deref(), Some("feature/parser"));
    assert_eq!(full.data.head.onto, Some(format!("{onto} main")));
    let text = text_of(&full);
    let first = text.lines().find(|line| line.starts_with("rebase in progress")).expect("the operation line");
    assert!(first.starts_with(&format!("rebase in progress (rebasing feature/parser) onto {onto} main")), "{text}");
    let theirs = text.lines().find(|line| line.starts_with("theirs ")).expect("the theirs line");
    let head = fixture.git(&["rev-parse", "--short=12", "HEAD"]);
    assert!(theirs.contains("the commit being replayed"), "{theirs}");
    assert!(theirs.contains(&format!("; ours {} (HEAD: the new base", head.trim())), "{theirs}");
    assert_eq!(text.matches("ours ").count(), 1, "said once: {text}");
    let json = serde_json::to_value(&full.data).expect("json");
    assert_eq!(json["head"]["onto"], format!("{onto} main"));

    // Onto a commit only a remote-tracking branch points at, then onto a commit no branch points at.
    fixture.git(&["rebase", "--abort"]);
    fixture.git(&["checkout", "-q", "main"]);
    write_commit(&fixture, "later.txt", "later\n", "chore: main moves on");
    fixture.git(&["checkout", "-q", "--detach", "main"]);
    write_commit(&fixture, "loose.txt", "loose\n", "chore: on no branch");
    let loose = fixture.git(&["rev-parse", "HEAD"]).trim().to_owned();
    fixture.git(&["checkout", "-q", "feature/parser"]);
    for (target, named) in [("origin/main", Some("origin/main")), (loose.as_str(), None)] {
        let target_sha = fixture.git(&["rev-parse", target]).trim().to_owned();
        assert!(!fixture.git_raw(&["rebase", &target_sha]).status.success(), "the rebase onto {target} stops");
        let onto = onto_of_git_status(&fixture);
        let expected = match named {
            Some(branch) => format!("{onto} {branch}"),
            None => onto.clone(),
        };
        let brief = brief_of(&engine, fixture.path(), clock(&fixture));
        assert_eq!(brief.data.head.onto.as_deref(), Some(expected.as_str()), "{target}");
        assert!(text_of(&brief).contains(&format!(" onto {expected},")), "{target}: {}", text_of(&brief));
        fixture.git(&["rebase", "--abort"]);
    }
}
