//! `diff.semantic` on crafted commits, one language at a time: each case commits a `before` and an `after` tree
//! with the git CLI, reads `before..after` through the engine and compares the text rendering (one line per
//! changed symbol) with the exact expected lines. Then the fallbacks, one per reason, and the selections that
//! are not two commits (staged, work tree).

use crate::common;

use std::path::Path;

use fluxgit_engine::Budgeted;
use fluxgit_engine::diff::semantic::{FallbackReason, Options, Report};
use fluxgit_fixtures::{Fixture, Scenario};

/// Large enough that nothing is cut.
const UNLIMITED: usize = 100_000_000;

/// Writes `files` (path, content) into the work tree, removing the tracked files not among them.
fn write_tree(fixture: &Fixture, files: &[(&str, &str)]) {
    let tracked = fixture.git(&["ls-files"]);
    for path in tracked.lines() {
        // The fixture's own `README.md` and `notes.txt` stay as they are.
        if !files.iter().any(|(name, _)| *name == path) && !["README.md", "notes.txt"].contains(&path) {
            std::fs::remove_file(fixture.path().join(path)).expect("a tracked file is removable");
        }
    }
    for (path, content) in files {
        let path = fixture.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("directories are creatable");
        std::fs::write(path, content).expect("the work tree is writable");
    }
}

fn commit(fixture: &Fixture, files: &[(&str, &str)], message: &str) -> String {
    write_tree(fixture, files);
    fixture.git(&["add", "-A"]);
    fixture.git(&["commit", "-q", "--allow-empty", "-m", message]);
    fixture.git(&["rev-parse", "HEAD"]).trim().to_owned()
}

fn semantic(fixture: &Fixture, options: &Options) -> Budgeted<Report> {
    let engine = common::engine_for(fixture);
    let repo = engine.resolve(common::repo_path(fixture)).expect("resolves");
    engine.diff_semantic(&repo, options, UNLIMITED, &mut common::measure).expect("a semantic diff")
}

/// The rendering's lines after the selection line.
fn lines(result: &Budgeted<Report>) -> Vec<String> {
    fluxgit_engine::render::diff_semantic(result, &fluxgit_engine::render::Options::default())
        .lines()
        .skip(1)
        .map(str::to_owned)
        .collect()
}

/// Commits `before` then `after` in a fresh repository and checks the semantic diff between them.
fn check(before: &[(&str, &str)], after: &[(&str, &str)], expected: &[&str]) {
    let fixture = fluxgit_fixtures::build(Scenario::Unborn);
    let base = commit(&fixture, before, "before");
    let head = commit(&fixture, after, "after");
    let options = Options { base: Some(base), head: Some(head), ..Options::default() };
    let result = semantic(&fixture, &options);
    assert_eq!(lines(&result), expected, "JSON: {}", serde_json::to_string_pretty(&result.data).expect("json"));
}

const RUST: &str = "use std::fmt;

pub struct Flags {
    verbose: bool,
}

impl Flags {
    pub fn new() -> Flags {
        Flags { verbose: false }
    }
}

fn parse_low(input: &str) -> usize {
    let trimmed = input.trim();
    trimmed.len()
}

fn helper() -> u32 {
    41 + 1
}
";

#[test]
fn rust_functions_added_removed_modified_renamed() {
    let added = format!("{RUST}\nfn extra() -> u32 {{\n    7\n}}\n");
    check(
        &[("src/lib.rs", RUST)],
        &[("src/lib.rs", &added)],
        &["A src/lib.rs fn extra (+3 -0)", "T src/lib.rs top-level (+1 -0)"],
    );
    let removed = RUST.replace("\nfn helper() -> u32 {\n    41 + 1\n}\n", "");
    check(
        &[("src/lib.rs", RUST)],
        &[("src/lib.rs", &removed)],
        &["D src/lib.rs fn helper (+0 -3)", "T src/lib.rs top-level (+0 -1)"],
    );
    let modified = RUST.replace("    trimmed.len()", "    trimmed.chars().count()");
    check(&[("src/lib.rs", RUST)], &[("src/lib.rs", &modified)], &["M src/lib.rs fn parse_low (+1 -1)"]);
    let renamed = RUST.replace("fn helper()", "fn answer()");
    check(&[("src/lib.rs", RUST)], &[("src/lib.rs", &renamed)], &["R src/lib.rs fn answer (+1 -1) <- helper"]);
    let signature =
        RUST.replace("fn parse_low(input: &str) -> usize", "fn parse_low(input: &str, strict: bool) -> usize");
    check(&[("src/lib.rs", RUST)], &[("src/lib.rs", &signature)], &["M src/lib.rs fn parse_low (+1 -1) sig"]);
}

