// The path of a change, in one object (CONTRIBUTING.md, "Layout"): informer ─normalize─▶ store ─diff─▶
// event ─▶ rules ─▶ handover (the leader gate) ─▶ delivery (router). Every notification, a silent baseline
// included, travels the whole way as a Handover, so observers (the state recorder) see each change
// exactly once, in order, after its event was handed to the sinks. Stages keep the order they are given;
// one may hold an event back or delay it within a bound. Several clusters are several sources sharing
// the stages, observers and delivery; every event carries its cluster.
// An OUTCOME (docs/outcomes.md) comes from an observer that follows rollouts (objectServed); it joins after
// the rules, waits at the handover like any event, and reaches the sinks and the outcomeProcessed observers.

import type { Normalizer } from '../diff/normalize.ts';
import type { Informer, InformerHandler } from '../informer/informer.ts';
import type { ReflectorState } from '../informer/reflector.ts';
import type { StoredObject } from '../informer/store.ts';
import type { JsonObject, KubeObject, ResourceType } from '../kube/types.ts';
import type { FailureReporter } from '../util/event-failures.ts';
import type { ChangeEvent, KubediffEvent, OutcomeEvent } from './event.ts';
import { EventBuilder } from './event-builder.ts';

/** What an informer's store went through: the object as it is now (the last state, when deleted). */
export interface StoreChange {
  kind: 'added' | 'updated' | 'deleted' | 'baseline';
  type: ResourceType;
  object: StoredObject;
  /**
   * 'updated', 'deleted': the resourceVersion the store held before, i.e. the version the write replaced.
   * The admission webhook names writes by it (src/who/admission/admission-match.ts). Absent for an update
   * without a write (UpdateContext.withoutWrite): it replaced no version.
   */
  previousResourceVersion?: string;
  /** 'updated': what the store held before (the same object, not a copy); the admission webhook checks a DELETE's old object against it. */
  previous?: StoredObject;
  /** An ADDED of the first LIST's inventory (--initial): not a change anyone just made. */
  initial?: true;
  /** The cluster of the source it came from (its events' `cluster`). */
  cluster?: string | undefined;
  /** Found by a LIST (or a replay) rather than a live watch event: it happened while nobody looked. */
  offline?: true;
  /**
   * A change of the replay after a restart (src/informer/informer.ts, ReplayMark): of an object created
   * and deleted while kubediff was not running, which no store holds (its event is kept, not its object).
   */
  replayed?: true;
}

/**
 * One change on its way: the event it made (none for a baseline, an unchanged update, or a dropped event).
 * Before the rules its event is a change (E = ChangeEvent); after them it may be an OUTCOME too.
 */
export interface Handover<E extends KubediffEvent = ChangeEvent> {
  /**
   * Absent for an event a stage held back and passes on later (its change went on when it was held), and
   * for an OUTCOME (no change of a store).
   */
  change: StoreChange | undefined;
  event: E | undefined;
  /** The event as it passed the rules (before the handover stages), for the history and the metrics. */
  reported?: E | undefined;
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
  deliver(event: KubediffEvent): DeliveryMark;
  /** The accepted counts now (for a change that handed no event over). */
  accepted(): DeliveryMark;
}

/**
 * A step between the event builder and the delivery: a rule (E = ChangeEvent: it sees changes alone) or a
 * handover stage (E = KubediffEvent: OUTCOMEs pass it too).
 */
export interface EventStage<E extends KubediffEvent = ChangeEvent> {
  readonly name: string;
  /**
   * Connects the stage to the rest of the pipeline, once, when it is built; returns what takes handovers
   * in. A stage passes each handover on, in order, with its event changed, dropped (event undefined) or
   * held back (event undefined now, passed on later in a handover without a change).
   */
  connect(next: (handover: Handover<E>) => void): (handover: Handover<E>) => void;
}

