//! Nothing outside the allowed roots is read or reported, and no file of a repository can make a read wait or grow
//! without bound: alternates and submodule git dirs outside the roots, paths through a committed symbolic link,
//! FIFOs and devices in the git dir and in the files named by configuration, and huge files for `file.blame`.
//!
//! Every repository is built with the git CLI: an allowed root holding the repository under test, and a second
//! repository outside it (the "outside" store) whose commit sha and content must never appear in an answer.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fluxgit_engine::file::{FileRange, blame};
use fluxgit_engine::{Engine, Error, InvalidReason, Options};

/// Content only the outside repository holds.
const SECRET: &str = "SECRET-OUTSIDE-CONTENT";

/// Time within which every case answers or is refused.
const LIMIT: Duration = Duration::from_secs(5);

/// An allowed root with `repo/` in it, and `outside/` (a repository) next to the root, not under it.
struct Layout {
    _temp: tempfile::TempDir,
    /// The allowed root (canonical).
    root: PathBuf,
    /// The repository under test, inside the root.
    repo: PathBuf,
    /// A repository outside the root.
    outside: PathBuf,
    /// The outside repository's HEAD commit.
    outside_head: String,
    home: PathBuf,
}

impl Layout {
    fn new() -> Self {
        let temp = tempfile::tempdir().expect("temp dir");
        let base = temp.path().canonicalize().expect("canonical temp dir");
        let root = base.join("allowed");
        let home = base.join("home");
        for dir in [&root, &home] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        let repo = root.join("repo");
        let outside = base.join("outside");
        let mut layout = Layout { _temp: temp, root, repo, outside, outside_head: String::new(), home };
        layout.init(&layout.repo.clone(), "inside.txt", "inside content\n");
        layout.init(&layout.outside.clone(), "secret.txt", &format!("{SECRET}\n"));
        layout.outside_head = layout.git(&layout.outside.clone(), &["rev-parse", "HEAD"]);
        layout
    }

    /// `git init` at `dir` with one commit holding `file`.
    fn init(&self, dir: &Path, file: &str, content: &str) {
        std::fs::create_dir_all(dir).expect("mkdir");
        self.git(dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join(file), content).expect("write");
        self.git(dir, &["add", file]);
        self.git(dir, &["commit", "-q", "-m", &format!("add {file}")]);
    }

    fn command(&self, dir: &Path) -> Command {
        let mut command = Command::new("git");
        command
            .current_dir(dir)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "A U Thor")
            .env("GIT_AUTHOR_EMAIL", "author@example.com")
            .env("GIT_COMMITTER_NAME", "A U Thor")
            .env("GIT_COMMITTER_EMAIL", "author@example.com")
            .env("GIT_AUTHOR_DATE", "@1700000000 +0000")
            .env("GIT_COMMITTER_DATE", "@1700000000 +0000");
        command
    }

    /// Runs git in `dir`; its trimmed stdout. Panics on failure.
    fn git(&self, dir: &Path, args: &[&str]) -> String {
        let output = self.command(dir).args(args).output().expect("git runs");
        assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    fn engine(&self) -> Engine {
        Engine::new(Options { allowed_roots: vec![self.root.clone()] })
    }

    fn repo_path(&self) -> &str {
        self.repo.to_str().expect("utf-8 path")
    }

    /// Asserts that `text` (an answer or an error, rendered) holds neither the outside HEAD nor its content.
    fn assert_clean(&self, what: &str, text: &str) {
        assert!(!text.contains(&self.outside_head), "{what} reports the outside HEAD {}: {text}", self.outside_head);
        assert!(!text.contains(SECRET), "{what} serves outside content: {text}");
    }
}

