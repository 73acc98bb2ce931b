// Figure 8: the latency the audit join adds. A kube-apiserver with the recommended audit policy and its
// webhook (batch mode, --audit-webhook-batch-max-wait=100ms as docs/audit.md recommends) pointed at one
// kubediff (`--audit-listen`, default --audit-wait), started on the bench cluster's etcd; a second
// kubediff without the webhook watches the same ConfigMaps of the same API server at the same time.
// Both see the same writes (the API server's own audit cost is on both sides), so the difference is
// the join's wait. Each side's latency is the time from just before the write request to its event
// line; the figure also counts how many of the audited side's events named their user.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startAuditedApiserver } from '../test/helpers/audited-apiserver.ts';
import type { ClusterInfo } from '../test/helpers/cluster.ts';
import { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { makeTestPki } from '../test/helpers/pki.ts';
import { freePorts } from '../test/helpers/processes.ts';
import { latencies, sequenceOf, writeAtRate } from './latency.ts';
import { inParallel } from './lib/objects.ts';
import { startChild } from './lib/processes.ts';
import { quantile, round } from './lib/stats.ts';

const KUBEDIFF = path.resolve(import.meta.dirname, '../bin/kubediff.js');
const OBJECTS = 20;

export interface AuditFigures {
  writes: number;
  writesPerSecond: number;
  audited: { p50Ms: number; p99Ms: number; received: number; withUser: number; exact: number };
  plain: { p50Ms: number; p99Ms: number; received: number };
  /** audited p99 − plain p99. */
  addedP99Ms: number;
  p99Ratio: number;
}

export async function measureAuditLatency(
  info: ClusterInfo,
  options: { writes: number; writesPerSecond: number; log: (m: string) => void },
): Promise<AuditFigures> {
  if (!info.etcdEndpoint) throw new Error('the audit figure needs the bench cluster’s etcd');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kubediff-bench-audit-'));
  const pki = makeTestPki();
  const file = async (name: string, content: string) => {
    const at = path.join(dir, name);
    await writeFile(at, content, { mode: 0o600 });
    return at;
  };
  const [port] = (await freePorts(1)) as [number];
  const api = await startAuditedApiserver({
    etcdEndpoint: info.etcdEndpoint,
    batchMaxWait: '100ms',
    webhook: {
      url: `https://127.0.0.1:${port}/audit`,
      caPem: pki.caPem,
      clientCert: pki.clientCert,
      clientKey: pki.clientKey,
    },
  });
  const admin = new KubeAdmin(api);
  const sentAt = new Map<number, number>();
  const auditedAt = new Map<number, number>();
  const plainAt = new Map<number, number>();
  let withUser = 0;
  let exact = 0;
  try {
    const ns = await admin.createNamespace('bench-audit');
    const collection = `/api/v1/namespaces/${ns}/configmaps`;
    const names = Array.from({ length: OBJECTS }, (_, i) => `audit-${i}`);
    await inParallel(names, 4, (name) =>
      admin.create(collection, { metadata: { name }, data: { seq: '-1', payload: 'x'.repeat(1500) } }),
    );
    const watch = ['watch', '--kubeconfig', api.kubeconfigPath, '-o', 'json', '-r', 'configmaps', '-n', ns];
    const audited = startChild(
      process.execPath,
      [
        KUBEDIFF,
        ...watch,
        '--audit-listen',
        `127.0.0.1:${port}`,
        '--audit-cert',
        await file('tls.crt', pki.serverCert),
        '--audit-key',
        await file('tls.key', pki.serverKey),
        '--audit-client-ca',
        await file('ca.crt', pki.caPem),
      ],
      {
        onLine: (line, at) => {
          const seq = sequenceOf(line);
          if (seq === undefined || auditedAt.has(seq)) return;
          auditedAt.set(seq, at);
          const by = (JSON.parse(line) as { by?: { user?: unknown; match?: string } }).by;
          if (by?.user) withUser++;
          if (by?.match === 'exact') exact++;
        },
      },
    );
    const plain = startChild(process.execPath, [KUBEDIFF, ...watch], {
      onLine: (line, at) => {
        const seq = sequenceOf(line);
        if (seq !== undefined && !plainAt.has(seq)) plainAt.set(seq, at);
      },
    });
    try {
      await audited.waitForStderr(/watching \d+ resource type/, 60_000);
      await plain.waitForStderr(/watching \d+ resource type/, 60_000);
      await sleep(1_000);
      options.log(
        `audit: ${options.writes} writes at ${options.writesPerSecond}/s, with and without the join`,
      );
      await writeAtRate(admin, collection, names, options, sentAt, [auditedAt, plainAt]);
    } finally {
      await audited.stop();
      await plain.stop();
    }
  } finally {
    await admin.close();
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  }
  const a = latencies(sentAt, auditedAt);
  const p = latencies(sentAt, plainAt);
  const auditedP99 = quantile(a, 0.99);
  const plainP99 = quantile(p, 0.99);
  return {
    writes: options.writes,
    writesPerSecond: options.writesPerSecond,
    audited: {
      p50Ms: round(quantile(a, 0.5)),
      p99Ms: round(auditedP99),
      received: a.length,
      withUser,
      exact,
    },
    plain: { p50Ms: round(quantile(p, 0.5)), p99Ms: round(plainP99), received: p.length },
    addedP99Ms: round(auditedP99 - plainP99),
    p99Ratio: auditedP99 / plainP99,
  };
}
