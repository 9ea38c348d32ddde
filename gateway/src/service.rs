//! The gateway as a user service: a systemd user unit on Linux, a launchd agent on macOS.
//!
//! `fluxgit-gateway install-service` writes the file for this binary, the address and the environment the
//! gateway is configured with (allowed roots, run dir, policy, audit, notifications), then enables and starts it
//! when a service manager is there to ask. Each value is quoted for the file's syntax, and a value no file could
//! hold faithfully (a control character such as a newline) is refused, so the unit never runs something other
//! than what was asked. The file is written beside its final name and renamed over it, so a symlink planted there
//! is replaced, never followed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The systemd unit's name.
pub const UNIT_NAME: &str = "fluxgit-gateway.service";
/// The launchd agent's label (and plist file name without `.plist`).
pub const LAUNCHD_LABEL: &str = "dev.fluxgit.gateway";

/// What the service runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// The gateway binary's absolute path.
    pub binary: PathBuf,
    /// The loopback address it serves on.
    pub addr: SocketAddr,
    /// Environment variables it runs with, in order.
    pub env: Vec<(String, String)>,
}

/// Why a service file cannot be written or removed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A value holds a character the file cannot carry faithfully, or is not UTF-8.
    #[error("{what} cannot go into a service file: {message}")]
    Value {
        /// Which value.
        what: String,
        /// Why.
        message: String,
    },
    /// The address is not loopback.
    #[error("the gateway binds loopback only: {0} is not a loopback address")]
    NotLoopback(SocketAddr),
    /// No home or configuration directory to put the file in.
    #[error("no home directory to install the service in")]
    NoHome,
    /// Reading, writing or removing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
}

fn check_value(what: &str, value: &str) -> Result<(), Error> {
    if let Some(bad) = value.chars().find(|character| character.is_control()) {
        return Err(Error::Value {
            what: what.to_owned(),
            message: format!("it holds the control character {}", bad.escape_unicode()),
        });
    }
    Ok(())
}

/// `value` as one double-quoted word of a systemd unit: `\` and `"` escaped, `%` doubled (specifiers) and, with
/// `dollar`, `$` doubled (variable expansion in `ExecStart=`).
fn systemd_quote(value: &str, dollar: bool) -> String {
    let mut quoted = String::from("\"");
    for character in value.chars() {
        match character {
            '\\' => quoted.push_str("\\\\"),
            '"' => quoted.push_str("\\\""),
            '%' => quoted.push_str("%%"),
            '$' if dollar => quoted.push_str("$$"),
            other => quoted.push(other),
        }
    }
    quoted.push('"');
    quoted
}

/// The systemd user unit that runs `spec`.
///
/// # Errors
/// [`Error::Value`] for a path or variable with a control character or that is not UTF-8,
/// [`Error::NotLoopback`] for an address that is not loopback.
pub fn systemd_unit(spec: &Spec) -> Result<String, Error> {
    if !spec.addr.ip().is_loopback() {
        return Err(Error::NotLoopback(spec.addr));
    }
    let binary = utf8("the gateway's path", &spec.binary)?;
    check_value("the gateway's path", binary)?;
    let mut unit = String::from(
        "# Written by `fluxgit-gateway install-service`; `fluxgit-gateway uninstall-service` removes it.\n\
         [Unit]\n\
         Description=FluxGit approval gateway: a person approves each write an agent proposes\n\n\
         [Service]\n\
         Type=exec\n",
    );
    unit.push_str(&format!(
        "ExecStart={} serve --addr {}\n",
        systemd_quote(binary, true),
        systemd_quote(&spec.addr.to_string(), true)
    ));
    for (name, value) in &spec.env {
        check_value(name, name)?;
        check_value(name, value)?;
        unit.push_str(&format!("Environment={}\n", systemd_quote(&format!("{name}={value}"), false)));
    }
    unit.push_str("Restart=on-failure\nRestartSec=5\n\n[Install]\nWantedBy=default.target\n");
    Ok(unit)
}

