//! Reading through the engine, and asking git.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use fluxgit_engine::diff::{FileStat, Status};
use fluxgit_engine::{Budgeted, Engine, Options, Repo, budget};
use fluxgit_fixtures::Fixture;

/// Large enough that nothing is cut.
pub(crate) const UNLIMITED: usize = 100_000_000;

/// Per path: additions, deletions (`None` for binary, git's `-`), and the old path of a rename.
pub(crate) type Numstat = BTreeMap<String, (Option<u64>, Option<u64>, Option<String>)>;

pub(crate) fn measure<T: serde::Serialize>(result: &Budgeted<T>) -> usize {
    budget::count_tokens(&serde_json::to_string(result).expect("serialises"))
}

/// Runs `read` on the fixture's repository and checks that the fixture is byte-identical afterwards and that no
/// repository-configured program ran.
pub(crate) fn read<T>(fixture: &Fixture, read: impl FnOnce(&Engine, &Repo) -> T) -> T {
    let before = fluxgit_fixtures::tree_digest(fixture.root());
    let root = fixture.root().canonicalize().expect("fixture root exists");
    let engine = Engine::new(Options { allowed_roots: vec![root] });
    let repo = engine.resolve(fixture.path().to_str().expect("utf-8 temp path")).expect("resolves");
    let out = read(&engine, &repo);
    drop(repo);
    assert_eq!(fluxgit_fixtures::tree_digest(fixture.root()), before, "a read changed the repository");
    if let Some(traps) = fixture.traps() {
        assert!(traps.sprung().is_empty(), "a repository-configured program ran: {:?}", traps.sprung());
    }
    out
}

/// The listing as numstat, unmerged paths left out.
pub(crate) fn numstat_of<'a>(files: impl IntoIterator<Item = &'a FileStat>) -> Numstat {
    files
        .into_iter()
        .filter(|file| file.status != Status::Unmerged)
        .map(|file| (file.path.clone(), (file.additions, file.deletions, file.from.clone())))
        .collect()
}

/// `git <args>` (with `--numstat -z` added by the caller), parsed; unmerged paths (git's `0 0` lines of
/// `--cached`, and the duplicate line of `git diff`) are dropped.
pub(crate) fn git_numstat(fixture: &Fixture, args: &[&str]) -> Numstat {
    let unmerged = unmerged(fixture);
    git_numstat_all(fixture, args).into_iter().filter(|(path, _)| !unmerged.contains(path)).collect()
}

/// Like [`git_numstat`], keeping unmerged paths (for a tree against the work tree, git diffs them normally).
pub(crate) fn git_numstat_all(fixture: &Fixture, args: &[&str]) -> Numstat {
    let output = fixture.git_raw(args);
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    let mut out = Numstat::new();
    let mut fields = output.stdout.split(|byte| *byte == 0);
    while let Some(record) = fields.next() {
        let record = String::from_utf8_lossy(record);
        let record = record.trim_start_matches('\n');
        if record.is_empty() {
            continue;
        }
        let mut parts = record.splitn(3, '\t');
        let count = |text: Option<&str>| match text.expect("a count") {
            "-" => None,
            number => Some(number.parse::<u64>().expect("a number")),
        };
        let (additions, deletions) = (count(parts.next()), count(parts.next()));
        let path = parts.next().expect("a path field");
        let (path, from) = if path.is_empty() {
            let from = String::from_utf8_lossy(fields.next().expect("rename source")).into_owned();
            (String::from_utf8_lossy(fields.next().expect("rename target")).into_owned(), Some(from))
        } else {
            (path.to_owned(), None)
        };
        out.insert(path, (additions, deletions, from));
    }
    out
}

/// Unmerged paths, as git lists them.
pub(crate) fn unmerged(fixture: &Fixture) -> Vec<String> {
    paths(fixture, &["diff", "--name-only", "--diff-filter=U", "-z"])
}

