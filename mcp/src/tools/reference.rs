//! The long explanation of each tool, for `docs/tools.md` only: `tools/list` sends the short description.
//!
//! Each entry is what an agent or a person may want to know beyond the short description: every field of the answer
//! in words, the cuts a budget makes, the edge cases. Tools without an entry are documented by their description.

/// The long explanation of the tool with dotted name `name`, if it has one.
pub(crate) fn long_doc(name: &str) -> Option<&'static str> {
    LONG_DOCS.iter().find(|(tool, _)| *tool == name).map(|(_, doc)| *doc)
}

const LONG_DOCS: &[(&str, &str)] = &[
    (
        "repo.brief",
        "Situational awareness in one call, replacing 6-10 raw git calls: HEAD (branch, detached, unborn, sha, \
         upstream, ahead/behind), the operation in progress, exact work-tree counts, stash count, submodule \
         drift, recent commits, conventions (Conventional Commits ratio, default branch, branch prefixes) and up \
         to 3 ranked hints, each a tool to call next with its arguments (conflicts, an operation in progress, \
         commits a branch dropped recently, detached HEAD, behind upstream, a stack whose base moved, submodules, \
         CODEOWNERS with uncommitted changes, uncommitted changes on the default branch, stashes), with what no \
         other field says (`why`) and the git commands a person would run (`run`). The whole result fits \
         `maxTokens` (o200k_base); anything cut is counted in `omitted`. With `format: \"text\"`: `git status \
         -sb`-like lines, `-> tool arg=value: why` hint lines; conventions and `run` only in structuredContent. \
         Call it first in a session.",
    ),
    (
        "repo.status",
        "Current branch, upstream with ahead/behind, the operation in progress, exact counts and every dirty \
         path: conflicted, staged (index vs HEAD), unstaged (work tree vs index) and untracked files as `git \
         status` lists them (`status.showUntrackedFiles`: a wholly untracked directory is one `dir/` entry by \
         default), paths as UTF-8. Lists are cut to `maxTokens` in that priority; counts stay exact.",
    ),
    (
        "repo.refs",
        "Local branches with upstream and ahead/behind (gone upstreams flagged), remotes (URLs without \
         passwords), stashes newest first, remote-tracking branches, and tags peeled to their commit, newest \
         commit first. Lists are cut to `maxTokens` in that priority and counted in `omitted`, so old tags go \
         before any branch; exact `counts` of every list come with a cut answer.",
    ),
    (
        "repo.scope",
        "Everything about one file or directory of the repository before editing it: its work-tree changes (like \
         `git status -- path`: conflicted, staged, unstaged, untracked, exact counts), the recent commits \
         touching it (like `git log -n N -- path`), churn (commits and distinct author emails with a commit date \
         in the `churnDays` before now, 1-36,500, with per-author counts), `allTime`: who wrote it over HEAD's \
         whole history (commits, distinct authors and the top 10 with counts, through `.mailmap`, as \
         `git shortlog -sn HEAD -- path`), and its code owners from the CODEOWNERS file \
         GitHub would use at HEAD (`.github/`, root, then `docs/`; last matching rule wins; a rule without owners \
         leaves it unowned). For a directory, `owners` come from the last rule covering everything in it and \
         `ownersByRule` groups its files by deciding rule; `changed` groups its changed paths by owners. CODEOWNERS lines GitHub would skip are listed in \
         `errors`. `path` `.` is the whole repository. Lists are cut to `maxTokens` (conflicted, staged, \
         unstaged, recent commits, authors, all-time authors, errors, changed owners, owners by rule, untracked) \
         and counted in `omitted`.",
    ),
    (
        "repo.branchStack",
        "Where a branch stands (the current one, or `branch`): against its upstream, against its base (the first \
         of `baseCandidates` that exists, then main, master, develop, dev, trunk: merge-base), and which local \
         branches are stacked with it, in stack order: `currentStackedOn` (it is built on them, nearest the base \
         first), `stackedOnCurrent` (built on it, nearest first), then `sharesBase` (forked from the base at the \
         same commit, newest first), each with its own upstream. Every ahead/behind is seen from the examined \
         branch: `ahead` = commits it has that the other lacks, as `git rev-list --left-right --count \
         <branch>...<other>`. `relatedTotal` is exact when `maxRelated` lists fewer. `parentMoved` names a local \
         branch the examined one was built on that was rewritten since (`git rebase main` on it): its old tip is \
         the newest of its last 50 reflog entries that is one of the examined branch's own commits (what `git \
         merge-base --fork-point <parent> <branch>` answers), while its tip now is not under the examined branch \
         and no longer holds that old tip (a parent that merely advanced is not named). It gives `git rebase \
         --onto <parent> <oldTip> <branch>` and that rebase predicted in memory (`replay`, up to 100 commits; \
         where it stops and the conflicting paths). The reflogs of 64 local branches are read at most.",
    ),
    (
        "worktree.list",
        "The main work tree and every linked worktree, like `git worktree list --porcelain`: path, branch or \
         detached, HEAD sha, locked (with reason), prunable (its checkout is gone), and which one `repoPath` is \
         in (`current`). Each worktree inside the allowed roots also has its state, as `git status` in it would \
         count it: the upstream with ahead/behind, the operation stopped there, the conflicted, staged, unstaged \
         and untracked counts, and the agents detected at work there with when they last acted (one call where \
         an agent would run `git status` in every worktree). A worktree outside the roots is named \
         (`outsideRoots`), never read.",
    ),
    (
        "submodule.status",
        "Every submodule at any depth, like `git submodule status --recursive`: path, the commit the parent \
         records vs the one checked out, initialised, state (`clean`, `drifted` = checked out elsewhere than \
         recorded, `uninitialized`, `conflict`), and whether its own work tree is dirty or has untracked files. \
         `path` limits the list to one submodule and those nested in it.",
    ),
    (
        "repo.history",
        "A page of commits like `git log [ref] [-- path]` (newest committer date first, git's default history \
         simplification for a path): sha, parents, author, author date (ISO 8601) and subject. Pass `nextCursor` \
         back as `cursor` for the next page, with the same `ref` and `path`: the cursor pins the starting commit, \
         so pages never skip or repeat a commit even when the ref moves. Commits that did not fit `maxTokens` are \
         counted in `omitted.commits` and come first on the next page. With `symbol` (and `path`): the commits \
         that changed that function, type or method, as `git log -L :symbol:path` lists them: the symbol is found \
         by the tree-sitter parser at `ref` (an ambiguous name is refused with the candidates in \
         `data.suggestions`), its lines run to the next function start by git's funcname rule, and they are \
         followed back through each diff and across renames; each commit names the hunks that touched them.",
    ),
    (
        "repo.reflog",
        "How a ref moved, newest first like `git reflog show <ref>`: index (`ref@{N}`), old and new sha, action \
         (`commit`, `commit (amend)`, `reset`, `rebase (start)`, `checkout`, ...), message, time and the identity \
         git recorded (configured, not proof of who). A movement that dropped commits (its old tip is not an \
         ancestor of the new one and no ref reaches it) carries `recovery`: the lost tip, how many commits only \
         it reaches, and what brings it back: with a gateway configured the proposal (`operation.preview.branch` \
         and its arguments), without one the git command a person runs. `total` is exact; entries are cut to \
         `limit` and `maxTokens`.",
    ),
    (
        "conflict.read",
        "The conflict in progress, not the files: the operation (merge, rebase, cherry-pick, \
         revert, or a failed stash apply/pop, recognised by unmerged index entries with no state file), its \
         progress as `git status` counts it (rebase commands done and remaining), the git commands that \
         conclude or abort it, the commits still to replay that touch a conflicted path, the commits behind \
         \"ours\" (stage 2) and \"theirs\" (stage 3), and per unmerged file its `git status` classification, its \
         stages (oid, mode, full size, binary flag) and every marker region of the work-tree file (merge, diff3 \
         and zdiff3 styles) with its ours, theirs and (diff3/zdiff3) base lines and 3 lines of context, as \
         `git diff` shows an unmerged path. Whole sides only with `sides: true`, capped to `maxBytesPerSide`. \
         Without a conflict it says so (`conflict: false`), not an error. The whole JSON fits `maxTokens`: \
         files first, then every region of every file, then whole sides; what was cut is counted in `omitted`.",
    ),
    (
        "repo.conflictPreflight",
        "Predicts, before anyone is asked to approve it, what `git merge <targetRef>` on \
         `<currentRef>` and `git rebase <targetRef>` of `<currentRef>` would do: clean, or each conflicting path \
         with its kind (content, add/add, modify/delete, rename/delete, rename/rename, binary, submodule, ...) \
         and the line ranges of the marker regions Git would write; for the rebase, the first commit that \
         would stop (step i of n), why, and the later commits that change the same paths. Computed in memory with gix's merge (criss-cross histories with \
         several merge bases included): no object, ref, index or work-tree file is written, and no merge \
         driver is run. The result is a prediction (`prediction: true`). When a merge, rebase, cherry-pick, \
         revert or stash apply is stopped in the repository, `inProgress` comes first and says so, with what \
         finishes or undoes it.",
    ),
    (
        "commit.details",
        "One commit: sha, parents, author and committer (name, email, ISO time), subject, body, and every changed \
         file with status (added, modified, deleted, renamed with `from` and similarity, type-change), additions \
         and deletions like `git show --numstat -M` (binary files: null counts). A merge is diffed against its \
         first parent and says so in `note`; a root commit against the empty tree. A stash (`stash@{n}` or its \
         sha) is recognised: `files` are its work tree against its base (`git stash show`), `stash.index` what \
         was staged (`git diff stash^1 stash^2`), `stash.untracked` the untracked files it saved (`git show \
         stash^3`). Copies are not detected. Files, then the stash's lists, then the body, are cut to \
         `maxTokens`; totals stay exact. Use diff.text for the patch itself.",
    ),
    (
        "worktree.changes",
        "Per path: status, additions, deletions and binary, with the index and the work tree kept apart: `staged` \
         is `git diff --cached --numstat` (index vs HEAD, renames detected), `unstaged` is `git diff --numstat` \
         (work tree vs index), plus untracked files as `git status` lists them (a wholly untracked directory is \
         one `dir/` entry unless `status.showUntrackedFiles=all`) and unmerged paths (listed once, in \
         `conflicted`). Never refreshes or writes the index. Lists are cut to `maxTokens` in that priority \
         (conflicted, staged, unstaged, untracked); counts stay exact. Use diff.text for the patch.",
    ),
    (
        "diff.text",
        "A standard unified patch equal to `git diff` for the same selection (same files, statuses and --numstat \
         counts; `git apply` of it reproduces the target). Selection: no base/head = work tree vs index (`git \
         diff`); `staged: true` = index vs HEAD (`git diff --cached`, or vs `base`); `base` only = that revision \
         vs work tree; `head` may be a revision, INDEX or WORKTREE (`base` then defaults to HEAD). `path` limits \
         it to a file or directory. Renames are detected like git (50%). Every file is listed (path, status, \
         additions, deletions, binary, nonUtf8, inPatch). Cuts drop whole hunks, never part of one, so what is \
         kept still applies; the tightest of maxBytes (patch bytes), maxLines (patch lines) and maxTokens (the \
         whole result) wins, and `truncated`, `totalBytes`, `totalLines` tell what the full patch was. Binary \
         files show git's `Binary files ... differ` line (which `git apply` refuses) unless `binary: true` \
         carries their content as `GIT binary patch` like `git diff --binary`; text that is not UTF-8 is always \
         carried exactly as a `GIT binary patch`. After `@@`, the function context git prints (its default rule, \
         the `diff=<driver>` of .gitattributes with git's built-in drivers or a configured xfuncname; no \
         textconv). During a stopped merge, rebase, \
         cherry-pick, revert or stash apply, an unmerged path is shown as `git diff` shows it: against the work \
         tree, the combined diff (`diff --cc`, `@@@` hunks, the conflict markers as added lines; not for `git \
         apply`) when both sides have the file, else `* Unmerged path <path>` and ours against the work-tree \
         file, with `git diff --numstat`'s counts; in other comparisons with the index (`staged`, INDEX), `* \
         Unmerged path <path>` only; a revision against the work tree diffs the work-tree file like any other. A \
         text patch never shows moves of functions or classes (see diff.semantic).",
    ),
    (
        "fleet.radar",
        "An attention queue across many repositories, one entry per repository with its state and one short \
         reason, ranked error (could not be read) > conflicts > operation in progress > detached HEAD > behind \
         upstream > dirty > unpushed (ahead) > stale (no commit and no reflog movement for 30 days) > clean, then \
         by path. Counts per state are exact even when the queue is cut. Repositories come from `repoPaths`, \
         `repositories` [{repoPath, label}] or, without either, the registry (`fluxgit-mcp-sidecar fleet add`, \
         and repositories seen in earlier calls); with none, `hint` says how to register some. A folder in \
         `repoPaths` outside any repository is read as the checkouts below it (at most 4 levels down, 10,000 \
         directories and 500 repositories; `scanned` says what each folder gave). A repository that cannot be \
         read is an entry with state `error` whose reason uses git's words (`bad object HEAD`, `not a git \
         repository`); the call goes on. A detached HEAD's reason is `git status`'s first line (`HEAD detached \
         at 14.1.0`). Local: nothing is fetched or written, so `behind` is as of the last fetch. The queue is \
         cut to `maxRepos` and `maxTokens` (counted in `omitted.queue`).",
    ),
    (
        "fleet.digest",
        "The reflog movements of HEAD and the local branches across repositories since `sinceMs`, newest first: \
         branch (or HEAD alone), time, old and new tip, the identity exactly as git recorded it (configured, not \
         proof of who), the reflog message, and `rewrote` where the old tip was dropped (reset back, amend, \
         rebase, forced move). Read from the reflog files: nothing is fetched and nothing written. Repositories \
         from `repoPaths` or, without it, the registry; one that cannot be read is listed in `unreadable` and the \
         call goes on. `total` is exact; the list is cut to `maxEvents` (`truncated`) and `maxTokens` \
         (`omitted.events`).",
    ),
    (
        "agents.presence",
        "Which other coding agents (Claude Code, Codex CLI, Gemini CLI, Aider, Cursor, VS Code, other MCP \
         sidecars) work in this repository right now, from local sources only: running processes whose working \
         directory is inside it, the agents' own session stores read read-only, the files Aider keeps in the \
         repository, editors' workspace state and MCP presence files. Per agent: state (working = activity within \
         2 minutes, open = process alive, recent = within 24 hours), sources, branch, last tool, the \
         repo-relative files it touched, pid, last activity, and `likelyCaller` for the record that is probably \
         you. Never prompts, messages, tool outputs or file contents. Check it before editing files or switching \
         branches when several agents share a repository.",
    ),
    (
        "file.read",
        "A file's content at a revision, byte for byte as `git show rev:path`: mode, blob sha, size and total \
         line count, with the lines startLine..endLine (default: all). UTF-8 text is in `content`; text that is \
         not UTF-8 is in `contentBase64` (`nonUtf8: true`); binary files (`binary: true`) carry no content. Cut \
         at whole lines by the tightest of maxBytes and maxTokens: `truncated`, `endLine` (the last line shown) \
         and `omitted.lines` say so; ask again from endLine + 1. `format: \"text\"` gives a header line and the \
         content as is. A path absent at the revision is invalid params `not_found`, a directory or submodule \
         `not_a_file`, endLine < startLine or a start past the end `invalid_range`. No filters or attributes are \
         applied.",
    ),
    (
        "file.blame",
        "Who last changed each line of a file at a revision, as `git blame --line-porcelain` says: ranges of \
         consecutive lines from one commit (`line`, `lines`, `commit`, and `origPath`/`origLine` where the lines \
         came from in that commit; renames are followed as git does), with each commit's author, author time and \
         subject once in `commits`. Lines startLine..endLine (default: all). Revisions listed in the \
         blame.ignoreRevsFile files, else in `.git-blame-ignore-revs` (GitHub's convention), are skipped as `git \
         blame --ignore-revs-file` skips them (`ignoreRevs: false` turns that off): `ignoredRevs` names the ones \
         skipped, `unblamable` marks lines left on one. Without `rev` the work-tree file is blamed, as `git blame \
         FILE` does (line numbers as in the editor; lines not committed yet are commit `0000000`, `Not Committed \
         Yet`); give `rev` (e.g. `HEAD`) to blame a commit's version. Shallow clones stop at their boundary \
         commit, as git does. Cut at whole ranges by maxTokens: `truncated`, `endLine` and `omitted.ranges` say \
         so; ask again from endLine + 1. A path absent at the revision is invalid params `not_found`, a directory \
         or submodule `not_a_file`, a binary file `binary_file`, endLine < startLine or a start past the end \
         `invalid_range`.",
    ),
    (
        "repo.search",
        "Commits whose message (subject and body) contains every word and \"quoted phrase\" of `query`, \
         case-insensitive substrings, as `git log --all-match -i -F --grep=<word>...`; optionally by `author` (a \
         substring of \"Name <email>\"), changing `path` (a file or directory, compared with every parent), with \
         a committer date between `since` and `until` (inclusive; `YYYY-MM-DD` or RFC 3339), reachable from `ref` \
         (default: every local branch and HEAD). Ranked by relevance, then newest; `total` counts every match \
         exactly, `commits` lists the best `limit` (cut further by `maxTokens`, counted in `omitted.commits`). \
         Without `ref` the commit index answers in milliseconds; `walked` says when the history was read instead. \
         Content search: `added` lists the commits whose diff against their first parent changes how many times \
         the string (case-sensitive) occurs in a file, as `git log -S`; `addedRegex` those adding or removing a \
         line matching the regex (Rust `regex` syntax, case-sensitive), as `git log -G`. Merges are never listed \
         (git shows no diff for them); `-S` counts in binary files, `-G` skips them; renames follow \
         `diff.renames`. Each match lists its `files`. The history is walked newest first within a 20 s budget: \
         `stopped` says how many commits were examined when it ran out (`total` then counts those only), \
         `skipped` the file versions over 16 MiB left unread.",
    ),
    (
        "operation.cancel",
        "Withdraw one of your own proposals while it is still pending (before a person decided). The gateway \
         refuses (10006) another agent's proposal or one already approved, executing or ended.",
    ),
    (
        "operation.status",
        "The authoritative state of a proposal at the approval gateway. completed: `result` says what Git did. \
         pending, approved, executing: nothing is claimed about Git yet; poll again (nextAction). rejected, \
         failed, expired, cancelled: isError with code 10004 and the gateway's payload. Read-only.",
    ),
    (
        "safety.timeline",
        "What the approval gateway did and saw in this repository, newest first: restore points, executed \
         operations and (optionally) reflog movements, each with id, kind, time, operation type, summary and the \
         refs before/after. Gateway-only: without a gateway it answers 10001 with an upgradeHint; never \
         synthesised from local refs (use repo.reflog for local movements).",
    ),
    (
        "safety.eventDetails",
        "One event of the safety timeline in full (`eventId`, else the latest). Gateway-only: without a gateway \
         it answers 10001 with an upgradeHint.",
    ),
    (
        "flux.restorePoints",
        "The restore points the gateway took before executing approved operations, newest first: id, time, \
         operation type, previewId, refs before/after, HEAD before, the index/work-tree snapshot commit and \
         whether it can be undone. Gateway-only: without a gateway it answers 10001 with an upgradeHint.",
    ),
    (
        "flux.latestRestorePoint",
        "The newest restore point of this repository (see flux.restorePoints). Gateway-only: without a gateway it \
         answers 10001 with an upgradeHint.",
    ),
    (
        "flux.restorePointDetails",
        "One restore point in full (`restorePointId`, else the latest). Gateway-only: without a gateway it \
         answers 10001 with an upgradeHint.",
    ),
];
