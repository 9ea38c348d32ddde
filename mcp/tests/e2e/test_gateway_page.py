"""End to end through the approval page: the real sidecar, the official Python MCP client, the real reference
gateway, and a person approving in headless Chromium (gateway/tests/browser/approve-in-page.mjs, Debian's
/usr/bin/chromium through playwright-core; scripts/test.sh installs both).

propose (operation_preview_branch) -> the proposal appears in the page -> Approve clicked -> operation_status reports
`completed` with the sha git shows.

Environment: FLUXGIT_SIDECAR_BIN and FLUXGIT_GATEWAY_BIN (default: <workspace>/target/debug/...; build first).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from mcp import Client, StdioServerParameters

from test_gateway import Setup, poll
from test_python_client import WORKSPACE, sidecar_bin

APPROVE_IN_PAGE = WORKSPACE / "gateway" / "tests" / "browser" / "approve-in-page.mjs"


async def exercise(setup: Setup, run_dir: Path) -> None:
    params = StdioServerParameters(
        command=sidecar_bin(),
        args=[],
        env={
            "FLUXGIT_MCP_ALLOWED_ROOTS": setup.env["FLUXGIT_MCP_ALLOWED_ROOTS"],
            "FLUXGIT_RUN_DIR": str(run_dir),
            "FLUXGIT_MCP_AUDIT_DISABLED": "1",
            "FLUXGIT_MCP_PRESENCE_DISABLED": "1",
            "FLUXGIT_MCP_HANDSHAKE_ADDR": setup.address,
        },
    )
    async with Client(params) as client:
        proposal = await client.call_tool(
            "operation_preview_branch",
            {"repoPath": str(setup.repo), "name": "page/feature", "reason": "approved in the page", "checkout": False},
        )
        assert proposal.is_error is False, proposal
        data = json.loads(proposal.content[0].text)["data"]
        assert data["accepted"] is True and data["status"] == "pending", data
        preview_id = data["previewId"]

        pending = await client.call_tool("operation_status", {"previewId": preview_id})
        assert json.loads(pending.content[0].text)["data"]["status"] == "pending"

        approved = await asyncio.to_thread(
            subprocess.run,
            ["node", str(APPROVE_IN_PAGE), setup.page, preview_id],
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert approved.returncode == 0, approved.stdout + approved.stderr
        assert json.loads(approved.stdout.strip().splitlines()[-1])["previewId"] == preview_id

        done = await poll(client, preview_id)
        assert done.is_error is False, done
        status = json.loads(done.content[0].text)["data"]
        assert status["status"] == "completed", status
        sha = subprocess.run(
            ["git", "rev-parse", "refs/heads/page/feature"], cwd=setup.repo, capture_output=True, text=True, check=True
        )
        assert status["result"]["newSha"] == sha.stdout.strip()
        assert status["result"]["restorePointId"].startswith("rp-")


def test_proposal_approved_in_the_page_completes(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    try:
        asyncio.run(exercise(setup, tmp_path / "sidecar-run"))
    finally:
        setup.close()
