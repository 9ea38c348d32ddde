//! Object reading for long history walks, with a delta base cache that keeps every base it decodes, as git's does.
//!
//! gix's pack cache stores only the object asked for. A pack lays out an object as a chain of deltas on older
//! (`git fast-import`) or newer (`pack-objects`) versions, so a walk back through history that asks for each
//! version in turn replays the same chain again and again when the versions it asks for next are the chain's
//! intermediate bases. [`ChainCachingObjects`] resolves a chain from its last cached (or full) entry forward,
//! one delta at a time, and keeps each result keyed by its place in the pack: the next older version is then one
//! cache lookup, or one delta away. It reads the repository's pack files itself (read-only memory maps) and hands
//! everything else (loose objects, objects kept in memory, alternates, packs that appeared later) to the
//! repository's own object database, which answers the same bytes, only slower.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use gix::odb::pack;
use gix::oid;

/// Bytes of decoded objects the delta base cache holds at most (git's `core.deltaBaseCacheLimit` is 96 MiB).
pub(crate) const DELTA_BASE_CACHE_BYTES: usize = 64 * 1024 * 1024;

/// Longest delta chain resolved entry by entry; a longer one (git writes at most 4095) is left to gix whole.
const MAX_CHAIN: usize = 10_000;

/// The repository's objects, with pack entries decoded through a cache of every delta base met.
pub(crate) struct ChainCachingObjects<'a> {
    objects: &'a gix::OdbHandle,
    object_hash: gix::hash::Kind,
    packs: Vec<pack::Bundle>,
    state: RefCell<State>,
}

/// What decoding changes: the zlib state, the cache, where objects were found, and a scratch list of chain
/// entries.
struct State {
    inflate: gix::zlib::Inflate,
    cache: BaseCache,
    /// Pack and offset of each object looked up so far (a walk reads a commit several times; a hash lookup is
    /// cheaper than a search of the pack index).
    locations: gix::hashtable::HashMap<gix::ObjectId, (usize, u64)>,
    chain: Vec<pack::data::Entry>,
}

impl<'a> ChainCachingObjects<'a> {
    /// Opens the pack files of `repo` (`objects/pack/*.idx` of its common directory) next to its object database.
    /// A pack that cannot be opened is skipped (its objects are read through the object database).
    pub(crate) fn new(repo: &'a gix::Repository, cache_bytes: usize) -> Self {
        let object_hash = repo.object_hash();
        let mut indices: Vec<_> = std::fs::read_dir(repo.common_dir().join("objects").join("pack"))
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "idx"))
            .collect();
        indices.sort();
        let mut packs: Vec<pack::Bundle> =
            indices.iter().filter_map(|path| pack::Bundle::at(path, object_hash).ok()).collect();
        // The cache tells packs apart by this id.
        for (pack_idx, bundle) in packs.iter_mut().enumerate() {
            bundle.pack.id = u32::try_from(pack_idx).unwrap_or(u32::MAX);
        }
        ChainCachingObjects {
            objects: &repo.objects,
            object_hash,
            packs,
            state: RefCell::new(State {
                inflate: gix::zlib::Inflate::default(),
                cache: BaseCache::new(cache_bytes),
                locations: gix::hashtable::HashMap::default(),
                chain: Vec::new(),
            }),
        }
    }

    /// Decodes the entry at `offset` of pack `pack_idx` into `out`, resolving its delta chain from the newest
    /// entry already cached (or its full base) forward and caching every entry on the way (keyed, as gix's
    /// decoder keys its cache, by the pack's id and the entry's data offset).
    fn decode(&self, pack_idx: usize, offset: u64, out: &mut Vec<u8>) -> gix::error::Result<gix::objs::Kind> {
        let bundle = &self.packs[pack_idx];
        let pack_id = bundle.pack.id;
        let mut state = self.state.borrow_mut();
        let State { inflate, cache, chain, .. } = &mut *state;
        let mut cursor = bundle.pack.entry(offset)?;
        if let Some((kind, _)) = pack::cache::DecodeEntry::get(cache, pack_id, cursor.data_offset, out) {
            return Ok(kind);
        }
        chain.clear();
        loop {
            let base = match cursor.header {
                pack::data::entry::Header::OfsDelta { base_distance } => cursor.checked_base_pack_offset(base_distance),
                _ => None,
            };
            chain.push(cursor);
            let Some(base) = base.filter(|_| chain.len() < MAX_CHAIN) else { break };
            let next = bundle.pack.entry(base)?;
            if cache.contains(pack_id, next.data_offset) {
                break;
            }
            cursor = next;
        }
        let resolve =
            |id: &oid, buffer: &mut Vec<u8>| -> gix::error::Result<Option<pack::data::decode::entry::ResolvedBase>> {
                if let Some(index) = bundle.index.lookup(id) {
                    let entry = bundle.pack.entry(bundle.index.pack_offset_at_index(index))?;
                    return Ok(Some(pack::data::decode::entry::ResolvedBase::InPack(entry)));
                }
                Ok(gix::objs::Find::try_find(self.objects, id, buffer)?
                    .map(|data| (data.kind, data.data.len()))
                    .map(|(kind, end)| pack::data::decode::entry::ResolvedBase::OutOfPack { kind, end }))
            };
        let mut kind = gix::objs::Kind::Blob;
        for entry in chain.drain(..).rev() {
            let data_offset = entry.data_offset;
            let is_delta = entry.header.is_delta();
            let outcome = bundle.pack.decode_entry(entry, out, inflate, &resolve, cache)?;
            if !is_delta {
                cache.put_entry(pack_id, data_offset, out, outcome.kind, outcome.compressed_size);
            }
            kind = outcome.kind;
        }
        Ok(kind)
    }
}

