// Figure 13 in BENCHMARKS.md and in the bench's table (bench/admission.ts, bench/admission-load.ts).
import type { AdmissionFigures } from './admission.ts';
import type { LoadFigures, PhaseFigures } from './admission-load.ts';
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

/** Issue 36's goals: under slow bodies, 99 % of real reviews 200 within 100 ms and a write's added p99 < 50 ms;
 * beside large reviews, a small review's p99 < 50 ms and /healthz's < 100 ms. */
const GOALS = { okShare: 0.99, withinMs: 100, addedP99Ms: 50, smallP99Ms: 50, healthzP99Ms: 100 } as const;

const within = (phase: PhaseFigures) => phase.reviews.okWithin100Ms / phase.reviews.sent;
const percent = (share: number) => `${round(share * 100)} %`;

/** The two rows of the loads (issue 36), beside the quiet phase of the same run. */
export function admissionLoadRows(load: LoadFigures) {
  const { quiet, slowBodies, largeReviews } = load.phases;
  return [
    {
      figure: `13b. a review's answer, p99, under 16 slow-body connections (${load.seconds} s)`,
      kubediff: `${ms(slowBodies.reviews.p99Ms)}; ${percent(within(slowBodies))} answered 200 within 100 ms; a write +${ms(slowBodies.writes.addedP99Ms)} at p99`,
      baseline: `${ms(quiet.reviews.p99Ms)} (quiet)`,
      ratio: `${round(slowBodies.reviews.p99Ms / quiet.reviews.p99Ms).toFixed(2)}×`,
      target: `≥ 99 % within ${GOALS.withinMs} ms; a write's added p99 < ${GOALS.addedP99Ms} ms`,
      met: within(slowBodies) >= GOALS.okShare && slowBodies.writes.addedP99Ms < GOALS.addedP99Ms,
    },
    {
      figure: `13c. a small review's answer, p99, beside 4 clients posting 7.8 MiB reviews (${load.seconds} s)`,
      kubediff: `${ms(largeReviews.reviews.p99Ms)}; /healthz ${ms(largeReviews.healthz.p99Ms)}; events ${largeReviews.writes.events} of ${largeReviews.writes.each}`,
      baseline: `${ms(quiet.reviews.p99Ms)}; /healthz ${ms(quiet.healthz.p99Ms)} (quiet)`,
      ratio: `${round(largeReviews.reviews.p99Ms / quiet.reviews.p99Ms).toFixed(2)}×`,
      target: `< ${GOALS.smallP99Ms} ms; /healthz < ${GOALS.healthzP99Ms} ms`,
      met:
        largeReviews.reviews.p99Ms < GOALS.smallP99Ms &&
        largeReviews.healthz.p99Ms < GOALS.healthzP99Ms &&
        largeReviews.writes.events === largeReviews.writes.each,
    },
  ];
}

function loadSection(load: LoadFigures): string {
  const phases: [string, PhaseFigures][] = [
    ['quiet', load.phases.quiet],
    ['16 slow-body connections', load.phases.slowBodies],
    ['4 clients posting 7.8 MiB reviews', load.phases.largeReviews],
  ];
  return `### Under load (issue 36)

The same kubediff and API server, in three phases of ${load.seconds} s each: quiet; 16 keep-alive TLS connections from two other
loopback addresses, 8 each, each sending a review whose last byte follows the rest by 950 ms and then the next (every
read younger than the 1 s slow-body cut); 4 clients each posting a review of a ConfigMap of 420,000 keys (7.8 MiB),
the next as soon as one is answered. In each phase a valid small review is posted straight to kubediff every 100 ms
(its answer: 200 with its own uid, and its time), \`/healthz\` is asked every 100 ms, and alice patches ConfigMaps one
at a time, alternating between the reviewed namespace and the one left out (a write's added latency, and the time
from the reviewed write to its event on stdout). The loads run in a thread of their own in the bench's process.

${markdownTable(
  [
    '',
    'reviews 200 with their uid (within 100 ms)',
    'answer p50 / p99',
    '/healthz p50 / p99',
    "a write's added p50 / p99",
    'events named exactly',
    'write → event p99',
    'failed open',
  ],
  phases.map(([name, phase]) => [
    name,
    `${phase.reviews.ok} of ${phase.reviews.sent} (${percent(within(phase))})`,
    `${ms(phase.reviews.p50Ms)} / ${ms(phase.reviews.p99Ms)}`,
    `${ms(phase.healthz.p50Ms)} / ${ms(phase.healthz.p99Ms)}`,
    `${ms(phase.writes.addedP50Ms)} / ${ms(phase.writes.addedP99Ms)}`,
    `${phase.writes.exact} of ${phase.writes.each}`,
    ms(phase.writes.eventP99Ms),
    String(phase.failedOpen),
  ]),
)}
`;
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
${figures.load ? `\n${loadSection(figures.load)}` : ''}`;
}
