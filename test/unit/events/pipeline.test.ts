// The pipeline (src/events/pipeline.ts) and its event builder, in process: what each informer
// notification becomes, in which order the stages and observers see it, and what the observers are told
// about delivery (the state recorder's crash safety rests on it). The whole path against a real API
// server is in test/integration/.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PathMatcher } from '../../../src/diff/ignore.ts';
import { Normalizer } from '../../../src/diff/normalize.ts';
import { Redactor } from '../../../src/diff/redact.ts';
import { type ChangeEvent, withBy } from '../../../src/events/event.ts';
import { EventBuilder } from '../../../src/events/event-builder.ts';
import {
  type DeliveryMark,
  type EventStage,
  filterStage,
  Pipeline,
  type PipelineObserver,
  type StoreChange,
} from '../../../src/events/pipeline.ts';
import type { StoredObject } from '../../../src/informer/store.ts';
import type { JsonObject } from '../../../src/kube/types.ts';
import { EventFailures } from '../../../src/util/event-failures.ts';
import { silentLogger } from '../../../src/util/log.ts';
import { configmaps } from '../../helpers/resource-types.ts';

const NOW = new Date('2026-11-22T10:31:07.412Z');

function stored(name: string, rv: string, data: JsonObject = {}, uid = `uid-${name}`): StoredObject {
  return {
    key: `shop/${name}`,
    namespace: 'shop',
    name,
    uid,
    resourceVersion: rv,
    object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'shop', uid }, data },
  };
}

/** A pipeline over a delivery that counts what one sink accepted; `log` is what every part saw, in order. */
function harness(options: { rules?: EventStage[]; handover?: EventStage[] } = {}) {
  const log: string[] = [];
  const delivered: ChangeEvent[] = [];
  const observer: PipelineObserver = {
    eventReported: (event) => log.push(`reported ${event.type} ${event.object.name}`),
    changeProcessed: (change: StoreChange, reported: ChangeEvent | undefined, mark: DeliveryMark) =>
      log.push(`processed ${change.kind} ${change.object.name} ${reported?.id ?? '-'} @${mark.join(',')}`),
    stateChanged: (_informer, state) => log.push(`state ${state.phase}`),
  };
  const pipeline = new Pipeline({
    normalizer: new Normalizer({ ignore: new PathMatcher([]), redactor: new Redactor() }),
    rules: options.rules ?? [],
    handover: options.handover ?? [],
    delivery: {
      deliver: (event) => {
        delivered.push(event);
        log.push(`delivered ${event.type} ${event.object.name}`);
        return [delivered.length];
      },
      accepted: () => [delivered.length],
    },
    observers: [observer],
    failures: new EventFailures(silentLogger),
    now: () => NOW,
  });
  return { pipeline, log, delivered, source: pipeline.source('prod-eu') };
}

