//! Ahead/behind counts and exclusive commits are exact whatever the commit dates: every count the engine reports
//! (`repo.brief` and `repo.status` upstream, `repo.refs` upstream track of every branch, `repo.branchStack` base,
//! upstream and related branches, `repo.history` ranges `A..B` and `A...B`) equals the count of the commit sets
//! themselves (from `git rev-list --parents --all`, a walk that cannot stop early) and
//! `git rev-list --left-right --count A...B`, on a history with merges and commits dated a year before or after
//! their parents, without a commit-graph, with a full one and with one that misses the newest commits.

use std::collections::{HashMap, HashSet};

use crate::common;

use common::{commit_tree, engine_for, measure};
use fluxgit_fixtures::{Fixture, Scenario};

const UNLIMITED: usize = 1_000_000;
const YEAR: i64 = 365 * 24 * 3_600;

/// The whole commit graph as `git rev-list --parents --all` lists it (a walk that cannot stop early), and a way
/// to name commits.
struct Graph<'a> {
    fixture: &'a Fixture,
    parents: HashMap<String, Vec<String>>,
}

impl<'a> Graph<'a> {
    fn new(fixture: &'a Fixture) -> Self {
        let parents = fixture
            .git(&["rev-list", "--parents", "--all"])
            .lines()
            .map(|line| {
                let mut ids = line.split_whitespace().map(str::to_owned);
                (ids.next().expect("a commit"), ids.collect())
            })
            .collect();
        Self { fixture, parents }
    }

    /// The commits reachable from `rev` (itself included).
    fn reachable(&self, rev: &str) -> HashSet<String> {
        let tip = self.fixture.git(&["rev-parse", &format!("{rev}^{{commit}}")]).trim().to_owned();
        let mut seen = HashSet::new();
        let mut stack = vec![tip];
        while let Some(id) = stack.pop() {
            if seen.insert(id.clone()) {
                stack.extend(self.parents.get(&id).into_iter().flatten().cloned());
            }
        }
        seen
    }

    /// The commits `one` reaches and `other` does not.
    fn only(&self, one: &str, other: &str) -> HashSet<String> {
        self.reachable(one).difference(&self.reachable(other)).cloned().collect()
    }

    /// (commits `one` has that `other` lacks, the other way round), from the commit sets, checked against
    /// `git rev-list --left-right --count one...other`.
    fn truth(&self, one: &str, other: &str) -> (usize, usize) {
        let counts = (self.only(one, other).len(), self.only(other, one).len());
        let git = self.fixture.git(&["rev-list", "--left-right", "--count", &format!("{one}...{other}")]);
        let mut fields = git.split_whitespace().map(|field| field.parse::<usize>().expect("a count"));
        let git = (fields.next().expect("left"), fields.next().expect("right"));
        assert_eq!(counts, git, "the commit sets and git rev-list --left-right --count {one}...{other} agree");
        counts
    }

    /// The full id of an abbreviated one.
    fn full(&self, short: &str) -> String {
        let mut matches = self.parents.keys().filter(|id| id.starts_with(short));
        let id = matches.next().expect("a known commit").clone();
        assert!(matches.next().is_none(), "{short} is unique");
        id
    }
}

/// A tiny deterministic generator (a linear congruential one): the same history on every machine.
struct Dice(u64);

impl Dice {
    fn below(&mut self, bound: usize) -> usize {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(self.0 >> 33).expect("fits") % bound
    }
}

/// Local branches `l0`..`l7`, each tracking `origin/u<i>`; `main` moved into the generated history.
const BRANCHES: usize = 8;

