// Proves the Kafka test broker the Kafka sink's tests will rely on, through Kafka's own console tools:
// keyed records with headers produced and consumed over every listener (PLAINTEXT, SASL PLAIN and SCRAM,
// TLS, SASL over TLS), wrong credentials refused, and a broker of a test's own that stops and restarts
// with its data.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import {
  consume,
  createTopic,
  type KafkaClient,
  type KafkaRecord,
  kafkaTool,
  produce,
  startKafka,
} from '../helpers/kafka.ts';
import { needsKafkaListener, testKafka, testTopic } from '../helpers/kafka-env.ts';
import { tcpAccepts } from '../helpers/processes.ts';

const kafka = testKafka();

/** The records of one key, in the order the consumer read them. */
const ofKey = (records: KafkaRecord[], key: string) => records.filter((record) => record.key === key);

test('keyed records with headers go through a 3-partition topic, one key in one partition, in order', async () => {
  const topic = testTopic('harness plaintext');
  await createTopic(kafka, topic, { partitions: 3 });
  const records = ['a', 'b', 'c', 'd', 'e', 'f'].flatMap((key) => [
    { key, value: `{"uid":"${key}","n":1}`, headers: [['type', 'ADDED'] as [string, string]] },
    {
      key,
      value: `{"uid":"${key}","n":2}`,
      headers: [['type', 'MODIFIED'] as [string, string], ['namespace', 'ns-1'] as [string, string]],
    },
  ]);
  await produce(kafka, topic, records);

  const read = await consume(kafka, topic, { count: records.length });
  assert.equal(read.length, records.length);
  for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) {
    const mine = ofKey(read, key);
    assert.deepEqual(
      mine.map((record) => [record.value, record.headers]),
      [
        [`{"uid":"${key}","n":1}`, [['type', 'ADDED']]],
        [
          `{"uid":"${key}","n":2}`,
          [
            ['type', 'MODIFIED'],
            ['namespace', 'ns-1'],
          ],
        ],
      ],
    );
    assert.equal(mine[0]?.partition, mine[1]?.partition, `key ${key} stays in one partition`);
    assert.ok((mine[0]?.offset ?? 0) < (mine[1]?.offset ?? 0));
  }
  // Six keys over three partitions: the key, not chance, picks the partition.
  assert.ok(new Set(read.map((record) => record.partition)).size > 1, 'the keys spread over the partitions');
});

const secured: Array<{ name: string; producer: KafkaClient; consumer: KafkaClient }> = [
  {
    name: 'SASL PLAIN in, SASL SCRAM-SHA-256 out',
    producer: { listener: 'SASL_PLAINTEXT', mechanism: 'PLAIN' },
    consumer: { listener: 'SASL_PLAINTEXT', mechanism: 'SCRAM-SHA-256' },
  },
  {
    name: 'TLS in, SASL SCRAM-SHA-512 over TLS out',
    producer: { listener: 'SSL' },
    consumer: { listener: 'SASL_SSL', mechanism: 'SCRAM-SHA-512' },
  },
];
for (const { name, producer, consumer } of secured) {
  test(`a keyed record over ${name}`, {
    skip:
      needsKafkaListener(producer.listener ?? 'PLAINTEXT') ??
      needsKafkaListener(consumer.listener ?? 'PLAINTEXT'),
  }, async () => {
    const topic = testTopic(`harness ${name}`);
    await createTopic(kafka, topic, { partitions: 3, client: producer });
    await produce(
      kafka,
      topic,
      [{ key: 'uid-1', value: '{"type":"MODIFIED"}', headers: [['cluster', 'test']] }],
      {
        client: producer,
      },
    );
    const [record, ...more] = await consume(kafka, topic, { count: 1, client: consumer });
    assert.deepEqual(more, []);
    assert.equal(record?.key, 'uid-1');
    assert.equal(record?.value, '{"type":"MODIFIED"}');
    assert.deepEqual(record?.headers, [['cluster', 'test']]);
  });
}

test('a wrong SCRAM password is refused', { skip: needsKafkaListener('SASL_PLAINTEXT') }, async () => {
  const username = kafka.users?.['SCRAM-SHA-256'].username ?? '';
  const result = await kafkaTool(kafka, 'org.apache.kafka.tools.TopicCommand', ['--list'], {
    client: {
      listener: 'SASL_PLAINTEXT',
      mechanism: 'SCRAM-SHA-256',
      credentials: { username, password: 'wrong' },
    },
  });
  assert.notEqual(result.code, 0);
  assert.match(result.stderr, /Authentication failed .*invalid credentials/);
});

test('a broker of its own stops and restarts with its data on the same ports', async () => {
  const own = await startKafka({ label: 'harness-kafka-restart' });
  after(() => own.stop());
  const topic = testTopic('harness restart');
  await createTopic(own, topic, { partitions: 3 });
  await produce(own, topic, [{ key: 'k', value: 'before' }]);

  await own.stopServer();
  assert.equal(await tcpAccepts(own.brokers), false, 'a stopped broker refuses connections');
  await own.startServer();
  await produce(own, topic, [{ key: 'k', value: 'after' }]);
  const read = await consume(own, topic, { count: 2 });
  assert.deepEqual(
    read.map((record) => record.value),
    ['before', 'after'],
  );
});
