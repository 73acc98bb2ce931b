// "Used by" in process (src/events/used-by/): real informers handed objects as a reflector hands them
// (LIST pages, watch events, their states), kubediff's Pipeline with the owner stage and the tracker's
// stage, and what the events say: grouping by root owner, the ServiceAccount's pull secrets, keys read and
// unread, live by container start times, the index's bound, the sweep of a LIST, objects that run nothing,
// what --state restores, rollsOut, and the terminal's words. The same against a real API server (and pods
// that run) is in test/integration/used-by.test.ts and used-by-live.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PathMatcher } from '../../../src/diff/ignore.ts';
import { Normalizer } from '../../../src/diff/normalize.ts';
import { Redactor } from '../../../src/diff/redact.ts';
import type { ChangeEvent, UsedBy } from '../../../src/events/event.ts';
import { OwnerResolver, ownerStage } from '../../../src/events/owners.ts';
import { Pipeline } from '../../../src/events/pipeline.ts';
import { StoryBuilder } from '../../../src/events/story.ts';
import { keysChangedBy } from '../../../src/events/used-by/changed-keys.ts';
import { UsedByTracker } from '../../../src/events/used-by/used-by-tracker.ts';
import { Informer } from '../../../src/informer/informer.ts';
import type { ListerWatcher } from '../../../src/kube/lister-watcher.ts';
import { type JsonObject, type KubeObject, objectKey, type ResourceType } from '../../../src/kube/types.ts';
import { rollsOutLines, usedByLines } from '../../../src/sinks/core/used-by-text.ts';
import { EventFailures } from '../../../src/util/event-failures.ts';
import type { Logger } from '../../../src/util/log.ts';

function type(group: string, resource: string, kind: string): ResourceType {
  return {
    group,
    version: 'v1',
    resource,
    kind,
    namespaced: true,
    verbs: ['list', 'watch'],
    shortNames: [],
    singularName: '',
    categories: [],
  };
}

const TYPES = {
  configmaps: type('', 'configmaps', 'ConfigMap'),
  secrets: type('', 'secrets', 'Secret'),
  serviceaccounts: type('', 'serviceaccounts', 'ServiceAccount'),
  pods: type('', 'pods', 'Pod'),
  deployments: type('apps', 'deployments', 'Deployment'),
  replicasets: type('apps', 'replicasets', 'ReplicaSet'),
  jobs: type('batch', 'jobs', 'Job'),
};
type Resource = keyof typeof TYPES;

const NEVER: ListerWatcher = {
  server: 'https://unit.invalid',
  path: '/',
  maxReadBytes: 2 ** 20,
  list: () => Promise.reject(new Error('not listed')),
  listWhole: () => Promise.reject(new Error('not listed')),
  watch: () => Promise.reject(new Error('not watched')),
};

const CHANGE_TIME = '2026-12-01T10:31:07.412Z';

