//! `file.blame` against `git blame --line-porcelain` line by line: every line's commit, original path and line,
//! author, author time and subject, on whole files and `-L` ranges, at every commit of a history with a similar
//! rename, a merge that changes a line itself and two formatting commits, with and without the ignore list
//! (`--ignore-revs-file`, `blame.ignoreRevsFile`, an empty value that clears it); ranges grouped as git groups
//! lines; budgets cut at whole ranges; each bad input refused with its reason; repositories byte-identical after.

use fluxgit_engine::file::FileRange;
use fluxgit_engine::file::blame::{self, Report};
use fluxgit_engine::{Budgeted, Engine, Error, InvalidReason, Options, budget};
use fluxgit_fixtures::{Fixture, Scenario};

const UNLIMITED: usize = 100_000_000;

fn measure(result: &Budgeted<Report>) -> usize {
    budget::count_tokens(&serde_json::to_string(result).expect("serialises"))
}

fn options(path: &str, rev: Option<&str>, range: Option<(usize, usize)>, ignore_revs: bool) -> blame::Options {
    blame::Options {
        file: FileRange {
            path: path.to_owned(),
            rev: rev.map(Into::into),
            start_line: range.map(|(start, _)| start),
            end_line: range.map(|(_, end)| end),
        },
        ignore_revs,
    }
}

/// Blames with `options`, checking that the fixture is byte-identical afterwards.
fn file_blame(fixture: &Fixture, options: &blame::Options, max_tokens: usize) -> Result<Budgeted<Report>, Error> {
    let before = fluxgit_fixtures::tree_digest(fixture.root());
    let root = fixture.root().canonicalize().expect("fixture root exists");
    let engine = Engine::new(Options { allowed_roots: vec![root] });
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8 temp path")).expect("resolves");
    let result = engine.file_blame(&repo, options, max_tokens, &mut measure);
    drop(repo);
    assert_eq!(before, fluxgit_fixtures::tree_digest(fixture.root()), "file.blame changed the repository");
    result
}

/// One line of `git blame --line-porcelain`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct GitLine {
    sha: String,
    orig_line: usize,
    final_line: usize,
    path: String,
    author: String,
    subject: String,
    boundary: bool,
}

/// `git blame --line-porcelain [extra] rev -- path`, parsed; an empty `rev` blames the work-tree file.
fn git_blame(fixture: &Fixture, rev: &str, path: &str, extra: &[&str]) -> Vec<GitLine> {
    let mut args = vec!["blame", "--line-porcelain"];
    args.extend_from_slice(extra);
    if !rev.is_empty() {
        args.push(rev);
    }
    args.extend_from_slice(&["--", path]);
    let output = fixture.git(&args);
    let mut lines = Vec::new();
    let mut current: Option<GitLine> = None;
    let mut author_name = String::new();
    for text in output.lines() {
        if text.starts_with('\t') {
            lines.push(current.take().expect("a header before each line"));
            continue;
        }
        match current.as_mut() {
            None => {
                let fields: Vec<&str> = text.split(' ').collect();
                current = Some(GitLine {
                    sha: fields[0].to_owned(),
                    orig_line: fields[1].parse().expect("orig line"),
                    final_line: fields[2].parse().expect("final line"),
                    path: String::new(),
                    author: String::new(),
                    subject: String::new(),
                    boundary: false,
                });
            }
            Some(line) => {
                let (key, value) = text.split_once(' ').unwrap_or((text, ""));
                match key {
                    "author" => author_name = value.to_owned(),
                    "author-mail" => line.author = format!("{author_name} {value}"),
                    "summary" => line.subject = value.to_owned(),
                    "filename" => line.path = value.to_owned(),
                    "boundary" => line.boundary = true,
                    _ => {}
                }
            }
        }
    }
    lines
}