/// Runs `call` on a thread of its own and returns its value, failing the test when it takes longer than
/// [`LIMIT`] (the thread is then left behind, blocked).
fn within_limit<T: Send + 'static>(what: &str, call: impl FnOnce() -> T + Send + 'static) -> T {
    let (send, receive) = mpsc::channel();
    let started = Instant::now();
    std::thread::spawn(move || {
        let _ = send.send(call());
    });
    let value = receive.recv_timeout(LIMIT).unwrap_or_else(|_| panic!("{what} did not answer within {LIMIT:?}"));
    assert!(started.elapsed() < LIMIT, "{what} took {:?}", started.elapsed());
    value
}

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

fn reason(err: &Error) -> Option<InvalidReason> {
    match err {
        Error::Invalid { reason, .. } => Some(*reason),
        _ => None,
    }
}

#[test]
fn alternates_outside_the_roots_are_never_read() {
    let layout = Layout::new();
    let objects = layout.outside.join(".git/objects");
    // A ref to a commit only the outside store holds: git itself reads it through the alternates.
    let alternates = layout.repo.join(".git/objects/info/alternates");
    std::fs::write(&alternates, format!("{}\n", objects.display())).expect("write alternates");
    layout.git(&layout.repo, &["update-ref", "refs/heads/stolen", &layout.outside_head]);
    assert!(layout.git(&layout.repo, &["show", "stolen:secret.txt"]).contains(SECRET), "git follows the alternates");

    let engine = layout.engine();
    let path = layout.repo_path().to_owned();
    let err = within_limit("resolve", move || engine.resolve(&path).err()).expect("refused");
    assert_eq!(reason(&err), Some(InvalidReason::OutsideAllowedRoots), "{err}");
    assert!(err.to_string().contains("alternates"), "{err}");
    layout.assert_clean("the refusal", &err.to_string());

    // Nested: an alternate inside the roots whose own alternates lead outside; and a relative entry.
    let middle = layout.root.join("middle");
    layout.init(&middle, "middle.txt", "middle\n");
    std::fs::write(&alternates, format!("{}\n", middle.join(".git/objects").display())).expect("write alternates");
    std::fs::write(middle.join(".git/objects/info/alternates"), "../../../../outside/.git/objects\n").expect("write");
    let Err(err) = layout.engine().resolve(layout.repo_path()) else { panic!("nested alternates refused") };
    assert_eq!(reason(&err), Some(InvalidReason::OutsideAllowedRoots), "{err}");
    layout.assert_clean("the nested refusal", &err.to_string());

    // Alternates that stay inside the roots are followed as git follows them.
    std::fs::remove_file(middle.join(".git/objects/info/alternates")).expect("remove");
    let repo = layout.engine().resolve(layout.repo_path()).expect("alternates inside the roots are fine");
    drop(repo);
}

