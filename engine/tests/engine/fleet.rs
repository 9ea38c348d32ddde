//! `fleet.radar` and `fleet.digest` against the git CLI on a generated fleet with every state (conflicted merge,
//! stopped rebase, detached, behind, dirty, ahead, stale by dates, clean, no remote, a deleted directory, a
//! non-repository): states and counts vs `git status --porcelain=v2 --branch`, state files and `git log -g`; the
//! digest vs the reflog files after commits, resets, rebases, amends and forced branch moves; fresh answers right
//! after a change; the registry (a FIFO or a `/dev/zero` link in its place refused at once, the radar saying why);
//! budgets.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::measure;
use fluxgit_engine::fleet::radar::{self, State};
use fluxgit_engine::fleet::{Target, Targets, digest};
use fluxgit_engine::{Budgeted, Engine, Options};
use fluxgit_fixtures::fleet::{self, FLEET_NOW, Fleet, Kind};

const UNLIMITED: usize = 1_000_000;

fn engine(fleet: &Fleet) -> Engine {
    Engine::new(Options { allowed_roots: vec![fleet.root().to_path_buf()] })
}

fn targets(paths: &[&Path]) -> Targets {
    Targets::Given(paths.iter().map(|path| Target { path: path.display().to_string(), label: None }).collect())
}

fn all_members(fleet: &Fleet) -> Targets {
    targets(&fleet.members().iter().map(|member| member.path.as_path()).collect::<Vec<_>>())
}

fn radar_of(engine: &Engine, targets: &Targets, now: i64, max_tokens: usize) -> Budgeted<radar::Radar> {
    let options = radar::Options { max_repos: 500, now };
    engine.radar(targets, &options, max_tokens, &mut measure).expect("the radar answers")
}

/// The state git's own output puts a repository in, by the radar's ranking.
fn git_state(fleet: &Fleet, path: &Path, now: i64) -> State {
    let status = fleet.git(path, &["--no-optional-locks", "status", "--porcelain=v2", "--branch"]);
    let (mut detached, mut ahead, mut behind, mut conflicted, mut dirty) = (false, 0, 0, 0, 0);
    for line in status.lines() {
        if let Some(head) = line.strip_prefix("# branch.head ") {
            detached = head == "(detached)";
        } else if let Some(counts) = line.strip_prefix("# branch.ab ") {
            let mut parts = counts.split(' ');
            ahead = parts.next().and_then(|a| a.trim_start_matches('+').parse().ok()).expect("ahead");
            behind = parts.next().and_then(|b| b.trim_start_matches('-').parse().ok()).expect("behind");
        } else if line.starts_with("u ") {
            conflicted += 1;
        } else if line.starts_with("1 ") || line.starts_with("2 ") || line.starts_with("? ") {
            dirty += 1;
        }
    }
    let git_dir = path.join(".git");
    let operation = ["MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD", "REVERT_HEAD", "BISECT_LOG"]
        .iter()
        .any(|name| git_dir.join(name).exists());
    let mut newest = 0i64;
    let mut refs = vec!["HEAD".to_owned()];
    refs.extend(fleet.git(path, &["for-each-ref", "--format=%(refname)", "refs/heads"]).lines().map(str::to_owned));
    for name in &refs {
        let moved = fleet.git(path, &["log", "-g", "-1", "--date=unix", "--format=%gd", name]);
        if let Some(seconds) =
            moved.trim().rsplit_once("@{").and_then(|(_, rest)| rest.trim_end_matches('}').parse().ok())
        {
            newest = newest.max(seconds);
        }
        let committed = fleet.git(path, &["log", "-1", "--format=%ct", name]);
        newest = newest.max(committed.trim().parse().unwrap_or(0));
    }
    if conflicted > 0 {
        State::Conflicts
    } else if operation {
        State::Operation
    } else if detached {
        State::Detached
    } else if behind > 0 {
        State::Behind
    } else if dirty > 0 {
        State::Dirty
    } else if ahead > 0 {
        State::Unpushed
    } else if now - newest > radar::STALE_DAYS * 86_400 {
        State::Stale
    } else {
        State::Clean
    }
}