/// Builds the history: the case found in the field (a commit dated years before its parent, below a merge: the
/// upstream reaches the commits below it only through it), then 60 commits with merges, every 7th dated a year
/// before its parent and every 7th (another phase) a year after.
fn build(fixture: &Fixture) -> Vec<String> {
    let at = |step: i64| fluxgit_fixtures::CLOCK_START as i64 + 400 * 24 * 3_600 + step * 60;
    let root = fixture.git(&["rev-parse", "main"]).trim().to_owned();
    let y = commit_tree(fixture, &[&root], "y", at(1));
    let p = commit_tree(fixture, &[&y], "p (dated years before its parent)", at(0) - 10 * YEAR);
    let s = commit_tree(fixture, &[&p], "s", at(2));
    let a = commit_tree(fixture, &[&y], "a", at(3));
    let v = commit_tree(fixture, &[&a, &s], "v merges s", at(4));
    let h = commit_tree(fixture, &[&s], "h", at(5));
    let mut ids = vec![root, y, p, s, a, v.clone(), h.clone()];
    let mut dice = Dice(0x5eed);
    for step in 10..70_i64 {
        let k = ids.len();
        let first = if dice.below(3) == 0 { dice.below(k) } else { k - 1 };
        let mut parents = vec![ids[first].clone()];
        if dice.below(4) == 0 {
            let second = dice.below(k);
            if second != first {
                parents.push(ids[second].clone());
            }
        }
        let time = match step % 7 {
            3 => at(step) - YEAR,
            5 => at(step) + YEAR,
            _ => at(step),
        };
        let parents: Vec<&str> = parents.iter().map(String::as_str).collect();
        ids.push(commit_tree(fixture, &parents, &format!("c{step}"), time));
    }
    // The field case first, then branches and upstreams spread over the history.
    let mut pairs = vec![(v, h)];
    for _ in 1..BRANCHES {
        pairs.push((ids[dice.below(ids.len())].clone(), ids[dice.below(ids.len())].clone()));
    }
    for (idx, (local, upstream)) in pairs.iter().enumerate() {
        fixture.git(&["update-ref", &format!("refs/heads/l{idx}"), local]);
        fixture.git(&["update-ref", &format!("refs/remotes/origin/u{idx}"), upstream]);
        fixture.git(&["config", &format!("branch.l{idx}.remote"), "origin"]);
        fixture.git(&["config", &format!("branch.l{idx}.merge"), &format!("refs/heads/u{idx}")]);
    }
    let main = ids[ids.len() / 2].clone();
    fixture.git(&["update-ref", "refs/heads/main", &main]);
    ids
}

