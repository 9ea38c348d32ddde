//! Object reading for long history walks: pack entries resolved as git resolves them, with git's
//! delta base cache.
//!
//! gix's pack cache stores only the object asked for. A pack lays out an object as a chain of
//! deltas on older (`git fast-import`) or newer (`pack-objects`) versions, so a walk back through
//! history that asks for each version in turn replays the same chain again and again when the
//! versions it asks for next are the chain's intermediate bases. [`ChainCachingObjects`] resolves a
//! chain as git's `unpack_entry` does: down from the entry asked for to the nearest base held in
//! its [`BaseCache`] (or the chain's full object), then up, one delta at a time, keeping each entry
//! that served as a base, keyed by its place in the pack. The object asked for is handed over, not
//! kept (found among the bases, it leaves them), so the cache holds what the next, older version is
//! built from and nothing the walk has consumed. The walk reads each commit up to three times in a
//! row and builds an older version on the one it read last: a short memory of the last objects read
//! ([`Recent`]) serves both without a pack index search or a second inflate.
//!
//! It reads the repository's pack files itself (read-only memory maps) and hands everything else
//! (loose objects, objects kept in memory, alternates, packs that appeared later, deltas on objects
//! of another pack) and any entry it cannot decode to the repository's own object database, which
//! answers the same bytes, only slower.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use gix::odb::pack;
use gix::oid;

/// Bytes of delta bases the cache holds at most: a third of git's `core.deltaBaseCacheLimit`
/// default (96 MiB), as blame's walk needs the bases of the chains it is walking down, not every
/// base it ever met.
pub(crate) const DELTA_BASE_CACHE_BYTES: usize = 32 * 1024 * 1024;

/// Longest delta chain resolved here (git writes at most 4095); a longer one is left to the object
/// database.
const MAX_CHAIN: usize = 10_000;

/// Objects read last that [`Recent`] remembers.
const RECENT_OBJECTS: usize = 16;

/// Objects larger than this are not remembered by [`Recent`] (each one remembered costs a copy).
const RECENT_OBJECT_BYTES: usize = 1024 * 1024;

/// The repository's objects, with pack entries decoded through a cache of delta bases.
pub(crate) struct ChainCachingObjects<'a> {
    objects: &'a gix::OdbHandle,
    object_hash: gix::hash::Kind,
    packs: Vec<pack::Bundle>,
    /// Per pack, its index's fan-out: how many ids start with a byte up to each value.
    fans: Vec<[u32; 256]>,
    /// The object replacements (`refs/replace/`) as the object database applies them: (replaced id,
    /// replacement), sorted by the replaced id; empty when replacements are off.
    replacements: Vec<(gix::ObjectId, gix::ObjectId)>,
    state: RefCell<State>,
}

/// What decoding changes: the zlib state, the caches and scratch space.
struct State {
    inflate: gix::zlib::Inflate,
    bases: BaseCache,
    recent: Recent,
    /// The deltas between the entry asked for and the base it is built from, the entry asked for
    /// first.
    deltas: Vec<pack::data::Entry>,
    /// One delta's inflated instructions.
    instructions: Vec<u8>,
    /// Pack entries inflated since the start (full objects and deltas), for tests of the policy.
    inflated: usize,
}

/// Why an entry was not decoded here: the object database is asked instead (and reports its own
/// error).
#[derive(Debug)]
struct Fallback;

impl<T: std::fmt::Debug> From<T> for Fallback
where
    T: std::error::Error,
{
    fn from(_: T) -> Self {
        Fallback
    }
}

