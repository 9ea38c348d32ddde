//! The ledger on a full disk: an append that fails part-way, appends while the disk stays full, and appends once
//! there is room again. Two disks run the same story: one that fills up exactly where the test says (always run),
//! and a real filesystem of 64 KiB (a tmpfs, else an ext2 image on a loop device) when this machine lets the test
//! mount one.

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{AppendError, Disk, Ledger, Limits};
use crate::entry::{Approval, Event, EventType, Outcome, Risk};
use crate::key::SigningKey;
use crate::verify::{Report, TailRepair, VerifyOptions, verify_audit_ledger};

fn event(index: u64, summary: &str) -> Event {
    Event {
        tool: "repo.status".to_owned(),
        event_type: EventType::ToolCall,
        repo_scope: crate::repo_scope("/home/someone/repo"),
        args_fingerprint: crate::fingerprint(&serde_json::json!({"i": index})),
        risk: Risk::Read,
        approval: Approval::None,
        result: Outcome::Success,
        session_id: "full-disk-test".to_owned(),
        duration_ms: index,
        summary: summary.to_owned(),
        read_only: true,
        sidecar_read_only: true,
    }
}

fn key() -> SigningKey {
    SigningKey::from_bytes(&[7; 32])
}

/// Verifies with the test key, every entry signed.
fn verify(path: &Path) -> Report {
    let keys = [key().public_key()];
    verify_audit_ledger(path, &VerifyOptions { public_keys: &keys, require_signed: true }).expect("verifies")
}

fn is_full_disk(error: &AppendError) -> bool {
    matches!(error, AppendError::Io { source, .. } if source.raw_os_error() == Some(libc::ENOSPC))
}

/// A disk with `free` bytes left: a write takes what fits and fails with ENOSPC, as a full filesystem does.
/// Bytes written over a file's existing bytes take no space.
#[derive(Debug, Clone)]
struct FillingDisk {
    free: Arc<AtomicU64>,
}

impl Disk for FillingDisk {
    fn write(&self, file: &mut File, bytes: &[u8]) -> io::Result<()> {
        use std::io::Seek as _;
        let size = file.metadata()?.len();
        let position = file.stream_position()?;
        let in_place = usize::try_from(size.saturating_sub(position)).unwrap_or(usize::MAX).min(bytes.len());
        let free = usize::try_from(self.free.load(Ordering::SeqCst)).unwrap_or(usize::MAX);
        let fits = in_place + free.min(bytes.len() - in_place);
        file.write_all(&bytes[..fits])?;
        self.free.fetch_sub((fits - in_place) as u64, Ordering::SeqCst);
        if fits < bytes.len() {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        Ok(())
    }
}

#[test]
fn a_full_disk_tears_the_last_line_and_the_next_append_with_room_records_the_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("audit").join("mcp.jsonl");
    let free = Arc::new(AtomicU64::new(u64::MAX));
    let disk = || Box::new(FillingDisk { free: Arc::clone(&free) });
    let ledger = Ledger::open_on(&path, Some(key()), Limits::STANDARD, disk()).expect("open");
    for index in 0..3 {
        ledger.append(&event(index, "repo.status: success")).expect("append");
    }
    let whole = std::fs::read(&path).expect("read");

    // The disk fills up 100 bytes into the fourth line.
    free.store(100, Ordering::SeqCst);
    let error = ledger.append(&event(3, "repo.status: success")).expect_err("the disk is full");
    assert!(is_full_disk(&error), "{error}");
    let torn = std::fs::read(&path).expect("read");
    assert_eq!(torn.len(), whole.len() + 100);
    assert!(torn.starts_with(&whole) && torn.last() != Some(&b'\n'), "the fourth line is torn");
    let report = verify(&path);
    assert_eq!((report.chained, report.tail_repairs), (3, 0));
    assert_eq!(report.torn_tail, Some(crate::TornTail { line: 4, bytes: 100 }), "reported, not failed");

