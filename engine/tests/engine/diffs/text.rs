//! `diff.text` on at least eight selections: files and numstat as `git diff`, and `git apply` of the patch onto
//! the base reproducing the target, whole or cut.

use fluxgit_engine::diff::Status;
use fluxgit_engine::diff::text::{self, Inclusion, Report};
use fluxgit_fixtures::{Fixture, Scenario};

use crate::diffs::support::{
    Files, Tree, UNLIMITED, apply, files, git_numstat, git_numstat_all, materialize, measure, numstat_of, read, under,
};

/// One selection: the engine's options, git's arguments for the same, and the trees for the apply check.
struct Selection<'a> {
    name: &'a str,
    base: Option<&'a str>,
    head: Option<&'a str>,
    staged: bool,
    path: Option<&'a str>,
    git: &'a [&'a str],
    /// The trees the patch goes from and to, or `None` when it cannot be applied as files (submodules).
    trees: Option<(Tree<'a>, Tree<'a>)>,
}

fn options(selection: &Selection<'_>, max_bytes: usize, binary: bool) -> text::Options {
    text::Options {
        base: selection.base.map(Into::into),
        head: selection.head.map(Into::into),
        staged: selection.staged,
        path: selection.path.map(Into::into),
        max_bytes,
        max_lines: None,
        binary,
    }
}

fn diff(fixture: &Fixture, options: &text::Options, max_tokens: usize) -> fluxgit_engine::Budgeted<Report> {
    read(fixture, |engine, repo| engine.diff_text(repo, options, max_tokens, &mut measure).expect("diff.text"))
}

/// Checks the listing against `git diff --numstat`, then applies the (binary-carrying) patch onto the base and
/// compares with the target; returns the default report.
fn check(fixture: &Fixture, selection: &Selection<'_>) -> Report {
    let report = diff(fixture, &options(selection, text::MAX_MAX_BYTES, false), UNLIMITED).data;
    let mut git = vec!["diff", "--numstat", "-z", "-M"];
    git.extend(selection.git);
    git.extend(selection.path.map(|path| ["--", path]).into_iter().flatten());
    // Against the work tree, a tree is compared with unmerged files like any other; against the index they are
    // listed apart.
    let git = if selection.base.is_some() && selection.head.is_none() && !selection.staged {
        git_numstat_all(fixture, &git)
    } else {
        git_numstat(fixture, &git)
    };
    assert_eq!(numstat_of(report.files.iter().map(|file| &file.stat)), git, "{}", selection.name);
    let mut git_patch = vec!["diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M"];
    git_patch.extend(selection.git);
    git_patch.extend(selection.path.map(|path| ["--", path]).into_iter().flatten());
    let git_patch = fixture.git_raw(&git_patch);
    assert!(git_patch.status.success(), "{}", selection.name);
    let git_headers = hunk_header_lines(&String::from_utf8_lossy(&git_patch.stdout));
    for (file, headers) in hunk_header_lines(&report.patch) {
        // A text file that is not UTF-8 is carried as a `GIT binary patch` here: git prints its hunks.
        if !headers.is_empty() {
            assert_eq!(Some(&headers), git_headers.get(&file), "{}: {file}: hunk headers as git's", selection.name);
        }
    }
    assert!(!report.truncated, "{}", selection.name);
    assert_eq!(*report.total_bytes, report.patch.len(), "{}", selection.name);
    assert_eq!(*report.total_lines, report.patch.matches('\n').count(), "{}", selection.name);
    // Compact JSON (design.md#envelope): nothing was cut, so the patch says the totals and each file's hunks; the JSON
    // leaves them out, and the patch's hunk headers add up to the files' counts.
    let json = serde_json::to_value(&report).expect("serialises");
    assert!(json.get("totalBytes").is_none() && json.get("totalLines").is_none(), "{}: {json}", selection.name);
    let listed = json["files"].as_array().map_or(&[][..], Vec::as_slice);
    assert!(listed.iter().all(|file| file.get("hunks").is_none()), "{}: {json}", selection.name);
    let hunks: usize = report.files.iter().map(|file| *file.hunks).sum();
    assert_eq!(hunks, hunk_headers(&report.patch), "{}", selection.name);
    for file in &report.files {
        if file.stat.binary {
            let line = format!("Binary files a/{0} and b/{0} differ\n", file.stat.path);
            let added = format!("Binary files /dev/null and b/{} differ\n", file.stat.path);
            let deleted = format!("Binary files a/{} and /dev/null differ\n", file.stat.path);
            assert!(report.patch.contains(&line) || report.patch.contains(&added) || report.patch.contains(&deleted));
        }
    }
    if let Some((base, target)) = selection.trees {
        let with_binary = diff(fixture, &options(selection, text::MAX_MAX_BYTES, true), UNLIMITED).data;
        let stats = |report: &Report| report.files.iter().map(|file| file.stat.clone()).collect::<Vec<_>>();
        assert_eq!(stats(&with_binary), stats(&report), "{}: binary content changes no listing", selection.name);
        let (applied, expected, _) = apply_to_base(fixture, base, target, selection.path, &with_binary.patch);
        assert_eq!(applied, expected, "{}: git apply reproduces the target", selection.name);
    }
    report
}

