// Shared by the browser tests: Debian's Chromium through playwright-core (never a downloaded browser), a throwaway
// repository built with the git CLI, and the real gateway binary serving it on 127.0.0.1:0.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const WORKSPACE = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

export function gatewayBin() {
  return process.env.FLUXGIT_GATEWAY_BIN || join(WORKSPACE, 'target', 'debug', 'fluxgit-gateway');
}

/** Chromium with a fresh profile (its own --user-data-dir), removed by `close`. */
export async function launchBrowser(viewport = { width: 1280, height: 860 }) {
  const profile = mkdtempSync(join(tmpdir(), 'fluxgit-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport,
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export function git(repo, ...args) {
  return execFileSync('git', args, {
    cwd: repo,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
      GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
    },
  }).trim();
}

/** main (a.txt, b.txt, then a second commit changing a.txt), topic (adds t.txt), clash (changes a.txt). */
export function makeRepo(root, name) {
  const repo = join(root, name);
  execFileSync('mkdir', ['-p', repo]);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'config', 'user.name', 'Test Person');
  git(repo, 'config', 'user.email', 'person@example.invalid');
  writeFileSync(join(repo, 'a.txt'), 'one\n');
  writeFileSync(join(repo, 'b.txt'), 'bee\n');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'first');
  git(repo, 'branch', 'topic');
  git(repo, 'branch', 'clash');
  writeFileSync(join(repo, 'a.txt'), 'one\ntwo\n');
  git(repo, 'commit', '-q', '-am', 'second');
  git(repo, 'switch', '-q', 'topic');
  writeFileSync(join(repo, 't.txt'), 'topic\n');
  git(repo, 'add', 't.txt');
  git(repo, 'commit', '-q', '-m', 'topic work');
  git(repo, 'switch', '-q', 'clash');
  writeFileSync(join(repo, 'a.txt'), 'clash\n');
  git(repo, 'commit', '-q', '-am', 'clash work');
  git(repo, 'switch', '-q', 'main');
  return repo;
}

/** A sandbox (allowed root, home, run dir), one repository, and `fluxgit-gateway serve` on 127.0.0.1:0. */
export async function startGateway() {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'fluxgit-page-')));
  const root = join(base, 'root');
  const repo = makeRepo(root, 'repo');
  const env = {
    PATH: process.env.PATH,
    HOME: base,
    GIT_CONFIG_NOSYSTEM: '1',
    FLUXGIT_RUN_DIR: join(base, 'run'),
    FLUXGIT_MCP_ALLOWED_ROOTS: root,
    FLUXGIT_MCP_AUDIT_LOG: join(base, 'run', 'audit', 'mcp.jsonl'),
    FLUXGIT_GATEWAY_LOG: 'warn',
  };
  const child = spawn(gatewayBin(), ['serve', '--addr', '127.0.0.1:0'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const iterator = lines[Symbol.asyncIterator]();
  const first = (await iterator.next()).value ?? '';
  const second = (await iterator.next()).value ?? '';
  if (!first.startsWith('FLUXGIT_MCP_HANDSHAKE_ADDR=') || !second.startsWith('FLUXGIT_GATEWAY_PAGE=')) {
    child.kill();
    throw new Error(`unexpected gateway output: ${first} / ${second}`);
  }
  return {
    base,
    repo,
    addr: first.split('=')[1],
    page: second.split('=')[1],
    async stop() {
      child.kill('SIGTERM');
      await new Promise((done) => child.once('exit', done));
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/** One request to the sidecar-facing API as the sidecar makes it (no Origin). */
export function api(addr, method, path, body) {
  const [host, port] = addr.split(':');
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((done, fail) => {
    const request = http.request(
      { host, port, method, path, headers: payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {} },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => { text += chunk; });
        response.on('end', () => done({ status: response.statusCode, body: text ? JSON.parse(text) : null }));
      },
    );
    request.on('error', fail);
    request.end(payload);
  });
}

/** A proposal body as the sidecar sends it. */
export function proposal(id, op, repo, fields, agent = 'claude-code', reason = `test ${op}`) {
  return {
    previewId: id,
    agentId: agent,
    idempotencyKey: `${op}:call:${id}`,
    operationType: op,
    repoPath: repo,
    reason,
    requestedAt: new Date().toISOString(),
    ...fields,
  };
}

export async function propose(gateway, body) {
  const answer = await api(gateway.addr, 'POST', `/v1/mcp/operation/preview/${body.operationType}`, body);
  if (answer.status !== 202) throw new Error(`proposal refused: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

export async function status(gateway, id) {
  return (await api(gateway.addr, 'GET', `/v1/mcp/operation/status/${id}`)).body;
}

/** Polls the sidecar-facing status until it is terminal (10 s at most). */
export async function terminal(gateway, id) {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const body = await status(gateway, id);
    if (['completed', 'failed', 'rejected', 'cancelled', 'expired'].includes(body.status)) return body;
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`${id} did not end`);
}