#[test]
fn radar_states_and_counts_match_git() {
    let fleet = fleet::build_fleet();
    let before = fluxgit_fixtures::tree_digest(fleet.root());
    let engine = engine(&fleet);
    let now = FLEET_NOW as i64;
    let radar = radar_of(&engine, &all_members(&fleet), now, UNLIMITED).data;
    assert_eq!(radar.repositories, Kind::ALL.len());
    let by_path: BTreeMap<&str, &radar::Entry> =
        radar.queue.iter().map(|entry| (entry.repo_path.as_str(), entry)).collect();
    let mut tally: BTreeMap<State, usize> = BTreeMap::new();
    for member in fleet.members() {
        let entry = by_path[member.path.to_str().expect("utf-8")];
        let expected = match member.kind {
            Kind::Deleted | Kind::NotARepository => State::Error,
            _ => git_state(&fleet, &member.path, now),
        };
        assert_eq!(entry.state, expected, "{:?} at {}: {}", member.kind, member.path.display(), entry.reason);
        let designed = match member.kind {
            Kind::Conflicted => State::Conflicts,
            Kind::Rebasing => State::Operation,
            Kind::Detached => State::Detached,
            Kind::Behind => State::Behind,
            Kind::Dirty => State::Dirty,
            Kind::Ahead => State::Unpushed,
            Kind::Stale => State::Stale,
            Kind::Clean | Kind::NoRemote => State::Clean,
            Kind::Deleted | Kind::NotARepository => State::Error,
        };
        assert_eq!(entry.state, designed, "{:?} was built to be {designed:?}", member.kind);
        *tally.entry(entry.state).or_default() += 1;
        match member.kind {
            Kind::Deleted => assert_eq!(entry.error.as_ref().map(|e| e.reason.as_str()), Some("not_found")),
            Kind::NotARepository => {
                assert_eq!(entry.error.as_ref().map(|e| e.reason.as_str()), Some("not_a_repository"));
            }
            _ => assert!(entry.error.is_none() && !entry.reason.is_empty()),
        }
    }
    let counts = serde_json::to_value(radar.counts).expect("serialises");
    for (state, count) in &tally {
        let name = serde_json::to_value(state).expect("serialises");
        assert_eq!(counts[name.as_str().expect("a string")], *count, "{state:?}");
    }
    assert!(
        radar.queue.windows(2).all(|pair| (pair[0].state, &pair[0].repo_path) <= (pair[1].state, &pair[1].repo_path))
    );
    // The merge of origin/main stopped on a branch with a commit of its own (git: `# branch.ab +1 -1`, the one
    // behind being what is merged): both are said.
    let conflicted = fleet.member(Kind::Conflicted);
    let status = fleet.git(conflicted, &["--no-optional-locks", "status", "--porcelain=v2", "--branch"]);
    assert!(status.contains("# branch.ab +1 -1"), "{status}");
    assert_eq!(
        by_path[conflicted.to_str().expect("utf-8")].reason,
        "1 conflicted: f.txt (merge stopped); also 1 ahead of origin/main"
    );
    assert_eq!(by_path[fleet.member(Kind::Behind).to_str().expect("utf-8")].reason, "1 behind origin/main on main");
    assert_eq!(by_path[fleet.member(Kind::NoRemote).to_str().expect("utf-8")].reason, "clean on main, no upstream");
    // Warm: the same answer from memory.
    assert_eq!(radar_of(&engine, &all_members(&fleet), now, UNLIMITED).data, radar);
    // Thirty days on, every repository without other news is stale.
    let later = radar_of(&engine, &all_members(&fleet), now + 40 * 86_400, UNLIMITED).data;
    assert_eq!(later.counts.stale, 3, "{:?}", later.counts);
    drop(engine);
    assert_eq!(before, fluxgit_fixtures::tree_digest(fleet.root()), "the radar changed a repository");
}

#[test]
fn radar_budget_cuts_the_queue_and_keeps_counts() {
    let fleet = fleet::build_fleet();
    let engine = engine(&fleet);
    let full = radar_of(&engine, &all_members(&fleet), FLEET_NOW as i64, UNLIMITED);
    for max_tokens in [200, 300, 500] {
        let cut = radar_of(&engine, &all_members(&fleet), FLEET_NOW as i64, max_tokens);
        assert!(measure(&cut) <= max_tokens);
        assert_eq!(cut.data.counts, full.data.counts);
        let omitted = cut.omitted.0.iter().find(|(name, _)| *name == "queue").map_or(0, |(_, n)| *n);
        assert_eq!(cut.data.queue.len() + omitted, full.data.queue.len());
        assert_eq!(cut.data.queue[..], full.data.queue[..cut.data.queue.len()]);
    }
    let options = radar::Options { max_repos: 3, now: FLEET_NOW as i64 };
    let capped = engine.radar(&all_members(&fleet), &options, UNLIMITED, &mut measure).expect("answers");
    assert_eq!(capped.data.queue.len(), 3);
    assert_eq!(capped.omitted.0, vec![("queue", Kind::ALL.len() - 3)]);
}

/// `(new sha, unix time, identity, message)` of every entry of `name`'s reflog, newest first (`git log -g`).
fn git_reflog(fleet: &Fleet, path: &Path, name: &str) -> Vec<(String, i64, String, String)> {
    let format = "--format=%H%x00%gd%x00%gn <%ge>%x00%gs";
    fleet
        .git(path, &["log", "-g", "--date=unix", format, name])
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split('\0').collect();
            let seconds = fields[1].rsplit_once("@{").and_then(|(_, rest)| rest.trim_end_matches('}').parse().ok());
            (fields[0].to_owned(), seconds.expect("a unix date"), fields[2].to_owned(), fields[3].to_owned())
        })
        .collect()
}

fn is_ancestor(fleet: &Fleet, path: &Path, old: &str, new: &str) -> bool {
    fleet.git_raw(path, &["merge-base", "--is-ancestor", old, new]).status.success()
}

/// Each ref's movements in `digest` for `path` are its reflog's lines (`git log -g`), and `rewrote` is set exactly
/// where the old tip is not an ancestor of the new one (movements switching HEAD aside).
fn assert_digest_matches_git(fleet: &Fleet, digest: &digest::Digest, path: &Path) {
    let root = path.to_str().expect("utf-8");
    let events: Vec<_> = digest.events.iter().filter(|event| event.repo_path == root).collect();
    let mut refs = vec!["HEAD".to_owned()];
    refs.extend(
        fleet.git(path, &["for-each-ref", "--format=%(refname:short)", "refs/heads"]).lines().map(str::to_owned),
    );
    for name in &refs {
        let mut expected: Vec<(String, String, String)> = git_reflog(fleet, path, name)
            .into_iter()
            .map(|(new, _, identity, message)| (new[..digest::SHA_DIGITS].to_owned(), identity, message))
            .collect();
        let mut found: Vec<(String, String, String)> = events
            .iter()
            .filter(|event| &event.ref_name == name || (name == "HEAD" && event.head))
            .map(|event| (event.new.clone().expect("no deletions here"), event.identity.clone(), event.message.clone()))
            .collect();
        expected.sort();
        found.sort();
        assert_eq!(found, expected, "{name} in {root}");
    }
    for event in &events {
        let (Some(old), Some(new)) = (&event.old, &event.new) else { continue };
        let switch =
            event.ref_name == "HEAD" && (event.message.starts_with("checkout:") || event.message.starts_with("rebase"));
        assert_eq!(event.rewrote, !switch && !is_ancestor(fleet, path, old, new), "{event:?}");
    }
}

