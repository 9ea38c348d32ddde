//! Pack index files (`objects/pack/*.idx`) searched without loading them whole.
//!
//! [`search`] is the id search of the blame reader (`file/packs.rs`) over gix's mapped index.
//! [`IndexFile`] reads an index through positioned reads: the header and fan-out table (1 KiB) when
//! opened, then a window of ids around the place looked for ([`IndexFile::locate`], one read almost
//! always), for the abbreviations (`abbrev.rs`, which also take the ids beside it) and the engine's
//! direct object reads. Both searches start where interpolation on the uniformly spread ids puts
//! the id ([`Span`]). gix's `pack::index::File::at` instead checks the size of the whole file by
//! reading every entry of its 32-bit offset table (3.4 MB in git/git's pack) before the first
//! lookup, which was most of a first abbreviation; git checks only the file's length against the
//! object count, as [`IndexFile::open`] does. [`IndexFile::pack_offset`] then reads where an entry
//! sits in its pack ([`crate::objects`]).

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::Path;

/// Probes guided by the ids' values before [`search`] halves the range instead.
const INTERPOLATION_PROBES: u32 = 4;

/// Where `id` sits in a sorted id table of which `fan` is the fan-out (at each byte value, the
/// number of ids starting with a byte up to it) and `id_at(n)` reads the `n`th id: `Ok(n)` when the
/// table holds it, else `Err(n)` with `n` the position it would be inserted at (the first id
/// greater than it).
///
/// Object ids are uniformly distributed, so the search first probes where `id` would sit if the ids
/// in range were evenly spread (interpolation: two or three probes instead of gix's ten halvings,
/// each a likely cache miss in a large index), then halves the range; ids are compared by their
/// first 8 bytes as one integer, the rest only when those are equal.
///
/// # Errors
/// The first error of `id_at`.
pub(crate) fn search<B: std::borrow::Borrow<gix::oid>, E>(
    fan: &[u32; 256],
    id: &[u8],
    mut id_at: impl FnMut(u32) -> Result<B, E>,
) -> Result<Result<u32, u32>, E> {
    let Some(&first) = id.first() else {
        return Ok(Err(0));
    };
    let key = prefix(id);
    let Span { mut low, mut high, mut low_key, mut high_key } = Span::of(fan, first);
    let mut probes = 0;
    while low < high {
        let mid = if probes < INTERPOLATION_PROBES && high - low > 8 {
            probes += 1;
            Span { low, high, low_key, high_key }.interpolate(key)
        } else {
            low + (high - low) / 2
        };
        let other = id_at(mid)?;
        let other = other.borrow().as_bytes();
        let other_key = prefix(other);
        match other_key.cmp(&key).then_with(|| other.get(8..).cmp(&id.get(8..))) {
            std::cmp::Ordering::Less => {
                low = mid + 1;
                low_key = other_key;
            }
            std::cmp::Ordering::Greater => {
                high = mid;
                high_key = other_key;
            }
            std::cmp::Ordering::Equal => return Ok(Ok(mid)),
        }
    }
    // Every id before `low` is smaller (those of smaller first bytes come before the fan-out's range), every id from
    // `high` on is greater.
    Ok(Err(low))
}

/// A range `[low, high)` of a sorted id table and the bounds of its ids' keys ([`prefix`]): every
/// key in it lies within `[low_key, high_key]`.
struct Span {
    low: u32,
    high: u32,
    low_key: u64,
    high_key: u64,
}

impl Span {
    /// The ids of `fan`'s table starting with byte `first` (at each byte value, `fan` counts the
    /// ids starting with a byte up to it), whose keys all start with that byte.
    fn of(fan: &[u32; 256], first: u8) -> Self {
        let low_key = u64::from(first) << 56;
        Span {
            low: usize::from(first).checked_sub(1).map_or(0, |previous| fan[previous]),
            high: fan[usize::from(first)],
            low_key,
            high_key: low_key | ((1 << 56) - 1),
        }
    }

    /// Where `key` would sit if the span's ids were evenly spread between its key bounds (object
    /// ids are uniformly distributed): a place in `[low, high)`, which must not be empty.
    fn interpolate(&self, key: u64) -> u32 {
        let spread = u128::from(self.high_key - self.low_key) + 1;
        let guess = u128::from(key.saturating_sub(self.low_key)) * u128::from(self.high - self.low) / spread;
        self.low + u32::try_from(guess).unwrap_or(u32::MAX).min(self.high - self.low - 1)
    }
}

