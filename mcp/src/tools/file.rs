//! The `file.*` tool family (ours): `file.read` and `file.blame`. Each handler maps arguments to one engine call and
//! wraps the result in the envelope.

use fluxgit_engine::file::{FileRange, blame, read};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::tools::call::{Format, parse, run_formatted};
use crate::tools::schema;
use crate::tools::{Cache, CallContext, FnTool, ProtocolError, ToolDefinition, ToolOutput};

/// `file.read`'s default budget in tokens: about 30 KiB of source.
pub const READ_DEFAULT_TOKENS: u64 = 8000;
/// `file.read`'s largest budget in tokens (about 1 MiB of content, the `maxBytes` bound, does not fit less).
pub const READ_MAX_TOKENS: u64 = 400_000;

/// `file.blame`'s default budget in tokens: about 400 ranges.
pub const BLAME_DEFAULT_TOKENS: u64 = 8000;
/// `file.blame`'s largest budget in tokens.
pub const BLAME_MAX_TOKENS: u64 = 400_000;

/// The arguments `file.read` and `file.blame` share: which file, at which revision, which lines.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileArgs {
    path: String,
    rev: Option<String>,
    start_line: Option<usize>,
    end_line: Option<usize>,
}

impl From<FileArgs> for FileRange {
    fn from(args: FileArgs) -> Self {
        FileRange { path: args.path, rev: args.rev, start_line: args.start_line, end_line: args.end_line }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadArgs {
    repo_path: String,
    #[serde(flatten)]
    file: FileArgs,
    max_bytes: Option<usize>,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlameArgs {
    repo_path: String,
    #[serde(flatten)]
    file: FileArgs,
    ignore_revs: Option<bool>,
    max_tokens: Option<usize>,
    #[serde(default)]
    format: Format,
}

/// A repository-relative file path argument.
fn file_path() -> Value {
    json!({ "type": "string", "minLength": 1, "maxLength": 4096,
        "description": "Repository-relative path of the file (no `..`, not absolute)." })
}

/// A 1-based line number argument.
fn line(description: &str) -> Value {
    json!({ "type": "integer", "minimum": 1, "maximum": 100_000_000, "description": description })
}

/// `file.read`.
pub fn read_tool() -> FnTool {
    let data = json!({
        "type": "object",
        "required": ["rev", "path", "mode", "blobSha", "size"],
        "properties": {
            "rev": { "type": "string", "description": "Full sha of the commit `rev` resolved to; HEAD's when the work tree was blamed." },
            "worktree": { "type": "boolean", "description": "The work-tree file was blamed (no `rev` given, as `git blame FILE`): lines not committed yet carry commit `0000000`, whose entry in `commits` is git's `Not Committed Yet <not.committed.yet>` with subject `Version of PATH from PATH` and the file's modification time. Absent means false." },
            "shallow": { "type": "boolean", "description": "The repository is a shallow clone: lines older than its history are blamed on a boundary commit, as git blames them. Absent means false." },
            "path": { "type": "string" },
            "mode": { "enum": ["100644", "100755", "120000"], "description": "Git's file mode (120000: a symlink, whose content is its target)." },
            "blobSha": { "type": "string", "description": "Full sha of the blob." },
            "size": { "type": "integer", "minimum": 0, "description": "Bytes of the whole blob." },
            "binary": { "type": "boolean", "description": "A NUL in the first 8000 bytes (git's test): no content is inlined. Absent means false." },
            "nonUtf8": { "type": "boolean", "description": "Text that is not valid UTF-8: the shown lines are in `contentBase64`. Absent means false." },
            "totalLines": { "type": "integer", "minimum": 1, "description": "Lines in the whole file (a last line without newline counts). Absent means 0 (an empty or binary file)." },
            "startLine": { "type": "integer", "minimum": 1, "description": "First line of the range. Absent means a binary file." },
            "endLine": { "type": "integer", "minimum": 0, "description": "Last line shown. Absent means no line is shown (a binary or empty file, or none fitted the caps)." },
            "content": { "type": "string", "description": "The shown lines, byte for byte (UTF-8 text). Absent means no line is shown or the text is not UTF-8." },
            "contentBase64": { "type": "string", "description": "The shown lines' exact bytes, standard base64 (non-UTF-8 text). Absent means UTF-8 text, a binary file or no line shown." },
            "truncated": { "type": "boolean", "description": "maxBytes or maxTokens left out lines of the range (counted in `omitted.lines`); read on from endLine + 1 (startLine when endLine is absent). Absent means false." }
        }
    });
    FnTool {
        handler: call_read,
        cache: Cache::until_any_change(),
        definition: ToolDefinition {
            name: "file.read",
            title: "File at a revision",
            description: "A file's content at a revision, byte for byte as `git show rev:path`, optionally only lines \
                startLine..endLine.",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "path": file_path(),
                    "rev": { "type": "string", "minLength": 1, "maxLength": 1024, "default": "HEAD",
                        "description": "The revision (sha, branch, tag, `HEAD~2`, ...); never an option: a leading `-` is refused." },
                    "startLine": line("First line, 1-based (default 1)."),
                    "endLine": line("Last line, 1-based inclusive (default: the last; larger values are clamped)."),
                    "maxBytes": schema::integer(1, read::MAX_MAX_BYTES as u64, read::DEFAULT_MAX_BYTES as u64, "Most bytes of content shown."),
                    "maxTokens": schema::max_tokens(200, READ_MAX_TOKENS, READ_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &["repoPath", "path"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

fn call_read(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: ReadArgs = parse(arguments)?;
    let options =
        read::Options { file: args.file.into(), max_bytes: args.max_bytes.unwrap_or(read::DEFAULT_MAX_BYTES) };
    let max_tokens = args.max_tokens.unwrap_or(READ_DEFAULT_TOKENS as usize);
    run_formatted(ctx, "file.read", &args.repo_path, args.format, fluxgit_engine::render::file_read, |repo, measure| {
        ctx.engine.file_read(repo, &options, max_tokens, measure)
    })
}

/// `file.blame`.
pub fn blame_tool() -> FnTool {
    let data = json!({
        "type": "object",
        "required": ["rev", "path"],
        "properties": {
            "rev": { "type": "string", "description": "Full sha of the commit `rev` resolved to; HEAD's when the work tree was blamed." },
            "worktree": { "type": "boolean", "description": "The work-tree file was blamed (no `rev` given, as `git blame FILE`): lines not committed yet carry commit `0000000`, whose entry in `commits` is git's `Not Committed Yet <not.committed.yet>` with subject `Version of PATH from PATH` and the file's modification time. Absent means false." },
            "shallow": { "type": "boolean", "description": "The repository is a shallow clone: lines older than its history are blamed on a boundary commit, as git blames them. Absent means false." },
            "path": { "type": "string" },
            "totalLines": { "type": "integer", "minimum": 1, "description": "Lines in the whole file at rev (a last line without newline counts). Absent means 0 (an empty file)." },
            "startLine": { "type": "integer", "minimum": 1, "description": "First line of the range. Absent means an empty file." },
            "endLine": { "type": "integer", "minimum": 1, "description": "Last line shown. Absent means no line is shown (an empty file, or no range fitted the budget)." },
            "ranges": {
                "type": "array",
                "description": "The shown lines in order, grouped: consecutive lines from one commit, one original path and consecutive original lines. Absent means none.",
                "items": {
                    "type": "object",
                    "required": ["line", "commit"],
                    "properties": {
                        "line": { "type": "integer", "minimum": 1, "description": "First line of the range in the blamed file." },
                        "lines": { "type": "integer", "minimum": 2, "description": "Lines in the range. Absent means 1." },
                        "commit": { "type": "string", "description": "The commit that last changed these lines, abbreviated like `git log --oneline`; a key of `commits`." },
                        "origPath": { "type": "string", "description": "The path the lines had in that commit (renames are followed as git does). Absent means `path`." },
                        "origLine": { "type": "integer", "minimum": 1, "description": "The first line's number in that commit's version. Absent means the same as `line`." },
                        "unblamable": { "type": "boolean", "description": "Changed by an ignored revision and matched to no line of its parents, so blamed on that revision as git does (`*` with blame.markUnblamableLines). Absent means false." }
                    }
                }
            },
            "commits": {
                "type": "object",
                "description": "The commits the shown ranges name, by abbreviated sha. Absent means none.",
                "additionalProperties": {
                    "type": "object",
                    "required": ["author", "time", "subject"],
                    "properties": {
                        "author": { "type": "string", "description": "`Name <email>` as the repository's .mailmap maps it (as git blame shows it; as recorded when no entry matches)." },
                        "time": { "type": "string", "description": "Author date, ISO 8601 with the author's offset (`git log --format=%aI`)." },
                        "subject": { "type": "string" },
                        "body": { "type": "string", "description": "When at most 5 lines were asked for: the message after its subject, blank lines left out, at most 5 lines and 400 bytes, so that why a line changed needs no second call. Absent otherwise, or when the message is its subject only." },
                        "bodyCut": { "type": "boolean", "description": "`body` stops before the message's end (`commit.details` has it whole). Absent means false." },
                        "boundary": { "type": "boolean", "description": "The commit has no parents as git sees them (a root commit, or a shallow clone's boundary), so blame stops there: git's `^` mark and porcelain `boundary` (none with blame.showRoot). Absent means false." }
                    }
                }
            },
            "ignoredRevs": { "type": "array", "items": { "type": "string" }, "description": "Revisions of the ignore lists that blame passed over for the shown lines, `<sha> <subject>`. Absent means none." },
            "ignoreRevsFiles": { "type": "array", "items": { "type": "string" }, "description": "The ignore-revs files read: the values of blame.ignoreRevsFile, else `.git-blame-ignore-revs` when present. Absent means none was read." },
            "truncated": { "type": "boolean", "description": "maxTokens left out ranges (counted in `omitted.ranges`); read on from endLine + 1 (startLine when endLine is absent). Absent means false." }
        }
    });
    FnTool {
        handler: call_blame,
        cache: Cache::Kept { reads: None, also: blame_files },
        definition: ToolDefinition {
            name: "file.blame",
            title: "Line authorship",
            description: "Who last changed each line of a file, as `git blame`: line ranges with their commit, author, date \
                and subject, and for a range of up to 5 lines the start of each commit's message. Without `rev`, the \
                work-tree file.",
            input_schema: schema::input(
                json!({
                    "repoPath": schema::repo_path(),
                    "path": file_path(),
                    "rev": { "type": "string", "minLength": 1, "maxLength": 1024,
                        "description": "The revision whose file is blamed (sha, branch, tag, `HEAD~2`, ...); never an option: a leading `-` is refused. Absent: the work-tree file on top of HEAD, as `git blame FILE` (read-only: the index is read, never refreshed); in a bare repository, HEAD." },
                    "startLine": line("First line, 1-based (default 1)."),
                    "endLine": line("Last line, 1-based inclusive (default: the last; larger values are clamped)."),
                    "ignoreRevs": { "type": "boolean", "default": true,
                        "description": "Skip the revisions of the ignore-revs files (blame.ignoreRevsFile, else .git-blame-ignore-revs), as git does." },
                    "maxTokens": schema::max_tokens(200, BLAME_MAX_TOKENS, BLAME_DEFAULT_TOKENS),
                    "format": schema::format(),
                }),
                &["repoPath", "path"],
            ),
            output_schema: schema::envelope(data),
            read_only: true,
        },
    }
}

/// For `file.blame`'s [`Cache::Kept::also`]: the content of the ignore-revs files and `mailmap.file`, which may lie
/// outside the watched repository ([`fluxgit_engine::Engine::blame_files_key`]).
pub(crate) fn blame_files(ctx: &CallContext<'_>, repo: &fluxgit_engine::Repo) -> String {
    ctx.engine.blame_files_key(repo)
}

fn call_blame(ctx: &CallContext<'_>, arguments: &Map<String, Value>) -> Result<ToolOutput, ProtocolError> {
    let args: BlameArgs = parse(arguments)?;
    let options = blame::Options { file: args.file.into(), ignore_revs: args.ignore_revs.unwrap_or(true) };
    let max_tokens = args.max_tokens.unwrap_or(BLAME_DEFAULT_TOKENS as usize);
    run_formatted(
        ctx,
        "file.blame",
        &args.repo_path,
        args.format,
        fluxgit_engine::render::file_blame,
        |repo, measure| ctx.engine.file_blame(repo, &options, max_tokens, measure),
    )
}