#[test]
fn digest_matches_the_reflog_files() {
    let fleet = fleet::build_fleet();
    let (clean, ahead, origin) = (fleet.member(Kind::Clean), fleet.member(Kind::Ahead), fleet.member(Kind::NoRemote));
    // Commits, a reset back, an amend, a rebase and a forced branch move, in three repositories.
    for (idx, path) in [clean, ahead, origin].iter().enumerate() {
        for round in 0..3 {
            std::fs::write(path.join(format!("d{round}.txt")), format!("{idx} {round}\n")).expect("writable");
            fleet.git(path, &["add", "-A"]);
            fleet.git(path, &["commit", "-q", "-m", &format!("digest {round}")]);
        }
    }
    fleet.git(clean, &["reset", "-q", "--hard", "HEAD~1"]);
    fleet.git(clean, &["commit", "-q", "--amend", "-m", "amended"]);
    fleet.git(ahead, &["checkout", "-q", "-b", "topic", "HEAD~2"]);
    std::fs::write(ahead.join("t.txt"), "topic\n").expect("writable");
    fleet.git(ahead, &["add", "t.txt"]);
    fleet.git(ahead, &["commit", "-q", "-m", "topic"]);
    fleet.git(ahead, &["rebase", "-q", "main"]);
    fleet.git(ahead, &["checkout", "-q", "main"]);
    fleet.git(origin, &["branch", "-f", "side", "HEAD~2"]);
    fleet.git(origin, &["branch", "-f", "side", "HEAD"]);
    fleet.git(origin, &["branch", "-f", "side", "HEAD~1"]);

    let before = fluxgit_fixtures::tree_digest(fleet.root());
    let engine = engine(&fleet);
    let repos = [clean, ahead, origin, fleet.member(Kind::Deleted)];
    let options = digest::Options { since_ms: 0, max_events: 1000 };
    let digest = engine.digest(&targets(&repos), &options, UNLIMITED, &mut measure).expect("answers").data;
    assert_eq!(digest.repositories, 3);
    assert_eq!(digest.unreadable.len(), 1);
    assert_eq!(digest.unreadable[0].error.reason, "not_found");
    assert!(!digest.truncated);
    assert_eq!(digest.total, digest.events.len());
    assert!(digest.events.windows(2).all(|pair| pair[0].at >= pair[1].at), "newest first");

    for path in [clean, ahead, origin] {
        assert_digest_matches_git(&fleet, &digest, path);
    }
    let rewrote = |root: &Path, needle: &str| {
        digest.events.iter().any(|event| {
            event.repo_path == root.to_str().expect("utf-8") && event.rewrote && event.message.starts_with(needle)
        })
    };
    assert!(rewrote(clean, "reset: moving to HEAD~1"));
    assert!(rewrote(clean, "commit (amend)"));
    assert!(rewrote(ahead, "rebase (finish)"));
    assert!(rewrote(origin, "branch: Reset to HEAD~1"));
    assert!(digest.events.iter().all(|event| event.identity == "Fixture Author <fixture@example.invalid>"));

    // sinceMs keeps the movements at or after it.
    let newest = git_reflog(&fleet, origin, "HEAD")[0].1;
    let options = digest::Options { since_ms: newest * 1000, max_events: 1000 };
    let recent = engine.digest(&targets(&[origin]), &options, UNLIMITED, &mut measure).expect("answers").data;
    let expected = ["HEAD", "main", "side"]
        .iter()
        .flat_map(|name| git_reflog(&fleet, origin, name))
        .filter(|(_, seconds, ..)| *seconds >= newest)
        .count();
    let counted: usize = recent.events.iter().map(|event| 1 + usize::from(event.head)).sum();
    assert_eq!(counted, expected);
    // maxEvents and the budget.
    let options = digest::Options { since_ms: 0, max_events: 5 };
    let capped = engine.digest(&targets(&repos), &options, UNLIMITED, &mut measure).expect("answers");
    assert!(capped.data.truncated && capped.data.events.len() == 5 && capped.data.total == digest.total);
    assert_eq!(capped.data.events[..], digest.events[..5]);
    let options = digest::Options { since_ms: 0, max_events: 1000 };
    let cut = engine.digest(&targets(&repos), &options, 400, &mut measure).expect("answers");
    assert!(measure(&cut) <= 400 && cut.data.total == digest.total);
    let omitted: usize = cut.omitted.0.iter().map(|(_, n)| n).sum();
    assert_eq!(cut.data.events.len() + cut.data.unreadable.len() + omitted, digest.events.len() + 1);
    drop(engine);
    assert_eq!(before, fluxgit_fixtures::tree_digest(fleet.root()), "the digest changed a repository");
}

