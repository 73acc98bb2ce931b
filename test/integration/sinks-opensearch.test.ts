// The OpenSearch sink end to end: `kubediff watch` against the real API server indexing into a real
// OpenSearch node (test/helpers/opensearch.ts) through _bulk, read back with OpenSearch's own search API.
// A churn whose changes carry values of every type (strings, numbers, objects, lists) is indexed whole,
// each event once under its id, and found by namespace, kind, type, manager and path, thanks to the
// index template kubediff installs; documents the node refuses (a conflicting mapping kubediff does not
// own) are dead-lettered and said once; a node stopped in the middle of churn and started again loses
// nothing and duplicates nothing (a data stream).
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { type KubediffProcess, runKubediff } from '../helpers/cli.ts';
import { clusterSuite } from '../helpers/cluster-suite.ts';
import { matching, type TestEvent } from '../helpers/events.ts';
import { type RunningOpenSearch, startOpenSearch } from '../helpers/opensearch.ts';
import { testIndex, testOpenSearch } from '../helpers/opensearch-env.ts';

const READY = /watching \d+ resource types?/;
const suite = clusterSuite('opensearch-sink');
const { namespace } = suite;
const nodes: RunningOpenSearch[] = [];
suite.closeAfter(() => Promise.all(nodes.map((node) => node.stop())));

const configmaps = (ns: string) => `/api/v1/namespaces/${ns}/configmaps`;
const deployments = (ns: string) => `/apis/apps/v1/namespaces/${ns}/deployments`;

async function startWatch(ns: string, sink: string, args: string[] = []): Promise<KubediffProcess> {
  const config = path.join(suite.dir, `${ns}.yaml`);
  await writeFile(config, `clusterName: search-e2e\nsinks:\n  - type: stdout\n${sink}`);
  const watch = runKubediff(
    [
      'watch',
      '--kubeconfig',
      suite.kubeconfig,
      '-o',
      'json',
      '-n',
      ns,
      '-r',
      'configmaps',
      '-r',
      'deployments',
      // The churn's Deployments run no pods here: their OUTCOMEs (docs/outcomes.md) are not what these tests count.
      '--no-outcomes',
      '-c',
      config,
      ...args,
    ],
    { checkEvents: true, timeoutMs: 60_000 },
  );
  await watch.waitForStderr(READY, 90_000);
  return watch;
}

function deployment(name: string, replicas: number): Record<string, unknown> {
  return {
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'app', image: 'shop:1.0' }] },
      },
    },
  };
}

/**
 * Changes whose from/to are strings (ConfigMap data, an image), numbers (replicas), objects (labels
 * added, an env entry, a container) and lists; every other ConfigMap deleted. Returns the writes.
 */
async function mixedChurn(ns: string, prefix: string, objects: number): Promise<number> {
  let writes = 0;
  for (let i = 0; i < objects; i++) {
    await suite.admin.create(configmaps(ns), {
      metadata: { name: `${prefix}-cm-${i}` },
      data: { value: 'a' },
    });
    await suite.admin.create(deployments(ns), deployment(`${prefix}-web-${i}`, 1));
    writes += 2;
  }
  for (let i = 0; i < objects; i++) {
    await suite.admin.patch(`${configmaps(ns)}/${prefix}-cm-${i}`, { data: { value: String(i) } });
    await suite.admin.patch(`${configmaps(ns)}/${prefix}-cm-${i}`, {
      metadata: { labels: { tier: 'cache', n: String(i) } },
    });
    await suite.admin.patch(`${deployments(ns)}/${prefix}-web-${i}`, { spec: { replicas: i + 2 } });
    await suite.admin.patch(`${deployments(ns)}/${prefix}-web-${i}`, {
      spec: {
        template: {
          spec: {
            containers: [
              {
                name: 'app',
                image: `shop:1.${i}`,
                env: [{ name: 'MODE', value: 'fast' }],
                args: ['--a', '--b'],
              },
            ],
          },
        },
      },
    });
    writes += 4;
  }
  for (let i = 0; i < objects; i += 2) {
    await suite.admin.delete(`${configmaps(ns)}/${prefix}-cm-${i}`);
    writes++;
  }
  return writes;
}

async function search(
  url: string,
  index: string,
  query: unknown,
  size = 1000,
): Promise<{ _id: string; _source: TestEvent }[]> {
  await fetch(`${url}/${index}/_refresh`, { method: 'POST' });
  const response = await fetch(`${url}/${index}/_search`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ size, query }),
  });
  const answer = (await response.json()) as { hits?: { hits: { _id: string; _source: TestEvent }[] } };
  assert.equal(response.status, 200, JSON.stringify(answer));
  return answer.hits?.hits ?? [];
}

const ids = (hits: { _id: string }[]) => hits.map((hit) => hit._id).sort();

