// Figure 19 in BENCHMARKS.md (bench/outcomes.ts): its summary rows and its section.
import { markdownTable } from './lib/markdown.ts';
import type { OutcomeFigures } from './outcomes.ts';

export interface OutcomeRow {
  figure: string;
  kubediff: string;
  baseline: string;
  ratio: string;
  target: string;
  met: boolean | undefined;
}

const times = (value: number) => `${value.toFixed(2)}×`;

export function outcomeRows(figures: OutcomeFigures): OutcomeRow[] {
  const pods = figures.pods.toLocaleString('en-US');
  return [
    {
      figure: `19. outcomes at ${pods} pods: CPU, sync and ${figures.rollouts} rollouts`,
      kubediff: `${figures.on.cpuSeconds} s`,
      baseline: `${figures.off.cpuSeconds} s (--no-outcomes)`,
      ratio: times(figures.cpuRatio),
      target: '',
      met: undefined,
    },
    {
      figure: `19. outcomes at ${pods} pods: RSS at the end`,
      kubediff: `${figures.on.rssMiB} MiB`,
      baseline: `${figures.off.rssMiB} MiB (--no-outcomes)`,
      ratio: times(figures.rssRatio),
      target: '',
      met: undefined,
    },
    {
      figure: '19. verdict delay: last new pod Ready → OUTCOME line, median',
      kubediff: `${figures.verdictDelayMs.median} ms`,
      baseline: '',
      ratio: '',
      target: '',
      met: undefined,
    },
  ];
}

export function outcomeSection(figures: OutcomeFigures): string {
  const pods = figures.pods.toLocaleString('en-US');
  const side = (name: string, s: OutcomeFigures['on']) => [
    name,
    `${s.cpuSecondsAtSync} s`,
    `${s.rssAtSyncMiB} MiB`,
    `${s.cpuSeconds} s`,
    `${s.rssMiB} MiB`,
    `${s.peakRssMiB} MiB`,
  ];
  return `## 19. Outcomes at ${pods} pods

\`npm run bench -- --only outcomes\` (bench/outcomes.ts). On the pod plane (kwok on ${figures.nodes} fake nodes: every
pod Running and Ready, its status written as a kubelet writes it), ${pods} pods of Deployments (two containers with
probes, as in figure 1) and ${figures.rollouts} Deployments of 10 pods to roll out. Each Deployment's pod template
names a node of its own (\`nodeName\`), so the ReplicaSet controller creates its pods already bound: the objects and
their owner chain are any cluster's, and the scheduler is not in the way (it placed about one pod a second on the
loaded machine). The controller manager's client rate limit is lifted to 5,000 requests a second, as kwokctl does
for scale.
Once every pod is Ready (the cluster took ${figures.setupSeconds} s), two \`kubediff watch -o json\` start side by
side on all namespaces, outcomes on and \`--no-outcomes\`: the same sync, the same rollouts, the same machine load.
Each small Deployment is then rolled out in turn to a new image (maxSurge 25 %, maxUnavailable 0).

${markdownTable(
  ['', 'CPU at sync', 'RSS at sync', 'CPU at the end', 'RSS at the end', 'peak RSS'],
  [side('outcomes on', figures.on), side('--no-outcomes', figures.off)],
)}

On / off: CPU ${times(figures.cpuRatio)}, RSS ${times(figures.rssRatio)}. CPU is user + system seconds (/proc) from
the start of each process; RSS is resident memory. The machine's load average (1 minute) was
${figures.loadAverage.atStart} when kubediff started and ${figures.loadAverage.atEnd} at the end.

**Verdict delay**: from the moment the last pod of the new revision became Ready, as the benchmark's own watch of
those pods saw it, to the moment the OUTCOME line reached the benchmark: ${figures.verdictDelayMs.median} ms median
(${figures.verdictDelayMs.min}–${figures.verdictDelayMs.max} ms) over the ${figures.rollouts} rollouts (verdicts:
${figures.verdicts.join(', ')}). It includes the Deployment controller's own delay: the verdict waits for the
Deployment's status to count the new pods available (docs/outcomes.md, The verdict). Their \`after\` (from the change
to the verdict, mostly the rollout itself): ${figures.afterSeconds.median} s median (${figures.afterSeconds.min}–${figures.afterSeconds.max} s).
${
  figures.pods < 10_000
    ? `
This run has ${pods} pods, not the 10,000 the figure is meant for (\`--outcome-pods\`, default 10,000).
`
    : ''
}`;
}