/// The author date of `sha` as `git log --format=%aI` prints it.
fn author_time(fixture: &Fixture, sha: &str, cache: &mut std::collections::HashMap<String, String>) -> String {
    cache
        .entry(sha.to_owned())
        .or_insert_with(|| fixture.git(&["log", "-1", "--format=%aI", sha]).trim().to_owned())
        .clone()
}

/// Asserts that the report says, line by line, what git says, and that ranges are grouped as git groups lines.
fn assert_same(fixture: &Fixture, report: &Report, git: &[GitLine], what: &str) {
    let mut times = std::collections::HashMap::new();
    let mut ours = Vec::new();
    for range in &report.ranges {
        let info =
            report.commits.get(&range.commit).unwrap_or_else(|| panic!("{what}: {} not in commits", range.commit));
        for offset in 0..range.lines {
            ours.push((range, offset, info));
        }
    }
    assert_eq!(ours.len(), git.len(), "{what}: line count\n{report:#?}");
    for ((range, offset, info), line) in ours.iter().zip(git) {
        let at = format!("{what}, line {}", line.final_line);
        assert_eq!(range.line + offset, line.final_line, "{at}");
        assert!(line.sha.starts_with(&range.commit), "{at}: git {} vs {}", line.sha, range.commit);
        assert_eq!(range.orig_path.as_deref().unwrap_or(&report.path), line.path, "{at}: path");
        assert_eq!(range.orig_line.unwrap_or(range.line) + offset, line.orig_line, "{at}: orig line");
        assert_eq!(info.author.to_string_lossy(), line.author, "{at}: author");
        if line.sha.bytes().all(|digit| digit == b'0') {
            // Git writes the time of the blame for lines not committed yet; ours is the file's modification time.
            assert!(report.worktree && range.commit == blame::NOT_COMMITTED, "{at}: {range:?}");
        } else {
            assert_eq!(info.time, author_time(fixture, &line.sha, &mut times), "{at}: author time");
        }
        assert_eq!(info.subject, line.subject, "{at}: subject");
        assert_eq!(info.boundary, line.boundary, "{at}: boundary");
    }
    for pair in report.ranges.windows(2) {
        let (first, second) = (&pair[0], &pair[1]);
        let contiguous = first.line + first.lines == second.line;
        let mergeable = contiguous
            && first.commit == second.commit
            && first.orig_path == second.orig_path
            && first.orig_line.unwrap_or(first.line) + first.lines == second.orig_line.unwrap_or(second.line)
            && first.unblamable == second.unblamable;
        assert!(!mergeable, "{what}: ranges {first:?} and {second:?} should be one");
    }
}

trait Lossy {
    fn to_string_lossy(&self) -> String;
}

impl Lossy for fluxgit_engine::history::Person {
    fn to_string_lossy(&self) -> String {
        format!("{} <{}>", self.name, self.email)
    }
}

fn check(fixture: &Fixture, rev: &str, path: &str, range: Option<(usize, usize)>, ignore_revs: bool) -> Report {
    let range_arg = range.map(|(start, end)| format!("{start},{end}"));
    let mut extra: Vec<&str> = Vec::new();
    if let Some(range_arg) = range_arg.as_deref() {
        extra.extend_from_slice(&["-L", range_arg]);
    }
    if ignore_revs && fixture.path().join(".git-blame-ignore-revs").exists() {
        extra.extend_from_slice(&["--ignore-revs-file", ".git-blame-ignore-revs"]);
    }
    let git = git_blame(fixture, rev, path, &extra);
    let report = file_blame(fixture, &options(path, Some(rev), range, ignore_revs), UNLIMITED).expect("blames").data;
    assert_same(fixture, &report, &git, &format!("{path} at {rev} {range:?} ignore={ignore_revs}"));
    report
}