#[test]
fn a_submodule_gitdir_outside_the_roots_is_never_opened() {
    let layout = Layout::new();
    let inside_head = layout.git(&layout.repo, &["rev-parse", "HEAD"]);
    std::fs::write(layout.repo.join(".gitmodules"), "[submodule \"ext\"]\n\tpath = libs/ext\n\turl = ./ext\n")
        .expect("write .gitmodules");
    layout.git(&layout.repo, &["update-index", "--add", "--cacheinfo", &format!("160000,{inside_head},libs/ext")]);
    layout.git(&layout.repo, &["add", ".gitmodules"]);
    layout.git(&layout.repo, &["commit", "-q", "-m", "add a submodule"]);
    let checkout = layout.repo.join("libs/ext");
    std::fs::create_dir_all(&checkout).expect("mkdir");
    std::fs::write(checkout.join(".git"), format!("gitdir: {}\n", layout.outside.join(".git").display()))
        .expect("write .git file");
    // git itself follows the gitdir: it sees the outside HEAD.
    let seen = layout.git(&checkout, &["rev-parse", "HEAD"]);
    assert_eq!(seen, layout.outside_head, "git follows the gitdir");

    let engine = layout.engine();
    let repo = engine.resolve(layout.repo_path()).expect("the superproject resolves");
    let report = engine.submodule_status(&repo, None).expect("submodule.status answers");
    let text = serde_json::to_string(&report).expect("serialises");
    layout.assert_clean("submodule.status", &text);
    let ext = report.submodules.iter().find(|submodule| submodule.path == "libs/ext").expect("listed");
    let error = ext.error.as_ref().expect("marked unreadable");
    assert!(error.reason.starts_with("outside_allowed_roots"), "{error:?}");
    assert_eq!(serde_json::to_value(ext.state).expect("serialises"), "unreadable");

    let status = engine.status(&repo, 1_000_000, &mut |_| 0).expect("repo.status answers");
    let text = serde_json::to_string(&status).expect("serialises");
    layout.assert_clean("repo.status", &text);
    assert!(status.data.unreadable.iter().any(|item| item.path == "libs/ext"), "{text}");

    let brief = engine.brief(&repo, &Default::default(), 1_000_000, &mut |_| 0).expect("repo.brief answers");
    layout.assert_clean("repo.brief", &serde_json::to_string(&brief).expect("serialises"));

    for (base, head) in [(None, None), (Some("HEAD"), Some("WORKTREE")), (Some("HEAD"), Some("INDEX"))] {
        let options = fluxgit_engine::diff::text::Options {
            base: base.map(str::to_owned),
            head: head.map(str::to_owned),
            staged: false,
            path: None,
            max_bytes: 100_000,
            max_lines: None,
            binary: false,
        };
        let diff = engine.diff_text(&repo, &options, 1_000_000, &mut |_| 0).expect("diff.text answers");
        layout.assert_clean("diff.text", &serde_json::to_string(&diff).expect("serialises"));
        // The work tree's side names the submodule it could not open, so that it does not pass for unchanged;
        // the index's side reads the gitlink from the index and opens nothing.
        let unreadable: Vec<&str> = diff.data.unreadable.iter().map(|item| item.path.as_str()).collect();
        if head == Some("INDEX") {
            assert!(unreadable.is_empty(), "{unreadable:?}");
        } else {
            assert_eq!(unreadable, ["libs/ext"], "{base:?}..{head:?}");
            assert!(diff.data.unreadable[0].error.reason.starts_with("outside_allowed_roots"));
            let text = fluxgit_engine::render::diff_text(&diff, &Default::default());
            assert!(text.contains("unreadable libs/ext: outside_allowed_roots"), "{text}");
            layout.assert_clean("diff.text's text", &text);
        }
    }
    // git itself shows the submodule as changed: the outside HEAD is not the commit recorded.
    let git_diff = layout.git(&layout.repo, &["diff", "--name-only"]);
    assert_eq!(git_diff, "libs/ext", "git reads through the gitdir");
}

#[test]
fn paths_beyond_a_committed_symlink_are_refused_alike() {
    let layout = Layout::new();
    let target = layout.outside.join("dir");
    std::fs::create_dir_all(&target).expect("mkdir");
    std::fs::write(target.join("present.txt"), SECRET).expect("write");
    std::os::unix::fs::symlink(&target, layout.repo.join("etclink")).expect("symlink");
    layout.git(&layout.repo, &["add", "etclink"]);
    layout.git(&layout.repo, &["commit", "-q", "-m", "a link out"]);
    // git refuses the pathspec.
    let output = layout.command(&layout.repo).args(["add", "etclink/present.txt"]).output().expect("git");
    assert!(String::from_utf8_lossy(&output.stderr).contains("beyond a symbolic link"), "{output:?}");

    let engine = layout.engine();
    let repo = engine.resolve(layout.repo_path()).expect("resolves");
    let scope = |path: &str| {
        let options = fluxgit_engine::scope::Options {
            path: path.to_owned(),
            churn_days: 90,
            recent_commits: 10,
            now: 1_800_000_000,
        };
        engine.scope(&repo, &options, 1_000_000, &mut |_| 0)
    };
    let present = scope("etclink/present.txt").expect_err("refused");
    let missing = scope("etclink/missing.txt").expect_err("refused");
    assert_eq!(reason(&present), Some(InvalidReason::InvalidPath), "{present}");
    assert_eq!(reason(&missing), reason(&present));
    assert_eq!(
        present.to_string().replace("present", "NAME"),
        missing.to_string().replace("missing", "NAME"),
        "no existence oracle"
    );
    assert!(present.to_string().contains("beyond a symbolic link"), "{present}");
    // The link itself is a file of the repository.
    assert!(scope("etclink").is_ok());
}

