#!/usr/bin/env python3
"""warm.py BINARY REPO N: cold call, wait for watches, N warm repo.status calls; prints median wall and server CPU/call."""
import json, os, subprocess, sys, time, tempfile, statistics
binary, repo, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
tool = os.environ.get("TOOL", "repo.status")
run = tempfile.mkdtemp(prefix="status-run-")
env = {"PATH": os.environ["PATH"], "HOME": run, "FLUXGIT_MCP_ALLOWED_ROOTS": "/tmp/status-fx",
       "FLUXGIT_RUN_DIR": run, "FLUXGIT_MCP_AUDIT_DISABLED": "1", "FLUXGIT_MCP_PRESENCE_DISABLED": "1"}
p = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
nid = [0]
def req(method, params):
    nid[0] += 1
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": nid[0], "method": method, "params": params}) + "\n").encode()); p.stdin.flush()
    while True:
        line = json.loads(p.stdout.readline())
        if line.get("id") == nid[0]: return line
req("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "d", "version": "0"}})
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'); p.stdin.flush()
def cpu():
    f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def call():
    t = time.perf_counter(); r = req("tools/call", {"name": tool, "arguments": {"repoPath": repo}}); return (time.perf_counter() - t) * 1000
time.sleep(1)
cold = call()
time.sleep(float(os.environ.get("SETTLE", "6")))
call(); call()
if os.environ.get("PERF"):
    pr = subprocess.Popen(["perf", "record", "-F", "4999", "-g", "-p", str(p.pid), "-o", os.environ["PERF"]], stderr=subprocess.DEVNULL)
    time.sleep(1)
c0 = cpu()
gap = float(os.environ.get("GAP", "0"))
def paced():
    time.sleep(gap); return call()
samples = [paced() for _ in range(n)]
c1 = cpu()
if os.environ.get("PERF"):
    pr.send_signal(2); pr.wait()
s = sorted(samples)
print("%s cold %.0f ms | warm median %.3f p10 %.3f p90 %.3f ms | server cpu/call %.3f ms | load %s" % (os.path.basename(binary), cold, statistics.median(s), s[n//10], s[9*n//10], (c1-c0)*1000/n, open('/proc/loadavg').read().split()[0]))
p.stdin.close(); p.wait()
