//! `fluxgit-bench tasks`: issue 35's seven everyday agent tasks and issue 52's symbol-history and content-search
//! tasks, re-created on clones of real repositories (ripgrep, tokio, git) at pinned commits, each solved twice: by
//! the scripted agent path (`repo_brief` in text, its first hint's tool with the hint's arguments, at most one
//! task-specific call) and by the expert's git commands.
//!
//! Every scenario is made by deterministic git commands on a fresh copy (fixed identities and dates, no user
//! configuration), so two runs on the same pins give the same answers. The facts a task needs come from the git CLI
//! (the oracle); a fact is found on a side when it appears in the text that side read (whitespace normalised). The
//! servers run on a private run dir and home, so the fleet registry the bench fills is never the user's.

use std::cell::Cell;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail, ensure};
use serde::Serialize;
use serde_json::{Value, json};

use crate::mcp::Session;
use crate::run::Tokens;

mod facts;
mod report;

/// A source repository and the commit every scenario on it starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// BurntSushi/ripgrep: a small Rust project (about 2,300 commits).
    Ripgrep,
    /// tokio-rs/tokio: a Rust workspace (about 4,600 commits).
    Tokio,
    /// git/git: a large C history (about 82,000 commits).
    Git,
}

impl Source {
    /// Every source, in the order of `--repo-dir` names.
    pub(crate) const ALL: [Source; 3] = [Source::Ripgrep, Source::Tokio, Source::Git];

    /// The name `--repo-dir NAME=DIR` takes.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Source::Ripgrep => "ripgrep",
            Source::Tokio => "tokio",
            Source::Git => "git",
        }
    }

    /// The directory under `--mirrors` that holds its bare mirror (`<dir>/repo`).
    pub(crate) fn mirror(self) -> &'static str {
        match self {
            Source::Ripgrep => "BurntSushi+ripgrep",
            Source::Tokio => "tokio-rs+tokio",
            Source::Git => "git+git",
        }
    }

    /// The pinned commit: the tip of the default branch when the bench was written (2026-12-02).
    pub(crate) fn pin(self) -> &'static str {
        match self {
            Source::Ripgrep => "3fce3b5bb0236da2df6d99672afb8a719642eca7",
            Source::Tokio => "ea91b33ca57ff0581b38e735cc108f831bccbdaa",
            Source::Git => "1a3e64c6c4a623626ff0687008732a8e007e2a1c",
        }
    }

    /// Where its public history lives.
    fn url(self) -> &'static str {
        match self {
            Source::Ripgrep => "https://github.com/BurntSushi/ripgrep",
            Source::Tokio => "https://github.com/tokio-rs/tokio",
            Source::Git => "https://github.com/git/git",
        }
    }
}

/// A source made ready: a bare repository whose only ref is `main` at the pin.
#[derive(Debug, Clone)]
pub(crate) struct Pinned {
    /// Which repository.
    pub(crate) source: Source,
    /// The bare copy task checkouts are cloned from (hard links: cheap).
    pub(crate) base: PathBuf,
    /// The pinned commit, full.
    pub(crate) pin: String,
    /// The pin's committer date, Unix seconds: scenario commits are dated just after it.
    pub(crate) time: i64,
}

/// The run's settings.
pub(crate) struct Setup {
    /// Our sidecar binary.
    pub(crate) sidecar: PathBuf,
    /// Where task checkouts, the private home and run dirs go (emptied of old tasks first).
    pub(crate) work_dir: PathBuf,
    /// The pinned sources, one per [`Source`] the selected tasks use.
    pub(crate) sources: Vec<Pinned>,
    /// Only these tasks (names); empty: all.
    pub(crate) only: Vec<String>,
}

pub(crate) use facts::{Fact, Matcher};
pub(crate) use report::{section, table, write_results};

/// A task made ready: where the agent stands, what it must find, what the expert types.
pub(crate) struct Prepared {
    /// The repository `repo_brief` is called on.
    repo: PathBuf,
    /// Where the expert's commands run.
    cwd: PathBuf,
    facts: Vec<Fact>,
    /// The expert's commands, each one shell line (one terminal call), in order.
    expert: Vec<String>,
    /// The task-specific call: tool, arguments (`repoPath` added when `with_repo`), why an agent makes it.
    extra: Option<Extra>,
    /// The server's clock (`FLUXGIT_NOW_EPOCH_SECS`): an hour after the scenario's last command.
    now: i64,
    /// A fleet registry to fill before the server starts (`fluxgit-mcp-sidecar fleet add`).
    fleet: Vec<PathBuf>,
}

/// The one task-specific call of the scripted path.
#[derive(Debug, Clone)]
struct Extra {
    tool: &'static str,
    arguments: Value,
    with_repo: bool,
}

/// One task of the benchmark.
pub(crate) struct TaskDef {
    /// The name `--task` takes and the results directory.
    pub(crate) name: &'static str,
    /// The repository its scenario is made on.
    pub(crate) source: Source,
    /// What the agent is asked, one sentence.
    pub(crate) situation: &'static str,
    /// Why the task-specific call is the one an agent reading the brief makes.
    pub(crate) extra_why: &'static str,
    build: fn(&Scene, &Pinned) -> anyhow::Result<Prepared>,
}

