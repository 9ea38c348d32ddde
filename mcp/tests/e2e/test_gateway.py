"""End to end: the real sidecar binary, the official Python MCP client and the real reference gateway
(`fluxgit-gateway`) on loopback, on a throwaway repository.

propose (operation.preview.branch) -> `fluxgit-gateway show` prints the card and a one-time code -> a person runs
`fluxgit-gateway approve` on a pseudo-terminal and types the code -> operation.status reports `completed` with the new
sha git shows. A second proposal rejected at the CLI ends as 10004; a proposal the agent policy denies is 10006 and
never reaches a card.

Environment: FLUXGIT_SIDECAR_BIN and FLUXGIT_GATEWAY_BIN (default: <workspace>/target/debug/...; build first).
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import subprocess
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from test_python_client import WORKSPACE, git, sidecar_bin

POLICY = """version = 1
default = "allow"

[[rule]]
agent = "*"
operations = ["branch", "commit", "merge", "rebase", "discard", "patch"]
"""


def gateway_bin() -> str:
    path = Path(os.environ.get("FLUXGIT_GATEWAY_BIN", WORKSPACE / "target" / "debug" / "fluxgit-gateway"))
    assert path.is_file(), f"gateway binary not found at {path}: run `cargo build -p fluxgit-gateway` first"
    return str(path)


class Setup:
    """A repository under an allowed root, a run dir and a policy, and the gateway serving them."""

    def __init__(self, base: Path) -> None:
        self.root = base / "root"
        self.repo = self.root / "repo"
        self.repo.mkdir(parents=True)
        git(self.repo, "init", "-q", "-b", "main")
        (self.repo / "README.md").write_text("hello\n")
        git(self.repo, "add", "README.md")
        git(self.repo, "commit", "-q", "-m", "feat: first commit")
        self.repo = self.repo.resolve()
        policy = base / "policy.toml"
        policy.write_text(POLICY)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(base),
            "GIT_CONFIG_NOSYSTEM": "1",
            "FLUXGIT_RUN_DIR": str(base / "run"),
            "FLUXGIT_MCP_ALLOWED_ROOTS": str(self.root.resolve()),
            "FLUXGIT_MCP_AUDIT_DISABLED": "1",
            "FLUXGIT_MCP_AGENT_POLICY": str(policy),
        }
        git(self.repo, "config", "user.name", "E2E")
        git(self.repo, "config", "user.email", "e2e@example.invalid")
        self.process = subprocess.Popen(
            [gateway_bin(), "serve", "--addr", "127.0.0.1:0"],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        line = self.process.stdout.readline().strip()
        assert line.startswith("FLUXGIT_MCP_HANDSHAKE_ADDR=127.0.0.1:"), line
        self.address = line.split("=", 1)[1]

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([gateway_bin(), *args], env=self.env, stdin=subprocess.DEVNULL, capture_output=True, text=True)

    def approve_on_pty(self, preview_id: str, code: str) -> subprocess.CompletedProcess:
        """A person at a terminal: `approve` reads the code from a pseudo-terminal."""
        master, slave = pty.openpty()
        try:
            os.write(master, f"{code}\n".encode())
            return subprocess.run(
                [gateway_bin(), "approve", preview_id, "--wait", "30"],
                env=self.env,
                stdin=slave,
                capture_output=True,
                text=True,
                timeout=60,
            )
        finally:
            os.close(slave)
            os.close(master)

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


async def poll(client: Client, preview_id: str) -> object:
    for _ in range(100):
        result = await client.call_tool("operation.status", {"previewId": preview_id})
        if result.is_error:
            return result
        if json.loads(result.content[0].text)["data"]["status"] == "completed":
            return result
        await asyncio.sleep(0.1)
    raise AssertionError("no terminal state")


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
            "operation.preview.branch",
            {"repoPath": str(setup.repo), "name": "e2e/feature", "reason": "end-to-end approval", "checkout": False},
        )
        assert proposal.is_error is False, proposal
        data = json.loads(proposal.content[0].text)["data"]
        assert data["accepted"] is True and data["status"] == "pending", data
        preview_id = data["previewId"]

        card = setup.cli("show", preview_id)
        assert card.returncode == 0, card.stderr
        assert "end-to-end approval" in card.stdout and "e2e/feature" in card.stdout, card.stdout
        code = next(line.split(": ", 1)[1] for line in card.stdout.splitlines() if line.startswith("One-time approval code: "))
        refused = setup.cli("approve", preview_id)
        assert refused.returncode != 0 and "interactive terminal" in refused.stderr, refused.stderr
        approved = setup.approve_on_pty(preview_id, code)
        assert approved.returncode == 0, approved.stdout + approved.stderr

        done = await poll(client, preview_id)
        assert done.is_error is False, done
        status = json.loads(done.content[0].text)["data"]
        assert status["status"] == "completed", status
        sha = subprocess.run(["git", "rev-parse", "refs/heads/e2e/feature"], cwd=setup.repo, capture_output=True, text=True, check=True)
        assert status["result"]["newSha"] == sha.stdout.strip()
        assert status["result"]["restorePointId"].startswith("rp-")

        points = await client.call_tool("flux.latestRestorePoint", {"repoPath": str(setup.repo)})
        assert points.is_error is False, points
        assert json.loads(points.content[0].text)["data"]["id"] == status["result"]["restorePointId"]
        # The read routes answer within the sidecar's output schemas (the client validates structuredContent).
        for tool, args in [
            ("flux.restorePoints", {}),
            ("safety.timeline", {"includeReflog": True}),
            ("safety.eventDetails", {}),
            ("diff.semantic", {"base": "HEAD", "head": "HEAD"}),
        ]:
            answer = await client.call_tool(tool, {"repoPath": str(setup.repo), **args})
            assert answer.is_error is False, (tool, answer)
        timeline = json.loads((await client.call_tool("safety.timeline", {"repoPath": str(setup.repo)})).content[0].text)
        kinds = {event["kind"] for event in timeline["data"]["events"]}
        assert {"operation", "restore_point"} <= kinds, timeline

        second = await client.call_tool(
            "operation.preview.commit",
            {"repoPath": str(setup.repo), "message": "never", "stageAll": True, "reason": "to be rejected"},
        )
        second_id = json.loads(second.content[0].text)["data"]["previewId"]
        rejected = setup.cli("reject", second_id, "--reason", "not today")
        assert rejected.returncode == 0, rejected.stderr
        ended = await poll(client, second_id)
        assert ended.is_error is True
        error = json.loads(ended.content[0].text)["error"]
        assert error["code"] == 10004 and error["data"]["status"] == "rejected", error

        third = await client.call_tool(
            "operation.preview.branch", {"repoPath": str(setup.repo), "name": "e2e/withdrawn", "reason": "to be withdrawn"}
        )
        third_id = json.loads(third.content[0].text)["data"]["previewId"]
        cancelled = await client.call_tool("operation.cancel", {"previewId": third_id, "reason": "changed my mind"})
        assert cancelled.is_error is False, cancelled
        assert json.loads(cancelled.content[0].text)["data"]["status"] == "cancelled"
        ended = await poll(client, third_id)
        assert json.loads(ended.content[0].text)["error"]["data"]["status"] == "cancelled"

        denied = await client.call_tool(
            "operation.preview.reset", {"repoPath": str(setup.repo), "targetRef": "HEAD", "mode": "hard", "reason": "denied"}
        )
        assert denied.is_error is True
        error = json.loads(denied.content[0].text)["error"]
        assert error["code"] == 10006 and error["data"]["reason"] == "policy_denied", error
        listing = setup.cli("list", "--all")
        assert second_id in listing.stdout and "reset" not in listing.stdout, listing.stdout


def test_write_path_end_to_end_with_the_reference_gateway(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    try:
        asyncio.run(exercise(setup, tmp_path / "sidecar-run"))
    finally:
        setup.close()
