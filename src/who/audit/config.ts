// What the audit webhook is configured by (docs/audit.md): its config block `audit:` (the schema fragment
// the file's schema is assembled from), its flags (as data), and its settings from both: where kubediff
// receives the API server's audit events, how the sender authenticates, how long a change waits for its
// record, and the bounds. Flags win over the block, key by key; the bearer token comes from the block's
// `token` (with ${VAR}) or KUBEDIFF_AUDIT_TOKEN, never from a flag (a flag shows in `ps`).

import type { FromSchema } from 'json-schema-to-ts';
import { duration, durationOrZero, size } from '../../sinks/core/entry-schema.ts';
import { parseDurationSetting } from '../../util/duration.ts';
import type { Env } from '../../util/environment.ts';
import { UsageError } from '../../util/errors.ts';
import type { FlagSpec } from '../../util/flag-spec.ts';
import { parseSize } from '../../util/size.ts';
import { checkedDurationMs, DURATION_OR_ZERO_FORMAT } from '../../util/value-format.ts';
import { webhookEndpointFrom, webhookEndpointKeys } from '../listener/endpoint-config.ts';
import type { AuditSettings } from '../settings.ts';
import { WHO_JOIN_DEFAULTS } from '../who-join.ts';
import { AUDIT_SOURCE_DEFAULTS } from './audit-match.ts';

/** The config file's `audit:` block. */
export const auditSchema = {
  type: 'object',
  properties: {
    ...webhookEndpointKeys,
    wait: durationOrZero,
    window: duration,
    maxPending: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    maxRecords: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    maxRequestSize: size,
  },
  // listen, certFile and keyFile may come from flags (the Helm chart sets them so): the settings
  // say which is missing once flags and block are merged (listener/endpoint-config.ts).
  additionalProperties: false,
} as const;

export type AuditInput = FromSchema<typeof auditSchema>;

export const AUDIT_FLAGS: readonly FlagSpec[] = [
  { flags: '--audit-listen <addr>', description: 'receive the audit webhook here (HTTPS): :8443' },
  {
    flags: '--audit-cert <file>',
    description: "the audit webhook's serving certificate (PEM; reloaded when it changes)",
    more: true,
  },
  {
    flags: '--audit-key <file>',
    description: "the audit webhook's private key (PEM; reloaded when it changes)",
    more: true,
  },
  {
    flags: '--audit-client-ca <file>',
    description: 'accept audit requests only with a client certificate this CA signed',
    more: true,
  },
  {
    flags: '--audit-client-name <glob>',
    description: "…whose certificate's CN matches this: kube-apiserver-audit",
    repeatable: true,
    more: true,
  },
  {
    flags: '--audit-wait <duration>',
    description: `how long a change waits for its audit record (default: ${WHO_JOIN_DEFAULTS.waitMs}ms)`,
    more: true,
  },
];

/** The values of AUDIT_FLAGS as commander hands them over. */
export interface RawAuditFlags {
  auditListen?: string;
  auditCert?: string;
  auditKey?: string;
  auditClientCa?: string;
  auditClientName?: string[];
  auditWait?: string;
}

/** The audit webhook's settings, or undefined when it is not configured (no wait, no join). */
export function auditSettingsFrom(
  flags: RawAuditFlags,
  file: AuditInput | undefined,
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
      ? checkedDurationMs('--audit-wait', DURATION_OR_ZERO_FORMAT, flags.auditWait)
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
