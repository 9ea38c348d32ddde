//! Restore points: taken before every execution, put back by `fluxgit-gateway restore ID`.
//!
//! A restore point records every ref and HEAD (symbolic target and commit) before the operation, saves the index
//! file's exact bytes under `<run_dir>/gateway/restore/<id>/index`, and snapshots the work tree as a commit under
//! the private ref `refs/fluxgit/restore/<id>`. The snapshot is built in a temporary index (`GIT_INDEX_FILE`),
//! so the person's index is never touched; untracked files are included, ignored ones are not (the operations
//! executed here leave ignored files alone). The repository's `config` file bytes and its linked worktrees are
//! saved too, and so is every other repository the operation touches ([`Other`]: the other repositories of a
//! branchDelete, refs and config only; a submodule and its parent, in full), in `<dir>/extra.json`.
//!
//! Restoring puts the work tree back to the snapshot (through another temporary index: files the operation added
//! are removed, changed ones rewritten), copies the saved index bytes back, sets every ref to its old target
//! (deleting refs that did not exist) and points HEAD where it pointed, in the repository and in every other one
//! it saved. After a `worktree` operation it removes the worktree the operation added, after a `worktreeRemove` it
//! adds the removed one back (same path, same branch or detached commit; ignored files it held are not kept);
//! after a `push` or a `branchDelete` it puts the `config` bytes back (upstream settings, deleted branches'
//! sections). A push is not undone on the remote: nothing is pushed without a person's approval. The private ref
//! stays, so a restore can be repeated.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fluxgit_contract::Operation;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::git::{self, Git};
use crate::journal::{self, Journal, RestorePoint};
use crate::repo::Canonical;
use crate::time::now_ms;

/// The private ref namespace of snapshots.
pub const REF_PREFIX: &str = "refs/fluxgit/restore/";
/// The private ref namespace of a plan's per-step snapshots: `refs/fluxgit/steps/<restore point id>/<step>`.
pub const STEP_REF_PREFIX: &str = "refs/fluxgit/steps/";

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
    /// The saved description of the other repositories is unreadable.
    #[error("restore point file {0}: not the JSON this gateway wrote")]
    Extra(PathBuf),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io { path: path.to_owned(), source }
}

/// Another repository an operation touches, saved with the restore point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Other {
    /// Its work-tree root.
    pub work_tree: PathBuf,
    /// Whether its index and work tree are saved too (else refs, HEAD and config only).
    pub full: bool,
}

/// One repository as a restore point saved it (the others of [`Extra`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capture {
    /// The work-tree root.
    pub work_tree: PathBuf,
    /// Its git dir (where its index lives).
    pub git_dir: PathBuf,
    /// Its common dir (where its config lives).
    pub common_dir: PathBuf,
    /// HEAD's symbolic target, if on a branch.
    pub head_ref: Option<String>,
    /// HEAD's commit (`None`: unborn).
    pub head_sha: Option<String>,
    /// Every ref outside `refs/fluxgit/`.
    pub refs: BTreeMap<String, String>,
    /// The work-tree snapshot commit (`None`: refs only).
    pub snapshot: Option<String>,
    /// The saved index bytes (`None`: not saved, or there was no index).
    pub index_file: Option<String>,
    /// The saved `config` bytes.
    pub config_file: Option<String>,
    /// The linked worktrees registered (their paths).
    pub worktrees: Vec<String>,
}

/// What `<dir>/extra.json` holds: the main repository's config and worktrees, and the other repositories.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Extra {
    /// The main repository's saved `config` bytes.
    pub config_file: Option<String>,
    /// The main repository's linked worktrees.
    pub worktrees: Vec<String>,
    /// The other repositories.
    pub others: Vec<Capture>,
}

/// The git dir and common dir of the work tree `git` runs in.
fn dirs_of(git: &Git) -> Result<(PathBuf, PathBuf), Error> {
    let listing = git.read_ok(&["rev-parse", "--absolute-git-dir", "--git-common-dir"])?;
    let mut lines = listing.lines();
    let git_dir = PathBuf::from(lines.next().unwrap_or_default());
    let common = PathBuf::from(lines.next().unwrap_or_default());
    let common = if common.is_absolute() { common } else { git.work_tree().join(common) };
    Ok((git_dir, std::fs::canonicalize(&common).map_err(io(&common))?))
}

