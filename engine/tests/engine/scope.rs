//! `repo.scope` against the git CLI on the monorepo fixture: work-tree changes vs `git status -- <path>`, recent
//! commits vs `git log -n N -- <path>`, churn vs `git log --since --until -- <path>` with a pinned clock; code owners
//! of the fixture's CODEOWNERS, which file GitHub would pick, and the repository byte-identical after every read.

use std::collections::{BTreeMap, BTreeSet};

use fluxgit_engine::facets::worktree::{Change, ChangeKind};
use fluxgit_engine::scope::{self, PathKind, Scope};
use fluxgit_engine::{Budgeted, Engine, Error, InvalidReason, Options, budget};
use fluxgit_fixtures::{CLOCK_START, Fixture, Scenario};

const UNLIMITED: usize = 1_000_000;
const DAY: i64 = 86_400;

/// 2025-12-28T10:00Z: the committer date of the monorepo's newest commit.
const LAST_COMMIT: i64 = 1_766_916_000;

fn measure<T: serde::Serialize>(result: &Budgeted<T>) -> usize {
    budget::count_tokens(&serde_json::to_string(result).expect("serialises"))
}

fn options(path: &str, churn_days: u32, recent_commits: usize, now: i64) -> scope::Options {
    scope::Options { path: path.to_owned(), churn_days, recent_commits, now }
}

/// Reads the scope, checking that the fixture's root is byte-identical afterwards.
fn read(fixture: &Fixture, options: &scope::Options) -> Result<Scope, Error> {
    let before = fluxgit_fixtures::tree_digest(fixture.root());
    let root = fixture.root().canonicalize().expect("fixture root exists");
    let engine = Engine::new(Options { allowed_roots: vec![root] });
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8 temp path")).expect("resolves");
    let result = engine.scope(&repo, options, UNLIMITED, &mut measure).map(|budgeted| budgeted.data);
    drop(repo);
    assert_eq!(before, fluxgit_fixtures::tree_digest(fixture.root()), "repo.scope changed the repository");
    result
}

fn letter(kind: ChangeKind) -> char {
    match kind {
        ChangeKind::Added => 'A',
        ChangeKind::Modified => 'M',
        ChangeKind::Deleted => 'D',
        ChangeKind::Renamed => 'R',
        ChangeKind::TypeChange => 'T',
    }
}

/// `(staged, unstaged, untracked, conflicted)` as `(path, letter)` / path sets.
type StatusSets = (BTreeSet<(String, char)>, BTreeSet<(String, char)>, BTreeSet<String>, BTreeSet<String>);

/// `git status --porcelain=v2 -z -- <path>` (untracked files as the repository configures them).
fn git_status(fixture: &Fixture, path: &str) -> StatusSets {
    let output = fixture.git_raw(&["status", "--porcelain=v2", "-z", "--", path]);
    assert!(output.status.success(), "git status failed: {}", String::from_utf8_lossy(&output.stderr));
    let mut sets = StatusSets::default();
    let mut records = output.stdout.split(|b| *b == 0).filter(|r| !r.is_empty());
    while let Some(record) = records.next() {
        let text = String::from_utf8_lossy(record).into_owned();
        match text.split(' ').next() {
            Some(kind @ ("1" | "2")) => {
                let path = text.splitn(if kind == "1" { 9 } else { 10 }, ' ').last().expect("path").to_owned();
                let xy: Vec<char> = text[2..4].chars().collect();
                if xy[0] != '.' {
                    sets.0.insert((path.clone(), xy[0]));
                }
                if xy[1] != '.' {
                    sets.1.insert((path, xy[1]));
                }
                if kind == "2" {
                    records.next();
                }
            }
            Some("u") => {
                sets.3.insert(text.splitn(11, ' ').last().expect("path").to_owned());
            }
            Some("?") => {
                sets.2.insert(text[2..].to_owned());
            }
            other => panic!("unexpected porcelain record {other:?}"),
        }
    }
    sets
}