/// The first 8 bytes of an id as a big-endian integer (ordered as the bytes are).
fn prefix(bytes: &[u8]) -> u64 {
    bytes.first_chunk::<8>().map_or(0, |chunk| u64::from_be_bytes(*chunk))
}

/// The pack indexes of an object directory (`<objects>/pack/*.idx`), sorted by name; none when it
/// cannot be listed.
pub(crate) fn index_paths(objects: &Path) -> Vec<std::path::PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(objects.join("pack"))
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "idx"))
        .collect();
    paths.sort();
    paths
}

/// The signature of a version 2 index (version 1 has none and starts with the fan-out table).
const V2_SIGNATURE: [u8; 4] = *b"\xfftOc";

/// An open pack index, read by positioned reads.
pub(crate) struct IndexFile {
    file: File,
    fan: [u32; 256],
    /// Where the `n`th id starts: `ids_at + n * stride`.
    ids_at: u64,
    stride: u64,
    /// Where the `n`th entry's pack offset starts: `offsets_at + n * stride` in version 1 (4 bytes
    /// before each id), `offsets_at + n * 4` in version 2 (the 32-bit offset table after the CRCs).
    offsets_at: u64,
    /// Version 2's table of 64-bit offsets, which a 32-bit entry with its high bit set points into;
    /// `None` in version 1.
    large_offsets_at: Option<u64>,
    /// The file's length in bytes.
    len: u64,
    hash: gix::hash::Kind,
}

