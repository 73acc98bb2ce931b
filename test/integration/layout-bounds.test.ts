// A webhook layout cannot take the pod's memory (issue 36): `kubediff watch` with the heap flag deploy/
// sets (NODE_OPTIONS=--max-old-space-size=384), one webhook per shape of layout that builds too much on
// one event (a $pad of 350 million characters, a range of 100 million items, a text doubled 40 times,
// $string of an array holding a 1 MB text 5 times, a result whose JSON would be 9 MB, calls that each
// make 4 Mi characters), all at once (their threads started first, on an event of another name, so that
// starting six threads on two cores does not eat the evaluations' 500 ms). Each sink dead-letters that event with a reason naming the bound
// it hit and delivers the next event; the process keeps running, and its peak resident memory (VmHWM,
// read from /proc after the run: a figure the kernel keeps, not a clock) stays under the 512 Mi that
// deploy/ and the chart give the pod.
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
import { adminClient, type KubeAdmin } from '../helpers/kube-admin.ts';

const READY = /watching \d+ resource types?/;
/** deploy/deployment.yaml and the chart's values.yaml: resources.limits.memory. */
const POD_LIMIT_BYTES = 512 * 1024 * 1024;

/** Each shape, applied to the ConfigMap named `bomb`; any other event gets `{ "name": … }`. */
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
  it('is dead-lettered with the bound it hit; the process keeps running under 512 Mi and delivers the next events', async () => {
    const ns = await admin.createNamespace('layout-bounds');
    const deadLetters = path.join(dir, 'dead.jsonl');
    const config = path.join(dir, 'kubediff.json');
    await writeFile(
      config,
      JSON.stringify({
        deadLetter: deadLetters,
        sinks: SHAPES.map((shape) => ({
          type: 'webhook',
          name: shape.name,
          url: receiver.url(`/${shape.name}`),
          layout: `object.name = "bomb" ? { "value": ${shape.layout} } : { "name": object.name }`,
        })),
      }),
    );
    const watch = runKubediff(
      ['watch', '--kubeconfig', testCluster().kubeconfigPath, '-n', ns, '-r', 'configmaps', '-c', config],
      { env: { NODE_OPTIONS: '--max-old-space-size=384' }, timeoutMs: 60_000 },
    );
    await watch.waitForStderr(READY, 90_000);
    const configmaps = `/api/v1/namespaces/${ns}/configmaps`;
    const delivered = (name: string) =>
      SHAPES.map((shape) => [`/${shape.name}`, `{"name":"${name}"}`]).sort();
    await admin.create(configmaps, { metadata: { name: 'warm' } });
    const warm = await receiver.waitForRequests(SHAPES.length, 60_000);
    assert.deepEqual(warm.map((request) => [request.path, request.body]).sort(), delivered('warm'));
    await admin.create(configmaps, { metadata: { name: 'bomb' } });
    await admin.create(configmaps, { metadata: { name: 'after' } });
    // Every sink delivers the event after the bomb: the process and each sink go on.
    const requests = await receiver.waitForRequests(2 * SHAPES.length, 60_000);
    assert.deepEqual(
      requests
        .slice(SHAPES.length)
        .map((request) => [request.path, request.body])
        .sort(),
      delivered('after'),
    );
    // Read while it runs: the launcher becomes the Node process in place, so this pid is kubediff's.
    const status = readFileSync(`/proc/${watch.pid}/status`, 'utf8');
    const peakBytes = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1]) * 1024;
    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);

    const letters = (await readFile(deadLetters, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { sink: string; reason: string; event: TestEvent });
    assert.deepEqual(letters.map((letter) => letter.sink).sort(), SHAPES.map((shape) => shape.name).sort());
    for (const shape of SHAPES) {
      const letter = letters.find((candidate) => candidate.sink === shape.name);
      assert.equal(letter?.event.object.name, 'bomb');
      assert.match(letter?.reason ?? '', shape.reason, shape.name);
    }
    console.log(
      `peak resident memory with ${SHAPES.length} layouts at once: ${(peakBytes / 2 ** 20).toFixed(1)} MiB`,
    );
    assert.ok(peakBytes > 0, status);
    assert.ok(
      peakBytes < POD_LIMIT_BYTES,
      `peak resident memory ${(peakBytes / 2 ** 20).toFixed(1)} MiB, over the pod's 512 Mi`,
    );
    await admin.deleteNamespace(ns);
  });
});
