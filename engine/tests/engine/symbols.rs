//! `repo.history` with `symbol` against `git log -L :<name>:<file>`: on histories built with git in Rust, Python
//! and C (git's built-in funcname rules through `.gitattributes` `diff=rust`, `diff=python`, `diff=cpp`), where the
//! symbol's body changes, only its signature changes, its file is renamed (purely, then with an edit), it moves
//! within the file, a neighbouring function changes above and below it, and a side branch that changed it is
//! merged, the commits listed equal `git log -L :<name>:<file> --format=%h -s`, in the same order, also read in
//! pages through the cursor; a change below a nested item is listed where git's range stops at the item; a
//! triggered interrupt cancels; an ambiguous
//! name is refused with both candidates named, a qualified one is followed; a symbol without a path, a missing
//! symbol and a range are refused.

use crate::common;

use common::{engine_for, measure, repo_path};
use fluxgit_engine::history::{Options, Page};
use fluxgit_engine::{Error, InvalidReason};
use fluxgit_fixtures::{Fixture, Scenario};

const UNLIMITED: usize = 1_000_000;

fn write(fixture: &Fixture, path: &str, content: &str) {
    let file = fixture.path().join(path);
    std::fs::create_dir_all(file.parent().expect("has a parent")).expect("creates the directory");
    std::fs::write(file, content).expect("writes the file");
}

fn commit(fixture: &Fixture, message: &str) {
    fixture.git(&["add", "-A"]);
    fixture.git(&["commit", "-q", "-m", message]);
}

fn symbol_history(fixture: &Fixture, path: &str, symbol: &str) -> Result<Page, Error> {
    let engine = engine_for(fixture);
    let repo = engine.resolve(repo_path(fixture)).expect("resolves");
    let options =
        Options { path: Some(path.to_owned()), symbol: Some(symbol.to_owned()), limit: 200, ..Options::default() };
    engine.history(&repo, &options, UNLIMITED, &mut measure).map(|budgeted| budgeted.data)
}

fn listed(page: &Page) -> Vec<String> {
    page.commits.iter().map(|commit| commit.sha.clone()).collect()
}

fn git_line_log(fixture: &Fixture, path: &str, name: &str) -> Vec<String> {
    fixture.git(&["log", &format!("-L:{name}:{path}"), "--format=%h", "-s"]).lines().map(str::to_owned).collect()
}

/// A language's source as the history changes it: functions of one-statement lines.
struct Language {
    name: &'static str,
    driver: &'static str,
    /// The file, and where it is renamed to.
    file: &'static str,
    renamed: &'static str,
    /// The function's text from its name, whether its signature is the changed one, and its statements.
    render: fn(&str, bool, &[u32]) -> String,
    /// What separates two functions.
    gap: &'static str,
}

/// One function of the file.
#[derive(Clone)]
struct Function {
    name: &'static str,
    changed_signature: bool,
    statements: Vec<u32>,
}

fn source(language: &Language, functions: &[Function]) -> String {
    let rendered: Vec<String> = functions
        .iter()
        .map(|function| (language.render)(function.name, function.changed_signature, &function.statements))
        .collect();
    rendered.join(language.gap)
}

fn step(fixture: &Fixture, language: &Language, path: &str, functions: &[Function], message: &str) {
    write(fixture, path, &source(language, functions));
    commit(fixture, message);
}

