//! Text renderings of `repo.brief`, `repo.status` and `repo.refs`.

use super::{
    BranchLine, Lines, Options, Tracking, change_letter, change_lists, change_path, esc, short, unreadable_lines,
    upstream_marks,
};
use std::borrow::Cow;

use crate::brief::{Brief, FewChanges};
use crate::budget::Budgeted;
use crate::facets::worktree::Counts;
use crate::{refs, status};

/// `repo.brief`, as terse as the facts allow (an agent reads it beside
/// `git status -sb; git log --oneline`): the `##` branch line (`## HEAD (no branch)` when detached,
/// as `git status -sb`, the first commit line being HEAD), the operation (a rebase with what it
/// replays onto, and in its `theirs` line which side is ours), the work tree (`clean`, a
/// few entries as `git status --short` lines, see [`FewChanges`], else counts), stashes, the
/// submodules needing attention in `git submodule status` marks (`submodules_line`), `sha subject`
/// lines, then one `-> tool arg=value: why` line per hint. Conventions, a hint's `run` (the git
/// commands a person would run) and a hint whose whole content the text already states
/// ([`crate::brief::Hint::stated_by`], e.g. `-> submodule.status` beside a submodules line naming
/// every submodule needing attention) are left to the JSON (`structuredContent`).
pub fn brief(result: &Budgeted<Brief>, options: &Options) -> String {
    let brief = &result.data;
    let head = &brief.head;
    let mut out = Lines::default();
    let shows_head = !brief.recent_commits.is_empty();
    let branch_line = BranchLine {
        branch: head.branch.as_deref(),
        detached: head.detached,
        unborn: head.unborn,
        sha: head.sha.as_deref(),
        upstream: head.upstream.as_deref().map(|name| Tracking {
            name,
            ahead: head.ahead,
            behind: head.behind,
            gone: head.upstream_gone,
        }),
    };
    match (head.detached, shows_head) {
        (true, true) => out.line("## HEAD (no branch)"),
        _ => out.line(branch_line.render()),
    }
    // A stopped operation's progress, as `conflict.read` counts it, ends its line.
    let progress = brief.conflict.as_ref().map(super::conflict::progress).unwrap_or_default();
    match (brief.operation_in_progress, brief.conflict.as_ref().and_then(|read| read.operation)) {
        (Some(operation), _) => {
            let mut line = operation_line(operation.name(), head.rebasing.as_deref().map(esc).as_deref());
            if let Some(onto) = &head.onto {
                line.push_str(&format!(" onto {}", esc(onto)));
            }
            out.line(line + &progress);
        }
        (None, Some(activity)) => {
            out.line(format!("{} in progress{progress}", super::conflict::activity_name(activity)));
        }
        (None, None) => {}
    }
    // A drifted submodule the short status lists says so there, in git's words (`git status`: `(new commits)`).
    let drifted: Vec<&str> =
        brief.submodules.attention.iter().filter_map(|entry| entry.strip_suffix(" (drifted)")).collect();
    let listed = match &brief.changes {
        Some(changes) => short_status(&mut out, options, changes, &drifted),
        None => {
            out.line(counts_line(&brief.working_tree));
            Vec::new()
        }
    };
    if brief.stashes.count > 0 {
        out.line(format!("stashes {}", brief.stashes.count));
    }
    if let Some(parallel) = &brief.parallel {
        out.line(parallel_line(parallel));
    }
    if brief.submodules.total > 0 {
        if let Some(line) = submodules_line(&brief.submodules, &listed, options) {
            out.line(line);
        }
        out.more(&result.omitted, "submoduleAttention", "submodules needing attention");
    }
    // The first recent commit is HEAD; without one shown, HEAD's sha gets its own line.
    if !shows_head && let (Some(sha), false) = (&head.sha, head.detached) {
        out.line(format!("HEAD {sha}"));
    }
    for commit in &brief.recent_commits {
        out.line(esc(&commit.oneline()));
    }
    out.more(&result.omitted, "recentCommits", "commits");
    answers(&mut out, result, options);
    // A hint whose whole content a section shown uncut already states is left to the JSON.
    let stated = |section: Option<&str>| section.is_some_and(|section| super::cut(&result.omitted, section) == 0);
    for hint in brief.hints.iter().filter(|hint| !stated(hint.stated_by)) {
        let mut line = format!("-> {}", hint.tool);
        for (key, value) in &hint.arguments {
            match value.as_str() {
                Some(text) => line.push_str(&format!(" {}={}", esc(key), options.path(text))),
                None => line.push_str(&format!(" {}={}", esc(key), esc(&value.to_string()))),
            }
        }
        if !hint.why.is_empty() {
            line.push_str(": ");
            line.push_str(&esc(&hint.why));
        }
        out.line(line);
    }
    out.more(&result.omitted, "hints", "hints");
    out.finish()
}