describe('kubediff watch with an OpenSearch sink', () => {
  it('indexes a churn of mixed value types whole, each event once under its id, searchable by namespace, kind, type, manager and path', async () => {
    const { url } = testOpenSearch();
    const ns = await namespace('search-e2e');
    const index = testIndex('mixed');
    const watch = await startWatch(
      ns,
      `  - type: opensearch\n    url: ${url}\n    index: ${index}\n    batch: 7\n`,
    );
    assert.match(watch.stderr, /delivering to .*opensearch http:\/\/127\.0\.0\.1:\d+\//);
    const writes = await mixedChurn(ns, 'mix', 4);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'mix-cm-2' }));
    assert.equal(watch.events.length, writes);
    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.doesNotMatch(stopped.stderr, /not delivered|dead-letter|not retried/);

    const everything = await search(url, `${index}-*`, { term: { cluster: 'search-e2e' } });
    assert.deepEqual(
      ids(everything),
      watch.events.map((event) => event.id).sort(),
      'every event, once, under its id',
    );
    const types = new Set(
      watch.events.flatMap((event) =>
        (event.changes ?? []).flatMap((change) => [typeOf(change.from), typeOf(change.to)]),
      ),
    );
    assert.deepEqual(
      [...types].sort(),
      ['absent', 'array', 'number', 'object', 'string'],
      'the churn mixed every type',
    );
    for (const hit of everything) {
      const { '@timestamp': timestamp, ...event } = hit._source as TestEvent & { '@timestamp': string };
      assert.deepEqual(
        event,
        watch.events.find((e) => e.id === hit._id),
        'the document is the event',
      );
      assert.equal(timestamp, event.time);
    }

    const replicas = await search(url, `${index}-*`, {
      bool: {
        filter: [{ term: { 'object.namespace': ns } }, { term: { 'changes.path': '/spec/replicas' } }],
      },
    });
    assert.deepEqual(
      ids(replicas),
      watch.events
        .filter((e) => e.changes?.some((c) => c.path === '/spec/replicas'))
        .map((e) => e.id)
        .sort(),
    );
    const deletedConfigMaps = await search(url, `${index}-*`, {
      bool: { filter: [{ term: { 'object.kind': 'ConfigMap' } }, { term: { type: 'DELETED' } }] },
    });
    assert.equal(deletedConfigMaps.length, 2);
    const manager = watch.events.find((e) => e.by?.managers?.length)?.by?.managers?.[0]?.manager;
    assert.ok(manager, 'the events name their field managers');
    const byManager = await search(url, `${index}-*`, { term: { 'by.managers.manager': manager } });
    assert.deepEqual(
      ids(byManager),
      watch.events
        .filter((e) => e.by?.managers?.some((m) => m.manager === manager))
        .map((e) => e.id)
        .sort(),
    );
  });

  it('dead-letters the documents the node refuses (a mapping it does not own), said once, and indexes the rest', async () => {
    const { url } = testOpenSearch();
    const ns = await namespace('search-refused');
    const index = testIndex('refused');
    const day = new Date().toISOString().slice(0, 10).replace(/-/g, '.');
    // Today's index exists already, made by someone else, with `changes` as a keyword: an UPDATED (whose
    // changes are objects) cannot go in; ADDED and DELETED (no changes) can.
    const created = await fetch(`${url}/${index}-${day}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ mappings: { properties: { changes: { type: 'keyword' } } } }),
    });
    assert.equal(created.status, 200, await created.text());
    const deadLetter = path.join(suite.dir, 'refused.jsonl');
    const watch = await startWatch(
      ns,
      `  - type: opensearch\n    url: ${url}\n    index: ${index}\n    template: false\n    deadLetter: ${JSON.stringify(deadLetter)}\n`,
    );
    for (const name of ['a', 'b', 'c']) {
      await suite.admin.create(configmaps(ns), { metadata: { name }, data: { k: '1' } });
      await suite.admin.patch(`${configmaps(ns)}/${name}`, { data: { k: '2' } });
    }
    await watch.waitForEvent(matching({ type: 'UPDATED', name: 'c' }));
    await watch.waitForStderr(/opensearch .*HTTP 400 .*not retried/);
    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.equal((stopped.stderr.match(/not retried/g) ?? []).length, 1, 'said once');
    const letters = (await readFile(deadLetter, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { reason: string; event: TestEvent });
    const updated = watch.events.filter((event) => event.type === 'UPDATED');
    assert.deepEqual(letters.map((letter) => letter.event.id).sort(), updated.map((e) => e.id).sort());
    assert.match(
      letters[0]?.reason ?? '',
      /HTTP 400 .*(mapper_parsing_exception|document_parsing_exception)/,
    );
    const indexed = await search(url, `${index}-*`, { match_all: {} });
    assert.deepEqual(
      ids(indexed),
      watch.events
        .filter((e) => e.type === 'ADDED')
        .map((e) => e.id)
        .sort(),
    );
  });

  it('loses nothing and duplicates nothing in a data stream when the node stops during churn and comes back', async () => {
    const node = await startOpenSearch({ label: 'opensearch-sink-restart' });
    nodes.push(node);
    const ns = await namespace('search-restart');
    const stream = testIndex('restart');
    const watch = await startWatch(
      ns,
      `  - type: opensearch\n    url: ${node.url}\n    index: ${stream}\n    mode: data-stream\n    batch: 5\n    timeout: 5s\n`,
      ['--shutdown-timeout', '120s'],
    );
    let writes = await mixedChurn(ns, 'before', 2);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'before-cm-0' }));
    await node.stopServer();
    writes += await mixedChurn(ns, 'during', 3);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'during-cm-2' }));
    await watch.waitForStderr(/opensearch .*retrying in/);
    await node.startServer();
    writes += await mixedChurn(ns, 'after', 2);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'after-cm-0' }));
    assert.equal(watch.events.length, writes);
    const stopped = await watch.stop('SIGTERM', 180_000);
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.doesNotMatch(stopped.stderr, /not delivered|dead-letter|not retried/);
    assert.match(stopped.stderr, /delivering again/);
    const hits = await search(node.url, stream, { match_all: {} });
    assert.deepEqual(ids(hits), watch.events.map((event) => event.id).sort(), 'every event, each once');
  });
});

function typeOf(value: unknown): string {
  if (value === undefined) return 'absent';
  if (Array.isArray(value)) return 'array';
  return value === null ? 'null' : typeof value;
}
