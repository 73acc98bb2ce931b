// What the history's search looks in (src/state/search-text.ts): the texts people type, never the ones
// that only identify a record. The readers' use of it, on both stores, is in test/integration/ui-server.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChangeEvent, OutcomeEvent } from '../../../src/events/event.ts';
import { searchTextOf } from '../../../src/state/search-text.ts';
import { searchTexts } from '../../../src/state/timeline-assembly.ts';

const UID = '5f0c3b1e-9a7d-4c2b-8e11-0d2a6b7c9e41';
const OWNER_UID = 'a3e9c0d4-1b2f-4e6a-9c8d-7f5e4d3c2b1a';

const setImage: ChangeEvent = {
  id: `${UID}:4711`,
  type: 'UPDATED',
  time: '2026-12-02T14:05:00.000Z',
  cluster: 'prod-eu',
  object: {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    resource: 'deployments',
    namespace: 'shop',
    name: 'web',
    uid: UID,
    resourceVersion: '4711',
  },
  owner: { apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout', name: 'web-rollout', uid: OWNER_UID },
  by: {
    managers: [{ manager: 'kubectl-set', operation: 'Update', time: '2026-12-02T14:05:00Z' }],
    user: { username: 'alice@example.com', uid: 'c0ffee00-0000-4000-8000-000000000001' },
    auditID: 'feed1234-5678-4abc-9def-0123456789ab',
  },
  changes: [
    {
      op: 'replace',
      path: '/spec/template/spec/containers/0/image',
      from: 'registry.example.com/shop:1.4',
      to: 'registry.example.com/shop:1.5',
      manager: 'kubectl-set',
    },
    { op: 'add', path: '/data', to: { LOG_LEVEL: 'debug' } },
    { op: 'replace', path: '/spec/replicas', from: 2, to: 5 },
  ],
};

test('what people type is in it: image, user, manager, path, name, namespace, kind, values and their keys', () => {
  const text = searchTextOf(setImage);
  for (const typed of [
    'shop:1.5',
    'shop:1.4',
    'alice@example.com',
    'kubectl-set',
    'web',
    'shop',
    'Deployment',
    'prod-eu',
    'LOG_LEVEL',
    'debug',
    'web-rollout',
    '5',
  ])
    assert.ok(text.includes(typed), typed);
  // A path as people write it becomes a JSON Pointer (searchTexts), found among the changes' paths.
  assert.ok(searchTexts('containers[0].image').some((form) => text.includes(form)));
  assert.ok(searchTexts('spec.replicas').some((form) => text.includes(form)));
});

test('what only identifies a record is not: uids, the event id, resourceVersion, audit id, times', () => {
  const text = searchTextOf(setImage);
  for (const identity of [
    UID,
    OWNER_UID,
    UID.slice(9, 13), // a fragment of hex, as someone typing "9a7d" would search
    '4711',
    'c0ffee00',
    'feed1234',
    '14:05',
  ])
    assert.ok(!text.includes(identity), identity);
});

test("an OUTCOME's verdict and evidence are in it, the ids it follows are not", () => {
  const outcome: OutcomeEvent = {
    id: `outcome:${UID}:4711`,
    type: 'OUTCOME',
    time: '2026-12-02T14:05:40.000Z',
    object: setImage.object,
    follows: [`${UID}:4711`],
    verdict: 'degraded',
    after: 40,
    evidence: {
      summary: '3/3 pods CrashLoopBackOff, last OOMKilled (exit 137)',
      pods: [
        {
          name: 'web-59ddc5c7bf-dx627',
          phase: 'Running',
          ready: false,
          readySince: '2026-12-02T14:05:10Z',
          reason: 'CrashLoopBackOff',
          restarts: 3,
        },
      ],
      podCount: 3,
      warnings: [{ object: 'Pod/web-59ddc5c7bf-dx627', reason: 'BackOff', message: 'Back-off', count: 3 }],
      conditions: [],
      supersededBy: `${UID}:4700`,
    },
  };
  const text = searchTextOf(outcome);
  for (const typed of ['degraded', 'OOMKilled', 'CrashLoopBackOff', 'web-59ddc5c7bf-dx627', 'BackOff'])
    assert.ok(text.includes(typed), typed);
  assert.ok(!text.includes(UID.slice(0, 8)));
  assert.ok(!text.includes('14:05'));
});

test("a change's values are searched whole, keys named like the event's identity fields included", () => {
  const text = searchTextOf({
    ...setImage,
    changes: [
      // A ConfigMap key `id`, a custom resource's `spec.uid`, a value's own `time` and `resourceVersion`.
      { op: 'add', path: '/data', to: { id: 'shop-42', time: 'nightly-0300' } },
      { op: 'replace', path: '/spec', from: { uid: 'customer-7' }, to: { uid: 'customer-8' } },
      { op: 'add', path: '/status', to: { sync: [{ resourceVersion: 'rv-alpha', auditID: 'audit-beta' }] } },
    ],
  });
  for (const typed of [
    'id',
    'shop-42',
    'nightly-0300',
    'uid',
    'customer-7',
    'customer-8',
    'resourceVersion',
    'rv-alpha',
    'audit-beta',
  ])
    assert.ok(text.split('\n').includes(typed), typed);
  // The event's own identity fields beside them still are not.
  for (const identity of [UID, '4711', 'feed1234', '14:05']) assert.ok(!text.includes(identity), identity);
});

test('the links of a change: what they name is in it, the ids and times they carry are not', () => {
  const CONFIG_UID = '0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9';
  const text = searchTextOf({
    ...setImage,
    by: { ...setImage.by, impersonatedUser: { username: 'deployer', uid: OWNER_UID }, reviewUID: CONFIG_UID },
    usedBy: {
      workloads: [
        {
          object: {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            name: 'checkout',
            uid: OWNER_UID,
            namespace: 'shop',
          },
          via: [{ type: 'env' }],
          keys: ['LOG_LEVEL'],
        },
      ],
    },
    rollsOut: [
      {
        object: { kind: 'ConfigMap', namespace: 'shop', name: 'shop-config' },
        id: `${CONFIG_UID}:900`,
        time: '2026-12-02T13:59:00.000Z',
      },
    ],
  });
  for (const typed of ['deployer', 'checkout', 'env', 'shop-config', 'ConfigMap'])
    assert.ok(text.includes(typed), typed);
  for (const identity of [OWNER_UID, CONFIG_UID.slice(0, 8), '13:59', '900'])
    assert.ok(!text.includes(identity), identity);
});