/// Each file section's `@@` lines (with git's function context), by the section's `diff --git` line.
fn hunk_header_lines(patch: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out = std::collections::BTreeMap::<String, Vec<String>>::new();
    let mut file = String::new();
    for line in patch.lines() {
        if line.starts_with("diff --git ") || line.starts_with("diff --cc ") {
            file = line.to_owned();
            out.entry(file.clone()).or_default();
        } else if line.starts_with("@@ ") {
            out.entry(file.clone()).or_default().push(line.to_owned());
        }
    }
    out
}

/// The hunks `patch` holds: its `@@` (and combined `@@@`) headers, a `GIT binary patch` block counting as one.
fn hunk_headers(patch: &str) -> usize {
    patch.lines().filter(|line| line.starts_with("@@") || *line == "GIT binary patch").count()
}

/// Applies `patch` onto `base`; returns the result, the target (outside `path`, the base) and the base.
fn apply_to_base(
    fixture: &Fixture,
    base: Tree<'_>,
    target: Tree<'_>,
    path: Option<&str>,
    patch: &str,
) -> (Files, Files, Files) {
    let temp = tempfile::tempdir().expect("tempdir");
    let (base_dir, target_dir) = (temp.path().join("base"), temp.path().join("target"));
    materialize(fixture, base, &base_dir);
    materialize(fixture, target, &target_dir);
    let base_files = files(&base_dir);
    let mut expected: Files = base_files.clone().into_iter().filter(|(name, _)| !under(name, path)).collect();
    expected.extend(files(&target_dir).into_iter().filter(|(name, _)| under(name, path)));
    if !patch.is_empty() {
        apply(fixture, &base_dir, patch);
    }
    (files(&base_dir), expected, base_files)
}

fn selections() -> Vec<Selection<'static>> {
    let worktree = |name, path| Selection {
        name,
        base: None,
        head: None,
        staged: false,
        path,
        git: &[],
        trees: Some((Tree::Index, Tree::Worktree)),
    };
    vec![
        worktree("work tree", None),
        worktree("binary file", Some("assets/logo.bin")),
        worktree("non-UTF-8 file", Some("data/legacy.txt")),
        worktree("deleted file", Some("src/helpers.c")),
        Selection {
            name: "staged",
            staged: true,
            git: &["--cached"],
            trees: Some((Tree::Rev("HEAD"), Tree::Index)),
            ..worktree("", None)
        },
        Selection {
            name: "revision range with renames",
            base: Some("HEAD~3"),
            head: Some("HEAD"),
            git: &["HEAD~3", "HEAD"],
            trees: Some((Tree::Rev("HEAD~3"), Tree::Rev("HEAD"))),
            ..worktree("", None)
        },
        Selection {
            name: "a path in a range",
            base: Some("HEAD~3"),
            head: Some("HEAD"),
            path: Some("src"),
            git: &["HEAD~3", "HEAD"],
            trees: Some((Tree::Rev("HEAD~3"), Tree::Rev("HEAD"))),
            ..worktree("", None)
        },
        Selection {
            name: "revision vs work tree",
            base: Some("HEAD~2"),
            git: &["HEAD~2"],
            trees: Some((Tree::Rev("HEAD~2"), Tree::Worktree)),
            ..worktree("", None)
        },
        Selection {
            name: "revision vs index",
            base: Some("HEAD~1"),
            head: Some("INDEX"),
            git: &["--cached", "HEAD~1"],
            trees: Some((Tree::Rev("HEAD~1"), Tree::Index)),
            ..worktree("", None)
        },
        Selection {
            name: "merge against its first parent",
            base: Some("HEAD^1"),
            head: Some("HEAD"),
            git: &["HEAD^1", "HEAD"],
            trees: Some((Tree::Rev("HEAD^1"), Tree::Rev("HEAD"))),
            ..worktree("", None)
        },
        Selection {
            name: "head only (HEAD as base)",
            head: Some("HEAD~2"),
            git: &["HEAD", "HEAD~2"],
            trees: Some((Tree::Rev("HEAD"), Tree::Rev("HEAD~2"))),
            ..worktree("", None)
        },
    ]
}

