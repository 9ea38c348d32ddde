"""End-to-end test of `serve-http` (Streamable HTTP) with the official Python MCP SDK (mcp==2.3.0).

The SDK's `streamable_http_client` with a bearer token, in each connection mode of `mcp.Client` (auto, legacy,
2026-07-28): it lists the tools and calls `repo_brief`; without the token the connection fails with 401.

Environment: as test_python_client.py (FLUXGIT_SIDECAR_BIN, FLUXGIT_E2E_REPO).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from roots import allowed_roots
from test_python_client import EXPECTED_VERSION, MODES, repo, sidecar_bin  # noqa: F401 (fixture)


@pytest.fixture(scope="module")
def served(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:  # noqa: F811
    """`serve-http` on a free loopback port with one token for the repository's roots: (url, token)."""
    home = tmp_path_factory.mktemp("http-home")
    tokens = home / "tokens.json"
    roots = allowed_roots(repo)
    added = subprocess.run(
        [sidecar_bin(), "token", "add", "--file", str(tokens), "--name", "python-e2e",
         "--roots", ",".join(roots.split(os.pathsep))],
        check=True, capture_output=True, text=True,
    )
    token = added.stdout.strip()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "FLUXGIT_MCP_ALLOWED_ROOTS": roots,
        "FLUXGIT_RUN_DIR": str(home / "run"),
        "FLUXGIT_MCP_AUDIT_DISABLED": "1",
        "FLUXGIT_MCP_PRESENCE_DISABLED": "1",
    }
    server = subprocess.Popen(
        [sidecar_bin(), "serve-http", "--listen", "127.0.0.1:0", "--tokens", str(tokens)],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    assert server.stderr is not None
    url = None
    for line in server.stderr:
        match = re.search(r"serving MCP on (http://\S+)", line)
        if match:
            url = match.group(1)
            break
    assert url, "serve-http did not say where it listens"
    # Keep its log drained so that it never blocks on a full pipe.
    threading.Thread(target=server.stderr.read, daemon=True).start()
    try:
        yield url, token
    finally:
        server.terminate()
        server.wait(timeout=10)


async def exercise(mode: str, url: str, token: str, repo: Path) -> None:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            assert client.protocol_version == EXPECTED_VERSION[mode]
            listed = await client.list_tools()
            names = [tool.name for tool in listed.tools]
            assert names[0] == "repo_brief", names
            result = await client.call_tool("repo_brief", {"repoPath": str(repo)})
            assert result.is_error is False, result
            envelope = json.loads(result.content[0].text)
            assert envelope["tool"] == "repo_brief"
            assert result.structured_content == envelope


@pytest.mark.parametrize("mode", MODES)
def test_http_list_and_call_with_a_bearer_token(mode: str, served: tuple[str, str], repo: Path) -> None:  # noqa: F811
    url, token = served
    asyncio.run(exercise(mode, url, token, repo))


async def without_token(url: str) -> None:
    async with httpx2.AsyncClient() as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            await client.list_tools()


def test_http_without_a_token_is_refused(served: tuple[str, str]) -> None:
    url, _ = served
    # The SDK reports the refused handshake as an error (it does not say the status: checked below).
    with pytest.raises(BaseException) as raised:
        asyncio.run(without_token(url))
    assert "error" in repr(raised.value).lower(), repr(raised.value)
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}}
    answer = httpx2.post(url, json=initialize, headers={"Accept": "application/json, text/event-stream"})
    assert answer.status_code == 401, answer.text
    assert answer.headers["www-authenticate"].startswith("Bearer"), answer.headers
