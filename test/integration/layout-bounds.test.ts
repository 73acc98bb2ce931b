// A webhook layout cannot take the pod's memory (issue 36): `kubediff watch` with the heap flag deploy/
// sets (NODE_OPTIONS=--max-old-space-size=384), one webhook per shape of layout that builds too much on
// one event (a $pad of 350 million characters, a range of 100 million items, a text doubled 40 times,
// $string of an array holding a 1 MB text 5 times, a result whose JSON would be 9 MB, calls that each
// make 4 Mi characters), all at once, beside a webhook without a layout (their threads started first, on
// an event of another name, so that starting six threads on two cores does not eat the evaluations'
// 500 ms). Two such events, then a harmless one: each layout's sink dead-letters both with a reason
// naming the bound it hit, counts them (kubediff_sink_events_total{outcome="dead_lettered"}), says so in
// one warning (the second goes to --debug), and delivers the next event; the webhook without a layout
// delivers all four; the process keeps running, and its peak resident memory (VmHWM, read from /proc: a
// figure the kernel keeps, not a clock) stays under 512 Mi: below the 576Mi limit that deploy/ and the chart
// give the pod, which also makes room for the admission thread's heap (68 MiB, docs/deploy.md "Memory")
// that this run, without --admission-listen, does not have.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { killAll, runKubediff } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import type { TestEvent } from '../helpers/events.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { adminClient, type KubeAdmin, waitFor } from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';

const READY = /watching \d+ resource types?/;
/**
 * The bound on the run's peak resident memory: under the pod's limit (resources.limits.memory, 576Mi in
 * deploy/deployment.yaml and the chart's values.yaml), which also holds the admission thread's heap.
 */
const MEMORY_BOUND_BYTES = 512 * 1024 * 1024;

/** Each shape, applied to the ConfigMaps whose name holds `bomb`; any other event gets `{ "name": … }`. */
const SHAPES: { name: string; layout: string; reason: RegExp }[] = [
  {
    name: 'pad',
    layout: '$pad("", 350000000, "x")',
    reason: /^the layout made a text of 350,000,000 characters or more, over its limit of 4 Mi characters$/,
  },
  {
    name: 'range',
    layout: '[1..100000000]',
    reason:
      /^the layout failed: D2014 The size of the sequence allocated by the range operator \(\.\.\) must not exceed 1e7\./,
  },
  {
    name: 'doubling',
    layout: '($f := function($n, $s) { $n = 0 ? $s : $f($n - 1, $s & $s) }; $f(40, "x"))',
    reason: /^the layout made a text of [\d,]+ characters or more, over its limit of 4 Mi characters$/,
  },
  {
    name: 'string',
    layout: '($b := $pad("", 1000000, "x"); $string([1..5].($b)))',
    reason: /^the layout made a text of [\d,]+ characters or more, over its limit of 4 Mi characters$/,
  },
  {
    name: 'body',
    layout: '($b := $pad("", 1000000, "x"); { "copies": [1..9].($b) })',
    reason: /^the layout's result is [\d,]+ characters of JSON or more, over its limit of 8 MiB$/,
  },
  {
    name: 'made',
    layout: '($b := $pad("", 4000000, "x"); [1..100].$substring($b, $))',
    reason:
      /^the layout's function calls made [\d,]+ characters and array items or more in one evaluation, over its limit of 64 Mi$/,
  },
];
const BOMBS = ['bomb-1', 'bomb-2'];
/** A webhook without a layout, beside them: it gets every event, the bombs included. */
const PLAIN = 'plain';

let admin: KubeAdmin;
let dir: string;
let receiver: HttpReceiver;

before(async () => {
  admin = adminClient();
  dir = await mkdtemp(path.join(tmpdir(), 'kubediff-layout-bounds-'));
  receiver = await HttpReceiver.start();
});

after(async () => {
  await killAll();
  await receiver.close();
  await admin.close();
  await rm(dir, { recursive: true, force: true });
});

