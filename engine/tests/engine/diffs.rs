//! `diff.text`, `commit.details` and `worktree.changes` checked against the git CLI: the same files, statuses and
//! `--numstat` counts as git, patches that `git apply` turns into the target tree (also when cut), and every
//! repository byte-identical after every read.

mod details;
mod funcname;
mod stash;
mod support;
mod text;
mod unmerged;