#[test]
fn selections_match_git_and_their_patches_apply() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    for selection in selections() {
        check(&fixture, &selection);
    }
}

#[test]
fn patches_carry_what_git_writes() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    let all = selections();
    let by_name = |name: &str| all.iter().find(|selection| selection.name == name).expect("a selection");
    let range = check(&fixture, by_name("revision range with renames"));
    let renamed = range.files.iter().find(|file| file.stat.path == "src/helpers.c").expect("helpers.c");
    assert_eq!((renamed.stat.status, renamed.stat.from.as_deref()), (Status::Renamed, Some("src/util.c")));
    assert!(range.patch.contains("rename from src/util.c\nrename to src/helpers.c\n"), "{}", range.patch);
    assert!(range.patch.contains("similarity index 100%\nrename from docs/guide.md\nrename to docs/manual.md\n"));
    assert!(range.patch.contains("deleted file mode 100644\nindex ") && range.patch.contains("+++ /dev/null\n"));
    assert!(range.patch.contains("--- a/notes/todo list.txt\t\n"), "git adds a tab after names with spaces");
    assert!(range.patch.contains("new file mode 100755\n"), "scripts/build.sh is executable");
    assert!(range.patch.contains("+last line without newline\n\\ No newline at end of file\n"));
    assert!(range.patch.contains("+windows line one\r\n"), "CRLF kept");

    let staged = check(&fixture, by_name("staged"));
    assert!(staged.patch.contains(
        "new file mode 100644\nindex 0000000..28de990\n--- /dev/null\n+++ b/src/staged.c\n@@ -0,0 +1,3 @@\n"
    ));
    let worktree = check(&fixture, by_name("work tree"));
    let mode = worktree.files.iter().find(|file| file.stat.path == "scripts/build.sh").expect("build.sh");
    assert_eq!((mode.stat.old_mode.as_deref(), mode.stat.new_mode.as_deref()), (Some("100755"), Some("100644")));
    assert!(
        worktree.patch.contains("diff --git a/scripts/build.sh b/scripts/build.sh\nold mode 100755\nnew mode 100644\n")
    );
    let long = worktree.files.iter().find(|file| file.stat.path == "src/long.c").expect("long.c");
    assert_eq!((*long.hunks, long.in_patch), (2, Some(Inclusion::Full)));
    let legacy = check(&fixture, by_name("non-UTF-8 file"));
    assert!(legacy.files[0].stat.non_utf8 && !legacy.files[0].stat.binary);
    assert!(legacy.patch.contains("GIT binary patch\nliteral "), "{}", legacy.patch);
    let binary = check(&fixture, by_name("binary file"));
    assert_eq!((binary.files[0].stat.binary, binary.files[0].stat.additions), (true, None));
}