#[test]
fn whole_files_and_ranges_equal_git_blame_at_every_commit() {
    let fixture = fluxgit_fixtures::build(Scenario::Blame);
    let commits = fixture.git(&["rev-list", "--all"]);
    let mut blamed = 0;
    for commit in commits.lines() {
        for path in ["src/parser.c", "lib/parser.c", "README.md"] {
            if !fixture.git_raw(&["cat-file", "-e", &format!("{commit}:{path}")]).status.success() {
                continue;
            }
            check(&fixture, commit, path, None, false);
            check(&fixture, commit, path, Some((3, 9)), false);
            if fixture.git(&["show", &format!("{commit}:{path}")]).lines().count() >= 30 {
                check(&fixture, commit, path, Some((30, 400)), false);
            }
            blamed += 1;
        }
    }
    assert!(blamed >= 9, "{blamed} files blamed");

    // The rename is followed: lines of lib/parser.c at HEAD come from src/parser.c.
    let report = check(&fixture, "HEAD", "lib/parser.c", None, false);
    assert!(report.ranges.iter().any(|range| range.orig_path.as_deref() == Some("src/parser.c")), "{report:#?}");
    assert_eq!(report.total_lines, 44);
    assert!(report.ignored_revs.is_empty() && report.ignore_revs_files.is_empty());
}

#[test]
fn the_ignore_list_is_honoured_as_git_honours_it() {
    let fixture = fluxgit_fixtures::build(Scenario::Blame);
    let report = check(&fixture, "HEAD", "lib/parser.c", None, true);
    assert_eq!(report.ignore_revs_files, vec![".git-blame-ignore-revs".to_owned()]);
    let mut subjects: Vec<&str> =
        report.ignored_revs.iter().map(|line| line.split_once(' ').map_or("", |(_, subject)| subject)).collect();
    subjects.sort_unstable();
    assert_eq!(subjects, ["style: reformat the parser", "style: rename input to text"], "{report:#?}");
    assert!(report.ranges.iter().any(|range| range.unblamable), "the banner stays on the reformat: {report:#?}");
    for range in [(1, 3), (5, 12), (20, 26), (36, 44)] {
        check(&fixture, "HEAD", "lib/parser.c", Some(range), true);
    }
    for rev in ["HEAD~1", "HEAD~2", "HEAD~3", "HEAD~4"] {
        check(&fixture, rev, "lib/parser.c", None, true);
    }
    check(&fixture, "HEAD~5", "src/parser.c", None, true);

    // Git reads the file only when blame.ignoreRevsFile names it; git 2.47 skips an empty value (its documentation
    // says it resets the list).
    fixture.git(&["config", "blame.ignoreRevsFile", ".git-blame-ignore-revs"]);
    let git = git_blame(&fixture, "HEAD", "lib/parser.c", &[]);
    let configured =
        file_blame(&fixture, &options("lib/parser.c", Some("HEAD"), None, true), UNLIMITED).expect("blames").data;
    assert_same(&fixture, &configured, &git, "blame.ignoreRevsFile");
    assert_eq!(configured, report);
    fixture.git(&["config", "--add", "blame.ignoreRevsFile", ""]);
    let git = git_blame(&fixture, "HEAD", "lib/parser.c", &[]);
    let cleared =
        file_blame(&fixture, &options("lib/parser.c", Some("HEAD"), None, true), UNLIMITED).expect("blames").data;
    assert_same(&fixture, &cleared, &git, "blame.ignoreRevsFile with an empty value");
    assert_eq!(cleared, report);
}

#[test]
fn merges_and_renames_of_the_diffs_fixture_equal_git_blame() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    for (rev, path) in
        [("HEAD", "src/long.c"), ("HEAD", "src/helpers.c"), ("HEAD", "README.md"), ("HEAD^2", "src/long.c")]
    {
        check(&fixture, rev, path, None, true);
        check(&fixture, rev, path, Some((2, 4)), true);
    }
}

