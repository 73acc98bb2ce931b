// Figure 13's second part (issue 36): the admission webhook under the two loads that starved or stalled
// it, side by side with a quiet listener, in one run and on one kubediff. Each phase lasts `seconds`; in
// each, a valid small review is posted straight to kubediff every 100 ms (its answer's time, status and
// uid), /healthz is asked every 100 ms, and alice patches ConfigMaps one at a time, alternating between
// the namespace the webhook reviews and the one it leaves out (the client's latency each way, and the
// time from the reviewed write to its event on stdout). The phases:
// - quiet: nothing else;
// - slow bodies: 16 keep-alive TLS connections from two other loopback addresses, 8 each, each sending
//   a review whose last byte comes 950 ms after the rest, then the next (every read younger than the
//   1 s slow-body cut);
// - large reviews: 4 clients each posting a review of a 7.5 MB ConfigMap (420,000 small keys), the next
//   as soon as one is answered.
// The loads run in a thread of their own (lib/admission-load-worker.ts), so that their work does not
// slow the bench's own probes.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { Agent } from 'undici';
import { postReview, reviewBody } from '../test/helpers/admission-load.ts';
import type { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { parseMetrics } from '../test/helpers/metrics.ts';
import type { LoadStart } from './lib/admission-load-worker.ts';
import { quantile, round } from './lib/stats.ts';

export const LOAD_PHASES = ['quiet', 'slowBodies', 'largeReviews'] as const;
export type LoadPhase = (typeof LOAD_PHASES)[number];

export interface PhaseFigures {
  /** The small reviews posted: answered 200 with their uid, of those within 100 ms, and the answer's time. */
  reviews: { sent: number; ok: number; okWithin100Ms: number; p50Ms: number; p99Ms: number; maxMs: number };
  healthz: { probes: number; p50Ms: number; p99Ms: number; maxMs: number };
  writes: {
    each: number;
    reviewedP50Ms: number;
    reviewedP99Ms: number;
    notReviewedP50Ms: number;
    notReviewedP99Ms: number;
    addedP50Ms: number;
    addedP99Ms: number;
    /** The reviewed writes' events: received, named exactly after alice, and write → event line. */
    events: number;
    exact: number;
    eventP50Ms: number;
    eventP99Ms: number;
  };
  /** The API server's apiserver_admission_webhook_fail_open_count during the phase. */
  failedOpen: number;
  /** What the load's own requests were answered, by status. */
  load?: Record<string, number>;
}

export interface LoadFigures {
  seconds: number;
  phases: Record<LoadPhase, PhaseFigures>;
}

export interface LoadContext {
  port: number;
  caPem: string;
  metricsBase: string;
  admin: KubeAdmin;
  alice: KubeAdmin;
  reviewed: string;
  skipped: string;
  names: string[];
  /** The reviewed writes' events as they arrive: seq → arrival (performance.now()) and whether exact. */
  arrived: Map<number, { at: number; exact: boolean }>;
  /** The first seq this part may use (those below are the first part's). */
  firstSeq: number;
  log: (message: string) => void;
}

/** The load, once it runs (a large review's body is built first). */
async function startLoad(start: LoadStart): Promise<{ stop(): Promise<Record<string, number>> }> {
  const worker = new Worker(new URL('./lib/admission-load-worker.ts', import.meta.url), {
    workerData: start,
  });
  await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    stop: async () => {
      const answered = new Promise<{ statuses: Record<string, number> }>((resolve) =>
        worker.once('message', resolve),
      );
      worker.postMessage('stop');
      const { statuses } = await answered;
      await worker.terminate();
      return statuses;
    },
  };
}

async function failedOpen(admin: KubeAdmin): Promise<number> {
  const metrics = parseMetrics((await admin.request('GET', '/metrics')).text);
  return [...metrics]
    .filter(([key]) => key.startsWith('apiserver_admission_webhook_fail_open_count'))
    .reduce((sum, [, value]) => sum + value, 0);
}

/** Runs `probe` every `everyMs` until `stop()` is true. */
async function every(everyMs: number, stopped: () => boolean, probe: () => Promise<void>): Promise<void> {
  while (!stopped()) {
    const started = performance.now();
    await probe();
    await sleep(Math.max(0, everyMs - (performance.now() - started)));
  }
}

