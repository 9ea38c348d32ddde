#!/usr/bin/env bash
# Runs every test of the workspace: the Rust unit, oracle and stdio tests, then the end-to-end tests with the real
# Python MCP client (pinned in mcp/tests/e2e/requirements.txt, installed into .venv on first use), the TypeScript MCP
# client and the MCP Inspector CLI (pinned in mcp/tests/e2e-ts/package-lock.json, installed by `npm install --no-save` on first use),
# and the gateway's approval page in headless Chromium (Debian's `chromium` package, installed here when missing,
# driven by playwright-core pinned in gateway/tests/browser/package-lock.json; no browser is ever downloaded).
set -euo pipefail
cd "$(dirname "$0")/.."

# Fail before the long cargo run if Node is missing (CI has Node 20).
for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "scripts/test.sh: '$tool' not found: install Node.js >= 20 with npm (needed by mcp/tests/e2e-ts)" >&2
    exit 1
  fi
done

# The approval page's tests run Debian's Chromium (/usr/bin/chromium), never a browser build of Playwright's.
if [ ! -x /usr/bin/chromium ]; then
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium \
    || { "${sudo_cmd[@]}" apt-get update -q && "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; }
fi

# (Re)install pinned Node packages only when node_modules is missing or older than the lock file; offline after that.
npm_install_locked() {
  if [ ! -f "$1/node_modules/.package-lock.json" ] || [ "$1/package-lock.json" -nt "$1/node_modules/.package-lock.json" ]; then
    npm install --prefix "$1" --no-save --no-audit --no-fund
  fi
}
browser=gateway/tests/browser
npm_install_locked "$browser"

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import mcp, pytest' 2>/dev/null; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r mcp/tests/e2e/requirements.txt
fi

# No import circle between the files of engine/ or mcp/ (ARCHITECTURE.md).
python3 scripts/import_graph.py --check
# Every doc line of engine/src within 100 columns (CONTRIBUTING.md).
python3 scripts/wrap_docs.py --check
# Every relative link of every Markdown file resolves, headings included.
python3 scripts/check_links.py

cargo build --workspace --all-targets
cargo test --workspace

# The binary cargo just built, wherever the target dir is (CARGO_TARGET_DIR is honoured).
target_dir=$(cargo metadata --format-version 1 --no-deps | .venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
# The gateway end-to-end tests (test_gateway.py, test_gateway_page.py, which approves in the page through
# gateway/tests/browser/approve-in-page.mjs) write only to throwaway repositories they make themselves.
FLUXGIT_SIDECAR_BIN="$target_dir/debug/fluxgit-mcp-sidecar" FLUXGIT_GATEWAY_BIN="$target_dir/debug/fluxgit-gateway" \
  FLUXGIT_E2E_REPO="$PWD" .venv/bin/python -m pytest mcp/tests/e2e -q

# `npm install --no-save` installs the locked tree without rewriting the lock; `npm ci` refuses this lock because vite
# 8.4.0 (pulled in by the Inspector) names an optional dependency missing from the registry (napi-windows-process-start-time).
e2e_ts=mcp/tests/e2e-ts
npm_install_locked "$e2e_ts"
export FLUXGIT_SIDECAR_BIN="$target_dir/debug/fluxgit-mcp-sidecar" FLUXGIT_E2E_REPO="$PWD"
(cd "$e2e_ts" && node --test --test-reporter=spec)

# The approval page in headless Chromium against the gateway binary cargo just built.
FLUXGIT_GATEWAY_BIN="$target_dir/debug/fluxgit-gateway" node --test --test-reporter=spec "$browser"/page.test.mjs
