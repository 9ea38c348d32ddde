//! Text rendering of `repo.scope`.

use super::{Lines, Options, change_lists, esc};
use crate::budget::Budgeted;
use crate::scope::{ChurnAuthor, PathKind, Scope};

/// `repo.scope`: the path and its kind, porcelain-like change lines, `sha subject` lines, churn
/// (left out when the window has no commit),
/// all-time authors and owners (with `changed OWNERS: paths` lines for a directory's changed
/// paths).
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
    // A window without commits says nothing the all-time line does not: it is left to the JSON.
    let churn = &scope.churn;
    if churn.commits > 0 {
        let mut line = format!(
            "churn {} days to {}: {} commits, {} authors",
            churn.days,
            churn.until.get(..10).unwrap_or(&churn.until),
            churn.commits,
            churn.author_count
        );
        let authors = author_list(&churn.authors);
        if !authors.is_empty() {
            line.push_str(&format!(": {}", authors.join(", ")));
        }
        out.line(line);
    }
    out.more(omitted, "authors", "authors");
    let all = &scope.all_time;
    let mut line = format!("all time: {} commits, {} authors", all.commits, all.author_count);
    let authors = author_list(&all.authors);
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

/// Authors as `Name N`, with the email only where two listed authors share a name
/// (`Name <email> N`, which only the churn's grouping by email can give): the JSON keeps every
/// email, and a name alone tells most readers who it is.
fn author_list(authors: &[ChurnAuthor]) -> Vec<String> {
    authors
        .iter()
        .map(|author| {
            if authors.iter().filter(|other| other.name == author.name).count() > 1 {
                format!("{} <{}> {}", esc(&author.name), esc(&author.email), author.commits)
            } else {
                format!("{} {}", esc(&author.name), author.commits)
            }
        })
        .collect()
}
