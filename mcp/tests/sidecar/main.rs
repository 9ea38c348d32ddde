//! The sidecar's integration tests, one test binary (STYLE §5): the real binary over stdio (`protocol`,
//! `tools_stdio`), the token budgets of the tools on real fixtures (`budget`), and the diff tools (`diff_tools`).

mod budget;
mod diff_tools;
mod protocol;
mod support;
mod tools_stdio;