/** Informers of `watched` types into a pipeline with the owner and "used by" stages; every event is kept. */
function harness(
  watched: readonly Resource[],
  options: { maxObjects?: number; restored?: Partial<Record<Resource, KubeObject[]>> } = {},
) {
  const warnings: string[] = [];
  const log: Logger = {
    info: (line) => warnings.push(line),
    warn: (line) => warnings.push(line),
    debug: () => {},
  };
  const owners = new OwnerResolver();
  const tracker = new UsedByTracker({ owners, log, maxObjects: options.maxObjects });
  const events: ChangeEvent[] = [];
  const pipeline = new Pipeline({
    normalizer: new Normalizer({
      ignore: new PathMatcher(['/status', '/metadata/generation']),
      redactor: new Redactor(),
    }),
    rules: [ownerStage(owners), tracker.stage()],
    handover: [],
    delivery: {
      deliver: (event) => {
        if (event.type !== 'OUTCOME') events.push(event);
        return [];
      },
      accepted: () => [],
    },
    observers: [tracker],
    failures: new EventFailures(log),
    now: () => new Date(CHANGE_TIME),
  });
  const handler = pipeline.source('c');
  const informers = new Map<Resource, Informer>();
  for (const resource of watched) {
    const restored = options.restored?.[resource];
    if (restored) {
      pipeline.restored(
        TYPES[resource],
        restored.map((object) => ({
          key: objectKey(object.metadata),
          namespace: object.metadata.namespace,
          name: object.metadata.name,
          uid: object.metadata.uid,
          resourceVersion: object.metadata.resourceVersion,
          object: pipeline.normalize(TYPES[resource], object),
        })),
        'c',
      );
    }
    informers.set(
      resource,
      new Informer(
        NEVER,
        {
          type: TYPES[resource],
          normalize: (t, object) => pipeline.normalize(t, object, 'c'),
          initialList: 'silent',
          fieldManagers: false,
        },
        handler,
      ),
    );
  }
  owners.attach('c', (group, kind, namespace, name) => {
    for (const informer of informers.values()) {
      if (informer.type.group === group && informer.type.kind === kind)
        return informer.get(objectKey({ name, ...(namespace !== undefined ? { namespace } : {}) }));
    }
    return undefined;
  });
  let rv = 100;
  const at = (resource: Resource) => {
    const informer = informers.get(resource);
    if (!informer) throw new Error(`${resource} is not watched here`);
    return informer;
  };
  return {
    events,
    warnings,
    tracker,
    /** A LIST of `resource` (its states too: the index sweeps what it no longer finds). */
    list(resource: Resource, objects: KubeObject[]): void {
      const informer = at(resource);
      informer.stateChanged({ phase: 'listing' });
      informer.listStarted();
      informer.listPage(objects.map((object) => structuredClone(object)));
      informer.listCompleted(String(++rv));
      informer.stateChanged({ phase: 'watching' });
    },
    /** A LIST of `resource` begins (and is not over). */
    startListing(resource: Resource): void {
      at(resource).stateChanged({ phase: 'listing' });
    },
    /** A watch event; the object gets a new resourceVersion. Returns the event it made, if any. */
    watch(
      resource: Resource,
      kind: 'ADDED' | 'MODIFIED' | 'DELETED',
      object: KubeObject,
    ): ChangeEvent | undefined {
      const before = events.length;
      const served = structuredClone(object);
      served.metadata.resourceVersion = String(++rv);
      at(resource).watchEvent(kind, served);
      return events.length > before ? events[events.length - 1] : undefined;
    },
  };
}

let uids = 0;
function meta(name: string, extra: Record<string, unknown> = {}) {
  return { name, namespace: 'shop', uid: `${name}-uid-${++uids}`, resourceVersion: '1', ...extra };
}

function controlledBy(owner: KubeObject) {
  return {
    ownerReferences: [
      {
        apiVersion: owner.apiVersion ?? 'apps/v1',
        kind: owner.kind ?? '',
        name: owner.metadata.name,
        uid: owner.metadata.uid,
        controller: true,
      },
    ],
  };
}

function configMap(name: string, data: Record<string, string>): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(name), data };
}

function deployment(name: string, podSpec: JsonObject, generation = 1): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(name, { generation }),
    spec: { replicas: 2, template: { spec: podSpec } },
  };
}

function replicaSet(owner: KubeObject, podSpec: JsonObject, replicas = 2): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: meta(`${owner.metadata.name}-5fc8`, { generation: 1, ...controlledBy(owner) }),
    spec: { replicas, template: { spec: podSpec } },
  };
}

/** A running pod whose containers started at `startedAt` (each container of `podSpec`). */
function pod(
  name: string,
  podSpec: JsonObject,
  startedAt: string | undefined,
  owner?: KubeObject,
  phase = 'Running',
): KubeObject {
  const containers = (podSpec.containers as JsonObject[] | undefined) ?? [];
  const inits = (podSpec.initContainers as JsonObject[] | undefined) ?? [];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: meta(name, { generation: 1, ...(owner ? controlledBy(owner) : {}) }),
    spec: podSpec,
    status: {
      phase,
      ...(startedAt
        ? {
            containerStatuses: containers.map((c) => ({
              name: c.name as string,
              state: { running: { startedAt } },
            })),
            initContainerStatuses: inits.map((c) => ({
              name: c.name as string,
              state: { terminated: { startedAt, finishedAt: startedAt, exitCode: 0 } },
            })),
          }
        : {}),
    },
  };
}

