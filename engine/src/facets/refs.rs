//! Ref facets: upstreams with ahead/behind, local and remote branches, tags, remotes.

use gix::bstr::ByteSlice;
use gix::remote::Direction;
use serde::Serialize;

use crate::compact::{is_false, is_zero};
use crate::error::{Error, ItemError, Result, Unreadable};

/// A branch's upstream as configured by `branch.<name>.remote` and `branch.<name>.merge`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Upstream {
    /// The remote-tracking branch's short name, e.g. `origin/main`.
    pub name: String,
    /// Commits on the branch that the upstream does not have (`git rev-list --count @{u}..HEAD`);
    /// default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub ahead: usize,
    /// Commits on the upstream that the branch does not have (`git rev-list --count HEAD..@{u}`);
    /// default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub behind: usize,
    /// `true` when the upstream is configured but its remote-tracking ref no longer exists
    /// (`[gone]`); counts are 0. Default false.
    #[serde(skip_serializing_if = "is_false")]
    pub gone: bool,
}

/// A local branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Branch {
    /// Short name, e.g. `feature/x`.
    pub name: String,
    /// Tip commit sha.
    pub sha: String,
    /// `true` for the branch HEAD names in this worktree; default false.
    #[serde(skip_serializing_if = "is_false")]
    pub current: bool,
    /// The configured upstream; default `null` (none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
    /// Why the branch could not be read, e.g. it names an object that does not exist (`sha` is then
    /// what the ref file says, `upstream` is `null`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ItemError>,
}

/// A remote-tracking branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteBranch {
    /// Short name, e.g. `origin/main`.
    pub name: String,
    /// Tip commit sha.
    pub sha: String,
}

/// A tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tag {
    /// Short name, e.g. `v1.0`.
    pub name: String,
    /// The object the tag finally points to after peeling annotated tags (usually a commit).
    pub sha: String,
    /// `true` for an annotated tag object; default false (a lightweight tag).
    #[serde(skip_serializing_if = "is_false")]
    pub annotated: bool,
}

/// A configured remote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Remote {
    /// The remote's name, e.g. `origin`.
    pub name: String,
    /// The fetch URL with any password removed; default `null` (none configured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetch_url: Option<String>,
    /// The push URL with any password removed, when it differs from the fetch URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_url: Option<String>,
}

/// The upstream of the local branch `branch_name` (full name, `refs/heads/...`) whose tip is `tip`.
///
/// # Errors
/// [`Error::GitRead`] when the upstream configuration is invalid or the walk fails.
pub fn upstream_of(
    repo: &gix::Repository,
    branch_name: &gix::refs::FullNameRef,
    tip: Option<gix::ObjectId>,
) -> Result<Option<Upstream>> {
    let Some(tracking) = repo.branch_remote_tracking_ref_name(branch_name, Direction::Fetch) else {
        return Ok(None);
    };
    let tracking = tracking.map_err(|err| Error::git("upstream configuration", err))?;
    let name = tracking.shorten().to_string();
    let upstream_tip = repo
        .try_find_reference(tracking.as_ref())
        .map_err(|err| Error::git("upstream ref", err))?
        .map(|mut reference| peel_to_id(&mut reference))
        .transpose()
        .map_err(|err| Error::git("upstream ref", err))?;
    let Some(upstream_tip) = upstream_tip else {
        return Ok(Some(Upstream { name, ahead: 0, behind: 0, gone: true }));
    };
    let (ahead, behind) = match tip {
        Some(tip) => crate::ancestry::ahead_behind(repo, tip, upstream_tip)?,
        None => (0, 0),
    };
    Ok(Some(Upstream { name, ahead, behind, gone: false }))
}

/// The upstream of the branch HEAD names, with ahead/behind from HEAD's commit; `None` when
/// detached or without one.
///
/// # Errors
/// As [`upstream_of`].
pub fn current_upstream(repo: &gix::Repository, head: &crate::facets::head::Head) -> Result<Option<Upstream>> {
    let Some(name) = repo.head_name().map_err(|err| Error::git("HEAD", err))? else {
        return Ok(None);
    };
    let tip = head.sha.as_deref().and_then(|sha| gix::ObjectId::from_hex(sha.as_bytes()).ok());
    upstream_of(repo, name.as_ref(), tip)
}