impl<'a> ChainCachingObjects<'a> {
    /// Opens the pack files of `repo` (`objects/pack/*.idx` of its common directory) next to its
    /// object database; delta bases are kept up to `cache_bytes`. A pack that cannot be opened is
    /// skipped (its objects are read through the object database).
    pub(crate) fn new(repo: &'a gix::Repository, cache_bytes: usize) -> Self {
        let object_hash = repo.object_hash();
        let indices = crate::pack_index::index_paths(&repo.common_dir().join("objects"));
        let packs: Vec<pack::Bundle> =
            indices.iter().filter_map(|path| pack::Bundle::at(path, object_hash).ok()).collect();
        let fans = packs.iter().map(|bundle| fan_out(&bundle.index)).collect();
        let mut replacements: Vec<_> = if repo.objects.ignore_replacements {
            Vec::new()
        } else {
            repo.objects.store_ref().replacements().collect()
        };
        replacements.sort_unstable();
        ChainCachingObjects {
            objects: &repo.objects,
            object_hash,
            packs,
            fans,
            replacements,
            state: RefCell::new(State {
                inflate: gix::zlib::Inflate::default(),
                bases: BaseCache::new(cache_bytes),
                recent: Recent::default(),
                deltas: Vec::new(),
                instructions: Vec::new(),
                inflated: 0,
            }),
        }
    }

    /// Decodes the entry at `offset` of pack `pack_idx`, as git's `unpack_entry`: down the chain to
    /// the first entry held as a base (taken out of the cache), remembered as read lately, or
    /// stored whole; then each delta applied in turn, the base it was applied to going (back) into
    /// the cache. The result is not cached.
    fn decode(&self, state: &mut State, pack_idx: usize, offset: u64) -> Result<(gix::objs::Kind, Vec<u8>), Fallback> {
        let bundle = &self.packs[pack_idx];
        let State { inflate, bases, recent, deltas, instructions, inflated } = state;
        deltas.clear();
        let mut at = offset;
        let (kind, mut data) = loop {
            if let Some(found) = bases.take(pack_idx, at) {
                break found;
            }
            if let Some(found) = recent.at(pack_idx, at) {
                break found;
            }
            let entry = bundle.pack.entry(at)?;
            at = match entry.header {
                pack::data::entry::Header::OfsDelta { base_distance } => {
                    entry.checked_base_pack_offset(base_distance).ok_or(Fallback)?
                }
                pack::data::entry::Header::RefDelta { base_id } => bundle
                    .index
                    .pack_offset_at_index(lookup(&bundle.index, &self.fans[pack_idx], &base_id).ok_or(Fallback)?),
                header => {
                    let kind = header.as_kind().ok_or(Fallback)?;
                    let mut data = zeroed(entry.decompressed_size)?;
                    bundle.pack.decompress_entry(&entry, inflate, &mut data)?;
                    *inflated += 1;
                    break (kind, data);
                }
            };
            if deltas.len() == MAX_CHAIN {
                return Err(Fallback);
            }
            deltas.push(entry);
        };
        while let Some(delta) = deltas.pop() {
            instructions.clear();
            instructions.try_reserve_exact(usize::try_from(delta.decompressed_size)?)?;
            instructions.resize(usize::try_from(delta.decompressed_size)?, 0);
            bundle.pack.decompress_entry(&delta, inflate, instructions)?;
            *inflated += 1;
            let result = apply_delta(&data, instructions).ok_or(Fallback)?;
            bases.put(pack_idx, at, kind, std::mem::replace(&mut data, result));
            at = delta.pack_offset();
        }
        Ok((kind, data))
    }

    /// The object read for `id`: its replacement when `refs/replace/` replaces it (one step, as the
    /// object database and git's blame read it), else `id` itself.
    fn replaced<'b>(&'b self, id: &'b oid) -> &'b oid {
        match self.replacements.binary_search_by(|(replaced, _)| replaced.as_ref().cmp(id)) {
            Ok(pos) => &self.replacements[pos].1,
            Err(_) => id,
        }
    }

    /// The pack holding `id` (the first opened, in file name order) and the entry's offset in it.
    fn locate(&self, id: &oid) -> Option<Place> {
        self.packs.iter().zip(&self.fans).enumerate().find_map(|(pack_idx, (bundle, fan))| {
            lookup(&bundle.index, fan, id).map(|index| (pack_idx, bundle.index.pack_offset_at_index(index)))
        })
    }

