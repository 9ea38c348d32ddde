// Shared setup for the end-to-end tests with real MCP clients (TypeScript SDK, MCP Inspector CLI).
//
// Environment:
// - FLUXGIT_SIDECAR_BIN: the binary (default: <workspace>/target/debug/fluxgit-mcp-sidecar; build it first).
// - FLUXGIT_E2E_REPO: the repository passed as repoPath (default: this workspace's checkout).
import { existsSync, mkdtempSync, readFileSync, realpathSync } from 'node:fs';
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
 * The tools the sidecar lists without a gateway, sorted: the `## \`name\`` headings of `docs/tools.md` whose
 * summary line does not say "listed only with a gateway". That file is the reference a Rust test keeps equal to
 * the server's own `docs tools` output; it is read here, not the server under test, so a tool the server stops
 * listing fails.
 */
export const EXPECTED_TOOLS = localTools(readFileSync(join(workspace, 'docs', 'tools.md'), 'utf8'));

function localTools(markdown) {
  const lines = markdown.split('\n');
  const names = [];
  lines.forEach((line, index) => {
    const name = /^## `([A-Za-z_]+)`$/.exec(line)?.[1];
    const summary = lines.slice(index + 1).find((next) => next.trim() !== '') ?? '';
    if (name && !summary.includes('listed only with a gateway')) {
      names.push(name);
    }
  });
  return names.sort();
}
if (EXPECTED_TOOLS.length < 20) {
  throw new Error(`docs/tools.md names ${EXPECTED_TOOLS.length} tools`);
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
