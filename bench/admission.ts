// Figure 13: what the admission webhook costs a write, and how many writes it names. A kube-apiserver of its
// own (no audit), started on the bench cluster's etcd, with deploy/'s ValidatingWebhookConfiguration pointed
// at one kubediff (--admission-listen on loopback, unauthenticated as on a managed cluster). Two namespaces
// of the same API server: one the webhook reviews, one its namespaceSelector leaves out (labelled
// who.kubediff.io/skip). The same user patches a ConfigMap in one, then in the other, one write at a time,
// `writes` each way in the same run: the difference of their latencies (request to answer, as the client
// sees it) is what the webhook adds. kubediff watches the reviewed namespace: the churn's events and how
// many of them name the user exactly is the join rate.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  admissionWebhookConfiguration,
  registerWebhook,
  startAdmissionApiserver,
} from '../test/helpers/admission-apiserver.ts';
import type { ClusterInfo } from '../test/helpers/cluster.ts';
import { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { SERVING } from '../test/helpers/metrics.ts';
import { makeTestPki } from '../test/helpers/pki.ts';
import { freePorts } from '../test/helpers/processes.ts';
import { type LoadFigures, measureAdmissionLoads } from './admission-load.ts';
import { sequenceOf } from './latency.ts';
import { inParallel } from './lib/objects.ts';
import { startChild } from './lib/processes.ts';
import { quantile, round } from './lib/stats.ts';

const KUBEDIFF = path.resolve(import.meta.dirname, '../bin/kubediff.js');
const OBJECTS = 20;

export interface AdmissionFigures {
  /** Writes each way. */
  writes: number;
  reviewed: { p50Ms: number; p99Ms: number };
  notReviewed: { p50Ms: number; p99Ms: number };
  addedP50Ms: number;
  addedP99Ms: number;
  /** The reviewed writes' events: received, and named (exactly) after the user. */
  events: { received: number; named: number; exact: number };
  /**
   * kubediff's own part, from kubediff_admission_answer_seconds: the bucket bounds (ms) under which half
   * and 99 % of its answers went out, and their mean.
   */
  answer: { p50AtMostMs: number; p99AtMostMs: number; meanMs: number };
  /** Under the slow-body attack and large reviews, beside a quiet phase (admission-load.ts). */
  load?: LoadFigures;
}

export async function measureAdmission(
  info: ClusterInfo,
  options: { writes: number; loadSeconds: number; log: (m: string) => void },
): Promise<AdmissionFigures> {
  if (!info.etcdEndpoint) throw new Error('the admission figure needs the bench cluster’s etcd');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kubediff-bench-admission-'));
  const pki = makeTestPki();
  const file = async (name: string, content: string) => {
    const at = path.join(dir, name);
    await writeFile(at, content, { mode: 0o600 });
    return at;
  };
  const [port] = (await freePorts(1)) as [number];
  const api = await startAdmissionApiserver({ etcdEndpoint: info.etcdEndpoint });
  const admin = new KubeAdmin(api);
  const alice = admin.as(api.tokens.alice);
  const arrived = new Map<number, { at: number; named: boolean; exact: boolean }>();
  const reviewedMs: number[] = [];
  const notReviewedMs: number[] = [];
  let answer: AdmissionFigures['answer'] | undefined;
  let load: LoadFigures | undefined;
  try {
    const reviewed = await admin.createNamespace('bench-admission');
    const skipped = await admin.createNamespace('bench-admission-skip', { 'who.kubediff.io/skip': 'true' });
    for (const namespace of [reviewed, skipped]) {
      const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}`;
      await admin.create(`${rbac}/roles`, {
        metadata: { name: 'configmaps' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }],
      });
      await admin.create(`${rbac}/rolebindings`, {
        metadata: { name: 'alice' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmaps' },
        subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' }],
      });
    }
    const names = Array.from({ length: OBJECTS }, (_, i) => `admission-${i}`);
    for (const namespace of [reviewed, skipped]) {
      await inParallel(names, 4, (name) =>
        admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
          metadata: { name },
          data: { seq: '-1', payload: 'x'.repeat(1500) },
        }),
      );
    }
    const kubediff = startChild(
      process.execPath,
      [
        KUBEDIFF,
        'watch',
        '--kubeconfig',
        api.kubeconfigPath,
        '-o',
        'json',
        '-r',
        'configmaps',
        '-n',
        reviewed,
        '--admission-listen',
        `127.0.0.1:${port}`,
        '--admission-cert',
        await file('tls.crt', pki.serverCert),
        '--admission-key',
        await file('tls.key', pki.serverKey),
        '--admission-allow-unauthenticated',
        '--listen',
        '127.0.0.1:0',
      ],
      {
        onLine: (line, at) => {
          const seq = sequenceOf(line);
          if (seq === undefined || arrived.has(seq)) return;
          const by = (JSON.parse(line) as { by?: { user?: { username?: string }; match?: string } }).by;
          arrived.set(seq, { at, named: by?.user?.username === 'alice', exact: by?.match === 'exact' });
        },
      },
    );
    const unregister = await registerWebhook(
      admin,
      await admissionWebhookConfiguration({
        name: `kubediff-bench-${reviewed}`,
        url: `https://127.0.0.1:${port}/review`,
        caPem: pki.caPem,
      }),
    );
    try {
      await kubediff.waitForStderr(/watching \d+ resource type/, 60_000);
      const metricsBase = SERVING.exec(kubediff.stderr())?.[1];
      // The API server takes the webhook into use a moment after it is created: write until a write
      // (seq -2, -3, …) is named, then warm both paths up.
      for (let probe = 2; ![...arrived.values()].some((event) => event.named); probe++) {
        if (probe > 400) throw new Error('the webhook was never called');
        await alice.patch(`/api/v1/namespaces/${reviewed}/configmaps/${names[0]}`, {
          data: { seq: String(-probe) },
        });
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      arrived.clear();
      options.log(`admission: ${options.writes} writes each way, one at a time, alternating`);
      const patch = async (namespace: string, seq: number) => {
        const started = performance.now();
        await alice.patch(`/api/v1/namespaces/${namespace}/configmaps/${names[seq % OBJECTS]}`, {
          data: { seq: String(seq) },
        });
        return performance.now() - started;
      };
      for (let seq = 0; seq < options.writes; seq++) {
        // Alternating which goes first, so that neither side always follows the other.
        if (seq % 2 === 0) {
          reviewedMs.push(await patch(reviewed, seq));
          notReviewedMs.push(await patch(skipped, seq));
        } else {
          notReviewedMs.push(await patch(skipped, seq));
          reviewedMs.push(await patch(reviewed, seq));
        }
      }
      // Every event of the churn, once it is out (the last one's arrival is enough: the stream is in order).
      const deadline = Date.now() + 30_000;
      while (!arrived.has(options.writes - 1) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      if (metricsBase) answer = answerTimes(await (await fetch(`${metricsBase}/metrics`)).text());
      if (metricsBase && options.loadSeconds > 0) {
        load = await measureAdmissionLoads(
          {
            port,
            caPem: pki.caPem,
            metricsBase,
            admin,
            alice,
            reviewed,
            skipped,
            names,
            arrived,
            firstSeq: options.writes,
            log: options.log,
          },
          { seconds: options.loadSeconds },
        );
      }
    } finally {
      await unregister().catch(() => {});
      await kubediff.stop();
    }
  } finally {
    await Promise.all([alice.close(), admin.close()]);
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  }
  if (!answer) throw new Error('kubediff served no metrics');
  const events = [...arrived].filter(([seq]) => seq < options.writes).map(([, event]) => event);
  const at = (values: number[], q: number) => round(quantile(values, q));
  return {
    writes: options.writes,
    reviewed: { p50Ms: at(reviewedMs, 0.5), p99Ms: at(reviewedMs, 0.99) },
    notReviewed: { p50Ms: at(notReviewedMs, 0.5), p99Ms: at(notReviewedMs, 0.99) },
    addedP50Ms: round(quantile(reviewedMs, 0.5) - quantile(notReviewedMs, 0.5)),
    addedP99Ms: round(quantile(reviewedMs, 0.99) - quantile(notReviewedMs, 0.99)),
    events: {
      received: events.length,
      named: events.filter((event) => event.named).length,
      exact: events.filter((event) => event.exact).length,
    },
    answer,
    ...(load ? { load } : {}),
  };
}

/** kubediff's answers (probes and warm-up included) from its histogram: bucket bounds and the mean, in ms. */
function answerTimes(metrics: string): AdmissionFigures['answer'] {
  const name = 'kubediff_admission_answer_seconds';
  const buckets = [
    ...metrics.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)",outcome="accepted"\\} (\\d+)`, 'gm')),
  ].map((match) => ({ le: Number(match[1]), count: Number(match[2]) }));
  const value = (suffix: string) =>
    Number(new RegExp(`^${name}_${suffix}\\{outcome="accepted"\\} (\\S+)`, 'm').exec(metrics)?.[1]);
  const total = value('count');
  const within = (share: number) =>
    (buckets.find((bucket) => bucket.count >= share * total)?.le ?? Number.NaN) * 1000;
  return {
    p50AtMostMs: within(0.5),
    p99AtMostMs: within(0.99),
    meanMs: round((value('sum') / total) * 1000),
  };
}