fn engine_status(scope: &Scope) -> StatusSets {
    let pairs = |changes: &[Change]| changes.iter().map(|c| (c.path.clone(), letter(c.status))).collect();
    let tree = &scope.working_tree;
    (
        pairs(&tree.staged),
        pairs(&tree.unstaged),
        tree.untracked.iter().cloned().collect(),
        tree.conflicted.iter().cloned().collect(),
    )
}

/// `git log <args> --format=<format> -- <path>` lines.
fn git_log(fixture: &Fixture, args: &[&str], path: &str) -> Vec<String> {
    let mut command = vec!["log"];
    command.extend_from_slice(args);
    command.extend(["--", path]);
    fixture.git(&command).lines().map(str::to_owned).collect()
}

const PATHS: [&str; 8] = [
    ".",
    "packages/web",
    "packages/api/",
    "./packages/shared",
    "packages/web/src/settings.tsx",
    "packages/shared/src/logs/format.ts",
    "docs",
    "packages/web/tmp",
];

#[test]
fn work_tree_changes_equal_git_status_of_the_subtree() {
    let fixture = fluxgit_fixtures::build(Scenario::Monorepo);
    let scopes: Vec<Scope> =
        PATHS.iter().map(|path| read(&fixture, &options(path, 90, 10, CLOCK_START as i64)).expect("scope")).collect();
    let mut nonempty = 0;
    for (path, scope) in PATHS.iter().zip(&scopes) {
        let expected = git_status(&fixture, path);
        assert_eq!(engine_status(scope), expected, "{path}");
        let counts = scope.working_tree.counts;
        assert_eq!(
            (counts.staged, counts.unstaged, counts.untracked, counts.conflicted),
            (expected.0.len(), expected.1.len(), expected.2.len(), expected.3.len()),
            "{path}: counts"
        );
        assert_eq!(counts.clean, expected.0.is_empty() && expected.1.is_empty() && expected.2.is_empty(), "{path}");
        nonempty += usize::from(!counts.clean);
    }
    assert!(nonempty >= 5, "the fixture has changes in most subtrees");
    let kinds: Vec<PathKind> = scopes.iter().map(|scope| scope.kind).collect();
    use PathKind::{Directory, File};
    assert_eq!(kinds, [Directory, Directory, Directory, Directory, File, File, Directory, Directory]);
    // A path at none of HEAD, the work tree and the index is refused, not answered as if it existed.
    for missing in ["nowhere/at/all", "packages/wbe"] {
        match read(&fixture, &options(missing, 90, 10, CLOCK_START as i64)) {
            Err(Error::Invalid { reason, .. }) => assert_eq!(reason, InvalidReason::NotFound),
            other => panic!("{missing}: {other:?}"),
        }
    }
    // Only in the index (added, then removed from the work tree): still a scope, of kind `absent`.
    std::fs::remove_file(fixture.path().join("packages/api/src/health.ts")).expect("remove the staged file");
    let staged_only = read(&fixture, &options("packages/api/src/health.ts", 90, 10, CLOCK_START as i64));
    assert_eq!(staged_only.expect("in the index").kind, PathKind::Absent);
    let normalised: Vec<&str> = scopes.iter().map(|scope| scope.path.as_str()).collect();
    assert_eq!(normalised[..4], [".", "packages/web", "packages/api", "packages/shared"]);
}

#[test]
fn recent_commits_equal_git_log_of_the_path() {
    let fixture = fluxgit_fixtures::build(Scenario::Monorepo);
    for path in PATHS {
        for limit in [1, 3, 10, 20] {
            let scope = read(&fixture, &options(path, 90, limit, CLOCK_START as i64)).expect("scope");
            let expected: Vec<String> = git_log(&fixture, &["-n", &limit.to_string(), "--format=%h %s"], path);
            let shown: Vec<String> = scope.recent_commits.iter().map(|c| c.oneline()).collect();
            assert_eq!(shown, expected, "git log -n {limit} -- {path}");
        }
    }
    // The merge of `web-theme` is shown for the whole repository, not for paths it leaves as its first parent had.
    let whole = read(&fixture, &options(".", 90, 20, CLOCK_START as i64)).expect("scope");
    assert_eq!(whole.recent_commits.len(), 15);
    assert!(whole.recent_commits.iter().any(|c| c.subject == "Merge branch 'web-theme'"));
    let api = read(&fixture, &options("packages/api", 90, 20, CLOCK_START as i64)).expect("scope");
    assert_eq!(api.recent_commits.len(), 6, "the scaffold, Bob's three, Erin's and Dave's");
}

