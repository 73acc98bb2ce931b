// /api/v1/object's answer as the worker builds it (src/ui/object-view-worker.ts): versions A and B as the
// YAML `kubediff show` prints and their diff as `kubediff diff` prints it (one implementation), and an
// offline event's note in offlineNote()'s words, the pretty and chat outputs' (not the page's own).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { objectYaml } from '../../../src/diff/object-yaml.ts';
import type { ChangeEvent } from '../../../src/events/event.ts';
import { type ObjectAnswer, objectAnswer } from '../../../src/ui/object-view-worker.ts';

const object = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  resource: 'deployments',
  namespace: 'shop',
  name: 'web',
  uid: 'u1',
  resourceVersion: '1',
};

function stored(seq: number, event: Partial<ChangeEvent>): { seq: number; json: string } {
  return {
    seq,
    json: JSON.stringify({ id: `u1:${seq}`, time: `2026-03-04T14:0${seq}:00.000Z`, object, ...event }),
  };
}

const current = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop', uid: 'u1' },
  spec: { replicas: 5 },
};

function answer(wanted: number[]): ObjectAnswer {
  const records = {
    events: [
      stored(1, { type: 'ADDED' }),
      stored(2, {
        type: 'UPDATED',
        offline: true,
        cause: 'relist',
        changes: [{ op: 'replace', path: '/spec/replicas', from: 2, to: 5 }],
      }),
    ],
    truncated: false,
    bytesBound: false,
    current: JSON.stringify(current),
  };
  return JSON.parse(objectAnswer({ records, wanted, maxBytes: 1 << 20 })) as ObjectAnswer;
}

describe("an object's answer", () => {
  it('versions as YAML and their unified diff, the lines the terminal prints', () => {
    const built = answer([1, 2]);
    assert.equal(built.yaml?.['2'], objectYaml(current));
    assert.deepEqual(built.diff, [
      '--- deployments.apps/shop/web\t#1 2026-03-04T14:01:00.000Z',
      '+++ deployments.apps/shop/web\t#2 2026-03-04T14:02:00.000Z',
      '@@ -5,4 +5,4 @@',
      '   namespace: shop',
      '   uid: u1',
      ' spec:',
      '-  replicas: 2',
      '+  replicas: 5',
    ]);
  });

  it("an offline event carries offlineNote()'s words; one version alone, no diff", () => {
    const built = answer([2]);
    assert.equal(built.events[1]?.offlineNote, 'no write: found changed by a relist');
    assert.equal(built.events[0]?.offlineNote, undefined);
    assert.equal(built.diff, undefined);
  });
});
