//! Object ids abbreviated as git abbreviates them (`git rev-parse --short`, `git log --format=%h`).
//!
//! git's rule (`repo_find_unique_abbrev_r` in its `object-name.c`): start from `core.abbrev` hex
//! digits, or with `auto` (the default) from half the bits needed to count the packed objects,
//! rounded up and at least 7; then lengthen the prefix past every other object that shares it. In
//! each pack index only the two ids next to where the id sits can share the longest prefix with it
//! (the table is sorted); the loose objects that could are those of its fan-out directory
//! (`objects/xx/`). The id itself need not exist: a missing object gets the prefix no existing
//! object shares, as git prints it.
//!
//! [`Abbrev`] reads the pack indexes itself ([`crate::pack_index::IndexFile`]: header and fan-out
//! when made, then a few ids per lookup), so a first abbreviation does not load whole indexes, and
//! lists each fan-out directory once (git caches those listings per process; gix lists the
//! directory again for every id).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use gix::ObjectId;

use crate::pack_index::IndexFile;

/// git's `FALLBACK_DEFAULT_ABBREV`: the shortest `auto` length.
const FALLBACK_LEN: usize = 7;

/// git compares common prefixes with `GIT_MAX_RAWSZ` (32) as a bound on hex digits: a neighbour
/// sharing 32 digits or more does not lengthen the abbreviation (the id itself, met among the loose
/// objects, is skipped that way).
const MAX_COUNTED_COMMON: usize = 32;

/// `id` abbreviated like git: the shortest unique prefix of at least `core.abbrev` digits (see the
/// module documentation). For many ids of one repository, make one [`Abbrev`] and use it for all of
/// them.
pub fn abbreviate(id: gix::Id<'_>) -> String {
    Abbrev::new(id.repo).id(id.detach())
}

/// A full hex sha abbreviated with [`abbreviate`]; text that is not a sha is returned unchanged.
pub fn abbreviate_hex(repo: &gix::Repository, sha: &str) -> String {
    Abbrev::new(repo).hex(sha)
}

/// Abbreviates object ids of one repository as `git rev-parse --short` does (module documentation).
///
/// It looks in the packs present when it was made and in the loose objects, each fan-out directory
/// listed on its first use and kept for the abbreviator's life (one call: a pack or loose object
/// written meanwhile is seen by the next `Abbrev`, as by the next git command). Packs and loose
/// objects of alternate object directories count, as they do for git.
pub struct Abbrev {
    hash: gix::hash::Kind,
    /// The least hex digits shown.
    hex_len: usize,
    /// The pack indexes of every object directory.
    packs: Vec<IndexFile>,
    /// The object directories: the repository's, then its alternates.
    object_dirs: Vec<PathBuf>,
    /// Per first byte, the loose objects of that fan-out directory in every object directory.
    loose: [OnceLock<Vec<ObjectId>>; 256],
    /// The abbreviations made so far (a page of history abbreviates most commits twice: as a commit
    /// and as its child's parent).
    made: std::sync::Mutex<rustc_hash::FxHashMap<ObjectId, String>>,
}

impl Abbrev {
    /// An abbreviator for `repo`'s objects as they are now. An object directory or pack index that
    /// cannot be read is left out (git skips an index it cannot open too).
    pub fn new(repo: &gix::Repository) -> Self {
        let hash = repo.object_hash();
        let objects_dir = repo.objects.store_ref().path().to_path_buf();
        let mut object_dirs = vec![objects_dir.clone()];
        if objects_dir.join("info").join("alternates").is_file() {
            object_dirs.extend(gix::odb::alternate::resolve(objects_dir, repo.current_dir()).unwrap_or_default());
        }
        let packs: Vec<IndexFile> = object_dirs.iter().flat_map(|dir| pack_indexes(dir, hash)).collect();
        let configured = repo
            .config_snapshot()
            .string("core.abbrev")
            .and_then(|value| gix::config::tree::Core::ABBREV.try_into_abbreviation(&*value, hash).ok().flatten());
        // git's `auto` (`repo_approximate_object_count`): the objects every pack index lists, counted per index.
        let auto = || {
            let count: u64 = packs.iter().map(|pack| u64::from(pack.num_objects())).sum();
            ((64 - count.leading_zeros()) as usize).div_ceil(2).max(FALLBACK_LEN)
        };
        let hex_len = configured.unwrap_or_else(auto);
        let loose = std::array::from_fn(|_| OnceLock::new());
        Self { hash, hex_len, packs, object_dirs, loose, made: std::sync::Mutex::default() }
    }