#[test]
fn fifos_and_devices_in_the_git_dir_are_refused_at_once() {
    let cases = [
        "HEAD",
        "config",
        "packed-refs",
        "index",
        "objects/info/alternates",
        "shallow",
        "logs/refs/stash",
        "info/exclude",
        "refs/heads/fifo",
        "commondir",
    ];
    for case in cases {
        let layout = Layout::new();
        let file = layout.repo.join(".git").join(case);
        std::fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
        mkfifo(&file);
        let engine = layout.engine();
        let path = layout.repo_path().to_owned();
        let answer = within_limit(case, move || {
            let repo = engine.resolve(&path)?;
            engine.status(&repo, 1_000_000, &mut |_| 0).map(|_| ())
        });
        let err = answer.expect_err(case);
        assert!(err.to_string().contains("FIFO"), "{case}: {err}");
    }
    // An excludes file the configuration names, which gix reads for the status.
    let layout = Layout::new();
    let fifo = layout.root.join("excludes.fifo");
    mkfifo(&fifo);
    layout.git(&layout.repo, &["config", "core.excludesFile", fifo.to_str().expect("utf-8")]);
    let engine = layout.engine();
    let path = layout.repo_path().to_owned();
    let err = within_limit("core.excludesFile", move || engine.resolve(&path).err()).expect("refused");
    assert!(err.to_string().contains("FIFO"), "{err}");
    // A symbolic link to a device where gix reads a file: refused too (the device lies outside the roots).
    for case in ["packed-refs", "info/exclude", "objects/info/commit-graph"] {
        let layout = Layout::new();
        let file = layout.repo.join(".git").join(case);
        std::fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
        let _ = std::fs::remove_file(&file);
        std::os::unix::fs::symlink("/dev/zero", &file).expect("symlink");
        let engine = layout.engine();
        let path = layout.repo_path().to_owned();
        let err = within_limit(case, move || engine.resolve(&path).err()).expect("refused");
        assert!(err.to_string().contains("/dev/zero"), "{case}: {err}");
    }
}

/// `file.blame` of `inside.txt` at HEAD (or the work tree), with the ignore-revs files honoured.
fn blame_options(rev: Option<&str>) -> blame::Options {
    blame::Options {
        file: FileRange {
            path: "inside.txt".to_owned(),
            rev: rev.map(str::to_owned),
            start_line: None,
            end_line: None,
        },
        ignore_revs: true,
    }
}