const envOf = (cm: string, key: string): JsonObject => ({
  containers: [
    { name: 'app', env: [{ name: key.toUpperCase(), valueFrom: { configMapKeyRef: { name: cm, key } } }] },
  ],
});
const volumeOf = (cm: string, subPath?: string): JsonObject => ({
  containers: [
    { name: 'app', volumeMounts: [{ name: 'cfg', mountPath: '/cfg', ...(subPath ? { subPath } : {}) }] },
  ],
  volumes: [{ name: 'cfg', configMap: { name: cm } }],
});

function workload(usedBy: UsedBy | undefined, kind: string, name: string) {
  const found = usedBy?.workloads.find((w) => w.object.kind === kind && w.object.name === name);
  assert.ok(found, `${kind}/${name} in ${JSON.stringify(usedBy)}`);
  return found;
}

const BEFORE = '2026-12-01T10:00:00Z';
const SAME_SECOND = '2026-12-01T10:31:07Z';
const AFTER = '2026-12-01T10:31:08Z';

describe('usedBy', () => {
  it('groups a Deployment, its ReplicaSet and its pods under the Deployment; the root template speaks for the next pods', () => {
    const h = harness(['configmaps', 'deployments', 'replicasets', 'pods']);
    const cfg = configMap('cfg', { mode: 'a', debug: '0' });
    // The Deployment's template no longer reads `debug`; its ReplicaSet's (older) still does, and so do its pods.
    const web = deployment('web', envOf('cfg', 'mode'));
    const rs = replicaSet(web, envOf('cfg', 'debug'));
    h.list('deployments', [web]);
    h.list('replicasets', [rs]);
    h.list('pods', [
      pod('web-1', envOf('cfg', 'debug'), BEFORE, rs),
      pod('web-2', envOf('cfg', 'debug'), BEFORE, rs),
    ]);
    h.list('configmaps', [cfg]);
    const event = h.watch('configmaps', 'MODIFIED', { ...cfg, data: { mode: 'b', debug: '1' } });
    const usedBy = event?.usedBy;
    assert.deepEqual(
      usedBy?.workloads.map((w) => `${w.object.kind}/${w.object.name}`),
      ['Deployment/web'],
    );
    const webUse = workload(usedBy, 'Deployment', 'web');
    assert.deepEqual(webUse.object, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'web',
      uid: web.metadata.uid,
      namespace: 'shop',
    });
    // The root's template (mode) and the running pods (debug); not the ReplicaSet's template on its own.
    assert.deepEqual(
      webUse.via.map((v) => v.key),
      ['mode', 'debug'],
    );
    assert.deepEqual(webUse.keys, ['debug', 'mode']);
    assert.deepEqual(webUse.pods, { total: 2, old: 2 });
    assert.equal(webUse.live, false);
    assert.equal(usedBy?.unreadKeys, undefined);
    assert.equal(usedBy?.incomplete, undefined);
  });

  it('finds a Secret through the image pull secrets of the ServiceAccount that pods run as', () => {
    const h = harness(['secrets', 'serviceaccounts', 'deployments']);
    const sa = {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: meta('builder'),
      imagePullSecrets: [{ name: 'registry' }],
    };
    const registry = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: meta('registry'),
      data: { '.dockerconfigjson': 'e30=' },
    };
    h.list('serviceaccounts', [sa]);
    h.list('deployments', [
      deployment('build', { serviceAccountName: 'builder', containers: [{ name: 'b' }] }),
    ]);
    h.list('secrets', [registry]);
    const event = h.watch('secrets', 'MODIFIED', { ...registry, data: { '.dockerconfigjson': 'e30K' } });
    assert.deepEqual(workload(event?.usedBy, 'Deployment', 'build').via, [
      { type: 'serviceAccount', serviceAccount: 'builder' },
    ]);
    // Pods are not watched: who and how, not whether it is live.
    assert.equal(workload(event?.usedBy, 'Deployment', 'build').live, undefined);
    assert.equal(JSON.stringify(event).includes('e30K'), false, 'no Secret value in the event');
  });

  it('says which changed keys nobody reads', () => {
    const h = harness(['configmaps', 'deployments']);
    const cfg = configMap('cfg', { mode: 'a', debug: '0' });
    h.list('deployments', [deployment('web', envOf('cfg', 'mode'))]);
    h.list('configmaps', [cfg]);
    const event = h.watch('configmaps', 'MODIFIED', { ...cfg, data: { mode: 'a', debug: '1', new: 'x' } });
    assert.deepEqual(event?.usedBy?.unreadKeys, ['debug', 'new']);
    assert.deepEqual(workload(event?.usedBy, 'Deployment', 'web').keys, []);
  });

  it('is live or not by when each container that reads it started (one-second resolution)', () => {
    const h = harness(['configmaps', 'pods']);
    const cfg = configMap('cfg', { mode: 'a' });
    const initSpec: JsonObject = {
      initContainers: [{ name: 'render', volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }] }],
      containers: [{ name: 'app' }],
      volumes: [{ name: 'cfg', configMap: { name: 'cfg' } }],
    };
    h.list('pods', [
      pod('env-old', envOf('cfg', 'mode'), BEFORE),
      pod('env-same-second', envOf('cfg', 'mode'), SAME_SECOND),
      pod('env-new', envOf('cfg', 'mode'), AFTER),
      pod('env-waiting', envOf('cfg', 'mode'), undefined),
      pod('volume-old', volumeOf('cfg'), BEFORE),
      pod('subpath-old', volumeOf('cfg', 'mode'), BEFORE),
      pod('init-old', initSpec, BEFORE),
      pod('ended', envOf('cfg', 'mode'), BEFORE, undefined, 'Succeeded'),
    ]);
    h.list('configmaps', [cfg]);
    const usedBy = h.watch('configmaps', 'MODIFIED', { ...cfg, data: { mode: 'b' } })?.usedBy;
    const live = (name: string) => workload(usedBy, 'Pod', name).live;
    assert.equal(live('env-old'), false);
    assert.equal(live('env-same-second'), false, 'a start in the second of the change counts as before it');
    assert.equal(live('env-new'), true);
    assert.equal(live('env-waiting'), true, 'a container not started yet reads the new value');
    assert.equal(live('volume-old'), 'eventually');
    assert.equal(live('subpath-old'), false);
    assert.equal(live('init-old'), false, 'what an init container made from it is the old value');
    assert.ok(!usedBy?.workloads.some((w) => w.object.name === 'ended'), 'an ended pod runs nothing');
  });

  it('an ADDED carries usedBy only when something waits for it; a deleted pod drops out', () => {
    const h = harness(['configmaps', 'pods']);
    const waiting = pod(
      'waits',
      { containers: [{ name: 'app', envFrom: [{ configMapRef: { name: 'later', optional: true } }] }] },
      BEFORE,
    );
    h.list('pods', [waiting]);
    h.list('configmaps', []);
    const later = configMap('later', { a: '1' });
    const added = h.watch('configmaps', 'ADDED', later);
    assert.deepEqual(workload(added?.usedBy, 'Pod', 'waits').via, [
      { type: 'envFrom', container: 'app', optional: true },
    ]);
    // Started before without it: the env it has is the one without the ConfigMap.
    assert.equal(workload(added?.usedBy, 'Pod', 'waits').live, false);
    assert.equal(h.watch('configmaps', 'ADDED', configMap('lonely', { a: '1' }))?.usedBy, undefined);
    h.watch('pods', 'DELETED', waiting);
    const updated = h.watch('configmaps', 'MODIFIED', { ...later, data: { a: '2' } });
    assert.deepEqual(updated?.usedBy?.workloads, []);
  });

  it('a LIST forgets what it no longer finds; what runs nothing is no user', () => {
    const h = harness(['configmaps', 'replicasets', 'jobs']);
    const cfg = configMap('cfg', { mode: 'a' });
    const owner = deployment('web', envOf('cfg', 'mode'));
    const old = replicaSet(owner, envOf('cfg', 'mode'), 0);
    const current = replicaSet(
      { ...owner, metadata: { ...owner.metadata, name: 'web2' } },
      envOf('cfg', 'mode'),
    );
    const done: KubeObject = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: meta('report'),
      spec: { template: { spec: envOf('cfg', 'mode') } },
      status: { completionTime: BEFORE },
    };
    h.list('replicasets', [old, current]);
    h.list('jobs', [done]);
    h.list('configmaps', [cfg]);
    const first = h.watch('configmaps', 'MODIFIED', { ...cfg, data: { mode: 'b' } })?.usedBy;
    // The ReplicaSet scaled to zero and the finished Job run nothing; the other ReplicaSet names its owner.
    assert.deepEqual(
      first?.workloads.map((w) => `${w.object.kind}/${w.object.name}`),
      ['Deployment/web2'],
    );
    h.list('replicasets', []);
    const second = h.watch('configmaps', 'MODIFIED', { ...cfg, data: { mode: 'c' } })?.usedBy;
    assert.deepEqual(second?.workloads, []);
  });

  it('at its bound leaves new objects out, says it once, and marks usedBy incomplete', () => {
    const h = harness(['configmaps', 'deployments'], { maxObjects: 2 });
    const cfg = configMap('cfg', { mode: 'a' });
    h.list(
      'deployments',
      ['a', 'b', 'c', 'd'].map((name) => deployment(name, envOf('cfg', 'mode'))),
    );
    h.list('configmaps', [cfg]);
    const usedBy = h.watch('configmaps', 'MODIFIED', { ...cfg, data: { mode: 'b' } })?.usedBy;
    assert.equal(usedBy?.workloads.length, 2);
    assert.equal(usedBy?.incomplete, 'limit');
    assert.equal(h.warnings.filter((line) => line.includes('holds its limit of 2 objects')).length, 1);
    assert.equal(h.tracker.stats().clusters[0]?.leftOut, 2);
  });

  it('is incomplete while an indexed type has not been listed, unless the state restored it', () => {
    const h = harness(['configmaps', 'deployments']);
    const cfg = configMap('cfg', { mode: 'a' });
    h.list('configmaps', [cfg]);
    h.startListing('deployments');
    assert.equal(
      h.watch('configmaps', 'MODIFIED', { ...cfg, data: { mode: 'b' } })?.usedBy?.incomplete,
      'syncing',
    );
    const restoredWeb = deployment('web', envOf('cfg', 'mode'));
    const restored = harness(['configmaps', 'deployments', 'pods'], {
      restored: {
        deployments: [restoredWeb],
        pods: [pod('web-1', envOf('cfg', 'mode'), BEFORE, restoredWeb)],
      },
    });
    restored.list('configmaps', [cfg]);
    const usedBy = restored.watch('configmaps', 'MODIFIED', { ...cfg, data: { mode: 'b' } })?.usedBy;
    assert.equal(usedBy?.incomplete, undefined);
    // A restored pod has no start times (status is not stored): it counts as started before the change.
    assert.deepEqual(workload(usedBy, 'Deployment', 'web').pods, { total: 1, old: 1 });
    assert.equal(workload(usedBy, 'Deployment', 'web').live, false);
    // The first LIST of pods replaces what was restored: gone means gone.
    restored.list('pods', []);
    const after = restored.watch('configmaps', 'MODIFIED', { ...cfg, data: { mode: 'c' } })?.usedBy;
    assert.deepEqual(workload(after, 'Deployment', 'web').pods, { total: 0, old: 0 });
  });

  it('reads a new generation of the spec again, and keeps the references of a status update', () => {
    const h = harness(['configmaps', 'deployments']);
    const cfg = configMap('cfg', { mode: 'a' });
    const other = configMap('other', { mode: 'a' });
    const web = deployment('web', envOf('cfg', 'mode'));
    h.list('deployments', [web]);
    h.list('configmaps', [cfg, other]);
    // The template moves to `other` (generation 2): cfg's next change no longer names it.
    h.watch('deployments', 'MODIFIED', {
      ...web,
      metadata: { ...web.metadata, generation: 2 },
      spec: { template: { spec: envOf('other', 'mode') } },
    });
    assert.deepEqual(
      h.watch('configmaps', 'MODIFIED', { ...cfg, data: { mode: 'b' } })?.usedBy?.workloads,
      [],
    );
    assert.equal(
      h.watch('configmaps', 'MODIFIED', { ...other, data: { mode: 'b' } })?.usedBy?.workloads.length,
      1,
    );
  });
});