/// The movements behind the digest are fed incrementally (only what was appended to a reflog is read; a rewritten
/// log is read again; gone branches dropped) and kept under the index dir: after each kind of change, the digest of
/// an engine that kept them, and of a new engine starting from the kept files, equals a fresh read and the reflog
/// files, at once after the change.
#[test]
fn digest_fed_incrementally_equals_a_fresh_read() {
    let fleet = fleet::build_fleet();
    let run = tempfile::tempdir().expect("temp dir");
    let roots = vec![fleet.root().to_path_buf()];
    let keeping = || {
        let cache = fluxgit_engine::cache::Options::default();
        Engine::with_cache(Options { allowed_roots: roots.clone() }, cache).with_index(run.path().join("index"))
    };
    let uncached = fluxgit_engine::cache::Options { enabled: false, ..Default::default() };
    let fresh = Engine::with_cache(Options { allowed_roots: roots.clone() }, uncached);
    let (clean, ahead, origin) = (fleet.member(Kind::Clean), fleet.member(Kind::Ahead), fleet.member(Kind::NoRemote));
    let repos = [clean, ahead, origin];
    let options = digest::Options { since_ms: 0, max_events: 1000 };
    let check = |engine: &Engine, step: &str| {
        let kept = engine.digest(&targets(&repos), &options, UNLIMITED, &mut measure).expect("answers").data;
        let read = fresh.digest(&targets(&repos), &options, UNLIMITED, &mut measure).expect("answers").data;
        assert_eq!(kept, read, "{step}");
        for path in repos {
            assert_digest_matches_git(&fleet, &kept, path);
        }
        kept
    };
    let commit = |path: &Path, name: &str| {
        std::fs::write(path.join(name), format!("{name}\n")).expect("writable");
        fleet.git(path, &["add", "-A"]);
        fleet.git(path, &["commit", "-q", "-m", name]);
    };
    let engine = keeping();
    let first = check(&engine, "first read");
    commit(clean, "appended.txt");
    let appended = check(&engine, "a commit appended to HEAD's and main's logs");
    assert_eq!(appended.total, first.total + 1);
    assert_eq!(appended.events[0].message, "commit: appended.txt");
    fleet.git(clean, &["reset", "-q", "--hard", "HEAD~1"]);
    fleet.git(clean, &["commit", "-q", "--amend", "-m", "amended"]);
    check(&engine, "a reset and an amend");
    fleet.git(ahead, &["branch", "topic"]);
    fleet.git(ahead, &["branch", "-f", "topic", "HEAD~1"]);
    check(&engine, "a new branch moved back");
    fleet.git(ahead, &["reflog", "delete", "HEAD@{1}"]);
    fleet.git(ahead, &["reflog", "delete", "topic@{0}"]);
    check(&engine, "reflog entries deleted (logs rewritten)");
    fleet.git(ahead, &["reflog", "expire", "--expire=all", "--all"]);
    commit(ahead, "after-expire.txt");
    check(&engine, "every log expired, then a commit");
    fleet.git(ahead, &["branch", "-m", "topic", "renamed"]);
    fleet.git(origin, &["checkout", "-q", "-b", "doomed"]);
    commit(origin, "doomed.txt");
    fleet.git(origin, &["checkout", "-q", "-"]);
    fleet.git(origin, &["branch", "-q", "-D", "doomed"]);
    check(&engine, "a branch renamed, another deleted");
    drop(engine);
    let kept = std::fs::read_dir(run.path().join("index/movements/v1")).expect("kept movements").count();
    assert_eq!(kept, repos.len(), "one file of movements per repository");
    let engine = keeping();
    check(&engine, "a new engine from the kept files");
    commit(origin, "next.txt");
    check(&engine, "a new engine from the kept files, after a commit");
    // A kept file that does not parse is replaced by a fresh read.
    drop(engine);
    for entry in std::fs::read_dir(run.path().join("index/movements/v1")).expect("kept movements") {
        std::fs::write(entry.expect("entry").path(), b"{ not json").expect("writable");
    }
    check(&keeping(), "kept files damaged");
}

#[test]
fn fresh_right_after_a_commit() {
    let fleet = fleet::build_fleet();
    let cache = fluxgit_engine::cache::Options::default();
    let engine = Engine::with_cache(Options { allowed_roots: vec![fleet.root().to_path_buf()] }, cache);
    let clean = fleet.member(Kind::Clean);
    let all = all_members(&fleet);
    let now = FLEET_NOW as i64;
    let options = digest::Options { since_ms: 0, max_events: 1000 };
    let before = radar_of(&engine, &all, now, UNLIMITED).data;
    let digest_before = engine.digest(&all, &options, UNLIMITED, &mut measure).expect("answers").data;
    let entry = |radar: &radar::Radar| {
        radar.queue.iter().find(|entry| entry.repo_path == clean.to_str().expect("utf-8")).cloned().expect("listed")
    };
    assert_eq!(entry(&before).state, State::Clean);
    std::fs::write(clean.join("fresh.txt"), "fresh\n").expect("writable");
    fleet.git(clean, &["add", "fresh.txt"]);
    fleet.git(clean, &["commit", "-q", "-m", "fresh commit"]);
    let after = radar_of(&engine, &all, now, UNLIMITED).data;
    assert_eq!(entry(&after).state, State::Unpushed, "{}", entry(&after).reason);
    assert_eq!(after.counts.clean + 1, before.counts.clean);
    let digest_after = engine.digest(&all, &options, UNLIMITED, &mut measure).expect("answers").data;
    assert_eq!(digest_after.total, digest_before.total + 1);
    assert_eq!(digest_after.events[0].message, "commit: fresh commit");
    assert!(digest_after.events[0].head && digest_after.events[0].ref_name == "main");
    // A work-tree edit alone makes it dirty at once.
    std::fs::write(clean.join("fresh.txt"), "edited\n").expect("writable");
    assert_eq!(entry(&radar_of(&engine, &all, now, UNLIMITED).data).state, State::Dirty);
}

