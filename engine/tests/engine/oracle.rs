//! Engine results checked against the git CLI on every fixture scenario: HEAD, upstream, ahead/behind, exact
//! counts and paths, stashes, recent commits, refs and submodules; and the repository byte-identical afterwards.

use crate::common;

#[path = "oracle/abbrev.rs"]
mod abbrev;
#[path = "oracle/conflict.rs"]
mod conflict;
#[path = "oracle/peel.rs"]
mod peel;
#[path = "oracle/tag_order.rs"]
mod tag_order;

use std::collections::BTreeSet;
use std::path::Path;

use common::{engine_for, measure};
use fluxgit_engine::facets::submodules::SubmoduleState;
use fluxgit_engine::{brief, refs, status};
use fluxgit_fixtures::{Fixture, Scenario};

/// Large enough that nothing is cut.
const UNLIMITED: usize = 1_000_000;

struct Reads {
    brief: brief::Brief,
    status: status::Report,
    refs: refs::Report,
}

/// Runs the three reads on `path`, checking that the fixture's root is byte-identical afterwards.
fn read_all(fixture: &Fixture, path: &Path) -> Reads {
    let before = fluxgit_fixtures::tree_digest(fixture.root());
    let engine = engine_for(fixture);
    let repo = engine.resolve(path.to_str().expect("utf-8 temp path")).expect("resolves");
    let options = brief::Options { recent_commits: 20, ..brief::Options::default() };
    let reads = Reads {
        brief: engine.brief(&repo, &options, UNLIMITED, &mut measure).expect("brief").data,
        status: engine.status(&repo, UNLIMITED, &mut measure).expect("status").data,
        refs: engine.refs(&repo, UNLIMITED, &mut measure).expect("refs").data,
    };
    drop(repo);
    let after = fluxgit_fixtures::tree_digest(fixture.root());
    assert_eq!(before, after, "{}: reads changed the repository", fixture.scenario().name());
    if let Some(traps) = fixture.traps() {
        assert!(traps.sprung().is_empty(), "a repository-configured program ran: {:?}", traps.sprung());
    }
    reads
}

/// What `git status --porcelain=v2 -z` says (untracked files as the repository configures them), paths as lossy UTF-8.
#[derive(Debug, Default, PartialEq, Eq)]
struct GitStatus {
    staged: BTreeSet<String>,
    unstaged: BTreeSet<String>,
    untracked: BTreeSet<String>,
    conflicted: BTreeSet<String>,
}

fn git_status(fixture: &Fixture, dir: &Path) -> GitStatus {
    // The oracle must not spring the traps either: disable fsmonitor for this one command.
    let output = fixture.git_raw_in(dir, &["-c", "core.fsmonitor=", "status", "--porcelain=v2", "-z"]);
    assert!(output.status.success(), "git status failed: {}", String::from_utf8_lossy(&output.stderr));
    let mut out = GitStatus::default();
    let mut records = output.stdout.split(|b| *b == 0).filter(|r| !r.is_empty());
    while let Some(record) = records.next() {
        let text = String::from_utf8_lossy(record).into_owned();
        let fields: Vec<&str> = text.splitn(11, ' ').collect();
        match fields[0] {
            "1" | "2" => {
                let path_field = if fields[0] == "1" { 8 } else { 9 };
                let path = text.splitn(path_field + 1, ' ').nth(path_field).expect("path").to_owned();
                let xy = fields[1].as_bytes();
                if xy[0] != b'.' {
                    out.staged.insert(path.clone());
                }
                if xy[1] != b'.' {
                    out.unstaged.insert(path);
                }
                if fields[0] == "2" {
                    records.next(); // the rename source
                }
            }
            "u" => {
                out.conflicted.insert(text.splitn(11, ' ').nth(10).expect("path").to_owned());
            }
            "?" => {
                out.untracked.insert(text[2..].to_owned());
            }
            other => panic!("unexpected porcelain record {other:?}"),
        }
    }
    out
}

fn engine_status(report: &status::Report) -> GitStatus {
    GitStatus {
        staged: report.staged.iter().map(|c| c.path.clone()).collect(),
        unstaged: report.unstaged.iter().map(|c| c.path.clone()).collect(),
        untracked: report.untracked.iter().cloned().collect(),
        conflicted: report.conflicted.iter().cloned().collect(),
    }
}