describe('a layout that builds too much (NODE_OPTIONS=--max-old-space-size=384)', () => {
  it('is dead-lettered with the bound it hit, counted and said once; the other sinks and the next events go on, under 512 Mi', async () => {
    const ns = await admin.createNamespace('layout-bounds');
    const deadLetters = path.join(dir, 'dead.jsonl');
    const config = path.join(dir, 'kubediff.json');
    await writeFile(
      config,
      JSON.stringify({
        deadLetter: deadLetters,
        sinks: [
          ...SHAPES.map((shape) => ({
            type: 'webhook',
            name: shape.name,
            url: receiver.url(`/${shape.name}`),
            layout: `$contains(object.name, "bomb") ? { "value": ${shape.layout} } : { "name": object.name }`,
          })),
          { type: 'webhook', name: PLAIN, url: receiver.url(`/${PLAIN}`) },
        ],
      }),
    );
    const watch = runKubediff(
      [
        'watch',
        '--kubeconfig',
        testCluster().kubeconfigPath,
        '-n',
        ns,
        '-r',
        'configmaps',
        '-c',
        config,
        '--listen',
        '127.0.0.1:0',
        '--log-format',
        'json',
      ],
      { env: { NODE_OPTIONS: '--max-old-space-size=384' }, timeoutMs: 60_000 },
    );
    const [, base] = await watch.waitForStderr(SERVING, 90_000);
    await watch.waitForStderr(READY, 90_000);
    const configmaps = `/api/v1/namespaces/${ns}/configmaps`;
    const sinks = SHAPES.length + 1;
    await admin.create(configmaps, { metadata: { name: 'warm' } });
    await receiver.waitForRequests(sinks, 60_000);
    for (const name of [...BOMBS, 'after']) await admin.create(configmaps, { metadata: { name } });
    // Every layout's sink delivers the event after the bombs, the plain webhook all four: the process
    // and each sink go on.
    const requests = await receiver.waitForRequests(2 * SHAPES.length + 4, 60_000);
    const received = (sink: string) =>
      requests.filter((request) => request.path === `/${sink}`).map((request) => request.body);
    for (const shape of SHAPES) {
      assert.deepEqual(received(shape.name), ['{"name":"warm"}', '{"name":"after"}'], shape.name);
    }
    assert.deepEqual(
      received(PLAIN).map((body) => (JSON.parse(body) as TestEvent).object.name),
      ['warm', ...BOMBS, 'after'],
    );
    // Read while it runs: the launcher becomes the Node process in place, so this pid is kubediff's.
    const status = readFileSync(`/proc/${watch.pid}/status`, 'utf8');
    const peakBytes = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1]) * 1024;

    // Counted: the layout's two events dead-lettered, the others delivered (a delivery is counted once
    // its answer is read, just after the receiver records it: awaited).
    const count = (metrics: Map<string, number>, sink: string, outcome: string) =>
      metrics.get(`kubediff_sink_events_total{sink="${sink}",outcome="${outcome}"}`) ?? 0;
    const metrics = await waitFor(
      async () => {
        const scraped = await scrapeMetrics(base as string);
        const done =
          count(scraped, PLAIN, 'delivered') === 4 &&
          SHAPES.every((shape) => count(scraped, shape.name, 'delivered') === 2);
        return done ? scraped : undefined;
      },
      { timeoutMs: 30_000, what: 'every delivery counted' },
    );
    for (const shape of SHAPES) {
      assert.deepEqual(
        ['dead_lettered', 'delivered', 'lost'].map((outcome) => count(metrics, shape.name, outcome)),
        [BOMBS.length, 2, 0],
        shape.name,
      );
    }
    assert.deepEqual(
      ['dead_lettered', 'delivered', 'lost'].map((outcome) => count(metrics, PLAIN, outcome)),
      [0, 4, 0],
    );

    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);

    // Said once per sink: the first bomb's warning names the bound; the second goes to --debug only (the
    // summary at the stop counts both).
    const warnings = stopped.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: string; msg: string })
      .filter((line) => line.level === 'warn' && line.msg.includes('; not sent.'));
    for (const shape of SHAPES) {
      const said = warnings.filter((line) => line.msg.startsWith(`${shape.name}: `));
      assert.equal(said.length, 1, `${shape.name}: ${JSON.stringify(said)}`);
      const [reason] = (said[0]?.msg ?? '').slice(shape.name.length + 2).split('; not sent.');
      assert.match(reason ?? '', shape.reason, shape.name);
    }
    assert.deepEqual(
      warnings.filter((line) => line.msg.startsWith(`${PLAIN}: `)),
      [],
    );

    const letters = (await readFile(deadLetters, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { sink: string; reason: string; event: TestEvent });
    assert.equal(letters.length, SHAPES.length * BOMBS.length);
    for (const shape of SHAPES) {
      const own = letters.filter((letter) => letter.sink === shape.name);
      assert.deepEqual(
        own.map((letter) => letter.event.object.name),
        BOMBS,
        shape.name,
      );
      for (const letter of own) assert.match(letter.reason, shape.reason, shape.name);
    }
    console.log(
      `peak resident memory with ${SHAPES.length} layouts at once: ${(peakBytes / 2 ** 20).toFixed(1)} MiB`,
    );
    assert.ok(peakBytes > 0, status);
    assert.ok(
      peakBytes < MEMORY_BOUND_BYTES,
      `peak resident memory ${(peakBytes / 2 ** 20).toFixed(1)} MiB, over 512 Mi`,
    );
    await admin.deleteNamespace(ns);
  });
});
