#!/usr/bin/env bash
# Runs every test of the workspace: the Rust unit, oracle and stdio tests, then the end-to-end tests with the real
# Python MCP client (pinned in mcp/tests/e2e/requirements.txt, installed into .venv on first use), the TypeScript MCP
# client and the MCP Inspector CLI (pinned in mcp/tests/e2e-ts/package-lock.json, installed by `npm install --no-save` on first use),
# and the gateway's approval page in headless Chromium (Debian's `chromium` package, installed here when missing,
# driven by playwright-core pinned in gateway/tests/browser/package-lock.json; no browser is ever downloaded).
set -euo pipefail
cd "$(dirname "$0")/.."

# Fail before the long cargo run, naming every missing tool at once and where to get it (CI has all of them).
missing=()
need() { command -v "$1" >/dev/null || missing+=("$1: $2"); }
need cargo "Rust 1.89 or newer, from https://rustup.rs"
need git "Debian's git package"
need python3 "Python 3.10 or newer with venv (Debian's python3 and python3-venv)"
need node "Node.js 20 or newer (the MCP TypeScript client and Inspector tests, the approval page)"
need npm "npm, which comes with Node.js"
if command -v python3 >/dev/null && ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
  missing+=("python3's venv module: Debian's python3-venv package")
fi
if command -v node >/dev/null && [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  missing+=("Node.js 20 or newer (this is $(node --version))")
fi
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
  missing+=("chromium: Debian's chromium package (apt-get install chromium as root; no sudo here to do it)")
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "scripts/test.sh: missing tools:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi

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

# Each suite's output is kept in $logs as well as shown, for the summary line at the end.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

cargo build --workspace --all-targets
cargo test --workspace --no-fail-fast 2>&1 | tee "$logs/rust"

# The binary cargo just built, wherever the target dir is (CARGO_TARGET_DIR is honoured).
target_dir=$(cargo metadata --format-version 1 --no-deps | .venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
# The gateway end-to-end tests (test_gateway.py, test_gateway_page.py, which approves in the page through
# gateway/tests/browser/approve-in-page.mjs) write only to throwaway repositories they make themselves.
FLUXGIT_SIDECAR_BIN="$target_dir/debug/fluxgit-mcp-sidecar" FLUXGIT_GATEWAY_BIN="$target_dir/debug/fluxgit-gateway" \
  FLUXGIT_E2E_REPO="$PWD" .venv/bin/python -m pytest mcp/tests/e2e -q 2>&1 | tee "$logs/python"

# `npm install --no-save` installs the locked tree without rewriting the lock; `npm ci` refuses this lock because vite
# 8.4.0 (pulled in by the Inspector) names an optional dependency missing from the registry (napi-windows-process-start-time).
# On Node 20 npm warns EBADENGINE for the Inspector 2.12.0 (node >= 22.19) and its commander 15 and undici 8: every
# Inspector that accepts Node 20 (0.15.0 and older) lacks the CLI these tests drive (`--tool-args-json`,
# `--format json`, a config's `protocolEra`), and the suite passes on Node 20 as it is.
e2e_ts=mcp/tests/e2e-ts
npm_install_locked "$e2e_ts"
export FLUXGIT_SIDECAR_BIN="$target_dir/debug/fluxgit-mcp-sidecar" FLUXGIT_E2E_REPO="$PWD"
(cd "$e2e_ts" && node --test --test-reporter=spec) 2>&1 | tee "$logs/typescript"

# The approval page in headless Chromium against the gateway binary cargo just built.
FLUXGIT_GATEWAY_BIN="$target_dir/debug/fluxgit-gateway" node --test --test-reporter=spec "$browser"/page.test.mjs 2>&1 \
  | tee "$logs/browser"

# One line: each suite and its counts (every suite passed, or `set -o pipefail` stopped the script above).
rust=$(awk '/^test result:/ { passed += $4; ignored += $8 } END { printf "%d passed, %d ignored", passed, ignored }' "$logs/rust")
python=$(grep -Eo '[0-9]+ passed[^=]*' "$logs/python" | tail -n 1 | sed 's/ in .*//')
node_passed() { awk '$(NF-1) == "pass" && $NF ~ /^[0-9]+$/ { n = $NF } END { printf "%d passed", n }' "$1"; }
typescript=$(node_passed "$logs/typescript")
browser=$(node_passed "$logs/browser")
echo "scripts/test.sh: all green: Rust $rust; Python clients $python; TypeScript client and Inspector $typescript; approval page $browser"
