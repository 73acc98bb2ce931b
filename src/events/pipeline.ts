// The path of a change, in one object: what every informer of a cluster hands over becomes an event,
// passes the watch's rules, waits if this replica may not deliver yet, and reaches the sinks.
//
//   informer ─normalize─▶ store ─diff─▶ event ─▶ rules ─▶ (reported) ─▶ handover ─▶ delivery (router)
//                                                  │          │              │
//   observers:        stateChanged            (dropped)  eventReported   changeProcessed(change, mark)
//
// - normalize: before anything is stored (ignored paths dropped, Secrets and `redact:` paths hashed);
//   the informers call it, so the store and the diff only ever see normalized objects;
// - store/diff: the informer keeps the last state of each object and the event builder turns each
//   notification into an event of the contract (an update that changed nothing reportable into none);
// - rules: the stages that decide what is reported (the watch's event types, global filter, --explain);
// - handover: the stages that decide when it reaches the sinks (the leader gate holds events back on a
//   standby);
// - delivery: the router, which hands each event to every sink that wants it.
//
// Every notification, a silent baseline included, travels the whole way as a Handover, so the
// observers see each change exactly once, in order, after its event (if any) was handed to the sinks:
// the state recorder records it with the sinks' counts at that moment, and records a baseline by
// construction (there is no other route for one). Stages pass handovers on in the order they came; a
// stage may hold an event back (a standby) or, in time, delay one within a bound (an enrichment that
// waits for an audit record): the change then reaches the observers when it is passed on.
//
// Several clusters in one process are several sources: each cluster's informers get source(cluster),
// and every event carries its cluster; the stages, the observers and the delivery are shared.

import type { Normalizer } from '../diff/normalize.ts';
import type { Informer, InformerHandler } from '../informer/informer.ts';
import type { ReflectorState } from '../informer/reflector.ts';
import type { StoredObject } from '../informer/store.ts';
import type { JsonObject, KubeObject, ResourceType } from '../kube/types.ts';
import type { FailureReporter } from '../util/event-failures.ts';
import type { ChangeEvent } from './event.ts';
import { EventBuilder } from './event-builder.ts';

/** What an informer's store went through: the object as it is now (the last state, when deleted). */
export interface StoreChange {
  kind: 'added' | 'updated' | 'deleted' | 'baseline';
  type: ResourceType;
  object: StoredObject;
  /**
   * 'updated', 'deleted': the resourceVersion the store held before, i.e. the version the write replaced.
   * The admission webhook names writes by it (src/events/admission-match.ts). Absent for an update
   * without a write (UpdateContext.withoutWrite): it replaced no version.
   */
  previousResourceVersion?: string;
  /** 'updated': what the store held before (the same object, not a copy); the admission webhook checks a DELETE's old object against it. */
  previous?: StoredObject;
  /** An ADDED of the first LIST's inventory (--initial): not a change anyone just made. */
  initial?: true;
}

/** One change on its way: the event it made (none for a baseline, an unchanged update, or a dropped event). */
export interface Handover {
  /** Absent for an event a stage held back and passes on later: its change went on when it was held. */
  change: StoreChange | undefined;
  event: ChangeEvent | undefined;
  /** The event as it passed the rules (before the handover stages), for the history and the metrics. */
  reported?: ChangeEvent | undefined;
  /** The observers of the source it came from alone (a cluster's state recorder): see source(). */
  sourceObservers?: readonly PipelineObserver[] | undefined;
  /** The cluster of the source it came from (a fleet's fence holds or drops a cluster's handovers). */
  cluster?: string | undefined;
}

/** Per sink, in the router's order: how many events it had accepted. */
export type DeliveryMark = readonly number[];

/** The end of the pipeline: the router. */
export interface EventDelivery {
  /**
   * Hands `event` to every sink that wants it. This is acceptance, not delivery: each sink queues it (or
   * refuses it) and counts it before deliver() returns, and the mark returned says how many events
   * each sink had accepted with this one. An event is delivered once each sink has finished that many.
   */
  deliver(event: ChangeEvent): DeliveryMark;
  /** The accepted counts now (for a change that handed no event over). */
  accepted(): DeliveryMark;
}

/** A step between the event builder and the delivery. */
export interface EventStage {
  readonly name: string;
  /**
   * Connects the stage to the rest of the pipeline, once, when it is built; returns what takes handovers
   * in. A stage passes each handover on, in order, with its event changed, dropped (event undefined) or
   * held back (event undefined now, passed on later in a handover without a change).
   */
  connect(next: (handover: Handover) => void): (handover: Handover) => void;
}

/** Watches the pipeline without changing what flows through it. */
export interface PipelineObserver {
  /** An informer's health changed (listing, watching, failing, stopped); `cluster`: its source's. */
  stateChanged?(informer: Informer, state: ReflectorState, cluster: string | undefined): void;
  /** An event passed the rules: it is reported, now or (on a standby) when this replica leads. */
  eventReported?(event: ChangeEvent): void;
  /** A change went all the way: its event, if reported, was handed to the sinks at `mark` (or held back). */
  changeProcessed?(change: StoreChange, reported: ChangeEvent | undefined, mark: DeliveryMark): void;
}

