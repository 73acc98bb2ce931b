// An admission webhook request's body (an `admission.k8s.io/v1` AdmissionReview) read for what the join
// needs: the operation, the resource and subresource, namespace and name, the object's uid and its old
// resourceVersion, the user (username, groups, uid: never `extra`, which carries token and credential
// ids) and the request uid the answer must echo. The object (a DELETE's old object) is handed out only to
// be digested (admission-server.ts) and is garbage once the request is answered: a Secret's values in a
// review are never kept, logged or stored. Strings kept are bounded (record-fields.ts).

import type { UserInfo } from '../../events/event.ts';
import { isJsonObject, type JsonObject } from '../../kube/types.ts';
import { boundedText as text, userInfoOf } from '../record-fields.ts';
import { ADMISSION_OPERATIONS, type AdmissionOperation } from './admission-match.ts';

export class AdmissionBodyError extends Error {}

/**
 * Why a review names no change kubediff can report (kubediff_admission_reviews_ignored_total{reason}):
 * digest_failed is an object that cannot be digested (it could not be checked); the last three are of
 * large reviews, answered from their head (review-head.ts) before they were read whole in the admission
 * thread (admission-thread.ts): the body was not an AdmissionReview after all, the thread's bound left no
 * room for it, or the thread stopped before it was done.
 */
export const IGNORE_REASONS = [
  'dry_run',
  'operation',
  'no_object',
  'not_watched',
  'digest_failed',
  'unreadable',
  'thread_busy',
  'thread_failed',
] as const;
export type IgnoreReason = (typeof IGNORE_REASONS)[number];

/** The write a review is about. `object` is the reviewed object, to be digested and dropped. */
export interface ReviewedWrite {
  operation: AdmissionOperation;
  /** The resource (request.resource), its subresource, and the kind of the object reviewed (request.kind). */
  group: string;
  version: string;
  resource: string;
  subresource?: string;
  kind: { group: string; version: string; kind: string };
  namespace?: string;
  name?: string;
  uid: string;
  oldResourceVersion?: string;
  user: UserInfo;
  /** CREATE, UPDATE: the object as it will be stored. Never kept. */
  object?: JsonObject;
  /** DELETE: the object as it is before the deletion. Never kept. */
  oldObject?: JsonObject;
}

export type ReviewReading =
  | { requestUID: string; apiVersion: string; write: ReviewedWrite }
  | { requestUID: string; apiVersion: string; ignored: IgnoreReason };

function metadataOf(value: unknown): JsonObject | undefined {
  return isJsonObject(value) && isJsonObject(value.metadata) ? value.metadata : undefined;
}

function groupVersion(value: unknown): { group: string; version: string } & JsonObject {
  const object = isJsonObject(value) ? value : {};
  return { ...object, group: text(object.group) ?? '', version: text(object.version) ?? '' };
}

/** The review in a body; throws AdmissionBodyError for a body that is not an AdmissionReview v1 request. */
export function readAdmissionReview(body: string): ReviewReading {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new AdmissionBodyError('the body is not JSON');
  }
  if (
    !isJsonObject(parsed) ||
    parsed.kind !== 'AdmissionReview' ||
    parsed.apiVersion !== 'admission.k8s.io/v1' ||
    !isJsonObject(parsed.request)
  ) {
    throw new AdmissionBodyError('the body is not an admission.k8s.io/v1 AdmissionReview');
  }
  const request = parsed.request;
  // Echoed whole in the answer, as the API server requires: not cut.
  const requestUID = typeof request.uid === 'string' && request.uid !== '' ? request.uid : undefined;
  if (requestUID === undefined || requestUID.length > 128) {
    throw new AdmissionBodyError('the AdmissionReview has no request.uid');
  }
  const reading = { requestUID, apiVersion: parsed.apiVersion };
  if (request.dryRun === true) return { ...reading, ignored: 'dry_run' };
  const operation = ADMISSION_OPERATIONS.find((known) => known === request.operation);
  if (operation === undefined) return { ...reading, ignored: 'operation' };
  const resource = groupVersion(request.resource);
  const resourceName = text(resource.resource);
  const user = userInfoOf(request.userInfo);
  const object =
    operation === 'DELETE' ? undefined : isJsonObject(request.object) ? request.object : undefined;
  const oldObject = operation === 'DELETE' && isJsonObject(request.oldObject) ? request.oldObject : undefined;
  const old = metadataOf(request.oldObject);
  // A subresource create (a Binding, an Eviction) reviews an object of its own, without the uid.
  const uid = text(metadataOf(object)?.uid) ?? text(old?.uid);
  if (resourceName === undefined || user === undefined || uid === undefined) {
    return { ...reading, ignored: 'no_object' };
  }
  const kind = groupVersion(request.kind);
  const subresource = text(request.subResource);
  const namespace = text(request.namespace);
  const name = text(request.name);
  const oldResourceVersion = operation === 'CREATE' ? undefined : text(old?.resourceVersion);
  return {
    ...reading,
    write: {
      operation,
      group: resource.group,
      version: resource.version,
      resource: resourceName,
      ...(subresource ? { subresource } : {}),
      kind: { group: kind.group, version: kind.version, kind: text(kind.kind) ?? '' },
      ...(namespace ? { namespace } : {}),
      ...(name ? { name } : {}),
      uid,
      ...(oldResourceVersion ? { oldResourceVersion } : {}),
      user,
      ...(object ? { object } : {}),
      ...(oldObject ? { oldObject } : {}),
    },
  };
}

/** The answer: allowed, nothing changed, nothing to warn about; the same apiVersion and request uid. */
export function allowedAnswer(requestUID: string, apiVersion: string): string {
  return JSON.stringify({
    apiVersion,
    kind: 'AdmissionReview',
    response: { uid: requestUID, allowed: true },
  });
}
