//! One scenario end to end: build the fixture, ask the oracle, run the tools (ours and the peer's), the git
//! sweep and the counterexample, and judge every side against the checklist.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use fluxgit_engine::budget::{count_tokens, count_tokens_cl100k};
use serde::Serialize;
use serde_json::Value;

use crate::cli::{self, CliRun, GitAt};
use crate::facts::{self, Carried, Fact};
use crate::listing::Doc;
use crate::mcp::{Answer, Session};
use crate::oracle::{self, Truth};
use crate::scenarios::{self, BenchScenario, ToolCall};

/// The instant the harness pins the engine's clock to: 2026-03-01T00:00:00Z, after every fixture commit.
///
/// Passed as `FLUXGIT_NOW_EPOCH_SECS`, which `repo.scope` reads for its churn window (the only tool with a clock),
/// so outputs are identical run to run.
pub(crate) const PINNED_NOW_EPOCH_SECS: u64 = 1_772_323_200;

/// Where and with what to run.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    /// Fixtures are built at `<fixtures_dir>/<scenario>` (canonical, so paths in outputs are stable).
    pub(crate) fixtures_dir: PathBuf,
    /// Our sidecar binary.
    pub(crate) sidecar: PathBuf,
    /// Another MCP server to compare with.
    pub(crate) peer: Option<PathBuf>,
    /// A peer's answers recorded by an earlier run, replayed instead of running one.
    pub(crate) peer_recorded: Option<PathBuf>,
    /// The sidecar as it was before the compact shapes (commit 96f0a1f), for the per-tool table's "before" column.
    pub(crate) baseline: Option<PathBuf>,
    /// Instead of running the baseline: its per-tool answers recorded by an earlier run, replayed.
    pub(crate) baseline_recorded: Option<PathBuf>,
}

/// Tokens of one text in both tokenizers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Tokens {
    /// `o200k_base`, the headline count.
    pub(crate) o200k: usize,
    /// `cl100k_base`, beside it.
    pub(crate) cl100k: usize,
}

impl Tokens {
    pub(crate) fn of(text: &str) -> Tokens {
        Tokens { o200k: count_tokens(text), cl100k: count_tokens_cl100k(text) }
    }

    pub(crate) fn sum<'a>(all: impl IntoIterator<Item = &'a Tokens>) -> Tokens {
        all.into_iter()
            .fold(Tokens::default(), |sum, t| Tokens { o200k: sum.o200k + t.o200k, cl100k: sum.cl100k + t.cl100k })
    }
}

/// One tool call and its answer; `answer` is `None` when the server does not list the tool.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) tool: &'static str,
    /// The arguments sent, `repoPath` included.
    pub(crate) arguments: Value,
    pub(crate) answer: Option<Answer>,
    pub(crate) tokens: Tokens,
    /// The default `maxTokens` the tool advertises (the arguments never set one).
    pub(crate) default_max_tokens: Option<u64>,
}

/// A server's side: who it is and its calls.
#[derive(Debug, Clone)]
pub(crate) struct ServerSide {
    /// `serverInfo.name` and `.version`.
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) protocol_version: String,
    pub(crate) calls: Vec<Call>,
}

impl ServerSide {
    /// The `repo.brief` call.
    pub(crate) fn brief(&self) -> Option<&Call> {
        self.calls.iter().find(|call| call.tool == "repo.brief" && call.answer.is_some())
    }

    /// Tokens of every answered call.
    pub(crate) fn total(&self) -> Tokens {
        Tokens::sum(self.calls.iter().filter(|call| call.answer.is_some()).map(|call| &call.tokens))
    }

    fn docs(&self, brief_only: bool) -> Vec<Doc<'_>> {
        self.calls
            .iter()
            .filter(|call| !brief_only || call.tool == "repo.brief")
            .filter_map(|call| Some(Doc { source: call.tool, text: call.answer.as_ref()?.text() }))
            .collect()
    }
}

/// The sides facts are judged on, in table order: ours (JSON), the git sweep, the counterexample, the peer, and ours
/// again with `format: "text"`.
pub(crate) const SIDES: [&str; 8] =
    ["brief", "tools", "sweep", "counterexample", "peerBrief", "peerTools", "briefText", "toolsText"];

