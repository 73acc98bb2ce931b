#!/usr/bin/env node
// Launcher. kubediff runs its TypeScript sources directly through Node's type
// stripping (Node >= 22.19). When started by an older Node (a machine's own
// Node 20, say), it re-runs itself with the Node 24 that `npm ci` installed
// into node_modules, so the install command alone is enough on any machine.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import module from 'node:module';
import { fileURLToPath } from 'node:url';

const [major, minor] = process.versions.node.split('.').map(Number);
const supported = major > 22 || (major === 22 && minor >= 19);

if (supported) {
  // Node's module compile cache keeps each module's type-stripped source and V8 code between runs,
  // which halves start-up (README, "Start-up and the compile cache"). Where it lives: $NODE_COMPILE_CACHE,
  // else <tmpdir>/node-compile-cache; NODE_DISABLE_COMPILE_CACHE=1 turns it off. A cache that cannot
  // be written (a read-only file system) costs nothing but the speed-up.
  module.enableCompileCache?.();
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
