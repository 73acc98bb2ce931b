// The outcome engine (src/events/outcomes/outcome-engine.ts) fed as the pipeline feeds it: objects as
// served (objectServed, from the pods and workloads recorded on the pod plane, renamed), then the reported
// changes (changeProcessed). What it reports is what a sink would get.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { ChangeEvent, OutcomeEvent } from '../../../src/events/event.ts';
import { OutcomeEngine } from '../../../src/events/outcomes/outcome-engine.ts';
import type { StoreChange } from '../../../src/events/pipeline.ts';
import type { KubeObject, ResourceType } from '../../../src/kube/types.ts';
import { silentLogger } from '../../../src/util/log.ts';
import { recorded } from '../../helpers/outcome-fixtures.ts';

const type = (group: string, resource: string, kind: string): ResourceType => ({
  group,
  version: 'v1',
  resource,
  kind,
  namespaced: true,
  verbs: ['list', 'watch'],
  shortNames: [],
  singularName: '',
  categories: [],
});
const DEPLOYMENTS = type('apps', 'deployments', 'Deployment');
const REPLICASETS = type('apps', 'replicasets', 'ReplicaSet');
const PODS = type('', 'pods', 'Pod');
const START = Date.parse('2026-12-01T10:00:00.000Z');

/** The Deployment `web` at `generation`, its controller having observed `observed`, naming `revision`. */
function deployment(options: {
  generation: number;
  observed: number;
  revision: string;
  replicas?: number;
  updated?: number;
  available?: number;
  conditions?: object[];
}): KubeObject {
  const object = recorded('deployment-healthy');
  const replicas = options.replicas ?? 2;
  object.metadata = {
    ...object.metadata,
    name: 'web',
    uid: 'web-uid',
    generation: options.generation,
    annotations: { 'deployment.kubernetes.io/revision': options.revision },
  };
  (object.spec as { replicas: number }).replicas = replicas;
  object.status = {
    observedGeneration: options.observed,
    replicas,
    updatedReplicas: options.updated ?? replicas,
    readyReplicas: options.available ?? replicas,
    availableReplicas: options.available ?? replicas,
    conditions: (options.conditions ?? []) as never,
  };
  return object;
}

function replicaSet(uid: string, revision: string): KubeObject {
  const object = recorded('replicaset');
  object.metadata = {
    ...object.metadata,
    name: `web-${uid}`,
    uid,
    annotations: { 'deployment.kubernetes.io/revision': revision },
    ownerReferences: [
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'web-uid', controller: true },
    ],
  };
  return object;
}

/** A pod of ReplicaSet `owner`, as recorded in `fixture`. */
function pod(name: string, owner: string, fixture = 'pod-ready'): KubeObject {
  const object = recorded(fixture);
  object.metadata = {
    ...object.metadata,
    name,
    uid: `${name}-uid`,
    ownerReferences: [
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `web-${owner}`, uid: owner, controller: true },
    ],
  };
  return object;
}

/** A Warning Event about `involved` that happened `count` times, first at `first` and last at `last` (ms). */
function warning(
  uid: string,
  involved: KubeObject,
  reason: string,
  count: number,
  times: { first: number; last: number },
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: uid, namespace: 'shop', uid, resourceVersion: '1' },
    type: 'Warning',
    reason,
    message: `${reason} happened`,
    count,
    firstTimestamp: new Date(times.first).toISOString(),
    lastTimestamp: new Date(times.last).toISOString(),
    involvedObject: { kind: 'Pod', name: involved.metadata.name, uid: involved.metadata.uid },
  } as unknown as KubeObject;
}

let version = 100;
function update(paths: string[], now: number): ChangeEvent {
  const rv = String(++version);
  return {
    id: `web-uid:${rv}`,
    type: 'UPDATED',
    time: new Date(now).toISOString(),
    object: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      resource: 'deployments',
      namespace: 'shop',
      name: 'web',
      uid: 'web-uid',
      resourceVersion: rv,
    },
    owner: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'web-uid' },
    by: { managers: [{ manager: 'kubectl-set', operation: 'Update' }] },
    changes: paths.map((path) => ({ op: 'replace' as const, path, from: 1, to: 2 })),
  };
}

