// npm pack's hooks (package.json "prepack" and "postpack"; `npm publish` runs them too). prepack
// compiles dist/ afresh (scripts/build.ts), then changes two files that exist so only while npm packs:
// - npm-shrinkwrap.json, a copy of the lockfile, goes in the package, so that `npm install -g kubediff`
//   from the registry installs exactly the dependency versions the tests ran against (npm's advice for
//   a command-line tool) rather than whatever the ranges allow on the day; so does the single
//   executable's build. (npm reads a package's shrinkwrap when the registry says it has one: a local
//   tarball installs by the ranges.) The repository keeps package-lock.json: npm would prefer a
//   shrinkwrap beside it, so the file is removed afterwards.
// - the packed package.json has no "prepare" script: it compiles a checkout (`npm ci`), the package
//   holds dist/ compiled already, and npm would otherwise list it as an install script to allow when
//   someone installs the tarball itself.
// An interrupted pack can leave both files behind: .gitignore keeps them out of commits, and
// `node scripts/pack-hooks.ts postpack` puts package.json back.
import { copyFileSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildDist } from './build.ts';

const root = path.resolve(import.meta.dirname, '..');
const SHRINKWRAP = path.join(root, 'npm-shrinkwrap.json');
const PACKAGE_JSON = path.join(root, 'package.json');
const ORIGINAL_PACKAGE_JSON = path.join(root, 'package.json.prepack');

/** package.json as packed: without the "prepare" script. */
function packedManifest(text: string): string {
  const manifest = JSON.parse(text) as { scripts?: Record<string, string> };
  if (manifest.scripts) delete manifest.scripts.prepare;
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

function prepack(): void {
  // Here rather than by "prepare", which npm no longer sees once package.json is the packed one.
  buildDist();
  // Whole, dev dependencies marked as such: an install skips them, and `npm ci` in the unpacked
  // package (scripts/npm-package.ts, installLocked) checks that the file matches package.json.
  copyFileSync(path.join(root, 'package-lock.json'), SHRINKWRAP);
  const original = readFileSync(PACKAGE_JSON, 'utf8');
  // A leftover of an interrupted pack is the original: never overwrite it with a packed one.
  if (!existsSync(ORIGINAL_PACKAGE_JSON)) writeFileSync(ORIGINAL_PACKAGE_JSON, original);
  writeFileSync(PACKAGE_JSON, packedManifest(original));
}

function postpack(): void {
  rmSync(SHRINKWRAP, { force: true });
  if (existsSync(ORIGINAL_PACKAGE_JSON)) renameSync(ORIGINAL_PACKAGE_JSON, PACKAGE_JSON);
}

if (import.meta.main) {
  const hook = process.argv[2];
  if (hook === 'prepack') prepack();
  else if (hook === 'postpack') postpack();
  else {
    console.error('usage: node scripts/pack-hooks.ts prepack|postpack');
    process.exitCode = 2;
  }
}
