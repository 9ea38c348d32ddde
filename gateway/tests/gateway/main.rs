//! Integration tests of the reference gateway with real git repositories (the git CLI is the oracle): the HTTP
//! API on the real binary, a person's approval through a pseudo-terminal, the executor and restore points through
//! the library, and crash recovery with fault points.

mod api;
mod crash;
mod day_to_day;
mod hostile;
mod limits;
mod notify;
mod operations;
mod restore;
mod support;
mod web;
mod worktree_remove;