/// Every count of every tool against [`Graph::truth`].
fn check(fixture: &Fixture, round: &str) {
    use fluxgit_engine::branch_stack::{Options as StackOptions, Relation};
    let before = fluxgit_fixtures::tree_digest(fixture.root());
    let engine = engine_for(fixture);
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let graph = Graph::new(fixture);
    let refs = engine.refs(&repo, UNLIMITED, &mut measure).expect("repo.refs").data;
    for idx in 0..BRANCHES {
        let (local, upstream) = (format!("l{idx}"), format!("origin/u{idx}"));
        let expected = graph.truth(&local, &upstream);
        let branch = refs.branches.iter().find(|branch| branch.name == local).expect("listed");
        let track = branch.upstream.as_ref().expect("an upstream");
        assert_eq!((track.ahead, track.behind), expected, "{round}: repo.refs {local} vs {upstream}");

        let history = |start: &str| -> HashSet<String> {
            let options =
                fluxgit_engine::history::Options { start: Some(start.to_owned()), limit: 1_000, ..Default::default() };
            let page = engine.history(&repo, &options, UNLIMITED, &mut measure).expect("repo.history").data;
            page.commits.into_iter().map(|commit| commit.sha).collect()
        };
        let full = |set: HashSet<String>| -> HashSet<String> { set.iter().map(|sha| graph.full(sha)).collect() };
        assert_eq!(full(history(&format!("{upstream}..{local}"))), graph.only(&local, &upstream), "{round}: history");
        let symmetric: HashSet<String> =
            graph.only(&local, &upstream).union(&graph.only(&upstream, &local)).cloned().collect();
        assert_eq!(full(history(&format!("{local}...{upstream}"))), symmetric, "{round}: history A...B");

        let options = StackOptions { base_candidates: vec![], max_related: 50, branch: Some(local.clone()) };
        let stack = engine.branch_stack(&repo, &options).expect("repo.branchStack");
        let track = stack.upstream.as_ref().expect("an upstream");
        assert_eq!((track.ahead, track.behind), expected, "{round}: repo.branchStack upstream of {local}");
        let base = stack.base.as_ref().expect("main is the base");
        assert_eq!((base.ahead, base.behind), graph.truth(&local, "main"), "{round}: base of {local}");
        // Relations as ancestry decides them (`git merge-base --is-ancestor`, from the commit sets): a branch whose
        // tip the examined branch reaches is one it is stacked on (unless the base has it), one that reaches the
        // examined tip is stacked on it; the rest are listed only as sharing the base.
        let tip_of = |rev: &str| fixture.git(&["rev-parse", &format!("{rev}^{{commit}}")]).trim().to_owned();
        let (examined_reach, base_reach) = (graph.reachable(&local), graph.reachable("main"));
        for other in (0..BRANCHES).map(|other| format!("l{other}")).filter(|other| *other != local) {
            let other_tip = tip_of(&other);
            let below = examined_reach.contains(&other_tip);
            let above = graph.reachable(&other).contains(&tip_of(&local));
            let expected = match (below, above) {
                (true, _) => (!base_reach.contains(&other_tip)).then_some(Relation::CurrentStackedOn),
                (false, true) => Some(Relation::StackedOnCurrent),
                (false, false) => None,
            };
            let listed = stack.related.iter().find(|related| related.name == other).map(|related| related.relation);
            match expected {
                Some(_) => assert_eq!(listed, expected, "{round}: relation of {other} to {local}"),
                None => assert!(
                    matches!(listed, None | Some(Relation::SharesBase)),
                    "{round}: {other} listed as {listed:?} for {local}, neither below nor above it"
                ),
            }
        }
        for related in &stack.related {
            let expected = graph.truth(&local, &related.name);
            assert_eq!((related.ahead, related.behind), expected, "{round}: {local} vs related {}", related.name);
            if let Some(track) = &related.upstream {
                let expected = graph.truth(&related.name, &track.name);
                assert_eq!((track.ahead, track.behind), expected, "{round}: upstream of related {}", related.name);
            }
        }
    }
    assert_eq!(before, fluxgit_fixtures::tree_digest(fixture.root()), "{round}: a read changed the repository");
    // The current branch's upstream, as repo.brief and repo.status report it.
    for idx in 0..BRANCHES {
        let (local, upstream) = (format!("l{idx}"), format!("origin/u{idx}"));
        fixture.git(&["symbolic-ref", "HEAD", &format!("refs/heads/{local}")]);
        let expected = graph.truth(&local, &upstream);
        let before = fluxgit_fixtures::tree_digest(fixture.root());
        let engine = engine_for(fixture);
        let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
        let brief = engine.brief(&repo, &Default::default(), UNLIMITED, &mut measure).expect("repo.brief").data;
        assert_eq!((brief.head.ahead, brief.head.behind), expected, "{round}: repo.brief on {local}");
        let status = engine.status(&repo, UNLIMITED, &mut measure).expect("repo.status").data;
        let track = status.upstream.as_ref().expect("an upstream");
        assert_eq!((track.ahead, track.behind), expected, "{round}: repo.status on {local}");
        assert_eq!(before, fluxgit_fixtures::tree_digest(fixture.root()), "{round}: a read on {local} wrote");
    }
    fixture.git(&["symbolic-ref", "HEAD", "refs/heads/main"]);
}

#[test]
fn every_ahead_behind_count_is_exact_with_skewed_dates() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let ids = build(&fixture);
    check(&fixture, "no commit-graph");
    fixture.git(&["commit-graph", "write", "--reachable"]);
    check(&fixture, "commit-graph");
    // Commits newer than the commit-graph (no generation numbers): one dated a year before its parent.
    let tip = ids.last().expect("commits");
    let late = commit_tree(&fixture, &[tip], "late", fluxgit_fixtures::CLOCK_START as i64 - YEAR);
    let later = commit_tree(&fixture, &[&late, &ids[3]], "later merges s", fluxgit_fixtures::CLOCK_START as i64);
    fixture.git(&["update-ref", "refs/heads/l1", &later]);
    fixture.git(&["update-ref", "refs/remotes/origin/u2", &late]);
    check(&fixture, "commit-graph missing the newest commits");
}