#[test]
fn churn_equals_git_log_since_until_with_a_pinned_clock() {
    let fixture = fluxgit_fixtures::build(Scenario::Monorepo);
    let clocks = [CLOCK_START as i64, LAST_COMMIT, LAST_COMMIT - 1, LAST_COMMIT - 13 * DAY];
    let mut windows_with_commits = 0;
    for path in PATHS {
        for now in clocks {
            for days in [1, 23, 30, 90, 180, 365] {
                let churn = read(&fixture, &options(path, days, 1, now)).expect("scope").churn;
                let since = format!("--since=@{}", now - i64::from(days) * DAY);
                let until = format!("--until=@{now}");
                let emails = git_log(&fixture, &[&since, &until, "--format=%ae"], path);
                let mut per_email: BTreeMap<&str, usize> = BTreeMap::new();
                for email in &emails {
                    *per_email.entry(email.as_str()).or_default() += 1;
                }
                let label = format!("{path}, {days} days before {now}");
                assert_eq!(churn.commits, emails.len(), "{label}: commits");
                assert_eq!(churn.author_count, per_email.len(), "{label}: authors");
                let shown: BTreeMap<&str, usize> =
                    churn.authors.iter().map(|author| (author.email.as_str(), author.commits)).collect();
                assert_eq!(shown, per_email, "{label}: commits per author");
                windows_with_commits += usize::from(churn.commits > 0);
            }
        }
    }
    assert!(windows_with_commits > 50, "the windows are meaningful: {windows_with_commits}");
}

#[test]
fn churn_authors_go_through_the_mailmap_as_git_shortlog() {
    let fixture = fluxgit_fixtures::build(Scenario::Monorepo);
    // Bob commits from an old address; `.mailmap` makes both addresses and both of his names one person.
    std::fs::write(fixture.path().join("packages/api/src/old.ts"), "old\n").expect("write");
    fixture.git(&["add", "packages/api/src/old.ts"]);
    fixture.git(&["commit", "-q", "--author=Bob Stone <bob@old.example>", "-m", "feat(api): from the old address"]);
    let mailmap =
        "Bob Builder <bob@example.com> <bob@old.example>\nBob Builder <bob@example.com> Bob Stone <bob@example.com>\n";
    std::fs::write(fixture.path().join(".mailmap"), mailmap).expect("mailmap");
    fixture.git(&["add", ".mailmap"]);
    fixture.git(&["commit", "-q", "-m", "chore: mailmap"]);
    let now: i64 = fixture.git(&["log", "-1", "--format=%ct"]).trim().parse().expect("time");
    for path in ["packages/api", "."] {
        let churn = read(&fixture, &options(path, 365, 1, now)).expect("scope").churn;
        let shortlog = fixture.git(&[
            "shortlog",
            "-sne",
            &format!("--since=@{}", now - 365 * DAY),
            &format!("--until=@{now}"),
            "HEAD",
            "--",
            path,
        ]);
        let mut expected: Vec<(String, usize)> = shortlog
            .lines()
            .map(|line| {
                let (count, who) = line.trim().split_once('\t').expect("count and author");
                (who.to_owned(), count.parse().expect("count"))
            })
            .collect();
        expected.sort();
        let mut shown: Vec<(String, usize)> = churn
            .authors
            .iter()
            .map(|author| (format!("{} <{}>", author.name, author.email), author.commits))
            .collect();
        shown.sort();
        assert_eq!(shown, expected, "{path}");
        assert!(shown.iter().any(|(who, _)| who == "Bob Builder <bob@example.com>"), "{shown:?}");
        assert!(shown.iter().all(|(who, _)| !who.contains("old.example")), "{shown:?}");
    }
    // `repo.history` shows authors the same way, as `git log` does (`%aN <%aE>`).
    let engine = Engine::new(Options { allowed_roots: vec![fixture.root().canonicalize().expect("root")] });
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let options = fluxgit_engine::history::Options { limit: 200, ..Default::default() };
    let page = engine.history(&repo, &options, UNLIMITED, &mut measure).expect("history").data;
    let authors: Vec<String> = page
        .commits
        .iter()
        .map(|commit| serde_json::to_value(&commit.author).expect("json").as_str().expect("a string").to_owned())
        .collect();
    let expected: Vec<String> = fixture.git(&["log", "--format=%aN <%aE>"]).lines().map(str::to_owned).collect();
    assert_eq!(authors, expected);
}