impl IndexFile {
    /// Opens the index at `path` (version 1 or 2) for ids of `hash`. Reads its header and fan-out
    /// table, and checks them as git does before using an index: a known version, a fan-out that
    /// never decreases, and a file long enough for the object count.
    ///
    /// # Errors
    /// The file cannot be read, or it is not an index git would use.
    pub(crate) fn open(path: &Path, hash: gix::hash::Kind) -> std::io::Result<Self> {
        let invalid = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("pack index {what}"));
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        let mut head = [0u8; 8 + 256 * 4];
        file.read_exact_at(&mut head, 0)?;
        let v2 = head[..4] == V2_SIGNATURE;
        if v2 && head[4..8] != [0, 0, 0, 2] {
            return Err(invalid("version unsupported"));
        }
        let table = if v2 { &head[8..] } else { &head[..256 * 4] };
        let mut fan = [0u32; 256];
        for (count, bytes) in fan.iter_mut().zip(table.as_chunks::<4>().0) {
            *count = u32::from_be_bytes(*bytes);
        }
        if fan.windows(2).any(|pair| pair[0] > pair[1]) {
            return Err(invalid("fan-out decreases"));
        }
        let hash_len = hash.len_in_bytes() as u64;
        let objects = u64::from(fan[255]);
        // Version 2: ids, CRCs, 32-bit offsets; version 1: a 4-byte offset before each id. Then both checksums.
        let (header, entry_bytes) = if v2 { (8 + 1024, hash_len + 8) } else { (1024, hash_len + 4) };
        if len < header + objects * entry_bytes + 2 * hash_len {
            return Err(invalid("too short for its object count"));
        }
        let (ids_at, stride) = if v2 { (header, hash_len) } else { (header + 4, hash_len + 4) };
        let (offsets_at, large_offsets_at) = if v2 {
            let offsets_at = header + objects * (hash_len + 4);
            (offsets_at, Some(offsets_at + objects * 4))
        } else {
            (header, None)
        };
        Ok(Self { file, fan, ids_at, stride, offsets_at, large_offsets_at, len, hash })
    }

    /// The number of objects the index lists.
    pub(crate) fn num_objects(&self) -> u32 {
        self.fan[255]
    }

    /// Where the `n`th entry (in sorted id order) starts in the pack, in bytes from the pack's
    /// start. A version 2 entry of 2 GiB or more is read from the 64-bit table, which this checks
    /// lies inside the file before the trailing checksums (git's `nth_packed_object_offset`).
    ///
    /// # Errors
    /// The read fails, or the 64-bit entry named lies outside its table.
    pub(crate) fn pack_offset(&self, n: u32) -> std::io::Result<u64> {
        let step = if self.large_offsets_at.is_some() { 4 } else { self.stride };
        let mut word = [0u8; 4];
        self.file.read_exact_at(&mut word, self.offsets_at + u64::from(n) * step)?;
        let offset = u32::from_be_bytes(word);
        match self.large_offsets_at {
            Some(table) if offset & 0x8000_0000 != 0 => {
                let at = table + u64::from(offset & 0x7fff_ffff) * 8;
                if at + 8 > self.len.saturating_sub(2 * self.hash.len_in_bytes() as u64) {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "pack index names a 64-bit offset outside its table",
                    ));
                }
                let mut large = [0u8; 8];
                self.file.read_exact_at(&mut large, at)?;
                Ok(u64::from_be_bytes(large))
            }
            _ => Ok(u64::from(offset)),
        }
    }

    /// Where `id` sits in the index: `Ok(n)` when the `n`th id is `id`, else `Err(n)`, the place it
    /// would be inserted at.
    ///
    /// # Errors
    /// A read fails.
    pub(crate) fn search(&self, id: &gix::oid) -> std::io::Result<Result<u32, u32>> {
        self.locate(id).map(|located| located.at)
    }

    /// Where `id` sits in the index, with the ids beside that place ([`Located`]).
    ///
    /// Each positioned read is a system call, so the ids are read [`WINDOW`] at a time: the whole
    /// range of ids sharing `id`'s first byte when it is that small, else a window around the place
    /// interpolation on the uniformly spread ids gives (on a 558,000-object index, about 2,200 ids
    /// share a first byte and the guess is off by a few dozen), searched in memory; the range
    /// narrows to the side of a window that does not hold the place, and another window is read
    /// there. One read almost always.
    ///
    /// # Errors
    /// A read fails.
    pub(crate) fn locate(&self, id: &gix::oid) -> std::io::Result<Located> {
        self.locate_in_windows(id, WINDOW)
    }

    fn locate_in_windows(&self, id: &gix::oid, window: u32) -> std::io::Result<Located> {
        let bytes = id.as_bytes();
        let hash_len = self.hash.len_in_bytes();
        let stride = self.stride as usize;
        let key = prefix(bytes);
        let Span { mut low, mut high, mut low_key, mut high_key } = Span::of(&self.fan, id.first_byte());
        let total = self.num_objects();
        let mut buffer = [0u8; WINDOW_BYTES];
        loop {
            let (start, end) = if high - low <= window {
                (low, high)
            } else {
                let guess = Span { low, high, low_key, high_key }.interpolate(key);
                let start = guess.saturating_sub(window / 2).clamp(low, high - window);
                (start, start + window)
            };
            // One more id on each side (the neighbours of a place at the window's edge), in one read.
            let (read_start, read_end) = (start.saturating_sub(1), (end + 1).min(total));
            let read = if read_end > read_start { (read_end - read_start - 1) as usize * stride + hash_len } else { 0 };
            let read = buffer.get_mut(..read).ok_or_else(|| std::io::Error::other("pack index window too large"))?;
            self.file.read_exact_at(read, self.ids_at + u64::from(read_start) * self.stride)?;
            let id_at = |n: u32| &read[(n - read_start) as usize * stride..][..hash_len];
            // The first place in [start, end) whose id is not below `id`.
            let (mut left, mut right) = (start, end);
            while left < right {
                let mid = left + (right - left) / 2;
                if id_at(mid) < bytes {
                    left = mid + 1;
                } else {
                    right = mid;
                }
            }
            if left == start && start > low && id_at(start) != bytes {
                high = start;
                high_key = prefix(id_at(start));
            } else if left == end && end < high {
                low = end;
                low_key = prefix(id_at(end - 1));
            } else {
                let at = if left < end && id_at(left) == bytes { Ok(left) } else { Err(left) };
                let beside = |n: u32| {
                    (read_start..read_end).contains(&n).then(|| gix::ObjectId::try_from(id_at(n)).ok()).flatten()
                };
                let after = match at {
                    Ok(n) => n + 1,
                    Err(n) => n,
                };
                return Ok(Located { at, before: left.checked_sub(1).and_then(beside), after: beside(after) });
            }
        }
    }
}

/// Ids an [`IndexFile`] search reads at a time (2.5 KiB of SHA-1 ids).
const WINDOW: u32 = 128;

/// Bytes of the largest window read: [`WINDOW`] ids and one on each side, in a version 1 index of
/// SHA-256 ids (36 bytes apart).
const WINDOW_BYTES: usize = (WINDOW as usize + 2) * 36;

