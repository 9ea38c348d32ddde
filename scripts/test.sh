#!/usr/bin/env bash
# Runs every test of the workspace: the Rust unit, oracle and stdio tests, then the end-to-end tests with the real
# Python MCP client (pinned in mcp/tests/e2e/requirements.txt, installed into .venv on first use).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import mcp, pytest' 2>/dev/null; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r mcp/tests/e2e/requirements.txt
fi

cargo build --workspace --all-targets
cargo test --workspace

# The binary cargo just built, wherever the target dir is (CARGO_TARGET_DIR is honoured).
target_dir=$(cargo metadata --format-version 1 --no-deps | .venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
FLUXGIT_SIDECAR_BIN="$target_dir/debug/fluxgit-mcp-sidecar" FLUXGIT_E2E_REPO="$PWD" \
  .venv/bin/python -m pytest mcp/tests/e2e -q