#[test]
fn churn_windows_of_the_api_package() {
    let fixture = fluxgit_fixtures::build(Scenario::Monorepo);
    let churn = |days, now| read(&fixture, &options("packages/api", days, 1, now)).expect("scope").churn;
    // Dave's commit was authored in August but committed on 12-15: the commit date counts, as for `--since`.
    let last_month = churn(30, CLOCK_START as i64);
    assert_eq!((last_month.commits, last_month.author_count), (1, 1));
    assert_eq!(last_month.authors[0].email, "dave@example.com");
    assert_eq!(
        (last_month.since.as_str(), last_month.until.as_str()),
        ("2025-12-02T00:00:00Z", "2026-01-01T00:00:00Z")
    );
    let quarter = churn(90, CLOCK_START as i64);
    assert_eq!((quarter.commits, quarter.author_count), (3, 3));
    let year = churn(365, CLOCK_START as i64);
    assert_eq!((year.commits, year.author_count), (6, 4), "Alice's scaffold, Bob's three, Erin's and Dave's");
    assert_eq!(year.authors[0].email, "bob@example.com", "most commits first");
    assert_eq!((year.authors[0].commits, year.authors[0].name.as_str()), (3, "Bob Builder"), "the newest name");
    assert_eq!(churn(365, 0).commits, 0, "a clock before the history");
    // Both ends are inclusive: from 11-10T10:00 (Alice's CODEOWNERS commit) to 12-15T10:00 (Dave's), the whole
    // repository has those two, Erin's 11-20, Carol's 12-05 and her 12-08 on the branch merged after the window.
    let whole = read(&fixture, &options(".", 35, 1, 1_765_792_800)).expect("scope").churn;
    assert_eq!((whole.commits, whole.author_count), (5, 4));
}