    /// Pack entries inflated so far.
    #[cfg(test)]
    fn inflated(&self) -> usize {
        self.state.borrow().inflated
    }
}

/// The fan-out of `index`: at each byte value, the number of ids starting with a byte up to it (the
/// index file's own table, which gix keeps private).
fn fan_out(index: &pack::index::File) -> [u32; 256] {
    let mut fan = [0; 256];
    let mut start = 0;
    for (byte, count) in (0u8..=255).zip(fan.iter_mut()) {
        // Ids are sorted: those starting with `byte` or less come first.
        let (mut low, mut high) = (start, index.num_objects());
        while low < high {
            let mid = low + (high - low) / 2;
            if index.oid_at_index(mid).first_byte() <= byte {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        *count = low;
        start = low;
    }
    fan
}

/// The entry of `id` in `index`, whose fan-out is `fan`: the engine's one pack index search
/// ([`crate::pack_index::search`], interpolating on the uniform ids before halving).
fn lookup(index: &pack::index::File, fan: &[u32; 256], id: &oid) -> Option<u32> {
    let found =
        crate::pack_index::search(fan, id.as_bytes(), |n| Ok::<_, std::convert::Infallible>(index.oid_at_index(n)));
    found.ok()?.ok()
}

/// `size` zero bytes, or [`Fallback`] when a pack header asks for more than can be allocated.
fn zeroed(size: u64) -> Result<Vec<u8>, Fallback> {
    let size = usize::try_from(size)?;
    let mut data = Vec::new();
    data.try_reserve_exact(size)?;
    data.resize(size, 0);
    Ok(data)
}

impl gix::objs::Find for ChainCachingObjects<'_> {
    fn try_find<'b>(&self, asked: &oid, buffer: &'b mut Vec<u8>) -> gix::error::Result<Option<gix::objs::Data<'b>>> {
        // The object database is asked for `asked` and replaces it itself.
        let id = self.replaced(asked);
        let mut state = self.state.borrow_mut();
        if let Some(kind) = state.recent.copy(id, buffer) {
            return Ok(Some(gix::objs::Data::new(buffer, kind, self.object_hash)));
        }
        let Some((pack_idx, offset)) = self.locate(id) else {
            drop(state);
            return self.objects.try_find(asked, buffer);
        };
        match self.decode(&mut state, pack_idx, offset) {
            Ok((kind, data)) => {
                state.recent.put(id, (pack_idx, offset), kind, &data);
                *buffer = data;
                Ok(Some(gix::objs::Data::new(buffer, kind, self.object_hash)))
            }
            // The object database reports (or works around) whatever went wrong its own way.
            Err(Fallback) => {
                drop(state);
                self.objects.try_find(asked, buffer)
            }
        }
    }
}

impl gix::objs::FindHeader for ChainCachingObjects<'_> {
    /// A packed object stored whole says its kind and size in its entry header. A delta's size is
    /// the result's and its kind the chain's base's, so it is decoded here, through the base cache,
    /// and remembered as read lately: the blob diff asks for a blob's header right before the blob
    /// itself, which then costs a copy instead of a second walk down the chain (and the object
    /// database's header walk, which bypasses the cache).
    fn try_header(&self, asked: &oid) -> gix::error::Result<Option<gix::objs::Header>> {
        let id = self.replaced(asked);
        let mut state = self.state.borrow_mut();
        if let Some((kind, size)) = state.recent.header(id) {
            return Ok(Some(gix::objs::Header { kind, size }));
        }
        let Some((pack_idx, offset)) = self.locate(id) else {
            drop(state);
            return self.objects.try_header(asked);
        };
        if let Ok(entry) = self.packs[pack_idx].pack.entry(offset)
            && let Some(kind) = entry.header.as_kind()
        {
            return Ok(Some(gix::objs::Header { kind, size: entry.decompressed_size }));
        }
        match self.decode(&mut state, pack_idx, offset) {
            Ok((kind, data)) => {
                state.recent.put(id, (pack_idx, offset), kind, &data);
                Ok(Some(gix::objs::Header { kind, size: data.len() as u64 }))
            }
            Err(Fallback) => {
                drop(state);
                self.objects.try_header(asked)
            }
        }
    }
}