/// Wall-clock seconds of each phase (machine-dependent: reported, never checksummed).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Timings {
    /// Building the fixture.
    pub(crate) build: f64,
    /// Our server: start, initialize, tools/list and the calls.
    pub(crate) ours: f64,
    /// The peer, the same way.
    pub(crate) peer: Option<f64>,
    /// The git sweep and the counterexample.
    pub(crate) git: f64,
}

/// Everything measured for one scenario.
#[derive(Debug, Clone)]
pub(crate) struct ScenarioRun {
    pub(crate) scenario: BenchScenario,
    pub(crate) repo_path: PathBuf,
    pub(crate) timings: Timings,
    pub(crate) truth: Truth,
    pub(crate) facts: Vec<Fact>,
    /// Per fact, per side of [`SIDES`] (`None` for peer sides without a peer).
    pub(crate) carried: Vec<Vec<Option<Carried>>>,
    pub(crate) ours: ServerSide,
    /// Our calls again with `format: "text"` (those that take `maxTokens`; design.md#envelope).
    pub(crate) ours_text: ServerSide,
    pub(crate) peer: Option<ServerSide>,
    pub(crate) sweep: Vec<(CliRun, Tokens)>,
    pub(crate) counterexample: Vec<(CliRun, Tokens)>,
    /// Every tool's default call ([`scenarios::PER_TOOL`]) on this fixture, per side.
    pub(crate) per_tool: PerTool,
}

/// The per-tool pass: the same default calls to ours (JSON and text), the baseline and the peer (when run live).
#[derive(Debug, Clone)]
pub(crate) struct PerTool {
    pub(crate) ours: ServerSide,
    pub(crate) text: ServerSide,
    pub(crate) baseline: Option<ServerSide>,
    pub(crate) peer: Option<ServerSide>,
}

impl ScenarioRun {
    /// How many facts side `side_idx` of [`SIDES`] carries, or `None` when the side did not run.
    pub(crate) fn facts_carried(&self, side_idx: usize) -> Option<usize> {
        let mut total = 0;
        for per_side in &self.carried {
            total += usize::from(per_side[side_idx].as_ref()?.carried);
        }
        Some(total)
    }

    pub(crate) fn sweep_total(&self) -> Tokens {
        Tokens::sum(self.sweep.iter().map(|(_, tokens)| tokens))
    }

    pub(crate) fn counterexample_total(&self) -> Tokens {
        Tokens::sum(self.counterexample.iter().map(|(_, tokens)| tokens))
    }
}

