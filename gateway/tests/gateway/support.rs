//! Test support: deterministic repositories built with the git CLI, the gateway binary on `127.0.0.1:0`, HTTP
//! calls, the CLI, and approval through a pseudo-terminal or through the library.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fluxgit_gateway::approval;
use fluxgit_gateway::audit::Audit;
use fluxgit_gateway::journal::{Journal, NewProposal, Proposal, Recorded};
use fluxgit_gateway::proposal;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// A temp dir with an allowed root holding repositories, a home and a run dir.
pub(crate) struct Sandbox {
    _dir: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) run_dir: PathBuf,
}

impl Sandbox {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let base = std::fs::canonicalize(dir.path()).expect("canonical temp dir");
        let (root, home, run_dir) = (base.join("root"), base.join("home"), base.join("run"));
        for path in [&root, &home] {
            std::fs::create_dir_all(path).expect("create dir");
        }
        Self { _dir: dir, root, home, run_dir }
    }

    pub(crate) fn roots(&self) -> Vec<PathBuf> {
        vec![self.root.clone()]
    }

    /// The environment of every gateway process.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        vec![
            ("HOME".into(), self.home.display().to_string()),
            ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
            ("FLUXGIT_RUN_DIR".into(), self.run_dir.display().to_string()),
            ("FLUXGIT_MCP_ALLOWED_ROOTS".into(), self.root.display().to_string()),
            ("FLUXGIT_MCP_AUDIT_LOG".into(), self.run_dir.join("audit/mcp.jsonl").display().to_string()),
        ]
    }

    /// A repository `name`: main (a.txt, b.txt; then a second commit), topic (adds t.txt from the first commit),
    /// clash (changes a.txt from the first commit); HEAD on main, clean.
    pub(crate) fn repo(&self, name: &str) -> PathBuf {
        let repo = self.root.join(name);
        std::fs::create_dir_all(&repo).expect("create repo dir");
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["config", "user.name", "Test Person"]);
        git(&repo, &["config", "user.email", "person@example.invalid"]);
        write(&repo, "a.txt", "one\n");
        write(&repo, "b.txt", "bee\n");
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "first"]);
        git(&repo, &["branch", "topic"]);
        git(&repo, &["branch", "clash"]);
        write(&repo, "a.txt", "one\ntwo\n");
        git(&repo, &["commit", "-q", "-am", "second"]);
        git(&repo, &["switch", "-q", "topic"]);
        write(&repo, "t.txt", "topic\n");
        git(&repo, &["add", "t.txt"]);
        git(&repo, &["commit", "-q", "-m", "topic work"]);
        git(&repo, &["switch", "-q", "clash"]);
        write(&repo, "a.txt", "clash\n");
        git(&repo, &["commit", "-q", "-am", "clash work"]);
        git(&repo, &["switch", "-q", "main"]);
        repo
    }

    /// The gateway binary with the sandbox's environment and `extra` variables.
    pub(crate) fn command(&self, args: &[&str], extra: &[(&str, &str)]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_fluxgit-gateway"));
        command.args(args).env_clear().env("PATH", std::env::var("PATH").unwrap_or_default());
        for (name, value) in self.env() {
            command.env(name, value);
        }
        for (name, value) in extra {
            command.env(name, value);
        }
        command
    }

    /// Runs a CLI subcommand with stdin from a pipe; (success, stdout, stderr).
    pub(crate) fn cli(&self, args: &[&str]) -> (bool, String, String) {
        let output = self.command(args, &[]).stdin(Stdio::null()).output().expect("run the gateway CLI");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Starts `serve` on `127.0.0.1:0`.
    pub(crate) fn serve(&self, extra: &[(&str, &str)]) -> Gateway {
        self.serve_with(&[], extra)
    }

    /// Starts `serve` on `127.0.0.1:0` with more arguments (`--no-notify`, ...).
    pub(crate) fn serve_with(&self, args: &[&str], extra: &[(&str, &str)]) -> Gateway {
        let mut arguments = vec!["serve", "--addr", "127.0.0.1:0"];
        arguments.extend_from_slice(args);
        let mut child = self
            .command(&arguments, extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the gateway");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        reader.read_line(&mut line).expect("read the handshake line");
        let mut page_line = String::new();
        reader.read_line(&mut page_line).expect("read the page line");
        let Some(addr) = line.trim().strip_prefix("FLUXGIT_MCP_HANDSHAKE_ADDR=") else {
            let mut stderr = String::new();
            let _ = child.stderr.take().map(|mut pipe| pipe.read_to_string(&mut stderr));
            panic!("no handshake line: {line:?}; stderr: {stderr}");
        };
        assert!(addr.starts_with("127.0.0.1:"), "{addr}");
        let page = page_line.trim().strip_prefix("FLUXGIT_GATEWAY_PAGE=").map(str::to_owned);
        let page = page.unwrap_or_else(|| panic!("no page line: {page_line:?}"));
        assert!(page.starts_with(&format!("http://{addr}/")) && page.ends_with('/'), "{page}");
        Gateway { child, addr: addr.to_owned(), page }
    }

    /// Approves `id` through the real binary on a pseudo-terminal, typing `code` then `extra` lines.
    pub(crate) fn approve_on_pty(&self, id: &str, answers: &[&str]) -> (bool, String) {
        let master = rustix::pty::openpt(rustix::pty::OpenptFlags::RDWR | rustix::pty::OpenptFlags::NOCTTY)
            .expect("open a pty master");
        rustix::pty::grantpt(&master).expect("grantpt");
        rustix::pty::unlockpt(&master).expect("unlockpt");
        let name = rustix::pty::ptsname(&master, Vec::new()).expect("ptsname");
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name.to_str().expect("utf-8 pty name"))
            .expect("open the pty slave");
        let mut master = std::fs::File::from(master);
        for answer in answers {
            master.write_all(format!("{answer}\n").as_bytes()).expect("type on the pty");
        }
        let output = self
            .command(&["approve", id, "--wait", "30"], &[])
            .stdin(Stdio::from(slave))
            .output()
            .expect("run approve");
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        (output.status.success(), text)
    }
}

