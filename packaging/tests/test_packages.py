"""Starts the server from every package scripts/package.sh built, each from a fresh prefix with no Rust toolchain on
the PATH, and asks it for tools/list and repo_brief through the real MCP Python client (mcp==2.3.0).

Channels: the wheel (installed into a fresh venv, run as `fluxgit-mcp-sidecar` and as `fluxgit-mcp`, and by `uvx`
when uv is given), the npm tarballs (installed into a fresh prefix, run as `fluxgit-mcp` and through `npx`), the
archive (unpacked) and the MCPB bundle (unzipped, run as its manifest's mcp_config says). Each answer must come
within 10 s of the package being on disk: the clock starts before the install or unpack.

Checks first that server.json (the repository's and the build's) is valid against the registry's published schema
(packaging/server.schema.json), that the build's MCPB sha-256 matches the bundle, and that each package carries its
registry's ownership marker.

Run by scripts/test_packages.sh, under `env -i PATH=/usr/bin:/bin`. Arguments: the dist directory, the workspace.
Environment: FLUXGIT_UV (optional): a uv binary, with uvx next to it, for the uvx channel.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

import jsonschema
from mcp import Client, StdioServerParameters

BASE_PATH = "/usr/bin:/bin"
DEADLINE_SECONDS = 10.0
SERVER_NAME = "io.github.fluxgit/fluxgit-mcp"


def check_metadata(dist: Path, repo: Path) -> None:
    schema = json.loads((repo / "packaging" / "server.schema.json").read_text())
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    for path in (repo / "server.json", dist / "server.json"):
        server = json.loads(path.read_text())
        errors = [f"{list(error.path)}: {error.message}" for error in validator.iter_errors(server)]
        assert not errors, f"{path} is not valid against the registry schema: {errors}"
        types = sorted(package["registryType"] for package in server["packages"])
        assert types == ["mcpb", "npm", "pypi"], types
        assert server["name"] == SERVER_NAME, server["name"]
    built = json.loads((dist / "server.json").read_text())
    (bundle,) = dist.glob("*.mcpb")
    (mcpb,) = [package for package in built["packages"] if package["registryType"] == "mcpb"]
    assert mcpb["fileSha256"] == hashlib.sha256(bundle.read_bytes()).hexdigest(), "server.json names another bundle"
    assert mcpb["identifier"].endswith("/" + bundle.name), mcpb["identifier"]
    # Ownership markers: npm's mcpName, PyPI's `mcp-name:` line in the README the wheel carries.
    (launcher,) = [path for path in dist.glob("fluxgit-mcp-[0-9]*.tgz")]
    with tarfile.open(launcher) as archive:
        package = json.load(archive.extractfile("package/package.json"))
    assert package["mcpName"] == SERVER_NAME, package
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        assert f"mcp-name: {SERVER_NAME}" in archive.read(metadata).decode(), "the wheel's README lacks mcp-name"
    print("server.json valid against the registry schema (2025-12-11); MCPB sha-256 and ownership markers match")


def run(command: list[str], **kwargs) -> None:
    subprocess.run(command, check=True, capture_output=True, **kwargs)


async def ask(command: str, args: list[str], path: str, home: Path, repo: Path) -> int:
    """Lists the tools and calls repo_brief; returns the number of tools listed."""
    env = {
        "PATH": path,
        "HOME": str(home),
        "FLUXGIT_RUN_DIR": str(home / "run"),
        "FLUXGIT_MCP_AUDIT_DISABLED": "1",
        "FLUXGIT_MCP_PRESENCE_DISABLED": "1",
    }
    if "--roots" not in args:  # The MCPB form passes the roots as arguments instead.
        env["FLUXGIT_MCP_ALLOWED_ROOTS"] = str(repo)
    async with Client(StdioServerParameters(command=command, args=args, env=env, cwd=str(home)), mode="auto") as client:
        listed = await client.list_tools()
        names = [tool.name for tool in listed.tools]
        assert "repo_brief" in names, names
        result = await client.call_tool("repo_brief", {"repoPath": str(repo)})
        assert result.is_error is False, result
        envelope = json.loads(result.content[0].text)
        assert envelope["tool"] == "repo_brief", envelope
        return len(names)


def channel(name: str, work: Path, repo: Path, install, command: str, args: list[str], runner_dir: str) -> dict:
    """Installs (timed from here), then asks; the runner dir is the only PATH entry besides /usr/bin:/bin."""
    home = work / f"home-{name}"
    home.mkdir()
    path = f"{BASE_PATH}:{runner_dir}" if runner_dir else BASE_PATH
    for tool in ("cargo", "rustc", "rustup"):
        assert shutil.which(tool, path=path) is None, f"{tool} is on the PATH of {name}: {path}"
    started = time.monotonic()
    install()
    installed = time.monotonic()
    tools = asyncio.run(ask(command, args, path, home, repo))
    answered = time.monotonic()
    row = {
        "channel": name,
        "install_s": round(installed - started, 2),
        "answer_s": round(answered - installed, 2),
        "total_s": round(answered - started, 2),
        "tools": tools,
    }
    print(json.dumps(row), flush=True)
    assert row["total_s"] < DEADLINE_SECONDS, f"{name}: {row['total_s']} s from package on disk to answer"
    return row


def make_repo(repo: Path) -> None:
    """A one-commit repository made with the git CLI, the one every channel is asked about."""
    env = {
        "PATH": BASE_PATH,
        "HOME": str(repo.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Packages",
        "GIT_AUTHOR_EMAIL": "packages@example.invalid",
        "GIT_COMMITTER_NAME": "Packages",
        "GIT_COMMITTER_EMAIL": "packages@example.invalid",
    }
    repo.mkdir()
    (repo / "README.md").write_text("hello\n")
    for args in (["init", "-q", "-b", "main"], ["add", "README.md"], ["commit", "-q", "-m", "feat: first commit"]):
        run(["git", *args], cwd=repo, env=env)


def main() -> None:
    dist, workspace = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    check_metadata(dist, workspace)
    (wheel,) = dist.glob("*.whl")
    (archive,) = dist.glob("*.tar.gz")
    (bundle,) = dist.glob("*.mcpb")
    (launcher,) = dist.glob("fluxgit-mcp-[0-9]*.tgz")
    platform_tarballs = [path for path in dist.glob("fluxgit-mcp-*-*.tgz") if path != launcher]
    rows = []
    with tempfile.TemporaryDirectory(prefix="fluxgit-packages-") as scratch:
        work = Path(scratch).resolve()
        repo = work / "repo"
        make_repo(repo)

        venv = work / "venv"

        def install_wheel() -> None:
            # A venv without pip of its own (fast); this interpreter's pip installs into it (pip >= 22.3).
            run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
            run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
                 "--no-index", "--disable-pip-version-check", str(wheel)])

        rows.append(channel("wheel (venv, fluxgit-mcp-sidecar)", work, repo, install_wheel, "fluxgit-mcp-sidecar",
                            [], str(venv / "bin")))
        rows.append(channel("wheel (venv, fluxgit-mcp)", work, repo, lambda: None, "fluxgit-mcp", [],
                            str(venv / "bin")))
        gateway = venv / "bin" / "fluxgit-gateway"
        assert gateway.is_file() and os.access(gateway, os.X_OK), "the wheel installs the gateway too"

        uv = os.environ.get("FLUXGIT_UV")
        if uv:
            uv_dir = work / "uv-bin"
            uv_dir.mkdir()
            for name in ("uv", "uvx"):  # uvx is a binary of its own next to uv
                shutil.copy(Path(uv).with_name(name), uv_dir / name)
            cache = work / "uv-cache"
            # A host-style entry: {"command": "uvx", "args": [...]}; offline, from the wheel on disk.
            args = ["--offline", "--cache-dir", str(cache), "--from", str(wheel), "fluxgit-mcp-sidecar"]
            rows.append(channel("wheel (uvx)", work, repo, lambda: None, "uvx", args, str(uv_dir)))

        prefix = work / "npm-prefix"
        prefix.mkdir()
        install_npm = lambda: run(  # noqa: E731
            ["npm", "install", "--prefix", str(prefix), "--offline", "--no-audit", "--no-fund",
             "--cache", str(work / "npm-cache"), *map(str, platform_tarballs), str(launcher)],
            env={"PATH": BASE_PATH, "HOME": str(work)},
        )
        rows.append(channel("npm (prefix, fluxgit-mcp)", work, repo, install_npm, "fluxgit-mcp", [],
                            str(prefix / "node_modules" / ".bin")))
        # A host-style entry: {"command": "npx", "args": ["--prefix", PREFIX, "--no-install", "fluxgit-mcp"]}.
        rows.append(channel("npm (npx)", work, repo, lambda: None, "npx",
                            ["--prefix", str(prefix), "--no-install", "fluxgit-mcp"], ""))

        unpacked = work / "archive"
        unpack = lambda: shutil.unpack_archive(archive, unpacked)  # noqa: E731
        top = archive.name.removesuffix(".tar.gz")
        rows.append(channel("archive", work, repo, unpack, "fluxgit-mcp-sidecar", [], str(unpacked / top)))

        bundle_dir = work / "mcpb"

        def unzip_bundle() -> None:
            with zipfile.ZipFile(bundle) as zipped:
                zipped.extractall(bundle_dir)
            for info in zipfile.ZipFile(bundle).infolist():
                mode = info.external_attr >> 16
                if mode:
                    os.chmod(bundle_dir / info.filename, mode & 0o777)

        rows.append(channel("mcpb", work, repo, unzip_bundle, *mcpb_command(bundle, bundle_dir, repo), ""))
    print(json.dumps({"channels": len(rows), "slowest_total_s": max(row["total_s"] for row in rows)}))


def mcpb_command(bundle: Path, bundle_dir: Path, repo: Path) -> tuple[str, list[str]]:
    """The command and arguments of the bundle's mcp_config, with `${__dirname}` and the allowed roots (a
    directory list, expanded into one argument per directory as MCPB hosts do) substituted."""
    with zipfile.ZipFile(bundle) as zipped:
        manifest = json.loads(zipped.read("manifest.json"))
    assert manifest["server"]["type"] == "binary", manifest["server"]
    roots = manifest["user_config"]["allowed_roots"]
    assert roots["type"] == "directory" and roots["multiple"] is True, roots
    config = manifest["server"]["mcp_config"]
    command = config["command"].replace("${__dirname}", str(bundle_dir))
    args: list[str] = []
    for arg in config["args"]:
        args.extend([str(repo)] if arg == "${user_config.allowed_roots}" else [arg])
    return command, args


if __name__ == "__main__":
    main()
