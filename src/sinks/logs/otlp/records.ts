// kubediff's events as OpenTelemetry log records (docs/sinks.md, "OpenTelemetry"), as plain data for the
// encoder: the one place for the mapping. Compatible with the Collector's k8sobjects receiver
// (`k8s.namespace.name` on the resource, `k8s.resource.name`, `event.domain`, `event.name`, a body of
// `type` and `object`), plus the semantic conventions for Kubernetes and kubediff's `kubediff.*` attributes.
import {
  type EventType,
  type KubediffEvent,
  qualifiedResource,
  type Verdict,
} from '../../../events/event.ts';
import { groupOf } from '../../../kube/types.ts';
import type { DigestPayload } from '../../core/digest.ts';

/** A log attribute value: OTLP has strings, numbers, booleans and arrays of them. */
export type AttributeValue = string | number | boolean | string[];

/** What the encoder needs of a record, apart from its resource and scope. */
export interface LogRecordData {
  /**
   * Resource attributes: service.name, k8s.cluster.name and k8s.namespace.name (those two tell resources
   * apart: records with the same share a resource in the request).
   */
  resource: Record<string, string>;
  attributes: Record<string, AttributeValue>;
  /** The event (or digest) itself, as a structured body. */
  body: unknown;
  /** Epoch milliseconds of the change. */
  timeMs: number;
  severityNumber: number;
  severityText: string;
}

/** OpenTelemetry's severity numbers (logs data model): INFO is 9, WARN 13, ERROR 17. */
const SEVERITY = {
  INFO: 9,
  WARN: 13,
  ERROR: 17,
} as const;

/**
 * Additions and updates are INFO; a deletion is WARN (something went away), and so is a digest (events
 * arrived faster than the receiver took them, and were summarized).
 */
const SEVERITY_BY_TYPE: Record<EventType | 'DIGEST', keyof typeof SEVERITY> = {
  ADDED: 'INFO',
  UPDATED: 'INFO',
  DELETED: 'WARN',
  DIGEST: 'WARN',
};

/** An OUTCOME's severity is its verdict's: a rollout that failed is an ERROR, one degraded a WARN. */
const SEVERITY_BY_VERDICT: Record<Verdict, keyof typeof SEVERITY> = {
  healthy: 'INFO',
  superseded: 'INFO',
  unknown: 'WARN',
  degraded: 'WARN',
  failed: 'ERROR',
};

/**
 * The built-in kinds (by `group/Kind`; the core group is '') whose name and uid the semantic conventions
 * give attributes of their own: k8s.<this>.name, k8s.<this>.uid. A custom resource of the same kind name
 * in another group gets none.
 */
const SEMCONV_KINDS: Record<string, string> = {
  '/Pod': 'pod',
  '/Namespace': 'namespace',
  '/Node': 'node',
  '/ReplicationController': 'replicationcontroller',
  '/ResourceQuota': 'resourcequota',
  'apps/ReplicaSet': 'replicaset',
  'apps/Deployment': 'deployment',
  'apps/StatefulSet': 'statefulset',
  'apps/DaemonSet': 'daemonset',
  'batch/Job': 'job',
  'batch/CronJob': 'cronjob',
  'autoscaling/HorizontalPodAutoscaler': 'hpa',
};

/** The service that writes the records: OTLP backends file records under service.name. */
export const SERVICE_NAME = 'kubediff';

export function eventRecord(event: KubediffEvent): LogRecordData {
  const { object, cluster } = event;
  const resource: Record<string, string> = { 'service.name': SERVICE_NAME };
  if (cluster) resource['k8s.cluster.name'] = cluster;
  if (object.namespace) resource['k8s.namespace.name'] = object.namespace;
  const attributes: Record<string, AttributeValue> = {
    // As the k8sobjects receiver writes them.
    'k8s.resource.name': object.resource,
    'event.domain': 'k8s',
    'event.name': object.name,
    // kubediff's own: what the event's JSON says, flattened for indexing.
    'kubediff.event.id': event.id,
    'kubediff.event.type': event.type,
    'kubediff.object.kind': object.kind,
    'kubediff.object.api_version': object.apiVersion,
    'kubediff.object.resource': qualifiedResource(event),
    'kubediff.object.uid': object.uid,
  };
  const semconv = SEMCONV_KINDS[`${groupOf(object.apiVersion)}/${object.kind}`];
  if (semconv) {
    attributes[`k8s.${semconv}.name`] = object.name;
    attributes[`k8s.${semconv}.uid`] = object.uid;
  }
  const user = event.by?.user?.username;
  if (user) attributes['kubediff.by.user'] = user;
  const managers = event.by?.managers?.map((manager) => manager.manager);
  if (managers?.length) attributes['kubediff.by.managers'] = managers;
  if (event.type === 'OUTCOME') attributes['kubediff.outcome.verdict'] = event.verdict;
  const paths = event.type === 'OUTCOME' ? undefined : event.changes?.map((change) => change.path);
  if (paths?.length) attributes['kubediff.changes.paths'] = paths;
  if (event.offline) attributes['kubediff.offline'] = true;
  const severity =
    event.type === 'OUTCOME' ? SEVERITY_BY_VERDICT[event.verdict] : SEVERITY_BY_TYPE[event.type];
  return {
    resource,
    attributes,
    body: event,
    timeMs: Date.parse(event.time),
    severityNumber: SEVERITY[severity],
    severityText: severity,
  };
}

export function digestRecord(digest: DigestPayload): LogRecordData {
  const { cluster } = digest;
  return {
    resource: { 'service.name': SERVICE_NAME, ...(cluster ? { 'k8s.cluster.name': cluster } : {}) },
    attributes: {
      'event.domain': 'k8s',
      'kubediff.event.id': digest.id,
      'kubediff.event.type': 'DIGEST',
      'kubediff.digest.count': digest.count,
    },
    body: digest,
    timeMs: Date.parse(digest.to),
    severityNumber: SEVERITY.WARN,
    severityText: 'WARN',
  };
}
