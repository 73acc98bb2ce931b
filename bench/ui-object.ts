// Figure 16: the UI beside the watch (`watch --state --ui`) while a visitor opens a huge object: a
// ConfigMap of 20,000 keys whose every value was replaced 30 times (issue 27: on the old server one such
// request took 25 s, during which /healthz and new events waited). The same watch is measured twice in
// one run: writes to a small ConfigMap at a steady rate, with their event latency (write → line on
// stdout) and /healthz's answer time (on --listen, polled every 50 ms), first with nobody on the page
// (the baseline), then while a client asks for the huge object's history with two rebuilt versions
// again and again. The bound docs/ui.md states is what the second phase adds at p99 to the first.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterInfo } from '../test/helpers/cluster.ts';
import type { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { SERVING } from '../test/helpers/metrics.ts';
import { latencies, sequenceOf, writeAtRate } from './latency.ts';
import { startChild } from './lib/processes.ts';
import { quantile, round } from './lib/stats.ts';

const KUBEDIFF = path.resolve(import.meta.dirname, '../bin/kubediff.js');
const UI_SERVING = /serving the change history on (http:\/\/\S+?)\//;

export interface UiObjectPhase {
  eventP50Ms: number;
  eventP99Ms: number;
  eventMaxMs: number;
  received: number;
  healthzP99Ms: number;
  healthzMaxMs: number;
  healthzProbes: number;
}

export interface UiObjectFigures {
  keys: number;
  replaces: number;
  writes: number;
  writesPerSecond: number;
  /** One object answer (events and two rebuilt versions): median time and size. */
  objectAnswerMs: number;
  objectAnswerMiB: number;
  objectAnswers: number;
  /** Answers refused at the time bound (10 s: a machine too busy for the worker). */
  objectRefused: number;
  /** Its events shown, and the bound's notice if one applied. */
  objectEvents: number;
  notice: string | undefined;
  idle: UiObjectPhase;
  loaded: UiObjectPhase;
  /** loaded / idle, for the event p99 and /healthz's p99. */
  eventP99Ratio: number;
  healthzP99Ratio: number;
  /** What the object's answers added at p99: loaded − idle (the bound docs/ui.md states). */
  eventAddedP99Ms: number;
  healthzAddedP99Ms: number;
}

/** /healthz answered every `everyMs` until `stop` resolves: each answer's time. */
async function probeHealth(url: string, everyMs: number, stop: Promise<void>): Promise<number[]> {
  const times: number[] = [];
  let stopped = false;
  void stop.then(() => {
    stopped = true;
  });
  while (!stopped) {
    const started = performance.now();
    const response = await fetch(`${url}/healthz`);
    await response.text();
    times.push(performance.now() - started);
    await sleep(everyMs);
  }
  return times;
}

export async function measureUiObject(
  info: ClusterInfo,
  admin: KubeAdmin,
  options: {
    keys: number;
    replaces: number;
    writes: number;
    writesPerSecond: number;
    log: (m: string) => void;
  },
): Promise<UiObjectFigures> {
  const ns = await admin.createNamespace('bench-ui-object');
  const collection = `/api/v1/namespaces/${ns}/configmaps`;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kubediff-bench-ui-object-'));
  const sentAt = { idle: new Map<number, number>(), loaded: new Map<number, number>() };
  const arrived = { idle: new Map<number, number>(), loaded: new Map<number, number>() };
  let phase: 'idle' | 'loaded' = 'idle';
  let hugeEvents = 0;
  const kubediff = startChild(
    process.execPath,
    [
      KUBEDIFF,
      'watch',
      '--kubeconfig',
      info.kubeconfigPath,
      '-o',
      'json',
      '-r',
      'configmaps',
      '-n',
      ns,
      '--state',
      path.join(dir, 'state.db'),
      '--ui',
      '127.0.0.1:0',
      '--listen',
      '127.0.0.1:0',
    ],
    {
      env: { ...process.env, KUBEDIFF_LOG_FORMAT: 'text' },
      onLine: (line, at) => {
        if (line.includes('"name":"huge"')) {
          hugeEvents++;
          return;
        }
        const seq = sequenceOf(line);
        if (seq !== undefined && !arrived[phase].has(seq)) arrived[phase].set(seq, at);
      },
    },
  );
  try {
    await kubediff.waitForStderr(/watching \d+ resource type/, 60_000);
    const ui = UI_SERVING.exec(kubediff.stderr())![1]!;
    const health = SERVING.exec(kubediff.stderr())![1]!;
    const data = (round: number) =>
      Object.fromEntries(
        Array.from({ length: options.keys }, (_, key) => [`key-${key}`, `value-${key}-${round}`]),
      );
    options.log(
      `ui object: a ConfigMap of ${options.keys} keys, every value replaced ${options.replaces} times`,
    );
    await admin.create(collection, { metadata: { name: 'huge' }, data: data(0) });
    for (let round = 1; round <= options.replaces; round++) {
      await admin.send('PUT', `${collection}/huge`, {
        body: { metadata: { name: 'huge' }, data: data(round) },
      });
    }
    await admin.create(collection, { metadata: { name: 'probe' }, data: { seq: '-1' } });
    while (hugeEvents < options.replaces + 1) await sleep(100);
    // The history holds them once the recorder committed them (its summaries say so).
    const objectPath = `${ui}/api/v1/object?kind=configmaps&namespace=${ns}&name=huge`;
    let seqs: number[] = [];
    while (seqs.length < options.replaces + 1) {
      const page = (await (
        await fetch(`${ui}/api/v1/events?namespace=${ns}&name=huge&limit=500`)
      ).json()) as {
        events: { seq: number }[];
      };
      seqs = page.events.map((event) => event.seq).sort((a, b) => a - b);
      if (seqs.length < options.replaces + 1) await sleep(200);
    }

    const run = async (which: 'idle' | 'loaded', load: (done: Promise<void>) => Promise<void>) => {
      phase = which;
      const stop = Promise.withResolvers<void>();
      const probes = probeHealth(health, 50, stop.promise);
      const loading = load(stop.promise);
      options.log(`ui object: ${options.writes} writes at ${options.writesPerSecond}/s, ${which}`);
      await writeAtRate(admin, collection, ['probe'], options, sentAt[which], [arrived[which]]);
      stop.resolve();
      const healthz = await probes;
      await loading;
      const events = latencies(sentAt[which], arrived[which]);
      return {
        eventP50Ms: round(quantile(events, 0.5)),
        eventP99Ms: round(quantile(events, 0.99)),
        eventMaxMs: round(Math.max(...events)),
        received: events.length,
        healthzP99Ms: round(quantile(healthz, 0.99)),
        healthzMaxMs: round(Math.max(...healthz)),
        healthzProbes: healthz.length,
      } satisfies UiObjectPhase;
    };
    const idle = await run('idle', async () => {});
    const answers: { ms: number; bytes: number; events: number; notice?: string }[] = [];
    let refused = 0;
    const loaded = await run('loaded', async (done) => {
      let writing = true;
      void done.then(() => {
        writing = false;
      });
      // One request at a time, again and again, while the writes go on.
      while (writing) {
        const started = performance.now();
        const response = await fetch(`${objectPath}&a=${seqs.at(-2)}&b=${seqs.at(-1)}`);
        const body = await response.text();
        if (response.status === 503) {
          // The time bound: the answer was not built (the machine too busy for the worker).
          refused++;
          continue;
        }
        if (!response.ok)
          throw new Error(`the object's answer: HTTP ${response.status} ${body.slice(0, 200)}`);
        const parsed = JSON.parse(body) as { events: unknown[]; notice?: string };
        answers.push({
          ms: performance.now() - started,
          bytes: body.length,
          events: parsed.events.length,
          ...(parsed.notice ? { notice: parsed.notice } : {}),
        });
      }
    });
    const last = answers.at(-1);
    return {
      keys: options.keys,
      replaces: options.replaces,
      writes: options.writes,
      writesPerSecond: options.writesPerSecond,
      objectAnswerMs: round(
        quantile(
          answers.map((answer) => answer.ms),
          0.5,
        ),
      ),
      objectAnswerMiB: round((last?.bytes ?? 0) / 2 ** 20),
      objectAnswers: answers.length,
      objectRefused: refused,
      objectEvents: last?.events ?? 0,
      notice: last?.notice,
      idle,
      loaded,
      eventP99Ratio: round(loaded.eventP99Ms / idle.eventP99Ms),
      healthzP99Ratio: round(loaded.healthzP99Ms / idle.healthzP99Ms),
      eventAddedP99Ms: round(loaded.eventP99Ms - idle.eventP99Ms),
      healthzAddedP99Ms: round(loaded.healthzP99Ms - idle.healthzP99Ms),
    };
  } finally {
    await kubediff.stop();
    await admin.deleteNamespace(ns);
    await rm(dir, { recursive: true, force: true });
  }
}
