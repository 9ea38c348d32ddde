//! Restore points: taken before every execution, put back by `fluxgit-gateway restore ID`.
//!
//! A restore point records every ref and HEAD (symbolic target and commit) before the operation, saves the index
//! file's exact bytes under `<run_dir>/gateway/restore/<id>/index`, and snapshots the work tree as a commit under
//! the private ref `refs/fluxgit/restore/<id>`. The snapshot is built in a temporary index (`GIT_INDEX_FILE`),
//! so the person's index is never touched; untracked files are included, ignored ones are not (the operations
//! executed here leave ignored files alone).
//!
//! Restoring puts the work tree back to the snapshot (through another temporary index: files the operation added
//! are removed, changed ones rewritten), copies the saved index bytes back, sets every ref to its old target
//! (deleting refs that did not exist) and points HEAD where it pointed. The private ref stays, so a restore can be
//! repeated.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::git::{self, Git};
use crate::journal::{self, Journal, RestorePoint};
use crate::repo::Canonical;
use crate::time::now_ms;

/// The private ref namespace of snapshots.
pub const REF_PREFIX: &str = "refs/fluxgit/restore/";

/// A restore point that could not be taken or put back.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// git failed.
    #[error(transparent)]
    Git(#[from] git::Error),
    /// The journal failed.
    #[error(transparent)]
    Journal(#[from] journal::Error),
    /// A file could not be saved or put back.
    #[error("restore point file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io { path: path.to_owned(), source }
}

/// Takes a restore point of `repo` for `proposal_id` and journals it (before the operation runs).
pub fn create(journal: &mut Journal, repo: &Canonical, proposal_id: &str, op: &str) -> Result<RestorePoint, Error> {
    let id = format!("rp-{}", uuid::Uuid::new_v4().simple());
    let git = Git::new(&repo.work_tree);
    let dir = journal.dir().join("restore").join(&id);
    journal::create_private_dir(&dir)?;
    let head_ref = git.head_symbolic()?;
    let head_sha = git.head_sha()?;
    let refs_before = git.refs()?;

    let index = repo.git_dir.join("index");
    let saved_index = dir.join("index");
    let index_file = if index.exists() {
        std::fs::copy(&index, &saved_index).map_err(io(&saved_index))?;
        Some(saved_index.to_string_lossy().into_owned())
    } else {
        None
    };
    let tree = worktree_tree(&git, &dir, index_file.as_deref().map(Path::new))?;
    let mut commit = git.write_command();
    commit
        .env("GIT_AUTHOR_NAME", "FluxGit gateway")
        .env("GIT_AUTHOR_EMAIL", "gateway@fluxgit.invalid")
        .env("GIT_COMMITTER_NAME", "FluxGit gateway")
        .env("GIT_COMMITTER_EMAIL", "gateway@fluxgit.invalid");
    let message = format!("fluxgit restore point {id} ({op}, proposal {proposal_id})");
    let mut args = vec!["commit-tree".to_owned(), tree, "-m".to_owned(), message];
    if let Some(sha) = &head_sha {
        args.extend(["-p".to_owned(), sha.clone()]);
    }
    let snapshot = Git::run_command(commit, &args, None)?.trim().to_owned();
    git.write_ok(&["update-ref", &format!("{REF_PREFIX}{id}"), &snapshot], None)?;

    let point = RestorePoint {
        id,
        proposal_id: proposal_id.to_owned(),
        op: op.to_owned(),
        repo_path: repo.work_tree.to_string_lossy().into_owned(),
        created_ms: now_ms(),
        head_ref,
        head_sha,
        refs_before: json!(refs_before),
        refs_after: None,
        snapshot,
        index_file,
        restored_ms: None,
    };
    journal.insert_restore_point(&point)?;
    Ok(point)
}

/// The tree of the work tree as it is (tracked and untracked, not ignored), built in a temporary index seeded
/// from `index` (the saved copy of the person's index).
fn worktree_tree(git: &Git, dir: &Path, index: Option<&Path>) -> Result<String, Error> {
    let temporary = dir.join("worktree-index");
    let _ = std::fs::remove_file(&temporary);
    if let Some(index) = index {
        std::fs::copy(index, &temporary).map_err(io(&temporary))?;
    }
    let mut add = git.write_command();
    add.env("GIT_INDEX_FILE", &temporary);
    Git::run_command(add, &["add", "-A", "--", ":/"], None)?;
    let mut write = git.write_command();
    write.env("GIT_INDEX_FILE", &temporary);
    let tree = Git::run_command(write, &["write-tree"], None)?.trim().to_owned();
    let _ = std::fs::remove_file(&temporary);
    Ok(tree)
}

/// Puts `repo` back to `point`: work tree, index bytes, refs and HEAD; journals it on the proposal.
pub fn restore(journal: &mut Journal, repo: &Canonical, point: &RestorePoint, actor: &str) -> Result<(), Error> {
    let git = Git::new(&repo.work_tree);
    let dir = journal.dir().join("restore").join(&point.id);
    journal::create_private_dir(&dir)?;

    // Work tree: from what it is now (a temporary index of the current state) to the snapshot's tree.
    let current_index = repo.git_dir.join("index");
    let temporary = dir.join("restore-index");
    let _ = std::fs::remove_file(&temporary);
    if current_index.exists() {
        std::fs::copy(&current_index, &temporary).map_err(io(&temporary))?;
    }
    let mut add = git.write_command();
    add.env("GIT_INDEX_FILE", &temporary);
    Git::run_command(add, &["add", "-A", "--", ":/"], None)?;
    let tree = format!("{}^{{tree}}", point.snapshot);
    let mut checkout = git.write_command();
    checkout.env("GIT_INDEX_FILE", &temporary);
    Git::run_command(checkout, &["read-tree", "--reset", "-u", tree.as_str()], None)?;
    let _ = std::fs::remove_file(&temporary);

    // Index: the exact bytes saved before the operation (written beside it, then renamed over it).
    match &point.index_file {
        Some(saved) => {
            let staging = repo.git_dir.join("index.fluxgit-restore");
            std::fs::copy(saved, &staging).map_err(io(&staging))?;
            std::fs::rename(&staging, &current_index).map_err(io(&current_index))?;
        }
        None => {
            let _ = std::fs::remove_file(&current_index);
        }
    }

    // Refs: every old target back; refs the operation created are deleted.
    let before: BTreeMap<String, String> = serde_json::from_value(point.refs_before.clone()).unwrap_or_default();
    let now = git.refs()?;
    for (name, sha) in &before {
        if now.get(name) != Some(sha) {
            git.write_ok(&["update-ref", "--no-deref", name.as_str(), sha.as_str()], None)?;
        }
    }
    for name in now.keys().filter(|name| !before.contains_key(*name)) {
        git.write_ok(&["update-ref", "--no-deref", "-d", name.as_str()], None)?;
    }
    match (&point.head_ref, &point.head_sha) {
        (Some(name), _) => {
            git.write_ok(&["symbolic-ref", "HEAD", name.as_str()], None)?;
        }
        (None, Some(sha)) => {
            git.write_ok(&["update-ref", "--no-deref", "HEAD", sha.as_str()], None)?;
        }
        (None, None) => {}
    }
    journal.set_restored(&point.id)?;
    journal.note(&point.proposal_id, "restored", actor, &format!("restore point {} put back", point.id))?;
    Ok(())
}

/// The restore point as the sidecar's tools show it (`flux.restorePointDetails`).
pub fn to_json(point: &RestorePoint) -> Value {
    let before: BTreeMap<String, String> = serde_json::from_value(point.refs_before.clone()).unwrap_or_default();
    let after: Option<BTreeMap<String, String>> =
        point.refs_after.clone().and_then(|after| serde_json::from_value(after).ok());
    let mut refs = Vec::new();
    if let Some(after) = &after {
        let names: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
        for name in names {
            if before.get(name) != after.get(name) {
                refs.push(json!({ "name": name, "before": before.get(name), "after": after.get(name) }));
            }
        }
    }
    json!({
        "id": point.id,
        "createdAt": crate::time::format_ms(point.created_ms),
        "operationType": point.op,
        "previewId": point.proposal_id,
        "repoPath": point.repo_path,
        "refs": refs,
        "headBefore": point.head_sha,
        "headRefBefore": point.head_ref,
        "snapshot": point.snapshot,
        "snapshotRef": format!("{REF_PREFIX}{}", point.id),
        "canUndo": point.refs_after.is_some(),
        "restoredAt": point.restored_ms.map(crate::time::format_ms),
    })
}