#[test]
fn code_owners_of_the_monorepo() {
    let fixture = fluxgit_fixtures::build(Scenario::Monorepo);
    let owners = |path: &str| read(&fixture, &options(path, 90, 1, CLOCK_START as i64)).expect("scope").code_owners;
    let decided = |path: &str| {
        let owners = owners(path);
        assert_eq!(owners.file, Some(".github/CODEOWNERS"), "{path}");
        assert_eq!(owners.error_count, 0);
        (owners.rule.map(|rule| rule.line), owners.owners)
    };
    let list = |owners: &[&str]| owners.iter().map(|owner| owner.to_string()).collect::<Vec<_>>();
    assert_eq!(decided("."), (Some(4), list(&["@acme/maintainers"])));
    assert_eq!(decided("packages/api"), (Some(6), list(&["@acme/backend", "alice@example.com"])));
    // The work tree's edit of CODEOWNERS (`@acme/nobody`) is not committed: HEAD's file decides.
    assert_eq!(decided("packages/web"), (Some(7), list(&["@acme/frontend"])));
    assert_eq!(decided("packages/web/src/app.test.tsx"), (Some(9), list(&["@acme/qa"])));
    assert_eq!(decided("packages/shared"), (Some(8), list(&["@acme/platform"])));
    assert_eq!(decided("packages/shared/src/logs/format.ts"), (Some(10), list(&["@acme/observability"])));
    assert_eq!(decided("packages/shared/src/logs"), (Some(10), list(&["@acme/observability"])));
    assert_eq!(decided("docs/architecture.md"), (Some(13), list(&["@acme/docs"])));
    assert_eq!(decided("docs"), (Some(4), list(&["@acme/maintainers"])), "`docs/*` decides files, not the directory");
    assert_eq!(decided("packages/web/docs/guide.md"), (Some(14), list(&[])), "a rule without owners unassigns");
    std::fs::write(fixture.path().join("packages/web/src/new-file.tsx"), "new\n").expect("an untracked file");
    assert_eq!(decided("packages/web/src/new-file.tsx"), (Some(7), list(&["@acme/frontend"])), "untracked paths too");

    let web = owners("packages/web");
    assert_eq!(web.tracked_files, Some(7));
    let groups: Vec<(Option<usize>, usize)> =
        web.owners_by_rule.iter().map(|group| (group.rule.as_ref().map(|rule| rule.line), group.files)).collect();
    assert_eq!(groups, [(Some(7), 5), (Some(9), 1), (Some(14), 1)]);
    let whole = owners(".");
    let tracked = fixture.git(&["ls-tree", "-r", "--name-only", "HEAD"]).lines().count();
    assert_eq!(whole.tracked_files, Some(tracked));
    assert_eq!(whole.owners_by_rule.iter().map(|group| group.files).sum::<usize>(), tracked);
    assert!(owners("packages/web/src/app.tsx").owners_by_rule.is_empty(), "files have no breakdown");
}

/// Commits `files` (path, content; empty content removes the path) on top of HEAD.
fn commit(fixture: &Fixture, message: &str, files: &[(&str, &str)]) {
    for (path, content) in files {
        let file = fixture.path().join(path);
        if content.is_empty() {
            fixture.git(&["rm", "-q", "-r", path]);
        } else {
            std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
            std::fs::write(&file, content).expect("write");
            fixture.git(&["add", path]);
        }
    }
    fixture.git(&["commit", "-q", "-m", message]);
}

#[test]
fn codeowners_file_is_chosen_as_github_does() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let pick = || {
        let owners = read(&fixture, &options("src/main.c", 90, 1, CLOCK_START as i64)).expect("scope").code_owners;
        (owners.file, owners.owners)
    };
    let one = |owner: &str| vec![owner.to_owned()];
    assert_eq!(pick(), (Some(".github/CODEOWNERS"), one("@fixture/core")));
    commit(
        &fixture,
        "root and docs CODEOWNERS",
        &[("CODEOWNERS", "* @root-owner\n"), ("docs/CODEOWNERS", "* @docs-owner\n")],
    );
    assert_eq!(pick(), (Some(".github/CODEOWNERS"), one("@fixture/core")), ".github/ comes first");
    commit(&fixture, "drop .github/CODEOWNERS", &[(".github/CODEOWNERS", "")]);
    assert_eq!(pick(), (Some("CODEOWNERS"), one("@root-owner")), "then the root");
    commit(&fixture, "drop CODEOWNERS", &[("CODEOWNERS", "")]);
    assert_eq!(pick(), (Some("docs/CODEOWNERS"), one("@docs-owner")), "then docs/");
    // A directory named like the file is not the file.
    commit(&fixture, "a CODEOWNERS directory", &[(".github/CODEOWNERS/README.md", "not a CODEOWNERS file\n")]);
    assert_eq!(pick(), (Some("docs/CODEOWNERS"), one("@docs-owner")));
    commit(&fixture, "drop docs/CODEOWNERS", &[("docs/CODEOWNERS", "")]);
    assert_eq!(pick(), (None, vec![]), "no file: no owners");
    // Staged or only in the work tree: not at HEAD, so not used.
    std::fs::write(fixture.path().join("CODEOWNERS"), "* @staged\n").expect("write");
    fixture.git(&["add", "CODEOWNERS"]);
    std::fs::write(fixture.path().join("docs/CODEOWNERS"), "* @work-tree\n").expect("write");
    assert_eq!(pick(), (None, vec![]));
}