/// The paths of the linked and main worktrees `git worktree list --porcelain` names.
pub fn worktree_paths(git: &Git) -> Result<Vec<String>, Error> {
    let listing = git.read_ok(&["worktree", "list", "--porcelain", "-z"])?;
    Ok(listing.split('\0').filter_map(|field| field.strip_prefix("worktree ")).map(str::to_owned).collect())
}

/// Copies `from` to `to` when `from` exists; the copy's path.
fn save(from: &Path, to: &Path) -> Result<Option<String>, Error> {
    if !from.exists() {
        return Ok(None);
    }
    std::fs::copy(from, to).map_err(io(to))?;
    Ok(Some(to.to_string_lossy().into_owned()))
}

/// Snapshots the work tree of `git` as a commit (parent: HEAD) under `reference`.
fn snapshot_commit(
    git: &Git,
    dir: &Path,
    index: Option<&Path>,
    head: Option<&str>,
    message: &str,
    reference: &str,
) -> Result<String, Error> {
    let tree = worktree_tree(git, dir, index)?;
    let mut commit = git.write_command();
    commit
        .env("GIT_AUTHOR_NAME", "FluxGit gateway")
        .env("GIT_AUTHOR_EMAIL", "gateway@fluxgit.invalid")
        .env("GIT_COMMITTER_NAME", "FluxGit gateway")
        .env("GIT_COMMITTER_EMAIL", "gateway@fluxgit.invalid");
    let mut args = vec!["commit-tree".to_owned(), tree, "-m".to_owned(), message.to_owned()];
    if let Some(sha) = head {
        args.extend(["-p".to_owned(), sha.to_owned()]);
    }
    let snapshot = Git::run_command(commit, &args, None)?.trim().to_owned();
    git.write_ok(&["update-ref", reference, &snapshot], None)?;
    Ok(snapshot)
}

/// Saves one repository into `dir` (created private).
fn capture(work_tree: &Path, dir: &Path, id: &str, message: &str, full: bool) -> Result<Capture, Error> {
    journal::create_private_dir(dir)?;
    let git = Git::new(work_tree);
    let (git_dir, common_dir) = dirs_of(&git)?;
    let head_ref = git.head_symbolic()?;
    let head_sha = git.head_sha()?;
    let refs = git.refs()?;
    let config_file = save(&common_dir.join("config"), &dir.join("config"))?;
    let worktrees = worktree_paths(&git)?;
    let (snapshot, index_file) = if full {
        let index_file = save(&git_dir.join("index"), &dir.join("index"))?;
        let reference = format!("{REF_PREFIX}{id}");
        let snapshot =
            snapshot_commit(&git, dir, index_file.as_deref().map(Path::new), head_sha.as_deref(), message, &reference)?;
        (Some(snapshot), index_file)
    } else {
        (None, None)
    };
    Ok(Capture {
        work_tree: work_tree.to_owned(),
        git_dir,
        common_dir,
        head_ref,
        head_sha,
        refs,
        snapshot,
        index_file,
        config_file,
        worktrees,
    })
}

/// Takes a restore point of `repo` (and of `others`) for `proposal_id` and journals it (before the operation runs).
pub fn create(
    journal: &mut Journal,
    repo: &Canonical,
    proposal_id: &str,
    op: &str,
    others: &[Other],
) -> Result<RestorePoint, Error> {
    let id = format!("rp-{}", uuid::Uuid::new_v4().simple());
    let dir = journal.dir().join("restore").join(&id);
    let message = format!("fluxgit restore point {id} ({op}, proposal {proposal_id})");
    let main = capture(&repo.work_tree, &dir, &id, &message, true)?;
    let mut extra = Extra { config_file: main.config_file, worktrees: main.worktrees, others: Vec::new() };
    for (n, other) in others.iter().enumerate() {
        let other_dir = dir.join(format!("other-{n}"));
        extra.others.push(capture(&other.work_tree, &other_dir, &id, &message, other.full)?);
    }
    let extra_file = dir.join("extra.json");
    let text = serde_json::to_vec_pretty(&extra).map_err(|_| Error::Extra(extra_file.clone()))?;
    std::fs::write(&extra_file, text).map_err(io(&extra_file))?;

    let point = RestorePoint {
        id,
        proposal_id: proposal_id.to_owned(),
        op: op.to_owned(),
        repo_path: repo.work_tree.to_string_lossy().into_owned(),
        created_ms: now_ms(),
        head_ref: main.head_ref,
        head_sha: main.head_sha,
        refs_before: json!(main.refs),
        refs_after: None,
        snapshot: main.snapshot.unwrap_or_default(),
        index_file: main.index_file,
        restored_ms: None,
    };
    journal.insert_restore_point(&point)?;
    Ok(point)
}

