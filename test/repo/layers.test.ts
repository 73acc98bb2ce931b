// The layers of src/ import downward only, and no file is part of an import cycle, type-only imports
// included. scripts/layers.ts holds the order and writes the lint rules into biome.json; `npm run lint`
// (Biome) is what holds every file to them. These tests check that biome.json is what the script writes
// and that README lists the same order, then run the project's own Biome with that biome.json over
// scratch trees: a back-edge from any depth of a layer, and a cycle of type-only imports, must be
// rejected naming the rule; imports downward and within a layer must pass.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  globSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { BIOME_CONFIG, LAYERS, MAX_DEPTH, withLayerRules } from '../../scripts/layers.ts';
import { nonEmpty } from '../helpers/non-empty.ts';

const repo = path.resolve(import.meta.dirname, '../..');
const biomeConfig = () => JSON.parse(readFileSync(BIOME_CONFIG, 'utf8')) as Record<string, unknown>;

const scratch = mkdtempSync(path.join(tmpdir(), 'kubediff-layers-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** Biome's lint over `files` (path → text) in a scratch tree, with biome.json (or `config`) as it is. */
function lint(
  files: Record<string, string>,
  config: Record<string, unknown> = biomeConfig(),
  copySrc = false,
): { code: number | null; output: string } {
  const scratchConfig: Record<string, unknown> = {
    ...config,
    vcs: { enabled: false },
    files: { includes: ['src/**'] },
  };
  delete scratchConfig.$schema;
  const root = mkdtempSync(path.join(scratch, 'tree-'));
  writeFileSync(path.join(root, 'biome.json'), JSON.stringify(scratchConfig));
  if (copySrc) cpSync(path.join(repo, 'src'), path.join(root, 'src'), { recursive: true });
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  const biome = path.join(repo, 'node_modules', '.bin', 'biome');
  const result = spawnSync(biome, ['lint', '--max-diagnostics=none', 'src'], { cwd: root, encoding: 'utf8' });
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
}

const module = (name: string) =>
  `export const ${name} = 1;\nexport type ${name[0]!.toUpperCase()}${name.slice(1)} = number;\n`;
/** The folders from a layer's folder down to a file at `depth` (1: the layer's folder itself). */
const folders = (depth: number) => Array.from({ length: depth - 1 }, (_, n) => `sub${n + 1}/`).join('');
const up = (depth: number) => '../'.repeat(depth);
const flagged = (file: string) =>
  new RegExp(`${file.replaceAll('.', '\\.')}:\\d+:\\d+ lint/style/noRestrictedImports`);

test('biome.json holds the lint rules scripts/layers.ts writes (run `node scripts/layers.ts` after changing it)', () => {
  const config = biomeConfig();
  assert.deepEqual(config, withLayerRules(config));
});

test('the folders of src/ are the layers, no deeper than the rules reach, and README lists them in order', () => {
  const folders = readdirSync(path.join(repo, 'src'), { withFileTypes: true }).filter((entry) =>
    entry.isDirectory(),
  );
  assert.deepEqual(folders.map((entry) => entry.name).sort(), [...LAYERS].sort());
  for (const file of nonEmpty(globSync('src/**/*.ts', { cwd: repo }), 'TypeScript files in src/')) {
    const [, , ...below] = file.split(path.sep);
    assert.ok(
      below.length <= MAX_DEPTH,
      `${file} is deeper than MAX_DEPTH (${MAX_DEPTH}) in scripts/layers.ts`,
    );
    const named = below.slice(0, -1).find((folder) => (LAYERS as readonly string[]).includes(folder));
    assert.equal(named, undefined, `${file}: a folder inside a layer must not be named like a layer`);
  }
  // The Layout block (README, or wherever the docs moved it): one `src/<layer>  what it holds` line per
  // layer, highest first.
  const listed = ['README.md', 'CONTRIBUTING.md', ...globSync('docs/**/*.md', { cwd: repo })]
    .flatMap((file) => {
      try {
        return readFileSync(path.join(repo, file), 'utf8').split('\n');
      } catch {
        return [];
      }
    })
    .flatMap((line) => /^src\/([a-z]+) {2,}\S/.exec(line)?.[1] ?? []);
  assert.deepEqual(listed, [...LAYERS].reverse());
});

test('an import into any higher layer fails lint, from every depth of a layer, type-only imports too', () => {
  const files: Record<string, string> = {};
  for (const layer of LAYERS) files[`src/${layer}/target.ts`] = module('target');
  const expected: string[] = [];
  for (const [index, layer] of LAYERS.slice(0, -1).entries()) {
    for (let depth = 1; depth <= MAX_DEPTH; depth++) {
      for (const higher of LAYERS.slice(index + 1)) {
        const base = `src/${layer}/${folders(depth)}to-${higher}`;
        const target = `${up(depth)}${higher}/target.ts`;
        files[`${base}.ts`] = `import { target } from '${target}';\nexport const probe = target;\n`;
        files[`${base}-type.ts`] = `import type { Target } from '${target}';\nexport type Probe = Target;\n`;
        files[`${base}-export.ts`] = `export { target } from '${target}';\n`;
        files[`${base}-dynamic.ts`] =
          `export const probe = async () => (await import('${target}')).target;\n`;
        expected.push(`${base}.ts`, `${base}-type.ts`, `${base}-export.ts`, `${base}-dynamic.ts`);
      }
    }
  }
  const { code, output } = lint(files);
  assert.notEqual(code, 0, output);
  const missed = expected.filter((file) => !flagged(file).test(output));
  assert.deepEqual(missed, [], `back-edges lint let through:\n${output}`);
  for (const layer of LAYERS.slice(0, -1))
    assert.match(output, new RegExp(`src/${layer} imports only the layers below it`));
});

test('imports downward and within a layer pass lint, from every depth', () => {
  const files: Record<string, string> = {};
  for (const layer of LAYERS) files[`src/${layer}/target.ts`] = module('target');
  for (const [index, layer] of LAYERS.entries()) {
    for (let depth = 1; depth <= MAX_DEPTH; depth++) {
      const targets = [
        ...LAYERS.slice(0, index).map((lower) => `${up(depth)}${lower}/target.ts`),
        // Its own layer, from below and through its own name.
        depth === 1 ? './target.ts' : `${up(depth - 1)}target.ts`,
        `${up(depth)}${layer}/target.ts`,
      ];
      files[`src/${layer}/${folders(depth)}downward.ts`] =
        targets.map((target, n) => `import type { Target as T${n} } from '${target}';\n`).join('') +
        `export type Probe = ${targets.map((_, n) => `T${n}`).join(' | ')};\n`;
    }
  }
  const { code, output } = lint(files);
  assert.equal(code, 0, output);
});

test('a cycle of type-only imports fails lint', () => {
  const { code, output } = lint({
    'src/config/story.ts':
      "import type { Watch } from './watch.ts';\nexport interface Story { watch?: Watch }\n",
    'src/config/watch.ts':
      "import type { Story } from './story.ts';\nexport interface Watch { story?: Story }\n",
  });
  assert.notEqual(code, 0, output);
  assert.match(output, /src\/config\/story\.ts:\d+:\d+ lint\/suspicious\/noImportCycles/);
  assert.match(output, /src\/config\/watch\.ts:\d+:\d+ lint\/suspicious\/noImportCycles/);
});
