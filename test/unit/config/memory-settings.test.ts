// The memory bounds a watch's settings put in force (src/config/memory-settings.ts, docs/deploy.md
// "Memory"): left to their shares of the heap they add up to at most 25/48 of it, on every heap and with
// every buffer there is; an explicit setting wins over its share, and bounds that add up to more than the
// heap are refused with one sentence.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { checkMemoryFits, memoryInForce } from '../../../src/config/memory-settings.ts';
import { loadWatchSettings } from '../../../src/config/settings.ts';
import { UsageError } from '../../../src/util/errors.ts';

const MiB = 1024 * 1024;
const dir = mkdtempSync(path.join(tmpdir(), 'kubediff-memory-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Every buffer a watch can have: state, admission and audit bodies, a webhook, Slack and Kafka with stories. */
function everything(extra = ''): string {
  const file = path.join(dir, `config-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(
    file,
    [
      'state: { path: /tmp/kubediff-memory-test.db }',
      'admission: { listen: ":9443", certFile: /c.pem, keyFile: /k.pem, allowUnauthenticated: true }',
      'audit: { listen: ":8443", certFile: /c.pem, keyFile: /k.pem, token: t0ken }',
      'sinks:',
      '  - { type: webhook, url: "https://hook.example.invalid/", stories: true }',
      '  - { type: slack, webhookUrl: "https://hooks.example.invalid/x" }',
      '  - { type: kafka, brokers: ["127.0.0.1:9092"], topic: changes }',
      extra,
    ].join('\n'),
  );
  return file;
}

const runtimeOf = (
  settings: Awaited<ReturnType<typeof loadWatchSettings>>,
  env: { backlog?: number; standby?: number } = {},
) => ({
  stateBacklogBytes: env.backlog ?? settings.memory.stateBacklogBytes,
  standbyBufferBytes: env.standby ?? settings.memory.standbyBufferBytes,
  leaderElect: true,
});

describe('the memory bounds in force', () => {
  it('on every heap, every buffer left to its share: at most 25/48 of the heap in all', async () => {
    const config = everything();
    for (const heapMiB of [131, 256, 387, 1024, 4288]) {
      const settings = await loadWatchSettings({ config }, false, {}, { heapBytes: heapMiB * MiB });
      const parts = memoryInForce(settings, runtimeOf(settings));
      assert.deepEqual(
        parts.map((part) => part.setting.replace(/ \(.*/, '')),
        [
          'KUBEDIFF_STATE_MAX_BACKLOG',
          'KUBEDIFF_STANDBY_MAX_BUFFER',
          'admission.maxRequestSize',
          "the who join's waiting changes",
          'audit.maxRequestSize',
          "the sinks' queues",
          'stories.maxOpenSize',
        ],
      );
      const total = parts.reduce((sum, part) => sum + part.bytes, 0);
      assert.ok(total <= (heapMiB * MiB * 25) / 48, `${heapMiB} MiB heap: ${total / MiB} MiB`);
      checkMemoryFits(settings, runtimeOf(settings));
    }
  });

  it('the chart’s heap (387 MiB): each sink its part, smaller bodies', async () => {
    const settings = await loadWatchSettings({ config: everything() }, false, {}, { heapBytes: 387 * MiB });
    assert.equal(settings.admission?.maxRequestBytes, Math.floor(Math.floor((387 * MiB) / 12) / 8));
    const [webhook, slack, kafka] = settings.delivery.sinks;
    const part = (387 * MiB) / 6 / 3;
    assert.equal(webhook?.type === 'webhook' && webhook.queue?.maxBytes, Math.floor(part * 0.75));
    assert.equal(
      webhook?.type === 'webhook' && typeof webhook.stories === 'object' && webhook.stories.maxOpenBytes,
      Math.floor(part * 0.25),
    );
    assert.equal(slack?.type === 'slack' && slack.queueMaxBytes, undefined, 'its own default, 16 MiB');
    assert.equal(kafka?.type === 'kafka' && kafka.queue?.maxBytes, Math.floor(part * 0.75));
  });

  it('an explicit setting wins over its share, and is refused when the bounds then pass the heap', async () => {
    const heapBytes = 387 * MiB;
    const explicit = await loadWatchSettings(
      { config: everything('stories: { maxOpenSize: 64MB }') },
      false,
      {},
      { heapBytes },
    );
    const webhook = explicit.delivery.sinks[0];
    assert.equal(
      webhook?.type === 'webhook' && typeof webhook.stories === 'object' && webhook.stories.maxOpenBytes,
      64 * MiB,
    );
    // 64 MiB of stories for the webhook and for Slack, within the heap: taken.
    checkMemoryFits(explicit, runtimeOf(explicit));
    // A backlog of 256 MiB besides: more than the heap.
    assert.throws(
      () => checkMemoryFits(explicit, runtimeOf(explicit, { backlog: 256 * MiB })),
      (error: unknown) =>
        error instanceof UsageError &&
        error.message ===
          "the memory bounds add up to 537 MiB, more than the 387 MiB heap Node may use (KUBEDIFF_STATE_MAX_BACKLOG 256 MiB, KUBEDIFF_STANDBY_MAX_BUFFER 32 MiB, admission.maxRequestSize (4 MiB × 8) 32 MiB, the who join's waiting changes 8.1 MiB, audit.maxRequestSize (8.1 MiB × 4) 32 MiB, the sinks' queues 48 MiB, stories.maxOpenSize (per sink with stories) 128 MiB): lower the ones you set, or give Node a larger heap (NODE_OPTIONS=--max-old-space-size=<MiB>; the chart's maxOldSpaceSizeMB), docs/deploy.md \"Memory\".",
    );
    // On a larger heap the same settings fit.
    const larger = await loadWatchSettings(
      { config: everything('stories: { maxOpenSize: 64MB }') },
      false,
      {},
      { heapBytes: 2048 * MiB },
    );
    checkMemoryFits(larger, runtimeOf(larger, { backlog: 256 * MiB }));
  });
});
