// Who watches what in a fleet (src/state/fleet-assignment.ts): pins, and over random fleets (fixed seeds)
// the balance bound, the minimal movement on joins and leaves, the independence from any order, and that
// replicas acting one at a time on what each computes from the shared rows settle where one computation
// says, each cluster moving at most once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AssignmentInput, assignClusters } from '../../../src/state/fleet-assignment.ts';
import { seededRandom } from '../../helpers/random-json.ts';

type Owners = ReadonlyMap<string, string>;

function fleet(replicas: readonly string[], clusters: readonly string[]): AssignmentInput['replicas'] {
  return new Map(replicas.map((replica) => [replica, new Set(clusters)]));
}

function assign(replicas: readonly string[], clusters: readonly string[], current: Owners = new Map()) {
  return assignClusters({ clusters, replicas: fleet(replicas, clusters), pins: new Map(), current });
}

function loads(owners: Owners, replicas: readonly string[]): number[] {
  return replicas.map((replica) => [...owners.values()].filter((owner) => owner === replica).length);
}

function moved(before: Owners, after: Owners): string[] {
  return [...after].filter(([cluster, owner]) => before.get(cluster) !== owner).map(([cluster]) => cluster);
}

/** A random fleet: 1–12 replicas, 0–80 clusters, names of varied shapes. */
function randomFleet(random: () => number, round: number): { replicas: string[]; clusters: string[] } {
  const replicas = Array.from(
    { length: 1 + Math.floor(random() * 12) },
    (_, i) => `kubediff-${round}-${i}${random() < 0.3 ? '.eu' : ''}`,
  );
  const clusters = Array.from(
    { length: Math.floor(random() * 81) },
    (_, i) => `${random() < 0.5 ? 'prod' : 'lab'}-${round}-${i}`,
  );
  return { replicas, clusters };
}

