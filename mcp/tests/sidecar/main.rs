//! The sidecar's integration tests, one test binary (STYLE §5): the real binary over stdio (`protocol`,
//! `tools_stdio`, `history`, `scope`) and the token budgets of the tools on real fixtures (`budget`).

mod budget;
mod history;
mod protocol;
mod scope;
mod support;
mod tools_stdio;
