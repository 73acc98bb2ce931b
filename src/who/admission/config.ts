// What the admission webhook is configured by (docs/who.md): its config block `admission:` (the schema
// fragment the file's schema is assembled from), its flags (as data), and its settings from both: where
// kubediff receives the API server's AdmissionReviews, how the sender authenticates (or that it cannot:
// managed clusters), how long a change waits for its review, and the bounds. Flags win over the block,
// key by key; the bearer token comes from the block's `token` (with ${VAR}) or KUBEDIFF_ADMISSION_TOKEN,
// never from a flag (a flag shows in `ps`). The certificate is given as files, or managed by kubediff in a
// Secret of its namespace (--admission-cert-secret, with the Service it is for and the webhook
// configuration whose caBundle it sets: docs/who.md, "The certificate").

import type { FromSchema } from 'json-schema-to-ts';
import { defaultLeaseNamespace } from '../../kube/leader-election.ts';
import { durationOrZero, size } from '../../sinks/core/entry-schema.ts';
import { parseDurationSetting } from '../../util/duration.ts';
import type { Env } from '../../util/environment.ts';
import { UsageError } from '../../util/errors.ts';
import type { FlagSpec } from '../../util/flag-spec.ts';
import { parseSize } from '../../util/size.ts';
import { webhookEndpointFrom, webhookEndpointKeys } from '../listener/endpoint-config.ts';
import type { AdmissionSettings, ManagedCertificateSettings } from '../settings.ts';
import { WHO_JOIN_DEFAULTS } from '../who-join.ts';

/** The config file's `admission:` block. */
export const admissionSchema = {
  type: 'object',
  properties: {
    ...webhookEndpointKeys,
    // Or a certificate kubediff manages in this Secret, for this Service and webhook configuration.
    certSecret: { type: 'string', minLength: 1 },
    service: { type: 'string', minLength: 1 },
    webhookConfiguration: { type: 'string', minLength: 1 },
    allowUnauthenticated: { type: 'boolean' },
    wait: durationOrZero,
    maxRecords: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    maxRequestSize: size,
  },
  // listen, certFile and keyFile may come from flags (the Helm chart sets them so): the settings
  // say which is missing once flags and block are merged (listener/endpoint-config.ts).
  additionalProperties: false,
} as const;

export type AdmissionInput = FromSchema<typeof admissionSchema>;

export const ADMISSION_FLAGS: readonly FlagSpec[] = [
  {
    flags: '--admission-listen <addr>',
    description: 'serve a never-rejecting admission webhook: :9443',
  },
  {
    flags: '--admission-cert <file>',
    description: "the admission webhook's serving certificate (PEM; reloaded)",
    more: true,
  },
  {
    flags: '--admission-key <file>',
    description: "the admission webhook's private key (PEM; reloaded)",
    more: true,
  },
  {
    flags: '--admission-cert-secret <name>',
    description: 'instead: make, renew and serve a certificate kept in this Secret',
    more: true,
  },
  {
    flags: '--admission-service <name>',
    description: "…for this Service's names (kubediff's namespace)",
    more: true,
  },
  {
    flags: '--admission-webhook-config <name>',
    description: "…and set this ValidatingWebhookConfiguration's caBundle",
    more: true,
  },
  {
    flags: '--admission-client-ca <file>',
    description: 'accept reviews only with a client certificate this CA signed',
    more: true,
  },
  {
    flags: '--admission-allow-unauthenticated',
    description: 'accept reviews from any caller (API servers that cannot authenticate)',
    more: true,
  },
];

/** The values of ADMISSION_FLAGS as commander hands them over. */
export interface RawAdmissionFlags {
  admissionListen?: string;
  admissionCert?: string;
  admissionKey?: string;
  admissionClientCa?: string;
  admissionAllowUnauthenticated?: boolean;
  admissionCertSecret?: string;
  admissionService?: string;
  admissionWebhookConfig?: string;
}

export const ADMISSION_DEFAULTS = { maxRecords: 50_000 } as const;

/** The admission webhook's settings, or undefined when it is not configured. */
export function admissionSettingsFrom(
  flags: RawAdmissionFlags,
  file: AdmissionInput | undefined,
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
  file: AdmissionInput | undefined,
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