#[test]
fn registry_holds_seen_repositories_inside_the_roots() {
    let fleet = fleet::build_fleet();
    let run = tempfile::tempdir().expect("temp dir");
    let file = run.path().join("fleet/registry.json");
    let engine = engine(&fleet).with_registry(file.clone());
    let empty = radar_of(&engine, &Targets::Registry, FLEET_NOW as i64, UNLIMITED).data;
    assert_eq!((empty.repositories, empty.from_registry), (0, true));
    let ahead = fleet.member(Kind::Ahead);
    engine.resolve(ahead.join("a.txt").parent().expect("dir").to_str().expect("utf-8")).expect("resolves");
    // A fleet call records nothing.
    radar_of(&engine, &all_members(&fleet), FLEET_NOW as i64, UNLIMITED);
    // The seen repository is written off the call's path: wait for the writer before reading the file.
    engine.flush_registry();
    let registry = fluxgit_engine::fleet::registry::Registry::load(&file).expect("loads");
    assert_eq!(registry.repositories.len(), 1);
    assert_eq!(registry.repositories[0].path, ahead);
    let mut registry = registry;
    registry.insert(Path::new("/outside/the/roots"), None, fluxgit_engine::fleet::registry::Origin::Added, 0);
    registry.save(&file).expect("saves");
    let radar = radar_of(&engine, &Targets::Registry, FLEET_NOW as i64, UNLIMITED).data;
    assert_eq!(radar.repositories, 1, "entries outside the allowed roots are not read");
    assert_eq!(radar.queue[0].state, State::Unpushed);
}

/// A warm radar reads each repository's facts from memory without opening it (one barrier for the whole call), and
/// stays exact after a commit, after a repository is replaced at the same path, and after a symlinked target is
/// pointed at another repository.
#[test]
fn warm_radar_from_memory_stays_exact() {
    let fleet = fleet::build_fleet();
    let cache = fluxgit_engine::cache::Options::default();
    let engine = Engine::with_cache(Options { allowed_roots: vec![fleet.root().to_path_buf()] }, cache);
    let clean = fleet.member(Kind::Clean);
    let ahead = fleet.member(Kind::Ahead);
    let link = fleet.root().join("link-to-clean");
    std::os::unix::fs::symlink(clean, &link).expect("symlink");
    let link_text = link.to_str().expect("utf-8").to_owned();
    let all = targets(&[clean, ahead, &link]);
    let now = FLEET_NOW as i64;
    // Wait until the watches are in place (calls read fresh, uncached, until then).
    for path in [clean, ahead] {
        let repo = engine.resolve(path.to_str().expect("utf-8")).expect("resolves");
        assert_eq!(engine.cache_diagnostics(&repo).cache, "watched");
    }
    let state_of = |radar: &radar::Radar, path: &Path| {
        radar.queue.iter().find(|entry| entry.repo_path == path.to_str().expect("utf-8")).map(|entry| entry.state)
    };
    let first = radar_of(&engine, &all, now, UNLIMITED).data;
    assert_eq!(first.repositories, 2, "the symlink names the clean repository again: {first:?}");
    let before = engine.cache_stats();
    let warm = radar_of(&engine, &all, now, UNLIMITED).data;
    assert_eq!(warm, first);
    let after = engine.cache_stats();
    assert!(after.hits >= before.hits + 3, "every target served from memory");
    assert_eq!(after.misses, before.misses, "nothing read again");
    let barriers = |stats: &fluxgit_engine::cache::Stats| stats.barriers + stats.barriers_shared;
    assert_eq!(barriers(&after), barriers(&before) + 1, "one freshness barrier for the whole call");

    // A commit: the clean repository is now ahead of its upstream.
    std::fs::write(clean.join("memo.txt"), "memo\n").expect("writable");
    fleet.git(clean, &["add", "memo.txt"]);
    fleet.git(clean, &["commit", "-q", "-m", "memo"]);
    assert_eq!(state_of(&radar_of(&engine, &all, now, UNLIMITED).data, clean), Some(State::Unpushed));

    // The ahead repository replaced by a fresh one (no upstream, one commit) at the same path.
    std::fs::remove_dir_all(ahead).expect("removable");
    std::fs::create_dir(ahead).expect("creatable");
    fleet.git(ahead, &["init", "-q", "-b", "main"]);
    fleet.git(ahead, &["commit", "-q", "--allow-empty", "-m", "new"]);
    fleet.git(ahead, &["checkout", "-q", "--detach"]);
    assert_eq!(state_of(&radar_of(&engine, &all, now, UNLIMITED).data, ahead), Some(State::Detached));

    // The symlink now leads to the ahead (replaced) repository: the clean one is listed once, via its own path.
    std::fs::remove_file(&link).expect("removable");
    std::os::unix::fs::symlink(ahead, &link).expect("symlink");
    let relinked = radar_of(&engine, &targets(&[&link]), now, UNLIMITED).data;
    assert_eq!(relinked.queue.len(), 1, "{link_text}: {relinked:?}");
    assert_eq!(relinked.queue[0].repo_path, ahead.to_str().expect("utf-8"));
    assert_eq!(relinked.queue[0].state, State::Detached);
}

