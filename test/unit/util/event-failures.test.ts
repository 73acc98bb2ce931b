// One exception while processing one object costs that object's change at that stage, never the informer
// (src/util/event-failures.ts): reported once per kind with the object's identity and never its contents,
// counted per stage, and the next objects are processed as usual. (The real CLI case, a diff that
// overflows its stack on a deeply nested custom resource, is test/integration/watch-failures.test.ts.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Informer, type InformerHandler } from '../../../src/informer/informer.ts';
import type { ListerWatcher } from '../../../src/kube/lister-watcher.ts';
import type { JsonObject, KubeObject } from '../../../src/kube/types.ts';
import { EventFailures } from '../../../src/util/event-failures.ts';
import { configmaps } from '../../helpers/resource-types.ts';

function cm(name: string, rv: string, data: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'ns', uid: `u-${name}`, resourceVersion: rv },
    data,
  } as unknown as KubeObject;
}

function memoryLog() {
  const lines: string[] = [];
  return {
    lines,
    info: (message: string) => lines.push(`info: ${message}`),
    warn: (message: string) => lines.push(`warn: ${message}`),
    debug: (message: string) => lines.push(`debug: ${message}`),
  };
}

const client = {} as ListerWatcher;

test('an object that cannot be normalized is reported and skipped; the others go on, nothing is deleted', () => {
  const log = memoryLog();
  const failures = new EventFailures(log);
  const seen: string[] = [];
  const handler: InformerHandler = {
    onAdd: (_t, o) => seen.push(`ADDED ${o.name}`),
    onUpdate: (_t, _p, o) => seen.push(`UPDATED ${o.name}`),
    onDelete: (_t, o) => seen.push(`DELETED ${o.name}`),
    onBaseline: () => {},
  };
  const normalize = (_type: unknown, object: KubeObject): JsonObject => {
    if ((object as unknown as { data: Record<string, string> }).data.poison) {
      throw new SyntaxError('Unexpected token \'p\', "poison-value" is not valid JSON');
    }
    return object as unknown as JsonObject;
  };
  const informer = new Informer(
    client,
    { type: configmaps, normalize, initialList: 'added', failures },
    handler,
  );
  informer.listStarted();
  informer.listPage([cm('a', '1'), cm('b', '2')]);
  informer.listCompleted('2');
  informer.watchEvent('MODIFIED', cm('b', '3', { poison: 'poison-value' }));
  informer.watchEvent('MODIFIED', cm('a', '4', { k: 'v' }));
  // A relist still sees b (whose newest state cannot be processed): b is not reported deleted.
  informer.listStarted();
  informer.listPage([cm('a', '4', { k: 'v' }), cm('b', '5', { poison: 'poison-value' })]);
  informer.listCompleted('5');
  informer.watchEvent('MODIFIED', cm('b', '6', { k: 'fixed' }));

  assert.deepEqual(seen, ['ADDED a', 'ADDED b', 'UPDATED a', 'UPDATED b']);
  assert.equal(failures.count('normalize'), 2);
  const warnings = log.lines.filter((line) => line.startsWith('warn: '));
  assert.deepEqual(warnings, [
    'warn: normalizing the object failed for configmaps ns/b (uid u-b, resourceVersion 3): SyntaxError: ' +
      'Unexpected token "…", "…" is not valid JSON; this change is not reported; the next one is reported from ' +
      'the last state that was. Further failures of this kind are only counted (--debug shows each one).',
  ]);
  assert.doesNotMatch(log.lines.join('\n'), /poison-value/, 'never the contents, not even with --debug');
});

test('a handler that throws costs that change only: reported once per kind, counted, the next one is handled', () => {
  const log = memoryLog();
  const failures = new EventFailures(log);
  const handled: string[] = [];
  const handler: InformerHandler = {
    onAdd: (_t, o) => {
      if (o.name.startsWith('bad')) throw new TypeError('Cannot read properties of undefined');
      handled.push(o.name);
    },
    onUpdate: () => {},
    onDelete: () => {},
    onBaseline: () => {},
  };
  const informer = new Informer(
    client,
    { type: configmaps, normalize: (o) => o as unknown as JsonObject, initialList: 'silent', failures },
    handler,
  );
  informer.listStarted();
  informer.listCompleted('1');
  for (const name of ['bad-1', 'good-1', 'bad-2', 'good-2']) informer.watchEvent('ADDED', cm(name, '2'));

  assert.deepEqual(handled, ['good-1', 'good-2']);
  assert.equal(failures.count('handler'), 2);
  assert.equal(log.lines.filter((line) => line.startsWith('warn: ')).length, 1);
  assert.match(
    log.lines.join('\n'),
    /processing the change failed for configmaps ns\/bad-1 \(uid u-bad-1, resourceVersion 2\): TypeError/,
  );
  assert.match(log.lines.join('\n'), /debug: processing the change failed for configmaps ns\/bad-2/);
});
