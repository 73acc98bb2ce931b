// What an OTLP sink is configured by (docs/sinks.md, "OpenTelemetry (OTLP logs)"): its `sinks:` entry
// (schema, checks, its spec with headersFile and the TLS files read) and the --otlp-endpoint flag, whose
// headers come from the environment variables OpenTelemetry's exporters read (OTEL_EXPORTER_OTLP_HEADERS),
// never from a flag. Loads no OpenTelemetry package: the factory imports otlp.ts when a sink is made.
import type { FromSchema } from 'json-schema-to-ts';
import { type Credential, headerCredentials, secretCredentials } from '../../../util/credentials.ts';
import type { Env } from '../../../util/environment.ts';
import { UsageError } from '../../../util/errors.ts';
import type { FlagSpec } from '../../../util/flag-spec.ts';
import type { CommonEntrySpec, EntryContext, HttpSinkSpec } from '../../component.ts';
import type { BacklogOptions } from '../../core/backlog.ts';
import { httpUrlFormat } from '../../core/entry-formats.ts';
import { batchSinkKeys } from '../../core/entry-schema.ts';
import { batchSinkSettings } from '../../core/entry-settings.ts';
import type { HttpTls } from '../../core/http.ts';
import { checkHttpUrl, parseHeaders } from '../../core/receiver-settings.ts';
import { OTLP_PROTOCOLS, type OtlpProtocol } from './settings.ts';

/** OpenTelemetry logs over OTLP/HTTP (otlp.ts). */
export interface OtlpSinkSpec extends HttpSinkSpec {
  type: 'otlp';
  endpoint: string;
  protocol?: OtlpProtocol;
  headers?: Record<string, string>;
  tls?: HttpTls;
  batchMaxEvents?: number;
  /** Bytes of the events' JSON per request. */
  batchMaxBytes?: number;
  queue?: BacklogOptions;
}

export const otlpSchema = {
  type: 'object',
  properties: {
    type: { const: 'otlp' },
    ...batchSinkKeys,
    endpoint: { type: 'string', format: 'otlp-endpoint' },
    protocol: { type: 'string', enum: OTLP_PROTOCOLS },
  },
  required: ['type', 'endpoint'],
  additionalProperties: false,
} as const;

export type OtlpEntry = FromSchema<typeof otlpSchema>;

/** Its endpoint, whose credentials go in a header instead. */
export const otlpEndpointFormat = httpUrlFormat(
  'otlp-endpoint',
  'give an Authorization header in headers or headersFile',
);

/** The standard variables of OpenTelemetry's OTLP exporters: `key=value` pairs, comma-separated. */
export const OTLP_HEADER_VARIABLES = [
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_LOGS_HEADERS',
] as const;

export const otlpFlags: readonly FlagSpec[] = [
  {
    flags: '--otlp-endpoint <url>',
    description: 'send every event as an OTLP log record (OpenTelemetry)',
    more: true,
  },
];

/** --otlp-endpoint as a sink spec (none without it), headers from the OTEL_* variables. */
export function otlpSpecsFromFlags(values: object, env: Env): OtlpSinkSpec[] {
  const url = (values as { otlpEndpoint?: string }).otlpEndpoint?.trim();
  if (!url) return [];
  checkHttpUrl(url, 'invalid --otlp-endpoint', `give an Authorization header in ${OTLP_HEADER_VARIABLES[0]}`);
  const headers: Record<string, string> = {};
  for (const variable of OTLP_HEADER_VARIABLES) Object.assign(headers, otelHeaders(env[variable], variable));
  return [{ type: 'otlp', endpoint: url, ...(Object.keys(headers).length > 0 ? { headers } : {}) }];
}

/** `api-key=abc,x-team=sre` (values URL-encoded), as OpenTelemetry's exporters read it. */
function otelHeaders(text: string | undefined, variable: string): Record<string, string> {
  if (!text?.trim()) return {};
  const lines = text.split(',').map((pair, index) => {
    const equals = pair.indexOf('=');
    if (equals < 0) throw new UsageError(`invalid ${variable} (pair ${index + 1}): use key=value,key=value.`);
    let value: string;
    try {
      value = decodeURIComponent(pair.slice(equals + 1).trim());
    } catch {
      throw new UsageError(`invalid ${variable} (pair ${index + 1}): the value is not URL-encoded.`);
    }
    return `${pair.slice(0, equals).trim()}: ${value}`;
  });
  return parseHeaders(lines, variable);
}

export function otlpSpecOf(
  input: OtlpEntry,
  common: CommonEntrySpec,
  { readFile }: EntryContext,
): OtlpSinkSpec {
  return {
    type: 'otlp',
    endpoint: input.endpoint,
    ...common,
    ...batchSinkSettings(input, readFile),
    ...(input.protocol ? { protocol: input.protocol } : {}),
  };
}

/** The endpoint (a token may sit in it), every header, a client key. */
export function otlpCredentials(spec: OtlpSinkSpec): Credential[] {
  return [
    { kind: 'url', value: spec.endpoint },
    ...headerCredentials(spec.headers),
    ...secretCredentials(spec.tls?.key),
  ];
}
