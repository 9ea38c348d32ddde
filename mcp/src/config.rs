//! Configuration from the environment (design.md#roots, §4.5), resolved in two stages:
//! [`RawConfig::from_env`] collects what the process was given, [`Config::validate`] turns it into checked values
//! (canonical allowed roots, run dir, audit and presence settings).
//!
//! ```no_run
//! use fluxgit_mcp_sidecar::config::{Config, RawConfig};
//!
//! let config = Config::validate(RawConfig::from_env())?;
//! let engine = fluxgit_engine::Engine::new(config.engine_options());
//! # Ok::<(), fluxgit_mcp_sidecar::config::Error>(())
//! ```

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Allowed roots, separated by the OS path-list separator (`:` on Unix, `;` on Windows).
pub const ALLOWED_ROOTS_VAR: &str = "FLUXGIT_MCP_ALLOWED_ROOTS";
/// The run dir (audit ledger, presence files, index).
pub const RUN_DIR_VAR: &str = "FLUXGIT_RUN_DIR";
/// Audit ledger path; default `<run_dir>/audit/mcp.jsonl`.
pub const AUDIT_LOG_VAR: &str = "FLUXGIT_MCP_AUDIT_LOG";
/// Any value (even empty) turns the audit ledger off.
pub const AUDIT_DISABLED_VAR: &str = "FLUXGIT_MCP_AUDIT_DISABLED";
/// Ed25519 PKCS#8 PEM key signing audit entries.
pub const AUDIT_SIGN_KEY_VAR: &str = "FLUXGIT_MCP_AUDIT_SIGN_KEY";
/// Any value (even empty) turns the presence file off.
pub const PRESENCE_DISABLED_VAR: &str = "FLUXGIT_MCP_PRESENCE_DISABLED";
/// Any value (even empty) turns agent detection off.
pub const AGENT_DETECTION_DISABLED_VAR: &str = "FLUXGIT_MCP_AGENT_DETECTION_DISABLED";
/// Pins "now" (Unix seconds) for the tools that read a clock (`repo.scope`'s churn window), so benchmarks and
/// tests are reproducible. Unset, unparsable or negative: the system clock.
pub const NOW_VAR: &str = "FLUXGIT_NOW_EPOCH_SECS";
/// Turns the engine's watcher off (any value): every repository is served stat-validated.
pub const WATCH_DISABLED_VAR: &str = fluxgit_engine::cache::WATCH_DISABLED_VAR;
/// The engine cache's weight bound in MiB (default 64).
pub const CACHE_MB_VAR: &str = "FLUXGIT_ENGINE_CACHE_MB";

/// "Now" in Unix seconds: [`NOW_VAR`] when it holds a non-negative integer, else the system clock.
pub fn now_epoch_secs() -> i64 {
    let pinned = std::env::var(NOW_VAR).ok().and_then(|value| value.trim().parse::<i64>().ok());
    if let Some(pinned) = pinned.filter(|pinned| *pinned >= 0) {
        return pinned;
    }
    fluxgit_contract::now_secs()
}

/// Codex CLI's home directory variable (its session store is `$CODEX_HOME/sessions`).
pub const CODEX_HOME_VAR: &str = "CODEX_HOME";

/// Where `agents.presence` and previews' `otherAgents` look, read from the environment at call time (the home and
/// run dir of the process, `CODEX_HOME`); `None` when [`AGENT_DETECTION_DISABLED_VAR`] is set (any value).
pub fn agent_detection(client_name: &str) -> Option<fluxgit_engine::agents::Options> {
    if std::env::var_os(AGENT_DETECTION_DISABLED_VAR).is_some() {
        return None;
    }
    let non_empty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    let default_run_dir = dirs::data_local_dir().map(|dir| dir.join("FluxGit").join("run"));
    let mut run_dirs: Vec<PathBuf> = non_empty(RUN_DIR_VAR).filter(|path| path.is_absolute()).into_iter().collect();
    if let Some(default) = default_run_dir
        && !run_dirs.contains(&default)
    {
        run_dirs.push(default);
    }
    let now_ms = fluxgit_contract::now_ms();
    Some(fluxgit_engine::agents::Options {
        home: dirs::home_dir(),
        codex_home: non_empty(CODEX_HOME_VAR).filter(|path| path.is_absolute()),
        run_dirs,
        proc_root: PathBuf::from("/proc"),
        own_pid: std::process::id(),
        client_name: Some(client_name.to_owned()),
        now_ms,
    })
}