#[test]
fn other_repositories_match_git() {
    // An unborn HEAD: staged against nothing.
    let unborn = fluxgit_fixtures::build(Scenario::Unborn);
    let staged = Selection {
        name: "unborn staged",
        base: None,
        head: None,
        staged: true,
        path: None,
        git: &["--cached"],
        trees: None,
    };
    let report = check(&unborn, &staged);
    assert_eq!((report.base, report.files.len()), (None, 1));
    assert!(report.patch.contains("@@ -0,0 +1 @@\n+# Not committed yet\n"), "{}", report.patch);
    // Submodules: the drifted one shows its commits.
    let submodules = fluxgit_fixtures::build(Scenario::Submodules);
    let worktree = Selection { name: "submodules", git: &[], ..staged };
    let worktree = Selection { staged: false, ..worktree };
    let report = check(&submodules, &worktree);
    assert!(report.patch.contains("-Subproject commit "), "{}", report.patch);
    // A stopped merge: unmerged paths listed apart; the rest as git.
    let conflict = fluxgit_fixtures::build(Scenario::MergeConflict);
    for git in [&[][..], &["--cached"][..], &["HEAD"][..]] {
        let selection = Selection {
            staged: git == ["--cached"],
            base: (git == ["HEAD"]).then_some("HEAD"),
            git,
            ..Selection { name: "merge conflict", ..worktree }
        };
        let report = check(&conflict, &selection);
        let unmerged: Vec<&str> = report
            .files
            .iter()
            .filter(|file| file.stat.status == Status::Unmerged)
            .map(|file| file.stat.path.as_str())
            .collect();
        let expected = if git == ["HEAD"] { vec![] } else { vec!["docs/guide.md", "src/main.c", "src/util.c"] };
        assert_eq!(unmerged, expected, "{git:?}");
    }
}

#[test]
fn cuts_keep_whole_hunks_that_apply() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    let worktree = &selections()[0];
    for max_bytes in [300, 900, 2500] {
        let cut = diff(&fixture, &options(worktree, max_bytes, true), UNLIMITED);
        assert!(cut.data.truncated && cut.data.patch.len() <= max_bytes, "{max_bytes}: {}", cut.data.patch.len());
        check_cut_applies(&fixture, (Tree::Index, Tree::Worktree), &cut.data);
    }
    let large = fluxgit_fixtures::build(Scenario::LargeDiff);
    let selection = Selection { name: "large work tree", ..selections().remove(0) };
    let cut = diff(&large, &options(&selection, 20_000, false), UNLIMITED);
    assert!(cut.data.truncated && cut.data.patch.len() <= 20_000);
    assert_eq!(cut.data.files.len(), 30);
    check_cut_applies(&large, (Tree::Index, Tree::Worktree), &cut.data);
    // maxLines and maxTokens cut the same way.
    let lines = diff(
        &large,
        &text::Options { max_lines: Some(500), ..options(&selection, text::MAX_MAX_BYTES, false) },
        UNLIMITED,
    );
    assert!(lines.data.truncated && lines.data.patch.matches('\n').count() <= 500);
    check_cut_applies(&large, (Tree::Index, Tree::Worktree), &lines.data);
    for max_tokens in [1500, 5000] {
        let tokens = diff(&large, &options(&selection, text::MAX_MAX_BYTES, false), max_tokens);
        assert!(measure(&tokens) <= max_tokens && tokens.data.truncated);
        assert_eq!(tokens.data.files.len(), 30, "the listing fits {max_tokens} tokens");
        check_cut_applies(&large, (Tree::Index, Tree::Worktree), &tokens.data);
    }
}

/// A cut patch applies; files it holds fully equal the target, files it left out equal the base, files it holds
/// in part are neither.
fn check_cut_applies(fixture: &Fixture, (base, target): (Tree<'_>, Tree<'_>), report: &Report) {
    let (applied, expected, base_files) = apply_to_base(fixture, base, target, None, &report.patch);
    let mut full = 0;
    for file in &report.files {
        let path = &file.stat.path;
        match file.in_patch {
            Some(Inclusion::Full) => {
                full += 1;
                assert_eq!(applied.get(path), expected.get(path), "{path}: fully included, so as the target");
            }
            Some(Inclusion::Omitted) => assert_eq!(applied.get(path), base_files.get(path), "{path}: left out"),
            Some(Inclusion::Partial) => {
                full += 1;
                assert_ne!(applied.get(path), base_files.get(path), "{path}: some hunks applied");
                assert_ne!(applied.get(path), expected.get(path), "{path}: not all hunks applied");
            }
            None => {}
        }
    }
    assert!(full > 0, "something fits: {report:#?}");
}

