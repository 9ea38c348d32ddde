//! The recent-commits facet.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::facets::subject;

/// One commit in a short listing; serialises as one string, `"<sha> <subject>"`, like `git log --oneline`
/// (SPEC §4.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitLine {
    /// The commit sha abbreviated as `git log --oneline` does: the shortest prefix that is unique in the repository,
    /// at least `core.abbrev` (7 by default) hex digits.
    pub sha: String,
    /// The first line of the message.
    pub subject: String,
}

impl CommitLine {
    /// `"<sha> <subject>"`, as `git log --oneline` prints the commit.
    pub fn oneline(&self) -> String {
        format!("{} {}", self.sha, self.subject)
    }
}

impl Serialize for CommitLine {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{} {}", self.sha, self.subject))
    }
}

/// Hex digits kept of a sha where a fixed length is needed (e.g. a recovery branch name).
pub const SHORT_SHA_LEN: usize = 12;

/// `id` abbreviated like git: the shortest unique prefix of at least `core.abbrev` digits; the full sha if the object
/// database cannot tell. For many ids of one repository, make one [`Abbrev`] and use it for all of them.
pub fn abbreviate(id: gix::Id<'_>) -> String {
    Abbrev::new(id.repo).id(id.detach())
}

/// A full hex sha abbreviated with [`abbreviate`]; text that is not a sha is returned unchanged.
pub fn abbreviate_hex(repo: &gix::Repository, sha: &str) -> String {
    Abbrev::new(repo).hex(sha)
}

/// Abbreviates object ids of one repository as `git rev-parse --short` does: `core.abbrev` hex digits, or by default
/// a length grown with the number of packed objects (at least 7, as git's `auto`), lengthened until no other object
/// shares the prefix.
///
/// It looks prefixes up in the packs present when it was made (and the loose objects, read from disk on each
/// lookup) and never re-scans the pack directory: a repository handle re-scans it (a directory listing, a stat per
/// pack) after every prefix lookup, which made listing 500 branches cost 500 scans. A pack written meanwhile is
/// seen by the next `Abbrev`, as by the next git command.
pub struct Abbrev {
    objects: gix::OdbHandle,
    hex_len: usize,
}

impl Abbrev {
    /// An abbreviator for `repo`'s objects as they are now.
    pub fn new(repo: &gix::Repository) -> Self {
        let mut objects = repo.objects.clone();
        objects.refresh_never();
        let kind = repo.object_hash();
        let configured = repo
            .config_snapshot()
            .string("core.abbrev")
            .and_then(|value| gix::config::tree::Core::ABBREV.try_into_abbreviation(&*value, kind).ok().flatten());
        // git's `auto`: half the bits needed to count the packed objects, rounded up, at least 7.
        let auto = || {
            objects.packed_object_count().map_or(7, |count| (64 - count.leading_zeros()).div_ceil(2).max(7) as usize)
        };
        let hex_len = configured.unwrap_or_else(auto).min(kind.len_in_hex());
        Self { objects, hex_len }
    }

    /// `id` abbreviated: the shortest unique prefix of at least the configured length; the full sha when no object
    /// has that id or the object database cannot tell.
    pub fn id(&self, id: gix::ObjectId) -> String {
        let prefix = gix::odb::store::prefix::disambiguate::Candidate::new(id, self.hex_len)
            .ok()
            .and_then(|candidate| self.objects.disambiguate_prefix(candidate).ok().flatten());
        prefix.map_or_else(|| id.to_string(), |prefix| prefix.to_string())
    }

    /// A full hex sha abbreviated as [`Abbrev::id`]; text that is not a sha is returned unchanged.
    pub fn hex(&self, sha: &str) -> String {
        gix::ObjectId::from_hex(sha.as_bytes()).map_or_else(|_| sha.to_owned(), |id| self.id(id))
    }
}

/// HEAD's commit abbreviated with [`abbreviate`]; `None` when unborn.
pub fn abbreviated_head(repo: &gix::Repository) -> Option<String> {
    repo.head_id().ok().map(abbreviate)
}

/// The first `limit` commits reachable from HEAD, newest first by commit time like `git log`; empty when unborn.
///
/// # Errors
/// [`Error::GitRead`] when a commit cannot be read.
pub fn recent(repo: &gix::Repository, limit: usize) -> Result<Vec<CommitLine>> {
    let Some(head) = repo.head_id().ok() else {
        return Ok(Vec::new());
    };
    let walk = repo
        .rev_walk([head.detach()])
        .sorting(gix::revision::walk::Sorting::ByCommitTime(Default::default()))
        .all()
        .map_err(|err| Error::git("commit history", err))?;
    let mut lines = Vec::new();
    let abbrev = Abbrev::new(repo);
    for info in walk.take(limit) {
        let info = info.map_err(|err| Error::git("commit history", err))?;
        let commit = info.object().map_err(|err| Error::git("commit", err))?;
        let message = commit.message_raw_sloppy();
        lines.push(CommitLine { sha: abbrev.id(info.id), subject: subject(message) });
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::process::Stdio;

    use super::Abbrev;

    /// With `core.abbrev=4` and 3,000 objects many 4-digit prefixes are shared: every id, packed or loose, is
    /// abbreviated to its shortest unique prefix of at least 4 digits (computed here from the sorted list of every
    /// object git knows), and git agrees on those that needed more digits. A mutant that skips the uniqueness check,
    /// or looks only in the packs, fails.
    #[test]
    fn abbreviations_are_the_shortest_unique_prefixes() {
        let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Clean);
        fixture.git(&["config", "core.abbrev", "4"]);
        let mut import = fixture.git_command(fixture.path());
        let mut child = import.args(["fast-import", "--quiet"]).stdin(Stdio::piped()).spawn().expect("fast-import");
        let mut stream = String::new();
        for n in 0..3000 {
            let data = format!("blob {n}\n");
            stream.push_str(&format!("blob\ndata {}\n{data}\n", data.len()));
        }
        child.stdin.take().expect("stdin").write_all(stream.as_bytes()).expect("feeds fast-import");
        assert!(child.wait().expect("fast-import ends").success());
        for n in 0..200 {
            std::fs::write(fixture.path().join("loose.txt"), format!("loose {n}\n")).expect("write");
            fixture.git(&["hash-object", "-w", "loose.txt"]);
        }
        let listing = fixture.git(&["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"]);
        let mut ids: Vec<&str> = listing.lines().collect();
        ids.sort_unstable();
        let common = |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        let repo = gix::open(fixture.path()).expect("opens");
        let abbrev = Abbrev::new(&repo);
        let mut longer = 0;
        for (idx, id) in ids.iter().enumerate() {
            let before = idx.checked_sub(1).map_or(0, |prev| common(ids[prev], id));
            let after = ids.get(idx + 1).map_or(0, |next| common(next, id));
            let expected = &id[..(before.max(after) + 1).max(4)];
            assert_eq!(abbrev.hex(id), expected, "{id}");
            if expected.len() > 4 && longer < 5 {
                longer += 1;
                assert_eq!(fixture.git(&["rev-parse", "--short", id]).trim(), expected, "git agrees on {id}");
            }
        }
        assert_eq!(longer, 5, "some prefixes of 4 digits are shared");
        assert_eq!(abbrev.hex("not a sha"), "not a sha");
    }
}
