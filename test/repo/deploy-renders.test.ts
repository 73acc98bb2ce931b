// What GitOps tools and the memory limit rely on in deploy/ and the Helm chart:
// - two renders are byte for byte the same (`helm template` is how Argo CD renders a chart: anything made
//   at render time, a certificate say, would be a new value at every sync), with the default values and
//   with the admission webhook on, and kustomize's admission components likewise;
// - the resources fit the heap: the chart's and deploy/'s memory limit holds the heap Node is given
//   (NODE_OPTIONS, with kubediff's own Node options), the admission thread's heap beside it (the admission
//   webhook on) and what Node holds beside both, the request is at most the limit, and the memory bounds
//   derived from that heap fit in half of it (docs/deploy.md, "Memory").
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import {
  ADMISSION_CONCURRENT_REQUESTS,
  AUDIT_CONCURRENT_REQUESTS,
  admissionThreadBounds,
  BUFFER_SHARE,
  memoryBounds,
  sinkBounds,
} from '../../src/util/memory-budget.ts';
import { deployOverlay, HELM_CHART, helm, kubectl, quantityBytes } from '../helpers/deploy.ts';

const DEPLOY = fileURLToPath(new URL('../../deploy/', import.meta.url));
// The launcher's module is plain JavaScript, without types.
const { WATCH_NODE_OPTIONS } = (await import(new URL('../../bin/node-options.js', import.meta.url).href)) as {
  WATCH_NODE_OPTIONS: string[];
};
const MiB = 1024 * 1024;
/**
 * What a settled watch holds beside V8's heap, at most, on the clusters of BENCHMARKS.md figure 17 (the
 * Node binary's pages, the C heap, buffers outside the heap): measured up to about 60 MiB; this leaves
 * room for the request bodies and HTTP/2 windows that live outside the heap too.
 */
const OUTSIDE_HEAP = 96 * MiB;
/** Where the control plane calls the webhook from: required while reviews are not authenticated. */
const CONTROL_PLANE = { ipBlock: { cidr: '172.16.0.0/28' } };

async function helmTwice(args: string[]): Promise<[string, string]> {
  const render = async () => {
    const result = await helm(['template', 'kd', HELM_CHART, '-n', 'kubediff', ...args]);
    assert.equal(result.code, 0, result.stderr);
    return result.stdout;
  };
  return [await render(), await render()];
}

async function kustomizeTwice(components: string[]): Promise<[string, string]> {
  const overlay = await deployOverlay('kubediff', '', { components, admissionFrom: [CONTROL_PLANE] });
  try {
    const render = async () => {
      const result = await kubectl(['kustomize', overlay.dir]);
      assert.equal(result.code, 0, result.stderr);
      return result.stdout;
    };
    return [await render(), await render()];
  } finally {
    await overlay.remove();
  }
}

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests, read field by field
type Manifest = Record<string, any>;
const documents = (text: string): Manifest[] =>
  parseAllDocuments(text)
    .map((document) => document.toJSON() as Manifest)
    .filter(Boolean);

describe('two renders are the same', () => {
  test('helm template, default values and admission.enabled', async () => {
    const [first, second] = await helmTwice([]);
    assert.equal(first, second);
    const [withAdmission, again] = await helmTwice([
      '--set',
      'admission.enabled=true',
      '--set',
      `admission.from[0].ipBlock.cidr=${CONTROL_PLANE.ipBlock.cidr}`,
    ]);
    assert.equal(withAdmission, again, 'with the admission webhook on');
    // What kubediff writes is in neither: the Secret has no data, the webhook no caBundle.
    const objects = documents(withAdmission);
    const secret = objects.find((object) => object.kind === 'Secret');
    assert.deepEqual(
      { name: secret?.metadata.name, data: secret?.data, type: secret?.type },
      { name: 'kd-kubediff-admission-certificate', data: undefined, type: 'Opaque' },
    );
    const webhook = objects.find((object) => object.kind === 'ValidatingWebhookConfiguration');
    assert.equal(webhook?.webhooks[0].clientConfig.caBundle, undefined);
  });

  test('kustomize, deploy/ with the admission webhook and its managed certificate', async () => {
    const [first, second] = await kustomizeTwice(['admission', 'admission-managed-certificate']);
    assert.equal(first, second);
    const objects = documents(first);
    assert.equal(objects.find((object) => object.kind === 'Secret')?.data, undefined);
    const webhook = objects.find((object) => object.kind === 'ValidatingWebhookConfiguration');
    assert.equal(webhook?.webhooks[0].clientConfig.caBundle, undefined);
  });
});