/// Every task, in table order.
pub(crate) const TASKS: [TaskDef; 9] = [
    TaskDef {
        name: "rebase-conflict",
        source: Source::Ripgrep,
        situation: "A rebase of `topic` onto `main` stopped on conflicts in two files with one more commit to replay: \
                    what conflicts, in which commit, how many are left, how to go on or back out.",
        extra_why: "none: the brief (or its first hint, when the brief had to cut the conflict) is the task",
        build: rebase_conflict,
    },
    TaskDef {
        name: "lost-commits",
        source: Source::Tokio,
        situation: "`git reset --hard HEAD~3` threw away three fresh commits: their shas and subjects, to get them back.",
        extra_why: "`repo_reflog`: where lost commits are found (left out when the brief or its first hint answered)",
        build: lost_commits,
    },
    TaskDef {
        name: "stack-rebased",
        source: Source::Ripgrep,
        situation: "`child` was branched from `parent`, then `parent` was rebased on `main`: the old base, the child's \
                    own commits, the `git rebase --onto` that moves them.",
        extra_why: "`repo_branchStack` of `child`: the stack tool (left out when the brief or its first hint answered)",
        build: stack_rebased,
    },
    TaskDef {
        name: "review-owners",
        source: Source::Tokio,
        situation: "An uncommitted change under `tokio/src/net`: who must review it (CODEOWNERS), and who knows \
                    `tokio/src/process`, untouched for over 90 days (all-time authors with commit counts).",
        extra_why: "`repo_scope` of `tokio/src/process`: the owners-and-authors tool on the second directory",
        build: review_owners,
    },
    TaskDef {
        name: "why-line",
        source: Source::Git,
        situation: "Why does line 121 of git's `wildmatch.c` read as it does: the commit that last changed it, its \
                    subject and its message.",
        extra_why: "`file_blame` of that line: the only tool that names a line's commit",
        build: why_line,
    },
    TaskDef {
        name: "fleet-attention",
        source: Source::Ripgrep,
        situation: "Twelve checkouts of ripgrep in one folder (two dirty, one behind its upstream, one detached, one \
                    mid-rebase, one with stashes, six clean), registered in the fleet; the agent starts in that \
                    folder, which is no work tree: which checkouts need attention, and why.",
        extra_why: "`fleet_radar` without paths: the registry's repositories, ranked by attention (left out when the \
                    brief on the folder answered)",
        build: fleet_attention,
    },
    TaskDef {
        name: "search-topic-author",
        source: Source::Tokio,
        situation: "Every commit by Alice Ryhl about `JoinSet` (she committed under two addresses).",
        extra_why: "`repo_search` with the word and the author: the commit search",
        build: search_topic_author,
    },
    TaskDef {
        name: "symbol-history",
        source: Source::Ripgrep,
        situation: "Every commit that changed the function `print_stats` of `crates/core/main.rs` (its body, its \
                    signature, a move of it), as `git log -L :print_stats:crates/core/main.rs` lists them.",
        extra_why: "`repo_history` with `path` and `symbol`: the symbol history",
        build: symbol_history,
    },
    TaskDef {
        name: "content-search",
        source: Source::Ripgrep,
        situation: "Every commit whose diff adds or removes the string `HYPERLINK_PATTERN_ALIASES` (which commit \
                    introduced it, which moved it), as `git log -S` lists them.",
        extra_why: "`repo_search` with `added`: the content search",
        build: content_search,
    },
];

/// The identity scenario commits are made with.
const AUTHOR: (&str, &str) = ("Ada Agent", "ada@example.com");

/// A task's checkout and its clock: every git command is one minute after the last.
pub(crate) struct Scene {
    /// The task's directory (its checkouts live in it).
    pub(crate) dir: PathBuf,
    /// The bench's private home: no user configuration is read.
    home: PathBuf,
    clock: Cell<i64>,
}

impl Scene {
    /// A git command in `cwd` with the bench's pinned environment; fails unless git exits 0.
    fn git_in(&self, cwd: &Path, args: &[&str]) -> anyhow::Result<String> {
        let (ok, output) = self.try_git_in(cwd, args)?;
        ensure!(ok, "git {} in {} failed: {output}", args.join(" "), cwd.display());
        Ok(output)
    }

    /// A git command in `cwd`; returns whether it exited 0 and its stdout then stderr.
    fn try_git_in(&self, cwd: &Path, args: &[&str]) -> anyhow::Result<(bool, String)> {
        let at = self.clock.get() + 60;
        self.clock.set(at);
        let date = format!("@{at} +0000");
        let mut command = Command::new("git");
        let output = git_env(&mut command, &self.home)
            .args(args)
            .current_dir(cwd)
            .env("GIT_AUTHOR_NAME", AUTHOR.0)
            .env("GIT_AUTHOR_EMAIL", AUTHOR.1)
            .env("GIT_COMMITTER_NAME", AUTHOR.0)
            .env("GIT_COMMITTER_EMAIL", AUTHOR.1)
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date)
            .env("GIT_EDITOR", "true")
            .env("GIT_SEQUENCE_EDITOR", "true")
            .output()
            .context("git is on PATH")?;
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        Ok((output.status.success(), text))
    }

    /// A fresh checkout of `pinned` at `<dir>/<name>`: `main` at the pin, tracking `origin/main`.
    fn clone(&self, pinned: &Pinned, name: &str) -> anyhow::Result<PathBuf> {
        let path = self.dir.join(name);
        let base = pinned.base.to_str().context("UTF-8 paths")?;
        let target = path.to_str().context("UTF-8 paths")?;
        self.git_in(&self.dir, &["clone", "-q", base, target])?;
        Ok(path)
    }

    /// Appends `line` to `file` (relative to `repo`).
    fn append(repo: &Path, file: &str, line: &str) -> anyhow::Result<()> {
        use std::io::Write as _;
        let path = repo.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut handle = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
        writeln!(handle, "{line}")?;
        Ok(())
    }

    /// Stages everything and commits it with `subject`; returns the new commit's full sha.
    fn commit(&self, repo: &Path, subject: &str) -> anyhow::Result<String> {
        self.git_in(repo, &["add", "-A"])?;
        self.git_in(repo, &["commit", "-q", "-m", subject])?;
        Ok(self.git_in(repo, &["rev-parse", "HEAD"])?.trim().to_owned())
    }

    /// The clock an hour after the last command.
    fn later(&self) -> i64 {
        self.clock.get() + 3600
    }
}

