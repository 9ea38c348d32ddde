//! Text renderings of `fleet.radar` and `fleet.digest`.

use super::{Lines, Options, esc};
use crate::budget::Budgeted;
use crate::fleet::digest::Digest;
use crate::fleet::radar::{Radar, State};

/// `fleet.radar`: a count line (`12 repositories: 1 conflicts, 2 dirty, 9 clean`, states in rank
/// order, zero counts left out, `(registry)` when the registry chose them), a
/// `scanned <folder>: N checkouts within D levels` line per folder read as the checkouts below it
/// (`, stopped at a bound` when one stopped it), the hint when there was nothing to read, then the
/// attention queue one repository a line (`<state> <repoPath> [label]: <reason>`), the clean ones
/// on one line per reason (`clean on main, up to date with origin/main: a, b (2 stashes)`), and
/// `... N more repositories` when the budget or `maxRepos` cut it. When every listed repository
/// lies in one folder below the root, the count line names it (`under /src`) and each repository is
/// named by its path below it. Repository paths are quoted as git quotes paths.
pub fn fleet_radar(result: &Budgeted<Radar>, options: &Options) -> String {
    let radar = &result.data;
    let counts = &radar.counts;
    let by_state = [
        (State::Error, counts.error),
        (State::Conflicts, counts.conflicts),
        (State::Operation, counts.operation),
        (State::Detached, counts.detached),
        (State::Behind, counts.behind),
        (State::Dirty, counts.dirty),
        (State::Unpushed, counts.unpushed),
        (State::Stale, counts.stale),
        (State::Clean, counts.clean),
    ];
    let parts: Vec<String> =
        by_state.iter().filter(|(_, n)| *n > 0).map(|(state, n)| format!("{n} {}", state_name(*state))).collect();
    let mut out = Lines::default();
    let from = if radar.from_registry { " (registry)" } else { "" };
    let counted = if parts.is_empty() { String::new() } else { format!(": {}", parts.join(", ")) };
    let base = common_folder(&radar.queue);
    // A folder's scan line names it already.
    let scanned_base = matches!(radar.scanned.as_slice(), [only] if Some(only.path.as_str()) == base);
    let under = base.filter(|_| !scanned_base).map(|base| format!(" under {}", options.path(base))).unwrap_or_default();
    out.line(format!("{} repositories{from}{under}{counted}", radar.repositories));
    for scanned in &radar.scanned {
        let stopped = if scanned.stopped { ", stopped at a bound" } else { "" };
        let noun = if scanned.found == 1 { "checkout" } else { "checkouts" };
        out.line(format!(
            "scanned {}: {} {noun} within {} levels{stopped}",
            options.path(&scanned.path),
            scanned.found,
            scanned.depth
        ));
    }
    if let Some(hint) = &radar.hint {
        out.line(hint.clone());
    }
    let name = |entry: &crate::fleet::radar::Entry| {
        let path = base
            .and_then(|base| entry.repo_path.strip_prefix(base))
            .and_then(|rest| rest.strip_prefix('/'))
            .unwrap_or(&entry.repo_path);
        let label = entry.label.as_ref().map(|label| format!(" [{}]", esc(label))).unwrap_or_default();
        format!("{}{label}", options.path(path))
    };
    // Clean checkouts share a line per reason, their stash entries after their names.
    let mut clean: Vec<(String, Vec<String>)> = Vec::new();
    for entry in &radar.queue {
        if entry.state != State::Clean {
            out.line(format!("{} {}: {}", state_name(entry.state), name(entry), esc(&entry.reason)));
            continue;
        }
        let (reason, stashes) = match entry.reason.rsplit_once(", ") {
            Some((reason, note)) if note.ends_with(" stash") || note.ends_with(" stashes") => (reason, Some(note)),
            _ => (entry.reason.as_str(), None),
        };
        let named = match stashes {
            Some(note) => format!("{} ({})", name(entry), esc(note)),
            None => name(entry),
        };
        match clean.iter_mut().find(|(shared, _)| shared == reason) {
            Some((_, names)) => names.push(named),
            None => clean.push((reason.to_owned(), vec![named])),
        }
    }
    for (reason, names) in clean {
        let reason =
            if reason.starts_with("clean") { esc(&reason).into_owned() } else { format!("clean {}", esc(&reason)) };
        out.line(format!("{reason}: {}", names.join(", ")));
    }
    out.more(&result.omitted, "queue", "repositories");
    out.finish()
}

/// The folder every queued repository lies in, below the root, when there are two or more: the text
/// names it once and each repository by its path below it.
fn common_folder(queue: &[crate::fleet::radar::Entry]) -> Option<&str> {
    let (first, rest) = queue.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let mut base = first.repo_path.rsplit_once('/')?.0;
    for entry in rest {
        while !entry.repo_path.strip_prefix(base).is_some_and(|tail| tail.starts_with('/')) {
            base = base.rsplit_once('/')?.0;
        }
    }
    (!base.is_empty()).then_some(base)
}

/// `fleet.digest`: a count line (`5 movements in 3 repositories`), then one movement a line, newest
/// first, like `git reflog`:
/// `<at> <repoPath> <ref>[+HEAD] <old>..<new> [rewrote] <identity>: <message>` (`0000000` for a
/// created or deleted side), `... N more movements` for a cut, and
/// `unreadable <repoPath>: <reason>` lines.
pub fn fleet_digest(result: &Budgeted<Digest>, options: &Options) -> String {
    let digest = &result.data;
    let mut out = Lines::default();
    let from = if digest.from_registry { " (registry)" } else { "" };
    out.line(format!("{} movements in {} repositories{from}", digest.total, digest.repositories));
    for event in &digest.events {
        let head = if event.head { "+HEAD" } else { "" };
        let old = event.old.as_deref().unwrap_or("0000000");
        let new = event.new.as_deref().unwrap_or("0000000");
        let rewrote = if event.rewrote { " rewrote" } else { "" };
        out.line(format!(
            "{} {} {}{head} {old}..{new}{rewrote} {}: {}",
            event.at,
            options.path(&event.repo_path),
            esc(&event.ref_name),
            esc(&event.identity),
            esc(&event.message)
        ));
    }
    // `total` is exact: what `maxEvents` left out and what the budget cut (`omitted.events`) are both in it.
    let more = digest.total.saturating_sub(digest.events.len());
    if more > 0 {
        out.line(format!("... {more} more movements"));
    }
    for unreadable in &digest.unreadable {
        out.line(format!("unreadable {}: {}", options.path(&unreadable.repo_path), esc(&unreadable.error.reason)));
    }
    out.finish()
}

/// The JSON names of [`State`].
fn state_name(state: State) -> &'static str {
    match state {
        State::Error => "error",
        State::Conflicts => "conflicts",
        State::Operation => "operation",
        State::Detached => "detached",
        State::Behind => "behind",
        State::Dirty => "dirty",
        State::Unpushed => "unpushed",
        State::Stale => "stale",
        State::Clean => "clean",
    }
}
