//! `file.read` against `git show <rev>:<path>` byte for byte (UTF-8, non-UTF-8, binary, CRLF, no final newline,
//! executable), `git ls-tree` for mode and blob sha, line ranges, byte and token cuts at whole lines, and each bad
//! input refused with its reason; every repository byte-identical after every read.

use crate::common;

use base64::Engine as _;
use common::measure;
use fluxgit_engine::file::FileRange;
use fluxgit_engine::file::read::{self, Report};
use fluxgit_engine::{Budgeted, Engine, Error, InvalidReason, Options};
use fluxgit_fixtures::{Fixture, Scenario};

const UNLIMITED: usize = 100_000_000;

fn options(path: &str, rev: Option<&str>) -> read::Options {
    read::Options {
        file: FileRange { path: path.to_owned(), rev: rev.map(Into::into), start_line: None, end_line: None },
        max_bytes: read::MAX_MAX_BYTES,
    }
}

/// `options` with the line range `start..=end`.
fn with_lines(mut options: read::Options, start: Option<usize>, end: Option<usize>) -> read::Options {
    options.file.start_line = start;
    options.file.end_line = end;
    options
}

/// Reads with `options`, checking that the fixture is byte-identical afterwards.
fn file_read(fixture: &Fixture, options: &read::Options, max_tokens: usize) -> Result<Budgeted<Report>, Error> {
    let before = fluxgit_fixtures::tree_digest(fixture.root());
    let root = fixture.root().canonicalize().expect("fixture root exists");
    let engine = Engine::new(Options { allowed_roots: vec![root] });
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8 temp path")).expect("resolves");
    let result = engine.file_read(&repo, options, max_tokens, &mut measure);
    drop(repo);
    assert_eq!(before, fluxgit_fixtures::tree_digest(fixture.root()), "file.read changed the repository");
    result
}

/// The exact bytes a report shows.
fn shown_bytes(report: &Report) -> Vec<u8> {
    match (&report.content, &report.content_base64) {
        (Some(text), None) => text.as_bytes().to_vec(),
        (None, Some(encoded)) => base64::engine::general_purpose::STANDARD.decode(encoded).expect("valid base64"),
        (None, None) => Vec::new(),
        (Some(_), Some(_)) => panic!("both content and contentBase64"),
    }
}

fn git_show(fixture: &Fixture, rev: &str, path: &str) -> Vec<u8> {
    let output = fixture.git_raw(&["show", &format!("{rev}:{path}")]);
    assert!(output.status.success(), "git show {rev}:{path}: {}", String::from_utf8_lossy(&output.stderr));
    output.stdout
}

/// Git's lines: split after each newline, a last line without one counts.
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|byte| *byte == b'\n').collect()
}

fn reason(result: Result<Budgeted<Report>, Error>) -> InvalidReason {
    match result {
        Err(Error::Invalid { reason, .. }) => reason,
        other => panic!("expected invalid params, got {other:?}"),
    }
}

#[test]
fn every_file_at_two_revisions_equals_git_show() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    let mut kinds = (0, 0, 0);
    for rev in ["HEAD", "HEAD~2"] {
        let listing = fixture.git(&["ls-tree", "-r", "-z", rev]);
        for record in listing.split('\0').filter(|record| !record.is_empty()) {
            let (meta, path) = record.split_once('\t').expect("ls-tree record");
            let meta: Vec<&str> = meta.split(' ').collect();
            if meta[1] != "blob" {
                continue;
            }
            let report = file_read(&fixture, &options(path, Some(rev)), UNLIMITED).expect("file.read").data;
            let expected = git_show(&fixture, rev, path);
            assert_eq!(report.mode, meta[0], "{rev}:{path}");
            assert_eq!(report.blob_sha, meta[2], "{rev}:{path}");
            assert_eq!(report.rev, fixture.git(&["rev-parse", rev]).trim());
            assert_eq!(report.size, expected.len() as u64, "{rev}:{path}");
            assert!(!report.truncated);
            if expected[..expected.len().min(8000)].contains(&0) {
                assert!(report.binary && report.content.is_none() && report.content_base64.is_none(), "{path}");
                kinds.0 += 1;
                continue;
            }
            assert!(!report.binary, "{rev}:{path}");
            assert_eq!(report.non_utf8, std::str::from_utf8(&expected).is_err(), "{rev}:{path}");
            kinds.1 += usize::from(report.non_utf8);
            kinds.2 += usize::from(!report.non_utf8);
            assert_eq!(shown_bytes(&report), expected, "{rev}:{path} byte for byte");
            assert_eq!(report.total_lines, lines(&expected).len(), "{rev}:{path}");
            let end = Some(report.total_lines).filter(|total| *total > 0);
            assert_eq!((report.start_line, report.end_line), (Some(1), end));
        }
    }
    assert!(kinds.0 >= 1 && kinds.1 >= 1 && kinds.2 >= 10, "binary, non-UTF-8 and text files covered: {kinds:?}");
}