/// `command` with nothing of the user's git configuration: a private home, no system config, `LC_ALL=C`, `TZ=UTC`,
/// no pager, no optional locks.
fn git_env<'a>(command: &'a mut Command, home: &Path) -> &'a mut Command {
    command
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", home.join(".gitconfig"))
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
}

/// One `git` line of output (trimmed) in `repo`, for the oracle.
fn oracle(scene: &Scene, repo: &Path, args: &[&str]) -> anyhow::Result<String> {
    let mut command = Command::new("git");
    let output = git_env(&mut command, &scene.home).args(args).current_dir(repo).output()?;
    ensure!(
        output.status.success(),
        "oracle git {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).trim_end().to_owned())
}

fn rebase_conflict(scene: &Scene, pinned: &Pinned) -> anyhow::Result<Prepared> {
    let repo = scene.clone(pinned, "repo")?;
    scene.git_in(&repo, &["checkout", "-q", "-b", "topic"])?;
    Scene::append(&repo, "GUIDE.md", "\nSee also the JSON summary printed by `--stats --json`.")?;
    scene.commit(&repo, "guide: point at the JSON stats summary")?;
    Scene::append(&repo, "README.md", "Statistics can be printed as JSON with `--stats --json`.")?;
    Scene::append(&repo, "CHANGELOG.md", "* Print `--stats` as JSON when `--json` is given.")?;
    scene.commit(&repo, "printer: document JSON statistics")?;
    Scene::append(&repo, "FAQ.md", "\nQ: Can statistics be machine-read? A: Yes, with `--stats --json`.")?;
    scene.commit(&repo, "faq: machine-readable statistics")?;
    scene.git_in(&repo, &["checkout", "-q", "main"])?;
    Scene::append(&repo, "README.md", "Binary files are skipped unless `--binary` is given.")?;
    Scene::append(&repo, "CHANGELOG.md", "* Skip binary files by default; `--binary` searches them.")?;
    scene.commit(&repo, "docs: binary files are skipped by default")?;
    scene.git_in(&repo, &["checkout", "-q", "topic"])?;
    let (ok, output) = scene.try_git_in(&repo, &["rebase", "main"])?;
    ensure!(!ok, "the rebase was meant to stop on conflicts: {output}");

    let mut facts = Vec::new();
    let conflicted = oracle(scene, &repo, &["diff", "--name-only", "--diff-filter=U"])?;
    for path in conflicted.lines() {
        facts.push(Fact::text(format!("conflicted path {path}"), path));
    }
    ensure!(facts.len() == 2, "two conflicted files, not {conflicted:?}");
    let stopped = oracle(scene, &repo, &["log", "-1", "--format=%H%n%s", "REBASE_HEAD"])?;
    let (sha, subject) = stopped.split_once('\n').context("sha and subject")?;
    facts.push(Fact::sha("commit being replayed", sha));
    facts.push(Fact::text("its subject", subject));
    let todo = oracle(scene, &repo, &["rev-parse", "--git-path", "rebase-merge/git-rebase-todo"])?;
    let todo = std::fs::read_to_string(repo.join(todo))?;
    let remaining = todo.lines().filter(|line| !line.trim().is_empty() && !line.starts_with('#')).count();
    facts.push(Fact::pair("commits left to replay", "remaining", remaining));
    facts.push(Fact::text("branch being rebased", "topic"));
    facts.push(Fact::sha("onto", oracle(scene, &repo, &["rev-parse", "main"])?));
    // The two sides of each conflict, as the agent must merge them.
    for (file, side) in
        [("README.md", "main"), ("README.md", "topic"), ("CHANGELOG.md", "main"), ("CHANGELOG.md", "topic")]
    {
        let rev = if side == "main" { "main".to_owned() } else { "REBASE_HEAD".to_owned() };
        let last = oracle(scene, &repo, &["show", &format!("{rev}:{file}")])?;
        let line = last.lines().last().context("a last line")?.to_owned();
        facts.push(Fact::text(format!("{file} line from {side}"), line));
    }
    facts.push(Fact::text("how to go on", "git rebase --continue"));
    facts.push(Fact::text("how to back out", "git rebase --abort"));
    Ok(Prepared {
        cwd: repo.clone(),
        repo,
        facts,
        expert: vec!["git status".to_owned(), "git diff".to_owned()],
        extra: None,
        now: scene.later(),
        fleet: Vec::new(),
    })
}

fn lost_commits(scene: &Scene, pinned: &Pinned) -> anyhow::Result<Prepared> {
    let repo = scene.clone(pinned, "repo")?;
    for (file, line, subject) in [
        ("tokio/src/runtime/park.rs", "// Parking is traced per worker.", "rt: trace worker park events"),
        ("tokio/src/runtime/mod.rs", "// Steals are counted per worker.", "rt: count steals per worker"),
        ("tokio/CHANGELOG.md", "- rt: the steal counter is documented", "rt: document the steal counter"),
    ] {
        Scene::append(&repo, file, line)?;
        scene.commit(&repo, subject)?;
    }
    scene.git_in(&repo, &["reset", "-q", "--hard", "HEAD~3"])?;
    let lost = oracle(scene, &repo, &["log", "--format=%H%x09%s", "-3", "HEAD@{1}"])?;
    let mut facts = Vec::new();
    for (idx, line) in lost.lines().enumerate() {
        let (sha, subject) = line.split_once('\t').context("sha and subject")?;
        facts.push(Fact::sha(format!("lost commit {}", idx + 1), sha));
        facts.push(Fact::text(format!("lost subject {}", idx + 1), subject));
    }
    Ok(Prepared {
        cwd: repo.clone(),
        repo,
        facts,
        expert: vec!["git reflog".to_owned()],
        extra: Some(Extra { tool: "repo_reflog", arguments: json!({}), with_repo: true }),
        now: scene.later(),
        fleet: Vec::new(),
    })
}

fn stack_rebased(scene: &Scene, pinned: &Pinned) -> anyhow::Result<Prepared> {
    let repo = scene.clone(pinned, "repo")?;
    scene.git_in(&repo, &["checkout", "-q", "-b", "parent"])?;
    Scene::append(&repo, "crates/core/notes/parent-1.md", "Parent: a faster line counter.")?;
    scene.commit(&repo, "core: faster line counter")?;
    Scene::append(&repo, "crates/core/notes/parent-2.md", "Parent: the counter's tests.")?;
    scene.commit(&repo, "core: test the line counter")?;
    scene.git_in(&repo, &["checkout", "-q", "-b", "child"])?;
    Scene::append(&repo, "crates/core/notes/child-1.md", "Child: print the count per file.")?;
    scene.commit(&repo, "printer: show the count per file")?;
    Scene::append(&repo, "crates/core/notes/child-2.md", "Child: the per-file count in --json.")?;
    scene.commit(&repo, "printer: per-file count in JSON")?;
    scene.git_in(&repo, &["checkout", "-q", "main"])?;
    Scene::append(&repo, "README.md", "ripgrep respects `.ignore` files.")?;
    scene.commit(&repo, "docs: mention .ignore files")?;
    scene.git_in(&repo, &["rebase", "-q", "main", "parent"])?;
    scene.git_in(&repo, &["checkout", "-q", "child"])?;

    // What `git rebase --onto parent <old tip> child` needs: the old tip, and the child's own commits it moves.
    let mut facts =
        vec![Fact::sha("parent's old tip (child's base)", oracle(scene, &repo, &["rev-parse", "parent@{1}"])?)];
    let own = oracle(scene, &repo, &["log", "--format=%H", "parent@{1}..child"])?;
    for (idx, sha) in own.lines().enumerate() {
        facts.push(Fact::sha(format!("child's own commit {}", idx + 1), sha));
    }
    facts.push(Fact { expert_knows: true, ..Fact::text("the command that moves it", "git rebase --onto parent") });
    Ok(Prepared {
        cwd: repo.clone(),
        repo,
        facts,
        expert: vec!["git log --oneline --graph -10 parent child".to_owned()],
        extra: Some(Extra { tool: "repo_branchStack", arguments: json!({"branch": "child"}), with_repo: true }),
        now: scene.later(),
        fleet: Vec::new(),
    })
}

/// The CODEOWNERS file the review task adds: `(pattern, owners)`, last match wins, as GitHub reads it.
const CODEOWNERS: [(&str, &str); 4] = [
    ("*", "@tokio-rs/maintainers"),
    ("/tokio/src/net/", "@net-reviewers @alice-net"),
    ("/tokio/src/process/", "@process-reviewers"),
    ("/tokio-util/", "@util-reviewers"),
];

fn review_owners(scene: &Scene, pinned: &Pinned) -> anyhow::Result<Prepared> {
    let repo = scene.clone(pinned, "repo")?;
    let mut file = String::from("# Who reviews what (added by the benchmark's scenario).\n");
    for (pattern, owners) in CODEOWNERS {
        let _ = writeln!(file, "{pattern:<24}{owners}");
    }
    std::fs::write(repo.join(".github/CODEOWNERS"), file)?;
    scene.commit(&repo, "ci: add CODEOWNERS")?;
    Scene::append(&repo, "tokio/src/net/tcp/stream.rs", "// Keepalive is left to the OS default.")?;
    Scene::append(&repo, "tokio/src/net/udp.rs", "// Datagrams over 64 KiB are truncated by the OS.")?;

    let mut facts = Vec::new();
    let changed = oracle(scene, &repo, &["diff", "--name-only"])?;
    for path in changed.lines() {
        // Last matching pattern wins; every pattern here is `*` or an anchored directory.
        let owners = CODEOWNERS
            .iter()
            .rev()
            .find(|(pattern, _)| *pattern == "*" || path.starts_with(pattern.trim_start_matches('/')))
            .map(|(_, owners)| *owners)
            .context("`*` matches")?;
        for owner in owners.split(' ') {
            if !facts.iter().any(|fact: &Fact| fact.shown() == owner) {
                facts.push(Fact::text(format!("reviewer {owner}"), owner));
            }
        }
    }
    let dir = "tokio/src/process";
    let last = oracle(scene, &repo, &["log", "-1", "--format=%ct", "HEAD", "--", dir])?.parse::<i64>()?;
    ensure!(scene.later() - last > 90 * 86_400, "{dir} was touched within 90 days of the clock");
    let authors = oracle(scene, &repo, &["shortlog", "-sn", "--no-merges", "HEAD", "--", dir])?;
    for line in authors.lines().take(3) {
        let (count, name) = line.trim().split_once('\t').context("shortlog line")?;
        facts.push(Fact::pair(format!("{dir} author {name}"), name, count.parse()?));
    }
    Ok(Prepared {
        cwd: repo.clone(),
        repo,
        facts,
        expert: vec![
            "git status -s".to_owned(),
            "git show HEAD:.github/CODEOWNERS".to_owned(),
            format!("git shortlog -sn --no-merges HEAD -- {dir} | head -3"),
        ],
        extra: Some(Extra { tool: "repo_scope", arguments: json!({"path": dir}), with_repo: true }),
        now: scene.later(),
        fleet: Vec::new(),
    })
}

/// The file and line the why-line task asks about.
const WHY_FILE: &str = "wildmatch.c";
const WHY_LINE: usize = 121;

fn why_line(scene: &Scene, pinned: &Pinned) -> anyhow::Result<Prepared> {
    let repo = scene.clone(pinned, "repo")?;
    let range = format!("{WHY_LINE},{WHY_LINE}");
    let porcelain = oracle(scene, &repo, &["blame", "--porcelain", "-L", &range, "HEAD", "--", WHY_FILE])?;
    let sha = porcelain.split_whitespace().next().context("blame sha")?.to_owned();
    let subject = oracle(scene, &repo, &["log", "-1", "--format=%s", &sha])?;
    let body = oracle(scene, &repo, &["log", "-1", "--format=%b", &sha])?;
    // The message's first line that is not a trailer (`Signed-off-by: ...`).
    let first_line = body
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.contains("-by: "))
        .context("a commit message beyond its trailers")?
        .to_owned();
    let facts = vec![
        Fact::sha("the commit that last changed the line", sha.clone()),
        Fact::text("its subject", subject),
        Fact::text("its message's first line", first_line),
    ];
    let short: String = sha.chars().take(10).collect();
    Ok(Prepared {
        cwd: repo.clone(),
        repo,
        facts,
        expert: vec![format!("git blame -L {range} {WHY_FILE}"), format!("git show -s {short}")],
        extra: Some(Extra {
            tool: "file_blame",
            arguments: json!({"path": WHY_FILE, "startLine": WHY_LINE, "endLine": WHY_LINE}),
            with_repo: true,
        }),
        now: scene.later(),
        fleet: Vec::new(),
    })
}

