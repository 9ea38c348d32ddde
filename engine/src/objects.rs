//! The first object reads of an opened repository, answered from its packs without loading gix's
//! pack index.
//!
//! gix's object database loads a pack index (`pack::index::File::at`) on its first lookup, and that
//! load reads the index's whole 32-bit offset table to count its large offsets (4 bytes per object:
//! 2.2 MB and 3.1M instructions for a 558,000-object pack, a third of a cold `repo.history` of 50
//! commits). git maps the index and checks only its length (`packfile.c`, `check_packed_git_idx`).
//! The engine opens repositories with [`read_packs_first`]: an object cache
//! ([`gix::odb::pack::cache::Object`], which gix's object handle asks before its store) that finds
//! a missing object in the packs itself, searching each index by positioned reads ([`IndexFile`])
//! and decoding the entry with gix's own pack decoder. A positioned-read search costs a few system
//! calls where a mapped index costs memory reads, so direct reads stop after a budget that scales
//! with the objects gix's check would have read ([`OBJECTS_PER_DIRECT_LOOKUP`]); from then on, and
//! for every object not in a pack (loose objects, alternates, packs written since, deltas on
//! another pack's objects), gix's store answers, as it always did. A short read (a page of history,
//! one commit's diff) thus never pays the check, and a long one pays at most about twice it (the
//! lookups spent, then the check: the rent-or-buy bound).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use gix::odb::pack;
use gix::odb::pack::data::decode::entry::ResolvedBase;

use crate::pack_index::IndexFile;

/// Objects in a repository's packs per direct lookup it is allowed. gix's index check reads 4 bytes
/// per object: 5.5 instructions each (callgrind), and 0.3-0.4 ms of CPU for 558,000 objects (a
/// gix-pack build without it), so about 0.6 ns. A positioned read of the index costs about 0.5 us
/// here (timed from Python, its call included), and a direct lookup takes two when the first window
/// of ids holds the id (the window, then the entry's offset; one more per window read again), where
/// a mapped index takes memory reads. Direct lookups stop when they would have cost about what the
/// check costs: 272 for a 558,000-object pack, none below 2,048 objects, where gix's check costs
/// about a microsecond.
pub(crate) const OBJECTS_PER_DIRECT_LOOKUP: usize = 2048;

/// Makes `repo` find objects in its packs directly for its first reads ([module docs](self)),
/// remembering up to `memory_bytes` of the objects read (0: none), as gix's `object_cache_size`
/// does. Replaces any object cache set before. A repository that replaces objects (`refs/replace/`,
/// unless ignored) is left to gix alone.
pub(crate) fn read_packs_first(repo: &mut gix::Repository, memory_bytes: usize) {
    match Packs::of(repo) {
        Some(packs) => install(repo, Arc::new(packs), memory_bytes),
        None => repo.object_cache_size(memory_bytes),
    }
}

/// Sets `repo`'s object cache to read `packs` directly, remembering up to `memory_bytes` of the
/// objects read.
fn install(repo: &mut gix::Repository, packs: Arc<Packs>, memory_bytes: usize) {
    repo.objects.set_object_cache(move || {
        Box::new(DirectReads {
            packs: Arc::clone(&packs),
            inflate: gix::zlib::Inflate::default(),
            bases: DeltaBases::default(),
            memory: (memory_bytes > 0).then(|| pack::cache::object::MemoryCappedHashmap::new(memory_bytes)),
        })
    });
}

/// The delta bases a handle's direct reads keep: gix's own default pack cache (64 entries, up to 96
/// MiB), which its store's reads use too. Trees and blobs are stored as delta chains (big-history's
/// root trees: about nine deltas each), and the objects one call reads (a commit's trees and their
/// parents' versions) share their bases.
type DeltaBases = pack::cache::lru::StaticLinkedList<64>;

/// The object cache of one object handle: its memory of objects read, then the packs read directly.
struct DirectReads {
    packs: Arc<Packs>,
    inflate: gix::zlib::Inflate,
    bases: DeltaBases,
    memory: Option<pack::cache::object::MemoryCappedHashmap>,
}

impl pack::cache::Object for DirectReads {
    fn put(&mut self, id: gix::ObjectId, kind: gix::object::Kind, data: &[u8]) {
        if let Some(memory) = &mut self.memory {
            memory.put(id, kind, data);
        }
    }

    fn get(&mut self, id: &gix::ObjectId, out: &mut Vec<u8>) -> Option<gix::object::Kind> {
        if let Some(kind) = self.memory.as_mut().and_then(|memory| memory.get(id, out)) {
            return Some(kind);
        }
        let kind = self.packs.read(id, out, &mut self.inflate, &mut self.bases)?;
        self.put(*id, kind, out);
        Some(kind)
    }
}