/// Builds the history and checks the target's commits against git's, returning the page.
fn check_against_git(language: &Language) -> Page {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let extension = language.file.rsplit('.').next().expect("an extension");
    write(&fixture, ".gitattributes", &format!("*.{extension} diff={}\n", language.driver));
    let function =
        |name, statements: &[u32]| Function { name, changed_signature: false, statements: statements.to_vec() };
    // The target is the smallest, so the line diff of its move takes it away and puts it back.
    let mut functions = vec![
        function("alpha", &[1, 2]),
        function("target_fn", &[3]),
        function("omega", &[4, 5, 6]),
        function("zeta", &[7]),
    ];
    let (file, renamed) = (language.file, language.renamed);
    step(&fixture, language, file, &functions, "add the file");
    functions.swap(1, 2);
    step(&fixture, language, file, &functions, "move the target below its neighbour");
    functions[2].statements = vec![30];
    step(&fixture, language, file, &functions, "change the target's body");
    functions[2].changed_signature = true;
    step(&fixture, language, file, &functions, "change only the target's signature");
    functions[3].statements = vec![70];
    step(&fixture, language, file, &functions, "change the neighbour below");
    functions[1].statements.push(8);
    step(&fixture, language, file, &functions, "grow the neighbour above");
    fixture.git(&["mv", file, renamed]);
    commit(&fixture, "rename the file");
    let last = format!("{}/last.{extension}", file.rsplit_once('/').expect("a directory").0);
    fixture.git(&["mv", renamed, &last]);
    functions[2].statements = vec![31];
    step(&fixture, language, &last, &functions, "rename it again and change the target");
    let file = last.as_str();
    fixture.git(&["checkout", "-q", "-b", "side"]);
    functions[2].statements = vec![32, 33];
    step(&fixture, language, file, &functions, "side: change the target");
    fixture.git(&["checkout", "-q", "-"]);
    let mut main = functions.clone();
    main[2].statements = vec![31];
    main[0].statements = vec![10, 2];
    step(&fixture, language, file, &main, "main: change the first function");
    fixture.git(&["merge", "-q", "--no-ff", "-m", "merge side", "side"]);
    main[2].statements = vec![32, 33];
    let merged = std::fs::read_to_string(fixture.path().join(file)).expect("reads");
    assert_eq!(merged, source(language, &main), "a clean merge");

    let page = symbol_history(&fixture, file, "target_fn").expect("symbol history answers");
    let git = git_line_log(&fixture, file, "target_fn");
    let subjects: Vec<&str> = page.commits.iter().map(|commit| commit.subject.as_str()).collect();
    assert_eq!(listed(&page), git, "{}: ours {subjects:?} vs git log -L", language.name);
    for unlisted in [
        "change the neighbour below",
        "grow the neighbour above",
        "rename the file",
        "main: change the first function",
        "merge side",
    ] {
        assert!(!subjects.contains(&unlisted), "{}: {unlisted:?} is listed: {subjects:?}", language.name);
    }
    for listed in [
        "side: change the target",
        "rename it again and change the target",
        "change only the target's signature",
        "change the target's body",
        "move the target below its neighbour",
    ] {
        assert!(subjects.contains(&listed), "{}: {listed:?} is not listed: {subjects:?}", language.name);
    }
    for commit in &page.commits {
        let after =
            ["side: change the target", "rename it again and change the target"].contains(&commit.subject.as_str());
        let before = !after;
        let path = before.then(|| language.file.to_owned());
        assert_eq!(commit.path, path, "{}: the path of {:?}", language.name, commit.subject);
    }
    assert!(page.commits.iter().all(|commit| !commit.hunks.is_empty()), "each commit names its hunks");
    assert_eq!(paged(&fixture, file, 2), listed(&page), "{}: pages of 2 neither skip nor repeat", language.name);
    page
}

/// Every commit of the symbol's history, read in pages of `limit` through `nextCursor`.
fn paged(fixture: &Fixture, path: &str, limit: usize) -> Vec<String> {
    let engine = engine_for(fixture);
    let repo = engine.resolve(repo_path(fixture)).expect("resolves");
    let (mut all, mut cursor) = (Vec::new(), None);
    loop {
        let options = Options {
            path: Some(path.to_owned()),
            symbol: Some("target_fn".to_owned()),
            limit,
            cursor: cursor.take(),
            ..Options::default()
        };
        let page = engine.history(&repo, &options, UNLIMITED, &mut measure).expect("a page").data;
        assert!(page.commits.len() <= limit);
        all.extend(listed(&page));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return all,
        }
    }
}

const RUST: Language = Language {
    name: "rust",
    driver: "rust",
    file: "src/lib.rs",
    renamed: "src/core.rs",
    render: |name, changed, statements| {
        let body: String = statements.iter().map(|n| format!("    let _ = {n};\n")).collect();
        format!("{}fn {name}(x: u32) {{\n{body}}}\n", if changed { "pub " } else { "" })
    },
    gap: "\n",
};

const PYTHON: Language = Language {
    name: "python",
    driver: "python",
    file: "pkg/mod.py",
    renamed: "pkg/core.py",
    render: |name, changed, statements| {
        let body: String = statements.iter().map(|n| format!("    _ = {n}\n")).collect();
        format!("def {name}(x{}):\n{body}", if changed { ", y=0" } else { "" })
    },
    gap: "\n\n",
};

const C: Language = Language {
    name: "c",
    driver: "cpp",
    file: "src/lib.c",
    renamed: "src/core.c",
    render: |name, changed, statements| {
        let body: String = statements.iter().map(|n| format!("\t(void){n};\n")).collect();
        format!("{}void {name}(int x)\n{{\n{body}}}\n", if changed { "static " } else { "" })
    },
    gap: "\n",
};

#[test]
fn rust_symbol_history_equals_git_log_l() {
    let page = check_against_git(&RUST);
    let found = page.symbol.expect("the symbol is described");
    assert_eq!((found.name.as_str(), found.kind.label()), ("target_fn", "fn"));
}

#[test]
fn python_symbol_history_equals_git_log_l() {
    check_against_git(&PYTHON);
}

#[test]
fn c_symbol_history_equals_git_log_l() {
    check_against_git(&C);
}

