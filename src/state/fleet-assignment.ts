// Which replica of a fleet watches which cluster (docs/fleets.md, "Who watches what"): a pure function of
// the clusters' names, the replicas in the fleet (by name, each with the clusters its configuration
// lists), the pins of `clusters:` and who owns what now. Every replica computes it from the same rows of
// the fleet's database, so they agree without talking to each other; a claim is a compare-and-set in
// that database (fleet-store.ts), so a replica that computed from older rows can delay a move, never
// make two owners.
//
// Consistent hashing with bounded loads, kept sticky:
// - Preference: rendezvous hashing over names: each (cluster, replica) pair has a score, sha256 of both
//   names, and a cluster prefers the replicas with the highest scores. Names only, never a list index
//   or a UID: the same names give the same preferences on every replica, in every version, whatever the
//   order of a kubeconfig or of the rows.
// - Bound: each replica's quota is ⌊T/n⌋ or ⌈T/n⌉ (T clusters, n replicas), the larger quotas going to
//   the replicas that hold most now: no replica holds more than ⌈T/n⌉ (the least any assignment can
//   promise; it is within 1.25× of T/n once T/n ≥ 4) and none fewer than ⌊T/n⌋.
// - Sticky: a cluster stays with its owner while that owner is in the fleet, may watch it and is within
//   its quota (of its clusters it keeps those that prefer it most). Every move costs a relist and a
//   catch-up, so only what must move moves: a replica joining takes its quota (at most ⌈T/(n+1)⌉
//   clusters) and nothing else moves; a replica leaving hands on exactly its own clusters.
// - The rest (new clusters, those of a replica gone, those over a quota) go, in name order, each to the
//   replica it prefers most among those under their quota that may watch it (else to the least loaded
//   that may).
// A cluster pinned (`replica:` in `clusters:`) goes to that replica, counted in its load; while that
// replica is away or does not list the cluster, the cluster has no owner and says so.
import { createHash } from 'node:crypto';

export interface AssignmentInput {
  /** The fleet's clusters, by name. */
  clusters: readonly string[];
  /** The replicas in the fleet now, by name, each with the clusters its configuration lists. */
  replicas: ReadonlyMap<string, ReadonlySet<string>>;
  /** Cluster → the replica it is pinned to. */
  pins: ReadonlyMap<string, string>;
  /** Cluster → its owner now; an owner not in `replicas` counts as none. */
  current: ReadonlyMap<string, string>;
}

/** Why a cluster has no owner. */
export type Unowned =
  | { reason: 'no-replica' }
  | { reason: 'pinned-away'; replica: string }
  | { reason: 'pinned-unlisted'; replica: string }
  | { reason: 'unlisted' };

export interface Assignment {
  /** Cluster → the replica that should watch it. */
  owners: Map<string, string>;
  /** The clusters nobody can watch now, and why. */
  unowned: Map<string, Unowned>;
}

/** Scores already computed: a fleet's pairs are few and asked for on every heartbeat. */
const scores = new Map<string, bigint>();
/** The most scores kept; past it the memo starts afresh (a fleet of 100 replicas and 500 clusters fits). */
const MAX_SCORES = 50_000;

/** How much `replica` is preferred by `cluster`: the first 64 bits of sha256 over both names. */
export function preference(cluster: string, replica: string): bigint {
  const key = `${cluster}\n${replica}`;
  let value = scores.get(key);
  if (value === undefined) {
    if (scores.size >= MAX_SCORES) scores.clear();
    value = createHash('sha256').update(key).digest().readBigUInt64BE(0);
    scores.set(key, value);
  }
  return value;
}