/// Starts numbering, on a thread of its own, the commits an upstream count of the branch HEAD names
/// will walk (HEAD's commit and its upstream's tip), so that a caller can read something else
/// meanwhile: without a commit-graph the first count on a repository reads its whole history (see
/// `ancestry::generations`). Does nothing when HEAD is detached or unborn, has no upstream, or the
/// commits are numbered already; the thread stops without numbering when the count needs no numbers
/// (`ancestry::linear_ahead_behind`: equal tips, or both a few single-parent commits above a common
/// one).
pub(crate) fn number_current_upstream(repo: &gix::Repository) {
    let Ok(Some(name)) = repo.head_name() else { return };
    let Ok(head) = repo.head_id() else { return };
    let Some(Ok(tracking)) = repo.branch_remote_tracking_ref_name(name.as_ref(), Direction::Fetch) else { return };
    let Ok(Some(mut reference)) = repo.try_find_reference(tracking.as_ref()) else { return };
    let Ok(upstream) = peel_to_id(&mut reference) else { return };
    let head = head.detach();
    crate::ancestry::generations::number_in_background(repo, vec![head, upstream], move |repo| {
        crate::ancestry::linear_ahead_behind(repo, head, upstream).is_some()
    });
}

/// Counts commits reachable from `from` but not from `hidden`
/// (`git rev-list --count hidden..from`), walks cut at a shallow clone's boundary (see
/// [`crate::ancestry::count_exclusive`]).
///
/// # Errors
/// [`Error::GitRead`] when a commit cannot be read.
pub fn count_exclusive(repo: &gix::Repository, from: gix::ObjectId, hidden: gix::ObjectId) -> Result<usize> {
    crate::ancestry::count_exclusive(repo, from, hidden)
}

/// A ref that could not be read (its file does not parse, or it names an object that does not
/// exist): git skips it with a warning, the engine lists it with why. The name comes from the error
/// when the file does not parse (gix-ref's `ReferenceDecode`:
/// `The reference at "<path>" could not be decoded`).
pub fn unreadable_ref(name: Option<&str>, err: impl std::error::Error) -> Unreadable {
    let error = ItemError::from_error(err);
    let path = name.map(str::to_owned).or_else(|| {
        let (_, rest) = error.reason.split_once("The reference at \"")?;
        rest.split_once("\" could not be decoded").map(|(path, _)| path.to_owned())
    });
    Unreadable { path: path.unwrap_or_else(|| "refs".to_owned()), error }
}

/// All local branches in ref-name order, with upstreams; equivalent to `git branch -vv`. Branches
/// that cannot be read are left out, as git leaves them out, and pushed to `unreadable`.
///
/// # Errors
/// [`Error::GitRead`] when refs cannot be listed at all.
pub fn branches(repo: &gix::Repository, unreadable: &mut Vec<Unreadable>) -> Result<Vec<Branch>> {
    let current = repo.head_name().map_err(|err| Error::git("HEAD", err))?;
    let platform = repo.references().map_err(|err| Error::git("refs", err))?;
    let mut branches = Vec::new();
    for reference in platform.local_branches().map_err(|err| Error::git("refs", err))? {
        let mut reference = match reference {
            Ok(reference) => reference,
            Err(err) => {
                unreadable.push(unreadable_ref(None, err));
                continue;
            }
        };
        let full_name = reference.name().to_owned();
        let tip = match peel_to_id(&mut reference) {
            Ok(tip) => tip,
            // Listed as `git branch` lists it, with why it does not resolve.
            Err(err) => match reference.try_id() {
                Some(direct) => {
                    branches.push(Branch {
                        name: full_name.shorten().to_string(),
                        sha: direct.to_string(),
                        current: current.as_ref() == Some(&full_name),
                        upstream: None,
                        error: Some(ItemError::from_error(err)),
                    });
                    continue;
                }
                None => {
                    unreadable.push(unreadable_ref(Some(&full_name.as_bstr().to_string()), err));
                    continue;
                }
            },
        };
        let upstream = upstream_of(repo, full_name.as_ref(), Some(tip))?;
        branches.push(Branch {
            name: full_name.shorten().to_string(),
            sha: tip.to_string(),
            current: current.as_ref() == Some(&full_name),
            upstream,
            error: None,
        });
    }
    Ok(branches)
}

