//! Text renderings of `repo.history` and `repo.reflog`.

use super::{Lines, Options, esc};
use crate::budget::Budgeted;
use crate::history::Page;
use crate::reflog::Report;

/// `repo.history`: one line per commit, `sha date author: subject` (`merge p1 p2` for merges,
/// `root` for root commits), then the cut notice and `next cursor <cursor>`. With `symbol`: the
/// head names it (`fn Flags::new, lines 12-40 at the tip`), and each commit's line ends with the
/// hunks that touched it (`hunks -12,2 +12,3`, git's hunk header numbers) and, when the file had
/// another path then, `in <path>`.
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
    if let Some(symbol) = &page.symbol {
        head.push_str(&format!(
            ": {} {}, lines {} at the tip (hunks: git's -old,count +new,count)",
            symbol.kind.label(),
            esc(&symbol.name),
            symbol.lines
        ));
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
        let mut line = format!("{} {date} {author}: {subject}{shape}", commit.sha);
        if !commit.hunks.is_empty() {
            line.push_str(&format!(" hunks {}", commit.hunks.join(" ")));
        }
        if let Some(path) = &commit.path {
            line.push_str(&format!(" in {}", options.path(path)));
        }
        out.line(line);
    }
    out.more(&result.omitted, "commits", "commits on the next page");
    if let Some(cursor) = &page.next_cursor {
        out.line(format!("next cursor {}", esc(cursor)));
    }
    out.finish()
}

/// `repo.reflog`: `git reflog`'s lines (`abc1234 HEAD@{0}: commit: message`), each followed by who
/// moved the ref and when in parentheses, said only where they change from the line above: the
/// identity when it differs, the date (`2026-08-20 07:08Z`, minutes and the recorded offset) when
/// the day or offset differs, else the time of day alone (`07:06`). Under a movement that dropped
/// commits, `lost N commits <sha> <sha> ... and M more: <recovery>`, the commits newest first (the
/// lost tip first), the recovery's full shas written as the abbreviated lost tip.
pub fn reflog(result: &Budgeted<Report>, _options: &Options) -> String {
    let report = &result.data;
    let mut out = Lines::default();
    out.line(format!("# {} ({} movements)", esc(&report.ref_name), report.total));
    let name = esc(report.ref_name.strip_prefix("refs/heads/").unwrap_or(&report.ref_name));
    let mut last: Option<(&str, &str, &str)> = None;
    for entry in &report.entries {
        let sha = entry.new_sha.as_deref().unwrap_or("0000000");
        let message = if entry.message.is_empty() {
            entry.action.clone()
        } else {
            format!("{}: {}", entry.action, entry.message)
        };
        let (day, clock, zone) = split_time(&entry.time);
        let identity = entry.identity.name.as_str();
        let mut when = Vec::new();
        if last.is_none_or(|(previous, _, _)| previous != identity) {
            when.push(esc(identity).into_owned());
        }
        if last.is_some_and(|(_, previous_day, previous_zone)| (previous_day, previous_zone) == (day, zone)) {
            when.push(esc(clock).into_owned());
        } else {
            when.push(esc(format!("{day} {clock}{zone}").trim()).into_owned());
        }
        last = Some((identity, day, zone));
        out.line(format!("{sha} {name}@{{{}}}: {} ({})", entry.index, esc(&message), when.join(", ")));
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
            let next = esc(&abbreviate_full(&next, &recovery.lost_tip)).into_owned();
            let mut named = recovery.commits.iter().map(|sha| esc(sha).into_owned()).collect::<Vec<_>>().join(" ");
            if named.is_empty() {
                named = esc(&recovery.lost_tip).into_owned();
            }
            let more = recovery.lost_commits.saturating_sub(recovery.commits.len().max(1));
            if more > 0 {
                named.push_str(&format!(" and {more}{capped} more"));
            }
            let count = recovery.lost_commits;
            let noun = if count == 1 { "commit" } else { "commits" };
            out.line(format!("  lost {count}{capped} {noun} {named}: {next}"));
        }
    }
    out.more(&result.omitted, "entries", "movements");
    out.finish()
}

/// An ISO 8601 time (`2026-08-20T07:08:24Z`, `...+02:00`) as its day, its clock to the minute and
/// its offset (`2026-08-20`, `07:08`, `Z`); a time of another shape is all clock.
fn split_time(time: &str) -> (&str, &str, &str) {
    match (time.get(..10), time.get(11..16), time.get(19..)) {
        (Some(day), Some(clock), Some(zone)) if time.as_bytes().get(10) == Some(&b'T') => (day, clock, zone),
        _ => ("", time, ""),
    }
}

/// `text` with each full 40- or 64-digit hex sha that begins with `short` (a word, or a `key=`
/// word's value) written as `short`: an unambiguous abbreviation, which git and the proposal tools
/// accept.
fn abbreviate_full(text: &str, short: &str) -> String {
    text.split(' ')
        .map(|word| {
            let (key, value) = word.rsplit_once('=').map_or(("", word), |(key, value)| (key, value));
            let full = matches!(value.len(), 40 | 64) && value.bytes().all(|byte| byte.is_ascii_hexdigit());
            match (full && value.starts_with(short), key) {
                (true, "") => short.to_owned(),
                (true, key) => format!("{key}={short}"),
                (false, _) => word.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
