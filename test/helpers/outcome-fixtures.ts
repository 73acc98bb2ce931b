// The objects test/fixtures/outcomes/ holds, recorded from the pod plane (test/helpers/pod-plane.ts) by
// test/fixtures/record-outcomes.ts: pods, ReplicaSets, workloads and Warning Events as the API server
// served them in each state the outcome tests name.
import { readFileSync } from 'node:fs';
import path from 'node:path';
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
