// A sink type is one folder (CONTRIBUTING.md, "Adding a sink"): for every type of src/sinks/registry.ts,
// no file of src/ outside its folder and the registry names it: its type string (quoted), the classes its
// folder exports, the environment variables its folder reads. Its folder is the one whose factory.ts
// exports its component. And every type the config file takes is one of the registry's, stdout included:
// none is made beside it.
import assert from 'node:assert/strict';
import { globSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { SINK_TYPES } from '../../src/config/schema.ts';
import type { AnySinkComponent } from '../../src/sinks/component.ts';
import { SINK_COMPONENTS } from '../../src/sinks/registry.ts';
import { nonEmpty } from '../helpers/non-empty.ts';

const repo = path.resolve(import.meta.dirname, '../..');
const sources = globSync('src/**/*.ts', { cwd: repo }).map((file) => file.split(path.sep).join('/'));
const text = (file: string) => readFileSync(path.join(repo, file), 'utf8');

/** Each registered component's folder: where the factory.ts that exports it is. */
async function folders(): Promise<Map<AnySinkComponent, string>> {
  const found = new Map<AnySinkComponent, string>();
  for (const factory of sources.filter(
    (file) => file.startsWith('src/sinks/') && file.endsWith('/factory.ts'),
  )) {
    const module = (await import(pathToFileURL(path.join(repo, factory)).href)) as Record<string, unknown>;
    for (const value of Object.values(module)) {
      if ((SINK_COMPONENTS as readonly unknown[]).includes(value))
        found.set(value as AnySinkComponent, `${path.posix.dirname(factory)}/`);
    }
  }
  return found;
}

/** What names a component's type: its type strings quoted, its folder's classes and variables. */
function namesOf(component: AnySinkComponent, folder: string): string[] {
  const own = sources
    .filter((file) => file.startsWith(folder))
    .map(text)
    .join('\n');
  const classes = [...own.matchAll(/export class (\w+)/g)].map((match) => match[1] as string);
  const variables = [
    ...new Set([...own.matchAll(/\b(KUBEDIFF_[A-Z0-9_]+)\b/g)].map((match) => match[1] as string)),
  ];
  const types = component.types.flatMap((type: string) => [`'${type}'`, `"${type}"`]);
  return [...types, ...classes, ...variables];
}

/**
 * Where a type's word means something else: `file`, a dead-letter metric's label and a diff line's kind;
 * `webhook`, the admission webhook configuration the managed certificate patches, and a Slack sink's
 * incoming-webhook target (beside its bot target).
 */
const OTHER_MEANING = new Set([
  "src/service/metrics/sink-metrics.ts 'file'",
  "src/ui/web/diff-view.ts 'file'",
  "src/who/certificate/managed-certificate.ts 'webhook'",
  "src/sinks/chat/slack/slack.ts 'webhook'",
  "src/sinks/chat/slack/factory.ts 'webhook'",
]);

/** A quoted type string anywhere; a class or variable as a whole word (FileSink is not withFileSinks). */
function mentions(content: string, name: string): boolean {
  return /^\w+$/.test(name) ? new RegExp(`\\b${name}\\b`).test(content) : content.includes(name);
}

test('every sink type of the registry is named only in its folder and the registry', async () => {
  const found = await folders();
  const problems: string[] = [];
  for (const component of nonEmpty([...SINK_COMPONENTS] as AnySinkComponent[], 'registered sink types')) {
    const folder = found.get(component);
    assert.ok(folder, `${component.types.join('/')}: no src/sinks/**/factory.ts exports its component`);
    assert.match(folder, /^src\/sinks\/(\w+\/)?[\w-]+\/$/, `${folder}: src/sinks/<group>/<type>/`);
    const names = namesOf(component, folder);
    for (const file of sources) {
      if (file.startsWith(folder) || file === 'src/sinks/registry.ts') continue;
      const content = text(file);
      for (const name of names)
        if (mentions(content, name) && !OTHER_MEANING.has(`${file} ${name}`))
          problems.push(`${file} names ${name}`);
    }
  }
  assert.deepEqual(problems, [], 'a sink type named outside its folder: move that code into the folder');
});

test('the check can fail: what it looks for is in each folder, so it would be found outside one', async () => {
  const found = await folders();
  for (const component of nonEmpty([...SINK_COMPONENTS] as AnySinkComponent[], 'registered sink types')) {
    const folder = found.get(component) ?? '';
    const own = sources
      .filter((file) => file.startsWith(folder))
      .map(text)
      .join('\n');
    for (const name of nonEmpty(namesOf(component, folder), `names of ${folder}`))
      if (!name.startsWith('"')) assert.ok(own.includes(name), `${folder} does not name ${name}`);
  }
});

test("every type of the config file's sinks: is a registered component's, in the registry's order", () => {
  const registered = SINK_COMPONENTS.flatMap((component) => [...component.types] as string[]);
  assert.deepEqual(nonEmpty([...SINK_TYPES], 'types of sinks:'), registered);
  assert.ok(registered.includes('stdout'), 'stdout (-o, output:) is a component too');
});
