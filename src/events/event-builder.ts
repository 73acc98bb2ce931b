// Turns informer notifications into the events of the contract. An update
// whose normalized objects do not differ (every change was in an ignored
// path, or a resync found it unchanged) produces no event at all. An update
// without a write (a LIST found the object served differently at the same
// resourceVersion) is an offline UPDATED with its cause, at the LIST's
// resourceVersion (so its id is new), naming no field manager. An update
// the diff fails on (a bug, or an object nested too deep for its recursion)
// is still reported, as changes of whole top-level fields, and the failure
// is reported once (src/util/event-failures.ts). Who made a change (`by`, each change's `manager`)
// comes from the managedFields the informer hands over with each call (attribution.ts).

import { diffObjects } from '../diff/diff.ts';
import { getProperty } from '../diff/json.ts';
import { formatPointer } from '../diff/pointer.ts';
import type { Change } from '../diff/types.ts';
import type { AddContext, DeleteContext, UpdateContext, WithoutWriteCause } from '../informer/informer.ts';
import type { StoredObject } from '../informer/store.ts';
import {
  apiVersionOf,
  type JsonObject,
  type JsonValue,
  qualifiedName,
  type ResourceType,
} from '../kube/types.ts';
import { type FailureReporter, identityOf } from '../util/event-failures.ts';
import { isoTimestamp } from '../util/timestamp.ts';
import { attributeUpdate, creatorOf } from './attribution.ts';
import type { ByInfo, ChangeEvent, EventType } from './event.ts';

export interface EventBuilderOptions {
  /** --cluster-name, or the kubeconfig context's name. */
  cluster: string | undefined;
  now?: () => Date;
  /** Where a failing diff is reported. Without it, the exception propagates. */
  failures?: FailureReporter<'diff'>;
}

export class EventBuilder {
  private readonly options: EventBuilderOptions;
  private readonly now: () => Date;

  constructor(options: EventBuilderOptions) {
    this.options = options;
    this.now = options.now ?? (() => new Date());
  }

  added(type: ResourceType, object: StoredObject, context: AddContext): ChangeEvent {
    const creator = context.managedFields ? creatorOf(context.managedFields, object.object) : undefined;
    return this.build('ADDED', type, object, object.resourceVersion, {
      by: creator ? { managers: [creator] } : undefined,
      offline: context.offline,
    });
  }

  /** Undefined when nothing reportable changed (every change was in an ignored path). */
  updated(
    type: ResourceType,
    previous: StoredObject,
    current: StoredObject,
    context: UpdateContext,
  ): ChangeEvent | undefined {
    const changes = this.changes(type, previous, current);
    if (changes.length === 0) return undefined;
    if (context.withoutWrite) {
      // Nobody wrote it: no manager, no user, and not the id of the write it had last.
      return this.build('UPDATED', type, current, context.withoutWrite.resourceVersion, {
        changes,
        offline: true,
        cause: context.withoutWrite.cause,
      });
    }
    if (!context.managedFields) {
      return this.build('UPDATED', type, current, current.resourceVersion, {
        changes,
        offline: context.offline,
      });
    }
    const attribution = attributeUpdate({
      previousSignature: previous.managers,
      currentSignature: current.managers,
      entries: context.managedFields,
      current: current.object,
      changes,
    });
    return this.build('UPDATED', type, current, current.resourceVersion, {
      by: attribution.managers ? { managers: attribution.managers } : undefined,
      changes: attribution.changes,
      offline: context.offline,
    });
  }

  deleted(type: ResourceType, last: StoredObject, context: DeleteContext): ChangeEvent {
    return this.build('DELETED', type, last, context.resourceVersion, {
      offline: context.offline,
      finalStateUnknown: context.finalStateUnknown,
    });
  }

  private changes(type: ResourceType, previous: StoredObject, current: StoredObject): Change[] {
    try {
      return diffObjects(previous.object, current.object);
    } catch (error) {
      if (!this.options.failures) throw error;
      const coarse = topLevelChanges(previous.object, current.object);
      // An update only in ignored paths stays silent even here.
      if (coarse.length === 0) return [];
      this.options.failures.report(
        'diff',
        'the diff',
        identityOf(qualifiedName(type), current),
        error,
        'the update is reported as changes of whole top-level fields (spec, metadata, …)',
      );
      return coarse;
    }
  }

  private build(
    eventType: EventType,
    type: ResourceType,
    object: StoredObject,
    resourceVersion: string,
    parts: EventParts,
  ): ChangeEvent {
    const event: ChangeEvent = {
      id: `${object.uid}:${resourceVersion}`,
      type: eventType,
      time: isoTimestamp(this.now().getTime()),
      ...(this.options.cluster ? { cluster: this.options.cluster } : {}),
      object: {
        apiVersion: apiVersionOf(type),
        kind: type.kind,
        resource: type.resource,
        ...(object.namespace ? { namespace: object.namespace } : {}),
        name: object.name,
        uid: object.uid,
        resourceVersion,
      },
    };
    // Assigned in the contract's field order.
    if (parts.by) event.by = parts.by;
    if (parts.changes) event.changes = parts.changes;
    if (parts.offline) event.offline = true;
    if (parts.cause) event.cause = parts.cause;
    if (parts.finalStateUnknown) event.finalStateUnknown = true;
    return event;
  }
}

/** What differs between events beyond the object: who, what changed, how it was seen. */
interface EventParts {
  by?: ByInfo | undefined;
  changes?: Change[];
  offline: boolean;
  cause?: WithoutWriteCause;
  finalStateUnknown?: boolean;
}

/**
 * The changes of each top-level field (spec, metadata, data, …), each whole: the fallback when the diff
 * fails. Both sides are normalized objects (ignored paths gone, Secrets redacted), like any change.
 */
function topLevelChanges(previous: JsonObject, current: JsonObject): Change[] {
  const changes: Change[] = [];
  for (const key of new Set([...Object.keys(previous), ...Object.keys(current)])) {
    const from = getProperty(previous, key);
    const to = getProperty(current, key);
    const path = formatPointer([key]);
    if (from === undefined && to !== undefined) changes.push({ op: 'add', path, to });
    else if (to === undefined && from !== undefined) changes.push({ op: 'remove', path, from });
    else if (from !== undefined && to !== undefined && !sameJson(from, to))
      changes.push({ op: 'replace', path, from, to });
  }
  return changes;
}

/** Equal as JSON; false when that cannot be told (JSON.stringify has its own depth limit). */
function sameJson(left: JsonValue, right: JsonValue): boolean {
  try {
    return JSON.stringify(left) === JSON.stringify(right);
  } catch {
    return false;
  }
}
