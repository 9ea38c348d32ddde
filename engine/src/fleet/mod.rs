//! The fleet (design.md#engine, §5): many repositories at once. [`registry`] keeps the repositories
//! the engine knows of (registered with `fleet add` or seen in calls); [`radar`] ranks them by what
//! needs attention and [`digest`] lists how their HEADs and branches moved. One bad repository
//! never fails a fleet call: its entry carries `error: {reason}` and the others are read.

pub mod digest;
pub mod radar;
pub mod registry;

use std::collections::HashSet;
use std::path::PathBuf;

use serde::Serialize;

use crate::cache::CallState;
use crate::engine::{Engine, Repo};
use crate::error::{Error, InvalidReason, ItemError};
use crate::repository::Location;

/// A repository a fleet call should read: the path the caller gave (or the registry holds) and its
/// label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Absolute path of the repository or a folder inside it.
    pub path: String,
    /// The caller's label for it, echoed in the answer.
    pub label: Option<String>,
}

/// Where a fleet call's repositories came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Targets {
    /// The caller's list (`repoPaths` or `repositories`), at most [`registry::MAX_REPOSITORIES`].
    Given(Vec<Target>),
    /// The registry: repositories added with `fleet add` or seen in calls, inside the allowed
    /// roots.
    Registry,
}

/// The failure of one repository of a fleet call: `error: {reason}` in its entry (design.md#roots).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// A machine-readable reason: `not_found`, `not_a_repository`, `outside_allowed_roots`,
    /// `invalid_path`, `git_read_failed` or `cancelled` (never answered: the whole call stopped).
    pub reason: &'static str,
    /// What happened, for a person or an agent.
    pub message: String,
}

impl Failure {
    fn of(error: &Error) -> Self {
        match error {
            Error::Invalid { reason, message, .. } => Self { reason: reason.as_str(), message: message.clone() },
            Error::GitRead { .. } => Self { reason: "git_read_failed", message: error.to_string() },
            Error::Cancelled => Self { reason: "cancelled", message: error.to_string() },
        }
    }

    /// The entry's `error` object.
    pub fn item(&self) -> ItemError {
        ItemError::new(self.reason)
    }
}

/// A target after resolution: the repository, or why it could not be opened.
pub(crate) struct Resolved {
    pub(crate) target: Target,
    /// The canonical root (`repoPath`), or the path as given when it could not be resolved.
    pub(crate) root: String,
    pub(crate) repo: std::result::Result<Repo, Failure>,
}

/// What a fleet call read of one target: the target, its root (or the path as given) and the read
/// or why not.
pub(crate) type Outcome<T> = (Target, String, std::result::Result<T, Failure>);

impl Engine {
    /// The targets of a fleet call: the given list, or the registry's entries inside the allowed
    /// roots (none without a registry file). When the registry file cannot be read (not a regular
    /// file, too large, not a registry), there are none and the second value says why, for the
    /// answer's hint.
    pub(crate) fn fleet_targets(&self, targets: &Targets) -> (Vec<Target>, Option<String>) {
        match targets {
            Targets::Given(list) => (list.iter().take(registry::MAX_REPOSITORIES).cloned().collect(), None),
            Targets::Registry => {
                // Repositories this process saw are in the file once their queued writes are done.
                self.flush_registry();
                let Some(file) = self.registry_file() else { return (Vec::new(), None) };
                let loaded = match registry::Registry::load(file) {
                    Ok(loaded) => loaded,
                    Err(error) => return (Vec::new(), Some(format!("the fleet registry cannot be read: {error}"))),
                };
                let listed = loaded
                    .repositories
                    .into_iter()
                    .filter(|entry| self.allowed_roots().iter().any(|root| entry.path.starts_with(root)))
                    .take(registry::MAX_REPOSITORIES)
                    .map(|entry| Target { path: entry.path.display().to_string(), label: entry.label })
                    .collect();
                (listed, None)
            }
        }
    }

    /// Reads every target on up to `available_parallelism` threads after one freshness barrier for
    /// the whole call (not one per repository). A target resolved by an earlier fleet call is first
    /// offered to `cached` (a lookup in memory, without opening the repository); otherwise, or when
    /// that misses, it is resolved and `read`. Targets naming a repository already listed are
    /// dropped (the first label wins). Results come back in target order.
    pub(crate) fn fleet_each<T: Send>(
        &self,
        targets: Vec<Target>,
        cached: impl Fn(&Location, &CallState) -> Option<T> + Sync,
        read: impl Fn(&Repo) -> crate::Result<T> + Sync,
    ) -> Vec<Outcome<T>> {
        let barrier = self.shared_barrier();
        let slots: Vec<std::sync::Mutex<Option<Outcome<T>>>> =
            targets.iter().map(|_| std::sync::Mutex::new(None)).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8).min(targets.len());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let idx = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let Some(target) = targets.get(idx) else { break };
                        let from_memory = self.known_location(&target.path, barrier).and_then(|(location, call)| {
                            cached(&location, &call).map(|value| (location.root.display().to_string(), value))
                        });
                        let outcome = match from_memory {
                            Some((root, value)) => (target.clone(), root, Ok(value)),
                            None => {
                                let resolved = self.resolve_target(target.clone(), barrier);
                                let outcome =
                                    resolved.repo.and_then(|repo| read(&repo).map_err(|error| Failure::of(&error)));
                                (resolved.target, resolved.root, outcome)
                            }
                        };
                        *slots[idx].lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(outcome);
                    }
                });
            }
        });
        let mut seen = HashSet::new();
        slots
            .into_iter()
            .filter_map(|slot| slot.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner))
            .filter(|(_, root, _)| seen.insert(root.clone()))
            .collect()
    }

    fn resolve_target(&self, target: Target, barrier: Option<bool>) -> Resolved {
        match self.resolve_for_fleet(&target.path, barrier) {
            Ok(repo) => Resolved { root: repo.location.root.display().to_string(), target, repo: Ok(repo) },
            Err(error) => Resolved { root: target.path.clone(), target, repo: Err(Failure::of(&error)) },
        }
    }
}

/// Milliseconds since the Unix epoch of `seconds`.
pub(crate) fn millis(seconds: i64) -> i64 {
    seconds.saturating_mul(1000)
}

/// The canonical roots of `paths` that lie inside `allowed_roots`, for `fleet add`; the others with
/// why.
pub fn resolve_for_registry(
    engine: &Engine,
    paths: &[PathBuf],
) -> Vec<(PathBuf, std::result::Result<PathBuf, Failure>)> {
    paths
        .iter()
        .map(|path| {
            let absolute = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            let outcome = match absolute.to_str() {
                Some(text) => {
                    engine.resolve_unrecorded(text).map(|repo| repo.location.root).map_err(|error| Failure::of(&error))
                }
                None => Err(Failure::of(&Error::invalid(InvalidReason::InvalidPath, "the path is not UTF-8"))),
            };
            (path.clone(), outcome)
        })
        .collect()
}