/// The fleet task's checkouts: name, what is wrong (empty: clean), the words that say so.
const FLEET: [(&str, &str, &[&str]); 12] = [
    ("checkout-01", "", &[]),
    ("checkout-02", "modified", &[" M ", "modified", "unstaged", "dirty"]),
    ("checkout-03", "clean", &[]),
    ("checkout-04", "behind", &["behind 2", "2 behind", "\"behind\":2"]),
    ("checkout-05", "untracked", &["??", "untracked"]),
    ("checkout-06", "clean", &[]),
    ("checkout-07", "detached", &["detached", "no branch"]),
    ("checkout-08", "clean", &[]),
    ("checkout-09", "rebase", &["rebas", "conflict", "UU "]),
    ("checkout-10", "stash", &["stash"]),
    ("checkout-11", "clean", &[]),
    ("checkout-12", "clean", &[]),
];

fn fleet_attention(scene: &Scene, pinned: &Pinned) -> anyhow::Result<Prepared> {
    let mut paths = Vec::new();
    for (name, state, _) in FLEET {
        let repo = scene.clone(pinned, name)?;
        match state {
            "modified" => Scene::append(&repo, "README.md", "A local note.")?,
            "behind" => {
                scene.git_in(&repo, &["reset", "-q", "--hard", "HEAD~2"])?;
            }
            "untracked" => Scene::append(&repo, "notes.txt", "scratch")?,
            "detached" => {
                scene.git_in(&repo, &["checkout", "-q", "--detach", "HEAD~1"])?;
            }
            "rebase" => {
                scene.git_in(&repo, &["checkout", "-q", "-b", "wip", "HEAD~1"])?;
                Scene::append(&repo, "README.md", "wip: a line main does not have")?;
                scene.commit(&repo, "wip: readme")?;
                Scene::append(&repo, "README.md", "wip: another line")?;
                scene.commit(&repo, "wip: more readme")?;
                scene.git_in(&repo, &["checkout", "-q", "main"])?;
                Scene::append(&repo, "README.md", "main: the line wip conflicts with")?;
                scene.commit(&repo, "docs: readme line")?;
                scene.git_in(&repo, &["checkout", "-q", "wip"])?;
                let (ok, output) = scene.try_git_in(&repo, &["rebase", "main"])?;
                ensure!(!ok, "the fleet rebase was meant to stop: {output}");
            }
            "stash" => {
                for note in ["first", "second"] {
                    Scene::append(&repo, "README.md", &format!("{note} stashed note"))?;
                    scene.git_in(&repo, &["stash", "-q"])?;
                }
            }
            _ => {}
        }
        paths.push(repo);
    }
    let names: Vec<String> = FLEET.iter().map(|(name, ..)| (*name).to_owned()).collect();
    let mut facts = Vec::new();
    for (name, state, words) in FLEET.iter().filter(|(_, _, words)| !words.is_empty()) {
        // The oracle: git agrees the checkout is in that state.
        let repo = scene.dir.join(name);
        let status = oracle(scene, &repo, &["status", "--porcelain=v2", "--branch"])?;
        let stashes = oracle(scene, &repo, &["stash", "list"])?;
        let agrees = match *state {
            "modified" => status.lines().any(|line| line.starts_with("1 .M")),
            "behind" => status.lines().any(|line| line == "# branch.ab +0 -2"),
            "untracked" => status.lines().any(|line| line.starts_with("? ")),
            "detached" => status.lines().any(|line| line == "# branch.head (detached)"),
            "rebase" => oracle(scene, &repo, &["rev-parse", "--verify", "-q", "REBASE_HEAD"]).is_ok(),
            "stash" => stashes.lines().count() == 2,
            _ => false,
        };
        ensure!(agrees, "{name} is not {state}: {status}");
        facts.push(Fact {
            name: format!("{name} needs attention: {state}"),
            matcher: Matcher::Near {
                anchor: (*name).to_owned(),
                others: names.iter().filter(|other| *other != name).cloned().collect(),
                any: words.iter().map(|word| (*word).to_owned()).collect(),
            },
            expert_knows: false,
        });
    }
    let now = scene.later();
    Ok(Prepared {
        repo: scene.dir.clone(),
        cwd: scene.dir.clone(),
        facts,
        expert: vec![
            "for d in checkout-*; do echo \"== $d\"; git -C \"$d\" status -sb; git -C \"$d\" stash list; done"
                .to_owned(),
        ],
        extra: Some(Extra { tool: "fleet_radar", arguments: json!({}), with_repo: false }),
        now,
        fleet: paths,
    })
}