describe('the pipeline', () => {
  it('turns each notification into the event of the contract and tells the observers after delivery', () => {
    const { source, log, delivered } = harness();
    source.onAdd(configmaps, stored('a', '10', { k: 'v1' }), { offline: false, initial: false });
    source.onUpdate(configmaps, stored('a', '10', { k: 'v1' }), stored('a', '11', { k: 'v2' }), {
      offline: false,
    });
    source.onDelete(configmaps, stored('a', '11', { k: 'v2' }), {
      offline: true,
      finalStateUnknown: true,
      resourceVersion: '15',
    });
    assert.deepEqual(delivered, [
      {
        id: 'uid-a:10',
        type: 'ADDED',
        time: NOW.toISOString(),
        cluster: 'prod-eu',
        object: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          resource: 'configmaps',
          namespace: 'shop',
          name: 'a',
          uid: 'uid-a',
          resourceVersion: '10',
        },
      },
      {
        id: 'uid-a:11',
        type: 'UPDATED',
        time: NOW.toISOString(),
        cluster: 'prod-eu',
        object: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          resource: 'configmaps',
          namespace: 'shop',
          name: 'a',
          uid: 'uid-a',
          resourceVersion: '11',
        },
        changes: [{ op: 'replace', path: '/data/k', from: 'v1', to: 'v2' }],
      },
      {
        id: 'uid-a:15',
        type: 'DELETED',
        time: NOW.toISOString(),
        cluster: 'prod-eu',
        object: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          resource: 'configmaps',
          namespace: 'shop',
          name: 'a',
          uid: 'uid-a',
          resourceVersion: '15',
        },
        offline: true,
        finalStateUnknown: true,
      },
    ]);
    assert.deepEqual(log, [
      'reported ADDED a',
      'delivered ADDED a',
      'processed added a uid-a:10 @1',
      'reported UPDATED a',
      'delivered UPDATED a',
      'processed updated a uid-a:11 @2',
      'reported DELETED a',
      'delivered DELETED a',
      'processed deleted a uid-a:15 @3',
    ]);
  });

  it('hands every baseline object and every silent update to the observers, with no event', () => {
    const { source, log, delivered } = harness();
    source.onAdd(configmaps, stored('a', '1'), { offline: false, initial: true });
    source.onBaseline(configmaps, stored('b', '2'));
    source.onUpdate(configmaps, stored('a', '1'), stored('a', '3'), { offline: true });
    assert.equal(delivered.length, 1);
    assert.deepEqual(log, [
      'reported ADDED a',
      'delivered ADDED a',
      'processed added a uid-a:1 @1',
      'processed baseline b - @1',
      'processed updated a - @1',
    ]);
  });

  it('runs the rules, then the handover stages; a dropped event still reaches the observers as a change', () => {
    const onlyUpdates = filterStage('rules', (event) => (event.type === 'UPDATED' ? event : undefined));
    const trimmed = filterStage('rules', (event) => ({ ...event, changes: event.changes?.slice(0, 1) }));
    const { source, log, delivered } = harness({ rules: [onlyUpdates, trimmed] });
    source.onAdd(configmaps, stored('a', '1', { x: '1', y: '1' }), { offline: false, initial: false });
    source.onUpdate(configmaps, stored('a', '1', { x: '1', y: '1' }), stored('a', '2', { x: '2', y: '2' }), {
      offline: false,
    });
    assert.deepEqual(
      delivered.map((event) => event.changes),
      [[{ op: 'replace', path: '/data/x', from: '1', to: '2' }]],
    );
    assert.deepEqual(log, [
      'processed added a - @0',
      'reported UPDATED a',
      'delivered UPDATED a',
      'processed updated a uid-a:2 @1',
    ]);
  });

  it('a held event is reported at once, its change processed at once, and delivered when released', () => {
    const held: ChangeEvent[] = [];
    let release: () => void = () => {};
    const standby: EventStage = {
      name: 'hold',
      connect: (next) => {
        release = () => {
          for (const event of held.splice(0)) next({ change: undefined, event });
        };
        return (handover) => {
          if (handover.event) held.push(handover.event);
          next({ ...handover, event: undefined });
        };
      },
    };
    const { source, log } = harness({ handover: [standby] });
    source.onAdd(configmaps, stored('a', '1'), { offline: false, initial: false });
    assert.deepEqual(log, ['reported ADDED a', 'processed added a uid-a:1 @0']);
    release();
    assert.deepEqual(log.slice(2), ['delivered ADDED a']);
  });

  it('passes informer states to the observers, and each cluster source names its cluster', () => {
    const { pipeline, log, delivered } = harness();
    pipeline.source(undefined).onAdd(configmaps, stored('a', '1'), { offline: false, initial: false });
    pipeline.source('dev').onState?.({} as never, { phase: 'watching' });
    assert.equal(delivered[0]?.cluster, undefined);
    assert.ok(!('cluster' in (delivered[0] ?? {})));
    assert.equal(log.at(-1), 'state watching');
  });
});

describe('the event builder', () => {
  const builder = new EventBuilder({
    cluster: undefined,
    now: () => NOW,
    failures: new EventFailures(silentLogger),
  });

  it('reports nothing for an update that changed nothing, and an offline flag only when offline', () => {
    assert.equal(
      builder.updated(configmaps, stored('a', '1'), stored('a', '2'), { offline: false }),
      undefined,
    );
    const added = builder.added(configmaps, stored('a', '1'), { offline: true, initial: false });
    assert.equal(added.offline, true);
    assert.equal(
      builder.added(configmaps, stored('a', '1'), { offline: false, initial: true }).offline,
      undefined,
    );
    assert.equal(added.object.namespace, 'shop');
  });

  it('an update without a write: offline, its cause, at the resourceVersion it was seen at (a new id), naming no manager', () => {
    const managedFields = [
      {
        manager: 'kubectl-edit',
        operation: 'Update',
        apiVersion: 'v1',
        time: '2026-11-22T10:00:00Z',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { 'f:x': {} } },
      },
    ];
    const event = builder.updated(
      configmaps,
      stored('a', '7', { x: '1' }),
      stored('a', '7', { x: '1', y: '1' }),
      {
        offline: true,
        managedFields,
        withoutWrite: { cause: 'schema', resourceVersion: '40' },
      },
    );
    assert.deepEqual(event, {
      id: 'uid-a:40',
      type: 'UPDATED',
      time: NOW.toISOString(),
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        resource: 'configmaps',
        namespace: 'shop',
        name: 'a',
        uid: 'uid-a',
        resourceVersion: '40',
      },
      changes: [{ op: 'add', path: '/data/y', to: '1' }],
      offline: true,
      cause: 'schema',
    });
    // The field order of the contract, `by` merged in later or not.
    assert.deepEqual(Object.keys(withBy(event as ChangeEvent, { auditID: 'x' })), [
      'id',
      'type',
      'time',
      'object',
      'by',
      'changes',
      'offline',
      'cause',
    ]);
  });

  it('a diff that fails reports the update as changes of whole top-level fields', () => {
    // Nested deeper than the diff's recursion can go, and different at the bottom.
    const nested = (leaf: string): JsonObject => {
      let value: JsonObject = { leaf };
      for (let i = 0; i < 20_000; i++) value = { n: value };
      return value;
    };
    const previous = stored('a', '1', { x: '1' });
    previous.object.deep = nested('a');
    const current = stored('a', '2', { x: '2' });
    current.object.deep = nested('b');
    const event = builder.updated(configmaps, previous, current, { offline: false });
    assert.deepEqual(
      event?.changes?.map((change) => `${change.op} ${change.path}`),
      ['replace /data', 'replace /deep'],
    );
  });
});
