// Figure 22 in BENCHMARKS.md and in the bench's table (bench/sync-large.ts).
import type { Spread } from './lib/stats.ts';
import { round } from './lib/stats.ts';
import type { CpuFigures, LargeSyncFigures } from './sync-large.ts';

const seconds = (value: number) => `${round(value / 1000)} s`;
const spreadRatio = (s: Spread) =>
  `${round(s.median).toFixed(2)}× (${round(s.min).toFixed(2)}–${round(s.max).toFixed(2)})`;
/** Issue 40's goal: a big cluster syncs within twice the time of one unpaged LIST of it. */
const GOAL = 2;

export function largeSyncRows(figures: LargeSyncFigures) {
  const objects = figures.objects.toLocaleString('en-US');
  return [
    {
      figure: `22. time to synced, one cluster of ${objects} objects, by streaming list`,
      kubediff: seconds(figures.kubediffMs.median),
      baseline: `${seconds(figures.rawListMs.median)} (one unpaged raw LIST)`,
      ratio: spreadRatio(figures.ratio),
      target: `≤ ${GOAL}×`,
      met: figures.ratio.median <= GOAL,
    },
    {
      figure: '22. … by paged LIST (KUBEDIFF_INITIAL_SYNC=list)',
      kubediff: seconds(figures.paged.kubediffMs.median),
      baseline: `${seconds(figures.paged.rawListMs.median)} (one unpaged raw LIST)`,
      ratio: spreadRatio(figures.paged.ratio),
      target: 'measured',
      met: undefined,
    },
  ];
}

export function largeSyncSection(figures: LargeSyncFigures): string {
  const range = (s: Spread) => `${seconds(s.median)} (${seconds(s.min)}–${seconds(s.max)})`;
  return `## 22. The initial sync of one big cluster

${figures.objects.toLocaleString('en-US')} ConfigMaps (made as in figure 2) in one namespace of the real API server: what a replica of a
fleet pays to take over a big cluster ([docs/fleets.md](docs/fleets.md)), ${figures.pairs} pairs after a warm-up pair.

- kubediff: a new client, discovery, the streaming list, normalization and the store, until
  \`ClusterWatcher.start()\` resolves (when \`kubediff watch\` prints "watching N resource types"): ${range(figures.kubediffMs)}.
  Baseline: a new connection pool and ONE unpaged LIST of the same objects (${Math.round(figures.listBytes / 2 ** 20)} MiB of JSON), read and
  parsed: ${range(figures.rawListMs)}. Ratio ${spreadRatio(figures.ratio)}; the goal is ≤ ${GOAL}×.
- By kubediff's paged LIST (\`KUBEDIFF_INITIAL_SYNC=list\`, 500 a page) against the unpaged LIST of its own pairs:
  ${range(figures.paged.kubediffMs)} vs ${range(figures.paged.rawListMs)}, ratio ${spreadRatio(figures.paged.ratio)}.
${figures.cpu ? cpuLines(figures.cpu) : ''}`;
}

/** Where the time goes: CPU seconds per run of the client (the bench's process) and of the API server with etcd. */
function cpuLines(cpu: NonNullable<LargeSyncFigures['cpu']>): string {
  const cpuSeconds = (s: Spread) =>
    Number.isNaN(s.median) ? 'not measured' : `${round(s.median).toFixed(2)} s`;
  const side = (name: string, figures: CpuFigures) =>
    `${name}: client ${cpuSeconds(figures.clientS)}, API server and etcd ${cpuSeconds(figures.serverS)}`;
  return `- CPU per run (medians; the machine's load blurs them less than wall time): ${side('streaming list', cpu.stream)};
  ${side('paged LIST', cpu.paged)}; ${side('the unpaged raw LIST', cpu.rawList)}.
`;
}