#[test]
fn files_named_by_config_are_checked_before_they_are_read() {
    // mailmap.file on a device or a FIFO: the mailmap is left out, the blame answers.
    for (key, target) in [("mailmap.file", "/dev/zero"), ("mailmap.file", "fifo"), ("mailmap.file", "/dev/stdin")] {
        let layout = Layout::new();
        let target = if target == "fifo" {
            let fifo = layout.root.join("fifo");
            mkfifo(&fifo);
            fifo.display().to_string()
        } else {
            target.to_owned()
        };
        layout.git(&layout.repo, &["config", key, &target]);
        let engine = layout.engine();
        let path = layout.repo_path().to_owned();
        let answer = within_limit(key, move || {
            let repo = engine.resolve(&path).expect("resolves");
            let key = engine.blame_files_key(&repo);
            (engine.file_blame(&repo, &blame_options(Some("HEAD")), 1_000_000, &mut |_| 0).map(|_| ()), key)
        });
        answer.0.unwrap_or_else(|err| panic!("{key}={target}: blame answers: {err}"));
    }
    // blame.ignoreRevsFile on a device or a FIFO: refused as git refuses an unreadable list, at once.
    for target in ["/dev/zero", "fifo"] {
        let layout = Layout::new();
        let target = if target == "fifo" {
            let fifo = layout.repo.join("revs.fifo");
            mkfifo(&fifo);
            "revs.fifo".to_owned()
        } else {
            target.to_owned()
        };
        layout.git(&layout.repo, &["config", "blame.ignoreRevsFile", &target]);
        let engine = layout.engine();
        let path = layout.repo_path().to_owned();
        let answer = within_limit("blame.ignoreRevsFile", move || {
            let repo = engine.resolve(&path).expect("resolves");
            let _ = engine.blame_files_key(&repo);
            engine.file_blame(&repo, &blame_options(Some("HEAD")), 1_000_000, &mut |_| 0).map(|_| ())
        });
        let err = answer.expect_err("an unreadable configured list is an error");
        assert!(err.to_string().contains(&target), "{target}: {err}");
    }
    // The work tree's .git-blame-ignore-revs and .mailmap as links to a device: not read, the blame answers.
    // /dev/stdin may be a terminal or a pipe nobody writes, where a read would block.
    for device in ["/dev/zero", "/dev/stdin"] {
        let layout = Layout::new();
        std::os::unix::fs::symlink(device, layout.repo.join(".git-blame-ignore-revs")).expect("symlink");
        std::os::unix::fs::symlink(device, layout.repo.join(".mailmap")).expect("symlink");
        let engine = layout.engine();
        let path = layout.repo_path().to_owned();
        within_limit(device, move || {
            let repo = engine.resolve(&path).expect("resolves");
            let _ = engine.blame_files_key(&repo);
            for rev in [None, Some("HEAD")] {
                engine.file_blame(&repo, &blame_options(rev), 1_000_000, &mut |_| 0).expect("blame answers");
            }
        });
    }
    // A mailmap.file the repository's own config names outside the roots is not read: its mapping never shows.
    let layout = Layout::new();
    let mailmap = layout.outside.join("mailmap");
    std::fs::write(&mailmap, format!("{SECRET} <secret@example.com> <author@example.com>\n")).expect("write");
    layout.git(&layout.repo, &["config", "mailmap.file", mailmap.to_str().expect("utf-8")]);
    assert!(layout.git(&layout.repo, &["log", "-1", "--format=%aN"]).contains(SECRET), "git maps through it");
    let engine = layout.engine();
    let repo = engine.resolve(layout.repo_path()).expect("resolves");
    let blamed = engine.file_blame(&repo, &blame_options(Some("HEAD")), 1_000_000, &mut |_| 0).expect("answers");
    layout.assert_clean("file.blame", &serde_json::to_string(&blamed).expect("serialises"));
}

#[test]
fn blame_decides_a_huge_file_from_its_size_before_reading_it() {
    let layout = Layout::new();
    std::fs::write(layout.repo.join("inside.txt"), "x\n".repeat(4096)).expect("write");
    layout.git(&layout.repo, &["commit", "-q", "-a", "-m", "grow"]);
    // git treats files above core.bigFileThreshold as binary; 1 KiB stands for the 512 MiB default here.
    layout.git(&layout.repo, &["config", "core.bigFileThreshold", "1k"]);
    let engine = layout.engine();
    let repo = engine.resolve(layout.repo_path()).expect("resolves");
    for rev in [Some("HEAD"), None] {
        let err = engine.file_blame(&repo, &blame_options(rev), 1_000_000, &mut |_| 0).expect_err("refused");
        assert_eq!(reason(&err), Some(InvalidReason::BinaryFile), "{rev:?}: {err}");
        assert!(err.to_string().contains("8192 bytes"), "{err}");
    }
    layout.git(&layout.repo, &["config", "--unset", "core.bigFileThreshold"]);
    let repo = engine.resolve(layout.repo_path()).expect("resolves");
    engine.file_blame(&repo, &blame_options(Some("HEAD")), 1_000_000, &mut |_| 0).expect("a small file is blamed");
}

