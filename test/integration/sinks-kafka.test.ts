// The Kafka sink end to end: `kubediff watch` against the real API server producing to a real Kafka
// broker (test/helpers/kafka.ts), read back with Kafka's own console consumer. Records are the events of
// stdout, once each, keyed by uid (one object in one partition, in order), with their headers; a broker
// stopped in the middle of churn and started again loses nothing and reorders nothing per object; TLS,
// SASL PLAIN and SCRAM work, with credentials that never show, from the config file and from the flags
// (--kafka-tls, --kafka-ca-file); credentials over plaintext are refused (exit 2) unless explicitly
// allowed (--kafka-allow-plaintext-credentials, allowPlaintextCredentials). And the sink alone: a batch
// the broker refuses as too large (MESSAGE_TOO_LARGE) is sent again in halves.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DeadLetterFile } from '../../src/sinks/core/dead-letter.ts';
import { KafkaSink } from '../../src/sinks/stream/kafka/kafka.ts';
import { type KubediffProcess, killAll, runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { matching, sampleEvent, type TestEvent } from '../helpers/events.ts';
import {
  consume,
  createTopic,
  type KafkaClient,
  type KafkaInfo,
  type KafkaRecord,
  type RunningKafka,
  startKafka,
} from '../helpers/kafka.ts';
import { needsKafkaListener, testKafka, testTopic } from '../helpers/kafka-env.ts';
import { adminClient, type KubeAdmin } from '../helpers/kube-admin.ts';
import { nonEmpty } from '../helpers/non-empty.ts';
import { memoryLog } from '../helpers/sink-test.ts';

const READY = /watching \d+ resource types?/;
let admin: KubeAdmin;
let kubeconfig: string;
let dir: string;
const namespaces: string[] = [];
const ownBrokers: RunningKafka[] = [];

before(async () => {
  admin = adminClient();
  kubeconfig = testCluster().kubeconfigPath;
  dir = await mkdtemp(path.join(tmpdir(), 'kubediff-kafka-sink-'));
});

after(async () => {
  await killAll();
  await Promise.all(ownBrokers.map((broker) => broker.stop()));
  await Promise.all(namespaces.map((ns) => admin.deleteNamespace(ns)));
  await admin.close();
});

async function namespace(prefix: string): Promise<string> {
  const name = await admin.createNamespace(prefix);
  namespaces.push(name);
  return name;
}

const configmaps = (ns: string) => `/api/v1/namespaces/${ns}/configmaps`;
const LABELS = { 'kafka-test': 'yes' };

async function startWatch(
  ns: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<KubediffProcess> {
  const watch = runKubediff(
    [
      'watch',
      '--kubeconfig',
      kubeconfig,
      '-o',
      'json',
      '-n',
      ns,
      '-r',
      'configmaps',
      '-l',
      'kafka-test',
      '--cluster-name',
      'kafka-e2e',
      ...args,
    ],
    { checkEvents: true, env, timeoutMs: 60_000 },
  );
  await watch.waitForStderr(READY, 90_000);
  return watch;
}

/** Creates `objects` ConfigMaps, updates each `updates` times, deletes every other one; returns the writes. */
async function churn(ns: string, prefix: string, objects: number, updates: number): Promise<number> {
  let writes = 0;
  for (let i = 0; i < objects; i++) {
    await admin.create(configmaps(ns), {
      metadata: { name: `${prefix}-${i}`, labels: LABELS },
      data: { n: '0' },
    });
    writes++;
  }
  for (let round = 1; round <= updates; round++) {
    for (let i = 0; i < objects; i++) {
      await admin.patch(`${configmaps(ns)}/${prefix}-${i}`, { data: { n: String(round) } });
      writes++;
    }
  }
  for (let i = 0; i < objects; i += 2) {
    await admin.delete(`${configmaps(ns)}/${prefix}-${i}`);
    writes++;
  }
  return writes;
}

/** The records of each key, deduplicated by event id (at least once), in the order they were read. */
function firstOfEachId(records: KafkaRecord[]): Map<string, string[]> {
  const seen = new Set<string>();
  const byKey = new Map<string, string[]>();
  for (const record of records) {
    const event = JSON.parse(record.value) as TestEvent;
    if (seen.has(event.id)) continue;
    seen.add(event.id);
    const list = byKey.get(record.key ?? '') ?? [];
    list.push(event.id);
    byKey.set(record.key ?? '', list);
  }
  return byKey;
}

/**
 * Reads the topic from the beginning until `expected` distinct events are in. Delivery is at least
 * once, so a retry after an outage may repeat an event: reading exactly `expected` records could stop
 * before the last distinct one. Ends early only when the topic is idle (fewer records than asked).
 */
async function consumeDistinct(kafka: KafkaInfo, topic: string, expected: number): Promise<KafkaRecord[]> {
  let count = expected;
  for (;;) {
    const records = await consume(kafka, topic, { count, idleTimeoutMs: 15_000 });
    const distinct = new Set(records.map((record) => (JSON.parse(record.value) as TestEvent).id)).size;
    if (distinct >= expected || records.length < count) return records;
    count = records.length + (expected - distinct);
  }
}

function idsByUid(events: readonly TestEvent[]): Map<string, string[]> {
  const byUid = new Map<string, string[]>();
  for (const event of events) {
    const list = byUid.get(event.object.uid) ?? [];
    list.push(event.id);
    byUid.set(event.object.uid, list);
  }
  return byUid;
}

describe('kubediff watch with a Kafka sink', () => {
  it('produces each event once, as its -o json line, keyed by uid with its headers, in order per object', async () => {
    const kafka = testKafka();
    const ns = await namespace('kafka-e2e');
    const topic = testTopic('sink order');
    await createTopic(kafka, topic, { partitions: 3 });
    const watch = await startWatch(ns, ['--kafka-brokers', kafka.brokers, '--kafka-topic', topic]);
    assert.match(watch.stderr, new RegExp(`delivering to kafka ${topic}`));

    const writes = await churn(ns, 'order', 8, 3);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'order-6' }));
    assert.equal(watch.events.length, writes);
    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0);
    assert.doesNotMatch(stopped.stderr, /not delivered/);

    const records = await consume(kafka, topic, { count: writes });
    assert.equal(records.length, writes, 'one record per event, no more');
    const lines = new Map(watch.stdoutLines.map((line) => [(JSON.parse(line) as TestEvent).id, line]));
    const partitionOf = new Map<string, number>();
    for (const record of records) {
      const event = JSON.parse(record.value) as TestEvent;
      assert.equal(record.value, lines.get(event.id), 'the value is the -o json line');
      assert.equal(record.key, event.object.uid);
      assert.deepEqual(record.headers, [
        ['type', event.type],
        ['cluster', 'kafka-e2e'],
        ['resource', 'configmaps'],
        ['namespace', ns],
      ]);
      const partition = partitionOf.get(event.object.uid) ?? record.partition;
      assert.equal(record.partition, partition, 'one object, one partition');
      partitionOf.set(event.object.uid, partition);
    }
    assert.ok(new Set(partitionOf.values()).size > 1, 'the objects spread over the partitions');
    assert.deepEqual(firstOfEachId(records), idsByUid(watch.events), 'per object, the order of stdout');
  });

  it('splits a batch the broker refuses as too large (MESSAGE_TOO_LARGE) in halves: every event once, in order, but the one too large alone, dead-lettered', async () => {
    const kafka = testKafka();
    const topic = testTopic('too large');
    // A topic whose record batches may take 3,000 bytes: the sink's first batch (900 KiB allowed) is refused.
    await createTopic(kafka, topic, { config: { 'max.message.bytes': '3000' } });
    const log = memoryLog();
    const file = DeadLetterFile.open(path.join(dir, 'too-large-dead.jsonl'), log);
    const sink = new KafkaSink({
      name: `kafka ${topic}`,
      brokers: [kafka.brokers],
      topic,
      retry: { initialDelayMs: 50, maxDelayMs: 200, maxAttempts: 3 },
      deadLetter: file,
      log,
    });
    const events = Array.from({ length: 12 }, (_, n) =>
      n === 6
        ? sampleEvent({ id: 'huge:1', changes: [{ op: 'add', path: '/data/x', to: 'x'.repeat(5_000) }] })
        : sampleEvent({ id: `e${n}:1` }),
    );
    // Delivered together: the sink is idle until the first batch starts, which takes all twelve.
    for (const event of events) sink.deliver(event);
    const { stats } = await sink.close(60_000);
    file.close();

    const records = await consume(kafka, topic, { count: 11 });
    assert.deepEqual(
      records.map((record) => (JSON.parse(record.value) as TestEvent).id),
      events.filter((event) => event.id !== 'huge:1').map((event) => event.id),
    );
    assert.deepEqual([stats.delivered, stats.deadLettered, stats.lost], [11, 1, 0], JSON.stringify(stats));
    const letters = (await readFile(path.join(dir, 'too-large-dead.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { reason: string; event: { id: string } });
    assert.deepEqual(
      letters.map((letter) => letter.event.id),
      ['huge:1'],
    );
    assert.match(letters[0]?.reason ?? '', /message larger than the max message size/);
    assert.equal(
      log.warnings.filter((w) => /sending it in halves/.test(w)).length,
      1,
      log.warnings.join('\n'),
    );
  });

  it('loses nothing and reorders nothing per object when the broker stops during churn and comes back', async () => {
    const kafka = await startKafka({ label: 'kafka-sink-restart' });
    ownBrokers.push(kafka);
    const ns = await namespace('kafka-restart');
    const topic = testTopic('sink restart');
    await createTopic(kafka, topic, { partitions: 3 });
    const watch = await startWatch(ns, [
      '--kafka-brokers',
      kafka.brokers,
      '--kafka-topic',
      topic,
      '--shutdown-timeout',
      '60s',
    ]);

    let writes = await churn(ns, 'before', 4, 1);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'before-2' }));
    await kafka.stopServer();
    // Changes while the broker is down: the watch goes on (stdout gets them), Kafka's share waits.
    writes += await churn(ns, 'during', 6, 2);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'during-4' }));
    await watch.waitForStderr(/kafka .*retrying in/);
    await kafka.startServer();
    writes += await churn(ns, 'after', 4, 1);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'after-2' }));
    assert.equal(watch.events.length, writes);
    const stopped = await watch.stop('SIGTERM', 90_000);
    assert.equal(stopped.code, 0);
    assert.doesNotMatch(stopped.stderr, /not delivered|dead-letter/);
    assert.match(stopped.stderr, /delivering again/);

    const records = await consumeDistinct(kafka, topic, writes);
    const ids = new Set(records.map((record) => (JSON.parse(record.value) as TestEvent).id));
    assert.deepEqual([...ids].sort(), watch.events.map((event) => event.id).sort(), 'every event, same ids');
    assert.deepEqual(firstOfEachId(records), idsByUid(watch.events), 'per object, the order of stdout');
  });

  const secured: Array<{ name: string; client: KafkaClient; sink: (info: KafkaInfo) => Promise<string> }> = [
    {
      name: 'TLS (the CA from a file)',
      client: { listener: 'SSL' },
      sink: async (info) => `    tls: { caFile: ${JSON.stringify(info.caFile)} }\n`,
    },
    {
      name: 'SASL PLAIN (the password from a file)',
      client: { listener: 'SASL_PLAINTEXT', mechanism: 'PLAIN' },
      sink: async (info) => {
        const file = path.join(dir, 'plain-password');
        await writeFile(file, `${info.users?.PLAIN.password}\n`, { mode: 0o600 });
        return (
          `    sasl: { mechanism: PLAIN, username: ${info.users?.PLAIN.username}, passwordFile: ${JSON.stringify(file)} }\n` +
          // The SASL_PLAINTEXT listener: allowed explicitly, as on a network encrypted otherwise.
          '    allowPlaintextCredentials: true\n'
        );
      },
    },
    {
      name: 'SASL SCRAM-SHA-512 over TLS (the password from the environment)',
      client: { listener: 'SASL_SSL', mechanism: 'SCRAM-SHA-512' },
      sink: async (info) =>
        `    tls: { caFile: ${JSON.stringify(info.caFile)} }\n` +
        `    sasl: { mechanism: SCRAM-SHA-512, username: ${info.users?.['SCRAM-SHA-512'].username}, password: "\${KAFKA_PASSWORD}" }\n`,
    },
  ];
  for (const { name, client, sink } of secured) {
    it(`produces over ${name}, and no credential shows`, {
      skip: needsKafkaListener(client.listener ?? 'PLAINTEXT'),
    }, async () => {
      const kafka = testKafka();
      const listener = kafka.listeners[client.listener ?? 'PLAINTEXT'] as string;
      const ns = await namespace('kafka-secure');
      const topic = testTopic(`sink ${name}`);
      await createTopic(kafka, topic, { partitions: 1, client });
      const config = path.join(dir, `${topic}.yaml`);
      await writeFile(
        config,
        `sinks:\n  - type: stdout\n  - type: kafka\n    brokers: [${JSON.stringify(listener)}]\n    topic: ${topic}\n    clientId: kubediff-secure\n    compression: gzip\n${await sink(kafka)}`,
      );
      const password = kafka.users?.['SCRAM-SHA-512'].password ?? '';
      const watch = await startWatch(ns, ['-c', config, '--debug'], { KAFKA_PASSWORD: password });
      await admin.create(configmaps(ns), { metadata: { name: 'secure', labels: LABELS }, data: { a: '1' } });
      await watch.waitForEvent(matching({ type: 'ADDED', name: 'secure' }));
      const stopped = await watch.stop('SIGTERM');
      assert.equal(stopped.code, 0);
      const records = await consume(kafka, topic, { count: 1, client });
      assert.equal(records.length, 1);
      assert.equal(records[0]?.value, watch.stdoutLines[0]);
      for (const user of nonEmpty(Object.values(kafka.users ?? {}), 'Kafka users')) {
        assert.ok(!stopped.stderr.includes(user.password), 'no password on stderr, even with --debug');
        assert.ok(!stopped.stdout.includes(user.password), 'no password on stdout');
      }
    });
  }

  it('with a wrong password: one clear warning, the watch and stdout go on, the events are dead-lettered', {
    skip: needsKafkaListener('SASL_PLAINTEXT'),
  }, async () => {
    const kafka = testKafka();
    const ns = await namespace('kafka-refused');
    const topic = testTopic('sink refused');
    const deadLetter = path.join(dir, 'refused.jsonl');
    const watch = await startWatch(
      ns,
      [
        '--kafka-brokers',
        kafka.listeners.SASL_PLAINTEXT as string,
        '--kafka-topic',
        topic,
        '--dead-letter',
        deadLetter,
        '--kafka-allow-plaintext-credentials',
      ],
      {
        KUBEDIFF_KAFKA_USERNAME: kafka.users?.['SCRAM-SHA-256'].username ?? '',
        KUBEDIFF_KAFKA_PASSWORD: 'wrong-password-7c1e',
        KUBEDIFF_KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256',
      },
    );
    await admin.create(configmaps(ns), { metadata: { name: 'one', labels: LABELS } });
    await admin.create(configmaps(ns), { metadata: { name: 'two', labels: LABELS } });
    await watch.waitForEvent(matching({ type: 'ADDED', name: 'two' }));
    await watch.waitForStderr(/kafka .*not retried/);
    const stopped = await watch.stop('SIGTERM');
    assert.equal(stopped.code, 0);
    assert.equal((stopped.stderr.match(/not retried/g) ?? []).length, 1, 'said once');
    assert.ok(!stopped.stderr.includes('wrong-password-7c1e'));
    const letters = (await readFile(deadLetter, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { sink: string; reason: string; event: TestEvent });
    assert.deepEqual(
      letters.map((letter) => letter.event.id),
      watch.events.map((event) => event.id),
    );
    assert.ok(letters.every((letter) => letter.sink === `kafka ${topic}`));
    assert.ok(!(await readFile(deadLetter, 'utf8')).includes('wrong-password-7c1e'));
  });

  it('by flags: --kafka-ca-file over TLS, and SCRAM over TLS with the credentials from the environment', {
    skip: needsKafkaListener('SASL_SSL'),
  }, async () => {
    const kafka = testKafka();
    for (const [listener, env, client] of [
      ['SSL', {}, { listener: 'SSL' }],
      [
        'SASL_SSL',
        {
          KUBEDIFF_KAFKA_USERNAME: kafka.users?.['SCRAM-SHA-512'].username ?? '',
          KUBEDIFF_KAFKA_PASSWORD: kafka.users?.['SCRAM-SHA-512'].password ?? '',
        },
        { listener: 'SASL_SSL', mechanism: 'SCRAM-SHA-512' },
      ],
    ] as const) {
      const ns = await namespace('kafka-flags-tls');
      const topic = testTopic(`flags ${listener}`);
      await createTopic(kafka, topic, { partitions: 1, client });
      const watch = await startWatch(
        ns,
        [
          '--kafka-brokers',
          kafka.listeners[listener] as string,
          '--kafka-topic',
          topic,
          '--kafka-ca-file',
          kafka.caFile as string,
          '--debug',
        ],
        env,
      );
      await admin.create(configmaps(ns), { metadata: { name: 'tls', labels: LABELS }, data: { a: '1' } });
      await watch.waitForEvent(matching({ type: 'ADDED', name: 'tls' }));
      const stopped = await watch.stop('SIGTERM');
      assert.equal(stopped.code, 0, stopped.stderr);
      const records = await consume(kafka, topic, { count: 1, client });
      assert.equal(records[0]?.value, watch.stdoutLines[0], `over ${listener}`);
      for (const user of nonEmpty(Object.values(kafka.users ?? {}), 'Kafka users'))
        assert.ok(!stopped.stderr.includes(user.password), 'no password on stderr, even with --debug');
    }
  });

  it('refuses credentials over plaintext, by flag or config file, in one sentence (exit 2), before connecting', {
    skip: needsKafkaListener('SASL_PLAINTEXT'),
  }, async () => {
    const kafka = testKafka();
    const user = kafka.users?.PLAIN;
    const env = {
      KUBEDIFF_KAFKA_USERNAME: user?.username ?? '',
      KUBEDIFF_KAFKA_PASSWORD: user?.password ?? '',
      KUBEDIFF_KAFKA_SASL_MECHANISM: 'PLAIN',
    };
    const flagResult = await runKubediffToCompletion(
      [
        'watch',
        '--kubeconfig',
        kubeconfig,
        '--kafka-brokers',
        kafka.listeners.SASL_PLAINTEXT as string,
        '--kafka-topic',
        'never',
      ],
      { env },
    );
    assert.equal(flagResult.code, 2);
    assert.equal(
      flagResult.stderr.trim(),
      "kubediff: the Kafka credentials of KUBEDIFF_KAFKA_USERNAME and KUBEDIFF_KAFKA_PASSWORD would cross the network unencrypted (SASL PLAIN over plaintext): add --kafka-tls or --kafka-ca-file <file> for the brokers' TLS listener, or --kafka-allow-plaintext-credentials if the network is encrypted otherwise.",
    );
    const config = path.join(dir, 'plaintext-sasl.yaml');
    await writeFile(
      config,
      `sinks:\n  - type: kafka\n    brokers: [${JSON.stringify(kafka.listeners.SASL_PLAINTEXT)}]\n    topic: never\n    sasl: { mechanism: PLAIN, username: ${user?.username}, password: "\${KAFKA_PASSWORD}" }\n`,
    );
    const fileResult = await runKubediffToCompletion(['watch', '--kubeconfig', kubeconfig, '-c', config], {
      env: { KAFKA_PASSWORD: user?.password ?? '' },
    });
    assert.equal(fileResult.code, 2);
    assert.match(
      fileResult.stderr,
      /plaintext-sasl\.yaml:5:\d+: sinks\[0\]\.sasl: the credentials would cross the network unencrypted \(SASL without TLS\): add tls/,
    );
    for (const result of [flagResult, fileResult]) {
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
      assert.ok(!result.stderr.includes(user?.password ?? '-'), 'the password never shows');
    }
  });
});