#[test]
fn an_ambiguous_name_is_refused_with_its_candidates_and_a_qualified_one_is_followed() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let source = "struct A;\n\nimpl A {\n    fn new() -> A {\n        A\n    }\n}\n\nstruct B;\n\nimpl B {\n    fn new() -> B {\n        B\n    }\n}\n";
    write(&fixture, "src/two.rs", source);
    commit(&fixture, "two constructors");
    write(&fixture, "src/two.rs", &source.replace("        B\n", "        let b = B;\n        b\n"));
    commit(&fixture, "change B::new");
    let Err(Error::Invalid { reason, message, suggestions, .. }) = symbol_history(&fixture, "src/two.rs", "new") else {
        panic!("an ambiguous name is refused");
    };
    assert_eq!(reason, InvalidReason::InvalidQuery);
    assert!(message.contains("A::new") && message.contains("B::new"), "both are named: {message}");
    assert_eq!(suggestions, ["A::new", "B::new"]);
    let page = symbol_history(&fixture, "src/two.rs", "B::new").expect("the qualified name answers");
    let subjects: Vec<&str> = page.commits.iter().map(|commit| commit.subject.as_str()).collect();
    assert_eq!(subjects, ["change B::new", "two constructors"]);
    let page = symbol_history(&fixture, "src/two.rs", "A::new").expect("the qualified name answers");
    let subjects: Vec<&str> = page.commits.iter().map(|commit| commit.subject.as_str()).collect();
    assert_eq!(subjects, ["two constructors"], "B's change is not A's");
}

/// Where the parser and git's funcname rule part: a nested item's line (`enum State` in a body) ends git's range, not
/// the symbol's, so a change below it is listed here and not by git.
#[test]
fn a_change_below_a_nested_item_is_the_functions_where_git_stops_at_the_item() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    write(&fixture, ".gitattributes", "*.rs diff=rust\n");
    let source = |value: u32| {
        format!("fn outer() -> u32 {{\n    enum State {{\n        A,\n    }}\n    let _ = State::A;\n    {value}\n}}\n")
    };
    write(&fixture, "src/nested.rs", &source(1));
    commit(&fixture, "outer");
    write(&fixture, "src/nested.rs", &source(2));
    commit(&fixture, "change outer below its enum");
    let page = symbol_history(&fixture, "src/nested.rs", "outer").expect("answers");
    let subjects: Vec<&str> = page.commits.iter().map(|commit| commit.subject.as_str()).collect();
    assert_eq!(subjects, ["change outer below its enum", "outer"]);
    assert_eq!(git_line_log(&fixture, "src/nested.rs", "outer").len(), 1, "git's range ends at `enum State`");
}

#[test]
fn a_triggered_interrupt_cancels_a_symbol_history() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    write(&fixture, "src/one.rs", "fn one() {}\n");
    commit(&fixture, "one");
    let engine = engine_for(&fixture);
    let interrupt = fluxgit_engine::Interrupt::new();
    interrupt.trigger();
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves").with_interrupt(interrupt);
    let options = Options {
        path: Some("src/one.rs".to_owned()),
        symbol: Some("one".to_owned()),
        limit: 10,
        ..Options::default()
    };
    let answer = engine.history(&repo, &options, UNLIMITED, &mut measure);
    assert!(matches!(answer, Err(Error::Cancelled)), "cancelled, got {answer:?}");
}

#[test]
fn a_symbol_needs_a_path_a_ref_and_a_declaration() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    write(&fixture, "src/one.rs", "fn one() {}\n");
    commit(&fixture, "one");
    let engine = engine_for(&fixture);
    let repo = engine.resolve(repo_path(&fixture)).expect("resolves");
    let refused = |options: Options| match engine.history(&repo, &options, UNLIMITED, &mut measure) {
        Err(Error::Invalid { reason, message, .. }) => (reason, message),
        other => panic!("refused, got {other:?}"),
    };
    let symbol = || Options { symbol: Some("one".to_owned()), limit: 10, ..Options::default() };
    let (reason, message) = refused(symbol());
    assert_eq!(reason, InvalidReason::InvalidQuery);
    assert!(message.contains("requires path"), "{message}");
    let (_, message) =
        refused(Options { path: Some("src/one.rs".to_owned()), start: Some("HEAD~1..HEAD".to_owned()), ..symbol() });
    assert!(message.contains("range"), "{message}");
    let (_, message) =
        refused(Options { path: Some("src/one.rs".to_owned()), symbol: Some("two".to_owned()), ..symbol() });
    assert!(message.contains("no function"), "{message}");
    let (_, message) = refused(Options { path: Some("src/none.rs".to_owned()), ..symbol() });
    assert!(message.contains("not a file"), "{message}");
}
