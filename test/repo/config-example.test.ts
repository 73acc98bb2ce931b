// config.example.yaml against the config file's schema (src/config/schema.ts): it says it documents every
// key, so every key of the schema, top-level, nested and of every sink type, appears in it (in use or
// commented out), and every commented-out sink example is itself a valid sink. Whether the file as a whole
// is valid is test/integration/config-cli.test.ts's (`kubediff validate`).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseConfig } from '../../src/config/file.ts';
import { configSchema, SINK_TYPES, sinkSchemas } from '../../src/config/schema.ts';

const file = new URL('../../config.example.yaml', import.meta.url);
const text = readFileSync(file, 'utf8');

/** Each line with its comment mark taken off (`#   path: x` → `  path: x`): commented-out keys count. */
const uncommented = text.split('\n').map((line) => line.replace(/^(\s*)# ?/, '$1'));

const indentOf = (line: string) => line.length - line.trimStart().length;

/** The blocks that start with a line matching `start`: it and the lines indented deeper than it. */
function blocks(lines: readonly string[], start: RegExp): string[] {
  const found: string[] = [];
  lines.forEach((line, index) => {
    if (!start.test(line)) return;
    const indent = indentOf(line);
    const end = lines.findIndex((next, at) => at > index && next.trim() !== '' && indentOf(next) <= indent);
    found.push(lines.slice(index, end === -1 ? undefined : end).join('\n'));
  });
  return found;
}

/** Whether `key:` appears in `block` as a key (at a line's start, after `- `, `{` or `,`, or in a comment). */
function hasKey(block: string, key: string): boolean {
  return new RegExp(`(^|[\\s{,-])${key.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}:`, 'm').test(block);
}

interface ObjectSchema {
  properties?: Record<string, unknown>;
  items?: unknown;
}

/** Every key path of `schema` (`state.path`, `tls.caFile`), not descending into `skip`. */
function keyPaths(schema: unknown, skip: ReadonlySet<string> = new Set(), prefix = ''): string[] {
  const object = schema as ObjectSchema;
  const properties = object.properties ?? (object.items as ObjectSchema | undefined)?.properties ?? {};
  return Object.entries(properties).flatMap(([key, value]) => {
    const here = `${prefix}${key}`;
    return [here, ...(skip.has(key) ? [] : keyPaths(value, skip, `${here}.`))];
  });
}

/** The key paths of `paths` that `where` (a block's text) lacks: `a.b` needs `b:` and `a:`. */
function missing(paths: readonly string[], where: string): string[] {
  return paths.filter((keyPath) => !keyPath.split('.').every((key) => hasKey(where, key)));
}

describe('config.example.yaml', () => {
  it('has every top-level key of the config file, and every key under it', () => {
    const absent: string[] = [];
    // Keys whose values share one schema (ignore, only and redact take the same path rules) share its keys.
    const byShape = new Map<unknown, string[]>();
    for (const [key, schema] of Object.entries(configSchema.properties)) {
      if (blocks(uncommented, new RegExp(`^${key}:`)).length === 0) absent.push(key);
      // Each sink type's keys are the next test's.
      if (key === 'sinks') continue;
      const object = schema as ObjectSchema;
      const shape = object.properties ?? (object.items as ObjectSchema | undefined)?.properties;
      if (shape !== undefined) byShape.set(shape, [...(byShape.get(shape) ?? []), key]);
    }
    for (const keys of byShape.values()) {
      const found = keys.flatMap((key) => blocks(uncommented, new RegExp(`^${key}:`))).join('\n');
      const nested = keyPaths(
        configSchema.properties[keys[0] as keyof typeof configSchema.properties],
        new Set(['filter']),
      );
      absent.push(...missing(nested, found).map((keyPath) => `${keys.join('/')}: ${keyPath}`));
    }
    assert.deepEqual(absent, []);
  });

  it('has an example of every sink type, and every key of each (sinks with the same keys share them)', () => {
    const byKeys = new Map<string, string[]>();
    for (const type of SINK_TYPES) {
      const paths = keyPaths(sinkSchemas[type], new Set(['filter']));
      byKeys.set(paths.join(' '), [...(byKeys.get(paths.join(' ')) ?? []), type]);
    }
    const absent: string[] = [];
    for (const [paths, types] of byKeys) {
      const found = types.flatMap((type) => {
        const own = blocks(uncommented, new RegExp(`^\\s*- type: ${type}(\\s|$)`));
        if (own.length === 0) absent.push(`an example of type: ${type}`);
        return own;
      });
      absent.push(
        ...missing(paths.split(' '), found.join('\n')).map((keyPath) => `${types.join('/')}: ${keyPath}`),
      );
    }
    assert.deepEqual(absent, []);
  });

  it('has commented-out sink examples that are valid sinks as they stand', () => {
    // A sink commented out as a whole: `# - type: …` and the commented lines below it.
    const commented = blocks(
      text.split('\n').map((line) => (/^\s*#/.test(line) ? line.replace(/^(\s*)# ?/, '$1') : '')),
      /^\s*- type: /,
    );
    const types = commented.map((block) => /- type: (\S+)/.exec(block)?.[1]);
    for (const type of ['discord', 'mattermost', 'google-chat', 'otlp', 'opensearch', 'elasticsearch'])
      assert.ok(types.includes(type), `no commented-out example of ${type}: ${types.join(', ')}`);
    for (const block of commented) {
      const indent = indentOf(block);
      const sink = block
        .split('\n')
        .map((line) => line.slice(indent))
        .join('\n');
      assert.doesNotThrow(
        () =>
          parseConfig(`sinks:\n${sink.replace(/^/gm, '  ')}\n`, 'example', {}, { unsetVariables: 'warn' }),
        `the example\n${sink}`,
      );
    }
  });
});
