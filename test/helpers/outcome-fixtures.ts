// The objects test/fixtures/outcomes/ holds, recorded from the pod plane (test/helpers/pod-plane.ts) by
// test/fixtures/record-outcomes.ts: pods, ReplicaSets, workloads and Warning Events as the API server
// served them in each state the outcome tests name.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ChangeEvent, OutcomeEvent } from '../../src/events/event.ts';
import type { KubeObject } from '../../src/kube/types.ts';

const folder = path.join(import.meta.dirname, '..', 'fixtures', 'outcomes');

/** `pod-oom-crashloop` → the object recorded in pod-oom-crashloop.json (a fresh copy each call). */
export function recorded(name: string): KubeObject {
  return JSON.parse(readFileSync(path.join(folder, `${name}.json`), 'utf8')) as KubeObject;
}

/** The Warning Events recorded beside the objects. */
export function recordedEvents(): KubeObject[] {
  return JSON.parse(readFileSync(path.join(folder, 'events.json'), 'utf8')) as KubeObject[];
}

/**
 * The change of a Deployment `shop/web` to the image `registry.test/shop:1.5` by alice, and its
 * OUTCOME: degraded 40 s later, three pods crash-looping OOM-killed (as the pod plane's `:oom` pods are).
 */
export function degradedRollout(cluster?: string): { change: ChangeEvent; outcome: OutcomeEvent } {
  const object = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    resource: 'deployments',
    namespace: 'shop',
    name: 'web',
    uid: 'uid-web',
    resourceVersion: '42',
  };
  const owner = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'uid-web' };
  const by = { user: { username: 'alice' } };
  const change: ChangeEvent = {
    id: 'uid-web:42',
    type: 'UPDATED',
    time: '2026-12-01T10:31:07.000Z',
    ...(cluster ? { cluster } : {}),
    object,
    owner,
    by,
    changes: [
      {
        op: 'replace',
        path: '/spec/template/spec/containers/0/image',
        from: 'registry.test/shop:1.4',
        to: 'registry.test/shop:1.5',
      },
    ],
  };
  const pod = (name: string) => ({
    name,
    phase: 'Running',
    ready: false,
    reason: 'CrashLoopBackOff',
    container: 'app',
    restarts: 2,
    lastTermination: { container: 'app', reason: 'OOMKilled', exitCode: 137 },
  });
  const outcome: OutcomeEvent = {
    id: `outcome:${change.id}`,
    type: 'OUTCOME',
    time: '2026-12-01T10:31:47.000Z',
    ...(cluster ? { cluster } : {}),
    object,
    owner,
    follows: [change.id],
    verdict: 'degraded',
    after: 40,
    evidence: {
      summary: '3/3 pods CrashLoopBackOff, last OOMKilled (exit 137)',
      revision: 'web-7d9f8',
      pods: [pod('web-7d9f8-a'), pod('web-7d9f8-b'), pod('web-7d9f8-c')],
      podCount: 3,
      warnings: [
        {
          object: 'Pod/web-7d9f8-a',
          reason: 'BackOff',
          message: 'Back-off restarting failed container app',
          count: 4,
        },
      ],
      conditions: [],
    },
    by,
  };
  return { change, outcome };
}