#[test]
fn rust_moves_methods_and_imports() {
    let without = RUST.replace("\nfn helper() -> u32 {\n    41 + 1\n}\n", "");
    let other = "fn helper() -> u32 {\n    41 + 1\n}\n";
    check(
        &[("src/lib.rs", RUST), ("src/other.rs", "const LIMIT: u32 = 3;\n")],
        &[("src/lib.rs", &without), ("src/other.rs", &format!("const LIMIT: u32 = 3;\n\n{other}"))],
        &[
            "T src/lib.rs top-level (+0 -1)",
            "V src/other.rs fn helper (+3 -3) <- src/lib.rs",
            "T src/other.rs top-level (+1 -0)",
        ],
    );
    let method = RUST.replace(
        "        Flags { verbose: false }\n    }\n",
        "        Flags { verbose: false }\n    }\n\n    pub fn verbose(&self) -> bool {\n        self.verbose\n    }\n",
    );
    check(
        &[("src/lib.rs", RUST)],
        &[("src/lib.rs", &method)],
        &["M src/lib.rs impl Flags (+1 -0)", "A src/lib.rs fn Flags::verbose (+3 -0)"],
    );
    let imports = RUST.replace("use std::fmt;", "use std::fmt;\nuse std::io;");
    check(&[("src/lib.rs", RUST)], &[("src/lib.rs", &imports)], &["T src/lib.rs top-level (+1 -0)"]);
}

const PYTHON: &str = "import os

LIMIT = 10


class Client:
    def __init__(self, url):
        self.url = url

    def get(self, path):
        return os.path.join(self.url, path)


def parse(text):
    parts = text.split()
    return parts


def helper():
    return 42
";

#[test]
fn python_functions_classes_and_imports() {
    let modified = PYTHON.replace("    return parts", "    return [part.strip() for part in parts]");
    check(&[("app.py", PYTHON)], &[("app.py", &modified)], &["M app.py fn parse (+1 -1)"]);
    let renamed = PYTHON.replace("def helper():", "def answer():");
    check(&[("app.py", PYTHON)], &[("app.py", &renamed)], &["R app.py fn answer (+1 -1) <- helper"]);
    let signature = PYTHON.replace("def parse(text):", "def parse(text, sep=None):");
    check(&[("app.py", PYTHON)], &[("app.py", &signature)], &["M app.py fn parse (+1 -1) sig"]);
    let method = PYTHON.replace(
        "        return os.path.join(self.url, path)\n",
        "        return os.path.join(self.url, path)\n\n    def close(self):\n        self.url = None\n",
    );
    check(
        &[("app.py", PYTHON)],
        &[("app.py", &method)],
        &["A app.py fn Client.close (+2 -0)", "T app.py top-level (+1 -0)"],
    );
    let imports = PYTHON.replace("import os\n", "import os\nimport sys\n");
    check(&[("app.py", PYTHON)], &[("app.py", &imports)], &["T app.py top-level (+1 -0)"]);
    let constant = PYTHON.replace("LIMIT = 10", "LIMIT = 20");
    check(&[("app.py", PYTHON)], &[("app.py", &constant)], &["M app.py const LIMIT (+1 -1)"]);
    let added = format!("{PYTHON}\n\ndef extra():\n    return 7\n");
    check(&[("app.py", PYTHON)], &[("app.py", &added)], &["A app.py fn extra (+2 -0)", "T app.py top-level (+2 -0)"]);
    let removed = PYTHON.replace("\n\ndef helper():\n    return 42\n", "");
    check(
        &[("app.py", PYTHON)],
        &[("app.py", &removed)],
        &["D app.py fn helper (+0 -2)", "T app.py top-level (+0 -2)"],
    );
    let moved_out = PYTHON.replace("\n\ndef helper():\n    return 42\n", "");
    check(
        &[("app.py", PYTHON), ("util.py", "import re\n")],
        &[("app.py", &moved_out), ("util.py", "import re\n\n\ndef helper():\n    return 42\n")],
        &["T app.py top-level (+0 -2)", "V util.py fn helper (+2 -2) <- app.py", "T util.py top-level (+2 -0)"],
    );
}

