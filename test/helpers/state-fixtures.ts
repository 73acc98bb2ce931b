// Objects, events and informers for the state's unit tests (src/state/): a ConfigMap in namespace `ns`
// as an informer's store holds it, its event as the pipeline reports it, and an informer as the recorder
// reads it (its type, whether its first LIST ended, and where).
import type { ChangeEvent } from '../../src/events/event.ts';
import type { Informer } from '../../src/informer/informer.ts';
import type { StoredObject } from '../../src/informer/store.ts';
import type { Selection } from '../../src/kube/selection.ts';
import type { ResourceType } from '../../src/kube/types.ts';
import { configmaps } from './resource-types.ts';

/** A ConfigMap `ns/<name>` at resourceVersion `rv`. */
export function storedObject(name: string, rv: string, data: Record<string, string> = {}): StoredObject {
  return {
    key: `ns/${name}`,
    namespace: 'ns',
    name,
    uid: `uid-${name}`,
    resourceVersion: rv,
    object: { metadata: { name, namespace: 'ns' }, data },
  };
}

/** The event of `ns/<name>` at `rv` (a ConfigMap unless `type` says otherwise). */
export function changeEvent(
  name: string,
  rv: string,
  time = '2026-01-01T00:00:00.000Z',
  eventType: ChangeEvent['type'] = 'ADDED',
  type: ResourceType = configmaps,
): ChangeEvent {
  return {
    id: `uid-${name}:${rv}`,
    type: eventType,
    time,
    object: {
      apiVersion: 'v1',
      kind: type.kind,
      resource: type.resource,
      namespace: 'ns',
      name,
      uid: `uid-${name}`,
      resourceVersion: rv,
    },
  };
}

export interface FakeInformer {
  informer: Informer;
  /** Its first LIST ended at `resourceVersion`. */
  sync(resourceVersion: string): void;
  /** Its first LIST failed (forbidden, say). */
  fail(): void;
  /** What its store holds (for a new leader's resync). */
  hold(...objects: StoredObject[]): void;
}

/** An informer of `type` (in `namespace`), as the recorder reads it. */
export function fakeInformer(type: ResourceType, namespace?: string): FakeInformer {
  const held: StoredObject[] = [];
  const state = {
    type,
    namespace,
    hasSynced: false,
    resourceVersion: '',
    failure: undefined as unknown,
    objects: () => held.values(),
  };
  return {
    informer: state as unknown as Informer,
    sync(resourceVersion) {
      state.hasSynced = true;
      state.resourceVersion = resourceVersion;
    },
    fail() {
      state.failure = new Error('forbidden');
    },
    hold(...objects) {
      held.push(...objects);
    },
  };
}

/** A discovery's selection: `watched` watched, `skipped` served but not selected. */
export function selection(
  watched: readonly ResourceType[],
  skipped: readonly ResourceType[] = [],
): Selection {
  return {
    watched: [...watched],
    skipped: skipped.map((type) => ({ type, reason: 'not selected' })),
    unresolved: [],
  } as unknown as Selection;
}