/// Gateway address variables, in order of precedence (design.md#environment).
pub const GATEWAY_ADDR_VARS: [&str; 3] = ["FLUXGIT_MCP_HANDSHAKE_ADDR", "FLUXGIT_GATEWAY_ADDR", "FLUXGIT_GATEWAY_URL"];

/// Prefix of the variables [`RawConfig::from_env`] collects.
const VAR_PREFIX: &str = "FLUXGIT_";

/// What the process was given: every `FLUXGIT_*` variable plus the platform directories. No validation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawConfig {
    /// Every set `FLUXGIT_*` variable with its raw value (empty values included: a `*_DISABLED` variable counts as
    /// set with any value, design.md#transport).
    pub vars: BTreeMap<String, OsString>,
    /// The user's home directory (`dirs::home_dir`), the default allowed root.
    pub home_dir: Option<PathBuf>,
    /// The platform's local data directory (`dirs::data_local_dir`, e.g. `~/.local/share`), parent of the default
    /// run dir.
    pub data_local_dir: Option<PathBuf>,
}

/// Checked configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Canonical (symlink-free, absolute) existing directories under which repositories may be opened.
    pub allowed_roots: Vec<PathBuf>,
    /// Where the roots came from.
    pub roots_source: RootsSource,
    /// Roots that were configured but are not in force, with the reason; reported by `doctor`.
    pub dropped_roots: Vec<DroppedRoot>,
    /// The run dir: absolute, not necessarily existing yet.
    pub run_dir: PathBuf,
    /// Whether `run_dir` came from `FLUXGIT_RUN_DIR` (`true`) or the platform default.
    pub run_dir_from_env: bool,
    /// The audit ledger path (`FLUXGIT_MCP_AUDIT_LOG`, else `<run_dir>/audit/mcp.jsonl`), even when disabled.
    pub audit_log: PathBuf,
    /// `FLUXGIT_MCP_AUDIT_DISABLED` is set.
    pub audit_disabled: bool,
    /// `FLUXGIT_MCP_AUDIT_SIGN_KEY`, if set (checked when the ledger opens, not here).
    pub audit_sign_key: Option<PathBuf>,
    /// Rotation and retention (`FLUXGIT_MCP_AUDIT_RETAIN_DAYS`, `FLUXGIT_MCP_AUDIT_MAX_BYTES`).
    pub audit_limits: fluxgit_audit::Limits,
    /// The presence file directory, `<run_dir>/presence/mcp`.
    pub presence_dir: PathBuf,
    /// `FLUXGIT_MCP_PRESENCE_DISABLED` is set.
    pub presence_disabled: bool,
    /// `FLUXGIT_MCP_AGENT_DETECTION_DISABLED` is set.
    pub agent_detection_disabled: bool,
    /// The first set gateway address variable and its value, unvalidated (the bridge checks it, design.md#environment).
    pub gateway_addr: Option<(String, String)>,
    /// `FLUXGIT_ENGINE_WATCH_DISABLED` is set.
    pub watch_disabled: bool,
    /// The engine cache's weight bound in bytes (`FLUXGIT_ENGINE_CACHE_MB`, default 64 MiB).
    pub cache_bytes: u64,
    /// Which tools `tools/list` shows and how their names are spelled (`FLUXGIT_MCP_TOOL_NAMES`,
    /// `FLUXGIT_MCP_TOOLSETS`, `FLUXGIT_MCP_TOOLS`; see [`crate::tools::listing`]).
    pub listing: crate::tools::listing::Selection,
    /// Every set `FLUXGIT_*` variable, for `doctor`.
    pub vars: BTreeMap<String, OsString>,
}

/// Where the allowed roots came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootsSource {
    /// `FLUXGIT_MCP_ALLOWED_ROOTS`.
    Env,
    /// The user's home directory (the variable is unset or lists no path).
    Home,
}

