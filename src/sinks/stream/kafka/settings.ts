// The Kafka sink's settings that the config layer checks, apart from the sink itself so that reading
// flags and config files does not load the Kafka client.

export const KAFKA_COMPRESSIONS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
export type KafkaCompression = (typeof KAFKA_COMPRESSIONS)[number];
export const KAFKA_SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type KafkaSaslMechanism = (typeof KAFKA_SASL_MECHANISMS)[number];

export interface KafkaTls {
  /** PEM of the CA(s) the brokers' certificates are checked against; default: the system's. */
  ca?: string;
  /** A client certificate and its key (PEM), for brokers that ask for one. */
  cert?: string;
  key?: string;
  /** The name the brokers' certificates are checked against, when it is not the host dialled. */
  serverName?: string;
}

export interface KafkaSasl {
  mechanism: KafkaSaslMechanism;
  username: string;
  /** A credential: from the environment or a file, never a flag; never logged. */
  password: string;
}