fn search_topic_author(scene: &Scene, pinned: &Pinned) -> anyhow::Result<Prepared> {
    let repo = scene.clone(pinned, "repo")?;
    let (word, author) = search_terms(pinned.source);
    let matching = oracle(
        scene,
        &repo,
        &["log", "--format=%H", "-i", &format!("--grep={word}"), &format!("--author={author}"), "HEAD"],
    )?;
    let facts: Vec<Fact> =
        matching.lines().enumerate().map(|(idx, sha)| Fact::sha(format!("matching commit {}", idx + 1), sha)).collect();
    ensure!(!facts.is_empty(), "no commit by {author} mentions {word}");
    Ok(Prepared {
        cwd: repo.clone(),
        repo,
        facts,
        expert: vec![format!("git log --oneline -i --grep={word} --author='{author}'")],
        extra: Some(Extra {
            tool: "repo_search",
            arguments: json!({"query": word, "author": author}),
            with_repo: true,
        }),
        now: scene.later(),
        fleet: Vec::new(),
    })
}

/// The function and file of the symbol-history task.
const SYMBOL: (&str, &str) = ("print_stats", "crates/core/main.rs");

fn symbol_history(scene: &Scene, pinned: &Pinned) -> anyhow::Result<Prepared> {
    let repo = scene.clone(pinned, "repo")?;
    let (name, file) = SYMBOL;
    // git's `-L :<regex>:` takes the first function line matching the regex: `fn <name>\>` is that function's.
    let range = format!("-L:fn {name}\\>:{file}");
    let changed = oracle(scene, &repo, &["log", &range, "--format=%H", "-s", "HEAD"])?;
    let facts: Vec<Fact> =
        changed.lines().enumerate().map(|(idx, sha)| Fact::sha(format!("changing commit {}", idx + 1), sha)).collect();
    ensure!(!facts.is_empty(), "git log -L lists no commit for {name}");
    Ok(Prepared {
        cwd: repo.clone(),
        repo,
        facts,
        expert: vec![format!("git log -L ':fn {name}\\>:{file}' --oneline -s")],
        extra: Some(Extra { tool: "repo_history", arguments: json!({"path": file, "symbol": name}), with_repo: true }),
        now: scene.later(),
        fleet: Vec::new(),
    })
}

