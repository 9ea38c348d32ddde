//! The gateway's environment, in two stages: [`RawConfig`] (variables as read) then [`Config`] (validated).
//!
//! - `FLUXGIT_RUN_DIR`: run dir (default `<data_local_dir>/FluxGit/run`, e.g. `~/.local/share/FluxGit/run`); the
//!   journal lives in `<run_dir>/gateway/`.
//! - `FLUXGIT_MCP_ALLOWED_ROOTS`: allowed roots (OS path-list separator), else the home directory.
//! - `FLUXGIT_MCP_AGENT_POLICY`: the agent policy file ([`crate::policy`]); unset means permissive.
//! - `FLUXGIT_MCP_AUDIT_LOG` / `FLUXGIT_MCP_AUDIT_DISABLED` / `FLUXGIT_MCP_AUDIT_SIGN_KEY`: the audit ledger shared
//!   with the sidecar (design.md#audit).
//! - `FLUXGIT_GATEWAY_NOTIFY_DISABLED`: no desktop notification (nor bell) for new proposals ([`crate::notify`]).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use crate::policy::{self, Policy};

/// Run dir variable.
pub const RUN_DIR_VAR: &str = "FLUXGIT_RUN_DIR";
/// Allowed roots variable.
pub const ALLOWED_ROOTS_VAR: &str = "FLUXGIT_MCP_ALLOWED_ROOTS";
/// Agent policy variable.
pub const POLICY_VAR: &str = "FLUXGIT_MCP_AGENT_POLICY";
/// Audit ledger path variable.
pub const AUDIT_LOG_VAR: &str = "FLUXGIT_MCP_AUDIT_LOG";
/// Audit off (set with any value, empty included).
pub const AUDIT_DISABLED_VAR: &str = "FLUXGIT_MCP_AUDIT_DISABLED";
/// Audit signing key variable.
pub const AUDIT_SIGN_KEY_VAR: &str = "FLUXGIT_MCP_AUDIT_SIGN_KEY";

/// Desktop notifications off (set with any value, empty included), as `serve --no-notify`.
pub const NOTIFY_DISABLED_VAR: &str = "FLUXGIT_GATEWAY_NOTIFY_DISABLED";

/// The environment as read, before any check.
#[derive(Debug, Clone, Default)]
pub struct RawConfig {
    /// The variables that matter, by name.
    pub vars: BTreeMap<String, OsString>,
    /// The home directory, if known.
    pub home_dir: Option<PathBuf>,
    /// The platform's local data directory (e.g. `~/.local/share`), parent of the default run dir.
    pub data_local_dir: Option<PathBuf>,
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The run dir.
    pub run_dir: PathBuf,
    /// The allowed roots, canonicalised (roots that do not exist are dropped).
    pub allowed_roots: Vec<PathBuf>,
    /// The agent policy (permissive when no file is configured).
    pub policy: Policy,
    /// The audit ledger path, or `None` when the audit is disabled.
    pub audit_log: Option<PathBuf>,
    /// The audit signing key path, if set.
    pub audit_sign_key: Option<PathBuf>,
    /// The ledger's rotation and retention, shared with the sidecars (`FLUXGIT_MCP_AUDIT_RETAIN_DAYS`,
    /// `FLUXGIT_MCP_AUDIT_MAX_BYTES`).
    pub audit_limits: fluxgit_audit::Limits,
    /// Whether the serving gateway notifies the desktop of new proposals (on unless [`NOTIFY_DISABLED_VAR`]).
    pub notify: bool,
}

/// Why the configuration cannot be used: the gateway does not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No run dir variable and no platform data directory.
    #[error("no run dir: set {RUN_DIR_VAR}")]
    NoRunDir,
    /// No allowed roots variable and no home directory.
    #[error("no allowed roots: set {ALLOWED_ROOTS_VAR}")]
    NoAllowedRoots,
    /// The policy file cannot be used.
    #[error("{POLICY_VAR}: {0}")]
    Policy(#[from] policy::Error),
    /// `FLUXGIT_MCP_AUDIT_RETAIN_DAYS` or `FLUXGIT_MCP_AUDIT_MAX_BYTES` is out of range.
    #[error(transparent)]
    AuditRetention(#[from] fluxgit_audit::RetentionError),
}

impl RawConfig {
    /// Reads the process environment.
    pub fn from_env() -> Self {
        let names = [
            RUN_DIR_VAR,
            ALLOWED_ROOTS_VAR,
            POLICY_VAR,
            AUDIT_LOG_VAR,
            AUDIT_DISABLED_VAR,
            AUDIT_SIGN_KEY_VAR,
            fluxgit_audit::RETAIN_DAYS_VAR,
            fluxgit_audit::MAX_BYTES_VAR,
            NOTIFY_DISABLED_VAR,
        ];
        let vars =
            names.iter().filter_map(|name| std::env::var_os(name).map(|value| ((*name).to_owned(), value))).collect();
        Self { vars, home_dir: dirs::home_dir(), data_local_dir: dirs::data_local_dir() }
    }

    fn non_empty(&self, name: &str) -> Option<PathBuf> {
        self.vars.get(name).filter(|value| !value.is_empty()).map(PathBuf::from)
    }

    /// Validates: run dir, allowed roots, and the policy file (which must load when the variable is set, even
    /// empty: an empty value names no file and is refused).
    pub fn validate(&self) -> Result<Config, Error> {
        let run_dir = match self.non_empty(RUN_DIR_VAR) {
            Some(dir) => dir,
            None => self.data_local_dir.as_ref().ok_or(Error::NoRunDir)?.join("FluxGit").join("run"),
        };
        let roots: Vec<PathBuf> = match self.vars.get(ALLOWED_ROOTS_VAR).filter(|value| !value.is_empty()) {
            Some(value) => std::env::split_paths(value).filter(|root| !root.as_os_str().is_empty()).collect(),
            None => vec![self.home_dir.clone().ok_or(Error::NoAllowedRoots)?],
        };
        let allowed_roots = roots.iter().filter_map(|root| std::fs::canonicalize(root).ok()).collect();
        let policy = match self.vars.get(POLICY_VAR) {
            None => Policy::permissive(),
            Some(value) => Policy::load(&PathBuf::from(value))?,
        };
        let audit_log = if self.vars.contains_key(AUDIT_DISABLED_VAR) {
            None
        } else {
            Some(self.non_empty(AUDIT_LOG_VAR).unwrap_or_else(|| run_dir.join("audit").join("mcp.jsonl")))
        };
        let audit_sign_key = self.vars.get(AUDIT_SIGN_KEY_VAR).map(PathBuf::from);
        // The sidecars and the gateway share the ledger: whichever rotates it prunes by the same policy.
        let audit_limits = fluxgit_audit::Limits::with_retention(
            self.vars.get(fluxgit_audit::RETAIN_DAYS_VAR).map(|value| value.as_os_str()),
            self.vars.get(fluxgit_audit::MAX_BYTES_VAR).map(|value| value.as_os_str()),
        )?;
        let notify = !self.vars.contains_key(NOTIFY_DISABLED_VAR);
        Ok(Config { run_dir, allowed_roots, policy, audit_log, audit_sign_key, audit_limits, notify })
    }
}

impl Config {
    /// Reads and validates the process environment.
    pub fn from_env() -> Result<Config, Error> {
        RawConfig::from_env().validate()
    }
}