describe('rollsOut', () => {
  it("links a change pods did not see to the workload's next rollout, once, and a story carries it", () => {
    const h = harness(['configmaps', 'deployments', 'pods']);
    const cfg = configMap('cfg', { mode: 'a' });
    const web = deployment('web', envOf('cfg', 'mode'));
    h.list('deployments', [web]);
    h.list('pods', [pod('web-1', envOf('cfg', 'mode'), BEFORE, web)]);
    h.list('configmaps', [cfg]);
    const change = h.watch('configmaps', 'MODIFIED', { ...cfg, data: { mode: 'b' } });
    assert.equal(workload(change?.usedBy, 'Deployment', 'web').live, false);
    // A scale is no rollout; a template change is.
    assert.equal(
      h.watch('deployments', 'MODIFIED', {
        ...web,
        metadata: { ...web.metadata, generation: 2 },
        spec: { ...(web.spec as JsonObject), replicas: 5 },
      })?.rollsOut,
      undefined,
    );
    const restartedSpec = {
      replicas: 5,
      template: {
        metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': AFTER } },
        spec: envOf('cfg', 'mode'),
      },
    };
    const rollout = h.watch('deployments', 'MODIFIED', {
      ...web,
      metadata: { ...web.metadata, generation: 3 },
      spec: restartedSpec,
    });
    assert.deepEqual(rollout?.rollsOut, [
      { object: { kind: 'ConfigMap', namespace: 'shop', name: 'cfg' }, id: change?.id, time: change?.time },
    ]);
    const again = h.watch('deployments', 'MODIFIED', {
      ...web,
      metadata: { ...web.metadata, generation: 4 },
      spec: {
        ...restartedSpec,
        template: { ...restartedSpec.template, metadata: { annotations: { x: '1' } } },
      },
    });
    assert.equal(again?.rollsOut, undefined, 'each change is brought once');
    const stories: unknown[] = [];
    const builder = new StoryBuilder({ windowMs: 60_000 }, { story: (story) => stories.push(story) });
    if (change) builder.add(change);
    if (rollout) builder.add(rollout);
    builder.flush();
    const rolled = stories.find((story) => (story as { rollsOut?: unknown }).rollsOut) as
      | { rollsOut: unknown[] }
      | undefined;
    assert.deepEqual(rolled?.rollsOut, rollout?.rollsOut);
    assert.deepEqual(rollsOutLines(rollout?.rollsOut), ['rolls out configmap shop/cfg (changed 10:31:07Z)']);
  });
});

