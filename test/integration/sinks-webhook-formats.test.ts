// A webhook's body formats end to end: `kubediff watch` against the real API server posting to loopback
// receivers. CloudEvents in the structured mode (one event, and a batch) and the binary mode, each request
// read back by the official CloudEvents SDK (which refuses anything that is not a valid CloudEvent) with
// the attributes docs/sinks.md promises; and `layout:` bodies for two real APIs, PagerDuty Events v2 and
// Telegram's sendMessage, against receivers that check those APIs' shapes and answer as they do (an
// invalid body is refused there, and would show here as a dead letter); and a layout that would run for
// hours on one object's name, stopped in its own thread while the other sinks deliver.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type CloudEventV1, HTTP } from 'cloudevents';
import { type KubediffProcess, killAll, runKubediff } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { matching, type TestEvent } from '../helpers/events.ts';
import { HttpReceiver, type ReceivedRequest, type Reply } from '../helpers/http-receiver.ts';
import { adminClient, type KubeAdmin } from '../helpers/kube-admin.ts';

const READY = /watching \d+ resource types?/;
const LAYOUTS = path.join(import.meta.dirname, '..', 'fixtures', 'layouts');
let admin: KubeAdmin;
let kubeconfig: string;
let dir: string;
const namespaces: string[] = [];
const receivers: HttpReceiver[] = [];

before(async () => {
  admin = adminClient();
  kubeconfig = testCluster().kubeconfigPath;
  dir = await mkdtemp(path.join(tmpdir(), 'kubediff-webhook-formats-'));
});

after(async () => {
  await killAll();
  for (const receiver of receivers) await receiver.close();
  await Promise.all(namespaces.map((ns) => admin.deleteNamespace(ns)));
  await admin.close();
});

async function receiver(
  respond?: (request: Omit<ReceivedRequest, 'reply'>) => Reply | undefined,
): Promise<HttpReceiver> {
  const started = await HttpReceiver.start(respond ? { respond } : {});
  receivers.push(started);
  return started;
}

const configmaps = (ns: string) => `/api/v1/namespaces/${ns}/configmaps`;

async function watchWith(
  ns: string,
  sinks: string,
  env: Record<string, string> = {},
): Promise<KubediffProcess> {
  const config = path.join(dir, `${ns}.yaml`);
  await writeFile(config, `clusterName: prod-eu\nsinks:\n  - type: stdout\n${sinks}`);
  const watch = runKubediff(
    ['watch', '--kubeconfig', kubeconfig, '-o', 'json', '-n', ns, '-r', 'configmaps', '-c', config],
    { checkEvents: true, env, timeoutMs: 60_000 },
  );
  await watch.waitForStderr(READY, 90_000);
  return watch;
}

/** ADDED, UPDATED and DELETED of two ConfigMaps; resolves once the last is on stdout. */
async function changes(ns: string, watch: KubediffProcess): Promise<TestEvent[]> {
  for (const name of ['one', 'two']) {
    await admin.create(configmaps(ns), { metadata: { name }, data: { size: '1' } });
    await admin.patch(`${configmaps(ns)}/${name}`, { data: { size: '2', color: 'blue' } });
  }
  await admin.delete(`${configmaps(ns)}/one`);
  await watch.waitForEvent(matching({ type: 'DELETED', name: 'one' }));
  return [...watch.events];
}

function expectedCloudEvent(event: TestEvent, ns: string): Record<string, unknown> {
  return {
    specversion: '1.0',
    id: event.id,
    type: `dev.kubediff.object.${event.type.toLowerCase()}`,
    source: 'kubediff/prod-eu',
    subject: `/api/v1/namespaces/${ns}/configmaps/${event.object.name}`,
    time: event.time,
    datacontenttype: 'application/json',
    data: JSON.parse(JSON.stringify(event)),
  };
}

function attributes(event: CloudEventV1<unknown>): Record<string, unknown> {
  const { specversion, id, type, source, subject, time, datacontenttype, data } = event;
  return { specversion, id, type, source, subject, time, datacontenttype, data };
}

