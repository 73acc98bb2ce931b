// An audit webhook request's body (an `audit.k8s.io/v1` EventList, as the API server's webhook backend
// sends it in batch and in blocking mode) turned into the few fields the join needs. Request and response
// objects are read only for the response's uid and resourceVersion: nothing else of them is copied, so
// a Secret's values in them are garbage once the request is answered. Every string kept is capped, so a
// record's size is bounded whatever the sender puts in it.

import type { AuditRecord } from '../events/audit-join.ts';
import type { UserInfo } from '../events/event.ts';
import { isJsonObject } from '../kube/types.ts';

/**
 * How the audit endpoint (audit-server.ts) answers a request, one word each: counted per outcome in
 * kubediff_audit_requests_total.
 */
export const AUDIT_REQUEST_OUTCOMES = [
  'accepted',
  'unauthorized',
  'forbidden',
  'bad_request',
  'too_large',
  'busy',
  'not_allowed',
] as const;

export type AuditRequestOutcome = (typeof AUDIT_REQUEST_OUTCOMES)[number];

/** Writes only: reads, watches and proxy calls change nothing. */
const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
const MAX_TEXT = 256;
const MAX_GROUPS = 32;
const MAX_SOURCE_IPS = 8;

export class AuditBodyError extends Error {}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value.slice(0, MAX_TEXT) : undefined;
}

function userOf(value: unknown): UserInfo | undefined {
  if (!isJsonObject(value)) return undefined;
  const username = text(value.username);
  if (username === undefined) return undefined;
  const groups = Array.isArray(value.groups)
    ? value.groups.slice(0, MAX_GROUPS).flatMap((group) => text(group) ?? [])
    : [];
  const uid = text(value.uid);
  return { username, ...(groups.length > 0 ? { groups } : {}), ...(uid ? { uid } : {}) };
}

/** uid and resourceVersion of the object a write produced; a Status (some deletes) names only the uid. */
function producedObject(value: unknown): { uid?: string; resourceVersion?: string } {
  if (!isJsonObject(value)) return {};
  if (value.kind === 'Status') {
    const uid = isJsonObject(value.details) ? text(value.details.uid) : undefined;
    return uid ? { uid } : {};
  }
  const metadata = isJsonObject(value.metadata) ? value.metadata : {};
  const uid = text(metadata.uid);
  const resourceVersion = text(metadata.resourceVersion);
  return { ...(uid ? { uid } : {}), ...(uid && resourceVersion ? { resourceVersion } : {}) };
}

/** One audit event as a record, or undefined when it says nothing about a change (a read, a failure, a stage before the response). */
function auditRecordOf(item: unknown): AuditRecord | undefined {
  if (!isJsonObject(item)) return undefined;
  if (item.stage !== 'ResponseComplete') return undefined;
  const verb = text(item.verb);
  if (verb === undefined || !WRITE_VERBS.has(verb)) return undefined;
  const status = isJsonObject(item.responseStatus) ? item.responseStatus.code : undefined;
  if (typeof status === 'number' && (status < 200 || status >= 300)) return undefined;
  const ref = isJsonObject(item.objectRef) ? item.objectRef : undefined;
  const resource = text(ref?.resource);
  const auditID = text(item.auditID);
  const user = userOf(item.user);
  if (!ref || resource === undefined || auditID === undefined || user === undefined) return undefined;
  const time = Date.parse(String(item.stageTimestamp ?? item.requestReceivedTimestamp ?? ''));
  const subresource = text(ref.subresource);
  const namespace = text(ref.namespace);
  const name = text(ref.name);
  // A subresource's response (a Binding's Status, a Scale) is not the object the event is about.
  const produced = subresource ? {} : producedObject(item.responseObject);
  const impersonatedUser = userOf(item.impersonatedUser);
  const userAgent = text(item.userAgent);
  const sourceIPs = Array.isArray(item.sourceIPs)
    ? item.sourceIPs.slice(0, MAX_SOURCE_IPS).flatMap((ip) => text(ip) ?? [])
    : [];
  return {
    auditID,
    verb,
    group: text(ref.apiGroup) ?? '',
    resource,
    ...(subresource ? { subresource } : {}),
    ...(namespace ? { namespace } : {}),
    ...(name ? { name } : {}),
    ...produced,
    user,
    ...(impersonatedUser ? { impersonatedUser } : {}),
    ...(userAgent ? { userAgent } : {}),
    ...(sourceIPs.length > 0 ? { sourceIPs } : {}),
    time: Number.isNaN(time) ? Date.now() : time,
  };
}

/** The records of an EventList body; throws AuditBodyError for a body that is not one. */
export function auditRecordsOf(body: string): AuditRecord[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new AuditBodyError('the body is not JSON');
  }
  if (!isJsonObject(parsed) || parsed.kind !== 'EventList' || !Array.isArray(parsed.items)) {
    throw new AuditBodyError('the body is not an audit.k8s.io EventList');
  }
  if (typeof parsed.apiVersion !== 'string' || !parsed.apiVersion.startsWith('audit.k8s.io/')) {
    throw new AuditBodyError('the body is not an audit.k8s.io EventList');
  }
  return parsed.items.flatMap((item) => auditRecordOf(item) ?? []);
}
