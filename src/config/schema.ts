// The JSON Schema of the config file (validated with ajv). Shapes and types live here; what a schema
// cannot say well (JSON Pointers, label selectors, URLs, durations, resource names) is checked in
// file.ts with the same line-and-column messages.

const stringList = { type: 'array', items: { type: 'string' } } as const;
const duration = { type: 'string', $comment: 'duration' } as const;

const pathRule = {
  type: ['string', 'object'],
  properties: {
    path: { type: 'string' },
    resources: stringList,
  },
  required: ['path'],
  additionalProperties: false,
} as const;

const eventTypes = {
  type: 'array',
  items: { type: 'string', enum: ['added', 'updated', 'deleted', 'ADDED', 'UPDATED', 'DELETED'] },
} as const;

const filterSchema = {
  type: 'object',
  properties: {
    namespaces: stringList,
    excludeNamespaces: stringList,
    resources: stringList,
    excludeResources: stringList,
    events: eventTypes,
    ignore: { type: 'array', items: pathRule },
    only: { type: 'array', items: pathRule },
  },
  additionalProperties: false,
} as const;

const common = {
  type: { type: 'string' },
  name: { type: 'string' },
  filter: filterSchema,
} as const;

const http = {
  timeout: duration,
  deadLetter: { type: 'string' },
} as const;

export const sinkSchemas = {
  stdout: {
    type: 'object',
    properties: {
      ...common,
      format: { type: 'string', enum: ['json', 'pretty'] },
      color: { type: 'boolean' },
    },
    additionalProperties: false,
  },
  webhook: {
    type: 'object',
    properties: {
      ...common,
      ...http,
      url: { type: 'string' },
      headers: { type: 'object', additionalProperties: { type: 'string' } },
      secret: { type: 'string' },
      batch: { type: 'integer', minimum: 1, maximum: 10000 },
      batchWait: duration,
      maxRequestsPerSecond: { type: 'number', exclusiveMinimum: 0 },
    },
    required: ['url'],
    additionalProperties: false,
  },
  slack: {
    type: 'object',
    properties: {
      ...common,
      ...http,
      webhookUrl: { type: 'string' },
      token: { type: 'string' },
      channel: { type: 'string' },
      apiUrl: { type: 'string' },
      minInterval: duration,
    },
    additionalProperties: false,
  },
} as const;

export const SINK_TYPES = Object.keys(sinkSchemas) as (keyof typeof sinkSchemas)[];

export const configSchema = {
  type: 'object',
  properties: {
    kubeconfig: { type: 'string' },
    context: { type: 'string' },
    clusterName: { type: 'string' },
    preset: { type: 'string', enum: ['default', 'quiet', 'everything'] },
    namespaces: stringList,
    excludeNamespaces: stringList,
    resources: stringList,
    excludeResources: stringList,
    selector: { type: 'string' },
    events: eventTypes,
    initial: { type: 'boolean' },
    status: { type: 'boolean' },
    ignore: { type: 'array', items: pathRule },
    only: { type: 'array', items: pathRule },
    redact: { type: 'array', items: pathRule },
    output: { type: 'string', enum: ['json', 'pretty', 'none'] },
    shutdownTimeout: duration,
    deadLetter: { type: 'string' },
    deadLetterMaxSize: { type: 'string' },
    deadLetterMaxFiles: { type: 'integer', minimum: 1, maximum: 1000 },
    state: {
      type: 'object',
      properties: {
        path: { type: 'string' },
        maxAge: { type: 'string' },
        maxEvents: { type: 'integer', minimum: 1 },
        maxSize: { type: 'string' },
      },
      required: ['path'],
      additionalProperties: false,
    },
    sinks: {
      type: 'array',
      items: {
        type: 'object',
        properties: { type: { type: 'string', enum: SINK_TYPES } },
        required: ['type'],
      },
    },
  },
  additionalProperties: false,
} as const;

// The config file as typed after validation.
export type PathRuleInput = string | { path: string; resources?: string[] };

export interface FilterInput {
  namespaces?: string[];
  excludeNamespaces?: string[];
  resources?: string[];
  excludeResources?: string[];
  events?: string[];
  ignore?: PathRuleInput[];
  only?: PathRuleInput[];
}

interface CommonSinkInput {
  name?: string;
  filter?: FilterInput;
}

interface StdoutSinkInput extends CommonSinkInput {
  type: 'stdout';
  format?: 'json' | 'pretty';
  color?: boolean;
}

interface WebhookSinkInput extends CommonSinkInput {
  type: 'webhook';
  url: string;
  headers?: Record<string, string>;
  secret?: string;
  batch?: number;
  batchWait?: string;
  maxRequestsPerSecond?: number;
  timeout?: string;
  deadLetter?: string;
}

interface SlackSinkInput extends CommonSinkInput {
  type: 'slack';
  webhookUrl?: string;
  token?: string;
  channel?: string;
  apiUrl?: string;
  minInterval?: string;
  timeout?: string;
  deadLetter?: string;
}

export type SinkInput = StdoutSinkInput | WebhookSinkInput | SlackSinkInput;

export interface ConfigInput {
  kubeconfig?: string;
  context?: string;
  clusterName?: string;
  preset?: 'default' | 'quiet' | 'everything';
  namespaces?: string[];
  excludeNamespaces?: string[];
  resources?: string[];
  excludeResources?: string[];
  selector?: string;
  events?: string[];
  initial?: boolean;
  status?: boolean;
  ignore?: PathRuleInput[];
  only?: PathRuleInput[];
  /** Paths whose values are replaced by a hash, like a Secret's (docs/config.md, "Redaction"). */
  redact?: PathRuleInput[];
  output?: 'json' | 'pretty' | 'none';
  shutdownTimeout?: string;
  deadLetter?: string;
  /** The cap of the dead-letter files (docs/sinks.md). */
  deadLetterMaxSize?: string;
  deadLetterMaxFiles?: number;
  /** --state and its retention (docs/state.md). */
  state?: { path: string; maxAge?: string; maxEvents?: number; maxSize?: string };
  sinks?: SinkInput[];
}
