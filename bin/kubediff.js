#!/usr/bin/env node
// Launcher. kubediff is written in TypeScript and runs as the JavaScript that `npm run build` compiles
// into dist/ (bin/build-state.js says why, and refuses a build older than its sources). It needs Node.js
// 22.22 or newer on the 22 line, or 24.6 or newer. In a checkout started by an older Node (a machine's own Node 20, say), it re-runs
// itself with the Node 24 that `npm ci` installed into node_modules (a dev dependency), so the install
// command alone is enough there; an installed package (`npm install -g kubediff`) runs on the user's
// Node and says so when that is too old (docs/install.md). `kubediff watch` runs with the Node options
// of node-options.js, which keep a long-running watch's memory down; every way of starting kubediff
// (this file run by node, `npx kubediff`, the npm bin link, the container's entrypoint, the single
// executable's main) passes through here, so they all get them (the single executable from its own
// options: it cannot restart itself with others).
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildProblem, isCheckout } from './build-state.js';
import { missingNodeOptions } from './node-options.js';

const [major, minor] = process.versions.node.split('.').map(Number);
// engines in package.json: what every dependency supports (@platformatic/kafka: 22.22 on the 22 line, 24.6).
const supported = major >= 25 || (major === 24 && minor >= 6) || (major === 22 && minor >= 22);
const launcher = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const missing = missingNodeOptions(args, process.execArgv, process.env.NODE_OPTIONS);

if (supported && missing.length > 0 && canReplaceProcess()) {
  // Node options take effect only when Node starts: this process becomes a new Node with them, in
  // place (same pid, so a container's PID 1 stays PID 1, and the same stdio). It costs one more
  // start of Node (some tens of ms), paid by `watch` alone: other commands never come here.
  // The environment given explicitly: Node 22's process.execve (backported to 22.15) starts the new
  // program with an empty one when it is left out, which loses KUBECONFIG, HOME and every setting.
  process.execve(
    process.execPath,
    [process.execPath, ...process.execArgv, ...missing, launcher, ...args],
    process.env,
  );
}

if (supported) {
  const problem = buildProblem(path.dirname(path.dirname(launcher)));
  if (problem) {
    process.stderr.write(`${problem}\n`);
    process.exit(1);
  }
  await import('../dist/cli/entry.js');
} else {
  const bundledNode = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
  if (!existsSync(bundledNode)) {
    process.stderr.write(
      isCheckout(path.dirname(path.dirname(launcher)))
        ? `kubediff: needs Node.js 22.22 or newer on the 22 line, or 24.6 or newer, found ${process.versions.node}; run \`npm ci\` in the kubediff folder (it installs Node 24) or upgrade Node.\n`
        : `kubediff: needs Node.js 22.22 or newer on the 22 line, or 24.6 or newer, found ${process.versions.node}; upgrade Node.js, or install the single executable, which brings its own (docs/install.md).\n`,
    );
    process.exit(1);
  }
  const child = spawn(bundledNode, [...missing, launcher, ...args], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => child.kill(signal));
  }
  child.on('exit', (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}

/**
 * Whether this process can become a new Node in place: process.execve exists from Node 23.11 on (and
 * 22.15 on the 22 line), not on Windows. A Node without it runs the command without the options (only its memory differs).
 * A failed execve ends the process, so the binary is checked first.
 */
function canReplaceProcess() {
  if (typeof process.execve !== 'function' || process.platform === 'win32') return false;
  try {
    accessSync(process.execPath, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
