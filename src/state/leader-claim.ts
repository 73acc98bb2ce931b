// A leader-elected pair with a shared store (PostgreSQL; docs/state.md, "A leader-elected pair"): only
// the leader records, holding the cluster's claim. When a replica starts leading, it claims the cluster,
// waiting while the previous leader commits and releases it (asked again every CLAIM_RETRY_MS); past a
// grace period (`fenceAfterMs`, the lease duration) it ends the session that still holds it, whose
// process is gone or cut off. Holding the claim, it brings the snapshot up to date with its own informers
// (resync), and only then records. When it stops leading, it releases the claim.
import type { Informer } from '../informer/informer.ts';
import { qualifiedName } from '../kube/types.ts';
import { formatDuration } from '../util/duration.ts';
import { errorMessage } from '../util/errors.ts';
import { type EventFailures, identityOf } from '../util/event-failures.ts';
import type { Logger } from '../util/log.ts';
import { SIGNATURE_KEY } from './catch-up.ts';
import { ANY_NAMESPACE, encodePoints } from './followed-points.ts';
import type { FollowedVersions } from './followed-versions.ts';
import type { ListedTypes } from './listed-types.ts';
import { type ClaimedStateStore, type SerializedWrite, serializeWrite } from './store.ts';
import { MAX_BATCH } from './write-queue.ts';

/** A new leader asks for the claim this often while the previous leader still holds it. */
const CLAIM_RETRY_MS = 500;

/** What a new leader makes the store's snapshot from. */
export interface Snapshot {
  /** The latest discovery note (a standby queues none: it is written first). */
  note: Extract<SerializedWrite, { kind: 'resources' }> | undefined;
  /** What the recorded objects depend on (catch-up.ts, selectionSignature). */
  signature: string;
  informers: readonly Informer[];
  /** Marked for each type whose objects the resync wrote as a complete inventory. */
  listed: ListedTypes;
  /** How far each type is followed (followed-versions.ts): the resync moves its informers there. */
  followed: FollowedVersions;
}

export class LeaderClaim {
  readonly store: ClaimedStateStore;
  private readonly log: Logger;
  private readonly fenceAfterMs: number;
  private readonly failures: EventFailures | undefined;
  private pending = false;
  private retryAt = 0;
  private since = 0;
  private fenced = false;
  private waitLogged = false;

  constructor(options: {
    store: ClaimedStateStore;
    log: Logger;
    fenceAfterMs: number;
    failures?: EventFailures | undefined;
  }) {
    this.store = options.store;
    this.log = options.log;
    this.fenceAfterMs = options.fenceAfterMs;
    this.failures = options.failures;
  }

  /** Leading, but the claim not taken yet (and the snapshot not brought up to date). */
  get waiting(): boolean {
    return this.pending;
  }

  /** This replica leads (or must claim again after a lost connection): the claim is to be taken. */
  begin(): void {
    this.pending = true;
    this.retryAt = 0;
    this.since = Date.now();
    this.fenced = false;
    this.waitLogged = false;
  }

  /** No claim to take any more (this replica stopped leading). */
  abandon(): void {
    this.pending = false;
  }

  /**
   * Claims the cluster and brings the snapshot up to date; false while the previous leader still holds
   * the claim (asked again after CLAIM_RETRY_MS; after fenceAfterMs its session is ended).
   */
  async take(snapshot: Snapshot): Promise<boolean> {
    if (Date.now() < this.retryAt) return false;
    if (!(await this.store.claim())) {
      if (Date.now() - this.since >= this.fenceAfterMs && !this.fenced) {
        this.fenced = true;
        await this.fence();
      } else if (!this.waitLogged) {
        this.waitLogged = true;
        this.log.info(
          `state: waiting for the previous leader to commit and release its claim on the cluster in ${this.store.label}; ` +
            `changes are kept meanwhile (its session is ended after ${formatDuration(this.fenceAfterMs)}).`,
        );
      }
      this.retryAt = Date.now() + CLAIM_RETRY_MS;
      return false;
    }
    const { written, removed } = await this.resync(snapshot);
    this.pending = false;
    this.log.info(
      `state: recording in ${this.store.label} as the leader (snapshot brought up to date: ${written} object(s) written, ${removed} removed).`,
    );
    return true;
  }