const TYPESCRIPT: &str = "import { readFile } from \"fs\";

export interface Options {
  verbose: boolean;
}

export class Client {
  constructor(private url: string) {}

  get(path: string): string {
    return this.url + path;
  }
}

export function parse(text: string): string[] {
  const parts = text.split(\" \");
  return parts;
}

export const helper = (): number => {
  return 42;
};
";

#[test]
fn typescript_functions_classes_and_imports() {
    let modified = TYPESCRIPT.replace("  return parts;", "  return parts.filter(Boolean);");
    check(&[("src/app.ts", TYPESCRIPT)], &[("src/app.ts", &modified)], &["M src/app.ts fn parse (+1 -1)"]);
    let renamed = TYPESCRIPT.replace("export function parse(", "export function tokenize(");
    check(&[("src/app.ts", TYPESCRIPT)], &[("src/app.ts", &renamed)], &["R src/app.ts fn tokenize (+1 -1) <- parse"]);
    let signature = TYPESCRIPT.replace("parse(text: string): string[]", "parse(text: string, sep = \" \"): string[]");
    check(&[("src/app.ts", TYPESCRIPT)], &[("src/app.ts", &signature)], &["M src/app.ts fn parse (+1 -1) sig"]);
    let method = TYPESCRIPT.replace(
        "    return this.url + path;\n  }\n",
        "    return this.url + path;\n  }\n\n  close(): void {\n    this.url = \"\";\n  }\n",
    );
    check(
        &[("src/app.ts", TYPESCRIPT)],
        &[("src/app.ts", &method)],
        &["M src/app.ts class Client (+1 -0)", "A src/app.ts fn Client.close (+3 -0)"],
    );
    let imports = TYPESCRIPT.replace("import { readFile } from \"fs\";", "import { readFile, writeFile } from \"fs\";");
    check(&[("src/app.ts", TYPESCRIPT)], &[("src/app.ts", &imports)], &["T src/app.ts top-level (+1 -1)"]);
    let arrow = TYPESCRIPT.replace("  return 42;", "  return 43;");
    check(&[("src/app.ts", TYPESCRIPT)], &[("src/app.ts", &arrow)], &["M src/app.ts fn helper (+1 -1)"]);
    let added = format!("{TYPESCRIPT}\nexport function extra(): number {{\n  return 7;\n}}\n");
    check(
        &[("src/app.ts", TYPESCRIPT)],
        &[("src/app.ts", &added)],
        &["A src/app.ts fn extra (+3 -0)", "T src/app.ts top-level (+1 -0)"],
    );
    let removed = TYPESCRIPT.replace("\nexport interface Options {\n  verbose: boolean;\n}\n", "");
    check(
        &[("src/app.ts", TYPESCRIPT)],
        &[("src/app.ts", &removed)],
        &["D src/app.ts interface Options (+0 -3)", "T src/app.ts top-level (+0 -1)"],
    );
    let moved = TYPESCRIPT.replace(
        "\nexport function parse(text: string): string[] {\n  const parts = text.split(\" \");\n  return parts;\n}\n",
        "",
    );
    check(
        &[("src/app.ts", TYPESCRIPT)],
        &[
            ("src/app.ts", &moved),
            (
                "src/parse.ts",
                "export function parse(text: string): string[] {\n  const parts = text.split(\" \");\n  return parts;\n}\n",
            ),
        ],
        &["T src/app.ts top-level (+0 -1)", "V src/parse.ts fn parse (+4 -4) <- src/app.ts"],
    );
    let tsx = "export function View(): JSX.Element {\n  return <div>hi</div>;\n}\n";
    check(
        &[("src/view.tsx", tsx)],
        &[("src/view.tsx", &tsx.replace("hi", "hello"))],
        &["M src/view.tsx fn View (+1 -1)"],
    );
}

#[test]
fn javascript_go_java_c_cpp() {
    let js = "const fs = require(\"fs\");\n\nclass Store {\n  load(path) {\n    return fs.readFileSync(path);\n  }\n}\n\nfunction main() {\n  return new Store();\n}\n";
    check(
        &[("index.js", js)],
        &[(
            "index.js",
            &js.replace("    return fs.readFileSync(path);", "    return fs.readFileSync(path, \"utf8\");"),
        )],
        &["M index.js fn Store.load (+1 -1)"],
    );
    let go = "package main\n\nimport \"fmt\"\n\ntype Server struct {\n\tname string\n}\n\nfunc (s *Server) Start() error {\n\tfmt.Println(s.name)\n\treturn nil\n}\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n";
    check(
        &[("main.go", go)],
        &[("main.go", &go.replace("\tfmt.Println(s.name)\n", "\tfmt.Println(\"start\", s.name)\n"))],
        &["M main.go fn Server.Start (+1 -1)"],
    );
    check(
        &[("main.go", go)],
        &[("main.go", &go.replace("import \"fmt\"", "import (\n\t\"fmt\"\n\t\"os\"\n)"))],
        &["T main.go top-level (+4 -1)"],
    );
    let java = "package demo;\n\nimport java.util.List;\n\npublic class Greeter {\n    public String greet(String name) {\n        return \"Hello \" + name;\n    }\n}\n";
    check(
        &[("src/Greeter.java", java)],
        &[(
            "src/Greeter.java",
            &java.replace(
                "    }\n}\n",
                "    }\n\n    public int count(List<String> names) {\n        return names.size();\n    }\n}\n",
            ),
        )],
        &["M src/Greeter.java class Greeter (+1 -0)", "A src/Greeter.java fn Greeter.count (+3 -0)"],
    );
    let c = "#include <stdio.h>\n\n#define LIMIT 10\n\nstruct point {\n    int x;\n    int y;\n};\n\nstatic int add(int a, int b) {\n    return a + b;\n}\n\nint main(void) {\n    printf(\"%d\\n\", add(1, 2));\n    return 0;\n}\n";
    check(
        &[("src/main.c", c)],
        &[("src/main.c", &c.replace("static int add(int a, int b)", "static int sum(int a, int b)"))],
        &["R src/main.c fn sum (+1 -1) <- add"],
    );
    check(
        &[("src/main.c", c)],
        &[("src/main.c", &c.replace("#define LIMIT 10", "#define LIMIT 20"))],
        &["M src/main.c const LIMIT (+1 -1)"],
    );
    let cpp = "#include <string>\n\nnamespace app {\n\nclass Parser {\npublic:\n    int parse(const std::string& text) {\n        return text.size();\n    }\n};\n\n}  // namespace app\n\nint Run() {\n    return 0;\n}\n";
    check(
        &[("src/parser.cpp", cpp)],
        &[(
            "src/parser.cpp",
            &cpp.replace("        return text.size();", "        return static_cast<int>(text.size());"),
        )],
        &["M src/parser.cpp fn app::Parser::parse (+1 -1)"],
    );
}

/// The fallback of the only changed file of `before..after`.
fn fallback_of(
    before: &[(&str, &str)],
    after: &[(&str, &str)],
    attributes: Option<&str>,
) -> (FallbackReason, Option<f64>) {
    let fixture = fluxgit_fixtures::build(Scenario::Unborn);
    if let Some(attributes) = attributes {
        std::fs::write(fixture.path().join(".gitattributes"), attributes).expect("writable");
    }
    let mut with_attributes: Vec<(&str, &str)> = before.to_vec();
    let mut after_with: Vec<(&str, &str)> = after.to_vec();
    if let Some(attributes) = attributes {
        with_attributes.push((".gitattributes", attributes));
        after_with.push((".gitattributes", attributes));
    }
    let base = commit(&fixture, &with_attributes, "before");
    let head = commit(&fixture, &after_with, "after");
    let result = semantic(&fixture, &Options { base: Some(base), head: Some(head), ..Options::default() });
    assert_eq!(result.data.files.len(), 1, "one changed file: {:?}", result.data.files);
    let fallback = result.data.files[0].fallback.clone().expect("a fallback");
    (fallback.reason, fallback.error_ratio)
}

#[test]
fn fallbacks_name_their_reason() {
    assert_eq!(
        fallback_of(&[("notes.kt", "fun a() = 1\n")], &[("notes.kt", "fun a() = 2\n")], None).0,
        FallbackReason::UnsupportedLanguage
    );
    assert_eq!(fallback_of(&[("data.rs", "a\0b\n")], &[("data.rs", "a\0c\n")], None).0, FallbackReason::Binary);
    let broken = "fn a( {{{{ ]] )) let let let\n".repeat(20);
    let (reason, ratio) = fallback_of(&[("bad.rs", "fn a() {}\n")], &[("bad.rs", &broken)], None);
    assert_eq!(reason, FallbackReason::ParseErrors);
    assert!(
        ratio.is_some_and(|ratio| ratio > fluxgit_engine::diff::semantic::MAX_ERROR_RATIO && ratio <= 1.0),
        "{ratio:?}"
    );
    let big = "const A: u32 = 1;\n".repeat(fluxgit_engine::diff::semantic::MAX_FILE_BYTES / 18 + 10);
    assert_eq!(
        fallback_of(&[("big.rs", "const A: u32 = 0;\n")], &[("big.rs", &big)], None).0,
        FallbackReason::TooLarge
    );
    // `linguist-language` makes a `.txt` file Rust, and `diff=python` a `.txt` file Python.
    let fixture = fluxgit_fixtures::build(Scenario::Unborn);
    let attributes = "*.rstxt linguist-language=Rust\n*.pytxt diff=python\n";
    let base = commit(
        &fixture,
        &[(".gitattributes", attributes), ("a.rstxt", "fn a() {}\n"), ("b.pytxt", "def b():\n    return 1\n")],
        "before",
    );
    let head = commit(
        &fixture,
        &[(".gitattributes", attributes), ("a.rstxt", "fn a() { 1; }\n"), ("b.pytxt", "def b():\n    return 2\n")],
        "after",
    );
    let result = semantic(&fixture, &Options { base: Some(base), head: Some(head), ..Options::default() });
    assert_eq!(lines(&result), ["M a.rstxt fn a (+1 -1)", "M b.pytxt fn b (+1 -1)"]);
}

#[test]
fn time_budget_and_submodule_fall_back() {
    let fixture = fluxgit_fixtures::build(Scenario::Unborn);
    let base = commit(&fixture, &[("a.rs", "fn a() {}\n")], "before");
    let head = commit(&fixture, &[("a.rs", "fn a() { 1; }\n")], "after");
    let options =
        Options { base: Some(base), head: Some(head), time_budget: std::time::Duration::ZERO, ..Options::default() };
    let result = semantic(&fixture, &options);
    assert_eq!(
        result.data.files[0].fallback.as_ref().map(|fallback| fallback.reason),
        Some(FallbackReason::TimeBudget)
    );
    // A gitlink entry: a submodule whose commit moved.
    let fixture = fluxgit_fixtures::build(Scenario::Unborn);
    let base = commit(&fixture, &[("a.rs", "fn a() {}\n")], "before");
    let sha = fixture.git(&["rev-parse", "HEAD"]).trim().to_owned();
    fixture.git(&["update-index", "--add", "--cacheinfo", &format!("160000,{sha},vendor/lib")]);
    fixture.git(&["commit", "-q", "-m", "submodule"]);
    let head = fixture.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let result = semantic(&fixture, &Options { base: Some(base), head: Some(head), ..Options::default() });
    let submodule = result.data.files.iter().find(|file| file.path == "vendor/lib").expect("the gitlink is listed");
    assert_eq!(submodule.fallback.as_ref().map(|fallback| fallback.reason), Some(FallbackReason::Submodule));
}

#[test]
fn staged_and_worktree_selections_and_the_budget() {
    let fixture = fluxgit_fixtures::build(Scenario::Unborn);
    commit(&fixture, &[("src/lib.rs", RUST)], "before");
    std::fs::write(fixture.path().join("src/lib.rs"), RUST.replace("    41 + 1", "    42")).expect("writable");
    let worktree = semantic(&fixture, &Options::default());
    assert_eq!(lines(&worktree), ["M src/lib.rs fn helper (+1 -1)"]);
    let staged = semantic(&fixture, &Options { staged: true, ..Options::default() });
    assert!(staged.data.files.is_empty(), "nothing staged yet");
    fixture.git(&["add", "src/lib.rs"]);
    let staged = semantic(&fixture, &Options { staged: true, ..Options::default() });
    assert_eq!(lines(&staged), ["M src/lib.rs fn helper (+1 -1)"]);
    // Two changed files and a budget for one: the larger change is kept, the other counted in `omitted`.
    std::fs::write(fixture.path().join("src/b.rs"), "fn b() {\n    1;\n    2;\n}\n").expect("writable");
    fixture.git(&["add", "src/b.rs"]);
    let engine = common::engine_for(&fixture);
    let repo = engine.resolve(common::repo_path(&fixture)).expect("resolves");
    let options = Options { staged: true, ..Options::default() };
    let whole = engine.diff_semantic(&repo, &options, UNLIMITED, &mut common::measure).expect("a semantic diff");
    let budget = common::measure(&whole) - 5;
    let cut = engine.diff_semantic(&repo, &options, budget, &mut common::measure).expect("a semantic diff");
    assert_eq!(cut.data.files.iter().map(|file| file.path.as_str()).collect::<Vec<_>>(), ["src/b.rs"]);
    assert_eq!(cut.omitted.0, [("files", 1)]);
    assert!(common::measure(&cut) <= budget);
    assert!(Path::new(fixture.path()).join("src/b.rs").exists());
}

/// Per file of `git diff -U0`: the old path, and the changed old and new line numbers (1-based).
#[derive(Debug, Default)]
struct GitFile {
    old_path: Option<String>,
    removed: Vec<u32>,
    added: Vec<u32>,
}

/// `git diff -U0 -M base head`, keyed by the new path (the old one for a deletion); quoted paths are left out.
fn git_changed_lines(repo: &Path, base: &str, head: &str) -> std::collections::BTreeMap<String, GitFile> {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args([
            "-c",
            "core.quotepath=off",
            "diff",
            "-U0",
            "-M",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            base,
            head,
        ])
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git diff: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    let mut files = std::collections::BTreeMap::new();
    let mut current: Option<(String, GitFile)> = None;
    let mut old_path: Option<String> = None;
    for line in text.lines() {
        if line.starts_with("diff --git ") {
            if let Some((path, file)) = current.take() {
                files.insert(path, file);
            }
            old_path = None;
        } else if let Some(path) = line.strip_prefix("--- ") {
            old_path = path.strip_prefix("a/").map(str::to_owned);
        } else if let Some(path) = line.strip_prefix("+++ ") {
            let new_path = path.strip_prefix("b/").map(str::to_owned);
            let key = new_path.clone().or_else(|| old_path.clone()).expect("a side");
            current = Some((key, GitFile { old_path: old_path.clone(), ..GitFile::default() }));
        } else if let Some(header) = line.strip_prefix("@@ -") {
            let (_, file) = current.as_mut().expect("a hunk inside a file");
            let mut parts = header.split(' ');
            let range = |part: &str| -> (u32, u32) {
                let mut numbers = part.split(',');
                let start = numbers.next().expect("a start").parse().expect("a number");
                let count = numbers.next().map_or(1, |count| count.parse().expect("a number"));
                (start, count)
            };
            let (old_start, old_count) = range(parts.next().expect("old range"));
            let (new_start, new_count) = range(parts.next().expect("new range").trim_start_matches('+'));
            file.removed.extend(old_start..old_start + old_count);
            file.added.extend(new_start..new_start + new_count);
        }
    }
    if let Some((path, file)) = current.take() {
        files.insert(path, file);
    }
    files.retain(|path, _| !path.starts_with('"'));
    files
}

/// Checks `base..head` of `repo` against `git diff -U0`: every changed line of a parsed file lies in a listed
/// symbol's range on its side or is counted as top level (exactly), every listed symbol holds a changed line, and
/// the file's counts are git's. Returns (files checked, files fallen back).
fn consistent_with_git(engine: &fluxgit_engine::Engine, repo_path: &Path, base: &str, head: &str) -> (usize, usize) {
    let repo = engine.resolve(repo_path.to_str().expect("utf-8")).expect("resolves");
    let options = Options { base: Some(base.to_owned()), head: Some(head.to_owned()), ..Options::default() };
    let result = engine.diff_semantic(&repo, &options, UNLIMITED, &mut common::measure).expect("a semantic diff");
    let git = git_changed_lines(repo_path, base, head);
    let context = |path: &str| format!("{base}..{head} {path}");
    // A moved symbol's old range lies in the file it came from.
    let mut moved_from: std::collections::HashMap<&str, Vec<[u32; 2]>> = std::collections::HashMap::new();
    for file in &result.data.files {
        for symbol in &file.symbols {
            if let (Some(from_path), Some(range)) = (&symbol.from_path, symbol.old_lines) {
                moved_from.entry(from_path.as_str()).or_default().push(range);
            }
        }
    }
    let (mut checked, mut fallen_back) = (0, 0);
    for file in &result.data.files {
        if file.fallback.is_some() {
            fallen_back += 1;
            continue;
        }
        let Some(changed) = git.get(&file.path) else {
            // A pure rename or mode change has no hunks.
            assert!(file.symbols.is_empty() && file.top_level.is_none(), "{}: no git hunks", context(&file.path));
            continue;
        };
        // gix's Myers diff may place or count a line differently from git's on rare inputs (see the diff
        // module's docs): such a file is not the semantic layer's to answer for, and is counted apart.
        if (file.additions, file.deletions) != (changed.added.len() as u64, changed.removed.len() as u64) {
            eprintln!("line diff differs from git's: {}", context(&file.path));
            fallen_back += 1;
            continue;
        }
        checked += 1;
        let old_path = file.from.clone().or_else(|| changed.old_path.clone()).unwrap_or_else(|| file.path.clone());
        let new_ranges: Vec<[u32; 2]> = file.symbols.iter().filter_map(|symbol| symbol.new_lines).collect();
        let mut old_ranges: Vec<[u32; 2]> = file
            .symbols
            .iter()
            .filter(|symbol| symbol.from_path.is_none())
            .filter_map(|symbol| symbol.old_lines)
            .collect();
        old_ranges.extend(moved_from.get(old_path.as_str()).into_iter().flatten());
        let inside = |ranges: &[[u32; 2]], line: u32| ranges.iter().any(|[start, end]| (*start..=*end).contains(&line));
        let top_added = changed.added.iter().filter(|line| !inside(&new_ranges, **line)).count() as u64;
        let top_removed = changed.removed.iter().filter(|line| !inside(&old_ranges, **line)).count() as u64;
        let top = file.top_level.unwrap_or_default();
        let mut mismatches = Vec::new();
        if (top.added, top.removed) != (top_added, top_removed) {
            mismatches.push(format!(
                "top level of {}: {:?} where git's lines give {:?}",
                context(&file.path),
                (top.added, top.removed),
                (top_added, top_removed)
            ));
        }
        for symbol in &file.symbols {
            let in_new = symbol.new_lines.is_some_and(|range| changed.added.iter().any(|line| inside(&[range], *line)));
            let old_file = symbol.from_path.as_deref().unwrap_or(&old_path);
            let old_changed = if old_file == old_path {
                Some(&changed.removed)
            } else {
                git.values().find(|other| other.old_path.as_deref() == Some(old_file)).map(|other| &other.removed)
            };
            let in_old = symbol
                .old_lines
                .zip(old_changed)
                .is_some_and(|(range, removed)| removed.iter().any(|line| inside(&[range], *line)));
            if !(in_new || in_old) {
                mismatches.push(format!("{}: {symbol:?} holds no changed line", context(&file.path)));
            }
        }
        if !mismatches.is_empty() {
            // The same counts, placed elsewhere: git's indent heuristic and gix's slider post-processing may put a
            // run of changed lines that can slide (its first line repeats after it, or its last before it) at
            // different offsets, e.g. an added function whose `}` and blank line git takes from the one above. Such
            // a file is counted apart; any other disagreement is a defect.
            let new_text = git_show(repo_path, head, &file.path);
            let old_text = git_show(repo_path, base, &old_path);
            let slid = slidable(&new_text, &changed.added) || slidable(&old_text, &changed.removed);
            assert!(slid, "{}", mismatches.join("; "));
            eprintln!("changed lines placed apart from git's (a run that slides): {}", context(&file.path));
            fallen_back += 1;
            checked -= 1;
        }
    }
    (checked, fallen_back)
}

/// The lines of `path` at `rev` (empty when it is absent there).
fn git_show(repo: &Path, rev: &str, path: &str) -> Vec<Vec<u8>> {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["show", &format!("{rev}:{path}")])
        .output()
        .expect("git runs");
    output.stdout.split(|byte| *byte == b'\n').map(<[u8]>::to_vec).collect()
}

