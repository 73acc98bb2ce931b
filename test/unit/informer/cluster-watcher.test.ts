// The cluster watcher (src/informer/cluster-watcher.ts) over collections and a discovery answered by the
// test, with mock timers: it starts one informer per selected type, follows CustomResourceDefinitions
// (a type that appears is watched and its objects reported ADDED offline; one that goes has its
// objects reported DELETED), and says a lost connection once, not once per type. Milliseconds; against
// the real API server: test/integration/watch-crd.test.ts and watch-connection.test.ts.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { ClusterWatcher } from '../../../src/informer/cluster-watcher.ts';
import type { InformerHandler } from '../../../src/informer/informer.ts';
import type { DiscoveredResource } from '../../../src/kube/discovery.ts';
import { KubeError } from '../../../src/kube/errors.ts';
import type { CollectionReader } from '../../../src/kube/lister-watcher.ts';
import type { JsonObject, KubeObject } from '../../../src/kube/types.ts';
import { configMap, FakeCollection, page, settle } from '../../helpers/fake-collection.ts';
import { configmaps } from '../../helpers/resource-types.ts';

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const API_SERVICES = '/apis/apiregistration.k8s.io/v1/apiservices';
const WIDGETS = '/apis/example.com/v1/widgets';

const served = (type: typeof configmaps): DiscoveredResource => ({ ...type, stale: false });
const widgets = served({
  ...configmaps,
  group: 'example.com',
  resource: 'widgets',
  kind: 'Widget',
  shortNames: [],
});

/** A cluster whose collections (by path) and discovery the test answers. */
function fakeCluster() {
  const collections = new Map<string, FakeCollection>();
  const collection = (path: string) => {
    let found = collections.get(path);
    if (!found) {
      found = new FakeCollection();
      collections.set(path, found);
    }
    return found;
  };
  const client: CollectionReader = {
    server: 'https://api.test.invalid',
    maxReadBytes: 16 * 1024 * 1024,
    getJSON: async <T>(
      path: string,
      options: { query?: Record<string, unknown>; signal?: AbortSignal } = {},
    ) => {
      const body = await collection(path).list({
        limit: Number(options.query?.limit),
        continue: options.query?.continue as string | undefined,
        signal: options.signal ?? new AbortController().signal,
      });
      return { notModified: false as const, body: body as T, etag: undefined, bytes: body.bytes };
    },
    openStream: (path, options = {}) =>
      collection(path).watch({
        resourceVersion: String(options.query?.resourceVersion ?? ''),
        timeoutSeconds: Number(options.query?.timeoutSeconds),
        idleTimeoutMs: options.idleTimeoutMs ?? 0,
        signal: options.signal ?? new AbortController().signal,
      }),
  };
  const discovery = {
    types: [served(configmaps)],
    discover: async () => ({ resources: discovery.types, failedGroups: [] }),
  };
  return { client, discovery, collection };
}

function recorder(): InformerHandler & { log: string[] } {
  const log: string[] = [];
  return {
    log,
    onAdd: (type, object, context) =>
      log.push(`ADDED ${type.resource} ${object.name}${context.offline ? ' offline' : ''}`),
    onUpdate: (type, _previous, current, context) =>
      log.push(
        `UPDATED ${type.resource} ${current.name}${
          context.withoutWrite
            ? ` without a write (${context.withoutWrite.cause}) @${context.withoutWrite.resourceVersion}`
            : ''
        }`,
      ),
    onDelete: (type, last, context) =>
      log.push(
        `DELETED ${type.resource} ${last.name}${context.finalStateUnknown ? ' finalStateUnknown' : ''}`,
      ),
    onBaseline: (type, object) => log.push(`BASELINE ${type.resource} ${object.name}`),
  };
}