/// A repository's pack files as found when first read from, and the direct lookups left.
struct Packs {
    /// The object directory (`objects/`).
    objects: PathBuf,
    hash: gix::hash::Kind,
    opened: OnceLock<Vec<Pack>>,
    /// Direct lookups left; set when the packs are opened.
    lookups_left: AtomicUsize,
    /// Objects served from the packs, for tests.
    #[cfg(test)]
    served: AtomicUsize,
}

/// One pack: its index, read by positioned reads, and its data file, mapped at its first use.
struct Pack {
    index: IndexFile,
    data_path: PathBuf,
    data: OnceLock<Option<pack::data::File>>,
}

impl Packs {
    /// The packs of `repo`, to be opened at the first read; `None` when the repository replaces
    /// objects (`refs/replace/`, unless ignored), which gix's store applies and direct reads would
    /// not.
    fn of(repo: &gix::Repository) -> Option<Self> {
        let store = repo.objects.store_ref();
        let replaces = !repo.objects.ignore_replacements && store.replacements().next().is_some();
        (!replaces).then(|| Packs::new(store.path(), repo.object_hash()))
    }

    fn new(objects: &Path, hash: gix::hash::Kind) -> Self {
        Packs {
            objects: objects.to_owned(),
            hash,
            opened: OnceLock::new(),
            lookups_left: AtomicUsize::new(0),
            #[cfg(test)]
            served: AtomicUsize::new(0),
        }
    }

    /// Every `objects/pack/*.idx` that opens as an index git would use (the others are gix's to
    /// read or report).
    fn opened(&self) -> &[Pack] {
        self.opened.get_or_init(|| {
            let packs: Vec<Pack> = crate::pack_index::index_paths(&self.objects)
                .into_iter()
                .filter_map(|path| {
                    let index = IndexFile::open(&path, self.hash).ok()?;
                    Some(Pack { index, data_path: path.with_extension("pack"), data: OnceLock::new() })
                })
                .collect();
            let objects: usize = packs.iter().map(|pack| pack.index.num_objects() as usize).sum();
            self.lookups_left.store(objects / OBJECTS_PER_DIRECT_LOOKUP, Ordering::Relaxed);
            packs
        })
    }

    /// Takes one direct lookup from the budget; `false` when none is left.
    fn take_lookup(&self) -> bool {
        self.lookups_left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| left.checked_sub(1)).is_ok()
    }

    /// The pack holding `id`, its data file and `id`'s entry there, when a lookup is left and
    /// everything reads.
    fn locate(&self, id: &gix::oid) -> Option<(&Pack, &pack::data::File, pack::data::Entry)> {
        let packs = self.opened();
        if packs.is_empty() || !self.take_lookup() {
            return None;
        }
        packs.iter().find_map(|pack| {
            let n = pack.index.search(id).ok()?.ok()?;
            let offset = pack.index.pack_offset(n).ok()?;
            let data = pack.data.get_or_init(|| pack::data::File::at(&pack.data_path, self.hash).ok()).as_ref()?;
            Some((pack, data, data.entry(offset).ok()?))
        })
    }

    /// `id`'s kind, its content written to `out`, when a pack holds it, a lookup is left and its
    /// entry decodes; `None` otherwise (gix's store then reads it, and reports any error its own
    /// way).
    fn read(
        &self,
        id: &gix::oid,
        out: &mut Vec<u8>,
        inflate: &mut gix::zlib::Inflate,
        bases: &mut DeltaBases,
    ) -> Option<gix::object::Kind> {
        let (pack, data, entry) = self.locate(id)?;
        let base = |base: &gix::oid, _: &mut Vec<u8>| Ok(pack.base(data, base).map(ResolvedBase::InPack));
        let outcome = data.decode_entry(entry, out, inflate, &base, bases).ok()?;
        #[cfg(test)]
        self.served.fetch_add(1, Ordering::Relaxed);
        Some(outcome.kind)
    }

    /// `id`'s kind and size in bytes, as [`Packs::read`] would find them: an entry stored whole
    /// says them in its header; for a delta, the size is at the start of its instructions and the
    /// kind is its chain's base's, so only the first bytes of the delta are inflated (gix's
    /// `decode_header`).
    fn header(&self, id: &gix::oid, inflate: &mut gix::zlib::Inflate) -> Option<gix::objs::Header> {
        let (pack, data, entry) = self.locate(id)?;
        let base = |base: &gix::oid| Ok(pack.base(data, base).map(pack::data::decode::header::ResolvedBase::InPack));
        let outcome = data.decode_header(entry, inflate, &base).ok()?;
        #[cfg(test)]
        self.served.fetch_add(1, Ordering::Relaxed);
        Some(gix::objs::Header { kind: outcome.kind, size: outcome.object_size })
    }
}