describe('the words', () => {
  it('say who uses it, how, and whether it is live; and the keys nobody reads', () => {
    assert.deepEqual(
      usedByLines({
        workloads: [
          {
            object: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'u' },
            via: [{ type: 'env', key: 'APP_MODE', env: 'APP_MODE', container: 'app' }],
            keys: ['APP_MODE'],
            live: false,
            pods: { total: 3, old: 3 },
          },
          {
            object: { apiVersion: 'batch/v1', kind: 'CronJob', name: 'report', uid: 'v' },
            via: [{ type: 'volume', volume: 'cfg', container: 'report' }],
            keys: ['APP_MODE'],
          },
        ],
        unreadKeys: ['DEBUG'],
      }),
      [
        'used by deployment/web (env APP_MODE: 3 pods still run the old value), cronjob/report (volume cfg)',
        'read by nobody: DEBUG',
      ],
    );
    assert.deepEqual(usedByLines({ workloads: [], incomplete: 'syncing' }), [
      'used by nothing kubediff watches (the index is incomplete: still listing)',
    ]);
  });

  it('keysChangedBy reads keys from changes, whole maps included', () => {
    assert.deepEqual(
      keysChangedBy([
        { op: 'replace', path: '/data/b', from: '1', to: '2' },
        { op: 'add', path: '/binaryData', to: { bin: 'AA==' } },
        { op: 'replace', path: '/metadata/labels/x', from: 'a', to: 'b' },
        { op: 'replace', path: '/data', from: { same: '1', gone: '1' }, to: { same: '1', a: '1' } },
      ]),
      ['a', 'b', 'bin', 'gone'],
    );
  });
});
