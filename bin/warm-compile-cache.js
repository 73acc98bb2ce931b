#!/usr/bin/env node
// Fills Node's module compile cache (the folder in $NODE_COMPILE_CACHE) with every module kubediff may
// load, the lazily loaded ones included (a config file's reader, the HTTP sinks, the metrics, HTTP/1.1,
// @kubernetes/client-node for exec plugins), so that no start-up has to strip types or compile them.
// The image build runs it (Dockerfile); it runs nothing of kubediff: importing a module only defines it.
// V8 keeps a cache per set of options that change its code (a folder each): `kubediff watch` runs with
// options of its own (node-options.js), so the cache is filled a second time, by a Node started with them.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import module from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { missingNodeOptions } from './node-options.js';

module.enableCompileCache();
const src = fileURLToPath(new URL('../src/', import.meta.url));
// entry.ts runs the command line when imported: it is left out (it is tiny); so is the page of
// `kubediff ui` (src/ui/web), which runs in the browser, not in Node.
const web = path.join('ui', 'web') + path.sep;
const files = readdirSync(src, { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.ts') && file !== path.join('cli', 'entry.ts') && !file.startsWith(web))
  .sort();
for (const file of files) await import(pathToFileURL(path.join(src, file)).href);
await import('@kubernetes/client-node');
module.flushCompileCache();
process.stdout.write(
  `compile cache: ${files.length} modules and @kubernetes/client-node, in ${module.getCompileCacheDir()}\n`,
);

const watchOptions = missingNodeOptions(['watch'], process.execArgv, process.env.NODE_OPTIONS);
if (watchOptions.length > 0) {
  const again = spawnSync(process.execPath, [...watchOptions, fileURLToPath(import.meta.url)], {
    stdio: 'inherit',
  });
  process.exitCode = again.status ?? 1;
}
