"""End to end: the real sidecar binary, the official Python MCP client and the real reference gateway
(`fluxgit-gateway`) on loopback, on a throwaway repository.

propose (operation_preview_branch) -> `fluxgit-gateway show` prints the card and a one-time code -> a person runs
`fluxgit-gateway approve` on a pseudo-terminal and types the code -> operation_status reports `completed` with the new
sha git shows. A second proposal rejected at the CLI ends as 10004; a proposal the agent policy denies is 10006 and
never reaches a card. Then branchDelete, worktree, push (to a bare repository on this machine, with a concurrent push
between proposal and approval so that a forced push's lease refuses), submodulePointer (record and return),
worktreeRemove (removed, its branch kept, and added back) and a
plan whose third step fails, each checked against git and each undone by `fluxgit-gateway restore` to the
byte-identical refs, HEAD, index, work tree and config.

Environment: FLUXGIT_SIDECAR_BIN and FLUXGIT_GATEWAY_BIN (default: <workspace>/target/debug/...; build first).
"""

from __future__ import annotations

import asyncio
import hashlib
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
operations = ["branch", "commit", "merge", "rebase", "discard", "patch", "plan", "worktree", "push", "branchDelete", "submodulePointer", "worktreeRemove"]
"""


def gateway_bin() -> str:
    path = Path(os.environ.get("FLUXGIT_GATEWAY_BIN", WORKSPACE / "target" / "debug" / "fluxgit-gateway"))
    assert path.is_file(), f"gateway binary not found at {path}: run `cargo build -p fluxgit-gateway` first"
    return str(path)


class Setup:
    """A repository under an allowed root, a run dir and a policy, and the gateway serving them."""

    def __init__(self, base: Path, audit: dict[str, str] | None = None) -> None:
        """`audit`: the ledger's variables (`FLUXGIT_MCP_AUDIT_LOG`, ...) for the gateway; off without them."""
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
        if audit:
            del self.env["FLUXGIT_MCP_AUDIT_DISABLED"]
            self.env.update(audit)
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
        # The approval page's address (its per-launch secret), printed once after the handshake line.
        page = self.process.stdout.readline().strip()
        assert page.startswith(f"FLUXGIT_GATEWAY_PAGE=http://{self.address}/"), page
        self.page = page.split("=", 1)[1]

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([gateway_bin(), *args], env=self.env, stdin=subprocess.DEVNULL, capture_output=True, text=True)

    def approve_on_pty(self, preview_id: str, code: str, *more: str) -> subprocess.CompletedProcess:
        """A person at a terminal: `approve` reads the code (then any further answer) from a pseudo-terminal."""
        master, slave = pty.openpty()
        try:
            os.write(master, "".join(f"{answer}\n" for answer in (code, *more)).encode())
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
        result = await client.call_tool("operation_status", {"previewId": preview_id})
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
            "operation_preview_branch",
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

        points = await client.call_tool("flux_latestRestorePoint", {"repoPath": str(setup.repo)})
        assert points.is_error is False, points
        assert json.loads(points.content[0].text)["data"]["id"] == status["result"]["restorePointId"]
        # The read routes answer within the sidecar's output schemas (the client validates structuredContent).
        for tool, args in [
            ("flux_restorePoints", {}),
            ("safety_timeline", {"includeReflog": True}),
            ("safety_eventDetails", {}),
            ("diff_semantic", {"base": "HEAD", "head": "HEAD"}),
        ]:
            answer = await client.call_tool(tool, {"repoPath": str(setup.repo), **args})
            assert answer.is_error is False, (tool, answer)
        timeline = json.loads((await client.call_tool("safety_timeline", {"repoPath": str(setup.repo)})).content[0].text)
        kinds = {event["kind"] for event in timeline["data"]["events"]}
        assert {"operation", "restore_point"} <= kinds, timeline

        second = await client.call_tool(
            "operation_preview_commit",
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
            "operation_preview_branch", {"repoPath": str(setup.repo), "name": "e2e/withdrawn", "reason": "to be withdrawn"}
        )
        third_id = json.loads(third.content[0].text)["data"]["previewId"]
        cancelled = await client.call_tool("operation_cancel", {"previewId": third_id, "reason": "changed my mind"})
        assert cancelled.is_error is False, cancelled
        assert json.loads(cancelled.content[0].text)["data"]["status"] == "cancelled"
        ended = await poll(client, third_id)
        assert json.loads(ended.content[0].text)["error"]["data"]["status"] == "cancelled"

        denied = await client.call_tool(
            "operation_preview_reset", {"repoPath": str(setup.repo), "targetRef": "HEAD", "mode": "hard", "reason": "denied"}
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


def out(repo: Path, *args: str) -> str:
    """git's stdout (the oracle)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def state(repo: Path) -> str:
    """What a restore must give back byte for byte: HEAD, refs (outside refs/fluxgit/), the index file, the work
    tree's files and modes (the .git entry excluded), the config file."""
    git_dir = Path(out(repo, "rev-parse", "--absolute-git-dir").strip())
    common = Path(out(repo, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    refs = [line for line in out(repo, "for-each-ref", "--format=%(objectname) %(refname)").splitlines() if " refs/fluxgit/" not in line]
    index = git_dir / "index"
    lines = [
        "HEAD " + (git_dir / "HEAD").read_text(),
        *refs,
        "index " + (hashlib.sha256(index.read_bytes()).hexdigest() if index.exists() else "none"),
        "config " + (common / "config").read_text(),
    ]
    for path in sorted(repo.rglob("*")):
        relative = path.relative_to(repo)
        if relative.parts[0] == ".git" or path.is_dir() and not path.is_symlink():
            continue
        content = os.readlink(path) if path.is_symlink() else hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{relative} {oct(path.lstat().st_mode)} {content}")
    return "\n".join(lines)


async def propose(client: Client, tool: str, args: dict) -> str:
    answer = await client.call_tool(tool, args)
    assert answer.is_error is False, (tool, answer)
    data = json.loads(answer.content[0].text)["data"]
    assert data["accepted"] is True and data["status"] == "pending", data
    return data["previewId"]


def show_and_approve(setup: Setup, preview_id: str, *more: str, card_has: tuple[str, ...] = ()) -> None:
    card = setup.cli("show", preview_id)
    assert card.returncode == 0, card.stderr
    for expected in card_has:
        assert expected in card.stdout, (expected, card.stdout)
    code = next(line.split(": ", 1)[1] for line in card.stdout.splitlines() if line.startswith("One-time approval code: "))
    approved = setup.approve_on_pty(preview_id, code, *more)
    assert approved.returncode == 0, approved.stdout + approved.stderr


async def run(client: Client, setup: Setup, tool: str, args: dict, *more: str, card_has: tuple[str, ...] = ()) -> dict:
    """Propose, approve as a person, poll to the end; the completed status data."""
    preview_id = await propose(client, tool, {"repoPath": str(setup.repo), "reason": f"e2e {tool}", **args})
    show_and_approve(setup, preview_id, *more, card_has=card_has)
    done = await poll(client, preview_id)
    assert done.is_error is False, done
    status = json.loads(done.content[0].text)["data"]
    assert status["status"] == "completed", status
    return status


def restore(setup: Setup, preview_id: str) -> None:
    restored = setup.cli("restore", preview_id)
    assert restored.returncode == 0, restored.stdout + restored.stderr


async def later_operations(setup: Setup, run_dir: Path) -> None:
    repo, root = setup.repo, setup.repo.parent
    # History: main (README, then a second commit), old (merged), wip and topic (unmerged), clash (conflicts).
    git(repo, "branch", "old")
    git(repo, "branch", "clash")
    (repo / "README.md").write_text("hello\nworld\n")
    git(repo, "commit", "-q", "-am", "second")
    git(repo, "switch", "-q", "-c", "topic")
    (repo / "t.txt").write_text("topic\n")
    git(repo, "add", "t.txt")
    git(repo, "commit", "-q", "-m", "topic work")
    git(repo, "switch", "-q", "-c", "wip", "main")
    (repo / "w.txt").write_text("wip\n")
    git(repo, "add", "w.txt")
    git(repo, "commit", "-q", "-m", "wip work")
    git(repo, "switch", "-q", "clash")
    (repo / "README.md").write_text("clash\n")
    git(repo, "commit", "-q", "-am", "clash work")
    git(repo, "switch", "-q", "main")

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
        # branchDelete: the merged branch goes, the unmerged one stays; restore brings the tip back.
        before = state(repo)
        status = await run(
            client, setup, "operation_preview_branchDelete",
            {"targets": [{"repoPath": str(repo), "branches": ["old", "wip"]}]},
            "delete 2 branches",
            card_has=("risk: high", "-> DELETE", "unmerged", "delete 2 branches"),
        )
        outcomes = {entry["branch"]: (entry["outcome"], entry.get("reason")) for entry in status["result"]["branches"]}
        assert outcomes == {"old": ("deleted", None), "wip": ("skipped", "unmerged")}, status
        assert out(repo, "branch", "--list", "old") == "" and out(repo, "branch", "--list", "wip") != ""
        restore(setup, status["previewId"])
        assert state(repo) == before

        # worktree at the default path, for a new branch; restore removes it.
        status = await run(client, setup, "operation_preview_worktree", {"branch": "e2e-wt"})
        path = root / "repo.worktrees" / "e2e-wt"
        assert status["result"]["worktreePath"] == str(path), status
        assert f"worktree {path}\n" in out(repo, "worktree", "list", "--porcelain")
        assert out(path, "symbolic-ref", "HEAD").strip() == "refs/heads/e2e-wt"
        restore(setup, status["previewId"])
        assert not path.exists() and state(repo) == before

        # worktreeRemove: a clean worktree whose branch's commits topic holds goes, its branch stays; restore adds it
        # back on its branch.
        rm_path = root / "repo.worktrees" / "e2e-rm"
        git(repo, "worktree", "add", "-q", "-b", "e2e-rm", str(rm_path), "topic")
        status = await run(
            client, setup, "operation_preview_worktreeRemove", {"path": "../repo.worktrees/e2e-rm"},
            card_has=("REMOVE: nothing is lost", "the branch is KEPT"),
        )
        assert not rm_path.exists() and f"worktree {rm_path}\n" not in out(repo, "worktree", "list", "--porcelain")
        assert out(repo, "rev-parse", "e2e-rm") == out(repo, "rev-parse", "topic"), "the branch is kept"
        restore(setup, status["previewId"])
        assert out(rm_path, "symbolic-ref", "HEAD").strip() == "refs/heads/e2e-rm"
        git(repo, "worktree", "remove", str(rm_path))
        git(repo, "branch", "-D", "e2e-rm")

        # push to a bare repository on this machine, setting the upstream; restore gives the local side back.
        git(root, "init", "-q", "--bare", "-b", "main", "remote.git")
        remote = root / "remote.git"
        git(repo, "remote", "add", "origin", str(remote))
        git(repo, "push", "-q", "origin", "main")
        git(root, "clone", "-q", "remote.git", "elsewhere")
        elsewhere = root / "elsewhere"
        (repo / "p.txt").write_text("pushed\n")
        git(repo, "add", "p.txt")
        git(repo, "commit", "-q", "-m", "to push")
        before = state(repo)
        status = await run(client, setup, "operation_preview_push", {"setUpstream": True}, card_has=("to push",))
        assert status["result"]["newSha"] == out(repo, "rev-parse", "main").strip() == out(remote, "rev-parse", "main").strip()
        assert out(repo, "config", "branch.main.remote").strip() == "origin"
        restore(setup, status["previewId"])
        assert state(repo) == before

        # A forced push with lease, and someone else pushes between the proposal and the approval: refused.
        git(repo, "fetch", "-q", "origin")
        git(repo, "reset", "-q", "--hard", "HEAD~1")
        (repo / "p.txt").write_text("rewritten\n")
        git(repo, "add", "p.txt")
        git(repo, "commit", "-q", "-m", "rewritten")
        lease = out(repo, "rev-parse", "refs/remotes/origin/main").strip()
        preview_id = await propose(
            client, "operation_preview_push", {"repoPath": str(repo), "reason": "rewrite the remote", "forceWithLease": True}
        )
        git(elsewhere, "pull", "-q", "origin", "main")
        (elsewhere / "e.txt").write_text("elsewhere\n")
        git(elsewhere, "add", "e.txt")
        git(elsewhere, "commit", "-q", "-m", "concurrent")
        git(elsewhere, "push", "-q", "origin", "main")
        concurrent = out(elsewhere, "rev-parse", "HEAD").strip()
        show_and_approve(setup, preview_id, "main", card_has=("risk: high", f"--force-with-lease=refs/heads/main:{lease}", "Strong confirmation"))
        ended = await poll(client, preview_id)
        assert ended.is_error is True, ended
        error = json.loads(ended.content[0].text)["error"]
        assert error["code"] == 10004 and error["data"]["status"] == "failed" and error["data"]["reason"] == "lease_refused", error
        assert out(remote, "rev-parse", "main").strip() == concurrent, "nothing was pushed"

        # submodulePointer: record the checked-out commit, then return to the recorded one; restore undoes each.
        lib_src = root / "libsrc"
        lib_src.mkdir()
        git(lib_src, "init", "-q", "-b", "main")
        for n in (1, 2):
            (lib_src / "lib.txt").write_text(f"version {n}\n")
            git(lib_src, "add", "lib.txt")
            git(lib_src, "commit", "-q", "-m", f"c{n}")
        git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib_src), "lib")
        git(repo, "commit", "-q", "-m", "add lib")
        lib = repo / "lib"
        c1, c2 = out(lib, "rev-parse", "HEAD~1").strip(), out(lib, "rev-parse", "HEAD").strip()
        git(lib, "checkout", "-q", "--detach", c1)
        before = (state(repo), state(lib))
        status = await run(
            client, setup, "operation_preview_submodulePointer",
            {"relativePath": "lib", "direction": "record", "expectedRecordedOid": c2, "expectedCheckedOutOid": c1},
            card_has=(f"recorded in the parent's HEAD: {c2}",),
        )
        assert out(repo, "rev-parse", "HEAD:lib").strip() == c1 == status["result"]["recordedOid"]
        assert out(repo, "show", "--name-only", "--format=", "HEAD").strip() == "lib"
        restore(setup, status["previewId"])
        assert (state(repo), state(lib)) == before
        status = await run(client, setup, "operation_preview_submodulePointer", {"relativePath": "lib", "direction": "return"})
        assert out(lib, "rev-parse", "HEAD").strip() == c2 == status["result"]["checkedOutOid"]
        restore(setup, status["previewId"])
        assert (state(repo), state(lib)) == before

        # A plan whose third step fails: steps 1-2 done and reported, 3 failed, 4 not run; the checkpoint restores all.
        (repo / "README.md").write_text("uncommitted\n")
        before = state(repo)
        patch = "diff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+new\n"
        steps = [
            {"type": "discard", "paths": ["README.md"]},
            {"type": "merge", "sourceRef": "topic", "targetRef": "main"},
            {"type": "merge", "sourceRef": "clash", "targetRef": "main"},
            {"type": "patch", "patchContent": patch},
        ]
        preview_id = await propose(client, "operation_preview_plan", {"repoPath": str(repo), "reason": "e2e plan", "steps": steps})
        show_and_approve(setup, preview_id, card_has=("Step 1 of 4: discard", "Step 3 of 4: merge", "CONFLICTS predicted", "Step 4 of 4: patch"))
        ended = await poll(client, preview_id)
        assert ended.is_error is True, ended
        data = json.loads(ended.content[0].text)["error"]["data"]
        assert data["status"] == "failed" and data["reason"] == "step_failed", data
        assert [step["status"] for step in data["result"]["steps"]] == ["completed", "completed", "failed", "not_run"], data
        assert data["result"]["steps"][2]["result"]["conflicts"] == ["README.md"], data
        assert (repo / "t.txt").exists() and not (repo / "n.txt").exists() and (repo / "README.md").read_text() == "hello\nworld\n"
        restore(setup, preview_id)
        assert state(repo) == before


def test_the_later_operations_end_to_end_with_restore(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    try:
        asyncio.run(later_operations(setup, tmp_path / "sidecar-run"))
    finally:
        setup.close()
