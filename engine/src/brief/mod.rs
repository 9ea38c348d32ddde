//! `repo.brief` (design.md#tools): situational awareness in one call, replacing 6-10 raw git calls.

pub mod answers;
pub mod folder;
mod hints;

use std::sync::Arc;

use serde::Serialize;

pub use crate::brief::answers::{Lost, Owned};
pub use crate::brief::hints::Hint;
use crate::budget::{Budgeted, Measure, first, fit_sections};
use crate::cache::{Diagnostics, Reader};
use crate::compact::{is_false, is_zero};
use crate::engine::{Engine, Repo};
use crate::error::Result;
use crate::facets::commits::CommitLine;
use crate::facets::conventions::Conventions;
use crate::facets::operation::Operation;
use crate::facets::worktree::Counts;
use crate::facets::{Facet, commits, conventions, head, lineage, operation, refs, stashes, submodules, worktree};

/// Recent commits a brief shows unless asked for another count: a handful orients an agent, and
/// `recentCommits` (up to 20) or `repo.history` gives more.
pub const DEFAULT_RECENT_COMMITS: usize = 5;

/// Knobs of `repo.brief`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Recent commits to include before budgeting (design.md#tools: 1-20, default
    /// [`DEFAULT_RECENT_COMMITS`]).
    pub recent_commits: usize,
    /// Write proposals can answer (a gateway is configured): only then may a hint name an
    /// `operation.preview.*` tool. Default false.
    pub proposals: bool,
    /// How hints spell the tools they name ([`crate::tool_names`]). Default `repo_brief`-style
    /// underscores.
    pub tool_names: crate::Spelling,
    /// The clock, Unix seconds, for the hints' recency window (commits dropped from a branch within
    /// [`lineage::RECENT_SECONDS`]). Default: the system clock when the options are made.
    pub now: i64,
}

impl Default for Options {
    fn default() -> Self {
        let now = fluxgit_contract::now_secs();
        Self { recent_commits: DEFAULT_RECENT_COMMITS, proposals: false, tool_names: crate::Spelling::default(), now }
    }
}

/// The brief. Compact (design.md#envelope): every field documented with a default is left out of
/// the JSON when it has that default.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Brief {
    /// Where HEAD is and how it relates to its upstream.
    pub head: BriefHead,
    /// The unfinished operation; default `null` (no operation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_in_progress: Option<Operation>,
    /// Exact counts of the work tree's state.
    pub working_tree: Counts,
    /// Stash count; default 0.
    #[serde(skip_serializing_if = "StashCount::is_zero")]
    pub stashes: StashCount,
    /// Aggregated submodule drift; default: no submodule (left out when `total` is 0).
    #[serde(skip_serializing_if = "submodules::Summary::is_empty")]
    pub submodules: submodules::Summary,
    /// Newest first, `"<sha> <subject>"` strings with the sha abbreviated like `git log --oneline`
    /// (shortest unique, at least 7 digits) and a subject over [`SUBJECT_CHARS`] characters cut to
    /// them and `…` ([`shortened_subject`]); default empty (unborn branch).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recent_commits: Vec<CommitLine>,
    /// Detected conventions; default: none detected.
    #[serde(skip_serializing_if = "Conventions::is_empty")]
    pub conventions: Conventions,
    /// The conflict that stopped an operation, as `conflict.read` reads it ([`answers::conflict`]):
    /// progress, how to conclude and abort, the commit being replayed and each file's marker
    /// regions (the budget's `conflictRegions`; with none shown, or none to show, the conflict is
    /// left out); default `null` (no unmerged path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflict: Option<crate::conflict::read::ConflictRead>,
    /// Recent movements of local branches that left commits no ref holds, with the command that
    /// recovers them ([`answers::lost`]); default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<Lost>,
    /// The parent branch rebased under the current one, as `repo.branchStack` gives it: its old and
    /// new tips, the `git rebase --onto` that moves the branch and whether its replay stops;
    /// default `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_moved: Option<crate::branch_stack::ParentMoved>,
    /// The changed paths grouped by their CODEOWNERS owners ([`answers::owners`]), during no
    /// operation; default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<Owned>,
    /// Parallel lines of work in linked worktrees and how they collide, as `repo.collisions`
    /// counts them ([`Parallel`]); default `null` (no linked worktree).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel: Option<Parallel>,
    /// At most 3 ranked next steps ([`crate::brief::hints`]), each `{tool, arguments, why}`;
    /// default empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<Hint>,
    /// How the engine's cache serves this repository when it is not watched (stat-validated or off,
    /// and why); absent when the repository is watched (the default) and from [`read`]. Set by
    /// [`crate::Engine::brief`]; the lowest priority of the budget (a cut is counted in `omitted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Diagnostics>,
    /// The work tree's entries when there are only a few ([`FewChanges::of`]), for the text format,
    /// which lists them as `git status --short` does instead of counting them; never in the JSON
    /// (its counts say the same).
    #[serde(skip)]
    pub changes: Option<FewChanges>,
}