#[test]
fn invalid_codeowners_lines_are_reported_with_their_numbers() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let text = "* @fixture/core\n!src/main.c @negated\nsrc/*.[ch] @range\n\\#src @escaped\nsrc/ fixture-core\nsrc/main.c @c-owner\n";
    commit(&fixture, "CODEOWNERS with invalid lines", &[(".github/CODEOWNERS", text)]);
    let owners = read(&fixture, &options("src/main.c", 90, 1, CLOCK_START as i64)).expect("scope").code_owners;
    assert_eq!(owners.error_count, 4);
    assert_eq!(owners.errors.iter().map(|error| error.line).collect::<Vec<_>>(), [2, 3, 4, 5]);
    assert_eq!((owners.rule.map(|rule| rule.line), owners.owners), (Some(6), vec!["@c-owner".to_owned()]));
    let util = read(&fixture, &options("src/util.c", 90, 1, CLOCK_START as i64)).expect("scope").code_owners;
    assert_eq!(util.owners, ["@fixture/core"], "the skipped `[ ]` and `src/` lines are not applied");
}

#[test]
fn paths_outside_the_repository_are_refused() {
    let fixture = fluxgit_fixtures::build(Scenario::Monorepo);
    for bad in ["/etc", "/", "../x", "packages/../../x", ".git", ".git/config", "a\u{7}b"] {
        match read(&fixture, &options(bad, 90, 10, CLOCK_START as i64)) {
            Err(Error::Invalid { reason: InvalidReason::InvalidPath, .. }) => {}
            other => panic!("{bad:?}: {other:?}"),
        }
    }
}

#[test]
fn an_unborn_repository_has_changes_but_no_history_or_owners() {
    let fixture = fluxgit_fixtures::build(Scenario::Unborn);
    let scope = read(&fixture, &options(".", 90, 10, CLOCK_START as i64)).expect("scope");
    assert_eq!((scope.working_tree.counts.staged, scope.working_tree.counts.untracked), (1, 1));
    assert!(scope.recent_commits.is_empty());
    assert_eq!(scope.churn.commits, 0);
    assert_eq!(scope.code_owners.file, None);
}

/// Commits `path` with `content` as `author` at `when` (author and committer date, seconds since the epoch).
fn commit_at(fixture: &Fixture, when: i64, author: &str, path: &str, content: &str) {
    let file = fixture.path().join(path);
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&file, content).expect("write");
    fixture.git(&["add", path]);
    let date = format!("@{when} +0000");
    let mut command = fixture.git_command(fixture.path());
    command.env("GIT_AUTHOR_DATE", &date).env("GIT_COMMITTER_DATE", &date);
    let output = command
        .args(["commit", "-q", &format!("--author={author}"), "-m", &format!("touch {path}")])
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git commit: {}", String::from_utf8_lossy(&output.stderr));
}

/// `git shortlog -sne HEAD -- <path>` as (`Name <email>`, commits), in git's order.
fn shortlog(fixture: &Fixture, path: &str) -> Vec<(String, usize)> {
    fixture
        .git(&["shortlog", "-sne", "HEAD", "--", path])
        .lines()
        .map(|line| {
            let (count, who) = line.trim().split_once('\t').expect("count and author");
            (who.to_owned(), count.parse().expect("count"))
        })
        .collect()
}