export async function measureAdmissionLoads(
  context: LoadContext,
  options: { seconds: number },
): Promise<LoadFigures> {
  const { port, caPem, metricsBase, admin, alice, reviewed, skipped, names, arrived } = context;
  let seq = context.firstSeq;
  const url = `https://127.0.0.1:${port}/review`;
  const phase = async (name: LoadPhase, load?: LoadStart): Promise<PhaseFigures> => {
    context.log(`admission: ${name}, ${options.seconds} s`);
    const running = load ? await startLoad(load) : undefined;
    // The load in its stride before anything is measured.
    if (running) await sleep(2_000);
    const failedBefore = await failedOpen(admin);
    const agent = new Agent({ connect: { ca: caPem }, connections: 1 });
    const reviews: { ok: boolean; ms: number }[] = [];
    const healthz: number[] = [];
    const reviewedMs: number[] = [];
    const notReviewedMs: number[] = [];
    const eventMs: number[] = [];
    const written = new Map<number, number>();
    const deadline = performance.now() + options.seconds * 1000;
    const stopped = () => performance.now() >= deadline;
    const patch = async (namespace: string, at: number) => {
      const started = performance.now();
      await alice.patch(`/api/v1/namespaces/${namespace}/configmaps/${names[at % names.length]}`, {
        data: { seq: String(at) },
      });
      return { started, ms: performance.now() - started };
    };
    const first = seq;
    await Promise.all([
      every(100, stopped, async () => {
        const uid = randomUUID();
        try {
          const answer = await postReview(agent, url, reviewBody(uid));
          reviews.push({ ok: answer.status === 200 && answer.uid === uid && answer.allowed, ms: answer.ms });
        } catch {
          reviews.push({ ok: false, ms: Number.NaN });
        }
      }),
      every(100, stopped, async () => {
        const started = performance.now();
        await (await fetch(`${metricsBase}/healthz`)).text();
        healthz.push(performance.now() - started);
      }),
      (async () => {
        while (!stopped()) {
          const at = seq++;
          // Alternating which goes first, so that neither side always follows the other.
          const order = at % 2 === 0 ? [reviewed, skipped] : [skipped, reviewed];
          for (const namespace of order) {
            const { started, ms } = await patch(namespace, at);
            if (namespace === reviewed) {
              reviewedMs.push(ms);
              written.set(at, started);
            } else {
              notReviewedMs.push(ms);
            }
          }
        }
      })(),
    ]);
    const statuses = await running?.stop();
    if (statuses)
      context.log(`admission: ${name}: the load's requests were answered ${JSON.stringify(statuses)}`);
    await agent.close();
    // The last write's event, once it is out (the stream is in order).
    const last = seq - 1;
    const until = performance.now() + 30_000;
    while (!arrived.has(last) && performance.now() < until) await sleep(50);
    let exact = 0;
    let events = 0;
    for (let at = first; at <= last; at++) {
      const event = arrived.get(at);
      const started = written.get(at);
      if (!event || started === undefined) continue;
      events++;
      if (event.exact) exact++;
      eventMs.push(event.at - started);
    }
    const at = (values: number[], q: number) => round(quantile(values, q));
    const okMs = reviews.filter((review) => review.ok).map((review) => review.ms);
    return {
      reviews: {
        sent: reviews.length,
        ok: okMs.length,
        okWithin100Ms: okMs.filter((ms) => ms <= 100).length,
        p50Ms: at(okMs, 0.5),
        p99Ms: at(okMs, 0.99),
        maxMs: round(Math.max(...okMs)),
      },
      healthz: {
        probes: healthz.length,
        p50Ms: at(healthz, 0.5),
        p99Ms: at(healthz, 0.99),
        maxMs: round(Math.max(...healthz)),
      },
      writes: {
        each: reviewedMs.length,
        reviewedP50Ms: at(reviewedMs, 0.5),
        reviewedP99Ms: at(reviewedMs, 0.99),
        notReviewedP50Ms: at(notReviewedMs, 0.5),
        notReviewedP99Ms: at(notReviewedMs, 0.99),
        addedP50Ms: round(quantile(reviewedMs, 0.5) - quantile(notReviewedMs, 0.5)),
        addedP99Ms: round(quantile(reviewedMs, 0.99) - quantile(notReviewedMs, 0.99)),
        events,
        exact,
        eventP50Ms: at(eventMs, 0.5),
        eventP99Ms: at(eventMs, 0.99),
      },
      failedOpen: (await failedOpen(admin)) - failedBefore,
      ...(statuses ? { load: statuses } : {}),
    };
  };
  const quiet = await phase('quiet');
  const slowBodies = await phase('slowBodies', {
    kind: 'slow-bodies',
    port,
    ca: caPem,
    addresses: ['127.0.0.2', '127.0.0.3'],
    perAddress: 8,
    cycleMs: 950,
  });
  const largeReviews = await phase('largeReviews', {
    kind: 'large-reviews',
    url,
    ca: caPem,
    clients: 4,
    keys: 420_000,
  });
  return { seconds: options.seconds, phases: { quiet, slowBodies, largeReviews } };
}