/// The brief's line on parallel work: a repository with linked worktrees, its lines of work (each
/// worktree's branch with its uncommitted changes, the default branch) and the pairs that collide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Parallel {
    /// Lines of work compared.
    pub lines: usize,
    /// Pairs whose merge would stop with conflicts; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub conflicting: usize,
    /// Pairs that changed a same file (the conflicting ones included); default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub overlapping: usize,
    /// The first colliding pair and its first file, e.g. `agent1 x agent2: src/lib.rs`; default
    /// `null` (nothing collides).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
}

/// At most this many work-tree entries are listed by the text format instead of counted.
pub const FEW_CHANGES: usize = 3;
/// ... and only while their paths take at most this many bytes in all (a listing stays a few
/// tokens, far below any budget's floor).
pub const FEW_CHANGES_BYTES: usize = 160;

/// A work tree with only a few entries: every conflicted, staged, unstaged and untracked path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FewChanges {
    /// Unmerged paths.
    pub conflicted: Vec<String>,
    /// Index changes against HEAD.
    pub staged: Vec<worktree::Change>,
    /// Work-tree changes against the index.
    pub unstaged: Vec<worktree::Change>,
    /// Untracked paths (a wholly untracked directory as `dir/`).
    pub untracked: Vec<String>,
}

impl FewChanges {
    /// The entries of `status` when it has 1 to [`FEW_CHANGES`] of them, their paths
    /// [`FEW_CHANGES_BYTES`] bytes at most, and its counts are those lists' lengths
    /// ([`Counts::are_list_lengths`]); else `None`.
    pub fn of(status: &worktree::Status) -> Option<Self> {
        let changes = status.staged.iter().chain(&status.unstaged);
        let paths = status.conflicted.iter().chain(&status.untracked).map(String::len).sum::<usize>()
            + changes
                .clone()
                .map(|change| change.path.len() + change.from.as_ref().map_or(0, String::len))
                .sum::<usize>();
        let entries = status.conflicted.len() + status.staged.len() + status.unstaged.len() + status.untracked.len();
        let listed =
            (1..=FEW_CHANGES).contains(&entries) && paths <= FEW_CHANGES_BYTES && Counts::of(status).are_list_lengths();
        listed.then(|| Self {
            conflicted: status.conflicted.clone(),
            staged: status.staged.clone(),
            unstaged: status.unstaged.clone(),
            untracked: status.untracked.clone(),
        })
    }
}

/// The facets a brief reads (its answer is cached until one of them changes).
pub const READS: &[Facet] = &[
    Facet::Head,
    Facet::Upstream,
    Facet::WorkTreeStatus,
    Facet::Submodules,
    Facet::RecentCommits,
    Facet::Conventions,
    Facet::Stashes,
    Facet::Operation,
    Facet::Lineage,
];

/// HEAD plus upstream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BriefHead {
    /// Current branch (also when unborn); default `null` (detached).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// HEAD names a commit directly; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub detached: bool,
    /// The branch has no commit yet; left out of the JSON when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unborn: bool,
    /// HEAD's commit abbreviated like every sha of the brief (shortest unique, at least 7 digits);
    /// default `null` (unborn).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha: Option<String>,
    /// Upstream short name (`origin/main`); default `null` (no upstream).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// Commits HEAD has that the upstream lacks; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub ahead: usize,
    /// Commits the upstream has that HEAD lacks; default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub behind: usize,
    /// `true` when the configured upstream ref no longer exists.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub upstream_gone: bool,
    /// During a rebase (HEAD detached): the branch being rebased; left out of the JSON otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebasing: Option<String>,
    /// During a rebase: the commit the branch is replayed onto, abbreviated, followed by the short
    /// name of a branch pointing there when one does (a local branch first, else a remote-tracking
    /// one), e.g. `1568876 main`; `git status` says `onto 1568876`. Left out of the JSON otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub onto: Option<String>,
    /// The repository is a shallow clone: history, ahead/behind and merge bases stop at the commits
    /// listed in `.git/shallow`, whose parents git treats as absent; absent when `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shallow: bool,
}

