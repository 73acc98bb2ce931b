// What "who" is configured by, as one: each source's config block, flags and settings (audit/config.ts,
// admission/config.ts), the peers they share records with (peers/config.ts), and the users whose changes
// are not reported (--ignore-user, `ignoreUsers:`: a who source names them). The config layer assembles
// the file's schema from whoSchemas and reads the settings with one call of whoSettingsFrom; the help
// lists WHO_FLAGS. A new who-source adds its block, flags and settings here (CONTRIBUTING.md).

import { stringList } from '../sinks/core/entry-schema.ts';
import type { Env } from '../util/environment.ts';
import type { FlagSpec } from '../util/flag-spec.ts';
import type { MemoryBounds } from '../util/memory-budget.ts';
import {
  ADMISSION_FLAGS,
  type AdmissionInput,
  admissionSchema,
  admissionSettingsFrom,
  type RawAdmissionFlags,
} from './admission/config.ts';
import {
  AUDIT_FLAGS,
  type AuditInput,
  auditSchema,
  auditSettingsFrom,
  type RawAuditFlags,
} from './audit/config.ts';
import { PEER_FLAGS, peersFrom, peersSchema, type RawPeerFlags } from './peers/config.ts';
import type { WhoSettings } from './settings.ts';

/** The config file's keys of "who", in the order the file's schema lists them. */
export const whoSchemas = {
  // The audit webhook (docs/audit.md): who made each change.
  audit: auditSchema,
  // The admission webhook (docs/who.md): who made each change, on any cluster.
  admission: admissionSchema,
  // The other replicas of a leader-elected pair, which get the records this one receives (docs/who.md).
  peers: peersSchema,
  ignoreUsers: stringList,
} as const;

/** The file's keys of "who", as read (the schema has checked them). */
export interface WhoInput {
  audit?: AuditInput | undefined;
  admission?: AdmissionInput | undefined;
  peers?: string | undefined;
  ignoreUsers?: readonly string[] | undefined;
}

/** The rows of "who" in the `Who changed it` help group, in order. */
export const WHO_FLAGS: readonly FlagSpec[] = [
  {
    flags: '--ignore-user <glob>',
    description: 'skip changes by this user (with a who webhook)',
    repeatable: true,
  },
  ...AUDIT_FLAGS,
  ...ADMISSION_FLAGS,
  ...PEER_FLAGS,
];

/** The values of WHO_FLAGS as commander hands them over. */
export interface RawWhoFlags extends RawAuditFlags, RawAdmissionFlags, RawPeerFlags {
  ignoreUser?: string[];
}

/**
 * The webhooks and the peers from the flags over the file's keys (undefined: not configured); each
 * webhook's body bound unless its block sets one is its share of the heap (util/memory-budget.ts).
 */
export function whoSettingsFrom(
  flags: RawWhoFlags,
  file: WhoInput,
  env: Env,
  memory: Pick<MemoryBounds, 'auditRequestBytes' | 'admissionRequestBytes'>,
): Pick<WhoSettings, 'audit' | 'admission' | 'peers'> {
  const audit = auditSettingsFrom(flags, file.audit, env, memory.auditRequestBytes);
  const admission = admissionSettingsFrom(flags, file.admission, env, memory.admissionRequestBytes);
  const peers = peersFrom(flags, file.peers, [admission?.listen, audit?.listen]);
  return { ...(audit ? { audit } : {}), ...(admission ? { admission } : {}), ...(peers ? { peers } : {}) };
}

/** --ignore-user, or the file's `ignoreUsers:` (the flag replaces the list, like -n). */
export function ignoredUsersFrom(flags: RawWhoFlags, file: WhoInput): string[] {
  return (flags.ignoreUser ?? file.ignoreUsers ?? []).map((user) => user.trim()).filter(Boolean);
}
