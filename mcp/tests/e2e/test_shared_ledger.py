"""End to end: one signed audit ledger shared by two sidecars and the reference gateway, all appending at once.

Two sidecar processes (the official Python MCP client, one session each) send read calls concurrently while the
first also sends branch proposals that `fluxgit-gateway reject` decides, from threads of their own, as they arrive:
three kinds of writer (sidecar tool calls, the gateway's human decisions) append under the ledger's cross-process
lock at the same time. `fluxgit-mcp-sidecar verify-audit --require-signed` must then find one valid chain with
every entry: each call the clients got a reply to and each decision the gateway took.

Environment: FLUXGIT_SIDECAR_BIN and FLUXGIT_GATEWAY_BIN (default: <workspace>/target/debug/...; build first).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections import Counter
from pathlib import Path

from mcp import Client, StdioServerParameters

from test_gateway import Setup
from test_python_client import sidecar_bin

READS_PER_SIDECAR = 120
PROPOSALS = 8


def sidecar(setup: Setup, audit: dict[str, str], run_dir: Path) -> Client:
    env = {
        "PATH": setup.env["PATH"],
        "HOME": setup.env["HOME"],
        "FLUXGIT_MCP_ALLOWED_ROOTS": setup.env["FLUXGIT_MCP_ALLOWED_ROOTS"],
        "FLUXGIT_RUN_DIR": str(run_dir),
        "FLUXGIT_MCP_PRESENCE_DISABLED": "1",
        "FLUXGIT_MCP_HANDSHAKE_ADDR": setup.address,
        **audit,
    }
    return Client(StdioServerParameters(command=sidecar_bin(), args=[], env=env))


async def reads(client: Client, repo: Path) -> int:
    tools = ["repo_status", "repo_refs", "repo_history", "worktree_changes"]
    calls = [client.call_tool(tools[i % len(tools)], {"repoPath": str(repo)}) for i in range(READS_PER_SIDECAR)]
    answers = await asyncio.gather(*calls)
    assert all(answer.is_error is False for answer in answers), [a for a in answers if a.is_error][:1]
    return len(answers)


async def proposals_rejected(client: Client, setup: Setup) -> int:
    decided = 0
    for index in range(PROPOSALS):
        proposal = await client.call_tool(
            "operation_preview_branch",
            {"repoPath": str(setup.repo), "name": f"shared/{index}", "reason": "shared ledger", "checkout": False},
        )
        assert proposal.is_error is False, proposal
        preview_id = json.loads(proposal.content[0].text)["data"]["previewId"]
        rejected = await asyncio.to_thread(setup.cli, "reject", preview_id, "--reason", "ledger test")
        assert rejected.returncode == 0, rejected.stderr
        decided += 1
    return decided


def test_two_sidecars_and_the_gateway_append_to_one_valid_chain(tmp_path: Path) -> None:
    key = tmp_path / "audit.pem"
    made = subprocess.run([sidecar_bin(), "audit-keygen", str(key)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    ledger = tmp_path / "audit" / "mcp.jsonl"
    audit = {"FLUXGIT_MCP_AUDIT_LOG": str(ledger), "FLUXGIT_MCP_AUDIT_SIGN_KEY": str(key)}
    setup = Setup(tmp_path, audit)
    try:

        async def both() -> tuple[int, int, int]:
            async with sidecar(setup, audit, tmp_path / "run-a") as first, sidecar(setup, audit, tmp_path / "run-b") as second:
                return await asyncio.gather(reads(first, setup.repo), reads(second, setup.repo), proposals_rejected(first, setup))

        read_a, read_b, decided = asyncio.run(both())
    finally:
        setup.close()

    verified = subprocess.run(
        [sidecar_bin(), "verify-audit", str(ledger), "--pubkey", f"{key}.pub.pem", "--require-signed"],
        capture_output=True,
        text=True,
        env={"PATH": setup.env["PATH"], "HOME": setup.env["HOME"]},
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    entries = [json.loads(line) for line in ledger.read_text().splitlines()]
    kinds = Counter(entry["event_type"] for entry in entries)
    # Every read and every proposal the clients got a reply to, and every decision, is one entry of the chain.
    assert kinds["tool_call"] == read_a + read_b + PROPOSALS, kinds
    assert kinds["human_decision"] == decided == PROPOSALS, kinds
    assert ["entries:", str(len(entries))] in [line.split() for line in verified.stdout.splitlines()], verified.stdout
    # The writers really were at it at once: the gateway's decisions fall between the sidecars' calls.
    order = [entry["event_type"] for entry in entries]
    assert order.index("human_decision") < len(order) - 1 - order[::-1].index("tool_call"), order
