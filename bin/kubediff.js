#!/usr/bin/env node
// Launcher. kubediff runs its TypeScript sources directly through Node's type
// stripping (Node >= 22.19). When started by an older Node (a machine's own
// Node 20, say), it re-runs itself with the Node 24 that `npm ci` installed
// into node_modules, so the install command alone is enough on any machine.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const [major, minor] = process.versions.node.split('.').map(Number);
const supported = major > 22 || (major === 22 && minor >= 19);

if (supported) {
  await import('../src/cli/entry.ts');
} else {
  const bundledNode = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
  if (!existsSync(bundledNode)) {
    process.stderr.write(
      `kubediff: needs Node.js 22.19 or newer, found ${process.versions.node}; run \`npm ci\` in the kubediff folder (it installs Node 24) or upgrade Node.\n`,
    );
    process.exit(1);
  }
  const child = spawn(bundledNode, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => child.kill(signal));
  }
  child.on('exit', (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}
