// The fields a record of "who" keeps from what a sender posts (an audit event, an admission review, a
// peer's records), each bounded whatever the sender puts in it: strings cut at MAX_TEXT characters, at
// most MAX_GROUPS groups. A record's size is bounded by construction.

import type { UserInfo } from '../events/event.ts';
import { isJsonObject } from '../kube/types.ts';

const MAX_TEXT = 256;
const MAX_GROUPS = 32;

/** A non-empty string, cut to MAX_TEXT; undefined for anything else. */
export function boundedText(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value.slice(0, MAX_TEXT) : undefined;
}

/** A user (username, at most MAX_GROUPS groups, uid); undefined without a username. `extra` is never kept. */
export function userInfoOf(value: unknown): UserInfo | undefined {
  if (!isJsonObject(value)) return undefined;
  const username = boundedText(value.username);
  if (username === undefined) return undefined;
  const groups = Array.isArray(value.groups)
    ? value.groups.slice(0, MAX_GROUPS).flatMap((group) => boundedText(group) ?? [])
    : [];
  const uid = boundedText(value.uid);
  return { username, ...(groups.length > 0 ? { groups } : {}), ...(uid ? { uid } : {}) };
}

/** A list of strings, at most `max` of them, each bounded. */
export function boundedTexts(value: unknown, max: number): string[] {
  return Array.isArray(value) ? value.slice(0, max).flatMap((item) => boundedText(item) ?? []) : [];
}