/// Runs `scenario` with `setup`.
pub(crate) fn run(scenario: BenchScenario, setup: &Setup) -> anyhow::Result<ScenarioRun> {
    let dir = setup.fixtures_dir.join(scenario.name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot remove the old {}", dir.display()))?;
    }
    let mut timings = Timings::default();
    let mut started = Instant::now();
    let lap = |started: &mut Instant| {
        let secs = started.elapsed().as_secs_f64();
        *started = Instant::now();
        secs
    };
    let fixture = fluxgit_fixtures::build_in(scenario.fixture, &dir);
    timings.build = lap(&mut started);
    let repo_path = fixture.path().to_path_buf();

    let truth = oracle::read(GitAt::Fixture(&fixture))?;
    let facts = facts::checklist(&truth);
    let env = server_env(&setup.fixtures_dir);
    lap(&mut started);
    let ours = server_side(&setup.sidecar, &env, scenario.calls, &repo_path, Format::Json)?;
    let ours_text = server_side(&setup.sidecar, &env, scenario.calls, &repo_path, Format::Text)?;
    timings.ours = lap(&mut started);
    let peer = match (&setup.peer, &setup.peer_recorded) {
        (Some(peer), _) => Some(server_side(peer, &env, scenario.calls, &repo_path, Format::Json)?),
        (None, Some(recorded)) => Some(recorded_side(recorded, scenario, &repo_path)?),
        (None, None) => None,
    };
    timings.peer = peer.as_ref().map(|_| lap(&mut started));
    let run_all = |commands: Vec<Vec<String>>| -> anyhow::Result<Vec<(CliRun, Tokens)>> {
        commands
            .iter()
            .map(|args| cli::run(GitAt::Fixture(&fixture), args).map(|run| (run.clone(), Tokens::of(&run.output))))
            .collect()
    };
    let calls = &scenarios::PER_TOOL;
    let per_tool = PerTool {
        ours: server_side(&setup.sidecar, &env, calls, &repo_path, Format::Json)?,
        text: server_side(&setup.sidecar, &env, calls, &repo_path, Format::Text)?,
        baseline: match (&setup.baseline, &setup.baseline_recorded) {
            (Some(baseline), _) => Some(server_side(baseline, &env, calls, &repo_path, Format::Json)?),
            (None, Some(recorded)) => Some(recorded_baseline(recorded, scenario, &repo_path)?),
            (None, None) => None,
        },
        peer: setup.peer.as_ref().map(|peer| server_side(peer, &env, calls, &repo_path, Format::Json)).transpose()?,
    };
    let sweep = run_all(cli::sweep_commands(&truth.conflicted))?;
    let counterexample = run_all(cli::counterexample_commands())?;
    timings.git = lap(&mut started);

    let sides: [Option<Vec<Doc<'_>>>; 8] = [
        Some(ours.docs(true)),
        Some(ours.docs(false)),
        Some(cli_docs(&sweep)),
        Some(cli_docs(&counterexample)),
        peer.as_ref().map(|peer| peer.docs(true)),
        peer.as_ref().map(|peer| peer.docs(false)),
        Some(ours_text.docs(true)),
        Some(ours_text.docs(false)),
    ];
    let carried = facts
        .iter()
        .map(|fact| sides.iter().map(|docs| docs.as_ref().map(|docs| facts::carried(fact, docs))).collect())
        .collect();
    Ok(ScenarioRun {
        scenario,
        repo_path,
        timings,
        truth,
        facts,
        carried,
        ours,
        ours_text,
        peer,
        sweep,
        counterexample,
        per_tool,
    })
}

/// `repo.brief` on an existing repository (`--repo`, e.g. the project's own checkout): ours in JSON and in text,
/// the peer (run live), the counterexample, judged on the same checklist. Not rebuilt, so its numbers hold for
/// the commit it ran at; the servers use the real clock.
#[derive(Debug, Clone)]
pub(crate) struct RepoRun {
    /// `own-checkout` for this workspace, else the directory's name.
    pub(crate) label: String,
    /// `git describe --always --dirty` of the repository when it ran.
    pub(crate) described: String,
    pub(crate) facts: Vec<Fact>,
    /// Per fact, per side: brief, peerBrief, briefText, counterexample.
    pub(crate) carried: Vec<Vec<Option<Carried>>>,
    pub(crate) ours: ServerSide,
    pub(crate) text: ServerSide,
    pub(crate) peer: Option<ServerSide>,
    pub(crate) counterexample: Vec<(CliRun, Tokens)>,
}

impl RepoRun {
    /// How many facts side `side_idx` (brief, peerBrief, briefText, counterexample) carries, or `None` when the side did not run.
    pub(crate) fn facts_carried(&self, side_idx: usize) -> Option<usize> {
        let mut total = 0;
        for per_side in &self.carried {
            total += usize::from(per_side[side_idx].as_ref()?.carried);
        }
        Some(total)
    }
}

