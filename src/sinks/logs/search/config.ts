// What an OpenSearch or Elasticsearch sink is configured by (docs/sinks.md, "OpenSearch and
// Elasticsearch"): its `sinks:` entry (schema, the formats of its URL and index, the checks of its
// credentials, its spec with passwordFile, apiKeyFile, headersFile and the TLS files read). No flags: a
// config file's entry only.
import type { FromSchema } from 'json-schema-to-ts';
import { isJsonObject } from '../../../kube/types.ts';
import { type Credential, headerCredentials, secretCredentials } from '../../../util/credentials.ts';
import type { Check, Checks } from '../../../util/key-checks.ts';
import { parseHttpUrl } from '../../../util/url.ts';
import type { ValueFormat } from '../../../util/value-format.ts';
import type { CommonEntrySpec, EntryContext, HttpSinkSpec } from '../../component.ts';
import type { BacklogOptions } from '../../core/backlog.ts';
import { httpUrlFormat } from '../../core/entry-formats.ts';
import { batchSinkKeys } from '../../core/entry-schema.ts';
import { batchSinkSettings } from '../../core/entry-settings.ts';
import type { HttpTls } from '../../core/http.ts';
import type { SearchAuth, SearchFlavor } from './search.ts';
import type { SearchIndexMode } from './template.ts';

/** OpenSearch or Elasticsearch through _bulk (search.ts). */
export type SearchSinkSpec = SearchSinkSpecOf<'opensearch'> | SearchSinkSpecOf<'elasticsearch'>;

interface SearchSinkSpecOf<T extends SearchFlavor> extends HttpSinkSpec {
  type: T;
  url: string;
  index?: string;
  mode?: SearchIndexMode;
  installTemplate?: boolean;
  auth?: SearchAuth;
  headers?: Record<string, string>;
  tls?: HttpTls;
  batchMaxEvents?: number;
  /** Bytes of the events' JSON per request. */
  batchMaxBytes?: number;
  queue?: BacklogOptions;
}

/** OpenSearch and Elasticsearch: one _bulk sink, one schema each. */
function searchSchema<T extends SearchFlavor>(type: T) {
  return {
    type: 'object',
    properties: {
      type: { const: type },
      ...batchSinkKeys,
      url: { type: 'string', format: 'search-url' },
      index: { type: 'string', minLength: 1, format: 'search-index' },
      mode: { type: 'string', enum: ['daily', 'data-stream'] },
      template: { type: 'boolean' },
      username: { type: 'string' },
      password: { type: 'string' },
      passwordFile: { type: 'string' },
      apiKey: { type: 'string' },
      apiKeyFile: { type: 'string' },
      // Credentials over an http:// URL: only where the network is encrypted otherwise.
      allowPlaintextCredentials: { type: 'boolean' },
    },
    required: ['type', 'url'],
    additionalProperties: false,
  } as const;
}

export const searchSchemas = {
  opensearch: searchSchema('opensearch'),
  elasticsearch: searchSchema('elasticsearch'),
} as const;

export type SearchEntry =
  | FromSchema<typeof searchSchemas.opensearch>
  | FromSchema<typeof searchSchemas.elasticsearch>;

/** What OpenSearch and Elasticsearch take as an index or data stream name. */
const SEARCH_INDEX = /^[a-z0-9][a-z0-9._-]{0,200}$/;

/** The formats of its URL (credentials go in their own keys) and of its index. */
export const searchFormats: readonly ValueFormat[] = [
  httpUrlFormat('search-url', 'give them as username and password (or passwordFile)'),
  {
    name: 'search-index',
    problem: (value) =>
      SEARCH_INDEX.test(value)
        ? undefined
        : "expected an index name (lowercase letters, digits, '-', '_', '.'; not starting with '-', '_' or '.')",
  },
];

/** A username and password, or an API key, each given once. */
const searchCredentials: Check = (sink, path, { at }) => {
  if (!isJsonObject(sink)) return;
  if (sink.password !== undefined && sink.passwordFile !== undefined)
    at(
      [...path, 'password'],
      'give the password either as password (from an environment variable) or as passwordFile, not both',
    );
  if (sink.apiKey !== undefined && sink.apiKeyFile !== undefined)
    at(
      [...path, 'apiKey'],
      'give the API key either as apiKey (from an environment variable) or as apiKeyFile, not both',
    );
  const hasKey = sink.apiKey !== undefined || sink.apiKeyFile !== undefined;
  const hasPassword = sink.password !== undefined || sink.passwordFile !== undefined;
  if (hasKey && (sink.username !== undefined || hasPassword))
    at(path, 'authenticate either with username and password or with an API key, not both');
  else if (hasPassword && sink.username === undefined) at(path, 'a password needs username too');
  else if (sink.username !== undefined && !hasPassword)
    at(path, 'username needs password (from an environment variable) or passwordFile');
};

/** The keys that give a sink credentials, in the order they are named. */
const SEARCH_CREDENTIAL_KEYS = ['username', 'password', 'passwordFile', 'apiKey', 'apiKeyFile'] as const;

/**
 * Credentials never cross the network unencrypted unless the file says the network is encrypted
 * otherwise (as Kafka's SASL without TLS), and one Authorization header: theirs or the headers'.
 */
const searchCredentialsSent: Check = (sink, path, { at }) => {
  if (!isJsonObject(sink)) return;
  const key = SEARCH_CREDENTIAL_KEYS.find((name) => sink[name] !== undefined);
  if (key === undefined) return;
  const scheme = typeof sink.url === 'string' ? parseHttpUrl(sink.url).url?.protocol : undefined;
  if (scheme === 'http:' && sink.allowPlaintextCredentials !== true)
    at(
      [...path, key],
      'the credentials would cross the network unencrypted (an http:// URL): use https://, or allowPlaintextCredentials: true if the network is encrypted otherwise',
    );
  const header = isJsonObject(sink.headers)
    ? Object.keys(sink.headers).find((name) => name.toLowerCase() === 'authorization')
    : undefined;
  if (header !== undefined)
    at(
      [...path, 'headers', header],
      `${key.startsWith('apiKey') ? 'apiKey sets' : 'username and password set'} the Authorization header: give the credentials one way, not both`,
    );
};

export const searchChecks: Checks = [
  [[], searchCredentials],
  [[], searchCredentialsSent],
];

export function searchSpecOf(
  input: SearchEntry,
  common: CommonEntrySpec,
  { readFile, problem }: EntryContext,
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
  // One in headers: is refused by the entry's checks (searchCredentialsSent); one in headersFile is found here.
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

/** The URL, the credentials (basic or an API key), every header, a client key. */
export function credentialsOfSearch(spec: SearchSinkSpec): Credential[] {
  const auth: Credential[] = !spec.auth
    ? []
    : 'apiKey' in spec.auth
      ? [{ kind: 'header', value: `ApiKey ${spec.auth.apiKey}` }]
      : [{ kind: 'basic', user: spec.auth.username, password: spec.auth.password }];
  return [
    { kind: 'url', value: spec.url },
    ...auth,
    ...headerCredentials(spec.headers),
    ...secretCredentials(spec.tls?.key),
  ];
}
