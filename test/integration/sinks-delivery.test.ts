// Slack and webhook delivery end to end: `kubediff watch` against the real API server, posting to local
// receivers on loopback (a "Slack" and a webhook endpoint, test/helpers/http-receiver.ts).
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { verifySignature } from '../../src/sinks/http/webhook/signature.ts';
import { type KubediffProcess, runKubediff } from '../helpers/cli.ts';
import { clusterSuite } from '../helpers/cluster-suite.ts';
import { matching, type TestEvent } from '../helpers/events.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { waitFor } from '../helpers/kube-admin.ts';
import { SERVING } from '../helpers/metrics.ts';
import { nonEmpty } from '../helpers/non-empty.ts';
import {
  blockKitProblems,
  eventsInMessage,
  type SlackPayload,
  visibleText,
} from '../helpers/slack-payload.ts';

const READY = /watching \d+ resource types?/;
const suite = clusterSuite('delivery');
const { namespace } = suite;
const receivers: HttpReceiver[] = [];
suite.closeAfter(() => Promise.all(receivers.map((receiver) => receiver.close())));

async function receiver(...args: Parameters<typeof HttpReceiver.start>): Promise<HttpReceiver> {
  const started = await HttpReceiver.start(...args);
  receivers.push(started);
  return started;
}

/**
 * Watches ConfigMaps labelled `sinks-test` (unless `-l` is given): the kube-root-ca.crt ConfigMap the
 * controller manager adds to every new namespace must not slip into what a receiver is asserted to get.
 */
async function startWatch(args: string[], env: Record<string, string> = {}): Promise<KubediffProcess> {
  const selector = args.includes('-l') ? [] : ['-l', 'sinks-test'];
  const process = runKubediff(
    ['watch', '--kubeconfig', suite.kubeconfig, '-r', 'configmaps', ...selector, ...args],
    {
      checkEvents: true,
      env,
      timeoutMs: 30_000,
    },
  );
  await process.waitForStderr(READY, 90_000);
  return process;
}