/// The string of the content-search task.
const ADDED: &str = "HYPERLINK_PATTERN_ALIASES";

fn content_search(scene: &Scene, pinned: &Pinned) -> anyhow::Result<Prepared> {
    let repo = scene.clone(pinned, "repo")?;
    let changed = oracle(scene, &repo, &["log", &format!("-S{ADDED}"), "--format=%H", "HEAD"])?;
    let facts: Vec<Fact> = changed
        .lines()
        .enumerate()
        .map(|(idx, sha)| Fact::sha(format!("commit {} adding or removing it", idx + 1), sha))
        .collect();
    ensure!(!facts.is_empty(), "git log -S lists no commit for {ADDED}");
    Ok(Prepared {
        cwd: repo.clone(),
        repo,
        facts,
        expert: vec![format!("git log -S{ADDED} --oneline")],
        extra: Some(Extra { tool: "repo_search", arguments: json!({"added": ADDED}), with_repo: true }),
        now: scene.later(),
        fleet: Vec::new(),
    })
}

/// The topic word and author of the search task.
fn search_terms(source: Source) -> (&'static str, &'static str) {
    match source {
        Source::Tokio => ("JoinSet", "Alice Ryhl"),
        _ => ("bench", "Ada Agent"),
    }
}

/// One call of ours and what it answered.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallRecord {
    /// `brief`, `hint` or `task`.
    pub(crate) role: &'static str,
    /// The tool called (underscore spelling).
    pub(crate) tool: String,
    /// The arguments sent, `repoPath` and `format` included.
    pub(crate) arguments: Value,
    /// `ok`, `isError` or `rpcError`.
    pub(crate) status: &'static str,
    /// Tokens of `text`.
    pub(crate) tokens: Tokens,
    /// `content[0].text`: what the agent reads.
    #[serde(skip)]
    pub(crate) text: String,
}

/// One expert command and its output.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CommandRecord {
    /// The shell line as typed.
    pub(crate) command: String,
    /// Its exit code (-1 if killed by a signal).
    pub(crate) exit_code: i32,
    /// Tokens of `output`.
    pub(crate) tokens: Tokens,
    /// stdout, then stderr.
    #[serde(skip)]
    pub(crate) output: String,
}

/// A fact and where it was found.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FactResult {
    /// The fact.
    #[serde(flatten)]
    pub(crate) fact: Fact,
    /// Its value as reports show it ([`Fact::shown`]).
    pub(crate) value: String,
    /// Found in what the scripted path read.
    pub(crate) ours: bool,
    /// Found in what the expert's commands printed (or known to the expert).
    pub(crate) git: bool,
}

/// One task measured.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskRun {
    /// The task's name.
    pub(crate) task: &'static str,
    /// The repository's name.
    pub(crate) source: &'static str,
    /// The pinned commit the scenario started from.
    pub(crate) pin: String,
    /// What the agent was asked.
    pub(crate) situation: &'static str,
    /// Why the task-specific call is the one made.
    pub(crate) extra_why: &'static str,
    /// Every fact with where it was found.
    pub(crate) facts: Vec<FactResult>,
    /// The scripted path's calls.
    pub(crate) ours: Vec<CallRecord>,
    /// The expert's commands.
    pub(crate) git: Vec<CommandRecord>,
}

impl TaskRun {
    /// Facts found by ours and by git.
    pub(crate) fn found(&self) -> (usize, usize) {
        (self.facts.iter().filter(|fact| fact.ours).count(), self.facts.iter().filter(|fact| fact.git).count())
    }

    /// o200k tokens read by ours and by git.
    pub(crate) fn tokens(&self) -> (usize, usize) {
        (
            self.ours.iter().map(|call| call.tokens.o200k).sum(),
            self.git.iter().map(|command| command.tokens.o200k).sum(),
        )
    }
}

