// The parts of the config file's JSON Schema that sink types' entries share (src/config/schema.ts
// assembles the file's schema from them and from each type's fragment, src/sinks/registry.ts): a sink's
// filter, the keys every entry has, those of the sinks that deliver, headers and TLS files.

export const stringList = { type: 'array', items: { type: 'string' } } as const;

/** A list of strings of one format (src/config/formats.ts names them all). */
export function listOf<F extends string>(format: F) {
  return { type: 'array', items: { type: 'string', format } } as const;
}

/** A duration (10s, 5m). */
export const duration = { type: 'string', format: 'duration' } as const;
/** A duration where 0 means something (at once). */
export const durationOrZero = { type: 'string', format: 'duration-or-zero' } as const;
/** A size (5MB). */
export const size = { type: 'string', format: 'size' } as const;

/** An `ignore:`/`only:`/`redact:` rule: a JSON Pointer, or one with the resources and managers it is for. */
export const pathRule = {
  type: ['string', 'object'],
  format: 'ignore-path',
  properties: {
    path: { type: 'string', format: 'ignore-path' },
    resources: listOf('resource-name'),
    managers: listOf('manager-name'),
  },
  required: ['path'],
  additionalProperties: false,
} as const;

/** A sink's filter may ask for OUTCOMEs too (docs/outcomes.md). */
const filterEventTypes = {
  type: 'array',
  minItems: 1,
  items: {
    type: 'string',
    enum: ['added', 'updated', 'deleted', 'outcome', 'ADDED', 'UPDATED', 'DELETED', 'OUTCOME'],
  },
} as const;

export const filterSchema = {
  type: 'object',
  properties: {
    namespaces: listOf('namespace'),
    excludeNamespaces: listOf('namespace'),
    resources: listOf('resource-name'),
    excludeResources: listOf('resource-name'),
    events: filterEventTypes,
    ignore: { type: 'array', items: pathRule },
    only: { type: 'array', items: pathRule },
    managers: listOf('manager-name'),
    excludeManagers: listOf('manager-name'),
    // Who made the change (the audit webhook, docs/audit.md): usernames, globs.
    users: stringList,
    excludeUsers: stringList,
  },
  additionalProperties: false,
} as const;

/** The keys of every entry. */
export const commonKeys = {
  name: { type: 'string' },
  filter: filterSchema,
  stories: { type: 'boolean' },
} as const;

/** The keys of every entry that delivers (all but a type whose component says `delivers: false`). */
export const deliveryKeys = {
  timeout: duration,
  deadLetter: { type: 'string' },
} as const;

/** Headers by name: each name a token, none of those kubediff sets itself. */
export const headerMap = {
  type: 'object',
  propertyNames: { format: 'header-name' },
  additionalProperties: { type: 'string' },
} as const;

/** A receiver's TLS beyond an https:// URL's defaults: a private CA, a client certificate, a server name. */
export const tlsFiles = {
  type: 'object',
  properties: {
    caFile: { type: 'string' },
    certFile: { type: 'string' },
    keyFile: { type: 'string' },
    serverName: { type: 'string' },
  },
  // A client certificate is the pair.
  dependentRequired: { certFile: ['keyFile'], keyFile: ['certFile'] },
  additionalProperties: false,
} as const;

/** What the batch sinks (OTLP, OpenSearch, Elasticsearch) share: common keys without stories. */
export const batchSinkKeys = {
  name: { type: 'string' },
  filter: filterSchema,
  ...deliveryKeys,
  headers: headerMap,
  // A file of `Name: value` lines (a token mounted from a Secret).
  headersFile: { type: 'string' },
  tls: tlsFiles,
  batch: { type: 'integer', minimum: 1, maximum: 10000 },
  // Bytes of the events per request, a size (5MB).
  batchBytes: size,
  queueCapacity: { type: 'integer', minimum: 1 },
} as const;
