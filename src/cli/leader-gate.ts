// What a replica does with events under --leader-elect: the leader delivers them; a standby watches
// the same cluster (so it is synced and takes over at once) and holds its events back.
//
// The handover checkpoint. The leader writes into the Lease, on every renewal (every retryPeriod, 2s by
// default) and when it releases the Lease, how far it has processed each resource: the resourceVersion
// each of its informers has reached (watch events and bookmarks), as a JSON map in the annotation
// `kubediff.io/checkpoint`. Every event with a resourceVersion up to that point has been handed to its
// sinks. A standby buffers its events and, each time it reads the Lease, drops those the leader has
// passed. When it takes over, it delivers what is left — the changes the old leader never processed —
// and from then on drops any event at or below the old leader's checkpoint (already delivered).
//
// Guarantees, honestly: after a clean stop (SIGTERM: the old leader drains its sinks and releases the
// Lease with a final checkpoint) nothing is lost and nothing is sent twice. After a crash, the changes
// in the gap are delivered once by the new leader; events the old leader handled in its last
// retryPeriod before dying (after its last checkpoint) are sent again, with the same `id`, so a receiver
// can drop them; events still queued in the dead leader's sinks (a webhook that was failing) are lost.
// resourceVersions are compared as numbers, which they are on etcd-backed API servers; a resource whose
// versions are not numbers (some aggregated APIs) is delivered in full after a takeover (duplicates, no
// loss).

import type { ChangeEvent } from '../diff/types.ts';
import type { Informer } from '../informer/informer.ts';
import type { Lease } from '../kube/leader-election.ts';
import { qualifiedName } from '../kube/types.ts';
import type { Logger } from '../log.ts';
import { resourceOfEvent } from './metrics.ts';

export const CHECKPOINT_ANNOTATION = 'kubediff.io/checkpoint';
/** A standby never holds more than this many events (a leader that writes no checkpoint, say). */
const DEFAULT_MAX_BUFFERED = 100_000;

export type Checkpoint = Map<string, bigint>;

function parseResourceVersion(text: string | undefined): bigint | undefined {
  return text !== undefined && /^\d{1,30}$/.test(text) ? BigInt(text) : undefined;
}

/** The checkpoint of a Lease, or an empty one (no annotation, or one we cannot read). */
export function checkpointOf(lease: Lease | undefined): Checkpoint {
  const checkpoint: Checkpoint = new Map();
  const text = lease?.metadata.annotations?.[CHECKPOINT_ANNOTATION];
  if (!text) return checkpoint;
  try {
    const parsed = JSON.parse(text) as { rv?: Record<string, unknown> };
    for (const [resource, value] of Object.entries(parsed.rv ?? {})) {
      const rv = typeof value === 'string' ? parseResourceVersion(value) : undefined;
      if (rv !== undefined) checkpoint.set(resource, rv);
    }
  } catch {
    // A checkpoint from a future version, or damaged: deliver everything (duplicates rather than loss).
  }
  return checkpoint;
}

/**
 * Where the informers are: per resource, the lowest resourceVersion among its informers (several with
 * -n), so that everything at or below it has been processed by all of them.
 */
export function checkpointAnnotation(informers: readonly Informer[]): string {
  const lowest = new Map<string, bigint | null>();
  for (const informer of informers) {
    const resource = qualifiedName(informer.type);
    const rv = informer.hasSynced ? parseResourceVersion(informer.resourceVersion) : undefined;
    const known = lowest.get(resource);
    if (rv === undefined || known === null) lowest.set(resource, null);
    else if (known === undefined || rv < known) lowest.set(resource, rv);
  }
  const rv: Record<string, string> = {};
  for (const [resource, value] of [...lowest].sort(([a], [b]) => a.localeCompare(b))) {
    if (value !== null) rv[resource] = value.toString();
  }
  return JSON.stringify({ v: 1, rv });
}

/** True when `checkpoint` says this event's change was already processed by the leader that wrote it. */
function coveredBy(checkpoint: Checkpoint, event: ChangeEvent): boolean {
  const limit = checkpoint.get(resourceOfEvent(event));
  if (limit === undefined) return false;
  const rv = parseResourceVersion(event.object.resourceVersion);
  return rv !== undefined && rv <= limit;
}

export class LeaderGate {
  private readonly deliver: (event: ChangeEvent) => void;
  private readonly log: Logger;
  private readonly maxBuffered: number;
  private leading = false;
  private buffer: ChangeEvent[] = [];
  /** The previous leader's last checkpoint: what it already delivered. */
  private floor: Checkpoint = new Map();
  private dropped = 0;

  constructor(options: { deliver: (event: ChangeEvent) => void; log: Logger; maxBuffered?: number }) {
    this.deliver = options.deliver;
    this.log = options.log;
    this.maxBuffered = options.maxBuffered ?? DEFAULT_MAX_BUFFERED;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  get buffered(): number {
    return this.buffer.length;
  }

  offer(event: ChangeEvent): void {
    if (this.leading) {
      if (!coveredBy(this.floor, event)) this.deliver(event);
      return;
    }
    this.buffer.push(event);
    if (this.buffer.length > this.maxBuffered) {
      this.buffer.shift();
      if (this.dropped++ === 0) {
        this.log.warn(
          `standby: more than ${this.maxBuffered} events held back without a checkpoint from the leader; dropping the oldest.`,
        );
      }
    }
  }

  /** Standby: the leader's latest checkpoint; what it covers will never be needed. */
  observe(lease: Lease): void {
    const checkpoint = checkpointOf(lease);
    this.floor = checkpoint;
    if (this.buffer.length > 0 && checkpoint.size > 0) {
      this.buffer = this.buffer.filter((event) => !coveredBy(checkpoint, event));
    }
  }

  /** Takes over: delivers what the previous leader had not, then everything new. */
  startLeading(previous: Lease | undefined): void {
    this.floor = checkpointOf(previous);
    const pending = this.buffer.filter((event) => !coveredBy(this.floor, event));
    const skipped = this.buffer.length - pending.length;
    this.buffer = [];
    this.leading = true;
    if (pending.length > 0 || skipped > 0) {
      this.log.info(
        `took over: delivering ${pending.length} change${pending.length === 1 ? '' : 's'} the previous leader had not processed` +
          (skipped > 0 ? ` (${skipped} it had are skipped)` : ''),
      );
    }
    for (const event of pending) this.deliver(event);
  }

  /** Lost the Lease: hold events back again until we lead. */
  stopLeading(): void {
    this.leading = false;
  }
}