/// Runs `repo.brief` on the existing repository at `path` (see [`RepoRun`]).
pub(crate) fn run_repo(path: &Path, label: String, setup: &Setup) -> anyhow::Result<RepoRun> {
    let path = std::fs::canonicalize(path).with_context(|| format!("no repository at {}", path.display()))?;
    let at = GitAt::Repo(&path);
    let truth = oracle::read(at)?;
    let facts = facts::checklist(&truth);
    // The work tree and the repository's common git dir (a linked worktree's lives in the main checkout).
    let common =
        cli::run(at, &["rev-parse".to_owned(), "--path-format=absolute".to_owned(), "--git-common-dir".to_owned()])?;
    let roots = std::env::join_paths([path.clone(), PathBuf::from(common.output.trim())])?;
    let env: Vec<(&str, OsString)> = server_env(&setup.fixtures_dir)
        .into_iter()
        .filter(|(key, _)| *key != "FLUXGIT_NOW_EPOCH_SECS")
        .map(|(key, value)| if key == "FLUXGIT_MCP_ALLOWED_ROOTS" { (key, roots.clone()) } else { (key, value) })
        .collect();
    let brief = [scenarios::BRIEF];
    let ours = server_side(&setup.sidecar, &env, &brief, &path, Format::Json)?;
    let text = server_side(&setup.sidecar, &env, &brief, &path, Format::Text)?;
    let peer = setup.peer.as_ref().map(|peer| server_side(peer, &env, &brief, &path, Format::Json)).transpose()?;
    let counterexample = cli::counterexample_commands()
        .iter()
        .map(|args| cli::run(at, args).map(|run| (run.clone(), Tokens::of(&run.output))))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let described = cli::run(at, &["describe".to_owned(), "--always".to_owned(), "--dirty".to_owned()])?;
    let sides = [
        Some(ours.docs(true)),
        peer.as_ref().map(|peer| peer.docs(true)),
        Some(text.docs(true)),
        Some(cli_docs(&counterexample)),
    ];
    let carried = facts
        .iter()
        .map(|fact| sides.iter().map(|docs| docs.as_ref().map(|docs| facts::carried(fact, docs))).collect())
        .collect();
    Ok(RepoRun {
        label,
        described: described.output.trim().to_owned(),
        facts,
        carried,
        ours,
        text,
        peer,
        counterexample,
    })
}

/// The documents of a git side: one per command, named by its command line.
fn cli_docs(runs: &[(CliRun, Tokens)]) -> Vec<Doc<'_>> {
    runs.iter().map(|(run, _)| Doc { source: &run.line, text: &run.output }).collect()
}

/// The environment every MCP server runs with: nothing inherited but `PATH`; the fixtures directory as the
/// allowed root and home; no audit ledger, no presence file; the pinned clock.
fn server_env(fixtures_dir: &Path) -> Vec<(&'static str, OsString)> {
    vec![
        ("PATH", std::env::var_os("PATH").unwrap_or_default()),
        ("HOME", fixtures_dir.join(".home").into_os_string()),
        ("FLUXGIT_MCP_ALLOWED_ROOTS", fixtures_dir.as_os_str().to_owned()),
        ("FLUXGIT_RUN_DIR", fixtures_dir.join(".run").into_os_string()),
        ("FLUXGIT_MCP_AUDIT_DISABLED", OsString::new()),
        ("FLUXGIT_MCP_PRESENCE_DISABLED", OsString::new()),
        ("FLUXGIT_NOW_EPOCH_SECS", PINNED_NOW_EPOCH_SECS.to_string().into()),
        ("LC_ALL", "C".into()),
        ("TZ", "UTC".into()),
    ]
}

/// A peer's side as an earlier run recorded it (`<dir>/<scenario>/env.txt`, `tokens.json` and `peer/`): the same
/// calls on a fixture at the same path, so the same answers; tokens are counted again on the recorded text.
fn recorded_side(dir: &Path, scenario: BenchScenario, repo_path: &Path) -> anyhow::Result<ServerSide> {
    let dir = dir.join(scenario.name);
    let env = std::fs::read_to_string(dir.join("env.txt")).with_context(|| format!("no {}/env.txt", dir.display()))?;
    let line = env.lines().find_map(|line| line.strip_prefix("peer: ")).context("env.txt names no peer")?;
    // `name version (protocol P)`.
    let (who, protocol) = line.split_once(" (protocol ").context("peer line shape")?;
    let (name, version) = who.rsplit_once(' ').context("peer name and version")?;
    Ok(ServerSide {
        name: name.to_owned(),
        version: version.to_owned(),
        protocol_version: protocol.trim_end_matches(')').to_owned(),
        calls: recorded_calls(&dir, "peer", scenario.calls, repo_path)?,
    })
}

