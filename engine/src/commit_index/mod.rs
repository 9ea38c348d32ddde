//! The commit index (design.md#engine): a small tantivy index per repository under
//! `<run dir>/index/`, holding every commit reachable from the local branches and HEAD (sha,
//! committer time, author identity, message, touched path prefixes).
//!
//! Layout: `<dir>/v<SCHEMA_VERSION>/<digest of the common dir>/` is one tantivy index; the commit
//! payload of its last commit records the schema version, the common dir and the tips it covers
//! (HEAD and every `refs/heads/*`, name -> sha), so the documents and the tips change together.
//!
//! Freshness: each use reads the repository's current tips. Equal tips: the index is current.
//! Otherwise the difference is applied in one tantivy commit: the commits reachable from the new
//! tips but not from the old ones are added, and those reachable from the old tips but from no new
//! one are deleted (a reset, rebase, amend or forced move leaves its old commits unreachable; they
//! leave the index with the same commit). When more than [`SYNC_LIMIT`] commits are to be added (a
//! first build of a large history), the work goes to a background thread and callers answer from
//! git meanwhile ([`Status::Building`]).
//!
//! Failure never fails a call: an index that is missing, of another version, unreadable, corrupt
//! (checksums are validated on open), holding something other than a regular file where tantivy
//! reads one, listing a segment twice in its `meta.json`, or failing a search is deleted and
//! rebuilt, and the caller answers from git meanwhile (`directory.rs` checks the files).
//! Another process holding the writer lock makes this call answer from git ([`Status::Busy`]).
//!
//! Speed: the writer is kept open between updates of a repository and commits never wait for
//! tantivy's segment merges (they run on tantivy's merge thread), so taking in a few new commits
//! costs milliseconds; a writer idle for [`IDLE_WRITER`] is closed by the feed thread (after its
//! merges end), so another process sharing the run dir can take the writer lock. The feed thread
//! also brings an index up to date when the watcher reports that a branch or HEAD moved (see
//! [`Store::refresh_soon`]), so the next call usually finds it current; the call still compares
//! tips, so its answer is exact either way.
//!
//! **Invariant:** the index holds exactly the commits reachable from the tips recorded in its
//! payload.

mod build;
mod directory;
mod feed;
pub mod movements;
pub(crate) mod schema;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use gix::ObjectId;
use serde::{Deserialize, Serialize};
use tantivy::{Index, IndexReader, ReloadPolicy, Searcher};

use schema::Fields;

pub use build::MAX_PATH_DEPTH;
pub(crate) use build::{Touched, read_tips};

/// The schema version: an index of another version is rebuilt (its directory name carries the
/// version).
pub const SCHEMA_VERSION: u32 = 3;

/// The most commits added by a call before it hands the work to a background thread and answers
/// from git. About 2,000 commits index in well under a second on a small machine (see BENCHMARK.md,
/// "Index").
pub const SYNC_LIMIT: usize = 2_000;

/// The writer's memory budget in bytes (tantivy's floor is 15 MB); one indexing thread.
const WRITER_BYTES: usize = 48_000_000;

/// How long a repository's writer stays open without writing before the feed thread closes it.
pub const IDLE_WRITER: std::time::Duration = std::time::Duration::from_secs(10);

/// A repository's indexed tips: `HEAD` and each `refs/heads/*` name, to the commit it points to.
pub type Tips = BTreeMap<String, ObjectId>;

/// Whether the index can answer for a repository now.
#[derive(Clone)]
pub enum Status {
    /// Current: it holds exactly the commits reachable from the repository's tips.
    Ready(Snapshot),
    /// Being built or updated on a background thread; answer from git.
    Building,
    /// Another process is writing it; answer from git.
    Busy,
    /// It cannot be used (its directory cannot be written, ...): why; answer from git.
    Unavailable(String),
}

impl std::fmt::Debug for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ready(_) => f.write_str("Ready"),
            Self::Building => f.write_str("Building"),
            Self::Busy => f.write_str("Busy"),
            Self::Unavailable(why) => write!(f, "Unavailable({why})"),
        }
    }
}

impl Status {
    /// Why a caller answers from git instead (`None` when ready), in few words for the answer's
    /// `reason`, which every answer of a search repeats until the index is ready:
    /// `commit index being built`.
    pub fn reason(&self) -> Option<String> {
        match self {
            Self::Ready(_) => None,
            Self::Building => Some("commit index being built".to_owned()),
            Self::Busy => Some("commit index busy in another process".to_owned()),
            Self::Unavailable(why) => Some(format!("commit index unavailable: {why}")),
        }
    }
}

/// A point-in-time view of one repository's index.
#[derive(Clone)]
pub struct Snapshot {
    pub(crate) searcher: Searcher,
    pub(crate) fields: Fields,
    /// The slot, to report a failing search (the index is then dropped and rebuilt).
    slot: Arc<Slot>,
}