#[test]
fn all_time_authors_equal_git_shortlog_for_a_path_untouched_for_months() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let start: i64 = fixture.git(&["log", "-1", "--format=%ct"]).trim().parse().expect("time");
    // `lib/` was last touched 200 days before `now`; Bob wrote from two addresses that `.mailmap` makes one.
    let now = start + 400 * DAY;
    let authors = [
        "Bob Stone <bob@old.example>",
        "Ann Lee <ann@example.com>",
        "Bob Builder <bob@example.com>",
        "Cy Dee <cy@example.com>",
        "Ann Lee <ann@example.com>",
        "Bob Stone <bob@old.example>",
        "Dee Ray <dee@example.com>",
    ];
    for (step, author) in authors.iter().enumerate() {
        let when = start + (10 + step as i64) * DAY;
        commit_at(&fixture, when, author, &format!("lib/f{}.txt", step % 3), &format!("{step}\n"));
    }
    commit_at(&fixture, now - 200 * DAY, "Cy Dee <cy@example.com>", "lib/last.txt", "last\n");
    let mailmap =
        "Bob Builder <bob@example.com> <bob@old.example>\nBob Builder <bob@example.com> Bob Stone <bob@example.com>\n";
    commit_at(&fixture, now - DAY, "Ann Lee <ann@example.com>", ".mailmap", mailmap);
    for path in ["lib", "lib/f0.txt", "."] {
        let scope = read(&fixture, &options(path, 90, 3, now)).expect("scope");
        if path != "." {
            assert_eq!((scope.churn.commits, scope.churn.author_count), (0, 0), "{path}: nothing in 90 days");
        }
        let all = &scope.all_time;
        let shown: Vec<(String, usize)> =
            all.authors.iter().map(|author| (format!("{} <{}>", author.name, author.email), author.commits)).collect();
        let expected = shortlog(&fixture, path);
        assert_eq!(shown, expected, "{path}: the same authors, counts and order as git shortlog -sne");
        assert_eq!(all.author_count, expected.len(), "{path}");
        let count: usize = fixture.git(&["rev-list", "--count", "HEAD", "--", path]).trim().parse().expect("count");
        assert_eq!(all.commits, count, "{path}");
        assert!(shown.iter().all(|(who, _)| !who.contains("old.example")), "{path}: {shown:?}");
        // The window raised to 100 years (it starts before 1970, where git's `--since` cannot go) holds every
        // commit, as `git rev-list --count` counts them.
        let whole = read(&fixture, &options(path, 36_500, 3, now)).expect("scope").churn;
        assert_eq!(whole.commits, count, "{path}");
    }
    let lib = read(&fixture, &options("lib", 90, 3, now)).expect("scope").all_time;
    assert_eq!(lib.authors[0].name, "Bob Builder", "three commits under two addresses: {lib:?}");
    assert_eq!(lib.authors[0].commits, 3);
}

#[test]
fn changed_files_of_a_directory_are_grouped_by_their_owners() {
    let fixture = fluxgit_fixtures::build(Scenario::Monorepo);
    std::fs::write(fixture.path().join("packages/web/src/app.test.tsx"), "changed\n").expect("edit");
    std::fs::write(fixture.path().join("packages/web/src/new-file.tsx"), "new\n").expect("new file");
    let scope = read(&fixture, &options("packages/web", 90, 1, CLOCK_START as i64)).expect("scope");
    let changed = &scope.code_owners.changed;
    let listed: BTreeSet<String> = changed.iter().flat_map(|group| group.files.iter().cloned()).collect();
    let status: BTreeSet<String> = fixture
        .git(&["status", "--porcelain", "--", "packages/web"])
        .lines()
        .map(|line| line[3..].to_owned())
        .collect();
    assert_eq!(listed, status, "every changed path of the directory, once");
    for group in changed {
        for file in &group.files {
            let alone = read(&fixture, &options(file, 90, 1, CLOCK_START as i64)).expect("scope").code_owners;
            assert_eq!(group.owners, alone.owners, "{file}: the owners its own scope gives");
        }
    }
    let owners: BTreeSet<&Vec<String>> = changed.iter().map(|group| &group.owners).collect();
    assert_eq!(owners.len(), changed.len(), "one group per set of owners");
    assert!(changed.len() >= 2, "the test file has its own owners: {changed:?}");
    let file = read(&fixture, &options("packages/web/src/app.test.tsx", 90, 1, CLOCK_START as i64)).expect("scope");
    assert!(file.code_owners.changed.is_empty(), "a file's owners are its rule's");
}

