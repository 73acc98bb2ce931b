// The byte bounds of what a watch buffers, derived from the heap V8 may use (`--max-old-space-size`; the
// chart's maxOldSpaceSizeMB), documented in docs/deploy.md ("Memory"). Each buffer gets a fixed share of
// the heap limit, at most its documented maximum, and the shares add up to BUFFER_SHARE of the heap: so the
// bounds fit the heap by construction, whatever the heap, and the rest of it holds what no bound can
// hold back, the cluster's objects (the informers' stores) and the work in progress. The sinks share one
// part, divided among them. A setting given explicitly wins over its share (config/memory-settings.ts
// then checks that the bounds in force still fit the heap).
import { getHeapStatistics } from 'node:v8';

const MiB = 1024 * 1024;

/** A buffer's part of the heap limit, and the most it gets on any heap (its documented default). */
interface Share {
  readonly share: number;
  readonly maxBytes: number;
}

/**
 * Bodies read at once by the admission webhook (src/who/admission/admission-server.ts): each write of the
 * cluster is one request, so more at once than the audit webhook's batches, and smaller.
 */
export const ADMISSION_CONCURRENT_REQUESTS = 8;
/**
 * Of the admission webhook's part: the large reviews the admission thread holds (src/who/admission/admission-thread.ts),
 * in bodies of admission.maxRequestSize. A large review is held whole only in room it took there before its
 * body was read (the others keep their first 64 KiB), so these and the 8 reads fit the 8 bodies' part.
 */
export const ADMISSION_THREAD_REQUESTS = 4;
/**
 * The admission thread's heap per byte of the largest review: the densest (843,000 one-character keys in
 * 8 MB) takes 12 to be parsed and digested; at least ADMISSION_THREAD_MIN_HEAP_MIB.
 */
export const ADMISSION_THREAD_HEAP_PER_BYTE = 16;
export const ADMISSION_THREAD_MIN_HEAP_MIB = 32;
/** Bodies read at once by the audit webhook (src/who/audit/audit-server.ts). */
export const AUDIT_CONCURRENT_REQUESTS = 4;

/** The buffers' shares of the heap limit; their sum is BUFFER_SHARE. */
export const MEMORY_SHARES = {
  /** --state: changes held back until every sink has delivered them (KUBEDIFF_STATE_MAX_BACKLOG). */
  stateBacklog: { share: 1 / 12, maxBytes: 64 * MiB },
  /** --leader-elect: the events a standby holds back (KUBEDIFF_STANDBY_MAX_BUFFER). */
  standbyBuffer: { share: 1 / 12, maxBytes: 64 * MiB },
  /** --admission-listen: the bodies read at once (admission.maxRequestSize each). */
  admissionBodies: { share: 1 / 12, maxBytes: ADMISSION_CONCURRENT_REQUESTS * 8 * MiB },
  /** --audit-listen: the bodies read at once (audit.maxRequestSize each). */
  auditBodies: { share: 1 / 12, maxBytes: AUDIT_CONCURRENT_REQUESTS * 16 * MiB },
  /**
   * --audit-listen, --admission-listen: the changes waiting for their record in the who join
   * (src/who/who-join.ts), besides their count (audit.maxPending).
   */
  whoPending: { share: 1 / 48, maxBytes: 16 * MiB },
  /** Every sink's queue and open stories together, divided evenly among the sinks. */
  sinks: { share: 1 / 6, maxBytes: Number.POSITIVE_INFINITY },
} as const satisfies Record<string, Share>;

/** Of one sink's part: its queue (events waiting for delivery) and its open stories (stories.maxOpenSize). */
export const SINK_SPLIT = {
  /** A webhook's or a batch sink's queue (64 MiB at most); a chat sink's queue is 16 MiB at most. */
  queue: { share: 3 / 4, maxBytes: 64 * MiB, chatMaxBytes: 16 * MiB },
  stories: { share: 1 / 4, maxBytes: 16 * MiB },
} as const;

