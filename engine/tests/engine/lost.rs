//! Issue 52: "lost" as git means it, and recoveries that recover. A commit is lost iff `git rev-list --all` does not
//! list it; every reflog movement of every fixture scenario and of reset, rebase, amend and `branch -D` scripts is
//! checked against that oracle, in `repo.reflog` (each dropped tip reported, none reachable) and in `repo.brief` (no
//! lost commit reachable). The command a recovery offers is run by git, and git checks that the branch then holds
//! the lost commits' changes.

use std::collections::HashSet;

use fluxgit_engine::{Budgeted, Engine, brief, reflog};
use fluxgit_fixtures::{Fixture, Scenario};

use crate::common::{engine_for, measure, repo_path};

const UNLIMITED: usize = 1_000_000;

fn write_commit(fixture: &Fixture, file: &str, text: &str, message: &str) {
    let path = fixture.path().join(file);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    std::fs::write(path, text).expect("write");
    fixture.git(&["add", file]);
    fixture.git(&["commit", "-q", "-m", message]);
}

/// An hour after the newest entry of HEAD's reflog (the fixtures' clock), or the system clock without one.
fn clock(fixture: &Fixture) -> i64 {
    let output = fixture.git_raw(&["reflog", "-1", "--date=unix", "--format=%gd"]);
    let selector = String::from_utf8_lossy(&output.stdout);
    let at = selector.trim().rsplit_once("@{").and_then(|(_, rest)| rest.strip_suffix('}'));
    at.and_then(|at| at.parse::<i64>().ok()).map_or_else(|| brief::Options::default().now, |at| at + 3600)
}

fn brief_of(engine: &Engine, fixture: &Fixture) -> Option<Budgeted<brief::Brief>> {
    let repo = engine.resolve(repo_path(fixture)).ok()?;
    let options = brief::Options { now: clock(fixture), ..brief::Options::default() };
    engine.brief(&repo, &options, usize::MAX, &mut |_| 0).ok()
}

fn reflog_of(engine: &Engine, fixture: &Fixture, name: &str) -> Option<reflog::Report> {
    let repo = engine.resolve(repo_path(fixture)).ok()?;
    engine.reflog(&repo, Some(name), 10_000, None, UNLIMITED, &mut measure).ok().map(|result| result.data)
}