/// Rewrites the fixture's objects as one pack: laid out as `git fast-import` writes it (each new version of a file
/// or tree a delta on the one before, so walking back reads chains from their full end) or, with `repacked`, as
/// `git repack -adf` does (newer versions are the bases). Commit ids stay the same.
fn pack_objects(fixture: &Fixture, repacked: bool) {
    if repacked {
        fixture.git(&["repack", "-adf", "-q"]);
        return;
    }
    let head = fixture.git(&["rev-parse", "HEAD"]);
    let stream = fixture.git_raw(&["fast-export", "--all", "--signed-tags=verbatim"]).stdout;
    let objects = fixture.path().join(".git/objects");
    for entry in std::fs::read_dir(&objects).expect("objects dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default().to_owned();
        if name == "pack" || (name.len() == 2 && name.bytes().all(|byte| byte.is_ascii_hexdigit())) {
            std::fs::remove_dir_all(&path).expect("objects removed");
        }
    }
    std::fs::create_dir(objects.join("pack")).expect("pack dir");
    let mut import = fixture.git_command(fixture.path());
    // Kept as one pack however few the objects (git unpacks fewer than 100 by default).
    import.args(["-c", "fastimport.unpackLimit=0", "fast-import", "--quiet", "--force"]);
    let mut child = import.stdin(std::process::Stdio::piped()).spawn().expect("git fast-import runs");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), &stream).expect("stream written");
    assert!(child.wait().expect("git fast-import ends").success());
    assert_eq!(fixture.git(&["rev-parse", "HEAD"]), head, "the same commits");
    let packs = std::fs::read_dir(objects.join("pack")).expect("pack dir").count();
    assert_eq!(packs, 2, "one pack and its index");
}

/// `file.blame` reads pack files through its own delta base cache: from either pack layout it answers as git does
/// (whole files and ranges at every commit, the rename, the ignore list, merges).
#[test]
fn packed_histories_equal_git_blame_in_both_pack_layouts() {
    for repacked in [false, true] {
        let fixture = fluxgit_fixtures::build(Scenario::Blame);
        pack_objects(&fixture, repacked);
        for commit in fixture.git(&["rev-list", "--all"]).lines() {
            for path in ["src/parser.c", "lib/parser.c", "README.md"] {
                if fixture.git_raw(&["cat-file", "-e", &format!("{commit}:{path}")]).status.success() {
                    check(&fixture, commit, path, None, false);
                    check(&fixture, commit, path, Some((3, 9)), false);
                }
            }
        }
        let report = check(&fixture, "HEAD", "lib/parser.c", None, true);
        assert!(report.ranges.iter().any(|range| range.orig_path.as_deref() == Some("src/parser.c")), "{report:#?}");
        assert_eq!(report.ignored_revs.len(), 2, "{report:#?}");

        let diffs = fluxgit_fixtures::build(Scenario::Diffs);
        pack_objects(&diffs, repacked);
        for (rev, path) in [("HEAD", "src/long.c"), ("HEAD", "src/helpers.c"), ("HEAD^2", "src/long.c")] {
            check(&diffs, rev, path, None, true);
        }
    }
}

/// Replaced objects (`git replace`, `refs/replace/`) are read as git reads them, also from a pack read by the
/// engine's own reader: a commit grafted onto no parent (`git replace --graft`) ends the walk there, so every line it
/// has is blamed on it.
#[test]
fn replaced_commits_are_blamed_as_git_blames_them() {
    let fixture = fluxgit_fixtures::build(Scenario::Blame);
    pack_objects(&fixture, true);
    let path = "lib/parser.c";
    let before = git_blame(&fixture, "HEAD", path, &[]);
    let first_touch = fixture.git(&["log", "--format=%H", "-n", "1", "HEAD~1", "--", "src/parser.c", path]);
    fixture.git(&["replace", "--graft", first_touch.trim()]);
    let after = git_blame(&fixture, "HEAD", path, &[]);
    assert_ne!(before, after, "the graft changes git's answer: the test can fail");
    check(&fixture, "HEAD", path, None, false);
    check(&fixture, "HEAD", path, Some((3, 9)), false);
}