/// The counts answered without a walk (equal tips, one tip a chain of single-parent commits above the other, two
/// such chains above a common commit) and the shapes just past them (a merge in the chain, a chain longer than the
/// shortcut reads, a chain that does not reach the other tip) equal the commit sets and git, and so do their merge
/// bases (`git merge-base --all`), with dates skewed inside the chains; `repo.brief` and `repo.status` report the
/// same for a branch whose upstream is such a chain away.
#[test]
fn linear_chains_count_as_git_does() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let start = fluxgit_fixtures::CLOCK_START as i64;
    let base = fixture.git(&["rev-parse", "main^{commit}"]).trim().to_owned();
    // A chain of `len` commits above `from`, every other one dated a year before its parent.
    let chain = |from: &str, len: usize, label: &str| {
        let mut tip = from.to_owned();
        for step in 0..len {
            let skew = if step % 2 == 0 { -YEAR } else { YEAR };
            tip = commit_tree(&fixture, &[&tip], &format!("{label} {step}"), start + skew + step as i64);
        }
        tip
    };
    let short = chain(&base, 3, "short");
    let long = chain(&base, 300, "long");
    let side = chain(&base, 2, "side");
    let merged = commit_tree(&fixture, &[&short, &side], "merge", start - 2 * YEAR);
    let above_merge = chain(&merged, 2, "above merge");
    let refs = [
        ("short", &short),
        ("long", &long),
        ("side", &side),
        ("merged", &merged),
        ("above-merge", &above_merge),
        ("base", &base),
    ];
    for (name, id) in refs {
        fixture.git(&["update-ref", &format!("refs/heads/c-{name}"), id]);
    }
    let graph = Graph::new(&fixture);
    let git = gix::open(fixture.path()).expect("gix opens the repository");
    let id = |hex: &str| gix::ObjectId::from_hex(hex.as_bytes()).expect("hex");
    for (one, one_id) in refs {
        for (other, other_id) in refs {
            let expected = graph.truth(&format!("c-{one}"), &format!("c-{other}"));
            let ours = fluxgit_engine::ancestry::ahead_behind(&git, id(one_id), id(other_id)).expect("counts");
            assert_eq!(ours, expected, "ahead/behind of {one} vs {other}");
            let bases = fluxgit_engine::ancestry::merge_bases(&git, id(one_id), &[id(other_id)]).expect("bases");
            let mut bases: Vec<String> = bases.iter().map(ToString::to_string).collect();
            let mut git_bases: Vec<String> =
                fixture.git(&["merge-base", "--all", one_id, other_id]).lines().map(str::to_owned).collect();
            bases.sort();
            git_bases.sort();
            assert_eq!(bases, git_bases, "merge bases of {one} and {other}");
        }
    }
    // The current branch's upstream a chain away, either way, as repo.brief and repo.status report it.
    let upstreams = [
        ("c-short", &base),
        ("c-base", &short),
        ("c-short", &short),
        ("c-base", &long),
        ("c-above-merge", &short),
        ("c-side", &short),
        ("c-side", &long),
    ];
    for (local, upstream_tip) in upstreams {
        fixture.git(&["update-ref", "refs/remotes/origin/c-up", upstream_tip]);
        fixture.git(&["config", &format!("branch.{local}.remote"), "origin"]);
        fixture.git(&["config", &format!("branch.{local}.merge"), "refs/heads/c-up"]);
        fixture.git(&["symbolic-ref", "HEAD", &format!("refs/heads/{local}")]);
        let expected = graph.truth(local, "origin/c-up");
        let engine = engine_for(&fixture);
        let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
        let brief = engine.brief(&repo, &Default::default(), UNLIMITED, &mut measure).expect("repo.brief").data;
        assert_eq!((brief.head.ahead, brief.head.behind), expected, "repo.brief on {local}");
        let status = engine.status(&repo, UNLIMITED, &mut measure).expect("repo.status").data;
        let track = status.upstream.as_ref().expect("an upstream");
        assert_eq!((track.ahead, track.behind), expected, "repo.status on {local}");
    }
    fixture.git(&["symbolic-ref", "HEAD", "refs/heads/main"]);
}