/// Applies git's delta `instructions` to `base`: the result, or `None` when the delta is corrupt
/// (its base size is not `base`'s, a copy reaches past `base`, the result is not the size the delta
/// announces, or an instruction is the reserved 0).
///
/// Ours because gix-pack 0.77 keeps its applier (`data::delta::apply`) private to the crate,
/// reachable only through `decode_entry`, whose buffer copies this module avoids.
fn apply_delta(base: &[u8], instructions: &[u8]) -> Option<Vec<u8>> {
    let (base_size, rest) = delta_size(instructions)?;
    if base_size != base.len() {
        return None;
    }
    let (result_size, mut rest) = delta_size(rest)?;
    let mut result = Vec::new();
    result.try_reserve_exact(result_size).ok()?;
    while let Some((&command, tail)) = rest.split_first() {
        rest = tail;
        let piece = if command & 0x80 != 0 {
            // Copy from the base: offset (4 bytes) and size (3 bytes), each byte present if its bit is set.
            let mut fields = [0usize; 2];
            for (bit, field, shift) in
                (0..7).map(|bit| if bit < 4 { (bit, 0, bit * 8) } else { (bit, 1, (bit - 4) * 8) })
            {
                if command & (1 << bit) != 0 {
                    let (&byte, tail) = rest.split_first()?;
                    rest = tail;
                    fields[field] |= usize::from(byte) << shift;
                }
            }
            let [start, size] = fields;
            let size = if size == 0 { 0x10000 } else { size };
            base.get(start..start.checked_add(size)?)?
        } else if command != 0 {
            // Insert the next `command` bytes.
            let (piece, tail) = rest.split_at_checked(usize::from(command))?;
            rest = tail;
            piece
        } else {
            return None;
        };
        if result.len() + piece.len() > result_size {
            return None;
        }
        result.extend_from_slice(piece);
    }
    (result.len() == result_size).then_some(result)
}

/// A size of a delta's header (little-endian, 7 bits a byte, the high bit set on all but the last)
/// and the rest.
fn delta_size(data: &[u8]) -> Option<(usize, &[u8])> {
    let mut size: u64 = 0;
    for (idx, &byte) in data.iter().enumerate() {
        let shift = u32::try_from(idx).ok()?.checked_mul(7)?;
        if shift > 63 {
            return None;
        }
        size |= u64::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some((usize::try_from(size).ok()?, &data[idx + 1..]));
        }
    }
    None
}

/// Where an entry is: the index of its pack among the pack files opened, and its offset in that
/// pack.
type Place = (usize, u64);

/// Delta bases by (pack, offset), the least recently used evicted first once `limit` bytes are
/// held. A base is used by taking it out and putting it back, so the order of putting is the order
/// of use.
struct BaseCache {
    limit: usize,
    used: usize,
    slots: HashMap<Place, Base, BuildHasherDefault<OffsetHasher>>,
    /// Places with the number of the put that filled them, oldest first; a put no longer holding
    /// its place is skipped.
    order: VecDeque<(Place, u64)>,
    puts: u64,
}

/// One base held, with the number of the put that holds it.
struct Base {
    put: u64,
    kind: gix::objs::Kind,
    data: Vec<u8>,
}

impl BaseCache {
    fn new(limit: usize) -> Self {
        BaseCache { limit, used: 0, slots: HashMap::default(), order: VecDeque::new(), puts: 0 }
    }

    /// The base at (`pack_idx`, `offset`), no longer held.
    fn take(&mut self, pack_idx: usize, offset: u64) -> Option<(gix::objs::Kind, Vec<u8>)> {
        let base = self.slots.remove(&(pack_idx, offset))?;
        self.used -= base.data.len();
        Some((base.kind, base.data))
    }