describe('ClusterWatcher', () => {
  let watcher: ClusterWatcher | undefined;
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 1_000_000 }));
  afterEach(async () => {
    await watcher?.stop();
    mock.timers.reset();
  });

  function start(cluster: ReturnType<typeof fakeCluster>) {
    const handler = recorder();
    const logLines: string[] = [];
    const log = {
      info: (message: string) => logLines.push(message),
      warn: (message: string) => logLines.push(`warning: ${message}`),
      debug: () => {},
    };
    watcher = new ClusterWatcher({
      client: cluster.client,
      discovery: cluster.discovery,
      selection: { include: [], exclude: [], namespaceScoped: false },
      namespaces: [],
      excludeNamespaces: [],
      normalize: (_type, object: KubeObject) => object as unknown as JsonObject,
      initial: false,
      handler,
      log,
      timing: { backoff: { maxMs: 30_000 }, initialSync: 'list' },
    });
    return { handler, logLines, started: watcher.start() };
  }

  it('a CRD that appears is watched and its objects reported ADDED offline; one that goes, DELETED', async () => {
    const cluster = fakeCluster();
    cluster.collection('/api/v1/configmaps').answerList(page('10', [configMap('a', '5')]));
    cluster.collection(CRDS).answerList(page('10', []), page('30', []));
    cluster.collection(API_SERVICES).answerList(page('10', []));
    const { handler, logLines, started } = start(cluster);
    const selection = await started;
    assert.deepEqual(
      selection?.watched.map((type) => type.resource),
      ['configmaps'],
    );
    assert.deepEqual(handler.log, ['BASELINE configmaps a']);

    // A CRD is created: its definition's watch event makes the watcher look again.
    cluster.discovery.types = [served(configmaps), widgets];
    cluster.collection(WIDGETS).answerList(page('20', [configMap('w1', '19')]));
    await settle();
    cluster.collection(CRDS).watches[0]?.send('ADDED', {
      metadata: { name: 'widgets.example.com', uid: 'c', resourceVersion: '20' },
    });
    await settle();
    assert.deepEqual(handler.log.slice(1), ['ADDED widgets w1 offline']);
    assert.ok(logLines.includes('watching new resource type widgets.example.com'));

    // Deleted: the informer stops, and what it knew is reported gone.
    cluster.discovery.types = [served(configmaps)];
    cluster.collection(CRDS).watches[0]?.send('DELETED', {
      metadata: { name: 'widgets.example.com', uid: 'c', resourceVersion: '25' },
    });
    await settle();
    assert.deepEqual(handler.log.slice(2), ['DELETED widgets w1 finalStateUnknown']);
    assert.ok(logLines.includes('stopped watching widgets.example.com: the API server no longer serves it'));
    assert.deepEqual(
      watcher?.allInformers().map((informer) => informer.type.resource),
      ['configmaps'],
    );
  });

  it('a CRD whose schema changes has its type read again: what is served differently is an update without a write; a change of its status or names is not', async () => {
    const cluster = fakeCluster();
    cluster.discovery.types = [served(configmaps), widgets];
    cluster.collection('/api/v1/configmaps').answerList(page('10', []));
    cluster.collection(API_SERVICES).answerList(page('10', []));
    const widget = (data: Record<string, string>) => ({ ...configMap('w1', '5', data), kind: 'Widget' });
    cluster.collection(WIDGETS).answerList(page('10', [widget({})]), page('40', [widget({ shards: '1' })]));
    const crd = (resourceVersion: string, shards: JsonObject, status: JsonObject = {}): KubeObject => ({
      metadata: { name: 'widgets.example.com', uid: 'c', resourceVersion },
      spec: {
        group: 'example.com',
        names: { plural: 'widgets', kind: 'Widget' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { properties: { data: { properties: { shards } } } } },
          },
        ],
      },
      status,
    });
    cluster.collection(CRDS).answerList(page('10', [crd('8', { type: 'string' })]));
    const { handler, logLines, started } = start(cluster);
    await started;
    await settle();
    assert.deepEqual(handler.log, ['BASELINE widgets w1']);

    // Its status changes (the API server's conditions): the objects are served as before.
    const crds = cluster.collection(CRDS).watches[0];
    crds?.send('MODIFIED', crd('20', { type: 'string' }, { conditions: [{ type: 'Established' }] }));
    await settle();
    assert.equal(cluster.collection(WIDGETS).lists.length, 1, 'not read again');

    // `default: "1"` added: the widgets are listed again, and w1 is reported as the API server now serves it.
    crds?.send('MODIFIED', crd('30', { type: 'string', default: '1' }));
    await settle();
    assert.equal(cluster.collection(WIDGETS).lists.length, 2);
    assert.deepEqual(handler.log.slice(1), ['UPDATED widgets w1 without a write (schema) @40']);
    assert.ok(
      logLines.includes(
        'widgets.example.com: its CustomResourceDefinition changed how its objects are served; reading them again.',
      ),
      logLines.join('\n'),
    );
  });

  it('a lost connection is one warning for every type, and one line when every watch is back', async () => {
    const cluster = fakeCluster();
    cluster.discovery.types = [served(configmaps), widgets];
    cluster.collection('/api/v1/configmaps').answerList(page('10', []));
    cluster.collection(WIDGETS).answerList(page('10', []));
    cluster.collection(CRDS).answerList(page('10', []));
    cluster.collection(API_SERVICES).answerList(page('10', []));
    const { logLines, started } = start(cluster);
    await started;
    await settle();
    const refused = new KubeError(
      'network',
      'cannot reach the API server at https://api.test.invalid: connection refused',
      { path: '/' },
    );
    for (const path of ['/api/v1/configmaps', WIDGETS]) {
      cluster.collection(path).failWatch(refused);
      cluster.collection(path).watches[0]?.break();
    }
    await settle();
    assert.deepEqual(
      logLines.filter((line) => line.startsWith('warning:')),
      [
        'warning: the watch connection broke (https://api.test.invalid/api/v1/configmaps); reconnecting with backoff.',
      ],
    );
    // Each retries after its own backoff (jittered: 0.4–1.2 s, then 0.8–2.4 s); the second attempt is
    // refused too, the third resumes.
    for (let second = 0; second < 8; second++) {
      mock.timers.tick(1_000);
      await settle();
    }
    assert.equal(cluster.collection(WIDGETS).watches.length, 2);
    assert.equal(logLines.filter((line) => line === 'reconnected: every watch has resumed.').length, 1);
    assert.equal(logLines.filter((line) => line.startsWith('warning:')).length, 1);
  });
});