/// `repo.status` of the layout's repository through a fresh engine, within [`LIMIT`].
fn status_within(
    layout: &Layout,
    what: &str,
) -> Result<fluxgit_engine::Budgeted<fluxgit_engine::status::Report>, Error> {
    let engine = layout.engine();
    let path = layout.repo_path().to_owned();
    within_limit(what, move || {
        let repo = engine.resolve(&path)?;
        engine.status(&repo, 1_000_000, &mut |_| 0)
    })
}

#[test]
fn config_includes_obey_the_roots_and_are_never_opened_when_special() {
    // Outside: a config file that would rename the user and hide every untracked file.
    let layout = Layout::new();
    let outside_config = layout.outside.join("included.cfg");
    std::fs::write(&outside_config, format!("[user]\n\tname = {SECRET}\n[status]\n\tshowUntrackedFiles = no\n"))
        .expect("write");
    std::fs::write(layout.repo.join("untracked.txt"), "new\n").expect("write");
    layout.git(&layout.repo, &["config", "include.path", outside_config.to_str().expect("utf-8")]);
    assert_eq!(layout.git(&layout.repo, &["config", "user.name"]), SECRET, "git reads the outside include");
    assert_eq!(layout.git(&layout.repo, &["status", "--porcelain"]), "", "git hides the untracked file");
    let err = status_within(&layout, "an include outside").expect_err("refused");
    assert_eq!(reason(&err), Some(InvalidReason::OutsideAllowedRoots), "{err}");
    assert!(err.to_string().contains("included.cfg"), "names the include: {err}");
    layout.assert_clean("the refusal", &err.to_string());

    // Nested: an include inside the roots whose own include (a conditional one) leads outside.
    let layout = Layout::new();
    let outside_config = layout.outside.join("nested.cfg");
    std::fs::write(&outside_config, format!("[user]\n\tname = {SECRET}\n")).expect("write");
    let middle = layout.root.join("middle.cfg");
    std::fs::write(&middle, format!("[includeIf \"onbranch:main\"]\n\tpath = {}\n", outside_config.display()))
        .expect("write");
    layout.git(&layout.repo, &["config", "include.path", "../../middle.cfg"]);
    assert_eq!(layout.git(&layout.repo, &["config", "user.name"]), SECRET, "git follows the chain");
    let err = status_within(&layout, "a nested include outside").expect_err("refused");
    assert_eq!(reason(&err), Some(InvalidReason::OutsideAllowedRoots), "{err}");
    assert!(err.to_string().contains("nested.cfg"), "{err}");
    layout.assert_clean("the nested refusal", &err.to_string());

    // A chain that stays inside is followed as git follows it: its setting shows in the answer.
    std::fs::write(&middle, "[status]\n\tshowUntrackedFiles = no\n").expect("write");
    std::fs::write(layout.repo.join("untracked.txt"), "new\n").expect("write");
    assert_eq!(layout.git(&layout.repo, &["status", "--porcelain"]), "", "git hides the untracked file");
    let status = status_within(&layout, "an include inside").expect("answers");
    assert!(status.data.untracked.is_empty(), "the included setting holds: {:?}", status.data.untracked);
    std::fs::write(&middle, "").expect("write");
    let status = status_within(&layout, "an empty include").expect("answers");
    assert_eq!(status.data.untracked, vec!["untracked.txt".to_owned()], "and without it, git's default");

    // A FIFO, a link to a device and an include of itself: refused at once, as git cannot read them.
    for case in ["fifo", "device", "cycle"] {
        let layout = Layout::new();
        let target = match case {
            "fifo" => {
                let fifo = layout.root.join("include.fifo");
                mkfifo(&fifo);
                fifo
            }
            "device" => {
                let link = layout.root.join("include.link");
                std::os::unix::fs::symlink("/dev/zero", &link).expect("symlink");
                link
            }
            _ => layout.repo.join(".git/config"),
        };
        layout.git(&layout.repo, &["config", "include.path", target.to_str().expect("utf-8")]);
        let err = status_within(&layout, case).expect_err(case);
        let expected = match case {
            "fifo" => "FIFO",
            "device" => "/dev/zero",
            _ => "include depth",
        };
        assert!(err.to_string().contains(expected), "{case}: {err}");
    }
    // git too refuses the cycle.
    let layout = Layout::new();
    let config = layout.repo.join(".git/config");
    layout.git(&layout.repo, &["config", "include.path", config.to_str().expect("utf-8")]);
    let output = layout.command(&layout.repo).args(["status"]).output().expect("git runs");
    assert!(String::from_utf8_lossy(&output.stderr).contains("include depth"), "{output:?}");
}