fn git_line(fixture: &Fixture, dir: &Path, args: &[&str]) -> Option<String> {
    let output = fixture.git_raw_in(dir, args);
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Checks every fact the engine reports for the work tree at `dir` against git.
fn check(fixture: &Fixture, dir: &Path) -> Reads {
    let name = fixture.scenario().name();
    let reads = read_all(fixture, dir);
    let brief = &reads.brief;

    // HEAD.
    let branch = git_line(fixture, dir, &["symbolic-ref", "-q", "--short", "HEAD"]);
    let sha = git_line(fixture, dir, &["rev-parse", "-q", "--verify", "HEAD"]);
    let short = git_line(fixture, dir, &["rev-parse", "-q", "--short", "--verify", "HEAD"]);
    assert_eq!(brief.head.branch, branch, "{name}: branch");
    assert_eq!(brief.head.sha, short, "{name}: sha abbreviated as git does");
    assert_eq!(brief.head.detached, branch.is_none(), "{name}: detached");
    let rebasing = git_line(fixture, dir, &["rev-parse", "--git-path", "rebase-merge/head-name"])
        .and_then(|path| std::fs::read_to_string(dir.join(path)).ok())
        .and_then(|name| name.trim().strip_prefix("refs/heads/").map(str::to_owned));
    assert_eq!(brief.head.rebasing, rebasing, "{name}: branch being rebased");
    assert_eq!(brief.head.unborn, sha.is_none(), "{name}: unborn");
    assert_eq!(reads.status.head.sha, short, "{name}: status sha abbreviated as git does");

    // Upstream and ahead/behind.
    let upstream = git_line(fixture, dir, &["rev-parse", "--abbrev-ref", "@{upstream}"]);
    assert_eq!(brief.head.upstream.is_some() && !brief.head.upstream_gone, upstream.is_some(), "{name}: upstream");
    if let Some(upstream) = upstream {
        assert_eq!(brief.head.upstream.as_deref(), Some(upstream.as_str()), "{name}: upstream name");
        let counts =
            git_line(fixture, dir, &["rev-list", "--left-right", "--count", "@{upstream}...HEAD"]).expect("counts");
        let (behind, ahead) = counts.split_once('\t').expect("two counts");
        assert_eq!(brief.head.behind.to_string(), behind, "{name}: behind");
        assert_eq!(brief.head.ahead.to_string(), ahead, "{name}: ahead");
    }

    // Work tree: exact paths and counts.
    let expected = git_status(fixture, dir);
    assert_eq!(engine_status(&reads.status), expected, "{name}: status paths");
    let counts = brief.working_tree;
    assert_eq!(counts.staged, expected.staged.len(), "{name}: staged");
    assert_eq!(counts.unstaged, expected.unstaged.len(), "{name}: unstaged");
    assert_eq!(counts.untracked, expected.untracked.len(), "{name}: untracked");
    assert_eq!(counts.conflicted, expected.conflicted.len(), "{name}: conflicted");
    assert_eq!(counts, *reads.status.counts, "{name}: brief and status agree");

    // Stashes and recent commits.
    let stash_list = git_line(fixture, dir, &["stash", "list", "--format=%h"]).unwrap_or_default();
    let stash_shas: Vec<&str> = stash_list.lines().collect();
    assert_eq!(brief.stashes.count, stash_shas.len(), "{name}: stash count");
    let engine_stashes: Vec<&str> = reads.refs.stashes.iter().map(|s| s.sha.as_str()).collect();
    assert_eq!(engine_stashes, stash_shas, "{name}: stash shas");
    let log = git_line(fixture, dir, &["log", "-n", "20", "--format=%h %s"]).unwrap_or_default();
    let expected_log: Vec<(String, String)> = log
        .lines()
        .map(|line| {
            let (sha, subject) = line.split_once(' ').unwrap_or((line, ""));
            (sha.to_owned(), subject.to_owned())
        })
        .collect();
    let engine_log: Vec<(String, String)> =
        brief.recent_commits.iter().map(|c| (c.sha.clone(), c.subject.clone())).collect();
    assert_eq!(engine_log, expected_log, "{name}: recent commits");

    // Refs.
    let for_each = |pattern: &str, format: &str| -> Vec<String> {
        git_line(fixture, dir, &["for-each-ref", &format!("--format={format}"), pattern])
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let branches: Vec<String> = reads.refs.branches.iter().map(|b| format!("{} {}", b.name, b.sha)).collect();
    assert_eq!(branches, for_each("refs/heads", "%(refname:short) %(objectname:short)"), "{name}: branches");
    let tags: Vec<String> = reads.refs.tags.iter().map(|t| format!("{} {}", t.name, t.sha)).collect();
    let mut git_tags: Vec<(Option<i64>, String)> =
        for_each("refs/tags", "%(refname:short) %(objectname:short) %(*objectname:short)")
            .into_iter()
            .map(|line| {
                let parts: Vec<&str> = line.split(' ').collect();
                let date = git_line(fixture, dir, &["log", "-1", "--format=%ct", &format!("{}^{{commit}}", parts[0])])
                    .and_then(|seconds| seconds.parse().ok());
                (date, format!("{} {}", parts[0], if parts[2].is_empty() { parts[1] } else { parts[2] }))
            })
            .collect();
    // Newest tagged commit first, ties in name order (`for-each-ref` lists by name, the sort is stable).
    git_tags.sort_by(|(a, _), (b, _)| b.cmp(a));
    let git_tags: Vec<String> = git_tags.into_iter().map(|(_, tag)| tag).collect();
    assert_eq!(tags, git_tags, "{name}: tags");
    for branch in &reads.refs.branches {
        let track = git_line(
            fixture,
            dir,
            &["for-each-ref", "--format=%(upstream:short)|%(upstream:track)", &format!("refs/heads/{}", branch.name)],
        )
        .expect("for-each-ref");
        let (upstream, track) = track.split_once('|').expect("separator");
        match &branch.upstream {
            None => assert_eq!(upstream, "", "{name}: {} has no upstream", branch.name),
            Some(engine) => {
                assert_eq!(engine.name, upstream, "{name}: {} upstream", branch.name);
                assert_eq!(engine.gone, track == "[gone]", "{name}: {} gone", branch.name);
                let mut expected_track = Vec::new();
                if engine.ahead > 0 {
                    expected_track.push(format!("ahead {}", engine.ahead));
                }
                if engine.behind > 0 {
                    expected_track.push(format!("behind {}", engine.behind));
                }
                if !engine.gone {
                    let expected = if expected_track.is_empty() {
                        String::new()
                    } else {
                        format!("[{}]", expected_track.join(", "))
                    };
                    assert_eq!(track, expected, "{name}: {} track", branch.name);
                }
            }
        }
    }
    reads
}

#[test]
fn clean() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let reads = check(&fixture, fixture.path());
    assert!(reads.brief.working_tree.clean);
    assert_eq!(reads.brief.head.upstream.as_deref(), Some("origin/main"));
    assert_eq!(reads.brief.conventions.default_branch.as_deref(), Some("main"));
    assert!(reads.brief.hints.is_empty(), "a clean repo needs no hint: {:?}", reads.brief.hints);
    assert_eq!(reads.refs.remotes.len(), 1);
    assert!(!reads.brief.working_tree.bare);
    // The bare origin has no work tree: it says so, with zero counts, and its refs are still read.
    let origin = fixture.origin().expect("origin").to_path_buf();
    let bare = read_all(&fixture, &origin);
    assert!(bare.brief.working_tree.bare && bare.brief.working_tree.clean);
    assert_eq!(bare.status.counts.staged + bare.status.counts.untracked, 0);
    assert_eq!(bare.brief.head.sha, reads.brief.head.sha, "origin/main equals main");
}

#[test]
fn dirty_with_non_ascii_paths_and_non_utf8_content() {
    let fixture = fluxgit_fixtures::build(Scenario::Dirty);
    let reads = check(&fixture, fixture.path());
    // `status.showUntrackedFiles` is unset: the wholly untracked directory is one entry, as `git status` shows it.
    assert!(reads.status.untracked.iter().any(|p| p == "ünïcode/"), "{:?}", reads.status.untracked);
    assert!(reads.status.unstaged.iter().any(|c| c.path == "docs/café menu.md"));
    assert!(reads.status.unstaged.iter().any(|c| c.path == "data/legacy.txt"));
    let text = serde_json::to_string(&reads.status).expect("serialises");
    assert!(!text.contains("\\303"), "git's octal quoting leaked: {text}");
    // The clean history has a CODEOWNERS file: who owns the changes comes first, then the dirty default branch.
    let kinds: Vec<&str> = reads.brief.hints.iter().map(|h| h.kind).collect();
    assert_eq!(kinds, ["owners", "uncommittedOnDefault"]);
    // Without a gateway no hint names a write proposal; the person's command is in `run`.
    assert_eq!(reads.brief.hints[1].tool, "worktree_changes");
    assert!(reads.brief.hints[1].run.contains("git switch -c"), "{:?}", reads.brief.hints[1]);
}

#[test]
fn unborn_branch() {
    let fixture = fluxgit_fixtures::build(Scenario::Unborn);
    let reads = check(&fixture, fixture.path());
    assert!(reads.brief.head.unborn);
    assert_eq!(reads.brief.head.branch.as_deref(), Some("main"));
    assert!(reads.brief.recent_commits.is_empty());
}

#[test]
fn detached_head_at_tag() {
    let fixture = fluxgit_fixtures::build(Scenario::DetachedTag);
    let reads = check(&fixture, fixture.path());
    assert!(reads.brief.head.detached);
    assert_eq!(reads.brief.hints.first().map(|h| h.kind), Some("detached"));
    assert!(reads.refs.tags.iter().any(|t| t.name == "v1.0" && t.annotated));
}

#[test]
fn linked_worktree_and_subfolder() {
    let fixture = fluxgit_fixtures::build(Scenario::LinkedWorktree);
    let linked = fixture.linked_worktree().expect("linked worktree").to_path_buf();
    assert!(linked.join(".git").is_file(), "a linked worktree's .git is a file");
    let reads = check(&fixture, &linked);
    assert_eq!(reads.brief.head.branch.as_deref(), Some("feature"));
    check(&fixture, fixture.path());
    // A subfolder resolves to its repository's root.
    let engine = engine_for(&fixture);
    let repo = engine.resolve(fixture.path().join("src").to_str().expect("utf-8")).expect("resolves");
    assert_eq!(repo.location.root, fixture.path().canonicalize().expect("exists"));
}

#[test]
fn merge_stopped_on_conflicts() {
    let fixture = fluxgit_fixtures::build(Scenario::MergeConflict);
    let reads = check(&fixture, fixture.path());
    assert_eq!(reads.brief.operation_in_progress, Some(fluxgit_engine::facets::operation::Operation::Merge));
    assert_eq!(reads.status.conflicted, vec!["docs/guide.md", "src/main.c", "src/util.c"]);
    // One hint for the stopped merge: the conflicts, with what concludes or aborts the merge.
    let kinds: Vec<&str> = reads.brief.hints.iter().map(|h| h.kind).collect();
    assert_eq!(kinds, ["conflicts"]);
    let hint = &reads.brief.hints[0];
    assert_eq!(hint.tool, "conflict_read");
    assert!(hint.run.contains("git merge --abort") && hint.why.contains("docs/guide.md"), "{hint:?}");
}

#[test]
fn commits_dropped_from_a_branch_recently() {
    let fixture = fluxgit_fixtures::build(Scenario::RewrittenHistory);
    let engine = engine_for(&fixture);
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    // The reflog entry of the reset on `main` and what git says it dropped; the amend and the rebase rewrote
    // their commits onto the branches (same author and date), so they dropped nothing that is not still there.
    let log = fixture.git(&["log", "-g", "--date=unix", "--format=%gd %H %gs", "main"]);
    let (index, reset) =
        log.lines().enumerate().find(|(_, line)| line.contains(" reset: ")).expect("the reset in main's reflog");
    let selector = reset.split(' ').next().expect("selector");
    let at: i64 =
        selector.rsplit_once("@{").and_then(|(_, rest)| rest.strip_suffix('}')).expect("time").parse().expect("n");
    // The tip before the reset: the new tip of the entry below it.
    let old = log.lines().nth(index + 1).and_then(|line| line.split(' ').nth(1)).expect("the entry before").to_owned();
    let lost = fixture.git(&["rev-list", "--count", old.trim(), "--not", "--all"]);
    assert_eq!(lost.trim(), "2");
    let brief_at = |now: i64| {
        let options = brief::Options { now, ..brief::Options::default() };
        engine.brief(&repo, &options, usize::MAX, &mut |_| 0).expect("brief").data
    };
    let recent = brief_at(at + 3600);
    let dropped: Vec<_> = recent.hints.iter().filter(|hint| hint.kind == "dropped").collect();
    assert_eq!(dropped.len(), 1, "{:?}", recent.hints);
    assert_eq!(dropped[0].tool, "repo_reflog");
    assert_eq!(dropped[0].arguments.get("refName").and_then(|name| name.as_str()), Some("main"));
    assert!(
        dropped[0].why.starts_with("main dropped 2 commits") && dropped[0].why.contains("(reset)"),
        "{:?}",
        dropped[0]
    );
    let later = brief_at(at + 8 * 86_400);
    assert!(later.hints.iter().all(|hint| hint.kind != "dropped"), "outside the window: {:?}", later.hints);
}

#[test]
fn ahead_and_behind_upstream() {
    let fixture = fluxgit_fixtures::build(Scenario::AheadBehind);
    let reads = check(&fixture, fixture.path());
    assert_eq!((reads.brief.head.ahead, reads.brief.head.behind), (2, 3));
    let hint = reads.brief.hints.iter().find(|h| h.kind == "behind").expect("behind hint");
    assert_eq!(hint.tool, "repo_conflictPreflight");
    let gone = reads.refs.branches.iter().find(|b| b.name == "chore/gone").expect("branch");
    assert!(gone.upstream.as_ref().is_some_and(|u| u.gone));
}

#[test]
fn fsmonitor_filters_and_hooks_never_run() {
    let fixture = fluxgit_fixtures::build(Scenario::FsMonitor);
    // `read_all` checks the markers and the digest; status must still see the changes through the trap config.
    let reads = check(&fixture, fixture.path());
    assert!(!reads.brief.working_tree.clean);
}

#[test]
fn submodules_initialised_uninitialised_and_drifted() {
    let fixture = fluxgit_fixtures::build(Scenario::Submodules);
    let reads = check(&fixture, fixture.path());
    let engine = engine_for(&fixture);
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    drop(repo);
    let expected =
        git_line(&fixture, fixture.path(), &["submodule", "status", "--recursive"]).expect("git submodule status");
    let mut git_states: Vec<(String, SubmoduleState)> = expected
        .lines()
        .map(|line| {
            let state = match line.chars().next() {
                Some('+') => SubmoduleState::Drifted,
                Some('-') => SubmoduleState::Uninitialized,
                Some('U') => SubmoduleState::Conflict,
                _ => SubmoduleState::Clean,
            };
            let path = line[1..].split(' ').nth(1).expect("path").to_owned();
            (path, state)
        })
        .collect();
    git_states.sort_by(|a, b| a.0.cmp(&b.0));
    let summary = &reads.brief.submodules;
    assert_eq!(summary.total, git_states.len());
    let count = |state| git_states.iter().filter(|(_, s)| *s == state).count();
    assert_eq!(summary.clean, count(SubmoduleState::Clean));
    assert_eq!(summary.drifted, count(SubmoduleState::Drifted));
    assert_eq!(summary.uninitialized, count(SubmoduleState::Uninitialized));
    let attention: Vec<String> = git_states
        .iter()
        .filter(|(_, s)| *s != SubmoduleState::Clean)
        .map(|(path, s)| {
            format!("{path} ({})", if *s == SubmoduleState::Drifted { "drifted" } else { "uninitialized" })
        })
        .collect();
    assert_eq!(summary.attention, attention);
    assert!(reads.brief.hints.iter().any(|h| h.kind == "submodules"));
}

#[test]
fn stashes_newest_first() {
    let fixture = fluxgit_fixtures::build(Scenario::Stashes);
    let reads = check(&fixture, fixture.path());
    assert_eq!(reads.brief.stashes.count, 3);
    assert!(reads.refs.stashes[0].message.contains("wip: scratch notes"));
}

#[test]
fn conventions_of_many_branches() {
    let fixture = fluxgit_fixtures::build(Scenario::ManyBranches);
    let reads = check(&fixture, fixture.path());
    assert_eq!(reads.brief.conventions.branch_prefixes, vec!["feature/", "fix/", "chore/"]);
    // The last 50 subjects reachable from main are main's 26 commits only; recompute from git.
    let log = git_line(&fixture, fixture.path(), &["log", "-n", "50", "--format=%s"]).expect("log");
    let subjects: Vec<&str> = log.lines().collect();
    let conventional = subjects.iter().filter(|s| fluxgit_engine::facets::conventions::is_conventional(s)).count();
    let expected = (conventional as f64 / subjects.len() as f64 * 100.0).round() / 100.0;
    assert_eq!(reads.brief.conventions.conventional_commit_ratio, Some(expected));
}

#[test]
fn revisions_are_never_options() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let engine = engine_for(&fixture);
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let target = fixture.root().join("x");
    let option = format!("--output={}", target.display());
    for (spec, reason) in [
        (option.as_str(), fluxgit_engine::InvalidReason::InvalidRevision),
        ("-n", fluxgit_engine::InvalidReason::InvalidRevision),
        ("main\n", fluxgit_engine::InvalidReason::InvalidRevision),
        ("ma\u{7}in", fluxgit_engine::InvalidReason::InvalidRevision),
        ("", fluxgit_engine::InvalidReason::InvalidRevision),
        ("no-such-branch", fluxgit_engine::InvalidReason::UnknownRevision),
    ] {
        match engine.resolve_commit(&repo, spec) {
            Err(fluxgit_engine::Error::Invalid { reason: got, .. }) => assert_eq!(got, reason, "{spec:?}"),
            other => panic!("{spec:?}: {other:?}"),
        }
    }
    assert!(!target.exists(), "an option was executed");
    let tag = fixture.git(&["rev-parse", "v1.0^{commit}"]);
    assert_eq!(engine.resolve_commit(&repo, "v1.0").expect("tag"), tag.trim());
    let head = fixture.git(&["rev-parse", "HEAD~1"]);
    assert_eq!(engine.resolve_commit(&repo, "HEAD~1").expect("ancestor"), head.trim());
}