/// Runs the selected tasks.
pub(crate) fn run(setup: &Setup) -> anyhow::Result<Vec<TaskRun>> {
    let home = setup.work_dir.join(".home");
    std::fs::create_dir_all(&home)?;
    let mut runs = Vec::new();
    for task in TASKS.iter().filter(|task| setup.only.is_empty() || setup.only.iter().any(|name| name == task.name)) {
        let Some(pinned) = setup.sources.iter().find(|pinned| pinned.source == task.source) else {
            bail!("task {} needs the {} repository", task.name, task.source.name());
        };
        eprintln!("fluxgit-bench tasks: {} on {} ...", task.name, task.source.name());
        let dir = setup.work_dir.join(task.name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("cannot remove {}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir)?;
        let scene = Scene { dir: dir.clone(), home: home.clone(), clock: Cell::new(pinned.time) };
        let prepared = (task.build)(&scene, pinned).with_context(|| format!("building task {}", task.name))?;
        let run_dir = setup.work_dir.join(format!(".run-{}", task.name));
        let _ = std::fs::remove_dir_all(&run_dir);
        let env = server_env(&setup.work_dir, &home, &run_dir, prepared.now);
        if !prepared.fleet.is_empty() {
            fleet_add(&setup.sidecar, &env, &prepared.fleet)?;
        }
        let ours = ours(&setup.sidecar, &env, &prepared)?;
        let git = prepared
            .expert
            .iter()
            .map(|line| expert(&scene.home, &prepared.cwd, line))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let ours_docs: Vec<&str> = ours.iter().map(|call| call.text.as_str()).collect();
        let git_docs: Vec<&str> = git.iter().map(|command| command.output.as_str()).collect();
        let facts = prepared
            .facts
            .iter()
            .map(|fact| FactResult {
                value: fact.shown(),
                ours: fact.found_in(&ours_docs),
                git: fact.expert_knows || fact.found_in(&git_docs),
                fact: fact.clone(),
            })
            .collect();
        runs.push(TaskRun {
            task: task.name,
            source: task.source.name(),
            pin: pinned.pin.clone(),
            situation: task.situation,
            extra_why: task.extra_why,
            facts,
            ours,
            git,
        });
    }
    Ok(runs)
}

/// The servers' environment: nothing inherited but `PATH`; the work dir as allowed root; the private home and a
/// run dir of the task's own (its fleet registry, no audit ledger, no presence file); the task's clock.
fn server_env(work_dir: &Path, home: &Path, run_dir: &Path, now: i64) -> Vec<(&'static str, OsString)> {
    vec![
        ("PATH", std::env::var_os("PATH").unwrap_or_default()),
        ("HOME", home.as_os_str().to_owned()),
        ("XDG_DATA_HOME", home.join(".local/share").into_os_string()),
        ("FLUXGIT_MCP_ALLOWED_ROOTS", work_dir.as_os_str().to_owned()),
        ("FLUXGIT_RUN_DIR", run_dir.as_os_str().to_owned()),
        ("FLUXGIT_MCP_AUDIT_DISABLED", OsString::new()),
        ("FLUXGIT_MCP_PRESENCE_DISABLED", OsString::new()),
        ("FLUXGIT_NOW_EPOCH_SECS", now.to_string().into()),
        ("GIT_CONFIG_NOSYSTEM", "1".into()),
        ("LC_ALL", "C".into()),
        ("TZ", "UTC".into()),
    ]
}

/// `fluxgit-mcp-sidecar fleet add PATHS` with the servers' environment (so into the task's private run dir).
fn fleet_add(sidecar: &Path, env: &[(&str, OsString)], paths: &[PathBuf]) -> anyhow::Result<()> {
    let mut command = Command::new(sidecar);
    command.env_clear().arg("fleet").arg("add").args(paths);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().with_context(|| format!("cannot run {} fleet add", sidecar.display()))?;
    ensure!(output.status.success(), "fleet add failed: {}", String::from_utf8_lossy(&output.stderr));
    Ok(())
}

/// The scripted path: `repo_brief` in text, the first hint the text shows (its tool, its arguments from the same
/// answer's `structuredContent`), then the task-specific call unless the hint already made it or what was read
/// already holds every fact the task needs (an agent with its answer stops). Every answer is asked in text where
/// the tool takes `format`.
fn ours(sidecar: &Path, env: &[(&str, OsString)], prepared: &Prepared) -> anyhow::Result<Vec<CallRecord>> {
    let mut session = Session::start(sidecar, env)?;
    let repo = prepared.repo.to_str().context("UTF-8 paths")?.to_owned();
    let mut calls = Vec::new();
    let structured = call(&mut session, &mut calls, "brief", "repo_brief", json!({ "repoPath": repo }))?;
    let brief_text = calls.first().map(|call| call.text.clone()).unwrap_or_default();
    let hint = first_hint(&brief_text, structured.as_ref());
    if let Some((tool, mut arguments)) = hint.clone() {
        arguments["repoPath"] = Value::from(repo.clone());
        call(&mut session, &mut calls, "hint", &tool, arguments)?;
    }
    // The task call is left out when the hint already made it: the same tool with every argument the task call
    // gives (an agent does not ask twice).
    let made = |(tool, arguments): &(String, Value)| {
        tool.replace('.', "_") == extra_tool(prepared)
            && prepared
                .extra
                .as_ref()
                .and_then(|extra| extra.arguments.as_object())
                .is_some_and(|wanted| wanted.iter().all(|(key, value)| arguments.get(key) == Some(value)))
    };
    // ... and when what the agent read already answers the task: it stops there.
    let answered = || {
        let read: Vec<&str> = calls.iter().map(|call| call.text.as_str()).collect();
        prepared.facts.iter().all(|fact| fact.found_in(&read))
    };
    if let Some(extra) = &prepared.extra
        && !hint.as_ref().is_some_and(made)
        && !answered()
    {
        let mut arguments = extra.arguments.clone();
        if extra.with_repo {
            arguments["repoPath"] = Value::from(repo.clone());
        }
        call(&mut session, &mut calls, "task", extra.tool, arguments)?;
    }
    Ok(calls)
}

/// The task call's tool, or an empty name.
fn extra_tool(prepared: &Prepared) -> &'static str {
    prepared.extra.as_ref().map_or("", |extra| extra.tool)
}

/// Calls `tool` (in text when it takes `format`), records the call in `calls` and returns its `structuredContent`.
fn call(
    session: &mut Session,
    calls: &mut Vec<CallRecord>,
    role: &'static str,
    tool: &str,
    mut arguments: Value,
) -> anyhow::Result<Option<Value>> {
    if session.text_tools.iter().any(|name| name == tool || *name == tool.replace('.', "_")) {
        arguments["format"] = Value::from("text");
    }
    let (answer, structured) =
        session.call_structured(tool, &arguments).with_context(|| format!("{tool} {arguments}"))?;
    calls.push(CallRecord {
        role,
        tool: tool.to_owned(),
        arguments,
        status: answer.status(),
        tokens: Tokens::of(answer.text()),
        text: answer.text().to_owned(),
    });
    Ok(structured)
}

/// The first `-> tool ...` line of a text brief, with that hint's arguments from `structuredContent` (the first hint
/// naming the tool); `None` when the text shows no hint.
fn first_hint(text: &str, structured: Option<&Value>) -> Option<(String, Value)> {
    let line = text.lines().find_map(|line| line.strip_prefix("-> "))?;
    let tool = line.split([' ', ':']).next()?.to_owned();
    let arguments = structured
        .and_then(|value| value["data"]["hints"].as_array())
        .and_then(|hints| hints.iter().find(|hint| hint["tool"] == tool.as_str()))
        .and_then(|hint| hint.get("arguments").cloned())
        .unwrap_or_else(|| json!({}));
    Some((tool, arguments))
}

/// Runs one expert line with `sh -c` in `cwd`, with the bench's git environment.
fn expert(home: &Path, cwd: &Path, line: &str) -> anyhow::Result<CommandRecord> {
    let mut command = Command::new("sh");
    let output = git_env(&mut command, home).arg("-c").arg(line).current_dir(cwd).output()?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok(CommandRecord {
        command: line.to_owned(),
        exit_code: output.status.code().unwrap_or(-1),
        tokens: Tokens::of(&text),
        output: text,
    })
}

/// Makes `<work_dir>/base/<name>-<pin>.git` from `from` (a clone or a bare mirror): `git clone --no-local --bare`,
/// then every ref dropped but `main` at the pin, so nothing newer than the pin is reachable. Kept between runs.
pub(crate) fn pin_source(source: Source, from: &Path, pin: &str, work_dir: &Path) -> anyhow::Result<Pinned> {
    let home = work_dir.join(".home");
    std::fs::create_dir_all(&home)?;
    let base = work_dir.join("base").join(format!("{}-{}.git", source.name(), &pin[..pin.len().min(12)]));
    let git = |cwd: &Path, args: &[&str]| -> anyhow::Result<String> {
        let mut command = Command::new("git");
        let output = git_env(&mut command, &home).args(args).current_dir(cwd).output()?;
        ensure!(output.status.success(), "git {} failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr));
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let ready =
        base.is_dir() && git(&base, &["rev-parse", "--verify", "-q", "refs/heads/main"]).ok().as_deref() == Some(pin);
    if !ready {
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.parent().context("base has a parent")?)?;
        eprintln!("fluxgit-bench tasks: cloning {} from {} ...", source.name(), from.display());
        let from_text = from.to_str().context("UTF-8 paths")?;
        let base_text = base.to_str().context("UTF-8 paths")?;
        git(work_dir, &["clone", "-q", "--no-local", "--bare", "--no-tags", from_text, base_text])?;
        git(&base, &["cat-file", "-e", &format!("{pin}^{{commit}}")])
            .with_context(|| format!("{} has no commit {pin}: fetch {}", from.display(), source.url()))?;
        for name in git(&base, &["for-each-ref", "--format=%(refname)"])?.lines() {
            git(&base, &["update-ref", "-d", name])?;
        }
        git(&base, &["update-ref", "refs/heads/main", pin])?;
        git(&base, &["symbolic-ref", "HEAD", "refs/heads/main"])?;
    }
    let time = git(&base, &["log", "-1", "--format=%ct", pin])?.parse::<i64>()?;
    Ok(Pinned { source, base, pin: pin.to_owned(), time })
}

/// A small repository built by git commands for `--check` (no clone): README.md, CHANGELOG.md, GUIDE.md, FAQ.md and a
/// few more files over twelve commits by three authors, standing in for a real source.
pub(crate) fn check_repository(work_dir: &Path) -> anyhow::Result<PathBuf> {
    let repo = work_dir.join("check-source");
    let _ = std::fs::remove_dir_all(&repo);
    std::fs::create_dir_all(&repo)?;
    let scene = Scene { dir: repo.clone(), home: work_dir.join(".home"), clock: Cell::new(1_700_000_000) };
    std::fs::create_dir_all(&scene.home)?;
    scene.git_in(&repo, &["init", "-q", "-b", "main"])?;
    for idx in 1..=12 {
        for file in [
            "README.md",
            "CHANGELOG.md",
            "GUIDE.md",
            "FAQ.md",
            "tokio/src/runtime/park.rs",
            "tokio/src/runtime/mod.rs",
            "tokio/CHANGELOG.md",
        ] {
            Scene::append(&repo, file, &format!("line {idx} of {file}"))?;
        }
        scene.commit(&repo, &format!("docs: bench note {idx}"))?;
    }
    Ok(repo)
}
