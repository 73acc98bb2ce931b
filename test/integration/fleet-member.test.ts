// A fleet's members in one process (src/state/fleet-member.ts) over the real coordination
// (src/state/fleet-store.ts) in the real PostgreSQL: each replica a FleetMember with its FleetStore and
// FleetFence, its clusters' watches a record of what it was told to start and stop. Ownership moves by
// the rows (claims, handoffs, takeovers at a higher epoch); a replica cut off from the database holds,
// then loses its clusters and never delivers for them; a second process with a replica's name waits,
// then replaces it, and the first stops. The whole fleet of processes: test/integration/fleet.test.ts.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it, type TestContext } from 'node:test';
import pg from 'pg';
import type { KubediffEvent } from '../../src/events/event.ts';
import { FleetFence } from '../../src/state/fleet-fence.ts';
import { type FleetClusters, type FleetCoordination, FleetMember } from '../../src/state/fleet-member.ts';
import { type FleetView, readFleet } from '../../src/state/fleet-rows.ts';
import { FleetStore } from '../../src/state/fleet-store.ts';
import { silentLogger } from '../../src/util/log.ts';
import { uniqueName, waitFor } from '../helpers/kube-admin.ts';
import { createTestDatabase, stateUrl, type TestDatabase } from '../helpers/postgres-env.ts';

/** Short, so that takeovers come soon; every wait below is for what happens, never for this long. */
const TIMEOUT_MS = 3_000;
const never = new Promise<never>(() => {});

/** One replica: its member, store and fence, what it was told to watch, what it delivered and said. */
function replica(url: string, fleet: string, name: string, clusters: readonly string[]) {
  const lines: string[] = [];
  const log = {
    ...silentLogger,
    info: (message: string) => lines.push(message),
    warn: (message: string) => lines.push(message),
  };
  const store = new FleetStore({ url }, { fleet, replica: name, incarnation: randomUUID() }, TIMEOUT_MS);
  /** While true, every call of this replica to the database fails as a cut link would. */
  const link = { cut: false };
  const cutOff = () => Promise.reject(new Error('Connection terminated unexpectedly'));
  const coordination: FleetCoordination = {
    identity: store.identity,
    label: store.label,
    join: (profile) => (link.cut ? cutOff() : store.join(profile)),
    beat: (profile, owned) => (link.cut ? cutOff() : store.beat(profile, owned)),
    claim: (cluster, epoch) => (link.cut ? cutOff() : store.claim(cluster, epoch)),
    release: (cluster, epoch, why) => (link.cut ? cutOff() : store.release(cluster, epoch, why)),
    leave: () => store.leave(),
    close: () => store.close(),
  };
  const watching = new Map<string, number>();
  const moves: string[] = [];
  const watches: FleetClusters = {
    start(cluster, epoch) {
      watching.set(cluster, epoch);
      moves.push(`start ${cluster} ${epoch}`);
    },
    async stop(cluster, how) {
      watching.delete(cluster);
      moves.push(`stop ${cluster} ${how}`);
    },
    progress: () => ({ synced: true, lagMs: undefined }),
    busy: () => false,
  };
  const delivered: string[] = [];
  const fence: FleetFence = new FleetFence({
    leaseValid: () => member.leaseValid(),
    log,
    onOverflow: (cluster) => member.overflowed(cluster),
  });
  const admit = fence.connect((handover) => delivered.push((handover.event as unknown as { id: string }).id));
  const member: FleetMember = new FleetMember({
    store: coordination,
    profile: { clusters, pins: new Map(), version: 'test' },
    timeoutMs: TIMEOUT_MS,
    clusters: watches,
    fence,
    log,
  });
  return {
    name,
    store,
    member,
    fence,
    link,
    watching,
    moves,
    delivered,
    lines,
    /** A change of `cluster` reaching this replica's fence. */
    change(cluster: string, id: string) {
      admit({ change: undefined, event: { id } as unknown as KubediffEvent, cluster });
    },
    async run() {
      await store.migrate();
      assert.equal(await member.join(never), true);
      member.start();
    },
    /** Until it has said a line matching `pattern`, from the `from`th line on. */
    said(pattern: RegExp, from = 0) {
      return waitFor(() => lines.slice(from).find((line) => pattern.test(line)), {
        timeoutMs: 60_000,
        intervalMs: 50,
        what: `${name} saying ${pattern}`,
      });
    },
  };
}
type Replica = ReturnType<typeof replica>;

