#!/usr/bin/env python3
"""Warm `repo_brief` over loopback Streamable HTTP (`serve-http`) against stdio, and many HTTP clients at once.

Usage: scripts/bench_http.py BINARY REPO [--calls N] [--clients C]

One server of each transport, with audit and presence off; both get the same warm-up, then N `repo_brief` calls
one after the other, alternating transports call by call so that load on the machine falls on both alike. HTTP
calls reuse one keep-alive connection (as the SDK clients do). Then C threads each open their own connection and
make one call at once: every call must be answered once, and the p50/p99 of those are printed. Standard library
only; prints one line per measure.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import tempfile
import threading
import time


def brief(call_id: int, repo: str) -> dict:
    return {"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
            "params": {"name": "repo_brief", "arguments": {"repoPath": repo},
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}}}}


def check(reply: dict, call_id: int) -> None:
    assert reply.get("id") == call_id and reply["result"]["isError"] is False, reply


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("repo")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--clients", type=int, default=100)
    args = parser.parse_args()
    repo = os.path.realpath(args.repo)
    home = tempfile.mkdtemp(prefix="bench-http-")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
           "FLUXGIT_MCP_ALLOWED_ROOTS": os.path.dirname(repo), "FLUXGIT_RUN_DIR": os.path.join(home, "run"),
           "FLUXGIT_MCP_AUDIT_DISABLED": "1", "FLUXGIT_MCP_PRESENCE_DISABLED": "1"}

    stdio = subprocess.Popen([args.binary], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, bufsize=1)
    served = subprocess.Popen([args.binary, "serve-http", "--listen", "127.0.0.1:0"], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    address = None
    for line in served.stderr:
        match = re.search(r"serving MCP on http://([^/\s]+)(/\S*)", line)
        if match:
            address, path = match.group(1), match.group(2)
            break
    assert address, "serve-http did not start"
    threading.Thread(target=served.stderr.read, daemon=True).start()
    host, port = address.rsplit(":", 1)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def over_stdio(call_id: int) -> float:
        started = time.perf_counter()
        stdio.stdin.write(json.dumps(brief(call_id, repo)) + "\n")
        stdio.stdin.flush()
        reply = json.loads(stdio.stdout.readline())
        elapsed = time.perf_counter() - started
        check(reply, call_id)
        return elapsed

    connection = http.client.HTTPConnection(host, int(port))

    def over_http(call_id: int, conn: http.client.HTTPConnection = connection) -> float:
        started = time.perf_counter()
        conn.request("POST", path, body=json.dumps(brief(call_id, repo)), headers=headers)
        response = conn.getresponse()
        body = response.read()
        elapsed = time.perf_counter() - started
        assert response.status == 200, (response.status, body)
        check(json.loads(body), call_id)
        return elapsed

    try:
        for call_id in range(1, 21):
            over_stdio(call_id)
            over_http(call_id)
        stdio_times, http_times = [], []
        for call_id in range(100, 100 + args.calls):
            stdio_times.append(over_stdio(call_id))
            http_times.append(over_http(call_id))
        stdio_ms = statistics.median(stdio_times) * 1000
        http_ms = statistics.median(http_times) * 1000
        print(f"warm repo_brief, median of {args.calls}: stdio {stdio_ms:.2f} ms, loopback HTTP {http_ms:.2f} ms, "
              f"HTTP/stdio {http_ms / stdio_ms:.2f}x")

        answered: list[float] = []
        failures: list[str] = []
        start = threading.Barrier(args.clients)

        def client(index: int) -> None:
            try:
                conn = http.client.HTTPConnection(host, int(port), timeout=60)
                start.wait()
                answered.append(over_http(10_000 + index, conn))
                conn.close()
            except Exception as error:  # noqa: BLE001 (reported below)
                failures.append(repr(error))

        threads = [threading.Thread(target=client, args=(index,)) for index in range(args.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        answered.sort()
        p99 = answered[max(0, int(len(answered) * 0.99) - 1)] * 1000 if answered else float("nan")
        print(f"{args.clients} concurrent HTTP clients: {len(answered)} answered once, {len(failures)} failed, "
              f"p50 {statistics.median(answered) * 1000:.1f} ms, p99 {p99:.1f} ms")
        for failure in failures[:5]:
            print(f"  failure: {failure}")
    finally:
        stdio.stdin.close()
        stdio.wait(timeout=10)
        served.terminate()
        served.wait(timeout=10)


if __name__ == "__main__":
    main()