/// `text` escaped for XML character data and attribute values.
fn xml_escape(text: &str) -> String {
    crate::notify::escape_markup(text)
}

/// The launchd agent's property list that runs `spec` at login and again when it fails; its output goes to
/// `log` (the page's address is on its stdout: keep it private).
///
/// # Errors
/// As [`systemd_unit`].
pub fn launchd_plist(spec: &Spec, log: &Path) -> Result<String, Error> {
    if !spec.addr.ip().is_loopback() {
        return Err(Error::NotLoopback(spec.addr));
    }
    let binary = utf8("the gateway's path", &spec.binary)?;
    let log = utf8("the log's path", log)?;
    check_value("the gateway's path", binary)?;
    check_value("the log's path", log)?;
    let string = |value: &str| format!("<string>{}</string>", xml_escape(value));
    let mut plist = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n<dict>\n",
    );
    plist.push_str(&format!("  <key>Label</key>\n  {}\n", string(LAUNCHD_LABEL)));
    plist.push_str("  <key>ProgramArguments</key>\n  <array>\n");
    for argument in [binary, "serve", "--addr", &spec.addr.to_string()] {
        plist.push_str(&format!("    {}\n", string(argument)));
    }
    plist.push_str("  </array>\n  <key>EnvironmentVariables</key>\n  <dict>\n");
    for (name, value) in &spec.env {
        check_value(name, name)?;
        check_value(name, value)?;
        plist.push_str(&format!("    <key>{}</key>\n    {}\n", xml_escape(name), string(value)));
    }
    plist.push_str("  </dict>\n  <key>RunAtLoad</key>\n  <true/>\n");
    plist.push_str("  <key>KeepAlive</key>\n  <dict>\n    <key>SuccessfulExit</key>\n    <false/>\n  </dict>\n");
    plist.push_str(&format!("  <key>StandardOutPath</key>\n  {}\n", string(log)));
    plist.push_str(&format!("  <key>StandardErrorPath</key>\n  {}\n", string(log)));
    plist.push_str("</dict>\n</plist>\n");
    Ok(plist)
}

fn utf8<'a>(what: &str, path: &'a Path) -> Result<&'a str, Error> {
    path.to_str().ok_or_else(|| Error::Value { what: what.to_owned(), message: "it is not UTF-8".to_owned() })
}

/// Where the systemd user unit goes: `<config dir>/systemd/user/fluxgit-gateway.service`.
pub fn unit_path() -> Result<PathBuf, Error> {
    Ok(dirs::config_dir().ok_or(Error::NoHome)?.join("systemd").join("user").join(UNIT_NAME))
}

/// Where the launchd agent goes: `~/Library/LaunchAgents/dev.fluxgit.gateway.plist`.
pub fn plist_path() -> Result<PathBuf, Error> {
    Ok(dirs::home_dir()
        .ok_or(Error::NoHome)?
        .join("Library")
        .join("LaunchAgents")
        .join(format!("{LAUNCHD_LABEL}.plist")))
}

/// Writes `contents` to `path` (mode 0644, parents created): into a new file beside it, then renamed over it.
pub fn write_file(path: &Path, contents: &str) -> Result<(), Error> {
    let wrap = |path: &Path| {
        let path = path.to_owned();
        move |source| Error::Io { path, source }
    };
    let dir = path.parent().ok_or_else(|| Error::Io {
        path: path.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no parent directory"),
    })?;
    std::fs::create_dir_all(dir).map_err(wrap(dir))?;
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o644);
    }
    let written = options.open(&temporary).and_then(|mut file| {
        std::io::Write::write_all(&mut file, contents.as_bytes())?;
        file.sync_all()
    });
    if let Err(source) = written.and_then(|()| std::fs::rename(&temporary, path)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(Error::Io { path: path.to_owned(), source });
    }
    Ok(())
}

/// Removes the file at `path` (a symlink itself, never its target); `false` when there was none.
pub fn remove_file(path: &Path) -> Result<bool, Error> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(Error::Io { path: path.to_owned(), source }),
    }
}