/// Peels `reference` to the first object that is no tag, as [`gix::Reference::peel_to_id`] does
/// (`git rev-parse <ref>^{}`), without inflating the objects that are no tags. A packed ref's
/// peeled line (`^<sha>` under it in `packed-refs`, see git's `refs/packed-backend.c`) answers
/// alone, as in gix (`ReferenceExt::peel_to_id_packed`, which first stats `packed-refs` again).
/// Otherwise each object's kind comes from its header (the type field of the pack entry or loose
/// object, gix `FindHeader`; no full inflate) and only a tag object is read whole, to follow it.
/// gix does not expose `packed-refs`' `fully-peeled` trait, and a ref naming a missing object must
/// still be found out, so a header read is the least a ref costs. Whenever this way fails (a
/// symbolic ref; a missing, unreadable or malformed object), `peel_to_id` itself answers, so
/// results and errors stay gix's.
///
/// # Errors
/// Those of [`gix::Reference::peel_to_id`].
pub fn peel_to_id(reference: &mut gix::Reference<'_>) -> gix::Result<gix::ObjectId> {
    peel(reference).map(|(id, _)| id)
}

/// [`peel_to_id`], with the kind of the object it ends at when a header read on the way told it.
fn peel(reference: &mut gix::Reference<'_>) -> gix::Result<(gix::ObjectId, Option<gix::object::Kind>)> {
    use gix::objs::FindHeader as _;
    if let Some(peeled) = reference.inner.peeled {
        return Ok((peeled, None));
    }
    if let Some(mut id) = reference.try_id().map(gix::Id::detach) {
        let repo = reference.repo;
        while let Ok(Some(header)) = repo.objects.try_header(&id) {
            if header.kind != gix::object::Kind::Tag {
                return Ok((id, Some(header.kind)));
            }
            let Some(target) = repo.find_tag(id).ok().and_then(|tag| tag.target_id().ok()) else { break };
            id = target.detach();
        }
    }
    reference.peel_to_id().map(|id| (id.detach(), None))
}

/// The commit `reference` peels to, as [`gix::Reference::peel_to_commit`] finds it but without
/// inflating it: [`peel_to_id`], then the object's kind (from the header read on the way, or read
/// now). `None` when the ref does not peel or peels to no commit (a tag of a tree or a blob): the
/// refs git skips when it wants commits.
pub fn peel_to_commit_id(reference: &mut gix::Reference<'_>) -> Option<gix::ObjectId> {
    use gix::objs::FindHeader as _;
    let (id, kind) = peel(reference).ok()?;
    let kind = match kind {
        Some(kind) => kind,
        None => reference.repo.objects.try_header(&id).ok()??.kind,
    };
    (kind == gix::object::Kind::Commit).then_some(id)
}

/// Short names of all local branches in ref-name order, without reading upstreams.
///
/// # Errors
/// [`Error::GitRead`] when refs cannot be listed.
pub fn local_branch_names(repo: &gix::Repository) -> Result<Vec<String>> {
    let platform = repo.references().map_err(|err| Error::git("refs", err))?;
    let mut names = Vec::new();
    // A ref that does not parse is no branch name (git skips it too).
    for reference in (platform.local_branches().map_err(|err| Error::git("refs", err))?).flatten() {
        names.push(reference.name().shorten().to_string());
    }
    Ok(names)
}

/// All remote-tracking branches in ref-name order, without symbolic refs such as `origin/HEAD`;
/// unreadable ones go to `unreadable`, as for [`branches`].
///
/// # Errors
/// [`Error::GitRead`] when refs cannot be listed at all.
pub fn remote_branches(repo: &gix::Repository, unreadable: &mut Vec<Unreadable>) -> Result<Vec<RemoteBranch>> {
    let platform = repo.references().map_err(|err| Error::git("refs", err))?;
    let mut branches = Vec::new();
    for reference in platform.remote_branches().map_err(|err| Error::git("refs", err))? {
        let mut reference = match reference {
            Ok(reference) => reference,
            Err(err) => {
                unreadable.push(unreadable_ref(None, err));
                continue;
            }
        };
        if matches!(reference.target(), gix::refs::TargetRef::Symbolic(_)) {
            continue;
        }
        let tip = match peel_to_id(&mut reference) {
            Ok(tip) => tip,
            Err(err) => {
                unreadable.push(unreadable_ref(Some(&reference.name().as_bstr().to_string()), err));
                continue;
            }
        };
        branches.push(RemoteBranch { name: reference.name().shorten().to_string(), sha: tip.to_string() });
    }
    Ok(branches)
}

