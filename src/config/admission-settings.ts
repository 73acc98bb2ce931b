// The admission webhook (docs/who.md): where kubediff receives the API server's AdmissionReviews, how
// the sender authenticates (or that it cannot: managed clusters), how long a change waits for its review,
// and the bounds; and --peers, the other replicas that get every record this one receives. Flags win over
// the config file's `admission:` block, key by key; the bearer token comes from the file's
// `admission.token` (with ${VAR}) or KUBEDIFF_ADMISSION_TOKEN, never from a flag (a flag shows in `ps`).
import { WHO_JOIN_DEFAULTS } from '../events/who-join.ts';
import { parsePeerAddress } from '../service/peer-address.ts';
import type { WebhookEndpoint } from '../service/webhook-endpoint.ts';
import { parseDurationSetting } from '../util/duration.ts';
import type { Env } from '../util/environment.ts';
import { UsageError } from '../util/errors.ts';
import { parseSize } from '../util/size.ts';
import type { ConfigInput } from './schema.ts';
import { webhookEndpointFrom } from './webhook-endpoint-settings.ts';

export interface RawAdmissionFlags {
  admissionListen?: string;
  admissionCert?: string;
  admissionKey?: string;
  admissionClientCa?: string;
  admissionAllowUnauthenticated?: boolean;
  peers?: string;
}

export interface AdmissionSettings extends WebhookEndpoint {
  waitMs: number;
  maxRecords: number;
}

export const ADMISSION_DEFAULTS = {
  maxRecords: 50_000,
  maxRequestBytes: 8 * 1024 * 1024,
} as const;

/** The admission webhook's settings, or undefined when it is not configured. */
export function admissionSettingsFrom(
  flags: RawAdmissionFlags,
  file: ConfigInput['admission'] | undefined,
  env: Env,
): AdmissionSettings | undefined {
  const endpoint = webhookEndpointFrom('admission', {
    flags: {
      listen: flags.admissionListen,
      cert: flags.admissionCert,
      key: flags.admissionKey,
      clientCa: flags.admissionClientCa,
    },
    listenerFlags: [
      ['--admission-cert', flags.admissionCert],
      ['--admission-key', flags.admissionKey],
      ['--admission-client-ca', flags.admissionClientCa],
      ['--admission-allow-unauthenticated', flags.admissionAllowUnauthenticated],
    ],
    file,
    envToken: env.KUBEDIFF_ADMISSION_TOKEN,
    httpsOnlyNote: ' (the API server calls no other)',
  });
  if (!endpoint) return undefined;
  const { clientCAFile, token } = endpoint;
  const unauthenticated = flags.admissionAllowUnauthenticated ?? file?.allowUnauthenticated ?? false;
  if (!clientCAFile && !token && !unauthenticated) {
    throw new UsageError(
      "the admission webhook must authenticate its sender: give --admission-client-ca <file> (the CA of the API server's client certificate), or a bearer token in $KUBEDIFF_ADMISSION_TOKEN, or both; on a cluster whose API server cannot authenticate to webhooks (EKS, GKE, AKS), say so with --admission-allow-unauthenticated (docs/who.md).",
    );
  }
  if ((clientCAFile || token) && unauthenticated) {
    throw new UsageError(
      "--admission-allow-unauthenticated contradicts the admission webhook's client CA or token: drop one or the other.",
    );
  }
  return {
    ...endpoint,
    ...(file?.clientNames && file.clientNames.length > 0 ? { clientNames: file.clientNames } : {}),
    waitMs:
      file?.wait !== undefined
        ? parseDurationSetting('admission.wait', file.wait, { allowZero: true })
        : WHO_JOIN_DEFAULTS.waitMs,
    maxRecords: file?.maxRecords ?? ADMISSION_DEFAULTS.maxRecords,
    maxRequestBytes:
      file?.maxRequestSize !== undefined
        ? parseSize('admission.maxRequestSize', file.maxRequestSize)
        : ADMISSION_DEFAULTS.maxRequestBytes,
  };
}

/** --peers, or the file's `peers:`; it needs a listener (whose certificate the replicas share). */
export function peersFrom(
  flags: RawAdmissionFlags,
  file: string | undefined,
  listeners: readonly (string | undefined)[],
): string | undefined {
  const address = flags.peers?.trim() || file;
  if (!address) return undefined;
  parsePeerAddress(address, flags.peers ? '--peers' : 'peers');
  if (!listeners.some(Boolean)) {
    throw new UsageError(
      `--peers ${address}: the replicas post each other the records of --admission-listen or --audit-listen, with its certificate; add one of them.`,
    );
  }
  return address;
}
