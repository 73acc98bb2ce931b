// The Kafka sink type as src/sinks/registry.ts lists it (src/sinks/component.ts): its settings from
// config.ts, and a factory that imports the Kafka client (kafka.ts) only when a Kafka sink is created.
import type { SinkComponent } from '../../component.ts';
import { batchOptions, deliveryOptions } from '../../core/sink-options.ts';
import {
  type KafkaEntry,
  type KafkaSinkSpec,
  kafkaBrokerFormat,
  kafkaChecks,
  kafkaCredentials,
  kafkaFlags,
  kafkaSchema,
  kafkaSpecOf,
  kafkaSpecsFromFlags,
} from './config.ts';

export const kafkaComponent: SinkComponent<KafkaEntry, KafkaSinkSpec> = {
  types: ['kafka'],
  schemas: { kafka: kafkaSchema },
  formats: [kafkaBrokerFormat],
  checks: kafkaChecks,
  flags: kafkaFlags,
  fromFlags: kafkaSpecsFromFlags,
  spec: kafkaSpecOf,
  name: (spec) => `kafka ${spec.topic}`,
  credentials: kafkaCredentials,
  storiesRefused: () =>
    'stories do not apply to a Kafka sink: it produces one event per message (remove its stories key).',
  async create(spec, context) {
    const { KafkaSink } = await import('./kafka.ts');
    return new KafkaSink({
      brokers: spec.brokers,
      topic: spec.topic,
      name: context.unique(spec.name ?? this.name(spec)),
      log: context.runtime.log,
      ...(spec.clientId ? { clientId: spec.clientId } : {}),
      ...(spec.compression ? { compression: spec.compression } : {}),
      ...(spec.tls ? { tls: spec.tls } : {}),
      ...(spec.sasl ? { sasl: spec.sasl } : {}),
      ...batchOptions(spec),
      ...deliveryOptions(spec, context),
    });
  },
  docs: 'docs/sinks.md#kafka',
};