    /// Holds `data` as the base at (`pack_idx`, `offset`), evicting the least recently used bases
    /// beyond the limit; a base larger than the limit is not held.
    fn put(&mut self, pack_idx: usize, offset: u64, kind: gix::objs::Kind, data: Vec<u8>) {
        if data.len() > self.limit {
            return;
        }
        let place = (pack_idx, offset);
        self.puts += 1;
        self.used += data.len();
        if let Some(previous) = self.slots.insert(place, Base { put: self.puts, kind, data }) {
            self.used -= previous.data.len();
        }
        self.order.push_back((place, self.puts));
        while self.used > self.limit {
            let Some((place, put)) = self.order.pop_front() else { break };
            if self.slots.get(&place).is_some_and(|base| base.put == put) {
                self.take(place.0, place.1);
            }
        }
        // Places taken out leave stale entries behind: drop them once they outnumber the held ones.
        if self.order.len() > 2 * self.slots.len() + 64 {
            let slots = &self.slots;
            self.order.retain(|(place, put)| slots.get(place).is_some_and(|base| base.put == *put));
        }
    }

    #[cfg(test)]
    fn holds(&self, pack_idx: usize, offset: u64) -> bool {
        self.slots.contains_key(&(pack_idx, offset))
    }
}

/// The objects read last, by id and by place in the pack, as copies: the walk reads a commit again
/// right after reading it, and an older version is often a delta on the version read just before.
#[derive(Default)]
struct Recent {
    slots: Vec<RecentObject>,
    /// The slot written next once all are in use.
    next: usize,
}

/// One object of [`Recent`].
struct RecentObject {
    id: gix::ObjectId,
    at: Place,
    kind: gix::objs::Kind,
    data: Vec<u8>,
}

impl Recent {
    /// Copies the object `id` into `out` if it was read lately.
    fn copy(&self, id: &oid, out: &mut Vec<u8>) -> Option<gix::objs::Kind> {
        let object = self.slots.iter().find(|object| object.id == id)?;
        out.clear();
        out.extend_from_slice(&object.data);
        Some(object.kind)
    }

    /// The kind and size of the object `id` if it was read lately.
    fn header(&self, id: &oid) -> Option<(gix::objs::Kind, u64)> {
        let object = self.slots.iter().find(|object| object.id == id)?;
        Some((object.kind, object.data.len() as u64))
    }

    /// A copy of the object at (`pack_idx`, `offset`) if it was read lately.
    fn at(&self, pack_idx: usize, offset: u64) -> Option<(gix::objs::Kind, Vec<u8>)> {
        let object = self.slots.iter().find(|object| object.at == (pack_idx, offset))?;
        Some((object.kind, object.data.clone()))
    }

    /// Remembers a copy of `data`, forgetting the object remembered longest when all slots are in
    /// use.
    fn put(&mut self, id: &oid, at: Place, kind: gix::objs::Kind, data: &[u8]) {
        if data.len() > RECENT_OBJECT_BYTES {
            return;
        }
        if self.slots.len() < RECENT_OBJECTS {
            self.slots.push(RecentObject { id: id.to_owned(), at, kind, data: data.to_vec() });
            return;
        }
        let object = &mut self.slots[self.next];
        self.next = (self.next + 1) % RECENT_OBJECTS;
        object.id = id.to_owned();
        object.at = at;
        object.kind = kind;
        object.data.clear();
        object.data.extend_from_slice(data);
    }
}

/// Hashes the (pack, offset) keys of [`BaseCache`]: a multiply-rotate mix, much cheaper than
/// SipHash for keys no caller chooses.
#[derive(Default)]
struct OffsetHasher(u64);

