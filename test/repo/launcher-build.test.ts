// The launcher runs the compiled dist/ (bin/build-state.js): in a checkout it refuses a build older than
// a source, or no build at all, with one sentence and exit code 1; an installed tree (dist/ without the
// TypeScript sources, as in the image) runs as it is. Each case is a copy of the launcher and of this
// checkout's dist/ in a folder of its own, run as a user would.
import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runKubediffToCompletion } from '../helpers/cli.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const trees: string[] = [];

after(async () => {
  await Promise.all(trees.map((tree) => rm(tree, { recursive: true, force: true })));
});

/** A kubediff folder: the launcher, package.json, dist/ as built, and (for a checkout) one source. */
async function tree(options: { checkout: boolean }): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-launcher-'));
  trees.push(dir);
  await cp(path.join(root, 'bin'), path.join(dir, 'bin'), { recursive: true });
  await cp(path.join(root, 'dist'), path.join(dir, 'dist'), { recursive: true });
  await cp(path.join(root, 'package.json'), path.join(dir, 'package.json'));
  await symlink(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
  if (options.checkout) {
    await mkdir(path.join(dir, 'src', 'cli'), { recursive: true });
    await mkdir(path.join(dir, 'src', 'ui', 'web'), { recursive: true });
    await writeFile(path.join(dir, 'src', 'cli', 'entry.ts'), '// a source\n');
    await writeFile(path.join(dir, 'src', 'ui', 'web', 'app.ts'), '// the browser page\n');
    // Both older than the build, as after `npm ci`.
    const past = new Date(Date.now() - 3_600_000);
    await utimes(path.join(dir, 'src', 'cli', 'entry.ts'), past, past);
    await utimes(path.join(dir, 'src', 'ui', 'web', 'app.ts'), past, past);
  }
  return dir;
}

const version = (dir: string) =>
  runKubediffToCompletion(['version'], { script: path.join(dir, 'bin', 'kubediff.js') });

test('a checkout whose dist/ is newer than every source runs', async () => {
  const dir = await tree({ checkout: true });
  // The browser page is served from its sources, not compiled: editing it needs no build.
  const now = new Date();
  await utimes(path.join(dir, 'src', 'ui', 'web', 'app.ts'), now, now);
  const result = await version(dir);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^kubediff \d+\.\d+\.\d+ \(node \d+\./);
});

test('a source edited after the last build: one sentence, exit 1, nothing run', async () => {
  const dir = await tree({ checkout: true });
  const later = new Date(Date.now() + 60_000);
  await utimes(path.join(dir, 'src', 'cli', 'entry.ts'), later, later);
  const result = await version(dir);
  assert.equal(result.code, 1);
  assert.equal(result.stdout, '');
  assert.equal(
    result.stderr,
    `kubediff: ${path.join('src', 'cli', 'entry.ts')} changed after the last build; run \`npm run build\` in ${dir}.\n`,
  );
});

test('a checkout never built: one sentence that says how to build, exit 1', async () => {
  const dir = await tree({ checkout: true });
  await rm(path.join(dir, 'dist'), { recursive: true });
  const result = await version(dir);
  assert.equal(result.code, 1);
  assert.equal(
    result.stderr,
    `kubediff: ${dir} is not built yet; run \`npm run build\` (or \`npm ci\`) there.\n`,
  );
});

test('an installed tree (dist/ without sources, as in the image) runs; with its build gone it says so', async () => {
  const dir = await tree({ checkout: false });
  const result = await version(dir);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^kubediff \d+\.\d+\.\d+ /);
  // An interrupted build or copy leaves no stamp: dist/.built is written last.
  await rm(path.join(dir, 'dist', '.built'));
  const broken = await version(dir);
  assert.equal(broken.code, 1);
  assert.equal(
    broken.stderr,
    `kubediff: ${path.join(dir, 'dist')} is missing or incomplete; reinstall kubediff.\n`,
  );
});
