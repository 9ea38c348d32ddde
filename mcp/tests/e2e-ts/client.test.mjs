// The official TypeScript MCP client (@modelcontextprotocol/client 2.4.0) against the real sidecar over stdio, in
// each negotiation mode: auto (server/discover probe), pinned 2026-07-28, and legacy (initialize handshake).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { EXPECTED_TOOLS, assertBrief, repo, serverEnv, sidecarBin } from './support.mjs';

const MODES = [
  { mode: 'auto', version: '2026-07-28', era: 'modern' },
  { mode: { pin: '2026-07-28' }, version: '2026-07-28', era: 'modern' },
  { mode: 'legacy', version: '2025-11-25', era: 'legacy' },
];

/** Connects a client in `mode` to a freshly spawned sidecar; the caller closes it. */
async function connect(mode) {
  const client = new Client({ name: 'fluxgit-e2e-ts', version: '0.1.0' }, { versionNegotiation: { mode } });
  await client.connect(new StdioClientTransport({ command: sidecarBin, args: [], env: serverEnv, stderr: 'pipe' }));
  return client;
}

for (const { mode, version, era } of MODES) {
  describe(`TypeScript client, mode ${JSON.stringify(mode)}`, () => {
    let client;
    it('connects in the expected era', async () => {
      client = await connect(mode);
      assert.equal(client.getNegotiatedProtocolVersion(), version);
      assert.equal(client.getProtocolEra(), era);
      assert.equal(client.getServerVersion()?.name, 'fluxgit-mcp-sidecar');
    });

    it('lists every tool, repo_brief first', async () => {
      const { tools } = await client.listTools();
      const names = tools.map((tool) => tool.name);
      assert.deepEqual([...names].sort(), EXPECTED_TOOLS);
      assert.equal(new Set(names).size, names.length, 'duplicate tool names');
      assert.equal(names[0], 'repo_brief');
      assert.ok(names.includes('agents_presence'), names.join(', '));
      for (const tool of tools) {
        assert.equal(tool.inputSchema.type, 'object', tool.name);
        assert.equal(typeof tool.annotations?.readOnlyHint, 'boolean', tool.name);
      }
    });

    it('calls repo_brief', async () => {
      assertBrief(assert, await client.callTool({ name: 'repo_brief', arguments: { repoPath: repo } }));
    });

    it('calls repo_status with format text', async () => {
      const result = await client.callTool({ name: 'repo_status', arguments: { repoPath: repo, format: 'text' } });
      assert.equal(result.isError ?? false, false, JSON.stringify(result).slice(0, 500));
      const text = result.content[0].text;
      assert.ok(text.startsWith('## '), text);
      assert.equal(result.structuredContent?.tool, 'repo_status');
      assert.ok(text.includes(result.structuredContent.data.head.sha), text);
    });

    it('rejects an unknown tool and bad arguments with -32602', async () => {
      await assert.rejects(client.callTool({ name: 'nope.tool', arguments: {} }), {
        code: -32602,
        message: /Unknown tool: nope\.tool/,
      });
      for (const args of [{}, { repoPath: 5 }]) {
        await assert.rejects(client.callTool({ name: 'repo_brief', arguments: args }), {
          code: -32602,
          message: /Invalid arguments for tool repo_brief/,
        });
      }
    });

    it('answers a gateway-only tool with isError and code 10001', async () => {
      const result = await client.callTool({ name: 'flux_restorePoints', arguments: { repoPath: repo } });
      assert.equal(result.isError, true);
      const envelope = JSON.parse(result.content[0].text);
      assert.equal(envelope.tool, 'flux_restorePoints');
      assert.equal(envelope.error.code, 10001);
      assert.equal(typeof envelope.error.data.upgradeHint, 'string');
    });

    it('closes', async () => {
      await client.close();
    });
  });
}