/// A plan step's snapshot of the index and work tree of `repo`, taken before the step runs: the index bytes under
/// `<dir of the restore point>/step-<n>/index`, the work tree as a commit under
/// `refs/fluxgit/steps/<restore point id>/<n>`. Returns the snapshot commit.
pub fn step_snapshot(journal_dir: &Path, repo: &Path, point_id: &str, step: usize) -> Result<String, Error> {
    let dir = journal_dir.join("restore").join(point_id).join(format!("step-{step}"));
    journal::create_private_dir(&dir)?;
    let git = Git::new(repo);
    let (git_dir, _) = dirs_of(&git)?;
    let index = save(&git_dir.join("index"), &dir.join("index"))?;
    let head = git.head_sha()?;
    let message = format!("fluxgit plan step {step} snapshot (restore point {point_id})");
    let reference = format!("{STEP_REF_PREFIX}{point_id}/{step}");
    snapshot_commit(&git, &dir, index.as_deref().map(Path::new), head.as_deref(), &message, &reference)
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

/// Whether a restore after `op` puts the saved `config` bytes back (a push's upstream, a deleted branch's section).
fn restores_config(op: &str) -> bool {
    match Operation::from_name(op) {
        Some(Operation::Push | Operation::BranchDelete) => true,
        Some(
            Operation::Merge
            | Operation::Rebase
            | Operation::Discard
            | Operation::Reset
            | Operation::Patch
            | Operation::Plan
            | Operation::Worktree
            | Operation::Commit
            | Operation::Branch
            | Operation::SubmodulePointer
            | Operation::WorktreeRemove,
        )
        | None => false,
    }
}

/// Copies the saved bytes `saved` over `target` (written beside it, then renamed).
fn put_file(saved: &str, target: &Path) -> Result<(), Error> {
    let staging = target.with_extension("fluxgit-restore");
    std::fs::copy(saved, &staging).map_err(io(&staging))?;
    std::fs::rename(&staging, target).map_err(io(target))
}

/// Puts one repository back: work tree and index (when `snapshot` is saved), refs and HEAD.
fn put_back(git: &Git, git_dir: &Path, dir: &Path, saved: &Capture) -> Result<(), Error> {
    if let Some(snapshot) = &saved.snapshot {
        // Work tree: from what it is now (a temporary index of the current state) to the snapshot's tree.
        let current_index = git_dir.join("index");
        let temporary = dir.join("restore-index");
        let _ = std::fs::remove_file(&temporary);
        if current_index.exists() {
            std::fs::copy(&current_index, &temporary).map_err(io(&temporary))?;
        }
        let mut add = git.write_command();
        add.env("GIT_INDEX_FILE", &temporary);
        Git::run_command(add, &["add", "-A", "--", ":/"], None)?;
        let tree = format!("{snapshot}^{{tree}}");
        let mut checkout = git.write_command();
        checkout.env("GIT_INDEX_FILE", &temporary);
        Git::run_command(checkout, &["read-tree", "--reset", "-u", tree.as_str()], None)?;
        let _ = std::fs::remove_file(&temporary);

        // Index: the exact bytes saved before the operation.
        match &saved.index_file {
            Some(index) => put_file(index, &current_index)?,
            None => {
                let _ = std::fs::remove_file(&current_index);
            }
        }
    }

    // Refs: every old target back; refs the operation created are deleted.
    let now = git.refs()?;
    for (name, sha) in &saved.refs {
        if now.get(name) != Some(sha) {
            git.write_ok(&["update-ref", "--no-deref", name.as_str(), sha.as_str()], None)?;
        }
    }
    for name in now.keys().filter(|name| !saved.refs.contains_key(*name)) {
        git.write_ok(&["update-ref", "--no-deref", "-d", name.as_str()], None)?;
    }
    match (&saved.head_ref, &saved.head_sha) {
        (Some(name), _) => {
            git.write_ok(&["symbolic-ref", "HEAD", name.as_str()], None)?;
        }
        (None, Some(sha)) => {
            git.write_ok(&["update-ref", "--no-deref", "HEAD", sha.as_str()], None)?;
        }
        (None, None) => {}
    }
    Ok(())
}

/// Removes the worktree at `path` (a `worktree` operation's) when it is registered in `git`'s repository now and
/// `before` did not list it; other worktrees, made since by someone else, stay.
fn remove_new_worktree(git: &Git, before: &[String], path: &Path) -> Result<(), Error> {
    let Ok(target) = std::fs::canonicalize(path) else {
        return Ok(());
    };
    for listed in worktree_paths(git)? {
        let same = std::fs::canonicalize(&listed).is_ok_and(|listed| listed == target);
        if same && !before.contains(&listed) {
            git.write_ok(&["worktree", "remove", "--force", "--", listed.as_str()], None)?;
        }
    }
    git.write_ok(&["worktree", "prune"], None)?;
    Ok(())
}

/// Adds back the worktree a `worktreeRemove` removed (`observed`: the worktree as observed on receipt), unless it
/// is registered again: `git worktree add <path> <branch>`, or `--detach <path> <sha>` for a detached HEAD. Its
/// checkout is the commit's (it was clean when removed); ignored files that were in it do not come back.
fn readd_worktree(git: &Git, observed: &Value) -> Result<(), Error> {
    let Some(path) = observed["worktreePath"].as_str() else { return Ok(()) };
    if worktree_paths(git)?.iter().any(|listed| listed == path) {
        return Ok(());
    }
    match (observed["branch"].as_str(), observed["headSha"].as_str()) {
        (Some(branch), _) => {
            let short = branch.strip_prefix("refs/heads/").unwrap_or(branch);
            git.write_ok(&["worktree", "add", "--", path, short], None)?;
        }
        (None, Some(sha)) => {
            git.write_ok(&["worktree", "add", "--detach", "--", path, sha], None)?;
        }
        (None, None) => {}
    }
    Ok(())
}

/// Reads `<dir>/extra.json` (absent for restore points taken before it existed: nothing extra).
fn read_extra(dir: &Path) -> Result<Extra, Error> {
    let file = dir.join("extra.json");
    match std::fs::read(&file) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|_| Error::Extra(file)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Extra::default()),
        Err(error) => Err(Error::Io { path: file, source: error }),
    }
}

