// Start-up from a previous run's state (src/state/catch-up.ts), read from a real SQLite state file: how
// each informer starts, a state of another selection not compared, and the objects of types no longer
// served reported DELETED. The same against the real API server: test/integration/state-catchup.test.ts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { InformerHandler } from '../../../src/informer/informer.ts';
import type { ResourceType } from '../../../src/kube/types.ts';
import { CatchUp, FOLLOWED_KEY, SIGNATURE_KEY, selectionSignature } from '../../../src/state/catch-up.ts';
import { SqliteStateStore } from '../../../src/state/sqlite-store.ts';
import { silentLogger } from '../../../src/util/log.ts';
import { configmaps, secrets } from '../../helpers/resource-types.ts';
import { fakeInformer, storedObject } from '../../helpers/state-fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'kubediff-catch-up-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;

const widgets: ResourceType = { ...configmaps, group: 'example.com', resource: 'widgets', kind: 'Widget' };
const pods: ResourceType = { ...configmaps, resource: 'pods', kind: 'Pod' };
const note = (...entries: [ResourceType, boolean][]) => ({
  kind: 'resources' as const,
  entries: entries.map(([type, watched]) => ({
    resource: type.group ? `${type.resource}.${type.group}` : type.resource,
    json: JSON.stringify(type),
    watched,
  })),
});

/**
 * A file as a previous run left it: configmaps watched and listed (two objects, in two namespaces),
 * widgets watched and listed (one object), secrets watched but not listed and empty, pods served but not
 * watched.
 */
async function previousRun(signature = 's'): Promise<SqliteStateStore> {
  const store = SqliteStateStore.open(join(dir, `state-${++counter}.db`));
  await store.setMeta(SIGNATURE_KEY, signature);
  await store.setMeta(FOLLOWED_KEY, '1');
  const other = { ...storedObject('b', '2'), key: 'web/b', namespace: 'web' };
  await store.write(
    [
      note([configmaps, true], [widgets, true], [secrets, true], [pods, false]),
      { kind: 'object', resource: 'configmaps', ...flat(storedObject('a', '1')) },
      { kind: 'object', resource: 'configmaps', ...flat(other) },
      { kind: 'object', resource: 'widgets.example.com', ...flat(storedObject('w', '3')) },
    ],
    new Map([
      ['configmaps', '5'],
      ['widgets.example.com', '5'],
    ]),
  );
  return store;
}

function flat(object: ReturnType<typeof storedObject>) {
  const { key, namespace, name, uid, resourceVersion } = object;
  return { key, namespace, name, uid, resourceVersion, json: JSON.stringify(object.object) };
}

test('each informer starts from what the previous run recorded of its type', async () => {
  const store = await previousRun();
  const catchUp = await CatchUp.read(store, { signature: 's', log: silentLogger, readOnly: false });
  assert.equal(catchUp.hasPreviousState, true);
  const preloaded = (type: ResourceType, namespace?: string) =>
    catchUp.plan(type, namespace, 'silent').preload?.map((object) => object.name);
  // Watched and listed: pre-loaded (per namespace with -n), its first LIST a relist, then the replay of
  // the changes since the point it was followed to.
  assert.deepEqual(preloaded(configmaps), ['a', 'b']);
  assert.deepEqual(preloaded(configmaps, 'ns'), ['a']);
  assert.deepEqual(catchUp.plan(configmaps, 'shop', 'silent'), {
    initialList: 'silent',
    preload: [],
    replayFrom: '5',
  });
  // Not listed and nothing recorded: a silent baseline.
  assert.deepEqual(catchUp.plan(secrets, undefined, 'silent'), { initialList: 'silent' });
  // Served but not watched: a silent baseline.
  assert.deepEqual(catchUp.plan(pods, undefined, 'silent'), { initialList: 'silent' });
  // Not served last time: created while down.
  const gadgets = { ...widgets, resource: 'gadgets' };
  assert.deepEqual(catchUp.plan(gadgets, undefined, 'silent'), { initialList: 'added-offline' });
  // A type appearing while running is new whatever the store says.
  assert.deepEqual(catchUp.plan(configmaps, undefined, 'added-offline'), { initialList: 'added-offline' });
  assert.equal(catchUp.wasWatched('secrets'), true);
  assert.equal(catchUp.wasWatched('pods'), false);
  await store.close();
});

