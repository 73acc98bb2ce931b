// The fleet's coordination (src/state/fleet-store.ts) on its one connection, against the real PostgreSQL,
// with another session holding the row a call needs: a statement refused under contention (a lock
// timeout) rolls its transaction back and keeps the connection; calls that overlap take turns; a call's
// deadline ends a connection still being opened over a silent link. The
// members over it: fleet-member.test.ts; the fleet of processes: fleet.test.ts.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it, type TestContext } from 'node:test';
import pg from 'pg';
import { FleetDatabaseSilent, FleetStore, type ReplicaProfile } from '../../src/state/fleet-store.ts';
import { startFaultProxy } from '../helpers/fault-proxy.ts';
import { uniqueName, waitFor } from '../helpers/kube-admin.ts';
import { createTestDatabase, stateUrl, type TestDatabase } from '../helpers/postgres-env.ts';

/** A beat of a second: the fleet's transactions wait that long for a row lock (lock_timeout). */
const TIMEOUT_MS = 5_000;

describe('fleet store: one connection, under contention', () => {
  let db: TestDatabase;
  /** The database's URL as kubediff takes it: no password in it (PGPASSWORD gives it). */
  let url: string;
  /** The test's own sessions: one holds rows locked, one looks (outside its transaction, so each look is new). */
  let locker: pg.Client;
  let observer: pg.Client;
  before(async () => {
    db = await createTestDatabase('fleet-store');
    url = stateUrl(db.info);
    process.env.PGPASSWORD = db.info.password;
    locker = new pg.Client({ connectionString: url, application_name: 'kubediff-test' });
    observer = new pg.Client({ connectionString: url, application_name: 'kubediff-test' });
    await locker.connect();
    await observer.connect();
  });
  after(async () => {
    await locker?.end();
    await observer?.end();
    await db?.drop();
  });

  /** A replica's store, joined, that owns `cluster` at epoch 1. */
  async function owner(t: TestContext, fleet: string, cluster: string) {
    const profile: ReplicaProfile = { clusters: [cluster], pins: new Map(), version: 'test' };
    const store = new FleetStore({ url }, { fleet, replica: 'a', incarnation: randomUUID() }, TIMEOUT_MS);
    t.after(() => store.close());
    await store.migrate();
    assert.deepEqual(await store.join(profile), { joined: true });
    await store.beat(profile, []);
    assert.equal((await store.claim(cluster, 0))?.epoch, 1);
    return { store, profile };
  }

  /** Locks `cluster`'s row in the test's session until the test ends. */
  async function lockRow(t: TestContext, fleet: string, cluster: string): Promise<void> {
    await locker.query('BEGIN');
    t.after(() => locker.query('ROLLBACK'));
    const locked = await locker.query(
      'SELECT 1 FROM kubediff_fleet_clusters WHERE fleet = $1 AND cluster = $2 FOR UPDATE',
      [fleet, cluster],
    );
    assert.equal(locked.rowCount, 1);
  }

  /** The server process of the store's session, once it waits for a row lock. */
  function waitingSession(): Promise<number> {
    return waitFor(
      async () =>
        (
          await observer.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity
             WHERE datname = current_database() AND application_name = 'kubediff' AND wait_event_type = 'Lock'`,
          )
        ).rows[0]?.pid,
      { timeoutMs: 30_000, intervalMs: 20, what: "the store's session waiting for the row lock" },
    );
  }

  const lockTimeout = (error: unknown) => (error as { code?: string }).code === '55P03';

  it('a claim that cannot lock its row in time fails, rolls back and keeps the connection: the next call runs on the same session', async (t) => {
    const fleet = uniqueName('store-lock');
    const { store } = await owner(t, fleet, 'c1');
    await lockRow(t, fleet, 'c1');

    const first = store.claim('c1', 1);
    const session = await waitingSession();
    await assert.rejects(first, lockTimeout);
    const after = await observer.query<{ state: string }>(
      'SELECT state FROM pg_stat_activity WHERE pid = $1',
      [session],
    );
    assert.deepEqual(after.rows, [{ state: 'idle' }], 'rolled back, still connected');

    const second = store.claim('c1', 1);
    assert.equal(await waitingSession(), session, 'the same session: no reconnect');
    await assert.rejects(second, lockTimeout);
  });

  it('leaving while a beat waits for a row lock: the leave takes its turn after the beat, and the replica is gone', async (t) => {
    const fleet = uniqueName('store-leave');
    const { store, profile } = await owner(t, fleet, 'c1');
    await lockRow(t, fleet, 'c1');

    const beat = store.beat(profile, [{ cluster: 'c1', epoch: 1, synced: true, lagMs: undefined }]);
    await waitingSession();
    const leaving = store.leave();
    await assert.rejects(beat, lockTimeout);
    await leaving;
    const replicas = await observer.query('SELECT replica FROM kubediff_fleet_replicas WHERE fleet = $1', [
      fleet,
    ]);
    assert.deepEqual(replicas.rows, [], "this replica's row is gone");
  });

  it("a call's deadline ends the connection it is still opening when the link goes silent, instead of leaving it to time out", async (t) => {
    const target = new URL(db.url);
    const proxy = await startFaultProxy({ target: { host: target.hostname, port: Number(target.port) } });
    t.after(() => proxy.close());
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    const seen: { failure?: (error: unknown) => void } = {};
    const opening = new Promise<unknown>((resolve) => {
      seen.failure = resolve;
    });
    // Connected, the link goes silent before the new connection's first statement (the schema check).
    class SilencedWhileOpening extends FleetStore {
      protected override async connected(client: pg.Client): Promise<void> {
        proxy.blackhole(true);
        try {
          await super.connected(client);
        } catch (error) {
          seen.failure?.(error);
          throw error;
        }
      }
    }
    const profile: ReplicaProfile = { clusters: ['c1'], pins: new Map(), version: 'test' };
    const fleet = uniqueName('store-opening');
    const store = new SilencedWhileOpening(
      { url: proxied.href },
      { fleet, replica: 'a', incarnation: randomUUID() },
      TIMEOUT_MS,
    );
    t.after(() => store.close());
    await assert.rejects(store.join(profile), FleetDatabaseSilent);
    // Ended at the deadline (its statement fails as the connection ends), not by its own query timeout later.
    const failure = await opening;
    assert.match(String(failure), /Connection terminated/);
    await proxy.waitForIdle();
  });
});