/// The stash count; serialises as a bare number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct StashCount {
    /// Entries in `git stash list`.
    pub count: usize,
}

impl StashCount {
    /// `true` without stashes (the field is then left out).
    pub fn is_zero(&self) -> bool {
        self.count == 0
    }
}

/// The brief's `onto`: the abbreviated commit a stopped rebase replays onto and the branch pointing
/// there, if any; `None` without an `onto` file naming a commit.
fn rebase_onto(repo: &gix::Repository) -> Option<String> {
    let id = operation::rebase_onto(repo)?;
    let sha = crate::abbrev::Abbrev::new(repo).id(id);
    Some(match operation::branch_at(repo, id) {
        Some(branch) => format!("{sha} {branch}"),
        None => sha,
    })
}

/// Reads every facet the brief needs, uncut.
///
/// # Errors
/// [`crate::Error::GitRead`] when a facet cannot be read.
pub fn read(repo: &gix::Repository, options: &Options) -> Result<Brief> {
    read_from(&Reader::direct(repo), options)
}

/// The work-tree status and HEAD's upstream (`None` without one), facets of `repo.brief` and
/// `repo.status`. The upstream count's first walk on a repository may read its whole history
/// (`ancestry::generations`): it is started on another thread before the work tree is read, so the
/// two overlap (a cached upstream starts nothing).
pub(crate) fn work_tree_and_upstream(
    facets: &Reader<'_>,
) -> Result<(Arc<worktree::Status>, Arc<Option<refs::Upstream>>)> {
    if !facets.holds(Facet::Upstream) {
        refs::number_current_upstream(facets.git());
    }
    let status = facets.get(Facet::WorkTreeStatus, worktree::status)?;
    let upstream = facets.get(Facet::Upstream, |git| refs::current_upstream(git, &head::read(git)?))?;
    Ok((status, upstream))
}

/// [`read`] with facets from `facets` (the engine's cache or the repository). Each facet is
/// computed from reads of its own, so a cached facet never mixes states.
pub(crate) fn read_from(facets: &Reader<'_>, options: &Options) -> Result<Brief> {
    let head = facets.get(Facet::Head, |git| Ok((head::read(git)?, commits::abbreviated_head(git))))?;
    let (status, upstream) = work_tree_and_upstream(facets)?;
    let submodules = facets.get(Facet::Submodules, |git| Ok(submodules::summarize(&submodules::list(git)?)))?;
    // One walk serves both the recent commits and the conventions' subjects.
    let walked = options.recent_commits.max(conventions::SUBJECTS_EXAMINED);
    let mut history = if walked == conventions::SUBJECTS_EXAMINED {
        (*facets.get(Facet::RecentCommits, |git| commits::recent(git, walked))?).clone()
    } else {
        commits::recent(facets.git(), walked)?
    };
    let conventions = facets.get(Facet::Conventions, |git| {
        let subjects = commits::recent(git, conventions::SUBJECTS_EXAMINED)?;
        conventions::read(git, &subjects, &refs::local_branch_names(git)?)
    })?;
    let (operation, rebasing) =
        (*facets.get(Facet::Operation, |git| Ok((operation::read(git), operation::rebasing_branch(git))))?).clone();
    history.truncate(options.recent_commits);
    for commit in &mut history {
        commit.subject = shortened_subject(&commit.subject);
    }
    let (head, sha) = (&head.0, head.1.clone());
    let brief = Brief {
        head: BriefHead {
            branch: head.branch.clone(),
            detached: head.detached,
            unborn: head.unborn,
            sha,
            upstream: upstream.as_ref().as_ref().map(|u| u.name.clone()),
            ahead: upstream.as_ref().as_ref().map_or(0, |u| u.ahead),
            behind: upstream.as_ref().as_ref().map_or(0, |u| u.behind),
            upstream_gone: upstream.as_ref().as_ref().is_some_and(|u| u.gone),
            rebasing,
            onto: match operation {
                Some(Operation::Rebase) => rebase_onto(facets.git()),
                _ => None,
            },
            shallow: head.shallow,
        },
        operation_in_progress: operation,
        working_tree: Counts::of(&status),
        changes: FewChanges::of(&status),
        stashes: StashCount { count: facets.get(Facet::Stashes, stashes::read)?.len() },
        submodules: (*submodules).clone(),
        recent_commits: history,
        conventions: (*conventions).clone(),
        conflict: answers::conflict(facets.git(), &status.conflicted)?,
        lost: Vec::new(),
        parent_moved: None,
        owners: Vec::new(),
        parallel: None,
        hints: Vec::new(),
        diagnostics: None,
    };
    let lineage = facets
        .get(Facet::Lineage, |git| lineage::read(git, &head::read(git)?, refs::default_branch(git)?.as_deref()))?;
    let changed: std::collections::BTreeSet<String> = status
        .staged
        .iter()
        .chain(&status.unstaged)
        .map(|change| change.path.clone())
        .chain(status.untracked.iter().cloned())
        .chain(status.conflicted.iter().cloned())
        .collect();
    let changed: Vec<String> = changed.into_iter().collect();
    let git = facets.git();
    let operation_or_conflict = brief.operation_in_progress.is_some() || !status.conflicted.is_empty();
    let brief = Brief {
        lost: answers::lost(git, &lineage, options.now, head.branch.as_deref())?,
        parent_moved: answers::parent_moved(git, &lineage, head.branch.as_deref(), head.sha.as_deref())?,
        owners: if operation_or_conflict { Vec::new() } else { answers::owners(git, &lineage, &changed)? },
        ..brief
    };
    let facts = crate::brief::hints::Facts {
        brief: &brief,
        conflicted: &status.conflicted,
        changed: &changed,
        lineage: &lineage,
        proposals: options.proposals,
        tool_names: options.tool_names,
        now: options.now,
    };
    let mut hints = crate::brief::hints::rank(&facts);
    for hint in &mut hints {
        hint.stated_by = hint.stated_by.or_else(|| stated_by(&brief, hint));
    }
    Ok(Brief { hints, ..brief })
}