/// The allowed roots in force and how they were decided: what a refusal of a path outside them explains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootsInForce {
    /// The canonical roots in force.
    pub roots: Vec<PathBuf>,
    /// Where they came from.
    pub source: RootsSource,
    /// Whether [`ALLOWED_ROOTS_VAR`] is set (it may be set and list no path).
    pub variable_set: bool,
    /// Configured roots that are not in force, with the reason.
    pub dropped: Vec<DroppedRoot>,
    /// Who reads a refusal, which decides where it says to set the roots.
    pub audience: Audience,
    /// The bearer token whose roots these are (`serve-http --tokens`, [`RootsInForce::for_token`]): a refusal
    /// then names the token and says that the server's admin sets its roots.
    pub token: Option<String>,
}

/// Who reads a refusal of a path outside the roots, and so where the roots are changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// An MCP host runs the server: the roots are set in the server's entry of the host's configuration.
    Host,
    /// A person runs a subcommand such as `call` at a shell: the roots are set in the command's environment.
    Shell,
}

/// A configured root that is not in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedRoot {
    /// The path as configured.
    pub path: PathBuf,
    /// Why it was dropped.
    pub reason: DropReason,
}

/// Why a root was dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DropReason {
    /// The path is relative; roots must be absolute (the server's working directory is the host's choice).
    NotAbsolute,
    /// Nothing exists at the path.
    NotFound,
    /// The path exists but is not a directory.
    NotADirectory,
    /// It could not be canonicalised for another reason (permissions, ...): the OS error text.
    Unreadable(String),
}

impl std::fmt::Display for DropReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotAbsolute => f.write_str("not an absolute path"),
            Self::NotFound => f.write_str("does not exist"),
            Self::NotADirectory => f.write_str("not a directory"),
            Self::Unreadable(error) => write!(f, "cannot be resolved: {error}"),
        }
    }
}