#[test]
fn budgets_cut_at_whole_ranges() {
    let fixture = fluxgit_fixtures::build(Scenario::Blame);
    let full = file_blame(&fixture, &options("lib/parser.c", None, None, true), UNLIMITED).expect("blames");
    assert!(full.omitted.is_empty() && !full.data.truncated);
    let total = full.data.ranges.len();
    assert!(total >= 5, "{total} ranges");
    let full_tokens = measure(&full);
    for max_tokens in [full_tokens / 3, full_tokens / 2, full_tokens - 10] {
        let cut = file_blame(&fixture, &options("lib/parser.c", None, None, true), max_tokens).expect("fits");
        assert!(measure(&cut) <= max_tokens, "{max_tokens}: {}", measure(&cut));
        let shown = cut.data.ranges.len();
        assert!(shown < total, "{max_tokens} shows all");
        assert_eq!(cut.data.ranges[..], full.data.ranges[..shown]);
        assert!(cut.data.truncated);
        assert_eq!(serde_json::to_value(&cut.omitted).expect("json"), serde_json::json!({ "ranges": total - shown }));
        let last = cut.data.ranges.last().map(|range| range.line + range.lines - 1);
        assert_eq!(cut.data.end_line, last);
        assert!(cut.data.commits.keys().all(|sha| cut.data.ranges.iter().any(|range| &range.commit == sha)));
    }
    match file_blame(&fixture, &options("lib/parser.c", None, None, true), 20) {
        Err(Error::Invalid { reason: InvalidReason::BudgetBelowFloor, floor: Some(floor), .. }) => assert!(floor > 20),
        other => panic!("expected the floor, got {other:?}"),
    }
}

#[test]
fn bad_input_is_refused_with_its_reason() {
    let fixture = fluxgit_fixtures::build(Scenario::Blame);
    let reason = |options: blame::Options| match file_blame(&fixture, &options, UNLIMITED) {
        Err(Error::Invalid { reason, .. }) => reason,
        other => panic!("expected invalid params, got {other:?}"),
    };
    assert_eq!(reason(options("../outside.c", None, None, true)), InvalidReason::InvalidPath);
    assert_eq!(reason(options("/etc/passwd", None, None, true)), InvalidReason::InvalidPath);
    assert_eq!(reason(options("src/parser.c", None, None, true)), InvalidReason::NotFound);
    assert_eq!(reason(options("lib/parser.c", Some("HEAD~6"), None, true)), InvalidReason::NotFound);
    assert_eq!(reason(options("lib", None, None, true)), InvalidReason::NotAFile);
    assert_eq!(reason(options("assets/blob.bin", None, None, true)), InvalidReason::BinaryFile);
    assert_eq!(reason(options("lib/parser.c", None, Some((9, 3)), true)), InvalidReason::InvalidRange);
    assert_eq!(reason(options("lib/parser.c", None, Some((45, 50)), true)), InvalidReason::InvalidRange);
    assert_eq!(
        reason(options("lib/parser.c", Some("--output=/tmp/owned"), None, true)),
        InvalidReason::InvalidRevision
    );
    assert_eq!(reason(options("lib/parser.c", Some("no-such-branch"), None, true)), InvalidReason::UnknownRevision);

    let empty = file_blame(&fixture, &options("empty.txt", None, None, true), UNLIMITED).expect("blames").data;
    assert_eq!((empty.total_lines, empty.start_line, empty.end_line, empty.ranges.len()), (0, None, None, 0));
    assert!(git_blame(&fixture, "HEAD", "empty.txt", &[]).is_empty());
}

/// Edits, insertions and deletions of a line each, in the work-tree copy of `lines`.
fn edit_work_tree(fixture: &Fixture, path: &str) {
    let text = std::fs::read_to_string(fixture.path().join(path)).expect("the file is there");
    let mut lines: Vec<String> = text.lines().map(|line| format!("{line}\n")).collect();
    lines[2] = "int parse_edited(void) { return 3; }\n".to_owned();
    lines.insert(10, "/* added in the work tree */\n".to_owned());
    lines.insert(11, "int parse_added(void) { return 11; }\n".to_owned());
    lines.drain(20..23);
    lines.push("/* appended */\n".to_owned());
    std::fs::write(fixture.path().join(path), lines.concat()).expect("write");
}