    /// `id` abbreviated: the shortest prefix of at least the configured length that no other object
    /// shares; the full sha when a pack index cannot be read.
    pub fn id(&self, id: ObjectId) -> String {
        let made = || self.made.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(hex) = made().get(&id) {
            return hex.clone();
        }
        let hex = self.make(id);
        made().insert(id, hex.clone());
        hex
    }

    /// `id` abbreviated, looked up in the packs and loose objects ([`Abbrev::id`]).
    fn make(&self, id: ObjectId) -> String {
        let mut hex = id.to_string();
        if self.hex_len >= hex.len() || self.hex_len == 0 || id.kind() != self.hash {
            return hex;
        }
        let mut len = self.hex_len;
        let mut extend = |other: &gix::oid| {
            let common = common_hex_digits(&id, other);
            if common < MAX_COUNTED_COMMON && common >= len {
                len = common + 1;
            }
        };
        for pack in &self.packs {
            let Ok(located) = pack.locate(&id) else {
                return hex;
            };
            // The id sorted after it (or the one in its place when absent) and the one before.
            located.after.iter().chain(&located.before).for_each(|other| extend(other));
        }
        self.loose(id.first_byte()).iter().for_each(|other| extend(other));
        hex.truncate(len);
        hex
    }

    /// A full hex sha abbreviated as [`Abbrev::id`]; text that is not a sha is returned unchanged.
    pub fn hex(&self, sha: &str) -> String {
        ObjectId::from_hex(sha.as_bytes()).map_or_else(|_| sha.to_owned(), |id| self.id(id))
    }

    /// The loose objects whose ids start with `first`, in every object directory (listed on first
    /// use).
    fn loose(&self, first: u8) -> &[ObjectId] {
        self.loose[usize::from(first)].get_or_init(|| {
            let name = faster_hex::hex_string(&[first]);
            let rest_len = self.hash.len_in_hex() - 2;
            let mut ids = Vec::new();
            for dir in &self.object_dirs {
                let Ok(entries) = std::fs::read_dir(dir.join(&name)) else { continue };
                for entry in entries.flatten() {
                    let file = entry.file_name();
                    let Some(rest) = file.to_str().filter(|rest| rest.len() == rest_len) else { continue };
                    if let Ok(id) = ObjectId::from_hex(format!("{name}{rest}").as_bytes()) {
                        ids.push(id);
                    }
                }
            }
            ids
        })
    }
}

/// The pack indexes of the object directory `dir` that git would use (an index with its pack beside
/// it), in file name order.
fn pack_indexes(dir: &Path, hash: gix::hash::Kind) -> Vec<IndexFile> {
    let paths = crate::pack_index::index_paths(dir);
    let with_pack = paths.iter().filter(|path| path.with_extension("pack").is_file());
    with_pack.filter_map(|path| IndexFile::open(path, hash).ok()).collect()
}

/// How many leading hex digits `a` and `b` share.
fn common_hex_digits(a: &gix::oid, b: &gix::oid) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let bytes = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    match (a.get(bytes), b.get(bytes)) {
        (Some(x), Some(y)) if x >> 4 == y >> 4 => bytes * 2 + 1,
        _ => bytes * 2,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::process::Stdio;

    use super::Abbrev;

    /// With `core.abbrev=4` and 3,000 objects many 4-digit prefixes are shared: every id, packed or
    /// loose, is abbreviated to its shortest unique prefix of at least 4 digits (computed here from
    /// the sorted list of every object git knows), and git agrees on those that needed more digits.
    /// A mutant that skips the uniqueness check, or looks only in the packs, fails.
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