/// Where an id sits in a pack index ([`IndexFile::locate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Located {
    /// `Ok(n)` when the `n`th id is the one looked for, else `Err(n)`, the place it would be
    /// inserted at.
    pub(crate) at: Result<u32, u32>,
    /// The id sorted right before that place, if any.
    pub(crate) before: Option<gix::ObjectId>,
    /// The id sorted right after it (after the id itself when found; the one in its place when
    /// absent), if any.
    pub(crate) after: Option<gix::ObjectId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every id of a repacked repository is found at its place in `git show-index`'s sorted
    /// listing, and an id that is not there at the place it would be inserted; a truncated file is
    /// refused.
    #[test]
    fn positions_are_those_of_the_sorted_listing() {
        let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Diffs);
        fixture.git(&["repack", "-adq"]);
        let idx = index_paths(&fixture.path().join(".git/objects")).pop().expect("one index");
        let listing = fixture.git(&["verify-pack", "-v", idx.to_str().expect("utf-8 path")]);
        let mut ids: Vec<gix::ObjectId> = listing
            .lines()
            .filter_map(|line| line.split(' ').next().and_then(|hex| gix::ObjectId::from_hex(hex.as_bytes()).ok()))
            .collect();
        ids.sort();
        let index = IndexFile::open(&idx, gix::hash::Kind::Sha1).expect("opens");
        assert_eq!(index.num_objects() as usize, ids.len());
        for (n, id) in ids.iter().enumerate() {
            assert_eq!(index.search(id).expect("reads"), Ok(n as u32), "{id}");
            for byte in [19, 5, 0] {
                let mut absent = *id;
                absent.as_mut_slice()[byte] ^= 0x5a;
                let expected = ids.binary_search(&absent);
                let expected = expected.map(|n| n as u32).map_err(|n| n as u32);
                assert_eq!(index.search(&absent).expect("reads"), expected, "{absent}");
            }
        }
        for window in [1, 2, 3, 5] {
            assert_located(&index, &ids, window);
        }
        let short = fixture.path().join("short.idx");
        let bytes = std::fs::read(&idx).expect("reads");
        std::fs::write(&short, &bytes[..bytes.len() - 41]).expect("writes");
        assert!(IndexFile::open(&short, gix::hash::Kind::Sha1).is_err());
    }

    /// Checks [`IndexFile::locate_in_windows`] against the sorted `ids` the index lists: for each
    /// id, and for absent ids beside it, the place and both neighbours.
    fn assert_located(index: &IndexFile, ids: &[gix::ObjectId], window: u32) {
        let expect = |id: &gix::ObjectId| {
            let at = ids.binary_search(id).map(|n| n as u32).map_err(|n| n as u32);
            let (before, after) = match at {
                Ok(n) => (n.checked_sub(1), n + 1),
                Err(n) => (n.checked_sub(1), n),
            };
            let get = |n: Option<u32>| n.and_then(|n| ids.get(n as usize)).copied();
            Located { at, before: get(before), after: get(Some(after)) }
        };
        for id in ids {
            assert_eq!(index.locate_in_windows(id, window).expect("reads"), expect(id), "{id}, window {window}");
            for byte in [19, 5, 1, 0] {
                let mut absent = *id;
                absent.as_mut_slice()[byte] ^= 0x5a;
                assert_eq!(index.locate_in_windows(&absent, window).expect("reads"), expect(&absent), "{absent}");
            }
        }
    }

    /// With many ids per first byte (3,000 blobs written by `git fast-import`: about 12 per byte),
    /// windows smaller than that range narrow it from either side until the place is inside one.
    #[test]
    fn narrowing_windows_find_the_sorted_places() {
        use std::io::Write as _;
        let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Diffs);
        let mut stream = Vec::new();
        for n in 0..3000 {
            let content = format!("blob number {n}\n");
            write!(stream, "blob\ndata {}\n{content}\n", content.len()).expect("writes");
        }
        let mut import = std::process::Command::new("git")
            .args(["fast-import", "--quiet"])
            .current_dir(fixture.path())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("git runs");
        import.stdin.take().expect("stdin").write_all(&stream).expect("writes");
        assert!(import.wait().expect("waits").success());
        let index = index_paths(&fixture.path().join(".git/objects"))
            .into_iter()
            .filter_map(|path| IndexFile::open(&path, gix::hash::Kind::Sha1).ok())
            .find(|index| index.num_objects() == 3000)
            .expect("the imported pack's index");
        let mut ids: Vec<gix::ObjectId> = (0..3000)
            .map(|n| {
                gix::objs::compute_hash(
                    gix::hash::Kind::Sha1,
                    gix::objs::Kind::Blob,
                    format!("blob number {n}\n").as_bytes(),
                )
                .expect("hashes")
            })
            .collect();
        ids.sort();
        assert_eq!(index.num_objects() as usize, ids.len());
        for window in [1, 2, 7, 64, WINDOW] {
            assert_located(&index, &ids, window);
        }
    }
}
