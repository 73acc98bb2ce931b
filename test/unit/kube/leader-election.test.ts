// Leader election (src/kube/leader-election.ts) against an in-memory Lease API that behaves like the
// API server's (404 for a missing Lease, 409 for a stale resourceVersion), with mock timers: taking a
// free Lease, standing by behind a live leader, taking over once the leader's record has not changed
// for the lease duration (by our own clock), giving up after the renew deadline, releasing on stop, and
// one leader among two candidates. The same against the real API server, with two kubediff processes,
// is test/integration/leader-handover.test.ts.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { JsonResponse, RequestOptions } from '../../../src/kube/client.ts';
import { KubeError } from '../../../src/kube/errors.ts';
import {
  type LeaderCallbacks,
  LeaderElector,
  type Lease,
  type LeaseClient,
} from '../../../src/kube/leader-election.ts';
import { silentLogger } from '../../../src/util/log.ts';
import { settle } from '../../helpers/fake-collection.ts';
import { nonEmpty } from '../../helpers/non-empty.ts';

/** One Lease, kept as the API server keeps it: every write must carry the resourceVersion last read. */
class FakeLeases implements LeaseClient {
  lease: Lease | undefined;
  private version = 0;

  async getJSON<T>(path: string, _options?: RequestOptions): Promise<JsonResponse<T>> {
    if (!this.lease) throw new KubeError('not-found', '404 NotFound', { status: 404, path });
    return { notModified: false, body: structuredClone(this.lease) as T, etag: undefined, bytes: 0 };
  }

  async postJSON<T>(path: string, body: unknown): Promise<T> {
    if (this.lease) throw new KubeError('request', '409 AlreadyExists', { status: 409, path });
    return this.store(body as Lease) as T;
  }

  async putJSON<T>(path: string, body: unknown): Promise<T> {
    const lease = body as Lease;
    if (lease.metadata.resourceVersion !== this.lease?.metadata.resourceVersion)
      throw new KubeError('request', '409 Conflict', { status: 409, path });
    return this.store(lease) as T;
  }

  private store(lease: Lease): Lease {
    this.lease = structuredClone({
      ...lease,
      metadata: { ...lease.metadata, resourceVersion: String(++this.version) },
    });
    return structuredClone(this.lease);
  }
}