  /** Gives the claim up; a failure is no matter (the claim ends with the connection). */
  async release(): Promise<void> {
    try {
      await this.store.release();
    } catch (error) {
      this.log.debug(
        `state: releasing the claim failed: ${errorMessage(error)} (it ends with the connection).`,
      );
    }
  }

  private async fence(): Promise<void> {
    try {
      const ended = await this.store.fence();
      if (ended > 0)
        this.log.warn(
          `state: the previous leader still held the claim ${formatDuration(this.fenceAfterMs)} after this replica took over; ` +
            'ended its database session (its process is gone, or cut off).',
        );
    } catch (error) {
      if (this.store.isTransient(error)) throw error;
      this.log.warn(
        `state: cannot end the session that still holds the claim in ${this.store.label}: ${errorMessage(error)}; ` +
          'waiting for it to end (give both replicas the same database role, or grant pg_signal_backend).',
      );
    }
  }

  /**
   * Makes the store's snapshot this replica's: the discovery as it saw it last, and per watched type the
   * objects of its informers. Types not watched any more lose their objects.
   */
  private async resync(snapshot: Snapshot): Promise<{ written: number; removed: number }> {
    const { store } = this;
    if (snapshot.note) await store.write([snapshot.note], new Map());
    await store.setMeta(SIGNATURE_KEY, snapshot.signature);
    const byResource = new Map<string, Informer[]>();
    for (const informer of snapshot.informers) {
      const resource = qualifiedName(informer.type);
      byResource.set(resource, [...(byResource.get(resource) ?? []), informer]);
    }
    const stale: SerializedWrite[] = (await store.resources())
      .filter((entry) => !byResource.has(entry.resource))
      .map((entry) => ({ kind: 'forget', resource: entry.resource }));
    if (stale.length > 0) await store.write(stale, new Map());
    let written = 0;
    let removed = 0;
    for (const [resource, informers] of byResource) {
      const counts = await this.resyncType(resource, informers, snapshot);
      written += counts.written;
      removed += counts.removed;
    }
    return { written, removed };
  }

  /**
   * One type's objects: written where the recorded resourceVersion differs, removed where gone (only
   * when every informer of the type has listed: else only the writes), in batches of MAX_BATCH.
   */
  private async resyncType(
    resource: string,
    informers: readonly Informer[],
    snapshot: Snapshot,
  ): Promise<{ written: number; removed: number }> {
    const recorded = await this.store.objectVersions(resource);
    const synced = informers.every((informer) => informer.hasSynced);
    const batch: SerializedWrite[] = [];
    for (const informer of informers) {
      for (const object of informer.objects()) {
        const before = recorded.get(object.key);
        recorded.delete(object.key);
        if (before === object.resourceVersion) continue;
        try {
          batch.push(serializeWrite({ kind: 'object', resource, object }));
        } catch (error) {
          this.failures?.report(
            'recorder',
            'recording the change in the state store',
            identityOf(resource, object),
            error,
            'it is not recorded; the next start reports it again',
          );
        }
      }
    }
    const written = batch.length;
    if (synced) for (const key of recorded.keys()) batch.push({ kind: 'delete', resource, key });
    // Each informer (one per namespace with -n) followed as far as it had read when its objects were
    // taken just above, and no further than the events this leader hands over and has not committed yet.
    const readTo = informers.map((informer) => [informer, informer.resourceVersion] as const);
    const points = new Map(
      readTo.map(([informer, version]) => [
        informer.namespace ?? ANY_NAMESPACE,
        snapshot.followed.atMost(resource, version),
      ]),
    );
    const complete = synced ? new Map([[resource, encodePoints(points)]]) : new Map<string, string>();
    for (let start = 0; start < batch.length || start === 0; start += MAX_BATCH) {
      const last = start + MAX_BATCH >= batch.length;
      await this.store.write(batch.slice(start, start + MAX_BATCH), last ? complete : new Map());
    }
    if (synced) {
      snapshot.listed.marked(complete);
      for (const [informer, version] of readTo) snapshot.followed.moveTo(informer, version);
    }
    return { written, removed: synced ? recorded.size : 0 };
  }
}
