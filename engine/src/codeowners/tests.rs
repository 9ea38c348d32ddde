//! GitHub's documented example file ("About code owners", "Example of a CODEOWNERS file") turned
//! into tests: each case names the path, the line of the rule that must win, and its owners, as the
//! example's comments describe.

use super::*;

/// The example of GitHub's "About code owners" page, verbatim (its inline comment included).
const GITHUB_EXAMPLE: &str = "\
# This is a comment.
# Each line is a file pattern followed by one or more owners.

# These owners will be the default owners for everything in
# the repo. Unless a later match takes precedence,
# @global-owner1 and @global-owner2 will be requested for
# review when someone opens a pull request.
*       @global-owner1 @global-owner2

# Order is important; the last matching pattern takes the most
# precedence. When someone opens a pull request that only
# modifies JS files, only @js-owner and not the global
# owner(s) will be requested for a review.
*.js    @js-owner #This is an inline comment.

# You can also use email addresses if you prefer. They'll be
# used to look up users just like we do for commit author
# emails.
*.go docs@example.com

# Teams can be specified as code owners as well. Teams should
# be identified in the format @org/team-name. Teams must have
# explicit write access to the repository. In this example,
# the octocats team in the octo-org organization owns all .txt files.
*.txt @octo-org/octocats

# In this example, @doctocat owns any files in the build/logs
# directory at the root of the repository and any of its
# subdirectories.
/build/logs/ @doctocat

# The `docs/*` pattern will match files like
# `docs/getting-started.md` but not further nested files like
# `docs/build-app/troubleshooting.md`.
docs/*  docs@example.com

# In this example, @octocat owns any file in an apps directory
# anywhere in your repository.
apps/ @octocat

# In this example, @doctocat owns any file in the `/docs`
# directory in the root of your repository and any of its
# subdirectories.
/docs/ @doctocat

# In this example, any change inside the `/scripts` directory
# will require approval from @doctocat or @octocat.
/scripts/ @doctocat @octocat

# In this example, @octocat owns any file in a `/logs` directory such as
# `/build/logs`, `/scripts/logs`, and `/deeply/nested/logs`. Any changes
# in a `/logs` directory will require approval from @octocat.
**/logs @octocat

# In this example, @octocat owns any file in the `/apps`
# directory in the root of your repository except for the `/apps/github`
# subdirectory, as its owners are left empty. Without an owner, changes
# to `apps/github` can be made with the approval of any user who has
# write access to the repository.
/apps/ @octocat
/apps/github

# In this example, @octocat owns any file in the `/apps`
# directory in the root of your repository except for the `/apps/github`
# subdirectory, as this subdirectory has its own owner @doctocat
/apps/ @octocat
/apps/github @doctocat
";

fn winner<'a>(codeowners: &'a CodeOwners, path: &str) -> Option<(usize, Vec<&'a str>)> {
    codeowners.for_file(path).map(|rule| (rule.line, rule.owners.iter().map(String::as_str).collect()))
}

/// The 1-based line of `needle` in `text` (the `nth` occurrence, 0-based).
fn line_of(text: &str, needle: &str, nth: usize) -> usize {
    text.lines().enumerate().filter(|(_, line)| *line == needle).nth(nth).map(|(idx, _)| idx + 1).expect("line exists")
}

#[test]
fn the_documented_example_parses_without_errors() {
    let codeowners = parse(GITHUB_EXAMPLE);
    assert_eq!(codeowners.errors, vec![]);
    let patterns: Vec<&str> = codeowners.rules.iter().map(|rule| rule.pattern.as_str()).collect();
    assert_eq!(
        patterns,
        [
            "*",
            "*.js",
            "*.go",
            "*.txt",
            "/build/logs/",
            "docs/*",
            "apps/",
            "/docs/",
            "/scripts/",
            "**/logs",
            "/apps/",
            "/apps/github",
            "/apps/",
            "/apps/github"
        ]
    );
    assert_eq!(codeowners.rules[1].owners, ["@js-owner"], "the inline comment is not an owner");
    assert!(codeowners.rules[11].owners.is_empty(), "`/apps/github` alone has no owners");
}

#[test]
fn the_documented_example_assigns_as_its_comments_say() {
    let codeowners = parse(GITHUB_EXAMPLE);
    let at = |needle: &str, nth: usize| line_of(GITHUB_EXAMPLE, needle, nth);
    let global = (at("*       @global-owner1 @global-owner2", 0), vec!["@global-owner1", "@global-owner2"]);
    let cases: Vec<(&str, (usize, Vec<&str>))> = vec![
        // `*`: the default owners of everything.
        ("README.md", global.clone()),
        ("src/deep/Makefile", global.clone()),
        // `*.js` at any depth takes precedence over `*`.
        ("index.js", (at("*.js    @js-owner #This is an inline comment.", 0), vec!["@js-owner"])),
        ("src/deep/widget.js", (at("*.js    @js-owner #This is an inline comment.", 0), vec!["@js-owner"])),
        // An email owner.
        ("cmd/main.go", (at("*.go docs@example.com", 0), vec!["docs@example.com"])),
        // A team owner.
        ("notes/todo.txt", (at("*.txt @octo-org/octocats", 0), vec!["@octo-org/octocats"])),
        // `/build/logs/` owns its tree, but the later `**/logs` matches too and wins.
        ("build/logs/today.log", (at("**/logs @octocat", 0), vec!["@octocat"])),
        // `**/logs`: a logs directory at any depth, and everything under it.
        ("scripts/logs/run.log", (at("**/logs @octocat", 0), vec!["@octocat"])),
        ("deeply/nested/logs/a/b.log", (at("**/logs @octocat", 0), vec!["@octocat"])),
        // `docs/*` is overridden by the later `/docs/`, which owns the whole tree.
        ("docs/getting-started.md", (at("/docs/ @doctocat", 0), vec!["@doctocat"])),
        ("docs/build-app/troubleshooting.md", (at("/docs/ @doctocat", 0), vec!["@doctocat"])),
        // `apps/` matches an apps directory anywhere; `/apps/` only at the root.
        ("web/apps/index.js", (at("apps/ @octocat", 0), vec!["@octocat"])),
        ("apps/index.js", (at("/apps/ @octocat", 1), vec!["@octocat"])),
        // Two owners.
        ("scripts/deploy.sh", (at("/scripts/ @doctocat @octocat", 0), vec!["@doctocat", "@octocat"])),
        // The last `/apps/github` rule has its own owner.
        ("apps/github/main.rb", (at("/apps/github @doctocat", 0), vec!["@doctocat"])),
        // Case matters: `*.JS` is not `*.js`.
        ("src/LEGACY.JS", global.clone()),
    ];
    assert!(cases.len() >= 12);
    for (path, expected) in cases {
        assert_eq!(winner(&codeowners, path), Some(expected), "{path}");
    }
}