/// Runs `program args` quietly; whether it succeeded (`false` when it is not there).
pub fn run_quietly(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Whether `systemctl --user` reaches a running user service manager.
pub fn has_user_manager() -> bool {
    run_quietly("systemctl", &["--user", "show-environment"])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(env: &[(&str, &str)]) -> Spec {
        Spec {
            binary: PathBuf::from("/opt/flux git/fluxgit-gateway"),
            addr: "127.0.0.1:7420".parse().expect("address"),
            env: env.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect(),
        }
    }

    #[test]
    fn unit_quotes_spaces_quotes_percent_and_dollar() {
        let unit = systemd_unit(&spec(&[("FLUXGIT_MCP_ALLOWED_ROOTS", "/a b:/c\"d%e$f\\g")])).expect("unit");
        assert!(unit.contains("ExecStart=\"/opt/flux git/fluxgit-gateway\" serve --addr \"127.0.0.1:7420\"\n"));
        assert!(unit.contains("Environment=\"FLUXGIT_MCP_ALLOWED_ROOTS=/a b:/c\\\"d%%e$f\\\\g\"\n"), "{unit}");
    }

    #[test]
    fn newline_in_a_value_is_refused_not_written() {
        let error = systemd_unit(&spec(&[("FLUXGIT_RUN_DIR", "/x\nExecStartPre=/bin/evil")])).expect_err("refused");
        assert!(error.to_string().contains("\\u{a}"), "{error}");
        let error = launchd_plist(&spec(&[("FLUXGIT_RUN_DIR", "/x\u{1b}")]), Path::new("/l")).expect_err("refused");
        assert!(error.to_string().contains("FLUXGIT_RUN_DIR"), "{error}");
    }

    #[test]
    fn launchd_plist_parses_back_to_the_same_program_and_environment() {
        let hostile = "/a & b/<c>/\"d\"/'e'/]]>/%h/$HOME";
        let spec = spec(&[("FLUXGIT_MCP_ALLOWED_ROOTS", hostile), ("FLUXGIT_RUN_DIR", "/run dir")]);
        let text = launchd_plist(&spec, Path::new("/logs/g & w.log")).expect("plist");
        let parsed = plist::Value::from_reader_xml(text.as_bytes()).expect("a property list plist parses");
        let top = parsed.as_dictionary().expect("a dictionary");
        assert_eq!(top.get("Label").and_then(plist::Value::as_string), Some(LAUNCHD_LABEL));
        let arguments: Vec<&str> = top
            .get("ProgramArguments")
            .and_then(plist::Value::as_array)
            .expect("ProgramArguments")
            .iter()
            .filter_map(plist::Value::as_string)
            .collect();
        assert_eq!(arguments, ["/opt/flux git/fluxgit-gateway", "serve", "--addr", "127.0.0.1:7420"]);
        let env = top.get("EnvironmentVariables").and_then(plist::Value::as_dictionary).expect("environment");
        assert_eq!(env.get("FLUXGIT_MCP_ALLOWED_ROOTS").and_then(plist::Value::as_string), Some(hostile));
        assert_eq!(env.get("FLUXGIT_RUN_DIR").and_then(plist::Value::as_string), Some("/run dir"));
        assert_eq!(env.len(), 2);
        assert_eq!(top.get("RunAtLoad").and_then(plist::Value::as_boolean), Some(true));
        let keep_alive = top.get("KeepAlive").and_then(plist::Value::as_dictionary).expect("KeepAlive");
        assert_eq!(keep_alive.get("SuccessfulExit").and_then(plist::Value::as_boolean), Some(false));
        assert_eq!(top.get("StandardOutPath").and_then(plist::Value::as_string), Some("/logs/g & w.log"));
    }

    #[test]
    fn non_loopback_address_is_refused() {
        let mut wide = spec(&[]);
        wide.addr = "0.0.0.0:7420".parse().expect("address");
        assert!(matches!(systemd_unit(&wide), Err(Error::NotLoopback(_))));
        assert!(matches!(launchd_plist(&wide, Path::new("/l")), Err(Error::NotLoopback(_))));
    }
}