const configmaps = (ns: string) => `/api/v1/namespaces/${ns}/configmaps`;
const LABELS = { 'sinks-test': 'yes' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('kubediff watch with Slack and webhooks', () => {
  it('delivers a ConfigMap change to a local Slack and a local webhook, the same events as stdout', async () => {
    const ns = await namespace('sinks-e2e');
    const slack = await receiver();
    const hook = await receiver();
    const watch = await startWatch([
      '-o',
      'json',
      '-n',
      ns,
      // Per-event messages and digests (stories: test/integration/stories.test.ts).
      '--no-slack-stories',
      '--slack-webhook',
      slack.url('/services/T0001/B0001/SLACKSECRET'),
      '--webhook',
      hook.url('/ingest'),
    ]);
    assert.match(
      watch.stderr,
      /delivering to webhook http:\/\/127\.0\.0\.1:\d+\/…, slack http:\/\/127\.0\.0\.1:\d+\/…/,
    );

    await suite.admin.create(configmaps(ns), {
      metadata: { name: 'settings', labels: LABELS },
      data: { color: 'blue' },
    });
    await watch.waitForEvent(matching({ type: 'ADDED', name: 'settings' }));
    await suite.admin.patch(`${configmaps(ns)}/settings`, { data: { color: 'red' } });
    const updated = await watch.waitForEvent(matching({ type: 'UPDATED', name: 'settings' }));

    const bodies = await hook.waitUntil(() => {
      const received = hook.jsonBodies() as TestEvent[];
      return received.some((e) => e.id === updated.id) ? received : undefined;
    });
    assert.deepEqual(
      bodies,
      watch.events.filter((e) => e.object.name === 'settings'),
      'the webhook gets exactly the events of stdout, in order',
    );

    const messages = await slack.waitUntil(() => {
      const received = slack.jsonBodies() as SlackPayload[];
      return received.reduce((sum, m) => sum + eventsInMessage(m), 0) >= 2 ? received : undefined;
    });
    for (const message of messages) assert.deepEqual(blockKitProblems(message), []);
    const shown = messages.map(visibleText).join('\n');
    assert.match(shown, new RegExp(`ConfigMap ${ns}/settings|ConfigMap \`${ns}/settings\``));
    assert.match(shown, /`data\.color`: `"blue"` → `"red"`/);
    assert.match(shown, /cluster \*kubediff-test\*/);

    const stopped = await watch.stop('SIGINT');
    assert.equal(stopped.code, 0);
    assert.ok(!stopped.stderr.includes('SLACKSECRET'), 'the Slack webhook URL is never printed whole');
    assert.ok(!/not delivered/.test(stopped.stderr), stopped.stderr);
  });

  it('delivers a ConfigMap change exactly once, signed, through a 429 with Retry-After: 1 and a 500', async () => {
    const ns = await namespace('sinks-retry');
    const hook = await receiver();
    hook.script({ status: 429, headers: { 'retry-after': '1' } }, { status: 500, body: 'try again' });
    const secret = 'integration-secret';
    const watch = await startWatch(['-o', 'json', '-n', ns, '--webhook', hook.url('/hook')], {
      KUBEDIFF_WEBHOOK_SECRET: secret,
    });
    const created = await suite.admin.create(configmaps(ns), {
      metadata: { name: 'retried', labels: LABELS },
      data: { a: '1' },
    });
    const requests = await hook.waitForRequests(3, 20_000);
    const id = `${created.metadata.uid}:${created.metadata.resourceVersion}`;
    assert.deepEqual(
      requests.map((r) => (JSON.parse(r.body) as TestEvent).id),
      [id, id, id],
    );
    assert.deepEqual(
      requests.map((r) => ('status' in r.reply ? r.reply.status : 0)),
      [429, 500, 200],
    );
    assert.ok(requests[1]!.at - requests[0]!.at >= 950, 'Retry-After: 1 was honoured');
    for (const request of requests) {
      assert.ok(
        verifySignature(secret, request.headers['x-kubediff-signature'] as string, request.body),
        `signature of attempt ${request.headers['x-kubediff-attempt']}`,
      );
    }
    const delivered = JSON.parse(requests[2]!.body) as TestEvent;
    assert.equal(delivered.type, 'ADDED');
    assert.deepEqual(
      delivered,
      watch.events.find((e) => e.id === id),
    );
    // A later change: the queue is in order, so a repeat of the first would come before it.
    const later = await suite.admin.create(configmaps(ns), {
      metadata: { name: 'later', labels: LABELS },
      data: {},
    });
    const all = await hook.waitForRequests(4);
    assert.deepEqual(
      all.map((r) => (JSON.parse(r.body) as TestEvent).id),
      [id, id, id, `${later.metadata.uid}:${later.metadata.resourceVersion}`],
      'delivered once: no request for it after the 200',
    );
    assert.match(watch.stderr, /HTTP 429 Too Many Requests.*Retry-After 1s/);
    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0);
  });

  it('brings 500 changes in 10 seconds to a local Slack as at most ~15 messages that account for all 500', async (t) => {
    const ns = await namespace('sinks-burst');
    const slack = await receiver();
    const watch = await startWatch([
      '-o',
      'none',
      '-n',
      ns,
      '-l',
      'burst=yes',
      // Per-event messages and digests (stories: test/integration/stories.test.ts).
      '--no-slack-stories',
      '--slack-webhook',
      slack.url('/services/T/B/X'),
    ]);
    const started = Date.now();
    // 500 ConfigMaps, 50 a second, 5 requests at a time.
    for (let second = 0; second < 10; second++) {
      const batch = Array.from({ length: 50 }, (_, i) => second * 50 + i);
      for (let i = 0; i < batch.length; i += 5) {
        await Promise.all(
          batch.slice(i, i + 5).map((n) =>
            suite.admin.create(configmaps(ns), {
              metadata: { name: `cm-${n}`, labels: { burst: 'yes' } },
              data: { n: `${n}` },
            }),
          ),
        );
      }
      const due = started + (second + 1) * 1000;
      if (Date.now() < due) await sleep(due - Date.now());
    }
    const created = Date.now() - started;
    await slack.waitUntil(
      () => {
        const received = slack.jsonBodies() as SlackPayload[];
        return received.reduce((sum, m) => sum + eventsInMessage(m), 0) >= 500 ? received : undefined;
      },
      30_000,
      () => `messages for 500 changes (got ${slack.requests.length} messages)`,
    );
    // Stopped, with nothing left to deliver: every message it would send has been received.
    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0);
    const all = slack.jsonBodies() as SlackPayload[];
    const total = all.reduce((sum, m) => sum + eventsInMessage(m), 0);
    t.diagnostic(`${all.length} Slack messages for 500 changes made in ${created} ms`);
    assert.equal(total, 500, all.map((m) => m.text).join('\n'));
    assert.ok(
      all.length <= 15,
      `${all.length} messages for 500 changes in ${created} ms:\n${all.map((m) => m.text).join('\n')}`,
    );
    for (const message of all) assert.deepEqual(blockKitProblems(message), []);
    const gaps = slack.requests.slice(1).map((request, i) => request.at - slack.requests[i]!.at);
    for (const [i, gap] of nonEmpty(gaps, 'gaps between Slack messages').entries())
      assert.ok(gap >= 950, `message ${i + 1} came ${gap} ms after the previous one`);
    assert.ok(
      all.some((m) =>
        /^\[kubediff-test\] \d+ changes in sinks-burst-\w+: \d+ configmaps added$/.test(String(m.text)),
      ),
    );
  });

  it('on SIGTERM, stops within --shutdown-timeout, reports per sink what was not delivered, dead-letters it', async () => {
    const ns = await namespace('sinks-stop');
    const hook = await receiver({ defaultReply: { hang: true } });
    const slack = await receiver();
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-dead-'));
    const deadLetters = path.join(dir, 'dead.jsonl');
    const watch = await startWatch([
      '-o',
      'json',
      '-n',
      ns,
      '--webhook',
      hook.url('/hook'),
      // Per-event messages and digests (stories: test/integration/stories.test.ts).
      '--no-slack-stories',
      '--slack-webhook',
      slack.url('/services/T/B/X'),
      '--dead-letter',
      deadLetters,
      '--shutdown-timeout',
      '1s',
    ]);
    await suite.admin.create(configmaps(ns), { metadata: { name: 'one', labels: LABELS }, data: { a: '1' } });
    await suite.admin.create(configmaps(ns), { metadata: { name: 'two', labels: LABELS }, data: { a: '1' } });
    await watch.waitForEvent(matching({ type: 'ADDED', name: 'two' }));
    await hook.waitForRequests(1);
    await slack.waitUntil(() =>
      (slack.jsonBodies() as SlackPayload[]).reduce((sum, m) => sum + eventsInMessage(m), 0) >= 2
        ? true
        : undefined,
    );
    // Within --shutdown-timeout 1s: the hanging webhook's events are reported as not delivered (the
    // 10 s of stop()'s own patience would see them delivered or the process killed).
    const stopped = await watch.stop('SIGTERM', 10_000);
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.match(
      stopped.stderr,
      new RegExp(
        `webhook http://127\\.0\\.0\\.1:${hook.port}/…: 2 events not delivered \\(2 events written to the dead-letter file ${deadLetters.replaceAll('/', '\\/')}\\)`,
      ),
    );
    assert.doesNotMatch(stopped.stderr, /slack .*not delivered/);
    const records = (await readFile(deadLetters, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event: TestEvent; reason: string });
    assert.deepEqual(
      records.map((r) => r.event.object.name),
      ['one', 'two'],
    );
    assert.deepEqual(
      records.map((r) => r.event),
      watch.events.filter((e) => e.type === 'ADDED'),
    );
  });
  it('caps the dead-letter file: rotated at --dead-letter-max-size, the oldest deleted beyond --dead-letter-max-files, logged once, counted', async () => {
    const ns = await namespace('sinks-cap');
    // Refused (400 is not retried): every event goes straight to the dead-letter file.
    const hook = await receiver({ defaultReply: { status: 400, body: 'no' } });
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-dead-cap-'));
    const deadLetters = path.join(dir, 'dead.jsonl');
    const watch = await startWatch([
      '-o',
      'json',
      '-n',
      ns,
      '--webhook',
      hook.url('/hook'),
      '--dead-letter',
      deadLetters,
      '--dead-letter-max-size',
      '2k',
      '--dead-letter-max-files',
      '2',
      '--listen',
      '127.0.0.1:0',
    ]);
    const [, base] = await watch.waitForStderr(SERVING);
    const names = Array.from({ length: 24 }, (_, index) => `cm-${String(index).padStart(2, '0')}`);
    for (const name of names) {
      await suite.admin.create(configmaps(ns), { metadata: { name, labels: LABELS }, data: { a: '1' } });
    }
    const sink = `webhook http://127.0.0.1:${hook.port}/…`;
    const scrape = async () => {
      const metrics = new Map<string, number>();
      for (const line of (await (await fetch(`${base}/metrics`)).text()).split('\n')) {
        if (line && !line.startsWith('#'))
          metrics.set(line.slice(0, line.lastIndexOf(' ')), Number(line.slice(line.lastIndexOf(' ') + 1)));
      }
      return metrics;
    };
    const metrics = await waitFor(
      async () => {
        const scraped = await scrape();
        return scraped.get(`kubediff_sink_events_total{sink="${sink}",outcome="dead_lettered"}`) ===
          names.length
          ? scraped
          : undefined;
      },
      { timeoutMs: 30_000, what: `${names.length} events dead-lettered` },
    );

    // Two files at most, each within the size; all owner-only.
    const files = (await readdir(dir)).sort();
    assert.deepEqual(files, ['dead.jsonl', 'dead.jsonl.1']);
    let bytes = 0;
    for (const file of files) {
      const info = await stat(path.join(dir, file));
      assert.ok(info.size <= 2048, `${file}: ${info.size} bytes`);
      assert.equal((info.mode & 0o777).toString(8), '600', file);
      bytes += info.size;
    }
    // The newest are kept, in order; what was deleted is counted, so nothing is lost without a trace.
    const kept = (
      await Promise.all(['dead.jsonl.1', 'dead.jsonl'].map((file) => readFile(path.join(dir, file), 'utf8')))
    )
      .join('')
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { event: TestEvent }).event.object.name);
    assert.ok(kept.length > 0 && kept.length < names.length, kept.join(', '));
    assert.deepEqual(kept, names.slice(names.length - kept.length));
    const file = `file="${deadLetters}"`;
    assert.equal(metrics.get(`kubediff_dead_letter_dropped_total{${file}}`), names.length - kept.length);
    assert.equal(metrics.get(`kubediff_dead_letter_bytes{${file}}`), bytes);
    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);
    const warnings = stopped.stderr.split('\n').filter((line) => line.includes('is at its cap'));
    assert.equal(warnings.length, 1, stopped.stderr);
    assert.match(
      warnings[0] ?? '',
      /the dead-letter file .*dead\.jsonl is at its cap \(2 files of 2 KiB\): deleted .*dead\.jsonl\.1 and the \d+ dead letters? in it/,
    );
  });
});
