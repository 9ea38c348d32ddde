//! The comparison of trees, the index and the work tree that both the work-tree facet and the diff
//! tools use: reading a side ([`side`]), reading only where two sides can differ ([`prune`]) and
//! the file-level changes between two sides with git's rename detection ([`changes`]). It knows no
//! tool.

pub(crate) mod changes;
pub(crate) mod prune;
pub(crate) mod side;