/** Watches the pipeline without changing what flows through it. */
export interface PipelineObserver {
  /**
   * An object as the API server served it, before it is normalized (status, managedFields and Secret
   * values as served: for this call only; keep no more of it than a compact view needs, and nothing of a
   * Secret). Called for every object an informer reads, a LIST's unchanged ones and a deletion's final
   * state included, before its change (if any) enters the pipeline. It must not throw.
   */
  objectServed?(type: ResourceType, object: KubeObject, cluster: string | undefined): void;
  /** An informer's health changed (listing, watching, failing, stopped); `cluster`: its source's. */
  stateChanged?(informer: Informer, state: ReflectorState, cluster: string | undefined): void;
  /** An event passed the rules: it is reported, now or (on a standby) when this replica leads. */
  eventReported?(event: ChangeEvent): void;
  /** A change went all the way: its event, if reported, was handed to the sinks at `mark` (or held back). */
  changeProcessed?(change: StoreChange, reported: ChangeEvent | undefined, mark: DeliveryMark): void;
  /** The objects an informer's store starts with, restored from a previous run's state (--state): normalized. */
  objectsRestored?(type: ResourceType, objects: readonly StoredObject[], cluster: string | undefined): void;
  /** An OUTCOME went all the way: handed to the sinks at `mark` (or held back on a standby). */
  outcomeProcessed?(outcome: OutcomeEvent, mark: DeliveryMark): void;
}

/**
 * Where a change can fail on its way, the failure contained to that change (src/util/event-failures.ts)
 * and counted per stage (kubediff_event_failures_total): normalizing it and handing it to the pipeline
 * (the informer's `normalize` and `handler`), the diff, a filter (the watch's rules, a sink's), a sink,
 * the state recorder, and the "used by" index (indexing an object, enriching a change).
 */
export const FAILURE_STAGES = [
  'normalize',
  'diff',
  'filter',
  'sink',
  'recorder',
  'handler',
  'used-by',
] as const;
export type FailureStage = (typeof FAILURE_STAGES)[number];

export interface PipelineOptions {
  /** How each resource type's objects are stored and compared (ignored paths, redaction). */
  normalizer: Normalizer;
  /** What decides what is reported, in order. */
  rules: readonly EventStage[];
  /** What decides when it reaches the sinks, in order. */
  handover: readonly EventStage<KubediffEvent>[];
  delivery: EventDelivery;
  observers: readonly PipelineObserver[];
  /** Where a change that fails at one stage is reported; it then goes on as that stage says. */
  failures: FailureReporter<FailureStage>;
  now?: () => Date;
}

export class Pipeline {
  private readonly options: PipelineOptions;
  private readonly enter: (handover: Handover) => void;
  /** Where an OUTCOME joins: after the rules, at the `reported` stage. */
  private readonly enterReported: (handover: Handover<KubediffEvent>) => void;
  /** The observers that read objects as served: asked once, not per object. */
  private readonly servedTo: readonly PipelineObserver[];
  /** Each cluster's own observers (source()), for its OUTCOMEs. */
  private readonly ownObservers = new Map<string | undefined, readonly PipelineObserver[]>();

