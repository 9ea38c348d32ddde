//! What the bench's integration tests share: the bench binary and the sidecar beside it.

use std::path::{Path, PathBuf};

/// The `fluxgit-bench` binary cargo built for these tests.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_fluxgit-bench");

/// The sidecar the workspace build made beside the bench binary (`cargo build --workspace --all-targets`, or the
/// `cargo test --workspace` run itself: the sidecar's own integration tests need its binary). Passed as `--sidecar`,
/// so the bench does not run `cargo build -p fluxgit-mcp-sidecar`, which resolves that crate's features alone and
/// rebuilds gix and tantivy (about 15 minutes of a CI run on a 2-core machine).
pub(crate) fn workspace_sidecar() -> PathBuf {
    let sidecar = Path::new(BIN).with_file_name(format!("fluxgit-mcp-sidecar{}", std::env::consts::EXE_SUFFIX));
    assert!(
        sidecar.is_file(),
        "no sidecar at {}: build the workspace first (`cargo build --workspace --all-targets`, as scripts/test.sh \
         does), or run this test from `cargo test --workspace`",
        sidecar.display()
    );
    sidecar
}

/// The JSON file at `path`.
pub(crate) fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}