impl Pack {
    /// The entry of a delta's base named by id: git writes such deltas (outside thin packs) on a
    /// base in the same pack; a base elsewhere is not found, the decode fails, and gix's store
    /// takes over.
    fn base(&self, data: &pack::data::File, base: &gix::oid) -> Option<pack::data::Entry> {
        let n = self.index.search(base).ok()?.ok()?;
        data.entry(self.index.pack_offset(n).ok()?).ok()
    }
}

/// gix's object handle of a repository, whose headers (kind and size, asked before a blob is read
/// for a diff) come from its packs directly while lookups last, as its objects do through
/// [`read_packs_first`]; gix's store answers otherwise. The lookups are this value's own, counted
/// as [`Packs`]'s.
pub(crate) struct DirectHeaders<'repo> {
    objects: &'repo gix::OdbHandle,
    packs: Option<Packs>,
    inflate: std::cell::RefCell<gix::zlib::Inflate>,
}

impl<'repo> DirectHeaders<'repo> {
    /// Headers of `repo`'s objects; read by gix alone when the repository replaces objects.
    pub(crate) fn new(repo: &'repo gix::Repository) -> Self {
        DirectHeaders { objects: &repo.objects, packs: Packs::of(repo), inflate: std::cell::RefCell::default() }
    }
}

impl gix::objs::FindHeader for DirectHeaders<'_> {
    fn try_header(&self, id: &gix::oid) -> gix::error::Result<Option<gix::objs::Header>> {
        let direct = self.packs.as_ref().and_then(|packs| packs.header(id, &mut self.inflate.borrow_mut()));
        match direct {
            Some(header) => Ok(Some(header)),
            None => self.objects.try_header(id),
        }
    }
}