/** V8's heap limit under `nodeOptions` and kubediff's own Node options, as kubediff would see it. */
function heapLimit(nodeOptions: string): number {
  const output = execFileSync(
    process.execPath,
    [
      ...WATCH_NODE_OPTIONS,
      '-e',
      'process.stdout.write(String(require("v8").getHeapStatistics().heap_size_limit))',
    ],
    { env: { ...process.env, NODE_OPTIONS: nodeOptions } },
  );
  return Number(output.toString());
}

/**
 * The heap limit of the admission thread (src/who/admission/admission-thread.ts) beside a main heap of
 * `heapBytes`, its reviews as large as that heap lets them be by default, as the thread sees it.
 */
function admissionThreadHeap(heapBytes: number): number {
  const { heapMiB } = admissionThreadBounds(memoryBounds(heapBytes).admissionRequestBytes);
  const thread = `const { Worker } = require("node:worker_threads");
    new Worker('require("node:worker_threads").parentPort.postMessage(require("v8").getHeapStatistics().heap_size_limit)',
      { eval: true, resourceLimits: { maxOldGenerationSizeMb: ${heapMiB} } })
      .once("message", (limit) => process.stdout.write(String(limit)));`;
  return Number(execFileSync(process.execPath, [...WATCH_NODE_OPTIONS, '-e', thread]).toString());
}

/** Every bound a watch may have on that heap (state, standby, both webhooks, three sinks) added up. */
function boundsOn(heapBytes: number): number {
  const bounds = memoryBounds(heapBytes);
  const each = sinkBounds(bounds, 3);
  return (
    bounds.stateBacklogBytes +
    bounds.standbyBufferBytes +
    bounds.admissionRequestBytes * ADMISSION_CONCURRENT_REQUESTS +
    bounds.auditRequestBytes * AUDIT_CONCURRENT_REQUESTS +
    3 * (each.queueBytes + each.storyBytes)
  );
}

describe('the resources fit the heap', () => {
  test("the chart's defaults: limit ≥ heap + the admission thread's + what Node holds beside them, request ≤ limit, bounds in half the heap", async () => {
    const values = parse(await readFile(path.join(HELM_CHART, 'values.yaml'), 'utf8')) as Manifest;
    const [rendered] = await helmTwice([]);
    const deployment = documents(rendered).find((object) => object.kind === 'Deployment');
    const container = deployment?.spec.template.spec.containers[0];
    const nodeOptions = container.env.find((entry: { name: string }) => entry.name === 'NODE_OPTIONS')?.value;
    assert.equal(nodeOptions, `--max-old-space-size=${values.maxOldSpaceSizeMB}`);
    check('Helm', container.resources, nodeOptions);
  });

  test("deploy/'s Deployment, the same", async () => {
    const deployment = parse(await readFile(path.join(DEPLOY, 'deployment.yaml'), 'utf8')) as Manifest;
    const container = deployment.spec.template.spec.containers[0];
    const nodeOptions = container.env.find((entry: { name: string }) => entry.name === 'NODE_OPTIONS')?.value;
    check('deploy/', container.resources, nodeOptions);
  });
});

function check(source: string, resources: Manifest, nodeOptions: string): void {
  const heap = heapLimit(nodeOptions);
  const thread = admissionThreadHeap(heap);
  const limit = quantityBytes(resources.limits.memory);
  const request = quantityBytes(resources.requests.memory);
  assert.ok(
    heap + thread + OUTSIDE_HEAP <= limit,
    `${source}: a heap of ${heap / MiB} MiB, the admission thread's ${thread / MiB} MiB and ${OUTSIDE_HEAP / MiB} MiB beside them pass the limit of ${resources.limits.memory}`,
  );
  assert.ok(request <= limit, `${source}: request ${resources.requests.memory} above the limit`);
  assert.ok(boundsOn(heap) <= BUFFER_SHARE * heap, `${source}: the bounds pass half the heap`);
}