describe('fleet members over the real coordination', () => {
  let db: TestDatabase;
  /** The database's URL as kubediff takes it: no password in it (PGPASSWORD gives it). */
  let url: string;
  before(async () => {
    db = await createTestDatabase('fleet-member');
    url = stateUrl(db.info);
    process.env.PGPASSWORD = db.info.password;
  });
  after(async () => {
    await db?.drop();
  });

  /** The fleet's rows now, read on a connection of the test's own (as `kubediff fleet status` reads them). */
  async function rowsOf(fleet: string): Promise<FleetView> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await readFleet(client, fleet);
    } finally {
      await client.end();
    }
  }

  /** A replica that leaves the fleet when the test ends, whatever became of it. */
  function start(t: TestContext, fleet: string, name: string, clusters: readonly string[]): Replica {
    const r = replica(url, fleet, name, clusters);
    t.after(() => r.member.leave());
    return r;
  }

  /** Until every cluster is watched by exactly one of `replicas` and `check` holds; the owners. */
  function settled(replicas: readonly Replica[], clusters: readonly string[], check: () => boolean) {
    return waitFor(
      () => {
        const owners = clusters.map((cluster) => replicas.filter((r) => r.watching.has(cluster)));
        return owners.every((o) => o.length === 1) && check()
          ? new Map(clusters.map((cluster, i) => [cluster, owners[i]?.[0]?.name]))
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 50, what: 'every cluster watched by one replica' },
    );
  }

  it('two replicas share four clusters, each at the epoch its claim set; a third joins and takes its share by handoff, at a higher epoch', async (t) => {
    const fleet = uniqueName('members');
    const clusters = ['c1', 'c2', 'c3', 'c4'];
    const a = start(t, fleet, 'a', clusters);
    const b = start(t, fleet, 'b', clusters);
    await a.run();
    await b.run();
    await settled([a, b], clusters, () => a.watching.size === 2 && b.watching.size === 2);
    const rows = new Map((await rowsOf(fleet)).clusters.map((row) => [row.cluster, row]));
    for (const r of [a, b]) {
      for (const [cluster, epoch] of r.watching) {
        assert.equal(rows.get(cluster)?.owner, r.name, cluster);
        assert.equal(rows.get(cluster)?.epoch, epoch, `${cluster}: watched at the epoch of its row`);
      }
    }
    const before = new Map([...a.watching, ...b.watching]);
    // The first to join took every cluster, then handed the other its share.
    const handedOut = () => a.member.stats.handoffsOut + b.member.stats.handoffsOut;
    const handedOutBefore = handedOut();

    const c = start(t, fleet, 'c', clusters);
    await c.run();
    await settled([a, b, c], clusters, () => c.watching.size === 1 && c.member.stats.handoffsIn === 1);
    const [[moved, epoch]] = [...c.watching] as [[string, number]];
    assert.ok(epoch > (before.get(moved) ?? Number.POSITIVE_INFINITY), 'a higher epoch');
    const from = [a, b].find((r) => r.moves.includes(`stop ${moved} handoff`));
    assert.ok(from, `${moved} handed off by its owner`);
    await waitFor(() => (handedOut() === handedOutBefore + 1 ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 50,
      what: 'the handoff counted out',
    });
    assert.equal(a.member.stats.takeovers + b.member.stats.takeovers + c.member.stats.takeovers, 0);
    // Only the moved cluster moved.
    for (const r of [a, b]) for (const [cluster, e] of r.watching) assert.equal(before.get(cluster), e);
    for (const r of [a, b, c]) assert.equal(r.member.stats.lost, 0);
  });

  it('a replica cut off from the database holds past its lease; the other takes its clusters at a higher epoch; back, it loses them and never delivers what it held or what came after', async (t) => {
    const fleet = uniqueName('members-cut');
    const clusters = ['c1', 'c2', 'c3', 'c4'];
    const a = start(t, fleet, 'a', clusters);
    const b = start(t, fleet, 'b', clusters);
    await a.run();
    await b.run();
    await settled([a, b], clusters, () => a.watching.size === 2 && b.watching.size === 2);
    const mine = [...a.watching.keys()];
    const epochsOfA = new Map(a.watching);
    const [first] = mine as [string];
    a.change(first, 'before-cut');
    // Owned: delivered, at once with a valid lease, or when a beat late on a loaded machine renews it.
    await waitFor(() => (a.delivered.length > 0 ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 50,
      what: 'the change delivered',
    });
    assert.deepEqual(a.delivered, ['before-cut']);

    const mark = a.lines.length;
    a.link.cut = true;
    await a.said(/^fleet: cannot renew this replica's heartbeat in /, mark);
    await a.said(/^fleet: heartbeat not renewed for 2\.4s: holding the changes of 2 cluster\(s\)/, mark);
    assert.equal(a.member.stats.leaseValid, false);
    a.change(first, 'held');
    assert.equal(a.fence.holding, 1);
    assert.ok(a.fence.flowControl(first), "the held cluster's informers pause");

    await settled([b], clusters, () => b.watching.size === 4);
    assert.equal(b.member.stats.takeovers, 2);
    for (const cluster of mine)
      await b.said(new RegExp(`^fleet: watching cluster "${cluster}" \\(taken over from replica "a"`));
    // a still believes it has them (it cannot read the rows): it holds, and delivers nothing.
    a.change(first, 'after-takeover');
    assert.deepEqual(a.delivered, ['before-cut']);

    a.link.cut = false;
    for (const cluster of mine)
      await a.said(
        new RegExp(`^fleet: cluster "${cluster}" is no longer this replica's \\(replica "b" took it over`),
      );
    await a.said(/^fleet: heartbeat renewed in /, mark);
    assert.equal(a.member.stats.lost, 2);
    assert.deepEqual(
      a.moves.filter((move) => move.endsWith(' lost')),
      mine.map((cluster) => `stop ${cluster} lost`),
    );
    assert.equal(a.fence.holding, 0);
    a.change(first, 'stale');
    assert.deepEqual(
      a.delivered,
      ['before-cut'],
      'held, later and stale changes of a lost cluster: none delivered',
    );
    assert.equal(a.fence.dropped, 3);
    // Every cluster a lost was claimed again above a's epoch (b's takeover). Its owner now may be b, or no
    // one, or a again: a, alive again, may be handed its share back at any beat from here.
    const rows = (await rowsOf(fleet)).clusters;
    for (const cluster of mine) {
      const row = rows.find((candidate) => candidate.cluster === cluster);
      assert.ok(
        row && row.epoch > (epochsOfA.get(cluster) ?? Number.POSITIVE_INFINITY),
        `${cluster}: ${row?.epoch}`,
      );
    }
  });

  it('a second process with a replica name waits while the first is alive, replaces it once it is silent; the first, back, stops', async (t) => {
    const fleet = uniqueName('members-name');
    const first = start(t, fleet, 'same', ['c1']);
    await first.run();
    await settled([first], ['c1'], () => true);
    const second = start(t, fleet, 'same', ['c1']);
    await second.store.migrate();
    let joined = false;
    const joining = second.member.join(never).then((result) => {
      joined = result;
    });
    await second.said(
      /^fleet: another kubediff is replica "same" of fleet .* \(its last heartbeat .* ago\); waiting/,
    );
    assert.equal(joined, false);
    first.link.cut = true;
    await joining;
    assert.equal(joined, true);
    first.link.cut = false;
    await assert.rejects(first.member.failed, /another kubediff joined fleet ".*" as replica "same"/);
    assert.match(first.moves.join(), /^start c1 \d+,stop c1 lost$/);
  });
});