/// Issue 52: one person under two addresses is one author of `allTime`, as `git shortlog -sn` counts (by name),
/// shown with the address most of their commits carry; a `.mailmap` giving both addresses one makes the list
/// `git shortlog -sne`'s. A churn window without commits says nothing in the text.
#[test]
fn all_time_authors_are_one_per_name_as_git_shortlog_sn() {
    let fixture = fluxgit_fixtures::build(Scenario::Clean);
    let start: i64 = fixture.git(&["log", "-1", "--format=%ct"]).trim().parse().expect("time");
    let authors = [
        "Alice Ryhl <alice@ryhl.io>",
        "Alice Ryhl <aliceryhl@google.com>",
        "Bob Lee <bob@example.com>",
        "Alice Ryhl <alice@ryhl.io>",
        "Alice Ryhl <aliceryhl@google.com>",
        "Alice Ryhl <alice@ryhl.io>",
    ];
    for (step, author) in authors.iter().enumerate() {
        commit_at(&fixture, start + (1 + step as i64) * DAY, author, &format!("rust/f{step}.rs"), "fn f() {}\n");
    }
    let now = start + 200 * DAY;
    let shortlog_sn = |path: &str| -> Vec<(String, usize)> {
        let lines = fixture.git(&["shortlog", "-sn", "HEAD", "--", path]);
        let lines = lines.lines().map(|line| line.trim().split_once('\t').expect("count and name"));
        lines.map(|(count, name)| (name.to_owned(), count.parse().expect("count"))).collect()
    };
    let all = read(&fixture, &options("rust", 90, 3, now)).expect("scope").all_time;
    let shown: Vec<(String, usize)> = all.authors.iter().map(|author| (author.name.clone(), author.commits)).collect();
    let expected = shortlog_sn("rust");
    assert_eq!(expected, vec![("Alice Ryhl".to_owned(), 5), ("Bob Lee".to_owned(), 1)], "git counts one Alice");
    assert_eq!(shown, expected, "the same authors, counts and order as git shortlog -sn");
    assert_eq!(all.author_count, expected.len());
    assert_eq!(all.authors[0].email, "alice@ryhl.io", "the address on three of her five commits");

    // The text: no churn line for a window without commits, one author per person.
    let root = fixture.root().canonicalize().expect("root");
    let engine = Engine::new(Options { allowed_roots: vec![root] });
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8")).expect("resolves");
    let text_at = |days: u32| {
        let result = engine.scope(&repo, &options("rust", days, 3, now), UNLIMITED, &mut measure).expect("scope");
        fluxgit_engine::render::scope(&result, &repo.text_options())
    };
    let quiet = text_at(90);
    assert!(!quiet.contains("churn "), "nothing in 90 days: {quiet}");
    assert!(quiet.contains("all time: 6 commits, 2 authors: Alice Ryhl 5, Bob Lee 1"), "{quiet}");
    let busy = text_at(365);
    assert!(busy.contains("churn 365 days to "), "a window with commits keeps its line: {busy}");

    // A `.mailmap` that gives Alice one address: `git shortlog -sne` then lists what the tally shows.
    let mailmap = "Alice Ryhl <alice@ryhl.io> <aliceryhl@google.com>\n";
    std::fs::write(fixture.path().join(".mailmap"), mailmap).expect("mailmap");
    fixture.git(&["add", ".mailmap"]);
    fixture.git(&["commit", "-q", "-m", "chore: mailmap"]);
    let all = read(&fixture, &options("rust", 90, 3, now)).expect("scope").all_time;
    let shown: Vec<(String, usize)> =
        all.authors.iter().map(|author| (format!("{} <{}>", author.name, author.email), author.commits)).collect();
    assert_eq!(shown, shortlog(&fixture, "rust"), "as git shortlog -sne with the mailmap");
    assert_eq!(shown[0], ("Alice Ryhl <alice@ryhl.io>".to_owned(), 5));
}
