"""End-to-end test of the real sidecar binary with the official Python MCP SDK (mcp==2.3.0).

For each connection mode of `mcp.Client` (auto = server/discover probe, legacy = initialize handshake, and the
pinned modern version 2026-07-28) it lists the tools and, when `repo_brief` is served, calls it on a repository.

Environment:
- FLUXGIT_SIDECAR_BIN: the binary (default: <workspace>/target/debug/fluxgit-mcp-sidecar; build it first).
- FLUXGIT_E2E_REPO: the repository passed as repoPath (default: a small repository made with the git CLI).

Run: python -m pytest mcp/tests/e2e -q   (requirements: mcp/tests/e2e/requirements.txt)
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from roots import allowed_roots

WORKSPACE = Path(__file__).resolve().parents[3]
MODES = ["auto", "legacy", "2026-07-28"]
EXPECTED_VERSION = {"auto": "2026-07-28", "legacy": "2025-11-25", "2026-07-28": "2026-07-28"}


def sidecar_bin() -> str:
    path = Path(os.environ.get("FLUXGIT_SIDECAR_BIN", WORKSPACE / "target" / "debug" / "fluxgit-mcp-sidecar"))
    assert path.is_file(), f"sidecar binary not found at {path}: run `cargo build -p fluxgit-mcp-sidecar` first"
    return str(path)


def git(repo: Path, *args: str) -> None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(repo.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "E2E",
        "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_NAME": "E2E",
        "GIT_COMMITTER_EMAIL": "e2e@example.invalid",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    configured = os.environ.get("FLUXGIT_E2E_REPO")
    if configured:
        return Path(configured).resolve()
    repo = tmp_path_factory.mktemp("e2e") / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("hello\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "feat: first commit")
    return repo.resolve()


def server_params(repo: Path, run_dir: Path) -> StdioServerParameters:
    # The SDK passes the child only HOME, LOGNAME, PATH, SHELL, TERM, USER: FluxGit settings go through env=.
    return StdioServerParameters(
        command=sidecar_bin(),
        args=[],
        env={
            "FLUXGIT_MCP_ALLOWED_ROOTS": allowed_roots(repo),
            "FLUXGIT_RUN_DIR": str(run_dir),
            "FLUXGIT_MCP_AUDIT_DISABLED": "1",
            "FLUXGIT_MCP_PRESENCE_DISABLED": "1",
        },
    )


async def exercise(mode: str, repo: Path, run_dir: Path) -> None:
    async with Client(server_params(repo, run_dir), mode=mode) as client:
        assert client.protocol_version == EXPECTED_VERSION[mode]
        listed = await client.list_tools()
        names = [tool.name for tool in listed.tools]
        assert len(names) == len(set(names)), names
        if names:
            assert names[0] == "repo_brief", names
            assert "agents_presence" in names, names
        for tool in listed.tools:
            assert tool.input_schema.get("type") == "object", tool.name
            assert tool.annotations is not None and tool.annotations.read_only_hint is not None, tool.name
        if "repo_brief" not in names:
            return
        result = await client.call_tool("repo_brief", {"repoPath": str(repo)})
        assert result.is_error is False, result
        text = result.content[0].text
        envelope = json.loads(text)
        assert envelope["tool"] == "repo_brief"
        assert result.structured_content is not None
        assert result.structured_content["tool"] == "repo_brief"
        assert result.structured_content == envelope

        # format "text": a terse rendering in content[0].text, the JSON envelope still in structuredContent.
        status = await client.call_tool("repo_status", {"repoPath": str(repo), "format": "text"})
        assert status.is_error is False, status
        lines = status.content[0].text.splitlines()
        assert lines[0].startswith("## "), lines
        assert status.structured_content is not None
        assert status.structured_content["tool"] == "repo_status"
        assert status.structured_content["data"]["head"]["sha"] in status.content[0].text


@pytest.mark.parametrize("mode", MODES)
def test_list_and_call(mode: str, repo: Path, tmp_path: Path) -> None:
    asyncio.run(exercise(mode, repo, tmp_path / "run"))
