"""End to end: a write proposal through the real sidecar binary and the official Python MCP client, against a
fake approval gateway (a tiny http.server on 127.0.0.1:0 in this process).

A preview is accepted (a submitted proposal, not a Git result); operation_status is then polled while the fake
gateway moves the proposal pending -> approved -> executing -> completed (isError false, with `result`), and for a
second proposal pending -> rejected (isError true, code 10004).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from test_python_client import git, repo, sidecar_bin  # noqa: F401  (repo is a fixture)
from roots import allowed_roots

# What the gateway answers to the n-th status GET of a proposal (the preview itself makes the first one).
PROGRESS = ["pending", "pending", "approved", "executing"]


class FakeGateway:
    """Records every request; each proposal walks PROGRESS, then ends as its branch name says."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict]] = []
        self.proposals: dict[str, dict] = {}
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def reply(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                gateway.requests.append(("POST", self.path, body))
                preview_id = body["previewId"]
                final = "completed" if body.get("name", "").endswith("complete") else "rejected"
                gateway.proposals[preview_id] = {"operationType": body["operationType"], "polls": 0, "final": final}
                self.reply(202, {"previewId": preview_id, "status": "pending", "expiresAt": "2026-01-01T00:05:00.000Z"})

            def do_GET(self) -> None:
                gateway.requests.append(("GET", self.path, {}))
                preview_id = self.path.rsplit("/", 1)[-1]
                proposal = gateway.proposals.get(preview_id)
                if proposal is None:
                    self.reply(404, {"reason": "unknown_preview", "message": "no such proposal"})
                    return
                polls = proposal["polls"]
                proposal["polls"] += 1
                status = PROGRESS[polls] if polls < len(PROGRESS) else proposal["final"]
                body = {"previewId": preview_id, "operationType": proposal["operationType"], "status": status}
                if status == "completed":
                    body["result"] = {"newSha": "1" * 40, "restorePointId": "rp-1"}
                if status == "rejected":
                    body["reason"] = "the person said no"
                self.reply(200, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host}:{port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def propose_and_poll(client: Client, repo_path: Path, name: str) -> tuple[list[str], object]:
    """Proposes a branch, then polls operation_status until it is terminal; returns the states seen and the last
    result."""
    proposal = await client.call_tool(
        "operation_preview_branch", {"repoPath": str(repo_path), "name": name, "reason": "end-to-end test"}
    )
    assert proposal.is_error is False, proposal
    envelope = json.loads(proposal.content[0].text)
    assert envelope["readOnly"] is False and envelope["source"] == "fluxgit-gateway"
    data = envelope["data"]
    assert data["accepted"] is True and data["status"] == "pending", data
    assert data["nextAction"] == {"tool": "operation_status", "data": {"previewId": data["previewId"]}}
    seen = []
    for _ in range(10):
        result = await client.call_tool("operation_status", {"previewId": data["previewId"]})
        status_envelope = json.loads(result.content[0].text)
        if result.is_error:
            return seen, result
        seen.append(status_envelope["data"]["status"])
        if status_envelope["data"]["status"] == "completed":
            return seen, result
    raise AssertionError(f"no terminal state after 10 polls: {seen}")


async def exercise(mode: str, repo_path: Path, run_dir: Path, gateway: FakeGateway) -> None:
    params = StdioServerParameters(
        command=sidecar_bin(),
        args=[],
        env={
            "FLUXGIT_MCP_ALLOWED_ROOTS": allowed_roots(repo_path),
            "FLUXGIT_RUN_DIR": str(run_dir),
            "FLUXGIT_MCP_AUDIT_DISABLED": "1",
            "FLUXGIT_MCP_PRESENCE_DISABLED": "1",
            "FLUXGIT_MCP_HANDSHAKE_ADDR": f"http://{gateway.address}/",
        },
    )
    async with Client(params, mode=mode) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert listed["operation_status"].annotations.read_only_hint is True
        preview = listed["operation_preview_branch"]
        assert preview.annotations.read_only_hint is False and preview.annotations.idempotent_hint is False
        assert "reason" in preview.input_schema["required"]

        seen, completed = await propose_and_poll(client, repo_path, "e2e/complete")
        assert seen == ["pending", "approved", "executing", "completed"], seen
        data = json.loads(completed.content[0].text)["data"]
        assert data["result"]["restorePointId"] == "rp-1"

        seen, rejected = await propose_and_poll(client, repo_path, "e2e/reject")
        assert seen == ["pending", "approved", "executing"], seen
        assert rejected.is_error is True
        error = json.loads(rejected.content[0].text)["error"]
        assert error["code"] == 10004 and error["data"]["status"] == "rejected", error

    posts = [body for method, _, body in gateway.requests if method == "POST"]
    assert [body["name"] for body in posts] == ["e2e/complete", "e2e/reject"]
    for body in posts:
        assert body["repoPath"] == str(repo_path) and body["operationType"] == "branch"
        assert re.fullmatch(r"[A-Za-z0-9._-]{1,64}", body["agentId"]), body["agentId"]
        assert re.fullmatch(r"branch:call:[0-9a-f-]{36}", body["idempotencyKey"]), body["idempotencyKey"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", body["requestedAt"]), body["requestedAt"]
        assert body["startPoint"] == "HEAD" and body["checkout"] is True


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_proposal_polled_to_completed_and_rejected(mode: str, repo: Path, tmp_path: Path) -> None:  # noqa: F811
    gateway = FakeGateway()
    try:
        asyncio.run(exercise(mode, repo, tmp_path / "run", gateway))
    finally:
        gateway.close()
