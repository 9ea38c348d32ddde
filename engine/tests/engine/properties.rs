//! Property tests: CODEOWNERS parsing and matching, and `repo.history` cursors, never panic on arbitrary input;
//! cursors that were altered are refused as `invalid_cursor`, never read.
//!
//! CI runs 64 cases per property; a long run: `PROPTEST_CASES=20000 cargo test -p fluxgit-engine --test properties
//! --release`.

use crate::common;

use common::measure;
use fluxgit_engine::{Budgeted, Engine, Error, InvalidReason, Options, history, parse_codeowners};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};

/// Cases per property: `PROPTEST_CASES` when set, else a small number that keeps CI fast.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(64);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// Text built from the pieces CODEOWNERS lines are made of, so that patterns, owners, comments and escapes meet.
fn codeowners_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("*".to_owned()),
        Just("**".to_owned()),
        Just("/".to_owned()),
        Just("?".to_owned()),
        Just("[a-z]".to_owned()),
        Just("!".to_owned()),
        Just("\\".to_owned()),
        Just("#".to_owned()),
        Just(" ".to_owned()),
        Just("\t".to_owned()),
        Just("\n".to_owned()),
        Just("@org/team".to_owned()),
        Just("user@example.com".to_owned()),
        Just("docs".to_owned()),
        Just(".md".to_owned()),
        ".{0,6}",
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

/// Repository-relative paths, with the odd empty component, dot or star.
fn path() -> impl Strategy<Value = String> {
    let component = prop_oneof![
        Just("docs".to_owned()),
        Just("a.md".to_owned()),
        Just("*".to_owned()),
        Just(String::new()),
        Just(".".to_owned()),
        "[a-z]{1,4}",
        ".{0,5}",
    ];
    proptest::collection::vec(component, 0..8).prop_map(|parts| parts.join("/"))
}

proptest! {
    #![proptest_config(config())]

    /// Any text parses; line numbers stay within the file; matching any path never panics.
    #[test]
    fn codeowners_never_panics(text in codeowners_text(), paths in proptest::collection::vec(path(), 1..8)) {
        let parsed = parse_codeowners(&text);
        let lines = text.lines().count();
        prop_assert!(parsed.rules.iter().all(|rule| rule.line >= 1 && rule.line <= lines));
        prop_assert!(parsed.errors.iter().all(|error| error.line >= 1 && error.line <= lines));
        prop_assert!(parsed.rules.len() + parsed.errors.len() <= lines);
        for path in &paths {
            let _ = parsed.for_file(path);
            let _ = parsed.for_directory(path);
        }
    }

    /// `*` owns every file, and a later rule for a directory owns everything under it.
    #[test]
    fn codeowners_last_match_wins(dir in "[a-z]{1,6}", rest in "[a-z]{1,6}(/[a-z]{1,6}){0,3}") {
        let parsed = parse_codeowners(&format!("* @all\n/{dir}/ @team\n"));
        let inside = format!("{dir}/{rest}");
        prop_assert_eq!(parsed.for_file(&inside).map(|rule| rule.line), Some(2));
        prop_assert_eq!(parsed.for_directory(&dir).map(|rule| rule.line), Some(2));
        let outside = format!("{dir}x/{rest}");
        prop_assert_eq!(parsed.for_file(&outside).map(|rule| rule.line), Some(1));
    }
}

/// Arbitrary cursors, and real ones with one character changed, are refused as `invalid_cursor` (or, for an
/// unchanged one, answered); nothing panics and nothing is read from an altered cursor.
#[test]
fn history_cursors_are_tamper_evident() {
    let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::ManyBranches);
    let engine = Engine::new(Options { allowed_roots: vec![fixture.root().canonicalize().expect("root")] });
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let first = history::Options { start: None, path: None, limit: 3, cursor: None, symbol: None };
    let page = engine.history(&repo, &first, 1_000_000, &mut measure).expect("first page").data;
    let cursor = page.next_cursor.expect("more than 3 commits");

    let page_with = |text: String| {
        let options = history::Options { cursor: Some(text), ..first.clone() };
        engine.history(&repo, &options, 1_000_000, &mut measure)
    };
    let refused = |result: Result<Budgeted<history::Page>, Error>| -> Result<(), TestCaseError> {
        match result {
            Err(Error::Invalid { reason: InvalidReason::InvalidCursor, .. }) => Ok(()),
            other => Err(TestCaseError::fail(format!("not refused as invalid_cursor: {other:?}"))),
        }
    };

    let mut runner = TestRunner::new(config());
    runner
        .run(&".{0,120}", |text| {
            prop_assume!(text != cursor);
            refused(page_with(text))
        })
        .expect("arbitrary cursors are refused");
    let length = cursor.len();
    runner
        .run(&(0..length, any::<char>()), |(position, replacement)| {
            let mut altered: Vec<char> = cursor.chars().collect();
            altered[position] = replacement;
            let altered: String = altered.into_iter().collect();
            if altered == cursor {
                prop_assert!(page_with(altered).is_ok());
                return Ok(());
            }
            refused(page_with(altered))
        })
        .expect("altered cursors are refused");
}
