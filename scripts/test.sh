#!/usr/bin/env bash
# Runs every test of the workspace: the Rust unit, oracle and stdio tests, then the end-to-end tests with the real
# Python MCP client (pinned in mcp/tests/e2e/requirements.txt, installed into .venv on first use), the TypeScript MCP
# client and the MCP Inspector CLI (pinned in mcp/tests/e2e-ts/package-lock.json, installed by `npm ci` on first use).
set -euo pipefail
cd "$(dirname "$0")/.."

# Fail before the long cargo run if Node is missing (CI has Node 20).
for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "scripts/test.sh: '$tool' not found: install Node.js >= 20 with npm (needed by mcp/tests/e2e-ts)" >&2
    exit 1
  fi
done

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import mcp, pytest' 2>/dev/null; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r mcp/tests/e2e/requirements.txt
fi

cargo build --workspace --all-targets
cargo test --workspace

# The binary cargo just built, wherever the target dir is (CARGO_TARGET_DIR is honoured).
target_dir=$(cargo metadata --format-version 1 --no-deps | .venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
# The gateway end-to-end test (test_gateway.py) writes only to a throwaway repository it makes itself.
FLUXGIT_SIDECAR_BIN="$target_dir/debug/fluxgit-mcp-sidecar" FLUXGIT_GATEWAY_BIN="$target_dir/debug/fluxgit-gateway" \
  FLUXGIT_E2E_REPO="$PWD" .venv/bin/python -m pytest mcp/tests/e2e -q

# (Re)install the pinned Node clients only when node_modules is missing or older than the lock file; offline after that.
# `npm install --no-save` installs the locked tree without rewriting the lock; `npm ci` refuses this lock because vite
# 8.4.0 (pulled in by the Inspector) names an optional dependency missing from the registry (napi-windows-process-start-time).
e2e_ts=mcp/tests/e2e-ts
if [ ! -f "$e2e_ts/node_modules/.package-lock.json" ] || [ "$e2e_ts/package-lock.json" -nt "$e2e_ts/node_modules/.package-lock.json" ]; then
  npm install --prefix "$e2e_ts" --no-save --no-audit --no-fund
fi
export FLUXGIT_SIDECAR_BIN="$target_dir/debug/fluxgit-mcp-sidecar" FLUXGIT_E2E_REPO="$PWD"
(cd "$e2e_ts" && node --test --test-reporter=spec)