impl Snapshot {
    /// Marks the index as broken after a search failed on it: it is deleted and rebuilt on the next
    /// use.
    pub(crate) fn broken(&self) {
        let mut state = self.slot.lock();
        state.opened = None;
        state.broken = true;
    }
}

/// Counters of one index, for benchmarks and `doctor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Commits (documents) in the index.
    pub commits: u64,
    /// Bytes of the index directory.
    pub bytes: u64,
}

/// The indexes of every repository the engine has used, under one directory.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    slots: Mutex<HashMap<PathBuf, Arc<Slot>>>,
    /// Work for the feed thread (updates asked for by the watcher, idle writers to close).
    feed: Arc<feed::Feed>,
}

/// One repository's index state, shared by callers and its background builder.
#[derive(Debug, Default)]
struct Slot {
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    opened: Option<Opened>,
    /// A background thread is building or updating the index.
    building: bool,
    /// A search failed on the opened index: delete it before the next open.
    broken: bool,
    /// The git dir of the last call's repository (a linked worktree has its own `HEAD`): the feed
    /// thread opens it.
    git_dir: Option<PathBuf>,
}

impl std::fmt::Debug for SlotState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlotState").field("building", &self.building).field("broken", &self.broken).finish()
    }
}

struct Opened {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    tips: Tips,
    /// The writer kept between updates (`None` until the first update, and after [`IDLE_WRITER`]
    /// without one).
    writer: Option<tantivy::IndexWriter>,
    /// When the writer last committed.
    written: std::time::Instant,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The payload recorded with every tantivy commit.
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    schema: u32,
    common_dir: String,
    tips: BTreeMap<String, String>,
}

impl Store {
    /// Indexes kept under `dir` (`<run dir>/index` for the sidecar); nothing is created before
    /// first use.
    pub fn new(dir: PathBuf) -> Self {
        Self { dir, slots: Mutex::new(HashMap::new()), feed: Arc::default() }
    }

    /// The directory of `common_dir`'s index.
    pub fn index_dir(&self, common_dir: &Path) -> PathBuf {
        self.dir.join(format!("v{SCHEMA_VERSION}")).join(digest(common_dir))
    }

