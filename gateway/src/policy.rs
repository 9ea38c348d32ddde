//! The agent policy (design.md#gateway): a TOML file named by `FLUXGIT_MCP_AGENT_POLICY`.
//!
//! ```toml
//! version = 1
//! default = "deny"            # or "allow"
//!
//! [[rule]]
//! agent = "claude-code"       # the forwarded, self-declared agentId; "*" matches every agent
//! operations = ["branch", "commit"]               # absent: every operation
//! refs = ["feature/*", "HEAD"]                    # absent: any ref; `*` matches any run of characters
//! pathConstraints = { repo = ["/home/me/src/"], worktree = ["/home/me/src/"] }   # path prefixes
//! ```
//!
//! Decision: the rules naming the agent (exactly, or `"*"`) form its allow-list: the proposal is allowed when one
//! of them matches every constraint it sets (operation, every ref the proposal names, the repository and worktree
//! path prefixes), and denied otherwise. An agent no rule names gets `default`. Without a file the gateway is
//! permissive, but every proposal still needs a person. A missing, unreadable, malformed file or another `version`
//! stops the gateway from starting. The agent id is attribution, never identity: a policy limits what a
//! well-behaved agent proposes, it does not authenticate anyone.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The only policy format version.
pub const POLICY_VERSION: i64 = 1;

/// A loaded policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Where it came from (`None`: no file, permissive).
    pub source: Option<PathBuf>,
    /// Whether agents no rule names are allowed.
    pub default_allow: bool,
    /// The rules in file order.
    pub rules: Vec<Rule>,
}

/// One `[[rule]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The agent id it applies to, or `*`.
    pub agent: String,
    /// Allowed operation types (absent: all).
    pub operations: Option<Vec<String>>,
    /// Globs every named ref must match (absent: any).
    pub refs: Option<Vec<String>>,
    /// Path prefixes.
    #[serde(rename = "pathConstraints")]
    pub path_constraints: Option<PathConstraints>,
}

/// `pathConstraints`: prefixes the repository path and worktree path must start with.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathConstraints {
    /// Prefixes of `repoPath`.
    pub repo: Option<Vec<String>>,
    /// Prefixes of a worktree `path`.
    pub worktree: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: i64,
    default: Default,
    #[serde(default)]
    rule: Vec<Rule>,
}

#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Default {
    Allow,
    Deny,
}

/// Why the policy file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The variable is set but empty.
    #[error("set but empty: name a policy file")]
    Empty,
    /// The file is missing or unreadable.
    #[error("cannot read {path}: {source}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// Not valid TOML of the policy's shape.
    #[error("malformed policy {path}: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// Another `version`.
    #[error("unsupported policy version {version} in {path} (supported: {POLICY_VERSION})")]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version it declares.
        version: i64,
    },
}

/// What a proposal asks for, as the policy sees it.
#[derive(Debug, Clone, Default)]
pub struct Request<'a> {
    /// The forwarded agent id.
    pub agent: &'a str,
    /// The operation type (`merge`, ...).
    pub operation: &'a str,
    /// Every ref the proposal names.
    pub refs: Vec<String>,
    /// The repository path.
    pub repo_path: &'a str,
    /// The worktree path of a worktree proposal.
    pub worktree_path: Option<String>,
    /// A plan's step operations: each must be allowed as the plan itself is.
    pub step_operations: Vec<String>,
    /// The other repositories a proposal acts on (branchDelete targets): each must meet `pathConstraints.repo`.
    pub other_repo_paths: Vec<String>,
}

/// A denial, with the reason for the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// Why, in one sentence.
    pub message: String,
}

impl Policy {
    /// No file: every agent may propose (a person still decides each proposal).
    pub fn permissive() -> Self {
        Self { source: None, default_allow: true, rules: Vec::new() }
    }

    /// Loads `path`; every problem is an [`Error`] and the gateway must not start.
    pub fn load(path: &Path) -> Result<Self, Error> {
        if path.as_os_str().is_empty() {
            return Err(Error::Empty);
        }
        let text =
            std::fs::read_to_string(path).map_err(|source| Error::Unreadable { path: path.to_owned(), source })?;
        Self::parse(&text, path)
    }

    /// Parses policy text read from `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Self, Error> {
        let value: toml::Value = toml::from_str(text)
            .map_err(|error| Error::Malformed { path: path.to_owned(), message: error.message().to_owned() })?;
        // The version is checked before the shape, so a future format is reported as such.
        match value.get("version").and_then(toml::Value::as_integer) {
            Some(POLICY_VERSION) => {}
            Some(version) => return Err(Error::UnsupportedVersion { path: path.to_owned(), version }),
            None => {
                return Err(Error::Malformed {
                    path: path.to_owned(),
                    message: "`version` (an integer) is required".to_owned(),
                });
            }
        }
        let file: File = toml::from_str(text)
            .map_err(|error| Error::Malformed { path: path.to_owned(), message: error.message().to_owned() })?;
        debug_assert_eq!(file.version, POLICY_VERSION);
        Ok(Self { source: Some(path.to_owned()), default_allow: file.default == Default::Allow, rules: file.rule })
    }

    /// Decides a proposal: `Ok(())` to open a card, or the [`Denial`] (HTTP 403, never a card).
    pub fn decide(&self, request: &Request<'_>) -> Result<(), Denial> {
        let rules: Vec<&Rule> =
            self.rules.iter().filter(|rule| rule.agent == request.agent || rule.agent == "*").collect();
        if rules.is_empty() {
            return if self.default_allow {
                Ok(())
            } else {
                Err(Denial { message: format!("the agent policy denies agent '{}' by default", request.agent) })
            };
        }
        let mut reasons = Vec::new();
        for rule in &rules {
            match rule.mismatch(request) {
                None => return Ok(()),
                Some(reason) => reasons.push(reason),
            }
        }
        Err(Denial {
            message: format!(
                "no policy rule for agent '{}' allows this proposal: {}",
                request.agent,
                reasons.join("; ")
            ),
        })
    }
}

