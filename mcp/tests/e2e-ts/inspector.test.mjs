// The MCP Inspector CLI (@modelcontextprotocol/inspector 2.12.0, `mcp-inspector --cli`) against the real sidecar:
// legacy era as an ad-hoc target, modern era through a config file with "protocolEra": "modern". The server logs
// each request's method at debug level, which proves which handshake the Inspector used.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { EXPECTED_TOOLS, assertBrief, home, repo, serverEnv, sidecarBin } from './support.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const inspectorBin = join(here, 'node_modules', '.bin', 'mcp-inspector');
const env = { ...serverEnv, RUST_LOG: 'debug' };

const configPath = join(home, 'inspector.json');
writeFileSync(
  configPath,
  JSON.stringify({ mcpServers: { fluxgit: { command: sidecarBin, args: [], env, protocolEra: 'modern' } } }),
);

const ERAS = [
  {
    era: 'legacy',
    target: [...Object.entries(env).flatMap(([key, value]) => ['-e', `${key}=${value}`]), sidecarBin],
    handshake: 'method=initialize',
  },
  { era: 'modern', target: ['--config', configPath, '--server', 'fluxgit'], handshake: 'method=server/discover' },
];

/** Runs `mcp-inspector --cli TARGET... ARGS... --format json`; returns exit status, parsed stdout, stderr. */
function inspect(target, args) {
  const run = spawnSync(inspectorBin, ['--cli', ...target, ...args, '--format', 'json'], {
    env: { PATH: process.env.PATH, HOME: home },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(run.error, undefined, String(run.error));
  return { status: run.status, json: run.stdout ? JSON.parse(run.stdout) : undefined, stderr: run.stderr };
}

/** The tool names the TypeScript client lists, as the reference. */
async function referenceNames() {
  const client = new Client({ name: 'fluxgit-e2e-ts', version: '0.1.0' });
  await client.connect(new StdioClientTransport({ command: sidecarBin, env: serverEnv, stderr: 'pipe' }));
  try {
    return (await client.listTools()).tools.map((tool) => tool.name);
  } finally {
    await client.close();
  }
}

for (const { era, target, handshake } of ERAS) {
  describe(`Inspector CLI, ${era} era`, () => {
    let expected;
    before(async () => {
      expected = await referenceNames();
    });

    it('lists the same tools as the TypeScript client', () => {
      const { status, json, stderr } = inspect(target, ['--method', 'tools/list']);
      assert.equal(status, 0, stderr);
      assert.match(stderr, new RegExp(handshake.replace('/', '\\/')));
      const names = json.result.tools.map((tool) => tool.name);
      assert.deepEqual([...names].sort(), EXPECTED_TOOLS);
      assert.deepEqual(names, expected);
    });

    it('calls repo_brief', () => {
      const args = ['--method', 'tools/call', '--tool-name', 'repo_brief', '--tool-args-json', JSON.stringify({ repoPath: repo })];
      const { status, json, stderr } = inspect(target, args);
      assert.equal(status, 0, stderr);
      assertBrief(assert, json.result);
    });

    it('exits 5 on an unknown tool and on a tool that is not listed', () => {
      const unknown = inspect(target, ['--method', 'tools/call', '--tool-name', 'nope.tool']);
      assert.equal(unknown.status, 5, unknown.stderr);
      // Without a gateway the gateway-only tools are not listed, so the Inspector refuses them as it refuses an
      // unknown tool; their 10001 answer to a direct call is checked through the TypeScript client above.
      const gateway = inspect(target, [
        '--method', 'tools/call', '--tool-name', 'flux_restorePoints', '--tool-args-json', JSON.stringify({ repoPath: repo }),
      ]);
      assert.equal(gateway.status, 5, gateway.stderr);
    });
  });
}