/// The movement store holds at most its limit of repositories in memory: reading a third repository with a limit
/// of 2 drops the least recently read one, and reading that one again (from its kept file plus what was appended,
/// or from the reflogs) gives the movements a store without limit reads.
#[test]
fn movement_store_is_bounded_and_stays_exact() {
    use fluxgit_engine::commit_index::movements::Store;
    let fleet = fleet::build_fleet();
    let run = tempfile::tempdir().expect("temp dir");
    let bounded = Store::with_limit(Some(run.path().to_path_buf()), 2);
    let unbounded = Store::new(None);
    let repos = [fleet.member(Kind::Clean), fleet.member(Kind::Ahead), fleet.member(Kind::NoRemote)];
    let open = |path: &Path| gix::open(path).expect("opens");
    for path in repos {
        bounded.read(&open(path)).expect("reads");
        assert!(bounded.held() <= 2, "at most 2 repositories held, {} after {}", bounded.held(), path.display());
    }
    assert_eq!(bounded.held(), 2);
    // The first one was dropped; a commit lands in it before it is read again.
    std::fs::write(repos[0].join("after-drop.txt"), "x\n").expect("writable");
    fleet.git(repos[0], &["add", "-A"]);
    fleet.git(repos[0], &["commit", "-q", "-m", "after the drop"]);
    for path in repos {
        let again = bounded.read(&open(path)).expect("reads");
        let fresh = unbounded.read(&open(path)).expect("reads");
        assert_eq!(*again, *fresh, "{}", path.display());
        assert!(bounded.held() <= 2);
    }
    let head = bounded.read(&open(repos[0])).expect("reads");
    let last = head.head.as_ref().and_then(|log| log.lines.last()).expect("HEAD's log has lines");
    assert_eq!(last.message, "commit: after the drop");
}

/// The words after `fatal: ` of a failing `git status` in `path`, up to a parenthesis.
fn git_fatal(fleet: &Fleet, path: &Path) -> String {
    let output = fleet.git_raw(path, &["--no-optional-locks", "status"]);
    assert!(!output.status.success(), "git status succeeded in {}", path.display());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stderr.lines().find_map(|line| line.strip_prefix("fatal: ")).expect("a fatal line");
    line.split(" (").next().expect("words").trim().to_owned()
}

/// `git status`'s first line in `path`.
fn git_status_line(fleet: &Fleet, path: &Path) -> String {
    fleet.git(path, &["--no-optional-locks", "status"]).lines().next().expect("a first line").to_owned()
}

fn radar_entry<'a>(radar: &'a radar::Radar, path: &Path) -> &'a radar::Entry {
    let path = path.to_str().expect("utf-8");
    radar.queue.iter().find(|entry| entry.repo_path == path).unwrap_or_else(|| panic!("{path} in {radar:?}"))
}

/// A clone of the fleet's origin at `root/name`, with one more commit.
fn clone(fleet: &Fleet, root: &Path, name: &str) -> std::path::PathBuf {
    fleet.git(root, &["clone", "-q", fleet.root().join("origin").to_str().expect("utf-8"), name]);
    let path = root.join(name);
    std::fs::write(path.join("h.txt"), "more\n").expect("writable");
    fleet.git(&path, &["add", "h.txt"]);
    fleet.git(&path, &["commit", "-q", "-m", "more"]);
    path
}

/// Repositories git cannot read are blamed in git's words: their reason starts with what `git status` says after
/// `fatal: ` (`bad object HEAD`, `not a git repository`).
#[test]
fn broken_repositories_are_blamed_in_gits_words() {
    let fleet = fleet::build_fleet();
    let broken = fleet.root().join("broken");
    std::fs::create_dir_all(&broken).expect("writable");
    // The object store emptied, and removed.
    let emptied = clone(&fleet, &broken, "emptied");
    for entry in std::fs::read_dir(emptied.join(".git/objects")).expect("objects").flatten() {
        std::fs::remove_dir_all(entry.path()).expect("removable");
    }
    let removed = clone(&fleet, &broken, "removed");
    std::fs::remove_dir_all(removed.join(".git/objects")).expect("removable");
    // The branch HEAD names points at a commit that is not there.
    let lost = clone(&fleet, &broken, "lost");
    let branch = fleet.git(&lost, &["symbolic-ref", "HEAD"]);
    std::fs::write(lost.join(".git").join(branch.trim()), "1234567890123456789012345678901234567890\n").expect("ok");
    // HEAD itself is garbage.
    let garbage = clone(&fleet, &broken, "garbage");
    std::fs::write(garbage.join(".git/HEAD"), "garbage\n").expect("writable");
    let engine = engine(&fleet);
    let paths = [&emptied, &removed, &lost, &garbage];
    let radar = radar_of(&engine, &targets(&paths.map(|path| path.as_path())), FLEET_NOW as i64, UNLIMITED).data;
    assert_eq!(radar.counts.error, 4, "{radar:?}");
    for path in paths {
        let words = git_fatal(&fleet, path);
        let entry = radar_entry(&radar, path);
        assert_eq!(entry.state, State::Error);
        assert!(
            entry.reason.starts_with(&words),
            "{}: git says {words:?}, the radar {:?}",
            path.display(),
            entry.reason
        );
    }
    assert_eq!(git_fatal(&fleet, &lost), "bad object HEAD", "the case the test means");
    assert_eq!(git_fatal(&fleet, &garbage), "not a git repository");
}