/// The brief's section that already answers what `hint`'s call would (the text then leaves the hint
/// out while that section is shown uncut): the conflict read whole, the lost commits of the hinted
/// branch, the rebased parent, the owners of every changed path, or the few changes listed beside
/// the hint to review them.
fn stated_by(brief: &Brief, hint: &Hint) -> Option<&'static str> {
    let hinted_branch = hint.arguments.get("refName").and_then(serde_json::Value::as_str);
    match hint.kind {
        "conflicts" => {
            brief.conflict.as_ref().filter(|read| answers::conflict_complete(read)).map(|_| "conflictRegions")
        }
        "dropped" => brief
            .lost
            .iter()
            .any(|lost| Some(lost.branch.as_str()) == hinted_branch && lost.more == 0)
            .then_some("lost"),
        "parentMoved" => brief.parent_moved.as_ref().map(|_| "parentMoved"),
        "owners" => (!brief.owners.is_empty() && brief.owners.iter().all(|group| group.more == 0)).then_some("owners"),
        "uncommittedOnDefault" if !hint.tool.contains("preview") => brief.changes.as_ref().map(|_| "changes"),
        _ => None,
    }
}

/// The characters of a subject that a brief's commit line keeps (see [`shortened_subject`]).
pub const SUBJECT_CHARS: usize = 100;

/// `subject` as a brief's commit line gives it: whole up to [`SUBJECT_CHARS`] characters, else its
/// first [`SUBJECT_CHARS`] characters followed by `…`. Characters, not bytes, so a cut never splits
/// one. A brief shows where work stands, and one commit pasted with a whole paragraph as its
/// subject would otherwise push the other commits out of the budget; `repo.history` and
/// `commit.details` keep whole subjects.
pub fn shortened_subject(subject: &str) -> String {
    match subject.char_indices().nth(SUBJECT_CHARS) {
        Some((end, _)) => format!("{}…", &subject[..end]),
        None => subject.to_owned(),
    }
}

