// The initial sync by streaming list (WatchList) against the real API server, seen through the API front
// (test/helpers/api-front.ts), which records every request: kubediff asks for the collection's state as
// one WATCH with sendInitialEvents, makes no LIST, reports every existing object (--initial) and then
// the changes, on the same stream. An API server with the WatchList feature off refuses such a watch
// with 422 Invalid: the front gives that answer (the API server's own wording), and kubediff reads the
// collection with a paged LIST instead, losing nothing.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { type ApiFront, type FrontRequest, startApiFront } from '../helpers/api-front.ts';
import { killAll, runKubediff } from '../helpers/cli.ts';
import { describeEvent, matching } from '../helpers/events.ts';
import { adminClient } from '../helpers/kube-admin.ts';

const admin = adminClient();
const fronts: ApiFront[] = [];

after(async () => {
  await killAll();
  await Promise.all(fronts.map((front) => front.close()));
  await admin.close();
});

const EXISTING = 12;

async function namespaceWithConfigMaps(prefix: string): Promise<string> {
  const namespace = await admin.createNamespace(prefix);
  for (let index = 0; index < EXISTING; index++) {
    await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, { metadata: { name: `old-${index}` } });
  }
  return namespace;
}

const configMapsOf = (namespace: string) => (request: FrontRequest) =>
  request.path === `/api/v1/namespaces/${namespace}/configmaps`;
const streamingList = (request: FrontRequest) =>
  request.watch && request.query.get('sendInitialEvents') === 'true';

/** `watch --initial` through a front: every existing ConfigMap ADDED once, then a change made after. */
async function watchThrough(front: ApiFront, namespace: string): Promise<void> {
  const kubeconfig = await admin.writeKubeconfig(front.url);
  // Pages of 5: the initial events are handed on 5 at a time, the LIST asks for 5 per page.
  const kd = runKubediff(
    ['watch', '--kubeconfig', kubeconfig, '--initial', '-n', namespace, '-r', 'configmaps', '-o', 'json'],
    { checkEvents: true, env: { KUBEDIFF_LIST_PAGE_SIZE: '5' }, timeoutMs: 30_000 },
  );
  await kd.waitForStderr(/watching 1 resource type/);
  await admin.patch(`/api/v1/namespaces/${namespace}/configmaps/old-3`, { data: { later: 'yes' } });
  const updated = await kd.waitForEvent(matching({ type: 'UPDATED', name: 'old-3' }));
  assert.deepEqual(updated.changes, [{ op: 'add', path: '/data', to: { later: 'yes' } }]);
  const added = kd.events
    .filter((event) => event.type === 'ADDED' && event.object.name.startsWith('old-'))
    .map((event) => event.object.name);
  assert.equal(added.length, EXISTING, kd.events.map(describeEvent).join('\n'));
  assert.equal(new Set(added).size, EXISTING);
  assert.ok(kd.events.every((event) => event.offline === undefined));
  const result = await kd.stop('SIGTERM');
  assert.equal(result.code, 0, result.stderr);
}

describe('initial sync', () => {
  it('by streaming list: one WATCH with sendInitialEvents, no LIST, then the changes on the same stream', async () => {
    const namespace = await namespaceWithConfigMaps('stream');
    const front = await startApiFront();
    fronts.push(front);
    await watchThrough(front, namespace);
    const requests = front.requests.filter(configMapsOf(namespace));
    assert.equal(requests.filter(streamingList).length, 1, 'one streaming list');
    assert.equal(requests[0]?.query.get('resourceVersionMatch'), 'NotOlderThan');
    assert.equal(requests[0]?.query.get('allowWatchBookmarks'), 'true');
    assert.deepEqual(
      requests.filter((request) => !request.watch),
      [],
      'no LIST',
    );
  });

  it('a server that refuses streaming lists (422): a paged LIST instead, and nothing lost', async () => {
    const namespace = await namespaceWithConfigMaps('no-stream');
    const front = await startApiFront();
    fronts.push(front);
    front.answer(streamingList, {
      status: 422,
      body: JSON.stringify({
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        message:
          'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled',
        reason: 'Invalid',
        code: 422,
      }),
    });
    await watchThrough(front, namespace);
    const requests = front.requests.filter(configMapsOf(namespace));
    assert.equal(requests.filter(streamingList).length, 1, 'asked once, refused');
    const lists = requests.filter((request) => !request.watch);
    // 12 objects (13 with the namespace's kube-root-ca.crt) in pages of 5.
    assert.ok(lists.length >= 3, `a paged LIST: ${lists.length} pages`);
    assert.equal(lists[0]?.query.get('limit'), '5');
    // The watch after the LIST is a plain one, from the LIST's resourceVersion.
    const watches = requests.filter((request) => request.watch && !streamingList(request));
    assert.ok(watches[0]?.query.get('resourceVersion'), 'a watch from the LIST');
  });
});
