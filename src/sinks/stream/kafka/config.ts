// What a Kafka sink is configured by (docs/sinks.md, "Kafka"): its `sinks:` entry (schema, the checks the
// schema cannot state, its spec with the TLS files and the SASL password file read), its flags
// (--kafka-brokers, --kafka-topic, TLS) with SASL credentials from the environment (never a flag), its
// default name and its credentials. Loads no Kafka client: the factory imports kafka.ts when a sink is made.
import type { FromSchema } from 'json-schema-to-ts';
import { isJsonObject } from '../../../kube/types.ts';
import { type Credential, secretCredentials } from '../../../util/credentials.ts';
import type { Env } from '../../../util/environment.ts';
import { UsageError } from '../../../util/errors.ts';
import type { FlagSpec } from '../../../util/flag-spec.ts';
import type { Check, Checks } from '../../../util/key-checks.ts';
import { kafkaBrokerProblem } from '../../../util/url.ts';
import type { ValueFormat } from '../../../util/value-format.ts';
import type { CommonEntrySpec, EntryContext, HttpSinkSpec } from '../../component.ts';
import type { BacklogOptions } from '../../core/backlog.ts';
import { commonKeys, deliveryKeys, size, tlsFiles } from '../../core/entry-schema.ts';
import { batchSettings, readFlagFile, sinkEnvValue } from '../../core/entry-settings.ts';
import { tlsFromFiles } from '../../core/receiver-settings.ts';
import {
  KAFKA_COMPRESSIONS,
  KAFKA_SASL_MECHANISMS,
  type KafkaCompression,
  type KafkaSasl,
  type KafkaSaslMechanism,
  type KafkaTls,
} from './settings.ts';

export interface KafkaSinkSpec extends HttpSinkSpec {
  type: 'kafka';
  /** Bootstrap brokers, host:port each. */
  brokers: string[];
  topic: string;
  clientId?: string;
  compression?: KafkaCompression;
  tls?: KafkaTls;
  /** The password comes from the environment or a file, never a flag. */
  sasl?: KafkaSasl;
  batchMaxEvents?: number;
  /** Bytes of the events' JSON per request. */
  batchMaxBytes?: number;
  queue?: BacklogOptions;
}

export const kafkaSchema = {
  type: 'object',
  properties: {
    type: { const: 'kafka' },
    ...commonKeys,
    ...deliveryKeys,
    brokers: { type: 'array', items: { type: 'string', format: 'kafka-broker' }, minItems: 1 },
    topic: { type: 'string', minLength: 1 },
    clientId: { type: 'string', minLength: 1 },
    compression: { type: 'string', enum: KAFKA_COMPRESSIONS },
    batch: { type: 'integer', minimum: 1, maximum: 10000 },
    batchBytes: size,
    queueCapacity: { type: 'integer', minimum: 1 },
    // true: TLS with the system's CAs.
    tls: { ...tlsFiles, type: ['boolean', 'object'] },
    sasl: {
      type: 'object',
      properties: {
        mechanism: { type: 'string', enum: KAFKA_SASL_MECHANISMS },
        username: { type: 'string' },
        password: { type: 'string' },
        passwordFile: { type: 'string' },
      },
      required: ['mechanism', 'username'],
      additionalProperties: false,
    },
    allowPlaintextCredentials: { type: 'boolean' },
  },
  required: ['type', 'brokers', 'topic'],
  additionalProperties: false,
} as const;

export type KafkaEntry = FromSchema<typeof kafkaSchema>;

/** The environment variables of the Kafka flags' SASL credentials (documented in docs/sinks.md). */
export const KAFKA_ENV = {
  username: 'KUBEDIFF_KAFKA_USERNAME',
  password: 'KUBEDIFF_KAFKA_PASSWORD',
  mechanism: 'KUBEDIFF_KAFKA_SASL_MECHANISM',
} as const;

export const kafkaFlags: readonly FlagSpec[] = [
  {
    flags: '--kafka-brokers <host:port,...>',
    description: `produce every event to Kafka (SASL: $${KAFKA_ENV.username}, $${KAFKA_ENV.password})`,
    more: true,
  },
  { flags: '--kafka-topic <topic>', description: 'the Kafka topic of --kafka-brokers', more: true },
  {
    flags: '--kafka-tls',
    description: "connect to the brokers' TLS listener (certificates checked against the system's CAs)",
    more: true,
  },
  {
    flags: '--kafka-ca-file <file>',
    description: '…checked against this CA (PEM) instead; implies --kafka-tls',
    more: true,
  },
  {
    flags: '--kafka-allow-plaintext-credentials',
    description: 'let SASL credentials cross a network without TLS (only where it is encrypted otherwise)',
    more: true,
  },
];

/** The values of kafkaFlags as commander hands them over. */
interface KafkaFlagValues {
  kafkaBrokers?: string;
  kafkaTopic?: string;
  /** --kafka-tls: the brokers' TLS listener, checked against the system's CAs… */
  kafkaTls?: boolean;
  /** …or --kafka-ca-file's (implies --kafka-tls). */
  kafkaCaFile?: string;
  /** --kafka-allow-plaintext-credentials: SASL without TLS, for a network encrypted otherwise. */
  kafkaAllowPlaintextCredentials?: boolean;
}