impl Hasher for OffsetHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.write_u64(u64::from(*byte));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::path::Path;
    use std::process::{Command, Stdio};

    use super::*;

    const VERSIONS: usize = 4;

    /// Runs `git ARGS` (a `fast-import` command line) in `dir` with `stream` on its standard input;
    /// panics unless it succeeds.
    fn fast_import(dir: &Path, args: &[&str], stream: &str) {
        let mut child = Command::new("git")
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .spawn()
            .expect("git fast-import runs");
        child.stdin.take().expect("stdin").write_all(stream.as_bytes()).expect("stream written");
        assert!(child.wait().expect("git fast-import ends").success());
    }

    fn git(dir: &Path, args: &[&str]) -> String {
        let output = Command::new("git").args(args).current_dir(dir).output().expect("git runs");
        assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).expect("UTF-8")
    }

    /// Version `version` of the file: 200 lines, line `version` changed by each version.
    fn content(version: usize) -> String {
        (0..200)
            .map(|line| if line == version * 7 { format!("changed in {version}\n") } else { format!("line {line}\n") })
            .collect()
    }

    /// A repository of `VERSIONS` commits each changing one file, written by `git fast-import`:
    /// each version of the file a delta on the one before (the newest at the end of the chain, as
    /// in the blame-history fixture).
    fn fast_import_repo() -> tempfile::TempDir {
        let temp = tempfile::tempdir().expect("temp dir");
        git(temp.path(), &["init", "-q", "-b", "main", "."]);
        let mut stream = String::new();
        for version in 0..VERSIONS {
            let data = content(version);
            stream.push_str(&format!(
                "commit refs/heads/main\ncommitter A <a@example.com> {} +0000\ndata 2\nv{version}\n",
                1_700_000_000 + version
            ));
            stream.push_str(&format!("M 100644 inline file.txt\ndata {}\n{data}\n", data.len()));
        }
        stream.push_str("done\n");
        // Kept as a pack however few the objects (git unpacks fewer than 100 by default).
        fast_import(temp.path(), &["-c", "fastimport.unpackLimit=0", "fast-import", "--quiet", "--done"], &stream);
        temp
    }

    /// The blob of `file.txt` at version `version` (0 the oldest): its id and place in the (only)
    /// pack.
    fn blob(repo: &gix::Repository, objects: &ChainCachingObjects<'_>, version: usize) -> (gix::ObjectId, u64) {
        let dir = repo.workdir().expect("work tree");
        let rev = format!("main~{}:file.txt", VERSIONS - 1 - version);
        let id = gix::ObjectId::from_hex(git(dir, &["rev-parse", &rev]).trim().as_bytes()).expect("an object id");
        let index = objects.packs[0].index.lookup(id).expect("the blob is packed");
        (id, objects.packs[0].index.pack_offset_at_index(index))
    }

    fn read(objects: &ChainCachingObjects<'_>, id: &gix::ObjectId) -> Vec<u8> {
        let mut buffer = Vec::new();
        gix::objs::Find::try_find(objects, id, &mut buffer).expect("readable").expect("found").data.to_vec()
    }

    /// The cache keeps the bases a chain was resolved from, not the object asked for; an object
    /// asked for that is held as a base leaves the cache; objects read lately are not inflated
    /// again.
    #[test]
    fn only_delta_bases_are_kept_and_an_object_read_leaves_them() {
        let temp = fast_import_repo();
        let repo = gix::open(temp.path()).expect("repository");
        let objects = ChainCachingObjects::new(&repo, DELTA_BASE_CACHE_BYTES);
        let blobs: Vec<_> = (0..VERSIONS).map(|version| blob(&repo, &objects, version)).collect();
        let holds = |version: usize| objects.state.borrow().bases.holds(0, blobs[version].1);

        // The newest version: its whole chain is inflated, every version under it kept, itself not.
        assert_eq!(read(&objects, &blobs[3].0), content(3).as_bytes());
        assert_eq!(objects.inflated(), VERSIONS, "the full oldest version and three deltas");
        assert!(holds(0) && holds(1) && holds(2), "the bases of the chain are kept");
        assert!(!holds(3), "the object asked for is not a base: not kept");

        // The next older version comes out of the cache without inflating anything, and leaves it.
        assert_eq!(read(&objects, &blobs[2].0), content(2).as_bytes());
        assert_eq!(objects.inflated(), VERSIONS);
        assert!(!holds(2) && holds(1) && holds(0));

        // Read again right away: remembered, not decoded again.
        assert_eq!(read(&objects, &blobs[3].0), content(3).as_bytes());
        assert_eq!(read(&objects, &blobs[2].0), content(2).as_bytes());
        assert_eq!(objects.inflated(), VERSIONS);
    }

    /// A header is read without inflating a whole entry, and a delta's header costs no second
    /// decode when the object is read right after (as the blob diff reads it).
    #[test]
    fn headers_are_git_s_and_a_delta_s_header_decodes_it_once() {
        let temp = fast_import_repo();
        let repo = gix::open(temp.path()).expect("repository");
        let objects = ChainCachingObjects::new(&repo, DELTA_BASE_CACHE_BYTES);
        let blobs: Vec<_> = (0..VERSIONS).map(|version| blob(&repo, &objects, version)).collect();
        let header =
            |id: &gix::ObjectId| gix::objs::FindHeader::try_header(&objects, id).expect("readable").expect("found");
        let size = |version: usize| content(version).len() as u64;

        // The oldest version is stored whole: its header is the entry's.
        let oldest = header(&blobs[0].0);
        assert_eq!((oldest.kind, oldest.size), (gix::objs::Kind::Blob, size(0)));
        assert_eq!(objects.inflated(), 0);

        // The newest is a delta: decoded once for its header, then read from memory.
        let newest = header(&blobs[3].0);
        assert_eq!((newest.kind, newest.size), (gix::objs::Kind::Blob, size(3)));
        assert_eq!(objects.inflated(), VERSIONS);
        assert_eq!(read(&objects, &blobs[3].0), content(3).as_bytes());
        assert_eq!(objects.inflated(), VERSIONS);
    }

    /// The index search finds every packed object where gix's finds it, and no absent one, in both
    /// layouts.
    #[test]
    fn the_index_search_agrees_with_gix_s() {
        let temp = fast_import_repo();
        for repacked in [false, true] {
            if repacked {
                git(temp.path(), &["repack", "-adf", "-q"]);
            }
            let repo = gix::open(temp.path()).expect("repository");
            let objects = ChainCachingObjects::new(&repo, DELTA_BASE_CACHE_BYTES);
            let (index, fan) = (&objects.packs[0].index, &objects.fans[0]);
            assert!(index.num_objects() > 8, "a pack worth searching");
            for entry in index.iter() {
                assert_eq!(lookup(index, fan, &entry.oid), index.lookup(entry.oid), "{}", entry.oid);
                let mut absent = entry.oid;
                absent.as_mut_slice()[19] ^= 0x5a;
                assert_eq!(lookup(index, fan, &absent), index.lookup(absent), "{absent}");
            }
            for byte in [0x00, 0xff] {
                let absent = gix::ObjectId::from_bytes_or_panic(&[byte; 20]);
                assert_eq!(lookup(index, fan, &absent), None);
            }
        }
    }

    /// In a pack large enough for the search to interpolate (about 20 ids per first byte), every
    /// object is found where gix finds it and no absent id is.
    #[test]
    fn the_index_search_agrees_with_gix_s_in_a_large_pack() {
        let temp = tempfile::tempdir().expect("temp dir");
        git(temp.path(), &["init", "-q", "-b", "main", "."]);
        let stream: String =
            (0..5000).map(|blob| format!("blob\ndata {}\nblob {blob}\n\n", 6 + blob.to_string().len())).collect();
        fast_import(temp.path(), &["fast-import", "--quiet"], &stream);
        let repo = gix::open(temp.path()).expect("repository");
        let objects = ChainCachingObjects::new(&repo, DELTA_BASE_CACHE_BYTES);
        let (index, fan) = (&objects.packs[0].index, &objects.fans[0]);
        assert_eq!(index.num_objects(), 5000);
        for entry in index.iter() {
            assert_eq!(lookup(index, fan, &entry.oid), index.lookup(entry.oid), "{}", entry.oid);
            for byte in [19, 7, 3] {
                let mut absent = entry.oid;
                absent.as_mut_slice()[byte] ^= 0x5a;
                assert_eq!(lookup(index, fan, &absent), index.lookup(absent), "{absent}");
            }
        }
    }

    /// Once over the limit the base used longest ago goes first: a base taken and put back counts
    /// as just used.
    #[test]
    fn the_least_recently_used_base_is_evicted() {
        let mut cache = BaseCache::new(10);
        let kind = gix::objs::Kind::Blob;
        cache.put(0, 1, kind, b"aaaa".to_vec());
        cache.put(0, 2, kind, b"bbbb".to_vec());
        // Base 1 serves a delta: taken out and put back.
        let (kind, data) = cache.take(0, 1).expect("held");
        cache.put(0, 1, kind, data);
        cache.put(0, 3, kind, b"cccc".to_vec());
        assert!(cache.holds(0, 1), "used last but one: kept");
        assert!(!cache.holds(0, 2), "used longest ago: evicted");
        assert!(cache.holds(0, 3));
        assert_eq!(cache.used, 8);
        // A base larger than the whole limit is not held.
        cache.put(0, 4, kind, vec![0; 11]);
        assert!(!cache.holds(0, 4) && cache.holds(0, 1) && cache.holds(0, 3));
    }

    /// Every version of the file and of the root tree reads as `git cat-file` shows it, from both
    /// layouts, newest first (as a walk reads them) and back, also with a cache so small that bases
    /// are evicted all the time.
    #[test]
    fn every_version_reads_as_git_shows_it_in_both_layouts() {
        let temp = fast_import_repo();
        assert_eq!(std::fs::read_dir(temp.path().join(".git/objects/pack")).expect("pack dir").count(), 2, "one pack");
        for repacked in [false, true] {
            if repacked {
                git(temp.path(), &["repack", "-adf", "-q"]);
            }
            let repo = gix::open(temp.path()).expect("repository");
            for limit in [DELTA_BASE_CACHE_BYTES, 1500] {
                let objects = ChainCachingObjects::new(&repo, limit);
                for version in (0..VERSIONS).rev().chain(0..VERSIONS) {
                    for (kind, rev) in [("blob", ":file.txt"), ("tree", "^{tree}")] {
                        let rev = format!("main~{}{rev}", VERSIONS - 1 - version);
                        let id = git(temp.path(), &["rev-parse", &rev]);
                        let id = gix::ObjectId::from_hex(id.trim().as_bytes()).expect("an object id");
                        let shown = Command::new("git")
                            .args(["cat-file", kind, &id.to_string()])
                            .current_dir(temp.path())
                            .output()
                            .expect("git cat-file runs")
                            .stdout;
                        assert_eq!(read(&objects, &id), shown, "{rev}, repacked: {repacked}, limit {limit}");
                    }
                }
            }
        }
    }

    /// Corrupt deltas are refused, not applied.
    #[test]
    fn corrupt_deltas_are_refused() {
        let base = b"0123456789";
        // base size 10, result size 4, copy 4 bytes from offset 2.
        assert_eq!(apply_delta(base, &[10, 4, 0x91, 2, 4]).as_deref(), Some(&b"2345"[..]));
        // base size 10, result size 3, insert "abc".
        assert_eq!(apply_delta(base, &[10, 3, 3, b'a', b'b', b'c']).as_deref(), Some(&b"abc"[..]));
        assert_eq!(apply_delta(base, &[9, 4, 0x91, 2, 4]), None, "wrong base size");
        assert_eq!(apply_delta(base, &[10, 4, 0x91, 8, 4]), None, "copy past the base");
        assert_eq!(apply_delta(base, &[10, 4, 0]), None, "reserved instruction");
        assert_eq!(apply_delta(base, &[10, 5, 0x91, 2, 4]), None, "shorter than announced");
        assert_eq!(apply_delta(base, &[10, 3, 0x91, 2, 4]), None, "longer than announced");
        assert_eq!(apply_delta(base, &[10, 4, 5, b'a']), None, "insert past the end");
        assert_eq!(apply_delta(base, &[0x80]), None, "size never ends");
    }
}
