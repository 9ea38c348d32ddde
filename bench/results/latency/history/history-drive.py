#!/usr/bin/env python3
"""Drive one sidecar server over stdio: warm-up call on WARM repo, then the measured call(s) on TARGET.
usage: history-drive.py [--valgrind OUTFILE] [--toggle FN] BINARY WARM_REPO TARGET_REPO TOOL ARGS_JSON [TOOL ARGS_JSON ...]
Prints each measured call's wall ms and answer size. Under --valgrind, callgrind collects only inside --toggle FN."""
import json, os, subprocess, sys, time
argv = sys.argv[1:]
vg = None; toggle = '*protocol*Server*run_call*'; rundir = None
while argv[0].startswith('--'):
    if argv[0] == '--valgrind': vg = argv[1]; argv = argv[2:]
    elif argv[0] == '--toggle': toggle = argv[1]; argv = argv[2:]
    elif argv[0] == '--rundir': rundir = argv[1]; argv = argv[2:]
binary, warm, target = argv[:3]
calls = list(zip(argv[3::2], argv[4::2]))
rundir = rundir or f'/tmp/history-run-{os.getpid()}'
env = {'PATH': os.environ['PATH'], 'HOME': '/tmp/history-home', 'FLUXGIT_MCP_ALLOWED_ROOTS': '/tmp',
       'FLUXGIT_RUN_DIR': rundir, 'FLUXGIT_MCP_AUDIT_DISABLED': '', 'FLUXGIT_MCP_PRESENCE_DISABLED': '',
       'LC_ALL': 'C', 'TZ': 'UTC'}
cmd = [binary]
if vg:
    cmd = ['valgrind', '--tool=callgrind', '--collect-atstart=no', f'--toggle-collect={toggle}',
           f'--callgrind-out-file={vg}', '--dump-instr=no'] + cmd
p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
n = 0
def req(method, params):
    global n
    n += 1
    p.stdin.write((json.dumps({'jsonrpc': '2.0', 'id': n, 'method': method, 'params': params}) + '\n').encode()); p.stdin.flush()
    while True:
        line = p.stdout.readline()
        if not line: raise SystemExit('server closed')
        m = json.loads(line)
        if m.get('id') == n: return m
req('initialize', {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'h', 'version': '0'}})
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'); p.stdin.flush()
req('tools/list', {})
def call(tool, args, repo):
    a = json.loads(args); a['repoPath'] = repo
    t = time.perf_counter(); m = req('tools/call', {'name': tool, 'arguments': a}); ms = (time.perf_counter() - t) * 1000
    text = m['result']['content'][0]['text'] if 'result' in m else json.dumps(m)
    return ms, text, m.get('result', {}).get('isError')
for tool, args in calls:  # warm-up: the same tools on another repository
    call(tool, args, warm)
time.sleep(float(os.environ.get('SETTLE', '2' if not vg else '20')))
def ticks():
    out = {}
    for t in os.listdir(f'/proc/{p.pid}/task'):
        try:
            name = open(f'/proc/{p.pid}/task/{t}/comm').read().strip()
            out[t + ':' + name] = int(open(f'/proc/{p.pid}/task/{t}/schedstat').read().split()[0])
        except OSError: pass
    return out
for tool, args in calls:
    before = ticks(); c0 = time.process_time()
    ms, text, err = call(tool, args, target)
    after = ticks()
    busy = {k.split(':')[1]: round((v - before.get(k, 0)) / 1e6, 3) for k, v in after.items() if v - before.get(k, 0) > 10000}
    print(f'{tool} wall_ms={ms:.2f} cpu_ms={sum(busy.values()):.3f} bytes={len(text)} err={err} threads={busy}', flush=True)
    if os.environ.get('SHOW'): print(text[:3000])
p.stdin.close(); p.wait()
