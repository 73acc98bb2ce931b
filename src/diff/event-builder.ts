// Turns informer notifications into the events of the contract. An update
// whose normalized objects do not differ (every change was in an ignored
// path, or a resync found it unchanged) produces no event at all.
import type { AddContext, DeleteContext, InformerHandler, UpdateContext } from '../informer/informer.ts';
import type { StoredObject } from '../informer/store.ts';
import { apiVersionOf, type ResourceType } from '../kube/types.ts';
import { diffObjects } from './diff.ts';
import type { Change, ChangeEvent, EventType } from './types.ts';

export interface EventBuilderOptions {
  /** --cluster-name, or the kubeconfig context's name. */
  cluster: string | undefined;
  emit: (event: ChangeEvent) => void;
  now?: () => Date;
}

export class EventBuilder implements InformerHandler {
  private readonly options: EventBuilderOptions;
  private readonly now: () => Date;

  constructor(options: EventBuilderOptions) {
    this.options = options;
    this.now = options.now ?? (() => new Date());
  }

  onAdd(type: ResourceType, object: StoredObject, context: AddContext): void {
    this.options.emit(
      this.build('ADDED', type, object, object.resourceVersion, undefined, context.offline, false),
    );
  }

  onUpdate(type: ResourceType, previous: StoredObject, current: StoredObject, context: UpdateContext): void {
    const changes = diffObjects(previous.object, current.object);
    if (changes.length === 0) return;
    this.options.emit(
      this.build('UPDATED', type, current, current.resourceVersion, changes, context.offline, false),
    );
  }

  onDelete(type: ResourceType, last: StoredObject, context: DeleteContext): void {
    this.options.emit(
      this.build(
        'DELETED',
        type,
        last,
        context.resourceVersion,
        undefined,
        context.offline,
        context.finalStateUnknown,
      ),
    );
  }

  private build(
    eventType: EventType,
    type: ResourceType,
    object: StoredObject,
    resourceVersion: string,
    changes: Change[] | undefined,
    offline: boolean,
    finalStateUnknown: boolean,
  ): ChangeEvent {
    const event: ChangeEvent = {
      id: `${object.uid}:${resourceVersion}`,
      type: eventType,
      time: this.now().toISOString(),
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
    if (changes) event.changes = changes;
    if (offline) event.offline = true;
    if (finalStateUnknown) event.finalStateUnknown = true;
    return event;
  }
}
