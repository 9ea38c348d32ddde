#!/usr/bin/env node
// Starts the fluxgit-mcp-sidecar binary of this platform's package (an optional dependency that npm installed
// because its os and cpu fields match), passing arguments, stdio and the exit status through unchanged.
'use strict';

const { spawnSync } = require('node:child_process');
const path = require('node:path');

const platformPackage = `fluxgit-mcp-${process.platform}-${process.arch}`;
const executable = process.platform === 'win32' ? 'fluxgit-mcp-sidecar.exe' : 'fluxgit-mcp-sidecar';

let binary;
try {
  binary = path.join(path.dirname(require.resolve(`${platformPackage}/package.json`)), 'bin', executable);
} catch {
  process.stderr.write(
    `fluxgit-mcp: no prebuilt binary for ${process.platform}-${process.arch} (the package ${platformPackage} ` +
      'is not installed). npm skips it when optional dependencies are turned off (--omit=optional, ' +
      '--no-optional) or when no such package is published; build from source instead: ' +
      'cargo install --locked --path mcp\n',
  );
  process.exit(1);
}

const result = spawnSync(binary, process.argv.slice(2), { stdio: 'inherit' });
if (result.error) {
  process.stderr.write(`fluxgit-mcp: could not start ${binary}: ${result.error.message}\n`);
  process.exit(1);
}
if (result.signal) {
  process.kill(process.pid, result.signal);
}
process.exit(result.status ?? 1);