    /// Removes `common_dir`'s indexes of other schema versions (`<dir>/v<N>/<digest>`, and `v<N>`
    /// once empty): a new version's index is built from nothing, so they would only hold disk.
    /// Failures are ignored (another process may be removing them too).
    fn remove_other_versions(&self, common_dir: &Path) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        let digest = digest(common_dir);
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(version) = name.to_str().and_then(|name| name.strip_prefix('v')) else { continue };
            if version.is_empty() || !version.bytes().all(|byte| byte.is_ascii_digit()) {
                continue;
            }
            if version == SCHEMA_VERSION.to_string() {
                continue;
            }
            let _ = std::fs::remove_dir_all(entry.path().join(&digest));
            // Only succeeds once no other repository's index is left in it.
            let _ = std::fs::remove_dir(entry.path());
        }
    }

    fn slot(&self, common_dir: &Path) -> Arc<Slot> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(slots.entry(common_dir.to_path_buf()).or_default())
    }

    /// Brings `repo`'s index up to date with its current tips, building it when missing, of another
    /// version or unreadable; small differences are applied now, large ones on a background thread.
    pub fn status(&self, repo: &gix::Repository, common_dir: &Path) -> Status {
        let tips = match build::read_tips(repo) {
            Ok(tips) => tips,
            Err(err) => return Status::Unavailable(format!("the refs cannot be read: {err}")),
        };
        let slot = self.slot(common_dir);
        let dir = self.index_dir(common_dir);
        let mut state = slot.lock();
        if state.git_dir.as_deref() != Some(repo.git_dir()) {
            state.git_dir = Some(repo.git_dir().to_path_buf());
        }
        if state.building {
            return Status::Building;
        }
        if state.broken {
            state.broken = false;
            let _ = std::fs::remove_dir_all(&dir);
        }
        if state.opened.is_none() {
            match open(&dir, common_dir) {
                Ok(opened) => state.opened = Some(opened),
                Err(_) => {
                    // Missing, of another version, unreadable or corrupt: start again from nothing, and drop what
                    // older versions kept for this repository.
                    let _ = std::fs::remove_dir_all(&dir);
                    self.remove_other_versions(common_dir);
                    match create(&dir) {
                        Ok(opened) => state.opened = Some(opened),
                        Err(err) => return Status::Unavailable(err),
                    }
                }
            }
        }
        let Some(opened) = state.opened.as_ref() else { return Status::Unavailable("not opened".to_owned()) };
        if opened.tips == tips {
            return Status::Ready(Snapshot {
                searcher: opened.reader.searcher(),
                fields: opened.fields,
                slot: Arc::clone(&slot),
            });
        }
        let plan = match build::plan(repo, &opened.tips, &tips) {
            Ok(plan) => plan,
            Err(_) => {
                // The old tips are gone (garbage collected) or the walk failed: index everything again.
                match build::plan(repo, &Tips::new(), &tips) {
                    Ok(plan) => build::Plan { reset: true, ..plan },
                    Err(err) => return Status::Unavailable(format!("history cannot be walked: {err}")),
                }
            }
        };
        if plan.added.len() <= SYNC_LIMIT {
            let common = common_dir.display().to_string();
            let Some(opened) = state.opened.as_mut() else { return Status::Unavailable("not opened".to_owned()) };
            return match apply(repo, opened, &plan, &tips, &common) {
                Ok(()) => Status::Ready(Snapshot {
                    searcher: opened.reader.searcher(),
                    fields: opened.fields,
                    slot: Arc::clone(&slot),
                }),
                Err(Failure::Busy) => Status::Busy,
                Err(Failure::Other(err)) => {
                    state.opened = None;
                    state.broken = true;
                    Status::Unavailable(err)
                }
            };
        }
        // Too much for one call: a background thread applies the plan on its own handle of the repository.
        let Some(mut opened) = state.opened.take() else { return Status::Unavailable("not opened".to_owned()) };
        state.building = true;
        drop(state);
        let background = repo.clone().into_sync();
        let common = common_dir.display().to_string();
        let worker_slot = Arc::clone(&slot);
        let spawned = std::thread::Builder::new().name("fluxgit-index".to_owned()).spawn(move || {
            let repo = background.to_thread_local();
            let outcome = apply(&repo, &mut opened, &plan, &tips, &common);
            let mut state = worker_slot.lock();
            state.building = false;
            match outcome {
                Ok(()) => state.opened = Some(opened),
                Err(Failure::Busy) => {}
                Err(Failure::Other(_)) => state.broken = true,
            }
        });
        if spawned.is_err() {
            slot.lock().building = false;
            return Status::Unavailable("no thread could be started to build it".to_owned());
        }
        Status::Building
    }

    /// Waits until no background build runs for `common_dir` (at most `timeout`), then reports
    /// [`Store::status`].
    pub fn settle(&self, repo: &gix::Repository, common_dir: &Path, timeout: std::time::Duration) -> Status {
        let slot = self.slot(common_dir);
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let status = self.status(repo, common_dir);
            if !matches!(status, Status::Building) || std::time::Instant::now() >= deadline {
                return status;
            }
            while slot.lock().building && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }

    /// Waits until no background build of any repository runs (at most `timeout`); returns how many
    /// were running when it started. A one-shot process calls it before it exits, so that a first
    /// build a call started is finished and saved instead of abandoned with the process.
    pub fn finish_builds(&self, timeout: std::time::Duration) -> usize {
        let slots: Vec<Arc<Slot>> =
            self.slots.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        let building: Vec<&Arc<Slot>> = slots.iter().filter(|slot| slot.lock().building).collect();
        let deadline = std::time::Instant::now() + timeout;
        for slot in &building {
            while slot.lock().building && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        building.len()
    }

    /// The number of commits and the bytes on disk of `common_dir`'s index, once current.
    pub fn stats(&self, repo: &gix::Repository, common_dir: &Path) -> Option<Stats> {
        let Status::Ready(snapshot) = self.settle(repo, common_dir, std::time::Duration::from_secs(600)) else {
            return None;
        };
        let bytes = std::fs::read_dir(self.index_dir(common_dir))
            .ok()?
            .filter_map(|entry| entry.ok()?.metadata().ok())
            .map(|metadata| metadata.len())
            .sum();
        Some(Stats { commits: snapshot.searcher.num_docs(), bytes })
    }
}

/// The name of `common_dir`'s index directory (the same in every schema version).
fn digest(common_dir: &Path) -> String {
    crate::hex_digest::hex_digest(&[&common_dir.display().to_string()], 16)
}

/// Why applying a plan failed.
enum Failure {
    /// Another process holds the writer lock.
    Busy,
    /// Anything else: the index is dropped and rebuilt.
    Other(String),
}

