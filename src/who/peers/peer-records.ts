// What one replica posts to the others (peer-forwarder.ts): the records of "who" it received, as the join
// keeps them (no object, no body: names, uids, versions, users, a digest). The receiver reads them as
// strictly as the API server's bodies, every field bounded (record-fields.ts): a peer is authenticated,
// not trusted to be bug-free.

import { isJsonObject, type JsonObject } from '../../kube/types.ts';
import { ADMISSION_OPERATIONS, type AdmissionRecord } from '../admission/admission-match.ts';
import type { AuditRecord } from '../audit/audit-match.ts';
import { boundedTexts, boundedText as text, userInfoOf } from '../record-fields.ts';

const KIND = 'KubediffPeerRecords';
const MAX_SOURCE_IPS = 8;

export interface PeerRecords {
  audit: AuditRecord[];
  admission: AdmissionRecord[];
}

export class PeerBodyError extends Error {}

export function encodePeerRecords(records: PeerRecords): string {
  return JSON.stringify({ kind: KIND, v: 1, audit: records.audit, admission: records.admission });
}

/** The records of a peer's body; throws PeerBodyError for a body that is not one. Malformed records are skipped. */
export function readPeerRecords(body: string): PeerRecords {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new PeerBodyError('the body is not JSON');
  }
  if (!isJsonObject(parsed) || parsed.kind !== KIND || parsed.v !== 1) {
    throw new PeerBodyError(`the body is not a ${KIND} v1 document`);
  }
  const list = (value: unknown) => (Array.isArray(value) ? value.filter(isJsonObject) : []);
  return {
    audit: list(parsed.audit).flatMap((item) => auditRecordOf(item) ?? []),
    admission: list(parsed.admission).flatMap((item) => admissionRecordOf(item) ?? []),
  };
}

function optional<K extends string>(key: K, value: unknown): Partial<Record<K, string>> {
  const bounded = text(value);
  return bounded === undefined ? {} : ({ [key]: bounded } as Record<K, string>);
}

function timeOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function auditRecordOf(item: JsonObject): AuditRecord | undefined {
  const auditID = text(item.auditID);
  const verb = text(item.verb);
  const resource = text(item.resource);
  const user = userInfoOf(item.user);
  const time = timeOf(item.time);
  if (!auditID || !verb || !resource || !user || time === undefined) return undefined;
  const impersonatedUser = userInfoOf(item.impersonatedUser);
  const sourceIPs = boundedTexts(item.sourceIPs, MAX_SOURCE_IPS);
  return {
    auditID,
    verb,
    group: text(item.group) ?? '',
    resource,
    ...optional('subresource', item.subresource),
    ...optional('namespace', item.namespace),
    ...optional('name', item.name),
    ...optional('uid', item.uid),
    ...optional('resourceVersion', item.resourceVersion),
    user,
    ...(impersonatedUser ? { impersonatedUser } : {}),
    ...optional('userAgent', item.userAgent),
    ...(sourceIPs.length > 0 ? { sourceIPs } : {}),
    time,
  };
}

function admissionRecordOf(item: JsonObject): AdmissionRecord | undefined {
  const reviewUID = text(item.reviewUID);
  const operation = ADMISSION_OPERATIONS.find((known) => known === item.operation);
  const resource = text(item.resource);
  const uid = text(item.uid);
  const user = userInfoOf(item.user);
  const time = timeOf(item.time);
  if (!reviewUID || !operation || !resource || !uid || !user || time === undefined) return undefined;
  return {
    reviewUID,
    operation,
    group: text(item.group) ?? '',
    resource,
    ...optional('subresource', item.subresource),
    ...optional('namespace', item.namespace),
    ...optional('name', item.name),
    uid,
    ...optional('oldResourceVersion', item.oldResourceVersion),
    ...optional('digest', item.digest),
    ...optional('oldDigest', item.oldDigest),
    ...(Number.isSafeInteger(item.replicas) ? { replicas: item.replicas as number } : {}),
    user,
    time,
  };
}
