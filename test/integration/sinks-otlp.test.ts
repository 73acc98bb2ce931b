// The OTLP sink end to end: `kubediff watch` against the real API server sending OpenTelemetry log records
// to a real OpenTelemetry Collector (test/helpers/otelcol.ts), read back from the Collector's file
// exporter. Every event arrives once, as a structured body equal to its -o json line, with the resource
// and record attributes docs/sinks.md promises and a severity by type; nothing of a Secret's value; OTLP/JSON
// and headers from a file work; a Collector stopped during churn and started again loses nothing; and the
// Loki path of docs/sinks.md (a Collector forwarding with otlphttp to Loki's /otlp endpoint) delivers,
// with a second Collector listening where Loki would.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { type KubediffProcess, runKubediff } from '../helpers/cli.ts';
import { clusterSuite } from '../helpers/cluster-suite.ts';
import { matching, type TestEvent } from '../helpers/events.ts';
import { waitFor } from '../helpers/kube-admin.ts';
import { assertNoLeaks, CANARY, fileSource } from '../helpers/leak-check.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';
import {
  type CollectedRecord,
  type CollectorInfo,
  collectorLogs,
  type RunningCollector,
  startCollector,
} from '../helpers/otelcol.ts';
import { testClusterName, testCollector } from '../helpers/otelcol-env.ts';
import { makeTestPki } from '../helpers/pki.ts';

const READY = /watching \d+ resource types?/;
const suite = clusterSuite('otlp-sink');
const { namespace } = suite;
const collectors: RunningCollector[] = [];
suite.closeAfter(() => Promise.all(collectors.map((collector) => collector.stop())));

const configmaps = (ns: string) => `/api/v1/namespaces/${ns}/configmaps`;
const secrets = (ns: string) => `/api/v1/namespaces/${ns}/secrets`;

async function startWatch(
  ns: string,
  cluster: string,
  args: string[],
  resources = ['configmaps'],
): Promise<KubediffProcess> {
  const watch = runKubediff(
    [
      'watch',
      '--kubeconfig',
      suite.kubeconfig,
      '-o',
      'json',
      '-n',
      ns,
      ...resources.flatMap((resource) => ['-r', resource]),
      '--cluster-name',
      cluster,
      ...args,
    ],
    { checkEvents: true, timeoutMs: 60_000 },
  );
  await watch.waitForStderr(READY, 90_000);
  return watch;
}

/** Creates `objects` ConfigMaps, updates each `updates` times, deletes every other one; returns the writes. */
async function churn(ns: string, prefix: string, objects: number, updates: number): Promise<number> {
  let writes = 0;
  for (let i = 0; i < objects; i++) {
    await suite.admin.create(configmaps(ns), { metadata: { name: `${prefix}-${i}` }, data: { n: '0' } });
    writes++;
  }
  for (let round = 1; round <= updates; round++) {
    for (let i = 0; i < objects; i++) {
      await suite.admin.patch(`${configmaps(ns)}/${prefix}-${i}`, { data: { n: String(round) } });
      writes++;
    }
  }
  for (let i = 0; i < objects; i += 2) {
    await suite.admin.delete(`${configmaps(ns)}/${prefix}-${i}`);
    writes++;
  }
  return writes;
}

/** The records of `cluster` in the Collector's output, once `count` of them are there. */
async function recordsOf(
  collector: CollectorInfo,
  cluster: string,
  count: number,
): Promise<CollectedRecord[]> {
  let mine: CollectedRecord[] = [];
  await waitFor(
    async () => {
      mine = (await collectorLogs(collector)).filter(
        (record) => record.resource['k8s.cluster.name'] === cluster,
      );
      return mine.length >= count;
    },
    { what: `${count} records of ${cluster} in the Collector's output`, timeoutMs: 60_000 },
  );
  return mine;
}

