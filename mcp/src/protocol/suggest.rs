//! The listed tool names nearest to a name that is not a tool, for the unknown-tool error.
//!
//! Names are compared with `.` and `_` taken as the same character and without case, so `repo.breif` finds
//! `repo_brief` whichever spelling is listed. A name that is the part of a listed name after its family
//! (`brief` for `repo_brief`) counts as one edit away.

/// At most this many names are suggested.
pub(crate) const MAX_SUGGESTIONS: usize = 3;

/// Up to [`MAX_SUGGESTIONS`] of `listed` nearest to `asked`, nearest first, then in listing order. A name counts
/// when it is within a third of the asked name's length in edits (at least 2).
pub(crate) fn nearest_tool_names<'a>(listed: &[&'a str], asked: &str) -> Vec<&'a str> {
    let wanted = normalise(asked);
    let limit = (wanted.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, usize, &str)> = listed
        .iter()
        .enumerate()
        .filter_map(|(position, name)| {
            let candidate = normalise(name);
            let mut distance = edit_distance(&wanted, &candidate);
            if let Some((_, rest)) = candidate.split_once('_')
                && rest == wanted
            {
                distance = distance.min(1);
            }
            (distance <= limit).then_some((distance, position, *name))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(MAX_SUGGESTIONS).map(|(_, _, name)| name).collect()
}

fn normalise(name: &str) -> String {
    name.chars().map(|c| if c == '.' { '_' } else { c.to_ascii_lowercase() }).collect()
}

/// Levenshtein distance in characters, with a swap of two neighbours counting 1 (`mian` -> `main`): strsim's
/// optimal string alignment distance.
fn edit_distance(one: &str, two: &str) -> usize {
    strsim::osa_distance(one, two)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTED: [&str; 6] =
        ["repo_brief", "repo_status", "repo_refs", "operation_status", "commit_details", "repo_scope"];

    #[test]
    fn typos_find_the_listed_name_in_either_spelling() {
        assert_eq!(nearest_tool_names(&LISTED, "repo.breif"), ["repo_brief", "repo_refs"]);
        assert_eq!(nearest_tool_names(&LISTED, "repo_breif"), ["repo_brief", "repo_refs"]);
        assert_eq!(nearest_tool_names(&LISTED, "Repo.Status")[0], "repo_status");
        let dotted = ["repo.brief", "repo.status"];
        assert_eq!(nearest_tool_names(&dotted, "repo_brief"), ["repo.brief"]);
    }

    #[test]
    fn a_family_less_name_and_the_cap() {
        assert_eq!(nearest_tool_names(&LISTED, "status"), ["repo_status", "operation_status"]);
        assert_eq!(nearest_tool_names(&LISTED, "repo_ref"), ["repo_refs", "repo_brief"]);
        let many = ["a_xy", "b_xy", "c_xy", "d_xy"];
        assert_eq!(nearest_tool_names(&many, "xy"), ["a_xy", "b_xy", "c_xy"]);
        assert!(nearest_tool_names(&LISTED, "no.such.tool").is_empty());
        assert!(nearest_tool_names(&[], "repo.brief").is_empty());
    }
}