/// Writes `content` as a loose blob into the repository at `dir`; its sha.
fn loose_blob(layout: &Layout, dir: &Path, content: &str) -> String {
    let mut hash = layout.command(dir);
    hash.args(["hash-object", "-w", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = hash.spawn().expect("git hash-object runs");
    std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), content.as_bytes()).expect("writes");
    drop(child.stdin.take());
    let output = child.wait_with_output().expect("waits");
    assert!(output.status.success(), "hash-object");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[test]
fn loose_objects_that_are_no_regular_file_or_lead_outside_are_refused() {
    let content = format!("{SECRET} as a loose blob\n");
    for case in ["link out", "fifo", "device"] {
        let layout = Layout::new();
        let sha = loose_blob(&layout, &layout.repo, &content);
        assert_eq!(loose_blob(&layout, &layout.outside, &content), sha);
        let loose = |dir: &Path| dir.join(".git/objects").join(&sha[..2]).join(&sha[2..]);
        let file = loose(&layout.repo);
        assert!(file.is_file() && loose(&layout.outside).is_file(), "{case}: both loose");
        std::fs::remove_file(&file).expect("remove");
        match case {
            "link out" => {
                std::os::unix::fs::symlink(loose(&layout.outside), &file).expect("symlink");
                // git follows the link and serves the outside file.
                assert!(layout.git(&layout.repo, &["cat-file", "-p", &sha]).contains(SECRET), "git reads it");
            }
            "fifo" => mkfifo(&file),
            _ => std::os::unix::fs::symlink("/dev/zero", &file).expect("symlink"),
        }
        let engine = layout.engine();
        let path = layout.repo_path().to_owned();
        let err = within_limit(case, move || engine.resolve(&path).err()).expect("refused");
        let text = err.to_string();
        assert!(text.contains(&sha[2..]), "{case}: the error names the object: {text}");
        if case == "link out" {
            assert_eq!(reason(&err), Some(InvalidReason::OutsideAllowedRoots), "{err}");
        }
        layout.assert_clean(case, &text);
        // The server goes on: the same repository with the object back answers.
        std::fs::remove_file(&file).expect("remove");
        assert_eq!(loose_blob(&layout, &layout.repo, &content), sha);
        status_within(&layout, case).expect("answers once the object is a file again");
    }
}

#[test]
fn a_fifo_reflog_refuses_only_the_reads_of_that_reflog() {
    for (case, special) in [("logs/refs/heads/side", "fifo"), ("logs/HEAD", "fifo"), ("logs/refs/heads/side", "zero")] {
        let layout = Layout::new();
        layout.git(&layout.repo, &["branch", "side"]);
        std::fs::write(layout.repo.join("inside.txt"), "changed\n").expect("write");
        let expected_status = layout.git(&layout.repo, &["status", "--porcelain"]);
        assert_eq!(expected_status, "M inside.txt");
        let file = layout.repo.join(".git").join(case);
        assert!(file.is_file(), "{case}: git wrote the reflog");
        std::fs::remove_file(&file).expect("remove");
        if special == "fifo" {
            mkfifo(&file);
        } else {
            std::os::unix::fs::symlink("/dev/zero", &file).expect("symlink");
        }
        let named = if special == "fifo" { "FIFO" } else { "/dev/zero" };
        let engine = layout.engine();
        let path = layout.repo_path().to_owned();
        let (status, brief, other_reflog, bad_reflog, at_one) = within_limit(case, move || {
            let repo = engine.resolve(&path).expect("resolves");
            let status = engine.status(&repo, 1_000_000, &mut |_| 0).map(|status| status.data.unstaged.clone());
            let brief = engine.brief(&repo, &Default::default(), 1_000_000, &mut |_| 0).map(|_| ());
            let (other, bad) = if case == "logs/HEAD" { ("side", "HEAD") } else { ("HEAD", "side") };
            let other = engine.reflog(&repo, Some(other), 10, None, 1_000_000, &mut |_| 0).map(|r| r.data.total);
            let bad = engine.reflog(&repo, Some(bad), 10, None, 1_000_000, &mut |_| 0).map(|_| ());
            let at_one = engine.resolve_commit(&repo, if case == "logs/HEAD" { "@{1}" } else { "side@{0}" });
            (status, brief, other, bad, at_one)
        });
        let unstaged = status.unwrap_or_else(|err| panic!("{case}: repo.status answers: {err}"));
        assert_eq!(unstaged.iter().map(|change| change.path.as_str()).collect::<Vec<_>>(), ["inside.txt"], "{case}");
        brief.unwrap_or_else(|err| panic!("{case}: repo.brief answers: {err}"));
        assert_eq!(other_reflog.unwrap_or_else(|err| panic!("{case}: the other reflog: {err}")), 1, "{case}");
        let err = bad_reflog.expect_err("the bad reflog is refused");
        assert!(err.to_string().contains(named), "{case}: {err}");
        let err = at_one.expect_err("a revision reading the reflogs is refused");
        assert!(err.to_string().contains(named), "{case}: {err}");
    }
}

#[test]
fn loose_objects_vetted_once_are_vetted_again_when_their_folder_changes() {
    let layout = Layout::new();
    let sha = loose_blob(&layout, &layout.repo, "a loose blob\n");
    let fan_out = layout.repo.join(".git/objects").join(&sha[..2]);
    // Folders changed within the last second are listed again at every call; these are remembered once older.
    std::thread::sleep(Duration::from_millis(2100));
    status_within(&layout, "the first vetting").expect("answers");
    status_within(&layout, "a remembered vetting").expect("answers");
    // A FIFO renamed over the object: its folder changed, so it is listed again and the FIFO refused.
    let fifo = layout.repo.join("swap.fifo");
    mkfifo(&fifo);
    std::fs::rename(&fifo, fan_out.join(&sha[2..])).expect("renames");
    let err = status_within(&layout, "a swapped object").expect_err("refused");
    assert!(err.to_string().contains(&sha[2..]) && err.to_string().contains("FIFO"), "{err}");
    // Setting the folder's modification time back does not hide the change: its change time moved.
    std::fs::remove_file(fan_out.join(&sha[2..])).expect("removes");
    assert_eq!(loose_blob(&layout, &layout.repo, "a loose blob\n"), sha);
    std::thread::sleep(Duration::from_millis(2100));
    status_within(&layout, "remembered again").expect("answers");
    let other = layout.repo.join(".git/objects").join(&sha[..2]).join("0".repeat(38));
    mkfifo(&other);
    let status = Command::new("touch").args(["-m", "-d", "@1700000000"]).arg(&fan_out).status().expect("touch runs");
    assert!(status.success());
    let err = status_within(&layout, "a FIFO behind an old time").expect_err("refused");
    assert!(err.to_string().contains("FIFO"), "{err}");
}