/// Configuration that cannot be served with.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// `FLUXGIT_MCP_ALLOWED_ROOTS` is unset and there is no home directory to default to.
    #[error("no allowed roots: set {ALLOWED_ROOTS_VAR} (no home directory to default to)")]
    NoHomeDir,
    /// `FLUXGIT_RUN_DIR` is unset and the platform has no local data directory.
    #[error("no run dir: set {RUN_DIR_VAR} (the platform has no local data directory)")]
    NoRunDir,
    /// `FLUXGIT_RUN_DIR` is not an absolute path.
    #[error("{RUN_DIR_VAR} must be an absolute path, got {0:?}")]
    RunDirNotAbsolute(PathBuf),
    /// `FLUXGIT_MCP_AUDIT_LOG` is not an absolute path.
    #[error("{AUDIT_LOG_VAR} must be an absolute path, got {0:?}")]
    AuditLogNotAbsolute(PathBuf),
    /// `FLUXGIT_ENGINE_CACHE_MB` is not a whole number of MiB from 1 to 65536.
    #[error("{CACHE_MB_VAR} must be a whole number of MiB from 1 to 65536, got {0:?}")]
    CacheSize(String),
    /// `FLUXGIT_MCP_AUDIT_RETAIN_DAYS` or `FLUXGIT_MCP_AUDIT_MAX_BYTES` is out of range.
    #[error(transparent)]
    AuditRetention(#[from] fluxgit_audit::RetentionError),
    /// A tool listing variable names an unknown spelling, toolset or tool.
    #[error(transparent)]
    Listing(#[from] crate::tools::listing::SelectionError),
}

impl RawConfig {
    /// Reads every `FLUXGIT_*` variable of this process and the platform directories.
    pub fn from_env() -> Self {
        let vars = std::env::vars_os()
            .filter_map(|(name, value)| {
                let name = name.into_string().ok()?;
                name.starts_with(VAR_PREFIX).then_some((name, value))
            })
            .collect();
        Self { vars, home_dir: dirs::home_dir(), data_local_dir: dirs::data_local_dir() }
    }

    /// The value of `name`, if set (possibly empty).
    pub fn var(&self, name: &str) -> Option<&OsString> {
        self.vars.get(name)
    }
}

impl Config {
    /// Validates `raw`.
    ///
    /// Roots: the entries of `FLUXGIT_MCP_ALLOWED_ROOTS` (split with [`std::env::split_paths`], empty entries
    /// ignored), else the home directory; each is canonicalised, and relative, missing or non-directory ones are
    /// dropped with a warning (see [`Config::dropped_roots`]). A variable that lists no path at all counts as unset.
    /// Duplicates after canonicalisation are kept once. Run dir: `FLUXGIT_RUN_DIR` (non-empty), else
    /// `<data_local_dir>/FluxGit/run`.
    ///
    /// # Errors
    /// [`Error`] when there is no home directory to default to, no run dir, a relative run dir or audit path, or a
    /// tool listing variable that names an unknown spelling, toolset or tool.
    pub fn validate(raw: RawConfig) -> Result<Config, Error> {
        let configured: Vec<PathBuf> = raw
            .var(ALLOWED_ROOTS_VAR)
            .map(|value| std::env::split_paths(value).filter(|path| !path.as_os_str().is_empty()).collect())
            .unwrap_or_default();
        let (candidates, roots_source) = if configured.is_empty() {
            if raw.var(ALLOWED_ROOTS_VAR).is_some() {
                tracing::warn!("{ALLOWED_ROOTS_VAR} lists no path; defaulting to the home directory");
            }
            (vec![raw.home_dir.clone().ok_or(Error::NoHomeDir)?], RootsSource::Home)
        } else {
            (configured, RootsSource::Env)
        };
        let mut allowed_roots: Vec<PathBuf> = Vec::new();
        let mut dropped_roots = Vec::new();
        for path in candidates {
            match canonical_root(&path) {
                Ok(root) if allowed_roots.contains(&root) => {}
                Ok(root) => allowed_roots.push(root),
                Err(reason) => {
                    tracing::warn!(path = %path.display(), %reason, "allowed root dropped");
                    dropped_roots.push(DroppedRoot { path, reason });
                }
            }
        }

        let (run_dir, run_dir_from_env) = match non_empty_path(&raw, RUN_DIR_VAR) {
            Some(path) if path.is_absolute() => (path, true),
            Some(path) => return Err(Error::RunDirNotAbsolute(path)),
            None => (raw.data_local_dir.as_ref().ok_or(Error::NoRunDir)?.join("FluxGit").join("run"), false),
        };
        let audit_log = match non_empty_path(&raw, AUDIT_LOG_VAR) {
            Some(path) if path.is_absolute() => path,
            Some(path) => return Err(Error::AuditLogNotAbsolute(path)),
            None => run_dir.join("audit").join("mcp.jsonl"),
        };
        let gateway_addr = GATEWAY_ADDR_VARS
            .iter()
            .find_map(|name| raw.var(name).map(|value| ((*name).to_owned(), value.to_string_lossy().into_owned())));
        let cache_bytes = match raw.var(CACHE_MB_VAR) {
            None => fluxgit_engine::cache::DEFAULT_CAPACITY_BYTES,
            Some(value) => {
                let text = value.to_string_lossy();
                match text.trim().parse::<u64>() {
                    Ok(mib @ 1..=65536) => mib * 1024 * 1024,
                    _ => return Err(Error::CacheSize(text.into_owned())),
                }
            }
        };
        let audit_limits = fluxgit_audit::Limits::with_retention(
            raw.var(fluxgit_audit::RETAIN_DAYS_VAR).map(OsString::as_os_str),
            raw.var(fluxgit_audit::MAX_BYTES_VAR).map(OsString::as_os_str),
        )?;
        let text = |name: &str| raw.var(name).map(|value| value.to_string_lossy().into_owned());
        let listing = crate::tools::listing::Selection::parse(
            text(crate::tools::listing::TOOL_NAMES_VAR).as_deref(),
            text(crate::tools::listing::TOOLSETS_VAR).as_deref(),
            text(crate::tools::listing::TOOLS_VAR).as_deref(),
        )?;
        Ok(Config {
            listing,
            allowed_roots,
            watch_disabled: raw.var(WATCH_DISABLED_VAR).is_some(),
            cache_bytes,
            roots_source,
            dropped_roots,
            presence_dir: run_dir.join("presence").join("mcp"),
            run_dir,
            run_dir_from_env,
            audit_log,
            audit_disabled: raw.var(AUDIT_DISABLED_VAR).is_some(),
            audit_sign_key: raw.var(AUDIT_SIGN_KEY_VAR).map(PathBuf::from),
            audit_limits,
            presence_disabled: raw.var(PRESENCE_DISABLED_VAR).is_some(),
            agent_detection_disabled: raw.var(AGENT_DETECTION_DISABLED_VAR).is_some(),
            gateway_addr,
            vars: raw.vars,
        })
    }

    /// The allowed roots in force and where they came from, for refusals.
    pub fn roots_in_force(&self) -> RootsInForce {
        RootsInForce {
            roots: self.allowed_roots.clone(),
            source: self.roots_source,
            variable_set: self.vars.contains_key(ALLOWED_ROOTS_VAR),
            dropped: self.dropped_roots.clone(),
            audience: Audience::Host,
            token: None,
        }
    }

    /// The engine options for this configuration.
    pub fn engine_options(&self) -> fluxgit_engine::Options {
        fluxgit_engine::Options { allowed_roots: self.allowed_roots.clone() }
    }

    /// The fleet registry file, `<run dir>/fleet/registry.json`.
    pub fn registry_file(&self) -> PathBuf {
        self.run_dir.join("fleet").join("registry.json")
    }

    /// The commit indexes' directory, `<run dir>/index`.
    pub fn index_dir(&self) -> PathBuf {
        self.run_dir.join("index")
    }

    /// The generation tables' directory, `<run dir>/generations` (see the engine's `ancestry` module).
    pub fn generation_tables_dir(&self) -> PathBuf {
        self.run_dir.join("generations")
    }

    /// The engine's cache options: watched unless disabled.
    pub fn cache_options(&self) -> fluxgit_engine::cache::Options {
        fluxgit_engine::cache::Options {
            enabled: true,
            capacity_bytes: self.cache_bytes,
            watch: !self.watch_disabled,
            watch_limit: None,
        }
    }
}

impl RootsInForce {
    /// Where the roots came from, in words: `FLUXGIT_MCP_ALLOWED_ROOTS`, `home directory (default)` or `token
    /// <name>`.
    pub fn source_words(&self) -> String {
        match (&self.token, self.source) {
            (Some(token), _) => format!("token {token}"),
            (None, RootsSource::Env) => ALLOWED_ROOTS_VAR.to_owned(),
            (None, RootsSource::Home) => "home directory (default)".to_owned(),
        }
    }

    /// The roots of the bearer token `name`, `roots` (its roots within these): refusals name the token and its
    /// roots only (not the server's, nor the roots the server dropped).
    pub fn for_token(self, name: &str, roots: Vec<PathBuf>) -> RootsInForce {
        RootsInForce { roots, dropped: Vec::new(), token: Some(name.to_owned()), ..self }
    }

    /// The same roots, explained to `audience`.
    pub fn for_audience(self, audience: Audience) -> RootsInForce {
        RootsInForce { audience, ..self }
    }

    /// The sentences a refusal of a path outside the roots ends with: the roots in force and where they came
    /// from, each dropped root with its reason, and how to change them (in the host's configuration or the
    /// command's environment, after [`RootsInForce::audience`]).
    pub fn explain(&self) -> String {
        let separator = if cfg!(windows) { ';' } else { ':' };
        let roots: Vec<String> = self.roots.iter().map(|root| root.display().to_string()).collect();
        if let Some(token) = &self.token {
            return format!(
                "Allowed roots of token {token}: {}. A token's roots are set by this server's admin (its tokens \
                 file, `fluxgit-mcp-sidecar token add --roots`, within the server's allowed roots): ask them to \
                 allow the repository.",
                roots.join(", ")
            );
        }
        let mut words = match (self.source, roots.is_empty()) {
            (_, true) => "No allowed root is in force, so every repository is refused.".to_owned(),
            (RootsSource::Env, false) => format!("Allowed roots (from {ALLOWED_ROOTS_VAR}): {}.", roots.join(", ")),
            (RootsSource::Home, false) if self.variable_set => {
                format!("{ALLOWED_ROOTS_VAR} lists no path, so the home directory is the allowed root: {}.", roots[0])
            }
            (RootsSource::Home, false) => {
                format!("{ALLOWED_ROOTS_VAR} is not set, so the home directory is the allowed root: {}.", roots[0])
            }
        };
        if !self.dropped.is_empty() {
            let dropped: Vec<String> =
                self.dropped.iter().map(|root| format!("{} ({})", root.path.display(), root.reason)).collect();
            words.push_str(&format!(" Dropped from {ALLOWED_ROOTS_VAR}: {}.", dropped.join(", ")));
        }
        words.push_str(&match self.audience {
            Audience::Host => format!(
                " To allow a repository, set {ALLOWED_ROOTS_VAR} in this server's entry of the MCP host's \
                 configuration to absolute directories separated by '{separator}'; `fluxgit-mcp-sidecar doctor` \
                 shows the roots in force."
            ),
            Audience::Shell => format!(
                " To allow a repository, set {ALLOWED_ROOTS_VAR} in the environment of the command to absolute \
                 directories separated by '{separator}', e.g. `{ALLOWED_ROOTS_VAR}=/path/to/repos \
                 fluxgit-mcp-sidecar call ...`; `fluxgit-mcp-sidecar doctor` shows the roots in force."
            ),
        });
        words
    }

    /// Explains a refusal of a path outside the roots: its message ends with [`RootsInForce::explain`], and its
    /// data gains `allowedRoots`, `rootsFrom`, `droppedRoots` and `detail` (the same words). Other errors are
    /// left as they are.
    pub fn explain_refusal(&self, error: &mut crate::tools::ProtocolError) {
        let reason = error.data.as_ref().and_then(|data| data.get("reason")).and_then(serde_json::Value::as_str);
        if reason != Some("outside_allowed_roots") {
            return;
        }
        let detail = self.explain();
        let stated = error.message.trim_end_matches(&format!(" ({ALLOWED_ROOTS_VAR})")).trim_end_matches('.');
        error.message = format!("{stated}. {detail}");
        if let Some(serde_json::Value::Object(data)) = error.data.as_mut() {
            let roots: Vec<String> = self.roots.iter().map(|root| root.display().to_string()).collect();
            let dropped: Vec<serde_json::Value> = self
                .dropped
                .iter()
                .map(|root| serde_json::json!({"path": root.path.display().to_string(), "reason": root.reason.to_string()}))
                .collect();
            data.insert("allowedRoots".to_owned(), roots.into());
            data.insert("rootsFrom".to_owned(), self.source_words().into());
            data.insert("droppedRoots".to_owned(), dropped.into());
            data.insert("detail".to_owned(), detail.into());
        }
    }
}

fn non_empty_path(raw: &RawConfig, name: &str) -> Option<PathBuf> {
    raw.var(name).filter(|value| !value.is_empty()).map(PathBuf::from)
}

/// Canonicalises a root, which must be an absolute path to an existing directory.
fn canonical_root(path: &Path) -> Result<PathBuf, DropReason> {
    if !path.is_absolute() {
        return Err(DropReason::NotAbsolute);
    }
    let canonical = std::fs::canonicalize(path).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => DropReason::NotFound,
        _ => DropReason::Unreadable(error.to_string()),
    })?;
    if !canonical.is_dir() {
        return Err(DropReason::NotADirectory);
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(vars: &[(&str, OsString)], home: &Path) -> RawConfig {
        RawConfig {
            vars: vars.iter().map(|(name, value)| ((*name).to_owned(), value.clone())).collect(),
            home_dir: Some(home.to_path_buf()),
            data_local_dir: Some(home.join(".local/share")),
        }
    }

    fn joined(paths: &[&Path]) -> OsString {
        std::env::join_paths(paths).expect("test paths have no separator")
    }

    #[test]
    fn defaults_to_home_and_platform_run_dir() {
        let home = tempfile::tempdir().expect("tempdir");
        let config = Config::validate(raw(&[], home.path())).expect("valid");
        let canonical_home = std::fs::canonicalize(home.path()).expect("exists");
        assert_eq!(config.allowed_roots, vec![canonical_home]);
        assert_eq!(config.roots_source, RootsSource::Home);
        assert!(config.dropped_roots.is_empty());
        assert_eq!(config.run_dir, home.path().join(".local/share/FluxGit/run"));
        assert!(!config.run_dir_from_env);
        assert_eq!(config.audit_log, config.run_dir.join("audit/mcp.jsonl"));
        assert_eq!(config.presence_dir, config.run_dir.join("presence/mcp"));
        assert!(!config.audit_disabled && !config.presence_disabled && !config.agent_detection_disabled);
        assert_eq!(config.gateway_addr, None);
    }

    #[test]
    fn roots_from_env_are_canonicalised_and_bad_ones_dropped() {
        let home = tempfile::tempdir().expect("tempdir");
        let a = home.path().join("a");
        std::fs::create_dir(&a).expect("mkdir");
        let file = home.path().join("file");
        std::fs::write(&file, b"x").expect("write");
        let missing = home.path().join("missing");
        let via_dotdot = home.path().join("a/../a");
        let value = joined(&[&a, &missing, &file, Path::new("relative"), &via_dotdot]);
        let config = Config::validate(raw(&[(ALLOWED_ROOTS_VAR, value)], home.path())).expect("valid");
        assert_eq!(config.roots_source, RootsSource::Env);
        assert_eq!(config.allowed_roots, vec![std::fs::canonicalize(&a).expect("exists")]);
        let reasons: Vec<(PathBuf, DropReason)> =
            config.dropped_roots.into_iter().map(|dropped| (dropped.path, dropped.reason)).collect();
        assert_eq!(
            reasons,
            vec![
                (missing, DropReason::NotFound),
                (file, DropReason::NotADirectory),
                (PathBuf::from("relative"), DropReason::NotAbsolute),
            ]
        );
    }

    #[test]
    fn empty_roots_variable_counts_as_unset() {
        let home = tempfile::tempdir().expect("tempdir");
        let config = Config::validate(raw(&[(ALLOWED_ROOTS_VAR, OsString::new())], home.path())).expect("valid");
        assert_eq!(config.roots_source, RootsSource::Home);
        assert_eq!(config.allowed_roots.len(), 1);
    }

    #[test]
    fn all_roots_missing_leaves_none_in_force() {
        let home = tempfile::tempdir().expect("tempdir");
        let missing = home.path().join("missing");
        let config = Config::validate(raw(&[(ALLOWED_ROOTS_VAR, joined(&[&missing]))], home.path())).expect("valid");
        assert!(config.allowed_roots.is_empty());
        assert_eq!(config.dropped_roots.len(), 1);
    }

    #[test]
    fn run_dir_audit_and_flags_from_env() {
        let home = tempfile::tempdir().expect("tempdir");
        let vars = [
            (RUN_DIR_VAR, OsString::from("/srv/fluxgit")),
            (AUDIT_DISABLED_VAR, OsString::new()),
            (PRESENCE_DISABLED_VAR, OsString::from("0")),
            (AGENT_DETECTION_DISABLED_VAR, OsString::new()),
            ("FLUXGIT_GATEWAY_URL", OsString::from("http://127.0.0.1:7000")),
            ("FLUXGIT_GATEWAY_ADDR", OsString::from("127.0.0.1:7001")),
        ];
        let config = Config::validate(raw(&vars, home.path())).expect("valid");
        assert_eq!(config.run_dir, PathBuf::from("/srv/fluxgit"));
        assert!(config.run_dir_from_env);
        assert_eq!(config.audit_log, PathBuf::from("/srv/fluxgit/audit/mcp.jsonl"));
        assert!(config.audit_disabled, "an empty *_DISABLED value counts as set");
        assert!(config.presence_disabled, "any value counts, even 0");
        assert!(config.agent_detection_disabled);
        assert_eq!(config.gateway_addr, Some(("FLUXGIT_GATEWAY_ADDR".to_owned(), "127.0.0.1:7001".to_owned())));
        assert_eq!(config.vars.len(), vars.len());
    }

    #[test]
    fn refusals_outside_the_roots_say_which_roots_and_why() {
        use crate::tools::ProtocolError;
        let home = tempfile::tempdir().expect("tempdir");
        let a = home.path().join("a");
        std::fs::create_dir(&a).expect("mkdir");
        let value = joined(&[&a, Path::new("."), &home.path().join("gone")]);
        let config = Config::validate(raw(&[(ALLOWED_ROOTS_VAR, value)], home.path())).expect("valid");
        let mut explained = ProtocolError::invalid_params(
            "/tmp/x is outside the allowed roots (FLUXGIT_MCP_ALLOWED_ROOTS)",
            Some(serde_json::json!({"reason": "outside_allowed_roots"})),
        );
        config.roots_in_force().explain_refusal(&mut explained);
        let a = std::fs::canonicalize(&a).expect("exists");
        assert!(
            explained.message.starts_with(&format!(
                "/tmp/x is outside the allowed roots. Allowed roots (from FLUXGIT_MCP_ALLOWED_ROOTS): {}. \
                 Dropped from FLUXGIT_MCP_ALLOWED_ROOTS: . (not an absolute path), {} (does not exist).",
                a.display(),
                home.path().join("gone").display()
            )),
            "{}",
            explained.message
        );
        assert!(explained.message.ends_with("`fluxgit-mcp-sidecar doctor` shows the roots in force."));
        let data = explained.data.expect("data");
        assert_eq!(data["reason"], "outside_allowed_roots");
        assert_eq!(data["allowedRoots"], serde_json::json!([a.display().to_string()]));
        assert_eq!(data["rootsFrom"], ALLOWED_ROOTS_VAR);
        assert_eq!(data["droppedRoots"][0], serde_json::json!({"path": ".", "reason": "not an absolute path"}));
        assert!(explained.message.ends_with(data["detail"].as_str().expect("detail")));

        let shell = config.roots_in_force().for_audience(Audience::Shell).explain();
        assert!(shell.contains(" set FLUXGIT_MCP_ALLOWED_ROOTS in the environment of the command to "), "{shell}");
        assert!(!shell.contains("host's configuration"), "{shell}");

        let defaulted = Config::validate(raw(&[], home.path())).expect("valid").roots_in_force();
        assert!(defaulted.explain().starts_with("FLUXGIT_MCP_ALLOWED_ROOTS is not set, so the home directory"));
        let mut other = ProtocolError::invalid_params("nope", Some(serde_json::json!({"reason": "not_found"})));
        defaulted.explain_refusal(&mut other);
        assert_eq!(other.message, "nope");

        // A bearer token's refusal names the token and its roots, and who sets them: no host configuration.
        let token = config.roots_in_force().for_token("team-a", vec![PathBuf::from("/srv/team-a")]);
        let mut refused = ProtocolError::invalid_params(
            "/srv/b is outside the allowed roots (FLUXGIT_MCP_ALLOWED_ROOTS)",
            Some(serde_json::json!({"reason": "outside_allowed_roots"})),
        );
        token.explain_refusal(&mut refused);
        assert!(refused.message.contains("Allowed roots of token team-a: /srv/team-a."), "{}", refused.message);
        assert!(refused.message.contains("this server's admin"), "{}", refused.message);
        assert!(!refused.message.contains("MCP host") && !refused.message.contains("(FLUXGIT"), "{}", refused.message);
        let data = refused.data.expect("data");
        assert_eq!(data["rootsFrom"], "token team-a");
        assert_eq!(data["allowedRoots"], serde_json::json!(["/srv/team-a"]));
        assert_eq!(data["droppedRoots"], serde_json::json!([]), "the server's dropped roots are not shown");
    }

    #[test]
    fn invalid_values_are_errors() {
        let home = tempfile::tempdir().expect("tempdir");
        let relative_run = [(RUN_DIR_VAR, OsString::from("run"))];
        assert_eq!(Config::validate(raw(&relative_run, home.path())), Err(Error::RunDirNotAbsolute("run".into())));
        let relative_audit = [(AUDIT_LOG_VAR, OsString::from("audit.jsonl"))];
        assert_eq!(
            Config::validate(raw(&relative_audit, home.path())),
            Err(Error::AuditLogNotAbsolute("audit.jsonl".into()))
        );
        let no_dirs = RawConfig::default();
        assert_eq!(Config::validate(no_dirs), Err(Error::NoHomeDir));
        let no_data_dir = RawConfig { data_local_dir: None, ..raw(&[], home.path()) };
        assert_eq!(Config::validate(no_data_dir), Err(Error::NoRunDir));
    }
}