/// `git rev-parse --verify <rev>^{commit}`, `None` when git finds no such commit.
fn full_sha(fixture: &Fixture, rev: &str) -> Option<String> {
    let output = fixture.git_raw(&["rev-parse", "--verify", "-q", &format!("{rev}^{{commit}}")]);
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// What the oracle saw over a set of repositories.
#[derive(Debug, Default)]
struct Tally {
    /// Reflog movements with an old tip, checked.
    movements: usize,
    /// Movements git says dropped commits (old tip unreachable from `--all`, not an ancestor of the new tip).
    dropped: usize,
    /// Recoveries `repo.reflog` reported.
    reported: usize,
    /// Lost commits `repo.brief` listed.
    brief_commits: usize,
    /// Reports of a commit `git rev-list --all` lists.
    false_lost: Vec<String>,
    /// Dropped tips without a report.
    missed: Vec<String>,
}

/// Every reflog movement of `fixture` (HEAD and each ref with a log) and its brief against `git rev-list --all`.
fn sweep(fixture: &Fixture, tally: &mut Tally) {
    let engine = engine_for(fixture);
    let all: HashSet<String> = match fixture.git_raw(&["rev-list", "--all"]) {
        output if output.status.success() => {
            String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect()
        }
        // A damaged repository git cannot walk: nothing to compare against.
        _ => return,
    };
    let label = format!("{:?}", fixture.scenario());
    let refs = String::from_utf8_lossy(&fixture.git_raw(&["for-each-ref", "--format=%(refname)"]).stdout).into_owned();
    let names = std::iter::once("HEAD").chain(refs.lines());
    for name in names {
        let log = fixture.git_dir().join("logs").join(name);
        let Ok(text) = std::fs::read_to_string(&log) else { continue };
        let Some(report) = reflog_of(&engine, fixture, name) else { continue };
        // Oldest line first in the file, newest first in the report.
        let lines: Vec<(&str, &str)> = text.lines().rev().map(|line| (&line[..40], &line[41..81])).collect();
        assert_eq!(report.entries.len(), lines.len(), "{label} {name}");
        for (entry, (old, new)) in report.entries.iter().zip(lines) {
            if old.bytes().all(|byte| byte == b'0') {
                continue;
            }
            tally.movements += 1;
            let exists = full_sha(fixture, old).is_some();
            let ancestor = fixture.git_raw(&["merge-base", "--is-ancestor", old, new]).status.success();
            let dropped = exists && !all.contains(old) && !ancestor;
            tally.dropped += usize::from(dropped);
            let at = format!("{label} {name}@{{{}}} {old}", entry.index);
            match &entry.recovery {
                Some(recovery) => {
                    tally.reported += 1;
                    if all.contains(old) {
                        tally.false_lost.push(at.clone());
                    }
                    for sha in &recovery.commits {
                        let full = full_sha(fixture, sha).expect("a listed lost commit git knows");
                        if all.contains(&full) {
                            tally.false_lost.push(format!("{at}: {sha}"));
                        }
                    }
                    let count = fixture.git(&["rev-list", "--count", old, "--not", "--all"]);
                    assert_eq!(recovery.lost_commits.to_string(), count.trim(), "{at}");
                }
                None if dropped => tally.missed.push(at),
                None => {}
            }
        }
    }
    if let Some(brief) = brief_of(&engine, fixture) {
        for lost in &brief.data.lost {
            for commit in &lost.commits {
                tally.brief_commits += 1;
                let sha = commit.split(' ').next().expect("a sha");
                let full = full_sha(fixture, sha).expect("a lost commit git knows");
                if all.contains(&full) {
                    tally.false_lost.push(format!("{label} brief {}: {commit}", lost.branch));
                }
            }
        }
    }
}

/// [`Scenario::Clean`] (its `main` pushed to `origin`) with `script` run on it.
fn scripted(script: impl FnOnce(&Fixture)) -> Fixture {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    script(&fixture);
    fixture
}

/// The scripts: commits dropped where a ref still holds them (origin, a tag, the stash, another worktree's HEAD),
/// and dropped for good by a reset, an amend, a rebase and `git branch -D`.
fn scripts() -> Vec<(&'static str, Fixture)> {
    vec![
        (
            "reset onto what origin holds",
            scripted(|fixture| {
                fixture.git(&["reset", "-q", "--hard", "HEAD~1"]);
            }),
        ),
        (
            "reset under a tag",
            scripted(|fixture| {
                write_commit(fixture, "kept.txt", "kept\n", "feat: tagged work");
                fixture.git(&["tag", "keep"]);
                fixture.git(&["reset", "-q", "--hard", "HEAD~1"]);
            }),
        ),
        (
            "reset under the stash",
            scripted(|fixture| {
                write_commit(fixture, "stashed.txt", "base\n", "feat: under the stash");
                std::fs::write(fixture.path().join("stashed.txt"), "edited\n").expect("write");
                fixture.git(&["stash", "-q"]);
                fixture.git(&["reset", "-q", "--hard", "HEAD~1"]);
            }),
        ),
        (
            "reset under another worktree's HEAD",
            scripted(|fixture| {
                write_commit(fixture, "held.txt", "held\n", "feat: held by a worktree");
                let other = fixture.root().join("other");
                fixture.git(&["worktree", "add", "-q", "--detach", other.to_str().expect("utf-8"), "HEAD"]);
                fixture.git(&["reset", "-q", "--hard", "HEAD~1"]);
            }),
        ),
        (
            "reset, amend, rebase, branch -D",
            scripted(|fixture| {
                for idx in 1..=2 {
                    write_commit(fixture, &format!("r{idx}.txt"), "r\n", &format!("feat: reset away {idx}"));
                }
                fixture.git(&["reset", "-q", "--hard", "HEAD~2"]);
                write_commit(fixture, "draft.md", "draft\n", "wip: draft");
                fixture.git(&["commit", "-q", "--amend", "-m", "docs: the draft"]);
                fixture.git(&["checkout", "-q", "-b", "topic", "HEAD~1"]);
                write_commit(fixture, "topic.txt", "topic\n", "feat(topic): work");
                fixture.git(&["rebase", "-q", "main"]);
                fixture.git(&["checkout", "-q", "-b", "gone", "main"]);
                write_commit(fixture, "gone.txt", "gone\n", "feat(gone): deleted with its branch");
                fixture.git(&["checkout", "-q", "main"]);
                fixture.git(&["branch", "-q", "-D", "gone"]);
            }),
        ),
        ("four dropped, then one on top", dropped_then_moved_on()),
    ]
}

/// `topic/lost` with four commits of its own dropped by `git reset --hard HEAD~4`, then one new commit on top.
fn dropped_then_moved_on() -> Fixture {
    scripted(|fixture| {
        fixture.git(&["checkout", "-q", "-b", "topic/lost"]);
        for idx in 1..=4 {
            write_commit(fixture, &format!("lost/{idx}.txt"), &format!("{idx}\n"), &format!("feat: lost work {idx}"));
        }
        fixture.git(&["reset", "-q", "--hard", "HEAD~4"]);
        write_commit(fixture, "after.txt", "after\n", "feat: after the reset");
    })
}

#[test]
fn no_commit_git_rev_list_all_lists_is_called_lost() {
    let mut tally = Tally::default();
    for scenario in Scenario::ALL {
        sweep(&fluxgit_fixtures::build(scenario), &mut tally);
    }
    for (_, fixture) in scripts() {
        sweep(&fixture, &mut tally);
    }
    eprintln!("lost oracle: {tally:?}");
    assert_eq!(tally.false_lost, Vec::<String>::new(), "reported lost, yet reachable from --all");
    assert_eq!(tally.missed, Vec::<String>::new(), "dropped, yet not reported");
    // Not vacuous: many movements, and drops of every scripted kind among them.
    assert!(tally.movements > 300 && tally.dropped >= 8 && tally.reported == tally.dropped, "{tally:?}");
    assert!(tally.brief_commits >= 4, "{tally:?}");
}

#[test]
fn a_commit_origin_a_tag_the_stash_or_a_worktree_holds_is_not_lost() {
    for (name, fixture) in scripts().into_iter().take(4) {
        let engine = engine_for(&fixture);
        let dropped = full_sha(&fixture, "main@{1}").expect("the reset's old tip");
        let holders = fixture.git(&["for-each-ref", "--contains", &dropped, "--format=%(refname)"]);
        let worktrees = fixture.git(&["worktree", "list", "--porcelain"]);
        assert!(!holders.trim().is_empty() || worktrees.contains(&dropped), "{name}: something holds {dropped}");
        let brief = brief_of(&engine, &fixture).expect("brief");
        assert_eq!(brief.data.lost, Vec::new(), "{name}");
        assert!(brief.data.hints.iter().all(|hint| hint.kind != "dropped"), "{name}: {:?}", brief.data.hints);
        for log in ["HEAD", "refs/heads/main"] {
            let report = reflog_of(&engine, &fixture, log).expect("reflog");
            assert!(report.entries.iter().all(|entry| entry.recovery.is_none()), "{name} {log}: {report:?}");
        }
    }
}

/// Runs a recovery `command` (git commands joined by ` && `, shell-quoted words without spaces) with git.
fn run(fixture: &Fixture, command: &str) {
    for part in command.split(" && ") {
        let words: Vec<String> = part.split(' ').map(|word| word.trim_matches('\'').to_owned()).collect::<Vec<_>>();
        assert_eq!(words[0], "git", "{command}");
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        fixture.git(&args);
    }
}

/// Whether `branch` holds every change of the commits `lost_tip` has and `base` lacks: `git cherry` marks each
/// of them `-` (an equivalent change is on the branch).
fn holds_changes(fixture: &Fixture, branch: &str, lost_tip: &str) -> bool {
    let cherry = fixture.git(&["cherry", branch, lost_tip]);
    !cherry.trim().is_empty() && cherry.lines().all(|line| line.starts_with("- "))
}

#[test]
fn lost_commits_of_a_branch_that_moved_on_are_cherry_picked_back() {
    let fixture = dropped_then_moved_on();
    let engine = engine_for(&fixture);
    let reset_tip = full_sha(&fixture, "topic/lost@{2}").expect("the dropped tip");
    let target = full_sha(&fixture, "topic/lost@{1}").expect("where the reset went");
    assert_eq!(full_sha(&fixture, "topic/lost~1").as_ref(), Some(&target), "the new commit sits on the target");
    let short = |sha: &str| fixture.git(&["rev-parse", "--short", sha]).trim().to_owned();
    let expected = format!("git cherry-pick {}..{}", short(&target), short(&reset_tip));

    // The brief and both logs offer the same command.
    let brief = brief_of(&engine, &fixture).expect("brief");
    let lost = brief.data.lost.first().expect("the dropped commits");
    assert_eq!((lost.branch.as_str(), lost.action.as_str(), lost.commits.len()), ("topic/lost", "reset", 4));
    assert_eq!(lost.command, expected);
    let text = fluxgit_engine::render::brief(&brief, &fluxgit_engine::render::Options::default());
    assert!(text.contains(&format!("topic/lost lost 4 commits (reset) no ref holds: {expected}")), "{text}");
    for log in ["refs/heads/topic/lost", "HEAD"] {
        let report = reflog_of(&engine, &fixture, log).expect("reflog");
        let recoveries: Vec<&reflog::Recovery> =
            report.entries.iter().filter_map(|entry| entry.recovery.as_ref()).collect();
        assert_eq!(recoveries.len(), 1, "{log}: {report:?}");
        assert_eq!(recoveries[0].command.as_deref(), Some(expected.as_str()), "{log}");
        // The four lost commits are named, newest first, as `git log --not --all` lists them.
        let named = fixture.git(&["log", "--format=%h", &reset_tip, "--not", "--all"]);
        assert_eq!(recoveries[0].commits, named.lines().collect::<Vec<_>>(), "{log}");
    }
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
    let result = engine.reflog(&repo, Some("topic/lost"), 100, None, UNLIMITED, &mut measure).expect("reflog");
    let text = fluxgit_engine::render::reflog(&result, &repo.text_options());
    let named: Vec<String> =
        fixture.git(&["log", "--format=%h", &reset_tip, "--not", "--all"]).lines().map(str::to_owned).collect();
    assert!(text.contains(&format!("  lost 4 commits {}: {expected}", named.join(" "))), "{text}");

    // Run by git, the command puts the four changes back on the branch, after the new commit.
    run(&fixture, &expected);
    assert!(holds_changes(&fixture, "topic/lost", &reset_tip), "{}", fixture.git(&["log", "--oneline", "-8"]));
    assert_eq!(fixture.git(&["log", "-1", "--format=%s", "topic/lost~4"]).trim(), "feat: after the reset");
    assert_eq!(fixture.git(&["diff", &reset_tip, "topic/lost", "--", "lost"]), "");
    let after = brief_of(&engine, &fixture).expect("brief");
    assert!(after.data.lost.is_empty(), "copies are on the branch now: {:?}", after.data.lost);
}

#[test]
fn lost_commits_of_a_branch_not_checked_out_are_put_back_after_a_switch() {
    let fixture = dropped_then_moved_on();
    fixture.git(&["checkout", "-q", "main"]);
    let engine = engine_for(&fixture);
    let reset_tip = full_sha(&fixture, "topic/lost@{2}").expect("the dropped tip");
    let brief = brief_of(&engine, &fixture).expect("brief");
    let lost = brief.data.lost.first().expect("the dropped commits");
    assert!(lost.command.starts_with("git switch topic/lost && git cherry-pick "), "{}", lost.command);
    run(&fixture, &lost.command);
    assert!(holds_changes(&fixture, "topic/lost", &reset_tip));
    assert_eq!(fixture.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "topic/lost");
}

#[test]
fn lost_commits_of_a_branch_that_did_not_move_are_merged_fast_forward() {
    let fixture = scripted(|fixture| {
        for idx in 1..=3 {
            write_commit(fixture, &format!("lost-{idx}.txt"), "lost\n", &format!("work: lost commit {idx}"));
        }
        fixture.git(&["reset", "-q", "--hard", "HEAD~3"]);
    });
    let engine = engine_for(&fixture);
    let old = full_sha(&fixture, "main@{1}").expect("the dropped tip");
    let short = fixture.git(&["rev-parse", "--short", &old]).trim().to_owned();
    let brief = brief_of(&engine, &fixture).expect("brief");
    let lost = brief.data.lost.first().expect("the dropped commits");
    assert_eq!(lost.command, format!("git merge --ff-only {short}"));
    for log in ["main", "HEAD"] {
        let report = reflog_of(&engine, &fixture, log).expect("reflog");
        let recovery = report.entries.iter().find_map(|entry| entry.recovery.as_ref()).expect("a recovery");
        assert_eq!(recovery.command.as_deref(), Some(lost.command.as_str()), "{log}");
    }
    run(&fixture, &lost.command);
    assert_eq!(full_sha(&fixture, "main"), Some(old), "main is back at its tip, nothing rewritten");
}

#[test]
fn a_rewrite_or_a_checkout_away_keeps_the_side_branch_recovery() {
    // A rebase leaves copies of its commits: picking the old ones again would duplicate them. A checkout away from
    // a deleted branch moved HEAD alone: no branch to put the commits back on.
    let (_, fixture) = scripts().into_iter().nth(4).expect("the rewrite script");
    let engine = engine_for(&fixture);
    let mut seen = 0;
    for log in ["HEAD", "refs/heads/topic", "refs/heads/main"] {
        let report = reflog_of(&engine, &fixture, log).expect("reflog");
        for entry in &report.entries {
            let Some(recovery) = &entry.recovery else { continue };
            let command = recovery.command.as_deref().expect("a command");
            let rewrite = entry.action.starts_with("rebase") || entry.action == "commit (amend)";
            let away = entry.action == "checkout";
            if rewrite || away {
                seen += 1;
                assert!(command.starts_with("git branch recover/"), "{log} {entry:?}");
                let words: Vec<&str> = command.split(' ').collect();
                fixture.git(&words[1..]);
                let old = full_sha(&fixture, entry.old_sha.as_deref().expect("an old tip"));
                assert_eq!(full_sha(&fixture, words[2]), old, "{command}");
                fixture.git(&["branch", "-q", "-D", words[2]]);
            }
        }
    }
    assert!(seen >= 3, "amend, rebase and the checkout away from the deleted branch: {seen}");
}