/**
 * Where a change can fail on its way, the failure contained to that change (src/util/event-failures.ts)
 * and counted per stage (kubediff_event_failures_total): normalizing it and handing it to the pipeline
 * (the informer's `normalize` and `handler`), the diff, a filter (the watch's rules, a sink's), a sink,
 * and the state recorder.
 */
export const FAILURE_STAGES = ['normalize', 'diff', 'filter', 'sink', 'recorder', 'handler'] as const;
export type FailureStage = (typeof FAILURE_STAGES)[number];

export interface PipelineOptions {
  /** How each resource type's objects are stored and compared (ignored paths, redaction). */
  normalizer: Normalizer;
  /** What decides what is reported, in order. */
  rules: readonly EventStage[];
  /** What decides when it reaches the sinks, in order. */
  handover: readonly EventStage[];
  delivery: EventDelivery;
  observers: readonly PipelineObserver[];
  /** Where a change that fails at one stage is reported; it then goes on as that stage says. */
  failures: FailureReporter<FailureStage>;
  now?: () => Date;
}

export class Pipeline {
  private readonly options: PipelineOptions;
  private readonly enter: (handover: Handover) => void;

  constructor(options: PipelineOptions) {
    this.options = options;
    const observers = options.observers;
    // Whether a change without an event needs the sinks' counts: decided once, not per change.
    const marksWanted = observers.some((observer) => observer.changeProcessed);
    const deliver = (handover: Handover): void => {
      const own = handover.sourceObservers ?? [];
      const mark = handover.event
        ? options.delivery.deliver(handover.event)
        : marksWanted || own.length > 0
          ? options.delivery.accepted()
          : [];
      if (handover.change === undefined) return;
      for (const observer of observers) observer.changeProcessed?.(handover.change, handover.reported, mark);
      for (const observer of own) observer.changeProcessed?.(handover.change, handover.reported, mark);
    };
    const reported: EventStage = {
      name: 'reported',
      connect: (next) => (handover) => {
        if (handover.event) {
          for (const observer of observers) observer.eventReported?.(handover.event);
          for (const observer of handover.sourceObservers ?? []) observer.eventReported?.(handover.event);
        }
        next({ ...handover, reported: handover.event });
      },
    };
    const stages = [...options.rules, reported, ...options.handover];
    this.enter = stages.reduceRight<(handover: Handover) => void>(
      (next, stage) => stage.connect(next),
      deliver,
    );
  }

  /** What the informers store instead of an object as served: the object normalized for its type. */
  normalize(type: ResourceType, object: KubeObject): JsonObject {
    return this.options.normalizer.normalize(type, object);
  }

  /**
   * What the informers of one cluster notify: their events carry `cluster` (absent when undefined).
   * `own` observers see this source's changes and informers alone: with several clusters in one process,
   * each cluster's state recorder records its own cluster.
   */
  source(cluster: string | undefined, own: readonly PipelineObserver[] = []): InformerHandler {
    const builder = new EventBuilder({
      cluster,
      failures: this.options.failures,
      ...(this.options.now ? { now: this.options.now } : {}),
    });
    const observers = [...this.options.observers, ...own];
    const enter = this.enter;
    // Carried by each handover (no copy per event): undefined when the source has none of its own.
    const sourceObservers = own.length === 0 ? undefined : own;
    return {
      onAdd: (type, object, context) =>
        enter({
          change: { kind: 'added', type, object, ...(context.initial ? { initial: true as const } : {}) },
          event: builder.added(type, object, context),
          sourceObservers,
          cluster,
        }),
      onUpdate: (type, previous, current, context) =>
        enter({
          change: {
            kind: 'updated',
            type,
            object: current,
            ...(context.withoutWrite ? {} : { previousResourceVersion: previous.resourceVersion }),
            previous,
          },
          event: builder.updated(type, previous, current, context),
          sourceObservers,
          cluster,
        }),
      onDelete: (type, last, context) =>
        enter({
          change: {
            kind: 'deleted',
            type,
            object: last,
            previousResourceVersion: context.previousResourceVersion ?? last.resourceVersion,
          },
          event: builder.deleted(type, last, context),
          sourceObservers,
          cluster,
        }),
      onBaseline: (type, object) =>
        enter({ change: { kind: 'baseline', type, object }, event: undefined, sourceObservers, cluster }),
      onState: (informer, state) => {
        for (const observer of observers) observer.stateChanged?.(informer, state, cluster);
      },
    };
  }
}

/** A stage from a function that returns the event to pass on, or undefined to drop it. */
export function filterStage(
  name: string,
  decide: (event: ChangeEvent) => ChangeEvent | undefined,
): EventStage {
  return {
    name,
    connect: (next) => (handover) => {
      const event = handover.event && decide(handover.event);
      // The same event passed on (the usual case): the same handover, not a copy per event.
      next(event === handover.event ? handover : { ...handover, event });
    },
  };
}
