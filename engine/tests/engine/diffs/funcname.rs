//! The function context after each hunk's `@@`, byte for byte as `git diff` prints it: git's default rule on a C
//! file, the built-in `rust` and `python` drivers chosen by `.gitattributes`, a configured `xfuncname` with a
//! capture group, a basic `funcname` with a `!` negation, a built-in driver overridden by the configuration, and a
//! hunk at the top of a file (no context). `git apply --check` still takes the patch.

use std::fmt::Write as _;

use fluxgit_engine::diff::text;
use fluxgit_fixtures::{Fixture, Scenario};

use crate::diffs::support::{UNLIMITED, measure, read};

fn write(fixture: &Fixture, name: &str, contents: &str) {
    std::fs::write(fixture.path().join(name), contents).expect("write a file");
}

/// `count` numbered lines, each `indent` + `word` + number.
fn lines(indent: &str, word: &str, count: usize) -> String {
    (0..count).fold(String::new(), |mut out, n| {
        let _ = writeln!(out, "{indent}{word} {n};");
        out
    })
}

/// The files of the test, before (`edited` false) or after the edit.
fn files(edited: bool) -> Vec<(&'static str, String)> {
    let edit = |text: String, from: &str, to: &str| if edited { text.replacen(from, to, 1) } else { text };
    let c = format!(
        "#include <stdio.h>\n\nstatic int helper(int x)\n{{\n{}}}\n\nint main(int argc, char **argv)\n{{\n{}}}\n",
        lines("\t", "x +=", 12),
        lines("\t", "argc +=", 12)
    );
    let c = edit(edit(c, "x += 8;", "x -= 8;"), "argc += 9;", "argc -= 9;");
    let rust = format!(
        "//! A module.\n\npub struct Point {{\n    x: i32,\n}}\n\nimpl Point {{\n    pub(crate) fn new(x: i32) -> Self \
         {{\n{}        Point {{ x }}\n    }}\n}}\n",
        lines("        ", "let _ = 1 +", 10)
    );
    let rust = edit(rust, "1 + 8;", "2 + 8;");
    let python = format!(
        "import os\n\nclass Greeter:\n    def __init__(self):\n{}\n    async def greet(self, name):\n{}",
        lines("        ", "self.v =", 10),
        lines("        ", "print(name) or", 10)
    );
    let python = edit(edit(python, "self.v = 7;", "self.v = 77;"), "or 8;", "or 88;");
    let sections = format!("BEGIN\nsection alpha\n{}section beta\n{}", lines("  ", "line", 10), lines("  ", "more", 8));
    let sections = edit(edit(sections, "line 8;", "line 88;"), "more 6;", "more 66;");
    let negated = format!("Title here\n{}static nope\n{}", lines("  ", "body", 10), lines("  ", "tail", 6));
    let negated = edit(edit(negated, "body 8;", "body 88;"), "tail 5;", "tail 55;");
    let overridden = format!("fn first() {{\n{}}}\n// mark second\n{}", lines("    ", "a", 8), lines("    ", "b", 8));
    let overridden = edit(overridden, "b 6;", "b 66;");
    let top = edit("first\nsecond\nthird\nfourth\nfifth\nsixth\n".to_owned(), "second", "2nd");
    vec![
        ("main.c", c),
        ("lib.rs", rust),
        ("app.py", python),
        ("notes.sections", sections),
        ("title.negated", negated),
        ("other.rs2", overridden),
        ("top.txt", top),
    ]
}

#[test]
fn function_context_is_gits() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    write(
        &fixture,
        ".gitattributes",
        "*.rs diff=rust\n*.py diff=python\n*.sections diff=sections\n*.negated diff=negated\n*.rs2 diff=cpp\n",
    );
    for (name, contents) in files(false) {
        write(&fixture, name, &contents);
    }
    fixture.git(&["add", "-A"]);
    fixture.git(&["commit", "-q", "-m", "feat: files with functions"]);
    // A capture group names only the section; a basic pattern with a negation skips `static` lines; the built-in
    // `cpp` driver is replaced by a configured one.
    fixture.git(&["config", "diff.sections.xfuncname", "^section ([a-z]+)"]);
    fixture.git(&["config", "diff.negated.funcname", "!^static\n^[A-Z].*"]);
    fixture.git(&["config", "diff.cpp.xfuncname", "^// mark (.*)"]);
    for (name, contents) in files(true) {
        write(&fixture, name, &contents);
    }
    let git = fixture.git_raw(&["diff", "--no-color", "--no-ext-diff", "--no-textconv"]);
    assert!(git.status.success());
    let git = String::from_utf8(git.stdout).expect("utf-8 patch");
    let options = text::Options {
        base: None,
        head: None,
        staged: false,
        path: None,
        max_bytes: text::MAX_MAX_BYTES,
        max_lines: None,
        binary: false,
    };
    let ours = read(&fixture, |engine, repo| engine.diff_text(repo, &options, UNLIMITED, &mut measure).expect("diff"));
    assert_eq!(ours.data.patch, git, "the patch is git's byte for byte");
    // What the rules found, so that a rule that found nothing cannot pass by matching an empty context.
    for expected in [
        "@@ static int helper(int x)\n",
        "@@ int main(int argc, char **argv)\n",
        "@@ pub(crate) fn new(x: i32) -> Self {\n",
        "@@ def __init__(self):\n",
        "@@ async def greet(self, name):\n",
        "@@ alpha\n",
        "@@ beta\n",
        "@@ Title here\n",
        "@@ second\n",
        "@@ -1,5 +1,5 @@\n",
    ] {
        assert!(ours.data.patch.contains(expected), "{expected:?} in\n{}", ours.data.patch);
    }
    assert!(!ours.data.patch.contains("@@ static nope"), "the negated pattern rejects the line");
    let patch_file = fixture.root().join("funcname.patch");
    std::fs::write(&patch_file, &ours.data.patch).expect("write the patch");
    fixture.git(&["apply", "--check", "-R", patch_file.to_str().expect("utf-8 path")]);
}