/// Whether a run of consecutive `lines` (1-based numbers into `text`) can slide by one line: the line before it
/// equals its last line, or the line after it equals its first.
fn slidable(text: &[Vec<u8>], lines: &[u32]) -> bool {
    let mut sorted: Vec<usize> = lines.iter().map(|line| *line as usize).collect();
    sorted.sort_unstable();
    let line = |number: usize| number.checked_sub(1).and_then(|index| text.get(index));
    let mut start = 0;
    while start < sorted.len() {
        let mut end = start;
        while end + 1 < sorted.len() && sorted[end + 1] == sorted[end] + 1 {
            end += 1;
        }
        let (first, last) = (sorted[start], sorted[end]);
        let up = first > 1 && line(first - 1).is_some() && line(first - 1) == line(last);
        let down = line(last + 1).is_some() && line(last + 1) == line(first);
        if up || down {
            return true;
        }
        start = end + 1;
    }
    false
}

/// This repository's own last 40 commits (bounded for CI); skipped with a note outside a git checkout or in a
/// shallow clone without them, and a failure there under CI ([`fluxgit_fixtures::skip_unless_ci`]).
#[test]
fn consistent_with_git_on_this_repository() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf();
    let toplevel =
        std::process::Command::new("git").arg("-C").arg(&workspace).args(["rev-parse", "--show-toplevel"]).output();
    let Some(root) = toplevel
        .ok()
        .filter(|output| output.status.success())
        .map(|output| std::path::PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()))
    else {
        fluxgit_fixtures::skip_unless_ci(&format!("{} is not a git work tree", workspace.display()));
        return;
    };
    let commits = fluxgit_fixtures::last_commits(&root, 40, false);
    if commits.len() < 2 {
        let reason = format!("{} has fewer than 2 commits with a parent (a shallow clone?)", root.display());
        fluxgit_fixtures::skip_unless_ci(&reason);
        return;
    }
    // A linked work tree's git dir lies under the main checkout's: both are allowed.
    let common = std::process::Command::new("git")
        .arg("-C")
        .arg(&root)
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .output()
        .expect("git runs");
    let common = std::path::PathBuf::from(String::from_utf8_lossy(&common.stdout).trim());
    let mut allowed_roots = vec![root.canonicalize().expect("exists")];
    allowed_roots.extend(common.parent().and_then(|parent| parent.canonicalize().ok()));
    let engine = fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots });
    let (mut checked, mut fallen_back) = (0, 0);
    for (parent, commit) in &commits {
        let (files, fallbacks) = consistent_with_git(&engine, &root, parent, commit);
        checked += files;
        fallen_back += fallbacks;
    }
    assert!(checked > 0, "some files were parsed");
    eprintln!("{} commits, {checked} files checked, {fallen_back} fell back", commits.len());
}