export function assignClusters(input: AssignmentInput): Assignment {
  const owners = new Map<string, string>();
  const unowned = new Map<string, Unowned>();
  const replicas = [...input.replicas.keys()].sort();
  const clusters = [...new Set(input.clusters)].sort();
  const mayWatch = (replica: string, cluster: string) => input.replicas.get(replica)?.has(cluster) === true;
  const score = preference;
  const load = new Map(replicas.map((replica) => [replica, 0]));
  const free: string[] = [];
  for (const cluster of clusters) {
    const pin = input.pins.get(cluster);
    if (pin !== undefined) {
      if (!input.replicas.has(pin)) unowned.set(cluster, { reason: 'pinned-away', replica: pin });
      else if (!mayWatch(pin, cluster)) unowned.set(cluster, { reason: 'pinned-unlisted', replica: pin });
      else {
        owners.set(cluster, pin);
        load.set(pin, (load.get(pin) ?? 0) + 1);
      }
    } else if (replicas.length === 0) unowned.set(cluster, { reason: 'no-replica' });
    else if (!replicas.some((replica) => mayWatch(replica, cluster)))
      unowned.set(cluster, { reason: 'unlisted' });
    else free.push(cluster);
  }
  if (free.length === 0) return { owners, unowned };

  // Quotas: ⌊T/n⌋ each, one more for the T mod n replicas holding most now (their holdings counted up
  // to ⌊T/n⌋ + 1, so that a replica giving up what is over its quota keeps its rank; ties by name).
  const total = owners.size + free.length;
  const base = Math.floor(total / replicas.length);
  const holding = new Map(load);
  const kept = new Map<string, string[]>(replicas.map((replica) => [replica, []]));
  for (const cluster of free) {
    const owner = input.current.get(cluster);
    if (owner === undefined || !mayWatch(owner, cluster)) continue;
    holding.set(owner, (holding.get(owner) ?? 0) + 1);
    kept.get(owner)?.push(cluster);
  }
  const ranked = [...replicas].sort((a, b) => {
    const difference = Math.min(holding.get(b) ?? 0, base + 1) - Math.min(holding.get(a) ?? 0, base + 1);
    return difference !== 0 ? difference : a < b ? -1 : 1;
  });
  const quota = new Map(
    ranked.map((replica, index) => [replica, base + (index < total % replicas.length ? 1 : 0)]),
  );

  // Sticky: each owner keeps, within its quota, the clusters that prefer it most.
  const placed = new Set<string>();
  for (const replica of replicas) {
    const own = (kept.get(replica) ?? []).sort((a, b) =>
      byPreference(score(b, replica), score(a, replica), a, b),
    );
    const room = Math.max(0, (quota.get(replica) ?? 0) - (load.get(replica) ?? 0));
    for (const cluster of own.slice(0, room)) {
      owners.set(cluster, replica);
      placed.add(cluster);
      load.set(replica, (load.get(replica) ?? 0) + 1);
    }
  }
  // The rest, in name order: the most preferred replica under its quota, else the least loaded.
  for (const cluster of free) {
    if (placed.has(cluster)) continue;
    const candidates = replicas.filter((replica) => mayWatch(replica, cluster));
    const under = candidates.filter((replica) => (load.get(replica) ?? 0) < (quota.get(replica) ?? 0));
    const pool = under.length > 0 ? under : leastLoaded(candidates, load);
    let best = pool[0] as string;
    for (const replica of pool.slice(1)) {
      if (byPreference(score(cluster, replica), score(cluster, best), replica, best) < 0) best = replica;
    }
    owners.set(cluster, best);
    load.set(best, (load.get(best) ?? 0) + 1);
  }
  return { owners, unowned };
}

/** Higher score first; equal scores (never, in practice) by name. */
function byPreference(a: bigint, b: bigint, nameA: string, nameB: string): number {
  if (a !== b) return a > b ? -1 : 1;
  return nameA < nameB ? -1 : nameA > nameB ? 1 : 0;
}

function leastLoaded(candidates: readonly string[], load: ReadonlyMap<string, number>): string[] {
  const least = Math.min(...candidates.map((replica) => load.get(replica) ?? 0));
  return candidates.filter((replica) => (load.get(replica) ?? 0) === least);
}
