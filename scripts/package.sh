#!/usr/bin/env bash
# Builds the release binaries and lays out this host's packages under <target dir>/dist/:
#   fluxgit-mcp-VERSION-TRIPLE.tar.gz   both binaries, LICENSE and README.md, with a .sha256 file next to it;
#   fluxgit_mcp-VERSION-*.whl           the PyPI wheel (maturin, `bindings = "bin"`): `uvx fluxgit-mcp`;
#   fluxgit-mcp-PLATFORM-ARCH-VERSION.tgz and fluxgit-mcp-VERSION.tgz
#                                       the npm platform package (os/cpu fields, the binaries) and the launcher
#                                       that names it as an optional dependency: `npx -y fluxgit-mcp`;
#   fluxgit-mcp-VERSION-PLATFORM-ARCH.mcpb
#                                       the MCPB bundle for Claude Desktop, validated and packed by the mcpb CLI;
#   server.json                         the repository's server.json with this build's version and MCPB sha-256;
#   SHA256SUMS                          the sha-256 of every file above.
# Needs cargo, python3 with venv (maturin 1.16.0 is installed into <target dir>/package-venv, never system-wide),
# node and npm (the mcpb CLI runs through npx). Other platforms are built the same way on their own CI runners;
# FLUXGIT_NPM_PLATFORMS (e.g. "linux-x64 darwin-arm64") lists the platform packages the launcher names, by
# default this host's only.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
need() { command -v "$1" >/dev/null || missing+=("$1: $2"); }
need cargo "Rust 1.89 or newer, from https://rustup.rs"
need python3 "Python 3.8 or newer with venv"
need npm "npm, which comes with Node.js"
need npx "npx, which comes with npm"
if [ "${#missing[@]}" -gt 0 ]; then
  echo "scripts/package.sh: missing tools:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi

MATURIN_VERSION=1.16.0
MCPB_VERSION=2.1.2

metadata=$(cargo metadata --format-version 1 --no-deps)
field() { python3 -c "import json, sys; m = json.load(sys.stdin); $1" <<<"$metadata"; }
target_dir=$(field 'print(m["target_directory"])')
version=$(field 'print(next(p["version"] for p in m["packages"] if p["name"] == "fluxgit-mcp-sidecar"))')
triple=$(rustc -vV | sed -n 's/^host: //p')
case "$(uname -s)" in
  Linux) platform=linux ;;
  Darwin) platform=darwin ;;
  *) echo "scripts/package.sh: no package layout for $(uname -s) yet" >&2; exit 1 ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "scripts/package.sh: no package layout for $(uname -m) yet" >&2; exit 1 ;;
esac

dist="$target_dir/dist"
stage="$target_dir/dist-stage"
rm -rf "$dist" "$stage"
mkdir -p "$dist" "$stage"

# 1. The gateway, then the sidecar through maturin (the same `cargo build --release`; its binary is reused below).
cargo build --release --locked -p fluxgit-gateway
scripts_dir=packaging/python/fluxgit_mcp.data/scripts
install -m 0755 "$target_dir/release/fluxgit-gateway" "$scripts_dir/fluxgit-gateway"
if [ ! -x "$target_dir/package-venv/bin/maturin" ] \
  || [ "$("$target_dir/package-venv/bin/maturin" --version)" != "maturin $MATURIN_VERSION" ]; then
  python3 -m venv "$target_dir/package-venv"
  "$target_dir/package-venv/bin/pip" install --quiet --disable-pip-version-check "maturin==$MATURIN_VERSION"
fi
(cd packaging/python && CARGO_TARGET_DIR="$target_dir" "$target_dir/package-venv/bin/maturin" build --release --locked \
  --out "$dist")
rm -f "$scripts_dir/fluxgit-gateway"
sidecar="$target_dir/release/fluxgit-mcp-sidecar"
gateway="$target_dir/release/fluxgit-gateway"

# 2. The archive.
archive="fluxgit-mcp-$version-$triple"
mkdir -p "$stage/$archive"
install -m 0755 "$sidecar" "$gateway" "$stage/$archive/"
install -m 0644 LICENSE README.md "$stage/$archive/"
tar -C "$stage" -czf "$dist/$archive.tar.gz" "$archive"
(cd "$dist" && sha256sum "$archive.tar.gz" >"$archive.tar.gz.sha256")

# 3. The npm packages.
platform_package="fluxgit-mcp-$platform-$arch"
mkdir -p "$stage/npm/$platform_package/bin"
sed -e "s/@PLATFORM@/$platform/g" -e "s/@ARCH@/$arch/g" -e "s/@VERSION@/$version/g" \
  packaging/npm/platform/package.json.in >"$stage/npm/$platform_package/package.json"
install -m 0755 "$sidecar" "$gateway" "$stage/npm/$platform_package/bin/"
install -m 0644 LICENSE packaging/npm/fluxgit-mcp/README.md "$stage/npm/$platform_package/"
cp -R packaging/npm/fluxgit-mcp "$stage/npm/launcher"
install -m 0644 LICENSE "$stage/npm/launcher/"
python3 - "$stage/npm/launcher/package.json" "$version" "${FLUXGIT_NPM_PLATFORMS:-$platform-$arch}" <<'PY'
import json, sys
path, version, platforms = sys.argv[1], sys.argv[2], sys.argv[3].split()
package = json.load(open(path))
package["version"] = version
package["optionalDependencies"] = {f"fluxgit-mcp-{name}": version for name in platforms}
with open(path, "w") as out:
    json.dump(package, out, indent=2)
    out.write("\n")
PY
npm pack --silent --pack-destination "$dist" "$stage/npm/$platform_package" >/dev/null
npm pack --silent --pack-destination "$dist" "$stage/npm/launcher" >/dev/null

# 4. The MCPB bundle.
mcpb_platform=$platform
bundle="fluxgit-mcp-$version-$platform-$arch.mcpb"
mkdir -p "$stage/mcpb/server"
sed -e "s/@VERSION@/$version/g" -e "s/@MCPB_PLATFORM@/$mcpb_platform/g" packaging/mcpb/manifest.json.in \
  >"$stage/mcpb/manifest.json"
install -m 0755 "$sidecar" "$stage/mcpb/server/"
install -m 0644 LICENSE README.md "$stage/mcpb/"
npx -y "@anthropic-ai/mcpb@$MCPB_VERSION" validate "$stage/mcpb/manifest.json"
npx -y "@anthropic-ai/mcpb@$MCPB_VERSION" pack "$stage/mcpb" "$dist/$bundle"

# 5. server.json for this build, then the checksums.
python3 - server.json "$dist/server.json" "$version" "$dist/$bundle" <<'PY'
import hashlib, json, os, sys
source, target, version, bundle = sys.argv[1:]
server = json.load(open(source))
server["version"] = version
for package in server["packages"]:
    package["version"] = version
    if package["registryType"] == "mcpb":
        base = package["identifier"].rsplit("/", 3)[0]
        package["identifier"] = f"{base}/v{version}/{os.path.basename(bundle)}"
        package["fileSha256"] = hashlib.sha256(open(bundle, "rb").read()).hexdigest()
with open(target, "w") as out:
    json.dump(server, out, indent=2)
    out.write("\n")
PY
(cd "$dist" && find . -maxdepth 1 -type f ! -name SHA256SUMS ! -name '*.sha256' -printf '%f\n' | sort \
  | xargs sha256sum >SHA256SUMS)
rm -rf "$stage"
echo "scripts/package.sh: packages for $triple in $dist:"
(cd "$dist" && ls -l)
