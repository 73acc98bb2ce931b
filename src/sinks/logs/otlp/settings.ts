// The OTLP sink's settings that the config layer checks, apart from the sink itself so that reading flags
// and config files does not load the OpenTelemetry packages.

/** OTLP over HTTP: protobuf (the default, what every Collector and backend takes) or JSON. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];
