//! `fluxgit-bench latency --sweep N`: the cache's weight bound under a sweep of N repositories. One in-process
//! engine reads `repo.brief`, `repo.status` and `repo.refs` of each repository through its answer cache, as the
//! sidecar does, and after each repository the cache's weight (its pending evictions applied) is compared with the
//! bound; once with the default bound and once with a bound small enough that the sweep must evict.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use fluxgit_engine::cache::Options as CacheOptions;
use fluxgit_engine::{Budgeted, Engine, brief, refs, status};
use serde::Serialize;

/// One sweep under one bound.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SweepRun {
    pub(crate) repositories: usize,
    pub(crate) bound_bytes: u64,
    /// The highest weight seen after a repository was read.
    pub(crate) max_weight_bytes: u64,
    /// The weight after the last repository.
    pub(crate) final_weight_bytes: u64,
    /// Lookups served from memory and computed during the sweep.
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    /// Repositories the engine watches at the end.
    pub(crate) watched: usize,
    /// Repositories re-read after the sweep whose answers were still in memory (an evicted answer is recomputed).
    pub(crate) still_cached_of_first_50: usize,
}

fn serialised<T: Serialize>(result: &Budgeted<T>) -> String {
    serde_json::to_string(result).unwrap_or_default()
}

/// Reads the three answers of `path` through `engine`'s answer cache.
fn read(engine: &Engine, path: &Path) -> anyhow::Result<()> {
    let repo = engine.resolve(path.to_str().context("UTF-8 path")?)?;
    // A repository's watches are added in the background the first time it is seen (answers are read fresh and not
    // kept meanwhile): wait for them, so that the answers are kept.
    engine.cache_diagnostics(&repo);
    let none = &mut |_: &Budgeted<brief::Brief>| 0;
    engine.answer(&repo, "repo.brief", None, String::len, || {
        engine.brief(&repo, &brief::Options::default(), usize::MAX, none).map(|out| serialised(&out))
    })?;
    let none = &mut |_: &Budgeted<status::Report>| 0;
    engine.answer(&repo, "repo.status", Some(status::READS), String::len, || {
        engine.status(&repo, usize::MAX, none).map(|out| serialised(&out))
    })?;
    let none = &mut |_: &Budgeted<refs::Report>| 0;
    engine.answer(&repo, "repo.refs", Some(refs::READS), String::len, || {
        engine.refs(&repo, usize::MAX, none).map(|out| serialised(&out))
    })?;
    Ok(())
}

/// Sweeps `repos` with an engine whose cache is bounded by `bound_bytes`.
pub(crate) fn sweep(repos: &[PathBuf], roots: Vec<PathBuf>, bound_bytes: u64) -> anyhow::Result<SweepRun> {
    let cache = CacheOptions { capacity_bytes: bound_bytes, ..CacheOptions::default() };
    let engine = Engine::with_cache(fluxgit_engine::Options { allowed_roots: roots }, cache);
    let mut max_weight = 0;
    for repo in repos {
        read(&engine, repo)?;
        max_weight = max_weight.max(engine.cache_stats().weight_bytes);
    }
    let stats = engine.cache_stats();
    // Re-read the first 50: how many answers the bound kept.
    let mut still_cached = 0;
    for repo in repos.iter().take(50) {
        let misses = engine.cache_stats().misses;
        read(&engine, repo)?;
        if engine.cache_stats().misses == misses {
            still_cached += 1;
        }
    }
    Ok(SweepRun {
        repositories: repos.len(),
        bound_bytes,
        max_weight_bytes: max_weight,
        final_weight_bytes: stats.weight_bytes,
        hits: stats.hits,
        misses: stats.misses,
        watched: stats.watched,
        still_cached_of_first_50: still_cached,
    })
}