    // Still full: the record of the cut is written over the torn bytes and fails part-way too. The ledger stays
    // torn (never cut back with nothing recorded), and so does a ledger opened now.
    free.store(0, Ordering::SeqCst);
    let error = ledger.append(&event(4, "repo.status: success")).expect_err("the disk is still full");
    assert!(is_full_disk(&error), "{error}");
    let still_torn = std::fs::read(&path).expect("read");
    assert_eq!(still_torn.len(), torn.len());
    assert!(still_torn[whole.len()..].starts_with(b"{\"auditChainVersion\":1,"), "the record's first bytes");
    let reopened = Ledger::open_on(&path, Some(key()), Limits::STANDARD, disk()).expect("opens on a full disk");
    let after_open = std::fs::read(&path).expect("read");
    assert_eq!(after_open.len(), torn.len(), "its repair failed part-way too, over the same bytes");
    assert!(after_open.starts_with(&whole) && after_open.last() != Some(&b'\n'), "still torn");
    assert_eq!(verify(&path).torn_tail, Some(crate::TornTail { line: 4, bytes: 100 }));

    // Room again: the next append cuts the torn bytes, records the cut and continues the chain.
    free.store(u64::MAX, Ordering::SeqCst);
    let appended = reopened.append(&event(5, "repo.status: success")).expect("append with room");
    assert_eq!((appended.sequence, appended.torn_bytes_cut), (5, Some(100)));
    let repaired = std::fs::read(&path).expect("read");
    assert!(repaired.starts_with(&whole) && repaired.ends_with(b"\n"));
    let report = verify(&path);
    assert_eq!((report.chained, report.signed, report.torn_tail), (5, 5, None));
    assert_eq!((report.tail_repairs, report.last_tail_repair), (1, Some(TailRepair { sequence: 4, torn_bytes: 100 })));
    let appended = ledger.append(&event(6, "repo.status: success")).expect("the first handle appends too");
    assert_eq!((appended.sequence, appended.torn_bytes_cut), (6, None));
    assert_eq!(verify(&path).chained, 6);
}

/// A filesystem of 64 KiB mounted for the test, unmounted (and its mount point removed) when dropped.
struct SmallFilesystem {
    mount_point: PathBuf,
    /// What was mounted, for the test's output.
    kind: &'static str,
    _dir: tempfile::TempDir,
}

impl SmallFilesystem {
    /// Mounts a 64 KiB tmpfs, else a 64 KiB ext2 image on a loop device; the reasons when neither can be mounted
    /// (no root, or a container that forbids mounting).
    fn mount() -> Result<Self, String> {
        let dir = tempfile::tempdir().map_err(|error| error.to_string())?;
        let mount_point = dir.path().join("disk");
        std::fs::create_dir(&mount_point).map_err(|error| error.to_string())?;
        let tmpfs = run("mount", &["-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", path_text(&mount_point)?]);
        if tmpfs.is_ok() {
            return Ok(Self { mount_point, kind: "a 64 KiB tmpfs", _dir: dir });
        }
        let image = dir.path().join("disk.img");
        let file = File::create(&image).map_err(|error| error.to_string())?;
        file.set_len(64 * 1024).map_err(|error| error.to_string())?;
        let loop_image = run("mkfs.ext2", &["-q", "-F", "-m", "0", "-b", "1024", "-N", "16", path_text(&image)?])
            .and_then(|()| run("mount", &["-o", "loop", path_text(&image)?, path_text(&mount_point)?]));
        match loop_image {
            Ok(()) => Ok(Self { mount_point, kind: "a 64 KiB ext2 image on a loop device", _dir: dir }),
            Err(loop_error) => Err(format!("tmpfs: {}; loop device: {loop_error}", tmpfs.err().unwrap_or_default())),
        }
    }
}

impl Drop for SmallFilesystem {
    fn drop(&mut self) {
        if let Err(error) = run("umount", &[&self.mount_point.to_string_lossy()]) {
            eprintln!("the test's filesystem at {} stays mounted: {error}", self.mount_point.display());
        }
    }
}

fn path_text(path: &Path) -> Result<&str, String> {
    path.to_str().ok_or_else(|| format!("{} is not UTF-8", path.display()))
}

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let output =
        std::process::Command::new(program).args(args).output().map_err(|error| format!("{program}: {error}"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!("{program} {}: {}", output.status, String::from_utf8_lossy(&output.stderr).trim()))
}