  constructor(options: PipelineOptions) {
    this.options = options;
    const observers = options.observers;
    this.servedTo = observers.filter((observer) => observer.objectServed);
    // Whether a change without an event needs the sinks' counts: decided once, not per change.
    const marksWanted = observers.some((observer) => observer.changeProcessed);
    const deliver = (handover: Handover<KubediffEvent>): void => {
      const own = handover.sourceObservers ?? [];
      const mark = handover.event
        ? options.delivery.deliver(handover.event)
        : marksWanted || own.length > 0
          ? options.delivery.accepted()
          : [];
      const { change, reported } = handover;
      if (change === undefined) {
        // A fresh OUTCOME (not one a stage held back and passes on later: that one has no `reported`).
        if (reported?.type !== 'OUTCOME') return;
        for (const observer of observers) observer.outcomeProcessed?.(reported, mark);
        for (const observer of own) observer.outcomeProcessed?.(reported, mark);
        return;
      }
      const event = reported?.type === 'OUTCOME' ? undefined : reported;
      for (const observer of observers) observer.changeProcessed?.(change, event, mark);
      for (const observer of own) observer.changeProcessed?.(change, event, mark);
    };
    const afterRules = options.handover.reduceRight<(handover: Handover<KubediffEvent>) => void>(
      (next, stage) => stage.connect(next),
      deliver,
    );
    this.enterReported = (handover) => afterRules({ ...handover, reported: handover.event });
    const reported: EventStage = {
      name: 'reported',
      connect: () => (handover) => {
        if (handover.event) {
          for (const observer of observers) observer.eventReported?.(handover.event);
          for (const observer of handover.sourceObservers ?? []) observer.eventReported?.(handover.event);
        }
        this.enterReported(handover);
      },
    };
    this.enter = [...options.rules, reported].reduceRight<(handover: Handover) => void>(
      (next, stage) => stage.connect(next),
      () => {},
    );
  }

  /**
   * What the informers of `cluster` store instead of an object as served: the object normalized for its
   * type. The observers that read objects as served see it first.
   */
  normalize(type: ResourceType, object: KubeObject, cluster?: string): JsonObject {
    for (const observer of this.servedTo) observer.objectServed?.(type, object, cluster);
    return this.options.normalizer.normalize(type, object);
  }

  /** An informer of `cluster` starts with these objects, restored from the previous run's state. */
  restored(type: ResourceType, objects: readonly StoredObject[], cluster: string | undefined): void {
    for (const observer of this.options.observers) observer.objectsRestored?.(type, objects, cluster);
  }

  /**
   * An OUTCOME, from the observer that follows rollouts: it waits at the handover stages like any event,
   * reaches the sinks, then the outcomeProcessed observers (its cluster's own ones too).
   */
  report(outcome: OutcomeEvent): void {
    const own = this.ownObservers.get(outcome.cluster);
    this.enterReported({
      change: undefined,
      event: outcome,
      sourceObservers: own && own.length > 0 ? own : undefined,
    });
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
    this.ownObservers.set(cluster, own);
    // Carried by each handover (no copy per event): undefined when the source has none of its own.
    const sourceObservers = own.length === 0 ? undefined : own;
    // Each change names its cluster only when there is one (one object less per change otherwise).
    const where = cluster !== undefined ? { cluster } : {};
    return {
      onAdd: (type, object, context) =>
        enter({
          change: {
            kind: 'added',
            type,
            object,
            ...(context.initial ? { initial: true as const } : {}),
            ...replayMarks(context),
            ...where,
          },
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
            ...replayMarks(context),
            ...where,
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
            ...replayMarks(context),
            ...where,
          },
          event: builder.deleted(type, last, context),
          sourceObservers,
          cluster,
        }),
      onBaseline: (type, object) =>
        enter({
          change: { kind: 'baseline', type, object, ...where },
          event: undefined,
          sourceObservers,
          cluster,
        }),
      onState: (informer, state) => {
        for (const observer of observers) observer.stateChanged?.(informer, state, cluster);
      },
    };
  }
}

const LIVE: Pick<StoreChange, 'offline' | 'replayed'> = Object.freeze({});
const OFFLINE: Pick<StoreChange, 'offline' | 'replayed'> = Object.freeze({ offline: true });
const REPLAYED: Pick<StoreChange, 'offline' | 'replayed'> = Object.freeze({ offline: true, replayed: true });

/** A change's `offline` and `replayed`, set only when true: no object made per change. */
function replayMarks(context: {
  offline: boolean;
  replayed?: true;
}): Pick<StoreChange, 'offline' | 'replayed'> {
  return !context.offline ? LIVE : context.replayed ? REPLAYED : OFFLINE;
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
