//! `repo.conflictPreflight` and `conflict.read` against the git CLI (`git merge-tree`, `git rebase`,
//! `git ls-files -u`, `git status`) on the conflict fixtures, the repository byte-identical after every read.

mod conflict_preflight;
mod conflict_read;

use fluxgit_engine::{Engine, Repo};
use fluxgit_fixtures::Fixture;

/// The engine and the resolved main repository of `fixture`.
fn open(fixture: &Fixture) -> (Engine, Repo) {
    let engine = crate::oracle::engine_for(fixture);
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8 temp path")).expect("resolves");
    (engine, repo)
}

/// Splits git's `-z` output into records.
fn records(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|byte| *byte == 0)
        .filter(|record| !record.is_empty())
        .map(|r| String::from_utf8_lossy(r).into_owned())
        .collect()
}

/// Parses `<mode> <oid> <stage>\t<path>` records (`git ls-files -u`, `git merge-tree --write-tree`) into
/// `(path, stage, mode, oid)`.
fn stage_lines(lines: &[String]) -> Vec<(String, u8, String, String)> {
    lines
        .iter()
        .map(|line| {
            let (meta, path) = line.split_once('\t').expect("tab before the path");
            let fields: Vec<&str> = meta.split(' ').collect();
            (path.to_owned(), fields[2].parse().expect("stage"), fields[0].to_owned(), fields[1].to_owned())
        })
        .collect()
}

#[test]
fn conflict_scenarios_pass_the_general_oracle() {
    use fluxgit_fixtures::Scenario;
    for scenario in
        [Scenario::Preflight, Scenario::RebaseConflict, Scenario::CherryPickConflict, Scenario::StashPopConflict]
    {
        let fixture = fluxgit_fixtures::build(scenario);
        let reads = crate::oracle::check(&fixture, fixture.path());
        let rebasing = (scenario == Scenario::RebaseConflict).then(|| "feature".to_owned());
        assert_eq!(reads.brief.head.rebasing, rebasing, "{}", scenario.name());
    }
}
