// An audit webhook request's body (an `audit.k8s.io/v1` EventList, as the API server's webhook backend
// sends it in batch and in blocking mode) turned into the few fields the join needs. Request and response
// objects are read only for the response's uid and resourceVersion: nothing else of them is copied, so
// a Secret's values in them are garbage once the request is answered. Every string kept is capped, so a
// record's size is bounded whatever the sender puts in it.

import { isJsonObject } from '../../kube/types.ts';
import { boundedTexts, boundedText as text, userInfoOf as userOf } from '../record-fields.ts';
import type { AuditRecord } from './audit-match.ts';

/** Writes only: reads, watches and proxy calls change nothing. */
const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
const MAX_SOURCE_IPS = 8;

export class AuditBodyError extends Error {}

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
  const sourceIPs = boundedTexts(item.sourceIPs, MAX_SOURCE_IPS);
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