describe('webhook body formats', () => {
  it('format: cloudevents, structured, binary and batched, each request a valid CloudEvent for the official SDK', async () => {
    const ns = await admin.createNamespace('cloudevents');
    namespaces.push(ns);
    const structured = await receiver();
    const binary = await receiver();
    const batched = await receiver();
    const watch = await watchWith(
      ns,
      `  - type: webhook\n    url: ${structured.url('/structured')}\n    format: cloudevents\n` +
        `  - type: webhook\n    url: ${binary.url('/binary')}\n    format: cloudevents\n    cloudEventsMode: binary\n` +
        `  - type: webhook\n    url: ${batched.url('/batch')}\n    format: cloudevents\n    batch: 10\n    batchWait: 1h\n`,
    );
    const events = await changes(ns, watch);
    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);
    const expected = events.map((event) => expectedCloudEvent(event, ns));

    const toEvents = (requests: readonly ReceivedRequest[]) =>
      requests.flatMap((request) => {
        const parsed = HTTP.toEvent({ headers: request.headers, body: request.body });
        return (Array.isArray(parsed) ? parsed : [parsed]) as CloudEventV1<unknown>[];
      });
    await structured.waitForRequests(events.length);
    assert.ok(structured.requests.every((r) => r.headers['content-type'] === 'application/cloudevents+json'));
    assert.deepEqual(toEvents(structured.requests).map(attributes), expected);

    await binary.waitForRequests(events.length);
    assert.ok(
      binary.requests.every((r) => r.headers['content-type'] === 'application/json' && r.headers['ce-id']),
    );
    assert.deepEqual(toEvents(binary.requests).map(attributes), expected);
    assert.deepEqual(
      binary.requests.map((r) => JSON.parse(r.body) as unknown),
      events.map((event) => JSON.parse(JSON.stringify(event)) as unknown),
      'the binary mode’s body is the event’s JSON',
    );

    // A partial batch waits an hour: the 5 events leave together, in the one request of the flush at SIGTERM.
    assert.equal(batched.requests.length, 1, 'batched');
    assert.ok(
      batched.requests.every((r) => r.headers['content-type'] === 'application/cloudevents-batch+json'),
    );
    assert.deepEqual(toEvents(batched.requests).map(attributes), expected);
  });

  it('layout: PagerDuty Events v2 and Telegram sendMessage bodies, accepted by receivers that check their shapes', async () => {
    const ns = await admin.createNamespace('layouts');
    namespaces.push(ns);
    const routingKey = 'R0UT1NGKEY0123456789abcdefABCDEF';
    const token = '123456:ABC-secret-token';
    const pagerduty = await receiver(checkPagerDuty(routingKey));
    const telegram = await receiver(checkTelegram(token));
    const indent = (text: string) => text.trimEnd().replace(/^/gm, '      ');
    const pagerdutyLayout = await readFile(path.join(LAYOUTS, 'pagerduty.jsonata'), 'utf8');
    const telegramLayout = await readFile(path.join(LAYOUTS, 'telegram.jsonata'), 'utf8');
    const watch = await watchWith(
      ns,
      `  - type: webhook\n    name: pagerduty\n    url: ${pagerduty.url('/v2/enqueue')}\n    layout: |\n${indent(pagerdutyLayout)}\n` +
        `  - type: webhook\n    name: telegram\n    url: ${telegram.url(`/bot\${TELEGRAM_BOT_TOKEN}/sendMessage`)}\n    layout: |\n${indent(telegramLayout)}\n`,
      { PAGERDUTY_ROUTING_KEY: routingKey, TELEGRAM_BOT_TOKEN: token, TELEGRAM_CHAT_ID: '-1001234567890' },
    );
    const events = await changes(ns, watch);
    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.doesNotMatch(stopped.stderr, /not retried|not delivered|dead-letter|layout/);
    assert.ok(
      !stopped.stderr.includes(token) && !stopped.stderr.includes(routingKey),
      'no credential in the log',
    );

    await pagerduty.waitForRequests(events.length);
    assert.deepEqual(
      pagerduty.requests.map((r) => r.reply),
      events.map(() => ({ status: 202, headers: { 'content-type': 'application/json' }, body: expect202 })),
      'every PagerDuty event accepted',
    );
    const alerts = pagerduty.requests.map(
      (r) => JSON.parse(r.body) as { dedup_key: string; payload: Record<string, unknown> },
    );
    assert.deepEqual(
      alerts.map((alert) => [
        alert.dedup_key,
        alert.payload.summary,
        alert.payload.severity,
        alert.payload.source,
      ]),
      events.map((event) => [
        event.id,
        `${event.type} ConfigMap ${ns}/${event.object.name}${event.changes ? `: ${event.changes.map((c) => c.path).join(', ')}` : ''}`,
        event.type === 'DELETED' ? 'warning' : 'info',
        'prod-eu',
      ]),
    );

    await telegram.waitForRequests(events.length);
    assert.ok(
      telegram.requests.every((r) => 'status' in r.reply && r.reply.status === 200),
      'every Telegram message accepted',
    );
    const messages = telegram.requests.map((r) => JSON.parse(r.body) as { chat_id: string; text: string });
    assert.ok(messages.every((m) => m.chat_id === '-1001234567890'));
    const updated = events.findIndex((event) => event.type === 'UPDATED');
    assert.equal(
      messages[updated]?.text,
      `UPDATED configmaps ${ns}/one in prod-eu\nadd /data/color → blue\nreplace /data/size: 1 → 2`,
    );
  });

  it('layout: one that would run for hours on an event is stopped at its time limit, that event dead-lettered, while another sink delivers', async () => {
    const ns = await admin.createNamespace('runaway');
    namespaces.push(ns);
    const laidOut = await receiver();
    const other = await receiver();
    const deadLetters = path.join(dir, `${ns}-dead.jsonl`);
    // (a+)+$ on 40 a's and a b backtracks through 2^40 ways, inside one JSONata step.
    const runaway = `${'a'.repeat(40)}b`;
    const watch = await watchWith(
      ns,
      `  - type: webhook\n    name: laid-out\n    url: ${laidOut.url('/laid-out')}\n    deadLetter: ${deadLetters}\n` +
        `    layout: '{ "name": object.name, "match": $match(object.name, /^(a+)+$/) }'\n` +
        `  - type: webhook\n    name: other\n    url: ${other.url('/other')}\n`,
    );
    await admin.create(configmaps(ns), { metadata: { name: runaway } });
    await admin.create(configmaps(ns), { metadata: { name: 'sentinel' } });
    // The other sink delivers both; the laid-out one the sentinel, from a new thread.
    const names = (requests: readonly ReceivedRequest[]) =>
      requests.map((r) => JSON.parse(r.body) as { object?: { name: string }; name?: string });
    await other.waitForRequests(2);
    assert.deepEqual(
      names(other.requests).map((body) => body.object?.name),
      [runaway, 'sentinel'],
    );
    await laidOut.waitForRequests(1);
    assert.deepEqual(names(laidOut.requests), [{ name: 'sentinel' }]);
    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);
    const letters = (await readFile(deadLetters, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { sink: string; reason: string; event: TestEvent });
    assert.deepEqual(
      letters.map((letter) => [letter.sink, letter.event.object.name, letter.reason]),
      [['laid-out', runaway, 'the layout ran over its time limit (500ms) and was stopped']],
    );
    assert.equal(
      stopped.stderr.match(
        /laid-out: the layout ran over its time limit \(500ms\) and was stopped; not sent\./g,
      )?.length,
      1,
      stopped.stderr,
    );
  });
});

