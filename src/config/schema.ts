// The JSON Schema of the config file (validated with ajv, schema-errors.ts), and the one source of its
// TypeScript types: they are derived from the schema (json-schema-to-ts, types only), so the two cannot
// drift apart. A value's `format:` (durations, sizes, names, selectors, addresses, URLs) is one of
// formats.ts; what spans keys is checked in semantic-checks.ts with the same line-and-column messages.
import type { FromSchema } from 'json-schema-to-ts';
import {
  duration,
  durationOrZero,
  type filterSchema,
  listOf,
  pathRule,
  size,
  stringList,
} from '../sinks/core/entry-schema.ts';
import { type RegisteredEntry, registeredSchemas } from '../sinks/registry.ts';
import { whoSchemas } from '../who/config.ts';

const eventTypes = {
  type: 'array',
  minItems: 1,
  items: { type: 'string', enum: ['added', 'updated', 'deleted', 'ADDED', 'UPDATED', 'DELETED'] },
} as const;

export const sinkSchemas = registeredSchemas();

export const SINK_TYPES = Object.keys(sinkSchemas) as (keyof typeof sinkSchemas)[];

export const configSchema = {
  type: 'object',
  properties: {
    kubeconfig: { type: 'string' },
    context: { type: 'string' },
    contexts: { ...stringList, minItems: 1 },
    allContexts: { type: 'boolean' },
    // Several clusters, each with its own kubeconfig, context and selection (docs/fleets.md).
    clusters: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        properties: {
          name: { type: 'string', minLength: 1 },
          context: { type: 'string', minLength: 1 },
          kubeconfig: { type: 'string', minLength: 1 },
          namespaces: listOf('cluster-namespace'),
          excludeNamespaces: listOf('cluster-namespace'),
          resources: listOf('resource-name'),
          excludeResources: listOf('resource-name'),
          selector: { type: 'string', format: 'label-selector' },
          optional: { type: 'boolean' },
          // A fleet's replica that alone watches it (docs/fleets.md).
          replica: { type: 'string', minLength: 1 },
        },
        additionalProperties: false,
      },
    },
    clusterName: { type: 'string' },
    preset: { type: 'string', enum: ['default', 'quiet', 'everything'] },
    namespaces: listOf('namespace'),
    excludeNamespaces: listOf('namespace'),
    resources: listOf('resource-name'),
    excludeResources: listOf('resource-name'),
    selector: { type: 'string', format: 'label-selector' },
    events: eventTypes,
    initial: { type: 'boolean' },
    status: { type: 'boolean' },
    ignore: { type: 'array', items: pathRule },
    only: { type: 'array', items: pathRule },
    redact: { type: 'array', items: pathRule },
    ignoreManagers: listOf('manager-name'),
    output: { type: 'string', enum: ['json', 'pretty', 'none'] },
    shutdownTimeout: durationOrZero,
    deadLetter: { type: 'string' },
    deadLetterMaxSize: size,
    deadLetterMaxFiles: { type: 'integer', minimum: 1, maximum: 1000 },
    state: {
      type: 'object',
      properties: {
        path: { type: 'string' },
        maxAge: { type: 'string', format: 'age' },
        maxEvents: { type: 'integer', minimum: 1 },
        maxSize: size,
        passwordFile: { type: 'string' },
      },
      required: ['path'],
      additionalProperties: false,
    },
    // What a ConfigMap or Secret change reaches (docs/used-by.md).
    usedBy: {
      type: 'object',
      properties: {
        enabled: { type: 'boolean' },
        maxObjects: { type: 'integer', minimum: 1, maximum: 100000000 },
      },
      additionalProperties: false,
    },
    outcomes: {
      type: 'object',
      properties: {
        enabled: { type: 'boolean' },
        timeout: duration,
      },
      additionalProperties: false,
    },
    stories: {
      type: 'object',
      properties: {
        window: duration,
        maxLength: duration,
        maxOpenEvents: { type: 'integer', minimum: 1, maximum: 1000000 },
        maxOpenSize: size,
      },
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
    // Who made each change: the audit and admission webhooks, their peers, the users not reported.
    ...whoSchemas,
    // One replica of a fleet that shares the clusters among its replicas (docs/fleets.md).
    fleet: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1 },
        replica: { type: 'string', minLength: 1 },
        replicaTimeout: duration,
      },
      required: ['name'],
      additionalProperties: false,
    },
    // The change history as a page (docs/ui.md): `watch` serves it beside the watch when `listen` is set.
    ui: {
      type: 'object',
      properties: {
        listen: { type: 'string', format: 'listen-address' },
        tokenFile: { type: 'string' },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;

// The config file as typed after validation: derived from the schemas above.
export type PathRuleInput = FromSchema<typeof pathRule>;
export type FilterInput = FromSchema<typeof filterSchema>;
export type SinkInput = RegisteredEntry;
/** Each sink is validated by its own schema (by `type`), so the file's schema only says it has one. */
export type ConfigInput = Omit<FromSchema<typeof configSchema>, 'sinks'> & { sinks?: SinkInput[] };