#[test]
fn the_work_tree_is_blamed_as_git_blames_it_without_a_revision() {
    let fixture = fluxgit_fixtures::build(Scenario::Blame);
    // A clean file: the work tree's blame is HEAD's.
    let clean = file_blame(&fixture, &options("lib/parser.c", None, None, false), UNLIMITED).expect("blames").data;
    assert_same(&fixture, &clean, &git_blame(&fixture, "", "lib/parser.c", &[]), "clean work tree");
    assert!(clean.worktree && !clean.commits.contains_key(blame::NOT_COMMITTED), "{clean:#?}");

    // Edited, added and deleted lines, then also staged (git blames the work tree against HEAD either way).
    edit_work_tree(&fixture, "lib/parser.c");
    for staged in [false, true] {
        if staged {
            fixture.git(&["add", "lib/parser.c"]);
        }
        for (range, ignore_revs) in [(None, false), (None, true), (Some((9, 14)), true)] {
            let mut extra: Vec<String> = Vec::new();
            if let Some((start, end)) = range {
                extra.extend(["-L".to_owned(), format!("{start},{end}")]);
            }
            if ignore_revs {
                extra.extend(["--ignore-revs-file".to_owned(), ".git-blame-ignore-revs".to_owned()]);
            }
            let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
            let git = git_blame(&fixture, "", "lib/parser.c", &extra);
            let report = file_blame(&fixture, &options("lib/parser.c", None, range, ignore_revs), UNLIMITED)
                .expect("blames")
                .data;
            assert_same(&fixture, &report, &git, &format!("work tree, staged={staged} {range:?} {ignore_revs}"));
            assert!(git.iter().any(|line| line.sha.starts_with("0000000")), "git marks uncommitted lines");
            let info = &report.commits[blame::NOT_COMMITTED];
            assert_eq!(info.author.to_string_lossy(), "Not Committed Yet <not.committed.yet>");
            assert_eq!(info.subject, "Version of lib/parser.c from lib/parser.c");
        }
    }
    // The committed version stays one `rev` away.
    check(&fixture, "HEAD", "lib/parser.c", None, true);

    // An uncommitted rename with an edit is followed as git follows it (through the index).
    fixture.git(&["mv", "lib/parser.c", "lib/moved.c"]);
    let git = git_blame(&fixture, "", "lib/moved.c", &[]);
    let moved = file_blame(&fixture, &options("lib/moved.c", None, None, false), UNLIMITED).expect("blames").data;
    assert_same(&fixture, &moved, &git, "uncommitted rename");
    assert!(moved.ranges.iter().any(|range| range.orig_path.as_deref() == Some("lib/parser.c")), "{moved:#?}");

    // A file added to the index only: every line is not committed yet.
    std::fs::write(fixture.path().join("new.txt"), "one\ntwo\n").expect("write");
    fixture.git(&["add", "new.txt"]);
    let added = file_blame(&fixture, &options("new.txt", None, None, false), UNLIMITED).expect("blames").data;
    assert_same(&fixture, &added, &git_blame(&fixture, "", "new.txt", &[]), "added file");

    // Untracked, or deleted from the work tree: not found, as git refuses (`no such path`, `cannot lstat`).
    std::fs::write(fixture.path().join("untracked.txt"), "x\n").expect("write");
    std::fs::remove_file(fixture.path().join("README.md")).expect("remove");
    for path in ["untracked.txt", "README.md"] {
        assert!(!fixture.git_raw(&["blame", "--", path]).status.success(), "git blames {path}");
        match file_blame(&fixture, &options(path, None, None, false), UNLIMITED) {
            Err(Error::Invalid { reason: InvalidReason::NotFound, .. }) => {}
            other => panic!("{path}: expected not_found, got {other:?}"),
        }
    }
}