/// The brief's parallel-work line, e.g. `parallel 3 lines: 1 conflicting, 2 overlapping (agent1 x
/// agent2: src/lib.rs)`, or `parallel 3 lines` when nothing collides.
fn parallel_line(parallel: &crate::brief::Parallel) -> String {
    let mut line = format!("parallel {} lines", parallel.lines);
    if parallel.overlapping > 0 {
        line.push_str(&format!(": {} conflicting, {} overlapping", parallel.conflicting, parallel.overlapping));
    }
    if let Some(first) = &parallel.first {
        line.push_str(&format!(" ({})", esc(first)));
    }
    line
}

/// What the brief answers itself (`crate::brief::answers`): the conflict (how to conclude and
/// abort, the commit that produced the other side, the commits still to replay that touch it, its
/// regions), the lost commits with their recovery, the rebased parent with its `git rebase --onto`,
/// and the owners of the changed paths, each followed by its cut notice.
fn answers(out: &mut Lines, result: &Budgeted<Brief>, options: &Options) {
    let brief = &result.data;
    if let Some(read) = &brief.conflict {
        if let Some(conclude) = read.conclude {
            out.line(format!("conclude: {conclude}"));
        }
        if let Some(abort) = read.abort {
            out.line(format!("abort: {abort}"));
        }
        if let Some(theirs) = &read.theirs {
            let mut line = format!("theirs {} {} ({})", short(&theirs.sha), esc(&theirs.subject), esc(&theirs.role));
            // A rebase turns the sides around: ours is the new base, theirs the branch's own commit.
            if read.operation == Some(crate::conflict::state::Activity::Rebase)
                && let Some(ours) = &read.ours
            {
                line.push_str(&format!("; ours {} ({})", short(&ours.sha), esc(&ours.role)));
            }
            out.line(line);
        }
        super::conflict::upcoming(out, read, options);
        super::conflict::regions(out, read, options);
    }
    out.more(&result.omitted, "conflictRegions", "marker regions");
    for lost in &brief.lost {
        let count = lost.commits.len() + lost.more;
        out.line(format!(
            "{} lost {count} commit{} ({}) no ref holds: {}",
            esc(&lost.branch),
            if count == 1 { "" } else { "s" },
            esc(&lost.action),
            esc(&lost.command)
        ));
        for commit in &lost.commits {
            out.line(format!("  {}", esc(commit)));
        }
        if lost.more > 0 {
            out.line(format!("  ... {} more", lost.more));
        }
    }
    out.more(&result.omitted, "lost", "movements that lost commits");
    if let Some(moved) = &brief.parent_moved {
        super::branch_stack::parent_moved(out, moved);
    }
    for group in &brief.owners {
        let who = if group.owners.is_empty() {
            "unowned".to_owned()
        } else {
            format!("owners {}", esc(&group.owners.join(" ")))
        };
        let mut line =
            format!("{who}: {}", group.files.iter().map(|file| options.path(file)).collect::<Vec<_>>().join(" "));
        if group.more > 0 {
            line.push_str(&format!(" +{} more", group.more));
        }
        out.line(line);
    }
    out.more(&result.omitted, "owners", "owner groups");
}

/// `repo.brief` on a folder of checkouts (`crate::brief::folder`): the radar's text for the folder.
pub fn folder_brief(result: &Budgeted<crate::brief::folder::FolderBrief>, options: &Options) -> String {
    let radar = Budgeted { data: result.data.fleet.clone(), omitted: result.omitted.clone() };
    super::fleet_radar(&radar, options)
}

/// The few entries of a work tree as `git status --short` lists them (`UU path`, `X  path`,
/// ` Y path`, `?? path`), an unstaged submodule in `drifted` (checked out at another commit than
/// recorded) followed by ` (new commits)`, as `git status` says it. Returns the drifted submodules
/// so listed.
fn short_status<'a>(out: &mut Lines, options: &Options, changes: &FewChanges, drifted: &[&'a str]) -> Vec<&'a str> {
    let mut listed = Vec::new();
    for path in &changes.conflicted {
        out.line(format!("UU {}", options.status_path(path)));
    }
    for change in &changes.staged {
        out.line(format!("{}  {}", change_letter(change.status), change_path(change, options)));
    }
    for change in &changes.unstaged {
        let mut line = format!(" {} {}", change_letter(change.status), change_path(change, options));
        if let Some(submodule) = drifted.iter().find(|path| **path == change.path && change.from.is_none()) {
            line.push_str(" (new commits)");
            listed.push(*submodule);
        }
        out.line(line);
    }
    for path in &changes.untracked {
        out.line(format!("?? {}", options.status_path(path)));
    }
    listed
}