function processed(event: ChangeEvent, kind: StoreChange['kind'] = 'updated'): StoreChange {
  return {
    kind,
    type: DEPLOYMENTS,
    object: {
      key: 'shop/web',
      namespace: 'shop',
      name: 'web',
      uid: 'web-uid',
      resourceVersion: event.object.resourceVersion,
      object: {},
    },
  };
}

describe('the outcome engine', () => {
  let clock = START;
  let engine: OutcomeEngine;
  let outcomes: OutcomeEvent[];
  const tick = async () => {
    mock.timers.tick(0);
    await Promise.resolve();
  };
  const seen = (kind: ResourceType, object: KubeObject) => engine.objectServed(kind, object, undefined);
  const change = (event: ChangeEvent) => engine.changeProcessed(processed(event), event, []);

  beforeEach(() => {
    mock.timers.enable({ apis: ['setTimeout', 'setImmediate'] });
    clock = START;
    outcomes = [];
    engine = new OutcomeEngine({ log: silentLogger, now: () => clock, timeoutMs: 600_000 });
    engine.reportTo((outcome) => outcomes.push(outcome));
    engine.synced(undefined);
    // Revision 1 runs, its two pods ready.
    seen(DEPLOYMENTS, deployment({ generation: 1, observed: 1, revision: '1' }));
    seen(REPLICASETS, replicaSet('rs1', '1'));
    seen(PODS, pod('old-a', 'rs1'));
    seen(PODS, pod('old-b', 'rs1'));
  });
  afterEach(async () => {
    await engine.stop(false);
    mock.timers.reset();
  });

  /** An image change at `clock`: the Deployment at generation 2, not yet observed. */
  const rollOut = () => {
    seen(DEPLOYMENTS, deployment({ generation: 2, observed: 1, revision: '1' }));
    const event = update(['/spec/template/spec/containers/0/image'], clock);
    change(event);
    return event;
  };

  it('a replayed change (a restart reporting what happened while it was down) opens no rollout', async () => {
    seen(DEPLOYMENTS, deployment({ generation: 2, observed: 1, revision: '1' }));
    const replayed = update(['/spec/template/spec/containers/0/image'], clock);
    engine.changeProcessed({ ...processed(replayed), offline: true, replayed: true }, replayed, []);
    // A live rollout after it, followed to its verdict: the only OUTCOME.
    const live = rollOut();
    clock += 1_000;
    seen(REPLICASETS, replicaSet('rs2', '2'));
    seen(PODS, pod('new-a', 'rs2'));
    seen(PODS, pod('new-b', 'rs2'));
    seen(DEPLOYMENTS, deployment({ generation: 2, observed: 2, revision: '2' }));
    await tick();
    assert.deepEqual(
      outcomes.map((outcome) => [outcome.verdict, outcome.follows]),
      [['healthy', [live.id]]],
    );
  });

  it('a rollout whose new pods become ready is healthy, `after` counted from the change', async () => {
    const event = rollOut();
    clock += 1_000;
    seen(REPLICASETS, replicaSet('rs2', '2'));
    seen(DEPLOYMENTS, deployment({ generation: 2, observed: 2, revision: '2', updated: 0, available: 0 }));
    seen(PODS, pod('new-a', 'rs2', 'pod-running-unready'));
    await tick();
    assert.equal(outcomes.length, 0, 'no verdict while the new pods are not ready');
    clock += 1_500;
    seen(PODS, pod('new-a', 'rs2'));
    seen(PODS, pod('new-b', 'rs2'));
    seen(DEPLOYMENTS, deployment({ generation: 2, observed: 2, revision: '2' }));
    await tick();
    assert.equal(outcomes.length, 1);
    const [outcome] = outcomes as [OutcomeEvent];
    assert.equal(outcome.id, `outcome:${event.id}`);
    assert.equal(outcome.verdict, 'healthy');
    assert.equal(outcome.after, 2.5);
    assert.deepEqual(outcome.follows, [event.id]);
    assert.deepEqual(outcome.object, event.object);
    assert.deepEqual(outcome.by, event.by);
    assert.equal(outcome.evidence.revision, 'web-rs2');
    assert.deepEqual(
      outcome.evidence.pods.map((p) => [p.name, p.ready]),
      [
        ['new-a', true],
        ['new-b', true],
      ],
    );
    assert.equal(outcome.evidence.summary, '2/2 pods ready');
  });

  it('a new pod that crash-loops OOMKilled makes it degraded, naming the reason, exit 137 and restarts', async () => {
    rollOut();
    seen(REPLICASETS, replicaSet('rs2', '2'));
    seen(DEPLOYMENTS, deployment({ generation: 2, observed: 2, revision: '2', updated: 1, available: 0 }));
    const crashing = pod('new-a', 'rs2', 'pod-oom-crashloop');
    seen(PODS, crashing);
    engine.warningSeen(undefined, warning('ev1', crashing, 'BackOff', 3, { first: clock, last: clock }));
    await tick();
    const [outcome] = outcomes;
    assert.equal(outcome?.verdict, 'degraded');
    assert.equal(
      outcome?.evidence.summary,
      '1/1 pods CrashLoopBackOff, last OOMKilled (exit 137), 2 restarts',
    );
    assert.deepEqual(outcome?.evidence.pods[0]?.lastTermination, {
      container: 'app',
      reason: 'OOMKilled',
      exitCode: 137,
    });
    assert.deepEqual(outcome?.evidence.warnings, [
      { object: 'Pod/new-a', reason: 'BackOff', message: 'BackOff happened', count: 3 },
    ]);
  });

  it("old pods' crashes and restarts before the change are not evidence", async () => {
    // The old revision crash-loops before and after the change; the new one runs.
    seen(PODS, pod('old-a', 'rs1', 'pod-oom-crashloop'));
    rollOut();
    seen(PODS, pod('old-a', 'rs1', 'pod-oom-running-again'));
    seen(REPLICASETS, replicaSet('rs2', '2'));
    seen(PODS, pod('new-a', 'rs2'));
    seen(PODS, pod('new-b', 'rs2'));
    seen(DEPLOYMENTS, deployment({ generation: 2, observed: 2, revision: '2' }));
    await tick();
    assert.equal(outcomes[0]?.verdict, 'healthy');
    assert.deepEqual(
      outcomes[0]?.evidence.pods.map((p) => p.name),
      ['new-a', 'new-b'],
    );
  });

  it('a second change before the verdict supersedes the first, which says by what', async () => {
    const first = rollOut();
    clock += 2_000;
    seen(DEPLOYMENTS, deployment({ generation: 3, observed: 1, revision: '1' }));
    const second = update(['/spec/template/spec/containers/0/image'], clock);
    change(second);
    await tick();
    assert.equal(outcomes.length, 1);
    assert.equal(outcomes[0]?.verdict, 'superseded');
    assert.equal(outcomes[0]?.id, `outcome:${first.id}`);
    assert.equal(outcomes[0]?.evidence.supersededBy, second.id);
    assert.equal(outcomes[0]?.after, 2);
  });

  it('a scale during a rollout joins it: one OUTCOME follows both', async () => {
    const first = rollOut();
    seen(DEPLOYMENTS, deployment({ generation: 3, observed: 1, revision: '1', replicas: 3 }));
    const scale = update(['/spec/replicas'], clock);
    change(scale);
    seen(REPLICASETS, replicaSet('rs2', '2'));
    for (const name of ['new-a', 'new-b', 'new-c']) seen(PODS, pod(name, 'rs2'));
    seen(DEPLOYMENTS, deployment({ generation: 3, observed: 3, revision: '2', replicas: 3 }));
    await tick();
    assert.equal(outcomes.length, 1);
    assert.deepEqual(outcomes[0]?.follows, [first.id, scale.id]);
    assert.equal(outcomes[0]?.verdict, 'healthy');
  });

  it('a scale alone is followed: healthy once the new replica is available, no restart', async () => {
    seen(DEPLOYMENTS, deployment({ generation: 2, observed: 1, revision: '1', replicas: 3 }));
    const scale = update(['/spec/replicas'], clock);
    change(scale);
    seen(PODS, pod('old-c', 'rs1'));
    seen(DEPLOYMENTS, deployment({ generation: 2, observed: 2, revision: '1', replicas: 3 }));
    await tick();
    assert.equal(outcomes[0]?.verdict, 'healthy');
    assert.equal(outcomes[0]?.evidence.summary, '3/3 pods ready');
    assert.ok(outcomes[0]?.evidence.pods.every((p) => p.restarts === 0));
  });

  it('a Warning from before the change counts only what it added since', async () => {
    const crashing = pod('old-a', 'rs1');
    // A Warning of the workload's pod, from before the change (the internal watch would have fed it).
    const times = { first: clock - 60_000, last: clock - 10_000 };
    engine.warningSeen(undefined, warning('ev-old', crashing, 'Unhealthy', 4, times));
    rollOut();
    seen(DEPLOYMENTS, deployment({ generation: 2, observed: 2, revision: '1', updated: 2, available: 1 }));
    await tick();
    assert.equal(outcomes.length, 0);
    // It happens twice more since: those two count.
    engine.warningSeen(undefined, warning('ev-old', crashing, 'Unhealthy', 6, { ...times, last: clock }));
    await engine.stop(true);
    assert.equal(outcomes[0]?.verdict, 'unknown');
    assert.deepEqual(outcomes[0]?.evidence.warnings, [
      { object: 'Pod/old-a', reason: 'Unhealthy', message: 'Unhealthy happened', count: 2 },
    ]);
  });

  it('a Warning read only after the change that began before it counts once if it happened again since', async () => {
    const crashing = pod('old-a', 'rs1');
    clock += 60_000;
    rollOut();
    seen(DEPLOYMENTS, deployment({ generation: 2, observed: 2, revision: '1', updated: 2, available: 1 }));
    clock += 5_000;
    // Read late (the first list of Events was still under way when the change was made): one last
    // happened before the change, the other again since.
    engine.warningSeen(
      undefined,
      warning('ev-quiet', crashing, 'Unhealthy', 5, { first: START, last: START + 50_000 }),
    );
    engine.warningSeen(undefined, warning('ev-again', crashing, 'BackOff', 7, { first: START, last: clock }));
    await engine.stop(true);
    assert.equal(outcomes[0]?.verdict, 'unknown');
    assert.deepEqual(outcomes[0]?.evidence.warnings, [
      { object: 'Pod/old-a', reason: 'BackOff', message: 'BackOff happened', count: 1 },
    ]);
  });

  it('no verdict within the bound: unknown, with the evidence of the moment', async () => {
    rollOut();
    seen(REPLICASETS, replicaSet('rs2', '2'));
    seen(PODS, pod('new-a', 'rs2', 'pod-running-unready'));
    seen(DEPLOYMENTS, deployment({ generation: 2, observed: 2, revision: '2', updated: 1, available: 0 }));
    await tick();
    assert.equal(outcomes.length, 0);
    clock += 600_000;
    mock.timers.tick(600_000);
    await tick();
    assert.equal(outcomes[0]?.verdict, 'unknown');
    assert.match(outcomes[0]?.evidence.note ?? '', /no verdict within 10m of the change/);
    assert.equal(outcomes[0]?.evidence.pods[0]?.reason, 'NotReady');
  });

  it('the progress deadline passed: failed', async () => {
    rollOut();
    seen(REPLICASETS, replicaSet('rs2', '2'));
    seen(PODS, pod('new-a', 'rs2', 'pod-running-unready'));
    seen(
      DEPLOYMENTS,
      deployment({
        generation: 2,
        observed: 2,
        revision: '2',
        updated: 1,
        available: 0,
        conditions: [
          {
            type: 'Progressing',
            status: 'False',
            reason: 'ProgressDeadlineExceeded',
            message: 'ReplicaSet "web-rs2" has timed out progressing.',
          },
        ],
      }),
    );
    await tick();
    assert.equal(outcomes[0]?.verdict, 'failed');
    assert.match(
      outcomes[0]?.evidence.summary ?? '',
      /^ReplicaSet "web-rs2" has timed out progressing\.; 0\/1 pods ready/,
    );
  });

  it('the workload deleted before a verdict: superseded by the deletion', async () => {
    rollOut();
    const deletion: ChangeEvent = { ...update([], clock), type: 'DELETED' };
    delete deletion.changes;
    engine.changeProcessed(processed(deletion, 'deleted'), deletion, []);
    await tick();
    assert.equal(outcomes[0]?.verdict, 'superseded');
    assert.equal(outcomes[0]?.evidence.supersededBy, deletion.id);
    assert.deepEqual(outcomes[0]?.evidence.replicas, { desired: 2, updated: 2, ready: 2, available: 2 });
  });

  it('judges nothing before its cluster synced', async () => {
    const fresh = new OutcomeEngine({ log: silentLogger, now: () => clock });
    const reported: OutcomeEvent[] = [];
    fresh.reportTo((outcome) => reported.push(outcome));
    fresh.objectServed(DEPLOYMENTS, deployment({ generation: 2, observed: 2, revision: '1' }), undefined);
    const event = update(['/spec/template/spec/containers/0/image'], clock);
    fresh.changeProcessed(processed(event), event, []);
    await tick();
    assert.equal(reported.length, 0);
    fresh.synced(undefined);
    await tick();
    assert.equal(reported[0]?.verdict, 'healthy');
    await fresh.stop(false);
  });

  it('a change of metadata alone, or the inventory of --initial, is not followed', async () => {
    change(update(['/metadata/labels/team'], clock));
    const added: ChangeEvent = { ...update([], clock), type: 'ADDED' };
    engine.changeProcessed({ ...processed(added, 'added'), initial: true }, added, []);
    await engine.stop(true);
    assert.equal(outcomes.length, 0);
  });

  it('at most maxOpen rollouts: the oldest is reported unknown', async () => {
    const bounded = new OutcomeEngine({ log: silentLogger, now: () => clock, maxOpen: 1 });
    const reported: OutcomeEvent[] = [];
    bounded.reportTo((outcome) => reported.push(outcome));
    const other = { ...update(['/spec/template'], clock) };
    other.object = { ...other.object, name: 'api', uid: 'api-uid' };
    bounded.changeProcessed(
      processed(update(['/spec/template'], clock)),
      update(['/spec/template'], clock),
      [],
    );
    bounded.changeProcessed(processed(other), other, []);
    await tick();
    assert.equal(reported[0]?.verdict, 'unknown');
    assert.equal(reported[0]?.object.name, 'web');
    assert.match(reported[0]?.evidence.note ?? '', /more than 1 rollouts were followed at once/);
    assert.equal(bounded.stats().settledAtBound, 1);
    await bounded.stop(false);
  });

  it('a health view at its bound leaves pods out, and the verdict says so', async () => {
    const bounded = new OutcomeEngine({ log: silentLogger, now: () => clock, maxRecords: 3 });
    const reported: OutcomeEvent[] = [];
    bounded.reportTo((outcome) => reported.push(outcome));
    bounded.synced(undefined);
    bounded.objectServed(DEPLOYMENTS, deployment({ generation: 2, observed: 1, revision: '1' }), undefined);
    const event = update(['/spec/template'], clock);
    bounded.changeProcessed(processed(event), event, []);
    bounded.objectServed(REPLICASETS, replicaSet('rs2', '2'), undefined);
    bounded.objectServed(PODS, pod('new-a', 'rs2'), undefined);
    bounded.objectServed(PODS, pod('new-b', 'rs2'), undefined);
    bounded.objectServed(DEPLOYMENTS, deployment({ generation: 2, observed: 2, revision: '2' }), undefined);
    await tick();
    assert.equal(reported[0]?.verdict, 'healthy');
    assert.equal(reported[0]?.evidence.podCount, 1);
    assert.match(reported[0]?.evidence.note ?? '', /health view was full/);
    assert.equal(bounded.stats().recordsLeftOut, 1);
    await bounded.stop(false);
  });

  it('a rollout resumed after a restart counts `after` from its change and says it was resumed', async () => {
    const event = update(['/spec/template'], clock - 30_000);
    const fresh = new OutcomeEngine({ log: silentLogger, now: () => clock });
    const reported: OutcomeEvent[] = [];
    fresh.reportTo((outcome) => reported.push(outcome));
    fresh.resume(undefined, [{ change: event, kind: 'Deployment', joined: [] }]);
    fresh.objectServed(DEPLOYMENTS, deployment({ generation: 2, observed: 2, revision: '2' }), undefined);
    fresh.objectServed(REPLICASETS, replicaSet('rs2', '2'), undefined);
    fresh.objectServed(PODS, pod('new-a', 'rs2'), undefined);
    fresh.objectServed(PODS, pod('new-b', 'rs2'), undefined);
    fresh.synced(undefined);
    await tick();
    assert.equal(reported[0]?.verdict, 'healthy');
    assert.equal(reported[0]?.after, 30);
    assert.match(reported[0]?.evidence.note ?? '', /followed again after kubediff restarted/);
    await fresh.stop(false);
  });
});
