//! The sidecar's integration tests, one test binary (STYLE §5): the real binary over stdio (`protocol`,
//! `tools_stdio`), the token budgets of the tools on real fixtures (`budget`), the audit of every call (`audit`),
//! `verify-audit` (`verify_audit`) and the presence file (`presence`).

mod audit;
mod budget;
mod presence;
mod protocol;
mod support;
mod tools_stdio;
mod verify_audit;