/// The submodules in `git submodule status` marks: `+path` checked out at another commit than
/// recorded, `-path` not initialised, `Upath` in conflict, on one line, without those the short
/// status already lists as `(new commits)` (`listed`); the clean ones and the total are left to the
/// JSON. `submodules 3` when every one is clean. When the list is cut (`attentionTruncated`), or
/// names an unreadable one, the total and exact counts come first:
/// `submodules 40 (drifted 12, uninitialized 3): +a -b` (a budget's cut is stated on the next
/// line). `None` when nothing is left to say. Paths are quoted as git's name lists quote them.
fn submodules_line(
    submodules: &crate::facets::submodules::Summary,
    listed: &[&str],
    options: &Options,
) -> Option<String> {
    let marked = |entry: &str| -> Option<String> {
        let (path, state) = entry.rsplit_once(" (")?;
        let mark = match state.trim_end_matches(')') {
            "drifted" => '+',
            "uninitialized" => '-',
            "conflict" => 'U',
            _ => return None,
        };
        Some(format!("{mark}{}", options.path(path)))
    };
    // An entry without a mark (`libs/a (unreadable)`) keeps its state after the quoted path.
    let unmarked = |entry: &str| match entry.rsplit_once(" (") {
        Some((path, state)) => format!("{} ({}", options.path(path), esc(state)),
        None => options.path(entry),
    };
    let every_marked = submodules.attention.iter().all(|entry| marked(entry).is_some());
    if submodules.attention.is_empty() || submodules.attention_truncated || !every_marked {
        let mut line = format!("submodules {}", submodules.total);
        if submodules.attention_truncated {
            let counts = [
                ("clean", submodules.clean),
                ("drifted", submodules.drifted),
                ("uninitialized", submodules.uninitialized),
                ("conflicts", submodules.conflicts),
                ("unreadable", submodules.unreadable),
            ];
            let counts: Vec<String> =
                counts.iter().filter(|(_, count)| *count > 0).map(|(name, count)| format!("{name} {count}")).collect();
            line.push_str(&format!(" ({})", counts.join(", ")));
        }
        if !submodules.attention.is_empty() {
            line.push(':');
            for entry in &submodules.attention {
                line.push(' ');
                line.push_str(&marked(entry).unwrap_or_else(|| unmarked(entry)));
            }
        }
        return Some(line);
    }
    let marks: Vec<String> = submodules
        .attention
        .iter()
        .filter(|entry| !entry.strip_suffix(" (drifted)").is_some_and(|path| listed.contains(&path)))
        .filter_map(|entry| marked(entry))
        .collect();
    (!marks.is_empty()).then(|| marks.join(" "))
}

/// `rebase in progress (rebasing feature/parser)`; the brief adds ` onto 1568876 main`.
fn operation_line(name: &str, rebasing: Option<&str>) -> String {
    match rebasing {
        Some(branch) => format!("{name} in progress (rebasing {branch})"),
        None => format!("{name} in progress"),
    }
}