/// A detached HEAD is named as `git status` names it: by the tag or remote-tracking branch it was checked out
/// from (`at` while HEAD stays, `from` once it moved), else by its sha.
#[test]
fn detached_heads_are_named_as_git_status_names_them() {
    let fleet = fleet::build_fleet();
    let root = fleet.root().join("detached");
    std::fs::create_dir_all(&root).expect("writable");
    let at_tag = clone(&fleet, &root, "at-tag");
    fleet.git(&at_tag, &["tag", "14.1.0"]);
    fleet.git(&at_tag, &["commit", "-q", "--allow-empty", "-m", "after the tag"]);
    fleet.git(&at_tag, &["checkout", "-q", "14.1.0"]);
    let from_tag = clone(&fleet, &root, "from-tag");
    fleet.git(&from_tag, &["tag", "-a", "-m", "annotated", "v2"]);
    fleet.git(&from_tag, &["checkout", "-q", "v2"]);
    fleet.git(&from_tag, &["commit", "-q", "--allow-empty", "-m", "on the detached HEAD"]);
    let at_remote = clone(&fleet, &root, "at-remote");
    fleet.git(&at_remote, &["checkout", "-q", "origin/HEAD"]);
    let at_sha = clone(&fleet, &root, "at-sha");
    fleet.git(&at_sha, &["checkout", "-q", "HEAD~1"]);
    let engine = engine(&fleet);
    let paths = [&at_tag, &from_tag, &at_remote, &at_sha];
    let radar = radar_of(&engine, &targets(&paths.map(|path| path.as_path())), FLEET_NOW as i64, UNLIMITED).data;
    for path in paths {
        let entry = radar_entry(&radar, path);
        assert_eq!(entry.state, State::Detached, "{}", path.display());
        assert_eq!(entry.reason, git_status_line(&fleet, path), "{}", path.display());
    }
    assert_eq!(radar_entry(&radar, &at_tag).reason, "HEAD detached at 14.1.0");
    assert_eq!(radar_entry(&radar, &from_tag).reason, "HEAD detached from v2");
    assert!(radar_entry(&radar, &at_remote).reason.starts_with("HEAD detached at origin/"));
}

/// A folder of checkouts in `repoPaths` is read as the checkouts below it, within the scan's depth, and the answer
/// says so; a folder with none keeps its own entry, which says it; an empty registry says how to fill it.
#[test]
fn a_folder_of_checkouts_is_read_as_its_checkouts() {
    let fleet = fleet::build_fleet();
    let folder = fleet.root().join("work");
    std::fs::create_dir_all(folder.join("team/deep/er/still/below")).expect("writable");
    let first = clone(&fleet, &folder, "one");
    let second = clone(&fleet, &folder, "two");
    let third = clone(&fleet, &folder.join("team"), "three");
    // Deeper than the scan goes.
    let hidden = clone(&fleet, &folder.join("team/deep/er/still/below"), "hidden");
    assert!(hidden.strip_prefix(&folder).expect("below").components().count() > radar::SCAN_DEPTH);
    let empty = fleet.root().join("empty-folder");
    std::fs::create_dir_all(empty.join("a/b")).expect("writable");
    let engine = engine(&fleet);
    let radar = radar_of(&engine, &targets(&[&folder, &empty]), FLEET_NOW as i64, UNLIMITED).data;
    let mut listed: Vec<&str> = radar.queue.iter().map(|entry| entry.repo_path.as_str()).collect();
    listed.sort_unstable();
    let mut expected: Vec<String> = [&first, &second, &third].iter().map(|path| path.display().to_string()).collect();
    expected.push(empty.display().to_string());
    expected.sort_unstable();
    assert_eq!(listed, expected);
    assert_eq!(radar.repositories, 4);
    assert_eq!(
        radar.scanned,
        vec![radar::Scanned { path: folder.display().to_string(), found: 3, depth: radar::SCAN_DEPTH, stopped: false }]
    );
    for path in [&first, &second, &third] {
        assert_eq!(radar_entry(&radar, path).state, git_state(&fleet, path, FLEET_NOW as i64));
    }
    let none = radar_entry(&radar, &empty);
    assert_eq!(none.error.as_ref().map(|error| error.reason.as_str()), Some("not_a_repository"));
    assert!(none.reason.starts_with(&git_fatal(&fleet, &empty)), "{}", none.reason);
    assert!(none.reason.ends_with("holds no checkout 4 levels down"), "{}", none.reason);
    let text = fluxgit_engine::render::fleet_radar(
        &radar_of(&engine, &targets(&[&folder]), FLEET_NOW as i64, UNLIMITED),
        &fluxgit_engine::render::Options::default(),
    );
    assert_eq!(
        text.lines().nth(1),
        Some(format!("scanned {}: 3 checkouts within 4 levels", folder.display()).as_str())
    );
    // The bound: two checkouts at most.
    let bounded = fluxgit_engine::fleet::registry::scan_bounded(&folder, radar::SCAN_DEPTH, 2, usize::MAX);
    assert_eq!((bounded.found, bounded.stopped), (vec![first.clone(), second.clone()], true));
    let shallow = fluxgit_engine::fleet::registry::scan_bounded(&folder, 1, usize::MAX, usize::MAX);
    assert_eq!((shallow.found, shallow.stopped), (vec![first, second], false));

    let run = tempfile::tempdir().expect("temp dir");
    let registry = engine.with_registry(run.path().join("fleet/registry.json"));
    let nothing = radar_of(&registry, &Targets::Registry, FLEET_NOW as i64, UNLIMITED);
    assert_eq!(nothing.data.hint.as_deref(), Some(radar::EMPTY_REGISTRY_HINT));
    let text = fluxgit_engine::render::fleet_radar(&nothing, &fluxgit_engine::render::Options::default());
    assert_eq!(text, format!("0 repositories (registry)\n{}\n", radar::EMPTY_REGISTRY_HINT));
    assert!(radar::EMPTY_REGISTRY_HINT.contains("fluxgit-mcp-sidecar fleet add --scan DIR"));
}