/// The unit a full filesystem cuts a write at: the page cache writes page by page, and a page's part of a write
/// either gets every block it needs or fails whole (ext2's 1 KiB blocks), so a write that needs a new page when
/// none is left writes up to the end of the last one and fails. A page is the block size or 4 KiB, the larger.
fn write_unit(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).expect("metadata").blksize().max(4096)
}

/// Fills the filesystem of `dir` with a file of zeros until a write fails with ENOSPC; returns the file.
fn fill(dir: &Path) -> PathBuf {
    let filler = dir.join("filler");
    let mut file = File::create(&filler).expect("filler");
    let block = vec![0u8; 1024];
    loop {
        match file.write(&block) {
            Ok(0) => break,
            Ok(_) => {}
            Err(error) if error.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(error) => panic!("filling the disk: {error}"),
        }
    }
    file.sync_all().ok();
    filler
}

/// The story on a real filesystem of 64 KiB: fill it, append until an append fails, append again while it is
/// full, free space, append again. Where nothing can be mounted, it says so and runs the story on the disk that
/// fills up (the test above), so it never passes without having run.
#[test]
fn a_full_filesystem_tears_the_last_line_and_appends_continue_once_space_is_freed() {
    let filesystem = match SmallFilesystem::mount() {
        Ok(filesystem) => filesystem,
        Err(reason) => {
            eprintln!("no small filesystem could be mounted ({reason}): running on the emulated full disk instead");
            a_full_disk_tears_the_last_line_and_the_next_append_with_room_records_the_cut();
            return;
        }
    };
    eprintln!("running on {} at {}", filesystem.kind, filesystem.mount_point.display());
    let path = filesystem.mount_point.join("audit").join("mcp.jsonl");
    let ledger = Ledger::open(&path, Some(key())).expect("open");
    ledger.append(&event(0, "repo.status: success")).expect("append");
    let page = write_unit(&path);
    // Short entries until the last page has a little room left (less than a long entry, more than nothing), so
    // the long entry below surely crosses into a page the full disk cannot give.
    let long_summary = "x".repeat(crate::MAX_SUMMARY_CHARS);
    let mut appended = 1;
    loop {
        let room = page - std::fs::metadata(&path).expect("metadata").len() % page;
        if room < page && room < 600 {
            break;
        }
        assert!(appended < 200, "the last page never had less than 600 bytes of room");
        ledger.append(&event(appended, "repo.status: success")).expect("append while there is room");
        appended += 1;
    }
    let whole = std::fs::read(&path).expect("read");
    let filler = fill(&filesystem.mount_point);

    let error = ledger.append(&event(appended, &long_summary)).expect_err("the filesystem is full");
    assert!(is_full_disk(&error), "{error}");
    let torn = std::fs::read(&path).expect("read");
    assert!(torn.len() > whole.len() && torn.starts_with(&whole), "a part of the entry was written");
    assert!(torn.last() != Some(&b'\n'), "the last line is torn");
    let torn_bytes = (torn.len() - whole.len()) as u64;
    let report = verify(&path);
    assert_eq!(report.chained, appended);
    assert_eq!(report.torn_tail.map(|torn| torn.bytes), Some(torn_bytes), "reported, not failed");

    let error = ledger.append(&event(appended + 1, &long_summary)).expect_err("still full");
    assert!(is_full_disk(&error), "{error}");
    let still_torn = std::fs::read(&path).expect("read");
    assert_eq!(still_torn.len(), torn.len(), "the record went over the torn bytes, no further");
    assert!(still_torn.last() != Some(&b'\n'), "still torn, never cut back with nothing recorded");

    std::fs::remove_file(filler).expect("free the space");
    let repaired = ledger.append(&event(appended + 2, "repo.status: success")).expect("append with room");
    assert_eq!((repaired.sequence, repaired.torn_bytes_cut), (appended + 2, Some(torn_bytes)));
    let report = verify(&path);
    assert_eq!((report.chained, report.signed, report.torn_tail), (appended + 2, appended + 2, None));
    assert_eq!(report.last_tail_repair, Some(TailRepair { sequence: appended + 1, torn_bytes }));
    ledger.append(&event(appended + 3, &long_summary)).expect("appends go on");
    assert_eq!(verify(&path).chained, appended + 3);
}