/// The baseline's per-tool answers recorded by an earlier run (`<dir>/<scenario>/per-tool/baseline/` and the
/// `baseline` records of `per-tool/tokens.json`), replayed: the sidecar at [`crate::BASELINE_COMMIT`] answers the
/// deterministic fixtures the same way on every run.
fn recorded_baseline(dir: &Path, scenario: BenchScenario, repo_path: &Path) -> anyhow::Result<ServerSide> {
    let dir = dir.join(scenario.name).join("per-tool");
    Ok(ServerSide {
        name: "fluxgit-mcp-sidecar".to_owned(),
        version: format!("{} (recorded)", crate::BASELINE_COMMIT),
        protocol_version: String::new(),
        calls: recorded_calls(&dir, "baseline", &scenarios::PER_TOOL, repo_path)?,
    })
}

/// The calls of side `side` recorded in `dir/tokens.json`, with their answers from `dir/<side>/`; each must be one
/// of `made` on `repo_path`.
fn recorded_calls(dir: &Path, side: &str, made: &[ToolCall], repo_path: &Path) -> anyhow::Result<Vec<Call>> {
    let tokens: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("tokens.json"))?)?;
    let mut calls = Vec::new();
    for record in
        tokens[side].as_array().with_context(|| format!("{}/tokens.json has no {side} calls", dir.display()))?
    {
        let arguments = record["arguments"].clone();
        anyhow::ensure!(
            arguments["repoPath"].as_str() == repo_path.to_str(),
            "recorded {side} answers are for {}, not {}",
            arguments["repoPath"],
            repo_path.display()
        );
        let tool: &'static str = made
            .iter()
            .map(|call| call.tool)
            .find(|tool| record["tool"] == *tool)
            .context("a recorded call the scenario does not make")?;
        let answer = match record["file"].as_str() {
            None => None,
            Some(file) => {
                let text = std::fs::read_to_string(dir.join(side).join(file))?;
                Some(match record["status"].as_str() {
                    Some("rpcError") => Answer::RpcError { text },
                    status => Answer::Result { text, is_error: status == Some("isError") },
                })
            }
        };
        let tokens = answer.as_ref().map(|answer| Tokens::of(answer.text())).unwrap_or_default();
        let default_max_tokens = record["defaultMaxTokens"].as_u64();
        calls.push(Call { tool, arguments, answer, tokens, default_max_tokens });
    }
    Ok(calls)
}

/// How the calls ask for their answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// The default: JSON.
    Json,
    /// `format: "text"`, only for the tools that take `maxTokens` (the others are left out of this side).
    Text,
}

/// Starts `binary` and makes `to_make`; a tool it does not list is recorded, not called.
fn server_side(
    binary: &Path,
    env: &[(&str, OsString)],
    to_make: &[ToolCall],
    repo_path: &Path,
    format: Format,
) -> anyhow::Result<ServerSide> {
    let mut session = Session::start(binary, env)?;
    let mut calls = Vec::new();
    for call in to_make {
        let mut arguments: Value = serde_json::from_str(call.arguments).context("scenario arguments are JSON")?;
        let path = repo_path.to_str().context("fixture paths are UTF-8")?;
        arguments["repoPath"] = Value::from(path);
        let listed = session.tool(call.tool);
        if format == Format::Text {
            if listed.flatten().is_none() {
                continue;
            }
            arguments["format"] = Value::from("text");
        }
        let answer = match listed {
            Some(_) => Some(
                session
                    .call(call.tool, &arguments)
                    .with_context(|| format!("{} on {}", call.tool, binary.display()))?,
            ),
            None => None,
        };
        let tokens = answer.as_ref().map(|answer| Tokens::of(answer.text())).unwrap_or_default();
        calls.push(Call { tool: call.tool, arguments, answer, tokens, default_max_tokens: listed.flatten() });
    }
    Ok(ServerSide {
        name: session.server_name.clone(),
        version: session.server_version.clone(),
        protocol_version: session.protocol_version.clone(),
        calls,
    })
}
