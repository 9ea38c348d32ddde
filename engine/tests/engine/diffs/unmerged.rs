//! Issue 22: `diff.text` on the unmerged paths of a stopped merge, rebase, cherry-pick and stash pop, as `git diff`
//! prints them (the combined `diff --cc` with its `@@@` hunks and conflict markers, or `* Unmerged path` and ours
//! against the work tree) and with `git diff --numstat`'s counts.

use fluxgit_engine::diff::Status;
use fluxgit_engine::diff::text::{self, Inclusion, Report};
use fluxgit_fixtures::{Fixture, Scenario};

use crate::diffs::support::{UNLIMITED, measure, read, unmerged};

fn options(path: Option<&str>, staged: bool) -> text::Options {
    text::Options {
        base: None,
        head: None,
        staged,
        path: path.map(Into::into),
        max_bytes: text::MAX_MAX_BYTES,
        max_lines: None,
        binary: false,
    }
}

fn diff(fixture: &Fixture, options: &text::Options, max_tokens: usize) -> fluxgit_engine::Budgeted<Report> {
    read(fixture, |engine, repo| engine.diff_text(repo, options, max_tokens, &mut measure).expect("diff.text"))
}

/// The sum of `git diff --numstat -- path`'s lines for `path` (git prints `0 0` for the unmerged entry and, when
/// ours differs from the work-tree file, a second line), `None` for binary (`-`).
fn git_counts(fixture: &Fixture, args: &[&str], path: &str) -> (Option<u64>, Option<u64>) {
    let mut git = vec!["diff", "--numstat"];
    git.extend(args);
    git.extend(["--", path]);
    let mut counts = (Some(0), Some(0));
    for line in fixture.git(&git).lines() {
        let fields: Vec<&str> = line.splitn(3, '\t').collect();
        assert_eq!(fields.get(2), Some(&path), "{line}");
        let add = |total: Option<u64>, field: &str| total.zip(field.parse::<u64>().ok()).map(|(a, b)| a + b);
        counts = (add(counts.0, fields[0]), add(counts.1, fields[1]));
    }
    counts
}

#[test]
fn unmerged_paths_read_as_git_diff_prints_them() {
    let mut combined = 0;
    let mut binary = 0;
    for scenario in
        [Scenario::MergeConflict, Scenario::RebaseConflict, Scenario::CherryPickConflict, Scenario::StashPopConflict]
    {
        let fixture = fluxgit_fixtures::build(scenario);
        let paths = unmerged(&fixture);
        assert!(!paths.is_empty(), "{scenario:?}");
        let whole = diff(&fixture, &options(None, false), UNLIMITED).data;
        for path in &paths {
            let label = format!("{scenario:?} {path}");
            // The patch of the path alone is git's text byte for byte.
            let report = diff(&fixture, &options(Some(path), false), UNLIMITED).data;
            assert_eq!(report.patch, fixture.git(&["diff", "--", path]), "{label}");
            let [file] = &report.files[..] else { panic!("{label}: one file: {:?}", report.files) };
            assert_eq!(file.stat.status, Status::Unmerged, "{label}");
            assert_eq!((file.stat.additions, file.stat.deletions), git_counts(&fixture, &[], path), "{label}");
            assert_eq!(file.stat.binary, file.stat.additions.is_none(), "{label}");
            combined += usize::from(report.patch.starts_with("diff --cc "));
            binary += usize::from(report.patch.contains("\nBinary files differ\n"));
            // The whole diff holds the same text and counts for it.
            assert!(whole.patch.contains(&report.patch), "{label}");
            let listed = whole.files.iter().find(|entry| &entry.stat.path == path).expect("listed");
            assert_eq!(listed.stat, file.stat, "{label}");
            // Against the index (`--cached`): git's line and `0 0`.
            let cached = diff(&fixture, &options(Some(path), true), UNLIMITED).data;
            assert_eq!(cached.patch, fixture.git(&["diff", "--cached", "--", path]), "{label} --cached");
            assert_eq!(
                (cached.files[0].stat.additions, cached.files[0].stat.deletions),
                git_counts(&fixture, &["--cached"], path),
                "{label} --cached"
            );
        }
        // Nothing was cut: the listing's own sums are the totals.
        assert_eq!(whole.totals, None, "{scenario:?}");
    }
    // Both kinds were met: content conflicts as combined diffs and a binary one (the rebase's logo).
    assert!(combined >= 4 && binary >= 1, "combined {combined}, binary {binary}");
}

#[test]
fn combined_hunks_are_cut_whole() {
    let fixture = fluxgit_fixtures::build(Scenario::CherryPickConflict);
    let path = "data/big.txt";
    let whole = diff(&fixture, &options(Some(path), false), UNLIMITED).data;
    assert_eq!(*whole.files[0].hunks, 2, "two marker regions, two hunks:\n{}", whole.patch);
    let mut cut_options = options(Some(path), false);
    let first_hunk_end = whole.patch.rfind("\n@@@ ").expect("a second hunk") + 1;
    cut_options.max_bytes = first_hunk_end;
    let cut = diff(&fixture, &cut_options, UNLIMITED).data;
    assert_eq!(cut.patch, whole.patch[..first_hunk_end], "the header and the first hunk");
    assert_eq!((cut.files[0].in_patch, cut.files[0].hunks_shown), (Some(Inclusion::Partial), Some(1)));
    assert!(cut.truncated);
}
