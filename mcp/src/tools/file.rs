//! The `file.*` tool family (ours): `file.read`. Each handler maps arguments to one engine call and wraps the
//! result in the envelope.

use fluxgit_engine::file::read;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::tools::repo::{Format, parse, run_formatted};
use crate::tools::schema;
use crate::tools::{CallContext, FnTool, ProtocolError, ToolDefinition, ToolOutput};

/// `file.read`'s default budget in tokens: about 30 KiB of source.
pub const READ_DEFAULT_TOKENS: u64 = 8000;
/// `file.read`'s largest budget in tokens (about 1 MiB of content, the `maxBytes` bound, does not fit less).
pub const READ_MAX_TOKENS: u64 = 400_000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadArgs {
    repo_path: String,
    path: String,
    rev: Option<String>,
    start_line: Option<usize>,
    end_line: Option<usize>,
    max_bytes: Option<usize>,
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
            "rev": { "type": "string", "description": "Full sha of the commit `rev` resolved to." },
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
        definition: ToolDefinition {
            name: "file.read",
            title: "File at a revision",
            description: "A file's content at a revision, byte for byte as `git show rev:path`: mode, blob sha, size \
            and total line count, with the lines startLine..endLine (default: all). UTF-8 text is in `content`; text \
            that is not UTF-8 is in `contentBase64` (`nonUtf8: true`); binary files (`binary: true`) carry no \
            content. Cut at whole lines by the tightest of maxBytes and maxTokens: `truncated`, `endLine` (the last \
            line shown) and `omitted.lines` say so; ask again from endLine + 1. `format: \"text\"` gives a header line \
            and the content as is. A path absent at the revision is \
            invalid params `not_found`, a directory or submodule `not_a_file`, endLine < startLine or a start past \
            the end `invalid_range`. No filters or attributes are applied.",
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
    let options = read::Options {
        path: args.path,
        rev: args.rev,
        start_line: args.start_line,
        end_line: args.end_line,
        max_bytes: args.max_bytes.unwrap_or(read::DEFAULT_MAX_BYTES),
    };
    let max_tokens = args.max_tokens.unwrap_or(READ_DEFAULT_TOKENS as usize);
    run_formatted(ctx, "file.read", &args.repo_path, args.format, fluxgit_engine::text::file_read, |repo, measure| {
        ctx.engine.file_read(repo, &options, max_tokens, measure)
    })
}
