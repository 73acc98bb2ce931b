// The log sinks' settings (OTLP, OpenSearch, Elasticsearch: docs/sinks.md): a config file's entries and
// the --otlp-endpoint flag as sink specs. Credentials come from ${ENV} substitution in the file, from the
// files the entries name (headersFile, passwordFile, apiKeyFile: a Secret mounted in the pod), or, for
// the flag, from the environment variables OpenTelemetry's exporters read (OTEL_EXPORTER_OTLP_HEADERS);
// never from a flag. A file that cannot be read is a problem at its key.

import type { SinkFileReader, SinkProblem } from '../sinks/component.ts';
import { batchSettings } from '../sinks/core/entry-settings.ts';
import { checkHttpUrl, parseHeaders, tlsFromFiles } from '../sinks/core/receiver-settings.ts';
import type { OtlpSinkSpec, SearchSinkSpec } from '../sinks/core/setup.ts';
import type { Env } from '../util/environment.ts';
import { UsageError } from '../util/errors.ts';
import type { SinkInput } from './schema.ts';

type OtlpInput = Extract<SinkInput, { type: 'otlp' }>;
type SearchInput = Extract<SinkInput, { type: 'opensearch' | 'elasticsearch' }>;
type Common = Pick<OtlpSinkSpec, 'name' | 'filter' | 'timeoutMs' | 'deadLetterFile'>;

/** The standard variables of OpenTelemetry's OTLP exporters: `key=value` pairs, comma-separated. */
export const OTLP_HEADER_VARIABLES = [
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_LOGS_HEADERS',
] as const;

/** --otlp-endpoint as a sink spec (undefined without it), headers from the OTEL_* variables. */
export function otlpSpecFromFlag(endpoint: string | undefined, env: Env): OtlpSinkSpec | undefined {
  const url = endpoint?.trim();
  if (!url) return undefined;
  checkHttpUrl(url, 'invalid --otlp-endpoint', `give an Authorization header in ${OTLP_HEADER_VARIABLES[0]}`);
  const headers: Record<string, string> = {};
  for (const variable of OTLP_HEADER_VARIABLES) Object.assign(headers, otelHeaders(env[variable], variable));
  return { type: 'otlp', endpoint: url, ...(Object.keys(headers).length > 0 ? { headers } : {}) };
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

export function otlpSpecOf(input: OtlpInput, common: Common, readFile: SinkFileReader): OtlpSinkSpec {
  const shared = batchSinkSettings(input, readFile);
  return {
    type: 'otlp',
    endpoint: input.endpoint,
    ...common,
    ...shared,
    ...(input.protocol ? { protocol: input.protocol } : {}),
  };
}

export function searchSpecOf(
  input: SearchInput,
  common: Common,
  readFile: SinkFileReader,
  problem: SinkProblem,
): SearchSinkSpec {
  const secret = (key: string, file: string) => readFile([key], file).trim();
  const password =
    input.password ?? (input.passwordFile ? secret('passwordFile', input.passwordFile) : undefined);
  const apiKey = input.apiKey ?? (input.apiKeyFile ? secret('apiKeyFile', input.apiKeyFile) : undefined);
  const auth =
    apiKey !== undefined
      ? { apiKey }
      : input.username !== undefined
        ? { username: input.username, password: password ?? '' }
        : undefined;
  const shared = batchSinkSettings(input, readFile);
  // One in headers: is refused by the file's checks (semantic-checks.ts); one in headersFile is found here.
  if (auth && shared.headers?.authorization !== undefined)
    throw problem(
      ['headersFile'],
      `sets the Authorization header, which ${'apiKey' in auth ? 'apiKey sets' : 'username and password set'}: give the credentials one way, not both`,
    );
  const spec = {
    url: input.url,
    ...common,
    ...shared,
    ...(input.index ? { index: input.index } : {}),
    ...(input.mode ? { mode: input.mode } : {}),
    ...(input.template !== undefined ? { installTemplate: input.template } : {}),
    ...(auth ? { auth } : {}),
  };
  return input.type === 'opensearch' ? { type: 'opensearch', ...spec } : { type: 'elasticsearch', ...spec };
}

/** headers (and headersFile's), tls, batch and queue: what the log sinks share. */
function batchSinkSettings(
  input: OtlpInput | SearchInput,
  readFile: SinkFileReader,
): Pick<OtlpSinkSpec, 'headers' | 'tls' | 'batchMaxEvents' | 'batchMaxBytes' | 'queue'> {
  const fromFile = input.headersFile
    ? parseHeaders(
        readFile(['headersFile'], input.headersFile).split(/\r?\n/),
        `headersFile ${input.headersFile}`,
      )
    : {};
  const headers = { ...fromFile, ...lowerCased(input.headers) };
  const tls = input.tls ? tlsFromFiles(input.tls, readFile) : undefined;
  return {
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(tls ? { tls } : {}),
    ...batchSettings(input),
  };
}

function lowerCased(headers: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
  );
}