const expect202 = JSON.stringify({ status: 'success', message: 'Event processed' });

/** PagerDuty's Events API v2 (POST /v2/enqueue): 202 for a valid event, 400 with its errors otherwise. */
function checkPagerDuty(routingKey: string) {
  return (request: Omit<ReceivedRequest, 'reply'>): Reply => {
    const errors: string[] = [];
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(request.body) as Record<string, unknown>;
    } catch {
      errors.push('body is not JSON');
    }
    const payload = (body.payload ?? {}) as Record<string, unknown>;
    if (request.path !== '/v2/enqueue') errors.push(`path ${request.path}`);
    if (!String(request.headers['content-type']).startsWith('application/json')) errors.push('content-type');
    if (body.routing_key !== routingKey) errors.push('routing_key');
    if (!['trigger', 'acknowledge', 'resolve'].includes(String(body.event_action)))
      errors.push('event_action');
    if (body.dedup_key !== undefined && (typeof body.dedup_key !== 'string' || body.dedup_key.length > 255))
      errors.push('dedup_key');
    if (typeof payload.summary !== 'string' || payload.summary.length === 0 || payload.summary.length > 1024)
      errors.push('payload.summary');
    if (typeof payload.source !== 'string' || payload.source.length === 0) errors.push('payload.source');
    if (!['critical', 'error', 'warning', 'info'].includes(String(payload.severity)))
      errors.push('payload.severity');
    if (payload.timestamp !== undefined && Number.isNaN(Date.parse(String(payload.timestamp))))
      errors.push('payload.timestamp');
    const known = new Set([
      'routing_key',
      'event_action',
      'dedup_key',
      'payload',
      'images',
      'links',
      'client',
      'client_url',
    ]);
    for (const key of Object.keys(body)) if (!known.has(key)) errors.push(`unknown ${key}`);
    if (errors.length > 0)
      return {
        status: 400,
        body: JSON.stringify({ status: 'invalid event', message: 'Event object is invalid', errors }),
      };
    return { status: 202, headers: { 'content-type': 'application/json' }, body: expect202 };
  };
}

/** Telegram's Bot API sendMessage: {ok: true, result} for a valid message, 400 and a description otherwise. */
function checkTelegram(token: string) {
  return (request: Omit<ReceivedRequest, 'reply'>): Reply => {
    const fail = (description: string): Reply => ({
      status: 400,
      body: JSON.stringify({ ok: false, error_code: 400, description: `Bad Request: ${description}` }),
    });
    if (request.path !== `/bot${token}/sendMessage`)
      return { status: 404, body: '{"ok":false,"error_code":404}' };
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(request.body) as Record<string, unknown>;
    } catch {
      return fail("can't parse JSON");
    }
    if (typeof body.chat_id !== 'string' && typeof body.chat_id !== 'number') return fail('chat_id is empty');
    if (typeof body.text !== 'string' || body.text.trim() === '') return fail('message text is empty');
    if ([...body.text].length > 4096) return fail('message is too long');
    if (
      body.parse_mode !== undefined &&
      !['MarkdownV2', 'HTML', 'Markdown'].includes(String(body.parse_mode))
    )
      return fail('unsupported parse_mode');
    return {
      status: 200,
      body: JSON.stringify({
        ok: true,
        result: { message_id: 1, chat: { id: body.chat_id }, text: body.text },
      }),
    };
  };
}