/** --kafka-brokers and --kafka-topic (both or neither), SASL credentials from the environment. */
export function kafkaSpecsFromFlags(values: object, env: Env): KafkaSinkSpec[] {
  const flags = values as KafkaFlagValues;
  const brokersText = flags.kafkaBrokers?.trim();
  const topic = flags.kafkaTopic?.trim();
  if (!brokersText && !topic) return [];
  if (!brokersText)
    throw new UsageError('--kafka-topic needs --kafka-brokers (host:port,…), the brokers to produce to.');
  if (!topic) throw new UsageError('--kafka-brokers needs --kafka-topic, the topic to produce events to.');
  const brokers = brokersText
    .split(',')
    .map((broker) => broker.trim())
    .filter(Boolean);
  for (const broker of brokers) {
    if (kafkaBrokerProblem(broker))
      throw new UsageError(
        `invalid --kafka-brokers "${broker.slice(0, 80)}": expected host:port, several separated by commas.`,
      );
  }
  const spec: KafkaSinkSpec = { type: 'kafka', brokers, topic };
  const caFile = flags.kafkaCaFile?.trim();
  if (caFile) spec.tls = { ca: readFlagFile('--kafka-ca-file', caFile) };
  else if (flags.kafkaTls) spec.tls = {};
  const username = sinkEnvValue(env, KAFKA_ENV.username);
  const password = env[KAFKA_ENV.password];
  if (username !== undefined || password) {
    if (username === undefined || !password)
      throw new UsageError(
        `SASL needs both ${KAFKA_ENV.username} and ${KAFKA_ENV.password}; ${username === undefined ? KAFKA_ENV.username : KAFKA_ENV.password} is not set.`,
      );
    const mechanism = sinkEnvValue(env, KAFKA_ENV.mechanism) ?? 'SCRAM-SHA-512';
    if (!(KAFKA_SASL_MECHANISMS as readonly string[]).includes(mechanism))
      throw new UsageError(
        `invalid ${KAFKA_ENV.mechanism} "${mechanism.slice(0, 40)}": use ${KAFKA_SASL_MECHANISMS.join(', ')}.`,
      );
    spec.sasl = { mechanism: mechanism as KafkaSaslMechanism, username, password };
    if (!spec.tls && !flags.kafkaAllowPlaintextCredentials)
      throw new UsageError(
        `the Kafka credentials of ${KAFKA_ENV.username} and ${KAFKA_ENV.password} would cross the network unencrypted (SASL ${mechanism} over plaintext): add --kafka-tls or --kafka-ca-file <file> for the brokers' TLS listener, or --kafka-allow-plaintext-credentials if the network is encrypted otherwise.`,
      );
  }
  if (flags.kafkaAllowPlaintextCredentials && !spec.sasl)
    throw new UsageError(
      `--kafka-allow-plaintext-credentials applies to SASL credentials, and none are given (${KAFKA_ENV.username}, ${KAFKA_ENV.password}).`,
    );
  return [spec];
}

/** A bootstrap broker's address (host:port). */
export const kafkaBrokerFormat: ValueFormat = { name: 'kafka-broker', problem: kafkaBrokerProblem };

const kafkaPassword: Check = (sasl, path, { at }) => {
  if (!isJsonObject(sasl)) return;
  if (sasl.password !== undefined && sasl.passwordFile !== undefined)
    at(
      path,
      'give the password either as password (from an environment variable) or as passwordFile, not both',
    );
  else if (sasl.password === undefined && sasl.passwordFile === undefined)
    at(path, 'needs password (from an environment variable) or passwordFile');
};

/** Credentials never cross the network unencrypted unless the file says the network is encrypted otherwise. */
const kafkaCredentialsEncrypted: Check = (sink, path, { at }) => {
  if (!isJsonObject(sink) || !isJsonObject(sink.sasl)) return;
  if ((sink.tls === undefined || sink.tls === false) && sink.allowPlaintextCredentials !== true)
    at(
      [...path, 'sasl'],
      "the credentials would cross the network unencrypted (SASL without TLS): add tls (the brokers' TLS listener), or allowPlaintextCredentials: true if the network is encrypted otherwise",
    );
};

export const kafkaChecks: Checks = [
  [['sasl'], kafkaPassword],
  [[], kafkaCredentialsEncrypted],
];

/** TLS files and a SASL password file are read here (in that order); `tls: true` is the system's CAs. */
export function kafkaSpecOf(
  input: KafkaEntry,
  common: CommonEntrySpec,
  { readFile }: EntryContext,
): KafkaSinkSpec {
  const { tls, sasl } = input;
  return {
    type: 'kafka',
    brokers: input.brokers,
    topic: input.topic,
    ...common,
    ...(input.clientId ? { clientId: input.clientId } : {}),
    ...(input.compression ? { compression: input.compression } : {}),
    ...batchSettings(input),
    ...(tls === true ? { tls: {} } : typeof tls === 'object' ? { tls: tlsFromFiles(tls, readFile) } : {}),
    ...(sasl
      ? {
          sasl: {
            mechanism: sasl.mechanism,
            username: sasl.username,
            password:
              sasl.password ??
              readFile(['sasl', 'passwordFile'], sasl.passwordFile ?? '').replace(/\r?\n$/, ''),
          },
        }
      : {}),
  };
}

/** The SASL password and a client key, sent or held. */
export function kafkaCredentials(spec: KafkaSinkSpec): Credential[] {
  return secretCredentials(spec.sasl?.password, spec.tls?.key);
}