/// NUL-separated paths printed by `git <args>`.
pub(crate) fn paths(fixture: &Fixture, args: &[&str]) -> Vec<String> {
    let output = fixture.git_raw(args);
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    let mut out: Vec<String> = output
        .stdout
        .split(|byte| *byte == 0)
        .filter(|path| !path.is_empty())
        .map(|path| String::from_utf8_lossy(path).into_owned())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// A tree to put on disk for `git apply`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tree<'a> {
    /// A revision's tree (`git archive`).
    Rev(&'a str),
    /// The index (`git checkout-index`).
    Index,
    /// The tracked files of the work tree, copied.
    Worktree,
}

/// A directory's files: content, executable bit, symlink.
pub(crate) type Files = BTreeMap<String, (Vec<u8>, bool, bool)>;

/// Writes `tree` of the fixture into the empty directory `dir`.
pub(crate) fn materialize(fixture: &Fixture, tree: Tree<'_>, dir: &Path) {
    std::fs::create_dir_all(dir).expect("create dir");
    match tree {
        Tree::Rev(rev) => {
            let archive = fixture.git_raw(&["archive", "--format=tar", rev]);
            assert!(archive.status.success(), "git archive {rev}");
            let mut tar =
                Command::new("tar").arg("-xf").arg("-").arg("-C").arg(dir).stdin(Stdio::piped()).spawn().expect("tar");
            tar.stdin.take().expect("stdin").write_all(&archive.stdout).expect("feed tar");
            assert!(tar.wait().expect("tar runs").success(), "tar -x");
        }
        Tree::Index => {
            let prefix = format!("{}/", dir.display());
            fixture.git(&["checkout-index", "-a", &format!("--prefix={prefix}")]);
        }
        Tree::Worktree => {
            for path in paths(fixture, &["ls-files", "-z"]) {
                let source = fixture.path().join(&path);
                let Ok(metadata) = std::fs::symlink_metadata(&source) else { continue };
                let target = dir.join(&path);
                std::fs::create_dir_all(target.parent().expect("a parent")).expect("create parent");
                if metadata.is_symlink() {
                    std::os::unix::fs::symlink(std::fs::read_link(&source).expect("link"), &target).expect("symlink");
                } else if metadata.is_file() {
                    std::fs::copy(&source, &target).expect("copy keeps permissions");
                }
            }
        }
    }
}

/// Every file below `dir`.
pub(crate) fn files(dir: &Path) -> Files {
    fn walk(dir: &Path, prefix: &str, out: &mut Files) {
        let mut entries: Vec<_> =
            std::fs::read_dir(dir).expect("read dir").map(|entry| entry.expect("entry")).collect();
        entries.sort_by_key(|entry| entry.file_name());
        for entry in entries {
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            let metadata = std::fs::symlink_metadata(entry.path()).expect("metadata");
            if metadata.is_symlink() {
                let target = std::fs::read_link(entry.path()).expect("link");
                out.insert(name, (target.to_string_lossy().as_bytes().to_vec(), false, true));
            } else if metadata.is_dir() {
                walk(&entry.path(), &format!("{name}/"), out);
            } else {
                use std::os::unix::fs::PermissionsExt;
                let executable = metadata.permissions().mode() & 0o111 != 0;
                out.insert(name, (std::fs::read(entry.path()).expect("read"), executable, false));
            }
        }
    }
    let mut out = Files::new();
    walk(dir, "", &mut out);
    out
}

/// `git apply --check`, then `git apply`, of `patch` in `dir` (not a repository).
pub(crate) fn apply(fixture: &Fixture, dir: &Path, patch: &str) {
    let patch_file = dir.with_extension("patch");
    std::fs::write(&patch_file, patch).expect("write patch");
    let patch_arg = patch_file.to_str().expect("utf-8 path");
    for args in [vec!["apply", "--check", patch_arg], vec!["apply", patch_arg]] {
        let output = fixture.git_raw_in(dir, &args);
        assert!(
            output.status.success(),
            "git {args:?} failed: {}\n--- patch ---\n{patch}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// `true` when `path` is `filter` or lies below it.
pub(crate) fn under(path: &str, filter: Option<&str>) -> bool {
    filter.is_none_or(|filter| path == filter || path.starts_with(&format!("{filter}/")))
}