/// Puts `repo` back to `point`: work tree, index bytes, refs and HEAD, and the other repositories it saved;
/// journals it on the proposal.
pub fn restore(journal: &mut Journal, repo: &Canonical, point: &RestorePoint, actor: &str) -> Result<(), Error> {
    let git = Git::new(&repo.work_tree);
    let dir = journal.dir().join("restore").join(&point.id);
    journal::create_private_dir(&dir)?;
    let extra = read_extra(&dir)?;
    if Operation::from_name(&point.op) == Some(Operation::Worktree) {
        let proposal = journal.get(&point.proposal_id)?;
        if let Some(path) = proposal.as_ref().and_then(|proposal| proposal.body.get("path")).and_then(Value::as_str) {
            remove_new_worktree(&git, &extra.worktrees, Path::new(path))?;
        }
    }
    let main = Capture {
        work_tree: repo.work_tree.clone(),
        git_dir: repo.git_dir.clone(),
        common_dir: repo.common_dir.clone(),
        head_ref: point.head_ref.clone(),
        head_sha: point.head_sha.clone(),
        refs: serde_json::from_value(point.refs_before.clone()).unwrap_or_default(),
        snapshot: Some(point.snapshot.clone()),
        index_file: point.index_file.clone(),
        config_file: extra.config_file.clone(),
        worktrees: extra.worktrees.clone(),
    };
    put_back(&git, &repo.git_dir, &dir, &main)?;
    if Operation::from_name(&point.op) == Some(Operation::WorktreeRemove) {
        let proposal = journal.get(&point.proposal_id)?;
        if let Some(observed) = proposal.as_ref().map(|proposal| &proposal.body[crate::proposal::OBSERVED]) {
            readd_worktree(&git, observed)?;
        }
    }
    if restores_config(&point.op)
        && let Some(config) = &main.config_file
    {
        put_file(config, &repo.common_dir.join("config"))?;
    }
    // Innermost first: a nested submodule is saved after its parent.
    for (n, other) in extra.others.iter().enumerate().rev() {
        let other_git = Git::new(&other.work_tree);
        put_back(&other_git, &other.git_dir, &dir.join(format!("other-{n}")), other)?;
        if restores_config(&point.op)
            && let Some(config) = &other.config_file
        {
            put_file(config, &other.common_dir.join("config"))?;
        }
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

/// The git commands, for a shell, that put the repository's refs and HEAD back as `point` found them, given the
/// refs and HEAD's symbolic target after the operation: `git switch` back when HEAD's branch changed,
/// `git update-ref REF OLD NEW` for a moved ref, `git branch NAME OLD` (or `git update-ref REF OLD`) for a deleted
/// one, `git update-ref -d REF NEW` for a created one. Each names the value it expects, so it fails rather than
/// undo a later change. Remote-tracking refs are left out (a push is not undone on the remote), and so are the
/// index and the work tree: `fluxgit-gateway restore` puts those back too.
pub fn undo_commands(
    point: &RestorePoint,
    refs_after: &BTreeMap<String, String>,
    head_ref_after: Option<&str>,
) -> Vec<String> {
    let before: BTreeMap<String, String> = point
        .refs_before
        .as_object()
        .map(|refs| refs.iter().filter_map(|(name, sha)| Some((name.clone(), sha.as_str()?.to_owned()))).collect())
        .unwrap_or_default();
    let mut commands = Vec::new();
    if point.head_ref.as_deref() != head_ref_after {
        match (&point.head_ref, &point.head_sha) {
            (Some(head_ref), _) => match head_ref.strip_prefix("refs/heads/") {
                Some(branch) => commands.push(format!("git switch {}", shell_quote(branch))),
                None => commands.push(format!("git symbolic-ref HEAD {}", shell_quote(head_ref))),
            },
            (None, Some(sha)) => commands.push(format!("git switch --detach {}", shell_quote(sha))),
            (None, None) => {}
        }
    }
    let names: std::collections::BTreeSet<&String> = before.keys().chain(refs_after.keys()).collect();
    for name in names {
        if name.starts_with("refs/remotes/") || name.starts_with("refs/fluxgit/") {
            continue;
        }
        let quoted = shell_quote(name);
        match (before.get(name), refs_after.get(name)) {
            (Some(old), Some(new)) if old != new => commands.push(format!("git update-ref {quoted} {old} {new}")),
            (Some(old), None) => match name.strip_prefix("refs/heads/") {
                Some(branch) => commands.push(format!("git branch {} {old}", shell_quote(branch))),
                None => commands.push(format!("git update-ref {quoted} {old}")),
            },
            (None, Some(new)) => commands.push(format!("git update-ref -d {quoted} {new}")),
            _ => {}
        }
    }
    commands
}

/// `word` quoted for a POSIX shell: as is when it holds only characters no shell treats specially, else in single
/// quotes (a ref name may hold `$`, `;`, `'` or a backtick).
pub fn shell_quote(word: &str) -> String {
    let plain =
        !word.is_empty() && word.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"/._-+@=:,%".contains(&byte));
    if plain { word.to_owned() } else { format!("'{}'", word.replace('\'', "'\\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(head_ref: Option<&str>, refs: Value) -> RestorePoint {
        RestorePoint {
            id: "rp".into(),
            proposal_id: "p".into(),
            op: "branch".into(),
            repo_path: "/r".into(),
            created_ms: 0,
            head_ref: head_ref.map(str::to_owned),
            head_sha: Some("a".repeat(40)),
            refs_before: refs,
            refs_after: None,
            snapshot: "s".into(),
            index_file: None,
            restored_ms: None,
        }
    }

    #[test]
    fn undo_names_moved_deleted_and_created_refs_and_switches_back() {
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        let before = json!({ "refs/heads/main": a, "refs/heads/gone": a, "refs/tags/t": a, "refs/remotes/o/main": a });
        let after: BTreeMap<String, String> = [
            ("refs/heads/main".to_owned(), b.clone()),
            ("refs/heads/new;rm -rf ~".to_owned(), b.clone()),
            ("refs/remotes/o/main".to_owned(), b.clone()),
        ]
        .into();
        let undo = undo_commands(&point(Some("refs/heads/main"), before), &after, Some("refs/heads/new;rm -rf ~"));
        assert_eq!(
            undo,
            [
                "git switch main".to_owned(),
                format!("git branch gone {a}"),
                format!("git update-ref refs/heads/main {a} {b}"),
                format!("git update-ref -d 'refs/heads/new;rm -rf ~' {b}"),
                format!("git update-ref refs/tags/t {a}"),
            ]
        );
    }

    #[test]
    fn shell_quote_quotes_what_a_shell_would_read() {
        assert_eq!(shell_quote("refs/heads/feature/x-1"), "refs/heads/feature/x-1");
        assert_eq!(shell_quote("it's$HOME"), "'it'\\''s$HOME'");
        assert_eq!(shell_quote(""), "''");
    }
}