/// Cuts `full` to `max_tokens`: required fields always; then hints, the conflict's regions, lost
/// commits, the rebased parent, owner groups, submodule attention, recent commits, branch prefixes
/// and the cache diagnostics (present only when the repository is not watched), in that priority. A
/// cut attention list sets `attentionTruncated`.
///
/// # Errors
/// [`crate::Error::Invalid`] (`budget_below_floor`) when the required fields alone exceed
/// `max_tokens`.
pub fn fit(full: Brief, max_tokens: usize, measure: &mut Measure<'_, Brief>) -> Result<Budgeted<Brief>> {
    let regions = |brief: &Brief| {
        brief.conflict.as_ref().map_or(0, |read| read.files.iter().map(|f| f.work_tree.regions.len()).sum())
    };
    let totals = [
        full.hints.len(),
        regions(&full),
        full.lost.len(),
        usize::from(full.parent_moved.is_some()),
        full.owners.len(),
        full.submodules.attention.len(),
        full.recent_commits.len(),
        full.conventions.branch_prefixes.len(),
        usize::from(full.diagnostics.is_some()),
    ];
    let cut = |full: &Brief, shown: &[usize]| {
        let mut brief = full.clone();
        brief.hints = first(&full.hints, shown[0]);
        // Without a region shown the conflict is left out whole: the hint to `conflict.read` then stands for it.
        brief.conflict = full.conflict.as_ref().filter(|_| shown[1] > 0).map(|read| {
            let files = read.files.len();
            crate::conflict::read::cut(read, &[files, shown[1], usize::MAX])
        });
        brief.lost = first(&full.lost, shown[2]);
        brief.parent_moved = full.parent_moved.clone().filter(|_| shown[3] > 0);
        brief.owners = first(&full.owners, shown[4]);
        brief.submodules.attention = first(&full.submodules.attention, shown[5]);
        brief.submodules.attention_truncated |= shown[5] < full.submodules.attention.len();
        brief.recent_commits = first(&full.recent_commits, shown[6]);
        brief.conventions.branch_prefixes = first(&full.conventions.branch_prefixes, shown[7]);
        brief.diagnostics = full.diagnostics.clone().filter(|_| shown[8] > 0);
        brief
    };
    let names = [
        "hints",
        "conflictRegions",
        "lost",
        "parentMoved",
        "owners",
        "submoduleAttention",
        "recentCommits",
        "branchPrefixes",
        "diagnostics",
    ];
    fit_sections(&full, &names, &totals, max_tokens, &cut, measure)
}

impl Engine {
    /// `repo.brief`: situational awareness in one call, cut to `max_tokens` as measured by
    /// `measure`.
    ///
    /// # Errors
    /// [`crate::Error::GitRead`] on a failed read; [`crate::Error::Invalid`] (`budget_below_floor`)
    /// when the required fields alone exceed `max_tokens`.
    pub fn brief(
        &self,
        repo: &Repo,
        options: &Options,
        max_tokens: usize,
        measure: &mut Measure<'_, Brief>,
    ) -> Result<Budgeted<Brief>> {
        let mut brief = read_from(&self.facets(repo), options)?;
        brief.parallel = self.parallel(repo)?;
        if let Some(hint) = brief.parallel.as_ref().and_then(|parallel| hints::collisions(parallel, options)) {
            hints::insert(&mut brief.hints, hint);
        }
        brief.diagnostics =
            Some(self.cache.diagnostics(&repo.call)).filter(|diagnostics| diagnostics.cache != "watched");
        fit(brief, max_tokens, measure)
    }
}

impl Engine {
    /// The brief's [`Parallel`] line: `None` without a linked worktree (no forecast is made);
    /// otherwise the collision forecast's counts (cached as `repo.collisions` caches it). A
    /// forecast that fails leaves the line out rather than the brief.
    ///
    /// # Errors
    /// [`crate::Error::Cancelled`] when the call is cancelled.
    fn parallel(&self, repo: &Repo) -> Result<Option<Parallel>> {
        if repo.git.worktrees().map_or(true, |linked| linked.is_empty()) {
            return Ok(None);
        }
        let options = crate::collision::Options { max_files: 1, agents: None };
        let report = match self.collisions_full(repo, &options) {
            Ok(report) => report,
            Err(crate::Error::Cancelled) => return Err(crate::Error::Cancelled),
            Err(_) => return Ok(None),
        };
        let first = report.pairs.first().map(|pair| match pair.files.first() {
            Some(file) => format!("{} x {}: {}", pair.a, pair.b, file.path),
            None => format!("{} x {}", pair.a, pair.b),
        });
        Ok(Some(Parallel {
            lines: report.lines.len(),
            conflicting: report.conflicting,
            overlapping: report.overlapping,
            first,
        }))
    }
}
