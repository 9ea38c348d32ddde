//! Text rendering of `repo.scope`.

use super::{Lines, Options, change_lists, esc};
use crate::budget::Budgeted;
use crate::scope::{PathKind, Scope};

/// `repo.scope`: the path and its kind, porcelain-like change lines, `sha subject` lines, churn, all-time authors and
/// owners (with `changed OWNERS: paths` lines for a directory's changed paths).
pub fn scope(result: &Budgeted<Scope>, options: &Options) -> String {
    let scope = &result.data;
    let omitted = &result.omitted;
    let mut out = Lines::default();
    let kind = match scope.kind {
        PathKind::File => "file",
        PathKind::Directory => "directory",
        PathKind::Absent => "absent",
    };
    out.line(format!("# {} ({kind})", options.path(&scope.path)));
    let tree = &scope.working_tree;
    if tree.counts.clean {
        out.line("clean");
    }
    change_lists(&mut out, options, omitted, &tree.lists);
    for commit in &scope.recent_commits {
        out.line(esc(&commit.oneline()));
    }
    out.more(omitted, "recentCommits", "commits");
    let churn = &scope.churn;
    let mut line =
        format!("churn {}..{}: {} commits, {} authors", churn.since, churn.until, churn.commits, churn.author_count);
    let authors: Vec<String> = churn
        .authors
        .iter()
        .map(|author| format!("{} <{}> {}", esc(&author.name), esc(&author.email), author.commits))
        .collect();
    if !authors.is_empty() {
        line.push_str(&format!(": {}", authors.join(", ")));
    }
    out.line(line);
    out.more(omitted, "authors", "authors");
    let all = &scope.all_time;
    let mut line = format!("all time: {} commits, {} authors", all.commits, all.author_count);
    let authors: Vec<String> = all
        .authors
        .iter()
        .map(|author| format!("{} <{}> {}", esc(&author.name), esc(&author.email), author.commits))
        .collect();
    if !authors.is_empty() {
        line.push_str(&format!(": {}", authors.join(", ")));
    }
    out.line(line);
    out.more(omitted, "allTimeAuthors", "authors");
    let owners = &scope.code_owners;
    match owners.file {
        None => out.line("owners: no CODEOWNERS file"),
        Some(file) => {
            let rule = owners
                .rule
                .as_ref()
                .map_or_else(|| "no rule".to_owned(), |rule| format!("{file}:{} {}", rule.line, esc(&rule.pattern)));
            let who = if owners.owners.is_empty() {
                "unowned".to_owned()
            } else {
                esc(&owners.owners.join(" ")).into_owned()
            };
            out.line(format!("owners: {who} ({rule})"));
        }
    }
    if let Some(files) = owners.tracked_files {
        out.line(format!("tracked files {files}"));
    }
    for group in &owners.owners_by_rule {
        let rule = group
            .rule
            .as_ref()
            .map_or_else(|| "no rule".to_owned(), |rule| format!("line {} {}", rule.line, esc(&rule.pattern)));
        let who =
            if group.owners.is_empty() { "unowned".to_owned() } else { esc(&group.owners.join(" ")).into_owned() };
        out.line(format!("  {} files: {who} ({rule})", group.files));
    }
    out.more(omitted, "ownersByRule", "owner groups");
    for group in &owners.changed {
        let who =
            if group.owners.is_empty() { "unowned".to_owned() } else { esc(&group.owners.join(" ")).into_owned() };
        let files: Vec<String> = group.files.iter().map(|file| esc(file).into_owned()).collect();
        out.line(format!("  changed {who}: {}", files.join(" ")));
    }
    out.more(omitted, "changedOwners", "changed owner groups");
    if owners.error_count > 0 {
        out.line(format!("CODEOWNERS errors {}", owners.error_count));
    }
    for error in &owners.errors {
        out.line(format!("  line {}: {}", error.line, esc(&error.message)));
    }
    out.more(omitted, "codeOwnersErrors", "CODEOWNERS errors");
    out.finish()
}
