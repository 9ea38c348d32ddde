//! Ledger files that are not regular files: a FIFO (which would block a plain open until a writer comes), a
//! symbolic link to `/dev/zero` (which would read without end) or a directory in place of the active file, a
//! segment, the checkpoint or the lock file. Each is refused with a message naming what is there, and every call
//! answers within 5 s.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use fluxgit_audit::{AppendError, Ledger, Limits, OpenError, VerifyError};

use crate::support::{append_range, event, key, segments, verify};

/// Runs `work` on a thread of its own and returns its answer, failing the test when it takes 5 s or more.
fn within_5_s<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || sender.send(work()));
    receiver.recv_timeout(Duration::from_secs(5)).unwrap_or_else(|_| panic!("{what} did not answer within 5 s"))
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

fn append_message(path: &Path) -> String {
    let path = path.to_path_buf();
    within_5_s("append", move || {
        let ledger = Ledger::open(&path, None).expect("open");
        ledger.append(&event(99)).map(|appended| appended.sequence).map_err(|error| error.to_string())
    })
    .expect_err("refused")
}

fn verify_reason(path: &Path) -> String {
    let path = path.to_path_buf();
    match within_5_s("verify", move || verify(&path, &[], false)) {
        Err(VerifyError::Integrity { reason, .. }) => reason,
        other => panic!("expected an integrity failure, got {other:?}"),
    }
}

/// A ledger with rotated segments under small limits; returns the active file.
fn rotated_ledger(dir: &Path) -> PathBuf {
    let path = dir.join("mcp.jsonl");
    let ledger = Ledger::open_with_limits(
        &path,
        Some(key(1)),
        Limits { rotate_bytes: 4096, keep_segments: 100, ..Limits::STANDARD },
    )
    .expect("open");
    append_range(&ledger, 0, 20);
    assert!(segments(&path).len() >= 2);
    path
}

#[test]
fn a_fifo_as_the_active_file_is_refused_by_append_and_verify() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    mkfifo(&path);
    let message = append_message(&path);
    assert!(message.contains("a FIFO, not a regular file"), "{message}");
    assert_eq!(verify_reason(&path), "a FIFO, not a regular file");
}

#[test]
fn an_active_file_linked_to_dev_zero_is_refused_by_append_and_verify() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    std::os::unix::fs::symlink("/dev/zero", &path).expect("symlink");
    let message = append_message(&path);
    assert!(message.contains("a symbolic link, not a regular file"), "{message}");
    assert_eq!(verify_reason(&path), "a symbolic link, not a regular file");
}

#[test]
fn a_fifo_segment_is_refused_by_verify_and_by_an_append_that_reads_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = rotated_ledger(dir.path());
    let newest = segments(&path).pop().expect("a segment");
    std::fs::remove_file(&newest).expect("remove");
    mkfifo(&newest);
    assert_eq!(verify_reason(&path), "a FIFO, not a regular file");
    // With the active file gone, the next append continues after the newest segment, so it reads it.
    std::fs::remove_file(&path).expect("remove the active file");
    let message = append_message(&path);
    assert!(message.contains("a FIFO, not a regular file") && message.contains("segment-"), "{message}");
}

#[test]
fn a_segment_linked_to_dev_zero_is_refused_by_verify() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = rotated_ledger(dir.path());
    let oldest = segments(&path).remove(0);
    std::fs::remove_file(&oldest).expect("remove");
    std::os::unix::fs::symlink("/dev/zero", &oldest).expect("symlink");
    assert_eq!(verify_reason(&path), "a symbolic link, not a regular file");
}

#[test]
fn a_fifo_checkpoint_is_refused_by_verify_and_by_an_append_that_reads_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    let checkpoint = dir.path().join("mcp.jsonl.checkpoint");
    mkfifo(&checkpoint);
    let reason = verify_reason(&path);
    assert!(reason.contains("a FIFO, not a regular file"), "{reason}");
    // An empty ledger with no segment continues after the checkpoint, so the first append reads it.
    let message = append_message(&path);
    assert!(message.contains("a FIFO, not a regular file"), "{message}");
}

#[test]
fn a_fifo_or_a_directory_as_the_lock_file_fails_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    let lock = dir.path().join("mcp.jsonl.lock");
    mkfifo(&lock);
    let opened = within_5_s("open", move || Ledger::open(&path, None).map(drop));
    let error = opened.expect_err("refused");
    assert!(matches!(&error, OpenError::Io { .. }) && error.to_string().contains("a FIFO, not a regular file"));
    std::fs::remove_file(&lock).expect("remove");
    std::fs::create_dir(&lock).expect("mkdir");
    let path = dir.path().join("mcp.jsonl");
    let error = Ledger::open(&path, None).map(drop).expect_err("refused");
    assert!(error.to_string().contains("a directory, not a regular file"), "{error}");
}

#[test]
fn a_planted_fifo_at_the_checkpoints_temporary_name_does_not_stop_pruning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    mkfifo(&dir.path().join("mcp.jsonl.checkpoint.tmp"));
    let ledger_path = path.clone();
    let pruned = within_5_s("appends that prune", move || {
        let ledger = Ledger::open_with_limits(
            &ledger_path,
            None,
            Limits { rotate_bytes: 4096, keep_segments: 1, ..Limits::STANDARD },
        )
        .expect("open");
        (0..30).map(|index| ledger.append(&event(index)).map(|appended| appended.pruned)).sum::<Result<usize, _>>()
    });
    assert!(pruned.expect("appends") > 0, "segments were pruned behind a checkpoint");
    assert!(std::fs::symlink_metadata(dir.path().join("mcp.jsonl.checkpoint")).expect("checkpoint").is_file());
    verify(&path, &[], false).expect("verifies");
}

#[test]
fn an_append_error_names_the_file_and_what_is_there() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.jsonl");
    let ledger = Ledger::open(&path, None).expect("open");
    std::fs::create_dir(&path).expect("a directory in the active file's place");
    let error = ledger.append(&event(0)).expect_err("refused");
    assert!(matches!(&error, AppendError::Io { path: failed, .. } if failed == &path), "{error}");
    assert!(error.to_string().contains("a directory, not a regular file"), "{error}");
}
