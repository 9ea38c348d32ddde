//! The fleet tools: `fleet.radar` (an attention queue across repositories) and `fleet.digest` (how their HEADs and
//! branches moved). Each handler maps arguments to one engine call; the envelope has no `repoPath` (the answer is
//! about many), and one bad repository is reported in its own entry, never as a failed call (design.md#roots).

use fluxgit_engine::fleet::{Target, Targets, digest, radar, registry::MAX_REPOSITORIES};
use fluxgit_engine::{Budgeted, Measure};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::envelope::{Frame, SOURCE_LOCAL};
use crate::tools::call::{Format, parse};
use crate::tools::schema::{self, count};
use crate::tools::{Cache, CallContext, FnTool, ProtocolError, ToolDefinition, ToolOutput};

/// `fleet.radar`'s default budget in tokens.
pub const RADAR_DEFAULT_TOKENS: u64 = 4000;
/// `fleet.digest`'s default budget in tokens.
pub const DIGEST_DEFAULT_TOKENS: u64 = 4000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Labelled {
    repo_path: String,
    label: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RadarArgs {
    repo_paths: Option<Vec<String>>,
    repositories: Option<Vec<Labelled>>,
    max_repos: Option<usize>,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DigestArgs {
    since_ms: i64,
    repo_paths: Option<Vec<String>>,
    max_events: Option<usize>,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

fn repo_paths() -> Value {
    json!({ "type": "array", "maxItems": MAX_REPOSITORIES, "items": schema::repo_path(),
        "description": "Repositories to read (absolute paths under the allowed roots); without it, the registry: \
        repositories added with `fluxgit-mcp-sidecar fleet add` or seen in earlier calls." })
}

fn targets(repo_paths: Option<Vec<String>>, repositories: Option<Vec<Labelled>>) -> Result<Targets, ProtocolError> {
    match (repo_paths, repositories) {
        (Some(_), Some(_)) => Err(ProtocolError::invalid_params(
            "give either repoPaths or repositories, not both".to_owned(),
            Some(json!({ "reason": "invalid_arguments" })),
        )),
        (Some(paths), None) => Ok(Targets::Given(paths.into_iter().map(|path| Target { path, label: None }).collect())),
        (None, Some(list)) => Ok(Targets::Given(
            list.into_iter().map(|item| Target { path: item.repo_path, label: item.label }).collect(),
        )),
        (None, None) => Ok(Targets::Registry),
    }
}

/// Runs a fleet read with a measure over this tool's envelope (no `repoPath`) and maps errors; `repo.brief` on a
/// folder of checkouts runs through it too.
pub(crate) fn run<T: serde::Serialize>(
    tool: &'static str,
    format: Format,
    render: fn(&Budgeted<T>, &fluxgit_engine::render::Options) -> String,
    read: impl FnOnce(&mut Measure<'_, T>) -> fluxgit_engine::Result<Budgeted<T>>,
) -> Result<ToolOutput, ProtocolError> {
    let frame = Frame { tool, read_only: true, repo_path: None, resolved_from: None, source: SOURCE_LOCAL };
    // The text spans many repositories: paths are quoted with git's default `core.quotePath` (true).
    let options = fluxgit_engine::render::Options::default();
    let render = |result: &Budgeted<T>| render(result, &options);
    let result = match format {
        Format::Json => read(&mut |candidate| frame.measure(candidate)),
        Format::Text => read(&mut |candidate| fluxgit_engine::budget::measure_tokens(&render(candidate))),
    };
    match (result, format) {
        (Ok(result), Format::Json) => Ok(frame.output(&result)),
        (Ok(result), Format::Text) => Ok(frame.text_rendering_output(render(&result), &result)),
        (Err(error), _) => frame.engine_error(error),
    }
}

fn radar_schema() -> Value {
    let states = ["error", "conflicts", "operation", "detached", "behind", "dirty", "unpushed", "stale", "clean"];
    let counts: Map<String, Value> = states.iter().map(|state| ((*state).to_owned(), count())).collect();
    let entry = json!({ "type": "object", "required": ["repoPath", "state", "reason"], "properties": {
        "repoPath": { "type": "string" },
        "label": { "type": "string", "description": "The caller's or the registry's label. Absent: none." },
        "state": { "enum": states },
        "also": { "type": "array", "items": { "enum": states }, "description": "Lower-ranked states that hold too \
            (behind, dirty, unpushed), also in reason. Absent: none." },
        "reason": { "type": "string", "description": "One short line saying why." },
        "error": { "type": "object", "required": ["reason"], "properties": { "reason": { "type": "string" } },
            "description": "Only with state `error`: why the repository could not be read (`not_found`, \
            `not_a_repository`, `outside_allowed_roots`, `invalid_path`, `git_read_failed`); `reason` above says \
            more. Absent: it was read." } } });
    schema::envelope(json!({
        "type": "object",
        "required": ["repositories", "counts", "queue"],
        "properties": {
            "repositories": count(),
            "counts": { "type": "object", "properties": counts, "additionalProperties": false,
                "description": "Repositories per state, each counted once in its highest-ranked state; exact even \
                when the queue is cut. A state with no repository is absent (absent means 0)." },
            "fromRegistry": { "type": "boolean", "description": "Present and true when the repositories came \
                from the registry (no repoPaths or repositories given). Absent means false." },
            "queue": { "type": "array", "maxItems": MAX_REPOSITORIES, "items": entry },
            "scanned": { "type": "array", "items": { "type": "object", "required": ["path", "found", "depth"],
                "properties": {
                    "path": { "type": "string", "description": "The folder as given in repoPaths." },
                    "found": count(),
                    "depth": count(),
                    "stopped": { "type": "boolean", "description": "Present and true when a bound (10,000 \
                        directories looked at, 500 repositories in all) stopped the scan: more checkouts may lie \
                        below. Absent means false." } } },
                "description": "Folders of repoPaths outside any repository, read as the checkouts below them \
                (`found`, at most `depth` levels down, as `fluxgit-mcp-sidecar fleet add --scan` finds them). \
                Absent: none." },
            "hint": { "type": "string", "description": "Only when there was no repository to read: how to give \
                the radar some (`fluxgit-mcp-sidecar fleet add --scan DIR`, or repoPaths)." }
        }
    }))
}

/// `fleet.radar`.
pub fn radar() -> FnTool {
    FnTool {
        handler: call_radar,
        cache: Cache::Never,
        definition: ToolDefinition {
            name: "fleet.radar",
            title: "Fleet radar: which repositories need attention",
            description: "Across many repositories (`repoPaths`, else the registered ones): which need attention and why \
                (conflicts, operation, detached, behind, dirty, unpushed, stale), most urgent first. A folder of \
                checkouts in `repoPaths` is read as the checkouts below it.",
            input_schema: schema::input(
                json!({
                    "repoPaths": repo_paths(),
                    "repositories": { "type": "array", "maxItems": MAX_REPOSITORIES, "items": {
                        "type": "object", "required": ["repoPath"], "additionalProperties": false,
                        "properties": { "repoPath": schema::repo_path(),
                            "label": { "type": "string", "minLength": 1, "maxLength": 200 } } },
                        "description": "Repositories with labels (instead of repoPaths)." },
                    "maxRepos": schema::integer(1, MAX_REPOSITORIES as u64, 200, "Queue entries listed at most."),
                    "maxTokens": schema::max_tokens(200, 32000, RADAR_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &[],
            ),
            output_schema: radar_schema(),
            read_only: true,
        },
    }
}

fn call_radar(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: RadarArgs = parse(arguments)?;
    let targets = targets(args.repo_paths, args.repositories)?;
    let options = radar::Options { max_repos: args.max_repos.unwrap_or(200), now: crate::config::now_epoch_secs() };
    let max_tokens = args.max_tokens.unwrap_or(RADAR_DEFAULT_TOKENS as usize);
    run("fleet.radar", args.format, fluxgit_engine::render::fleet_radar, |measure| {
        ctx.engine.radar(&targets, &options, max_tokens, measure)
    })
}

fn digest_schema() -> Value {
    let event = json!({ "type": "object", "required": ["repoPath", "ref", "at", "identity", "message"],
        "properties": {
            "repoPath": { "type": "string" },
            "ref": { "type": "string", "description": "The local branch that moved (short name), or `HEAD` for a \
                movement of HEAD alone (checkout, detached commit, rebase step)." },
            "head": { "type": "boolean", "description": "Present and true when HEAD moved with the branch (the \
                same line is in both reflogs). Absent means false." },
            "at": { "type": "string", "description": "ISO 8601 with the offset git recorded." },
            "old": { "type": "string", "description": "The tip before (12 hex digits). Absent: the ref was \
                created." },
            "new": { "type": "string", "description": "The tip after (12 hex digits). Absent: the ref was \
                deleted." },
            "identity": { "type": "string", "description": "`Name <email>` exactly as git recorded it: the \
                configured identity, not proof of a person or an agent." },
            "message": { "type": "string", "description": "The reflog message exactly." },
            "rewrote": { "type": "boolean", "description": "Present and true when the old tip is not an ancestor \
                of the new one: the movement dropped commits from the ref (reset back, amend, rebase, forced \
                move). Absent means false." } } });
    let unreadable = json!({ "type": "array", "description": "Repositories that could not be read (`not_found`, \
        `not_a_repository`, `outside_allowed_roots`, `invalid_path`, `git_read_failed`). Absent means none.",
        "items": { "type": "object", "required": ["repoPath", "error"], "properties": {
            "repoPath": { "type": "string" },
            "error": { "type": "object", "required": ["reason"], "properties": { "reason": { "type": "string" } } }
        } } });
    schema::envelope(json!({
        "type": "object",
        "required": ["repositories", "total", "events"],
        "properties": {
            "repositories": count(),
            "total": count(),
            "truncated": { "type": "boolean", "description": "Present and true when `maxEvents` cut the list \
                (`total` is exact). Absent means false." },
            "fromRegistry": { "type": "boolean", "description": "Present and true when the repositories came \
                from the registry. Absent means false." },
            "events": { "type": "array", "maxItems": 1000, "items": event },
            "unreadable": unreadable
        }
    }))
}

/// `fleet.digest`.
pub fn digest() -> FnTool {
    FnTool {
        handler: call_digest,
        cache: Cache::Never,
        definition: ToolDefinition {
            name: "fleet.digest",
            title: "Fleet digest: how HEADs and branches moved",
            description: "Across many repositories: the branch and HEAD movements since `sinceMs`, newest first, with rewrites \
                (reset, amend, rebase, force) flagged.",
            input_schema: schema::input(
                json!({
                    "sinceMs": { "type": "integer", "minimum": 0,
                        "description": "Unix time in milliseconds: movements at or after it are listed." },
                    "repoPaths": repo_paths(),
                    "maxEvents": schema::integer(1, 1000, 200, "Events listed at most."),
                    "maxTokens": schema::max_tokens(200, 32000, DIGEST_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &["sinceMs"],
            ),
            output_schema: digest_schema(),
            read_only: true,
        },
    }
}

fn call_digest(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: DigestArgs = parse(arguments)?;
    let targets = targets(args.repo_paths, None)?;
    let options = digest::Options { since_ms: args.since_ms, max_events: args.max_events.unwrap_or(200) };
    let max_tokens = args.max_tokens.unwrap_or(DIGEST_DEFAULT_TOKENS as usize);
    run("fleet.digest", args.format, fluxgit_engine::render::fleet_digest, |measure| {
        ctx.engine.digest(&targets, &options, max_tokens, measure)
    })
}
