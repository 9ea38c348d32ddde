//! Hostile file contents through the whole semantic diff (issue 47's property): declarations nested past the
//! container bound, brackets, and one long identifier, string or comment, in every grammar, committed with the git
//! CLI, read by `Engine::diff_semantic` and `diff_semantic_fallbacks` (whole, and cut by a small budget), and
//! written by both text renderers and the token counter. Each case ends within 20 s on a call-thread-sized stack
//! (1 MiB here, an eighth of the server's), every rendered line stays short (names are clipped), and no control
//! byte reaches the text.

use crate::common;

use std::time::{Duration, Instant};

use fluxgit_engine::diff::semantic::Options;
use fluxgit_fixtures::Scenario;
use proptest::prelude::*;

/// Each grammar's file extension and how it nests containers (`open`, `close`).
const GRAMMARS: [(&str, &str, &str); 9] = [
    ("rs", "mod a {\n", "}\n"),
    ("py", "", ""),
    ("js", "function f() {\n", "}\n"),
    ("ts", "namespace a {\n", "}\n"),
    ("tsx", "namespace a {\n", "}\n"),
    ("go", "func f() {\n", "}\n"),
    ("java", "class A {\n", "}\n"),
    ("c", "#if X\n", "#endif\n"),
    ("cc", "namespace a {\n", "}\n"),
];

/// The longest line a rendering may hold, in characters: a clipped name (256) with its file, kind and counts.
const MAX_LINE_CHARS: usize = 1_200;

/// A text of grammar `grammar` in `shape` at `size` (a depth, or a length in hundreds of bytes).
fn hostile_text(grammar: usize, shape: usize, size: usize) -> String {
    let (extension, open, close) = GRAMMARS[grammar];
    let nest = |open: &str, close: &str| format!("{}x{}", open.repeat(size), close.repeat(size));
    match shape {
        0 if extension == "py" => {
            (0..size.min(1_200)).map(|level| format!("{}class C:\n", " ".repeat(level))).collect()
        }
        0 => nest(open, close),
        1 => nest("(", ")"),
        2 => nest("{", "}"),
        3 => nest("std::vector<", ">"),
        4 => format!("int {} = 1;\n", "a".repeat(size * 100)),
        5 => format!("s = \"{}\"\n", "ab".repeat(size * 50)),
        _ => format!("/* {} */\n", "z".repeat(size * 100)),
    }
}

fn commit(fixture: &fluxgit_fixtures::Fixture, path: &str, text: &str, message: &str) -> String {
    std::fs::write(fixture.path().join(path), text).expect("the work tree is writable");
    fixture.git(&["add", "-A"]);
    fixture.git(&["commit", "-q", "-m", message]);
    fixture.git(&["rev-parse", "HEAD"]).trim().to_owned()
}

/// Checks one rendering: short lines, no control byte but the newline, and a token count.
fn check_text(text: &str, what: &str) {
    for line in text.lines() {
        assert!(line.chars().count() <= MAX_LINE_CHARS, "{what}: a line of {} characters", line.chars().count());
        assert!(!line.chars().any(char::is_control), "{what}: a control character in {line:?}");
    }
    assert!(fluxgit_engine::budget::count_tokens(text) > 0, "{what}: an empty rendering");
}

fn diff_renders_within_bounds(grammar: usize, shape: usize, size: usize) {
    let fixture = fluxgit_fixtures::build(Scenario::Unborn);
    let path = format!("hostile.{}", GRAMMARS[grammar].0);
    let old = hostile_text(grammar, shape, size);
    let base = commit(&fixture, &path, &old, "before");
    let head = commit(&fixture, &path, &format!("{old}y = 2;\n"), "after");
    let engine = common::engine_for(&fixture);
    let repo = engine.resolve(common::repo_path(&fixture)).expect("resolves");
    let options = Options { base: Some(base), head: Some(head), ..Options::default() };
    let render = fluxgit_engine::render::Options::default();
    for budget in [100_000_000, 200] {
        let what = format!("{path} shape {shape} size {size} budget {budget}");
        let result = engine.diff_semantic(&repo, &options, budget, &mut common::measure).expect("a semantic diff");
        assert_eq!(result.data.changed_files, 1, "{what}");
        let text = fluxgit_engine::render::diff_semantic(&result, &render);
        assert!(text.contains(&path), "{what}: {text}");
        check_text(&text, &what);
        let fallbacks =
            engine.diff_semantic_fallbacks(&repo, &options, budget, &mut common::measure).expect("the fallbacks");
        check_text(&fluxgit_engine::render::diff_semantic_fallbacks(&fallbacks, &render), &what);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 27, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn hostile_shapes_in_every_grammar_are_diffed_and_rendered_within_bounds(
        grammar in 0..GRAMMARS.len(),
        shape in 0..7usize,
        size in prop_oneof![0..200usize, 1_000..3_000usize],
    ) {
        let started = Instant::now();
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || diff_renders_within_bounds(grammar, shape, size))
            .expect("a thread")
            .join()
            .map_err(|_| TestCaseError::fail("the case panicked (message above)"))?;
        prop_assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    }
}