/// The documented long run: the last 200 commits of each mirrored public repository (ripgrep, tokio, requests,
/// got, git). Run with `cargo test -p fluxgit-engine --release --test engine semantic -- --ignored`; repositories absent
/// from `/work/.mirror` (or `FLUXGIT_MIRRORS`) are skipped with a note, and the run fails when none is there.
#[test]
#[ignore = "long run over mirrored public repositories (minutes); see the doc comment"]
fn consistent_with_git_on_public_repositories() {
    let mirrors =
        std::env::var_os("FLUXGIT_MIRRORS").map_or_else(|| std::path::PathBuf::from("/work/.mirror"), Into::into);
    let mut ran = 0;
    for name in ["BurntSushi+ripgrep", "tokio-rs+tokio", "psf+requests", "sindresorhus+got", "git+git"] {
        let repo = mirrors.join(name).join("repo");
        if !repo.exists() {
            eprintln!("skipped: {} is absent", repo.display());
            continue;
        }
        let repo = repo.canonicalize().expect("exists");
        let engine = fluxgit_engine::Engine::new(fluxgit_engine::Options { allowed_roots: vec![repo.clone()] });
        let commits = fluxgit_fixtures::last_commits(&repo, 200, false);
        let (mut checked, mut fallen_back) = (0, 0);
        for (parent, commit) in &commits {
            let (files, fallbacks) = consistent_with_git(&engine, &repo, parent, commit);
            checked += files;
            fallen_back += fallbacks;
        }
        eprintln!("{name}: {} commits, {checked} files checked, {fallen_back} fell back", commits.len());
        ran += 1;
    }
    assert!(ran > 0, "no mirrored repository under {}: the long run looked at nothing", mirrors.display());
}