/// A running gateway; killed on drop.
pub(crate) struct Gateway {
    pub(crate) child: Child,
    pub(crate) addr: String,
    /// The approval page's address, `http://ADDR/<secret>/`.
    pub(crate) page: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Gateway {
    pub(crate) fn request(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let url = format!("http://{}{path}", self.addr);
        let response = match (method, body) {
            ("GET", _) => agent.get(&url).call(),
            ("PUT", Some(body)) => agent.put(&url).header("content-type", "application/json").send(body.to_string()),
            (_, Some(body)) => agent.post(&url).header("content-type", "application/json").send(body.to_string()),
            (_, None) => agent.post(&url).send_empty(),
        };
        let mut response = response.expect("an HTTP answer");
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    pub(crate) fn propose(&self, body: &Value) -> (u16, Value) {
        let op = body["operationType"].as_str().expect("operationType");
        self.request("POST", &format!("/v1/mcp/operation/preview/{op}"), Some(body))
    }

    pub(crate) fn status(&self, id: &str) -> Value {
        let (code, body) = self.request("GET", &format!("/v1/mcp/operation/status/{id}"), None);
        assert_eq!(code, 200, "{body}");
        body
    }

    /// Polls the status until it is terminal (or 30 s).
    pub(crate) fn wait_terminal(&self, id: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let body = self.status(id);
            let status = body["status"].as_str().unwrap_or_default().to_owned();
            if ["completed", "failed", "rejected", "cancelled", "expired"].contains(&status.as_str())
                || Instant::now() > deadline
            {
                return body;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A proposal body as the sidecar sends it.
pub(crate) fn body(id: &str, agent: &str, op: &str, repo: &Path, fields: Value) -> Value {
    let mut body = json!({
        "previewId": id,
        "agentId": agent,
        "idempotencyKey": format!("{op}:call:{id}"),
        "operationType": op,
        "repoPath": repo.display().to_string(),
        "reason": format!("test {op}"),
        "requestedAt": fluxgit_gateway::time::format_ms(fluxgit_gateway::time::now_ms()),
    });
    if let (Value::Object(target), Value::Object(extra)) = (&mut body, fields) {
        target.extend(extra);
    }
    body
}

/// Records a proposal through the library, as the HTTP route does after its checks.
pub(crate) fn propose_lib(journal: &mut Journal, roots: &[PathBuf], body: &Value) -> Proposal {
    let op = body["operationType"].as_str().expect("operationType");
    let checked = proposal::check(op, body, roots).unwrap_or_else(|invalid| panic!("{invalid:?}"));
    let new = NewProposal {
        id: checked.id,
        agent: checked.agent,
        idempotency_key: checked.idempotency_key,
        op: checked.op,
        repo_path: checked.repo_path,
        canonical: serde_json::to_value(&checked.canonical).expect("canonical as JSON"),
        reason: checked.reason,
        body: checked.body,
        requested_at: checked.requested_at,
        expires_at_ms: checked.expires_at_ms,
    };
    match journal.record(&new).expect("record") {
        Recorded::Created(proposal) => proposal,
        Recorded::Existing(proposal) => panic!("unexpected existing proposal {}", proposal.id),
    }
}

/// The one-time code printed by `show`.
pub(crate) fn code_of(card: &str) -> String {
    card.lines()
        .find_map(|line| line.strip_prefix("One-time approval code: "))
        .unwrap_or_else(|| panic!("no code on the card:\n{card}"))
        .trim()
        .to_owned()
}

/// Shows and approves `id` through the library, answering the code then `extra` lines.
pub(crate) fn approve_lib(
    journal: &mut Journal,
    roots: &[PathBuf],
    id: &str,
    extra: &[&str],
) -> Result<(), approval::Error> {
    let card = approval::show(journal, id).expect("show");
    let mut answers = format!("{}\n", code_of(&card));
    for line in extra {
        answers.push_str(line);
        answers.push('\n');
    }
    let mut input = std::io::Cursor::new(answers.into_bytes());
    approval::approve(journal, id, true, &mut input, &mut Vec::new(), roots, &Audit::DISABLED)
}

pub(crate) fn git(repo: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .current_dir(repo)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .output()
        .expect("run git");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn write(repo: &Path, path: &str, content: &str) {
    let file = repo.join(path);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).expect("create parent");
    }
    std::fs::write(file, content).expect("write file");
}

/// Refs (outside `refs/fluxgit/`), HEAD, the index file's bytes and the work tree's contents and modes (not
/// mtimes): what a restore must give back byte for byte.
pub(crate) fn state(repo: &Path) -> String {
    let refs: Vec<String> = git(repo, &["for-each-ref", "--format=%(objectname) %(refname)"])
        .lines()
        .filter(|line| !line.contains(" refs/fluxgit/"))
        .map(str::to_owned)
        .collect();
    let head = std::fs::read_to_string(repo.join(".git/HEAD")).expect("read HEAD");
    let index = std::fs::read(repo.join(".git/index"))
        .map(|bytes| faster_hex::hex_string(&Sha256::digest(&bytes)))
        .unwrap_or_else(|_| "none".into());
    let tree: Vec<String> = fluxgit_fixtures::snapshot_listing(repo)
        .into_iter()
        .filter_map(|line| {
            let fields: Vec<&str> = line.splitn(6, ' ').collect();
            let path = fields.get(5).copied().unwrap_or_default();
            (path != ".git" && !path.starts_with(".git/") && fields[0] != "d")
                .then(|| format!("{} {} {} {} {path}", fields[0], fields[1], fields[3], fields[4]))
        })
        .collect();
    format!("HEAD {head}\nrefs:\n{}\nindex {index}\nwork tree:\n{}\n", refs.join("\n"), tree.join("\n"))
}
