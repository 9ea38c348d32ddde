//! What every tool handler shares: parsing validated arguments, the `format` argument, and running one engine read
//! inside the envelope ([`run`], [`run_formatted`]).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::envelope::Frame;
use crate::tools::{CallContext, ProtocolError, ToolOutput};

/// Deserialises validated arguments into a tool's argument struct.
pub(crate) fn parse<T: for<'de> Deserialize<'de>>(arguments: &Map<String, Value>) -> Result<T, ProtocolError> {
    serde_json::from_value(Value::Object(arguments.clone()))
        .map_err(|err| ProtocolError::invalid_params(format!("invalid arguments: {err}"), None))
}

/// How `content[0].text` renders a result (design.md#envelope `format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Format {
    /// The compact JSON envelope.
    #[default]
    Json,
    /// The engine's terse text rendering; `structuredContent` stays the JSON envelope.
    Text,
}

/// [`run`] for a tool that takes `format`: with [`Format::Text`] the budget is measured on, and `content[0].text`
/// carries, `render`'s text instead of the JSON envelope.
pub(crate) fn run_formatted<T: serde::Serialize>(
    ctx: &CallContext<'_>,
    tool: &'static str,
    repo_path: &str,
    format: Format,
    render: fn(&fluxgit_engine::Budgeted<T>, &fluxgit_engine::render::Options) -> String,
    read: impl FnOnce(
        &fluxgit_engine::Repo,
        &mut fluxgit_engine::Measure<'_, T>,
    ) -> fluxgit_engine::Result<fluxgit_engine::Budgeted<T>>,
) -> Result<ToolOutput, ProtocolError> {
    if format == Format::Json {
        return run(ctx, tool, repo_path, read);
    }
    let unresolved = Frame { tool, read_only: true, repo_path: None, resolved_from: None, source: "local-git" };
    let repo = match ctx.resolve(repo_path) {
        Ok(repo) => repo,
        Err(error) => return unresolved.engine_error(error),
    };
    let frame = Frame::local(tool, &repo.location);
    let options = repo.text_options();
    let render = |result: &fluxgit_engine::Budgeted<T>| render(result, &options);
    match read(&repo, &mut |candidate| fluxgit_engine::budget::measure_tokens(&render(candidate))) {
        Ok(result) => Ok(frame.text_rendering_output(render(&result), &result)),
        Err(error) => frame.engine_error(error),
    }
}

/// Resolves the repository, runs `read` with a measure over this tool's envelope, and maps errors.
pub(crate) fn run<T: serde::Serialize>(
    ctx: &CallContext<'_>,
    tool: &'static str,
    repo_path: &str,
    read: impl FnOnce(
        &fluxgit_engine::Repo,
        &mut fluxgit_engine::Measure<'_, T>,
    ) -> fluxgit_engine::Result<fluxgit_engine::Budgeted<T>>,
) -> Result<ToolOutput, ProtocolError> {
    let unresolved = Frame { tool, read_only: true, repo_path: None, resolved_from: None, source: "local-git" };
    let repo = match ctx.resolve(repo_path) {
        Ok(repo) => repo,
        Err(error) => return unresolved.engine_error(error),
    };
    let frame = Frame::local(tool, &repo.location);
    match read(&repo, &mut |candidate| frame.measure(candidate)) {
        Ok(result) => Ok(frame.output(&result)),
        Err(error) => frame.engine_error(error),
    }
}
