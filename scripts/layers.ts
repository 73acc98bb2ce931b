// The layers of src/, lowest first: the one place their order is written. A folder of src/ imports only
// the folders before it in LAYERS, and no file of src/ is part of an import cycle, type-only imports
// included. `node scripts/layers.ts` writes the lint rules that hold every file to it into biome.json;
// test/repo/layers.test.ts fails when biome.json is not what this writes, when the "Layout" of CONTRIBUTING.md lists
// the folders in another order, and shows that a back-edge from any depth and a type-only cycle fail
// lint.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * util ← kube ← informer ← diff ← events ← sinks ← state ← who ← service ← config ← ui ← cli. sinks, state,
 * who and service consume events: state may import sinks; who (the sources of who made a change, their
 * join, a pipeline stage) may import both; service (health, readiness, metrics) may import all three.
 */
export const LAYERS = [
  'util',
  'kube',
  'informer',
  'diff',
  'events',
  'sinks',
  'state',
  'who',
  'service',
  'config',
  'ui',
  'cli',
] as const;

export type Layer = (typeof LAYERS)[number];

/**
 * How many folders deep below its layer's folder a file may be (src/kube/x.ts is 1). Biome matches an
 * import by its text, so each way up out of a layer is written out: `../state/**`, `../../state/**`, …
 * From a file at one depth the others lead outside src/ or to a folder inside its own layer; no folder
 * inside a layer is named like a layer (the layer test checks it), so they match nothing legitimate.
 */
export const MAX_DEPTH = 3;

type Rules = Record<string, Record<string, unknown>>;
export interface Override {
  includes: string[];
  linter: { rules: Rules };
}

/** The overrides that hold src/ to the layers: every override biome.json has for src/ and nothing else. */
export function layerOverrides(): Override[] {
  // Type-only imports count: a cycle through types is still two modules that cannot be read apart.
  const cycles: Rules = {
    suspicious: { noImportCycles: { level: 'error', options: { ignoreTypes: false } } },
  };
  const overrides: Override[] = [{ includes: ['src/**'], linter: { rules: cycles } }];
  LAYERS.forEach((layer, index) => {
    const above = LAYERS.slice(index + 1);
    if (above.length === 0) return;
    const below = LAYERS.slice(0, index);
    const message = `src/${layer} imports only the layers below it (${below.join(', ') || 'none'}): scripts/layers.ts.`;
    const group = above.flatMap((higher) => [
      ...Array.from({ length: MAX_DEPTH }, (_, up) => `${'../'.repeat(up + 1)}${higher}/**`),
      `**/src/${higher}/**`,
    ]);
    overrides.push({
      includes: [`src/${layer}/**`],
      linter: {
        rules: {
          style: { noRestrictedImports: { level: 'error', options: { patterns: [{ group, message }] } } },
        },
      },
    });
  });
  return overrides;
}

/** `config` (biome.json's contents) with its overrides for src/ replaced by layerOverrides(). */
export function withLayerRules(config: Record<string, unknown>): Record<string, unknown> {
  const current = Array.isArray(config.overrides) ? (config.overrides as Override[]) : [];
  const others = current.filter((override) => !override.includes.every((glob) => glob.startsWith('src/')));
  return { ...config, overrides: [...others, ...layerOverrides()] };
}

const root = path.resolve(import.meta.dirname, '..');
export const BIOME_CONFIG = path.join(root, 'biome.json');

if (import.meta.main) {
  const config = JSON.parse(readFileSync(BIOME_CONFIG, 'utf8')) as Record<string, unknown>;
  writeFileSync(BIOME_CONFIG, `${JSON.stringify(withLayerRules(config), null, 2)}\n`);
  const biome = path.join(root, 'node_modules', '.bin', 'biome');
  const formatted = spawnSync(biome, ['format', '--write', BIOME_CONFIG], { cwd: root, encoding: 'utf8' });
  if (formatted.status !== 0) {
    console.error(`${formatted.stdout}${formatted.stderr}`);
    process.exitCode = 1;
  }
}
