//! The parses `diff.semantic` keeps between calls, by blob id and language, held by the
//! [`crate::Engine`].

use std::sync::Arc;

use gix::ObjectId;

use crate::semantic::{Language, Parsed};

/// Bytes of parses the engine keeps (32 MiB).
const CACHE_BYTES: u64 = 32 * 1024 * 1024;

/// The parses the engine keeps, by blob id and language.
pub(crate) struct Cache {
    pub(super) parses: moka::sync::Cache<(ObjectId, Language), Arc<Parsed>>,
}

impl Default for Cache {
    fn default() -> Self {
        let parses = moka::sync::Cache::builder()
            .max_capacity(CACHE_BYTES)
            .weigher(|_, parsed: &Arc<Parsed>| weight(parsed))
            .build();
        Self { parses }
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache").field("parses", &self.parses.entry_count()).finish()
    }
}

/// The bytes a kept parse holds, roughly.
fn weight(parsed: &Parsed) -> u32 {
    let bytes = match parsed {
        Parsed::Symbols(symbols) => symbols
            .iter()
            .map(|symbol| 96 + symbol.name.len() + symbol.leaf.len() + 8 * symbol.tokens.len())
            .sum::<usize>(),
        _ => 0,
    };
    u32::try_from(bytes + 64).unwrap_or(u32::MAX)
}