test('a type no longer served has its recorded objects reported DELETED offline, once, at the newest resourceVersion', async () => {
  const store = await previousRun();
  const infos: string[] = [];
  const catchUp = await CatchUp.read(store, {
    signature: 's',
    log: { ...silentLogger, info: (message: string) => infos.push(message) },
    readOnly: false,
  });
  const deleted: string[] = [];
  const handler = {
    onDelete: (type: ResourceType, object: { name: string }, how: { resourceVersion: string }) =>
      deleted.push(`${type.kind} ${object.name} @${how.resourceVersion}`),
  } as unknown as InformerHandler;
  const cms = fakeInformer(configmaps);
  cms.sync('42');
  const served = { watched: [configmaps, secrets], skipped: [{ type: pods }], unresolved: [] };
  catchUp.reportVanishedTypes(served as never, handler, [cms.informer]);
  assert.deepEqual(deleted, ['Widget w @42']);
  assert.deepEqual(infos, [
    'widgets.example.com is no longer served: reported its 1 recorded object(s) as deleted.',
  ]);
  catchUp.reportVanishedTypes(served as never, handler, [cms.informer]);
  assert.equal(deleted.length, 1, 'the recorded objects are released after the first sync');
  assert.deepEqual(catchUp.plan(configmaps, undefined, 'silent'), { initialList: 'silent' });
  await store.close();
});

test('a state recorded with another selection is not compared: said, its objects forgotten, the history kept', async () => {
  const store = await previousRun(
    selectionSignature({
      namespaces: ['shop'],
      excludeNamespaces: [],
      labelSelector: undefined,
      ignoredPaths: [],
      redaction: 'r',
    }),
  );
  const warnings: string[] = [];
  const signature = selectionSignature({
    namespaces: ['web', 'shop'],
    excludeNamespaces: [],
    labelSelector: 'app=web',
    ignoredPaths: [],
    redaction: 'r',
  });
  const catchUp = await CatchUp.read(store, {
    signature,
    log: { ...silentLogger, warn: (message: string) => warnings.push(message) },
    readOnly: false,
  });
  assert.equal(catchUp.hasPreviousState, false);
  assert.deepEqual(catchUp.plan(configmaps, undefined, 'silent'), { initialList: 'silent' });
  assert.match(
    warnings.join('\n'),
    /was written with other namespaces, label selector, ignored paths or redaction; taking a new baseline/,
  );
  assert.deepEqual(await store.objects('configmaps'), []);
  assert.equal(await store.getMeta(SIGNATURE_KEY), signature);
  // The same selection in another order is the same signature.
  assert.equal(
    signature,
    selectionSignature({
      namespaces: ['shop', 'web'],
      excludeNamespaces: [],
      labelSelector: 'app=web',
      ignoredPaths: [],
      redaction: 'r',
    }),
  );
  await store.close();
});

test('a standby reads the previous state but writes nothing', async () => {
  const store = await previousRun('old');
  const catchUp = await CatchUp.read(store, { signature: 'new', log: silentLogger, readOnly: true });
  assert.equal(catchUp.hasPreviousState, false);
  assert.equal((await store.objects('configmaps')).length, 2, 'not forgotten');
  assert.equal(await store.getMeta(SIGNATURE_KEY), 'old');
  await store.close();
});

test('a state written before the replay (its resourceVersions where first LISTs ended): no replay this start, and those values are forgotten', async () => {
  const store = await previousRun();
  // As a kubediff before the replay left it: no word that the resourceVersions are followed points.
  await store.setMeta(FOLLOWED_KEY, '');
  const standby = await CatchUp.read(store, { signature: 's', log: silentLogger, readOnly: true });
  assert.equal(standby.plan(configmaps, undefined, 'silent').replayFrom, undefined);
  assert.equal(
    (await store.resources()).find((entry) => entry.resource === 'configmaps')?.resourceVersion,
    '5',
  );
  const catchUp = await CatchUp.read(store, { signature: 's', log: silentLogger, readOnly: false });
  assert.equal(catchUp.plan(configmaps, undefined, 'silent').replayFrom, undefined);
  assert.deepEqual(
    (await store.resources()).map((entry) => entry.resourceVersion),
    ['', '', '', ''],
    'forgotten: what this run writes is new',
  );
  assert.equal(await store.getMeta(FOLLOWED_KEY), '1');
  await store.close();
});