/// Opens an existing index, checking its version, payload and checksums.
fn open(dir: &Path, common_dir: &Path) -> Result<Opened, String> {
    let mut index =
        Index::open(directory::Guarded::open(dir).map_err(|err| err.to_string())?).map_err(|err| err.to_string())?;
    register(&mut index);
    let (_, fields) = schema::schema();
    if index.schema() != schema::schema().0 {
        return Err("another schema".to_owned());
    }
    let corrupt = index.validate_checksum().map_err(|err| err.to_string())?;
    if !corrupt.is_empty() {
        return Err(format!("corrupt files: {corrupt:?}"));
    }
    let payload = index.load_metas().map_err(|err| err.to_string())?.payload.ok_or("no payload")?;
    let payload: Payload = serde_json::from_str(&payload).map_err(|err| err.to_string())?;
    if payload.schema != SCHEMA_VERSION || payload.common_dir != common_dir.display().to_string() {
        return Err("another version or repository".to_owned());
    }
    let tips = decode_tips(&payload.tips)?;
    let reader = reader(&index)?;
    // Open every segment once now, so a damaged one fails here rather than in a search.
    reader
        .searcher()
        .segment_readers()
        .iter()
        .try_for_each(|segment| segment.fast_fields().i64("time").map(|_| ()).map_err(|err| err.to_string()))?;
    Ok(Opened { index, reader, fields, tips, writer: None, written: std::time::Instant::now() })
}

/// Creates an empty index in `dir` (which must not exist).
fn create(dir: &Path) -> Result<Opened, String> {
    std::fs::create_dir_all(dir).map_err(|err| format!("{}: {err}", dir.display()))?;
    let (schema, fields) = schema::schema();
    let directory = directory::Guarded::open(dir).map_err(|err| err.to_string())?;
    let mut index =
        Index::create(directory, schema, tantivy::IndexSettings::default()).map_err(|err| err.to_string())?;
    register(&mut index);
    let reader = reader(&index)?;
    Ok(Opened { index, reader, fields, tips: Tips::new(), writer: None, written: std::time::Instant::now() })
}

fn register(index: &mut Index) {
    index.tokenizers().register(schema::TRIGRAMS, schema::Trigrams::default());
    index.tokenizers().register(schema::WORDS, schema::Words::default());
}

fn reader(index: &Index) -> Result<IndexReader, String> {
    index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()
        .map_err(|err: tantivy::TantivyError| err.to_string())
}

fn decode_tips(tips: &BTreeMap<String, String>) -> Result<Tips, String> {
    tips.iter()
        .map(|(name, sha)| Ok((name.clone(), ObjectId::from_hex(sha.as_bytes()).map_err(|err| err.to_string())?)))
        .collect()
}

/// Applies `plan` to `opened` in one tantivy commit whose payload records `tips`, with the kept
/// writer (opened first when there is none); the commit does not wait for segment merges. On an
/// error the caller drops `opened` (and with it the writer and whatever it had not committed).
fn apply(
    repo: &gix::Repository,
    opened: &mut Opened,
    plan: &build::Plan,
    tips: &Tips,
    common_dir: &str,
) -> Result<(), Failure> {
    let mut replanned = None;
    if opened.writer.is_none() {
        let writer = match opened.index.writer_with_num_threads(1, WRITER_BYTES) {
            Ok(writer) => writer,
            Err(tantivy::TantivyError::LockFailure(tantivy::directory::error::LockError::LockBusy, _)) => {
                return Err(Failure::Busy);
            }
            Err(err) => return Err(Failure::Other(err.to_string())),
        };
        opened.writer = Some(writer);
        // Another process may have moved the index while this one held no writer: start from what is on disk.
        let on_disk = opened
            .index
            .load_metas()
            .map_err(|err| Failure::Other(err.to_string()))?
            .payload
            .map(|payload| {
                serde_json::from_str::<Payload>(&payload)
                    .map_err(|err| err.to_string())
                    .and_then(|payload| decode_tips(&payload.tips))
            })
            .transpose()
            .map_err(Failure::Other)?
            .unwrap_or_default();
        if on_disk != opened.tips && !plan.reset {
            replanned = Some(build::plan(repo, &on_disk, tips).map_err(|err| Failure::Other(err.to_string()))?);
        }
    }
    let plan = replanned.as_ref().unwrap_or(plan);
    let Some(writer) = opened.writer.as_mut() else { return Err(Failure::Other("no writer".to_owned())) };
    if plan.reset {
        writer.delete_all_documents().map_err(|err| Failure::Other(err.to_string()))?;
    }
    build::write(repo, writer, opened.fields, plan).map_err(|err| Failure::Other(err.to_string()))?;
    let payload = Payload {
        schema: SCHEMA_VERSION,
        common_dir: common_dir.to_owned(),
        tips: tips.iter().map(|(name, id)| (name.clone(), id.to_string())).collect(),
    };
    let payload = serde_json::to_string(&payload).map_err(|err| Failure::Other(err.to_string()))?;
    let mut prepared = writer.prepare_commit().map_err(|err| Failure::Other(err.to_string()))?;
    prepared.set_payload(&payload);
    prepared.commit().map_err(|err| Failure::Other(err.to_string()))?;
    opened.written = std::time::Instant::now();
    opened.reader.reload().map_err(|err| Failure::Other(err.to_string()))?;
    opened.tips = tips.clone();
    Ok(())
}