/// Staged changes are read through the index's cache tree (only directories it does not vouch for are compared):
/// edits deep in one directory, a rename across directories, a deletion, a new directory, an intent-to-add file and
/// a mode change, next to untouched directories, must give what `git status` and `git diff --cached -M` give.
#[test]
fn staged_changes_next_to_untouched_directories() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let path = fixture.path();
    for dir in ["a/b/c", "a/b/d", "e", "f/g"] {
        std::fs::create_dir_all(path.join(dir)).expect("mkdir");
        for idx in 0..3 {
            let text = format!("{dir} file {idx}\n").repeat(20);
            std::fs::write(path.join(dir).join(format!("f{idx}.txt")), text).expect("write");
        }
    }
    fixture.git(&["add", "-A"]);
    fixture.git(&["commit", "-q", "-m", "directories"]);
    std::fs::write(path.join("a/b/c/f0.txt"), "changed\n").expect("write");
    fixture.git(&["add", "a/b/c/f0.txt"]);
    fixture.git(&["mv", "a/b/d/f1.txt", "f/g/moved.txt"]);
    fixture.git(&["rm", "-q", "e/f2.txt"]);
    std::fs::create_dir_all(path.join("h")).expect("mkdir");
    std::fs::write(path.join("h/new.txt"), "new\n").expect("write");
    fixture.git(&["add", "h/new.txt"]);
    std::fs::write(path.join("f/g/later.txt"), "later\n").expect("write");
    fixture.git(&["add", "-N", "f/g/later.txt"]);
    fixture.git(&["update-index", "--chmod=+x", "a/b/d/f2.txt"]);
    // Writing the index's tree makes every cache-tree node valid again, those of the changed directories with ids
    // HEAD's tree does not have: they must be compared, not skipped.
    fixture.git(&["write-tree"]);
    let reads = check(&fixture, path);
    let ours: BTreeSet<String> = reads
        .status
        .staged
        .iter()
        .map(|change| match &change.from {
            Some(from) => format!("{:?} {from} -> {}", change.status, change.path),
            None => format!("{:?} {}", change.status, change.path),
        })
        .collect();
    let theirs: BTreeSet<String> = fixture
        .git(&["diff", "--cached", "-M", "--name-status"])
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            let kind = match &fields[0][..1] {
                "A" => "Added",
                "D" => "Deleted",
                "M" => "Modified",
                "R" => "Renamed",
                other => panic!("unexpected status {other}"),
            };
            match fields.len() {
                3 => format!("{kind} {} -> {}", fields[1], fields[2]),
                _ => format!("{kind} {}", fields[1]),
            }
        })
        .collect();
    // A mode change is `M` for git; the engine calls an executable bit flip a type change of the blob kind.
    let ours: BTreeSet<String> = ours.into_iter().map(|line| line.replace("TypeChange", "Modified")).collect();
    assert_eq!(ours, theirs);
    assert_eq!(ours.len(), 5, "{ours:?}");
}
