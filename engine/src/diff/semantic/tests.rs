//! The answer from parts of files against the answer from whole files, on real history.

use std::path::{Path, PathBuf};

use super::{Cache, Options, read};

/// Whether the file `path` at revision `rev` parses with an error node.
fn has_errors(repo: &gix::Repository, rev: &str, path: &str, language: crate::semantic::Language) -> bool {
    let blob = repo.rev_parse_single(format!("{rev}:{path}").as_str()).expect("a blob").object().expect("a blob");
    crate::semantic::has_errors(language, &blob.data)
}

/// Compares, on each of the last `count` commits of the repository at `root`, the answer made
/// from the parts of files with the answer made from whole files; returns the commits compared
/// and the files whose parts alone were parsed. A file whose sides parse with errors may
/// differ: error recovery can lose symbols far from an error that the parts still see.
fn parts_answer_as_whole(root: &Path, count: usize) -> (usize, usize) {
    let repo = gix::open(root).expect("a repository");
    // Merges too: git's first-parent history is mostly merges, each a whole topic's change.
    let commits = fluxgit_fixtures::last_commits(root, count, true);
    let mut parted = 0;
    for (parent, commit) in &commits {
        let options = Options { base: Some(parent.clone()), head: Some(commit.clone()), ..Options::default() };
        let interrupt = crate::Interrupt::new();
        let cache = Cache::default();
        let mut with_parts = read(&repo, &options, &cache, &interrupt, true).expect("a report");
        let mut whole = read(&repo, &options, &Cache::default(), &interrupt, false).expect("a report");
        assert_eq!(with_parts.files.len(), whole.files.len(), "{}: commit {commit}", root.display());
        for (part_file, whole_file) in with_parts.files.iter().zip(&whole.files) {
            if part_file == whole_file {
                continue;
            }
            let language = whole_file.language.expect("a parsed file");
            let old_path = whole_file.from.as_deref().unwrap_or(&whole_file.path);
            let erring =
                has_errors(&repo, parent, old_path, language) || has_errors(&repo, commit, &whole_file.path, language);
            assert!(erring, "{}: commit {commit}: {part_file:#?}\nagainst\n{whole_file:#?}", root.display());
        }
        with_parts.files.clear();
        whole.files.clear();
        with_parts.fallback_files = whole.fallback_files;
        assert!(with_parts == whole, "{}: commit {commit}", root.display());
        parted += cache.parses.iter().filter(|(key, _)| key.against.is_some_and(|against| against.new)).count();
    }
    (commits.len(), parted)
}

/// The work tree of this repository, or `None` (with a note, a failure under CI) outside a git
/// checkout.
fn this_repository() -> Option<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output =
        std::process::Command::new("git").arg("-C").arg(&workspace).args(["rev-parse", "--show-toplevel"]).output();
    let root = output
        .ok()
        .filter(|output| output.status.success())
        .map(|output| PathBuf::from(String::from_utf8_lossy(&output.stdout).trim().to_owned()));
    if root.is_none() {
        fluxgit_fixtures::skip_unless_ci(&format!("{} is not a git work tree", workspace.display()));
    }
    root
}

/// This repository's last 60 commits: the answer from files' parts is the answer from whole
/// files.
#[test]
fn the_parts_of_files_answer_as_the_whole_files_do() {
    let Some(root) = this_repository() else { return };
    let (commits, parted) = parts_answer_as_whole(&root, 60);
    eprintln!("{commits} commits, {parted} files parsed in parts");
    // A shallow clone has too few commits to say anything: a skip, which fails under CI. A full one has had files
    // parsed in parts.
    if commits < 30 {
        fluxgit_fixtures::skip_unless_ci(&format!(
            "{} has {commits} commits with a parent (a shallow clone?)",
            root.display()
        ));
        return;
    }
    assert!(parted > 0, "none of the files of {commits} commits were parsed in parts");
}

/// The long run: the last 200 commits of each mirrored public repository (ripgrep, tokio,
/// requests, got, git) under `/work/.mirror` or `FLUXGIT_MIRRORS`. `cargo test -p
/// fluxgit-engine --lib --release -- --ignored parts_on_public_repositories`.
#[test]
#[ignore = "a long run over mirrored public repositories"]
fn parts_on_public_repositories() {
    let mirrors = std::env::var_os("FLUXGIT_MIRRORS").map_or_else(|| PathBuf::from("/work/.mirror"), Into::into);
    let mut ran = 0;
    for name in ["BurntSushi+ripgrep", "tokio-rs+tokio", "psf+requests", "sindresorhus+got", "git+git"] {
        let repo = mirrors.join(name).join("repo");
        if !repo.exists() {
            eprintln!("skipped: {} is absent", repo.display());
            continue;
        }
        let (commits, parted) = parts_answer_as_whole(&repo, 200);
        eprintln!("{name}: {commits} commits, {parted} files parsed in parts");
        ran += 1;
    }
    assert!(ran > 0, "no mirrored repository under {}: the long run looked at nothing", mirrors.display());
}