impl Rule {
    /// The first constraint the request breaks, if any.
    fn mismatch(&self, request: &Request<'_>) -> Option<String> {
        if let Some(operations) = &self.operations
            && !operations.iter().any(|operation| operation == request.operation)
        {
            return Some(format!("operation '{}' is not allowed", request.operation));
        }
        if let Some(operations) = &self.operations
            && let Some(step) = request.step_operations.iter().find(|step| !operations.contains(step))
        {
            return Some(format!("plan step operation '{step}' is not allowed"));
        }
        if let Some(globs) = &self.refs {
            for name in &request.refs {
                if !globs.iter().any(|glob| glob_match(glob, name)) {
                    return Some(format!("ref '{name}' matches no allowed pattern"));
                }
            }
        }
        if let Some(constraints) = &self.path_constraints {
            if let Some(prefixes) = &constraints.repo
                && !prefixes.iter().any(|prefix| request.repo_path.starts_with(prefix.as_str()))
            {
                return Some("the repository is outside the allowed path prefixes".to_owned());
            }
            if let Some(prefixes) = &constraints.repo
                && let Some(other) = request
                    .other_repo_paths
                    .iter()
                    .find(|path| !prefixes.iter().any(|prefix| path.starts_with(prefix.as_str())))
            {
                return Some(format!("the target repository {other} is outside the allowed path prefixes"));
            }
            if let (Some(prefixes), Some(path)) = (&constraints.worktree, &request.worktree_path)
                && !prefixes.iter().any(|prefix| path.starts_with(prefix.as_str()))
            {
                return Some("the worktree path is outside the allowed path prefixes".to_owned());
            }
        }
        None
    }
}

/// Whether `text` matches `glob`, where `*` matches any run of characters (slashes included) and every other
/// character matches itself.
pub fn glob_match(glob: &str, text: &str) -> bool {
    let pattern: Vec<char> = glob.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut pattern_idx, mut text_idx) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while text_idx < text.len() {
        if pattern_idx < pattern.len() && pattern[pattern_idx] == '*' {
            backtrack = Some((pattern_idx, text_idx));
            pattern_idx += 1;
        } else if pattern_idx < pattern.len() && pattern[pattern_idx] == text[text_idx] {
            pattern_idx += 1;
            text_idx += 1;
        } else if let Some((star_idx, star_text_idx)) = backtrack {
            pattern_idx = star_idx + 1;
            text_idx = star_text_idx + 1;
            backtrack = Some((star_idx, star_text_idx + 1));
        } else {
            return false;
        }
    }
    pattern[pattern_idx..].iter().all(|character| *character == '*')
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{Error, Policy, Request, glob_match};

    fn parse(text: &str) -> Result<Policy, Error> {
        Policy::parse(text, Path::new("policy.toml"))
    }

    #[test]
    fn globs() {
        assert!(glob_match("feature/*", "feature/a/b"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*c*e", "abcde"));
        assert!(!glob_match("feature/*", "main"));
        assert!(!glob_match("main", "main2"));
    }

    #[test]
    fn versions_and_shapes() {
        assert!(matches!(parse("version = 2\ndefault = \"allow\""), Err(Error::UnsupportedVersion { version: 2, .. })));
        assert!(matches!(parse("default = \"allow\""), Err(Error::Malformed { .. })));
        assert!(matches!(parse("version = 1\ndefault = \"maybe\""), Err(Error::Malformed { .. })));
        assert!(matches!(parse("version = 1\ndefault = \"allow\"\nextra = 1"), Err(Error::Malformed { .. })));
        assert!(matches!(parse("version = 1\n[[rule]]\nagent = 3"), Err(Error::Malformed { .. })));
        assert!(matches!(parse("not toml ["), Err(Error::Malformed { .. })));
    }

    #[test]
    fn decisions() {
        let policy = parse(
            "version = 1\ndefault = \"deny\"\n[[rule]]\nagent = \"claude-code\"\noperations = [\"branch\"]\nrefs = [\"feature/*\", \"HEAD\"]\npathConstraints = { repo = [\"/src/\"] }\n",
        )
        .expect("valid");
        let mut request = Request {
            agent: "claude-code",
            operation: "branch",
            refs: vec!["feature/x".into(), "HEAD".into()],
            repo_path: "/src/repo",
            worktree_path: None,
            step_operations: Vec::new(),
            other_repo_paths: vec!["/src/other".into()],
        };
        assert_eq!(policy.decide(&request), Ok(()));
        request.refs.push("main".into());
        assert!(policy.decide(&request).is_err());
        request.refs.pop();
        request.operation = "merge";
        assert!(policy.decide(&request).is_err());
        request.operation = "branch";
        request.other_repo_paths.push("/elsewhere/other".into());
        assert!(
            policy.decide(&request).expect_err("denied").message.contains("/elsewhere/other"),
            "every target repository"
        );
        request.other_repo_paths.pop();
        request.step_operations.push("reset".into());
        assert!(policy.decide(&request).expect_err("denied").message.contains("'reset'"), "a plan's steps too");
        request.step_operations.clear();
        request.repo_path = "/elsewhere/repo";
        assert!(policy.decide(&request).is_err());
        request.agent = "other";
        assert!(policy.decide(&request).is_err(), "default deny");
        assert_eq!(Policy::permissive().decide(&request), Ok(()));
    }
}
