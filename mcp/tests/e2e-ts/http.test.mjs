// `serve-http` (Streamable HTTP, issue 49) with a bearer token: the official TypeScript client's
// StreamableHTTPClientTransport in each negotiation mode, and the MCP Inspector CLI with `--transport http`.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { EXPECTED_TOOLS, assertBrief, home, repo, serverEnv, sidecarBin } from './support.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const inspectorBin = join(here, 'node_modules', '.bin', 'mcp-inspector');

let server;
let url;
let token;

/** Adds a token for the repository's parent (the server's roots) and starts `serve-http` on a free port. */
before(async () => {
  const added = spawnSync(
    sidecarBin,
    ['token', 'add', '--file', join(home, 'tokens.json'), '--name', 'ts-e2e', '--roots', dirname(repo)],
    { env: serverEnv, encoding: 'utf8' },
  );
  assert.equal(added.status, 0, added.stderr);
  token = added.stdout.trim();
  server = spawn(
    sidecarBin,
    ['serve-http', '--listen', '127.0.0.1:0', '--tokens', join(home, 'tokens.json')],
    { env: serverEnv, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  url = await new Promise((resolve, reject) => {
    let seen = '';
    server.stderr.on('data', (chunk) => {
      seen += chunk;
      const match = /serving MCP on (http:\/\/\S+)/.exec(seen);
      if (match) resolve(match[1]);
    });
    server.on('exit', (code) => reject(new Error(`serve-http exited ${code}: ${seen}`)));
  });
});

after(() => server?.kill());

const MODES = [
  { mode: 'auto', version: '2026-07-28' },
  { mode: { pin: '2026-07-28' }, version: '2026-07-28' },
  { mode: 'legacy', version: '2025-11-25' },
];

for (const { mode, version } of MODES) {
  describe(`TypeScript client over HTTP, mode ${JSON.stringify(mode)}`, () => {
    it('lists every tool and calls repo_brief with a bearer token', async () => {
      const client = new Client({ name: 'fluxgit-e2e-ts-http', version: '0.1.0' }, { versionNegotiation: { mode } });
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      });
      await client.connect(transport);
      try {
        assert.equal(client.getNegotiatedProtocolVersion(), version);
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((tool) => tool.name).sort(), EXPECTED_TOOLS);
        assert.equal(tools[0].name, 'repo_brief');
        assertBrief(assert, await client.callTool({ name: 'repo_brief', arguments: { repoPath: repo } }));
      } finally {
        await client.close();
      }
    });
  });
}

describe('TypeScript client over HTTP without a token', () => {
  it('fails to connect (401)', async () => {
    const client = new Client({ name: 'fluxgit-e2e-ts-http', version: '0.1.0' }, { versionNegotiation: { mode: 'legacy' } });
    await assert.rejects(client.connect(new StreamableHTTPClientTransport(new URL(url))), (error) => {
      assert.equal(error.status, 401, String(error));
      return true;
    });
  });
});

describe('Inspector CLI, --transport http', () => {
  /** Runs `mcp-inspector --cli URL --transport http ARGS... --format json`. */
  function inspect(args) {
    const run = spawnSync(inspectorBin, ['--cli', url, '--transport', 'http', ...args, '--format', 'json'], {
      env: { PATH: process.env.PATH, HOME: home },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.error, undefined, String(run.error));
    return { status: run.status, json: run.stdout ? JSON.parse(run.stdout) : undefined, stderr: run.stderr };
  }

  it('lists the tools with the bearer token', () => {
    const { status, json, stderr } = inspect(['--header', `Authorization: Bearer ${token}`, '--method', 'tools/list']);
    assert.equal(status, 0, stderr);
    assert.deepEqual(json.result.tools.map((tool) => tool.name).sort(), EXPECTED_TOOLS);
  });

  it('calls repo_brief with the bearer token', () => {
    const args = ['--header', `Authorization: Bearer ${token}`, '--method', 'tools/call', '--tool-name', 'repo_brief',
      '--tool-args-json', JSON.stringify({ repoPath: repo })];
    const { status, json, stderr } = inspect(args);
    assert.equal(status, 0, stderr);
    assertBrief(assert, json.result);
  });

  it('fails without the token', () => {
    const { status } = inspect(['--method', 'tools/list']);
    assert.notEqual(status, 0);
  });
});
