// The layers of src/ import downward only (CONTRIBUTING.md, "Layout"), and `npm run lint` (Biome's
// noRestrictedImports, configured per folder in biome.json) is what holds them to it. This test runs
// the project's own Biome with the project's own biome.json over a scratch tree: one import from each
// layer into the layer just above it must be rejected, naming the rule, and imports downward must pass.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';

const repo = path.resolve(import.meta.dirname, '../..');
/** The order CONTRIBUTING.md's Layout section draws, lowest first. */
const LAYERS = ['util', 'kube', 'informer', 'diff', 'events', 'sinks', 'state', 'service', 'config', 'cli'];

const scratch = mkdtempSync(path.join(tmpdir(), 'kubediff-layers-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function lint(files: Record<string, string>): { code: number | null; output: string } {
  const config = JSON.parse(readFileSync(path.join(repo, 'biome.json'), 'utf8')) as Record<string, unknown>;
  delete config.$schema;
  config.vcs = { enabled: false };
  config.files = { includes: ['src/**'] };
  const root = mkdtempSync(path.join(scratch, 'tree-'));
  writeFileSync(path.join(root, 'biome.json'), JSON.stringify(config));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  const biome = path.join(repo, 'node_modules', '.bin', 'biome');
  const result = spawnSync(biome, ['lint', '--max-diagnostics=none', 'src'], { cwd: root, encoding: 'utf8' });
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
}

const module = (name: string) => `export const ${name} = 1;\n`;

test('an import from a layer into the one above it fails lint, for every layer', () => {
  const files: Record<string, string> = {};
  for (const layer of LAYERS) files[`src/${layer}/target.ts`] = module('target');
  for (const [index, layer] of LAYERS.slice(0, -1).entries()) {
    const above = LAYERS[index + 1];
    files[`src/${layer}/back-edge.ts`] =
      `import { target } from '../${above}/target.ts';\nexport const probe = target;\n`;
  }
  const { code, output } = lint(files);
  assert.notEqual(code, 0, output);
  for (const layer of LAYERS.slice(0, -1)) {
    assert.match(
      output,
      new RegExp(`src/${layer}/back-edge\\.ts:1:\\d+ lint/style/noRestrictedImports`),
      `no lint error for the back-edge out of src/${layer}:\n${output}`,
    );
    assert.match(output, new RegExp(`src/${layer} imports only the layers below it`));
  }
});

test('imports downward, and within a layer, pass lint', () => {
  const files: Record<string, string> = {};
  for (const layer of LAYERS) files[`src/${layer}/target.ts`] = module('target');
  for (const [index, layer] of LAYERS.entries()) {
    const imports = LAYERS.slice(0, index).map(
      (below, n) => `import { target as t${n} } from '../${below}/target.ts';\n`,
    );
    files[`src/${layer}/downward.ts`] =
      `${imports.join('')}import { target } from './target.ts';\nexport const probe = [${[...imports.keys()].map((n) => `t${n}, `).join('')}target];\n`;
  }
  const { code, output } = lint(files);
  assert.equal(code, 0, output);
});
