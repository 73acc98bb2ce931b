// docs/config.md's table "Each key and the flag that sets it" against the config file's schema
// (src/config/schema.ts): a row for every top-level key, and a row for a key that holds a mapping (state:,
// audit:, ui:, …) names each key of that mapping.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { configSchema } from '../../src/config/schema.ts';

const page = readFileSync(new URL('../../docs/config.md', import.meta.url), 'utf8');

/** The table's rows by their key: `| \`state\` | … |` → the row. */
const rows = new Map(
  [...page.matchAll(/^\| `([A-Za-z]+)` \|.*$/gm)].map((match) => [match[1] ?? '', match[0]] as const),
);

it('docs/config.md has a row for every top-level key, naming every key under it', () => {
  const absent: string[] = [];
  for (const [key, schema] of Object.entries(configSchema.properties)) {
    const row = rows.get(key);
    if (row === undefined) {
      absent.push(key);
      continue;
    }
    const nested = 'properties' in schema ? Object.keys(schema.properties) : [];
    if (key === 'sinks') continue; // its items' keys are each sink type's, in docs/sinks.md
    absent.push(...nested.filter((name) => !row.includes(`\`${name}\``)).map((name) => `${key}.${name}`));
  }
  assert.deepEqual(absent, []);
});
