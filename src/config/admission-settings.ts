// The admission webhook (docs/who.md): where kubediff receives the API server's AdmissionReviews, how
// the sender authenticates (or that it cannot: managed clusters), how long a change waits for its review,
// and the bounds; and --peers, the other replicas that get every record this one receives. Flags win over
// the config file's `admission:` block, key by key; the bearer token comes from the file's
// `admission.token` (with ${VAR}) or KUBEDIFF_ADMISSION_TOKEN, never from a flag (a flag shows in `ps`).
// The certificate is given as files, or managed by kubediff in a Secret of its namespace
// (--admission-cert-secret, with the Service it is for and the webhook configuration whose caBundle it
// sets: docs/who.md, "The certificate").

import { defaultLeaseNamespace } from '../kube/leader-election.ts';
import { parseDurationSetting } from '../util/duration.ts';
import type { Env } from '../util/environment.ts';
import { UsageError } from '../util/errors.ts';
import { parseSize } from '../util/size.ts';
import type { AdmissionSettings, ManagedCertificateSettings } from '../who/settings.ts';
import { WHO_JOIN_DEFAULTS } from '../who/who-join.ts';
import { checkedFlagValue } from './flag-values.ts';
import type { ConfigInput } from './schema.ts';
import { webhookEndpointFrom } from './webhook-endpoint-settings.ts';

export interface RawAdmissionFlags {
  admissionListen?: string;
  admissionCert?: string;
  admissionKey?: string;
  admissionClientCa?: string;
  admissionAllowUnauthenticated?: boolean;
  admissionCertSecret?: string;
  admissionService?: string;
  admissionWebhookConfig?: string;
  peers?: string;
}

export const ADMISSION_DEFAULTS = { maxRecords: 50_000 } as const;

/** The admission webhook's settings, or undefined when it is not configured. */
export function admissionSettingsFrom(
  flags: RawAdmissionFlags,
  file: ConfigInput['admission'] | undefined,
  env: Env,
  /** A body's bound unless admission.maxRequestSize is given: its share of the heap (util/memory-budget.ts). */
  defaultRequestBytes: number,
): AdmissionSettings | undefined {
  const managedCertificate = managedCertificateFrom(flags, file, env);
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
      ['--admission-cert-secret', flags.admissionCertSecret],
      ['--admission-service', flags.admissionService],
      ['--admission-webhook-config', flags.admissionWebhookConfig],
    ],
    managedCertificate: managedCertificate
      ? flags.admissionCertSecret
        ? '--admission-cert-secret'
        : 'admission.certSecret'
      : undefined,
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
    ...(managedCertificate ? { managedCertificate } : {}),
    ...(file?.clientNames && file.clientNames.length > 0 ? { clientNames: file.clientNames } : {}),
    waitMs:
      file?.wait !== undefined
        ? parseDurationSetting('admission.wait', file.wait, { allowZero: true })
        : WHO_JOIN_DEFAULTS.waitMs,
    maxRecords: file?.maxRecords ?? ADMISSION_DEFAULTS.maxRecords,
    maxRequestBytes:
      file?.maxRequestSize !== undefined
        ? parseSize('admission.maxRequestSize', file.maxRequestSize)
        : defaultRequestBytes,
  };
}

/**
 * --admission-cert-secret, --admission-service and --admission-webhook-config (or the file's certSecret,
 * service, webhookConfiguration): all three or none. The names are checked as Kubernetes checks them.
 */
function managedCertificateFrom(
  flags: RawAdmissionFlags,
  file: ConfigInput['admission'] | undefined,
  env: Env,
): ManagedCertificateSettings | undefined {
  const given = [
    ['--admission-cert-secret', 'certSecret', flags.admissionCertSecret ?? file?.certSecret],
    ['--admission-service', 'service', flags.admissionService ?? file?.service],
    [
      '--admission-webhook-config',
      'webhookConfiguration',
      flags.admissionWebhookConfig ?? file?.webhookConfiguration,
    ],
  ] as const;
  const [secret, service, webhookConfiguration] = given.map(([flag, key, value]) => {
    const name = value?.trim();
    if (name !== undefined && !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(name))
      throw new UsageError(
        `invalid ${flag} "${name}" (admission.${key}): a name is lowercase letters, digits, "-" and ".".`,
      );
    return name;
  });
  if (!secret && !service && !webhookConfiguration) return undefined;
  const missing = given.find(([, , value]) => !value?.trim());
  if (missing) {
    throw new UsageError(
      `a certificate kubediff manages needs --admission-cert-secret, --admission-service and --admission-webhook-config (or admission.certSecret, service and webhookConfiguration): ${missing[0]} is missing.`,
    );
  }
  const interval = env.KUBEDIFF_ADMISSION_CERT_CHECK_INTERVAL;
  return {
    namespace: defaultLeaseNamespace(env),
    secret: secret as string,
    service: service as string,
    webhookConfiguration: webhookConfiguration as string,
    ...(interval
      ? { checkIntervalMs: parseDurationSetting('KUBEDIFF_ADMISSION_CERT_CHECK_INTERVAL', interval) }
      : {}),
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
  checkedFlagValue(flags.peers ? '--peers' : 'peers', ['peers'], address);
  if (!listeners.some(Boolean)) {
    throw new UsageError(
      `--peers ${address}: the replicas post each other the records of --admission-listen or --audit-listen, with its certificate; add one of them.`,
    );
  }
  return address;
}