#[test]
fn shallow_clones_are_blamed_to_their_boundary_as_git_does() {
    let fixture = fluxgit_fixtures::build(Scenario::ShallowTwo);
    for path in ["src/util.c", "src/main.c", "README.md", "grown.txt", "mainline/2.txt"] {
        let report = check(&fixture, "HEAD", path, None, false);
        assert!(report.shallow, "{report:#?}");
    }
    let report = check(&fixture, "HEAD", "src/util.c", None, false);
    assert!(report.commits.values().any(|info| info.boundary), "{report:#?}");
}

#[test]
fn a_configured_ignore_file_that_cannot_be_read_is_refused_as_git_refuses() {
    let fixture = fluxgit_fixtures::build(Scenario::Blame);
    fixture.git(&["config", "blame.ignoreRevsFile", "missing-ignore-revs"]);
    assert!(!fixture.git_raw(&["blame", "HEAD", "--", "lib/parser.c"]).status.success(), "git refuses");
    match file_blame(&fixture, &options("lib/parser.c", Some("HEAD"), None, true), UNLIMITED) {
        Err(Error::GitRead { message, .. }) => assert!(message.contains("missing-ignore-revs"), "{message}"),
        other => panic!("expected a git read error, got {other:?}"),
    }
    // Without the ignore list there is nothing to read (git 2.47 cannot be told so: it skips empty values).
    let report =
        file_blame(&fixture, &options("lib/parser.c", Some("HEAD"), None, false), UNLIMITED).expect("blames").data;
    fixture.git(&["config", "--unset", "blame.ignoreRevsFile"]);
    let git = git_blame(&fixture, "HEAD", "lib/parser.c", &[]);
    assert_same(&fixture, &report, &git, "ignoreRevs: false");
}

#[test]
fn authors_are_mapped_through_the_mailmap_as_git_blame_maps_them() {
    let fixture = fluxgit_fixtures::build(Scenario::Blame);
    let before = check(&fixture, "HEAD", "lib/parser.c", None, false);
    let authors: std::collections::BTreeSet<String> =
        before.commits.values().map(|info| info.author.to_string_lossy()).collect();
    let first = authors.iter().next().expect("an author").clone();
    let (name, email) = first.split_once(" <").expect("Name <email>");
    let email = email.trim_end_matches('>');
    // By email: a new name and email; the work tree's `.mailmap`, as git reads it (uncommitted here).
    std::fs::write(fixture.path().join(".mailmap"), format!("Mapped Person <mapped@example.org> <{email}>\n"))
        .expect("write .mailmap");
    let mapped = check(&fixture, "HEAD", "lib/parser.c", None, false);
    assert!(mapped.commits.values().any(|info| info.author.to_string_lossy() == "Mapped Person <mapped@example.org>"));
    assert!(mapped.commits.values().all(|info| info.author.to_string_lossy() != first), "{name} is mapped");
    // `mailmap.file` outside the repository (but under the allowed root: one the repository's own config names
    // outside the roots is not read): a name only, matched by name and email.
    let file = fixture.root().join("mailmap");
    std::fs::write(&file, format!("Other Name <{email}> {name} <{email}>\n")).expect("write mailmap.file");
    std::fs::remove_file(fixture.path().join(".mailmap")).expect("remove .mailmap");
    fixture.git(&["config", "mailmap.file", file.to_str().expect("utf-8 temp path")]);
    let configured = check(&fixture, "HEAD", "lib/parser.c", None, false);
    let expected = format!("Other Name <{email}>");
    assert!(configured.commits.values().any(|info| info.author.to_string_lossy() == expected), "{configured:#?}");
}

