// Figure 21 in BENCHMARKS.md (bench/fleet.ts): its summary rows and its section.
import type { FleetFigures } from './fleet.ts';
import { markdownTable } from './lib/markdown.ts';

export interface FleetRow {
  figure: string;
  kubediff: string;
  baseline: string;
  ratio: string;
  target: string;
  met: boolean | undefined;
}

const times = (value: number) => `${value.toFixed(2)}×`;
const perSecond = (value: number) => `${Math.round(value).toLocaleString('en-US')} events/s`;

export function fleetRows(figures: FleetFigures): FleetRow[] {
  const one = figures.throughput[0];
  const rows: FleetRow[] = figures.ratios.map(({ replicas, ratio }) => ({
    figure: `21. fleet throughput, ${replicas} replicas against 1 (${figures.clusters} clusters, ${figures.apiServers} API servers)`,
    kubediff: perSecond(figures.throughput.find((t) => t.replicas === replicas)?.eventsPerSecond ?? 0),
    baseline: one ? `${perSecond(one.eventsPerSecond)} (1 replica)` : '',
    ratio: times(ratio),
    target: 'measured',
    met: undefined,
  }));
  rows.push({
    figure: `21. fleet takeover after kill -9: ownership moved, max over ${figures.kills}`,
    kubediff: `${figures.ownershipSeconds.max} s (median ${figures.ownershipSeconds.median} s)`,
    baseline: '',
    ratio: '',
    target: `≤ ${figures.boundSeconds} s`,
    met: figures.ownershipSeconds.max <= figures.boundSeconds,
  });
  rows.push({
    figure: `21. fleet takeover after kill -9: first change delivered by the new owner, max over ${figures.kills}`,
    kubediff: `${figures.deliverySeconds.max} s (median ${figures.deliverySeconds.median} s)`,
    baseline: '',
    ratio: '',
    target: 'measured',
    met: undefined,
  });
  return rows;
}

export function fleetSection(figures: FleetFigures): string {
  const writes = figures.writes.toLocaleString('en-US');
  return `## 21. A fleet of replicas

\`npm run bench -- --only fleet\` (bench/fleet.ts; \`--fleet-kills N\` for fewer takeovers). ${figures.clusters}
clusters (namespaces of ${figures.apiServers} API servers on one etcd, each its own cluster to kubediff) shared by
replicas of \`kubediff watch --fleet … --state postgres://… -o none --webhook …\`, one PostgreSQL of the bench's
own, one webhook receiver on loopback that counts each change once by \`id\`.

**Throughput**: the same load, ${writes} writes (ConfigMaps created, then patched 4 times each, 8 writes in flight,
as fast as the API servers take them), with 1, 2 and 3 replicas, each on a database and fleet of its own, started
once every cluster is owned and synced. Events/s from the first write to the last of the load's changes at the
receiver; CPU is user + system seconds (/proc) of each replica over that window.

${markdownTable(
  ['replicas', 'events/s', 'against 1 replica', 'seconds', 'CPU s per replica', 'delivered twice'],
  figures.throughput.map((t) => [
    String(t.replicas),
    perSecond(t.eventsPerSecond),
    t.replicas === 1
      ? '1.00×'
      : times(figures.ratios.find((r) => r.replicas === t.replicas)?.ratio ?? Number.NaN),
    `${t.seconds} s`,
    t.cpuSeconds.map((value) => value.toFixed(2)).join(' / '),
    String(t.repeats),
  ]),
)}

On this machine the writer, both API servers, etcd, PostgreSQL and the replicas share its cores: the end-to-end
rate is bounded by the API servers' writes as much as by kubediff, so the ratios say how the work spreads, not how
far a fleet scales; the CPU per replica is what one replica of that size costs.

**Takeover**: with 3 replicas (replica timeout ${figures.replicaTimeoutSeconds} s, a beat a fifth of it), ${figures.kills}
times the owner of a cluster is killed (SIGKILL) and a ConfigMap created on that cluster right after. From the
kill to the cluster's \`taken over\` move (the fleet's moves table, \`kubediff fleet status -o json\`, the
database's clock on this machine): ${figures.ownershipSeconds.median} s median, ${figures.ownershipSeconds.max} s at most
(${figures.ownershipSeconds.min} s at least), against the stated bound of ${figures.boundSeconds} s (the timeout
plus one beat, docs/fleets.md). From the kill to that change at the receiver, delivered by the new owner:
${figures.deliverySeconds.median} s median, ${figures.deliverySeconds.max} s at most. The killed replica is started
again and the fleet settles before the next kill.

The machine's load average (1 minute) was ${figures.loadAverage.atStart} at the start and
${figures.loadAverage.atEnd} at the end.
`;
}