/// `clean`, `bare`, or `staged 2, unstaged 1, untracked 3, conflicted 1` (zero counts left out).
fn counts_line(counts: &Counts) -> String {
    if counts.bare {
        return "bare".to_owned();
    }
    if counts.clean {
        return "clean".to_owned();
    }
    let parts = [
        ("staged", counts.staged),
        ("unstaged", counts.unstaged),
        ("untracked", counts.untracked),
        ("conflicted", counts.conflicted),
    ];
    parts
        .iter()
        .filter(|(_, count)| *count > 0)
        .map(|(name, count)| format!("{name} {count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `repo.status`: the `##` branch line and `HEAD <sha>`, the operation, then porcelain-like lines:
/// `UU path` (conflicted), `X  path` (staged), ` Y path` (unstaged), `?? path` (untracked), or
/// `clean`, then one `unreadable path: reason` line per item it could not read.
pub fn status(result: &Budgeted<status::Report>, options: &Options) -> String {
    let report = &result.data;
    let head = &report.head;
    let mut out = Lines::default();
    out.line(
        BranchLine {
            branch: head.branch.as_deref(),
            detached: head.detached,
            unborn: head.unborn,
            sha: head.sha.as_deref(),
            upstream: report.upstream.as_ref().map(Tracking::from),
        }
        .render(),
    );
    if let (Some(sha), false) = (&head.sha, head.detached) {
        out.line(format!("HEAD {sha}"));
    }
    if let Some(operation) = report.operation_in_progress {
        out.line(operation_line(operation.name(), None));
    }
    if report.counts.bare || report.counts.clean {
        out.line(counts_line(&report.counts));
    }
    change_lists(&mut out, options, &result.omitted, &report.lists);
    unreadable_lines(&mut out, options, &report.unreadable);
    out.finish()
}

/// `repo.refs`: branches as `git branch -vv` (`* main abc1234 [origin/main: ahead 1]`), then
/// `remote`, `stash@{N}`, `remotes/` and `tag` lines, in the report's order (tags newest first).
pub fn refs(result: &Budgeted<refs::Report>, _options: &Options) -> String {
    let report = &result.data;
    let mut out = Lines::default();
    if report.head.detached {
        out.line(format!("* (HEAD detached at {})", report.head.sha.as_deref().map_or("?", short)));
    } else if let (true, Some(branch)) = (report.head.unborn, &report.head.branch) {
        out.line(format!("* {} (no commits yet)", esc(branch)));
    }
    for branch in &report.branches {
        let mark = if branch.current { '*' } else { ' ' };
        let mut line = format!("{mark} {} {}", esc(&branch.name), short(&branch.sha));
        if let Some(upstream) = &branch.upstream {
            line.push(' ');
            line.push_str(&upstream_marks(upstream));
        }
        out.line(line);
    }
    out.more(&result.omitted, "branches", "branches");
    for remote in &report.remotes {
        let url = remote.fetch_url.as_deref().map_or(Cow::Borrowed("(no url)"), esc);
        let mut line = format!("remote {} {url}", esc(&remote.name));
        if let Some(push) = &remote.push_url {
            line.push_str(&format!(" (push {})", esc(push)));
        }
        out.line(line);
    }
    out.more(&result.omitted, "remotes", "remotes");
    for stash in &report.stashes {
        out.line(format!("stash@{{{}}} {} {}", stash.index, short(&stash.sha), esc(&stash.message)));
    }
    out.more(&result.omitted, "stashes", "stashes");
    for branch in &report.remote_branches {
        out.line(format!("remotes/{} {}", esc(&branch.name), short(&branch.sha)));
    }
    out.more(&result.omitted, "remoteBranches", "remote branches");
    for tag in &report.tags {
        let annotated = if tag.annotated { " (annotated)" } else { "" };
        out.line(format!("tag {} {}{annotated}", esc(&tag.name), short(&tag.sha)));
    }
    out.more(&result.omitted, "tags", "tags");
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::{Options, submodules_line};
    use crate::facets::submodules::Summary;

    fn summary(total: usize, attention: &[&str], truncated: bool) -> Summary {
        let count = |state: &str| attention.iter().filter(|entry| entry.ends_with(&format!("({state})"))).count();
        Summary {
            total,
            clean: total - attention.len(),
            drifted: count("drifted"),
            uninitialized: count("uninitialized"),
            conflicts: count("conflict"),
            unreadable: count("unreadable"),
            attention: attention.iter().map(|entry| (*entry).to_owned()).collect(),
            attention_truncated: truncated,
        }
    }

    #[test]
    fn submodules_in_git_submodule_status_marks() {
        let clean = summary(3, &[], false);
        assert_eq!(
            submodules_line(&clean, &[], &Options::default()).as_deref(),
            Some("submodules 3"),
            "all clean: the total"
        );
        let drift = summary(4, &["libs/a (drifted)", "libs/b (uninitialized)", "libs/c (conflict)"], false);
        assert_eq!(submodules_line(&drift, &[], &Options::default()).as_deref(), Some("+libs/a -libs/b Ulibs/c"));
        assert_eq!(
            submodules_line(&drift, &["libs/a"], &Options::default()).as_deref(),
            Some("-libs/b Ulibs/c"),
            "a drifted one the short status lists as (new commits) is not repeated"
        );
        let only_listed = summary(2, &["libs/a (drifted)"], false);
        assert_eq!(submodules_line(&only_listed, &["libs/a"], &Options::default()), None, "nothing left to say");
        let cut = summary(40, &["libs/a (drifted)", "libs/b (uninitialized)"], true);
        assert_eq!(
            submodules_line(&cut, &["libs/a"], &Options::default()).as_deref(),
            Some("submodules 40 (clean 38, drifted 1, uninitialized 1): +libs/a -libs/b"),
            "a cut list gives the total and the exact counts first"
        );
        let unreadable = summary(2, &["libs/a (unreadable)", "libs/b (drifted)"], false);
        assert_eq!(
            submodules_line(&unreadable, &[], &Options::default()).as_deref(),
            Some("submodules 2: libs/a (unreadable) +libs/b")
        );
    }
}