/// Stash entries are named in every reason, counted as `git stash list` counts them, whatever the state: work put
/// aside in a checkout that is otherwise clean still needs its person.
#[test]
fn stash_entries_are_named_in_the_reason() {
    let fleet = fleet::build_fleet();
    let root = fleet.root().join("stashed");
    std::fs::create_dir_all(&root).expect("writable");
    let clean = clone(&fleet, &root, "clean");
    let one = clone(&fleet, &root, "one");
    let two = clone(&fleet, &root, "two");
    for (repo, count) in [(&one, 1), (&two, 2)] {
        for round in 0..count {
            std::fs::write(repo.join(format!("stashed-{round}.txt")), "put aside\n").expect("writable");
            fleet.git(repo, &["add", "."]);
            fleet.git(repo, &["stash", "-q"]);
        }
    }
    let engine = engine(&fleet);
    let paths = [&clean, &one, &two];
    let radar = radar_of(&engine, &targets(&paths.map(|path| path.as_path())), FLEET_NOW as i64, UNLIMITED).data;
    for (path, words) in [(&clean, None), (&one, Some(", 1 stash")), (&two, Some(", 2 stashes"))] {
        let listed = fleet.git(path, &["stash", "list"]).lines().count();
        let entry = radar_entry(&radar, path);
        assert_eq!(entry.state, git_state(&fleet, path, FLEET_NOW as i64), "{}", path.display());
        match words {
            None => assert!(!entry.reason.contains("stash"), "{}: {}", path.display(), entry.reason),
            Some(words) => {
                assert!(entry.reason.ends_with(words), "{}: {}", path.display(), entry.reason);
                assert_eq!(listed, if words.contains('1') { 1 } else { 2 }, "git counts the same entries");
            }
        }
    }
}

/// A registry file that is a FIFO (which a plain read would wait on for ever) or a link to `/dev/zero` (which a
/// plain read would read without end): the radar answers within 5 s, with no repository and a hint naming what is
/// in the registry's place, and the digest answers empty.
#[test]
fn a_registry_that_is_a_fifo_or_a_link_to_dev_zero_is_refused_and_the_radar_says_why() {
    let run = tempfile::tempdir().expect("temp dir");
    let file = run.path().join("fleet/registry.json");
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    let status = std::process::Command::new("mkfifo").arg(&file).status().expect("mkfifo runs");
    assert!(status.success());
    for expected in ["is a FIFO, not a regular file", "is a symbolic link, not a regular file"] {
        let engine = Engine::new(Options { allowed_roots: vec![run.path().to_path_buf()] }).with_registry(file.clone());
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let radar = radar_of(&engine, &Targets::Registry, FLEET_NOW as i64, UNLIMITED).data;
            let options = digest::Options { since_ms: 0, max_events: 100 };
            let digest = engine.digest(&Targets::Registry, &options, UNLIMITED, &mut measure).expect("digest").data;
            let _ = sender.send((radar, digest));
        });
        let (radar, digest) =
            receiver.recv_timeout(std::time::Duration::from_secs(5)).expect("the fleet calls answer within 5 s");
        assert_eq!(radar.repositories, 0);
        let hint = radar.hint.expect("a hint");
        assert!(hint.starts_with("the fleet registry cannot be read: ") && hint.contains(expected), "{hint}");
        assert!(hint.ends_with("or pass repoPaths"), "{hint}");
        assert_eq!((digest.repositories, digest.total), (0, 0));
        std::fs::remove_file(&file).expect("remove");
        std::os::unix::fs::symlink("/dev/zero", &file).expect("symlink");
    }
}

/// A checkout in one state that also holds another a person must act on says both: a merge stopped on a conflict
/// with a commit not pushed, and uncommitted changes beside one; each count as `git status --porcelain=v2
/// --branch` gives it.
#[test]
fn a_checkout_says_every_state_it_is_in_not_only_the_first() {
    let fleet = fleet::build_fleet();
    let root = fleet.root().to_path_buf();
    let stopped = clone(&fleet, &root, "stopped-and-unpushed");
    fleet.git(&stopped, &["checkout", "-q", "-b", "side", "HEAD~1"]);
    std::fs::write(stopped.join("h.txt"), "theirs\n").expect("writable");
    fleet.git(&stopped, &["add", "h.txt"]);
    fleet.git(&stopped, &["commit", "-q", "-m", "side"]);
    fleet.git(&stopped, &["checkout", "-q", "main"]);
    let merged = std::process::Command::new("git").current_dir(&stopped).args(["merge", "-q", "side"]).output();
    assert!(!merged.expect("git merge runs").status.success(), "the merge stops on the conflict");
    let dirty = clone(&fleet, &root, "dirty-and-unpushed");
    std::fs::write(dirty.join("new.txt"), "mine\n").expect("writable");
    for path in [&stopped, &dirty] {
        let status = fleet.git(path, &["status", "--porcelain=v2", "--branch"]);
        assert!(status.contains("# branch.ab +1 -0"), "git counts one commit ahead: {status}");
    }
    let engine = engine(&fleet);
    let radar = radar_of(&engine, &targets(&[&stopped, &dirty]), FLEET_NOW as i64, UNLIMITED).data;
    let entry = radar_entry(&radar, &stopped);
    assert_eq!((entry.state, entry.also.as_slice()), (State::Conflicts, &[State::Unpushed][..]), "{entry:?}");
    assert_eq!(entry.reason, "1 conflicted: h.txt (merge stopped); also 1 ahead of origin/main");
    let entry = radar_entry(&radar, &dirty);
    assert_eq!((entry.state, entry.also.as_slice()), (State::Dirty, &[State::Unpushed][..]), "{entry:?}");
    assert_eq!(entry.reason, "1 untracked on main; also 1 ahead of origin/main");
    // Counted once each, by the first state.
    assert_eq!((radar.counts.conflicts, radar.counts.dirty, radar.counts.unpushed), (1, 1, 0));
}