impl gix::objs::Find for ChainCachingObjects<'_> {
    fn try_find<'b>(&self, id: &oid, buffer: &'b mut Vec<u8>) -> gix::error::Result<Option<gix::objs::Data<'b>>> {
        let known = self.state.borrow().locations.get(id).copied();
        let found = known.or_else(|| {
            let found = self.packs.iter().enumerate().find_map(|(pack_idx, bundle)| {
                bundle.index.lookup(id).map(|index| (pack_idx, bundle.index.pack_offset_at_index(index)))
            });
            if let Some(found) = found {
                self.state.borrow_mut().locations.insert(id.to_owned(), found);
            }
            found
        });
        let Some((pack_idx, offset)) = found else {
            return self.objects.try_find(id, buffer);
        };
        match self.decode(pack_idx, offset, buffer) {
            Ok(kind) => Ok(Some(gix::objs::Data::new(buffer, kind, self.object_hash))),
            // The object database reports (or works around) whatever went wrong its own way.
            Err(_) => self.objects.try_find(id, buffer),
        }
    }
}

impl gix::objs::FindHeader for ChainCachingObjects<'_> {
    fn try_header(&self, id: &oid) -> gix::error::Result<Option<gix::objs::Header>> {
        self.objects.try_header(id)
    }
}

/// Decoded pack entries by (pack, offset), the oldest evicted first once `limit` bytes are held (a walk asks for
/// the entries it decoded last, so first in, first out serves it as well as least recently used, for less work).
struct BaseCache {
    limit: usize,
    used: usize,
    slots: HashMap<(u32, u64), Slot, BuildHasherDefault<OffsetHasher>>,
    /// Keys in the order they were put.
    order: VecDeque<(u32, u64)>,
}

/// One decoded entry.
struct Slot {
    kind: gix::objs::Kind,
    data: Vec<u8>,
    compressed_size: usize,
}

impl BaseCache {
    fn new(limit: usize) -> Self {
        BaseCache { limit, used: 0, slots: HashMap::default(), order: VecDeque::new() }
    }

    fn contains(&self, pack_id: u32, offset: u64) -> bool {
        self.slots.contains_key(&(pack_id, offset))
    }

    fn put_entry(&mut self, pack_id: u32, offset: u64, data: &[u8], kind: gix::objs::Kind, compressed_size: usize) {
        if data.len() > self.limit / 8 || self.slots.contains_key(&(pack_id, offset)) {
            return;
        }
        self.used += data.len();
        self.order.push_back((pack_id, offset));
        self.slots.insert((pack_id, offset), Slot { kind, data: data.to_vec(), compressed_size });
        while self.used > self.limit {
            let Some(key) = self.order.pop_front() else { break };
            if let Some(slot) = self.slots.remove(&key) {
                self.used -= slot.data.len();
            }
        }
    }
}

impl pack::cache::DecodeEntry for BaseCache {
    fn put(&mut self, pack_id: u32, offset: u64, data: &[u8], kind: gix::objs::Kind, compressed_size: usize) {
        self.put_entry(pack_id, offset, data, kind, compressed_size);
    }

    fn get(&mut self, pack_id: u32, offset: u64, out: &mut Vec<u8>) -> Option<(gix::objs::Kind, usize)> {
        let slot = self.slots.get(&(pack_id, offset))?;
        out.clear();
        out.extend_from_slice(&slot.data);
        Some((slot.kind, slot.compressed_size))
    }
}

/// Hashes the (pack, offset) keys of [`BaseCache`]: a multiply-rotate mix, much cheaper than SipHash for keys no
/// caller chooses.
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

    fn write_u32(&mut self, value: u32) {
        self.write_u64(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