/**
 * What the bounds take of the heap at most: a little over half (25/48), the rest for the cluster's
 * objects.
 */
export const BUFFER_SHARE = Object.values(MEMORY_SHARES).reduce((sum, { share }) => sum + share, 0);

export interface MemoryBounds {
  /** The heap limit they derive from. */
  heapBytes: number;
  stateBacklogBytes: number;
  standbyBufferBytes: number;
  /** One admission review's body; ADMISSION_CONCURRENT_REQUESTS are read at once. */
  admissionRequestBytes: number;
  /** One audit request's body; AUDIT_CONCURRENT_REQUESTS are read at once. */
  auditRequestBytes: number;
  /** The changes waiting in the who join for their audit record or admission review. */
  whoPendingBytes: number;
  /** All the sinks' queues and open stories. */
  sinksBytes: number;
}

/**
 * The admission thread's bounds, from the largest review it may be given (admission.maxRequestSize, by
 * default a share of the heap): the bytes of reviews it holds, and its own heap (V8's old generation, a heap
 * of its own beside this one).
 */
export function admissionThreadBounds(maxRequestBytes: number): { maxBytes: number; heapMiB: number } {
  return {
    maxBytes: ADMISSION_THREAD_REQUESTS * maxRequestBytes,
    heapMiB: Math.max(
      ADMISSION_THREAD_MIN_HEAP_MIB,
      Math.ceil((ADMISSION_THREAD_HEAP_PER_BYTE * maxRequestBytes) / MiB),
    ),
  };
}

/** One sink's part of `sinksBytes`, shared among `sinks` sinks. */
export interface SinkBounds {
  /** A webhook's or batch sink's queue. */
  queueBytes: number;
  /** A chat sink's queue (its gathering batch and the closed stories waiting for their turn). */
  chatQueueBytes: number;
  /** Its open stories. */
  storyBytes: number;
}

/** The heap limit of this process, as V8 reports it (old and young generations). */
export function heapLimitBytes(): number {
  return getHeapStatistics().heap_size_limit;
}

const sized = ({ share, maxBytes }: Share, heapBytes: number): number =>
  Math.floor(Math.min(maxBytes, share * heapBytes));

/** Each buffer's bound on a heap of `heapBytes`. */
export function memoryBounds(heapBytes: number): MemoryBounds {
  return {
    heapBytes,
    stateBacklogBytes: sized(MEMORY_SHARES.stateBacklog, heapBytes),
    standbyBufferBytes: sized(MEMORY_SHARES.standbyBuffer, heapBytes),
    admissionRequestBytes: Math.floor(
      sized(MEMORY_SHARES.admissionBodies, heapBytes) / ADMISSION_CONCURRENT_REQUESTS,
    ),
    auditRequestBytes: Math.floor(sized(MEMORY_SHARES.auditBodies, heapBytes) / AUDIT_CONCURRENT_REQUESTS),
    whoPendingBytes: sized(MEMORY_SHARES.whoPending, heapBytes),
    sinksBytes: sized(MEMORY_SHARES.sinks, heapBytes),
  };
}

/** One sink's bounds when `sinks` sinks share `bounds.sinksBytes` (at least one). */
export function sinkBounds(bounds: MemoryBounds, sinks: number): SinkBounds {
  const each = bounds.sinksBytes / Math.max(1, sinks);
  const part = (share: number, maxBytes: number) => Math.floor(Math.min(maxBytes, share * each));
  return {
    queueBytes: part(SINK_SPLIT.queue.share, SINK_SPLIT.queue.maxBytes),
    chatQueueBytes: part(SINK_SPLIT.queue.share, SINK_SPLIT.queue.chatMaxBytes),
    storyBytes: part(SINK_SPLIT.stories.share, SINK_SPLIT.stories.maxBytes),
  };
}