const CONFIG = {
  namespace: 'kubediff',
  name: 'kubediff',
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

describe('LeaderElector', () => {
  const electors: LeaderElector[] = [];
  beforeEach(() =>
    mock.timers.enable({ apis: ['setTimeout', 'Date'], now: Date.parse('2026-11-22T10:00:00Z') }),
  );
  afterEach(async () => {
    await Promise.all(electors.splice(0).map((elector) => elector.stop()));
    mock.timers.reset();
  });

  function candidate(leases: FakeLeases, identity: string, checkpoint = 'rv-1') {
    const log: string[] = [];
    // This replica's own view of the API server: cut off alone while `cut` is set.
    const link = { cut: false };
    const reach = <T>(call: () => Promise<T>): Promise<T> =>
      link.cut ? Promise.reject(new KubeError('network', 'connection refused', { path: '/lease' })) : call();
    const view: LeaseClient = {
      getJSON: (path, options) => reach(() => leases.getJSON(path, options)),
      postJSON: (path, body) => reach(() => leases.postJSON(path, body)),
      putJSON: (path, body) => reach(() => leases.putJSON(path, body)),
    };
    const callbacks: LeaderCallbacks = {
      onStartedLeading: (previous) =>
        log.push(
          `leading after ${previous?.spec?.holderIdentity || 'nobody'}` +
            (previous?.metadata.annotations?.['kubediff.io/checkpoint']
              ? ` (${previous.metadata.annotations['kubediff.io/checkpoint']})`
              : ''),
        ),
      onStoppedLeading: (reason) => log.push(`stopped: ${reason}`),
      onObserved: (lease) => log.push(`observed ${lease.spec?.holderIdentity}`),
      annotations: () => ({ 'kubediff.io/checkpoint': checkpoint }),
    };
    const elector = new LeaderElector(view, { ...CONFIG, identity }, callbacks, silentLogger, {
      random: () => 0,
    });
    electors.push(elector);
    return { elector, log, link };
  }

  /** Advances the mock clock in retry periods, letting each attempt's requests complete. */
  async function advance(ms: number): Promise<void> {
    for (let left = ms; left > 0; left -= 1_000) {
      mock.timers.tick(Math.min(1_000, left));
      await settle(5);
    }
  }

  it('creates a missing Lease and leads; renews every retry period with its annotations', async () => {
    const leases = new FakeLeases();
    const { elector, log } = candidate(leases, 'a');
    elector.start();
    await settle();
    assert.equal(elector.isLeader, true);
    assert.deepEqual(log, ['leading after nobody']);
    assert.equal(leases.lease?.spec?.holderIdentity, 'a');
    const created = leases.lease?.spec?.renewTime;
    await advance(2_000);
    assert.notEqual(leases.lease?.spec?.renewTime, created);
    assert.equal(leases.lease?.metadata.annotations?.['kubediff.io/checkpoint'], 'rv-1');
    assert.equal(leases.lease?.spec?.leaseTransitions, 0);
  });

  it('stands by behind a live leader, and takes over once its record is unchanged for the lease duration', async () => {
    const leases = new FakeLeases();
    const a = candidate(leases, 'a', 'checkpoint-of-a');
    a.elector.start();
    await advance(2_000);
    const b = candidate(leases, 'b');
    b.elector.start();
    await advance(10_000);
    assert.equal(b.elector.isLeader, false);
    assert.ok(nonEmpty(b.log, "b's log lines").every((line) => line === 'observed a'));
    // t = 12 s: the leader is cut off without releasing; its record stops changing.
    a.link.cut = true;
    await advance(10_000);
    // It stops leading after the renew deadline, before the Lease can expire for anyone else.
    assert.deepEqual(a.log.slice(-1), ['stopped: could not renew the lease for 10s']);
    await advance(2_000);
    assert.equal(b.elector.isLeader, false, 'not before the lease duration has passed by its own clock');
    await advance(8_000);
    assert.equal(b.elector.isLeader, true);
    // The new leader is told how far the old one got (its handover checkpoint).
    assert.equal(b.log.at(-1), 'leading after a (checkpoint-of-a)');
    assert.equal(leases.lease?.spec?.leaseTransitions, 1);
  });

  it('stop() releases the Lease with the last annotations, so a standby takes over at once', async () => {
    const leases = new FakeLeases();
    const a = candidate(leases, 'a', 'final');
    a.elector.start();
    await settle();
    await a.elector.stop();
    assert.equal(leases.lease?.spec?.holderIdentity, '');
    assert.equal(leases.lease?.spec?.leaseDurationSeconds, 1);
    assert.equal(leases.lease?.metadata.annotations?.['kubediff.io/checkpoint'], 'final');
    assert.deepEqual(a.log, ['leading after nobody', 'stopped: stopping']);
    const b = candidate(leases, 'b');
    b.elector.start();
    await settle();
    assert.equal(b.elector.isLeader, true);
    assert.deepEqual(b.log, ['leading after nobody (final)']);
  });

  it('stop() during a create the API server took but never answered: the Lease is released all the same', async () => {
    const leases = new FakeLeases();
    // The create lands; its answer never comes (the connection lost), until the stop cuts it short.
    const unanswered: LeaseClient = {
      getJSON: (path, options) => leases.getJSON(path, options),
      postJSON: async <T>(path: string, body: unknown, options?: RequestOptions): Promise<T> => {
        await leases.postJSON(path, body);
        const signal = options?.signal;
        await new Promise((_, reject) => {
          signal?.addEventListener('abort', () =>
            reject(new KubeError('network', 'the request was aborted', { path })),
          );
        });
        throw new Error('unreachable');
      },
      putJSON: (path, body) => leases.putJSON(path, body),
    };
    const log: string[] = [];
    const elector = new LeaderElector(
      unanswered,
      { ...CONFIG, identity: 'a' },
      {
        onStartedLeading: () => log.push('leading'),
        onStoppedLeading: (reason) => log.push(`stopped: ${reason}`),
      },
      silentLogger,
      { random: () => 0 },
    );
    elector.start();
    await settle();
    assert.equal(leases.lease?.spec?.holderIdentity, 'a', 'the create landed');
    await elector.stop();
    assert.equal(leases.lease?.spec?.holderIdentity, '', 'released: a standby need not wait out the lease');
    assert.deepEqual(log, [], 'it never led');
  });

  it('of two candidates starting together, one leads', async () => {
    const leases = new FakeLeases();
    const a = candidate(leases, 'a');
    const b = candidate(leases, 'b');
    a.elector.start();
    b.elector.start();
    await advance(6_000);
    assert.equal([a.elector.isLeader, b.elector.isLeader].filter(Boolean).length, 1);
  });
});
