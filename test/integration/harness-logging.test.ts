// Proves the logging-stack servers the OTLP and OpenSearch sinks' tests rely on: the OpenTelemetry
// Collector takes an OTLP/HTTP JSON request and its file exporter writes the record, attributes and all;
// the OpenSearch node indexes through _bulk, installs an index template with a data stream, and finds the
// documents by a term; a Collector of a test's own stops and restarts on the same ports and file.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '../helpers/kube-admin.ts';
import { testIndex, testOpenSearch } from '../helpers/opensearch-env.ts';
import { collectorLogs, startCollector } from '../helpers/otelcol.ts';
import { testClusterName, testCollector } from '../helpers/otelcol-env.ts';
import { tcpAccepts } from '../helpers/processes.ts';

function otlpJson(cluster: string, message: string) {
  return JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'k8s.cluster.name', value: { stringValue: cluster } }] },
        scopeLogs: [
          {
            scope: { name: 'harness' },
            logRecords: [
              {
                timeUnixNano: String(Date.now() * 1_000_000),
                severityNumber: 9,
                body: { kvlistValue: { values: [{ key: 'message', value: { stringValue: message } }] } },
                attributes: [{ key: 'n', value: { intValue: '7' } }],
              },
            ],
          },
        ],
      },
    ],
  });
}

test('the Collector writes what it receives over OTLP/HTTP to its file', async () => {
  const collector = testCollector();
  const cluster = testClusterName('harness');
  const response = await fetch(`${collector.httpEndpoint}/v1/logs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: otlpJson(cluster, 'hello'),
  });
  assert.equal(response.status, 200);
  const mine = await waitFor(
    async () => {
      const records = (await collectorLogs(collector)).filter(
        (r) => r.resource['k8s.cluster.name'] === cluster,
      );
      return records.length > 0 ? records : undefined;
    },
    { what: 'the record in the Collector file', timeoutMs: 30_000 },
  );
  assert.deepEqual(
    mine?.map((r) => [r.scope, r.body, r.attributes, r.severityNumber]),
    [['harness', { message: 'hello' }, { n: 7 }, 9]],
  );
});

test('a Collector of its own stops, refuses connections, and starts again on the same port and file', async () => {
  const collector = await startCollector();
  try {
    const send = (message: string) =>
      fetch(`${collector.httpEndpoint}/v1/logs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: otlpJson('own', message),
      });
    assert.equal((await send('before')).status, 200);
    await collector.stopServer();
    assert.equal(await tcpAccepts(collector.httpEndpoint.replace('http://', '')), false);
    await collector.startServer();
    assert.equal((await send('after')).status, 200);
    const bodies = await waitFor(
      async () => {
        const records = await collectorLogs(collector);
        return records.length >= 2 ? records.map((r) => r.body) : undefined;
      },
      { what: 'both records', timeoutMs: 30_000 },
    );
    assert.deepEqual(bodies, [{ message: 'before' }, { message: 'after' }]);
  } finally {
    await collector.stop();
  }
});

test('OpenSearch: an index template with a data stream, _bulk, and a term search', async () => {
  const { url } = testOpenSearch();
  const name = testIndex('harness');
  const json = { 'content-type': 'application/json' };
  const template = await fetch(`${url}/_index_template/${name}`, {
    method: 'PUT',
    headers: json,
    body: JSON.stringify({
      index_patterns: [`${name}*`],
      data_stream: {},
      template: {
        settings: { number_of_replicas: 0 },
        mappings: { dynamic: false, properties: { '@timestamp': { type: 'date' }, ns: { type: 'keyword' } } },
      },
    }),
  });
  assert.equal(template.status, 200, await template.text());
  const lines = ['a', 'b', 'a'].flatMap((id, index) => [
    JSON.stringify({ create: { _id: id } }),
    JSON.stringify({ '@timestamp': new Date().toISOString(), ns: index === 1 ? 'other' : 'shop' }),
  ]);
  const bulk = await fetch(`${url}/${name}/_bulk?refresh=true`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson' },
    body: `${lines.join('\n')}\n`,
  });
  const answer = (await bulk.json()) as { items: { create: { status: number } }[] };
  // The repeated _id is refused by create: a retry never makes a second document.
  assert.deepEqual(
    answer.items.map((item) => item.create.status),
    [201, 201, 409],
  );
  const search = await fetch(`${url}/${name}/_search`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ query: { term: { ns: 'shop' } } }),
  });
  const hits = (await search.json()) as { hits: { hits: { _id: string }[] } };
  assert.deepEqual(
    hits.hits.hits.map((hit) => hit._id),
    ['a'],
  );
});
