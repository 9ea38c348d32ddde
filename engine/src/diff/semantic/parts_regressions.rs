//! Files made to catch a part whose cut lies in a comment, a string or an item that goes on
//! past a blank line (found in review): the answer from parts must be the whole files'.

use super::{Cache, Options, read};

fn git(dir: &std::path::Path, args: &[&str]) {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

/// Commits `old` then `new` at `path` in a new repository and asserts that the answer made from
/// the parts is the whole files'; returns whether the parts were parsed.
fn parts_as_whole(path: &str, old: &str, new: &str) -> bool {
    let temp = tempfile::tempdir().expect("a temp dir");
    let dir = temp.path();
    git(dir, &["init", "-q"]);
    for (text, message) in [(old, "old"), (new, "new")] {
        std::fs::write(dir.join(path), text).expect("a file");
        git(dir, &["add", "."]);
        git(dir, &["commit", "-q", "-m", message]);
    }
    let repo = gix::open(dir).expect("a repository");
    let options = Options { base: Some("HEAD~1".into()), head: Some("HEAD".into()), ..Options::default() };
    let interrupt = crate::Interrupt::new();
    let cache = Cache::default();
    let parts = read(&repo, &options, &cache, &interrupt, true).expect("a report");
    let whole = read(&repo, &options, &Cache::default(), &interrupt, false).expect("a report");
    assert_eq!(parts.files, whole.files, "parts against whole");
    cache.parses.iter().any(|(key, _)| key.against.is_some())
}

/// [`parts_as_whole`], the parts parsed.
fn assert_parts_as_whole(path: &str, old: &str, new: &str) {
    assert!(parts_as_whole(path, old, new), "the parts were not parsed");
}

/// 100 copies of `filler` (`N` numbered), `middle` with `{}` replaced by `body`, 100 more
/// copies: a file over 4 KiB whose parts are small.
fn file(filler: &str, middle: &str, body: &str) -> String {
    let copies = |side: &str| (0..100).map(|i| filler.replace('N', &format!("{side}{i}"))).collect::<String>();
    format!("{}{}{}", copies("a"), middle.replace("{}", body), copies("b"))
}

fn versions(path: &str, filler: &str, middle: &str) {
    assert_parts_as_whole(path, &file(filler, middle, "1"), &file(filler, middle, "2"));
}

/// Code in a block comment, between two cuts: the whole file has the change in a comment.
#[test]
fn code_in_a_block_comment() {
    versions(
        "a.c",
        "int fN(void) {\n  return 0;\n}\n\n",
        "/* old\n\nint foo(void) {\n  return {};\n}\n\nint bar(void) { return 0; } */\n\n",
    );
}

/// Code in a template literal: the whole file has the change in the constant `s`.
#[test]
fn code_in_a_template_literal() {
    versions(
        "a.js",
        "function fN() {\n  return 0;\n}\n\n",
        "const s = `\n\nfunction foo() {\n  return {}\n}\n\nend`;\n\n",
    );
}

/// Code in a docstring: the whole file has the change at the top level.
#[test]
fn code_in_a_docstring() {
    versions(
        "a.py",
        "def fN():\n    return 0\n\n\n",
        "\"\"\"Example:\n\ndef foo():\n    x = {}\n    return x\n\nbar = 2\n\"\"\"\n\n",
    );
}

/// A decorator, a blank line, then the function: the whole file has `foo` from the decorator.
#[test]
fn a_decorator_before_a_blank_line() {
    versions("a.py", "def fN():\n    return 0\n\n\n", "@cache\n\ndef foo():\n    x = {}\n    return x\n\n\n");
}

/// The same in a Java class (annotation) and a TypeScript class declaration (decorator).
#[test]
fn an_annotation_before_a_blank_line() {
    let filler = "    int fN() {\n        return 0;\n    }\n\n";
    let middle = "    @Override\n\n    public int foo() {\n        int x = {};\n        return x;\n    }\n\n";
    let class = |body: &str| format!("class A {{\n{}}}\n", file(filler, middle, body));
    assert_parts_as_whole("A.java", &class("1"), &class("2"));
    versions("a.ts", "function fN() {\n  return 0;\n}\n\n", "@Component({})\n\nexport class Foo {\n  x = {};\n}\n\n");
}

/// A declaration whose value starts after a blank line: the whole file has the function
/// `handler`.
#[test]
fn a_value_after_a_blank_line() {
    versions("a.js", "function fN() {\n  return 0;\n}\n\n", "const handler =\n\nfunction foo() {\n  return {}\n}\n\n");
}

/// A C++ anonymous namespace added while another is left out: its name, `(anonymous)`, is no
/// word of the text, so the other one cannot be looked for in the text left out (the whole
/// answer pairs the two); the file is parsed whole.
#[test]
fn a_second_anonymous_namespace() {
    let filler = "int fN(int a) {\n  return a;\n}\n\n";
    let far = "namespace {\nint far() {\n  return 1;\n}\n}\n";
    let old = file(filler, "", "") + far;
    let new = file(filler, "namespace {\nint helper() {\n  return 2;\n}\n}\n\n", "") + far;
    // `(anonymous)` is no word of the text: the far namespace cannot be looked for, so no parts.
    assert!(!parts_as_whole("a.cpp", &old, &new), "the parts were parsed");
}
// The second review's inputs: each file parses without errors on both sides.

/// Asserts neither side has an error of its own, then compares parts with whole (panics on a
/// difference); prints whether the parts were used.
fn attack(name: &str, path: &str, old: &str, new: &str) {
    let language = crate::semantic::Language::detect(path, None).expect("a language");
    for text in [old, new] {
        assert!(!crate::semantic::has_errors(language, text.as_bytes()), "{name}: the whole file has errors");
    }
    let used = parts_as_whole(path, old, new);
    eprintln!("{name}: equal, parts used: {used}");
}

fn attack_versions(name: &str, path: &str, filler: &str, middle: &str) {
    attack(name, path, &file(filler, middle, "1"), &file(filler, middle, "2"));
}

const JS_FN: &str = "function fN() {\n  return 0;\n}\n\n";

#[test]
fn second_review_tsx_template() {
    attack_versions("tsx_template", "a.tsx", JS_FN, "const s = `\n\nfunction foo() {\n  return {}\n}\n\nend`;\n\n");
}

#[test]
fn second_review_js_nested_template() {
    attack_versions(
        "js_nested_template",
        "a.js",
        JS_FN,
        "const s = `<ul>${items.map((i) => `\n\nfunction foo() {\n  return {};\n}\n\nend`)}</ul>`;\n\n",
    );
}

#[test]
fn second_review_js_regex_backtick() {
    attack_versions(
        "js_regex_backtick",
        "a.js",
        JS_FN,
        "const re = /`/g;\n\nconst s = `\n\nfunction foo() {\n  return {};\n}\n\nend`;\n\n",
    );
}

#[test]
fn second_review_js_regex_quote() {
    attack_versions(
        "js_regex_quote",
        "a.js",
        JS_FN,
        "const s = t.replace(/'/g, `\n\nfunction foo() {\n  return {};\n}\n\nend`);\n\n",
    );
}

#[test]
fn second_review_jsx_apostrophe() {
    attack_versions(
        "jsx_apostrophe",
        "a.jsx",
        JS_FN,
        "const A = () => <div>Don't {`\n\nfunction foo() {\n  return {};\n}\n\nend`}</div>;\n\n",
    );
}

#[test]
fn second_review_js_value_comment() {
    attack_versions(
        "js_value_comment",
        "a.js",
        JS_FN,
        "const handler = // the handler\n\nfunction foo() {\n  return {}\n}\n\n",
    );
}

#[test]
fn second_review_js_export_alone() {
    attack_versions("js_export_alone", "a.js", JS_FN, "export\n\nfunction foo() {\n  return {};\n}\n\n");
}

#[test]
fn second_review_ts_export_default_comment() {
    attack_versions(
        "ts_export_default_comment",
        "a.ts",
        JS_FN,
        "export default // the app\n\nclass Foo {\n  x = {};\n}\n\n",
    );
}

#[test]
fn second_review_py_decorator_comment() {
    attack_versions(
        "py_decorator_comment",
        "a.py",
        "def fN():\n    return 0\n\n\n",
        "@cache\n# note\n\ndef foo():\n    x = {}\n    return x\n\n\n",
    );
}

#[test]
fn second_review_ts_decorator_comment() {
    attack_versions(
        "ts_decorator_comment",
        "a.ts",
        JS_FN,
        "@Component({})\n// note\n\nexport class Foo {\n  x = {};\n}\n\n",
    );
}

#[test]
fn second_review_java_annotation_comment() {
    let filler = "    int fN() {\n        return 0;\n    }\n\n";
    let middle =
        "    @Override\n    // note\n\n    public int foo() {\n        int x = {};\n        return x;\n    }\n\n";
    let class = |body: &str| format!("class A {{\n{}}}\n", file(filler, middle, body));
    attack("java_annotation_comment", "A.java", &class("1"), &class("2"));
}

#[test]
fn second_review_rust_pub_alone() {
    attack_versions(
        "rust_pub_alone",
        "a.rs",
        "fn fN() -> i32 {\n    0\n}\n\n",
        "pub\n\nfn foo() -> i32 {\n    {}\n}\n\n",
    );
}

#[test]
fn second_review_cpp_attribute() {
    attack_versions(
        "cpp_attribute",
        "a.cpp",
        "int fN() {\n  return 0;\n}\n\n",
        "[[nodiscard]]\n\nint foo() {\n  return {};\n}\n\n",
    );
}

#[test]
fn second_review_cpp_template_comment() {
    attack_versions(
        "cpp_template_comment",
        "a.cpp",
        "int fN() {\n  return 0;\n}\n\n",
        "template <typename T>\n// note\n\nT foo(T a) {\n  return a + {};\n}\n\n",
    );
}

#[test]
fn second_review_cpp_u8_char() {
    attack_versions(
        "cpp_u8_char",
        "a.cpp",
        "int fN() {\n  return 0;\n}\n\n",
        "char c = u8'a'; /* old\n\nint foo() {\n  return {};\n}\n\nend */\n\n",
    );
}

#[test]
fn second_review_py_crlf_continued_string() {
    attack_versions(
        "py_crlf_continued_string",
        "a.py",
        "def fN():\n    return 0\n\n\n",
        "x = 'abc\\\r\ndef' + \"\"\"\n\ndef foo():\n    return {}\n\nend\"\"\"\n\n",
    );
}

#[test]
fn second_review_py_crlf_continued_string2() {
    attack_versions(
        "py_crlf_continued_string2",
        "a.py",
        "def fN():\n    return 0\n\n\n",
        "x = 'abc\\\r\ndef' + \"\"\"\n\ndef foo():\n    x = {}\n    return x\n\nend\"\"\"\n# \"\"\"\n\n",
    );
}

#[test]
fn second_review_js_regex_quote2() {
    attack_versions(
        "js_regex_quote2",
        "a.js",
        JS_FN,
        "const s = /'/.source + `\n\nfunction foo() {\n  return {};\n}\n\nend`;\n\n",
    );
}

#[test]
fn second_review_java_annotation_javadoc() {
    let filler = "    int fN() {\n        return 0;\n    }\n\n";
    let middle = "    @Deprecated\n    /**\n     * Old.\n     */\n\n    public int foo() {\n        int x = {};\n        return x;\n    }\n\n";
    let class = |body: &str| format!("class A {{\n{}}}\n", file(filler, middle, body));
    attack("java_annotation_javadoc", "A.java", &class("1"), &class("2"));
}

#[test]
fn second_review_js_module_exports_comment() {
    attack_versions(
        "js_module_exports_comment",
        "a.js",
        JS_FN,
        "module.exports = // the store\n\nclass Store {\n  get() {\n    return {};\n  }\n}\n\n",
    );
}

#[test]
fn second_review_go_raw_and_rune() {
    attack_versions(
        "go_raw_and_rune",
        "a.go",
        "func fN() int {\n\treturn 0\n}\n\n",
        "var r = '`'\n\nvar s = `\n\nfunc foo() int {\n\treturn {}\n}\n\nend`\n\n",
    );
}

#[test]
fn second_review_rust_chars() {
    attack_versions(
        "rust_chars",
        "a.rs",
        "fn fN() -> i32 {\n    0\n}\n\n",
        "fn q<'a>(x: &'a str) -> char { let _ = (b'\"', '\\u{1F600}', '\\'', 'é'); 'outer: loop { break 'outer; } '\"' }\n\nconst S: &str = r##\"\n\nfn foo() -> i32 {\n    {}\n}\n\nend\"##;\n\n",
    );
}

// The third review's inputs: each file parses without errors on both sides.
const C_FN: &str = "int fN(void) {\n  return 0;\n}\n\n";
const PY_FN: &str = "def fN():\n    return 0\n\n\n";

#[test]
fn third_review_js_statement_heads() {
    for (name, middle) in [
        ("js_void", "void\n\nfunction foo() {\n  return {};\n}\n\n"),
        ("js_tilde", "~\n\nfunction foo() {\n  return {};\n}\n\n"),
        ("js_if_paren", "if (x)\n\nfunction foo() {\n  return {};\n}\n\n"),
        ("js_while_paren", "while (x)\n\nfunction foo() {\n  return {};\n}\n\n"),
        ("js_for_of", "for (const x of y)\n\nfunction foo() {\n  return {};\n}\n\n"),
        ("js_else_word", "if (x) {\n  y();\n} else\n\nfunction foo() {\n  return {};\n}\n\n"),
        ("js_do", "do\n\nfunction foo() {\n  return {};\n}\nwhile (0);\n\n"),
    ] {
        attack_versions(name, "a.js", JS_FN, middle);
    }
    attack_versions("ts_if_class", "a.ts", JS_FN, "if (x)\n\nclass Foo {\n  x = {};\n}\n\n");
}

#[test]
fn third_review_c_type_body_then_function() {
    attack_versions("c_struct", "a.c", C_FN, "struct S {\n  int a;\n}\n\nfoo(void) {\n  return {};\n}\n\n");
    attack_versions("c_enum", "a.c", C_FN, "enum E {\n  A,\n}\n\nfoo(void) {\n  return {};\n}\n\n");
    attack_versions("cpp_struct", "a.cpp", C_FN, "struct S {\n  int a;\n}\n\nfoo() {\n  return {};\n}\n\n");
    attack_versions("cpp_class", "a.cpp", C_FN, "class A {\n  int a;\n}\n\nfoo() {\n  return {};\n}\n\n");
}

#[test]
fn third_review_continued_decorators() {
    attack_versions("py_backslash", "a.py", PY_FN, "@a \\\n    .b\n\ndef foo():\n    x = {}\n    return x\n\n\n");
    let filler = "    def mN(self):\n        return 0\n\n";
    let middle = "    @a \\\n        .b\n\n    def foo(self):\n        x = {}\n        return x\n\n";
    let class = |body: &str| format!("class A:\n{}", file(filler, middle, body));
    attack("py_backslash_class", "a.py", &class("1"), &class("2"));
    attack_versions("ts_member", "a.ts", JS_FN, "@a\n  .b\n\nexport class Foo {\n  x = {};\n}\n\n");
}