#[test]
fn forty_thousand_lines_in_thirty_files_list_every_file_at_the_default_budget() {
    let fixture = fluxgit_fixtures::build(Scenario::LargeDiff);
    let options = text::Options {
        base: Some("HEAD~1".into()),
        head: Some("HEAD".into()),
        staged: false,
        path: None,
        max_bytes: text::DEFAULT_MAX_BYTES,
        max_lines: None,
        binary: false,
    };
    let report = diff(&fixture, &options, 12_000);
    assert!(measure(&report) <= 12_000);
    // Every file is listed, so no `totals`: the files' sums say it.
    assert_eq!(report.data.totals, None);
    let additions: u64 = report.data.files.iter().filter_map(|file| file.stat.additions).sum();
    assert_eq!((report.data.files.len(), additions), (30, 40_000));
    assert!(report.data.truncated && report.omitted.0.iter().all(|(name, _)| *name == "hunks"));
    // Cut: the JSON states the whole patch's size, and the hunks of each file whose patch is not all there.
    let json = serde_json::to_value(&report.data).expect("serialises");
    assert_eq!(json["totalBytes"].as_u64(), Some(*report.data.total_bytes as u64), "{json}");
    assert_eq!(json["totalLines"].as_u64(), Some(*report.data.total_lines as u64), "{json}");
    assert!(*report.data.total_bytes > report.data.patch.len());
    for (file, listed) in report.data.files.iter().zip(json["files"].as_array().expect("files")) {
        let whole = matches!(file.in_patch, None | Some(Inclusion::Full));
        let stated = listed["hunks"].as_u64().map(|hunks| hunks as usize);
        assert_eq!(stated, (!whole).then_some(*file.hunks), "{listed}");
    }
    let git = git_numstat(&fixture, &["diff", "--numstat", "-z", "HEAD~1", "HEAD"]);
    assert_eq!(numstat_of(report.data.files.iter().map(|file| &file.stat)), git);
}

#[test]
fn bad_selections_are_refused() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    let reason = |options: text::Options| {
        read(&fixture, |engine, repo| match engine.diff_text(repo, &options, UNLIMITED, &mut measure) {
            Err(fluxgit_engine::Error::Invalid { reason, .. }) => reason.as_str(),
            other => panic!("expected a refusal, got {other:?}"),
        })
    };
    let base = options(&selections()[0], text::DEFAULT_MAX_BYTES, false);
    assert_eq!(reason(text::Options { base: Some("no-such-branch".into()), ..base.clone() }), "unknown_revision");
    assert_eq!(reason(text::Options { base: Some("--output=/tmp/x".into()), ..base.clone() }), "invalid_revision");
    assert_eq!(reason(text::Options { path: Some("../outside".into()), ..base.clone() }), "invalid_path");
    assert_eq!(reason(text::Options { staged: true, head: Some("HEAD".into()), ..base }), "invalid_revision");
}

#[test]
fn no_textconv_or_external_diff_program_runs() {
    let fixture = fluxgit_fixtures::build(Scenario::Diffs);
    let traps = tempfile::tempdir().expect("tempdir");
    let marker = traps.path().join("ran");
    let script = traps.path().join("trap.sh");
    std::fs::write(&script, format!("#!/bin/sh\n: > '{}'\ncat \"$1\"\n", marker.display())).expect("script");
    let mut permissions = std::fs::metadata(&script).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&script, permissions).expect("chmod");
    let script = script.to_str().expect("utf-8");
    fixture.git(&["config", "diff.trap.textconv", script]);
    fixture.git(&["config", "diff.trap.command", script]);
    std::fs::write(fixture.path().join(".gitattributes"), "* diff=trap\n").expect("attributes");
    fixture.git(&["add", ".gitattributes"]);
    for selection in selections() {
        let report = diff(&fixture, &options(&selection, text::MAX_MAX_BYTES, true), UNLIMITED).data;
        assert!(!report.files.is_empty(), "{}", selection.name);
        if let Some(logo) = report.files.iter().find(|file| file.stat.path == "assets/logo.bin") {
            assert!(logo.stat.binary, "{}: still binary under a diff driver", selection.name);
        }
    }
    read(&fixture, |engine, repo| {
        engine.commit_details(repo, "HEAD~2", UNLIMITED, &mut measure).expect("details");
        engine.worktree_changes(repo, UNLIMITED, &mut measure).expect("changes");
    });
    assert!(!marker.exists(), "a textconv or external diff program ran");
    // The trap is live: git itself runs it.
    fixture.git(&["diff", "HEAD~3", "HEAD", "--", "src/long.c"]);
    assert!(marker.exists(), "git runs the trap");
}
