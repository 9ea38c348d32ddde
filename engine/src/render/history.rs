//! Text renderings of `repo.history` and `repo.reflog`.

use super::{Lines, Options, esc};
use crate::budget::Budgeted;
use crate::history::Page;
use crate::reflog::Report;

/// `repo.history`: one line per commit, `sha date author: subject` (`merge p1 p2` for merges, `root` for root
/// commits), then the cut notice and `next cursor <cursor>`.
pub fn history(result: &Budgeted<Page>, options: &Options) -> String {
    let page = &result.data;
    let mut out = Lines::default();
    let mut head = format!("# {}", esc(&page.start));
    if let Some(tip) = &page.tip {
        head.push_str(&format!(" at {}", esc(tip)));
    }
    if let Some(path) = &page.path {
        head.push_str(&format!(" -- {}", options.path(path)));
    }
    out.line(head);
    for commit in &page.commits {
        let date = commit.time.get(..10).unwrap_or(&commit.time);
        let shape = match commit.parents.len() {
            0 => " (root)".to_owned(),
            1 => String::new(),
            _ => format!(" (merge {})", commit.parents.join(" ")),
        };
        let (date, author, subject) = (esc(date), esc(&commit.author.name), esc(&commit.subject));
        out.line(format!("{} {date} {author}: {subject}{shape}", commit.sha));
    }
    out.more(&result.omitted, "commits", "commits on the next page");
    if let Some(cursor) = &page.next_cursor {
        out.line(format!("next cursor {}", esc(cursor)));
    }
    out.finish()
}

/// `repo.reflog`: `git reflog`'s lines (`abc1234 HEAD@{0}: commit: message`, time and identity after), with
/// `lost N commits at sha: recover with tool args` under a movement that dropped commits.
pub fn reflog(result: &Budgeted<Report>, _options: &Options) -> String {
    let report = &result.data;
    let mut out = Lines::default();
    out.line(format!("# {} ({} movements)", esc(&report.ref_name), report.total));
    let name = esc(report.ref_name.strip_prefix("refs/heads/").unwrap_or(&report.ref_name));
    for entry in &report.entries {
        let sha = entry.new_sha.as_deref().unwrap_or("0000000");
        let message = if entry.message.is_empty() {
            entry.action.clone()
        } else {
            format!("{}: {}", entry.action, entry.message)
        };
        let (message, time, identity) = (esc(&message), esc(&entry.time), esc(&entry.identity.name));
        out.line(format!("{sha} {name}@{{{}}}: {message} ({time}, {identity})", entry.index));
        if let Some(recovery) = &entry.recovery {
            let capped = if recovery.lost_commits_capped { "+" } else { "" };
            let arguments: Vec<String> = recovery
                .arguments
                .as_ref()
                .and_then(serde_json::Value::as_object)
                .into_iter()
                .flatten()
                .map(|(key, value)| {
                    format!("{key}={}", value.as_str().map_or_else(|| value.to_string(), str::to_owned))
                })
                .collect();
            let next = match (&recovery.command, recovery.tool) {
                (Some(command), _) => command.clone(),
                (None, tool) => format!("{} {}", tool.unwrap_or_default(), arguments.join(" ")),
            };
            let next = esc(&next);
            out.line(format!("  lost {}{capped} commits at {}: {next}", recovery.lost_commits, recovery.lost_tip));
        }
    }
    out.more(&result.omitted, "entries", "movements");
    out.finish()
}