/// All tags newest first, peeled to their final object; unreadable ones go to `unreadable`, as for
/// [`branches`].
///
/// Newest is by the committer date of the commit a tag peels to, as
/// `git log -1 --format=%ct <tag>^{commit}` gives it, so an annotated tag dates from its commit,
/// not from its tagger line. Tags of the same date follow in ref-name order, and a tag of a tree or
/// a blob, which has no such date, comes after every tag of a commit. A list cut short then keeps
/// the newest tags, the ones an agent asks about.
///
/// # Errors
/// [`Error::GitRead`] when refs cannot be listed at all.
pub fn tags(repo: &gix::Repository, unreadable: &mut Vec<Unreadable>) -> Result<Vec<Tag>> {
    let platform = repo.references().map_err(|err| Error::git("refs", err))?;
    let mut tags: Vec<(Option<i64>, Tag)> = Vec::new();
    for reference in platform.tags().map_err(|err| Error::git("refs", err))? {
        let mut reference = match reference {
            Ok(reference) => reference,
            Err(err) => {
                unreadable.push(unreadable_ref(None, err));
                continue;
            }
        };
        let direct = reference.try_id().map(gix::Id::detach);
        let peeled = match peel_to_id(&mut reference) {
            Ok(peeled) => peeled,
            Err(err) => {
                unreadable.push(unreadable_ref(Some(&reference.name().as_bstr().to_string()), err));
                continue;
            }
        };
        let annotated = direct.is_some_and(|direct| direct != peeled);
        let date = committer_seconds(repo, peeled);
        tags.push((date, Tag { name: reference.name().shorten().to_string(), sha: peeled.to_string(), annotated }));
    }
    // Newest first; `None` (no commit) sorts below every date. The listing is in ref-name order already, and the
    // sort is stable, but the names are compared anyway so that the order does not rest on the ref store's.
    tags.sort_by(|(date_a, tag_a), (date_b, tag_b)| date_b.cmp(date_a).then_with(|| tag_a.name.cmp(&tag_b.name)));
    Ok(tags.into_iter().map(|(_, tag)| tag).collect())
}

/// The committer date, in seconds since the epoch, of the commit `id`; `None` when `id` is no
/// commit (a tree or a blob a tag names) or its committer line does not parse.
fn committer_seconds(repo: &gix::Repository, id: gix::ObjectId) -> Option<i64> {
    let commit = repo.find_commit(id).ok()?;
    let committer = commit.committer().ok()?;
    committer.time().ok().map(|time| time.seconds)
}

/// All configured remotes in name order, URLs with passwords removed.
///
/// # Errors
/// [`Error::GitRead`] when a remote's configuration is invalid.
pub fn remotes(repo: &gix::Repository) -> Result<Vec<Remote>> {
    let mut remotes = Vec::new();
    for name in repo.remote_names() {
        let remote = repo.find_remote(name.as_bstr()).map_err(|err| Error::git("remote configuration", err))?;
        let redacted = |direction| remote.url(direction).map(redact_url);
        let fetch_url = redacted(Direction::Fetch);
        let push_url = redacted(Direction::Push).filter(|push| Some(push) != fetch_url.as_ref());
        remotes.push(Remote { name: name.to_string(), fetch_url, push_url });
    }
    Ok(remotes)
}

/// The repository's default branch: the target of `origin/HEAD`, else `main` or `master` if such a
/// local branch exists (design.md#tools `conventions.defaultBranch`).
///
/// # Errors
/// [`Error::GitRead`] when refs cannot be read.
pub fn default_branch(repo: &gix::Repository) -> Result<Option<String>> {
    let origin_head =
        repo.try_find_reference("refs/remotes/origin/HEAD").map_err(|err| Error::git("origin/HEAD", err))?;
    if let Some(reference) = origin_head
        && let gix::refs::TargetRef::Symbolic(target) = reference.target()
    {
        let short = target.shorten().to_string();
        return Ok(Some(short.strip_prefix("origin/").unwrap_or(&short).to_owned()));
    }
    for candidate in ["main", "master"] {
        let full = format!("refs/heads/{candidate}");
        if repo.try_find_reference(full.as_str()).map_err(|err| Error::git("refs", err))?.is_some() {
            return Ok(Some(candidate.to_owned()));
        }
    }
    Ok(None)
}

/// Renders a URL without its password; user names stay (they are not secrets and help identify the
/// account).
fn redact_url(url: &gix::Url) -> String {
    let mut url = url.clone();
    if url.password().is_some() {
        url.set_password(Some("***".into()));
    }
    url.to_bstring().to_string()
}
