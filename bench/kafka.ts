// Figure 8: the Kafka sink's sustained throughput against a raw producer of the same library
// (@platformatic/kafka) in the same run, pair by pair, on a Kafka broker of the bench's own (the test
// harness's KRaft broker, test/helpers/kafka.ts). Both produce the same events to a 3-partition topic
// with the same producer settings (idempotent, acks=all, no compression):
// - the sink: every event handed to KafkaSink.deliver() at once (its queue sized to hold them all, so
//   none is folded into a digest), timed until close() reports all of them delivered (its queue,
//   batching of 500, one batch in flight, the accounting);
// - the raw producer: JSON.stringify of each event, keyed by uid with the same four headers, sent in
//   batches of 500 awaited one after the other (what a plain loop over the library does).
// The figure is events per second of each; the ratio sink / raw.
import { randomUUID } from 'node:crypto';
import { ProduceAcks, Producer, stringSerializers } from '@platformatic/kafka';
import type { ChangeEvent } from '../src/events/event.ts';
import { KafkaSink } from '../src/sinks/stream/kafka/kafka.ts';
import type { Logger } from '../src/util/log.ts';
import { createTopic, startKafka } from '../test/helpers/kafka.ts';
import { pairedSamples, pairedSpread, type Spread } from './lib/stats.ts';

export interface KafkaFigures {
  kafkaVersion: string;
  events: number;
  pairs: number;
  eventBytes: number;
  sink: Spread;
  raw: Spread;
  ratio: Spread;
  /** Events the sink did not report delivered, over all runs (expected 0). */
  undelivered: number;
}

const silent: Logger = { debug: () => {}, info: () => {}, warn: () => {} };

/** `count` Deployment updates of three changes over 200 objects: the events the sink figures send. */
export function benchEvents(count: number): ChangeEvent[] {
  const uids = Array.from({ length: 200 }, () => randomUUID());
  return Array.from({ length: count }, (_, index) => {
    const uid = uids[index % uids.length] as string;
    return {
      id: `${uid}:${1000 + index}`,
      type: 'UPDATED',
      time: new Date().toISOString(),
      cluster: 'bench',
      object: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        resource: 'deployments',
        namespace: `team-${index % 7}`,
        name: `web-${index % 200}`,
        uid,
        resourceVersion: String(1000 + index),
      },
      changes: [
        { op: 'replace', path: '/spec/replicas', from: index % 5, to: (index % 5) + 1 },
        {
          op: 'replace',
          path: '/spec/template/spec/containers/0/image',
          from: `registry.example.com/shop/web:1.${index}`,
          to: `registry.example.com/shop/web:1.${index + 1}`,
        },
        { op: 'add', path: '/metadata/annotations/deployed-by', to: 'pipeline-4711' },
      ],
    };
  });
}

export async function measureKafka(options: {
  events: number;
  pairs: number;
  log: (message: string) => void;
}): Promise<KafkaFigures> {
  const kafka = await startKafka({ label: 'bench-kafka' });
  try {
    const batch = benchEvents(options.events);
    let undelivered = 0;
    let run = 0;
    const topicFor = async () => {
      const topic = `bench-kafka-${run++}`;
      await createTopic(kafka, topic, { partitions: 3 });
      return topic;
    };
    const viaSink = async (): Promise<number> => {
      const topic = await topicFor();
      // A queue that holds the whole burst: the figure is the sink's rate of producing, not its digests.
      const sink = new KafkaSink({
        name: 'kafka',
        brokers: [kafka.brokers],
        topic,
        log: silent,
        queue: { capacity: batch.length, maxBytes: 1024 ** 3 },
      });
      const started = performance.now();
      for (const event of batch) sink.deliver(event);
      const report = await sink.close(600_000);
      const seconds = (performance.now() - started) / 1000;
      undelivered += batch.length - report.stats.delivered;
      return batch.length / seconds;
    };
    const viaRaw = async (): Promise<number> => {
      const topic = await topicFor();
      const producer = new Producer({
        clientId: 'bench-raw',
        bootstrapBrokers: [kafka.brokers],
        serializers: stringSerializers,
        idempotent: true,
        acks: ProduceAcks.ALL,
        autocreateTopics: false,
      });
      const started = performance.now();
      for (let offset = 0; offset < batch.length; offset += 500) {
        await producer.send({
          messages: batch.slice(offset, offset + 500).map((event) => ({
            topic,
            key: event.object.uid,
            value: JSON.stringify(event),
            headers: new Map([
              ['type', event.type],
              ['cluster', event.cluster ?? ''],
              ['resource', `${event.object.resource}.apps`],
              ['namespace', event.object.namespace ?? ''],
            ]),
          })),
        });
      }
      const seconds = (performance.now() - started) / 1000;
      await producer.close();
      return batch.length / seconds;
    };
    options.log(`8. kafka: ${options.events} events, ${options.pairs} pairs (after a warm-up pair)`);
    const samples = await pairedSamples(options.pairs, 1, viaSink, viaRaw);
    const spread = pairedSpread(samples, (rate) => rate);
    return {
      kafkaVersion: kafka.version,
      events: options.events,
      pairs: options.pairs,
      eventBytes: Math.round(JSON.stringify(batch[0]).length),
      sink: spread.a,
      raw: spread.b,
      ratio: spread.ratio,
      undelivered,
    };
  } finally {
    await kafka.stop();
  }
}
