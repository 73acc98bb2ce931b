// Figure 13 in BENCHMARKS.md and in the bench's table (bench/admission.ts).
import type { AdmissionFigures } from './admission.ts';
import { markdownTable } from './lib/markdown.ts';
import { round } from './lib/stats.ts';

const ms = (value: number) => `${round(value)} ms`;
/** The goal of issue 28: under 5 ms at p99 on loopback. */
const GOAL_P99_MS = 5;

export function admissionRow(figures: AdmissionFigures) {
  return {
    figure: `13. a write's latency, p99, admission webhook on (loopback; ${figures.writes} writes each way)`,
    kubediff: `${ms(figures.reviewed.p99Ms)} (+${ms(figures.addedP99Ms)}); ${figures.events.exact} of ${figures.writes} named exactly`,
    baseline: `${ms(figures.notReviewed.p99Ms)} (not reviewed)`,
    ratio: `${round(figures.reviewed.p99Ms / figures.notReviewed.p99Ms).toFixed(2)}×`,
    target: `added p99 < ${GOAL_P99_MS} ms`,
    met: figures.addedP99Ms < GOAL_P99_MS && figures.events.exact === figures.writes,
  };
}

export function admissionSection(figures: AdmissionFigures): string {
  return `## 13. The admission webhook

A kube-apiserver without any audit configuration and deploy/'s ValidatingWebhookConfiguration pointed at one
kubediff on loopback (\`--admission-listen\`, unauthenticated as on a managed cluster). The same user patches a
ConfigMap in a namespace the webhook reviews, then one in a namespace its \`namespaceSelector\` leaves out, one write
at a time and alternating, ${figures.writes} writes each way in the same run; each latency is the client's, from the request to
the API server's answer. kubediff watches the reviewed namespace: its events of these writes, and how many name the
user, are the join rate.

${markdownTable(
  ['', 'p50', 'p99', 'events', 'named the user (exact)'],
  [
    [
      'reviewed by the webhook',
      ms(figures.reviewed.p50Ms),
      ms(figures.reviewed.p99Ms),
      `${figures.events.received} of ${figures.writes}`,
      `${figures.events.named} (${figures.events.exact})`,
    ],
    ['not reviewed', ms(figures.notReviewed.p50Ms), ms(figures.notReviewed.p99Ms), '—', '—'],
    ['added', ms(figures.addedP50Ms), ms(figures.addedP99Ms), '', ''],
  ],
)}

kubediff's own part, from its \`kubediff_admission_answer_seconds\` (request read to answer written): half of its answers
within ${ms(figures.answer.p50AtMostMs)}, 99 % within ${ms(figures.answer.p99AtMostMs)} (bucket bounds), ${ms(figures.answer.meanMs)} on average. The rest of what a
review adds is the API server's: encoding the review (the object and the old one), the HTTPS round trip, and on a
loaded machine the scheduling of one more process.
`;
}
