//! The in-progress-operation facet: merge, rebase, cherry-pick, revert, bisect, am.

use serde::Serialize;

/// An operation Git has started and not finished, read from the git dir's state files
/// (`MERGE_HEAD`, `rebase-merge/`, `rebase-apply/`, `CHERRY_PICK_HEAD`, `REVERT_HEAD`,
/// `BISECT_LOG`, `sequencer/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operation {
    /// `git merge` stopped (`MERGE_HEAD`).
    Merge,
    /// `git rebase` (merge or apply backend, interactive or not) stopped.
    Rebase,
    /// `git cherry-pick` stopped, single or sequence.
    CherryPick,
    /// `git revert` stopped, single or sequence.
    Revert,
    /// `git bisect` not concluded.
    Bisect,
    /// `git am` applying a mailbox (not in design.md#tools's list; reported rather than hidden).
    Am,
}

impl Operation {
    /// The operation's name as git says it (`merge`, `cherry-pick`, ...), as serialised.
    pub fn name(self) -> &'static str {
        match self {
            Self::Merge => "merge",
            Self::Rebase => "rebase",
            Self::CherryPick => "cherry-pick",
            Self::Revert => "revert",
            Self::Bisect => "bisect",
            Self::Am => "am",
        }
    }
}

/// Reads the operation in progress, if any. Never fails: absent state files mean none.
pub fn read(repo: &gix::Repository) -> Option<Operation> {
    use gix::state::InProgress;
    repo.state().map(|state| match state {
        InProgress::Merge => Operation::Merge,
        InProgress::Rebase | InProgress::RebaseInteractive | InProgress::ApplyMailboxRebase => Operation::Rebase,
        InProgress::CherryPick | InProgress::CherryPickSequence => Operation::CherryPick,
        InProgress::Revert | InProgress::RevertSequence => Operation::Revert,
        InProgress::Bisect => Operation::Bisect,
        InProgress::ApplyMailbox => Operation::Am,
    })
}

/// The branch a stopped rebase is rewriting (`rebase-merge/head-name` or `rebase-apply/head-name`,
/// short name); `None` when no rebase is in progress or it rebases a detached HEAD. HEAD itself is
/// detached during a rebase, so this is the only place the branch shows.
pub fn rebasing_branch(repo: &gix::Repository) -> Option<String> {
    ["rebase-merge", "rebase-apply"].iter().find_map(|dir| {
        let path = repo.git_dir().join(dir).join("head-name");
        let cap = crate::guard::CONTROL_FILE_CAP;
        let name = crate::guard::read_capped(&path, crate::guard::Symlinks::Follow, cap, "a head-name file").ok()??;
        String::from_utf8_lossy(&name).trim().strip_prefix("refs/heads/").map(str::to_owned)
    })
}

/// The commit a stopped rebase replays onto (`rebase-merge/onto` or `rebase-apply/onto`), as
/// `git status` reads it for `interactive rebase in progress; onto 1568876`; `None` when no rebase
/// is in progress or the file names no commit.
pub fn rebase_onto(repo: &gix::Repository) -> Option<gix::ObjectId> {
    ["rebase-merge", "rebase-apply"].iter().find_map(|dir| {
        let path = repo.git_dir().join(dir).join("onto");
        let cap = crate::guard::CONTROL_FILE_CAP;
        let text = crate::guard::read_capped(&path, crate::guard::Symlinks::Follow, cap, "an onto file").ok()??;
        let id = gix::ObjectId::from_hex(String::from_utf8_lossy(&text).trim().as_bytes()).ok()?;
        repo.find_commit(id).is_ok().then_some(id)
    })
}

/// The short name of a branch whose tip is `id`: the first local branch in name order, else the
/// first remote-tracking branch (`origin/main`; symbolic refs such as `origin/HEAD` left out);
/// `None` when no branch points there or the refs cannot be listed.
pub fn branch_at(repo: &gix::Repository, id: gix::ObjectId) -> Option<String> {
    let platform = repo.references().ok()?;
    let pointing = |iter: gix::reference::iter::Iter<'_, '_>| -> Option<String> {
        iter.flatten()
            .filter(|reference| matches!(reference.target(), gix::refs::TargetRef::Object(_)))
            .filter(|reference| reference.target().try_id() == Some(id.as_ref()))
            .map(|reference| reference.name().shorten().to_string())
            .min()
    };
    pointing(platform.local_branches().ok()?).or_else(|| pointing(platform.remote_branches().ok()?))
}
