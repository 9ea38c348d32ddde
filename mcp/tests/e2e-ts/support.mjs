// Shared setup for the end-to-end tests with real MCP clients (TypeScript SDK, MCP Inspector CLI).
//
// Environment:
// - FLUXGIT_SIDECAR_BIN: the binary (default: <workspace>/target/debug/fluxgit-mcp-sidecar; build it first).
// - FLUXGIT_E2E_REPO: the repository passed as repoPath (default: this workspace's checkout).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const workspace = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The binary under test, checked to exist. */
export const sidecarBin = resolve(
  process.env.FLUXGIT_SIDECAR_BIN ?? join(workspace, 'target', 'debug', 'fluxgit-mcp-sidecar'),
);
if (!existsSync(sidecarBin)) {
  throw new Error(`sidecar binary not found at ${sidecarBin}: run \`cargo build -p fluxgit-mcp-sidecar\` first`);
}

/** The repository every call reads (canonical path). */
export const repo = realpathSync(process.env.FLUXGIT_E2E_REPO ?? workspace);

/** A fresh HOME for this test process, so neither client nor server touches the real one. */
export const home = mkdtempSync(join(tmpdir(), 'fluxgit-e2e-ts-'));

/** The server's whole environment: allowed roots = the repository's parent, audit and presence off. */
export const serverEnv = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: home,
  FLUXGIT_MCP_ALLOWED_ROOTS: dirname(repo),
  FLUXGIT_RUN_DIR: join(home, 'run'),
  FLUXGIT_MCP_AUDIT_DISABLED: '1',
  FLUXGIT_MCP_PRESENCE_DISABLED: '1',
};

/**
 * Tools the sidecar registers, counted from a plain JSON-RPC `tools/list` over stdio (no SDK involved), so the
 * clients' listings are checked against the server's own and the count never goes stale as tools are added.
 */
export const EXPECTED_TOOL_COUNT = rawToolCount();

function rawToolCount() {
  const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'count', version: '1' } } };
  const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
  const input = `${JSON.stringify(initialize)}\n${JSON.stringify(list)}\n`;
  const run = spawnSync(sidecarBin, [], { input, env: serverEnv, encoding: 'utf8' });
  const answer = run.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line)).find((m) => m.id === 2);
  const count = answer?.result?.tools?.length;
  if (!Number.isInteger(count) || count < 20) {
    throw new Error(`tools/list over plain stdio listed ${count} tools: ${run.stderr}`);
  }
  return count;
}

/** Checks a repo_brief CallToolResult: not an error, structuredContent equal to content[0].text parsed. */
export function assertBrief(assert, result) {
  assert.equal(result.isError ?? false, false, JSON.stringify(result).slice(0, 500));
  const envelope = JSON.parse(result.content[0].text);
  assert.equal(envelope.tool, 'repo_brief');
  assert.equal(envelope.repoPath, repo);
  assert.equal(result.structuredContent?.tool, 'repo_brief');
  assert.deepEqual(result.structuredContent, envelope);
}