describe('kubediff watch with an OTLP sink', () => {
  it('sends each event once as a log record: its JSON as the body, k8sobjects and semantic-convention attributes, severity by type, nothing of a Secret', async () => {
    const collector = testCollector();
    const ns = await namespace('otlp-e2e');
    const cluster = testClusterName('otlp-e2e');
    const watch = await startWatch(
      ns,
      cluster,
      ['--otlp-endpoint', collector.httpEndpoint],
      ['configmaps', 'secrets'],
    );
    assert.match(watch.stderr, /delivering to otlp http:\/\/127\.0\.0\.1:\d+\//);

    const secretValue = `${CANARY}-otlp-${Date.now()}`;
    await suite.admin.create(secrets(ns), {
      metadata: { name: 'token' },
      stringData: { token: secretValue },
    });
    await suite.admin.patch(`${secrets(ns)}/token`, { stringData: { token: `${secretValue}-2` } });
    const writes = 2 + (await churn(ns, 'otlp', 4, 2));
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'otlp-2' }));
    assert.equal(watch.events.length, writes);
    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.doesNotMatch(stopped.stderr, /not delivered|dead-letter/);

    const records = await recordsOf(collector, cluster, writes);
    assert.equal(records.length, writes, 'one record per event, no more');
    const byId = new Map(watch.events.map((event) => [event.id, event]));
    for (const record of records) {
      const event = byId.get(String(record.attributes['kubediff.event.id'])) as TestEvent;
      assert.ok(event, `record ${String(record.attributes['kubediff.event.id'])} is an event of stdout`);
      assert.deepEqual(record.body, JSON.parse(JSON.stringify(event)), 'the body is the event, structured');
      assert.deepEqual(record.resource, {
        'service.name': 'kubediff',
        'k8s.cluster.name': cluster,
        'k8s.namespace.name': ns,
      });
      assert.equal(record.scope, 'kubediff');
      const expected: Record<string, unknown> = {
        'k8s.resource.name': event.object.resource,
        'event.domain': 'k8s',
        'event.name': event.object.name,
        'kubediff.event.id': event.id,
        'kubediff.event.type': event.type,
        'kubediff.object.kind': event.object.kind,
        'kubediff.object.api_version': 'v1',
        'kubediff.object.resource': event.object.resource,
        'kubediff.object.uid': event.object.uid,
      };
      if (event.changes) expected['kubediff.changes.paths'] = event.changes.map((change) => change.path);
      const managers = event.by?.managers?.map((manager) => manager.manager);
      if (managers?.length) expected['kubediff.by.managers'] = managers;
      assert.deepEqual(record.attributes, expected);
      assert.equal(record.severityText, event.type === 'DELETED' ? 'WARN' : 'INFO');
      assert.equal(record.severityNumber, event.type === 'DELETED' ? 13 : 9);
      assert.equal(BigInt(record.timeUnixNano ?? '0'), BigInt(Date.parse(event.time)) * 1_000_000n);
    }
    assert.ok(
      records.some((record) => record.attributes['k8s.resource.name'] === 'secrets'),
      'the Secret’s events were sent (redacted)',
    );
    await assertNoLeaks(
      (await collectorFiles(collector)).map((file) =>
        fileSource(`Collector output ${path.basename(file)}`, file),
      ),
    );
  });

  it('sends OTLP/JSON with headers from a file, configured in the config file, counted in the sink metrics', async () => {
    const collector = testCollector();
    const ns = await namespace('otlp-json');
    const cluster = testClusterName('otlp-json');
    const headers = path.join(suite.dir, 'otlp-headers');
    await writeFile(headers, 'X-Scope-OrgID: tenant-1\nAuthorization: Bearer abc\n', { mode: 0o600 });
    const config = path.join(suite.dir, 'otlp-json.yaml');
    await writeFile(
      config,
      `sinks:\n  - type: stdout\n  - type: otlp\n    endpoint: ${collector.httpEndpoint}/v1/logs\n    protocol: http/json\n    headersFile: ${JSON.stringify(headers)}\n    batch: 2\n`,
    );
    const watch = await startWatch(ns, cluster, ['-c', config, '--listen', '127.0.0.1:0']);
    const [, base] = await watch.waitForStderr(SERVING);
    const writes = await churn(ns, 'json', 3, 1);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'json-2' }));
    const records = await recordsOf(collector, cluster, writes);
    // The sink's share of the per-sink metrics, as every sink has them.
    const metrics = await scrapeMetrics(base as string);
    const sink = `otlp ${collector.httpEndpoint}/…`;
    assert.equal(metrics.get(`kubediff_sink_events_total{sink="${sink}",outcome="delivered"}`), writes);
    assert.equal(metrics.get(`kubediff_sink_queue_depth{sink="${sink}"}`), 0);
    assert.ok(
      (metrics.get(`kubediff_sink_request_duration_seconds_count{sink="${sink}",outcome="ok"}`) ?? 0) >=
        writes / 2,
      'one request per batch of at most 2',
    );
    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.deepEqual(
      records.map((record) => record.attributes['kubediff.event.id']).sort(),
      watch.events.map((event) => event.id).sort(),
    );
  });

  it('sends over TLS with a client certificate (CA, certificate and key from files); without one, refused and dead-lettered', async () => {
    const pki = makeTestPki();
    const file = async (name: string, text: string) => {
      const at = path.join(suite.dir, name);
      await writeFile(at, text, { mode: 0o600 });
      return at;
    };
    const [ca, serverCert, serverKey, clientCert, clientKey] = await Promise.all([
      file('ca.pem', pki.caPem),
      file('server.pem', pki.serverCert),
      file('server-key.pem', pki.serverKey),
      file('client.pem', pki.clientCert),
      file('client-key.pem', pki.clientKey),
    ]);
    const collector = await startCollector({
      label: 'otlp-tls',
      tls: { certFile: serverCert, keyFile: serverKey, clientCaFile: ca },
    });
    collectors.push(collector);
    assert.match(collector.httpEndpoint, /^https:/);
    const ns = await namespace('otlp-tls');
    const cluster = testClusterName('otlp-tls');
    const deadLetter = path.join(suite.dir, 'tls-dead.jsonl');
    const config = path.join(suite.dir, 'otlp-tls.yaml');
    await writeFile(
      config,
      `deadLetter: ${JSON.stringify(deadLetter)}\nsinks:\n  - type: stdout\n` +
        `  - type: otlp\n    name: mtls\n    endpoint: ${collector.httpEndpoint}\n    tls: { caFile: ${JSON.stringify(ca)}, certFile: ${JSON.stringify(clientCert)}, keyFile: ${JSON.stringify(clientKey)} }\n` +
        `  - type: otlp\n    name: no-client-certificate\n    endpoint: ${collector.httpEndpoint}\n    tls: { caFile: ${JSON.stringify(ca)} }\n    timeout: 2s\n`,
    );
    const watch = await startWatch(ns, cluster, ['-c', config, '--shutdown-timeout', '3s']);
    const writes = await churn(ns, 'tls', 2, 1);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'tls-0' }));
    const records = await recordsOf(collector, cluster, writes);
    const stopped = await watch.stop('SIGTERM', 60_000);
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.deepEqual(
      records.map((record) => record.attributes['kubediff.event.id']).sort(),
      watch.events.map((event) => event.id).sort(),
      'the sink with a client certificate delivered every event, once',
    );
    // Without a client certificate the Collector ends the handshake: retried (it may be a passing
    // fault), then dead-lettered at the stop, every event of it.
    assert.match(stopped.stderr, /no-client-certificate: .*retrying in/);
    const letters = (await readFile(deadLetter, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { sink: string; event: TestEvent });
    assert.ok(letters.every((letter) => letter.sink === 'no-client-certificate'));
    assert.deepEqual(
      letters.map((letter) => letter.event.id).sort(),
      watch.events.map((event) => event.id).sort(),
    );
  });

  it('loses nothing when the Collector stops during churn and comes back', async () => {
    const collector = await startCollector({ label: 'otlp-sink-restart' });
    collectors.push(collector);
    const ns = await namespace('otlp-restart');
    const cluster = testClusterName('otlp-restart');
    const watch = await startWatch(ns, cluster, [
      '--otlp-endpoint',
      collector.httpEndpoint,
      '--shutdown-timeout',
      '60s',
    ]);
    let writes = await churn(ns, 'before', 3, 1);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'before-2' }));
    await recordsOf(collector, cluster, writes);
    await collector.stopServer();
    // Changes while the Collector is down: the watch goes on (stdout gets them), the sink's share waits.
    writes += await churn(ns, 'during', 5, 2);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'during-4' }));
    await watch.waitForStderr(/otlp .*retrying in/);
    await collector.startServer();
    writes += await churn(ns, 'after', 3, 1);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'after-2' }));
    assert.equal(watch.events.length, writes);
    const stopped = await watch.stop('SIGTERM', 90_000);
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.doesNotMatch(stopped.stderr, /not delivered|dead-letter/);
    assert.match(stopped.stderr, /delivering again/);
    const records = await recordsOf(collector, cluster, writes);
    assert.deepEqual(
      records.map((record) => record.attributes['kubediff.event.id']).sort(),
      watch.events.map((event) => event.id).sort(),
      'every event, each once',
    );
  });

  it('reaches Loki through a Collector forwarding with otlphttp (docs/sinks.md), a second Collector standing in for Loki', async () => {
    // Where Loki listens for OTLP: /otlp/v1/logs.
    const loki = await startCollector({ label: 'otlp-loki', logsUrlPath: '/otlp/v1/logs' });
    collectors.push(loki);
    // The documented forwarding configuration, with Loki's address.
    const forwarder = await startCollector({
      label: 'otlp-forwarder',
      exporters: { otlphttp: { endpoint: `${loki.httpEndpoint}/otlp` } },
    });
    collectors.push(forwarder);
    const ns = await namespace('otlp-loki');
    const cluster = testClusterName('otlp-loki');
    const watch = await startWatch(ns, cluster, ['--otlp-endpoint', forwarder.httpEndpoint]);
    const writes = await churn(ns, 'loki', 2, 1);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'loki-0' }));
    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);
    const records = await recordsOf(loki, cluster, writes);
    assert.deepEqual(
      records.map((record) => record.attributes['kubediff.event.id']).sort(),
      watch.events.map((event) => event.id).sort(),
    );
    // The resource attributes Loki turns into stream labels by default.
    assert.ok(records.every((record) => record.resource['k8s.namespace.name'] === ns));
  });
});

async function collectorFiles(collector: CollectorInfo): Promise<string[]> {
  const { readdir } = await import('node:fs/promises');
  return (await readdir(collector.outputDir)).map((file) => path.join(collector.outputDir, file));
}