#[test]
fn docs_star_matches_only_direct_children() {
    let text = "*       @global-owner1\ndocs/*  docs@example.com\n";
    let codeowners = parse(text);
    assert_eq!(winner(&codeowners, "docs/getting-started.md"), Some((2, vec!["docs@example.com"])));
    assert_eq!(winner(&codeowners, "docs/build-app/troubleshooting.md"), Some((1, vec!["@global-owner1"])));
    assert_eq!(winner(&codeowners, "src/docs/x.md"), Some((1, vec!["@global-owner1"])), "a middle slash anchors");
}

#[test]
fn a_rule_without_owners_unassigns() {
    // The example's earlier variant: `/apps/github` with no owners after `/apps/ @octocat`.
    let text = "* @global-owner1\n/apps/ @octocat\n/apps/github\n";
    let codeowners = parse(text);
    assert_eq!(winner(&codeowners, "apps/github"), Some((3, vec![])));
    assert_eq!(winner(&codeowners, "apps/github/deep/main.go"), Some((3, vec![])));
    assert_eq!(winner(&codeowners, "apps/gitlab/main.go"), Some((2, vec!["@octocat"])));
    assert_eq!(parse("/src/ @a\n").for_file("README.md"), None, "no rule matched: unowned too");
}

#[test]
fn invalid_lines_are_reported_and_skipped() {
    let text = "\
* @default
!vendor/ @nobody
\\#notes.md @nobody
src/*.[ch] @c-team
/ @root
lib/ not-an-owner
lib/ @ok # comment after owners
path\\ with\\ spaces/ @spaces
\t  # an indented comment
";
    let codeowners = parse(text);
    let lines: Vec<usize> = codeowners.errors.iter().map(|error| error.line).collect();
    assert_eq!(lines, [2, 3, 4, 5, 6], "{:?}", codeowners.errors);
    assert!(codeowners.errors[0].message.contains('!'));
    assert!(codeowners.errors[2].message.contains("[ ]"));
    assert!(codeowners.errors[4].message.contains("not-an-owner"));
    let patterns: Vec<&str> = codeowners.rules.iter().map(|rule| rule.pattern.as_str()).collect();
    assert_eq!(patterns, ["*", "lib/", "path\\ with\\ spaces/"]);
    assert_eq!(winner(&codeowners, "vendor/x.c"), Some((1, vec!["@default"])), "the negation was not applied");
    assert_eq!(winner(&codeowners, "path with spaces/a.txt"), Some((8, vec!["@spaces"])));
    assert_eq!(winner(&codeowners, "a/lib/b.rs"), Some((7, vec!["@ok"])));
}

#[test]
fn owners_may_be_users_teams_or_emails() {
    assert!(valid_owner("@octocat"));
    assert!(valid_owner("@octo-org/octocats"));
    assert!(valid_owner("@org/team.name_1"));
    assert!(valid_owner("docs@example.com"));
    for bad in ["octocat", "@", "@-dash", "@org/", "@a@b", "user@localhost", "@x/y/z"] {
        assert!(!valid_owner(bad), "{bad}");
    }
}

#[test]
fn directories_are_decided_by_rules_covering_all_they_hold() {
    let codeowners = parse(GITHUB_EXAMPLE);
    let line = |rule: Option<&Rule>| rule.map(|rule| rule.line);
    assert_eq!(line(codeowners.for_directory("")), Some(8), "the root: `*`");
    assert_eq!(line(codeowners.for_directory("docs")), Some(line_of(GITHUB_EXAMPLE, "/docs/ @doctocat", 0)));
    assert_eq!(
        line(codeowners.for_directory("deeply/nested/logs")),
        Some(line_of(GITHUB_EXAMPLE, "**/logs @octocat", 0))
    );
    assert_eq!(
        line(codeowners.for_directory("apps/github")),
        Some(line_of(GITHUB_EXAMPLE, "/apps/github @doctocat", 0))
    );
    assert_eq!(line(codeowners.for_directory("src")), Some(8), "`*.js` holds only some files of src");
    let only_docs_star = parse("* @all\ndocs/* @docs\n");
    assert_eq!(line(only_docs_star.for_directory("docs/build-app")), Some(1), "`docs/*` does not own nested files");
}
