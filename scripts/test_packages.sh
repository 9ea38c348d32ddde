#!/usr/bin/env bash
# Tests the packages scripts/package.sh builds (not part of scripts/test.sh: it needs a release build; CI runs it
# after packaging). Builds them first unless --no-build is given, then, under `env -i PATH=/usr/bin:/bin`, installs
# each into a fresh prefix and asks it for tools/list and repo_brief through the real MCP Python client
# (packaging/tests/test_packages.py): the wheel (venv, uvx), the npm tarballs (prefix, npx), the archive and the
# MCPB bundle, each within 10 s of the package being on disk. Also validates server.json against the registry's
# schema and the MCPB manifest with the mcpb CLI.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" != "--no-build" ]; then
  scripts/package.sh
fi
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
dist="$target_dir/dist"
if ! ls "$dist"/*.whl >/dev/null 2>&1; then
  echo "scripts/test_packages.sh: no packages in $dist: run scripts/package.sh first" >&2
  exit 1
fi

# The pinned Python MCP client, in the same .venv as scripts/test.sh uses.
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import mcp, jsonschema' 2>/dev/null; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r mcp/tests/e2e/requirements.txt
fi
# uv for the uvx channel, pinned, in the packaging venv (never system-wide).
if [ ! -x "$target_dir/package-venv/bin/uv" ]; then
  python3 -m venv "$target_dir/package-venv"
  "$target_dir/package-venv/bin/pip" install --quiet --disable-pip-version-check "uv==${FLUXGIT_UV_VERSION:-0.13.10}"
fi

# The bundle's manifest, checked by the mcpb CLI as a host would read it.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("manifest.json", sys.argv[2])' \
  "$(ls "$dist"/*.mcpb)" "$scratch"
npx -y @anthropic-ai/mcpb@2.1.2 validate "$scratch/manifest.json"

# Nothing of the build's environment reaches the servers: no cargo, no rustc, no CARGO_* variables.
env -i PATH=/usr/bin:/bin HOME="$scratch" FLUXGIT_UV="$target_dir/package-venv/bin/uv" \
  "$PWD/.venv/bin/python" packaging/tests/test_packages.py "$dist" "$PWD"
