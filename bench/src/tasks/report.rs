//! The benchmark's report: the per-task table, its BENCHMARK.md section and the raw results.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;

use serde_json::{Value, json};

use super::TaskRun;

/// The per-task table, the totals and the missing facts, as Markdown.
pub(crate) fn table(runs: &[TaskRun]) -> String {
    let mut out = String::new();
    out.push_str(
        "| task | repository | facts ours | facts git | calls ours | commands git | tokens ours | tokens git | ours / git |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let (mut facts, mut found_ours, mut found_git, mut calls, mut commands, mut tokens_ours, mut tokens_git) =
        (0, 0, 0, 0, 0, 0, 0);
    for run in runs {
        let (ours, git) = run.found();
        let (t_ours, t_git) = run.tokens();
        let _ = writeln!(
            out,
            "| {} | {} | {ours}/{n} | {git}/{n} | {} | {} | {} | {} | {} |",
            run.task,
            run.source,
            run.ours.len(),
            run.git.len(),
            thousands(t_ours),
            thousands(t_git),
            ratio(t_ours, t_git),
            n = run.facts.len(),
        );
        facts += run.facts.len();
        found_ours += ours;
        found_git += git;
        calls += run.ours.len();
        commands += run.git.len();
        tokens_ours += t_ours;
        tokens_git += t_git;
    }
    let _ = writeln!(
        out,
        "| **total** | | **{found_ours}/{facts}** | **{found_git}/{facts}** | **{calls}** | **{commands}** | **{}** | **{}** | **{}** |",
        thousands(tokens_ours),
        thousands(tokens_git),
        ratio(tokens_ours, tokens_git),
    );
    let missing: Vec<String> = runs
        .iter()
        .flat_map(|run| {
            run.facts.iter().filter(|fact| !fact.ours || !fact.git).map(move |fact| {
                let sides = match (fact.ours, fact.git) {
                    (false, false) => "both",
                    (false, true) => "ours",
                    _ => "git",
                };
                format!("- {}: {} (`{}`), missed by {sides}", run.task, fact.fact.name, fact.value)
            })
        })
        .collect();
    out.push('\n');
    if missing.is_empty() {
        out.push_str("Every fact found on both sides.\n");
    } else {
        let _ = writeln!(out, "Missing facts ({}):\n", missing.len());
        for line in missing {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// The `## Agent tasks` section of `BENCHMARK.md`: how it was run, the table (`table`), then per task what each side
/// ran and read.
pub(crate) fn section(runs: &[TaskRun], meta: &Value, table: &str) -> String {
    let mut out = String::from("## Agent tasks\n\n");
    out.push_str(
        "Issues 35 and 52: nine everyday tasks re-created on clones of real repositories at pinned commits, each scenario \
         made by deterministic git commands (fixed identities and dates) on a fresh copy. Ours is the scripted path: \
         `repo_brief` (text), the first hint the text shows, called with its arguments, then at most one \
         task-specific call (below, with why), made only when what was read still misses a fact (an agent with \
         its answer stops). Git is the expert's commands, one terminal call each. Tokens are \
         o200k_base of every text read (answers' `content[0].text`; commands' stdout and stderr). A fact is found \
         when its oracle value (from the git CLI) appears in what the side read, whitespace normalised (a command \
         git never prints, `git rebase --onto`, counts as known to the expert); `bench/results/tasks/tasks.json` \
         has every fact, call and command, and `bench/results/tasks/<task>/` the exact texts read.\n\n",
    );
    let pins: Vec<String> = meta["pins"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|pin| {
            format!(
                "{} `{}`",
                pin["repository"].as_str().unwrap_or_default(),
                &pin["commit"].as_str().unwrap_or_default()[..12.min(pin["commit"].as_str().unwrap_or_default().len())]
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "Run {} on fluxgit `{}` with {}; sources pinned at {}:\n\n```\n{}\n```\n",
        meta["date"].as_str().unwrap_or_default(),
        meta["fluxgit"].as_str().unwrap_or_default(),
        meta["git"].as_str().unwrap_or_default(),
        pins.join(", "),
        meta["command"].as_str().unwrap_or_default(),
    );
    out.push_str(table);
    out.push_str("\n### What each side ran\n\n");
    for run in runs {
        let _ = writeln!(out, "- **{}** ({}): {}", run.task, run.source, run.situation);
        let calls: Vec<String> = run
            .ours
            .iter()
            .map(|call| {
                let mut arguments = call.arguments.clone();
                if let Some(object) = arguments.as_object_mut() {
                    object.remove("repoPath");
                    object.remove("format");
                }
                format!("`{} {}` {}", call.tool, arguments, call.tokens.o200k)
            })
            .collect();
        let _ = writeln!(out, "  - ours: {}; task call: {}", calls.join(", "), run.extra_why);
        let commands: Vec<String> =
            run.git.iter().map(|command| format!("`{}` {}", command.command, command.tokens.o200k)).collect();
        let _ = writeln!(out, "  - git: {}", commands.join(", "));
    }
    out.push('\n');
    out
}

fn thousands(value: usize) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (idx, c) in digits.chars().enumerate() {
        if idx > 0 && (digits.len() - idx).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ratio(ours: usize, git: usize) -> String {
    if git == 0 { "-".to_owned() } else { format!("{:.2}x", ours as f64 / git as f64) }
}

/// Writes `<dir>/tasks.json` (every task's facts, calls and commands with tokens) and, per task,
/// `<dir>/<task>/ours/NN-<tool>.txt` and `<dir>/<task>/git/NN.txt` (the exact texts read), replacing what was there.
pub(crate) fn write_results(dir: &Path, runs: &[TaskRun], meta: &Value) -> anyhow::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir)?;
    for run in runs {
        let ours_dir = dir.join(run.task).join("ours");
        let git_dir = dir.join(run.task).join("git");
        std::fs::create_dir_all(&ours_dir)?;
        std::fs::create_dir_all(&git_dir)?;
        for (idx, call) in run.ours.iter().enumerate() {
            std::fs::write(ours_dir.join(format!("{:02}-{}.txt", idx + 1, call.tool)), &call.text)?;
        }
        let mut script =
            String::from("#!/bin/sh\n# The expert's commands, run in the task's checkout (or the fleet's folder).\n");
        for (idx, command) in run.git.iter().enumerate() {
            std::fs::write(git_dir.join(format!("{:02}.txt", idx + 1)), &command.output)?;
            script.push_str(&command.command);
            script.push('\n');
        }
        std::fs::write(git_dir.join("commands.sh"), script)?;
    }
    let value = json!({ "run": meta, "tasks": runs });
    std::fs::write(dir.join("tasks.json"), serde_json::to_string_pretty(&value)? + "\n")?;
    Ok(())
}