/// Issue 35: a range of at most 5 lines carries each commit's message body as `git log -1 --format=%B` gives it
/// after the subject (blank lines left out), bounded to 5 lines and 400 bytes of whole lines, `bodyCut` when git
/// has more; the text shows it indented under the commit's first range. A larger range carries none.
#[test]
fn small_ranges_carry_each_commits_message_body() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let write = |text: &str| std::fs::write(fixture.path().join("why.txt"), text).expect("writes");
    let commit = |message: &str| {
        fixture.git(&["add", "why.txt"]);
        fixture.git(&["commit", "-q", "-m", message]);
    };
    // Eight short body lines in two paragraphs with a trailer: cut at five lines.
    let short: Vec<String> = (1..=7).map(|n| format!("Reason {n}: the parser needed it.")).collect();
    write("one\ntwo\nthree\nfour\nfive\nsix\n");
    commit(&format!(
        "why: add the file\n\n{}\n\n{}\n\nSigned-off-by: A U Thor <author@example.com>\n",
        short[..3].join("\n"),
        short[3..].join("\n")
    ));
    // Lines of 250 bytes with a multi-byte character: cut at 400 bytes, whole lines only.
    let wide: Vec<String> = (1..=3).map(|n| format!("{n} é {}", "x".repeat(245))).collect();
    write("one\nTWO\nthree\nfour\nfive\nsix\n");
    commit(&format!("why: change two\n\n{}\n", wide.join("\n")));
    write("one\nTWO\nTHREE\nfour\nfive\nsix\n");
    commit("why: change three\n\nA body of one paragraph\nthat fits whole.\n");
    write("one\nTWO\nTHREE\nFOUR\nfive\nsix\n");
    commit("why: change four");

    for range in [(1, 1), (2, 2), (3, 3), (4, 4), (1, 5), (2, 6)] {
        let result = file_blame(&fixture, &options("why.txt", None, Some(range), true), UNLIMITED).expect("blames");
        let report = &result.data;
        let small = range.1 - range.0 < blame::BODY_RANGE_LINES;
        let text = fluxgit_engine::render::file_blame(&result, &Default::default());
        for (sha, info) in &report.commits {
            let message = fixture.git(&["log", "-1", "--format=%B", sha]);
            let git: Vec<&str> =
                message.lines().skip(1).map(str::trim_end).filter(|line| !line.trim().is_empty()).collect();
            if !small {
                assert_eq!((&info.body, info.body_cut), (&None, false), "{range:?} {sha}");
                continue;
            }
            let kept: Vec<&str> = info.body.as_deref().map(|body| body.lines().collect()).unwrap_or_default();
            assert_eq!(kept, git[..kept.len()], "{range:?} {sha}: the body begins as git's");
            assert_eq!(info.body_cut, kept.len() < git.len(), "{range:?} {sha}");
            let bytes = info.body.as_deref().map_or(0, str::len);
            assert!(kept.len() <= blame::BODY_LINES && bytes <= blame::BODY_BYTES, "{range:?} {sha}: {bytes}");
            if info.body_cut && kept.len() < blame::BODY_LINES {
                assert!(bytes + 1 + git[kept.len()].len() > blame::BODY_BYTES, "{range:?} {sha}: room was left");
            }
            for line in &kept {
                assert!(text.lines().any(|shown| shown == format!("    {line}")), "{range:?}: {line}\n{text}");
            }
        }
        let bodies: Vec<(usize, bool)> = report
            .commits
            .values()
            .map(|info| (info.body.as_deref().map_or(0, |body| body.lines().count()), info.body_cut))
            .collect();
        if range == (1, 5) {
            // The four commits: five of seven lines, one wide line of three, two lines, none.
            assert_eq!(bodies.iter().copied().collect::<std::collections::BTreeSet<_>>().len(), 4, "{bodies:?}");
            assert!(bodies.contains(&(5, true)) && bodies.contains(&(1, true)) && bodies.contains(&(2, false)));
            assert!(bodies.contains(&(0, false)) && text.contains("\n    ...\n"), "{text}");
        }
    }
}