#[test]
fn line_ranges_equal_git_lines() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    for (path, start, end) in [
        ("src/long.c", 10, 20),
        ("src/long.c", 60, 60),
        ("src/long.c", 55, 999),
        ("src/no-eol.txt", 2, 2),
        ("data/legacy.txt", 2, 3),
    ] {
        let expected = git_show(&fixture, "HEAD", path);
        let all = lines(&expected);
        let mut options = options(path, None);
        options.file.start_line = Some(start);
        options.file.end_line = Some(end);
        let report = file_read(&fixture, &options, UNLIMITED).expect("file.read").data;
        let last = end.min(all.len());
        assert_eq!(shown_bytes(&report), all[start - 1..last].concat(), "{path} {start}..{end}");
        assert_eq!((report.start_line, report.end_line, report.truncated), (Some(start), Some(last), false));
        assert_eq!(report.total_lines, all.len());
    }
}

#[test]
fn caps_cut_at_whole_lines_and_say_so() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    let expected = git_show(&fixture, "HEAD", "src/long.c");
    let all = lines(&expected);
    // maxBytes: 70 bytes hold two 32-byte lines, not three.
    let mut by_bytes = options("src/long.c", None);
    by_bytes.max_bytes = 70;
    let cut = file_read(&fixture, &by_bytes, UNLIMITED).expect("file.read");
    assert_eq!(shown_bytes(&cut.data), all[..2].concat());
    assert!(all[..2].concat().len() <= 70 && all[..3].concat().len() > 70);
    assert_eq!((cut.data.end_line, cut.data.truncated), (Some(2), true));
    assert_eq!(serde_json::to_value(&cut.omitted).expect("json"), serde_json::json!({"lines": 58}));
    // maxTokens: the whole result fits, and one more line would not.
    for max_tokens in [250, 400, 700] {
        let cut = file_read(&fixture, &options("src/long.c", None), max_tokens).expect("file.read");
        let shown = cut.data.end_line.expect("text");
        assert!(measure(&cut) <= max_tokens, "within {max_tokens}");
        assert!(shown < 60 && cut.data.truncated);
        assert_eq!(shown_bytes(&cut.data), all[..shown].concat());
        assert_eq!(serde_json::to_value(&cut.omitted).expect("json"), serde_json::json!({"lines": 60 - shown}));
        let mut one_more = options("src/long.c", None);
        one_more.file.end_line = Some(shown + 1);
        let bigger = file_read(&fixture, &one_more, UNLIMITED).expect("file.read");
        let mut as_cut = bigger.clone();
        as_cut.data.truncated = true;
        as_cut.omitted = cut.omitted.clone();
        assert!(measure(&as_cut) > max_tokens, "line {} would have fitted {max_tokens}", shown + 1);
    }
    // A budget under the metadata's size names the floor.
    let Err(Error::Invalid { reason, floor, .. }) = file_read(&fixture, &options("src/long.c", None), 20) else {
        panic!("below floor");
    };
    assert_eq!(reason, InvalidReason::BudgetBelowFloor);
    assert!(floor.is_some_and(|floor| floor > 20));
}

#[test]
fn bad_input_is_refused_with_its_reason() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    let cases: Vec<(read::Options, InvalidReason)> = vec![
        (options("../etc/passwd", None), InvalidReason::InvalidPath),
        (options("src/../../x", None), InvalidReason::InvalidPath),
        (options("/etc/passwd", None), InvalidReason::InvalidPath),
        (options("src/\u{7}x", None), InvalidReason::InvalidPath),
        (options("src/missing.c", None), InvalidReason::NotFound),
        // Added by the merge: absent two commits back.
        (options("src/topic.c", Some("HEAD~2")), InvalidReason::NotFound),
        (options("src", None), InvalidReason::NotAFile),
        (options("src/long.c", Some("--output=/tmp/x")), InvalidReason::InvalidRevision),
        (options("src/long.c", Some("-1")), InvalidReason::InvalidRevision),
        (options("src/long.c", Some("no-such-branch")), InvalidReason::UnknownRevision),
        (with_lines(options("src/long.c", None), Some(5), Some(4)), InvalidReason::InvalidRange),
        (with_lines(options("src/long.c", None), Some(61), None), InvalidReason::InvalidRange),
    ];
    for (options, expected) in cases {
        assert_eq!(reason(file_read(&fixture, &options, UNLIMITED)), expected, "{options:?}");
    }
    let submodules = fluxgit_fixtures::build(Scenario::Submodules);
    let gitlink = submodules.git(&["ls-files", "-s"]);
    let path = gitlink
        .lines()
        .find(|line| line.starts_with("160000"))
        .and_then(|line| line.split_once('\t'))
        .map(|(_, path)| path.to_owned())
        .expect("a submodule");
    assert_eq!(reason(file_read(&submodules, &options(&path, None), UNLIMITED)), InvalidReason::NotAFile);
}