function shuffled<T>(values: readonly T[], random: () => number): T[] {
  const copy = [...values];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

describe('fleet assignment', () => {
  it('gives each cluster one replica and a pinned cluster its pin; a pin to a replica away or that does not list it leaves it unowned', () => {
    const clusters = ['eu', 'us', 'lab', 'edge', 'ap'];
    const replicas = new Map([
      ['kubediff-0', new Set(clusters)],
      ['kubediff-1', new Set(clusters.filter((cluster) => cluster !== 'ap'))],
    ]);
    const pins = new Map([
      ['edge', 'kubediff-1'],
      ['lab', 'kubediff-7'],
      ['ap', 'kubediff-1'],
    ]);
    const { owners, unowned } = assignClusters({ clusters, replicas, pins, current: new Map() });
    assert.equal(owners.get('edge'), 'kubediff-1');
    assert.deepEqual(unowned.get('lab'), { reason: 'pinned-away', replica: 'kubediff-7' });
    assert.deepEqual(unowned.get('ap'), { reason: 'pinned-unlisted', replica: 'kubediff-1' });
    assert.deepEqual([...owners.keys()].sort(), ['edge', 'eu', 'us']);
    assert.deepEqual(loads(owners, ['kubediff-0', 'kubediff-1']).sort(), [1, 2]);
  });

  it('leaves every cluster unowned with no replica, and a cluster only a replica away lists unowned', () => {
    assert.deepEqual(
      [
        ...assignClusters({ clusters: ['a'], replicas: new Map(), pins: new Map(), current: new Map() })
          .unowned,
      ],
      [['a', { reason: 'no-replica' }]],
    );
    const { unowned } = assignClusters({
      clusters: ['a', 'b'],
      replicas: new Map([['r', new Set(['a'])]]),
      pins: new Map(),
      current: new Map(),
    });
    assert.deepEqual([...unowned], [['b', { reason: 'unlisted' }]]);
  });

  it('a cluster only some replicas list goes to one of them', () => {
    const replicas = new Map([
      ['a', new Set(['x', 'y', 'z'])],
      ['b', new Set(['x'])],
      ['c', new Set(['x'])],
    ]);
    const { owners } = assignClusters({
      clusters: ['x', 'y', 'z'],
      replicas,
      pins: new Map(),
      current: new Map(),
    });
    assert.equal(owners.get('y'), 'a');
    assert.equal(owners.get('z'), 'a');
  });

  it('property: balanced (⌊T/n⌋ to ⌈T/n⌉ each), the same whatever the order of its inputs, and a fixed point', () => {
    const random = seededRandom(40);
    for (let round = 0; round < 150; round++) {
      const { replicas, clusters } = randomFleet(random, round);
      const { owners, unowned } = assign(replicas, clusters);
      assert.equal(unowned.size, 0);
      assert.equal(owners.size, clusters.length);
      const share = clusters.length / replicas.length;
      const counts = loads(owners, replicas);
      assert.ok(Math.max(...counts) <= Math.ceil(share), `round ${round}: ${counts} over ⌈${share}⌉`);
      assert.ok(Math.min(...counts) >= Math.floor(share), `round ${round}: ${counts} under ⌊${share}⌋`);
      if (share >= 4) assert.ok(Math.max(...counts) <= 1.25 * share, `round ${round}: over 1.25× the share`);
      // Whatever order the rows come in.
      const again = assign(shuffled(replicas, random), shuffled(clusters, random));
      assert.deepEqual([...again.owners].sort(), [...owners].sort());
      // Applied, it asks for nothing more.
      assert.deepEqual(moved(owners, assign(replicas, clusters, owners).owners), []);
    }
  });

  it('property: a replica joining takes at most ⌈T/(n+1)⌉ clusters and nothing else moves; one leaving hands on exactly its own', () => {
    const random = seededRandom(4040);
    for (let round = 0; round < 150; round++) {
      const { replicas, clusters } = randomFleet(random, round);
      const before = assign(replicas, clusters).owners;
      const joined = [...replicas, `new-${round}`];
      const afterJoin = assign(joined, clusters, before).owners;
      const joinMoves = moved(before, afterJoin);
      assert.ok(
        joinMoves.length <= Math.ceil(clusters.length / joined.length),
        `round ${round}: ${joinMoves.length} moved on a join of the ${joined.length}th replica over ${clusters.length} clusters`,
      );
      for (const cluster of joinMoves) assert.equal(afterJoin.get(cluster), `new-${round}`);
      const counts = loads(afterJoin, joined);
      assert.ok(
        Math.max(...counts) - Math.min(...counts) <= 1,
        `round ${round}: unbalanced after a join: ${counts}`,
      );

      if (replicas.length < 2) continue;
      const leaving = replicas[Math.floor(random() * replicas.length)] as string;
      const staying = replicas.filter((replica) => replica !== leaving);
      const current = new Map([...before].filter(([, owner]) => owner !== leaving));
      const afterLeave = assign(staying, clusters, current).owners;
      assert.deepEqual(
        moved(before, afterLeave).sort(),
        [...before]
          .filter(([, owner]) => owner === leaving)
          .map(([cluster]) => cluster)
          .sort(),
        `round ${round}: only ${leaving}'s clusters move`,
      );
      const left = loads(afterLeave, staying);
      assert.ok(
        Math.max(...left) - Math.min(...left) <= 1,
        `round ${round}: unbalanced after a leave: ${left}`,
      );
    }
  });

  it('property: replicas acting one at a time on their own computations (give away, then claim what is free), after a join, a leave or a cold start, settle balanced, each cluster moving at most once', () => {
    const random = seededRandom(400);
    for (let round = 0; round < 120; round++) {
      const { replicas, clusters } = randomFleet(random, round);
      // Settled, then a membership change: one joins, or one leaves (its clusters free at once); or
      // every replica starting at once.
      const cold = round % 4 === 0;
      const owners = new Map(cold ? [] : assign(replicas, clusters).owners);
      const members = [...replicas];
      if (cold) {
        // Nobody owns anything yet.
      } else if (replicas.length > 1 && random() < 0.5) {
        const leaving = members.splice(Math.floor(random() * members.length), 1)[0];
        for (const [cluster, owner] of owners) if (owner === leaving) owners.delete(cluster);
      } else members.push(`new-${round}`);
      const moves = new Map<string, number>();
      // Rounds of turns, each replica once per round in a new order, until a round changes nothing
      // (bounded: a cluster moving twice fails below anyway).
      for (let rounds = 0, changed = true; changed && rounds < clusters.length + members.length; rounds++) {
        changed = false;
        for (const actor of shuffled(members, random)) {
          const wanted = assign(members, clusters, owners).owners;
          for (const [cluster, owner] of [...owners]) {
            // A live owner gives a cluster away only to a replica in the fleet.
            const to = wanted.get(cluster);
            if (owner === actor && to !== actor && to !== undefined && members.includes(to)) {
              owners.delete(cluster);
              changed = true;
            }
          }
          for (const [cluster, owner] of wanted) {
            if (owner !== actor || owners.has(cluster)) continue;
            owners.set(cluster, actor);
            moves.set(cluster, (moves.get(cluster) ?? 0) + 1);
            changed = true;
          }
        }
      }
      // Settled: every cluster owned, balanced, and nothing more wanted.
      assert.equal(owners.size, clusters.length, `round ${round}: not every cluster owned`);
      const counts = loads(owners, members);
      assert.ok(Math.max(...counts) - Math.min(...counts) <= 1, `round ${round}: unbalanced: ${counts}`);
      assert.deepEqual(
        moved(owners, assign(members, clusters, owners).owners),
        [],
        `round ${round}: not settled`,
      );
      for (const [cluster, count] of moves)
        assert.ok(count <= 1, `round ${round}: ${cluster} moved ${count} times`);
    }
  });
});