impl gix::objs::Find for DirectHeaders<'_> {
    fn try_find<'a>(&self, id: &gix::oid, buffer: &'a mut Vec<u8>) -> gix::error::Result<Option<gix::objs::Data<'a>>> {
        self.objects.try_find(id, buffer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Opens the fixture with direct reads allowed `lookups` lookups, reads every object
    /// `git cat-file --batch-all-objects` lists through it, checks each kind and content against
    /// `git cat-file` and each header ([`DirectHeaders`], as many lookups) against the object, and
    /// returns how many objects were read and how many of them the packs served directly.
    fn read_all(fixture: &fluxgit_fixtures::Fixture, lookups: usize) -> (usize, usize) {
        let mut repo = gix::open_opts(fixture.path(), crate::repository::open_options()).expect("opens");
        let packs = Arc::new(Packs::new(repo.objects.store_ref().path(), repo.object_hash()));
        let _ = packs.opened();
        packs.lookups_left.store(lookups, Ordering::Relaxed);
        install(&mut repo, Arc::clone(&packs), 0);
        let headers = DirectHeaders::new(&repo);
        let header_packs = headers.packs.as_ref().expect("no replacements");
        let _ = header_packs.opened();
        header_packs.lookups_left.store(lookups, Ordering::Relaxed);
        let listing = fixture.git(&["cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)"]);
        let mut read = 0;
        for line in listing.lines() {
            let (hex, kind) = line.split_once(' ').expect("id and type");
            let object = repo.find_object(gix::ObjectId::from_hex(hex.as_bytes()).expect("id")).expect("found");
            assert_eq!(object.kind.to_string(), kind, "{hex}");
            let expected = std::process::Command::new("git")
                .args(["cat-file", kind, hex])
                .current_dir(fixture.path())
                .output()
                .expect("git runs");
            assert_eq!(object.data, expected.stdout, "{hex}");
            let header = gix::objs::FindHeader::try_header(&headers, &object.id).expect("reads").expect("found");
            assert_eq!((header.kind, header.size), (object.kind, object.data.len() as u64), "{hex}");
            read += 1;
        }
        let served = packs.served.load(Ordering::Relaxed);
        assert_eq!(header_packs.served.load(Ordering::Relaxed), served, "headers come from where objects do");
        (read, served)
    }

    /// The only `.idx` of the fixture's pack directory.
    fn the_index(fixture: &fluxgit_fixtures::Fixture) -> PathBuf {
        crate::pack_index::index_paths(&fixture.path().join(".git/objects")).pop().expect("one index")
    }

    /// Every packed object reads as `git cat-file` prints it, served from the pack: objects stored
    /// whole, deltas on a base at an offset, deltas on a base named by id, entries found through
    /// the 64-bit offset table, and a version 1 index. Mutants that misplace the offset tables or
    /// drop the id-named bases fail it (their reads fall back to gix, which still answers, so the
    /// count of direct reads is checked too).
    #[test]
    fn packed_objects_read_as_git_reads_them() {
        let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Diffs);
        let deltas = |fixture: &fluxgit_fixtures::Fixture| {
            let listing = fixture.git(&["verify-pack", "-v", the_index(fixture).to_str().expect("utf-8")]);
            listing.lines().filter(|line| line.split_whitespace().count() == 7).count()
        };
        fixture.git(&["repack", "-adfq", "--window=50", "--depth=20"]);
        assert!(deltas(&fixture) > 0, "the pack holds deltas");
        let (read, served) = read_all(&fixture, usize::MAX);
        assert!(read > 20, "a pack worth reading: {read}");
        assert_eq!(served, read, "every object came from the pack");

        fixture.git(&["-c", "repack.useDeltaBaseOffset=false", "repack", "-adfq", "--window=50", "--depth=20"]);
        assert!(deltas(&fixture) > 0, "the pack holds deltas");
        assert_eq!(read_all(&fixture, usize::MAX), (read, read), "deltas naming their base by id");

        // Every entry past byte 0x20 of the pack through the 64-bit table (git's test knob for large packs).
        let index = the_index(&fixture);
        let pack = index.with_extension("pack");
        std::fs::remove_file(&index).expect("removes the index");
        let (index, pack) = (index.to_str().expect("utf-8"), pack.to_str().expect("utf-8"));
        fixture.git(&["index-pack", "--index-version=2,0x20", "-o", index, pack]);
        assert_eq!(read_all(&fixture, usize::MAX), (read, read), "64-bit offsets");
        // Version 1: each offset before its id.
        std::fs::remove_file(index).expect("removes the index");
        fixture.git(&["index-pack", "--index-version=1", "-o", index, pack]);
        assert_eq!(read_all(&fixture, usize::MAX), (read, read), "a version 1 index");
    }

    /// Once the lookups are spent, and for loose objects, gix's store answers: every object still
    /// reads as git prints it.
    #[test]
    fn past_the_budget_and_outside_packs_gix_answers() {
        let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Diffs);
        fixture.git(&["repack", "-adq"]);
        let (read, served) = read_all(&fixture, 3);
        assert!(read > 20, "a pack worth reading: {read}");
        assert_eq!(served, 3, "the budget");
        std::fs::write(fixture.path().join("loose.txt"), "a loose blob\n").expect("writes");
        fixture.git(&["add", "loose.txt"]);
        fixture.git(&["commit", "-qm", "loose"]);
        let (with_loose, served) = read_all(&fixture, usize::MAX);
        assert!(with_loose > read, "loose objects listed");
        assert_eq!(served, read, "the packed ones only");
    }

    /// A commit's details (its diff with rename detection, line counts, blob headers) and the
    /// history walk read the same through direct reads as through gix's store alone: every commit
    /// of a repacked fixture, with the direct reads' count checked.
    #[test]
    fn tools_read_the_same_through_direct_reads() {
        let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Diffs);
        fixture.git(&["repack", "-adfq", "--window=50", "--depth=20"]);
        let plain = gix::open_opts(fixture.path(), crate::repository::open_options()).expect("opens");
        let mut direct = plain.clone();
        let packs = Arc::new(Packs::new(direct.objects.store_ref().path(), direct.object_hash()));
        let _ = packs.opened();
        packs.lookups_left.store(usize::MAX, Ordering::Relaxed);
        install(&mut direct, Arc::clone(&packs), 0);
        let interrupt = crate::interrupt::Interrupt::new();
        let commits = fixture.git(&["rev-list", "--all"]);
        for commit in commits.lines() {
            let ours = crate::diff::commit::read(&direct, commit, &interrupt).expect("reads");
            assert_eq!(ours, crate::diff::commit::read(&plain, commit, &interrupt).expect("reads"), "{commit}");
        }
        let head = direct.head_id().expect("HEAD").detach();
        let mut walk = crate::walks::Walk::new(&direct, head, None).expect("walks");
        let mut walked = Vec::new();
        while let Some(id) = walk.next_shown(&direct).expect("steps") {
            walked.push(id.to_string());
        }
        assert_eq!(walked.join("\n"), fixture.git(&["rev-list", "HEAD"]).trim());
        assert!(packs.served.load(Ordering::Relaxed) > commits.lines().count() * 2, "read directly");
    }

    /// The budget scales with the packed objects: none for a small repository.
    #[test]
    fn small_repositories_get_no_direct_lookups() {
        let fixture = fluxgit_fixtures::build(fluxgit_fixtures::Scenario::Diffs);
        fixture.git(&["repack", "-adq"]);
        let repo = gix::open(fixture.path()).expect("opens");
        let packs = Packs::new(repo.objects.store_ref().path(), repo.object_hash());
        assert_eq!(packs.opened().len(), 1);
        assert_eq!(packs.lookups_left.load(Ordering::Relaxed), 0);
    }
}
