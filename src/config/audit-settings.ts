// The audit webhook (docs/audit.md): where kubediff receives the API server's audit events, how the
// sender authenticates, how long a change waits for its record, and the bounds. Flags win over the
// config file's `audit:` block, key by key; the bearer token comes from the file's `audit.token` (with
// ${VAR}) or KUBEDIFF_AUDIT_TOKEN, never from a flag (a flag shows in `ps`).

import { parseDurationSetting } from '../util/duration.ts';
import type { Env } from '../util/environment.ts';
import { UsageError } from '../util/errors.ts';
import { parseSize } from '../util/size.ts';
import { AUDIT_SOURCE_DEFAULTS } from '../who/audit/audit-match.ts';
import type { AuditSettings } from '../who/settings.ts';
import { WHO_JOIN_DEFAULTS } from '../who/who-join.ts';
import { flagDurationMs } from './flag-values.ts';
import type { ConfigInput } from './schema.ts';
import { webhookEndpointFrom } from './webhook-endpoint-settings.ts';

export interface RawAuditFlags {
  auditListen?: string;
  auditCert?: string;
  auditKey?: string;
  auditClientCa?: string;
  auditClientName?: string[];
  auditWait?: string;
  ignoreUser?: string[];
}

/** The audit webhook's settings, or undefined when it is not configured (no wait, no join). */
export function auditSettingsFrom(
  flags: RawAuditFlags,
  file: ConfigInput['audit'] | undefined,
  env: Env,
  /** A body's bound unless audit.maxRequestSize is given: its share of the heap (util/memory-budget.ts). */
  defaultRequestBytes: number,
): AuditSettings | undefined {
  if (flags.auditWait !== undefined && !flags.auditListen?.trim() && !file?.listen) {
    // The admission webhook has a wait of its own; with both on, a change waits the longer (docs/who.md).
    throw new UsageError(
      "--audit-wait is the audit webhook's wait: add --audit-listen <addr>; the admission webhook's is admission.wait in the config file (docs/who.md).",
    );
  }
  const endpoint = webhookEndpointFrom('audit', {
    flags: {
      listen: flags.auditListen,
      cert: flags.auditCert,
      key: flags.auditKey,
      clientCa: flags.auditClientCa,
    },
    listenerFlags: [
      ['--audit-cert', flags.auditCert],
      ['--audit-key', flags.auditKey],
      ['--audit-client-ca', flags.auditClientCa],
      ['--audit-client-name', flags.auditClientName?.[0]],
      ['--audit-wait', flags.auditWait],
    ],
    file,
    envToken: env.KUBEDIFF_AUDIT_TOKEN,
  });
  if (!endpoint) return undefined;
  const { clientCAFile, token } = endpoint;
  const clientNames = (flags.auditClientName ?? file?.clientNames ?? [])
    .map((name) => name.trim())
    .filter(Boolean);
  if (clientNames.length > 0 && !clientCAFile) {
    throw new UsageError(
      `${flags.auditClientName ? '--audit-client-name' : 'audit.clientNames'} names the client certificate the API server presents: give its CA with --audit-client-ca <file> (or audit.clientCAFile) too.`,
    );
  }
  if (!clientCAFile && !token) {
    throw new UsageError(
      "the audit webhook must authenticate its sender: give --audit-client-ca <file> (the CA of the API server's client certificate), or a bearer token in $KUBEDIFF_AUDIT_TOKEN, or both.",
    );
  }
  const waitMs =
    flags.auditWait !== undefined
      ? flagDurationMs('--audit-wait', ['audit', 'wait'], flags.auditWait)
      : file?.wait !== undefined
        ? parseDurationSetting('audit.wait', file.wait, { allowZero: true })
        : WHO_JOIN_DEFAULTS.waitMs;
  return {
    ...endpoint,
    ...(clientNames.length > 0 ? { clientNames } : {}),
    waitMs,
    windowMs:
      file?.window !== undefined
        ? parseDurationSetting('audit.window', file.window)
        : AUDIT_SOURCE_DEFAULTS.windowMs,
    maxPending: file?.maxPending ?? WHO_JOIN_DEFAULTS.maxPending,
    maxRecords: file?.maxRecords ?? AUDIT_SOURCE_DEFAULTS.maxRecords,
    maxRequestBytes:
      file?.maxRequestSize !== undefined
        ? parseSize('audit.maxRequestSize', file.maxRequestSize)
        : defaultRequestBytes,
  };
}

/** --ignore-user, or the file's `ignoreUsers:` (the flag replaces the list, like -n). */
export function ignoredUsersFrom(flags: RawAuditFlags, config: ConfigInput): string[] {
  const users = (flags.ignoreUser ?? config.ignoreUsers ?? []).map((user) => user.trim()).filter(Boolean);
  return users;
}
